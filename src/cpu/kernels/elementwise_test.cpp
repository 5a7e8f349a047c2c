// Elementwise kernels against a scalar reference computed here in double
// precision, over every dtype of each op's domain and every operand layout.
#include "tenferro/cpu/kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "cpu/kernels/kernel_table.h"
#include "cpu/kernels/kernel_test_support.h"

namespace tenferro::cpu {
namespace {

using C = std::complex<double>;
using testing::KernelTable;
using testing::Layout;
using testing::make_tensor;
using testing::matches;
using testing::unravel;
using testing::value_at;

constexpr UnaryOp kUnaryOps[] = {
#define TENFERRO_UNARY_OP(name, str, domain, cost) UnaryOp::k##name,
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
constexpr BinaryOp kBinaryOps[] = {
#define TENFERRO_BINARY_OP(name, str, domain, cost) BinaryOp::k##name,
#include "tenferro/cpu/kernels/elementwise_ops.def"
};

// ---- independent scalar references (double precision) ----
C ref_unary(UnaryOp op, DType dtype, C z) {
  const bool cx = is_complex(dtype);
  const double x = z.real();
  switch (op) {
    case UnaryOp::kNeg:
      return -z;
    case UnaryOp::kAbs:
      return std::abs(z);
    case UnaryOp::kSign:
      if (cx) return z == C(0) ? C(0) : z / std::abs(z);
      return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case UnaryOp::kExp:
      return cx ? std::exp(z) : C(std::exp(x));
    case UnaryOp::kLog:
      return cx ? std::log(z) : C(std::log(x));
    case UnaryOp::kLog1p:
      return cx ? std::log(1.0 + z) : C(std::log1p(x));
    case UnaryOp::kExpm1:
      return cx ? std::exp(z) - 1.0 : C(std::expm1(x));
    case UnaryOp::kSqrt:
      return cx ? std::sqrt(z) : C(std::sqrt(x));
    case UnaryOp::kRsqrt:
      return cx ? 1.0 / std::sqrt(z) : C(1.0 / std::sqrt(x));
    case UnaryOp::kSin:
      return cx ? std::sin(z) : C(std::sin(x));
    case UnaryOp::kCos:
      return cx ? std::cos(z) : C(std::cos(x));
    case UnaryOp::kTan:
      return cx ? std::tan(z) : C(std::tan(x));
    case UnaryOp::kTanh:
      return cx ? std::tanh(z) : C(std::tanh(x));
    case UnaryOp::kLogistic:
      return cx ? 1.0 / (1.0 + std::exp(-z)) : C(1.0 / (1.0 + std::exp(-x)));
    case UnaryOp::kConj:
      return std::conj(z);
    case UnaryOp::kReal:
      return z.real();
    case UnaryOp::kImag:
      return z.imag();
    case UnaryOp::kFloor:
      return std::floor(x);
    case UnaryOp::kCeil:
      return std::ceil(x);
    case UnaryOp::kRound:
      return std::nearbyint(x);  // the default rounding mode: half to even
    case UnaryOp::kIsFinite:
      return std::isfinite(z.real()) && std::isfinite(z.imag()) ? 1.0 : 0.0;
    case UnaryOp::kIsNan:
      return std::isnan(z.real()) || std::isnan(z.imag()) ? 1.0 : 0.0;
    case UnaryOp::kNot:
      if (dtype == DType::kBool) return x == 0 ? 1.0 : 0.0;
      return -x - 1;  // two's complement
  }
  return {};
}

// An unsigned bit pattern read as the signed integer dtype `dtype`.
double as_signed(DType dtype, std::uint64_t bits) {
  if (dtype == DType::kInt32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
  return static_cast<double>(static_cast<std::int64_t>(bits));
}

// Shifts through powers of two; out-of-range amounts as in StableHLO.
double ref_shift(BinaryOp op, DType dtype, double x, double y) {
  const double width = dtype == DType::kInt32 ? 32 : 64;
  const bool in_range = y >= 0 && y < width;
  const auto n = static_cast<int>(y);
  switch (op) {
    case BinaryOp::kShiftLeft: {
      if (!in_range) return 0;
      auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
      for (int k = 0; k < n; ++k) v *= 2;
      return as_signed(dtype, v);
    }
    case BinaryOp::kShiftRightArithmetic:
      if (!in_range) return x < 0 ? -1 : 0;
      return std::floor(x / std::ldexp(1.0, n));
    default: {
      if (!in_range) return 0;
      const auto i = static_cast<std::int64_t>(x);
      const std::uint64_t u = dtype == DType::kInt32 ? static_cast<std::uint32_t>(static_cast<std::int32_t>(i))
                                                     : static_cast<std::uint64_t>(i);
      return as_signed(dtype, u >> n);
    }
  }
}

C ref_binary(BinaryOp op, DType dtype, C a, C b) {
  const bool cx = is_complex(dtype);
  const double x = a.real(), y = b.real();
  auto nan_max = [](double p, double q) { return std::isnan(p) || std::isnan(q) ? NAN : std::max(p, q); };
  auto nan_min = [](double p, double q) { return std::isnan(p) || std::isnan(q) ? NAN : std::min(p, q); };
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      if (is_integer(dtype)) return std::trunc(x / y);
      return a / b;
    case BinaryOp::kPow:
      return cx ? std::pow(a, b) : C(std::pow(x, y));
    case BinaryOp::kMax:
      return nan_max(x, y);
    case BinaryOp::kMin:
      return nan_min(x, y);
    case BinaryOp::kAtan2:
      return std::atan2(x, y);
    case BinaryOp::kComplex:
      return {x, y};
    case BinaryOp::kRemainder:
      return x - y * std::floor(x / y);
    case BinaryOp::kFmod:
      return x - y * std::trunc(x / y);
    // Bool operands are 0 or 1, so the bitwise forms are the logical ones.
    case BinaryOp::kAnd:
      return static_cast<double>(static_cast<std::int64_t>(x) & static_cast<std::int64_t>(y));
    case BinaryOp::kOr:
      return static_cast<double>(static_cast<std::int64_t>(x) | static_cast<std::int64_t>(y));
    case BinaryOp::kXor:
      return static_cast<double>(static_cast<std::int64_t>(x) ^ static_cast<std::int64_t>(y));
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightArithmetic:
    case BinaryOp::kShiftRightLogical:
      return ref_shift(op, dtype, x, y);
  }
  return {};
}

bool ref_compare(CompareDirection d, C a, C b) {
  switch (d) {
    case CompareDirection::kEq:
      return a == b;
    case CompareDirection::kNe:
      return a != b;
    case CompareDirection::kLt:
      return a.real() < b.real();
    case CompareDirection::kLe:
      return a.real() <= b.real();
    case CompareDirection::kGt:
      return a.real() > b.real();
    case CompareDirection::kGe:
      return a.real() >= b.real();
  }
  return false;
}

// Replaces zeros of an integer tensor by 7 (divisors).
void make_nonzero(const Tensor& t) {
  visit_dtype(t.dtype(), [&]<class T>(T) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      for (std::int64_t i = 0; i < t.numel(); ++i) {
        const auto idx = unravel(i, t.shape());
        std::int64_t off = 0;
        for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
        T& v = static_cast<T*>(t.data())[off];
        if (v == 0) v = 7;
      }
    }
  });
}

// Checks out[i] == want(i) for every element.
template <class Want>
void expect_elements(const Tensor& out, Want&& want, double rtol = 0) {
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const auto idx = unravel(i, out.shape());
    const C w = want(idx);
    const C g = value_at(out, idx);
    ASSERT_TRUE(matches(g, w, out.dtype(), rtol)) << "element " << i << ": got " << g << ", want " << w;
  }
}

const std::vector<std::vector<std::int64_t>> kShapes = {{}, {0}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 5}};
constexpr Layout kOutLayouts[] = {Layout::kContiguous, Layout::kSliced};

class ElementwiseConformance : public ::testing::TestWithParam<const KernelTable*> {
 protected:
  const KernelTable& k() const { return *GetParam(); }
};

TEST_P(ElementwiseConformance, UnaryOpsMatchTheReferenceForEveryDTypeAndLayout) {
  for (UnaryOp op : kUnaryOps) {
    for (DType dtype : testing::kAllDTypes) {
      const std::optional<DType> out_dtype = result_dtype(op, dtype);
      if (!out_dtype) continue;
      for (const auto& shape : kShapes) {
        for (Layout xl : testing::kSweepInputLayouts) {
          for (Layout ol : kOutLayouts) {
            SCOPED_TRACE(fmt::format("{} {} {} x:{} out:{}", to_string(op), dtype, shape_to_string(shape),
                                     layout_name(xl), layout_name(ol)));
            Tensor x = make_tensor(shape, dtype, xl, 11);
            Tensor out = make_tensor(shape, *out_dtype, ol, 12);
            ASSERT_TRUE(k().unary(op, x.view(), out.view(), testing::sequential_context(), nullptr).ok());
            expect_elements(out, [&](const auto& idx) { return ref_unary(op, dtype, value_at(x, idx)); });
          }
        }
      }
    }
  }
}

TEST_P(ElementwiseConformance, BinaryOpsMatchTheReferenceForEveryDTypeAndLayout) {
  for (BinaryOp op : kBinaryOps) {
    for (DType dtype : testing::kAllDTypes) {
      const std::optional<DType> out_dtype = result_dtype(op, dtype);
      if (!out_dtype) continue;
      for (const auto& shape : kShapes) {
        for (Layout al : testing::kSweepInputLayouts) {
          for (Layout bl : {Layout::kContiguous, Layout::kTransposed, Layout::kBroadcast}) {
            SCOPED_TRACE(fmt::format("{} {} {} a:{} b:{}", to_string(op), dtype, shape_to_string(shape),
                                     layout_name(al), layout_name(bl)));
            Tensor a = make_tensor(shape, dtype, al, 21);
            Tensor b = make_tensor(shape, dtype, bl, 22);
            if (op == BinaryOp::kDiv || op == BinaryOp::kRemainder || op == BinaryOp::kFmod) make_nonzero(b);
            Tensor out = make_tensor(shape, *out_dtype, Layout::kSliced, 23);
            ASSERT_TRUE(k().binary(op, a.view(), b.view(), out.view(), testing::sequential_context(), nullptr).ok());
            expect_elements(out,
                            [&](const auto& idx) { return ref_binary(op, dtype, value_at(a, idx), value_at(b, idx)); });
          }
        }
      }
    }
  }
}

TEST_P(ElementwiseConformance, CompareSelectAndConvertMatchTheReference) {
  const CompareDirection dirs[] = {CompareDirection::kEq, CompareDirection::kNe, CompareDirection::kLt,
                                   CompareDirection::kLe, CompareDirection::kGt, CompareDirection::kGe};
  for (DType dtype : testing::kAllDTypes) {
    for (const auto& shape : kShapes) {
      Tensor a = make_tensor(shape, dtype, Layout::kTransposed, 31);
      Tensor b = make_tensor(shape, dtype, Layout::kContiguous, 32);
      // Make some elements equal so eq/le/ge see both outcomes.
      if (a.numel() > 0 && a.rank() > 0) {
        ASSERT_TRUE(
            k().copy_into(a.slice(0, 0, 1)->view(), b.slice(0, 0, 1)->view(), testing::sequential_context(), nullptr)
                .ok());
      }
      for (CompareDirection d : dirs) {
        if (is_complex(dtype) && d != CompareDirection::kEq && d != CompareDirection::kNe) continue;
        Tensor out = make_tensor(shape, DType::kBool, Layout::kSliced, 33);
        ASSERT_TRUE(k().compare(d, a.view(), b.view(), out.view(), testing::sequential_context(), nullptr).ok());
        expect_elements(
            out, [&](const auto& idx) { return C(ref_compare(d, value_at(a, idx), value_at(b, idx)) ? 1.0 : 0.0); });
      }
      Tensor pred = make_tensor(shape, DType::kBool, Layout::kBroadcast, 34);
      Tensor sel = make_tensor(shape, dtype, Layout::kTransposed, 35);
      ASSERT_TRUE(k().select(pred.view(), a.view(), b.view(), sel.view(), testing::sequential_context(), nullptr).ok());
      expect_elements(
          sel, [&](const auto& idx) { return value_at(pred, idx) != C(0) ? value_at(a, idx) : value_at(b, idx); });
      for (DType to : testing::kAllDTypes) {
        SCOPED_TRACE(fmt::format("convert {} -> {} {}", dtype, to, shape_to_string(shape)));
        Tensor out = make_tensor(shape, to, Layout::kSliced, 36);
        ASSERT_TRUE(k().convert(a.view(), out.view(), testing::sequential_context(), nullptr).ok());
        expect_elements(out, [&](const auto& idx) {
          const C v = value_at(a, idx);
          if (to == DType::kBool) return C(v != C(0) ? 1.0 : 0.0);
          if (is_integer(to)) return C(std::trunc(v.real()));
          if (is_complex(to)) return v;
          return C(v.real());
        });
      }
    }
  }
}

TEST_P(ElementwiseConformance, SpecialValuesFollowTheDocumentedRules) {
  const ParallelContext& ctx = testing::sequential_context();
  // Integer wrap-around and truncating division, never UB.
  const std::int32_t imin = std::numeric_limits<std::int32_t>::min();
  Tensor a = *Tensor::from_values<std::int32_t>({imin, imin, -7, 7, imin}, {5});
  Tensor b = *Tensor::from_values<std::int32_t>({-1, 1, 2, -2, -1}, {5});
  Tensor out = *Tensor::empty({5}, DType::kInt32);
  ASSERT_TRUE(k().binary(BinaryOp::kDiv, a.view(), b.view(), out.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int32_t>(out), (std::vector<std::int32_t>{imin, imin, -3, -3, imin}));
  ASSERT_TRUE(k().binary(BinaryOp::kSub, a.view(), b.view(), out.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int32_t>(out)[1], std::numeric_limits<std::int32_t>::max());
  ASSERT_TRUE(k().unary(UnaryOp::kAbs, a.view(), out.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int32_t>(out)[0], imin);
  // max/min propagate NaN from either side.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = *Tensor::from_values<double>({nan, 1.0, 2.0}, {3});
  Tensor y = *Tensor::from_values<double>({1.0, nan, 1.0}, {3});
  Tensor z = *Tensor::empty({3}, DType::kFloat64);
  ASSERT_TRUE(k().binary(BinaryOp::kMax, x.view(), y.view(), z.view(), ctx, nullptr).ok());
  auto zv = testing::values_of<double>(z);
  EXPECT_TRUE(std::isnan(zv[0]) && std::isnan(zv[1]));
  EXPECT_EQ(zv[2], 2.0);
  ASSERT_TRUE(k().binary(BinaryOp::kMin, x.view(), y.view(), z.view(), ctx, nullptr).ok());
  zv = testing::values_of<double>(z);
  EXPECT_TRUE(std::isnan(zv[0]) && std::isnan(zv[1]));
  EXPECT_EQ(zv[2], 1.0);
  // float -> int saturates, NaN -> 0; complex -> real takes the real part.
  Tensor f = *Tensor::from_values<double>({nan, 1e300, -1e300, -2.9, 2.9}, {5});
  Tensor fi = *Tensor::empty({5}, DType::kInt64);
  ASSERT_TRUE(k().convert(f.view(), fi.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int64_t>(fi),
            (std::vector<std::int64_t>{0, std::numeric_limits<std::int64_t>::max(),
                                       std::numeric_limits<std::int64_t>::min(), -2, 2}));
  Tensor c = *Tensor::from_values<std::complex<float>>({{1.5f, 2.0f}, {0.0f, 3.0f}, {0.0f, 0.0f}}, {3});
  Tensor cb = *Tensor::empty({3}, DType::kBool);
  ASSERT_TRUE(k().convert(c.view(), cb.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<bool>(cb), (std::vector<unsigned char>{1, 1, 0}));
  // sign of complex zero is zero.
  Tensor cs = *Tensor::empty({3}, DType::kComplex64);
  ASSERT_TRUE(k().unary(UnaryOp::kSign, c.view(), cs.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::values_of<std::complex<float>>(cs)[2], std::complex<float>(0, 0));
}

TEST_P(ElementwiseConformance, InPlaceOutputIdenticalToAnInputIsAllowed) {
  for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced}) {
    Tensor a = make_tensor({6, 7}, DType::kFloat64, l, 41);
    Tensor b = make_tensor({6, 7}, DType::kFloat64, Layout::kContiguous, 42);
    const auto a0 = testing::values_of<double>(a);
    const auto b0 = testing::values_of<double>(b);
    ASSERT_TRUE(k().binary(BinaryOp::kMul, a.view(), b.view(), a.view(), testing::sequential_context(), nullptr).ok());
    const auto a1 = testing::values_of<double>(a);
    for (std::size_t i = 0; i < a0.size(); ++i) EXPECT_EQ(a1[i], a0[i] * b0[i]);
  }
  // convert in place between same-size dtypes.
  Tensor t = *Tensor::from_values<std::int64_t>({1, -2, 3}, {3});
  TensorView as_double = t.view();
  as_double.dtype = DType::kFloat64;
  ASSERT_TRUE(k().convert(t.view(), as_double, testing::sequential_context(), nullptr).ok());
  EXPECT_EQ(testing::values_of<double>(*Tensor::from_storage(t.storage(), DType::kFloat64, {3}, {1})),
            (std::vector<double>{1.0, -2.0, 3.0}));
}

TEST_P(ElementwiseConformance, LargeOpsSplitOverTwoThreadsAndMatchSequential) {
  for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kBroadcast}) {
    Tensor a = make_tensor({300, 301}, DType::kFloat32, l, 51);
    Tensor b = make_tensor({300, 301}, DType::kFloat32, Layout::kContiguous, 52);
    Tensor seq = *Tensor::empty({300, 301}, DType::kFloat32);
    Tensor par = *Tensor::empty({300, 301}, DType::kFloat32);
    KernelStats stats;
    ASSERT_TRUE(
        k().binary(BinaryOp::kAdd, a.view(), b.view(), seq.view(), testing::sequential_context(), nullptr).ok());
    ASSERT_TRUE(k().binary(BinaryOp::kAdd, a.view(), b.view(), par.view(), testing::two_thread_context(), &stats).ok());
    EXPECT_EQ(testing::values_of<float>(seq), testing::values_of<float>(par));
    if (GetParam() == &testing::kNativeKernels) {
      EXPECT_EQ(stats.parallel_calls, 1u);
    }
  }
}

TEST_P(ElementwiseConformance, BadInputIsATypedErrorAndWritesNothing) {
  const ParallelContext& ctx = testing::sequential_context();
  Tensor a = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 61);
  Tensor b = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 62);
  Tensor out = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 63);
  const auto before = testing::row_major_bytes(out);
  auto expect_code = [&](const Status& st, ErrorCode code) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_EQ(testing::row_major_bytes(out), before);
  };
  Tensor f32 = make_tensor({3, 4}, DType::kFloat32, Layout::kContiguous);
  expect_code(k().binary(BinaryOp::kAdd, a.view(), f32.view(), out.view(), ctx, nullptr), ErrorCode::kDTypeMismatch);
  Tensor other = make_tensor({4, 3}, DType::kFloat64, Layout::kContiguous);
  expect_code(k().binary(BinaryOp::kAdd, a.view(), other.view(), out.view(), ctx, nullptr), ErrorCode::kShapeMismatch);
  expect_code(k().binary(BinaryOp::kAnd, a.view(), b.view(), out.view(), ctx, nullptr), ErrorCode::kDTypeMismatch);
  Tensor c = make_tensor({3, 4}, DType::kComplex128, Layout::kContiguous);
  expect_code(k().compare(CompareDirection::kLt, c.view(), c.view(), out.view(), ctx, nullptr),
              ErrorCode::kDTypeMismatch);
  // Wrong output dtype: abs of complex128 is float64, not complex128.
  Tensor cout = make_tensor({3, 4}, DType::kComplex128, Layout::kContiguous);
  EXPECT_EQ(k().unary(UnaryOp::kAbs, c.view(), cout.view(), ctx, nullptr).code(), ErrorCode::kDTypeMismatch);
  // Output shifted by one element inside an input: partial overlap.
  Tensor big = make_tensor({13}, DType::kFloat64, Layout::kContiguous);
  Tensor lo = *big.slice(0, 0, 12)->reshape({3, 4});
  Tensor hi = *big.slice(0, 1, 13)->reshape({3, 4});
  const auto big_before = testing::row_major_bytes(big);
  EXPECT_EQ(k().binary(BinaryOp::kAdd, lo.view(), b.view(), hi.view(), ctx, nullptr).code(), ErrorCode::kAliasConflict);
  EXPECT_EQ(testing::row_major_bytes(big), big_before);
  // A broadcast output.
  Tensor row = make_tensor({1, 4}, DType::kFloat64, Layout::kContiguous);
  const auto row_before = testing::row_major_bytes(row);
  EXPECT_EQ(k().unary(UnaryOp::kNeg, a.view(), row.broadcast_to({3, 4})->view(), ctx, nullptr).code(),
            ErrorCode::kAliasConflict);
  EXPECT_EQ(testing::row_major_bytes(row), row_before);
  // Integer division by zero is reported before anything is written.
  Tensor ia = make_tensor({3, 4}, DType::kInt64, Layout::kContiguous, 64);
  Tensor ib = make_tensor({3, 4}, DType::kInt64, Layout::kTransposed, 65);
  make_nonzero(ib);
  static_cast<std::int64_t*>(ib.data())[5] = 0;
  Tensor iout = make_tensor({3, 4}, DType::kInt64, Layout::kContiguous, 66);
  const auto iout_before = testing::row_major_bytes(iout);
  const Status st = k().binary(BinaryOp::kDiv, ia.view(), ib.view(), iout.view(), ctx, nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.to_string();
  EXPECT_EQ(testing::row_major_bytes(iout), iout_before);
  for (BinaryOp op : {BinaryOp::kRemainder, BinaryOp::kFmod}) {
    const Status modulo = k().binary(op, ia.view(), ib.view(), iout.view(), ctx, nullptr);
    EXPECT_EQ(modulo.code(), ErrorCode::kInvalidArgument) << modulo.to_string();
    EXPECT_NE(modulo.message().find(to_string(op)), std::string::npos) << modulo.to_string();
    EXPECT_EQ(testing::row_major_bytes(iout), iout_before);
  }
  // In place into the divisor still fails cleanly.
  const auto ib_before = testing::row_major_bytes(ib);
  EXPECT_FALSE(k().binary(BinaryOp::kDiv, ia.view(), ib.view(), ib.view(), ctx, nullptr).ok());
  EXPECT_EQ(testing::row_major_bytes(ib), ib_before);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ElementwiseConformance, ::testing::Values(&testing::kNativeKernels),
                         testing::kernel_table_name);

// The loop actually taken, counted through KernelStats (native kernels only).
TEST(ElementwiseLoopSelection, EachLayoutTakesItsLoop) {
  const ParallelContext& ctx = testing::sequential_context();
  auto run = [&](const Tensor& a, const Tensor& b, const Tensor& out) {
    KernelStats s;
    EXPECT_TRUE(binary(BinaryOp::kAdd, a.view(), b.view(), out.view(), ctx, &s).ok());
    return s;
  };
  Tensor a = make_tensor({8}, DType::kFloat64, Layout::kContiguous);
  Tensor b = make_tensor({8}, DType::kFloat64, Layout::kContiguous);
  Tensor out = *Tensor::empty({8}, DType::kFloat64);
  EXPECT_EQ(run(a, b, out).flat_contiguous, 1u);
  // Two column-major operands: dense in the same axis order, one merged axis.
  Tensor fa = make_tensor({4, 5}, DType::kFloat64, Layout::kColMajor);
  Tensor fb = make_tensor({4, 5}, DType::kFloat64, Layout::kColMajor);
  Tensor fo = *Tensor::empty({4, 5}, DType::kFloat64, MemoryOrder::kColMajor);
  EXPECT_EQ(run(fa, fb, fo).contiguous_inner, 1u);
  // Adding a row vector broadcast over rows: the scalar-broadcast inner loop
  // (column vector broadcast along the fastest axis).
  Tensor col = *make_tensor({4, 1}, DType::kFloat64, Layout::kContiguous).broadcast_to({4, 5});
  Tensor m = make_tensor({4, 5}, DType::kFloat64, Layout::kContiguous);
  Tensor mo = *Tensor::empty({4, 5}, DType::kFloat64);
  EXPECT_EQ(run(m, col, mo).broadcast_inner, 1u);
  Tensor t = make_tensor({4, 5}, DType::kFloat64, Layout::kTransposed);
  EXPECT_EQ(run(m, t, mo).strided_inner, 1u);
  // A transposed input with long rows is packed tile by tile (Note [Packed
  // transposed tiles]); results match the elementwise reference, with
  // partial tiles at both edges, sequential and on two threads.
  Tensor big = make_tensor({70, 130}, DType::kFloat64, Layout::kContiguous, 71);
  Tensor big_t = make_tensor({70, 130}, DType::kFloat64, Layout::kTransposed, 72);
  Tensor big_out = *Tensor::empty({70, 130}, DType::kFloat64);
  const KernelStats s = run(big, big_t, big_out);
  EXPECT_EQ(s.packed_tiles, 1u);
  EXPECT_EQ(s.strided_inner + s.contiguous_inner + s.tiled_inner, 0u);
  const auto x = testing::values_of<double>(big), y = testing::values_of<double>(big_t);
  const auto z = testing::values_of<double>(big_out);
  for (std::size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], x[i] + y[i]) << i;
  KernelStats par;
  Tensor par_out = *Tensor::empty({70, 130}, DType::kFloat64);
  ASSERT_TRUE(
      binary(BinaryOp::kAdd, big.view(), big_t.view(), par_out.view(), testing::two_thread_context(), &par).ok());
  EXPECT_EQ(testing::values_of<double>(par_out), z);
  EXPECT_EQ(par.packed_tiles, 1u);  // 15 tiles: too few to fork (LargeOps* covers the split)
  // Both inputs transposed (complex, the widest element), and a
  // transposed lhs with a contiguous rhs.
  Tensor ct = make_tensor({45, 67}, DType::kComplex128, Layout::kTransposed, 73);
  Tensor cu = make_tensor({45, 67}, DType::kComplex128, Layout::kTransposed, 74);
  Tensor cc = make_tensor({45, 67}, DType::kComplex128, Layout::kContiguous, 75);
  for (const auto& [lhs, rhs] : {std::pair{&ct, &cu}, std::pair{&ct, &cc}}) {
    Tensor co = *Tensor::empty({45, 67}, DType::kComplex128);
    KernelStats cs;
    ASSERT_TRUE(binary(BinaryOp::kAdd, lhs->view(), rhs->view(), co.view(), ctx, &cs).ok());
    const auto cx = testing::values_of<std::complex<double>>(*lhs);
    const auto cy = testing::values_of<std::complex<double>>(*rhs);
    const auto cz = testing::values_of<std::complex<double>>(co);
    for (std::size_t i = 0; i < cz.size(); ++i) ASSERT_EQ(cz[i], cx[i] + cy[i]) << i;
    EXPECT_EQ(cs.packed_tiles, 1u);
  }
  // A transposed input that is not contiguous along its fastest axis (every
  // other row of a transposed tensor: strides (2, 140)) cannot be packed:
  // the strided loop runs in tiles.
  Tensor tall_t = make_tensor({140, 130}, DType::kFloat64, Layout::kTransposed, 76);
  const Tensor every_other = *tall_t.slice(0, 0, 140, 2);
  KernelStats ts;
  ASSERT_TRUE(binary(BinaryOp::kAdd, big.view(), every_other.view(), big_out.view(), ctx, &ts).ok());
  EXPECT_EQ(ts.packed_tiles, 0u);
  EXPECT_EQ(ts.tiled_inner, 1u);
  const auto w = testing::values_of<double>(every_other);
  const auto z2 = testing::values_of<double>(big_out);
  for (std::size_t i = 0; i < z2.size(); ++i) ASSERT_EQ(z2[i], x[i] + w[i]) << i;
}

}  // namespace
}  // namespace tenferro::cpu
