#include "tenferro/runtime/plan_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tenferro::runtime {
namespace {

using Cache = PlanCache<int, std::string>;
using Ptr = Cache::ValuePtr;

std::size_t string_size(const std::string& s) { return s.size(); }

Result<Ptr> make_value(std::string s) { return Ptr(std::make_shared<const std::string>(std::move(s))); }

TEST(PlanCacheTest, HitAfterMissReturnsTheSameValue) {
  Cache cache;
  int prepared = 0;
  auto prepare = [&] {
    ++prepared;
    return make_value("plan");
  };
  auto a = cache.get_or_prepare(1, prepare);
  auto b = cache.get_or_prepare(1, prepare);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(prepared, 1);
  PlanCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(cache.find(1).get(), a->get());
  EXPECT_EQ(cache.find(2), nullptr);
}

TEST(PlanCacheTest, DeterministicFailuresAreNegativelyCached) {
  Cache cache;
  int prepared = 0;
  auto fail = [&]() -> Result<Ptr> {
    ++prepared;
    return make_error(ErrorCode::kUnsupportedOperation, ErrorStage::kPrepare, "no engine");
  };
  EXPECT_EQ(cache.get_or_prepare(7, fail).status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(cache.get_or_prepare(7, fail).status().code(), ErrorCode::kUnsupportedOperation);
  EXPECT_EQ(prepared, 1);
  PlanCacheStats s = cache.stats();
  EXPECT_EQ(s.negative_hits, 1u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.entries, 1u);
}

TEST(PlanCacheTest, TransientFailuresAreRetried) {
  Cache cache;
  int prepared = 0;
  auto flaky = [&]() -> Result<Ptr> {
    if (++prepared == 1) return make_error(ErrorCode::kResourceExhausted, ErrorStage::kPrepare, "oom");
    return make_value("ok");
  };
  EXPECT_EQ(cache.get_or_prepare(3, flaky).status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(cache.stats().entries, 0u);
  auto second = cache.get_or_prepare(3, flaky);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(**second, "ok");
  EXPECT_EQ(prepared, 2);
}

TEST(PlanCacheTest, ExceptionsFromPreparationBecomeErrors) {
  Cache cache;
  auto throws = []() -> Result<Ptr> { throw std::runtime_error("boom"); };
  auto r = cache.get_or_prepare(1, throws);
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(r.status().stage(), ErrorStage::kPrepare);
}

TEST(PlanCacheTest, EntryBoundEvictsLeastRecentlyUsed) {
  Cache cache(PlanCacheLimits{2, 1 << 20}, &string_size);
  for (int k : {1, 2}) ASSERT_TRUE(cache.get_or_prepare(k, [&] { return make_value("v"); }).ok());
  Ptr held = cache.find(2);
  ASSERT_NE(cache.find(1), nullptr);  // 1 is now most recent
  ASSERT_TRUE(cache.get_or_prepare(3, [&] { return make_value("v"); }).ok());
  EXPECT_EQ(cache.find(2), nullptr);  // evicted
  EXPECT_NE(cache.find(1), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
  EXPECT_EQ(*held, "v");  // still valid for its holder
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().entries, 2u);
}

TEST(PlanCacheTest, ByteBoundEvictsAndCountsBytes) {
  Cache cache(PlanCacheLimits{100, 10}, &string_size);
  ASSERT_TRUE(cache.get_or_prepare(1, [&] { return make_value("aaaaaa"); }).ok());
  EXPECT_EQ(cache.stats().bytes, 6u);
  ASSERT_TRUE(cache.get_or_prepare(2, [&] { return make_value("bbbbbb"); }).ok());
  PlanCacheStats s = cache.stats();
  EXPECT_EQ(s.bytes, 6u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(cache.find(1), nullptr);
}

TEST(PlanCacheTest, ClearAndEraseIf) {
  Cache cache(PlanCacheLimits{}, &string_size);
  for (int k = 0; k < 6; ++k) ASSERT_TRUE(cache.get_or_prepare(k, [&] { return make_value("x"); }).ok());
  cache.erase_if([](const int& k) { return k % 2 == 0; });
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(cache.find(2), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
  cache.clear();
  PlanCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.clears, 1u);
}

TEST(PlanCacheTest, SameThreadRecursionIsAPreparationCycle) {
  Cache cache;
  Status inner;
  auto r = cache.get_or_prepare(1, [&]() -> Result<Ptr> {
    inner = cache.get_or_prepare(1, [&] { return make_value("never"); }).status();
    return make_value("outer");
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(inner.code(), ErrorCode::kPreparationCycle);
  // A distinct key may be prepared recursively.
  auto nested = cache.get_or_prepare(2, [&]() -> Result<Ptr> {
    TENFERRO_ASSIGN_OR_RETURN(Ptr p, cache.get_or_prepare(3, [&] { return make_value("leaf"); }));
    return make_value("parent of " + *p);
  });
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(**nested, "parent of leaf");
}

TEST(PlanCacheTest, CrossThreadCycleIsDetectedNotDeadlocked) {
  // Thread A prepares key 1 and, inside, waits for key 2; thread B prepares
  // key 2 and, inside, asks for key 1. B must see kPreparationCycle.
  Cache cache;
  std::mutex m;
  std::condition_variable cv;
  bool a_inside = false;
  bool b_inside = false;
  Status b_inner;
  std::thread a([&] {
    auto r = cache.get_or_prepare(1, [&]() -> Result<Ptr> {
      {
        std::unique_lock<std::mutex> lock(m);
        a_inside = true;
        cv.notify_all();
        cv.wait(lock, [&] { return b_inside; });
      }
      return cache.get_or_prepare(2, [&] { return make_value("unused"); });
    });
    EXPECT_TRUE(r.ok());
  });
  std::thread b([&] {
    auto r = cache.get_or_prepare(2, [&]() -> Result<Ptr> {
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return a_inside; });
        b_inside = true;
        cv.notify_all();
      }
      // Wait until A is queued on key 2 (it will wait on us), then ask for 1.
      while (cache.stats().waits == 0) std::this_thread::yield();
      b_inner = cache.get_or_prepare(1, [&] { return make_value("never"); }).status();
      return make_value("two");
    });
    EXPECT_TRUE(r.ok());
  });
  a.join();
  b.join();
  EXPECT_EQ(b_inner.code(), ErrorCode::kPreparationCycle);
}

// Note [Single-flight concurrency test]
// 8 threads ask for keys drawn from 3 overlapping values, 200 times each.
// Each key must be prepared exactly once; every other lookup is a hit or a
// wait. A preparation for one key is held open until a preparation of a
// different key has started, proving different keys progress concurrently
// (no global lock is held while planning). Run under ThreadSanitizer by the
// tsan preset.
TEST(PlanCacheTest, EightThreadsOverlappingKeysSingleFlight) {
  Cache cache;
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  std::atomic<int> prepare_count[3] = {0, 0, 0};
  std::atomic<int> active_preparations{0};
  std::atomic<int> max_concurrent{0};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kRounds; ++i) {
        const int key = (t + i) % 3;
        auto r = cache.get_or_prepare(key, [&]() -> Result<Ptr> {
          prepare_count[key].fetch_add(1);
          const int now = active_preparations.fetch_add(1) + 1;
          int seen = max_concurrent.load();
          while (now > seen && !max_concurrent.compare_exchange_weak(seen, now)) {
          }
          // Keep this preparation open until another key's preparation ran
          // concurrently and some caller waited on a preparation in flight
          // (each key has at least two threads in round 0, so both happen
          // unless single flight or concurrency is broken), or a generous
          // timeout passes. The cache holds no lock while preparing.
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
          while ((max_concurrent.load() < 2 || cache.stats().waits == 0) &&
                 std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
          active_preparations.fetch_sub(1);
          return make_value("plan" + std::to_string(key));
        });
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(**r, "plan" + std::to_string(key));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(prepare_count[k].load(), 1) << "key " << k;
  EXPECT_GE(max_concurrent.load(), 2);
  PlanCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.hits + s.waits + s.misses, static_cast<std::uint64_t>(kThreads * kRounds));
  EXPECT_GT(s.waits, 0u);
}

}  // namespace
}  // namespace tenferro::runtime
