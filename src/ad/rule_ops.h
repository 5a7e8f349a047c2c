// RuleOps: terse wrappers over AdBuilder for the built-in core-op rules
// (each returns Result<AdValue>; linearity follows the operands).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tenferro/ad/ad_rule.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"

namespace tenferro::ad::internal {

class RuleOps {
 public:
  explicit RuleOps(AdBuilder& builder) noexcept : b_(builder) {}

  AdBuilder& builder() noexcept { return b_; }
  program::ValueMetadata md(AdValue v) const { return b_.metadata(v); }
  DType dtype(AdValue v) const { return b_.metadata(v).dtype; }

  Result<AdValue> unary(program::CoreSemanticOp op, AdValue x) { return b_.emit(op, {x}); }
  Result<AdValue> binary(program::CoreSemanticOp op, AdValue x, AdValue y) { return b_.emit(op, {x, y}); }
  Result<AdValue> add(AdValue x, AdValue y) { return binary(program::CoreSemanticOp::kAdd, x, y); }
  Result<AdValue> sub(AdValue x, AdValue y) { return binary(program::CoreSemanticOp::kSub, x, y); }
  Result<AdValue> mul(AdValue x, AdValue y) { return binary(program::CoreSemanticOp::kMul, x, y); }
  Result<AdValue> div(AdValue x, AdValue y) { return binary(program::CoreSemanticOp::kDiv, x, y); }
  Result<AdValue> neg(AdValue x) { return unary(program::CoreSemanticOp::kNeg, x); }
  /// conj(x) for a complex x, x itself otherwise.
  Result<AdValue> conj(AdValue x) {
    if (!is_complex(dtype(x))) return x;
    return unary(program::CoreSemanticOp::kConj, x);
  }
  Result<AdValue> compare(program::ComparisonDirection direction, AdValue x, AdValue y) {
    return b_.emit(program::CoreSemanticOp::kCompare, {x, y}, program::CompareAttributes{direction});
  }
  Result<AdValue> select(AdValue predicate, AdValue on_true, AdValue on_false) {
    return b_.emit(program::CoreSemanticOp::kSelect, {predicate, on_true, on_false});
  }
  Result<AdValue> convert(AdValue x, DType dtype) {
    if (this->dtype(x) == dtype) return x;
    return b_.emit(program::CoreSemanticOp::kConvert, {x}, program::ConvertAttributes{dtype});
  }
  /// A constant of x's dtype and shape.
  Result<AdValue> full_like(double value, AdValue like) { return b_.full(Scalar::of(value), md(like)); }
  Result<AdValue> zeros_like(AdValue like) { return b_.zeros(md(like)); }
  Result<AdValue> broadcast(AdValue x, const program::SymbolicShape& shape, IntArrayRef dims) {
    return b_.emit(program::CoreSemanticOp::kBroadcastInDim, {x},
                   program::BroadcastInDimAttributes{shape, Dims(dims.begin(), dims.end())});
  }
  Result<AdValue> reduce_sum(AdValue x, IntArrayRef axes) {
    if (axes.empty()) return x;
    return b_.emit(program::CoreSemanticOp::kReduceSum, {x}, program::ReduceAttributes{Dims(axes.begin(), axes.end())});
  }
  Result<AdValue> reshape(AdValue x, const program::SymbolicShape& shape) {
    if (md(x).shape == shape) return x;
    return b_.emit(program::CoreSemanticOp::kReshape, {x}, program::ReshapeAttributes{shape});
  }
  Result<AdValue> transpose(AdValue x, IntArrayRef perm) {
    bool identity = true;
    for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
    if (identity) return x;
    return b_.emit(program::CoreSemanticOp::kTranspose, {x},
                   program::TransposeAttributes{Dims(perm.begin(), perm.end())});
  }
  /// a + b where either may be absent.
  Result<std::optional<AdValue>> add_maybe(std::optional<AdValue> a, std::optional<AdValue> b) {
    if (!a) return b;
    if (!b) return a;
    TENFERRO_ASSIGN_OR_RETURN(AdValue s, add(*a, *b));
    return std::optional<AdValue>(s);
  }

 private:
  AdBuilder& b_;
};

/// The axes of a rank-`rank` value that are not in `removed` (in order).
inline Dims kept_axes(std::int64_t rank, IntArrayRef removed) {
  Dims kept;
  for (std::int64_t a = 0; a < rank; ++a) {
    bool gone = false;
    for (std::int64_t r : removed) gone = gone || r == a;
    if (!gone) kept.push_back(a);
  }
  return kept;
}

}  // namespace tenferro::ad::internal
