// The program walk of the reference evaluator (Note [Reference evaluator]):
// inputs, guards, one evaluation per operation in topological order, and
// extension ops through their core lowering.
#include "tenferro/testing/reference_evaluator.h"

#include <cstring>

#include <fmt/format.h>

#include "reference_ops.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/specialization.h"

namespace tenferro::testing {
namespace {

using program::CoreSemanticOp;
using program::OperationView;
using program::SemanticProgram;

/// A contiguous row-major copy of host tensor `t`.
Result<Tensor> contiguous_copy(const Tensor& t) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.shape(), t.dtype()));
  if (t.numel() > 0) tenferro::internal::copy_to_contiguous(t.view(), out.data());
  return out;
}

Result<std::vector<Tensor>> evaluate(const SemanticProgram& program, std::span<const Tensor> inputs, int depth);

Result<Tensor> evaluate_core(const OperationView& op, std::span<const Tensor> operands, DType dtype,
                             IntArrayRef shape) {
  const internal::CoreCall call{op, operands, dtype, shape};
  switch (program::core_op_info(op.core_op()).family) {
    case program::CoreOpFamily::kCreation:
    case program::CoreOpFamily::kDataMovement:
      return internal::evaluate_movement(call);
    case program::CoreOpFamily::kReduction:
    case program::CoreOpFamily::kContraction:
      return internal::evaluate_reduction(call);
    case program::CoreOpFamily::kAlongAxis:
      return internal::evaluate_along_axis(call);
    case program::CoreOpFamily::kElementwise:
      return internal::evaluate_elementwise(call);
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kPrepare, "reference evaluator: {} has no family", op.name());
}

/// Lowers extension `op` for the concrete operand shapes (granting concrete
/// dims, widening on request) and evaluates the fragment.
Result<std::vector<Tensor>> evaluate_extension(const OperationView& op, std::span<const Tensor> operands, int depth) {
  SmallVector<program::ValueMetadata, 4> metadata;
  for (const Tensor& t : operands) metadata.push_back(program::ValueMetadata::exact(t.dtype(), t.shape()));
  program::SpecializationRequirements granted{program::SpecializationAxis::kConcreteDims};
  for (int attempt = 0; attempt <= program::kNumSpecializationAxes; ++attempt) {
    TENFERRO_ASSIGN_OR_RETURN(
        program::CoreLowering lowering,
        program::lower_extension_to_core(*op.extension(), metadata.span(), granted, op.provenance()));
    switch (lowering.kind) {
      case program::ExtensionLoweringOutcome::Kind::kLowered:
        return evaluate(*lowering.fragment, operands, depth + 1);
      case program::ExtensionLoweringOutcome::Kind::kNeedsSpecialization:
        granted = lowering.requirements;  // strictly wider (checked by lower_extension_to_core)
        break;
      case program::ExtensionLoweringOutcome::Kind::kUnsupported:
        return make_error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
                          "the reference evaluator evaluates extensions through lower_to_core, and {} has none: {}",
                          op.name(), lowering.unsupported_reason);
    }
  }
  return make_error(ErrorCode::kProviderContractError, ErrorStage::kPrepare,
                    "{}: lower_to_core kept asking for specialization", op.name());
}

Result<std::vector<Tensor>> evaluate(const SemanticProgram& program, std::span<const Tensor> inputs, int depth) {
  if (depth > 16) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "reference evaluator: extension lowerings nest deeper than 16 levels");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_host()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                        "evaluate_reference: expected defined host tensors, input {} is not", i);
    }
  }
  program::SymbolValues symbols;
  TENFERRO_TRY(program.check_guards(inputs, &symbols));

  std::vector<Tensor> values(program.num_values());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(values[i], contiguous_copy(inputs[i]));
  }
  std::vector<Tensor> operands;
  for (OperationView op : program.operations()) {
    operands.clear();
    for (program::ValueId v : op.operands()) operands.push_back(values[v.index()]);
    // Errors name the node: "evaluate_reference: gather %7 [provenance]: ...".
    auto in_node = [&](const Status& status) {
      return status.with_context(fmt::format("evaluate_reference: {} %{} [{}]: {}", op.name(), op.result(0).index(),
                                             program::describe_provenance(op.provenance()), status.message()));
    };
    if (op.is_core()) {
      const program::ValueId result = op.result(0);
      TENFERRO_ASSIGN_OR_RETURN(Dims shape, program.concrete_shape(result, symbols.span()));
      Result<Tensor> y = evaluate_core(op, operands, program.metadata(result).dtype, shape);
      if (!y.ok()) return in_node(y.status());
      values[result.index()] = std::move(y).value();
    } else {
      Result<std::vector<Tensor>> results = evaluate_extension(op, operands, depth);
      if (!results.ok()) return in_node(results.status());
      for (std::size_t r = 0; r < op.num_results(); ++r) values[op.result(r).index()] = std::move((*results)[r]);
    }
  }
  std::vector<Tensor> outputs;
  for (program::ValueId v : program.outputs()) outputs.push_back(values[v.index()]);
  return outputs;
}

}  // namespace

Result<std::vector<Tensor>> evaluate_reference(const SemanticProgram& program, std::span<const Tensor> inputs,
                                               const program::ProgramBindings* bindings) {
  if (bindings == nullptr) return evaluate(program, inputs, 0);
  if (bindings->num_inputs() != program.num_inputs()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "evaluate_reference: bindings for {} inputs, the program has {}", bindings->num_inputs(),
                      program.num_inputs());
  }
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> all, bindings->assemble_inputs(inputs));
  return evaluate(program, all, 0);
}

}  // namespace tenferro::testing
