#include "tenferro/tensor/tensor.h"

#include <gtest/gtest.h>

#include <complex>
#include <limits>
#include <numeric>
#include <vector>

namespace tenferro {
namespace {

// A row-major int64 tensor holding 0, 1, 2, ... so every element names its
// own flat position in the base storage.
Tensor iota(IntArrayRef shape) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(*checked_numel(shape)));
  std::iota(values.begin(), values.end(), 0);
  return *Tensor::from_values<std::int64_t>(values, shape);
}

std::vector<std::int64_t> values(const Tensor& t) { return *t.to_vector<std::int64_t>(); }

// Any failing view call must leave the receiver exactly as it was.
void expect_unchanged(const Tensor& t, const Tensor& before) {
  EXPECT_EQ(t.storage().get(), before.storage().get());
  EXPECT_TRUE(std::equal(t.shape().begin(), t.shape().end(), before.shape().begin(), before.shape().end()));
  EXPECT_TRUE(std::equal(t.strides().begin(), t.strides().end(), before.strides().begin(), before.strides().end()));
  EXPECT_EQ(t.offset(), before.offset());
  EXPECT_EQ(values(t), values(before));
}

TEST(TensorTest, EmptyIsRowMajorAlignedAndTyped) {
  auto t = Tensor::empty({2, 3, 4}, DType::kFloat32);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rank(), 3);
  EXPECT_EQ(t->numel(), 24);
  EXPECT_EQ(t->nbytes(), 96u);
  EXPECT_EQ(std::vector<std::int64_t>(t->strides().begin(), t->strides().end()), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->data()) % 64, 0u);
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_FALSE(t->is_col_major_contiguous());
  EXPECT_TRUE(t->typed_data<float>().ok());
  EXPECT_EQ(t->typed_data<double>().status().code(), ErrorCode::kDTypeMismatch);
  auto f = Tensor::empty({2, 3}, DType::kComplex128, MemoryOrder::kColMajor);
  EXPECT_TRUE(f->is_col_major_contiguous());
  EXPECT_FALSE(f->is_contiguous());
  EXPECT_EQ(f->strides()[1], 2);
}

TEST(TensorTest, ZeroSizeAndScalarTensorsWork) {
  auto z = Tensor::zeros({3, 0, 2}, DType::kFloat64);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->numel(), 0);
  EXPECT_TRUE(z->is_contiguous());
  EXPECT_TRUE(z->to_vector<double>()->empty());
  EXPECT_EQ(z->permute({2, 0, 1})->numel(), 0);
  EXPECT_EQ(z->reshape({0, 5})->numel(), 0);
  EXPECT_EQ(z->slice(0, 1, 3)->shape()[0], 2);
  auto s = Tensor::scalar(2.5);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rank(), 0);
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(*s->to_vector<double>(), std::vector<double>{2.5});
  EXPECT_EQ(values(*iota({}).reshape({1, 1})), std::vector<std::int64_t>{0});
}

TEST(TensorTest, FullOnesEyeAndArangeAsNumpy) {
  EXPECT_EQ(*Tensor::full({2, 2}, Scalar::of(2.5), DType::kFloat32)->to_vector<float>(),
            (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(
      *Tensor::full({3}, Scalar::of(std::complex<double>(1, -2)), DType::kComplex64)->to_vector<std::complex<float>>(),
      (std::vector<std::complex<float>>(3, {1.0f, -2.0f})));
  EXPECT_EQ(*Tensor::full({2}, Scalar::of(2.9), DType::kInt64)->to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 2}));  // truncated, as value<T>()
  auto col = Tensor::ones({2, 3}, DType::kFloat64, MemoryOrder::kColMajor);
  ASSERT_TRUE(col.ok());
  EXPECT_TRUE(col->is_col_major_contiguous());
  EXPECT_EQ(*col->to_vector<double>(), std::vector<double>(6, 1.0));
  const Tensor flags = *Tensor::ones({2}, DType::kBool);
  EXPECT_TRUE(static_cast<const bool*>(flags.data())[0] && static_cast<const bool*>(flags.data())[1]);
  EXPECT_EQ(*Tensor::eye(3, DType::kInt32)->to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(*Tensor::eye(2, DType::kFloat64, 3)->to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(Tensor::eye(0, DType::kFloat64)->numel(), 0);
  EXPECT_EQ(*Tensor::arange(4, DType::kInt64)->to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(*Tensor::arange(1.0, 2.0, 0.25, DType::kFloat64)->to_vector<double>(),
            (std::vector<double>{1.0, 1.25, 1.5, 1.75}));
  EXPECT_EQ(*Tensor::arange(3.0, 0.0, -1.0, DType::kFloat32)->to_vector<float>(), (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(Tensor::arange(2.0, 1.0, 1.0, DType::kFloat64)->numel(), 0);  // empty, as numpy
  EXPECT_EQ(Tensor::arange(-3, DType::kInt64)->numel(), 0);
  EXPECT_EQ(Tensor::arange(0.0, 1.0, 0.0, DType::kFloat64).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::arange(0.0, 1e300, 1e-300, DType::kFloat64).status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(Tensor::full({2, -1}, Scalar::of(1.0), DType::kFloat64).status().code(), ErrorCode::kInvalidArgument);
}

// IntArrayRef takes C arrays and std::arrays of extents as well as braced
// lists, vectors and SmallVectors (the C++ linalg audit: `std::int64_t
// axes[] = {0, 2}` did not bind).
TEST(TensorTest, ShapesFromCArraysAndStdArrays) {
  const std::int64_t dims[] = {2, 3};
  const std::array<std::int64_t, 3> more = {4, 1, 2};
  Result<Tensor> a = Tensor::zeros(dims, DType::kFloat64);
  Result<Tensor> b = Tensor::zeros(more, DType::kFloat32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Dims(a->shape()), (Dims{2, 3}));
  EXPECT_EQ(Dims(b->shape()), (Dims{4, 1, 2}));
  constexpr std::int64_t fixed[] = {5, 6, 7};
  static_assert(IntArrayRef(fixed).size() == 3 && IntArrayRef(fixed)[2] == 7);
  const IntArrayRef listed = {1, 2};  // a braced list still takes the initializer_list constructor
  EXPECT_EQ(listed.size(), 2u);
}

TEST(TensorTest, ShapeErrorsAreTyped) {
  EXPECT_EQ(Tensor::empty({2, -3}, DType::kFloat64).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::empty({1LL << 40, 1LL << 40}, DType::kFloat64).status().code(), ErrorCode::kSizeOverflow);
  // numel fits but bytes overflow.
  EXPECT_EQ(Tensor::empty({1LL << 61}, DType::kComplex128).status().code(), ErrorCode::kSizeOverflow);
  EXPECT_EQ((Tensor::from_values<double>({1.0, 2.0}, {3})).status().code(), ErrorCode::kShapeMismatch);
}

TEST(TensorTest, FromStorageValidatesBounds) {
  StorageRef storage = *Storage::allocate_host(10 * sizeof(double));
  EXPECT_TRUE(Tensor::from_storage(storage, DType::kFloat64, {2, 5}, {5, 1}).ok());
  EXPECT_TRUE(Tensor::from_storage(storage, DType::kFloat64, {5, 2}, {1, 5}).ok());
  EXPECT_TRUE(Tensor::from_storage(storage, DType::kFloat64, {3}, {3}, 1).ok());  // last element index 7
  EXPECT_EQ(Tensor::from_storage(storage, DType::kFloat64, {2, 5}, {5, 1}, 1).status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(Tensor::from_storage(storage, DType::kFloat64, {2, 5}, {5}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(Tensor::from_storage(storage, DType::kFloat64, {2}, {-1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::from_storage(storage, DType::kFloat64, {2}, {1}, -1).status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(Tensor::from_storage(storage, DType::kFloat64, {4}, {1LL << 62}).status().code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(Tensor::from_storage(storage, DType::kFloat64, {0, 100}, {100, 1}, 10).ok());
  EXPECT_EQ(Tensor::from_storage(StorageRef(), DType::kFloat64, {1}, {1}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(TensorTest, PermuteAndTransposeAreViews) {
  Tensor t = iota({2, 3, 4});
  Tensor p = *t.permute({2, 0, 1});
  EXPECT_EQ(p.storage().get(), t.storage().get());
  EXPECT_EQ(std::vector<std::int64_t>(p.shape().begin(), p.shape().end()), (std::vector<std::int64_t>{4, 2, 3}));
  std::vector<std::int64_t> expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expected.push_back(i * 12 + j * 4 + k);
  EXPECT_EQ(values(p), expected);
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_TRUE(p.is_non_overlapping_and_dense());
  Tensor tt = *t.transpose(0, -1);
  EXPECT_EQ(tt.shape()[0], 4);
  EXPECT_EQ(values(*tt.transpose(0, 2)), values(t));
  EXPECT_EQ(values(*t.permute({-1, 0, 1})), expected);

  const Tensor before = t;
  EXPECT_EQ(t.permute({0, 1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.permute({0, 0, 1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.permute({0, 1, 3}).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(t.transpose(0, 5).status().code(), ErrorCode::kAxisOutOfRange);
  expect_unchanged(t, before);
}

TEST(TensorTest, ReshapeViewsWhenStridesAllowAndRefusesOtherwise) {
  Tensor t = iota({2, 3, 4});
  Tensor r = *t.reshape({6, 4});
  EXPECT_EQ(r.storage().get(), t.storage().get());
  EXPECT_EQ(values(r), values(t));
  EXPECT_EQ(values(*t.reshape({-1})), values(t));
  EXPECT_EQ(t.reshape({4, -1})->shape()[1], 6);
  EXPECT_EQ(t.reshape({1, 24, 1})->rank(), 3);

  // Splitting and merging inside a permuted tensor's contiguous runs works.
  Tensor p = *t.permute({1, 2, 0});     // shape (3, 4, 2), strides (4, 1, 12)
  Tensor merged = *p.reshape({12, 2});  // axes 0,1 are contiguous among themselves
  EXPECT_EQ(values(merged), values(p));
  Tensor split = *p.reshape({3, 2, 2, 2});
  EXPECT_EQ(values(split), values(p));

  // A sliced column and a transposed matrix cannot be flattened as views.
  Tensor m = iota({3, 4});
  const Tensor before = m;
  Tensor mt = *m.transpose(0, 1);
  auto flat = mt.reshape({12});
  EXPECT_EQ(flat.status().code(), ErrorCode::kLayoutRequiresCopy);
  EXPECT_NE(flat.status().message().find("without a copy"), std::string_view::npos);
  Tensor cols = *m.slice(1, 0, 2);
  EXPECT_EQ(cols.reshape({6}).status().code(), ErrorCode::kLayoutRequiresCopy);
  EXPECT_EQ(values(*cols.reshape({3, 2, 1})), values(cols));
  EXPECT_EQ(m.reshape({5, 2}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(m.reshape({-1, -1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.reshape({5, -1}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(m.reshape({-3, 4}).status().code(), ErrorCode::kInvalidArgument);
  expect_unchanged(m, before);
}

TEST(TensorTest, BroadcastUsesZeroStrides) {
  Tensor v = iota({3, 1});
  Tensor b = *v.broadcast_to({2, 3, 4});
  EXPECT_EQ(b.strides()[0], 0);
  EXPECT_EQ(b.strides()[2], 0);
  std::vector<std::int64_t> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) expected.push_back(j);
  EXPECT_EQ(values(b), expected);
  EXPECT_FALSE(b.is_non_overlapping_and_dense());
  const Tensor before = v;
  EXPECT_EQ(v.broadcast_to({3, 2, 4}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(v.broadcast_to({4}).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(v.broadcast_to({3, -1}).status().code(), ErrorCode::kInvalidArgument);
  expect_unchanged(v, before);
}

TEST(TensorTest, SliceWithStepAndNegativeBounds) {
  Tensor t = iota({10});
  EXPECT_EQ(values(*t.slice(0, 1, 8, 3)), (std::vector<std::int64_t>{1, 4, 7}));
  EXPECT_EQ(values(*t.slice(0, -3, 10)), (std::vector<std::int64_t>{7, 8, 9}));
  EXPECT_EQ(values(*t.slice(0, 5, 100)), (std::vector<std::int64_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(t.slice(0, 6, 2)->numel(), 0);
  Tensor m = iota({4, 5});
  Tensor s = *m.slice(1, 1, 5, 2);
  EXPECT_EQ(values(s), (std::vector<std::int64_t>{1, 3, 6, 8, 11, 13, 16, 18}));
  EXPECT_EQ(values(*s.slice(0, 2, 4)), (std::vector<std::int64_t>{11, 13, 16, 18}));
  const Tensor before = m;
  EXPECT_EQ(m.slice(1, 0, 5, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.slice(1, 5, 0, -1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.slice(2, 0, 1).status().code(), ErrorCode::kAxisOutOfRange);
  expect_unchanged(m, before);
}

TEST(TensorTest, DiagonalSqueezeUnsqueeze) {
  Tensor t = iota({3, 3});
  EXPECT_EQ(values(*t.diagonal()), (std::vector<std::int64_t>{0, 4, 8}));
  Tensor cube = iota({2, 3, 3});
  Tensor d = *cube.diagonal(1, 2);  // (2, 3)
  EXPECT_EQ(values(d), (std::vector<std::int64_t>{0, 4, 8, 9, 13, 17}));
  Tensor rect = iota({2, 4});
  EXPECT_EQ(values(*rect.diagonal()), (std::vector<std::int64_t>{0, 5}));
  EXPECT_EQ(t.diagonal(1, 1).status().code(), ErrorCode::kInvalidArgument);

  Tensor u = *t.unsqueeze(0);
  EXPECT_EQ(u.rank(), 3);
  EXPECT_TRUE(u.is_contiguous());
  Tensor u2 = *t.unsqueeze(-1);
  EXPECT_EQ(u2.shape()[2], 1);
  EXPECT_EQ(values(u2), values(t));
  EXPECT_EQ(t.unsqueeze(3).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(values(*u.squeeze(0)), values(t));
  EXPECT_EQ(t.squeeze(0).status().code(), ErrorCode::kShapeMismatch);
  Tensor ones = iota({1, 3, 1});
  EXPECT_EQ(ones.squeeze().rank(), 1);
}

TEST(TensorTest, DenseQueriesAcrossLayouts) {
  Tensor t = iota({4, 6});
  EXPECT_TRUE(t.slice(0, 1, 3)->is_contiguous());
  EXPECT_FALSE(t.slice(1, 1, 3)->is_contiguous());
  EXPECT_FALSE(t.slice(1, 1, 3)->is_non_overlapping_and_dense());
  EXPECT_TRUE(t.transpose(0, 1)->is_col_major_contiguous());
  EXPECT_TRUE(iota({1, 5}).is_col_major_contiguous());
  Tensor single = iota({1, 1});
  EXPECT_TRUE(single.is_contiguous());
  EXPECT_TRUE(single.is_col_major_contiguous());
}

TEST(TensorTest, UndefinedTensorIsHandled) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.to_string(), "Tensor(undefined)");
  EXPECT_EQ(t.reshape({}).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(t.to_vector<double>().status().code(), ErrorCode::kFailedPrecondition);
}

TEST(TensorTest, ToStringShowsLayout) {
  EXPECT_EQ(iota({2, 3}).to_string(), "Tensor(int64, [2, 3], strides [3, 1], offset 0)");
}

// numpy's str(): the same text for the same values.
TEST(TensorTest, FormatValuesPrintsAsNumpy) {
  EXPECT_EQ(*iota({2, 3}).format_values(), "[[0, 1, 2],\n [3, 4, 5]]");
  // NaN prints as numpy prints it, whatever its sign bit (fmt says "-nan").
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(*Tensor::from_values<double>({-nan, nan, -inf, inf}, {4})->format_values(), "[nan, nan, -inf, inf]");
  EXPECT_EQ(*Tensor::from_values<std::complex<double>>({{-nan, -nan}, {1, -2}}, {2})->format_values(),
            "[nan+nanj, 1-2j]");
  EXPECT_EQ(*iota({2, 2, 2}).format_values(), "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
  EXPECT_EQ(*iota({}).format_values(), "0");
  EXPECT_EQ(*iota({0}).format_values(), "[]");
  // A transposed view prints its logical order.
  EXPECT_EQ(*iota({2, 3}).transpose(0, 1)->format_values(), "[[0, 3],\n [1, 4],\n [2, 5]]");
  // Beyond the threshold: the first and last three of each axis.
  EXPECT_EQ(*iota({2000}).format_values(), "[0, 1, 2, ..., 1997, 1998, 1999]");
  EXPECT_EQ(*iota({40, 40}).format_values(),
            "[[0, 1, 2, ..., 37, 38, 39],\n [40, 41, 42, ..., 77, 78, 79],\n [80, 81, 82, ..., 117, 118, 119],\n ...,\n"
            " [1480, 1481, 1482, ..., 1517, 1518, 1519],\n [1520, 1521, 1522, ..., 1557, 1558, 1559],\n"
            " [1560, 1561, 1562, ..., 1597, 1598, 1599]]");
  EXPECT_EQ(*Tensor::from_values<double>({0.5, -2, 1e-10}, {3})->format_values(), "[0.5, -2, 1e-10]");
  EXPECT_EQ(*Tensor::from_values<std::complex<double>>({{1, 2}, {0.5, -1}}, {2})->format_values(), "[1+2j, 0.5-1j]");
  EXPECT_EQ(*Tensor::from_values<bool>({true, false}, {2})->format_values(), "[true, false]");
  EXPECT_EQ(Tensor().format_values().status().code(), ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tenferro
