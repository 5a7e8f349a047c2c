// Tests of the planners and the ContractionTree: optimal equals brute force
// over all trees, every planner's tree computes the right values, cost
// bookkeeping, determinism and budgets, the workspace limit, policy errors,
// result-order changes and explain().
#include "tenferro/einsum/planner.h"

#include <functional>

#include <gtest/gtest.h>

#include "einsum_test_support.h"
#include "tenferro/einsum/benchmark_instance.h"

namespace tenferro::einsum {
namespace {

using test_support::Dense;
using Steps = std::vector<ContractionOrder::Step>;

Network bind_or_die(const test_support::RandomEinsum& e) {
  const auto r = test_support::refs(e.shapes);
  auto net = Network::bind(e.subscripts, r);
  EXPECT_TRUE(net.ok()) << e.subscripts << ": " << net.status().to_string();
  return std::move(net).value();
}

// The minimum flops over every binary tree, by exhaustive enumeration of
// all ways to pick the next pair (exponential; small n only).
double brute_force_min_flops(const Network& net) {
  double best = INFINITY;
  std::function<void(std::vector<std::int32_t>&, Steps&, std::int32_t)> search = [&](std::vector<std::int32_t>& live,
                                                                                     Steps& steps, std::int32_t next) {
    if (live.size() == 1) {
      auto order = ContractionOrder::from_ssa(net.num_operands(), steps);
      best = std::min(best, ContractionTree::build(net, *order)->cost().flops);
      return;
    }
    for (std::size_t i = 0; i < live.size(); ++i) {
      for (std::size_t j = i + 1; j < live.size(); ++j) {
        std::vector<std::int32_t> rest;
        for (std::size_t k = 0; k < live.size(); ++k)
          if (k != i && k != j) rest.push_back(live[k]);
        rest.push_back(next);
        steps.emplace_back(live[i], live[j]);
        search(rest, steps, next + 1);
        steps.pop_back();
      }
    }
  };
  std::vector<std::int32_t> live;
  for (std::int32_t i = 0; i < net.num_operands(); ++i) live.push_back(i);
  Steps steps;
  search(live, steps, net.num_operands());
  return best;
}

TEST(PlannerTest, OptimalEqualsBruteForceOnRandomNetworks) {
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const int inputs = 3 + static_cast<int>(seed % 4);  // 3..6
    const auto e = test_support::random_einsum(seed, inputs, 7, 3, 7);
    SCOPED_TRACE(e.subscripts);
    const Network net = bind_or_die(e);
    auto tree = plan(net, PlanningPolicy{.planner = PlannerKind::kOptimal});
    ASSERT_TRUE(tree.ok()) << tree.status().to_string();
    EXPECT_EQ(tree->stats().planner, PlannerKind::kOptimal);
    const double expected = brute_force_min_flops(net);
    EXPECT_NEAR(tree->cost().flops, expected, 1e-9 * expected);
  }
}

TEST(PlannerTest, EveryPlannerComputesTheEinsum) {
  PlanningConfig config;
  config.determinism = Determinism::kReproducible;
  config.treesa.chains = 2;
  config.treesa.sweeps_per_beta = 2;
  config.treesa.beta_step = 1.0;
  for (std::uint64_t seed = 100; seed < 130; ++seed) {
    const int inputs = 1 + static_cast<int>(seed % 6);  // 1..6
    const auto e = test_support::random_einsum(seed, inputs, 5, 3, 3);
    SCOPED_TRACE(e.subscripts);
    const Network net = bind_or_die(e);
    const auto operands = test_support::random_operands(e.shapes, seed);
    const Dense expected = test_support::brute_force_einsum(net, operands);
    for (PlannerKind planner : {PlannerKind::kAuto, PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kTreeSA,
                                PlannerKind::kLeftToRight}) {
      auto tree = plan(net, PlanningPolicy{.planner = planner}, config);
      ASSERT_TRUE(tree.ok()) << to_string(planner) << ": " << tree.status().to_string();
      EXPECT_EQ(tree->steps().size(), static_cast<std::size_t>(inputs - 1));
      EXPECT_LT(test_support::max_abs_diff(test_support::execute_tree(*tree, operands), expected), 1e-10)
          << to_string(planner) << "\n"
          << tree->explain();
    }
  }
}

TEST(PlannerTest, StepGroupsAndCosts) {
  // i·j·k sizes 2·3·4: ij,jk->ik is one GEMM with 24 multiply-adds.
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {3, 4}};
  const auto r = test_support::refs(shapes);
  auto net = Network::bind("ij,jk->ik", r).value();
  auto tree = plan(net).value();
  ASSERT_EQ(tree.steps().size(), 1u);
  const ContractionStep& step = tree.steps()[0];
  EXPECT_EQ(step.contracted, (LabelList{1}));
  EXPECT_EQ(step.lhs_free, (LabelList{0}));
  EXPECT_EQ(step.rhs_free, (LabelList{2}));
  EXPECT_TRUE(step.batch.empty());
  EXPECT_EQ(step.result, (LabelList{0, 2}));
  EXPECT_EQ(step.multiply_adds, 24.0);
  EXPECT_EQ(step.flops, 48.0);  // a summing step: 2 per multiply-add
  EXPECT_EQ(tree.cost().read_write_elements, 6.0 + 12.0 + 8.0);
  EXPECT_EQ(tree.cost().workspace_bytes, 8.0 * 8);
  EXPECT_EQ(tree.cost().max_intermediate_elements, 8.0);

  // Batch labels and a label summed out of one input before the product.
  const std::vector<std::vector<std::int64_t>> batch_shapes{{5, 2, 3, 7}, {5, 3, 4}};
  const auto br = test_support::refs(batch_shapes);
  auto batch_net = Network::bind("bijz,bjk->bik", br).value();
  auto batch_tree = plan(batch_net).value();
  const ContractionStep& b = batch_tree.steps()[0];
  EXPECT_EQ(batch_net.labels_to_string(b.batch), "b");
  EXPECT_EQ(batch_net.labels_to_string(b.lhs_summed), "z");
  EXPECT_EQ(batch_net.labels_to_string(b.contracted), "j");
  // Product after pre-summing: b·i·j·k = 120 multiply-adds, ×2, plus one flop
  // per element of the 210-element input for summing z.
  EXPECT_EQ(b.multiply_adds, 120.0);
  EXPECT_EQ(b.flops, 240.0 + 210.0);
  // The pre-summed copy of input 0 (30 elements) is live with the result (40).
  EXPECT_EQ(batch_tree.cost().workspace_bytes, 8.0 * (30 + 40));

  // A Hadamard product sums nothing: 1 flop per multiply.
  const std::vector<std::vector<std::int64_t>> h_shapes{{3, 4}, {3, 4}};
  const auto hr = test_support::refs(h_shapes);
  EXPECT_EQ(plan(Network::bind("ij,ij->ij", hr).value()).value().cost().flops, 12.0);
}

TEST(CostModelTest, CombinedScoreWeighsTimeMovesAndSize) {
  PathCost cost;
  cost.flops = 1000.0;
  cost.read_write_elements = 500.0;
  cost.max_intermediate_elements = 1024.0;  // 2^10
  EXPECT_DOUBLE_EQ(combined_score(cost, CostWeights{}), std::log2(1000.0));
  EXPECT_DOUBLE_EQ(combined_score(cost, CostWeights{.read_write = 2.0}), std::log2(2000.0));
  EXPECT_DOUBLE_EQ(combined_score(cost, CostWeights{.size = 0.5, .size_target_log2 = 6.0}), std::log2(1000.0) + 2.0);
  EXPECT_DOUBLE_EQ(combined_score(cost, CostWeights{.size = 0.5, .size_target_log2 = 12.0}), std::log2(1000.0));
  EXPECT_DOUBLE_EQ(cost.log2_max_intermediate(), 10.0);
  EXPECT_DOUBLE_EQ(PathCost{}.log10_flops(), 0.0);  // clamped at one flop
}

TEST(PlannerTest, SizeWeightTradesFlopsForSmallerIntermediates) {
  // The flop-optimal order of this network holds a 30-element intermediate;
  // with a strong size weight TreeSA prefers smaller ones at more flops.
  const std::vector<std::vector<std::int64_t>> shapes{{6, 3, 5}, {}, {3, 2}, {6, 2, 5}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("cde,,ba,cae->d", r).value();
  PlanningConfig config;
  config.determinism = Determinism::kReproducible;
  const PathCost by_flops = plan(net, PlanningPolicy{.planner = PlannerKind::kTreeSA}, config).value().cost();
  PlanningPolicy sized{.planner = PlannerKind::kTreeSA, .weights = CostWeights{.size = 10.0, .size_target_log2 = 2.0}};
  const PathCost by_size = plan(net, sized, config).value().cost();
  EXPECT_LT(by_size.max_intermediate_elements, by_flops.max_intermediate_elements);
  EXPECT_GT(by_size.flops, by_flops.flops);
}

TEST(PlannerTest, AutoResolvesAndRecordsThePlanner) {
  const auto small = test_support::random_einsum(7, 4, 5, 3, 3);
  EXPECT_EQ(plan(bind_or_die(small)).value().stats().planner, PlannerKind::kOptimal);
  const auto large = test_support::random_einsum(7, 12, 10, 3, 3);
  EXPECT_EQ(plan(bind_or_die(large)).value().stats().planner, PlannerKind::kGreedy);
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {3, 4}, {4, 5}};
  const auto r = test_support::refs(shapes);
  auto nested = plan(Network::bind("ij,(jk,kl)->il", r).value());
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested->stats().planner, PlannerKind::kNested);
  EXPECT_EQ(nested->order().to_string(), "(0,(1,2))");
}

// Note [Auto refinement]: kAuto refines an expensive greedy path with a
// TreeSA search whose budget follows from the path's cost, not the clock,
// so the result repeats exactly; cheap paths stay greedy's.
TEST(PlannerTest, AutoRefinesExpensiveGreedyPaths) {
  // A 4 x 4 torus of bond dimension 6: 16 four-index tensors.
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
  const auto bond = [](int site, int direction) {
    const int label = 2 * site + direction;  // 32 labels: A-Z, then a-f
    return static_cast<char>(label < 26 ? 'A' + label : 'a' + label - 26);
  };
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      const int site = 4 * r + c;
      if (!subscripts.empty()) subscripts += ',';
      subscripts += {bond(site, 0), bond(site, 1), bond(4 * r + (c + 3) % 4, 0), bond(4 * ((r + 3) % 4) + c, 1)};
      shapes.push_back({6, 6, 6, 6});
    }
  }
  subscripts += "->";
  const auto r = test_support::refs(shapes);
  const Network torus = Network::bind(subscripts, r).value();
  const ContractionTree greedy = plan(torus, PlanningPolicy{.planner = PlannerKind::kGreedy}).value();
  ASSERT_GT(greedy.cost().flops, 1e9);  // expensive enough to be refined
  const ContractionTree first = plan(torus).value();
  const ContractionTree second = plan(torus).value();
  EXPECT_EQ(first.stats().planner, PlannerKind::kTreeSA);
  EXPECT_LE(first.cost().flops, greedy.cost().flops * (1 + 1e-12));
  EXPECT_EQ(first.order(), second.order());  // no clock in the budget
  EXPECT_EQ(first.stats().candidates, second.stats().candidates);
  EXPECT_GT(first.stats().candidates, 0);
  EXPECT_FALSE(first.stats().stopped_by_time_budget);
  // The same torus of bond dimension 2 is cheap: greedy's path stands.
  std::vector<std::vector<std::int64_t>> small(shapes.size(), std::vector<std::int64_t>{2, 2, 2, 2});
  const auto rs = test_support::refs(small);
  EXPECT_EQ(plan(Network::bind(subscripts, rs).value()).value().stats().planner, PlannerKind::kGreedy);

  // The shared graphical model whose greedy path needs a 2^31.7-element
  // intermediate: the refined path is far cheaper and fits in memory.
  if (test_support::shared_dir().empty()) GTEST_SKIP() << "no shared instances";
  const auto instance =
      load_benchmark_instance(test_support::shared_dir() + "/bench/instances/gm_queen5_5_3.wcsp.json");
  ASSERT_TRUE(instance.ok()) << instance.status().to_string();
  const auto refs = instance->shape_refs();
  const Network queen = Network::bind(instance->format_string, refs, instance->dtype).value();
  const ContractionTree queen_greedy = plan(queen, PlanningPolicy{.planner = PlannerKind::kGreedy}).value();
  const ContractionTree queen_auto = plan(queen).value();
  EXPECT_EQ(queen_auto.stats().planner, PlannerKind::kTreeSA);
  EXPECT_LT(queen_auto.cost().flops, queen_greedy.cost().flops / 10);
  EXPECT_LT(queen_auto.cost().max_intermediate_elements, queen_greedy.cost().max_intermediate_elements / 10);
}

TEST(PlannerTest, ExplicitNestedAndLeftToRightPolicies) {
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {3, 4}, {4, 5}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("ij,jk,kl->il", r).value();
  const std::vector<std::pair<std::int64_t, std::int64_t>> path{{1, 2}, {0, 1}};
  PlanningPolicy explicit_policy{.planner = PlannerKind::kExplicitPath,
                                 .path = ContractionOrder::from_opt_einsum_path(3, path).value()};
  auto tree = plan(net, explicit_policy);
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(tree->order().to_string(), "(0,(1,2))");
  EXPECT_EQ(tree->order().to_opt_einsum_path(), path);
  EXPECT_EQ(plan(net, PlanningPolicy{.planner = PlannerKind::kLeftToRight}).value().order().to_string(), "((0,1),2)");

  auto missing = plan(net, PlanningPolicy{.planner = PlannerKind::kExplicitPath});
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(missing.status().stage(), ErrorStage::kPrepare);
  PlanningPolicy wrong_size{.planner = PlannerKind::kExplicitPath, .path = ContractionOrder::left_to_right(4)};
  auto mismatch = plan(net, wrong_size);
  EXPECT_EQ(mismatch.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("4 inputs"), std::string_view::npos);

  auto no_parentheses = plan(net, PlanningPolicy{.planner = PlannerKind::kNested});
  EXPECT_EQ(no_parentheses.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(no_parentheses.status().message().find("parenthesised"), std::string_view::npos);
  const Network nested = Network::bind("(ij,jk),kl->il", r).value();
  auto overridden = plan(nested, PlanningPolicy{.planner = PlannerKind::kGreedy});
  EXPECT_EQ(overridden.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(overridden.status().message().find("'greedy'"), std::string_view::npos);
}

TEST(PlannerTest, OptimalRefusesLargeNetworksAndBadConfig) {
  const Network net = bind_or_die(test_support::random_einsum(3, 10, 8, 2, 2));
  PlanningConfig config;
  config.optimal_max_inputs = 8;
  auto refused = plan(net, PlanningPolicy{.planner = PlannerKind::kOptimal}, config);
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("at most 8 inputs"), std::string_view::npos);
  config.optimal_max_inputs = kOptimalHardMaxInputs + 1;
  EXPECT_EQ(plan(net, {}, config).status().code(), ErrorCode::kInvalidArgument);
  PlanningConfig bad_treesa;
  bad_treesa.treesa.beta_step = 0.0;
  EXPECT_EQ(plan(net, {}, bad_treesa).status().code(), ErrorCode::kInvalidArgument);
}

TEST(PlannerTest, DeterministicForIdenticalInputs) {
  const Network net = bind_or_die(test_support::random_einsum(11, 14, 12, 3, 4, /*allow_repeats=*/false));
  PlanningConfig config;
  config.determinism = Determinism::kReproducible;
  config.seed = 42;
  config.treesa.chains = 2;
  config.treesa.sweeps_per_beta = 3;
  config.treesa.time_budget_seconds = 1e-9;  // ignored under kReproducible
  for (PlannerKind planner : {PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kTreeSA}) {
    auto first = plan(net, PlanningPolicy{.planner = planner}, config);
    auto second = plan(net, PlanningPolicy{.planner = planner}, config);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first->order(), second->order()) << to_string(planner);
    EXPECT_FALSE(first->stats().stopped_by_time_budget);
  }
  // The reproducible treesa ran every chain of its nominal schedule
  // (beta 0.01..15 in steps of 0.05: 301 levels of 3 sweeps each).
  auto tree = plan(net, PlanningPolicy{.planner = PlannerKind::kTreeSA}, config).value();
  EXPECT_EQ(tree.stats().chains, 2);
  EXPECT_EQ(tree.stats().candidates, 2 * 301 * 3 * (net.num_operands() - 1));
}

TEST(PlannerTest, TreeSABudgetsStopTheSearch) {
  const Network net = bind_or_die(test_support::random_einsum(5, 20, 16, 3, 3, /*allow_repeats=*/false));
  PlanningConfig config;
  config.treesa.max_sweeps = 7;
  config.treesa.time_budget_seconds = 0;
  auto capped = plan(net, PlanningPolicy{.planner = PlannerKind::kTreeSA}, config).value();
  EXPECT_EQ(capped.stats().candidates, 7 * 19);  // one proposal per internal node per sweep
  EXPECT_FALSE(capped.stats().stopped_by_time_budget);

  config.treesa.max_sweeps = 0;
  config.treesa.time_budget_seconds = 1e-9;  // already spent when the first sweep ends
  auto timed = plan(net, PlanningPolicy{.planner = PlannerKind::kTreeSA}, config).value();
  EXPECT_TRUE(timed.stats().stopped_by_time_budget);
  EXPECT_EQ(timed.stats().chains, 1);
  EXPECT_EQ(timed.stats().candidates, 19);  // exactly one sweep ran
}

TEST(PlannerTest, TreeSANeverWorseThanGreedy) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Network net = bind_or_die(test_support::random_einsum(seed, 16, 14, 3, 5, /*allow_repeats=*/false));
    PlanningConfig config;
    config.determinism = Determinism::kReproducible;
    config.treesa.chains = 1;
    config.treesa.sweeps_per_beta = 2;
    const double greedy = plan(net, PlanningPolicy{.planner = PlannerKind::kGreedy}).value().cost().flops;
    const double treesa = plan(net, PlanningPolicy{.planner = PlannerKind::kTreeSA}, config).value().cost().flops;
    EXPECT_LE(treesa, greedy * (1 + 1e-12));
  }
}

TEST(PlannerTest, WorkspaceLimit) {
  // ab,bc,cd->ad with a=d=64, b=c=2. Flop-optimal is a·b·c first? Both
  // orders make one 64×2 or 2×64 intermediate except ab·cd (outer product).
  const std::vector<std::vector<std::int64_t>> shapes{{64, 2}, {2, 2}, {2, 64}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("ab,bc,cd->ad", r).value();
  PlanningConfig config;
  const double needed = plan(net).value().cost().workspace_bytes;  // 64·2 + 64·64 elements
  EXPECT_EQ(needed, 8.0 * (64 * 2 + 64 * 64));
  config.workspace_limit_bytes = needed - 1;
  for (PlannerKind planner :
       {PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kTreeSA, PlannerKind::kLeftToRight}) {
    auto refused = plan(net, PlanningPolicy{.planner = planner}, config);
    ASSERT_FALSE(refused.ok()) << to_string(planner);
    EXPECT_EQ(refused.status().code(), ErrorCode::kWorkspaceLimitExceeded) << refused.status().to_string();
    EXPECT_EQ(refused.status().stage(), ErrorStage::kPrepare);
  }
  config.workspace_limit_bytes = needed;
  EXPECT_TRUE(plan(net, PlanningPolicy{.planner = PlannerKind::kOptimal}, config).ok());
}

TEST(PlannerTest, LimitSteersOptimalAndTreeSAToFeasiblePaths) {
  // Found by exhaustive search over small random networks: the flop-optimal
  // order needs 264 bytes of workspace (a 30-element intermediate), another
  // order needs only 88.
  const std::vector<std::vector<std::int64_t>> shapes{{6, 3, 5}, {}, {3, 2}, {6, 2, 5}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("cde,,ba,cae->d", r).value();
  const PathCost unconstrained = plan(net, PlanningPolicy{.planner = PlannerKind::kOptimal}).value().cost();
  EXPECT_EQ(unconstrained.workspace_bytes, 264.0);
  PlanningConfig config;
  config.workspace_limit_bytes = 88.0;
  for (PlannerKind planner : {PlannerKind::kOptimal, PlannerKind::kTreeSA}) {
    auto tree = plan(net, PlanningPolicy{.planner = planner}, config);
    ASSERT_TRUE(tree.ok()) << to_string(planner) << ": " << tree.status().to_string();
    EXPECT_LE(tree->cost().workspace_bytes, 88.0);
    EXPECT_GT(tree->cost().flops, unconstrained.flops);  // the limit costs flops
  }
}

TEST(ContractionTreeTest, SetResultOrderKeepsTheTreeCorrect) {
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3, 4}, {4, 3, 5}, {5, 2}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("ijk,kjl,lm->im", r).value();
  ContractionTree tree = plan(net, PlanningPolicy{.planner = PlannerKind::kLeftToRight}).value();
  ASSERT_EQ(net.labels_to_string(tree.steps()[0].result), "il");
  ASSERT_TRUE(tree.set_result_order(0, LabelList{3, 0}).ok());  // l, i
  EXPECT_EQ(net.labels_to_string(tree.node_labels(3)), "li");
  // The consumer's free labels follow the new order of its child.
  EXPECT_EQ(net.labels_to_string(tree.steps()[1].lhs_free), "i");
  EXPECT_EQ(net.labels_to_string(tree.steps()[1].contracted), "l");
  const auto operands = test_support::random_operands(shapes, 3);
  EXPECT_LT(test_support::max_abs_diff(test_support::execute_tree(tree, operands),
                                       test_support::brute_force_einsum(net, operands)),
            1e-12);

  const ContractionTree before = tree;
  EXPECT_EQ(tree.set_result_order(0, LabelList{0, 0}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tree.set_result_order(1, LabelList{4, 0}).code(), ErrorCode::kInvalidArgument);  // root
  EXPECT_EQ(tree.node_labels(3), before.node_labels(3));
}

TEST(ContractionTreeTest, ExplainListsEverySteps) {
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {3, 4}, {4, 5}};
  const auto r = test_support::refs(shapes);
  const ContractionTree tree = plan(Network::bind("ij,jk,kl->il", r).value()).value();
  const std::string text = tree.explain();
  EXPECT_NE(text.find("einsum ij,jk,kl->il"), std::string::npos) << text;
  EXPECT_NE(text.find("planner optimal"), std::string::npos) << text;
  EXPECT_NE(text.find("step 0:"), std::string::npos) << text;
  EXPECT_NE(text.find("step 1:"), std::string::npos) << text;
  EXPECT_NE(text.find("contract {j}"), std::string::npos) << text;

  const std::vector<std::vector<std::int64_t>> one{{3, 3}};
  const auto r1 = test_support::refs(one);
  const ContractionTree trace = plan(Network::bind("ii", r1).value()).value();
  EXPECT_NE(trace.explain().find("no step"), std::string::npos);
  EXPECT_EQ(trace.cost().flops, 3.0);
}

}  // namespace
}  // namespace tenferro::einsum
