// The einsum family's AD rule (Note [The derivative of an einsum is an
// einsum] in include/tenferro/einsum/einsum_ad_rule.h).
#include "tenferro/einsum/einsum_ad_rule.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::einsum {

using ad::AdBuilder;
using ad::AdValue;
using program::CoreSemanticOp;
using program::SymbolicExtent;
using program::ValueMetadata;

namespace {

/// The label of every operand axis and each label's extent, from operand
/// metadata that may be symbolic (the structure depends on ranks only).
struct LabelStructure {
  std::vector<std::vector<std::int64_t>> axis_labels;  // per operand, per axis
  std::vector<std::vector<bool>> broadcast;            // axis of extent 1 broadcast against a larger extent
  std::vector<std::int64_t> output;
  std::vector<SymbolicExtent> extent;  // per label
};

Result<LabelStructure> label_structure(const EinsumOp& op, std::span<const ValueMetadata> operands) {
  std::vector<std::vector<std::int64_t>> ones;
  for (const ValueMetadata& m : operands) ones.emplace_back(static_cast<std::size_t>(m.rank()), 1);
  std::vector<IntArrayRef> refs(ones.begin(), ones.end());
  const DType dtype = operands.empty() ? DType::kFloat64 : operands[0].dtype;
  TENFERRO_ASSIGN_OR_RETURN(Network net, op.bind(refs, dtype));
  LabelStructure s;
  s.extent.assign(static_cast<std::size_t>(net.num_labels()), SymbolicExtent(1));
  std::vector<bool> seen(static_cast<std::size_t>(net.num_labels()), false);
  for (std::int32_t i = 0; i < net.num_operands(); ++i) {
    const NetworkOperand& operand = net.operand(i);
    std::vector<std::int64_t> labels(operand.axis_labels.begin(), operand.axis_labels.end());
    for (std::size_t a = 0; a < labels.size(); ++a) {
      const SymbolicExtent& e = operands[static_cast<std::size_t>(i)].shape[a];
      auto& slot = s.extent[static_cast<std::size_t>(labels[a])];
      if (!seen[static_cast<std::size_t>(labels[a])] || slot == SymbolicExtent(1)) slot = e;
      seen[static_cast<std::size_t>(labels[a])] = true;
    }
    s.axis_labels.push_back(std::move(labels));
  }
  for (std::size_t i = 0; i < s.axis_labels.size(); ++i) {
    std::vector<bool> b;
    for (std::size_t a = 0; a < s.axis_labels[i].size(); ++a) {
      b.push_back(operands[i].shape[a] == SymbolicExtent(1) &&
                  !(s.extent[static_cast<std::size_t>(s.axis_labels[i][a])] == SymbolicExtent(1)));
    }
    s.broadcast.push_back(std::move(b));
  }
  s.output.assign(net.output().begin(), net.output().end());
  return s;
}

// delta(l, l') of extent n: the identity matrix of the einsum's dtype.
Result<AdValue> identity(AdBuilder& b, const SymbolicExtent& n, DType dtype) {
  program::SymbolicShape shape{n, n};
  TENFERRO_ASSIGN_OR_RETURN(AdValue rows,
                            b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kInt64, shape, 0}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue cols,
                            b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kInt64, shape, 1}));
  TENFERRO_ASSIGN_OR_RETURN(AdValue eq, b.emit(CoreSemanticOp::kCompare, {rows, cols},
                                               program::CompareAttributes{program::ComparisonDirection::kEq}));
  return b.emit(CoreSemanticOp::kConvert, {eq}, program::ConvertAttributes{dtype});
}

class EinsumAdRule final : public ad::ExtensionAdRule {
 public:
  std::string_view family_id() const noexcept override { return kEinsumFamilyId; }

  Result<ad::TangentList> linearize(ad::LinearizeContext& context) const override {
    AdBuilder& b = context.builder();
    std::optional<AdValue> sum;
    for (std::size_t k = 0; k < context.num_operands(); ++k) {
      if (!context.tangent(k)) continue;
      SmallVector<AdValue, 4> operands;
      for (std::size_t j = 0; j < context.num_operands(); ++j)
        operands.push_back(j == k ? *context.tangent(k) : context.primal_operand(j));
      TENFERRO_ASSIGN_OR_RETURN(auto term, b.emit_extension(context.shared_op(), operands.span()));
      if (sum) {
        TENFERRO_ASSIGN_OR_RETURN(sum, b.emit(CoreSemanticOp::kAdd, {*sum, term[0]}));
      } else {
        sum = term[0];
      }
    }
    return ad::TangentList{sum};
  }

  Result<ad::CotangentList> transpose(ad::TransposeContext& context) const override {
    const std::size_t n = context.num_operands();
    ad::CotangentList out(n);
    std::size_t k = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (!context.is_linear_operand(i)) continue;
      if (k != n) {
        return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                          "einsum transpose: the node is linear in operands {} and {}; an einsum is linear in one "
                          "operand at a time",
                          k, i);
      }
      k = i;
    }
    if (k == n || !context.cotangent(0)) return out;
    const auto& op = static_cast<const EinsumOp&>(context.op());
    SmallVector<ValueMetadata, 4> metadata;
    for (std::size_t i = 0; i < n; ++i) metadata.push_back(context.operand_metadata(i));
    TENFERRO_ASSIGN_OR_RETURN(LabelStructure s, label_structure(op, metadata.span()));
    AdBuilder& b = context.builder();
    const DType dtype = metadata[0].dtype;
    std::int64_t next = static_cast<std::int64_t>(s.extent.size());

    std::vector<std::vector<LabelKey>> sublists;
    SmallVector<AdValue, 4> values;
    std::vector<bool> covered(s.extent.size(), false);
    auto cover = [&](const std::vector<LabelKey>& labels) {
      for (LabelKey l : labels)
        if (l < static_cast<std::int64_t>(covered.size())) covered[static_cast<std::size_t>(l)] = true;
    };
    sublists.emplace_back(s.output.begin(), s.output.end());
    values.push_back(*context.cotangent(0));
    cover(sublists.back());
    for (std::size_t j = 0; j < n; ++j) {
      if (j == k) continue;
      std::vector<LabelKey> labels;
      for (std::size_t a = 0; a < s.axis_labels[j].size(); ++a)
        labels.push_back(s.broadcast[j][a] ? next++ : s.axis_labels[j][a]);
      AdValue x = context.primal_operand(j);
      if (is_complex(dtype)) {
        TENFERRO_ASSIGN_OR_RETURN(x, b.emit(CoreSemanticOp::kConj, {x}));
      }
      cover(labels);
      sublists.push_back(std::move(labels));
      values.push_back(x);
    }
    // Operand k's subscripts as the output (diagonals via deltas, broadcast
    // axes summed).
    std::vector<LabelKey> output;
    bool has_broadcast = false;
    for (std::size_t a = 0; a < s.axis_labels[k].size(); ++a) {
      const std::int64_t l = s.axis_labels[k][a];
      if (s.broadcast[k][a]) {
        has_broadcast = true;
        continue;
      }
      if (std::find(output.begin(), output.end(), l) == output.end()) {
        output.push_back(l);
        continue;
      }
      const std::int64_t fresh = next++;
      TENFERRO_ASSIGN_OR_RETURN(AdValue delta, identity(b, s.extent[static_cast<std::size_t>(l)], dtype));
      sublists.push_back({l, fresh});
      values.push_back(delta);
      covered[static_cast<std::size_t>(l)] = true;
      output.push_back(fresh);
    }
    for (LabelKey l : output) {
      if (l >= static_cast<std::int64_t>(covered.size()) || covered[static_cast<std::size_t>(l)]) continue;
      TENFERRO_ASSIGN_OR_RETURN(AdValue ones,
                                b.full(Scalar::of(1.0), ValueMetadata{dtype, {s.extent[static_cast<std::size_t>(l)]}}));
      sublists.push_back({l});
      values.push_back(ones);
      covered[static_cast<std::size_t>(l)] = true;
    }
    TENFERRO_ASSIGN_OR_RETURN(Subscripts subscripts,
                              Subscripts::from_sublists(sublists, std::optional<std::vector<LabelKey>>(output)));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const EinsumOp> derived, EinsumOp::create(std::move(subscripts)));
    TENFERRO_ASSIGN_OR_RETURN(auto result, b.emit_extension(derived, values.span()));
    AdValue ct = result[0];
    if (has_broadcast) {
      TENFERRO_ASSIGN_OR_RETURN(ct,
                                b.emit(CoreSemanticOp::kReshape, {ct}, program::ReshapeAttributes{metadata[k].shape}));
    }
    out[k] = ct;
    return out;
  }

  // Note [Pairwise einsums for reverse mode]: three or more operands of
  // known shapes and one dtype become the planned two-operand steps.
  Result<std::shared_ptr<const program::SemanticProgram>> expansion(
      const program::ExtensionOp& ext, std::span<const ValueMetadata> operands) const override {
    std::shared_ptr<const program::SemanticProgram> none;
    if (operands.size() < 3) return none;
    std::vector<Dims> shapes;
    for (const ValueMetadata& m : operands) {
      std::optional<Dims> exact = program::exact_shape(m.shape);
      if (!exact || m.dtype != operands[0].dtype) return none;
      shapes.push_back(std::move(*exact));
    }
    const std::vector<IntArrayRef> refs(shapes.begin(), shapes.end());
    TENFERRO_ASSIGN_OR_RETURN(std::vector<PairwiseStep> steps,
                              pairwise_steps(static_cast<const EinsumOp&>(ext), refs, operands[0].dtype));
    program::ProgramBuilder b;
    std::vector<program::ProgramValue> nodes;
    for (const ValueMetadata& m : operands) {
      TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue input, b.add_input(m.dtype, m.shape.span()));
      nodes.push_back(input);
    }
    for (const PairwiseStep& step : steps) {
      const program::ProgramValue pair[] = {nodes[static_cast<std::size_t>(step.lhs)],
                                            nodes[static_cast<std::size_t>(step.rhs)]};
      TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue result, emit_einsum(b, step.op, pair));
      nodes.push_back(result);
    }
    TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram fragment, b.freeze({nodes.back()}));
    return fragment.program;
  }
};

}  // namespace

std::shared_ptr<const ad::ExtensionAdRule> einsum_ad_rule() { return std::make_shared<const EinsumAdRule>(); }

Result<std::vector<PairwiseStep>> pairwise_steps(const EinsumOp& op, std::span<const IntArrayRef> shapes, DType dtype) {
  std::vector<PairwiseStep> steps;
  if (op.num_operands() < 3) return steps;
  TENFERRO_ASSIGN_OR_RETURN(Network net, op.bind(shapes, dtype));
  TENFERRO_ASSIGN_OR_RETURN(ContractionTree tree, plan(net, op.policy().value_or(PlanningPolicy{})));
  // Each node's labels: an operand's as written (diagonals repeat; a
  // broadcast axis of extent 1 gets a label of its own, which its step sums
  // away), a step's result order; the last step writes the einsum's output
  // (and sums what the tree sums at its root).
  std::vector<std::vector<LabelKey>> nodes;
  LabelKey fresh = net.num_labels();
  for (const NetworkOperand& operand : net.operands()) {
    std::vector<LabelKey>& labels = nodes.emplace_back();
    for (LabelId l : operand.axis_labels) labels.push_back(l == kBroadcastAxis ? fresh++ : l);
  }
  const std::span<const ContractionStep> tree_steps = tree.steps();
  for (std::size_t s = 0; s < tree_steps.size(); ++s) {
    const ContractionStep& step = tree_steps[s];
    const bool last = s + 1 == tree_steps.size();
    std::vector<LabelKey> result = last ? std::vector<LabelKey>(net.output().begin(), net.output().end())
                                        : std::vector<LabelKey>(step.result.begin(), step.result.end());
    const std::vector<LabelKey> pair[] = {nodes[static_cast<std::size_t>(step.lhs)],
                                          nodes[static_cast<std::size_t>(step.rhs)]};
    TENFERRO_ASSIGN_OR_RETURN(Subscripts subscripts,
                              Subscripts::from_sublists(pair, std::optional<std::vector<LabelKey>>(result)));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const EinsumOp> binary, EinsumOp::create(std::move(subscripts)));
    steps.push_back(PairwiseStep{std::move(binary), step.lhs, step.rhs});
    nodes.push_back(std::move(result));
  }
  return steps;
}

}  // namespace tenferro::einsum
