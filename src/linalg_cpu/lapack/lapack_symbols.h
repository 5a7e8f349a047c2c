// Internal: the LAPACKE and CBLAS entry points the LAPACK provider resolves
// in its module's dependency tree (Note [LAPACK provider isolation]), and
// typed call wrappers per element type. Signatures follow lapacke.h and
// cblas.h for the LP64 interface (lapack_int = int32, checked at load);
// std::complex<R>* is layout-compatible with C's R _Complex*.
#pragma once

#include <complex>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "tenferro/base/status.h"
#include "tenferro/linalg_cpu/linalg_provider.h"

namespace tenferro::linalg::internal {

using lapack_int = std::int32_t;
inline constexpr int kLapackColMajor = 102;  // LAPACK_COL_MAJOR
inline constexpr int kCblasColMajor = 102;   // CblasColMajor
inline constexpr int kCblasNoTrans = 111;    // CblasNoTrans
inline constexpr int kCblasTrans = 112;      // CblasTrans
inline constexpr int kCblasConjTrans = 113;  // CblasConjTrans
inline constexpr int kCblasLower = 122;      // CblasLower

enum LapackRoutine : int {
  kGesdd,
  kGeqrf,
  kOrgqr,  // ungqr for complex
  kSyevd,  // heevd for complex
  kGeev,
  kPotrf,
  kGetrf,
  kGesv,
  kTrtrs,
  kGetri,
  kGelsd,
  kGemm,  // cblas_?gemm
  kSyrk,  // cblas_?syrk, cblas_?herk for complex
  kNumLapackRoutines,
};

/// "gesdd" etc.: the LAPACK routine name for a real or complex element type.
const char* lapack_routine_name(LapackRoutine routine, bool complex) noexcept;

/// Resolved symbols: [routine][element type: s, d, c, z].
struct LapackSymbols {
  void* fn[kNumLapackRoutines][4] = {};
};

template <class T>
struct ElementTraits;
template <>
struct ElementTraits<float> {
  using Real = float;
  static constexpr int kIndex = 0;
  static constexpr bool kComplex = false;
};
template <>
struct ElementTraits<double> {
  using Real = double;
  static constexpr int kIndex = 1;
  static constexpr bool kComplex = false;
};
template <>
struct ElementTraits<std::complex<float>> {
  using Real = float;
  static constexpr int kIndex = 2;
  static constexpr bool kComplex = true;
};
template <>
struct ElementTraits<std::complex<double>> {
  using Real = double;
  static constexpr int kIndex = 3;
  static constexpr bool kComplex = true;
};
template <class T>
using RealOf = typename ElementTraits<T>::Real;
template <class T>
inline constexpr bool kIsComplex = ElementTraits<T>::kComplex;

/// Typed calls for element type T (R its real type). Each returns LAPACK's
/// info (gemm returns nothing).
template <class T>
class Lapack {
 public:
  using R = RealOf<T>;
  using I = lapack_int;
  explicit Lapack(const LapackSymbols& s) noexcept : s_(s) {}

  I gesdd(char jobz, I m, I n, T* a, I lda, R* s, T* u, I ldu, T* vt, I ldvt, T* work, I lwork, R* rwork,
          I* iwork) const {
    if constexpr (kIsComplex<T>) {
      return call<I (*)(int, char, I, I, T*, I, R*, T*, I, T*, I, T*, I, R*, I*)>(kGesdd)(
          kLapackColMajor, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork);
    } else {
      (void)rwork;
      return call<I (*)(int, char, I, I, T*, I, R*, T*, I, T*, I, T*, I, I*)>(kGesdd)(
          kLapackColMajor, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork);
    }
  }
  I geqrf(I m, I n, T* a, I lda, T* tau, T* work, I lwork) const {
    return call<I (*)(int, I, I, T*, I, T*, T*, I)>(kGeqrf)(kLapackColMajor, m, n, a, lda, tau, work, lwork);
  }
  I orgqr(I m, I n, I k, T* a, I lda, const T* tau, T* work, I lwork) const {
    return call<I (*)(int, I, I, I, T*, I, const T*, T*, I)>(kOrgqr)(kLapackColMajor, m, n, k, a, lda, tau, work,
                                                                     lwork);
  }
  I syevd(char jobz, char uplo, I n, T* a, I lda, R* w, T* work, I lwork, R* rwork, I lrwork, I* iwork,
          I liwork) const {
    if constexpr (kIsComplex<T>) {
      return call<I (*)(int, char, char, I, T*, I, R*, T*, I, R*, I, I*, I)>(kSyevd)(
          kLapackColMajor, jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork);
    } else {
      (void)rwork;
      (void)lrwork;
      return call<I (*)(int, char, char, I, T*, I, R*, T*, I, I*, I)>(kSyevd)(kLapackColMajor, jobz, uplo, n, a, lda, w,
                                                                              work, lwork, iwork, liwork);
    }
  }
  /// Real: wr/wi receive the eigenvalues. Complex: `w` (complex) does.
  I geev_real(char jobvr, I n, T* a, I lda, R* wr, R* wi, T* vr, I ldvr, T* work, I lwork) const
      requires(!kIsComplex<T>) {
    T vl_dummy{};
    return call<I (*)(int, char, char, I, T*, I, R*, R*, T*, I, T*, I, T*, I)>(kGeev)(
        kLapackColMajor, 'N', jobvr, n, a, lda, wr, wi, &vl_dummy, 1, vr, ldvr, work, lwork);
  }
  I geev_complex(char jobvr, I n, T* a, I lda, T* w, T* vr, I ldvr, T* work, I lwork, R* rwork) const
      requires(kIsComplex<T>) {
    T vl_dummy{};
    return call<I (*)(int, char, char, I, T*, I, T*, T*, I, T*, I, T*, I, R*)>(kGeev)(
        kLapackColMajor, 'N', jobvr, n, a, lda, w, &vl_dummy, 1, vr, ldvr, work, lwork, rwork);
  }
  I potrf(char uplo, I n, T* a, I lda) const {
    return call<I (*)(int, char, I, T*, I)>(kPotrf)(kLapackColMajor, uplo, n, a, lda);
  }
  I getrf(I m, I n, T* a, I lda, I* ipiv) const {
    return call<I (*)(int, I, I, T*, I, I*)>(kGetrf)(kLapackColMajor, m, n, a, lda, ipiv);
  }
  I gesv(I n, I nrhs, T* a, I lda, I* ipiv, T* b, I ldb) const {
    return call<I (*)(int, I, I, T*, I, I*, T*, I)>(kGesv)(kLapackColMajor, n, nrhs, a, lda, ipiv, b, ldb);
  }
  I trtrs(char uplo, char trans, char diag, I n, I nrhs, const T* a, I lda, T* b, I ldb) const {
    return call<I (*)(int, char, char, char, I, I, const T*, I, T*, I)>(kTrtrs)(kLapackColMajor, uplo, trans, diag, n,
                                                                                nrhs, a, lda, b, ldb);
  }
  I getri(I n, T* a, I lda, const I* ipiv, T* work, I lwork) const {
    return call<I (*)(int, I, T*, I, const I*, T*, I)>(kGetri)(kLapackColMajor, n, a, lda, ipiv, work, lwork);
  }
  I gelsd(I m, I n, I nrhs, T* a, I lda, T* b, I ldb, R* s, R rcond, I* rank, T* work, I lwork, R* rwork,
          I* iwork) const {
    if constexpr (kIsComplex<T>) {
      return call<I (*)(int, I, I, I, T*, I, T*, I, R*, R, I*, T*, I, R*, I*)>(kGelsd)(
          kLapackColMajor, m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork, rwork, iwork);
    } else {
      (void)rwork;
      return call<I (*)(int, I, I, I, T*, I, T*, I, R*, R, I*, T*, I, I*)>(kGelsd)(
          kLapackColMajor, m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork, iwork);
    }
  }
  /// C = op(A) op(B) with op = adjoint for both (transpose for real types).
  void gemm_adjoint_adjoint(I m, I n, I k, const T* a, I lda, const T* b, I ldb, T* c, I ldc) const {
    if constexpr (kIsComplex<T>) {
      const T one(1), zero(0);
      call<void (*)(int, int, int, I, I, I, const void*, const T*, I, const T*, I, const void*, T*, I)>(kGemm)(
          kCblasColMajor, kCblasConjTrans, kCblasConjTrans, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
    } else {
      call<void (*)(int, int, int, I, I, I, T, const T*, I, const T*, I, T, T*, I)>(kGemm)(
          kCblasColMajor, kCblasTrans, kCblasTrans, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc);
    }
  }
  /// The lower triangle of C = Aᴴ A (n x n, A is k x n; `adjoint_first`)
  /// or of C = A Aᴴ (n x n, A is n x k): cblas ?syrk / ?herk.
  void gram_lower(bool adjoint_first, I n, I k, const T* a, I lda, T* c, I ldc) const {
    const int trans = !adjoint_first ? kCblasNoTrans : kIsComplex<T> ? kCblasConjTrans : kCblasTrans;
    call<void (*)(int, int, int, I, I, R, const T*, I, R, T*, I)>(kSyrk)(kCblasColMajor, kCblasLower, trans, n, k, R(1),
                                                                         a, lda, R(0), c, ldc);
  }

 private:
  template <class Fn>
  Fn call(LapackRoutine r) const noexcept {
    return reinterpret_cast<Fn>(s_.fn[r][ElementTraits<T>::kIndex]);
  }
  const LapackSymbols& s_;
};

}  // namespace tenferro::linalg::internal

// --- the kernels (lapack_kernels.cpp) ------------------------------------------

namespace tenferro::linalg::internal {

/// plan() and run() of LapackLinalgProvider for every supported problem
/// (`provider` names it in errors).
Result<LinalgKernelPlan> lapack_plan(const LapackSymbols& symbols, std::string_view provider,
                                     const LinalgProblem& problem);
Status lapack_run(const LapackSymbols& symbols, std::string_view provider, const LinalgProblem& problem,
                  const LinalgKernelPlan& plan, const LinalgBuffers& buffers, std::span<std::byte> workspace);

}  // namespace tenferro::linalg::internal
