// ProgramBuilder: inputs, constants, core and extension emission, scopes and
// failure-atomic import (Notes [Builder atomicity], [Builder tokens]).
#include "tenferro/program/program_builder.h"

#include <algorithm>

#include <fmt/format.h>

#include "builder_impl.h"
#include "hashing.h"
#include "tenferro/base/ids.h"
#include "tenferro/program/collective_op.h"
#include "tenferro/program/core_inference.h"

namespace tenferro::program {

using internal::hash_combine;

namespace {

Error moved_from_error() {
  return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kCompile, "the ProgramBuilder was moved from");
}

}  // namespace

// --- Impl ---

ProgramBuilder::Impl::Checkpoint ProgramBuilder::Impl::checkpoint() const {
  return {values.size(), operations.size(), inputs.size(), symbols.size(), guards.size(), chains};
}

void ProgramBuilder::Impl::rollback(const Checkpoint& c) {
  auto truncate = [](auto& v, std::size_t n) { v.erase(v.begin() + static_cast<std::ptrdiff_t>(n), v.end()); };
  truncate(values, c.values);
  truncate(value_hashes, c.values);
  truncate(operations, c.operations);
  truncate(operation_hashes, c.operations);
  truncate(inputs, c.inputs);
  truncate(input_names, c.inputs);
  truncate(input_bindings, c.inputs);
  truncate(symbols, c.symbols);
  truncate(guards, c.guards);
  truncate(guard_origins, c.guards);
  chains = c.chains;
}

Result<std::uint32_t> ProgramBuilder::Impl::index_of(ProgramValue value) const {
  if (!value.valid()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "expected a valid ProgramValue, found {}",
                      value);
  }
  if (value.builder_ != id || value.index_ >= values.size()) {
    return make_error(ErrorCode::kForeignValue, ErrorStage::kCompile,
                      "the value belongs to another ProgramBuilder; import its program or sub-graph explicitly");
  }
  return value.index_;
}

ProgramValue ProgramBuilder::Impl::token(std::uint32_t index) const { return ProgramValue(id, index); }

std::string ProgramBuilder::Impl::node_label(std::string_view name) const {
  return internal::node_label(name, values.size(), provenance);
}

Result<std::uint32_t> ProgramBuilder::Impl::add_input(DType dtype, std::span<const SymbolicExtent> shape,
                                                      std::string_view name, const Tensor* binding) {
  if (inputs_fixed) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kCompile,
                      "this builder's inputs are fixed (a transform output mirrors its input program)");
  }
  const auto input_index = static_cast<std::uint32_t>(inputs.size());
  SymbolicShape resolved;
  std::vector<SymbolInfo> new_symbols;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const SymbolicExtent& e = shape[k];
    if (e.is_exact()) {
      if (*e.exact_value() < 0) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                          "input {} axis {}: expected a non-negative extent, found {}", input_index, k,
                          *e.exact_value());
      }
      resolved.push_back(e);
    } else if (e.is_placeholder()) {
      auto symbol = static_cast<std::uint32_t>(symbols.size() + new_symbols.size());
      new_symbols.push_back(SymbolInfo{e.upper_bound(), input_index, static_cast<std::uint32_t>(k)});
      resolved.push_back(SymbolicExtent::symbol(symbol, e.upper_bound()));
    } else if (auto symbol = e.as_symbol(); symbol && *symbol < symbols.size() + new_symbols.size()) {
      const SymbolInfo& info = *symbol < symbols.size() ? symbols[*symbol] : new_symbols[*symbol - symbols.size()];
      if (info.upper_bound != e.upper_bound()) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                          "input {} axis {}: symbol s{} carries a different bound than this builder's", input_index, k,
                          *symbol);
      }
      resolved.push_back(e);
    } else {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "input {} axis {}: expected an exact extent, a placeholder (SymbolicExtent::bounded/unknown) "
                        "or a symbol of this builder, found {}",
                        input_index, k, e.to_string());
    }
  }
  const auto value_index = static_cast<std::uint32_t>(values.size());
  ValueMetadata metadata{dtype, std::move(resolved)};
  value_hashes.push_back(hash_combine(hash_combine(0x1a9b07ULL, input_index), metadata.hash()));
  values.push_back(internal::ValueRecord{std::move(metadata), ValueProducer{true, OperationId(), input_index}});
  for (SymbolInfo& s : new_symbols) symbols.push_back(s);
  inputs.push_back(value_index);
  input_names.emplace_back(name);
  input_bindings.push_back(binding ? *binding : Tensor());
  return value_index;
}

void ProgramBuilder::Impl::append_operation(internal::OperationRecord record, std::span<const ValueMetadata> results,
                                            std::vector<ShapeGuard> new_guards) {
  const auto op_index = static_cast<std::uint32_t>(operations.size());
  // Effect order (Note [Effects and ordering]).
  SmallVector<std::uint32_t, 4> preds;
  for (const Effect& e : record.effects) {
    ChainState& chain = chains[e.resource];
    if (chain.last_writer) preds.push_back(*chain.last_writer);
    if (e.writes()) {
      for (std::uint32_t r : chain.readers_since_write) preds.push_back(r);
      chain.last_writer = op_index;
      chain.readers_since_write.clear();
    } else {
      chain.readers_since_write.push_back(op_index);
    }
  }
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  for (std::uint32_t p : preds) record.ordered_after.push_back(OperationId(p));

  // Structural (Merkle) hash: everything semantic, nothing positional.
  std::uint64_t h = record.extension ? hash_combine(internal::hash_string(record.extension->family_id()),
                                                    record.extension->payload_hash())
                                     : hash_combine(0xc0deULL, static_cast<std::uint64_t>(record.core));
  h = hash_combine(h, hash_value(record.attributes));
  for (ValueId v : record.operands) h = hash_combine(h, value_hashes[v.index()]);
  h = hash_combine(h, record.effects.hash());
  for (const AliasDecl& a : record.aliases) h = hash_combine(h, a.hash());
  h = hash_combine(h, record.placement.hash());
  SmallVector<std::uint64_t, 4> pred_hashes;
  for (std::uint32_t p : preds) pred_hashes.push_back(operation_hashes[p]);
  std::sort(pred_hashes.begin(), pred_hashes.end());
  for (std::uint64_t ph : pred_hashes) h = hash_combine(h, ph);
  for (const ValueMetadata& m : results) h = hash_combine(h, m.hash());

  record.first_result = static_cast<std::uint32_t>(values.size());
  record.num_results = static_cast<std::uint32_t>(results.size());
  for (std::size_t r = 0; r < results.size(); ++r) {
    values.push_back(
        internal::ValueRecord{results[r], ValueProducer{false, OperationId(op_index), static_cast<std::uint32_t>(r)}});
    value_hashes.push_back(hash_combine(h, r));
  }
  operations.push_back(std::move(record));
  operation_hashes.push_back(h);
  for (ShapeGuard& g : new_guards) {
    guards.push_back(std::move(g));
    guard_origins.push_back(op_index);
  }
}

Result<std::uint32_t> ProgramBuilder::Impl::emit_core(CoreSemanticOp op, std::span<const std::uint32_t> operands,
                                                      CoreAttributes attributes, const ProvenanceRef& op_provenance,
                                                      const PlacementConstraint& op_placement) {
  SmallVector<ValueMetadata, 4> metadata;
  for (std::uint32_t v : operands) metadata.push_back(values[v].metadata);
  std::vector<ShapeGuard> new_guards;
  ShapeConstraints constraints(to_string(op), values.size(), &new_guards, op_provenance);
  TENFERRO_ASSIGN_OR_RETURN(ValueMetadata result, infer_core_metadata(op, attributes, metadata, constraints));

  internal::OperationRecord record;
  record.core = op;
  record.attributes = std::move(attributes);
  for (std::uint32_t v : operands) record.operands.push_back(ValueId(v));
  record.aliases.push_back(core_op_info(op).alias == AliasClass::kViewOfOperand0 ? AliasDecl::view_of(0)
                                                                                 : AliasDecl::fresh());
  record.placement = op_placement;
  record.provenance = op_provenance;
  const auto first = static_cast<std::uint32_t>(values.size());
  append_operation(std::move(record), std::span<const ValueMetadata>(&result, 1), std::move(new_guards));
  return first;
}

Result<std::uint32_t> ProgramBuilder::Impl::emit_extension(std::shared_ptr<const ExtensionOp> op,
                                                           std::span<const std::uint32_t> operands,
                                                           const ProvenanceRef& op_provenance,
                                                           const PlacementConstraint& op_placement) {
  const std::string family(op->family_id());
  SmallVector<ValueMetadata, 4> metadata;
  for (std::uint32_t v : operands) metadata.push_back(values[v].metadata);
  std::vector<ShapeGuard> new_guards;
  ShapeConstraints constraints(family, values.size(), &new_guards, op_provenance);
  auto contract_error = [&](std::string message) {
    return Error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                 fmt::format("{}: {}", constraints.node(), message));
  };

  using MetadataList = SmallVector<ValueMetadata, 2>;
  using AliasList = SmallVector<AliasDecl, 2>;
  TENFERRO_ASSIGN_OR_RETURN(MetadataList results,
                            internal::call_extension(ErrorStage::kCompile, "ExtensionOp::infer_metadata",
                                                     [&]() { return op->infer_metadata(metadata, constraints); }));
  TENFERRO_ASSIGN_OR_RETURN(EffectSet effects,
                            internal::call_extension(ErrorStage::kCompile, "ExtensionOp::effects",
                                                     [&]() -> Result<EffectSet> { return op->effects(); }));
  // A collective is a scheduler-owned node with explicit participants and
  // ordering, never an arbitrary extension operation (Note [Collective
  // operations]).
  for (const Effect& e : effects) {
    if (e.resource.kind == ResourceKind::kCommunicator && as_collective(op.get()) == nullptr) {
      return contract_error(fmt::format(
          "declares {}; expected no communicator effect (collectives are scheduled collective nodes, not extension "
          "operations)",
          EffectSet{e}.to_string()));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(AliasList aliases,
                            internal::call_extension(ErrorStage::kCompile, "ExtensionOp::aliases",
                                                     [&]() -> Result<AliasList> { return op->aliases(); }));

  for (std::size_t r = 0; r < results.size(); ++r) {
    for (const SymbolicExtent& e : results[r].shape) {
      if (e.contains_placeholder() || e.symbol_limit() > symbols.size() || (e.is_exact() && *e.exact_value() < 0)) {
        return contract_error(
            fmt::format("result {} extent {} is not a non-negative expression of operand extents", r, e.to_string()));
      }
    }
  }
  if (aliases.size() != results.size()) {
    return contract_error(fmt::format("declares {} alias entries for {} results", aliases.size(), results.size()));
  }
  for (std::size_t r = 0; r < aliases.size(); ++r) {
    const AliasDecl& a = aliases[r];
    if ((a.kind == AliasKind::kViewOf || a.kind == AliasKind::kMustAlias) && a.operand >= operands.size()) {
      return contract_error(fmt::format("result {} alias {} names a missing operand", r, a.to_string()));
    }
    if (a.kind == AliasKind::kMustAlias && !(metadata[a.operand] == results[r])) {
      return contract_error(fmt::format("result {} must alias operand {} but has metadata {} instead of {}", r,
                                        a.operand, results[r].to_string(), metadata[a.operand].to_string()));
    }
    if (a.kind == AliasKind::kExternalAlias) {
      bool declared = false;
      for (const Effect& e : effects) declared = declared || e.resource == a.resource;
      if (!declared) {
        return contract_error(
            fmt::format("result {} aliases external state {} without declaring an effect on it", r, a.to_string()));
      }
    }
  }

  internal::OperationRecord record;
  record.extension = std::move(op);
  for (std::uint32_t v : operands) record.operands.push_back(ValueId(v));
  record.effects = std::move(effects);
  for (const AliasDecl& a : aliases) record.aliases.push_back(a);
  record.placement = op_placement;
  record.provenance = op_provenance;
  const auto first = static_cast<std::uint32_t>(values.size());
  append_operation(std::move(record), results, std::move(new_guards));
  return first;
}

namespace {
Result<SmallVector<std::uint32_t, 4>> resolve_operands(const ProgramBuilder::Impl& impl,
                                                       std::span<const ProgramValue> operands) {
  SmallVector<std::uint32_t, 4> indices;
  for (ProgramValue v : operands) {
    TENFERRO_ASSIGN_OR_RETURN(std::uint32_t index, impl.index_of(v));
    indices.push_back(index);
  }
  return indices;
}

Status check_provenance_scope(const ProgramBuilder::Impl& impl, std::string_view what) {
  if (impl.require_explicit_provenance && impl.provenance == impl.default_provenance) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                      "{}: a transform must name the input operation it derives from (TransformBuilder::derive_from) "
                      "before emitting",
                      what);
  }
  return ok_status();
}
}  // namespace

// --- ProgramBuilder ---

ProgramBuilder::ProgramBuilder(ConstantPolicy constant_policy) : impl_(std::make_unique<Impl>()) {
  impl_->id = next_unique_id();
  impl_->constant_policy = constant_policy;
  impl_->default_provenance = make_provenance("unattributed");
  impl_->provenance = impl_->default_provenance;
}

ProgramBuilder::~ProgramBuilder() = default;
ProgramBuilder::ProgramBuilder(ProgramBuilder&& other) noexcept = default;
ProgramBuilder& ProgramBuilder::operator=(ProgramBuilder&& other) noexcept = default;

Result<ProgramValue> ProgramBuilder::add_input(DType dtype, std::span<const SymbolicExtent> shape,
                                               std::string_view name) {
  if (!impl_) return moved_from_error();
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t v, impl_->add_input(dtype, shape, name, nullptr));
  return impl_->token(v);
}

Result<ProgramValue> ProgramBuilder::capture(const Tensor& tensor, std::string_view name) {
  if (!impl_) return moved_from_error();
  if (!tensor.defined()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "capture: expected a defined tensor");
  }
  SymbolicShape shape = symbolic_shape(tensor.shape());
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t v, impl_->add_input(tensor.dtype(), shape, name, &tensor));
  return impl_->token(v);
}

Result<ProgramValue> ProgramBuilder::constant(const Literal& literal) {
  return emit(CoreSemanticOp::kConstant, std::span<const ProgramValue>(), ConstantAttributes{literal});
}

Result<ProgramValue> ProgramBuilder::constantize(const Tensor& tensor, const ConstantPolicy& policy) {
  if (!impl_) return moved_from_error();
  if (tensor.defined() && tensor.nbytes() > policy.max_inline_bytes) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "constantize: {} holds {} bytes, more than the policy's {} bytes", tensor.to_string(),
                      tensor.nbytes(), policy.max_inline_bytes);
  }
  TENFERRO_ASSIGN_OR_RETURN(Literal literal, Literal::from_tensor(tensor));
  // The explicit policy replaces the builder's (Note [Constants and bindings]).
  return impl_->emit_in_scope(CoreSemanticOp::kConstant, {}, ConstantAttributes{std::move(literal)});
}

Result<ProgramValue> ProgramBuilder::Impl::emit_in_scope(CoreSemanticOp op, std::span<const ProgramValue> operands,
                                                         CoreAttributes attributes) {
  TENFERRO_ASSIGN_OR_RETURN(auto indices, resolve_operands(*this, operands));
  TENFERRO_TRY(check_provenance_scope(*this, to_string(op)));
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t v, emit_core(op, indices, std::move(attributes), provenance, placement));
  return token(v);
}

Result<ProgramValue> ProgramBuilder::emit(CoreSemanticOp op, std::span<const ProgramValue> operands,
                                          CoreAttributes attributes) {
  if (!impl_) return moved_from_error();
  if (const auto* c = std::get_if<ConstantAttributes>(&attributes);
      c != nullptr && c->literal.nbytes() > impl_->constant_policy.max_inline_bytes) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "constant: a literal of {} bytes exceeds the inline limit of {} bytes; capture the tensor as a "
                      "binding or constantize it explicitly",
                      c->literal.nbytes(), impl_->constant_policy.max_inline_bytes);
  }
  return impl_->emit_in_scope(op, operands, std::move(attributes));
}

Result<SmallVector<ProgramValue, 2>> ProgramBuilder::emit_extension(std::shared_ptr<const ExtensionOp> op,
                                                                    std::span<const ProgramValue> operands) {
  if (!impl_) return moved_from_error();
  if (!op) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "emit_extension: expected an operation, "
                      "found nullptr");
  }
  TENFERRO_ASSIGN_OR_RETURN(auto indices, resolve_operands(*impl_, operands));
  TENFERRO_TRY(check_provenance_scope(*impl_, op->family_id()));
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t first,
                            impl_->emit_extension(std::move(op), indices, impl_->provenance, impl_->placement));
  SmallVector<ProgramValue, 2> results;
  for (std::uint32_t v = first; v < impl_->values.size(); ++v) results.push_back(impl_->token(v));
  return results;
}

Result<ProgramValue> ProgramBuilder::emit_collective(const CollectiveSpec& spec, ProgramValue operand) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const CollectiveOp> op, CollectiveOp::create(spec));
  TENFERRO_ASSIGN_OR_RETURN(auto results, emit_extension(std::move(op), {operand}));
  return results[0];
}

void ProgramBuilder::set_provenance(ProvenanceRef provenance) {
  if (impl_) impl_->provenance = provenance ? std::move(provenance) : impl_->default_provenance;
}
ProvenanceRef ProgramBuilder::provenance() const { return impl_ ? impl_->provenance : nullptr; }
void ProgramBuilder::set_placement(PlacementConstraint placement) {
  if (impl_) impl_->placement = placement;
}
PlacementConstraint ProgramBuilder::placement() const noexcept {
  return impl_ ? impl_->placement : PlacementConstraint{};
}

Result<ValueMetadata> ProgramBuilder::metadata(ProgramValue value) const {
  if (!impl_) return moved_from_error();
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t index, impl_->index_of(value));
  return impl_->values[index].metadata;
}

bool ProgramBuilder::owns(ProgramValue value) const noexcept { return impl_ && impl_->index_of(value).ok(); }
std::size_t ProgramBuilder::num_inputs() const noexcept { return impl_ ? impl_->inputs.size() : 0; }
std::size_t ProgramBuilder::num_values() const noexcept { return impl_ ? impl_->values.size() : 0; }
std::size_t ProgramBuilder::num_operations() const noexcept { return impl_ ? impl_->operations.size() : 0; }
std::size_t ProgramBuilder::num_guards() const noexcept { return impl_ ? impl_->guards.size() : 0; }

// --- import ---

Result<SmallVector<ProgramValue, 4>> ProgramBuilder::Impl::import(const SemanticProgram& source,
                                                                  std::span<const std::uint32_t> input_values,
                                                                  const std::vector<ValueId>* roots) {
  auto fail = [](std::string message) { return Error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, message); };
  if (input_values.size() != source.num_inputs()) {
    return fail(fmt::format("import: the program has {} inputs, {} values were given", source.num_inputs(),
                            input_values.size()));
  }
  for (std::size_t i = 0; i < input_values.size(); ++i) {
    const ValueMetadata& want = source.metadata(source.input(i));
    const ValueMetadata& have = values[input_values[i]].metadata;
    if (want.dtype != have.dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kCompile, "import: input {} expects {}, found {}", i,
                        want.dtype, have.dtype);
    }
    if (want.rank() != have.rank()) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kCompile, "import: input {} expects {}, found {}", i,
                        want.to_string(), have.to_string());
    }
  }
  for (ValueId r : roots ? *roots : std::vector<ValueId>()) {
    if (r.index() >= source.num_values()) {
      return fail(fmt::format("import: root value {} is not a value of the program ({} values)", r.index(),
                              source.num_values()));
    }
  }
  // The source's symbols, as extents of this builder.
  std::vector<SymbolicExtent> by_symbol;
  for (std::size_t s = 0; s < source.num_symbols(); ++s) {
    const SymbolInfo& info = source.symbol(s);
    by_symbol.push_back(values[input_values[info.input]].metadata.shape[info.axis]);
  }

  const Checkpoint saved = checkpoint();
  auto result = [&]() -> Result<SmallVector<ProgramValue, 4>> {
    // Input schemas of the source hold for the given values (guards where undecided).
    std::vector<ShapeGuard> new_guards;
    const std::string label = "import";
    ShapeConstraints constraints(label, &new_guards, provenance);
    for (std::size_t i = 0; i < input_values.size(); ++i) {
      const ValueMetadata& want = source.metadata(source.input(i));
      const ValueMetadata& have = values[input_values[i]].metadata;
      for (std::size_t k = 0; k < want.shape.size(); ++k) {
        TENFERRO_TRY(constraints.require_equal(want.shape[k].substitute(by_symbol), have.shape[k],
                                               "imported input {} axis {}", i, k));
        if (auto s = want.shape[k].as_symbol(); s && source.symbol(*s).upper_bound) {
          TENFERRO_TRY(constraints.require_less_equal(have.shape[k], *source.symbol(*s).upper_bound,
                                                      fmt::format("imported input {} axis {} bound", i, k)));
        }
      }
    }
    for (ShapeGuard& g : new_guards) {
      guards.push_back(std::move(g));
      guard_origins.push_back(kNoOperation);
    }
    // Which operations to import: all, or what the roots need plus every
    // effectful operation.
    std::vector<bool> needed(source.num_operations(), roots == nullptr);
    if (roots != nullptr) {
      std::vector<OperationId> stack;
      auto want_value = [&](ValueId v) {
        const ValueProducer& p = source.producer(v);
        if (!p.is_input && !needed[p.operation.index()]) {
          needed[p.operation.index()] = true;
          stack.push_back(p.operation);
        }
      };
      for (ValueId r : *roots) want_value(r);
      for (OperationView op : source.operations()) {
        if (!op.effects().is_pure() && !needed[op.id().index()]) {
          needed[op.id().index()] = true;
          stack.push_back(op.id());
        }
      }
      while (!stack.empty()) {
        OperationView op = source.operation(stack.back());
        stack.pop_back();
        for (ValueId v : op.operands()) want_value(v);
        for (OperationId p : op.ordered_after()) {
          if (!needed[p.index()]) {
            needed[p.index()] = true;
            stack.push_back(p);
          }
        }
      }
    }
    std::vector<std::uint32_t> mapped(source.num_values(), 0);
    for (std::size_t i = 0; i < input_values.size(); ++i) mapped[source.input(i).index()] = input_values[i];
    for (OperationView op : source.operations()) {
      if (!needed[op.id().index()]) continue;
      SmallVector<std::uint32_t, 4> operands;
      for (ValueId v : op.operands()) operands.push_back(mapped[v.index()]);
      std::uint32_t first = 0;
      if (op.is_core()) {
        TENFERRO_ASSIGN_OR_RETURN(first,
                                  emit_core(op.core_op(), operands, op.attributes(), op.provenance(), op.placement()));
      } else {
        TENFERRO_ASSIGN_OR_RETURN(first,
                                  emit_extension(op.shared_extension(), operands, op.provenance(), op.placement()));
        if (values.size() - first != op.num_results()) {
          return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                            "import: extension {} produced {} results, the program recorded {}", op.name(),
                            values.size() - first, op.num_results());
        }
      }
      for (std::size_t r = 0; r < op.num_results(); ++r)
        mapped[op.result(r).index()] = first + static_cast<std::uint32_t>(r);
    }
    SmallVector<ProgramValue, 4> out;
    if (roots == nullptr) {
      for (ValueId v : source.outputs()) out.push_back(token(mapped[v.index()]));
    } else {
      for (ValueId v : *roots) out.push_back(token(mapped[v.index()]));
    }
    return out;
  }();
  if (!result.ok()) {
    rollback(saved);
    return Status(result.status()).with_context("importing a program failed; the builder is unchanged");
  }
  return result;
}

Result<SmallVector<ProgramValue, 4>> ProgramBuilder::import_program(const SemanticProgram& source,
                                                                    std::span<const ProgramValue> inputs) {
  if (!impl_) return moved_from_error();
  TENFERRO_ASSIGN_OR_RETURN(auto indices, resolve_operands(*impl_, inputs));
  return impl_->import(source, indices, nullptr);
}

Result<SmallVector<ProgramValue, 4>> ProgramBuilder::import_values(const SemanticProgram& source,
                                                                   std::span<const ProgramValue> inputs,
                                                                   std::span<const ValueId> roots) {
  if (!impl_) return moved_from_error();
  TENFERRO_ASSIGN_OR_RETURN(auto indices, resolve_operands(*impl_, inputs));
  std::vector<ValueId> root_list(roots.begin(), roots.end());
  return impl_->import(source, indices, &root_list);
}

Result<SmallVector<ProgramValue, 4>> ProgramBuilder::import_program(const FrozenProgram& source,
                                                                    std::span<const ProgramValue> parameters) {
  if (!impl_) return moved_from_error();
  if (!source.program) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "import: expected a program, found null");
  }
  const SemanticProgram& program = *source.program;
  if (parameters.size() != source.bindings.parameters().size() ||
      source.bindings.num_inputs() != program.num_inputs()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "import: the program takes {} parameters, {} values were given",
                      source.bindings.parameters().size(), parameters.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(auto parameter_indices, resolve_operands(*impl_, parameters));
  const Impl::Checkpoint saved = impl_->checkpoint();
  std::vector<std::uint32_t> inputs(program.num_inputs());
  std::size_t next_parameter = 0;
  for (std::size_t i = 0; i < program.num_inputs(); ++i) {
    if (const Tensor* bound = source.bindings.bound_tensor(i)) {
      SymbolicShape shape = symbolic_shape(bound->shape());
      auto captured = impl_->add_input(bound->dtype(), shape, program.input_name(i), bound);
      if (!captured.ok()) {
        impl_->rollback(saved);
        return captured.status();
      }
      inputs[i] = *captured;
    } else {
      inputs[i] = parameter_indices[next_parameter++];
    }
  }
  auto result = impl_->import(program, inputs, nullptr);
  if (!result.ok()) impl_->rollback(saved);
  return result;
}

}  // namespace tenferro::program
