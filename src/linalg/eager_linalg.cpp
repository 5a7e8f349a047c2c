// Eager linalg calls (eager_linalg.h): build the op, call it, unpack.
#include "tenferro/linalg/eager_linalg.h"

namespace tenferro::linalg {

namespace {

Result<runtime::TensorList> call(runtime::EagerContext& context, const std::shared_ptr<const LinalgOp>& op,
                                 std::initializer_list<Tensor> inputs) {
  return context.call(op, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

Result<Tensor> single(runtime::EagerContext& context, const std::shared_ptr<const LinalgOp>& op,
                      std::initializer_list<Tensor> inputs) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, op, inputs));
  return std::move(out[0]);
}

Result<EigenResult> eigen(runtime::EagerContext& context, const std::shared_ptr<const LinalgOp>& op, const Tensor& a) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, op, {a}));
  EigenResult r;
  r.eigenvalues = std::move(out[0]);
  if (out.size() > 1) r.eigenvectors = std::move(out[1]);
  return r;
}

}  // namespace

Result<SvdResult> svd(runtime::EagerContext& context, const Tensor& a, SvdMode mode) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::svd(mode), {a}));
  SvdResult r;
  if (mode == SvdMode::kValuesOnly) {
    r.s = std::move(out[0]);
  } else {
    r.u = std::move(out[0]);
    r.s = std::move(out[1]);
    r.vh = std::move(out[2]);
  }
  return r;
}

Result<QrResult> qr(runtime::EagerContext& context, const Tensor& a, QrMode mode) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::qr(mode), {a}));
  return QrResult{std::move(out[0]), std::move(out[1])};
}

Result<EigenResult> eigh(runtime::EagerContext& context, const Tensor& a, bool compute_vectors) {
  return eigen(context, LinalgOp::eigh(compute_vectors), a);
}

Result<EigenResult> eig(runtime::EagerContext& context, const Tensor& a, bool compute_vectors) {
  return eigen(context, LinalgOp::eig(compute_vectors), a);
}

Result<Tensor> cholesky(runtime::EagerContext& context, const Tensor& a) {
  return single(context, LinalgOp::cholesky(), {a});
}

Result<LuResult> lu(runtime::EagerContext& context, const Tensor& a) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::lu(), {a}));
  return LuResult{std::move(out[0]), std::move(out[1]), std::move(out[2])};
}

Result<Tensor> solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b) {
  // b of one axis fewer than a ([..., n] for a [..., n, n]) is a vector per
  // matrix, as numpy and torch take it: solved as [..., n, 1] (a view).
  if (a.defined() && b.defined() && b.rank() + 1 == a.rank()) {
    TENFERRO_ASSIGN_OR_RETURN(const Tensor column, b.unsqueeze(b.rank()));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor x, single(context, LinalgOp::solve(), {a, column}));
    return x.squeeze(x.rank() - 1);
  }
  return single(context, LinalgOp::solve(), {a, b});
}

Result<Tensor> triangular_solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b, bool lower,
                                bool unit_diagonal, TriangularTranspose transpose) {
  return single(context, LinalgOp::triangular_solve(lower, unit_diagonal, transpose), {a, b});
}

Result<Tensor> inv(runtime::EagerContext& context, const Tensor& a) { return single(context, LinalgOp::inv(), {a}); }

Result<Tensor> det(runtime::EagerContext& context, const Tensor& a) { return single(context, LinalgOp::det(), {a}); }

Result<SlogdetResult> slogdet(runtime::EagerContext& context, const Tensor& a) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::slogdet(), {a}));
  return SlogdetResult{std::move(out[0]), std::move(out[1])};
}

Result<Tensor> lstsq(runtime::EagerContext& context, const Tensor& a, const Tensor& b, double rcond) {
  return single(context, LinalgOp::lstsq(rcond), {a, b});
}

Result<LstsqResult> lstsq_with_singular_values(runtime::EagerContext& context, const Tensor& a, const Tensor& b,
                                               double rcond) {
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::lstsq(rcond, true), {a, b}));
  return LstsqResult{std::move(out[0]), std::move(out[1])};
}

Result<Tensor> pinv(runtime::EagerContext& context, const Tensor& a, double rcond) {
  return single(context, LinalgOp::pinv(rcond), {a});
}

Result<Tensor> matrix_norm(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::matrix_norm(order));
  return single(context, op, {a});
}

Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, NormOrder order, double p) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::vector_norm(order, p));
  return single(context, op, {x});
}

}  // namespace tenferro::linalg
