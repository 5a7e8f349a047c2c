// dynamic_slice, dynamic_update_slice, concatenate, pad and reverse: each is
// validation plus one or more copy_elements calls between sub-views (a
// window is an offset, a padded interior a stride, a reversal negative
// strides).
#include <algorithm>

#include "cpu/kernels/copy_kernel.h"
#include "cpu/kernels/fill_kernel.h"
#include "cpu/kernels/validation.h"
#include "tenferro/cpu/kernels/indexing.h"

namespace tenferro::cpu {
namespace {

using internal::kMaxKernelRank;
using internal::kStage;

char* element_address(const TensorView& v, IntArrayRef index) {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * v.strides[d];
  return static_cast<char*>(v.data) + off * static_cast<std::int64_t>(dtype_size(v.dtype));
}

Status check_rank(std::string_view op, std::string_view name, const TensorView& v, std::int64_t rank) {
  if (v.rank() == rank) return ok_status();
  return make_error(ErrorCode::kShapeMismatch, kStage, "{}: {} must have rank {}, found shape {}", op, name, rank,
                    shape_to_string(v.shape));
}

// Starts clamped to [0, x.shape[k] - window[k]].
Status clamped_starts(std::string_view op, const TensorView& x, IntArrayRef window, IntArrayRef starts,
                      std::int64_t* clamped) {
  if (starts.size() != x.shape.size()) {
    return make_error(ErrorCode::kShapeMismatch, kStage, "{}: expected {} start indices, found {}", op, x.rank(),
                      starts.size());
  }
  for (std::size_t d = 0; d < starts.size(); ++d) {
    if (window[d] > x.shape[d]) {
      return make_error(ErrorCode::kShapeMismatch, kStage, "{}: window {} does not fit in operand shape {}", op,
                        shape_to_string(window), shape_to_string(x.shape));
    }
    clamped[d] = std::clamp<std::int64_t>(starts[d], 0, x.shape[d] - window[d]);
  }
  return ok_status();
}

std::int64_t item_of(const TensorView& v) { return static_cast<std::int64_t>(dtype_size(v.dtype)); }

}  // namespace

Status read_start_indices(std::span<const TensorView> scalars, Dims& starts) {
  starts.clear();
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    const TensorView& s = scalars[i];
    TENFERRO_TRY(internal::check_view("dynamic_slice", "start index", s));
    if (s.rank() != 0 || !is_integer(s.dtype)) {
      return make_error(ErrorCode::kInvalidArgument, kStage,
                        "dynamic_slice: start index {} must be a rank-0 int32 or int64 tensor, found {} of shape {}", i,
                        s.dtype, shape_to_string(s.shape));
    }
    starts.push_back(s.dtype == DType::kInt32 ? *static_cast<const std::int32_t*>(s.data)
                                              : *static_cast<const std::int64_t*>(s.data));
  }
  return ok_status();
}

Status dynamic_slice(const TensorView& x, IntArrayRef starts, const TensorView& out, const ParallelContext& ctx,
                     KernelStats* stats) {
  constexpr std::string_view kOp = "dynamic_slice";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(check_rank(kOp, "output", out, x.rank()));
  std::int64_t start[kMaxKernelRank];
  TENFERRO_TRY(clamped_starts(kOp, x, out.shape, starts, start));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/false));
  if (out.numel() == 0) return ok_status();
  internal::copy_elements(out.shape, item_of(x), {out.data, out.strides.data()},
                          {element_address(x, IntArrayRef(start, x.shape.size())), x.strides.data()}, ctx, stats);
  return ok_status();
}

Status dynamic_update_slice(const TensorView& x, const TensorView& update, IntArrayRef starts, const TensorView& out,
                            const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "dynamic_update_slice";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(internal::check_view(kOp, "update", update));
  TENFERRO_TRY(internal::check_dtype(kOp, "update", update, x.dtype));
  TENFERRO_TRY(check_rank(kOp, "update", update, x.rank()));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, x.shape));
  std::int64_t start[kMaxKernelRank];
  TENFERRO_TRY(clamped_starts(kOp, x, update.shape, starts, start));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/true));
  TENFERRO_TRY(internal::check_alias(kOp, out, "update", update, /*allow_identical=*/false));
  const std::int64_t item = item_of(x);
  if (!internal::same_layout(out, x) && out.numel() > 0) {
    internal::copy_elements(out.shape, item, {out.data, out.strides.data()}, {x.data, x.strides.data()}, ctx, stats);
  }
  if (update.numel() == 0) return ok_status();
  internal::copy_elements(update.shape, item,
                          {element_address(out, IntArrayRef(start, x.shape.size())), out.strides.data()},
                          {update.data, update.strides.data()}, ctx, stats);
  return ok_status();
}

Status concatenate(std::span<const TensorView> inputs, std::int64_t axis, const TensorView& out,
                   const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "concatenate";
  if (inputs.empty()) return make_error(ErrorCode::kInvalidArgument, kStage, "concatenate: needs at least one input");
  const TensorView& first = inputs[0];
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, first.dtype));
  if (axis < 0 || axis >= first.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "concatenate: axis must be in [0, {}), found {}",
                      first.rank(), axis);
  }
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorView& in = inputs[i];
    TENFERRO_TRY(internal::check_view(kOp, "input", in));
    TENFERRO_TRY(internal::check_dtype(kOp, "input", in, first.dtype));
    TENFERRO_TRY(check_rank(kOp, "input", in, first.rank()));
    for (std::size_t d = 0; d < in.shape.size(); ++d) {
      if (d != a && in.shape[d] != first.shape[d]) {
        return make_error(ErrorCode::kShapeMismatch, kStage,
                          "concatenate: input {} has shape {}, expected {} on every axis but {}", i,
                          shape_to_string(in.shape), shape_to_string(first.shape), axis);
      }
    }
    total += in.shape[a];
    TENFERRO_TRY(internal::check_alias(kOp, out, "an input", in, /*allow_identical=*/false));
  }
  Dims expected(first.shape);
  expected[a] = total;
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, expected));
  const std::int64_t item = item_of(out);
  std::int64_t offset = 0;
  for (const TensorView& in : inputs) {
    if (in.numel() > 0) {
      char* dst = static_cast<char*>(out.data) + offset * out.strides[a] * item;
      internal::copy_elements(in.shape, item, {dst, out.strides.data()}, {in.data, in.strides.data()}, ctx, stats);
    }
    offset += in.shape[a];
  }
  return ok_status();
}

Status pad(const TensorView& x, const TensorView& value, IntArrayRef low, IntArrayRef high, IntArrayRef interior,
           const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "pad";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(internal::check_view(kOp, "padding value", value));
  TENFERRO_TRY(internal::check_dtype(kOp, "padding value", value, x.dtype));
  TENFERRO_TRY(check_rank(kOp, "padding value", value, 0));
  const std::size_t r = x.shape.size();
  if (low.size() != r || high.size() != r || interior.size() != r) {
    return make_error(ErrorCode::kShapeMismatch, kStage,
                      "pad: low, high and interior need {} entries each, found {}, {} and {}", r, low.size(),
                      high.size(), interior.size());
  }
  Dims expected(r);
  std::int64_t inner_strides[kMaxKernelRank];
  for (std::size_t d = 0; d < r; ++d) {
    if (low[d] < 0 || high[d] < 0 || interior[d] < 0) {
      return make_error(ErrorCode::kInvalidArgument, kStage,
                        "pad: low, high and interior must be >= 0, found {}, {} and {} on axis {}",
                        shape_to_string(low), shape_to_string(high), shape_to_string(interior), d);
    }
    expected[d] = low[d] + high[d] + x.shape[d] + std::max<std::int64_t>(x.shape[d] - 1, 0) * interior[d];
  }
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, expected));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/false));
  TENFERRO_TRY(internal::check_alias(kOp, out, "padding value", value, /*allow_identical=*/false));
  if (out.numel() == 0) return ok_status();
  visit_dtype(x.dtype, [&]<class T>(T) {
    internal::fill_elements<T>(out.data, out.shape, out.strides.data(), *static_cast<const T*>(value.data), ctx, stats);
  });
  if (x.numel() == 0) return ok_status();
  for (std::size_t d = 0; d < r; ++d) inner_strides[d] = out.strides[d] * (interior[d] + 1);
  internal::copy_elements(x.shape, item_of(x), {element_address(out, low), inner_strides}, {x.data, x.strides.data()},
                          ctx, stats);
  return ok_status();
}

Status reverse(const TensorView& x, IntArrayRef axes, const TensorView& out, const ParallelContext& ctx,
               KernelStats* stats) {
  constexpr std::string_view kOp = "reverse";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, x.shape));
  bool reversed[kMaxKernelRank] = {};
  for (std::int64_t a : axes) {
    if (a < 0 || a >= x.rank()) {
      return make_error(ErrorCode::kAxisOutOfRange, kStage, "reverse: axes must be in [0, {}), found {}", x.rank(), a);
    }
    if (reversed[a]) {
      return make_error(ErrorCode::kInvalidArgument, kStage, "reverse: axes must be distinct, found {} twice", a);
    }
    reversed[a] = true;
  }
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/false));
  if (out.numel() == 0) return ok_status();
  // Read x from the far end of every reversed axis with a negative stride.
  std::int64_t src_strides[kMaxKernelRank];
  std::int64_t last[kMaxKernelRank];
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    src_strides[d] = reversed[d] ? -x.strides[d] : x.strides[d];
    last[d] = reversed[d] ? x.shape[d] - 1 : 0;
  }
  internal::copy_elements(x.shape, item_of(x), {out.data, out.strides.data()},
                          {element_address(x, IntArrayRef(last, x.shape.size())), src_strides}, ctx, stats);
  return ok_status();
}

}  // namespace tenferro::cpu
