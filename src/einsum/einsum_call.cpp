// Eager and graph entry points (einsum_call.h).
#include "tenferro/einsum/einsum_call.h"

namespace tenferro::einsum {

Result<Tensor> einsum(runtime::EagerContext& context, const std::shared_ptr<const EinsumOp>& op,
                      std::span<const Tensor> inputs) {
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
