// LU with partial pivoting and Householder QR for small matrices (Notes
// [Small LU], [Small QR]). Built with -ffp-contract=off: every product and
// difference rounds on its own.
#include "linalg_cpu/lapack/small_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>
#include <utility>

#include "linalg_cpu/lapack/lapack_symbols.h"

namespace tenferro::linalg::internal {

namespace {

// The pivot key of i?amax: |x|, or |re| + |im|.
template <class R>
R pivot_key(R x) noexcept {
  return std::abs(x);
}
template <class R>
R pivot_key(std::complex<R> x) noexcept {
  return std::abs(x.real()) + std::abs(x.imag());
}

// Products and quotients as Fortran's complex arithmetic computes them
// (gfortran's -fcx-fortran-rules: no recovery of infinities from NaN
// parts), not through libgcc's __muldc3/__divdc3.
template <class R>
R times(R x, R y) noexcept {
  return x * y;
}
template <class R>
std::complex<R> times(std::complex<R> x, std::complex<R> y) noexcept {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}
template <class R>
R over(R x, R y) noexcept {
  return x / y;
}
// Smith's algorithm: the ratio of the smaller to the larger part of y keeps
// the intermediate products in range.
template <class R>
std::complex<R> over(std::complex<R> x, std::complex<R> y) noexcept {
  if (std::abs(y.real()) >= std::abs(y.imag())) {
    const R r = y.imag() / y.real(), d = y.real() + y.imag() * r;
    return {(x.real() + x.imag() * r) / d, (x.imag() - x.real() * r) / d};
  }
  const R r = y.real() / y.imag(), d = y.real() * r + y.imag();
  return {(x.real() * r + x.imag()) / d, (x.imag() * r - x.real()) / d};
}
// Whether 1 / x is finite (getf2's |pivot| >= sfmin test).
template <class R>
bool has_reciprocal(R x) noexcept {
  return std::abs(x) >= std::numeric_limits<R>::min();
}
template <class R>
bool has_reciprocal(std::complex<R> x) noexcept {
  return std::max(std::abs(x.real()), std::abs(x.imag())) >= std::numeric_limits<R>::min();
}

template <class R>
R conj_of(R x) noexcept {
  return x;
}
template <class R>
std::complex<R> conj_of(std::complex<R> x) noexcept {
  return {x.real(), -x.imag()};
}

// ||x||₂ of n elements: the plain sum of squares where every part lies in
// [2^-k, 2^k] (k a quarter of the exponent range: no square and no sum of
// at most 2 small_qr_max() of them leaves the normal range), else scaled by the
// largest part (dnrm2's answer without its cost).
template <class T>
RealOf<T> column_norm(const T* x, std::int64_t n) noexcept {
  using R = RealOf<T>;
  constexpr R kHigh = std::is_same_v<R, float> ? R(0x1p31) : R(0x1p255);
  R largest = 0, smallest = std::numeric_limits<R>::infinity();
  for (std::int64_t i = 0; i < n; ++i) {
    for (const R part : {std::abs(std::real(x[i])), std::abs(std::imag(x[i]))}) {
      largest = std::max(largest, part);
      if (part != R(0)) smallest = std::min(smallest, part);
    }
  }
  if (largest == R(0)) return R(0);
  const R scale = largest <= kHigh && smallest >= R(1) / kHigh ? R(1) : largest;
  R sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const R re = std::real(x[i]) / scale, im = std::imag(x[i]) / scale;
    sum += re * re + im * im;
  }
  return scale * std::sqrt(sum);
}

// dlapy3: sqrt(x² + y² + z²) without overflow.
template <class R>
R hypot3(R x, R y, R z) noexcept {
  const R w = std::max({std::abs(x), std::abs(y), std::abs(z)});
  if (w == R(0)) return R(0);
  const R a = x / w, b = y / w, c = z / w;
  return w * std::sqrt(a * a + b * b + c * c);
}

// dlarfg/zlarfg: the reflector of (alpha, x[0, n)): returns tau, leaves beta
// in alpha and v(1:) in x.
template <class T>
T reflector(T& alpha, T* x, std::int64_t n) noexcept {
  using R = RealOf<T>;
  R xnorm = column_norm(x, n);
  if (xnorm == R(0) && std::imag(alpha) == R(0)) return T(0);
  R beta = -std::copysign(hypot3(std::real(alpha), std::imag(alpha), xnorm), std::real(alpha));
  // A column this small would lose beta's digits: scale it up (exactly, by
  // powers of two) until beta is normal, and beta back down at the end.
  const R safe_min = std::numeric_limits<R>::min() / std::numeric_limits<R>::epsilon();
  int scaled = 0;
  while (std::abs(beta) < safe_min && scaled < 20) {
    const R up = R(1) / safe_min;
    for (std::int64_t i = 0; i < n; ++i) x[i] = times(x[i], T(up));
    alpha = times(alpha, T(up));
    beta *= up;
    ++scaled;
  }
  if (scaled > 0) {
    xnorm = column_norm(x, n);
    beta = -std::copysign(hypot3(std::real(alpha), std::imag(alpha), xnorm), std::real(alpha));
  }
  T tau;
  if constexpr (std::is_same_v<T, R>) {
    tau = (beta - alpha) / beta;
  } else {
    tau = T((beta - alpha.real()) / beta, -alpha.imag() / beta);
  }
  const T r = over(T(1), alpha - T(beta));
  for (std::int64_t i = 0; i < n; ++i) x[i] = times(x[i], r);
  for (int s = 0; s < scaled; ++s) beta *= safe_min;
  alpha = T(beta);
  return tau;
}

// C := (I - tau v vᴴ) C for the rows [0, m) of the columns [0, n) of c,
// v(0) = 1 and v(1:) = v[1, m) (dlarf from the left, column by column).
template <class T>
void apply_reflector(std::int64_t m, std::int64_t n, const T* v, T tau, T* c, std::int64_t ldc) noexcept {
  if (tau == T(0)) return;
  for (std::int64_t j = 0; j < n; ++j) {
    T* column = c + j * ldc;
    T w = column[0];
    for (std::int64_t i = 1; i < m; ++i) w += times(conj_of(v[i]), column[i]);
    const T tw = times(tau, w);
    column[0] -= tw;
    for (std::int64_t i = 1; i < m; ++i) column[i] -= times(v[i], tw);
  }
}

}  // namespace

template <class T>
void small_qr(std::int64_t m, std::int64_t n, T* a, std::int64_t lda, T* tau) noexcept {
  const std::int64_t k = std::min(m, n);
  for (std::int64_t j = 0; j < k; ++j) {
    T* column = a + j * lda;
    tau[j] = reflector(column[j], column + j + 1, m - j - 1);
    if (j + 1 < n) {
      const T diagonal = column[j];
      column[j] = T(1);
      apply_reflector(m - j, n - j - 1, column + j, conj_of(tau[j]), column + lda + j, lda);
      column[j] = diagonal;
    }
  }
}

template <class T>
void small_qr_q(std::int64_t m, std::int64_t cols, std::int64_t k, T* q, std::int64_t ldq, const T* tau) noexcept {
  for (std::int64_t j = k; j < cols; ++j) {
    T* column = q + j * ldq;
    std::fill(column, column + m, T(0));
    if (j < m) column[j] = T(1);
  }
  for (std::int64_t i = k - 1; i >= 0; --i) {
    T* column = q + i * ldq;
    if (i + 1 < cols) {
      column[i] = T(1);
      apply_reflector(m - i, cols - i - 1, column + i, tau[i], column + ldq + i, ldq);
    }
    const T minus_tau = T(0) - tau[i];
    for (std::int64_t r = i + 1; r < m; ++r) column[r] = times(minus_tau, column[r]);
    column[i] = T(1) - tau[i];
    std::fill(column, column + i, T(0));
  }
}

template <class T, class P>
std::int64_t small_lu(std::int64_t m, std::int64_t n, T* a, std::int64_t lda, P* pivots) noexcept {
  std::int64_t info = 0;
  std::array<T, kSmallLuMax> sums;  // m <= kSmallLuMax
  for (std::int64_t j = 0; j < n; ++j) {
    T* column = a + j * lda;
    const std::int64_t done = std::min(j, m);  // the columns factored so far
    for (std::int64_t i = 0; i < done; ++i) {
      const auto p = static_cast<std::int64_t>(pivots[i]);
      if (p != i) std::swap(column[i], column[p]);
    }
    // Column j less L(:, 0:done) times its own rows above: row i's products
    // summed in order, then subtracted (getf2's trsv and gemv).
    std::fill(sums.begin(), sums.begin() + m, T(0));
    for (std::int64_t k = 0; k < done; ++k) {
      column[k] -= sums[static_cast<std::size_t>(k)];  // U(k, j) is final
      const T u = column[k];
      const T* l = a + k * lda;
      for (std::int64_t i = k + 1; i < m; ++i) sums[static_cast<std::size_t>(i)] += times(l[i], u);
    }
    if (j >= m) continue;
    for (std::int64_t i = j; i < m; ++i) column[i] -= sums[static_cast<std::size_t>(i)];
    std::int64_t p = j;
    auto largest = pivot_key(column[j]);
    for (std::int64_t i = j + 1; i < m; ++i) {
      const auto key = pivot_key(column[i]);
      if (key > largest) {
        largest = key;
        p = i;
      }
    }
    pivots[j] = static_cast<P>(p);
    const T pivot = column[p];
    if (pivot == T(0)) {
      if (info == 0) info = j + 1;
      continue;
    }
    if (p != j) {  // the rows of L and of column j; later columns swap as they come
      for (std::int64_t c = 0; c <= j; ++c) std::swap(a[j + c * lda], a[p + c * lda]);
    }
    if (has_reciprocal(pivot)) {
      const T r = over(T(1), pivot);
      for (std::int64_t i = j + 1; i < m; ++i) column[i] = times(column[i], r);
    } else {
      for (std::int64_t i = j + 1; i < m; ++i) column[i] = over(column[i], pivot);
    }
  }
  return info;
}

template <class T, class P>
void small_lu_solve(std::int64_t n, std::int64_t nrhs, const T* lu, std::int64_t lda, const P* pivots, T* b,
                    std::int64_t ldb) noexcept {
  for (std::int64_t r = 0; r < nrhs; ++r) {
    T* x = b + r * ldb;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto p = static_cast<std::int64_t>(pivots[i]);
      if (p != i) std::swap(x[i], x[p]);
    }
    // L (unit lower), then U, by columns as trsm's left-side loops run.
    for (std::int64_t c = 0; c < n; ++c) {
      const T xc = x[c];
      if (xc == T(0)) continue;
      const T* l = lu + c * lda;
      for (std::int64_t i = c + 1; i < n; ++i) x[i] -= times(xc, l[i]);
    }
    for (std::int64_t c = n - 1; c >= 0; --c) {
      if (x[c] == T(0)) continue;
      const T* u = lu + c * lda;
      x[c] = over(x[c], u[c]);
      const T xc = x[c];
      for (std::int64_t i = 0; i < c; ++i) x[i] -= times(xc, u[i]);
    }
  }
}

template <class T, class P>
void small_lu_inverse(std::int64_t n, T* lu, std::int64_t lda, const P* pivots, T* work) noexcept {
  // A X = I solved with small_lu_solve's operations on each element, X held
  // by rows (x(i, :) = work[i * n, (i + 1) * n)) so that each step updates
  // a row. Skipping a zero multiplier there changes nothing (x - 0 * l = x).
  std::fill(work, work + n * n, T(0));
  for (std::int64_t i = 0; i < n; ++i) work[i * (n + 1)] = T(1);
  const auto row = [&](std::int64_t i) { return work + i * n; };
  for (std::int64_t i = 0; i < n; ++i) {
    const auto p = static_cast<std::int64_t>(pivots[i]);
    if (p != i) std::swap_ranges(row(i), row(i) + n, row(p));
  }
  for (std::int64_t c = 0; c < n; ++c) {
    const T* xc = row(c);
    for (std::int64_t i = c + 1; i < n; ++i) {
      const T l = lu[i + c * lda];
      T* xi = row(i);
      for (std::int64_t r = 0; r < n; ++r) xi[r] -= times(xc[r], l);
    }
  }
  for (std::int64_t c = n - 1; c >= 0; --c) {
    T* xc = row(c);
    const T d = lu[c + c * lda];
    for (std::int64_t r = 0; r < n; ++r) xc[r] = over(xc[r], d);
    for (std::int64_t i = 0; i < c; ++i) {
      const T u = lu[i + c * lda];
      T* xi = row(i);
      for (std::int64_t r = 0; r < n; ++r) xi[r] -= times(xc[r], u);
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) lu[i + j * lda] = work[i * n + j];
}

// lu stores its pivots as int64 (the op's result), solve and inverse in
// the provider's lapack_int workspace.
#define TENFERRO_SMALL_LU(T)                                                                        \
  template std::int64_t small_lu<T, std::int64_t>(std::int64_t, std::int64_t, T*, std::int64_t,     \
                                                  std::int64_t*) noexcept;                          \
  template std::int64_t small_lu<T, std::int32_t>(std::int64_t, std::int64_t, T*, std::int64_t,     \
                                                  std::int32_t*) noexcept;                          \
  template void small_lu_solve<T, std::int32_t>(std::int64_t, std::int64_t, const T*, std::int64_t, \
                                                const std::int32_t*, T*, std::int64_t) noexcept;    \
  template void small_lu_inverse<T, std::int32_t>(std::int64_t, T*, std::int64_t, const std::int32_t*, T*) noexcept;
#define TENFERRO_SMALL_KERNELS(T)                                                       \
  TENFERRO_SMALL_LU(T)                                                                  \
  template void small_qr<T>(std::int64_t, std::int64_t, T*, std::int64_t, T*) noexcept; \
  template void small_qr_q<T>(std::int64_t, std::int64_t, std::int64_t, T*, std::int64_t, const T*) noexcept;
TENFERRO_SMALL_KERNELS(float)
TENFERRO_SMALL_KERNELS(double)
TENFERRO_SMALL_KERNELS(std::complex<float>)
TENFERRO_SMALL_KERNELS(std::complex<double>)
#undef TENFERRO_SMALL_KERNELS
#undef TENFERRO_SMALL_LU

}  // namespace tenferro::linalg::internal
