// DType: the element types tenferro computes with, generated from dtype.def,
// with their size, alignment, name and the compile-time mapping to C++ types.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace tenferro {

enum class DType : std::uint8_t {
#define TENFERRO_DTYPE(name, str, cpp, kind) k##name,
#include "tenferro/tensor/dtype.def"
};

inline constexpr int kNumDTypes = 0
#define TENFERRO_DTYPE(name, str, cpp, kind) +1
#include "tenferro/tensor/dtype.def"
    ;

enum class DTypeKind : std::uint8_t { kBool, kInteger, kFloating, kComplex };

namespace internal {
struct DTypeInfo {
  std::string_view name;
  std::size_t size;
  std::size_t alignment;
  DTypeKind kind;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
#define TENFERRO_DTYPE(name, str, cpp, kind) {str, sizeof(cpp), alignof(cpp), DTypeKind::k##kind},
#include "tenferro/tensor/dtype.def"
};
}  // namespace internal

constexpr std::size_t dtype_size(DType d) noexcept { return internal::kDTypeInfo[static_cast<int>(d)].size; }
constexpr std::size_t dtype_alignment(DType d) noexcept { return internal::kDTypeInfo[static_cast<int>(d)].alignment; }
constexpr DTypeKind dtype_kind(DType d) noexcept { return internal::kDTypeInfo[static_cast<int>(d)].kind; }
constexpr std::string_view to_string(DType d) noexcept { return internal::kDTypeInfo[static_cast<int>(d)].name; }
constexpr bool is_complex(DType d) noexcept { return dtype_kind(d) == DTypeKind::kComplex; }
constexpr bool is_floating(DType d) noexcept { return dtype_kind(d) == DTypeKind::kFloating; }
/// Floating or complex: types with a derivative and a notion of precision.
constexpr bool is_inexact(DType d) noexcept { return is_floating(d) || is_complex(d); }
constexpr bool is_integer(DType d) noexcept { return dtype_kind(d) == DTypeKind::kInteger; }

/// float32 for complex64, float64 for complex128, the type itself otherwise.
constexpr DType real_dtype(DType d) noexcept {
  return d == DType::kComplex64 ? DType::kFloat32 : d == DType::kComplex128 ? DType::kFloat64 : d;
}
/// complex64 for float32, complex128 for float64, complex types themselves;
/// nullopt for bool and integers.
constexpr std::optional<DType> complex_dtype(DType d) noexcept {
  switch (d) {
    case DType::kFloat32:
    case DType::kComplex64:
      return DType::kComplex64;
    case DType::kFloat64:
    case DType::kComplex128:
      return DType::kComplex128;
    default:
      return std::nullopt;
  }
}
/// The dtype two operands of `a` and `b` compute in, as numpy's
/// promote_types: bool gives way to anything; integers widen; an integer
/// with a floating type gives float64 (int32 + float32 too, as numpy); a
/// real type with a complex one gives complex128 when either side has 64-bit
/// parts or is an integer, complex64 otherwise.
constexpr DType promote_types(DType a, DType b) noexcept {
  if (a == b || b == DType::kBool) return a;
  if (a == DType::kBool) return b;
  const DTypeKind ka = dtype_kind(a), kb = dtype_kind(b);
  if (ka == DTypeKind::kInteger && kb == DTypeKind::kInteger) return DType::kInt64;  // int32 + int64
  const bool integer = ka == DTypeKind::kInteger || kb == DTypeKind::kInteger;
  const bool wide =
      integer || a == DType::kFloat64 || a == DType::kComplex128 || b == DType::kFloat64 || b == DType::kComplex128;
  if (is_complex(a) || is_complex(b)) return wide ? DType::kComplex128 : DType::kComplex64;
  return wide ? DType::kFloat64 : DType::kFloat32;
}
/// Parses a name such as "float64"; nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name) noexcept;

/// The DType of C++ type T (compile error for unsupported types).
template <class T>
struct DTypeOf;
#define TENFERRO_DTYPE(name, str, cpp, kind)       \
  template <>                                      \
  struct DTypeOf<cpp> {                            \
    static constexpr DType value = DType::k##name; \
  };
#include "tenferro/tensor/dtype.def"
template <class T>
inline constexpr DType dtype_of = DTypeOf<std::remove_cv_t<T>>::value;

/// The C++ type of DType D.
template <DType D>
struct CppTypeOf;
#define TENFERRO_DTYPE(name, str, cpp, kind) \
  template <>                                \
  struct CppTypeOf<DType::k##name> {         \
    using type = cpp;                        \
  };
#include "tenferro/tensor/dtype.def"
template <DType D>
using cpp_type = typename CppTypeOf<D>::type;

/// Calls `f(T{})`-style with a value-initialised tag of the C++ type of `d`:
///   visit_dtype(d, [&]<class T>(T) { ... });
/// The switch happens once per call, never per element.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
#define TENFERRO_DTYPE(name, str, cpp, kind) \
  case DType::k##name:                       \
    return std::forward<F>(f)(cpp{});
#include "tenferro/tensor/dtype.def"
  }
  return std::forward<F>(f)(bool{});  // unreachable for valid DTypes
}

}  // namespace tenferro

template <>
struct fmt::formatter<tenferro::DType> : fmt::formatter<std::string_view> {
  auto format(tenferro::DType d, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(tenferro::to_string(d), ctx);
  }
};
