// EinsumOp: payload identity and hashing, policy validation, metadata
// inference (exact, symbolic with guards, typed errors), and the core
// lowering (NeedsSpecialization first, then only core ops, diagonal via
// transpose/reshape/strided slice).
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::einsum {
namespace {

using program::SpecializationAxis;
using program::SymbolicExtent;
using program::ValueMetadata;

std::shared_ptr<const EinsumOp> op_of(std::string_view s, std::optional<PlanningPolicy> policy = std::nullopt) {
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(s, std::move(policy));
  EXPECT_TRUE(op.ok()) << op.status().to_string();
  return *op;
}

Result<SmallVector<ValueMetadata, 2>> infer(const EinsumOp& op, std::vector<ValueMetadata> operands,
                                            std::vector<program::ShapeGuard>* guards = nullptr) {
  program::ShapeConstraints constraints("einsum", guards);
  return op.infer_metadata(operands, constraints);
}

ValueMetadata exact(std::initializer_list<std::int64_t> shape, DType dtype = DType::kFloat64) {
  const std::vector<std::int64_t> s(shape);
  return ValueMetadata::exact(dtype, IntArrayRef(s));
}

TEST(EinsumOp, PayloadIdentity) {
  auto a = op_of("ij,jk->ik");
  auto b = op_of("ij , jk -> ik");  // spaces are ignored: the same canonical form
  auto c = op_of("ij,jk->ki");
  PlanningPolicy greedy;
  greedy.planner = PlannerKind::kGreedy;
  auto d = op_of("ij,jk->ik", greedy);
  auto e = op_of("ij,jk->ik", greedy);
  EXPECT_EQ(a->family_id(), "tenferro.einsum");
  EXPECT_TRUE(a->payload_equal(*b));
  EXPECT_EQ(a->payload_hash(), b->payload_hash());
  EXPECT_FALSE(a->payload_equal(*c));
  EXPECT_FALSE(a->payload_equal(*d));  // inherit vs explicit policy
  EXPECT_NE(a->payload_hash(), d->payload_hash());
  EXPECT_TRUE(d->payload_equal(*e));
  EXPECT_EQ(d->payload_hash(), e->payload_hash());
  PlanningPolicy treesa;
  treesa.planner = PlannerKind::kTreeSA;
  treesa.treesa = TreeSAOptions{};
  PlanningPolicy treesa2 = treesa;
  treesa2.treesa->chains = 3;
  EXPECT_FALSE(op_of("ij,jk->ik", treesa)->payload_equal(*op_of("ij,jk->ik", treesa2)));
  EXPECT_NE(hash_policy(treesa), hash_policy(treesa2));
  // Integer and character labels never compare equal.
  const std::vector<std::vector<LabelKey>> lists = {{0, 1}, {1, 2}};
  Result<Subscripts> ints = Subscripts::from_sublists(lists, std::vector<LabelKey>{0, 2});
  Result<std::shared_ptr<const EinsumOp>> int_op = EinsumOp::create(*ints);
  ASSERT_TRUE(int_op.ok());
  EXPECT_FALSE((*int_op)->payload_equal(*a));
  EXPECT_TRUE(a->effects().is_pure());
  ASSERT_EQ(a->aliases().size(), 1u);
  EXPECT_EQ(a->aliases()[0], program::AliasDecl::fresh());
  EXPECT_NE(d->describe().find("greedy"), std::string::npos);
  EXPECT_NE(a->describe().find("inherit"), std::string::npos);
}

TEST(EinsumOp, PolicyValidationAtCreation) {
  PlanningPolicy path;
  path.planner = PlannerKind::kExplicitPath;
  EXPECT_EQ(EinsumOp::create("ij,jk->ik", path).status().code(), ErrorCode::kInvalidArgument);  // no path
  path.path = ContractionOrder::left_to_right(3);
  EXPECT_EQ(EinsumOp::create("ij,jk->ik", path).status().code(), ErrorCode::kInvalidArgument);  // 3 inputs
  path.path = ContractionOrder::left_to_right(2);
  EXPECT_TRUE(EinsumOp::create("ij,jk->ik", path).ok());
  PlanningPolicy nested;
  nested.planner = PlannerKind::kNested;
  EXPECT_EQ(EinsumOp::create("ij,jk->ik", nested).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(EinsumOp::create("(ij,jk),kl->il", nested).ok());
  PlanningPolicy greedy;
  greedy.planner = PlannerKind::kGreedy;
  const Status st = EinsumOp::create("(ij,jk),kl->il", greedy).status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("parentheses"), std::string::npos) << st.to_string();
  EXPECT_EQ(EinsumOp::create("ij,jk->ik)").status().code(), ErrorCode::kInvalidArgument);
}

TEST(EinsumOp, InfersExactShapes) {
  auto op = op_of("ij,jk->ki");
  Result<SmallVector<ValueMetadata, 2>> r = infer(*op, {exact({2, 3}), exact({3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], exact({4, 2}));
  // Broadcasting, ellipsis and implicit output go through the binder.
  EXPECT_EQ((*infer(*op_of("ij,j->ij"), {exact({3, 4}), exact({1})}))[0], exact({3, 4}));
  EXPECT_EQ((*infer(*op_of("...ij,...jk"), {exact({5, 2, 3}), exact({1, 3, 4})}))[0], exact({5, 2, 4}));
  EXPECT_EQ((*infer(*op_of("ii->i"), {exact({3, 3})}))[0], exact({3}));
  EXPECT_EQ((*infer(*op_of("ij,jk"), {exact({3, 4}, DType::kComplex64), exact({4, 2}, DType::kComplex64)}))[0],
            exact({3, 2}, DType::kComplex64));
}

TEST(EinsumOp, InferenceErrorsAreTypedAndNamePlaces) {
  auto mm = op_of("ij,jk->ik");
  const auto code = [](const Result<SmallVector<ValueMetadata, 2>>& r) { return r.status().code(); };
  EXPECT_EQ(code(infer(*mm, {exact({2, 3})})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(infer(*mm, {exact({2, 3}), exact({3, 4, 1})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code(infer(*mm, {exact({2, 3}), exact({3, 4}, DType::kFloat32)})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(infer(*mm, {exact({2, 3}, DType::kBool), exact({3, 4}, DType::kBool)})), ErrorCode::kDTypeMismatch);
  const Result<SmallVector<ValueMetadata, 2>> bad = infer(*mm, {exact({2, 3}), exact({5, 4})});
  EXPECT_EQ(bad.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(bad.status().stage(), ErrorStage::kCompile);
  EXPECT_NE(bad.status().message().find("'j'"), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().message().find("operand 1"), std::string::npos) << bad.status().to_string();
  EXPECT_EQ(code(infer(*op_of("ii->i"), {exact({3, 4})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code(infer(*op_of("ij->i"), {exact({3, 4, 5})})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code(infer(*op_of("...ij->ij"), {exact({2, 3, 4})})), ErrorCode::kShapeMismatch);  // output lacks "..."
}

TEST(EinsumOp, InfersSymbolicShapesWithGuards) {
  auto op = op_of("ij,jk->ik");
  const SymbolicExtent n = SymbolicExtent::symbol(0, std::nullopt), m = SymbolicExtent::symbol(1, std::nullopt);
  const SymbolicExtent k = SymbolicExtent::symbol(2, std::nullopt);
  std::vector<program::ShapeGuard> guards;
  ValueMetadata a{DType::kFloat64, {n, k}}, b{DType::kFloat64, {k, m}};
  Result<SmallVector<ValueMetadata, 2>> r = infer(*op, {a, b}, &guards);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape, (program::SymbolicShape{n, m}));
  EXPECT_TRUE(guards.empty()) << "k is one symbol on both sides";
  // Two different symbols for j: a guard, and the output takes one.
  ValueMetadata b2{DType::kFloat64, {m, SymbolicExtent(4)}};
  r = infer(*op, {a, b2}, &guards);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(guards.size(), 1u);
  EXPECT_EQ((*r)[0].shape, (program::SymbolicShape{n, SymbolicExtent(4)}));
  // An exact extent of 1 broadcasts against a symbol without a guard.
  guards.clear();
  r = infer(*op_of("ij,j->ij"), {a, ValueMetadata{DType::kFloat64, {SymbolicExtent(1)}}}, &guards);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape, (program::SymbolicShape{n, k}));
  EXPECT_TRUE(guards.empty());
  // Provably different exact extents are an error even with symbols around.
  EXPECT_EQ(
      infer(*op, {ValueMetadata{DType::kFloat64, {n, SymbolicExtent(3)}}, exact({4, 2})}, &guards).status().code(),
      ErrorCode::kShapeMismatch);
  // Rank errors come from the binder on ranks alone.
  EXPECT_EQ(infer(*op, {ValueMetadata{DType::kFloat64, {n}}, b}, &guards).status().code(), ErrorCode::kShapeMismatch);
}

TEST(EinsumOp, OutputShapeFastPathAgreesWithBinder) {
  auto op = op_of("abc,cd,dbe->ae");
  const std::vector<std::int64_t> s1{2, 3, 4}, s2{4, 5}, s3{5, 3, 6};
  const IntArrayRef shapes[] = {IntArrayRef(s1), IntArrayRef(s2), IntArrayRef(s3)};
  Dims out;
  ASSERT_TRUE(op->output_shape(shapes, out).ok());
  EXPECT_EQ(out, (Dims{2, 6}));
  const std::vector<std::int64_t> bad{5, 3, 7, 1};
  const IntArrayRef wrong[] = {IntArrayRef(s1), IntArrayRef(s2), IntArrayRef(bad)};
  EXPECT_EQ(op->output_shape(wrong, out).code(), ErrorCode::kShapeMismatch);
}

program::CoreLowering lower(const EinsumOp& op, std::vector<ValueMetadata> operands,
                            program::SpecializationRequirements granted) {
  Result<program::CoreLowering> r =
      program::lower_extension_to_core(op, operands, granted, program::make_provenance("einsum test"));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : program::CoreLowering{};
}

TEST(EinsumOp, LoweringNeedsConcreteDimsThenEmitsCoreOps) {
  auto op = op_of("ij,jk,kl->il");
  const SymbolicExtent n = SymbolicExtent::symbol(0, std::nullopt);
  const program::CoreLowering first =
      lower(*op, {ValueMetadata{DType::kFloat64, {n, SymbolicExtent(3)}}, exact({3, 4}), exact({4, 5})}, {});
  EXPECT_EQ(first.kind, program::ExtensionLoweringOutcome::Kind::kNeedsSpecialization);
  EXPECT_TRUE(first.requirements.has(SpecializationAxis::kConcreteDims));
  const program::CoreLowering done = lower(*op, {exact({2, 3}), exact({3, 4}), exact({4, 5})}, {});
  ASSERT_EQ(done.kind, program::ExtensionLoweringOutcome::Kind::kLowered);
  std::size_t dots = 0;
  for (program::OperationView o : done.fragment->operations()) {
    ASSERT_TRUE(o.is_core());
    dots += o.core_op() == program::CoreSemanticOp::kDotGeneral;
  }
  EXPECT_EQ(dots, 2u);
}

TEST(EinsumOp, LoweringTakesDiagonalsWithStridedSlices) {
  auto op = op_of("iij,k->ijk");
  const program::CoreLowering r = lower(*op, {exact({3, 3, 2}), exact({4})}, {});
  ASSERT_EQ(r.kind, program::ExtensionLoweringOutcome::Kind::kLowered);
  bool sliced = false, reshaped = false, summed = false;
  for (program::OperationView o : r.fragment->operations()) {
    if (o.core_op() == program::CoreSemanticOp::kSlice) {
      sliced = true;
      const auto* s = o.attributes_as<program::SliceAttributes>();
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(s->stride.back(), 4);  // 1 + n for n = 3
    }
    reshaped = reshaped || o.core_op() == program::CoreSemanticOp::kReshape;
    if (o.core_op() == program::CoreSemanticOp::kReduceSum)
      summed = summed || !o.attributes_as<program::ReduceAttributes>()->axes.empty();
  }
  EXPECT_TRUE(sliced && reshaped);
  EXPECT_FALSE(summed) << "i is kept: nothing is summed (a reduction over no axes only materialises)";
}

}  // namespace
}  // namespace tenferro::einsum
