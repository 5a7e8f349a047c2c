// Scalar functors of the elementwise ops, one per row of elementwise_ops.def
// (`<Name>Op`), plus compare, select and convert. Each is a template over the
// element type(s) instantiated only for the dtypes of its domain; the loops in
// elementwise_loop.h inline them into contiguous, vectorizable loops.
// Integer arithmetic wraps (it goes through the unsigned type) so that no
// input is undefined behaviour.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tenferro::cpu::internal {

template <class T>
inline constexpr bool kIsComplex = false;
template <class T>
inline constexpr bool kIsComplex<std::complex<T>> = true;

template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<std::complex<T>> {
  using type = T;
};
template <class T>
using real_of = typename RealOf<T>::type;

template <class T>
inline constexpr bool kIsWrappingInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
constexpr T wrap_add(T a, T b) noexcept {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
constexpr T wrap_sub(T a, T b) noexcept {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
constexpr T wrap_mul(T a, T b) noexcept {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// Complex multiply and divide written out: std::complex's operators call
// __muldc3/__divdc3 (NaN recovery, not vectorizable). Division uses Smith's
// algorithm to avoid overflow in |b|^2.
template <class R>
inline std::complex<R> complex_mul(std::complex<R> a, std::complex<R> b) noexcept {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
template <class R>
inline std::complex<R> complex_div(std::complex<R> a, std::complex<R> b) noexcept {
  const R br = b.real(), bi = b.imag();
  if (std::abs(br) >= std::abs(bi)) {
    const R r = bi / br, d = br + bi * r;
    return {(a.real() + a.imag() * r) / d, (a.imag() - a.real() * r) / d};
  }
  const R r = br / bi, d = bi + br * r;
  return {(a.real() * r + a.imag()) / d, (a.imag() * r - a.real()) / d};
}

// ---- unary ----
struct NegOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsWrappingInt<T>) return wrap_sub(T{0}, x);
    return -x;
  }
};
struct AbsOp {
  template <class T>
  real_of<T> operator()(T x) const noexcept {
    if constexpr (kIsWrappingInt<T>) return x < 0 ? wrap_sub(T{0}, x) : x;
    return std::abs(x);
  }
};
struct SignOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      const auto m = std::abs(x);
      return m == 0 ? T{} : T(x.real() / m, x.imag() / m);
    } else if constexpr (std::is_floating_point_v<T>) {
      return x > 0 ? T{1} : x < 0 ? T{-1} : x == 0 ? T{0} : x;  // NaN stays NaN
    } else {
      return static_cast<T>((x > 0) - (x < 0));
    }
  }
};
struct ExpOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::exp(x);
  }
};
struct LogOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::log(x);
  }
};
struct Log1pOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      // |1+z|^2 = 1 + (2x + x^2 + y^2): keeps accuracy for small |z|.
      const auto re = x.real(), im = x.imag();
      return T(real_of<T>(0.5) * std::log1p(re * (2 + re) + im * im), std::atan2(im, 1 + re));
    } else {
      return std::log1p(x);
    }
  }
};
struct Expm1Op {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      // exp(x)cos(y) - 1 = expm1(x)cos(y) - 2 sin^2(y/2).
      const auto re = x.real(), im = x.imag();
      const auto s = std::sin(im / 2);
      return T(std::expm1(re) * std::cos(im) - 2 * s * s, std::exp(re) * std::sin(im));
    } else {
      return std::expm1(x);
    }
  }
};
struct SqrtOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::sqrt(x);
  }
};
struct RsqrtOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) return complex_div(T(1), std::sqrt(x));
    return T{1} / std::sqrt(x);
  }
};
struct SinOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::sin(x);
  }
};
struct CosOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::cos(x);
  }
};
struct TanOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::tan(x);
  }
};
struct TanhOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::tanh(x);
  }
};
struct LogisticOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) return complex_div(T(1), T(1) + std::exp(-x));
    return T{1} / (T{1} + std::exp(-x));
  }
};
struct ConjOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) return std::conj(x);
    return x;
  }
};
struct RealOp {
  template <class T>
  real_of<T> operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      return x.real();
    } else {
      return x;
    }
  }
};
struct ImagOp {
  template <class T>
  real_of<T> operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      return x.imag();
    } else {
      return T{0};
    }
  }
};
struct FloorOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::floor(x);
  }
};
struct CeilOp {
  template <class T>
  T operator()(T x) const noexcept {
    return std::ceil(x);
  }
};
// Half to even without depending on the thread's floating-point rounding
// mode (std::nearbyint would follow it).
struct RoundOp {
  template <class T>
  T operator()(T x) const noexcept {
    const T r = std::round(x);
    return std::abs(x - r) == T(0.5) ? T(2) * std::round(x / T(2)) : r;
  }
};
struct IsFiniteOp {
  template <class T>
  bool operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      return std::isfinite(x.real()) && std::isfinite(x.imag());
    } else {
      return std::isfinite(x);
    }
  }
};
struct IsNanOp {
  template <class T>
  bool operator()(T x) const noexcept {
    if constexpr (kIsComplex<T>) {
      return std::isnan(x.real()) || std::isnan(x.imag());
    } else {
      return std::isnan(x);
    }
  }
};
struct NotOp {
  template <class T>
  T operator()(T x) const noexcept {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else {
      return static_cast<T>(~x);
    }
  }
};

// ---- binary ----
struct AddOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (kIsWrappingInt<T>) return wrap_add(a, b);
    return a + b;
  }
};
struct SubOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (kIsWrappingInt<T>) return wrap_sub(a, b);
    return a - b;
  }
};
struct MulOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (kIsWrappingInt<T>) return wrap_mul(a, b);
    if constexpr (kIsComplex<T>) return complex_mul(a, b);
    return a * b;
  }
};
// Integer divisors were checked for zero before the loop runs.
struct DivOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (kIsWrappingInt<T>) return b == -1 ? wrap_sub(T{0}, a) : static_cast<T>(a / b);
    if constexpr (kIsComplex<T>) return complex_div(a, b);
    return a / b;
  }
};
struct PowOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return std::pow(a, b);
  }
};
struct MaxOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (std::is_floating_point_v<T>) return (a > b || a != a) ? a : b;
    return a > b ? a : b;
  }
};
struct MinOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (std::is_floating_point_v<T>) return (a < b || a != a) ? a : b;
    return a < b ? a : b;
  }
};
struct Atan2Op {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return std::atan2(a, b);
  }
};
struct ComplexOp {
  template <class T>
  std::complex<T> operator()(T re, T im) const noexcept {
    return {re, im};
  }
};
// fmod: the sign of the dividend (C fmod). Integer divisors are nonzero
// (checked before the loop); -1 is special-cased because INT_MIN % -1
// overflows.
struct FmodOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    if constexpr (kIsWrappingInt<T>) {
      return b == -1 ? T{0} : static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
// remainder: the sign of the divisor (Python %, numpy.remainder), with a
// zero result carrying the divisor's sign as numpy does.
struct RemainderOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    T r = FmodOp{}(a, b);
    if constexpr (kIsWrappingInt<T>) {
      return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
    } else {
      if (b == 0) return r;  // NaN
      if (r == 0) return std::copysign(T(0), b);
      return (r < 0) != (b < 0) ? r + b : r;
    }
  }
};
struct AndOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return static_cast<T>(a & b);
  }
};
struct OrOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return static_cast<T>(a | b);
  }
};
struct XorOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return static_cast<T>(a ^ b);
  }
};
// Shifts by a negative amount or by at least the bit width are defined as
// in StableHLO instead of being undefined behaviour.
template <class T>
constexpr bool shift_in_range(T amount) noexcept {
  return amount >= 0 && amount < static_cast<T>(sizeof(T) * 8);
}
struct ShiftLeftOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    using U = std::make_unsigned_t<T>;
    return shift_in_range(b) ? static_cast<T>(static_cast<U>(a) << b) : T{0};
  }
};
struct ShiftRightArithmeticOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    return shift_in_range(b) ? static_cast<T>(a >> b) : (a < 0 ? T{-1} : T{0});
  }
};
struct ShiftRightLogicalOp {
  template <class T>
  T operator()(T a, T b) const noexcept {
    using U = std::make_unsigned_t<T>;
    return shift_in_range(b) ? static_cast<T>(static_cast<U>(a) >> b) : T{0};
  }
};

// ---- compare, select, convert ----
struct EqOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a == b;
  }
};
struct NeOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a != b;
  }
};
struct LtOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a < b;
  }
};
struct LeOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a <= b;
  }
};
struct GtOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a > b;
  }
};
struct GeOp {
  template <class T>
  bool operator()(T a, T b) const noexcept {
    return a >= b;
  }
};
struct SelectOp {
  template <class T>
  T operator()(bool pred, T on_true, T on_false) const noexcept {
    return pred ? on_true : on_false;
  }
};

struct ClampOp {
  template <class T>
  T operator()(T lo, T x, T hi) const noexcept {
    return MinOp{}(MaxOp{}(x, lo), hi);
  }
};

/// Converts one value (see convert() in elementwise.h for the rules).
template <class To, class From>
To convert_value(From x) noexcept {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsComplex<From>) return x.real() != 0 || x.imag() != 0;
    return x != From{0};
  } else if constexpr (kIsComplex<From>) {
    if constexpr (kIsComplex<To>) {
      using R = typename To::value_type;
      return To(static_cast<R>(x.real()), static_cast<R>(x.imag()));
    } else {
      return convert_value<To>(x.real());
    }
  } else if constexpr (kIsComplex<To>) {
    return To(convert_value<typename To::value_type>(x), 0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // -2^(k-1) is exact in every float type; the max rounds up to 2^(k-1).
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (x != x) return To{0};
    if (x <= lo) return std::numeric_limits<To>::min();
    if (x >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <class To>
struct ConvertOp {
  template <class From>
  To operator()(From x) const noexcept {
    return convert_value<To>(x);
  }
};

}  // namespace tenferro::cpu::internal
