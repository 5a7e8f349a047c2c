// Reference evaluation of elementwise core ops (docs/core_ops.md
// "Elementwise unary", "Elementwise binary", "Other elementwise").
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "reference_ops.h"
#include "tenferro/program/core_op.h"

namespace tenferro::testing::internal {
namespace {

using program::ComparisonDirection;
using program::CoreSemanticOp;

Error unexpected(const CoreCall& call, DType dtype) {
  return make_error(ErrorCode::kInternal, ErrorStage::kCompletion,
                    "reference evaluator: {} on {} passed program validation but has no reference rule", call.op.name(),
                    dtype);
}

/// y[i] = f(x[i]) with result element type R.
template <class R, class T, class F>
Result<Tensor> map_unary(const Tensor& x, F f) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(x.shape(), dtype_of<R>));
  const T* src = elements<T>(x);
  R* dst = mutable_elements<R>(y);
  for (std::int64_t i = 0; i < x.numel(); ++i) dst[i] = f(src[i]);
  return y;
}

/// y[i] = f(a[i], b[i]).
template <class R, class T, class F>
Result<Tensor> map_binary(const Tensor& a, const Tensor& b, F f) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(a.shape(), dtype_of<R>));
  const T* pa = elements<T>(a);
  const T* pb = elements<T>(b);
  R* dst = mutable_elements<R>(y);
  for (std::int64_t i = 0; i < a.numel(); ++i) dst[i] = f(pa[i], pb[i]);
  return y;
}

template <class T>
auto real_part(T x) {
  if constexpr (kIsComplex<T>) {
    return x.real();
  } else {
    return x;
  }
}

template <class T>
Result<Tensor> unary_inexact(const CoreCall& call, const Tensor& x) {
  const T one(1);
  switch (call.op.core_op()) {
    case CoreSemanticOp::kExp:
      return map_unary<T, T>(x, [](T v) { return std::exp(v); });
    case CoreSemanticOp::kLog:
      return map_unary<T, T>(x, [](T v) { return std::log(v); });
    case CoreSemanticOp::kLog1p:
      if constexpr (kIsComplex<T>) {
        return map_unary<T, T>(x, [&](T v) { return std::log(one + v); });
      } else {
        return map_unary<T, T>(x, [](T v) { return std::log1p(v); });
      }
    case CoreSemanticOp::kExpm1:
      if constexpr (kIsComplex<T>) {
        return map_unary<T, T>(x, [&](T v) { return std::exp(v) - one; });
      } else {
        return map_unary<T, T>(x, [](T v) { return std::expm1(v); });
      }
    case CoreSemanticOp::kSqrt:
      return map_unary<T, T>(x, [](T v) { return std::sqrt(v); });
    case CoreSemanticOp::kRsqrt:
      return map_unary<T, T>(x, [&](T v) { return one / std::sqrt(v); });
    case CoreSemanticOp::kSin:
      return map_unary<T, T>(x, [](T v) { return std::sin(v); });
    case CoreSemanticOp::kCos:
      return map_unary<T, T>(x, [](T v) { return std::cos(v); });
    case CoreSemanticOp::kTan:
      return map_unary<T, T>(x, [](T v) { return std::tan(v); });
    case CoreSemanticOp::kTanh:
      return map_unary<T, T>(x, [](T v) { return std::tanh(v); });
    case CoreSemanticOp::kLogistic:
      return map_unary<T, T>(x, [&](T v) { return one / (one + std::exp(-v)); });
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (call.op.core_op()) {
      case CoreSemanticOp::kFloor:
        return map_unary<T, T>(x, [](T v) { return std::floor(v); });
      case CoreSemanticOp::kCeil:
        return map_unary<T, T>(x, [](T v) { return std::ceil(v); });
      case CoreSemanticOp::kRound:
        // The oracle relies on the default round-to-nearest-even mode.
        return map_unary<T, T>(x, [](T v) { return std::nearbyint(v); });
      default:
        break;
    }
  }
  return unexpected(call, x.dtype());
}

template <class T>
Result<Tensor> unary(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  using R = decltype(real_part(T{}));
  switch (call.op.core_op()) {
    case CoreSemanticOp::kNot:
      if constexpr (std::is_same_v<T, bool>) return map_unary<bool, bool>(x, [](bool v) { return !v; });
      // Two's complement: ~v == -v - 1.
      if constexpr (kIsInteger<T>) return map_unary<T, T>(x, [](T v) { return wrap_sub(wrap_sub(T{}, v), T(1)); });
      break;
    case CoreSemanticOp::kIsFinite:
      if constexpr (kIsComplex<T>) {
        return map_unary<bool, T>(x, [](T v) { return std::isfinite(v.real()) && std::isfinite(v.imag()); });
      } else if constexpr (std::is_floating_point_v<T>) {
        return map_unary<bool, T>(x, [](T v) { return v - v == v - v; });  // inf - inf and NaN are NaN
      }
      break;
    case CoreSemanticOp::kIsNan:
      if constexpr (kIsComplex<T>) {
        return map_unary<bool, T>(x, [](T v) { return v.real() != v.real() || v.imag() != v.imag(); });
      } else if constexpr (std::is_floating_point_v<T>) {
        return map_unary<bool, T>(x, [](T v) { return v != v; });
      }
      break;
    case CoreSemanticOp::kNeg:
      if constexpr (!std::is_same_v<T, bool>) return map_unary<T, T>(x, [](T v) { return wrap_sub(T{}, v); });
      break;
    case CoreSemanticOp::kAbs:
      if constexpr (kIsComplex<T>) return map_unary<R, T>(x, [](T v) { return std::abs(v); });
      if constexpr (std::is_floating_point_v<T>) return map_unary<T, T>(x, [](T v) { return std::fabs(v); });
      if constexpr (kIsInteger<T>) return map_unary<T, T>(x, [](T v) { return v < 0 ? wrap_sub(T{}, v) : v; });
      break;
    case CoreSemanticOp::kSign:
      if constexpr (kIsComplex<T>) {
        return map_unary<T, T>(x, [](T v) { return v == T{} ? T{} : v / std::abs(v); });
      } else if constexpr (!std::is_same_v<T, bool>) {
        // Floating: keeps +-0 and NaN, as std::copysign-free sign does.
        return map_unary<T, T>(x, [](T v) { return v > T{} ? T(1) : v < T{} ? T(-1) : v; });
      }
      break;
    case CoreSemanticOp::kConj:
      if constexpr (kIsComplex<T>) return map_unary<T, T>(x, [](T v) { return std::conj(v); });
      return map_unary<T, T>(x, [](T v) { return v; });
    case CoreSemanticOp::kReal:
      if constexpr (kIsComplex<T>) return map_unary<R, T>(x, [](T v) { return v.real(); });
      return map_unary<T, T>(x, [](T v) { return v; });
    case CoreSemanticOp::kImag:
      if constexpr (kIsComplex<T>) return map_unary<R, T>(x, [](T v) { return v.imag(); });
      return map_unary<T, T>(x, [](T) { return T{}; });
    default:
      if constexpr (std::is_floating_point_v<T> || kIsComplex<T>) return unary_inexact<T>(call, x);
      break;
  }
  return unexpected(call, x.dtype());
}

template <class T>
Result<Tensor> compare(const CoreCall& call, ComparisonDirection direction) {
  const Tensor& a = call.operands[0];
  const Tensor& b = call.operands[1];
  switch (direction) {
    case ComparisonDirection::kEq:
      return map_binary<bool, T>(a, b, [](T x, T y) { return x == y; });
    case ComparisonDirection::kNe:
      return map_binary<bool, T>(a, b, [](T x, T y) { return x != y; });
    default:
      break;
  }
  if constexpr (!kIsComplex<T>) {
    switch (direction) {
      case ComparisonDirection::kLt:
        return map_binary<bool, T>(a, b, [](T x, T y) { return x < y; });
      case ComparisonDirection::kLe:
        return map_binary<bool, T>(a, b, [](T x, T y) { return x <= y; });
      case ComparisonDirection::kGt:
        return map_binary<bool, T>(a, b, [](T x, T y) { return x > y; });
      case ComparisonDirection::kGe:
        return map_binary<bool, T>(a, b, [](T x, T y) { return x >= y; });
      default:
        break;
    }
  }
  return unexpected(call, a.dtype());
}

/// kInvalidArgument when integer divisor `b` holds a zero.
template <class T>
Status check_divisor(const CoreCall& call, const Tensor& b) {
  const T* pb = elements<T>(b);
  for (std::int64_t i = 0; i < b.numel(); ++i) {
    if (pb[i] == 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompletion,
                        "{}: integer division by zero (divisor element {} of {} is 0)", call.op.name(), i,
                        shape_to_string(b.shape()));
    }
  }
  return ok_status();
}

/// fmod (sign of a) and remainder (sign of b, numpy.remainder) of integers.
template <class T>
Result<Tensor> integer_modulo(const CoreCall& call, bool floor_mode) {
  const Tensor& a = call.operands[0];
  const Tensor& b = call.operands[1];
  TENFERRO_TRY(check_divisor<T>(call, b));
  return map_binary<T, T>(a, b, [&](T x, T y) -> T {
    if (y == -1) return T{0};  // lowest % -1 would overflow
    const T r = static_cast<T>(x - (x / y) * y);
    if (!floor_mode || r == 0) return r;
    return (r < 0) != (y < 0) ? static_cast<T>(r + y) : r;
  });
}

/// Shifts with StableHLO's results for amounts outside [0, bits).
template <class T>
Result<Tensor> shift(const CoreCall& call, CoreSemanticOp op) {
  using U = std::make_unsigned_t<T>;
  constexpr T kBits = static_cast<T>(8 * sizeof(T));
  return map_binary<T, T>(call.operands[0], call.operands[1], [op](T x, T n) -> T {
    const bool in_range = n >= 0 && n < kBits;
    U pow2 = 1;
    for (T k = 0; in_range && k < n; ++k) pow2 = static_cast<U>(pow2 * 2u);
    switch (op) {
      case CoreSemanticOp::kShiftLeft:
        return in_range ? static_cast<T>(static_cast<U>(x) * pow2) : T{0};
      case CoreSemanticOp::kShiftRightLogical:
        return in_range ? static_cast<T>(static_cast<U>(x) / pow2) : T{0};
      default:  // arithmetic: floor(x / 2^n)
        if (!in_range) return x < 0 ? T{-1} : T{0};
        return x >= 0 ? static_cast<T>(static_cast<U>(x) / pow2)
                      : static_cast<T>(-static_cast<T>(static_cast<U>(-(x + 1)) / pow2) - 1);
    }
  });
}

template <class T>
Result<Tensor> binary(const CoreSemanticOp op, const CoreCall& call) {
  const Tensor& a = call.operands[0];
  const Tensor& b = call.operands[1];
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case CoreSemanticOp::kAnd:
        return map_binary<bool, bool>(a, b, [](bool x, bool y) { return x && y; });
      case CoreSemanticOp::kOr:
        return map_binary<bool, bool>(a, b, [](bool x, bool y) { return x || y; });
      case CoreSemanticOp::kXor:
        return map_binary<bool, bool>(a, b, [](bool x, bool y) { return x != y; });
      default:
        return unexpected(call, a.dtype());
    }
  } else {
    if constexpr (kIsInteger<T>) {
      switch (op) {
        case CoreSemanticOp::kAnd:
          return map_binary<T, T>(a, b, [](T x, T y) { return static_cast<T>(x & y); });
        case CoreSemanticOp::kOr:
          return map_binary<T, T>(a, b, [](T x, T y) { return static_cast<T>(x | y); });
        case CoreSemanticOp::kXor:
          return map_binary<T, T>(a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
        case CoreSemanticOp::kShiftLeft:
        case CoreSemanticOp::kShiftRightArithmetic:
        case CoreSemanticOp::kShiftRightLogical:
          return shift<T>(call, op);
        case CoreSemanticOp::kFmod:
          return integer_modulo<T>(call, /*floor_mode=*/false);
        case CoreSemanticOp::kRemainder:
          return integer_modulo<T>(call, /*floor_mode=*/true);
        default:
          break;
      }
    }
    switch (op) {
      case CoreSemanticOp::kAdd:
        return map_binary<T, T>(a, b, [](T x, T y) { return wrap_add(x, y); });
      case CoreSemanticOp::kSub:
        return map_binary<T, T>(a, b, [](T x, T y) { return wrap_sub(x, y); });
      case CoreSemanticOp::kMul:
        return map_binary<T, T>(a, b, [](T x, T y) { return wrap_mul(x, y); });
      case CoreSemanticOp::kDiv:
        if constexpr (kIsInteger<T>) {
          TENFERRO_TRY(check_divisor<T>(call, b));
          // Truncates toward zero; lowest / -1 wraps (Note [Reference evaluator]).
          return map_binary<T, T>(a, b, [](T x, T y) { return y == -1 ? wrap_sub(T{}, x) : static_cast<T>(x / y); });
        } else {
          return map_binary<T, T>(a, b, [](T x, T y) { return x / y; });
        }
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T> || kIsComplex<T>) {
      if (op == CoreSemanticOp::kPow) return map_binary<T, T>(a, b, [](T x, T y) { return std::pow(x, y); });
    }
    if constexpr (!kIsComplex<T>) {
      const T nan = std::numeric_limits<T>::quiet_NaN();
      switch (op) {
        case CoreSemanticOp::kMax:
          return map_binary<T, T>(a, b, [&](T x, T y) { return is_nan(x) || is_nan(y) ? nan : (x < y ? y : x); });
        case CoreSemanticOp::kMin:
          return map_binary<T, T>(a, b, [&](T x, T y) { return is_nan(x) || is_nan(y) ? nan : (y < x ? y : x); });
        default:
          break;
      }
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case CoreSemanticOp::kAtan2:
          return map_binary<T, T>(a, b, [](T x, T y) { return std::atan2(x, y); });
        case CoreSemanticOp::kComplex:
          return map_binary<std::complex<T>, T>(a, b, [](T x, T y) { return std::complex<T>(x, y); });
        case CoreSemanticOp::kFmod:
          return map_binary<T, T>(a, b, [](T x, T y) { return std::fmod(x, y); });
        case CoreSemanticOp::kRemainder:
          // x - y * floor(x / y), computed exactly through std::remainder's
          // nearest-quotient residue, shifted by y when its sign differs.
          return map_binary<T, T>(a, b, [](T x, T y) {
            if (y == 0 || std::isinf(x) || std::isnan(x) || std::isnan(y)) return std::fmod(x, y);
            if (x == 0) return std::copysign(T(0), y);
            if (std::isinf(y)) return (x < 0) == (y < 0) ? x : y;
            T r = std::remainder(x, y);
            if (r != 0 && (r < 0) != (y < 0)) r += y;
            return r == 0 ? std::copysign(T(0), y) : r;
          });
        default:
          break;
      }
    }
    return unexpected(call, a.dtype());
  }
}

/// static_cast<To>(v) with the oracle's choices for what C++ leaves
/// undefined: float -> integer saturates, NaN -> 0.
template <class To, class From>
To convert_element(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else if constexpr (kIsComplex<To>) {
    using P = typename To::value_type;
    if constexpr (kIsComplex<From>) {
      return To(static_cast<P>(v.real()), static_cast<P>(v.imag()));
    } else {
      return To(static_cast<P>(v), P{});
    }
  } else if constexpr (kIsComplex<From>) {
    return convert_element<To>(v.real());
  } else if constexpr (kIsInteger<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To{};
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

Result<Tensor> convert(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  return visit_dtype(x.dtype(), [&]<class From>(From) -> Result<Tensor> {
    return visit_dtype(call.result_dtype, [&]<class To>(To) -> Result<Tensor> {
      return map_unary<To, From>(x, [](From v) { return convert_element<To>(v); });
    });
  });
}

Result<Tensor> select(const CoreCall& call) {
  const Tensor& pred = call.operands[0];
  const Tensor& on_true = call.operands[1];
  const Tensor& on_false = call.operands[2];
  return visit_dtype(on_true.dtype(), [&]<class T>(T) -> Result<Tensor> {
    TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(on_true.shape(), on_true.dtype()));
    const bool* p = elements<bool>(pred);
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      mutable_elements<T>(y)[i] = p[i] ? elements<T>(on_true)[i] : elements<T>(on_false)[i];
    }
    return y;
  });
}

// min(max(x, lo), hi), a NaN anywhere giving NaN (as max and min do).
Result<Tensor> clamp(const CoreCall& call) {
  const Tensor& lo = call.operands[0];
  const Tensor& x = call.operands[1];
  const Tensor& hi = call.operands[2];
  return visit_dtype(x.dtype(), [&]<class T>(T) -> Result<Tensor> {
    if constexpr (kIsComplex<T> || std::is_same_v<T, bool>) {
      return unexpected(call, x.dtype());
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(x.shape(), x.dtype()));
      for (std::int64_t i = 0; i < y.numel(); ++i) {
        const T l = elements<T>(lo)[i], v = elements<T>(x)[i], h = elements<T>(hi)[i];
        T r = v;
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(l) || std::isnan(h)) r = std::numeric_limits<T>::quiet_NaN();
        }
        if (r < l) r = l;
        if (r > h) r = h;
        mutable_elements<T>(y)[i] = r;
      }
      return y;
    }
  });
}

}  // namespace

Result<Tensor> evaluate_elementwise(const CoreCall& call) {
  const CoreSemanticOp op = call.op.core_op();
  const Tensor& x = call.operands[0];
  switch (op) {
    case CoreSemanticOp::kConvert:
      return convert(call);
    case CoreSemanticOp::kSelect:
      return select(call);
    case CoreSemanticOp::kClamp:
      return clamp(call);
    case CoreSemanticOp::kCompare: {
      const auto* attributes = call.op.attributes_as<program::CompareAttributes>();
      return visit_dtype(x.dtype(), [&]<class T>(T) { return compare<T>(call, attributes->direction); });
    }
    default:
      break;
  }
  if (call.operands.size() == 1) return visit_dtype(x.dtype(), [&]<class T>(T) { return unary<T>(call); });
  return visit_dtype(x.dtype(), [&]<class T>(T) { return binary<T>(op, call); });
}

}  // namespace tenferro::testing::internal
