// ShardedCounters (Note [Sharded counters]): exact counts from many
// threads, each copy in its own cache-line block.
#include "tenferro/base/sharded_counters.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace tenferro {
namespace {

TEST(ShardedCountersTest, ConcurrentAddsFromManyThreadsCountExactly) {
  ShardedCounters<3> counters;
  constexpr int kThreads = 8;
  constexpr std::int64_t kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters, t] {
      for (std::int64_t i = 0; i < kAdds; ++i) {
        const auto local = counters.local();
        local.add(0, 1);
        local.add(1, t);
        local.add(2, 0);  // zeros are skipped, and count nothing
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counters.load(0), kThreads * kAdds);
  EXPECT_EQ(counters.load(1), kAdds * (kThreads * (kThreads - 1) / 2));
  EXPECT_EQ(counters.load(2), 0);
  counters.add(2, -5);
  EXPECT_EQ(counters.load(2), -5);
}

TEST(ShardedCountersTest, EachCopyHasItsOwnCacheLines) {
  // Two CPUs' copies never share a 128-byte block (the unit the adjacent-
  // line prefetcher moves), so concurrent adds write different lines.
  EXPECT_EQ(alignof(ShardedCounters<1>), 128u);
  EXPECT_EQ(sizeof(ShardedCounters<1>), 128u * ShardedCounters<1>::kShards);
  EXPECT_EQ(sizeof(ShardedCounters<17>), 256u * ShardedCounters<17>::kShards);
}

}  // namespace
}  // namespace tenferro
