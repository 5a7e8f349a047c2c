// Note [Vector math]: libmvec's vector functions against the scalar libm
// function, special values included, for every ISA this CPU runs; and the
// flat elementwise path proven to call them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/vector_math.h"
#include "tenferro/cpu/kernels/elementwise.h"

namespace tenferro::cpu {
namespace {

constexpr UnaryOp kOps[] = {UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kLog1p, UnaryOp::kExpm1,
                            UnaryOp::kSin, UnaryOp::kCos, UnaryOp::kTan,   UnaryOp::kTanh};

template <class T>
T scalar(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kLog1p:
      return std::log1p(x);
    case UnaryOp::kExpm1:
      return std::expm1(x);
    case UnaryOp::kSin:
      return std::sin(x);
    case UnaryOp::kCos:
      return std::cos(x);
    case UnaryOp::kTan:
      return std::tan(x);
    default:
      return std::tanh(x);
  }
}

// Special values, then random ones over several decades and both signs;
// 1003 elements, so every ISA ends on a partial vector.
template <class T>
std::vector<T> inputs() {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = {T(0),     -T(0),     T(1),   T(-1),   inf,   -inf,   std::numeric_limits<T>::quiet_NaN(),
                      T(1e-30), T(-1e-30), T(700), T(-700), T(20), T(-20), std::numeric_limits<T>::denorm_min()};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-6, 3);
  while (x.size() < 1003) x.push_back(static_cast<T>(mantissa(rng) * std::pow(10.0, decade(rng))));
  return x;
}

// |got - want| in units of want's last place (0 when both are the same
// non-finite value).
template <class T>
double ulps(T got, T want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e30;
  const T spacing = std::nextafter(std::fabs(want), std::numeric_limits<T>::infinity()) - std::fabs(want);
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(spacing);
}

template <class T>
void check_isa(CpuIsa isa) {
  const DType dtype = dtype_of<T>;
  const std::vector<T> x = inputs<T>();
  for (UnaryOp op : kOps) {
    const internal::VectorMathFn fn = internal::vector_math_unary(op, dtype, isa);
    ASSERT_NE(fn, nullptr) << to_string(op) << " " << to_string(dtype) << " " << to_string(isa);
    std::vector<T> out(x.size());
    fn(reinterpret_cast<char*>(out.data()), reinterpret_cast<const char*>(x.data()),
       static_cast<std::int64_t>(x.size()));
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double u = ulps(out[i], scalar(op, x[i]));
      if (u > worst) worst = u, at = i;
    }
    // libmvec's stated bound is 4 ulp from the exact result; libm's own
    // error adds up to one more.
    EXPECT_LE(worst, 5.0) << fmt::format("{} {} {}: x = {} gives {}, libm {}", to_string(op), dtype, to_string(isa),
                                         static_cast<double>(x[at]), static_cast<double>(out[at]),
                                         static_cast<double>(scalar(op, x[at])));
  }
}

TEST(VectorMathTest, MatchesLibmIncludingSpecialValuesOnEveryIsaOfThisCpu) {
  int checked = 0;
  for (CpuIsa isa : {CpuIsa::kAvx512, CpuIsa::kAvx2}) {
    if (!cpu_supports(isa)) continue;
    SCOPED_TRACE(to_string(isa));
    check_isa<double>(isa);
    check_isa<float>(isa);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512";
  EXPECT_EQ(internal::vector_math_unary(UnaryOp::kTanh, DType::kFloat64, CpuIsa::kPortable), nullptr);
  EXPECT_EQ(internal::vector_math_unary(UnaryOp::kTanh, DType::kComplex128, CpuIsa::kAvx2), nullptr);
  EXPECT_EQ(internal::vector_math_unary(UnaryOp::kSqrt, DType::kFloat64, CpuIsa::kAvx2), nullptr);
}

TEST(VectorMathTest, TheFlatElementwisePathCallsTheVectorFunction) {
  const CpuIsa isa = layout_kernel_isa();
  if (isa == CpuIsa::kPortable) GTEST_SKIP() << "portable kernels: scalar libm";
  // Inputs where libmvec and libm round differently, so equal bits prove
  // which one ran.
  const std::vector<double> x = inputs<double>();
  for (UnaryOp op : kOps) {
    std::vector<double> vec(x.size()), via_kernel(x.size());
    internal::vector_math_unary(op, DType::kFloat64, isa)(reinterpret_cast<char*>(vec.data()),
                                                          reinterpret_cast<const char*>(x.data()),
                                                          static_cast<std::int64_t>(x.size()));
    std::size_t differ = 0;
    for (std::size_t i = 0; i < x.size(); ++i) differ += !std::isnan(vec[i]) && vec[i] != scalar(op, x[i]);
    const std::int64_t shape[] = {static_cast<std::int64_t>(x.size())};
    const std::int64_t strides[] = {1};
    const TensorView in{const_cast<double*>(x.data()), shape, strides, DType::kFloat64, nullptr};
    const TensorView out{via_kernel.data(), shape, strides, DType::kFloat64, nullptr};
    ASSERT_TRUE(unary(op, in, out, testing::sequential_context(), nullptr).ok());
    EXPECT_EQ(std::memcmp(vec.data(), via_kernel.data(), vec.size() * sizeof(double)), 0) << to_string(op);
    if (op == UnaryOp::kTanh || op == UnaryOp::kExp) {
      EXPECT_GT(differ, 0u) << to_string(op) << ": no input tells libmvec from libm; the test proves nothing";
    }
  }
}

// has_vector_math (which selects the strided path's template) names exactly
// the ops of the per-ISA tables.
TEST(VectorMathTest, HasVectorMathMatchesTheTables) {
  constexpr UnaryOp kAll[] = {
#define TENFERRO_UNARY_OP(name, str, domain, cost) UnaryOp::k##name,
#include "tenferro/cpu/kernels/elementwise_ops.def"
  };
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    for (UnaryOp op : kAll) {
      EXPECT_EQ(internal::has_vector_math(op), internal::vector_math_unary(op, DType::kFloat64, isa) != nullptr)
          << to_string(op);
    }
  }
}

// Strided operands: a transposed input (packed tiles) and a column slice
// (contiguous inner runs) call the vector function on their runs; a
// stride-2 inner axis computes the scalar function per element.
TEST(VectorMathTest, StridedOperandsCallTheVectorFunctionOnContiguousRuns) {
  const CpuIsa isa = layout_kernel_isa();
  if (isa == CpuIsa::kPortable) GTEST_SKIP() << "portable kernels: scalar libm";
  const std::vector<double> values = inputs<double>();
  constexpr std::int64_t kRows = 37, kCols = 41;
  std::vector<double> x(kRows * kCols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = values[(i * 7) % values.size()];
  struct Layout {
    const char* name;
    std::int64_t shape[2];
    std::int64_t strides[2];
    std::int64_t offset;
    bool vector;
    std::uint64_t KernelStats::*path;
  };
  const Layout layouts[] = {
      {"transposed", {kCols, kRows}, {1, kCols}, 0, true, &KernelStats::packed_tiles},
      {"column slice", {kRows, kCols - 1}, {kCols, 1}, 1, true, &KernelStats::contiguous_inner},
      {"stride 2", {kRows, kCols / 2}, {kCols, 2}, 0, false, &KernelStats::strided_inner},
  };
  for (UnaryOp op : kOps) {
    const internal::VectorMathFn fn = internal::vector_math_unary(op, DType::kFloat64, isa);
    for (const Layout& l : layouts) {
      // The operand's elements in row-major order, and what each path gives.
      std::vector<double> gathered;
      for (std::int64_t i = 0; i < l.shape[0]; ++i) {
        for (std::int64_t j = 0; j < l.shape[1]; ++j)
          gathered.push_back(x[l.offset + i * l.strides[0] + j * l.strides[1]]);
      }
      std::vector<double> want(gathered.size());
      if (l.vector) {
        fn(reinterpret_cast<char*>(want.data()), reinterpret_cast<const char*>(gathered.data()),
           static_cast<std::int64_t>(want.size()));
      } else {
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = scalar(op, gathered[i]);
      }
      std::vector<double> got(gathered.size());
      const std::int64_t out_strides[] = {l.shape[1], 1};
      const TensorView in{x.data() + l.offset, l.shape, l.strides, DType::kFloat64, nullptr};
      const TensorView out{got.data(), l.shape, out_strides, DType::kFloat64, nullptr};
      KernelStats stats;
      ASSERT_TRUE(unary(op, in, out, testing::sequential_context(), &stats).ok());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), got.size() * sizeof(double)), 0)
          << to_string(op) << ", " << l.name;
      EXPECT_EQ(stats.vector_math, 1u) << l.name;
      EXPECT_EQ(stats.*l.path, 1u) << to_string(op) << ", " << l.name;
    }
  }
}

}  // namespace
}  // namespace tenferro::cpu
