// fill and iota: a StridedLoop over the output alone, contiguous runs filled
// with std::fill_n / an increasing sequence.
#include "tenferro/cpu/kernels/creation.h"

#include <algorithm>

#include "cpu/kernels/elementwise_functors.h"
#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/fill_kernel.h"
#include "cpu/kernels/validation.h"

namespace tenferro::cpu {
namespace {

using internal::LoopOperand;
using internal::StridedLoop;

constexpr std::int64_t kFillGrain = 65536;  // elements per parallel chunk

template <class T>
void fill_view(void* data, IntArrayRef shape, const std::int64_t* strides, T value, const ParallelContext& ctx,
               KernelStats* stats) {
  internal::fill_elements<T>(data, shape, strides, value, ctx, stats);
}

}  // namespace

Status fill(const TensorView& out, const Scalar& value, const ParallelContext& ctx, KernelStats* stats) {
  TENFERRO_TRY(internal::check_output_view("fill", "output", out));
  if (value.dtype() != out.dtype) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                      "fill: the value must have the output's dtype {}, found {}", out.dtype, value.dtype());
  }
  visit_dtype(out.dtype,
              [&]<class T>(T) { fill_view<T>(out.data, out.shape, out.strides.data(), value.value<T>(), ctx, stats); });
  return ok_status();
}

Status iota(const TensorView& out, std::int64_t axis, const ParallelContext& ctx, KernelStats* stats) {
  TENFERRO_TRY(internal::check_output_view("iota", "output", out));
  if (axis < 0 || axis >= out.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, ErrorStage::kNone, "iota: axis must be in [0, {}), found {}",
                      out.rank(), axis);
  }
  if (out.numel() == 0) return ok_status();
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t extent = out.shape[a];
  const std::int64_t axis_stride = out.strides[a];
  // The other axes, as a view of their own.
  std::int64_t rest_shape[internal::kMaxKernelRank];
  std::int64_t rest_strides[internal::kMaxKernelRank];
  std::size_t rest_rank = 0;
  bool axis_is_fastest = true;
  for (std::size_t d = 0; d < out.shape.size(); ++d) {
    if (d == a) continue;
    rest_shape[rest_rank] = out.shape[d];
    rest_strides[rest_rank++] = out.strides[d];
    if (out.shape[d] > 1 && out.strides[d] < axis_stride) axis_is_fastest = false;
  }
  const IntArrayRef rest(rest_shape, rest_rank);
  visit_dtype(out.dtype, [&]<class T>(T) {
    const auto item = static_cast<std::int64_t>(sizeof(T));
    if (!axis_is_fastest) {
      // Each slab out[..., j, ...] is one fill; slabs are independent.
      if (stats != nullptr) ++stats->strided_inner;
      internal::parallel_or_inline(
          ctx, extent, std::max<std::int64_t>(1, kFillGrain / std::max<std::int64_t>(1, out.numel() / extent)), stats,
          [&](std::int64_t b, std::int64_t e) {
            const SequentialContext seq(ctx.kernel_isa());
            for (std::int64_t j = b; j < e; ++j) {
              fill_view<T>(static_cast<char*>(out.data) + j * axis_stride * item, rest, rest_strides,
                           internal::convert_value<T>(j), seq, nullptr);
            }
          });
      return;
    }
    // The axis is the fastest: every position of the other axes gets one run 0, 1, ..., extent-1.
    if (stats != nullptr) ++stats->contiguous_inner;
    const LoopOperand ops[1] = {{out.data, rest_strides, item}};
    StridedLoop<1> loop;
    internal::init_strided_loop(rest, ops, loop);
    const std::int64_t grain = std::max<std::int64_t>(1, kFillGrain / extent);
    internal::parallel_or_inline(ctx, loop.numel, grain, stats, [&](std::int64_t b, std::int64_t e) {
      internal::for_each_run(loop, b, e, [&](char* const* p, std::int64_t n) {
        const std::int64_t s = loop.inner_stride(0);
        for (std::int64_t i = 0; i < n; ++i) {
          T* run = reinterpret_cast<T*>(p[0] + i * s);
          for (std::int64_t j = 0; j < extent; ++j) run[j * axis_stride] = internal::convert_value<T>(j);
        }
      });
    });
  });
  return ok_status();
}

}  // namespace tenferro::cpu
