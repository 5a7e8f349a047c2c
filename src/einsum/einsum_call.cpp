// Eager and graph entry points (einsum_call.h).
#include "tenferro/einsum/einsum_call.h"

#include <algorithm>

#include "tenferro/base/small_vector.h"

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
    DType common = inputs[0].dtype();
    for (const Tensor& t : inputs) {
      if (t.defined()) common = promote_types(common, t.dtype());
    }
    SmallVector<Tensor, 8> promoted;
    for (const Tensor& t : inputs) {
      if (t.defined() && t.dtype() != common) {
        TENFERRO_ASSIGN_OR_RETURN(Tensor c, context.convert(t, common));
        promoted.push_back(std::move(c));
      } else {
        promoted.push_back(t);
      }
    }
    return einsum(context, op, std::span<const Tensor>(promoted.data(), promoted.size()));
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
