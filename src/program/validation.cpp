// Validation of core lowerings and transform outputs (Note [Alias strength]).
#include "tenferro/program/validation.h"

#include <unordered_set>

#include <fmt/format.h>

#include "builder_impl.h"
#include "tenferro/program/extension_op.h"

namespace tenferro::program {
namespace {

// May a rewrite produce `produced` where `declared` was promised?
bool alias_compatible(const AliasDecl& declared, const AliasDecl& produced) {
  switch (declared.kind) {
    case AliasKind::kFresh:
      return produced.kind == AliasKind::kFresh;
    case AliasKind::kViewOf:
      return produced.kind == AliasKind::kFresh || produced == declared;
    case AliasKind::kMustAlias:
    case AliasKind::kExternalAlias:
      return produced == declared;
  }
  return false;
}

}  // namespace

AliasDecl produced_alias(const SemanticProgram& program, ValueId value) {
  ValueId v = value;
  for (;;) {
    const ValueProducer& p = program.producer(v);
    if (p.is_input) return AliasDecl::view_of(p.index);
    OperationView op = program.operation(p.operation);
    const AliasDecl& declared = op.aliases()[p.index];
    if (declared.kind == AliasKind::kFresh) return AliasDecl::fresh();
    if (declared.kind == AliasKind::kExternalAlias) return declared;
    if (declared.kind == AliasKind::kMustAlias) {
      AliasDecl inner = produced_alias(program, op.operands()[declared.operand]);
      return inner.kind == AliasKind::kViewOf ? AliasDecl::must_alias(inner.operand) : inner;
    }
    v = op.operands()[declared.operand];  // a view: follow it
  }
}

Status validate_lowering(const ExtensionOp& op, const SemanticProgram& fragment, const ProvenanceRecord* origin) {
  const std::string family(op.family_id());
  auto reject = [&](std::string what) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kPrepare,
                 fmt::format("the core lowering of {} is invalid: {}", family, what));
  };
  for (OperationView node : fragment.operations()) {
    if (node.is_extension()) {
      return reject(fmt::format("it emitted extension operation {} (a core lowering may emit only core operations)",
                                node.name()));
    }
  }
  SmallVector<ValueMetadata, 4> operands;
  for (std::size_t i = 0; i < fragment.num_inputs(); ++i) operands.push_back(fragment.metadata(fragment.input(i)));
  std::vector<ShapeGuard> guards;
  ShapeConstraints constraints(family, &guards);
  auto declared = internal::call_extension(ErrorStage::kPrepare, "ExtensionOp::infer_metadata",
                                           [&]() { return op.infer_metadata(operands.span(), constraints); });
  if (!declared.ok()) return reject("the operation's own metadata inference fails on its operands");
  if (fragment.outputs().size() != declared->size()) {
    return reject(
        fmt::format("it produces {} results, the operation declares {}", fragment.outputs().size(), declared->size()));
  }
  for (std::size_t r = 0; r < declared->size(); ++r) {
    const ValueMetadata& produced = fragment.metadata(fragment.outputs()[r]);
    if (!(produced == (*declared)[r])) {
      return reject(fmt::format("result {} is {}, the operation declares {}", r, produced.to_string(),
                                (*declared)[r].to_string()));
    }
  }
  auto declared_effects = internal::call_extension(ErrorStage::kPrepare, "ExtensionOp::effects",
                                                   [&]() -> Result<EffectSet> { return op.effects(); });
  TENFERRO_TRY(declared_effects);
  const EffectSet& effects = *declared_effects;
  if (!(fragment.effects() == effects)) {
    return reject(fmt::format("its effects are {}, the operation declares {}", fragment.effects().to_string(),
                              effects.to_string()));
  }
  using AliasList = SmallVector<AliasDecl, 2>;
  auto declared_aliases = internal::call_extension(ErrorStage::kPrepare, "ExtensionOp::aliases",
                                                   [&]() -> Result<AliasList> { return op.aliases(); });
  TENFERRO_TRY(declared_aliases);
  const AliasList& aliases = *declared_aliases;
  for (std::size_t r = 0; r < declared->size() && r < aliases.size(); ++r) {
    AliasDecl produced = produced_alias(fragment, fragment.outputs()[r]);
    if (!alias_compatible(aliases[r], produced)) {
      return reject(
          fmt::format("result {} is {}, the operation declares {}", r, produced.to_string(), aliases[r].to_string()));
    }
  }
  if (origin != nullptr) {
    for (OperationView node : fragment.operations()) {
      if (!derives_from(node.provenance(), origin)) {
        return reject(fmt::format("operation {} has provenance '{}', which does not derive from the extension node",
                                  node.name(), describe_provenance(node.provenance())));
      }
    }
  }
  return ok_status();
}

Status validate_transform_output(const SemanticProgram& input, const SemanticProgram& output,
                                 std::string_view transform_name) {
  auto reject = [&](std::string what) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                 fmt::format("transform {} produced an invalid program: {}", transform_name, what));
  };
  if (input.num_inputs() != output.num_inputs()) {
    return reject(fmt::format("{} inputs instead of {}", output.num_inputs(), input.num_inputs()));
  }
  for (std::size_t i = 0; i < input.num_inputs(); ++i) {
    if (!(input.metadata(input.input(i)) == output.metadata(output.input(i)))) {
      return reject(fmt::format("input {} is {} instead of {}", i, output.metadata(output.input(i)).to_string(),
                                input.metadata(input.input(i)).to_string()));
    }
  }
  if (input.outputs().size() != output.outputs().size()) {
    return reject(fmt::format("{} outputs instead of {}", output.outputs().size(), input.outputs().size()));
  }
  for (std::size_t r = 0; r < input.outputs().size(); ++r) {
    const ValueMetadata& want = input.metadata(input.outputs()[r]);
    const ValueMetadata& have = output.metadata(output.outputs()[r]);
    if (!(want == have))
      return reject(fmt::format("output {} is {} instead of {}", r, have.to_string(), want.to_string()));
    AliasDecl declared = produced_alias(input, input.outputs()[r]);
    AliasDecl produced = produced_alias(output, output.outputs()[r]);
    if (!alias_compatible(declared, produced)) {
      return reject(fmt::format("output {} is {} instead of {}", r, produced.to_string(), declared.to_string()));
    }
  }
  if (!(input.effects() == output.effects())) {
    return reject(fmt::format("effects {} instead of {}", output.effects().to_string(), input.effects().to_string()));
  }
  std::unordered_set<const ProvenanceRecord*> sources;
  for (OperationView op : input.operations()) sources.insert(op.provenance().get());
  for (OperationView op : output.operations()) {
    bool derived = false;
    for (const ProvenanceRecord* p = op.provenance().get(); p != nullptr && !derived; p = p->derived_from.get())
      derived = sources.count(p) != 0;
    if (!derived) {
      return reject(fmt::format("operation {} (%{}) has provenance '{}', derived from no operation of the input",
                                op.name(), op.result(0).index(), describe_provenance(op.provenance())));
    }
  }
  return ok_status();
}

}  // namespace tenferro::program
