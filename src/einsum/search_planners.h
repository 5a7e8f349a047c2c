// Internal: the search planners behind plan() (planner.cpp). Each works on
// a SearchNetwork and returns a ContractionOrder; plan() builds and checks
// the ContractionTree.
#pragma once

#include <cstdint>
#include <optional>

#include "search_network.h"
#include "tenferro/base/random.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/planner.h"

namespace tenferro::einsum::internal {

/// What the searches minimise: the combined score of cost_model.h plus a
/// steep penalty for intermediates beyond a hard size limit.
struct SearchObjective {
  CostWeights weights;
  /// Intermediates above this many log2 elements are penalised heavily.
  std::optional<double> max_log2_elements;

  /// Penalty for an intermediate of `log2_elements`.
  double excess(double log2_elements) const noexcept;
  /// Linear cost of one step: flops (opt_einsum convention) plus
  /// read_write × elements read and written.
  double step_cost(double log2_union, bool contracted, double log2_lhs, double log2_rhs,
                   double log2_result) const noexcept;
  /// The score of a path with `total_cost` (sum of step costs) whose
  /// largest intermediate has `max_log2` elements.
  double score(double total_cost, double max_log2) const noexcept;
};

/// Greedy pair selection (Note [Greedy planner] in greedy_planner.cpp).
struct GreedyOptions {
  /// Pair cost = size(result) - alpha * (size(lhs) + size(rhs)).
  double alpha = 1.0;
  /// 0: deterministic; > 0: Gumbel noise of this scale on log-costs (needs rng).
  double temperature = 0.0;
};
struct GreedyResult {
  ContractionOrder order;
  /// SearchObjective::score of the order.
  double score = 0.0;
};
GreedyResult greedy_order(const SearchNetwork& network, const SearchObjective& objective, const GreedyOptions& options,
                          Rng* rng, std::int64_t* candidates);
/// The best of deterministic greedy runs with alpha 0, 0.5, 1 and 1.5.
GreedyResult best_greedy_order(const SearchNetwork& network, const SearchObjective& objective,
                               std::int64_t* candidates);

/// Exact dynamic programming over subsets (Note [Optimal planner]).
struct OptimalOptions {
  /// Cost per element read or written, in flops.
  double read_write_weight = 0.0;
  /// Intermediates above this many log2 elements are infeasible.
  std::optional<double> max_log2_elements;
};
/// kWorkspaceLimitExceeded when no order keeps every intermediate within
/// max_log2_elements. The network must have at most kOptimalHardMaxInputs inputs.
/// `log2_cost` receives log2 of the optimum's cost.
Result<ContractionOrder> optimal_order(const SearchNetwork& network, const OptimalOptions& options,
                                       std::int64_t* candidates, double* log2_cost);

/// Simulated annealing (Note [TreeSA] in treesa_planner.cpp).
struct TreeSASettings {
  TreeSAOptions options;
  SearchObjective objective;
  Determinism determinism = Determinism::kFast;
  std::uint64_t seed = 0;
};
ContractionOrder treesa_order(const SearchNetwork& network, const TreeSASettings& settings, PlanningStats& stats);

}  // namespace tenferro::einsum::internal
