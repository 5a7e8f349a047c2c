// A pool of workspace buffers for engines that lend one scratch buffer per
// run (or per outer chunk): the einsum, linalg and FFT engines. A run borrows
// one buffer of at least its plan's workspace bytes and returns it when done,
// so steady-state runs allocate nothing and touch warm pages. Buffers stay
// retained up to a byte bound; a returned buffer that would exceed it is
// freed, after smaller idle buffers (a larger one serves every smaller
// request). Thread-safe, and threads on different CPUs do not contend
// (Note [Per-CPU workspace slots]).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

#include "tenferro/base/status.h"

namespace tenferro::cpu {

struct WorkspacePoolStats {
  std::size_t retained_bytes = 0;  ///< bytes of buffers owned by the pool (idle or lent)
  std::uint64_t allocations = 0;   ///< buffers allocated
  std::uint64_t reuses = 0;        ///< acquisitions served by a retained buffer
  std::uint64_t slot_reuses = 0;   ///< of those, served by the calling CPU's slot without a lock
};

// Note [Per-CPU workspace slots]
// The pool was one mutex around one free list, taken twice per run. Two
// threads executing prepared einsum plans of one shared runtime then ran no
// more calls per second than one (abc,bcd,cde->ae over 8^3 operands: 0.92 to
// 1.2x, against 2.0x with one runtime per thread; perf: a fifth of the time
// in the mutex and its futex calls). The idle buffers are now kept per CPU,
// as the runtime's run workspaces are (Note [Sharded counters]): a run gives
// its buffer back to the slot of the CPU it runs on, an atomic pointer
// exchanged without a lock, and the next run on that CPU takes it from there.
// Buffers that find the slot full go to that CPU's list (a mutex only that
// CPU's runs normally take). A request the own slot cannot serve looks
// through every CPU's slot and list before it allocates, so the pool holds
// no more buffers than runs in flight at once, plus those being given back
// at that moment. Trimming to the byte bound is the rare path and takes a
// pool-wide mutex.
//
// Note [Superseded blocks]
// A request no idle buffer can serve frees the idle buffers smaller than it
// before it allocates: each could serve only requests the new, larger
// buffer serves too (requests take the smallest buffer that fits). Without
// this, ever-growing requests kept one buffer per size: einsums over 24,000
// distinct shapes retained 160 MB of einsum workspace (the Python leak
// audit of 2026-12-06), and the bound was a quarter of physical memory.
class WorkspacePool {
  struct Block {
    std::byte* data;
    std::size_t size;
    Block* next;  // in a list of idle blocks
  };

 public:
  /// A lent buffer; returns it to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept : pool_(other.pool_), block_(other.block_) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (pool_ != nullptr) pool_->give_back(block_);
    }
    std::span<std::byte> bytes() const noexcept {
      return pool_ == nullptr ? std::span<std::byte>() : std::span<std::byte>(block_->data, block_->size);
    }

   private:
    friend class WorkspacePool;
    Lease(WorkspacePool* pool, Block* block) : pool_(pool), block_(block) {}
    WorkspacePool* pool_ = nullptr;
    Block* block_ = nullptr;
  };

  /// `owner` names the component in error messages ("einsum", "linalg").
  WorkspacePool(const char* owner, std::size_t max_retained_bytes) : owner_(owner), max_retained_(max_retained_bytes) {}
  /// Every lease must have been destroyed.
  ~WorkspacePool() { clear(); }
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  /// A buffer of at least `bytes` (4096-byte aligned, whole pages); an empty lease for 0.
  /// kResourceExhausted when the memory cannot be allocated.
  Result<Lease> acquire(std::size_t bytes);
  WorkspacePoolStats stats() const;
  /// Frees every buffer not currently lent.
  void clear() noexcept;

 private:
  static constexpr std::size_t kShards = 16;
  struct alignas(128) Shard {
    std::atomic<Block*> slot{nullptr};  // owned
    std::atomic<std::uint64_t> slot_reuses{0};
    std::atomic<std::uint64_t> list_reuses{0};  // served from some CPU's slot or list
    std::mutex mutex;
    std::atomic<Block*> idle{nullptr};  // written under mutex; read without it only as a hint
  };

  Block* take_from(Shard& shard, std::size_t bytes) noexcept;
  void park(Shard& shard, Block* block) noexcept;
  void give_back(Block* block) noexcept;
  void trim_and_keep(Block* block) noexcept;
  void release(Block* block) noexcept;
  void release_idle_smaller_than(std::size_t bytes) noexcept;

  const char* owner_;
  std::size_t max_retained_;
  std::atomic<std::size_t> retained_{0};
  std::atomic<std::uint64_t> allocations_{0};
  std::mutex trim_mutex_;
  std::array<Shard, kShards> shards_;
};

}  // namespace tenferro::cpu
