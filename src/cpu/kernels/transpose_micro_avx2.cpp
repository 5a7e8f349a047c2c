// AVX2 tile transposes: 8 x 8 floats (4-byte types), 4 x 4 doubles (8-byte
// types) and 2 x 2 16-byte elements in ymm registers. Compiled with AVX2
// flags; only called when the CPU has them.
#include <immintrin.h>

#include "cpu/kernels/transpose_micro.h"

namespace tenferro::cpu::internal {
namespace {

inline void store256d(char* p, __m256d v, bool streaming) {
  if (streaming && (reinterpret_cast<std::uintptr_t>(p) & 31u) == 0) {
    _mm256_stream_pd(reinterpret_cast<double*>(p), v);
  } else {
    _mm256_storeu_pd(reinterpret_cast<double*>(p), v);
  }
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

void transpose_4x4_b8(const char* const* src, std::int64_t so, char* const* dst, std::int64_t dof,
                      bool streaming) noexcept {
  __m256d r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_pd(reinterpret_cast<const double*>(src[i] + so));
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]);  // r0_0 r1_0 r0_2 r1_2
  const __m256d t1 = _mm256_unpackhi_pd(r[0], r[1]);  // r0_1 r1_1 r0_3 r1_3
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]);
  const __m256d t3 = _mm256_unpackhi_pd(r[2], r[3]);
  store256d(dst[0] + dof, _mm256_permute2f128_pd(t0, t2, 0x20), streaming);
  store256d(dst[1] + dof, _mm256_permute2f128_pd(t1, t3, 0x20), streaming);
  store256d(dst[2] + dof, _mm256_permute2f128_pd(t0, t2, 0x31), streaming);
  store256d(dst[3] + dof, _mm256_permute2f128_pd(t1, t3, 0x31), streaming);
}

void transpose_2x2_b16(const char* const* src, std::int64_t so, char* const* dst, std::int64_t dof,
                       bool streaming) noexcept {
  const __m256d r0 = _mm256_loadu_pd(reinterpret_cast<const double*>(src[0] + so));
  const __m256d r1 = _mm256_loadu_pd(reinterpret_cast<const double*>(src[1] + so));
  store256d(dst[0] + dof, _mm256_permute2f128_pd(r0, r1, 0x20), streaming);
  store256d(dst[1] + dof, _mm256_permute2f128_pd(r0, r1, 0x31), streaming);
}

}  // namespace

TileTranspose avx2_tile_transpose(std::int64_t item_size) noexcept {
  switch (item_size) {
    case 4:
      return {8, &transpose_8x8_b4};
    case 8:
      return {4, &transpose_4x4_b8};
    case 16:
      return {2, &transpose_2x2_b16};
    default:
      return {};
  }
}

}  // namespace tenferro::cpu::internal
