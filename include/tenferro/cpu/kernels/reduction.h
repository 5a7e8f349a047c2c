// Reduction CPU kernels (docs/core_ops.md "Reductions"): reduce_sum,
// reduce_prod, reduce_max, reduce_min over any set of axes, and argmax /
// argmin along one axis, for every dtype where they are defined.
//
// Calls validate first and write nothing on error; the output must not
// overlap the input (kAliasConflict). They borrow their views for the call
// only, may split work with `ctx` (one fan-out level) and are thread-safe for
// disjoint outputs. Results do not depend on the thread count: parallel
// splits never change the order in which one output's elements are combined.
#pragma once

#include <cstdint>
#include <string_view>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// sum and prod: integer (wrapping), floating, complex; max and min: bool
/// (or / and), integer, floating (NaN propagates).
enum class ReduceOp : std::uint8_t { kSum, kProd, kMax, kMin };
/// argmax / argmin: bool, integer, floating; the int64 index of the first
/// extreme element, NaN counting as the extreme.
enum class ArgReduceOp : std::uint8_t { kArgmax, kArgmin };

std::string_view to_string(ReduceOp op) noexcept;
std::string_view to_string(ArgReduceOp op) noexcept;

/// out = op over `axes` of x. `axes` are distinct, in [0, rank) and in any
/// order; out has x's dtype and x's shape with `axes` removed. Empty
/// reductions give 0, 1, lowest/-inf, max/+inf. Floating sums along a
/// contiguous axis are pairwise (error O(log n)); along other axes they
/// accumulate in order.
Status reduce(ReduceOp op, const TensorView& x, IntArrayRef axes, const TensorView& out, const ParallelContext& ctx,
              KernelStats* stats = nullptr);

/// out (int64, x's shape without `axis`) = index of the first extreme of x
/// along `axis`. kInvalidArgument when that axis is empty.
Status arg_reduce(ArgReduceOp op, const TensorView& x, std::int64_t axis, const TensorView& out,
                  const ParallelContext& ctx, KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
