// AVX-512 tile transposes: 8 x 8 doubles (any 8-byte type) and 4 x 4
// 16-byte elements in zmm registers, 8 x 8 floats (any 4-byte type) in ymm
// registers. Compiled with AVX-512 flags; only called when the CPU has them.
// GCC 12's _mm512_undefined_pd() initialises a variable with itself, which
// -Wuninitialized reports inside every shuffle intrinsic (GCC PR105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/kernels/transpose_micro.h"

namespace tenferro::cpu::internal {
namespace {

inline bool aligned64(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 63u) == 0; }

inline void store512(char* p, __m512d v, bool streaming) {
  if (streaming && aligned64(p)) {
    _mm512_stream_pd(reinterpret_cast<double*>(p), v);
  } else {
    _mm512_storeu_pd(reinterpret_cast<double*>(p), v);
  }
}

void transpose_8x8_b8(const char* const* src, std::int64_t so, char* const* dst, std::int64_t dof,
                      bool streaming) noexcept {
  __m512d r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(reinterpret_cast<const double*>(src[i] + so));
  // Pairs of rows interleaved: t[2k] holds (r[2k], r[2k+1]) at even columns,
  // t[2k+1] at odd columns, one column pair per 128-bit lane.
  __m512d t[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm512_unpacklo_pd(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_pd(r[2 * k], r[2 * k + 1]);
  }
  // Gather lanes: even columns from t[0], t[2], t[4], t[6]; odd from the rest.
  for (int odd = 0; odd < 2; ++odd) {
    const __m512d u0 = _mm512_shuffle_f64x2(t[odd], t[odd + 2], 0x88);
    const __m512d u1 = _mm512_shuffle_f64x2(t[odd], t[odd + 2], 0xDD);
    const __m512d u2 = _mm512_shuffle_f64x2(t[odd + 4], t[odd + 6], 0x88);
    const __m512d u3 = _mm512_shuffle_f64x2(t[odd + 4], t[odd + 6], 0xDD);
    store512(dst[odd + 0] + dof, _mm512_shuffle_f64x2(u0, u2, 0x88), streaming);
    store512(dst[odd + 4] + dof, _mm512_shuffle_f64x2(u0, u2, 0xDD), streaming);
    store512(dst[odd + 2] + dof, _mm512_shuffle_f64x2(u1, u3, 0x88), streaming);
    store512(dst[odd + 6] + dof, _mm512_shuffle_f64x2(u1, u3, 0xDD), streaming);
  }
}

void transpose_4x4_b16(const char* const* src, std::int64_t so, char* const* dst, std::int64_t dof,
                       bool streaming) noexcept {
  __m512d r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm512_loadu_pd(reinterpret_cast<const double*>(src[i] + so));
  const __m512d t0 = _mm512_shuffle_f64x2(r[0], r[1], 0x44);  // r0.L0 r0.L1 r1.L0 r1.L1
  const __m512d t1 = _mm512_shuffle_f64x2(r[0], r[1], 0xEE);  // r0.L2 r0.L3 r1.L2 r1.L3
  const __m512d t2 = _mm512_shuffle_f64x2(r[2], r[3], 0x44);
  const __m512d t3 = _mm512_shuffle_f64x2(r[2], r[3], 0xEE);
  store512(dst[0] + dof, _mm512_shuffle_f64x2(t0, t2, 0x88), streaming);
  store512(dst[1] + dof, _mm512_shuffle_f64x2(t0, t2, 0xDD), streaming);
  store512(dst[2] + dof, _mm512_shuffle_f64x2(t1, t3, 0x88), streaming);
  store512(dst[3] + dof, _mm512_shuffle_f64x2(t1, t3, 0xDD), streaming);
}

inline void store256(char* p, __m256 v, bool streaming) {
  if (streaming && (reinterpret_cast<std::uintptr_t>(p) & 31u) == 0) {
    _mm256_stream_ps(reinterpret_cast<float*>(p), v);
  } else {
    _mm256_storeu_ps(reinterpret_cast<float*>(p), v);
  }
}

void transpose_8x8_b4(const char* const* src, std::int64_t so, char* const* dst, std::int64_t dof,
                      bool streaming) noexcept {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src[i] + so));
  __m256 t[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  __m256 s[8];
  for (int k = 0; k < 2; ++k) {
    s[4 * k + 0] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0x44);
    s[4 * k + 1] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0xEE);
    s[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    s[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {
    store256(dst[c] + dof, _mm256_permute2f128_ps(s[c], s[c + 4], 0x20), streaming);
    store256(dst[c + 4] + dof, _mm256_permute2f128_ps(s[c], s[c + 4], 0x31), streaming);
  }
}

}  // namespace

TileTranspose avx512_tile_transpose(std::int64_t item_size) noexcept {
  switch (item_size) {
    case 4:
      return {8, &transpose_8x8_b4};
    case 8:
      return {8, &transpose_8x8_b8};
    case 16:
      return {4, &transpose_4x4_b16};
    default:
      return {};
  }
}

}  // namespace tenferro::cpu::internal
