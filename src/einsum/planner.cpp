// plan(): resolves the operation-local policy against the runtime planning
// configuration, runs the chosen planner, builds the ContractionTree and
// enforces the hard workspace limit (planner.h).
#include "tenferro/einsum/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "search_planners.h"
#include "tenferro/base/abbreviate.h"

namespace tenferro::einsum {

namespace {

Status invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, std::move(message));
}

Status check_config(const PlanningConfig& config, const TreeSAOptions& treesa) {
  if (config.optimal_max_inputs < 1 || config.optimal_max_inputs > kOptimalHardMaxInputs) {
    return invalid(fmt::format("PlanningConfig::optimal_max_inputs is {}; expected 1..{}", config.optimal_max_inputs,
                               kOptimalHardMaxInputs));
  }
  if (config.workspace_limit_bytes && !(*config.workspace_limit_bytes > 0.0)) {
    return invalid(fmt::format("PlanningConfig::workspace_limit_bytes is {}; expected a positive byte count",
                               *config.workspace_limit_bytes));
  }
  if (treesa.chains < 1 || treesa.sweeps_per_beta < 1 || !(treesa.beta_step > 0.0) ||
      !(treesa.beta_end >= treesa.beta_start) || !(treesa.beta_start >= 0.0) || treesa.max_sweeps < 0 ||
      !(treesa.time_budget_seconds >= 0.0) || treesa.greedy_trials < 0) {
    return invalid(fmt::format(
        "TreeSAOptions (chains {}, sweeps_per_beta {}, beta {}..{} step {}, max_sweeps {}, time budget {} s, "
        "greedy_trials {}); expected chains >= 1, sweeps_per_beta >= 1, 0 <= beta_start <= beta_end, beta_step > 0, "
        "and non-negative budgets",
        treesa.chains, treesa.sweeps_per_beta, treesa.beta_start, treesa.beta_end, treesa.beta_step, treesa.max_sweeps,
        treesa.time_budget_seconds, treesa.greedy_trials));
  }
  return ok_status();
}

// Note [Auto refinement]
// Beyond the exact planner's reach kAuto starts from greedy, which on loopy
// networks (graphical models, lattices) can be orders of magnitude worse
// than a searched path: greedy's path for the 160-factor gm_queen5_5_3
// instance costs 10^11.4 flops with a 2^31.7-element intermediate (27 GB in
// float64: the contraction fails), TreeSA's 10^9.5 flops and 2^26.9
// elements. So where greedy's path is expensive enough that a search is
// cheap beside it, kAuto refines it with TreeSA, which starts from the
// greedy order and keeps it unless it finds a better one. The budget is a
// tenth of the greedy path's estimated run time (its score at
// kAutoFlopsPerSecond), at most the configured TreeSA time budget,
// converted to a count of proposed moves (at kAutoMovesPerSecond) with the
// annealing schedule compressed to fit: no clock is read, so the path is
// the same on every machine and under both determinism modes. Paths whose
// budget would be under kAutoMinSweeps sweeps stay greedy's.
constexpr double kAutoFlopsPerSecond = 1e10;  // one core on mid-size contractions
constexpr double kAutoRefineFraction = 0.1;
constexpr double kAutoMovesPerSecond = 1e7;  // TreeSA proposals; 1.8e7/s measured on gm_queen5_5_3 (Zen 5)
constexpr std::int64_t kAutoMinSweeps = 100;

// The TreeSA options of a refinement of a path scoring `greedy_score` (log2
// of its cost, plus any penalty), or nullopt when the budget is too small to
// be worth a search.
std::optional<TreeSAOptions> auto_refinement(double greedy_score, std::int32_t num_inputs,
                                             const TreeSAOptions& configured) {
  const double cap =
      configured.time_budget_seconds > 0.0 ? configured.time_budget_seconds : TreeSAOptions{}.time_budget_seconds;
  const double seconds = std::min(kAutoRefineFraction * std::exp2(greedy_score) / kAutoFlopsPerSecond, cap);
  const double moves = seconds * kAutoMovesPerSecond;
  const auto sweeps = static_cast<std::int64_t>(moves / std::max(1, num_inputs - 1));
  if (!(sweeps >= kAutoMinSweeps)) return std::nullopt;
  TreeSAOptions o = configured;
  o.time_budget_seconds = 0.0;
  o.max_sweeps = sweeps;
  // At least 20 temperature levels per chain; fewer chains when the budget
  // is small.
  const std::int64_t per_chain_min = 20LL * o.sweeps_per_beta;
  o.chains = static_cast<std::int32_t>(std::clamp<std::int64_t>(sweeps / per_chain_min, 1, configured.chains));
  const double levels = static_cast<double>(sweeps / o.chains) / o.sweeps_per_beta;
  o.beta_step = (o.beta_end - o.beta_start) / std::max(1.0, levels - 1.0);
  return o;
}

// kAuto: the nesting when written, exact search for small networks, greedy beyond.
PlannerKind resolve_auto(const Network& network, const PlanningConfig& config) {
  if (network.nesting()) return PlannerKind::kNested;
  const std::int32_t exact_limit = std::min(config.auto_optimal_max_inputs, config.optimal_max_inputs);
  return network.num_operands() <= exact_limit ? PlannerKind::kOptimal : PlannerKind::kGreedy;
}

}  // namespace

Status validate_policy(const PlanningPolicy& policy, std::int32_t num_operands, bool nested, std::string_view what,
                       ErrorStage stage) {
  const auto fail = [&](std::string message) { return Error(ErrorCode::kInvalidArgument, stage, std::move(message)); };
  switch (policy.planner) {
    case PlannerKind::kExplicitPath:
      if (!policy.path) return fail("planner 'path' needs PlanningPolicy::path; none was given");
      if (policy.path->num_inputs() != num_operands) {
        return fail(fmt::format("the explicit path {} covers {} inputs; einsum \"{}\" has {} operand{}",
                                policy.path->to_string(), policy.path->num_inputs(), what, num_operands,
                                num_operands == 1 ? "" : "s"));
      }
      break;
    case PlannerKind::kNested:
      if (!nested) {
        return fail(
            fmt::format("planner 'nested' needs parenthesised subscripts such as \"((ij,jk),kl)->il\"; einsum "
                        "\"{}\" has none",
                        what));
      }
      break;
    default:
      break;
  }
  if (nested && policy.planner != PlannerKind::kNested && policy.planner != PlannerKind::kAuto) {
    return fail(
        fmt::format("einsum \"{}\" fixes its order with parentheses; planner '{}' cannot change it (expected "
                    "planner 'nested' or 'auto')",
                    what, to_string(policy.planner)));
  }
  return ok_status();
}

Result<ContractionTree> plan(const Network& network, const PlanningPolicy& policy, const PlanningConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  const CostWeights weights = policy.weights.value_or(config.weights);
  const TreeSAOptions treesa = policy.treesa.value_or(config.treesa);
  TENFERRO_TRY(check_config(config, treesa));
  const std::int32_t n = network.num_operands();
  TENFERRO_TRY(
      validate_policy(policy, n, network.nesting().has_value(), abbreviate(network.to_string()), ErrorStage::kPrepare));
  PlannerKind kind = policy.planner == PlannerKind::kAuto ? resolve_auto(network, config) : policy.planner;
  std::optional<double> max_log2_elements;
  if (config.workspace_limit_bytes) {
    max_log2_elements = std::log2(*config.workspace_limit_bytes / static_cast<double>(dtype_size(network.dtype())));
  }

  const internal::SearchObjective objective{.weights = weights, .max_log2_elements = max_log2_elements};
  PlanningStats stats;
  stats.planner = kind;
  ContractionOrder order;
  switch (kind) {
    case PlannerKind::kAuto:  // resolved above
    case PlannerKind::kLeftToRight:
      order = ContractionOrder::left_to_right(n);
      break;
    case PlannerKind::kExplicitPath:  // validate_policy checked the path
      order = *policy.path;
      break;
    case PlannerKind::kNested:  // validate_policy checked the parentheses
      order = *network.nesting();
      break;
    case PlannerKind::kGreedy: {
      const internal::SearchNetwork search = internal::SearchNetwork::from(network);
      internal::GreedyResult greedy = internal::best_greedy_order(search, objective, &stats.candidates);
      const std::optional<TreeSAOptions> refine =
          policy.planner == PlannerKind::kAuto ? auto_refinement(greedy.score, n, treesa) : std::nullopt;
      if (refine) {  // Note [Auto refinement]
        stats.planner = kind = PlannerKind::kTreeSA;
        const internal::TreeSASettings settings{
            .options = *refine, .objective = objective, .determinism = config.determinism, .seed = config.seed};
        order = internal::treesa_order(search, settings, stats);
        break;
      }
      order = std::move(greedy.order);
      stats.search_score = greedy.score;
      break;
    }
    case PlannerKind::kOptimal: {
      if (n > config.optimal_max_inputs) {
        return invalid(
            fmt::format("planner 'optimal' handles at most {} inputs (PlanningConfig::optimal_max_inputs, "
                        "at most {}); einsum \"{}\" has {}; use 'greedy' or 'treesa'",
                        config.optimal_max_inputs, kOptimalHardMaxInputs, abbreviate(network.to_string()), n));
      }
      const internal::SearchNetwork search = internal::SearchNetwork::from(network);
      internal::OptimalOptions options{.read_write_weight = weights.read_write, .max_log2_elements = max_log2_elements};
      TENFERRO_ASSIGN_OR_RETURN(order,
                                internal::optimal_order(search, options, &stats.candidates, &stats.search_score));
      break;
    }
    case PlannerKind::kTreeSA: {
      const internal::SearchNetwork search = internal::SearchNetwork::from(network);
      const internal::TreeSASettings settings{
          .options = treesa, .objective = objective, .determinism = config.determinism, .seed = config.seed};
      order = internal::treesa_order(search, settings, stats);
      break;
    }
  }
  auto built = ContractionTree::build(network, order);
  if (!built.ok()) return built.status().in_stage(ErrorStage::kPrepare);
  ContractionTree tree = std::move(built).value();
  if (config.workspace_limit_bytes && tree.cost().workspace_bytes > *config.workspace_limit_bytes) {
    return make_error(ErrorCode::kWorkspaceLimitExceeded, ErrorStage::kPrepare,
                      "einsum \"{}\": the {} path {} needs {:.6g} bytes of intermediate workspace; expected at most "
                      "the hard limit of {:.6g} bytes",
                      abbreviate(network.to_string()), to_string(kind),
                      n <= 16 ? order.to_string() : fmt::format("({} steps)", n - 1), tree.cost().workspace_bytes,
                      *config.workspace_limit_bytes);
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tree.set_stats(stats);
  return tree;
}

}  // namespace tenferro::einsum
