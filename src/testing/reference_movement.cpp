// Reference evaluation of creation, shape and data-movement core ops
// (docs/core_ops.md "Creation", "Shape and data movement"). Most of them
// are "y[i] = x[source(i)]"; copy_mapped does that bytewise for any dtype.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "reference_ops.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"

namespace tenferro::testing::internal {
namespace {

using program::CoreSemanticOp;

/// y of `shape` and x's dtype with y[i] = x[source(i)], where
/// source(out_index, in_index) fills x's multi-index.
template <class Source>
Result<Tensor> copy_mapped(const Tensor& x, IntArrayRef shape, Source source) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(shape, x.dtype()));
  const std::size_t size = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.data());
  auto* dst = static_cast<std::byte*>(y.data());
  Dims in(static_cast<std::size_t>(x.rank()), 0);
  std::int64_t i = 0;
  for_each_index(shape, [&](std::span<const std::int64_t> out) {
    source(out, in.mutable_span());
    const std::int64_t offset = linear_offset(in.span(), x.shape());
    std::memcpy(dst + static_cast<std::size_t>(i++) * size, src + static_cast<std::size_t>(offset) * size, size);
  });
  return y;
}

/// Copies all of `src` into `dst` at element offsets target(src_index).
template <class Target>
void copy_into(const Tensor& src, Tensor& dst, Target target) {
  const std::size_t size = dtype_size(src.dtype());
  const auto* from = static_cast<const std::byte*>(src.data());
  auto* to = static_cast<std::byte*>(dst.data());
  Dims out(static_cast<std::size_t>(dst.rank()), 0);
  std::int64_t i = 0;
  for_each_index(src.shape(), [&](std::span<const std::int64_t> in) {
    target(in, out.mutable_span());
    const std::int64_t offset = linear_offset(out.span(), dst.shape());
    std::memcpy(to + static_cast<std::size_t>(offset) * size, from + static_cast<std::size_t>(i++) * size, size);
  });
}

Result<Tensor> clone(const Tensor& x) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(x.shape(), x.dtype()));
  if (x.nbytes() > 0) std::memcpy(y.data(), x.data(), x.nbytes());
  return y;
}

Result<Tensor> constant(const CoreCall& call) {
  const program::Literal& literal = call.op.attributes_as<program::ConstantAttributes>()->literal;
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(literal.shape(), literal.dtype()));
  if (literal.nbytes() > 0) std::memcpy(y.data(), literal.bytes().data(), literal.nbytes());
  return y;
}

Result<Tensor> iota(const CoreCall& call) {
  const auto& attributes = *call.op.attributes_as<program::IotaAttributes>();
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, call.result_dtype));
  const auto axis = static_cast<std::size_t>(attributes.axis);
  visit_dtype(call.result_dtype, [&]<class T>(T) {
    T* dst = mutable_elements<T>(y);
    std::int64_t i = 0;
    for_each_index(call.result_shape, [&](std::span<const std::int64_t> index) {
      if constexpr (kIsComplex<T>) {
        dst[i++] = T(static_cast<typename T::value_type>(index[axis]), 0);
      } else {
        dst[i++] = static_cast<T>(index[axis]);
      }
    });
  });
  return y;
}

Result<Tensor> concatenate(const CoreCall& call) {
  const auto axis = static_cast<std::size_t>(call.op.attributes_as<program::ConcatenateAttributes>()->axis);
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, call.operands[0].dtype()));
  std::int64_t start = 0;
  for (const Tensor& x : call.operands) {
    copy_into(x, y, [&](std::span<const std::int64_t> in, std::span<std::int64_t> out) {
      std::copy(in.begin(), in.end(), out.begin());
      out[axis] += start;
    });
    start += x.size(static_cast<std::int64_t>(axis));
  }
  return y;
}

Result<Tensor> pad(const CoreCall& call) {
  const auto& attributes = *call.op.attributes_as<program::PadAttributes>();
  const Tensor& x = call.operands[0];
  const Tensor& value = call.operands[1];
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, x.dtype()));
  const std::size_t size = dtype_size(x.dtype());
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    std::memcpy(static_cast<std::byte*>(y.data()) + static_cast<std::size_t>(i) * size, value.data(), size);
  }
  copy_into(x, y, [&](std::span<const std::int64_t> in, std::span<std::int64_t> out) {
    for (std::size_t k = 0; k < in.size(); ++k) out[k] = attributes.low[k] + in[k] * (attributes.interior[k] + 1);
  });
  return y;
}

/// The clamped start of every axis (dynamic_slice, dynamic_update_slice).
Dims clamped_starts(std::span<const Tensor> starts, IntArrayRef operand_shape, IntArrayRef window) {
  Dims out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t limit = std::max<std::int64_t>(0, operand_shape[k] - window[k]);
    out.push_back(std::clamp<std::int64_t>(index_element(starts[k], 0), 0, limit));
  }
  return out;
}

bool contains(IntArrayRef axes, std::int64_t axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

// Note [Reference gather and scatter]
// Straight from the StableHLO spec, one element at a time: an element of
// the result (gather) or of the updates (scatter) at index `i` splits into
// batch axes (not in `window_dims`) and window axes; the batch part, with
// the index-vector axis inserted, reads the start vector from the indices.
struct IndexMap {
  IntArrayRef window_dims;  // offset_dims / update_window_dims
  IntArrayRef dropped;      // collapsed_slice_dims / inserted_window_dims
  IntArrayRef start_map;    // start_index_map / scatter_dims_to_operand_dims
  std::int64_t index_vector_dim;
};

// Fills `start` (unclamped, one per operand axis) and `offset` (operand
// axes, 0 on dropped ones) for element `i` of the dense side.
void split_index(const IndexMap& m, const Tensor& indices, std::span<const std::int64_t> i, Dims& start, Dims& offset) {
  Dims batch, window;
  for (std::size_t k = 0; k < i.size(); ++k)
    (contains(m.window_dims, static_cast<std::int64_t>(k)) ? window : batch).push_back(i[k]);
  std::fill(start.begin(), start.end(), 0);
  const bool explicit_vector = m.index_vector_dim < indices.rank();
  for (std::size_t k = 0; k < m.start_map.size(); ++k) {
    Dims at = batch;
    if (explicit_vector) at.insert(at.begin() + m.index_vector_dim, static_cast<std::int64_t>(k));
    start[static_cast<std::size_t>(m.start_map[k])] = index_element(indices, linear_offset(at.span(), indices.shape()));
  }
  std::size_t next = 0;
  for (std::size_t d = 0; d < offset.size(); ++d)
    offset[d] = contains(m.dropped, static_cast<std::int64_t>(d)) ? 0 : window[next++];
}

// The window extent of every operand axis: the dense side's extents at the
// window axes, 1 on dropped axes.
Dims window_extents(const IndexMap& m, std::int64_t rank, IntArrayRef dense_shape) {
  Dims out;
  std::size_t next = 0;
  for (std::int64_t d = 0; d < rank; ++d)
    out.push_back(contains(m.dropped, d) ? 1 : dense_shape[static_cast<std::size_t>(m.window_dims[next++])]);
  return out;
}

Result<Tensor> gather(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  const Tensor& indices = call.operands[1];
  const auto& a = *call.op.attributes_as<program::GatherAttributes>();
  const IndexMap m{a.offset_dims, a.collapsed_slice_dims, a.start_index_map, a.index_vector_dim};
  const Dims window = window_extents(m, x.rank(), call.result_shape);
  Dims start(static_cast<std::size_t>(x.rank()), 0), offset(start.size(), 0);
  return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
    split_index(m, indices, out, start, offset);
    for (std::size_t d = 0; d < in.size(); ++d) {
      const std::int64_t s = std::clamp<std::int64_t>(start[d], 0, x.shape()[d] - window[d]);
      in[d] = s + offset[d];
    }
  });
}

Result<Tensor> scatter(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  const Tensor& indices = call.operands[1];
  const Tensor& updates = call.operands[2];
  const auto& a = *call.op.attributes_as<program::ScatterAttributes>();
  const IndexMap m{a.update_window_dims, a.inserted_window_dims, a.scatter_dims_to_operand_dims, a.index_vector_dim};
  const Dims window = window_extents(m, x.rank(), updates.shape());
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, clone(x));
  const bool add = a.combine == program::ScatterCombine::kAdd;
  visit_dtype(x.dtype(), [&]<class T>(T) {
    T* dst = mutable_elements<T>(y);
    const T* src = elements<T>(updates);
    Dims start(static_cast<std::size_t>(x.rank()), 0), offset(start.size(), 0), target(start.size(), 0);
    std::int64_t i = 0;
    for_each_index(updates.shape(), [&](std::span<const std::int64_t> u) {
      split_index(m, indices, u, start, offset);
      bool inside = true;  // the whole window lies in x, else it is skipped
      for (std::size_t d = 0; d < target.size(); ++d) {
        inside = inside && start[d] >= 0 && start[d] + window[d] <= x.shape()[d];
        target[d] = start[d] + offset[d];
      }
      if (inside) {
        T& slot = dst[linear_offset(target.span(), x.shape())];
        if constexpr (std::is_same_v<T, bool>) {
          slot = add ? (slot || src[i]) : src[i];
        } else {
          slot = add ? wrap_add(slot, src[i]) : src[i];
        }
      }
      ++i;
    });
  });
  return y;
}

}  // namespace

Result<Tensor> evaluate_movement(const CoreCall& call) {
  switch (call.op.core_op()) {
    case CoreSemanticOp::kConstant:
      return constant(call);
    case CoreSemanticOp::kIota:
      return iota(call);
    case CoreSemanticOp::kRngPhilox:
      return evaluate_random(call);
    case CoreSemanticOp::kConcatenate:
      return concatenate(call);
    case CoreSemanticOp::kPad:
      return pad(call);
    case CoreSemanticOp::kGather:
      return gather(call);
    case CoreSemanticOp::kScatter:
      return scatter(call);
    default:
      break;
  }
  const Tensor& x = call.operands[0];
  switch (call.op.core_op()) {
    case CoreSemanticOp::kReshape:
      // Row-major element order is kept: the elements are the same bytes.
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        std::int64_t offset = linear_offset(out, call.result_shape);
        for (std::size_t k = in.size(); k-- > 0;) {
          in[k] = offset % x.size(static_cast<std::int64_t>(k));
          offset /= x.size(static_cast<std::int64_t>(k));
        }
      });
    case CoreSemanticOp::kBroadcastInDim: {
      const Dims& dims = call.op.attributes_as<program::BroadcastInDimAttributes>()->dims;
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        for (std::size_t k = 0; k < in.size(); ++k) {
          in[k] = x.size(static_cast<std::int64_t>(k)) == 1 ? 0 : out[static_cast<std::size_t>(dims[k])];
        }
      });
    }
    case CoreSemanticOp::kTranspose: {
      const Dims& perm = call.op.attributes_as<program::TransposeAttributes>()->perm;
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        for (std::size_t i = 0; i < out.size(); ++i) in[static_cast<std::size_t>(perm[i])] = out[i];
      });
    }
    case CoreSemanticOp::kSlice: {
      const auto& a = *call.op.attributes_as<program::SliceAttributes>();
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        for (std::size_t k = 0; k < in.size(); ++k) in[k] = a.start[k] + out[k] * a.stride[k];
      });
    }
    case CoreSemanticOp::kReverse: {
      const Dims& axes = call.op.attributes_as<program::ReverseAttributes>()->axes;
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        for (std::size_t k = 0; k < in.size(); ++k) {
          const bool reversed = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(k)) != axes.end();
          in[k] = reversed ? x.size(static_cast<std::int64_t>(k)) - 1 - out[k] : out[k];
        }
      });
    }
    case CoreSemanticOp::kDynamicSlice: {
      const Dims starts = clamped_starts(call.operands.subspan(1), x.shape(), call.result_shape);
      return copy_mapped(x, call.result_shape, [&](std::span<const std::int64_t> out, std::span<std::int64_t> in) {
        for (std::size_t k = 0; k < in.size(); ++k) in[k] = starts[k] + out[k];
      });
    }
    case CoreSemanticOp::kDynamicUpdateSlice: {
      const Tensor& update = call.operands[1];
      const Dims starts = clamped_starts(call.operands.subspan(2), x.shape(), update.shape());
      TENFERRO_ASSIGN_OR_RETURN(Tensor y, clone(x));
      copy_into(update, y, [&](std::span<const std::int64_t> in, std::span<std::int64_t> out) {
        for (std::size_t k = 0; k < in.size(); ++k) out[k] = starts[k] + in[k];
      });
      return y;
    }
    default:
      break;
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} is not a movement op",
                    call.op.name());
}

}  // namespace tenferro::testing::internal
