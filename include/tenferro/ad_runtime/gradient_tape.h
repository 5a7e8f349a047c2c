// GradientTape: eager (define-by-run) reverse mode on a runtime. Operations
// run eagerly on the runtime's eager context and are recorded at the same
// time; backward() turns the recording into a program and differentiates
// it with the same transforms as the graph path (docs/ad.md): record ->
// TracedGraph -> SemanticProgram -> AD transform -> Runtime::prepare_for.
//
// Note [Eager backward]
// Every leaf (variable() or constant()) is a parameter input of one
// TraceContext and every recorded operation is emitted into it. backward(loss)
// finishes the trace with the outputs [loss, every recorded value],
// compiles it (GraphCompiler: canonicalization, CSE, DCE; its cache makes a
// re-recorded loop body compile once, and a compiler shared by several
// tapes makes a function recorded again on a new tape compile once), asks
// the AdContext for vjp_reusing_outputs(program, variables, 1) and runs
// that backward program through Runtime::run with the recorded tensors as
// its residuals, so the forward pass is not recomputed (only derivative
// coefficients are). The seed is 1 (the loss must be a real floating scalar
// that depends on a variable), or the cotangent given for a tensor output.
// Gradients are added into each variable's accumulated gradient (grad());
// zero_grad() clears them. Recording
// continues after backward(), so several losses of one recording can be
// differentiated; clear() starts a new recording, keeping variables, their
// values and their gradients (tensors recorded before are then stale).
//
// Note [Nested tapes]
// A derivative of a derivative (grad of grad, jvp of grad) nests one tape
// in another. The inner tape's leaves made by variable(outer, v) and
// constant(outer, v) stand for tensors v of the outer tape. vjp_onto,
// jvp_onto and hvp_onto take the inner recording as a program (as
// backward() and jvp() do), ask the AdContext for its VJP, JVP or
// Hessian-vector program and record that program on the outer tape, one
// operation at a time, its inputs the outer tensors the leaves stand for
// (the other leaves become outer constants). The results are ordinary
// outer tensors: the outer tape differentiates them with the same rules,
// since a transform's program is made of operations that have rules
// themselves. The inner forward pass is computed a second time on the
// outer tape, the price of keeping the inner recording's values out of the
// outer one. Nesting has any depth: an inner tape can be the outer tape of
// a third one.
//
// Note [Recorded functions]
// tenferro.jit records a function once per argument signature and runs the
// recording afterwards, as jax.jit does. function() turns the recording into
// that program: the trace up to the outputs, compiled by the tape's
// GraphCompiler, with the argument leaves as its parameters and every
// other leaf (an array the function closed over, a literal) bound to the
// value it was recorded with. The operations were recorded as the eager
// calls ran them, so the program computes what those calls computed for
// any argument values of the recorded dtypes and shapes, as long as the
// function's control flow did not read a value (Python decides that: it
// watches for value reads while it records).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tenferro/ad/ad_context.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::compiler {
class GraphCompiler;
}  // namespace tenferro::compiler

namespace tenferro::ad {

class GradientTape;

/// A tensor recorded on one GradientTape: a cheap handle. Only its tape
/// accepts it (kForeignValue otherwise), also after the tape is moved (the
/// handle names the recording, which moves with it); after clear() only
/// variables stay valid (others answer kFailedPrecondition). Trivially
/// copyable.
class TapeTensor {
 public:
  TapeTensor() = default;
  bool valid() const noexcept { return recording_ != nullptr; }

 private:
  friend class GradientTape;
  TapeTensor(const void* recording, std::uint32_t index, std::uint64_t generation) noexcept
      : recording_(recording), index_(index), generation_(generation) {}
  const void* recording_ = nullptr;  ///< the tape's State (stable across moves)
  std::uint32_t index_ = 0;
  std::uint64_t generation_ = 0;
};

/// What backward() did (cumulative).
struct TapeMetrics {
  std::uint64_t operations_recorded = 0;
  std::uint64_t backward_calls = 0;
  std::uint64_t reused_values = 0;  ///< recorded tensors fed to backward programs as residuals
};

/// See Note [Eager backward]. Thread-compatible (one thread at a time).
/// Retains the runtime (a handle) and the AdContext. Movable: the handles
/// follow the recording; a moved-from tape answers kFailedPrecondition.
class GradientTape {
 public:
  /// A tape running on `runtime.on(placement)`, differentiating with
  /// `context` (a fresh AdContext when null) and compiling its recordings
  /// with `compiler` (a fresh GraphCompiler when null; share one between
  /// tapes, as AdContexts are shared, so that recording the same function
  /// again compiles nothing).
  explicit GradientTape(runtime::Runtime runtime, std::shared_ptr<AdContext> context = nullptr,
                        runtime::Placement placement = runtime::Placement::default_placement(),
                        std::shared_ptr<compiler::GraphCompiler> compiler = nullptr);
  ~GradientTape();
  GradientTape(GradientTape&&) noexcept;
  GradientTape& operator=(GradientTape&&) noexcept;
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// A leaf whose gradient is accumulated (floating or complex dtype;
  /// kDTypeMismatch otherwise). The tensor is retained, not copied.
  Result<TapeTensor> variable(const Tensor& value, std::string_view name = {});
  /// A leaf without a gradient.
  Result<TapeTensor> constant(const Tensor& value, std::string_view name = {});

  /// Runs core op `op` eagerly and records it.
  Result<TapeTensor> apply(program::CoreSemanticOp op, std::span<const TapeTensor> operands,
                           program::CoreAttributes attributes = program::NoAttributes{});
  Result<TapeTensor> apply(program::CoreSemanticOp op, std::initializer_list<TapeTensor> operands,
                           program::CoreAttributes attributes = program::NoAttributes{}) {
    return apply(op, std::span<const TapeTensor>(operands.begin(), operands.size()), std::move(attributes));
  }
  /// Runs extension op `op` eagerly (retained) and records it.
  Result<SmallVector<TapeTensor, 2>> apply(std::shared_ptr<const program::ExtensionOp> op,
                                           std::span<const TapeTensor> operands);

  /// The eager value.
  Result<Tensor> value(const TapeTensor& tensor) const;

  /// Adds d loss / d variable into every variable's gradient (Note [Eager
  /// backward]). kInvalidArgument for a loss that is not a real floating
  /// scalar, kFailedPrecondition when it was computed from no variable; a
  /// loss that depends on variables only through operations of zero
  /// derivative (sign, floor) adds nothing (every gradient is zero).
  Status backward(const TapeTensor& loss);
  /// Adds J^* cotangent into every variable's gradient, J the Jacobian of
  /// `output` (any recorded floating or complex tensor) with respect to
  /// the variables: the vector-Jacobian product, as
  /// torch.autograd.grad(output, variables, cotangent) gives it. Records
  /// nothing, so calling it again with another cotangent compiles nothing.
  /// kDTypeMismatch / kShapeMismatch when the cotangent's dtype / shape is
  /// not output's, kFailedPrecondition when output depends on no variable.
  Status backward(const TapeTensor& output, const Tensor& cotangent);
  /// Forward mode over the recording (Note [Tape forward mode]): the
  /// tangent of `output` for `tangents`, one per variable in the order the
  /// variables were created (an undefined Tensor: zero), as jax.jvp /
  /// torch.func.jvp give it. kDTypeMismatch / kShapeMismatch for a tangent
  /// that does not match its variable; zeros when output depends on no
  /// variable. Records nothing and leaves the gradients alone.
  Result<Tensor> jvp(const TapeTensor& output, std::span<const Tensor> tangents);
  /// The Hessian of the real scalar `output` times `vectors` (one per
  /// variable, as for jvp): forward over reverse, one tensor per variable.
  Result<std::vector<Tensor>> hvp(const TapeTensor& output, std::span<const Tensor> vectors);

  // --- nested tapes (Note [Nested tapes]) ---
  /// A variable of this tape whose value is `value`, a tensor of the
  /// enclosing tape `outer`: the *_onto transforms below record what they
  /// compute on `outer` in terms of `value`, so `outer` differentiates them
  /// again (grad of grad). kInvalidArgument when `outer` is this tape.
  Result<TapeTensor> variable(GradientTape& outer, const TapeTensor& value, std::string_view name = {});
  /// A constant of this tape standing for `value` of `outer` (a value the
  /// differentiated function closes over): no gradient here, but the *_onto
  /// transforms pass `value` itself to `outer`.
  Result<TapeTensor> constant(GradientTape& outer, const TapeTensor& value, std::string_view name = {});
  /// `output` recorded on `outer`: its value as a tensor of `outer`, for a
  /// caller that differentiates it there too.
  Result<TapeTensor> value_onto(GradientTape& outer, const TapeTensor& output);
  /// backward(output, cotangent) recorded on `outer`: `output`'s value
  /// followed by one gradient per variable, all tensors of `outer` (a
  /// gradient that is zero is a zero constant of `outer`). Every leaf of
  /// this tape made by the two functions above stands for its `outer`
  /// tensor; the other leaves are constants of `outer`. `cotangent` is a
  /// tensor of `outer` of `output`'s dtype and shape. kInvalidArgument when
  /// a leaf stands for a tensor of a tape other than `outer`. Leaves this
  /// tape's gradients alone.
  Result<std::vector<TapeTensor>> vjp_onto(GradientTape& outer, const TapeTensor& output, const TapeTensor& cotangent);
  /// jvp(output, tangents) recorded on `outer`: [output's value, its
  /// tangent], `tangents` tensors of `outer`, one per variable (an invalid
  /// TapeTensor: zero).
  Result<std::vector<TapeTensor>> jvp_onto(GradientTape& outer, const TapeTensor& output,
                                           std::span<const TapeTensor> tangents);
  /// hvp(output, vectors) recorded on `outer`: one tensor of `outer` per
  /// variable.
  Result<std::vector<TapeTensor>> hvp_onto(GradientTape& outer, const TapeTensor& output,
                                           std::span<const TapeTensor> vectors);

  // --- recorded functions (Note [Recorded functions]) ---
  /// The recording as a function: a program computing `outputs` whose
  /// parameters are the leaves `arguments` (variables or constants, given
  /// in the order they were made), every other leaf bound to its value.
  /// Run it with Runtime::run(program, parameters) on new argument values
  /// of the same dtypes and shapes. kInvalidArgument when an argument is
  /// not a leaf or the arguments are not distinct leaves in creation order,
  /// or when `outputs` is empty.
  Result<program::FrozenProgram> function(std::span<const TapeTensor> arguments, std::span<const TapeTensor> outputs);

  /// `program` recorded on the enclosing tape `outer` (Note [Nested
  /// tapes]): `program` is function(arguments, ...)'s program or a
  /// transform of it with the same inputs (tenferro.vmap's batched one);
  /// each argument leaf stands for its tensor of `outer` in `values`, every
  /// other leaf for the outer tensor it was made from (a constant of
  /// `outer` when it was made from none). Its outputs as tensors of
  /// `outer`. kInvalidArgument when the program does not take this tape's
  /// leaves or an argument is not a leaf.
  Result<std::vector<TapeTensor>> apply_onto(GradientTape& outer, const program::SemanticProgram& program,
                                             std::span<const TapeTensor> arguments, std::span<const TapeTensor> values);

  /// The accumulated gradient of `variable`; an undefined Tensor when none
  /// was accumulated since the last zero_grad().
  Result<Tensor> grad(const TapeTensor& variable) const;
  /// Clears every accumulated gradient.
  void zero_grad();
  /// Starts a new recording (Note [Eager backward]).
  Status clear();
  /// Ends the recording: apply() then answers kFailedPrecondition (a value
  /// used after the computation that recorded it ended, as jax's leaked
  /// tracers), while backward, jvp, hvp and the *_onto transforms of what
  /// was recorded, and leaves, keep working. clear() opens it again.
  void close() noexcept;
  /// Whether close() ended the recording (and no clear() opened it again).
  bool closed() const noexcept;
  /// Whether `tensor` depends on a variable (through operations of nonzero
  /// derivative or not): backward(tensor) needs one.
  Result<bool> requires_grad(const TapeTensor& tensor) const;

  const TapeMetrics& metrics() const noexcept { return metrics_; }
  AdContext& ad_context() const noexcept { return *context_; }

  struct State;  // src/ad; not part of the API

 private:
  /// Records `program`'s operations on `operands`, one per program input
  /// (Note [Expansions on the tape], Note [Nested tapes]); its outputs.
  Result<SmallVector<TapeTensor, 2>> apply_program(const program::SemanticProgram& program,
                                                   std::span<const TapeTensor> operands);
  /// apply_program of `f`, `parameters` for its parameter inputs (its bound
  /// inputs become constants).
  Result<SmallVector<TapeTensor, 2>> apply_program(const program::FrozenProgram& f,
                                                   std::span<const TapeTensor> parameters);
  /// A zero constant of `like`'s dtype and shape.
  Result<TapeTensor> zeros_like(const Tensor& like);
  /// The leaves of this recording as tensors of `outer` (Note [Nested tapes]).
  Result<std::vector<TapeTensor>> leaves_on(GradientTape& outer);
  /// Appends `given` (tensors of `outer`, one per variable of this tape;
  /// invalid: a zero constant) to `operands`, checked against the variables.
  Status append_per_variable(GradientTape& outer, std::span<const TapeTensor> given, std::string_view who,
                             std::vector<TapeTensor>& operands);
  /// Appends one tensor of `outer` per variable to `result`: the next of
  /// `out` from `next` on where `states` (one per variable) is kPresent,
  /// else a zero constant.
  Status append_per_variable_results(GradientTape& outer, std::span<const TangentState> states,
                                     std::span<const TapeTensor> out, std::size_t next,
                                     std::vector<TapeTensor>& result);

  std::shared_ptr<AdContext> context_;
  std::unique_ptr<State> state_;
  TapeMetrics metrics_;
};

}  // namespace tenferro::ad
