// Tests of the reference evaluator: hand-computed results for every op
// family, numpy as an independent reference where available, extensions
// through their lowering, bindings, symbolic inputs and typed errors.
#include "tenferro/testing/reference_evaluator.h"

#include <cmath>
#include <complex>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "program/extension_test_support.h"
#include "tenferro/program.h"
#include "tenferro/testing/python.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::testing {
namespace {

using namespace tenferro::program;  // NOLINT
using ::testing::HasSubstr;

/// Builds a one-op program over inputs shaped like `inputs` and evaluates it.
Result<Tensor> run_op(CoreSemanticOp op, std::vector<Tensor> inputs, CoreAttributes attributes = NoAttributes{}) {
  ProgramBuilder b;
  std::vector<ProgramValue> values;
  for (const Tensor& t : inputs) {
    SymbolicShape shape = symbolic_shape(t.shape());
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, b.add_input(t.dtype(), shape));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(op, values, std::move(attributes)));
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram f, b.freeze({y}));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> out, evaluate_reference(*f.program, inputs));
  return out[0];
}

template <class T>
Tensor values(std::initializer_list<T> v, IntArrayRef shape) {
  return *Tensor::from_values<T>(v, shape);
}

template <class T>
std::vector<T> elements_of(const Result<Tensor>& t) {
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return {};
  EXPECT_TRUE(t->is_contiguous());
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    const bool* p = static_cast<const bool*>(t->data());
    return std::vector<bool>(p, p + t->numel());
  } else {
    return *t->to_vector<T>();
  }
}

TEST(ReferenceEvaluator, ElementwiseArithmetic) {
  Tensor a = values<std::int32_t>({7, -7, 5, std::numeric_limits<std::int32_t>::min()}, {4});
  Tensor b = values<std::int32_t>({2, 2, -3, -1}, {4});
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kDiv, {a, b})),
            (std::vector<std::int32_t>{3, -3, -1, std::numeric_limits<std::int32_t>::min()}));
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kSign, {a})), (std::vector<std::int32_t>{1, -1, 1, -1}));
  Tensor zero = values<std::int32_t>({1, 0, 1, 1}, {4});
  Result<Tensor> by_zero = run_op(CoreSemanticOp::kDiv, {a, zero});
  EXPECT_EQ(by_zero.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(by_zero.status().stage(), ErrorStage::kCompletion);
  EXPECT_THAT(std::string(by_zero.status().message()), HasSubstr("div %"));

  Tensor x = values<double>({1.0, -2.0, 0.5, 4.0}, {2, 2});
  Tensor y = values<double>({3.0, 1.0, -1.0, std::nan("")}, {2, 2});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kSub, {x, y}))[0], -2.0);
  std::vector<double> mx = elements_of<double>(run_op(CoreSemanticOp::kMax, {x, y}));
  EXPECT_EQ(mx[0], 3.0);
  EXPECT_EQ(mx[2], 0.5);
  EXPECT_TRUE(std::isnan(mx[3]));  // NaN propagates
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kAbs, {x}))[1], 2.0);
  EXPECT_NEAR(elements_of<double>(run_op(CoreSemanticOp::kLogistic, {x}))[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(elements_of<double>(run_op(CoreSemanticOp::kAtan2, {x, y}))[1], std::atan2(-2.0, 1.0), 1e-15);

  using C = std::complex<double>;
  Tensor z = values<C>({C(3, 4), C(0, 0)}, {2});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kAbs, {z})), (std::vector<double>{5.0, 0.0}));
  EXPECT_EQ(elements_of<C>(run_op(CoreSemanticOp::kSign, {z})), (std::vector<C>{C(0.6, 0.8), C(0, 0)}));
  EXPECT_EQ(elements_of<C>(run_op(CoreSemanticOp::kConj, {z}))[0], C(3, -4));
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kImag, {z}))[0], 4.0);
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kImag, {x}))[0], 0.0);
  EXPECT_EQ(elements_of<C>(run_op(CoreSemanticOp::kComplex, {x, y}))[1], C(-2.0, 1.0));
  std::vector<C> e = elements_of<C>(run_op(CoreSemanticOp::kExpm1, {z}));
  EXPECT_NEAR(std::abs(e[0] - (std::exp(C(3, 4)) - 1.0)), 0.0, 1e-12);
}

TEST(ReferenceEvaluator, ClampCumulativeAndSort) {
  const double nan = std::nan("");
  Tensor lo = values<double>({0, 0, 0, 2, nan}, {5});
  Tensor x = values<double>({-1, 0.5, 3, 1, 1}, {5});
  Tensor hi = values<double>({1, 1, 1, 1, 1}, {5});
  const std::vector<double> clamped = elements_of<double>(run_op(CoreSemanticOp::kClamp, {lo, x, hi}));
  ASSERT_EQ(clamped.size(), 5u);
  EXPECT_EQ(std::vector<double>(clamped.begin(), clamped.begin() + 4), (std::vector<double>{0, 0.5, 1, 1}));
  EXPECT_TRUE(std::isnan(clamped[4]));

  // Rows [1 2 3], [4 5 6] along axis 1, and the columns along axis 0.
  Tensor m = values<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kCumsum, {m}, CumulativeAttributes{1})),
            (std::vector<std::int32_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kCumsum, {m}, CumulativeAttributes{1, true, true})),
            (std::vector<std::int32_t>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kCumprod, {m}, CumulativeAttributes{0, false, true})),
            (std::vector<std::int32_t>{1, 1, 1, 1, 2, 3}));
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kCumprod, {m}, CumulativeAttributes{1, true, false})),
            (std::vector<std::int32_t>{6, 6, 3, 120, 30, 6}));

  Tensor s = values<double>({2, nan, -1, 2, 0}, {5});
  const std::vector<double> up = elements_of<double>(run_op(CoreSemanticOp::kSort, {s}, SortAttributes{0, false}));
  ASSERT_EQ(up.size(), 5u);
  EXPECT_EQ(std::vector<double>(up.begin(), up.begin() + 4), (std::vector<double>{-1, 0, 2, 2}));
  EXPECT_TRUE(std::isnan(up[4]));
  // Stable: the two 2s keep their order both ways; NaN stays last.
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kArgsort, {s}, SortAttributes{0, false})),
            (std::vector<std::int64_t>{2, 4, 0, 3, 1}));
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kArgsort, {s}, SortAttributes{0, true})),
            (std::vector<std::int64_t>{0, 3, 4, 2, 1}));
}

TEST(ReferenceEvaluator, CompareSelectConvert) {
  Tensor a = values<float>({1.0f, 2.0f, 3.0f}, {3});
  Tensor b = values<float>({2.0f, 2.0f, 2.0f}, {3});
  EXPECT_EQ(elements_of<bool>(run_op(CoreSemanticOp::kCompare, {a, b}, CompareAttributes{ComparisonDirection::kLt})),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(elements_of<bool>(run_op(CoreSemanticOp::kCompare, {a, b}, CompareAttributes{ComparisonDirection::kGe})),
            (std::vector<bool>{false, true, true}));
  Tensor p = values<bool>({true, false, true}, {3});
  EXPECT_EQ(elements_of<float>(run_op(CoreSemanticOp::kSelect, {p, a, b})), (std::vector<float>{1.0f, 2.0f, 3.0f}));
  Tensor f = values<double>({-2.7, 1e300, std::nan(""), 0.0}, {4});
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kConvert, {f}, ConvertAttributes{DType::kInt32})),
            (std::vector<std::int32_t>{-2, std::numeric_limits<std::int32_t>::max(), 0, 0}));
  EXPECT_EQ(elements_of<bool>(run_op(CoreSemanticOp::kConvert, {f}, ConvertAttributes{DType::kBool})),
            (std::vector<bool>{true, true, true, false}));
  using C = std::complex<float>;
  Tensor z = values<std::complex<double>>({{1.5, -2.0}}, {1});
  EXPECT_EQ(elements_of<C>(run_op(CoreSemanticOp::kConvert, {z}, ConvertAttributes{DType::kComplex64}))[0],
            C(1.5f, -2.0f));
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kConvert, {z}, ConvertAttributes{DType::kInt64}))[0], 1);
}

TEST(ReferenceEvaluator, CreationAndViews) {
  ProgramBuilder b;
  ProgramValue i = *b.emit(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kInt64, {2, 3}, 1});
  ProgramValue c = *b.constant(*Literal::from_values<std::int64_t>({10, 20, 30}, {3}));
  ProgramValue cb = *b.emit(CoreSemanticOp::kBroadcastInDim, {c}, BroadcastInDimAttributes{{2, 3}, {1}});
  ProgramValue sum = *b.emit(CoreSemanticOp::kAdd, {i, cb});
  ProgramValue t = *b.emit(CoreSemanticOp::kTranspose, {sum}, TransposeAttributes{{1, 0}});
  ProgramValue r = *b.emit(CoreSemanticOp::kReshape, {t}, ReshapeAttributes{{6}});
  ProgramValue s = *b.emit(CoreSemanticOp::kSlice, {r}, SliceAttributes{{1}, {6}, {2}});
  ProgramValue rev = *b.emit(CoreSemanticOp::kReverse, {sum}, ReverseAttributes{{0, 1}});
  FrozenProgram f = *b.freeze({sum, r, s, rev});
  std::vector<Tensor> out = *evaluate_reference(*f.program, {});
  EXPECT_EQ(*out[0].to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, 21, 32, 10, 21, 32}));
  EXPECT_EQ(*out[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, 10, 21, 21, 32, 32}));
  EXPECT_EQ(*out[2].to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, 21, 32}));
  EXPECT_EQ(*out[3].to_vector<std::int64_t>(), (std::vector<std::int64_t>{32, 21, 10, 32, 21, 10}));
}

TEST(ReferenceEvaluator, ConcatenatePadDynamicSlices) {
  Tensor a = values<double>({1, 2, 3, 4}, {2, 2});
  Tensor b = values<double>({5, 6}, {2, 1});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kConcatenate, {a, b}, ConcatenateAttributes{1})),
            (std::vector<double>{1, 2, 5, 3, 4, 6}));
  Tensor v = values<double>({1, 2}, {2});
  Tensor zero = *Tensor::scalar<double>(0.0);
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kPad, {v, zero}, PadAttributes{{1}, {2}, {2}})),
            (std::vector<double>{0, 1, 0, 0, 2, 0, 0}));
  Tensor m = values<std::int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8}, {3, 3});
  Tensor s1 = *Tensor::scalar<std::int64_t>(5);   // clamped to 1
  Tensor s2 = *Tensor::scalar<std::int32_t>(-4);  // clamped to 0
  EXPECT_EQ(
      elements_of<std::int32_t>(run_op(CoreSemanticOp::kDynamicSlice, {m, s1, s2}, DynamicSliceAttributes{{2, 2}})),
      (std::vector<std::int32_t>{3, 4, 6, 7}));
  Tensor u = values<std::int32_t>({-1, -2}, {1, 2});
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kDynamicUpdateSlice, {m, u, s2, s1})),
            (std::vector<std::int32_t>{0, -1, -2, 3, 4, 5, 6, 7, 8}));
}

TEST(ReferenceEvaluator, GatherScatter) {
  Tensor x = values<double>({0, 1, 2, 3, 4, 5}, {2, 3});
  const SymbolicShape x_shape{SymbolicExtent(2), SymbolicExtent(3)};
  Tensor idx = values<std::int64_t>({2, 0, 2, 1}, {2, 2});
  Result<Tensor> g = run_op(CoreSemanticOp::kGather, {x, idx}, take_attributes(x_shape, 2, 1));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(std::vector<std::int64_t>(g->shape().begin(), g->shape().end()), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(*g->to_vector<double>(), (std::vector<double>{2, 0, 2, 1, 5, 3, 5, 4}));
  // Out-of-range starts are clamped (StableHLO): 3 -> 2, -1 -> 0.
  Tensor far = values<std::int32_t>({3, -1}, {2});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kGather, {x, far}, take_attributes(x_shape, 1, 1))),
            (std::vector<double>{2, 0, 5, 3}));
  // Point gather x[i, j] with index pairs along axis 1 of the indices.
  Tensor points = values<std::int32_t>({1, 2, 0, 1, 1, 0}, {3, 2});
  EXPECT_EQ(
      elements_of<double>(run_op(CoreSemanticOp::kGather, {x, points},
                                 GatherAttributes{{}, {0, 1}, {0, 1}, 1, {SymbolicExtent(1), SymbolicExtent(1)}})),
      (std::vector<double>{5, 1, 3}));
  // 1x2 windows at starts (row, col), the column start clamped to 1.
  Tensor starts = values<std::int64_t>({0, 0, 1, 2}, {2, 2});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kGather, {x, starts},
                                       GatherAttributes{{1}, {0}, {0, 1}, 1, {SymbolicExtent(1), SymbolicExtent(2)}})),
            (std::vector<double>{0, 1, 4, 5}));

  Tensor dup = values<std::int32_t>({1, 1, 0}, {3});
  Tensor updates = values<double>({10, 20, 30, 40, 50, 60}, {2, 3});
  Tensor base = values<double>({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kScatter, {base, dup, updates},
                                       take_scatter_attributes(2, 1, 1, ScatterCombine::kAdd))),
            (std::vector<double>{30, 31, 2, 63, 94, 5}));
  Tensor one = values<std::int32_t>({2}, {1});
  Tensor upd1 = values<double>({-1, -2}, {2, 1});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kScatter, {base, one, upd1},
                                       take_scatter_attributes(2, 1, 1, ScatterCombine::kReplace))),
            (std::vector<double>{0, 1, -1, 3, 4, -2}));
  // 1x2 windows: (0, 1) fits, (1, 2) does not and is skipped (no clamping).
  Tensor wstarts = values<std::int64_t>({0, 1, 1, 2}, {2, 2});
  Tensor wupd = values<double>({10, 20, 30, 40}, {2, 2});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kScatter, {base, wstarts, wupd},
                                       ScatterAttributes{{1}, {0}, {0, 1}, 1, ScatterCombine::kAdd})),
            (std::vector<double>{0, 11, 22, 3, 4, 5}));
}

TEST(ReferenceEvaluator, Reductions) {
  Tensor x = values<double>({1, 5, 3, 5, 2, 0}, {2, 3});
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kReduceSum, {x}, ReduceAttributes{{1}})),
            (std::vector<double>{9, 7}));
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kReduceProd, {x}, ReduceAttributes{{0, 1}})),
            (std::vector<double>{0}));
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kReduceMax, {x}, ReduceAttributes{{0}})),
            (std::vector<double>{5, 5, 3}));
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kArgmax, {x}, ArgReduceAttributes{1})),
            (std::vector<std::int64_t>{1, 0}));  // first extreme
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kArgmin, {x}, ArgReduceAttributes{0})),
            (std::vector<std::int64_t>{0, 1, 1}));
  Tensor n = values<float>({1, std::nanf(""), 7, std::nanf("")}, {4});
  EXPECT_EQ(elements_of<std::int64_t>(run_op(CoreSemanticOp::kArgmax, {n}, ArgReduceAttributes{0}))[0], 1);
  EXPECT_TRUE(std::isnan(elements_of<float>(run_op(CoreSemanticOp::kReduceMin, {n}, ReduceAttributes{{0}}))[0]));
  // Empty reductions give the identities.
  Tensor empty = *Tensor::zeros({2, 0}, DType::kInt32);
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kReduceMax, {empty}, ReduceAttributes{{1}})),
            (std::vector<std::int32_t>(2, std::numeric_limits<std::int32_t>::lowest())));
  EXPECT_EQ(elements_of<std::int32_t>(run_op(CoreSemanticOp::kReduceProd, {empty}, ReduceAttributes{{1}})),
            (std::vector<std::int32_t>{1, 1}));
  Tensor fe = *Tensor::zeros({0}, DType::kFloat64);
  EXPECT_EQ(elements_of<double>(run_op(CoreSemanticOp::kReduceMin, {fe}, ReduceAttributes{{0}}))[0],
            std::numeric_limits<double>::infinity());
}

TEST(ReferenceEvaluator, DotGeneralBatchAndContract) {
  // lhs[b, i, k], rhs[k, b, j] -> [b, i, j].
  Tensor lhs = values<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Tensor rhs = values<std::int64_t>({1, 0, 2, 1, 1, 1, 0, 1}, {2, 2, 2});
  Result<Tensor> y = run_op(CoreSemanticOp::kDotGeneral, {lhs, rhs}, DotGeneralAttributes{{0}, {1}, {2}, {0}});
  // b=0: A=[[1,2],[3,4]], B[k, j] = rhs[k, 0, j] = [[1,0],[1,1]] -> [[3,2],[7,4]]
  // b=1: A=[[5,6],[7,8]], B = rhs[k, 1, j] = [[2,1],[0,1]] -> [[10,11],[14,15]]
  EXPECT_EQ(elements_of<std::int64_t>(y), (std::vector<std::int64_t>{3, 2, 7, 4, 10, 11, 14, 15}));
}

constexpr DType kAllDTypes[] = {DType::kBool,    DType::kInt32,     DType::kInt64,     DType::kFloat32,
                                DType::kFloat64, DType::kComplex64, DType::kComplex128};

/// Evaluates one op on random [2, 3] operands of `dtype` (integers in
/// [1, 9], so no division by zero) and checks the result's metadata.
void expect_evaluates(CoreSemanticOp op, DType dtype, int arity, CoreAttributes attributes = NoAttributes{}) {
  SCOPED_TRACE(fmt::format("{} on {}", to_string(op), dtype));
  ProgramBuilder b;
  std::vector<ProgramValue> operands;
  std::vector<Tensor> inputs;
  RandomOptions positive;
  positive.int_low = 1;
  for (int i = 0; i < arity; ++i) {
    operands.push_back(*b.add_input(dtype, {2, 3}));
    inputs.push_back(*random_tensor(dtype, {2, 3}, static_cast<std::uint64_t>(i + 1), positive));
  }
  Result<ProgramValue> y = b.emit(op, operands, std::move(attributes));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  FrozenProgram f = *b.freeze({*y});
  Result<std::vector<Tensor>> out = evaluate_reference(*f.program, inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const ValueMetadata& m = f.program->metadata(f.program->outputs()[0]);
  EXPECT_EQ((*out)[0].dtype(), m.dtype);
  EXPECT_EQ(symbolic_shape((*out)[0].shape()), m.shape);
}

// Every elementwise, compare, convert, reduction, along-axis and dot_general
// rule runs on every dtype its DTypeClass admits (no "no reference rule" errors).
TEST(ReferenceEvaluator, EveryOpOnEveryAdmittedDType) {
  int evaluated = 0;
  for (DType dtype : kAllDTypes) {
    for (int o = 0; o < kNumCoreOps; ++o) {
      const auto op = static_cast<CoreSemanticOp>(o);
      const CoreOpInfo& info = core_op_info(op);
      if (!dtype_in_class(dtype, info.operand_dtypes)) continue;
      const bool elementwise = info.attributes_index == 0 && info.min_operands == info.max_operands &&
                               info.min_operands >= 1 && info.min_operands <= 2;
      if (elementwise) {
        expect_evaluates(op, dtype, info.min_operands);
      } else if (op == CoreSemanticOp::kReduceSum || op == CoreSemanticOp::kReduceProd ||
                 op == CoreSemanticOp::kReduceMax || op == CoreSemanticOp::kReduceMin) {
        expect_evaluates(op, dtype, 1, ReduceAttributes{{1}});
      } else if (op == CoreSemanticOp::kArgmax || op == CoreSemanticOp::kArgmin) {
        expect_evaluates(op, dtype, 1, ArgReduceAttributes{0});
      } else if (op == CoreSemanticOp::kDotGeneral) {
        expect_evaluates(op, dtype, 2, DotGeneralAttributes{{0}, {0}, {1}, {1}});
      } else if (op == CoreSemanticOp::kClamp) {
        expect_evaluates(op, dtype, 3);
      } else if (op == CoreSemanticOp::kCumsum || op == CoreSemanticOp::kCumprod) {
        expect_evaluates(op, dtype, 1, CumulativeAttributes{1, true, false});
      } else if (op == CoreSemanticOp::kSort || op == CoreSemanticOp::kArgsort) {
        expect_evaluates(op, dtype, 1, SortAttributes{0, true});
      } else if (op == CoreSemanticOp::kCompare) {
        const bool ordered = !is_complex(dtype);
        for (auto d : {ComparisonDirection::kEq, ComparisonDirection::kNe, ComparisonDirection::kLt,
                       ComparisonDirection::kLe, ComparisonDirection::kGt, ComparisonDirection::kGe}) {
          if (ordered || d == ComparisonDirection::kEq || d == ComparisonDirection::kNe) {
            expect_evaluates(op, dtype, 2, CompareAttributes{d});
          }
        }
      } else if (op == CoreSemanticOp::kConvert) {
        for (DType to : kAllDTypes) expect_evaluates(op, dtype, 1, ConvertAttributes{to});
      } else {
        continue;
      }
      ++evaluated;
    }
  }
  EXPECT_GT(evaluated, 150);
}

std::string numpy_array(const Tensor& t) {
  std::vector<double> v = *t.to_vector<double>();
  return fmt::format("np.array([{}]).reshape([{}])", fmt::join(v, ","), fmt::join(t.shape(), ","));
}

std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t used = 0;
    try {
      out.push_back(std::stod(text.substr(pos), &used));
    } catch (...) {
      break;
    }
    pos += used;
  }
  return out;
}

// numpy as an independent reference for the loops most likely to hide an
// indexing slip: dot_general with batch axes, multi-axis reduction,
// transpose, gather (take), scatter-add (add.at), pad.
TEST(ReferenceEvaluator, AgreesWithNumpy) {
  Tensor lhs = *random_tensor(DType::kFloat64, {3, 4, 5, 2}, 1);  // [b, i, k1, k2]
  Tensor rhs = *random_tensor(DType::kFloat64, {2, 6, 3, 5}, 2);  // [k2, j, b, k1]
  Tensor x = *random_tensor(DType::kFloat64, {3, 4, 5}, 3);
  Tensor idx = *random_integers(DType::kInt64, {2, 3}, 4, 0, 3);
  Tensor upd = *random_tensor(DType::kFloat64, {3, 2, 3, 5}, 5);
  Tensor pad_value = *Tensor::scalar<double>(0.25);
  Tensor pairs = *random_integers(DType::kInt64, {4, 2}, 6, 0, 2);  // (i0, i2) pairs, in range
  Tensor pupd = *random_tensor(DType::kFloat64, {4, 4}, 7);

  ProgramBuilder b;
  ProgramValue l = *b.add_input(DType::kFloat64, {3, 4, 5, 2});
  ProgramValue r = *b.add_input(DType::kFloat64, {2, 6, 3, 5});
  ProgramValue xv = *b.add_input(DType::kFloat64, {3, 4, 5});
  ProgramValue iv = *b.add_input(DType::kInt64, {2, 3});
  ProgramValue uv = *b.add_input(DType::kFloat64, {3, 2, 3, 5});
  ProgramValue pv = *b.add_input(DType::kFloat64, {});
  ProgramValue pairs_v = *b.add_input(DType::kInt64, {4, 2});
  ProgramValue pupd_v = *b.add_input(DType::kFloat64, {4, 4});
  ProgramValue dot = *b.emit(CoreSemanticOp::kDotGeneral, {l, r}, DotGeneralAttributes{{0}, {2}, {2, 3}, {3, 0}});
  ProgramValue red = *b.emit(CoreSemanticOp::kReduceSum, {xv}, ReduceAttributes{{0, 2}});
  ProgramValue tr = *b.emit(CoreSemanticOp::kTranspose, {xv}, TransposeAttributes{{2, 0, 1}});
  const SymbolicShape x_shape{SymbolicExtent(3), SymbolicExtent(4), SymbolicExtent(5)};
  ProgramValue ga = *b.emit(CoreSemanticOp::kGather, {xv, iv}, take_attributes(x_shape, 2, 1));
  ProgramValue sc =
      *b.emit(CoreSemanticOp::kScatter, {xv, iv, uv}, take_scatter_attributes(3, 2, 1, ScatterCombine::kAdd));
  ProgramValue pd = *b.emit(CoreSemanticOp::kPad, {xv, pv}, PadAttributes{{1, 0, 2}, {0, 2, 1}, {0, 0, 0}});
  // Fancy indexing x[i0, :, i2] and np.add.at on the same positions.
  const SymbolicShape one_four_one{SymbolicExtent(1), SymbolicExtent(4), SymbolicExtent(1)};
  ProgramValue fancy =
      *b.emit(CoreSemanticOp::kGather, {xv, pairs_v}, GatherAttributes{{1}, {0, 2}, {0, 2}, 1, one_four_one});
  ProgramValue fancy_add = *b.emit(CoreSemanticOp::kScatter, {xv, pairs_v, pupd_v},
                                   ScatterAttributes{{1}, {0, 2}, {0, 2}, 1, ScatterCombine::kAdd});
  FrozenProgram f = *b.freeze({dot, red, tr, ga, sc, pd, fancy, fancy_add});
  std::vector<Tensor> ours = *evaluate_reference(*f.program, {lhs, rhs, x, idx, upd, pad_value, pairs, pupd});

  const std::string script = fmt::format(
      "import numpy as np\n"
      "l={}\nr={}\nx={}\nidx={}.astype(np.int64)\nupd={}\n"
      "dot=np.einsum('bikq,qjbk->bij', l, r)\n"
      "red=x.sum(axis=(0,2))\n"
      "tr=np.transpose(x,(2,0,1))\n"
      "ga=np.take(x, idx, axis=1)\n"
      "sc=x.copy()\n"
      "for p in range(3):\n"
      "  for q0 in range(2):\n"
      "    for q1 in range(3):\n"
      "      sc[p, idx[q0,q1], :] += upd[p, q0, q1, :]\n"
      "pd=np.pad(x, ((1,0),(0,2),(2,1)), constant_values=0.25)\n"
      "pairs={}.astype(np.int64)\npupd={}\n"
      "fancy=x[pairs[:,0], :, pairs[:,1]]\n"
      "fancy_add=x.copy()\nnp.add.at(fancy_add, (pairs[:,0], slice(None), pairs[:,1]), pupd)\n"
      "for a in (dot, red, tr, ga, sc, pd, fancy, fancy_add): print(' '.join(repr(float(v)) for v in a.ravel()))\n",
      numpy_array(lhs), numpy_array(rhs), numpy_array(x),
      numpy_array(*run_op(CoreSemanticOp::kConvert, {idx}, ConvertAttributes{DType::kFloat64})), numpy_array(upd),
      numpy_array(*run_op(CoreSemanticOp::kConvert, {pairs}, ConvertAttributes{DType::kFloat64})), numpy_array(pupd));
  std::optional<std::string> out = run_python(script);
  if (!out) GTEST_SKIP() << "numpy is not available";
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < out->size()) {
    std::size_t end = out->find('\n', start);
    if (end == std::string::npos) end = out->size();
    lines.push_back(out->substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), ours.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    std::vector<double> expected = parse_numbers(lines[i]);
    Tensor e = *Tensor::from_values<double>(std::span<const double>(expected), ours[i].shape());
    EXPECT_TRUE(check_allclose(ours[i], e).ok()) << "output " << i << ": " << check_allclose(ours[i], e).message();
  }
}

TEST(ReferenceEvaluator, ExtensionsEvaluateThroughTheirLowering) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {2, 3});
  ProgramValue w = *b.add_input(DType::kFloat64, {3, 2});
  auto ext = *b.emit_extension(std::make_shared<program::testing::MatmulExtension>(), {x, w});
  FrozenProgram f = *b.freeze({ext[0]});
  Tensor xt = values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor wt = values<double>({1, 0, 0, 1, 1, 1}, {3, 2});
  std::vector<Tensor> out = *evaluate_reference(*f.program, {xt, wt});
  EXPECT_EQ(*out[0].to_vector<double>(), (std::vector<double>{4, 5, 10, 11}));

  // NeedsSpecialization is answered by widening.
  ProgramBuilder b2;
  ProgramValue x2 = *b2.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3});
  ProgramValue w2 = *b2.add_input(DType::kFloat64, {3, 2});
  auto ext2 = *b2.emit_extension(
      std::make_shared<program::testing::MatmulExtension>(program::testing::MatmulLowering::kNeedsConcreteDims),
      {x2, w2});
  FrozenProgram f2 = *b2.freeze({ext2[0]});
  std::vector<Tensor> out2 = *evaluate_reference(*f2.program, {xt, wt});
  EXPECT_EQ(*out2[0].to_vector<double>(), (std::vector<double>{4, 5, 10, 11}));

  // No lowering: kUnsupported naming the node.
  ProgramBuilder b3;
  ProgramValue x3 = *b3.add_input(DType::kFloat64, {2, 3});
  ProgramValue w3 = *b3.add_input(DType::kFloat64, {3, 2});
  auto ext3 = *b3.emit_extension(
      std::make_shared<program::testing::MatmulExtension>(program::testing::MatmulLowering::kUnsupported), {x3, w3});
  FrozenProgram f3 = *b3.freeze({ext3[0]});
  Result<std::vector<Tensor>> r3 = evaluate_reference(*f3.program, {xt, wt});
  EXPECT_EQ(r3.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(std::string(r3.status().message()), HasSubstr("test.matmul"));
}

TEST(ReferenceEvaluator, BindingsSymbolicShapesAndInputErrors) {
  Tensor w = values<double>({1, 2, 3}, {3});
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "x");
  ProgramValue wv = *b.capture(w, "w");
  ProgramValue wb =
      *b.emit(CoreSemanticOp::kBroadcastInDim, {wv}, BroadcastInDimAttributes{{*b.metadata(x)->shape.begin(), 3}, {1}});
  ProgramValue y = *b.emit(CoreSemanticOp::kMul, {x, wb});
  FrozenProgram f = *b.freeze({y});
  for (std::int64_t rows : {1, 4}) {
    Tensor xt = *random_tensor(DType::kFloat64, {rows, 3}, 9);
    std::vector<Tensor> out = *evaluate_reference(*f.program, {xt}, &f.bindings);
    std::vector<double> xs = *xt.to_vector<double>();
    std::vector<double> ys = *out[0].to_vector<double>();
    ASSERT_EQ(ys.size(), static_cast<std::size_t>(rows * 3));
    for (std::size_t i = 0; i < ys.size(); ++i) EXPECT_EQ(ys[i], xs[i] * static_cast<double>(i % 3 + 1));
  }
  // A strided (transposed) input reads by logical index.
  Tensor xt = *random_tensor(DType::kFloat64, {3, 2}, 9);
  std::vector<Tensor> strided = *evaluate_reference(*f.program, {*xt.transpose(0, 1)}, &f.bindings);
  EXPECT_EQ((*strided[0].to_vector<double>())[1], (*xt.to_vector<double>())[2] * 2.0);

  Result<std::vector<Tensor>> wrong_count = evaluate_reference(*f.program, {});
  EXPECT_EQ(wrong_count.status().code(), ErrorCode::kInvalidArgument);
  Result<std::vector<Tensor>> wrong_shape =
      evaluate_reference(*f.program, {*random_tensor(DType::kFloat64, {2, 4}, 1)}, &f.bindings);
  EXPECT_EQ(wrong_shape.status().code(), ErrorCode::kShapeGuardFailed);
  Result<std::vector<Tensor>> wrong_dtype =
      evaluate_reference(*f.program, {*random_tensor(DType::kFloat32, {2, 3}, 1)}, &f.bindings);
  EXPECT_EQ(wrong_dtype.status().code(), ErrorCode::kDTypeMismatch);
}

}  // namespace
}  // namespace tenferro::testing
