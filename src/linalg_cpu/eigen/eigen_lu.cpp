// Eigen kernels on its in-place blocked factorizations: cholesky (LLT),
// lu, solve and inverse (partial-pivoting LU), and triangular_solve.
//
// Note [Eigen in-place kernels]
// Eigen's public PartialPivLU is square-only and reports neither the first
// zero pivot nor a failing Cholesky minor, which LAPACK's info gives and our
// errors carry. Its own building blocks do: internal::partial_lu_impl::
// blocked_lu (rectangular, row transpositions like LAPACK's ipiv, returns the
// first exactly-zero pivot) and internal::llt_inplace::blocked (returns the
// failing column). Both are stable in Eigen 3.4 (PartialPivLU and LLT call
// them); the Eigen version is pinned by Debian 12.
#include <Eigen/Cholesky>
#include <Eigen/LU>

#include "linalg_cpu/eigen/eigen_maps.h"

namespace tenferro::linalg::internal {

namespace {

// LU of the m x n buffer in place; returns the first zero pivot or -1.
// blocked_lu updates only the first min(m, n) columns once it blocks (its
// trailing blocks are min(m, n) wide, Eigen 3.4; m = 20, n = 33 left the
// last 13 columns unfactored), so a wide matrix factors its left m x m
// block there and its other columns here: the row swaps, then L⁻¹.
template <class T>
Eigen::Index lu_in_place(const MatrixBuffer& a, std::int64_t m, std::int64_t n, int* transpositions) {
  int count = 0;
  const Eigen::Index zero = Eigen::internal::partial_lu_impl<T, Eigen::ColMajor, int>::blocked_lu(
      m, std::min(m, n), static_cast<T*>(a.data), a.ld, transpositions, count);
  if (n > m) {
    EigenMap<T> full = map<T>(a, m, n);
    auto right = full.rightCols(n - m);
    for (Eigen::Index i = 0; i < m; ++i) {
      if (transpositions[i] != i) right.row(i).swap(right.row(transpositions[i]));
    }
    full.leftCols(m).template triangularView<Eigen::UnitLower>().solveInPlace(right);
  }
  return zero;
}

// B := U⁻¹ L⁻¹ P B for the packed LU of an n x n matrix.
template <class T, class Rhs>
void lu_solve_in_place(const EigenMap<T>& lu, const int* transpositions, Rhs&& rhs) {
  for (Eigen::Index i = 0; i < lu.rows(); ++i) {
    if (transpositions[i] != i) rhs.row(i).swap(rhs.row(transpositions[i]));
  }
  lu.template triangularView<Eigen::UnitLower>().solveInPlace(rhs);
  lu.template triangularView<Eigen::Upper>().solveInPlace(rhs);
}

template <int Mode, class T>
void triangular_solve_in_place(const EigenMap<T>& a, EigenMap<T>& rhs, TriangularTranspose transpose) {
  const auto view = a.template triangularView<Mode>();
  switch (transpose) {
    case TriangularTranspose::kNone:
      view.solveInPlace(rhs);
      break;
    case TriangularTranspose::kTranspose:
      view.transpose().solveInPlace(rhs);
      break;
    case TriangularTranspose::kAdjoint:
      view.adjoint().solveInPlace(rhs);
      break;
  }
}

}  // namespace

template <class T>
Status eigen_cholesky(const LinalgProblem& p, const LinalgBuffers& b) {
  EigenMap<T> a = map<T>(b.a, p.n, p.n);
  const Eigen::Index failed = Eigen::internal::llt_inplace<T, Eigen::Lower>::blocked(a);
  if (failed >= 0) return not_positive_definite_error(static_cast<std::int64_t>(failed) + 1);
  a.template triangularView<Eigen::StrictlyUpper>().setZero();
  return ok_status();
}

template <class T>
Status eigen_lu(const LinalgProblem& p, const LinalgBuffers& b, int* transpositions) {
  (void)lu_in_place<T>(b.a, p.m, p.n, transpositions);  // a zero pivot is a valid factorization
  for (std::int64_t i = 0; i < std::min(p.m, p.n); ++i) b.pivots[i] = transpositions[i];
  return ok_status();
}

template <class T>
Status eigen_solve(const LinalgProblem& p, const LinalgBuffers& b, int* transpositions) {
  const Eigen::Index zero = lu_in_place<T>(b.a, p.n, p.n, transpositions);
  if (zero >= 0) return singular_matrix_error(p.kind(), static_cast<std::int64_t>(zero) + 1);
  EigenMap<T> rhs = map<T>(b.b, p.n, p.nrhs);
  lu_solve_in_place<T>(map<T>(b.a, p.n, p.n), transpositions, rhs);
  return ok_status();
}

template <class T>
Status eigen_triangular_solve(const LinalgProblem& p, const LinalgBuffers& b) {
  const LinalgAttributes& attr = *p.attributes;
  const EigenMap<T> a = map<T>(b.a, p.n, p.n);
  if (!attr.unit_diagonal) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
      if (a(i, i) == T(0)) return singular_matrix_error(p.kind(), static_cast<std::int64_t>(i) + 1);
    }
  }
  EigenMap<T> rhs = map<T>(b.b, p.n, p.nrhs);
  if (attr.lower) {
    attr.unit_diagonal ? triangular_solve_in_place<Eigen::UnitLower, T>(a, rhs, attr.transpose)
                       : triangular_solve_in_place<Eigen::Lower, T>(a, rhs, attr.transpose);
  } else {
    attr.unit_diagonal ? triangular_solve_in_place<Eigen::UnitUpper, T>(a, rhs, attr.transpose)
                       : triangular_solve_in_place<Eigen::Upper, T>(a, rhs, attr.transpose);
  }
  return ok_status();
}

template <class T>
Status eigen_inverse(const LinalgProblem& p, const LinalgBuffers& b, int* transpositions) {
  const Eigen::Index zero = lu_in_place<T>(b.a, p.n, p.n, transpositions);
  if (zero >= 0) return singular_matrix_error(p.kind(), static_cast<std::int64_t>(zero) + 1);
  EigenMatrix<T> inverse = EigenMatrix<T>::Identity(p.n, p.n);
  EigenMap<T> lu = map<T>(b.a, p.n, p.n);
  lu_solve_in_place<T>(lu, transpositions, inverse);
  lu = inverse;
  return ok_status();
}

#define TENFERRO_INSTANTIATE(T)                                                          \
  template Status eigen_cholesky<T>(const LinalgProblem&, const LinalgBuffers&);         \
  template Status eigen_lu<T>(const LinalgProblem&, const LinalgBuffers&, int*);         \
  template Status eigen_solve<T>(const LinalgProblem&, const LinalgBuffers&, int*);      \
  template Status eigen_triangular_solve<T>(const LinalgProblem&, const LinalgBuffers&); \
  template Status eigen_inverse<T>(const LinalgProblem&, const LinalgBuffers&, int*);
TENFERRO_EIGEN_FOR_EACH_TYPE(TENFERRO_INSTANTIATE)
#undef TENFERRO_INSTANTIATE

}  // namespace tenferro::linalg::internal
