// Scalar: one value of any DType (constants, fill values, literals).
#pragma once

#include <complex>
#include <cstdint>
#include <string>

#include "tenferro/tensor/dtype.h"

namespace tenferro {

/// A dtype-tagged scalar. Integers are held as int64, reals as double and
/// complex values as complex<double>; value<T>() converts back. Regular value
/// type; equality compares dtype and exact value.
class Scalar {
 public:
  constexpr Scalar() noexcept : dtype_(DType::kFloat64), real_(0.0) {}
  template <class T>
  static Scalar of(T value) noexcept {
    Scalar s;
    s.dtype_ = dtype_of<T>;
    if constexpr (std::is_same_v<T, bool>) {
      s.int_ = value ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      s.int_ = static_cast<std::int64_t>(value);
    } else if constexpr (std::is_floating_point_v<T>) {
      s.real_ = static_cast<double>(value);
    } else {
      s.complex_ = std::complex<double>(value.real(), value.imag());
    }
    return s;
  }

  DType dtype() const noexcept { return dtype_; }

  /// The value converted to T (complex to real drops the imaginary part).
  template <class T>
  T value() const noexcept {
    std::complex<double> c = as_complex();
    if constexpr (std::is_same_v<T, bool>) {
      return c != std::complex<double>(0.0, 0.0);
    } else if constexpr (std::is_integral_v<T>) {
      return dtype_kind(dtype_) == DTypeKind::kInteger || dtype_ == DType::kBool ? static_cast<T>(int_)
                                                                                 : static_cast<T>(c.real());
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(c.real());
    } else {
      return T(static_cast<typename T::value_type>(c.real()), static_cast<typename T::value_type>(c.imag()));
    }
  }

  friend bool operator==(const Scalar& a, const Scalar& b) noexcept {
    if (a.dtype_ != b.dtype_) return false;
    switch (dtype_kind(a.dtype_)) {
      case DTypeKind::kBool:
      case DTypeKind::kInteger:
        return a.int_ == b.int_;
      case DTypeKind::kFloating:
        return a.real_ == b.real_;
      case DTypeKind::kComplex:
        return a.complex_ == b.complex_;
    }
    return false;
  }

  std::string to_string() const;

 private:
  std::complex<double> as_complex() const noexcept {
    switch (dtype_kind(dtype_)) {
      case DTypeKind::kBool:
      case DTypeKind::kInteger:
        return {static_cast<double>(int_), 0.0};
      case DTypeKind::kFloating:
        return {real_, 0.0};
      case DTypeKind::kComplex:
        return complex_;
    }
    return {};
  }

  DType dtype_;
  union {
    std::int64_t int_;
    double real_;
    std::complex<double> complex_;
  };
};

}  // namespace tenferro
