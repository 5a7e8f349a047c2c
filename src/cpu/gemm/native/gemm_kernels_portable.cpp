// Portable GEMM kernels: plain C++ over fixed-width lane arrays that the
// compiler may vectorise for whatever target the project is built for. Used
// on CPUs without AVX2 and as a cross-check of the SIMD kernels in tests.
#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/micro_kernels.h"
#include "cpu/gemm/native/small_tiles.h"

namespace tenferro::cpu::internal {
namespace {

template <class Scalar>
struct PortableIsa {
  using S = Scalar;
  static constexpr int kLanes = 4;
  static constexpr CpuIsa kTransposeIsa = CpuIsa::kPortable;
  static constexpr int kPackGroupBytes = 0;  // Note [Grouped packing]
  struct V {
    S x[kLanes];
  };
  static V zero() { return V{}; }
  static V load(const S* p) { return loadu(p); }
  static V loadu(const S* p) {
    V v;
    for (int i = 0; i < kLanes; ++i) v.x[i] = p[i];
    return v;
  }
  static void storeu(S* p, V v) {
    for (int i = 0; i < kLanes; ++i) p[i] = v.x[i];
  }
  static V set1(S s) {
    V v;
    for (int i = 0; i < kLanes; ++i) v.x[i] = s;
    return v;
  }
  static V fmadd(V a, V b, V c) {
    for (int i = 0; i < kLanes; ++i) c.x[i] += a.x[i] * b.x[i];
    return c;
  }
  static V mul(V a, V b) {
    for (int i = 0; i < kLanes; ++i) a.x[i] *= b.x[i];
    return a;
  }
  static V swap_pairs(V a) {
    for (int i = 0; i < kLanes; i += 2) {
      const S t = a.x[i];
      a.x[i] = a.x[i + 1];
      a.x[i + 1] = t;
    }
    return a;
  }
  static V fmaddsub(V a, V b, V c) {
    for (int i = 0; i < kLanes; ++i) a.x[i] = a.x[i] * b.x[i] + (i % 2 == 0 ? -c.x[i] : c.x[i]);
    return a;
  }
};

// The small-problem tiles (Note [Small GEMM]): 8 xmm registers.
struct PortableTiles {
  static constexpr int kVectorBytes = 16;
  static constexpr int kAccumulators = 8;
};

GemmKernelTable make_table() {
  GemmKernelTable t;
  t.isa = "portable";
  t.f32 = make_real_set<PortableIsa<float>, 2, 4>(/*mc=*/256, /*kc=*/256, /*nc=*/4096);
  t.f64 = make_real_set<PortableIsa<double>, 2, 4>(/*mc=*/128, /*kc=*/256, /*nc=*/4096);
  t.c64 = make_complex_set<PortableIsa<float>, 2, 2>(/*mc=*/128, /*kc=*/256, /*nc=*/4096);
  t.c128 = make_complex_set<PortableIsa<double>, 2, 2>(/*mc=*/64, /*kc=*/256, /*nc=*/4096);
  add_small_tiles<PortableTiles>(t, /*max_mnk=*/16 * 16 * 16);
  return t;
}

}  // namespace

const GemmKernelTable& portable_kernel_table() noexcept {
  static const GemmKernelTable table = make_table();  // immutable after initialisation
  return table;
}

}  // namespace tenferro::cpu::internal
