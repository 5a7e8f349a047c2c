// Internal to the reference evaluator: index helpers and the per-family
// evaluation functions (Note [Reference evaluator]). Every tensor here is a
// contiguous row-major host tensor.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <span>
#include <type_traits>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::testing::internal {

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<std::complex<T>> : std::true_type {};
template <class T>
inline constexpr bool kIsComplex = IsComplex<T>::value;
template <class T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// The accumulator type of sums and dot products: double for reals,
/// complex<double> for complex, T for integers (wrapping arithmetic).
template <class T>
using Accumulator =
    std::conditional_t<kIsComplex<T>, std::complex<double>, std::conditional_t<std::is_floating_point_v<T>, double, T>>;

/// Whether v is a NaN (never for integers and bool).
template <class T>
bool is_nan(T v) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

/// a + b, a - b, a * b with two's-complement wrap for integers.
template <class T>
T wrap_add(T a, T b) noexcept {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <class T>
T wrap_sub(T a, T b) noexcept {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <class T>
T wrap_mul(T a, T b) noexcept {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

/// Advances the row-major multi-index `index` within `shape`; false after
/// the last index.
inline bool next_index(std::span<std::int64_t> index, IntArrayRef shape) noexcept {
  for (std::size_t k = index.size(); k-- > 0;) {
    if (++index[k] < shape[k]) return true;
    index[k] = 0;
  }
  return false;
}

/// Calls f(index) for every multi-index of `shape` in row-major order
/// (once, with an empty index, for rank 0; never for an empty shape).
template <class F>
void for_each_index(IntArrayRef shape, F&& f) {
  if (numel_unchecked(shape) == 0) return;
  Dims index(shape.size(), 0);
  do {
    f(std::span<const std::int64_t>(index.data(), index.size()));
  } while (next_index(index.mutable_span(), shape));
}

/// The row-major linear offset of `index` in `shape`.
inline std::int64_t linear_offset(std::span<const std::int64_t> index, IntArrayRef shape) noexcept {
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < index.size(); ++k) offset = offset * shape[k] + index[k];
  return offset;
}

template <class T>
const T* elements(const Tensor& t) noexcept {
  return static_cast<const T*>(t.data());
}
template <class T>
T* mutable_elements(Tensor& t) noexcept {
  return static_cast<T*>(t.data());
}

/// Element i of an int32/int64 tensor as int64.
inline std::int64_t index_element(const Tensor& t, std::int64_t i) noexcept {
  return t.dtype() == DType::kInt32 ? elements<std::int32_t>(t)[i] : elements<std::int64_t>(t)[i];
}

/// What each evaluation function receives: the operation, its operands
/// (contiguous) and the result's dtype and concrete shape.
struct CoreCall {
  program::OperationView op;
  std::span<const Tensor> operands;
  DType result_dtype;
  IntArrayRef result_shape;
};

/// Elementwise unary/binary, compare, select, convert (reference_elementwise.cpp).
Result<Tensor> evaluate_elementwise(const CoreCall& call);
/// Shape and data movement, gather, scatter (reference_movement.cpp).
Result<Tensor> evaluate_movement(const CoreCall& call);
/// Reductions, arg-reductions and dot_general (reference_reduction.cpp).
Result<Tensor> evaluate_reduction(const CoreCall& call);
/// rng_philox (reference_random.cpp).
Result<Tensor> evaluate_random(const CoreCall& call);
/// cumsum, cumprod, sort, argsort (reference_along_axis.cpp).
Result<Tensor> evaluate_along_axis(const CoreCall& call);

}  // namespace tenferro::testing::internal
