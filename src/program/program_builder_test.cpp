#include "tenferro/program/program_builder.h"

#include <gtest/gtest.h>

#include "extension_test_support.h"

namespace tenferro::program {
namespace {

using testing::make_unary;
using testing::MatmulExtension;
using testing::UnaryExtension;

// A snapshot of everything observable about a builder, to prove a failed
// call changed nothing: counts plus the fingerprint of freezing every value.
struct BuilderState {
  std::size_t inputs, values, operations, guards;
  SemanticFingerprint everything;
  friend bool operator==(const BuilderState&, const BuilderState&) = default;
};

BuilderState state_of(const ProgramBuilder& b, std::span<const ProgramValue> values) {
  auto frozen = b.freeze(values);
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return {b.num_inputs(), b.num_values(), b.num_operations(), b.num_guards(), frozen->program->fingerprint()};
}

TEST(ProgramBuilderTest, BuildsAndFreezesAProgram) {
  ProgramBuilder b;
  b.set_provenance(make_provenance("test"));
  auto x = b.add_input(DType::kFloat64, {2, 3}, "x");
  auto y = b.add_input(DType::kFloat64, {3, 4}, "y");
  ASSERT_TRUE(x.ok() && y.ok());
  auto z = b.emit(CoreSemanticOp::kDotGeneral, {*x, *y}, DotGeneralAttributes{{}, {}, {1}, {0}});
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  auto w = b.emit(CoreSemanticOp::kTanh, {*z});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*b.metadata(*w), ValueMetadata::exact(DType::kFloat64, {2, 4}));
  auto frozen = b.freeze({*w});
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
  const SemanticProgram& p = *frozen->program;
  EXPECT_EQ(p.num_inputs(), 2u);
  EXPECT_EQ(p.num_operations(), 2u);
  EXPECT_EQ(p.num_values(), 4u);
  ASSERT_EQ(p.outputs().size(), 1u);
  EXPECT_EQ(p.input_name(0), "x");
  // Topological order and producers.
  OperationView first = p.operation(OperationId(0));
  EXPECT_EQ(first.core_op(), CoreSemanticOp::kDotGeneral);
  ASSERT_NE(first.attributes_as<DotGeneralAttributes>(), nullptr);
  EXPECT_EQ(first.attributes_as<DotGeneralAttributes>()->lhs_contract, Dims{1});
  EXPECT_EQ(first.operands()[0], p.input(0));
  EXPECT_EQ(p.producer(p.outputs()[0]).operation, OperationId(1));
  EXPECT_EQ(p.metadata(p.outputs()[0]), ValueMetadata::exact(DType::kFloat64, {2, 4}));
  EXPECT_TRUE(p.effects().is_pure());
  EXPECT_EQ(first.provenance()->label, "test");
  int count = 0;
  for (OperationView op : p.operations()) count += static_cast<int>(op.num_results());
  EXPECT_EQ(count, 2);
  // View-class core ops declare view_of(0), the rest fresh.
  auto t = b.emit(CoreSemanticOp::kTranspose, {*x}, TransposeAttributes{{1, 0}});
  auto tp = b.freeze({*t});
  EXPECT_EQ(tp->program->operation(OperationId(0)).aliases()[0], AliasDecl::view_of(0));
  EXPECT_EQ(first.aliases()[0], AliasDecl::fresh());
}

TEST(ProgramBuilderTest, ForeignAndInvalidTokensAreRejected) {
  ProgramBuilder a, b;
  auto xa = a.add_input(DType::kFloat32, {4});
  auto xb = b.add_input(DType::kFloat32, {4});
  ASSERT_TRUE(xa.ok() && xb.ok());
  EXPECT_TRUE(a.owns(*xa));
  EXPECT_FALSE(a.owns(*xb));
  EXPECT_EQ(a.emit(CoreSemanticOp::kAdd, {*xa, *xb}).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(a.metadata(*xb).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(a.freeze({*xb}).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(a.emit(CoreSemanticOp::kNeg, {ProgramValue()}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.num_operations(), 0u);
  EXPECT_EQ(fmt::format("{}", *xa), "ProgramValue(..)");
  // Tokens follow a moved builder; the moved-from one refuses everything.
  ProgramBuilder moved = std::move(a);
  EXPECT_TRUE(moved.emit(CoreSemanticOp::kNeg, {*xa}).ok());
  EXPECT_EQ(a.emit(CoreSemanticOp::kNeg, {*xa}).status().code(), ErrorCode::kFailedPrecondition);  // NOLINT
}

TEST(ProgramBuilderTest, FailedEmitLeavesTheBuilderUnchanged) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3});
  auto y = *b.add_input(DType::kFloat64, {4, 3});
  auto ok = b.emit(CoreSemanticOp::kAdd, {x, y});  // adds the guard s0 == 4
  ASSERT_TRUE(ok.ok());
  const ProgramValue all[] = {x, y, *ok};
  const BuilderState before = state_of(b, all);
  EXPECT_EQ(before.guards, 1u);
  // Fails after inference recorded a guard for axis 0: nothing may remain.
  ProgramValue z = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 5});
  const ProgramValue with_z[] = {x, y, *ok, z};
  const BuilderState before_z = state_of(b, with_z);
  EXPECT_EQ(b.emit(CoreSemanticOp::kAdd, {x, z}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(b.emit(CoreSemanticOp::kAdd, {x, y}, ReduceAttributes{{0}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.emit_extension(std::make_shared<MatmulExtension>(), {x, y}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(state_of(b, with_z), before_z);
}

TEST(ProgramBuilderTest, FreezeIsConstAndRepeatable) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {3});
  auto e = *b.emit(CoreSemanticOp::kExp, {x});
  auto f1 = b.freeze({e});
  ASSERT_TRUE(f1.ok());
  ProgramBuilder other;
  auto foreign = *other.add_input(DType::kFloat64, {3});
  const ProgramValue current[] = {x, e};
  const BuilderState before = state_of(b, current);
  EXPECT_EQ(b.freeze({e, foreign}).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(state_of(b, current), before);
  // Still usable after both.
  auto l = b.emit(CoreSemanticOp::kLog, {e});
  ASSERT_TRUE(l.ok());
  auto f2 = b.freeze({e});
  EXPECT_EQ(f2->program->fingerprint(), f1->program->fingerprint()) << "dead log dropped";
  auto f3 = b.freeze({*l});
  EXPECT_NE(f3->program->fingerprint(), f1->program->fingerprint());
}

TEST(ProgramBuilderTest, EmptyAndDuplicateRoots) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat32, {2});
  auto n = *b.emit(CoreSemanticOp::kNeg, {x});
  auto empty = b.freeze({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->program->num_operations(), 0u);
  EXPECT_EQ(empty->program->num_inputs(), 1u) << "inputs are the signature and stay";
  EXPECT_TRUE(empty->program->outputs().empty());
  auto dup = b.freeze({n, n, x});
  ASSERT_TRUE(dup.ok());
  const SemanticProgram& p = *dup->program;
  ASSERT_EQ(p.outputs().size(), 3u);
  EXPECT_EQ(p.outputs()[0], p.outputs()[1]);
  EXPECT_EQ(p.outputs()[2], p.input(0));
  EXPECT_EQ(p.num_operations(), 1u);
  EXPECT_NE(b.freeze({n}).value().program->fingerprint(), p.fingerprint());
}

TEST(ProgramBuilderTest, InputSchemasAndSymbols) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(64), SymbolicExtent::unknown()});
  ValueMetadata mx = *b.metadata(x);
  EXPECT_EQ(mx.shape[0].kind(), ExtentKind::kBounded);
  EXPECT_EQ(mx.shape[0].as_symbol(), 0u);
  EXPECT_EQ(mx.shape[1].as_symbol(), 1u);
  // Reusing a symbol declares equal extents; a square matrix uses one twice.
  auto y = b.add_input(DType::kFloat64, {mx.shape[1], mx.shape[1]});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(b.add_input(DType::kFloat64, {mx.shape[0] + 1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.add_input(DType::kFloat64, {-2}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.add_input(DType::kFloat64, {SymbolicExtent::symbol(7, std::nullopt)}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.add_input(DType::kFloat64, {SymbolicExtent::symbol(0, 5)}).status().code(), ErrorCode::kInvalidArgument)
      << "a symbol with another bound is a different symbol";
  // The same symbol twice in one new input: placeholder first, then reuse.
  auto d = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), SymbolicExtent::symbol(2, std::nullopt)});
  EXPECT_EQ(b.metadata(d)->shape[0], b.metadata(d)->shape[1]);
  auto mm = b.emit(CoreSemanticOp::kDotGeneral, {x, *y}, DotGeneralAttributes{{}, {}, {1}, {0}});
  ASSERT_TRUE(mm.ok());
  EXPECT_EQ(b.num_guards(), 0u) << "x axis 1 and y axis 0 are the same symbol";
  auto frozen = b.freeze({*mm});
  ASSERT_TRUE(frozen.ok());
  EXPECT_EQ(frozen->program->num_symbols(), 3u);
  EXPECT_EQ(frozen->program->symbol(0).upper_bound, 64);
  EXPECT_EQ(frozen->program->symbol(1).input, 0u);
  EXPECT_EQ(frozen->program->symbol(1).axis, 1u);
}

TEST(ProgramBuilderTest, ConstantsAndBindings) {
  ProgramBuilder b(ConstantPolicy{64});
  auto small = Literal::from_values<double>({1, 2, 3}, {3});
  ASSERT_TRUE(small.ok());
  auto c = b.constant(*small);
  ASSERT_TRUE(c.ok());
  std::vector<double> big_values(100, 1.0);
  auto big = *Literal::from_values<double>(big_values, {100});
  EXPECT_EQ(b.constant(big).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.emit(CoreSemanticOp::kConstant, std::span<const ProgramValue>(), ConstantAttributes{big}).status().code(),
            ErrorCode::kInvalidArgument)
      << "the policy holds for every way of emitting a constant";
  auto weights = Tensor::from_values<double>(std::vector<double>(12, 0.5), {3, 4});
  ASSERT_TRUE(weights.ok());
  EXPECT_EQ(b.constantize(*weights, ConstantPolicy{64}).status().code(), ErrorCode::kInvalidArgument);
  auto inlined = b.constantize(*weights, ConstantPolicy{1024});
  ASSERT_TRUE(inlined.ok()) << "explicit constantization with a larger policy";
  auto x = *b.add_input(DType::kFloat64, {2, 3}, "x");
  auto w = b.capture(*weights, "W");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(b.capture(Tensor()).status().code(), ErrorCode::kInvalidArgument);
  auto y = *b.emit(CoreSemanticOp::kDotGeneral, {x, *w}, DotGeneralAttributes{{}, {}, {1}, {0}});
  auto frozen = b.freeze({y, *c, *inlined});
  ASSERT_TRUE(frozen.ok());
  const ProgramBindings& bindings = frozen->bindings;
  EXPECT_EQ(bindings.num_inputs(), 2u);
  EXPECT_EQ(bindings.num_bound(), 1u);
  ASSERT_EQ(bindings.parameters().size(), 1u);
  EXPECT_EQ(bindings.parameters()[0], 0u);
  ASSERT_NE(bindings.bound_tensor(1), nullptr);
  EXPECT_EQ(bindings.bound_tensor(1)->storage().get(), weights->storage().get()) << "captured, not copied";
  EXPECT_EQ(bindings.bound_bytes(), 96u);
  auto x_value = *Tensor::zeros({2, 3}, DType::kFloat64);
  auto assembled = bindings.assemble_inputs(std::span<const Tensor>(&x_value, 1));
  ASSERT_TRUE(assembled.ok());
  EXPECT_EQ((*assembled)[1].storage().get(), weights->storage().get());
  EXPECT_EQ(bindings.assemble_inputs({}).status().code(), ErrorCode::kInvalidArgument);
  // The same program taking W as a parameter has the same fingerprint.
  ProgramBuilder p(ConstantPolicy{64});
  auto c2 = *p.constant(*small);
  auto inlined2 = *p.constantize(*weights, ConstantPolicy{1024});
  auto x2 = *p.add_input(DType::kFloat64, {2, 3});
  auto w2 = *p.add_input(DType::kFloat64, {3, 4});
  auto y2 = *p.emit(CoreSemanticOp::kDotGeneral, {x2, w2}, DotGeneralAttributes{{}, {}, {1}, {0}});
  auto frozen2 = p.freeze({y2, c2, inlined2});
  EXPECT_EQ(frozen2->program->fingerprint(), frozen->program->fingerprint());
  EXPECT_EQ(frozen2->bindings.num_bound(), 0u);
}

TEST(ProgramBuilderTest, ImportMapsInputsAndIsAtomic) {
  // Source: f(a[n], b[n]) = slice(a * b, [0:5]) — needs n >= 5.
  ProgramBuilder src;
  src.set_provenance(make_provenance("source"));
  auto a = *src.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto n = src.metadata(a)->shape[0];
  auto bb = *src.add_input(DType::kFloat64, {n});
  auto m = *src.emit(CoreSemanticOp::kMul, {a, bb});
  auto s = *src.emit(CoreSemanticOp::kSlice, {m}, SliceAttributes{{0}, {5}, {1}});
  auto source = src.freeze({s, m});
  ASSERT_TRUE(source.ok());

  ProgramBuilder dst;
  auto x = *dst.add_input(DType::kFloat64, {8});
  auto y = *dst.add_input(DType::kFloat64, {8});
  auto small = *dst.add_input(DType::kFloat64, {3});
  auto other_dtype = *dst.add_input(DType::kFloat32, {8});
  auto e = *dst.emit(CoreSemanticOp::kExp, {x});
  const ProgramValue current[] = {x, y, small, other_dtype, e};
  const BuilderState before = state_of(dst, current);

  // Failing imports: wrong count, dtype, a foreign token, and a failure in
  // the middle (mul succeeds on [3]x[3], then slice needs 3 >= 5).
  EXPECT_EQ(dst.import_program(*source->program, std::span<const ProgramValue>(&x, 1)).status().code(),
            ErrorCode::kInvalidArgument);
  const ProgramValue wrong_dtype[] = {x, other_dtype};
  EXPECT_EQ(dst.import_program(*source->program, wrong_dtype).status().code(), ErrorCode::kDTypeMismatch);
  const ProgramValue foreign[] = {x, a};
  EXPECT_EQ(dst.import_program(*source->program, foreign).status().code(), ErrorCode::kForeignValue);
  const ProgramValue too_small[] = {small, small};
  auto failed = dst.import_program(*source->program, too_small);
  EXPECT_EQ(failed.status().code(), ErrorCode::kShapeMismatch);
  const ProgramValue mismatched[] = {x, small};
  EXPECT_EQ(dst.import_program(*source->program, mismatched).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(state_of(dst, current), before);

  const ProgramValue good[] = {x, y};
  auto imported = dst.import_program(*source->program, good);
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  ASSERT_EQ(imported->size(), 2u);
  EXPECT_EQ(*dst.metadata((*imported)[0]), ValueMetadata::exact(DType::kFloat64, {5}));
  EXPECT_EQ(*dst.metadata((*imported)[1]), ValueMetadata::exact(DType::kFloat64, {8}));
  auto frozen = dst.freeze({(*imported)[0]});
  ASSERT_TRUE(frozen.ok());
  EXPECT_EQ(frozen->program->operation(OperationId(0)).provenance()->label, "source") << "provenance kept";

  // Importing a sub-graph: only what the root needs.
  ProgramBuilder sub;
  auto sx = *sub.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto sn = sub.metadata(sx)->shape[0];
  auto sy = *sub.add_input(DType::kFloat64, {sn});
  const ProgramValue sub_inputs[] = {sx, sy};
  const ValueId roots[] = {source->program->outputs()[1]};
  auto part = sub.import_values(*source->program, sub_inputs, roots);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(sub.num_operations(), 1u) << "only the mul";
  EXPECT_EQ(sub.num_guards(), 0u) << "same symbols: nothing to guard";
  auto none = sub.import_values(*source->program, sub_inputs, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(sub.num_operations(), 1u);
  // Re-importing the whole program into its own shape reproduces it.
  auto whole = sub.import_program(*source->program, sub_inputs);
  ASSERT_TRUE(whole.ok());
  auto again = sub.freeze(*whole);
  EXPECT_EQ(again->program->fingerprint(), source->program->fingerprint());
}

TEST(ProgramBuilderTest, ImportOfAFrozenProgramRecapturesBindings) {
  auto weights = *Tensor::from_values<double>({1, 2, 3, 4}, {2, 2});
  ProgramBuilder src;
  auto x = *src.add_input(DType::kFloat64, {2, 2});
  auto w = *src.capture(weights, "W");
  auto y = *src.emit(CoreSemanticOp::kAdd, {x, w});
  auto source = *src.freeze({y});
  ASSERT_EQ(source.bindings.parameters().size(), 1u);

  ProgramBuilder dst;
  auto p = *dst.add_input(DType::kFloat64, {2, 2});
  auto out = dst.import_program(source, std::span<const ProgramValue>(&p, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(dst.num_inputs(), 2u);
  auto frozen = *dst.freeze(*out);
  EXPECT_EQ(frozen.bindings.num_bound(), 1u);
  EXPECT_EQ(frozen.bindings.bound_tensor(1)->storage().get(), weights.storage().get());
  EXPECT_EQ(frozen.program->fingerprint(), source.program->fingerprint());
  EXPECT_EQ(dst.import_program(source, {}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dst.num_inputs(), 2u);
}

TEST(ProgramBuilderTest, ExtensionsEmitThroughTheSameBuilder) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {2, 3});
  auto y = *b.add_input(DType::kFloat64, {3, 5});
  auto r = b.emit_extension(std::make_shared<MatmulExtension>(), {x, y});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(*b.metadata((*r)[0]), ValueMetadata::exact(DType::kFloat64, {2, 5}));
  auto two = b.emit_extension(make_unary({.aliases = {AliasDecl::fresh(), AliasDecl::view_of(0)}, .num_results = 2}),
                              {(*r)[0]});
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ(b.emit_extension(nullptr, {x}).status().code(), ErrorCode::kInvalidArgument);
  // A bounded extent stays bounded through an extension's inference.
  auto batch = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(16), 3});
  auto bounded = b.emit_extension(std::make_shared<MatmulExtension>(), {batch, y});
  ASSERT_TRUE(bounded.ok());
  const SymbolicExtent rows = b.metadata((*bounded)[0])->shape[0];
  EXPECT_EQ(rows.kind(), ExtentKind::kBounded);
  EXPECT_EQ(rows.upper_bound(), 16);
  // Declarations that contradict the results are contract violations.
  EXPECT_EQ(b.emit_extension(make_unary({.aliases = {}}), {x}).status().code(), ErrorCode::kContractViolation);
  EXPECT_EQ(b.emit_extension(make_unary({.aliases = {AliasDecl::view_of(3)}}), {x}).status().code(),
            ErrorCode::kContractViolation);
  EXPECT_EQ(b.emit_extension(make_unary({.aliases = {AliasDecl::external({ResourceKind::kExternalBuffer, 1})}}), {x})
                .status()
                .code(),
            ErrorCode::kContractViolation);
  auto frozen = b.freeze({(*two)[1]});
  ASSERT_TRUE(frozen.ok());
  EXPECT_EQ(frozen->program->num_operations(), 2u);
  EXPECT_TRUE(frozen->program->operation(OperationId(1)).is_extension());
  EXPECT_EQ(frozen->program->operation(OperationId(1)).name(), "test.unary");
}

TEST(ProgramBuilderTest, ExplainShowsProvenance) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(16), 3}, "x");
  b.set_provenance(make_provenance("einsum at model.cpp:12", make_provenance("trace step 3")));
  auto s = *b.emit(CoreSemanticOp::kSlice, {x}, SliceAttributes{{0, 0}, {4, 3}, {1, 1}});
  b.set_placement({PlacementClass::kHost, 2});
  auto e = *b.emit(CoreSemanticOp::kExp, {s});
  auto frozen = b.freeze({e});
  ASSERT_TRUE(frozen.ok());
  const std::string text = frozen->program->explain();
  EXPECT_NE(text.find("s0 <= 16 (input 0 axis 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("%0: float64[s0, 3]  \"x\""), std::string::npos) << text;
  EXPECT_NE(text.find("%1 = slice(%0) {start=[0, 0], limit=[4, 3], stride=[1, 1]} : float64[4, 3]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# from: einsum at model.cpp:12 <- trace step 3"), std::string::npos) << text;
  EXPECT_NE(text.find("placement host group 2"), std::string::npos) << text;
  EXPECT_NE(text.find("s0 - 4 >= 0"), std::string::npos) << text;
  EXPECT_NE(text.find("outputs: %2"), std::string::npos) << text;
}

TEST(ProgramBuilderTest, CompileErrorsNameNodeAndProvenance) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {2, 3});
  b.set_provenance(make_provenance("matmul at solver.cpp:88"));
  auto bad = b.emit(CoreSemanticOp::kDotGeneral, {x, x}, DotGeneralAttributes{{}, {}, {1}, {1}});
  ASSERT_TRUE(bad.ok());
  auto worse = b.emit(CoreSemanticOp::kDotGeneral, {x, x}, DotGeneralAttributes{{}, {}, {1}, {0}});
  ASSERT_FALSE(worse.ok());
  EXPECT_EQ(worse.status().stage(), ErrorStage::kCompile);
  const std::string_view message = worse.status().message();
  EXPECT_NE(message.find("dot_general %2"), std::string_view::npos) << message;
  EXPECT_NE(message.find("matmul at solver.cpp:88"), std::string_view::npos) << message;
}

}  // namespace
}  // namespace tenferro::program
