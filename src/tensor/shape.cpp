// Shape arithmetic: element counts with overflow checks, default strides,
// axis normalisation.
#include "tenferro/tensor/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tenferro {

Result<std::int64_t> checked_numel(IntArrayRef shape) {
  std::int64_t n = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "shape {} has negative extent {} at axis {}",
                        shape_to_string(shape), shape[i], i);
    }
    overflow = overflow || __builtin_mul_overflow(n, shape[i], &n);
  }
  // A zero extent makes the product 0 even if an earlier partial product
  // overflowed; only report overflow for non-empty shapes.
  for (std::int64_t extent : shape)
    if (extent == 0) return std::int64_t{0};
  if (overflow) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone,
                      "the element count of shape {} does not fit in int64", shape_to_string(shape));
  }
  return n;
}

std::int64_t numel_unchecked(IntArrayRef shape) noexcept {
  std::int64_t n = 1;
  for (std::int64_t extent : shape) n *= extent;
  return n;
}

Dims row_major_strides(IntArrayRef shape) {
  Dims strides(shape.size());
  std::int64_t step = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

Dims col_major_strides(IntArrayRef shape) {
  Dims strides(shape.size());
  std::int64_t step = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    strides[i] = step;
    step *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

Result<std::int64_t> normalize_axis(std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return make_error(ErrorCode::kAxisOutOfRange, ErrorStage::kNone,
                      "axis {} is out of range for a rank-{} tensor (expected {} <= axis < {})", axis, rank, -rank,
                      rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::string shape_to_string(IntArrayRef shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace tenferro
