// copy_into: validation, then the cheapest copy the two layouts allow.
#include "tenferro/cpu/kernels/layout.h"

#include <cstring>

#include "cpu/kernels/copy_kernel.h"
#include "cpu/kernels/strided_loop.h"
#include "cpu/kernels/validation.h"

namespace tenferro::cpu {
namespace {

using internal::LoopOperand;
using internal::StridedLoop;

constexpr std::string_view kOp = "copy_into";
// Bytes per parallel chunk: large enough to amortise a fork-join (~0.2 us).
constexpr std::int64_t kParallelGrainBytes = 256 * 1024;

template <class Word>
void strided_copy_run(char* dst, std::int64_t dst_stride, const char* src, std::int64_t src_stride, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    Word w;
    std::memcpy(&w, src + i * src_stride, sizeof(Word));
    std::memcpy(dst + i * dst_stride, &w, sizeof(Word));
  }
}

struct Word16 {
  unsigned char bytes[16];
};

template <class Word>
void copy_with_word(const StridedLoop<2>& loop, std::int64_t begin, std::int64_t end) {
  const std::int64_t ds = loop.inner_stride(0);
  const std::int64_t ss = loop.inner_stride(1);
  if (ds == static_cast<std::int64_t>(sizeof(Word)) && ss == ds) {
    internal::for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      std::memcpy(p[0], p[1], static_cast<std::size_t>(n) * sizeof(Word));
    });
  } else {
    internal::for_each_run(loop, begin, end,
                           [&](char* const* p, std::int64_t n) { strided_copy_run<Word>(p[0], ds, p[1], ss, n); });
  }
}

void copy_range(const StridedLoop<2>& loop, std::int64_t item, std::int64_t begin, std::int64_t end) {
  switch (item) {
    case 1:
      return copy_with_word<std::uint8_t>(loop, begin, end);
    case 4:
      return copy_with_word<std::uint32_t>(loop, begin, end);
    case 8:
      return copy_with_word<std::uint64_t>(loop, begin, end);
    default:
      return copy_with_word<Word16>(loop, begin, end);
  }
}

Status validate_copy(const TensorView& src, const TensorView& dst) {
  TENFERRO_TRY(internal::check_view(kOp, "src", src));
  TENFERRO_TRY(internal::check_output_view(kOp, "dst", dst));
  TENFERRO_TRY(internal::check_dtype(kOp, "dst", dst, src.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "dst", dst, src.shape));
  return internal::check_alias(kOp, dst, "src", src, /*allow_identical=*/true);
}

}  // namespace

Status copy_into(const TensorView& src, const TensorView& dst, const ParallelContext& ctx, KernelStats* stats) {
  TENFERRO_TRY(validate_copy(src, dst));
  if (dst.numel() == 0 || internal::same_layout(src, dst)) return ok_status();
  internal::copy_elements(dst.shape, static_cast<std::int64_t>(dtype_size(src.dtype)), {dst.data, dst.strides.data()},
                          {src.data, src.strides.data()}, ctx, stats);
  return ok_status();
}

namespace internal {

void copy_elements(IntArrayRef shape, std::int64_t item, const CopyOperand& dst, const CopyOperand& src,
                   const ParallelContext& ctx, KernelStats* stats) {
  const LoopOperand ops[2] = {{const_cast<void*>(dst.data), dst.strides, item},
                              {const_cast<void*>(src.data), src.strides, item}};
  StridedLoop<2> loop;
  init_strided_loop(shape, ops, loop);
  if (loop.numel == 0) return;
  const bool flat = loop.rank <= 1 && loop.inner_stride(0) == item && loop.inner_stride(1) == item;
  if (stats != nullptr) ++(flat ? stats->memcpy_copies : stats->run_copies);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrainBytes / item);
  if (ctx.max_threads() > 1 && loop.numel >= 2 * grain) {
    if (stats != nullptr) ++stats->parallel_calls;
    ctx.parallel_for(0, loop.numel, grain, [&](std::int64_t b, std::int64_t e) { copy_range(loop, item, b, e); });
  } else {
    copy_range(loop, item, 0, loop.numel);
  }
}

}  // namespace internal
}  // namespace tenferro::cpu
