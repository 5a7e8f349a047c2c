// ProgramBuilder: the validation-preserving builder of semantic programs.
// Front ends (trace contexts, eager promotion, AD, lowerings, transforms)
// all build programs through it.
//
// Note [Builder atomicity]
// Every mutating call either succeeds or leaves the builder exactly as it
// was: an operation whose inference fails adds nothing (not even guards), a
// failed import rolls back every operation, guard and binding it added, and
// freeze() is const (a failed freeze changes nothing; a successful one
// leaves the builder usable, so more values can be added and frozen again).
//
// Note [Builder tokens]
// Values are ProgramValue tokens tagged with the builder's process-unique
// id; any other builder rejects them with kForeignValue. Moving a builder
// keeps its id, so tokens follow it; a moved-from builder rejects every call
// with kFailedPrecondition.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

#include "tenferro/base/sha256.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/collective_op.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/program_value.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::program {

class ExtensionOp;
namespace internal {
struct BuilderAccess;
}  // namespace internal

/// Options of ProgramBuilder::freeze.
struct FreezeOptions {
  // --- testing only ---
  /// Replaces SHA-256 of the canonical form when set, so tests can force
  /// fingerprint collisions. Never set it outside tests.
  std::function<Digest256(std::span<const std::byte> canonical_form)> fingerprint_function;
};

/// A frozen program and its bindings (what a compiler returns).
struct FrozenProgram {
  std::shared_ptr<const SemanticProgram> program;
  ProgramBindings bindings;
};

/// Builds one program (Notes [Builder atomicity], [Builder tokens]).
/// Move-only; thread-compatible (one thread at a time).
class ProgramBuilder {
 public:
  explicit ProgramBuilder(ConstantPolicy constant_policy = {});
  ~ProgramBuilder();
  ProgramBuilder(ProgramBuilder&& other) noexcept;
  ProgramBuilder& operator=(ProgramBuilder&& other) noexcept;
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  // --- inputs and constants ---
  /// Appends a program input. Each extent is exact (>= 0), a placeholder
  /// (SymbolicExtent::bounded / ::unknown: a fresh symbol) or a symbol this
  /// builder already introduced (declaring equal extents). `name` is
  /// diagnostic only.
  Result<ProgramValue> add_input(DType dtype, std::span<const SymbolicExtent> shape, std::string_view name = {});
  Result<ProgramValue> add_input(DType dtype, std::initializer_list<SymbolicExtent> shape, std::string_view name = {}) {
    return add_input(dtype, std::span<const SymbolicExtent>(shape.begin(), shape.size()), name);
  }
  /// Appends an input bound to `tensor` (exact metadata), recorded in the
  /// frozen ProgramBindings; the tensor is retained, never copied.
  Result<ProgramValue> capture(const Tensor& tensor, std::string_view name = {});
  /// An inline constant. kInvalidArgument when the literal is larger than
  /// the builder's ConstantPolicy (capture it instead).
  Result<ProgramValue> constant(const Literal& literal);
  /// Explicitly inlines the data of `tensor` as a constant, allowed up to
  /// `policy.max_inline_bytes` (Note [Constants and bindings]).
  Result<ProgramValue> constantize(const Tensor& tensor, const ConstantPolicy& policy);

  // --- operations ---
  /// Emits core op `op`; runs infer_core_metadata (errors name the node).
  Result<ProgramValue> emit(CoreSemanticOp op, std::span<const ProgramValue> operands,
                            CoreAttributes attributes = NoAttributes{});
  Result<ProgramValue> emit(CoreSemanticOp op, std::initializer_list<ProgramValue> operands,
                            CoreAttributes attributes = NoAttributes{}) {
    return emit(op, std::span<const ProgramValue>(operands.begin(), operands.size()), std::move(attributes));
  }
  /// Emits an extension op: runs its infer_metadata, validates its declared
  /// effects and aliases, and returns one token per result. The builder
  /// retains `op`.
  Result<SmallVector<ProgramValue, 2>> emit_extension(std::shared_ptr<const ExtensionOp> op,
                                                      std::span<const ProgramValue> operands);
  Result<SmallVector<ProgramValue, 2>> emit_extension(std::shared_ptr<const ExtensionOp> op,
                                                      std::initializer_list<ProgramValue> operands) {
    return emit_extension(std::move(op), std::span<const ProgramValue>(operands.begin(), operands.size()));
  }

  /// Emits a collective (Note [Collective operations] in collective_op.h):
  /// one operand, one fresh result, a read-write effect on the spec's
  /// communicator, ordered after every earlier operation on it. Errors as
  /// CollectiveOp::create and its infer_metadata.
  Result<ProgramValue> emit_collective(const CollectiveSpec& spec, ProgramValue operand);

  // --- scopes applied to the operations emitted next ---
  /// Provenance of the next operations; null restores the builder's default
  /// ("unattributed") record.
  void set_provenance(ProvenanceRef provenance);
  ProvenanceRef provenance() const;
  void set_placement(PlacementConstraint placement);
  PlacementConstraint placement() const noexcept;

  // --- queries ---
  /// A copy of the metadata of `value` (kForeignValue for another builder's token).
  Result<ValueMetadata> metadata(ProgramValue value) const;
  /// True when `value` is a valid token of this builder.
  bool owns(ProgramValue value) const noexcept;
  std::size_t num_inputs() const noexcept;
  std::size_t num_values() const noexcept;
  std::size_t num_operations() const noexcept;
  std::size_t num_guards() const noexcept;

  // --- import (failure-atomic) ---
  /// Emits every operation of `source` with its inputs mapped to `inputs`
  /// (same dtypes and ranks; extents may be more specific, more general
  /// ones add guards); returns tokens for its outputs in order. Provenance
  /// and placement of the imported operations are kept.
  Result<SmallVector<ProgramValue, 4>> import_program(const SemanticProgram& source,
                                                      std::span<const ProgramValue> inputs);
  /// The same for a frozen program with bindings: `parameters` map its
  /// parameter inputs, its bound inputs are captured here again.
  Result<SmallVector<ProgramValue, 4>> import_program(const FrozenProgram& source,
                                                      std::span<const ProgramValue> parameters);
  /// Imports only what `roots` need (plus every effectful operation) and
  /// returns a token per root, in order (empty roots: empty result).
  Result<SmallVector<ProgramValue, 4>> import_values(const SemanticProgram& source,
                                                     std::span<const ProgramValue> inputs,
                                                     std::span<const ValueId> roots);

  // --- freeze ---
  /// Freezes the values reachable from `outputs` (in order; duplicates and
  /// an empty list are fine) plus every effectful operation into a
  /// canonical SemanticProgram (Note [Canonical form and fingerprint]).
  /// Const: the builder is unchanged either way.
  Result<FrozenProgram> freeze(std::span<const ProgramValue> outputs, const FreezeOptions& options = {}) const;
  Result<FrozenProgram> freeze(std::initializer_list<ProgramValue> outputs, const FreezeOptions& options = {}) const {
    return freeze(std::span<const ProgramValue>(outputs.begin(), outputs.size()), options);
  }

  struct Impl;  // defined in src/program; not part of the API

 private:
  friend struct internal::BuilderAccess;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenferro::program
