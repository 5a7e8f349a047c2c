// The reference evaluator: executes a SemanticProgram with simple scalar
// loops, as the oracle that compiler transforms, AD and the CPU kernels are
// compared against. Test-only (target tenferro::testing, built only with
// TENFERRO_BUILD_TESTS); not a component of the product.
//
// Note [Reference evaluator]
// Every core op of docs/core_ops.md is evaluated by an obviously-correct
// loop over row-major element indices, independent of the CPU kernels:
// values are contiguous row-major host tensors, result shapes come from the
// program's symbolic metadata bound to the concrete inputs
// (SemanticProgram::check_guards / concrete_shape), sums and dot products
// accumulate in double / complex<double> (integers wrap in two's
// complement). Extension operations are evaluated through their validated
// lower_to_core (granted concrete dims, widened on NeedsSpecialization);
// one without a core lowering is kUnsupported. Where docs/core_ops.md
// leaves a result undefined the oracle picks: float -> integer conversion
// saturates and maps NaN to 0; integer division of the lowest value by -1
// wraps. Speed is not a goal; keep inputs small.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::testing {

/// Evaluates `program` on `inputs` and returns its outputs in order, as
/// fresh contiguous row-major tensors. Without `bindings`, `inputs` are all
/// program inputs in order; with them, `inputs` are the parameters and the
/// bound tensors fill the rest (ProgramBindings::assemble_inputs). Inputs
/// must be host tensors (any strides); they are read, never retained.
/// Errors: the input checks of check_guards (stage kPrepare); kOutOfRange
/// (stage kCompletion) for a gather/scatter index outside its axis;
/// kInvalidArgument (kCompletion) for an integer division by zero;
/// kUnsupported for an extension without a core lowering. Messages name the
/// failing node and its provenance. Thread-safe (pure).
Result<std::vector<Tensor>> evaluate_reference(const program::SemanticProgram& program, std::span<const Tensor> inputs,
                                               const program::ProgramBindings* bindings = nullptr);
inline Result<std::vector<Tensor>> evaluate_reference(const program::SemanticProgram& program,
                                                      std::initializer_list<Tensor> inputs,
                                                      const program::ProgramBindings* bindings = nullptr) {
  return evaluate_reference(program, std::span<const Tensor>(inputs.begin(), inputs.size()), bindings);
}

}  // namespace tenferro::testing
