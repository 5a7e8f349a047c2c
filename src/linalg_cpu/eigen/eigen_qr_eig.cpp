// Eigen kernels: qr (HouseholderQR), eigh (SelfAdjointEigenSolver), eig
// (EigenSolver for real, ComplexEigenSolver for complex matrices).
#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include "linalg_cpu/eigen/eigen_maps.h"

namespace tenferro::linalg::internal {

namespace {

Status check(Eigen::ComputationInfo info, LinalgOpKind op) {
  return info == Eigen::Success ? ok_status()
                                : Status(no_convergence_error(op, kEigenProviderName, static_cast<std::int64_t>(info)));
}

}  // namespace

template <class T>
Status eigen_qr(const LinalgProblem& p, const LinalgBuffers& b) {
  Eigen::HouseholderQR<EigenMatrix<T>> qr(map<T>(b.a, p.m, p.n));
  const std::int64_t k = std::min(p.m, p.n);
  map<T>(b.v) = qr.matrixQR().topRows(b.v.rows).template triangularView<Eigen::Upper>();
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
