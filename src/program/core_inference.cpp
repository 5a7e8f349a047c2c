// Metadata inference for every core op (docs/core_ops.md): operand counts
// and dtypes from the core_ops.def row, attribute validation, and symbolic
// result shapes with guards for what only concrete shapes can decide.
#include "tenferro/program/core_inference.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tenferro::program {
namespace {

constexpr std::string_view kAttributeNames[] = {
#define TENFERRO_CORE_OP(name, str, min_operands, max_operands, attributes, ...) #attributes,
#include "tenferro/program/core_ops.def"
};

std::string_view attribute_name_of_index(std::size_t index) {
  for (int i = 0; i < kNumCoreOps; ++i)
    if (core_op_info(static_cast<CoreSemanticOp>(i)).attributes_index == index) return kAttributeNames[i];
  return "?";
}

std::string ints(IntArrayRef values) { return fmt::format("[{}]", fmt::join(values.span(), ", ")); }

// Per-call helper bundling the op, its operands and the constraint sink.
class Inference {
 public:
  Inference(CoreSemanticOp op, std::span<const ValueMetadata> operands, ShapeConstraints& c)
      : info_(core_op_info(op)), operands_(operands), c_(c) {}

  const ValueMetadata& operand(std::size_t i) const { return operands_[i]; }
  std::size_t num_operands() const { return operands_.size(); }
  ShapeConstraints& constraints() { return c_; }

  template <class... Args>
  Error error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) const {
    return c_.error(code, format, std::forward<Args>(args)...);
  }

  // The data operands `indices` must be in the op's DTypeClass and share one dtype.
  Result<DType> data_dtype(std::initializer_list<std::size_t> indices) const {
    DType first = operands_[*indices.begin()].dtype;
    for (std::size_t i : indices) {
      DType d = operands_[i].dtype;
      if (!dtype_in_class(d, info_.operand_dtypes)) {
        return error(ErrorCode::kDTypeMismatch, "operand {} must have {}, found {}", i, to_string(info_.operand_dtypes),
                     d);
      }
      if (d != first) {
        return error(ErrorCode::kDTypeMismatch, "operands must share one dtype, found {} and {}", first, d);
      }
    }
    return first;
  }

  Result<DType> result_dtype(DType operand_dtype) const {
    switch (info_.result_dtype) {
      case ResultDTypeRule::kSameAsOperand:
        return operand_dtype;
      case ResultDTypeRule::kRealOfOperand:
        return real_dtype(operand_dtype);
      case ResultDTypeRule::kComplexOfOperand:
        if (auto c = complex_dtype(operand_dtype)) return *c;
        return error(ErrorCode::kDTypeMismatch, "expected a floating dtype, found {}", operand_dtype);
      case ResultDTypeRule::kBool:
        return DType::kBool;
      case ResultDTypeRule::kInt64:
        return DType::kInt64;
      case ResultDTypeRule::kFromAttributes:
        break;
    }
    return operand_dtype;  // kFromAttributes is handled by the op's rule
  }

  Status check_rank(std::size_t i, std::int64_t rank) const {
    if (operands_[i].rank() != rank) {
      return error(ErrorCode::kShapeMismatch, "operand {} must have rank {}, found rank {} ({})", i, rank,
                   operands_[i].rank(), operands_[i].to_string());
    }
    return ok_status();
  }

  // Each axis in [0, rank); distinct when `distinct`.
  Status check_axes(IntArrayRef axes, std::int64_t rank, std::string_view what, bool distinct = true) const {
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= rank) {
        return error(ErrorCode::kAxisOutOfRange, "{} {}: axis {} is out of range for rank {} (expected 0 <= axis < {})",
                     what, ints(axes), axes[i], rank, rank);
      }
      if (distinct) {
        for (std::size_t j = 0; j < i; ++j)
          if (axes[j] == axes[i])
            return error(ErrorCode::kInvalidArgument, "{} {}: axis {} repeats", what, ints(axes), axes[i]);
      }
    }
    return ok_status();
  }

  // Attribute shapes: no placeholders, every extent provably or guarded >= 0.
  Status check_attribute_shape(const SymbolicShape& shape, std::string_view what) {
    for (const SymbolicExtent& e : shape) {
      if (e.contains_placeholder()) {
        return error(ErrorCode::kInvalidArgument, "{} {} contains an unbound placeholder extent", what,
                     shape_string(shape));
      }
      if (e.is_exact() && *e.exact_value() < 0) {
        return error(ErrorCode::kInvalidArgument, "{} {} has negative extent {}", what, shape_string(shape),
                     *e.exact_value());
      }
      if (!e.is_exact()) TENFERRO_TRY(c_.require_less_equal(0, e, "extents are non-negative"));
    }
    return ok_status();
  }

  // Elementwise: equal ranks and extents; the more exact extent wins.
  Result<SymbolicShape> same_shape(std::initializer_list<std::size_t> indices) {
    const std::size_t first = *indices.begin();
    SymbolicShape shape = operands_[first].shape;
    for (std::size_t i : indices) {
      if (operands_[i].rank() != operands_[first].rank()) {
        return error(ErrorCode::kShapeMismatch, "operands must have equal shapes, found {} and {}",
                     shape_string(operands_[first].shape), shape_string(operands_[i].shape));
      }
      for (std::size_t k = 0; k < shape.size(); ++k) {
        const SymbolicExtent& e = operands_[i].shape[k];
        TENFERRO_TRY(c_.require_equal(shape[k], e, "operand {} axis {} matches operand {}", i, k, first));
        if (!shape[k].is_exact() && e.is_exact()) shape[k] = e;
      }
    }
    return shape;
  }

  Status require_integer_scalar(std::size_t i, std::string_view what) const {
    const ValueMetadata& m = operands_[i];
    if (!is_integer(m.dtype) || m.rank() != 0) {
      return error(ErrorCode::kInvalidArgument, "{} (operand {}) must be a rank-0 integer tensor, found {}", what, i,
                   m.to_string());
    }
    return ok_status();
  }

  Status require_index_dtype(std::size_t i) const {
    DType d = operands_[i].dtype;
    if (d != DType::kInt32 && d != DType::kInt64) {
      return error(ErrorCode::kDTypeMismatch, "indices (operand {}) must be int32 or int64, found {}", i, d);
    }
    return ok_status();
  }

 private:
  const CoreOpInfo& info_;
  std::span<const ValueMetadata> operands_;
  ShapeConstraints& c_;
};

Result<ValueMetadata> infer_elementwise(CoreSemanticOp op, const CoreAttributes& attributes, Inference& in) {
  const std::size_t n = in.num_operands();
  if (const auto* convert = std::get_if<ConvertAttributes>(&attributes)) {
    TENFERRO_TRY(in.data_dtype({0}));
    return ValueMetadata{convert->dtype, in.operand(0).shape};
  }
  if (op == CoreSemanticOp::kSelect) {
    if (in.operand(0).dtype != DType::kBool) {
      return in.error(ErrorCode::kDTypeMismatch, "the predicate (operand 0) must be bool, found {}",
                      in.operand(0).dtype);
    }
    TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({1, 2}));
    TENFERRO_ASSIGN_OR_RETURN(SymbolicShape shape, in.same_shape({0, 1, 2}));
    return ValueMetadata{dtype, std::move(shape)};
  }
  if (op == CoreSemanticOp::kClamp) {
    TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0, 1, 2}));
    TENFERRO_ASSIGN_OR_RETURN(SymbolicShape shape, in.same_shape({0, 1, 2}));
    return ValueMetadata{dtype, std::move(shape)};
  }
  TENFERRO_ASSIGN_OR_RETURN(DType dtype, n == 1 ? in.data_dtype({0}) : in.data_dtype({0, 1}));
  if (op == CoreSemanticOp::kCompare && is_complex(dtype)) {
    auto direction = std::get<CompareAttributes>(attributes).direction;
    if (direction != ComparisonDirection::kEq && direction != ComparisonDirection::kNe) {
      return in.error(ErrorCode::kDTypeMismatch, "compare direction {} is not defined for {}", to_string(direction),
                      dtype);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(DType result, in.result_dtype(dtype));
  TENFERRO_ASSIGN_OR_RETURN(SymbolicShape shape, n == 1 ? in.same_shape({0}) : in.same_shape({0, 1}));
  return ValueMetadata{result, std::move(shape)};
}

Result<ValueMetadata> infer_creation(const CoreAttributes& attributes, Inference& in) {
  if (const auto* constant = std::get_if<ConstantAttributes>(&attributes)) {
    return ValueMetadata::exact(constant->literal.dtype(), constant->literal.shape());
  }
  if (const auto* random = std::get_if<RandomAttributes>(&attributes)) {
    if (random->dtype != DType::kFloat32 && random->dtype != DType::kFloat64) {
      return in.error(ErrorCode::kDTypeMismatch, "rng_philox dtype must be float32 or float64, found {}",
                      random->dtype);
    }
    TENFERRO_TRY(in.check_attribute_shape(random->shape, "rng_philox shape"));
    return ValueMetadata{random->dtype, random->shape};
  }
  const auto& a = std::get<IotaAttributes>(attributes);
  if (!dtype_in_class(a.dtype, DTypeClass::kNumeric)) {
    return in.error(ErrorCode::kDTypeMismatch, "iota dtype must be numeric, found {}", a.dtype);
  }
  TENFERRO_TRY(in.check_attribute_shape(a.shape, "iota shape"));
  TENFERRO_TRY(in.check_axes({a.axis}, static_cast<std::int64_t>(a.shape.size()), "iota axis"));
  return ValueMetadata{a.dtype, a.shape};
}

Result<ValueMetadata> infer_reduction(CoreSemanticOp op, const CoreAttributes& attributes, Inference& in) {
  TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0}));
  TENFERRO_ASSIGN_OR_RETURN(DType result, in.result_dtype(dtype));
  const ValueMetadata& x = in.operand(0);
  Dims axes;
  if (const auto* reduce = std::get_if<ReduceAttributes>(&attributes)) {
    axes = reduce->axes;
  } else {
    axes.push_back(std::get<ArgReduceAttributes>(attributes).axis);
  }
  TENFERRO_TRY(in.check_axes(axes, x.rank(), "reduction axes"));
  if (op == CoreSemanticOp::kArgmax || op == CoreSemanticOp::kArgmin) {
    TENFERRO_TRY(in.constraints().require_less_equal(1, x.shape[static_cast<std::size_t>(axes[0])],
                                                     "the arg-reduction axis is non-empty"));
  }
  SymbolicShape shape;
  for (std::size_t k = 0; k < x.shape.size(); ++k)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) == axes.end()) shape.push_back(x.shape[k]);
  return ValueMetadata{result, std::move(shape)};
}

// cumsum, cumprod, sort, argsort: one axis, the operand's shape.
Result<ValueMetadata> infer_along_axis(const CoreAttributes& attributes, Inference& in) {
  TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0}));
  TENFERRO_ASSIGN_OR_RETURN(DType result, in.result_dtype(dtype));
  const auto* cumulative = std::get_if<CumulativeAttributes>(&attributes);
  const std::int64_t axis = cumulative != nullptr ? cumulative->axis : std::get<SortAttributes>(attributes).axis;
  TENFERRO_TRY(in.check_axes({axis}, in.operand(0).rank(), "axis"));
  return ValueMetadata{result, in.operand(0).shape};
}

Result<ValueMetadata> infer_dot_general(const DotGeneralAttributes& a, Inference& in) {
  TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0, 1}));
  const ValueMetadata& lhs = in.operand(0);
  const ValueMetadata& rhs = in.operand(1);
  if (a.lhs_batch.size() != a.rhs_batch.size() || a.lhs_contract.size() != a.rhs_contract.size()) {
    return in.error(ErrorCode::kInvalidArgument,
                    "batch dims {} / {} and contracting dims {} / {} must pair up (equal counts)", ints(a.lhs_batch),
                    ints(a.rhs_batch), ints(a.lhs_contract), ints(a.rhs_contract));
  }
  Dims lhs_used = a.lhs_batch, rhs_used = a.rhs_batch;
  for (std::int64_t d : a.lhs_contract) lhs_used.push_back(d);
  for (std::int64_t d : a.rhs_contract) rhs_used.push_back(d);
  TENFERRO_TRY(in.check_axes(lhs_used, lhs.rank(), "lhs batch+contracting dims"));
  TENFERRO_TRY(in.check_axes(rhs_used, rhs.rank(), "rhs batch+contracting dims"));
  SymbolicShape shape;
  auto& c = in.constraints();
  for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
    const SymbolicExtent& l = lhs.shape[static_cast<std::size_t>(a.lhs_batch[i])];
    const SymbolicExtent& r = rhs.shape[static_cast<std::size_t>(a.rhs_batch[i])];
    TENFERRO_TRY(
        c.require_equal(l, r, "batch dim pair {} (lhs axis {}, rhs axis {})", i, a.lhs_batch[i], a.rhs_batch[i]));
    shape.push_back(!l.is_exact() && r.is_exact() ? r : l);
  }
  for (std::size_t i = 0; i < a.lhs_contract.size(); ++i) {
    const SymbolicExtent& l = lhs.shape[static_cast<std::size_t>(a.lhs_contract[i])];
    const SymbolicExtent& r = rhs.shape[static_cast<std::size_t>(a.rhs_contract[i])];
    TENFERRO_TRY(c.require_equal(l, r, "contracting dim pair {} (lhs axis {}, rhs axis {})", i, a.lhs_contract[i],
                                 a.rhs_contract[i]));
  }
  for (std::size_t k = 0; k < lhs.shape.size(); ++k)
    if (std::find(lhs_used.begin(), lhs_used.end(), static_cast<std::int64_t>(k)) == lhs_used.end())
      shape.push_back(lhs.shape[k]);
  for (std::size_t k = 0; k < rhs.shape.size(); ++k)
    if (std::find(rhs_used.begin(), rhs_used.end(), static_cast<std::int64_t>(k)) == rhs_used.end())
      shape.push_back(rhs.shape[k]);
  return ValueMetadata{dtype, std::move(shape)};
}

// Note [General gather and scatter]: the StableHLO constraints (gather
// C1-C15, scatter C1-C15 without the batching dims), each a typed error that
// names the attribute, what was expected and what was found.

// `axes` strictly increasing and each in [0, rank).
Status check_sorted_axes(Inference& in, IntArrayRef axes, std::int64_t rank, std::string_view what) {
  TENFERRO_TRY(in.check_axes(axes, rank, what));
  for (std::size_t k = 1; k < axes.size(); ++k) {
    if (axes[k] <= axes[k - 1]) {
      return in.error(ErrorCode::kInvalidArgument, "{} {} must be strictly increasing", what, ints(axes));
    }
  }
  return ok_status();
}

bool contains(IntArrayRef axes, std::int64_t axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

// The index operand (operand 1): int32/int64; index_vector_dim in
// [0, rank]; the index-vector length matches `index_map` (a distinct set of
// operand axes). Returns the indices' batch extents (all axes but
// index_vector_dim).
Result<SymbolicShape> check_index_operand(Inference& in, std::int64_t index_vector_dim, IntArrayRef index_map,
                                          std::int64_t operand_rank, std::string_view map_name) {
  TENFERRO_TRY(in.require_index_dtype(1));
  const ValueMetadata& indices = in.operand(1);
  const std::int64_t rank = indices.rank();
  if (index_vector_dim < 0 || index_vector_dim > rank) {
    return in.error(ErrorCode::kAxisOutOfRange, "index_vector_dim must be in [0, {}] (indices rank {}), found {}", rank,
                    rank, index_vector_dim);
  }
  if (index_vector_dim < rank) {
    TENFERRO_TRY(in.constraints().require_equal(indices.shape[static_cast<std::size_t>(index_vector_dim)],
                                                static_cast<std::int64_t>(index_map.size()),
                                                "indices extent of index_vector_dim {} equals the length of {} {}",
                                                index_vector_dim, map_name, ints(index_map)));
  } else if (index_map.size() != 1) {
    return in.error(ErrorCode::kInvalidArgument,
                    "index_vector_dim {} == indices rank means index vectors of length 1, but {} {} has length {}",
                    index_vector_dim, map_name, ints(index_map), index_map.size());
  }
  TENFERRO_TRY(in.check_axes(index_map, operand_rank, map_name));
  SymbolicShape batch;
  for (std::int64_t k = 0; k < rank; ++k)
    if (k != index_vector_dim) batch.push_back(indices.shape[static_cast<std::size_t>(k)]);
  return batch;
}

Result<ValueMetadata> infer_gather(const GatherAttributes& a, Inference& in) {
  auto& c = in.constraints();
  const ValueMetadata& x = in.operand(0);
  const std::int64_t rank = x.rank();
  TENFERRO_TRY(check_sorted_axes(in, a.collapsed_slice_dims, rank, "collapsed_slice_dims"));
  TENFERRO_ASSIGN_OR_RETURN(SymbolicShape batch,
                            check_index_operand(in, a.index_vector_dim, a.start_index_map, rank, "start_index_map"));
  if (static_cast<std::int64_t>(a.slice_sizes.size()) != rank) {
    return in.error(ErrorCode::kInvalidArgument, "slice_sizes {} must have one entry per operand axis (rank {})",
                    shape_string(a.slice_sizes), rank);
  }
  TENFERRO_TRY(in.check_attribute_shape(a.slice_sizes, "slice_sizes"));
  const auto window_rank = static_cast<std::int64_t>(rank - static_cast<std::int64_t>(a.collapsed_slice_dims.size()));
  if (static_cast<std::int64_t>(a.offset_dims.size()) != window_rank) {
    return in.error(ErrorCode::kInvalidArgument,
                    "offset_dims {} must name one result axis per operand axis not in collapsed_slice_dims {} "
                    "(expected {}, found {})",
                    ints(a.offset_dims), ints(a.collapsed_slice_dims), window_rank, a.offset_dims.size());
  }
  const auto result_rank = static_cast<std::int64_t>(batch.size()) + window_rank;
  TENFERRO_TRY(check_sorted_axes(in, a.offset_dims, result_rank, "offset_dims"));
  SymbolicShape window;
  for (std::int64_t d = 0; d < rank; ++d) {
    const SymbolicExtent& size = a.slice_sizes[static_cast<std::size_t>(d)];
    if (contains(a.collapsed_slice_dims, d)) {
      if (!size.is_exact() || *size.exact_value() != 1) {
        return in.error(ErrorCode::kInvalidArgument,
                        "slice_sizes {}: collapsed axis {} must have slice size 1, found {}",
                        shape_string(a.slice_sizes), d, size.to_string());
      }
      continue;
    }
    TENFERRO_TRY(c.require_less_equal(size, x.shape[static_cast<std::size_t>(d)],
                                      fmt::format("slice size of operand axis {} <= extent", d)));
    window.push_back(size);
  }
  SymbolicShape shape;
  std::size_t next_batch = 0, next_window = 0;
  for (std::int64_t k = 0; k < result_rank; ++k)
    shape.push_back(contains(a.offset_dims, k) ? window[next_window++] : batch[next_batch++]);
  return ValueMetadata{x.dtype, std::move(shape)};
}

Result<ValueMetadata> infer_scatter(const ScatterAttributes& a, Inference& in) {
  auto& c = in.constraints();
  const ValueMetadata& x = in.operand(0);
  const ValueMetadata& updates = in.operand(2);
  const std::int64_t rank = x.rank();
  TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0, 2}));
  if (a.combine == ScatterCombine::kAdd && dtype == DType::kBool) {
    return in.error(ErrorCode::kDTypeMismatch, "scatter with combine add needs a numeric dtype, found bool");
  }
  TENFERRO_TRY(check_sorted_axes(in, a.inserted_window_dims, rank, "inserted_window_dims"));
  TENFERRO_ASSIGN_OR_RETURN(SymbolicShape batch,
                            check_index_operand(in, a.index_vector_dim, a.scatter_dims_to_operand_dims, rank,
                                                "scatter_dims_to_operand_dims"));
  const auto window_rank = static_cast<std::int64_t>(rank - static_cast<std::int64_t>(a.inserted_window_dims.size()));
  if (static_cast<std::int64_t>(a.update_window_dims.size()) != window_rank) {
    return in.error(ErrorCode::kInvalidArgument,
                    "update_window_dims {} must name one updates axis per operand axis not in inserted_window_dims {} "
                    "(expected {}, found {})",
                    ints(a.update_window_dims), ints(a.inserted_window_dims), window_rank, a.update_window_dims.size());
  }
  const auto updates_rank = static_cast<std::int64_t>(batch.size()) + window_rank;
  if (updates.rank() != updates_rank) {
    return in.error(ErrorCode::kShapeMismatch,
                    "updates must have rank {} ({} scatter axes from the indices + {} window axes), found {}",
                    updates_rank, batch.size(), window_rank, updates.to_string());
  }
  TENFERRO_TRY(check_sorted_axes(in, a.update_window_dims, updates_rank, "update_window_dims"));
  std::size_t next_batch = 0;
  std::int64_t operand_axis = 0;
  for (std::int64_t k = 0; k < updates_rank; ++k) {
    const SymbolicExtent& e = updates.shape[static_cast<std::size_t>(k)];
    if (!contains(a.update_window_dims, k)) {
      TENFERRO_TRY(c.require_equal(e, batch[next_batch], "updates scatter axis {} matches indices batch axis {}", k,
                                   next_batch));
      ++next_batch;
      continue;
    }
    while (contains(a.inserted_window_dims, operand_axis)) ++operand_axis;
    TENFERRO_TRY(
        c.require_less_equal(e, x.shape[static_cast<std::size_t>(operand_axis)],
                             fmt::format("updates window axis {} <= extent of operand axis {}", k, operand_axis)));
    ++operand_axis;
  }
  return ValueMetadata{dtype, x.shape};
}

Result<ValueMetadata> infer_data_movement(CoreSemanticOp op, const CoreAttributes& attributes, Inference& in);

}  // namespace

Result<ValueMetadata> infer_core_metadata(CoreSemanticOp op, const CoreAttributes& attributes,
                                          std::span<const ValueMetadata> operands, ShapeConstraints& constraints) {
  const CoreOpInfo& info = core_op_info(op);
  const auto n = static_cast<int>(operands.size());
  if (n < info.min_operands || (info.max_operands != kVariadic && n > info.max_operands)) {
    return constraints.error(ErrorCode::kInvalidArgument, "expected {} operands, found {}",
                             info.max_operands == kVariadic ? fmt::format("at least {}", info.min_operands)
                             : info.min_operands == info.max_operands
                                 ? fmt::format("{}", info.min_operands)
                                 : fmt::format("{} to {}", info.min_operands, info.max_operands),
                             n);
  }
  if (attributes.index() != info.attributes_index) {
    return constraints.error(ErrorCode::kInvalidArgument, "expected attributes {}, found {}",
                             kAttributeNames[static_cast<std::size_t>(op)],
                             attribute_name_of_index(attributes.index()));
  }
  Inference in(op, operands, constraints);
  // Note [Core op families]: one rule per family; the family rules dispatch
  // on the op only inside their own family.
  switch (info.family) {
    case CoreOpFamily::kElementwise:
      return infer_elementwise(op, attributes, in);
    case CoreOpFamily::kCreation:
      return infer_creation(attributes, in);
    case CoreOpFamily::kDataMovement:
      return infer_data_movement(op, attributes, in);
    case CoreOpFamily::kReduction:
      return infer_reduction(op, attributes, in);
    case CoreOpFamily::kAlongAxis:
      return infer_along_axis(attributes, in);
    case CoreOpFamily::kContraction:
      return infer_dot_general(std::get<DotGeneralAttributes>(attributes), in);
  }
  return in.error(ErrorCode::kInternal, "{} has no family", op);
}

namespace {

Result<ValueMetadata> infer_data_movement(CoreSemanticOp op, const CoreAttributes& attributes, Inference& in) {
  auto& c = in.constraints();
  const ValueMetadata& x = in.operand(0);
  const std::int64_t rank = x.rank();
  switch (op) {
    case CoreSemanticOp::kBroadcastInDim: {
      const auto& a = std::get<BroadcastInDimAttributes>(attributes);
      TENFERRO_TRY(in.check_attribute_shape(a.shape, "broadcast shape"));
      if (static_cast<std::int64_t>(a.dims.size()) != rank) {
        return in.error(ErrorCode::kInvalidArgument, "dims {} must name one result axis per operand axis (rank {})",
                        ints(a.dims), rank);
      }
      TENFERRO_TRY(in.check_axes(a.dims, static_cast<std::int64_t>(a.shape.size()), "broadcast dims"));
      for (std::size_t k = 1; k < a.dims.size(); ++k) {
        if (a.dims[k] <= a.dims[k - 1]) {
          return in.error(ErrorCode::kInvalidArgument, "broadcast dims {} must be strictly increasing", ints(a.dims));
        }
      }
      for (std::size_t k = 0; k < a.dims.size(); ++k) {
        const SymbolicExtent& e = x.shape[k];
        if (e.is_exact() && *e.exact_value() == 1) continue;
        TENFERRO_TRY(c.require_equal(e, a.shape[static_cast<std::size_t>(a.dims[k])],
                                     "operand axis {} is 1 or equals result axis {}", k, a.dims[k]));
      }
      return ValueMetadata{x.dtype, a.shape};
    }
    case CoreSemanticOp::kReshape: {
      const auto& a = std::get<ReshapeAttributes>(attributes);
      TENFERRO_TRY(in.check_attribute_shape(a.shape, "reshape shape"));
      auto exact_from = exact_shape(x.shape);
      auto exact_to = exact_shape(a.shape);
      if (exact_from && exact_to) {
        TENFERRO_ASSIGN_OR_RETURN(std::int64_t from, checked_numel(*exact_from));
        TENFERRO_ASSIGN_OR_RETURN(std::int64_t to, checked_numel(*exact_to));
        if (from != to) {
          return in.error(ErrorCode::kShapeMismatch, "reshape to {} holds {} elements, the operand {} has {}",
                          shape_string(a.shape), to, shape_string(x.shape), from);
        }
      } else {
        TENFERRO_TRY(
            c.require_equal(symbolic_numel(x.shape), symbolic_numel(a.shape), "reshape keeps the element count"));
      }
      return ValueMetadata{x.dtype, a.shape};
    }
    case CoreSemanticOp::kTranspose: {
      const auto& a = std::get<TransposeAttributes>(attributes);
      if (static_cast<std::int64_t>(a.perm.size()) != rank) {
        return in.error(ErrorCode::kInvalidArgument, "perm {} must be a permutation of {} axes", ints(a.perm), rank);
      }
      TENFERRO_TRY(in.check_axes(a.perm, rank, "perm"));
      SymbolicShape shape;
      for (std::int64_t p : a.perm) shape.push_back(x.shape[static_cast<std::size_t>(p)]);
      return ValueMetadata{x.dtype, std::move(shape)};
    }
    case CoreSemanticOp::kSlice: {
      const auto& a = std::get<SliceAttributes>(attributes);
      if (static_cast<std::int64_t>(a.start.size()) != rank || a.limit.size() != a.start.size() ||
          a.stride.size() != a.start.size()) {
        return in.error(ErrorCode::kInvalidArgument,
                        "start {}, limit {} and stride {} need one entry per axis (rank {})", ints(a.start),
                        ints(a.limit), ints(a.stride), rank);
      }
      SymbolicShape shape;
      for (std::size_t k = 0; k < a.start.size(); ++k) {
        if (a.start[k] < 0 || a.start[k] > a.limit[k] || a.stride[k] < 1) {
          return in.error(ErrorCode::kInvalidArgument,
                          "axis {}: expected 0 <= start <= limit and stride >= 1, found start {}, limit {}, stride {}",
                          k, a.start[k], a.limit[k], a.stride[k]);
        }
        TENFERRO_TRY(c.require_less_equal(a.limit[k], x.shape[k], fmt::format("slice limit of axis {} <= extent", k)));
        shape.push_back((a.limit[k] - a.start[k] + a.stride[k] - 1) / a.stride[k]);
      }
      return ValueMetadata{x.dtype, std::move(shape)};
    }
    case CoreSemanticOp::kReverse: {
      TENFERRO_TRY(in.check_axes(std::get<ReverseAttributes>(attributes).axes, rank, "reverse axes"));
      return x;
    }
    case CoreSemanticOp::kConcatenate: {
      const std::int64_t axis = std::get<ConcatenateAttributes>(attributes).axis;
      DType dtype = x.dtype;
      for (std::size_t i = 0; i < in.num_operands(); ++i) {
        if (in.operand(i).dtype != dtype) {
          return in.error(ErrorCode::kDTypeMismatch, "operands must share one dtype, found {} and {}", dtype,
                          in.operand(i).dtype);
        }
        TENFERRO_TRY(in.check_rank(i, rank));
      }
      TENFERRO_TRY(in.check_axes({axis}, rank, "concatenate axis"));
      SymbolicShape shape = x.shape;
      shape[static_cast<std::size_t>(axis)] = 0;
      for (std::size_t i = 0; i < in.num_operands(); ++i) {
        for (std::size_t k = 0; k < shape.size(); ++k) {
          const SymbolicExtent& e = in.operand(i).shape[k];
          if (static_cast<std::int64_t>(k) == axis) {
            shape[k] = shape[k] + e;
          } else {
            TENFERRO_TRY(c.require_equal(shape[k], e, "operand {} axis {} matches operand 0", i, k));
            if (!shape[k].is_exact() && e.is_exact()) shape[k] = e;
          }
        }
      }
      return ValueMetadata{dtype, std::move(shape)};
    }
    case CoreSemanticOp::kPad: {
      const auto& a = std::get<PadAttributes>(attributes);
      TENFERRO_ASSIGN_OR_RETURN(DType dtype, in.data_dtype({0, 1}));
      TENFERRO_TRY(in.check_rank(1, 0));
      if (static_cast<std::int64_t>(a.low.size()) != rank || a.high.size() != a.low.size() ||
          a.interior.size() != a.low.size()) {
        return in.error(ErrorCode::kInvalidArgument,
                        "low {}, high {} and interior {} need one entry per axis (rank {})", ints(a.low), ints(a.high),
                        ints(a.interior), rank);
      }
      SymbolicShape shape;
      for (std::size_t k = 0; k < a.low.size(); ++k) {
        if (a.low[k] < 0 || a.high[k] < 0 || a.interior[k] < 0) {
          return in.error(ErrorCode::kInvalidArgument,
                          "axis {}: padding must be >= 0, found low {}, high {}, interior {}", k, a.low[k], a.high[k],
                          a.interior[k]);
        }
        const SymbolicExtent& e = x.shape[k];
        SymbolicExtent padded = e + a.low[k] + a.high[k];
        if (a.interior[k] > 0) padded = padded + max(SymbolicExtent(0), e - 1) * a.interior[k];
        if (padded.is_exact() && *padded.exact_value() > (std::int64_t{1} << 62)) {
          return in.error(ErrorCode::kSizeOverflow, "axis {}: the padded extent overflows", k);
        }
        shape.push_back(std::move(padded));
      }
      return ValueMetadata{dtype, std::move(shape)};
    }
    case CoreSemanticOp::kDynamicSlice: {
      const auto& a = std::get<DynamicSliceAttributes>(attributes);
      if (static_cast<std::int64_t>(in.num_operands()) != 1 + rank ||
          static_cast<std::int64_t>(a.sizes.size()) != rank) {
        return in.error(ErrorCode::kInvalidArgument,
                        "expected one start operand and one size per axis (rank {}), found "
                        "{} starts and sizes {}",
                        rank, in.num_operands() - 1, ints(a.sizes));
      }
      for (std::size_t i = 1; i < in.num_operands(); ++i) TENFERRO_TRY(in.require_integer_scalar(i, "a start index"));
      SymbolicShape shape;
      for (std::size_t k = 0; k < a.sizes.size(); ++k) {
        if (a.sizes[k] < 0)
          return in.error(ErrorCode::kInvalidArgument, "size {} of axis {} is negative", a.sizes[k], k);
        TENFERRO_TRY(c.require_less_equal(a.sizes[k], x.shape[k], fmt::format("slice size of axis {} <= extent", k)));
        shape.push_back(a.sizes[k]);
      }
      return ValueMetadata{x.dtype, std::move(shape)};
    }
    case CoreSemanticOp::kDynamicUpdateSlice: {
      if (static_cast<std::int64_t>(in.num_operands()) != 2 + rank) {
        return in.error(ErrorCode::kInvalidArgument, "expected one start operand per axis (rank {}), found {}", rank,
                        in.num_operands() - 2);
      }
      TENFERRO_TRY(in.data_dtype({0, 1}));
      TENFERRO_TRY(in.check_rank(1, rank));
      for (std::size_t i = 2; i < in.num_operands(); ++i) TENFERRO_TRY(in.require_integer_scalar(i, "a start index"));
      for (std::size_t k = 0; k < x.shape.size(); ++k) {
        TENFERRO_TRY(c.require_less_equal(in.operand(1).shape[k], x.shape[k],
                                          fmt::format("update extent of axis {} <= extent", k)));
      }
      return x;
    }
    case CoreSemanticOp::kGather:
      return infer_gather(std::get<GatherAttributes>(attributes), in);
    case CoreSemanticOp::kScatter:
      return infer_scatter(std::get<ScatterAttributes>(attributes), in);
    default:
      break;
  }
  return in.error(ErrorCode::kInternal, "no data-movement rule");
}

}  // namespace
}  // namespace tenferro::program
