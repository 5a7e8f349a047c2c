// CpuEinsumExecutor: plan cache in front of planning, workspace pool in
// front of execution (cpu_executor.h).
#include "tenferro/einsum_cpu/cpu_executor.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"
#include "tenferro/cpu/workspace_pool.h"
#include "tenferro/program/core_op.h"

namespace tenferro::einsum {

namespace {

std::size_t retained_workspace_bound(const CpuEinsumOptions& options) {
  if (options.max_retained_workspace_bytes != 0) return options.max_retained_workspace_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::size_t{2} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4;
}

}  // namespace

CpuEinsumExecutor::CpuEinsumExecutor(std::shared_ptr<const cpu::DotGeneralComposite> composite,
                                     CpuEinsumOptions options)
    : composite_(std::move(composite)),
      options_(std::move(options)),
      cache_(std::make_shared<EinsumPlanCache>(options_.cache)),
      workspace_(std::make_unique<cpu::WorkspacePool>("einsum", retained_workspace_bound(options_))) {}

CpuEinsumExecutor::~CpuEinsumExecutor() = default;

Result<std::shared_ptr<CpuEinsumExecutor>> CpuEinsumExecutor::create(
    std::shared_ptr<const cpu::DotGeneralComposite> composite, CpuEinsumOptions options) {
  if (composite == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "CpuEinsumExecutor: expected a dot_general composite, found null");
  }
  if (options.default_policy.planner == PlannerKind::kExplicitPath || options.default_policy.path) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "CpuEinsumExecutor: the default policy applies to every einsum, so it cannot be an explicit "
                      "path; expected auto, greedy, optimal, treesa or left_to_right");
  }
  if (options.default_policy.planner == PlannerKind::kNested) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "CpuEinsumExecutor: planner 'nested' needs parenthesised subscripts, so it cannot be the "
                      "default policy; expected auto, greedy, optimal, treesa or left_to_right (parenthesised "
                      "subscripts are planned as written whatever the default)");
  }
  return std::shared_ptr<CpuEinsumExecutor>(new CpuEinsumExecutor(std::move(composite), std::move(options)));
}

Result<std::shared_ptr<const ExecutionPlan>> CpuEinsumExecutor::prepare(const EinsumOp& op,
                                                                        std::span<const IntArrayRef> shapes,
                                                                        DType dtype, Determinism determinism) {
  const bool contractible = dtype != DType::kBool && program::dtype_in_class(dtype, program::DTypeClass::kNumeric) &&
                            (!is_inexact(dtype) || composite_->gemm_provider().support().supports(dtype));
  if (!contractible) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
                      "einsum \"{}\": the native CPU engine with GEMM provider '{}' does not contract {}",
                      abbreviate(op.canonical_subscripts()), composite_->gemm_provider().name(), dtype);
  }
  const EinsumPlanKey key{&op, dtype, shapes, determinism};
  if (std::shared_ptr<const ExecutionPlan> cached = cache_->find(key)) return cached;

  const auto start = std::chrono::steady_clock::now();
  Result<Network> bound = op.bind(shapes, dtype);
  if (!bound.ok()) return bound.status();  // compile-stage (Note [Einsum binding errors are compile-stage])
  PlanningConfig config = options_.planning;
  config.determinism = determinism;
  PlanningPolicy policy = op.policy().value_or(options_.default_policy);
  // Parentheses are the user's order even when the policy is inherited.
  if (!op.policy() && bound->nesting()) policy.planner = PlannerKind::kNested;
  TENFERRO_ASSIGN_OR_RETURN(ContractionTree tree, plan(*bound, policy, config));
  ExecutionPlanOptions plan_options;
  plan_options.gemm_strides = composite_->gemm_provider().support().strides;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> compiled, ExecutionPlan::compile(tree, plan_options));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  plans_built_.fetch_add(1, std::memory_order_relaxed);
  planning_ns_.fetch_add(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
      std::memory_order_relaxed);
  return cache_->insert(key, std::move(compiled));
}

Status CpuEinsumExecutor::execute(const ExecutionPlan& plan, std::span<const TensorView> inputs,
                                  const TensorView& output, const cpu::ParallelContext& ctx) {
  ExecutionStats s;
  Status status;
  if (plan.workspace_bytes() == 0) {
    status = plan.execute(inputs, output, {}, *composite_, ctx, &s);
  } else {
    Result<cpu::WorkspacePool::Lease> lease = workspace_->acquire(plan.workspace_bytes());
    if (!lease.ok()) {
      // Say what the workspace is for and what could shrink it.
      const ContractionTree& tree = plan.tree();
      return make_error(lease.status().code(), lease.status().stage(),
                        "{} (the {} path's largest intermediate has {:.4g} elements; planner 'auto' or 'treesa' "
                        "searches for a path that needs less, and slicing -- Python's max_intermediate_bytes=, the "
                        "CLI's --max-intermediate -- bounds it)",
                        lease.status().message(),
                        tree.stats().planner == PlannerKind::kExplicitPath ? std::string_view("given")
                                                                           : to_string(tree.stats().planner),
                        tree.cost().max_intermediate_elements);
    }
    status = plan.execute(inputs, output, lease->bytes(), *composite_, ctx, &s);
  }
  // Only the counters this run changed (a small einsum touches a few), in
  // this CPU's copy (Note [Sharded counters]).
  const auto local = stats_.local();
  for (std::size_t i = 0; i < std::size(kStatFields); ++i) local.add(i, s.*kStatFields[i]);
  return status;
}

Result<Tensor> CpuEinsumExecutor::einsum(const EinsumOp& op, std::span<const Tensor> inputs,
                                         const cpu::ParallelContext& ctx) {
  if (inputs.empty()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "einsum \"{}\": expected {} operands, found none",
                      abbreviate(op.canonical_subscripts()), op.num_operands());
  }
  SmallVector<IntArrayRef, 8> shapes;
  SmallVector<TensorView, 8> views;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "einsum: operand {} is an undefined tensor", i);
    }
    if (t.dtype() != inputs[0].dtype()) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                        "einsum \"{}\": operand {} has dtype {}, operand 0 has {}; expected one dtype for all "
                        "operands (promote before calling einsum)",
                        abbreviate(op.canonical_subscripts()), i, t.dtype(), inputs[0].dtype());
    }
    shapes.push_back(IntArrayRef(t.shape()));
    views.push_back(t.view());
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan,
                            prepare(op, std::span<const IntArrayRef>(shapes.data(), shapes.size()), inputs[0].dtype()));
  TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(plan->output_shape(), plan->dtype()));
  TENFERRO_TRY(execute(*plan, std::span<const TensorView>(views.data(), views.size()), out.view(), ctx));
  return out;
}

CpuEinsumMetrics CpuEinsumExecutor::metrics() const {
  constexpr auto relaxed = std::memory_order_relaxed;
  CpuEinsumMetrics m;
  m.cache = cache_->stats();
  for (std::size_t i = 0; i < std::size(kStatFields); ++i) m.execution.*kStatFields[i] = stats_.load(i);
  m.plans_built = plans_built_.load(relaxed);
  m.planning_seconds = static_cast<double>(planning_ns_.load(relaxed)) * 1e-9;
  const cpu::WorkspacePoolStats w = workspace_->stats();
  m.workspace_retained_bytes = w.retained_bytes;
  m.workspace_allocations = w.allocations;
  return m;
}

runtime::CacheUsage CpuEinsumExecutor::cache_usage() const noexcept {
  runtime::CacheUsage usage = cache_->usage();
  usage.bytes += workspace_->stats().retained_bytes;
  return usage;
}

void CpuEinsumExecutor::clear_caches() noexcept {
  cache_->clear();
  workspace_->clear();
}

}  // namespace tenferro::einsum
