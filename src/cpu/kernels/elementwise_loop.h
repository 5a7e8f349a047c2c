// run_elementwise: the one loop driver behind every elementwise kernel
// (unary, binary, compare, select, convert), templated on the element types
// and the scalar functor so the functor inlines into the inner loop.
//
// Note [Choosing the inner loop once]
// A call first checks whether every operand is row-major dense; then the
// elements are one flat array and the call runs a single contiguous loop (no
// StridedLoop is built: this is the small-op fast path). Otherwise it builds
// a StridedLoop (Note [Strided iteration]) and looks at the strides of the
// fastest merged axis exactly once:
//  - all contiguous                 -> contiguous loop over plain pointers;
//  - output and some inputs contiguous, the rest stride 0
//                                   -> the stride-0 inputs are loaded once
//                                      per run and passed as scalars;
//  - anything else                  -> byte-strided loop.
// The chosen loop is a template instance, so there is no per-element branch,
// virtual call or dtype switch. Contiguous loops carry an "ivdep" hint: the
// output may be identical to an input (in place), which is a dependence
// distance of zero and safe to vectorize, but the compiler cannot prove it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <utility>

#include "cpu/kernels/strided_loop.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"

#if defined(__clang__)
#define TENFERRO_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TENFERRO_IVDEP _Pragma("GCC ivdep")
#else
#define TENFERRO_IVDEP
#endif

namespace tenferro::cpu::internal {

/// Runs body(begin, end) over [0, n): through ctx in chunks of at least
/// `grain` when that gives every thread work, inline otherwise.
template <class Body>
void parallel_or_inline(const ParallelContext& ctx, std::int64_t n, std::int64_t grain, KernelStats* stats,
                        Body&& body) {
  if (ctx.max_threads() > 1 && n >= 2 * grain) {
    if (stats != nullptr) ++stats->parallel_calls;
    ctx.parallel_for(0, n, grain, body);
  } else if (n > 0) {
    body(std::int64_t{0}, n);
  }
}

template <class T>
struct ContiguousArg {
  const T* p;
  T operator[](std::int64_t i) const noexcept { return p[i]; }
};
template <class T>
struct ScalarArg {
  T v;
  T operator[](std::int64_t) const noexcept { return v; }
};

template <class Out, class F, class... Args>
inline void contiguous_loop(const F& f, Out* out, std::int64_t n, const Args... args) {
  TENFERRO_IVDEP
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(args[i]...);
}

// Input I is a scalar when bit I of Mask is set, contiguous otherwise.
template <unsigned Mask, std::size_t I, class T>
auto make_arg(const char* p) {
  if constexpr (((Mask >> I) & 1u) != 0) {
    return ScalarArg<T>{*reinterpret_cast<const T*>(p)};
  } else {
    return ContiguousArg<T>{reinterpret_cast<const T*>(p)};
  }
}

/// A unary functor that also computes whole contiguous runs (f.run(out, x,
/// n), Note [Vector math]); its operator() serves strided elements.
template <class F>
concept RunFunctor = requires(const F& f, char* out, const char* x, std::int64_t n) {
  f.run(out, x, n);
};

template <class Out, class... In, unsigned Mask, class F, std::size_t... I>
void masked_run(const F& f, char* const* p, std::int64_t n, std::integral_constant<unsigned, Mask>,
                std::index_sequence<I...>) {
  if constexpr (RunFunctor<F> && Mask == 0 && sizeof...(In) == 1) {
    f.run(p[0], p[1], n);
  } else {
    contiguous_loop<Out>(f, reinterpret_cast<Out*>(p[0]), n, make_arg<Mask, I, In>(p[I + 1])...);
  }
}

template <class Out, class... In, class F, std::size_t... I>
void strided_run(const F& f, char* const* p, const std::int64_t* s, std::int64_t n, std::index_sequence<I...>) {
  for (std::int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
  }
}

// Note [Packed transposed tiles]
// The common mixed layout is an output contiguous along axis 0 with every
// input either contiguous along axis 0 too or contiguous along another axis
// d (a transposed input, e.g. a + b.T). Then each kPackTile x kPackTile tile
// over axes 0 and d first transposes the tile of every transposed input into
// a stack buffer (reading runs along d, which are contiguous; the buffer
// stays in L1), and runs the contiguous, vectorized loop over the tile's
// rows along axis 0 with the buffer in place of the input. Each cache line
// of every operand is then read once and fully used, and no inner loop is
// strided (KernelStats::packed_tiles counts these calls).
inline constexpr std::int64_t kPackTile = 32;

template <class T>
void pack_tile(const char* src, std::int64_t stride0, std::int64_t len0, std::int64_t len_d, char* buffer) {
  T* out = reinterpret_cast<T*>(buffer);
  for (std::int64_t i = 0; i < len0; ++i) {
    const T* row = reinterpret_cast<const T*>(src + i * stride0);  // contiguous along d
    for (std::int64_t j = 0; j < len_d; ++j) out[j * kPackTile + i] = row[j];
  }
}

/// One tile of every input, packed (stack storage of a parallel chunk).
template <int K, std::size_t ItemBytes>
struct alignas(64) PackBuffer {
  char bytes[K][kPackTile * kPackTile * ItemBytes];
};

/// Runs the loop as described in Note [Packed transposed tiles] over tile
/// axis d; returns false (running nothing) when the layouts do not fit.
template <class Out, class... In, class F, std::size_t... I>
bool run_packed_tiles(const F& f, const StridedLoop<sizeof...(In) + 1>& loop, int d, const ParallelContext& ctx,
                      std::int64_t grain, KernelStats* stats, std::index_sequence<I...>) {
  constexpr int K = sizeof...(In);
  constexpr std::int64_t kSizes[] = {static_cast<std::int64_t>(sizeof(Out)), static_cast<std::int64_t>(sizeof(In))...};
  using Buffer = PackBuffer<K, std::max({sizeof(In)...})>;
  if (loop.strides[0][0] != kSizes[0]) return false;
  bool transposed[K] = {};
  bool any = false;
  for (int k = 0; k < K; ++k) {
    if (loop.strides[0][k + 1] == kSizes[k + 1]) continue;
    if (loop.strides[d][k + 1] != kSizes[k + 1]) return false;
    transposed[k] = any = true;
  }
  if (!any) return false;
  if (stats != nullptr) ++stats->packed_tiles;
  auto tile = [&](Buffer& buffer, char* const* base, std::int64_t len0, std::int64_t len_d) {
    ((transposed[I] ? pack_tile<In>(base[I + 1], loop.strides[0][I + 1], len0, len_d, buffer.bytes[I]) : void()), ...);
    char* p[K + 1];
    for (std::int64_t j = 0; j < len_d; ++j) {
      p[0] = base[0] + j * loop.strides[d][0];
      for (int k = 0; k < K; ++k) {
        p[k + 1] =
            transposed[k] ? buffer.bytes[k] + j * kPackTile * kSizes[k + 1] : base[k + 1] + j * loop.strides[d][k + 1];
      }
      masked_run<Out, In...>(f, p, len0, std::integral_constant<unsigned, 0>{}, std::index_sequence<I...>{});
    }
  };
  const std::int64_t units = tiled_units(loop, d, kPackTile, kPackTile);
  parallel_or_inline(ctx, units, std::max<std::int64_t>(1, grain / (kPackTile * kPackTile)), stats,
                     [&](std::int64_t b, std::int64_t e) {
                       Buffer buffer;
                       for_each_tile(loop, d, kPackTile, kPackTile, b, e,
                                     [&](char* const* base, std::int64_t len0, std::int64_t len_d) {
                                       tile(buffer, base, len0, len_d);
                                     });
                     });
  return true;
}

/// out[i] = f(in_0[i], ..., in_K-1[i]) over validated views of one shape
/// (element types Out and In...). Operands may be broadcast (stride 0) inputs
/// and any strides; the output may be identical to an input.
template <class Out, class... In, class F>
void run_elementwise(const F& f, const TensorView& out, std::span<const TensorView> in, const ParallelContext& ctx,
                     std::int64_t grain, KernelStats* stats) {
  constexpr int K = sizeof...(In);
  using Seq = std::make_index_sequence<K>;
  const std::int64_t n = out.numel();
  if (n == 0) return;
  bool flat = is_row_major_contiguous(out);
  for (int k = 0; k < K; ++k) flat = flat && is_row_major_contiguous(in[k]);
  if (flat) {
    if (stats != nullptr) ++stats->flat_contiguous;
    parallel_or_inline(ctx, n, grain, stats, [&](std::int64_t b, std::int64_t e) {
      char* p[K + 1];
      p[0] = static_cast<char*>(out.data) + b * static_cast<std::int64_t>(sizeof(Out));
      constexpr std::int64_t kSizes[] = {static_cast<std::int64_t>(sizeof(In))...};
      for (int k = 0; k < K; ++k) p[k + 1] = static_cast<char*>(in[k].data) + b * kSizes[k];
      masked_run<Out, In...>(f, p, e - b, std::integral_constant<unsigned, 0>{}, Seq{});
    });
    return;
  }

  LoopOperand ops[K + 1];
  ops[0] = {out.data, out.strides.data(), static_cast<std::int64_t>(sizeof(Out))};
  {
    constexpr std::int64_t kSizes[] = {static_cast<std::int64_t>(sizeof(In))...};
    for (int k = 0; k < K; ++k) ops[k + 1] = {in[k].data, in[k].strides.data(), kSizes[k]};
  }
  StridedLoop<K + 1> loop;
  init_strided_loop(out.shape, ops, loop);

  // Note [Choosing the inner loop once].
  std::int64_t inner[K + 1];
  for (int k = 0; k <= K; ++k) inner[k] = loop.inner_stride(k);
  bool contiguous = loop.rank == 0 || inner[0] == ops[0].item_size;
  unsigned mask = 0;
  for (int k = 0; k < K; ++k) {
    if (inner[k + 1] == 0) {
      mask |= 1u << k;
    } else if (inner[k + 1] != ops[k + 1].item_size) {
      contiguous = false;
    }
  }
  // Note [Tiled elementwise]: when an input's fastest axis is not axis 0,
  // every element of a run along axis 0 would touch a new cache line of
  // that input; visiting 2-D tiles over axis 0 and the input's fastest axis
  // keeps those lines in cache until they are used up.
  int tile_axis = -1;
  for (int k = 1; k <= K && loop.rank >= 2 && tile_axis < 0; ++k) {
    const std::int64_t s0 = std::abs(inner[k]);
    if (s0 <= 64) continue;
    for (int d = 1; d < loop.rank; ++d) {
      const std::int64_t s = std::abs(loop.strides[d][k]);
      if (s != 0 && s < s0 && (tile_axis < 0 || s < std::abs(loop.strides[tile_axis][k]))) tile_axis = d;
    }
  }
  if (tile_axis >= 0 && run_packed_tiles<Out, In...>(f, loop, tile_axis, ctx, grain, stats, Seq{})) return;
  auto run_loop = [&](auto&& run) {
    if (tile_axis < 0) {
      parallel_or_inline(ctx, loop.numel, grain, stats,
                         [&](std::int64_t b, std::int64_t e) { for_each_run(loop, b, e, run); });
      return;
    }
    if (stats != nullptr) ++stats->tiled_inner;
    constexpr std::int64_t kTile0 = 64, kTileD = 32;
    const std::int64_t units = tiled_units(loop, tile_axis, kTile0, kTileD);
    parallel_or_inline(
        ctx, units, std::max<std::int64_t>(1, grain / (kTile0 * kTileD)), stats,
        [&](std::int64_t b, std::int64_t e) { for_each_tiled_run(loop, tile_axis, kTile0, kTileD, b, e, run); });
  };
  auto run_with_mask = [&](auto mask_constant) {
    if (stats != nullptr) ++(mask_constant.value == 0 ? stats->contiguous_inner : stats->broadcast_inner);
    run_loop([&](char* const* p, std::int64_t len) { masked_run<Out, In...>(f, p, len, mask_constant, Seq{}); });
  };
  if (contiguous && loop.rank > 0) {
    if constexpr (K <= 2) {
      switch (mask) {
        case 0:
          return run_with_mask(std::integral_constant<unsigned, 0>{});
        case 1:
          return run_with_mask(std::integral_constant<unsigned, 1>{});
        case 2:
          if constexpr (K == 2) return run_with_mask(std::integral_constant<unsigned, 2>{});
          break;
        default:
          break;  // every input broadcast along the inner axis: strided loop
      }
    } else if (mask == 0) {
      return run_with_mask(std::integral_constant<unsigned, 0>{});
    }
  }
  if (stats != nullptr) ++stats->strided_inner;
  run_loop([&](char* const* p, std::int64_t len) { strided_run<Out, In...>(f, p, inner, len, Seq{}); });
}

}  // namespace tenferro::cpu::internal
