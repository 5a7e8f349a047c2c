#include "tenferro/tensor/shape.h"

#include <gtest/gtest.h>

namespace tenferro {
namespace {

TEST(ShapeTest, NumelChecksNegativeAndOverflow) {
  EXPECT_EQ(*checked_numel({}), 1);
  EXPECT_EQ(*checked_numel({2, 3, 4}), 24);
  EXPECT_EQ(*checked_numel({5, 0, 7}), 0);
  EXPECT_EQ(checked_numel({2, -1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(checked_numel({1LL << 40, 1LL << 40}).status().code(), ErrorCode::kSizeOverflow);
  // An empty axis makes an overflowing product legal.
  EXPECT_EQ(*checked_numel({1LL << 40, 1LL << 40, 0}), 0);
}

TEST(ShapeTest, DefaultStrides) {
  EXPECT_EQ(row_major_strides({2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(col_major_strides({2, 3, 4}), (Dims{1, 2, 6}));
  EXPECT_EQ(row_major_strides({}), Dims{});
  EXPECT_EQ(row_major_strides({3, 0, 2}), (Dims{2, 2, 1}));
}

TEST(ShapeTest, NormalizeAxis) {
  EXPECT_EQ(*normalize_axis(-1, 3), 2);
  EXPECT_EQ(*normalize_axis(0, 3), 0);
  Status s = normalize_axis(3, 3).status();
  EXPECT_EQ(s.code(), ErrorCode::kAxisOutOfRange);
  EXPECT_NE(s.message().find("axis 3"), std::string_view::npos);
  EXPECT_EQ(normalize_axis(-4, 3).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(normalize_axis(0, 0).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(shape_to_string({2, 3}), "[2, 3]");
}

}  // namespace
}  // namespace tenferro
