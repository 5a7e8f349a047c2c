// Functional differentiation: program-level composition (the gradient of a
// scalar output as a program, Hessian-vector products as forward over
// reverse) and jvp / vjp / grad / hvp executed through a Runtime.
//
// Note [Higher order by composition]
// Every transform returns an ordinary program, so derivatives of
// derivatives need no special machinery: grad_program(f) is the VJP of f
// with the scalar seed 1 folded in and absent gradients materialized as
// zeros, so its inputs are f's inputs; hessian_vector_program(f) is
// jvp(grad_program(f)) (forward over reverse); vjp(grad_program(f)) gives
// the same product by reverse over reverse (the Hessian is symmetric).
//
// Note [Functional results]
// The runtime entry points materialize structurally zero (co)tangents as
// host zeros of the right dtype and shape, and report a non-differentiable
// (bool/integer) output's tangent as an undefined Tensor. Parameters are
// the program's caller-supplied inputs (ProgramBindings::parameters());
// active inputs are positions among all program inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tenferro/ad/ad_context.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::ad {

// --- program-level composition (Note [Higher order by composition]) ---

/// A program with f's inputs (and bindings) whose outputs are the
/// gradients of f's output `output` with respect to `active_inputs`, in
/// order (zeros where the output does not depend on an input). The output
/// must be a real floating scalar (kInvalidArgument otherwise), as for
/// PyTorch's backward().
Result<program::FrozenProgram> grad_program(AdContext& context, const program::FrozenProgram& f,
                                            std::span<const std::uint32_t> active_inputs, std::uint32_t output = 0);

/// Forward over reverse: jvp(grad_program(f)). Its inputs are f's inputs
/// then one vector per active input; its outputs are the gradients, then
/// H v for each gradient whose tangent is present (layout of the result).
Result<JvpProgram> hessian_vector_program(AdContext& context, const program::FrozenProgram& f,
                                          std::span<const std::uint32_t> active_inputs, std::uint32_t output = 0);

// --- execution through a runtime (Note [Functional results]) ---

struct JvpResult {
  std::vector<Tensor> outputs;
  /// One per output: the tangent, zeros, or undefined (not differentiable).
  std::vector<Tensor> tangents;
};

struct VjpResult {
  std::vector<Tensor> outputs;
  /// One per active input (zeros where nothing depends on it).
  std::vector<Tensor> cotangents;
};

/// f's outputs and J u, `tangents` holding one tensor per active input.
Result<JvpResult> jvp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> tangents);

/// f's outputs and J* v, `cotangents` holding one tensor per output (an
/// undefined tensor means zero; non-differentiable outputs are ignored).
Result<VjpResult> vjp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> cotangents);

/// The gradient of f's real scalar output `output`, one tensor per active input.
Result<std::vector<Tensor>> grad(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                                 std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                 std::uint32_t output = 0);

/// H v (forward over reverse) for `vectors`, one per active input.
Result<std::vector<Tensor>> hvp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                                std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                std::span<const Tensor> vectors, std::uint32_t output = 0);

}  // namespace tenferro::ad
