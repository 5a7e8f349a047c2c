// The runtime operation-family traits engines implement (docs/engines.md):
// ElementwiseRuntime, ReductionRuntime, IndexingRuntime,
// DotGeneralRuntime, LayoutRuntime and SubgraphCompiler, with the borrowed
// signatures they see at prepare time and the borrowed requests they run.
//
// Note [Provider contract]
//  - prepare() sees value-free metadata (OperationSignature) once per
//    prepared node. It answers Prepared (with an optional ProviderPlan, the
//    scratch it needs, the node resources to lease and whether its algorithm
//    is reproducible), NeedsSpecialization (a strictly wider projection of
//    the signature; Note [Specialization widening] in program/specialization.h)
//    or Unsupported (with a reason; the only answer that lets resolution try
//    the next candidate). Any error stops resolution.
//  - run() receives a validated OperationRequest: inputs are borrowed strided
//    views (strides >= 0, possibly 0 for broadcast), the output is a
//    runtime-allocated row-major dense view of the inferred shape and dtype.
//    It must not allocate per call in steady state, must not create threads
//    (the engine context carries the executor) and must not fall back to
//    another implementation on failure. Exceptions are caught at the call
//    boundary and become errors, but providers should return errors.
//  - Prepared runs pass the plan from prepare() and `scratch` of the
//    requested size. Eager fast-path calls pass plan == nullptr and no
//    scratch: a provider that needs workspace then takes it from its engine
//    context (e.g. the CPU domain's scratch pool) or a bounded cache it owns.
//  - The context is the engine's typed context, recovered with one check:
//    `auto* cpu = context.get<CpuExecutionContext>()`.
//
// Note [Family membership]
//  - Elementwise: unary and binary elementwise ops, compare, select,
//    convert, and the nullary constant and iota (fills).
//  - Reduction: reduce_sum/prod/max/min, argmax, argmin.
//  - Indexing: reverse, concatenate, pad, dynamic_slice,
//    dynamic_update_slice, gather, scatter.
//  - DotGeneral: dot_general.
//  - Views (broadcast_in_dim, reshape, transpose, slice) never reach a
//    provider; LayoutRuntime copies when a view cannot be expressed and
//    serves explicit copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/specialization.h"
#include "tenferro/runtime/admission.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

/// The operation family of a core op (Note [Family membership]).
OpFamily core_op_family(program::CoreSemanticOp op) noexcept;

/// Memory layout class of an operand, as far as the runtime knows it.
enum class LayoutClass : std::uint8_t {
  kRowMajor,  ///< row-major dense
  kDense,     ///< non-overlapping and dense in some axis order
  kStrided,   ///< anything else (including broadcast strides)
};
std::string_view to_string(LayoutClass layout) noexcept;

/// What a provider may know about one operand or result at prepare time.
/// Fields outside the granted specialization are hidden: `shape` is empty
/// (only `rank` is known) without kConcreteDims, `layout` is kStrided without
/// kLayoutClass. Borrowed.
struct OperandSignature {
  DType dtype = DType::kFloat64;
  std::int64_t rank = 0;
  std::span<const std::int64_t> shape;
  LayoutClass layout = LayoutClass::kStrided;
};

/// Value-free description of one operation for prepare(). Borrowed.
struct OperationSignature {
  program::CoreSemanticOp op = program::CoreSemanticOp::kAdd;
  const program::CoreAttributes* attributes = nullptr;
  std::span<const OperandSignature> operands;
  OperandSignature result;
  /// What the runtime granted so far (Note [Specialization widening]).
  program::SpecializationRequirements granted;
  Determinism determinism = Determinism::kFast;
  ResolvedPlacement placement;
};

/// Provider-owned prepared state (a GEMM blocking, a TTGT plan, ...),
/// immutable after prepare and shared by every run of the prepared node.
class ProviderPlan {
 public:
  virtual ~ProviderPlan() = default;
};

/// A successful preparation.
struct PreparedKernel {
  std::shared_ptr<const ProviderPlan> plan;
  /// The algorithm gives bitwise-identical results for identical inputs on
  /// the same hardware class (required under Determinism::kReproducible).
  bool reproducible = false;
  /// The output may be written into the buffer of operand 0 when that value
  /// dies at this node (same dtype and shape, row-major dense). The kernel
  /// must then accept an output identical to operand 0, also when operand 0
  /// appears again as another operand; the runtime never writes in place
  /// when another operand reads operand 0's memory through a view.
  bool in_place_ok = false;
  /// Workspace bytes the runtime passes as `scratch` to every run.
  std::size_t scratch_bytes = 0;
  /// Resources the node leases while it runs (canonical order).
  SmallVector<ResourceAmount, 2> resources;
  /// Estimated floating-point operations of one run (a contraction's
  /// multiply-adds times two, ...); 0 when unknown (the runtime then
  /// estimates a core dot_general itself). Only nodes with an estimate join
  /// a concurrent group (Note [Concurrent groups] in
  /// src/runtime/concurrent_groups.cpp).
  double work = 0.0;
};

/// A provider's answer to prepare().
class PrepareCapability {
 public:
  enum class Kind : std::uint8_t { kPrepared, kNeedsSpecialization, kUnsupported };

  static PrepareCapability prepared(PreparedKernel kernel = {}) {
    PrepareCapability c(Kind::kPrepared);
    c.kernel_ = std::move(kernel);
    return c;
  }
  static PrepareCapability needs_specialization(program::SpecializationRequirements requirements) {
    PrepareCapability c(Kind::kNeedsSpecialization);
    c.requirements_ = requirements;
    return c;
  }
  static PrepareCapability unsupported(std::string reason) {
    PrepareCapability c(Kind::kUnsupported);
    c.reason_ = std::move(reason);
    return c;
  }

  Kind kind() const noexcept { return kind_; }
  const PreparedKernel& kernel() const noexcept { return kernel_; }
  PreparedKernel& kernel() noexcept { return kernel_; }
  program::SpecializationRequirements requirements() const noexcept { return requirements_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  explicit PrepareCapability(Kind kind) : kind_(kind) {}
  Kind kind_;
  PreparedKernel kernel_;
  program::SpecializationRequirements requirements_;
  std::string reason_;
};

/// One execution of one core operation. Borrowed; see Note [Provider contract].
struct OperationRequest {
  program::CoreSemanticOp op = program::CoreSemanticOp::kAdd;
  const program::CoreAttributes* attributes = nullptr;
  std::span<const TensorView> inputs;
  TensorView output;
  /// From prepare(); null on the eager fast path.
  const ProviderPlan* plan = nullptr;
  std::span<std::byte> scratch;

  /// The op's attribute struct (precondition: it is the op's type).
  template <class A>
  const A& attributes_as() const noexcept {
    return *std::get_if<A>(attributes);
  }
};

/// The common shape of every core family slot (Note [Provider contract]).
/// Implementations are thread-safe: prepared nodes and eager contexts call
/// run() concurrently.
class CoreFamilyRuntime {
 public:
  virtual ~CoreFamilyRuntime() = default;
  /// For explain(): "cpu.native_elementwise".
  virtual std::string_view name() const noexcept = 0;
  /// True when every algorithm of this provider is reproducible (the eager
  /// fast path's check under Determinism::kReproducible).
  virtual bool reproducible() const noexcept { return false; }
  /// The execution context run() recovers; checked against the engine
  /// executor's context type when the configuration is built. Invalid (the
  /// default): the provider accepts any context.
  virtual ExecutionContextTypeId context_type() const noexcept { return {}; }
  virtual Result<PrepareCapability> prepare(const OperationSignature& signature) const = 0;
  virtual Status run(const OperationRequest& request, ErasedExecutionContext context) const = 0;
};

/// Elementwise family (Note [Family membership]).
class ElementwiseRuntime : public CoreFamilyRuntime {};
/// Reductions and arg-reductions.
class ReductionRuntime : public CoreFamilyRuntime {};
/// Gather, scatter, dynamic slices, concatenate, pad, reverse.
class IndexingRuntime : public CoreFamilyRuntime {};
/// Semantic generalized contraction (an engine-owned composite).
class DotGeneralRuntime : public CoreFamilyRuntime {};

/// Materialization and copies: copy(src, dst) writes every element of the
/// strided `src` into `dst` (same shape and dtype; any strides).
class LayoutRuntime {
 public:
  virtual ~LayoutRuntime() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual bool reproducible() const noexcept { return true; }
  /// As CoreFamilyRuntime::context_type().
  virtual ExecutionContextTypeId context_type() const noexcept { return {}; }
  /// Unsupported for layouts/dtypes it cannot copy.
  virtual Result<PrepareCapability> prepare_copy(const OperandSignature& src, const OperandSignature& dst,
                                                 ResolvedPlacement placement) const = 0;
  virtual Status copy(const TensorView& src, const TensorView& dst, const ProviderPlan* plan,
                      ErasedExecutionContext context) const = 0;
};

/// Optional multi-node compilation (fusion) for one engine. Reserved: the
/// runtime does not yet form subgraph candidates, so registering one has no
/// effect on preparation (docs/runtime.md, "Known gaps").
class SubgraphCompiler {
 public:
  virtual ~SubgraphCompiler() = default;
  virtual std::string_view name() const noexcept = 0;
};

/// A request's output shape/dtype check used by providers in debug builds
/// and by tests: ok when `view` is row-major dense.
bool is_row_major_dense(const TensorView& view) noexcept;

}  // namespace tenferro::runtime
