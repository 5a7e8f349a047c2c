// Layout materialization: copying any strided view into any other layout of
// the same shape (making a view contiguous, materializing a permutation,
// packing). Permutations are views (Tensor::permute); copy_into is where data
// actually moves.
#pragma once

#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// Copies the elements of `src` into `dst` (same shape and dtype, any
/// non-negative strides; stride 0 allowed in `src` only). `dst` must not
/// overlap `src` unless the two are identical (then nothing moves).
/// Validates first; on error nothing is written (kShapeMismatch,
/// kDTypeMismatch, kAliasConflict, kInvalidArgument, kUnsupported for rank >
/// 64). Borrows both views for the call only; may split the work with `ctx`
/// (one fan-out level). Thread-safe for disjoint destinations. `stats`, when
/// given, counts the path taken.
Status copy_into(const TensorView& src, const TensorView& dst, const ParallelContext& ctx,
                 KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
