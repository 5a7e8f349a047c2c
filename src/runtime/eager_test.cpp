// Eager contexts: numerics on the fast path, validation errors, zero
// allocations besides the output (a counting operator new in this test
// binary; steady-state run_prepared likewise), epoch refresh, promotion,
// extensions, placement and domains.
#include <gtest/gtest.h>

#include "runtime/runtime_test_support.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/runtime/eager.h"
#include "testing/counting_new.h"

// Every global operator new of this test program counts (Note [Counting
// operator new] in src/testing/counting_new.h); tests read the difference
// around the code they check. Storage::allocate_host uses the nothrow
// form, so an output tensor from the default host allocator is exactly one
// counted allocation.

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures

Tensor host_tensor(std::initializer_list<double> values, IntArrayRef shape) {
  return *Tensor::from_values<double>(values, shape);
}

struct EagerSetup {
  MockEngine host{1, kHostStorageDomain, "host"};
  Runtime build(const std::function<void(RuntimeBuilder&)>& edit = nullptr, MockSlots slots = MockSlots(),
                std::vector<std::uint64_t> domains = {}) {
    RuntimeBuilder b;
    b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
    EngineRegistration reg = host.registration(slots, std::move(domains));
    reg.allocator = nullptr;  // the default host allocator: one allocation per output
    b.add_engine(std::move(reg));
    if (edit) edit(b);
    auto rt = b.build();
    EXPECT_TRUE(rt.ok()) << rt.status().to_string();
    return std::move(*rt);
  }
};

TEST(EagerTest, ElementwiseWithBroadcastingOnTheFastPath) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = host_tensor({10, 20, 30}, {3});
  auto sum = ctx.add(a, b);
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ((*sum).to_vector<double>().value(), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  auto diff = ctx.sub(a, a);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ((*diff).to_vector<double>().value(), (std::vector<double>(6, 0.0)));
  auto n = ctx.neg(b);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n).to_vector<double>().value(), (std::vector<double>{-10, -20, -30}));
  EXPECT_EQ(ctx.metrics().fast_path_calls, 3u);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
  EXPECT_EQ(rt.plan_cache_stats().misses, 0u);  // no program was prepared
  EXPECT_EQ(s.host.executor->enters.load(), 3);
}

TEST(EagerTest, ValidationErrorsAreTypedAndCallNothing) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3}, {3});
  const Tensor b = host_tensor({1, 2}, {2});
  const Tensor i = *Tensor::from_values<std::int64_t>({1, 2, 3}, {3});
  EXPECT_EQ(ctx.add(a, b).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(ctx.sqrt(i).status().code(), ErrorCode::kDTypeMismatch);  // mixed dtypes promote (CpuRuntimeTest)
  EXPECT_EQ(ctx.add(a, Tensor()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ctx.matmul(host_tensor({1, 2, 3}, {3}), host_tensor({1, 2, 3, 4}, {2, 2})).status().code(),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(ctx.sum(a, {3}).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(ctx.sum(a, {-2}).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(s.host.behaviour->runs.load(), 0);
  // A moved-from context answers instead of crashing.
  EagerContext other = std::move(ctx);
  EXPECT_EQ(ctx.add(a, a).status().code(), ErrorCode::kFailedPrecondition);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(ctx.sum(a, {0}).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(other.add(a, a).ok());
}

TEST(EagerTest, NegativeAxesCountFromTheEnd) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ctx.sum(a, {-1})->to_vector<double>().value(), (std::vector<double>{6, 15}));
  EXPECT_EQ(ctx.sum(a, {-2})->to_vector<double>().value(), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(ctx.sum(a, {-1, -2})->to_vector<double>().value(), (std::vector<double>{21}));
  const auto shape = [](const Result<Tensor>& t) { return Dims(t->shape().begin(), t->shape().end()); };
  EXPECT_EQ(shape(ctx.transpose(a, {-1, 0})), (Dims{3, 2}));
}

TEST(EagerTest, MatmulReductionsAndViews) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3, 4}, {2, 2});
  const Tensor b = host_tensor({5, 6, 7, 8}, {2, 2});
  auto c = ctx.matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c).to_vector<double>().value(), (std::vector<double>{19, 22, 43, 50}));
  const Tensor batched = host_tensor({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2});
  auto d = ctx.matmul(batched, batched);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ((*d).to_vector<double>().value(), (std::vector<double>{1, 0, 0, 1, 4, 0, 0, 4}));
  auto total = ctx.sum(a, {0, 1});
  ASSERT_TRUE(total.ok());
  EXPECT_EQ((*total).to_vector<double>().value(), (std::vector<double>{10}));
  const int runs = s.host.behaviour->runs.load();
  auto t = ctx.apply(CoreSemanticOp::kTranspose, std::span<const Tensor>(&a, 1), program::TransposeAttributes{{1, 0}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t).storage().get(), a.storage().get());  // a view, no copy
  EXPECT_EQ((*t).to_vector<double>().value(), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(s.host.behaviour->runs.load(), runs);  // views call no provider
  auto copy = ctx.contiguous(*t);
  ASSERT_TRUE(copy.ok());
  EXPECT_TRUE((*copy).is_contiguous());
  EXPECT_EQ((*copy).to_vector<double>().value(), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(s.host.layout->copies.load(), 1);
}

TEST(EagerTest, ZeroAllocationsPerCallBesidesTheOutput) {
  if (!::tenferro::testing::kCountsAllocations)
    GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  const Tensor m = host_tensor({1, 2, 3, 4}, {2, 2});
  ASSERT_TRUE(ctx.add(a, a).ok());  // warm up: capability query, slot cache
  ASSERT_TRUE(ctx.matmul(m, m).ok());
  constexpr int kCalls = 1000;
  const std::uint64_t before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.add(a, a);
    ASSERT_TRUE(y.ok());
  }
  const std::uint64_t add_allocs = ::tenferro::testing::allocation_count() - before;
  EXPECT_EQ(add_allocs, static_cast<std::uint64_t>(kCalls));  // exactly the outputs
  const std::uint64_t before_mm = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.matmul(m, m);
    ASSERT_TRUE(y.ok());
  }
  EXPECT_EQ(::tenferro::testing::allocation_count() - before_mm, static_cast<std::uint64_t>(kCalls));
  EXPECT_EQ(ctx.metrics().capability_queries, 2u);
}

// An extension kernel's scratch is the context's, as a core op's: a
// repeated call allocates only its output (a scratch storage per call before).
TEST(EagerTest, ExtensionCallsAllocateOnlyTheirOutputs) {
  if (!::tenferro::testing::kCountsAllocations)
    GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
  EagerSetup s;
  auto native = std::make_shared<SquarePlusEngine>();
  native->scratch_bytes = 256;
  Runtime rt = s.build([&](RuntimeBuilder& b) {
    b.add_extension_module({"mock", {{"test.square_plus", EngineId(1), native}}});
  });
  EagerContext ctx = rt.on();
  auto op = std::make_shared<SquarePlusExtension>();
  ExtensionSlot slot = ctx.resolve_extension("test.square_plus");
  const Tensor x = host_tensor({1, 2, 3}, {3});
  ASSERT_TRUE(ctx.call(slot, op, std::span<const Tensor>(&x, 1)).ok());  // warm up: prepare, memo, scratch
  constexpr int kCalls = 1000;
  const std::uint64_t before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) {
    auto y = ctx.call(slot, op, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(y.ok()) << y.status().to_string();
  }
  EXPECT_EQ(::tenferro::testing::allocation_count() - before, static_cast<std::uint64_t>(kCalls));
  EXPECT_EQ(native->runs.load(), kCalls + 1);
}

TEST(EagerTest, TransposeAndReshapeAreViewsAndCopyOnlyWhenStridesCannotExpressIt) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  auto t = ctx.transpose(a, {1, 0});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t).storage().get(), a.storage().get());
  EXPECT_EQ(std::vector<std::int64_t>((*t).shape().begin(), (*t).shape().end()), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ((*t).to_vector<double>().value(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  auto r = ctx.reshape(a, {3, -1});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r).storage().get(), a.storage().get());
  EXPECT_EQ(std::vector<std::int64_t>((*r).shape().begin(), (*r).shape().end()), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(s.host.layout->copies.load(), 0);
  // A transposed tensor cannot be flattened by strides: one explicit copy.
  auto flat = ctx.reshape(*t, {6});
  ASSERT_TRUE(flat.ok()) << flat.status().to_string();
  EXPECT_NE((*flat).storage().get(), a.storage().get());
  EXPECT_EQ((*flat).to_vector<double>().value(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(s.host.layout->copies.load(), 1);
  // Typed errors, nothing run.
  auto bad_count = ctx.reshape(a, {4, -1});
  ASSERT_FALSE(bad_count.ok());
  EXPECT_NE(bad_count.status().code(), ErrorCode::kInternal);
  auto bad_perm = ctx.transpose(a, {0, 0});
  ASSERT_FALSE(bad_perm.ok());
  EXPECT_NE(bad_perm.status().code(), ErrorCode::kInternal);
  EXPECT_FALSE(ctx.reshape(Tensor(), {1}).ok());
  EXPECT_EQ(s.host.layout->copies.load(), 1);
  EXPECT_EQ(s.host.behaviour->runs.load(), 0);
}

// The same contract for prepared graphs: once a plan's run workspace exists
// (first run), a steady-state run_prepared allocates only its output.
TEST(EagerTest, SteadyStateRunPreparedAllocatesOnlyTheOutput) {
  if (!::tenferro::testing::kCountsAllocations)
    GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
  EagerSetup s;
  Runtime rt = s.build();
  auto program =
      make_program({{8}},
                   [](program::ProgramBuilder& b,
                      std::span<const program::ProgramValue> in) -> Result<SmallVector<program::ProgramValue, 4>> {
                     program::ProgramValue v = in[0];
                     for (int i = 0; i < 4; ++i) {
                       Result<program::ProgramValue> next = b.emit(program::CoreSemanticOp::kNeg, {v});
                       if (!next.ok()) return next.status();
                       v = *next;
                     }
                     return SmallVector<program::ProgramValue, 4>{v};
                   });
  ASSERT_NE(program, nullptr);
  const Tensor x = host_tensor({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  auto plan = rt.prepare_for(program, InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ((*plan)->num_nodes(), 4u);
  ASSERT_TRUE(rt.run_prepared(**plan, std::span<const Tensor>(&x, 1)).ok());  // creates the workspace
  constexpr int kRuns = 200;
  Tensor last;
  const std::uint64_t before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kRuns; ++i) {
    Result<TensorList> y = rt.run_prepared(**plan, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(y.ok());
    last = (*y)[0];
  }
  EXPECT_EQ(::tenferro::testing::allocation_count() - before,
            static_cast<std::uint64_t>(kRuns));  // exactly the outputs
  EXPECT_EQ(last.to_vector<double>().value(), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s.host.behaviour->runs.load(), 4 * (kRuns + 1));
}

TEST(EagerTest, ContextRefreshesAfterReconfiguration) {
  EagerSetup s;
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2}, {2});
  ASSERT_TRUE(ctx.add(a, a).ok());
  EXPECT_EQ(ctx.metrics().refreshes, 0u);
  // Replace the engine's elementwise provider: the context must pick it up.
  MockEngine replacement{1, kHostStorageDomain, "host2"};
  ASSERT_TRUE(rt.reconfigure([&](RuntimeConfigBuilder& c) {
                  EngineRegistration reg = replacement.registration();
                  reg.allocator = nullptr;
                  return c.replace_engine(std::move(reg));
                }).ok());
  auto y = ctx.add(a, a);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ((*y).to_vector<double>().value(), (std::vector<double>{2, 4}));
  EXPECT_EQ(ctx.metrics().refreshes, 1u);
  EXPECT_EQ(replacement.behaviour->runs.load(), 1);
  EXPECT_EQ(s.host.behaviour->runs.load(), 1);
}

TEST(EagerTest, MissingSlotPromotesToAPreparedGraph) {
  EagerSetup s;
  MockEngine other{3, kHostStorageDomain, "other"};
  Runtime rt = s.build(
      [&](RuntimeBuilder& b) {
        b.add_engine(other.registration());
        b.config().policies().fallback_engine = EngineId(3);
      },
      MockSlots{false, true, true, true});
  EagerContext ctx = rt.on(Placement::engine(EngineId(1)));
  const Tensor a = host_tensor({1, 2}, {2});
  auto y = ctx.add(a, a);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ((*y).to_vector<double>().value(), (std::vector<double>{2, 4}));
  EXPECT_EQ(ctx.metrics().promoted_calls, 1u);
  EXPECT_EQ(ctx.metrics().fast_path_calls, 0u);
  EXPECT_EQ(rt.execution_metrics().eager_promoted_calls, 1u);
  EXPECT_EQ(rt.plan_cache_stats().misses, 1u);
  EXPECT_EQ(other.behaviour->runs.load(), 1);
  // Still promoted (and now a cache hit) on the next call.
  ASSERT_TRUE(ctx.add(a, a).ok());
  EXPECT_EQ(rt.plan_cache_stats().hits, 1u);
}

TEST(EagerTest, UnsupportedEverywhereIsATypedError) {
  EagerSetup s;
  s.host.behaviour->unsupported.insert(CoreSemanticOp::kMul);
  Runtime rt = s.build();
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2}, {2});
  auto y = ctx.mul(a, a);
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(ctx.metrics().promoted_calls, 1u);
}

TEST(EagerTest, ReproduciblePolicyRejectsUndeclaredProviders) {
  EagerSetup s;
  s.host.behaviour->reproducible = false;
  Runtime rt = s.build([](RuntimeBuilder& b) { b.config().policies().determinism = Determinism::kReproducible; });
  EagerContext ctx = rt.on();
  const Tensor a = host_tensor({1, 2}, {2});
  EXPECT_EQ(ctx.add(a, a).status().code(), ErrorCode::kDeterminismUnsupported);
}

TEST(EagerTest, ExtensionsNativeOneOpLoweringAndPromotion) {
  EagerSetup s;
  auto native = std::make_shared<SquarePlusEngine>();
  Runtime rt = s.build([&](RuntimeBuilder& b) {
    b.add_extension_module({"mock", {{"test.square_plus", EngineId(1), native}}});
  });
  EagerContext ctx = rt.on();
  const Tensor x = host_tensor({1, 2, 3}, {3});
  auto op = std::make_shared<SquarePlusExtension>();
  ExtensionSlot slot = ctx.resolve_extension("test.square_plus");
  auto y = ctx.call(slot, op, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].to_vector<double>().value(), (std::vector<double>{2, 6, 12}));
  EXPECT_EQ(native->runs.load(), 1);
  EXPECT_EQ(ctx.metrics().fast_path_calls, 1u);

  auto negate = std::make_shared<NegateExtension>();  // lowers to exactly one core op
  auto z = ctx.call(negate, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  EXPECT_EQ((*z)[0].to_vector<double>().value(), (std::vector<double>{-1, -2, -3}));
  EXPECT_EQ(ctx.metrics().fast_path_calls, 2u);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);

  // The engine refuses from now on; a new signature (the remembered one
  // is not asked again) lowers to two core ops: promoted to a prepared graph.
  native->unsupported = true;
  const Tensor x2 = host_tensor({1, 2}, {2});
  auto w = ctx.call(op, std::span<const Tensor>(&x2, 1));
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ((*w)[0].to_vector<double>().value(), (std::vector<double>{2, 6}));
  EXPECT_EQ(ctx.metrics().promoted_calls, 1u);
}

// Note [Extension call memo]: a repeated signature is prepared once, also
// with another op object of an equal payload; a new shape or layout class
// is prepared again, and the remembered answers
// still give correct results after others were evicted.
// A runtime whose test.square_plus extension runs on `native`.
Runtime square_plus_runtime(EagerSetup& s, const std::shared_ptr<SquarePlusEngine>& native) {
  return s.build([&](RuntimeBuilder& b) {
    b.add_extension_module({"mock", {{"test.square_plus", EngineId(1), native}}});
  });
}

// Three calls of `op` on [1, 2, 3], each giving x * x + x.
void call_square_plus_three_times(EagerContext& ctx, const std::shared_ptr<SquarePlusExtension>& op) {
  const Tensor x = host_tensor({1, 2, 3}, {3});
  for (int i = 0; i < 3; ++i) {
    auto y = ctx.call(op, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    EXPECT_EQ((*y)[0].to_vector<double>().value(), (std::vector<double>{2, 6, 12}));
  }
}

TEST(EagerTest, ExtensionCallRemembersPreparedSignatures) {
  EagerSetup s;
  auto native = std::make_shared<SquarePlusEngine>();
  Runtime rt = square_plus_runtime(s, native);
  EagerContext ctx = rt.on();
  auto op = std::make_shared<SquarePlusExtension>();
  const Tensor x = host_tensor({1, 2, 3}, {3});
  call_square_plus_three_times(ctx, op);
  EXPECT_EQ(native->prepares.load(), 1);
  EXPECT_EQ(native->runs.load(), 3);

  const Tensor m = host_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor mt = m.permute({1, 0}).value();  // same dtype, another shape and layout class
  auto y = ctx.call(op, std::span<const Tensor>(&m, 1));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(native->prepares.load(), 2);
  y = ctx.call(op, std::span<const Tensor>(&mt, 1));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(Dims((*y)[0].shape()), (Dims{3, 2}));
  EXPECT_EQ((*y)[0].to_vector<double>().value(), (std::vector<double>{2, 20, 6, 30, 12, 42}));
  EXPECT_EQ(native->prepares.load(), 3);
  auto other = std::make_shared<SquarePlusExtension>();  // an equal payload, another object: remembered
  y = ctx.call(other, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].to_vector<double>().value(), (std::vector<double>{2, 6, 12}));
  EXPECT_EQ(native->prepares.load(), 3);

  // More signatures than remembered: the oldest is prepared again.
  for (std::int64_t n = 4; n < 9; ++n) {
    const std::vector<double> ones(static_cast<std::size_t>(n), 1.0);
    const Tensor v = Tensor::from_values<double>(std::span<const double>(ones), {n}).value();
    ASSERT_TRUE(ctx.call(op, std::span<const Tensor>(&v, 1)).ok());
  }
  const int before = native->prepares.load();
  y = ctx.call(op, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ((*y)[0].to_vector<double>().value(), (std::vector<double>{2, 6, 12}));
  EXPECT_EQ(native->prepares.load(), before + 1);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
}

// Note [Extension call memo]: an answer of much estimated work runs on the
// fast path (no promotion) but is not remembered, so that a context never
// keeps a large plan alive past its engine's cache bounds.
TEST(EagerTest, ExtensionCallMemoSkipsLargeWork) {
  EagerSetup s;
  auto native = std::make_shared<SquarePlusEngine>();
  native->work = 2.0e6;
  Runtime rt = square_plus_runtime(s, native);
  EagerContext ctx = rt.on();
  auto op = std::make_shared<SquarePlusExtension>();
  call_square_plus_three_times(ctx, op);
  EXPECT_EQ(native->prepares.load(), 3);
  EXPECT_EQ(native->runs.load(), 3);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
  native->work = 1.0e3;  // small work: remembered again
  call_square_plus_three_times(ctx, op);
  EXPECT_EQ(native->prepares.load(), 4);
}

TEST(EagerTest, ForeignStorageIsAPlacementErrorNeverATransfer) {
  EagerSetup s;
  MockEngine device{2, kDevice, "device"};
  auto transfer = std::make_shared<MockTransfer>();
  Runtime rt = s.build([&](RuntimeBuilder& b) {
    b.add_engine(device.registration());
    b.add_transfer({{EngineId(2), kDevice}, {EngineId(1), kHostStorageDomain}, transfer});
  });
  EagerContext ctx = rt.on();
  const Tensor d = make_tensor(*device.allocator, {1, 2}, {2});
  const Tensor h = host_tensor({1, 2}, {2});
  EXPECT_EQ(ctx.add(h, d).status().code(), ErrorCode::kPlacementError);
  EXPECT_EQ(transfer->calls.load(), 0);
  // The device context computes on device tensors.
  EagerContext on_device = rt.on(Placement::engine(EngineId(2)));
  auto y = on_device.add(d, d);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ((*y).storage()->storage_domain(), kDevice);
  EXPECT_EQ(values_of(*y), (std::vector<double>{2, 4}));
}

TEST(EagerTest, CpuDomainAffinityPolicy) {
  EagerSetup s;
  Runtime rt = s.build(nullptr, MockSlots(), {0, 1});
  // Two tensors allocated in domain 1 dominate one in domain 0.
  MockAllocator numa(kHostStorageDomain);
  auto in_domain = [&](std::uint64_t domain, std::initializer_list<double> v) {
    Result<StorageRef> st = numa.allocate(v.size() * sizeof(double), ResolvedPlacement{EngineId(1), domain});
    std::memcpy((*st)->data(), v.begin(), v.size() * sizeof(double));
    return *Tensor::from_storage(*st, DType::kFloat64, {static_cast<std::int64_t>(v.size())}, {1});
  };
  const Tensor small0 = in_domain(0, {1});
  const Tensor big1 = in_domain(1, {1, 2, 3, 4});
  const Tensor also1 = in_domain(1, {1, 2, 3, 4});
  EagerContext ctx = rt.on();
  ASSERT_TRUE(ctx.add(big1, also1).ok());
  EXPECT_EQ(s.host.executor->last_domain.load(), 1u);  // DominantInputBytes
  ASSERT_TRUE(ctx.add(small0, small0).ok());
  EXPECT_EQ(s.host.executor->last_domain.load(), 0u);
  EagerContext pinned = rt.on(Placement::cpu_domain(CpuDomainId(0)));
  ASSERT_TRUE(pinned.add(big1, also1).ok());
  EXPECT_EQ(s.host.executor->last_domain.load(), 0u);  // explicit placement wins
  // Prepared programs apply the same policy; explain() names the domain and why.
  auto program =
      make_program({{4}, {4}},
                   [](program::ProgramBuilder& b,
                      std::span<const program::ProgramValue> in) -> Result<SmallVector<program::ProgramValue, 4>> {
                     Result<program::ProgramValue> sum = b.emit(program::CoreSemanticOp::kAdd, {in[0], in[1]});
                     if (!sum.ok()) return sum.status();
                     return SmallVector<program::ProgramValue, 4>{*sum};
                   });
  ASSERT_NE(program, nullptr);
  const Tensor pair[] = {big1, also1};
  auto plan = rt.prepare_for(program, InputSignature::of(pair));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_NE((*plan)->explain().find("runs in domain 1: DominantInputBytes (64 input bytes in domain 1)"),
            std::string::npos)
      << (*plan)->explain();
  ASSERT_TRUE(rt.run_prepared(**plan, pair).ok());
  EXPECT_EQ(s.host.executor->last_domain.load(), 1u);
  // An explicit CPU-domain placement wins there too, with or without the
  // engine named (as the eager context's does).
  for (const Placement explicit_domain :
       {Placement::cpu_domain(CpuDomainId(0)), Placement::cpu_domain(CpuDomainId(0), EngineId(1))}) {
    SCOPED_TRACE(explicit_domain.to_string());
    PrepareOptions options;
    options.placement = explicit_domain;
    auto pinned_plan = rt.prepare_for(program, InputSignature::of(pair), options);
    ASSERT_TRUE(pinned_plan.ok()) << pinned_plan.status().to_string();
    EXPECT_NE((*pinned_plan)->explain().find("runs in domain 0: explicit placement"), std::string::npos)
        << (*pinned_plan)->explain();
    ASSERT_TRUE(rt.run_prepared(**plan, pair).ok());  // domain 1 again, then the pinned plan
    ASSERT_EQ(s.host.executor->last_domain.load(), 1u);
    ASSERT_TRUE(rt.run_prepared(**pinned_plan, pair).ok());
    EXPECT_EQ(s.host.executor->last_domain.load(), 0u);
  }
  // Mixed affinities are fine by default (one address space)...
  auto mixed = ctx.add(in_domain(0, {1, 1, 1, 1}), big1);
  ASSERT_TRUE(mixed.ok());
  // ...and rejected under RequireSingleDomain.
  ASSERT_TRUE(rt.reconfigure([](RuntimeConfigBuilder& c) {
                  c.policies().cpu_affinity = CpuAffinityPolicy::kRequireSingleDomain;
                  return ok_status();
                }).ok());
  EXPECT_EQ(ctx.add(in_domain(0, {1, 1, 1, 1}), big1).status().code(), ErrorCode::kPlacementError);
}

}  // namespace
}  // namespace tenferro::runtime

namespace tenferro::runtime {
namespace {

// Note [Eager dot_general validation]: the allocation-free eager check and
// program::infer_core_metadata agree on random well- and ill-formed cases.
TEST(EagerTest, DotGeneralFastValidationAgreesWithInference) {
  testing::MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  b.add_engine(host.registration());
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  EagerContext ctx = rt->on();
  std::uint64_t state = 12345;
  auto next = [&](std::int64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::int64_t>((state >> 33) % static_cast<std::uint64_t>(n));
  };
  int agreed_ok = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Dims ls, rs;
    program::DotGeneralAttributes d;
    if (trial % 2 == 0) {
      // A batched matrix product, sometimes with mismatched extents.
      const std::int64_t batch = next(2);
      for (std::int64_t i = 0; i < batch; ++i) {
        const std::int64_t e = 1 + next(3);
        ls.push_back(e);
        rs.push_back(next(6) == 0 ? e + 1 : e);
        d.lhs_batch.push_back(i);
        d.rhs_batch.push_back(i);
      }
      const std::int64_t m = 1 + next(3), k = 1 + next(3), n = 1 + next(3);
      ls.push_back(m);
      ls.push_back(k);
      rs.push_back(next(6) == 0 ? k + 1 : k);
      rs.push_back(n);
      d.lhs_contract.push_back(batch + 1);
      d.rhs_contract.push_back(batch);
    } else {
      for (std::int64_t i = 0, r = 1 + next(3); i < r; ++i) ls.push_back(1 + next(3));
      for (std::int64_t i = 0, r = 1 + next(3); i < r; ++i) rs.push_back(1 + next(3));
      const std::int64_t pairs = next(3);
      for (std::int64_t p = 0; p < pairs; ++p) {
        Dims& l = next(2) == 0 ? d.lhs_batch : d.lhs_contract;
        Dims& r = (&l == &d.lhs_batch) ? d.rhs_batch : d.rhs_contract;
        l.push_back(next(4) - (next(8) == 0 ? 1 : 0));
        r.push_back(next(4));
      }
    }
    std::vector<double> lv(static_cast<std::size_t>(numel_unchecked(ls)), 1.0);
    std::vector<double> rv(static_cast<std::size_t>(numel_unchecked(rs)), 1.0);
    const Tensor lhs = *Tensor::from_values<double>(std::span<const double>(lv), ls);
    const Tensor rhs = *Tensor::from_values<double>(std::span<const double>(rv), rs);
    const program::ValueMetadata md[2] = {program::ValueMetadata::exact(DType::kFloat64, ls),
                                          program::ValueMetadata::exact(DType::kFloat64, rs)};
    program::ShapeConstraints c("dot_general", nullptr);
    auto inferred = program::infer_core_metadata(CoreSemanticOp::kDotGeneral, d, md, c);
    auto eager = ctx.dot_general(lhs, rhs, d);
    if (inferred.ok()) {
      // The mock provider only multiplies [..., m, k] x [..., k, n]; other
      // valid requests are refused at prepare (after promotion).
      ASSERT_TRUE(eager.ok() || eager.status().code() == ErrorCode::kUnsupportedOperation)
          << eager.status().to_string();
      if (eager.ok()) {
        EXPECT_EQ(IntArrayRef(eager->shape()), IntArrayRef(*program::exact_shape(inferred->shape)));
        ++agreed_ok;
      }
    } else {
      EXPECT_EQ(eager.status().code(), inferred.status().code()) << inferred.status().to_string();
    }
  }
  EXPECT_GT(agreed_ok, 10);
}

}  // namespace
}  // namespace tenferro::runtime
