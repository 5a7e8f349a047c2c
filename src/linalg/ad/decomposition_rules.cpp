// Linearize rules of the decompositions: svd (full, thin, values-only), qr
// (reduced, complete, any m, n), eigh, eig, cholesky and lu. Formulas and
// gauges: "Automatic differentiation" in docs/linalg.md.
#include <tuple>

#include "linalg/ad/linalg_ad_rules.h"

namespace tenferro::linalg::internal {

namespace {

using program::SymbolicExtent;

// Exact (m, n) of the last two axes, when both are known.
std::optional<std::pair<std::int64_t, std::int64_t>> exact_matrix(MatrixAd& m, AdValue a) {
  const auto rows = m.extent_from_end(a, 2).exact_value();
  const auto cols = m.extent_from_end(a, 1).exact_value();
  if (!rows || !cols) return std::nullopt;
  return std::pair{*rows, *cols};
}

Error needs_exact_shape(std::string_view op) {
  return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile,
                    "linalg AD: the derivative of a non-square {} needs exact matrix extents", op);
}

// Triangular solve helpers (left side).
Result<AdValue> tri_solve(MatrixAd& m, AdValue a, AdValue b, bool lower, bool unit,
                          TriangularTranspose t = TriangularTranspose::kNone) {
  TENFERRO_ASSIGN_OR_RETURN(auto out, m.linalg(LinalgOp::triangular_solve(lower, unit, t), {a, b}));
  return first(out);
}
// x U⁻¹ for the upper triangle of `u`: (U⁻ᵀ xᵀ)ᵀ.
Result<AdValue> right_solve_upper(MatrixAd& m, AdValue u, AdValue x) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue xt, m.transpose(x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue z, tri_solve(m, u, xt, /*lower=*/false, false, TriangularTranspose::kTranspose));
  return m.transpose(z);
}

// Reduced QR derivative for m >= n (q: m x n, r: n x n upper, real
// non-negative diagonal).
Result<std::pair<AdValue, AdValue>> qr_tall(MatrixAd& m, AdValue da, AdValue q, AdValue r) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue dx_rinv, right_solve_upper(m, r, da));
  TENFERRO_ASSIGN_OR_RETURN(AdValue qh, m.adjoint(q));
  TENFERRO_ASSIGN_OR_RETURN(AdValue qt, m.matmul(qh, dx_rinv));
  TENFERRO_ASSIGN_OR_RETURN(AdValue low, m.keep(qt, Triangle::kStrictLower));
  TENFERRO_ASSIGN_OR_RETURN(AdValue low_h, m.adjoint(low));
  TENFERRO_ASSIGN_OR_RETURN(AdValue omega, m.sub(low, low_h));
  if (m.complex(qt)) {  // keep diag(R) real: the imaginary diagonal goes to Q
    TENFERRO_ASSIGN_OR_RETURN(AdValue diag, m.keep(qt, Triangle::kDiagonal));
    TENFERRO_ASSIGN_OR_RETURN(AdValue diag_im, m.imag(diag));
    TENFERRO_ASSIGN_OR_RETURN(AdValue i_diag, m.times_i(diag_im));
    TENFERRO_ASSIGN_OR_RETURN(omega, m.add(omega, i_diag));
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue q_omega, m.matmul(q, omega));
  TENFERRO_ASSIGN_OR_RETURN(AdValue q_qt, m.matmul(q, qt));
  TENFERRO_ASSIGN_OR_RETURN(AdValue residual, m.sub(dx_rinv, q_qt));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dq, m.add(q_omega, residual));
  TENFERRO_ASSIGN_OR_RETURN(AdValue qt_minus, m.sub(qt, omega));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dr, m.matmul(qt_minus, r));
  return std::pair{dq, dr};
}

// dU2 of an orthonormal completion in the horizontal gauge (U2ᴴ dU2 = 0):
// -U1 (dU1ᴴ U2), then its own column gauge.
Result<AdValue> completion_tangent(MatrixAd& m, AdValue u1, AdValue du1, AdValue u2) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue du1h, m.adjoint(du1));
  TENFERRO_ASSIGN_OR_RETURN(AdValue c, m.matmul(du1h, u2));
  TENFERRO_ASSIGN_OR_RETURN(AdValue u1c, m.matmul(u1, c));
  TENFERRO_ASSIGN_OR_RETURN(AdValue du2, m.neg(u1c));
  return m.fix_column_gauge(u2, du2);
}

}  // namespace

Result<AdValue> real_diagonal(MatrixAd& m, AdValue a) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue diag, m.keep(a, Triangle::kDiagonal));
  if (!m.complex(a)) return diag;
  TENFERRO_ASSIGN_OR_RETURN(AdValue diag_re, m.real(diag));
  return m.to(diag_re, m.dtype(a));
}

Result<AdValue> hermitian_from_lower(MatrixAd& m, AdValue a) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue strict, m.keep(a, Triangle::kStrictLower));
  TENFERRO_ASSIGN_OR_RETURN(AdValue strict_h, m.adjoint(strict));
  TENFERRO_ASSIGN_OR_RETURN(AdValue diag, real_diagonal(m, a));
  TENFERRO_ASSIGN_OR_RETURN(AdValue off, m.add(strict, strict_h));
  return m.add(off, diag);
}

Result<TangentList> linearize_svd(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue a = ctx.primal_operand(0);
  const AdValue da = *ctx.tangent(0);
  const DType dtype = m.dtype(a);
  const double tol = degeneracy_tolerance(dtype);
  AdValue u, s, vh, u_full, vh_full;
  std::int64_t mm = 0, nn = 0, k = 0;  // set for a full SVD of a non-square matrix
  if (attr.svd_mode == SvdMode::kValuesOnly) {
    // Values-only needs the vectors: a thin SVD of the primal (derivative
    // programs only).
    TENFERRO_ASSIGN_OR_RETURN(auto thin, m.linalg(LinalgOp::svd(SvdMode::kThin), {a}));
    u = thin[0], s = thin[1], vh = thin[2];
  } else {
    u = ctx.primal_result(0), s = ctx.primal_result(1), vh = ctx.primal_result(2);
    if (attr.svd_mode == SvdMode::kFull && m.extent_from_end(a, 2) != m.extent_from_end(a, 1)) {
      // The thin SVD is the full one's first k columns of U and rows of Vᴴ.
      const auto shape = exact_matrix(m, a);
      if (!shape) return needs_exact_shape("full SVD");
      std::tie(mm, nn) = *shape;
      k = std::min(mm, nn);
      u_full = u, vh_full = vh;
      TENFERRO_ASSIGN_OR_RETURN(u, m.columns(u_full, 0, k));
      TENFERRO_ASSIGN_OR_RETURN(vh, m.rows(vh_full, 0, k));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue v, m.adjoint(vh));
  TENFERRO_ASSIGN_OR_RETURN(AdValue uh, m.adjoint(u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue da_v, m.matmul(da, v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ds_mat, m.matmul(uh, da_v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ds_diag, m.diagonal(ds_mat));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ds, m.real(ds_diag));
  if (attr.svd_mode == SvdMode::kValuesOnly) return TangentList{ds};

  // Thin-part tangents in the gauge Im diag(Vᴴ dV) = 0, split into the
  // Hermitian and skew parts of P = Uᴴ dA V (Note [SVD derivative terms]).
  TENFERRO_ASSIGN_OR_RETURN(AdValue g_real, m.inverse_gaps(s, tol));
  TENFERRO_ASSIGN_OR_RETURN(AdValue h_real, m.inverse_sums(s, tol));
  TENFERRO_ASSIGN_OR_RETURN(AdValue g, m.to(g_real, dtype));
  TENFERRO_ASSIGN_OR_RETURN(AdValue h, m.to(h_real, dtype));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ds_h, m.adjoint(ds_mat));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sym, m.add(ds_mat, ds_h));   // 2 (P + Pᴴ) / 2
  TENFERRO_ASSIGN_OR_RETURN(AdValue skew, m.sub(ds_mat, ds_h));  // 2 (P - Pᴴ) / 2
  TENFERRO_ASSIGN_OR_RETURN(AdValue sym_g2, m.mul(g, sym));
  TENFERRO_ASSIGN_OR_RETURN(AdValue skew_h2, m.mul(h, skew));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sym_g, m.scale(sym_g2, 0.5));
  TENFERRO_ASSIGN_OR_RETURN(AdValue skew_h, m.scale(skew_h2, 0.5));
  TENFERRO_ASSIGN_OR_RETURN(AdValue inner_u, m.add(sym_g, skew_h));
  TENFERRO_ASSIGN_OR_RETURN(AdValue inner_v, m.sub(sym_g, skew_h));
  TENFERRO_ASSIGN_OR_RETURN(AdValue s_inv_real, m.safe_reciprocal(s, tol));
  TENFERRO_ASSIGN_OR_RETURN(AdValue s_inv, m.to(s_inv_real, dtype));
  if (m.complex(a)) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue skew_diag, m.keep(skew, Triangle::kDiagonal));
    TENFERRO_ASSIGN_OR_RETURN(AdValue s_inv_cols, m.as_columns(s_inv, skew_diag));
    TENFERRO_ASSIGN_OR_RETURN(AdValue scaled, m.mul(skew_diag, s_inv_cols));
    TENFERRO_ASSIGN_OR_RETURN(AdValue half, m.scale(scaled, 0.5));
    TENFERRO_ASSIGN_OR_RETURN(inner_u, m.add(inner_u, half));
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue du, m.matmul(u, inner_u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dv, m.matmul(v, inner_v));
  // Components outside span(U) / span(V); zero when U / V is square.
  TENFERRO_ASSIGN_OR_RETURN(AdValue u_ds, m.matmul(u, ds_mat));
  TENFERRO_ASSIGN_OR_RETURN(AdValue out_u, m.sub(da_v, u_ds));
  TENFERRO_ASSIGN_OR_RETURN(AdValue s_inv_rows_u, m.as_rows(s_inv, out_u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue out_u_scaled, m.mul(out_u, s_inv_rows_u));
  TENFERRO_ASSIGN_OR_RETURN(du, m.add(du, out_u_scaled));
  TENFERRO_ASSIGN_OR_RETURN(AdValue da_h, m.adjoint(da));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah_u, m.matmul(da_h, u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ds_h2, m.adjoint(ds_mat));
  TENFERRO_ASSIGN_OR_RETURN(AdValue v_dsh, m.matmul(v, ds_h2));
  TENFERRO_ASSIGN_OR_RETURN(AdValue out_v, m.sub(dah_u, v_dsh));
  TENFERRO_ASSIGN_OR_RETURN(AdValue s_inv_rows_v, m.as_rows(s_inv, out_v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue out_v_scaled, m.mul(out_v, s_inv_rows_v));
  TENFERRO_ASSIGN_OR_RETURN(dv, m.add(dv, out_v_scaled));
  // The engine's gauge: U's pivots real positive, V's columns rotated alike.
  if (m.complex(a)) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue rotation, m.gauge_rotation(u, du));
    TENFERRO_ASSIGN_OR_RETURN(du, m.rotate_columns(u, du, rotation));
    TENFERRO_ASSIGN_OR_RETURN(dv, m.rotate_columns(v, dv, rotation));
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue dvh, m.adjoint(dv));
  // Full mode of a non-square matrix: the completions of U and V in the
  // horizontal gauge.
  if (mm > k) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue u2, m.columns(u_full, k, mm));
    TENFERRO_ASSIGN_OR_RETURN(AdValue du2, completion_tangent(m, u, du, u2));
    TENFERRO_ASSIGN_OR_RETURN(du, m.concat_columns(du, du2));
  }
  if (nn > k) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue vh2, m.rows(vh_full, k, nn));
    TENFERRO_ASSIGN_OR_RETURN(AdValue v2, m.adjoint(vh2));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dv2, completion_tangent(m, v, dv, v2));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dvh2, m.adjoint(dv2));
    TENFERRO_ASSIGN_OR_RETURN(dvh, m.concat_rows(dvh, dvh2));
  }
  return TangentList{du, ds, dvh};
}

Result<TangentList> linearize_qr(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue a = ctx.primal_operand(0);
  const AdValue da = *ctx.tangent(0);
  const AdValue q = ctx.primal_result(0), r = ctx.primal_result(1);
  if (m.extent_from_end(a, 2) == m.extent_from_end(a, 1)) {
    TENFERRO_ASSIGN_OR_RETURN(auto d, qr_tall(m, da, q, r));
    return TangentList{d.first, d.second};
  }
  const auto shape = exact_matrix(m, a);
  if (!shape) return needs_exact_shape("QR");
  const auto [mm, nn] = *shape;
  if (mm > nn) {
    if (attr.qr_mode == QrMode::kReduced) {
      TENFERRO_ASSIGN_OR_RETURN(auto d, qr_tall(m, da, q, r));
      return TangentList{d.first, d.second};
    }
    // Complete: Q = [Q1 Q2], R = [R1; 0].
    TENFERRO_ASSIGN_OR_RETURN(AdValue q1, m.columns(q, 0, nn));
    TENFERRO_ASSIGN_OR_RETURN(AdValue q2, m.columns(q, nn, mm));
    TENFERRO_ASSIGN_OR_RETURN(AdValue r1, m.rows(r, 0, nn));
    TENFERRO_ASSIGN_OR_RETURN(auto d1, qr_tall(m, da, q1, r1));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dq2, completion_tangent(m, q1, d1.first, q2));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dq, m.concat_columns(d1.first, dq2));
    program::SymbolicShape zero_shape = m.meta(r).shape;
    zero_shape[zero_shape.size() - 2] = SymbolicExtent(mm - nn);
    TENFERRO_ASSIGN_OR_RETURN(AdValue zero_rows, m.zeros(m.dtype(r), zero_shape));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dr, m.concat_rows(d1.second, zero_rows));
    return TangentList{dq, dr};
  }
  // Wide (m < n): A = [X Y], Q R1 = X is a square QR and R2 = Qᴴ Y.
  TENFERRO_ASSIGN_OR_RETURN(AdValue y, m.columns(a, mm, nn));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dx, m.columns(da, 0, mm));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dy, m.columns(da, mm, nn));
  TENFERRO_ASSIGN_OR_RETURN(AdValue r1, m.columns(r, 0, mm));
  TENFERRO_ASSIGN_OR_RETURN(auto d1, qr_tall(m, dx, q, r1));
  TENFERRO_ASSIGN_OR_RETURN(AdValue qh, m.adjoint(q));
  TENFERRO_ASSIGN_OR_RETURN(AdValue qh_dy, m.matmul(qh, dy));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dqh, m.adjoint(d1.first));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dqh_y, m.matmul(dqh, y));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dr2, m.add(qh_dy, dqh_y));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dr, m.concat_columns(d1.second, dr2));
  return TangentList{d1.first, dr};
}

Result<TangentList> linearize_eigh(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue a = ctx.primal_operand(0);
  const AdValue w = ctx.primal_result(0);
  AdValue v;
  if (attr.compute_vectors) {
    v = ctx.primal_result(1);
  } else {
    TENFERRO_ASSIGN_OR_RETURN(auto full, m.linalg(LinalgOp::eigh(true), {a}));
    v = full[1];
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah, hermitian_from_lower(m, *ctx.tangent(0)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue vh, m.adjoint(v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah_v, m.matmul(dah, v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue inner, m.matmul(vh, dah_v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue diag, m.diagonal(inner));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dw, m.real(diag));
  if (!attr.compute_vectors) return TangentList{dw};
  TENFERRO_ASSIGN_OR_RETURN(AdValue f_real, m.inverse_gaps(w, degeneracy_tolerance(m.dtype(a))));
  TENFERRO_ASSIGN_OR_RETURN(AdValue f, m.to(f_real, m.dtype(a)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue rotated, m.mul(f, inner));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dv, m.matmul(v, rotated));
  TENFERRO_ASSIGN_OR_RETURN(dv, m.fix_column_gauge(v, dv));
  return TangentList{dw, dv};
}

Result<TangentList> linearize_eig(LinearizeContext& ctx, MatrixAd& m, const LinalgAttributes& attr) {
  const AdValue a = ctx.primal_operand(0);
  const AdValue w = ctx.primal_result(0);
  const DType c = m.dtype(w);
  AdValue v;
  if (attr.compute_vectors) {
    v = ctx.primal_result(1);
  } else {
    TENFERRO_ASSIGN_OR_RETURN(auto full, m.linalg(LinalgOp::eig(true), {a}));
    v = full[1];
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue da, m.to(*ctx.tangent(0), c));
  TENFERRO_ASSIGN_OR_RETURN(AdValue da_v, m.matmul(da, v));
  TENFERRO_ASSIGN_OR_RETURN(auto solved, m.linalg(LinalgOp::solve(), {v, da_v}));  // V⁻¹ dA V
  const AdValue inner = solved[0];
  TENFERRO_ASSIGN_OR_RETURN(AdValue dw, m.diagonal(inner));
  if (!attr.compute_vectors) return TangentList{dw};
  TENFERRO_ASSIGN_OR_RETURN(AdValue f, m.inverse_gaps(w, degeneracy_tolerance(c)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue rotated, m.mul(f, inner));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dv, m.matmul(v, rotated));
  // Unit columns: remove Re(vᴴ dv) v.
  TENFERRO_ASSIGN_OR_RETURN(AdValue vc, m.conj(v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue overlap, m.mul(vc, dv));
  TENFERRO_ASSIGN_OR_RETURN(AdValue overlap_sum, m.sum_rows(overlap));
  TENFERRO_ASSIGN_OR_RETURN(AdValue overlap_re, m.real(overlap_sum));
  TENFERRO_ASSIGN_OR_RETURN(AdValue stretch, m.to(overlap_re, c));
  TENFERRO_ASSIGN_OR_RETURN(dv, m.rotate_columns(v, dv, stretch));
  TENFERRO_ASSIGN_OR_RETURN(dv, m.fix_column_gauge(v, dv));
  return TangentList{dw, dv};
}

Result<TangentList> linearize_cholesky(LinearizeContext& ctx, MatrixAd& m) {
  const AdValue l = ctx.primal_result(0);
  TENFERRO_ASSIGN_OR_RETURN(AdValue dah, hermitian_from_lower(m, *ctx.tangent(0)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue y, tri_solve(m, l, dah, /*lower=*/true, false));
  TENFERRO_ASSIGN_OR_RETURN(AdValue yh, m.adjoint(y));
  TENFERRO_ASSIGN_OR_RETURN(AdValue x, tri_solve(m, l, yh, /*lower=*/true, false));  // L⁻¹ dA L⁻ᴴ
  // Φ(X): strict lower triangle plus half the real diagonal (X is Hermitian
  // in exact arithmetic; dropping the rounding-level imaginary diagonal keeps
  // diag(L) real, as the forward op does).
  TENFERRO_ASSIGN_OR_RETURN(AdValue strict, m.keep(x, Triangle::kStrictLower));
  TENFERRO_ASSIGN_OR_RETURN(AdValue diag, real_diagonal(m, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue half_diag, m.scale(diag, 0.5));
  TENFERRO_ASSIGN_OR_RETURN(AdValue phi, m.add(strict, half_diag));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dl, m.matmul(l, phi));
  return TangentList{dl};
}

Result<TangentList> linearize_lu(LinearizeContext& ctx, MatrixAd& m) {
  const AdValue a = ctx.primal_operand(0);
  const AdValue lu = ctx.primal_result(0);
  const DType dtype = m.dtype(a);
  TENFERRO_ASSIGN_OR_RETURN(AdValue p, m.permutation_matrix(ctx.primal_result(2), dtype));
  TENFERRO_ASSIGN_OR_RETURN(AdValue x, m.matmul(p, *ctx.tangent(0)));  // P dA
  AdValue l, u;
  if (m.extent_from_end(a, 2) == m.extent_from_end(a, 1)) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue strict, m.keep(lu, Triangle::kStrictLower));
    TENFERRO_ASSIGN_OR_RETURN(AdValue eye, m.identity(lu));
    TENFERRO_ASSIGN_OR_RETURN(l, m.add(strict, eye));
    TENFERRO_ASSIGN_OR_RETURN(u, m.keep(lu, Triangle::kUpper));
  } else {
    const auto shape = exact_matrix(m, a);
    if (!shape) return needs_exact_shape("LU");
    const auto [mm, nn] = *shape;
    program::SymbolicShape batch = m.meta(a).shape;
    batch.resize(batch.size() - 2);
    const auto with = [&](std::int64_t r, std::int64_t c) {
      program::SymbolicShape s = batch;
      s.push_back(r);
      s.push_back(c);
      return s;
    };
    if (mm > nn) {  // L = [tril(LU, -1) | 0] + I (m x m), U = triu(LU[:n]) (n x n)
      TENFERRO_ASSIGN_OR_RETURN(AdValue strict, m.keep(lu, Triangle::kStrictLower));
      TENFERRO_ASSIGN_OR_RETURN(AdValue pad, m.constant(0.0, dtype, with(mm, mm - nn)));
      TENFERRO_ASSIGN_OR_RETURN(AdValue wide, m.concat_columns(strict, pad));
      TENFERRO_ASSIGN_OR_RETURN(AdValue eye, m.identity(wide));
      TENFERRO_ASSIGN_OR_RETURN(l, m.add(wide, eye));
      TENFERRO_ASSIGN_OR_RETURN(AdValue top, m.rows(lu, 0, nn));
      TENFERRO_ASSIGN_OR_RETURN(u, m.keep(top, Triangle::kUpper));
    } else {  // L = tril(LU[:, :m], -1) + I, U = [triu(LU); 0 I] (n x n)
      TENFERRO_ASSIGN_OR_RETURN(AdValue left, m.columns(lu, 0, mm));
      TENFERRO_ASSIGN_OR_RETURN(AdValue strict, m.keep(left, Triangle::kStrictLower));
      TENFERRO_ASSIGN_OR_RETURN(AdValue eye, m.identity(left));
      TENFERRO_ASSIGN_OR_RETURN(l, m.add(strict, eye));
      TENFERRO_ASSIGN_OR_RETURN(AdValue upper, m.keep(lu, Triangle::kUpper));
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, m.constant(0.0, dtype, with(nn - mm, mm)));
      TENFERRO_ASSIGN_OR_RETURN(AdValue square, m.constant(0.0, dtype, with(nn - mm, nn - mm)));
      TENFERRO_ASSIGN_OR_RETURN(AdValue eye2, m.identity(square));
      TENFERRO_ASSIGN_OR_RETURN(AdValue bottom, m.concat_columns(zero, eye2));
      TENFERRO_ASSIGN_OR_RETURN(u, m.concat_rows(upper, bottom));
    }
  }
  // L' = L tril(L⁻¹ P dA U⁻¹, -1), U' = triu(L⁻¹ P dA U⁻¹) U.
  TENFERRO_ASSIGN_OR_RETURN(AdValue la, tri_solve(m, l, x, /*lower=*/true, /*unit=*/true));
  TENFERRO_ASSIGN_OR_RETURN(AdValue lau, right_solve_upper(m, u, la));
  TENFERRO_ASSIGN_OR_RETURN(AdValue lau_lower, m.keep(lau, Triangle::kStrictLower));
  TENFERRO_ASSIGN_OR_RETURN(AdValue lau_upper, m.keep(lau, Triangle::kUpper));
  TENFERRO_ASSIGN_OR_RETURN(AdValue l_dot, m.matmul(l, lau_lower));
  TENFERRO_ASSIGN_OR_RETURN(AdValue u_dot, m.matmul(lau_upper, u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dlu, m.add(l_dot, u_dot));
  return TangentList{dlu, std::nullopt, std::nullopt};
}

}  // namespace tenferro::linalg::internal
