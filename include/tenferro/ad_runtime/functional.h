// Functional differentiation executed through a Runtime: jvp / vjp / grad /
// hvp over a program, built on the AD transforms (tenferro/ad) and the
// derivative programs (tenferro/ad/derivative_programs.h).
//
// Note [Functional results]
// The runtime entry points materialize structurally zero (co)tangents as
// host zeros of the right dtype and shape, and report a non-differentiable
// (bool/integer) output's tangent as an undefined Tensor. Parameters are
// the program's caller-supplied inputs (ProgramBindings::parameters());
// active inputs are positions among all program inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/derivative_programs.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::ad {

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

/// f's outputs and J u, `tangents` holding one tensor per active input (an
/// undefined tensor means zero). Each tangent must have its active input's
/// dtype and shape, each defined cotangent of vjp / vjp_cotangents its
/// output's: kDTypeMismatch / kShapeMismatch naming it otherwise (Note
/// [Checked tangents] in functional.cpp).
Result<JvpResult> jvp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> tangents);

/// jvp with the program made already (AdContext::jvp of f), for a caller
/// that runs it many times.
Result<JvpResult> run_jvp(runtime::Runtime& runtime, const JvpProgram& program, std::span<const Tensor> parameters,
                          std::span<const Tensor> tangents);
/// hvp with the program made already (hessian_vector_program of f), one
/// tensor per active input (`num_active` of them).
Result<std::vector<Tensor>> run_hvp(runtime::Runtime& runtime, const JvpProgram& program,
                                    std::span<const Tensor> parameters, std::span<const Tensor> vectors,
                                    std::size_t num_active);
/// f's outputs and J* v, `cotangents` holding one tensor per output (an
/// undefined tensor means zero; non-differentiable outputs are ignored).
Result<VjpResult> vjp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                      std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                      std::span<const Tensor> cotangents);

/// J* v alone, one tensor per active input (zeros where nothing depends on
/// it), cotangents as for vjp: the backward program of
/// AdContext::vjp_reusing_outputs with every output differentiated, so
/// what only f's outputs need is not computed (the last step of an einsum:
/// a two-operand einsum's VJP is two products, not three).
Result<std::vector<Tensor>> vjp_cotangents(runtime::Runtime& runtime, AdContext& context,
                                           const program::FrozenProgram& f, std::span<const Tensor> parameters,
                                           std::span<const std::uint32_t> active_inputs,
                                           std::span<const Tensor> cotangents);
/// vjp_cotangents' backward program prepared for `signature` (f's
/// parameters, then one cotangent per output), for a caller that runs it
/// many times: runtime.run_prepared(*p, {parameters..., cotangents...})
/// gives one gradient per active input, in order, with no transform or
/// plan lookup. Null where that program cannot run on exactly those inputs
/// (f has bound inputs, an output is not differentiated, or an active
/// input's gradient is structurally zero); vjp_cotangents serves those.
Result<std::shared_ptr<const runtime::PreparedProgram>> prepare_vjp_cotangents(
    runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
    std::span<const std::uint32_t> active_inputs, const runtime::InputSignature& signature);
/// The gradient of f's real scalar output `output`, one tensor per active input.
Result<std::vector<Tensor>> grad(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                                 std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                 std::uint32_t output = 0);

/// H v (forward over reverse) for `vectors`, one per active input.
Result<std::vector<Tensor>> hvp(runtime::Runtime& runtime, AdContext& context, const program::FrozenProgram& f,
                                std::span<const Tensor> parameters, std::span<const std::uint32_t> active_inputs,
                                std::span<const Tensor> vectors, std::uint32_t output = 0);

}  // namespace tenferro::ad
