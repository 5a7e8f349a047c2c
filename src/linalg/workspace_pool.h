// Internal: the linalg engine's pool of per-worker workspace buffers. A run
// (or an outer chunk) borrows one buffer of at least its plan's per-matrix
// scratch and returns it when done, so steady-state runs allocate nothing
// and touch warm pages. Buffers stay retained up to a byte bound. The same
// design as the einsum engine's pool (private to that component).
// Thread-safe (one mutex, held only to pick or return a buffer).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <span>
#include <vector>

#include "tenferro/base/status.h"

namespace tenferro::linalg::internal {

class LinalgWorkspacePool {
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
    friend class LinalgWorkspacePool;
    Lease(LinalgWorkspacePool* pool, std::byte* data, std::size_t size) : pool_(pool), data_(data), size_(size) {}
    LinalgWorkspacePool* pool_ = nullptr;
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
  };

  explicit LinalgWorkspacePool(std::size_t max_retained_bytes) : max_retained_(max_retained_bytes) {}
  ~LinalgWorkspacePool() {
    for (const Block& b : free_) std::free(b.data);
  }
  LinalgWorkspacePool(const LinalgWorkspacePool&) = delete;
  LinalgWorkspacePool& operator=(const LinalgWorkspacePool&) = delete;

  /// A buffer of at least `bytes` (4096-byte aligned); an empty lease for 0.
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
        ++reuses_;
        return Lease(this, b.data, b.size);
      }
    }
    const std::size_t size = (bytes + 4095) / 4096 * 4096;
    void* data = std::aligned_alloc(4096, size);
    if (data == nullptr) {
      return make_error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue,
                        "linalg: expected a workspace of {} bytes, found the allocation failing", size);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    retained_ += size;
    ++allocations_;
    return Lease(this, static_cast<std::byte*>(data), size);
  }

  std::uint64_t allocations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_;
  }
  std::uint64_t reuses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reuses_;
  }

 private:
  struct Block {
    std::byte* data;
    std::size_t size;
  };

  void give_back(std::byte* data, std::size_t size) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    // Keep it when the bound allows, dropping smaller free buffers first.
    while (retained_ > max_retained_ && !free_.empty()) {
      auto smallest =
          std::min_element(free_.begin(), free_.end(), [](const Block& a, const Block& b) { return a.size < b.size; });
      std::free(smallest->data);
      retained_ -= smallest->size;
      *smallest = free_.back();
      free_.pop_back();
    }
    if (retained_ > max_retained_) {
      std::free(data);
      retained_ -= size;
      return;
    }
    free_.push_back(Block{data, size});
  }

  mutable std::mutex mutex_;
  std::size_t max_retained_;
  std::size_t retained_ = 0;
  std::uint64_t allocations_ = 0;
  std::uint64_t reuses_ = 0;
  std::vector<Block> free_;
};

}  // namespace tenferro::linalg::internal
