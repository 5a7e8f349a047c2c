// MatrixAd: batched matrix helpers over ad::AdBuilder (matrix_ad.h).
#include "linalg/ad/matrix_ad.h"

#include <cfloat>
#include <cmath>

namespace tenferro::linalg::internal {

namespace {

using program::CoreSemanticOp;
using program::SymbolicExtent;
using program::SymbolicShape;

Dims iota_dims(std::int64_t count, std::int64_t start = 0) {
  Dims d;
  for (std::int64_t i = 0; i < count; ++i) d.push_back(start + i);
  return d;
}

Error needs_exact(std::string_view what) {
  return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile,
                    "linalg AD: {} needs exact extents (a symbolic extent cannot be sliced)", what);
}

}  // namespace

double degeneracy_tolerance(DType dtype) noexcept {
  return std::sqrt(real_dtype(dtype) == DType::kFloat32 ? static_cast<double>(FLT_EPSILON) : DBL_EPSILON);
}

SymbolicExtent MatrixAd::extent_from_end(AdValue v, std::int64_t axis) const {
  const program::ValueMetadata m = meta(v);
  return m.shape[static_cast<std::size_t>(m.rank() - axis)];
}

Result<AdValue> MatrixAd::conj(AdValue a) { return complex(a) ? op1(CoreSemanticOp::kConj, a) : Result<AdValue>(a); }

Result<AdValue> MatrixAd::to(AdValue a, DType dtype) {
  if (this->dtype(a) == dtype) return a;
  return b_.emit(CoreSemanticOp::kConvert, {a}, program::ConvertAttributes{dtype});
}

Result<AdValue> MatrixAd::times_i(AdValue x) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, b_.is_linear(x) ? b_.zeros(meta(x)) : full_like(x, 0.0));
  return b_.emit(CoreSemanticOp::kComplex, {zero, x});
}

Result<AdValue> MatrixAd::full_like(AdValue like, double value) { return b_.full(Scalar::of(value), meta(like)); }

Result<AdValue> MatrixAd::scale(AdValue x, double value) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue c, full_like(x, value));
  return mul(x, c);
}

Result<AdValue> MatrixAd::select(AdValue pred, AdValue on_true, AdValue on_false) {
  return b_.emit(CoreSemanticOp::kSelect, {pred, on_true, on_false});
}

Result<AdValue> MatrixAd::compare(program::ComparisonDirection direction, AdValue a, AdValue b) {
  return b_.emit(CoreSemanticOp::kCompare, {a, b}, program::CompareAttributes{direction});
}

Result<AdValue> MatrixAd::matmul(AdValue a, AdValue b) {
  const std::int64_t r = rank(a);
  program::DotGeneralAttributes d{iota_dims(r - 2), iota_dims(r - 2), {r - 1}, {r - 2}};
  return b_.emit(CoreSemanticOp::kDotGeneral, {a, b}, d);
}

Result<AdValue> MatrixAd::transpose(AdValue a) {
  const std::int64_t r = rank(a);
  Dims perm = iota_dims(r - 2);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  return b_.emit(CoreSemanticOp::kTranspose, {a}, program::TransposeAttributes{perm});
}

Result<AdValue> MatrixAd::adjoint(AdValue a) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue t, transpose(a));
  return conj(t);
}

Result<AdValue> MatrixAd::iota(const SymbolicShape& shape, std::int64_t axis) {
  return b_.emit(CoreSemanticOp::kIota, std::span<const AdValue>(),
                 program::IotaAttributes{DType::kInt64, shape, axis});
}

Result<AdValue> MatrixAd::mask(AdValue like, Triangle triangle) {
  const program::ValueMetadata m = meta(like);
  const std::int64_t r = m.rank();
  TENFERRO_ASSIGN_OR_RETURN(AdValue rows, iota(m.shape, r - 2));
  TENFERRO_ASSIGN_OR_RETURN(AdValue cols, iota(m.shape, r - 1));
  using D = program::ComparisonDirection;
  const D direction = triangle == Triangle::kDiagonal      ? D::kEq
                      : triangle == Triangle::kLower       ? D::kLe
                      : triangle == Triangle::kStrictLower ? D::kLt
                      : triangle == Triangle::kUpper       ? D::kGe
                                                           : D::kGt;
  TENFERRO_ASSIGN_OR_RETURN(AdValue keep, compare(direction, cols, rows));  // column vs row index
  return to(keep, m.dtype);
}

Result<AdValue> MatrixAd::keep(AdValue a, Triangle triangle) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue m, mask(a, triangle));
  return mul(a, m);
}

Result<AdValue> MatrixAd::sum_matrix(AdValue a) {
  const std::int64_t r = rank(a);
  return b_.emit(CoreSemanticOp::kReduceSum, {a}, program::ReduceAttributes{{r - 2, r - 1}});
}

Result<AdValue> MatrixAd::sum_rows(AdValue a) {
  return b_.emit(CoreSemanticOp::kReduceSum, {a}, program::ReduceAttributes{{rank(a) - 2}});
}

Result<AdValue> MatrixAd::sum_last(AdValue a) {
  return b_.emit(CoreSemanticOp::kReduceSum, {a}, program::ReduceAttributes{{rank(a) - 1}});
}

Result<AdValue> MatrixAd::diagonal(AdValue a) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue d, keep(a, Triangle::kDiagonal));
  return sum_last(d);
}

Result<AdValue> MatrixAd::trace(AdValue a) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue d, diagonal(a));
  return sum_last(d);
}

Result<AdValue> MatrixAd::as_rows(AdValue v, AdValue like) {
  const program::ValueMetadata m = meta(like);
  Dims dims = iota_dims(m.rank() - 2);
  dims.push_back(m.rank() - 1);
  return b_.emit(CoreSemanticOp::kBroadcastInDim, {v}, program::BroadcastInDimAttributes{m.shape, dims});
}

Result<AdValue> MatrixAd::as_columns(AdValue v, AdValue like) {
  const program::ValueMetadata m = meta(like);
  Dims dims = iota_dims(m.rank() - 2);
  dims.push_back(m.rank() - 2);
  return b_.emit(CoreSemanticOp::kBroadcastInDim, {v}, program::BroadcastInDimAttributes{m.shape, dims});
}

Result<AdValue> MatrixAd::broadcast_batch(AdValue s, AdValue like) {
  const program::ValueMetadata m = meta(like);
  return b_.emit(CoreSemanticOp::kBroadcastInDim, {s}, program::BroadcastInDimAttributes{m.shape, iota_dims(rank(s))});
}

Result<AdValue> MatrixAd::columns(AdValue a, std::int64_t begin, std::int64_t end) {
  const std::optional<Dims> shape = program::exact_shape(meta(a).shape);
  if (!shape) return needs_exact("slicing columns");
  Dims start(shape->size(), 0), limit = *shape, stride(shape->size(), 1);
  start.back() = begin;
  limit.back() = end;
  return b_.emit(CoreSemanticOp::kSlice, {a}, program::SliceAttributes{start, limit, stride});
}

Result<AdValue> MatrixAd::rows(AdValue a, std::int64_t begin, std::int64_t end) {
  const std::optional<Dims> shape = program::exact_shape(meta(a).shape);
  if (!shape) return needs_exact("slicing rows");
  Dims start(shape->size(), 0), limit = *shape, stride(shape->size(), 1);
  start[shape->size() - 2] = begin;
  limit[shape->size() - 2] = end;
  return b_.emit(CoreSemanticOp::kSlice, {a}, program::SliceAttributes{start, limit, stride});
}

Result<AdValue> MatrixAd::concat_columns(AdValue a, AdValue b) {
  return b_.emit(CoreSemanticOp::kConcatenate, {a, b}, program::ConcatenateAttributes{rank(a) - 1});
}

Result<AdValue> MatrixAd::concat_rows(AdValue a, AdValue b) {
  return b_.emit(CoreSemanticOp::kConcatenate, {a, b}, program::ConcatenateAttributes{rank(a) - 2});
}

Result<AdValue> MatrixAd::inverse_gaps(AdValue x, double tol) { return pair_reciprocals(x, tol, /*sums=*/false); }

Result<AdValue> MatrixAd::inverse_sums(AdValue x, double tol) { return pair_reciprocals(x, tol, /*sums=*/true); }

Result<AdValue> MatrixAd::pair_reciprocals(AdValue x, double tol, bool sums) {
  using D = program::ComparisonDirection;
  // The [..., n, n] shape: x's shape with its last extent repeated.
  program::ValueMetadata square = meta(x);
  square.shape.push_back(square.shape.back());
  TENFERRO_ASSIGN_OR_RETURN(AdValue like, b_.full(Scalar::of(0.0), square));
  TENFERRO_ASSIGN_OR_RETURN(AdValue xj, as_rows(x, like));
  TENFERRO_ASSIGN_OR_RETURN(AdValue xi, as_columns(x, like));
  TENFERRO_ASSIGN_OR_RETURN(AdValue pair, sums ? add(xj, xi) : sub(xj, xi));
  TENFERRO_ASSIGN_OR_RETURN(AdValue size, abs(pair));
  TENFERRO_ASSIGN_OR_RETURN(AdValue magnitudes, abs(x));
  TENFERRO_ASSIGN_OR_RETURN(
      AdValue largest, b_.emit(CoreSemanticOp::kReduceMax, {magnitudes}, program::ReduceAttributes{{rank(x) - 1}}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one, full_like(largest, 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue scale_value, op2(CoreSemanticOp::kMax, largest, one));
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold, this->scale(scale_value, tol));
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold_b, broadcast_batch(threshold, size));
  TENFERRO_ASSIGN_OR_RETURN(AdValue small, compare(D::kLe, size, threshold_b));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ones, full_like(pair, 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zeros, full_like(pair, 0.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue safe, select(small, ones, pair));
  TENFERRO_ASSIGN_OR_RETURN(AdValue inverse, div(ones, safe));
  TENFERRO_ASSIGN_OR_RETURN(AdValue result, select(small, zeros, inverse));
  if (!sums) return result;  // the diagonal's gaps are 0, so it is zero already
  TENFERRO_ASSIGN_OR_RETURN(AdValue diagonal, identity(result));
  TENFERRO_ASSIGN_OR_RETURN(AdValue off_diagonal, sub(ones, diagonal));
  return mul(result, off_diagonal);
}

Result<AdValue> MatrixAd::safe_reciprocal(AdValue x, double tol) {
  using D = program::ComparisonDirection;
  TENFERRO_ASSIGN_OR_RETURN(AdValue magnitudes, abs(x));
  TENFERRO_ASSIGN_OR_RETURN(
      AdValue largest, b_.emit(CoreSemanticOp::kReduceMax, {magnitudes}, program::ReduceAttributes{{rank(x) - 1}}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold, scale(largest, tol));
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold_b,
                            b_.emit(CoreSemanticOp::kBroadcastInDim, {threshold},
                                    program::BroadcastInDimAttributes{meta(x).shape, iota_dims(rank(x) - 1)}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue small, compare(D::kLe, magnitudes, threshold_b));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ones, full_like(x, 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zeros, full_like(x, 0.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue safe, select(small, ones, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue inverse, div(ones, safe));
  return select(small, zeros, inverse);
}

Result<AdValue> MatrixAd::pivot_mask(AdValue v) {
  using D = program::ComparisonDirection;
  const std::int64_t r = rank(v);
  TENFERRO_ASSIGN_OR_RETURN(AdValue magnitudes, abs(v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue largest,
                            b_.emit(CoreSemanticOp::kReduceMax, {magnitudes}, program::ReduceAttributes{{r - 2}}));
  // Note [Linalg gauge convention]: the first entry within 1e-3 of the
  // largest magnitude (the engine's kGaugeTieTolerance).
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold, scale(largest, 1.0 - 1e-3));
  TENFERRO_ASSIGN_OR_RETURN(AdValue threshold_b, as_rows(threshold, magnitudes));
  TENFERRO_ASSIGN_OR_RETURN(AdValue candidate, compare(D::kGe, magnitudes, threshold_b));
  TENFERRO_ASSIGN_OR_RETURN(AdValue candidate_f, to(candidate, dtype(magnitudes)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue first,
                            b_.emit(CoreSemanticOp::kArgmax, {candidate_f}, program::ArgReduceAttributes{r - 2}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue row_index, iota(meta(v).shape, r - 2));
  TENFERRO_ASSIGN_OR_RETURN(AdValue first_b, as_rows(first, row_index));
  TENFERRO_ASSIGN_OR_RETURN(AdValue hit, compare(D::kEq, row_index, first_b));
  return to(hit, dtype(magnitudes));
}

Result<AdValue> MatrixAd::gauge_rotation(AdValue v, AdValue dv) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue pivots, pivot_mask(v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue v_real, real(v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue at_pivot, mul(v_real, pivots));
  TENFERRO_ASSIGN_OR_RETURN(AdValue vp, sum_rows(at_pivot));
  // A zero column has no phase: divide by 1 (the numerator is 0 there).
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, full_like(vp, 0.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one, full_like(vp, 1.0));
  TENFERRO_ASSIGN_OR_RETURN(AdValue is_zero, compare(program::ComparisonDirection::kEq, vp, zero));
  TENFERRO_ASSIGN_OR_RETURN(AdValue vp_safe, select(is_zero, one, vp));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dv_imag, imag(dv));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dv_pivot, mul(dv_imag, pivots));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dtheta_num, sum_rows(dv_pivot));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dtheta, div(dtheta_num, vp_safe));
  return times_i(dtheta);
}

Result<AdValue> MatrixAd::rotate_columns(AdValue v, AdValue dv, AdValue rotation) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue rotation_rows, as_rows(rotation, v));
  TENFERRO_ASSIGN_OR_RETURN(AdValue correction, mul(v, rotation_rows));
  return sub(dv, correction);
}

Result<AdValue> MatrixAd::fix_column_gauge(AdValue v, AdValue dv) {
  if (!complex(v)) return dv;
  TENFERRO_ASSIGN_OR_RETURN(AdValue rotation, gauge_rotation(v, dv));
  return rotate_columns(v, dv, rotation);
}

Result<AdValue> MatrixAd::permutation_matrix(AdValue permutation, DType dtype) {
  SymbolicShape shape = meta(permutation).shape;
  shape.push_back(shape.back());
  const std::int64_t r = static_cast<std::int64_t>(shape.size());
  Dims dims = iota_dims(r - 1);  // permutation[..., i] -> axis r - 2
  TENFERRO_ASSIGN_OR_RETURN(AdValue rows_of, b_.emit(CoreSemanticOp::kBroadcastInDim, {permutation},
                                                     program::BroadcastInDimAttributes{shape, dims}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue cols, iota(shape, r - 1));
  TENFERRO_ASSIGN_OR_RETURN(AdValue hit, compare(program::ComparisonDirection::kEq, rows_of, cols));
  return to(hit, dtype);
}

Result<AdValue> MatrixAd::zeros(DType dtype, const SymbolicShape& shape) {
  return b_.zeros(program::ValueMetadata{dtype, shape});
}

Result<AdValue> MatrixAd::constant(double value, DType dtype, const SymbolicShape& shape) {
  return b_.full(Scalar::of(value), program::ValueMetadata{dtype, shape});
}

Result<AdValue> MatrixAd::one_hot_extreme(AdValue x, bool largest) {
  const std::int64_t r = rank(x);
  TENFERRO_ASSIGN_OR_RETURN(AdValue index, b_.emit(largest ? CoreSemanticOp::kArgmax : CoreSemanticOp::kArgmin, {x},
                                                   program::ArgReduceAttributes{r - 1}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue positions, iota(meta(x).shape, r - 1));
  TENFERRO_ASSIGN_OR_RETURN(AdValue index_b, broadcast_batch(index, positions));
  TENFERRO_ASSIGN_OR_RETURN(AdValue hit, compare(program::ComparisonDirection::kEq, positions, index_b));
  return to(hit, dtype(x));
}

Result<SmallVector<AdValue, 2>> MatrixAd::linalg(std::shared_ptr<const LinalgOp> op,
                                                 std::initializer_list<AdValue> operands) {
  return b_.emit_extension(std::move(op), operands);
}

}  // namespace tenferro::linalg::internal
