// Collective nodes (Note [Collective nodes] in spi/collective.h) against an
// in-process fake provider: order by the communicator effect, node leases,
// typed errors that stop the run and abandon the collectives it did not
// reach, no partial outputs, prepare-time errors, configuration.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/runtime_test_support.h"
#include "tenferro/runtime/spi/collective.h"

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures
using program::CollectiveKind;
using program::CollectiveReduction;
using program::CollectiveSpec;
using program::ProgramBuilder;
using program::ProgramValue;

constexpr std::uint64_t kComm = 11;
constexpr ResourceKey kCommToken{ResourceKind::kExclusive, kComm};

// Tracks how much of the communicator token is held; every request is
// granted.
class HoldingArbiter final : public ResourceArbiter {
 public:
  std::optional<std::uint64_t> capacity(ResourceKey) const noexcept override { return std::nullopt; }
  Status acquire(std::span<const ResourceAmount> request, const std::atomic<bool>*) noexcept override {
    (void)try_acquire(request);
    return ok_status();
  }
  bool try_acquire(std::span<const ResourceAmount> request) noexcept override {
    for (const ResourceAmount& r : request)
      if (r.key == kCommToken) held += static_cast<std::int64_t>(r.amount);
    return true;
  }
  void release(std::span<const ResourceAmount> request) noexcept override {
    for (const ResourceAmount& r : request)
      if (r.key == kCommToken) held -= static_cast<std::int64_t>(r.amount);
  }
  void wake_waiters() noexcept override {}
  std::atomic<std::int64_t> held{0};
};

// A communicator of `ranks` participants that all hold the same tensor as
// this one: allreduce(sum) is ranks * x, max is x, allgather repeats x,
// reduce_scatter gives ranks * block 0; broadcast, send and recv copy.
// float64 only. Records every call as "kind:tag".
class FakeCollectives final : public CollectiveProvider {
 public:
  explicit FakeCollectives(std::int64_t ranks) : ranks_(ranks) {}
  std::string_view name() const noexcept override { return "fake.collectives"; }
  Result<PrepareCapability> prepare(const CollectiveSignature& sig) const override {
    if (sig.op->spec().ranks != ranks_) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, "expected {} ranks, found {}", ranks_,
                        sig.op->spec().ranks);
    }
    if (refuse) return PrepareCapability::unsupported("refused by the test");
    PreparedKernel kernel;
    kernel.reproducible = true;
    kernel.resources.push_back(ResourceAmount{kCommToken, 1});
    return PrepareCapability::prepared(std::move(kernel));
  }
  Status run(const CollectiveRequest& r) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    calls.push_back(label(*r.op));
    if (arbiter != nullptr) held_while_running.push_back(arbiter->held.load());
    if (fail_at == static_cast<int>(calls.size()) - 1) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "{}: injected mismatch", label(*r.op));
    }
    const auto* in = static_cast<const double*>(r.input.data);
    auto* out = static_cast<double*>(r.output.data);
    const std::int64_t n = r.output.numel();
    const std::int64_t block = r.input.numel();
    const CollectiveSpec& spec = r.op->spec();
    for (std::int64_t i = 0; i < n; ++i) {
      switch (spec.kind) {
        case CollectiveKind::kAllReduce:
          out[i] = spec.reduction == CollectiveReduction::kSum ? static_cast<double>(ranks_) * in[i] : in[i];
          break;
        case CollectiveKind::kAllGather:
          out[i] = in[i % block];
          break;
        case CollectiveKind::kReduceScatter:
          out[i] = static_cast<double>(ranks_) * in[i];
          break;
        default:
          out[i] = in[i];
      }
    }
    return ok_status();
  }
  Status abandon(const program::CollectiveOp& op, const Status& failure) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned.push_back(fmt::format("{}:{}", label(op), to_string(failure.code())));
    return failure;
  }
  static std::string label(const program::CollectiveOp& op) {
    return fmt::format("{}:{}", program::to_string(op.spec().kind), op.spec().tag);
  }

  bool refuse = false;
  int fail_at = -1;
  HoldingArbiter* arbiter = nullptr;
  mutable std::mutex mutex_;
  mutable std::vector<std::string> calls;
  mutable std::vector<std::string> abandoned;
  mutable std::vector<std::int64_t> held_while_running;

 private:
  std::int64_t ranks_;
};

CollectiveSpec spec(CollectiveKind kind, std::int64_t tag, std::int64_t ranks = 2) {
  CollectiveSpec s;
  s.kind = kind;
  s.communicator = kComm;
  s.ranks = ranks;
  s.tag = kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv ? tag : 0;
  s.peer = kind == CollectiveKind::kBroadcast ? 1 : 0;
  return s;
}

struct Fixture {
  MockEngine host{1, kHostStorageDomain, "host"};
  std::shared_ptr<FakeCollectives> comm = std::make_shared<FakeCollectives>(2);
  std::shared_ptr<HoldingArbiter> arbiter = std::make_shared<HoldingArbiter>();

  Result<Runtime> build(bool register_comm = true) {
    RuntimeBuilder b;
    b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
    b.add_engine(host.registration());
    if (register_comm) b.add_collective({kComm, comm});
    b.config().set_arbiter(arbiter);
    comm->arbiter = arbiter.get();
    return b.build();
  }
};

// y = neg(x); a = allreduce_sum(y); g = allgather(a); s = send(tag 5, g);
// outputs (s, a).
std::shared_ptr<const program::SemanticProgram> pipeline() {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3});
  ProgramValue y = *b.emit(CoreSemanticOp::kNeg, {x});
  ProgramValue a = *b.emit_collective(spec(CollectiveKind::kAllReduce, 0), y);
  ProgramValue g = *b.emit_collective(spec(CollectiveKind::kAllGather, 0), a);
  ProgramValue s = *b.emit_collective(spec(CollectiveKind::kSend, 5), g);
  return b.freeze({s, a})->program;
}

TEST(CollectiveNodeTest, RunsAsScheduledNodesWithResultsAcrossRepeatedRuns) {
  Fixture f;
  Runtime rt = *f.build();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  auto prepared = rt.prepare_for(pipeline(), InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  int collective_nodes = 0;
  for (std::size_t i = 0; i < (*prepared)->num_nodes(); ++i) {
    const ScheduledNodeInfo info = (*prepared)->node(i);
    if (info.kind != ScheduledNodeKind::kCollective) continue;
    ++collective_nodes;
    EXPECT_EQ(info.provider, "fake.collectives");
  }
  EXPECT_EQ(collective_nodes, 3);
  EXPECT_NE((*prepared)->explain().find("all_gather"), std::string::npos);
  for (int run = 0; run < 3; ++run) {
    auto out = rt.run_prepared(**prepared, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-2, -4, -6, -2, -4, -6}));
    EXPECT_EQ(IntArrayRef((*out)[0].shape()), IntArrayRef(Dims{2, 3}));
    EXPECT_EQ(values_of((*out)[1]), (std::vector<double>{-2, -4, -6}));
  }
  EXPECT_EQ(f.comm->calls.size(), 9u);
  EXPECT_EQ(rt.execution_metrics().collectives, 9u);
  EXPECT_TRUE(f.comm->abandoned.empty());
}

TEST(CollectiveNodeTest, CollectivesOnOneCommunicatorRunInProgramOrder) {
  // Two collectives without a data dependency: the communicator effect
  // orders them as emitted, whatever order the outputs list them in.
  for (bool send_first : {true, false}) {
    Fixture f;
    Runtime rt = *f.build();
    ProgramBuilder b;
    ProgramValue x = *b.add_input(DType::kFloat64, {3});
    ProgramValue y = *b.add_input(DType::kFloat64, {3});
    ProgramValue nx = *b.emit(CoreSemanticOp::kNeg, {x});
    ProgramValue ny = *b.emit(CoreSemanticOp::kNeg, {y});
    ProgramValue first = *b.emit_collective(spec(send_first ? CollectiveKind::kSend : CollectiveKind::kRecv, 1), nx);
    ProgramValue second = *b.emit_collective(spec(send_first ? CollectiveKind::kRecv : CollectiveKind::kSend, 2), ny);
    auto program = b.freeze({second, first})->program;
    const Tensor in[2] = {make_tensor(*f.host.allocator, {1, 2, 3}, {3}),
                          make_tensor(*f.host.allocator, {4, 5, 6}, {3})};
    auto out = rt.run(program, std::span<const Tensor>(in, 2));
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(values_of((*out)[1]), (std::vector<double>{-1, -2, -3}));
    const std::vector<std::string> expected =
        send_first ? std::vector<std::string>{"send:1", "recv:2"} : std::vector<std::string>{"recv:1", "send:2"};
    EXPECT_EQ(f.comm->calls, expected);
  }
}

TEST(CollectiveNodeTest, TakesItsNodeLeaseOnlyWhileRunning) {
  Fixture f;
  Runtime rt = *f.build();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  ASSERT_TRUE(rt.run(pipeline(), std::span<const Tensor>(&x, 1)).ok());
  ASSERT_EQ(f.comm->held_while_running.size(), 3u);
  for (std::int64_t held : f.comm->held_while_running) EXPECT_EQ(held, 1);
  EXPECT_EQ(f.arbiter->held.load(), 0);
}

TEST(CollectiveNodeTest, FailedCollectiveIsTypedAbandonsTheRestAndReturnsNothing) {
  Fixture f;
  f.comm->fail_at = 0;  // the allreduce
  Runtime rt = *f.build();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  const int live_before = f.host.allocator->live.load();
  auto out = rt.run(pipeline(), std::span<const Tensor>(&x, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(out.status().stage(), ErrorStage::kCompletion);
  EXPECT_NE(out.status().message().find("injected mismatch"), std::string::npos);
  EXPECT_EQ(f.comm->calls, (std::vector<std::string>{"all_reduce:0"}));
  EXPECT_EQ(f.comm->abandoned, (std::vector<std::string>{"all_gather:0:shape_mismatch", "send:5:shape_mismatch"}));
  EXPECT_EQ(f.arbiter->held.load(), 0);
  EXPECT_EQ(f.host.allocator->live.load(), live_before);  // no outputs, no workspace kept
  EXPECT_EQ(f.host.control->runs_created.load(), f.host.control->runs_destroyed.load());
  // The runtime and the program stay usable.
  f.comm->fail_at = -1;
  f.comm->abandoned.clear();
  auto again = rt.run(pipeline(), std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(f.comm->abandoned.empty());
}

TEST(CollectiveNodeTest, EarlierFailureAbandonsEveryCollectiveItDidNotReach) {
  Fixture f;
  f.host.behaviour->fail_run_at = 0;  // the neg before the collectives
  Runtime rt = *f.build();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  auto out = rt.run(pipeline(), std::span<const Tensor>(&x, 1));
  EXPECT_EQ(out.status().code(), ErrorCode::kInternal);
  EXPECT_TRUE(f.comm->calls.empty());
  EXPECT_EQ(f.comm->abandoned,
            (std::vector<std::string>{"all_reduce:0:internal", "all_gather:0:internal", "send:5:internal"}));
}

TEST(CollectiveNodeTest, RejectedInputsAbandonTheCollectivesToo) {
  Fixture f;
  Runtime rt = *f.build();
  const Tensor x = make_tensor(*f.host.allocator, {1, 2, 3}, {3});
  auto prepared = rt.prepare_for(pipeline(), InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(prepared.ok());
  const Tensor wrong = make_tensor(*f.host.allocator, {1, 2}, {2});
  auto out = rt.run_prepared(**prepared, std::span<const Tensor>(&wrong, 1));
  EXPECT_EQ(out.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(f.comm->abandoned.size(), 3u);
  EXPECT_TRUE(f.comm->calls.empty());
}

TEST(CollectiveNodeTest, PrepareErrorsAreTyped) {
  const Tensor x = *Tensor::from_values<double>({1, 2, 3}, {3});
  {
    Fixture f;
    Runtime rt = *f.build(/*register_comm=*/false);
    auto r = rt.prepare_for(pipeline(), InputSignature::of(std::span<const Tensor>(&x, 1)));
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupportedOperation);
    EXPECT_EQ(r.status().stage(), ErrorStage::kPrepare);
    EXPECT_NE(r.status().message().find("communicator 11"), std::string::npos) << r.status().to_string();
  }
  {
    Fixture f;
    f.comm->refuse = true;
    Runtime rt = *f.build();
    auto r = rt.prepare_for(pipeline(), InputSignature::of(std::span<const Tensor>(&x, 1)));
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupportedOperation);
    EXPECT_NE(r.status().message().find("refused by the test"), std::string::npos);
  }
  {
    Fixture f;
    f.comm = std::make_shared<FakeCollectives>(4);  // the program says 2 ranks
    Runtime rt = *f.build();
    auto r = rt.prepare_for(pipeline(), InputSignature::of(std::span<const Tensor>(&x, 1)));
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.status().stage(), ErrorStage::kPrepare);
  }
}

TEST(CollectiveNodeTest, TwoRuntimesKeepTheirOwnProviders) {
  Fixture a;
  Fixture b;
  Runtime ra = *a.build();
  Runtime rb = *b.build();
  const Tensor x = make_tensor(*a.host.allocator, {1, 2, 3}, {3});
  ASSERT_TRUE(ra.run(pipeline(), std::span<const Tensor>(&x, 1)).ok());
  EXPECT_EQ(a.comm->calls.size(), 3u);
  EXPECT_TRUE(b.comm->calls.empty());
  EXPECT_EQ(rb.execution_metrics().collectives, 0u);
}

TEST(CollectiveNodeTest, ConfigurationRegistersOneProviderPerCommunicator) {
  auto p1 = std::make_shared<FakeCollectives>(2);
  auto p2 = std::make_shared<FakeCollectives>(2);
  RuntimeConfigBuilder c;
  EXPECT_EQ(c.add_collective({kComm, nullptr}).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(c.add_collective({kComm, p1}).ok());
  EXPECT_TRUE(c.add_collective({kComm, p1}).ok());  // the same again: a no-op
  EXPECT_EQ(c.add_collective({kComm, p2}).code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(c.remove_collective(kComm + 1).code(), ErrorCode::kNotFound);
  ASSERT_TRUE(c.add_collective({kComm + 1, p2}).ok());
  ASSERT_TRUE(c.remove_collective(kComm + 1).ok());
}

TEST(CollectiveNodeTest, BuilderChecksCollectiveSpecsAndShapes) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3, 4});
  ProgramValue c = *b.add_input(DType::kComplex128, {2});
  CollectiveSpec bad_root = spec(CollectiveKind::kBroadcast, 0);
  bad_root.peer = 2;
  EXPECT_EQ(b.emit_collective(bad_root, x).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.emit_collective(spec(CollectiveKind::kReduceScatter, 0), x).status().code(),
            ErrorCode::kShapeMismatch);  // leading extent 3, ranks 2
  CollectiveSpec max = spec(CollectiveKind::kAllReduce, 0);
  max.reduction = CollectiveReduction::kMax;
  EXPECT_EQ(b.emit_collective(max, c).status().code(), ErrorCode::kInvalidArgument);
  // reduce: a root in [0, ranks), a dtype with the reduction, x's shape.
  CollectiveSpec reduce_root = spec(CollectiveKind::kReduce, 0);
  reduce_root.peer = -1;
  EXPECT_EQ(b.emit_collective(reduce_root, x).status().code(), ErrorCode::kInvalidArgument);
  CollectiveSpec reduce_max = spec(CollectiveKind::kReduce, 0);
  reduce_max.reduction = CollectiveReduction::kMax;
  EXPECT_EQ(b.emit_collective(reduce_max, c).status().code(), ErrorCode::kInvalidArgument);
  reduce_root.peer = 1;
  ProgramValue reduced = *b.emit_collective(reduce_root, x);
  EXPECT_EQ(b.metadata(reduced)->to_string(), "float64[3, 4]");
  EXPECT_EQ(reduce_root.to_string(), "reduce(sum, root 1) comm 11 ranks 2");
  const std::size_t ops = b.num_operations();
  ProgramValue scattered = *b.emit_collective(spec(CollectiveKind::kReduceScatter, 0, 3), x);
  EXPECT_EQ(b.num_operations(), ops + 1);
  EXPECT_EQ(b.metadata(scattered)->to_string(), "float64[4]");
}

}  // namespace
}  // namespace tenferro::runtime
