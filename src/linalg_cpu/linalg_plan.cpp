// build_plan: concrete-shape validation, provider choice and planning, and
// the per-matrix scratch layout of the linalg engine.
#include <algorithm>

#include <fmt/format.h>

#include "linalg_cpu/linalg_plan.h"
#include "linalg_cpu/workspace_layout.h"

namespace tenferro::linalg::internal {

namespace {

constexpr LinalgAttributes lu_attributes() {
  LinalgAttributes a;
  a.kind = LinalgOpKind::kLu;
  return a;
}

constexpr LinalgAttributes values_only_svd_attributes() {
  LinalgAttributes a;
  a.kind = LinalgOpKind::kSvd;
  a.svd_mode = SvdMode::kValuesOnly;
  return a;
}

Error prepare_error(ErrorCode code, const LinalgAttributes& a, std::string message) {
  return Error(code, ErrorStage::kPrepare, fmt::format("linalg.{}: {}", to_string(a.kind), message));
}

MatrixBuffer shape_of(std::int64_t rows, std::int64_t cols) {
  return MatrixBuffer{nullptr, rows, cols, std::max<std::int64_t>(1, rows)};
}

// Rough flop counts, only to size outer chunks and pick inner vs outer.
double estimate_flops(const LinalgAttributes& a, double m, double n, double nrhs) {
  const double k = std::min(m, n);
  const double cube = m * n * k;
  switch (a.kind) {
    case LinalgOpKind::kSvd:
      return (a.svd_mode == SvdMode::kValuesOnly ? 4.0 : 22.0) * cube;
    case LinalgOpKind::kPinv:
    case LinalgOpKind::kLstsq:
      return 22.0 * cube + 4.0 * m * n * nrhs;
    case LinalgOpKind::kQr:
      return 4.0 * cube;
    case LinalgOpKind::kEigh:
      return (a.compute_vectors ? 9.0 : 1.5) * cube;
    case LinalgOpKind::kEig:
      return (a.compute_vectors ? 25.0 : 10.0) * cube;
    case LinalgOpKind::kCholesky:
      return cube / 3.0;
    case LinalgOpKind::kSolve:
    case LinalgOpKind::kTriangularSolve:
      return 2.0 * cube / 3.0 + 2.0 * n * n * nrhs;
    case LinalgOpKind::kInv:
      return 2.0 * cube;
    case LinalgOpKind::kLu:
    case LinalgOpKind::kDet:
    case LinalgOpKind::kSlogdet:
      return 2.0 * cube / 3.0;
    case LinalgOpKind::kMatrixNorm:
      return a.norm == NormOrder::kTwo || a.norm == NormOrder::kNegTwo || a.norm == NormOrder::kNuclear ? 4.0 * cube
                                                                                                        : m * n;
    case LinalgOpKind::kVectorNorm:
      return n;
  }
  return cube;
}

void lay_out(LinalgPlan& plan) {
  const LinalgAttributes& a = plan.attributes;
  const std::int64_t m = plan.m, n = plan.n, r = plan.nrhs, k = std::min(m, n);
  const std::size_t es = dtype_size(plan.dtype);
  const std::size_t rs = dtype_size(real_dtype(plan.dtype));
  const std::size_t cs = 2 * rs;
  ScratchLayout& l = plan.layout;
  WorkspaceLayout w;
  const auto region = [&](std::int64_t count, std::size_t size) {
    return w.reserve(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)) * size);
  };
  if (!is_elementwise_norm(a) && !is_sum_norm(a)) {  // those read the operand in place
    l.a_shape = shape_of(m, n);
    l.a = region(m * n, es);
  }
  switch (a.kind) {
    case LinalgOpKind::kSolve:
    case LinalgOpKind::kTriangularSolve:
      l.b_shape = shape_of(n, r);
      break;
    case LinalgOpKind::kLstsq:
      l.b_shape = shape_of(std::max(m, n), r);
      break;
    default:
      break;
  }
  if (l.b_shape.rows * l.b_shape.cols > 0) l.b = region(l.b_shape.rows * l.b_shape.cols, es);
  std::size_t u_element = es;
  switch (a.kind) {
    case LinalgOpKind::kSvd:
      if (a.svd_mode == SvdMode::kFull) {
        l.u_shape = shape_of(m, m);
        l.v_shape = shape_of(n, n);
      } else if (a.svd_mode == SvdMode::kThin) {
        l.u_shape = shape_of(m, k);
        l.v_shape = shape_of(k, n);
      }
      break;
    case LinalgOpKind::kQr:
      l.u_shape = shape_of(m, a.qr_mode == QrMode::kComplete ? m : k);
      l.v_shape = shape_of(a.qr_mode == QrMode::kComplete ? m : k, n);
      break;
    case LinalgOpKind::kEig:
      if (a.compute_vectors) l.u_shape = shape_of(n, n);
      u_element = cs;
      break;
    case LinalgOpKind::kPinv:
      l.v_shape = shape_of(n, m);
      break;
    default:
      break;
  }
  if (l.u_shape.rows * l.u_shape.cols > 0) l.u = region(l.u_shape.rows * l.u_shape.cols, u_element);
  if (l.v_shape.rows * l.v_shape.cols > 0) l.v = region(l.v_shape.rows * l.v_shape.cols, es);
  switch (plan.provider_attributes.kind) {
    case LinalgOpKind::kSvd:
    case LinalgOpKind::kLstsq:
      l.values = region(k, rs);
      break;
    case LinalgOpKind::kEigh:
      l.values = region(n, rs);
      break;
    case LinalgOpKind::kEig:
      l.values = region(n, cs);
      l.order = region(n, sizeof(std::int64_t));
      break;
    case LinalgOpKind::kLu:
      l.pivots = region(k, sizeof(std::int64_t));
      break;
    case LinalgOpKind::kMatrixNorm:  // the column or row sums of the sum norms
      if (is_sum_norm(a)) l.values = region(std::max(m, n), rs);
      break;
    default:
      break;
  }
  l.workspace = region(static_cast<std::int64_t>(plan.kernel.workspace_bytes), 1);
  l.total = w.bytes();
}

}  // namespace

Result<std::shared_ptr<LinalgPlan>> build_plan(const LinalgProviderPolicy& policy, const LinalgAttributes& attributes,
                                               DType dtype, std::span<const IntArrayRef> shapes) {
  const LinalgAttributes& a = attributes;
  const std::int32_t operands = num_operands(a.kind);
  if (shapes.size() != static_cast<std::size_t>(operands)) {
    return prepare_error(ErrorCode::kInvalidArgument, a,
                         fmt::format("expected {} operands, found {}", operands, shapes.size()));
  }
  if (!is_linalg_dtype(dtype)) {
    return prepare_error(ErrorCode::kDTypeMismatch, a,
                         fmt::format("expected float32, float64, complex64 or complex128, found {}", dtype));
  }
  const std::size_t core = a.kind == LinalgOpKind::kVectorNorm ? 1 : 2;
  const IntArrayRef x = shapes[0];
  if (x.size() < core) {
    return prepare_error(ErrorCode::kShapeMismatch, a,
                         fmt::format("expected operand 0 of rank >= {}, found shape {}", core, shape_to_string(x)));
  }
  auto plan = std::make_shared<LinalgPlan>();
  plan->attributes = a;
  plan->dtype = dtype;
  const std::size_t batch_rank = x.size() - core;
  plan->batch_shape = Dims(x.begin(), x.begin() + batch_rank);
  TENFERRO_ASSIGN_OR_RETURN(plan->batch, checked_numel(plan->batch_shape));
  plan->m = core == 1 ? 1 : x[batch_rank];
  plan->n = x[x.size() - 1];
  // Note [Norms of empty operands]: numpy's and torch's rules. A norm that
  // is the largest or smallest of no sums or singular values has no value
  // (numpy: ValueError, a zero-size reduction); (sum |x|^p)^(1/p) of no
  // elements is 0 for p > 0 and inf for p < 0 (elementwise_norm()).
  if (a.kind == LinalgOpKind::kVectorNorm || a.kind == LinalgOpKind::kMatrixNorm) {
    const bool vector = a.kind == LinalgOpKind::kVectorNorm;
    const bool no_rows = plan->m == 0, no_columns = plan->n == 0;
    bool undefined = false;
    const char* of_nothing = "";
    switch (a.norm) {
      case NormOrder::kInf:
      case NormOrder::kNegInf:
        undefined = vector ? no_columns : no_rows;
        of_nothing = vector ? "the largest or smallest of no elements" : "the largest or smallest of no row sums";
        break;
      case NormOrder::kOne:
      case NormOrder::kNegOne:
        undefined = !vector && no_columns;
        of_nothing = "the largest or smallest of no column sums";
        break;
      case NormOrder::kTwo:
      case NormOrder::kNegTwo:
        undefined = !vector && (no_rows || no_columns);
        of_nothing = "the largest or smallest of no singular values";
        break;
      default:
        break;
    }
    if (undefined) {
      return prepare_error(
          ErrorCode::kInvalidArgument, a,
          fmt::format("the {} norm of an empty {} has no value ({}); expected at least one element, "
                      "found shape {}",
                      to_string(a.norm), vector ? "vector" : "matrix", of_nothing, shape_to_string(x)));
    }
  }
  if (requires_square_input(a.kind) && plan->m != plan->n) {
    return prepare_error(ErrorCode::kShapeMismatch, a,
                         fmt::format("expected a square matrix [..., n, n], found shape {}", shape_to_string(x)));
  }
  if (operands == 2) {
    const IntArrayRef b = shapes[1];
    const bool batch_equal = b.size() == x.size() && std::equal(x.begin(), x.begin() + batch_rank, b.begin());
    if (!batch_equal || b[batch_rank] != plan->m) {
      return prepare_error(ErrorCode::kShapeMismatch, a,
                           fmt::format("expected operand 1 of shape [{}{}{}, r] for operand 0 of shape {}, found {}",
                                       fmt::join(plan->batch_shape, ", "), batch_rank > 0 ? ", " : "", plan->m,
                                       shape_to_string(x), shape_to_string(b)));
    }
    plan->nrhs = b[batch_rank + 1];
  }
  switch (a.kind) {
    case LinalgOpKind::kDet:
    case LinalgOpKind::kSlogdet:
      plan->provider_attributes = lu_attributes();
      break;
    case LinalgOpKind::kMatrixNorm:
      plan->provider_attributes = slot_of(a) == LinalgSlot::kSvd ? values_only_svd_attributes() : a;
      break;
    default:
      plan->provider_attributes = a;
      break;
  }
  plan->flops =
      estimate_flops(a, static_cast<double>(plan->m), static_cast<double>(plan->n), static_cast<double>(plan->nrhs));

  const LinalgSlot slot = slot_of(a);
  if (slot == LinalgSlot::kNone) {
    plan->reason = "computed by the engine (no provider slot)";
  } else {
    const LinalgProviderPolicy::Choice choice = policy.choose(slot, std::max(plan->m, plan->n));
    if (choice.candidates.empty()) {
      return Error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
                   fmt::format("linalg.{}: the {} slot has no provider ({})", to_string(a.kind), to_string(slot),
                               choice.reason));
    }
    // Note [Linalg candidates]: in order, past kUnsupported refusals only.
    const bool empty = plan->m == 0 || plan->n == 0;
    std::string refusals;
    for (const CpuLinalgProvider* candidate : choice.candidates) {
      Result<LinalgKernelPlan> kernel =
          empty ? Result<LinalgKernelPlan>(LinalgKernelPlan{}) : candidate->plan(plan->problem());
      if (kernel.ok()) {
        plan->provider = candidate;
        plan->reason = fmt::format("{} ({}{})", candidate->name(), choice.reason, refusals);
        plan->kernel = *kernel;
        break;
      }
      if (kernel.status().code() != ErrorCode::kUnsupported) return kernel.status();
      refusals += fmt::format("; candidate {} refused: {}", candidate->name(), kernel.status().message());
    }
    if (plan->provider == nullptr) {
      return Error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
                   fmt::format("linalg.{}: every candidate of the {} slot refused ({}{})", to_string(a.kind),
                               to_string(slot), choice.reason, refusals));
    }
  }
  lay_out(*plan);
  return plan;
}

}  // namespace tenferro::linalg::internal
