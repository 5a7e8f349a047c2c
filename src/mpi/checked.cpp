// The shared pieces of Note [Checked collectives] (checked.h).
#include "mpi/checked.h"

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tenferro::mpi::internal {

namespace {

std::string_view op_name(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kLogicalAnd:
      return "logical and";
    case ReduceOp::kLogicalOr:
      return "logical or";
  }
  return "?";
}

// One rank's failure, sent by that rank to all (Note [Checked collectives]).
Status share_failure(const Communicator& comm, int failed_rank, const Status& local, std::string_view what,
                     bool* root_reports) {
  std::int64_t header[3] = {0, 0, 0};
  std::string text;
  if (comm.rank() == failed_rank) {
    text = local.message();  // its code and stage travel in the header
    header[0] = static_cast<std::int64_t>(local.code());
    header[1] = static_cast<std::int64_t>(local.stage());
    header[2] = static_cast<std::int64_t>(text.size());
  }
  TENFERRO_TRY(mpi_status(MPI_Bcast(header, 3, MPI_INT64_T, failed_rank, comm.comm()), "MPI_Bcast"));
  text.resize(static_cast<std::size_t>(header[2]));
  TENFERRO_TRY(
      mpi_status(MPI_Bcast(text.data(), static_cast<int>(header[2]), MPI_CHAR, failed_rank, comm.comm()), "MPI_Bcast"));
  // Rank 0 returns the shared failure (its own, or a report of it), so it
  // carries this rank's unless this rank failed differently.
  if (root_reports != nullptr) *root_reports = local.ok() || local.message() == text;
  if (!local.ok()) return local;  // this rank's own failure, whichever rank's was shared
  // The failing rank's message usually starts with `what` itself: said once.
  std::string_view reason = text;
  if (reason.starts_with(what) && reason.substr(what.size()).starts_with(": ")) reason.remove_prefix(what.size() + 2);
  return Error(static_cast<ErrorCode>(header[0]), static_cast<ErrorStage>(header[1]),
               fmt::format("{}: rank {} of {} failed: {}", what, failed_rank, comm.size(), reason));
}

}  // namespace

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

Status check_op(ReduceOp op, DType dtype, std::string_view what) {
  std::string_view dtypes;
  bool ok = false;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
      ok = dtype != DType::kBool;
      dtypes = "integer, floating or complex";
      break;
    case ReduceOp::kMax:
    case ReduceOp::kMin:
      ok = dtype != DType::kBool && !is_complex(dtype);
      dtypes = "integer or floating";
      break;
    case ReduceOp::kLogicalAnd:
    case ReduceOp::kLogicalOr:
      ok = dtype == DType::kBool;
      dtypes = "bool";
      break;
  }
  if (ok) return ok_status();
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "{}: expected a dtype with a {} reduction ({}), found {}", what, op_name(op), dtypes, dtype);
}

// The agreement step: every rank contributes, whatever it found locally.
Status agree_on(const Communicator& comm, const Status& local, std::string_view what, DType dtype, IntArrayRef shape,
                std::int64_t op, std::int64_t root, bool* root_reports) {
  if (root_reports != nullptr) *root_reports = false;
  TENFERRO_TRY(mpi_running(what));
  const auto d = static_cast<std::int64_t>(dtype);
  // Which collective: ranks calling different ones (an allreduce here, a
  // reduce there) would otherwise pass and then wait in different MPI calls.
  const auto fnv = [](std::uint64_t h, std::uint64_t byte) { return (h ^ byte) * 1099511628211ULL; };
  std::uint64_t kind_hash = 14695981039346656037ULL;
  for (char ch : what) kind_hash = fnv(kind_hash, static_cast<unsigned char>(ch));
  const auto kind = static_cast<std::int64_t>(kind_hash >> 24);
  // The shape: its element count, and a hash of its rank and extents (a
  // [2, 2] here and a [4] there have as many elements, but numpy users
  // expect them refused, Note [Checked collectives]).
  std::int64_t numel = 1;
  std::uint64_t shape_hash = fnv(14695981039346656037ULL, shape.size());
  for (const std::int64_t e : shape) {
    numel *= e;
    for (int byte = 0; byte < 8; ++byte)
      shape_hash = fnv(shape_hash, (static_cast<std::uint64_t>(e) >> (8 * byte)) & 0xff);
  }
  const auto extents = static_cast<std::int64_t>(shape_hash >> 24);
  // The lowest failing rank's failure is shared (size - rank is largest for
  // it): rank 0 then reports its own, which one report per job relies on.
  std::int64_t v[13] = {local.ok() ? 0 : comm.size() - comm.rank(),
                        d,
                        -d,
                        numel,
                        -numel,
                        op,
                        -op,
                        root,
                        -root,
                        kind,
                        -kind,
                        extents,
                        -extents};
  if (!local.ok()) {
    // A failed rank's arguments must not look like a mismatch.
    for (int i = 1; i < 13; ++i) v[i] = LLONG_MIN / 2;
  }
  TENFERRO_TRY(mpi_status(MPI_Allreduce(MPI_IN_PLACE, v, 13, MPI_INT64_T, MPI_MAX, comm.comm()), "MPI_Allreduce"));
  if (v[0] > 0) return share_failure(comm, comm.size() - static_cast<int>(v[0]), local, what, root_reports);
  // A disagreement below is found, and reported, by every rank alike.
  if (root_reports != nullptr) *root_reports = true;
  if (v[9] != -v[10]) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected the same collective on every rank, found another one on some rank", what);
  }
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
  if (v[11] != -v[12]) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "{}: expected the same shape on every rank ({} here), found another shape of as many elements "
                      "on some rank",
                      what, shape_to_string(shape));
  }
  // The operation is a ReduceOp or a program::CollectiveReduction (sum 0, max 1).
  if (v[5] != -v[6]) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected the same operation on every rank, found {} on some ranks and {} on others", what,
                      op_name(static_cast<ReduceOp>(-v[6])), op_name(static_cast<ReduceOp>(v[5])));
  }
  if (v[7] != -v[8]) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected the same root on every rank, found roots from {} to {}", what, -v[8], v[7]);
  }
  return ok_status();
}

MPI_Op mpi_op(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kProd:
      return MPI_PROD;
    case ReduceOp::kLogicalAnd:
      return MPI_LAND;
    case ReduceOp::kLogicalOr:
      return MPI_LOR;
  }
  return MPI_OP_NULL;
}

Status send_elements(const Communicator& comm, const void* data, std::int64_t numel, DType dtype, int dest, int tag,
                     const Status& local) {
  TENFERRO_TRY(mpi_running("mpi send"));
  // Header: the sender's error code (0: none), dtype, element count.
  std::int64_t header[3] = {local.ok() ? 0 : static_cast<std::int64_t>(local.code()), static_cast<std::int64_t>(dtype),
                            local.ok() ? numel : 0};
  TENFERRO_TRY(mpi_status(MPI_Send(header, 3, MPI_INT64_T, dest, tag, comm.comm()), "MPI_Send"));
  if (!local.ok()) return local;
  return mpi_status(MPI_Send(data, static_cast<int>(numel), mpi_type(dtype), dest, tag, comm.comm()), "MPI_Send");
}

Status recv_elements(const Communicator& comm, void* data, std::int64_t numel, DType dtype, int source, int tag,
                     const Status& local) {
  constexpr std::string_view what = "mpi recv";
  TENFERRO_TRY(mpi_running(what));
  std::int64_t header[3] = {0, 0, 0};
  TENFERRO_TRY(mpi_status(MPI_Recv(header, 3, MPI_INT64_T, source, tag, comm.comm(), MPI_STATUS_IGNORE), "MPI_Recv"));
  if (header[0] != 0) {
    return Error(static_cast<ErrorCode>(header[0]), ErrorStage::kNone,
                 fmt::format("{}: rank {} could not send (its send failed with {})", what, source,
                             to_string(static_cast<ErrorCode>(header[0]))));
  }
  const auto sent_dtype = static_cast<DType>(header[1]);
  const std::int64_t sent_numel = header[2];
  Status status = local;
  if (status.ok() && sent_dtype != dtype) {
    status = make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "{}: expected {} from rank {}, found {}", what,
                        dtype, source, sent_dtype);
  } else if (status.ok() && sent_numel != numel) {
    status = make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "{}: expected {} elements from rank {}, found {}",
                        what, numel, source, sent_numel);
  }
  if (!status.ok()) {
    // Consume the elements so that the next message of this pair matches.
    std::vector<std::byte> drain(static_cast<std::size_t>(sent_numel) * dtype_size(sent_dtype));
    TENFERRO_TRY(mpi_status(MPI_Recv(drain.data(), static_cast<int>(sent_numel), mpi_type(sent_dtype), source, tag,
                                     comm.comm(), MPI_STATUS_IGNORE),
                            "MPI_Recv"));
    return status;
  }
  return mpi_status(
      MPI_Recv(data, static_cast<int>(numel), mpi_type(dtype), source, tag, comm.comm(), MPI_STATUS_IGNORE),
      "MPI_Recv");
}

}  // namespace tenferro::mpi::internal
