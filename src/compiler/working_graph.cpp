// The working graph: reading a program, DCE, extension output pruning and
// the final emission (pipeline steps 1, 3, 5 and 6).
#include "working_graph.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "tenferro/program/shape_guard.h"

namespace tenferro::compiler::internal {

using program::ValueMetadata;

WorkingGraph WorkingGraph::read(const program::SemanticProgram& program) {
  WorkingGraph g;
  g.source = &program;
  g.num_inputs = program.num_inputs();
  g.values.reserve(program.num_values());
  for (std::size_t i = 0; i < program.num_inputs(); ++i) {
    g.values.push_back(WorkingValue{program.metadata(program.input(i)), kNoNode, static_cast<std::uint32_t>(i)});
  }
  g.nodes.reserve(program.num_operations());
  SmallVector<ValueMetadata, 2> results;
  for (program::OperationView op : program.operations()) {
    WorkingNode node;
    if (op.is_core()) {
      node.core = op.core_op();
    } else {
      node.extension = op.shared_extension();
    }
    node.attributes = op.attributes();
    for (program::ValueId v : op.operands()) node.operands.push_back(v.index());
    node.effects = op.effects();
    for (const program::AliasDecl& a : op.aliases()) node.aliases.push_back(a);
    node.placement = op.placement();
    node.provenance = op.provenance();
    results.clear();
    for (std::size_t r = 0; r < op.num_results(); ++r) results.push_back(program.metadata(op.result(r)));
    g.append(std::move(node), results.span());  // values are numbered as in the program
  }
  for (program::ValueId v : program.outputs()) g.outputs.push_back(v.index());
  return g;
}

WorkingGraph WorkingGraph::empty_copy() const {
  WorkingGraph g;
  g.source = source;
  g.num_inputs = num_inputs;
  g.values.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(num_inputs));
  return g;
}

std::uint32_t WorkingGraph::append(WorkingNode node, std::span<const ValueMetadata> results) {
  const auto index = static_cast<std::uint32_t>(nodes.size());
  node.first_result = static_cast<std::uint32_t>(values.size());
  node.num_results = static_cast<std::uint32_t>(results.size());
  for (std::size_t r = 0; r < results.size(); ++r) {
    values.push_back(WorkingValue{results[r], index, static_cast<std::uint32_t>(r)});
  }
  nodes.push_back(std::move(node));
  return index;
}

std::string WorkingGraph::label(std::uint32_t node) const {
  const WorkingNode& n = nodes[node];
  return fmt::format("{} %{} [{}]", n.name(), n.first_result, program::describe_provenance(n.provenance));
}

std::vector<bool> in_place_operands(const WorkingGraph& graph) {
  std::vector<bool> updated(graph.values.size(), false);
  for (const WorkingNode& n : graph.nodes) {
    for (const program::AliasDecl& a : n.aliases) {
      if (a.kind == program::AliasKind::kMustAlias && a.operand < n.operands.size()) {
        updated[n.operands[a.operand]] = true;
      }
    }
  }
  return updated;
}

namespace {

/// The graph with only the nodes for which keep[node] is set, in order.
WorkingGraph compact(const WorkingGraph& graph, const std::vector<bool>& keep) {
  WorkingGraph out = graph.empty_copy();
  std::vector<std::uint32_t> value_map(graph.values.size(), kNoNode);
  for (std::uint32_t i = 0; i < graph.num_inputs; ++i) value_map[i] = i;
  SmallVector<ValueMetadata, 2> results;
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    if (!keep[k]) continue;
    WorkingNode node = graph.nodes[k];
    for (std::uint32_t& v : node.operands) v = value_map[v];
    results.clear();
    for (std::uint32_t r = 0; r < node.num_results; ++r)
      results.push_back(graph.values[node.first_result + r].metadata);
    const std::uint32_t old_first = node.first_result;
    const std::uint32_t index = out.append(std::move(node), results.span());
    for (std::uint32_t r = 0; r < out.nodes[index].num_results; ++r) {
      value_map[old_first + r] = out.nodes[index].first_result + r;
    }
  }
  for (std::uint32_t v : graph.outputs) out.outputs.push_back(value_map[v]);
  return out;
}

/// Per value, whether a live node or an output reads it.
std::vector<bool> used_values(const WorkingGraph& graph, const std::vector<bool>& live) {
  std::vector<bool> used(graph.values.size(), false);
  for (std::uint32_t v : graph.outputs) used[v] = true;
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    if (!live[k]) continue;
    for (std::uint32_t v : graph.nodes[k].operands) used[v] = true;
  }
  return used;
}

}  // namespace

WorkingGraph eliminate_dead_code(WorkingGraph graph, CompileMetrics& metrics) {
  std::vector<bool> live(graph.nodes.size(), false);
  std::vector<bool> needed(graph.values.size(), false);
  for (std::uint32_t v : graph.outputs) needed[v] = true;
  for (std::size_t k = graph.nodes.size(); k-- > 0;) {
    const WorkingNode& n = graph.nodes[k];
    bool keep = !n.effects.is_pure();
    for (std::uint32_t r = 0; r < n.num_results && !keep; ++r) keep = needed[n.first_result + r];
    if (!keep) continue;
    live[k] = true;
    for (std::uint32_t v : n.operands) needed[v] = true;
  }
  const auto removed = static_cast<std::size_t>(std::count(live.begin(), live.end(), false));
  if (removed == 0) return graph;
  metrics.dead_operations += removed;
  return compact(graph, live);
}

namespace {

/// Guards `op` needs for `operands` (its own inference), or its error.
Result<SmallVector<ValueMetadata, 2>> infer_extension(const program::ExtensionOp& op,
                                                      std::span<const ValueMetadata> operands,
                                                      std::vector<program::ShapeGuard>* guards, std::string_view node) {
  program::ShapeConstraints constraints(node, guards);
  return call_extension("ExtensionOp::infer_metadata", [&] { return op.infer_metadata(operands, constraints); });
}

bool covers(const std::vector<program::ShapeGuard>& have, const std::vector<program::ShapeGuard>& need) {
  return std::all_of(need.begin(), need.end(), [&](const program::ShapeGuard& g) {
    return std::any_of(have.begin(), have.end(), [&](const program::ShapeGuard& h) { return h.same_predicate(g); });
  });
}

/// The prune_outputs() answer for node `k` with results `live`, checked
/// against the original (graph_compiler.h, step 5); nullptr when the op
/// cannot be pruned or the pruned op would need fewer shape guards (it
/// would accept inputs the traced program rejects).
Result<std::shared_ptr<const program::ExtensionOp>> checked_prune(const WorkingGraph& graph, std::uint32_t k,
                                                                  std::span<const bool> live, std::size_t num_live) {
  const WorkingNode& n = graph.nodes[k];
  const std::string node = graph.label(k);
  auto violation = [&](std::string what) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                 fmt::format("{}: prune_outputs returned an operation that {}", node, what));
  };
  std::shared_ptr<const program::ExtensionOp> pruned;
  TENFERRO_TRY(call_extension("ExtensionOp::prune_outputs", [&]() -> Status {
    pruned = n.extension->prune_outputs(live);
    return ok_status();
  }));
  if (!pruned) return pruned;
  if (pruned->family_id() != n.extension->family_id()) {
    return violation(fmt::format("has family {} instead of {}", pruned->family_id(), n.extension->family_id()));
  }
  SmallVector<ValueMetadata, 4> operands;
  for (std::uint32_t v : n.operands) operands.push_back(graph.values[v].metadata);
  std::vector<program::ShapeGuard> old_guards, new_guards;
  TENFERRO_TRY(infer_extension(*n.extension, operands.span(), &old_guards, node).status());
  auto results = infer_extension(*pruned, operands.span(), &new_guards, node);
  if (!results.ok()) return violation(fmt::format("fails its metadata inference: {}", results.status().message()));
  if (results->size() != num_live) {
    return violation(fmt::format("has {} results for {} live ones", results->size(), num_live));
  }
  auto effects =
      call_extension("ExtensionOp::effects", [&]() -> Result<program::EffectSet> { return pruned->effects(); });
  TENFERRO_TRY(effects.status());
  if (!(*effects == n.effects)) {
    return violation(fmt::format("has effects {} instead of {}", effects->to_string(), n.effects.to_string()));
  }
  using AliasList = SmallVector<program::AliasDecl, 2>;
  auto aliases = call_extension("ExtensionOp::aliases", [&]() -> Result<AliasList> { return pruned->aliases(); });
  TENFERRO_TRY(aliases.status());
  if (aliases->size() != num_live) {
    return violation(fmt::format("declares {} aliases for {} results", aliases->size(), num_live));
  }
  for (std::uint32_t r = 0, j = 0; r < n.num_results; ++r) {
    if (!live[r]) continue;
    const ValueMetadata& want = graph.values[n.first_result + r].metadata;
    if (!((*results)[j] == want)) {
      return violation(fmt::format("infers {} for result {} (formerly {}), which was {}", (*results)[j].to_string(), j,
                                   r, want.to_string()));
    }
    if (!((*aliases)[j] == n.aliases[r])) {
      return violation(fmt::format("declares {} for result {} (formerly {}), which was {}", (*aliases)[j].to_string(),
                                   j, r, n.aliases[r].to_string()));
    }
    ++j;
  }
  if (!covers(new_guards, old_guards)) return std::shared_ptr<const program::ExtensionOp>();
  return pruned;
}

}  // namespace

Result<WorkingGraph> prune_extension_outputs(WorkingGraph graph, CompileMetrics& metrics) {
  const std::vector<bool> used = used_values(graph, std::vector<bool>(graph.nodes.size(), true));
  const bool any_candidate = std::any_of(graph.nodes.begin(), graph.nodes.end(), [&](const WorkingNode& n) {
    if (n.is_core() || n.num_results < 2) return false;
    const auto first = used.begin() + n.first_result;
    const auto live = std::count(first, first + n.num_results, true);
    return live > 0 && live < n.num_results;
  });
  if (!any_candidate) return graph;
  WorkingGraph out = graph.empty_copy();
  std::vector<std::uint32_t> value_map(graph.values.size(), kNoNode);
  for (std::uint32_t i = 0; i < graph.num_inputs; ++i) value_map[i] = i;
  SmallVector<bool, 4> live;
  SmallVector<ValueMetadata, 2> results;
  for (std::uint32_t k = 0; k < graph.nodes.size(); ++k) {
    WorkingNode node = graph.nodes[k];
    const std::uint32_t first = node.first_result;
    live.clear();
    live.resize(node.num_results, true);
    if (!node.is_core() && node.num_results > 1) {
      std::size_t num_live = 0;
      for (std::uint32_t r = 0; r < node.num_results; ++r) {
        live[r] = used[first + r];
        num_live += live[r] ? 1 : 0;
      }
      std::shared_ptr<const program::ExtensionOp> pruned;
      if (num_live > 0 && num_live < node.num_results) {
        TENFERRO_ASSIGN_OR_RETURN(pruned, checked_prune(graph, k, live.span(), num_live));
      }
      if (pruned) {
        metrics.extension_outputs_pruned += node.num_results - num_live;
        node.extension = std::move(pruned);
        SmallVector<program::AliasDecl, 1> kept;
        for (std::uint32_t r = 0; r < node.num_results; ++r)
          if (live[r]) kept.push_back(node.aliases[r]);
        node.aliases = std::move(kept);
      } else {
        live.clear();
        live.resize(node.num_results, true);
      }
    }
    for (std::uint32_t& v : node.operands) v = value_map[v];
    results.clear();
    for (std::uint32_t r = 0; r < node.num_results; ++r)
      if (live[r]) results.push_back(graph.values[first + r].metadata);
    const std::uint32_t index = out.append(std::move(node), results.span());
    for (std::uint32_t r = 0, j = 0; r < graph.nodes[k].num_results; ++r) {
      if (live[r]) value_map[first + r] = out.nodes[index].first_result + j++;
    }
  }
  for (std::uint32_t v : graph.outputs) out.outputs.push_back(value_map[v]);
  return out;
}

Result<program::FrozenProgram> emit_program(const WorkingGraph& graph) {
  const program::SemanticProgram& source = *graph.source;
  // Constants were admitted when they were traced (inline or constantized).
  program::ProgramBuilder builder(program::ConstantPolicy{std::numeric_limits<std::size_t>::max()});
  std::vector<program::ProgramValue> tokens(graph.values.size());
  // Mirror the inputs: symbols are numbered by first appearance, so fresh
  // placeholders at first appearances reproduce the source numbering.
  for (std::size_t i = 0; i < graph.num_inputs; ++i) {
    const ValueMetadata& m = source.metadata(source.input(i));
    program::SymbolicShape spec;
    for (std::size_t k = 0; k < m.shape.size(); ++k) {
      const program::SymbolicExtent& e = m.shape[k];
      auto symbol = e.as_symbol();
      const bool first = symbol && source.symbol(*symbol).input == i && source.symbol(*symbol).axis == k;
      spec.push_back(first ? (e.upper_bound() ? program::SymbolicExtent::bounded(*e.upper_bound())
                                              : program::SymbolicExtent::unknown())
                           : e);
    }
    TENFERRO_ASSIGN_OR_RETURN(tokens[i], builder.add_input(m.dtype, spec, source.input_name(i)));
  }
  SmallVector<program::ProgramValue, 4> operands;
  for (std::size_t k = 0; k < graph.nodes.size(); ++k) {
    const WorkingNode& n = graph.nodes[k];
    operands.clear();
    for (std::uint32_t v : n.operands) operands.push_back(tokens[v]);
    builder.set_provenance(n.provenance);
    builder.set_placement(n.placement);
    auto in_node = [&](const Status& s) {
      return s.with_context(fmt::format("{}: {}", graph.label(static_cast<std::uint32_t>(k)), s.message()),
                            ErrorStage::kCompile);
    };
    if (n.is_core()) {
      auto v = builder.emit(n.core, operands.span(), n.attributes);
      if (!v.ok()) return in_node(v.status());
      tokens[n.first_result] = *v;
    } else {
      auto results = builder.emit_extension(n.extension, operands.span());
      if (!results.ok()) return in_node(results.status());
      if (results->size() != n.num_results) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "{}: the extension now infers {} results, it was traced with {}",
                          graph.label(static_cast<std::uint32_t>(k)), results->size(), n.num_results);
      }
      for (std::uint32_t r = 0; r < n.num_results; ++r) tokens[n.first_result + r] = (*results)[r];
    }
    for (std::uint32_t r = 0; r < n.num_results; ++r) {
      TENFERRO_ASSIGN_OR_RETURN(ValueMetadata m, builder.metadata(tokens[n.first_result + r]));
      const ValueMetadata& want = graph.values[n.first_result + r].metadata;
      if (!(m == want)) {
        return make_error(n.is_core() ? ErrorCode::kInternal : ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "{}: result {} now infers as {}, it was traced as {}{}",
                          graph.label(static_cast<std::uint32_t>(k)), r, m.to_string(), want.to_string(),
                          n.is_core() ? " (a compiler rewrite changed metadata)"
                                      : " (the extension's infer_metadata is not deterministic)");
      }
    }
  }
  SmallVector<program::ProgramValue, 4> outputs;
  for (std::uint32_t v : graph.outputs) outputs.push_back(tokens[v]);
  return builder.freeze(outputs.span());
}

}  // namespace tenferro::compiler::internal
