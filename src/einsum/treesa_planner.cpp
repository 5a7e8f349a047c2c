// Internal: the TreeSA planner.
//
// Note [TreeSA]
// Simulated annealing over contraction trees, after Kalachev, Panteleev and
// Yung ("Multi-tensor contraction for XEB verification of quantum circuits",
// 2021) and OMEinsumContractionOrders.jl. A chain starts from the best of
// several randomised greedy trees and sweeps the tree again and again: at
// every internal node N = (X, Y) it proposes one local rewrite, swapping a
// grandchild with its uncle,
//   ((X1, X2), Y) -> ((X1, Y), X2) or ((X2, Y), X1), and symmetrically for Y,
// which changes only the labels of the rebuilt child. The labels a rebuilt
// child C = (P, Q) keeps under N = (C, G) are
//   keep(C) = (labels(P) ∪ labels(Q)) ∩ (labels(G) ∪ labels(N)),
// because anything P or Q holds that is needed outside C is needed either
// by G or outside N. The energy change is local, in log2 units:
//   dE = log2(cost(C') + cost(N')) - log2(cost(X) + cost(N))
//        + size * (excess(C') - excess(X)),
// with cost = flops + read_write * elements moved, and excess the log2 size
// beyond the target (a hard workspace limit adds a steep penalty of its
// own). A move is accepted when dE <= 0 or with probability exp(-beta dE);
// beta rises from beta_start to beta_end. After every sweep the global score
// is compared with the best tree so far, which is kept. Chains run one after
// another with their own seeds derived from the planning seed; the budgets
// and their effect on determinism are described in Note [Planner
// determinism] (planner.h).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "search_planners.h"

namespace tenferro::einsum::internal {

namespace {

using Clock = std::chrono::steady_clock;

class AnnealingTree {
 public:
  AnnealingTree(const SearchNetwork& net, const SearchObjective& objective)
      : net_(net),
        objective_(objective),
        nodes_(static_cast<std::size_t>(2 * net.num_inputs - 1)),
        left_(nodes_, -1),
        right_(nodes_, -1),
        labels_(net.words, nodes_),
        log2_size_(nodes_, 0.0),
        cost_(nodes_, 0.0),
        scratch_(net.words, 1) {}

  // Loads an SSA order: leaves are inputs, internal node n+k is step k.
  void load(const ContractionOrder& order) {
    const std::int32_t n = net_.num_inputs;
    const std::int32_t words = net_.words;
    std::vector<std::int32_t> remaining(static_cast<std::size_t>(net_.num_labels), 0);
    for_each_label(net_.output[0], words, [&](LabelId l) { ++remaining[static_cast<std::size_t>(l)]; });
    for (std::int32_t i = 0; i < n; ++i) {
      std::copy_n(net_.inputs[static_cast<std::size_t>(i)], words, labels_[static_cast<std::size_t>(i)]);
      log2_size_[static_cast<std::size_t>(i)] = net_.log2_size(labels_[static_cast<std::size_t>(i)]);
      for_each_label(labels_[static_cast<std::size_t>(i)], words,
                     [&](LabelId l) { ++remaining[static_cast<std::size_t>(l)]; });
      left_[static_cast<std::size_t>(i)] = right_[static_cast<std::size_t>(i)] = -1;
    }
    for (std::size_t k = 0; k < order.steps().size(); ++k) {
      const auto [a, b] = order.steps()[k];
      const auto c = static_cast<std::size_t>(n) + k;
      left_[c] = a;
      right_[c] = b;
      const Word* A = labels_[static_cast<std::size_t>(a)];
      const Word* B = labels_[static_cast<std::size_t>(b)];
      Word* C = labels_[c];
      for (std::int32_t w = 0; w < words; ++w) {
        Word keep = A[w] | B[w];
        for (Word bits = keep; bits != 0; bits &= bits - 1) {
          const auto l = static_cast<std::size_t>(w * 64 + std::countr_zero(bits));
          const Word bit = Word{1} << (l & 63);
          const std::int32_t here = ((A[w] & bit) != 0) + ((B[w] & bit) != 0);
          if (remaining[l] == here) keep &= ~bit;
        }
        C[w] = keep;
      }
      for_each_label(A, words, [&](LabelId l) { --remaining[static_cast<std::size_t>(l)]; });
      for_each_label(B, words, [&](LabelId l) { --remaining[static_cast<std::size_t>(l)]; });
      for_each_label(C, words, [&](LabelId l) { ++remaining[static_cast<std::size_t>(l)]; });
      log2_size_[c] = net_.log2_size(C);
    }
    root_ = order.root();
    for (std::size_t node = static_cast<std::size_t>(n); node < nodes_; ++node)
      cost_[node] = step_cost(left_[node], right_[node], labels_[node]);
  }

  // The tree as an SSA order (post order, left before right).
  ContractionOrder order() const {
    const std::int32_t n = net_.num_inputs;
    std::vector<ContractionOrder::Step> steps;
    steps.reserve(static_cast<std::size_t>(n - 1));
    std::vector<std::int32_t> ssa(nodes_, -1);
    std::vector<std::pair<std::int32_t, bool>> stack{{root_, false}};
    while (!stack.empty()) {
      const auto [node, expanded] = stack.back();
      stack.pop_back();
      const auto u = static_cast<std::size_t>(node);
      if (node < n) {
        ssa[u] = node;
      } else if (!expanded) {
        stack.emplace_back(node, true);
        stack.emplace_back(right_[u], false);
        stack.emplace_back(left_[u], false);
      } else {
        steps.emplace_back(ssa[static_cast<std::size_t>(left_[u])], ssa[static_cast<std::size_t>(right_[u])]);
        ssa[u] = n + static_cast<std::int32_t>(steps.size()) - 1;
      }
    }
    auto order = ContractionOrder::from_ssa(n, steps);
    TENFERRO_CHECK(order.ok());
    return std::move(order).value();
  }

  // The global score (cost_model.h's combined score, plus the limit penalty).
  // Summed afresh: a running total would lose the small costs next to the
  // huge ones visited at high temperature.
  double score() const {
    double max_log2 = 0.0;
    double total = 0.0;
    for (std::size_t node = static_cast<std::size_t>(net_.num_inputs); node < nodes_; ++node) {
      max_log2 = std::max(max_log2, log2_size_[node]);
      total += cost_[node];
    }
    return objective_.score(total, max_log2);
  }

  // One sweep: a proposed rewrite at every internal node, parents first.
  void sweep(double beta, Rng& rng, std::int64_t& proposed, std::int64_t& accepted) {
    stack_.clear();
    stack_.push_back(root_);
    while (!stack_.empty()) {
      const std::int32_t node = stack_.back();
      stack_.pop_back();
      if (node < net_.num_inputs) continue;
      ++proposed;
      accepted += propose(node, beta, rng) ? 1 : 0;
      stack_.push_back(right_[static_cast<std::size_t>(node)]);
      stack_.push_back(left_[static_cast<std::size_t>(node)]);
    }
  }

  void copy_from(const AnnealingTree& other) {
    left_ = other.left_;
    right_ = other.right_;
    labels_ = other.labels_;
    log2_size_ = other.log2_size_;
    cost_ = other.cost_;
    root_ = other.root_;
  }

 private:
  bool is_leaf(std::int32_t node) const { return node < net_.num_inputs; }

  // Linear cost of contracting p and q into a tensor with labels `result`.
  double step_cost(std::int32_t p, std::int32_t q, const Word* result) const {
    return local_cost(labels_[static_cast<std::size_t>(p)], log2_size_[static_cast<std::size_t>(p)],
                      labels_[static_cast<std::size_t>(q)], log2_size_[static_cast<std::size_t>(q)], result);
  }

  double local_cost(const Word* P, double log2_p, const Word* Q, double log2_q, const Word* result) const {
    double log2_union = 0.0;
    bool contracted = false;
    for (std::int32_t w = 0; w < net_.words; ++w) {
      const Word all = P[w] | Q[w];
      contracted = contracted || (all & ~result[w]) != 0;
      for (Word bits = all; bits != 0; bits &= bits - 1)
        log2_union += net_.log2_extent[static_cast<std::size_t>(w * 64 + std::countr_zero(bits))];
    }
    const double log2_result = objective_.weights.read_write != 0.0 ? net_.log2_size(result) : 0.0;
    return objective_.step_cost(log2_union, contracted, log2_p, log2_q, log2_result);
  }

  // Proposes one random rewrite at internal node `node`; returns whether it
  // was accepted (and applied).
  bool propose(std::int32_t node, double beta, Rng& rng) {
    const auto u = static_cast<std::size_t>(node);
    const std::int32_t x = left_[u];
    const std::int32_t y = right_[u];
    const bool x_internal = !is_leaf(x);
    const bool y_internal = !is_leaf(y);
    if (!x_internal && !y_internal) return false;
    std::uint32_t rule = rng.below(static_cast<std::uint32_t>(2 * (x_internal + y_internal)));
    if (!x_internal) rule += 2;
    // The child to rebuild, the grandchild that stays in it (keep), the one
    // that moves up (moved) and the uncle that moves down.
    const std::int32_t child = rule < 2 ? x : y;
    const std::int32_t uncle = rule < 2 ? y : x;
    const auto cu = static_cast<std::size_t>(child);
    const std::int32_t moved = (rule % 2 == 0) ? right_[cu] : left_[cu];
    const std::int32_t kept = (rule % 2 == 0) ? left_[cu] : right_[cu];

    Word* new_child = scratch_[0];
    const Word* K = labels_[static_cast<std::size_t>(kept)];
    const Word* U = labels_[static_cast<std::size_t>(uncle)];
    const Word* M = labels_[static_cast<std::size_t>(moved)];
    const Word* Nl = labels_[u];
    for (std::int32_t w = 0; w < net_.words; ++w) new_child[w] = (K[w] | U[w]) & (M[w] | Nl[w]);
    const double new_child_log2 = net_.log2_size(new_child);

    // Costs of the rebuilt child (kept, uncle) and of node (child', moved).
    const double child_cost = step_cost(kept, uncle, new_child);
    const double node_cost = local_cost(M, log2_size_[static_cast<std::size_t>(moved)], new_child, new_child_log2, Nl);
    const double old_local = cost_[cu] + cost_[u];
    const double new_local = child_cost + node_cost;
    const double delta =
        std::log2(new_local / old_local) + objective_.excess(new_child_log2) - objective_.excess(log2_size_[cu]);
    if (delta > 0.0 && rng.uniform() >= std::exp(-beta * delta)) return false;

    // Apply: child := (kept, uncle); node := (child, moved).
    left_[cu] = kept;
    right_[cu] = uncle;
    if (rule < 2) {
      left_[u] = child;
      right_[u] = moved;
    } else {
      left_[u] = moved;
      right_[u] = child;
    }
    std::copy_n(new_child, net_.words, labels_[cu]);
    log2_size_[cu] = new_child_log2;
    cost_[cu] = child_cost;
    cost_[u] = node_cost;
    return true;
  }

  const SearchNetwork& net_;
  const SearchObjective& objective_;
  std::size_t nodes_;
  std::vector<std::int32_t> left_, right_;
  LabelSets labels_;
  std::vector<double> log2_size_;
  std::vector<double> cost_;
  std::int32_t root_ = 0;
  LabelSets scratch_;
  std::vector<std::int32_t> stack_;
};

double order_score(const SearchNetwork& net, const SearchObjective& objective, const ContractionOrder& order) {
  AnnealingTree tree(net, objective);
  tree.load(order);
  return tree.score();
}

}  // namespace

ContractionOrder treesa_order(const SearchNetwork& net, const TreeSASettings& settings, PlanningStats& stats) {
  const TreeSAOptions& options = settings.options;
  const Clock::time_point start = Clock::now();
  const bool timed = settings.determinism == Determinism::kFast && options.time_budget_seconds > 0.0;
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  // Deterministic greedy is the baseline every chain must beat.
  const SearchObjective& objective = settings.objective;
  std::int64_t greedy_pairs = 0;  // not reported: candidates counts moves
  const GreedyResult greedy = best_greedy_order(net, objective, &greedy_pairs);
  ContractionOrder best_order = greedy.order;
  double best_score = order_score(net, objective, best_order);
  stats.search_score = best_score;
  if (net.num_inputs < 3) return best_order;  // one tree shape only

  AnnealingTree tree(net, objective);
  AnnealingTree chain_best(net, objective);
  std::int64_t sweeps = 0;
  for (std::int32_t chain = 0; chain < options.chains; ++chain) {
    if (chain > 0 && timed && elapsed() >= options.time_budget_seconds) {
      stats.stopped_by_time_budget = true;
      break;
    }
    if (options.max_sweeps > 0 && sweeps >= options.max_sweeps) break;
    Rng rng(Rng::derive(settings.seed, static_cast<std::uint64_t>(chain)));
    // Starting tree: the best of the deterministic greedy orders and a few
    // randomised ones.
    ContractionOrder start_order = greedy.order;
    double start_score = greedy.score;
    for (std::int32_t trial = 0; trial < options.greedy_trials; ++trial) {
      const GreedyOptions noisy{.alpha = rng.uniform(), .temperature = 0.5 + rng.uniform()};
      GreedyResult candidate = greedy_order(net, objective, noisy, &rng, &greedy_pairs);
      if (candidate.score < start_score) {
        start_score = candidate.score;
        start_order = std::move(candidate.order);
      }
    }
    tree.load(start_order);
    chain_best.copy_from(tree);
    double chain_best_score = tree.score();
    ++stats.chains;

    // Under a time budget each chain gets an equal share of what is left,
    // and beta advances at least as fast as the elapsed part of that share
    // (Note [Planner determinism]).
    const double chain_start = elapsed();
    const double chain_share = timed ? (options.time_budget_seconds - chain_start) / (options.chains - chain) : 0.0;
    bool out_of_budget = false;
    double beta = options.beta_start;
    while (!out_of_budget) {
      for (std::int32_t s = 0; s < options.sweeps_per_beta; ++s) {
        tree.sweep(beta, rng, stats.candidates, stats.accepted_moves);
        ++sweeps;
        const double score = tree.score();
        if (score < chain_best_score) {
          chain_best_score = score;
          chain_best.copy_from(tree);
        }
        const bool out_of_time = timed && elapsed() >= options.time_budget_seconds;
        if ((options.max_sweeps > 0 && sweeps >= options.max_sweeps) || out_of_time) {
          stats.stopped_by_time_budget = out_of_time;
          out_of_budget = true;
          break;
        }
      }
      if (beta >= options.beta_end) break;
      double next = beta + options.beta_step;
      if (timed) {
        const double share_used = (elapsed() - chain_start) / chain_share;
        next = std::max(next, options.beta_start + (options.beta_end - options.beta_start) * share_used);
      }
      beta = std::min(next, options.beta_end);
    }
    if (chain_best_score < best_score) {
      best_score = chain_best_score;
      best_order = chain_best.order();
    }
  }
  stats.search_score = best_score;
  return best_order;
}

}  // namespace tenferro::einsum::internal
