// The MPI implementation of the runtime's collective provider: Collective
// nodes of a prepared program (program::CollectiveOp, Note [Collective
// nodes] in runtime/spi/collective.h) run as checked MPI collectives on one
// Communicator, in place on the runtime's host buffers.
//
// Note [MPI collective nodes]
// Each node starts with the agreement step of Note [Checked collectives]
// (send/recv with their header), so a node that fails on one rank (an input
// that is not row-major dense, shapes that differ across ranks, a
// run that failed earlier and abandons its remaining collectives) fails
// with the same typed error on every rank instead of leaving the others
// waiting. Data moves without staging copies: allreduce and broadcast work
// in place (MPI_IN_PLACE) when the planner gave the result the operand's
// buffer, and otherwise read the operand and write the result directly
// (broadcast's root and send copy the operand into the result once);
// allgather and reduce_scatter read the operand and write the result.
// Ranks must run the same sequence of collective nodes on a communicator.
// Preparation is per rank: a rank whose prepare fails would never reach
// the collectives the others wait in, so prepare_on_all_ranks agrees on
// the outcome (Note [Checked collectives]) and every rank gets the plan or
// the failing rank's typed error.
#pragma once

#include <cstdint>
#include <memory>

#include "tenferro/mpi/communicator.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/runtime.h"

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

/// Collective over `comm`: runtime.prepare_for(program, signature) on every
/// rank, then one agreement step, so that a prepare failure on any rank is
/// an error on all of them (the failing rank its own; the others its code
/// with "rank R: " and its message) and no rank goes on to run collectives
/// the failing one never reaches. Borrows everything for the call; every
/// rank must call it (Note [MPI collective nodes]).
Result<std::shared_ptr<const runtime::PreparedProgram>> prepare_on_all_ranks(
    const Communicator& comm, runtime::Runtime& runtime, const std::shared_ptr<const program::SemanticProgram>& program,
    const runtime::InputSignature& signature, const runtime::PrepareOptions& options = {});

}  // namespace tenferro::mpi
