// Functional differentiation through a runtime (include/tenferro/ad_runtime/functional.h).
#include "tenferro/ad_runtime/functional.h"

namespace tenferro::ad {

using program::FrozenProgram;

namespace {

Status check_program(const FrozenProgram& f, std::string_view who) {
  if (!f.program) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "{}: expected a program, found null", who);
  }
  return ok_status();
}

Result<Tensor> host_zeros(const Tensor& like) { return Tensor::zeros(like.shape(), like.dtype()); }

// Every input of f: the parameters with f's bound tensors in their places.
Result<std::vector<Tensor>> all_inputs_of(const FrozenProgram& f, std::span<const Tensor> parameters) {
  if (f.bindings.num_inputs() == 0) return std::vector<Tensor>(parameters.begin(), parameters.end());
  return f.bindings.assemble_inputs(parameters);
}

// Note [Checked tangents]
// The tangents of jvp and the cotangents of vjp / vjp_cotangents are checked
// against what they stand for before anything runs: a tangent has its
// active input's dtype and shape, a cotangent its output's (the output's
// metadata evaluated for the inputs' shapes). A mismatch surfaced from the
// derived program in its own numbering ("input 3 axis 0: expected extent
// 3, found 2" for the first tangent; the prepared-programs audit). An
// undefined tangent is zero, as an undefined cotangent is.
Status check_like(const Tensor& t, DType dtype, IntArrayRef shape, std::string_view who, std::string_view what) {
  if (t.dtype() == dtype && IntArrayRef(t.shape()) == shape) return ok_status();
  return make_error(t.dtype() != dtype ? ErrorCode::kDTypeMismatch : ErrorCode::kShapeMismatch, ErrorStage::kNone,
                    "{}: expected {} of dtype {} and shape {}, found {}", who, what, dtype, shape_to_string(shape),
                    t.to_string());
}

// The tangents, undefined ones as zeros, checked (Note [Checked tangents]).
Result<std::vector<Tensor>> checked_tangents(const std::vector<Tensor>& inputs,
                                             std::span<const std::uint32_t> active_inputs,
                                             std::span<const Tensor> tangents) {
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < tangents.size(); ++k) {
    if (active_inputs[k] >= inputs.size()) break;  // too few parameters: the run reports the count
    const Tensor& primal = inputs[active_inputs[k]];
    if (!tangents[k].defined()) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(primal));
      out.push_back(std::move(z));
      continue;
    }
    TENFERRO_TRY(check_like(tangents[k], primal.dtype(), primal.shape(), "jvp",
                            fmt::format("tangent {} (of active input {})", k, active_inputs[k])));
    out.push_back(tangents[k]);
  }
  return out;
}

// Defined cotangents against f's outputs for `inputs` (Note [Checked tangents]).
Status check_cotangents_against_outputs(const FrozenProgram& f, const std::vector<Tensor>& inputs,
                                        std::span<const Tensor> cotangents, std::string_view who) {
  const program::SemanticProgram& p = *f.program;
  program::SymbolValues symbols;
  TENFERRO_TRY(p.check_guards(inputs, &symbols));
  for (std::size_t j = 0; j < cotangents.size(); ++j) {
    if (!cotangents[j].defined()) continue;
    const program::ValueId output = p.outputs()[j];
    TENFERRO_ASSIGN_OR_RETURN(Dims shape, p.concrete_shape(output, symbols));
    TENFERRO_TRY(check_like(cotangents[j], p.metadata(output).dtype, shape, who, fmt::format("cotangent {}", j)));
  }
  return ok_status();
}

}  // namespace

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
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, all_inputs_of(f, parameters));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> checked, checked_tangents(inputs, active_inputs, tangents));
  return run_jvp(runtime, program, parameters, checked);
}

Result<JvpResult> run_jvp(runtime::Runtime& runtime, const JvpProgram& program, std::span<const Tensor> parameters,
                          std::span<const Tensor> tangents) {
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

namespace {

// Reverse mode through `backward` (inputs: parameters, then one cotangent
// per differentiated output), its cotangent outputs listed in
// layout.input_cotangents; with `with_outputs`, the program first returns
// f's outputs (AdContext::vjp), else it returns cotangents only.
Result<VjpResult> run_reverse(runtime::Runtime& runtime, const FrozenProgram& f, const FrozenProgram& backward,
                              const AdLayout& layout, bool with_outputs, std::span<const Tensor> parameters,
                              std::span<const std::uint32_t> active_inputs, std::span<const Tensor> cotangents) {
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> all_inputs, all_inputs_of(f, parameters));
  TENFERRO_TRY(check_cotangents_against_outputs(f, all_inputs, cotangents, with_outputs ? "vjp" : "vjp_cotangents"));
  std::vector<Tensor> inputs(parameters.begin(), parameters.end());
  // Undefined cotangents of differentiated outputs are zeros; their shapes
  // come from the forward values, so compute those first when needed.
  bool need_shapes = false;
  for (std::uint32_t j : layout.differentiated_outputs) need_shapes = need_shapes || !cotangents[j].defined();
  std::vector<Tensor> forward;
  if (need_shapes) {
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList y, runtime.run(f, parameters));
    forward.assign(y.begin(), y.end());
  }
  for (std::uint32_t j : layout.differentiated_outputs) {
    if (cotangents[j].defined()) {
      inputs.push_back(cotangents[j]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(forward[j]));
      inputs.push_back(std::move(z));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(backward, inputs));
  VjpResult result;
  const std::size_t m = with_outputs ? layout.num_outputs : 0;
  result.outputs.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m));
  std::size_t next = m;
  for (std::size_t k = 0; k < active_inputs.size(); ++k) {
    if (layout.input_cotangents[k] == TangentState::kPresent) {
      result.cotangents.push_back(out[next++]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Tensor z, host_zeros(all_inputs[active_inputs[k]]));
      result.cotangents.push_back(std::move(z));
    }
  }
  return result;
}

Status check_cotangents(const FrozenProgram& f, std::span<const Tensor> cotangents, std::string_view who) {
  TENFERRO_TRY(check_program(f, who));
  if (cotangents.size() != f.program->outputs().size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected one cotangent per output ({}), found {}", who, f.program->outputs().size(),
                      cotangents.size());
  }
  return ok_status();
}

}  // namespace

Result<VjpResult> vjp(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> cotangents) {
  TENFERRO_TRY(check_cotangents(f, cotangents, "vjp"));
  TENFERRO_ASSIGN_OR_RETURN(VjpProgram program, context.vjp(f, active_inputs));
  return run_reverse(runtime, f, program.program, program.layout, true, parameters, active_inputs, cotangents);
}

Result<std::vector<Tensor>> vjp_cotangents(runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f,
                                           std::span<const Tensor> parameters,
                                           std::span<const std::uint32_t> active_inputs,
                                           std::span<const Tensor> cotangents) {
  TENFERRO_TRY(check_cotangents(f, cotangents, "vjp_cotangents"));
  // Every output differentiated, none reused: the backward program alone,
  // recomputing only the primal values the gradients read.
  TENFERRO_ASSIGN_OR_RETURN(ReusingVjpProgram program,
                            context.vjp_reusing_outputs(f, active_inputs, f.program->outputs().size()));
  TENFERRO_ASSIGN_OR_RETURN(VjpResult result, run_reverse(runtime, f, program.backward, program.layout, false,
                                                          parameters, active_inputs, cotangents));
  return std::move(result.cotangents);
}

Result<std::shared_ptr<const runtime::PreparedProgram>> prepare_vjp_cotangents(
    runtime::Runtime& runtime, AdContext& context, const FrozenProgram& f, std::span<const std::uint32_t> active_inputs,
    const runtime::InputSignature& signature) {
  TENFERRO_TRY(check_program(f, "prepare_vjp_cotangents"));
  const std::size_t num_outputs = f.program->outputs().size();
  TENFERRO_ASSIGN_OR_RETURN(ReusingVjpProgram program, context.vjp_reusing_outputs(f, active_inputs, num_outputs));
  const program::ProgramBindings& bindings = program.backward.bindings;
  // f's bound inputs are bound inputs of the backward program too.
  bool runs_as_given = program.layout.differentiated_outputs.size() == num_outputs &&
                       (bindings.num_inputs() == 0 || bindings.num_inputs() == signature.size());
  for (std::size_t i = 0; i < bindings.num_inputs(); ++i) {
    runs_as_given = runs_as_given && bindings.bound_tensor(i) == nullptr;
  }
  for (const TangentState state : program.layout.input_cotangents) {
    runs_as_given = runs_as_given && state == TangentState::kPresent;
  }
  if (!runs_as_given) return std::shared_ptr<const runtime::PreparedProgram>();
  return runtime.prepare_for(program.backward.program, signature);
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
  return run_hvp(runtime, program, parameters, vectors, active_inputs.size());
}

Result<std::vector<Tensor>> run_hvp(runtime::Runtime& runtime, const JvpProgram& program,
                                    std::span<const Tensor> parameters, std::span<const Tensor> vectors,
                                    std::size_t num_active) {
  std::vector<Tensor> inputs(parameters.begin(), parameters.end());
  inputs.insert(inputs.end(), vectors.begin(), vectors.end());
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, runtime.run(program.program, inputs));
  std::vector<Tensor> result;
  std::size_t next = program.layout.num_outputs;
  for (std::size_t k = 0; k < num_active; ++k) {
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
