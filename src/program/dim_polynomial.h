// The canonical polynomial behind a non-exact SymbolicExtent (Note
// [Symbolic extents]). Private to the program component.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <limits>
#include <memory>

#include "tenferro/base/small_vector.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::program::internal {

inline constexpr std::int64_t kPlusInfinity = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kMinusInfinity = std::numeric_limits<std::int64_t>::min();
/// The symbol index of a placeholder (SymbolicExtent::bounded/unknown).
inline constexpr std::uint32_t kPlaceholderSymbol = std::numeric_limits<std::uint32_t>::max();

/// A factor of a monomial: a symbol, or min/max of two extents.
struct DimAtom {
  enum class Kind : std::uint8_t { kSymbol, kMin, kMax };
  Kind kind = Kind::kSymbol;
  std::uint32_t symbol = 0;
  std::int64_t bound = kPlusInfinity;                         ///< symbol upper bound
  std::shared_ptr<const std::array<SymbolicExtent, 2>> args;  ///< kMin/kMax, sorted
};

/// coefficient * product(factors); factors sorted, with repetition.
struct DimTerm {
  std::int64_t coefficient = 0;
  SmallVector<DimAtom, 2> factors;
};

struct DimPolynomial {
  /// Sorted by monomial (the constant term, with no factors, first); no zero
  /// coefficients; at least one non-constant term.
  SmallVector<DimTerm, 2> terms;
  std::uint64_t hash = 0;
  std::int64_t lower = 0;  ///< kMinusInfinity when unbounded below
  std::int64_t upper = 0;  ///< kPlusInfinity when unbounded
  std::uint32_t symbol_limit = 0;
  bool has_placeholder = false;

  /// Normalises `terms` (sort, merge, drop zeros) into an extent; an
  /// all-constant result is an exact extent.
  static SymbolicExtent make(SmallVector<DimTerm, 2> terms);
  /// The polynomial of `extent`, or nullptr when it is exact.
  static const DimPolynomial* of(const SymbolicExtent& extent) noexcept { return extent.poly_.get(); }
  static std::int64_t constant_of(const SymbolicExtent& extent) noexcept { return extent.constant_; }
};

std::strong_ordering compare_atoms(const DimAtom& a, const DimAtom& b) noexcept;

}  // namespace tenferro::program::internal
