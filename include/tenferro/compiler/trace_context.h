// TraceContext: mutable graph construction for the graph path, and TracedGraph,
// the immutable result that GraphCompiler consumes.
//
// Note [Trace contexts and imports]
// A TraceContext records operations on TracedValues through one
// ProgramBuilder, so every call infers metadata and shape guards at once
// and a bad call is a compile-stage error naming the node, leaving the
// context unchanged. Values carry the id of their context; a value from
// another context is rejected with kForeignValue (stage kCompile) instead of
// merging graphs implicitly. To use another trace's results, finish it and
// import the TracedGraph explicitly (TraceContext::import).
//
// Note [Captures, constants and bindings]
// capture(tensor) makes a bound input: the tensor is retained in the
// TracedGraph's ProgramBindings, never copied into the program, so traces
// that differ only in captured data share compiled programs. Capturing the
// same tensor (same storage, offset, dtype, shape and strides) twice yields
// the same value. Only small literals are inline (TraceOptions'
// ConstantPolicy); constantize() inlines a tensor explicitly under the
// policy given there.
//
// Note [Provenance scopes]
// scope("attention") returns a guard that, while alive, labels every
// recorded operation with a provenance record "attention at file:line",
// derived from the enclosing scope's record, so explain() shows
// "attention at model.cpp:42 <- layer 3 at model.cpp:17 <- trace". Scopes
// (and placement scopes) must be closed in reverse order of opening.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/compiler/traced_value.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::compiler {

/// An immutable recorded graph: a frozen SemanticProgram (only what the
/// outputs need plus effectful operations, in canonical order, with its
/// fingerprint) and the bindings of its captured inputs. Copies share the
/// program and the bound tensors. Thread-safe to read.
class TracedGraph {
 public:
  TracedGraph() = default;
  /// A graph for a program built elsewhere (an AD or other transform's
  /// output, a ProgramBuilder), so it can be compiled; context_id() is 0.
  explicit TracedGraph(program::FrozenProgram frozen) : frozen_(std::move(frozen)) {}

  const std::shared_ptr<const program::SemanticProgram>& program() const noexcept { return frozen_.program; }
  const program::ProgramBindings& bindings() const noexcept { return frozen_.bindings; }
  const program::FrozenProgram& frozen() const noexcept { return frozen_; }
  /// The id of the TraceContext that recorded it (0 for an empty graph).
  std::uint64_t context_id() const noexcept { return context_id_; }

 private:
  friend class TraceContext;
  TracedGraph(program::FrozenProgram frozen, std::uint64_t context_id)
      : frozen_(std::move(frozen)), context_id_(context_id) {}

  program::FrozenProgram frozen_;
  std::uint64_t context_id_ = 0;
};

/// Options of a TraceContext.
struct TraceOptions {
  /// Largest literal constant() accepts inline.
  program::ConstantPolicy constant_policy;
  /// Label of the root provenance record ("trace" when empty).
  std::string name;
};

class TraceContext;

/// While alive, operations recorded by its context get its provenance
/// (Note [Provenance scopes]). Move-only; close in reverse order of opening,
/// and do not move the context while a scope is open (the scope refers to
/// it).
class [[nodiscard]] ProvenanceScope {
 public:
  ProvenanceScope(ProvenanceScope&& other) noexcept;
  ProvenanceScope& operator=(ProvenanceScope&&) = delete;
  ProvenanceScope(const ProvenanceScope&) = delete;
  ProvenanceScope& operator=(const ProvenanceScope&) = delete;
  ~ProvenanceScope();

 private:
  friend class TraceContext;
  ProvenanceScope(TraceContext* context, program::ProvenanceRef previous) noexcept
      : context_(context), previous_(std::move(previous)) {}
  TraceContext* context_;
  program::ProvenanceRef previous_;
};

/// While alive, operations recorded by its context get its placement
/// constraint. Move-only; close in reverse order of opening.
class [[nodiscard]] PlacementScope {
 public:
  PlacementScope(PlacementScope&& other) noexcept;
  PlacementScope& operator=(PlacementScope&&) = delete;
  PlacementScope(const PlacementScope&) = delete;
  PlacementScope& operator=(const PlacementScope&) = delete;
  ~PlacementScope();

 private:
  friend class TraceContext;
  PlacementScope(TraceContext* context, program::PlacementConstraint previous) noexcept
      : context_(context), previous_(previous) {}
  TraceContext* context_;
  program::PlacementConstraint previous_;
};

/// Records one graph (Notes [Trace contexts and imports], [Captures,
/// constants and bindings], [Provenance scopes]). Every call is
/// failure-atomic: on error nothing was recorded. Errors are compile-stage
/// and name the node. Move-only; thread-compatible (one thread at a time).
class TraceContext {
 public:
  explicit TraceContext(TraceOptions options = {});
  ~TraceContext();
  TraceContext(TraceContext&&) noexcept;
  TraceContext& operator=(TraceContext&&) noexcept;
  TraceContext(const TraceContext&) = delete;
  TraceContext& operator=(const TraceContext&) = delete;

  /// Process-unique id; TracedValues and TracedGraphs carry it.
  std::uint64_t id() const noexcept { return id_; }

  // --- inputs, captures, constants ---
  /// A parameter input. Extents as ProgramBuilder::add_input: exact,
  /// SymbolicExtent::bounded / ::unknown placeholders (fresh symbols), or
  /// extents of earlier inputs (declaring equality). `name` is diagnostic.
  Result<TracedValue> input(DType dtype, std::span<const program::SymbolicExtent> shape, std::string_view name = {});
  Result<TracedValue> input(DType dtype, std::initializer_list<program::SymbolicExtent> shape,
                            std::string_view name = {}) {
    return input(dtype, std::span<const program::SymbolicExtent>(shape.begin(), shape.size()), name);
  }
  /// A bound input holding `tensor` (retained, not copied); the same tensor
  /// twice gives the same value.
  Result<TracedValue> capture(const Tensor& tensor, std::string_view name = {});
  /// A small inline literal (at most TraceOptions::constant_policy).
  Result<TracedValue> constant(const program::Literal& literal);
  /// A rank-0 inline literal.
  Result<TracedValue> scalar(const Scalar& value) { return constant(program::Literal::scalar(value)); }
  /// Inlines `tensor`'s data explicitly, allowed up to `policy`.
  Result<TracedValue> constantize(const Tensor& tensor, const program::ConstantPolicy& policy);

  // --- generic emission ---
  /// Records core op `op`.
  Result<TracedValue> emit(program::CoreSemanticOp op, std::span<const TracedOperand> operands,
                           program::CoreAttributes attributes = program::NoAttributes{});
  Result<TracedValue> emit(program::CoreSemanticOp op, std::initializer_list<TracedOperand> operands,
                           program::CoreAttributes attributes = program::NoAttributes{}) {
    return emit(op, std::span<const TracedOperand>(operands.begin(), operands.size()), std::move(attributes));
  }
  /// Records extension op `op` (retained); one value per result.
  Result<SmallVector<TracedValue, 2>> emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                     std::span<const TracedOperand> operands);
  Result<SmallVector<TracedValue, 2>> emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                     std::initializer_list<TracedOperand> operands) {
    return emit_extension(std::move(op), std::span<const TracedOperand>(operands.begin(), operands.size()));
  }

  // --- core ops by name (semantics in docs/core_ops.md) ---
  Result<TracedValue> neg(TracedOperand x) { return emit(program::CoreSemanticOp::kNeg, {x}); }
  Result<TracedValue> exp(TracedOperand x) { return emit(program::CoreSemanticOp::kExp, {x}); }
  Result<TracedValue> log(TracedOperand x) { return emit(program::CoreSemanticOp::kLog, {x}); }
  Result<TracedValue> sqrt(TracedOperand x) { return emit(program::CoreSemanticOp::kSqrt, {x}); }
  Result<TracedValue> conj(TracedOperand x) { return emit(program::CoreSemanticOp::kConj, {x}); }
  Result<TracedValue> add(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kAdd, {a, b}); }
  Result<TracedValue> sub(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kSub, {a, b}); }
  Result<TracedValue> mul(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kMul, {a, b}); }
  Result<TracedValue> div(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kDiv, {a, b}); }
  Result<TracedValue> max(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kMax, {a, b}); }
  Result<TracedValue> min(TracedOperand a, TracedOperand b) { return emit(program::CoreSemanticOp::kMin, {a, b}); }
  Result<TracedValue> compare(TracedOperand a, TracedOperand b, program::ComparisonDirection direction) {
    return emit(program::CoreSemanticOp::kCompare, {a, b}, program::CompareAttributes{direction});
  }
  Result<TracedValue> select(TracedOperand pred, TracedOperand on_true, TracedOperand on_false) {
    return emit(program::CoreSemanticOp::kSelect, {pred, on_true, on_false});
  }
  Result<TracedValue> convert(TracedOperand x, DType dtype) {
    return emit(program::CoreSemanticOp::kConvert, {x}, program::ConvertAttributes{dtype});
  }
  Result<TracedValue> iota(DType dtype, program::SymbolicShape shape, std::int64_t axis) {
    return emit(program::CoreSemanticOp::kIota, {}, program::IotaAttributes{dtype, std::move(shape), axis});
  }
  Result<TracedValue> broadcast_in_dim(TracedOperand x, program::SymbolicShape shape, Dims dims) {
    return emit(program::CoreSemanticOp::kBroadcastInDim, {x},
                program::BroadcastInDimAttributes{std::move(shape), std::move(dims)});
  }
  Result<TracedValue> reshape(TracedOperand x, program::SymbolicShape shape) {
    return emit(program::CoreSemanticOp::kReshape, {x}, program::ReshapeAttributes{std::move(shape)});
  }
  /// Result axis i is operand axis perm[i].
  Result<TracedValue> transpose(TracedOperand x, Dims perm) {
    return emit(program::CoreSemanticOp::kTranspose, {x}, program::TransposeAttributes{std::move(perm)});
  }
  Result<TracedValue> slice(TracedOperand x, Dims start, Dims limit, Dims stride) {
    return emit(program::CoreSemanticOp::kSlice, {x},
                program::SliceAttributes{std::move(start), std::move(limit), std::move(stride)});
  }
  Result<TracedValue> reverse(TracedOperand x, Dims axes) {
    return emit(program::CoreSemanticOp::kReverse, {x}, program::ReverseAttributes{std::move(axes)});
  }
  Result<TracedValue> concatenate(std::span<const TracedOperand> xs, std::int64_t axis) {
    return emit(program::CoreSemanticOp::kConcatenate, xs, program::ConcatenateAttributes{axis});
  }
  Result<TracedValue> reduce_sum(TracedOperand x, Dims axes) {
    return emit(program::CoreSemanticOp::kReduceSum, {x}, program::ReduceAttributes{std::move(axes)});
  }
  Result<TracedValue> reduce_max(TracedOperand x, Dims axes) {
    return emit(program::CoreSemanticOp::kReduceMax, {x}, program::ReduceAttributes{std::move(axes)});
  }
  Result<TracedValue> dot_general(TracedOperand lhs, TracedOperand rhs, program::DotGeneralAttributes dimensions) {
    return emit(program::CoreSemanticOp::kDotGeneral, {lhs, rhs}, std::move(dimensions));
  }

  // --- scopes (Note [Provenance scopes]) ---
  /// Labels the operations recorded while the guard lives; `file` and
  /// `line` default to the caller's (std::source_location is not available
  /// with clang 14 and libstdc++ 12, these builtins are).
  ProvenanceScope scope(std::string_view label, const char* file = __builtin_FILE(), int line = __builtin_LINE());
  /// Constrains the placement of the operations recorded while the guard lives.
  PlacementScope placement(program::PlacementConstraint placement);

  // --- explicit import (Note [Trace contexts and imports]) ---
  /// Records `graph`'s operations on `parameters` (one per parameter input
  /// of the graph, same dtypes and ranks) and returns its outputs. Its bound
  /// inputs are captured here again; provenance is kept. Failure-atomic.
  Result<SmallVector<TracedValue, 4>> import(const TracedGraph& graph, std::span<const TracedOperand> parameters);
  Result<SmallVector<TracedValue, 4>> import(const TracedGraph& graph,
                                             std::initializer_list<TracedOperand> parameters) {
    return import(graph, std::span<const TracedOperand>(parameters.begin(), parameters.size()));
  }

  // --- finish ---
  /// The immutable graph computing `outputs` in order. Const: the context
  /// stays usable and may be finished again with other outputs. Errors:
  /// kForeignValue, kAliasConflict for an in-place result whose operand is
  /// shared (stage kCompile, naming the node).
  Result<TracedGraph> finish(std::span<const TracedOperand> outputs) const;
  Result<TracedGraph> finish(std::initializer_list<TracedOperand> outputs) const {
    return finish(std::span<const TracedOperand>(outputs.begin(), outputs.size()));
  }

  std::size_t num_operations() const noexcept { return builder_.num_operations(); }

 private:
  friend class ProvenanceScope;
  friend class PlacementScope;

  /// The program value of `operand` (its error, or kForeignValue).
  Result<program::ProgramValue> resolve(const TracedOperand& operand, std::size_t position,
                                        std::string_view what) const;
  Result<TracedValue> wrap(program::ProgramValue value) const;

  std::uint64_t id_ = 0;
  program::ProgramBuilder builder_;
  program::ProvenanceRef root_provenance_;
  struct Capture {
    Tensor tensor;
    program::ProgramValue value;
  };
  std::vector<Capture> captures_;
};

}  // namespace tenferro::compiler
