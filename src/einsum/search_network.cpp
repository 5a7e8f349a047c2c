// Internal: building the bit-set search view of a Network, and the search
// objective shared by the planners.
#include "search_network.h"

#include <algorithm>
#include <cmath>

#include "search_planners.h"

namespace tenferro::einsum::internal {

SearchNetwork SearchNetwork::from(const Network& network) {
  SearchNetwork search;
  search.num_inputs = network.num_operands();
  search.num_labels = network.num_labels();
  search.words = std::max<std::int32_t>(1, (search.num_labels + 63) / 64);
  search.element_bytes = static_cast<double>(dtype_size(network.dtype()));
  search.log2_extent.resize(static_cast<std::size_t>(search.num_labels));
  for (LabelId label = 0; label < search.num_labels; ++label) {
    const auto extent = static_cast<double>(std::max<std::int64_t>(network.extent(label), 1));
    search.log2_extent[static_cast<std::size_t>(label)] = std::log2(extent);
  }
  search.output = LabelSets(search.words, 1);
  for (LabelId label : network.output()) add_label(search.output[0], label);

  std::vector<std::int32_t> holders(static_cast<std::size_t>(search.num_labels), 0);
  for (const NetworkOperand& operand : network.operands())
    for (LabelId label : operand.labels) ++holders[static_cast<std::size_t>(label)];
  search.inputs = LabelSets(search.words, static_cast<std::size_t>(search.num_inputs));
  for (std::int32_t i = 0; i < search.num_inputs; ++i) {
    for (LabelId label : network.operand(i).labels) {
      if (holders[static_cast<std::size_t>(label)] > 1 || has_label(search.output[0], label)) {
        add_label(search.inputs[static_cast<std::size_t>(i)], label);
      }
    }
  }
  return search;
}

namespace {
// Penalty per log2 element above a hard workspace limit: steep enough that
// no flop saving pays for it.
constexpr double kLimitPenalty = 1000.0;
}  // namespace

double SearchObjective::excess(double log2_elements) const noexcept {
  double penalty = weights.size * std::max(0.0, log2_elements - weights.size_target_log2);
  if (max_log2_elements) penalty += kLimitPenalty * std::max(0.0, log2_elements - *max_log2_elements);
  return penalty;
}

double SearchObjective::step_cost(double log2_union, bool contracted, double log2_lhs, double log2_rhs,
                                  double log2_result) const noexcept {
  double cost = std::exp2(log2_union) * (contracted ? 2.0 : 1.0);
  if (weights.read_write != 0.0)
    cost += weights.read_write * (std::exp2(log2_lhs) + std::exp2(log2_rhs) + std::exp2(log2_result));
  return cost;
}

double SearchObjective::score(double total_cost, double max_log2) const noexcept {
  return std::log2(std::max(total_cost, 1.0)) + excess(max_log2);
}

}  // namespace tenferro::einsum::internal
