// CollectiveOp: a collective communication (allreduce, allgather,
// broadcast, reduce_scatter, send, recv, reduce) over a communicator
// resource, as an operation of a program.
//
// Note [Collective operations]
// A collective is observable communication with explicit participants and
// ordering, so it is never an arbitrary extension operation: the builder
// rejects any other extension that declares a communicator effect. A
// CollectiveOp is the one closed, program-defined carrier. It reuses the
// extension record for storage, fingerprint and import (its payload is the
// CollectiveSpec), declares a read-write effect on
// ResourceId{kCommunicator, spec.communicator} (so the builder orders every
// collective on one communicator in program order, Note [Effects and
// ordering], and all ranks that build the same program issue them in the
// same order) and a fresh result. The runtime never resolves it through the
// extension registry or a core lowering: it schedules a Collective node run
// by the CollectiveProvider registered for the communicator
// (runtime/spi/collective.h). The communicator is only a number here; the
// application binds it to a real communicator when it configures each
// rank's runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/program/extension_op.h"

namespace tenferro::program {

/// What a collective node does. `ranks` below is the communicator's size.
enum class CollectiveKind : std::uint8_t {
  kAllReduce,      ///< x -> the elementwise reduction of every rank's x
  kAllGather,      ///< x[...] -> [ranks, ...]: block r is rank r's x
  kBroadcast,      ///< x -> root's x
  kReduceScatter,  ///< x[ranks, ...] -> [...]: block `rank` of the reduction
  kSend,           ///< x -> x, and x is sent to rank `peer` with `tag`
  kRecv,           ///< x -> what rank `peer` sent with `tag` (x gives dtype and shape)
  /// x -> on rank `peer` (the root) the elementwise reduction of every
  /// rank's x; on every other rank x itself (nothing is received there).
  kReduce,
};
std::string_view to_string(CollectiveKind kind) noexcept;

/// The reduction of kAllReduce, kReduceScatter and kReduce.
enum class CollectiveReduction : std::uint8_t {
  kSum,  ///< numeric dtypes (not bool)
  kMax,  ///< real numeric dtypes (not bool, not complex)
};
std::string_view to_string(CollectiveReduction reduction) noexcept;

/// The semantic payload of a collective. Trivial value type.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CollectiveReduction reduction = CollectiveReduction::kSum;  ///< kAllReduce, kReduceScatter, kReduce
  /// The communicator resource (ResourceId{kCommunicator, communicator}).
  std::uint64_t communicator = 0;
  /// Participants (>= 1); shapes of allgather and reduce_scatter follow it,
  /// and the provider checks it against its communicator at prepare.
  std::int64_t ranks = 1;
  /// kBroadcast, kReduce: the root; kSend: the destination; kRecv: the source.
  std::int64_t peer = 0;
  /// kSend / kRecv: the message tag (>= 0).
  std::int64_t tag = 0;

  friend constexpr bool operator==(const CollectiveSpec&, const CollectiveSpec&) noexcept = default;
  /// "all_reduce(sum) comm 3 ranks 4", "send(to 1, tag 7) comm 3 ranks 2".
  std::string to_string() const;
};

/// The collective carrier (Note [Collective operations]). Immutable and
/// thread-safe. Created only through create(); the builder emits it with
/// ProgramBuilder::emit_collective (or emit_extension).
class CollectiveOp final : public ExtensionOp {
 public:
  static constexpr std::string_view kFamilyId = "tenferro.collective";

  /// kInvalidArgument (compile stage) when ranks < 1, a peer outside
  /// [0, ranks) for broadcast/send/recv/reduce, or a negative tag.
  static Result<std::shared_ptr<const CollectiveOp>> create(const CollectiveSpec& spec);

  const CollectiveSpec& spec() const noexcept { return spec_; }

  std::string_view family_id() const noexcept override { return kFamilyId; }
  std::uint64_t payload_hash() const noexcept override;
  bool payload_equal(const ExtensionOp& other) const noexcept override;
  /// One operand, one result. Errors: kInvalidArgument for a dtype the
  /// reduction lacks, kShapeMismatch for allgather/reduce_scatter shapes.
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints& constraints) const override;
  EffectSet effects() const override;
  SmallVector<AliasDecl, 2> aliases() const override;
  std::string describe() const override;

 private:
  explicit CollectiveOp(const CollectiveSpec& spec) noexcept : spec_(spec) {}
  CollectiveSpec spec_;
};

/// `op` as a CollectiveOp, or nullptr when it is another operation.
const CollectiveOp* as_collective(const ExtensionOp* op) noexcept;

}  // namespace tenferro::program
