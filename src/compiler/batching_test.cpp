// The batching transform (Note [Batching transform]): a batched program
// run on stacked examples equals the original program run on each example
// (reference evaluator), for every rule; typed errors for what has none.
#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "tenferro/compiler/batching.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT
using tenferro::testing::random_tensor;

constexpr std::int64_t kBatch = 3;

// Checks batch_program(p, batched) on `inputs` (batched ones with the
// leading axis) against p on each example.
void expect_batched_equals_examples(const SemanticProgram& p, std::span<const bool> batched,
                                    const std::vector<Tensor>& inputs, std::vector<bool>* varying = nullptr) {
  Result<std::shared_ptr<const SemanticProgram>> b = batch_program(p, batched, kBatch, varying);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ((*b)->num_inputs(), p.num_inputs());
  ASSERT_EQ((*b)->outputs().size(), p.outputs().size());
  EXPECT_TRUE(test_support::batched_equals_examples(p, **b, batched, kBatch, inputs));
}

// x [3, 4] and w [4, 5] through every rule of the transform.
FrozenProgram every_rule() {
  ProgramBuilder b;
  const ProgramValue x = *b.add_input(DType::kFloat64, {3, 4}, "x");
  const ProgramValue w = *b.add_input(DType::kFloat64, {4, 5}, "w");
  const ProgramValue c = *b.add_input(DType::kFloat64, {}, "c");
  const ProgramValue xw = *b.emit(CoreSemanticOp::kDotGeneral, {x, w}, DotGeneralAttributes{{}, {}, {1}, {0}});
  const ProgramValue wx = *b.emit(CoreSemanticOp::kDotGeneral, {w, x}, DotGeneralAttributes{{}, {}, {0}, {1}});
  const ProgramValue xx = *b.emit(CoreSemanticOp::kDotGeneral, {x, x}, DotGeneralAttributes{{1}, {1}, {0}, {0}});
  const ProgramValue cb = *b.emit(CoreSemanticOp::kBroadcastInDim, {c}, BroadcastInDimAttributes{{3, 5}, {}});
  const ProgramValue t = *b.emit(CoreSemanticOp::kTanh, {*b.emit(CoreSemanticOp::kAdd, {xw, cb})});
  const ProgramValue tt = *b.emit(CoreSemanticOp::kTranspose, {t}, TransposeAttributes{{1, 0}});
  const ProgramValue sum = *b.emit(CoreSemanticOp::kReduceSum, {tt}, ReduceAttributes{{1}});
  const ProgramValue sl = *b.emit(CoreSemanticOp::kSlice, {x}, SliceAttributes{{0, 1}, {3, 4}, {2, 2}});
  const ProgramValue rev = *b.emit(CoreSemanticOp::kReverse, {sl}, ReverseAttributes{{0}});
  const ProgramValue cat =
      *b.emit(CoreSemanticOp::kConcatenate, {x, *b.emit(CoreSemanticOp::kTranspose, {w}, TransposeAttributes{{1, 0}})},
              ConcatenateAttributes{0});
  const ProgramValue zero = *b.constant(Literal::scalar(Scalar::of(0.0)));
  const ProgramValue pad = *b.emit(CoreSemanticOp::kPad, {x, zero}, PadAttributes{{1, 0}, {0, 2}, {0, 1}});
  const ProgramValue cum = *b.emit(CoreSemanticOp::kCumsum, {x}, CumulativeAttributes{1, true, false});
  const ProgramValue sorted = *b.emit(CoreSemanticOp::kSort, {x}, SortAttributes{0, true});
  const ProgramValue arg = *b.emit(CoreSemanticOp::kArgmax, {x}, ArgReduceAttributes{1});
  const ProgramValue mx = *b.emit(CoreSemanticOp::kReduceMax, {x}, ReduceAttributes{{0, 1}});
  const ProgramValue pos =
      *b.emit(CoreSemanticOp::kCompare,
              {x, *b.emit(CoreSemanticOp::kBroadcastInDim, {c}, BroadcastInDimAttributes{{3, 4}, {}})},
              CompareAttributes{ComparisonDirection::kGt});
  const ProgramValue sel = *b.emit(CoreSemanticOp::kSelect, {pos, x, *b.emit(CoreSemanticOp::kNeg, {x})});
  const ProgramValue rs = *b.emit(CoreSemanticOp::kReshape, {x}, ReshapeAttributes{{2, 6}});
  const ProgramValue idx = *b.constant(*Literal::from_values<std::int64_t>({2, 0, 2}, {3}));
  const ProgramValue taken = *b.emit(CoreSemanticOp::kGather, {x, idx}, take_attributes(SymbolicShape{3, 4}, 1, 1));
  const ProgramValue unbatched = *b.emit(CoreSemanticOp::kExp, {w});  // an output without the batch
  return *b.freeze({sum, wx, xx, rev, cat, pad, cum, sorted, arg, mx, sel, rs, taken, unbatched});
}

TEST(Batching, EveryRuleComputesEachExample) {
  const FrozenProgram p = every_rule();
  const Tensor xs = *random_tensor(DType::kFloat64, {kBatch, 3, 4}, 1);
  const Tensor w = *random_tensor(DType::kFloat64, {4, 5}, 2);
  const Tensor c = *random_tensor(DType::kFloat64, {}, 3);
  const bool x_only[] = {true, false, false};
  std::vector<bool> varying;
  expect_batched_equals_examples(*p.program, x_only, {xs, w, c}, &varying);
  // Every output but exp(w) depends on x.
  EXPECT_EQ(varying,
            std::vector<bool>({true, true, true, true, true, true, true, true, true, true, true, true, true, false}));
  // Every input batched: the dot_generals take the two-operand rule, the
  // broadcasts of c carry the batch.
  const Tensor ws = *random_tensor(DType::kFloat64, {kBatch, 4, 5}, 4);
  const Tensor cs = *random_tensor(DType::kFloat64, {kBatch}, 5);
  const bool all[] = {true, true, true};
  expect_batched_equals_examples(*p.program, all, {xs, ws, cs});
  // Only w: x's operations are copied, w's carry the batch.
  const bool w_only[] = {false, true, false};
  expect_batched_equals_examples(*p.program, w_only, {test_support::example_of(xs, 0), ws, c}, &varying);
  // The outputs of x alone (rev, cat of x and w's transpose: w; pad, cum, ...) are shared.
  EXPECT_EQ(varying, std::vector<bool>({true, true, false, false, true, false, false, false, false, false, false, false,
                                        false, true}));
}

// x [5, 4], index vectors, starts and updates through gathers (implicit
// and explicit index vectors), scatters (add and replace), dynamic_slice
// and dynamic_update_slice (Note [Batched indices]).
FrozenProgram indexing() {
  ProgramBuilder b;
  const ProgramValue x = *b.add_input(DType::kFloat64, {5, 4}, "x");
  const ProgramValue i = *b.add_input(DType::kInt64, {3}, "i");
  const ProgramValue s0 = *b.add_input(DType::kInt32, {}, "s0");
  const ProgramValue s1 = *b.add_input(DType::kInt64, {}, "s1");
  const ProgramValue u = *b.add_input(DType::kFloat64, {2, 3}, "u");
  const ProgramValue rows = *b.emit(CoreSemanticOp::kGather, {x, i}, take_attributes(SymbolicShape{5, 4}, 1, 0));
  const ProgramValue cols = *b.emit(CoreSemanticOp::kGather, {x, i}, take_attributes(SymbolicShape{5, 4}, 1, 1));
  // x[i[:2], i[1:]] as index vectors [2, 2]: x[i0, i1], x[i1, i2].
  const ProgramValue pairs = *b.emit(CoreSemanticOp::kReshape,
                                     {*b.emit(CoreSemanticOp::kConcatenate,
                                              {*b.emit(CoreSemanticOp::kSlice, {i}, SliceAttributes{{0}, {2}, {1}}),
                                               *b.emit(CoreSemanticOp::kSlice, {i}, SliceAttributes{{1}, {3}, {1}})},
                                              ConcatenateAttributes{0})},
                                     ReshapeAttributes{{2, 2}});
  const ProgramValue pairs_t = *b.emit(CoreSemanticOp::kTranspose, {pairs}, TransposeAttributes{{1, 0}});
  GatherAttributes points{{}, {0, 1}, {0, 1}, 1, {1, 1}, false};
  const ProgramValue picked = *b.emit(CoreSemanticOp::kGather, {x, pairs_t}, points);
  // Windows [2, 3] at the index vectors (clamped).
  GatherAttributes windows{{1, 2}, {}, {0, 1}, 1, {2, 3}, false};
  const ProgramValue boxes = *b.emit(CoreSemanticOp::kGather, {x, pairs_t}, windows);
  const ProgramValue added =
      *b.emit(CoreSemanticOp::kScatter, {x, i, rows}, take_scatter_attributes(2, 1, 0, ScatterCombine::kAdd));
  const ProgramValue twice = *b.emit(CoreSemanticOp::kAdd, {cols, cols});
  const ProgramValue replaced =
      *b.emit(CoreSemanticOp::kScatter, {x, i, twice}, take_scatter_attributes(2, 1, 1, ScatterCombine::kReplace));
  const ProgramValue window = *b.emit(CoreSemanticOp::kDynamicSlice, {x, s0, s1}, DynamicSliceAttributes{{2, 3}});
  const ProgramValue updated = *b.emit(CoreSemanticOp::kDynamicUpdateSlice, {x, u, s0, s1}, NoAttributes{});
  return *b.freeze({rows, cols, picked, boxes, added, replaced, window, updated});
}

TEST(Batching, IndexingWithBatchedIndicesComputesEachExample) {
  const FrozenProgram p = indexing();
  // Indices and starts in range, negative and past the end: gathers and
  // dynamic slices clamp them, scatters skip them, in each example alike.
  const Tensor xs = *random_tensor(DType::kFloat64, {kBatch, 5, 4}, 1);
  const Tensor is = *Tensor::from_values<std::int64_t>({0, 4, 2, 3, 3, 1, -1, 7, 2}, {kBatch, 3});
  const Tensor s0s = *Tensor::from_values<std::int32_t>({1, 4, -2}, {kBatch});
  const Tensor s1s = *Tensor::from_values<std::int64_t>({0, 2, 9}, {kBatch});
  const Tensor us = *random_tensor(DType::kFloat64, {kBatch, 2, 3}, 2);
  const std::vector<Tensor> stacked{xs, is, s0s, s1s, us};
  for (unsigned mask = 1; mask < (1U << stacked.size()); ++mask) {  // every non-empty subset batched
    bool batched[5];
    std::vector<Tensor> inputs;
    for (std::size_t k = 0; k < stacked.size(); ++k) {
      batched[k] = ((mask >> k) & 1U) != 0;
      inputs.push_back(batched[k] ? stacked[k] : test_support::example_of(stacked[k], 1));
    }
    SCOPED_TRACE(::testing::Message() << "batched inputs mask " << mask);
    expect_batched_equals_examples(*p.program, batched, inputs);
  }
}

TEST(Batching, OperationsWithoutARuleAreUnsupported) {
  ProgramBuilder b;
  const ProgramValue x = *b.add_input(DType::kFloat64, {4}, "x");
  const ProgramValue y = *b.emit_collective(CollectiveSpec{}, x);  // an all-reduce: effects
  const FrozenProgram p = *b.freeze({y});
  const bool operand[] = {true};
  Result<std::shared_ptr<const SemanticProgram>> r = batch_program(*p.program, operand, 2);
  ASSERT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("effects"), std::string::npos) << r.status().message();
  EXPECT_EQ(batch_program(*p.program, operand, -1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(batch_program(*p.program, std::span<const bool>(operand, 0), 2).status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::compiler
