// ExtensionOp: the carrier for operation families outside the closed core
// vocabulary (einsum, linalg, FFT, user ops), and its optional lowering to
// core operations.
//
// Note [Extension contract]
// An ExtensionOp is a pure, deterministic semantic object: a family id (a
// string used at registration and prepare, never on hot paths), a payload
// identity (payload_hash + payload_equal), metadata inference, declared
// effects and aliases (pure virtual: an extension must say it is pure), an
// optional lower_to_core and optional output pruning. Its interface
// receives only metadata and a lowering context; it never sees providers,
// runtime state or input values, and must not hold them in its payload
// identity.
//
// Note [Core lowering]
// lower_to_core emits into a fresh builder whose inputs stand for the
// operands (non-exact operand extents are abstracted into the fragment's
// own symbols). The result is validated (validate_lowering): only core ops,
// the same result arity and metadata, the same (empty) effects, alias
// declarations no weaker than declared, provenance derived from the
// extension node. NeedsSpecialization must strictly widen the granted
// requirements (Note [Specialization widening]).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/program_value.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/program/shape_guard.h"
#include "tenferro/program/specialization.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::program {

class ExtensionLoweringContext;
class ProgramBuilder;
namespace internal {
struct BuilderAccess;
}  // namespace internal

/// What lower_to_core answered.
class ExtensionLoweringOutcome {
 public:
  enum class Kind : std::uint8_t { kLowered, kNeedsSpecialization, kUnsupported };

  /// The lowering emitted these values (tokens of the context's builder),
  /// one per extension result, in order.
  static ExtensionLoweringOutcome lowered(SmallVector<ProgramValue, 2> results);
  /// The lowering needs more of the concrete signature fixed.
  static ExtensionLoweringOutcome needs_specialization(SpecializationRequirements requirements);
  /// No core lowering for this payload; `reason` goes to explain output.
  static ExtensionLoweringOutcome unsupported(std::string reason);

  Kind kind() const noexcept { return kind_; }
  std::span<const ProgramValue> results() const noexcept { return results_; }
  SpecializationRequirements requirements() const noexcept { return requirements_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  Kind kind_ = Kind::kUnsupported;
  SmallVector<ProgramValue, 2> results_;
  SpecializationRequirements requirements_;
  std::string reason_;
};

/// The semantic interface of an extension operation (Note [Extension
/// contract]). Implementations must be immutable and thread-safe.
class ExtensionOp {
 public:
  virtual ~ExtensionOp() = default;

  /// Stable family id, e.g. "tenferro.einsum".
  virtual std::string_view family_id() const noexcept = 0;
  /// Hash of the semantic payload: equal payloads hash equal.
  virtual std::uint64_t payload_hash() const noexcept = 0;
  /// Payload equality; `other` has the same family_id().
  virtual bool payload_equal(const ExtensionOp& other) const noexcept = 0;
  /// Result metadata for `operands`; undecided shape requirements go to
  /// `constraints`. Result extents must be expressions of operand extents.
  /// Errors must be compile-stage (use constraints.error()).
  virtual Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                               ShapeConstraints& constraints) const = 0;
  /// The effects of the operation; empty for a pure one. No default.
  virtual EffectSet effects() const = 0;
  /// One alias declaration per result. No default.
  virtual SmallVector<AliasDecl, 2> aliases() const = 0;

  /// Optional equivalent core-op graph (Note [Core lowering]); the default
  /// answers Unsupported.
  virtual Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& context) const;
  /// Optional: an op computing only the results with live[i] set, in order,
  /// or nullptr when the op cannot be pruned (the default).
  virtual std::shared_ptr<const ExtensionOp> prune_outputs(std::span<const bool> live) const;
  /// Optional: the op over a batch (Note [Batching transform] in
  /// compiler/batching.h): operands whose `batched` flag is set carry one
  /// more leading axis than `operands` (their unbatched metadata) say, and
  /// every result of the returned op carries that leading axis too. nullptr
  /// when the op has no such form (the default); the transform then asks
  /// again with every operand batched before it gives up.
  virtual std::shared_ptr<const ExtensionOp> batched(std::span<const ValueMetadata> operands,
                                                     std::span<const bool> batched) const;
  /// The payload in readable form for explain(); defaults to family_id().
  virtual std::string describe() const;
};

/// What lower_to_core receives: the operands as tokens of a fresh builder,
/// their metadata, and the granted specialization. Not thread-safe.
class ExtensionLoweringContext {
 public:
  std::size_t num_operands() const noexcept { return operands_.size(); }
  ProgramValue operand(std::size_t i) const noexcept { return operands_[i]; }
  /// Operand metadata in the fragment's symbols; exact when the runtime
  /// granted kConcreteDims for a concrete signature.
  const ValueMetadata& operand_metadata(std::size_t i) const noexcept { return operand_metadata_[i]; }
  const SpecializationRequirements& granted() const noexcept { return granted_; }
  /// The builder to emit core ops into. Its provenance scope is the
  /// extension node's; lowerings must not replace it.
  ProgramBuilder& builder() noexcept { return *builder_; }

 private:
  friend struct internal::BuilderAccess;
  ExtensionLoweringContext(ProgramBuilder* builder, SmallVector<ProgramValue, 4> operands,
                           SmallVector<ValueMetadata, 4> metadata, SpecializationRequirements granted)
      : builder_(builder), operands_(std::move(operands)), operand_metadata_(std::move(metadata)), granted_(granted) {}
  ProgramBuilder* builder_;
  SmallVector<ProgramValue, 4> operands_;
  SmallVector<ValueMetadata, 4> operand_metadata_;
  SpecializationRequirements granted_;
};

/// A validated core lowering.
struct CoreLowering {
  ExtensionLoweringOutcome::Kind kind = ExtensionLoweringOutcome::Kind::kUnsupported;
  /// kLowered: a program whose inputs are the operands and whose outputs are
  /// the results; its symbols are the fragment's (Note [Core lowering]).
  std::shared_ptr<const SemanticProgram> fragment;
  /// kLowered: fragment symbol i stands for this extent of the caller's
  /// operand metadata (substitute() maps fragment extents back).
  SmallVector<SymbolicExtent, 4> symbol_meaning;
  /// kNeedsSpecialization: the strictly wider requirements.
  SpecializationRequirements requirements;
  /// kUnsupported: why.
  std::string unsupported_reason;
};

/// Runs op.lower_to_core for `operands` with `granted` and validates the
/// answer. Errors: kContractViolation (stage kPrepare) when the lowering
/// breaks Note [Core lowering]; kProviderContractError when
/// NeedsSpecialization does not strictly widen `granted`; errors returned
/// by the lowering itself. `origin` is the extension node's provenance.
/// Pure; thread-safe.
Result<CoreLowering> lower_extension_to_core(const ExtensionOp& op, std::span<const ValueMetadata> operands,
                                             SpecializationRequirements granted, const ProvenanceRef& origin);
/// The same for extension operation `op` of `program`. With `symbols`
/// (values from check_guards) the operands are given exact metadata.
Result<CoreLowering> lower_extension_to_core(const SemanticProgram& program, OperationId op,
                                             SpecializationRequirements granted,
                                             std::span<const std::int64_t> symbols = {});

}  // namespace tenferro::program
