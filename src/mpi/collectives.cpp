// Host collectives (collectives.h): argument checks, the agreement step of
// Note [Checked collectives], and the in-place MPI calls.
#include "tenferro/mpi/collectives.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mpi/checked.h"
#include "tenferro/base/function_ref.h"
#include "tenferro/tensor/host_interop.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::mpi {

using internal::agree_on;
using internal::check_op;
using internal::mpi_op;
using internal::mpi_type;

namespace {

// The local half of every collective: a defined host tensor exported in
// place, with at most INT_MAX elements (per block of `blocks`).
Result<HostBuffer> export_local(Tensor& tensor, std::string_view what, std::int64_t blocks = 1) {
  if (!tensor.defined()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: expected a tensor, found an undefined one",
                      what);
  }
  if (!tensor.is_host()) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                      "{}: expected a host tensor, found {} in non-host storage", what, tensor.to_string());
  }
  if (tensor.numel() / blocks > INT_MAX) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone,
                      "{}: expected at most {} elements per MPI call, found {}", what, INT_MAX,
                      tensor.numel() / blocks);
  }
  return export_host_mutable(tensor);
}

Status leading_extent_is_size(const Tensor& tensor, const Communicator& comm, std::string_view what) {
  if (tensor.rank() >= 1 && tensor.size(0) == comm.size()) return ok_status();
  return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                    "{}: expected a tensor of shape [{}, ...] (one block per rank), found shape {}", what, comm.size(),
                    shape_to_string(tensor.shape()));
}

// export_local() for a collective with a root: kInvalidArgument for a root
// outside the communicator.
Result<HostBuffer> export_with_root(const Communicator& comm, Tensor& tensor, int root, std::string_view what) {
  if (root < 0 || root >= comm.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: expected a root in [0, {}), found {}", what,
                      comm.size(), root);
  }
  return export_local(tensor, what);
}

// Note [Collectives on views]
// A collective on a non-contiguous view (a transposed tensor, a strided
// slice) runs on the contiguous copy export_host_mutable makes (Note [Host
// export copies]). Its result is copied back into the view's elements and
// `tensor` is the view again, so the tensor it views sees the result, as an
// in-place call promises (it used to stay rebound to the copy, the viewed
// tensor unchanged). On failure the view keeps its elements.
Status in_place(Tensor& tensor, const Tensor& view, const Result<HostBuffer>& buffer, FunctionRef<Status()> body) {
  const Status done = body();
  if (!buffer.ok() || buffer->copies == 0) return done;
  if (done.ok()) tenferro::internal::copy_from_contiguous(buffer->data, view.view());
  tensor = view;
  return done;
}

}  // namespace

Status allreduce(const Communicator& comm, Tensor& tensor, ReduceOp op) {
  constexpr std::string_view what = "mpi allreduce";
  const Tensor view = tensor;
  Result<HostBuffer> buffer = export_local(tensor, what);
  return in_place(tensor, view, buffer, [&]() -> Status {
    Status local = buffer.status();
    if (local.ok()) local = check_op(op, tensor.dtype(), what);
    TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.shape(), static_cast<std::int64_t>(op)));
    return mpi_status(MPI_Allreduce(MPI_IN_PLACE, buffer->data, static_cast<int>(buffer->numel),
                                    mpi_type(tensor.dtype()), mpi_op(op), comm.comm()),
                      "MPI_Allreduce");
  });
}

Status allreduce(const Communicator& comm, const Tensor& input, Tensor& output, ReduceOp op) {
  constexpr std::string_view what = "mpi allreduce";
  const Tensor view = output;
  Result<HostBuffer> out = export_local(output, what);
  Tensor staged = input;  // a non-contiguous input is read through one contiguous copy
  Result<HostBuffer> in = make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: not exported", what);
  return in_place(output, view, out, [&]() -> Status {
    Status local = out.status();
    if (local.ok() && !input.defined()) {
      local = make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                         "{}: expected an input tensor, found an "
                         "undefined one",
                         what);
    }
    if (local.ok() && input.dtype() != view.dtype()) {
      local = make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                         "{}: expected an output of the input's dtype "
                         "{}, found {}",
                         what, input.dtype(), view.dtype());
    }
    if (local.ok() && !std::ranges::equal(input.shape(), view.shape())) {
      local = make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                         "{}: expected an output of the input's shape "
                         "{}, found {}",
                         what, shape_to_string(input.shape()), shape_to_string(view.shape()));
    }
    if (local.ok()) {
      in = export_local(staged, what);
      local = in.status();
    }
    if (local.ok()) local = check_op(op, view.dtype(), what);
    const bool same = local.ok() && in->data == out->data;
    if (local.ok() && !same) {
      const auto* i = static_cast<const char*>(in->data);
      const auto* o = static_cast<const char*>(out->data);
      if (i < o + out->nbytes && o < i + in->nbytes) {
        local = make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                           "{}: expected an output that is the input or does not overlap it, found a partial "
                           "overlap",
                           what);
      }
    }
    TENFERRO_TRY(agree_on(comm, local, what, view.dtype(), view.shape(), static_cast<std::int64_t>(op)));
    return mpi_status(MPI_Allreduce(same ? MPI_IN_PLACE : in->data, out->data, static_cast<int>(out->numel),
                                    mpi_type(view.dtype()), mpi_op(op), comm.comm()),
                      "MPI_Allreduce");
  });
}

Status reduce(const Communicator& comm, Tensor& tensor, ReduceOp op, int root) {
  constexpr std::string_view what = "mpi reduce";
  const Tensor view = tensor;
  Result<HostBuffer> buffer = export_with_root(comm, tensor, root, what);
  return in_place(tensor, view, buffer, [&]() -> Status {
    Status local = buffer.status();
    if (local.ok()) local = check_op(op, tensor.dtype(), what);
    TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.shape(), static_cast<std::int64_t>(op), root));
    const bool at_root = comm.rank() == root;
    return mpi_status(
        MPI_Reduce(at_root ? MPI_IN_PLACE : buffer->data, at_root ? buffer->data : nullptr,
                   static_cast<int>(buffer->numel), mpi_type(tensor.dtype()), mpi_op(op), root, comm.comm()),
        "MPI_Reduce");
  });
}

Status allgather(const Communicator& comm, Tensor& tensor) {
  constexpr std::string_view what = "mpi allgather";
  const Tensor view = tensor;
  const Status shape = tensor.defined() ? leading_extent_is_size(tensor, comm, what) : ok_status();
  Result<HostBuffer> buffer = shape.ok() ? export_local(tensor, what, comm.size()) : Result<HostBuffer>(shape);
  return in_place(tensor, view, buffer, [&]() -> Status {
    TENFERRO_TRY(agree_on(comm, buffer.status(), what, tensor.dtype(), tensor.shape()));
    const auto block = static_cast<int>(buffer->numel / comm.size());
    return mpi_status(
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer->data, block, mpi_type(tensor.dtype()), comm.comm()),
        "MPI_Allgather");
  });
}

Status broadcast(const Communicator& comm, Tensor& tensor, int root) {
  constexpr std::string_view what = "mpi broadcast";
  const Tensor view = tensor;
  Result<HostBuffer> buffer = export_with_root(comm, tensor, root, what);
  return in_place(tensor, view, buffer, [&]() -> Status {
    TENFERRO_TRY(agree_on(comm, buffer.status(), what, tensor.dtype(), tensor.shape(), 0, root));
    return mpi_status(
        MPI_Bcast(buffer->data, static_cast<int>(buffer->numel), mpi_type(tensor.dtype()), root, comm.comm()),
        "MPI_Bcast");
  });
}

Result<Tensor> reduce_scatter(const Communicator& comm, Tensor& tensor, ReduceOp op) {
  constexpr std::string_view what = "mpi reduce_scatter";
  const Tensor view = tensor;
  const Status shape = tensor.defined() ? leading_extent_is_size(tensor, comm, what) : ok_status();
  Result<HostBuffer> buffer = shape.ok() ? export_local(tensor, what, comm.size()) : Result<HostBuffer>(shape);
  TENFERRO_TRY(in_place(tensor, view, buffer, [&]() -> Status {
    Status local = buffer.status();
    if (local.ok()) local = check_op(op, tensor.dtype(), what);
    TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.shape(), static_cast<std::int64_t>(op)));
    const auto block = static_cast<int>(buffer->numel / comm.size());
    return mpi_status(
        MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer->data, block, mpi_type(tensor.dtype()), mpi_op(op), comm.comm()),
        "MPI_Reduce_scatter_block");
  }));
  TENFERRO_ASSIGN_OR_RETURN(Tensor first, tensor.slice(0, 0, 1));
  return first.squeeze(0);
}

Status send(const Communicator& comm, const Tensor& tensor, int dest, int tag) {
  constexpr std::string_view what = "mpi send";
  if (dest < 0 || dest >= comm.size() || tag < 0) {
    // Nobody can be told: the destination itself is wrong.
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected a destination in [0, {}) and a tag >= 0, found {} and {}", what, comm.size(), dest,
                      tag);
  }
  Tensor staged = tensor;  // shares storage; export copies only a non-contiguous tensor
  Result<HostBuffer> buffer = export_local(staged, what);
  return internal::send_elements(comm, buffer.ok() ? buffer->data : nullptr, buffer.ok() ? buffer->numel : 0,
                                 tensor.dtype(), dest, tag, buffer.status());
}

Status recv(const Communicator& comm, Tensor& tensor, int source, int tag) {
  constexpr std::string_view what = "mpi recv";
  if (source < 0 || source >= comm.size() || tag < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected a source in [0, {}) and a tag >= 0, found {} and {}", what, comm.size(), source,
                      tag);
  }
  const Tensor view = tensor;
  Result<HostBuffer> buffer = export_local(tensor, what);
  return in_place(tensor, view, buffer, [&] {
    return internal::recv_elements(comm, buffer.ok() ? buffer->data : nullptr, tensor.numel(), tensor.dtype(), source,
                                   tag, buffer.status());
  });
}

Status agree(const Communicator& comm, const Status& local, std::string_view what, bool* root_reports) {
  return agree_on(comm, local, what, DType::kBool, {}, 0, 0, root_reports);
}

}  // namespace tenferro::mpi
