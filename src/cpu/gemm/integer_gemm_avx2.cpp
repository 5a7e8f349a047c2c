// AVX2 tiles of Note [Integer GEMM] (integer_gemm.h): 4 rows x 2 ymm
// (int32: 4 x 16, int64: 4 x 8, the products by vpmuldq where the values
// fit in int32, Note [Narrow int64 products]). Compiled with -mavx2
// -mno-avx512f whatever TENFERRO_ARCH says (Note [ISA translation units]).
#include <immintrin.h>

#include <bit>

#include "cpu/gemm/integer_gemm_impl.h"

namespace tenferro::cpu::internal {
namespace {

// Note [Narrow int64 products]: vpmuldq.
struct NarrowMul {
  template <class V>
  static V mul(V a, V b) {
    return std::bit_cast<V>(_mm256_mul_epi32(std::bit_cast<__m256i>(a), std::bit_cast<__m256i>(b)));
  }
};

}  // namespace

const IntegerGemmTable& avx2_integer_gemm_table() noexcept {
  static const IntegerGemmTable table{"avx2", integer_gemm::Tile<std::int32_t, 32, 4, 2>::kernel(),
                                      integer_gemm::Tile<std::int64_t, 32, 4, 2, NarrowMul>::kernel()};
  return table;
}

}  // namespace tenferro::cpu::internal
