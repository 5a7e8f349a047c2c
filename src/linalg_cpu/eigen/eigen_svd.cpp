// Eigen kernels built on BDCSVD: svd, lstsq, pinv.
#include <Eigen/SVD>

#include "linalg_cpu/eigen/eigen_maps.h"

namespace tenferro::linalg::internal {

namespace {

template <class T>
Status svd_failure(const Eigen::BDCSVD<EigenMatrix<T>>& svd, LinalgOpKind op) {
  return svd.info() == Eigen::Success
             ? ok_status()
             : Status(no_convergence_error(op, kEigenProviderName, static_cast<std::int64_t>(svd.info())));
}

}  // namespace

template <class T>
Status eigen_svd(const LinalgProblem& p, const LinalgBuffers& b) {
  using R = EigenReal<T>;
  const SvdMode mode = p.attributes->svd_mode;
  const unsigned flags = mode == SvdMode::kFull   ? Eigen::ComputeFullU | Eigen::ComputeFullV
                         : mode == SvdMode::kThin ? Eigen::ComputeThinU | Eigen::ComputeThinV
                                                  : 0u;
  // flags == 0: Eigen computes the singular values only (no vectors).
  Eigen::BDCSVD<EigenMatrix<T>> svd(map<T>(b.a, p.m, p.n), flags);
  TENFERRO_TRY(svd_failure<T>(svd, p.kind()));
  const std::int64_t k = std::min(p.m, p.n);
  Eigen::Map<Eigen::Matrix<R, Eigen::Dynamic, 1>>(static_cast<R*>(b.values), k) = svd.singularValues().head(k);
  if (mode == SvdMode::kValuesOnly) return ok_status();
  map<T>(b.u) = svd.matrixU();
  map<T>(b.v) = svd.matrixV().adjoint();
  return ok_status();
}

template <class T>
Status eigen_lstsq(const LinalgProblem& p, const LinalgBuffers& b) {
  Eigen::BDCSVD<EigenMatrix<T>> svd(map<T>(b.a, p.m, p.n), Eigen::ComputeThinU | Eigen::ComputeThinV);
  TENFERRO_TRY(svd_failure<T>(svd, p.kind()));
  svd.setThreshold(static_cast<EigenReal<T>>(effective_rcond(p)));
  EigenMatrix<T> x = svd.solve(map<T>(b.b, p.m, p.nrhs));
  map<T>(b.b, p.n, p.nrhs) = x;
  return ok_status();
}

template <class T>
Status eigen_pinv(const LinalgProblem& p, const LinalgBuffers& b) {
  using R = EigenReal<T>;
  Eigen::BDCSVD<EigenMatrix<T>> svd(map<T>(b.a, p.m, p.n), Eigen::ComputeThinU | Eigen::ComputeThinV);
  TENFERRO_TRY(svd_failure<T>(svd, p.kind()));
  const auto& s = svd.singularValues();
  const R cutoff = static_cast<R>(effective_rcond(p)) * (s.size() > 0 ? s(0) : R(0));
  Eigen::Matrix<R, Eigen::Dynamic, 1> inverse = s.unaryExpr([cutoff](R x) { return x > cutoff ? R(1) / x : R(0); });
  map<T>(b.v, p.n, p.m).noalias() = svd.matrixV() * inverse.asDiagonal() * svd.matrixU().adjoint();
  return ok_status();
}

#define TENFERRO_INSTANTIATE(T)                                               \
  template Status eigen_svd<T>(const LinalgProblem&, const LinalgBuffers&);   \
  template Status eigen_lstsq<T>(const LinalgProblem&, const LinalgBuffers&); \
  template Status eigen_pinv<T>(const LinalgProblem&, const LinalgBuffers&);
TENFERRO_EIGEN_FOR_EACH_TYPE(TENFERRO_INSTANTIATE)
#undef TENFERRO_INSTANTIATE

}  // namespace tenferro::linalg::internal
