// Eigen kernels built on BDCSVD: svd, lstsq, pinv. lstsq and pinv share one
// thin SVD and one pseudo-inverse product, so BDCSVD and its products are
// instantiated once per type (Eigen's SVD is the most expensive header to
// compile; docs/CONTRIBUTING.md "Build time").
#include <Eigen/SVD>

#include "linalg_cpu/eigen/eigen_maps.h"

namespace tenferro::linalg::internal {

namespace {

template <class T>
using Svd = Eigen::BDCSVD<EigenMatrix<T>>;

template <class T>
Status svd_failure(const Svd<T>& svd, LinalgOpKind op) {
  return svd.info() == Eigen::Success
             ? ok_status()
             : Status(no_convergence_error(op, kEigenProviderName, static_cast<std::int64_t>(svd.info())));
}

// out := V_r S_r⁻¹ U_rᴴ rhs, where r counts the singular values above
// rcond * s_max (LAPACK gelsd's and numpy.linalg.pinv's rule). pinv passes
// the identity as rhs: an extra m·m·r product, small beside the SVD, bought
// for one instantiation of the products per type.
template <class T>
void apply_pseudo_inverse(const Svd<T>& svd, double rcond, const EigenMatrix<T>& rhs, EigenMap<T> out) {
  using R = EigenReal<T>;
  const auto& s = svd.singularValues();
  const R cutoff = static_cast<R>(rcond) * (s.size() > 0 ? s(0) : R(0));
  Eigen::Index rank = 0;
  while (rank < s.size() && s(rank) > cutoff) ++rank;
  EigenMatrix<T> projected = svd.matrixU().leftCols(rank).adjoint() * rhs;
  projected = s.head(rank).cwiseInverse().asDiagonal() * projected;
  out.noalias() = svd.matrixV().leftCols(rank) * projected;
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
  Svd<T> svd(map<T>(b.a, p.m, p.n), flags);
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
  Svd<T> svd(map<T>(b.a, p.m, p.n), Eigen::ComputeThinU | Eigen::ComputeThinV);
  TENFERRO_TRY(svd_failure<T>(svd, p.kind()));
  const EigenMatrix<T> rhs = map<T>(b.b, p.m, p.nrhs);
  apply_pseudo_inverse<T>(svd, effective_rcond(p), rhs, map<T>(b.b, p.n, p.nrhs));
  return ok_status();
}

template <class T>
Status eigen_pinv(const LinalgProblem& p, const LinalgBuffers& b) {
  Svd<T> svd(map<T>(b.a, p.m, p.n), Eigen::ComputeThinU | Eigen::ComputeThinV);
  TENFERRO_TRY(svd_failure<T>(svd, p.kind()));
  apply_pseudo_inverse<T>(svd, effective_rcond(p), EigenMatrix<T>::Identity(p.m, p.m), map<T>(b.v, p.n, p.m));
  return ok_status();
}

#define TENFERRO_INSTANTIATE(T)                                               \
  template Status eigen_svd<T>(const LinalgProblem&, const LinalgBuffers&);   \
  template Status eigen_lstsq<T>(const LinalgProblem&, const LinalgBuffers&); \
  template Status eigen_pinv<T>(const LinalgProblem&, const LinalgBuffers&);
TENFERRO_EIGEN_INSTANTIATE(TENFERRO_INSTANTIATE)
#undef TENFERRO_INSTANTIATE

}  // namespace tenferro::linalg::internal
