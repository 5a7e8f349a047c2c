// copy_elements: the layout kernel (flat memcpy, contiguous runs, blocked
// transpose in the style of HPTT).
//
// Note [Blocked transpose]
// After the StridedLoop merge (Note [Strided iteration]) the axes are
// ordered by destination stride. When the destination's fastest axis is not
// also the source's fastest, every contiguous destination run reads the
// source with a large stride, so the copy is a transpose of two index groups:
//  - A: the destination's fastest axes, chained while they are contiguous
//    with each other in the destination (small axes are fused until the
//    group has >= kGroupTarget elements);
//  - B: the source's fastest remaining axes, chained the same way in the
//    source.
// Element (a, b) lives at src + srcA(a) + b * sb and dst + a * da + dstB(b),
// where fused groups keep their other-side offsets in small tables. The
// copy walks macro tiles of kMacroTile x kMacroTile (A fastest) for every
// index of the remaining ("outer") axes, and each macro tile is covered by
// W x W register-tile transposes (transpose_micro.h, AVX-512/AVX2) when
// da == sb == element size, scalar moves at the edges. Each source row and
// destination column of an AVX-512 W x W tile is a cache line for 8-byte
// elements, so with large destinations the columns go out as non-temporal
// stores (no read-for-ownership), fenced at the end of every parallel chunk;
// narrower tiles stream through a stage (Note [Staged streaming]). The
// tiles' instruction set is the context's kernel_isa() (the engine's cap).
// Work units (outer index, B block, A block) are split over ParallelContext
// in contiguous ranges. When both fastest axes coincide the copy is a loop
// of contiguous runs (a single memcpy when everything merged into one
// axis).
#include "cpu/kernels/copy_kernel.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/strided_loop.h"
#include "cpu/kernels/transpose_micro.h"
#include "tenferro/cpu/kernels/layout.h"

namespace tenferro::cpu::internal {
namespace {

constexpr std::int64_t kParallelGrainBytes = 256 * 1024;
// Note [Streaming threshold]: a transposing copy writes whole destination
// lines with vector stores; with ordinary stores every line is first read
// for ownership, so the copy moves three lines per line copied while memcpy
// (fast strings) moves two. Non-temporal stores skip that read. Once the
// destination is several times the per-core L2 it will not be read back
// from a private cache anyway, and streaming wins even while the shared L3
// could hold it (chosen by measurement with `tenferro bench permute`;
// docs/performance_notes.md, "CPU copy kernel").
constexpr std::int64_t kStreamingBytes = 8 << 20;
constexpr std::int64_t kGroupTarget = 512;  // elements a fused group aims for
constexpr std::int64_t kMaxTable = 1024;    // largest fused group (offset table entries)
constexpr std::int64_t kMacroTile = 64;     // macro tile side, elements (the largest)
// Direct (unstaged) macro tiles are 32 x 32: their 32 source rows and 32
// destination columns stay in L1 and the TLB together, which 64 x 64 tiles
// do not. Staged tiles (Note [Staged streaming]) stay 64 wide so that each
// column run has whole lines between its partial ends. Both widths chosen by
// measurement with `tenferro bench permute` (docs/performance_notes.md,
// "CPU copy kernel").
constexpr std::int64_t kDirectTile = 32;
constexpr std::int64_t kCacheLine = 64;  // bytes

struct Word16 {
  unsigned char bytes[16];
};

template <int Bytes>
struct WordOf;
template <>
struct WordOf<1> {
  using type = std::uint8_t;
};
template <>
struct WordOf<4> {
  using type = std::uint32_t;
};
template <>
struct WordOf<8> {
  using type = std::uint64_t;
};
template <>
struct WordOf<16> {
  using type = Word16;
};

template <class Word>
inline void move_word(char* dst, const char* src) {
  Word w;
  std::memcpy(&w, src, sizeof(Word));
  std::memcpy(dst, &w, sizeof(Word));
}

// ---- contiguous and strided runs ----

// Copies `bytes` with non-temporal stores for the destination's whole
// cache lines and ordinary ones for the partial lines at both ends
// (Note [Streaming runs], Note [Staged streaming]).
void stream_copy(char* d, const char* s, std::int64_t bytes) {
  const auto misalignment = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(d) % kCacheLine);
  const std::int64_t head = std::min(bytes, misalignment == 0 ? 0 : kCacheLine - misalignment);
  std::memcpy(d, s, static_cast<std::size_t>(head));
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= kCacheLine; bytes -= kCacheLine, d += kCacheLine, s += kCacheLine) {
    for (int q = 0; q < 4; ++q) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d) + q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s) + q));
    }
  }
  std::memcpy(d, s, static_cast<std::size_t>(bytes));
}

// Note [Streaming runs]
// Contiguous runs went out through memcpy, with ordinary stores. When the
// destination spans at least kStreamingBytes (a slice of a large tensor,
// such as one chunk of MERA's 34M-element temporaries, Note [Chunked
// temporaries] in execution_plan.cpp, whose 19 runs of 93 KB lie 14 MB
// apart) the lines will not be read back from a private cache, and the
// runs are copied with non-temporal stores instead, fenced at the end of
// every parallel chunk: MERA ran in 0.72 s against 0.75-0.79 (min 0.70
// against 0.74, three alternating runs; the copies were 10 % of its time).
// What must be long is the destination's contiguous block (runs that
// follow each other there), at least kStreamingRunBytes: over two ranks
// MERA's chunks copy runs of 864 bytes that are contiguous in the
// destination but not in the source, and streaming them took its two-rank
// time from 0.420-0.432 s to 0.409-0.443 (medians 0.427 and 0.413, four
// alternating runs). Each run is still at least kStreamingMinRunBytes:
// the partial lines at its ends go out as ordinary stores.
constexpr std::int64_t kStreamingRunBytes = 1024;
constexpr std::int64_t kStreamingMinRunBytes = 256;

bool streams_runs(const StridedLoop<2>& loop, std::int64_t item) noexcept {
  if (loop.rank < 2 || loop.inner_stride(0) != item || loop.inner_stride(1) != item ||
      loop.shape[0] * item < kStreamingMinRunBytes) {
    return false;
  }
  // The destination's contiguous block: runs that follow each other there.
  std::int64_t block = loop.shape[0] * item;
  for (int d = 1; d < loop.rank && loop.strides[d][0] == block; ++d) block *= loop.shape[d];
  std::int64_t span = item;
  for (int d = 0; d < loop.rank; ++d) span += (loop.shape[d] - 1) * std::abs(loop.strides[d][0]);
  return block >= kStreamingRunBytes && span >= kStreamingBytes;
}

template <class Word>
void copy_runs(const StridedLoop<2>& loop, std::int64_t begin, std::int64_t end, bool streaming) {
  const std::int64_t ds = loop.inner_stride(0);
  const std::int64_t ss = loop.inner_stride(1);
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  if (streaming) {
    for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) { stream_copy(p[0], p[1], n * item); });
    store_fence();
  } else if (ds == item && ss == item) {
    for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      std::memcpy(p[0], p[1], static_cast<std::size_t>(n) * sizeof(Word));
    });
  } else {
    for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) move_word<Word>(p[0] + i * ds, p[1] + i * ss);
    });
  }
}

// ---- blocked transpose ----

// One index group: element i has offset table[i] (fused axes) or i * stride
// on the side where the group is not linear.
struct Group {
  std::int64_t extent = 1;
  std::int64_t linear_stride = 0;  // byte stride on the side where the group is linear
  std::int64_t stride = 0;         // byte stride on the other side (single axis)
  const std::int64_t* table = nullptr;
  std::int64_t offset(std::int64_t i) const noexcept { return table != nullptr ? table[i] : i * stride; }
};

struct TilePlan {
  Group a;  // linear in dst
  Group b;  // linear in src
  int outer_rank = 0;
  std::int64_t outer_shape[kMaxKernelRank];
  std::int64_t outer_ds[kMaxKernelRank];
  std::int64_t outer_ss[kMaxKernelRank];
  std::int64_t outer_numel = 1;
  std::int64_t blocks_a = 1;
  std::int64_t blocks_b = 1;
  char* dst = nullptr;
  const char* src = nullptr;
  TileTranspose simd;
  bool streaming = false;
  bool staged = false;             // streaming through an L1 stage (Note [Staged streaming])
  std::int64_t tile = kMacroTile;  // macro tile side: kDirectTile, or kMacroTile when staged
};

// Builds group offsets over `count` axes (indices into shape/strides) into
// `table`, first axis fastest.
void fill_table(std::int64_t* table, const int* axes, int count, const StridedLoop<2>& loop, int side) {
  std::int64_t n = 1;
  table[0] = 0;
  for (int k = 0; k < count; ++k) {
    const int d = axes[k];
    for (std::int64_t j = 1; j < loop.shape[d]; ++j) {
      for (std::int64_t i = 0; i < n; ++i) table[j * n + i] = table[i] + j * loop.strides[d][side];
    }
    n *= loop.shape[d];
  }
}

// Chains axes starting at `first` that are contiguous with each other on
// `side` (0 = dst, 1 = src), skipping `used`, into `g`. Returns the axes.
int chain_group(const StridedLoop<2>& loop, int first, int side, const bool* used, Group& g, std::int64_t* table,
                int* axes) {
  int count = 1;
  axes[0] = first;
  g.extent = loop.shape[first];
  g.linear_stride = loop.strides[first][side];
  while (g.extent < kGroupTarget) {
    int next = -1;
    for (int d = 0; d < loop.rank; ++d) {
      bool taken = used[d];
      for (int k = 0; k < count; ++k) taken = taken || axes[k] == d;
      if (!taken && loop.strides[d][side] == g.extent * g.linear_stride) next = d;
    }
    if (next < 0 || g.extent * loop.shape[next] > kMaxTable) break;
    axes[count++] = next;
    g.extent *= loop.shape[next];
  }
  if (count == 1) {
    g.stride = loop.strides[first][1 - side];
  } else {
    fill_table(table, axes, count, loop, 1 - side);
    g.table = table;
  }
  return count;
}

template <class Word>
void tile_scalar(const TilePlan& p, char* dst, const char* src, std::int64_t a0, std::int64_t a1, std::int64_t b0,
                 std::int64_t b1) {
  const std::int64_t da = p.a.linear_stride;
  const std::int64_t sb = p.b.linear_stride;
  for (std::int64_t b = b0; b < b1; ++b) {
    char* d = dst + p.b.offset(b);
    const char* s = src + b * sb;
    if (p.a.table == nullptr) {
      const std::int64_t sa = p.a.stride;
      for (std::int64_t a = a0; a < a1; ++a) move_word<Word>(d + a * da, s + a * sa);
    } else {
      for (std::int64_t a = a0; a < a1; ++a) move_word<Word>(d + a * da, s + p.a.table[a]);
    }
  }
}

// A destination run gathered from a source with a small constant stride
// (kStride elements): the compiler turns it into shuffles or gathers.
template <class Word, int kStride>
void strided_gather_run(char* dst, const char* src, std::int64_t n) {
  Word* d = reinterpret_cast<Word*>(dst);
  const Word* s = reinterpret_cast<const Word*>(src);
  for (std::int64_t i = 0; i < n; ++i) d[i] = s[i * kStride];
}

// Macro tiles whose B group has 2-4 elements (interleaved sources such as
// the cyclic patterns): each b is one destination run read with stride NB.
template <class Word>
bool small_b_tile(const TilePlan& p, char* dst, const char* src, std::int64_t a0, std::int64_t a1) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  if (p.a.table != nullptr || p.a.linear_stride != item || p.b.linear_stride != item ||
      p.a.stride != p.b.extent * item) {
    return false;
  }
  for (std::int64_t b = 0; b < p.b.extent; ++b) {
    char* d = dst + p.b.offset(b) + a0 * item;
    const char* s = src + b * item + a0 * p.a.stride;
    switch (p.b.extent) {
      case 2:
        strided_gather_run<Word, 2>(d, s, a1 - a0);
        break;
      case 3:
        strided_gather_run<Word, 3>(d, s, a1 - a0);
        break;
      default:
        strided_gather_run<Word, 4>(d, s, a1 - a0);
        break;
    }
  }
  return true;
}

// Note [Staged streaming]
// The vector tiles stream a destination column only when it is one whole
// cache line; otherwise every column store is an ordinary store, and each
// destination line is first read for ownership. When the destination lines
// of the plan are not whole lines (reverse_15d_3: every B offset is 24
// bytes past a line), a full macro tile is transposed into an L1-resident
// stage instead, and each destination column run (up to kMacroTile
// elements) is then copied out with non-temporal 16-byte stores for its
// whole lines and ordinary stores for the partial lines at both ends, which
// neighbouring macro tiles complete.
//
// Tiles whose columns are half a line (AVX2's 4 x 4 doubles and 2 x 2
// complex doubles, 8 x 8 floats) stream through the stage too: streamed
// directly, each line went out as two 32-byte non-temporal stores, and a
// 2048 x 2048 float32 transpose ran at 4.2 GB/s on both ISAs (7.9 ms, now
// 2.5), float64 under the AVX2 cap at 10.5 GB/s against AVX-512's 14 (6.4
// ms, now 4.9; the AVX2 audit of 2026-12-07, docs/performance_notes.md
// "Half-line tiles").
template <class Word>
bool staged_macro_tile(const TilePlan& p, const char* const* rows, char* const* cols, std::int64_t a0, std::int64_t a1,
                       std::int64_t b0, std::int64_t b1) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  const int w = p.simd.width;
  if ((a1 - a0) % w != 0 || (b1 - b0) % w != 0) return false;
  alignas(64) char stage[kMacroTile * kMacroTile * item];
  char* stage_cols[kMacroTile];
  const std::int64_t run = (a1 - a0) * item;
  for (std::int64_t j = 0; j < b1 - b0; ++j) stage_cols[j] = stage + j * run - a0 * item;
  for (std::int64_t b = b0; b < b1; b += w) {
    for (std::int64_t a = a0; a < a1; a += w)
      p.simd.run(rows + (a - a0), b * item, stage_cols + (b - b0), a * item, /*streaming=*/false);
  }
  for (std::int64_t j = 0; j < b1 - b0; ++j) stream_copy(cols[j] + a0 * item, stage + j * run, run);
  return true;
}

// One macro tile [a0, a1) x [b0, b1) at the given outer offsets.
template <class Word>
void macro_tile(const TilePlan& p, char* dst, const char* src, std::int64_t a0, std::int64_t a1, std::int64_t b0,
                std::int64_t b1) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  const int w = p.simd.width;
  if (p.b.extent <= 4 && p.b.extent >= 2 && small_b_tile<Word>(p, dst, src, a0, a1)) return;
  if (w == 0) return tile_scalar<Word>(p, dst, src, a0, a1, b0, b1);
  // Row and column bases of the macro tile, computed once.
  const char* rows[kMacroTile];
  char* cols[kMacroTile];
  for (std::int64_t a = a0; a < a1; ++a) rows[a - a0] = src + p.a.offset(a);
  for (std::int64_t b = b0; b < b1; ++b) cols[b - b0] = dst + p.b.offset(b);
  if (p.staged && staged_macro_tile<Word>(p, rows, cols, a0, a1, b0, b1)) return;
  const std::int64_t a_full = a0 + (a1 - a0) / w * w;
  const std::int64_t b_full = b0 + (b1 - b0) / w * w;
  for (std::int64_t b = b0; b < b_full; b += w) {
    for (std::int64_t a = a0; a < a_full; a += w)
      p.simd.run(rows + (a - a0), b * item, cols + (b - b0), a * item, p.streaming);
  }
  if (a_full < a1) tile_scalar<Word>(p, dst, src, a_full, a1, b0, b_full);
  if (b_full < b1) tile_scalar<Word>(p, dst, src, a0, a1, b_full, b1);
}

// Work units [begin, end) of (outer, B block, A block), A block fastest.
template <class Word>
void run_tiles(const TilePlan& p, std::int64_t begin, std::int64_t end) {
  std::int64_t unit = begin;
  std::int64_t ba = unit % p.blocks_a;
  std::int64_t bb = unit / p.blocks_a % p.blocks_b;
  std::int64_t outer = unit / p.blocks_a / p.blocks_b;
  std::int64_t index[kMaxKernelRank];
  char* dst = p.dst;
  const char* src = p.src;
  for (int d = 0; d < p.outer_rank; ++d) {
    index[d] = outer % p.outer_shape[d];
    outer /= p.outer_shape[d];
    dst += index[d] * p.outer_ds[d];
    src += index[d] * p.outer_ss[d];
  }
  for (; unit < end; ++unit) {
    const std::int64_t a0 = ba * p.tile;
    const std::int64_t b0 = bb * p.tile;
    macro_tile<Word>(p, dst, src, a0, std::min(a0 + p.tile, p.a.extent), b0, std::min(b0 + p.tile, p.b.extent));
    if (++ba < p.blocks_a) continue;
    ba = 0;
    if (++bb < p.blocks_b) continue;
    bb = 0;
    for (int d = 0; d < p.outer_rank; ++d) {
      dst += p.outer_ds[d];
      src += p.outer_ss[d];
      if (++index[d] < p.outer_shape[d]) break;
      dst -= index[d] * p.outer_ds[d];
      src -= index[d] * p.outer_ss[d];
      index[d] = 0;
    }
  }
  if (p.streaming) store_fence();
}

// Whether every W-element destination column of a vector tile is one whole
// cache line: the base, every B offset and every outer destination stride
// are multiples of a line (Note [Staged streaming]).
bool whole_lines(const TilePlan& p, const StridedLoop<2>& loop) noexcept {
  if (reinterpret_cast<std::uintptr_t>(loop.data[0]) % kCacheLine != 0) return false;
  for (std::int64_t b = 0; b < p.b.extent; ++b)
    if (p.b.offset(b) % kCacheLine != 0) return false;
  for (int d = 0; d < p.outer_rank; ++d)
    if (p.outer_ds[d] % kCacheLine != 0) return false;
  return true;
}

template <class Word>
void copy_typed(const StridedLoop<2>& loop, const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrainBytes / item);
  // The source's fastest axis.
  int b_first = 0;
  for (int d = 1; d < loop.rank; ++d) {
    if (std::abs(loop.strides[d][1]) < std::abs(loop.strides[b_first][1])) b_first = d;
  }
  if (loop.rank <= 1 || b_first == 0) {
    const bool flat = loop.rank <= 1 && loop.inner_stride(0) == item && loop.inner_stride(1) == item;
    const bool streaming = !flat && streams_runs(loop, item);
    if (stats != nullptr) {
      ++(flat ? stats->memcpy_copies : stats->run_copies);
      if (streaming) ++stats->streaming_stores;
    }
    parallel_or_inline(ctx, loop.numel, grain, stats,
                       [&](std::int64_t b, std::int64_t e) { copy_runs<Word>(loop, b, e, streaming); });
    return;
  }
  TilePlan p;
  std::int64_t a_table[kMaxTable];
  std::int64_t b_table[kMaxTable];
  int a_axes[kMaxKernelRank];
  int b_axes[kMaxKernelRank];
  bool used[kMaxKernelRank] = {};
  used[b_first] = true;
  const int na = chain_group(loop, 0, /*side=*/0, used, p.a, a_table, a_axes);
  for (int k = 0; k < na; ++k) used[a_axes[k]] = true;
  used[b_first] = false;
  const int nb = chain_group(loop, b_first, /*side=*/1, used, p.b, b_table, b_axes);
  for (int k = 0; k < nb; ++k) used[b_axes[k]] = true;
  for (int d = 0; d < loop.rank; ++d) {
    if (used[d]) continue;
    p.outer_shape[p.outer_rank] = loop.shape[d];
    p.outer_ds[p.outer_rank] = loop.strides[d][0];
    p.outer_ss[p.outer_rank++] = loop.strides[d][1];
    p.outer_numel *= loop.shape[d];
  }
  p.dst = loop.data[0];
  p.src = loop.data[1];
  if (p.a.linear_stride == item && p.b.linear_stride == item) {
    const CpuIsa cap = ctx.kernel_isa();
    p.simd = select_tile_transpose(item, cap == CpuIsa::kAuto ? layout_kernel_isa() : cap);
  }
  p.streaming = p.simd.width > 0 && loop.numel * item >= kStreamingBytes;
  p.staged = p.streaming && (p.simd.width * item < kCacheLine || !whole_lines(p, loop));
  p.tile = p.staged ? kMacroTile : kDirectTile;
  p.blocks_a = (p.a.extent + p.tile - 1) / p.tile;
  p.blocks_b = (p.b.extent + p.tile - 1) / p.tile;
  if (stats != nullptr) {
    ++stats->tiled_transposes;
    if (p.simd.width > 0) ++stats->vector_tiles;
    if (p.streaming) ++stats->streaming_stores;
    if (p.staged) ++stats->staged_streaming;
  }
  const std::int64_t units = p.outer_numel * p.blocks_a * p.blocks_b;
  const std::int64_t per_unit = std::max<std::int64_t>(1, loop.numel / units);
  parallel_or_inline(ctx, units, std::max<std::int64_t>(1, grain / per_unit), stats,
                     [&](std::int64_t b, std::int64_t e) { run_tiles<Word>(p, b, e); });
}

}  // namespace

void copy_elements(IntArrayRef shape, std::int64_t item, const CopyOperand& dst, const CopyOperand& src,
                   const ParallelContext& ctx, KernelStats* stats) {
  const LoopOperand ops[2] = {{const_cast<void*>(dst.data), dst.strides, item},
                              {const_cast<void*>(src.data), src.strides, item}};
  StridedLoop<2> loop;
  init_strided_loop(shape, ops, loop);
  if (loop.numel == 0) return;
  switch (item) {
    case 1:
      return copy_typed<WordOf<1>::type>(loop, ctx, stats);
    case 4:
      return copy_typed<WordOf<4>::type>(loop, ctx, stats);
    case 8:
      return copy_typed<WordOf<8>::type>(loop, ctx, stats);
    default:
      return copy_typed<WordOf<16>::type>(loop, ctx, stats);
  }
}

namespace {

template <class Word>
void small_matrix_typed(const char* src, std::int64_t rs_src, std::int64_t cs_src, char* dst, std::int64_t rs_dst,
                        std::int64_t cs_dst, std::int64_t rows, std::int64_t cols) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(Word));
  constexpr std::int64_t kMaxSide = 256;
  if (rs_src == 1 && cs_dst == 1 && !(cs_src == 1 && rs_dst == 1)) {  // the transpose of the case below
    std::swap(rows, cols);
    std::swap(rs_src, cs_src);
    std::swap(rs_dst, cs_dst);
  }
  if (rs_src == 1 && rs_dst == 1) {  // contiguous columns
    for (std::int64_t j = 0; j < cols; ++j)
      std::memcpy(dst + j * cs_dst * item, src + j * cs_src * item, static_cast<std::size_t>(rows * item));
    return;
  }
  if (cs_src == 1 && cs_dst == 1) {  // contiguous rows
    for (std::int64_t i = 0; i < rows; ++i)
      std::memcpy(dst + i * rs_dst * item, src + i * rs_src * item, static_cast<std::size_t>(cols * item));
    return;
  }
  std::int64_t i_full = 0, j_full = 0;
  if (cs_src == 1 && rs_dst == 1 && rows <= kMaxSide && cols <= kMaxSide) {
    const TileTranspose t = select_tile_transpose(item, layout_kernel_isa());
    const std::int64_t w = t.width;
    if (w > 0 && rows >= w && cols >= w) {
      const char* row_at[kMaxSide];
      char* col_at[kMaxSide];
      for (std::int64_t i = 0; i < rows; ++i) row_at[i] = src + i * rs_src * item;
      for (std::int64_t j = 0; j < cols; ++j) col_at[j] = dst + j * cs_dst * item;
      i_full = rows / w * w;
      j_full = cols / w * w;
      for (std::int64_t j = 0; j < j_full; j += w)
        for (std::int64_t i = 0; i < i_full; i += w) t.run(row_at + i, j * item, col_at + j, i * item, false);
    }
  }
  // What the tiles left: rows from i_full in every column, then columns from
  // j_full in the tiled rows (everything when nothing was tiled).
  for (std::int64_t j = 0; j < cols; ++j) {
    const std::int64_t first = j < j_full ? i_full : 0;
    for (std::int64_t i = first; i < rows; ++i)
      move_word<Word>(dst + (i * rs_dst + j * cs_dst) * item, src + (i * rs_src + j * cs_src) * item);
  }
}

}  // namespace

void store_fence() noexcept { _mm_sfence(); }

TileTranspose select_tile_transpose(std::int64_t item_size, CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::kAvx512:
      return avx512_tile_transpose(item_size);
    case CpuIsa::kAvx2:
      return avx2_tile_transpose(item_size);
    case CpuIsa::kAuto:
    case CpuIsa::kPortable:
      break;
  }
  return {};
}

}  // namespace tenferro::cpu::internal

namespace tenferro::cpu {

void copy_small_matrix(const void* src, std::int64_t rs_src, std::int64_t cs_src, void* dst, std::int64_t rs_dst,
                       std::int64_t cs_dst, std::int64_t rows, std::int64_t cols, std::int64_t item) noexcept {
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst);
  switch (item) {
    case 1:
      return internal::small_matrix_typed<internal::WordOf<1>::type>(s, rs_src, cs_src, d, rs_dst, cs_dst, rows, cols);
    case 4:
      return internal::small_matrix_typed<internal::WordOf<4>::type>(s, rs_src, cs_src, d, rs_dst, cs_dst, rows, cols);
    case 8:
      return internal::small_matrix_typed<internal::WordOf<8>::type>(s, rs_src, cs_src, d, rs_dst, cs_dst, rows, cols);
    default:
      return internal::small_matrix_typed<internal::WordOf<16>::type>(s, rs_src, cs_src, d, rs_dst, cs_dst, rows, cols);
  }
}

}  // namespace tenferro::cpu
