// Host collectives (collectives.h): argument checks, the agreement step of
// Note [Checked collectives], and the in-place MPI calls.
#include "tenferro/mpi/collectives.h"

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tenferro/tensor/host_interop.h"

namespace tenferro::mpi {

namespace {

MPI_Datatype mpi_type(DType dtype) noexcept {
  switch (dtype) {
    case DType::kBool:
      return MPI_C_BOOL;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kComplex64:
      return MPI_C_FLOAT_COMPLEX;
    case DType::kComplex128:
      return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

std::string_view op_name(ReduceOp op) noexcept { return op == ReduceOp::kSum ? "sum" : "max"; }

Status check_op(ReduceOp op, DType dtype, std::string_view what) {
  const bool ok = op == ReduceOp::kSum ? dtype != DType::kBool : dtype != DType::kBool && !is_complex(dtype);
  if (ok) return ok_status();
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "{}: expected a dtype with a {} reduction ({}), found {}", what, op_name(op),
                    op == ReduceOp::kSum ? "integer, floating or complex" : "integer or floating", dtype);
}

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

// One rank's failure, sent by that rank to all (Note [Checked collectives]).
Status share_failure(const Communicator& comm, int failed_rank, const Status& local, std::string_view what) {
  std::int64_t header[3] = {0, 0, 0};
  std::string text;
  if (comm.rank() == failed_rank) {
    text = local.to_string();
    header[0] = static_cast<std::int64_t>(local.code());
    header[1] = static_cast<std::int64_t>(local.stage());
    header[2] = static_cast<std::int64_t>(text.size());
  }
  TENFERRO_TRY(mpi_status(MPI_Bcast(header, 3, MPI_INT64_T, failed_rank, comm.comm()), "MPI_Bcast"));
  text.resize(static_cast<std::size_t>(header[2]));
  TENFERRO_TRY(
      mpi_status(MPI_Bcast(text.data(), static_cast<int>(header[2]), MPI_CHAR, failed_rank, comm.comm()), "MPI_Bcast"));
  if (comm.rank() == failed_rank) return local;
  return Error(static_cast<ErrorCode>(header[0]), static_cast<ErrorStage>(header[1]),
               fmt::format("{}: rank {} of {} failed: {}", what, failed_rank, comm.size(), text));
}

// The agreement step: every rank contributes, whatever it found locally.
Status agree_on(const Communicator& comm, const Status& local, std::string_view what, DType dtype = DType::kBool,
                std::int64_t numel = 0, std::int64_t op = 0, std::int64_t root = 0) {
  const auto d = static_cast<std::int64_t>(dtype);
  std::int64_t v[9] = {local.ok() ? 0 : comm.rank() + 1, d, -d, numel, -numel, op, -op, root, -root};
  if (!local.ok()) {
    // A failed rank's arguments must not look like a mismatch.
    for (int i = 1; i < 9; ++i) v[i] = LLONG_MIN / 2;
  }
  TENFERRO_TRY(mpi_status(MPI_Allreduce(MPI_IN_PLACE, v, 9, MPI_INT64_T, MPI_MAX, comm.comm()), "MPI_Allreduce"));
  if (v[0] > 0) return share_failure(comm, static_cast<int>(v[0] - 1), local, what);
  if (v[1] != -v[2]) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                      "{}: expected one dtype on every rank ({} here), found dtypes from {} to {} across ranks", what,
                      dtype, static_cast<DType>(-v[2]), static_cast<DType>(v[1]));
  }
  if (v[3] != -v[4]) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "{}: expected the same element count on every rank ({} here), found {} to {} across ranks", what,
                      numel, -v[4], v[3]);
  }
  if (v[5] != -v[6] || v[7] != -v[8]) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected the same operation and root on every rank, found operations {} to {} and roots {} "
                      "to {}",
                      what, -v[6], v[5], -v[8], v[7]);
  }
  return ok_status();
}

Status leading_extent_is_size(const Tensor& tensor, const Communicator& comm, std::string_view what) {
  if (tensor.rank() >= 1 && tensor.size(0) == comm.size()) return ok_status();
  return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                    "{}: expected a tensor of shape [{}, ...] (one block per rank), found {}", what, comm.size(),
                    tensor.to_string());
}

MPI_Op mpi_op(ReduceOp op) noexcept { return op == ReduceOp::kSum ? MPI_SUM : MPI_MAX; }

}  // namespace

Status allreduce(const Communicator& comm, Tensor& tensor, ReduceOp op) {
  constexpr std::string_view what = "mpi allreduce";
  Result<HostBuffer> buffer = export_local(tensor, what);
  Status local = buffer.status();
  if (local.ok()) local = check_op(op, tensor.dtype(), what);
  TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.numel(), static_cast<std::int64_t>(op)));
  return mpi_status(MPI_Allreduce(MPI_IN_PLACE, buffer->data, static_cast<int>(buffer->numel), mpi_type(tensor.dtype()),
                                  mpi_op(op), comm.comm()),
                    "MPI_Allreduce");
}

Status allgather(const Communicator& comm, Tensor& tensor) {
  constexpr std::string_view what = "mpi allgather";
  Status local = tensor.defined() ? leading_extent_is_size(tensor, comm, what) : ok_status();
  Result<HostBuffer> buffer = local.ok() ? export_local(tensor, what, comm.size()) : Result<HostBuffer>(local);
  local = buffer.status();
  TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.numel()));
  const auto block = static_cast<int>(buffer->numel / comm.size());
  return mpi_status(
      MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer->data, block, mpi_type(tensor.dtype()), comm.comm()),
      "MPI_Allgather");
}

Status broadcast(const Communicator& comm, Tensor& tensor, int root) {
  constexpr std::string_view what = "mpi broadcast";
  Status local;
  if (root < 0 || root >= comm.size()) {
    local = make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: expected a root in [0, {}), found {}", what,
                       comm.size(), root);
  }
  Result<HostBuffer> buffer = local.ok() ? export_local(tensor, what) : Result<HostBuffer>(local);
  local = buffer.status();
  TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.numel(), 0, root));
  return mpi_status(
      MPI_Bcast(buffer->data, static_cast<int>(buffer->numel), mpi_type(tensor.dtype()), root, comm.comm()),
      "MPI_Bcast");
}

Result<Tensor> reduce_scatter(const Communicator& comm, Tensor& tensor, ReduceOp op) {
  constexpr std::string_view what = "mpi reduce_scatter";
  Status local = tensor.defined() ? leading_extent_is_size(tensor, comm, what) : ok_status();
  Result<HostBuffer> buffer = local.ok() ? export_local(tensor, what, comm.size()) : Result<HostBuffer>(local);
  local = buffer.status();
  if (local.ok()) local = check_op(op, tensor.dtype(), what);
  TENFERRO_TRY(agree_on(comm, local, what, tensor.dtype(), tensor.numel(), static_cast<std::int64_t>(op)));
  const auto block = static_cast<int>(buffer->numel / comm.size());
  TENFERRO_TRY(mpi_status(
      MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer->data, block, mpi_type(tensor.dtype()), mpi_op(op), comm.comm()),
      "MPI_Reduce_scatter_block"));
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
  // Header: the sender's error code (0: none), dtype, element count.
  std::int64_t header[3] = {buffer.ok() ? 0 : static_cast<std::int64_t>(buffer.status().code()),
                            static_cast<std::int64_t>(tensor.dtype()), buffer.ok() ? buffer->numel : 0};
  TENFERRO_TRY(mpi_status(MPI_Send(header, 3, MPI_INT64_T, dest, tag, comm.comm()), "MPI_Send"));
  if (!buffer.ok()) return buffer.status();
  return mpi_status(
      MPI_Send(buffer->data, static_cast<int>(buffer->numel), mpi_type(tensor.dtype()), dest, tag, comm.comm()),
      "MPI_Send");
}

Status recv(const Communicator& comm, Tensor& tensor, int source, int tag) {
  constexpr std::string_view what = "mpi recv";
  if (source < 0 || source >= comm.size() || tag < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected a source in [0, {}) and a tag >= 0, found {} and {}", what, comm.size(), source,
                      tag);
  }
  std::int64_t header[3] = {0, 0, 0};
  TENFERRO_TRY(mpi_status(MPI_Recv(header, 3, MPI_INT64_T, source, tag, comm.comm(), MPI_STATUS_IGNORE), "MPI_Recv"));
  if (header[0] != 0) {
    return Error(static_cast<ErrorCode>(header[0]), ErrorStage::kNone,
                 fmt::format("{}: rank {} could not send (its send failed with {})", what, source,
                             to_string(static_cast<ErrorCode>(header[0]))));
  }
  const auto sent_dtype = static_cast<DType>(header[1]);
  const std::int64_t sent_numel = header[2];
  Result<HostBuffer> buffer = export_local(tensor, what);
  Status local = buffer.status();
  if (local.ok() && sent_dtype != tensor.dtype()) {
    local = make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "{}: expected {} from rank {}, found {}", what,
                       tensor.dtype(), source, sent_dtype);
  } else if (local.ok() && sent_numel != tensor.numel()) {
    local =
        make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "{}: expected {} elements ({}) from rank {}, found {}",
                   what, tensor.numel(), tensor.to_string(), source, sent_numel);
  }
  if (!local.ok()) {
    // Consume the elements so that the next message of this pair matches.
    std::vector<std::byte> drain(static_cast<std::size_t>(sent_numel) * dtype_size(sent_dtype));
    TENFERRO_TRY(mpi_status(MPI_Recv(drain.data(), static_cast<int>(sent_numel), mpi_type(sent_dtype), source, tag,
                                     comm.comm(), MPI_STATUS_IGNORE),
                            "MPI_Recv"));
    return local;
  }
  return mpi_status(MPI_Recv(buffer->data, static_cast<int>(buffer->numel), mpi_type(tensor.dtype()), source, tag,
                             comm.comm(), MPI_STATUS_IGNORE),
                    "MPI_Recv");
}

Status agree(const Communicator& comm, const Status& local) { return agree_on(comm, local, "mpi agree"); }

}  // namespace tenferro::mpi
