// copy_elements: the unvalidated copy engine behind copy_into and the
// indexing kernels (slices, concatenation, padding, reversal are copies
// between sub-views).
#pragma once

#include <cstdint>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::cpu::internal {

/// One side of a raw copy: the address of element (0, ..., 0) and element
/// strides along the copy's shape. Strides may be negative (a reversed
/// axis) or, for the source only, zero.
struct CopyOperand {
  const void* data;
  const std::int64_t* strides;
};

/// Copies the numel(shape) elements of `item_size` bytes from `src` to
/// `dst`. Preconditions (callers validate): rank <= kMaxKernelRank, dst
/// addresses every element once, dst and src are disjoint or identical.
void copy_elements(IntArrayRef shape, std::int64_t item_size, const CopyOperand& dst, const CopyOperand& src,
                   const ParallelContext& ctx, KernelStats* stats);

}  // namespace tenferro::cpu::internal
