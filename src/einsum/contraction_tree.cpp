// ContractionTree construction: label groups, result orders, costs and the
// workspace estimate of each step (Note [Step semantics] in
// contraction_tree.h, Note [Flop convention] and Note [Workspace estimate]
// in cost_model.h), plus explain().
#include "tenferro/einsum/contraction_tree.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"

namespace tenferro::einsum {

namespace {

bool contains(std::span<const LabelId> labels, LabelId label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

double elements_of(const Network& network, std::span<const LabelId> labels) {
  double elements = 1.0;
  for (LabelId label : labels) elements *= static_cast<double>(network.extent(label));
  return elements;
}

// Orders a group by the labels' positions in `reference`.
void order_by(LabelList& group, const LabelList& reference) {
  std::stable_sort(group.begin(), group.end(), [&](LabelId a, LabelId b) {
    return std::find(reference.begin(), reference.end(), a) < std::find(reference.begin(), reference.end(), b);
  });
}

void order_groups(ContractionStep& step, const LabelList& lhs, const LabelList& rhs) {
  order_by(step.lhs_summed, lhs);
  order_by(step.batch, lhs);
  order_by(step.contracted, lhs);
  order_by(step.lhs_free, lhs);
  order_by(step.rhs_summed, rhs);
  order_by(step.rhs_free, rhs);
}

}  // namespace

std::string_view to_string(PlannerKind kind) noexcept {
  switch (kind) {
    case PlannerKind::kAuto:
      return "auto";
    case PlannerKind::kGreedy:
      return "greedy";
    case PlannerKind::kOptimal:
      return "optimal";
    case PlannerKind::kTreeSA:
      return "treesa";
    case PlannerKind::kExplicitPath:
      return "path";
    case PlannerKind::kNested:
      return "nested";
    case PlannerKind::kLeftToRight:
      return "left_to_right";
  }
  return "unknown";
}

std::optional<PlannerKind> parse_planner_kind(std::string_view name) noexcept {
  for (PlannerKind kind : {PlannerKind::kAuto, PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kTreeSA,
                           PlannerKind::kExplicitPath, PlannerKind::kNested, PlannerKind::kLeftToRight}) {
    if (to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

Result<ContractionTree> ContractionTree::build(const Network& network, const ContractionOrder& order) {
  const std::int32_t n = network.num_operands();
  if (order.num_inputs() != n) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "contraction order {} covers {} inputs; the einsum \"{}\" has {} operand{}", order.to_string(),
                      order.num_inputs(), abbreviate(network.to_string()), n, n == 1 ? "" : "s");
  }
  ContractionTree tree;
  tree.network_ = network;
  tree.order_ = order;
  const double element_bytes = static_cast<double>(dtype_size(network.dtype()));
  const auto labels = static_cast<std::size_t>(network.num_labels());

  // remaining[l]: live nodes holding l, plus one when the output has l.
  std::vector<std::int32_t> remaining(labels, 0);
  std::vector<bool> in_output(labels, false);
  for (LabelId label : network.output()) {
    in_output[static_cast<std::size_t>(label)] = true;
    ++remaining[static_cast<std::size_t>(label)];
  }
  for (const NetworkOperand& operand : network.operands()) {
    tree.node_labels_.push_back(operand.labels);
    for (LabelId label : operand.labels) ++remaining[static_cast<std::size_t>(label)];
  }

  PathCost& cost = tree.cost_;
  if (n == 1) {
    const LabelList& input = tree.node_labels_[0];
    for (LabelId label : input)
      if (!in_output[static_cast<std::size_t>(label)]) tree.root_summed_.push_back(label);
    const double output_elements = elements_of(network, network.output());
    cost.flops = tree.root_summed_.empty() ? 0.0 : elements_of(network, input);
    cost.max_intermediate_elements = output_elements;
    cost.read_write_elements = elements_of(network, input) + output_elements;
    cost.workspace_bytes = output_elements * element_bytes;
    return tree;
  }

  // Bytes of finished step results that no later step has consumed yet.
  double live_bytes = 0.0;
  for (std::size_t k = 0; k < order.steps().size(); ++k) {
    const auto [a, b] = order.steps()[k];
    const LabelList lhs = tree.node_labels_[static_cast<std::size_t>(a)];
    const LabelList rhs = tree.node_labels_[static_cast<std::size_t>(b)];
    ContractionStep step;
    step.lhs = a;
    step.rhs = b;
    // Labels no other live node and not the output needs are summed out of
    // their child first; only inputs can hold such labels.
    const auto only_here = [&](LabelId label) {
      return remaining[static_cast<std::size_t>(label)] == 1 && !in_output[static_cast<std::size_t>(label)];
    };
    LabelList lhs_kept, rhs_kept;
    for (LabelId label : lhs) (only_here(label) ? step.lhs_summed : lhs_kept).push_back(label);
    for (LabelId label : rhs) (only_here(label) ? step.rhs_summed : rhs_kept).push_back(label);
    for (LabelId label : lhs_kept) {
      const bool both = contains(rhs_kept, label);
      const bool needed = remaining[static_cast<std::size_t>(label)] > (both ? 2 : 1);
      if (both) {
        (needed ? step.batch : step.contracted).push_back(label);
      } else {
        step.lhs_free.push_back(label);
      }
    }
    for (LabelId label : rhs_kept)
      if (!contains(lhs_kept, label)) step.rhs_free.push_back(label);

    const bool is_root = k + 1 == order.steps().size();
    if (is_root) {
      step.result = network.output();
    } else {
      step.result = step.batch;
      step.result.append(step.lhs_free.begin(), step.lhs_free.end());
      step.result.append(step.rhs_free.begin(), step.rhs_free.end());
    }
    TENFERRO_CHECK(step.result.size() == step.batch.size() + step.lhs_free.size() + step.rhs_free.size());

    step.lhs_elements = elements_of(network, lhs_kept);
    step.rhs_elements = elements_of(network, rhs_kept);
    step.result_elements = elements_of(network, step.result);
    step.multiply_adds = step.lhs_elements * elements_of(network, step.rhs_free);
    step.flops = step.multiply_adds * (step.contracted.empty() ? 1.0 : 2.0);
    if (!step.lhs_summed.empty()) step.flops += elements_of(network, lhs);
    if (!step.rhs_summed.empty()) step.flops += elements_of(network, rhs);

    cost.flops += step.flops;
    cost.multiply_adds += step.multiply_adds;
    cost.max_intermediate_elements = std::max(cost.max_intermediate_elements, step.result_elements);
    cost.read_write_elements += step.lhs_elements + step.rhs_elements + step.result_elements;
    double step_bytes = live_bytes + step.result_elements * element_bytes;
    if (!step.lhs_summed.empty()) step_bytes += step.lhs_elements * element_bytes;
    if (!step.rhs_summed.empty()) step_bytes += step.rhs_elements * element_bytes;
    cost.workspace_bytes = std::max(cost.workspace_bytes, step_bytes);
    for (std::int32_t child : {a, b}) {
      if (child >= n) live_bytes -= tree.steps_[static_cast<std::size_t>(child - n)].result_elements * element_bytes;
    }
    live_bytes += step.result_elements * element_bytes;

    for (LabelId label : lhs) --remaining[static_cast<std::size_t>(label)];
    for (LabelId label : rhs) --remaining[static_cast<std::size_t>(label)];
    for (LabelId label : step.result) ++remaining[static_cast<std::size_t>(label)];
    tree.node_labels_.push_back(step.result);
    tree.steps_.push_back(std::move(step));
  }
  return tree;
}

Status ContractionTree::set_result_order(std::int32_t step, std::span<const LabelId> labels) {
  const auto num_steps = static_cast<std::int32_t>(steps_.size());
  if (step < 0 || step >= num_steps - 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "set_result_order: step {} is not an intermediate step; expected 0 <= step < {} (the root "
                      "step keeps the output order)",
                      step, num_steps - 1);
  }
  ContractionStep& target = steps_[static_cast<std::size_t>(step)];
  LabelList sorted_new(labels);
  LabelList sorted_old = target.result;
  std::sort(sorted_new.begin(), sorted_new.end());
  std::sort(sorted_old.begin(), sorted_old.end());
  if (sorted_new != sorted_old) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "set_result_order: step {} holds labels \"{}\"; \"{}\" is not a permutation of them", step,
                      network_.labels_to_string(target.result), network_.labels_to_string(labels));
  }
  target.result = LabelList(labels);
  const std::int32_t node = num_inputs() + step;
  node_labels_[static_cast<std::size_t>(node)] = target.result;
  for (ContractionStep& consumer : steps_) {
    if (consumer.lhs == node || consumer.rhs == node) {
      order_groups(consumer, node_labels_[static_cast<std::size_t>(consumer.lhs)],
                   node_labels_[static_cast<std::size_t>(consumer.rhs)]);
    }
  }
  return ok_status();
}

std::string ContractionTree::explain() const {
  const Network& net = network_;
  std::string out = fmt::format("einsum {}: {} inputs, {} labels, {}\n", net.to_string(), num_inputs(),
                                net.num_labels(), net.dtype());
  out += fmt::format("planner {}: {:.3f} ms, {} candidates", to_string(stats_.planner), stats_.seconds * 1e3,
                     stats_.candidates);
  if (stats_.planner == PlannerKind::kTreeSA) {
    out += fmt::format(", {} chains, {} accepted moves{}", stats_.chains, stats_.accepted_moves,
                       stats_.stopped_by_time_budget ? ", stopped by the time budget" : "");
  }
  out += fmt::format("\npath {}\n", order_.to_string());
  out += fmt::format(
      "cost: log10 flops {:.4f}, log2 largest intermediate {:.4f}, read/write {:.4g} elements, workspace {:.4g} "
      "bytes\n",
      cost_.log10_flops(), cost_.log2_max_intermediate(), cost_.read_write_elements, cost_.workspace_bytes);
  if (steps_.empty()) {
    out += fmt::format("no step: {} sums {{{}}} and permutes to {}\n", net.labels_to_string(node_labels_[0]),
                       net.labels_to_string(root_summed_), net.labels_to_string(net.output()));
    return out;
  }
  const auto group = [&](const LabelList& labels) { return net.labels_to_string(labels); };
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const ContractionStep& s = steps_[k];
    const auto node = static_cast<std::size_t>(num_inputs()) + k;
    out += fmt::format("step {}: #{} = #{} {} * #{} {} -> {}  batch {{{}}} contract {{{}}} free {{{}|{}}}", k, node,
                       s.lhs, group(node_labels(s.lhs)), s.rhs, group(node_labels(s.rhs)), group(s.result),
                       group(s.batch), group(s.contracted), group(s.lhs_free), group(s.rhs_free));
    if (!s.lhs_summed.empty() || !s.rhs_summed.empty()) {
      out += fmt::format(" presum {{{}|{}}}", group(s.lhs_summed), group(s.rhs_summed));
    }
    out += fmt::format("  flops {:.4g} size {:.4g}\n", s.flops, s.result_elements);
  }
  return out;
}

}  // namespace tenferro::einsum
