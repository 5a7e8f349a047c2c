// Micro-kernel and packing templates shared by the ISA translation units.
// Each TU instantiates them with its own vector wrapper `Isa` (defined in an
// anonymous namespace), so instantiations compiled with different target
// flags never share a symbol name (Note [ISA translation units]).
//
// Isa provides: S (float/double), V (vector), kLanes, kTransposeIsa,
// kPackGroupBytes (Note [Grouped packing]), zero, load (aligned),
// loadu, storeu, set1, fmadd(a, b, c) = a*b + c, mul, swap_pairs (exchange
// lanes 2i and 2i+1), fmaddsub(a, b, c) = a*b - c on even lanes, a*b + c on
// odd lanes; for the row-vector kernel, transpose (an L x L block).
// Optionally load_first(p, count): lanes 0 .. count-1 from p, the others
// zero, reading nothing past them (masked loads; Note [Matrix-vector GEMM]).
//
// Note [ISA translation units]
// gemm_kernels_avx512.cpp and gemm_kernels_avx2.cpp are compiled with
// -mavx512*/-mavx2 flags regardless of the TENFERRO_ARCH compile target,
// and gemm_kernels_portable.cpp with the project's flags. The AVX2 unit also
// gets -mno-avx512f: built with -march=native on an AVX-512 machine it would
// otherwise use EVEX encodings and 32 vector registers, so an ISA cap there
// (Note [ISA cap]) would not measure the code an AVX2-only CPU runs. The
// driver calls a table only after checking the CPU (cpu_supports() in
// tenferro/cpu/cpu_isa.h), so a build for a generic x86-64 target still runs
// everywhere and uses AVX-512 where present. A table's packing routines use
// the register-tile transposes of its own ISA (Isa::kTransposeIsa), so an
// ISA cap (Note [ISA cap]) covers them too.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/gemm/native/complex_small_tiles.h"
#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/gemv_kernels.h"
#include "cpu/kernels/transpose_micro.h"

namespace tenferro::cpu::internal {

/// C[0:m_valid, 0:n_valid] = alpha * tile + beta * C for an edge tile (tile
/// element (i, j) at tile[i * ts_i + j * ts_j]); beta == 0 never reads C.
template <class S>
inline void store_tile(const S* tile, std::int64_t ts_i, std::int64_t ts_j, S alpha, S beta, S* c, std::int64_t rs_c,
                       std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid) {
  for (std::int64_t j = 0; j < n_valid; ++j) {
    for (std::int64_t i = 0; i < m_valid; ++i) {
      S& cij = c[i * rs_c + j * cs_c];
      const S t = tile[i * ts_i + j * ts_j];
      cij = beta == S(0) ? alpha * t : alpha * t + beta * cij;
    }
  }
}

// Note [C tile prefetch]
// A micro-kernel that will update a whole tile of C prefetches it before
// its depth loop: with C larger than the caches (n = 1024 complex<double>,
// 16 MB) each tile's update otherwise waited on memory once per depth
// block. Every 64-byte line of each column's `kCount` elements is
// prefetched, the last element's too, for a column that does not start on
// a line. The complex kernels prefetched nothing, the real ones the first
// line of each column. On the Zen 5 VM's AVX-512 kernels at one thread,
// n >= 1024, the ratio to OpenBLAS rose in 17 of 19 back-to-back pairs
// (medians +1 to +3.5 %); under the AVX2 cap the change was within the
// noise (docs/performance_notes.md). A tile of a short depth (k < 64) is not
// prefetched: a depth-32 step with a tall output (1000 x 32 x 32 float64
// `bij,jk->bik`, 2 x 2 tiles a column pair) spent a sixth of its time on
// the 32 prefetchw of each 24 x 8 tile, waiting for fill buffers, where the
// stores alone drain while the next tile computes.

/// Prefetches for writing the kCount elements at c + j * ld, j < kColumns.
template <int kCount, int kColumns, class S>
inline void prefetch_c_tile(const S* c, std::int64_t ld) {
  constexpr int kLine = 64 / static_cast<int>(sizeof(S));
#pragma GCC unroll 16
  for (int j = 0; j < kColumns; ++j) {
#pragma GCC unroll 8
    for (int o = 0; o < kCount; o += kLine) __builtin_prefetch(c + j * ld + o, 1, 3);
    if constexpr (kCount > 1) __builtin_prefetch(c + j * ld + kCount - 1, 1, 3);
  }
}

// Note [Prefetching B in place]
// An in-place B (Note [Unpacked B] in native_gemm.cpp) is read once, often
// straight from memory: in a matrix chain each step's B is an input no
// earlier step touched. The tile walks NR columns for only kc depth steps,
// too short a stream for the hardware prefetchers, so the loads waited on
// memory: the 21 x 503 by 503 x 453 step of
// str_matrix_chain_multiplication_100 read B at about 3 GB/s (numpy's
// OpenBLAS too) where a streaming read runs at 14. Each depth step therefore
// prefetches kInPlaceBAhead steps ahead, two lines: one column in turn (with
// B's depth contiguous each column's next line comes up every NR steps) and
// the last column (with B's columns contiguous the two ends of the step's
// row). On the Xeon VM the whole chain ran in 12.3-12.7 ms instead of
// 16.7-17.3 (median of 40; 16 and 64 steps ahead 13.2-13.6 and 12.6-13.4,
// every column each step no better); the warm in-place case
// (lm_batch_likelihood_brackets_4_4d) did not change
// (docs/performance_notes.md).
inline constexpr std::int64_t kInPlaceBAhead = 32;

// Note [Depth-contiguous B in place]
// With B's depth contiguous (rs_b == 1: a row-major operand times a small
// matrix, `bij,jk->bik`, oriented so the small matrix is A) each column's
// next cache line comes up every line-worth of depth steps. The kernel runs
// such a B in blocks of one line of steps: one prefetch per column per block
// (not two a step through a table on the stack), and each step's broadcasts
// at constant offsets from the block's start. 1000 x 32 x 32 float64
// `bij,jk->bik` went from 0.79-0.83 to 0.99-1.03 of numpy's batched matmul
// (with the C-tile change above; docs/performance_notes.md, "Tall
// products").

// Note [Edge tiles]
// M is rarely a multiple of MR (24 doubles on AVX-512: 128 = 5 x 24 + 8), and
// a full-width kernel on the last tile computes zero rows: at m = 128 it
// spends 1/6 of the FMAs on padding. real_kernel_entry runs such a tile with
// the narrowest kernel that covers its valid rows, reading a prefix of each
// depth step of the (full-width) packed panel.
//
// MV vectors of A rows x NR columns of B per depth step; consecutive depth
// steps of the A panel are MRS elements apart (MRS >= MV * lanes: the edge
// variants below read a prefix of a wider panel).
//
// With kInPlaceB, B is not a packed panel but the operand itself: column j,
// depth step p at b[p * rs_b + j * cs_b] (Note [Unpacked B] in
// native_gemm.cpp). Columns past n_valid re-read the last valid column, so
// nothing outside the operand is touched; their sums are never stored.
template <class Isa, int MV, int NR, int MRS = MV* Isa::kLanes, bool kInPlaceB = false>
inline void real_micro_kernel(std::int64_t k, const typename Isa::S* __restrict a, const typename Isa::S* __restrict b,
                              typename Isa::S alpha, typename Isa::S beta, typename Isa::S* c, std::int64_t rs_c,
                              std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid, std::int64_t rs_b = 0,
                              std::int64_t cs_b = 0) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;
  constexpr int MR = MV * L;
  [[maybe_unused]] std::int64_t b_col[NR];
  if constexpr (kInPlaceB) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) b_col[j] = std::min<std::int64_t>(j, n_valid - 1) * cs_b;
  }
  V acc[MV][NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) acc[v][j] = Isa::zero();
  const bool full_unit = m_valid == MR && n_valid == NR && rs_c == 1;
  if (full_unit && k >= 64) prefetch_c_tile<MR, NR>(c, cs_c);
  // acc += (MV vectors of A at ap) x (the NR values b_at(0 .. NR-1)).
  auto fma_step = [&acc](const S* ap, auto b_at) {
    V av[MV];
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) av[v] = Isa::load(ap + v * L);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const V bj = Isa::set1(b_at(j));
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) acc[v][j] = Isa::fmadd(av[v], bj, acc[v][j]);
    }
  };
  std::int64_t p = 0;
  if constexpr (kInPlaceB) {
    if (rs_b == 1) {  // Note [Depth-contiguous B in place]
      constexpr int kLine = 64 / static_cast<int>(sizeof(S));
      for (; p + kLine <= k; p += kLine) {
#pragma GCC unroll 16
        for (int j = 0; j < NR; ++j) __builtin_prefetch(b + b_col[j] + kInPlaceBAhead, 0, 3);
        __builtin_prefetch(a + 8 * MRS, 0, 3);
#pragma GCC unroll 16
        for (int q = 0; q < kLine; ++q) fma_step(a + q * MRS, [&](int j) { return b[b_col[j] + q]; });
        a += kLine * MRS;
        b += kLine;
      }
    }
  }
  [[maybe_unused]] const std::int64_t b_ahead = kInPlaceBAhead * rs_b;
#pragma GCC unroll 4
  for (; p < k; ++p) {
    __builtin_prefetch(a + 8 * MRS, 0, 3);
    if constexpr (kInPlaceB) {  // Note [Prefetching B in place]
      __builtin_prefetch(b + b_ahead + b_col[p % NR], 0, 3);
      __builtin_prefetch(b + b_ahead + b_col[NR - 1], 0, 3);
      fma_step(a, [&](int j) { return b[b_col[j]]; });
    } else {
      fma_step(a, [&](int j) { return b[j]; });
    }
    a += MRS;
    b += kInPlaceB ? rs_b : NR;
  }
  if (full_unit) {
    const V va = Isa::set1(alpha);
    if (beta == S(0)) {
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < MV; ++v) Isa::storeu(c + j * cs_c + v * L, Isa::mul(va, acc[v][j]));
    } else {
      const V vb = Isa::set1(beta);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < MV; ++v) {
          S* cp = c + j * cs_c + v * L;
          Isa::storeu(cp, Isa::fmadd(va, acc[v][j], Isa::mul(vb, Isa::loadu(cp))));
        }
    }
    return;
  }
  alignas(64) S tile[MR * NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) Isa::storeu(tile + j * MR + v * L, acc[v][j]);
  store_tile(tile, 1, MR, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
}

// Note [Row-vector kernel]
// real_micro_kernel loads A's rows as vectors and broadcasts B's columns, so
// the operand it streams from L2 (A's micro-panels, walked for each B
// micro-panel held in L1) is its vector side: MR elements per depth step.
// On Zen 3 that stream held an 8 x 6 AVX2 dgemm at 0.89-0.96 of OpenBLAS,
// whose Zen kernel does the opposite: B's columns are the vectors (12 per
// step, from the L1-resident panel) and A's rows are broadcast (4 per
// step, 32 bytes from L2). real_row_micro_kernel is that orientation: the
// same packed layouts (A in MRB-row panels, B in NV * lanes-column panels),
// acc[v][i] = C(i, v*L .. v*L+L-1), and an L x L register transpose per
// vector before C, column-major, is stored. MRB == lanes. In a standalone
// copy of the blocked loop (n = 1008, best of 21, same process) it ran at
// 37.2-37.3 GFLOP/s against 33.2-35.1 for the 8 x 6 kernel and 36.7-39.3
// for OpenBLAS (docs/performance_notes.md). B is never read in place
// (its columns are the vectors), so a set built on this kernel keeps the
// 8 x 6 set for problems thin in M (GemmKernelSet::thin_m).
//
// NV vectors of B columns x MRB rows of A per depth step; consecutive steps
// of the B panel are NRS elements apart (NRS >= NV * lanes: the edge
// variants read a prefix of a wider panel). Isa provides transpose(V (&)[L]).
template <class Isa, int NV, int MRB, int NRS = NV* Isa::kLanes>
inline void real_row_micro_kernel(std::int64_t k, const typename Isa::S* __restrict a,
                                  const typename Isa::S* __restrict b, typename Isa::S alpha, typename Isa::S beta,
                                  typename Isa::S* c, std::int64_t rs_c, std::int64_t cs_c, std::int64_t m_valid,
                                  std::int64_t n_valid) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;
  constexpr int NR = NV * L;
  static_assert(MRB == L, "the store transposes L x L blocks");
  // alpha and beta wait in memory. The loop needs all 16 ymm registers (12
  // sums, 3 B vectors, 1 broadcast); with alpha and beta live in registers
  // across it, GCC 12 kept one sum on the stack, a store and reload per
  // step that cost a quarter of the speed (docs/performance_notes.md).
  volatile S alpha_mem = alpha;
  volatile S beta_mem = beta;
  V acc[NV][MRB];
#pragma GCC unroll 16
  for (int i = 0; i < MRB; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[v][i] = Isa::zero();
  const bool full_unit = m_valid == MRB && n_valid == NR && rs_c == 1;
  if (full_unit) prefetch_c_tile<MRB, NR>(c, cs_c);
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = Isa::load(b + v * L);
    __builtin_prefetch(a + 8 * MRB, 0, 3);
#pragma GCC unroll 16
    for (int i = 0; i < MRB; ++i) {
      const V ai = Isa::set1(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[v][i] = Isa::fmadd(bv[v], ai, acc[v][i]);
    }
    a += MRB;
    b += NRS;
  }
  alpha = alpha_mem;
  beta = beta_mem;
  if (full_unit) {
    const V va = Isa::set1(alpha);
    const V vb = Isa::set1(beta);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      Isa::transpose(acc[v]);  // acc[v][l]: rows 0..L-1 of column v*L + l
#pragma GCC unroll 16
      for (int l = 0; l < L; ++l) {
        S* cp = c + (v * L + l) * cs_c;
        Isa::storeu(cp,
                    beta == S(0) ? Isa::mul(va, acc[v][l]) : Isa::fmadd(va, acc[v][l], Isa::mul(vb, Isa::loadu(cp))));
      }
    }
    return;
  }
  alignas(64) S tile[MRB * NR];  // tile[i * NR + j] = C(i, j)
#pragma GCC unroll 16
  for (int i = 0; i < MRB; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) Isa::storeu(tile + i * NR + v * L, acc[v][i]);
  store_tile(tile, NR, 1, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
}

// Complex operands are interleaved (re, im) pairs. Per depth step the kernel
// multiplies each A vector by the broadcast real and imaginary parts of a B
// element into two accumulators; the complex products are formed once at
// the end: re = sum(ar*br) - sum(ai*bi), im = sum(ai*br) + sum(ar*bi).
template <class Isa, int MV, int NR>
inline void complex_micro_kernel(std::int64_t k, const std::complex<typename Isa::S>* a_panel,
                                 const std::complex<typename Isa::S>* b_panel, std::complex<typename Isa::S> alpha,
                                 std::complex<typename Isa::S> beta, std::complex<typename Isa::S>* c,
                                 std::int64_t rs_c, std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;  // reals per vector
  constexpr int CL = L / 2;       // complex per vector
  constexpr int MR = MV * CL;
  const S* __restrict a = reinterpret_cast<const S*>(a_panel);
  const S* __restrict b = reinterpret_cast<const S*>(b_panel);
  V accr[MV][NR];
  V acci[MV][NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) accr[v][j] = acci[v][j] = Isa::zero();
  const bool full_unit = m_valid == MR && n_valid == NR && rs_c == 1;
  if (full_unit) prefetch_c_tile<2 * MR, NR>(reinterpret_cast<const S*>(c), 2 * cs_c);
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < k; ++p) {
    V av[MV];
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) av[v] = Isa::load(a + v * L);
    __builtin_prefetch(a + 8 * MR * 2, 0, 3);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const V br = Isa::set1(b[2 * j]);
      const V bi = Isa::set1(b[2 * j + 1]);
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) {
        accr[v][j] = Isa::fmadd(av[v], br, accr[v][j]);
        acci[v][j] = Isa::fmadd(av[v], bi, acci[v][j]);
      }
    }
    a += 2 * MR;
    b += 2 * NR;
  }
  const V ones = Isa::set1(S(1));
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) {
      accr[v][j] = Isa::fmaddsub(accr[v][j], ones, Isa::swap_pairs(acci[v][j]));
      accr[v][j] = complex_scale<Isa>(accr[v][j], alpha.real(), alpha.imag());
    }
  if (full_unit) {
    S* cs = reinterpret_cast<S*>(c);
    const bool beta_zero = beta == std::complex<S>(0);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) {
        S* cp = cs + 2 * j * cs_c + v * L;
        V r = accr[v][j];
        if (!beta_zero) r = Isa::fmadd(complex_scale<Isa>(Isa::loadu(cp), beta.real(), beta.imag()), ones, r);
        Isa::storeu(cp, r);
      }
    return;
  }
  alignas(64) S tile[2 * MR * NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) Isa::storeu(tile + 2 * j * MR + v * L, accr[v][j]);
  for (std::int64_t j = 0; j < n_valid; ++j) {
    for (std::int64_t i = 0; i < m_valid; ++i) {
      S* cij = reinterpret_cast<S*>(c + i * rs_c + j * cs_c);
      const S tr = tile[2 * (j * MR + i)];
      const S ti = tile[2 * (j * MR + i) + 1];
      if (beta == std::complex<S>(0)) {
        cij[0] = tr;
        cij[1] = ti;
      } else {
        const S cr = cij[0];
        const S ci = cij[1];
        cij[0] = tr + beta.real() * cr - beta.imag() * ci;
        cij[1] = ti + beta.real() * ci + beta.imag() * cr;
      }
    }
  }
}

// Note [Transposing packs]
// A panel of R rows (of A) or columns (of B) whose elements are contiguous
// along the depth -- A row-major, or B column-major, as the transposed
// operands of a backward pass are -- is transposed while packed: panel step
// p holds element p of each of the R source lines. Copied one element at a
// time this cost ~1 cycle per element, a sixth of a 128^3 dgemm; the layout
// kernel's register-tile transposes (cpu/kernels/transpose_micro.h) move
// W x W blocks through vector registers instead. The depth remainder is
// copied element-wise. Kernel sets whose Isa transposes its own L x L
// blocks (RegisterTransposes: the AVX2 float and double sets) transpose
// inline, and a panel narrower than a block -- the AVX2 float B panel of 6
// columns, L = 8 -- loads zeros for the missing lines and stores the first
// R lanes of each step in plain 16- and 8-byte stores (AVX2 masked stores
// are microcoded on Zen 2 and 3). Copied element-wise, those
// 6-column panels made a 64^3 sgemm 0.92 of OpenBLAS, through a stack tile
// (store-forwarding stalls) 0.88, inline 0.99-1.00 (docs/performance_notes.md).

/// Whether Isa transposes L x L blocks of T in registers and stores a
/// vector's first lanes (Avx2S, Avx2D).
template <class Isa, class T>
concept RegisterTransposes = std::is_same_v<T, typename Isa::S> && requires(typename Isa::V (&r)[Isa::kLanes], T* p) {
  Isa::transpose(r);
  Isa::store_first(p, r[0], 1);
};

/// dst[p * R + i] = src[i * ld + p] for i < R, p < kc.
template <class Isa, class T, int R>
inline void interleave_rows(std::int64_t kc, const T* src, std::int64_t ld, T* dst) {
  std::int64_t p_end = 0;
  if constexpr (RegisterTransposes<Isa, T>) {
    using V = typename Isa::V;
    constexpr int L = Isa::kLanes;
    p_end = kc / L * L;
    for (std::int64_t p0 = 0; p0 < p_end; p0 += L) {
#pragma GCC unroll 4
      for (int i0 = 0; i0 < R; i0 += L) {
        const int h = std::min(L, R - i0);  // a known constant once unrolled
        V r[L];
#pragma GCC unroll 16
        for (int i = 0; i < L; ++i) r[i] = i < h ? Isa::loadu(src + (i0 + i) * ld + p0) : Isa::zero();
        Isa::transpose(r);
#pragma GCC unroll 16
        for (int l = 0; l < L; ++l) {
          T* d = dst + (p0 + l) * R + i0;
          if (h == L) {
            Isa::storeu(d, r[l]);
          } else {
            Isa::store_first(d, r[l], h);
          }
        }
      }
    }
  } else {
    TileTranspose tile = select_tile_transpose(sizeof(T), Isa::kTransposeIsa);
    if (Isa::kTransposeIsa == CpuIsa::kAvx512 && tile.width > 0 && R % tile.width != 0) {
      // The narrower AVX2 tiles, which every AVX-512 CPU runs: the 4-wide
      // complex<float> B panels of the AVX-512 set take 4 x 4 tiles.
      tile = select_tile_transpose(sizeof(T), CpuIsa::kAvx2);
    }
    if (tile.width > 0 && tile.width <= 16 && R % tile.width == 0) {  // rows/cols hold 16
      const std::int64_t w = tile.width;
      p_end = kc / w * w;
      const char* rows[16];
      char* cols[16];
      for (std::int64_t i0 = 0; i0 < R; i0 += w) {
        for (std::int64_t r = 0; r < w; ++r) {
          rows[r] = reinterpret_cast<const char*>(src + (i0 + r) * ld);
          cols[r] = reinterpret_cast<char*>(dst + r * R + i0);
        }
        for (std::int64_t p0 = 0; p0 < p_end; p0 += w) {
          tile.run(rows, p0 * static_cast<std::int64_t>(sizeof(T)), cols, p0 * R * static_cast<std::int64_t>(sizeof(T)),
                   /*streaming=*/false);
        }
      }
    }
  }
  for (std::int64_t p = p_end; p < kc; ++p) {
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) dst[p * R + i] = src[i * ld + p];
  }
}

// Note [Grouped packing]
// Packing lines that are adjacent in memory (A column-major, B row-major)
// reads R elements at each depth step, one stride `ds` apart: with a
// 256 x 256 complex<double> A that is one 64-byte line per 4 KB page, which
// neither the L1 (every line maps to one set) nor the prefetchers (they stop
// at page boundaries) help, so panel by panel the pack waited on L2 for
// every line. Each depth step now copies kPackGroupBytes of the source line
// into the next few panels at once, so each page visited yields several
// lines. Isa::kPackGroupBytes sets the group: 256 bytes for AVX2 (measured
// on Zen 3, docs/performance_notes.md); 0, one panel at a time, for AVX-512
// and portable builds. On the AVX-512 Xeon, walking one step of every panel,
// or of groups of panels, at a time made the destinations, a whole panel
// apart, alias in L1 (`tenferro bench ad`), and the 256-byte group has not
// been measured there.

/// Packs `lines` lines of `depth` elements (line l, step p at src[l * ls +
/// p * ds]) into R-line micro-panels: panel q holds, for each step p, the R
/// elements of lines q*R .. q*R+R-1 (zeros past `lines`). A is packed with
/// its rows as lines, B with its columns (see GemmKernelSet).
template <class Isa, class T, int R>
void pack_panels(std::int64_t lines, std::int64_t depth, const T* src, std::int64_t ls, std::int64_t ds, T* dst) {
  const std::int64_t full = lines / R;
  const std::int64_t panel = R * depth;
  if (ls == 1) {
    // Lines adjacent in memory (Note [Grouped packing]).
    constexpr std::int64_t kGroup = std::max<std::int64_t>(1, Isa::kPackGroupBytes / std::int64_t(R * sizeof(T)));
    for (std::int64_t q = 0; q < full; q += kGroup) {
      const std::int64_t group = std::min(kGroup, full - q);
      for (std::int64_t p = 0; p < depth; ++p) {
        const T* s = src + p * ds + q * R;
        T* d = dst + q * panel + p * R;
        for (std::int64_t g = 0; g < group; ++g) std::memcpy(d + g * panel, s + g * R, R * sizeof(T));
      }
    }
  } else if (ds == 1) {
    for (std::int64_t q = 0; q < full; ++q) interleave_rows<Isa, T, R>(depth, src + q * R * ls, ls, dst + q * panel);
  } else {
    for (std::int64_t q = 0; q < full; ++q) {
      for (std::int64_t p = 0; p < depth; ++p) {
        const T* s = src + q * R * ls + p * ds;
        T* d = dst + q * panel + p * R;
        for (int i = 0; i < R; ++i) d[i] = s[i * ls];
      }
    }
  }
  const std::int64_t tail = lines - full * R;
  if (tail > 0) {
    for (std::int64_t p = 0; p < depth; ++p) {
      const T* s = src + full * R * ls + p * ds;
      T* d = dst + full * panel + p * R;
      for (int i = 0; i < R; ++i) d[i] = i < tail ? s[i * ls] : T(0);
    }
  }
}

/// Packs an mc x kc block of A into MR-row micro-panels (see GemmKernelSet).
template <class Isa, class T, int MR>
void pack_a_panels(std::int64_t mc, std::int64_t kc, const T* a, std::int64_t rs, std::int64_t cs, T* dst) {
  pack_panels<Isa, T, MR>(mc, kc, a, rs, cs, dst);
}

/// Packs a kc x nc block of B into NR-column micro-panels.
template <class Isa, class T, int NR>
void pack_b_panels(std::int64_t kc, std::int64_t nc, const T* b, std::int64_t rs, std::int64_t cs, T* dst) {
  pack_panels<Isa, T, NR>(nc, kc, b, cs, rs, dst);
}

/// Adapts the real kernel to the GemmKernelSet signature. A tile with at
/// most (MV - 1) vectors of valid rows runs a narrower kernel over the same
/// panel (Note [Edge tiles]).
template <class Isa, int MV, int NR, int MRS = MV* Isa::kLanes>
void real_kernel_entry(std::int64_t k, const typename Isa::S* a, const typename Isa::S* b, typename Isa::S alpha,
                       typename Isa::S beta, typename Isa::S* c, std::int64_t rs_c, std::int64_t cs_c,
                       std::int64_t m_valid, std::int64_t n_valid) {
  if constexpr (MV > 1) {
    if (m_valid <= (MV - 1) * Isa::kLanes) {
      real_kernel_entry<Isa, MV - 1, NR, MRS>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
      return;
    }
  }
  real_micro_kernel<Isa, MV, NR, MRS>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
}

/// real_kernel_entry with B read in place at element strides (rs_b along
/// the depth, cs_b along the columns) instead of from a packed panel.
template <class Isa, int MV, int NR, int MRS = MV* Isa::kLanes>
void real_kernel_entry_in_place_b(std::int64_t k, const typename Isa::S* a, const typename Isa::S* b, std::int64_t rs_b,
                                  std::int64_t cs_b, typename Isa::S alpha, typename Isa::S beta, typename Isa::S* c,
                                  std::int64_t rs_c, std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid) {
  if constexpr (MV > 1) {
    if (m_valid <= (MV - 1) * Isa::kLanes) {
      real_kernel_entry_in_place_b<Isa, MV - 1, NR, MRS>(k, a, b, rs_b, cs_b, alpha, beta, c, rs_c, cs_c, m_valid,
                                                         n_valid);
      return;
    }
  }
  real_micro_kernel<Isa, MV, NR, MRS, true>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid, rs_b, cs_b);
}

/// Adapts the row-vector kernel to the GemmKernelSet signature. A tile with
/// at most (NV - 1) vectors of valid columns runs a narrower kernel over the
/// same panel.
template <class Isa, int NV, int MRB, int NRS = NV* Isa::kLanes>
void real_row_kernel_entry(std::int64_t k, const typename Isa::S* a, const typename Isa::S* b, typename Isa::S alpha,
                           typename Isa::S beta, typename Isa::S* c, std::int64_t rs_c, std::int64_t cs_c,
                           std::int64_t m_valid, std::int64_t n_valid) {
  if constexpr (NV > 1) {
    if (n_valid <= (NV - 1) * Isa::kLanes) {
      real_row_kernel_entry<Isa, NV - 1, MRB, NRS>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
      return;
    }
  }
  real_row_micro_kernel<Isa, NV, MRB, NRS>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
}

template <class Isa, int MV, int NR>
void complex_kernel_entry(std::int64_t k, const std::complex<typename Isa::S>* a,
                          const std::complex<typename Isa::S>* b, std::complex<typename Isa::S> alpha,
                          std::complex<typename Isa::S> beta, std::complex<typename Isa::S>* c, std::int64_t rs_c,
                          std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid) {
  complex_micro_kernel<Isa, MV, NR>(k, a, b, alpha, beta, c, rs_c, cs_c, m_valid, n_valid);
}

// Note [Rank-1 GEMM]
// With k == 1 (an outer product, and every batch member of a batched one)
// C is written once and nothing is reused: the blocked path would pack A
// and B and run a register tile per k = 1 step, and the plain loop would
// zero C and then accumulate into it, writing it twice. Columns of C (unit
// stride along M after the driver's orientation) are instead written in one
// pass, c[i] = alpha * b[j] * a[i] (+ beta * c[i]), split over the context's
// workers by columns when the problem is large. The loop lives here, in each
// ISA's translation unit, so that it runs on that ISA's vectors whatever
// the project's compile target (TENFERRO_ARCH): built for the baseline
// x86-64 target the same loop stores two doubles at a time, and a
// standalone copy of it wrote the einsum benchmark's 8 MB batched outer
// product 1.3-1.8x slower than with AVX2 on Zen 3 (docs/performance_notes.md,
// "Rank-1 columns").

/// Columns [j0, j1) of the depth-1 problem `p` (T is Isa::S or its complex).
template <class Isa, class T>
void rank1_columns(const TypedProblem<T>& p, std::int64_t j0, std::int64_t j1) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr bool kComplex = !std::is_same_v<T, S>;
  constexpr std::int64_t kScalars = kComplex ? 2 : 1;  // S per element of T
  constexpr std::int64_t kPerVector = Isa::kLanes / kScalars;
  // Vectors along M: unit strides, and for complex only beta == 0 (the
  // einsum's case; a complex beta runs the scalar loop).
  const bool vectors = p.rsa == 1 && p.rsc == 1 && (!kComplex || p.beta == T(0));
  const std::int64_t m_vec = vectors ? p.m / kPerVector * kPerVector : 0;
  for (std::int64_t j = j0; j < j1; ++j) {
    T* __restrict cj = p.c + j * p.csc;
    const T t = plain_mul(p.alpha, p.b[j * p.csb]);
    const T* __restrict a = p.a;
    std::int64_t i = 0;
    if (m_vec > 0) {
      const S* as = reinterpret_cast<const S*>(a);
      S* cs = reinterpret_cast<S*>(cj);
      if constexpr (kComplex) {
        // (ar + i ai)(tr + i ti): even lanes ar tr - ai ti, odd ai tr + ar ti.
        const V tr = Isa::set1(t.real());
        const V ti = Isa::set1(t.imag());
        for (; i < m_vec; i += kPerVector) {
          const V x = Isa::loadu(as + 2 * i);
          Isa::storeu(cs + 2 * i, Isa::fmaddsub(x, tr, Isa::mul(Isa::swap_pairs(x), ti)));
        }
      } else if (p.beta == T(0)) {
        const V tv = Isa::set1(t);
        for (; i + 2 * kPerVector <= m_vec; i += 2 * kPerVector) {
          const V x0 = Isa::loadu(as + i);
          const V x1 = Isa::loadu(as + i + kPerVector);
          Isa::storeu(cs + i, Isa::mul(x0, tv));
          Isa::storeu(cs + i + kPerVector, Isa::mul(x1, tv));
        }
        for (; i < m_vec; i += kPerVector) Isa::storeu(cs + i, Isa::mul(Isa::loadu(as + i), tv));
      } else {
        const V tv = Isa::set1(t);
        const V bv = Isa::set1(p.beta);
        for (; i < m_vec; i += kPerVector) {
          Isa::storeu(cs + i, Isa::fmadd(Isa::loadu(as + i), tv, Isa::mul(bv, Isa::loadu(cs + i))));
        }
      }
    }
    for (; i < p.m; ++i) {
      T& c = cj[i * p.rsc];
      const T x = plain_mul(a[i * p.rsa], t);
      c = p.beta == T(0) ? x : plain_mul(p.beta, c) + x;
    }
  }
}

/// Builds a GemmKernelSet for a real type from an Isa and register block.
template <class Isa, int MV, int NR>
GemmKernelSet<typename Isa::S> make_real_set(int mc, int kc, int nc) {
  using S = typename Isa::S;
  constexpr int MR = MV * Isa::kLanes;
  GemmKernelSet<S> set;
  set.mr = MR;
  set.nr = NR;
  set.mc = mc;
  set.kc = kc;
  set.nc = nc;
  set.micro_kernel = &real_kernel_entry<Isa, MV, NR>;
  set.micro_kernel_in_place_b = &real_kernel_entry_in_place_b<Isa, MV, NR>;
  set.pack_a = &pack_a_panels<Isa, S, MR>;
  set.pack_b = &pack_b_panels<Isa, S, NR>;
  set.rank1 = &rank1_columns<Isa, S>;
  set.gemv = &gemv_rows<Isa, S>;
  set.gemv_batch = &gemv_batch<Isa, S>;
  set.few_columns = &sweep_columns<Isa, S>;
  return set;
}

/// A GemmKernelSet for a real type on the row-vector kernel (Note
/// [Row-vector kernel]): MRB = lanes rows of A broadcast, NV vectors of B
/// columns. `thin_m` runs problems whose M spans at most
/// kInPlaceBMaxPanels of its tiles (it must outlive the set).
template <class Isa, int NV>
GemmKernelSet<typename Isa::S> make_real_row_set(int mc, int kc, int nc, const GemmKernelSet<typename Isa::S>* thin_m) {
  using S = typename Isa::S;
  constexpr int MRB = Isa::kLanes;
  constexpr int NR = NV * Isa::kLanes;
  GemmKernelSet<S> set;
  set.mr = MRB;
  set.nr = NR;
  set.mc = mc;
  set.kc = kc;
  set.nc = nc;
  set.micro_kernel = &real_row_kernel_entry<Isa, NV, MRB>;
  set.pack_a = &pack_a_panels<Isa, S, MRB>;
  set.pack_b = &pack_b_panels<Isa, S, NR>;
  set.rank1 = &rank1_columns<Isa, S>;
  set.gemv = &gemv_rows<Isa, S>;
  set.gemv_batch = &gemv_batch<Isa, S>;
  set.few_columns = &sweep_columns<Isa, S>;
  set.thin_m = thin_m;
  return set;
}

template <class Isa, int MV, int NR>
GemmKernelSet<std::complex<typename Isa::S>> make_complex_set(int mc, int kc, int nc) {
  using T = std::complex<typename Isa::S>;
  constexpr int MR = MV * Isa::kLanes / 2;
  GemmKernelSet<T> set;
  set.mr = MR;
  set.nr = NR;
  set.mc = mc;
  set.kc = kc;
  set.nc = nc;
  set.micro_kernel = &complex_kernel_entry<Isa, MV, NR>;
  set.pack_a = &pack_a_panels<Isa, T, MR>;
  set.pack_b = &pack_b_panels<Isa, T, NR>;
  set.rank1 = &rank1_columns<Isa, T>;
  set.gemv = &gemv_rows<Isa, T>;
  set.gemv_batch = &gemv_batch<Isa, T>;
  set.few_columns = &sweep_columns<Isa, T>;
  set.dot_columns = &dot_columns<Isa, T>;
  return set;
}

}  // namespace tenferro::cpu::internal
