// The two capability axes, each tested on its own, then combined with real
// domains (Note [Thread count and placement]).
#include "tenferro/cpu/domains/provider_placement.h"

#include <gtest/gtest.h>

#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::cpu {
namespace {

DomainPlacementFacts strict_half() {
  return {CpuDomainId(1), CpuSet::range(0, 3), 4, CpuPlacementMode::kStrict, /*covers_allowed_cpus=*/false};
}

ProviderCapability cap(ThreadCountControl count, PlacementControl placement, std::string detail = "p") {
  return ProviderCapability{count, placement, std::move(detail)};
}

// Thread-count axis: placement held fixed at engine workers (always exact).
TEST(ProviderPlacementTest, ThreadCountAxis) {
  const DomainPlacementFacts d = strict_half();
  const auto seq =
      validate_provider_placement(d, cap(ThreadCountControl::kSequential, PlacementControl::kEngineWorkers), 4);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(seq->threads, 1);  // a budget is an upper bound: one thread satisfies it
  EXPECT_TRUE(seq->runs_inline);

  const auto clamp =
      validate_provider_placement(d, cap(ThreadCountControl::kBinaryClampToOne, PlacementControl::kEngineWorkers), 4);
  ASSERT_TRUE(clamp.ok());
  EXPECT_EQ(clamp->threads, 1);

  const auto per_call =
      validate_provider_placement(d, cap(ThreadCountControl::kPerCall, PlacementControl::kEngineWorkers), 3);
  ASSERT_TRUE(per_call.ok());
  EXPECT_EQ(per_call->threads, 3);
  EXPECT_FALSE(per_call->runs_inline);
  EXPECT_TRUE(per_call->placement_exact);

  // Uncontrolled fails every strict bundle, budget one included.
  for (int budget : {1, 2, 4}) {
    const auto uncontrolled = validate_provider_placement(
        d, cap(ThreadCountControl::kGlobalOrUncontrolled, PlacementControl::kEngineWorkers, "OpenBLAS pthread"),
        budget);
    ASSERT_FALSE(uncontrolled.ok());
    EXPECT_EQ(uncontrolled.status().code(), ErrorCode::kPlacementError);
    EXPECT_EQ(uncontrolled.status().stage(), ErrorStage::kPrepare);
    EXPECT_NE(uncontrolled.status().message().find("OpenBLAS pthread"), std::string_view::npos);
  }
  // ... and is usable only under the process-wide exclusive policy.
  const auto exclusive =
      validate_provider_placement(d, cap(ThreadCountControl::kGlobalOrUncontrolled, PlacementControl::kExternalWorkers),
                                  2, ProviderThreadingPolicy::kProviderDefaultExclusive);
  ASSERT_TRUE(exclusive.ok());
  EXPECT_TRUE(exclusive->requires_process_exclusive);
  EXPECT_FALSE(exclusive->placement_exact);
  EXPECT_NE(exclusive->explanation.find("process-wide exclusive permit"), std::string::npos);
}

// Placement axis: thread count held fixed at per-call (count-controlled).
TEST(ProviderPlacementTest, PlacementAxis) {
  const ProviderCapability blis = cap(ThreadCountControl::kPerCall, PlacementControl::kExternalWorkers, "BLIS rntm_t");
  DomainPlacementFacts d = strict_half();
  // Count-controlled external BLAS with budget > 1 in a strict partial domain: typed placement error.
  const auto strict = validate_provider_placement(d, blis, 2);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), ErrorCode::kPlacementError);
  EXPECT_NE(strict.status().message().find("strict placement on CPUs 0-3"), std::string_view::npos);
  // Budget one runs inline on the pinned domain thread: both axes hold.
  const auto one = validate_provider_placement(d, blis, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->runs_inline);
  EXPECT_TRUE(one->placement_exact);
  EXPECT_EQ(one->threads, 1);
  // The whole allowed set: nothing to escape to.
  d.covers_allowed_cpus = true;
  const auto whole = validate_provider_placement(d, blis, 4);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->placement_exact);
  EXPECT_EQ(whole->threads, 4);
  // Advisory placement: allowed, and diagnostics say it is not enforced.
  d.covers_allowed_cpus = false;
  d.placement = CpuPlacementMode::kAdvisory;
  const auto advisory = validate_provider_placement(d, blis, 4);
  ASSERT_TRUE(advisory.ok());
  EXPECT_FALSE(advisory->placement_exact);
  EXPECT_NE(advisory->explanation.find("placement is advisory"), std::string::npos);
  // Engine workers and the calling thread are exact in any domain.
  d.placement = CpuPlacementMode::kStrict;
  EXPECT_TRUE(validate_provider_placement(d, cap(ThreadCountControl::kPerCall, PlacementControl::kEngineWorkers), 4)
                  ->placement_exact);
  const auto calling =
      validate_provider_placement(d, cap(ThreadCountControl::kPerCall, PlacementControl::kCallingThread), 4);
  ASSERT_TRUE(calling.ok());
  EXPECT_EQ(calling->threads, 1);
}

TEST(ProviderPlacementTest, BudgetOutsideTheDomainIsInvalid) {
  const DomainPlacementFacts d = strict_half();
  const ProviderCapability native = cap(ThreadCountControl::kPerCall, PlacementControl::kEngineWorkers);
  EXPECT_EQ(validate_provider_placement(d, native, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(validate_provider_placement(d, native, 5).status().code(), ErrorCode::kInvalidArgument);
}

TEST(ProviderPlacementTest, FactsComeFromTheDomain) {
  auto topo = CpuTopology::discover(TopologySource::synthetic("pack:2 numa:1 core:2 pu:1"));
  ASSERT_TRUE(topo.ok());
  const CpuDomainSpec specs[] = {{CpuDomainId(1), CpuSet{0, 1}, 2, std::nullopt, CpuPlacementMode::kStrict},
                                 {CpuDomainId(2), CpuSet{2, 3}, 2, std::nullopt, CpuPlacementMode::kAdvisory}};
  auto set = CpuDomainSet::create_managed(*topo, specs);
  ASSERT_TRUE(set.ok());
  const ProviderCapability blis = cap(ThreadCountControl::kPerCall, PlacementControl::kExternalWorkers);
  EXPECT_EQ(validate_provider_placement(placement_facts(*(*set)->find(CpuDomainId(1))), blis, 2).status().code(),
            ErrorCode::kPlacementError);
  EXPECT_TRUE(validate_provider_placement(placement_facts(*(*set)->find(CpuDomainId(2))), blis, 2).ok());

  const CpuDomainSpec whole[] = {{CpuDomainId(1), CpuSet::range(0, 3)}};
  auto whole_set = CpuDomainSet::create_managed(*topo, whole);
  ASSERT_TRUE(whole_set.ok());
  const DomainPlacementFacts facts = placement_facts((*whole_set)->default_domain());
  EXPECT_TRUE(facts.covers_allowed_cpus);
  EXPECT_EQ(facts.thread_budget, 4);
  EXPECT_TRUE(validate_provider_placement(facts, blis, 4).ok());
}

}  // namespace
}  // namespace tenferro::cpu
