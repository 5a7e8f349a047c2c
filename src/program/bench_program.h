// The program both the program and the compiler benchmarks measure (one
// definition, so their figures compare the same program).
#pragma once

#include <vector>

#include "tenferro/program.h"

namespace tenferro::program::bench {

// A traced-network-shaped program: a symbolic batch through `layers` blocks
// of dot_general + bias add + tanh, with a transpose/reshape pair every
// fourth block, ending in a reduction. About 4 ops per block.
struct Built {
  ProgramBuilder builder;
  ProgramValue output;
};

inline Built build_program(int target_ops) {
  Built built{ProgramBuilder(), ProgramValue()};
  ProgramBuilder& b = built.builder;
  b.set_provenance(make_provenance("bench"));
  ProgramValue h = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(4096), 32}, "x");
  std::vector<ProgramValue> weights, biases;
  for (int i = 0; i < 8; ++i) {
    weights.push_back(*b.add_input(DType::kFloat64, {32, 32}));
    biases.push_back(*b.add_input(DType::kFloat64, {32}));
  }
  const SymbolicExtent batch = b.metadata(h)->shape[0];
  for (int layer = 0; static_cast<int>(b.num_operations()) + 6 <= target_ops; ++layer) {
    h = *b.emit(CoreSemanticOp::kDotGeneral, {h, weights[static_cast<std::size_t>(layer % 8)]},
                DotGeneralAttributes{{}, {}, {1}, {0}});
    ProgramValue bias = *b.emit(CoreSemanticOp::kBroadcastInDim, {biases[static_cast<std::size_t>(layer % 8)]},
                                BroadcastInDimAttributes{{batch, 32}, {1}});
    h = *b.emit(CoreSemanticOp::kAdd, {h, bias});
    h = *b.emit(CoreSemanticOp::kTanh, {h});
    if (layer % 4 == 3) {
      h = *b.emit(CoreSemanticOp::kTranspose, {h}, TransposeAttributes{{1, 0}});
      h = *b.emit(CoreSemanticOp::kTranspose, {h}, TransposeAttributes{{1, 0}});
    }
  }
  while (static_cast<int>(b.num_operations()) < target_ops - 1) h = *b.emit(CoreSemanticOp::kNeg, {h});
  built.output = *b.emit(CoreSemanticOp::kReduceSum, {h}, ReduceAttributes{{0, 1}});
  return built;
}

}  // namespace tenferro::program::bench
