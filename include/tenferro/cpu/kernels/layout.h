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

/// Note [Small matrix copies]
/// dst = src for one rows x cols matrix of `item`-byte elements (1, 4, 8 or
/// 16) at element strides, without copy_into's validation and loop set-up
/// (which cost more than the copy of a matrix of a few KB): the caller
/// guarantees valid, non-overlapping memory. A transposing copy (one side's
/// rows contiguous, the other's columns) of a matrix up to 256 x 256 runs
/// the layout kernel's register tiles (the process-wide
/// layout_kernel_isa()); others copy contiguous runs or element by element.
/// The linalg engine gathers and stores each matrix of a batch this way.
void copy_small_matrix(const void* src, std::int64_t rs_src, std::int64_t cs_src, void* dst, std::int64_t rs_dst,
                       std::int64_t cs_dst, std::int64_t rows, std::int64_t cols, std::int64_t item) noexcept;

}  // namespace tenferro::cpu
