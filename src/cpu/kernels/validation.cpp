// Validation shared by every CPU kernel (Note [Kernel alias contract]).
#include "cpu/kernels/validation.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace tenferro::cpu::internal {
namespace {

// First and one-past-last byte addressed by a view with elements.
struct ByteRange {
  std::uintptr_t lo;
  std::uintptr_t hi;
};

ByteRange byte_range(const TensorView& v) noexcept {
  const auto item = static_cast<std::int64_t>(dtype_size(v.dtype));
  std::int64_t last = 0;
  for (std::size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * v.strides[d];
  const auto lo = reinterpret_cast<std::uintptr_t>(v.data);
  return {lo, lo + static_cast<std::uintptr_t>(last * item + item)};
}

// gcd of the byte strides of every axis with extent > 1.
std::uint64_t stride_gcd(const TensorView& v, std::uint64_t g) noexcept {
  const auto item = static_cast<std::uint64_t>(dtype_size(v.dtype));
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] > 1) g = std::gcd(g, static_cast<std::uint64_t>(v.strides[d]) * item);
  }
  return g;
}

}  // namespace

Status check_view(std::string_view op, std::string_view name, const TensorView& view) {
  if (view.shape.size() != view.strides.size()) {
    return make_error(ErrorCode::kShapeMismatch, kStage, "{}: {} has rank {} but {} strides", op, name,
                      view.shape.size(), view.strides.size());
  }
  if (view.shape.size() > static_cast<std::size_t>(kMaxKernelRank)) {
    return make_error(ErrorCode::kUnsupported, kStage, "{}: {} has rank {}, CPU kernels support rank <= {}", op, name,
                      view.shape.size(), kMaxKernelRank);
  }
  bool empty = false;
  for (std::size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] < 0 || view.strides[d] < 0) {
      return make_error(ErrorCode::kInvalidArgument, kStage,
                        "{}: {} needs non-negative extents and strides, found shape {} strides {}", op, name,
                        shape_to_string(view.shape), shape_to_string(view.strides));
    }
    empty = empty || view.shape[d] == 0;
  }
  if (!empty && view.data == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, kStage, "{}: {} has {} elements but no data", op, name,
                      view.numel());
  }
  return ok_status();
}

Status check_output_view(std::string_view op, std::string_view name, const TensorView& view) {
  TENFERRO_TRY(check_view(op, name, view));
  // Sufficient condition for distinct addresses: ordered by stride, every
  // stride exceeds the span of all faster axes.
  std::int64_t strides[kMaxKernelRank];
  std::int64_t extents[kMaxKernelRank];
  int n = 0;
  for (std::size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] == 0) return ok_status();
    if (view.shape[d] == 1) continue;
    int i = n++;
    while (i > 0 && strides[i - 1] > view.strides[d]) {
      strides[i] = strides[i - 1];
      extents[i] = extents[i - 1];
      --i;
    }
    strides[i] = view.strides[d];
    extents[i] = view.shape[d];
  }
  std::int64_t span = 0;  // largest offset reachable with the faster axes
  for (int i = 0; i < n; ++i) {
    if (strides[i] <= span) {
      return make_error(ErrorCode::kAliasConflict, kStage,
                        "{}: {} must address each element once, but shape {} with strides {} overlaps itself", op, name,
                        shape_to_string(view.shape), shape_to_string(view.strides));
    }
    span += (extents[i] - 1) * strides[i];
  }
  return ok_status();
}

Status check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType expected) {
  if (view.dtype == expected) return ok_status();
  return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: {} must have dtype {}, found {}", op, name, expected,
                    view.dtype);
}

Status check_shape(std::string_view op, std::string_view name, const TensorView& view, IntArrayRef expected) {
  if (IntArrayRef(view.shape) == expected) return ok_status();
  return make_error(ErrorCode::kShapeMismatch, kStage, "{}: {} must have shape {}, found {}", op, name,
                    shape_to_string(expected), shape_to_string(view.shape));
}

bool same_layout(const TensorView& a, const TensorView& b) noexcept {
  return a.data == b.data && dtype_size(a.dtype) == dtype_size(b.dtype) && IntArrayRef(a.shape) == b.shape &&
         IntArrayRef(a.strides) == b.strides;
}

bool may_overlap(const TensorView& a, const TensorView& b) noexcept {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const ByteRange ra = byte_range(a);
  const ByteRange rb = byte_range(b);
  if (ra.hi <= rb.lo || rb.hi <= ra.lo) return false;
  // Every byte distance between an element of a and one of b is congruent to
  // (a0 - b0) modulo g. They overlap only if some distance lies in
  // (-item_a, item_b).
  const std::uint64_t g = stride_gcd(b, stride_gcd(a, 0));
  if (g == 0) return true;
  const auto item_a = static_cast<std::uint64_t>(dtype_size(a.dtype));
  const auto item_b = static_cast<std::uint64_t>(dtype_size(b.dtype));
  const std::uint64_t r = ra.lo >= rb.lo ? (ra.lo - rb.lo) % g : (g - (rb.lo - ra.lo) % g) % g;
  return r < item_b || r + item_a > g;
}

Status check_alias(std::string_view op, const TensorView& out, std::string_view in_name, const TensorView& in,
                   bool allow_identical) {
  if (!may_overlap(out, in)) return ok_status();
  if (allow_identical && same_layout(out, in)) return ok_status();
  return make_error(ErrorCode::kAliasConflict, kStage,
                    "{}: the output must be disjoint from {}{}, but they share memory (output shape {} strides {}, {} "
                    "shape {} strides {})",
                    op, in_name, allow_identical ? " or identical to it" : "", shape_to_string(out.shape),
                    shape_to_string(out.strides), in_name, shape_to_string(in.shape), shape_to_string(in.strides));
}

bool is_row_major_contiguous(const TensorView& view) noexcept {
  std::int64_t expected = 1;
  bool dense = true;
  for (std::size_t d = view.shape.size(); d-- > 0;) {
    if (view.shape[d] == 0) return true;
    if (view.shape[d] == 1) continue;
    dense = dense && view.strides[d] == expected;
    expected *= view.shape[d];
  }
  return dense;
}

}  // namespace tenferro::cpu::internal
