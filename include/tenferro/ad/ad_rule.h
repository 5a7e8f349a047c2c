// The rule-authoring interface of the AD transforms: AdValue tokens, the
// validating AdBuilder that rules emit through, the contexts a linearize,
// transpose or direct-VJP rule receives, and ExtensionAdRule, the interface
// an extension family implements and installs in an AdContext (docs/ad.md,
// "Extension rules").
//
// Note [Writing an extension AD rule]
// A rule sees immutable semantic values, never program internals, builders
// of the output programs or runtime objects. Everything it computes goes
// through AdBuilder, which infers metadata, checks dtypes and shapes, stamps
// provenance derived from the differentiated node and records whether each
// value is *primal* (a function of primal values only) or *linear* (linear
// in the tangents):
//  - linearize(ctx): for an extension node y = f(x) with tangents dx
//    (ctx.tangent(i), nullopt = absent/zero), return one tangent per result
//    (nullopt = zero). Compute coefficients with primal values only
//    (ctx.primal_operand(i), ctx.primal_result(j)), then combine them with
//    tangents: an operation with a linear operand yields a linear value.
//    Core ops accept linear operands only where they are linear (neg, add,
//    sub, mul/dot_general with exactly one linear side, div by a primal,
//    conj/real/imag/complex/convert, views, reductions by sum, select and
//    the indexing ops in their data operands); anything else is a
//    kContractViolation naming the rule. An extension op with a linear
//    operand needs a rule installed for its family: its transpose rule is
//    what reverse mode calls for that linear node. Use builder().zeros()
//    for an explicit zero tangent where an op needs every operand.
//  - transpose(ctx): for a linear node emitted by a linearize rule (an
//    extension op whose ctx.is_linear_operand(i) operands are tangents),
//    given the result cotangents (nullopt = zero), return one cotangent per
//    operand (nullopt for non-linear operands or a zero cotangent). The
//    transpose is the adjoint for the real inner product <u, v> = Re sum
//    conj(u) v (Note [Complex convention] in ad_context.h): multiply by
//    conj() of a complex coefficient.
//  - direct_vjp(ctx) (optional, only where measured faster than
//    linearize + transpose): the cotangents of the operands with
//    ctx.needs_cotangent(i) straight from the primal values and the result
//    cotangents. Reverse mode then treats the node's Jacobian as one opaque
//    linear map; forward mode still uses linearize.
//  - expansion(op, operands) (optional): a program of simpler
//    operations (inputs: the node's operands, outputs: its results) that
//    *replaces* the node in every program a transform builds, the primal
//    pass included, when differentiating the pieces is cheaper than
//    differentiating the node (Note [Pairwise einsums for reverse mode]:
//    an einsum of N operands becomes its planned two-operand steps). Each
//    operation of the expansion is then differentiated on its own, by its
//    rule; an expansion may not expand again more than a few levels deep.
//    Asked once per differentiated node (one with a tangent) and transform;
//    null (the default) keeps the node.
// Returned values must be tokens of the rule's builder with the operand's
// or result's exact dtype and (provably equal) shape; anything else is a
// kContractViolation (stage kCompile) naming the rule and the node. Rules
// must be pure and thread-safe; an exception they throw becomes an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/symbolic_extent.h"
#include "tenferro/tensor/scalar.h"

namespace tenferro::ad {

namespace internal {
class AdGraph;
struct RuleTable;
struct AdBuilderAccess;
}  // namespace internal

/// A value inside one AD transform, handed to and returned by rules. Only
/// the transform that issued it accepts it (others answer kForeignValue).
/// A default-constructed token is invalid. Trivially copyable.
class AdValue {
 public:
  constexpr AdValue() noexcept = default;
  constexpr bool valid() const noexcept { return graph_ != nullptr; }
  friend constexpr bool operator==(AdValue, AdValue) noexcept = default;

 private:
  friend class internal::AdGraph;
  constexpr AdValue(const internal::AdGraph* graph, std::uint32_t index) noexcept : graph_(graph), index_(index) {}
  const internal::AdGraph* graph_ = nullptr;
  std::uint32_t index_ = 0;
};

/// One (co)tangent per result or operand; nullopt means "absent": a
/// structural zero, or a value that is not differentiable.
using TangentList = SmallVector<std::optional<AdValue>, 2>;
using CotangentList = SmallVector<std::optional<AdValue>, 4>;

/// The validating builder rules emit through (Note [Writing an extension
/// AD rule]). Borrowed by a rule for the duration of one call; not
/// thread-safe.
class AdBuilder {
 public:
  /// Emits core op `op` (metadata inference as ProgramBuilder::emit). The
  /// result is linear when an operand is linear (the op must be linear in
  /// exactly those operands), primal otherwise. In a transpose or
  /// direct-VJP rule no operand may be linear.
  Result<AdValue> emit(program::CoreSemanticOp op, std::span<const AdValue> operands,
                       program::CoreAttributes attributes = program::NoAttributes{});
  Result<AdValue> emit(program::CoreSemanticOp op, std::initializer_list<AdValue> operands,
                       program::CoreAttributes attributes = program::NoAttributes{}) {
    return emit(op, std::span<const AdValue>(operands.begin(), operands.size()), std::move(attributes));
  }
  /// Emits an extension op (its infer_metadata runs). With a linear
  /// operand, every result is linear and a rule for the op's family must be
  /// installed (its transpose rule transposes this node). Effectful
  /// extension ops cannot be emitted by rules (kContractViolation).
  Result<SmallVector<AdValue, 2>> emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                 std::span<const AdValue> operands);
  Result<SmallVector<AdValue, 2>> emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                 std::initializer_list<AdValue> operands) {
    return emit_extension(std::move(op), std::span<const AdValue>(operands.begin(), operands.size()));
  }

  /// A primal rank-0 constant `value` converted to `dtype`.
  Result<AdValue> scalar(const Scalar& value, DType dtype);
  /// A primal constant `value` of `like`'s dtype broadcast to `like`'s shape.
  Result<AdValue> full(const Scalar& value, const program::ValueMetadata& like);
  /// Zeros of `metadata`: a linear zero in a linearize rule (usable where a
  /// linear op needs every operand), a plain value elsewhere.
  Result<AdValue> zeros(const program::ValueMetadata& metadata);

  /// The metadata of `value` (a copy). Precondition: a token of this builder.
  program::ValueMetadata metadata(AdValue value) const;
  /// True for a value linear in the tangents. Precondition as metadata().
  bool is_linear(AdValue value) const;

 private:
  friend class internal::AdGraph;
  friend struct internal::AdBuilderAccess;
  AdBuilder() = default;
  internal::AdGraph* graph_ = nullptr;
};

/// What a linearize rule receives for one node (borrowed for the call).
class LinearizeContext {
 public:
  /// The extension payload being differentiated.
  const program::ExtensionOp& op() const noexcept { return *op_; }
  /// The same payload, shared (to emit it again, e.g. on a tangent).
  const std::shared_ptr<const program::ExtensionOp>& shared_op() const noexcept { return op_; }
  std::size_t num_operands() const noexcept { return operands_.size(); }
  std::size_t num_results() const noexcept { return results_.size(); }
  /// Operand i's primal value.
  AdValue primal_operand(std::size_t i) const noexcept { return operands_[i]; }
  /// Operand i's tangent; nullopt when absent (inactive or zero).
  std::optional<AdValue> tangent(std::size_t i) const noexcept { return tangents_[i]; }
  /// Result j's primal value (already computed by the primal program).
  AdValue primal_result(std::size_t j) const noexcept { return results_[j]; }
  AdBuilder& builder() noexcept { return *builder_; }

 private:
  friend struct internal::AdBuilderAccess;
  LinearizeContext() = default;
  std::shared_ptr<const program::ExtensionOp> op_;
  SmallVector<AdValue, 4> operands_;
  SmallVector<std::optional<AdValue>, 4> tangents_;
  SmallVector<AdValue, 2> results_;
  AdBuilder* builder_ = nullptr;
};

/// What a transpose rule receives for one linear extension node.
class TransposeContext {
 public:
  /// The linear node's payload (as emitted by the linearize rule).
  const program::ExtensionOp& op() const noexcept { return *op_; }
  const std::shared_ptr<const program::ExtensionOp>& shared_op() const noexcept { return op_; }
  std::size_t num_operands() const noexcept { return linear_.size(); }
  std::size_t num_results() const noexcept { return cotangents_.size(); }
  /// True when operand i is a tangent (the node is linear in it).
  bool is_linear_operand(std::size_t i) const noexcept { return linear_[i]; }
  /// Operand i's value. Precondition: !is_linear_operand(i) (a tangent has
  /// no value in reverse mode).
  AdValue primal_operand(std::size_t i) const noexcept { return operands_[i]; }
  /// Operand i's metadata (also for linear operands).
  const program::ValueMetadata& operand_metadata(std::size_t i) const noexcept { return operand_metadata_[i]; }
  /// Result j's cotangent; nullopt when zero.
  std::optional<AdValue> cotangent(std::size_t j) const noexcept { return cotangents_[j]; }
  const program::ValueMetadata& result_metadata(std::size_t j) const noexcept { return result_metadata_[j]; }
  AdBuilder& builder() noexcept { return *builder_; }

 private:
  friend struct internal::AdBuilderAccess;
  TransposeContext() = default;
  std::shared_ptr<const program::ExtensionOp> op_;
  SmallVector<AdValue, 4> operands_;
  SmallVector<bool, 4> linear_;
  SmallVector<program::ValueMetadata, 4> operand_metadata_;
  SmallVector<std::optional<AdValue>, 2> cotangents_;
  SmallVector<program::ValueMetadata, 2> result_metadata_;
  AdBuilder* builder_ = nullptr;
};

/// What a direct-VJP rule receives for one extension node.
class DirectVjpContext {
 public:
  const program::ExtensionOp& op() const noexcept { return *op_; }
  const std::shared_ptr<const program::ExtensionOp>& shared_op() const noexcept { return op_; }
  std::size_t num_operands() const noexcept { return operands_.size(); }
  std::size_t num_results() const noexcept { return results_.size(); }
  AdValue primal_operand(std::size_t i) const noexcept { return operands_[i]; }
  AdValue primal_result(std::size_t j) const noexcept { return results_[j]; }
  /// True when operand i's cotangent is wanted (the operand is active).
  bool needs_cotangent(std::size_t i) const noexcept { return needed_[i]; }
  std::optional<AdValue> cotangent(std::size_t j) const noexcept { return cotangents_[j]; }
  AdBuilder& builder() noexcept { return *builder_; }

 private:
  friend struct internal::AdBuilderAccess;
  DirectVjpContext() = default;
  std::shared_ptr<const program::ExtensionOp> op_;
  SmallVector<AdValue, 4> operands_;
  SmallVector<bool, 4> needed_;
  SmallVector<AdValue, 2> results_;
  SmallVector<std::optional<AdValue>, 2> cotangents_;
  AdBuilder* builder_ = nullptr;
};

/// The AD rules of one extension family, installed explicitly in an
/// AdContext (no global inventory). Implementations are immutable and
/// thread-safe; see Note [Writing an extension AD rule].
class ExtensionAdRule {
 public:
  virtual ~ExtensionAdRule() = default;
  /// The family whose ops this rule differentiates, e.g. "tenferro.einsum".
  virtual std::string_view family_id() const noexcept = 0;
  /// Forward rule: one tangent per result.
  virtual Result<TangentList> linearize(LinearizeContext& context) const = 0;
  /// Transpose of a linear node this family's linearize rule emitted: one
  /// cotangent per operand.
  virtual Result<CotangentList> transpose(TransposeContext& context) const = 0;
  /// True when direct_vjp() is implemented and should replace
  /// linearize + transpose in reverse mode.
  virtual bool has_direct_vjp() const noexcept { return false; }
  /// Direct reverse rule: one cotangent per operand. The default answers
  /// kUnimplemented.
  virtual Result<CotangentList> direct_vjp(DirectVjpContext& context) const;
  /// The program that stands for a node of `op` with operands of
  /// `operands` (metadata as in the source program, possibly symbolic), or
  /// null to differentiate the node itself (the default). The transform
  /// checks that its inputs and outputs match the node's operands and
  /// results (kContractViolation otherwise) and attributes its operations
  /// to the node (provenance derived from the node's).
  virtual Result<std::shared_ptr<const program::SemanticProgram>> expansion(
      const program::ExtensionOp& op, std::span<const program::ValueMetadata> operands) const;
};

}  // namespace tenferro::ad
