// Fault injection on the real CPU engine (one managed domain, its pool, its
// kernels): the engine registration from cpu::make_cpu_engine is wrapped so
// that its allocator fails from a chosen call on and its elementwise slot
// fails (or cancels the run) at a chosen call, while every other call goes
// to the real allocator and kernels. Each fault must surface as a typed,
// staged error, return every pool block the run took (the domain pool's
// outstanding count is the leak check; LeakSanitizer covers the rest in the
// asan preset) and publish no output; the runtime must keep working after.
// Cancellation and shutdown racing with submit run on the same engine.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "tenferro/cpu/domains/memory_pool.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cpu {
namespace {

using program::CoreSemanticOp;

// The real allocator, failing every call numbered >= fail_from (-1: never).
class FailingAllocator final : public runtime::EngineAllocator {
 public:
  explicit FailingAllocator(std::shared_ptr<runtime::EngineAllocator> inner) : inner_(std::move(inner)) {}
  Result<StorageRef> allocate(std::size_t nbytes, runtime::ResolvedPlacement placement) noexcept override {
    const int n = calls.fetch_add(1);
    const int from = fail_from.load();
    if (from >= 0 && n >= from)
      return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone, "injected allocation failure");
    return inner_->allocate(nbytes, placement);
  }
  std::atomic<int> calls{0};
  std::atomic<int> fail_from{-1};

 private:
  std::shared_ptr<runtime::EngineAllocator> inner_;
};

// The real elementwise slot; call number `fail_at` returns an injected
// error instead, and `before_call` (when set) runs before each call.
class FailingElementwise final : public runtime::ElementwiseRuntime {
 public:
  explicit FailingElementwise(std::shared_ptr<runtime::ElementwiseRuntime> inner) : inner_(std::move(inner)) {}
  std::string_view name() const noexcept override { return inner_->name(); }
  bool reproducible() const noexcept override { return inner_->reproducible(); }
  runtime::ExecutionContextTypeId context_type() const noexcept override { return inner_->context_type(); }
  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& sig) const override {
    return inner_->prepare(sig);
  }
  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext context) const override {
    const int n = calls.fetch_add(1);
    if (before_call) before_call(n);
    if (n == fail_at.load()) return make_error(ErrorCode::kInternal, ErrorStage::kNone, "injected provider failure");
    return inner_->run(request, context);
  }
  mutable std::atomic<int> calls{0};
  std::atomic<int> fail_at{-1};
  std::function<void(int)> before_call;

 private:
  std::shared_ptr<runtime::ElementwiseRuntime> inner_;
};

struct FaultyCpu {
  std::shared_ptr<const CpuDomainSet> domains;
  std::shared_ptr<FailingAllocator> allocator;
  std::shared_ptr<FailingElementwise> elementwise;
  std::shared_ptr<runtime::ManualSubmissionExecutor> manual;
  std::unique_ptr<runtime::Runtime> runtime;

  // Pool blocks currently handed out (outputs, intermediates, workspace).
  std::uint64_t outstanding() const {
    std::uint64_t n = 0;
    for (const auto& d : domains->domains()) n += d->memory()->stats().outstanding_blocks;
    return n;
  }
};

// `manual_submission`: submitted runs wait for manual->run_all() (otherwise
// the runtime's own worker thread runs them).
FaultyCpu make_faulty_cpu(bool manual_submission) {
  FaultyCpu f;
  Result<std::shared_ptr<const CpuDomainSet>> domains = make_managed_domains(1);
  EXPECT_TRUE(domains.ok()) << domains.status().to_string();
  f.domains = *domains;
  Result<CpuEngine> engine = make_cpu_engine({.domains = f.domains});
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  runtime::EngineRegistration reg = std::move(engine->registration);
  f.allocator = std::make_shared<FailingAllocator>(reg.allocator);
  f.elementwise = std::make_shared<FailingElementwise>(reg.capabilities.elementwise);
  reg.allocator = f.allocator;
  reg.capabilities.elementwise = f.elementwise;
  runtime::RuntimeBuilder builder;
  builder.add_engine(std::move(reg));
  if (manual_submission) {
    f.manual = std::make_shared<runtime::ManualSubmissionExecutor>();
    builder.set_submission_executor(f.manual);
  }
  Result<runtime::Runtime> rt = builder.build();
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  f.runtime = std::make_unique<runtime::Runtime>(std::move(*rt));
  return f;
}

// y = exp(-x) * x + x: four elementwise nodes with intermediates.
std::shared_ptr<const program::SemanticProgram> four_node_program() {
  program::ProgramBuilder b;
  const program::ProgramValue x = *b.add_input(DType::kFloat64, {256});
  const program::ProgramValue e = *b.emit(CoreSemanticOp::kExp, {*b.emit(CoreSemanticOp::kNeg, {x})});
  const program::ProgramValue y = *b.emit(CoreSemanticOp::kAdd, {*b.emit(CoreSemanticOp::kMul, {e, x}), x});
  return b.freeze({y})->program;
}

Tensor input() {
  std::vector<double> v(256);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01 * static_cast<double>(i) - 1.0;
  return *Tensor::from_values<double>(std::span<const double>(v), {256});
}

void expect_correct(const runtime::TensorList& outputs, const Tensor& x) {
  ASSERT_EQ(outputs.size(), 1u);
  const std::vector<double> xs = *x.to_vector<double>(), ys = *outputs[0].to_vector<double>();
  ASSERT_EQ(ys.size(), xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(ys[i], std::exp(-xs[i]) * xs[i] + xs[i], 1e-12);
}

TEST(CpuFaultInjection, AllocationFailureIsAStagedErrorAndReturnsEveryBlock) {
  FaultyCpu f = make_faulty_cpu(false);
  const auto program = four_node_program();
  const Tensor x = input();
  // Cold: the very first allocation fails.
  const std::uint64_t cold = f.outstanding();
  f.allocator->fail_from = f.allocator->calls.load();
  Result<runtime::TensorList> r = f.runtime->run(program, std::span<const Tensor>(&x, 1));
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(r.status().stage(), ErrorStage::kEnqueue);
  EXPECT_EQ(f.outstanding(), cold);
  // Warm: what a successful run allocates (its output; the workspace the
  // runtime keeps for the next run stays outstanding by design).
  f.allocator->fail_from = -1;
  ASSERT_TRUE(f.runtime->run(program, std::span<const Tensor>(&x, 1)).ok());
  const std::uint64_t warm = f.outstanding();
  const int calls_before = f.allocator->calls.load();
  ASSERT_TRUE(f.runtime->run(program, std::span<const Tensor>(&x, 1)).ok());
  const int per_run = f.allocator->calls.load() - calls_before;
  ASSERT_GE(per_run, 1);
  EXPECT_EQ(f.outstanding(), warm);
  // Each of them failing in turn: the failed run adds no block (it may
  // give back the kept workspace).
  for (int allowed = 0; allowed < per_run; ++allowed) {
    f.allocator->fail_from = f.allocator->calls.load() + allowed;
    r = f.runtime->run(program, std::span<const Tensor>(&x, 1));
    ASSERT_FALSE(r.ok()) << "allowed " << allowed;
    EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
    EXPECT_EQ(r.status().stage(), ErrorStage::kEnqueue);
    EXPECT_LE(f.outstanding(), warm) << "allowed " << allowed;
  }
  f.allocator->fail_from = -1;
  Result<runtime::TensorList> ok = f.runtime->run(program, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  expect_correct(*ok, x);
  EXPECT_GE(f.runtime->execution_metrics().failed_runs, 1u + static_cast<std::uint64_t>(per_run));
}

TEST(CpuFaultInjection, ProviderErrorMidRunStopsTheRunAndPublishesNoOutput) {
  FaultyCpu f = make_faulty_cpu(false);
  const auto program = four_node_program();
  const Tensor x = input();
  const std::uint64_t before = f.outstanding();
  f.elementwise->fail_at = f.elementwise->calls.load() + 2;  // the third of four nodes
  const int calls_before = f.elementwise->calls.load();
  Result<runtime::TensorList> r = f.runtime->run(program, std::span<const Tensor>(&x, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().stage(), ErrorStage::kNone);
  EXPECT_NE(r.status().message().find("injected provider failure"), std::string::npos) << r.status().to_string();
  EXPECT_EQ(f.elementwise->calls.load() - calls_before, 3);  // the fourth node never ran
  EXPECT_EQ(f.outstanding(), before);
  Result<runtime::TensorList> ok = f.runtime->run(program, std::span<const Tensor>(&x, 1));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  expect_correct(*ok, x);
}

TEST(CpuFaultInjection, CancellationBeforeAndDuringARun) {
  FaultyCpu f = make_faulty_cpu(true);
  const auto program = four_node_program();
  const Tensor x = input();
  const std::uint64_t before = f.outstanding();
  {
    // Before it starts: nothing runs.
    Result<runtime::ExecutionHandle> queued = f.runtime->submit(program, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(queued.ok()) << queued.status().to_string();
    queued->cancel();
    const int calls_before = f.elementwise->calls.load();
    f.manual->run_all();
    EXPECT_EQ(queued->wait().status().code(), ErrorCode::kCancelled);
    EXPECT_EQ(f.elementwise->calls.load(), calls_before);
  }
  {
    // While it runs: cancelled from inside the second node.
    Result<runtime::ExecutionHandle> running = f.runtime->submit(program, std::span<const Tensor>(&x, 1));
    ASSERT_TRUE(running.ok());
    const int first = f.elementwise->calls.load();
    f.elementwise->before_call = [&](int n) {
      if (n == first + 1) running->cancel();
    };
    f.manual->run_all();
    EXPECT_EQ(running->wait().status().code(), ErrorCode::kCancelled);
    EXPECT_EQ(f.elementwise->calls.load() - first, 2);  // later nodes were not launched
    f.elementwise->before_call = nullptr;
  }
  EXPECT_EQ(f.outstanding(), before);
  EXPECT_EQ(f.runtime->execution_metrics().cancelled_runs, 2u);
}

TEST(CpuFaultInjection, ShutdownDuringSubmitEitherRunsOrRefusesEachRun) {
  FaultyCpu f = make_faulty_cpu(false);
  const auto program = four_node_program();
  const Tensor x = input();
  // One run first, so the workspace the runtime keeps is already there.
  ASSERT_TRUE(f.runtime->run(program, std::span<const Tensor>(&x, 1)).ok());
  const std::uint64_t before = f.outstanding();
  std::vector<runtime::ExecutionHandle> handles;
  std::atomic<int> refused{0}, other_errors{0};
  std::atomic<bool> started{false};
  std::thread submitter([&] {
    for (int i = 0; i < 200; ++i) {
      Result<runtime::ExecutionHandle> h = f.runtime->submit(program, std::span<const Tensor>(&x, 1));
      started = true;
      if (h.ok())
        handles.push_back(std::move(*h));
      else if (h.status().code() == ErrorCode::kRuntimeStopped)
        refused.fetch_add(1);
      else
        other_errors.fetch_add(1);
    }
  });
  while (!started.load()) std::this_thread::yield();
  ASSERT_TRUE(f.runtime->shutdown().ok());
  submitter.join();
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(static_cast<int>(handles.size()) + refused.load(), 200);
  for (runtime::ExecutionHandle& h : handles) {
    ASSERT_TRUE(h.is_done());
    Result<runtime::TensorList> r = h.wait();
    if (r.ok())
      expect_correct(*r, x);
    else
      EXPECT_EQ(r.status().code(), ErrorCode::kRuntimeStopped) << r.status().to_string();
  }
  handles.clear();
  EXPECT_EQ(f.outstanding(), before);
}

}  // namespace
}  // namespace tenferro::cpu
