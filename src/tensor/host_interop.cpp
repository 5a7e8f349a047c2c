// Host export/import (Note [Host export copies] in host_interop.h).
#include "tenferro/tensor/host_interop.h"

#include <cstring>

namespace tenferro {
namespace {

class DeleterOwner final : public StorageOwner {
 public:
  explicit DeleterOwner(std::function<void(void*)> deleter) : deleter_(std::move(deleter)) {}
  void reclaim(void* data, std::size_t /*nbytes*/) noexcept override {
    if (!deleter_) return;
    try {
      deleter_(data);
    } catch (...) {
      // A throwing deleter cannot be reported from a destructor path; the
      // memory is the caller's to leak. Nothing escapes this boundary.
    }
  }

 private:
  std::function<void(void*)> deleter_;
};

}  // namespace

Result<HostBuffer> export_host_mutable(Tensor& tensor) {
  if (!tensor.defined())
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone, "export of an undefined tensor");
  if (!tensor.is_host()) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                      "host export needs host storage, found storage domain {}; transfer explicitly first",
                      tensor.storage()->storage_domain());
  }
  for (std::size_t i = 0; i < tensor.shape().size(); ++i) {
    if (tensor.strides()[i] == 0 && tensor.shape()[i] > 1) {
      return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                        "host export of a broadcast tensor {}: its elements share addresses, so a mutable buffer "
                        "cannot represent it",
                        tensor.to_string());
    }
  }
  TENFERRO_TRY(tensor.storage()->wait_ready());
  int copies = 0;
  if (!tensor.is_contiguous()) {
    TENFERRO_ASSIGN_OR_RETURN(Tensor dense, Tensor::empty(tensor.shape(), tensor.dtype()));
    internal::copy_to_contiguous(tensor.view(), dense.data());
    tensor = std::move(dense);
    copies = 1;
  }
  return HostBuffer{tensor.data(), tensor.numel(), tensor.nbytes(), tensor.dtype(), copies};
}

Result<Tensor> adopt_host(void* data, IntArrayRef shape, DType dtype, std::function<void(void*)> deleter) {
  if (data == nullptr) return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "adopt_host: null data");
  if (reinterpret_cast<std::uintptr_t>(data) % dtype_alignment(dtype) != 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "adopt_host: address {} is not aligned for {}",
                      fmt::ptr(data), dtype);
  }
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t n, checked_numel(shape));
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(n), dtype_size(dtype), &bytes)) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "adopt_host: {} elements overflow", n);
  }
  std::shared_ptr<StorageOwner> owner;
  try {
    owner = std::make_shared<DeleterOwner>(std::move(deleter));
  } catch (...) {
    return status_from_current_exception(ErrorStage::kNone, "adopt_host");
  }
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage, Storage::wrap(data, bytes, StorageDescriptor{}, std::move(owner)));
  return Tensor::from_storage(std::move(storage), dtype, shape, row_major_strides(shape));
}

Result<Tensor> import_host_copy(const void* data, IntArrayRef shape, DType dtype) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(shape, dtype));
  if (t.nbytes() != 0) {
    if (data == nullptr)
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "import_host_copy: null data");
    std::memcpy(t.data(), data, t.nbytes());
  }
  return t;
}

}  // namespace tenferro
