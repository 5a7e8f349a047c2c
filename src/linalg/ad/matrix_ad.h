// Internal: batched matrix algebra over ad::AdBuilder for the linalg AD
// rules. Every matrix is [..., rows, cols] (leading batch axes), every
// vector [..., n]; extents may be symbolic. Each helper emits core ops (or a
// linalg op) through the rule's builder, so linearity tracking, metadata
// inference and provenance are the AD component's.
#pragma once

#include <cstdint>
#include <optional>

#include "tenferro/ad/ad_rule.h"
#include "tenferro/linalg/linalg_op.h"

namespace tenferro::linalg::internal {

using ad::AdBuilder;
using ad::AdValue;

/// Which entries of a square or rectangular matrix a mask keeps.
enum class Triangle : std::uint8_t { kDiagonal, kLower, kStrictLower, kUpper, kStrictUpper };

class MatrixAd {
 public:
  explicit MatrixAd(AdBuilder& builder) : b_(builder) {}

  AdBuilder& builder() noexcept { return b_; }
  program::ValueMetadata meta(AdValue v) const { return b_.metadata(v); }
  std::int64_t rank(AdValue v) const { return meta(v).rank(); }
  DType dtype(AdValue v) const { return meta(v).dtype; }
  bool complex(AdValue v) const { return is_complex(dtype(v)); }
  /// Extent of axis `axis` counted from the end (1 = last).
  program::SymbolicExtent extent_from_end(AdValue v, std::int64_t axis) const;

  // --- elementwise ---
  Result<AdValue> add(AdValue a, AdValue b) { return op2(program::CoreSemanticOp::kAdd, a, b); }
  Result<AdValue> sub(AdValue a, AdValue b) { return op2(program::CoreSemanticOp::kSub, a, b); }
  Result<AdValue> mul(AdValue a, AdValue b) { return op2(program::CoreSemanticOp::kMul, a, b); }
  Result<AdValue> div(AdValue a, AdValue b) { return op2(program::CoreSemanticOp::kDiv, a, b); }
  Result<AdValue> neg(AdValue a) { return op1(program::CoreSemanticOp::kNeg, a); }
  /// conj(a); `a` itself for a real dtype.
  Result<AdValue> conj(AdValue a);
  /// real(a) / imag(a) in the real dtype.
  Result<AdValue> real(AdValue a) { return op1(program::CoreSemanticOp::kReal, a); }
  Result<AdValue> imag(AdValue a) { return op1(program::CoreSemanticOp::kImag, a); }
  Result<AdValue> abs(AdValue a) { return op1(program::CoreSemanticOp::kAbs, a); }
  /// `a` converted to `dtype` (itself when it already has it).
  Result<AdValue> to(AdValue a, DType dtype);
  /// i * x for a real x, as the complex dtype of x (linear in x).
  Result<AdValue> times_i(AdValue x);
  /// x * value (a constant of x's dtype).
  Result<AdValue> scale(AdValue x, double value);
  /// A constant like `like` filled with `value`.
  Result<AdValue> full_like(AdValue like, double value);
  /// on_true where pred, else on_false.
  Result<AdValue> select(AdValue pred, AdValue on_true, AdValue on_false);
  Result<AdValue> compare(program::ComparisonDirection direction, AdValue a, AdValue b);

  // --- matrices ---
  /// Batched a @ b.
  Result<AdValue> matmul(AdValue a, AdValue b);
  /// Swaps the last two axes.
  Result<AdValue> transpose(AdValue a);
  /// conj(transpose(a)).
  Result<AdValue> adjoint(AdValue a);
  /// A 0/1 mask of `like`'s shape and dtype keeping `triangle`.
  Result<AdValue> mask(AdValue like, Triangle triangle);
  /// a with everything outside `triangle` zeroed.
  Result<AdValue> keep(AdValue a, Triangle triangle);
  /// The identity of `like`'s shape (square) and dtype.
  Result<AdValue> identity(AdValue like) { return mask(like, Triangle::kDiagonal); }
  /// [..., n, n] -> [..., n].
  Result<AdValue> diagonal(AdValue a);
  /// [..., n, n] -> [...].
  Result<AdValue> trace(AdValue a);
  /// Sum over the last two axes: [..., m, n] -> [...].
  Result<AdValue> sum_matrix(AdValue a);
  /// Sum over axis rank-2 (rows): [..., m, n] -> [..., n].
  Result<AdValue> sum_rows(AdValue a);
  /// Sum over the last axis.
  Result<AdValue> sum_last(AdValue a);
  /// v [..., n] as the rows of `like` [..., m, n] (every row is v).
  Result<AdValue> as_rows(AdValue v, AdValue like);
  /// v [..., m] as the columns of `like` [..., m, n] (every column is v).
  Result<AdValue> as_columns(AdValue v, AdValue like);
  /// Broadcasts a batch scalar [...] to `like`'s shape.
  Result<AdValue> broadcast_batch(AdValue s, AdValue like);
  /// Columns [begin, end) / rows [begin, end) (exact extents required).
  Result<AdValue> columns(AdValue a, std::int64_t begin, std::int64_t end);
  Result<AdValue> rows(AdValue a, std::int64_t begin, std::int64_t end);
  Result<AdValue> concat_columns(AdValue a, AdValue b);
  Result<AdValue> concat_rows(AdValue a, AdValue b);

  // --- coefficients of spectral derivatives ---
  /// F[..., i, j] = 1 / (x_j - x_i) for i != j outside degenerate pairs,
  /// 0 otherwise, in the dtype of x (real or complex) [..., n, n]. A pair is
  /// degenerate when |x_i - x_j| <= tol * max(1, max_k |x_k|) (Note [Linalg
  /// AD degeneracy] in docs/linalg.md).
  Result<AdValue> inverse_gaps(AdValue x, double tol);
  /// F[..., i, j] = 1 / (x_j + x_i) for i != j where |x_i + x_j| > tol *
  /// max(1, max_k |x_k|), 0 otherwise (Note [SVD derivative terms]).
  Result<AdValue> inverse_sums(AdValue x, double tol);
  /// 1/x where |x| > tol * max_k |x_k|, 0 elsewhere (x real, [..., n]).
  Result<AdValue> safe_reciprocal(AdValue x, double tol);
  /// A real 0/1 mask [..., n, k] with one 1 per column of `v` at its gauge
  /// pivot (Note [Linalg gauge convention]).
  Result<AdValue> pivot_mask(AdValue v);
  /// The tangent of the gauge-fixed columns of `v` (pivot real positive)
  /// from a tangent `dv` in any gauge: dv - i v diag(Im(dv[p_j, j]) / v[p_j, j]).
  /// `dv` unchanged for real dtypes.
  Result<AdValue> fix_column_gauge(AdValue v, AdValue dv);
  /// The i·dθ [..., k] of fix_column_gauge (complex v only).
  Result<AdValue> gauge_rotation(AdValue v, AdValue dv);
  /// dv - v diag(rotation).
  Result<AdValue> rotate_columns(AdValue v, AdValue dv, AdValue rotation);
  /// P [..., m, m] with P[i, j] = (permutation[i] == j), in `dtype`.
  Result<AdValue> permutation_matrix(AdValue permutation, DType dtype);
  /// Zeros (a linear zero in a linearize rule) / a constant of `dtype` and `shape`.
  Result<AdValue> zeros(DType dtype, const program::SymbolicShape& shape);
  Result<AdValue> constant(double value, DType dtype, const program::SymbolicShape& shape);
  /// One-hot [..., n] (x's real dtype) at the first argmax (or argmin) of x.
  Result<AdValue> one_hot_extreme(AdValue x, bool largest);

  /// Emits a linalg op on `operands` (its results).
  Result<SmallVector<AdValue, 2>> linalg(std::shared_ptr<const LinalgOp> op, std::initializer_list<AdValue> operands);

 private:
  Result<AdValue> op1(program::CoreSemanticOp op, AdValue a) { return b_.emit(op, {a}); }
  Result<AdValue> op2(program::CoreSemanticOp op, AdValue a, AdValue b) { return b_.emit(op, {a, b}); }
  Result<AdValue> iota(const program::SymbolicShape& shape, std::int64_t axis);
  Result<AdValue> pair_reciprocals(AdValue x, double tol, bool sums);
  AdBuilder& b_;
};

/// sqrt(eps) of `dtype`'s real type: the relative degeneracy tolerance.
double degeneracy_tolerance(DType dtype) noexcept;

}  // namespace tenferro::linalg::internal
