// Symbolic extents and value metadata: what the semantic program knows about
// a dimension before concrete inputs arrive.
//
// Note [Symbolic extents]
// An extent is exact (a known value), bounded (unknown, with a known upper
// bound) or unknown. Non-exact extents are integer expressions over
// dimension symbols: a symbol is introduced by a program input
// (ProgramBuilder::add_input) and numbered in order of first appearance in
// the input schemas, so numbering is canonical. Expressions are kept in a
// canonical polynomial normal form whose atoms are symbols and min/max of
// two expressions, so `n*(m+1)` and `n*m + n` are the same extent and
// structural equality decides "provably equal". Every expression carries the
// bounds implied by its symbols' bounds, which is how a bounded (or unknown)
// guarantee survives core and extension inference: neg(x) keeps x's bound,
// concatenate sums bounds, an unknown input keeps its results unknown.
//
// SymbolicExtent::bounded() and ::unknown() create *placeholders*: requests
// for a fresh symbol that are only meaningful as an input schema extent;
// anywhere else the builder rejects them.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/tensor/dtype.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::program {

namespace internal {
struct DimPolynomial;
}  // namespace internal

/// How much is known about an extent.
enum class ExtentKind : std::uint8_t {
  kExact,    ///< the value is known
  kBounded,  ///< unknown, but at most upper_bound()
  kUnknown,  ///< nothing is known beyond being a non-negative integer
};
std::string_view to_string(ExtentKind kind) noexcept;

/// One dimension extent (Note [Symbolic extents]). Immutable value type:
/// exact extents hold no allocation; symbolic ones share an immutable
/// expression. Thread-safe as a value.
class SymbolicExtent {
 public:
  /// The exact extent 0.
  SymbolicExtent() noexcept = default;
  /// An exact extent; implicit so shapes read `{n, 3}`.
  SymbolicExtent(std::int64_t exact) noexcept : constant_(exact) {}  // NOLINT(google-explicit-constructor)
  /// Disambiguates int literals.
  SymbolicExtent(int exact) noexcept : constant_(exact) {}  // NOLINT(google-explicit-constructor)

  static SymbolicExtent exact(std::int64_t value) noexcept { return SymbolicExtent(value); }
  /// Placeholder for a fresh symbol with `upper_bound` (input schemas only).
  static SymbolicExtent bounded(std::int64_t upper_bound);
  /// Placeholder for a fresh unbounded symbol (input schemas only).
  static SymbolicExtent unknown();
  /// Symbol `index` with `upper_bound` (nullopt: unbounded). Builders create
  /// symbols; other code reads them from metadata rather than forging them.
  static SymbolicExtent symbol(std::uint32_t index, std::optional<std::int64_t> upper_bound);

  ExtentKind kind() const noexcept;
  bool is_exact() const noexcept { return poly_ == nullptr; }
  /// The value of an exact extent, nullopt otherwise.
  std::optional<std::int64_t> exact_value() const noexcept {
    return is_exact() ? std::optional<std::int64_t>(constant_) : std::nullopt;
  }
  /// Tightest known upper bound (the value itself when exact); nullopt when unbounded.
  std::optional<std::int64_t> upper_bound() const noexcept;
  /// Known lower bound (the value itself when exact). An expression such as
  /// `s0 - 1` can have a negative lower bound.
  std::int64_t lower_bound() const noexcept;
  /// The symbol index when this extent is exactly one symbol.
  std::optional<std::uint32_t> as_symbol() const noexcept;
  /// True for an unbound bounded()/unknown() placeholder.
  bool is_placeholder() const noexcept;
  /// True when a placeholder occurs anywhere in the expression.
  bool contains_placeholder() const noexcept;
  /// One more than the largest symbol index used (0 when none).
  std::uint32_t symbol_limit() const noexcept;

  friend SymbolicExtent operator+(const SymbolicExtent& a, const SymbolicExtent& b);
  friend SymbolicExtent operator-(const SymbolicExtent& a, const SymbolicExtent& b);
  friend SymbolicExtent operator*(const SymbolicExtent& a, const SymbolicExtent& b);
  friend SymbolicExtent min(const SymbolicExtent& a, const SymbolicExtent& b);
  friend SymbolicExtent max(const SymbolicExtent& a, const SymbolicExtent& b);

  /// Structural equality of canonical forms ("provably equal").
  friend bool operator==(const SymbolicExtent& a, const SymbolicExtent& b) noexcept;
  /// A total order on canonical forms (exact extents first, by value).
  friend std::strong_ordering operator<=>(const SymbolicExtent& a, const SymbolicExtent& b) noexcept;
  std::uint64_t hash() const noexcept;

  /// The value for concrete `symbol_values` (indexed by symbol). Returns false
  /// when a symbol is missing or the arithmetic overflows. Never allocates.
  bool try_evaluate(std::span<const std::int64_t> symbol_values, std::int64_t* out) const noexcept;
  /// Replaces symbol i by `by_symbol[i]`; precondition: symbol_limit() <= by_symbol.size().
  SymbolicExtent substitute(std::span<const SymbolicExtent> by_symbol) const;
  /// Readable form: "3", "s0", "2*s0*s1 + s2 - 1", "min(s0, s1)".
  std::string to_string() const;

 private:
  friend struct internal::DimPolynomial;
  explicit SymbolicExtent(std::shared_ptr<const internal::DimPolynomial> poly) noexcept : poly_(std::move(poly)) {}

  std::shared_ptr<const internal::DimPolynomial> poly_;  // null: exact constant_
  std::int64_t constant_ = 0;
};

/// Inline capacity covers rank <= 4 without touching the heap.
using SymbolicShape = SmallVector<SymbolicExtent, 4>;

/// "[s0, 3]".
std::string shape_string(std::span<const SymbolicExtent> shape);
/// The exact shape as symbolic extents.
SymbolicShape symbolic_shape(IntArrayRef exact_shape);
/// The exact values when every extent is exact, nullopt otherwise.
std::optional<Dims> exact_shape(std::span<const SymbolicExtent> shape);
/// Product of the extents (exact 1 for rank 0).
SymbolicExtent symbolic_numel(std::span<const SymbolicExtent> shape);

/// What the program knows about one SSA value: dtype and symbolic shape.
/// Regular value type; thread-safe as a value.
struct ValueMetadata {
  DType dtype = DType::kFloat64;
  SymbolicShape shape;

  static ValueMetadata exact(DType dtype, IntArrayRef shape) { return {dtype, symbolic_shape(shape)}; }
  std::int64_t rank() const noexcept { return static_cast<std::int64_t>(shape.size()); }
  bool is_exact() const noexcept;
  std::uint64_t hash() const noexcept;
  /// "float64[s0, 3]".
  std::string to_string() const;

  friend bool operator==(const ValueMetadata& a, const ValueMetadata& b) noexcept {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
};

}  // namespace tenferro::program
