// Host interop for MPI, numpy and other code that wants a plain buffer.
//
// Note [Host export copies]
// export_host_mutable() hands out a contiguous, mutable host buffer that IS
// the tensor's storage, so writes through it (e.g. an in-place
// MPI_Allreduce) land in the tensor. When the tensor already is a dense
// row-major host tensor no data moves (copies == 0). Otherwise the tensor is
// rebound to a fresh contiguous copy of its elements (copies == 1); other
// Tensors that shared the old storage keep the old data and no longer alias
// this one. No other copy is ever made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro {

/// A contiguous mutable host buffer exported from a Tensor. Valid while the
/// tensor keeps its storage (do not reassign the tensor while using it).
struct HostBuffer {
  void* data = nullptr;
  std::int64_t numel = 0;
  std::size_t nbytes = 0;
  DType dtype = DType::kFloat64;
  /// Element copies made to produce the buffer: 0 or 1 (Note [Host export copies]).
  int copies = 0;
};

/// Exports `tensor` as a contiguous mutable host buffer, waiting for any
/// pending producer first. kFailedPrecondition for non-host storage and
/// broadcast (stride-0) tensors, whose elements share addresses.
Result<HostBuffer> export_host_mutable(Tensor& tensor);

/// Adopts caller memory holding a row-major tensor without copying;
/// `deleter(data)` runs when the last reference goes away. `data` must be
/// aligned for `dtype`. kInvalidArgument for null or misaligned data.
Result<Tensor> adopt_host(void* data, IntArrayRef shape, DType dtype, std::function<void(void*)> deleter);

/// A row-major tensor holding one copy of the row-major elements at `data`.
Result<Tensor> import_host_copy(const void* data, IntArrayRef shape, DType dtype);

}  // namespace tenferro
