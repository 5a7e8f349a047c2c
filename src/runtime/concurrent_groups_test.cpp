// Concurrent groups (Note [Concurrent groups]): which neighbours form a
// group, that the buffer plan keeps members apart, and how a group reaches
// the event domain and the engine executor.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <random>
#include <thread>

#include "runtime/runtime_test_support.h"
#include "runtime/scheduled_graph.h"

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures
using internal::kNoIndex;
using internal::NodeRecord;
using internal::PreparedState;
using program::ProgramBuilder;
using program::ProgramValue;
using Values = SmallVector<ProgramValue, 4>;

constexpr double kBig = 1e6;  // flops: above the group threshold

InputSignature signature_of(int inputs, std::int64_t n) {
  InputSignature sig;
  for (int i = 0; i < inputs; ++i) sig.add(InputDescriptor{DType::kFloat64, Dims{n}});
  return sig;
}

// (neg(x), exp(x)) -> add: the two unary ops are independent neighbours.
std::shared_ptr<const program::SemanticProgram> fork_join_program() {
  return make_program({{4}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue a, b.emit(CoreSemanticOp::kNeg, {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue e, b.emit(CoreSemanticOp::kExp, {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kAdd, {a, e}));
    return Values{y};
  });
}

// The groups of a plan as [start, end) pairs.
std::vector<std::pair<std::uint32_t, std::uint32_t>> groups_of(const PreparedState& st) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::uint32_t i = 0; i < st.nodes.size(); ++i)
    if (st.nodes[i].group_end > i + 1) out.emplace_back(i, st.nodes[i].group_end);
  return out;
}

// The buffer behind a slot (through views).
std::uint32_t buffer_of(const PreparedState& st, std::uint32_t slot) {
  while (st.slots[slot].view_source != kNoIndex) slot = st.slots[slot].view_source;
  return st.slots[slot].buffer;
}

// Members of every group depend on no other member, and no member writes a
// buffer another member reads or writes.
void expect_members_apart(const PreparedState& st) {
  for (auto [start, end] : groups_of(st)) {
    for (std::uint32_t k = start; k < end; ++k) {
      for (std::uint32_t d : st.nodes[k].deps) EXPECT_LT(d, start) << "node #" << k << " depends inside its group";
    }
    for (std::uint32_t k = start; k < end; ++k) {
      std::vector<std::uint32_t> written;
      for (std::uint32_t s : st.nodes[k].outputs) written.push_back(buffer_of(st, s));
      if (st.nodes[k].scratch_buffer != kNoIndex) written.push_back(st.nodes[k].scratch_buffer);
      for (std::uint32_t l = start; l < end; ++l) {
        if (l == k) continue;
        std::vector<std::uint32_t> touched;
        for (std::uint32_t s : st.nodes[l].inputs) touched.push_back(buffer_of(st, s));
        for (std::uint32_t s : st.nodes[l].outputs) touched.push_back(buffer_of(st, s));
        if (st.nodes[l].scratch_buffer != kNoIndex) touched.push_back(st.nodes[l].scratch_buffer);
        for (std::uint32_t b : written) {
          if (b == kNoIndex) continue;
          EXPECT_EQ(std::count(touched.begin(), touched.end(), b), 0)
              << "node #" << k << " writes b" << b << ", which node #" << l << " of its group uses";
        }
      }
    }
  }
}

struct GroupFixture {
  MockEngine host{1, kHostStorageDomain, "host"};

  Result<Runtime> build() {
    RuntimeBuilder b;
    b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
    b.add_engine(host.registration());
    return b.build();
  }
};

TEST(ConcurrentGroupsTest, IndependentNeighboursWithEstimatesFormOneGroup) {
  GroupFixture f;
  f.host.behaviour->work = {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, kBig}, {CoreSemanticOp::kAdd, kBig}};
  auto rt = f.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto plan = rt->prepare_for(fork_join_program(), signature_of(1, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const PreparedState& st = (*plan)->state();
  ASSERT_EQ(st.nodes.size(), 3u);
  // The add depends on both, so it is not part of the group.
  EXPECT_EQ(groups_of(st), (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 2}}));
  EXPECT_NE((*plan)->explain().find("concurrent group: #0..#1"), std::string::npos) << (*plan)->explain();

  const Tensor x = make_tensor(*f.host.allocator, {0, 1, 2, 3}, {4});
  auto out = rt->run_prepared(**plan, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const std::vector<double> y = values_of((*out)[0]);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(y[i], -i + std::exp(static_cast<double>(i)));
  EXPECT_EQ(rt->execution_metrics().groups_enqueued, 1u);
  EXPECT_EQ(rt->execution_metrics().nodes_enqueued, 3u);
}

TEST(ConcurrentGroupsTest, NoGroupWithoutEstimatesBelowTheThresholdOrOutOfBalance) {
  struct Case {
    const char* what;
    std::map<CoreSemanticOp, double> work;
  };
  const Case cases[] = {
      {"no estimates", {}},
      {"one estimate missing", {{CoreSemanticOp::kNeg, kBig}}},
      {"too small", {{CoreSemanticOp::kNeg, 1000.0}, {CoreSemanticOp::kExp, 1000.0}}},
      {"out of balance", {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, 1.6 * kBig}}},
  };
  for (const Case& c : cases) {
    GroupFixture f;
    f.host.behaviour->work = c.work;
    auto rt = f.build();
    ASSERT_TRUE(rt.ok());
    auto plan = rt->prepare_for(fork_join_program(), signature_of(1, 4));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_TRUE(groups_of((*plan)->state()).empty()) << c.what;
  }
  // 1.5 times as much is still in balance for small members, not for large ones.
  {
    GroupFixture large;
    large.host.behaviour->work = {{CoreSemanticOp::kNeg, 1e8}, {CoreSemanticOp::kExp, 1.3e8}};
    auto rt = large.build();
    ASSERT_TRUE(rt.ok());
    auto plan = rt->prepare_for(fork_join_program(), signature_of(1, 4));
    ASSERT_TRUE(plan.ok());
    EXPECT_TRUE(groups_of((*plan)->state()).empty());
    large.host.behaviour->work = {{CoreSemanticOp::kNeg, 1e8}, {CoreSemanticOp::kExp, 1.15e8}};
    auto rt2 = large.build();
    ASSERT_TRUE(rt2.ok());
    auto plan2 = rt2->prepare_for(fork_join_program(), signature_of(1, 4));
    ASSERT_TRUE(plan2.ok());
    EXPECT_EQ(groups_of((*plan2)->state()).size(), 1u);
  }
  GroupFixture f;
  f.host.behaviour->work = {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, 1.5 * kBig}};
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto plan = rt->prepare_for(fork_join_program(), signature_of(1, 4));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(groups_of((*plan)->state()).size(), 1u);
}

TEST(ConcurrentGroupsTest, ALeasedNodeOrADependentNodeEndsAGroup) {
  GroupFixture f;
  f.host.behaviour->work = {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, kBig}};
  // A chain: every node depends on the previous one.
  auto chain = make_program({{4}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    ProgramValue v = x[0];
    for (int i = 0; i < 4; ++i) {
      TENFERRO_ASSIGN_OR_RETURN(v, b.emit(CoreSemanticOp::kNeg, {v}));
    }
    return Values{v};
  });
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto plan = rt->prepare_for(chain, signature_of(1, 4));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(groups_of((*plan)->state()).empty());

  GroupFixture leased;
  leased.host.behaviour->work = f.host.behaviour->work;
  leased.host.behaviour->resources.push_back(ResourceAmount{ResourceKey{ResourceKind::kCpuThreads, 1}, 1});
  auto rt2 = leased.build();
  ASSERT_TRUE(rt2.ok());
  auto plan2 = rt2->prepare_for(fork_join_program(), signature_of(1, 4));
  ASSERT_TRUE(plan2.ok()) << plan2.status().to_string();
  EXPECT_TRUE(groups_of((*plan2)->state()).empty());
}

// Two readers of one intermediate, the second allowed to write in place:
// alone it would take over the intermediate's buffer while the first member
// still reads it.
TEST(ConcurrentGroupsTest, AMemberDoesNotWriteInPlaceOverAnOperandAnotherMemberReads) {
  GroupFixture f;
  f.host.behaviour->in_place_ok = true;
  f.host.behaviour->work = {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, kBig}, {CoreSemanticOp::kAdd, kBig}};
  auto program = make_program({{4}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue t, b.emit(CoreSemanticOp::kAdd, {x[0], x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue u, b.emit(CoreSemanticOp::kExp, {t}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, b.emit(CoreSemanticOp::kNeg, {t}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kAdd, {u, v}));
    return Values{y};
  });
  auto rt = f.build();
  ASSERT_TRUE(rt.ok());
  auto plan = rt->prepare_for(program, signature_of(1, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const PreparedState& st = (*plan)->state();
  ASSERT_EQ(groups_of(st), (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 3}})) << (*plan)->explain();
  expect_members_apart(st);
  const Tensor x = make_tensor(*f.host.allocator, {0, 1, 2, 3}, {4});
  auto out = rt->run_prepared(**plan, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const std::vector<double> y = values_of((*out)[0]);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(y[i], std::exp(2.0 * i) - 2.0 * i);
}

// Random programs of unary and binary ops, in-place allowed: every group
// satisfies the invariants.
TEST(ConcurrentGroupsTest, RandomProgramsKeepMembersApart) {
  std::mt19937 rng(11);
  int groups = 0;
  for (int trial = 0; trial < 60; ++trial) {
    GroupFixture f;
    f.host.behaviour->in_place_ok = trial % 2 == 0;
    f.host.behaviour->scratch_bytes = trial % 3 == 0 ? 256 : 0;
    f.host.behaviour->work = {{CoreSemanticOp::kNeg, kBig},
                              {CoreSemanticOp::kExp, kBig},
                              {CoreSemanticOp::kAdd, 1.4 * kBig},
                              {CoreSemanticOp::kMul, kBig}};
    const int inputs = 1 + trial % 3;
    ProgramBuilder b;
    std::vector<ProgramValue> values;
    for (int i = 0; i < inputs; ++i) values.push_back(*b.add_input(DType::kFloat64, {8}));
    const int ops = 4 + static_cast<int>(rng() % 12);
    for (int i = 0; i < ops; ++i) {
      const ProgramValue a = values[rng() % values.size()];
      const ProgramValue c = values[rng() % values.size()];
      const CoreSemanticOp kinds[] = {CoreSemanticOp::kNeg, CoreSemanticOp::kExp, CoreSemanticOp::kAdd,
                                      CoreSemanticOp::kMul};
      const CoreSemanticOp op = kinds[rng() % 4];
      const bool unary = op == CoreSemanticOp::kNeg || op == CoreSemanticOp::kExp;
      values.push_back(unary ? *b.emit(op, {a}) : *b.emit(op, {a, c}));
    }
    std::vector<ProgramValue> outs{values.back(), values[values.size() / 2]};
    auto frozen = b.freeze(outs);
    ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
    auto rt = f.build();
    ASSERT_TRUE(rt.ok());
    auto plan = rt->prepare_for(frozen->program, signature_of(inputs, 8));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    groups += static_cast<int>(groups_of((*plan)->state()).size());
    expect_members_apart((*plan)->state());
    if (HasFailure()) {
      ADD_FAILURE() << (*plan)->explain();
      return;
    }
  }
  EXPECT_GT(groups, 10);  // the programs do exercise groups
}

// An executor whose run_concurrently runs every task on its own thread and
// waits until all of them have started before letting any finish.
class ThreadedExecutor final : public EngineExecutor {
 public:
  ExecutionContextTypeId context_type() const noexcept override {
    return ExecutionContextTypeId::of<NoExecutionContext>();
  }
  Status enter(ResolvedPlacement, FunctionRef<Status(ErasedExecutionContext)> body) noexcept override {
    NoExecutionContext context;
    return body(ErasedExecutionContext::of(context));
  }
  void run_concurrently(ErasedExecutionContext entered, std::size_t count,
                        FunctionRef<void(std::size_t, ErasedExecutionContext)> task) noexcept override {
    ++calls;
    largest = std::max(largest, count);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < count; ++i) threads.emplace_back([&, i] { task(i, entered); });
    for (std::thread& t : threads) t.join();
  }
  int calls = 0;
  std::size_t largest = 0;
};

// The provider's runs meet at a rendezvous: each waits (up to 10 s) until
// `expected` runs are in progress, and records whether they all were.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable cv;
  int inside = 0;
  int expected = 2;
  int met = 0;
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex);
    ++inside;
    cv.notify_all();
    if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return inside >= expected; })) ++met;
  }
};

TEST(ConcurrentGroupsTest, TheCpuImmediateRunHandsAGroupToTheExecutorAndReportsTheFirstFailure) {
  MockEngine host{1, kHostStorageDomain, "host"};
  host.behaviour->work = {{CoreSemanticOp::kNeg, kBig}, {CoreSemanticOp::kExp, kBig}, {CoreSemanticOp::kAdd, kBig}};
  auto rendezvous = std::make_shared<Rendezvous>();
  host.behaviour->on_run = [rendezvous] {
    // Only the group's members (the first two runs) meet.
    std::unique_lock<std::mutex> lock(rendezvous->mutex);
    if (rendezvous->inside >= rendezvous->expected) return;
    lock.unlock();
    rendezvous->arrive();
  };
  auto executor = std::make_shared<ThreadedExecutor>();
  EngineRegistration r = host.registration();
  r.executor = executor;
  r.event_driver = make_cpu_immediate_event_driver(executor);
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  b.add_engine(std::move(r));
  auto rt = b.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto plan = rt->prepare_for(fork_join_program(), signature_of(1, 4));
  ASSERT_TRUE(plan.ok());
  const Tensor x = make_tensor(*host.allocator, {0, 1, 2, 3}, {4});
  auto out = rt->run_prepared(**plan, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(executor->calls, 1);
  EXPECT_EQ(executor->largest, 2u);
  EXPECT_EQ(rendezvous->met, 2) << "the group's members did not run at the same time";
  const std::vector<double> y = values_of((*out)[0]);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(y[i], -i + std::exp(static_cast<double>(i)));

  // A failing member: the run fails with its error, every member still ran,
  // and nothing after the group runs.
  host.behaviour->on_run = nullptr;
  const int runs_before = host.behaviour->runs.load();
  host.behaviour->fail_run_at = runs_before + 1;  // the second member
  auto failed = rt->run_prepared(**plan, std::span<const Tensor>(&x, 1));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kInternal) << failed.status().to_string();
  EXPECT_EQ(failed.status().error().stage(), ErrorStage::kCompletion);
  EXPECT_EQ(host.behaviour->runs.load(), runs_before + 2);
}

}  // namespace
}  // namespace tenferro::runtime
