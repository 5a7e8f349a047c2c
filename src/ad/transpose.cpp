// transpose: the reverse pass over an AdGraph's linear nodes (Note
// [Linearize, then transpose] in include/tenferro/ad/ad_context.h).
#include <unordered_map>

#include <fmt/format.h>

#include "core_rules.h"
#include "rule_ops.h"
#include "transforms.h"

namespace tenferro::ad::internal {

using program::CoreSemanticOp;
using program::ValueMetadata;

namespace {

class Transposer {
 public:
  Transposer(AdGraph& graph, TransformCounters& counters)
      : graph_(graph), counters_(counters), cotangent_(graph.num_values(), -1) {}

  // Adds cotangent value `c` to the cotangent of linear value `v`.
  Status accumulate(std::uint32_t v, std::uint32_t c) {
    if (graph_.value(v).zero) return ok_status();
    std::int64_t& slot = cotangent_[v];
    if (slot < 0) {
      slot = c;
      return ok_status();
    }
    TENFERRO_ASSIGN_OR_RETURN(
        AdValue sum,
        graph_.builder().emit(CoreSemanticOp::kAdd, {graph_.token(static_cast<std::uint32_t>(slot)), graph_.token(c)}));
    slot = graph_.index_unchecked(sum);
    return ok_status();
  }

  Status seed(std::uint32_t linear_value, std::uint32_t seed) {
    const GraphValue& v = graph_.value(linear_value);
    program::ProvenanceRef provenance = v.node >= 0
                                            ? derived(graph_.node(static_cast<std::uint32_t>(v.node)).provenance)
                                            : program::make_provenance("vjp: sum of output cotangents");
    graph_.scope() = {EmitPhase::kTranspose, std::move(provenance), {}, "vjp output cotangents"};
    return accumulate(linear_value, seed);
  }

  Status node(std::uint32_t index) {
    const GraphNode node = graph_.node(index);  // a copy: transposition appends nodes
    if (node.role != NodeRole::kLinear && node.role != NodeRole::kOpaqueLinear) return ok_status();
    SmallVector<std::optional<AdValue>, 2> cotangents;
    bool any = false;
    for (std::uint32_t k = 0; k < node.num_results; ++k) {
      const std::int64_t c = cotangent_[node.first_result + k];
      cotangents.push_back(c >= 0 ? std::optional<AdValue>(graph_.token(static_cast<std::uint32_t>(c))) : std::nullopt);
      any = any || c >= 0;
    }
    if (!any) return ok_status();
    graph_.scope() = {EmitPhase::kTranspose, derived(node.provenance), node.placement,
                      fmt::format("transpose of {}", node.source_label)};

    const std::size_t arity = node.operands.size();
    SmallVector<bool, 4> linear;
    SmallVector<AdValue, 4> operands;
    SmallVector<ValueMetadata, 4> operand_metadata;
    for (std::uint32_t o : node.operands) {
      const GraphValue& v = graph_.value(o);
      const bool is_linear = v.kind == ValueKind::kLinear;
      linear.push_back(is_linear);
      operands.push_back(is_linear ? AdValue() : graph_.token(o));
      operand_metadata.push_back(v.metadata);
    }
    // Where each returned cotangent goes: the operand, or for an opaque
    // node the operand's tangent.
    SmallVector<std::int64_t, 4> targets;
    CotangentList out;
    if (node.role == NodeRole::kOpaqueLinear) {
      SmallVector<bool, 4> needed;
      for (std::int64_t t : node.opaque_tangents) {
        needed.push_back(t >= 0);
        targets.push_back(t);
      }
      SmallVector<AdValue, 2> results;
      for (std::uint32_t k = 0; k < node.num_results; ++k)
        results.push_back(graph_.token(node.opaque_primal_results + k));
      DirectVjpContext context =
          AdBuilderAccess::direct_vjp_context(node.extension, std::move(operands), std::move(needed),
                                              std::move(results), std::move(cotangents), &graph_.builder());
      ++counters_.direct_vjp_nodes;
      Result<CotangentList> r =
          guarded("ExtensionAdRule::direct_vjp", [&] { return node.opaque_rule->direct_vjp(context); });
      if (!r.ok()) return rule_failure(r.status(), node);
      out = std::move(*r);
      for (std::size_t i = 0; i < arity; ++i) linear[i] = node.opaque_tangents[i] >= 0;
    } else {
      for (std::size_t i = 0; i < arity; ++i) targets.push_back(linear[i] ? node.operands[i] : -1);
      if (node.extension) {
        const ExtensionAdRule* rule = graph_.rules().find(node.extension->family_id());
        if (rule == nullptr) {
          return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                            "{}: no AD rule for extension {} to transpose it", graph_.scope().label,
                            node.extension->family_id());
        }
        SmallVector<ValueMetadata, 2> result_metadata;
        for (std::uint32_t k = 0; k < node.num_results; ++k)
          result_metadata.push_back(graph_.value(node.first_result + k).metadata);
        TransposeContext context =
            AdBuilderAccess::transpose_context(node.extension, std::move(operands), linear, operand_metadata,
                                               std::move(cotangents), std::move(result_metadata), &graph_.builder());
        ++counters_.extension_rule_calls;
        Result<CotangentList> r = guarded("ExtensionAdRule::transpose", [&] { return rule->transpose(context); });
        if (!r.ok()) return rule_failure(r.status(), node);
        out = std::move(*r);
      } else {
        CoreTransposeInput input{node.core,
                                 &node.attributes,
                                 std::move(operands),
                                 linear,
                                 operand_metadata,
                                 *cotangents[0],
                                 graph_.value(node.first_result).metadata};
        TENFERRO_ASSIGN_OR_RETURN(out, transpose_core(input, graph_.builder()));
      }
    }
    if (out.size() != arity) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: the transpose rule returned {} cotangents for {} operands", graph_.scope().label,
                        out.size(), arity);
    }
    for (std::size_t i = 0; i < arity; ++i) {
      if (!out[i]) continue;
      if (!linear[i]) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "{}: the transpose rule returned a cotangent for operand {}, which is not a tangent",
                          graph_.scope().label, i);
      }
      TENFERRO_ASSIGN_OR_RETURN(std::uint32_t c, graph_.index_of(*out[i]));
      const ValueMetadata& want = operand_metadata[i];
      TENFERRO_TRY(match_guarded_shape(*out[i], want, c));
      const ValueMetadata& got = graph_.value(c).metadata;
      if (graph_.value(c).kind == ValueKind::kLinear || got.dtype != want.dtype || !(got.shape == want.shape)) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "{}: expected the cotangent of operand {} to be a non-tangent {}, found {}{}",
                          graph_.scope().label, i, want.to_string(), got.to_string(),
                          graph_.value(c).kind == ValueKind::kLinear ? " (a tangent)" : "");
      }
      TENFERRO_TRY(accumulate(static_cast<std::uint32_t>(targets[i]), c));
    }
    return ok_status();
  }

  std::vector<std::int64_t> release() { return std::move(cotangent_); }

 private:
  // Note [Cotangents equal under guards]
  // A rule may build a cotangent whose extents equal the operand's only
  // under the program's guards: the linalg rules of a matrix [s0, s1] that
  // a guard makes square give [s1, s1] (the prepared programs audit). Such
  // a cotangent (same dtype and rank, not a tangent) is passed through a
  // broadcast_in_dim to the operand's shape with the identity axis map,
  // whose inference requires each pair of extents to be equal: provably
  // (no guard), under a new guard checked before any run, or a compile
  // error when provably different. `c` becomes the new value's index.
  Status match_guarded_shape(AdValue& cotangent, const ValueMetadata& want, std::uint32_t& c) {
    const ValueMetadata& got = graph_.value(c).metadata;
    if (graph_.value(c).kind == ValueKind::kLinear || got.dtype != want.dtype || got.shape == want.shape ||
        got.shape.size() != want.shape.size()) {
      return ok_status();  // equal, or the caller's error
    }
    Dims identity(want.shape.size());
    for (std::size_t d = 0; d < identity.size(); ++d) identity[d] = static_cast<std::int64_t>(d);
    Result<AdValue> matched = RuleOps(graph_.builder()).broadcast(cotangent, want.shape, identity);
    if (!matched.ok()) return ok_status();  // provably different: the caller's error
    cotangent = *matched;
    TENFERRO_ASSIGN_OR_RETURN(c, graph_.index_of(cotangent));
    return ok_status();
  }

  program::ProvenanceRef derived(const program::ProvenanceRef& linear) {
    program::ProvenanceRef& d = derived_[linear.get()];
    if (!d) d = program::make_provenance("transpose", linear);
    return d;
  }

  Status rule_failure(const Status& status, const GraphNode& node) {
    return status.with_context(fmt::format("{}: the AD rule of {} failed", graph_.scope().label,
                                           node.extension ? node.extension->family_id() : std::string_view("?")),
                               ErrorStage::kCompile);
  }

  AdGraph& graph_;
  TransformCounters& counters_;
  std::vector<std::int64_t> cotangent_;
  std::unordered_map<const program::ProvenanceRecord*, program::ProvenanceRef> derived_;
};

}  // namespace

Result<std::vector<std::int64_t>> transpose(AdGraph& graph, std::span<const std::uint32_t> seeded,
                                            std::span<const std::uint32_t> seeds, TransformCounters& counters) {
  const auto num_nodes = static_cast<std::uint32_t>(graph.num_nodes());
  Transposer transposer(graph, counters);
  for (std::size_t k = 0; k < seeded.size(); ++k) TENFERRO_TRY(transposer.seed(seeded[k], seeds[k]));
  for (std::uint32_t n = num_nodes; n-- > 0;) TENFERRO_TRY(transposer.node(n));
  return transposer.release();
}

}  // namespace tenferro::ad::internal
