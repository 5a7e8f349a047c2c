// prepare_for: inputs and guards first, then per operation: candidate
// engines, capability resolution (with specialization widening), core
// lowering of extensions, explicit transfers and barriers; then buffer
// planning and schedule finishing.
//
// Note [Resolution order]
// For each operation (docs/runtime.md, "How `prepare_for` works"):
//  1. an operation-local override (PrepareOptions::overrides) fixes the engine;
//  2. otherwise placement (PrepareOptions::placement naming an engine,
//     domain or device; the op's PlacementConstraint host/device/colocation)
//     restricts the candidate engines;
//  3. otherwise a runtime FamilyPreference orders them; without one the
//     candidates are the engine holding operand 0, then the other engines of
//     the same storage class in registration order (so nothing moves to
//     another storage class unless placement or preference says so);
//  4. each candidate's native capability (core slot or extension engine) is
//     asked in order; only kUnsupported moves on, any error stops;
//  5. an extension without a native engine is lowered to core ops, which
//     are resolved by the same rules;
//  6. the explicitly configured fallback engine is tried last;
//  7. otherwise kUnsupportedOperation / kUnsupportedExtension, listing every
//     refusal (or kDeterminismUnsupported when only determinism refused).
// Every refusal and decision is recorded for explain().
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "runtime/execution_order.h"
#include "runtime/scheduled_graph.h"
#include "tenferro/program/extension_op.h"

namespace tenferro::runtime::internal {
namespace {

using program::CoreSemanticOp;
using program::OperationView;
using program::SpecializationAxis;
using program::SpecializationRequirements;

Error prepare_error(ErrorCode code, std::string message) {
  return Error(code, ErrorStage::kPrepare, std::move(message));
}

const CoreFamilyRuntime* family_slot(const EngineEntry& engine, OpFamily family) noexcept {
  const CoreCapabilities& c = engine.registration.capabilities;
  switch (family) {
    case OpFamily::kElementwise:
      return c.elementwise.get();
    case OpFamily::kReduction:
      return c.reduction.get();
    case OpFamily::kIndexing:
      return c.indexing.get();
    case OpFamily::kDotGeneral:
      return c.dot_general.get();
    default:
      return nullptr;
  }
}

bool hardware_allowed(const EngineEntry& engine, program::PlacementClass where) noexcept {
  switch (where) {
    case program::PlacementClass::kAny:
      return true;
    case program::PlacementClass::kHost:
      return engine.metadata().hardware == HardwareClass::kCpu ||
             engine.metadata().hardware == HardwareClass::kReference;
    case program::PlacementClass::kDevice:
      return engine.metadata().hardware == HardwareClass::kGpu;
  }
  return false;
}

// What an operation is resolved against (shared by an extension node and
// the core ops of its lowering).
struct ResolutionContext {
  const EngineEntry* override_engine = nullptr;
  program::PlacementConstraint constraint;
  program::ProvenanceRef provenance;
  std::string lowered_from;  // non-empty for lowered core ops
};

// The outcome of asking one provider (Note [Provider contract]).
struct Answer {
  bool prepared = false;
  PreparedKernel kernel;
  std::string refusal;  // set when not prepared
  bool determinism_refusal = false;
};

class Planner {
 public:
  Planner(PreparedState& state) : st_(state), config_(*state.config), program_(*state.program) {}

  Status run() {
    TENFERRO_TRY(bind_inputs());
    for (program::OperationId op : execution_order(program_)) TENFERRO_TRY(plan_operation(program_.operation(op)));
    for (program::ValueId v : program_.outputs()) {
      const std::uint32_t slot = value_slot_[v.index()];
      st_.output_slots.push_back(slot);
      st_.slots[slot].is_output = true;
    }
    return ok_status();
  }

 private:
  // --- inputs --------------------------------------------------------------
  Status bind_inputs() {
    const InputSignature& sig = st_.signature;
    if (sig.size() != program_.num_inputs()) {
      return prepare_error(
          ErrorCode::kInvalidArgument,
          fmt::format("expected {} program inputs, found a signature of {}", program_.num_inputs(), sig.size()));
    }
    SmallVector<program::ConcreteInput, 8> concrete;
    for (const InputDescriptor& d : sig.inputs()) concrete.push_back(program::ConcreteInput{d.dtype, d.shape});
    TENFERRO_TRY(
        program_.check_guards(std::span<const program::ConcreteInput>(concrete.data(), concrete.size()), &symbols_));
    value_slot_.assign(program_.num_values(), kNoIndex);
    op_last_node_.assign(program_.num_operations(), kNoIndex);

    // The domain each multi-domain engine uses (input binding, shared
    // resolver with eager dispatch).
    SmallVector<AffinityWeight, 8> weights;
    for (const InputDescriptor& d : sig.inputs()) {
      weights.push_back(
          AffinityWeight{d.affinity, static_cast<std::size_t>(numel_unchecked(d.shape)) * dtype_size(d.dtype)});
    }
    weights_ = std::vector<AffinityWeight>(weights.begin(), weights.end());

    for (std::size_t i = 0; i < sig.size(); ++i) {
      const InputDescriptor& d = sig.inputs()[i];
      const EngineEntry* home = home_engine(d.storage);
      if (home == nullptr) {
        return prepare_error(ErrorCode::kInvalidArgument,
                             fmt::format("input {}: expected storage of one of this runtime's engines, found storage "
                                         "domain {} (foreign storage is imported explicitly)",
                                         i, d.storage));
      }
      SlotInfo slot;
      slot.dtype = d.dtype;
      slot.shape = d.shape;
      slot.layout = d.layout;
      slot.engine = st_.engine_index(home);
      slot.input = static_cast<std::uint32_t>(i);
      value_slot_[program_.input(i).index()] = add_slot(std::move(slot));
      st_.input_slots.push_back(value_slot_[program_.input(i).index()]);
    }
    return ok_status();
  }

  // The engine a storage domain belongs to: the placement's engine when it
  // computes on that storage, else the first such engine.
  const EngineEntry* home_engine(StorageDomainId storage) {
    if (st_.options.placement.engine_id().valid()) {
      const EngineEntry* e = config_.find_engine(st_.options.placement.engine_id());
      if (e != nullptr && e->metadata().storage == storage) return e;
    }
    const EngineEntry* def = config_.default_engine();
    if (def != nullptr && def->metadata().storage == storage) return def;
    for (const EngineEntry& e : config_.engines())
      if (e.metadata().storage == storage) return &e;
    return nullptr;
  }

  std::uint32_t add_slot(SlotInfo slot) {
    st_.slots.push_back(std::move(slot));
    return static_cast<std::uint32_t>(st_.slots.size() - 1);
  }

  // --- operations ----------------------------------------------------------
  Status plan_operation(OperationView op) {
    ResolutionContext ctx;
    ctx.constraint = op.placement();
    ctx.provenance = op.provenance();
    for (const OperationOverride& o : st_.options.overrides) {
      if (o.operation != op.id()) continue;
      ctx.override_engine = config_.find_engine(o.engine);
      if (ctx.override_engine == nullptr) {
        return prepare_error(ErrorCode::kPlacementError,
                             fmt::format("operation {} ({}): the override names engine {}, which is not registered",
                                         op.id().index(), op.name(), o.engine));
      }
    }
    SmallVector<std::uint32_t, 4> operands;
    for (program::ValueId v : op.operands()) operands.push_back(value_slot_[v.index()]);
    // Effect order: the nodes realising the operations this one follows.
    SmallVector<std::uint32_t, 2> after;
    for (program::OperationId pred : op.ordered_after())
      if (op_last_node_[pred.index()] != kNoIndex) after.push_back(op_last_node_[pred.index()]);

    const std::size_t nodes_before = st_.nodes.size();
    if (op.is_core()) {
      const program::ValueId result = op.result(0);
      TENFERRO_ASSIGN_OR_RETURN(Dims shape, program_.concrete_shape(result, symbols_));
      TENFERRO_ASSIGN_OR_RETURN(std::uint32_t slot,
                                plan_core(op.core_op(), &op.attributes(), operands, program_.metadata(result).dtype,
                                          std::move(shape), ctx, after, op.name()));
      value_slot_[result.index()] = slot;
    } else if (const program::CollectiveOp* collective = program::as_collective(op.extension())) {
      TENFERRO_TRY(plan_collective(op, *collective, operands, ctx, after));
    } else {
      TENFERRO_TRY(plan_extension(op, operands, ctx, after));
    }
    if (st_.nodes.size() > nodes_before)
      op_last_node_[op.id().index()] = static_cast<std::uint32_t>(st_.nodes.size() - 1);
    return ok_status();
  }

  // Candidate engines, steps 1-3 of Note [Resolution order].
  Result<SmallVector<const EngineEntry*, 4>> candidates(const ResolutionContext& ctx, OpFamily family,
                                                        std::string_view extension_family,
                                                        std::span<const std::uint32_t> operands, std::string* why) {
    SmallVector<const EngineEntry*, 4> out;
    auto allowed = [&](const EngineEntry* e) {
      if (!hardware_allowed(*e, ctx.constraint.where)) return false;
      if (ctx.constraint.colocation_group != 0) {
        for (const auto& [group, engine] : colocation_)
          if (group == ctx.constraint.colocation_group && engine != e) return false;
      }
      return true;
    };
    if (ctx.override_engine != nullptr) {
      *why = "operation-local override";
      out.push_back(ctx.override_engine);
      return out;
    }
    const Placement& placement = st_.options.placement;
    if (placement.kind() != Placement::Kind::kDefault) {
      TENFERRO_ASSIGN_OR_RETURN(ResolvedPlacement where, resolve_placement(config_, placement, {}, nullptr));
      const EngineEntry* e = config_.find_engine(where.engine);
      if (!allowed(e)) {
        return prepare_error(
            ErrorCode::kPlacementError,
            fmt::format("placement {} names engine {} ('{}'), which violates the operation's "
                        "constraint '{}'",
                        placement.to_string(), e->id(), e->metadata().name, ctx.constraint.to_string()));
      }
      *why = fmt::format("placement {}", placement.to_string());
      out.push_back(e);
      return out;
    }
    for (const FamilyPreference& pref : config_.policies().preferences) {
      if (pref.family != family || (family == OpFamily::kExtension && pref.extension_family != extension_family))
        continue;
      for (EngineId id : pref.engines) {
        const EngineEntry* e = config_.find_engine(id);
        if (e != nullptr && allowed(e)) out.push_back(e);
      }
      *why = fmt::format("runtime {} preference", to_string(family));
      if (!out.empty()) return out;
    }
    const EngineEntry* first = operands.empty() ? config_.default_engine() : st_.engines[st_.slots[operands[0]].engine];
    if (first != nullptr && allowed(first)) out.push_back(first);
    for (const EngineEntry& e : config_.engines()) {
      if (&e == first || !allowed(&e)) continue;
      if (first == nullptr || e.metadata().storage == first->metadata().storage ||
          ctx.constraint.where != program::PlacementClass::kAny)
        out.push_back(&e);
    }
    *why = operands.empty() ? "default engine" : "engine holding operand 0, then same storage class";
    if (out.empty()) {
      return prepare_error(
          ErrorCode::kPlacementError,
          fmt::format("no registered engine satisfies placement constraint '{}'", ctx.constraint.to_string()));
    }
    return out;
  }

  // Descriptors of operands/result as a provider may see them.
  OperandSignature describe(std::uint32_t slot, SpecializationRequirements granted) const {
    const SlotInfo& s = st_.slots[slot];
    OperandSignature sig;
    sig.dtype = s.dtype;
    sig.rank = static_cast<std::int64_t>(s.shape.size());
    if (granted.has(SpecializationAxis::kConcreteDims)) sig.shape = s.shape.span();
    if (granted.has(SpecializationAxis::kLayoutClass)) sig.layout = s.layout;
    return sig;
  }

  // Asks `ask(granted)` with widening (Note [Specialization widening]).
  template <class Ask>
  Result<Answer> ask_with_widening(std::string_view who, Ask&& ask) {
    SpecializationRequirements granted;
    for (int attempt = 0; attempt <= program::kNumSpecializationAxes + 1; ++attempt) {
      Result<PrepareCapability> cap = [&]() -> Result<PrepareCapability> {
        try {
          return ask(granted);
        } catch (...) {
          return status_from_current_exception(ErrorStage::kPrepare, who);
        }
      }();
      if (!cap.ok()) return cap.status().with_context(fmt::format("preparing on {}", who), ErrorStage::kPrepare);
      Answer answer;
      switch (cap->kind()) {
        case PrepareCapability::Kind::kPrepared:
          answer.prepared = true;
          answer.kernel = std::move(cap->kernel());
          if (!is_canonical_request(answer.kernel.resources)) {
            return prepare_error(ErrorCode::kProviderContractError,
                                 fmt::format("{}: expected node resources in canonical order without duplicates", who));
          }
          if (st_.determinism == Determinism::kReproducible && !answer.kernel.reproducible) {
            answer.prepared = false;
            answer.determinism_refusal = true;
            answer.refusal = fmt::format("{}: algorithm not declared reproducible", who);
          }
          return answer;
        case PrepareCapability::Kind::kUnsupported:
          answer.refusal = fmt::format("{}: unsupported ({})", who, cap->reason());
          return answer;
        case PrepareCapability::Kind::kNeedsSpecialization:
          TENFERRO_TRY(cap->requirements().check_widens(granted, who));
          granted = cap->requirements();
          break;
      }
    }
    return prepare_error(ErrorCode::kProviderContractError, fmt::format("{}: specialization did not converge", who));
  }

  // The flops of a core operation the provider gave no estimate for (Note
  // [Concurrent groups]): 2 x result elements x contracted extent for
  // dot_general; 0 (unknown) for the others, which are memory-bound.
  double core_work_estimate(CoreSemanticOp op, const program::CoreAttributes& attributes,
                            std::span<const std::uint32_t> operands, IntArrayRef result) const {
    const auto* dot = std::get_if<program::DotGeneralAttributes>(&attributes);
    if (op != CoreSemanticOp::kDotGeneral || dot == nullptr || operands.empty()) return 0.0;
    double work = 2.0 * static_cast<double>(numel_unchecked(result));
    const Dims& lhs = st_.slots[operands[0]].shape;
    for (std::int64_t axis : dot->lhs_contract) work *= static_cast<double>(lhs[static_cast<std::size_t>(axis)]);
    return work;
  }

  // A core operation; returns its result slot.
  Result<std::uint32_t> plan_core(CoreSemanticOp op, const program::CoreAttributes* attributes,
                                  std::span<const std::uint32_t> operands, DType dtype, Dims shape,
                                  const ResolutionContext& ctx, std::span<const std::uint32_t> after,
                                  std::string_view name) {
    SmallVector<program::ValueMetadata, 4> concrete;
    for (std::uint32_t s : operands)
      concrete.push_back(program::ValueMetadata::exact(st_.slots[s].dtype, st_.slots[s].shape));
    if (std::optional<program::CoreAttributes> evaluated = concrete_attributes(*attributes, shape)) {
      st_.concrete_attributes.push_back(std::make_shared<const program::CoreAttributes>(std::move(*evaluated)));
      attributes = st_.concrete_attributes.back().get();
    }
    TENFERRO_TRY(check_concrete_core(op, *attributes, concrete, dtype, shape, name));
    const OpFamily family = core_op_family(op);
    if (family == OpFamily::kView) return plan_view(op, attributes, operands[0], dtype, std::move(shape), ctx);

    std::string why;
    TENFERRO_ASSIGN_OR_RETURN(auto engines, candidates(ctx, family, {}, operands, &why));
    SmallVector<std::string, 4> refusals;
    bool determinism_only = true;
    auto try_engine = [&](const EngineEntry* e, std::string_view reason) -> Result<std::optional<std::uint32_t>> {
      const CoreFamilyRuntime* slot = family_slot(*e, family);
      if (slot == nullptr) {
        refusals.push_back(fmt::format("engine {} ('{}'): no {} slot", e->id(), e->metadata().name, to_string(family)));
        determinism_only = false;
        return std::optional<std::uint32_t>();
      }
      const std::uint32_t engine = st_.engine_index(e);
      SlotInfo result;
      result.dtype = dtype;
      result.shape = shape;
      result.engine = engine;
      const std::string who = fmt::format("{} of engine {} ('{}')", slot->name(), e->id(), e->metadata().name);
      TENFERRO_ASSIGN_OR_RETURN(Answer answer, ask_with_widening(who, [&](SpecializationRequirements granted) {
                                  SmallVector<OperandSignature, 4> ops;
                                  for (std::uint32_t s : operands) ops.push_back(describe(s, granted));
                                  OperationSignature sig;
                                  sig.op = op;
                                  sig.attributes = attributes;
                                  sig.operands = std::span<const OperandSignature>(ops.data(), ops.size());
                                  sig.result = OperandSignature{dtype, static_cast<std::int64_t>(shape.size()),
                                                                granted.has(SpecializationAxis::kConcreteDims)
                                                                    ? shape.span()
                                                                    : std::span<const std::int64_t>(),
                                                                LayoutClass::kRowMajor};
                                  sig.granted = granted;
                                  sig.determinism = st_.determinism;
                                  sig.placement = placement_of(e);
                                  return slot->prepare(sig);
                                }));
      if (!answer.prepared) {
        refusals.push_back(std::move(answer.refusal));
        determinism_only = determinism_only && answer.determinism_refusal;
        return std::optional<std::uint32_t>();
      }
      if (answer.kernel.work == 0.0) answer.kernel.work = core_work_estimate(op, *attributes, operands, shape);
      NodeRecord node;
      node.kind = ScheduledNodeKind::kOperation;
      node.op = op;
      node.attributes = attributes;
      node.provider = slot;
      node.name = std::string(name);
      node.provider_name = std::string(slot->name());
      node.reason = describe_reason(reason, refusals, ctx);
      TENFERRO_ASSIGN_OR_RETURN(std::uint32_t out, emit_node(std::move(node), e, operands, std::move(answer.kernel),
                                                             after, ctx.provenance, std::move(result)));
      record_colocation(ctx, e);
      return std::optional<std::uint32_t>(out);
    };
    for (const EngineEntry* e : engines) {
      TENFERRO_ASSIGN_OR_RETURN(auto out, try_engine(e, why));
      if (out) return *out;
    }
    if (const EngineEntry* fb = fallback(engines)) {
      TENFERRO_ASSIGN_OR_RETURN(auto out, try_engine(fb, "explicitly configured fallback engine"));
      if (out) return *out;
    }
    const bool det = determinism_only && !refusals.empty();
    return prepare_error(det ? ErrorCode::kDeterminismUnsupported : ErrorCode::kUnsupportedOperation,
                         fmt::format("{}: expected an engine that {} it, found none ({})", name,
                                     det ? "reproducibly implements" : "implements", fmt::join(refusals, "; ")));
  }

  void record_colocation(const ResolutionContext& ctx, const EngineEntry* e) {
    const std::uint32_t group = ctx.constraint.colocation_group;
    if (group == 0) return;
    for (const auto& [g, engine] : colocation_)
      if (g == group) return;
    colocation_.emplace_back(group, e);
  }

  const EngineEntry* fallback(std::span<const EngineEntry* const> tried) const {
    const EngineId id = config_.policies().fallback_engine;
    if (!id.valid()) return nullptr;
    const EngineEntry* e = config_.find_engine(id);
    if (std::find(tried.begin(), tried.end(), e) != tried.end()) return nullptr;
    return e;
  }

  std::string describe_reason(std::string_view reason, std::span<const std::string> refusals,
                              const ResolutionContext& ctx) const {
    std::string out(reason);
    if (!ctx.lowered_from.empty()) out += fmt::format("; lowered from {}", ctx.lowered_from);
    if (!refusals.empty()) out += fmt::format("; refused: {}", fmt::join(refusals, "; "));
    return out;
  }

  ResolvedPlacement placement_of(const EngineEntry* e) {
    const std::uint32_t index = st_.engine_index(e);
    if (domain_of_.size() <= index) domain_of_.resize(index + 1, UINT64_MAX);
    if (domain_of_[index] == UINT64_MAX) {
      // The options' placement decides the domain when it names this
      // engine, or names a CPU domain or device (without an engine) that
      // this engine serves; otherwise the engine's own policy does.
      Placement p = st_.options.placement;
      const bool domain_only = !p.engine_id().valid() && serves_placement(*e, p);
      if ((p.engine_id() != e->id() && !domain_only) || p.kind() == Placement::Kind::kDefault) {
        p = Placement::engine(e->id());
      }
      std::string reason;
      Result<ResolvedPlacement> r = resolve_placement(config_, p, weights_, &reason);
      domain_of_[index] = r.ok() ? r->domain : e->metadata().default_domain;
      st_.notes.push_back(fmt::format("engine {} ('{}') runs in domain {}: {}", e->id(), e->metadata().name,
                                      domain_of_[index], r.ok() ? reason : r.status().message()));
    }
    return ResolvedPlacement{e->id(), domain_of_[index]};
  }

  // Creates a node on engine `e` reading `operands` (moved there first),
  // writing `result` (when given). Returns the result slot.
  Result<std::uint32_t> emit_node(NodeRecord node, const EngineEntry* e, std::span<const std::uint32_t> operands,
                                  PreparedKernel kernel, std::span<const std::uint32_t> after,
                                  const program::ProvenanceRef& provenance, std::optional<SlotInfo> result) {
    const std::uint32_t engine = st_.engine_index(e);
    node.engine = engine;
    node.placement = placement_of(e);
    node.provenance = provenance;
    for (std::uint32_t s : operands) {
      TENFERRO_ASSIGN_OR_RETURN(std::uint32_t local, ensure_at(s, e));
      node.inputs.push_back(local);
    }
    node.plan = std::move(kernel.plan);
    node.scratch_bytes = kernel.scratch_bytes;
    node.resources = std::move(kernel.resources);
    node.in_place_ok = kernel.in_place_ok;
    node.work = kernel.work;
    SmallVector<std::uint32_t, 4> deps;
    for (std::uint32_t s : node.inputs)
      if (st_.slots[s].storage_producer != kNoIndex) deps.push_back(st_.slots[s].storage_producer);
    for (std::uint32_t n : after) deps.push_back(n);
    add_with_barrier(std::move(node), deps);
    const std::uint32_t index = static_cast<std::uint32_t>(st_.nodes.size() - 1);
    std::uint32_t out = kNoIndex;
    if (result) {
      result->producer = index;
      result->storage_producer = index;
      result->strides = row_major_strides(result->shape);
      result->layout = LayoutClass::kRowMajor;
      out = add_slot(std::move(*result));
      st_.nodes[index].outputs.push_back(out);
    }
    return out;
  }

  // Appends `node` with dependencies `deps`; dependencies on another event
  // domain go to a Barrier placed just before it (transfers wait for their
  // source themselves).
  void add_with_barrier(NodeRecord node, std::span<const std::uint32_t> deps) {
    SmallVector<std::uint32_t, 4> cross;
    for (std::uint32_t d : deps) {
      const bool same_domain = st_.nodes[d].engine == node.engine ||
                               (node.kind == ScheduledNodeKind::kTransfer && st_.nodes[d].engine == node.source_engine);
      SmallVector<std::uint32_t, 4>& list = same_domain ? node.deps : cross;
      if (std::find(list.begin(), list.end(), d) == list.end()) list.push_back(d);
    }
    if (!cross.empty()) {
      NodeRecord barrier;
      barrier.kind = ScheduledNodeKind::kBarrier;
      barrier.engine = node.engine;
      barrier.placement = node.placement;
      barrier.deps = std::move(cross);
      barrier.name = "barrier";
      barrier.provider_name = "host wait";
      barrier.reason = "cross-event-domain dependency";
      barrier.provenance = node.provenance;
      st_.nodes.push_back(std::move(barrier));
    }
    st_.nodes.push_back(std::move(node));
  }

  // The slot holding `slot`'s value on engine `e`: itself when `e` shares
  // its storage class, otherwise the destination of an explicit transfer.
  Result<std::uint32_t> ensure_at(std::uint32_t slot, const EngineEntry* e) {
    const EngineEntry* home = st_.engines[st_.slots[slot].engine];
    if (home->metadata().storage == e->metadata().storage) {
      if (home != e) st_.slots[slot].read_cross_domain = true;
      return slot;
    }
    const std::uint32_t engine = st_.engine_index(e);
    for (const auto& [src, dst_engine, dst] : transferred_)
      if (src == slot && dst_engine == engine) return dst;
    const TransferEndpoint source{home->id(), home->metadata().storage};
    const TransferEndpoint destination{e->id(), e->metadata().storage};
    TransferProvider* provider = config_.find_transfer(source, destination);
    if (provider == nullptr) {
      return prepare_error(ErrorCode::kMissingTransfer,
                           fmt::format("expected a transfer provider for {} -> {}, found none registered "
                                       "(tenferro never copies implicitly)",
                                       source.to_string(), destination.to_string()));
    }
    st_.slots[slot].read_cross_domain = true;
    NodeRecord node;
    node.kind = ScheduledNodeKind::kTransfer;
    node.engine = engine;
    node.source_engine = st_.slots[slot].engine;
    node.placement = placement_of(e);
    node.inputs.push_back(slot);
    node.transfer = provider;
    node.transfer_source = source;
    node.transfer_destination = destination;
    node.name = "transfer";
    node.provider_name = fmt::format("transfer {} -> {}", source.to_string(), destination.to_string());
    node.reason = "operand lives in another storage class";
    SmallVector<std::uint32_t, 1> deps;
    if (st_.slots[slot].storage_producer != kNoIndex) deps.push_back(st_.slots[slot].storage_producer);
    add_with_barrier(std::move(node), deps);
    const std::uint32_t index = static_cast<std::uint32_t>(st_.nodes.size() - 1);
    SlotInfo moved;
    moved.dtype = st_.slots[slot].dtype;
    moved.shape = st_.slots[slot].shape;
    moved.strides = row_major_strides(moved.shape);
    moved.engine = engine;
    moved.producer = index;
    moved.storage_producer = index;
    const std::uint32_t dst = add_slot(std::move(moved));
    st_.nodes[index].outputs.push_back(dst);
    transferred_.push_back({slot, engine, dst});
    return dst;
  }

  // A metadata-only view; reshape of a value that is not row-major dense
  // first gets an explicit layout copy.
  Result<std::uint32_t> plan_view(CoreSemanticOp op, const program::CoreAttributes* attributes, std::uint32_t source,
                                  DType dtype, Dims shape, const ResolutionContext& ctx) {
    LayoutClass layout = st_.slots[source].layout;
    if (op == CoreSemanticOp::kReshape && layout != LayoutClass::kRowMajor) {
      TENFERRO_ASSIGN_OR_RETURN(source, plan_copy(source, ctx));
      layout = LayoutClass::kRowMajor;
    }
    NodeRecord node;
    node.kind = ScheduledNodeKind::kView;
    node.op = op;
    node.attributes = attributes;
    node.engine = st_.slots[source].engine;
    node.placement = placement_of(st_.engines[node.engine]);
    node.inputs.push_back(source);
    node.name = std::string(program::to_string(op));
    node.provider_name = "metadata-only view";
    node.reason = "views never call a provider";
    node.provenance = ctx.provenance;
    st_.nodes.push_back(std::move(node));
    const std::uint32_t index = static_cast<std::uint32_t>(st_.nodes.size() - 1);
    SlotInfo view;
    view.dtype = dtype;
    view.shape = std::move(shape);
    view.engine = st_.slots[source].engine;
    view.producer = index;
    view.view_source = source;
    view.storage_producer = st_.slots[source].storage_producer;
    view.layout = view_layout(op, layout, st_.slots[source].shape, view.shape, attributes);
    const std::uint32_t out = add_slot(std::move(view));
    st_.nodes[index].outputs.push_back(out);
    return out;
  }

  // An explicit layout copy of `source` to row-major on its engine.
  Result<std::uint32_t> plan_copy(std::uint32_t source, const ResolutionContext& ctx) {
    const EngineEntry* e = st_.engines[st_.slots[source].engine];
    const LayoutRuntime* layout = e->registration.capabilities.layout.get();
    if (layout == nullptr) {
      return prepare_error(ErrorCode::kUnsupportedOperation,
                           fmt::format("reshape of a value that is not row-major dense needs a layout copy, but "
                                       "engine {} ('{}') has no layout slot",
                                       e->id(), e->metadata().name));
    }
    const std::string who = fmt::format("{} of engine {} ('{}')", layout->name(), e->id(), e->metadata().name);
    TENFERRO_ASSIGN_OR_RETURN(Answer answer, ask_with_widening(who, [&](SpecializationRequirements granted) {
                                OperandSignature dst = describe(source, granted);
                                dst.layout = LayoutClass::kRowMajor;
                                return layout->prepare_copy(describe(source, granted), dst, placement_of(e));
                              }));
    if (!answer.prepared) {
      return prepare_error(
          answer.determinism_refusal ? ErrorCode::kDeterminismUnsupported : ErrorCode::kUnsupportedOperation,
          fmt::format("layout copy: {}", answer.refusal));
    }
    NodeRecord node;
    node.kind = ScheduledNodeKind::kCopy;
    node.layout = layout;
    node.name = "copy";
    node.provider_name = std::string(layout->name());
    node.reason = "materialise row-major for a reshape";
    SlotInfo result;
    result.dtype = st_.slots[source].dtype;
    result.shape = st_.slots[source].shape;
    result.engine = st_.slots[source].engine;
    const std::uint32_t operand[] = {source};
    return emit_node(std::move(node), e, operand, std::move(answer.kernel), {}, ctx.provenance, std::move(result));
  }

  // --- collectives (Note [Collective nodes] in spi/collective.h) ------------
  // The node runs on the host engine holding its operand (the first host
  // engine, behind a transfer, when the operand lives elsewhere).
  Status plan_collective(OperationView op, const program::CollectiveOp& collective,
                         std::span<const std::uint32_t> operands, const ResolutionContext& ctx,
                         std::span<const std::uint32_t> after) {
    auto is_host = [](const EngineEntry* e) {
      return e->metadata().hardware == HardwareClass::kCpu || e->metadata().hardware == HardwareClass::kReference;
    };
    const EngineEntry* e = st_.engines[st_.slots[operands[0]].engine];
    for (std::size_t i = 0; !is_host(e) && i < config_.engines().size(); ++i) e = &config_.engines()[i];
    if (!is_host(e)) {
      return prepare_error(ErrorCode::kPlacementError,
                           fmt::format("{}: expected a host engine to run the collective on, found none",
                                       collective.spec().to_string()));
    }
    SlotInfo result;
    result.dtype = program_.metadata(op.result(0)).dtype;
    TENFERRO_ASSIGN_OR_RETURN(result.shape, program_.concrete_shape(op.result(0), symbols_));
    result.engine = st_.engine_index(e);
    TENFERRO_ASSIGN_OR_RETURN(std::uint32_t operand, ensure_at(operands[0], e));
    TENFERRO_ASSIGN_OR_RETURN(
        ResolvedCollective resolved,
        resolve_collective(st_, collective, st_.slots[operand], result.dtype, result.shape, placement_of(e)));
    NodeRecord node;
    node.kind = ScheduledNodeKind::kCollective;
    node.collective = resolved.provider;
    node.collective_op = &collective;
    node.name = std::string(program::to_string(collective.spec().kind));
    node.provider_name = std::string(resolved.provider->name());
    node.reason = collective.spec().to_string();
    TENFERRO_ASSIGN_OR_RETURN(value_slot_[op.result(0).index()],
                              emit_node(std::move(node), e, std::span<const std::uint32_t>(&operand, 1),
                                        std::move(resolved.kernel), after, ctx.provenance, std::move(result)));
    return ok_status();
  }

  // --- extensions ----------------------------------------------------------
  Status plan_extension(OperationView op, std::span<const std::uint32_t> operands, ResolutionContext ctx,
                        std::span<const std::uint32_t> after) {
    const program::ExtensionOp& ext = *op.extension();
    const std::string family(ext.family_id());
    SmallVector<Dims, 2> shapes;
    SmallVector<DType, 2> dtypes;
    for (std::size_t r = 0; r < op.num_results(); ++r) {
      TENFERRO_ASSIGN_OR_RETURN(Dims shape, program_.concrete_shape(op.result(r), symbols_));
      shapes.push_back(std::move(shape));
      dtypes.push_back(program_.metadata(op.result(r)).dtype);
    }
    {
      SmallVector<program::ValueMetadata, 4> concrete;
      for (std::uint32_t s : operands)
        concrete.push_back(program::ValueMetadata::exact(st_.slots[s].dtype, st_.slots[s].shape));
      TENFERRO_TRY(check_concrete_extension(ext, concrete, dtypes, shapes));
    }
    std::string why;
    TENFERRO_ASSIGN_OR_RETURN(auto engines, candidates(ctx, OpFamily::kExtension, family, operands, &why));
    SmallVector<std::string, 4> refusals;
    bool determinism_only = true;
    bool registered = false;  // some engine has a module for the family

    auto try_native = [&](const EngineEntry* e, std::string_view reason) -> Result<bool> {
      const ExtensionRegistration* reg = config_.find_extension(family, e->id());
      registered = registered || reg != nullptr;
      if (reg == nullptr) {
        refusals.push_back(
            fmt::format("engine {} ('{}'): no native engine for '{}'", e->id(), e->metadata().name, family));
        determinism_only = false;
        return false;
      }
      const ExtensionEngine* engine = reg->implementation.get();
      const std::string who =
          fmt::format("extension engine {} on engine {} ('{}')", engine->name(), e->id(), e->metadata().name);
      TENFERRO_ASSIGN_OR_RETURN(
          Answer answer, ask_with_widening(who, [&](SpecializationRequirements granted) {
            SmallVector<OperandSignature, 4> ops;
            for (std::uint32_t s : operands) ops.push_back(describe(s, granted));
            SmallVector<OperandSignature, 2> res;
            for (std::size_t r = 0; r < shapes.size(); ++r) {
              res.push_back(OperandSignature{
                  dtypes[r], static_cast<std::int64_t>(shapes[r].size()),
                  granted.has(SpecializationAxis::kConcreteDims) ? shapes[r].span() : std::span<const std::int64_t>(),
                  LayoutClass::kRowMajor});
            }
            ExtensionSignature sig;
            sig.op = &ext;
            sig.operands = std::span<const OperandSignature>(ops.data(), ops.size());
            sig.results = std::span<const OperandSignature>(res.data(), res.size());
            sig.granted = granted;
            sig.determinism = st_.determinism;
            sig.placement = placement_of(e);
            return engine->prepare(sig);
          }));
      if (!answer.prepared) {
        refusals.push_back(std::move(answer.refusal));
        determinism_only = determinism_only && answer.determinism_refusal;
        return false;
      }
      NodeRecord node;
      node.kind = ScheduledNodeKind::kExtension;
      node.extension = engine;
      node.extension_op = &ext;
      node.name = family;
      node.provider_name = std::string(engine->name());
      node.reason = describe_reason(reason, refusals, ctx);
      TENFERRO_TRY(emit_node(std::move(node), e, operands, std::move(answer.kernel), after, ctx.provenance, {}));
      record_colocation(ctx, e);
      const std::uint32_t index = static_cast<std::uint32_t>(st_.nodes.size() - 1);
      for (std::size_t r = 0; r < shapes.size(); ++r) {
        SlotInfo result;
        result.dtype = dtypes[r];
        result.shape = shapes[r];
        result.strides = row_major_strides(result.shape);
        result.engine = st_.engine_index(e);
        result.producer = index;
        result.storage_producer = index;
        const std::uint32_t slot = add_slot(std::move(result));
        st_.nodes[index].outputs.push_back(slot);
        value_slot_[op.result(r).index()] = slot;
      }
      return true;
    };

    for (const EngineEntry* e : engines) {
      TENFERRO_ASSIGN_OR_RETURN(bool done, try_native(e, why));
      if (done) return ok_status();
    }
    // Step 5: core lowering, with widening.
    SpecializationRequirements granted;
    for (int attempt = 0; attempt <= program::kNumSpecializationAxes + 1; ++attempt) {
      Result<program::CoreLowering> lowering = program::lower_extension_to_core(program_, op.id(), granted, symbols_);
      if (!lowering.ok()) {
        return lowering.status().with_context(fmt::format("lowering extension '{}' to core ops", family),
                                              ErrorStage::kPrepare);
      }
      if (lowering->kind == program::ExtensionLoweringOutcome::Kind::kLowered) {
        ctx.lowered_from = fmt::format(
            "'{}' ({} core ops; {})", family, lowering->fragment->num_operations(),
            refusals.empty() ? std::string("no native engine") : fmt::format("{}", fmt::join(refusals, "; ")));
        return inline_fragment(op, std::move(lowering->fragment), operands, ctx, after);
      }
      if (lowering->kind == program::ExtensionLoweringOutcome::Kind::kUnsupported) {
        refusals.push_back(fmt::format("core lowering: {}", lowering->unsupported_reason));
        determinism_only = false;
        break;
      }
      granted = lowering->requirements;  // widening already validated
    }
    if (const EngineEntry* fb = fallback(engines)) {
      TENFERRO_ASSIGN_OR_RETURN(bool done, try_native(fb, "explicitly configured fallback engine"));
      if (done) return ok_status();
    }
    const bool det = determinism_only && !refusals.empty();
    return prepare_error(
        det ? ErrorCode::kDeterminismUnsupported : ErrorCode::kUnsupportedExtension,
        fmt::format("extension '{}': expected a native engine or a core lowering, found none ({}){}", family,
                    fmt::join(refusals, "; "),
                    !registered ? "; no engine of this runtime registered the family: install its extension "
                                  "module (RuntimeBuilder::add_extension_module; for make_cpu_runtime, "
                                  "CpuRuntimeOptions::extensions, e.g. fft::cpu_extension_module)"
                                : ""));
  }

  Status inline_fragment(OperationView op, std::shared_ptr<const program::SemanticProgram> fragment,
                         std::span<const std::uint32_t> operands, const ResolutionContext& ctx,
                         std::span<const std::uint32_t> after) {
    const program::SemanticProgram& f = *fragment;
    st_.fragments.push_back(fragment);
    SmallVector<program::ConcreteInput, 4> concrete;
    for (std::uint32_t s : operands) concrete.push_back(program::ConcreteInput{st_.slots[s].dtype, st_.slots[s].shape});
    program::SymbolValues fsyms;
    TENFERRO_TRY(f.check_guards(std::span<const program::ConcreteInput>(concrete.data(), concrete.size()), &fsyms));
    std::vector<std::uint32_t> fslot(f.num_values(), kNoIndex);
    for (std::size_t i = 0; i < f.num_inputs(); ++i) fslot[f.input(i).index()] = operands[i];
    bool first = true;
    for (OperationView fop : f.operations()) {
      SmallVector<std::uint32_t, 4> ins;
      for (program::ValueId v : fop.operands()) ins.push_back(fslot[v.index()]);
      TENFERRO_ASSIGN_OR_RETURN(Dims shape, f.concrete_shape(fop.result(0), fsyms));
      ResolutionContext fctx = ctx;
      fctx.provenance = fop.provenance();
      TENFERRO_ASSIGN_OR_RETURN(
          std::uint32_t slot,
          plan_core(fop.core_op(), &fop.attributes(), ins, f.metadata(fop.result(0)).dtype, std::move(shape), fctx,
                    first ? after : std::span<const std::uint32_t>(), fop.name()));
      first = false;
      fslot[fop.result(0).index()] = slot;
    }
    for (std::size_t r = 0; r < op.num_results(); ++r)
      value_slot_[op.result(r).index()] = fslot[f.outputs()[r].index()];
    return ok_status();
  }

  PreparedState& st_;
  const RuntimeConfig& config_;
  const program::SemanticProgram& program_;
  program::SymbolValues symbols_;
  std::vector<std::uint32_t> value_slot_;
  std::vector<std::uint32_t> op_last_node_;
  std::vector<AffinityWeight> weights_;
  std::vector<std::uint64_t> domain_of_;
  std::vector<std::pair<std::uint32_t, const EngineEntry*>> colocation_;
  struct Transferred {
    std::uint32_t source;
    std::uint32_t engine;
    std::uint32_t slot;
  };
  std::vector<Transferred> transferred_;
};

}  // namespace

Result<std::unique_ptr<PreparedState>> prepare_program(std::shared_ptr<const RuntimeConfig> config,
                                                       std::shared_ptr<const program::SemanticProgram> program,
                                                       const InputSignature& signature, const PrepareOptions& options) {
  auto state = std::make_unique<PreparedState>();
  state->runtime = config->runtime_id();
  state->epoch = config->epoch();
  state->config = std::move(config);
  state->program = std::move(program);
  state->signature = signature;
  state->options = options;
  state->determinism = options.determinism.value_or(state->config->policies().determinism);

  Planner planner(*state);
  TENFERRO_TRY(planner.run());
  finish_schedule(*state);
  form_concurrent_groups(*state);
  plan_buffers(*state);

  if (options.workspace_limit_bytes && state->peak_bytes > *options.workspace_limit_bytes) {
    return prepare_error(ErrorCode::kWorkspaceLimitExceeded,
                         fmt::format("expected a peak memory estimate of at most {} bytes, found {} bytes",
                                     *options.workspace_limit_bytes, state->peak_bytes));
  }
  const ResourceArbiter& arbiter = state->config->arbiter();
  auto check_capacity = [&](const ResourceAmount& r, std::string_view what) -> Status {
    const std::optional<std::uint64_t> cap = arbiter.capacity(r.key);
    if (cap && r.amount > *cap) {
      return prepare_error(
          ErrorCode::kResourceExhausted,
          fmt::format("{} needs {} of {}, but the runtime's capacity is {}", what, r.amount, r.key.to_string(), *cap));
    }
    return ok_status();
  };
  for (const ResourceAmount& r : state->admission) TENFERRO_TRY(check_capacity(r, "the run"));
  for (const NodeRecord& n : state->nodes)
    for (const ResourceAmount& r : n.resources) TENFERRO_TRY(check_capacity(r, n.name));
  return state;
}

}  // namespace tenferro::runtime::internal
