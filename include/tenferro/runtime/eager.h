// EagerContext: runtime.on(placement), the placement-bound eager API
// (docs/runtime.md, "Eager contexts").
//
// Note [Eager fast path]
// A context resolves its engine once and caches the engine's capability
// slots, executor and allocator together with the configuration epoch. Each
// call compares the cached epoch with the runtime's (one atomic load) and
// refreshes after a reconfiguration. An eligible call then
//   validates metadata -> allocates the output -> builds a borrowed
//   OperationRequest -> enters the engine executor -> calls the slot,
// building no SemanticProgram, fingerprint, schedule, buffer plan or
// admission request, and allocating nothing but the output. The provider's
// polymorphic capability for (op, dtype) is asked once (prepare() with no
// specialization granted) and remembered in the context.
// A call is promoted to a one-node prepared graph (runtime.run) when the
// engine lacks the slot, the provider answers Unsupported or
// NeedsSpecialization for the polymorphic signature, or an extension op has
// no native engine and lowers to two or more core ops. metrics() says which
// path ran. An extension call on a native engine remembers its last few
// (op, input dtypes, shapes, layout classes) with the result metadata and
// the engine's prepared kernel, so a repeated call skips metadata inference
// and the engine's prepare (Note [Extension call memo] in eager.cpp).
// Inputs from another storage domain are a kPlacementError: eager
// never transfers implicitly. CPU NUMA affinities may mix freely (one
// address space); outputs are placed in the context's domain.
//
// Thread-compatible: use one context per thread (they are cheap; each holds
// a reference to the runtime state).
//
// Note [Eager dtype promotion]
// Eager calls meet operands as a numpy user writes them: the binary
// elementwise ops, matmul / dot_general and einsum::einsum convert operands
// of different dtypes to their common dtype (promote_types, numpy's table:
// float32 + float64 -> float64, float + complex -> complex, int + float ->
// float64) before the call, one eager convert per operand that differs.
// The eager linalg and FFT functions (linalg/eager_linalg.h,
// fft/eager_fft.h) also take integer and bool operands as float64, as
// numpy's linalg and fft do. The IR stays strict: a program's ops take the dtypes their metadata says,
// and programs convert explicitly.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/runtime/execution.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

namespace internal {
struct RuntimeState;
struct EagerCache;
struct TextOps;
}  // namespace internal

class ExtensionEngine;
struct PreparedKernel;

/// Which paths eager calls took (per context).
struct EagerMetrics {
  std::uint64_t fast_path_calls = 0;     ///< ran directly on a resolved slot
  std::uint64_t promoted_calls = 0;      ///< ran as a one-node prepared graph
  std::uint64_t refreshes = 0;           ///< slot refreshes after reconfiguration
  std::uint64_t capability_queries = 0;  ///< polymorphic prepare() calls
};

/// A resolved extension engine for one family on the context's engine.
/// Cheap value; re-resolved automatically after reconfiguration.
class ExtensionSlot {
 public:
  ExtensionSlot() = default;
  bool valid() const noexcept { return family_.size() != 0; }
  std::string_view family() const noexcept { return family_; }

 private:
  friend class EagerContext;
  std::string family_;
  const ExtensionEngine* engine_ = nullptr;  // null: no native engine
  std::uint64_t epoch_ = 0;
};

/// See Note [Eager fast path].
class EagerContext {
 public:
  EagerContext(std::shared_ptr<internal::RuntimeState> runtime, Placement placement);
  ~EagerContext();
  EagerContext(EagerContext&&) noexcept;
  EagerContext& operator=(EagerContext&&) noexcept;
  EagerContext(const EagerContext&) = delete;
  EagerContext& operator=(const EagerContext&) = delete;

  // --- elementwise (numpy broadcasting between the operands; mixed dtypes
  // promoted, Note [Eager dtype promotion]) ---
  Result<Tensor> add(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kAdd, a, b); }
  Result<Tensor> sub(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kSub, a, b); }
  Result<Tensor> mul(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kMul, a, b); }
  Result<Tensor> div(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kDiv, a, b); }
  Result<Tensor> pow(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kPow, a, b); }
  Result<Tensor> maximum(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kMax, a, b); }
  Result<Tensor> minimum(const Tensor& a, const Tensor& b) { return binary(program::CoreSemanticOp::kMin, a, b); }
  Result<Tensor> neg(const Tensor& x) { return unary(program::CoreSemanticOp::kNeg, x); }
  Result<Tensor> abs(const Tensor& x) { return unary(program::CoreSemanticOp::kAbs, x); }
  Result<Tensor> exp(const Tensor& x) { return unary(program::CoreSemanticOp::kExp, x); }
  Result<Tensor> log(const Tensor& x) { return unary(program::CoreSemanticOp::kLog, x); }
  Result<Tensor> sqrt(const Tensor& x) { return unary(program::CoreSemanticOp::kSqrt, x); }
  Result<Tensor> sin(const Tensor& x) { return unary(program::CoreSemanticOp::kSin, x); }
  Result<Tensor> cos(const Tensor& x) { return unary(program::CoreSemanticOp::kCos, x); }
  Result<Tensor> tanh(const Tensor& x) { return unary(program::CoreSemanticOp::kTanh, x); }
  Result<Tensor> conj(const Tensor& x) { return unary(program::CoreSemanticOp::kConj, x); }
  Result<Tensor> compare(program::ComparisonDirection direction, const Tensor& a, const Tensor& b);
  Result<Tensor> select(const Tensor& predicate, const Tensor& on_true, const Tensor& on_false);
  Result<Tensor> convert(const Tensor& x, DType dtype);
  /// `inputs` in their common dtype (promote_types over the defined ones),
  /// each one that differs converted once (Note [Eager dtype promotion]).
  Result<TensorList> to_common_dtype(std::span<const Tensor> inputs);
  /// Any elementwise unary / binary core op.
  Result<Tensor> unary(program::CoreSemanticOp op, const Tensor& x);
  Result<Tensor> binary(program::CoreSemanticOp op, const Tensor& a, const Tensor& b);

  // --- contraction ---
  /// Matrix product: [m, k] x [k, n], or batched [..., m, k] x [..., k, n]
  /// with equal batch extents.
  Result<Tensor> matmul(const Tensor& a, const Tensor& b);
  Result<Tensor> dot_general(const Tensor& lhs, const Tensor& rhs, const program::DotGeneralAttributes& dims);

  // --- reductions ---
  // Axes here, in argmax/argmin, transpose, gather and concatenate may be
  // negative, as in numpy (-1: the last); the ops' attributes count from 0.
  Result<Tensor> sum(const Tensor& x, IntArrayRef axes);
  Result<Tensor> prod(const Tensor& x, IntArrayRef axes);
  Result<Tensor> max(const Tensor& x, IntArrayRef axes);
  Result<Tensor> min(const Tensor& x, IntArrayRef axes);
  Result<Tensor> argmax(const Tensor& x, std::int64_t axis);
  Result<Tensor> argmin(const Tensor& x, std::int64_t axis);

  // --- views (metadata only: no provider, no copy; see also apply) ---
  /// Result axis i is x's axis perm[i].
  Result<Tensor> transpose(const Tensor& x, IntArrayRef perm);
  /// The elements of x in row-major order with `shape` (one extent may be
  /// -1). Like a prepared graph, an x whose strides cannot express the
  /// result is first copied to row-major through the LayoutRuntime.
  Result<Tensor> reshape(const Tensor& x, IntArrayRef shape);

  // --- indexing and layout ---
  /// numpy take(x, indices, axis): a general gather made by
  /// program::take_attributes. Out-of-range indices are clamped.
  Result<Tensor> gather(const Tensor& x, const Tensor& indices, std::int64_t axis);
  /// General StableHLO gather / scatter (docs/core_ops.md); bad dimension
  /// numbers are typed errors from metadata inference.
  Result<Tensor> gather(const Tensor& x, const Tensor& indices, const program::GatherAttributes& attributes);
  Result<Tensor> scatter(const Tensor& x, const Tensor& indices, const Tensor& updates,
                         const program::ScatterAttributes& attributes);
  Result<Tensor> concatenate(std::span<const Tensor> xs, std::int64_t axis);
  /// A row-major dense copy (through the engine's LayoutRuntime).
  Result<Tensor> copy(const Tensor& x);
  /// `x` itself when row-major dense, otherwise copy(x).
  Result<Tensor> contiguous(const Tensor& x);

  /// Any core op (views return metadata-only views and call no provider;
  /// a reshape that strides cannot express copies first, as reshape does).
  Result<Tensor> apply(program::CoreSemanticOp op, std::span<const Tensor> inputs,
                       const program::CoreAttributes& attributes = program::NoAttributes{});

  // --- extensions ---
  /// Resolves the native engine of `family` on this context's engine once.
  ExtensionSlot resolve_extension(std::string_view family);
  /// Runs an extension op: native engine, else a one-core-op lowering on the
  /// fast path, else promoted to a prepared graph.
  Result<TensorList> call(const std::shared_ptr<const program::ExtensionOp>& op, std::span<const Tensor> inputs);
  Result<TensorList> call(ExtensionSlot& slot, const std::shared_ptr<const program::ExtensionOp>& op,
                          std::span<const Tensor> inputs);
  /// The same for an op of a derived type (einsum::EinsumOp,
  /// linalg::LinalgOp), without a temporary shared_ptr of the base type: its
  /// reference count lives in the op's control block, which every thread
  /// calling with the same op would write (Note [Eager calls share no
  /// counts]). The op is retained only when a call memoizes it.
  template <class Op>
  requires(std::is_base_of_v<program::ExtensionOp, Op> &&
           !std::is_same_v<Op, program::ExtensionOp>) Result<TensorList> call(const std::shared_ptr<const Op>& op,
                                                                              std::span<const Tensor> inputs) {
    if (op == nullptr) return call(std::shared_ptr<const program::ExtensionOp>(), inputs);
    return call_op(
        nullptr, *op, [&op] { return std::shared_ptr<const program::ExtensionOp>(op); }, inputs);
  }

  /// The op `make` builds for `text` (einsum subscripts, say) in
  /// `family`, remembered by this context: a later call with the same
  /// family and text returns the remembered op without calling `make`
  /// (Note [Ops from text]). `make`'s errors are returned and not
  /// remembered.
  Result<std::shared_ptr<const program::ExtensionOp>> op_from_text(
      std::string_view family, std::string_view text,
      FunctionRef<Result<std::shared_ptr<const program::ExtensionOp>>()> make);

  Placement placement() const noexcept { return placement_; }
  /// The engine and domain this context runs on (resolving it if needed).
  Result<ResolvedPlacement> resolved_placement();
  const EagerMetrics& metrics() const noexcept { return metrics_; }

 private:
  Status refresh();
  Status ensure_fresh();
  Result<Tensor> dot_general_impl(const Tensor& lhs, const Tensor& rhs, const program::CoreAttributes& attributes);
  Result<TensorList> promote(program::CoreSemanticOp op, std::span<const Tensor> inputs,
                             const program::CoreAttributes& attributes);
  // call() on `op`, which `retain` returns as a shared_ptr when the call
  // must keep it (a memo, a promoted program); `slot` null: resolved here.
  Result<TensorList> call_op(ExtensionSlot* slot, const program::ExtensionOp& op,
                             FunctionRef<std::shared_ptr<const program::ExtensionOp>()> retain,
                             std::span<const Tensor> inputs);
  // Allocates the outputs and runs `kernel` on the slot's engine.
  Result<TensorList> run_extension_kernel(const ExtensionSlot& slot, const program::ExtensionOp& op,
                                          std::span<const Tensor> inputs, std::span<const DType> result_dtypes,
                                          std::span<const Dims> result_shapes, const PreparedKernel& kernel);
  Result<TensorList> promote_extension(const std::shared_ptr<const program::ExtensionOp>& op,
                                       std::span<const Tensor> inputs);
  // The program of one operation, which `emit` adds over an input per
  // tensor of `inputs`, run as a prepared graph (the promoted calls).
  Result<TensorList> run_promoted(std::span<const Tensor> inputs,
                                  FunctionRef<Result<SmallVector<program::ProgramValue, 2>>(
                                      program::ProgramBuilder&, std::span<const program::ProgramValue>)>
                                      emit);
  Result<Tensor> run_core(program::CoreSemanticOp op, std::span<const TensorView> inputs, DType out_dtype,
                          IntArrayRef out_shape, const program::CoreAttributes& attributes,
                          FunctionRef<Result<TensorList>()> promote_call);

  std::shared_ptr<internal::RuntimeState> runtime_;
  Placement placement_;
  std::unique_ptr<internal::EagerCache> cache_;
  std::unique_ptr<internal::TextOps> text_ops_;  // made by the first op_from_text
  EagerMetrics metrics_;
};

}  // namespace tenferro::runtime
