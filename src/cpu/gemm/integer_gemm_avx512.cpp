// AVX-512 tiles of Note [Integer GEMM] (integer_gemm.h): 8 rows x 2 zmm
// (int32: 8 x 32, int64: 8 x 16 with AVX-512DQ's vpmullq, or vpmuldq
// where the values fit in int32, Note [Narrow int64 products]). Compiled with
// AVX-512 flags whatever TENFERRO_ARCH says (Note [ISA translation units]).
#include <immintrin.h>

#include <bit>

#include "cpu/gemm/integer_gemm_impl.h"

namespace tenferro::cpu::internal {
namespace {

// Note [Narrow int64 products]: vpmuldq.
struct NarrowMul {
  template <class V>
  static V mul(V a, V b) {
    // The masked form: GCC 12's _mm512_mul_epi32 starts from an undefined
    // vector, which -Wmaybe-uninitialized reports.
    return std::bit_cast<V>(_mm512_maskz_mul_epi32(0xFF, std::bit_cast<__m512i>(a), std::bit_cast<__m512i>(b)));
  }
};

}  // namespace

const IntegerGemmTable& avx512_integer_gemm_table() noexcept {
  static const IntegerGemmTable table{"avx512", integer_gemm::Tile<std::int32_t, 64, 8, 2>::kernel(),
                                      integer_gemm::Tile<std::int64_t, 64, 8, 2, NarrowMul>::kernel()};
  return table;
}

}  // namespace tenferro::cpu::internal
