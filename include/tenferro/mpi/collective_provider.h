// The MPI implementation of the runtime's collective provider: Collective
// nodes of a prepared program (program::CollectiveOp, Note [Collective
// nodes] in runtime/spi/collective.h) run as checked MPI collectives on one
// Communicator, in place on the runtime's host buffers.
//
// Note [MPI collective nodes]
// Each node starts with the agreement step of Note [Checked collectives]
// (send/recv with their header), so a node that fails on one rank (an input
// that is not row-major dense, element counts that differ across ranks, a
// run that failed earlier and abandons its remaining collectives) fails
// with the same typed error on every rank instead of leaving the others
// waiting. Data moves without staging copies: allreduce and broadcast work
// in place (MPI_IN_PLACE) when the planner gave the result the operand's
// buffer, and otherwise read the operand and write the result directly
// (broadcast's root and send copy the operand into the result once);
// allgather and reduce_scatter read the operand and write the result.
// Ranks must run the same sequence of collective nodes on a communicator;
// preparation is per rank, so a rank whose prepare fails must tell the
// others itself (e.g. with mpi::agree).
#pragma once

#include <cstdint>
#include <memory>

#include "tenferro/mpi/communicator.h"
#include "tenferro/runtime/config.h"

namespace tenferro::mpi {

/// The registration that runs the collective operations naming
/// `communicator` on `comm` (Note [MPI collective nodes]). Retains `comm`.
/// Each node leases collective_lease_key(communicator); give that key a
/// capacity of 1 (RuntimePolicies::capacities) when several threads run
/// programs on one runtime, so that their collectives take turns.
/// prepare() fails with kInvalidArgument when the operation's `ranks`
/// differ from comm->size() and kSizeOverflow for more than INT_MAX
/// elements per rank.
runtime::CollectiveRegistration collective_registration(std::shared_ptr<const Communicator> comm,
                                                        std::uint64_t communicator);

/// The node lease of the collectives on `communicator`.
runtime::ResourceKey collective_lease_key(std::uint64_t communicator) noexcept;

}  // namespace tenferro::mpi
