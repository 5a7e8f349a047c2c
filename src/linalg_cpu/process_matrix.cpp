// process_matrix: one batch element of a linalg plan. Gathers the strided
// inputs into column-major scratch (rejecting NaN/Inf where the operation
// does), calls the provider, applies the gauge convention (Note [Linalg
// gauge convention] in docs/linalg.md), composes det/slogdet/norms, and
// writes the row-major outputs. One dtype switch per matrix; the loops are
// typed.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

#include <fmt/format.h>

#include "linalg_cpu/lapack/lapack_symbols.h"
#include "linalg_cpu/linalg_plan.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::linalg::internal {

namespace {

// Gauge pivot: the first entry within this relative distance of the
// largest magnitude is made real and positive. The tolerance keeps the
// choice stable across providers whose vectors differ in the last digits.
constexpr double kGaugeTieTolerance = 1e-3;

// Note [Complex magnitudes]
// std::abs of a complex number is libm's hypot, about 12 ns an element:
// the complex norms that fold |z| (orders 1, -1, +-inf, p < 2, the matrix
// 1- and inf-norms) ran at 0.12-0.30 of numpy's (numpy vectorises |z|),
// and the gauge of a full SVD's 1000 x 1000 U spent 80 % of a complex64
// 1000 x 1 SVD in it (the linalg audit of 2026-12-07). |z| is
// sqrt(re^2 + im^2) instead (tenferro builds with -fno-math-errno, Note [No math errno], so
// the square root is one instruction): complex<float> squares summed in
// double, which can neither overflow nor underflow; complex<double> ones
// when their sum is a normal number, where the result is within an ulp of
// hypot's, else hypot (|z| above 1e154 or below 1e-154).
// Folds over a contiguous run check the run once instead, so that their
// loops have no branch and vectorise, in the element's own precision: a
// largest component within [kPlainLow, kPlainHigh] keeps every square
// below overflow, and any square that underflows (|z| below 1e-19 or
// 1e-154) negligible against the largest one.
template <class T>
RealOf<T> magnitude(T x) noexcept {
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    const double re = x.real(), im = x.imag();
    const double r = std::sqrt(re * re + im * im);
    if (r <= std::numeric_limits<double>::max()) [[likely]] {
      return static_cast<float>(r);
    }
    return std::abs(x);  // hypot's inf for inf + NaN i (NaN stays NaN)
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    const double s = x.real() * x.real() + x.imag() * x.imag();
    if (s >= std::numeric_limits<double>::min() && s <= std::numeric_limits<double>::max()) [[likely]] {
      return std::sqrt(s);
    }
    return std::abs(x);
  } else {
    return std::abs(x);
  }
}

template <class T>
RealOf<T> plain_magnitude(T x) noexcept {
  if constexpr (kIsComplex<T>) {
    return std::sqrt(x.real() * x.real() + x.imag() * x.imag());
  } else {
    return std::abs(x);
  }
}

template <class R>
constexpr R kPlainLow = std::is_same_v<R, float> ? R(1e-4) : R(1e-120);
template <class R>
constexpr R kPlainHigh = std::is_same_v<R, float> ? R(1e18) : R(1e150);

// x / |x| (sign for real types); 1 for 0.
template <class T>
T unit_phase(T x) noexcept {
  const RealOf<T> r = magnitude(x);
  if (r == RealOf<T>(0)) return T(1);
  return x / r;
}

template <class T>
T conj_of(T x) noexcept {
  if constexpr (kIsComplex<T>) {
    return std::conj(x);
  } else {
    return x;
  }
}

std::int64_t batch_offset(const TensorView& v, std::span<const std::int64_t> batch_shape, std::int64_t index) {
  std::int64_t offset = 0;
  for (std::size_t axis = batch_shape.size(); axis-- > 0;) {
    offset += (index % batch_shape[axis]) * v.strides[axis];
    index /= batch_shape[axis];
  }
  return offset;
}

// Copies the rows x cols matrix at `src` (element strides rs_src, cs_src)
// to `dst` (rs_dst, cs_dst) with the layout kernels' blocked transposes: an
// element-wise loop against a row-major source walks it with a stride of
// one row per element (a TLB miss per element at n = 1024). A matrix of at
// most 16 KB takes cpu::copy_small_matrix (Note [Small matrix copies]):
// copy_into's validation and loop set-up cost more than the copy there (64
// stacked 4 x 4 inverses ran 2.4x slower than numpy through it), and the
// element loop it replaced made the gather and store of a batch of 32 x 32
// Cholesky factorizations 41 % of their time (the AVX2 audit of
// 2026-12-07).
template <class T>
Status copy_matrix(const T* src, std::int64_t rs_src, std::int64_t cs_src, T* dst, std::int64_t rs_dst,
                   std::int64_t cs_dst, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t kLoopMaxBytes = 16 * 1024;
  if (rows < 8 || cols < 8) {  // inline: a call costs more than these few elements
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) dst[i * rs_dst + j * cs_dst] = src[i * rs_src + j * cs_src];
    return ok_status();
  }
  if (rows * cols * static_cast<std::int64_t>(sizeof(T)) <= kLoopMaxBytes) {
    cpu::copy_small_matrix(src, rs_src, cs_src, dst, rs_dst, cs_dst, rows, cols, sizeof(T));
    return ok_status();
  }
  const std::int64_t shape[2] = {rows, cols};
  const std::int64_t from[2] = {rs_src, cs_src};
  const std::int64_t to[2] = {rs_dst, cs_dst};
  const cpu::SequentialContext sequential;
  return cpu::copy_into(TensorView{const_cast<T*>(src), shape, from, dtype_of<T>},
                        TensorView{dst, shape, to, dtype_of<T>}, sequential);
}

// Note [Finite checks read what the op reads]
// eigh and cholesky read A's lower triangle, triangular_solve its own
// triangle (without the diagonal when unit_diagonal), as LAPACK, numpy and
// torch do. The finiteness check covers the same part: a NaN in the part
// never read was kNonFiniteInput where numpy returns the right result
// (both 2026-12-06 audits). Every other op reads all of A.
enum class ReadRegion : std::uint8_t { kAll, kLower, kUpper, kStrictLower, kStrictUpper };

ReadRegion region_read(const LinalgAttributes& a) {
  switch (a.kind) {
    case LinalgOpKind::kEigh:
    case LinalgOpKind::kCholesky:
      return ReadRegion::kLower;
    case LinalgOpKind::kTriangularSolve:
      if (a.lower) return a.unit_diagonal ? ReadRegion::kStrictLower : ReadRegion::kLower;
      return a.unit_diagonal ? ReadRegion::kStrictUpper : ReadRegion::kUpper;
    default:
      return ReadRegion::kAll;
  }
}

// Whether every element of `region` of the column-major `m` is finite: a
// test of the exponent bits, which vectorises (a NaN or Inf has all of them
// set).
template <class T>
bool all_finite(const MatrixBuffer& m, ReadRegion region) {
  using R = RealOf<T>;
  using Bits = std::conditional_t<sizeof(R) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(R) == 4 ? 0x7f800000u : 0x7ff0000000000000u);
  constexpr std::int64_t kReals = kIsComplex<T> ? 2 : 1;
  Bits bad = 0;
  for (std::int64_t j = 0; j < m.cols; ++j) {
    std::int64_t begin = 0, end = m.rows;  // rows of column j
    switch (region) {
      case ReadRegion::kAll:
        break;
      case ReadRegion::kLower:
        begin = j;
        break;
      case ReadRegion::kStrictLower:
        begin = j + 1;
        break;
      case ReadRegion::kUpper:
        end = std::min(j + 1, m.rows);
        break;
      case ReadRegion::kStrictUpper:
        end = std::min(j, m.rows);
        break;
    }
    const R* column = reinterpret_cast<const R*>(static_cast<const T*>(m.data) + j * m.ld);
    for (std::int64_t i = begin * kReals; i < end * kReals; ++i) {
      bad |= static_cast<Bits>((std::bit_cast<Bits>(column[i]) & kExponent) == kExponent);
    }
  }
  return bad == 0;
}

// Copies matrix `index` of `src` (its last two axes; for a vector operand its
// last axis as one row) into the column-major `dst`; `finite` tells whether
// every element of `region` is finite.
template <class T>
Status gather(const TensorView& src, const LinalgPlan& plan, std::int64_t index, const MatrixBuffer& dst,
              ReadRegion region, bool& finite) {
  const std::size_t rank = src.shape.size();
  const std::int64_t cs = src.strides[rank - 1];
  const std::int64_t rs = dst.rows > 1 || rank >= 2 ? src.strides[rank >= 2 ? rank - 2 : 0] : 0;
  const T* base = src.data_as<const T>() + batch_offset(src, plan.batch_shape, index);
  TENFERRO_TRY(copy_matrix(base, rs, cs, static_cast<T*>(dst.data), 1, dst.ld, dst.rows, dst.cols));
  finite = all_finite<T>(dst, region);
  return ok_status();
}

// Writes the column-major `src` (rows x cols, leading dimension ld) as
// element `index` of the row-major output; column j of the output is
// column order[j] of src when `order` is given.
template <class U>
Status store_matrix(const TensorView& out, std::int64_t index, const U* src, std::int64_t rows, std::int64_t cols,
                    std::int64_t ld, const std::int64_t* order = nullptr) {
  U* dst = out.data_as<U>() + index * rows * cols;
  if (order == nullptr) return copy_matrix(src, 1, ld, dst, cols, 1, rows, cols);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[i + order[j] * ld];
  return ok_status();
}

template <class U>
void store_vector(const TensorView& out, std::int64_t index, const U* src, std::int64_t count,
                  const std::int64_t* order = nullptr) {
  U* dst = out.data_as<U>() + index * count;
  for (std::int64_t i = 0; i < count; ++i) dst[i] = src[order != nullptr ? order[i] : i];
}

template <class U>
void store_scalar(const TensorView& out, std::int64_t index, U value) {
  out.data_as<U>()[index] = value;
}

// Note [Gauge pivot search]
// The gauge pivot is searched on a key that orders like |x| and costs a
// few multiply-adds: |x| for real types, re^2 + im^2 for complex ones, in
// lanes that vectorise (8 ns an element through hypot made the gauge of a
// full SVD's 1000 x 1000 U most of a 1000 x 1 SVD; the linalg audit of
// 2026-12-07). The tie threshold is squared along with the key. A complex
// key that overflows or loses its precision to underflow (|x| beyond about
// 1e19 or below 1e-19 for complex<float>, 1e154 and 1e-154 for
// complex<double>) makes the search run again on magnitude().
template <class T>
auto gauge_key(T x) noexcept {
  if constexpr (kIsComplex<T>) {
    return x.real() * x.real() + x.imag() * x.imag();
  } else {
    return std::abs(x);
  }
}

// Index of the gauge pivot of x[0], x[1], ... (-1 when all are zero).
template <class T>
std::int64_t gauge_pivot(const T* x, std::int64_t count) {
  using R = RealOf<T>;
  constexpr std::int64_t kL = 64 / sizeof(R);
  R lanes[kL] = {};
  std::int64_t i = 0;
  for (; i + kL <= count; i += kL)
    for (std::int64_t k = 0; k < kL; ++k) {
      const R v = gauge_key(x[i + k]);
      lanes[k] = v > lanes[k] ? v : lanes[k];
    }
  R largest = 0;
  for (; i < count; ++i) largest = std::max(largest, gauge_key(x[i]));
  for (const R lane : lanes) largest = std::max(largest, lane);
  constexpr double kTie = 1.0 - kGaugeTieTolerance;
  if constexpr (kIsComplex<T>) {
    if (!(largest >= std::numeric_limits<R>::min() && largest <= std::numeric_limits<R>::max())) {
      R exact = 0;  // magnitudes out of the squares' range, or all zero
      for (std::int64_t j = 0; j < count; ++j) exact = std::max(exact, magnitude(x[j]));
      if (exact == R(0)) return -1;
      const R threshold = exact * static_cast<R>(kTie);
      for (std::int64_t j = 0; j < count; ++j)
        if (magnitude(x[j]) >= threshold) return j;
      return -1;
    }
  }
  if (largest == R(0)) return -1;
  const R threshold = largest * static_cast<R>(kIsComplex<T> ? kTie * kTie : kTie);
  for (std::int64_t j = 0; j < count; ++j)
    if (gauge_key(x[j]) >= threshold) return j;
  return -1;
}

// The contiguous x[0..count) *= factor, as BLAS's scal (no C99 Annex G NaN
// recovery, so that the loop vectorises); nothing for a factor of 1.
template <class T>
void scale(T* x, std::int64_t count, T factor) {
  if (factor == T(1)) return;
  if constexpr (kIsComplex<T>) {
    const auto fr = factor.real(), fi = factor.imag();
    for (std::int64_t i = 0; i < count; ++i) {
      const T v = x[i];
      x[i] = T(v.real() * fr - v.imag() * fi, v.real() * fi + v.imag() * fr);
    }
  } else {
    for (std::int64_t i = 0; i < count; ++i) x[i] *= factor;
  }
}

// Makes the gauge pivot of column j of `m` real positive; returns the phase
// removed (1 when the column is zero).
template <class T>
T normalize_column(const MatrixBuffer& m, std::int64_t j) {
  T* col = static_cast<T*>(m.data) + j * m.ld;
  const std::int64_t p = gauge_pivot(col, m.rows);
  if (p < 0) return T(1);
  const T phase = unit_phase(col[p]);
  scale(col, m.rows, conj_of(phase));
  return phase;
}

// Makes the gauge pivot of the contiguous row `row` real positive.
template <class T>
void normalize_row(T* row, std::int64_t count) {
  const std::int64_t p = gauge_pivot(row, count);
  if (p < 0) return;
  scale(row, count, conj_of(unit_phase(row[p])));
}

// Note [Elementwise norms]
// Vector norms and the Frobenius norm read the operand where it lies (no
// gather into scratch) and add into kLanes independent partial sums, which
// the compiler vectorises without reordering any one of them (no
// fast-math needed); one accumulator is one dependent addition per element
// (with the copy, 25-35x slower than numpy's dot-based norm at 2^18 to 2^20
// float64 elements). A complex
// operand with unit stride is summed as 2n reals. The 2-norm sums
// unscaled squares as numpy does, then redoes the sum scaled by the
// largest magnitude when the squares overflowed to Inf or underflowed below
// the smallest normal number (numpy answers Inf or 0 there).
template <class R>
constexpr std::int64_t kLanes = 256 / sizeof(R);  // four AVX-512 (eight AVX2) registers

// The sum of term(x[i]) over the contiguous x[0..n) in kLanes independent
// partial sums (of term's real type R).
template <class E, class F, class R = std::invoke_result_t<F, E>>
R lane_sum(const E* x, std::int64_t n, F term) {
  constexpr std::int64_t kL = kLanes<R>;
  R lanes[kL] = {};
  std::int64_t i = 0;
  for (; i + kL <= n; i += kL)
    for (std::int64_t k = 0; k < kL; ++k) lanes[k] += term(x[i + k]);
  R sum = 0;
  for (; i < n; ++i) sum += term(x[i]);
  for (const R lane : lanes) sum += lane;
  return sum;
}

// v when it is further out than best (larger when kLargest) or NaN: a NaN
// once taken stays (no comparison with it is true).
template <bool kLargest, class R>
R further(R best, R v) noexcept {
  return (kLargest ? v > best : v < best) || v != v ? v : best;
}

// The largest (smallest) magnitude of the contiguous x[0..n), NaN when one
// is NaN, in GCC vector types: GCC keeps a select with a NaN test scalar
// and branchy (158 us against numpy's 75 us for 2^18 float64; 28 us so).
template <bool kLargest, class R>
R extreme_contiguous(const R* x, std::int64_t n) {
  constexpr std::int64_t kWidth = 64 / sizeof(R);
  typedef R V __attribute__((vector_size(64)));
  const R init = kLargest ? R(0) : std::numeric_limits<R>::infinity();
  V best0, best1;
  for (std::int64_t k = 0; k < kWidth; ++k) best0[k] = best1[k] = init;
  auto nan = best0 != best0;
  std::int64_t i = 0;
  for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
    V a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, x + i + kWidth, sizeof b);
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    nan |= (a != a) | (b != b);
    best0 = (kLargest ? a > best0 : a < best0) ? a : best0;
    best1 = (kLargest ? b > best1 : b < best1) ? b : best1;
  }
  R best = init;
  bool any_nan = false;
  for (std::int64_t k = 0; k < kWidth; ++k) {
    any_nan |= nan[k] != 0;
    best = further<kLargest>(further<kLargest>(best, best0[k]), best1[k]);
  }
  for (; i < n; ++i) best = further<kLargest>(best, std::abs(x[i]));
  return any_nan ? std::numeric_limits<R>::quiet_NaN() : best;
}

// The largest (smallest) plain_magnitude of the contiguous complex
// x[0..n), NaN when one is NaN, in kLanes lanes (a NaN is seen in their sum).
template <bool kLargest, class T>
RealOf<T> plain_magnitude_extreme(const T* x, std::int64_t n) {
  using R = RealOf<T>;
  constexpr std::int64_t kL = kLanes<R>;
  const R init = kLargest ? R(0) : std::numeric_limits<R>::infinity();
  R lanes[kL];
  R sums[kL] = {};
  std::fill(lanes, lanes + kL, init);
  std::int64_t i = 0;
  for (; i + kL <= n; i += kL)
    for (std::int64_t k = 0; k < kL; ++k) {
      const R v = plain_magnitude(x[i + k]);
      sums[k] += v;
      lanes[k] = (kLargest ? v > lanes[k] : v < lanes[k]) ? v : lanes[k];
    }
  R best = init, sum = 0;
  for (; i < n; ++i) best = further<kLargest>(best, plain_magnitude(x[i]));
  for (std::int64_t k = 0; k < kL; ++k) {
    best = further<kLargest>(best, lanes[k]);
    sum += sums[k];
  }
  return std::isnan(sum) ? sum : best;
}

// One strided run of elements x[0], x[stride], ..., x[(n - 1) * stride].
template <class T>
struct Run {
  const T* x;
  std::int64_t n;
  std::int64_t stride;
};

template <class T>
RealOf<T> sum_of_squares(Run<T> run) {
  using R = RealOf<T>;
  const auto square = [](R v) { return v * v; };
  if (run.stride == 1) {
    if constexpr (kIsComplex<T>) {
      return lane_sum(reinterpret_cast<const R*>(run.x), 2 * run.n, square);
    } else {
      return lane_sum(run.x, run.n, square);
    }
  }
  R sum = 0;
  for (std::int64_t i = 0; i < run.n; ++i) sum += std::norm(run.x[i * run.stride]);
  return sum;
}

// Whether plain_magnitude is magnitude() to within an ulp over the
// contiguous x[0..n), or negligibly off for elements far below the largest
// (Note [Complex magnitudes]).
template <class T>
bool plain_magnitudes(const T* x, std::int64_t n) {
  using R = RealOf<T>;
  const R largest = extreme_contiguous<true>(reinterpret_cast<const R*>(x), 2 * n);
  return largest >= kPlainLow<R> && largest <= kPlainHigh<R>;  // false for NaN
}

template <class T>
RealOf<T> sum_of_magnitudes(Run<T> run) {
  using R = RealOf<T>;
  if constexpr (!kIsComplex<T>) {
    if (run.stride == 1) return lane_sum(run.x, run.n, [](R v) { return std::abs(v); });
  } else {
    if (run.stride == 1 && plain_magnitudes(run.x, run.n)) {
      return lane_sum(run.x, run.n, [](T v) { return plain_magnitude(v); });
    }
  }
  R sum = 0;
  for (std::int64_t i = 0; i < run.n; ++i) sum += magnitude(run.x[i * run.stride]);
  return sum;
}

// Note [Integer and half-integer powers]
// |x|^p of a p-norm: std::pow per element ran 4-6x slower than numpy's
// vectorised pow (p = 3: 10.1 against 2.45 ms on 2^20 float64). Integer
// orders up to 8 in magnitude (negative ones too) are products,
// half-integers a square root times a product, which vectorise; other
// orders keep std::pow. with_power hands `run` the power function chosen.
template <int K, class R>
inline R int_power(R m) {
  if constexpr (K == 0) {
    return R(1);
  } else if constexpr (K == 1) {
    return m;
  } else {
    const R h = int_power<K / 2>(m);
    if constexpr (K % 2 == 1) {
      return h * h * m;
    } else {
      return h * h;
    }
  }
}

template <class R, int K, class F>
auto power_case(bool negative, bool half, F& run) {
  if (half && negative) return run([](R m) { return R(1) / (int_power<K>(m) * std::sqrt(m)); });
  if (half) return run([](R m) { return int_power<K>(m) * std::sqrt(m); });
  if (negative) return run([](R m) { return R(1) / int_power<K>(m); });
  return run([](R m) { return int_power<K>(m); });
}

template <class R, class F>
auto with_power(double p, F&& run) {
  const double a = std::abs(p), whole = std::floor(a);
  const bool half = a - whole == 0.5;
  if ((a == whole || half) && whole <= 8) {
    const bool negative = p < 0;
    switch (static_cast<int>(whole)) {
      case 0:
        return power_case<R, 0>(negative, half, run);
      case 1:
        return power_case<R, 1>(negative, half, run);
      case 2:
        return power_case<R, 2>(negative, half, run);
      case 3:
        return power_case<R, 3>(negative, half, run);
      case 4:
        return power_case<R, 4>(negative, half, run);
      case 5:
        return power_case<R, 5>(negative, half, run);
      case 6:
        return power_case<R, 6>(negative, half, run);
      case 7:
        return power_case<R, 7>(negative, half, run);
      default:
        return power_case<R, 8>(negative, half, run);
    }
  }
  const R q = static_cast<R>(p);
  return run([q](R m) { return std::pow(m, q); });
}

// What an elementwise norm folds its magnitudes into.
enum class NormFold : std::uint8_t { kSquares, kMagnitudes, kNonZeros, kPowers, kLargest, kSmallest };

NormFold fold_of(NormOrder order, double p) noexcept {
  switch (order) {
    case NormOrder::kFrobenius:
    case NormOrder::kTwo:
      return NormFold::kSquares;
    case NormOrder::kInf:
      return NormFold::kLargest;
    case NormOrder::kNegInf:
      return NormFold::kSmallest;
    default:
      return p == 2   ? NormFold::kSquares
             : p == 1 ? NormFold::kMagnitudes
             : p == 0 ? NormFold::kNonZeros
                      : NormFold::kPowers;
  }
}

// The operand of an elementwise norm as runs: a vector is one run; a
// matrix one run when its elements are equally spaced, else one run per
// row or column along the smaller stride.
template <class T>
class ElementwiseNorm {
 public:
  using R = RealOf<T>;

  ElementwiseNorm(const T* base, std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs)
      : base_(base), rows_(rows), cols_(cols), rs_(rs), cs_(cs) {
    if (rows_ == 1 || rs_ == cols_ * cs_) {  // one run of rows * cols spaced cs
      cols_ *= rows_;
      rows_ = 1;
    } else if (cols_ == 1 || cs_ == rows_ * rs_) {  // column-major: spaced rs
      cols_ *= rows_;
      cs_ = rs_;
      rows_ = 1;
    } else if (std::abs(rs_) < std::abs(cs_)) {  // runs along the columns
      std::swap(rows_, cols_);
      std::swap(rs_, cs_);
    }
  }

  // Whether the operand is one run (a vector, or equally spaced elements).
  bool one_run() const noexcept { return rows_ == 1; }
  Run<T> run() const noexcept { return Run<T>{base_, cols_, cs_}; }

  // The unfinished fold of kSquares, kMagnitudes, kLargest or kSmallest
  // (no square root, no rescaling), for splitting one run over threads.
  R partial(NormFold fold) const {
    switch (fold) {
      case NormFold::kSquares:
        return total(sum_of_squares<T>);
      case NormFold::kMagnitudes:
        return total(sum_of_magnitudes<T>);
      case NormFold::kLargest:
        return extreme<true>();
      default:
        return extreme<false>();
    }
  }

  // The 2-norm from its sum of squares: the square root, or when the sum
  // overflowed or underflowed, the sum again scaled by the largest
  // magnitude (NaN stays NaN).
  R finish_two_norm(R sum) const {
    if (sum >= std::numeric_limits<R>::min() && sum <= std::numeric_limits<R>::max()) return std::sqrt(sum);
    if (std::isnan(sum)) return sum;
    const R largest = extreme<true>();
    if (largest == R(0) || std::isinf(largest) || std::isnan(largest)) return largest;
    const R scaled = total([largest](Run<T> r) {
      R s = 0;
      for (std::int64_t i = 0; i < r.n; ++i) s += std::norm(r.x[i * r.stride] / largest);
      return s;
    });
    return largest * std::sqrt(scaled);
  }

  // Note [Scaled p-norms]
  // The p-norm from its sum of |x|^p: sum^(1/p), or, when the sum
  // overflowed or underflowed (|x|^p leaves the range long before the norm
  // does: float32 [1e13] * 4 at p = 3 was inf, float64 [1e200] * 4 too; the
  // C++ linalg audit), the sum again of (|x| / s)^p with s the largest
  // magnitude for p > 0 or the smallest for p < 0, so that every term is at
  // most 1 and one term is 1, and the norm s * sum^(1/p). NaN stays NaN;
  // with p < 0 a zero element gives 0 and with p > 0 an infinite one inf,
  // as the plain formula does. numpy and torch do not rescale.
  R finish_power_norm(R sum, R p) const {
    if (sum >= std::numeric_limits<R>::min() && sum <= std::numeric_limits<R>::max()) {
      return std::pow(sum, R(1) / p);
    }
    if (std::isnan(sum)) return sum;
    const R scale = p > 0 ? extreme<true>() : extreme<false>();
    if (scale == R(0) || std::isinf(scale) || std::isnan(scale)) return std::pow(sum, R(1) / p);
    const R scaled = total([scale, p](Run<T> r) {
      R s = 0;
      for (std::int64_t i = 0; i < r.n; ++i) s += std::pow(magnitude(r.x[i * r.stride]) / scale, p);
      return s;
    });
    return scale * std::pow(scaled, R(1) / p);
  }

  R compute(NormOrder order, double p) const {
    const NormFold fold = fold_of(order, p);
    switch (fold) {
      case NormFold::kSquares:
        return finish_two_norm(partial(fold));
      case NormFold::kLargest:
      case NormFold::kSmallest:
      case NormFold::kMagnitudes:
        return partial(fold);
      case NormFold::kNonZeros:
        return total([](Run<T> r) {
          R count = 0;
          for (std::int64_t i = 0; i < r.n; ++i) count += r.x[i * r.stride] != T(0) ? R(1) : R(0);
          return count;
        });
      case NormFold::kPowers:
        break;
    }
    // Note [Integer and half-integer powers]. A complex |z|^p with |p| >= 2
    // is (re^2 + im^2)^(p/2), without hypot's cost (3.3x numpy's time at
    // p = 3); the square overflows only where |z|^p does too.
    const bool squares = kIsComplex<T> && std::abs(p) >= 2;
    const R sum = with_power<R>(squares ? p / 2 : p, [&](auto power) {
      return total([&](Run<T> r) {
        if constexpr (!kIsComplex<T>) {
          if (r.stride == 1) return lane_sum(r.x, r.n, [&](R v) { return power(std::abs(v)); });
        }
        R s = 0;
        for (std::int64_t i = 0; i < r.n; ++i) {
          const T x = r.x[i * r.stride];
          s += power(squares ? std::norm(x) : magnitude(x));
        }
        return s;
      });
    });
    return finish_power_norm(sum, static_cast<R>(p));
  }

 private:
  template <class F>
  R total(F per_run) const {
    R sum = 0;
    for (std::int64_t i = 0; i < rows_; ++i) sum += per_run(Run<T>{base_ + i * rs_, cols_, cs_});
    return sum;
  }

  // The largest (or smallest) magnitude; NaN when any element is NaN.
  template <bool kLargest>
  R extreme() const {
    const R init = kLargest ? R(0) : std::numeric_limits<R>::infinity();
    R best = init;
    for (std::int64_t i = 0; i < rows_; ++i) {
      const T* x = base_ + i * rs_;
      if constexpr (!kIsComplex<T>) {
        if (cs_ == 1) {
          best = further<kLargest>(best, extreme_contiguous<kLargest>(x, cols_));
          continue;
        }
      } else {
        if (cs_ == 1 && plain_magnitudes(x, cols_)) {
          const R plain = plain_magnitude_extreme<kLargest>(x, cols_);
          if (kLargest || plain >= kPlainLow<R>) {  // a smallest below it may have lost its precision
            best = further<kLargest>(best, plain);
            continue;
          }
        }
      }
      for (std::int64_t j = 0; j < cols_; ++j) best = further<kLargest>(best, magnitude(x[j * cs_]));
    }
    return best;
  }

  const T* base_;
  std::int64_t rows_, cols_, rs_, cs_;
};

// Batch element `index` of the operand of an elementwise norm.
template <class T>
ElementwiseNorm<T> elementwise_operand(const LinalgPlan& plan, const TensorView& src, std::int64_t index) {
  const std::size_t rank = src.shape.size();
  const std::int64_t rs = plan.attributes.kind == LinalgOpKind::kVectorNorm ? 0 : src.strides[rank - 2];
  return ElementwiseNorm<T>(src.data_as<const T>() + batch_offset(src, plan.batch_shape, index), plan.m, plan.n, rs,
                            src.strides[rank - 1]);
}

// Vector norms of vectors that lie across the batch (norm(A, axis=0) of a
// row-major A: each vector strided, adjacent vectors adjacent): a block of
// adjacent vectors is folded together, element k of each at a time, the
// inner loop over unit-stride memory. Per vector, the strided walk would
// touch a cache line per element (6.6x slower than numpy at 512 x 512).
template <class T>
void norms_across(const LinalgPlan& plan, const TensorView& src, const TensorView& out, std::int64_t begin,
                  std::int64_t end) {
  using R = RealOf<T>;
  constexpr std::int64_t kBlock = 256;
  R acc[kBlock];
  const std::size_t rank = src.shape.size();
  const std::int64_t n = plan.n, vs = src.strides[rank - 1], last = src.shape[rank - 2];
  const NormFold fold = fold_of(plan.attributes.norm, plan.attributes.p);
  const R q = static_cast<R>(plan.attributes.p);
  R* dst = out.data_as<R>();
  for (std::int64_t i = begin; i < end;) {
    const std::int64_t count = std::min({end - i, last - i % last, kBlock});
    const T* base = src.data_as<const T>() + batch_offset(src, plan.batch_shape, i);
    const auto each = [&](R init, auto step) {
      std::fill(acc, acc + count, init);
      for (std::int64_t k = 0; k < n; ++k) {
        const T* row = base + k * vs;
        for (std::int64_t j = 0; j < count; ++j) acc[j] = step(acc[j], row[j]);
      }
    };
    switch (fold) {
      case NormFold::kSquares:
        each(R(0), [](R a, T x) { return a + std::norm(x); });
        for (std::int64_t j = 0; j < count; ++j)
          acc[j] = ElementwiseNorm<T>(base + j, 1, n, 0, vs).finish_two_norm(acc[j]);
        break;
      case NormFold::kMagnitudes:
        each(R(0), [](R a, T x) { return a + magnitude(x); });
        break;
      case NormFold::kNonZeros:
        each(R(0), [](R a, T x) { return a + (x != T(0) ? R(1) : R(0)); });
        break;
      case NormFold::kPowers:
        with_power<R>(plan.attributes.p, [&](auto power) {
          each(R(0), [&](R a, T x) { return a + power(magnitude(x)); });
          return 0;
        });
        for (std::int64_t j = 0; j < count; ++j)
          acc[j] = ElementwiseNorm<T>(base + j, 1, n, 0, vs).finish_power_norm(acc[j], q);
        break;
      case NormFold::kLargest:
        each(R(0), [](R a, T x) { return further<true>(a, magnitude(x)); });
        break;
      case NormFold::kSmallest:
        each(std::numeric_limits<R>::infinity(), [](R a, T x) { return further<false>(a, magnitude(x)); });
        break;
    }
    std::copy(acc, acc + count, dst + i);
    i += count;
  }
}

Error non_finite_error(LinalgOpKind kind, int operand) {
  return make_error(ErrorCode::kNonFiniteInput, ErrorStage::kNone,
                    "linalg.{}: expected finite values, found NaN or Inf in operand {}", to_string(kind), operand);
}

template <class T>
class MatrixProcessor {
 public:
  using R = RealOf<T>;
  using C = std::complex<R>;

  MatrixProcessor(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                  std::int64_t index, std::span<std::byte> scratch)
      : plan_(plan), a_(plan.attributes), in_(inputs), out_(outputs), index_(index), base_(scratch.data()) {
    const ScratchLayout& l = plan.layout;
    buffers_.a = with_data(l.a_shape, l.a);
    buffers_.b = with_data(l.b_shape, l.b);
    buffers_.u = with_data(l.u_shape, l.u);
    buffers_.v = with_data(l.v_shape, l.v);
    buffers_.values = base_ + l.values;
    buffers_.pivots = reinterpret_cast<std::int64_t*>(base_ + l.pivots);
    workspace_ = std::span<std::byte>(base_ + l.workspace, plan.kernel.workspace_bytes);
  }

  Status run() {
    if (is_elementwise_norm(a_)) return elementwise_norm();
    if (is_sum_norm(a_)) {
      if (plan_.m == 0 || plan_.n == 0) return write_empty();
      store_scalar(out_[0], index_, sum_norm());
      return ok_status();
    }
    const bool check = rejects_non_finite(a_.kind);
    bool finite_a = true;
    TENFERRO_TRY(gather<T>(in_[0], plan_, index_, buffers_.a, region_read(a_), finite_a));
    if (check && !finite_a) return non_finite_error(a_.kind, 0);
    if (in_.size() > 1) {
      // lstsq: B occupies the first m rows of a max(m, n)-row buffer.
      MatrixBuffer rhs = buffers_.b;
      rhs.rows = plan_.m;
      bool finite_b = true;
      TENFERRO_TRY(gather<T>(in_[1], plan_, index_, rhs, ReadRegion::kAll, finite_b));
      if (check && !finite_b) return non_finite_error(a_.kind, 1);
    }
    if (plan_.m == 0 || plan_.n == 0) return write_empty();
    if (a_.kind == LinalgOpKind::kEig) exponent_ = scale_to_unit();  // Note [Eig scaling]
    // A spectral norm of a non-finite matrix never reaches the provider
    // (matrix_norm() answers it).
    if (plan_.provider != nullptr && finite_a) {
      TENFERRO_TRY(plan_.provider->run(plan_.problem(), plan_.kernel, buffers_, workspace_));
    }
    return finish();
  }

 private:
  // Note [Elementwise norms]: read in place, no gather.
  Status elementwise_norm() {
    if (plan_.m == 0 || plan_.n == 0) {  // Note [Norms of empty operands]
      if (a_.norm == NormOrder::kP && a_.p < 0) {
        store_scalar(out_[0], index_, std::numeric_limits<R>::infinity());
        return ok_status();
      }
      return write_empty();
    }
    store_scalar(out_[0], index_, elementwise_operand<T>(plan_, in_[0], index_).compute(a_.norm, a_.p));
    return ok_status();
  }

  // Note [Sum norms]
  // The 1 and -1 norms are the largest and smallest absolute column sum,
  // the inf and -inf norms the same of the row sums. They read the operand
  // where it lies (a gathered column-major copy of a row-major 1024 x 1024
  // matrix made the 1-norm 2.9x slower than numpy's): when the lines
  // summed lie next to each other (a row-major matrix's columns), all sums
  // advance together one element at a time along unit-stride memory,
  // otherwise each line is summed along its own stride. A NaN anywhere gives
  // NaN, as numpy's max and min of the sums do.
  R sum_norm() const {
    const TensorView& src = in_[0];
    const std::size_t rank = src.shape.size();
    const T* base = src.data_as<const T>() + batch_offset(src, plan_.batch_shape, index_);
    const bool columns = a_.norm == NormOrder::kOne || a_.norm == NormOrder::kNegOne;
    const std::int64_t rs = src.strides[rank - 2], cs = src.strides[rank - 1];
    const std::int64_t count = columns ? plan_.n : plan_.m, length = columns ? plan_.m : plan_.n;
    const std::int64_t line_stride = columns ? cs : rs, step = columns ? rs : cs;  // line l, element k
    R* sums = static_cast<R*>(buffers_.values);
    const bool largest = a_.norm == NormOrder::kOne || a_.norm == NormOrder::kInf;
    const R best = line_sums(base, count, length, line_stride, step, sums, largest, /*allow_plain=*/true);
    // A smallest sum below kPlainLow * length may be a line of magnitudes
    // the plain squares lost (each line's plain check covers its largest
    // element only): redone exactly (Note [Complex magnitudes]).
    if constexpr (kIsComplex<T>) {
      if (!largest && best < kPlainLow<R> * static_cast<R>(length)) {
        return line_sums(base, count, length, line_stride, step, sums, largest, /*allow_plain=*/false);
      }
    }
    return best;
  }

  // The largest (smallest) over `count` lines of the sum of their `length`
  // magnitudes, line l's element k at base[l * line_stride + k * step];
  // NaN if one is NaN. allow_plain: contiguous complex lines in
  // plain_magnitude where plain_magnitudes allows.
  static R line_sums(const T* base, std::int64_t count, std::int64_t length, std::int64_t line_stride,
                     std::int64_t step, R* sums, bool largest, bool allow_plain) {
    const auto plain = [&](const T* x, std::int64_t n) {  // (&: allow_plain is unused for real T)
      if constexpr (kIsComplex<T>) {
        return allow_plain && plain_magnitudes(x, n);
      } else {
        return false;
      }
    };
    if (std::abs(line_stride) <= std::abs(step)) {
      std::fill(sums, sums + count, R(0));
      for (std::int64_t k = 0; k < length; ++k) {
        const T* x = base + k * step;
        if (line_stride == 1 && plain(x, count)) {
          for (std::int64_t l = 0; l < count; ++l) sums[l] += plain_magnitude(x[l]);
        } else {
          for (std::int64_t l = 0; l < count; ++l) sums[l] += magnitude(x[l * line_stride]);
        }
      }
    } else {
      for (std::int64_t l = 0; l < count; ++l) {
        const T* x = base + l * line_stride;
        if (step != 1) {
          R sum = 0;
          for (std::int64_t k = 0; k < length; ++k) sum += magnitude(x[k * step]);
          sums[l] = sum;
          continue;
        }
        // Eight independent partial sums: one chain was latency-bound, 4x
        // slower than numpy's pairwise sum on 1024-element rows.
        const auto eight = [&](auto mag) {
          R part[8] = {};
          std::int64_t k = 0;
          for (; k + 8 <= length; k += 8)
            for (int u = 0; u < 8; ++u) part[u] += mag(x[k + u]);
          for (; k < length; ++k) part[0] += mag(x[k]);
          return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        };
        sums[l] =
            plain(x, length) ? eight([](T v) { return plain_magnitude(v); }) : eight([](T v) { return magnitude(v); });
      }
    }
    R best = largest ? R(0) : std::numeric_limits<R>::infinity();
    for (std::int64_t l = 0; l < count; ++l) {
      if (std::isnan(sums[l])) return sums[l];
      best = largest ? std::max(best, sums[l]) : std::min(best, sums[l]);
    }
    return best;
  }

  MatrixBuffer with_data(MatrixBuffer shape, std::size_t offset) const {
    shape.data = base_ + offset;
    return shape;
  }
  T* data(const MatrixBuffer& m) const { return static_cast<T*>(m.data); }
  std::int64_t k() const { return std::min(plan_.m, plan_.n); }

  Status finish() {
    const std::int64_t m = plan_.m, n = plan_.n;
    switch (a_.kind) {
      case LinalgOpKind::kSvd:
        return finish_svd();
      case LinalgOpKind::kQr: {
        const MatrixBuffer& q = buffers_.u;
        const MatrixBuffer& r = buffers_.v;
        // Row i of R is scaled in the row-major output, where it is contiguous.
        TENFERRO_TRY(store_matrix(out_[1], index_, data(r), r.rows, r.cols, r.ld));
        T* r_out = out_[1].data_as<T>() + index_ * r.rows * r.cols;
        for (std::int64_t i = 0; i < k(); ++i) {
          const T rii = data(r)[i + i * r.ld];
          if (rii == T(0)) continue;
          const T phase = unit_phase(rii);
          scale(r_out + i * r.cols, r.cols, conj_of(phase));
          scale(data(q) + i * q.ld, q.rows, phase);
        }
        return store_matrix(out_[0], index_, data(q), q.rows, q.cols, q.ld);
      }
      case LinalgOpKind::kEigh:
        store_vector(out_[0], index_, static_cast<const R*>(buffers_.values), n);
        if (a_.compute_vectors) {
          for (std::int64_t j = 0; j < n; ++j) normalize_column<T>(buffers_.a, j);
          TENFERRO_TRY(store_matrix(out_[1], index_, data(buffers_.a), n, n, buffers_.a.ld));
        }
        return ok_status();
      case LinalgOpKind::kEig:
        return finish_eig();
      case LinalgOpKind::kInv: {
        // -0.0 (a zero the solve reached through a negative product) reads
        // +0.0, as numpy's inverse gives it.
        T* a = data(buffers_.a);
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < n; ++i) a[i + j * buffers_.a.ld] += T(0);
        return store_matrix(out_[0], index_, a, n, n, buffers_.a.ld);
      }
      case LinalgOpKind::kCholesky:
        return store_matrix(out_[0], index_, data(buffers_.a), n, n, buffers_.a.ld);
      case LinalgOpKind::kLu: {
        TENFERRO_TRY(store_matrix(out_[0], index_, data(buffers_.a), m, n, buffers_.a.ld));
        store_vector(out_[1], index_, buffers_.pivots, k());
        std::int64_t* perm = out_[2].data_as<std::int64_t>() + index_ * m;
        for (std::int64_t i = 0; i < m; ++i) perm[i] = i;
        for (std::int64_t i = 0; i < k(); ++i) std::swap(perm[i], perm[buffers_.pivots[i]]);
        return ok_status();
      }
      case LinalgOpKind::kSolve:
      case LinalgOpKind::kTriangularSolve:
        return store_matrix(out_[0], index_, data(buffers_.b), n, plan_.nrhs, buffers_.b.ld);
      case LinalgOpKind::kLstsq:
        if (a_.singular_values) store_vector(out_[1], index_, static_cast<const R*>(buffers_.values), k());
        return store_matrix(out_[0], index_, data(buffers_.b), n, plan_.nrhs, buffers_.b.ld);
      case LinalgOpKind::kPinv:
        return store_matrix(out_[0], index_, data(buffers_.v), n, m, buffers_.v.ld);
      case LinalgOpKind::kDet:
      case LinalgOpKind::kSlogdet:
        return finish_determinant();
      case LinalgOpKind::kMatrixNorm:
        store_scalar(out_[0], index_, matrix_norm());
        return ok_status();
      case LinalgOpKind::kVectorNorm:  // elementwise_norm()
        return ok_status();
    }
    return ok_status();
  }

  Status finish_svd() {
    const auto* s = static_cast<const R*>(buffers_.values);
    if (a_.svd_mode == SvdMode::kValuesOnly) {
      store_vector(out_[0], index_, s, k());
      return ok_status();
    }
    const MatrixBuffer& u = buffers_.u;
    const MatrixBuffer& vh = buffers_.v;
    // The rows of Vh are scaled in the row-major output, where they are contiguous.
    TENFERRO_TRY(store_matrix(out_[2], index_, data(vh), vh.rows, vh.cols, vh.ld));
    T* vh_out = out_[2].data_as<T>() + index_ * vh.rows * vh.cols;
    for (std::int64_t j = 0; j < u.cols; ++j) {
      const T phase = normalize_column<T>(u, j);
      if (j < k()) scale(vh_out + j * vh.cols, vh.cols, phase);
    }
    for (std::int64_t i = k(); i < vh.rows; ++i) normalize_row<T>(vh_out + i * vh.cols, vh.cols);
    TENFERRO_TRY(store_matrix(out_[0], index_, data(u), u.rows, u.cols, u.ld));
    store_vector(out_[1], index_, s, k());
    return ok_status();
  }

  // Note [Eig scaling]
  // Eigen's EigenSolver returned NaN eigenvectors for a well-conditioned
  // real matrix scaled to 1e300 (or 1e30 in float32), and its complex solver
  // did not converge there (the correctness audit of 2026-12-07; LAPACK's
  // geev scales such a matrix itself, Eigen does not). A matrix whose
  // largest component lies outside [min^(1/4), max^(1/4)] of its real type
  // is scaled by a power of two, which is exact, so that it lies in
  // [0.5, 1); the eigenvectors do not change and the eigenvalues are scaled
  // back (the Eigen provider's qr does the same: Note [Eigen QR scaling]).
  // Returns the exponent (0: not scaled).
  int scale_to_unit() {
    const std::int64_t m = plan_.m, n = plan_.n;
    T* a = data(buffers_.a);
    const std::int64_t ld = buffers_.a.ld;
    R largest = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        const T x = a[i + j * ld];
        if constexpr (kIsComplex<T>) {
          largest = std::max({largest, std::abs(x.real()), std::abs(x.imag())});
        } else {
          largest = std::max(largest, std::abs(x));
        }
      }
    const R high = std::sqrt(std::sqrt(std::numeric_limits<R>::max()));
    const R low = std::sqrt(std::sqrt(std::numeric_limits<R>::min()));
    if (largest == R(0) || !std::isfinite(largest) || (largest >= low && largest <= high)) return 0;
    int e = 0;
    std::frexp(largest, &e);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) scale_by_power(a[i + j * ld], -e);
    return e;
  }
  // x * 2^e, exact unless it leaves the range (2^e alone may not be finite:
  // e is -1073 for a subnormal largest component).
  static void scale_by_power(T& x, int e) {
    if constexpr (kIsComplex<T>) {
      x = T(std::ldexp(x.real(), e), std::ldexp(x.imag(), e));
    } else {
      x = std::ldexp(x, e);
    }
  }

  Status finish_eig() {
    const std::int64_t n = plan_.n;
    auto* w = static_cast<C*>(buffers_.values);
    if (exponent_ != 0) {  // Note [Eig scaling]
      for (std::int64_t i = 0; i < n; ++i)
        w[i] = C(std::ldexp(w[i].real(), exponent_), std::ldexp(w[i].imag(), exponent_));
    }
    auto* order = reinterpret_cast<std::int64_t*>(base_ + plan_.layout.order);
    for (std::int64_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order, order + n, [w](std::int64_t x, std::int64_t y) {
      return w[x].real() < w[y].real() || (w[x].real() == w[y].real() && w[x].imag() < w[y].imag());
    });
    store_vector(out_[0], index_, w, n, order);
    if (!a_.compute_vectors) return ok_status();
    const MatrixBuffer& v = buffers_.u;
    auto* vd = static_cast<C*>(v.data);
    for (std::int64_t j = 0; j < n; ++j) {
      R norm2 = 0;
      for (std::int64_t i = 0; i < n; ++i) norm2 += std::norm(vd[i + j * v.ld]);
      if (norm2 > R(0)) scale(vd + j * v.ld, n, C(R(1) / std::sqrt(norm2)));
      normalize_column<C>(v, j);
    }
    return store_matrix(out_[1], index_, vd, n, n, v.ld, order);
  }

  // Note [Determinant scaling]
  // det is the product of the LU pivots. Multiplied in order, a partial
  // product overflowed or underflowed where the determinant does not:
  // det(diag(1e300, 1e300, 1e-300, 1e-300)) was inf (numpy: 1.0), the
  // reverse order 0, and float32 failed near 1e30 (the Python numerics
  // audit). The product is kept as a mantissa of magnitude in [0.5, 1)
  // (frexp; for complex, of its larger part) and a power of two, scaled
  // once at the end (ldexp): the result overflows or underflows only when
  // the determinant does, each rounding is the plain product's, and a
  // complex determinant that overflows keeps each part's sign (inf+infj,
  // not -inf+infj). slogdet takes the log of the same product (one log per
  // matrix). The product and the next pivot are split into mantissa
  // and exponent only when one of them lies outside [2^-k, 2^k] (k a
  // quarter of the exponent range): inside it no product leaves the normal
  // range, so the roundings are the same, and the frexp/ldexp pairs (a
  // fifth of a 2 x 2 det) are skipped. Splitting the pivot too keeps a
  // subnormal pivot's digits (det [[1e300, 0], [0, 5e-324]] was 6.6e-24,
  // not 4.9e-24; the correctness audit of 2026-12-07).
  Status finish_determinant() {
    const std::int64_t n = plan_.n;
    const T* lu = data(buffers_.a);
    bool odd = false;
    for (std::int64_t i = 0; i < n; ++i) odd = odd != (buffers_.pivots[i] != i);
    // [2^-k, 2^k]: a product of two values inside stays normal, also after
    // the cancellation of a complex product's parts.
    constexpr R kHigh = std::is_same_v<R, float> ? R(0x1p31) : R(0x1p255);
    const auto plain = [](T x) {
      const R large = kIsComplex<T> ? std::max(std::abs(std::real(x)), std::abs(std::imag(x))) : std::abs(std::real(x));
      return large <= kHigh && large >= R(1) / kHigh;
    };
    // x as a mantissa of magnitude in [0.5, 1) (its larger part), its power
    // of two added to `exponent`; exact, also for a subnormal x.
    int exponent = 0;
    const auto mantissa = [&exponent](T x) {
      int e = 0;
      if constexpr (kIsComplex<T>) {
        std::frexp(std::max(std::abs(x.real()), std::abs(x.imag())), &e);
        x = T(std::ldexp(x.real(), -e), std::ldexp(x.imag(), -e));
      } else {
        x = std::frexp(x, &e);
      }
      exponent += e;
      return x;
    };
    // det = product * 2^exponent.
    T product = odd ? T(-1) : T(1);
    for (std::int64_t i = 0; i < n; ++i) {
      const T pivot = lu[i + i * buffers_.a.ld];
      product = plain(product) && plain(pivot) ? product * pivot : mantissa(product) * mantissa(pivot);
    }
    if (a_.kind == LinalgOpKind::kDet) {
      T det = product;
      if (exponent != 0) scale_by_power(det, exponent);
      det += T(0);  // -0.0 (a zero pivot times the sign) reads +0.0, as numpy gives
      store_scalar(out_[0], index_, det);
      return ok_status();
    }
    // slogdet from the same product: one log (numpy takes one per pivot),
    // log|det| = log|product| + exponent ln 2.
    if (product == T(0)) {
      store_scalar(out_[0], index_, T(0));
      store_scalar(out_[1], index_, -std::numeric_limits<R>::infinity());
      return ok_status();
    }
    const R size = magnitude(product);
    store_scalar(out_[0], index_, product / size);
    store_scalar(out_[1], index_, std::log(size) + static_cast<R>(exponent) * std::numbers::ln2_v<R>);
    return ok_status();
  }

  R matrix_norm() const {
    const std::int64_t m = plan_.m, n = plan_.n;
    const T* x = data(buffers_.a);
    const std::int64_t ld = buffers_.a.ld;
    const auto* s = static_cast<const R*>(buffers_.values);
    switch (a_.norm) {
      case NormOrder::kOne:  // sum_norm()
      case NormOrder::kNegOne:
      case NormOrder::kInf:
      case NormOrder::kNegInf:
        break;
      case NormOrder::kTwo:
      case NormOrder::kNegTwo:
      case NormOrder::kNuclear: {
        // Singular values need finite input; otherwise answer like numpy's
        // propagation: NaN if any NaN, else Inf (NaN for the smallest).
        bool has_nan = false, has_inf = false;
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i) {
            const R v = magnitude(x[i + j * ld]);
            has_nan = has_nan || std::isnan(v);
            has_inf = has_inf || std::isinf(v);
          }
        if (has_nan || has_inf) {
          return has_nan || a_.norm == NormOrder::kNegTwo ? std::numeric_limits<R>::quiet_NaN()
                                                          : std::numeric_limits<R>::infinity();
        }
        if (a_.norm == NormOrder::kTwo) return s[0];
        if (a_.norm == NormOrder::kNegTwo) return s[k() - 1];
        R sum = 0;
        for (std::int64_t i = 0; i < k(); ++i) sum += s[i];
        return sum;
      }
      case NormOrder::kFrobenius:  // elementwise_norm()
      case NormOrder::kP:
        break;
    }
    return std::numeric_limits<R>::quiet_NaN();
  }

  // A matrix with no elements: results follow from the definitions.
  Status write_empty() {
    for (const TensorView& out : out_) {
      std::int64_t per = 1;  // elements of one batch element: the non-batch extents
      for (std::size_t i = plan_.batch_shape.size(); i < out.shape.size(); ++i) per *= out.shape[i];
      std::byte* dst =
          static_cast<std::byte*>(out.data) + index_ * per * static_cast<std::int64_t>(dtype_size(out.dtype));
      std::fill(dst, dst + per * static_cast<std::int64_t>(dtype_size(out.dtype)), std::byte{0});
    }
    const auto identity = [&](const TensorView& out, std::int64_t size) {
      T* d = out.data_as<T>() + index_ * size * size;
      for (std::int64_t i = 0; i < size; ++i) d[i * size + i] = T(1);
    };
    switch (a_.kind) {
      case LinalgOpKind::kSvd:
        if (a_.svd_mode == SvdMode::kFull) {
          identity(out_[0], plan_.m);
          identity(out_[2], plan_.n);
        }
        break;
      case LinalgOpKind::kQr:
        if (a_.qr_mode == QrMode::kComplete) identity(out_[0], plan_.m);
        break;
      case LinalgOpKind::kLu: {
        std::int64_t* perm = out_[2].data_as<std::int64_t>() + index_ * plan_.m;
        for (std::int64_t i = 0; i < plan_.m; ++i) perm[i] = i;
        break;
      }
      case LinalgOpKind::kDet:
      case LinalgOpKind::kSlogdet:
        store_scalar(out_[0], index_, T(1));
        break;
      default:
        break;
    }
    return ok_status();
  }

  const LinalgPlan& plan_;
  const LinalgAttributes& a_;
  std::span<const TensorView> in_;
  std::span<const TensorView> out_;
  std::int64_t index_;
  std::byte* base_;
  LinalgBuffers buffers_;
  int exponent_ = 0;  // Note [Eig scaling]: eig's operand was scaled by 2^-exponent_
  std::span<std::byte> workspace_;
};

}  // namespace

// One long vector's norm split over the context's threads (numpy's
// OpenBLAS dot runs its 2-norm on every core): each chunk folds its part,
// the partial sums or extremes combine, and a 2-norm whose sum left the
// normal range is computed again sequentially, rescaled.
template <class T>
bool split_norm(const LinalgPlan& plan, const TensorView& src, const TensorView& out,
                const cpu::ParallelContext& parallel) {
  using R = RealOf<T>;
  const ElementwiseNorm<T> whole = elementwise_operand<T>(plan, src, 0);
  const NormFold fold = fold_of(plan.attributes.norm, plan.attributes.p);
  if (!whole.one_run() || fold == NormFold::kNonZeros || fold == NormFold::kPowers) return false;
  constexpr std::int64_t kMaxChunks = 64;
  const Run<T> run = whole.run();
  const std::int64_t chunks = std::min<std::int64_t>(kMaxChunks, 4 * parallel.max_threads());
  const std::int64_t per = (run.n + chunks - 1) / chunks;
  std::array<R, kMaxChunks> partials{};
  parallel.parallel_for(0, chunks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t c = b; c < e; ++c) {
      const std::int64_t first = c * per, count = std::max<std::int64_t>(0, std::min(per, run.n - first));
      partials[static_cast<std::size_t>(c)] =
          count == 0 ? (fold == NormFold::kSmallest ? std::numeric_limits<R>::infinity() : R(0))
                     : ElementwiseNorm<T>(run.x + first * run.stride, 1, count, 0, run.stride).partial(fold);
    }
  });
  R value = fold == NormFold::kSmallest ? std::numeric_limits<R>::infinity() : R(0);
  for (std::int64_t c = 0; c < chunks; ++c) {
    const R part = partials[static_cast<std::size_t>(c)];
    value = fold == NormFold::kLargest    ? further<true>(value, part)
            : fold == NormFold::kSmallest ? further<false>(value, part)
                                          : value + part;
  }
  if (fold == NormFold::kSquares) value = whole.finish_two_norm(value);
  out.data_as<R>()[0] = value;
  return true;
}

bool split_norm(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                const cpu::ParallelContext& parallel) {
  if (!is_elementwise_norm(plan.attributes) || plan.batch != 1 || parallel.max_threads() < 2 ||
      plan.m * plan.n * static_cast<std::int64_t>(dtype_size(plan.dtype)) < kSplitNormMinBytes) {
    return false;
  }
  switch (plan.dtype) {
    case DType::kFloat32:
      return split_norm<float>(plan, inputs[0], outputs[0], parallel);
    case DType::kFloat64:
      return split_norm<double>(plan, inputs[0], outputs[0], parallel);
    case DType::kComplex64:
      return split_norm<std::complex<float>>(plan, inputs[0], outputs[0], parallel);
    default:
      return split_norm<std::complex<double>>(plan, inputs[0], outputs[0], parallel);
  }
}

bool norms_across_batch(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                        std::int64_t begin, std::int64_t end) {
  const TensorView& src = inputs[0];
  const std::size_t rank = src.shape.size();
  if (plan.attributes.kind != LinalgOpKind::kVectorNorm || rank < 2 || plan.n == 0 || src.strides[rank - 2] != 1 ||
      src.shape[rank - 2] < 2 || src.strides[rank - 1] == 1) {
    return false;
  }
  switch (plan.dtype) {
    case DType::kFloat32:
      norms_across<float>(plan, src, outputs[0], begin, end);
      break;
    case DType::kFloat64:
      norms_across<double>(plan, src, outputs[0], begin, end);
      break;
    case DType::kComplex64:
      norms_across<std::complex<float>>(plan, src, outputs[0], begin, end);
      break;
    default:
      norms_across<std::complex<double>>(plan, src, outputs[0], begin, end);
      break;
  }
  return true;
}

Status process_matrix(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                      std::int64_t index, std::span<std::byte> scratch) {
  switch (plan.dtype) {
    case DType::kFloat32:
      return MatrixProcessor<float>(plan, inputs, outputs, index, scratch).run();
    case DType::kFloat64:
      return MatrixProcessor<double>(plan, inputs, outputs, index, scratch).run();
    case DType::kComplex64:
      return MatrixProcessor<std::complex<float>>(plan, inputs, outputs, index, scratch).run();
    default:
      return MatrixProcessor<std::complex<double>>(plan, inputs, outputs, index, scratch).run();
  }
}

}  // namespace tenferro::linalg::internal
