// LinalgOp: result metadata of every operation (exact and symbolic shapes),
// typed compile errors, payload identity, effects and aliases, and use in a
// program builder.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "tenferro/linalg/linalg_op.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::linalg {
namespace {

using program::ShapeConstraints;
using program::SymbolicExtent;
using program::ValueMetadata;

Result<SmallVector<ValueMetadata, 2>> infer(const LinalgOp& op, std::initializer_list<ValueMetadata> operands,
                                            std::vector<program::ShapeGuard>* guards = nullptr) {
  ShapeConstraints constraints(op.family_id(), guards);
  return op.infer_metadata(std::span<const ValueMetadata>(operands.begin(), operands.size()), constraints);
}

std::vector<std::string> describe(const SmallVector<ValueMetadata, 2>& out) {
  std::vector<std::string> s;
  for (const ValueMetadata& m : out) s.push_back(m.to_string());
  return s;
}

using V = std::vector<std::string>;

TEST(LinalgOpTest, ResultMetadataOfEveryOperation) {
  const ValueMetadata a = ValueMetadata::exact(DType::kFloat64, {7, 5, 3});
  const ValueMetadata w = ValueMetadata::exact(DType::kComplex64, {2, 3, 5});
  const ValueMetadata sq = ValueMetadata::exact(DType::kFloat32, {2, 4, 4});
  const ValueMetadata rhs = ValueMetadata::exact(DType::kFloat32, {2, 4, 6});
  EXPECT_EQ(describe(*infer(*LinalgOp::svd(SvdMode::kThin), {a})),
            (V{"float64[7, 5, 3]", "float64[7, 3]", "float64[7, 3, 3]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::svd(SvdMode::kFull), {w})),
            (V{"complex64[2, 3, 3]", "float32[2, 3]", "complex64[2, 5, 5]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::svd(SvdMode::kValuesOnly), {a})), (V{"float64[7, 3]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::qr(QrMode::kReduced), {w})), (V{"complex64[2, 3, 3]", "complex64[2, 3, 5]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::qr(QrMode::kComplete), {a})), (V{"float64[7, 5, 5]", "float64[7, 5, 3]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::eigh(), {sq})), (V{"float32[2, 4]", "float32[2, 4, 4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::eigh(false), {sq})), (V{"float32[2, 4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::eig(), {sq})), (V{"complex64[2, 4]", "complex64[2, 4, 4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::cholesky(), {sq})), (V{"float32[2, 4, 4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::lu(), {a})), (V{"float64[7, 5, 3]", "int64[7, 3]", "int64[7, 5]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::solve(), {sq, rhs})), (V{"float32[2, 4, 6]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::triangular_solve(false), {sq, rhs})), (V{"float32[2, 4, 6]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::inv(), {sq})), (V{"float32[2, 4, 4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::det(), {sq})), (V{"float32[2]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::slogdet(), {sq})), (V{"float32[2]", "float32[2]"}));
  const ValueMetadata tall = ValueMetadata::exact(DType::kComplex128, {6, 4});
  const ValueMetadata tall_rhs = ValueMetadata::exact(DType::kComplex128, {6, 2});
  EXPECT_EQ(describe(*infer(*LinalgOp::lstsq(), {tall, tall_rhs})), (V{"complex128[4, 2]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::lstsq(-1.0, true), {tall, tall_rhs})), (V{"complex128[4, 2]", "float64[4]"}));
  EXPECT_EQ(describe(*infer(*LinalgOp::pinv(), {tall})), (V{"complex128[4, 6]"}));
  EXPECT_EQ(describe(*infer(**LinalgOp::matrix_norm(NormOrder::kNuclear), {w})), (V{"float32[2]"}));
  EXPECT_EQ(describe(*infer(**LinalgOp::vector_norm(NormOrder::kP, 3), {tall})), (V{"float64[6]"}));
}

TEST(LinalgOpTest, SymbolicExtentsFlowAndNonSquareBecomesAGuard) {
  program::ProgramBuilder b;
  const auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), SymbolicExtent::unknown()}, "x");
  const auto outs = *b.emit_extension(LinalgOp::svd(SvdMode::kThin), {x});
  const ValueMetadata s = *b.metadata(outs[1]);
  EXPECT_EQ(s.to_string(), "float64[min(s0, s1)]");
  // inv needs a square matrix: undecidable at compile time -> a guard.
  EXPECT_EQ(b.num_guards(), 0u);
  ASSERT_TRUE(b.emit_extension(LinalgOp::inv(), {x}).ok());
  EXPECT_EQ(b.num_guards(), 1u);
  const auto frozen = *b.freeze({outs[0]});
  (void)frozen;
}

TEST(LinalgOpTest, TypedCompileErrors) {
  const ValueMetadata rect = ValueMetadata::exact(DType::kFloat64, {3, 4});
  Result<SmallVector<ValueMetadata, 2>> r = infer(*LinalgOp::cholesky(), {rect});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
  EXPECT_NE(r.status().message().find("square"), std::string::npos) << r.status().to_string();

  r = infer(*LinalgOp::svd(), {ValueMetadata::exact(DType::kInt64, {3, 3})});
  EXPECT_EQ(r.status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_NE(r.status().message().find("int64"), std::string::npos);

  r = infer(*LinalgOp::qr(), {ValueMetadata::exact(DType::kFloat64, {3})});
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch);

  const ValueMetadata sq = ValueMetadata::exact(DType::kFloat64, {2, 3, 3});
  r = infer(*LinalgOp::solve(), {sq, ValueMetadata::exact(DType::kFloat64, {2, 4, 1})});
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch) << "rows of B";
  r = infer(*LinalgOp::solve(), {sq, ValueMetadata::exact(DType::kFloat64, {5, 3, 1})});
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch) << "batch extents";
  r = infer(*LinalgOp::solve(), {sq, ValueMetadata::exact(DType::kFloat32, {2, 3, 1})});
  EXPECT_EQ(r.status().code(), ErrorCode::kDTypeMismatch) << "mixed dtypes";
  r = infer(*LinalgOp::solve(), {sq});
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << "operand count";

  EXPECT_EQ(LinalgOp::matrix_norm(NormOrder::kP).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LinalgOp::vector_norm(NormOrder::kNuclear).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LinalgOp::vector_norm(NormOrder::kP, std::nan("")).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LinalgOp::vector_norm(NormOrder::kP, INFINITY).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(LinalgOp::vector_norm(NormOrder::kP, -1).ok());  // numpy's (sum |x|^-1)^-1

  // A failed emit leaves the builder unchanged.
  program::ProgramBuilder b;
  const auto x = *b.add_input(DType::kFloat64, {3, 4}, "x");
  EXPECT_EQ(b.emit_extension(LinalgOp::det(), {x}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(b.num_operations(), 0u);
}

TEST(LinalgOpTest, RelativeCutoffIsRcondOrNumpysDefault) {
  EXPECT_EQ(relative_cutoff(1e-3, DType::kFloat64, 5, 7), 1e-3);
  EXPECT_EQ(relative_cutoff(0.0, DType::kFloat32, 5, 7), 0.0);
  // numpy: S.max() * max(M, N) * eps, eps of the real precision.
  EXPECT_EQ(relative_cutoff(-1, DType::kFloat64, 5, 7), 7 * std::numeric_limits<double>::epsilon());
  EXPECT_EQ(relative_cutoff(-1, DType::kComplex128, 9, 2), 9 * std::numeric_limits<double>::epsilon());
  EXPECT_EQ(relative_cutoff(-1, DType::kFloat32, 3, 4), 4 * static_cast<double>(std::numeric_limits<float>::epsilon()));
  EXPECT_EQ(relative_cutoff(std::nan(""), DType::kComplex64, 6, 1),
            6 * static_cast<double>(std::numeric_limits<float>::epsilon()));
}

TEST(LinalgOpTest, PayloadIdentityEffectsAndAliases) {
  EXPECT_TRUE(LinalgOp::svd(SvdMode::kThin)->payload_equal(*LinalgOp::svd(SvdMode::kThin)));
  EXPECT_EQ(LinalgOp::svd(SvdMode::kThin)->payload_hash(), LinalgOp::svd(SvdMode::kThin)->payload_hash());
  EXPECT_FALSE(LinalgOp::svd(SvdMode::kThin)->payload_equal(*LinalgOp::svd(SvdMode::kFull)));
  EXPECT_NE(LinalgOp::svd(SvdMode::kThin)->payload_hash(), LinalgOp::svd(SvdMode::kFull)->payload_hash());
  EXPECT_FALSE(LinalgOp::lstsq(1e-3)->payload_equal(*LinalgOp::lstsq(1e-4)));
  EXPECT_TRUE(LinalgOp::lstsq(-5)->payload_equal(*LinalgOp::lstsq()));  // every negative rcond is the default
  EXPECT_TRUE((*LinalgOp::vector_norm(NormOrder::kTwo))->payload_equal(**LinalgOp::vector_norm(NormOrder::kP, 2)));
  // Options a kind does not use are canonicalised away.
  LinalgAttributes noisy;
  noisy.kind = LinalgOpKind::kDet;
  noisy.svd_mode = SvdMode::kFull;
  noisy.rcond = 3;
  EXPECT_TRUE((*LinalgOp::create(noisy))->payload_equal(*LinalgOp::det()));
  EXPECT_TRUE(LinalgOp::svd()->effects().is_pure());
  EXPECT_EQ(LinalgOp::lu()->aliases().size(), 3u);
  EXPECT_EQ(LinalgOp::svd(SvdMode::kValuesOnly)->aliases().size(), 1u);
  EXPECT_EQ(LinalgOp::triangular_solve(true, true, TriangularTranspose::kAdjoint)->describe(),
            "linalg.triangular_solve(lower, unit, adjoint)");
  EXPECT_EQ(LinalgOp::svd(SvdMode::kValuesOnly)->describe(), "linalg.svd(values_only)");
}

TEST(LinalgOpTest, SlotsAndTableFacts) {
  EXPECT_EQ(slot_of(LinalgOp::det()->attributes()), LinalgSlot::kLu);
  EXPECT_EQ(slot_of((*LinalgOp::matrix_norm(NormOrder::kTwo))->attributes()), LinalgSlot::kSvd);
  EXPECT_EQ(slot_of((*LinalgOp::matrix_norm(NormOrder::kFrobenius))->attributes()), LinalgSlot::kNone);
  EXPECT_TRUE(requires_square_input(LinalgOpKind::kEigh));
  EXPECT_FALSE(requires_square_input(LinalgOpKind::kQr));
  EXPECT_FALSE(rejects_non_finite(LinalgOpKind::kVectorNorm));
  EXPECT_EQ(num_operands(LinalgOpKind::kLstsq), 2);
}

}  // namespace
}  // namespace tenferro::linalg
