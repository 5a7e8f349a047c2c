// EinsumPlanCache: the native engine's bounded cache of concrete-shape
// execution plans. It sits before execution: a lookup that hits returns the
// compiled plan, a miss is planned by the caller (outside the cache lock) and
// inserted.
//
// Note [Einsum plan cache key]
// A plan depends on the op payload (canonical subscripts, notation and the
// operation-local policy, Note [Einsum payload identity]), the dtype, every
// operand's concrete shape and the determinism policy; the planning
// configuration belongs to the owning engine and is fixed for its lifetime,
// so each engine's cache needs no more. Lookups hash those fields and
// compare them in full; they allocate nothing. The least recently used
// entry is evicted when an insertion would exceed max_entries or max_bytes
// (the plans' retained_bytes()); a plan larger than max_bytes on its own is
// returned uncached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum_cpu/execution_plan.h"
#include "tenferro/runtime/spi/engine.h"

namespace tenferro::einsum {

/// Bounds of an EinsumPlanCache (both at least 1).
struct EinsumPlanCacheLimits {
  std::size_t max_entries = 512;
  std::size_t max_bytes = std::size_t{64} << 20;
};

/// Counters since construction (entries and bytes: current).
struct EinsumPlanCacheStats {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t insertions = 0;
  std::uint64_t evictions = 0;
};

/// What a plan is looked up by (Note [Einsum plan cache key]). Borrowed.
struct EinsumPlanKey {
  const EinsumOp* op = nullptr;
  DType dtype = DType::kFloat64;
  std::span<const IntArrayRef> shapes;
  Determinism determinism = Determinism::kFast;
};

/// See Note [Einsum plan cache key]. Thread-safe (one mutex); also a
/// runtime::CacheOwner so a runtime can report and clear it.
class EinsumPlanCache final : public runtime::CacheOwner {
 public:
  explicit EinsumPlanCache(EinsumPlanCacheLimits limits = {});
  ~EinsumPlanCache() override;
  EinsumPlanCache(const EinsumPlanCache&) = delete;
  EinsumPlanCache& operator=(const EinsumPlanCache&) = delete;

  /// The cached plan for `key` (counted as a hit), or null (a miss).
  std::shared_ptr<const ExecutionPlan> find(const EinsumPlanKey& key);
  /// Caches `plan` under `key` (retaining a copy of the op) and returns the
  /// plan now cached for it: `plan`, or the one another thread inserted
  /// first. Evicts least recently used entries to stay within the limits.
  std::shared_ptr<const ExecutionPlan> insert(const EinsumPlanKey& key, std::shared_ptr<const ExecutionPlan> plan);

  EinsumPlanCacheStats stats() const;
  const EinsumPlanCacheLimits& limits() const noexcept { return limits_; }

  // --- runtime::CacheOwner ---
  runtime::CacheUsage usage() const noexcept override;
  /// Drops every entry (statistics other than entries/bytes are kept).
  void clear() noexcept override;

 private:
  struct Entry {
    std::uint64_t hash = 0;
    std::shared_ptr<const EinsumOp> op;
    DType dtype = DType::kFloat64;
    Determinism determinism = Determinism::kFast;
    Dims shapes;  // rank, extents..., per operand
    std::shared_ptr<const ExecutionPlan> plan;
    std::size_t bytes = 0;
    std::uint64_t last_use = 0;
  };

  static std::uint64_t hash_key(const EinsumPlanKey& key) noexcept;
  static bool matches(const Entry& entry, std::uint64_t hash, const EinsumPlanKey& key) noexcept;
  std::int32_t find_slot(std::uint64_t hash, const EinsumPlanKey& key) const noexcept;  // index into slots_, -1
  void erase_entry(std::int32_t entry);
  void evict_one();

  EinsumPlanCacheLimits limits_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;       // entries_[i].plan == null: free
  std::vector<std::int32_t> free_;   // free entry indices
  std::vector<std::int32_t> slots_;  // open addressing over entries, -1 empty
  std::size_t live_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t tick_ = 0;
  EinsumPlanCacheStats counters_;
};

}  // namespace tenferro::einsum
