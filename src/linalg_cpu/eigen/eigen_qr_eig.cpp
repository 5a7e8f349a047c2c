// Eigen kernels: qr (HouseholderQR), eigh (SelfAdjointEigenSolver), eig
// (EigenSolver for real, ComplexEigenSolver for complex matrices).
#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include <algorithm>
#include <cmath>
#include <limits>

#include "linalg_cpu/eigen/eigen_maps.h"

namespace tenferro::linalg::internal {

namespace {

Status check(Eigen::ComputationInfo info, LinalgOpKind op) {
  return info == Eigen::Success ? ok_status()
                                : Status(no_convergence_error(op, kEigenProviderName, static_cast<std::int64_t>(info)));
}

}  // namespace

// Note [Eigen QR scaling]
// Eigen's HouseholderQR squares the entries unscaled: R was NaN for a
// matrix at 1e300 and a column at 1e-300 was taken as zero (its reflection
// skipped: Q R != A; the correctness audit of 2026-12-07). LAPACK's geqrf
// scales its norms. A matrix whose largest component lies outside
// [min^(1/4), max^(1/4)] is scaled by a power of two into [0.5, 1) (exact),
// and R scaled back; Q does not change. (Note [Eig scaling] in
// process_matrix.cpp does the same for eig.) The power is applied in two
// halves: 2^e alone is not finite for a subnormal largest component.
template <class T>
void scale_by_power(EigenMap<T>& a, int e) {
  using R = EigenReal<T>;
  a *= std::ldexp(R(1), e / 2);
  a *= std::ldexp(R(1), e - e / 2);
}

template <class T>
Status eigen_qr(const LinalgProblem& p, const LinalgBuffers& b) {
  using R = EigenReal<T>;
  EigenMap<T> a = map<T>(b.a, p.m, p.n);
  R largest = 0;
  if constexpr (Eigen::NumTraits<T>::IsComplex) {
    largest = std::max(a.real().cwiseAbs().maxCoeff(), a.imag().cwiseAbs().maxCoeff());
  } else {
    largest = a.cwiseAbs().maxCoeff();
  }
  const R high = std::sqrt(std::sqrt(std::numeric_limits<R>::max()));
  const R low = std::sqrt(std::sqrt(std::numeric_limits<R>::min()));
  int exponent = 0;
  if (largest != R(0) && (largest < low || largest > high)) {
    std::frexp(largest, &exponent);
    scale_by_power(a, -exponent);
  }
  Eigen::HouseholderQR<EigenMatrix<T>> qr(a);
  const std::int64_t k = std::min(p.m, p.n);
  EigenMap<T> r = map<T>(b.v);
  r = qr.matrixQR().topRows(b.v.rows).template triangularView<Eigen::Upper>();
  if (exponent != 0) scale_by_power(r, exponent);
  if (p.attributes->qr_mode == QrMode::kComplete) {
    map<T>(b.u) = qr.householderQ();
  } else {
    map<T>(b.u) = qr.householderQ() * EigenMatrix<T>::Identity(p.m, k);
  }
  return ok_status();
}

template <class T>
Status eigen_eigh(const LinalgProblem& p, const LinalgBuffers& b) {
  using R = EigenReal<T>;
  const bool vectors = p.attributes->compute_vectors;
  // Reads the lower triangle only.
  Eigen::SelfAdjointEigenSolver<EigenMatrix<T>> es(map<T>(b.a, p.n, p.n),
                                                   vectors ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
  TENFERRO_TRY(check(es.info(), p.kind()));
  Eigen::Map<Eigen::Matrix<R, Eigen::Dynamic, 1>>(static_cast<R*>(b.values), p.n) = es.eigenvalues();
  if (vectors) map<T>(b.a, p.n, p.n) = es.eigenvectors();
  return ok_status();
}

template <class T>
Status eigen_eig(const LinalgProblem& p, const LinalgBuffers& b) {
  using C = std::complex<EigenReal<T>>;
  const bool vectors = p.attributes->compute_vectors;
  auto values = Eigen::Map<Eigen::Matrix<C, Eigen::Dynamic, 1>>(static_cast<C*>(b.values), p.n);
  if constexpr (Eigen::NumTraits<T>::IsComplex) {
    Eigen::ComplexEigenSolver<EigenMatrix<T>> es(map<T>(b.a, p.n, p.n), vectors);
    TENFERRO_TRY(check(es.info(), p.kind()));
    values = es.eigenvalues();
    if (vectors) map<C>(b.u) = es.eigenvectors();
  } else {
    Eigen::EigenSolver<EigenMatrix<T>> es(map<T>(b.a, p.n, p.n), vectors);
    TENFERRO_TRY(check(es.info(), p.kind()));
    values = es.eigenvalues();
    if (vectors) map<C>(b.u) = es.eigenvectors();
  }
  return ok_status();
}

#define TENFERRO_INSTANTIATE(T)                                              \
  template Status eigen_qr<T>(const LinalgProblem&, const LinalgBuffers&);   \
  template Status eigen_eigh<T>(const LinalgProblem&, const LinalgBuffers&); \
  template Status eigen_eig<T>(const LinalgProblem&, const LinalgBuffers&);
TENFERRO_EIGEN_INSTANTIATE(TENFERRO_INSTANTIATE)
#undef TENFERRO_INSTANTIATE

}  // namespace tenferro::linalg::internal
