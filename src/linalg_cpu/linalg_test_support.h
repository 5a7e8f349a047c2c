// Test-only helpers of the linalg tests: a runtime with one CPU engine and
// the linalg module (inline executor, or one entering a real CPU domain),
// random matrices of every linalg dtype, and a small complex<double>
// reference matrix type for residual checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/linalg_cpu.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/spi/event_domain.h"
#include "tenferro/testing/reference_engine.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::linalg::testing {

using cd = std::complex<double>;
inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128};

/// A runtime with one CPU engine (id 1) running work inline (NoExecutionContext:
/// the linalg engine uses its fallback parallel context) and `linalg` installed.
inline runtime::Runtime make_runtime(std::shared_ptr<CpuLinalgEngine> linalg) {
  return tenferro::testing::make_inline_extension_runtime(cpu_extension_module(EngineId(1), std::move(linalg)));
}

/// A small dense complex<double> matrix (row-major) for reference math.
struct RefMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<cd> d;

  RefMatrix() = default;
  RefMatrix(std::int64_t r, std::int64_t c) : rows(r), cols(c), d(static_cast<std::size_t>(r * c)) {}
  cd& operator()(std::int64_t i, std::int64_t j) { return d[static_cast<std::size_t>(i * cols + j)]; }
  cd operator()(std::int64_t i, std::int64_t j) const { return d[static_cast<std::size_t>(i * cols + j)]; }

  static RefMatrix identity(std::int64_t n) {
    RefMatrix m(n, n);
    for (std::int64_t i = 0; i < n; ++i) m(i, i) = 1;
    return m;
  }
  RefMatrix adjoint() const {
    RefMatrix t(cols, rows);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) t(j, i) = std::conj((*this)(i, j));
    return t;
  }
  RefMatrix transpose() const {
    RefMatrix t(cols, rows);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) t(j, i) = (*this)(i, j);
    return t;
  }
  friend RefMatrix operator*(const RefMatrix& a, const RefMatrix& b) {
    RefMatrix c(a.rows, b.cols);
    for (std::int64_t i = 0; i < a.rows; ++i)
      for (std::int64_t k = 0; k < a.cols; ++k)
        for (std::int64_t j = 0; j < b.cols; ++j) c(i, j) += a(i, k) * b(k, j);
    return c;
  }
  friend RefMatrix operator-(const RefMatrix& a, const RefMatrix& b) {
    RefMatrix c = a;
    for (std::size_t i = 0; i < c.d.size(); ++i) c.d[i] -= b.d[i];
    return c;
  }
  double max_abs() const {
    double m = 0;
    for (const cd& x : d) m = std::max(m, std::abs(x));
    return m;
  }
};

/// Every element of `t` (any dtype, any strides) as complex<double>, row-major.
inline std::vector<cd> values_of(const Tensor& t) { return tenferro::testing::complex_values(t); }

/// Matrix `index` (over the leading batch axes) of a [..., r, c] tensor.
inline RefMatrix matrix_of(const Tensor& t, std::int64_t index) {
  const std::int64_t r = t.size(t.rank() - 2), c = t.size(t.rank() - 1);
  const std::vector<cd> all = values_of(t);
  RefMatrix m(r, c);
  std::copy(all.begin() + index * r * c, all.begin() + (index + 1) * r * c, m.d.begin());
  return m;
}

/// Vector `index` of a [..., n] tensor.
inline std::vector<cd> vector_of(const Tensor& t, std::int64_t index) {
  const std::int64_t n = t.size(t.rank() - 1);
  const std::vector<cd> all = values_of(t);
  return std::vector<cd>(all.begin() + index * n, all.begin() + (index + 1) * n);
}

/// Builds a tensor of `dtype` from complex values (imaginary parts dropped
/// for real dtypes).
inline Tensor tensor_of(DType dtype, IntArrayRef shape, const std::vector<cd>& v) {
  Result<Tensor> t = tenferro::testing::from_complex_values(dtype, shape, v);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(t).value() : Tensor();
}

/// Uniform random values in [-1, 1) (complex parts too for complex dtypes).
inline std::vector<cd> random_values(DType dtype, std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<cd> v(static_cast<std::size_t>(count));
  for (cd& x : v) x = is_complex(dtype) ? cd(u(rng), u(rng)) : cd(u(rng), 0.0);
  return v;
}

inline Tensor random_tensor(DType dtype, IntArrayRef shape, std::uint32_t seed) {
  return tensor_of(dtype, shape, random_values(dtype, numel_unchecked(shape), seed));
}

/// Batch count of a [..., r, c] shape (core = 2) or [..., n] (core = 1).
inline std::int64_t batch_of(IntArrayRef shape, std::size_t core = 2) {
  std::int64_t b = 1;
  for (std::size_t i = 0; i + core < shape.size(); ++i) b *= shape[i];
  return b;
}

/// A well-conditioned square batch: random + n * I.
inline Tensor well_conditioned(DType dtype, IntArrayRef shape, std::uint32_t seed) {
  const std::int64_t n = shape[shape.size() - 1];
  std::vector<cd> v = random_values(dtype, numel_unchecked(shape), seed);
  for (std::int64_t b = 0; b < batch_of(shape); ++b)
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(b * n * n + i * n + i)] += double(n);
  return tensor_of(dtype, shape, v);
}

/// A Hermitian positive-definite batch: X Xᴴ + n I.
inline Tensor hermitian_positive_definite(DType dtype, IntArrayRef shape, std::uint32_t seed) {
  const std::int64_t n = shape[shape.size() - 1];
  const std::vector<cd> x = random_values(dtype, numel_unchecked(shape), seed);
  std::vector<cd> v(x.size());
  for (std::int64_t b = 0; b < batch_of(shape); ++b) {
    RefMatrix m(n, n);
    std::copy(x.begin() + b * n * n, x.begin() + (b + 1) * n * n, m.d.begin());
    RefMatrix s = m * m.adjoint();
    for (std::int64_t i = 0; i < n; ++i) s(i, i) += double(n);
    std::copy(s.d.begin(), s.d.end(), v.begin() + b * n * n);
  }
  return tensor_of(dtype, shape, v);
}

/// Residual tolerance for `dtype` at size n, relative to the data scale.
inline double tolerance(DType dtype, std::int64_t n) {
  const double eps = real_dtype(dtype) == DType::kFloat32 ? 1.2e-7 : 2.3e-16;
  return 200.0 * eps * static_cast<double>(std::max<std::int64_t>(n, 4));
}

}  // namespace tenferro::linalg::testing
