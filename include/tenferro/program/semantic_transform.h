// SemanticTransform: custom program-to-program rewrites with a read-only input
// and a validating builder output. There is no global pass registry: callers
// hold transforms and pass them explicitly; a transform's identity (name +
// options hash) enters compile-cache keys.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::program {

class SemanticTransform;

/// A transform's cache identity.
struct TransformIdentity {
  std::string name;
  std::uint64_t options_hash = 0;
  friend bool operator==(const TransformIdentity&, const TransformIdentity&) = default;
};

/// The output side of a transform: a ProgramBuilder whose inputs mirror the
/// input program's (same schemas and symbols) and which refuses to emit an
/// operation until derive_from() named the input operation it stems from,
/// so provenance is always preserved. Not thread-safe.
class TransformBuilder {
 public:
  /// The token standing for input i of the input program.
  ProgramValue input(std::size_t i) const noexcept { return inputs_[i]; }
  std::size_t num_inputs() const noexcept { return inputs_.size(); }
  /// Operations emitted next derive their provenance from `source` (an
  /// operation of the input program).
  void derive_from(const OperationView& source);
  /// Emits a copy of input-program operation `source` (payload,
  /// attributes, placement) on `operands`, deriving from it.
  Result<SmallVector<ProgramValue, 2>> copy_operation(const OperationView& source,
                                                      std::span<const ProgramValue> operands);
  /// The builder (emit, emit_extension, constant, ...). Inputs cannot be
  /// added; freeze is done by apply_transform.
  ProgramBuilder& builder() noexcept { return builder_; }

 private:
  friend Result<FrozenProgram> apply_transform(const SemanticTransform&, const FrozenProgram&, const FreezeOptions&);
  TransformBuilder(const SemanticProgram& input, std::string_view transform_name);

  ProgramBuilder builder_;
  SmallVector<ProgramValue, 4> inputs_;
  std::string label_;
  std::unordered_map<const ProvenanceRecord*, ProvenanceRef> derived_;
};

/// A program-to-program rewrite. Implementations are immutable and
/// thread-safe; they read only the input program (never runtime providers
/// or input values).
class SemanticTransform {
 public:
  virtual ~SemanticTransform() = default;
  /// A stable name, e.g. "fold_transposes".
  virtual std::string_view name() const noexcept = 0;
  /// Hash of the options that change the transform's output.
  virtual std::uint64_t options_hash() const noexcept = 0;
  /// Emits the transformed program into `output` and returns its outputs,
  /// one per output of `input`, in order.
  virtual Result<SmallVector<ProgramValue, 4>> run(const SemanticProgram& input, TransformBuilder& output) const = 0;

  TransformIdentity identity() const { return {std::string(name()), options_hash()}; }
};

/// Runs `transform` on `input`, freezes and validates the result
/// (validate_transform_output). Bindings carry over unchanged.
Result<FrozenProgram> apply_transform(const SemanticTransform& transform, const FrozenProgram& input,
                                      const FreezeOptions& options = {});

}  // namespace tenferro::program
