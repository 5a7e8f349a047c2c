// Eager linalg calls (eager_linalg.h): build the op, call it, unpack.
#include "tenferro/linalg/eager_linalg.h"

#include <algorithm>
#include <limits>
#include <vector>

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

// `fold(values, count)` of each row of `s` (singular values [.., k], float32
// or float64, descending) into one value of type Out: a [..] tensor of
// `out_dtype`.
template <class Out, class Fold>
Result<Tensor> fold_per_matrix(runtime::EagerContext& context, const Tensor& values, DType out_dtype, Fold fold) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor s, context.contiguous(values));
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

// The rank of each matrix from its singular values [.., k]: their count
// above `relative` times the largest (numpy's matrix_rank and lstsq's rank;
// LAPACK's gelsd cutoff). int64 [..].
Result<Tensor> rank_of_singular_values(runtime::EagerContext& context, const Tensor& s, double relative) {
  return fold_per_matrix<std::int64_t>(context, s, DType::kInt64, [relative](const auto* v, std::int64_t k) {
    std::int64_t rank = 0;
    for (std::int64_t i = 0; i < k; ++i) rank += v[i] > relative * v[0] ? 1 : 0;  // descending: v[0] is the largest
    return rank;
  });
}

bool single_precision(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kComplex64; }

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
  LstsqResult r{std::move(out[0]), singular_values ? std::move(out[1]) : Tensor(), Tensor(), Tensor()};
  if (singular_values) {
    // numpy's rank and residuals, from the solver's singular values and x
    // (still [.., n, k]; a and b of equal batch axes here).
    const std::int64_t m = s.a.shape()[s.a.rank() - 2], n = s.a.shape()[s.a.rank() - 1];
    const double relative = relative_cutoff(rcond, s.a.dtype(), m, n);
    TENFERRO_ASSIGN_OR_RETURN(r.rank, rank_of_singular_values(context, r.s, relative));
    bool full_rank = m > n;
    const std::int64_t* ranks = static_cast<const std::int64_t*>(r.rank.data());
    for (std::int64_t i = 0; full_rank && i < r.rank.numel(); ++i) full_rank = ranks[i] == n;
    if (full_rank) {
      TENFERRO_ASSIGN_OR_RETURN(const Tensor ax, context.matmul(s.a, r.x));
      TENFERRO_ASSIGN_OR_RETURN(const Tensor diff, context.sub(s.b, ax));
      TENFERRO_ASSIGN_OR_RETURN(const Tensor magnitude, context.abs(diff));
      TENFERRO_ASSIGN_OR_RETURN(const Tensor squares, context.mul(magnitude, magnitude));
      TENFERRO_ASSIGN_OR_RETURN(r.residuals, context.sum(squares, Dims{-2}));
    } else {
      Dims empty(r.x.shape().begin(), r.x.shape().end() - 2);
      empty.push_back(0);
      TENFERRO_ASSIGN_OR_RETURN(r.residuals, Tensor::empty(empty, r.s.dtype()));
    }
  }
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

Result<Tensor> matrix_rank(runtime::EagerContext& context, const Tensor& a, double rtol) {
  if (!a.defined() || a.rank() < 2) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.matrix_rank: expected a matrix or a stack of matrices (rank >= 2), found {}",
                      a.defined() ? a.to_string() : std::string("an undefined tensor"));
  }
  const std::int64_t m = a.shape()[a.rank() - 2], n = a.shape()[a.rank() - 1];
  TENFERRO_ASSIGN_OR_RETURN(const SvdResult values, svd(context, a, SvdMode::kValuesOnly));
  return rank_of_singular_values(context, values.s, relative_cutoff(rtol, a.dtype(), m, n));
}

namespace {

// Note [Condition numbers by the inverse]
// numpy's cond for the orders fro, nuc, +-1 and +-inf is norm(a, p) *
// norm(inv(a), p), where the inverse of a singular matrix comes out NaN and
// numpy turns the NaN into inf. Here the stack is inverted at once; when
// inv reports a singular matrix (it stops at the first), each matrix is
// inverted alone, so that a singular one gives inf and the others their
// condition number.
Result<Tensor> cond_by_inverse(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  Result<Tensor> inverse = inv(context, a);
  if (inverse.ok()) {
    TENFERRO_ASSIGN_OR_RETURN(const Tensor norm, matrix_norm(context, a, order));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor inverse_norm, matrix_norm(context, *inverse, order));
    return context.mul(norm, inverse_norm);
  }
  if (inverse.status().code() != ErrorCode::kSingularMatrix) return inverse.status();
  const DType real = single_precision(a.dtype()) ? DType::kFloat32 : DType::kFloat64;
  if (a.rank() == 2) return Tensor::full({}, Scalar::of(std::numeric_limits<double>::infinity()), real);
  const IntArrayRef shape = a.shape();
  const std::int64_t n = shape.back();
  TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(IntArrayRef(shape.data(), shape.size() - 2), real));
  const std::int64_t count = out.numel();
  TENFERRO_ASSIGN_OR_RETURN(const Tensor stack, context.reshape(a, Dims{count, n, n}));
  for (std::int64_t i = 0; i < count; ++i) {
    TENFERRO_ASSIGN_OR_RETURN(const Tensor row, stack.slice(0, i, i + 1));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor matrix, row.squeeze(0));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor one, cond_by_inverse(context, matrix, order));
    if (real == DType::kFloat32) {
      static_cast<float*>(out.data())[i] = *static_cast<const float*>(one.data());
    } else {
      static_cast<double*>(out.data())[i] = *static_cast<const double*>(one.data());
    }
  }
  return out;
}

}  // namespace

Result<Tensor> cond(runtime::EagerContext& context, const Tensor& a, NormOrder order) {
  if (order == NormOrder::kP) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.cond: expected a matrix norm order (fro, nuc, 1, -1, 2, -2, inf or -inf), found {}",
                      to_string(order));
  }
  if (!a.defined() || a.rank() < 2 || a.shape()[a.rank() - 1] == 0 || a.shape()[a.rank() - 2] == 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.cond: expected non-empty matrices (rank >= 2), found {}",
                      a.defined() ? a.to_string() : std::string("an undefined tensor"));
  }
  if (order != NormOrder::kTwo && order != NormOrder::kNegTwo) {
    if (a.shape()[a.rank() - 1] != a.shape()[a.rank() - 2]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "linalg.cond: expected square matrices for the order {} (it inverts them), found {}",
                        to_string(order), a.to_string());
    }
    return cond_by_inverse(context, a, order);
  }
  TENFERRO_ASSIGN_OR_RETURN(const SvdResult values, svd(context, a, SvdMode::kValuesOnly));
  const bool inverse = order == NormOrder::kNegTwo;
  const auto ratio = [inverse](const auto* s, std::int64_t k) {
    // A zero matrix (0 / 0) is inf for both orders, as numpy gives it.
    const double largest = static_cast<double>(s[0]), smallest = static_cast<double>(s[k - 1]);
    if (largest == 0.0) return std::numeric_limits<double>::infinity();
    return inverse ? smallest / largest : largest / smallest;  // a singular matrix: 0 or inf
  };
  if (single_precision(a.dtype())) {
    return fold_per_matrix<float>(context, values.s, DType::kFloat32,
                                  [&](const auto* s, std::int64_t k) { return static_cast<float>(ratio(s, k)); });
  }
  return fold_per_matrix<double>(context, values.s, DType::kFloat64, ratio);
}

Result<Tensor> matrix_power(runtime::EagerContext& context, const Tensor& a, std::int64_t k) {
  if (!a.defined() || a.rank() < 2 || a.shape()[a.rank() - 1] != a.shape()[a.rank() - 2]) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.matrix_power: expected a square matrix or a stack of them [.., n, n], found {}",
                      a.defined() ? a.to_string() : std::string("an undefined tensor"));
  }
  if (k == 1) return context.copy(a);  // a new tensor, as every other power
  if (k == 0) {
    TENFERRO_ASSIGN_OR_RETURN(const Tensor identity, Tensor::eye(a.shape().back(), a.dtype()));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor stack, identity.broadcast_to(a.shape()));
    return context.copy(stack);
  }
  Tensor base = a;
  if (k < 0) {
    TENFERRO_ASSIGN_OR_RETURN(base, inv(context, a));
  }
  // |k| as unsigned: -INT64_MIN does not fit an int64.
  std::uint64_t remaining = k < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(k) : static_cast<std::uint64_t>(k);
  Tensor result;
  while (true) {
    if ((remaining & 1U) != 0) {
      if (result.defined()) {
        TENFERRO_ASSIGN_OR_RETURN(result, context.matmul(result, base));
      } else {
        result = base;
      }
    }
    remaining >>= 1U;
    if (remaining == 0) break;
    TENFERRO_ASSIGN_OR_RETURN(base, context.matmul(base, base));
  }
  return result;
}

Result<Tensor> multi_dot(runtime::EagerContext& context, std::span<const Tensor> operands) {
  const std::size_t count = operands.size();
  if (count < 2) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "linalg.multi_dot: expected at least two operands, found {}", count);
  }
  for (std::size_t i = 0; i < count; ++i) {
    const Tensor& t = operands[i];
    const bool end = i == 0 || i + 1 == count;
    if (!t.defined() || (t.rank() != 2 && !(end && t.rank() == 1))) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "linalg.multi_dot: expected operand {} to be a matrix{}, found {}", i,
                        end ? " or a vector" : " (only the first and the last may be vectors)",
                        t.defined() ? t.to_string() : std::string("an undefined tensor"));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList chain, context.to_common_dtype(operands));
  // Vectors as a row [1, n] and a column [n, 1]; the chain's extents p:
  // operand i is p[i] x p[i + 1].
  const bool row = chain.front().rank() == 1, column = chain.back().rank() == 1;
  if (row) {
    TENFERRO_ASSIGN_OR_RETURN(chain.front(), chain.front().unsqueeze(0));
  }
  if (column) {
    TENFERRO_ASSIGN_OR_RETURN(chain.back(), chain.back().unsqueeze(1));
  }
  std::vector<std::int64_t> p(count + 1);
  p[0] = chain[0].shape()[0];
  for (std::size_t i = 0; i < count; ++i) {
    if (chain[i].shape()[0] != p[i]) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "linalg.multi_dot: expected operand {} to have {} rows, the columns of operand {}, found {} "
                        "(operands {} and {})",
                        i, p[i], i - 1, chain[i].shape()[0], operands[i - 1].to_string(), operands[i].to_string());
    }
    p[i + 1] = chain[i].shape()[1];
  }
  // The matrix-chain order: cost[i][j] the fewest multiplications for
  // operands i..j, split[i][j] the last product's split point.
  std::vector<std::vector<double>> cost(count, std::vector<double>(count, 0.0));
  std::vector<std::vector<std::size_t>> split(count, std::vector<std::size_t>(count, 0));
  for (std::size_t length = 1; length < count; ++length) {
    for (std::size_t i = 0; i + length < count; ++i) {
      const std::size_t j = i + length;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (std::size_t m = i; m < j; ++m) {
        const double c = cost[i][m] + cost[m + 1][j] +
                         static_cast<double>(p[i]) * static_cast<double>(p[m + 1]) * static_cast<double>(p[j + 1]);
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = m;
        }
      }
    }
  }
  const auto product = [&](const auto& self, std::size_t i, std::size_t j) -> Result<Tensor> {
    if (i == j) return chain[i];
    TENFERRO_ASSIGN_OR_RETURN(const Tensor left, self(self, i, split[i][j]));
    TENFERRO_ASSIGN_OR_RETURN(const Tensor right, self(self, split[i][j] + 1, j));
    return context.matmul(left, right);
  };
  TENFERRO_ASSIGN_OR_RETURN(Tensor result, product(product, 0, count - 1));
  if (column) {
    TENFERRO_ASSIGN_OR_RETURN(result, result.squeeze(1));
  }
  if (row) {
    TENFERRO_ASSIGN_OR_RETURN(result, result.squeeze(0));
  }
  return result;
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
