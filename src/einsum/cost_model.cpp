// The cost model's derived quantities and the combined score
// (cost_model.h).
#include "tenferro/einsum/cost_model.h"

#include <algorithm>
#include <cmath>

namespace tenferro::einsum {

double PathCost::log10_flops() const noexcept { return std::log10(std::max(flops, 1.0)); }

double PathCost::log2_max_intermediate() const noexcept { return std::log2(std::max(max_intermediate_elements, 1.0)); }

double combined_score(const PathCost& cost, const CostWeights& weights) noexcept {
  const double time = std::log2(std::max(cost.flops + weights.read_write * cost.read_write_elements, 1.0));
  const double excess = std::max(0.0, cost.log2_max_intermediate() - weights.size_target_log2);
  return time + weights.size * excess;
}

}  // namespace tenferro::einsum
