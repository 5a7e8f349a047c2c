// The compiler's working graph: a mutable copy of a SemanticProgram's
// operations that the pipeline passes rebuild (Note [Compiler pipeline] in
// graph_compiler.h). Private to the compiler component.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::compiler::internal {

inline constexpr std::uint32_t kNoNode = std::numeric_limits<std::uint32_t>::max();

/// One SSA value: inputs first, then operation results.
struct WorkingValue {
  program::ValueMetadata metadata;
  std::uint32_t node = kNoNode;  ///< producing node; kNoNode for an input
  std::uint32_t index = 0;       ///< input position or result index
};

/// One operation (the fields of program::internal::OperationRecord the
/// compiler rewrites; effect order is kept by node order).
struct WorkingNode {
  program::CoreSemanticOp core = program::CoreSemanticOp::kNeg;  ///< when extension == nullptr
  std::shared_ptr<const program::ExtensionOp> extension;
  program::CoreAttributes attributes;
  SmallVector<std::uint32_t, 4> operands;
  std::uint32_t first_result = 0;
  std::uint32_t num_results = 0;
  program::EffectSet effects;
  SmallVector<program::AliasDecl, 1> aliases;
  program::PlacementConstraint placement;
  program::ProvenanceRef provenance;

  bool is_core() const noexcept { return extension == nullptr; }
  std::string_view name() const noexcept { return extension ? extension->family_id() : program::to_string(core); }
};

/// Nodes are in a topological order that keeps the relative order of
/// effectful nodes. `source` supplies the input schemas and names.
struct WorkingGraph {
  const program::SemanticProgram* source = nullptr;
  std::size_t num_inputs = 0;
  std::vector<WorkingValue> values;
  std::vector<WorkingNode> nodes;
  std::vector<std::uint32_t> outputs;

  /// Pipeline step 1: the operations of `program` (borrowed as source).
  static WorkingGraph read(const program::SemanticProgram& program);
  /// A graph with the same source and inputs and no operations.
  WorkingGraph empty_copy() const;
  /// Appends `node` with result metadata `results`; returns its index.
  std::uint32_t append(WorkingNode node, std::span<const program::ValueMetadata> results);
  /// "transpose %7 [attention at model.cpp:3 <- trace]" for error messages.
  std::string label(std::uint32_t node) const;
};

/// Pipeline step 3: per value, whether an in-place (must-alias) result
/// updates it. Such values keep their identity through every rewrite.
std::vector<bool> in_place_operands(const WorkingGraph& graph);

/// Pipeline step 4 (canonicalize.cpp): the rewrites and CSE selected by
/// `options`, as a rebuilt graph. Counts what it did in `metrics`.
WorkingGraph canonicalize(const WorkingGraph& graph, const CompilerOptions& options, CompileMetrics& metrics);

/// DCE: keeps the nodes the outputs need and every effectful node.
WorkingGraph eliminate_dead_code(WorkingGraph graph, CompileMetrics& metrics);

/// Pipeline step 5: replaces extension nodes with unused results by their
/// prune_outputs() answer where it is consistent (see graph_compiler.h).
/// kContractViolation naming the node when the pruned op's metadata
/// inference fails or contradicts the original.
Result<WorkingGraph> prune_extension_outputs(WorkingGraph graph, CompileMetrics& metrics);

/// Pipeline step 6 (without validation): emits the graph into a builder
/// whose inputs mirror the source's, and freezes it. kContractViolation
/// naming the node when an extension's inference now disagrees with the
/// traced metadata.
Result<program::FrozenProgram> emit_program(const WorkingGraph& graph);

/// Runs an extension callback, turning an exception into a compile-stage
/// error naming `what`.
template <class F>
auto call_extension(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return status_from_current_exception(ErrorStage::kCompile, what);
  }
}

}  // namespace tenferro::compiler::internal
