// CpuFftEngine: prepare (Note [FFT extension engine]), the pass loop and
// its one fan-out level (Note [FFT batch parallelism]), explain and the
// extension module.
#include "tenferro/fft_cpu/cpu_engine.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "fft_cpu/fft_plan.h"
#include "tenferro/cpu/workspace_pool.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/fft_cpu/fftw_provider.h"

namespace tenferro::fft {

namespace {

using internal::BufferRole;
using internal::FftPass;
using internal::FftPlan;
using program::SpecializationAxis;

// The first failure of a parallel pass (any block's; kernels do not fail
// data-dependently, so which one is reported does not matter).
class PassFailure {
 public:
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  void record(Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_.load(std::memory_order_relaxed)) status_ = std::move(status);
    failed_.store(true, std::memory_order_relaxed);
  }
  Status take() { return failed() ? std::move(status_) : ok_status(); }

 private:
  std::mutex mutex_;
  std::atomic<bool> failed_{false};
  Status status_;
};

bool is_row_major(const TensorView& v) {
  std::int64_t expected = 1;
  for (std::size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] != 1 && v.strides[d] != expected) return false;
    expected *= v.shape[d];
  }
  return true;
}

bool accepts(const FftPass& p, const void* src, const void* dst) {
  if (p.panel) return true;  // its kernels run on the engine's panels (Note [FFT panels])
  return p.full->accepts(src, dst) && (p.block == nullptr || p.block->accepts(src, dst)) &&
         (p.last == nullptr || p.last->accepts(src, dst));
}

Error stage_error(const Status& s) {
  return Error(s.code(), s.error().stage() == ErrorStage::kCompile ? ErrorStage::kPrepare : s.error().stage(),
               std::string(s.message()));
}

}  // namespace

CpuFftEngine::CpuFftEngine(std::shared_ptr<const CpuFftProvider> provider, FftEngineOptions options,
                           std::shared_ptr<const cpu::ParallelContext> fallback)
    : provider_(provider != nullptr ? std::move(provider) : make_null_fft_provider()),
      options_(options),
      fallback_(std::move(fallback)),
      pool_(std::make_unique<cpu::WorkspacePool>("fft", options.max_retained_workspace_bytes)),
      plans_(std::make_unique<internal::EnginePlanCache>(options.max_cached_plans, options.max_cached_plan_bytes)) {}

CpuFftEngine::~CpuFftEngine() = default;

std::shared_ptr<CpuFftEngine> CpuFftEngine::create_default(FftEngineOptions options,
                                                           std::shared_ptr<const cpu::ParallelContext> fallback) {
  return std::make_shared<CpuFftEngine>(std::make_shared<FftwFftProvider>(), options, std::move(fallback));
}

Result<runtime::PrepareCapability> CpuFftEngine::prepare(const runtime::ExtensionSignature& sig) const {
  if (sig.op == nullptr || sig.op->family_id() != kFftFamilyId) {
    return runtime::PrepareCapability::unsupported("cpu.fft runs only tenferro.fft operations");
  }
  const program::SpecializationRequirements needed{SpecializationAxis::kConcreteDims, SpecializationAxis::kLayoutClass};
  if (!sig.granted.contains(needed)) return runtime::PrepareCapability::needs_specialization(sig.granted.with(needed));
  if (sig.operands.size() != 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, "{}: expected 1 operand, found {}",
                      sig.op->describe(), sig.operands.size());
  }
  const auto& op = static_cast<const FftOp&>(*sig.op);
  const runtime::OperandSignature& x = sig.operands[0];
  const bool row_major = x.layout == runtime::LayoutClass::kRowMajor;
  Result<std::shared_ptr<const FftPlan>> plan = plans_->get_or_build(
      op, x.dtype, IntArrayRef(x.shape), row_major,
      [&]() { return internal::build_fft_plan(*provider_, options_, op, x.dtype, IntArrayRef(x.shape), row_major); });
  if (!plan.ok()) {
    if (plan.status().code() == ErrorCode::kUnsupported) {
      return runtime::PrepareCapability::unsupported(std::string(plan.status().message()));
    }
    return stage_error(plan.status());
  }
  runtime::PreparedKernel kernel;
  kernel.work = (*plan)->flops;
  kernel.plan = std::move(plan).value();
  kernel.reproducible = provider_->reproducible();
  return runtime::PrepareCapability::prepared(std::move(kernel));
}

Status CpuFftEngine::run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const {
  const auto* plan = dynamic_cast<const FftPlan*>(request.plan);
  if (plan == nullptr || request.inputs.size() != 1 || request.outputs.size() != 1) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.fft: expected the plan from prepare() with 1 input and 1 output, found {} plan, {} inputs "
                      "and {} outputs",
                      plan == nullptr ? "no" : "a foreign", request.inputs.size(), request.outputs.size());
  }
  const cpu::ParallelContext* parallel = cpu::parallel_context_of(context);
  if (parallel == nullptr && context.get<runtime::NoExecutionContext>() != nullptr) {
    parallel = fallback_ != nullptr ? fallback_.get() : &sequential_;
  }
  if (parallel == nullptr) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.fft: expected a CPU engine context (cpu::CpuEngineContext or cpu::CpuExecutionContext) or "
                      "runtime::NoExecutionContext, found another execution context type");
  }
  counters_.runs.fetch_add(1, std::memory_order_relaxed);
  if (plan->empty) {
    counters_.sequential_runs.fetch_add(1, std::memory_order_relaxed);
    return ok_status();
  }
  const TensorView& in = request.inputs[0];
  const TensorView& out = request.outputs[0];
  const bool direct = plan->has_direct && is_row_major(in) && accepts(plan->direct_first, in.data, out.data);

  // One lease for the staging buffer and the kernels' sequential workspace.
  const std::size_t stage_bytes = direct ? 0 : (plan->stage_bytes + 63) / 64 * 64;
  TENFERRO_ASSIGN_OR_RETURN(cpu::WorkspacePool::Lease lease, pool_->acquire(stage_bytes + plan->workspace_bytes));
  std::byte* stage = lease.bytes().data();
  const std::span<std::byte> sequential_workspace =
      plan->workspace_bytes == 0 ? std::span<std::byte>() : lease.bytes().subspan(stage_bytes, plan->workspace_bytes);
  const auto buffer = [&](BufferRole role) -> std::byte* {
    switch (role) {
      case BufferRole::kInput:
        return static_cast<std::byte*>(in.data);
      case BufferRole::kOutput:
        return static_cast<std::byte*>(out.data);
      case BufferRole::kStage:
        return stage;
    }
    return nullptr;
  };
  if (direct) {
    counters_.direct_runs.fetch_add(1, std::memory_order_relaxed);
  } else {
    internal::stage_input(in, plan->stage, buffer(plan->stage.dst), *parallel);
  }

  const bool split = parallel->max_threads() > 1;
  bool went_parallel = false;
  std::uint64_t calls = 0, panel_passes = 0;
  for (std::size_t i = 0; i < plan->passes.size(); ++i) {
    const FftPass& pass = direct && i == 0 ? plan->direct_first : plan->passes[i];
    std::byte* src = buffer(pass.src);
    std::byte* dst = buffer(pass.dst);
    if (pass.panel) {
      went_parallel = went_parallel || (split && pass.panel_items > pass.panel_grain);
      ++panel_passes;
      TENFERRO_TRY(internal::run_panel_pass(pass, src, dst, *parallel, split, *pool_, &calls));
      continue;
    }
    if (!(direct && i == 0) && !accepts(pass, src, dst)) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompletion,
                        "cpu.fft: expected 64-byte aligned output and workspace buffers, found a kernel of {} "
                        "refusing them",
                        provider_->name());
    }
    if (split && pass.nblocks > 1) {
      went_parallel = true;
      calls += static_cast<std::uint64_t>(pass.nblocks);
      PassFailure failure;
      parallel->parallel_for(0, pass.nblocks, 1, [&](std::int64_t begin, std::int64_t end) {
        if (failure.failed()) return;
        Result<cpu::WorkspacePool::Lease> ws = pool_->acquire(pass.workspace_bytes);
        if (!ws.ok()) {
          failure.record(ws.status());
          return;
        }
        for (std::int64_t b = begin; b < end; ++b) {
          const FftKernel& k = b == pass.nblocks - 1 && pass.last != nullptr ? *pass.last : *pass.block;
          Status s = k.execute(src + b * pass.src_block_bytes, dst + b * pass.dst_block_bytes, ws->bytes());
          if (!s.ok()) {
            failure.record(std::move(s));
            return;
          }
        }
      });
      TENFERRO_TRY(failure.take());
    } else {
      ++calls;
      TENFERRO_TRY(pass.full->execute(src, dst, sequential_workspace));
    }
  }
  const double post_scale = direct ? plan->geometry.scale : 1.0;
  if (post_scale != 1.0 || plan->post_conj) {
    internal::scale_in_place(out.data, out.dtype, out.numel(), post_scale, plan->post_conj, *parallel);
  }
  (went_parallel ? counters_.outer_runs : counters_.sequential_runs).fetch_add(1, std::memory_order_relaxed);
  counters_.kernel_calls.fetch_add(calls, std::memory_order_relaxed);
  if (panel_passes != 0) counters_.panel_passes.fetch_add(panel_passes, std::memory_order_relaxed);
  return ok_status();
}

Result<FftSelection> CpuFftEngine::select(const FftOp& op, DType dtype, IntArrayRef shape) const {
  Result<std::shared_ptr<FftPlan>> built = internal::build_fft_plan(*provider_, options_, op, dtype, shape, true);
  if (!built.ok()) return stage_error(built.status());
  const FftPlan& plan = **built;
  FftSelection s;
  s.provider = std::string(provider_->name());
  const auto describe = [](const FftPass& p) {
    if (p.panel) {
      return fmt::format("{} in {} panels of {} columns (gathered contiguous)", p.problem.to_string(), p.panel_items,
                         p.panel_width);
    }
    return fmt::format("{}{}", p.problem.to_string(),
                       p.nblocks > 1 ? fmt::format(" in {} blocks", p.nblocks) : std::string());
  };
  for (std::size_t i = 0; i < plan.passes.size(); ++i) {
    s.passes += fmt::format("{}{}", i == 0 ? "" : "; ", describe(plan.passes[i]));
  }
  if (plan.has_direct) s.passes += fmt::format("; direct first pass: {}", describe(plan.direct_first));
  s.workspace_bytes = plan.stage_bytes + plan.workspace_bytes;
  s.flops = plan.flops;
  return s;
}

std::string CpuFftEngine::explain(const FftOp& op, DType dtype, IntArrayRef shape) const {
  Result<FftSelection> s = select(op, dtype, shape);
  if (!s.ok()) return fmt::format("{} {} {}: {}", op.describe(), dtype, shape_to_string(shape), s.status().to_string());
  return fmt::format("{} {} {}: provider {}; passes: {}; workspace {} bytes; {:.3g} flops", op.describe(), dtype,
                     shape_to_string(shape), s->provider, s->passes, s->workspace_bytes, s->flops);
}

FftEngineStats CpuFftEngine::stats() const noexcept {
  FftEngineStats s;
  s.runs = counters_.runs.load(std::memory_order_relaxed);
  s.sequential_runs = counters_.sequential_runs.load(std::memory_order_relaxed);
  s.outer_runs = counters_.outer_runs.load(std::memory_order_relaxed);
  s.direct_runs = counters_.direct_runs.load(std::memory_order_relaxed);
  s.kernel_calls = counters_.kernel_calls.load(std::memory_order_relaxed);
  s.panel_passes = counters_.panel_passes.load(std::memory_order_relaxed);
  const cpu::WorkspacePoolStats w = pool_->stats();
  s.workspace_allocations = w.allocations;
  s.workspace_reuses = w.reuses;
  s.plan_cache_hits = plans_->hits();
  s.plan_cache_misses = plans_->misses();
  s.plan_cache_evictions = plans_->evictions();
  s.plan_cache_bytes = plans_->bytes();
  return s;
}

runtime::CacheUsage CpuFftEngine::cache_usage() const noexcept {
  runtime::CacheUsage usage;
  usage.entries = plans_->size();
  usage.hits = plans_->hits();
  usage.misses = plans_->misses();
  usage.evictions = plans_->evictions();
  // Note [FFT plan memory]: the workspaces kept plus the tables of every
  // live kernel the provider made (cached by it, held by the plans here or
  // by a run); a provider that does not count them: the cached plans'.
  usage.bytes = pool_->stats().retained_bytes + std::max(provider_->cache_stats().live_bytes, plans_->bytes());
  return usage;
}

void CpuFftEngine::clear_caches() noexcept {
  plans_->clear();
  provider_->clear_cache();
  pool_->clear();
}

runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuFftEngine> fft) {
  runtime::ExtensionModule module;
  module.name = "tenferro.fft.cpu";
  auto caches = std::make_shared<runtime::CacheOwnerOf<CpuFftEngine>>(fft);
  module.registrations.push_back(
      runtime::ExtensionRegistration{std::string(kFftFamilyId), engine, std::move(fft), std::move(caches)});
  return module;
}

}  // namespace tenferro::fft
