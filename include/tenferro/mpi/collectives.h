// Host collectives over a Communicator, in place on tensors: the tensor's
// storage is exported with export_host_mutable (host_interop.h), so a dense
// row-major host tensor is communicated without any copy.
//
// Note [Checked collectives]
// A rank that finds its own argument invalid (undefined or non-host tensor,
// wrong shape, unsupported dtype) must not simply return: the other ranks
// would wait in the collective forever. Every collective therefore starts
// with one small MPI_Allreduce over (failed rank, dtype, element count,
// a hash of the shape, operation, root, which collective) in which each
// rank takes part whatever it found. When a rank failed, every rank returns
// an error (a failing rank its own; the others the code of the lowest
// failing rank's error with "rank R of N failed: " and its message, sent by
// that rank), and nobody enters the
// data collective. When the ranks disagree on dtype, element count or shape,
// every rank returns kDTypeMismatch or kShapeMismatch (plain MPI would
// accept a [2, 2] here and a [4] there, which numpy users expect refused;
// the MPI audit of 2026-12-06). Only then does the data call run. The check
// costs one latency-bound allreduce of 13 integers per call.
// agree() applies the same protocol to any local Status, e.g. after each
// rank contracted its slices.
//
// Sizes: MPI counts are `int`, so a tensor (or one rank's block) of more
// than INT_MAX elements is kSizeOverflow on its rank (and surfaces on all).
#pragma once

#include <cstdint>

#include "tenferro/base/status.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::mpi {

/// Reduction of allreduce, reduce and reduce_scatter.
enum class ReduceOp : std::uint8_t {
  kSum,         ///< numeric dtypes (not bool)
  kMax,         ///< real dtypes (not bool, not complex)
  kMin,         ///< real dtypes (not bool, not complex)
  kProd,        ///< numeric dtypes (not bool)
  kLogicalAnd,  ///< bool
  kLogicalOr,   ///< bool
};

/// Every rank's `tensor` becomes the elementwise reduction over all ranks
/// (MPI_Allreduce, in place). Collective. Errors (on every rank, Note
/// [Checked collectives]): kInvalidArgument for an undefined tensor or an
/// op the dtype lacks, kFailedPrecondition for non-host storage,
/// kDTypeMismatch / kShapeMismatch across ranks, kUnavailable from MPI.
Status allreduce(const Communicator& comm, Tensor& tensor, ReduceOp op);

/// `output` becomes the elementwise reduction over all ranks of their
/// `input` (MPI_Allreduce out of place: no copy of `input`, which is only
/// read). `output` must have `input`'s dtype and shape; it may be `input`
/// itself (the in-place call) but not overlap it otherwise. Collective.
/// Errors as the in-place call, and kDTypeMismatch / kShapeMismatch for an
/// output that does not match its input, kInvalidArgument for a partial
/// overlap.
Status allreduce(const Communicator& comm, const Tensor& input, Tensor& output, ReduceOp op);

/// Rank `root`'s `tensor` becomes the elementwise reduction over all ranks
/// (MPI_Reduce, in place); the other ranks' tensors are only read.
/// Collective. Errors as allreduce, and kInvalidArgument for a root
/// outside [0, size()).
Status reduce(const Communicator& comm, Tensor& tensor, ReduceOp op, int root);

/// `tensor` has shape [size, ...]; rank r's block tensor[r] is sent to every
/// rank, so afterwards every rank holds all blocks (MPI_Allgather in place).
/// Collective. kShapeMismatch when the leading extent is not size().
Status allgather(const Communicator& comm, Tensor& tensor);

/// Every rank's `tensor` becomes root's (MPI_Bcast). Collective; `root`
/// must be the same on every rank (kInvalidArgument otherwise).
Status broadcast(const Communicator& comm, Tensor& tensor, int root);

/// `tensor` has shape [size, ...]. Block r of the reduction over all ranks
/// goes to rank r (MPI_Reduce_scatter_block in place): the returned view is
/// `tensor`'s block 0, which holds this rank's reduced block afterwards
/// (the other blocks are left unspecified). Collective.
Result<Tensor> reduce_scatter(const Communicator& comm, Tensor& tensor, ReduceOp op);

/// Sends `tensor` (read only; a non-contiguous tensor is read through one
/// staging copy) to rank `dest` with `tag` (>= 0): a header with its dtype
/// and element count, then the elements. Blocking (MPI_Send).
Status send(const Communicator& comm, const Tensor& tensor, int dest, int tag);

/// Receives a send() from `source` with `tag` into `tensor`, in place.
/// kDTypeMismatch / kShapeMismatch when the sender's dtype or element count
/// differ (the message is consumed either way, so the pair stays in step).
Status recv(const Communicator& comm, Tensor& tensor, int source, int tag);

/// Collective: ok on every rank when `local` is ok on every rank; otherwise
/// each rank returns an error (Note [Checked collectives]). `what` names the
/// step: ranks at steps of different names (one rank planning, another
/// contracting) get kInvalidArgument on every rank, and stay in step.
/// `root_reports`, when given, is set to whether rank 0's result carries
/// this rank's failure too (this rank had none, or its message is the one
/// every rank received), so that a program that reports a failure once per
/// job can leave it to rank 0; false when the agreement itself failed.
Status agree(const Communicator& comm, const Status& local, std::string_view what = "across ranks",
             bool* root_reports = nullptr);

}  // namespace tenferro::mpi
