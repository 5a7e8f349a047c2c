// Derivative programs (include/tenferro/ad/derivative_programs.h).
#include "tenferro/ad/derivative_programs.h"

#include <limits>

#include <fmt/format.h>

#include "ad_graph.h"
#include "transforms.h"

namespace tenferro::ad {

using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using program::SemanticProgram;
using program::ValueMetadata;

namespace {

ProgramBuilder make_builder() {
  return ProgramBuilder(program::ConstantPolicy{std::numeric_limits<std::size_t>::max()});
}

Status check_program(const FrozenProgram& f, std::string_view who) {
  if (!f.program) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "{}: expected a program, found null", who);
  }
  return ok_status();
}

// f restricted to its output `output` (same inputs and bindings).
Result<FrozenProgram> restrict_to_output(const FrozenProgram& f, std::uint32_t output) {
  ProgramBuilder builder = make_builder();
  TENFERRO_ASSIGN_OR_RETURN(auto inputs, internal::mirror_inputs(*f.program, builder));
  const program::ValueId root = f.program->outputs()[output];
  TENFERRO_ASSIGN_OR_RETURN(auto values, builder.import_values(*f.program, inputs.span(), std::span(&root, 1)));
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram restricted, builder.freeze({values[0]}));
  restricted.bindings = f.bindings;
  return restricted;
}

// Zeros of `like`'s dtype and shape, emitted into `builder`.
Result<ProgramValue> emit_zeros(ProgramBuilder& builder, const ValueMetadata& like) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue zero, builder.constant(program::Literal::scalar(Scalar::of(0.0))));
  if (like.dtype != DType::kFloat64) {
    TENFERRO_ASSIGN_OR_RETURN(
        zero, builder.emit(program::CoreSemanticOp::kConvert, {zero}, program::ConvertAttributes{like.dtype}));
  }
  if (like.shape.empty()) return zero;
  return builder.emit(program::CoreSemanticOp::kBroadcastInDim, {zero},
                      program::BroadcastInDimAttributes{like.shape, {}});
}

}  // namespace

Result<FrozenProgram> grad_program(AdContext& context, const FrozenProgram& f,
                                   std::span<const std::uint32_t> active_inputs, std::uint32_t output) {
  TENFERRO_TRY(check_program(f, "grad_program"));
  return context.grad(f, active_inputs, output);
}

namespace internal {

Result<std::shared_ptr<const SemanticProgram>> build_grad_program(AdContext& context, const FrozenProgram& f,
                                                                  std::span<const std::uint32_t> active_inputs,
                                                                  std::uint32_t output) {
  const SemanticProgram& p = *f.program;
  if (output >= p.outputs().size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "grad_program: output {} is out of range: the program has {} outputs", output,
                      p.outputs().size());
  }
  const ValueMetadata& loss = p.metadata(p.outputs()[output]);
  if (!loss.shape.empty() || !is_floating(loss.dtype)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "grad_program: expected a real floating scalar output to differentiate, found output {} of {}",
                      output, loss.to_string());
  }
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram restricted, restrict_to_output(f, output));
  TENFERRO_ASSIGN_OR_RETURN(VjpProgram vjp, context.vjp(restricted, active_inputs));

  ProgramBuilder builder = make_builder();
  TENFERRO_ASSIGN_OR_RETURN(auto inputs, internal::mirror_inputs(p, builder));
  builder.set_provenance(program::make_provenance("grad: seed 1 and zero gradients"));
  SmallVector<ProgramValue, 4> parameters(inputs.begin(), inputs.end());
  if (!vjp.layout.differentiated_outputs.empty()) {
    TENFERRO_ASSIGN_OR_RETURN(program::Literal one_literal, program::Literal::from_values<double>({1.0}, {}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue one, builder.constant(one_literal));
    if (loss.dtype != DType::kFloat64) {
      TENFERRO_ASSIGN_OR_RETURN(
          one, builder.emit(program::CoreSemanticOp::kConvert, {one}, program::ConvertAttributes{loss.dtype}));
    }
    parameters.push_back(one);
  }
  builder.set_provenance(nullptr);
  TENFERRO_ASSIGN_OR_RETURN(auto results, builder.import_program(*vjp.program.program, parameters.span()));
  SmallVector<ProgramValue, 4> gradients;
  std::size_t next = 1;  // results: [loss, gradients...]
  builder.set_provenance(program::make_provenance("grad: seed 1 and zero gradients"));
  for (std::size_t k = 0; k < active_inputs.size(); ++k) {
    if (vjp.layout.input_cotangents[k] == TangentState::kPresent) {
      gradients.push_back(results[next++]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue z, emit_zeros(builder, p.metadata(p.input(active_inputs[k]))));
      gradients.push_back(z);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram out, builder.freeze(gradients.span()));
  return std::move(out.program);
}

}  // namespace internal

Result<JvpProgram> hessian_vector_program(AdContext& context, const FrozenProgram& f,
                                          std::span<const std::uint32_t> active_inputs, std::uint32_t output) {
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram g, grad_program(context, f, active_inputs, output));
  return context.jvp(g, active_inputs);
}

}  // namespace tenferro::ad
