// plan(): resolves the operation-local policy against the runtime planning
// configuration, runs the chosen planner, builds the ContractionTree and
// enforces the hard workspace limit (planner.h).
#include "tenferro/einsum/planner.h"

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
        return fail(fmt::format("the explicit path {} covers {} inputs; einsum \"{}\" has {} operands",
                                policy.path->to_string(), policy.path->num_inputs(), what, num_operands));
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
