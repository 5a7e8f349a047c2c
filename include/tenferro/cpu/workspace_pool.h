// A pool of workspace buffers for engines that lend one scratch buffer per
// run (or per outer chunk): the einsum and linalg engines. A run borrows one
// buffer of at least its plan's workspace bytes and returns it when done, so
// steady-state runs allocate nothing and touch warm pages. Buffers stay
// retained up to a byte bound; a returned buffer that would exceed it is
// freed, after smaller free buffers (a larger one serves every smaller
// request). Thread-safe: one mutex, held only to pick or return a buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "tenferro/base/huge_pages.h"
#include "tenferro/base/status.h"

namespace tenferro::cpu {

struct WorkspacePoolStats {
  std::size_t retained_bytes = 0;  ///< bytes of buffers owned by the pool (free or lent)
  std::uint64_t allocations = 0;   ///< buffers allocated
  std::uint64_t reuses = 0;        ///< acquisitions served by a retained buffer
};

class WorkspacePool {
 public:
  /// A lent buffer; returns it to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept : pool_(other.pool_), data_(other.data_), size_(other.size_) {
      other.pool_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (pool_ != nullptr) pool_->give_back(data_, size_);
    }
    std::span<std::byte> bytes() const noexcept { return {data_, size_}; }

   private:
    friend class WorkspacePool;
    Lease(WorkspacePool* pool, std::byte* data, std::size_t size) : pool_(pool), data_(data), size_(size) {}
    WorkspacePool* pool_ = nullptr;
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
  };

  /// `owner` names the component in error messages ("einsum", "linalg").
  WorkspacePool(const char* owner, std::size_t max_retained_bytes) : owner_(owner), max_retained_(max_retained_bytes) {}
  ~WorkspacePool() {
    for (const Block& b : free_) free_workspace_block(b.data, b.size);
  }
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  /// A buffer of at least `bytes` (4096-byte aligned, whole pages); an empty lease for 0.
  /// kResourceExhausted when the memory cannot be allocated.
  Result<Lease> acquire(std::size_t bytes) {
    if (bytes == 0) return Lease();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::size_t best = free_.size();
      for (std::size_t i = 0; i < free_.size(); ++i)
        if (free_[i].size >= bytes && (best == free_.size() || free_[i].size < free_[best].size)) best = i;
      if (best < free_.size()) {
        const Block b = free_[best];
        free_[best] = free_.back();
        free_.pop_back();
        ++stats_.reuses;
        return Lease(this, b.data, b.size);
      }
    }
    std::size_t size = 0;
    void* data = allocate_workspace_block(bytes, 4096, &size);  // Note [Huge pages for large buffers]
    if (data == nullptr) {
      return make_error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue,
                        "{}: expected a workspace of {} bytes, found the allocation failing", owner_, bytes);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.retained_bytes += size;
    ++stats_.allocations;
    return Lease(this, static_cast<std::byte*>(data), size);
  }

  WorkspacePoolStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  /// Frees every buffer not currently lent.
  void clear() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Block& b : free_) {
      free_workspace_block(b.data, b.size);
      stats_.retained_bytes -= b.size;
    }
    free_.clear();
  }

 private:
  struct Block {
    std::byte* data;
    std::size_t size;
  };

  void give_back(std::byte* data, std::size_t size) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    // Keep the returned buffer when it fits the bound, dropping smaller free
    // buffers first (a larger one serves every smaller request).
    while (stats_.retained_bytes > max_retained_ && !free_.empty()) {
      auto smallest =
          std::min_element(free_.begin(), free_.end(), [](const Block& a, const Block& b) { return a.size < b.size; });
      free_workspace_block(smallest->data, smallest->size);
      stats_.retained_bytes -= smallest->size;
      *smallest = free_.back();
      free_.pop_back();
    }
    if (stats_.retained_bytes > max_retained_) {
      free_workspace_block(data, size);
      stats_.retained_bytes -= size;
      return;
    }
    free_.push_back(Block{data, size});
  }

  const char* owner_;
  std::size_t max_retained_;
  mutable std::mutex mutex_;
  std::vector<Block> free_;
  WorkspacePoolStats stats_;
};

}  // namespace tenferro::cpu
