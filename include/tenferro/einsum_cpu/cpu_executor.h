// CpuEinsumExecutor: the native CPU einsum engine proper, usable without a
// runtime. It owns the engine's dot_general composite, its planning defaults,
// the bounded plan cache and the workspace pool; prepare() turns (op,
// shapes, dtype) into a cached ExecutionPlan and execute() runs a plan over
// borrowed TensorViews on a caller-supplied ParallelContext. The runtime
// adapter (cpu_engine.h) and the CLI are thin layers over it.
//
// Note [Einsum planning inputs]
// An op with an explicit policy is planned with that policy; an op that
// inherits (InheritRuntimeDefault) uses CpuEinsumOptions::default_policy.
// Both use CpuEinsumOptions::planning (budgets, workspace limit, seed) with
// the determinism of the request. Planning (cache misses only) happens in
// prepare(), never inside execute().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>

#include "tenferro/base/sharded_counters.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum_cpu/execution_plan.h"
#include "tenferro/einsum_cpu/plan_cache.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {
class WorkspacePool;
}  // namespace tenferro::cpu

namespace tenferro::einsum {

/// Configuration of a CpuEinsumExecutor, fixed at creation.
struct CpuEinsumOptions {
  /// The policy of ops that inherit the runtime default.
  PlanningPolicy default_policy;
  /// The resolved planning configuration (its determinism is overridden
  /// per request).
  PlanningConfig planning;
  EinsumPlanCacheLimits cache;
  /// Workspace bytes kept between executions (larger buffers are freed
  /// after use). 0: a quarter of the machine's physical memory, so that a
  /// network whose intermediates fit in memory reuses its warm workspace on
  /// every execution instead of faulting it in again (gm_queen5_5_3 needs
  /// 3.1 GB).
  std::size_t max_retained_workspace_bytes = 0;
};

/// Everything the executor has done (cumulative; relaxed counters).
struct CpuEinsumMetrics {
  EinsumPlanCacheStats cache;
  ExecutionStats execution;
  std::uint64_t plans_built = 0;  ///< cache misses planned and compiled
  double planning_seconds = 0.0;  ///< time spent in those
  std::size_t workspace_retained_bytes = 0;
  std::uint64_t workspace_allocations = 0;
};

/// See the file comment. Thread-safe: prepare and execute may run
/// concurrently from any number of threads.
class CpuEinsumExecutor {
 public:
  /// `composite` runs every binary step. kInvalidArgument for a null
  /// composite or invalid planning options.
  static Result<std::shared_ptr<CpuEinsumExecutor>> create(std::shared_ptr<const cpu::DotGeneralComposite> composite,
                                                           CpuEinsumOptions options = {});
  ~CpuEinsumExecutor();
  CpuEinsumExecutor(const CpuEinsumExecutor&) = delete;
  CpuEinsumExecutor& operator=(const CpuEinsumExecutor&) = delete;

  /// The plan for `op` on operands of `shapes` and `dtype` (Note [Einsum
  /// planning inputs]): from the cache, or planned and compiled on a miss.
  /// Binding and planning errors as Network::bind and plan(); kUnsupported
  /// for a dtype the composite cannot contract (bool).
  Result<std::shared_ptr<const ExecutionPlan>> prepare(const EinsumOp& op, std::span<const IntArrayRef> shapes,
                                                       DType dtype, Determinism determinism = Determinism::kFast);

  /// Runs `plan` (ExecutionPlan::execute) with a workspace from the pool.
  Status execute(const ExecutionPlan& plan, std::span<const TensorView> inputs, const TensorView& output,
                 const cpu::ParallelContext& ctx);

  /// prepare + a new row-major output + execute: the standalone eager call.
  Result<Tensor> einsum(const EinsumOp& op, std::span<const Tensor> inputs, const cpu::ParallelContext& ctx);

  const cpu::DotGeneralComposite& composite() const noexcept { return *composite_; }
  const CpuEinsumOptions& options() const noexcept { return options_; }
  EinsumPlanCache& plan_cache() noexcept { return *cache_; }
  const std::shared_ptr<EinsumPlanCache>& plan_cache_ptr() const noexcept { return cache_; }
  CpuEinsumMetrics metrics() const;
  /// The plan cache's usage, its bytes with the idle workspace buffers'.
  runtime::CacheUsage cache_usage() const noexcept;
  /// Drops cached plans and idle workspace buffers.
  void clear_caches() noexcept;

 private:
  CpuEinsumExecutor(std::shared_ptr<const cpu::DotGeneralComposite> composite, CpuEinsumOptions options);

  std::shared_ptr<const cpu::DotGeneralComposite> composite_;
  CpuEinsumOptions options_;
  std::shared_ptr<EinsumPlanCache> cache_;
  std::unique_ptr<cpu::WorkspacePool> workspace_;
  std::atomic<std::uint64_t> plans_built_{0};
  std::atomic<std::uint64_t> planning_ns_{0};
  // ExecutionStats' fields, in its order (Note [Sharded counters]).
  static constexpr std::int64_t ExecutionStats::*kStatFields[] = {
      &ExecutionStats::executions,      &ExecutionStats::steps,
      &ExecutionStats::gemm_steps,      &ExecutionStats::direct_steps,
      &ExecutionStats::presums,         &ExecutionStats::planned_copies,
      &ExecutionStats::copied_elements, &ExecutionStats::composite_copies,
      &ExecutionStats::inner_steps,     &ExecutionStats::outer_steps,
      &ExecutionStats::sequential_steps};
  ShardedCounters<std::size(kStatFields)> stats_;
};

}  // namespace tenferro::einsum
