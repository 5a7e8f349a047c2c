#include "tenferro/base/ids.h"

#include <gtest/gtest.h>

#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace tenferro {
namespace {

// Ids of different kinds cannot be mixed up: no conversion in either direction
// and no implicit construction from integers.
static_assert(!std::is_convertible_v<EngineId, DeviceId>);
static_assert(!std::is_convertible_v<DeviceId, EngineId>);
static_assert(!std::is_constructible_v<RuntimeId, StorageDomainId>);
static_assert(!std::is_convertible_v<std::uint64_t, CpuDomainId>);
static_assert(!std::is_convertible_v<AllocationDomainId, StorageDomainId>);
static_assert(!std::is_convertible_v<EventDomainId, std::uint64_t>);
static_assert(std::is_trivially_copyable_v<RuntimeId>);
static_assert(sizeof(EngineId) == 8);

template <class A, class B>
concept Comparable = requires(A a, B b) {
  a == b;
};
static_assert(Comparable<EngineId, EngineId>);
static_assert(!Comparable<EngineId, DeviceId>);

TEST(IdsTest, DefaultIsInvalidAndOrderingFollowsValue) {
  EXPECT_FALSE(EngineId().valid());
  EXPECT_TRUE(EngineId(3).valid());
  EXPECT_LT(CpuDomainId(1), CpuDomainId(2));
  EXPECT_EQ(DeviceId(5), DeviceId(5));
  std::unordered_set<EngineId> set{EngineId(1), EngineId(2), EngineId(1)};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(fmt::format("{}", RuntimeId(77)), "77");
}

TEST(IdsTest, UniqueIdsDoNotCollideAcrossThreads) {
  constexpr int kPerThread = 10000;
  std::vector<std::vector<std::uint64_t>> seen(4);
  std::vector<std::thread> threads;
  for (auto& out : seen) {
    threads.emplace_back([&out] {
      for (int i = 0; i < kPerThread; ++i) out.push_back(next_unique_id());
    });
  }
  for (auto& t : threads) t.join();
  std::unordered_set<std::uint64_t> all;
  for (const auto& out : seen)
    for (std::uint64_t v : out) {
      EXPECT_GT(v, kAdoptedHostAllocationDomain.value());
      all.insert(v);
    }
  EXPECT_EQ(all.size(), 4u * kPerThread);
}

}  // namespace
}  // namespace tenferro
