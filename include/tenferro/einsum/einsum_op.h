// EinsumOp: the einsum extension operation (family "tenferro.einsum") as it
// appears in a SemanticProgram and in eager calls. Its payload is the parsed
// subscripts plus the operation-local planning policy; the contraction
// path, intermediate layouts and workspace are not part of it (they belong
// to a prepared plan, which depends on the concrete shapes).
//
// Note [Einsum payload identity]
// Two EinsumOps are the same operation when their canonical subscripts
// (Subscripts::to_string, which also spells the nesting) and notation are
// equal and their policies are equal. A policy is either
// InheritRuntimeDefault (no policy: the engine's default policy and the
// runtime's planning configuration decide) or an explicit PlanningPolicy
// (planner, explicit path, TreeSA options, cost weights), which is semantic
// user intent and part of the identity. payload_hash() hashes exactly what
// payload_equal() compares.
//
// Note [Einsum metadata inference]
// infer_metadata implements Note [Binding rules] (network.h) on symbolic
// extents. The label structure (which axis carries which label, the
// ellipsis expansion, the output) depends only on ranks and comes from
// Network::bind on the ranks, so structural errors read exactly as the
// concrete binder's. Extents: occurrences of a label must agree; an exact
// extent of 1 broadcasts against anything, and an undecided pair of
// symbolic extents becomes a shape guard (symbolic extents never
// broadcast). When every operand is exact, a precompiled check runs without
// allocating, and any failure is re-derived by Network::bind so the error is
// the binder's. Only numeric dtypes are accepted (bool is kDTypeMismatch).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/program/extension_op.h"

namespace tenferro::einsum {

/// The extension family id of EinsumOp.
inline constexpr std::string_view kEinsumFamilyId = "tenferro.einsum";

/// The einsum extension op (Notes [Einsum payload identity], [Einsum
/// metadata inference]). Immutable and thread-safe.
class EinsumOp final : public program::ExtensionOp {
 public:
  /// Parses `subscripts` (Note [Einsum notation]). `policy` nullopt means
  /// InheritRuntimeDefault. kInvalidArgument for malformed subscripts or a
  /// policy that cannot fit them (an explicit path over another operand
  /// count, planner 'path' without a path, 'nested' without parentheses or
  /// parentheses with a planner other than 'nested'/'auto').
  static Result<std::shared_ptr<const EinsumOp>> create(std::string_view subscripts,
                                                        std::optional<PlanningPolicy> policy = std::nullopt);
  static Result<std::shared_ptr<const EinsumOp>> create(Subscripts subscripts,
                                                        std::optional<PlanningPolicy> policy = std::nullopt);

  const Subscripts& subscripts() const noexcept { return subscripts_; }
  /// The explicit policy, or nullopt for InheritRuntimeDefault.
  const std::optional<PlanningPolicy>& policy() const noexcept { return policy_; }
  /// The canonical subscripts (Subscripts::to_string()).
  const std::string& canonical_subscripts() const noexcept { return canonical_; }
  std::int32_t num_operands() const noexcept { return subscripts_.num_operands(); }

  /// Binds the subscripts to concrete shapes (Network::bind).
  Result<Network> bind(std::span<const IntArrayRef> shapes, DType dtype) const;
  /// The output shape for concrete operand shapes of one dtype, without
  /// allocating when the subscripts have no "..." and the shapes bind
  /// (otherwise through Network::bind). Errors as Network::bind.
  Status output_shape(std::span<const IntArrayRef> shapes, Dims& out) const;

  // --- program::ExtensionOp ---
  std::string_view family_id() const noexcept override { return kEinsumFamilyId; }
  std::uint64_t payload_hash() const noexcept override { return hash_; }
  bool payload_equal(const program::ExtensionOp& other) const noexcept override;
  Result<SmallVector<program::ValueMetadata, 2>> infer_metadata(std::span<const program::ValueMetadata> operands,
                                                                program::ShapeConstraints& constraints) const override;
  program::EffectSet effects() const override;
  SmallVector<program::AliasDecl, 2> aliases() const override;
  /// Core lowering (core_lowering.cpp): NeedsSpecialization(concrete dims)
  /// until every operand extent is exact, then the contraction tree as
  /// transpose / reshape / slice (diagonals) / reduce_sum / dot_general.
  Result<program::ExtensionLoweringOutcome> lower_to_core(program::ExtensionLoweringContext& context) const override;
  /// "einsum ij,jk->ik (policy: inherit)".
  std::string describe() const override;
  /// A new label, first in every batched operand and in the output
  /// (Note [Batching transform]); the nesting of parenthesised subscripts
  /// is dropped, and with it a nested planner's policy.
  std::shared_ptr<const program::ExtensionOp> batched(std::span<const program::ValueMetadata> operands,
                                                      std::span<const bool> batched) const override;

 private:
  EinsumOp(Subscripts subscripts, std::optional<PlanningPolicy> policy);

  // Per-axis label ids of a "..."-free einsum, for the allocation-free
  // output-shape check (Note [Einsum metadata inference]).
  struct FlatStructure {
    SmallVector<std::int32_t, 8> operand_rank;
    SmallVector<std::int32_t, 16> axis_label;  // all operands' axes, concatenated
    SmallVector<std::int32_t, 8> output_label;
    std::int32_t num_labels = 0;
  };

  // The extent of every label when the precompiled check decides (all
  // occurrences equal, ranks as written); false otherwise.
  template <class Rank, class Extent>
  bool flat_extents(std::size_t num_operands, Rank rank, Extent extent_of, SmallVector<std::int64_t, 16>& extent) const;

  Subscripts subscripts_;
  std::optional<PlanningPolicy> policy_;
  std::string canonical_;
  std::uint64_t hash_ = 0;
  std::optional<FlatStructure> flat_;
};

/// Hash of a planning policy (consistent with operator==).
std::uint64_t hash_policy(const PlanningPolicy& policy) noexcept;
/// "inherit" or e.g. "greedy", "path ((0,1),2)", "treesa(chains 4, ...)".
std::string describe_policy(const std::optional<PlanningPolicy>& policy);

}  // namespace tenferro::einsum
