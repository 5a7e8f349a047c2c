// Storage allocation, wrapping, reference release and the pending slot.
#include "tenferro/tensor/storage.h"

#include <cstdint>
#include <new>

#include "tenferro/base/huge_pages.h"

namespace tenferro {
namespace {

// The header occupies a multiple of the alignment so the data after it is
// 64-byte aligned too.
constexpr std::size_t header_bytes() {
  return (sizeof(Storage) + Storage::kHostAlignment - 1) / Storage::kHostAlignment * Storage::kHostAlignment;
}

Status exhausted(std::size_t nbytes) {
  return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone, "cannot allocate {} bytes of host memory",
                    nbytes);
}

}  // namespace

Storage::Storage(void* data, std::size_t nbytes, StorageDomainId storage_domain, AllocationDomainId allocation_domain,
                 MemoryAffinity affinity) noexcept
    : data_(data),
      nbytes_(nbytes),
      storage_domain_(storage_domain),
      allocation_domain_(allocation_domain),
      affinity_(affinity) {}

Storage::~Storage() = default;

Result<StorageRef> Storage::allocate_host(std::size_t nbytes, std::shared_ptr<HostAllocator> allocator) {
  // With an allocator the block is 64-byte aligned and the data follows a
  // header of header_bytes(). Without one the block comes from the plain
  // operator new (16-byte aligned: glibc's memalign path is slower, which
  // shows in the eager calls with a small output of `tenferro bench
  // dispatch`) and the data starts at the first 64-byte boundary after the
  // header.
  constexpr std::size_t kHeader = header_bytes();
  constexpr std::size_t kSlack = sizeof(Storage) + kHostAlignment - 1;
  static_assert(alignof(Storage) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  static_assert(kHeader <= kSlack);
  if (nbytes > SIZE_MAX - kSlack) return exhausted(nbytes);
  const std::size_t total = (allocator != nullptr ? kHeader : kSlack) + nbytes;
  void* block = allocator != nullptr ? allocator->allocate(total) : ::operator new(total, std::nothrow);
  if (block == nullptr) return exhausted(nbytes);
  char* data = static_cast<char*>(block) + kHeader;
  if (allocator == nullptr) {
    const auto first = reinterpret_cast<std::uintptr_t>(block) + sizeof(Storage);
    data = static_cast<char*>(block) +
           ((first + kHostAlignment - 1) / kHostAlignment * kHostAlignment - reinterpret_cast<std::uintptr_t>(block));
    advise_huge_pages(block, total);  // before the first write (Note [Huge pages for large buffers])
  }
  const AllocationDomainId domain =
      allocator != nullptr ? allocator->allocation_domain() : kDefaultHostAllocationDomain;
  const MemoryAffinity affinity = allocator != nullptr ? allocator->affinity() : MemoryAffinity();
  auto* storage = new (block) Storage(data, nbytes, kHostStorageDomain, domain, affinity);
  storage->inline_block_ = true;
  storage->allocator_ = std::move(allocator);
  return StorageRef(storage);
}

Result<StorageRef> Storage::wrap(void* data, std::size_t nbytes, StorageDescriptor descriptor,
                                 std::shared_ptr<StorageOwner> owner) {
  auto* storage = new (std::nothrow)
      Storage(data, nbytes, descriptor.storage_domain, descriptor.allocation_domain, descriptor.affinity);
  if (storage == nullptr) return exhausted(sizeof(Storage));
  storage->owner_ = std::move(owner);
  return StorageRef(storage);
}

void Storage::release() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (inline_block_) {
    std::shared_ptr<HostAllocator> allocator = std::move(allocator_);
    const std::size_t total = header_bytes() + nbytes_;
    this->~Storage();
    if (allocator != nullptr) {
      allocator->deallocate(this, total);
    } else {
      ::operator delete(static_cast<void*>(this));
    }
  } else {
    std::shared_ptr<StorageOwner> owner = std::move(owner_);
    void* data = data_;
    const std::size_t nbytes = nbytes_;
    delete this;
    if (owner != nullptr) owner->reclaim(data, nbytes);
  }
}

void Storage::set_pending(std::shared_ptr<PendingCompletion> completion) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_ = std::move(completion);
}

std::shared_ptr<PendingCompletion> Storage::pending() const {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  return pending_;
}

Status Storage::wait_ready() {
  std::shared_ptr<PendingCompletion> completion = pending();
  if (completion == nullptr) return ok_status();
  Status status = completion->wait();
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (pending_ == completion) pending_.reset();
  }
  return status;
}

}  // namespace tenferro
