// Collective nodes (Note [Collective nodes] in spi/collective.h): resolving
// the provider of a collective operation at prepare, and abandoning the
// collectives a failed run did not reach.
#include <fmt/format.h>

#include "runtime/scheduled_graph.h"

namespace tenferro::runtime::internal {

Result<ResolvedCollective> resolve_collective(const PreparedState& state, const program::CollectiveOp& op,
                                              const SlotInfo& operand, DType dtype, IntArrayRef shape,
                                              ResolvedPlacement placement) {
  const program::CollectiveSpec& spec = op.spec();
  {
    const program::ValueMetadata concrete = program::ValueMetadata::exact(operand.dtype, operand.shape);
    const Dims result_shape(shape);
    TENFERRO_TRY(check_concrete_extension(op, std::span<const program::ValueMetadata>(&concrete, 1),
                                          std::span<const DType>(&dtype, 1), std::span<const Dims>(&result_shape, 1)));
  }
  const CollectiveProvider* provider = state.config->find_collective(spec.communicator);
  if (provider == nullptr) {
    return Error(ErrorCode::kUnsupportedOperation, ErrorStage::kPrepare,
                 fmt::format("{}: expected a collective provider registered for communicator {}, found none",
                             spec.to_string(), spec.communicator));
  }
  CollectiveSignature signature;
  signature.op = &op;
  signature.operand = OperandSignature{operand.dtype, static_cast<std::int64_t>(operand.shape.size()),
                                       operand.shape.span(), operand.layout};
  signature.result =
      OperandSignature{dtype, static_cast<std::int64_t>(shape.size()),
                       std::span<const std::int64_t>(shape.data(), shape.size()), LayoutClass::kRowMajor};
  signature.determinism = state.determinism;
  signature.placement = placement;
  Result<PrepareCapability> answer = provider->prepare(signature);
  if (!answer.ok()) {
    return answer.status()
        .in_stage(ErrorStage::kPrepare)
        .with_context(fmt::format("{}: collective provider '{}'", spec.to_string(), provider->name()),
                      ErrorStage::kPrepare);
  }
  if (answer->kind() != PrepareCapability::Kind::kPrepared) {
    const std::string why = answer->kind() == PrepareCapability::Kind::kUnsupported
                                ? answer->reason()
                                : std::string(
                                      "it asked for a specialization, but collectives are prepared with "
                                      "exact shapes");
    return Error(ErrorCode::kUnsupportedOperation, ErrorStage::kPrepare,
                 fmt::format("{}: expected collective provider '{}' to prepare it, found a refusal: {}",
                             spec.to_string(), provider->name(), why));
  }
  if (state.determinism == Determinism::kReproducible && !answer->kernel().reproducible) {
    return Error(ErrorCode::kDeterminismUnsupported, ErrorStage::kPrepare,
                 fmt::format("{}: expected a reproducible algorithm, found collective provider '{}' without one",
                             spec.to_string(), provider->name()));
  }
  return ResolvedCollective{provider, std::move(answer->kernel())};
}

void abandon_collectives(const PreparedState& state, std::uint32_t first, const Status& failure) {
  for (std::size_t k = first; k < state.nodes.size(); ++k) {
    const NodeRecord& node = state.nodes[k];
    if (node.kind != ScheduledNodeKind::kCollective) continue;
    try {
      (void)node.collective->abandon(*node.collective_op, failure);
    } catch (...) {
      // The run already failed with `failure`; a provider that throws here
      // has nothing to add to it.
    }
  }
}

}  // namespace tenferro::runtime::internal
