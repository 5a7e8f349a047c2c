// Internal: the pieces of Note [Checked collectives] shared by the direct
// collectives (collectives.cpp) and the runtime's collective provider
// (collective_provider.cpp): MPI types, the agreement step, and the
// point-to-point protocol (a header with the sender's error code, dtype and
// element count, then the elements).
#pragma once

#include <cstdint>
#include <string_view>

#include <mpi.h>

#include "tenferro/base/status.h"
#include "tenferro/mpi/collectives.h"
#include "tenferro/mpi/communicator.h"

namespace tenferro::mpi::internal {

/// The MPI datatype of `dtype`.
MPI_Datatype mpi_type(DType dtype) noexcept;
MPI_Op mpi_op(ReduceOp op) noexcept;

/// ok when `op` reduces `dtype`; kInvalidArgument naming `what` otherwise.
Status check_op(ReduceOp op, DType dtype, std::string_view what);

/// The agreement step: every rank contributes whatever it found locally
/// (`local`) with its dtype, shape (element count and a hash of the
/// extents), operation and root, and which collective it is in (`what`,
/// hashed); every rank returns the same error when any rank failed or the
/// ranks disagree. `root_reports`, when given, is set as agree()'s is.
Status agree_on(const Communicator& comm, const Status& local, std::string_view what, DType dtype = DType::kBool,
                IntArrayRef shape = {}, std::int64_t op = 0, std::int64_t root = 0, bool* root_reports = nullptr);

/// Sends the header, then (when `local` is ok) the `numel` elements at
/// `data`. Returns `local` when it failed. `dest` and `tag` are valid.
Status send_elements(const Communicator& comm, const void* data, std::int64_t numel, DType dtype, int dest, int tag,
                     const Status& local);

/// Receives a send_elements() into `numel` elements at `data`: the sender's
/// failure, or a dtype / element-count mismatch, is an error, and so is
/// `local` (then the elements are received into a scratch buffer and
/// dropped, so the next message of the pair still matches).
Status recv_elements(const Communicator& comm, void* data, std::int64_t numel, DType dtype, int source, int tag,
                     const Status& local);

}  // namespace tenferro::mpi::internal
