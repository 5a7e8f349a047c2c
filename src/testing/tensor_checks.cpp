// Seeded random tensors and allclose with a readable report.
#include "tenferro/testing/tensor_checks.h"

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tenferro::testing {
namespace {

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<std::complex<T>> : std::true_type {};

/// Uniform in [low, high) from the raw generator output, so the stream is
/// the same with every standard library (std::uniform_*_distribution is not).
double uniform01(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }

/// Calls f(const T* elements) with the elements of host tensor `t` in
/// row-major order (Tensor::to_vector cannot give bool).
template <class F>
void with_elements(const Tensor& t, F f) {
  auto copy = Tensor::empty(t.shape(), t.dtype());
  if (!copy.ok()) return;
  if (t.numel() > 0) tenferro::internal::copy_to_contiguous(t.view(), copy->data());
  visit_dtype(t.dtype(), [&]<class T>(T) { f(static_cast<const T*>(copy->data())); });
}

std::string format_index(std::int64_t linear, IntArrayRef shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    index[k] = linear % shape[k];
    linear /= shape[k];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

std::string format_value(std::complex<double> v, DType dtype) {
  if (is_complex(dtype)) return fmt::format("({:.17g}, {:.17g})", v.real(), v.imag());
  if (dtype == DType::kBool) return v.real() != 0.0 ? "true" : "false";
  return fmt::format("{:.17g}", v.real());
}

/// Exact element equality for bool and integer tensors (int64 beyond 2^53
/// does not survive the trip through double).
std::vector<bool> exactly_equal(const Tensor& a, const Tensor& b) {
  std::vector<bool> out;
  with_elements(a, [&]<class T>(const T* va) {
    with_elements(b, [&]<class U>(const U* vb) {
      if constexpr (std::is_same_v<T, U>) {
        for (std::int64_t i = 0; i < a.numel(); ++i) out.push_back(va[i] == vb[i]);
      }
    });
  });
  return out;
}

bool both_nan(std::complex<double> a, std::complex<double> b) {
  const bool a_nan = std::isnan(a.real()) || std::isnan(a.imag());
  const bool b_nan = std::isnan(b.real()) || std::isnan(b.imag());
  return a_nan && b_nan;
}

}  // namespace

std::vector<std::complex<double>> complex_values(const Tensor& t) {
  std::vector<std::complex<double>> out;
  with_elements(t, [&]<class T>(const T* values) {
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const T& v = values[i];
      if constexpr (IsComplex<T>::value) {
        out.emplace_back(v.real(), v.imag());
      } else {
        out.emplace_back(static_cast<double>(v), 0.0);
      }
    }
  });
  return out;
}

Result<Tensor> from_complex_values(DType dtype, IntArrayRef shape, std::span<const std::complex<double>> values) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(shape, dtype));
  if (static_cast<std::size_t>(t.numel()) != values.size()) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "from_complex_values: expected {} values for shape {}, found {}", t.numel(),
                      shape_to_string(shape), values.size());
  }
  visit_dtype(dtype, [&]<class T>(T) {
    T* dst = static_cast<T*>(t.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if constexpr (IsComplex<T>::value) {
        using P = typename T::value_type;
        dst[i] = T(static_cast<P>(values[i].real()), static_cast<P>(values[i].imag()));
      } else if constexpr (std::is_same_v<T, bool>) {
        dst[i] = values[i] != std::complex<double>(0);
      } else {
        dst[i] = static_cast<T>(values[i].real());
      }
    }
  });
  return t;
}

Result<Tensor> random_tensor(DType dtype, IntArrayRef shape, std::uint64_t seed, const RandomOptions& options) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(shape, dtype));
  std::mt19937_64 gen(seed);
  auto real = [&] { return options.low + (options.high - options.low) * uniform01(gen); };
  const auto span = static_cast<std::uint64_t>(options.int_high - options.int_low) + 1;
  visit_dtype(dtype, [&]<class T>(T) {
    T* dst = static_cast<T*>(t.data());
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        dst[i] = (gen() >> 63) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        dst[i] = static_cast<T>(options.int_low + static_cast<std::int64_t>(gen() % span));
      } else if constexpr (IsComplex<T>::value) {
        using P = typename T::value_type;
        const double re = real();
        dst[i] = T(static_cast<P>(re), static_cast<P>(real()));
      } else {
        dst[i] = static_cast<T>(real());
      }
    }
  });
  return t;
}

Result<Tensor> random_integers(DType dtype, IntArrayRef shape, std::uint64_t seed, std::int64_t low,
                               std::int64_t high) {
  if ((dtype != DType::kInt32 && dtype != DType::kInt64) || low > high) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "random_integers: expected int32 or int64 and low <= high, found {} and [{}, {}]", dtype, low,
                      high);
  }
  RandomOptions options;
  options.int_low = low;
  options.int_high = high;
  return random_tensor(dtype, shape, seed, options);
}

Tolerance tolerance_for(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kComplex64:
      return {1e-5, 1e-5, true};
    case DType::kFloat64:
    case DType::kComplex128:
      return {1e-12, 1e-12, true};
    default:
      return {0.0, 0.0, true};
  }
}

Status check_allclose(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance) {
  if (!actual.is_host() || !expected.is_host()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "allclose: expected two defined host tensors");
  }
  if (actual.dtype() != expected.dtype()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "allclose: expected dtype {}, found {}",
                      expected.dtype(), actual.dtype());
  }
  if (!std::equal(actual.shape().begin(), actual.shape().end(), expected.shape().begin(), expected.shape().end())) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "allclose: expected shape {}, found {}",
                      shape_to_string(expected.shape()), shape_to_string(actual.shape()));
  }
  const std::vector<std::complex<double>> a = complex_values(actual);
  const std::vector<std::complex<double>> e = complex_values(expected);
  const bool exact = !is_inexact(expected.dtype());
  const std::vector<bool> equal = exact ? exactly_equal(actual, expected) : std::vector<bool>();
  std::size_t mismatches = 0;
  double worst = 0.0;
  std::size_t worst_at = 0;
  std::string report;
  for (std::size_t i = 0; i < e.size(); ++i) {
    bool close = false;
    double error = 0.0;
    if (exact) {
      close = equal[i];
      error = close ? 0.0 : std::abs(a[i] - e[i]);
    } else if (a[i] == e[i]) {
      close = true;  // also equal infinities
    } else if (both_nan(a[i], e[i])) {
      close = tolerance.equal_nan;
    } else {
      error = std::abs(a[i] - e[i]);
      // Unequal values where either is infinite or NaN are never close.
      close = std::isfinite(std::abs(a[i])) && std::isfinite(std::abs(e[i])) &&
              error <= tolerance.atol + tolerance.rtol * std::abs(e[i]);
    }
    if (close) continue;
    if (mismatches < 5) {
      report += fmt::format("\n  at {}: actual {}, expected {}, |diff| {:.3g}",
                            format_index(static_cast<std::int64_t>(i), expected.shape()),
                            format_value(a[i], expected.dtype()), format_value(e[i], expected.dtype()), error);
    }
    if (mismatches == 0 || !(error <= worst)) {
      worst = error;
      worst_at = i;
    }
    ++mismatches;
  }
  if (mismatches == 0) return ok_status();
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "allclose: {} of {} elements of {}{} differ (rtol {:g}, atol {:g}); largest |diff| {:.3g} at {}{}",
                    mismatches, e.size(), expected.dtype(), shape_to_string(expected.shape()), tolerance.rtol,
                    tolerance.atol, worst, format_index(static_cast<std::int64_t>(worst_at), expected.shape()), report);
}

Status check_allclose(const Tensor& actual, const Tensor& expected) {
  return check_allclose(actual, expected, tolerance_for(expected.dtype()));
}

std::string format_tensor(const Tensor& tensor, std::size_t max_elements) {
  if (!tensor.is_host()) return "Tensor(undefined)";
  const std::vector<std::complex<double>> v = complex_values(tensor);
  std::string out = fmt::format("{}{}{{", tensor.dtype(), shape_to_string(tensor.shape()));
  for (std::size_t i = 0; i < v.size() && i < max_elements; ++i) {
    if (i > 0) out += ", ";
    out += format_value(v[i], tensor.dtype());
  }
  if (v.size() > max_elements) out += ", ...";
  out += "}";
  return out;
}

}  // namespace tenferro::testing
