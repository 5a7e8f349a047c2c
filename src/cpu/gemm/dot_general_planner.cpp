// dot_general validation and TTGT planning (Note [TTGT without transposes]).
#include "cpu/gemm/dot_general_planner.h"

#include <algorithm>
#include <array>
#include <limits>

#include "tenferro/base/assert.h"

namespace tenferro::cpu::internal {
namespace {

// Which slots hold each group.
constexpr bool kMIn[3] = {true, false, true};
constexpr bool kNIn[3] = {false, true, true};
constexpr bool kKIn[3] = {true, true, false};

std::string axes_to_string(const Dims& axes) { return shape_to_string(IntArrayRef(axes)); }

Status check_axes(const TensorView& t, const Dims& batch, const Dims& contract, std::string_view which) {
  SmallVector<bool, 8> used(static_cast<std::size_t>(t.rank()), false);
  for (const Dims* list : {&batch, &contract}) {
    for (std::int64_t a : *list) {
      if (a < 0 || a >= t.rank()) {
        return make_error(ErrorCode::kAxisOutOfRange, ErrorStage::kNone,
                          "dot_general: expected {} axes in [0, {}), found {} in batch {} / contracting {}", which,
                          t.rank(), a, axes_to_string(batch), axes_to_string(contract));
      }
      if (used[static_cast<std::size_t>(a)]) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "dot_general: expected each {} axis at most once, found axis {} repeated in batch {} / "
                          "contracting {}",
                          which, a, axes_to_string(batch), axes_to_string(contract));
      }
      used[static_cast<std::size_t>(a)] = true;
    }
  }
  return ok_status();
}

Status check_view(const TensorView& t, std::string_view which) {
  if (t.shape.size() != t.strides.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "dot_general: expected {} shape and strides of equal rank, found {} and {}", which,
                      t.shape.size(), t.strides.size());
  }
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0 || t.strides[i] < 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "dot_general: expected non-negative extents and strides for {}, found shape {} strides {}",
                        which, shape_to_string(IntArrayRef(t.shape)), shape_to_string(IntArrayRef(t.strides)));
    }
  }
  if (t.data == nullptr && t.numel() > 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "dot_general: expected data for the non-empty {}, found null", which);
  }
  return ok_status();
}

// Byte range [lo, hi) of a view's elements; empty for an empty view.
std::pair<std::uintptr_t, std::uintptr_t> view_byte_range(const TensorView& t) {
  if (t.numel() == 0) return {0, 0};
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.shape.size(); ++i) last += (t.shape[i] - 1) * t.strides[i];
  const auto lo = reinterpret_cast<std::uintptr_t>(t.data);
  return {lo, lo + static_cast<std::uintptr_t>(last + 1) * dtype_size(t.dtype)};
}

bool overlaps(const TensorView& x, const TensorView& y) {
  const auto [xl, xh] = view_byte_range(x);
  const auto [yl, yh] = view_byte_range(y);
  return xl < xh && yl < yh && xl < yh && yl < xh;
}

// Distinct elements at distinct addresses (ordered-stride span test); an
// empty view has none (its row-major strides may hold 0s).
bool non_overlapping(const TensorView& t) {
  if (t.numel() == 0) return true;
  SmallVector<std::pair<std::int64_t, std::int64_t>, 8> axes;  // (stride, extent)
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] > 1) axes.push_back({t.strides[i], t.shape[i]});
  std::sort(axes.begin(), axes.end());
  std::int64_t span = 0;
  for (const auto& [stride, extent] : axes) {
    if (stride <= span) return false;
    span += stride * (extent - 1);
  }
  return true;
}

bool fuses(const AxisList& axes, Slot slot) {
  for (std::size_t i = 0; i + 1 < axes.size(); ++i)
    if (axes[i].stride[slot] != axes[i + 1].stride[slot] * axes[i + 1].extent) return false;
  return true;
}

// Axes sorted by descending stride in `slot` (ties: the other slots). An
// insertion sort: groups hold a handful of axes, and std::stable_sort would
// allocate a temporary buffer on this hot path.
AxisList ordered_by(const AxisList& group, Slot slot) {
  AxisList axes = group;
  auto before = [slot](const PlanAxis& x, const PlanAxis& y) {
    if (x.stride[slot] != y.stride[slot]) return x.stride[slot] > y.stride[slot];
    for (int s = 0; s < 3; ++s)
      if (x.stride[s] != y.stride[s]) return x.stride[s] > y.stride[s];
    return false;
  };
  for (std::size_t i = 1; i < axes.size(); ++i) {
    const PlanAxis key = axes[i];
    std::size_t j = i;
    for (; j > 0 && before(key, axes[j - 1]); --j) axes[j] = axes[j - 1];
    axes[j] = key;
  }
  return axes;
}

// An order of `group` that fuses in every kept slot holding it, trying the
// order of each kept holder in turn (out first: its order is the one the
// caller asked for). A group held by no kept slot keeps its natural order.
bool choose_order(const AxisList& group, const bool (&holds)[3], const bool (&kept)[3], AxisList& order) {
  if (group.size() <= 1) {  // a single axis always fuses
    order = group;
    return true;
  }
  bool any_kept = false;
  for (Slot s : {kOut, kLhs, kRhs}) {
    if (!holds[s] || !kept[s]) continue;
    any_kept = true;
    AxisList candidate = ordered_by(group, s);
    bool ok = true;
    for (int t = 0; t < 3; ++t)
      if (holds[t] && kept[t] && !fuses(candidate, static_cast<Slot>(t))) ok = false;
    if (ok) {
      order = std::move(candidate);
      return true;
    }
  }
  if (!any_kept) {
    order = group;
    return true;
  }
  return false;
}

std::int64_t numel_of(const TensorView& t) { return t.numel(); }

}  // namespace

std::int64_t group_extent(const AxisList& group) noexcept {
  std::int64_t e = 1;
  for (const PlanAxis& a : group) e *= a.extent;
  return e;
}

std::int64_t group_stride(const AxisList& group, Slot slot) noexcept {
  return group.empty() ? 0 : group.back().stride[slot];
}

AxisList fuse_batch_runs(const AxisList& batch) {
  AxisList runs;
  for (const PlanAxis& a : batch) {
    if (!runs.empty()) {
      PlanAxis& last = runs.back();
      bool fusable = true;
      for (int s = 0; s < 3; ++s)
        if (last.stride[s] != a.stride[s] * a.extent) fusable = false;
      if (fusable) {
        last.extent *= a.extent;
        for (int s = 0; s < 3; ++s) last.stride[s] = a.stride[s];
        continue;
      }
    }
    runs.push_back(a);
  }
  return runs;
}

Status validate_dot_general(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                            const TensorView* out, const GemmSupport& gemm_support) {
  TENFERRO_TRY(check_view(lhs, "lhs"));
  TENFERRO_TRY(check_view(rhs, "rhs"));
  if (lhs.dtype != rhs.dtype) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                      "dot_general: expected operands of one dtype, found lhs {} and rhs {}", to_string(lhs.dtype),
                      to_string(rhs.dtype));
  }
  if (lhs.dtype == DType::kBool) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "dot_general: expected a numeric dtype, found bool");
  }
  if (is_inexact(lhs.dtype) && !gemm_support.supports(lhs.dtype)) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "dot_general: expected a dtype the GEMM provider supports, found {}", to_string(lhs.dtype));
  }
  if (dims.lhs_batch.size() != dims.rhs_batch.size() || dims.lhs_contract.size() != dims.rhs_contract.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "dot_general: expected as many lhs as rhs batch and contracting axes, found batch {} vs {}, "
                      "contracting {} vs {}",
                      axes_to_string(dims.lhs_batch), axes_to_string(dims.rhs_batch), axes_to_string(dims.lhs_contract),
                      axes_to_string(dims.rhs_contract));
  }
  TENFERRO_TRY(check_axes(lhs, dims.lhs_batch, dims.lhs_contract, "lhs"));
  TENFERRO_TRY(check_axes(rhs, dims.rhs_batch, dims.rhs_contract, "rhs"));
  for (std::size_t i = 0; i < dims.lhs_batch.size(); ++i) {
    const std::int64_t l = lhs.shape[static_cast<std::size_t>(dims.lhs_batch[i])];
    const std::int64_t r = rhs.shape[static_cast<std::size_t>(dims.rhs_batch[i])];
    if (l != r) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "dot_general: expected equal batch extents, found lhs axis {} = {} and rhs axis {} = {}",
                        dims.lhs_batch[i], l, dims.rhs_batch[i], r);
    }
  }
  for (std::size_t i = 0; i < dims.lhs_contract.size(); ++i) {
    const std::int64_t l = lhs.shape[static_cast<std::size_t>(dims.lhs_contract[i])];
    const std::int64_t r = rhs.shape[static_cast<std::size_t>(dims.rhs_contract[i])];
    if (l != r) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "dot_general: expected equal contracting extents, found lhs axis {} = {} and rhs axis {} = {}",
                        dims.lhs_contract[i], l, dims.rhs_contract[i], r);
    }
  }
  if (out != nullptr) {
    TENFERRO_TRY(check_view(*out, "out"));
    const Dims expected = dot_general_result_shape(lhs, rhs, dims);
    if (!std::equal(expected.begin(), expected.end(), out->shape.begin(), out->shape.end())) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "dot_general: expected an output of shape {}, found {}", shape_to_string(IntArrayRef(expected)),
                        shape_to_string(IntArrayRef(out->shape)));
    }
    if (out->dtype != lhs.dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "dot_general: expected a {} output, found {}",
                        to_string(lhs.dtype), to_string(out->dtype));
    }
    if (!non_overlapping(*out)) {
      return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                        "dot_general: expected distinct addresses for the output elements, found strides {}",
                        shape_to_string(IntArrayRef(out->strides)));
    }
    if (overlaps(*out, lhs) || overlaps(*out, rhs)) {
      return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                        "dot_general: expected an output that does not overlap the operands, found an overlap");
    }
  }
  return ok_status();
}

Dims dot_general_result_shape(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims) {
  Dims shape;
  for (std::int64_t a : dims.lhs_batch) shape.push_back(lhs.shape[static_cast<std::size_t>(a)]);
  auto is_listed = [](const Dims& x, const Dims& y, std::int64_t a) {
    return std::find(x.begin(), x.end(), a) != x.end() || std::find(y.begin(), y.end(), a) != y.end();
  };
  for (std::int64_t a = 0; a < lhs.rank(); ++a)
    if (!is_listed(dims.lhs_batch, dims.lhs_contract, a)) shape.push_back(lhs.shape[static_cast<std::size_t>(a)]);
  for (std::int64_t a = 0; a < rhs.rank(); ++a)
    if (!is_listed(dims.rhs_batch, dims.rhs_contract, a)) shape.push_back(rhs.shape[static_cast<std::size_t>(a)]);
  return shape;
}

TtgtPlan plan_ttgt(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims, const TensorView* out,
                   GemmStrideSupport strides) {
  TtgtPlan plan;
  DotGeneralPlan& s = plan.summary;
  const Dims out_shape = dot_general_result_shape(lhs, rhs, dims);
  std::int64_t out_numel = 1;
  for (std::int64_t e : out_shape) out_numel *= e;

  // Collect the axes of each group, with their strides, in operand order.
  AxisList batch, m, n, k;
  bool zero_contract = false;
  auto add = [&](AxisList& group, std::int64_t extent, std::int64_t la, std::int64_t ra, std::int64_t oa) {
    if (extent == 0 && oa < 0) zero_contract = true;
    if (extent == 1) return;
    PlanAxis axis;
    axis.extent = extent;
    axis.axis[kLhs] = la;
    axis.axis[kRhs] = ra;
    axis.axis[kOut] = oa;
    if (la >= 0) axis.stride[kLhs] = lhs.strides[static_cast<std::size_t>(la)];
    if (ra >= 0) axis.stride[kRhs] = rhs.strides[static_cast<std::size_t>(ra)];
    if (oa >= 0 && out != nullptr) axis.stride[kOut] = out->strides[static_cast<std::size_t>(oa)];
    group.push_back(axis);
  };
  std::int64_t out_axis = 0;
  for (std::size_t i = 0; i < dims.lhs_batch.size(); ++i, ++out_axis) {
    add(batch, lhs.shape[static_cast<std::size_t>(dims.lhs_batch[i])], dims.lhs_batch[i], dims.rhs_batch[i], out_axis);
  }
  auto is_listed = [](const Dims& x, const Dims& y, std::int64_t a) {
    return std::find(x.begin(), x.end(), a) != x.end() || std::find(y.begin(), y.end(), a) != y.end();
  };
  for (std::int64_t a = 0; a < lhs.rank(); ++a)
    if (!is_listed(dims.lhs_batch, dims.lhs_contract, a))
      add(m, lhs.shape[static_cast<std::size_t>(a)], a, -1, out_axis++);
  for (std::int64_t a = 0; a < rhs.rank(); ++a)
    if (!is_listed(dims.rhs_batch, dims.rhs_contract, a))
      add(n, rhs.shape[static_cast<std::size_t>(a)], -1, a, out_axis++);
  for (std::size_t i = 0; i < dims.lhs_contract.size(); ++i) {
    add(k, lhs.shape[static_cast<std::size_t>(dims.lhs_contract[i])], dims.lhs_contract[i], dims.rhs_contract[i], -1);
  }

  if (out_numel == 0) {
    s.path = DotGeneralPath::kEmpty;
    return plan;
  }
  if (zero_contract) {
    s.path = DotGeneralPath::kZeroFill;
    s.jobs = 0;
    plan.replace[kOut] = out == nullptr;
    return plan;
  }
  s.m = group_extent(m);
  s.n = group_extent(n);
  s.k = group_extent(k);
  s.jobs = group_extent(batch);
  if (is_broadcast_product(m.size(), n.size(), k.size())) {
    // Note [Broadcast products]: the free axes join the batch, with stride 0
    // in the operand that lacks them.
    const Slot whole = m.empty() ? kRhs : kLhs;  // the operand holding every axis
    batch.append(m.begin(), m.end());
    batch.append(n.begin(), n.end());
    m.clear();
    n.clear();
    s.m = s.n = 1;
    s.jobs = group_extent(batch);
    s.path = DotGeneralPath::kElementwise;
    plan.batch = ordered_by(batch, out != nullptr ? kOut : whole);
    plan.replace[kOut] = out == nullptr;
    return plan;
  }
  if (is_integer(lhs.dtype)) {
    // Note [Integer GEMM]: packed through offset tables, so no operand is
    // copied. Axes ordered by the output's strides make its offsets unit
    // stride where its layout allows (the tile then stores whole vectors),
    // the contracted ones by the lhs's (its packing walks them).
    s.path = DotGeneralPath::kInteger;
    plan.batch = ordered_by(batch, out != nullptr ? kOut : kLhs);
    plan.m = out != nullptr ? ordered_by(m, kOut) : m;
    plan.n = out != nullptr ? ordered_by(n, kOut) : n;
    plan.k = ordered_by(k, kLhs);
    plan.replace[kOut] = out == nullptr;
    return plan;
  }

  // Try every set of tensors to keep, cheapest copies first.
  s.path = DotGeneralPath::kGemm;
  const std::int64_t copy_cost[3] = {numel_of(lhs), numel_of(rhs), out != nullptr ? 2 * out_numel : 0};
  // The 8 choices of replaced tensors (bit t: replace slot t), cheapest
  // first; ties keep the numeric order (fewer and earlier replacements).
  std::int64_t mask_cost[8];
  std::array<int, 8> masks = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int mask = 0; mask < 8; ++mask) {
    mask_cost[mask] = 0;
    for (int t = 0; t < 3; ++t)
      if (mask & (1 << t)) mask_cost[mask] += copy_cost[t];
  }
  for (std::size_t i = 1; i < masks.size(); ++i) {
    const int key = masks[i];
    std::size_t j = i;
    for (; j > 0 && mask_cost[key] < mask_cost[masks[j - 1]]; --j) masks[j] = masks[j - 1];
    masks[j] = key;
  }
  for (int mask : masks) {
    bool kept[3];
    for (int t = 0; t < 3; ++t) kept[t] = (mask & (1 << t)) == 0;
    if (out == nullptr && kept[kOut]) continue;  // a free output is always "replaced"
    AxisList om, on, ok, ob;
    if (!choose_order(m, kMIn, kept, om) || !choose_order(n, kNIn, kept, on) || !choose_order(k, kKIn, kept, ok)) {
      continue;
    }
    // Batch never needs to fuse: order by the first kept holder.
    ob = batch;
    for (Slot sl : {kOut, kLhs, kRhs}) {
      if (kept[sl]) {
        ob = ordered_by(batch, sl);
        break;
      }
    }
    // Kept operands must have fused strides the GEMM provider accepts.
    const std::int64_t me = group_extent(om), ne = group_extent(on), ke = group_extent(ok);
    if (kept[kLhs] && !gemm_operand_layout_supported(strides, me, ke, group_stride(om, kLhs), group_stride(ok, kLhs)))
      continue;
    if (kept[kRhs] && !gemm_operand_layout_supported(strides, ke, ne, group_stride(ok, kRhs), group_stride(on, kRhs)))
      continue;
    if (kept[kOut] && !gemm_operand_layout_supported(strides, me, ne, group_stride(om, kOut), group_stride(on, kOut)))
      continue;
    if (strides != GemmStrideSupport::kAny) {
      // Non-native providers also take no zero batch strides in C.
      bool bad = false;
      for (const PlanAxis& a : ob)
        if (kept[kOut] && a.stride[kOut] == 0) bad = true;
      if (bad) continue;
    }
    plan.batch = std::move(ob);
    plan.m = std::move(om);
    plan.n = std::move(on);
    plan.k = std::move(ok);
    for (int t = 0; t < 3; ++t) plan.replace[t] = !kept[t];
    s.lhs_copied = plan.replace[kLhs];
    s.rhs_copied = plan.replace[kRhs];
    s.out_via_temp = plan.replace[kOut] && out != nullptr;
    s.copied_elements =
        (s.lhs_copied ? copy_cost[kLhs] : 0) + (s.rhs_copied ? copy_cost[kRhs] : 0) + (s.out_via_temp ? out_numel : 0);
    return plan;
  }
  TENFERRO_CHECK(false && "replacing every tensor is always feasible");
  return plan;
}

}  // namespace tenferro::cpu::internal
