// The shared placement resolver, concrete re-validation of operations,
// layout classes of views, and the schedule finishing pass (event domains
// in first-use order, entry segments).
#include <algorithm>

#include <fmt/format.h>

#include "runtime/scheduled_graph.h"
#include "tenferro/program/core_inference.h"

namespace tenferro::runtime::internal {

std::uint32_t PreparedState::engine_index(const EngineEntry* entry) {
  for (std::size_t i = 0; i < engines.size(); ++i)
    if (engines[i] == entry) return static_cast<std::uint32_t>(i);
  engines.push_back(entry);
  return static_cast<std::uint32_t>(engines.size() - 1);
}

bool serves_placement(const EngineEntry& engine, const Placement& placement) noexcept {
  const HardwareClass hw = engine.metadata().hardware;
  switch (placement.kind()) {
    case Placement::Kind::kCpuDomain:
      return (hw == HardwareClass::kCpu || hw == HardwareClass::kReference) &&
             engine.serves(placement.cpu_domain_id().value());
    case Placement::Kind::kDevice:
      return hw == HardwareClass::kGpu && engine.serves(placement.device_id().value());
    case Placement::Kind::kDefault:
    case Placement::Kind::kEngine:
      return false;
  }
  return false;
}

Result<ResolvedPlacement> resolve_placement(const RuntimeConfig& config, Placement placement,
                                            std::span<const AffinityWeight> inputs, std::string* reason) {
  const EngineEntry* engine = nullptr;
  auto placement_error = [&](std::string_view what) {
    return Error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                 fmt::format("placement {}: expected {}, found none", placement.to_string(), what));
  };
  switch (placement.kind()) {
    case Placement::Kind::kDefault:
      engine = config.default_engine();
      if (engine == nullptr) return placement_error("a default engine");
      break;
    case Placement::Kind::kEngine:
      engine = config.find_engine(placement.engine_id());
      if (engine == nullptr) return placement_error("a registered engine with this id");
      break;
    case Placement::Kind::kCpuDomain:
    case Placement::Kind::kDevice: {
      const bool cpu = placement.kind() == Placement::Kind::kCpuDomain;
      const std::uint64_t domain = cpu ? placement.cpu_domain_id().value() : placement.device_id().value();
      for (const EngineEntry& e : config.engines()) {
        if (placement.engine_id().valid() && e.id() != placement.engine_id()) continue;
        if (serves_placement(e, placement)) {
          engine = &e;
          break;
        }
      }
      if (engine == nullptr)
        return placement_error(cpu ? "an engine owning this CPU domain" : "an engine owning this device");
      if (reason != nullptr) *reason = "explicit placement";
      return ResolvedPlacement{engine->id(), domain};
    }
  }
  const std::vector<std::uint64_t>& domains = engine->metadata().domains;
  if (domains.size() <= 1 || engine->metadata().hardware != HardwareClass::kCpu) {
    if (reason != nullptr) *reason = "the engine's default domain";
    return ResolvedPlacement{engine->id(), engine->metadata().default_domain};
  }
  // DominantInputBytes (ties by lowest domain id; inputs without a CPU
  // affinity of this engine do not count).
  std::uint64_t best = 0;
  std::size_t best_bytes = 0;
  std::size_t contributing_domains = 0;
  bool found = false;
  for (std::uint64_t d : domains) {
    std::size_t bytes = 0;
    bool any = false;
    for (const AffinityWeight& w : inputs) {
      if (w.affinity.has_cpu_domain() && w.affinity.cpu_domain_id().value() == d) {
        bytes += w.bytes;
        any = true;
      }
    }
    if (!any) continue;
    ++contributing_domains;
    if (!found || bytes > best_bytes || (bytes == best_bytes && d < best)) {
      best = d;
      best_bytes = bytes;
      found = true;
    }
  }
  if (config.policies().cpu_affinity == CpuAffinityPolicy::kRequireSingleDomain && contributing_domains > 1) {
    return Error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                 fmt::format("RequireSingleDomain: expected inputs from one CPU domain of engine {}, found "
                             "inputs from {} domains",
                             engine->id(), contributing_domains));
  }
  if (!found) {
    if (reason != nullptr) *reason = "no input has a CPU-domain affinity: the engine's default domain";
    return ResolvedPlacement{engine->id(), engine->metadata().default_domain};
  }
  if (reason != nullptr) *reason = fmt::format("DominantInputBytes ({} input bytes in domain {})", best_bytes, best);
  return ResolvedPlacement{engine->id(), best};
}

// Note [Concrete validation]
// Providers receive "validated requests": before anything is asked of a
// provider, each operation is re-inferred from the concrete operand shapes
// (with no symbolic guards) and must give the result the program's symbolic
// metadata evaluates to. This catches any requirement the program's guards
// did not express, so a provider never sees operands it cannot trust. The
// ops whose result shape is an attribute (iota, rng_philox,
// broadcast_in_dim, reshape) get that attribute evaluated for the concrete
// inputs first (concrete_attributes, kept in the PreparedState), and both
// the check and the provider see it: `x + iota(s0)` was re-inferred with s0
// unevaluated, a symbolic result (kContractViolation) or an undecidable
// s0 == 3 (kShapeMismatch), and a provider reading the attribute got the
// symbol (the prepared programs audit of 2026-12-06).
std::optional<program::CoreAttributes> concrete_attributes(const program::CoreAttributes& attributes,
                                                           IntArrayRef shape) {
  std::optional<program::CoreAttributes> concrete;
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (requires(A m) { m.shape = program::symbolic_shape(shape); }) {
          if (program::exact_shape(a.shape).has_value()) return;
          auto evaluated = a;
          evaluated.shape = program::symbolic_shape(shape);
          concrete.emplace(std::move(evaluated));
        }
      },
      attributes);
  return concrete;
}

Status check_concrete_core(program::CoreSemanticOp op, const program::CoreAttributes& attributes,
                           std::span<const program::ValueMetadata> operands, DType dtype, IntArrayRef shape,
                           std::string_view name) {
  program::ShapeConstraints constraints(name, nullptr);
  Result<program::ValueMetadata> inferred = program::infer_core_metadata(op, attributes, operands, constraints);
  if (!inferred.ok()) {
    return inferred.status()
        .in_stage(ErrorStage::kPrepare)
        .with_context(fmt::format("{}: the concrete input shapes violate the operation's requirements", name),
                      ErrorStage::kPrepare);
  }
  const std::optional<Dims> exact = program::exact_shape(inferred->shape);
  if (!exact || inferred->dtype != dtype || !(IntArrayRef(*exact) == shape)) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kPrepare,
                 fmt::format("{}: the program's metadata gives {}{}, the concrete operands give {}{}", name, dtype,
                             shape_to_string(shape), inferred->dtype,
                             exact ? shape_to_string(*exact) : std::string("(symbolic)")));
  }
  return ok_status();
}

Status check_concrete_extension(const program::ExtensionOp& op, std::span<const program::ValueMetadata> operands,
                                std::span<const DType> dtypes, std::span<const Dims> shapes) {
  program::ShapeConstraints constraints(op.family_id(), nullptr);
  Result<SmallVector<program::ValueMetadata, 2>> inferred = op.infer_metadata(operands, constraints);
  if (!inferred.ok()) {
    return inferred.status()
        .in_stage(ErrorStage::kPrepare)
        .with_context(fmt::format("{}: the concrete input shapes violate the operation's requirements", op.family_id()),
                      ErrorStage::kPrepare);
  }
  bool same = inferred->size() == shapes.size();
  for (std::size_t r = 0; same && r < shapes.size(); ++r) {
    const std::optional<Dims> exact = program::exact_shape((*inferred)[r].shape);
    same = exact && (*inferred)[r].dtype == dtypes[r] && IntArrayRef(*exact) == IntArrayRef(shapes[r]);
  }
  if (!same) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kPrepare,
                 fmt::format("{}: the program's result metadata disagrees with the extension's inference for the "
                             "concrete operands",
                             op.family_id()));
  }
  return ok_status();
}

LayoutClass view_layout(program::CoreSemanticOp op, LayoutClass source, IntArrayRef in_shape, IntArrayRef out_shape,
                        const program::CoreAttributes* attributes) {
  using program::CoreSemanticOp;
  switch (op) {
    case CoreSemanticOp::kReshape:
      return LayoutClass::kRowMajor;
    case CoreSemanticOp::kTranspose: {
      const auto* t = std::get_if<program::TransposeAttributes>(attributes);
      bool identity = true;
      for (std::size_t i = 0; t != nullptr && i < t->perm.size(); ++i)
        identity = identity && t->perm[i] == static_cast<std::int64_t>(i);
      if (identity) return source;
      return source == LayoutClass::kStrided ? LayoutClass::kStrided : LayoutClass::kDense;
    }
    default:
      return in_shape == out_shape ? source : LayoutClass::kStrided;
  }
}

void finish_schedule(PreparedState& state) {
  // Event domains in first-use order.
  for (NodeRecord& n : state.nodes) {
    if (n.kind == ScheduledNodeKind::kView) continue;
    const EventDomainId id = state.engines[n.engine]->event_domain;
    std::uint32_t index = kNoIndex;
    for (std::size_t d = 0; d < state.domains.size(); ++d)
      if (state.domains[d].id == id) index = static_cast<std::uint32_t>(d);
    if (index == kNoIndex) {
      state.domains.push_back(DomainUse{n.engine, id});
      index = static_cast<std::uint32_t>(state.domains.size() - 1);
    }
    n.domain = index;
  }
  // Segments: maximal runs of enqueueing nodes in one domain and placement
  // (views may sit inside; transfers and barriers end a segment because
  // they wait on the host).
  const std::uint32_t count = static_cast<std::uint32_t>(state.nodes.size());
  for (std::uint32_t i = count; i-- > 0;) {
    NodeRecord& n = state.nodes[i];
    n.segment_end = i + 1;
    const bool segmentable = n.kind == ScheduledNodeKind::kOperation || n.kind == ScheduledNodeKind::kExtension ||
                             n.kind == ScheduledNodeKind::kCopy;
    if (!segmentable) continue;
    std::uint32_t j = i + 1;
    while (j < count) {
      const NodeRecord& m = state.nodes[j];
      if (m.kind == ScheduledNodeKind::kView) {
        ++j;
        continue;
      }
      const bool same = (m.kind == ScheduledNodeKind::kOperation || m.kind == ScheduledNodeKind::kExtension ||
                         m.kind == ScheduledNodeKind::kCopy) &&
                        m.domain == n.domain && m.placement == n.placement;
      if (!same) break;
      j = m.segment_end;
      break;
    }
    n.segment_end = j;
  }
}

}  // namespace tenferro::runtime::internal
