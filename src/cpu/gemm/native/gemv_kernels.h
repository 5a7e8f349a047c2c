// Matrix-vector and dot-product kernels of the native GEMM, templates that
// each ISA translation unit instantiates with its own vector wrapper (Note
// [ISA translation units] in micro_kernels.h).
//
// Note [Matrix-vector GEMM]
// A product with one column (n == 1 after the driver's orientation: a
// matrix-vector product, and a dot product when m == 1 too) reuses no
// element of A: each is read once for one multiply-add. The blocked path
// packed A into mr-row panels, zero-filling the missing rows (a 1 x k A
// became 24 x k), and ran its mr x nr register tile with one valid column;
// the small tiles were no better. `i,i->` over 2^20 doubles took 100x
// numpy's `v @ w`, `ij,j->i` at 1024 3.6x (the Python performance audit,
// 2026-12-05). These kernels read A in place, once, along its unit stride:
// - columns contiguous (rsa == 1, m > 1): up to kAccumulatorRows<T> rows of C
//   accumulate in an L1 buffer while the depth runs, acc[i] += a[i, l] * b[l]
//   (sweep_sum);
// - rows contiguous and b contiguous (csa == 1, rsb == 1): dot products,
//   several rows sharing each load of b;
// - any other strides: a scalar loop.
// Each element of C sums its depth in one fixed order and in the same code
// (vector lanes, or the scalar tail of the whole axis), whichever rows a
// call covers, so splitting the rows over workers (at multiples of
// kGemvRowGrain) does not change results.
//
// Alignment: a load that splits two cache lines cost a streaming AVX-512
// loop about a third of its speed, and numpy arrays start 16 bytes into a
// line. Where the ISA has masked loads (Isa::load_first: AVX-512), the
// accumulating loops start their full vectors on a line and load the head
// before it and the tail after the last full vector with masked loads
// (dot products: up to a line of their first row). Without masked loads
// (AVX2, where a split load costs little), the vectors start at the first
// element and the tail is summed in scalars.
//
// Note [Batched dot products]
// A batch of depth-only problems (m == n == 1, `ijk,ijk->k`) whose batch
// runs along the unit stride of both operands, and whose depth does not,
// would read each cache line once per batch member if run as separate dot
// products. gemv_batch runs the batch in vector lanes instead, up to
// kAccumulatorRows<T> members at a time: acc[j] += a[l, j] * b[l, j] over the
// depth l.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "cpu/gemm/native/gemm_kernel_set.h"

// The kernels' lambdas must inline: called, they keep the accumulators in
// memory (a short dot product's step lambda took 30 % of its time).
#define TENFERRO_GEMV_INLINE __attribute__((always_inline))

namespace tenferro::cpu::internal {

/// Elements of T before `p` reaches a 64-byte boundary (0 when T-misaligned).
template <class T>
inline std::int64_t head_to_line(const T* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (addr % sizeof(T) != 0) return 0;
  return static_cast<std::int64_t>((64 - addr % 64) % 64 / sizeof(T));
}

/// The elements of a unit-stride axis of `a` (its rows, or batch members)
/// before a cache line, when every step of the other axis (stride `other`)
/// keeps that alignment; else 0. The vector loops start after them: a load
/// that splits two lines cost a streaming AVX-512 loop about a third of
/// its speed, and numpy arrays start 16 bytes into a line.
template <class T>
inline std::int64_t unit_head(const T* a, std::int64_t other) {
  return (other * static_cast<std::int64_t>(sizeof(T))) % 64 == 0 ? head_to_line(a) : 0;
}

/// Rows (or batch members) per unit when the driver splits them over workers.
inline constexpr std::int64_t kGemvRowGrain = 64;

namespace gemv_detail {

template <class Isa, class T>
inline constexpr bool kComplex = !std::is_same_v<T, typename Isa::S>;

/// Elements of T per vector.
template <class Isa, class T>
inline constexpr std::int64_t kPer = Isa::kLanes / (kComplex<Isa, T> ? 2 : 1);

template <class Isa>
inline void spill(typename Isa::V v, typename Isa::S (&out)[Isa::kLanes]) {
  Isa::storeu(out, v);
}

/// c = alpha * s + beta * c; beta == 0 never reads c. Forced inline, as
/// scalar_dot: out of line, each call of a complex one went through the PLT
/// (`ij,j->i` at 7500 x 4 complex64 took 230 us, 28 us inlined; the
/// shape-sweep audit of 2026-12-07).
template <class T>
TENFERRO_GEMV_INLINE inline void write_c(T* c, T s, T alpha, T beta) {
  const T x = plain_mul(alpha, s);
  *c = beta == T(0) ? x : plain_mul(beta, *c) + x;
}

/// v[0] + ... + v[N - 1] as a pairwise tree (N a power of two): a chain of
/// N scalar adds per dot product cost more than a short dot itself.
template <int N, class S>
inline S tree_sum(S* v) {
  for (int w = N / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) v[i] += v[i + w];
  return v[0];
}

template <class Isa>
inline constexpr bool kMaskedLoads = requires(const typename Isa::S* q) {
  Isa::load_first(q, 1);
};

// Note [Lane sums]
// A dot product ends by adding the lanes of its accumulators. Spilled to
// the stack and added in scalars, that was most of a short row's cost:
// `ij,j->i` at 4687 x 64 float32 (4 vectors a row) ran at 0.27 of numpy
// (the shape-sweep audit of 2026-12-07). Where the ISA has it
// (Isa::sum_lanes: AVX-512, AVX2), the two accumulators are added and
// reduced in registers, in a fixed order per row.

/// R dot products of `k` elements: rows a + r * lda (contiguous) against
/// b (contiguous), into out[r]. Each row's sums run in the same order for
/// every R. With masked loads the vectors start on a line of the first row
/// and the head and tail are partial vectors; without, the tail (less than
/// a vector) is summed in scalars.
template <class Isa, class T, int R>
inline void dot_rows(std::int64_t k, const T* a, std::int64_t lda, const T* b, T* out) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr std::int64_t P = kPer<Isa, T>;
  constexpr std::int64_t kScalars = kComplex<Isa, T> ? 2 : 1;
  constexpr int L = Isa::kLanes;
  constexpr bool kMasked = kMaskedLoads<Isa>;
  const S* bs = reinterpret_cast<const S*>(b);
  const S* as[R];
  for (int r = 0; r < R; ++r) as[r] = reinterpret_cast<const S*>(a + r * lda);
  V acc[R][2];
  V acc2[R][2];  // complex: x * swap(y)
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc2[r][0] = acc2[r][1] = Isa::zero();
  // x * y into accumulator u of every row, the vectors at element l (count
  // scalars valid: L is a full vector).
  auto step = [&](std::int64_t l, int u, int count) TENFERRO_GEMV_INLINE {
    auto load = [&](const S* p) TENFERRO_GEMV_INLINE {
      if constexpr (kMasked) {
        if (count < L) return Isa::load_first(p, count);
      }
      return Isa::loadu(p);
    };
    const V y = load(bs + kScalars * l);
    V z = y;
    if constexpr (kComplex<Isa, T>) z = Isa::swap_pairs(y);
    for (int r = 0; r < R; ++r) {
      const V x = load(as[r] + kScalars * l);
      acc[r][u] = Isa::fmadd(x, y, acc[r][u]);
      if constexpr (kComplex<Isa, T>) acc2[r][u] = Isa::fmadd(x, z, acc2[r][u]);
    }
  };
  // (Short rows skip the head: it costs a masked step and gains nothing.)
  const std::int64_t h = kMasked && k >= 8 * P ? std::min(k, head_to_line(a)) : 0;
  if (h > 0) step(0, 1, static_cast<int>(h * kScalars));
  std::int64_t l = h;
  for (; l + 2 * P <= k; l += 2 * P) {
    step(l, 0, L);
    step(l + P, 1, L);
  }
  if (l + P <= k) {
    step(l, 0, L);
    l += P;
  }
  if (kMasked && l < k) {
    step(l, 1, static_cast<int>((k - l) * kScalars));
    l = k;
  }
  for (int r = 0; r < R; ++r) {
    T s;
    if constexpr (!kComplex<Isa, T> && requires { Isa::sum_lanes(acc[r][0], acc[r][1]); }) {
      // In registers (Note [Lane sums]).
      s = Isa::sum_lanes(acc[r][0], acc[r][1]);
    } else if constexpr (kComplex<Isa, T>) {
      S v0[L], v1[L];
      spill<Isa>(acc[r][0], v0);
      spill<Isa>(acc[r][1], v1);
      S w0[L], w1[L];
      spill<Isa>(acc2[r][0], w0);
      spill<Isa>(acc2[r][1], w1);
      S re[L / 2], im[L / 2];
      for (int i = 0; i < L / 2; ++i) {
        re[i] = (v0[2 * i] + v1[2 * i]) - (v0[2 * i + 1] + v1[2 * i + 1]);
        im[i] = (w0[2 * i] + w1[2 * i]) + (w0[2 * i + 1] + w1[2 * i + 1]);
      }
      s = T(tree_sum<L / 2>(re), tree_sum<L / 2>(im));
    } else {
      S v0[L], v1[L];
      spill<Isa>(acc[r][0], v0);
      spill<Isa>(acc[r][1], v1);
      for (int i = 0; i < L; ++i) v0[i] += v1[i];
      s = tree_sum<L>(v0);
    }
    for (std::int64_t e = l; e < k; ++e) s += plain_mul(a[r * lda + e], b[e]);
    out[r] = s;
  }
}

// Elements of C per sweep of sweep_sum: their sums stay in an L1-resident
// buffer while the depth runs, so the operands stream through once, a line
// at a time (register blocks of a few vectors read 256 bytes per depth
// step, one step after another, and ran `i,ij->j` and `ijk,ijk->k` well
// below the memory's speed). 8 KB of sums per buffer (complex keeps two):
// 512 sums of any type had cut a 1024-wide row-major A into two half-row
// streams of 4 KB, and `i,ij->j` at 1024 doubles ran at 0.87-0.88 of
// numpy's from Python (one OpenBLAS thread), 0.95-0.97 with whole rows
// (the Xeon VM, alternating with the previous install, three rounds).
template <class T>
inline constexpr std::int64_t kAccumulatorRows = 8192 / static_cast<std::int64_t>(sizeof(T));

/// Elements j in [j0, j1) of C: c[j * sc] = alpha * sum_l x[l * xs + j] *
/// y_l(j) + beta * c[j * sc], with y_l(j) = y[l * ys] (kBroadcast: a
/// matrix times a vector) or y[l * ys + j] (a batch of dot products). Up to
/// kAccumulatorRows elements per sweep over the depth, in vector lanes
/// (with masked loads, a head to x's first line and a tail in partial
/// vectors; else a scalar tail); each element sums over l in order.
template <class Isa, class T, bool kBroadcast>
void sweep_sum(std::int64_t k, const T* x, std::int64_t xs, const T* y, std::int64_t ys, T alpha, T beta, T* c,
               std::int64_t sc, std::int64_t j0, std::int64_t j1) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr std::int64_t P = kPer<Isa, T>;
  constexpr std::int64_t kScalars = kComplex<Isa, T> ? 2 : 1;
  constexpr std::int64_t L = Isa::kLanes;
  constexpr bool kMasked = kMaskedLoads<Isa>;
  // Slot layout: [head vector][full vectors][tail vector]; complex keeps
  // x * swap(y) (kBroadcast: swap(x) * y.imag) in acc2.
  constexpr std::int64_t kRows = kAccumulatorRows<T>;
  alignas(64) S acc[(kRows + 2 * P) * kScalars];
  alignas(64) S acc2[kComplex<Isa, T> ? (kRows + 2 * P) * kScalars : 1];
  T tail_sums[P];
  const std::int64_t vb = kMasked ? j0 + std::min(j1 - j0, unit_head(x + j0, xs)) : j0;
  const std::int64_t ve = vb + (j1 - vb) / P * P;
  for (std::int64_t jc = vb;;) {
    const std::int64_t n = std::min(kRows, ve - jc);
    const bool last = jc + n >= ve;
    // Partial vectors (or scalars): [h0, h0 + hn) before jc, [t0, t0 + tn) after.
    const std::int64_t h0 = jc == vb ? j0 : jc, hn = jc - h0;
    const std::int64_t t0 = jc + n, tn = last ? j1 - t0 : 0;
    // Slots: the head vector at acc, element jc + e at acc + (P + e) *
    // kScalars, the tail vector after the full ones.
    const std::int64_t used = (P + n + (kMasked && tn > 0 ? P : 0)) * kScalars;
    for (std::int64_t v = 0; v < used; ++v) acc[v] = S(0);
    if constexpr (kComplex<Isa, T>) {
      for (std::int64_t v = 0; v < used; ++v) acc2[v] = S(0);
    }
    if (!kMasked) {
      for (std::int64_t e = 0; e < tn; ++e) tail_sums[e] = T(0);
    }
    const S* xv = reinterpret_cast<const S*>(x + jc);
    const S* yv = reinterpret_cast<const S*>(y + (kBroadcast ? 0 : jc));
    // One vector slot: elements from jc + off, `count` scalars of them
    // (L: a full vector), summed at acc[v] (and acc2[v]).
    auto slot = [&]<int Q>(std::int64_t l, const V(&yb)[Q], const V(&yi)[Q], std::int64_t off, int count,
                           std::int64_t v) TENFERRO_GEMV_INLINE {
      auto load = [&](const S* p) TENFERRO_GEMV_INLINE {
        if constexpr (kMasked) {
          if (count < L) return Isa::load_first(p, count);
        }
        return Isa::loadu(p);
      };
      const std::int64_t o = off * kScalars;
      V s = Isa::load(acc + v);
      V s2 = Isa::zero();
      if constexpr (kComplex<Isa, T>) s2 = Isa::load(acc2 + v);
      for (int q = 0; q < Q; ++q) {
        const V xq = load(xv + kScalars * (l + q) * xs + o);
        if constexpr (kBroadcast) {
          s = Isa::fmadd(xq, yb[q], s);
          if constexpr (kComplex<Isa, T>) s2 = Isa::fmadd(Isa::swap_pairs(xq), yi[q], s2);
        } else {
          const V yq = load(yv + kScalars * (l + q) * ys + o);
          s = Isa::fmadd(xq, yq, s);
          if constexpr (kComplex<Isa, T>) s2 = Isa::fmadd(xq, Isa::swap_pairs(yq), s2);
        }
      }
      Isa::storeu(acc + v, s);
      if constexpr (kComplex<Isa, T>) Isa::storeu(acc2 + v, s2);
    };
    auto steps = [&]<int Q>(std::int64_t l) TENFERRO_GEMV_INLINE {
      V yb[Q], yi[Q];  // kBroadcast: y_l (its real part), its imaginary part
      for (int q = 0; q < Q; ++q) {
        yb[q] = yi[q] = Isa::zero();
        if constexpr (kBroadcast) {
          const T t = y[(l + q) * ys];
          if constexpr (kComplex<Isa, T>) {
            yb[q] = Isa::set1(t.real());
            yi[q] = Isa::set1(t.imag());
          } else {
            yb[q] = Isa::set1(t);
          }
        }
      }
      if (hn > 0) slot.template operator()<Q>(l, yb, yi, -hn, static_cast<int>(hn * kScalars), 0);
      for (std::int64_t e = 0; e < n; e += P) {
        slot.template operator()<Q>(l, yb, yi, e, static_cast<int>(L), (P + e) * kScalars);
      }
      if (tn > 0) {
        if constexpr (kMasked) {
          slot.template operator()<Q>(l, yb, yi, n, static_cast<int>(tn * kScalars), (P + n) * kScalars);
        } else {
          for (int q = 0; q < Q; ++q) {
            const T* xl = x + (l + q) * xs;
            const T* yl = y + (l + q) * ys;
            for (std::int64_t e = 0; e < tn; ++e) {
              tail_sums[e] += plain_mul(xl[t0 + e], kBroadcast ? *yl : yl[t0 + e]);
            }
          }
        }
      }
    };
    std::int64_t l = 0;
    for (; l + 4 <= k; l += 4) steps.template operator()<4>(l);
    for (; l < k; ++l) steps.template operator()<1>(l);
    auto lanes = [&](std::int64_t v) {  // the element whose lanes start at acc[v]
      if constexpr (kComplex<Isa, T> && kBroadcast) {
        // Even lanes xr*yr (minus xi*yi), odd lanes xi*yr (plus xr*yi).
        return T(acc[v] - acc2[v], acc[v + 1] + acc2[v + 1]);
      } else if constexpr (kComplex<Isa, T>) {
        return T(acc[v] - acc[v + 1], acc2[v] + acc2[v + 1]);
      } else {
        return T(acc[v]);
      }
    };
    for (std::int64_t e = 0; e < hn; ++e) write_c(c + (h0 + e) * sc, lanes(e * kScalars), alpha, beta);
    for (std::int64_t e = 0; e < n; ++e) write_c(c + (jc + e) * sc, lanes((P + e) * kScalars), alpha, beta);
    for (std::int64_t e = 0; e < tn; ++e) {
      write_c(c + (t0 + e) * sc, kMasked ? lanes((P + n + e) * kScalars) : tail_sums[e], alpha, beta);
    }
    if (last) break;
    jc += n;
  }
}

/// One element of C by a scalar loop over the depth (any strides).
template <class T>
TENFERRO_GEMV_INLINE inline T scalar_dot(std::int64_t k, const T* a, std::int64_t sa, const T* b, std::int64_t sb) {
  if (k < 8) {
    T s{};
    for (std::int64_t l = 0; l < k; ++l) s += plain_mul(a[l * sa], b[l * sb]);
    return s;
  }
  // Four chains of adds: batches of dots of 16 ran 1.7 ms per 10^5 through
  // dot_rows' vectors and 0.65-0.91 ms here (rows shorter than four vectors
  // come here, gemv_batch).
  T s0{}, s1{}, s2{}, s3{};
  std::int64_t l = 0;
  for (; l + 4 <= k; l += 4) {
    s0 += plain_mul(a[l * sa], b[l * sb]);
    s1 += plain_mul(a[(l + 1) * sa], b[(l + 1) * sb]);
    s2 += plain_mul(a[(l + 2) * sa], b[(l + 2) * sb]);
    s3 += plain_mul(a[(l + 3) * sa], b[(l + 3) * sb]);
  }
  for (; l < k; ++l) s0 += plain_mul(a[l * sa], b[l * sb]);
  return (s0 + s1) + (s2 + s3);
}

}  // namespace gemv_detail

// Note [Few-column GEMM]
// A product with 2 to kSweepMaxColumns columns (after the driver's
// orientation, or with A and B exchanged: C^T = B^T A^T) and long columns
// of A reads each element of A only n times. The blocked path packed all of
// A, the large operand, for register tiles of nr >= 8 columns with most of
// them empty, and the thin-M path ran tiles of 8 rows with 2 to 4 valid:
// x @ W with x 4 x 500 and W 500 x 500 took 112 us against numpy's 45, and
// 2 to 8 rows ran at 0.33-0.52 of numpy (the Xeon VM, 2026-12-07).
// sweep_columns reads A in place, once, along its unit stride, as sweep_sum
// does for one column: a chunk of rows keeps its n sums per row in an L1
// buffer while the depth runs Q steps at a time, the Q x n values of B
// broadcast once per chunk and held in registers (Q as large as the ISA's
// registers allow, up to 8: at 4, 4 x 300 by 300 x 400 ran at 0.96-0.99
// of numpy, at 8 1.00-1.10). Rows past the last whole vector are summed in
// scalars. Complex types keep a second set of sums, A's lanes swapped times
// B's imaginary parts, as sweep_sum does. Each element of C sums its depth
// in order, in the same code whichever rows a call covers (the driver
// splits at multiples of kGemvRowGrain), so results do not depend on the
// thread count.
inline constexpr std::int64_t kSweepMaxColumns = 8;
// Complex products sweep at most 4 columns: their two sets of sums leave
// few registers for B's values, and 8 x 500 by 500 x 500 complex ran at
// 0.66-0.68 of numpy swept against 1.07-1.14 blocked (2 and 3 rows: 0.59
// -> 1.82 complex64, 0.88 -> 1.56 complex128).
inline constexpr std::int64_t kSweepMaxComplexColumns = 4;

/// The most columns sweep_columns takes for element type T.
template <class T>
inline constexpr std::int64_t sweep_max_columns() {
  return std::is_floating_point_v<T> ? kSweepMaxColumns : kSweepMaxComplexColumns;
}

namespace gemv_detail {

template <class Isa, class T, int NC>
void sweep_columns_n(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr bool kCx = kComplex<Isa, T>;
  constexpr std::int64_t L = Isa::kLanes;
  constexpr std::int64_t P = kPer<Isa, T>;  // elements of T per vector
  constexpr int kRegisters = sizeof(V) >= 64 ? 32 : 16;
  // Complex: a second set of sums, x swapped times the imaginary parts.
  constexpr int kSets = kCx ? 2 : 1;
  constexpr int Q = std::clamp((kRegisters - kSets - kSets * NC) / (kSets * NC), 1, 8);
  // 16 KB of sums in all: slot v (P rows) holds its NC columns' vectors in turn.
  constexpr std::int64_t kChunk = std::max<std::int64_t>(P, 16384 / (kSets * NC * std::int64_t{sizeof(T)}) / P * P);
  alignas(64) S acc[kChunk * NC * (kCx ? 2 : 1)];
  alignas(64) S acc2[kCx ? kChunk * NC * 2 : 1];
  const std::int64_t k = p.k;
  const std::int64_t vec_end = i0 + (i1 - i0) / P * P;
  for (std::int64_t ic = i0; ic < vec_end; ic += kChunk) {
    const std::int64_t slots = std::min(kChunk, vec_end - ic) / P;
    std::fill_n(acc, slots * NC * L, S(0));
    if constexpr (kCx) std::fill_n(acc2, slots * NC * L, S(0));
    const T* a = p.a + ic;
    auto steps = [&]<int QQ>(std::int64_t l) TENFERRO_GEMV_INLINE {
      V y[QQ][NC], yi[QQ][kCx ? NC : 1];  // B's values (complex: real parts), imaginary parts
      for (int q = 0; q < QQ; ++q) {
        for (int j = 0; j < NC; ++j) {
          const T t = p.b[(l + q) * p.rsb + j * p.csb];
          if constexpr (kCx) {
            y[q][j] = Isa::set1(t.real());
            yi[q][j] = Isa::set1(t.imag());
          } else {
            y[q][j] = Isa::set1(t);
          }
        }
      }
      for (std::int64_t v = 0; v < slots; ++v) {
        S* s = acc + v * NC * L;
        S* s2 = acc2 + (kCx ? v * NC * L : 0);
        V sum[NC], sum2[kCx ? NC : 1];
        for (int j = 0; j < NC; ++j) sum[j] = Isa::load(s + j * L);
        if constexpr (kCx) {
          for (int j = 0; j < NC; ++j) sum2[j] = Isa::load(s2 + j * L);
        }
        for (int q = 0; q < QQ; ++q) {
          const V x = Isa::loadu(reinterpret_cast<const S*>(a + v * P + (l + q) * p.csa));
          for (int j = 0; j < NC; ++j) sum[j] = Isa::fmadd(x, y[q][j], sum[j]);
          if constexpr (kCx) {
            const V xs = Isa::swap_pairs(x);
            for (int j = 0; j < NC; ++j) sum2[j] = Isa::fmadd(xs, yi[q][j], sum2[j]);
          }
        }
        for (int j = 0; j < NC; ++j) Isa::storeu(s + j * L, sum[j]);
        if constexpr (kCx) {
          for (int j = 0; j < NC; ++j) Isa::storeu(s2 + j * L, sum2[j]);
        }
      }
    };
    std::int64_t l = 0;
    for (; l + Q <= k; l += Q) steps.template operator()<Q>(l);
    for (; l < k; ++l) steps.template operator()<1>(l);
    for (std::int64_t v = 0; v < slots; ++v) {
      for (int j = 0; j < NC; ++j) {
        const S* s = acc + (v * NC + j) * L;
        for (std::int64_t e = 0; e < P; ++e) {
          T sum;
          if constexpr (kCx) {
            // Even lanes xr yr (minus xi yi), odd lanes xi yr (plus xr yi).
            const S* s2 = acc2 + (v * NC + j) * L;
            sum = T(s[2 * e] - s2[2 * e], s[2 * e + 1] + s2[2 * e + 1]);
          } else {
            sum = s[e];
          }
          write_c(p.c + (ic + v * P + e) * p.rsc + j * p.csc, sum, p.alpha, p.beta);
        }
      }
    }
  }
  for (std::int64_t i = vec_end; i < i1; ++i) {
    for (int j = 0; j < NC; ++j) {
      T s(0);
      for (std::int64_t l = 0; l < k; ++l) s += plain_mul(p.a[i + l * p.csa], p.b[l * p.rsb + j * p.csb]);
      write_c(p.c + i * p.rsc + j * p.csc, s, p.alpha, p.beta);
    }
  }
}

}  // namespace gemv_detail

/// Rows [i0, i1) of C for a problem with A's columns contiguous (rsa == 1)
/// and 2 <= n <= sweep_max_columns<T>() (Note [Few-column GEMM]): the
/// instance for n columns, found from NC up.
template <class Isa, class T, int NC = 2>
void sweep_columns(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  if constexpr (NC < sweep_max_columns<T>()) {
    if (p.n > NC) return sweep_columns<Isa, T, NC + 1>(p, i0, i1);
  }
  gemv_detail::sweep_columns_n<Isa, T, NC>(p, i0, i1);
}

// Note [Short rows]
// Rows shorter than a vector (`ij,j->i` at 7500 x 4 float32: 14.5 us
// against numpy's dot at 4; the shape-sweep audit of 2026-12-07) ran
// scalar_dot with the depth known only at run time: a loop of a few
// iterations per row. short_rows_of<K> has the depth as a constant and b
// in registers, so the rows are straight-line code that the compiler
// vectorises across rows where A is dense (row stride K); each row still
// sums a[0] b[0] + a[1] b[1] + ... in order, as scalar_dot does for k < 8.
inline constexpr std::int64_t kShortRowMax = 8;

/// Whether gemv_rows runs `p` (n == 1) as short rows: rows contiguous and
/// shorter than kShortRowMax, A's columns not (those are swept).
template <class T>
inline bool runs_short_rows(const TypedProblem<T>& p) {
  return p.csa == 1 && p.k < kShortRowMax && !(p.rsa == 1 && p.m > 1);
}

template <class T, int K>
void short_rows_of(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  T x[K];
  for (int l = 0; l < K; ++l) x[l] = p.b[l * p.rsb];
  const auto row = [&](const T* a) TENFERRO_GEMV_INLINE {
    T s = plain_mul(a[0], x[0]);
#pragma GCC unroll 8
    for (int l = 1; l < K; ++l) s += plain_mul(a[l], x[l]);
    return s;
  };
  if (p.rsc == 1 && p.alpha == T(1) && p.beta == T(0)) {
    T* __restrict c = p.c;
    if (p.rsa == K) {
      const T* __restrict a = p.a;
      for (std::int64_t i = i0; i < i1; ++i) c[i] = row(a + i * K);
    } else {
      for (std::int64_t i = i0; i < i1; ++i) c[i] = row(p.a + i * p.rsa);
    }
    return;
  }
  for (std::int64_t i = i0; i < i1; ++i) gemv_detail::write_c(p.c + i * p.rsc, row(p.a + i * p.rsa), p.alpha, p.beta);
}

template <class T, int K = 1>
void short_rows(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  if constexpr (K + 1 < kShortRowMax) {
    if (p.k > K) return short_rows<T, K + 1>(p, i0, i1);
  }
  short_rows_of<T, K>(p, i0, i1);
}

/// Rows [i0, i1) of C for a problem with n == 1 (Note [Matrix-vector GEMM]).
template <class Isa, class T>
void gemv_rows(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  using namespace gemv_detail;
  if (p.rsa == 1 && p.m > 1) {
    sweep_sum<Isa, T, true>(p.k, p.a, p.csa, p.b, p.rsb, p.alpha, p.beta, p.c, p.rsc, i0, i1);
    return;
  }
  if (runs_short_rows(p)) {
    short_rows<T>(p, i0, i1);
    return;
  }
  // Shorter rows run the scalar loop; complex ones below two vectors too
  // (`ij,j->i` at 7500 x 4 complex128: 83 us through dot_rows' per-row
  // reductions, 29 us in scalars; numpy 21).
  if (p.csa == 1 && p.rsb == 1 && p.k >= (kComplex<Isa, T> ? 2 : 1) * kPer<Isa, T>) {
    constexpr int kRows = kComplex<Isa, T> ? 2 : 4;  // rows sharing each load of b
    T s[kRows];
    std::int64_t i = i0;
    for (; i + kRows <= i1; i += kRows) {
      dot_rows<Isa, T, kRows>(p.k, p.a + i * p.rsa, p.rsa, p.b, s);
      for (int r = 0; r < kRows; ++r) write_c(p.c + (i + r) * p.rsc, s[r], p.alpha, p.beta);
    }
    for (; i < i1; ++i) {
      dot_rows<Isa, T, 1>(p.k, p.a + i * p.rsa, 0, p.b, s);
      write_c(p.c + i * p.rsc, s[0], p.alpha, p.beta);
    }
    return;
  }
  for (std::int64_t i = i0; i < i1; ++i) {
    write_c(p.c + i * p.rsc, scalar_dot(p.k, p.a + i * p.rsa, p.csa, p.b, p.rsb), p.alpha, p.beta);
  }
}

// Note [Complex dot columns]
// The tall dot-shaped complex products of Note [Tall dot-shaped GEMM]
// (native_gemm.cpp) ran one matrix-vector pass per column over L1-sized
// row chunks: a pass loads a vector of B per vector of A, so at 4-8
// columns the loads set the pace (4096 x 256 by 256 x 8 complex64: 0.69
// of numpy's). dot_columns computes a block of R rows by up to 4 columns
// per pass instead: each step loads R vectors of A and the block's vectors
// of B (and their swapped pairs) for 2 R NC multiply-adds. The sums start
// at each row's first element (no head to a cache line), so an element's
// order of additions does not depend on which rows share its block, and a
// split over the workers does not change the results.

/// out[r][q] = sum over l of a_r[l] b_q[l] for R rows (a + r * lda) and NC
/// columns (b + q * ldb), all contiguous complex.
template <class Isa, class T, int R, int NC>
inline void dot_block(std::int64_t k, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T (&out)[R][NC]) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr std::int64_t P = gemv_detail::kPer<Isa, T>;
  constexpr int L = Isa::kLanes;
  const S* as[R];
  const S* bs[NC];
  for (int r = 0; r < R; ++r) as[r] = reinterpret_cast<const S*>(a + r * lda);
  for (int q = 0; q < NC; ++q) bs[q] = reinterpret_cast<const S*>(b + q * ldb);
  V acc[R][NC];
  V acc2[R][NC];  // x * swap(y)
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NC; ++q) acc[r][q] = acc2[r][q] = Isa::zero();
  std::int64_t l = 0;
  for (; l + P <= k; l += P) {
    V y[NC];
    V z[NC];
#pragma GCC unroll 4
    for (int q = 0; q < NC; ++q) {
      y[q] = Isa::loadu(bs[q] + 2 * l);
      z[q] = Isa::swap_pairs(y[q]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V x = Isa::loadu(as[r] + 2 * l);
#pragma GCC unroll 4
      for (int q = 0; q < NC; ++q) {
        acc[r][q] = Isa::fmadd(x, y[q], acc[r][q]);
        acc2[r][q] = Isa::fmadd(x, z[q], acc2[r][q]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < NC; ++q) {
      S v[L], w[L];
      gemv_detail::spill<Isa>(acc[r][q], v);
      gemv_detail::spill<Isa>(acc2[r][q], w);
      S re[L / 2], im[L / 2];
      for (int i = 0; i < L / 2; ++i) {
        re[i] = v[2 * i] - v[2 * i + 1];
        im[i] = w[2 * i] + w[2 * i + 1];
      }
      T sum(gemv_detail::tree_sum<L / 2>(re), gemv_detail::tree_sum<L / 2>(im));
      for (std::int64_t e = l; e < k; ++e) sum += plain_mul(a[r * lda + e], b[q * ldb + e]);
      out[r][q] = sum;
    }
  }
}

// Rows [i0, i1) by the NC columns from q0 in blocks of kDotBlockRows rows.
template <class Isa, class T, int NC>
void dot_column_group(const TypedProblem<T>& p, std::int64_t q0, std::int64_t i0, std::int64_t i1) {
  // 2 R NC sums and 2 NC + 1 operand vectors: 25 of AVX-512's 32 registers
  // at R = 2, NC = 4; one row at a time in 16.
  constexpr int R = sizeof(typename Isa::V) >= 64 ? 2 : 1;
  const T* b = p.b + q0 * p.csb;
  T* c = p.c + q0 * p.csc;
  std::int64_t i = i0;
  for (; i + R <= i1; i += R) {
    T s[R][NC];
    dot_block<Isa, T, R, NC>(p.k, p.a + i * p.rsa, p.rsa, b, p.csb, s);
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < NC; ++q) gemv_detail::write_c(c + (i + r) * p.rsc + q * p.csc, s[r][q], p.alpha, p.beta);
  }
  for (; i < i1; ++i) {
    T s[1][NC];
    dot_block<Isa, T, 1, NC>(p.k, p.a + i * p.rsa, p.rsa, b, p.csb, s);
    for (int q = 0; q < NC; ++q) gemv_detail::write_c(c + i * p.rsc + q * p.csc, s[0][q], p.alpha, p.beta);
  }
}

/// Rows [i0, i1) of a complex problem with A's rows and B's columns
/// contiguous along the depth (csa == rsb == 1) and at most
/// kSweepMaxColumns columns, all columns of a block of rows per pass (Note
/// [Complex dot columns]).
template <class Isa, class T>
void dot_columns(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) {
  for (std::int64_t q0 = 0; q0 < p.n; q0 += 4) {
    switch (std::min<std::int64_t>(4, p.n - q0)) {
      case 1:
        dot_column_group<Isa, T, 1>(p, q0, i0, i1);
        break;
      case 2:
        dot_column_group<Isa, T, 2>(p, q0, i0, i1);
        break;
      case 3:
        dot_column_group<Isa, T, 3>(p, q0, i0, i1);
        break;
      default:
        dot_column_group<Isa, T, 4>(p, q0, i0, i1);
        break;
    }
  }
}

/// Whether gemv_batch runs a batch (members with n == 1, batch strides sa
/// and sb) in vector lanes across it (Note [Batched dot products]).
template <class T>
inline bool runs_in_lanes(const TypedProblem<T>& p, std::int64_t sa, std::int64_t sb) {
  return p.m == 1 && sa == 1 && sb == 1 && p.csa != 1 && p.rsb != 1;
}

/// Members [j0, j1) of a batch of problems with n == 1, member j's A, B and
/// C at p.a + j * sa, p.b + j * sb, p.c + j * sc. Depth-only members with
/// sa == sb == 1 whose depth strides are not 1 run in vector lanes across
/// the batch (Note [Batched dot products]); others one after another.
template <class Isa, class T>
void gemv_batch(const TypedProblem<T>& p, std::int64_t sa, std::int64_t sb, std::int64_t sc, std::int64_t j0,
                std::int64_t j1) {
  if (runs_in_lanes(p, sa, sb)) {
    gemv_detail::sweep_sum<Isa, T, false>(p.k, p.a, p.csa, p.b, p.rsb, p.alpha, p.beta, p.c, sc, j0, j1);
    return;
  }
  if (p.m == 1 && !(p.csa == 1 && p.rsb == 1 && p.k >= 4 * gemv_detail::kPer<Isa, T>)) {
    // Short (or strided) dot products in scalar_dot, without a call per
    // member (`ij,ij->i` over rows of 3).
    const bool plain = p.alpha == T(1) && p.beta == T(0);
    for (std::int64_t j = j0; j < j1; ++j) {
      const T s = gemv_detail::scalar_dot(p.k, p.a + j * sa, p.csa, p.b + j * sb, p.rsb);
      if (plain) {
        p.c[j * sc] = s;
      } else {
        gemv_detail::write_c(p.c + j * sc, s, p.alpha, p.beta);
      }
    }
    return;
  }
  for (std::int64_t j = j0; j < j1; ++j) {
    TypedProblem<T> one = p;
    one.a += j * sa;
    one.b += j * sb;
    one.c += j * sc;
    gemv_rows<Isa, T>(one, 0, one.m);
  }
}

}  // namespace tenferro::cpu::internal

#undef TENFERRO_GEMV_INLINE
