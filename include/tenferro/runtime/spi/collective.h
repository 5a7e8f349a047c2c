// CollectiveProvider: what runs the Collective nodes of one communicator
// (Note [Collective operations] in program/collective_op.h). The runtime
// stays backend-neutral: it orders, leases, runs and drains collective
// nodes; a backend (tenferro::mpi) supplies the provider and registers it
// under the communicator id the programs name (CollectiveRegistration in
// config.h).
//
// Note [Collective nodes]
//  - Prepare: each collective operation becomes one Collective node on the
//    host engine holding its operand. prepare() sees exact metadata and
//    answers like a core provider: Prepared (leases in kernel.resources,
//    in_place_ok when the result may take over the operand's buffer),
//    Unsupported (prepare then fails with kUnsupportedOperation: there is
//    no other candidate), or an error.
//  - Order: the builder orders collectives on one communicator in program
//    order (their read-write communicator effect), so every rank running
//    the same program issues them in the same order. A Collective node
//    runs on the thread that runs the program, after waiting on the host
//    for its operand's producer and taking its node lease; it completes
//    before the next node is enqueued. It is never part of a segment or a
//    concurrent group.
//  - Failure: run() must take part in the collective whatever it finds
//    locally and return the same typed error on every participant when any
//    one fails (tenferro::mpi's agreement step), so a bad node on one rank
//    never leaves the others waiting. When a run fails anywhere else (an
//    earlier node, input checks, admission, cancellation), the runtime
//    calls abandon() for every collective node the run did not reach, in
//    schedule order, so the other ranks see the failure at their next
//    collective instead of waiting for this rank. Outputs are never
//    returned from a failed run.
#pragma once

#include <cstdint>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/program/collective_op.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::runtime {

/// Value-free description of one collective node for prepare(). Shapes are
/// exact. Borrowed.
struct CollectiveSignature {
  const program::CollectiveOp* op = nullptr;
  OperandSignature operand;
  OperandSignature result;
  Determinism determinism = Determinism::kFast;
  ResolvedPlacement placement;
};

/// One execution of a collective node: a borrowed host input (strided as
/// any provider input) and a runtime-allocated row-major output, which is
/// the input's own buffer when the kernel set in_place_ok and the planner
/// could reuse it (input.data == output.data). Borrowed.
struct CollectiveRequest {
  const program::CollectiveOp* op = nullptr;
  TensorView input;
  TensorView output;
  const ProviderPlan* plan = nullptr;
};

/// Runs the collectives of one communicator (Note [Collective nodes]).
/// Implementations are thread-compatible per communicator: the runtime
/// calls run()/abandon() from the thread running a program, and the node
/// lease a provider declares is how concurrent runs of one runtime take
/// turns on the communicator. Providers never create threads.
class CollectiveProvider {
 public:
  virtual ~CollectiveProvider() = default;
  /// For explain(): "mpi.collectives".
  virtual std::string_view name() const noexcept = 0;
  virtual Result<PrepareCapability> prepare(const CollectiveSignature& signature) const = 0;
  /// Takes part in the collective; see Note [Collective nodes] for errors.
  virtual Status run(const CollectiveRequest& request) const = 0;
  /// Takes part in `op` without data after this rank's run failed with
  /// `failure`, so that the other participants learn of it. Returns the
  /// error the collective ends with (the runtime keeps its primary error).
  virtual Status abandon(const program::CollectiveOp& op, const Status& failure) const = 0;
};

}  // namespace tenferro::runtime
