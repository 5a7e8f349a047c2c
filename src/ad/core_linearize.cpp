// linearize_core: the tangent rule of every core op (docs/ad.md, "Rules").
//
// Note [Derivative conventions at kinks]
// Where a derivative is undefined the rules follow PyTorch: abs and sign
// have derivative 0 at 0 (sign: 0 everywhere for real inputs); max/min and
// reduce_max/reduce_min split the derivative evenly between tied elements;
// pow's derivative in the exponent is 0 where the base is 0, and in the
// base is 0 where the exponent is 0; reduce_prod and cumprod are exact in
// the presence of zeros (the product of the other elements, not y / x);
// floor, ceil and round have derivative 0 everywhere (also at their
// jumps); remainder and fmod have derivative 1 in the dividend and -q in
// the divisor, q the integer quotient they use, also at their jumps.
// clamp(lo, x, hi) passes the tangent of x where lo <= x <= hi (at a bound
// too, as torch.clamp), of lo where x < lo < hi and of hi elsewhere (hi
// wins when lo > hi, as the result is hi there).
#include <cstdint>
#include <utility>

#include "core_rules.h"
#include "rule_ops.h"

namespace tenferro::ad::internal {

using program::ComparisonDirection;
using program::CoreSemanticOp;

namespace {

using Tangent = std::optional<AdValue>;

Result<Tangent> some(Result<AdValue> v) {
  if (!v.ok()) return std::move(v).status();
  return Tangent(*v);
}

// coefficient * tangent, both of the tangent's dtype.
Result<Tangent> scaled(RuleOps& o, Result<AdValue> coefficient, AdValue tangent) {
  if (!coefficient.ok()) return std::move(coefficient).status();
  return some(o.mul(*coefficient, tangent));
}

// Broadcasts a reduction result back over the reduced axes of `x`.
Result<AdValue> unreduce(RuleOps& o, AdValue reduced, AdValue x, IntArrayRef axes) {
  const program::ValueMetadata& m = o.md(x);
  return o.broadcast(reduced, m.shape, kept_axes(m.rank(), axes));
}

Result<Tangent> linearize_unary(const CoreLinearizeInput& in, RuleOps& o) {
  const AdValue x = in.operands[0];
  const AdValue t = *in.tangents[0];
  const AdValue y = in.result;
  const bool complex = is_complex(o.dtype(x));
  switch (in.op) {
    case CoreSemanticOp::kNeg:
      return some(o.neg(t));
    case CoreSemanticOp::kAbs: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue s, o.unary(CoreSemanticOp::kSign, x));
      if (!complex) return scaled(o, s, t);
      // d|z| = Re(conj(sgn z) dz).
      TENFERRO_ASSIGN_OR_RETURN(AdValue cs, o.conj(s));
      TENFERRO_ASSIGN_OR_RETURN(AdValue p, o.mul(cs, t));
      return some(o.unary(CoreSemanticOp::kReal, p));
    }
    case CoreSemanticOp::kSign: {
      if (!complex) return Tangent();
      // d(z/|z|) = (dz - s Re(conj(s) dz)) / |z|, and 0 at z = 0.
      TENFERRO_ASSIGN_OR_RETURN(AdValue r, o.unary(CoreSemanticOp::kAbs, x));
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.full_like(0.0, r));
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, r));
      TENFERRO_ASSIGN_OR_RETURN(AdValue is_zero, o.compare(ComparisonDirection::kEq, r, zero));
      TENFERRO_ASSIGN_OR_RETURN(AdValue inv, o.div(one, r));
      TENFERRO_ASSIGN_OR_RETURN(AdValue inv_r, o.select(is_zero, zero, inv));
      TENFERRO_ASSIGN_OR_RETURN(AdValue inv_c, o.convert(inv_r, o.dtype(x)));
      TENFERRO_ASSIGN_OR_RETURN(AdValue cs, o.conj(y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue p, o.mul(cs, t));
      TENFERRO_ASSIGN_OR_RETURN(AdValue radial, o.unary(CoreSemanticOp::kReal, p));
      TENFERRO_ASSIGN_OR_RETURN(AdValue radial_c, o.convert(radial, o.dtype(x)));
      TENFERRO_ASSIGN_OR_RETURN(AdValue along, o.mul(y, radial_c));
      TENFERRO_ASSIGN_OR_RETURN(AdValue d, o.sub(t, along));
      return some(o.mul(inv_c, d));
    }
    case CoreSemanticOp::kExp:
      return some(o.mul(y, t));
    case CoreSemanticOp::kLog:
      return some(o.div(t, x));
    case CoreSemanticOp::kLog1p: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, x));
      TENFERRO_ASSIGN_OR_RETURN(AdValue d, o.add(one, x));
      return some(o.div(t, d));
    }
    case CoreSemanticOp::kExpm1: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, y));
      return scaled(o, o.add(y, one), t);
    }
    case CoreSemanticOp::kSqrt: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue two, o.full_like(2.0, y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue d, o.mul(two, y));
      return some(o.div(t, d));
    }
    case CoreSemanticOp::kRsqrt: {
      // d x^(-1/2) = -1/2 x^(-1/2) / x.
      TENFERRO_ASSIGN_OR_RETURN(AdValue half, o.full_like(-0.5, y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue hy, o.mul(half, y));
      return scaled(o, o.div(hy, x), t);
    }
    case CoreSemanticOp::kSin:
      return scaled(o, o.unary(CoreSemanticOp::kCos, x), t);
    case CoreSemanticOp::kCos: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue s, o.unary(CoreSemanticOp::kSin, x));
      return scaled(o, o.neg(s), t);
    }
    case CoreSemanticOp::kTan: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue yy, o.mul(y, y));
      return scaled(o, o.add(one, yy), t);
    }
    case CoreSemanticOp::kTanh: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue yy, o.mul(y, y));
      return scaled(o, o.sub(one, yy), t);
    }
    case CoreSemanticOp::kLogistic: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, y));
      TENFERRO_ASSIGN_OR_RETURN(AdValue rest, o.sub(one, y));
      return scaled(o, o.mul(y, rest), t);
    }
    case CoreSemanticOp::kConj:
      return complex ? some(o.unary(CoreSemanticOp::kConj, t)) : Tangent(t);
    case CoreSemanticOp::kReal:
      return complex ? some(o.unary(CoreSemanticOp::kReal, t)) : Tangent(t);
    case CoreSemanticOp::kImag:
      return complex ? some(o.unary(CoreSemanticOp::kImag, t)) : Tangent();
    default:
      break;
  }
  return Tangent();
}

// The even split of max/min: 1 where `x` wins, 1/2 on ties, 0 elsewhere.
Result<AdValue> winner_weight(RuleOps& o, ComparisonDirection wins, AdValue x, AdValue other) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue strictly, o.compare(wins, x, other));
  TENFERRO_ASSIGN_OR_RETURN(AdValue tied, o.compare(ComparisonDirection::kEq, x, other));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue half, o.full_like(0.5, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.full_like(0.0, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue tie_weight, o.select(tied, half, zero));
  return o.select(strictly, one, tie_weight);
}

Result<Tangent> linearize_binary(const CoreLinearizeInput& in, RuleOps& o) {
  const AdValue a = in.operands[0];
  const AdValue b = in.operands[1];
  const Tangent& ta = in.tangents[0];
  const Tangent& tb = in.tangents[1];
  const AdValue y = in.result;
  Tangent da, db;
  switch (in.op) {
    case CoreSemanticOp::kAdd:
      return o.add_maybe(ta, tb);
    case CoreSemanticOp::kSub:
      if (ta && tb) return some(o.sub(*ta, *tb));
      if (ta) return ta;
      return some(o.neg(*tb));
    case CoreSemanticOp::kMul:
      if (ta) {
        TENFERRO_ASSIGN_OR_RETURN(da, some(o.mul(b, *ta)));
      }
      if (tb) {
        TENFERRO_ASSIGN_OR_RETURN(db, some(o.mul(a, *tb)));
      }
      return o.add_maybe(da, db);
    case CoreSemanticOp::kDiv:
      if (ta) {
        TENFERRO_ASSIGN_OR_RETURN(da, some(o.div(*ta, b)));
      }
      if (tb) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue q, o.div(y, b));
        TENFERRO_ASSIGN_OR_RETURN(db, scaled(o, o.neg(q), *tb));
      }
      return o.add_maybe(da, db);
    case CoreSemanticOp::kPow: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.full_like(0.0, y));
      if (ta) {
        // b a^(b-1), 0 where b == 0.
        TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, b));
        TENFERRO_ASSIGN_OR_RETURN(AdValue bm1, o.sub(b, one));
        TENFERRO_ASSIGN_OR_RETURN(AdValue p, o.binary(CoreSemanticOp::kPow, a, bm1));
        TENFERRO_ASSIGN_OR_RETURN(AdValue c, o.mul(b, p));
        TENFERRO_ASSIGN_OR_RETURN(AdValue b_zero, o.compare(ComparisonDirection::kEq, b, zero));
        TENFERRO_ASSIGN_OR_RETURN(da, scaled(o, o.select(b_zero, zero, c), *ta));
      }
      if (tb) {
        // y log(a), 0 where a == 0.
        TENFERRO_ASSIGN_OR_RETURN(AdValue la, o.unary(CoreSemanticOp::kLog, a));
        TENFERRO_ASSIGN_OR_RETURN(AdValue c, o.mul(y, la));
        TENFERRO_ASSIGN_OR_RETURN(AdValue a_zero, o.compare(ComparisonDirection::kEq, a, zero));
        TENFERRO_ASSIGN_OR_RETURN(db, scaled(o, o.select(a_zero, zero, c), *tb));
      }
      return o.add_maybe(da, db);
    }
    case CoreSemanticOp::kMax:
    case CoreSemanticOp::kMin: {
      const ComparisonDirection wins =
          in.op == CoreSemanticOp::kMax ? ComparisonDirection::kGt : ComparisonDirection::kLt;
      TENFERRO_ASSIGN_OR_RETURN(AdValue wa, winner_weight(o, wins, a, b));
      if (ta) {
        TENFERRO_ASSIGN_OR_RETURN(da, scaled(o, wa, *ta));
      }
      if (tb) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, a));
        TENFERRO_ASSIGN_OR_RETURN(db, scaled(o, o.sub(one, wa), *tb));
      }
      return o.add_maybe(da, db);
    }
    case CoreSemanticOp::kAtan2: {
      // d atan2(a, b) = (b da - a db) / (a^2 + b^2).
      TENFERRO_ASSIGN_OR_RETURN(AdValue aa, o.mul(a, a));
      TENFERRO_ASSIGN_OR_RETURN(AdValue bb, o.mul(b, b));
      TENFERRO_ASSIGN_OR_RETURN(AdValue denom, o.add(aa, bb));
      if (ta) {
        TENFERRO_ASSIGN_OR_RETURN(da, scaled(o, o.div(b, denom), *ta));
      }
      if (tb) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue q, o.div(a, denom));
        TENFERRO_ASSIGN_OR_RETURN(db, scaled(o, o.neg(q), *tb));
      }
      return o.add_maybe(da, db);
    }
    case CoreSemanticOp::kComplex: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue re, ta ? Result<AdValue>(*ta) : o.zeros_like(a));
      TENFERRO_ASSIGN_OR_RETURN(AdValue im, tb ? Result<AdValue>(*tb) : o.zeros_like(b));
      return some(o.binary(CoreSemanticOp::kComplex, re, im));
    }
    case CoreSemanticOp::kRemainder:
    case CoreSemanticOp::kFmod:
      // y = a - q b with q piecewise constant, so -q = (y - a) / b exactly
      // (both ops compute y exactly).
      if (tb) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue d, o.sub(y, a));
        TENFERRO_ASSIGN_OR_RETURN(db, scaled(o, o.div(d, b), *tb));
      }
      return o.add_maybe(ta, db);
    default:
      break;
  }
  return Tangent();
}

// Tangent operands with explicit zeros for absent ones, primal operands at
// the positions in `primal` kept as they are.
Result<SmallVector<AdValue, 4>> with_zeros(const CoreLinearizeInput& in, RuleOps& o, std::span<const bool> primal) {
  SmallVector<AdValue, 4> out;
  for (std::size_t i = 0; i < in.operands.size(); ++i) {
    if (i < primal.size() && primal[i]) {
      out.push_back(in.operands[i]);
    } else if (in.tangents[i]) {
      out.push_back(*in.tangents[i]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(AdValue z, o.zeros_like(in.operands[i]));
      out.push_back(z);
    }
  }
  return out;
}

// Note [Product of the others]
// reduce_prod's weight for element i is the product of the other elements
// of its reduction. It is formed as the product of the exclusive cumulative
// products before and after i along the reduced elements (several reduced axes
// moved last and merged into one), with no division and no select on the
// values: exact with zeros, and its own derivative (through cumprod's rule,
// exact with zeros) keeps the cross terms a zero removes from the value, so
// the Hessian of a product with a zero factor is right too. A select-based
// weight (0 for an element when another one is 0) had dropped them: the
// Hessian-vector product of a 5-element product with one zero came out as
// [0, 0, -0.058, 0, 0] against [-1.344, 0.56, -0.058, -0.336, -0.96].
Result<AdValue> product_of_others(RuleOps& o, AdValue x, IntArrayRef axes) {
  AdBuilder& b = o.builder();
  const auto others_along = [&](AdValue v, std::int64_t axis) -> Result<AdValue> {
    TENFERRO_ASSIGN_OR_RETURN(AdValue before,
                              b.emit(CoreSemanticOp::kCumprod, {v}, program::CumulativeAttributes{axis, false, true}));
    TENFERRO_ASSIGN_OR_RETURN(AdValue after,
                              b.emit(CoreSemanticOp::kCumprod, {v}, program::CumulativeAttributes{axis, true, true}));
    return o.mul(before, after);
  };
  if (axes.size() == 1) return others_along(x, axes[0]);
  // Several axes (or none): moved last and merged into one.
  const program::ValueMetadata m = o.md(x);
  std::vector<std::int64_t> perm;  // the kept axes, then the reduced ones
  for (std::int64_t a = 0; a < static_cast<std::int64_t>(m.rank()); ++a)
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) perm.push_back(a);
  const std::size_t kept = perm.size();
  for (std::int64_t a : axes) perm.push_back(a);
  program::SymbolicShape moved_shape;
  for (std::int64_t a : perm) moved_shape.push_back(m.shape[static_cast<std::size_t>(a)]);
  program::SymbolicShape merged(moved_shape.begin(), moved_shape.begin() + static_cast<std::ptrdiff_t>(kept));
  program::SymbolicExtent count(1);
  for (std::size_t k = kept; k < moved_shape.size(); ++k) count = count * moved_shape[k];
  merged.push_back(count);
  TENFERRO_ASSIGN_OR_RETURN(AdValue moved,
                            b.emit(CoreSemanticOp::kTranspose, {x}, program::TransposeAttributes{Dims(perm)}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue flat,
                            b.emit(CoreSemanticOp::kReshape, {moved}, program::ReshapeAttributes{merged}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue others, others_along(flat, static_cast<std::int64_t>(kept)));
  TENFERRO_ASSIGN_OR_RETURN(others,
                            b.emit(CoreSemanticOp::kReshape, {others}, program::ReshapeAttributes{moved_shape}));
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k)
    inverse[static_cast<std::size_t>(perm[k])] = static_cast<std::int64_t>(k);
  return b.emit(CoreSemanticOp::kTranspose, {others}, program::TransposeAttributes{Dims(inverse)});
}

// reduce_max/min: the winners' indicator divided by their count.
Result<AdValue> extreme_weight(RuleOps& o, AdValue x, AdValue y, IntArrayRef axes) {
  TENFERRO_ASSIGN_OR_RETURN(AdValue yb, unreduce(o, y, x, axes));
  TENFERRO_ASSIGN_OR_RETURN(AdValue hit, o.compare(ComparisonDirection::kEq, x, yb));
  TENFERRO_ASSIGN_OR_RETURN(AdValue mask, o.convert(hit, o.dtype(x)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue counts, o.reduce_sum(mask, axes));
  TENFERRO_ASSIGN_OR_RETURN(AdValue count, unreduce(o, counts, x, axes));
  return o.div(mask, count);
}

// clamp(lo, x, hi): the tangent of whichever operand the result equals
// (Note [Derivative conventions at kinks]).
Result<Tangent> linearize_clamp(const CoreLinearizeInput& in, RuleOps& o) {
  const AdValue lo = in.operands[0], x = in.operands[1], hi = in.operands[2];
  TENFERRO_ASSIGN_OR_RETURN(auto t, with_zeros(in, o, {}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue above_lo, o.compare(ComparisonDirection::kLe, lo, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue below_hi, o.compare(ComparisonDirection::kLe, x, hi));
  TENFERRO_ASSIGN_OR_RETURN(AdValue from_x, o.binary(CoreSemanticOp::kAnd, above_lo, below_hi));
  TENFERRO_ASSIGN_OR_RETURN(AdValue at_lo, o.compare(ComparisonDirection::kLt, x, lo));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ordered, o.compare(ComparisonDirection::kLt, lo, hi));
  TENFERRO_ASSIGN_OR_RETURN(AdValue from_lo, o.binary(CoreSemanticOp::kAnd, at_lo, ordered));
  TENFERRO_ASSIGN_OR_RETURN(AdValue bound, o.select(from_lo, t[0], t[2]));
  return some(o.select(from_x, t[1], bound));
}

// cumprod, exact with zeros as reduce_prod: dy_i = sum_j dx_j * (the
// product of the other elements of i's window). With w = x with its zeros
// replaced by 1, Q = cumprod(w), c the count of zeros in the window and
// (every cumulative op with cumprod's own attributes) R = cumsum(dx / w),
// T = cumsum(dx at the zeros), S = cumsum(x at the zeros) and U =
// cumsum(dx * x at the zeros):
//   c_i = 0: dy_i = Q_i * R_i   (Q_i = y_i)
//   c_i = 1: dy_i = Q_i * (T_i + S_i * (R_i - T_i))
//   c_i = 2: dy_i = Q_i * (S_i * T_i - U_i)
//   c_i > 2: dy_i = 0.
// S and U are 0 where they appear (the zeros' values), so the first
// derivative is the product of the others; they carry the zeros' own
// derivatives, so the second derivative keeps the terms a zero factor
// removes from the first (with one zero: the zero's with every other
// element's; with two: the two zeros'). Exact to second order; beyond, a
// window of three zeros gives 0 where a third derivative is not. The old
// rule, y * cumsum(dx / x), was NaN from the first zero on; the one before
// this, 0 past one zero, lost those second-order terms.
Result<Tangent> linearize_cumprod(const CoreLinearizeInput& in, RuleOps& o) {
  const AdValue x = in.operands[0];
  const AdValue dx = *in.tangents[0];
  AdBuilder& b = o.builder();
  const auto cumsum = [&](AdValue v) { return b.emit(CoreSemanticOp::kCumsum, {v}, *in.attributes); };
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.full_like(0.0, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one, o.full_like(1.0, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue two, o.full_like(2.0, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue is_zero, o.compare(ComparisonDirection::kEq, x, zero));
  TENFERRO_ASSIGN_OR_RETURN(AdValue w, o.select(is_zero, one, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue q, b.emit(CoreSemanticOp::kCumprod, {w}, *in.attributes));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero_mask, o.convert(is_zero, o.dtype(x)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue count, cumsum(zero_mask));
  TENFERRO_ASSIGN_OR_RETURN(AdValue none, o.compare(ComparisonDirection::kEq, count, zero));
  TENFERRO_ASSIGN_OR_RETURN(AdValue single, o.compare(ComparisonDirection::kEq, count, one));
  TENFERRO_ASSIGN_OR_RETURN(AdValue pair, o.compare(ComparisonDirection::kEq, count, two));
  TENFERRO_ASSIGN_OR_RETURN(AdValue ratio, o.div(dx, w));
  TENFERRO_ASSIGN_OR_RETURN(AdValue r, cumsum(ratio));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dx_at_zeros, o.mul(dx, zero_mask));
  TENFERRO_ASSIGN_OR_RETURN(AdValue t, cumsum(dx_at_zeros));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero_values, o.mul(x, zero_mask));
  TENFERRO_ASSIGN_OR_RETURN(AdValue s_sums, cumsum(zero_values));
  TENFERRO_ASSIGN_OR_RETURN(AdValue dx_x, o.mul(dx_at_zeros, x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue u, cumsum(dx_x));
  TENFERRO_ASSIGN_OR_RETURN(AdValue others, o.sub(r, t));  // the nonzero elements' dx / x
  TENFERRO_ASSIGN_OR_RETURN(AdValue carried, o.mul(s_sums, others));
  TENFERRO_ASSIGN_OR_RETURN(AdValue one_zero, o.add(t, carried));
  TENFERRO_ASSIGN_OR_RETURN(AdValue st, o.mul(s_sums, t));
  TENFERRO_ASSIGN_OR_RETURN(AdValue two_zeros, o.sub(st, u));
  TENFERRO_ASSIGN_OR_RETURN(AdValue no_tangent, o.zeros_like(dx));
  TENFERRO_ASSIGN_OR_RETURN(AdValue past_two, o.select(pair, two_zeros, no_tangent));
  TENFERRO_ASSIGN_OR_RETURN(AdValue past_one, o.select(single, one_zero, past_two));
  TENFERRO_ASSIGN_OR_RETURN(AdValue sums, o.select(none, r, past_one));
  return scaled(o, q, sums);
}

// Note [Sort tangent]
// Each sorted element carries its own tangent: dy = take_along_axis(dx, p)
// with p = argsort(x). A take-style gather indexes one axis, so the
// tangent is flattened and p turned into flat offsets: the position i
// with i[axis] replaced by p[i], i.e. linear(i) + (p[i] - i[axis]) * stride.
// Gather is linear, so the transpose is the scatter-add that puts every
// cotangent back at its element's original position. The strides must be
// known, so the rule needs exact extents.
Result<Tangent> linearize_sort(const CoreLinearizeInput& in, RuleOps& o) {
  const auto& a = std::get<program::SortAttributes>(*in.attributes);
  const program::ValueMetadata m = o.md(in.operands[0]);
  std::int64_t numel = 1, stride = 1;
  for (std::size_t k = 0; k < m.shape.size(); ++k) {
    const std::optional<std::int64_t> e = m.shape[k].exact_value();
    if (!e) {
      return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile,
                        "the derivative of sort needs exact extents, found {}", m.to_string());
    }
    numel *= *e;
    if (static_cast<std::int64_t>(k) > a.axis) stride *= *e;
  }
  AdBuilder& b = o.builder();
  TENFERRO_ASSIGN_OR_RETURN(AdValue perm, b.emit(CoreSemanticOp::kArgsort, {in.operands[0]}, a));
  const program::SymbolicShape flat_shape{program::SymbolicExtent(numel)};
  TENFERRO_ASSIGN_OR_RETURN(AdValue linear,
                            b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kInt64, flat_shape, 0}));
  TENFERRO_ASSIGN_OR_RETURN(linear, o.reshape(linear, m.shape));
  TENFERRO_ASSIGN_OR_RETURN(AdValue along,
                            b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kInt64, m.shape, a.axis}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue shift, o.sub(perm, along));
  TENFERRO_ASSIGN_OR_RETURN(AdValue strides, b.full(Scalar::of(stride), o.md(perm)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue offsets, o.mul(shift, strides));
  TENFERRO_ASSIGN_OR_RETURN(AdValue index, o.add(linear, offsets));
  TENFERRO_ASSIGN_OR_RETURN(AdValue flat_tangent, o.reshape(*in.tangents[0], flat_shape));
  return some(
      b.emit(CoreSemanticOp::kGather, {flat_tangent, index}, program::take_attributes(flat_shape, m.rank(), 0)));
}

}  // namespace

Result<std::optional<AdValue>> linearize_core(const CoreLinearizeInput& in, AdBuilder& builder) {
  RuleOps o(builder);
  if (!is_inexact(o.dtype(in.result))) return Tangent();
  const program::CoreAttributes& attributes = *in.attributes;
  const std::size_t arity = in.operands.size();
  switch (in.op) {
    case CoreSemanticOp::kNeg:
    case CoreSemanticOp::kAbs:
    case CoreSemanticOp::kSign:
    case CoreSemanticOp::kExp:
    case CoreSemanticOp::kLog:
    case CoreSemanticOp::kLog1p:
    case CoreSemanticOp::kExpm1:
    case CoreSemanticOp::kSqrt:
    case CoreSemanticOp::kRsqrt:
    case CoreSemanticOp::kSin:
    case CoreSemanticOp::kCos:
    case CoreSemanticOp::kTan:
    case CoreSemanticOp::kTanh:
    case CoreSemanticOp::kLogistic:
    case CoreSemanticOp::kConj:
    case CoreSemanticOp::kReal:
    case CoreSemanticOp::kImag:
      return linearize_unary(in, o);
    case CoreSemanticOp::kAdd:
    case CoreSemanticOp::kSub:
    case CoreSemanticOp::kMul:
    case CoreSemanticOp::kDiv:
    case CoreSemanticOp::kPow:
    case CoreSemanticOp::kMax:
    case CoreSemanticOp::kMin:
    case CoreSemanticOp::kAtan2:
    case CoreSemanticOp::kComplex:
    case CoreSemanticOp::kRemainder:
    case CoreSemanticOp::kFmod:
      return linearize_binary(in, o);
    case CoreSemanticOp::kSelect: {
      const bool primal[] = {true, false, false};
      TENFERRO_ASSIGN_OR_RETURN(auto operands, with_zeros(in, o, primal));
      return some(builder.emit(in.op, operands.span(), attributes));
    }
    case CoreSemanticOp::kConvert:
      return some(builder.emit(in.op, {*in.tangents[0]}, attributes));
    case CoreSemanticOp::kClamp:
      return linearize_clamp(in, o);
    case CoreSemanticOp::kCumprod:
      return linearize_cumprod(in, o);
    case CoreSemanticOp::kSort:
      return linearize_sort(in, o);
    // Linear in operand 0; the other operands (indices, starts) stay primal.
    case CoreSemanticOp::kBroadcastInDim:
    case CoreSemanticOp::kReshape:
    case CoreSemanticOp::kTranspose:
    case CoreSemanticOp::kSlice:
    case CoreSemanticOp::kReverse:
    case CoreSemanticOp::kReduceSum:
    case CoreSemanticOp::kCumsum:
    case CoreSemanticOp::kDynamicSlice:
    case CoreSemanticOp::kGather: {
      SmallVector<AdValue, 4> operands(in.operands.begin(), in.operands.end());
      operands[0] = *in.tangents[0];
      return some(builder.emit(in.op, operands.span(), attributes));
    }
    // Linear in several operands together.
    case CoreSemanticOp::kConcatenate:
    case CoreSemanticOp::kPad:
    case CoreSemanticOp::kDynamicUpdateSlice:
    case CoreSemanticOp::kScatter: {
      SmallVector<bool, 4> primal(arity, false);
      if (in.op == CoreSemanticOp::kDynamicUpdateSlice)
        for (std::size_t i = 2; i < arity; ++i) primal[i] = true;
      if (in.op == CoreSemanticOp::kScatter) primal[1] = true;
      TENFERRO_ASSIGN_OR_RETURN(auto operands, with_zeros(in, o, primal.span()));
      return some(builder.emit(in.op, operands.span(), attributes));
    }
    case CoreSemanticOp::kReduceProd:
    case CoreSemanticOp::kReduceMax:
    case CoreSemanticOp::kReduceMin: {
      const Dims& axes = std::get<program::ReduceAttributes>(attributes).axes;
      const AdValue x = in.operands[0];
      Result<AdValue> weight =
          in.op == CoreSemanticOp::kReduceProd ? product_of_others(o, x, axes) : extreme_weight(o, x, in.result, axes);
      TENFERRO_ASSIGN_OR_RETURN(AdValue w, std::move(weight));
      TENFERRO_ASSIGN_OR_RETURN(AdValue scaled_tangent, o.mul(w, *in.tangents[0]));
      return some(o.reduce_sum(scaled_tangent, axes));
    }
    case CoreSemanticOp::kDotGeneral: {
      Tangent da, db;
      if (in.tangents[0]) {
        TENFERRO_ASSIGN_OR_RETURN(da, some(builder.emit(in.op, {*in.tangents[0], in.operands[1]}, attributes)));
      }
      if (in.tangents[1]) {
        TENFERRO_ASSIGN_OR_RETURN(db, some(builder.emit(in.op, {in.operands[0], *in.tangents[1]}, attributes)));
      }
      return o.add_maybe(da, db);
    }
    // Piecewise constant: derivative 0 (Note [Derivative conventions at kinks]).
    case CoreSemanticOp::kFloor:
    case CoreSemanticOp::kCeil:
    case CoreSemanticOp::kRound:
      return Tangent();
    // Not differentiable: bool and integer results are caught above; these
    // have inexact results only through dtype-preserving paths that never
    // carry tangents (constants, iota).
    case CoreSemanticOp::kNot:
    case CoreSemanticOp::kAnd:
    case CoreSemanticOp::kOr:
    case CoreSemanticOp::kXor:
    case CoreSemanticOp::kShiftLeft:
    case CoreSemanticOp::kShiftRightArithmetic:
    case CoreSemanticOp::kShiftRightLogical:
    case CoreSemanticOp::kIsFinite:
    case CoreSemanticOp::kIsNan:
    case CoreSemanticOp::kCompare:
    case CoreSemanticOp::kConstant:
    case CoreSemanticOp::kIota:
    case CoreSemanticOp::kRngPhilox:  // no operands: nothing to differentiate
    case CoreSemanticOp::kArgmax:
    case CoreSemanticOp::kArgmin:
    case CoreSemanticOp::kArgsort:
      return Tangent();
  }
  return Tangent();
}

}  // namespace tenferro::ad::internal
