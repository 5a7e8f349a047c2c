#include "tenferro/tensor/storage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace tenferro {
namespace {

class CountingAllocator final : public HostAllocator {
 public:
  AllocationDomainId allocation_domain() const noexcept override { return AllocationDomainId(77); }
  MemoryAffinity affinity() const noexcept override { return MemoryAffinity::cpu_domain(CpuDomainId(3)); }
  void* allocate(std::size_t bytes) noexcept override {
    if (fail) return nullptr;
    ++allocations;
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void deallocate(void* block, std::size_t /*bytes*/) noexcept override {
    ++deallocations;
    std::free(block);
  }
  bool fail = false;
  int allocations = 0;
  int deallocations = 0;
};

class RecordingOwner final : public StorageOwner {
 public:
  void reclaim(void* data, std::size_t nbytes) noexcept override {
    ++calls;
    last_data = data;
    last_nbytes = nbytes;
  }
  int calls = 0;
  void* last_data = nullptr;
  std::size_t last_nbytes = 0;
};

TEST(StorageTest, DefaultHostAllocationIsAlignedAndIdentified) {
  for (std::size_t n : {0u, 1u, 24u, 4096u}) {
    auto s = Storage::allocate_host(n);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*s)->data()) % Storage::kHostAlignment, 0u);
    EXPECT_EQ((*s)->nbytes(), n);
    EXPECT_TRUE((*s)->is_host());
    EXPECT_EQ((*s)->storage_domain(), kHostStorageDomain);
    EXPECT_EQ((*s)->allocation_domain(), kDefaultHostAllocationDomain);
    EXPECT_EQ((*s)->affinity().kind(), MemoryAffinity::Kind::kNone);
    EXPECT_TRUE((*s)->allocated_by(nullptr));
  }
}

TEST(StorageTest, HugeAllocationIsATypedError) {
  auto s = Storage::allocate_host(SIZE_MAX - 8);
  EXPECT_EQ(s.status().code(), ErrorCode::kResourceExhausted);
}

TEST(StorageTest, AllocatorMemoryReturnsToItsOwnPool) {
  auto pool = std::make_shared<CountingAllocator>();
  {
    auto s = Storage::allocate_host(100, pool);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->allocation_domain(), AllocationDomainId(77));
    EXPECT_EQ((*s)->affinity().cpu_domain_id(), CpuDomainId(3));
    EXPECT_TRUE((*s)->allocated_by(pool.get()));
    StorageRef copy = *s;
    EXPECT_EQ(copy->use_count(), 2u);
    EXPECT_EQ(pool->deallocations, 0);
  }
  EXPECT_EQ(pool->allocations, 1);
  EXPECT_EQ(pool->deallocations, 1);
  pool->fail = true;
  EXPECT_EQ(Storage::allocate_host(8, pool).status().code(), ErrorCode::kResourceExhausted);
}

TEST(StorageTest, StorageKeepsItsAllocatorAlive) {
  std::weak_ptr<CountingAllocator> weak;
  StorageRef kept;
  {
    auto pool = std::make_shared<CountingAllocator>();
    weak = pool;
    kept = *Storage::allocate_host(16, pool);
  }
  EXPECT_FALSE(weak.expired());
  kept = StorageRef();
  EXPECT_TRUE(weak.expired());
}

TEST(StorageTest, WrappedMemoryIsReclaimedExactlyOnceByItsOwner) {
  auto owner = std::make_shared<RecordingOwner>();
  double buffer[4];
  {
    StorageDescriptor d;
    d.allocation_domain = AllocationDomainId(9);
    d.affinity = MemoryAffinity::device(DeviceId(2));
    auto s = Storage::wrap(buffer, sizeof(buffer), d, owner);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->data(), buffer);
    EXPECT_EQ((*s)->affinity().device_id(), DeviceId(2));
    std::vector<StorageRef> copies(10, *s);
  }
  EXPECT_EQ(owner->calls, 1);
  EXPECT_EQ(owner->last_data, buffer);
  EXPECT_EQ(owner->last_nbytes, sizeof(buffer));
}

TEST(StorageTest, ConcurrentCopiesReleaseOnce) {
  auto owner = std::make_shared<RecordingOwner>();
  int dummy = 0;
  {
    StorageRef s = *Storage::wrap(&dummy, sizeof(dummy), {}, owner);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([s] {
        for (int i = 0; i < 10000; ++i) {
          StorageRef local = s;
          (void)local;
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(owner->calls, 1);
}

class ManualCompletion final : public PendingCompletion {
 public:
  explicit ManualCompletion(Status result) : result_(std::move(result)) {}
  bool is_complete() const noexcept override { return waits_ > 0; }
  Status wait() noexcept override {
    ++waits_;
    return result_;
  }
  int waits_ = 0;

 private:
  Status result_;
};

TEST(StorageTest, PendingCompletionIsAwaitedAndCleared) {
  StorageRef s = *Storage::allocate_host(8);
  EXPECT_TRUE(s->wait_ready().ok());
  auto done = std::make_shared<ManualCompletion>(Status());
  s->set_pending(done);
  EXPECT_EQ(s->pending(), done);
  EXPECT_TRUE(s->wait_ready().ok());
  EXPECT_EQ(done->waits_, 1);
  EXPECT_EQ(s->pending(), nullptr);
  auto failed =
      std::make_shared<ManualCompletion>(make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "kernel failed"));
  s->set_pending(failed);
  EXPECT_EQ(s->wait_ready().code(), ErrorCode::kInternal);
  EXPECT_EQ(s->wait_ready().stage(), ErrorStage::kCompletion) << "a failed producer stays visible";
}

}  // namespace
}  // namespace tenferro
