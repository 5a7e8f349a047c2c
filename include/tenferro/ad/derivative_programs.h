// Derivative programs by composition: the gradient of a scalar output as a
// program, and Hessian-vector products as forward over reverse. Pure program
// transforms (no runtime); ad_runtime/functional.h runs them.
//
// Note [Higher order by composition]
// Every transform returns an ordinary program, so derivatives of
// derivatives need no special machinery: grad_program(f) is the VJP of f
// with the scalar seed 1 folded in and absent gradients materialized as
// zeros, so its inputs are f's inputs; hessian_vector_program(f) is
// jvp(grad_program(f)) (forward over reverse); vjp(grad_program(f)) gives
// the same product by reverse over reverse (the Hessian is symmetric).
#pragma once

#include <cstdint>
#include <span>

#include "tenferro/ad/ad_context.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::ad {

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

}  // namespace tenferro::ad
