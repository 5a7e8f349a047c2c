// ExtensionOp defaults and the core-lowering driver (Note [Core lowering]).
#include "tenferro/program/extension_op.h"

#include <fmt/format.h>

#include "builder_impl.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/validation.h"

namespace tenferro::program {

ExtensionLoweringOutcome ExtensionLoweringOutcome::lowered(SmallVector<ProgramValue, 2> results) {
  ExtensionLoweringOutcome o;
  o.kind_ = Kind::kLowered;
  o.results_ = std::move(results);
  return o;
}

ExtensionLoweringOutcome ExtensionLoweringOutcome::needs_specialization(SpecializationRequirements requirements) {
  ExtensionLoweringOutcome o;
  o.kind_ = Kind::kNeedsSpecialization;
  o.requirements_ = requirements;
  return o;
}

ExtensionLoweringOutcome ExtensionLoweringOutcome::unsupported(std::string reason) {
  ExtensionLoweringOutcome o;
  o.kind_ = Kind::kUnsupported;
  o.reason_ = std::move(reason);
  return o;
}

Result<ExtensionLoweringOutcome> ExtensionOp::lower_to_core(ExtensionLoweringContext&) const {
  return ExtensionLoweringOutcome::unsupported(fmt::format("{} has no core lowering", family_id()));
}

std::shared_ptr<const ExtensionOp> ExtensionOp::prune_outputs(std::span<const bool>) const { return nullptr; }
std::shared_ptr<const ExtensionOp> ExtensionOp::batched(std::span<const ValueMetadata>, std::span<const bool>) const {
  return nullptr;
}

std::string ExtensionOp::describe() const { return std::string(family_id()); }

Result<CoreLowering> lower_extension_to_core(const ExtensionOp& op, std::span<const ValueMetadata> operands,
                                             SpecializationRequirements granted, const ProvenanceRef& origin) {
  const std::string family(op.family_id());
  ProgramBuilder fragment;
  // Abstract the operands: every distinct non-exact extent becomes one
  // fragment symbol, so equal extents stay provably equal.
  CoreLowering lowering;
  SmallVector<ProgramValue, 4> inputs;
  SmallVector<ValueMetadata, 4> input_metadata;
  for (const ValueMetadata& operand : operands) {
    SymbolicShape spec;
    for (const SymbolicExtent& e : operand.shape) {
      if (e.is_exact()) {
        spec.push_back(e);
        continue;
      }
      std::size_t j = 0;
      while (j < lowering.symbol_meaning.size() && !(lowering.symbol_meaning[j] == e)) ++j;
      if (j == lowering.symbol_meaning.size()) {
        lowering.symbol_meaning.push_back(e);
        spec.push_back(e.upper_bound() ? SymbolicExtent::bounded(*e.upper_bound()) : SymbolicExtent::unknown());
      } else {
        spec.push_back(SymbolicExtent::symbol(static_cast<std::uint32_t>(j), e.upper_bound()));
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue input, fragment.add_input(operand.dtype, spec));
    TENFERRO_ASSIGN_OR_RETURN(ValueMetadata metadata, fragment.metadata(input));
    inputs.push_back(input);
    input_metadata.push_back(std::move(metadata));
  }
  ProvenanceRef scope = make_provenance(fmt::format("lowered from {}", family), origin);
  fragment.set_provenance(scope);
  ExtensionLoweringContext context =
      internal::BuilderAccess::lowering_context(&fragment, std::move(inputs), std::move(input_metadata), granted);
  TENFERRO_ASSIGN_OR_RETURN(ExtensionLoweringOutcome outcome,
                            internal::call_extension(ErrorStage::kPrepare, "ExtensionOp::lower_to_core",
                                                     [&]() { return op.lower_to_core(context); }));
  lowering.kind = outcome.kind();
  switch (outcome.kind()) {
    case ExtensionLoweringOutcome::Kind::kUnsupported:
      lowering.unsupported_reason = outcome.reason();
      lowering.symbol_meaning.clear();
      return lowering;
    case ExtensionLoweringOutcome::Kind::kNeedsSpecialization:
      TENFERRO_TRY(outcome.requirements().check_widens(granted, fmt::format("the core lowering of {}", family)));
      lowering.requirements = outcome.requirements();
      lowering.symbol_meaning.clear();
      return lowering;
    case ExtensionLoweringOutcome::Kind::kLowered:
      break;
  }
  auto frozen = fragment.freeze(outcome.results());
  if (!frozen.ok()) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kPrepare,
                 fmt::format("the core lowering of {} returned values it did not emit into its builder: {}", family,
                             frozen.status().message()));
  }
  TENFERRO_TRY(validate_lowering(op, *frozen->program, scope.get()));
  lowering.fragment = std::move(frozen->program);
  return lowering;
}

Result<CoreLowering> lower_extension_to_core(const SemanticProgram& program, OperationId id,
                                             SpecializationRequirements granted,
                                             std::span<const std::int64_t> symbols) {
  if (id.index() >= program.num_operations() || program.operation(id).is_core()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "lower_extension_to_core: operation {} is not an extension operation of the program", id.index());
  }
  OperationView op = program.operation(id);
  SmallVector<ValueMetadata, 4> operands;
  for (ValueId v : op.operands()) {
    if (symbols.empty()) {
      operands.push_back(program.metadata(v));
    } else {
      TENFERRO_ASSIGN_OR_RETURN(Dims shape, program.concrete_shape(v, symbols));
      operands.push_back(ValueMetadata::exact(program.metadata(v).dtype, shape));
    }
  }
  return lower_extension_to_core(*op.extension(), operands.span(), granted, op.provenance());
}

}  // namespace tenferro::program
