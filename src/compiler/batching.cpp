// The batching transform (Note [Batching transform]).
#include "tenferro/compiler/batching.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "tenferro/program/program_builder.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT(google-build-using-namespace)
using Values = SmallVector<ProgramValue, 4>;
using Results = SmallVector<ProgramValue, 2>;

Error unsupported(const OperationView& o, std::string_view why) {
  return Error(ErrorCode::kUnsupported, ErrorStage::kCompile,
               fmt::format("batching: operation {} ({}) {}", o.id().index(), o.name(), why));
}

// `first` followed by the extents of `rest`.
SymbolicShape prepended_extent(std::int64_t first, const SymbolicShape& rest) {
  SymbolicShape out{SymbolicExtent(first)};
  for (const SymbolicExtent& e : rest) out.push_back(e);
  return out;
}

// Every axis of `axes` moved past the new leading one.
Dims shifted(const Dims& axes) {
  Dims out;
  for (std::int64_t a : axes) out.push_back(a + 1);
  return out;
}

// `first` followed by `rest`.
Dims prepended(std::int64_t first, const Dims& rest) {
  Dims out{first};
  for (std::int64_t a : rest) out.push_back(a);
  return out;
}

class Batcher {
 public:
  Batcher(const SemanticProgram& program, std::int64_t batch_size)
      : src_(program), b_(batch_size), value_of_(program.num_values()), batched_(program.num_values(), false) {}

  Result<std::shared_ptr<const SemanticProgram>> run(std::span<const bool> batched, std::vector<bool>* varying) {
    for (std::size_t i = 0; i < src_.num_inputs(); ++i) {
      const ValueMetadata& m = src_.metadata(src_.input(i));
      const SymbolicShape shape = batched[i] ? with_leading(m.shape) : m.shape;
      TENFERRO_ASSIGN_OR_RETURN(value_of_[i], builder_.add_input(m.dtype, shape.span()));
      batched_[i] = batched[i];
    }
    for (const OperationView o : src_.operations()) TENFERRO_TRY(emit(o));
    Values outputs;
    if (varying != nullptr) varying->clear();
    for (const ValueId v : src_.outputs()) {
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue out, with_batch(v));
      outputs.push_back(out);
      if (varying != nullptr) varying->push_back(batched_[v.index()] != 0);
    }
    TENFERRO_ASSIGN_OR_RETURN(FrozenProgram frozen, builder_.freeze(outputs.span()));
    return frozen.program;
  }

 private:
  SymbolicShape with_leading(const SymbolicShape& shape) const { return prepended_extent(b_, shape); }

  // `v` with the batch axis (broadcast when it has none).
  Result<ProgramValue> with_batch(ValueId v) {
    if (batched_[v.index()]) return value_of_[v.index()];
    const ValueMetadata& m = src_.metadata(v);
    Dims dims;
    for (std::int64_t k = 0; k < m.rank(); ++k) dims.push_back(k + 1);
    return builder_.emit(CoreSemanticOp::kBroadcastInDim, {value_of_[v.index()]},
                         BroadcastInDimAttributes{with_leading(m.shape), std::move(dims)});
  }

  Result<Values> all_with_batch(const OperationView& o) {
    Values out;
    for (const ValueId v : o.operands()) {
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue x, with_batch(v));
      out.push_back(x);
    }
    return out;
  }

  Status emit(const OperationView& o) {
    Values operands;
    bool any = false;
    for (const ValueId v : o.operands()) {
      operands.push_back(value_of_[v.index()]);
      any = any || batched_[v.index()];
    }
    if (!any) return copy(o, operands);
    if (!o.effects().is_pure()) return unsupported(o, "has effects and a batched operand");
    if (o.is_extension()) return emit_extension(o);
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue result, emit_core(o));
    value_of_[o.result().index()] = result;
    batched_[o.result().index()] = true;
    return ok_status();
  }

  // An operation on unbatched operands: as it is.
  Status copy(const OperationView& o, std::span<const ProgramValue> operands) {
    if (o.is_core()) {
      TENFERRO_ASSIGN_OR_RETURN(value_of_[o.result().index()], builder_.emit(o.core_op(), operands, o.attributes()));
      return ok_status();
    }
    TENFERRO_ASSIGN_OR_RETURN(Results results, builder_.emit_extension(o.shared_extension(), operands));
    for (std::size_t k = 0; k < results.size(); ++k) value_of_[o.result(k).index()] = results[k];
    return ok_status();
  }

  Status emit_extension(const OperationView& o) {
    SmallVector<ValueMetadata, 4> metadata;
    SmallVector<bool, 8> flags;
    for (const ValueId v : o.operands()) {
      metadata.push_back(src_.metadata(v));
      flags.push_back(batched_[v.index()] != 0);
    }
    const std::span<const bool> as_given(flags.data(), flags.size());
    std::shared_ptr<const ExtensionOp> op = o.extension()->batched(metadata.span(), as_given);
    Values operands;
    if (op != nullptr) {
      for (const ValueId v : o.operands()) operands.push_back(value_of_[v.index()]);
    } else {  // every operand broadcast
      for (bool& f : flags) f = true;
      op = o.extension()->batched(metadata.span(), as_given);
      if (op == nullptr) return unsupported(o, "has no batched form");
      TENFERRO_ASSIGN_OR_RETURN(operands, all_with_batch(o));
    }
    TENFERRO_ASSIGN_OR_RETURN(Results results, builder_.emit_extension(op, operands.span()));
    for (std::size_t k = 0; k < results.size(); ++k) {
      value_of_[o.result(k).index()] = results[k];
      batched_[o.result(k).index()] = true;
    }
    return ok_status();
  }

  Result<ProgramValue> emit_core(const OperationView& o) {
    const CoreSemanticOp op = o.core_op();
    const CoreOpInfo& info = core_op_info(op);
    if (info.family == CoreOpFamily::kElementwise) {
      TENFERRO_ASSIGN_OR_RETURN(Values operands, all_with_batch(o));
      return builder_.emit(op, operands.span(), o.attributes());
    }
    const ProgramValue x = value_of_[o.operands()[0].index()];
    switch (op) {
      case CoreSemanticOp::kBroadcastInDim: {
        const auto& a = *o.attributes_as<BroadcastInDimAttributes>();
        return builder_.emit(op, {x}, BroadcastInDimAttributes{with_leading(a.shape), prepended(0, shifted(a.dims))});
      }
      case CoreSemanticOp::kReshape:
        return builder_.emit(op, {x}, ReshapeAttributes{with_leading(o.attributes_as<ReshapeAttributes>()->shape)});
      case CoreSemanticOp::kTranspose:
        return builder_.emit(op, {x},
                             TransposeAttributes{prepended(0, shifted(o.attributes_as<TransposeAttributes>()->perm))});
      case CoreSemanticOp::kSlice: {
        const auto& a = *o.attributes_as<SliceAttributes>();
        return builder_.emit(op, {x},
                             SliceAttributes{prepended(0, a.start), prepended(b_, a.limit), prepended(1, a.stride)});
      }
      case CoreSemanticOp::kReverse:
        return builder_.emit(op, {x}, ReverseAttributes{shifted(o.attributes_as<ReverseAttributes>()->axes)});
      case CoreSemanticOp::kConcatenate: {
        TENFERRO_ASSIGN_OR_RETURN(Values operands, all_with_batch(o));
        return builder_.emit(op, operands.span(),
                             ConcatenateAttributes{o.attributes_as<ConcatenateAttributes>()->axis + 1});
      }
      case CoreSemanticOp::kPad: {
        if (batched_[o.operands()[1].index()]) return unsupported(o, "pads with a batched value");
        const auto& a = *o.attributes_as<PadAttributes>();
        return builder_.emit(op, {x, value_of_[o.operands()[1].index()]},
                             PadAttributes{prepended(0, a.low), prepended(0, a.high), prepended(0, a.interior)});
      }
      case CoreSemanticOp::kGather:
        return emit_gather(o);
      case CoreSemanticOp::kScatter:
        return emit_scatter(o);
      case CoreSemanticOp::kDynamicSlice:
        return emit_dynamic_slice(o);
      case CoreSemanticOp::kDynamicUpdateSlice:
        return emit_dynamic_update_slice(o);
      case CoreSemanticOp::kReduceSum:
      case CoreSemanticOp::kReduceProd:
      case CoreSemanticOp::kReduceMax:
      case CoreSemanticOp::kReduceMin:
        return builder_.emit(op, {x}, ReduceAttributes{shifted(o.attributes_as<ReduceAttributes>()->axes)});
      case CoreSemanticOp::kArgmax:
      case CoreSemanticOp::kArgmin:
        return builder_.emit(op, {x}, ArgReduceAttributes{o.attributes_as<ArgReduceAttributes>()->axis + 1});
      case CoreSemanticOp::kCumsum:
      case CoreSemanticOp::kCumprod: {
        CumulativeAttributes a = *o.attributes_as<CumulativeAttributes>();
        ++a.axis;
        return builder_.emit(op, {x}, a);
      }
      case CoreSemanticOp::kSort:
      case CoreSemanticOp::kArgsort: {
        SortAttributes a = *o.attributes_as<SortAttributes>();
        ++a.axis;
        return builder_.emit(op, {x}, a);
      }
      case CoreSemanticOp::kDotGeneral:
        return emit_dot(o);
      default:
        return unsupported(o, "has no batching rule");
    }
  }

  // Note [Batched indices]
  // Gathers and scatters have no batching dimensions (StableHLO's are not
  // supported, Note [General gather and scatter]), so an operand that
  // carries the batch is indexed by one more index component: the example's
  // own number, an iota along the batch, concatenated in front of every
  // index vector, with the batch axis collapsed (gather) or inserted
  // (scatter) as a window axis of extent 1. Dynamic slices with batched
  // starts become such gathers (clamped alike); dynamic_update_slice with
  // batched starts a scatter with the starts clamped first (a scatter skips
  // windows out of range where dynamic_update_slice clamps them).

  // `indices` (of the source program's value `v`, batched or not) with the
  // batch and an explicit index-vector axis whose first component is the
  // example's number; returns the new indices and their index_vector_dim.
  Result<std::pair<ProgramValue, std::int64_t>> with_example_index(ValueId v, std::int64_t index_vector_dim) {
    const ValueMetadata& m = src_.metadata(v);
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue indices, with_batch(v));
    SymbolicShape shape = with_leading(m.shape);
    if (index_vector_dim == m.rank()) {  // the implicit trailing axis, made explicit
      shape.push_back(SymbolicExtent(1));
      TENFERRO_ASSIGN_OR_RETURN(indices, builder_.emit(CoreSemanticOp::kReshape, {indices}, ReshapeAttributes{shape}));
    }
    const std::int64_t axis = index_vector_dim + 1;
    shape[static_cast<std::size_t>(axis)] = SymbolicExtent(1);
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue example,
                              builder_.emit(CoreSemanticOp::kIota, {}, IotaAttributes{m.dtype, shape, 0}));
    TENFERRO_ASSIGN_OR_RETURN(
        indices, builder_.emit(CoreSemanticOp::kConcatenate, {example, indices}, ConcatenateAttributes{axis}));
    return std::pair{indices, axis};
  }

  Result<ProgramValue> emit_gather(const OperationView& o) {
    const ValueId operand = o.operands()[0];
    const ValueId index = o.operands()[1];
    GatherAttributes a = *o.attributes_as<GatherAttributes>();
    if (!batched_[index.index()]) {  // the batch is a full window axis in front
      a.offset_dims = prepended(0, shifted(a.offset_dims));
      a.collapsed_slice_dims = shifted(a.collapsed_slice_dims);
      a.start_index_map = shifted(a.start_index_map);
      a.slice_sizes = with_leading(a.slice_sizes);
      return builder_.emit(CoreSemanticOp::kGather, {value_of_[operand.index()], value_of_[index.index()]},
                           std::move(a));
    }
    // Batched indices: their leading axis is the first batch axis of the
    // result, which lands in front when every offset axis moves by one.
    a.offset_dims = shifted(a.offset_dims);
    if (!batched_[operand.index()]) {
      ++a.index_vector_dim;
      return builder_.emit(CoreSemanticOp::kGather, {value_of_[operand.index()], value_of_[index.index()]},
                           std::move(a));
    }
    TENFERRO_ASSIGN_OR_RETURN(auto indices, with_example_index(index, a.index_vector_dim));
    a.collapsed_slice_dims = prepended(0, shifted(a.collapsed_slice_dims));
    a.start_index_map = prepended(0, shifted(a.start_index_map));
    a.index_vector_dim = indices.second;
    a.slice_sizes = prepended_extent(1, a.slice_sizes);
    return builder_.emit(CoreSemanticOp::kGather, {value_of_[operand.index()], indices.first}, std::move(a));
  }

  Result<ProgramValue> emit_scatter(const OperationView& o) {
    ScatterAttributes a = *o.attributes_as<ScatterAttributes>();
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue operand, with_batch(o.operands()[0]));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue updates, with_batch(o.operands()[2]));
    TENFERRO_ASSIGN_OR_RETURN(auto indices, with_example_index(o.operands()[1], a.index_vector_dim));
    a.update_window_dims = shifted(a.update_window_dims);  // the batch: the updates' first batch axis
    a.inserted_window_dims = prepended(0, shifted(a.inserted_window_dims));
    a.scatter_dims_to_operand_dims = prepended(0, shifted(a.scatter_dims_to_operand_dims));
    a.index_vector_dim = indices.second;
    return builder_.emit(CoreSemanticOp::kScatter, {operand, indices.first, updates}, std::move(a));
  }

  // The starts (operands `first`...) as index vectors [b, r] (int64, each
  // clamped to [0, limit[k]] when `limits` is given), led by the example's
  // number when `with_example` is set.
  Result<ProgramValue> start_vectors(const OperationView& o, std::size_t first, bool with_example,
                                     std::span<const std::int64_t> limits) {
    const SymbolicShape column{SymbolicExtent(b_), SymbolicExtent(1)};
    Values parts;
    if (with_example) {
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue example,
                                builder_.emit(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kInt64, column, 0}));
      parts.push_back(example);
    }
    for (std::size_t k = first; k < o.operands().size(); ++k) {
      const ValueId v = o.operands()[k];
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue start, with_batch(v));
      if (src_.metadata(v).dtype != DType::kInt64) {
        TENFERRO_ASSIGN_OR_RETURN(start,
                                  builder_.emit(CoreSemanticOp::kConvert, {start}, ConvertAttributes{DType::kInt64}));
      }
      if (!limits.empty()) {
        const SymbolicShape batch{SymbolicExtent(b_)};
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue low, bound(0, batch));
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue high, bound(limits[k - first], batch));
        TENFERRO_ASSIGN_OR_RETURN(start, builder_.emit(CoreSemanticOp::kClamp, {low, start, high}));
      }
      TENFERRO_ASSIGN_OR_RETURN(start, builder_.emit(CoreSemanticOp::kReshape, {start}, ReshapeAttributes{column}));
      parts.push_back(start);
    }
    return builder_.emit(CoreSemanticOp::kConcatenate, parts.span(), ConcatenateAttributes{1});
  }

  // The int64 `value` broadcast to `shape`.
  Result<ProgramValue> bound(std::int64_t value, const SymbolicShape& shape) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue scalar, builder_.constant(Literal::scalar(Scalar::of(value))));
    return builder_.emit(CoreSemanticOp::kBroadcastInDim, {scalar}, BroadcastInDimAttributes{shape, {}});
  }

  bool any_start_batched(const OperationView& o, std::size_t first) const {
    for (std::size_t k = first; k < o.operands().size(); ++k)
      if (batched_[o.operands()[k].index()]) return true;
    return false;
  }

  // `head`, then a zero start for the batch axis (of the starts' dtype,
  // int64 when there are none), then o's starts (operands `first`...).
  Result<Values> with_zero_start(const OperationView& o, std::size_t first, Values head) {
    const DType dtype = o.operands().size() > first ? src_.metadata(o.operands()[first]).dtype : DType::kInt64;
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue zero,
                              builder_.constant(Literal::scalar(dtype == DType::kInt32 ? Scalar::of(std::int32_t{0})
                                                                                       : Scalar::of(std::int64_t{0}))));
    head.push_back(zero);
    for (std::size_t k = first; k < o.operands().size(); ++k) head.push_back(value_of_[o.operands()[k].index()]);
    return head;
  }

  Result<ProgramValue> emit_dynamic_slice(const OperationView& o) {
    const Dims& sizes = o.attributes_as<DynamicSliceAttributes>()->sizes;
    const ValueId operand = o.operands()[0];
    const bool operand_batched = batched_[operand.index()];
    if (!any_start_batched(o, 1)) {  // the whole batch axis, from 0
      TENFERRO_ASSIGN_OR_RETURN(Values operands, with_zero_start(o, 1, {value_of_[operand.index()]}));
      return builder_.emit(CoreSemanticOp::kDynamicSlice, operands.span(),
                           DynamicSliceAttributes{prepended(b_, sizes)});
    }
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue starts, start_vectors(o, 1, operand_batched, {}));
    const auto r = static_cast<std::int64_t>(sizes.size());
    const std::int64_t e = operand_batched ? 1 : 0;  // the example's component
    GatherAttributes a;
    for (std::int64_t k = 0; k < r; ++k) a.offset_dims.push_back(k + 1);
    if (operand_batched) a.collapsed_slice_dims.push_back(0);
    for (std::int64_t k = 0; k < r + e; ++k) a.start_index_map.push_back(k);
    a.index_vector_dim = 1;
    if (operand_batched) a.slice_sizes.push_back(SymbolicExtent(1));
    for (std::int64_t s : sizes) a.slice_sizes.push_back(SymbolicExtent(s));
    return builder_.emit(CoreSemanticOp::kGather, {value_of_[operand.index()], starts}, std::move(a));
  }

  Result<ProgramValue> emit_dynamic_update_slice(const OperationView& o) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue operand, with_batch(o.operands()[0]));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue update, with_batch(o.operands()[1]));
    if (!any_start_batched(o, 2)) {
      TENFERRO_ASSIGN_OR_RETURN(Values operands, with_zero_start(o, 2, {operand, update}));
      return builder_.emit(CoreSemanticOp::kDynamicUpdateSlice, operands.span(), NoAttributes{});
    }
    const ValueMetadata& x = src_.metadata(o.operands()[0]);
    const ValueMetadata& u = src_.metadata(o.operands()[1]);
    Dims limits;
    for (std::int64_t k = 0; k < x.rank(); ++k) {
      const std::optional<std::int64_t> n = x.shape[static_cast<std::size_t>(k)].exact_value();
      const std::optional<std::int64_t> m = u.shape[static_cast<std::size_t>(k)].exact_value();
      if (!n || !m) return unsupported(o, "has symbolic extents and batched starts");
      limits.push_back(*n - *m);
    }
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue starts, start_vectors(o, 2, true, limits.span()));
    ScatterAttributes a;
    for (std::int64_t k = 0; k < x.rank(); ++k) a.update_window_dims.push_back(k + 1);
    a.inserted_window_dims = {0};
    for (std::int64_t k = 0; k <= x.rank(); ++k) a.scatter_dims_to_operand_dims.push_back(k);
    a.index_vector_dim = 1;
    return builder_.emit(CoreSemanticOp::kScatter, {operand, starts, update}, std::move(a));
  }

  // dot_general's result axes: batch dims, lhs free dims, rhs free dims.
  Result<ProgramValue> emit_dot(const OperationView& o) {
    const auto& a = *o.attributes_as<DotGeneralAttributes>();
    const ValueId l = o.operands()[0];
    const ValueId r = o.operands()[1];
    const ProgramValue lv = value_of_[l.index()];
    const ProgramValue rv = value_of_[r.index()];
    const bool lb = batched_[l.index()];
    const bool rb = batched_[r.index()];
    if (lb && rb) {
      return builder_.emit(CoreSemanticOp::kDotGeneral, {lv, rv},
                           DotGeneralAttributes{prepended(0, shifted(a.lhs_batch)), prepended(0, shifted(a.rhs_batch)),
                                                shifted(a.lhs_contract), shifted(a.rhs_contract)});
    }
    // One batched operand: the new axis is its first free dimension.
    const DotGeneralAttributes attributes =
        lb ? DotGeneralAttributes{shifted(a.lhs_batch), a.rhs_batch, shifted(a.lhs_contract), a.rhs_contract}
           : DotGeneralAttributes{a.lhs_batch, shifted(a.rhs_batch), a.lhs_contract, shifted(a.rhs_contract)};
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue product, builder_.emit(CoreSemanticOp::kDotGeneral, {lv, rv}, attributes));
    const auto batch = static_cast<std::int64_t>(a.lhs_batch.size());
    const std::int64_t lhs_free = src_.metadata(l).rank() - batch - static_cast<std::int64_t>(a.lhs_contract.size());
    const std::int64_t at = lb ? batch : batch + lhs_free;  // where the new axis landed
    if (at == 0) return product;
    TENFERRO_ASSIGN_OR_RETURN(ValueMetadata m, builder_.metadata(product));
    Dims perm{at};
    for (std::int64_t k = 0; k < m.rank(); ++k)
      if (k != at) perm.push_back(k);
    return builder_.emit(CoreSemanticOp::kTranspose, {product}, TransposeAttributes{std::move(perm)});
  }

  const SemanticProgram& src_;
  std::int64_t b_;
  ProgramBuilder builder_;
  std::vector<ProgramValue> value_of_;
  std::vector<char> batched_;
};

}  // namespace

Result<std::shared_ptr<const SemanticProgram>> batch_program(const SemanticProgram& program,
                                                             std::span<const bool> batched, std::int64_t batch_size,
                                                             std::vector<bool>* varying) {
  if (batched.size() != program.num_inputs()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "batching: expected one flag per program input ({}), found {}", program.num_inputs(),
                      batched.size());
  }
  if (batch_size < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "batching: expected a batch size >= 0, found {}", batch_size);
  }
  return Batcher(program, batch_size).run(batched, varying);
}

}  // namespace tenferro::compiler
