// EinsumPlanCache: open addressing over the entries (linear probing with
// backward-shift deletion), LRU eviction by a use tick (Note [Einsum plan
// cache key] in plan_cache.h).
#include "tenferro/einsum_cpu/plan_cache.h"

#include <algorithm>
#include <bit>

#include "tenferro/base/assert.h"
#include "tenferro/base/hash.h"

namespace tenferro::einsum {

EinsumPlanCache::EinsumPlanCache(EinsumPlanCacheLimits limits) : limits_(limits) {
  limits_.max_entries = std::max<std::size_t>(1, limits_.max_entries);
  limits_.max_bytes = std::max<std::size_t>(1, limits_.max_bytes);
  entries_.resize(limits_.max_entries);
  for (std::size_t i = entries_.size(); i-- > 0;) free_.push_back(static_cast<std::int32_t>(i));
  slots_.assign(std::bit_ceil(2 * limits_.max_entries), -1);
}

EinsumPlanCache::~EinsumPlanCache() = default;

std::uint64_t EinsumPlanCache::hash_key(const EinsumPlanKey& key) noexcept {
  // One multiply per field (FNV-style), one mix at the end: eager lookups
  // hash every call.
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t h = key.op->payload_hash();
  h = (h ^ static_cast<std::uint64_t>(key.dtype)) * kPrime;
  h = (h ^ static_cast<std::uint64_t>(key.determinism)) * kPrime;
  for (IntArrayRef shape : key.shapes) {
    h = (h ^ (shape.size() | 0x5a00u)) * kPrime;
    for (std::int64_t e : shape) h = (h ^ static_cast<std::uint64_t>(e)) * kPrime;
  }
  return hashing::mix64(h);
}

bool EinsumPlanCache::matches(const Entry& entry, std::uint64_t hash, const EinsumPlanKey& key) noexcept {
  if (entry.hash != hash || entry.dtype != key.dtype || entry.determinism != key.determinism) return false;
  std::size_t at = 0;
  for (IntArrayRef shape : key.shapes) {
    if (at >= entry.shapes.size() || entry.shapes[at] != static_cast<std::int64_t>(shape.size())) return false;
    ++at;
    for (std::int64_t e : shape) {
      if (at >= entry.shapes.size() || entry.shapes[at] != e) return false;
      ++at;
    }
  }
  return at == entry.shapes.size() && entry.op->payload_equal(*key.op);
}

std::int32_t EinsumPlanCache::find_slot(std::uint64_t hash, const EinsumPlanKey& key) const noexcept {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const std::int32_t e = slots_[i];
    if (e < 0) return -1;
    if (matches(entries_[static_cast<std::size_t>(e)], hash, key)) return static_cast<std::int32_t>(i);
  }
}

std::shared_ptr<const ExecutionPlan> EinsumPlanCache::find(const EinsumPlanKey& key) {
  const std::uint64_t hash = hash_key(key);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int32_t slot = find_slot(hash, key);
  if (slot < 0) {
    ++counters_.misses;
    return nullptr;
  }
  Entry& entry = entries_[static_cast<std::size_t>(slots_[static_cast<std::size_t>(slot)])];
  entry.last_use = ++tick_;
  ++counters_.hits;
  return entry.plan;
}

void EinsumPlanCache::erase_entry(std::int32_t index) {
  const std::size_t mask = slots_.size() - 1;
  Entry& entry = entries_[static_cast<std::size_t>(index)];
  std::size_t hole = entry.hash & mask;
  while (slots_[hole] != index) hole = (hole + 1) & mask;
  // Backward-shift deletion keeps every probe sequence unbroken.
  slots_[hole] = -1;
  for (std::size_t next = (hole + 1) & mask; slots_[next] >= 0; next = (next + 1) & mask) {
    const std::size_t home = entries_[static_cast<std::size_t>(slots_[next])].hash & mask;
    const bool movable = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next);
    if (movable) {
      slots_[hole] = slots_[next];
      slots_[next] = -1;
      hole = next;
    }
  }
  bytes_ -= entry.bytes;
  --live_;
  entry = Entry{};
  free_.push_back(index);
}

void EinsumPlanCache::evict_one() {
  std::int32_t oldest = -1;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].plan == nullptr) continue;
    if (oldest < 0 || entries_[i].last_use < entries_[static_cast<std::size_t>(oldest)].last_use)
      oldest = static_cast<std::int32_t>(i);
  }
  TENFERRO_CHECK(oldest >= 0);
  erase_entry(oldest);
  ++counters_.evictions;
}

std::shared_ptr<const ExecutionPlan> EinsumPlanCache::insert(const EinsumPlanKey& key,
                                                             std::shared_ptr<const ExecutionPlan> plan) {
  const std::uint64_t hash = hash_key(key);
  const std::size_t bytes = plan->retained_bytes();
  // Build the retained key outside the lock.
  Entry fresh;
  fresh.hash = hash;
  fresh.op = std::make_shared<const EinsumOp>(*key.op);
  fresh.dtype = key.dtype;
  fresh.determinism = key.determinism;
  for (IntArrayRef shape : key.shapes) {
    fresh.shapes.push_back(static_cast<std::int64_t>(shape.size()));
    fresh.shapes.append(shape.begin(), shape.end());
  }
  fresh.plan = std::move(plan);
  fresh.bytes = bytes;

  std::lock_guard<std::mutex> lock(mutex_);
  const std::int32_t existing = find_slot(hash, key);
  if (existing >= 0) {
    Entry& entry = entries_[static_cast<std::size_t>(slots_[static_cast<std::size_t>(existing)])];
    entry.last_use = ++tick_;
    return entry.plan;
  }
  if (bytes > limits_.max_bytes) return fresh.plan;  // too large to retain
  while (live_ > 0 && (live_ >= limits_.max_entries || bytes_ + bytes > limits_.max_bytes)) evict_one();
  const std::int32_t index = free_.back();
  free_.pop_back();
  fresh.last_use = ++tick_;
  entries_[static_cast<std::size_t>(index)] = std::move(fresh);
  const std::size_t mask = slots_.size() - 1;
  std::size_t slot = hash & mask;
  while (slots_[slot] >= 0) slot = (slot + 1) & mask;
  slots_[slot] = index;
  ++live_;
  bytes_ += bytes;
  ++counters_.insertions;
  return entries_[static_cast<std::size_t>(index)].plan;
}

EinsumPlanCacheStats EinsumPlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EinsumPlanCacheStats s = counters_;
  s.entries = live_;
  s.bytes = bytes_;
  return s;
}

runtime::CacheUsage EinsumPlanCache::usage() const noexcept {
  const EinsumPlanCacheStats s = stats();
  return runtime::CacheUsage{s.entries, s.bytes, s.hits, s.misses, s.evictions};
}

void EinsumPlanCache::clear() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& e : entries_) e = Entry{};
  free_.clear();
  for (std::size_t i = entries_.size(); i-- > 0;) free_.push_back(static_cast<std::int32_t>(i));
  std::fill(slots_.begin(), slots_.end(), -1);
  live_ = 0;
  bytes_ = 0;
}

}  // namespace tenferro::einsum
