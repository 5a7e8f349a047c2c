// The LAPACK provider's kernels: plan() sizes every LAPACK workspace once
// (workspace queries at prepare time), run() carves the same layout out of
// the engine's workspace and calls LAPACKE *_work routines, which allocate
// nothing. Every extent passed to LAPACK was checked to fit lapack_int in
// plan(), so xerbla is never reached (Note [LAPACK provider isolation]).
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#include "linalg_cpu/lapack/lapack_symbols.h"
#include "linalg_cpu/lapack/small_kernels.h"
#include "linalg_cpu/workspace_layout.h"

namespace tenferro::linalg::internal {

namespace {

// A LAPACK workspace size reported as a floating value, rounded up with a
// safety margin (single precision cannot represent large sizes exactly).
template <class R>
std::int64_t size_from_query(R reported) noexcept {
  const double v = static_cast<double>(reported);
  return static_cast<std::int64_t>(std::ceil(v * (1.0 + 8.0 * std::numeric_limits<R>::epsilon()))) + 1;
}

bool fits(std::int64_t v) noexcept { return v >= 0 && v <= INT_MAX; }

template <class T>
class LapackKernels {
 public:
  using R = RealOf<T>;
  using I = lapack_int;

  LapackKernels(const LapackSymbols& symbols, std::string_view provider, const LinalgProblem& problem)
      : lapack_(symbols),
        provider_(provider),
        p_(problem),
        m_(static_cast<I>(problem.m)),
        n_(static_cast<I>(problem.n)),
        nrhs_(static_cast<I>(problem.nrhs)),
        k_(std::min(m_, n_)) {}

  Result<LinalgKernelPlan> plan() const {
    const std::int64_t big = std::max({p_.m, p_.n, p_.nrhs});
    // The largest matrix LAPACK indexes must stay inside lapack_int too.
    if (!fits(big) || !fits(std::max(p_.m, p_.n) * std::max<std::int64_t>({p_.m, p_.n, p_.nrhs, 1}))) {
      return unsupported_problem(provider_, p_, "extents exceed LAPACK's 32-bit lapack_int");
    }
    LinalgKernelPlan plan;
    switch (p_.kind()) {
      case LinalgOpKind::kSvd:
        TENFERRO_TRY(gram_norm() ? plan_syevd('N', k_, plan) : plan_svd(svd_job(), plan));
        break;
      case LinalgOpKind::kPinv:
        TENFERRO_TRY(plan_svd('S', plan));
        break;
      case LinalgOpKind::kQr:
        TENFERRO_TRY(plan_qr(plan));
        break;
      case LinalgOpKind::kEigh:
        TENFERRO_TRY(plan_syevd(vectors_job(), n_, plan));
        break;
      case LinalgOpKind::kEig:
        TENFERRO_TRY(plan_eig(plan));
        break;
      case LinalgOpKind::kInv:
        TENFERRO_TRY(plan_inverse(plan));
        break;
      case LinalgOpKind::kLstsq:
        TENFERRO_TRY(plan_lstsq(plan));
        break;
      case LinalgOpKind::kCholesky:
      case LinalgOpKind::kLu:
      case LinalgOpKind::kSolve:
      case LinalgOpKind::kTriangularSolve:
        break;
      default:
        return unsupported_problem(provider_, p_, "not a provider operation");
    }
    WorkspaceLayout layout;
    carve(plan, layout);
    plan.workspace_bytes = layout.bytes();
    plan.inline_kernel = (small_lu_problem() && (p_.kind() == LinalgOpKind::kLu || p_.kind() == LinalgOpKind::kSolve ||
                                                 p_.kind() == LinalgOpKind::kInv)) ||
                         (small_qr_problem() && p_.kind() == LinalgOpKind::kQr);
    return plan;
  }

  Status run(const LinalgKernelPlan& plan, const LinalgBuffers& b, std::span<std::byte> workspace) const {
    WorkspaceLayout layout(workspace);
    const Work w = carve(plan, layout);
    switch (p_.kind()) {
      case LinalgOpKind::kSvd:
        return gram_norm() ? run_gram_norm(plan, b, w) : run_svd(plan, b, w);
      case LinalgOpKind::kPinv:
        return run_pinv(plan, b, w);
      case LinalgOpKind::kQr:
        return run_qr(plan, b, w);
      case LinalgOpKind::kEigh:
        return run_eigh(plan, b, w);
      case LinalgOpKind::kEig:
        return run_eig(plan, b, w);
      case LinalgOpKind::kCholesky:
        return run_cholesky(b);
      case LinalgOpKind::kLu:
        return run_lu(b, w);
      case LinalgOpKind::kSolve:
        return run_solve(b, w);
      case LinalgOpKind::kTriangularSolve:
        return run_triangular_solve(b);
      case LinalgOpKind::kInv:
        return run_inverse(plan, b, w);
      case LinalgOpKind::kLstsq:
        return run_lstsq(plan, b, w);
      default:
        return unsupported_problem(provider_, p_, "not a provider operation");
    }
  }

 private:
  // Workspace arrays; sizes[0] = lwork, [1] = lrwork, [2] = liwork.
  struct Work {
    T* work = nullptr;
    R* rwork = nullptr;
    I* iwork = nullptr;
    T* tau = nullptr;     // qr
    R* real_a = nullptr;  // eig (real): wr, wi, vr
    R* wi = nullptr;
    T* vr = nullptr;
    R* s = nullptr;  // pinv
    T* u = nullptr;  // pinv
    T* vt = nullptr;
    T* gram = nullptr;  // the spectral norm (also s)
  };

  Work carve(const LinalgKernelPlan& plan, WorkspaceLayout& layout) const {
    Work w;
    const std::int64_t n = p_.n, k = std::min(p_.m, p_.n);
    switch (p_.kind()) {
      case LinalgOpKind::kSvd:
        if (gram_norm()) {
          w.gram = layout.take<T>(k * k);
          w.s = layout.take<R>(k);
        }
        break;
      case LinalgOpKind::kQr:
        w.tau = layout.take<T>(k);
        break;
      case LinalgOpKind::kEig:
        if constexpr (!kIsComplex<T>) {
          w.real_a = layout.take<R>(n);  // wr
          w.wi = layout.take<R>(n);
          w.vr = layout.take<T>(p_.attributes->compute_vectors ? n * n : 1);
        }
        break;
      case LinalgOpKind::kLu:
      case LinalgOpKind::kInv:
        w.iwork = layout.take<I>(k);
        break;
      case LinalgOpKind::kSolve:
        w.iwork = layout.take<I>(n);
        break;
      case LinalgOpKind::kPinv:
        w.s = layout.take<R>(k);
        w.u = layout.take<T>(p_.m * k);
        w.vt = layout.take<T>(k * p_.n);
        break;
      default:
        break;
    }
    if (plan.sizes[0] > 0) w.work = layout.take<T>(plan.sizes[0]);
    if (plan.sizes[1] > 0) w.rwork = layout.take<R>(plan.sizes[1]);
    if (plan.sizes[2] > 0) w.iwork = layout.take<I>(plan.sizes[2]);
    return w;
  }

  Status lapack_failure(I info) const { return no_convergence_error(p_.kind(), provider_, info); }
  static I ld(std::int64_t rows) noexcept { return static_cast<I>(std::max<std::int64_t>(1, rows)); }
  static I ld_of(const MatrixBuffer& m) noexcept { return static_cast<I>(m.ld); }
  static T* data(const MatrixBuffer& m) noexcept { return static_cast<T*>(m.data); }

  // --- svd (and the SVD inside pinv) -------------------------------------------
  char svd_job() const noexcept {
    switch (p_.attributes->svd_mode) {
      case SvdMode::kFull:
        return 'A';
      case SvdMode::kThin:
        return 'S';
      case SvdMode::kValuesOnly:
        break;
    }
    return 'N';
  }
  Status plan_svd(char job, LinalgKernelPlan& plan) const {
    T query{};
    T dummy{};
    R rdummy{};
    I idummy{};
    const I ucols = job == 'A' ? m_ : k_;
    const I vrows = job == 'A' ? n_ : k_;
    const I info = lapack_.gesdd(job, m_, n_, &dummy, ld(m_), &rdummy, &dummy, job == 'N' ? 1 : ld(m_), &dummy,
                                 job == 'N' ? 1 : ld(vrows), &query, -1, &rdummy, &idummy);
    (void)ucols;
    if (info != 0) return lapack_failure(info);
    const std::int64_t mn = k_, mx = std::max(m_, n_);
    plan.sizes[0] = size_from_query(std::real(query));
    plan.sizes[1] = !kIsComplex<T> ? 0
                    : job == 'N'   ? 7 * mn
                                   : std::max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
    plan.sizes[2] = 8 * mn;
    if (!fits(plan.sizes[0]) || !fits(plan.sizes[1])) {
      return unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int");
    }
    return ok_status();
  }
  Status run_svd(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    const char job = svd_job();
    T* u = job == 'N' ? w.work : data(b.u);
    T* vt = job == 'N' ? w.work : data(b.v);
    const I info =
        lapack_.gesdd(job, m_, n_, data(b.a), ld_of(b.a), static_cast<R*>(b.values), u, job == 'N' ? 1 : ld_of(b.u), vt,
                      job == 'N' ? 1 : ld_of(b.v), w.work, static_cast<I>(plan.sizes[0]), w.rwork, w.iwork);
    return info == 0 ? ok_status() : lapack_failure(info);
  }
  Status run_pinv(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    const I info = lapack_.gesdd('S', m_, n_, data(b.a), ld_of(b.a), w.s, w.u, ld(m_), w.vt, ld(k_), w.work,
                                 static_cast<I>(plan.sizes[0]), w.rwork, w.iwork);
    if (info != 0) return lapack_failure(info);
    // A⁺ = V diag(s⁺) Uᴴ = (diag(s⁺) Vᴴ)ᴴ Uᴴ: scale the rows of Vᴴ, then one GEMM.
    const R cutoff =
        static_cast<R>(relative_cutoff(p_.attributes->rcond, p_.dtype, p_.m, p_.n)) * (k_ > 0 ? w.s[0] : R(0));
    for (I l = 0; l < k_; ++l) {
      const R inv = w.s[l] > cutoff ? R(1) / w.s[l] : R(0);
      for (I j = 0; j < n_; ++j) w.vt[l + static_cast<std::int64_t>(j) * ld(k_)] *= inv;
    }
    lapack_.gemm_adjoint_adjoint(n_, m_, k_, w.vt, ld(k_), w.u, ld(m_), data(b.v), ld_of(b.v));
    return ok_status();
  }

  // --- qr ---------------------------------------------------------------------------
  I q_cols() const noexcept { return p_.attributes->qr_mode == QrMode::kComplete ? m_ : k_; }
  Status plan_qr(LinalgKernelPlan& plan) const {
    T q1{}, q2{}, dummy{};
    I info = lapack_.geqrf(m_, n_, &dummy, ld(m_), &dummy, &q1, -1);
    if (info != 0) return lapack_failure(info);
    info = lapack_.orgqr(m_, q_cols(), k_, &dummy, ld(m_), &dummy, &q2, -1);
    if (info != 0) return lapack_failure(info);
    plan.sizes[0] = std::max(size_from_query(std::real(q1)), size_from_query(std::real(q2)));
    return fits(plan.sizes[0]) ? ok_status()
                               : Status(unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int"));
  }
  // Note [Small QR]: small QRs run geqr2 and org2r inline.
  bool small_qr_problem() const noexcept { return std::max(p_.m, p_.n) <= small_qr_max(kIsComplex<T>); }
  Status run_qr(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    T* a = data(b.a);
    const std::int64_t lda = b.a.ld;
    const bool small = small_qr_problem();
    I info = 0;
    if (small) {
      small_qr(p_.m, p_.n, a, lda, w.tau);
    } else {
      info = lapack_.geqrf(m_, n_, a, ld_of(b.a), w.tau, w.work, static_cast<I>(plan.sizes[0]));
    }
    if (info != 0) return lapack_failure(info);
    // R: the upper trapezoid of the first rows of a.
    T* r = data(b.v);
    for (std::int64_t j = 0; j < b.v.cols; ++j)
      for (std::int64_t i = 0; i < b.v.rows; ++i) r[i + j * b.v.ld] = i <= j && i < k_ ? a[i + j * lda] : T(0);
    // Q: the reflectors (first k columns of a) expanded in place.
    T* q = data(b.u);
    const I qc = q_cols();
    for (std::int64_t j = 0; j < qc; ++j)
      for (std::int64_t i = 0; i < m_; ++i) q[i + j * b.u.ld] = j < k_ ? a[i + j * lda] : T(0);
    if (small) {
      small_qr_q(p_.m, qc, k_, q, b.u.ld, w.tau);
      return ok_status();
    }
    info = lapack_.orgqr(m_, qc, k_, q, ld_of(b.u), w.tau, w.work, static_cast<I>(plan.sizes[0]));
    return info == 0 ? ok_status() : lapack_failure(info);
  }

  // --- the spectral norm -------------------------------------------------------------
  // Note [Spectral norm from the Gram matrix]
  // matrix_norm(2) reads only σ_max (LinalgProblem::largest_value_only). For
  // float64 and complex128 it is computed as Eigen's operatorNorm() does:
  // σ_max = sqrt(λ_max(G)) with G = AᴴA (or AAᴴ when m < n: k x k, k =
  // min(m, n)), formed by one ?syrk/?herk (k²·max(m, n) multiply-adds, half
  // a GEMM) and reduced by ?syevd without vectors (tridiagonal values
  // only), instead of gesdd's bidiagonalisation: at n = 1024 float64
  // 0.088 s against numpy's 0.179 s (docs/linalg.md). Accuracy: λ_max has
  // absolute error O(eps·‖G‖) = O(eps·σ_max²), so σ_max keeps a relative
  // error of O(eps); forming G adds at most O(max(m, n)·eps) relative, the
  // same order as the SVD's backward error.
  // A is first scaled by a power of two (exact) that brings its largest
  // component into [0.5, 1), so G neither overflows nor loses σ_max to
  // underflow. float32 and complex64 keep the SVD: their Gram matrix would
  // lose too many of float's 24 bits.
  bool gram_norm() const noexcept {
    return p_.largest_value_only && p_.attributes->svd_mode == SvdMode::kValuesOnly && std::is_same_v<R, double>;
  }
  Status run_gram_norm(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    T* a = data(b.a);
    const std::int64_t lda = b.a.ld;
    constexpr std::int64_t kReals = kIsComplex<T> ? 2 : 1;  // components per element
    R largest = 0;
    for (std::int64_t j = 0; j < p_.n; ++j) {
      const R* column = reinterpret_cast<const R*>(a + j * lda);
      for (std::int64_t i = 0; i < kReals * p_.m; ++i) largest = std::max(largest, std::abs(column[i]));
    }
    auto* s = static_cast<R*>(b.values);
    if (largest == R(0)) {
      s[0] = 0;
      return ok_status();
    }
    const int exponent = std::ilogb(largest) + 1;  // largest * 2^-exponent in [0.5, 1)
    const R factor = std::ldexp(R(1), -exponent);
    for (std::int64_t j = 0; j < p_.n; ++j)
      for (std::int64_t i = 0; i < p_.m; ++i) a[j * lda + i] *= factor;
    lapack_.gram_lower(/*adjoint_first=*/m_ >= n_, k_, std::max(m_, n_), a, ld_of(b.a), w.gram, ld(k_));
    const I info = lapack_.syevd('N', 'L', k_, w.gram, ld(k_), w.s, w.work, static_cast<I>(plan.sizes[0]), w.rwork,
                                 static_cast<I>(plan.sizes[1]), w.iwork, static_cast<I>(plan.sizes[2]));
    if (info != 0) return lapack_failure(info);
    s[0] = std::ldexp(std::sqrt(std::max(w.s[k_ - 1], R(0))), exponent);  // ascending eigenvalues
    return ok_status();
  }

  // --- eigh -------------------------------------------------------------------------
  char vectors_job() const noexcept { return p_.attributes->compute_vectors ? 'V' : 'N'; }
  Status plan_syevd(char job, I n, LinalgKernelPlan& plan) const {
    T query{}, dummy{};
    R rquery{}, rdummy{};
    I iquery{};
    const I info = lapack_.syevd(job, 'L', n, &dummy, ld(n), &rdummy, &query, -1, &rquery, -1, &iquery, -1);
    if (info != 0) return lapack_failure(info);
    plan.sizes[0] = size_from_query(std::real(query));
    plan.sizes[1] = kIsComplex<T> ? size_from_query(rquery) : 0;
    plan.sizes[2] = std::max<std::int64_t>(iquery, 1);
    return fits(plan.sizes[0]) && fits(plan.sizes[1])
               ? ok_status()
               : Status(unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int"));
  }
  Status run_eigh(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    const I info = lapack_.syevd(vectors_job(), 'L', n_, data(b.a), ld_of(b.a), static_cast<R*>(b.values), w.work,
                                 static_cast<I>(plan.sizes[0]), w.rwork, static_cast<I>(plan.sizes[1]), w.iwork,
                                 static_cast<I>(plan.sizes[2]));
    return info == 0 ? ok_status() : lapack_failure(info);
  }

  // --- eig --------------------------------------------------------------------------
  Status plan_eig(LinalgKernelPlan& plan) const {
    T query{}, dummy{};
    I info = 0;
    if constexpr (kIsComplex<T>) {
      R rdummy{};
      info = lapack_.geev_complex(vectors_job(), n_, &dummy, ld(n_), &dummy, &dummy, ld(n_), &query, -1, &rdummy);
      plan.sizes[1] = 2 * static_cast<std::int64_t>(n_);
    } else {
      R rdummy{};
      info = lapack_.geev_real(vectors_job(), n_, &dummy, ld(n_), &rdummy, &rdummy, &dummy, ld(n_), &query, -1);
    }
    if (info != 0) return lapack_failure(info);
    plan.sizes[0] = size_from_query(std::real(query));
    return fits(plan.sizes[0]) ? ok_status()
                               : Status(unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int"));
  }
  Status run_eig(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    using C = std::complex<R>;
    const bool vectors = p_.attributes->compute_vectors;
    auto* values = static_cast<C*>(b.values);
    if constexpr (kIsComplex<T>) {
      T* vr = vectors ? data(b.u) : w.work;
      const I info = lapack_.geev_complex(vectors_job(), n_, data(b.a), ld_of(b.a), values, vr,
                                          vectors ? ld_of(b.u) : 1, w.work, static_cast<I>(plan.sizes[0]), w.rwork);
      return info == 0 ? ok_status() : lapack_failure(info);
    } else {
      const I info = lapack_.geev_real(vectors_job(), n_, data(b.a), ld_of(b.a), w.real_a, w.wi, w.vr,
                                       vectors ? ld(n_) : 1, w.work, static_cast<I>(plan.sizes[0]));
      if (info != 0) return lapack_failure(info);
      for (I j = 0; j < n_; ++j) values[j] = C(w.real_a[j], w.wi[j]);
      if (!vectors) return ok_status();
      // Complex-conjugate pairs come as (re, im) column pairs.
      auto* v = static_cast<C*>(b.u.data);
      const std::int64_t ldv = b.u.ld, ldr = ld(n_);
      for (I j = 0; j < n_; ++j) {
        if (w.wi[j] == R(0)) {
          for (I i = 0; i < n_; ++i) v[i + j * ldv] = C(w.vr[i + j * ldr], R(0));
        } else if (j + 1 < n_) {
          for (I i = 0; i < n_; ++i) {
            const C x(w.vr[i + j * ldr], w.vr[i + (j + 1) * ldr]);
            v[i + j * ldv] = x;
            v[i + (j + 1) * ldv] = std::conj(x);
          }
          ++j;
        }
      }
      return ok_status();
    }
  }

  // --- factorizations and solvers -------------------------------------------------
  Status run_cholesky(const LinalgBuffers& b) const {
    T* a = data(b.a);
    const I info = lapack_.potrf('L', n_, a, ld_of(b.a));
    if (info > 0) return not_positive_definite_error(info);
    if (info < 0) return lapack_failure(info);
    for (std::int64_t j = 1; j < n_; ++j)
      for (std::int64_t i = 0; i < j; ++i) a[i + j * b.a.ld] = T(0);
    return ok_status();
  }
  // Note [Small LU]: small lu, solve and inverse run getf2's elimination inline.
  bool small_lu_problem() const noexcept {
    return std::max(p_.m, p_.n) <= kSmallLuMax &&
           (p_.kind() != LinalgOpKind::kInv ||
            p_.n * p_.n * static_cast<std::int64_t>(sizeof(T)) <= kSmallInverseBytes);
  }
  Status run_lu(const LinalgBuffers& b, const Work& w) const {
    if (small_lu_problem()) {
      (void)small_lu(p_.m, p_.n, data(b.a), b.a.ld, b.pivots);  // a zero pivot is a valid factorization
      return ok_status();
    }
    const I info = lapack_.getrf(m_, n_, data(b.a), ld_of(b.a), w.iwork);
    if (info < 0) return lapack_failure(info);
    for (I i = 0; i < k_; ++i) b.pivots[i] = static_cast<std::int64_t>(w.iwork[i]) - 1;  // info > 0: U singular, fine
    return ok_status();
  }
  Status run_solve(const LinalgBuffers& b, const Work& w) const {
    if (small_lu_problem()) {
      if (const std::int64_t zero = small_lu(p_.n, p_.n, data(b.a), b.a.ld, w.iwork); zero > 0) {
        return singular_matrix_error(p_.kind(), zero);
      }
      small_lu_solve(p_.n, p_.nrhs, data(b.a), b.a.ld, w.iwork, data(b.b), b.b.ld);
      return ok_status();
    }
    const I info = lapack_.gesv(n_, nrhs_, data(b.a), ld_of(b.a), w.iwork, data(b.b), ld_of(b.b));
    if (info > 0) return singular_matrix_error(p_.kind(), info);
    return info == 0 ? ok_status() : lapack_failure(info);
  }
  Status run_triangular_solve(const LinalgBuffers& b) const {
    const LinalgAttributes& a = *p_.attributes;
    const char trans = a.transpose == TriangularTranspose::kNone        ? 'N'
                       : a.transpose == TriangularTranspose::kTranspose ? 'T'
                       : kIsComplex<T>                                  ? 'C'
                                                                        : 'T';
    const I info = lapack_.trtrs(a.lower ? 'L' : 'U', trans, a.unit_diagonal ? 'U' : 'N', n_, nrhs_, data(b.a),
                                 ld_of(b.a), data(b.b), ld_of(b.b));
    if (info > 0) return singular_matrix_error(p_.kind(), info);
    return info == 0 ? ok_status() : lapack_failure(info);
  }
  Status plan_inverse(LinalgKernelPlan& plan) const {
    T query{}, dummy{};
    I idummy{};
    const I info = lapack_.getri(n_, &dummy, ld(n_), &idummy, &query, -1);
    if (info != 0) return lapack_failure(info);
    plan.sizes[0] = size_from_query(std::real(query));
    if (small_lu_problem()) plan.sizes[0] = std::max<std::int64_t>(plan.sizes[0], p_.n * p_.n);  // small_lu_inverse
    return fits(plan.sizes[0]) ? ok_status()
                               : Status(unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int"));
  }
  Status run_inverse(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    if (small_lu_problem()) {
      T* a = data(b.a);
      if (const std::int64_t zero = small_lu(n_, n_, a, b.a.ld, w.iwork); zero > 0) {
        return singular_matrix_error(p_.kind(), zero);
      }
      small_lu_inverse(p_.n, a, b.a.ld, w.iwork, w.work);
      return ok_status();
    }
    // w.iwork holds the pivots (carved for kInv before the work arrays).
    I info = lapack_.getrf(n_, n_, data(b.a), ld_of(b.a), w.iwork);
    if (info > 0) return singular_matrix_error(p_.kind(), info);
    if (info < 0) return lapack_failure(info);
    info = lapack_.getri(n_, data(b.a), ld_of(b.a), w.iwork, w.work, static_cast<I>(plan.sizes[0]));
    if (info > 0) return singular_matrix_error(p_.kind(), info);
    return info == 0 ? ok_status() : lapack_failure(info);
  }
  // Note [Least squares without right-hand sides]: gelsd's divide and
  // conquer (xLALSD) rejects NRHS = 0 through xerbla, which no provider call
  // may reach (Note [LAPACK provider isolation]). With no columns in b the
  // solve runs on one zero column carved after the work array (the solution
  // has no columns to store; the singular values are the same).
  I lstsq_columns() const { return std::max<I>(nrhs_, 1); }
  std::int64_t lstsq_spare() const { return nrhs_ == 0 ? std::max<std::int64_t>(ld(std::max(m_, n_)), 1) : 0; }
  Status plan_lstsq(LinalgKernelPlan& plan) const {
    T query{}, dummy{};
    R rquery{}, rdummy{};
    I iquery{}, rank{};
    const I info = lapack_.gelsd(m_, n_, lstsq_columns(), &dummy, ld(m_), &dummy, ld(std::max(m_, n_)), &rdummy, R(-1),
                                 &rank, &query, -1, &rquery, &iquery);
    if (info != 0) return lapack_failure(info);
    plan.sizes[0] = size_from_query(std::real(query)) + lstsq_spare();
    plan.sizes[1] = kIsComplex<T> ? size_from_query(rquery) : 0;
    plan.sizes[2] = std::max<std::int64_t>(iquery, 1);
    return fits(plan.sizes[0]) && fits(plan.sizes[1])
               ? ok_status()
               : Status(unsupported_problem(provider_, p_, "the LAPACK workspace exceeds lapack_int"));
  }
  Status run_lstsq(const LinalgKernelPlan& plan, const LinalgBuffers& b, const Work& w) const {
    I rank = 0;
    const std::int64_t spare = lstsq_spare();
    const std::int64_t lwork = plan.sizes[0] - spare;
    T* rhs = data(b.b);
    I ldb = ld_of(b.b);
    if (spare > 0) {  // Note [Least squares without right-hand sides]
      rhs = w.work + lwork;
      std::fill(rhs, rhs + spare, T{});
      ldb = static_cast<I>(spare);
    }
    const I info = lapack_.gelsd(m_, n_, lstsq_columns(), data(b.a), ld_of(b.a), rhs, ldb, static_cast<R*>(b.values),
                                 static_cast<R>(relative_cutoff(p_.attributes->rcond, p_.dtype, p_.m, p_.n)), &rank,
                                 w.work, static_cast<I>(lwork), w.rwork, w.iwork);
    return info == 0 ? ok_status() : lapack_failure(info);
  }

  Lapack<T> lapack_;
  std::string_view provider_;
  const LinalgProblem& p_;
  I m_, n_, nrhs_, k_;
};

template <class F>
auto visit_linalg_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
    case DType::kComplex64:
      return f(std::complex<float>{});
    default:
      return f(std::complex<double>{});
  }
}

}  // namespace

const char* lapack_routine_name(LapackRoutine routine, bool complex) noexcept {
  switch (routine) {
    case kGesdd:
      return "gesdd";
    case kGeqrf:
      return "geqrf";
    case kOrgqr:
      return complex ? "ungqr" : "orgqr";
    case kSyevd:
      return complex ? "heevd" : "syevd";
    case kGeev:
      return "geev";
    case kPotrf:
      return "potrf";
    case kGetrf:
      return "getrf";
    case kGesv:
      return "gesv";
    case kTrtrs:
      return "trtrs";
    case kGetri:
      return "getri";
    case kGelsd:
      return "gelsd";
    case kGemm:
      return "gemm";
    case kSyrk:
      return complex ? "herk" : "syrk";
    case kNumLapackRoutines:
      break;
  }
  return "";
}

Result<LinalgKernelPlan> lapack_plan(const LapackSymbols& symbols, std::string_view provider,
                                     const LinalgProblem& problem) {
  if (!is_linalg_dtype(problem.dtype)) return unsupported_problem(provider, problem, "unsupported dtype");
  return visit_linalg_dtype(problem.dtype, [&]<class T>(T) -> Result<LinalgKernelPlan> {
    return LapackKernels<T>(symbols, provider, problem).plan();
  });
}

Status lapack_run(const LapackSymbols& symbols, std::string_view provider, const LinalgProblem& problem,
                  const LinalgKernelPlan& plan, const LinalgBuffers& buffers, std::span<std::byte> workspace) {
  return visit_linalg_dtype(problem.dtype, [&]<class T>(T) -> Status {
    return LapackKernels<T>(symbols, provider, problem).run(plan, buffers, workspace);
  });
}

}  // namespace tenferro::linalg::internal
