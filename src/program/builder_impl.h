// The state behind a ProgramBuilder, shared by the builder, freeze, import,
// lowering and transform code. Private to the program component.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

/// A guard origin that is not an operation (import preconditions).
inline constexpr std::uint32_t kNoOperation = std::numeric_limits<std::uint32_t>::max();

struct ProgramBuilder::Impl {
  // Per-resource effect chain (Note [Effects and ordering]).
  struct ChainState {
    std::optional<std::uint32_t> last_writer;
    SmallVector<std::uint32_t, 2> readers_since_write;
  };
  // Sizes of every append-only table, plus a copy of the effect chains.
  struct Checkpoint {
    std::size_t values, operations, inputs, symbols, guards;
    std::map<ResourceId, ChainState> chains;
  };

  std::uint64_t id = 0;
  ConstantPolicy constant_policy;

  std::vector<internal::ValueRecord> values;
  std::vector<std::uint64_t> value_hashes;  // structural (Merkle) hash per value
  std::vector<internal::OperationRecord> operations;
  std::vector<std::uint64_t> operation_hashes;

  std::vector<std::uint32_t> inputs;  // value index of each input, in order
  std::vector<std::string> input_names;
  std::vector<Tensor> input_bindings;  // undefined: a parameter
  std::vector<SymbolInfo> symbols;

  std::vector<ShapeGuard> guards;
  std::vector<std::uint32_t> guard_origins;  // operation index or kNoOperation

  std::map<ResourceId, ChainState> chains;

  ProvenanceRef default_provenance;
  ProvenanceRef provenance;  // current scope (never null)
  PlacementConstraint placement;
  // Transform builders: emitting needs an explicit provenance scope, and
  // inputs are fixed.
  bool require_explicit_provenance = false;
  bool inputs_fixed = false;

  Checkpoint checkpoint() const;
  void rollback(const Checkpoint& checkpoint);

  Result<std::uint32_t> index_of(ProgramValue value) const;
  ProgramValue token(std::uint32_t index) const;
  std::string node_label(std::string_view name) const;

  /// Appends an input (validated schema).
  Result<std::uint32_t> add_input(DType dtype, std::span<const SymbolicExtent> shape, std::string_view name,
                                  const Tensor* binding);
  /// Infers, validates and appends one core op; returns its result index.
  Result<std::uint32_t> emit_core(CoreSemanticOp op, std::span<const std::uint32_t> operands, CoreAttributes attributes,
                                  const ProvenanceRef& provenance, const PlacementConstraint& placement);
  /// Resolves tokens, checks the provenance scope and emits one core op in
  /// the current scopes (no constant-policy check).
  Result<ProgramValue> emit_in_scope(CoreSemanticOp op, std::span<const ProgramValue> operands,
                                     CoreAttributes attributes);
  /// Infers, validates and appends one extension op; returns its first result index.
  Result<std::uint32_t> emit_extension(std::shared_ptr<const ExtensionOp> op, std::span<const std::uint32_t> operands,
                                       const ProvenanceRef& provenance, const PlacementConstraint& placement);
  /// Imports `source` (Note [Builder atomicity]); `roots` null = all outputs.
  Result<SmallVector<ProgramValue, 4>> import(const SemanticProgram& source, std::span<const std::uint32_t> inputs,
                                              const std::vector<ValueId>* roots);

 private:
  void append_operation(internal::OperationRecord record, std::span<const ValueMetadata> results,
                        std::vector<ShapeGuard> new_guards);
};

namespace internal {

/// Access to builder internals for freeze, lowering and transforms.
struct BuilderAccess {
  static ProgramBuilder::Impl* impl(const ProgramBuilder& builder) noexcept { return builder.impl_.get(); }
  static ExtensionLoweringContext lowering_context(ProgramBuilder* builder, SmallVector<ProgramValue, 4> operands,
                                                   SmallVector<ValueMetadata, 4> metadata,
                                                   SpecializationRequirements granted) {
    return ExtensionLoweringContext(builder, std::move(operands), std::move(metadata), granted);
  }
};

/// Everything a SemanticProgram holds; freeze fills it in canonical order.
struct ProgramParts {
  std::size_t num_inputs = 0;
  std::vector<std::string> input_names;
  std::vector<ValueRecord> values;
  std::vector<OperationRecord> operations;
  std::vector<ValueId> outputs;
  std::vector<SymbolInfo> symbols;
  std::vector<ShapeGuard> guards;
  EffectSet effects;

  /// Encodes the canonical form and builds the program.
  static std::shared_ptr<const SemanticProgram> build(ProgramParts parts, const FreezeOptions& options);
};

/// The canonical byte encoding of a program's semantic content (Note
/// [Canonical form and fingerprint]); defined in canonical_form.cpp.
std::vector<std::byte> encode_canonical_form(const ProgramParts& parts);

/// The node label used in compile errors: "name %index [provenance]".
std::string node_label(std::string_view name, std::size_t value_index, const ProvenanceRef& provenance);

/// Calls extension or transform code; an exception it throws becomes an
/// error of `stage` (errors.md: third-party code is caught at boundaries).
template <class F>
auto call_extension(ErrorStage stage, std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return status_from_current_exception(stage, what);
  }
}

}  // namespace internal
}  // namespace tenferro::program
