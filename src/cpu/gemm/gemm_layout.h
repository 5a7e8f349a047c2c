// Internal layout helpers shared by the GEMM providers and the dot_general
// composite: how a strided matrix maps onto a column-major BLAS call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace tenferro::cpu::internal {

/// Column-major with a leading dimension: unit row stride (unless a single
/// row) and a column stride of at least the row count (unless one column).
inline bool fits_col_major(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
  if (rows > 1 && rs != 1) return false;
  return cols <= 1 || cs >= std::max<std::int64_t>(rows, 1);
}

/// A matrix as a column-major BLAS operand: op(X) with X column-major.
struct BlasOperand {
  bool transposed = false;
  std::int64_t ld = 1;
};

/// The rows x cols matrix at (rs, cs) as a column-major BLAS operand, or
/// nullopt when neither it nor its transpose is column-major.
inline std::optional<BlasOperand> as_blas_operand(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                                  std::int64_t cs) {
  if (fits_col_major(rows, cols, rs, cs)) return BlasOperand{false, cols <= 1 ? std::max<std::int64_t>(rows, 1) : cs};
  if (fits_col_major(cols, rows, cs, rs)) return BlasOperand{true, rows <= 1 ? std::max<std::int64_t>(cols, 1) : rs};
  return std::nullopt;
}

}  // namespace tenferro::cpu::internal
