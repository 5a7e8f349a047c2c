// copy_into: validation, then the cheapest copy the two layouts allow.
#include "tenferro/cpu/kernels/layout.h"

#include "cpu/kernels/copy_kernel.h"
#include "cpu/kernels/validation.h"

namespace tenferro::cpu {
namespace {

constexpr std::string_view kOp = "copy_into";
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

}  // namespace tenferro::cpu
