// The CPU engine registration: metadata and slots, provider report, option
// errors, per-call validation before any kernel runs, the executor's typed
// context, and end-to-end programs (add -> dot_general -> reduce_sum)
// prepared and run on the calling thread and in a Managed two-thread domain,
// checked against the reference evaluator.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/cpu_isa_test_support.h"
#include "cpu/kernels/kernel_test_support.h"
#include "cpu_engine/engine_test_support.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::cpu {
namespace {

using program::CoreSemanticOp;
using testing::Layout;
using testing::make_tensor;

// Note [ISA cap]: TENFERRO_CPU_ISA, read at creation, selects the native
// GEMM's kernels; a cap the CPU lacks or an unknown value fails the engine
// instead of falling back to another GEMM library.
TEST(CpuEngine, TheIsaCapSelectsTheNativeKernels) {
  {
    const testing::ScopedCpuIsaEnv env("portable");
    auto engine = make_cpu_engine();
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EXPECT_EQ(engine->isa, CpuIsa::kPortable);
    const auto* native = dynamic_cast<const NativeGemmProvider*>(engine->gemm.get());
    ASSERT_NE(native, nullptr);
    EXPECT_EQ(native->isa(), CpuIsa::kPortable);
    EXPECT_NE(engine->explain().find("portable kernels"), std::string::npos) << engine->explain();
  }
  {
    const testing::ScopedCpuIsaEnv env("neon");
    auto engine = make_cpu_engine();
    ASSERT_FALSE(engine.ok());
    EXPECT_EQ(engine.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(engine.status().message()).find("found 'neon'"), std::string::npos);
  }
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2}) {
    const testing::ScopedCpuIsaEnv env(std::string(to_string(isa)).c_str());
    CpuEngineOptions options;
    options.gemm = {"native", "openblas"};
    auto engine = make_cpu_engine(options);
    if (!cpu_supports(isa)) {
      ASSERT_FALSE(engine.ok()) << "fell back to " << engine->gemm_candidate;
      EXPECT_EQ(engine.status().code(), ErrorCode::kUnsupported);
      continue;
    }
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EXPECT_EQ(engine->isa, isa);
    EXPECT_EQ(engine->gemm_candidate, "native");
  }
  {
    const testing::ScopedCpuIsaEnv env("avx512");
    CpuEngineOptions options;
    options.isa = CpuIsa::kPortable;  // the option wins over the environment
    auto engine = make_cpu_engine(options);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EXPECT_EQ(engine->isa, CpuIsa::kPortable);
  }
}

// Note [ISA cap]: the layout kernels run the engine's resolved cap, which
// every context the executor hands out reports (on the calling thread, in
// a domain entry and in a concurrent-group member), not the process-wide
// default that layout_kernel_isa() fixed from TENFERRO_CPU_ISA on first use:
// a portable engine's transposing copy takes no vector tiles.
TEST(CpuEngine, TheLayoutKernelsRunTheEnginesIsaCap) {
  const Tensor src = *make_tensor({37, 45}, DType::kFloat64, Layout::kContiguous, 1).transpose(0, 1);
  // Vector tiles taken by a transposing copy on `ctx`, checked against the source.
  auto vector_tiles = [&](const ParallelContext& ctx) -> std::uint64_t {
    Tensor dst = *Tensor::empty(src.shape(), DType::kFloat64);
    KernelStats stats;
    EXPECT_TRUE(copy_into(src.view(), dst.view(), ctx, &stats).ok());
    EXPECT_TRUE(::tenferro::testing::check_allclose(dst, src).ok());
    return stats.vector_tiles;
  };
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!cpu_supports(isa)) continue;
    SCOPED_TRACE(to_string(isa));
    const std::uint64_t expected = isa == CpuIsa::kPortable ? 0 : 1;
    CpuEngineOptions options;
    options.isa = isa;
    auto inline_engine = make_cpu_engine(options);
    ASSERT_TRUE(inline_engine.ok()) << inline_engine.status().to_string();
    auto managed = testing::two_thread_engine(isa);
    ASSERT_TRUE(managed.ok()) << managed.status().to_string();
    for (CpuEngine* engine : {&*inline_engine, &managed->engine}) {
      runtime::EngineExecutor& executor = *engine->registration.executor;
      const std::uint64_t domain = engine == &managed->engine ? managed->domains->default_domain().id().value() : 0;
      std::mutex mutex;  // members of a batch run at the same time
      std::vector<CpuIsa> seen;
      const Status s = executor.enter(
          runtime::ResolvedPlacement{EngineId(1), domain}, [&](runtime::ErasedExecutionContext entered) -> Status {
            const ParallelContext& ctx = *entered.get<CpuEngineContext>()->parallel;
            seen.push_back(ctx.kernel_isa());
            EXPECT_EQ(vector_tiles(ctx), expected);
            executor.run_concurrently(entered, 3, [&](std::size_t, runtime::ErasedExecutionContext member) {
              const ParallelContext& member_ctx = *member.get<CpuEngineContext>()->parallel;
              {
                const std::lock_guard<std::mutex> lock(mutex);
                seen.push_back(member_ctx.kernel_isa());
              }
              EXPECT_EQ(vector_tiles(member_ctx), expected);
            });
            return ok_status();
          });
      ASSERT_TRUE(s.ok()) << s.to_string();
      EXPECT_EQ(seen, std::vector<CpuIsa>(4, isa));
    }
  }
}

TEST(CpuEngine, RegistrationFillsEverySlotAndDescribesItself) {
  CpuEngineOptions options;
  options.id = EngineId(7);
  options.name = "host";
  auto engine = make_cpu_engine(options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const runtime::EngineRegistration& r = engine->registration;
  EXPECT_EQ(r.metadata.id, EngineId(7));
  EXPECT_EQ(r.metadata.name, "host");
  EXPECT_EQ(r.metadata.hardware, runtime::HardwareClass::kCpu);
  EXPECT_EQ(r.metadata.storage, kHostStorageDomain);
  EXPECT_TRUE(r.metadata.domains.empty());
  ASSERT_NE(r.capabilities.elementwise, nullptr);
  ASSERT_NE(r.capabilities.reduction, nullptr);
  ASSERT_NE(r.capabilities.indexing, nullptr);
  ASSERT_NE(r.capabilities.dot_general, nullptr);
  ASSERT_NE(r.capabilities.layout, nullptr);
  EXPECT_EQ(r.capabilities.subgraph, nullptr);
  ASSERT_NE(r.executor, nullptr);
  ASSERT_NE(r.event_driver, nullptr);
  ASSERT_NE(r.cache_owner, nullptr);
  ASSERT_NE(r.allocator, nullptr);  // Note [Calling-thread pool]
  EXPECT_TRUE(r.executor->context_type() == runtime::ExecutionContextTypeId::of<CpuEngineContext>());
  EXPECT_EQ(engine->gemm->name(), "native");
  ASSERT_EQ(engine->providers.size(), 6u);
  EXPECT_EQ(engine->providers.back().name, "gemm.native");
  EXPECT_EQ(engine->providers.back().capability.thread_count, ThreadCountControl::kPerCall);
  // Without domains the kernels only ever use the calling thread.
  EXPECT_EQ(engine->providers.front().capability.thread_count, ThreadCountControl::kSequential);
  EXPECT_EQ(engine->providers.front().capability.placement, PlacementControl::kCallingThread);

  runtime::RuntimeBuilder builder;
  ASSERT_TRUE(register_cpu_engine(builder, options).ok());
  auto rt = builder.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  ASSERT_EQ(rt->config()->engines().size(), 1u);
  EXPECT_EQ(rt->config()->engines()[0].id(), EngineId(7));
}

// Note [Calling-thread pool]: without domains, large outputs come from the
// engine's pool (reused after release, counted by the cache owner, no
// affinity so signatures match host memory's); small ones from operator new.
TEST(CpuEngine, WithoutDomainsLargeOutputsComeFromTheEnginesPool) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  runtime::EngineAllocator& allocator = *engine->registration.allocator;
  runtime::CacheOwner& cache = *engine->registration.cache_owner;
  constexpr std::size_t kLarge = std::size_t{1} << 20;

  auto small = allocator.allocate(256, {});
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  EXPECT_EQ((*small)->allocation_domain(), kDefaultHostAllocationDomain);

  void* first_data = nullptr;
  AllocationDomainId pool_domain;
  {
    auto large = allocator.allocate(kLarge, {});
    ASSERT_TRUE(large.ok()) << large.status().to_string();
    EXPECT_NE((*large)->allocation_domain(), kDefaultHostAllocationDomain);
    EXPECT_EQ((*large)->affinity(), MemoryAffinity());
    first_data = (*large)->data();
    pool_domain = (*large)->allocation_domain();
    std::memset(first_data, 1, kLarge);
  }
  EXPECT_EQ(cache.usage().entries, 1u);
  EXPECT_GE(cache.usage().bytes, kLarge);  // the block, rounded up to a size class
  auto again = allocator.allocate(kLarge, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data(), first_data);
  EXPECT_EQ((*again)->allocation_domain(), pool_domain);
  EXPECT_EQ(cache.usage().hits, 1u);
  again = Result<StorageRef>(StorageRef());
  cache.clear();
  EXPECT_EQ(cache.usage().entries, 0u);
}

TEST(CpuEngine, BadOptionsAreTypedErrors) {
  CpuEngineOptions options;
  options.id = EngineId();
  auto bad_id = make_cpu_engine(options);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_EQ(bad_id.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad_id.status().stage(), ErrorStage::kConfiguration);

  CpuEngineOptions missing;
  missing.gemm = {"openblas"};
  missing.openblas.module_dir = "/nonexistent/tenferro/modules";
  auto no_library = make_cpu_engine(missing);
  ASSERT_FALSE(no_library.ok());
  EXPECT_EQ(no_library.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(no_library.status().message().find("openblas"), std::string_view::npos);

  // Two engines with one id: the builder reports it, nothing is half built.
  runtime::RuntimeBuilder builder;
  ASSERT_TRUE(register_cpu_engine(builder).ok());
  const Status again = register_cpu_engine(builder);
  EXPECT_EQ(again.code(), ErrorCode::kAlreadyExists);
  auto rt = builder.build();
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(rt->config()->engines().size(), 1u);
}

TEST(CpuEngine, SlotsValidateEachRequestBeforeAnyKernelRuns) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok());
  const runtime::ElementwiseRuntime& add = *engine->registration.capabilities.elementwise;
  const Tensor a = *Tensor::from_values<double>({1, 2, 3}, Dims{3});
  Tensor out = *Tensor::from_values<double>({-7, -7, -7}, Dims{3});
  Tensor out_f32 = *Tensor::from_values<float>({-7, -7, -7}, Dims{3});
  const TensorView inputs[] = {a.view(), a.view()};
  const program::CoreAttributes none = program::NoAttributes{};
  const program::CoreAttributes wrong = program::ReduceAttributes{Dims{0}};
  SequentialContext sequential;
  CpuEngineContext typed;
  typed.parallel = &sequential;
  const auto ctx = runtime::ErasedExecutionContext::of(typed);

  runtime::OperationRequest r;
  r.op = CoreSemanticOp::kAdd;
  r.attributes = &none;
  r.inputs = inputs;
  r.output = out.view();
  auto expect_error = [&](const runtime::OperationRequest& request, runtime::ErasedExecutionContext c, ErrorCode code) {
    const Status s = add.run(request, c);
    EXPECT_EQ(s.code(), code) << s.to_string();
    EXPECT_EQ(out.to_vector<double>().value(), (std::vector<double>{-7, -7, -7})) << "nothing may be written";
  };
  runtime::NoExecutionContext foreign;
  expect_error(r, runtime::ErasedExecutionContext::of(foreign), ErrorCode::kProviderContractError);
  runtime::OperationRequest one_input = r;
  one_input.inputs = std::span<const TensorView>(inputs, 1);
  expect_error(one_input, ctx, ErrorCode::kInvalidArgument);
  runtime::OperationRequest bad_attributes = r;
  bad_attributes.attributes = &wrong;
  expect_error(bad_attributes, ctx, ErrorCode::kInvalidArgument);
  runtime::OperationRequest bad_output = r;
  bad_output.output = out_f32.view();
  const Status s = add.run(bad_output, ctx);
  EXPECT_EQ(s.code(), ErrorCode::kDTypeMismatch) << s.to_string();
  EXPECT_NE(s.message().find("expected a float64 output, found float32"), std::string_view::npos) << s.to_string();
  runtime::OperationRequest wrong_family = r;
  wrong_family.op = CoreSemanticOp::kReduceSum;
  wrong_family.attributes = &wrong;
  wrong_family.inputs = std::span<const TensorView>(inputs, 1);
  expect_error(wrong_family, ctx, ErrorCode::kInvalidArgument);
  // Shape mismatch: the kernel's own validation, still before any write.
  const Tensor b = *Tensor::from_values<double>({1, 2}, Dims{2});
  const TensorView mismatched[] = {a.view(), b.view()};
  runtime::OperationRequest bad_shape = r;
  bad_shape.inputs = mismatched;
  expect_error(bad_shape, ctx, ErrorCode::kShapeMismatch);
  // And the request is still fine afterwards.
  ASSERT_TRUE(add.run(r, ctx).ok());
  EXPECT_EQ(out.to_vector<double>().value(), (std::vector<double>{2, 4, 6}));
}

TEST(CpuEngine, EagerErrorsLeaveTheContextUsable) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok());
  auto rt = testing::runtime_over(*engine);
  ASSERT_TRUE(rt.ok());
  runtime::EagerContext ctx = rt->on();
  const Tensor m = make_tensor({2, 3}, DType::kFloat64, Layout::kContiguous, 1);
  auto bad = ctx.matmul(m, m);  // [2,3] x [2,3]
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kShapeMismatch) << bad.status().to_string();
  const Tensor i = make_tensor({2, 3}, DType::kInt32, Layout::kContiguous, 2);
  auto integer_sqrt = ctx.sqrt(i);  // (mixed dtypes promote: Note [Eager dtype promotion])
  ASSERT_FALSE(integer_sqrt.ok());
  EXPECT_EQ(integer_sqrt.status().code(), ErrorCode::kDTypeMismatch);
  auto fine = ctx.add(m, m);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(ctx.metrics().fast_path_calls, 1u);
}

// add -> dot_general -> reduce_sum, with the intermediate re-used.
std::shared_ptr<const program::SemanticProgram> chain_program() {
  program::ProgramBuilder b;
  const program::SymbolicExtent m = 6, k = 5, n = 4;
  auto x = b.add_input(DType::kFloat64, {m, k});
  auto y = b.add_input(DType::kFloat64, {m, k});
  auto w = b.add_input(DType::kFloat64, {k, n});
  auto s = b.emit(CoreSemanticOp::kAdd, {*x, *y});
  auto p = b.emit(CoreSemanticOp::kDotGeneral, {*s, *w}, program::DotGeneralAttributes{{}, {}, Dims{1}, Dims{0}});
  auto r = b.emit(CoreSemanticOp::kReduceSum, {*p}, program::ReduceAttributes{Dims{1}});
  auto frozen = b.freeze({*r, *p});
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return frozen.ok() ? frozen->program : nullptr;
}

void check_chain(const CpuEngine& engine, const char* where) {
  SCOPED_TRACE(where);
  auto rt = testing::runtime_over(engine);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  const auto program = chain_program();
  ASSERT_NE(program, nullptr);
  const std::vector<Tensor> inputs = {make_tensor({6, 5}, DType::kFloat64, Layout::kContiguous, 11),
                                      make_tensor({6, 5}, DType::kFloat64, Layout::kTransposed, 12),
                                      make_tensor({5, 4}, DType::kFloat64, Layout::kSliced, 13)};
  const std::span<const Tensor> span(inputs.data(), inputs.size());
  auto prepared = rt->prepare_for(program, runtime::InputSignature::of(span));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  // Every operation node runs on a CPU engine provider.
  int operations = 0;
  for (std::size_t i = 0; i < (*prepared)->num_nodes(); ++i) {
    const runtime::ScheduledNodeInfo node = (*prepared)->node(i);
    if (node.kind != runtime::ScheduledNodeKind::kOperation) continue;
    ++operations;
    EXPECT_EQ(node.provider.substr(0, 4), "cpu.") << node.provider;
  }
  EXPECT_EQ(operations, 3);
  auto expected = ::tenferro::testing::evaluate_reference(*program, span);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (int run = 0; run < 2; ++run) {  // the second run reuses the run workspace
    auto outputs = rt->run_prepared(**prepared, span);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    ASSERT_EQ(outputs->size(), 2u);
    for (std::size_t o = 0; o < 2; ++o) {
      const Status s = ::tenferro::testing::check_allclose((*outputs)[o], (*expected)[o]);
      EXPECT_TRUE(s.ok()) << "output " << o << ": " << s.to_string();
    }
  }
}

TEST(CpuEngine, ChainMatchesTheReferenceOnTheCallingThread) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok());
  check_chain(*engine, "sequential");
}

TEST(CpuEngine, ChainMatchesTheReferenceInAManagedTwoThreadDomain) {
  auto managed = testing::two_thread_engine();
  ASSERT_TRUE(managed.ok()) << managed.status().to_string();
  const CpuResourceDomain& domain = managed->domains->default_domain();
  CpuEngine* engine = &managed->engine;
  EXPECT_EQ(engine->registration.metadata.domains, std::vector<std::uint64_t>{domain.id().value()});
  EXPECT_EQ(engine->registration.metadata.default_domain, domain.id().value());
  EXPECT_EQ(engine->providers.front().capability.placement, PlacementControl::kEngineWorkers);
  const std::uint64_t installs = domain.metrics().installs;
  check_chain(*engine, "managed");
  // Entry is amortised: the three operations of a run form one same-domain
  // segment, so each of the two runs installs into the domain exactly once.
  EXPECT_EQ(domain.metrics().installs - installs, 2u);
}

// rng_philox through whole runtimes: a calling-thread engine and a managed
// two-thread one give the same bits (the kernel splits the work by blocks).
TEST(CpuEngine, RandomBitsDoNotDependOnTheRuntimesThreadCount) {
  auto sequential = make_cpu_engine();
  ASSERT_TRUE(sequential.ok());
  auto managed = testing::two_thread_engine();
  ASSERT_TRUE(managed.ok()) << managed.status().to_string();
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (auto distribution : {program::RandomDistribution::kUniform, program::RandomDistribution::kNormal}) {
      SCOPED_TRACE(fmt::format("{} {}", to_string(dtype), program::to_string(distribution)));
      const program::RandomAttributes a{dtype, program::symbolic_shape(Dims{300, 171}), 0xfeedface'12345678ull, 9,
                                        distribution};
      auto program = testing::one_op_program(CoreSemanticOp::kRngPhilox, {}, a);
      ASSERT_TRUE(program.ok()) << program.status().to_string();
      std::vector<Tensor> results;
      for (const CpuEngine* engine : {&*sequential, &managed->engine}) {
        auto rt = testing::runtime_over(*engine);
        ASSERT_TRUE(rt.ok()) << rt.status().to_string();
        auto out = rt->run(*program, {});
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        ASSERT_TRUE((*out)[0].is_contiguous());
        results.push_back((*out)[0]);
      }
      ASSERT_EQ(results[0].nbytes(), results[1].nbytes());
      EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].nbytes()), 0);
    }
  }
}

TEST(CpuEngine, ExecutorHandsProvidersTheEnteredDomainsContext) {
  auto managed = testing::two_thread_engine();
  ASSERT_TRUE(managed.ok()) << managed.status().to_string();
  const CpuResourceDomain& domain = managed->domains->default_domain();
  CpuEngine* engine = &managed->engine;
  runtime::EngineExecutor& executor = *engine->registration.executor;
  int threads = 0;
  const CpuResourceDomain* entered = nullptr;
  const Status s = executor.enter(runtime::ResolvedPlacement{EngineId(1), domain.id().value()},
                                  [&](runtime::ErasedExecutionContext context) -> Status {
                                    const CpuEngineContext* c = context.get<CpuEngineContext>();
                                    if (c == nullptr || c->domain == nullptr) return ok_status();
                                    threads = c->parallel->max_threads();
                                    entered = &c->domain->domain();
                                    return ok_status();
                                  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(entered, &domain);
  EXPECT_EQ(threads, domain.thread_budget());
  // A domain the engine does not serve is a placement error.
  const Status unknown = executor.enter(runtime::ResolvedPlacement{EngineId(1), 999},
                                        [](runtime::ErasedExecutionContext) { return ok_status(); });
  EXPECT_EQ(unknown.code(), ErrorCode::kPlacementError) << unknown.to_string();
  // Outputs come from the domain's pool; the cache owner reports it.
  auto rt = testing::runtime_over(*engine);
  ASSERT_TRUE(rt.ok());
  runtime::EagerContext ctx = rt->on();
  const Tensor a = make_tensor({64}, DType::kFloat64, Layout::kContiguous, 3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ctx.add(a, a).ok());
  EXPECT_GT(domain.memory()->stats().allocations, 0u);
  const runtime::RuntimeCacheReport report = rt->cache_report();
  ASSERT_EQ(report.engines.size(), 1u);
  EXPECT_GT(report.engines[0].usage.hits, 0u);  // freed outputs were reused
}

// Two independent products, 2 x 48 x 56 x 40 flops each: the dot_general
// slot's estimates make them a concurrent group, which runs correctly on a
// two-thread domain.
TEST(CpuEngine, IndependentProductsFormAConcurrentGroup) {
  auto managed = testing::two_thread_engine();
  ASSERT_TRUE(managed.ok()) << managed.status().to_string();
  auto rt = testing::runtime_over(managed->engine);
  ASSERT_TRUE(rt.ok());
  program::ProgramBuilder b;
  const program::SymbolicExtent m = 48, k = 40, n = 56;
  auto a0 = b.add_input(DType::kFloat64, {m, k});
  auto b0 = b.add_input(DType::kFloat64, {k, n});
  auto a1 = b.add_input(DType::kFloat64, {m, k});
  auto b1 = b.add_input(DType::kFloat64, {k, n});
  const program::DotGeneralAttributes matmul{{}, {}, Dims{1}, Dims{0}};
  auto p0 = b.emit(CoreSemanticOp::kDotGeneral, {*a0, *b0}, matmul);
  auto p1 = b.emit(CoreSemanticOp::kDotGeneral, {*a1, *b1}, matmul);
  auto frozen = b.freeze({*p0, *p1});
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
  const std::vector<Tensor> inputs = {make_tensor({48, 40}, DType::kFloat64, Layout::kContiguous, 1),
                                      make_tensor({40, 56}, DType::kFloat64, Layout::kTransposed, 2),
                                      make_tensor({48, 40}, DType::kFloat64, Layout::kContiguous, 3),
                                      make_tensor({40, 56}, DType::kFloat64, Layout::kContiguous, 4)};
  const std::span<const Tensor> span(inputs.data(), inputs.size());
  auto prepared = rt->prepare_for(frozen->program, runtime::InputSignature::of(span));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const std::string explain = (*prepared)->explain();
  EXPECT_NE(explain.find("concurrent group: #0..#1 may run at the same time (work estimates 2.15e+05 2.15e+05"),
            std::string::npos)
      << explain;
  auto expected = ::tenferro::testing::evaluate_reference(*frozen->program, span);
  ASSERT_TRUE(expected.ok());
  for (int run = 0; run < 10; ++run) {
    auto outputs = rt->run_prepared(**prepared, span);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    for (std::size_t o = 0; o < 2; ++o)
      EXPECT_TRUE(::tenferro::testing::check_allclose((*outputs)[o], (*expected)[o]).ok());
  }
  EXPECT_EQ(rt->execution_metrics().groups_enqueued, 10u);
}

// Note [CPU concurrent groups]: on a two-thread domain the first two tasks
// run at the same time on different threads, each with a sequential
// context; the third, left over, runs with the entry's own context.
TEST(CpuEngine, RunConcurrentlyRunsABatchOnTheWorkersAndTheRestWithTheEntry) {
  auto managed = testing::two_thread_engine();
  ASSERT_TRUE(managed.ok()) << managed.status().to_string();
  const CpuResourceDomain& domain = managed->domains->default_domain();
  if (domain.thread_budget() < 2) GTEST_SKIP() << "needs two CPUs";
  runtime::EngineExecutor& executor = *managed->engine.registration.executor;

  struct Seen {
    std::thread::id thread;
    int threads = 0;
    ParallelMode mode = ParallelMode::kInner;
    bool met = false;
  };
  std::array<Seen, 3> seen;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  const Status s = executor.enter(
      runtime::ResolvedPlacement{EngineId(1), domain.id().value()}, [&](runtime::ErasedExecutionContext entered) {
        executor.run_concurrently(entered, 3, [&](std::size_t i, runtime::ErasedExecutionContext context) {
          const CpuEngineContext* c = context.get<CpuEngineContext>();
          seen[i].thread = std::this_thread::get_id();
          seen[i].threads = c->parallel->max_threads();
          seen[i].mode = c->domain->parallel_mode();
          if (i < 2) {  // the batch: both must be inside at once
            std::unique_lock<std::mutex> lock(mutex);
            ++arrived;
            cv.notify_all();
            seen[i].met = cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived >= 2; });
          }
        });
        return ok_status();
      });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(seen[0].met && seen[1].met) << "the batch did not run at the same time";
  EXPECT_NE(seen[0].thread, seen[1].thread);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(seen[i].threads, 1);
    EXPECT_EQ(seen[i].mode, ParallelMode::kSequential);
  }
  EXPECT_EQ(seen[2].threads, domain.thread_budget());
  EXPECT_EQ(seen[2].mode, ParallelMode::kInner);

  // Without domains every task runs in order with the entry's context.
  auto inline_engine = make_cpu_engine();
  ASSERT_TRUE(inline_engine.ok());
  runtime::EngineExecutor& inline_executor = *inline_engine->registration.executor;
  std::vector<std::size_t> order;
  const Status t = inline_executor.enter({}, [&](runtime::ErasedExecutionContext entered) {
    inline_executor.run_concurrently(entered, 3, [&](std::size_t i, runtime::ErasedExecutionContext context) {
      order.push_back(i);
      EXPECT_EQ(context.get<CpuEngineContext>(), entered.get<CpuEngineContext>());
    });
    return ok_status();
  });
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2}));
}

}  // namespace
}  // namespace tenferro::cpu
