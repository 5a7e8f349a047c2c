// Creation kernels: constant fill, iota and rng_philox (docs/core_ops.md
// "Creation").
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

/// rng_philox's distributions.
enum class RandomDistribution : std::uint8_t { kUniform, kNormal };

/// out (float32 or float64, any non-overlapping strides; kDTypeMismatch
/// otherwise) = the values of the Philox-4x32-10 stream of `key` from block
/// `counter`, uniform in [0, 1) or standard normal, in the layout
/// docs/core_ops.md fixes. Element i (row-major) depends on i alone, so the
/// bits do not depend on the thread count. Borrows `out` for the call;
/// thread-safe for disjoint outputs.
Status random_philox(const TensorView& out, std::uint64_t key, std::uint64_t counter, RandomDistribution distribution,
                     const ParallelContext& ctx, KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
