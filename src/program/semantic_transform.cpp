// SemanticTransform application and the TransformBuilder.
#include "tenferro/program/semantic_transform.h"

#include <fmt/format.h>

#include "builder_impl.h"
#include "tenferro/base/assert.h"
#include "tenferro/program/validation.h"

namespace tenferro::program {

TransformBuilder::TransformBuilder(const SemanticProgram& input, std::string_view transform_name)
    : label_(fmt::format("transform {}", transform_name)) {
  // Mirror the inputs: symbols are numbered by first appearance, so fresh
  // placeholders at first appearances reproduce the same numbering.
  for (std::size_t i = 0; i < input.num_inputs(); ++i) {
    const ValueMetadata& m = input.metadata(input.input(i));
    SymbolicShape spec;
    for (std::size_t k = 0; k < m.shape.size(); ++k) {
      const SymbolicExtent& e = m.shape[k];
      auto symbol = e.as_symbol();
      const bool first = symbol && input.symbol(*symbol).input == i && input.symbol(*symbol).axis == k;
      if (first) {
        spec.push_back(e.upper_bound() ? SymbolicExtent::bounded(*e.upper_bound()) : SymbolicExtent::unknown());
      } else {
        spec.push_back(e);
      }
    }
    auto value = builder_.add_input(m.dtype, spec, input.input_name(i));
    TENFERRO_CHECK(value.ok());  // the schema comes from a valid program
    inputs_.push_back(*value);
  }
  ProgramBuilder::Impl* impl = internal::BuilderAccess::impl(builder_);
  impl->require_explicit_provenance = true;
  impl->inputs_fixed = true;
}

void TransformBuilder::derive_from(const OperationView& source) {
  ProvenanceRef& derived = derived_[source.provenance().get()];
  if (!derived) derived = make_provenance(label_, source.provenance());
  builder_.set_provenance(derived);
}

Result<SmallVector<ProgramValue, 2>> TransformBuilder::copy_operation(const OperationView& source,
                                                                      std::span<const ProgramValue> operands) {
  derive_from(source);
  const PlacementConstraint saved = builder_.placement();
  builder_.set_placement(source.placement());
  Result<SmallVector<ProgramValue, 2>> result = [&]() -> Result<SmallVector<ProgramValue, 2>> {
    if (source.is_extension()) return builder_.emit_extension(source.shared_extension(), operands);
    // A copy keeps constants the input program already holds, whatever the policy.
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, internal::BuilderAccess::impl(builder_)->emit_in_scope(
                                                  source.core_op(), operands, source.attributes()));
    SmallVector<ProgramValue, 2> out;
    out.push_back(v);
    return out;
  }();
  builder_.set_placement(saved);
  return result;
}

Result<FrozenProgram> apply_transform(const SemanticTransform& transform, const FrozenProgram& input,
                                      const FreezeOptions& options) {
  if (!input.program) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "apply_transform: expected a program");
  }
  const std::string name(transform.name());
  TransformBuilder output(*input.program, name);
  using ValueList = SmallVector<ProgramValue, 4>;
  TENFERRO_ASSIGN_OR_RETURN(ValueList outputs,
                            internal::call_extension(ErrorStage::kCompile, "SemanticTransform::run",
                                                     [&]() { return transform.run(*input.program, output); }));
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram frozen, output.builder().freeze(outputs.span(), options));
  TENFERRO_TRY(validate_transform_output(*input.program, *frozen.program, name));
  frozen.bindings = input.bindings;
  return frozen;
}

}  // namespace tenferro::program
