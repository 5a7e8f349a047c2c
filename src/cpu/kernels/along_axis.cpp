// cumulative and sort over lanes: one StridedLoop<2> walks the positions
// off the axis (the axis itself removed from the iteration shape), and each
// position's lane is processed with the axis strides of x and out.
#include "tenferro/cpu/kernels/along_axis.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels/elementwise_functors.h"
#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/validation.h"

namespace tenferro::cpu {
namespace {

using internal::kStage;
using internal::LoopOperand;
using internal::StridedLoop;

constexpr std::int64_t kLaneGrain = 16384;  // lane elements per parallel chunk

// The iteration over lanes: the shape and strides of x and out without
// `axis`, plus the axis length and byte strides.
struct LaneLoop {
  StridedLoop<2> loop;
  std::int64_t len = 0;
  std::int64_t x_step = 0;    // bytes between lane elements of x
  std::int64_t out_step = 0;  // bytes between lane elements of out
};

Status check_lanes(std::string_view name, const TensorView& x, std::int64_t axis, const TensorView& out,
                   DType out_dtype) {
  if (axis < 0 || axis >= x.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: axis must be in [0, {}), found {}", name, x.rank(),
                      axis);
  }
  TENFERRO_TRY(internal::check_output_view(name, "output", out));
  TENFERRO_TRY(internal::check_shape(name, "output", out, x.shape));
  TENFERRO_TRY(internal::check_dtype(name, "output", out, out_dtype));
  return internal::check_alias(name, out, "operand", x, /*allow_identical=*/false);
}

void init_lanes(const TensorView& x, std::int64_t axis, const TensorView& out, std::int64_t out_item, LaneLoop& l) {
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t shape[internal::kMaxKernelRank];
  std::int64_t x_strides[internal::kMaxKernelRank];
  std::int64_t out_strides[internal::kMaxKernelRank];
  std::size_t rest = 0;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (d == a) continue;
    shape[rest] = x.shape[d];
    x_strides[rest] = x.strides[d];
    out_strides[rest++] = out.strides[d];
  }
  const auto x_item = static_cast<std::int64_t>(dtype_size(x.dtype));
  const LoopOperand ops[2] = {{out.data, out_strides, out_item}, {x.data, x_strides, x_item}};
  internal::init_strided_loop(IntArrayRef(shape, rest), ops, l.loop);
  l.len = x.shape[a];
  l.x_step = x.strides[a] * x_item;
  l.out_step = out.strides[a] * out_item;
}

// body(out_lane, x_lane) for every lane, lanes split across threads.
template <class Body>
void for_each_lane(const LaneLoop& l, const ParallelContext& ctx, KernelStats* stats, Body&& body) {
  const std::int64_t os = l.loop.inner_stride(0);
  const std::int64_t xs = l.loop.inner_stride(1);
  internal::parallel_or_inline(ctx, l.loop.numel,
                               std::max<std::int64_t>(1, kLaneGrain / std::max<std::int64_t>(1, l.len)), stats,
                               [&](std::int64_t b, std::int64_t e) {
                                 internal::for_each_run(l.loop, b, e, [&](char* const* p, std::int64_t n) {
                                   for (std::int64_t i = 0; i < n; ++i) body(p[0] + i * os, p[1] + i * xs);
                                 });
                               });
}

}  // namespace

Status cumulative(CumulativeOp op, const TensorView& x, std::int64_t axis, bool reverse, bool exclusive,
                  const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = op == CumulativeOp::kSum ? "cumsum" : "cumprod";
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  if (x.dtype == DType::kBool) {
    return make_error(ErrorCode::kDTypeMismatch, kStage,
                      "{}: expected a numeric dtype (integer, floating or complex), found {}", name, x.dtype);
  }
  TENFERRO_TRY(check_lanes(name, x, axis, out, x.dtype));
  if (out.numel() == 0) return ok_status();
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (!std::is_same_v<T, bool>) {
      LaneLoop l;
      init_lanes(x, axis, out, sizeof(T), l);
      const bool sum = op == CumulativeOp::kSum;
      // Reversed lanes start at their last element and step backwards.
      const std::int64_t first = reverse ? l.len - 1 : 0;
      const std::int64_t x_step = reverse ? -l.x_step : l.x_step;
      const std::int64_t out_step = reverse ? -l.out_step : l.out_step;
      for_each_lane(l, ctx, stats, [&](char* o, const char* xp) {
        o += first * l.out_step;
        xp += first * l.x_step;
        T acc = sum ? T{} : T{1};
        for (std::int64_t k = 0; k < l.len; ++k, o += out_step, xp += x_step) {
          const T v = *reinterpret_cast<const T*>(xp);
          if (exclusive) *reinterpret_cast<T*>(o) = acc;
          acc = sum ? internal::AddOp{}(acc, v) : internal::MulOp{}(acc, v);
          if (!exclusive) *reinterpret_cast<T*>(o) = acc;
        }
      });
    }
  });
  return ok_status();
}

Status sort(SortResult result, const TensorView& x, std::int64_t axis, bool descending, const TensorView& out,
            const ParallelContext& ctx, KernelStats* stats) {
  const bool indices = result == SortResult::kIndices;
  const std::string_view name = indices ? "argsort" : "sort";
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  if (x.dtype == DType::kBool || is_complex(x.dtype)) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: expected an integer or floating dtype, found {}", name,
                      x.dtype);
  }
  TENFERRO_TRY(check_lanes(name, x, axis, out, indices ? DType::kInt64 : x.dtype));
  if (out.numel() == 0) return ok_status();
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (!std::is_same_v<T, bool> && !internal::kIsComplex<T>) {
      LaneLoop l;
      init_lanes(x, axis, out, indices ? 8 : sizeof(T), l);
      // NaNs last in either direction; stable_sort keeps ties in lane order.
      auto before = [descending](T a, T b) {
        if (internal::IsNanOp{}(a)) return false;
        if (internal::IsNanOp{}(b)) return true;
        return descending ? b < a : a < b;
      };
      internal::parallel_or_inline(
          ctx, l.loop.numel, std::max<std::int64_t>(1, kLaneGrain / l.len), stats, [&](std::int64_t b, std::int64_t e) {
            std::vector<std::int64_t> perm(static_cast<std::size_t>(l.len));
            const std::int64_t os = l.loop.inner_stride(0);
            const std::int64_t xs = l.loop.inner_stride(1);
            internal::for_each_run(l.loop, b, e, [&](char* const* p, std::int64_t n) {
              for (std::int64_t i = 0; i < n; ++i) {
                char* o = p[0] + i * os;
                const char* xp = p[1] + i * xs;
                auto at = [&](std::int64_t k) { return *reinterpret_cast<const T*>(xp + k * l.x_step); };
                for (std::int64_t k = 0; k < l.len; ++k) perm[static_cast<std::size_t>(k)] = k;
                std::stable_sort(perm.begin(), perm.end(),
                                 [&](std::int64_t u, std::int64_t v) { return before(at(u), at(v)); });
                for (std::int64_t k = 0; k < l.len; ++k) {
                  const std::int64_t src = perm[static_cast<std::size_t>(k)];
                  if (indices) {
                    *reinterpret_cast<std::int64_t*>(o + k * l.out_step) = src;
                  } else {
                    *reinterpret_cast<T*>(o + k * l.out_step) = at(src);
                  }
                }
              }
            });
          });
    }
  });
  return ok_status();
}

}  // namespace tenferro::cpu
