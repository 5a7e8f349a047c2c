// process_matrix: one batch element of a linalg plan. Gathers the strided
// inputs into column-major scratch (rejecting NaN/Inf where the operation
// does), calls the provider, applies the gauge convention (Note [Linalg
// gauge convention] in docs/linalg.md), composes det/slogdet/norms, and
// writes the row-major outputs. One dtype switch per matrix; the loops are
// typed.
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
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

template <class T>
RealOf<T> magnitude(T x) noexcept {
  return std::abs(x);
}

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
// most 16 KB takes the plain loop: copy_into's validation and loop set-up
// cost more than the copy there (64 stacked 4 x 4 inverses ran 2.4x slower
// than numpy through it).
template <class T>
Status copy_matrix(const T* src, std::int64_t rs_src, std::int64_t cs_src, T* dst, std::int64_t rs_dst,
                   std::int64_t cs_dst, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t kLoopMaxBytes = 16 * 1024;
  if (rows * cols * static_cast<std::int64_t>(sizeof(T)) <= kLoopMaxBytes) {
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) dst[i * rs_dst + j * cs_dst] = src[i * rs_src + j * cs_src];
    return ok_status();
  }
  const std::int64_t shape[2] = {rows, cols};
  const std::int64_t from[2] = {rs_src, cs_src};
  const std::int64_t to[2] = {rs_dst, cs_dst};
  const cpu::SequentialContext sequential;
  return cpu::copy_into(TensorView{const_cast<T*>(src), shape, from, dtype_of<T>},
                        TensorView{dst, shape, to, dtype_of<T>}, sequential);
}

// Whether every element of the column-major `m` is finite: a test of the
// exponent bits, which vectorises (a NaN or Inf has all of them set).
template <class T>
bool all_finite(const MatrixBuffer& m) {
  using R = RealOf<T>;
  using Bits = std::conditional_t<sizeof(R) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(R) == 4 ? 0x7f800000u : 0x7ff0000000000000u);
  constexpr std::int64_t kReals = kIsComplex<T> ? 2 : 1;
  Bits bad = 0;
  for (std::int64_t j = 0; j < m.cols; ++j) {
    const R* column = reinterpret_cast<const R*>(static_cast<const T*>(m.data) + j * m.ld);
    for (std::int64_t i = 0; i < m.rows * kReals; ++i) {
      bad |= static_cast<Bits>((std::bit_cast<Bits>(column[i]) & kExponent) == kExponent);
    }
  }
  return bad == 0;
}

// Copies matrix `index` of `src` (its last two axes; for a vector operand its
// last axis as one row) into the column-major `dst`; `finite` tells whether
// every element is finite.
template <class T>
Status gather(const TensorView& src, const LinalgPlan& plan, std::int64_t index, const MatrixBuffer& dst,
              bool& finite) {
  const std::size_t rank = src.shape.size();
  const std::int64_t cs = src.strides[rank - 1];
  const std::int64_t rs = dst.rows > 1 || rank >= 2 ? src.strides[rank >= 2 ? rank - 2 : 0] : 0;
  const T* base = src.data_as<const T>() + batch_offset(src, plan.batch_shape, index);
  TENFERRO_TRY(copy_matrix(base, rs, cs, static_cast<T*>(dst.data), 1, dst.ld, dst.rows, dst.cols));
  finite = all_finite<T>(dst);
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

// Index of the gauge pivot of x[0], x[stride], ... (-1 when all are zero).
template <class T>
std::int64_t gauge_pivot(const T* x, std::int64_t count, std::int64_t stride) {
  using R = RealOf<T>;
  R largest = 0;
  for (std::int64_t i = 0; i < count; ++i) largest = std::max(largest, magnitude(x[i * stride]));
  if (largest == R(0)) return -1;
  const R threshold = largest * static_cast<R>(1.0 - kGaugeTieTolerance);
  for (std::int64_t i = 0; i < count; ++i)
    if (magnitude(x[i * stride]) >= threshold) return i;
  return -1;
}

template <class T>
void scale(T* x, std::int64_t count, std::int64_t stride, T factor) {
  for (std::int64_t i = 0; i < count; ++i) x[i * stride] *= factor;
}

// Makes the gauge pivot of column j of `m` real positive; returns the phase
// removed (1 when the column is zero).
template <class T>
T normalize_column(const MatrixBuffer& m, std::int64_t j) {
  T* col = static_cast<T*>(m.data) + j * m.ld;
  const std::int64_t p = gauge_pivot(col, m.rows, 1);
  if (p < 0) return T(1);
  const T phase = unit_phase(col[p]);
  scale(col, m.rows, 1, conj_of(phase));
  return phase;
}

// Makes the gauge pivot of the contiguous row `row` real positive.
template <class T>
void normalize_row(T* row, std::int64_t count) {
  const std::int64_t p = gauge_pivot(row, count, 1);
  if (p < 0) return;
  scale(row, count, 1, conj_of(unit_phase(row[p])));
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
    const bool check = rejects_non_finite(a_.kind);
    bool finite_a = true;
    TENFERRO_TRY(gather<T>(in_[0], plan_, index_, buffers_.a, finite_a));
    if (check && !finite_a) return non_finite_error(a_.kind, 0);
    if (in_.size() > 1) {
      // lstsq: B occupies the first m rows of a max(m, n)-row buffer.
      MatrixBuffer rhs = buffers_.b;
      rhs.rows = plan_.m;
      bool finite_b = true;
      TENFERRO_TRY(gather<T>(in_[1], plan_, index_, rhs, finite_b));
      if (check && !finite_b) return non_finite_error(a_.kind, 1);
    }
    if (plan_.m == 0 || plan_.n == 0) return write_empty();
    // A spectral norm of a non-finite matrix never reaches the provider
    // (matrix_norm() answers it).
    if (plan_.provider != nullptr && finite_a) {
      TENFERRO_TRY(plan_.provider->run(plan_.problem(), plan_.kernel, buffers_, workspace_));
    }
    return finish();
  }

 private:
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
          scale(r_out + i * r.cols, r.cols, 1, conj_of(phase));
          scale(data(q) + i * q.ld, q.rows, 1, phase);
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
      case LinalgOpKind::kCholesky:
      case LinalgOpKind::kInv:
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
      case LinalgOpKind::kLstsq:
        return store_matrix(out_[0], index_, data(buffers_.b), n, plan_.nrhs, buffers_.b.ld);
      case LinalgOpKind::kPinv:
        return store_matrix(out_[0], index_, data(buffers_.v), n, m, buffers_.v.ld);
      case LinalgOpKind::kDet:
      case LinalgOpKind::kSlogdet:
        return finish_determinant();
      case LinalgOpKind::kMatrixNorm:
        store_scalar(out_[0], index_, matrix_norm());
        return ok_status();
      case LinalgOpKind::kVectorNorm:
        store_scalar(out_[0], index_, vector_norm());
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
      if (j < k()) scale(vh_out + j * vh.cols, vh.cols, 1, phase);
    }
    for (std::int64_t i = k(); i < vh.rows; ++i) normalize_row<T>(vh_out + i * vh.cols, vh.cols);
    TENFERRO_TRY(store_matrix(out_[0], index_, data(u), u.rows, u.cols, u.ld));
    store_vector(out_[1], index_, s, k());
    return ok_status();
  }

  Status finish_eig() {
    const std::int64_t n = plan_.n;
    auto* w = static_cast<C*>(buffers_.values);
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
      if (norm2 > R(0)) scale(vd + j * v.ld, n, 1, C(R(1) / std::sqrt(norm2)));
      normalize_column<C>(v, j);
    }
    return store_matrix(out_[1], index_, vd, n, n, v.ld, order);
  }

  Status finish_determinant() {
    const std::int64_t n = plan_.n;
    const T* lu = data(buffers_.a);
    bool odd = false;
    for (std::int64_t i = 0; i < n; ++i) odd = odd != (buffers_.pivots[i] != i);
    if (a_.kind == LinalgOpKind::kDet) {
      T det = odd ? T(-1) : T(1);
      for (std::int64_t i = 0; i < n; ++i) det *= lu[i + i * buffers_.a.ld];
      det += T(0);  // -0.0 (a zero pivot times the sign) reads +0.0, as numpy gives
      store_scalar(out_[0], index_, det);
      return ok_status();
    }
    T sign = odd ? T(-1) : T(1);
    R log_abs = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T d = lu[i + i * buffers_.a.ld];
      if (d == T(0)) {
        sign = T(0);
        log_abs = -std::numeric_limits<R>::infinity();
        break;
      }
      sign *= unit_phase(d);
      log_abs += std::log(magnitude(d));
    }
    store_scalar(out_[0], index_, sign);
    store_scalar(out_[1], index_, log_abs);
    return ok_status();
  }

  R matrix_norm() const {
    const std::int64_t m = plan_.m, n = plan_.n;
    const T* x = data(buffers_.a);
    const std::int64_t ld = buffers_.a.ld;
    const auto* s = static_cast<const R*>(buffers_.values);
    switch (a_.norm) {
      case NormOrder::kFrobenius: {
        R sum = 0;
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i) sum += magnitude(x[i + j * ld]) * magnitude(x[i + j * ld]);
        return std::sqrt(sum);
      }
      case NormOrder::kOne:
      case NormOrder::kNegOne: {
        R best = a_.norm == NormOrder::kOne ? R(0) : std::numeric_limits<R>::infinity();
        for (std::int64_t j = 0; j < n; ++j) {
          R col = 0;
          for (std::int64_t i = 0; i < m; ++i) col += magnitude(x[i + j * ld]);
          best = a_.norm == NormOrder::kOne ? std::max(best, col) : std::min(best, col);
        }
        return best;
      }
      case NormOrder::kInf:
      case NormOrder::kNegInf: {
        // Row sums accumulated column by column (the buffer is column-major).
        R* rows = static_cast<R*>(buffers_.values);
        std::fill(rows, rows + m, R(0));
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i) rows[i] += magnitude(x[i + j * ld]);
        R best = a_.norm == NormOrder::kInf ? R(0) : std::numeric_limits<R>::infinity();
        for (std::int64_t i = 0; i < m; ++i)
          best = a_.norm == NormOrder::kInf ? std::max(best, rows[i]) : std::min(best, rows[i]);
        return best;
      }
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
      case NormOrder::kP:
        break;
    }
    return std::numeric_limits<R>::quiet_NaN();
  }

  R vector_norm() const {
    const std::int64_t n = plan_.n;
    const T* x = data(buffers_.a);
    switch (a_.norm) {
      case NormOrder::kInf:
      case NormOrder::kNegInf: {
        R best = a_.norm == NormOrder::kInf ? R(0) : std::numeric_limits<R>::infinity();
        for (std::int64_t i = 0; i < n; ++i) {
          const R v = magnitude(x[i]);
          if (std::isnan(v)) return v;
          best = a_.norm == NormOrder::kInf ? std::max(best, v) : std::min(best, v);
        }
        return best;
      }
      default:
        break;
    }
    const R p = static_cast<R>(a_.p);
    R sum = 0;
    if (p == R(0)) {
      for (std::int64_t i = 0; i < n; ++i) sum += x[i] != T(0) ? R(1) : R(0);
      return sum;
    }
    if (p == R(1)) {
      for (std::int64_t i = 0; i < n; ++i) sum += magnitude(x[i]);
      return sum;
    }
    if (p == R(2)) {
      for (std::int64_t i = 0; i < n; ++i) sum += magnitude(x[i]) * magnitude(x[i]);
      return std::sqrt(sum);
    }
    for (std::int64_t i = 0; i < n; ++i) sum += std::pow(magnitude(x[i]), p);
    return std::pow(sum, R(1) / p);
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
  std::span<std::byte> workspace_;
};

}  // namespace

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
