// The node-local pool of a CPU resource domain (Note [Node-local memory] in
// memory_pool.h).
#include "tenferro/cpu/domains/memory_pool.h"

#include <bit>
#include <new>

#include "cpu/domains/hwloc_topology.h"
#include "tenferro/base/huge_pages.h"

namespace tenferro::cpu {

std::string_view to_string(NumaMemoryPolicy policy) noexcept {
  return policy == NumaMemoryPolicy::kBindToNode ? "bind_to_node" : "first_touch";
}

ScratchBuffer::ScratchBuffer(ScratchBuffer&& other) noexcept
    : pool_(std::move(other.pool_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ScratchBuffer::~ScratchBuffer() { reset(); }

void ScratchBuffer::reset() noexcept {
  if (data_ != nullptr) pool_->deallocate(data_, size_);
  data_ = nullptr;
  size_ = 0;
  pool_.reset();
}

std::shared_ptr<CpuDomainMemoryPool> CpuDomainMemoryPool::create(CpuDomainId domain, std::optional<unsigned> numa_node,
                                                                 std::shared_ptr<const internal::HwlocTopology> hwloc,
                                                                 MemoryPoolOptions options) {
  return std::shared_ptr<CpuDomainMemoryPool>(new CpuDomainMemoryPool(domain, numa_node, std::move(hwloc), options));
}

CpuDomainMemoryPool::CpuDomainMemoryPool(CpuDomainId domain, std::optional<unsigned> numa_node,
                                         std::shared_ptr<const internal::HwlocTopology> hwloc,
                                         MemoryPoolOptions options)
    : domain_(domain),
      allocation_domain_(next_unique_id()),
      numa_node_(numa_node),
      hwloc_(std::move(hwloc)),
      options_(options),
      policy_(numa_node.has_value() && hwloc_ != nullptr && hwloc_->supports_node_binding()
                  ? NumaMemoryPolicy::kBindToNode
                  : NumaMemoryPolicy::kFirstTouch) {}

CpuDomainMemoryPool::~CpuDomainMemoryPool() { trim(); }

std::size_t CpuDomainMemoryPool::rounded_size(std::size_t bytes) noexcept {
  if (bytes <= 64) return 64;
  if (bytes > (SIZE_MAX >> 2)) return 0;  // no such allocation can succeed
  const std::size_t floor_pow2 = std::bit_floor(bytes);
  const std::size_t step = std::max<std::size_t>(64, floor_pow2 / 4);
  return (bytes + step - 1) / step * step;
}

std::size_t CpuDomainMemoryPool::class_index(std::size_t rounded) noexcept {
  const int e = std::bit_width(rounded) - 1;    // rounded in [2^e, 2^(e+1))
  if (e <= 6) return 0;                         // 64
  if (e == 7) return 1 + (rounded - 128) / 64;  // 128, 192
  const std::size_t base = std::size_t{1} << e;
  return 3 + 4 * static_cast<std::size_t>(e - 8) + (rounded - base) / (base / 4);
}

std::size_t CpuDomainMemoryPool::class_size(std::size_t index) noexcept {
  if (index < 3) return 64 * (index + 1);  // 64, 128, 192
  const std::size_t k = index - 3;
  const std::size_t base = std::size_t{1} << (8 + k / 4);
  return base + (k % 4) * (base / 4);
}

bool CpuDomainMemoryPool::binds(std::size_t rounded) const noexcept {
  return policy_ == NumaMemoryPolicy::kBindToNode && rounded >= options_.bind_threshold_bytes;
}

// Note [Huge pages for large buffers]: blocks of kHugePageAdviceBytes and
// more are whole huge pages mapped fresh, so each is backed by huge pages
// wherever THP allows.
void* CpuDomainMemoryPool::fresh_block(std::size_t rounded) noexcept {
  if (binds(rounded)) {
    void* block = hwloc_->allocate_on_node(rounded, *numa_node_);
    advise_huge_pages(block, rounded);
    return block;
  }
  if (rounded >= kHugePageAdviceBytes) return map_huge_pages(rounded);
  return ::operator new(rounded, std::align_val_t(Storage::kHostAlignment), std::nothrow);
}

void CpuDomainMemoryPool::release_block(void* block, std::size_t rounded) noexcept {
  if (binds(rounded)) {
    hwloc_->free_node_memory(block, rounded);
  } else if (rounded >= kHugePageAdviceBytes) {
    unmap_huge_pages(block, rounded);
  } else {
    ::operator delete(block, std::align_val_t(Storage::kHostAlignment));
  }
}

void* CpuDomainMemoryPool::allocate(std::size_t bytes) noexcept {
  const std::size_t rounded = rounded_size(bytes);
  if (rounded == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.failures;
    return nullptr;
  }
  const std::size_t index = class_index(rounded);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*>& list = free_[index];
    if (!list.empty()) {
      void* block = list.back();
      list.pop_back();
      --stats_.cached_blocks;
      stats_.cached_bytes -= rounded;
      ++stats_.reused;
      ++stats_.allocations;
      ++stats_.outstanding_blocks;
      stats_.outstanding_bytes += rounded;
      return block;
    }
  }
  void* block = fresh_block(rounded);
  if (block == nullptr) {
    trim();  // cached blocks of other sizes may be what the system is missing
    block = fresh_block(rounded);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (block == nullptr) {
    ++stats_.failures;
    return nullptr;
  }
  if (binds(rounded)) ++stats_.node_bound;
  ++stats_.allocations;
  ++stats_.outstanding_blocks;
  stats_.outstanding_bytes += rounded;
  return block;
}

void CpuDomainMemoryPool::deallocate(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  const std::size_t rounded = rounded_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.deallocations;
    --stats_.outstanding_blocks;
    stats_.outstanding_bytes -= rounded;
    if (stats_.cached_bytes + rounded <= options_.max_cached_bytes) {
      try {
        free_[class_index(rounded)].push_back(block);
        ++stats_.cached_blocks;
        stats_.cached_bytes += rounded;
        return;
      } catch (...) {
        // No room to remember the block: release it below.
      }
    }
  }
  release_block(block, rounded);
}

void CpuDomainMemoryPool::trim() noexcept {
  std::array<std::vector<void*>, kSizeClasses> cached;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cached.swap(free_);
    stats_.cached_blocks = 0;
    stats_.cached_bytes = 0;
  }
  for (std::vector<void*>& list : cached) {
    if (list.empty()) continue;
    const std::size_t rounded = class_size(static_cast<std::size_t>(&list - cached.data()));
    for (void* block : list) release_block(block, rounded);
  }
}

MemoryPoolStats CpuDomainMemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Result<StorageRef> CpuDomainMemoryPool::allocate_storage(std::size_t nbytes) {
  return Storage::allocate_host(nbytes, shared_from_this());
}

Result<ScratchBuffer> CpuDomainMemoryPool::allocate_scratch(std::size_t bytes) {
  void* block = allocate(bytes);
  if (block == nullptr) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                      "CPU domain {}: cannot allocate {} bytes of scratch memory", domain_, bytes);
  }
  return ScratchBuffer(shared_from_this(), block, bytes);
}

}  // namespace tenferro::cpu
