// The portable tiles of Note [Integer GEMM] (integer_gemm.h), 4 rows x 2
// 16-byte vectors, and the choice of a table by ISA.
#include "cpu/gemm/integer_gemm.h"

#include "cpu/gemm/integer_gemm_impl.h"

namespace tenferro::cpu::internal {

const IntegerGemmTable& portable_integer_gemm_table() noexcept {
  static const IntegerGemmTable table{"portable", integer_gemm::Tile<std::int32_t, 16, 4, 2>::kernel(),
                                      integer_gemm::Tile<std::int64_t, 16, 4, 2>::kernel()};
  return table;
}

const IntegerGemmTable& integer_gemm_table(CpuIsa isa) noexcept {
  switch (isa == CpuIsa::kAuto ? layout_kernel_isa() : isa) {
    case CpuIsa::kAvx512:
      return avx512_integer_gemm_table();
    case CpuIsa::kAvx2:
      return avx2_integer_gemm_table();
    default:
      return portable_integer_gemm_table();
  }
}

}  // namespace tenferro::cpu::internal
