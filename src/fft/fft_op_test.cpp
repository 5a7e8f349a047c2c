// FftOp: option validation, payload identity, metadata inference (exact
// and symbolic extents) and the typed errors for bad input.
#include <gtest/gtest.h>

#include "tenferro/fft/fft_op.h"
#include "tenferro/program/shape_guard.h"

namespace tenferro::fft {
namespace {

using program::SymbolicExtent;
using program::ValueMetadata;

Result<ValueMetadata> infer(const FftOp& op, const ValueMetadata& x,
                            std::vector<program::ShapeGuard>* guards = nullptr) {
  program::ShapeConstraints constraints("test", guards);
  const ValueMetadata operands[] = {x};
  TENFERRO_ASSIGN_OR_RETURN(auto out, op.infer_metadata(operands, constraints));
  return out[0];
}

std::shared_ptr<const FftOp> make(FftKind kind, IntArrayRef s, IntArrayRef axes, FftNorm norm = FftNorm::kBackward) {
  Result<std::shared_ptr<const FftOp>> op = FftOp::make_n(kind, s, axes, norm);
  EXPECT_TRUE(op.ok()) << op.status().to_string();
  return *op;
}

TEST(FftOp, ShapesAndDtypesFollowNumpy) {
  const ValueMetadata c = ValueMetadata::exact(DType::kComplex64, {4, 6, 9});
  const ValueMetadata r = ValueMetadata::exact(DType::kFloat64, {4, 6, 9});
  EXPECT_EQ(*infer(*make(FftKind::kFft, {}, {-1}), c), ValueMetadata::exact(DType::kComplex64, {4, 6, 9}));
  EXPECT_EQ(*infer(*make(FftKind::kFft, {}, {0}), r), ValueMetadata::exact(DType::kComplex128, {4, 6, 9}));
  EXPECT_EQ(*infer(*make(FftKind::kIfft, {8, 3}, {1, 2}), c), ValueMetadata::exact(DType::kComplex64, {4, 8, 3}));
  EXPECT_EQ(*infer(*make(FftKind::kRfft, {}, {2, 1}), r), ValueMetadata::exact(DType::kComplex128, {4, 4, 9}));
  EXPECT_EQ(*infer(*make(FftKind::kRfft, {-1, 7}, {0, 2}), r), ValueMetadata::exact(DType::kComplex128, {4, 6, 4}));
  EXPECT_EQ(*infer(*make(FftKind::kIrfft, {}, {2}), c), ValueMetadata::exact(DType::kFloat32, {4, 6, 16}));
  EXPECT_EQ(*infer(*make(FftKind::kIrfft, {5}, {1}), c), ValueMetadata::exact(DType::kFloat32, {4, 5, 9}));
  EXPECT_EQ(*infer(*make(FftKind::kHfft, {}, {0}), c), ValueMetadata::exact(DType::kFloat32, {6, 6, 9}));
  EXPECT_EQ(*infer(*make(FftKind::kIhfft, {}, {-2}), r), ValueMetadata::exact(DType::kComplex128, {4, 4, 9}));
}

TEST(FftOp, GeometryResolvesDefaultsAndScale) {
  Result<FftGeometry> g = make(FftKind::kIrfft, {-1, 6}, {0, -1}, FftNorm::kOrtho)->geometry({3, 5});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->axes, (Dims{0, 1}));
  EXPECT_EQ(g->lengths, (Dims{3, 6}));
  EXPECT_EQ(g->staged_extents, (Dims{3, 4}));
  EXPECT_EQ(g->output_shape, (Dims{3, 6}));
  EXPECT_DOUBLE_EQ(g->scale, 1.0 / std::sqrt(18.0));
  EXPECT_DOUBLE_EQ(make(FftKind::kFft, {}, {0})->geometry({8})->scale, 1.0);
  EXPECT_DOUBLE_EQ(make(FftKind::kIfft, {}, {0})->geometry({8})->scale, 1.0 / 8);
  EXPECT_DOUBLE_EQ(make(FftKind::kHfft, {}, {0}, FftNorm::kForward)->geometry({5})->scale, 1.0 / 8);
  EXPECT_DOUBLE_EQ(make(FftKind::kIhfft, {}, {0}, FftNorm::kForward)->geometry({5})->scale, 1.0);
}

TEST(FftOp, SymbolicExtents) {
  program::SymbolicShape shape = {SymbolicExtent::symbol(0, std::nullopt), SymbolicExtent(8)};
  const ValueMetadata c{DType::kComplex128, shape};
  std::vector<program::ShapeGuard> guards;
  Result<ValueMetadata> y = infer(*make(FftKind::kFft, {}, {0}), c, &guards);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->shape[0], shape[0]);
  EXPECT_EQ(guards.size(), 1u);  // s0 >= 1
  Result<ValueMetadata> z = infer(*make(FftKind::kIrfft, {}, {0}), c, &guards);
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  EXPECT_EQ(z->shape[0], shape[0] + shape[0] - SymbolicExtent(2));
  // rfft cannot express n/2+1 of a symbol without an explicit length.
  const ValueMetadata r{DType::kFloat64, shape};
  EXPECT_EQ(infer(*make(FftKind::kRfft, {}, {0}), r, &guards).status().code(), ErrorCode::kInvalidArgument);
  Result<ValueMetadata> w = infer(*make(FftKind::kRfft, {10}, {0}), r, &guards);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->shape[0], SymbolicExtent(6));
}

TEST(FftOp, BadInputIsATypedError) {
  FftAttributes a;
  a.kind = FftKind::kFft;
  EXPECT_EQ(FftOp::create(a).status().code(), ErrorCode::kInvalidArgument);  // no axes
  a.axes = {0, 1};
  a.lengths = {4};
  EXPECT_EQ(FftOp::create(a).status().code(), ErrorCode::kInvalidArgument);  // lengths size
  a.lengths = {4, 0};
  EXPECT_EQ(FftOp::create(a).status().code(), ErrorCode::kInvalidArgument);  // length 0
  EXPECT_EQ(FftOp::make(FftKind::kFft, -3).status().code(), ErrorCode::kInvalidArgument);

  const ValueMetadata c = ValueMetadata::exact(DType::kComplex128, {4, 1});
  const ValueMetadata r = ValueMetadata::exact(DType::kFloat32, {4, 0});
  EXPECT_EQ(infer(*make(FftKind::kFft, {}, {2}), c).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(infer(*make(FftKind::kFft, {}, {-3}), c).status().code(), ErrorCode::kAxisOutOfRange);
  const Status repeated = infer(*make(FftKind::kFft, {}, {1, -1}), c).status();
  EXPECT_EQ(repeated.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(repeated.message().find("repeated"), std::string_view::npos) << repeated.to_string();
  EXPECT_EQ(repeated.stage(), ErrorStage::kCompile);
  EXPECT_EQ(infer(*make(FftKind::kRfft, {}, {0}), c).status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(*make(FftKind::kIrfft, {}, {0}), r).status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(*make(FftKind::kHfft, {}, {0}), r).status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(infer(*make(FftKind::kFft, {}, {0}), ValueMetadata::exact(DType::kInt64, {4})).status().code(),
            ErrorCode::kDTypeMismatch);
  // An empty axis without a length, irfft of one input point.
  EXPECT_EQ(infer(*make(FftKind::kFft, {}, {1}), r).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE(infer(*make(FftKind::kFft, {3}, {1}), r).ok());  // zero-padded
  EXPECT_EQ(infer(*make(FftKind::kIrfft, {}, {1}), c).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE(infer(*make(FftKind::kIrfft, {1}, {1}), c).ok());
  // A transform whose arrays cannot be addressed (2^60 complex128 values are
  // 2^64 bytes: the byte count wrapped around and FFTW aborted), also
  // across a batch; 2^58 values (2^62 bytes) are inferred (the engine then
  // fails the allocation with a typed error).
  const ValueMetadata one = ValueMetadata::exact(DType::kFloat64, {3});
  EXPECT_EQ(infer(*make(FftKind::kFft, {std::int64_t{1} << 60}, {0}), one).status().code(), ErrorCode::kSizeOverflow);
  EXPECT_EQ(infer(*make(FftKind::kRfft, {std::int64_t{1} << 62}, {0}), one).status().code(), ErrorCode::kSizeOverflow);
  EXPECT_EQ(
      infer(*make(FftKind::kFft, {std::int64_t{1} << 40}, {1}), ValueMetadata::exact(DType::kFloat32, {1 << 20, 3}))
          .status()
          .code(),
      ErrorCode::kSizeOverflow);
  EXPECT_TRUE(infer(*make(FftKind::kFft, {std::int64_t{1} << 58}, {0}), one).ok());
  EXPECT_EQ(parse_norm("orthonormal").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(*parse_norm("forward"), FftNorm::kForward);
}

TEST(FftOp, PayloadIdentity) {
  auto a = make(FftKind::kFft, {8}, {0});
  auto b = make(FftKind::kFft, {8}, {0});
  auto c = make(FftKind::kFft, {8}, {0}, FftNorm::kOrtho);
  auto d = make(FftKind::kIfft, {8}, {0});
  EXPECT_EQ(a->payload_hash(), b->payload_hash());
  EXPECT_TRUE(a->payload_equal(*b));
  EXPECT_FALSE(a->payload_equal(*c));
  EXPECT_FALSE(a->payload_equal(*d));
  EXPECT_NE(a->payload_hash(), c->payload_hash());
  EXPECT_EQ(a->describe(), "fft.fft(axes [0], s [8], backward)");
  EXPECT_TRUE(a->effects().is_pure());
}

}  // namespace
}  // namespace tenferro::fft
