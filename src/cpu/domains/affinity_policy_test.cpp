#include "tenferro/cpu/domains/affinity_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace tenferro::cpu {
namespace {

CpuAffinityInput on(std::uint64_t domain, std::uint64_t bytes) {
  return {MemoryAffinity::cpu_domain(CpuDomainId(domain)), bytes};
}
CpuAffinityInput nowhere(std::uint64_t bytes) { return {MemoryAffinity(), bytes}; }

constexpr auto kDominant = CpuAffinityPolicy::kDominantInputBytes;
constexpr auto kSingle = CpuAffinityPolicy::kRequireSingleDomain;
const CpuDomainId kDefault(9);

TEST(AffinityPolicyTest, DominantInputBytesWins) {
  const CpuAffinityInput inputs[] = {on(1, 100), on(2, 300), on(1, 150), nowhere(10000)};
  auto d = resolve_cpu_affinity(inputs, std::nullopt, kDominant, kDefault);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->domain, CpuDomainId(2));  // 300 > 250; the 10000 bytes without affinity do not vote
  EXPECT_EQ(d->reason, CpuAffinityReason::kDominantInputBytes);
  EXPECT_EQ(d->domain_bytes, 300u);
  EXPECT_EQ(d->voting_bytes, 550u);
  EXPECT_EQ(d->voting_domains, 2);
  EXPECT_EQ(d->explain(), "CPU domain 2: most input bytes (300 of 550 input bytes from 2 domains)");
}

TEST(AffinityPolicyTest, TiesGoToTheSmallerDomainId) {
  const CpuAffinityInput inputs[] = {on(5, 64), on(3, 64), on(7, 10)};
  auto d = resolve_cpu_affinity(inputs, std::nullopt, kDominant, kDefault);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->domain, CpuDomainId(3));
  EXPECT_EQ(d->reason, CpuAffinityReason::kTieBrokenById);
  // Order of inputs does not matter.
  const CpuAffinityInput reversed[] = {on(7, 10), on(3, 64), on(5, 64)};
  EXPECT_EQ(resolve_cpu_affinity(reversed, std::nullopt, kDominant, kDefault)->domain, CpuDomainId(3));
}

TEST(AffinityPolicyTest, ExplicitPlacementWinsOverEverything) {
  const CpuAffinityInput inputs[] = {on(1, 1000), on(2, 1)};
  for (CpuAffinityPolicy policy : {kDominant, kSingle}) {
    auto d = resolve_cpu_affinity(inputs, CpuDomainId(2), policy, kDefault);
    ASSERT_TRUE(d.ok()) << to_string(policy);
    EXPECT_EQ(d->domain, CpuDomainId(2));
    EXPECT_EQ(d->reason, CpuAffinityReason::kExplicitPlacement);
    EXPECT_EQ(d->domain_bytes, 1u);
    EXPECT_EQ(d->explain(), "CPU domain 2: explicit placement");
  }
}

TEST(AffinityPolicyTest, RuntimeDefaultWhenNoInputVotes) {
  const CpuAffinityInput inputs[] = {nowhere(8), nowhere(16)};
  auto d = resolve_cpu_affinity(inputs, std::nullopt, kSingle, kDefault);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->domain, kDefault);
  EXPECT_EQ(d->reason, CpuAffinityReason::kRuntimeDefault);
  EXPECT_EQ(resolve_cpu_affinity({}, std::nullopt, kDominant, kDefault)->domain, kDefault);
  EXPECT_EQ(resolve_cpu_affinity({}, std::nullopt, kDominant, CpuDomainId()).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(AffinityPolicyTest, RequireSingleDomainIsAnOptInError) {
  const CpuAffinityInput mixed[] = {on(1, 800), on(2, 64), nowhere(5)};
  auto d = resolve_cpu_affinity(mixed, std::nullopt, kSingle, kDefault);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kPlacementError);
  EXPECT_EQ(d.status().stage(), ErrorStage::kPrepare);
  EXPECT_NE(d.status().message().find("found domains 1 (800 bytes), 2 (64 bytes)"), std::string_view::npos)
      << d.status().message();
  const CpuAffinityInput single[] = {on(4, 8), nowhere(5), on(4, 8)};
  auto ok = resolve_cpu_affinity(single, std::nullopt, kSingle, kDefault);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->domain, CpuDomainId(4));
  EXPECT_EQ(ok->reason, CpuAffinityReason::kSingleInputDomain);
  // The default policy accepts the same mixed inputs.
  EXPECT_EQ(resolve_cpu_affinity(mixed, std::nullopt, kDominant, kDefault)->domain, CpuDomainId(1));
}

TEST(AffinityPolicyTest, DeviceInputsAreAPlacementError) {
  const CpuAffinityInput inputs[] = {on(1, 8), {MemoryAffinity::device(DeviceId(3)), 8}};
  auto d = resolve_cpu_affinity(inputs, CpuDomainId(1), kDominant, kDefault);
  EXPECT_EQ(d.status().code(), ErrorCode::kPlacementError);
  EXPECT_NE(d.status().message().find("device 3"), std::string_view::npos);
}

TEST(AffinityPolicyTest, ManyDomainsStillResolve) {
  std::vector<CpuAffinityInput> inputs;
  for (std::uint64_t id = 1; id <= 20; ++id) inputs.push_back(on(id, id == 13 ? 1000 : id));
  auto d = resolve_cpu_affinity(inputs, std::nullopt, kDominant, kDefault);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->domain, CpuDomainId(13));
  EXPECT_EQ(d->voting_domains, 20);
}

}  // namespace
}  // namespace tenferro::cpu
