#include "tenferro/testing/tensor_checks.h"

#include <cmath>
#include <limits>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tenferro::testing {
namespace {

using ::testing::HasSubstr;

TEST(RandomTensor, SameSeedSameValuesDifferentSeedDifferentValues) {
  for (DType dtype : {DType::kBool, DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64, DType::kComplex64,
                      DType::kComplex128}) {
    Tensor a = *random_tensor(dtype, {4, 5}, 7);
    Tensor b = *random_tensor(dtype, {4, 5}, 7);
    Tensor c = *random_tensor(dtype, {4, 5}, 8);
    EXPECT_TRUE(check_allclose(a, b, {0, 0, false}).ok()) << to_string(dtype);
    EXPECT_FALSE(check_allclose(a, c, {0, 0, false}).ok()) << to_string(dtype);
    EXPECT_TRUE(a.is_contiguous());
  }
}

TEST(RandomTensor, RespectsRanges) {
  RandomOptions options;
  options.low = 2.0;
  options.high = 3.0;
  const std::vector<double> drawn = *random_tensor(DType::kFloat64, {100}, 1, options)->to_vector<double>();
  for (double v : drawn) {
    EXPECT_GE(v, 2.0);
    EXPECT_LT(v, 3.0);
  }
  std::vector<std::int32_t> idx = *random_integers(DType::kInt32, {200}, 3, 0, 4)->to_vector<std::int32_t>();
  std::set<std::int32_t> seen(idx.begin(), idx.end());
  EXPECT_EQ(seen, (std::set<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(random_integers(DType::kFloat32, {2}, 1, 0, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(random_integers(DType::kInt64, {2}, 1, 2, 1).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Allclose, ToleranceAndReport) {
  Tensor e = *Tensor::from_values<double>({1.0, 2.0, 3.0, 4.0}, {2, 2});
  Tensor near = *Tensor::from_values<double>({1.0, 2.0 + 1e-13, 3.0, 4.0}, {2, 2});
  Tensor far = *Tensor::from_values<double>({1.0, 2.0, 3.5, 4.0}, {2, 2});
  EXPECT_TRUE(check_allclose(near, e).ok());
  Status s = check_allclose(far, e);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("1 of 4 elements"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("at [1, 0]: actual 3.5, expected 3"));
  EXPECT_TRUE(check_allclose(far, e, {0.2, 0.0, true}).ok());  // 0.5 <= 0.2 * 3
  EXPECT_FALSE(check_allclose(far, e, {0.1, 0.0, true}).ok());
}

TEST(Allclose, DTypeShapeNanInfAndStrides) {
  Tensor d = *Tensor::from_values<double>({1, 2}, {2});
  Tensor f = *Tensor::from_values<float>({1, 2}, {2});
  EXPECT_THAT(std::string(check_allclose(f, d).message()), HasSubstr("expected dtype float64, found float32"));
  Tensor d3 = *Tensor::from_values<double>({1, 2, 3}, {3});
  EXPECT_THAT(std::string(check_allclose(d3, d).message()), HasSubstr("expected shape [2], found [3]"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor n1 = *Tensor::from_values<double>({nan, inf}, {2});
  Tensor n2 = *Tensor::from_values<double>({nan, inf}, {2});
  EXPECT_TRUE(check_allclose(n1, n2).ok());
  EXPECT_FALSE(check_allclose(n1, n2, {1e-12, 1e-12, false}).ok());
  Tensor minus_inf = *Tensor::from_values<double>({nan, -inf}, {2});
  EXPECT_FALSE(check_allclose(minus_inf, n2).ok());
  // A transposed view compares by logical index.
  Tensor m = *Tensor::from_values<double>({1, 2, 3, 4}, {2, 2});
  Tensor mt = *Tensor::from_values<double>({1, 3, 2, 4}, {2, 2});
  EXPECT_TRUE(check_allclose(*m.transpose(0, 1), mt).ok());
}

TEST(Allclose, IntegersAreExact) {
  const std::int64_t big = (std::int64_t{1} << 60) + 1;
  Tensor a = *Tensor::from_values<std::int64_t>({big}, {1});
  Tensor b = *Tensor::from_values<std::int64_t>({big - 1}, {1});
  EXPECT_FALSE(check_allclose(a, b, {1.0, 1.0, true}).ok());
  EXPECT_TRUE(check_allclose(a, a).ok());
}

TEST(ComplexValues, RoundTripEveryDTypeFamilyAndStridedViews) {
  using cd = std::complex<double>;
  const std::vector<cd> v = {{1.5, -2}, {-3.25, 0.5}, {0, 1}, {7, 0}, {-0.5, 4}, {2, -1}};
  Result<Tensor> c = from_complex_values(DType::kComplex64, {2, 3}, v);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(complex_values(*c), v);
  // A transposed view is read in its own row-major order.
  const Tensor t = c->permute({1, 0}).value();
  EXPECT_EQ(complex_values(t), (std::vector<cd>{v[0], v[3], v[1], v[4], v[2], v[5]}));
  // Real dtypes drop the imaginary part; integers truncate; bool is != 0.
  Result<Tensor> f = from_complex_values(DType::kFloat32, {6}, v);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(complex_values(*f), (std::vector<cd>{1.5, -3.25, 0, 7, -0.5, 2}));
  Result<Tensor> i = from_complex_values(DType::kInt32, {6}, v);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(complex_values(*i), (std::vector<cd>{1, -3, 0, 7, 0, 2}));
  Result<Tensor> b = from_complex_values(DType::kBool, {6}, v);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(complex_values(*b), (std::vector<cd>{1, 1, 1, 1, 1, 1}));
  Result<Tensor> bad = from_complex_values(DType::kFloat64, {4}, v);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_THAT(bad.status().to_string(), HasSubstr("expected 4 values for shape [4], found 6"));
}

TEST(FormatTensor, ShowsValues) {
  Tensor t = *Tensor::from_values<std::int32_t>({1, 2, 3}, {3});
  EXPECT_EQ(format_tensor(t), "int32[3]{1, 2, 3}");
  EXPECT_EQ(format_tensor(t, 2), "int32[3]{1, 2, ...}");
}

}  // namespace
}  // namespace tenferro::testing
