// Eager linalg calls: one function per operation over a placement-bound
// runtime::EagerContext (runtime.on(placement)). Each builds the LinalgOp and
// calls it through the context: the native linalg engine when the context's
// engine has the linalg module installed (the eager fast path), otherwise
// whatever the runtime resolves (Note [Eager fast path] in runtime/eager.h).
// Operands are taken as numpy takes them: of their common dtype, integers
// and bools as float64 (Note [Eager dtype promotion]); the LinalgOp itself
// stays strict.
// Semantics, shapes and errors: Note [Linalg operation semantics] in
// linalg_op.h. Thread-compatible like the context.
#pragma once

#include "tenferro/linalg/linalg_op.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::linalg {

struct SvdResult {
  Tensor u;  ///< undefined for SvdMode::kValuesOnly
  Tensor s;
  Tensor vh;  ///< undefined for SvdMode::kValuesOnly
};
struct QrResult {
  Tensor q;
  Tensor r;
};
struct EigenResult {
  Tensor eigenvalues;
  Tensor eigenvectors;  ///< undefined when vectors were not requested
};
struct LuResult {
  Tensor lu;
  Tensor pivots;
  Tensor permutation;
};
struct SlogdetResult {
  Tensor sign;
  Tensor logabsdet;
};
struct LstsqResult {
  Tensor x;
  Tensor s;  ///< A's singular values, descending (the rank is their count above rcond * s[0])
};

Result<SvdResult> svd(runtime::EagerContext& context, const Tensor& a, SvdMode mode = SvdMode::kThin);
Result<QrResult> qr(runtime::EagerContext& context, const Tensor& a, QrMode mode = QrMode::kReduced);
Result<EigenResult> eigh(runtime::EagerContext& context, const Tensor& a, bool compute_vectors = true);
Result<EigenResult> eig(runtime::EagerContext& context, const Tensor& a, bool compute_vectors = true);
Result<Tensor> cholesky(runtime::EagerContext& context, const Tensor& a);
Result<LuResult> lu(runtime::EagerContext& context, const Tensor& a);
/// x with a x = b; b [..., n, k], or a vector per matrix: [n] or a's shape
/// without its last axis (torch's rule). The batch axes of a and b broadcast
/// as in numpy and torch (Note [Eager batch broadcasting], also for
/// triangular_solve and lstsq).
Result<Tensor> solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b);
Result<Tensor> triangular_solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b, bool lower,
                                bool unit_diagonal = false, TriangularTranspose transpose = TriangularTranspose::kNone);
Result<Tensor> inv(runtime::EagerContext& context, const Tensor& a);
Result<Tensor> det(runtime::EagerContext& context, const Tensor& a);
Result<SlogdetResult> slogdet(runtime::EagerContext& context, const Tensor& a);
/// The minimum-norm least-squares x of a x = b; b [..., m, k], or a vector
/// per matrix as solve takes it (giving x [..., n], as in numpy).
Result<Tensor> lstsq(runtime::EagerContext& context, const Tensor& a, const Tensor& b, double rcond = -1.0);
/// lstsq's solution and the singular values the solver computed (numpy's
/// lstsq returns both; one factorisation).
Result<LstsqResult> lstsq_with_singular_values(runtime::EagerContext& context, const Tensor& a, const Tensor& b,
                                               double rcond = -1.0);
Result<Tensor> pinv(runtime::EagerContext& context, const Tensor& a, double rcond = -1.0);
Result<Tensor> matrix_norm(runtime::EagerContext& context, const Tensor& a, NormOrder order = NormOrder::kFrobenius);
/// numpy.linalg.matrix_rank: per matrix, the number of singular values
/// above `rtol` times the largest (rtol < 0: max(m, n) * eps of a's
/// precision, numpy's default); int64 [..]. An empty matrix has rank 0.
Result<Tensor> matrix_rank(runtime::EagerContext& context, const Tensor& a, double rtol = -1.0);
/// numpy.linalg.cond for p = None / 2 (kTwo) and -2 (kNegTwo): per matrix
/// the largest singular value over the smallest (kNegTwo: the smallest
/// over the largest); inf for a singular matrix, as numpy. Real [..].
/// kInvalidArgument for other orders (matrix_norm(a) * matrix_norm(inv(a))
/// gives them) and for empty matrices.
Result<Tensor> cond(runtime::EagerContext& context, const Tensor& a, NormOrder order = NormOrder::kTwo);
/// The vector norm of all of x's elements (x flattened), a 0-d result, as
/// numpy.linalg.norm(x) and torch.linalg.vector_norm(x) give it.
Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, NormOrder order = NormOrder::kTwo,
                           double p = 2.0);
/// The vector norm over `axes` (negative counts from the end; each at most
/// once; at least one): one norm per index of the other axes, which the
/// result keeps in order (numpy's axis=, torch's dim=). The LinalgOp itself reduces the
/// last axis (Note [Linalg operation semantics]).
Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, IntArrayRef axes,
                           NormOrder order = NormOrder::kTwo, double p = 2.0);

}  // namespace tenferro::linalg
