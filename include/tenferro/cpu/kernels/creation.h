// Creation kernels: constant fill and iota (docs/core_ops.md "Creation").
// A `constant` literal held in a tensor is materialized with copy_into.
#pragma once

#include <cstdint>

#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/scalar.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// Sets every element of `out` to `value`; value.dtype() must equal
/// out.dtype (kDTypeMismatch otherwise). `out` may have any non-overlapping
/// strides. Borrows `out` for the call; thread-safe for disjoint outputs.
Status fill(const TensorView& out, const Scalar& value, const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out[i_0, ..., i_r-1] = i_axis converted to out.dtype (bool: i != 0;
/// complex: (i, 0)). kAxisOutOfRange unless 0 <= axis < rank.
Status iota(const TensorView& out, std::int64_t axis, const ParallelContext& ctx, KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
