// Core lowering of extension ops: the driver, its validation, and
// specialization requests.
#include "tenferro/program/extension_op.h"

#include <gtest/gtest.h>

#include "extension_test_support.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/validation.h"

namespace tenferro::program {
namespace {

using testing::make_unary;
using testing::MatmulExtension;
using testing::MatmulLowering;
using Kind = ExtensionLoweringOutcome::Kind;

std::vector<ValueMetadata> matmul_operands() {
  return {ValueMetadata::exact(DType::kFloat64, {2, 3}), ValueMetadata::exact(DType::kFloat64, {3, 4})};
}

Result<CoreLowering> lower(MatmulLowering mode, std::vector<ValueMetadata> operands = matmul_operands(),
                           SpecializationRequirements granted = {}, ProvenanceRef origin = make_provenance("ext")) {
  MatmulExtension op(mode);
  return lower_extension_to_core(op, operands, granted, origin);
}

TEST(ExtensionLoweringTest, ValidLoweringIsAFragmentOfCoreOps) {
  ProvenanceRef origin = make_provenance("einsum at model.cpp:3");
  auto r = lower(MatmulLowering::kCorrect, matmul_operands(), {}, origin);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->kind, Kind::kLowered);
  const SemanticProgram& f = *r->fragment;
  EXPECT_EQ(f.num_inputs(), 2u);
  ASSERT_EQ(f.num_operations(), 1u);
  EXPECT_EQ(f.operation(OperationId(0)).core_op(), CoreSemanticOp::kDotGeneral);
  EXPECT_TRUE(derives_from(f.operation(OperationId(0)).provenance(), origin.get()));
  EXPECT_NE(f.explain().find("lowered from test.matmul <- einsum at model.cpp:3"), std::string::npos) << f.explain();
  EXPECT_EQ(f.metadata(f.outputs()[0]), ValueMetadata::exact(DType::kFloat64, {2, 4}));
  EXPECT_TRUE(r->symbol_meaning.empty());
}

TEST(ExtensionLoweringTest, SymbolicOperandsAreAbstracted) {
  SymbolicExtent n = SymbolicExtent::symbol(0, std::nullopt), k = SymbolicExtent::symbol(1, 32);
  SymbolicExtent m = SymbolicExtent::symbol(2, std::nullopt);
  std::vector<ValueMetadata> operands{{DType::kFloat32, {n * 2, k}}, {DType::kFloat32, {k, m}}};
  auto r = lower(MatmulLowering::kCorrect, operands);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->kind, Kind::kLowered);
  ASSERT_EQ(r->symbol_meaning.size(), 3u);
  EXPECT_EQ(r->symbol_meaning[0], n * 2);
  EXPECT_EQ(r->symbol_meaning[1], k);
  EXPECT_TRUE(r->fragment->guards().empty()) << "k stays one symbol, so the inner extents are provably equal";
  EXPECT_EQ(r->fragment->symbol(1).upper_bound, 32) << "bounds carry over";
  // Fragment extents map back to the caller's.
  const ValueMetadata& out = r->fragment->metadata(r->fragment->outputs()[0]);
  EXPECT_EQ(out.shape[0].substitute(r->symbol_meaning), n * 2);
  EXPECT_EQ(out.shape[1].substitute(r->symbol_meaning), m);
}

TEST(ExtensionLoweringTest, InvalidLoweringsAreRejected) {
  auto expect_violation = [](MatmulLowering mode, std::string_view needle) {
    auto r = lower(mode);
    ASSERT_FALSE(r.ok()) << static_cast<int>(mode);
    EXPECT_EQ(r.status().code(), ErrorCode::kContractViolation) << r.status().to_string();
    EXPECT_EQ(r.status().stage(), ErrorStage::kPrepare);
    EXPECT_NE(r.status().message().find(needle), std::string_view::npos) << r.status().message();
  };
  expect_violation(MatmulLowering::kWrongArity, "2 results");
  expect_violation(MatmulLowering::kWrongMetadata, "result 0 is float64[4, 2]");
  expect_violation(MatmulLowering::kEmitsExtension, "only core operations");
  expect_violation(MatmulLowering::kChangesProvenance, "provenance");
  expect_violation(MatmulLowering::kForeignValue, "did not emit");
  auto thrown = lower(MatmulLowering::kThrows);
  EXPECT_EQ(thrown.status().code(), ErrorCode::kInternal);
  EXPECT_NE(thrown.status().message().find("lowering exploded"), std::string_view::npos);
}

TEST(ExtensionLoweringTest, UnsupportedIsACapabilityAnswer) {
  auto r = lower(MatmulLowering::kUnsupported);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Kind::kUnsupported);
  EXPECT_EQ(r->unsupported_reason, "no lowering in this test");
  EXPECT_EQ(r->fragment, nullptr);
  // The default implementation answers Unsupported too.
  struct NoLowering : testing::MatmulExtension {
    Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& c) const override {
      return ExtensionOp::lower_to_core(c);
    }
  } plain;
  auto d = lower_extension_to_core(plain, matmul_operands(), {}, nullptr);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, Kind::kUnsupported);
  EXPECT_NE(d->unsupported_reason.find("test.matmul"), std::string::npos);
  const bool live[] = {true};
  EXPECT_EQ(plain.prune_outputs(live), nullptr);
  EXPECT_EQ(plain.describe(), "test.matmul");
}

TEST(ExtensionLoweringTest, EffectsAndAliasesMustSurviveLowering) {
  std::vector<ValueMetadata> x{ValueMetadata::exact(DType::kFloat64, {3})};
  EffectSet rng{{{ResourceKind::kRandomState, 1}, EffectAccess::kReadWrite}};
  auto effectful = lower_extension_to_core(*make_unary({.effects = rng}), x, {}, nullptr);
  EXPECT_EQ(effectful.status().code(), ErrorCode::kContractViolation) << "core ops cannot carry the effect";
  EXPECT_NE(effectful.status().message().find("effects"), std::string_view::npos);

  // Declared fresh, lowered to the operand itself (a view): stronger aliasing.
  auto view_for_fresh = lower_extension_to_core(*make_unary({.lower_to_identity = true}), x, {}, nullptr);
  EXPECT_EQ(view_for_fresh.status().code(), ErrorCode::kContractViolation);
  EXPECT_NE(view_for_fresh.status().message().find("view_of(0)"), std::string_view::npos);
  // Declared view_of(0): both a view and a fresh value are fine.
  EXPECT_TRUE(lower_extension_to_core(*make_unary({.aliases = {AliasDecl::view_of(0)}, .lower_to_identity = true}), x,
                                      {}, nullptr)
                  .ok());
  EXPECT_TRUE(lower_extension_to_core(*make_unary({.aliases = {AliasDecl::view_of(0)}}), x, {}, nullptr).ok());
  // Must-alias cannot be expressed by core ops.
  EXPECT_EQ(
      lower_extension_to_core(*make_unary({.aliases = {AliasDecl::must_alias(0)}}), x, {}, nullptr).status().code(),
      ErrorCode::kContractViolation);
}

TEST(ExtensionLoweringTest, SpecializationMustStrictlyWiden) {
  // Symbolic operands: the lowering asks for concrete dims.
  SymbolicExtent n = SymbolicExtent::symbol(0, std::nullopt);
  std::vector<ValueMetadata> symbolic{{DType::kFloat64, {n, 3}}, {DType::kFloat64, {3, 4}}};
  auto first = lower(MatmulLowering::kNeedsConcreteDims, symbolic);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->kind, Kind::kNeedsSpecialization);
  EXPECT_EQ(first->requirements, (SpecializationRequirements{SpecializationAxis::kConcreteDims}));
  // Granted with concrete operands: it lowers.
  auto second = lower(MatmulLowering::kNeedsConcreteDims, matmul_operands(), first->requirements);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->kind, Kind::kLowered);
  // Repeating what was granted is a provider contract error.
  auto repeat = lower(MatmulLowering::kRepeatsRequest, matmul_operands(), {SpecializationAxis::kExactStrides});
  EXPECT_EQ(repeat.status().code(), ErrorCode::kProviderContractError);
  EXPECT_EQ(repeat.status().stage(), ErrorStage::kPrepare);
}

TEST(ExtensionLoweringTest, LowersAnOperationOfAProgramWithConcreteSymbols) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3});
  auto w = *b.add_input(DType::kFloat64, {3, SymbolicExtent::bounded(8)});
  auto r = *b.emit_extension(std::make_shared<MatmulExtension>(MatmulLowering::kNeedsConcreteDims), {x, w});
  b.set_provenance(make_provenance("after"));
  auto e = *b.emit(CoreSemanticOp::kExp, {r[0]});
  auto program = b.freeze({e})->program;
  const OperationId ext(0);
  ASSERT_TRUE(program->operation(ext).is_extension());
  auto polymorphic = lower_extension_to_core(*program, ext, {});
  ASSERT_TRUE(polymorphic.ok());
  EXPECT_EQ(polymorphic->kind, Kind::kNeedsSpecialization);
  SymbolValues symbols;
  std::int64_t xs[] = {5, 3}, ws[] = {3, 6};
  ConcreteInput inputs[] = {{DType::kFloat64, IntArrayRef(xs, 2)}, {DType::kFloat64, IntArrayRef(ws, 2)}};
  ASSERT_TRUE(program->check_guards(inputs, &symbols).ok());
  auto concrete = lower_extension_to_core(*program, ext, {SpecializationAxis::kConcreteDims}, symbols);
  ASSERT_TRUE(concrete.ok()) << concrete.status().to_string();
  ASSERT_EQ(concrete->kind, Kind::kLowered);
  EXPECT_EQ(concrete->fragment->metadata(concrete->fragment->outputs()[0]),
            ValueMetadata::exact(DType::kFloat64, {5, 6}));
  EXPECT_EQ(lower_extension_to_core(*program, OperationId(1), {}).status().code(), ErrorCode::kInvalidArgument)
      << "exp is a core op";
}

TEST(ExtensionOpTest, OutputPruningKeepsLiveResultsInOrder) {
  auto op = make_unary(
      {.aliases = {AliasDecl::fresh(), AliasDecl::view_of(0), AliasDecl::fresh()}, .num_results = 3, .prunable = true});
  const bool live[] = {false, true, true};
  std::shared_ptr<const ExtensionOp> pruned = op->prune_outputs(live);
  ASSERT_NE(pruned, nullptr);
  EXPECT_FALSE(pruned->payload_equal(*op));
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {4});
  auto results = b.emit_extension(pruned, {x});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 2u);
  auto program = b.freeze(*results)->program;
  EXPECT_EQ(program->operation(OperationId(0)).aliases()[0], AliasDecl::view_of(0));
  EXPECT_EQ(program->operation(OperationId(0)).aliases()[1], AliasDecl::fresh());
  EXPECT_EQ(make_unary({})->prune_outputs(live), nullptr) << "not prunable: the default";
}

TEST(SpecializationRequirementsTest, WideningIsStrictAndFinite) {
  using A = SpecializationAxis;
  SpecializationRequirements none;
  SpecializationRequirements dims{A::kConcreteDims};
  SpecializationRequirements dims_strides{A::kConcreteDims, A::kExactStrides};
  EXPECT_TRUE(none.none());
  EXPECT_TRUE(dims.strictly_widens(none));
  EXPECT_TRUE(dims_strides.strictly_widens(dims));
  EXPECT_FALSE(dims.strictly_widens(dims)) << "repeat";
  EXPECT_FALSE(dims.strictly_widens(dims_strides)) << "narrowing";
  EXPECT_FALSE(SpecializationRequirements{A::kAlignment}.strictly_widens(dims)) << "not a superset";
  EXPECT_EQ(dims.check_widens(dims, "einsum").code(), ErrorCode::kProviderContractError);
  EXPECT_EQ(dims_strides.to_string(), "concrete_dims|exact_strides");
  EXPECT_EQ(none.to_string(), "none");
  // Any chain of strict widenings is at most kNumSpecializationAxes long.
  SpecializationRequirements granted;
  int steps = 0;
  for (int axis = 0; axis < kNumSpecializationAxes; ++axis) {
    SpecializationRequirements next = granted.with(static_cast<A>(axis));
    ASSERT_TRUE(next.strictly_widens(granted));
    granted = next;
    ++steps;
  }
  EXPECT_EQ(steps, kNumSpecializationAxes);
  for (int axis = 0; axis < kNumSpecializationAxes; ++axis)
    EXPECT_FALSE(granted.with(static_cast<A>(axis)).strictly_widens(granted));
}

}  // namespace
}  // namespace tenferro::program
