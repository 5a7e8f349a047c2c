// Along-axis CPU kernels (docs/core_ops.md "Along one axis"): cumulative
// sum and product, stable sort and argsort, each mapping every lane along
// one axis to a lane of the same length.
//
// Calls validate first and write nothing on error; the output must not
// overlap the input (kAliasConflict). They borrow their views for the call
// only, may split work with `ctx` (one fan-out level, whole lanes per
// chunk) and are thread-safe for disjoint outputs. Every lane is computed
// sequentially by one thread, so results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// cumsum / cumprod: integer (wrapping), floating and complex.
enum class CumulativeOp : std::uint8_t { kSum, kProd };

/// out[i] = x[0] op ... op x[i] along `axis`, accumulated in order in x's
/// dtype; `reverse` accumulates from the end, `exclusive` leaves x[i] out
/// (the first element of a lane is 0 or 1). out has x's dtype and shape.
Status cumulative(CumulativeOp op, const TensorView& x, std::int64_t axis, bool reverse, bool exclusive,
                  const TensorView& out, const ParallelContext& ctx, KernelStats* stats = nullptr);

/// What sort writes: the sorted values or their int64 positions (argsort).
enum class SortResult : std::uint8_t { kValues, kIndices };

/// Stable sort of every lane along `axis` (integer or floating), ascending
/// unless `descending`; NaNs go last in either direction. out has x's shape
/// and x's dtype (kValues) or int64 (kIndices: the positions of the sorted
/// values in x's lane). Sorting a lane allocates its scratch
/// permutation (once per parallel chunk).
Status sort(SortResult result, const TensorView& x, std::int64_t axis, bool descending, const TensorView& out,
            const ParallelContext& ctx, KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
