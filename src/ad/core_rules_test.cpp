// Every core op's JVP and VJP against central finite differences (float64,
// complex128) and against each other (Re <v, J u> = Re <J* v, u>), on
// random shapes including broadcasting and reductions; split VJP against
// the combined one; provenance of every emitted node.
#include <random>

#include <gtest/gtest.h>

#include "ad_test_support.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/derivative_programs.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::ad {
namespace {

using program::CoreAttributes;
using program::CoreSemanticOp;
using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using program::ValueMetadata;
using testing::check_derivatives;
using testing::DerivativeCheck;
using Values = std::vector<ProgramValue>;

/// One input of a case: dtype, shape and value range; integer tensors use
/// [int_low, int_high].
struct InputSpec {
  DType dtype = DType::kFloat64;
  Dims shape;
  double low = -1.0;
  double high = 1.0;
  std::int64_t int_low = 0;
  std::int64_t int_high = 0;
};

Tensor make_input(const InputSpec& spec, std::uint64_t seed) {
  if (is_integer(spec.dtype)) {
    return *tenferro::testing::random_integers(spec.dtype, spec.shape, seed, spec.int_low, spec.int_high);
  }
  tenferro::testing::RandomOptions options;
  options.low = spec.low;
  options.high = spec.high;
  return *tenferro::testing::random_tensor(spec.dtype, spec.shape, seed, options);
}

/// Builds the program from specs and body, makes inputs and checks every
/// inexact input as active.
::testing::AssertionResult check_case(const std::vector<InputSpec>& specs, const testing::ProgramBody& body,
                                      std::uint64_t seed, const DerivativeCheck& check = {},
                                      std::vector<std::uint32_t> active = {}, bool all_active = true) {
  std::vector<ValueMetadata> metadata;
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    metadata.push_back(ValueMetadata::exact(specs[i].dtype, specs[i].shape));
    inputs.push_back(make_input(specs[i], seed * 31 + i));
  }
  FrozenProgram program = testing::make_program(metadata, body);
  if (all_active && active.empty()) {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (is_inexact(specs[i].dtype)) active.push_back(static_cast<std::uint32_t>(i));
  }
  AdContext context;
  DerivativeCheck c = check;
  c.seed = seed;
  return check_derivatives(context, program, inputs, active, c);
}

Result<ProgramValue> emit(ProgramBuilder& b, CoreSemanticOp op, std::initializer_list<ProgramValue> operands,
                          CoreAttributes attributes = program::NoAttributes{}) {
  return b.emit(op, operands, std::move(attributes));
}

testing::ProgramBody single(CoreSemanticOp op, CoreAttributes attributes = program::NoAttributes{}) {
  return [op, attributes](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(op, in, attributes));
    return Values{y};
  };
}

Dims random_shape(std::mt19937_64& rng, int max_rank = 3, std::int64_t max_extent = 4) {
  const int rank = static_cast<int>(rng() % static_cast<unsigned>(max_rank + 1));
  Dims shape;
  for (int a = 0; a < rank; ++a)
    shape.push_back(1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(max_extent)));
  return shape;
}

struct UnaryCase {
  CoreSemanticOp op;
  double low, high;
};

const UnaryCase kUnary[] = {
    {CoreSemanticOp::kNeg, -1, 1},   {CoreSemanticOp::kAbs, -1, 1},      {CoreSemanticOp::kSign, -1, 1},
    {CoreSemanticOp::kExp, -1, 1},   {CoreSemanticOp::kLog, 0.5, 2},     {CoreSemanticOp::kLog1p, 0.1, 2},
    {CoreSemanticOp::kExpm1, -1, 1}, {CoreSemanticOp::kSqrt, 0.5, 2},    {CoreSemanticOp::kRsqrt, 0.5, 2},
    {CoreSemanticOp::kSin, -2, 2},   {CoreSemanticOp::kCos, -2, 2},      {CoreSemanticOp::kTan, -1, 1},
    {CoreSemanticOp::kTanh, -2, 2},  {CoreSemanticOp::kLogistic, -3, 3}, {CoreSemanticOp::kConj, -1, 1},
    {CoreSemanticOp::kReal, -1, 1},  {CoreSemanticOp::kImag, -1, 1},
};

TEST(CoreRules, UnaryFloat64) {
  std::mt19937_64 rng(1);
  std::uint64_t seed = 10;
  for (const UnaryCase& c : kUnary) {
    const Dims shape = random_shape(rng);
    SCOPED_TRACE(fmt::format("{} on {}", c.op, shape_to_string(shape)));
    EXPECT_TRUE(check_case({{DType::kFloat64, shape, c.low, c.high}}, single(c.op), ++seed));
  }
}

TEST(CoreRules, UnaryComplex128) {
  std::mt19937_64 rng(2);
  std::uint64_t seed = 40;
  for (const UnaryCase& c : kUnary) {
    const Dims shape = random_shape(rng);
    SCOPED_TRACE(fmt::format("{} on {}", c.op, shape_to_string(shape)));
    // Complex log/sqrt/rsqrt need a right-half-plane argument (branch cut).
    EXPECT_TRUE(check_case({{DType::kComplex128, shape, c.low, c.high}}, single(c.op), ++seed));
  }
}

// op(a, broadcast_in_dim(b)) with b of a lower rank or with extent-1 axes:
// broadcasting is explicit in the IR, so its transpose (a sum) is tested.
testing::ProgramBody broadcast_binary(CoreSemanticOp op, Dims a_shape, Dims dims) {
  return [=](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    program::BroadcastInDimAttributes bcast{program::symbolic_shape(a_shape), dims};
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue rhs, emit(b, CoreSemanticOp::kBroadcastInDim, {in[1]}, bcast));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, op, {in[0], rhs}));
    return Values{y};
  };
}

struct BinaryCase {
  CoreSemanticOp op;
  double low, high;
  bool complex_too;
};

const BinaryCase kBinary[] = {
    {CoreSemanticOp::kAdd, -1, 1, true},      {CoreSemanticOp::kSub, -1, 1, true},
    {CoreSemanticOp::kMul, -1, 1, true},      {CoreSemanticOp::kDiv, 0.5, 2, true},
    {CoreSemanticOp::kPow, 0.5, 2, true},     {CoreSemanticOp::kMax, -1, 1, false},
    {CoreSemanticOp::kMin, -1, 1, false},     {CoreSemanticOp::kAtan2, -1, 1, false},
    {CoreSemanticOp::kComplex, -1, 1, false}, {CoreSemanticOp::kRemainder, 0.5, 3, false},
    {CoreSemanticOp::kFmod, 0.5, 3, false},
};

TEST(CoreRules, BinaryWithBroadcasting) {
  std::mt19937_64 rng(3);
  std::uint64_t seed = 70;
  for (const BinaryCase& c : kBinary) {
    for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
      if (dtype == DType::kComplex128 && !c.complex_too) continue;
      // a: [d0, d1, d2]; b: [1, d2] broadcast to it via dims {1, 2}.
      Dims a_shape = {1 + static_cast<std::int64_t>(rng() % 3), 2 + static_cast<std::int64_t>(rng() % 3),
                      1 + static_cast<std::int64_t>(rng() % 4)};
      Dims b_shape = {1, a_shape[2]};
      SCOPED_TRACE(fmt::format("{} {} {}", c.op, to_string(dtype), shape_to_string(a_shape)));
      EXPECT_TRUE(check_case({{dtype, a_shape, c.low, c.high}, {dtype, b_shape, c.low, c.high}},
                             broadcast_binary(c.op, a_shape, {1, 2}), ++seed));
      // Same shapes, no broadcast.
      EXPECT_TRUE(check_case({{dtype, a_shape, c.low, c.high}, {dtype, a_shape, c.low, c.high}}, single(c.op), ++seed));
    }
  }
}

TEST(CoreRules, PiecewiseConstantOpsHaveZeroDerivative) {
  std::uint64_t seed = 90;
  for (CoreSemanticOp op : {CoreSemanticOp::kFloor, CoreSemanticOp::kCeil, CoreSemanticOp::kRound}) {
    SCOPED_TRACE(fmt::format("{}", op));
    // Finite differences away from the jumps are 0, and so must the rules be.
    EXPECT_TRUE(check_case({{DType::kFloat64, Dims{3, 4}, -5, 5}}, single(op), ++seed));
  }
}

TEST(CoreRules, ClampFollowsTheOperandItReturns) {
  // Bounds overlapping x's range, so every element picks one of lo, x, hi.
  const InputSpec lo{DType::kFloat64, {4, 5}, -0.8, 0.0};
  const InputSpec x{DType::kFloat64, {4, 5}, -1.0, 1.0};
  const InputSpec hi{DType::kFloat64, {4, 5}, 0.0, 0.8};
  EXPECT_TRUE(check_case({lo, x, hi}, single(CoreSemanticOp::kClamp), 95));
  // lo > hi everywhere: the result is hi, so only hi has a derivative.
  const InputSpec high_lo{DType::kFloat64, {6}, 0.2, 0.6};
  const InputSpec low_hi{DType::kFloat64, {6}, -0.6, -0.2};
  const InputSpec x6{DType::kFloat64, {6}, -1.0, 1.0};
  EXPECT_TRUE(check_case({high_lo, x6, low_hi}, single(CoreSemanticOp::kClamp), 96));
}

TEST(CoreRules, CumulativeSumAndProduct) {
  std::uint64_t seed = 700;
  for (CoreSemanticOp op : {CoreSemanticOp::kCumsum, CoreSemanticOp::kCumprod}) {
    for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
      for (std::int64_t axis : {0, 1}) {
        for (int flags = 0; flags < 4; ++flags) {
          const program::CumulativeAttributes a{axis, (flags & 1) != 0, (flags & 2) != 0};
          SCOPED_TRACE(fmt::format("{} {} {}", op, to_string(dtype), program::to_string(a)));
          EXPECT_TRUE(check_case({{dtype, {3, 4}, 0.5, 1.5}}, single(op, a), ++seed));
        }
      }
    }
  }
}

TEST(CoreRules, SortMovesTangentsWithTheirElements) {
  std::uint64_t seed = 720;
  for (std::int64_t axis : {0, 1, 2}) {
    for (bool descending : {false, true}) {
      SCOPED_TRACE(fmt::format("axis {} descending {}", axis, descending));
      EXPECT_TRUE(check_case({{DType::kFloat64, {3, 4, 2}}},
                             single(CoreSemanticOp::kSort, program::SortAttributes{axis, descending}), ++seed));
    }
  }
}

TEST(CoreRules, RandomValuesAreConstants) {
  // y = x * r with r = rng_philox(...): dy/dx = r, and r has no derivative.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    const program::RandomAttributes a{DType::kFloat64, program::symbolic_shape(Dims{2, 3}), 5, 0,
                                      program::RandomDistribution::kNormal};
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue r, emit(b, CoreSemanticOp::kRngPhilox, {}, a));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, CoreSemanticOp::kMul, {in[0], r}));
    return Values{y, r};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {2, 3}}}, body, 730));
}

TEST(CoreRules, MaxMinTiesSplitEvenly) {
  // max(x, x): each side gets half, so d/dx max(x, x) = 1.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, CoreSemanticOp::kMax, {in[0], in[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue z, emit(b, CoreSemanticOp::kMin, {in[0], in[0]}));
    return Values{y, z};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {3}}}, body, 5));
}

TEST(CoreRules, SelectCompareConvert) {
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue p, emit(b, CoreSemanticOp::kCompare, {in[0], in[1]},
                                                   program::CompareAttributes{program::ComparisonDirection::kLt}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s, emit(b, CoreSemanticOp::kSelect, {p, in[0], in[1]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue c,
                              emit(b, CoreSemanticOp::kConvert, {s}, program::ConvertAttributes{DType::kComplex128}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue e, emit(b, CoreSemanticOp::kExp, {c}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue back,
                              emit(b, CoreSemanticOp::kConvert, {e}, program::ConvertAttributes{DType::kFloat64}));
    return Values{back, p, s};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {2, 3}}, {DType::kFloat64, {2, 3}}}, body, 6));
}

TEST(CoreRules, ConvertThroughFloat32) {
  // f64 -> f32 -> f64: the adjoint identity holds; finite differences in
  // float32 are too coarse, so they are off.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue f,
                              emit(b, CoreSemanticOp::kConvert, {in[0]}, program::ConvertAttributes{DType::kFloat32}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s, emit(b, CoreSemanticOp::kSin, {f}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue d,
                              emit(b, CoreSemanticOp::kConvert, {s}, program::ConvertAttributes{DType::kFloat64}));
    return Values{d};
  };
  DerivativeCheck check;
  check.finite_differences = false;
  check.identity_rtol = 1e-6;
  EXPECT_TRUE(check_case({{DType::kFloat64, {4}}}, body, 7, check));
}

TEST(CoreRules, Reductions) {
  std::mt19937_64 rng(4);
  std::uint64_t seed = 100;
  for (CoreSemanticOp op : {CoreSemanticOp::kReduceSum, CoreSemanticOp::kReduceProd, CoreSemanticOp::kReduceMax,
                            CoreSemanticOp::kReduceMin}) {
    for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
      if (dtype == DType::kComplex128 && (op == CoreSemanticOp::kReduceMax || op == CoreSemanticOp::kReduceMin))
        continue;
      for (int trial = 0; trial < 3; ++trial) {
        Dims shape = random_shape(rng, 3, 4);
        if (shape.empty()) shape.push_back(3);
        Dims axes;
        for (std::int64_t a = 0; a < static_cast<std::int64_t>(shape.size()); ++a)
          if (rng() % 2) axes.push_back(a);
        SCOPED_TRACE(
            fmt::format("{} {} {} axes {}", op, to_string(dtype), shape_to_string(shape), shape_to_string(axes)));
        EXPECT_TRUE(check_case({{dtype, shape, 0.5, 1.5}}, single(op, program::ReduceAttributes{axes}), ++seed));
      }
    }
  }
}

TEST(CoreRules, ReduceProdIsExactWithZeros) {
  // Rows with no zero, one zero and two zeros: the derivative is the
  // product of the other elements (not y / x).
  const Tensor x = *Tensor::from_values<double>({1.5, 2.0, -0.5, 0.0, 3.0, 2.0, 0.0, 0.0, 4.0}, {3, 3});
  FrozenProgram p = testing::make_program(std::vector<ValueMetadata>{ValueMetadata::exact(DType::kFloat64, {3, 3})},
                                          single(CoreSemanticOp::kReduceProd, program::ReduceAttributes{{1}}));
  AdContext context;
  const std::uint32_t active[] = {0};
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), active));
  auto vjp = *context.vjp(p, active);
  const Tensor ones = *Tensor::from_values<double>({1, 1, 1}, {3});
  std::vector<Tensor> out = testing::evaluate(vjp.program, std::vector<Tensor>{x, ones});
  ASSERT_EQ(out.size(), 2u);
  const Tensor expected = *Tensor::from_values<double>({-1.0, -0.75, 3.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {3, 3});
  EXPECT_TRUE(tenferro::testing::check_allclose(out[1], expected).ok()) << tenferro::testing::format_tensor(out[1]);
}

TEST(CoreRules, CumprodIsExactWithZeros) {
  // Rows with no zero, one zero and two zeros, in every direction and with
  // exclusive windows: the rule divides by no zero (its derivatives are
  // checked against finite differences, which a NaN fails).
  const Tensor x = *Tensor::from_values<double>({1.5, 2.0, -0.5, 0.5, 0.0, 3.0, 2.0, 1.5, 0.0, 4.0, 0.0, 2.0}, {3, 4});
  for (int flags = 0; flags < 4; ++flags) {
    const program::CumulativeAttributes a{1, (flags & 1) != 0, (flags & 2) != 0};
    SCOPED_TRACE(program::to_string(a));
    FrozenProgram p = testing::make_program(std::vector<ValueMetadata>{ValueMetadata::exact(DType::kFloat64, {3, 4})},
                                            single(CoreSemanticOp::kCumprod, a));
    AdContext context;
    const std::uint32_t active[] = {0};
    EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), active));
  }
  // Forward, inclusive: d/dx_j sum_i y_i = sum over i >= j of the product
  // of x_0..x_i without x_j. Row [0, 3, 2, 1.5]: only x_0 has a derivative
  // (1 + 3 + 6 + 9 = 19); row [0, 4, 0, 2]: x_0 gets 1 + 4, x_2 nothing.
  FrozenProgram p = testing::make_program(std::vector<ValueMetadata>{ValueMetadata::exact(DType::kFloat64, {3, 4})},
                                          single(CoreSemanticOp::kCumprod, program::CumulativeAttributes{1}));
  AdContext context;
  const std::uint32_t active[] = {0};
  auto vjp = *context.vjp(p, active);
  const Tensor ones = *Tensor::from_values<double>(std::vector<double>(12, 1.0), {3, 4});
  std::vector<Tensor> out = testing::evaluate(vjp.program, std::vector<Tensor>{x, ones});
  ASSERT_EQ(out.size(), 2u);
  const Tensor expected = *Tensor::from_values<double>(
      {1.0 + 2.0 - 1.0 - 0.5, 1.5 - 0.75 - 0.375, 3.0 + 1.5, -1.5, 19.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0}, {3, 4});
  EXPECT_TRUE(tenferro::testing::check_allclose(out[1], expected).ok()) << tenferro::testing::format_tensor(out[1]);
}

// Note [Product of the others] and cumprod's rule: the second derivatives
// (the derivatives of the gradient programs, against finite differences of
// them) are right at rows with one and with two zeros, for a product over
// one axis, over two merged axes, and for cumprod (forward and reverse).
TEST(CoreRules, ProductsHaveExactSecondDerivativesWithZeros) {
  const Tensor x = *Tensor::from_values<double>({1.5, 2.0, -0.5, 0.5, 0.0, 3.0, 2.0, 1.5, 0.0, 4.0, 0.0, 2.0}, {3, 4});
  const std::uint32_t active[] = {0};
  const auto sum_of = [&](CoreSemanticOp op, program::CoreAttributes attributes) {
    program::ProgramBuilder b;
    const program::ProgramValue in = *b.add_input(DType::kFloat64, {3, 4}, "x");
    const program::ProgramValue y = *b.emit(op, {in}, std::move(attributes));
    const program::ValueMetadata ym = *b.metadata(y);
    Dims all;
    for (std::int64_t a = 0; a < ym.rank(); ++a) all.push_back(a);
    const program::ProgramValue s = *b.emit(CoreSemanticOp::kReduceSum, {y}, program::ReduceAttributes{all});
    return *b.freeze({s});
  };
  const std::vector<std::pair<std::string, FrozenProgram>> cases = {
      {"prod over axis 1", sum_of(CoreSemanticOp::kReduceProd, program::ReduceAttributes{{1}})},
      {"prod over axes 0, 1", sum_of(CoreSemanticOp::kReduceProd, program::ReduceAttributes{{0, 1}})},
      {"prod over axis 0", sum_of(CoreSemanticOp::kReduceProd, program::ReduceAttributes{{0}})},
      {"cumprod", sum_of(CoreSemanticOp::kCumprod, program::CumulativeAttributes{1})},
      {"reverse cumprod", sum_of(CoreSemanticOp::kCumprod, program::CumulativeAttributes{1, true, false})},
  };
  for (const auto& [name, f] : cases) {
    SCOPED_TRACE(name);
    AdContext context;
    const FrozenProgram g = *grad_program(context, f, active);
    EXPECT_TRUE(check_derivatives(context, g, std::span<const Tensor>(&x, 1), active));
  }
}

TEST(CoreRules, DotGeneral) {
  std::uint64_t seed = 200;
  struct Dot {
    Dims lhs, rhs;
    program::DotGeneralAttributes dims;
  };
  const Dot cases[] = {
      {{3, 4}, {4, 2}, {{}, {}, {1}, {0}}},                      // matmul
      {{2, 3, 4}, {2, 4, 5}, {{0}, {0}, {2}, {1}}},              // batched
      {{4, 3}, {5, 4}, {{}, {}, {0}, {1}}},                      // contract leading lhs axis
      {{2, 3, 4, 2}, {4, 2, 3, 5}, {{3}, {1}, {2, 1}, {0, 2}}},  // batch last, two contractions in swapped order
      {{3}, {3}, {{}, {}, {0}, {0}}},                            // inner product
      {{2}, {3}, {{}, {}, {}, {}}},                              // outer product
  };
  for (const Dot& d : cases) {
    for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
      SCOPED_TRACE(fmt::format("{} x {} {}", shape_to_string(d.lhs), shape_to_string(d.rhs), to_string(dtype)));
      EXPECT_TRUE(check_case({{dtype, d.lhs}, {dtype, d.rhs}}, single(CoreSemanticOp::kDotGeneral, d.dims), ++seed));
    }
  }
}

TEST(CoreRules, ShapeOps) {
  std::uint64_t seed = 300;
  struct Case {
    CoreSemanticOp op;
    Dims shape;
    CoreAttributes attributes;
  };
  const Case cases[] = {
      {CoreSemanticOp::kBroadcastInDim, {3, 1}, program::BroadcastInDimAttributes{{2, 3, 4}, {1, 2}}},
      {CoreSemanticOp::kBroadcastInDim, {}, program::BroadcastInDimAttributes{{2, 2}, {}}},
      {CoreSemanticOp::kReshape, {2, 6}, program::ReshapeAttributes{{3, 2, 2}}},
      {CoreSemanticOp::kTranspose, {2, 3, 4}, program::TransposeAttributes{{2, 0, 1}}},
      {CoreSemanticOp::kSlice, {5, 7}, program::SliceAttributes{{1, 0}, {5, 6}, {2, 3}}},
      {CoreSemanticOp::kSlice, {4}, program::SliceAttributes{{2}, {2}, {1}}},
      {CoreSemanticOp::kReverse, {3, 4}, program::ReverseAttributes{{0, 1}}},
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
      SCOPED_TRACE(fmt::format("{} {}", c.op, program::to_string(c.attributes)));
      EXPECT_TRUE(check_case({{dtype, c.shape}}, single(c.op, c.attributes), ++seed));
    }
  }
}

TEST(CoreRules, ConcatenateAndPad) {
  EXPECT_TRUE(check_case({{DType::kFloat64, {2, 3}}, {DType::kFloat64, {2, 1}}, {DType::kFloat64, {2, 2}}},
                         single(CoreSemanticOp::kConcatenate, program::ConcatenateAttributes{1}), 401));
  // pad with interior padding; the padding value is active too.
  EXPECT_TRUE(check_case({{DType::kComplex128, {3, 2}}, {DType::kComplex128, {}}},
                         single(CoreSemanticOp::kPad, program::PadAttributes{{1, 0}, {2, 1}, {1, 2}}), 402));
}

TEST(CoreRules, DynamicSlices) {
  // Starts are int64 inputs (never active); 3 is clamped to 1.
  const InputSpec start_a{DType::kInt64, {}, 0, 0, 0, 3};
  const InputSpec start_b{DType::kInt64, {}, 0, 0, 0, 2};
  EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, start_a, start_b},
                         single(CoreSemanticOp::kDynamicSlice, program::DynamicSliceAttributes{{3, 2}}), 501));
  EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, {DType::kFloat64, {2, 3}}, start_a, start_b},
                         single(CoreSemanticOp::kDynamicUpdateSlice), 502));
}

TEST(CoreRules, GatherScatter) {
  using program::SymbolicExtent;
  const InputSpec indices{DType::kInt64, {2, 3}, 0, 0, 0, 3};  // duplicates likely
  const program::SymbolicShape x_shape{SymbolicExtent(2), SymbolicExtent(4), SymbolicExtent(3)};
  EXPECT_TRUE(check_case({{DType::kFloat64, {2, 4, 3}}, indices},
                         single(CoreSemanticOp::kGather, program::take_attributes(x_shape, 2, 1)), 601));
  // scatter-add: updates shape = x.shape[:1] + indices.shape + x.shape[2:].
  EXPECT_TRUE(check_case(
      {{DType::kComplex128, {2, 4, 3}}, indices, {DType::kComplex128, {2, 2, 3, 3}}},
      single(CoreSemanticOp::kScatter, program::take_scatter_attributes(3, 2, 1, program::ScatterCombine::kAdd)), 602));
  // scatter-replace with unique indices (0, 2): the derivative is defined.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(program::Literal idx, program::Literal::from_values<std::int64_t>({0, 2}, {2}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue i, b.constant(idx));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y,
                              emit(b, CoreSemanticOp::kScatter, {in[0], i, in[1]},
                                   program::take_scatter_attributes(2, 1, 0, program::ScatterCombine::kReplace)));
    return Values{y};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {4, 2}}, {DType::kFloat64, {2, 2}}}, body, 603));
}

// General windows whose starts fall partly outside the operand: gather
// clamps them (its transpose scatters at the clamped starts), scatter skips
// them (its transpose gives their updates a zero cotangent)
// (Note [Out-of-range starts in gather and scatter transposes]).
TEST(CoreRules, GeneralGatherScatterWithOutOfRangeStarts) {
  using program::SymbolicExtent;
  const InputSpec starts{DType::kInt32, {3, 2}, 0, 0, -2, 5};
  const program::GatherAttributes windows{{1, 2}, {}, {0, 1}, 1, {SymbolicExtent(2), SymbolicExtent(3)}};
  for (std::uint64_t seed : {611, 612, 613}) {
    EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, starts}, single(CoreSemanticOp::kGather, windows), seed));
  }
  const program::ScatterAttributes add{{1, 2}, {}, {0, 1}, 1, program::ScatterCombine::kAdd};
  const program::ScatterAttributes replace{{1, 2}, {}, {0, 1}, 1, program::ScatterCombine::kReplace};
  for (std::uint64_t seed : {621, 622, 623}) {
    EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, starts, {DType::kFloat64, {3, 2, 3}}},
                           single(CoreSemanticOp::kScatter, add), seed));
  }
  // Point scatter-replace x[i, j] = u with distinct in-range pairs and one
  // pair outside (skipped).
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(program::Literal idx,
                              program::Literal::from_values<std::int64_t>({0, 1, 3, 4, 4, 0}, {3, 2}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue i, b.constant(idx));
    TENFERRO_ASSIGN_OR_RETURN(
        ProgramValue y, emit(b, CoreSemanticOp::kScatter, {in[0], i, in[1]},
                             program::ScatterAttributes{{}, {0, 1}, {0, 1}, 1, program::ScatterCombine::kReplace}));
    return Values{y};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, {DType::kFloat64, {3}}}, body, 631));
  // Windows of the replace form, in range and distinct.
  auto windows_body = [&](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(program::Literal idx, program::Literal::from_values<std::int32_t>({0, 0, 2, 2}, {2, 2}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue i, b.constant(idx));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, CoreSemanticOp::kScatter, {in[0], i, in[1]}, replace));
    return Values{y};
  };
  EXPECT_TRUE(check_case({{DType::kFloat64, {4, 5}}, {DType::kFloat64, {2, 2, 3}}}, windows_body, 632));
}

// A symbolic operand extent: the transposes compute the start bounds at run
// time (Note [Out-of-range starts in gather and scatter transposes]).
TEST(CoreRules, GatherScatterTransposesWithSymbolicExtents) {
  using program::SymbolicExtent;
  const std::vector<ValueMetadata> metadata = {ValueMetadata{DType::kFloat64, {SymbolicExtent::unknown(), 5}},
                                               ValueMetadata::exact(DType::kInt64, Dims{6}),
                                               ValueMetadata{DType::kFloat64, {SymbolicExtent(6), SymbolicExtent(5)}}};
  auto body = [&](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ValueMetadata x, b.metadata(in[0]));
    EXPECT_FALSE(x.shape[0].is_exact());
    TENFERRO_ASSIGN_OR_RETURN(
        ProgramValue g, emit(b, CoreSemanticOp::kGather, {in[0], in[1]}, program::take_attributes(x.shape, 1, 0)));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s,
                              emit(b, CoreSemanticOp::kScatter, {in[0], in[1], in[2]},
                                   program::take_scatter_attributes(2, 1, 0, program::ScatterCombine::kAdd)));
    return Values{g, s};
  };
  FrozenProgram program = testing::make_program(metadata, body);
  for (std::uint64_t seed : {641, 642}) {
    // Rows in [-2, 5] against an operand of 4 rows: clamped and skipped.
    std::vector<Tensor> inputs = {make_input({DType::kFloat64, {4, 5}}, seed),
                                  make_input({DType::kInt64, {6}, 0, 0, -2, 5}, seed + 1),
                                  make_input({DType::kFloat64, {6, 5}}, seed + 2)};
    AdContext context;
    DerivativeCheck c;
    c.seed = seed;
    const std::vector<std::uint32_t> active = {0, 2};
    EXPECT_TRUE(check_derivatives(context, program, inputs, active, c));
  }
}

TEST(CoreRules, NonDifferentiableValuesAreExplicit) {
  // argmax, comparisons, integer arithmetic, bool logic, iota, constants.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue am,
                              emit(b, CoreSemanticOp::kArgmax, {in[0]}, program::ArgReduceAttributes{1}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue an,
                              emit(b, CoreSemanticOp::kArgmin, {in[0]}, program::ArgReduceAttributes{0}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, emit(b, CoreSemanticOp::kCompare, {in[0], in[0]},
                                                   program::CompareAttributes{program::ComparisonDirection::kGe}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue n, emit(b, CoreSemanticOp::kNot, {c}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue x, emit(b, CoreSemanticOp::kXor, {c, n}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue iota,
                              emit(b, CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kFloat64, {2, 3}, 1}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue i2, emit(b, CoreSemanticOp::kAdd, {am, am}));
    // y = x * iota: differentiable in x only through the product.
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, CoreSemanticOp::kMul, {in[0], iota}));
    // sign of a real value: derivative zero.
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s, emit(b, CoreSemanticOp::kSign, {in[0]}));
    return Values{am, an, x, iota, i2, y, s};
  };
  std::vector<ValueMetadata> inputs{ValueMetadata::exact(DType::kFloat64, {2, 3})};
  FrozenProgram p = testing::make_program(inputs, body);
  AdContext context;
  const std::uint32_t active[] = {0};
  auto jvp = context.jvp(p, active);
  ASSERT_TRUE(jvp.ok()) << jvp.status().to_string();
  using S = TangentState;
  const std::vector<S> expected{S::kNonDifferentiable,
                                S::kNonDifferentiable,
                                S::kNonDifferentiable,
                                S::kZero,
                                S::kNonDifferentiable,
                                S::kPresent,
                                S::kZero};
  ASSERT_EQ(jvp->layout.output_tangents.size(), expected.size());
  for (std::size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(jvp->layout.output_tangents[j], expected[j]) << j;
  EXPECT_EQ(jvp->layout.differentiated_outputs.size(), 1u);
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {2, 3}, 9);
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), active));
}

TEST(CoreRules, SymbolicShapes) {
  // Unknown extents: elementwise, broadcast, reduction, dot_general and a
  // strided slice (whose transpose pads and appends a symbolic zero block).
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {program::SymbolicExtent::unknown(), 3}, "x");
  ProgramValue w = *b.add_input(DType::kFloat64, {3, program::SymbolicExtent::unknown()}, "w");
  ProgramValue s = *b.emit(CoreSemanticOp::kSin, {x});
  ProgramValue d = *b.emit(CoreSemanticOp::kDotGeneral, {s, w}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  ProgramValue r = *b.emit(CoreSemanticOp::kReduceSum, {d}, program::ReduceAttributes{{1}});
  ValueMetadata dm = *b.metadata(d);
  ProgramValue rb = *b.emit(CoreSemanticOp::kBroadcastInDim, {r}, program::BroadcastInDimAttributes{dm.shape, {0}});
  ProgramValue m = *b.emit(CoreSemanticOp::kMul, {d, rb});
  ProgramValue sl = *b.emit(CoreSemanticOp::kSlice, {x}, program::SliceAttributes{{0, 1}, {2, 3}, {1, 2}});
  FrozenProgram p = *b.freeze({m, sl});
  AdContext context;
  const std::uint32_t active[] = {0, 1};
  for (Dims xs : {Dims{2, 3}, Dims{5, 3}}) {
    const Tensor xv = *tenferro::testing::random_tensor(DType::kFloat64, xs, 3);
    const Tensor wv = *tenferro::testing::random_tensor(DType::kFloat64, {3, 4}, 4);
    const Tensor inputs[] = {xv, wv};
    EXPECT_TRUE(check_derivatives(context, p, inputs, active));
  }
  // One transform per kind serves both concrete shapes.
  EXPECT_EQ(context.metrics().transforms_built, 3u);
}

TEST(CoreRules, FanOutDuplicatesAndIdentityOutputs) {
  // x used three times (cotangents summed), an output listed twice, an
  // input returned directly, and an active input nothing depends on.
  auto body = [](ProgramBuilder& b, std::span<const ProgramValue> in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue xx, emit(b, CoreSemanticOp::kMul, {in[0], in[0]}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, emit(b, CoreSemanticOp::kAdd, {xx, in[0]}));
    return Values{y, y, in[0], in[2]};
  };
  const std::vector<InputSpec> specs{{DType::kFloat64, {3}}, {DType::kFloat64, {2}}, {DType::kFloat64, {4}}};
  EXPECT_TRUE(check_case(specs, body, 700));
  std::vector<ValueMetadata> md;
  for (const InputSpec& s : specs) md.push_back(ValueMetadata::exact(s.dtype, s.shape));
  FrozenProgram p = testing::make_program(md, body);
  AdContext context;
  const std::uint32_t active[] = {0, 1};
  auto vjp = *context.vjp(p, active);
  EXPECT_EQ(vjp.layout.input_cotangents[1], TangentState::kZero);
  EXPECT_EQ(vjp.layout.gradient_inputs.size(), 1u);
  EXPECT_EQ(vjp.layout.output_tangents[3], TangentState::kZero);
}

}  // namespace
}  // namespace tenferro::ad
