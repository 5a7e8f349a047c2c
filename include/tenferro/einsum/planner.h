// Path planning: plan() is a pure function of a Network (subscripts,
// dtypes, concrete shapes), the operation-local PlanningPolicy and the
// resolved PlanningConfig. It creates no threads, touches no global state,
// and returns the same tree for the same arguments except where a
// wall-clock budget is allowed to cut a search short (Note [Planner
// determinism]).
//
// Note [Planner determinism]
// greedy, optimal, explicit, nested and left-to-right planning are
// deterministic. treesa is deterministic for a given seed and iteration
// budget; its time budget is honoured only under Determinism::kFast, where
// the clock paces the annealing: each chain gets an equal share of the
// remaining budget, and its inverse temperature advances at least as fast
// as the elapsed fraction of that share, so the machine's speed changes the
// result. Under Determinism::kReproducible the time budget is ignored and
// the schedule is the nominal one, so identical inputs yield identical
// paths.
//
// Note [Workspace limit]
// PlanningConfig::workspace_limit_bytes is a hard limit on the logical
// workspace (Note [Workspace estimate]). optimal discards subsets whose
// intermediate alone exceeds it; treesa penalises intermediates beyond it
// heavily; every planner then checks the final tree and reports
// kWorkspaceLimitExceeded (stage kPrepare) when it does not fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/cost_model.h"
#include "tenferro/einsum/network.h"

namespace tenferro::einsum {

/// Simulated annealing over contraction trees (Note [TreeSA] in
/// treesa_planner.cpp). Temperatures are inverse: beta runs from
/// beta_start to beta_end in steps of beta_step, each level doing
/// sweeps_per_beta sweeps, one proposed local rewrite per internal node.
struct TreeSAOptions {
  /// Independent chains, run one after another; the best tree wins.
  std::int32_t chains = 10;
  double beta_start = 0.01;
  double beta_end = 15.0;
  double beta_step = 0.05;
  std::int32_t sweeps_per_beta = 50;
  /// Iteration budget: at most this many sweeps over all chains (0: no cap).
  std::int64_t max_sweeps = 0;
  /// Wall-clock budget in seconds (0: none); only under Determinism::kFast.
  double time_budget_seconds = 2.0;
  /// Randomised greedy trees tried for each chain's starting tree.
  std::int32_t greedy_trials = 8;

  friend bool operator==(const TreeSAOptions&, const TreeSAOptions&) = default;
};

/// ExecutionPolicy::determinism as it concerns planning (Note [Planner determinism]).
enum class Determinism : std::uint8_t {
  kFast,          ///< deterministic except where a time budget stops a search
  kReproducible,  ///< identical inputs and config yield identical paths
};

/// The operation-local policy stored in an einsum op's payload. Unset
/// optionals inherit the PlanningConfig's value (InheritRuntimeDefault).
struct PlanningPolicy {
  PlannerKind planner = PlannerKind::kAuto;
  /// The order for kExplicitPath (required then, ignored otherwise).
  std::optional<ContractionOrder> path;
  std::optional<TreeSAOptions> treesa;
  std::optional<CostWeights> weights;

  friend bool operator==(const PlanningPolicy&, const PlanningPolicy&) = default;
};

/// The resolved runtime planning configuration (a runtime snapshot owns it).
struct PlanningConfig {
  CostWeights weights;
  TreeSAOptions treesa;
  /// kOptimal refuses larger networks (at most kOptimalHardMaxInputs).
  std::int32_t optimal_max_inputs = 16;
  /// kAuto uses kOptimal up to this many inputs (about a millisecond at
  /// 10), kGreedy beyond, refined by TreeSA where greedy's path is
  /// expensive (Note [Auto refinement] in planner.cpp).
  std::int32_t auto_optimal_max_inputs = 10;
  /// Hard limit on the logical workspace in bytes (Note [Workspace limit]).
  std::optional<double> workspace_limit_bytes;
  Determinism determinism = Determinism::kFast;
  /// Seeds every randomised planner.
  std::uint64_t seed = 0;

  friend bool operator==(const PlanningConfig&, const PlanningConfig&) = default;
};

/// The exact planner's memory and time grow as 2^n and 3^n.
inline constexpr std::int32_t kOptimalHardMaxInputs = 20;

/// Checks that `policy` can apply to an einsum with `num_operands` operands
/// whose subscripts do (`nested`) or do not carry parentheses: kInvalidArgument
/// (stage `stage`) for an explicit path over another operand count, planner
/// 'path' without a path, 'nested' without parentheses, or parentheses with a
/// planner other than 'nested' / 'auto'. `what` names the einsum in messages.
Status validate_policy(const PlanningPolicy& policy, std::int32_t num_operands, bool nested, std::string_view what,
                       ErrorStage stage);

/// Plans `network` (Note [Planner determinism], Note [Workspace limit]).
/// Errors (stage kPrepare): kInvalidArgument for a policy that does not fit
/// the network (missing or mismatched path, nested planner without
/// parentheses, parentheses with another planner, optimal beyond its input
/// limit, invalid options); kWorkspaceLimitExceeded. The returned tree
/// records the planner used and its statistics. Thread-safe: it only reads
/// its arguments, so concurrent calls (even on one Network) are independent.
Result<ContractionTree> plan(const Network& network, const PlanningPolicy& policy = {},
                             const PlanningConfig& config = {});

}  // namespace tenferro::einsum
