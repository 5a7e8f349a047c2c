#include "tenferro/cpu/domains/memory_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu/domains/domain_test_support.h"
#include "cpu/domains/hwloc_topology.h"
#include "tenferro/base/huge_pages.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::cpu {
namespace {

TEST(MemoryPoolTest, SizeClassesRoundUpByAtMostAQuarter) {
  std::size_t previous = 0;
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 24); bytes = bytes * 5 / 4 + 1) {
    const std::size_t r = CpuDomainMemoryPool::rounded_size(bytes);
    ASSERT_GE(r, bytes);
    ASSERT_GE(r, 64u);
    ASSERT_EQ(r % 64, 0u);
    if (bytes > 256) {
      ASSERT_LE(r, bytes + bytes / 4) << bytes;
    }
    ASSERT_GE(r, previous);  // monotone
    previous = r;
    ASSERT_EQ(CpuDomainMemoryPool::rounded_size(r), r);  // a class size is its own class
  }
  EXPECT_EQ(CpuDomainMemoryPool::rounded_size(SIZE_MAX), 0u);
}

TEST(MemoryPoolTest, StorageRemembersItsDomainAndIsReused) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(4), std::nullopt, nullptr);
  EXPECT_EQ(pool->policy(), NumaMemoryPolicy::kFirstTouch);
  void* first_data = nullptr;
  {
    auto s = pool->allocate_storage(1000);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->allocation_domain(), pool->allocation_domain());
    EXPECT_NE((*s)->allocation_domain(), kDefaultHostAllocationDomain);
    EXPECT_EQ((*s)->affinity(), MemoryAffinity::cpu_domain(CpuDomainId(4)));
    EXPECT_TRUE((*s)->allocated_by(pool.get()));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*s)->data()) % 64, 0u);
    first_data = (*s)->data();
    EXPECT_EQ(pool->stats().outstanding_blocks, 1u);
  }
  MemoryPoolStats stats = pool->stats();
  EXPECT_EQ(stats.outstanding_blocks, 0u);
  EXPECT_EQ(stats.cached_blocks, 1u);
  auto again = pool->allocate_storage(1000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data(), first_data);  // the cached block came back
  stats = pool->stats();
  EXPECT_EQ(stats.reused, 1u);
  EXPECT_EQ(stats.allocations, 2u);
  EXPECT_EQ(stats.cached_blocks, 0u);
}

TEST(MemoryPoolTest, BuffersReturnToTheirOwnPoolWhereverTheyAreDropped) {
  const CpuTopology topo = testing::load_topology(TopologySource::synthetic("pack:2 numa:1 core:1 pu:1"));
  auto set = CpuDomainSet::create_managed(topo);
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  const CpuResourceDomain& a = *(*set)->find(CpuDomainId(1));
  const CpuResourceDomain& b = *(*set)->find(CpuDomainId(2));
  EXPECT_NE(a.memory()->allocation_domain(), b.memory()->allocation_domain());

  StorageRef output;
  ASSERT_TRUE(a.run(ParallelMode::kSequential, [&](const CpuExecutionContext& ctx) -> Status {
                 TENFERRO_ASSIGN_OR_RETURN(output, ctx.domain().memory()->allocate_storage(4096));
                 std::memset(output->data(), 1, 4096);  // first touch inside domain a
                 return ok_status();
               }).ok());
  EXPECT_EQ(output->affinity().cpu_domain_id(), CpuDomainId(1));
  // Domain b reads it (shared address space) and drops the last reference.
  ASSERT_TRUE(b.run(ParallelMode::kSequential, [&](const CpuExecutionContext&) {
                 EXPECT_EQ(static_cast<const unsigned char*>(output->data())[4095], 1);
                 output = StorageRef();
                 return ok_status();
               }).ok());
  EXPECT_EQ(a.memory()->stats().cached_blocks, 1u);
  EXPECT_EQ(a.memory()->stats().outstanding_blocks, 0u);
  EXPECT_EQ(b.memory()->stats().cached_blocks, 0u);
  EXPECT_EQ(b.memory()->stats().allocations, 0u);
}

TEST(MemoryPoolTest, NodeBoundAllocationLandsOnTheNode) {
  const CpuTopology topo = testing::load_topology(TopologySource::this_system());
  const unsigned node = topo.numa_nodes().front().os_index;
  ASSERT_TRUE(topo.hwloc()->supports_node_binding());
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), node, topo.hwloc());
  EXPECT_EQ(pool->policy(), NumaMemoryPolicy::kBindToNode);
  const std::size_t bytes = std::size_t{4} << 20;
  void* block = pool->allocate(bytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 0, bytes);
  EXPECT_EQ(topo.hwloc()->node_of(block, bytes), node);
  EXPECT_EQ(pool->stats().node_bound, 1u);
  void* small = pool->allocate(100);  // below the bind threshold: first touch
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(pool->stats().node_bound, 1u);
  pool->deallocate(small, 100);
  pool->deallocate(block, bytes);
  pool->trim();
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
  // A managed domain on this system with a node gets a node-bound pool.
  auto set = CpuDomainSet::create_managed(topo);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ((*set)->default_domain().memory()->policy(), NumaMemoryPolicy::kBindToNode);
}

// Note [Huge pages for large buffers]: a block of kHugePageAdviceBytes or
// more starts on a huge-page boundary, so all of it can be huge pages.
TEST(MemoryPoolTest, LargeBlocksStartOnAHugePage) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);
  void* block = pool->allocate(kHugePageAdviceBytes + 1);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % kHugePageBytes, 0u);
  std::memset(block, 1, kHugePageAdviceBytes + 1);
  pool->deallocate(block, kHugePageAdviceBytes + 1);
  EXPECT_EQ(pool->allocate(kHugePageAdviceBytes + 1), block);  // cached, then reused
  pool->deallocate(block, kHugePageAdviceBytes + 1);
  pool->trim();
  EXPECT_EQ(pool->stats().cached_blocks, 0u);
}

TEST(MemoryPoolTest, CacheIsBoundedAndTrimmable) {
  MemoryPoolOptions options;
  options.max_cached_bytes = 8192;
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr, options);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool->allocate(4096));
  for (void* b : blocks) pool->deallocate(b, 4096);
  MemoryPoolStats stats = pool->stats();
  EXPECT_EQ(stats.cached_bytes, 8192u);
  EXPECT_EQ(stats.cached_blocks, 2u);
  EXPECT_EQ(stats.deallocations, 8u);
  pool->trim();
  EXPECT_EQ(pool->stats().cached_blocks, 0u);
}

TEST(MemoryPoolTest, ScratchReturnsToThePool) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);
  {
    auto scratch = pool->allocate_scratch(300);
    ASSERT_TRUE(scratch.ok());
    EXPECT_EQ(scratch->size(), 300u);
    ScratchBuffer moved = std::move(scratch).value();
    EXPECT_NE(moved.data(), nullptr);
    EXPECT_EQ(pool->stats().outstanding_blocks, 1u);
  }
  EXPECT_EQ(pool->stats().outstanding_blocks, 0u);
  EXPECT_EQ(pool->stats().cached_blocks, 1u);
}

TEST(MemoryPoolTest, ExhaustionIsATypedError) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);
  EXPECT_EQ(pool->allocate(SIZE_MAX / 2), nullptr);
  EXPECT_EQ(pool->allocate_storage(SIZE_MAX / 2).status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(pool->allocate_scratch(SIZE_MAX / 2).status().code(), ErrorCode::kResourceExhausted);
  EXPECT_GE(pool->stats().failures, 2u);
  EXPECT_EQ(pool->stats().outstanding_blocks, 0u);
}

TEST(MemoryPoolTest, ConcurrentAllocationKeepsTheBooksBalanced) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);
  auto worker = [&pool](int seed) {
    for (int i = 0; i < 2000; ++i) {
      const std::size_t bytes = 64 + static_cast<std::size_t>((i * 37 + seed) % 5000);
      void* p = pool->allocate(bytes);
      ASSERT_NE(p, nullptr);
      static_cast<char*>(p)[0] = 1;
      pool->deallocate(p, bytes);
    }
  };
  std::thread t1(worker, 1);
  std::thread t2(worker, 2);
  t1.join();
  t2.join();
  const MemoryPoolStats stats = pool->stats();
  EXPECT_EQ(stats.allocations, 4000u);
  EXPECT_EQ(stats.deallocations, 4000u);
  EXPECT_EQ(stats.outstanding_blocks, 0u);
  EXPECT_EQ(stats.outstanding_bytes, 0u);
  EXPECT_GT(stats.reused, 0u);
}

// Threads allocating and freeing at once keep exact totals, freed blocks
// come back, and trim() empties the cache.
TEST(MemoryPoolTest, SmallBlocksFromManyThreadsAreCountedAndReused) {
  auto pool = CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);
  constexpr int kThreads = 4;
  constexpr int kRounds = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < kRounds; ++i) {
        void* a = pool->allocate(512 + 64 * t);
        void* b = pool->allocate(4096);
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        std::memset(a, t, 512);  // ASan/TSan: the block is this thread's
        pool->deallocate(a, 512 + 64 * t);
        pool->deallocate(b, 4096);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MemoryPoolStats stats = pool->stats();
  EXPECT_EQ(stats.allocations, 2u * kThreads * kRounds);
  EXPECT_EQ(stats.deallocations, 2u * kThreads * kRounds);
  EXPECT_EQ(stats.outstanding_blocks, 0u);
  EXPECT_EQ(stats.outstanding_bytes, 0u);
  // Each thread holds at most two blocks at a time, so all but a few
  // allocations were served from the caches.
  EXPECT_GE(stats.reused, 2u * kThreads * kRounds - 4u * kThreads * 16u);
  EXPECT_LE(stats.cached_blocks, 2u * kThreads);
  pool->trim();
  EXPECT_EQ(pool->stats().cached_blocks, 0u);
  EXPECT_EQ(pool->stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace tenferro::cpu
