// WorkspacePool (Note [Per-CPU workspace slots] in tenferro/cpu/workspace_pool.h).
#include "tenferro/cpu/workspace_pool.h"

#include <new>

#include "tenferro/base/huge_pages.h"
#include "tenferro/base/sharded_counters.h"

namespace tenferro::cpu {

Result<WorkspacePool::Lease> WorkspacePool::acquire(std::size_t bytes) {
  if (bytes == 0) return Lease();
  const std::size_t home = this_cpu_shard(kShards);
  Shard& own = shards_[home];
  if (Block* b = own.slot.exchange(nullptr, std::memory_order_acquire); b != nullptr) {
    if (b->size >= bytes) {
      own.slot_reuses.fetch_add(1, std::memory_order_relaxed);
      return Lease(this, b);
    }
    park(own, b);
  }
  for (std::size_t i = 0; i < kShards; ++i) {
    if (Block* b = take_from(shards_[(home + i) % kShards], bytes); b != nullptr) {
      own.list_reuses.fetch_add(1, std::memory_order_relaxed);
      return Lease(this, b);
    }
  }
  release_idle_smaller_than(bytes);  // Note [Superseded blocks]
  std::size_t size = 0;
  void* data = allocate_workspace_block(bytes, 4096, &size);  // Note [Huge pages for large buffers]
  Block* block = data == nullptr ? nullptr : new (std::nothrow) Block{static_cast<std::byte*>(data), size, nullptr};
  if (block == nullptr) {
    if (data != nullptr) free_workspace_block(data, size);
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kEnqueue,
                      "{}: expected a workspace of {} bytes, found the allocation failing", owner_, bytes);
  }
  retained_.fetch_add(size, std::memory_order_relaxed);
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return Lease(this, block);
}

// The smallest idle block of `shard` with at least `bytes`, or nullptr.
WorkspacePool::Block* WorkspacePool::take_from(Shard& shard, std::size_t bytes) noexcept {
  if (Block* b = shard.slot.exchange(nullptr, std::memory_order_acquire); b != nullptr) {
    if (b->size >= bytes) return b;
    park(shard, b);
  }
  if (shard.idle.load(std::memory_order_relaxed) == nullptr) return nullptr;  // a hint; checked under the lock
  std::lock_guard<std::mutex> lock(shard.mutex);
  Block* best = nullptr;
  Block* best_prev = nullptr;
  Block* prev = nullptr;
  for (Block* b = shard.idle.load(std::memory_order_relaxed); b != nullptr; prev = b, b = b->next) {
    if (b->size >= bytes && (best == nullptr || b->size < best->size)) {
      best = b;
      best_prev = prev;
    }
  }
  if (best == nullptr) return nullptr;
  if (best_prev == nullptr) {
    shard.idle.store(best->next, std::memory_order_relaxed);
  } else {
    best_prev->next = best->next;
  }
  return best;
}

void WorkspacePool::park(Shard& shard, Block* block) noexcept {
  std::lock_guard<std::mutex> lock(shard.mutex);
  block->next = shard.idle.load(std::memory_order_relaxed);
  shard.idle.store(block, std::memory_order_relaxed);
}

void WorkspacePool::give_back(Block* block) noexcept {
  if (retained_.load(std::memory_order_relaxed) > max_retained_) {
    trim_and_keep(block);
    return;
  }
  // The block just used is the warmest: it takes the slot, and a block it
  // displaces goes to the list.
  Shard& own = shards_[this_cpu_shard(kShards)];
  if (Block* displaced = own.slot.exchange(block, std::memory_order_acq_rel); displaced != nullptr) {
    park(own, displaced);
  }
}

// Over the bound: free idle blocks, smallest first, until the pool is within
// it, then keep `block` if it still fits.
void WorkspacePool::trim_and_keep(Block* block) noexcept {
  const std::lock_guard<std::mutex> trim(trim_mutex_);
  while (retained_.load(std::memory_order_relaxed) > max_retained_) {
    Shard* smallest_shard = nullptr;
    std::size_t smallest = 0;
    for (Shard& s : shards_) {
      if (Block* b = s.slot.exchange(nullptr, std::memory_order_acquire); b != nullptr) park(s, b);
      const std::lock_guard<std::mutex> lock(s.mutex);
      for (Block* b = s.idle.load(std::memory_order_relaxed); b != nullptr; b = b->next) {
        if (smallest_shard == nullptr || b->size < smallest) {
          smallest_shard = &s;
          smallest = b->size;
        }
      }
    }
    if (smallest_shard == nullptr) break;  // every other block is lent
    // Another thread may have taken it meanwhile: then look again.
    if (Block* b = take_from(*smallest_shard, smallest); b != nullptr) {
      if (b->size == smallest) {
        release(b);
      } else {
        park(*smallest_shard, b);
      }
    }
  }
  if (retained_.load(std::memory_order_relaxed) > max_retained_) {
    release(block);
  } else {
    park(shards_[this_cpu_shard(kShards)], block);
  }
}

void WorkspacePool::release_idle_smaller_than(std::size_t bytes) noexcept {
  for (Shard& s : shards_) {
    Block* superseded = nullptr;
    if (Block* b = s.slot.exchange(nullptr, std::memory_order_acquire); b != nullptr) {
      if (b->size < bytes) {
        b->next = superseded;
        superseded = b;
      } else {
        park(s, b);
      }
    }
    if (s.idle.load(std::memory_order_relaxed) != nullptr) {  // a hint; walked under the lock
      const std::lock_guard<std::mutex> lock(s.mutex);
      Block* kept = nullptr;
      for (Block* b = s.idle.load(std::memory_order_relaxed); b != nullptr;) {
        Block* next = b->next;
        Block*& to = b->size < bytes ? superseded : kept;
        b->next = to;
        to = b;
        b = next;
      }
      s.idle.store(kept, std::memory_order_relaxed);
    }
    while (superseded != nullptr) {  // freed outside the lock
      Block* next = superseded->next;
      release(superseded);
      superseded = next;
    }
  }
}

void WorkspacePool::release(Block* block) noexcept {
  free_workspace_block(block->data, block->size);
  retained_.fetch_sub(block->size, std::memory_order_relaxed);
  delete block;
}

WorkspacePoolStats WorkspacePool::stats() const {
  WorkspacePoolStats s;
  s.retained_bytes = retained_.load(std::memory_order_relaxed);
  s.allocations = allocations_.load(std::memory_order_relaxed);
  for (const Shard& shard : shards_) {
    const std::uint64_t slot = shard.slot_reuses.load(std::memory_order_relaxed);
    s.slot_reuses += slot;
    s.reuses += slot + shard.list_reuses.load(std::memory_order_relaxed);
  }
  return s;
}

void WorkspacePool::clear() noexcept {
  for (Shard& s : shards_) {
    if (Block* b = s.slot.exchange(nullptr, std::memory_order_acquire); b != nullptr) release(b);
    const std::lock_guard<std::mutex> lock(s.mutex);
    Block* b = s.idle.load(std::memory_order_relaxed);
    s.idle.store(nullptr, std::memory_order_relaxed);
    while (b != nullptr) {
      Block* next = b->next;
      release(b);
      b = next;
    }
  }
}

}  // namespace tenferro::cpu
