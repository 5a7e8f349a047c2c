// Sliced einsum over the ranks of a Communicator: each rank contracts the
// slices k = rank, rank + size, ... of a SliceExecutor (round robin), then
// the partial outputs are summed with one allreduce, so every rank ends
// with the full result.
//
// Note [Failure before the allreduce]
// A rank whose slices fail must still reach the collective the others wait
// in. run_slices_over_ranks therefore agrees on every rank's status first
// (mpi::agree) and only then allreduces: a failure on any rank surfaces as
// an error on all ranks, and no rank waits for one that has given up.
// The contraction runs inside the rank's CPU domain (on the domain's
// threads); every MPI call is made afterwards on the calling thread, so
// MPI_THREAD_FUNNELED suffices (Note [MPI threads] in communicator.h).
#pragma once

#include <span>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::mpi {

/// Collective over `comm`: contracts this rank's share of `executor`'s
/// slices into `output` (a host tensor of the network's output shape; a
/// non-contiguous one is rebound to one contiguous copy, host_interop.h)
/// in `domain` (one entry, ParallelMode::kInner), then sums the shares of
/// all ranks into every rank's `output`.
/// Every rank passes the same contraction and inputs. Errors as
/// SliceExecutor::run and allreduce, on every rank (Note [Failure before
/// the allreduce]). `stats`, when given, receives this rank's share.
Status run_slices_over_ranks(const Communicator& comm, const einsum::SliceExecutor& executor,
                             std::span<const TensorView> inputs, Tensor& output, const cpu::CpuResourceDomain& domain,
                             einsum::SliceRunStats* stats = nullptr);

}  // namespace tenferro::mpi
