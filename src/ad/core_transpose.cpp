// transpose_core: the adjoint of every core op that AD uses linearly, for
// the real inner product <u, v> = Re sum conj(u) v (Note [Complex
// convention] in ad_context.h). Multiplicative coefficients enter
// conjugated; conj transposes to conj, real to complex(ct, 0), imag to
// complex(0, ct), complex(a, b) to (real(ct), imag(ct)), and convert to the
// convert back (complex -> real keeps the real part, whose adjoint embeds).
//
// Note [Symbolic extents in transposes]
// Transposes that need a window's offsets or extents as attributes
// (concatenate, pad, dynamic_update_slice's update window) require those
// extents to be exact; a symbolic one is kUnimplemented naming the node
// (differentiate a program specialised to concrete shapes instead). slice
// transposes to pad plus, for a symbolic operand extent, a concatenated
// zero block whose extent is the symbolic remainder.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core_rules.h"
#include "rule_ops.h"

namespace tenferro::ad::internal {

using program::CoreSemanticOp;
using program::SymbolicExtent;
using program::SymbolicShape;
using program::ValueMetadata;

namespace {

using Cotangent = std::optional<AdValue>;

Result<CotangentList> single(std::size_t arity, std::size_t position, Result<AdValue> value) {
  if (!value.ok()) return std::move(value).status();
  CotangentList out(arity);
  out[position] = *value;
  return out;
}

Error needs_exact(CoreSemanticOp op, std::string_view what, const ValueMetadata& m) {
  return make_error(
      ErrorCode::kUnimplemented, ErrorStage::kCompile,
      "reverse mode through {} needs exact {} (found {}); differentiate a program specialised to concrete "
      "shapes",
      op, what, m.to_string());
}

// Note [Out-of-range starts in gather and scatter transposes]
// gather clamps every start into [0, extent - window]; scatter skips a
// window that does not fit. So the transpose of gather scatter-adds the
// cotangent at the clamped starts (where the windows were read), and the
// transpose of scatter in its updates gathers the cotangent's windows and
// zeroes those the scatter skipped. Both need the bound extent - window of
// every index component: a constant when exact, otherwise computed at run
// time as the largest element of an iota of extent bound + 1.

// The indices clamped into their windows' valid starts (the indices
// themselves when the index vectors are empty).
Result<AdValue> clamp_starts(RuleOps& o, AdValue indices, IntArrayRef index_map, std::int64_t index_vector_dim,
                             const ValueMetadata& operand, const SymbolicShape& window) {
  if (index_map.empty()) return indices;
  AdBuilder& b = o.builder();
  const ValueMetadata m = o.md(indices);
  const bool explicit_vector = index_vector_dim < m.rank();
  ValueMetadata piece = m;
  if (explicit_vector) piece.shape[static_cast<std::size_t>(index_vector_dim)] = SymbolicExtent(1);
  AdValue bounds{};
  for (std::size_t k = 0; k < index_map.size(); ++k) {
    const auto d = static_cast<std::size_t>(index_map[k]);
    const SymbolicExtent bound = operand.shape[d] - window[d];
    AdValue component{};
    if (const std::optional<std::int64_t> exact = bound.exact_value()) {
      TENFERRO_ASSIGN_OR_RETURN(component, b.full(Scalar::of(*exact), piece));
    } else {
      const SymbolicShape span{bound + SymbolicExtent(1)};
      TENFERRO_ASSIGN_OR_RETURN(AdValue iota,
                                b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{m.dtype, span, 0}));
      TENFERRO_ASSIGN_OR_RETURN(AdValue largest,
                                b.emit(CoreSemanticOp::kReduceMax, {iota}, program::ReduceAttributes{{0}}));
      TENFERRO_ASSIGN_OR_RETURN(component, o.broadcast(largest, piece.shape, {}));
    }
    if (k == 0) {
      bounds = component;
    } else {
      TENFERRO_ASSIGN_OR_RETURN(bounds, b.emit(CoreSemanticOp::kConcatenate, {bounds, component},
                                               program::ConcatenateAttributes{index_vector_dim}));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, b.zeros(m));
  return b.emit(CoreSemanticOp::kClamp, {zero, indices, bounds});
}

// `gathered` (the updates' cotangent) with the windows a scatter skipped
// set to zero.
Result<AdValue> zero_skipped_windows(RuleOps& o, AdValue gathered, AdValue indices,
                                     const program::ScatterAttributes& scatter, const ValueMetadata& operand,
                                     const SymbolicShape& window) {
  if (scatter.scatter_dims_to_operand_dims.empty()) return gathered;
  AdBuilder& b = o.builder();
  TENFERRO_ASSIGN_OR_RETURN(AdValue clamped, clamp_starts(o, indices, scatter.scatter_dims_to_operand_dims,
                                                          scatter.index_vector_dim, operand, window));
  TENFERRO_ASSIGN_OR_RETURN(AdValue fits, o.compare(program::ComparisonDirection::kEq, clamped, indices));
  const ValueMetadata m = o.md(indices);
  if (scatter.index_vector_dim < m.rank()) {
    // A window fits when every component of its start does.
    TENFERRO_ASSIGN_OR_RETURN(AdValue as_int, o.convert(fits, DType::kInt32));
    TENFERRO_ASSIGN_OR_RETURN(AdValue all, b.emit(CoreSemanticOp::kReduceMin, {as_int},
                                                  program::ReduceAttributes{{scatter.index_vector_dim}}));
    TENFERRO_ASSIGN_OR_RETURN(AdValue zero, b.zeros(o.md(all)));
    TENFERRO_ASSIGN_OR_RETURN(fits, o.compare(program::ComparisonDirection::kNe, all, zero));
  }
  const ValueMetadata g = o.md(gathered);
  Dims batch_axes;
  for (std::int64_t k = 0; k < g.rank(); ++k)
    if (std::find(scatter.update_window_dims.begin(), scatter.update_window_dims.end(), k) ==
        scatter.update_window_dims.end())
      batch_axes.push_back(k);
  TENFERRO_ASSIGN_OR_RETURN(AdValue mask, o.broadcast(fits, g.shape, batch_axes));
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, b.zeros(g));
  return o.select(mask, gathered, zero);
}

// Transpose of slice: the cotangent placed back into zeros.
Result<AdValue> unslice(RuleOps& o, AdValue ct, const ValueMetadata& x, const program::SliceAttributes& slice) {
  const std::size_t rank = x.shape.size();
  program::PadAttributes pad;
  SmallVector<std::size_t, 4> symbolic_axes;
  SmallVector<std::int64_t, 4> used(rank, 0);
  for (std::size_t a = 0; a < rank; ++a) {
    const std::int64_t start = slice.start[a];
    const std::int64_t stride = slice.stride[a];
    const std::int64_t n = slice.limit[a] > start ? (slice.limit[a] - start + stride - 1) / stride : 0;
    used[a] = start + (n > 0 ? (n - 1) * stride + 1 : 0);
    pad.low.push_back(start);
    pad.interior.push_back(stride - 1);
    if (auto extent = x.shape[a].exact_value()) {
      pad.high.push_back(*extent - used[a]);
    } else {
      pad.high.push_back(0);
      symbolic_axes.push_back(a);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.builder().scalar(Scalar::of(0.0), x.dtype));
  TENFERRO_ASSIGN_OR_RETURN(AdValue padded, o.builder().emit(CoreSemanticOp::kPad, {ct, zero}, std::move(pad)));
  for (std::size_t a : symbolic_axes) {
    ValueMetadata rest = o.md(padded);
    rest.shape[a] = x.shape[a] - SymbolicExtent(used[a]);
    TENFERRO_ASSIGN_OR_RETURN(AdValue block, o.builder().zeros(rest));
    TENFERRO_ASSIGN_OR_RETURN(padded, o.builder().emit(CoreSemanticOp::kConcatenate, {padded, block},
                                                       program::ConcatenateAttributes{static_cast<std::int64_t>(a)}));
  }
  return padded;
}

// A full-extent slice of `ct` with axis `axis` restricted to [start, limit)
// by `stride`; every other extent must be exact.
Result<AdValue> window(RuleOps& o, AdValue ct, std::int64_t axis, std::int64_t start, std::int64_t limit,
                       std::int64_t stride, CoreSemanticOp op) {
  const ValueMetadata& m = o.md(ct);
  auto shape = program::exact_shape(m.shape);
  if (!shape) return needs_exact(op, "cotangent extents", m);
  program::SliceAttributes slice;
  for (std::size_t a = 0; a < shape->size(); ++a) {
    const bool here = static_cast<std::int64_t>(a) == axis;
    slice.start.push_back(here ? start : 0);
    slice.limit.push_back(here ? limit : (*shape)[a]);
    slice.stride.push_back(here ? stride : 1);
  }
  return o.builder().emit(CoreSemanticOp::kSlice, {ct}, std::move(slice));
}

// Transpose of dot_general for the linear operand `linear` (0 or 1).
Result<AdValue> transpose_dot_general(RuleOps& o, const CoreTransposeInput& in, std::size_t linear) {
  const auto& dims = std::get<program::DotGeneralAttributes>(*in.attributes);
  const std::int64_t lhs_rank = in.operand_metadata[0].rank();
  const std::int64_t rhs_rank = in.operand_metadata[1].rank();
  Dims lhs_used(dims.lhs_batch.begin(), dims.lhs_batch.end());
  lhs_used.append(dims.lhs_contract.begin(), dims.lhs_contract.end());
  Dims rhs_used(dims.rhs_batch.begin(), dims.rhs_batch.end());
  rhs_used.append(dims.rhs_contract.begin(), dims.rhs_contract.end());
  const Dims lhs_free = kept_axes(lhs_rank, lhs_used);
  const Dims rhs_free = kept_axes(rhs_rank, rhs_used);
  const auto nb = static_cast<std::int64_t>(dims.lhs_batch.size());
  const auto nc = static_cast<std::int64_t>(dims.lhs_contract.size());
  const auto nfl = static_cast<std::int64_t>(lhs_free.size());
  const auto nfr = static_cast<std::int64_t>(rhs_free.size());
  auto rank_among = [](const Dims& axes, std::int64_t axis) {
    return static_cast<std::int64_t>(std::count_if(axes.begin(), axes.end(), [&](std::int64_t a) { return a < axis; }));
  };
  auto position = [](const Dims& list, std::int64_t axis) {
    return static_cast<std::int64_t>(std::find(list.begin(), list.end(), axis) - list.begin());
  };
  Dims ct_batch, ct_lhs_free, ct_rhs_free;
  for (std::int64_t i = 0; i < nb; ++i) ct_batch.push_back(i);
  for (std::int64_t i = 0; i < nfl; ++i) ct_lhs_free.push_back(nb + i);
  for (std::int64_t i = 0; i < nfr; ++i) ct_rhs_free.push_back(nb + nfl + i);
  if (linear == 0) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue other, o.conj(in.operands[1]));
    TENFERRO_ASSIGN_OR_RETURN(
        AdValue g, o.builder().emit(CoreSemanticOp::kDotGeneral, {in.cotangent, other},
                                    program::DotGeneralAttributes{ct_batch, dims.rhs_batch, ct_rhs_free, rhs_free}));
    // g axes: batch, lhs free, then lhs contract axes ordered by their rhs partner.
    Dims perm(static_cast<std::size_t>(lhs_rank), 0);
    for (std::int64_t a = 0; a < lhs_rank; ++a) {
      std::int64_t p = position(dims.lhs_batch, a);
      if (p < nb) {
        perm[a] = p;
      } else if ((p = position(lhs_free, a)) < nfl) {
        perm[a] = nb + p;
      } else {
        p = position(dims.lhs_contract, a);
        perm[a] = nb + nfl + rank_among(dims.rhs_contract, dims.rhs_contract[p]);
      }
    }
    return o.transpose(g, perm);
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue other, o.conj(in.operands[0]));
  TENFERRO_ASSIGN_OR_RETURN(
      AdValue g, o.builder().emit(CoreSemanticOp::kDotGeneral, {other, in.cotangent},
                                  program::DotGeneralAttributes{dims.lhs_batch, ct_batch, lhs_free, ct_lhs_free}));
  // g axes: batch, rhs contract axes ordered by their lhs partner, rhs free.
  Dims perm(static_cast<std::size_t>(rhs_rank), 0);
  for (std::int64_t b = 0; b < rhs_rank; ++b) {
    std::int64_t p = position(dims.rhs_batch, b);
    if (p < nb) {
      perm[b] = p;
    } else if ((p = position(rhs_free, b)) < nfr) {
      perm[b] = nb + nc + p;
    } else {
      p = position(dims.rhs_contract, b);
      perm[b] = nb + rank_among(dims.lhs_contract, dims.lhs_contract[p]);
    }
  }
  return o.transpose(g, perm);
}

// Transpose of broadcast_in_dim: sum the broadcast axes, restore x's shape.
Result<AdValue> unbroadcast(RuleOps& o, AdValue ct, const ValueMetadata& x,
                            const program::BroadcastInDimAttributes& attributes) {
  const auto rank = static_cast<std::int64_t>(attributes.shape.size());
  Dims summed;
  for (std::int64_t a = 0; a < rank; ++a) {
    auto k = std::find(attributes.dims.begin(), attributes.dims.end(), a) - attributes.dims.begin();
    if (k == static_cast<std::ptrdiff_t>(attributes.dims.size())) {
      summed.push_back(a);
    } else if (x.shape[static_cast<std::size_t>(k)] == SymbolicExtent(1) &&
               !(attributes.shape[a] == SymbolicExtent(1))) {
      summed.push_back(a);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(AdValue s, o.reduce_sum(ct, summed));
  return o.reshape(s, x.shape);
}

}  // namespace

Result<CotangentList> transpose_core(const CoreTransposeInput& in, AdBuilder& builder) {
  RuleOps o(builder);
  const std::size_t arity = in.linear.size();
  const AdValue ct = in.cotangent;
  const ValueMetadata& x = in.operand_metadata[0];
  const program::CoreAttributes& attributes = *in.attributes;
  switch (in.op) {
    case CoreSemanticOp::kNeg:
      return single(arity, 0, o.neg(ct));
    case CoreSemanticOp::kConj:
      return single(arity, 0, o.conj(ct));
    case CoreSemanticOp::kReal:
    case CoreSemanticOp::kImag: {
      if (!is_complex(x.dtype)) {
        if (in.op == CoreSemanticOp::kImag) return CotangentList(arity);
        return single(arity, 0, ct);
      }
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.zeros_like(ct));
      if (in.op == CoreSemanticOp::kReal) return single(arity, 0, o.binary(CoreSemanticOp::kComplex, ct, zero));
      return single(arity, 0, o.binary(CoreSemanticOp::kComplex, zero, ct));
    }
    case CoreSemanticOp::kConvert:
      return single(arity, 0, o.convert(ct, x.dtype));
    case CoreSemanticOp::kAdd: {
      CotangentList out(arity);
      out[0] = ct;
      out[1] = ct;
      return out;
    }
    case CoreSemanticOp::kSub: {
      CotangentList out(arity);
      out[0] = ct;
      TENFERRO_ASSIGN_OR_RETURN(out[1], o.neg(ct));
      return out;
    }
    case CoreSemanticOp::kComplex: {
      CotangentList out(arity);
      TENFERRO_ASSIGN_OR_RETURN(out[0], o.unary(CoreSemanticOp::kReal, ct));
      TENFERRO_ASSIGN_OR_RETURN(out[1], o.unary(CoreSemanticOp::kImag, ct));
      return out;
    }
    case CoreSemanticOp::kMul: {
      const std::size_t k = in.linear[0] ? 0 : 1;
      TENFERRO_ASSIGN_OR_RETURN(AdValue c, o.conj(in.operands[1 - k]));
      return single(arity, k, o.mul(c, ct));
    }
    case CoreSemanticOp::kDiv: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue c, o.conj(in.operands[1]));
      return single(arity, 0, o.div(ct, c));
    }
    case CoreSemanticOp::kSelect: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, o.zeros_like(ct));
      CotangentList out(arity);
      TENFERRO_ASSIGN_OR_RETURN(out[1], o.select(in.operands[0], ct, zero));
      TENFERRO_ASSIGN_OR_RETURN(out[2], o.select(in.operands[0], zero, ct));
      return out;
    }
    case CoreSemanticOp::kDotGeneral: {
      const std::size_t k = in.linear[0] ? 0 : 1;
      return single(arity, k, transpose_dot_general(o, in, k));
    }
    case CoreSemanticOp::kBroadcastInDim:
      return single(arity, 0, unbroadcast(o, ct, x, std::get<program::BroadcastInDimAttributes>(attributes)));
    case CoreSemanticOp::kReshape:
      return single(arity, 0, o.reshape(ct, x.shape));
    case CoreSemanticOp::kTranspose: {
      const Dims& perm = std::get<program::TransposeAttributes>(attributes).perm;
      Dims inverse(perm.size(), 0);
      for (std::size_t i = 0; i < perm.size(); ++i)
        inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
      return single(arity, 0, o.transpose(ct, inverse));
    }
    case CoreSemanticOp::kSlice:
      return single(arity, 0, unslice(o, ct, x, std::get<program::SliceAttributes>(attributes)));
    case CoreSemanticOp::kReverse:
      return single(arity, 0, builder.emit(CoreSemanticOp::kReverse, {ct}, attributes));
    case CoreSemanticOp::kReduceSum: {
      const Dims& axes = std::get<program::ReduceAttributes>(attributes).axes;
      return single(arity, 0, o.broadcast(ct, x.shape, kept_axes(x.rank(), axes)));
    }
    case CoreSemanticOp::kConcatenate: {
      const std::int64_t axis = std::get<program::ConcatenateAttributes>(attributes).axis;
      CotangentList out(arity);
      std::int64_t offset = 0;
      for (std::size_t i = 0; i < arity; ++i) {
        auto extent = in.operand_metadata[i].shape[static_cast<std::size_t>(axis)].exact_value();
        if (!extent) return needs_exact(in.op, "operand extents along the concatenation axis", in.operand_metadata[i]);
        TENFERRO_ASSIGN_OR_RETURN(out[i], window(o, ct, axis, offset, offset + *extent, 1, in.op));
        offset += *extent;
      }
      return out;
    }
    case CoreSemanticOp::kPad: {
      const auto& pad = std::get<program::PadAttributes>(attributes);
      auto shape = program::exact_shape(x.shape);
      if (!shape) return needs_exact(in.op, "operand extents", x);
      AdValue inner = ct;
      for (std::size_t a = 0; a < shape->size(); ++a) {
        const std::int64_t n = (*shape)[a];
        const std::int64_t step = pad.interior[a] + 1;
        const std::int64_t limit = n > 0 ? pad.low[a] + (n - 1) * step + 1 : pad.low[a];
        TENFERRO_ASSIGN_OR_RETURN(inner,
                                  window(o, inner, static_cast<std::int64_t>(a), pad.low[a], limit, step, in.op));
      }
      CotangentList out(arity);
      out[0] = inner;
      // The padding value's cotangent: everything that did not come from x.
      Dims all_ct;
      for (std::int64_t a = 0; a < in.result_metadata.rank(); ++a) all_ct.push_back(a);
      Dims all_x;
      for (std::int64_t a = 0; a < x.rank(); ++a) all_x.push_back(a);
      TENFERRO_ASSIGN_OR_RETURN(AdValue total, o.reduce_sum(ct, all_ct));
      TENFERRO_ASSIGN_OR_RETURN(AdValue from_x, o.reduce_sum(inner, all_x));
      TENFERRO_ASSIGN_OR_RETURN(out[1], o.sub(total, from_x));
      return out;
    }
    case CoreSemanticOp::kDynamicSlice: {
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, builder.zeros(x));
      SmallVector<AdValue, 4> operands;
      operands.push_back(zero);
      operands.push_back(ct);
      for (std::size_t i = 1; i < arity; ++i) operands.push_back(in.operands[i]);
      return single(arity, 0, builder.emit(CoreSemanticOp::kDynamicUpdateSlice, operands.span()));
    }
    case CoreSemanticOp::kDynamicUpdateSlice: {
      const ValueMetadata& update = in.operand_metadata[1];
      auto sizes = program::exact_shape(update.shape);
      if (!sizes) return needs_exact(in.op, "update extents", update);
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, builder.zeros(update));
      SmallVector<AdValue, 4> operands;
      operands.push_back(ct);
      operands.push_back(zero);
      SmallVector<AdValue, 4> slice_operands;
      slice_operands.push_back(ct);
      for (std::size_t i = 2; i < arity; ++i) {
        operands.push_back(in.operands[i]);
        slice_operands.push_back(in.operands[i]);
      }
      CotangentList out(arity);
      TENFERRO_ASSIGN_OR_RETURN(out[0], builder.emit(CoreSemanticOp::kDynamicUpdateSlice, operands.span()));
      TENFERRO_ASSIGN_OR_RETURN(out[1], builder.emit(CoreSemanticOp::kDynamicSlice, slice_operands.span(),
                                                     program::DynamicSliceAttributes{*sizes}));
      return out;
    }
    case CoreSemanticOp::kGather: {
      const auto& gather = std::get<program::GatherAttributes>(attributes);
      TENFERRO_ASSIGN_OR_RETURN(AdValue clamped, clamp_starts(o, in.operands[1], gather.start_index_map,
                                                              gather.index_vector_dim, x, gather.slice_sizes));
      TENFERRO_ASSIGN_OR_RETURN(AdValue zero, builder.zeros(x));
      return single(arity, 0,
                    builder.emit(CoreSemanticOp::kScatter, {zero, clamped, ct},
                                 program::scatter_of_gather(gather, program::ScatterCombine::kAdd)));
    }
    case CoreSemanticOp::kScatter: {
      const auto& scatter = std::get<program::ScatterAttributes>(attributes);
      const ValueMetadata& updates = in.operand_metadata[2];
      CotangentList out(arity);
      if (scatter.combine == program::ScatterCombine::kAdd) {
        out[0] = ct;
      } else {
        // Overwritten positions do not reach the result.
        TENFERRO_ASSIGN_OR_RETURN(AdValue zero, builder.zeros(updates));
        TENFERRO_ASSIGN_OR_RETURN(out[0], builder.emit(CoreSemanticOp::kScatter, {ct, in.operands[1], zero}, scatter));
      }
      const program::GatherAttributes back = program::gather_of_scatter(scatter, x.rank(), updates.shape);
      TENFERRO_ASSIGN_OR_RETURN(AdValue gathered, builder.emit(CoreSemanticOp::kGather, {ct, in.operands[1]}, back));
      TENFERRO_ASSIGN_OR_RETURN(out[2],
                                zero_skipped_windows(o, gathered, in.operands[1], scatter, x, back.slice_sizes));
      return out;
    }
    case CoreSemanticOp::kCumsum: {
      // Each x[j] reaches every y[i] at or after it (before it when
      // reversed), so the cotangent accumulates in the other direction.
      program::CumulativeAttributes flipped = std::get<program::CumulativeAttributes>(attributes);
      flipped.reverse = !flipped.reverse;
      return single(arity, 0, builder.emit(CoreSemanticOp::kCumsum, {ct}, flipped));
    }
    default:
      break;
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kCompile, "no transpose rule for linear core op {}", in.op);
}

}  // namespace tenferro::ad::internal
