// The engine's plan cache: keys (payload, dtype, shapes, determinism),
// hits and misses, LRU eviction by entries and bytes, clear, and the
// changing-shape behaviour of a TCI-like sequence through the executor
// (planning once per new shape, hits on repeats).
#include <gtest/gtest.h>

#include "engine_test_support.h"

namespace tenferro::einsum {
namespace {

using namespace test_support;  // NOLINT(google-build-using-namespace): test helpers

std::shared_ptr<const ExecutionPlan> make_plan(const std::string& subscripts,
                                               const std::vector<std::vector<std::int64_t>>& shapes) {
  Result<Network> net = Network::bind(subscripts, refs(shapes));
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  Result<ContractionTree> tree = plan(*net);
  EXPECT_TRUE(tree.ok());
  Result<std::shared_ptr<const ExecutionPlan>> p = ExecutionPlan::compile(*tree);
  EXPECT_TRUE(p.ok());
  return *p;
}

struct Key {
  std::shared_ptr<const EinsumOp> op;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<IntArrayRef> shape_refs;
  DType dtype = DType::kFloat64;
  Determinism determinism = Determinism::kFast;

  Key(const std::string& subscripts, std::vector<std::vector<std::int64_t>> s,
      std::optional<PlanningPolicy> policy = std::nullopt)
      : op(*EinsumOp::create(subscripts, std::move(policy))), shapes(std::move(s)) {
    for (const auto& x : shapes) shape_refs.emplace_back(x);
  }
  EinsumPlanKey view() const { return EinsumPlanKey{op.get(), dtype, shape_refs, determinism}; }
};

TEST(EinsumPlanCache, HitsMissesAndKeyFields) {
  EinsumPlanCache cache;
  Key a("ij,jk->ik", {{2, 3}, {3, 4}});
  EXPECT_EQ(cache.find(a.view()), nullptr);
  auto plan = make_plan("ij,jk->ik", a.shapes);
  EXPECT_EQ(cache.insert(a.view(), plan), plan);
  EXPECT_EQ(cache.find(a.view()), plan);

  // An equal payload from another op object hits.
  Key same("ij,jk->ik", {{2, 3}, {3, 4}});
  EXPECT_EQ(cache.find(same.view()), plan);
  // Each key field separates entries.
  Key other_shape("ij,jk->ik", {{2, 3}, {3, 5}});
  Key other_rank("ij,jk->ik", {{2, 3}, {3, 4}});
  other_rank.shapes = {{2, 3, 1}, {3, 4}};
  other_rank.shape_refs = {IntArrayRef(other_rank.shapes[0]), IntArrayRef(other_rank.shapes[1])};
  Key other_subscripts("ij,jk->ki", {{2, 3}, {3, 4}});
  PlanningPolicy greedy;
  greedy.planner = PlannerKind::kGreedy;
  Key other_policy("ij,jk->ik", {{2, 3}, {3, 4}}, greedy);
  Key other_dtype("ij,jk->ik", {{2, 3}, {3, 4}});
  other_dtype.dtype = DType::kFloat32;
  Key other_determinism("ij,jk->ik", {{2, 3}, {3, 4}});
  other_determinism.determinism = Determinism::kReproducible;
  for (const Key* k : {&other_shape, &other_rank, &other_subscripts, &other_policy, &other_dtype, &other_determinism})
    EXPECT_EQ(cache.find(k->view()), nullptr);
  const EinsumPlanCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 7u);
  EXPECT_EQ(s.insertions, 1u);
  EXPECT_EQ(s.bytes, plan->retained_bytes());
  const runtime::CacheUsage usage = cache.usage();
  EXPECT_EQ(usage.entries, 1u);
  EXPECT_EQ(usage.hits, 2u);
}

TEST(EinsumPlanCache, InsertKeepsTheFirstPlanForAKey) {
  EinsumPlanCache cache;
  Key a("ij,jk->ik", {{2, 3}, {3, 4}});
  auto first = make_plan("ij,jk->ik", a.shapes);
  auto second = make_plan("ij,jk->ik", a.shapes);
  EXPECT_EQ(cache.insert(a.view(), first), first);
  EXPECT_EQ(cache.insert(a.view(), second), first);  // another thread planned it first
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(EinsumPlanCache, EvictsLeastRecentlyUsedByEntries) {
  EinsumPlanCache cache(EinsumPlanCacheLimits{3, std::size_t{1} << 30});
  std::vector<Key> keys;
  for (int n = 1; n <= 4; ++n) keys.emplace_back("ij,jk->ik", std::vector<std::vector<std::int64_t>>{{n, 2}, {2, 3}});
  for (int i = 0; i < 3; ++i)
    cache.insert(keys[static_cast<std::size_t>(i)].view(),
                 make_plan("ij,jk->ik", keys[static_cast<std::size_t>(i)].shapes));
  ASSERT_NE(cache.find(keys[0].view()), nullptr);  // 0 is now the most recent; 1 the oldest
  cache.insert(keys[3].view(), make_plan("ij,jk->ik", keys[3].shapes));
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.find(keys[1].view()), nullptr);
  EXPECT_NE(cache.find(keys[0].view()), nullptr);
  EXPECT_NE(cache.find(keys[2].view()), nullptr);
  EXPECT_NE(cache.find(keys[3].view()), nullptr);
}

TEST(EinsumPlanCache, EvictsByBytesAndRefusesOversizedPlans) {
  Key a("ij,jk->ik", {{2, 3}, {3, 4}});
  Key b("ij,jk->ik", {{5, 3}, {3, 4}});
  auto pa = make_plan("ij,jk->ik", a.shapes);
  auto pb = make_plan("ij,jk->ik", b.shapes);
  EinsumPlanCache cache(EinsumPlanCacheLimits{100, pa->retained_bytes() + pb->retained_bytes() / 2});
  cache.insert(a.view(), pa);
  cache.insert(b.view(), pb);  // a goes
  EXPECT_EQ(cache.find(a.view()), nullptr);
  EXPECT_EQ(cache.find(b.view()), pb);
  EXPECT_LE(cache.stats().bytes, cache.limits().max_bytes);
  EinsumPlanCache tiny(EinsumPlanCacheLimits{100, 1});
  EXPECT_EQ(tiny.insert(a.view(), pa), pa);  // returned, not retained
  EXPECT_EQ(tiny.stats().entries, 0u);
}

TEST(EinsumPlanCache, ClearDropsEntriesAndManyKeysProbeCorrectly) {
  EinsumPlanCache cache(EinsumPlanCacheLimits{64, std::size_t{1} << 30});
  std::vector<Key> keys;
  for (int n = 1; n <= 200; ++n) keys.emplace_back("i,i->i", std::vector<std::vector<std::int64_t>>{{n}, {n}});
  for (const Key& k : keys) cache.insert(k.view(), make_plan("i,i->i", k.shapes));
  EXPECT_EQ(cache.stats().entries, 64u);
  // The 64 most recent survive, every one still findable after deletions
  // reshuffled the probe sequences.
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(cache.find(keys[i].view()) != nullptr, i >= 136) << i;
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
  EXPECT_EQ(cache.find(keys.back().view()), nullptr);
  cache.insert(keys[0].view(), make_plan("i,i->i", keys[0].shapes));
  EXPECT_NE(cache.find(keys[0].view()), nullptr);
}

// The phase 6 changing-shape gate, on the executor: a TCI-like sequence of
// small einsums whose shapes change every call plans once per distinct
// shape and hits on every repeat.
TEST(EinsumPlanCache, ChangingShapeSequencePlansOncePerShape) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("aib,bjc,ckd->aijkd");
  ASSERT_TRUE(op.ok());
  // Bond dimensions grow then shrink, as in a TCI sweep.
  const std::vector<std::int64_t> bonds = {1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1};
  int calls = 0;
  for (int sweep = 0; sweep < 3; ++sweep) {
    for (std::size_t s = 0; s + 2 < bonds.size(); ++s) {
      const std::int64_t a = bonds[s], b = bonds[s + 1], c = bonds[s + 2];
      const std::vector<std::vector<std::int64_t>> shapes = {{a, 2, b}, {b, 2, c}, {c, 2, a}};
      const std::vector<Dense> d = random_operands(shapes, s + 1);
      Result<Tensor> out = executor->einsum(**op, to_tensors(d), seq);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      Result<Network> net = Network::bind("aib,bjc,ckd->aijkd", refs(shapes));
      EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(*net, d)), 1e-12);
      ++calls;
      if (sweep == 0) {
        // First sweep: every shape is new.
        EXPECT_EQ(executor->metrics().plans_built, static_cast<std::uint64_t>(calls));
      }
    }
  }
  const CpuEinsumMetrics m = executor->metrics();
  const std::uint64_t distinct = bonds.size() - 2;
  EXPECT_EQ(m.plans_built, distinct);
  EXPECT_EQ(m.cache.misses, distinct);
  EXPECT_EQ(m.cache.hits, static_cast<std::uint64_t>(calls) - distinct);
  EXPECT_EQ(m.cache.entries, distinct);
}

TEST(EinsumPlanCache, ExecutorClearForgetsPlans) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk->ik");
  const std::vector<Tensor> inputs = to_tensors(random_operands({{2, 3}, {3, 4}}, 1));
  ASSERT_TRUE(executor->einsum(**op, inputs, seq).ok());
  executor->clear_caches();
  EXPECT_EQ(executor->metrics().cache.entries, 0u);
  ASSERT_TRUE(executor->einsum(**op, inputs, seq).ok());
  EXPECT_EQ(executor->metrics().plans_built, 2u);
}

}  // namespace
}  // namespace tenferro::einsum
