// AVX2 + FMA GEMM kernels (compiled with -mavx2 -mfma; Note [ISA translation
// units] in micro_kernels.h): the fallback for CPUs without AVX-512. 16 ymm
// registers: 2 A vectors x 6 B columns for float, 3 B vectors x 4 A rows
// for double (Note [Row-vector kernel]), 2 x 3 x (re, im) for complex.
#include <immintrin.h>

#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/micro_kernels.h"
#include "cpu/gemm/native/small_tiles.h"

namespace tenferro::cpu::internal {
namespace {

// Stores lanes 0 .. count-1 (< 8) of v in plain stores: AVX2 masked
// stores (vmaskmovps) are microcoded on Zen 2 and Zen 3, 12 cycles each.
inline void store_first_floats(float* p, __m256 v, int count) {
  __m128 part = _mm256_castps256_ps128(v);
  if (count >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(v, 1);
    p += 4;
    count -= 4;
  }
  if (count >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    part = _mm_movehl_ps(part, part);
    p += 2;
    count -= 2;
  }
  if (count >= 1) _mm_store_ss(p, part);
}

struct Avx2D {
  using S = double;
  using V = __m256d;
  static constexpr int kLanes = 4;
  static constexpr CpuIsa kTransposeIsa = CpuIsa::kAvx2;
  static constexpr int kPackGroupBytes = 256;  // Note [Grouped packing]
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const S* p) { return _mm256_load_pd(p); }
  static V loadu(const S* p) { return _mm256_loadu_pd(p); }
  static void storeu(S* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(S s) { return _mm256_set1_pd(s); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V swap_pairs(V x) { return _mm256_permute_pd(x, 0x5); }
  static V fmaddsub(V a, V b, V c) { return _mm256_fmaddsub_pd(a, b, c); }
  // The lanes of a + b added (Note [Lane sums] in gemv_kernels.h).
  static S sum_lanes(V a, V b) {
    const V v = _mm256_add_pd(a, b);
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
  static void transpose(V (&r)[4]) {
    const V t0 = _mm256_unpacklo_pd(r[0], r[1]);  // r00 r10 r02 r12
    const V t1 = _mm256_unpackhi_pd(r[0], r[1]);  // r01 r11 r03 r13
    const V t2 = _mm256_unpacklo_pd(r[2], r[3]);
    const V t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  }
  static void store_first(S* p, V v, int count) {
    store_first_floats(reinterpret_cast<float*>(p), _mm256_castpd_ps(v), 2 * count);
  }
};

struct Avx2S {
  using S = float;
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr CpuIsa kTransposeIsa = CpuIsa::kAvx2;
  static constexpr int kPackGroupBytes = 256;  // Note [Grouped packing]
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const S* p) { return _mm256_load_ps(p); }
  static V loadu(const S* p) { return _mm256_loadu_ps(p); }
  static void storeu(S* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(S s) { return _mm256_set1_ps(s); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V swap_pairs(V x) { return _mm256_permute_ps(x, 0xB1); }
  static V fmaddsub(V a, V b, V c) { return _mm256_fmaddsub_ps(a, b, c); }
  static S sum_lanes(V a, V b) {
    const V v = _mm256_add_ps(a, b);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }
  [[gnu::always_inline]] static void transpose(V (&r)[8]) {
    V u[8];
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
      const V t0 = _mm256_unpacklo_ps(r[h], r[h + 1]);  // r0 r1 interleaved, steps 0 1 | 4 5
      const V t1 = _mm256_unpackhi_ps(r[h], r[h + 1]);  // steps 2 3 | 6 7
      const V t2 = _mm256_unpacklo_ps(r[h + 2], r[h + 3]);
      const V t3 = _mm256_unpackhi_ps(r[h + 2], r[h + 3]);
      u[h] = _mm256_shuffle_ps(t0, t2, 0x44);  // step 0 | 4 of rows h .. h+3
      u[h + 1] = _mm256_shuffle_ps(t0, t2, 0xEE);
      u[h + 2] = _mm256_shuffle_ps(t1, t3, 0x44);
      u[h + 3] = _mm256_shuffle_ps(t1, t3, 0xEE);
    }
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      r[l] = _mm256_permute2f128_ps(u[l], u[l + 4], 0x20);
      r[l + 4] = _mm256_permute2f128_ps(u[l], u[l + 4], 0x31);
    }
  }
  static void store_first(S* p, V v, int count) { store_first_floats(p, v, count); }
};

// Both pack their transposed panels in registers (Note [Transposing packs]).
static_assert(RegisterTransposes<Avx2S, float> && RegisterTransposes<Avx2D, double>);

// The small-problem tiles (Note [Small GEMM]): 12 of the 16 ymm registers, as the 8x6 blocked tile.
struct Avx2Tiles {
  static constexpr int kVectorBytes = 32;
  static constexpr int kAccumulators = 12;
  // A vector's first lanes (Note [Partial small tiles]): masked loads, plain stores.
  static __m256 load_first(const float* p, int count) {
    return _mm256_maskload_ps(p,
                              _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  static __m256d load_first(const double* p, int count) {
    return _mm256_maskload_pd(p, _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3)));
  }
  static void store_first(float* p, __m256 v, int count) { store_first_floats(p, v, count); }
  static void store_first(double* p, __m256d v, int count) { Avx2D::store_first(p, v, count); }
};

GemmKernelTable make_table() {
  GemmKernelTable t;
  t.isa = "avx2";
  t.f32 = make_real_set<Avx2S, 2, 6>(/*mc=*/384, /*kc=*/384, /*nc=*/4080);
  // Note [Row-vector kernel]: 4 rows x 12 columns, the 8 x 6 set for thin M.
  // The row set's depth is 512: each pass over C then does twice the work
  // of kc = 256, and on Zen 3 (512 KB L2) mc = 192, kc = 512 ran n = 1024
  // and 2048 at 0.99-1.05 of OpenBLAS where mc = 384, kc = 256 ran at
  // 0.93-0.97 (docs/performance_notes.md, "Row set blocking").
  static const GemmKernelSet<double> f64_thin_m = make_real_set<Avx2D, 2, 6>(/*mc=*/192, /*kc=*/256, /*nc=*/4080);
  t.f64 = make_real_row_set<Avx2D, 3>(/*mc=*/192, /*kc=*/512, /*nc=*/4080, &f64_thin_m);
  t.c64 = make_complex_set<Avx2S, 2, 3>(/*mc=*/128, /*kc=*/384, /*nc=*/4080);
  t.c128 = make_complex_set<Avx2D, 2, 3>(/*mc=*/96, /*kc=*/256, /*nc=*/4080);
  add_small_tiles<Avx2Tiles>(t, /*max_mnk=*/64 * 64 * 64);
  // Note [Small complex GEMM]: as many accumulator pairs as the blocked tile.
  t.c64.small_tiles = &run_complex_small_tiles<Avx2S, 6>;
  t.c128.small_tiles = &run_complex_small_tiles<Avx2D, 6>;
  t.c64.small_max_mnk = t.c128.small_max_mnk = 64 * 64 * 64;
  return t;
}

}  // namespace

const GemmKernelTable& avx2_kernel_table() noexcept {
  static const GemmKernelTable table = make_table();  // immutable after initialisation
  return table;
}

}  // namespace tenferro::cpu::internal
