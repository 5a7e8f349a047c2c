// The linalg family's ad::ExtensionAdRule: dispatch of linearize, the
// linearize rules of the solvers, inverse, determinants, pseudo-inverse and
// norms, and the transpose of the linear linalg nodes the rules emit
// (solve and triangular_solve in their right-hand side).
#include "tenferro/linalg/ad_rules.h"

#include <fmt/format.h>

#include "linalg/ad/linalg_ad_rules.h"

namespace tenferro::linalg {

namespace internal {

namespace {

using program::ComparisonDirection;

// b - a, or -a when b is absent.
Result<AdValue> minus(MatrixAd& m, std::optional<AdValue> b, AdValue a) { return b ? m.sub(*b, a) : m.neg(a); }

// x with zeros replaced by ones (for denominators).
Result<AdValue> nonzero(MatrixAd& m, AdValue x) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, m.full_like(x, 0.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one, m.full_like(x, 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue is_zero, m.compare(ComparisonDirection::kEq, x, zero));
  return m.select(is_zero, one, x);
}

// Re(conj(sign(x)) dx): the derivative of |x| along dx (0 where x = 0).
Result<AdValue> abs_derivative(MatrixAd& m, AdValue x, AdValue dx) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue sign, m.builder().emit(program::CoreSemanticOp::kSign, {x}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sign_c, m.conj(sign));
  TENFERRO_ASSIGN_OR_RETURN(AdValue prod, m.mul(sign_c, dx));
  return m.real(prod);
}

// d ||x|| = Re(sum conj(x) dx) / ||x|| over the last axis (or the last two,
// `matrix`): the 2-norm's and the Frobenius norm's rule. No |x| sign(x)
// factor, whose own derivative at an x_i = 0 is 0: a Hessian would lose
// the curvature along that entry.
Result<AdValue> two_norm_derivative(MatrixAd& m, AdValue x, AdValue dx, AdValue norm, bool matrix) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue xc, m.conj(x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue prod, m.mul(xc, dx));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sum, matrix ? m.sum_matrix(prod) : m.sum_last(prod));
  TENFERRO_ASSIGN_OR_RETURN(AdValue num, m.real(sum));
  TENFERRO_ASSIGN_OR_RETURN(AdValue den, nonzero(m, norm));
  return m.div(num, den);
}

}  // namespace

Result<TangentList> linearize_solve(LinearizeContext& ctx, MatrixAd& m) {
  // X = A⁻¹ B: dX = A⁻¹ (dB - dA X).
  std::optional<AdValue> rhs = ctx.tangent(1);
  if (const std::optional<AdValue> da = ctx.tangent(0)) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue da_x, m.matmul(*da, ctx.primal_result(0)));
    TENFERRO_ASSIGN_OR_RETURN(rhs, minus(m, rhs, da_x));
  }
  TENFERRO_ASSIGN_OR_RETURN(auto dx, m.linalg(LinalgOp::solve(), {ctx.primal_operand(0), *rhs}));
  return TangentList{first(dx)};
}

Result<TangentList> linearize_triangular_solve(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& a) {
  // X = op(T)⁻¹ B with T the used triangle: dX = op(T)⁻¹ (dB - op(dT) X).
  std::optional<AdValue> rhs = ctx.tangent(1);
  if (const std::optional<AdValue> da = ctx.tangent(0)) {
    const Triangle used = a.lower ? (a.unit_diagonal ? Triangle::kStrictLower : Triangle::kLower)
                                  : (a.unit_diagonal ? Triangle::kStrictUpper : Triangle::kUpper);
    TENFERRO_ASSIGN_OR_RETURN(AdValue dt, m.keep(*da, used));
    if (a.transpose == TriangularTranspose::kTranspose) {
      TENFERRO_ASSIGN_OR_RETURN(dt, m.transpose(dt));
    } else if (a.transpose == TriangularTranspose::kAdjoint) {
      TENFERRO_ASSIGN_OR_RETURN(dt, m.adjoint(dt));
    }
    TENFERRO_ASSIGN_OR_RETURN(AdValue dt_x, m.matmul(dt, ctx.primal_result(0)));
    TENFERRO_ASSIGN_OR_RETURN(rhs, minus(m, rhs, dt_x));
  }
  TENFERRO_ASSIGN_OR_RETURN(auto dx, m.linalg(LinalgOp::triangular_solve(a.lower, a.unit_diagonal, a.transpose),
                                              {ctx.primal_operand(0), *rhs}));
  return TangentList{first(dx)};
}

Result<TangentList> linearize_inv(LinearizeContext& ctx, MatrixAd& m) {
  // Y = A⁻¹: dY = -Y dA Y.
  const AdValue y = ctx.primal_result(0);
  TENFERRO_ASSIGN_OR_RETURN(AdValue y_da, m.matmul(y, *ctx.tangent(0)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue y_da_y, m.matmul(y_da, y));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dy, m.neg(y_da_y));
  return TangentList{dy};
}

Result<TangentList> linearize_det(LinearizeContext& ctx, MatrixAd& m, bool log) {
  // d det = det tr(A⁻¹ dA); d log|det| = Re tr(A⁻¹ dA); d sign = i Im(..) sign.
  const AdValue a = ctx.primal_operand(0);
  TENFERRO_ASSIGN_OR_RETURN(auto inverse, m.linalg(LinalgOp::inv(), {a}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ainv_da, m.matmul(first(inverse), *ctx.tangent(0)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue t, m.trace(ainv_da));
  if (!log) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue dd, m.mul(ctx.primal_result(0), t));
    return TangentList{dd};
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue dlog, m.real(t));
  if (!m.complex(a)) return TangentList{std::nullopt, dlog};  // the sign is locally constant
  TENFERRO_ASSIGN_OR_RETURN(AdValue t_im, m.imag(t));
  TENFERRO_ASSIGN_OR_RETURN(AdValue i_t, m.times_i(t_im));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dsign, m.mul(ctx.primal_result(0), i_t));
  return TangentList{dsign, dlog};
}

namespace {

// dA⁺ applied to an optional right factor: with `right` = B, returns
// dA⁺ B; without, dA⁺ itself. P = A⁺, X = P B (or P).
//   dA⁺ = -P dA P + P Pᴴ dAᴴ (I - A P) + (I - P A) dAᴴ Pᴴ P
Result<AdValue> pinv_tangent_times(MatrixAd& m, AdValue a, AdValue da, AdValue p, AdValue x, AdValue rhs) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue ph, m.adjoint(p));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah, m.adjoint(da));
  TENFERRO_ASSIGN_OR_RETURN(AdValue da_x, m.matmul(da, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue p_da_x, m.matmul(p, da_x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue t1, m.neg(p_da_x));
  // P Pᴴ dAᴴ (rhs - A x)
  TENFERRO_ASSIGN_OR_RETURN(AdValue ax, m.matmul(a, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue residual, m.sub(rhs, ax));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah_res, m.matmul(dah, residual));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ph_dah_res, m.matmul(ph, dah_res));
  TENFERRO_ASSIGN_OR_RETURN(AdValue t2, m.matmul(p, ph_dah_res));
  // (I - P A) dAᴴ Pᴴ x
  TENFERRO_ASSIGN_OR_RETURN(AdValue ph_x, m.matmul(ph, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue w, m.matmul(dah, ph_x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue a_w, m.matmul(a, w));
  TENFERRO_ASSIGN_OR_RETURN(AdValue p_a_w, m.matmul(p, a_w));
  TENFERRO_ASSIGN_OR_RETURN(AdValue t3, m.sub(w, p_a_w));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sum, m.add(t1, t2));
  return m.add(sum, t3);
}

}  // namespace

Result<TangentList> linearize_pinv(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& /*a*/) {
  const AdValue a = ctx.primal_operand(0), p = ctx.primal_result(0);
  // Right factor I (m x m): x = P, rhs = I.
  TENFERRO_ASSIGN_OR_RETURN(AdValue ap, m.matmul(a, p));
  TENFERRO_ASSIGN_OR_RETURN(AdValue eye, m.identity(ap));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dp, pinv_tangent_times(m, a, *ctx.tangent(0), p, p, eye));
  return TangentList{dp};
}

Result<TangentList> linearize_lstsq(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  // X = A⁺ B: dX = dA⁺ B + A⁺ dB (constant rank).
  const AdValue a = ctx.primal_operand(0), b = ctx.primal_operand(1), x = ctx.primal_result(0);
  TENFERRO_ASSIGN_OR_RETURN(auto pinv, m.linalg(LinalgOp::pinv(attr.rcond), {a}));
  const AdValue p = first(pinv);
  std::optional<AdValue> dx;
  if (const std::optional<AdValue> db = ctx.tangent(1)) {
    TENFERRO_ASSIGN_OR_RETURN(dx, m.matmul(p, *db));
  }
  const std::optional<AdValue> da = ctx.tangent(0);
  if (da) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue t, pinv_tangent_times(m, a, *da, p, x, b));
    TENFERRO_ASSIGN_OR_RETURN(dx, dx ? m.add(*dx, t) : Result<AdValue>(t));
  }
  if (!attr.singular_values) return TangentList{dx};
  // The singular values depend on A alone: a values-only SVD's rule, which
  // reads operand 0 and its tangent, not the results.
  std::optional<AdValue> ds;
  if (da) {
    LinalgAttributes values = attr;
    values.kind = LinalgOpKind::kSvd;
    values.svd_mode = SvdMode::kValuesOnly;
    TENFERRO_ASSIGN_OR_RETURN(TangentList t, linearize_svd(ctx, m, values));
    ds = t[0];
  }
  return TangentList{dx, ds};
}

Result<TangentList> linearize_matrix_norm(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue a = ctx.primal_operand(0), norm = ctx.primal_result(0);
  const AdValue da = *ctx.tangent(0);
  switch (attr.norm) {
    case NormOrder::kFrobenius: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue dn, two_norm_derivative(m, a, da, norm, /*matrix=*/true));
      return TangentList{dn};
    }
    case NormOrder::kNuclear:
    case NormOrder::kTwo:
    case NormOrder::kNegTwo: {
      TENFERRO_ASSIGN_OR_RETURN(auto svd, m.linalg(LinalgOp::svd(SvdMode::kThin), {a}));
      TENFERRO_ASSIGN_OR_RETURN(AdValue uh, m.adjoint(svd[0]));
      TENFERRO_ASSIGN_OR_RETURN(AdValue v, m.adjoint(svd[2]));
      TENFERRO_ASSIGN_OR_RETURN(AdValue da_v, m.matmul(da, v));
      TENFERRO_ASSIGN_OR_RETURN(AdValue inner, m.matmul(uh, da_v));
      TENFERRO_ASSIGN_OR_RETURN(AdValue diag, m.diagonal(inner));
      TENFERRO_ASSIGN_OR_RETURN(AdValue ds, m.real(diag));
      if (attr.norm == NormOrder::kNuclear) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.sum_last(ds));
        return TangentList{dn};
      }
      TENFERRO_ASSIGN_OR_RETURN(AdValue pick, m.one_hot_extreme(svd[1], attr.norm == NormOrder::kTwo));
      TENFERRO_ASSIGN_OR_RETURN(AdValue picked, m.mul(ds, pick));
      TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.sum_last(picked));
      return TangentList{dn};
    }
    default: {  // 1, -1 (columns), inf, -inf (rows): the extreme line's |.| sum
      const bool by_column = attr.norm == NormOrder::kOne || attr.norm == NormOrder::kNegOne;
      const bool largest = attr.norm == NormOrder::kOne || attr.norm == NormOrder::kInf;
      TENFERRO_ASSIGN_OR_RETURN(AdValue mag, m.abs(a));
      TENFERRO_ASSIGN_OR_RETURN(AdValue sums, by_column ? m.sum_rows(mag) : m.sum_last(mag));
      TENFERRO_ASSIGN_OR_RETURN(AdValue pick, m.one_hot_extreme(sums, largest));
      TENFERRO_ASSIGN_OR_RETURN(AdValue d_abs, abs_derivative(m, a, da));
      TENFERRO_ASSIGN_OR_RETURN(AdValue d_sums, by_column ? m.sum_rows(d_abs) : m.sum_last(d_abs));
      TENFERRO_ASSIGN_OR_RETURN(AdValue picked, m.mul(d_sums, pick));
      TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.sum_last(picked));
      return TangentList{dn};
    }
  }
}

Result<TangentList> linearize_vector_norm(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue x = ctx.primal_operand(0), norm = ctx.primal_result(0);
  const AdValue dx = *ctx.tangent(0);
  if (attr.norm == NormOrder::kP && attr.p == 0.0) return TangentList{std::nullopt};  // a count
  if (attr.norm == NormOrder::kP && attr.p == 2.0) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue dn, two_norm_derivative(m, x, dx, norm, /*matrix=*/false));
    return TangentList{dn};
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue d_abs, abs_derivative(m, x, dx));
  if (attr.norm == NormOrder::kInf || attr.norm == NormOrder::kNegInf) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue mag, m.abs(x));
    TENFERRO_ASSIGN_OR_RETURN(AdValue pick, m.one_hot_extreme(mag, attr.norm == NormOrder::kInf));
    TENFERRO_ASSIGN_OR_RETURN(AdValue picked, m.mul(d_abs, pick));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.sum_last(picked));
    return TangentList{dn};
  }
  if (attr.p == 1.0) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.sum_last(d_abs));
    return TangentList{dn};
  }
  // d ||x||_p = sum |x|^(p-1) d|x| / ||x||^(p-1). For p < 1, |0|^(p-1) is
  // inf: an entry x_i = 0 contributes 0 (as torch), not inf * 0.
  TENFERRO_ASSIGN_OR_RETURN(AdValue mag, m.abs(x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue exponent, m.full_like(mag, attr.p - 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue weight, m.builder().emit(program::CoreSemanticOp::kPow, {mag, exponent}));
  if (attr.p < 1.0) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue zero, m.full_like(mag, 0.0));
    TENFERRO_ASSIGN_OR_RETURN(AdValue at_zero, m.compare(ComparisonDirection::kEq, mag, zero));
    TENFERRO_ASSIGN_OR_RETURN(weight, m.select(at_zero, zero, weight));
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue weighted, m.mul(weight, d_abs));
  TENFERRO_ASSIGN_OR_RETURN(AdValue num, m.sum_last(weighted));
  TENFERRO_ASSIGN_OR_RETURN(AdValue norm_exp, m.full_like(norm, attr.p - 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue den_raw, m.builder().emit(program::CoreSemanticOp::kPow, {norm, norm_exp}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue den, nonzero(m, den_raw));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dn, m.div(num, den));
  return TangentList{dn};
}

}  // namespace internal

namespace {

using internal::MatrixAd;

Error contract(std::string_view what) {
  return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile, "linalg AD rule: {}", what);
}

class LinalgAdRule final : public ad::ExtensionAdRule {
 public:
  std::string_view family_id() const noexcept override { return kLinalgFamilyId; }

  Result<ad::TangentList> linearize(ad::LinearizeContext& ctx) const override {
    const auto& op = static_cast<const LinalgOp&>(ctx.op());
    const LinalgAttributes& a = op.attributes();
    bool any = false;
    for (std::size_t i = 0; i < ctx.num_operands(); ++i) any = any || ctx.tangent(i).has_value();
    if (!any) return ad::TangentList(ctx.num_results(), std::nullopt);
    MatrixAd m(ctx.builder());
    switch (a.kind) {
      case LinalgOpKind::kSvd:
        return internal::linearize_svd(ctx, m, a);
      case LinalgOpKind::kQr:
        return internal::linearize_qr(ctx, m, a);
      case LinalgOpKind::kEigh:
        return internal::linearize_eigh(ctx, m, a);
      case LinalgOpKind::kEig:
        return internal::linearize_eig(ctx, m, a);
      case LinalgOpKind::kCholesky:
        return internal::linearize_cholesky(ctx, m);
      case LinalgOpKind::kLu:
        return internal::linearize_lu(ctx, m);
      case LinalgOpKind::kSolve:
        return internal::linearize_solve(ctx, m);
      case LinalgOpKind::kTriangularSolve:
        return internal::linearize_triangular_solve(ctx, m, a);
      case LinalgOpKind::kInv:
        return internal::linearize_inv(ctx, m);
      case LinalgOpKind::kDet:
        return internal::linearize_det(ctx, m, /*log=*/false);
      case LinalgOpKind::kSlogdet:
        return internal::linearize_det(ctx, m, /*log=*/true);
      case LinalgOpKind::kLstsq:
        return internal::linearize_lstsq(ctx, m, a);
      case LinalgOpKind::kPinv:
        return internal::linearize_pinv(ctx, m, a);
      case LinalgOpKind::kMatrixNorm:
        return internal::linearize_matrix_norm(ctx, m, a);
      case LinalgOpKind::kVectorNorm:
        return internal::linearize_vector_norm(ctx, m, a);
    }
    return contract("unknown linalg operation");
  }

  // Note [Values-only decompositions under AD]
  // The derivative of a values-only svd / eigh / eig needs the vectors. A
  // differentiated node of exact shape is therefore expanded into the
  // decomposition with vectors, of which it returns the values: the primal
  // pass computes the vectors once and the linearization reads them (as
  // PyTorch's svdvals / eigvalsh do under autograd). Without the expansion
  // (symbolic shapes, AdContextOptions::expand_nodes off) the linearization
  // computes them again, so value_and_grad of sum(svdvals(A)) ran two SVDs:
  // 1.34-1.51x PyTorch's time at n = 64-256 (the AD audit of 2026-12-07).
  Result<std::shared_ptr<const program::SemanticProgram>> expansion(
      const program::ExtensionOp& ext, std::span<const ValueMetadata> operands) const override {
    std::shared_ptr<const program::SemanticProgram> none;
    LinalgAttributes with_vectors = static_cast<const LinalgOp&>(ext).attributes();
    std::size_t values = 0;  // the values' result index in the op with vectors
    if (with_vectors.kind == LinalgOpKind::kSvd && with_vectors.svd_mode == SvdMode::kValuesOnly) {
      with_vectors.svd_mode = SvdMode::kThin;
      values = 1;
    } else if ((with_vectors.kind == LinalgOpKind::kEigh || with_vectors.kind == LinalgOpKind::kEig) &&
               !with_vectors.compute_vectors) {
      with_vectors.compute_vectors = true;
    } else {
      return none;
    }
    if (operands.size() != 1 || !program::exact_shape(operands[0].shape)) return none;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const LinalgOp> op, LinalgOp::create(with_vectors));
    program::ProgramBuilder b;
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue a, b.add_input(operands[0].dtype, operands[0].shape.span()));
    TENFERRO_ASSIGN_OR_RETURN(auto results, b.emit_extension(op, {a}));
    TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram fragment, b.freeze({results[values]}));
    return fragment.program;
  }

  // The linearizations emit linear linalg nodes only as solve / triangular
  // solve in their right-hand side: X = op(A)⁻¹ B has the adjoint
  // ct_B = op(A)⁻ᴴ ct_X.
  Result<ad::CotangentList> transpose(ad::TransposeContext& ctx) const override {
    const auto& op = static_cast<const LinalgOp&>(ctx.op());
    const LinalgAttributes& a = op.attributes();
    if ((a.kind != LinalgOpKind::kSolve && a.kind != LinalgOpKind::kTriangularSolve) || ctx.num_operands() != 2 ||
        ctx.is_linear_operand(0) || !ctx.is_linear_operand(1)) {
      return contract(fmt::format("expected a solve linear in its right-hand side only, found {}", op.describe()));
    }
    const std::optional<ad::AdValue> ct = ctx.cotangent(0);
    if (!ct) return ad::CotangentList{std::nullopt, std::nullopt};
    MatrixAd m(ctx.builder());
    const ad::AdValue matrix = ctx.primal_operand(0);
    SmallVector<ad::AdValue, 2> out;
    if (a.kind == LinalgOpKind::kSolve) {
      TENFERRO_ASSIGN_OR_RETURN(ad::AdValue ah, m.adjoint(matrix));
      TENFERRO_ASSIGN_OR_RETURN(out, m.linalg(LinalgOp::solve(), {ah, *ct}));
    } else if (a.transpose == TriangularTranspose::kNone) {
      TENFERRO_ASSIGN_OR_RETURN(
          out,
          m.linalg(LinalgOp::triangular_solve(a.lower, a.unit_diagonal, TriangularTranspose::kAdjoint), {matrix, *ct}));
    } else {
      // op = transpose: (Tᵀ)⁻ᴴ = conj(T)⁻¹; op = adjoint: (Tᴴ)⁻ᴴ = T⁻¹.
      ad::AdValue t = matrix;
      if (a.transpose == TriangularTranspose::kTranspose) {
        TENFERRO_ASSIGN_OR_RETURN(t, m.conj(matrix));
      }
      TENFERRO_ASSIGN_OR_RETURN(out, m.linalg(LinalgOp::triangular_solve(a.lower, a.unit_diagonal), {t, *ct}));
    }
    return ad::CotangentList{std::nullopt, out[0]};
  }
};

}  // namespace

std::shared_ptr<const ad::ExtensionAdRule> make_linalg_ad_rule() { return std::make_shared<LinalgAdRule>(); }

Status install_linalg_ad_rules(ad::AdContext& context) { return context.install_rule(make_linalg_ad_rule()); }

}  // namespace tenferro::linalg
