// fill_elements: writes one value into every element of a strided view
// (the output initialisation of fill, reductions and pad).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/strided_loop.h"

namespace tenferro::cpu::internal {

/// Sets the numel(shape) elements of type T at `data` with element
/// `strides` (validated, non-overlapping) to `value`.
template <class T>
void fill_elements(void* data, IntArrayRef shape, const std::int64_t* strides, T value, const ParallelContext& ctx,
                   KernelStats* stats) {
  constexpr std::int64_t kGrain = 65536;
  const LoopOperand ops[1] = {{data, strides, static_cast<std::int64_t>(sizeof(T))}};
  StridedLoop<1> loop;
  init_strided_loop(shape, ops, loop);
  if (loop.numel == 0) return;
  const std::int64_t s = loop.inner_stride(0);
  const bool contiguous = loop.rank == 0 || s == static_cast<std::int64_t>(sizeof(T));
  parallel_or_inline(ctx, loop.numel, kGrain, stats, [&](std::int64_t b, std::int64_t e) {
    if (contiguous) {
      for_each_run(loop, b, e,
                   [&](char* const* p, std::int64_t n) { std::fill_n(reinterpret_cast<T*>(p[0]), n, value); });
    } else {
      for_each_run(loop, b, e, [&](char* const* p, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s) = value;
      });
    }
  });
}

}  // namespace tenferro::cpu::internal
