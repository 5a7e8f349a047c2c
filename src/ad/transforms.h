// The AD transform drivers: linearize (source program -> AdGraph),
// transpose (append the reverse pass to an AdGraph) and the builders of the
// JVP, VJP and split-VJP programs (Note [Linearize, then transpose] in
// include/tenferro/ad/ad_context.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ad_graph.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/ad_program.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::ad::internal {

/// Counters the drivers update (AdMetrics).
struct TransformCounters {
  std::uint64_t direct_vjp_nodes = 0;
  std::uint64_t lowering_fallbacks = 0;
  std::uint64_t extension_rule_calls = 0;
  std::uint64_t expanded_nodes = 0;
};

/// What one transform needs besides the source program.
struct TransformSetup {
  const RuleTable* rules = nullptr;
  LoweringFallback fallback = LoweringFallback::kDisabled;
  /// Ask rules for expansions (AdContextOptions::expand_nodes).
  bool expand_nodes = true;
  /// Reverse mode: extension nodes with a direct-VJP rule become opaque.
  bool reverse = false;
};

/// The source program's values in the graph.
struct Linearization {
  std::vector<std::uint32_t> primal;  ///< per source ValueId
  std::vector<std::int64_t> tangent;  ///< per source ValueId; -1: absent
};

/// Builds the primal copy and the linearization of `source` with respect
/// to `active` (validated by the caller) into `graph`.
Result<Linearization> linearize(const program::SemanticProgram& source, std::span<const std::uint32_t> active,
                                const TransformSetup& setup, AdGraph& graph, TransformCounters& counters);

/// Transposes every linear node of `graph` that reaches a seeded linear
/// value: seeds[k] (a cotangent graph value) is the cotangent of linear
/// value seeded[k]. Returns the cotangent graph value of every graph value
/// that received one (-1 otherwise), indexed like the graph's values
/// before transposition.
Result<std::vector<std::int64_t>> transpose(AdGraph& graph, std::span<const std::uint32_t> seeded,
                                            std::span<const std::uint32_t> seeds, TransformCounters& counters);

/// The programs of one transform, without bindings (cached).
struct BuiltTransform {
  std::shared_ptr<const program::SemanticProgram> program;   ///< JVP or VJP (split: forward; reuse: null)
  std::shared_ptr<const program::SemanticProgram> backward;  ///< split and reuse VJP
  std::size_t num_residuals = 0;
  /// Reuse VJP: the source output each residual input stands for.
  SmallVector<std::uint32_t, 4> reused_outputs;
  AdLayout layout;
};

enum class TransformKind : std::uint8_t { kJvp, kVjp, kSplitVjp, kReuseVjp, kGrad };

/// grad_program's program (derivative_programs.cpp), uncached: the
/// gradients of scalar output `output` of `source` (its bindings ignored)
/// with respect to `active` (AdContext::grad caches it).
Result<std::shared_ptr<const program::SemanticProgram>> build_grad_program(AdContext& context,
                                                                           const program::FrozenProgram& source,
                                                                           std::span<const std::uint32_t> active,
                                                                           std::uint32_t output);

/// Runs the whole transform. `active` is validated by the caller. For
/// kReuseVjp only outputs [0, num_differentiated) are differentiated and
/// the backward program reads the remaining outputs' values instead of
/// recomputing them (AdContext::vjp_reusing_outputs).
Result<BuiltTransform> build_transform(TransformKind kind, const program::SemanticProgram& source,
                                       std::span<const std::uint32_t> active, const TransformSetup& setup,
                                       TransformCounters& counters, std::size_t num_differentiated = SIZE_MAX);

/// Validates an active-input list against `source` (Note [AD program layout]).
Status check_active_inputs(const program::SemanticProgram& source, std::span<const std::uint32_t> active);

/// Bindings for a program whose first `source_inputs` inputs are bound like
/// `source`'s and whose `extra` further inputs are parameters.
Result<program::ProgramBindings> extend_bindings(const program::ProgramBindings& source, std::size_t source_inputs,
                                                 std::size_t extra);

/// "sin (operation 3; provenance: model.cpp:4)".
std::string node_label(const program::OperationView& op);

}  // namespace tenferro::ad::internal
