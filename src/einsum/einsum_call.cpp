// Eager and graph entry points (einsum_call.h).
#include "tenferro/einsum/einsum_call.h"

#include <algorithm>

namespace tenferro::einsum {

Result<Tensor> einsum(runtime::EagerContext& context, const std::shared_ptr<const EinsumOp>& op,
                      std::span<const Tensor> inputs) {
  // Note [Eager dtype promotion] (runtime/eager.h): operands of different
  // dtypes are converted to their common dtype first; the op itself (and a
  // program's einsum) takes one dtype.
  const auto mixed = std::adjacent_find(inputs.begin(), inputs.end(), [](const Tensor& x, const Tensor& y) {
    return x.defined() && y.defined() && x.dtype() != y.dtype();
  });
  if (mixed != inputs.end()) {
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList common, context.to_common_dtype(inputs));
    return einsum(context, op, std::span<const Tensor>(common.data(), common.size()));
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, context.call(op, inputs));
  return std::move(out[0]);
}

Result<Tensor> einsum(runtime::EagerContext& context, std::string_view subscripts, std::span<const Tensor> inputs) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const EinsumOp> op, EinsumOp::create(subscripts));
  return einsum(context, op, inputs);
}

Result<program::ProgramValue> emit_einsum(program::ProgramBuilder& builder, const std::shared_ptr<const EinsumOp>& op,
                                          std::span<const program::ProgramValue> operands) {
  TENFERRO_ASSIGN_OR_RETURN(auto results, builder.emit_extension(op, operands));
  return results[0];
}

}  // namespace tenferro::einsum
