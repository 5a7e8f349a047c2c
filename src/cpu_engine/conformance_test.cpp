// The provider conformance suite: one test per operation
// family, written once and run over every engine in provider_cases(). Each
// operation runs twice, as a prepared one-node program (Runtime::run) and
// through the eager context, on contiguous and strided operands; results are
// checked against the reference evaluator (tenferro::testing, scalar loops
// independent of the CPU kernels). A family the engine does not declare must
// answer kUnsupportedOperation on both paths. Numpy checks a sample
// (numpy_reference_test.cpp in this directory).
#include <gtest/gtest.h>

#include <limits>
#include <optional>

#include "cpu/kernels/kernel_test_support.h"
#include "cpu_engine/engine_test_support.h"
#include "tenferro/cpu/gemm/native_gemm.h"

namespace tenferro::cpu {
namespace {

using program::CoreSemanticOp;
using runtime::OpFamily;
using testing::Layout;
using testing::make_tensor;

struct OpCase {
  std::string label;
  CoreSemanticOp op;
  std::vector<Tensor> inputs;
  program::CoreAttributes attributes;
};

Tensor scalar_i64(std::int64_t v) { return *Tensor::scalar<std::int64_t>(v); }

class CpuConformance : public ::testing::TestWithParam<testing::ProviderCase> {
 protected:
  void SetUp() override {
    Result<CpuEngine> engine = GetParam().make();
    if (!engine.ok() && engine.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << GetParam().name << " not available here: " << engine.status().to_string();
    }
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    engine_ = *std::move(engine);
    Result<runtime::Runtime> rt = testing::runtime_over(engine_);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    runtime_.emplace(*std::move(rt));
  }

  bool declares(OpFamily family) const {
    const runtime::CoreCapabilities& c = engine_.registration.capabilities;
    switch (family) {
      case OpFamily::kElementwise:
        return c.elementwise != nullptr;
      case OpFamily::kReduction:
        return c.reduction != nullptr;
      case OpFamily::kIndexing:
        return c.indexing != nullptr;
      case OpFamily::kDotGeneral:
        return c.dot_general != nullptr;
      case OpFamily::kLayout:
        return c.layout != nullptr;
      default:
        return false;
    }
  }

  // Runs `c` prepared and eagerly; compares with the reference, or expects
  // kUnsupportedOperation when the engine lacks the op's family.
  void check(const OpCase& c) {
    SCOPED_TRACE(c.label);
    const std::span<const Tensor> inputs(c.inputs.data(), c.inputs.size());
    auto program = testing::one_op_program(c.op, inputs, c.attributes);
    ASSERT_TRUE(program.ok()) << program.status().to_string();
    Result<runtime::TensorList> prepared = runtime_->run(*program, inputs);
    runtime::EagerContext ctx = runtime_->on();
    Result<Tensor> eager = ctx.apply(c.op, inputs, c.attributes);
    if (!declares(runtime::core_op_family(c.op))) {
      ASSERT_FALSE(prepared.ok());
      EXPECT_EQ(prepared.status().code(), ErrorCode::kUnsupportedOperation) << prepared.status().to_string();
      ASSERT_FALSE(eager.ok());
      EXPECT_EQ(eager.status().code(), ErrorCode::kUnsupportedOperation) << eager.status().to_string();
      ++checked_;
      return;
    }
    auto expected = ::tenferro::testing::evaluate_reference(**program, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const Tensor& want = (*expected)[0];
    const ::tenferro::testing::Tolerance tol = ::tenferro::testing::tolerance_for(want.dtype());
    ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
    Status s = ::tenferro::testing::check_allclose((*prepared)[0], want, tol);
    EXPECT_TRUE(s.ok()) << "prepared: " << s.to_string();
    ASSERT_TRUE(eager.ok()) << eager.status().to_string();
    s = ::tenferro::testing::check_allclose(*eager, want, tol);
    EXPECT_TRUE(s.ok()) << "eager: " << s.to_string();
    EXPECT_EQ(ctx.metrics().fast_path_calls, 1u) << "the eager call must run on the CPU engine's slot directly";
    EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
    ++checked_;
  }

  // Runs every case and checks that each one was checked.
  void check_all(const std::vector<OpCase>& cases) {
    for (const OpCase& c : cases) check(c);
    EXPECT_EQ(checked_, cases.size());
  }

  CpuEngine engine_;
  std::optional<runtime::Runtime> runtime_;
  std::size_t checked_ = 0;
};

TEST_P(CpuConformance, Elementwise) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 1;
  for (DType d : {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kInt32}) {
    for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced}) {
      const std::string tag = std::string(to_string(d)) + "/" + testing::layout_name(l);
      const Tensor a = make_tensor({3, 5}, d, l, seed++);
      const Tensor b = make_tensor({3, 5}, d, Layout::kContiguous, seed++);
      for (CoreSemanticOp op : {CoreSemanticOp::kAdd, CoreSemanticOp::kSub, CoreSemanticOp::kMul})
        cases.push_back({tag + " " + std::string(program::to_string(op)), op, {a, b}, program::NoAttributes{}});
      cases.push_back({tag + " neg", CoreSemanticOp::kNeg, {a}, program::NoAttributes{}});
      cases.push_back({tag + " abs", CoreSemanticOp::kAbs, {a}, program::NoAttributes{}});
      cases.push_back({tag + " compare eq", CoreSemanticOp::kCompare, {a, a}, program::CompareAttributes{}});
      cases.push_back(
          {tag + " convert f64", CoreSemanticOp::kConvert, {a}, program::ConvertAttributes{DType::kFloat64}});
      if (is_inexact(d)) {
        for (CoreSemanticOp op : {CoreSemanticOp::kDiv, CoreSemanticOp::kExp, CoreSemanticOp::kTanh})
          cases.push_back({tag + " " + std::string(program::to_string(op)), op,
                           op == CoreSemanticOp::kDiv ? std::vector<Tensor>{a, b} : std::vector<Tensor>{a},
                           program::NoAttributes{}});
      }
      if (!is_complex(d)) {
        cases.push_back({tag + " max", CoreSemanticOp::kMax, {a, b}, program::NoAttributes{}});
        cases.push_back({tag + " compare lt",
                         CoreSemanticOp::kCompare,
                         {a, b},
                         program::CompareAttributes{program::ComparisonDirection::kLt}});
      }
      const Tensor pred = make_tensor({3, 5}, DType::kBool, l, seed++);
      cases.push_back({tag + " select", CoreSemanticOp::kSelect, {pred, a, b}, program::NoAttributes{}});
    }
  }
  program::IotaAttributes iota{DType::kInt64, program::symbolic_shape(Dims{2, 3}), 1};
  cases.push_back({"iota", CoreSemanticOp::kIota, {}, iota});
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    for (auto distribution : {program::RandomDistribution::kUniform, program::RandomDistribution::kNormal}) {
      // 15 elements: the last normal pair is cut in half.
      const program::RandomAttributes random{d, program::symbolic_shape(Dims{3, 5}), 0x0123456789abcdefULL, 41,
                                             distribution};
      cases.push_back({"rng_philox " + program::to_string(random), CoreSemanticOp::kRngPhilox, {}, random});
    }
  }
  auto literal = program::Literal::from_values<double>({1.5, -2, 3, 4.25}, Dims{2, 2});
  ASSERT_TRUE(literal.ok());
  cases.push_back({"constant", CoreSemanticOp::kConstant, {}, program::ConstantAttributes{*literal}});
  check_all(cases);
}

// Nonzero integer divisors in [-9, 9] (zero divisors are an error, checked
// in the kernel tests).
Tensor nonzero_divisors(DType dtype, IntArrayRef shape, std::uint64_t seed) {
  Tensor b = *::tenferro::testing::random_integers(dtype, shape, seed, -9, 8);
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T* p = static_cast<T*>(b.data());
      for (std::int64_t i = 0; i < b.numel(); ++i) p[i] = p[i] >= 0 ? static_cast<T>(p[i] + 1) : p[i];
    }
  });
  return b;
}

// Every unary and binary elementwise row of core_ops.def, on every dtype of
// its OperandDTypes class: a new row without a kernel, a reference rule or
// an eager path fails here.
TEST_P(CpuConformance, EveryElementwiseOpOnEveryDType) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 500;
  constexpr std::size_t kNoAttributes =
      program::internal::VariantIndex<program::NoAttributes, program::CoreAttributes>::value;
  for (int i = 0; i < program::kNumCoreOps; ++i) {
    const auto op = static_cast<CoreSemanticOp>(i);
    const program::CoreOpInfo& info = program::core_op_info(op);
    if (info.family != program::CoreOpFamily::kElementwise || info.attributes_index != kNoAttributes ||
        info.min_operands != info.max_operands || info.max_operands > 2) {
      continue;
    }
    std::size_t dtypes = 0;
    for (int k = 0; k < kNumDTypes; ++k) {
      const auto d = static_cast<DType>(k);
      if (!program::dtype_in_class(d, info.operand_dtypes)) continue;
      ++dtypes;
      const std::string tag = std::string(program::to_string(op)) + " " + std::string(to_string(d));
      std::vector<Tensor> inputs = {make_tensor({3, 5}, d, Layout::kTransposed, seed++)};
      if (info.max_operands == 2) {
        const bool divides =
            op == CoreSemanticOp::kDiv || op == CoreSemanticOp::kRemainder || op == CoreSemanticOp::kFmod;
        inputs.push_back(divides && is_integer(d) ? nonzero_divisors(d, {3, 5}, seed++)
                                                  : make_tensor({3, 5}, d, Layout::kContiguous, seed++));
      }
      cases.push_back({tag, op, std::move(inputs), program::NoAttributes{}});
    }
    EXPECT_GT(dtypes, 0u) << program::to_string(op) << " accepts no dtype";
  }
  check_all(cases);
}

TEST_P(CpuConformance, Reduction) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 100;
  for (DType d : {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kInt64}) {
    for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced}) {
      const std::string tag = std::string(to_string(d)) + "/" + testing::layout_name(l);
      const Tensor x = make_tensor({4, 3, 5}, d, l, seed++);
      for (const Dims& axes : {Dims{0}, Dims{2}, Dims{0, 2}, Dims{0, 1, 2}}) {
        cases.push_back({tag + " sum " + std::to_string(axes.size()),
                         CoreSemanticOp::kReduceSum,
                         {x},
                         program::ReduceAttributes{axes}});
      }
      cases.push_back({tag + " prod", CoreSemanticOp::kReduceProd, {x}, program::ReduceAttributes{Dims{1}}});
      if (!is_complex(d)) {
        cases.push_back({tag + " max", CoreSemanticOp::kReduceMax, {x}, program::ReduceAttributes{Dims{0, 2}}});
        cases.push_back({tag + " min", CoreSemanticOp::kReduceMin, {x}, program::ReduceAttributes{Dims{1}}});
        cases.push_back({tag + " argmax", CoreSemanticOp::kArgmax, {x}, program::ArgReduceAttributes{2}});
        cases.push_back({tag + " argmin", CoreSemanticOp::kArgmin, {x}, program::ArgReduceAttributes{0}});
      }
    }
  }
  check_all(cases);
}

// clamp on every dtype of its class, with bounds drawn independently of x
// (so some elements have lo > hi).
TEST_P(CpuConformance, ClampOnEveryDType) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 650;
  const program::CoreOpInfo& info = program::core_op_info(CoreSemanticOp::kClamp);
  for (int k = 0; k < kNumDTypes; ++k) {
    const auto d = static_cast<DType>(k);
    if (!program::dtype_in_class(d, info.operand_dtypes)) continue;
    for (Layout l : {Layout::kContiguous, Layout::kTransposed}) {
      cases.push_back({std::string(to_string(d)) + "/" + testing::layout_name(l),
                       CoreSemanticOp::kClamp,
                       {make_tensor({3, 5}, d, Layout::kContiguous, seed++), make_tensor({3, 5}, d, l, seed++),
                        make_tensor({3, 5}, d, Layout::kSliced, seed++)},
                       program::NoAttributes{}});
    }
  }
  EXPECT_GE(cases.size(), 2u);
  check_all(cases);
}

// cumsum / cumprod with every flag combination, sort / argsort in both
// directions, along every axis of strided operands.
TEST_P(CpuConformance, AlongAxis) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 660;
  for (DType d : {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kInt32}) {
    for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced}) {
      const std::string tag = std::string(to_string(d)) + "/" + testing::layout_name(l);
      const Tensor x = make_tensor({4, 3, 5}, d, l, seed++);
      for (std::int64_t axis = 0; axis < 3; ++axis) {
        for (int flags = 0; flags < 4; ++flags) {
          const program::CumulativeAttributes a{axis, (flags & 1) != 0, (flags & 2) != 0};
          cases.push_back({tag + " cumsum " + program::to_string(a), CoreSemanticOp::kCumsum, {x}, a});
          cases.push_back({tag + " cumprod " + program::to_string(a), CoreSemanticOp::kCumprod, {x}, a});
        }
        if (is_complex(d)) continue;
        for (bool descending : {false, true}) {
          const program::SortAttributes a{axis, descending};
          cases.push_back({tag + " sort " + program::to_string(a), CoreSemanticOp::kSort, {x}, a});
          cases.push_back({tag + " argsort " + program::to_string(a), CoreSemanticOp::kArgsort, {x}, a});
        }
      }
    }
  }
  // Ties, signed zeros and NaNs: stable order, NaNs last both ways.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto special = Tensor::from_values<double>({3, nan, 1, 3, -0.0, 0.0, nan, 1, 2, -1, 2, nan}, Dims{3, 4});
  ASSERT_TRUE(special.ok());
  for (std::int64_t axis : {0, 1}) {
    for (bool descending : {false, true}) {
      const program::SortAttributes a{axis, descending};
      cases.push_back({"special sort " + program::to_string(a), CoreSemanticOp::kSort, {*special}, a});
      cases.push_back({"special argsort " + program::to_string(a), CoreSemanticOp::kArgsort, {*special}, a});
    }
  }
  check_all(cases);
}

TEST_P(CpuConformance, Indexing) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 200;
  for (DType d : {DType::kFloat64, DType::kComplex64, DType::kInt32, DType::kBool}) {
    for (Layout l : {Layout::kContiguous, Layout::kTransposed}) {
      const std::string tag = std::string(to_string(d)) + "/" + testing::layout_name(l);
      const Tensor x = make_tensor({4, 6}, d, l, seed++);
      const Tensor y = make_tensor({4, 2}, d, Layout::kContiguous, seed++);
      cases.push_back({tag + " reverse", CoreSemanticOp::kReverse, {x}, program::ReverseAttributes{Dims{1}}});
      cases.push_back({tag + " concatenate", CoreSemanticOp::kConcatenate, {x, y}, program::ConcatenateAttributes{1}});
      const Tensor value = make_tensor({}, d, Layout::kContiguous, seed++);
      cases.push_back(
          {tag + " pad", CoreSemanticOp::kPad, {x, value}, program::PadAttributes{Dims{1, 0}, Dims{0, 2}, Dims{1, 1}}});
      cases.push_back({tag + " dynamic_slice",
                       CoreSemanticOp::kDynamicSlice,
                       {x, scalar_i64(1), scalar_i64(5)},  // the column start clamps to 4
                       program::DynamicSliceAttributes{Dims{2, 2}}});
      cases.push_back({tag + " dynamic_update_slice",
                       CoreSemanticOp::kDynamicUpdateSlice,
                       {x, y, scalar_i64(0), scalar_i64(3)},
                       program::NoAttributes{}});
      auto indices = Tensor::from_values<std::int64_t>({5, 0, 3, 3, 1}, Dims{5});
      ASSERT_TRUE(indices.ok());
      const program::SymbolicShape x_shape = program::symbolic_shape(Dims{4, 6});
      cases.push_back(
          {tag + " gather (take)", CoreSemanticOp::kGather, {x, *indices}, program::take_attributes(x_shape, 1, 1)});
      auto rows = Tensor::from_values<std::int64_t>({2, 0}, Dims{2});
      ASSERT_TRUE(rows.ok());
      const Tensor updates = make_tensor({2, 6}, d, Layout::kContiguous, seed++);
      cases.push_back({tag + " scatter",
                       CoreSemanticOp::kScatter,
                       {x, *rows, updates},
                       program::take_scatter_attributes(2, 1, 0, program::ScatterCombine::kReplace)});
      // General forms: 2x3 windows at (row, col) starts, some outside
      // (gather clamps them, scatter skips them); point gathers x[i, j].
      auto starts = Tensor::from_values<std::int32_t>({0, 0, 3, 5, -1, 2, 1, 3}, Dims{4, 2});
      ASSERT_TRUE(starts.ok());
      const program::GatherAttributes windows{{1, 2}, {}, {0, 1}, 1, program::symbolic_shape(Dims{2, 3})};
      cases.push_back({tag + " gather windows", CoreSemanticOp::kGather, {x, *starts}, windows});
      auto starts_first = Tensor::from_values<std::int64_t>({0, 3, -1, 1, 0, 5, 2, 3}, Dims{2, 4});
      ASSERT_TRUE(starts_first.ok());
      cases.push_back({tag + " gather windows, vector axis 0, batch last",
                       CoreSemanticOp::kGather,
                       {x, *starts_first},
                       program::GatherAttributes{{0, 1}, {}, {0, 1}, 0, program::symbolic_shape(Dims{2, 3})}});
      auto points = Tensor::from_values<std::int64_t>({3, 5, 0, 0, 2, 1, 1, 4, 3, 0, 0, 5}, Dims{2, 3, 2});
      ASSERT_TRUE(points.ok());
      cases.push_back({tag + " gather points",
                       CoreSemanticOp::kGather,
                       {x, *points},
                       program::GatherAttributes{{}, {0, 1}, {1, 0}, 2, program::symbolic_shape(Dims{1, 1})}});
      const Tensor window_updates = make_tensor({4, 2, 3}, d, Layout::kTransposed, seed++);
      // Distinct in-range windows (0, 0) and (2, 3); (3, 5) and (-1, 2) skip.
      auto distinct = Tensor::from_values<std::int32_t>({0, 0, 3, 5, -1, 2, 2, 3}, Dims{4, 2});
      ASSERT_TRUE(distinct.ok());
      cases.push_back({tag + " scatter windows",
                       CoreSemanticOp::kScatter,
                       {x, *distinct, window_updates},
                       program::ScatterAttributes{{1, 2}, {}, {0, 1}, 1, program::ScatterCombine::kReplace}});
      if (d != DType::kBool) {
        auto dup = Tensor::from_values<std::int64_t>({1, 1}, Dims{2});
        ASSERT_TRUE(dup.ok());
        cases.push_back({tag + " scatter add",
                         CoreSemanticOp::kScatter,
                         {x, *dup, updates},
                         program::take_scatter_attributes(2, 1, 0, program::ScatterCombine::kAdd)});
        cases.push_back({tag + " scatter add windows",
                         CoreSemanticOp::kScatter,
                         {x, *starts, window_updates},
                         program::ScatterAttributes{{1, 2}, {}, {0, 1}, 1, program::ScatterCombine::kAdd}});
        const Tensor point_updates = make_tensor({2, 3}, d, Layout::kTransposed, seed++);
        cases.push_back({tag + " scatter add points",
                         CoreSemanticOp::kScatter,
                         {x, *points, point_updates},
                         program::ScatterAttributes{{}, {0, 1}, {1, 0}, 2, program::ScatterCombine::kAdd}});
      }
    }
  }
  check_all(cases);
}

TEST_P(CpuConformance, DotGeneral) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 300;
  const program::DotGeneralAttributes matmul{{}, {}, Dims{1}, Dims{0}};
  for (DType d : {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kComplex64, DType::kInt64}) {
    for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced}) {
      const std::string tag = std::string(to_string(d)) + "/" + testing::layout_name(l);
      cases.push_back({tag + " matmul 2x2",
                       CoreSemanticOp::kDotGeneral,
                       {make_tensor({2, 2}, d, l, seed++), make_tensor({2, 2}, d, Layout::kContiguous, seed++)},
                       matmul});
      cases.push_back({tag + " matmul 7x9x5",
                       CoreSemanticOp::kDotGeneral,
                       {make_tensor({7, 9}, d, l, seed++), make_tensor({9, 5}, d, l, seed++)},
                       matmul});
      // Batch axes in different positions, two contracted axes.
      cases.push_back(
          {tag + " batched",
           CoreSemanticOp::kDotGeneral,
           {make_tensor({3, 4, 2, 5}, d, l, seed++), make_tensor({5, 3, 6, 4}, d, Layout::kContiguous, seed++)},
           program::DotGeneralAttributes{Dims{0}, Dims{1}, Dims{1, 3}, Dims{3, 0}}});
    }
  }
  // Large enough for the blocked (packed) GEMM path and a parallel split.
  cases.push_back({"f64 96x80x72",
                   CoreSemanticOp::kDotGeneral,
                   {make_tensor({96, 80}, DType::kFloat64, Layout::kContiguous, seed++),
                    make_tensor({80, 72}, DType::kFloat64, Layout::kTransposed, seed++)},
                   matmul});
  check_all(cases);
  if (!declares(OpFamily::kDotGeneral)) return;
  // The configured GEMM provider computed the inexact cases (not a fallback).
  if (const auto* native = dynamic_cast<const NativeGemmProvider*>(engine_.gemm.get())) {
    const NativeGemmCounters n = native->counters();
    EXPECT_GT(n.small_problems + n.blocked_problems, 0);
    EXPECT_GT(n.blocked_problems, 0);
  }
  // The 2x2 products took the composite's tiny loop (Note [Tiny
  // dot_general]); the larger and multi-axis ones were planned.
  EXPECT_GT(engine_.dot_general->counters().tiny_calls, 0);
  EXPECT_GT(engine_.dot_general->counters().planned_calls, 0);
}

TEST_P(CpuConformance, Layout) {
  if (!declares(OpFamily::kLayout)) GTEST_SKIP() << "no layout slot";
  runtime::EagerContext ctx = runtime_->on();
  std::uint64_t seed = 400;
  for (DType d : {DType::kFloat64, DType::kComplex64, DType::kInt32, DType::kBool}) {
    for (const Dims& perm : {Dims{0, 1, 2}, Dims{2, 1, 0}, Dims{1, 0, 2}, Dims{0, 2, 1}}) {
      SCOPED_TRACE(std::string(to_string(d)) + " perm " + std::to_string(perm[0]) + std::to_string(perm[1]) +
                   std::to_string(perm[2]));
      const Tensor x = make_tensor({5, 7, 3}, d, Layout::kContiguous, seed++);
      const Tensor input[] = {x};
      auto program = testing::one_op_program(CoreSemanticOp::kTranspose, input, program::TransposeAttributes{perm});
      ASSERT_TRUE(program.ok());
      auto expected = ::tenferro::testing::evaluate_reference(**program, input);
      ASSERT_TRUE(expected.ok());
      auto view = x.permute(perm);
      ASSERT_TRUE(view.ok());
      const std::uint64_t before = ctx.metrics().fast_path_calls;
      auto copy = ctx.copy(*view);
      ASSERT_TRUE(copy.ok()) << copy.status().to_string();
      EXPECT_TRUE(copy->is_contiguous());
      EXPECT_TRUE(::tenferro::testing::check_allclose(*copy, (*expected)[0]).ok());
      EXPECT_EQ(ctx.metrics().fast_path_calls, before + 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, CpuConformance, ::testing::ValuesIn(testing::provider_cases()),
                         testing::provider_case_name);

// The slots answer kUnsupported (never an error) for ops of other families
// and dtypes outside an op's class: the only answer that lets the runtime
// try the next engine.
TEST(CpuEngineSlots, PrepareAnswersUnsupportedOutsideTheirFamily) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok());
  const runtime::CoreCapabilities& c = engine->registration.capabilities;
  const runtime::OperandSignature f64{DType::kFloat64, 2, {}, runtime::LayoutClass::kStrided};
  const runtime::OperandSignature boolean{DType::kBool, 2, {}, runtime::LayoutClass::kStrided};
  const runtime::OperandSignature operands[] = {f64, f64};
  const runtime::OperandSignature bool_operands[] = {boolean, boolean};
  const program::CoreAttributes reduce = program::ReduceAttributes{Dims{0}};
  const program::CoreAttributes none = program::NoAttributes{};
  const program::CoreAttributes dot = program::DotGeneralAttributes{{}, {}, Dims{1}, Dims{0}};
  auto signature = [](CoreSemanticOp op, std::span<const runtime::OperandSignature> ops,
                      const program::CoreAttributes& a) {
    runtime::OperationSignature s;
    s.op = op;
    s.attributes = &a;
    s.operands = ops;
    s.result = ops[0];
    return s;
  };
  using Kind = runtime::PrepareCapability::Kind;
  auto kind = [](const Result<runtime::PrepareCapability>& r) { return r.ok() ? r->kind() : Kind::kPrepared; };
  EXPECT_EQ(kind(c.elementwise->prepare(signature(CoreSemanticOp::kReduceSum, operands, reduce))), Kind::kUnsupported);
  EXPECT_EQ(kind(c.reduction->prepare(signature(CoreSemanticOp::kAdd, operands, none))), Kind::kUnsupported);
  EXPECT_EQ(kind(c.indexing->prepare(signature(CoreSemanticOp::kDotGeneral, operands, dot))), Kind::kUnsupported);
  EXPECT_EQ(kind(c.dot_general->prepare(signature(CoreSemanticOp::kAdd, operands, none))), Kind::kUnsupported);
  // add is not defined for bool, dot_general neither (no GEMM computes it).
  EXPECT_EQ(kind(c.elementwise->prepare(signature(CoreSemanticOp::kAdd, bool_operands, none))), Kind::kUnsupported);
  EXPECT_EQ(kind(c.dot_general->prepare(signature(CoreSemanticOp::kDotGeneral, bool_operands, dot))),
            Kind::kUnsupported);
  auto ok = c.dot_general->prepare(signature(CoreSemanticOp::kDotGeneral, operands, dot));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->kind(), Kind::kPrepared);
  auto add = c.elementwise->prepare(signature(CoreSemanticOp::kAdd, operands, none));
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(add->kind(), Kind::kPrepared);
  EXPECT_TRUE(add->kernel().reproducible);
  EXPECT_TRUE(add->kernel().in_place_ok);
}

}  // namespace
}  // namespace tenferro::cpu
