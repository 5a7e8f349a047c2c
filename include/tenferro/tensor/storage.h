// Storage: a reference-counted block of tensor memory and its identities.
//
// Note [Storage identities]
// Every storage records:
//  - its StorageDomainId: the address space / interoperability class (all
//    host memory shares kHostStorageDomain, whatever NUMA node it is on);
//  - its AllocationDomainId and owner: who reclaims the memory (the default
//    aligned allocator, a NUMA-node pool, a caller's deleter, a device
//    allocator); memory always returns to the owner that produced it;
//  - an optional MemoryAffinity: the CPU domain or GPU device it lives on;
//  - a pending-completion slot an asynchronous producer fills until the data
//    is written.
// A storage never holds a strong reference to a runtime or engine: owners and
// completions are small objects that runtimes keep independent of themselves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"

namespace tenferro {

/// Where memory lives, beyond its storage domain: nothing known, a CPU
/// resource domain (NUMA affinity, a scheduling hint), or a GPU device
/// (strict). Trivially copyable value.
class MemoryAffinity {
 public:
  enum class Kind : std::uint8_t { kNone, kCpuDomain, kDevice };

  constexpr MemoryAffinity() noexcept = default;
  static constexpr MemoryAffinity cpu_domain(CpuDomainId id) noexcept { return {Kind::kCpuDomain, id.value()}; }
  static constexpr MemoryAffinity device(DeviceId id) noexcept { return {Kind::kDevice, id.value()}; }

  constexpr Kind kind() const noexcept { return kind_; }
  constexpr bool has_cpu_domain() const noexcept { return kind_ == Kind::kCpuDomain; }
  constexpr bool has_device() const noexcept { return kind_ == Kind::kDevice; }
  /// Precondition: has_cpu_domain().
  constexpr CpuDomainId cpu_domain_id() const noexcept { return CpuDomainId(id_); }
  /// Precondition: has_device().
  constexpr DeviceId device_id() const noexcept { return DeviceId(id_); }

  friend constexpr bool operator==(MemoryAffinity, MemoryAffinity) noexcept = default;

 private:
  constexpr MemoryAffinity(Kind kind, std::uint64_t id) noexcept : kind_(kind), id_(id) {}
  Kind kind_ = Kind::kNone;
  std::uint64_t id_ = 0;
};

/// Host memory with 64-byte alignment, from a pool or NUMA-node allocator.
/// Implementations must be thread-safe. A storage allocated from an allocator
/// retains it (shared_ptr) until the memory is returned.
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  virtual AllocationDomainId allocation_domain() const noexcept = 0;
  virtual MemoryAffinity affinity() const noexcept = 0;
  /// `bytes` of 64-byte aligned memory, or nullptr when exhausted.
  virtual void* allocate(std::size_t bytes) noexcept = 0;
  /// Returns memory from allocate(bytes).
  virtual void deallocate(void* block, std::size_t bytes) noexcept = 0;
};

/// Reclaims memory that tenferro did not allocate (adopted buffers, device
/// memory). reclaim() runs exactly once, on the thread dropping the last
/// reference, and must not throw or block on a runtime.
class StorageOwner {
 public:
  virtual ~StorageOwner() = default;
  virtual void reclaim(void* data, std::size_t nbytes) noexcept = 0;
};

/// The completion of an asynchronous producer writing a storage. Implemented
/// by runtimes; must not retain the runtime itself. Thread-safe.
class PendingCompletion {
 public:
  virtual ~PendingCompletion() = default;
  virtual bool is_complete() const noexcept = 0;
  /// Blocks until complete; returns the producer's status.
  virtual Status wait() noexcept = 0;
};

/// Identities of a storage that does not come from a HostAllocator.
struct StorageDescriptor {
  StorageDomainId storage_domain = kHostStorageDomain;
  AllocationDomainId allocation_domain = kAdoptedHostAllocationDomain;
  MemoryAffinity affinity;
};

class StorageRef;
namespace internal {
struct TensorBorrow;
}  // namespace internal

/// A block of tensor memory. Created only through the factories below and
/// owned through StorageRef. Metadata is immutable; the pending slot is
/// thread-safe.
class Storage {
 public:
  /// Alignment of every host allocation tenferro makes.
  static constexpr std::size_t kHostAlignment = 64;

  /// `nbytes` of 64-byte aligned host memory in one allocation together with
  /// this header, from `allocator` or, when null, the default host allocator.
  /// Contents are uninitialised. kResourceExhausted when memory runs out.
  static Result<StorageRef> allocate_host(std::size_t nbytes, std::shared_ptr<HostAllocator> allocator = nullptr);
  /// Wraps caller memory; `owner` (may be null for memory the caller keeps
  /// alive longer than every tensor using it) reclaims it.
  static Result<StorageRef> wrap(void* data, std::size_t nbytes, StorageDescriptor descriptor,
                                 std::shared_ptr<StorageOwner> owner);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t nbytes() const noexcept { return nbytes_; }
  StorageDomainId storage_domain() const noexcept { return storage_domain_; }
  AllocationDomainId allocation_domain() const noexcept { return allocation_domain_; }
  MemoryAffinity affinity() const noexcept { return affinity_; }
  bool is_host() const noexcept { return storage_domain_ == kHostStorageDomain; }
  /// True when the memory came from (and returns to) `allocator`.
  bool allocated_by(const HostAllocator* allocator) const noexcept { return allocator_.get() == allocator; }
  /// Number of StorageRefs sharing this storage (a snapshot).
  std::size_t use_count() const noexcept { return refs_.load(std::memory_order_acquire); }

  /// Marks the storage as being written by an asynchronous producer.
  void set_pending(std::shared_ptr<PendingCompletion> completion);
  /// The pending producer, or null when the data is ready.
  std::shared_ptr<PendingCompletion> pending() const;
  /// Waits for a pending producer; clears the slot on success. A failed
  /// producer's status is returned (and stays pending, so later readers see
  /// the same failure).
  Status wait_ready();

 private:
  friend class StorageRef;
  Storage(void* data, std::size_t nbytes, StorageDomainId storage_domain, AllocationDomainId allocation_domain,
          MemoryAffinity affinity) noexcept;
  ~Storage();
  void release() noexcept;

  std::atomic<std::size_t> refs_{1};
  void* data_;
  std::size_t nbytes_;
  StorageDomainId storage_domain_;
  AllocationDomainId allocation_domain_;
  MemoryAffinity affinity_;
  bool inline_block_ = false;  // header and data share one allocation
  std::shared_ptr<HostAllocator> allocator_;
  std::shared_ptr<StorageOwner> owner_;
  mutable std::mutex pending_mutex_;
  std::shared_ptr<PendingCompletion> pending_;
};

/// An owning, intrusively counted reference to a Storage. Copying is one
/// atomic increment. Thread-safe like std::shared_ptr.
class StorageRef {
 public:
  StorageRef() noexcept = default;
  StorageRef(const StorageRef& other) noexcept : p_(other.p_) {
    if (p_ != nullptr) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  StorageRef(StorageRef&& other) noexcept : p_(other.p_) { other.p_ = nullptr; }
  StorageRef& operator=(StorageRef other) noexcept {
    std::swap(p_, other.p_);
    return *this;
  }
  ~StorageRef() {
    if (p_ != nullptr) p_->release();
  }

  Storage* get() const noexcept { return p_; }
  Storage& operator*() const noexcept { return *p_; }
  Storage* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  friend class Storage;
  friend struct internal::TensorBorrow;
  explicit StorageRef(Storage* p) noexcept : p_(p) {}
  Storage* p_ = nullptr;
};

}  // namespace tenferro
