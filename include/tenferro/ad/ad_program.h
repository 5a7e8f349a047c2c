// The programs the AD transforms produce and how their inputs and outputs
// are laid out (Note [AD program layout]).
//
// Note [AD program layout]
// A transform of a source program with inputs x_0..x_{n-1} and outputs
// y_0..y_{m-1} differentiates with respect to the *active* inputs (a
// strictly increasing list of input positions; only floating and complex
// inputs can be active). Tangents and cotangents have their primal value's
// dtype and shape. Absent (co)tangents are encoded explicitly in the
// layout instead of being materialized as zeros:
//   TangentState::kPresent            the program carries it;
//   TangentState::kZero               structurally zero (the value does not
//                                     depend on an active input);
//   TangentState::kNonDifferentiable  bool or integer values (comparisons,
//                                     argmax, integer arithmetic).
// JVP program:
//   inputs  [x_0..x_{n-1}, dx_a for a in active_inputs]
//   outputs [y_0..y_{m-1}, dy_j for j in differentiated_outputs]
// VJP program (linearize, then transpose; one program):
//   inputs  [x_0..x_{n-1}, ct_j for j in differentiated_outputs]
//   outputs [y_0..y_{m-1}, ct_a for a in gradient_inputs]
// Split VJP (the residual boundary made explicit):
//   forward  inputs [x_0..x_{n-1}]
//            outputs [y_0..y_{m-1}, r_0..r_{k-1}]     (k = num_residuals)
//   backward inputs [x_0..x_{n-1}, r_0..r_{k-1}, ct_j for j in differentiated_outputs]
//            outputs [ct_a for a in gradient_inputs]
// The residuals are the primal values the backward pass reuses; the
// backward program recomputes only derivative coefficients from them (and
// from the inputs, which it receives again so that its symbolic extents
// are the source's). Cotangents of several uses of a value are summed.
// differentiated_outputs lists the outputs whose tangent is kPresent, in
// order; gradient_inputs lists the active inputs whose cotangent is
// kPresent, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tenferro/base/small_vector.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::ad {

/// Whether a (co)tangent exists (Note [AD program layout]).
enum class TangentState : std::uint8_t { kPresent, kZero, kNonDifferentiable };
std::string_view to_string(TangentState state) noexcept;

/// The input/output layout of a transformed program (Note [AD program
/// layout]). Value type.
struct AdLayout {
  std::size_t num_inputs = 0;   ///< of the source program
  std::size_t num_outputs = 0;  ///< of the source program
  /// Source input positions differentiated, strictly increasing.
  SmallVector<std::uint32_t, 4> active_inputs;
  /// One per source output.
  SmallVector<TangentState, 4> output_tangents;
  /// Source outputs with a kPresent tangent, in order.
  SmallVector<std::uint32_t, 4> differentiated_outputs;
  /// Reverse mode: one per active input (kPresent or kZero).
  SmallVector<TangentState, 4> input_cotangents;
  /// Reverse mode: active inputs with a kPresent cotangent, in order.
  SmallVector<std::uint32_t, 4> gradient_inputs;
};

/// A forward-mode (JVP) program. Its bindings are the source's for the
/// primal inputs; tangents are parameters.
struct JvpProgram {
  program::FrozenProgram program;
  AdLayout layout;
};

/// A reverse-mode (VJP) program: forward pass, then the transposed
/// linearization, in one program.
struct VjpProgram {
  program::FrozenProgram program;
  AdLayout layout;
};

/// A reverse-mode transform split at the residual boundary.
struct SplitVjpProgram {
  program::FrozenProgram forward;
  program::FrozenProgram backward;
  std::size_t num_residuals = 0;
  AdLayout layout;
};

/// A backward program for a caller that already holds the source outputs'
/// values (an eager recorder): only outputs [0, layout.num_outputs) are
/// differentiated; the others name values the backward program reads
/// instead of recomputing them.
///   backward inputs  [x_0..x_{n-1}, r_0..r_{k-1}, ct_j for j in differentiated_outputs]
///                    where r_i is the value of source output reused_outputs[i]
///            outputs [ct_a for a in gradient_inputs]
/// Primal values the backward pass needs that are not among the reused
/// outputs are recomputed from the inputs and the reused values.
struct ReusingVjpProgram {
  program::FrozenProgram backward;
  SmallVector<std::uint32_t, 4> reused_outputs;
  AdLayout layout;
};

/// The positions of the inputs of `program` that can be active (floating
/// and complex dtypes), in order.
SmallVector<std::uint32_t, 4> differentiable_inputs(const program::SemanticProgram& program);

}  // namespace tenferro::ad
