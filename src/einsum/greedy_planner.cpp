// Internal: the greedy planner.
//
// Note [Greedy planner]
// opt_einsum's greedy strategy on bit sets. Among pairs of live tensors that
// share a label, contract the pair with the lowest cost
//   size(result) - alpha * (size(lhs) + size(rhs))
// (alpha = 1: the pair that removes the most memory), ties broken by the
// smaller node ids. The result keeps a label when a third live tensor or the
// output still needs it; hyperedges (labels on three or more tensors) are
// handled by per-label holder counts. A candidate's cost goes stale when a
// holder count changes, so candidates are re-scored when popped and pushed
// back if their cost changed (lazy evaluation keeps the choice exact). When
// no pair shares a label, the remaining components are combined by outer
// products, two smallest first. No single alpha is best on every network
// (alpha = 0, "smallest result first", wins on the hyperedge-heavy
// instances, alpha >= 1 on others), so the greedy planner runs alpha = 0,
// 0.5, 1 and 1.5 and keeps the best order by score; each run costs well
// under a millisecond on the 316-tensor instance. With temperature > 0 the
// cost's signed log gets Gumbel noise, which samples near-greedy orders
// (TreeSA's starting trees). Under a size limit (SearchObjective::
// max_log2_elements) a pair whose result exceeds it is contracted only when
// no other pair is left: re-planning a slice within a memory bound (Note
// [Re-planned ranges] in slicing.cpp) needs an order that meets the bound,
// not merely the cheapest.
#include <algorithm>
#include <cmath>
#include <queue>

#include "search_planners.h"

namespace tenferro::einsum::internal {

namespace {

struct Candidate {
  bool over;     // the result exceeds the objective's size limit: after every pair that does not
  double key;    // what the heap orders by (cost, or noisy log-cost)
  double score;  // the exact cost when pushed, to detect staleness
  std::int32_t a;
  std::int32_t b;

  friend bool operator>(const Candidate& x, const Candidate& y) {
    if (x.over != y.over) return x.over;
    if (x.key != y.key) return x.key > y.key;
    if (x.a != y.a) return x.a > y.a;
    return x.b > y.b;
  }
};

class GreedySearch {
 public:
  GreedySearch(const SearchNetwork& network, const SearchObjective& objective, const GreedyOptions& options, Rng* rng)
      : net_(network),
        objective_(objective),
        options_(options),
        rng_(rng),
        sets_(network.words, static_cast<std::size_t>(2 * network.num_inputs - 1)),
        scratch_(network.words, 1),
        log2_size_(static_cast<std::size_t>(2 * network.num_inputs - 1), 0.0),
        alive_(static_cast<std::size_t>(2 * network.num_inputs - 1), false),
        mark_(static_cast<std::size_t>(2 * network.num_inputs - 1), -1),
        holders_(static_cast<std::size_t>(network.num_labels)),
        count_(static_cast<std::size_t>(network.num_labels), 0) {}

  GreedyResult run(std::int64_t* candidates) {
    const std::int32_t n = net_.num_inputs;
    const std::int32_t words = net_.words;
    for_each_label(net_.output[0], words, [&](LabelId l) { ++count_[static_cast<std::size_t>(l)]; });
    for (std::int32_t i = 0; i < n; ++i) {
      std::copy_n(net_.inputs[static_cast<std::size_t>(i)], words, sets_[static_cast<std::size_t>(i)]);
      add_node(i);
    }
    for (std::int32_t i = 0; i < n; ++i) push_neighbours(i);

    std::vector<ContractionOrder::Step> steps;
    steps.reserve(static_cast<std::size_t>(n > 0 ? n - 1 : 0));
    while (!heap_.empty()) {
      const Candidate top = heap_.top();
      heap_.pop();
      if (!alive_[static_cast<std::size_t>(top.a)] || !alive_[static_cast<std::size_t>(top.b)]) continue;
      bool over = false;
      const double score = pair_score(top.a, top.b, over);
      if (score != top.score || over != top.over) {
        push(top.a, top.b, score, over);
        continue;
      }
      const std::int32_t c = next_node(n, steps);
      steps.emplace_back(top.a, top.b);
      contract(top.a, top.b, c);
      push_neighbours(c);
    }
    // Disconnected components: outer products, two smallest first.
    using Entry = std::pair<double, std::int32_t>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> rest;
    for (std::int32_t node = 0; node < next_node(n, steps); ++node)
      if (alive_[static_cast<std::size_t>(node)]) rest.emplace(log2_size_[static_cast<std::size_t>(node)], node);
    while (rest.size() > 1) {
      const std::int32_t a = rest.top().second;
      rest.pop();
      const std::int32_t b = rest.top().second;
      rest.pop();
      const std::int32_t c = next_node(n, steps);
      steps.emplace_back(std::min(a, b), std::max(a, b));
      contract(std::min(a, b), std::max(a, b), c);
      rest.emplace(log2_size_[static_cast<std::size_t>(c)], c);
    }
    if (candidates) *candidates += scored_;
    auto order = ContractionOrder::from_ssa(n, steps);
    TENFERRO_CHECK(order.ok());
    return GreedyResult{std::move(order).value(), objective_.score(total_cost_, max_log2_)};
  }

 private:
  static std::int32_t next_node(std::int32_t n, const std::vector<ContractionOrder::Step>& steps) {
    return n + static_cast<std::int32_t>(steps.size());
  }

  void add_node(std::int32_t node) {
    const Word* set = sets_[static_cast<std::size_t>(node)];
    alive_[static_cast<std::size_t>(node)] = true;
    log2_size_[static_cast<std::size_t>(node)] = net_.log2_size(set);
    for_each_label(set, net_.words, [&](LabelId l) {
      holders_[static_cast<std::size_t>(l)].push_back(node);
      ++count_[static_cast<std::size_t>(l)];
    });
  }

  // The result labels of contracting a and b into `out`.
  void result_set(std::int32_t a, std::int32_t b, Word* out) const {
    const Word* A = sets_[static_cast<std::size_t>(a)];
    const Word* B = sets_[static_cast<std::size_t>(b)];
    for (std::int32_t w = 0; w < net_.words; ++w) {
      Word keep = A[w] | B[w];
      for (Word both = A[w] & B[w]; both != 0; both &= both - 1) {
        const auto l = static_cast<std::size_t>(w * 64 + std::countr_zero(both));
        if (count_[l] == 2) keep &= ~(Word{1} << (l & 63));
      }
      out[w] = keep;
    }
  }

  // The pair's cost; `over`: its result exceeds the objective's size limit.
  double pair_score(std::int32_t a, std::int32_t b, bool& over) {
    ++scored_;
    Word* keep = scratch_[0];
    result_set(a, b, keep);
    const double log2_size = net_.log2_size(keep);
    over = objective_.max_log2_elements && log2_size > *objective_.max_log2_elements + 1e-9;
    return std::exp2(log2_size) - options_.alpha * (std::exp2(log2_size_[static_cast<std::size_t>(a)]) +
                                                    std::exp2(log2_size_[static_cast<std::size_t>(b)]));
  }

  void push(std::int32_t a, std::int32_t b, double score, bool over) {
    double key = score;
    if (options_.temperature > 0.0) {
      const double u = std::max(rng_->uniform(), 1e-300);
      const double gumbel = -std::log(-std::log(u) + 1e-300);
      key = std::copysign(std::log2(1.0 + std::abs(score)), score) - options_.temperature * gumbel;
    }
    heap_.push(Candidate{over, key, score, std::min(a, b), std::max(a, b)});
  }

  // Pushes (node, d) for every live d sharing a label with node, once each;
  // drops dead holders from the lists on the way.
  void push_neighbours(std::int32_t node) {
    for_each_label(sets_[static_cast<std::size_t>(node)], net_.words, [&](LabelId l) {
      std::vector<std::int32_t>& list = holders_[static_cast<std::size_t>(l)];
      std::size_t kept = 0;
      for (std::int32_t d : list) {
        if (!alive_[static_cast<std::size_t>(d)]) continue;
        list[kept++] = d;
        if (d == node || mark_[static_cast<std::size_t>(d)] == node) continue;
        // Initial inputs push each pair once, from the smaller id.
        if (d < node && node < net_.num_inputs) continue;
        mark_[static_cast<std::size_t>(d)] = node;
        bool over = false;
        const double score = pair_score(node, d, over);
        push(node, d, score, over);
      }
      list.resize(kept);
    });
  }

  // Contracts live nodes a and b into the new node c.
  void contract(std::int32_t a, std::int32_t b, std::int32_t c) {
    Word* result = sets_[static_cast<std::size_t>(c)];
    result_set(a, b, result);
    Word* all = scratch_[0];
    bool contracted = false;
    const Word* A = sets_[static_cast<std::size_t>(a)];
    const Word* B = sets_[static_cast<std::size_t>(b)];
    for (std::int32_t w = 0; w < net_.words; ++w) {
      all[w] = A[w] | B[w];
      contracted = contracted || (all[w] & ~result[w]) != 0;
    }
    const double log2_result = net_.log2_size(result);
    total_cost_ += objective_.step_cost(net_.log2_size(all), contracted, log2_size_[static_cast<std::size_t>(a)],
                                        log2_size_[static_cast<std::size_t>(b)], log2_result);
    max_log2_ = std::max(max_log2_, log2_result);
    for (std::int32_t child : {a, b}) {
      alive_[static_cast<std::size_t>(child)] = false;
      for_each_label(sets_[static_cast<std::size_t>(child)], net_.words,
                     [&](LabelId l) { --count_[static_cast<std::size_t>(l)]; });
    }
    add_node(c);
  }

  const SearchNetwork& net_;
  const SearchObjective& objective_;
  GreedyOptions options_;
  Rng* rng_;
  LabelSets sets_;
  LabelSets scratch_;
  std::vector<double> log2_size_;
  std::vector<bool> alive_;
  std::vector<std::int32_t> mark_;
  std::vector<std::vector<std::int32_t>> holders_;
  std::vector<std::int32_t> count_;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap_;
  std::int64_t scored_ = 0;
  double total_cost_ = 0.0;
  double max_log2_ = 0.0;
};

}  // namespace

GreedyResult greedy_order(const SearchNetwork& network, const SearchObjective& objective, const GreedyOptions& options,
                          Rng* rng, std::int64_t* candidates) {
  return GreedySearch(network, objective, options, rng).run(candidates);
}

GreedyResult best_greedy_order(const SearchNetwork& network, const SearchObjective& objective,
                               std::int64_t* candidates) {
  GreedyResult best = greedy_order(network, objective, GreedyOptions{.alpha = 0.0}, nullptr, candidates);
  for (double alpha : {0.5, 1.0, 1.5}) {
    GreedyResult result = greedy_order(network, objective, GreedyOptions{.alpha = alpha}, nullptr, candidates);
    if (result.score < best.score) best = std::move(result);
  }
  return best;
}

}  // namespace tenferro::einsum::internal
