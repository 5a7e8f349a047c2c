// Test support for GEMM providers: strided random matrices in every layout a
// provider may see, a plain triple-loop reference with an error bound, and
// the list of providers the conformance suite runs against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tenferro/cpu/gemm/gemm_provider.h"

namespace tenferro::cpu::testing {

/// Operand layouts. kBroadcast repeats one row (row stride 0), inputs only.
enum class MatLayout { kColMajor, kRowMajor, kPadded, kBroadcast };
inline constexpr MatLayout kInputLayouts[] = {MatLayout::kColMajor, MatLayout::kRowMajor, MatLayout::kPadded,
                                              MatLayout::kBroadcast};
inline constexpr MatLayout kOutputMatLayouts[] = {MatLayout::kColMajor, MatLayout::kRowMajor, MatLayout::kPadded};

inline const char* mat_layout_name(MatLayout l) {
  switch (l) {
    case MatLayout::kColMajor:
      return "col";
    case MatLayout::kRowMajor:
      return "row";
    case MatLayout::kPadded:
      return "padded";
    case MatLayout::kBroadcast:
      return "bcast";
  }
  return "?";
}

template <class T>
struct Real {
  using type = T;
};
template <class S>
struct Real<std::complex<S>> {
  using type = S;
};
template <class T>
using real_t = typename Real<T>::type;

template <class T>
T random_scalar(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(u(rng));
  } else {
    const double re = u(rng);
    return T(static_cast<real_t<T>>(re), static_cast<real_t<T>>(u(rng)));
  }
}

/// A rows x cols matrix over its own buffer at the given layout, with a
/// guard zone (filled with a sentinel) after the last element.
template <class T>
struct StridedMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t rs = 0;
  std::int64_t cs = 0;
  std::int64_t offset = 0;
  std::vector<T> buffer;

  StridedMatrix(std::int64_t r, std::int64_t c, MatLayout layout, std::uint64_t seed) : rows(r), cols(c) {
    switch (layout) {
      case MatLayout::kColMajor:
        rs = 1;
        cs = std::max<std::int64_t>(rows, 1);
        break;
      case MatLayout::kRowMajor:
        rs = std::max<std::int64_t>(cols, 1);
        cs = 1;
        break;
      case MatLayout::kPadded:  // both strides non-unit, with gaps
        rs = 2;
        cs = 2 * std::max<std::int64_t>(rows, 1) + 3;
        break;
      case MatLayout::kBroadcast:
        rs = 0;
        cs = 1;
        break;
    }
    offset = layout == MatLayout::kPadded ? 1 : 0;
    const std::int64_t extent = rows > 0 && cols > 0 ? (rows - 1) * rs + (cols - 1) * cs + 1 : 0;
    buffer.assign(static_cast<std::size_t>(offset + extent + 8), T(777));
    std::mt19937_64 rng(seed);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) at(i, j) = random_scalar<T>(rng);
  }
  T& at(std::int64_t i, std::int64_t j) { return buffer[static_cast<std::size_t>(offset + i * rs + j * cs)]; }
  const T& at(std::int64_t i, std::int64_t j) const {
    return buffer[static_cast<std::size_t>(offset + i * rs + j * cs)];
  }
  T* data() { return buffer.data() + offset; }
  GemmInput input() { return GemmInput{data(), rs, cs}; }
  GemmOutput output() { return GemmOutput{data(), rs, cs}; }
};

/// Reference C = alpha*A*B + beta*C in double precision, and the bound
/// |alpha| * sum_k |a||b| + |beta||c| used for the tolerance.
template <class T>
void reference_gemm(const StridedMatrix<T>& a, const StridedMatrix<T>& b, std::complex<double> alpha,
                    std::complex<double> beta, const StridedMatrix<T>& c_in, std::vector<std::complex<double>>& out,
                    std::vector<double>& bound) {
  const std::int64_t m = c_in.rows, n = c_in.cols, k = a.cols;
  out.assign(static_cast<std::size_t>(m * n), 0.0);
  bound.assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      // Plain re/im arithmetic: std::complex's operator* is slow (Annex G).
      double re = 0, im = 0, mag = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const std::complex<double> x(a.at(i, l)), y(b.at(l, j));
        re += x.real() * y.real() - x.imag() * y.imag();
        im += x.real() * y.imag() + x.imag() * y.real();
        mag += (std::abs(x.real()) + std::abs(x.imag())) * (std::abs(y.real()) + std::abs(y.imag()));
      }
      std::complex<double> r = alpha * std::complex<double>(re, im);
      double bnd = std::abs(alpha) * mag;
      if (beta != std::complex<double>(0)) {
        const std::complex<double> cv(c_in.at(i, j));
        r += beta * cv;
        bnd += std::abs(beta) * std::abs(cv);
      }
      if constexpr (std::is_floating_point_v<T>) r = r.real();
      out[static_cast<std::size_t>(i + j * m)] = r;
      bound[static_cast<std::size_t>(i + j * m)] = bnd;
    }
  }
}

/// Checks `c` against the reference within a k-scaled epsilon bound and
/// that the guard zone and gaps of padded layouts were not written.
template <class T>
::testing::AssertionResult matches_reference(const StridedMatrix<T>& c, const std::vector<std::complex<double>>& ref,
                                             const std::vector<double>& bound, std::int64_t k,
                                             const std::vector<T>& untouched_before) {
  const double eps = std::numeric_limits<real_t<T>>::epsilon();
  const std::int64_t m = c.rows, n = c.cols;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      const std::size_t idx = static_cast<std::size_t>(i + j * m);
      const std::complex<double> got(c.at(i, j));
      const double tol = 4.0 * eps * static_cast<double>(k + 2) * (bound[idx] + 1e-30) + 1e-300;
      if (!(std::abs(got - ref[idx]) <= tol)) {
        return ::testing::AssertionFailure()
               << "C(" << i << ", " << j << ") = " << got << ", expected " << ref[idx] << " (tolerance " << tol << ")";
      }
    }
  }
  // Every buffer element that is not an element of C must be unchanged.
  std::vector<bool> is_element(c.buffer.size(), false);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) is_element[static_cast<std::size_t>(c.offset + i * c.rs + j * c.cs)] = true;
  for (std::size_t x = 0; x < c.buffer.size(); ++x) {
    if (!is_element[x] && !(c.buffer[x] == untouched_before[x])) {
      return ::testing::AssertionFailure() << "buffer element " << x << " outside C was written";
    }
  }
  return ::testing::AssertionSuccess();
}

/// A provider under test: how to make it, or why it is absent here.
struct ProviderFactory {
  std::string name;
  std::function<Result<std::shared_ptr<const CpuGemmProvider>>()> make;
};

/// Every provider the conformance suite runs: native (each ISA the CPU has),
/// the external BLAS modules built here, and the null provider.
std::vector<ProviderFactory> conformance_providers();

}  // namespace tenferro::cpu::testing
