// The body of Note [Integer GEMM] (integer_gemm.h), included by each ISA
// translation unit with its vector width and tile rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/gemm/integer_gemm.h"

namespace tenferro::cpu::internal::integer_gemm {

inline constexpr std::int64_t kKc = 256;      // depth per packed block
inline constexpr std::int64_t kShallow = 16;  // depth up to which tiles are swept in output order

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
  static_assert(!kHasNarrow || kMr % kLanes == 0, "narrow_block reads packed A blocks in whole vectors");

  // Whether x is an int32 value (sign-extended).
  static bool fits_int32(U x) { return static_cast<T>(x) == static_cast<T>(static_cast<std::int32_t>(x)); }

  // Whether the packed values [begin, end) can run narrow (Note [Narrow
  // int64 products]): kHasNarrow and every value fits in int32. Packed
  // blocks are whole vectors long.
  static bool narrow_block(const U* begin, const U* end) {
    bool narrow = kHasNarrow;
    if constexpr (kHasNarrow) {
      for (const U* p = begin; p != end && narrow; p += kLanes) {
        for (int l = 0; l < kLanes; ++l) narrow = narrow && fits_int32(p[l]);
      }
    }
    return narrow;
  }

  // lhs rows [0, m) x depth [0, kc) into panels of kMr rows (rows past m
  // zero); returns whether every value fits in int32 (kHasNarrow only).
  static bool pack_a(const IntegerGemmJob<T>& job, std::int64_t p0, std::int64_t kc, U* dst) {
    const std::int64_t* kl = job.kl + p0;
    U* const begin = dst;
    for (std::int64_t i0 = 0; i0 < job.m; i0 += kMr) {
      const std::int64_t rows = std::min<std::int64_t>(kMr, job.m - i0);
      const T* src[kMr];
      bool run = rows == kMr;  // the panel's rows are one unit-stride run
      for (std::int64_t r = 0; r < rows; ++r) {
        src[r] = job.lhs + job.ml[i0 + r];
        run = run && job.ml[i0 + r] == job.ml[i0] + r;
      }
      if (run) {
        for (std::int64_t q = 0; q < kc; ++q) std::memcpy(dst + q * kMr, src[0] + kl[q], sizeof(T) * kMr);
        dst += kMr * kc;
        continue;
      }
      // Depth outer, rows inner: an lhs stored depth-major (its rows strided)
      // is then read a few neighbouring elements at a time, not a column of
      // cache lines per row.
      for (std::int64_t q = 0; q < kc; ++q) {
        U* d = dst + q * kMr;
        std::int64_t r = 0;
        for (; r < rows; ++r) d[r] = static_cast<U>(src[r][kl[q]]);
        for (; r < kMr; ++r) d[r] = 0;
      }
      dst += kMr * kc;
    }
    return narrow_block(begin, dst);
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
    return narrow_block(begin, dst);
  }

  // acc = A panel (kMr x kc) * B panel (kc x kNr); added into (or, first
  // block, stored to) out rows [i0, i0 + rows) x columns [j0, j0 + cols).
  template <bool kNarrow>
  static void tile(std::int64_t kc, const U* __restrict a, const U* __restrict b, const IntegerGemmJob<T>& job,
                   std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, bool first) {
    // Every index into acc is a compile-time constant (unrolled loops), so
    // the accumulators live in registers: a runtime index would put them
    // on the stack, and for a short depth (outer products, k = 1) zeroing,
    // spilling and reloading them cost more than the products.
    V acc[kMr][kNv];
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[r][v] = V{};
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
#pragma GCC unroll 8
      for (int r = 0; r < kMr; ++r) {
        if (r < rows) {
          U* o = out + job.mo[i0 + r] + job.no[j0];
#pragma GCC unroll 4
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
      }
      return;
    }
    U part[kMr][kNr];  // the tile in memory, for the element-wise scatter
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) std::memcpy(&part[r][v * kLanes], &acc[r][v], sizeof(V));
    for (int r = 0; r < rows; ++r) {
      U* o = out + job.mo[i0 + r];
      for (std::int64_t c = 0; c < cols; ++c) {
        U& y = o[job.no[j0 + c]];
        y = first ? part[r][c] : static_cast<U>(y + part[r][c]);
      }
    }
  }

  static std::int64_t run(const IntegerGemmJob<T>& job, T* workspace) {
    std::int64_t narrow_blocks = 0;
    const std::int64_t kc_max = std::min(job.k, kKc);
    U* a_pack = reinterpret_cast<U*>(workspace);
    U* b_pack = a_pack + round_up(round_up(job.m, kMr) * kc_max, kAlign);
    for (std::int64_t p0 = 0; p0 < job.k; p0 += kKc) {
      const std::int64_t kc = std::min(kKc, job.k - p0);
      const bool narrow_b = pack_b(job, p0, kc, b_pack);
      const bool narrow = pack_a(job, p0, kc, a_pack) && narrow_b;
      narrow_blocks += narrow ? 1 : 0;
      const auto one = [&](std::int64_t i0, std::int64_t j0) {
        const U* a = a_pack + (i0 / kMr) * kMr * kc;
        const U* b = b_pack + (j0 / kNr) * kNr * kc;
        const std::int64_t rows = std::min<std::int64_t>(kMr, job.m - i0);
        const std::int64_t cols = std::min<std::int64_t>(kNr, job.n - j0);
        if (kHasNarrow && narrow) {
          tile<kHasNarrow>(kc, a, b, job, i0, rows, j0, cols, p0 == 0);
        } else {
          tile<false>(kc, a, b, job, i0, rows, j0, cols, p0 == 0);
        }
      };
      if (kc <= kShallow) {
        // A shallow product is bound by its output writes: sweep the tiles
        // row band by row band, so each output row is written in order.
        for (std::int64_t i0 = 0; i0 < job.m; i0 += kMr)
          for (std::int64_t j0 = 0; j0 < job.n; j0 += kNr) one(i0, j0);
      } else {
        // BLIS order: one B micro-panel stays in L1 while A's panels pass.
        for (std::int64_t j0 = 0; j0 < job.n; j0 += kNr)
          for (std::int64_t i0 = 0; i0 < job.m; i0 += kMr) one(i0, j0);
      }
    }
    return narrow_blocks;
  }

  static IntegerGemmKernel<T> kernel() { return {&workspace, &run}; }
};

}  // namespace tenferro::cpu::internal::integer_gemm
