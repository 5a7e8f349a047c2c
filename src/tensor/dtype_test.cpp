#include "tenferro/tensor/dtype.h"

#include <gtest/gtest.h>

#include "tenferro/tensor/scalar.h"

namespace tenferro {
namespace {

static_assert(dtype_of<double> == DType::kFloat64);
static_assert(dtype_of<const std::complex<float>> == DType::kComplex64);
static_assert(std::is_same_v<cpp_type<DType::kInt32>, std::int32_t>);
static_assert(kNumDTypes == 7);

TEST(DTypeTest, SizesAlignmentsAndNames) {
  struct Expect {
    DType d;
    std::size_t size;
    const char* name;
  };
  for (const auto& e :
       {Expect{DType::kBool, 1, "bool"}, Expect{DType::kInt32, 4, "int32"}, Expect{DType::kInt64, 8, "int64"},
        Expect{DType::kFloat32, 4, "float32"}, Expect{DType::kFloat64, 8, "float64"},
        Expect{DType::kComplex64, 8, "complex64"}, Expect{DType::kComplex128, 16, "complex128"}}) {
    EXPECT_EQ(dtype_size(e.d), e.size);
    EXPECT_EQ(to_string(e.d), e.name);
    EXPECT_EQ(parse_dtype(e.name), e.d);
    EXPECT_LE(dtype_alignment(e.d), e.size);
  }
  EXPECT_EQ(parse_dtype("float16"), std::nullopt);
  EXPECT_EQ(fmt::format("{}", DType::kComplex128), "complex128");
}

TEST(DTypeTest, KindsAndRealComplexCounterparts) {
  EXPECT_TRUE(is_complex(DType::kComplex64));
  EXPECT_TRUE(is_floating(DType::kFloat32));
  EXPECT_TRUE(is_inexact(DType::kComplex128));
  EXPECT_FALSE(is_inexact(DType::kInt64));
  EXPECT_TRUE(is_integer(DType::kInt32));
  EXPECT_EQ(real_dtype(DType::kComplex128), DType::kFloat64);
  EXPECT_EQ(real_dtype(DType::kInt32), DType::kInt32);
  EXPECT_EQ(complex_dtype(DType::kFloat32), DType::kComplex64);
  EXPECT_EQ(complex_dtype(DType::kBool), std::nullopt);
}

TEST(DTypeTest, VisitDispatchesToTheCppType) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    const std::size_t size = visit_dtype(d, []<class T>(T) { return sizeof(T); });
    EXPECT_EQ(size, dtype_size(d));
    const DType back = visit_dtype(d, []<class T>(T) { return dtype_of<T>; });
    EXPECT_EQ(back, d);
  }
}

TEST(ScalarTest, HoldsAndConvertsValues) {
  EXPECT_EQ(Scalar::of(3).dtype(), DType::kInt32);
  EXPECT_EQ(Scalar::of(2.5).value<int>(), 2);
  EXPECT_EQ(Scalar::of(std::int64_t{7}).value<double>(), 7.0);
  EXPECT_EQ(Scalar::of(std::complex<double>(1, 2)).value<std::complex<float>>(), std::complex<float>(1, 2));
  EXPECT_TRUE(Scalar::of(true).value<bool>());
  EXPECT_EQ(Scalar::of(1.5), Scalar::of(1.5));
  EXPECT_NE(Scalar::of(1.5), Scalar::of(1.5f));
  EXPECT_EQ(Scalar::of(1.5).to_string(), "1.5:float64");
}

TEST(DTypeTest, PromoteTypesIsNumpys) {
  // numpy.promote_types over the seven dtypes (numpy 1.24), row a, column b.
  constexpr DType kOrder[] = {DType::kBool,    DType::kInt32,     DType::kInt64,     DType::kFloat32,
                              DType::kFloat64, DType::kComplex64, DType::kComplex128};
  constexpr DType kNumpy[7][7] = {
      {DType::kBool, DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64, DType::kComplex64,
       DType::kComplex128},
      {DType::kInt32, DType::kInt32, DType::kInt64, DType::kFloat64, DType::kFloat64, DType::kComplex128,
       DType::kComplex128},
      {DType::kInt64, DType::kInt64, DType::kInt64, DType::kFloat64, DType::kFloat64, DType::kComplex128,
       DType::kComplex128},
      {DType::kFloat32, DType::kFloat64, DType::kFloat64, DType::kFloat32, DType::kFloat64, DType::kComplex64,
       DType::kComplex128},
      {DType::kFloat64, DType::kFloat64, DType::kFloat64, DType::kFloat64, DType::kFloat64, DType::kComplex128,
       DType::kComplex128},
      {DType::kComplex64, DType::kComplex128, DType::kComplex128, DType::kComplex64, DType::kComplex128,
       DType::kComplex64, DType::kComplex128},
      {DType::kComplex128, DType::kComplex128, DType::kComplex128, DType::kComplex128, DType::kComplex128,
       DType::kComplex128, DType::kComplex128},
  };
  for (int i = 0; i < 7; ++i) {
    for (int j = 0; j < 7; ++j) {
      EXPECT_EQ(promote_types(kOrder[i], kOrder[j]), kNumpy[i][j])
          << to_string(kOrder[i]) << " + " << to_string(kOrder[j]);
    }
  }
  static_assert(promote_types(DType::kFloat32, DType::kComplex64) == DType::kComplex64);
}

}  // namespace
}  // namespace tenferro
