// Internal: building the bit-set search view of a Network.
#include "search_network.h"

#include <algorithm>
#include <cmath>

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

}  // namespace tenferro::einsum::internal
