// Helpers shared by the compiler unit tests: random inputs for a program
// and a before/after comparison with the reference evaluator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/compiler/trace_context.h"
#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::compiler::test_support {

/// Random tensors for the parameters of `graph` (exact shapes only;
/// `symbol_values` gives the extent of each dimension symbol).
inline std::vector<Tensor> random_parameters(const TracedGraph& graph, std::uint64_t seed,
                                             std::span<const std::int64_t> symbol_values = {}) {
  const program::SemanticProgram& p = *graph.program();
  std::vector<Tensor> out;
  for (std::uint32_t input : graph.bindings().parameters()) {
    const program::ValueMetadata& m = p.metadata(p.input(input));
    Dims shape;
    for (const program::SymbolicExtent& e : m.shape) {
      std::int64_t v = 0;
      EXPECT_TRUE(e.try_evaluate(symbol_values, &v)) << "extent " << e.to_string() << " needs symbol values";
      shape.push_back(v);
    }
    out.push_back(*::tenferro::testing::random_tensor(m.dtype, shape, seed * 7919 + input));
  }
  return out;
}

/// Evaluates the traced and the compiled program on the same random
/// parameters and compares every output.
inline ::testing::AssertionResult same_results(const TracedGraph& traced, const CompiledGraph& compiled,
                                               std::uint64_t seed, std::span<const std::int64_t> symbols = {}) {
  const std::vector<Tensor> params = random_parameters(traced, seed, symbols);
  auto before = ::tenferro::testing::evaluate_reference(*traced.program(), params, &traced.bindings());
  if (!before.ok()) return ::testing::AssertionFailure() << "traced: " << before.status().to_string();
  auto after = ::tenferro::testing::evaluate_reference(*compiled.program, params, &compiled.bindings);
  if (!after.ok()) return ::testing::AssertionFailure() << "compiled: " << after.status().to_string();
  if (before->size() != after->size()) return ::testing::AssertionFailure() << "output counts differ";
  for (std::size_t i = 0; i < before->size(); ++i) {
    Status s = ::tenferro::testing::check_allclose((*after)[i], (*before)[i], {1e-11, 1e-12, true});
    if (!s.ok()) return ::testing::AssertionFailure() << "output " << i << ": " << s.message();
  }
  return ::testing::AssertionSuccess();
}

/// The number of operations of `program` named `name`.
inline std::size_t count_ops(const program::SemanticProgram& program, std::string_view name) {
  std::size_t n = 0;
  for (program::OperationView op : program.operations()) n += op.name() == name ? 1 : 0;
  return n;
}

}  // namespace tenferro::compiler::test_support
