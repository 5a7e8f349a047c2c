// Eager linalg calls (eager_linalg.h): build the op, call it, unpack.
#include "tenferro/linalg/eager_linalg.h"

namespace tenferro::linalg {

namespace {

// Operands as numpy takes them (Note [Eager dtype promotion] in
// runtime/eager.h): of their common dtype, integers and bools as float64.
// Operands of one inexact dtype, the common call, go as they are.
Result<runtime::TensorList> call(runtime::EagerContext& context, const std::shared_ptr<const LinalgOp>& op,
                                 std::initializer_list<Tensor> inputs) {
  const std::span<const Tensor> given(inputs.begin(), inputs.size());
  bool as_given = true;
  for (const Tensor& t : given) {
    as_given = as_given && (!t.defined() || (is_inexact(t.dtype()) && t.dtype() == given[0].dtype()));
  }
  if (as_given) return context.call(op, given);
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList common, context.to_common_dtype(given));
  for (Tensor& t : common) {
    if (t.defined() && !is_inexact(t.dtype())) {
      TENFERRO_ASSIGN_OR_RETURN(t, context.convert(t, DType::kFloat64));
    }
  }
  return context.call(op, std::span<const Tensor>(common.data(), common.size()));
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

namespace {

// lstsq with a b of one axis fewer than a ([..., m] for a [..., m, n]): a
// vector per matrix, as numpy takes it, solved as [..., m, 1] (a view) and
// returned as [..., n].
Result<LstsqResult> lstsq_of(runtime::EagerContext& context, const Tensor& a, const Tensor& b, double rcond,
                             bool singular_values) {
  const bool vector = a.defined() && b.defined() && b.rank() + 1 == a.rank();
  Tensor rhs = b;
  if (vector) {
    TENFERRO_ASSIGN_OR_RETURN(rhs, b.unsqueeze(b.rank()));
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, call(context, LinalgOp::lstsq(rcond, singular_values), {a, rhs}));
  LstsqResult r{std::move(out[0]), singular_values ? std::move(out[1]) : Tensor()};
  if (vector) {
    TENFERRO_ASSIGN_OR_RETURN(r.x, r.x.squeeze(r.x.rank() - 1));
  }
  return r;
}

}  // namespace

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
  TENFERRO_ASSIGN_OR_RETURN(LstsqResult r, lstsq_of(context, a, b, rcond, false));
  return std::move(r.x);
}

Result<LstsqResult> lstsq_with_singular_values(runtime::EagerContext& context, const Tensor& a, const Tensor& b,
                                               double rcond) {
  return lstsq_of(context, a, b, rcond, true);
}

Result<Tensor> pinv(runtime::EagerContext& context, const Tensor& a, double rcond) {
  return single(context, LinalgOp::pinv(rcond), {a});
}

Result<Tensor> matrix_norm(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::matrix_norm(order));
  return single(context, op, {a});
}

Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, NormOrder order, double p) {
  Dims all;  // none for an undefined x, which the overload refuses
  for (std::int64_t a = 0; a < x.rank(); ++a) all.push_back(a);
  return vector_norm(context, x, all, order, p);
}

Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, IntArrayRef axes, NormOrder order,
                           double p) {
  if (!x.defined())
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "linalg.vector_norm: x is undefined");
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::vector_norm(order, p));
  // The reduced axes moved last (a view) and merged into one: the op's
  // last-axis norm.
  const std::int64_t rank = x.rank();
  SmallVector<bool, 8> reduced(static_cast<std::size_t>(rank), false);
  for (const std::int64_t given : axes) {
    const std::int64_t a = given < 0 ? given + rank : given;
    if (a < 0 || a >= rank) {
      return make_error(
          ErrorCode::kInvalidArgument, ErrorStage::kNone,
          "linalg.vector_norm: axis {} is out of range for a tensor of rank {}; expected -{} <= axis < {}", given, rank,
          rank, rank);
    }
    if (reduced[static_cast<std::size_t>(a)]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "linalg.vector_norm: axis {} is given twice in {}; expected each axis at most once", given,
                        shape_to_string(axes));
    }
    reduced[static_cast<std::size_t>(a)] = true;
  }
  Dims perm, shape;
  std::int64_t count = 1;
  for (std::int64_t a = 0; a < rank; ++a) {
    if (!reduced[static_cast<std::size_t>(a)]) {
      perm.push_back(a);
      shape.push_back(x.shape()[static_cast<std::size_t>(a)]);
    }
  }
  for (std::int64_t a = 0; a < rank; ++a) {
    if (reduced[static_cast<std::size_t>(a)]) {
      perm.push_back(a);
      count *= x.shape()[static_cast<std::size_t>(a)];
    }
  }
  shape.push_back(count);
  TENFERRO_ASSIGN_OR_RETURN(const Tensor moved, context.transpose(x, perm));
  TENFERRO_ASSIGN_OR_RETURN(const Tensor vectors, context.reshape(moved, shape));
  return single(context, op, {vectors});
}

}  // namespace tenferro::linalg
