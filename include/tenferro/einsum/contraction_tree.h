// ContractionTree: a Network plus a ContractionOrder, resolved into binary
// steps that an engine can execute without further analysis: for each step
// the label groups of the binary contraction, the intermediate's label order
// and its costs. Planners return one; ContractionTree::build makes one from
// any order (that is also how an explicit path is costed).
//
// Note [Step semantics]
// Node ids follow Note [SSA contraction order]; node n+k is step k's
// result. Input node i holds operand i after taking diagonals and dropping
// broadcast axes (its labels are NetworkOperand::labels). Step k computes
//   result[result...] = sum over (contracted ∪ lhs_summed ∪ rhs_summed) of
//       lhs[node_labels(lhs)] * rhs[node_labels(rhs)]
// where the labels of each child fall in exactly one group:
//   lhs_summed / rhs_summed: only in that child and needed nowhere else; the
//     engine sums them out of that child first (only inputs have such labels);
//   batch: in both children and kept;  contracted: in both, summed;
//   lhs_free / rhs_free: in one child only and kept.
// The result holds batch ∪ lhs_free ∪ rhs_free in the order `result`. The
// default order is batch, lhs_free, rhs_free (dot_general's), except that the
// root step uses the output order; set_result_order lets a layout pass pick
// another order (e.g. one that spares a GEMM operand a transpose). Each
// group lists labels in the order they have in its child (batch and
// contracted in lhs order). A single-input network has no step: the root is
// input 0, root_summed lists the labels summed out of it, and the remaining
// labels are permuted into the output order.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/cost_model.h"
#include "tenferro/einsum/network.h"

namespace tenferro::einsum {

/// Which planner produced a tree (kAuto never appears in a built tree).
enum class PlannerKind : std::uint8_t {
  kAuto,          ///< nested subscripts → kNested; small networks → kOptimal; else kGreedy
  kGreedy,        ///< opt_einsum-style greedy, deterministic
  kOptimal,       ///< exact dynamic programming over subsets (small networks)
  kTreeSA,        ///< simulated annealing over contraction trees
  kExplicitPath,  ///< a user-supplied ContractionOrder
  kNested,        ///< the parenthesised order in the subscripts
  kLeftToRight,   ///< ((0,1),2)...
};
/// "auto", "greedy", "optimal", "treesa", "path", "nested", "left_to_right".
std::string_view to_string(PlannerKind kind) noexcept;
/// The inverse of to_string; nullopt for an unknown name.
std::optional<PlannerKind> parse_planner_kind(std::string_view name) noexcept;

/// What a planner did; informational, never part of a plan's identity.
struct PlanningStats {
  PlannerKind planner = PlannerKind::kExplicitPath;
  /// Wall-clock planning time (not reproducible).
  double seconds = 0.0;
  /// Candidates examined: greedy pairs scored, optimal splits evaluated,
  /// treesa moves proposed.
  std::int64_t candidates = 0;
  /// treesa: moves accepted, chains run, and whether the time budget
  /// stopped the search before its iteration budget.
  std::int64_t accepted_moves = 0;
  std::int32_t chains = 0;
  bool stopped_by_time_budget = false;
  /// The score the search itself computed for the chosen order (greedy and
  /// treesa: the combined score; optimal: log2 of flops plus read/write
  /// cost), pre-summing excluded; NaN for planners that do not search. It
  /// equals combined_score(cost()) when no label is pre-summed, which tests
  /// use to check the searches' incremental bookkeeping.
  double search_score = std::numeric_limits<double>::quiet_NaN();
};

/// One binary contraction (Note [Step semantics]).
struct ContractionStep {
  std::int32_t lhs = 0;  ///< node id of the left operand
  std::int32_t rhs = 0;  ///< node id of the right operand
  LabelList lhs_summed;
  LabelList rhs_summed;
  LabelList batch;
  LabelList contracted;
  LabelList lhs_free;
  LabelList rhs_free;
  /// The result's label order.
  LabelList result;
  /// Costs (Note [Flop convention]): flops include pre-summing.
  double flops = 0.0;
  double multiply_adds = 0.0;
  double result_elements = 0.0;
  /// Elements of the two operands as they enter the product (pre-summed).
  double lhs_elements = 0.0;
  double rhs_elements = 0.0;
};

/// A resolved contraction plan for one Network. Immutable except for
/// set_result_order; thread-compatible value type.
class ContractionTree {
 public:
  /// Resolves `order` on `network`. kInvalidArgument when the order's input
  /// count differs from the network's operand count.
  static Result<ContractionTree> build(const Network& network, const ContractionOrder& order);

  const Network& network() const noexcept { return network_; }
  const ContractionOrder& order() const noexcept { return order_; }
  std::int32_t num_inputs() const noexcept { return network_.num_operands(); }
  std::int32_t num_nodes() const noexcept { return static_cast<std::int32_t>(node_labels_.size()); }
  std::int32_t root() const noexcept { return order_.root(); }
  std::span<const ContractionStep> steps() const noexcept { return steps_; }
  /// Input nodes: the operand's distinct labels; step nodes: the result order.
  const LabelList& node_labels(std::int32_t node) const noexcept {
    return node_labels_[static_cast<std::size_t>(node)];
  }
  /// Labels summed out of the single input of a one-operand network.
  const LabelList& root_summed() const noexcept { return root_summed_; }
  const PathCost& cost() const noexcept { return cost_; }
  const PlanningStats& stats() const noexcept { return stats_; }
  void set_stats(const PlanningStats& stats) noexcept { stats_ = stats; }

  /// Reorders step `step`'s result to `labels`, a permutation of its current
  /// labels; later steps keep their groups (their label order follows their
  /// children). The root step's order is the output order and cannot change.
  /// kInvalidArgument otherwise; the tree is unchanged on error.
  Status set_result_order(std::int32_t step, std::span<const LabelId> labels);

  /// Human-readable plan: network, planner, totals, then one line per step.
  std::string explain() const;

 private:
  ContractionTree() = default;

  Network network_;
  ContractionOrder order_;
  std::vector<ContractionStep> steps_;
  std::vector<LabelList> node_labels_;
  LabelList root_summed_;
  PathCost cost_;
  PlanningStats stats_;
};

}  // namespace tenferro::einsum
