// Validation and TTGT planning for the dot_general composite (Note [TTGT
// without transposes] in dot_general.h). Pure metadata: no data is read.
#pragma once

#include <cstdint>

#include "tenferro/base/small_vector.h"
#include "tenferro/cpu/gemm/dot_general.h"

namespace tenferro::cpu::internal {

/// Operand slots of a contraction.
enum Slot : int { kLhs = 0, kRhs = 1, kOut = 2 };

/// One non-trivial axis of the contraction with its strides in each tensor
/// (0 where the tensor does not hold it) and its axis number there (-1).
struct PlanAxis {
  std::int64_t extent = 1;
  std::int64_t stride[3] = {0, 0, 0};
  std::int64_t axis[3] = {-1, -1, -1};
};

using AxisList = SmallVector<PlanAxis, 6>;

/// The groups of a contraction in their chosen orders (outermost first)
/// and which tensors are replaced by dense buffers.
struct TtgtPlan {
  DotGeneralPlan summary;
  AxisList batch;
  AxisList m;
  AxisList n;
  AxisList k;
  bool replace[3] = {false, false, false};
};

/// Validates the request (and `out` when given) as documented on
/// DotGeneralComposite; `gemm_support` decides which float dtypes are
/// accepted.
Status validate_dot_general(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                            const TensorView* out, const GemmSupport& gemm_support);

/// The result shape (after validation).
Dims dot_general_result_shape(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims);

/// Plans a validated request. Without `out` the output layout is free (the
/// plan's out slot is "replaced" at no cost and becomes the result buffer).
/// Fills summary.path, copies, m/n/k and jobs; summary.mode is set by the
/// caller, who knows the thread count and providers.
TtgtPlan plan_ttgt(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims, const TensorView* out,
                   GemmStrideSupport strides);

/// Extent and stride of a fused group in `slot` (1 and 0 when empty).
std::int64_t group_extent(const AxisList& group) noexcept;
std::int64_t group_stride(const AxisList& group, Slot slot) noexcept;

/// Splits the batch axes (in order) into runs that fuse in all three
/// tensors; returns the runs as fused axes, outermost first.
AxisList fuse_batch_runs(const AxisList& batch);

}  // namespace tenferro::cpu::internal
