// Execution: fault injection at allocation, enqueue, completion and
// transfer; fail-fast with primary and suppressed errors; release of every
// resource; leases through a scripted arbiter; cancellation; submit and
// handles; ownership without cycles; entry amortisation.
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "runtime/runtime_test_support.h"

namespace tenferro::runtime {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test fixtures
using program::ProgramBuilder;
using program::ProgramValue;
using Values = SmallVector<ProgramValue, 4>;

constexpr ResourceKey kThreads{ResourceKind::kCpuThreads, 0};

// A deterministic arbiter: records every request, can refuse the n-th one,
// and tracks what is currently held (must be zero after every run).
class ScriptedArbiter final : public ResourceArbiter {
 public:
  std::optional<std::uint64_t> capacity(ResourceKey) const noexcept override { return std::nullopt; }
  Status acquire(std::span<const ResourceAmount> request, const std::atomic<bool>*) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    const int n = requests++;
    if (n == refuse_at) return Error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue, "scripted refusal");
    for (const ResourceAmount& r : request) held += static_cast<std::int64_t>(r.amount);
    return ok_status();
  }
  // Always takes the blocking path, so every lease is one scripted request.
  bool try_acquire(std::span<const ResourceAmount>) noexcept override { return false; }
  void release(std::span<const ResourceAmount> request) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const ResourceAmount& r : request) held -= static_cast<std::int64_t>(r.amount);
    ++releases;
  }
  void wake_waiters() noexcept override {}

  std::mutex mutex_;
  int requests = 0;
  int releases = 0;
  int refuse_at = -1;
  std::int64_t held = 0;
};

std::shared_ptr<const program::SemanticProgram> neg_chain(int length, std::int64_t n = 4) {
  return make_program({{n}}, [length](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    ProgramValue v = x[0];
    for (int i = 0; i < length; ++i) {
      TENFERRO_ASSIGN_OR_RETURN(v, b.emit(CoreSemanticOp::kNeg, {v}));
    }
    return Values{v};
  });
}

struct Harness {
  MockEngine host{1, kHostStorageDomain, "host"};
  MockEngine device{2, kDevice, "device"};
  std::shared_ptr<MockTransfer> to_device = std::make_shared<MockTransfer>();
  std::shared_ptr<MockTransfer> to_host = std::make_shared<MockTransfer>();
  std::shared_ptr<ManualSubmissionExecutor> manual = std::make_shared<ManualSubmissionExecutor>();
  std::shared_ptr<ResourceArbiter> arbiter;

  Runtime build(bool with_device = false, std::vector<ResourceAmount> capacities = {}) {
    RuntimeBuilder b;
    b.set_submission_executor(manual);
    b.add_engine(host.registration());
    if (with_device) {
      b.add_engine(device.registration());
      b.add_transfer({{host.id, kHostStorageDomain}, {device.id, kDevice}, to_device});
      b.add_transfer({{device.id, kDevice}, {host.id, kHostStorageDomain}, to_host});
    }
    b.config().policies().capacities = std::move(capacities);
    if (arbiter) b.config().set_arbiter(arbiter);
    auto rt = b.build();
    EXPECT_TRUE(rt.ok()) << rt.status().to_string();
    return std::move(*rt);
  }
};

TEST(ExecuteTest, AllocationFailureFailsBeforeAnyWorkAndReleasesEverything) {
  Harness s;
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  const int live_inputs = s.host.allocator->live.load();
  auto program = neg_chain(3);
  // First run: the workspace buffers cannot be allocated.
  s.host.allocator->fail_from = s.host.allocator->allocations.load();
  auto r = rt.run(program, std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(r.status().stage(), ErrorStage::kEnqueue);
  EXPECT_EQ(s.host.control->enqueues.load(), 0);
  EXPECT_EQ(s.host.allocator->live.load(), live_inputs);
  // Workspace fine, but the per-run output allocation fails.
  s.host.allocator->fail_from = -1;
  ASSERT_TRUE(rt.run(program, std::span<const Tensor>(&x, 1)).ok());
  const int enqueues = s.host.control->enqueues.load();
  s.host.allocator->fail_from = s.host.allocator->allocations.load();
  r = rt.run(program, std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(s.host.control->enqueues.load(), enqueues);  // nothing launched
  s.host.allocator->fail_from = -1;
  EXPECT_TRUE(rt.run(program, std::span<const Tensor>(&x, 1)).ok());
  EXPECT_GE(rt.execution_metrics().failed_runs, 2u);
}

TEST(ExecuteTest, EnqueueFailureStopsLaterNodesAndDrainsStartedWork) {
  Harness s;
  s.host.control->deferred = true;
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  const int live_before = s.host.allocator->live.load();
  s.host.control->fail_enqueue_at = 1;
  auto r = rt.run(neg_chain(3), std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(r.status().stage(), ErrorStage::kEnqueue);
  EXPECT_NE(r.status().message().find("enqueue"), std::string::npos);
  EXPECT_EQ(s.host.control->enqueues.load(), 2);  // the third node was never offered
  EXPECT_EQ(s.host.control->executed.load(), 1);  // the started one ran to retirement
  EXPECT_EQ(s.host.control->drains.load(), 1);
  EXPECT_EQ(s.host.allocator->live.load(), live_before);  // failed workspaces are dropped
  EXPECT_EQ(s.host.control->runs_created.load(), s.host.control->runs_destroyed.load());
}

TEST(ExecuteTest, CompletionFailureSurfacesAtDrain) {
  Harness s;
  s.host.control->deferred = true;
  s.host.behaviour->fail_run_at = 0;
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto r = rt.run(neg_chain(2), std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(r.status().stage(), ErrorStage::kCompletion);
  EXPECT_NE(r.status().message().find("injected kernel failure"), std::string::npos);
  EXPECT_EQ(s.host.control->drains.load(), 1);
}

TEST(ExecuteTest, PrimaryAndSuppressedErrorsAcrossEventDomains) {
  // The device run's drain fails after the host kernel already failed: the
  // host failure is primary, the drain failure suppressed.
  Harness s;
  s.device.control->fail_drain = true;
  Runtime rt = s.build(true);
  auto program = make_program({{3}}, [](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kExp, {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue z, b.emit(CoreSemanticOp::kNeg, {y}));
    return Values{z};
  });
  PrepareOptions options;
  options.overrides.push_back(OperationOverride{program::OperationId(0), EngineId(2)});
  options.overrides.push_back(OperationOverride{program::OperationId(1), EngineId(1)});
  s.host.behaviour->fail_run_at = 0;
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3}, {3});
  auto r = rt.run(program, std::span<const Tensor>(&x, 1), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  ASSERT_EQ(r.status().error().suppressed().size(), 1u);
  EXPECT_EQ(r.status().error().suppressed()[0].code(), ErrorCode::kDataLoss);
  EXPECT_EQ(s.device.control->drains.load(), 1);
  EXPECT_EQ(s.host.control->drains.load(), 1);
}

TEST(ExecuteTest, TransferFailureIsACompletionErrorAndStopsTheRun) {
  Harness s;
  s.to_device->fail = true;
  Runtime rt = s.build(true);
  PrepareOptions options;
  options.placement = Placement::engine(EngineId(2));
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3}, {3});
  auto r = rt.run(neg_chain(1, 3), std::span<const Tensor>(&x, 1), options);
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(r.status().stage(), ErrorStage::kCompletion);
  EXPECT_EQ(s.to_device->calls.load(), 1);
  EXPECT_EQ(s.device.behaviour->runs.load(), 0);  // the consumer never launched
}

TEST(ExecuteTest, ForeignCompletionTokenIsRejected) {
  Harness s;
  s.host.control->wrong_origin = true;
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto r = rt.run(neg_chain(2), std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kContractViolation);
  EXPECT_NE(r.status().message().find("validate_completion"), std::string::npos);
  EXPECT_EQ(s.host.control->enqueues.load(), 1);  // nothing downstream launched
}

TEST(ExecuteTest, BeginFailureDrainsRunsAlreadyBegun) {
  Harness s;
  s.device.control->fail_begin = 1;
  Runtime rt = s.build(true);
  PrepareOptions options;
  options.overrides.push_back(OperationOverride{program::OperationId(1), EngineId(2)});
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto r = rt.run(neg_chain(2), std::span<const Tensor>(&x, 1), options);
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(s.host.control->begins.load(), 1);
  EXPECT_EQ(s.host.control->drains.load(), 1);
  EXPECT_EQ(s.host.control->enqueues.load(), 0);  // no effect ran before the failure
}

TEST(ExecuteTest, NodeLeasesAreAcquiredAndReleasedEvenOnFailure) {
  Harness s;
  auto arbiter = std::make_shared<ScriptedArbiter>();
  s.arbiter = arbiter;
  s.host.behaviour->resources = {ResourceAmount{kThreads, 2}};
  Runtime rt = s.build(false, {{{ResourceKind::kMemoryBytes, kHostStorageDomain.value()}, 1 << 20}});
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  ASSERT_TRUE(rt.run(neg_chain(3), std::span<const Tensor>(&x, 1)).ok());
  EXPECT_EQ(arbiter->requests, 4);  // run admission + one lease per node
  EXPECT_EQ(arbiter->held, 0);
  // Refuse the second node's lease: fail-fast, nothing held afterwards.
  arbiter->requests = 0;
  arbiter->refuse_at = 2;
  auto r = rt.run(neg_chain(3), std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(arbiter->held, 0);
  EXPECT_EQ(s.host.behaviour->runs.load(), 3 + 1);
}

TEST(ExecuteTest, AsyncLeasesNeverDeadlockOnTheirOwnRun) {
  // Capacity 1 and a deferred domain: node 1 cannot lease until node 0
  // completes; the runtime retires its own outstanding node first.
  Harness s;
  s.host.control->deferred = true;
  s.host.behaviour->resources = {ResourceAmount{kThreads, 1}};
  Runtime rt = s.build(false, {{kThreads, 1}});
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto r = rt.run(neg_chain(3), std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values_of((*r)[0]), (std::vector<double>{-1, -2, -3, -4}));
  auto* fifo = dynamic_cast<FifoResourceArbiter*>(&rt.config()->arbiter());
  ASSERT_NE(fifo, nullptr);
  EXPECT_EQ(fifo->available(kThreads), 1u);
  EXPECT_EQ(fifo->grants(), 3u);  // one lease per node; the run's memory is unaccounted
}

TEST(ExecuteTest, RunsWithoutCapacitiesLeaveTheArbiterAlone) {
  // Note [Unaccounted requests]: the default (no capacities) grants the run
  // admission and every node lease without the arbiter's accounts or lock.
  Harness s;
  s.host.behaviour->resources = {ResourceAmount{kThreads, 1}};
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  for (int i = 0; i < 2; ++i) {
    auto r = rt.run(neg_chain(3), std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  auto* fifo = dynamic_cast<FifoResourceArbiter*>(&rt.config()->arbiter());
  ASSERT_NE(fifo, nullptr);
  EXPECT_EQ(fifo->grants(), 0u);
}

TEST(ExecuteTest, SubmitWaitAndHandleRules) {
  Harness s;
  Runtime rt = s.build();
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto handle = rt.submit(neg_chain(1), std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(handle.ok());
  EXPECT_FALSE(handle->is_done());
  EXPECT_EQ(s.manual->queued(), 1u);
  EXPECT_EQ(s.manual->run_all(), 1u);
  EXPECT_TRUE(handle->is_done());
  auto out = handle->wait();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-1, -2, -3, -4}));
  EXPECT_EQ(handle->wait().status().code(), ErrorCode::kFailedPrecondition);
}

TEST(ExecuteTest, CancelBeforeStartAcquiresNothing) {
  Harness s;
  auto arbiter = std::make_shared<ScriptedArbiter>();
  s.arbiter = arbiter;
  Runtime rt = s.build(false, {{{ResourceKind::kMemoryBytes, 1}, 1 << 20}});
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto handle = rt.submit(neg_chain(1), std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(handle.ok());
  handle->cancel();
  s.manual->run_all();
  EXPECT_EQ(handle->wait().status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(arbiter->requests, 0);
  EXPECT_EQ(s.host.control->enqueues.load(), 0);
  EXPECT_EQ(rt.execution_metrics().cancelled_runs, 1u);
}

TEST(ExecuteTest, CancelWhileRunningStopsEnqueueAndDrains) {
  Harness s;
  ExecutionHandle* target = nullptr;
  s.host.behaviour->on_run = [&] {
    if (target != nullptr) target->cancel();
  };
  RuntimeBuilder b;
  b.set_submission_executor(s.manual);
  EngineRegistration reg = s.host.registration();
  reg.event_driver = make_cpu_immediate_event_driver(s.host.executor);
  b.add_engine(std::move(reg));
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  auto handle = rt->submit(neg_chain(3), std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(handle.ok());
  target = &*handle;
  s.manual->run_all();
  EXPECT_EQ(handle->wait().status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(s.host.behaviour->runs.load(), 1);  // the started node finished; no later node launched
  EXPECT_EQ(rt->execution_metrics().cancelled_runs, 1u);
}

TEST(ExecuteTest, DroppedHandleDetachesAndFailuresStayObservable) {
  Harness s;
  Runtime rt = s.build();
  s.host.behaviour->fail_run_at = 0;
  const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
  {
    auto handle = rt.submit(neg_chain(1), std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(handle.ok());
  }  // dropped before it ran: no wait, no cancel
  EXPECT_EQ(s.manual->run_all(), 1u);
  const ExecutionMetrics m = rt.execution_metrics();
  ASSERT_EQ(m.detached_failures.size(), 1u);
  EXPECT_EQ(m.detached_failures[0].code(), ErrorCode::kInternal);
  EXPECT_EQ(m.cancelled_runs, 0u);
}

TEST(ExecuteTest, NoStrongCyclesAndNonBlockingDrops) {
  // Weak sentinels on the runtime state and a prepared plan, across
  // completed, failed, cancelled and dropped-handle runs still queued when
  // the runtime is dropped.
  Harness s;
  std::weak_ptr<internal::RuntimeState> runtime_sentinel;
  std::weak_ptr<const PreparedProgram> plan_sentinel;
  std::vector<ExecutionHandle> handles;
  {
    Runtime rt = s.build();
    runtime_sentinel = rt.state();
    const Tensor x = make_tensor(*s.host.allocator, {1, 2, 3, 4}, {4});
    auto program = neg_chain(2);
    auto prepared = rt.prepare_for(program, InputSignature::of(std::span<const Tensor>(&x, 1)));
    ASSERT_TRUE(prepared.ok());
    plan_sentinel = *prepared;
    ASSERT_TRUE(rt.run_prepared(**prepared, std::span<const Tensor>(&x, 1)).ok());  // completed
    auto completed = rt.submit(program, std::span<const Tensor>(&x, 1));
    auto cancelled = rt.submit(program, std::span<const Tensor>(&x, 1));
    auto dropped = rt.submit(program, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(completed.ok() && cancelled.ok() && dropped.ok());
    cancelled->cancel();
    handles.push_back(std::move(*completed));
    handles.push_back(std::move(*cancelled));
    // `dropped` goes out of scope with the runtime: detached.
  }
  // The runtime is gone although three runs are still queued: nothing they
  // hold points back at it.
  EXPECT_TRUE(runtime_sentinel.expired());
  s.host.behaviour->fail_run_at = s.host.behaviour->runs.load();  // the next kernel fails
  EXPECT_EQ(s.manual->run_all(), 3u);
  EXPECT_FALSE(handles[0].wait().ok());  // failed
  EXPECT_EQ(handles[1].wait().status().code(), ErrorCode::kCancelled);
  handles.clear();
  EXPECT_TRUE(plan_sentinel.expired());
  EXPECT_EQ(s.host.allocator->live.load(), 0);  // every buffer and input returned
}

TEST(ExecuteTest, DroppingTheRuntimeNeverWaitsForRunningWork) {
  MockEngine host{1, kHostStorageDomain, "host"};
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  struct Blocking final : EngineExecutor {
    std::atomic<bool>* release;
    std::atomic<bool>* started;
    ExecutionContextTypeId context_type() const noexcept override {
      return ExecutionContextTypeId::of<NoExecutionContext>();
    }
    Status enter(ResolvedPlacement, FunctionRef<Status(ErasedExecutionContext)> body) noexcept override {
      *started = true;
      while (!*release) std::this_thread::yield();
      NoExecutionContext c;
      return body(ErasedExecutionContext::of(c));
    }
  };
  auto blocking = std::make_shared<Blocking>();
  blocking->release = &release;
  blocking->started = &started;
  Result<ExecutionHandle> handle = Error(ErrorCode::kUnknown, ErrorStage::kNone, "unset");
  const Tensor x = make_tensor(*host.allocator, {1, 2, 3, 4}, {4});
  {
    RuntimeBuilder b;  // default: the runtime's own worker thread
    EngineRegistration reg = host.registration();
    reg.executor = blocking;
    reg.event_driver = make_cpu_immediate_event_driver(blocking);
    b.add_engine(std::move(reg));
    auto rt = b.build();
    ASSERT_TRUE(rt.ok());
    handle = rt->submit(neg_chain(1), std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(handle.ok());
    while (!started) std::this_thread::yield();
  }  // ~Runtime returns while the run is blocked inside the engine
  release = true;
  auto out = handle->wait();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_of((*out)[0]), (std::vector<double>{-1, -2, -3, -4}));
}

TEST(ExecuteTest, ShutdownWaitsAndStopsAdmission) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.add_engine(host.registration());
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  const Tensor x = make_tensor(*host.allocator, {1, 2, 3, 4}, {4});
  std::vector<ExecutionHandle> handles;
  for (int i = 0; i < 4; ++i) {
    auto h = rt->submit(neg_chain(2), std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(h.ok());
    handles.push_back(std::move(*h));
  }
  ASSERT_TRUE(rt->shutdown().ok());
  for (ExecutionHandle& h : handles) EXPECT_TRUE(h.is_done());
  EXPECT_EQ(rt->submit(neg_chain(2), std::span<const Tensor>(&x, 1)).status().code(), ErrorCode::kRuntimeStopped);
  EXPECT_EQ(rt->execution_metrics().runs, 4u);
}

TEST(ExecuteTest, CpuImmediateDriverEntersOncePerSegment) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  EngineRegistration reg = host.registration();
  reg.event_driver = make_cpu_immediate_event_driver(host.executor);
  b.add_engine(std::move(reg));
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  const Tensor x = make_tensor(*host.allocator, {1, 2, 3, 4}, {4});
  auto prepared = rt->prepare_for(neg_chain(6), InputSignature::of(std::span<const Tensor>(&x, 1)));
  ASSERT_TRUE(prepared.ok());
  for (int run = 1; run <= 3; ++run) {
    ASSERT_TRUE(rt->run_prepared(**prepared, std::span<const Tensor>(&x, 1)).ok());
    EXPECT_EQ(host.executor->enters.load(), run);  // one entry for six ops
  }
  EXPECT_EQ(host.behaviour->runs.load(), 18);
  EXPECT_EQ(host.behaviour->wrong_context.load(), 0);
}

// Note [Runtime single-flight test]: 8 threads run 3 overlapping programs
// through Runtime::run; each (program, signature) is prepared exactly once
// and every result is right. Run under ThreadSanitizer by the tsan preset.
TEST(ExecuteTest, EightThreadsRunOverlappingProgramsSingleFlight) {
  MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  b.add_engine(host.registration());
  auto rt = b.build();
  ASSERT_TRUE(rt.ok());
  std::shared_ptr<const program::SemanticProgram> programs[3] = {neg_chain(1), neg_chain(2), neg_chain(3)};
  const Tensor x = make_tensor(*host.allocator, {1, 2, 3, 4}, {4});
  std::barrier start(8);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        const int k = (t + i) % 3;
        auto out = rt->run(programs[k], std::span<const Tensor>(&x, 1));
        const double sign = (k % 2 == 0) ? -1 : 1;
        if (!out.ok() || values_of((*out)[0]) != std::vector<double>{sign, 2 * sign, 3 * sign, 4 * sign}) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const PlanCacheStats stats = rt->plan_cache_stats();
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.hits + stats.waits, 8u * 50 - 3);
  EXPECT_EQ(rt->execution_metrics().runs, 400u);
}

}  // namespace
}  // namespace tenferro::runtime
