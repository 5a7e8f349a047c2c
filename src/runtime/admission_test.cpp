#include "tenferro/runtime/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tenferro::runtime {
namespace {

constexpr ResourceKey kMem{ResourceKind::kMemoryBytes, 1};
constexpr ResourceKey kCpu0{ResourceKind::kCpuThreads, 0};
constexpr ResourceKey kCpu1{ResourceKind::kCpuThreads, 1};

// Spins (yielding) until `pred` holds; the tests only wait for states the
// arbiter is guaranteed to reach.
template <class Pred>
void wait_until(Pred pred) {
  while (!pred()) std::this_thread::yield();
}

TEST(AdmissionTest, CanonicalOrder) {
  const ResourceAmount ok[] = {{kMem, 1}, {kCpu0, 1}, {kCpu1, 1}};
  const ResourceAmount unsorted[] = {{kCpu1, 1}, {kCpu0, 1}};
  const ResourceAmount duplicate[] = {{kCpu0, 1}, {kCpu0, 1}};
  EXPECT_TRUE(is_canonical_request(ok));
  EXPECT_FALSE(is_canonical_request(unsorted));
  EXPECT_FALSE(is_canonical_request(duplicate));
}

TEST(AdmissionTest, GrantsAllOrNothing) {
  FifoResourceArbiter arbiter({{kCpu0, 2}, {kCpu1, 1}});
  const ResourceAmount both[] = {{kCpu0, 1}, {kCpu1, 1}};
  const ResourceAmount cpu1[] = {{kCpu1, 1}};
  ASSERT_TRUE(arbiter.try_acquire(cpu1));
  // cpu1 is exhausted: the pair must not take cpu0 either.
  EXPECT_FALSE(arbiter.try_acquire(both));
  EXPECT_EQ(arbiter.available(kCpu0), 2u);
  arbiter.release(cpu1);
  EXPECT_TRUE(arbiter.try_acquire(both));
  EXPECT_EQ(arbiter.available(kCpu0), 1u);
  EXPECT_EQ(arbiter.available(kCpu1), 0u);
  arbiter.release(both);
  EXPECT_EQ(arbiter.available(kCpu1), 1u);
  // Unaccounted resources are unlimited.
  const ResourceAmount other[] = {{ResourceKey{ResourceKind::kDeviceStreams, 9}, 1000}};
  EXPECT_TRUE(arbiter.try_acquire(other));
  EXPECT_EQ(arbiter.capacity(other[0].key), std::nullopt);
}

TEST(AdmissionTest, UnaccountedRequestsBypassTheAccounts) {
  // Note [Unaccounted requests]: granted at once even while an accounted
  // request waits, and not counted as grants of the accounts.
  FifoResourceArbiter arbiter({{kCpu0, 1}});
  const ResourceAmount cpu0[] = {{kCpu0, 1}};
  const ResourceAmount other[] = {{kMem, 1u << 30}, {kCpu1, 64}};
  ASSERT_TRUE(arbiter.try_acquire(cpu0));
  EXPECT_EQ(arbiter.grants(), 1u);
  std::thread waiter([&] {
    EXPECT_TRUE(arbiter.acquire(cpu0, nullptr).ok());
    arbiter.release(cpu0);
  });
  wait_until([&] { return arbiter.waiting() == 1; });
  EXPECT_TRUE(arbiter.try_acquire(other));
  EXPECT_TRUE(arbiter.acquire(other, nullptr).ok());
  arbiter.release(other);
  arbiter.release(other);
  EXPECT_EQ(arbiter.grants(), 1u);
  EXPECT_EQ(arbiter.waiting(), 1u);
  arbiter.release(cpu0);
  waiter.join();
  EXPECT_EQ(arbiter.grants(), 2u);
  EXPECT_EQ(arbiter.available(kCpu0), 1u);

  FifoResourceArbiter unlimited({});
  EXPECT_TRUE(unlimited.try_acquire(cpu0));
  EXPECT_TRUE(unlimited.acquire(cpu0, nullptr).ok());
  unlimited.release(cpu0);
  unlimited.release(cpu0);
  EXPECT_EQ(unlimited.grants(), 0u);
}

TEST(AdmissionTest, ExclusivityTokensAreAlwaysExclusive) {
  // Note [Unaccounted requests]: a token is accounted with capacity 1 even
  // when no capacity lists it, in an arbiter with or without capacities.
  constexpr ResourceKey kToken{ResourceKind::kExclusive, 5}, kOtherToken{ResourceKind::kExclusive, 6};
  for (FifoResourceArbiter* arbiter : {new FifoResourceArbiter({}), new FifoResourceArbiter({{kCpu0, 4}})}) {
    const std::unique_ptr<FifoResourceArbiter> owned(arbiter);
    EXPECT_EQ(arbiter->capacity(kToken), 1u);
    EXPECT_EQ(arbiter->available(kToken), 1u);
    const ResourceAmount token[] = {{kCpu0, 1}, {kToken, 1}};
    const ResourceAmount other[] = {{kOtherToken, 1}};
    ASSERT_TRUE(arbiter->try_acquire(token));
    EXPECT_FALSE(arbiter->try_acquire(token)) << "one holder at a time";
    EXPECT_TRUE(arbiter->try_acquire(other)) << "tokens are independent";
    EXPECT_EQ(arbiter->available(kToken), 0u);
    // A waiter is granted the token when it is released.
    std::atomic<int> holders{1}, most{1};
    std::thread waiter([&] {
      EXPECT_TRUE(arbiter->acquire(token, nullptr).ok());
      most = std::max(most.load(), ++holders);
      --holders;
      arbiter->release(token);
    });
    wait_until([&] { return arbiter->waiting() == 1; });
    --holders;
    arbiter->release(token);
    waiter.join();
    arbiter->release(other);
    EXPECT_EQ(most.load(), 1);
    EXPECT_EQ(arbiter->available(kToken), 1u);
    const ResourceAmount two[] = {{kToken, 2}};
    EXPECT_EQ(arbiter->acquire(two, nullptr).code(), ErrorCode::kResourceExhausted);
  }
}

TEST(AdmissionTest, OversizedRequestFailsImmediately) {
  FifoResourceArbiter arbiter({{kMem, 100}});
  const ResourceAmount big[] = {{kMem, 101}};
  Status s = arbiter.acquire(big, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(arbiter.waiting(), 0u);
}

TEST(AdmissionTest, QueuedRequestHoldsNothing) {
  FifoResourceArbiter arbiter({{kCpu0, 1}, {kCpu1, 1}});
  const ResourceAmount cpu1[] = {{kCpu1, 1}};
  const ResourceAmount both[] = {{kCpu0, 1}, {kCpu1, 1}};
  const ResourceAmount cpu0[] = {{kCpu0, 1}};
  ASSERT_TRUE(arbiter.try_acquire(cpu1));
  std::thread waiter([&] { EXPECT_TRUE(arbiter.acquire(both, nullptr).ok()); });
  wait_until([&] { return arbiter.waiting() == 1; });
  // While the pair waits for cpu1 it holds nothing: cpu0 is still free.
  EXPECT_EQ(arbiter.available(kCpu0), 1u);
  // ...but a later request for cpu0 queues behind it (FIFO on cpu0).
  EXPECT_FALSE(arbiter.try_acquire(cpu0));
  arbiter.release(cpu1);
  waiter.join();
  EXPECT_EQ(arbiter.available(kCpu0), 0u);
  EXPECT_EQ(arbiter.available(kCpu1), 0u);
  arbiter.release(both);
}

TEST(AdmissionTest, FifoPreventsStarvationOfLargeRequests) {
  // A large request (2 threads) must not be overtaken forever by a stream of
  // small ones (1 thread each).
  FifoResourceArbiter arbiter({{kCpu0, 2}});
  const ResourceAmount one[] = {{kCpu0, 1}};
  const ResourceAmount two[] = {{kCpu0, 2}};
  ASSERT_TRUE(arbiter.try_acquire(one));
  std::atomic<bool> big_granted{false};
  std::thread big([&] {
    EXPECT_TRUE(arbiter.acquire(two, nullptr).ok());
    big_granted = true;
  });
  wait_until([&] { return arbiter.waiting() == 1; });
  // One thread is free, but the queued large request names cpu0 first.
  EXPECT_FALSE(arbiter.try_acquire(one));
  std::thread small([&] { EXPECT_TRUE(arbiter.acquire(one, nullptr).ok()); });
  wait_until([&] { return arbiter.waiting() == 2; });
  EXPECT_FALSE(big_granted.load());
  arbiter.release(one);  // the first holder leaves: big goes first
  big.join();
  EXPECT_TRUE(big_granted.load());
  EXPECT_EQ(arbiter.waiting(), 1u);  // small still waits
  arbiter.release(two);
  small.join();
  arbiter.release(one);
  EXPECT_EQ(arbiter.available(kCpu0), 2u);
}

TEST(AdmissionTest, DisjointResourcesDoNotBlockEachOther) {
  FifoResourceArbiter arbiter({{kCpu0, 1}, {kCpu1, 1}});
  const ResourceAmount cpu0[] = {{kCpu0, 1}};
  const ResourceAmount cpu1[] = {{kCpu1, 1}};
  ASSERT_TRUE(arbiter.try_acquire(cpu0));
  std::thread waiter([&] { EXPECT_TRUE(arbiter.acquire(cpu0, nullptr).ok()); });
  wait_until([&] { return arbiter.waiting() == 1; });
  EXPECT_TRUE(arbiter.try_acquire(cpu1));  // not behind the cpu0 queue
  arbiter.release(cpu0);
  waiter.join();
  arbiter.release(cpu0);
  arbiter.release(cpu1);
}

TEST(AdmissionTest, CancelledWaiterLeavesAndUnblocksOthers) {
  FifoResourceArbiter arbiter({{kCpu0, 2}});
  const ResourceAmount one[] = {{kCpu0, 1}};
  const ResourceAmount two[] = {{kCpu0, 2}};
  ASSERT_TRUE(arbiter.try_acquire(one));
  std::atomic<bool> cancel{false};
  Status big_status;
  std::thread big([&] { big_status = arbiter.acquire(two, &cancel); });
  wait_until([&] { return arbiter.waiting() == 1; });
  std::thread small([&] { EXPECT_TRUE(arbiter.acquire(one, nullptr).ok()); });
  wait_until([&] { return arbiter.waiting() == 2; });
  cancel = true;
  arbiter.wake_waiters();
  big.join();
  EXPECT_EQ(big_status.code(), ErrorCode::kCancelled);
  small.join();  // granted once the cancelled request left the queue
  EXPECT_EQ(arbiter.available(kCpu0), 0u);
  arbiter.release(one);
  arbiter.release(one);
}

TEST(AdmissionTest, LeaseReleasesOnDestruction) {
  FifoResourceArbiter arbiter({{kCpu0, 1}});
  static const ResourceAmount one[] = {{kCpu0, 1}};
  {
    ASSERT_TRUE(arbiter.try_acquire(one));
    ResourceLease lease(&arbiter, one);
    ResourceLease moved = std::move(lease);
    EXPECT_FALSE(lease.held());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_TRUE(moved.held());
    EXPECT_EQ(arbiter.available(kCpu0), 0u);
  }
  EXPECT_EQ(arbiter.available(kCpu0), 1u);
}

TEST(AdmissionTest, ManyThreadsMultiResourceNoDeadlock) {
  // Every thread repeatedly takes two of three resources in canonical
  // order; with atomic grants this always terminates.
  const ResourceKey keys[] = {kCpu0, kCpu1, ResourceKey{ResourceKind::kExclusive, 5}};
  FifoResourceArbiter arbiter({{keys[0], 1}, {keys[1], 1}, {keys[2], 1}});
  std::vector<std::thread> threads;
  std::atomic<int> done{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      ResourceAmount req[2] = {{keys[t % 3], 1}, {keys[(t + 1) % 3], 1}};
      if (req[1].key < req[0].key) std::swap(req[0], req[1]);
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(arbiter.acquire(req, nullptr).ok());
        arbiter.release(req);
      }
      ++done;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(done.load(), 6);
  for (const ResourceKey& k : keys) EXPECT_EQ(arbiter.available(k), 1u);
}

}  // namespace
}  // namespace tenferro::runtime
