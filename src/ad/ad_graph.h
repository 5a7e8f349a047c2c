// AdGraph: the internal graph one AD transform builds before it emits any
// program. It holds primal copies of the source operations, the values
// rules compute from them (coefficients), the linear (tangent) operations,
// and the cotangent operations that transposition appends, each tagged
// with its role, so that one graph can be replayed into the JVP program,
// the combined VJP program, or the forward/backward pair of a split VJP
// (Note [AD graph roles]).
//
// Note [AD graph roles]
//   kPrimal       a copy of a source-program operation (same payload,
//                 attributes, placement and provenance);
//   kCoefficient  a non-linear value a rule computes from primal values
//                 (cos(x) for sin, masks, constants);
//   kLinear       an operation linear in its linear operands (the tangent
//                 program); replayed only by forward mode;
//   kOpaqueLinear the Jacobian of an extension node with a direct-VJP rule
//                 (reverse mode only; its transposition calls the rule);
//   kBackward     appended by transposition (cotangents).
// JVP replays kPrimal + kCoefficient + kLinear; a combined VJP replays
// kPrimal + kCoefficient + kBackward; a split VJP puts kPrimal in the
// forward program and kCoefficient + kBackward (plus the primal values
// they need, as residual inputs) in the backward program.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/ad/ad_rule.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::ad::internal {

/// Runs rule or extension code `f`; an escaping exception becomes a
/// kCompile error naming `what`.
template <class F>
auto guarded(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return status_from_current_exception(ErrorStage::kCompile, what);
  }
}

enum class ValueKind : std::uint8_t { kPrimal, kLinear, kBackward };
enum class NodeRole : std::uint8_t { kPrimal, kCoefficient, kLinear, kOpaqueLinear, kBackward };
enum class InputClass : std::uint8_t { kPrimal, kTangent, kCotangent };
/// Which rule kind is emitting: decides the role of emitted nodes.
enum class EmitPhase : std::uint8_t { kLinearize, kTranspose };

struct GraphValue {
  program::ValueMetadata metadata;
  ValueKind kind = ValueKind::kPrimal;
  std::int32_t node = -1;   ///< producing node; -1 for a graph input
  std::uint32_t index = 0;  ///< result index, or position within its input class
  InputClass input_class = InputClass::kPrimal;
  bool zero = false;  ///< a linear zero (AdBuilder::zeros)
};

struct GraphNode {
  NodeRole role = NodeRole::kPrimal;
  program::CoreSemanticOp core = program::CoreSemanticOp::kNeg;
  program::CoreAttributes attributes;
  std::shared_ptr<const program::ExtensionOp> extension;  ///< null for core ops
  SmallVector<std::uint32_t, 4> operands;
  std::uint32_t first_result = 0;
  std::uint32_t num_results = 0;
  program::ProvenanceRef provenance;
  program::PlacementConstraint placement;
  /// kOpaqueLinear: the tangent value of each operand, or -1 when absent.
  SmallVector<std::int64_t, 4> opaque_tangents;
  /// kOpaqueLinear: the first primal result of the differentiated node.
  std::uint32_t opaque_primal_results = 0;
  const ExtensionAdRule* opaque_rule = nullptr;
  /// The differentiated source node, for error messages.
  std::string source_label;
};

/// The extension rules a transform sees: a snapshot of its AdContext's.
struct RuleTable {
  std::map<std::string, std::shared_ptr<const ExtensionAdRule>, std::less<>> rules;
  const ExtensionAdRule* find(std::string_view family) const {
    auto it = rules.find(family);
    return it == rules.end() ? nullptr : it->second.get();
  }
};

/// See the file comment. Not thread-safe (one transform, one thread).
class AdGraph {
 public:
  explicit AdGraph(const RuleTable* rules) : rules_(rules) { builder_.graph_ = this; }
  AdGraph(const AdGraph&) = delete;
  AdGraph& operator=(const AdGraph&) = delete;

  /// Where emitted nodes get their role, provenance, placement and the
  /// node name used in error messages.
  struct Scope {
    EmitPhase phase = EmitPhase::kLinearize;
    program::ProvenanceRef provenance;
    program::PlacementConstraint placement;
    std::string label;
  };
  Scope& scope() noexcept { return scope_; }

  std::uint32_t add_input(InputClass input_class, program::ValueMetadata metadata);
  std::span<const std::uint32_t> inputs(InputClass input_class) const noexcept {
    return inputs_[static_cast<int>(input_class)];
  }

  /// Appends a node (metadata inference, effect check) with the scope's
  /// provenance and placement; returns the index of its first result.
  /// `role` decides the kind of the results (kLinear/kOpaqueLinear:
  /// linear, kBackward: backward, otherwise primal).
  Result<std::uint32_t> append_core(NodeRole role, program::CoreSemanticOp op, std::span<const std::uint32_t> operands,
                                    program::CoreAttributes attributes);
  Result<std::uint32_t> append_extension(NodeRole role, std::shared_ptr<const program::ExtensionOp> op,
                                         std::span<const std::uint32_t> operands);
  /// Appends an opaque linear node (direct-VJP extension) whose results
  /// have `result_metadata`.
  std::uint32_t append_opaque(std::shared_ptr<const program::ExtensionOp> op, std::span<const std::uint32_t> operands,
                              SmallVector<std::int64_t, 4> tangents, std::uint32_t primal_results,
                              std::span<const program::ValueMetadata> results, const ExtensionAdRule* rule);
  /// Marks a linear value as a zero.
  void mark_zero(std::uint32_t value) noexcept { values_[value].zero = true; }

  std::size_t num_values() const noexcept { return values_.size(); }
  std::size_t num_nodes() const noexcept { return nodes_.size(); }
  const GraphValue& value(std::uint32_t i) const noexcept { return values_[i]; }
  const GraphNode& node(std::uint32_t i) const noexcept { return nodes_[i]; }

  AdValue token(std::uint32_t index) const noexcept { return AdValue(this, index); }
  /// The index of `value`; kForeignValue for another transform's token.
  Result<std::uint32_t> index_of(AdValue value) const;
  /// Precondition: `value` is a token of this graph.
  std::uint32_t index_unchecked(AdValue value) const noexcept;

  const RuleTable& rules() const noexcept { return *rules_; }
  AdBuilder& builder() noexcept { return builder_; }

 private:
  Result<std::uint32_t> append(GraphNode node, SmallVector<program::ValueMetadata, 2> results);

  const RuleTable* rules_;
  std::vector<GraphValue> values_;
  std::vector<GraphNode> nodes_;
  std::vector<std::uint32_t> inputs_[3];
  Scope scope_;
  AdBuilder builder_;
};

/// Access to the private parts of the public rule types.
struct AdBuilderAccess {
  static AdGraph* graph(AdBuilder& builder) noexcept { return builder.graph_; }
  static LinearizeContext linearize_context(std::shared_ptr<const program::ExtensionOp> op,
                                            SmallVector<AdValue, 4> operands,
                                            SmallVector<std::optional<AdValue>, 4> tangents,
                                            SmallVector<AdValue, 2> results, AdBuilder* builder);
  static TransposeContext transpose_context(std::shared_ptr<const program::ExtensionOp> op,
                                            SmallVector<AdValue, 4> operands, SmallVector<bool, 4> linear,
                                            SmallVector<program::ValueMetadata, 4> operand_metadata,
                                            SmallVector<std::optional<AdValue>, 2> cotangents,
                                            SmallVector<program::ValueMetadata, 2> result_metadata, AdBuilder* builder);
  static DirectVjpContext direct_vjp_context(std::shared_ptr<const program::ExtensionOp> op,
                                             SmallVector<AdValue, 4> operands, SmallVector<bool, 4> needed,
                                             SmallVector<AdValue, 2> results,
                                             SmallVector<std::optional<AdValue>, 2> cotangents, AdBuilder* builder);
};

/// ok when core op `op` may take linear values at exactly the operand
/// positions flagged in `linear` (Note [Writing an extension AD rule]);
/// otherwise kContractViolation naming `who`.
Status check_linear_use(program::CoreSemanticOp op, std::span<const bool> linear,
                        const program::CoreAttributes& attributes, std::span<const program::ValueMetadata> operands,
                        std::string_view who);

/// Replays the nodes of `graph` for which `include(index, node)` holds into
/// `builder`, in graph order. `map` holds a ProgramValue per graph value
/// (inputs and earlier values must be mapped already); results are added.
Status replay(const AdGraph& graph, const std::function<bool(std::uint32_t, const GraphNode&)>& include,
              program::ProgramBuilder& builder, std::vector<program::ProgramValue>& map);

/// Input metadata usable by ProgramBuilder::add_input in a builder whose
/// first inputs mirror `source`'s inputs: exact extents and symbols stay;
/// other expressions become fresh placeholders (tied by guards when they
/// meet other values).
program::SymbolicShape input_shape_spec(std::span<const program::SymbolicExtent> shape, std::size_t num_symbols);

/// Adds inputs mirroring `source`'s input schemas (same symbols).
Result<SmallVector<program::ProgramValue, 4>> mirror_inputs(const program::SemanticProgram& source,
                                                            program::ProgramBuilder& builder);

}  // namespace tenferro::ad::internal
