// PlanCache<Key, Value>: the bounded, single-flight cache of prepared plans
// (docs/runtime.md, "The plan cache contract").
// Generic over the key so tests can drive it with small keys; the runtime
// instantiates it with PreparedPlanKey.
//
// Note [Plan cache contract]
//  - Single flight: the first caller of a key prepares it with the cache lock
//    released; later callers of the same key wait for that preparation
//    (counted as `waits`); callers of other keys proceed concurrently.
//  - A thread that asks for a key it is itself preparing, or that would wait
//    on a chain of preparations ending at itself, gets kPreparationCycle
//    instead of deadlocking.
//  - Deterministic failures (every code except the transient ones:
//    kResourceExhausted, kUnavailable, kCancelled, kDeadlineExceeded,
//    kAborted, kRuntimeStopped) are negatively cached: later callers get the
//    same error without preparing (`negative_hits`). Keys carry the runtime
//    configuration epoch, so a negative entry never outlives its epoch's
//    usefulness. Transient failures are returned to the callers of that
//    flight and not cached.
//  - Bounded in entries and in retained bytes; least recently used ready or
//    failed entries are evicted first; an entry being prepared is never
//    evicted. Values are shared_ptr<const Value>: an evicted plan stays valid
//    for everyone still holding it.
//  - Thread-safe. The prepare callback runs on the calling thread without any
//    cache lock held.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/status.h"

namespace tenferro::runtime {

/// Counters and sizes of a plan cache (a snapshot).
struct PlanCacheStats {
  std::uint64_t hits = 0;           ///< lookups answered by a ready entry
  std::uint64_t misses = 0;         ///< lookups that started a preparation
  std::uint64_t waits = 0;          ///< lookups that waited for another caller's preparation
  std::uint64_t negative_hits = 0;  ///< lookups answered by a cached failure
  std::uint64_t failures = 0;       ///< preparations that failed (cached or not)
  std::uint64_t evictions = 0;      ///< entries dropped to respect the bounds
  std::uint64_t clears = 0;         ///< clear() calls
  std::size_t entries = 0;          ///< current entries (ready, failed and preparing)
  std::size_t bytes = 0;            ///< retained bytes of ready entries
};

/// Bounds of a plan cache. Zero entries disables retention (every lookup
/// prepares, still single-flight).
struct PlanCacheLimits {
  std::size_t max_entries = 256;
  std::size_t max_bytes = std::size_t{64} << 20;
};

/// True for failures that may succeed on retry and so are never cached.
bool is_transient_failure(ErrorCode code) noexcept;

template <class Key, class Value, class Hash = std::hash<Key>>
class PlanCache {
 public:
  using ValuePtr = std::shared_ptr<const Value>;
  /// Retained bytes of a value (for the byte bound and statistics).
  using SizeFn = std::size_t (*)(const Value&);

  explicit PlanCache(PlanCacheLimits limits = {}, SizeFn size_of = nullptr) : limits_(limits), size_of_(size_of) {}
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  /// The cached value of `key`, or the value `prepare` returns (called at
  /// most once per flight, without locks held). See Note [Plan cache contract].
  Result<ValuePtr> get_or_prepare(const Key& key, FunctionRef<Result<ValuePtr>()> prepare) {
    std::unique_lock<std::mutex> lock(mutex_);
    std::shared_ptr<Entry> entry;
    for (;;) {
      auto it = map_.find(key);
      if (it == map_.end()) break;
      entry = it->second;
      if (entry->state == State::kReady) {
        ++stats_.hits;
        touch(*entry);
        return entry->value;
      }
      if (entry->state == State::kFailed) {
        ++stats_.negative_hits;
        touch(*entry);
        return entry->failure;
      }
      // Preparing: wait unless that would wait on ourselves.
      if (would_deadlock(*entry)) {
        return make_error(ErrorCode::kPreparationCycle, ErrorStage::kPrepare,
                          "expected an acyclic preparation, found a preparation that (transitively) waits for "
                          "itself");
      }
      ++stats_.waits;
      waiting_for_[std::this_thread::get_id()] = entry.get();
      changed_.wait(lock, [&] { return entry->state != State::kPreparing; });
      waiting_for_.erase(std::this_thread::get_id());
      if (entry->state == State::kReady) return entry->value;
      return entry->failure;
    }

    ++stats_.misses;
    entry = std::make_shared<Entry>();
    entry->owner = std::this_thread::get_id();
    lru_.push_front(key);
    entry->lru = lru_.begin();
    map_.emplace(key, entry);
    ++stats_.entries;
    lock.unlock();

    Result<ValuePtr> result = run_prepare(prepare);

    lock.lock();
    const bool still_cached = entry->lru_valid;
    if (result.ok()) {
      entry->value = *result;
      entry->bytes = (size_of_ != nullptr && entry->value != nullptr) ? size_of_(*entry->value) : 0;
      entry->state = State::kReady;
      if (still_cached) stats_.bytes += entry->bytes;
    } else {
      ++stats_.failures;
      entry->failure = result.status();
      entry->state = State::kFailed;
      if (still_cached && is_transient_failure(result.status().code())) remove(map_.find(key));
    }
    if (entry->lru_valid) evict_to_bounds();
    lock.unlock();
    changed_.notify_all();
    return result;
  }

  /// The ready value of `key` without preparing; nullptr on a miss. Counts a
  /// hit only when found.
  ValuePtr find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end() || it->second->state != State::kReady) return nullptr;
    ++stats_.hits;
    touch(*it->second);
    return it->second->value;
  }

  /// Drops every ready and failed entry; entries being prepared finish and
  /// are handed to their waiters but not retained.
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.clears;
    erase_matching([](const Key&) { return true; });
  }

  /// Drops ready and failed entries whose key satisfies `pred` (e.g. keys of
  /// an older configuration epoch). Not counted as evictions.
  void erase_if(FunctionRef<bool(const Key&)> pred) {
    std::lock_guard<std::mutex> lock(mutex_);
    erase_matching(pred);
  }

  /// New bounds; evicts down to them at once.
  void set_limits(PlanCacheLimits limits) {
    std::lock_guard<std::mutex> lock(mutex_);
    limits_ = limits;
    evict_to_bounds();
  }

  PlanCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  PlanCacheLimits limits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return limits_;
  }

 private:
  enum class State : std::uint8_t { kPreparing, kReady, kFailed };
  struct Entry {
    State state = State::kPreparing;
    ValuePtr value;
    Status failure;
    std::size_t bytes = 0;
    std::thread::id owner;
    typename std::list<Key>::iterator lru;
    bool lru_valid = true;
  };

  static Result<ValuePtr> run_prepare(FunctionRef<Result<ValuePtr>()> prepare) {
    try {
      return prepare();
    } catch (...) {
      return status_from_current_exception(ErrorStage::kPrepare, "plan preparation");
    }
  }

  // Follows the chain owner -> the entry that owner waits for -> its owner
  // ... and reports whether it reaches the calling thread.
  bool would_deadlock(const Entry& target) const {
    const std::thread::id self = std::this_thread::get_id();
    const Entry* entry = &target;
    for (std::size_t hops = 0; hops <= waiting_for_.size(); ++hops) {
      if (entry->owner == self) return true;
      auto it = waiting_for_.find(entry->owner);
      if (it == waiting_for_.end()) return false;
      entry = it->second;
    }
    return false;
  }

  void touch(Entry& entry) {
    if (entry.lru_valid) lru_.splice(lru_.begin(), lru_, entry.lru);
  }

  // Unlinks the entry at `it` (precondition: it is in the LRU list).
  void remove(typename std::unordered_map<Key, std::shared_ptr<Entry>, Hash>::iterator it) {
    Entry& entry = *it->second;
    if (entry.state == State::kReady) stats_.bytes -= entry.bytes;
    lru_.erase(entry.lru);
    entry.lru_valid = false;
    --stats_.entries;
    map_.erase(it);
  }

  void erase_matching(FunctionRef<bool(const Key&)> pred) {
    for (auto it = lru_.begin(); it != lru_.end();) {
      auto found = map_.find(*it);
      ++it;
      if (found == map_.end() || !pred(found->first)) continue;
      // An entry being prepared finishes for its waiters but is not retained.
      remove(found);
    }
  }

  void evict_to_bounds() {
    auto it = lru_.end();
    while (it != lru_.begin() && (stats_.entries > limits_.max_entries || stats_.bytes > limits_.max_bytes)) {
      --it;
      auto found = map_.find(*it);
      if (found == map_.end() || found->second->state == State::kPreparing) continue;
      auto next = std::next(it);
      remove(found);
      ++stats_.evictions;
      it = next;
    }
  }

  PlanCacheLimits limits_;
  SizeFn size_of_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<Key, std::shared_ptr<Entry>, Hash> map_;
  std::list<Key> lru_;  // most recently used first
  std::unordered_map<std::thread::id, const Entry*> waiting_for_;
  PlanCacheStats stats_;
};

}  // namespace tenferro::runtime
