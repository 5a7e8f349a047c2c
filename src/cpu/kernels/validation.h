// Validation shared by every CPU kernel: well-formed views, dtype and shape
// checks, and the alias contract. Every check runs before a kernel writes
// anything, so a failed call leaves all operands untouched. Errors carry
// ErrorStage::kNone; the runtime restages them.
//
// Note [Kernel alias contract]
// An output may be *identical* to an input (same address, shape, strides and
// element size) when the op reads each input element only to produce the
// output element at the same index (elementwise ops, convert between
// same-size types). Any other overlap between an output and an input is
// kAliasConflict, as is an output that addresses one element twice (a
// stride-0 or self-overlapping output). Disjointness is decided exactly for
// the common cases: non-intersecting address ranges, or element addresses
// that can never meet because of the strides' common divisor (even/odd
// slices, real/imaginary parts). Views for which neither proof works are
// rejected conservatively.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu::internal {

/// The stage every kernel error carries (the runtime restages it).
inline constexpr ErrorStage kStage = ErrorStage::kNone;

/// The largest rank a kernel iterates (after validation; extent-1 axes
/// included). Larger ranks are kUnsupported.
inline constexpr int kMaxKernelRank = 64;

/// Checks that `view` is well formed: rank <= kMaxKernelRank, matching
/// shape/strides lengths, non-negative extents and strides, data present
/// when it has elements.
Status check_view(std::string_view op, std::string_view name, const TensorView& view);

/// check_view plus: the view never addresses one element twice.
Status check_output_view(std::string_view op, std::string_view name, const TensorView& view);

Status check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType expected);
Status check_shape(std::string_view op, std::string_view name, const TensorView& view, IntArrayRef expected);

/// Same data address, shape, strides and element size.
bool same_layout(const TensorView& a, const TensorView& b) noexcept;

/// False when `a` and `b` provably share no byte (see Note [Kernel alias
/// contract]); true when they may.
bool may_overlap(const TensorView& a, const TensorView& b) noexcept;

/// kAliasConflict unless `out` and `in` are disjoint, or identical and
/// `allow_identical`.
Status check_alias(std::string_view op, const TensorView& out, std::string_view in_name, const TensorView& in,
                   bool allow_identical);

/// The whole shape and alias validation of the flat fast path, in one pass:
/// every operand well formed, of the output's shape, row-major dense, with
/// data and at least one element, and every input either identical to the
/// output (same address and element size) or disjoint from it. Sets `numel`.
/// False means "take the general path", which also reports any error.
/// Inline and unrolled over the inputs: it is most of a small op's cost.
template <std::size_t N>
inline bool flat_compatible(const TensorView& out, const TensorView* const (&in)[N], std::int64_t& numel) noexcept {
  const std::size_t rank = out.shape.size();
  if (out.strides.size() != rank || rank > static_cast<std::size_t>(kMaxKernelRank) || out.data == nullptr) {
    return false;
  }
  for (const TensorView* v : in) {
    if (v->shape.size() != rank || v->strides.size() != rank || v->data == nullptr) return false;
  }
  std::int64_t expected = 1;
  for (std::size_t d = rank; d-- > 0;) {
    const std::int64_t n = out.shape[d];
    bool ok = n >= 1;
    for (const TensorView* v : in) ok = ok && v->shape[d] == n;
    if (!ok) return false;
    if (n == 1) continue;
    ok = out.strides[d] == expected;
    for (const TensorView* v : in) ok = ok && v->strides[d] == expected;
    if (!ok || __builtin_mul_overflow(expected, n, &expected)) return false;
  }
  numel = expected;
  const auto out_lo = reinterpret_cast<std::uintptr_t>(out.data);
  const std::uintptr_t out_hi = out_lo + static_cast<std::uintptr_t>(numel) * dtype_size(out.dtype);
  for (const TensorView* v : in) {
    const auto lo = reinterpret_cast<std::uintptr_t>(v->data);
    if (lo == out_lo) {
      if (dtype_size(v->dtype) != dtype_size(out.dtype)) return false;
    } else if (lo < out_hi && out_lo < lo + static_cast<std::uintptr_t>(numel) * dtype_size(v->dtype)) {
      return false;
    }
  }
  return true;
}

/// True when `view` is row-major dense (extent-1 axes ignored).
bool is_row_major_contiguous(const TensorView& view) noexcept;

}  // namespace tenferro::cpu::internal
