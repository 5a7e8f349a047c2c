#include "cpu/gemm/native/gemm_workspace_pool.h"

#include <cstdlib>
#include <utility>

#include "tenferro/base/huge_pages.h"

namespace tenferro::cpu::internal {

GemmWorkspacePool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

GemmWorkspacePool::Lease& GemmWorkspacePool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->release(data_, bytes_);
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

GemmWorkspacePool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->release(data_, bytes_);
}

GemmWorkspacePool::GemmWorkspacePool() { idle_.reserve(kMaxCached); }

GemmWorkspacePool::~GemmWorkspacePool() {
  for (const Block& b : idle_) free_workspace_block(b.data, b.bytes);
}

namespace {

// Identifies the calling thread (the address of a thread_local).
const void* this_thread_token() noexcept {
  static thread_local const char token = 0;
  return &token;
}

}  // namespace

GemmWorkspacePool::Lease GemmWorkspacePool::acquire(std::size_t bytes) noexcept {
  const void* me = this_thread_token();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit among idle buffers large enough, this thread's first.
    std::size_t best = idle_.size();
    auto better = [&](const Block& a, const Block& b) {
      if ((a.owner == me) != (b.owner == me)) return a.owner == me;
      return a.bytes < b.bytes;
    };
    for (std::size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].bytes >= bytes && (best == idle_.size() || better(idle_[i], idle_[best]))) best = i;
    }
    if (best != idle_.size()) {
      const Block b = idle_[best];
      idle_[best] = idle_.back();
      idle_.pop_back();
      return Lease(this, b.data, b.bytes);
    }
  }
  std::size_t rounded = 0;
  void* data = allocate_workspace_block(bytes, 64, &rounded);  // Note [Huge pages for large buffers]
  if (data == nullptr) return Lease();
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return Lease(this, data, rounded);
}

void GemmWorkspacePool::release(void* data, std::size_t bytes) noexcept {
  Block to_free{data, bytes, nullptr};
  const void* me = this_thread_token();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() < kMaxCached) {
      idle_.push_back(Block{data, bytes, me});
      return;
    }
    // Full: keep the larger buffers.
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < idle_.size(); ++i)
      if (idle_[i].bytes < idle_[smallest].bytes) smallest = i;
    if (idle_[smallest].bytes < bytes) {
      to_free = idle_[smallest];
      idle_[smallest] = Block{data, bytes, me};
    }
  }
  free_workspace_block(to_free.data, to_free.bytes);
}

}  // namespace tenferro::cpu::internal
