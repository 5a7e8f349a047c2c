// Sliced einsum over the ranks of a Communicator: each rank contracts the
// slices k = rank, rank + size, ... of a SliceExecutor (round robin), or
// every slice of its own range part (einsum::WorkerSlicing, Note [Range
// slicing] in einsum/slicing.h), then
// the partial outputs are summed by one allreduce that runs as a collective
// node of a prepared program (program::CollectiveOp, Note [Collective
// nodes] in runtime/spi/collective.h), so every rank ends with the full
// result and the reduction's errors are typed and drained like any node's.
//
// Note [Failure before the allreduce]
// A rank whose slices fail, or whose reduction program fails to prepare,
// must still reach the collective the others wait in. run_slices_over_ranks
// therefore prepares the reduction program first (per rank, no MPI), runs
// its slices only when that worked, agrees on every rank's status
// (mpi::agree), and only then runs the collective node: a failure on any
// rank, at prepare or in the contraction, surfaces as an error with that
// rank's code on all ranks, and no rank waits for one that has given up. A
// run that fails after the agreement (admission, say) abandons its
// collective node, which the others see at theirs.
// The contraction runs inside the rank's CPU domain (on the domain's
// threads); every MPI call is made afterwards on the calling thread (the
// agreement, and the collective node, which runs on the thread running the
// program), so MPI_THREAD_FUNNELED suffices (Note [MPI threads] in
// communicator.h).
#pragma once

#include <cstdint>
#include <span>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::mpi {

/// Collective over `comm`: contracts this rank's share of `executor`'s
/// slices into `output` (a host tensor of the network's output shape) in
/// `domain` (one entry, ParallelMode::kInner), then sums the shares of all
/// ranks into every rank's `output` with a kAllReduce collective node on
/// communicator id `communicator` of `runtime`, which must bind that id to
/// `comm` (collective_registration(comm, communicator)) and have a host
/// engine. A dense row-major `output` that nobody else holds is donated to
/// the node and reduced in place; a shared one receives the sum by one
/// copy; a non-contiguous one is rebound to the node's contiguous result
/// (as host_interop.h rebinds). Borrows everything for the call; prepares
/// one small program per call (the runtime's plan cache applies).
/// Every rank passes the same contraction (or, for a range split, its own
/// part: WorkerSlicing::part(rank)) and the same inputs. Errors as
/// Runtime::prepare_for, SliceExecutor::run and the collective node, on
/// every rank (Note [Failure before the allreduce]). `stats`, when given,
/// receives this rank's share.
Status run_slices_over_ranks(const Communicator& comm, runtime::Runtime& runtime, std::uint64_t communicator,
                             const einsum::SliceExecutor& executor, std::span<const TensorView> inputs, Tensor& output,
                             const cpu::CpuResourceDomain& domain, einsum::SliceRunStats* stats = nullptr);

}  // namespace tenferro::mpi
