// Internal: the per-operation linearize functions of the linalg AD rule
// ("Automatic differentiation" in docs/linalg.md). Each receives the rule's
// context and helpers and returns one tangent per result (nullopt = zero or
// not differentiable). Called only when at least one tangent is present.
#pragma once

#include "linalg/ad/matrix_ad.h"

namespace tenferro::linalg::internal {

/// The first result of a rule-op call that returns several.
inline ad::AdValue first(const SmallVector<ad::AdValue, 2>& values) { return values[0]; }

using ad::LinearizeContext;
using ad::TangentList;

// linalg_ad_rule.cpp: solvers, inverse, determinants, pseudo-inverse, norms.
Result<TangentList> linearize_solve(LinearizeContext& ctx, MatrixAd& m);
Result<TangentList> linearize_triangular_solve(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_inv(LinearizeContext& ctx, MatrixAd& m);
Result<TangentList> linearize_det(LinearizeContext& ctx, MatrixAd& m, bool log);
Result<TangentList> linearize_pinv(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_lstsq(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_matrix_norm(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_vector_norm(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);

// decomposition_rules.cpp.
Result<TangentList> linearize_svd(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_qr(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_eigh(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_eig(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a);
Result<TangentList> linearize_cholesky(LinearizeContext& ctx, MatrixAd& m);
Result<TangentList> linearize_lu(LinearizeContext& ctx, MatrixAd& m);

/// The Hermitian matrix a routine reading only the lower triangle of `a`
/// sees: tril(a, -1) + tril(a, -1)ᴴ + Re diag(a) (LAPACK's ?heevd / ?potrf
/// and Eigen ignore the imaginary part of the diagonal). Linear, so it also
/// maps tangents.
Result<AdValue> hermitian_from_lower(MatrixAd& m, AdValue a);

/// diag(a) as a matrix, its real part for complex `a` (linear).
Result<AdValue> real_diagonal(MatrixAd& m, AdValue a);

}  // namespace tenferro::linalg::internal
