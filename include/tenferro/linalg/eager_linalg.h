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

#include <cstdint>
#include <span>

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
/// numpy.linalg.lstsq's four results (lstsq_with_singular_values).
struct LstsqResult {
  Tensor x;
  Tensor s;          ///< A's singular values, descending
  Tensor rank;       ///< int64 [..]: the count of s above rcond * s[0], the cutoff the solver used
  Tensor residuals;  ///< real [.., k]: the squared 2-norm of each column of b - a x when every matrix
                     ///< has rank n and m > n, as numpy gives them; [.., 0] otherwise (k = 1 for a vector b)
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
/// numpy.linalg.lstsq's (x, residuals, rank, s): the solution and the
/// singular values from one factorisation, the rank and the residuals
/// computed from them.
Result<LstsqResult> lstsq_with_singular_values(runtime::EagerContext& context, const Tensor& a, const Tensor& b,
                                               double rcond = -1.0);
Result<Tensor> pinv(runtime::EagerContext& context, const Tensor& a, double rcond = -1.0);
Result<Tensor> matrix_norm(runtime::EagerContext& context, const Tensor& a, NormOrder order = NormOrder::kFrobenius);
/// numpy.linalg.matrix_rank: per matrix, the number of singular values
/// above `rtol` times the largest (rtol < 0: max(m, n) * eps of a's
/// precision, numpy's default); int64 [..]. An empty matrix has rank 0.
Result<Tensor> matrix_rank(runtime::EagerContext& context, const Tensor& a, double rtol = -1.0);
/// numpy.linalg.cond, per matrix; real [..]. Orders 2 (kTwo, numpy's
/// None) and -2 (kNegTwo): the largest singular value over the smallest
/// (-2: the smallest over the largest); a singular matrix gives inf (0).
/// Other orders (fro, nuc, +-1, +-inf; square matrices):
/// matrix_norm(a) * matrix_norm(inv(a)), inf for a singular matrix, as
/// numpy (Note [Condition numbers by the inverse]). A zero matrix is inf.
/// kInvalidArgument for kP and empty matrices.
Result<Tensor> cond(runtime::EagerContext& context, const Tensor& a, NormOrder order = NormOrder::kTwo);
/// numpy.linalg.matrix_power: a square a [.., n, n] to the integer power k
/// by repeated squaring (about 2 log2 |k| products); k < 0 raises inv(a),
/// k = 0 gives the identity of a's shape. A new tensor of a's dtype (an
/// integer a stays integer for k >= 0, as numpy; inv takes it as float64).
Result<Tensor> matrix_power(runtime::EagerContext& context, const Tensor& a, std::int64_t k);
/// numpy.linalg.multi_dot: the product of two or more matrices, multiplied
/// in the order of fewest scalar multiplications (the matrix-chain dynamic
/// programme). The first operand may be a vector [n] (a row) and the last
/// one [n] (a column); their axes are dropped from the result, as numpy
/// does. The operands are taken in their common dtype.
Result<Tensor> multi_dot(runtime::EagerContext& context, std::span<const Tensor> operands);
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
