// CpuLinalgEngine: prepare (Note [Linalg extension engine]), the batch loop
// and its one fan-out level (Note [Linalg batch parallelism]), explain and
// the extension module.
#include "tenferro/linalg_cpu/cpu_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "linalg_cpu/linalg_plan.h"
#include "tenferro/base/build_info.h"
#include "tenferro/cpu/workspace_pool.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/linalg_cpu/eigen_provider.h"
#include "tenferro/linalg_cpu/lapack_provider.h"

namespace tenferro::linalg {

namespace {

using internal::LinalgPlan;
using program::SpecializationAxis;

bool can_run_sequential_per_worker(cpu::ThreadCountControl c) noexcept {
  return c == cpu::ThreadCountControl::kSequential || c == cpu::ThreadCountControl::kBinaryClampToOne ||
         c == cpu::ThreadCountControl::kPerCall;
}

struct ModeDecision {
  cpu::ParallelMode mode = cpu::ParallelMode::kSequential;
  std::int64_t grain = 1;  // matrices per outer chunk
  const char* why = "";
};

ModeDecision choose_mode(const LinalgPlan& plan, const LinalgEngineOptions& options, int threads) {
  const cpu::ThreadCountControl control = plan.thread_count();
  const bool own_threads =
      control == cpu::ThreadCountControl::kGlobalOrUncontrolled || control == cpu::ThreadCountControl::kPerCall;
  if (plan.batch <= 1 || threads <= 1) {
    return own_threads
               ? ModeDecision{cpu::ParallelMode::kInner, 1,
                              "one matrix or one thread: the provider may thread inside the call"}
               : ModeDecision{cpu::ParallelMode::kSequential, 1, "one matrix or one thread with a sequential provider"};
  }
  if (control == cpu::ThreadCountControl::kPerCall && plan.flops >= options.inner_threshold_flops) {
    return {cpu::ParallelMode::kInner, 1, "large matrices with a per-call-threaded provider: inner parallelism"};
  }
  if (can_run_sequential_per_worker(control)) {
    const double per_chunk = options.outer_grain_flops / std::max(plan.flops, 1.0);
    const std::int64_t grain = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(per_chunk)), 1, plan.batch);
    return {cpu::ParallelMode::kOuter, grain,
            "a batch with a provider that runs sequentially on each worker: outer batch parallelism"};
  }
  return {cpu::ParallelMode::kInner, 1,
          "the provider's threading is process-global (it cannot be made sequential per worker): sequential batch "
          "loop, the provider's own threads inside each call"};
}

// The first failure of a batch, by lowest batch index (deterministic).
class BatchFailure {
 public:
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  void record(std::int64_t index, Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_.load(std::memory_order_relaxed) || index < index_) {
      index_ = index;
      status_ = std::move(status);
    }
    failed_.store(true, std::memory_order_relaxed);
  }
  Status take(const LinalgPlan& plan) {
    if (!failed()) return ok_status();
    const Error& e = status_.error();
    std::string where;
    if (plan.batch_shape.size() == 1) {
      where = fmt::format(" (batch element {} of {})", index_, plan.batch);
    } else if (!plan.batch_shape.empty()) {  // the index along each batch axis too
      Dims at(plan.batch_shape.size());
      std::int64_t rest = index_;
      for (std::size_t d = at.size(); d-- > 0;) {
        at[d] = rest % plan.batch_shape[d];
        rest /= plan.batch_shape[d];
      }
      where = fmt::format(" (batch element {} of {}: index {} of batch shape {})", index_, plan.batch,
                          shape_to_string(IntArrayRef(at)), shape_to_string(IntArrayRef(plan.batch_shape)));
    }
    return Error(e.code(), e.stage() == ErrorStage::kNone ? ErrorStage::kCompletion : e.stage(),
                 fmt::format("{}{}", e.message(), where));
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::int64_t index_ = 0;
  Status status_;
};

Status check_threading(const LinalgPlan& plan, const LinalgEngineOptions& options) {
  if (plan.thread_count() == cpu::ThreadCountControl::kGlobalOrUncontrolled &&
      options.threading == cpu::ProviderThreadingPolicy::kStrict) {
    return make_error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                      "linalg.{}: expected a provider that honours the thread budget under the strict threading "
                      "policy, found {} whose threading is process-global ({}); use the serial OpenBLAS build or "
                      "ProviderThreadingPolicy::kProviderDefaultExclusive",
                      to_string(plan.attributes.kind), plan.provider->name(), plan.provider->capability().detail);
  }
  return ok_status();
}

}  // namespace

CpuLinalgEngine::CpuLinalgEngine(LinalgProviderPolicy policy, LinalgEngineOptions options,
                                 std::shared_ptr<const cpu::ParallelContext> fallback)
    : policy_(std::move(policy)),
      options_(std::move(options)),
      fallback_(std::move(fallback)),
      pool_(std::make_unique<cpu::WorkspacePool>("linalg", options_.max_retained_workspace_bytes)) {}

CpuLinalgEngine::~CpuLinalgEngine() = default;

Result<std::shared_ptr<CpuLinalgEngine>> CpuLinalgEngine::create_default(
    LinalgEngineOptions options, std::shared_ptr<const cpu::ParallelContext> fallback) {
  const std::string path = default_provider_table_path(options.provider_table);
  Result<ProviderTable> read = read_provider_table(path);
  const char* env = std::getenv(kProviderTableEnv.data());
  if (!read.ok() && read.status().code() == ErrorCode::kNotFound && options.provider_table.empty() &&
      (env == nullptr || *env == '\0')) {
    // Found nowhere (Note [Locating provider files]): say where it is looked
    // for and how to name it, instead of only the last place tried.
    return make_error(ErrorCode::kNotFound, ErrorStage::kConfiguration,
                      "{}; it is looked for next to the program, under the install prefix of the headers the "
                      "program was compiled against (only when their include path was absolute) and in the "
                      "configured install: name the install prefix with {}=PREFIX (its share/tenferro and "
                      "lib/tenferro are searched first), or the table alone with {} or "
                      "LinalgEngineOptions::provider_table, or build the runtime without linalg "
                      "(CpuRuntimeOptions::linalg = false)",
                      read.status().message(), kPrefixEnv, kProviderTableEnv);
  }
  TENFERRO_ASSIGN_OR_RETURN(ProviderTable table, std::move(read));
  Result<std::shared_ptr<LapackLinalgProvider>> lapack = LapackLinalgProvider::load();
  std::shared_ptr<const CpuLinalgProvider> lapack_provider;
  if (lapack.ok()) lapack_provider = *lapack;
  return std::make_shared<CpuLinalgEngine>(
      LinalgProviderPolicy::measured(table, std::move(lapack_provider), std::make_shared<EigenLinalgProvider>(),
                                     lapack.ok() ? std::string_view() : lapack.status().message()),
      std::move(options), std::move(fallback));
}

Result<runtime::PrepareCapability> CpuLinalgEngine::prepare(const runtime::ExtensionSignature& sig) const {
  if (sig.op == nullptr || sig.op->family_id() != kLinalgFamilyId) {
    return runtime::PrepareCapability::unsupported("cpu.linalg runs only tenferro.linalg operations");
  }
  if (!sig.granted.has(SpecializationAxis::kConcreteDims)) {
    return runtime::PrepareCapability::needs_specialization(sig.granted.with(SpecializationAxis::kConcreteDims));
  }
  const auto& op = static_cast<const LinalgOp&>(*sig.op);
  SmallVector<IntArrayRef, 2> shapes;
  for (const runtime::OperandSignature& o : sig.operands) shapes.push_back(IntArrayRef(o.shape));
  const DType dtype = sig.operands.empty() ? DType::kFloat64 : sig.operands[0].dtype;
  for (const runtime::OperandSignature& o : sig.operands) {
    if (o.dtype != dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kPrepare,
                        "linalg.{}: expected every operand of dtype {}, found {}", to_string(op.kind()), dtype,
                        o.dtype);
    }
  }
  Result<std::shared_ptr<LinalgPlan>> plan =
      internal::build_plan(policy_, op.attributes(), dtype, std::span<const IntArrayRef>(shapes.data(), shapes.size()));
  if (!plan.ok()) {
    if (plan.status().code() == ErrorCode::kUnsupported) {
      return runtime::PrepareCapability::unsupported(std::string(plan.status().message()));
    }
    return plan.status();
  }
  TENFERRO_TRY(check_threading(**plan, options_));
  const bool reproducible = (*plan)->thread_count() != cpu::ThreadCountControl::kGlobalOrUncontrolled;
  if (sig.determinism == runtime::Determinism::kReproducible && !reproducible) {
    return runtime::PrepareCapability::unsupported(
        fmt::format("{} threads with a process-global pool: not reproducible", (*plan)->provider->name()));
  }
  runtime::PreparedKernel kernel;
  kernel.plan = std::move(plan).value();
  kernel.reproducible = reproducible;
  return runtime::PrepareCapability::prepared(std::move(kernel));
}

Status CpuLinalgEngine::run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const {
  const auto* plan = static_cast<const LinalgPlan*>(request.plan);  // ours: prepare() made it
  if (plan == nullptr || request.outputs.size() != static_cast<std::size_t>(num_results(plan->attributes)) ||
      request.inputs.size() != static_cast<std::size_t>(num_operands(plan->attributes.kind))) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.linalg: expected the plan from prepare() with matching inputs and outputs, found {} plan, "
                      "{} inputs and {} outputs",
                      plan == nullptr ? "no" : "a", request.inputs.size(), request.outputs.size());
  }
  const cpu::ParallelContext* parallel = cpu::parallel_context_of(context);
  if (parallel == nullptr && context.get<runtime::NoExecutionContext>() != nullptr) {
    parallel = fallback_ != nullptr ? fallback_.get() : &sequential_;
  }
  if (parallel == nullptr) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.linalg: expected a CPU engine context (cpu::CpuEngineContext or cpu::CpuExecutionContext) "
                      "or runtime::NoExecutionContext, found another execution context type");
  }
  counters_.runs.fetch_add(1, std::memory_order_relaxed);
  if (plan->batch == 0) return ok_status();
  if (internal::split_norm(*plan, request.inputs, request.outputs, *parallel)) {
    counters_.split_norms.fetch_add(1, std::memory_order_relaxed);
    counters_.matrices.fetch_add(1, std::memory_order_relaxed);
    return ok_status();
  }
  const ModeDecision decision = choose_mode(*plan, options_, parallel->max_threads());
  BatchFailure failure;
  std::atomic<std::uint64_t> provider_calls{0};
  const bool calls_provider = plan->provider != nullptr && plan->m > 0 && plan->n > 0;
  const auto run_range = [&](std::int64_t begin, std::int64_t end) {
    if (failure.failed() || internal::norms_across_batch(*plan, request.inputs, request.outputs, begin, end)) return;
    Result<cpu::WorkspacePool::Lease> lease = pool_->acquire(plan->layout.total);
    if (!lease.ok()) {
      failure.record(begin, lease.status());
      return;
    }
    for (std::int64_t i = begin; i < end && !failure.failed(); ++i) {
      Status s = internal::process_matrix(*plan, request.inputs, request.outputs, i, lease->bytes());
      if (!s.ok()) {
        failure.record(i, std::move(s));
        return;
      }
    }
    if (calls_provider) provider_calls.fetch_add(static_cast<std::uint64_t>(end - begin), std::memory_order_relaxed);
  };
  if (decision.mode == cpu::ParallelMode::kOuter) {
    counters_.outer_runs.fetch_add(1, std::memory_order_relaxed);
    std::atomic<std::uint64_t> chunks{0};
    parallel->parallel_for(0, plan->batch, decision.grain, [&](std::int64_t begin, std::int64_t end) {
      chunks.fetch_add(1, std::memory_order_relaxed);
      run_range(begin, end);
    });
    counters_.outer_chunks.fetch_add(chunks.load(), std::memory_order_relaxed);
  } else {
    (decision.mode == cpu::ParallelMode::kInner ? counters_.inner_runs : counters_.sequential_runs)
        .fetch_add(1, std::memory_order_relaxed);
    run_range(0, plan->batch);
  }
  counters_.matrices.fetch_add(static_cast<std::uint64_t>(plan->batch), std::memory_order_relaxed);
  counters_.provider_calls.fetch_add(provider_calls.load(), std::memory_order_relaxed);
  if (plan->kernel.inline_kernel)
    counters_.inline_kernel_matrices.fetch_add(provider_calls.load(), std::memory_order_relaxed);
  return failure.take(*plan);
}

Result<LinalgSelection> CpuLinalgEngine::select(const LinalgOp& op, DType dtype, std::span<const IntArrayRef> shapes,
                                                int threads) const {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<LinalgPlan> plan,
                            internal::build_plan(policy_, op.attributes(), dtype, shapes));
  TENFERRO_TRY(check_threading(*plan, options_));
  const ModeDecision decision = choose_mode(*plan, options_, threads);
  LinalgSelection s;
  s.provider = plan->provider != nullptr ? std::string(plan->provider->name()) : std::string("engine");
  s.reason = plan->reason;
  s.mode = decision.mode;
  s.mode_reason = decision.mode == cpu::ParallelMode::kOuter
                      ? fmt::format("{}; chunks of >= {} matrices", decision.why, decision.grain)
                      : std::string(decision.why);
  s.workspace_bytes_per_worker = plan->layout.total;
  return s;
}

std::string CpuLinalgEngine::explain(const LinalgOp& op, DType dtype, std::span<const IntArrayRef> shapes,
                                     int threads) const {
  std::string operands;
  for (const IntArrayRef& s : shapes) operands += (operands.empty() ? "" : ", ") + shape_to_string(s);
  Result<LinalgSelection> s = select(op, dtype, shapes, threads);
  if (!s.ok()) return fmt::format("{} {} {}: {}", op.describe(), dtype, operands, s.status().to_string());
  return fmt::format("{} {} {} with {} thread{}: provider {}; mode {} ({}); workspace {} bytes per worker",
                     op.describe(), dtype, operands, threads, threads == 1 ? "" : "s", s->reason,
                     cpu::to_string(s->mode), s->mode_reason, s->workspace_bytes_per_worker);
}

LinalgEngineStats CpuLinalgEngine::stats() const noexcept {
  LinalgEngineStats s;
  s.runs = counters_.runs.load(std::memory_order_relaxed);
  s.matrices = counters_.matrices.load(std::memory_order_relaxed);
  s.provider_calls = counters_.provider_calls.load(std::memory_order_relaxed);
  s.sequential_runs = counters_.sequential_runs.load(std::memory_order_relaxed);
  s.inner_runs = counters_.inner_runs.load(std::memory_order_relaxed);
  s.outer_runs = counters_.outer_runs.load(std::memory_order_relaxed);
  s.outer_chunks = counters_.outer_chunks.load(std::memory_order_relaxed);
  s.split_norms = counters_.split_norms.load(std::memory_order_relaxed);
  s.inline_kernel_matrices = counters_.inline_kernel_matrices.load(std::memory_order_relaxed);
  const cpu::WorkspacePoolStats w = pool_->stats();
  s.workspace_allocations = w.allocations;
  s.workspace_reuses = w.reuses;
  return s;
}

runtime::CacheUsage CpuLinalgEngine::cache_usage() const noexcept {
  runtime::CacheUsage usage;
  usage.bytes = pool_->stats().retained_bytes;
  return usage;
}

void CpuLinalgEngine::clear_caches() noexcept { pool_->clear(); }

runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuLinalgEngine> linalg) {
  runtime::ExtensionModule module;
  module.name = "tenferro.linalg.cpu";
  auto caches = std::make_shared<runtime::CacheOwnerOf<CpuLinalgEngine>>(linalg);
  module.registrations.push_back(
      runtime::ExtensionRegistration{std::string(kLinalgFamilyId), engine, std::move(linalg), std::move(caches)});
  return module;
}

}  // namespace tenferro::linalg
