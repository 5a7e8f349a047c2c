// linearize: the primal copy of a source program plus the tangent of every
// value that depends on an active input (Note [Linearize, then transpose]).
#include <utility>

#include <fmt/format.h>

#include "core_rules.h"
#include "tenferro/program/extension_op.h"
#include "transforms.h"

namespace tenferro::ad::internal {

using program::CoreSemanticOp;
using program::OperationView;
using program::SemanticProgram;
using program::ValueId;
using program::ValueMetadata;

namespace {

constexpr std::uint32_t kUnmapped = UINT32_MAX;

// Extents in core-op attributes that a lowering fragment states in its own
// symbols, rewritten in the caller's (CoreLowering::symbol_meaning).
program::CoreAttributes substitute_symbols(const program::CoreAttributes& attributes,
                                           std::span<const program::SymbolicExtent> meaning) {
  auto rewrite = [&](program::SymbolicShape& shape) {
    for (program::SymbolicExtent& e : shape)
      if (e.symbol_limit() > 0 && e.symbol_limit() <= meaning.size()) e = e.substitute(meaning);
  };
  program::CoreAttributes out = attributes;
  if (auto* a = std::get_if<program::ReshapeAttributes>(&out)) rewrite(a->shape);
  if (auto* a = std::get_if<program::BroadcastInDimAttributes>(&out)) rewrite(a->shape);
  if (auto* a = std::get_if<program::IotaAttributes>(&out)) rewrite(a->shape);
  if (auto* a = std::get_if<program::RandomAttributes>(&out)) rewrite(a->shape);
  if (auto* a = std::get_if<program::GatherAttributes>(&out)) rewrite(a->slice_sizes);
  return out;
}

class Linearizer {
 public:
  Linearizer(const TransformSetup& setup, AdGraph& graph, TransformCounters& counters)
      : setup_(setup), graph_(graph), counters_(counters) {}

  // Copies `op` (role kPrimal for source operations, kCoefficient inside a
  // lowering fragment) unless its results are already mapped, then records
  // its tangents in `lin`.
  Status operation(const SemanticProgram& program, const OperationView& op, Linearization& lin, NodeRole copy_role,
                   const std::string& label, std::span<const program::SymbolicExtent> meaning) {
    SmallVector<std::uint32_t, 4> operands;
    for (ValueId v : op.operands()) operands.push_back(lin.primal[v.index()]);
    bool mapped = true;
    for (std::size_t k = 0; k < op.num_results(); ++k) mapped = mapped && lin.primal[op.result(k).index()] != kUnmapped;
    SmallVector<std::optional<AdValue>, 4> tangents;
    bool any = false;
    for (ValueId v : op.operands()) {
      const std::int64_t t = lin.tangent[v.index()];
      if (t >= 0 && !graph_.value(static_cast<std::uint32_t>(t)).zero) {
        tangents.push_back(graph_.token(static_cast<std::uint32_t>(t)));
        any = true;
      } else {
        tangents.push_back(std::nullopt);
      }
    }
    bool differentiable = false;
    for (std::size_t k = 0; k < op.num_results(); ++k)
      differentiable = differentiable || is_inexact(program.metadata(op.result(k)).dtype);
    // Only a node that is differentiated is expanded: the expansion serves
    // its derivative (a values-only decomposition becomes the one with
    // vectors, which an inactive node does not need).
    if (!mapped && !op.is_core() && any && differentiable) {
      TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const SemanticProgram> fragment, expansion(program, op, label));
      if (fragment) return expand(program, op, *fragment, lin, copy_role, label);
    }
    if (!mapped) {
      graph_.scope() = {EmitPhase::kLinearize, provenance_of(op), op.placement(), label};
      std::uint32_t first = 0;
      if (op.is_core()) {
        program::CoreAttributes attributes =
            meaning.empty() ? op.attributes() : substitute_symbols(op.attributes(), meaning);
        TENFERRO_ASSIGN_OR_RETURN(first, graph_.append_core(copy_role, op.core_op(), operands.span(), attributes));
      } else {
        TENFERRO_ASSIGN_OR_RETURN(first, graph_.append_extension(copy_role, op.shared_extension(), operands.span()));
      }
      for (std::size_t k = 0; k < op.num_results(); ++k)
        lin.primal[op.result(k).index()] = first + static_cast<std::uint32_t>(k);
    }

    if (!any || !differentiable) return ok_status();

    graph_.scope() = {EmitPhase::kLinearize, derived(op), op.placement(), fmt::format("jvp of {}", label)};
    SmallVector<AdValue, 4> primal_operands;
    for (std::uint32_t o : operands) primal_operands.push_back(graph_.token(o));
    SmallVector<AdValue, 2> primal_results;
    for (std::size_t k = 0; k < op.num_results(); ++k)
      primal_results.push_back(graph_.token(lin.primal[op.result(k).index()]));

    TangentList result_tangents;
    if (op.is_core()) {
      program::CoreAttributes attributes =
          meaning.empty() ? op.attributes() : substitute_symbols(op.attributes(), meaning);
      CoreLinearizeInput input{op.core_op(), &attributes, primal_operands, tangents, primal_results[0]};
      TENFERRO_ASSIGN_OR_RETURN(std::optional<AdValue> t, linearize_core(input, graph_.builder()));
      result_tangents.push_back(t);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(
          result_tangents, extension(program, op, label, operands, primal_operands, tangents, primal_results, lin));
    }
    return record(program, op, label, result_tangents, lin);
  }

 private:
  program::ProvenanceRef derived(const OperationView& op) {
    return program::make_provenance(fmt::format("jvp {}", op.name()), provenance_of(op));
  }

  // An operation of an expansion is attributed to the node it stands for.
  program::ProvenanceRef provenance_of(const OperationView& op) const {
    if (!expanded_from_) return op.provenance();
    return program::make_provenance(fmt::format("{} (expanded)", op.name()), expanded_from_);
  }

  Result<TangentList> extension(const SemanticProgram& program, const OperationView& op, const std::string& label,
                                std::span<const std::uint32_t> operands, SmallVector<AdValue, 4> primal_operands,
                                SmallVector<std::optional<AdValue>, 4> tangents, SmallVector<AdValue, 2> primal_results,
                                Linearization& lin) {
    const program::ExtensionOp& ext = *op.extension();
    const ExtensionAdRule* rule = graph_.rules().find(ext.family_id());
    if (rule != nullptr && setup_.reverse && rule->has_direct_vjp()) {
      SmallVector<std::int64_t, 4> tangent_values;
      for (const auto& t : tangents) tangent_values.push_back(t ? graph_.index_unchecked(*t) : -1);
      SmallVector<ValueMetadata, 2> metadata;
      for (std::size_t k = 0; k < op.num_results(); ++k) metadata.push_back(program.metadata(op.result(k)));
      const std::uint32_t first = graph_.append_opaque(op.shared_extension(), operands, std::move(tangent_values),
                                                       lin.primal[op.result(0).index()], metadata.span(), rule);
      TangentList out;
      for (std::size_t k = 0; k < op.num_results(); ++k) {
        if (is_inexact(metadata[k].dtype)) {
          out.push_back(graph_.token(first + static_cast<std::uint32_t>(k)));
        } else {
          out.push_back(std::nullopt);
        }
      }
      return out;
    }
    if (rule != nullptr) {
      LinearizeContext context =
          AdBuilderAccess::linearize_context(op.shared_extension(), std::move(primal_operands), std::move(tangents),
                                             std::move(primal_results), &graph_.builder());
      ++counters_.extension_rule_calls;
      Result<TangentList> out = guarded("ExtensionAdRule::linearize", [&] { return rule->linearize(context); });
      if (!out.ok()) {
        return out.status().with_context(
            fmt::format("{}: the AD rule of {} failed", graph_.scope().label, ext.family_id()), ErrorStage::kCompile);
      }
      return out;
    }
    if (!op.effects().is_pure()) {
      return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kCompile,
                        "{}: effectful extension {} ({}) is differentiated but the AdContext has no rule for it; "
                        "effectful operations require an installed rule",
                        label, ext.family_id(), op.effects().to_string());
    }
    if (setup_.fallback != LoweringFallback::kThroughCoreLowering) {
      return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile,
                        "{}: no AD rule for extension family {}; install one in the AdContext, or allow "
                        "LoweringFallback::kThroughCoreLowering to differentiate its core lowering",
                        label, ext.family_id());
    }
    return through_lowering(program, op, label, operands, lin);
  }

  // The program the rule of extension `op` puts in its place, or null
  // (Note [Writing an extension AD rule], expansion()).
  Result<std::shared_ptr<const SemanticProgram>> expansion(const SemanticProgram& program, const OperationView& op,
                                                           const std::string& label) {
    const ExtensionAdRule* rule = graph_.rules().find(op.extension()->family_id());
    if (rule == nullptr || !setup_.expand_nodes) return std::shared_ptr<const SemanticProgram>();
    SmallVector<ValueMetadata, 4> metadata;
    for (ValueId v : op.operands()) metadata.push_back(program.metadata(v));
    Result<std::shared_ptr<const SemanticProgram>> fragment =
        guarded("ExtensionAdRule::expansion", [&] { return rule->expansion(*op.extension(), metadata.span()); });
    if (!fragment.ok()) {
      return fragment.status().with_context(
          fmt::format("{}: the AD rule of {} failed to expand it", label, op.extension()->family_id()),
          ErrorStage::kCompile);
    }
    const SemanticProgram* f = fragment->get();
    if (f == nullptr) return fragment;
    if (expansion_depth_ >= kMaxExpansionDepth) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: the AD rule of {} expands nodes more than {} levels deep", label,
                        op.extension()->family_id(), kMaxExpansionDepth);
    }
    bool matches = f->num_inputs() == op.operands().size() && f->outputs().size() == op.num_results();
    for (std::size_t i = 0; matches && i < f->num_inputs(); ++i) matches = f->metadata(f->input(i)) == metadata[i];
    for (std::size_t j = 0; matches && j < op.num_results(); ++j)
      matches = f->metadata(f->outputs()[j]) == program.metadata(op.result(j));
    if (!matches) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: the expansion the AD rule of {} returned does not take the node's operands and return "
                        "its results ({} inputs, {} outputs for {} operands, {} results, or other metadata)",
                        label, op.extension()->family_id(), f->num_inputs(), f->outputs().size(), op.operands().size(),
                        op.num_results());
    }
    return fragment;
  }

  // Copies and differentiates `fragment` in the place of `op`: its values
  // become the primal (role `copy_role`) and its tangents op's.
  Status expand(const SemanticProgram& program, const OperationView& op, const SemanticProgram& fragment,
                Linearization& lin, NodeRole copy_role, const std::string& label) {
    ++counters_.expanded_nodes;
    Linearization inner;
    inner.primal.assign(fragment.num_values(), kUnmapped);
    inner.tangent.assign(fragment.num_values(), -1);
    for (std::size_t i = 0; i < fragment.num_inputs(); ++i) {
      inner.primal[fragment.input(i).index()] = lin.primal[op.operands()[i].index()];
      inner.tangent[fragment.input(i).index()] = lin.tangent[op.operands()[i].index()];
    }
    ++expansion_depth_;
    const program::ProvenanceRef outer = std::exchange(expanded_from_, provenance_of(op));
    Status s = ok_status();
    for (OperationView fop : fragment.operations()) {
      const std::string inner_label = fmt::format("{} (expanded: {})", label, node_label(fop));
      s = operation(fragment, fop, inner, copy_role, inner_label, {});
      if (!s.ok()) break;
    }
    expanded_from_ = outer;
    --expansion_depth_;
    TENFERRO_TRY(s);
    for (std::size_t j = 0; j < op.num_results(); ++j) {
      const ValueId v = fragment.outputs()[j];
      lin.primal[op.result(j).index()] = inner.primal[v.index()];
      const std::int64_t t = inner.tangent[v.index()];
      if (t >= 0 && is_inexact(program.metadata(op.result(j)).dtype)) lin.tangent[op.result(j).index()] = t;
    }
    return ok_status();
  }

  // Differentiates the validated core lowering of extension `op` inline.
  Result<TangentList> through_lowering(const SemanticProgram& program, const OperationView& op,
                                       const std::string& label, std::span<const std::uint32_t> operands,
                                       Linearization& lin) {
    SmallVector<ValueMetadata, 4> metadata;
    bool exact = true;
    for (ValueId v : op.operands()) {
      metadata.push_back(program.metadata(v));
      exact = exact && metadata.back().is_exact();
    }
    program::SpecializationRequirements granted;
    if (exact) granted = granted.with(program::SpecializationAxis::kConcreteDims);
    TENFERRO_ASSIGN_OR_RETURN(
        program::CoreLowering lowering,
        program::lower_extension_to_core(*op.extension(), metadata.span(), granted, op.provenance()));
    if (lowering.kind != program::ExtensionLoweringOutcome::Kind::kLowered) {
      return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile,
                        "{}: no AD rule for extension family {} and its core lowering is not available for these "
                        "operands ({})",
                        label, op.extension()->family_id(),
                        lowering.kind == program::ExtensionLoweringOutcome::Kind::kNeedsSpecialization
                            ? "it needs specialization " + lowering.requirements.to_string()
                            : lowering.unsupported_reason);
    }
    ++counters_.lowering_fallbacks;
    const SemanticProgram& fragment = *lowering.fragment;
    Linearization inner;
    inner.primal.assign(fragment.num_values(), kUnmapped);
    inner.tangent.assign(fragment.num_values(), -1);
    for (std::size_t i = 0; i < fragment.num_inputs(); ++i) {
      inner.primal[fragment.input(i).index()] = operands[i];
      inner.tangent[fragment.input(i).index()] = lin.tangent[op.operands()[i].index()];
    }
    // The extension's own results stand for the fragment's outputs.
    for (std::size_t j = 0; j < fragment.outputs().size(); ++j) {
      const ValueId v = fragment.outputs()[j];
      if (!fragment.producer(v).is_input && inner.primal[v.index()] == kUnmapped)
        inner.primal[v.index()] = lin.primal[op.result(j).index()];
    }
    std::span<const program::SymbolicExtent> meaning;
    if (!exact) meaning = lowering.symbol_meaning.span();
    for (OperationView fop : fragment.operations()) {
      const std::string inner_label = fmt::format("{} (through its core lowering: {})", label, node_label(fop));
      TENFERRO_TRY(operation(fragment, fop, inner, NodeRole::kCoefficient, inner_label, meaning));
    }
    TangentList out;
    for (std::size_t j = 0; j < fragment.outputs().size(); ++j) {
      const std::int64_t t = inner.tangent[fragment.outputs()[j].index()];
      out.push_back(t >= 0 ? std::optional<AdValue>(graph_.token(static_cast<std::uint32_t>(t))) : std::nullopt);
    }
    return out;
  }

  // Validates the tangents a rule returned and records them.
  Status record(const SemanticProgram& program, const OperationView& op, const std::string& label,
                const TangentList& tangents, Linearization& lin) {
    if (tangents.size() != op.num_results()) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "jvp of {}: the rule returned {} tangents for {} results", label, tangents.size(),
                        op.num_results());
    }
    for (std::size_t k = 0; k < tangents.size(); ++k) {
      if (!tangents[k]) continue;
      const ValueMetadata& expected = program.metadata(op.result(k));
      TENFERRO_ASSIGN_OR_RETURN(std::uint32_t t, graph_.index_of(*tangents[k]));
      const GraphValue& value = graph_.value(t);
      if (value.kind != ValueKind::kLinear) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "jvp of {}: the tangent returned for result {} is not linear in the operand tangents "
                          "(a primal value cannot be a tangent)",
                          label, k);
      }
      if (!is_inexact(expected.dtype)) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "jvp of {}: result {} is {} and cannot have a tangent", label, k, expected.to_string());
      }
      if (value.metadata.dtype != expected.dtype ||
          !(value.metadata.shape == graph_.value(lin.primal[op.result(k).index()]).metadata.shape)) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "jvp of {}: expected the tangent of result {} to be {}, found {}", label, k,
                          graph_.value(lin.primal[op.result(k).index()]).metadata.to_string(),
                          value.metadata.to_string());
      }
      if (!value.zero) lin.tangent[op.result(k).index()] = t;
    }
    return ok_status();
  }

  static constexpr int kMaxExpansionDepth = 4;

  const TransformSetup& setup_;
  AdGraph& graph_;
  TransformCounters& counters_;
  int expansion_depth_ = 0;
  program::ProvenanceRef expanded_from_;  // set while copying an expansion
};

}  // namespace

std::string node_label(const OperationView& op) {
  const program::ProvenanceRef& p = op.provenance();
  if (p && !p->label.empty() && p->label != "unattributed") {
    return fmt::format("{} (operation {}; {})", op.name(), op.id().index(), p->label);
  }
  return fmt::format("{} (operation {})", op.name(), op.id().index());
}

Result<Linearization> linearize(const SemanticProgram& source, std::span<const std::uint32_t> active,
                                const TransformSetup& setup, AdGraph& graph, TransformCounters& counters) {
  Linearization lin;
  lin.primal.assign(source.num_values(), kUnmapped);
  lin.tangent.assign(source.num_values(), -1);
  for (std::size_t i = 0; i < source.num_inputs(); ++i)
    lin.primal[source.input(i).index()] = graph.add_input(InputClass::kPrimal, source.metadata(source.input(i)));
  for (std::uint32_t a : active)
    lin.tangent[source.input(a).index()] = graph.add_input(InputClass::kTangent, source.metadata(source.input(a)));
  Linearizer linearizer(setup, graph, counters);
  for (OperationView op : source.operations()) {
    TENFERRO_TRY(linearizer.operation(source, op, lin, NodeRole::kPrimal, node_label(op), {}));
  }
  return lin;
}

Status check_active_inputs(const SemanticProgram& source, std::span<const std::uint32_t> active) {
  for (std::size_t k = 0; k < active.size(); ++k) {
    const std::uint32_t a = active[k];
    if (a >= source.num_inputs()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "active input {} is out of range: the program has {} inputs", a, source.num_inputs());
    }
    if (k > 0 && a <= active[k - 1]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "active inputs must be strictly increasing, found {} after {}", a, active[k - 1]);
    }
    const ValueMetadata& m = source.metadata(source.input(a));
    if (!is_inexact(m.dtype)) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kCompile,
                        "active input {} ('{}') is {}; expected a floating or complex input (integer and bool values "
                        "are not differentiable)",
                        a, source.input_name(a), m.to_string());
    }
  }
  return ok_status();
}

}  // namespace tenferro::ad::internal
