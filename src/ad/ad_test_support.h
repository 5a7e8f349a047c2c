// Test support for the ad component: host tensor arithmetic for finite
// differences and inner products, and check_derivatives(), which checks
// one program's JVP, VJP and split VJP against central finite differences
// and against each other (Re <v, J u> = Re <J* v, u>), evaluating every
// program with the reference evaluator (tenferro::testing).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tenferro/ad/ad_context.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/tensor/tensor.h"
#include "tenferro/testing/python.h"

namespace tenferro::ad::testing {

/// x + h * u, elementwise (float64/complex128 or float32/complex64 host tensors).
Tensor axpy(const Tensor& x, double h, const Tensor& u);
/// Re sum conj(a) b over all elements (a and b of one dtype and shape).
double real_inner(const Tensor& a, const Tensor& b);
/// The largest |element| (modulus for complex).
double max_abs(const Tensor& x);
/// A random tensor like `like` (its dtype and shape), uniform in [-1, 1).
Tensor random_like(const Tensor& like, std::uint64_t seed);

/// Evaluates a frozen program (with its bindings) by the reference
/// evaluator; aborts the test on error.
std::vector<Tensor> evaluate(const program::FrozenProgram& program, std::span<const Tensor> parameters);

struct DerivativeCheck {
  double h = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-7;
  /// Compare the JVP with central finite differences (off for float32 paths).
  bool finite_differences = true;
  /// Relative tolerance of the <v, J u> = <J* v, u> identity.
  double identity_rtol = 1e-9;
  std::uint64_t seed = 7;
};

/// Checks jvp / vjp / split_vjp of `program` at `parameters` for `active`
/// inputs: primal outputs unchanged, JVP against finite differences
/// (zero tangents included), the adjoint identity, split == combined,
/// and provenance of every emitted operation derived from the source.
::testing::AssertionResult check_derivatives(AdContext& context, const program::FrozenProgram& program,
                                             std::span<const Tensor> parameters, std::span<const std::uint32_t> active,
                                             const DerivativeCheck& check = {});

/// Every operation of `transformed` has provenance derived from an
/// operation of `source`.
::testing::AssertionResult provenance_derived(const program::SemanticProgram& source,
                                              const program::SemanticProgram& transformed);

using tenferro::testing::run_python;
/// A numpy expression for `t` (float64 or complex128): np.array([...]).reshape(shape).
std::string numpy_literal(const Tensor& t);
/// Reads whitespace-separated numbers (complex values as "re im" pairs)
/// into a contiguous tensor of `dtype` and `shape`.
Result<Tensor> parse_tensor(std::string_view text, DType dtype, IntArrayRef shape);

/// A one-off program: inputs of the given metadata, then `body`.
using ProgramBody = std::function<Result<std::vector<program::ProgramValue>>(program::ProgramBuilder&,
                                                                             std::span<const program::ProgramValue>)>;
program::FrozenProgram make_program(std::span<const program::ValueMetadata> inputs, const ProgramBody& body);

}  // namespace tenferro::ad::testing
