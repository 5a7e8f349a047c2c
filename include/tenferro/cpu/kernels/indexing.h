// Indexing CPU kernels (docs/core_ops.md "Shape and data movement"): gather,
// scatter (replace / add), dynamic_slice, dynamic_update_slice,
// concatenate, pad and reverse, for every dtype.
//
// Calls validate first and write nothing on a validation error. Indices
// are never an error: gather clamps its starts and scatter skips windows
// that fall outside (StableHLO). Outputs must not overlap inputs
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

/// StableHLO gather dimension numbers without batching dims
/// (docs/core_ops.md "gather"). The slice sizes are not stored: the window
/// extents are out's extents at `offset_dims` (1 on the collapsed axes).
struct GatherDimensions {
  Dims offset_dims;           // increasing result axes of the window
  Dims collapsed_slice_dims;  // increasing operand axes with slice size 1, dropped from the result
  Dims start_index_map;       // operand axis of each index-vector component
  std::int64_t index_vector_dim = 0;
};

/// StableHLO scatter dimension numbers without batching dims; the window
/// extents are updates' extents at `update_window_dims`.
struct ScatterDimensions {
  Dims update_window_dims;            // increasing updates axes of the window
  Dims inserted_window_dims;          // increasing operand axes the window does not span
  Dims scatter_dims_to_operand_dims;  // operand axis of each index-vector component
  std::int64_t index_vector_dim = 0;
};

/// General gather (StableHLO): for every batch position b of `indices` (its
/// axes but index_vector_dim) the window of x starting at the index vector
/// read at b (component k on axis start_index_map[k], every start clamped to
/// [0, x.shape[d] - window[d]]; other axes start at 0) is copied to out at
/// b's batch axes. `indices` is int32 or int64; out has x's dtype. Bad
/// dimension numbers or shapes are kInvalidArgument / kAxisOutOfRange /
/// kShapeMismatch; nothing is written then.
Status gather(const TensorView& x, const TensorView& indices, const GatherDimensions& dims, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats = nullptr);

/// General scatter (StableHLO): out = x, then for every batch position b of
/// the updates, their window at b is combined into out at the start read
/// from `indices` (no clamping); a window that would not lie wholly inside
/// x is skipped. kReplace: where windows overlap one unspecified write
/// wins; kAdd (numeric dtypes) sums, in an order fixed by the shapes and
/// layouts, never by the thread count. `out` may be identical to `x`.
Status scatter(const TensorView& x, const TensorView& indices, const TensorView& updates, const ScatterDimensions& dims,
               ScatterCombine combine, const TensorView& out, const ParallelContext& ctx, KernelStats* stats = nullptr);

/// numpy take(x, indices, axis) as GatherDimensions (indices of rank
/// `indices_rank`, x of rank `x_rank`).
GatherDimensions take_dimensions(std::int64_t x_rank, std::int64_t indices_rank, std::int64_t axis);

/// The scatter matching take_dimensions: updates of shape x.shape[:axis] +
/// indices.shape + x.shape[axis+1:] land at out[p, indices[q], r].
ScatterDimensions take_scatter_dimensions(std::int64_t x_rank, std::int64_t indices_rank, std::int64_t axis);

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
