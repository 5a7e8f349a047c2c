// Indexing CPU kernels (docs/core_ops.md "Shape and data movement"): gather,
// scatter (replace / add), dynamic_slice, dynamic_update_slice,
// concatenate, pad and reverse, for every dtype.
//
// Calls validate first and write nothing on a validation error; a
// data-dependent error (an index out of range) is found by a scan of the
// indices before anything is written. Outputs must not overlap inputs
// (kAliasConflict), except that scatter and dynamic_update_slice may update
// `x` in place (out identical to x). Calls borrow their views for the call
// only, may split work with `ctx` (one fan-out level) and are thread-safe
// for disjoint outputs.
#pragma once

#include <cstdint>
#include <span>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

enum class ScatterCombine : std::uint8_t { kReplace, kAdd };

/// numpy take: out[p, q, r] = x[p, indices[q], r] where p ranges over
/// x.shape[:axis], q over indices.shape, r over x.shape[axis+1:].
/// `indices` is int32 or int64; out has x's dtype and shape
/// x.shape[:axis] + indices.shape + x.shape[axis+1:]. An index outside
/// [0, x.shape[axis]) is kOutOfRange (ErrorStage::kCompletion).
Status gather(const TensorView& x, const TensorView& indices, std::int64_t axis, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = x, then out[p, indices[q], r] = updates[p, q, r] (kReplace; with
/// duplicate indices one unspecified write wins) or += (kAdd, numeric
/// dtypes; duplicates accumulate). updates.shape = x.shape[:axis] +
/// indices.shape + x.shape[axis+1:]. `out` may be identical to `x`.
Status scatter(const TensorView& x, const TensorView& indices, const TensorView& updates, std::int64_t axis,
               ScatterCombine combine, const TensorView& out, const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = the window of x of shape out.shape starting at `starts`, each start
/// clamped to [0, x.shape[k] - out.shape[k]] (StableHLO).
Status dynamic_slice(const TensorView& x, IntArrayRef starts, const TensorView& out, const ParallelContext& ctx,
                     KernelStats* stats = nullptr);

/// out = x with the window of update.shape at `starts` (clamped like
/// dynamic_slice) replaced by `update`. With `out` identical to `x` only
/// the window is written.
Status dynamic_update_slice(const TensorView& x, const TensorView& update, IntArrayRef starts, const TensorView& out,
                            const ParallelContext& ctx, KernelStats* stats = nullptr);

/// Reads the core op's start operands (rank-0 int32/int64 tensors) into
/// `starts`.
Status read_start_indices(std::span<const TensorView> scalars, Dims& starts);

/// out = the inputs joined along `axis`; all inputs share rank, dtype and
/// every extent but `axis`'s. At least one input.
Status concatenate(std::span<const TensorView> inputs, std::int64_t axis, const TensorView& out,
                   const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = x with low[k] / high[k] elements of `value` (a rank-0 tensor of x's
/// dtype) before / after axis k and interior[k] between neighbours; all
/// three >= 0. out.shape[k] = low + high + n + max(n - 1, 0) * interior.
Status pad(const TensorView& x, const TensorView& value, IntArrayRef low, IntArrayRef high, IntArrayRef interior,
           const TensorView& out, const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = x with the (distinct) `axes` reversed.
Status reverse(const TensorView& x, IntArrayRef axes, const TensorView& out, const ParallelContext& ctx,
               KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
