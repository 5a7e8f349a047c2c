#include "tenferro/tensor/host_interop.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

namespace tenferro {
namespace {

Tensor iota_f64(IntArrayRef shape) {
  std::vector<double> v(static_cast<std::size_t>(*checked_numel(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return *Tensor::from_values<double>(v, shape);
}

TEST(HostInteropTest, ContiguousExportIsZeroCopyAndWritesThrough) {
  Tensor t = iota_f64({2, 3});
  void* original = t.data();
  auto buffer = export_host_mutable(t);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->copies, 0);
  EXPECT_EQ(buffer->data, original);
  EXPECT_EQ(buffer->numel, 6);
  EXPECT_EQ(buffer->nbytes, 48u);
  static_cast<double*>(buffer->data)[4] = 40.0;  // e.g. an in-place allreduce
  EXPECT_EQ((*t.to_vector<double>())[4], 40.0);
}

TEST(HostInteropTest, StridedExportMakesExactlyOneCopyAndRebinds) {
  Tensor base = iota_f64({3, 4});
  Tensor t = *base.transpose(0, 1);  // shape (4, 3), not contiguous
  const std::vector<double> logical = *t.to_vector<double>();
  auto buffer = export_host_mutable(t);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->copies, 1);
  EXPECT_NE(t.storage().get(), base.storage().get());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(buffer->data, t.data());
  const auto* data = static_cast<const double*>(buffer->data);
  EXPECT_EQ(std::vector<double>(data, data + 12), logical);
  // A second export of the now-contiguous tensor copies nothing.
  auto again = export_host_mutable(t);
  EXPECT_EQ(again->copies, 0);
  EXPECT_EQ(again->data, buffer->data);
  // The old storage is untouched by writes through the export.
  static_cast<double*>(buffer->data)[0] = -1.0;
  EXPECT_EQ((*base.to_vector<double>())[0], 0.0);
}

TEST(HostInteropTest, OffsetSliceExportIsZeroCopyWhenRowsAreDense) {
  Tensor base = iota_f64({4, 3});
  Tensor rows = *base.slice(0, 1, 3);
  auto buffer = export_host_mutable(rows);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->copies, 0);
  EXPECT_EQ(static_cast<double*>(buffer->data)[0], 3.0);
}

TEST(HostInteropTest, BroadcastAndUndefinedExportsAreRejected) {
  Tensor v = iota_f64({3});
  Tensor b = *v.broadcast_to({2, 3});
  const void* before = b.data();
  EXPECT_EQ(export_host_mutable(b).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(b.data(), before);
  Tensor undefined;
  EXPECT_EQ(export_host_mutable(undefined).status().code(), ErrorCode::kFailedPrecondition);
}

TEST(HostInteropTest, NonHostStorageIsNotExported) {
  static double device_memory[4];
  StorageDescriptor d;
  d.storage_domain = StorageDomainId(4242);
  StorageRef storage = *Storage::wrap(device_memory, sizeof(device_memory), d, nullptr);
  Tensor t = *Tensor::from_storage(storage, DType::kFloat64, {4}, {1});
  EXPECT_EQ(export_host_mutable(t).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(t.to_vector<double>().status().code(), ErrorCode::kFailedPrecondition);
}

TEST(HostInteropTest, AdoptIsZeroCopyAndCallsTheDeleterOnce) {
  int deletions = 0;
  auto* raw = static_cast<double*>(std::aligned_alloc(64, 64));
  std::iota(raw, raw + 6, 1.0);
  {
    auto t = adopt_host(raw, {2, 3}, DType::kFloat64, [&deletions](void* p) {
      ++deletions;
      std::free(p);
    });
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->data(), raw);
    EXPECT_EQ(t->storage()->allocation_domain(), kAdoptedHostAllocationDomain);
    Tensor view = *t->transpose(0, 1);
    EXPECT_EQ((*view.to_vector<double>())[1], 4.0);
  }
  EXPECT_EQ(deletions, 1);
}

TEST(HostInteropTest, AdoptRejectsBadInput) {
  EXPECT_EQ(adopt_host(nullptr, {2}, DType::kFloat64, nullptr).status().code(), ErrorCode::kInvalidArgument);
  alignas(8) char buffer[32];
  EXPECT_EQ(adopt_host(buffer + 1, {2}, DType::kFloat64, nullptr).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(adopt_host(buffer, {-2}, DType::kFloat64, nullptr).status().code(), ErrorCode::kInvalidArgument);
}

TEST(HostInteropTest, ImportCopiesOnce) {
  std::vector<std::int32_t> src{1, 2, 3, 4};
  auto t = import_host_copy(src.data(), {2, 2}, DType::kInt32);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->data(), static_cast<void*>(src.data()));
  src[0] = 100;
  EXPECT_EQ((*t->to_vector<std::int32_t>())[0], 1);
  EXPECT_EQ(import_host_copy(nullptr, {2}, DType::kInt32).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(import_host_copy(nullptr, {0}, DType::kInt32).ok());
}

}  // namespace
}  // namespace tenferro
