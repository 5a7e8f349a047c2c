// Sliced einsum over the ranks of a Communicator: each rank contracts its
// share of an einsum::WorkerSlicing (einsum::WorkerSliceExecutor): the
// slices k = rank, rank + size, ... of a round robin, or every slice of its
// range parts (Notes [Range slicing] and [Range chunks] in
// einsum/slicing.h), then
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
//
// Note [Rank CPU domains]
// Each rank runs its contraction in a managed CPU domain of T threads.
// mpirun may already bind each rank to its own cores (then the rank's
// allowed CPUs are those); when it does not (--bind-to none, or
// --oversubscribe), every rank would pin its threads to the same first
// CPUs, so the rank's domain starts at position node_rank() * T of the
// allowed CPU list (cpu::make_managed_domains wraps around when the node
// has fewer).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::mpi {

/// Collective over `comm`: this rank's position among the ranks of its node
/// (MPI_COMM_TYPE_SHARED), where its CPUs start (Note [Rank CPU domains]).
Result<int> node_rank(const Communicator& comm);

/// How the CPU domains of the ranks of one node (MPI_COMM_TYPE_SHARED)
/// cover its CPUs (Note [Rank CPU domains]).
struct NodeCpuSharing {
  int node_rank = 0;    ///< this rank's position on its node
  int node_ranks = 1;   ///< ranks on the node
  int cpus = 0;         ///< distinct CPUs the node's ranks' domains pin to
  int shared = 0;       ///< of those, CPUs pinned by two or more ranks
  int most_shared = 0;  ///< the largest `shared` of any node of the communicator
};
/// Collective over `comm`: `cpus` (this rank's domain) counted against the
/// other ranks' of its node. `shared` > 0 means ranks x threads exceed the
/// CPUs the ranks may use (mpirun's --bind-to none with more threads than
/// cores, --oversubscribe): their workers compete for cores.
Result<NodeCpuSharing> node_cpu_sharing(const Communicator& comm, const cpu::CpuSet& cpus);

/// Collective over `comm`: agrees on every rank's planning outcome `local`
/// (a failure on any rank is an error on all of them, Note [Checked
/// collectives] in collectives.h), then checks that every rank planned the
/// same split of the same problem -- the network's operands and output up
/// to label names, its extents and `dtype` -- (kInvalidArgument otherwise,
/// on every rank: a rank must never sum slices of another plan or another
/// contraction). Planning is reproducible when every rank plans with
/// einsum::Determinism::kReproducible from the same network.
/// `what` names the step as for agree(). `operand_dtypes`, when not empty,
/// describes the dtypes the caller's operands had before they were
/// converted to `dtype` (float32 on one rank and float64 on another both
/// contract in float64, but the shares are of different data); it is
/// agreed with `dtype`.
Status agree_on_split(const Communicator& comm, const Result<einsum::WorkerSlicing>& local, DType dtype,
                      std::string_view what = "sliced einsum plan", std::string_view operand_dtypes = {});
/// agree_on_split for a rank whose planning succeeded (a split it kept).
Status agree_on_split(const Communicator& comm, const einsum::WorkerSlicing& split, DType dtype,
                      std::string_view what = "sliced einsum plan", std::string_view operand_dtypes = {});

/// A Runtime for one rank that run_slices_over_ranks can reduce on: the CPU
/// engine (its collective nodes run on the thread that runs the program)
/// and `comm` bound as collective communicator id `communicator`, its
/// node lease of capacity 1. Retains `comm`: destroy the Runtime before
/// MPI_Finalize.
Result<runtime::Runtime> rank_runtime(std::shared_ptr<const Communicator> comm, std::uint64_t communicator);

/// run_slices_over_ranks' `root` for a sum on every rank (an allreduce).
inline constexpr int kEveryRank = -1;

/// Collective over `comm`: contracts this rank's share, `executor` (worker
/// comm.rank() of a WorkerSlicing over comm.size() workers; kInvalidArgument
/// on every rank otherwise), into `output` (a host tensor of the network's
/// output shape) in
/// `domain` (one entry, ParallelMode::kInner), then sums the shares of all
/// ranks into every rank's `output` with a kAllReduce collective node on
/// communicator id `communicator` of `runtime`, which must bind that id to
/// `comm` (collective_registration(comm, communicator)) and have a host
/// engine. A dense row-major `output` that nobody else holds is donated to
/// the node and reduced in place; a shared one receives the sum by one
/// copy; a non-contiguous one is rebound to the node's contiguous result
/// (as host_interop.h rebinds). Borrows everything for the call; prepares
/// one small program per call (the runtime's plan cache applies).
/// Every rank passes its executor of the same split and the same inputs.
/// Errors as Runtime::prepare_for, WorkerSliceExecutor::run and the
/// collective node, on
/// every rank (Note [Failure before the allreduce]). `stats`, when given,
/// receives this rank's share. With `root` >= 0 the sum lands on rank
/// `root` only (a kReduce node: nothing is sent back to the others); the other
/// ranks' `output` then holds their own share, not the sum.
/// kInvalidArgument (on every rank) for a root outside [-1, size()).
/// (A SliceExecutor of WorkerSlicing::part(rank) is not enough: under a
/// memory bound a rank may have several range parts, which the
/// WorkerSliceExecutor runs in turn.)
Status run_slices_over_ranks(const Communicator& comm, runtime::Runtime& runtime, std::uint64_t communicator,
                             const einsum::WorkerSliceExecutor& executor, std::span<const TensorView> inputs,
                             Tensor& output, const cpu::CpuResourceDomain& domain,
                             einsum::SliceRunStats* stats = nullptr, int root = kEveryRank);

}  // namespace tenferro::mpi
