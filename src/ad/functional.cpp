// Functional differentiation (include/tenferro/ad/functional.h).
#include "tenferro/ad/functional.h"

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

Result<Tensor> host_zeros(const Tensor& like) { return Tensor::zeros(like.shape(), like.dtype()); }

}  // namespace

Result<FrozenProgram> grad_program(AdContext& context, const FrozenProgram& f,
                                   std::span<const std::uint32_t> active_inputs, std::uint32_t output) {
  TENFERRO_TRY(check_program(f, "grad_program"));
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
  TENFERRO_ASSIGN_OR_RETURN(out.bindings, internal::extend_bindings(f.bindings, p.num_inputs(), 0));
  return out;
}

Result<JvpProgram> hessian_vector_program(AdContext& context, const FrozenProgram& f,
                                          std::span<const std::uint32_t> active_inputs, std::uint32_t output) {
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram g, grad_program(context, f, active_inputs, output));
  return context.jvp(g, active_inputs);
}

Result<JvpResult> jvp(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> tangents) {
  TENFERRO_TRY(check_program(f, "jvp"));
  if (tangents.size() != active_inputs.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "jvp: expected one tangent per active input ({}), found {}", active_inputs.size(),
                      tangents.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(JvpProgram program, context.jvp(f, active_inputs));
  std::vector<Tensor> inputs(parameters.begin(), parameters.end());
  inputs.insert(inputs.end(), tangents.begin(), tangents.end());
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(program.program, inputs));
  JvpResult result;
  const std::size_t m = program.layout.num_outputs;
  result.outputs.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m));
  std::size_t next = m;
  for (std::size_t j = 0; j < m; ++j) {
    switch (program.layout.output_tangents[j]) {
      case TangentState::kPresent:
        result.tangents.push_back(out[next++]);
        break;
      case TangentState::kZero: {
        TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(result.outputs[j]));
        result.tangents.push_back(std::move(z));
        break;
      }
      case TangentState::kNonDifferentiable:
        result.tangents.emplace_back();
        break;
    }
  }
  return result;
}

Result<VjpResult> vjp(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> cotangents) {
  TENFERRO_TRY(check_program(f, "vjp"));
  if (cotangents.size() != f.program->outputs().size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "vjp: expected one cotangent per output ({}), found {}", f.program->outputs().size(),
                      cotangents.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(VjpProgram program, context.vjp(f, active_inputs));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> all_inputs,
                            f.bindings.num_inputs() == 0
                                ? Result<std::vector<Tensor>>(std::vector<Tensor>(parameters.begin(), parameters.end()))
                                : f.bindings.assemble_inputs(parameters));
  std::vector<Tensor> inputs(parameters.begin(), parameters.end());
  // Undefined cotangents of differentiated outputs are zeros; their shapes
  // come from the forward values, so compute those first when needed.
  bool need_shapes = false;
  for (std::uint32_t j : program.layout.differentiated_outputs) need_shapes = need_shapes || !cotangents[j].defined();
  std::vector<Tensor> forward;
  if (need_shapes) {
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList y, runtime.run(f, parameters));
    forward.assign(y.begin(), y.end());
  }
  for (std::uint32_t j : program.layout.differentiated_outputs) {
    if (cotangents[j].defined()) {
      inputs.push_back(cotangents[j]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(forward[j]));
      inputs.push_back(std::move(z));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(program.program, inputs));
  VjpResult result;
  const std::size_t m = program.layout.num_outputs;
  result.outputs.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m));
  std::size_t next = m;
  for (std::size_t k = 0; k < active_inputs.size(); ++k) {
    if (program.layout.input_cotangents[k] == TangentState::kPresent) {
      result.cotangents.push_back(out[next++]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(all_inputs[active_inputs[k]]));
      result.cotangents.push_back(std::move(z));
    }
  }
  return result;
}

Result<std::vector<Tensor>> grad(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                                 std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                 std::uint32_t output) {
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram g, grad_program(context, f, active_inputs, output));
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(g, parameters));
  return std::vector<Tensor>(out.begin(), out.end());
}

Result<std::vector<Tensor>> hvp(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                                std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                std::span<const Tensor> vectors, std::uint32_t output) {
  if (vectors.size() != active_inputs.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "hvp: expected one vector per active input ({}), found {}", active_inputs.size(), vectors.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(JvpProgram program, hessian_vector_program(context, f, active_inputs, output));
  std::vector<Tensor> inputs(parameters.begin(), parameters.end());
  inputs.insert(inputs.end(), vectors.begin(), vectors.end());
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(program.program, inputs));
  std::vector<Tensor> result;
  std::size_t next = program.layout.num_outputs;
  for (std::size_t k = 0; k < active_inputs.size(); ++k) {
    if (program.layout.output_tangents[k] == TangentState::kPresent) {
      result.push_back(out[next++]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(out[k]));
      result.push_back(std::move(z));
    }
  }
  return result;
}

}  // namespace tenferro::ad
