// Small tensor helpers for tests: seeded random tensors and an allclose
// comparison with a readable mismatch report. Test-only (tenferro::testing).
#pragma once

#include <complex>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/dtype.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::testing {

/// The value ranges random_tensor draws from.
struct RandomOptions {
  /// Floating values (and each part of a complex value) are uniform in [low, high).
  double low = -1.0;
  double high = 1.0;
  /// Integer values are uniform in [int_low, int_high].
  std::int64_t int_low = -9;
  std::int64_t int_high = 9;
};

/// A contiguous row-major tensor of `shape` and `dtype` with values from a
/// generator seeded with `seed` (the same arguments give the same tensor on
/// every platform run; bool is a fair coin). Errors as Tensor::empty.
Result<Tensor> random_tensor(DType dtype, IntArrayRef shape, std::uint64_t seed, const RandomOptions& options = {});

/// Integer tensor (int32 or int64) with values uniform in [low, high], e.g.
/// gather indices. kInvalidArgument for another dtype or low > high.
Result<Tensor> random_integers(DType dtype, IntArrayRef shape, std::uint64_t seed, std::int64_t low, std::int64_t high);

/// Every element of host tensor `tensor` (any dtype, any strides) as
/// complex<double>, in row-major order (bool as 0 or 1).
std::vector<std::complex<double>> complex_values(const Tensor& tensor);

/// A contiguous row-major tensor of `dtype` and `shape` from complex values:
/// the imaginary parts are dropped for real dtypes (integers truncate the
/// real part; bool is value != 0). kShapeMismatch when the count differs
/// from the shape's element count.
Result<Tensor> from_complex_values(DType dtype, IntArrayRef shape, std::span<const std::complex<double>> values);

/// Comparison tolerances: |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-12;
  double atol = 1e-12;
  /// NaN equals NaN (positionally).
  bool equal_nan = true;
};
/// Sensible tolerances for results computed in `dtype` by a different
/// summation order: 1e-5 for float32/complex64, 1e-12 for float64/complex128,
/// exact for bool and integers.
Tolerance tolerance_for(DType dtype) noexcept;

/// ok when `actual` and `expected` have the same dtype and shape and every
/// element is close (exact for bool and integers; complex by the modulus of
/// the difference; infinities must match exactly). Otherwise
/// kInvalidArgument whose message reports the dtype/shape difference, or how
/// many elements differ, the largest error and the first few mismatches with
/// their indices and both values. Any strides; host tensors only.
Status check_allclose(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance);
/// check_allclose with tolerance_for(expected.dtype()).
Status check_allclose(const Tensor& actual, const Tensor& expected);

/// The elements in row-major order as text, "float64[2, 2]{1, 2, 3, 4}"
/// (at most `max_elements`, then "..."), for failure messages.
std::string format_tensor(const Tensor& tensor, std::size_t max_elements = 16);

}  // namespace tenferro::testing
