// Helpers shared by the compiler unit tests: random inputs for a program
// and a before/after comparison with the reference evaluator.
#pragma once

#include <cstdint>
#include <cstring>
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
/// Example k of a batched tensor: a contiguous copy of its slice k along
/// the leading axis.
inline Tensor example_of(const Tensor& batched, std::int64_t k) {
  const Dims shape(batched.shape().begin() + 1, batched.shape().end());
  Tensor out = *Tensor::empty(shape, batched.dtype());
  const std::size_t bytes = out.nbytes();
  if (bytes > 0) std::memcpy(out.data(), static_cast<const std::byte*>(batched.data()) + k * bytes, bytes);
  return out;
}

/// `batched` (batch_program of `p` with the flags `is_batched` and `b`
/// examples) evaluated on `inputs` (every input of p, the batched ones with
/// the leading axis, contiguous) against p on each example.
inline ::testing::AssertionResult batched_equals_examples(const program::SemanticProgram& p,
                                                          const program::SemanticProgram& batched,
                                                          std::span<const bool> is_batched, std::int64_t b,
                                                          const std::vector<Tensor>& inputs) {
  Result<std::vector<Tensor>> all = ::tenferro::testing::evaluate_reference(batched, inputs);
  if (!all.ok()) return ::testing::AssertionFailure() << "batched: " << all.status().to_string();
  for (std::int64_t k = 0; k < b; ++k) {
    std::vector<Tensor> one;
    for (std::size_t i = 0; i < inputs.size(); ++i) one.push_back(is_batched[i] ? example_of(inputs[i], k) : inputs[i]);
    Result<std::vector<Tensor>> want = ::tenferro::testing::evaluate_reference(p, one);
    if (!want.ok()) return ::testing::AssertionFailure() << "example " << k << ": " << want.status().to_string();
    for (std::size_t o = 0; o < want->size(); ++o) {
      const Tensor got = example_of((*all)[o], k);
      if (!::tenferro::testing::check_allclose(got, (*want)[o]).ok()) {
        return ::testing::AssertionFailure()
               << "output " << o << ", example " << k << ": " << ::tenferro::testing::format_tensor(got) << " vs "
               << ::tenferro::testing::format_tensor((*want)[o]);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::size_t count_ops(const program::SemanticProgram& program, std::string_view name) {
  std::size_t n = 0;
  for (program::OperationView op : program.operations()) n += op.name() == name ? 1 : 0;
  return n;
}

}  // namespace tenferro::compiler::test_support
