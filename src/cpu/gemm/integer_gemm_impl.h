// The body of Note [Integer GEMM] (integer_gemm.h), included by each ISA
// translation unit with its vector width and tile rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/gemm/integer_gemm.h"

namespace tenferro::cpu::internal::integer_gemm {

inline constexpr std::int64_t kKc = 256;  // depth per packed block

constexpr std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// kVecBytes-wide vectors, kMr x kNv vector accumulators. `Narrow`, for
/// int64 tiles of ISAs that have one, provides `static V mul(V, V)`: the
/// product of the sign-extended low 32 bits of each lane (vpmuldq), used
/// for blocks whose values all fit in int32 (Note [Narrow int64 products]).
template <class T, int kVecBytes, int kMr, int kNv, class Narrow = void>
struct Tile {
  using U = std::make_unsigned_t<T>;  // wrapping arithmetic
  typedef U V __attribute__((vector_size(kVecBytes)));
  static constexpr int kLanes = kVecBytes / static_cast<int>(sizeof(T));
  static constexpr int kNr = kNv * kLanes;
  // Panel strides are whole vectors, so 64-byte aligned buffers keep every
  // vector load aligned.
  static constexpr std::int64_t kAlign = 64 / static_cast<std::int64_t>(sizeof(T));

  static std::int64_t workspace(std::int64_t m, std::int64_t n, std::int64_t k) {
    const std::int64_t kc = std::min(k, kKc);
    return round_up(round_up(std::min(m, kIntegerGemmMc), kMr) * kc, kAlign) +
           round_up(std::min(n, kIntegerGemmNc), kNr) * kc;
  }

  static constexpr bool kHasNarrow = !std::is_void_v<Narrow>;

  // Whether x is an int32 value (sign-extended).
  static bool fits_int32(U x) { return static_cast<T>(x) == static_cast<T>(static_cast<std::int32_t>(x)); }

  // lhs rows [0, m) x depth [0, kc) into panels of kMr rows (rows past m
  // zero); returns whether every value fits in int32 (kHasNarrow only).
  static bool pack_a(const IntegerGemmJob<T>& job, std::int64_t p0, std::int64_t kc, U* dst) {
    const std::int64_t* kl = job.kl + p0;
    bool narrow = kHasNarrow;
    for (std::int64_t i0 = 0; i0 < job.m; i0 += kMr) {
      const std::int64_t rows = std::min<std::int64_t>(kMr, job.m - i0);
      for (std::int64_t r = 0; r < kMr; ++r) {
        U* d = dst + r;
        if (r < rows) {
          const T* src = job.lhs + job.ml[i0 + r];
          for (std::int64_t q = 0; q < kc; ++q) d[q * kMr] = static_cast<U>(src[kl[q]]);
          if (kHasNarrow && narrow) {
            for (std::int64_t q = 0; q < kc; ++q) narrow = narrow && fits_int32(d[q * kMr]);
          }
        } else {
          for (std::int64_t q = 0; q < kc; ++q) d[q * kMr] = 0;
        }
      }
      dst += kMr * kc;
    }
    return narrow;
  }

  // rhs depth [0, kc) x columns [0, n) into panels of kNr columns; returns
  // whether every value fits in int32 (kHasNarrow only).
  static bool pack_b(const IntegerGemmJob<T>& job, std::int64_t p0, std::int64_t kc, U* dst) {
    U* const begin = dst;
    for (std::int64_t j0 = 0; j0 < job.n; j0 += kNr) {
      const std::int64_t cols = std::min<std::int64_t>(kNr, job.n - j0);
      const std::int64_t* nr = job.nr + j0;
      bool run = cols == kNr;  // the panel's columns are one unit-stride run
      for (std::int64_t c = 1; run && c < kNr; ++c) run = nr[c] == nr[0] + c;
      for (std::int64_t q = 0; q < kc; ++q) {
        const T* src = job.rhs + job.kr[p0 + q];
        U* d = dst + q * kNr;
        if (run) {
          std::memcpy(d, src + nr[0], sizeof(T) * kNr);
          continue;
        }
        std::int64_t c = 0;
        for (; c < cols; ++c) d[c] = static_cast<U>(src[nr[c]]);
        for (; c < kNr; ++c) d[c] = 0;
      }
      dst += kNr * kc;
    }
    bool narrow = kHasNarrow;
    if constexpr (kHasNarrow) {
      for (const U* p = begin; p != dst && narrow; p += kLanes) {
        for (int l = 0; l < kLanes; ++l) narrow = narrow && fits_int32(p[l]);
      }
    }
    return narrow;
  }

  // acc = A panel (kMr x kc) * B panel (kc x kNr); added into (or, first
  // block, stored to) out rows [i0, i0 + rows) x columns [j0, j0 + cols).
  template <bool kNarrow>
  static void tile(std::int64_t kc, const U* __restrict a, const U* __restrict b, const IntegerGemmJob<T>& job,
                   std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, bool first) {
    V acc[kMr][kNv] = {};
    for (std::int64_t q = 0; q < kc; ++q) {
      V bv[kNv];
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) std::memcpy(&bv[v], b + q * kNr + v * kLanes, sizeof(V));
#pragma GCC unroll 8
      for (int r = 0; r < kMr; ++r) {
        const U x = a[q * kMr + r];
        if constexpr (kNarrow) {
          const V xv = V{} + x;
#pragma GCC unroll 4
          for (int v = 0; v < kNv; ++v) acc[r][v] += Narrow::mul(bv[v], xv);
        } else {
#pragma GCC unroll 4
          for (int v = 0; v < kNv; ++v) acc[r][v] += bv[v] * x;
        }
      }
    }
    U* out = reinterpret_cast<U*>(job.out);
    if (job.unit_n && cols == kNr) {
      for (int r = 0; r < rows; ++r) {
        U* o = out + job.mo[i0 + r] + job.no[j0];
        for (int v = 0; v < kNv; ++v) {
          V x = acc[r][v];
          if (!first) {
            V y;
            std::memcpy(&y, o + v * kLanes, sizeof(V));
            x += y;
          }
          std::memcpy(o + v * kLanes, &x, sizeof(V));
        }
      }
      return;
    }
    for (int r = 0; r < rows; ++r) {
      U* o = out + job.mo[i0 + r];
      for (std::int64_t c = 0; c < cols; ++c) {
        const U x = acc[r][c / kLanes][c % kLanes];
        U& y = o[job.no[j0 + c]];
        y = first ? x : static_cast<U>(y + x);
      }
    }
  }

  static std::int64_t run(const IntegerGemmJob<T>& job, T* workspace) {
    std::int64_t narrow_blocks = 0;
    const std::int64_t kc_max = std::min(job.k, kKc);
    U* a_pack = reinterpret_cast<U*>(workspace);
    U* b_pack = a_pack + round_up(round_up(job.m, kMr) * kc_max, kAlign);
    if (job.k == 0) {  // not reached: the composite zero-fills such products
      for (std::int64_t i = 0; i < job.m; ++i)
        for (std::int64_t j = 0; j < job.n; ++j) job.out[job.mo[i] + job.no[j]] = 0;
      return 0;
    }
    for (std::int64_t p0 = 0; p0 < job.k; p0 += kKc) {
      const std::int64_t kc = std::min(kKc, job.k - p0);
      const bool narrow_b = pack_b(job, p0, kc, b_pack);
      const bool narrow = pack_a(job, p0, kc, a_pack) && narrow_b;
      narrow_blocks += narrow ? 1 : 0;
      for (std::int64_t j0 = 0; j0 < job.n; j0 += kNr) {
        const U* b = b_pack + (j0 / kNr) * kNr * kc;
        const std::int64_t cols = std::min<std::int64_t>(kNr, job.n - j0);
        for (std::int64_t i0 = 0; i0 < job.m; i0 += kMr) {
          const U* a = a_pack + (i0 / kMr) * kMr * kc;
          const std::int64_t rows = std::min<std::int64_t>(kMr, job.m - i0);
          if (kHasNarrow && narrow) {
            tile<kHasNarrow>(kc, a, b, job, i0, rows, j0, cols, p0 == 0);
          } else {
            tile<false>(kc, a, b, job, i0, rows, j0, cols, p0 == 0);
          }
        }
      }
    }
    return narrow_blocks;
  }

  static IntegerGemmKernel<T> kernel() { return {kMr, kNr, &workspace, &run}; }
};

}  // namespace tenferro::cpu::internal::integer_gemm
