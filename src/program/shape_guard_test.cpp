// Guard construction at build time and evaluation against concrete inputs.
#include "tenferro/program/shape_guard.h"

#include <gtest/gtest.h>

#include "tenferro/program/program_builder.h"
#include "tenferro/tensor/tensor.h"
#include "testing/counting_new.h"

namespace tenferro::program {
namespace {

struct Concrete {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<DType> dtypes;
  std::vector<ConcreteInput> inputs() const {
    std::vector<ConcreteInput> out;
    for (std::size_t i = 0; i < shapes.size(); ++i) out.push_back({dtypes[i], shapes[i]});
    return out;
  }
};

Status check(const SemanticProgram& p, std::vector<std::vector<std::int64_t>> shapes, SymbolValues* symbols = nullptr,
             std::vector<DType> dtypes = {}) {
  Concrete c{std::move(shapes), std::move(dtypes)};
  c.dtypes.resize(c.shapes.size(), DType::kFloat64);
  auto inputs = c.inputs();
  return p.check_guards(inputs, symbols);
}

// x[n <= 100, 3], y[m, 3]:
//   z = concatenate(x, y) along 0                 [n + m, 3]
//   w = slice(z, [2:6])                           needs n + m >= 6
//   v = dot_general(x, y^T... ) via reshape       needs nothing more
//   p = pad(y, interior 1 on axis 0)              [m + max(0, m - 1), 3]
std::shared_ptr<const SemanticProgram> symbolic_program() {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(100), 3}, "x");
  auto y = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "y");
  auto z = *b.emit(CoreSemanticOp::kConcatenate, {x, y}, ConcatenateAttributes{0});
  auto w = *b.emit(CoreSemanticOp::kSlice, {z}, SliceAttributes{{2, 0}, {6, 3}, {1, 1}});
  auto zero = *b.constant(Literal::scalar(Scalar::of(0.0)));
  auto p = *b.emit(CoreSemanticOp::kPad, {y, zero}, PadAttributes{{0, 0}, {0, 0}, {1, 0}});
  auto frozen = b.freeze({z, w, p});
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return frozen->program;
}

TEST(ShapeGuardTest, EvaluatesAgainstConcreteInputs) {
  auto program = symbolic_program();
  ASSERT_EQ(program->guards().size(), 1u);
  EXPECT_EQ(program->guards()[0].to_string(), "s0 + s1 - 6 >= 0");

  SymbolValues symbols;
  ASSERT_TRUE(check(*program, {{4, 3}, {5, 3}}, &symbols).ok());
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0], 4);
  EXPECT_EQ(symbols[1], 5);
  EXPECT_EQ(*program->concrete_shape(program->outputs()[0], symbols), (Dims{9, 3}));
  EXPECT_EQ(*program->concrete_shape(program->outputs()[1], symbols), (Dims{4, 3}));
  EXPECT_EQ(*program->concrete_shape(program->outputs()[2], symbols), (Dims{9, 3}));
  std::int64_t m_zero[] = {6, 0};
  EXPECT_EQ(*program->concrete_shape(program->outputs()[2], m_zero), (Dims{0, 3})) << "pad of an empty axis";

  // The relation guard.
  Status s = check(*program, {{2, 3}, {3, 3}});
  EXPECT_EQ(s.code(), ErrorCode::kShapeGuardFailed);
  EXPECT_EQ(s.stage(), ErrorStage::kPrepare);
  EXPECT_NE(s.message().find("s0 + s1 - 6 >= 0"), std::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("slice"), std::string_view::npos) << s.message();
  // Symbol bound, exact extent, rank, dtype and count.
  EXPECT_EQ(check(*program, {{101, 3}, {5, 3}}).code(), ErrorCode::kShapeGuardFailed);
  EXPECT_EQ(check(*program, {{4, 4}, {5, 3}}).code(), ErrorCode::kShapeGuardFailed);
  EXPECT_EQ(check(*program, {{4}, {5, 3}}).code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(check(*program, {{4, 3}, {5, 3}}, nullptr, {DType::kFloat64, DType::kFloat32}).code(),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(check(*program, {{4, 3}}).code(), ErrorCode::kInvalidArgument);
  // Tensors work too.
  auto tx = *Tensor::zeros({1, 3}, DType::kFloat64);
  auto ty = *Tensor::zeros({5, 3}, DType::kFloat64);
  const Tensor ok_inputs[] = {tx, ty};
  EXPECT_TRUE(program->check_guards(ok_inputs).ok());
  const Tensor bad_inputs[] = {tx, tx};
  EXPECT_EQ(program->check_guards(bad_inputs).code(), ErrorCode::kShapeGuardFailed);
}

TEST(ShapeGuardTest, CheckingGuardsDoesNotAllocate) {
  // Every operator new of this test program counts (Note [Counting operator
  // new] in src/testing/counting_new.h).
  if (!tenferro::testing::kCountsAllocations) GTEST_SKIP() << "ThreadSanitizer owns operator new";
  auto program = symbolic_program();
  std::int64_t xs[] = {4, 3}, ys[] = {5, 3};
  const ConcreteInput inputs[] = {{DType::kFloat64, IntArrayRef(xs, 2)}, {DType::kFloat64, IntArrayRef(ys, 2)}};
  SymbolValues symbols;
  std::uint64_t before = tenferro::testing::allocation_count();
  Status s = program->check_guards(inputs, &symbols);
  const bool holds = program->guards()[0].holds(symbols);
  const std::uint64_t allocations = tenferro::testing::allocation_count() - before;
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(holds);
  EXPECT_EQ(allocations, 0u) << "guard evaluation is on the run path";
  ys[0] = 1;
  before = tenferro::testing::allocation_count();
  Status failed = program->check_guards(inputs, &symbols);
  EXPECT_FALSE(failed.ok());
  EXPECT_GT(tenferro::testing::allocation_count() - before, 0u) << "the counter works: reporting an error allocates";
}

TEST(ShapeGuardTest, SharedSymbolsMustAgree) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto y = *b.add_input(DType::kFloat64, {b.metadata(x)->shape[0]});
  auto sum = *b.emit(CoreSemanticOp::kAdd, {x, y});
  auto program = b.freeze({sum})->program;
  EXPECT_TRUE(program->guards().empty()) << "equal by construction";
  EXPECT_TRUE(check(*program, {{7}, {7}}).ok());
  EXPECT_EQ(check(*program, {{7}, {8}}).code(), ErrorCode::kShapeGuardFailed);
}

TEST(ShapeGuardTest, GuardsOfDeadOperationsAreDropped) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto dead = *b.emit(CoreSemanticOp::kSlice, {x}, SliceAttributes{{0}, {10}, {1}});
  auto live = *b.emit(CoreSemanticOp::kNeg, {x});
  EXPECT_EQ(b.num_guards(), 1u);
  auto without = b.freeze({live})->program;
  EXPECT_TRUE(without->guards().empty());
  EXPECT_TRUE(check(*without, {{3}}).ok());
  auto with = b.freeze({live, dead})->program;
  EXPECT_EQ(with->guards().size(), 1u);
  EXPECT_EQ(check(*with, {{3}}).code(), ErrorCode::kShapeGuardFailed);
}

TEST(ShapeGuardTest, DuplicateGuardsAreMergedAndSorted) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto y = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto s1 = *b.emit(CoreSemanticOp::kAdd, {x, y});
  auto s2 = *b.emit(CoreSemanticOp::kSub, {y, x});  // the same predicate, other sign
  auto s3 = *b.emit(CoreSemanticOp::kSlice, {x}, SliceAttributes{{0}, {2}, {1}});
  EXPECT_EQ(b.num_guards(), 3u);
  auto program = b.freeze({s1, s2, s3})->program;
  ASSERT_EQ(program->guards().size(), 2u);
  EXPECT_EQ(program->guards()[0].kind, GuardKind::kEqualsZero);
  EXPECT_EQ(program->guards()[1].kind, GuardKind::kNonNegative);
}

TEST(ShapeGuardTest, DecidableRequirementsAreCompileErrors) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(4)});
  auto r = b.emit(CoreSemanticOp::kSlice, {x}, SliceAttributes{{0}, {5}, {1}});
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch) << "s0 <= 4 can never reach 5";
  EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
  EXPECT_EQ(b.num_guards(), 0u);
}

}  // namespace
}  // namespace tenferro::program
