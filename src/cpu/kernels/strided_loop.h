// StridedLoop: N operands iterated together over one shape, in the style of
// PyTorch's TensorIterator.
//
// Note [Strided iteration]
// A kernel call builds one StridedLoop from its (validated) operands:
//  1. extent-1 axes are dropped (they never move a pointer);
//  2. axes are ordered fastest first by the operands' absolute strides
//     (operand 0, the output, decides; a stride-0 operand defers to the next
//     one);
//  3. neighbouring axes that are contiguous with each other in *every*
//     operand are merged, so a dense tensor becomes one axis whatever its
//     rank.
// The kernel then picks its inner loop ONCE from the strides of axis 0
// (contiguous, broadcast scalar, or general) and for_each_run() calls it for
// every run along axis 0, walking the other axes with an odometer. Runs are
// split by linear index ranges, which is how kernels hand work to
// ParallelContext::parallel_for. Everything lives on the stack: no heap
// allocation, whatever the rank (up to kMaxKernelRank).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/kernels/validation.h"

namespace tenferro::cpu::internal {

/// One operand of a StridedLoop: base address, element strides along the
/// iteration shape (stride 0 broadcasts; internal callers may pass negative
/// strides, e.g. reverse) and element size in bytes.
struct LoopOperand {
  void* data;
  const std::int64_t* strides;
  std::int64_t item_size;
};

template <int N>
struct StridedLoop {
  int rank = 0;            ///< merged axes; 0 means a single element
  std::int64_t numel = 0;  ///< elements of the iteration shape
  std::int64_t shape[kMaxKernelRank];
  std::int64_t strides[kMaxKernelRank][N];  ///< byte strides, axis 0 fastest
  char* data[N];

  /// Byte stride of operand `op` along the fastest axis (0 for rank 0).
  std::int64_t inner_stride(int op) const noexcept { return rank == 0 ? 0 : strides[0][op]; }
  std::int64_t inner_extent() const noexcept { return rank == 0 ? 1 : shape[0]; }
};

/// Builds `loop` over `shape` (rank <= kMaxKernelRank, validated) for `ops`.
template <int N>
void init_strided_loop(IntArrayRef shape, const LoopOperand (&ops)[N], StridedLoop<N>& loop) noexcept {
  loop.rank = 0;
  loop.numel = 1;
  for (int k = 0; k < N; ++k) loop.data[k] = static_cast<char*>(ops[k].data);
  // Collect axes with extent > 1, logical order reversed so that, with equal
  // strides, the row-major-fastest axis comes first.
  for (std::size_t a = shape.size(); a-- > 0;) {
    loop.numel *= shape[a];
    if (shape[a] == 1) continue;
    const int r = loop.rank++;
    loop.shape[r] = shape[a];
    for (int k = 0; k < N; ++k) loop.strides[r][k] = ops[k].strides[a] * ops[k].item_size;
  }
  if (loop.numel == 0) {
    loop.rank = 0;
    return;
  }
  // Stable insertion sort, fastest axis first.
  auto faster = [&](int x, int y) {  // is axis x strictly faster than axis y?
    for (int k = 0; k < N; ++k) {
      const std::int64_t sx = loop.strides[x][k] < 0 ? -loop.strides[x][k] : loop.strides[x][k];
      const std::int64_t sy = loop.strides[y][k] < 0 ? -loop.strides[y][k] : loop.strides[y][k];
      if (sx == 0 || sy == 0 || sx == sy) continue;
      return sx < sy;
    }
    return false;
  };
  for (int i = 1; i < loop.rank; ++i) {
    for (int j = i; j > 0 && faster(j, j - 1); --j) {
      std::swap(loop.shape[j], loop.shape[j - 1]);
      for (int k = 0; k < N; ++k) std::swap(loop.strides[j][k], loop.strides[j - 1][k]);
    }
  }
  // Merge neighbours that are contiguous with each other in every operand.
  int out = 0;
  for (int i = 1; i < loop.rank; ++i) {
    bool mergeable = true;
    for (int k = 0; k < N; ++k) mergeable = mergeable && loop.strides[i][k] == loop.shape[out] * loop.strides[out][k];
    if (mergeable) {
      loop.shape[out] *= loop.shape[i];
    } else {
      ++out;
      loop.shape[out] = loop.shape[i];
      for (int k = 0; k < N; ++k) loop.strides[out][k] = loop.strides[i][k];
    }
  }
  if (loop.rank > 0) loop.rank = out + 1;
}

/// Calls run(ptrs, n) for consecutive runs along axis 0 that cover the
/// linear iteration range [begin, end): ptrs[k] is operand k's address of
/// the run's first element, and consecutive elements of operand k are
/// loop.inner_stride(k) bytes apart. With `base`, operand k starts at
/// base[k] instead of loop.data[k] (one plan reused at many offsets).
template <int N, class Run>
void for_each_run(const StridedLoop<N>& loop, std::int64_t begin, std::int64_t end, Run&& run,
                  char* const* base = nullptr) {
  if (begin >= end) return;
  char* ptrs[N];
  for (int k = 0; k < N; ++k) ptrs[k] = base != nullptr ? base[k] : loop.data[k];
  if (loop.rank == 0) {
    run(static_cast<char* const*>(ptrs), std::int64_t{1});
    return;
  }
  std::int64_t index[kMaxKernelRank];
  std::int64_t rest = begin;
  for (int d = 0; d < loop.rank; ++d) {
    index[d] = rest % loop.shape[d];
    rest /= loop.shape[d];
    for (int k = 0; k < N; ++k) ptrs[k] += index[d] * loop.strides[d][k];
  }
  const std::int64_t inner = loop.shape[0];
  std::int64_t pos = begin;
  while (pos < end) {
    const std::int64_t n = std::min(inner - index[0], end - pos);
    run(static_cast<char* const*>(ptrs), n);
    pos += n;
    if (pos >= end) break;
    // Back to the start of axis 0, then carry into the slower axes.
    for (int k = 0; k < N; ++k) ptrs[k] -= index[0] * loop.strides[0][k];
    index[0] = 0;
    for (int d = 1; d < loop.rank; ++d) {
      for (int k = 0; k < N; ++k) ptrs[k] += loop.strides[d][k];
      if (++index[d] < loop.shape[d]) break;
      for (int k = 0; k < N; ++k) ptrs[k] -= index[d] * loop.strides[d][k];
      index[d] = 0;
    }
  }
}

/// Number of work units of for_each_tiled_run: (index of the axes other
/// than 0 and d) x (blocks of `tile_d` along d) x (blocks of `tile0` along 0).
template <int N>
std::int64_t tiled_units(const StridedLoop<N>& loop, int d, std::int64_t tile0, std::int64_t tile_d) noexcept {
  const std::int64_t n0 = loop.shape[0], nd = loop.shape[d];
  return loop.numel / n0 / nd * ((nd + tile_d - 1) / tile_d) * ((n0 + tile0 - 1) / tile0);
}

/// Visits the tiles over axes 0 and d (d > 0) of the units in
/// [unit_begin, unit_end) (see tiled_units): calls tile(ptrs, len0, len_d)
/// with the operands' addresses of the tile's first element and its extents
/// along axis 0 (<= tile0) and d (<= tile_d).
template <int N, class Tile>
void for_each_tile(const StridedLoop<N>& loop, int d, std::int64_t tile0, std::int64_t tile_d, std::int64_t unit_begin,
                   std::int64_t unit_end, Tile&& tile) {
  const std::int64_t n0 = loop.shape[0], nd = loop.shape[d];
  const std::int64_t blocks0 = (n0 + tile0 - 1) / tile0;
  const std::int64_t blocks_d = (nd + tile_d - 1) / tile_d;
  char* ptrs[N];
  for (std::int64_t unit = unit_begin; unit < unit_end; ++unit) {
    std::int64_t rest = unit;
    const std::int64_t b0 = rest % blocks0;
    rest /= blocks0;
    const std::int64_t bd = rest % blocks_d;
    rest /= blocks_d;
    for (int k = 0; k < N; ++k)
      ptrs[k] = loop.data[k] + b0 * tile0 * loop.strides[0][k] + bd * tile_d * loop.strides[d][k];
    for (int a = 1; a < loop.rank; ++a) {
      if (a == d) continue;
      const std::int64_t i = rest % loop.shape[a];
      rest /= loop.shape[a];
      for (int k = 0; k < N; ++k) ptrs[k] += i * loop.strides[a][k];
    }
    tile(static_cast<char* const*>(ptrs), std::min(tile0, n0 - b0 * tile0), std::min(tile_d, nd - bd * tile_d));
  }
}

/// Like for_each_tile, but calls run(ptrs, n) for each index of axis d in
/// the tile, a run of n <= tile0 elements along axis 0. Used when an
/// operand's fastest axis is d: a tile then touches few cache lines of
/// every operand.
template <int N, class Run>
void for_each_tiled_run(const StridedLoop<N>& loop, int d, std::int64_t tile0, std::int64_t tile_d,
                        std::int64_t unit_begin, std::int64_t unit_end, Run&& run) {
  for_each_tile(loop, d, tile0, tile_d, unit_begin, unit_end,
                [&](char* const* base, std::int64_t len0, std::int64_t len_d) {
                  char* ptrs[N];
                  for (int k = 0; k < N; ++k) ptrs[k] = base[k];
                  for (std::int64_t j = 0; j < len_d; ++j) {
                    run(static_cast<char* const*>(ptrs), len0);
                    for (int k = 0; k < N; ++k) ptrs[k] += loop.strides[d][k];
                  }
                });
}

}  // namespace tenferro::cpu::internal
