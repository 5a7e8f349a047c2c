// Internal: the exact planner.
//
// Note [Optimal planner]
// The cost of a contraction tree is a sum over its internal nodes, and a
// node's cost depends only on the sets of inputs below its two children:
// the labels an intermediate over input subset S keeps are
//   keep(S) = labels(S) ∩ (labels(complement of S) ∪ output).
// So the cheapest tree over S is the cheapest split S = A ∪ B plus the
// cheapest trees over A and B, and dynamic programming over all 2^n subsets
// (visiting each split once: A holds S's lowest input) finds the optimum
// over every binary tree, outer products included, in O(3^n) split
// evaluations. A split is skipped as soon as its subtrees alone cost more
// than the best split found so far. The objective is flops (opt_einsum
// convention) plus read_write_weight per element read or written; the size
// weight of the combined score is not decomposable and is ignored, but a
// hard intermediate-size limit (max_log2_elements) makes oversized subsets
// infeasible. Ties keep the first split found, so the result is
// deterministic.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search_planners.h"

namespace tenferro::einsum::internal {

Result<ContractionOrder> optimal_order(const SearchNetwork& network, const OptimalOptions& options,
                                       std::int64_t* candidates, double* log2_cost) {
  const std::int32_t n = network.num_inputs;
  const std::int32_t words = network.words;
  TENFERRO_CHECK(n >= 1 && n <= kOptimalHardMaxInputs);
  if (n == 1) {
    if (log2_cost) *log2_cost = 0.0;
    return ContractionOrder();
  }
  const std::uint32_t full = (std::uint32_t{1} << n) - 1;
  const std::size_t subsets = std::size_t{1} << n;

  // labels(S) for every subset, then keep(S) in place of it.
  LabelSets labels(words, subsets);
  for (std::uint32_t s = 1; s <= full; ++s) {
    const std::uint32_t low = s & (~s + 1);
    const auto input = static_cast<std::size_t>(std::countr_zero(low));
    const Word* rest = labels[s & ~low];
    const Word* own = network.inputs[input];
    Word* dst = labels[s];
    for (std::int32_t w = 0; w < words; ++w) dst[w] = rest[w] | own[w];
  }
  LabelSets keep(words, subsets);
  std::vector<double> log2_keep(subsets, 0.0);
  const Word* output = network.output[0];
  for (std::uint32_t s = 1; s <= full; ++s) {
    const Word* inside = labels[s];
    const Word* outside = labels[full & ~s];
    Word* dst = keep[s];
    for (std::int32_t w = 0; w < words; ++w) dst[w] = inside[w] & (outside[w] | output[w]);
    log2_keep[s] = network.log2_size(dst);
  }

  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  std::vector<double> best(subsets, kInfinity);
  std::vector<std::uint32_t> split(subsets, 0);
  for (std::int32_t i = 0; i < n; ++i) best[std::size_t{1} << i] = 0.0;
  std::int64_t evaluated = 0;
  for (std::uint32_t s = 1; s <= full; ++s) {
    if (std::popcount(s) < 2) continue;
    if (options.max_log2_elements && log2_keep[s] > *options.max_log2_elements) continue;
    const std::uint32_t low = s & (~s + 1);
    const Word* ks = keep[s];
    double best_s = kInfinity;
    std::uint32_t best_a = 0;
    // Proper submasks a of s that contain s's lowest input.
    for (std::uint32_t a = (s - 1) & s; a != 0; a = (a - 1) & s) {
      if (!(a & low)) continue;
      const std::uint32_t b = s & ~a;
      const double subtrees = best[a] + best[b];
      if (!(subtrees < best_s)) continue;
      ++evaluated;
      const Word* ka = keep[a];
      const Word* kb = keep[b];
      // log2 |ka ∪ kb| = log2|ka| + log2|kb| - log2|ka ∩ kb|.
      double shared = 0.0;
      bool contracted = false;
      for (std::int32_t w = 0; w < words; ++w) {
        for (Word both = ka[w] & kb[w]; both != 0; both &= both - 1)
          shared += network.log2_extent[static_cast<std::size_t>(w * 64 + std::countr_zero(both))];
        contracted = contracted || ((ka[w] | kb[w]) & ~ks[w]) != 0;
      }
      double step = std::exp2(log2_keep[a] + log2_keep[b] - shared) * (contracted ? 2.0 : 1.0);
      if (options.read_write_weight != 0.0) {
        step +=
            options.read_write_weight * (std::exp2(log2_keep[a]) + std::exp2(log2_keep[b]) + std::exp2(log2_keep[s]));
      }
      const double total = subtrees + step;
      if (total < best_s) {
        best_s = total;
        best_a = a;
      }
    }
    best[s] = best_s;
    split[s] = best_a;
  }
  if (candidates) *candidates += evaluated;
  if (log2_cost) *log2_cost = std::log2(std::max(best[full], 1.0));
  if (best[full] == kInfinity) {
    return make_error(ErrorCode::kWorkspaceLimitExceeded, ErrorStage::kPrepare,
                      "optimal planner: every contraction order of the {} inputs needs an intermediate above the "
                      "workspace limit (2^{:.2f} elements)",
                      n, *options.max_log2_elements);
  }

  // Emit the tree in post order: children before parents.
  std::vector<ContractionOrder::Step> steps;
  steps.reserve(static_cast<std::size_t>(n - 1));
  struct Frame {
    std::uint32_t set;
    bool expanded;
  };
  std::vector<Frame> stack{{full, false}};
  std::vector<std::int32_t> node_of_result;  // SSA ids of finished subtrees, in stack order
  while (!stack.empty()) {
    const Frame frame = stack.back();
    stack.pop_back();
    if (std::popcount(frame.set) == 1) {
      node_of_result.push_back(std::countr_zero(frame.set));
    } else if (!frame.expanded) {
      stack.push_back({frame.set, true});
      stack.push_back({frame.set & ~split[frame.set], false});
      stack.push_back({split[frame.set], false});
    } else {
      const std::int32_t rhs = node_of_result.back();
      node_of_result.pop_back();
      const std::int32_t lhs = node_of_result.back();
      node_of_result.pop_back();
      steps.emplace_back(lhs, rhs);
      node_of_result.push_back(n + static_cast<std::int32_t>(steps.size()) - 1);
    }
  }
  return ContractionOrder::from_ssa(n, steps);
}

}  // namespace tenferro::einsum::internal
