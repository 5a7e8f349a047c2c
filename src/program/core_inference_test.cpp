#include "tenferro/program/core_inference.h"

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

namespace tenferro::program {
namespace {

ValueMetadata f64(std::initializer_list<SymbolicExtent> shape) {
  return ValueMetadata{DType::kFloat64, SymbolicShape(shape.begin(), shape.end())};
}
ValueMetadata of(DType d, std::initializer_list<SymbolicExtent> shape) {
  return ValueMetadata{d, SymbolicShape(shape.begin(), shape.end())};
}
SymbolicExtent sym(std::uint32_t i, std::optional<std::int64_t> bound = std::nullopt) {
  return SymbolicExtent::symbol(i, bound);
}

struct Inferred {
  Result<ValueMetadata> result;
  std::vector<ShapeGuard> guards;
};

Inferred infer(CoreSemanticOp op, std::vector<ValueMetadata> operands, CoreAttributes attributes = NoAttributes{}) {
  Inferred out{ValueMetadata{}, {}};
  ShapeConstraints c("node", &out.guards);
  out.result = infer_core_metadata(op, attributes, operands, c);
  return out;
}

ErrorCode code_of(const Inferred& i) { return i.result.status().code(); }

TEST(CoreOpTableTest, NamesAreUniqueAndParse) {
  std::set<std::string_view> names;
  for (int i = 0; i < kNumCoreOps; ++i) {
    auto op = static_cast<CoreSemanticOp>(i);
    EXPECT_TRUE(names.insert(to_string(op)).second) << to_string(op);
    EXPECT_EQ(parse_core_op(to_string(op)), op);
    const CoreOpInfo& info = core_op_info(op);
    EXPECT_LT(info.attributes_index, std::variant_size_v<CoreAttributes>);
    EXPECT_EQ(info.effect, EffectClass::kPure);
  }
  EXPECT_EQ(parse_core_op("no_such_op"), std::nullopt);
  static_assert(std::is_same_v<CoreOpAttributes<CoreSemanticOp::kTranspose>, TransposeAttributes>);
  static_assert(std::is_same_v<CoreOpAttributes<CoreSemanticOp::kAdd>, NoAttributes>);
  static_assert(std::is_same_v<std::variant_alternative_t<0, CoreAttributes>, NoAttributes>);
}

// Every row of core_ops.def is documented in docs/core_ops.md.
TEST(CoreOpTableTest, MatchesCoreOpsDocument) {
  std::ifstream doc(std::string(TENFERRO_SOURCE_DIR) + "/docs/core_ops.md");
  ASSERT_TRUE(doc.good());
  std::stringstream text;
  text << doc.rdbuf();
  const std::string content = text.str();
  for (int i = 0; i < kNumCoreOps; ++i) {
    const std::string name(to_string(static_cast<CoreSemanticOp>(i)));
    const bool listed =
        content.find("| " + name) != std::string::npos || content.find(", " + name) != std::string::npos ||
        content.find("`" + name + "(") != std::string::npos || content.find("`" + name + "`") != std::string::npos ||
        content.find(name + "(") != std::string::npos;
    EXPECT_TRUE(listed) << name << " is in core_ops.def but not in docs/core_ops.md";
  }
}

// The family and movement columns agree with each other and with the alias
// class, and every plain elementwise row is accepted by the elementwise
// rule on same-shape operands (a row given the wrong family fails here).
TEST(CoreOpTableTest, FamilyColumnsAreConsistent) {
  for (int i = 0; i < kNumCoreOps; ++i) {
    const auto op = static_cast<CoreSemanticOp>(i);
    const CoreOpInfo& info = core_op_info(op);
    SCOPED_TRACE(to_string(op));
    EXPECT_EQ(info.movement != MovementClass::kNone, info.family == CoreOpFamily::kDataMovement);
    EXPECT_EQ(info.alias == AliasClass::kViewOfOperand0, info.movement == MovementClass::kView);
    if (info.family == CoreOpFamily::kCreation) {
      EXPECT_EQ(info.min_operands, 0);
    }
    if (info.family != CoreOpFamily::kElementwise || info.attributes_index != 0 ||
        info.min_operands != info.max_operands || info.max_operands > 2) {
      continue;
    }
    // A plain elementwise row: same-shape operands of its first dtype.
    for (int k = 0; k < kNumDTypes; ++k) {
      const auto d = static_cast<DType>(k);
      if (!dtype_in_class(d, info.operand_dtypes)) continue;
      std::vector<ValueMetadata> operands(static_cast<std::size_t>(info.max_operands), of(d, {2, 3}));
      auto r = infer(op, operands);
      ASSERT_TRUE(r.result.ok()) << r.result.status().to_string();
      EXPECT_EQ(r.result->shape, of(d, {2, 3}).shape);
      break;
    }
  }
}

TEST(CoreInferenceTest, RoundingModuloAndBitwiseDTypes) {
  EXPECT_EQ(infer(CoreSemanticOp::kRound, {f64({2})}).result->dtype, DType::kFloat64);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kFloor, {of(DType::kInt32, {2})})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(CoreSemanticOp::kIsNan, {of(DType::kComplex64, {2})}).result->dtype, DType::kBool);
  EXPECT_EQ(infer(CoreSemanticOp::kIsFinite, {of(DType::kFloat32, {2})}).result->dtype, DType::kBool);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kIsFinite, {of(DType::kInt64, {2})})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(CoreSemanticOp::kRemainder, {of(DType::kInt64, {2}), of(DType::kInt64, {2})}).result->dtype,
            DType::kInt64);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kFmod, {of(DType::kComplex128, {2}), of(DType::kComplex128, {2})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(CoreSemanticOp::kXor, {of(DType::kInt32, {2}), of(DType::kInt32, {2})}).result->dtype, DType::kInt32);
  EXPECT_EQ(infer(CoreSemanticOp::kNot, {of(DType::kInt64, {2})}).result->dtype, DType::kInt64);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAnd, {f64({2}), f64({2})})), ErrorCode::kDTypeMismatch);
  const Inferred shift = infer(CoreSemanticOp::kShiftLeft, {of(DType::kBool, {2}), of(DType::kBool, {2})});
  EXPECT_EQ(code_of(shift), ErrorCode::kDTypeMismatch);
  EXPECT_NE(shift.result.status().message().find("an integer dtype"), std::string::npos)
      << shift.result.status().to_string();
}

TEST(CoreInferenceTest, ElementwiseDTypesAndShapes) {
  auto r = infer(CoreSemanticOp::kAdd, {f64({2, 3}), f64({2, 3})});
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(*r.result, f64({2, 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {f64({2, 3}), f64({3, 2})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {f64({2}), f64({2, 1})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {f64({2}), of(DType::kFloat32, {2})})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {of(DType::kBool, {2}), of(DType::kBool, {2})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kExp, {of(DType::kInt32, {2})})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {f64({2})})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kAdd, {f64({2}), f64({2})}, TransposeAttributes{{0}})),
            ErrorCode::kInvalidArgument);
  // Result dtype rules.
  EXPECT_EQ(infer(CoreSemanticOp::kAbs, {of(DType::kComplex128, {2})}).result->dtype, DType::kFloat64);
  EXPECT_EQ(infer(CoreSemanticOp::kImag, {of(DType::kComplex64, {2})}).result->dtype, DType::kFloat32);
  EXPECT_EQ(infer(CoreSemanticOp::kReal, {f64({2})}).result->dtype, DType::kFloat64);
  EXPECT_EQ(infer(CoreSemanticOp::kComplex, {of(DType::kFloat32, {2}), of(DType::kFloat32, {2})}).result->dtype,
            DType::kComplex64);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kComplex, {of(DType::kComplex64, {2}), of(DType::kComplex64, {2})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(
      infer(CoreSemanticOp::kCompare, {f64({2}), f64({2})}, CompareAttributes{ComparisonDirection::kLt}).result->dtype,
      DType::kBool);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kCompare, {of(DType::kComplex128, {2}), of(DType::kComplex128, {2})},
                          CompareAttributes{ComparisonDirection::kLt})),
            ErrorCode::kDTypeMismatch);
  EXPECT_TRUE(infer(CoreSemanticOp::kCompare, {of(DType::kComplex128, {2}), of(DType::kComplex128, {2})},
                    CompareAttributes{ComparisonDirection::kEq})
                  .result.ok());
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kMax, {of(DType::kComplex64, {1}), of(DType::kComplex64, {1})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(CoreSemanticOp::kNot, {of(DType::kBool, {4})}).result->dtype, DType::kBool);
  EXPECT_EQ(infer(CoreSemanticOp::kConvert, {f64({2})}, ConvertAttributes{DType::kInt32}).result->dtype, DType::kInt32);
}

TEST(CoreInferenceTest, SelectNeedsBoolPredicate) {
  auto ok = infer(CoreSemanticOp::kSelect, {of(DType::kBool, {3}), f64({3}), f64({3})});
  ASSERT_TRUE(ok.result.ok());
  EXPECT_EQ(*ok.result, f64({3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSelect, {f64({3}), f64({3}), f64({3})})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSelect, {of(DType::kBool, {4}), f64({3}), f64({3})})),
            ErrorCode::kShapeMismatch);
}

TEST(CoreInferenceTest, ClampNeedsOneDTypeAndShape) {
  auto ok = infer(CoreSemanticOp::kClamp, {f64({2, 3}), f64({2, 3}), f64({2, 3})});
  ASSERT_TRUE(ok.result.ok());
  EXPECT_EQ(*ok.result, f64({2, 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kClamp, {of(DType::kFloat32, {3}), f64({3}), f64({3})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kClamp, {f64({}), f64({3}), f64({3})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kClamp,
                          {of(DType::kComplex128, {3}), of(DType::kComplex128, {3}), of(DType::kComplex128, {3})})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kClamp, {f64({3}), f64({3})})), ErrorCode::kInvalidArgument);
}

TEST(CoreInferenceTest, AlongAxisKeepsTheShape) {
  auto sum = infer(CoreSemanticOp::kCumsum, {of(DType::kComplex64, {sym(0), 4})}, CumulativeAttributes{1, true, true});
  ASSERT_TRUE(sum.result.ok());
  EXPECT_EQ(*sum.result, of(DType::kComplex64, {sym(0), 4}));
  auto order = infer(CoreSemanticOp::kArgsort, {f64({3, 5})}, SortAttributes{0, true});
  ASSERT_TRUE(order.result.ok());
  EXPECT_EQ(*order.result, of(DType::kInt64, {3, 5}));
  EXPECT_EQ(infer(CoreSemanticOp::kSort, {of(DType::kInt32, {3})}, SortAttributes{}).result->dtype, DType::kInt32);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kCumprod, {f64({3})}, CumulativeAttributes{1})), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSort, {f64({})}, SortAttributes{})), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSort, {of(DType::kComplex128, {3})}, SortAttributes{})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kCumsum, {of(DType::kBool, {3})}, CumulativeAttributes{})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSort, {f64({3})}, CumulativeAttributes{})), ErrorCode::kInvalidArgument);
}

TEST(CoreInferenceTest, RandomTakesAFloatingDTypeAndItsShape) {
  RandomAttributes a{DType::kFloat32, SymbolicShape{sym(0), 3}, 1, 2, RandomDistribution::kNormal};
  auto ok = infer(CoreSemanticOp::kRngPhilox, {}, a);
  ASSERT_TRUE(ok.result.ok()) << ok.result.status().to_string();
  EXPECT_EQ(*ok.result, of(DType::kFloat32, {sym(0), 3}));
  a.dtype = DType::kInt32;
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kRngPhilox, {}, a)), ErrorCode::kDTypeMismatch);
  a.dtype = DType::kFloat64;
  a.shape = SymbolicShape{-2};
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kRngPhilox, {}, a)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kRngPhilox, {f64({2})}, a)), ErrorCode::kInvalidArgument);
}

TEST(CoreInferenceTest, SymbolicElementwiseAddsGuardAndPrefersExact) {
  auto r = infer(CoreSemanticOp::kMul, {f64({sym(0), 3}), f64({4, sym(1)})});
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(*r.result, f64({4, 3}));
  EXPECT_EQ(r.guards.size(), 2u);  // s0 == 4, s1 == 3
  auto same = infer(CoreSemanticOp::kMul, {f64({sym(0)}), f64({sym(0)})});
  EXPECT_TRUE(same.guards.empty());
  // A bounded input stays bounded through unary ops.
  auto bounded = infer(CoreSemanticOp::kNeg, {f64({sym(0, 16)})});
  EXPECT_EQ(bounded.result->shape[0].kind(), ExtentKind::kBounded);
  EXPECT_EQ(bounded.result->shape[0].upper_bound(), 16);
}

TEST(CoreInferenceTest, CreationOps) {
  auto lit = Literal::from_values<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_TRUE(lit.ok());
  EXPECT_EQ(*infer(CoreSemanticOp::kConstant, {}, ConstantAttributes{*lit}).result, of(DType::kInt32, {2, 3}));
  auto iota = infer(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kInt64, {sym(0), 3}, 1});
  EXPECT_EQ(*iota.result, of(DType::kInt64, {sym(0), 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kInt64, {3}, 1})),
            ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kBool, {3}, 0})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kIota, {}, IotaAttributes{DType::kInt64, {-1}, 0})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kIota, {f64({1})}, IotaAttributes{DType::kInt64, {3}, 0})),
            ErrorCode::kInvalidArgument);
}

TEST(CoreInferenceTest, ShapeOps) {
  // broadcast_in_dim
  EXPECT_EQ(*infer(CoreSemanticOp::kBroadcastInDim, {f64({3, 1})}, BroadcastInDimAttributes{{2, 3, 5}, {1, 2}}).result,
            f64({2, 3, 5}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kBroadcastInDim, {f64({3, 2})}, BroadcastInDimAttributes{{2, 3, 5}, {1, 2}})),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kBroadcastInDim, {f64({3, 1})}, BroadcastInDimAttributes{{3, 5}, {1, 0}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kBroadcastInDim, {f64({3})}, BroadcastInDimAttributes{{3}, {1}})),
            ErrorCode::kAxisOutOfRange);
  // reshape
  EXPECT_EQ(*infer(CoreSemanticOp::kReshape, {f64({2, 3})}, ReshapeAttributes{{3, 2}}).result, f64({3, 2}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kReshape, {f64({2, 3})}, ReshapeAttributes{{4, 2}})),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kReshape, {f64({std::int64_t{1} << 40, std::int64_t{1} << 40})},
                          ReshapeAttributes{{1}})),
            ErrorCode::kSizeOverflow);
  auto sym_reshape = infer(CoreSemanticOp::kReshape, {f64({sym(0), sym(1)})}, ReshapeAttributes{{sym(0) * sym(1)}});
  ASSERT_TRUE(sym_reshape.result.ok());
  EXPECT_TRUE(sym_reshape.guards.empty()) << "n*m elements reshape to [n*m] provably";
  // transpose
  EXPECT_EQ(*infer(CoreSemanticOp::kTranspose, {f64({2, 3, 4})}, TransposeAttributes{{2, 0, 1}}).result,
            f64({4, 2, 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kTranspose, {f64({2, 3})}, TransposeAttributes{{0, 0}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kTranspose, {f64({2, 3})}, TransposeAttributes{{0}})),
            ErrorCode::kInvalidArgument);
  // slice
  EXPECT_EQ(*infer(CoreSemanticOp::kSlice, {f64({10, 4})}, SliceAttributes{{1, 0}, {8, 4}, {3, 1}}).result,
            f64({3, 4}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSlice, {f64({10})}, SliceAttributes{{0}, {11}, {1}})),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSlice, {f64({10})}, SliceAttributes{{5}, {4}, {1}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kSlice, {f64({10})}, SliceAttributes{{0}, {4}, {0}})),
            ErrorCode::kInvalidArgument);
  // reverse
  EXPECT_EQ(*infer(CoreSemanticOp::kReverse, {f64({2, 3})}, ReverseAttributes{{1}}).result, f64({2, 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kReverse, {f64({2, 3})}, ReverseAttributes{{2}})),
            ErrorCode::kAxisOutOfRange);
  // concatenate: symbolic extents add up
  auto cat = infer(CoreSemanticOp::kConcatenate, {f64({sym(0, 4), 3}), f64({2, 3}), f64({sym(0, 4), 3})},
                   ConcatenateAttributes{0});
  ASSERT_TRUE(cat.result.ok());
  EXPECT_EQ(cat.result->shape[0], sym(0, 4) * 2 + 2);
  EXPECT_EQ(cat.result->shape[0].upper_bound(), 10);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kConcatenate, {f64({2, 3}), f64({2, 4})}, ConcatenateAttributes{0})),
            ErrorCode::kShapeMismatch);
  // pad
  auto pad = infer(CoreSemanticOp::kPad, {f64({4, 3}), f64({})}, PadAttributes{{1, 0}, {2, 0}, {0, 2}});
  EXPECT_EQ(*pad.result, f64({7, 7}));
  auto pad_empty = infer(CoreSemanticOp::kPad, {f64({0}), f64({})}, PadAttributes{{1}, {1}, {3}});
  EXPECT_EQ(*pad_empty.result, f64({2}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kPad, {f64({4}), f64({1})}, PadAttributes{{1}, {1}, {0}})),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kPad, {f64({4}), f64({})}, PadAttributes{{-1}, {1}, {0}})),
            ErrorCode::kInvalidArgument);
}

TEST(CoreInferenceTest, DynamicSlicingGatherScatter) {
  const ValueMetadata i64s = of(DType::kInt64, {});
  EXPECT_EQ(*infer(CoreSemanticOp::kDynamicSlice, {f64({5, 6}), i64s, i64s}, DynamicSliceAttributes{{2, 3}}).result,
            f64({2, 3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDynamicSlice, {f64({5, 6}), i64s}, DynamicSliceAttributes{{2, 3}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDynamicSlice, {f64({5, 6}), i64s, f64({})}, DynamicSliceAttributes{{2, 3}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDynamicSlice, {f64({5, 6}), i64s, i64s}, DynamicSliceAttributes{{6, 3}})),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(*infer(CoreSemanticOp::kDynamicUpdateSlice, {f64({5, 6}), f64({2, 2}), i64s, i64s}).result, f64({5, 6}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDynamicUpdateSlice, {f64({5, 6}), f64({6, 2}), i64s, i64s})),
            ErrorCode::kShapeMismatch);
  // take-style gather: x[:axis] + indices.shape + x[axis+1:]
  EXPECT_EQ(*infer(CoreSemanticOp::kGather, {f64({4, 5, 6}), of(DType::kInt32, {2, 7})},
                   take_attributes(SymbolicShape{4, 5, 6}, 2, 1))
                 .result,
            f64({4, 2, 7, 6}));
  EXPECT_EQ(
      code_of(infer(CoreSemanticOp::kGather, {f64({4, 5}), f64({2})}, take_attributes(SymbolicShape{4, 5}, 1, 1))),
      ErrorCode::kDTypeMismatch);
  EXPECT_EQ(*infer(CoreSemanticOp::kScatter, {f64({4, 5}), of(DType::kInt64, {3}), f64({4, 3})},
                   take_scatter_attributes(2, 1, 1, ScatterCombine::kAdd))
                 .result,
            f64({4, 5}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kScatter, {f64({4, 5}), of(DType::kInt64, {3}), f64({4, 4})},
                          take_scatter_attributes(2, 1, 1, ScatterCombine::kAdd))),
            ErrorCode::kShapeMismatch);
}

// Gather result shapes follow StableHLO: batch axes (indices minus
// index_vector_dim) fill the result axes not in offset_dims, in order.
TEST(CoreInferenceTest, GeneralGatherShapes) {
  const ValueMetadata x = f64({4, 5, 6});
  // Windows (2, 3, 6) at (i, j) starts, index vectors on indices axis 1.
  EXPECT_EQ(*infer(CoreSemanticOp::kGather, {x, of(DType::kInt64, {7, 2})},
                   GatherAttributes{{1, 2, 3}, {}, {0, 1}, 1, {2, 3, 6}})
                 .result,
            f64({7, 2, 3, 6}));
  // Offset dims interleaved with batch axes; the index vector first.
  EXPECT_EQ(*infer(CoreSemanticOp::kGather, {x, of(DType::kInt32, {2, 7, 8})},
                   GatherAttributes{{1, 3}, {1}, {1, 0}, 0, {2, 1, 3}})
                 .result,
            f64({7, 2, 8, 3}));
  // Point gather: every axis collapsed, index vectors of length 3.
  EXPECT_EQ(*infer(CoreSemanticOp::kGather, {x, of(DType::kInt64, {9, 3})},
                   GatherAttributes{{}, {0, 1, 2}, {0, 1, 2}, 1, {1, 1, 1}})
                 .result,
            f64({9}));
  // Symbolic operand extents: the slice size is guarded against the extent.
  auto symbolic = infer(CoreSemanticOp::kGather, {f64({sym(0), 5}), of(DType::kInt64, {3})},
                        GatherAttributes{{1}, {1}, {1}, 1, {4, 1}});
  ASSERT_TRUE(symbolic.result.ok()) << symbolic.result.status().to_string();
  EXPECT_EQ(*symbolic.result, f64({3, 4}));
  EXPECT_EQ(symbolic.guards.size(), 1u);
  // A symbolic slice size (a take of a symbolic operand).
  auto take = infer(CoreSemanticOp::kGather, {f64({sym(0), sym(1)}), of(DType::kInt64, {3})},
                    take_attributes(SymbolicShape{sym(0), sym(1)}, 1, 1));
  ASSERT_TRUE(take.result.ok()) << take.result.status().to_string();
  EXPECT_EQ(*take.result, f64({sym(0), 3}));
}

// Every malformed gather/scatter is a typed error whose message names the
// attribute.
TEST(CoreInferenceTest, GeneralGatherScatterBadAttributes) {
  const ValueMetadata x = f64({4, 5, 6});
  const ValueMetadata pairs = of(DType::kInt64, {7, 2});
  struct Bad {
    GatherAttributes attributes;
    ErrorCode code;
    std::string mention;
  };
  const std::vector<Bad> gathers = {
      {{{1, 2, 3}, {}, {0, 1}, 2, {2, 3, 6}}, ErrorCode::kInvalidArgument, "index_vector_dim"},  // implicit length 1
      {{{1, 2, 3}, {}, {0, 1}, 3, {2, 3, 6}}, ErrorCode::kAxisOutOfRange, "index_vector_dim"},
      {{{1, 2, 3}, {}, {0, 0}, 1, {2, 3, 6}}, ErrorCode::kInvalidArgument, "start_index_map"},
      {{{1, 2, 3}, {}, {0, 3}, 1, {2, 3, 6}}, ErrorCode::kAxisOutOfRange, "start_index_map"},
      {{{1, 2}, {}, {0, 1}, 1, {2, 3, 6}}, ErrorCode::kInvalidArgument, "offset_dims"},
      {{{1, 3, 2}, {}, {0, 1}, 1, {2, 3, 6}}, ErrorCode::kInvalidArgument, "offset_dims"},
      {{{1, 2, 4}, {}, {0, 1}, 1, {2, 3, 6}}, ErrorCode::kAxisOutOfRange, "offset_dims"},
      {{{1, 2}, {2, 0}, {0, 1}, 1, {1, 3, 1}}, ErrorCode::kInvalidArgument, "collapsed_slice_dims"},
      {{{1, 2}, {3}, {0, 1}, 1, {2, 3, 1}}, ErrorCode::kAxisOutOfRange, "collapsed_slice_dims"},
      {{{1, 2}, {0}, {0, 1}, 1, {2, 3, 6}}, ErrorCode::kInvalidArgument, "slice size 1"},
      {{{1, 2, 3}, {}, {0, 1}, 1, {2, 3}}, ErrorCode::kInvalidArgument, "slice_sizes"},
      {{{1, 2, 3}, {}, {0, 1}, 1, {2, 3, 7}}, ErrorCode::kShapeMismatch, "slice size"},
      {{{1, 2, 3}, {}, {0, 1}, 1, {2, -1, 6}}, ErrorCode::kInvalidArgument, "slice_sizes"},
  };
  for (const Bad& bad : gathers) {
    SCOPED_TRACE(to_string(bad.attributes));
    const Inferred r = infer(CoreSemanticOp::kGather, {x, pairs}, bad.attributes);
    ASSERT_FALSE(r.result.ok());
    EXPECT_EQ(code_of(r), bad.code) << r.result.status().to_string();
    EXPECT_NE(r.result.status().to_string().find(bad.mention), std::string::npos) << r.result.status().to_string();
  }
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kGather, {x, of(DType::kFloat32, {7, 2})},
                          GatherAttributes{{1, 2, 3}, {}, {0, 1}, 1, {2, 3, 6}})),
            ErrorCode::kDTypeMismatch);

  struct BadScatter {
    ScatterAttributes attributes;
    ValueMetadata updates;
    ErrorCode code;
    std::string mention;
  };
  const ScatterCombine add = ScatterCombine::kAdd;
  const std::vector<BadScatter> scatters = {
      {{{1, 2, 3}, {}, {0, 1}, 1, add}, f64({7, 2, 3, 7}), ErrorCode::kShapeMismatch, "window axis"},
      {{{1, 2, 3}, {}, {0, 1}, 1, add}, f64({6, 2, 3, 6}), ErrorCode::kShapeMismatch, "scatter axis"},
      {{{1, 2, 3}, {}, {0, 1}, 1, add}, f64({7, 2, 3}), ErrorCode::kShapeMismatch, "updates must have rank"},
      {{{1, 2}, {}, {0, 1}, 1, add}, f64({7, 2, 3}), ErrorCode::kInvalidArgument, "update_window_dims"},
      {{{2, 1, 3}, {}, {0, 1}, 1, add}, f64({7, 2, 3, 6}), ErrorCode::kInvalidArgument, "update_window_dims"},
      {{{1, 2}, {1, 1}, {0, 1}, 1, add}, f64({7, 2, 6}), ErrorCode::kInvalidArgument, "inserted_window_dims"},
      {{{1, 2, 3}, {}, {1, 1}, 1, add}, f64({7, 2, 3, 6}), ErrorCode::kInvalidArgument, "scatter_dims_to_operand_dims"},
      {{{1, 2, 3}, {}, {0}, 1, add}, f64({7, 2, 3, 6}), ErrorCode::kShapeMismatch, "scatter_dims_to_operand_dims"},
      {{{1, 2, 3}, {}, {0, 1}, 5, add}, f64({7, 2, 3, 6}), ErrorCode::kAxisOutOfRange, "index_vector_dim"},
  };
  for (const BadScatter& bad : scatters) {
    SCOPED_TRACE(to_string(bad.attributes));
    const Inferred r = infer(CoreSemanticOp::kScatter, {x, pairs, bad.updates}, bad.attributes);
    ASSERT_FALSE(r.result.ok());
    EXPECT_EQ(code_of(r), bad.code) << r.result.status().to_string();
    EXPECT_NE(r.result.status().to_string().find(bad.mention), std::string::npos) << r.result.status().to_string();
  }
  // A valid window scatter, then bool with add and mixed dtypes.
  EXPECT_EQ(
      *infer(CoreSemanticOp::kScatter, {x, pairs, f64({7, 2, 3, 6})}, ScatterAttributes{{1, 2, 3}, {}, {0, 1}, 1, add})
           .result,
      x);
  EXPECT_EQ(
      code_of(infer(CoreSemanticOp::kScatter, {of(DType::kBool, {4}), of(DType::kInt64, {2}), of(DType::kBool, {2})},
                    take_scatter_attributes(1, 1, 0, add))),
      ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kScatter, {x, pairs, of(DType::kFloat32, {7, 2, 3, 6})},
                          ScatterAttributes{{1, 2, 3}, {}, {0, 1}, 1, add})),
            ErrorCode::kDTypeMismatch);
}

TEST(CoreInferenceTest, ReductionsAndDotGeneral) {
  EXPECT_EQ(*infer(CoreSemanticOp::kReduceSum, {f64({2, 3, 4})}, ReduceAttributes{{0, 2}}).result, f64({3}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kReduceSum, {f64({2, 3})}, ReduceAttributes{{1, 1}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kReduceMax, {of(DType::kComplex64, {2})}, ReduceAttributes{{0}})),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(*infer(CoreSemanticOp::kArgmax, {f64({2, 3})}, ArgReduceAttributes{1}).result, of(DType::kInt64, {2}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kArgmin, {f64({2, 0})}, ArgReduceAttributes{1})), ErrorCode::kShapeMismatch);

  // Batched matmul: [b, m, k] x [b, k, n] -> [b, m, n].
  DotGeneralAttributes bmm{{0}, {0}, {2}, {1}};
  EXPECT_EQ(*infer(CoreSemanticOp::kDotGeneral, {f64({7, 2, 3}), f64({7, 3, 4})}, bmm).result, f64({7, 2, 4}));
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDotGeneral, {f64({7, 2, 3}), f64({7, 5, 4})}, bmm)),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDotGeneral, {f64({7, 2, 3}), f64({7, 3, 4})},
                          DotGeneralAttributes{{0}, {}, {2}, {1}})),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(infer(CoreSemanticOp::kDotGeneral, {f64({2, 3}), f64({3, 4})},
                          DotGeneralAttributes{{}, {}, {1, 1}, {0, 0}})),
            ErrorCode::kInvalidArgument);
  // Free axes in operand order, rhs after lhs.
  EXPECT_EQ(
      *infer(CoreSemanticOp::kDotGeneral, {f64({2, 3, 5}), f64({6, 3})}, DotGeneralAttributes{{}, {}, {1}, {1}}).result,
      f64({2, 5, 6}));
  auto symbolic = infer(CoreSemanticOp::kDotGeneral, {f64({sym(0), sym(1)}), f64({sym(2), 4})},
                        DotGeneralAttributes{{}, {}, {1}, {0}});
  ASSERT_TRUE(symbolic.result.ok());
  EXPECT_EQ(*symbolic.result, f64({sym(0), 4}));
  ASSERT_EQ(symbolic.guards.size(), 1u);
  EXPECT_NE(symbolic.guards[0].reason.find("contracting"), std::string::npos);
}

TEST(CoreInferenceTest, ErrorsNameTheNode) {
  std::vector<ShapeGuard> guards;
  ShapeConstraints c("dot_general %7 [einsum at model.cpp:12]", &guards);
  std::vector<ValueMetadata> operands{f64({2, 3}), f64({4, 5})};
  auto r = infer_core_metadata(CoreSemanticOp::kDotGeneral, DotGeneralAttributes{{}, {}, {1}, {0}}, operands, c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
  EXPECT_NE(r.status().message().find("dot_general %7 [einsum at model.cpp:12]"), std::string_view::npos);
  EXPECT_NE(r.status().message().find("3 and 4"), std::string_view::npos) << r.status().message();
}

}  // namespace
}  // namespace tenferro::program
