// Eager linalg calls (eager_linalg.h): build the op, call it, unpack.
#include "tenferro/linalg/eager_linalg.h"

#include <algorithm>
#include <limits>

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

// Note [Eager batch broadcasting]
// solve, triangular_solve and lstsq take a [..., m, n] and b [..., m, k]
// whose batch axes broadcast as numpy's and torch's do (a [2, 1, n, n] with
// b [3, n, k] solves 2 x 3 systems). solve and lstsq also take b as one
// vector per matrix: a b of one axis ([m], broadcast over every matrix, as
// numpy 2 reads it) or of a's shape without its last axis ([..., m], torch's
// rule, which numpy 1's agrees with wherever both apply). A vector is solved
// as [..., m, 1] (a view) and returned as [..., n]. Broadcasting is views
// (stride 0), no copy here; operands whose batch axes already agree go as
// they are. The LinalgOp itself takes equal batch axes only.
struct SystemOperands {
  Tensor a;
  Tensor b;
  bool vector = false;
};

Result<SystemOperands> broadcast_system(std::string_view op, const Tensor& a, const Tensor& b, bool vectors) {
  SystemOperands s{a, b, false};
  if (!a.defined() || !b.defined() || a.rank() < 2) return s;  // the op refuses them with its own message
  const IntArrayRef as = a.shape();
  const IntArrayRef bs = b.shape();
  s.vector = vectors && (b.rank() == 1 || (b.rank() + 1 == a.rank() && bs == IntArrayRef(as.data(), bs.size())));
  if (s.vector) {
    TENFERRO_ASSIGN_OR_RETURN(s.b, b.unsqueeze(b.rank()));
  }
  if (s.b.rank() < 2) return s;
  const IntArrayRef a_batch(as.data(), as.size() - 2);
  const IntArrayRef b_batch(s.b.shape().data(), s.b.shape().size() - 2);
  if (a_batch == b_batch) return s;
  const std::size_t rank = std::max(a_batch.size(), b_batch.size());
  Dims batch(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a_batch.size() ? 1 : a_batch[i - (rank - a_batch.size())];
    const std::int64_t y = i < rank - b_batch.size() ? 1 : b_batch[i - (rank - b_batch.size())];
    if (x != y && x != 1 && y != 1) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "linalg.{}: expected the batch axes of a and b to broadcast (numpy's rule), found a {} and "
                        "b {} (batch {} and {})",
                        op, shape_to_string(as), shape_to_string(bs), shape_to_string(a_batch),
                        shape_to_string(b_batch));
    }
    batch[i] = x == 1 ? y : x;
  }
  const auto with_core = [&batch](IntArrayRef shape) {
    Dims full = batch;
    full.append(shape.end() - 2, shape.end());
    return full;
  };
  TENFERRO_ASSIGN_OR_RETURN(s.a, a.broadcast_to(with_core(as)));
  TENFERRO_ASSIGN_OR_RETURN(s.b, s.b.broadcast_to(with_core(s.b.shape())));
  return s;
}

Result<Tensor> unvector(const SystemOperands& s, Tensor x) {
  if (!s.vector) return x;
  return x.squeeze(x.rank() - 1);
}

Result<LstsqResult> lstsq_of(runtime::EagerContext& context, const Tensor& a, const Tensor& b, double rcond,
                             bool singular_values) {
  TENFERRO_ASSIGN_OR_RETURN(const SystemOperands s, broadcast_system("lstsq", a, b, true));
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out,
                            call(context, LinalgOp::lstsq(rcond, singular_values), {s.a, s.b}));
  LstsqResult r{std::move(out[0]), singular_values ? std::move(out[1]) : Tensor()};
  TENFERRO_ASSIGN_OR_RETURN(r.x, unvector(s, std::move(r.x)));
  return r;
}

}  // namespace

Result<Tensor> solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b) {
  TENFERRO_ASSIGN_OR_RETURN(const SystemOperands s, broadcast_system("solve", a, b, true));
  TENFERRO_ASSIGN_OR_RETURN(Tensor x, single(context, LinalgOp::solve(), {s.a, s.b}));
  return unvector(s, std::move(x));
}

Result<Tensor> triangular_solve(runtime::EagerContext& context, const Tensor& a, const Tensor& b, bool lower,
                                bool unit_diagonal, TriangularTranspose transpose) {
  TENFERRO_ASSIGN_OR_RETURN(const SystemOperands s, broadcast_system("triangular_solve", a, b, false));
  return single(context, LinalgOp::triangular_solve(lower, unit_diagonal, transpose), {s.a, s.b});
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

namespace {

// The singular values of each matrix of `a`, folded per matrix by
// `fold(values, count)` into one value of type Out (a [..] tensor of
// `out_dtype`).
template <class Out, class Fold>
Result<Tensor> per_matrix_of_singular_values(runtime::EagerContext& context, const Tensor& a, DType out_dtype,
                                             Fold fold) {
  TENFERRO_ASSIGN_OR_RETURN(SvdResult svd_values, svd(context, a, SvdMode::kValuesOnly));
  TENFERRO_ASSIGN_OR_RETURN(Tensor s, context.contiguous(svd_values.s));
  const IntArrayRef shape = s.shape();
  const std::int64_t k = shape.back();
  TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(IntArrayRef(shape.data(), shape.size() - 1), out_dtype));
  Out* dst = static_cast<Out*>(out.data());
  const std::int64_t count = out.numel();
  for (std::int64_t i = 0; i < count; ++i) {
    if (s.dtype() == DType::kFloat32) {
      dst[i] = fold(static_cast<const float*>(s.data()) + i * k, k);
    } else {
      dst[i] = fold(static_cast<const double*>(s.data()) + i * k, k);
    }
  }
  return out;
}

}  // namespace

Result<Tensor> matrix_rank(runtime::EagerContext& context, const Tensor& a, double rtol) {
  if (!a.defined() || a.rank() < 2) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.matrix_rank: expected a matrix or a stack of matrices (rank >= 2), found {}",
                      a.defined() ? a.to_string() : std::string("an undefined tensor"));
  }
  const std::int64_t m = a.shape()[a.rank() - 2], n = a.shape()[a.rank() - 1];
  const bool single = a.dtype() == DType::kFloat32 || a.dtype() == DType::kComplex64;
  const double relative = rtol >= 0
                              ? rtol
                              : static_cast<double>(std::max(m, n)) * (single ? std::numeric_limits<float>::epsilon()
                                                                              : std::numeric_limits<double>::epsilon());
  return per_matrix_of_singular_values<std::int64_t>(
      context, a, DType::kInt64, [relative](const auto* s, std::int64_t k) {
        std::int64_t rank = 0;
        for (std::int64_t i = 0; i < k; ++i) rank += s[i] > relative * s[0] ? 1 : 0;  // descending: s[0] is the largest
        return rank;
      });
}

Result<Tensor> cond(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  if (order != NormOrder::kTwo && order != NormOrder::kNegTwo) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.cond: expected the order 2 or -2, found {}; matrix_norm(a, order) * "
                      "matrix_norm(inv(a), order) gives the others",
                      to_string(order));
  }
  if (!a.defined() || a.rank() < 2 || a.shape()[a.rank() - 1] == 0 || a.shape()[a.rank() - 2] == 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.cond: expected non-empty matrices (rank >= 2), found {}",
                      a.defined() ? a.to_string() : std::string("an undefined tensor"));
  }
  const bool single = a.dtype() == DType::kFloat32 || a.dtype() == DType::kComplex64;
  const bool inverse = order == NormOrder::kNegTwo;
  const auto ratio = [inverse](const auto* s, std::int64_t k) {
    // A zero matrix (0 / 0) is inf for both orders, as numpy gives it.
    const double largest = static_cast<double>(s[0]), smallest = static_cast<double>(s[k - 1]);
    if (largest == 0.0) return std::numeric_limits<double>::infinity();
    return inverse ? smallest / largest : largest / smallest;  // a singular matrix: 0 or inf
  };
  if (single) {
    return per_matrix_of_singular_values<float>(
        context, a, DType::kFloat32, [&](const auto* s, std::int64_t k) { return static_cast<float>(ratio(s, k)); });
  }
  return per_matrix_of_singular_values<double>(context, a, DType::kFloat64, ratio);
}

Result<Tensor> matrix_norm(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::matrix_norm(order));
  return single(context, op, {a});
}

Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, NormOrder order, double p) {
  if (x.defined() && x.rank() == 0) {  // one element: the norm of it as a vector of one
    TENFERRO_ASSIGN_OR_RETURN(Tensor one, x.reshape(Dims{1}));
    return vector_norm(context, one, Dims{0}, order, p);
  }
  Dims all;  // none for an undefined x, which the overload refuses
  for (std::int64_t a = 0; a < x.rank(); ++a) all.push_back(a);
  return vector_norm(context, x, all, order, p);
}

Result<Tensor> vector_norm(runtime::EagerContext& context, const Tensor& x, IntArrayRef axes, NormOrder order,
                           double p) {
  if (!x.defined())
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "linalg.vector_norm: x is undefined");
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::vector_norm(order, p));
  if (axes.empty()) {  // numpy raises too; torch's dim=[] means every axis
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.vector_norm: expected at least one axis, found none; vector_norm(context, x) takes all "
                      "of x's elements");
  }
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
