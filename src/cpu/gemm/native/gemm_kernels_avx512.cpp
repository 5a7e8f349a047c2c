// AVX-512 GEMM kernels (compiled with -mavx512f; Note [ISA translation units]
// in micro_kernels.h). Register blocks use 24 of the 32 zmm registers for
// accumulators: 3 A vectors x 8 B columns for real types (24x8 doubles,
// 48x8 floats) and 3 A vectors x 4 B columns x (re, im) for complex.
#include <immintrin.h>

// GCC 12 warns inside its own _mm512_permute_{pd,ps} (_mm512_undefined_*
// passed as the unused merge source, GCC PR105593); the code is not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/micro_kernels.h"
#include "cpu/gemm/native/small_tiles.h"

namespace tenferro::cpu::internal {
namespace {

struct Avx512D {
  using S = double;
  using V = __m512d;
  static constexpr int kLanes = 8;
  static constexpr CpuIsa kTransposeIsa = CpuIsa::kAvx512;
  static constexpr int kPackGroupBytes = 0;  // Note [Grouped packing]
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const S* p) { return _mm512_load_pd(p); }
  static V loadu(const S* p) { return _mm512_loadu_pd(p); }
  static void storeu(S* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(S s) { return _mm512_set1_pd(s); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V swap_pairs(V x) { return _mm512_permute_pd(x, 0x55); }
  static V fmaddsub(V a, V b, V c) { return _mm512_fmaddsub_pd(a, b, c); }
  // The lanes of a + b added (Note [Lane sums] in gemv_kernels.h).
  static S sum_lanes(V a, V b) { return _mm512_reduce_add_pd(_mm512_add_pd(a, b)); }
  // Lanes 0 .. count-1 from p, the others zero; reads nothing past them.
  static V load_first(const S* p, int count) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << count) - 1), p);
  }
};

struct Avx512S {
  using S = float;
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr CpuIsa kTransposeIsa = CpuIsa::kAvx512;
  static constexpr int kPackGroupBytes = 0;  // Note [Grouped packing]
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const S* p) { return _mm512_load_ps(p); }
  static V loadu(const S* p) { return _mm512_loadu_ps(p); }
  static void storeu(S* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(S s) { return _mm512_set1_ps(s); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V swap_pairs(V x) { return _mm512_permute_ps(x, 0xB1); }
  static V fmaddsub(V a, V b, V c) { return _mm512_fmaddsub_ps(a, b, c); }
  static S sum_lanes(V a, V b) { return _mm512_reduce_add_ps(_mm512_add_ps(a, b)); }
  static V load_first(const S* p, int count) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1), p);
  }
};

// The small-problem tiles (Note [Small GEMM]): 16 of the 32 zmm registers.
struct Avx512Tiles {
  static constexpr int kVectorBytes = 64;
  static constexpr int kAccumulators = 16;
  // A vector's first lanes (Note [Partial small tiles]).
  static __m512 load_first(const float* p, int count) { return Avx512S::load_first(p, count); }
  static __m512d load_first(const double* p, int count) { return Avx512D::load_first(p, count); }
  static void store_first(float* p, __m512 v, int count) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1), v);
  }
  static void store_first(double* p, __m512d v, int count) {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << count) - 1), v);
  }
};

GemmKernelTable make_table() {
  GemmKernelTable t;
  t.isa = "avx512";
  t.f32 = make_real_set<Avx512S, 3, 8>(/*mc=*/384, /*kc=*/384, /*nc=*/4096);
  t.f64 = make_real_set<Avx512D, 3, 8>(/*mc=*/192, /*kc=*/256, /*nc=*/4096);
  t.c64 = make_complex_set<Avx512S, 3, 4>(/*mc=*/192, /*kc=*/256, /*nc=*/4096);
  t.c128 = make_complex_set<Avx512D, 3, 4>(/*mc=*/96, /*kc=*/256, /*nc=*/4096);
  add_small_tiles<Avx512Tiles>(t, /*max_mnk=*/64 * 64 * 64);
  // Note [Small complex GEMM]: as many accumulator pairs as the blocked tile.
  t.c64.small_tiles = &run_complex_small_tiles<Avx512S, 12>;
  t.c128.small_tiles = &run_complex_small_tiles<Avx512D, 12>;
  t.c64.small_max_mnk = t.c128.small_max_mnk = 64 * 64 * 64;
  return t;
}

}  // namespace

const GemmKernelTable& avx512_kernel_table() noexcept {
  static const GemmKernelTable table = make_table();  // immutable after initialisation
  return table;
}

}  // namespace tenferro::cpu::internal
