// CoreSemanticOp: the closed vocabulary of core semantic operations and its
// per-op traits, all generated from the single table core_ops.def
// (semantics in docs/core_ops.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "tenferro/program/attributes.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::program {

/// MaxOperands of a variadic op.
inline constexpr int kVariadic = -1;

/// The core operations. Closed: passes may switch over it exhaustively.
enum class CoreSemanticOp : std::uint8_t {
#define TENFERRO_CORE_OP(name, ...) k##name,
#include "tenferro/program/core_ops.def"
};

inline constexpr int kNumCoreOps = 0
#define TENFERRO_CORE_OP(...) +1
#include "tenferro/program/core_ops.def"
    ;

/// Which dtypes a data operand may have.
enum class DTypeClass : std::uint8_t {
  kAny,          ///< every dtype
  kBool,         ///< bool only
  kNumeric,      ///< integers, floating, complex (not bool)
  kRealNumeric,  ///< integers and floating
  kInexact,      ///< floating and complex
  kFloating,     ///< floating only
  kIntegral,     ///< bool and integers (bitwise ops)
  kInteger,      ///< integers only (shifts)
};
std::string_view to_string(DTypeClass dtype_class) noexcept;
bool dtype_in_class(DType dtype, DTypeClass dtype_class) noexcept;

/// How the result dtype follows from the operands/attributes.
enum class ResultDTypeRule : std::uint8_t {
  kSameAsOperand,     ///< the data operands' dtype
  kRealOfOperand,     ///< real_dtype() of it (abs, real, imag)
  kComplexOfOperand,  ///< complex_dtype() of it (complex)
  kBool,              ///< bool (compare)
  kInt64,             ///< int64 (argmax, argmin)
  kFromAttributes,    ///< named by the attributes (convert, constant, iota)
};

/// Effects of a core op (all pure today; the column keeps the table honest).
enum class EffectClass : std::uint8_t { kPure };
/// Aliasing of a core op's single result (follows from its MovementClass).
enum class AliasClass : std::uint8_t {
  kFresh,           ///< a new value
  kViewOfOperand0,  ///< may be a view of operand 0 (transpose, reshape, ...)
};

// Note [Core op families]
// Every core op names its family in core_ops.def, and every consumer that
// treats ops by kind (metadata inference, the reference evaluator, the
// runtime's provider family, AD) dispatches on that column with an
// exhaustive switch over CoreOpFamily, never on a hand-kept list of ops with
// a default branch. A new op therefore cannot fall silently into the wrong
// kind: it must declare its family to compile, and a family whose per-op
// rule is missing fails loudly (kInternal) rather than running another
// family's rule.

/// The kind of computation a core op performs (core_ops.def column Family).
enum class CoreOpFamily : std::uint8_t {
  kElementwise,   ///< y[i] = f(x0[i], x1[i], ...), same shapes
  kCreation,      ///< no data operands (constant, iota)
  kDataMovement,  ///< moves or selects elements without arithmetic
  kReduction,     ///< removes axes by combining elements
  kAlongAxis,     ///< maps every lane along one axis to a lane of equal length (scans, sorts)
  kContraction,   ///< dot_general
};
std::string_view to_string(CoreOpFamily family) noexcept;

/// How a data-movement op produces its result (core_ops.def column
/// Movement); kNone for every other family.
enum class MovementClass : std::uint8_t {
  kNone,  ///< not a data-movement op
  kView,  ///< metadata-only: the result may stay a view of operand 0
  kCopy,  ///< writes a fresh result (an indexing provider)
};

/// The traits of one core op, from its row in core_ops.def.
struct CoreOpInfo {
  std::string_view name;
  int min_operands;
  int max_operands;              ///< kVariadic: unbounded
  std::size_t attributes_index;  ///< CoreAttributes alternative it takes
  DTypeClass operand_dtypes;
  ResultDTypeRule result_dtype;
  EffectClass effect;
  CoreOpFamily family;
  MovementClass movement;
  AliasClass alias;  ///< kViewOfOperand0 exactly when movement is kView
};

namespace internal {
template <class T, class Variant>
struct VariantIndex;
template <class T, class... Ts>
struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool matches[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
      if (matches[i]) return i;
    return sizeof...(Ts);
  }();
};

inline constexpr CoreOpInfo kCoreOpInfo[] = {
#define TENFERRO_CORE_OP(name, str, min_operands, max_operands, attributes, operand_dtypes, result_dtype, effect, \
                         family, movement)                                                                        \
  {str,                                                                                                           \
   min_operands,                                                                                                  \
   max_operands,                                                                                                  \
   VariantIndex<attributes, CoreAttributes>::value,                                                               \
   DTypeClass::k##operand_dtypes,                                                                                 \
   ResultDTypeRule::k##result_dtype,                                                                              \
   EffectClass::k##effect,                                                                                        \
   CoreOpFamily::k##family,                                                                                       \
   MovementClass::k##movement,                                                                                    \
   MovementClass::k##movement == MovementClass::kView ? AliasClass::kViewOfOperand0 : AliasClass::kFresh},
#include "tenferro/program/core_ops.def"
};

/// A Movement other than None exactly on data-movement rows.
constexpr bool movement_matches_family() {
  for (const CoreOpInfo& info : kCoreOpInfo)
    if ((info.movement != MovementClass::kNone) != (info.family == CoreOpFamily::kDataMovement)) return false;
  return true;
}
static_assert(movement_matches_family(), "core_ops.def: Movement must be None exactly when Family is not DataMovement");
}  // namespace internal

/// The traits of `op`.
constexpr const CoreOpInfo& core_op_info(CoreSemanticOp op) noexcept {
  return internal::kCoreOpInfo[static_cast<std::size_t>(op)];
}
constexpr std::string_view to_string(CoreSemanticOp op) noexcept { return core_op_info(op).name; }
/// The op named `name` ("dot_general"), nullopt when unknown.
std::optional<CoreSemanticOp> parse_core_op(std::string_view name) noexcept;

/// The attribute struct type `op` takes, for generic code:
///   CoreOpAttributes<CoreSemanticOp::kTranspose> is TransposeAttributes.
template <CoreSemanticOp Op>
using CoreOpAttributes = std::variant_alternative_t<core_op_info(Op).attributes_index, CoreAttributes>;

}  // namespace tenferro::program

template <>
struct fmt::formatter<tenferro::program::CoreSemanticOp> : fmt::formatter<std::string_view> {
  auto format(tenferro::program::CoreSemanticOp op, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(tenferro::program::to_string(op), ctx);
  }
};
