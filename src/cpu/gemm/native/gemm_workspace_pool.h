// GemmWorkspacePool: reusable 64-byte aligned packing buffers owned by one
// native GEMM provider, so steady-state GEMM calls do not allocate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tenferro::cpu::internal {

/// Thread-safe. Buffers grow to the largest size requested; at most
/// kMaxCached idle buffers are kept (more concurrent users allocate and free).
///
/// Note [Workspace affinity]
/// A buffer remembers the thread that last used it, and acquire prefers,
/// among the idle buffers large enough, one that thread released. Packing
/// writes the whole buffer, so a buffer another core used last has its lines
/// modified in that core's cache, and each write first fetches the line from
/// there: when two GEMMs of a concurrent group took each other's buffers
/// (Note [CPU concurrent groups]), the pair ran clearly slower than the same
/// two GEMMs on two plain threads (docs/performance_notes.md, "Native GEMM").
class GemmWorkspacePool {
 public:
  static constexpr std::size_t kMaxCached = 16;

  /// A leased buffer, returned to the pool on destruction. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    void* data() const noexcept { return data_; }
    explicit operator bool() const noexcept { return data_ != nullptr; }

   private:
    friend class GemmWorkspacePool;
    Lease(GemmWorkspacePool* pool, void* data, std::size_t bytes) noexcept : pool_(pool), data_(data), bytes_(bytes) {}
    GemmWorkspacePool* pool_ = nullptr;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  GemmWorkspacePool();
  ~GemmWorkspacePool();
  GemmWorkspacePool(const GemmWorkspacePool&) = delete;
  GemmWorkspacePool& operator=(const GemmWorkspacePool&) = delete;

  /// A buffer of at least `bytes`; an empty lease when memory is exhausted.
  Lease acquire(std::size_t bytes) noexcept;
  /// Buffers allocated so far (a steady-state workload stops increasing it).
  std::int64_t allocations() const noexcept { return allocations_.load(std::memory_order_relaxed); }

 private:
  struct Block {
    void* data;
    std::size_t bytes;
    const void* owner;  // the thread that released it (Note [Workspace affinity])
  };
  void release(void* data, std::size_t bytes) noexcept;

  std::mutex mutex_;
  std::vector<Block> idle_;  // capacity kMaxCached, reserved up front
  std::atomic<std::int64_t> allocations_{0};
};

}  // namespace tenferro::cpu::internal
