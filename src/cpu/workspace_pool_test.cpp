// WorkspacePool (Note [Per-CPU workspace slots]): reuse, the byte bound, and
// many threads borrowing at once.
#include "tenferro/cpu/workspace_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

namespace tenferro::cpu {
namespace {

constexpr std::size_t kPage = 4096;

// Keeps the calling thread on the CPU it runs on for the scope, so that
// "this CPU's slot" is one slot.
class PinnedToThisCpu {
 public:
  PinnedToThisCpu() {
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  }
  ~PinnedToThisCpu() { pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

TEST(WorkspacePoolTest, ARunOnOneCpuTakesItsBufferBackFromTheSlotWithoutTheLists) {
  WorkspacePool pool("test", 1 << 20);
  const PinnedToThisCpu pin;
  std::byte* first = nullptr;
  for (int i = 0; i < 1000; ++i) {
    Result<WorkspacePool::Lease> lease = pool.acquire(i % 2 == 0 ? 3 * kPage : 100);  // smaller fits too
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    ASSERT_GE(lease->bytes().size(), 3 * kPage);
    if (first == nullptr) first = lease->bytes().data();
    EXPECT_EQ(lease->bytes().data(), first);
  }
  const WorkspacePoolStats s = pool.stats();
  EXPECT_EQ(s.allocations, 1u);
  EXPECT_EQ(s.reuses, 999u);
  EXPECT_EQ(s.slot_reuses, 999u);
  EXPECT_EQ(s.retained_bytes, 3 * kPage);
}

TEST(WorkspacePoolTest, ATooSmallBufferIsKeptAndTheSmallestFittingOneIsLent) {
  WorkspacePool pool("test", 1 << 20);
  {
    auto a = pool.acquire(kPage);
    auto b = pool.acquire(4 * kPage);
    auto c = pool.acquire(2 * kPage);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  }
  EXPECT_EQ(pool.stats().allocations, 3u);
  {
    auto big = pool.acquire(3 * kPage);  // only the 4-page buffer fits
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(big->bytes().size(), 4 * kPage);
    auto mid = pool.acquire(kPage + 1);  // 2 pages is the smallest that fits
    ASSERT_TRUE(mid.ok());
    EXPECT_EQ(mid->bytes().size(), 2 * kPage);
    auto small = pool.acquire(1);
    ASSERT_TRUE(small.ok());
    EXPECT_EQ(small->bytes().size(), kPage);
  }
  const WorkspacePoolStats s = pool.stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.reuses, 3u);
  EXPECT_EQ(s.retained_bytes, 7 * kPage);
  pool.clear();
  EXPECT_EQ(pool.stats().retained_bytes, 0u);
}

TEST(WorkspacePoolTest, BuffersBeyondTheBoundAreFreedSmallestFirst) {
  WorkspacePool pool("test", 5 * kPage);
  std::optional<Result<WorkspacePool::Lease>> a(pool.acquire(kPage));
  std::optional<Result<WorkspacePool::Lease>> b(pool.acquire(2 * kPage));
  ASSERT_TRUE(a->ok() && b->ok());
  a.reset();
  b.reset();
  EXPECT_EQ(pool.stats().retained_bytes, 3 * kPage);  // both idle, within the bound
  {
    // Note [Superseded blocks]: neither idle buffer fits, and both are
    // freed before the 4-page one is allocated.
    auto c = pool.acquire(4 * kPage);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(pool.stats().retained_bytes, 4 * kPage);
  }
  WorkspacePoolStats s = pool.stats();
  EXPECT_EQ(s.retained_bytes, 4 * kPage);
  // Two lent at once and given back over the bound (7 pages): the smaller
  // idle one is freed first, the returned one kept.
  {
    auto big = pool.acquire(4 * kPage);    // the idle 4-page buffer
    auto small = pool.acquire(3 * kPage);  // nothing idle: a new one
    ASSERT_TRUE(big.ok() && small.ok());
    EXPECT_EQ(pool.stats().retained_bytes, 7 * kPage);
    EXPECT_EQ(pool.stats().allocations, 4u);
  }
  EXPECT_EQ(pool.stats().retained_bytes, 4 * kPage);
  {
    auto again = pool.acquire(3 * kPage);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->bytes().size(), 4 * kPage);
  }
  EXPECT_EQ(pool.stats().allocations, 4u);
  // One lease larger than the bound: the idle buffer is freed first, then
  // the returned one, still over on its own.
  {
    auto x = pool.acquire(8 * kPage);
    ASSERT_TRUE(x.ok());
  }
  s = pool.stats();
  EXPECT_EQ(s.retained_bytes, 0u);
  EXPECT_EQ(s.allocations, 5u);
}

// Note [Superseded blocks]: requests of ever-growing sizes, one at a time,
// keep one buffer (the largest), not one per size.
TEST(WorkspacePoolTest, GrowingRequestsKeepOnlyTheLargestBuffer) {
  WorkspacePool pool("test", 1000 * kPage);
  for (std::size_t pages = 1; pages <= 20; ++pages) {
    auto lease = pool.acquire(pages * kPage);
    ASSERT_TRUE(lease.ok());
  }
  EXPECT_EQ(pool.stats().retained_bytes, 20 * kPage);
  EXPECT_EQ(pool.stats().allocations, 20u);
  for (std::size_t pages = 20; pages >= 1; --pages) {  // shrinking: all served by the one buffer
    auto lease = pool.acquire(pages * kPage);
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(lease->bytes().size(), 20 * kPage);
  }
  EXPECT_EQ(pool.stats().allocations, 20u);
  EXPECT_EQ(pool.stats().retained_bytes, 20 * kPage);
}

TEST(WorkspacePoolTest, ManyThreadsNeverShareABufferAndReuseThem) {
  // Each thread writes its own pattern over the whole lease and checks it is
  // intact before giving it back: two leases of one buffer would overwrite
  // each other. One size throughout: the pool then never holds more buffers
  // than leases out at once plus those being given back (2 per thread).
  constexpr int kThreads = 8;
  constexpr int kRounds = 20000;
  WorkspacePool pool("test", 64 << 20);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &failures, t] {
      for (int r = 0; r < kRounds; ++r) {
        Result<WorkspacePool::Lease> lease = pool.acquire(r % 3 == 0 ? kPage : 100);
        if (!lease.ok()) {
          failures.fetch_add(1);
          return;
        }
        const std::span<std::byte> bytes = lease->bytes();
        const auto mark = static_cast<std::byte>(t + 1);
        std::memset(bytes.data(), static_cast<int>(mark), 256);
        std::this_thread::yield();
        for (std::size_t i = 0; i < 256; ++i) {
          if (bytes[i] != mark) {
            failures.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const WorkspacePoolStats s = pool.stats();
  EXPECT_LE(s.allocations, 2u * kThreads);
  EXPECT_EQ(s.allocations + s.reuses, std::uint64_t{kThreads} * kRounds);
  EXPECT_EQ(s.retained_bytes, s.allocations * kPage);
}

}  // namespace
}  // namespace tenferro::cpu
