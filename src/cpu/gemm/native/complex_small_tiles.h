// Register tiles for small complex GEMMs (Note [Small complex GEMM]),
// written over an ISA's vector wrapper (micro_kernels.h) and registered by
// the AVX-512 and AVX2 translation units' make_table.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>

#include "cpu/gemm/native/gemm_kernel_set.h"

namespace tenferro::cpu::internal {

// Note [Small complex GEMM]
// Complex products of at most the table's small_max_mnk multiply-adds ran
// the plain column loop up to 16^3 (scalar complex arithmetic) and the
// packed blocked path above: from Python, 16 x 16 complex64 took 2.2-3.9 us
// against numpy's 1.2, 12 x 12 1.6-2.4 against 1.0, 8 x 64 by 64 x 8
// 2.4-4.2 against 1.1-1.2 (docs/performance_notes.md, "Small complex
// GEMM"). They now run in register tiles as the real ones do (Note [Small
// GEMM] in small_tiles.h), with the complex micro-kernel's arithmetic:
//  - a tile is MV vectors of rows (each vector holds L/2 interleaved complex
//    elements) by NB columns of C; per depth step each A vector is
//    multiplied by the broadcast real and imaginary parts of a B element
//    into two sums, and the complex products are formed once at the end
//    (re = sum(ar br) - sum(ai bi), im = sum(ai br) + sum(ar bi));
//  - 2 MV NB accumulators, within the blocked kernel's (kPairs pairs: 12 of
//    AVX-512's 32 registers, 6 of AVX2's 16), at most 8 columns;
//  - the AVX-512 and AVX2 tables only: the portable one keeps the column
//    loop (GCC 12's code for the portable tile of complex<float> read up to
//    3 strides past the last broadcast element of B: a crash on an operand
//    ending at a protected page, the correctness audit of 2026-12-07);
//  - B's elements are broadcast from wherever they are;
//  - A is read in place in whole row blocks when its columns are
//    unit-stride; its other rows (a row-major A, the rows past the last whole
//    block) are copied into a column-major stack buffer padded with zeros
//    to a whole block, and a problem whose copy does not fit the buffer
//    runs as before.

/// (x.re, x.im) * (sr, si) on every complex lane pair.
template <class Isa>
inline typename Isa::V complex_scale(typename Isa::V x, typename Isa::S sr, typename Isa::S si) {
  return Isa::fmaddsub(x, Isa::set1(sr), Isa::mul(Isa::swap_pairs(x), Isa::set1(si)));
}

template <class Isa, int MV, int NB>
inline void complex_small_tile(std::int64_t k, const typename Isa::S* a, std::int64_t lda,
                               const std::complex<typename Isa::S>* b, std::int64_t rsb, std::int64_t csb,
                               std::complex<typename Isa::S> alpha, std::complex<typename Isa::S> beta,
                               std::complex<typename Isa::S>* c, std::int64_t rsc, std::int64_t csc, std::int64_t mb) {
  using S = typename Isa::S;
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;  // reals per vector
  constexpr int CL = L / 2;       // complex per vector
  const S* bs = reinterpret_cast<const S*>(b);
  V accr[MV][NB];
  V acci[MV][NB];
#pragma GCC unroll 8
  for (int q = 0; q < NB; ++q)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) accr[v][q] = acci[v][q] = Isa::zero();
  for (std::int64_t l = 0; l < k; ++l) {
    V av[MV];
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) av[v] = Isa::loadu(a + l * lda + v * L);
    const S* bl = bs + 2 * l * rsb;
#pragma GCC unroll 8
    for (int q = 0; q < NB; ++q) {
      const V br = Isa::set1(bl[2 * q * csb]);
      const V bi = Isa::set1(bl[2 * q * csb + 1]);
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) {
        accr[v][q] = Isa::fmadd(av[v], br, accr[v][q]);
        acci[v][q] = Isa::fmadd(av[v], bi, acci[v][q]);
      }
    }
  }
  const V ones = Isa::set1(S(1));
  const bool unit_alpha = alpha == std::complex<S>(1);
  const bool beta_zero = beta == std::complex<S>(0);
  // Unrolled, so that the sums stay in registers (Note [Small GEMM]).
#pragma GCC unroll 8
  for (int q = 0; q < NB; ++q) {
    S* cq = reinterpret_cast<S*>(c + q * csc);
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) {
      accr[v][q] = Isa::fmaddsub(accr[v][q], ones, Isa::swap_pairs(acci[v][q]));
      if (!unit_alpha) accr[v][q] = complex_scale<Isa>(accr[v][q], alpha.real(), alpha.imag());
    }
    if (rsc == 1 && mb == MV * CL) {
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) {
        S* cp = cq + v * L;
        V r = accr[v][q];
        if (!beta_zero) r = Isa::fmadd(complex_scale<Isa>(Isa::loadu(cp), beta.real(), beta.imag()), ones, r);
        Isa::storeu(cp, r);
      }
    } else {
      S lanes[MV * L];
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) Isa::storeu(lanes + v * L, accr[v][q]);
      for (std::int64_t i = 0; i < mb; ++i) {
        S* x = cq + 2 * i * rsc;
        const S tr = lanes[2 * i];
        const S ti = lanes[2 * i + 1];
        if (beta_zero) {
          x[0] = tr;
          x[1] = ti;
        } else {
          const S xr = x[0];
          const S xi = x[1];
          x[0] = tr + beta.real() * xr - beta.imag() * xi;
          x[1] = ti + beta.real() * xi + beta.imag() * xr;
        }
      }
    }
  }
}

// complex_small_tile with the widest NB <= kNb that fits nb columns.
template <class Isa, int MV, int NB>
inline void complex_small_tile_columns(std::int64_t nb, std::int64_t k, const typename Isa::S* a, std::int64_t lda,
                                       const std::complex<typename Isa::S>* b, std::int64_t rsb, std::int64_t csb,
                                       std::complex<typename Isa::S> alpha, std::complex<typename Isa::S> beta,
                                       std::complex<typename Isa::S>* c, std::int64_t rsc, std::int64_t csc,
                                       std::int64_t mb) {
  if constexpr (NB > 1) {
    if (nb < NB) {
      return complex_small_tile_columns<Isa, MV, NB - 1>(nb, k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
    }
  }
  complex_small_tile<Isa, MV, NB>(k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
}

// The tiles with row blocks of MV vectors: the first `in_place` rows of A
// read where they are, the others from a copy (rows padded to lda_local) in
// a stack buffer of kLocal complex elements.
template <class Isa, int MV, int kNb, std::int64_t kLocal>
void complex_small_tiles(const TypedProblem<std::complex<typename Isa::S>>& p, std::int64_t in_place,
                         std::int64_t lda_local) {
  using S = typename Isa::S;
  using T = std::complex<S>;
  constexpr int CL = Isa::kLanes / 2;
  constexpr int kRows = MV * CL;
  alignas(64) T local[kLocal];
  copy_a_rows(p, in_place, lda_local, local);
  for (std::int64_t j = 0; j < p.n; j += kNb) {
    const std::int64_t nb = std::min<std::int64_t>(kNb, p.n - j);
    for (std::int64_t i = 0; i < p.m; i += kRows) {
      const bool own = i < in_place;
      const S* a = reinterpret_cast<const S*>(own ? p.a + i : local + (i - in_place));
      const std::int64_t lda = 2 * (own ? p.csa : lda_local);
      const std::int64_t rows = std::min<std::int64_t>(kRows, p.m - i);
      T* c = p.c + i * p.rsc + j * p.csc;
      if (MV > 1 && rows <= CL) {  // a last block of one vector: no padded rows computed
        complex_small_tile_columns<Isa, 1, kNb>(nb, p.k, a, lda, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c,
                                                p.rsc, p.csc, rows);
      } else {
        complex_small_tile_columns<Isa, MV, kNb>(nb, p.k, a, lda, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c,
                                                 p.rsc, p.csc, rows);
      }
    }
  }
}

// complex_small_tiles with the smallest buffer that holds the copied rows;
// kNone, nothing written, when 32 KB do not (the real tiles' kSmallLocalA
// doubles).
template <class Isa, int MV, int kNb>
SmallTilePath complex_small_tiles_of(const TypedProblem<std::complex<typename Isa::S>>& p) {
  constexpr int kRows = MV * Isa::kLanes / 2;
  constexpr std::int64_t kLocal = 32768 / sizeof(std::complex<typename Isa::S>);
  const std::int64_t in_place = p.rsa == 1 ? p.m / kRows * kRows : 0;  // whole blocks of a unit-stride A
  const std::int64_t lda_local = (p.m - in_place + kRows - 1) / kRows * kRows;
  const std::int64_t needed = lda_local * p.k;
  if (needed <= 256) {
    complex_small_tiles<Isa, MV, kNb, 256>(p, in_place, lda_local);
  } else if (needed <= kLocal) {
    complex_small_tiles<Isa, MV, kNb, kLocal>(p, in_place, lda_local);
  } else {
    return SmallTilePath::kNone;
  }
  return SmallTilePath::kInPlace;
}

/// Runs `p` in register tiles of at most kPairs accumulator pairs (Note
/// [Small complex GEMM]); kNone, nothing written, when they cannot take it.
template <class Isa, int kPairs>
SmallTilePath run_complex_small_tiles(const TypedProblem<std::complex<typename Isa::S>>& p) {
  if (p.m <= Isa::kLanes / 2) return complex_small_tiles_of<Isa, 1, std::min(8, kPairs)>(p);
  return complex_small_tiles_of<Isa, 2, std::min(8, kPairs / 2)>(p);
}

}  // namespace tenferro::cpu::internal
