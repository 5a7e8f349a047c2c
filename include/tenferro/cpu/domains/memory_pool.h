// CpuDomainMemoryPool: the node-local buffer pool and scratch owner of one
// CPU resource domain.
//
// Note [Node-local memory]
// Outputs and scratch of an operation are allocated from the pool of the
// domain that runs it. On a real machine with a NUMA node for the domain,
// blocks of at least MemoryPoolOptions::bind_threshold_bytes are allocated
// with hwloc_alloc_membind(BIND, STRICT) on that node, so their pages land
// there whoever touches them first (kBindToNode). Otherwise (no node, an
// injected topology, small blocks) memory comes from the default aligned
// allocator and is placed by first touch: kernels write their outputs from
// the domain's pinned threads (kFirstTouch). Every block belongs to the pool
// that allocated it: Storage keeps a reference to the pool and hands the
// block back to it, never to another domain's pool, and the pool reuses it
// only for its own domain. The pool caches freed blocks by size class (at
// most 25% rounding) up to max_cached_bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/storage.h"

namespace tenferro::cpu {

namespace internal {
class HwlocTopology;
}  // namespace internal

/// How the pool places memory on NUMA nodes (Note [Node-local memory]).
enum class NumaMemoryPolicy : std::uint8_t { kBindToNode, kFirstTouch };
std::string_view to_string(NumaMemoryPolicy policy) noexcept;

struct MemoryPoolOptions {
  /// Freed blocks kept for reuse, in bytes; beyond it blocks are released.
  std::size_t max_cached_bytes = std::size_t{256} << 20;
  /// Smallest block bound to the node (smaller blocks use first touch).
  std::size_t bind_threshold_bytes = std::size_t{64} << 10;
};

/// Counters of one pool (a consistent snapshot).
struct MemoryPoolStats {
  std::uint64_t allocations = 0;    ///< successful allocate() calls
  std::uint64_t reused = 0;         ///< ... served from the pool's cache
  std::uint64_t node_bound = 0;     ///< fresh blocks bound to the NUMA node
  std::uint64_t failures = 0;       ///< allocate() calls that returned nullptr
  std::uint64_t deallocations = 0;  ///< blocks handed back
  std::uint64_t outstanding_blocks = 0;
  std::uint64_t outstanding_bytes = 0;  ///< rounded sizes of blocks in use
  std::uint64_t cached_blocks = 0;
  std::uint64_t cached_bytes = 0;
};

class CpuDomainMemoryPool;

/// Scratch memory owned by a domain's pool, returned to it on destruction.
/// Move-only; 64-byte aligned; contents uninitialised.
class ScratchBuffer {
 public:
  ScratchBuffer() noexcept = default;
  ScratchBuffer(ScratchBuffer&& other) noexcept;
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept;
  ~ScratchBuffer();

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  friend class CpuDomainMemoryPool;
  ScratchBuffer(std::shared_ptr<CpuDomainMemoryPool> pool, void* data, std::size_t size) noexcept
      : pool_(std::move(pool)), data_(data), size_(size) {}
  void reset() noexcept;

  std::shared_ptr<CpuDomainMemoryPool> pool_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A domain's HostAllocator. Thread-safe. Storage and scratch allocated from
/// it retain it, so it outlives every block it handed out.
class CpuDomainMemoryPool final : public HostAllocator, public std::enable_shared_from_this<CpuDomainMemoryPool> {
 public:
  /// `hwloc` (may be null) enables node binding when it describes this
  /// system and `numa_node` is set. The allocation domain id is fresh
  /// (process-unique); the affinity is MemoryAffinity::cpu_domain(domain),
  /// or none for CpuDomainId() (the pool of an engine without domains).
  static std::shared_ptr<CpuDomainMemoryPool> create(CpuDomainId domain, std::optional<unsigned> numa_node,
                                                     std::shared_ptr<const internal::HwlocTopology> hwloc,
                                                     MemoryPoolOptions options = {});
  ~CpuDomainMemoryPool() override;
  CpuDomainMemoryPool(const CpuDomainMemoryPool&) = delete;
  CpuDomainMemoryPool& operator=(const CpuDomainMemoryPool&) = delete;

  AllocationDomainId allocation_domain() const noexcept override { return allocation_domain_; }
  MemoryAffinity affinity() const noexcept override {
    return domain_ == CpuDomainId() ? MemoryAffinity() : MemoryAffinity::cpu_domain(domain_);
  }
  void* allocate(std::size_t bytes) noexcept override;
  void deallocate(void* block, std::size_t bytes) noexcept override;

  CpuDomainId domain() const noexcept { return domain_; }
  std::optional<unsigned> numa_node() const noexcept { return numa_node_; }
  NumaMemoryPolicy policy() const noexcept { return policy_; }
  MemoryPoolStats stats() const;
  /// Releases every cached block.
  void trim() noexcept;

  /// Host storage of `nbytes` from this pool (Storage::allocate_host).
  Result<StorageRef> allocate_storage(std::size_t nbytes);
  /// Scratch memory; kResourceExhausted when memory runs out.
  Result<ScratchBuffer> allocate_scratch(std::size_t bytes);

  /// The size class `bytes` is rounded to (>= 64, at most 25% larger).
  static std::size_t rounded_size(std::size_t bytes) noexcept;

 private:
  static constexpr std::size_t kSizeClasses = 232;
  CpuDomainMemoryPool(CpuDomainId domain, std::optional<unsigned> numa_node,
                      std::shared_ptr<const internal::HwlocTopology> hwloc, MemoryPoolOptions options);
  static std::size_t class_index(std::size_t rounded) noexcept;
  static std::size_t class_size(std::size_t index) noexcept;
  bool binds(std::size_t rounded) const noexcept;
  void* fresh_block(std::size_t rounded) noexcept;
  void release_block(void* block, std::size_t rounded) noexcept;

  CpuDomainId domain_;
  AllocationDomainId allocation_domain_;
  std::optional<unsigned> numa_node_;
  std::shared_ptr<const internal::HwlocTopology> hwloc_;
  MemoryPoolOptions options_;
  NumaMemoryPolicy policy_;
  mutable std::mutex mutex_;
  std::array<std::vector<void*>, kSizeClasses> free_;  // guarded by mutex_
  MemoryPoolStats stats_;                              // guarded by mutex_
};

}  // namespace tenferro::cpu
