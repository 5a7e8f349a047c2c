// CpuLinalgEngine through the runtime: polymorphic prepare, prepared graphs
// and the eager fast path, the batch policy (one fan-out level, proven with
// counters), typed errors that leave inputs untouched, the measured default
// table's candidate order, passing over Unsupported refusals (and every
// candidate refusing), explain(), workspace reuse and the
// LAPACK provider's identification of what is loaded.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>

#include "linalg_cpu/linalg_plan.h"
#include "linalg_cpu/linalg_test_support.h"
#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/linalg/eager_linalg.h"
#include "tenferro/linalg_cpu/lapack_provider.h"
#include "tenferro/program/program_builder.h"
#include "testing/address_space.h"

namespace tenferro::linalg {
namespace {

using namespace testing;

/// Forwards to `inner`, counts calls, records the problems it saw, and can
/// claim another capability or refuse a dtype.
class RecordingProvider final : public CpuLinalgProvider {
 public:
  explicit RecordingProvider(std::shared_ptr<const CpuLinalgProvider> inner, std::string name = "recording",
                             std::optional<cpu::ThreadCountControl> claim = std::nullopt)
      : inner_(std::move(inner)), name_(std::move(name)), capability_(inner_->capability()) {
    if (claim) capability_.thread_count = *claim;
  }
  std::string_view name() const noexcept override { return name_; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }
  Result<LinalgKernelPlan> plan(const LinalgProblem& p) const override {
    plans.fetch_add(1);
    if (refuse_dtype && p.dtype == *refuse_dtype) return unsupported_problem(name_, p, "refused by the test");
    return inner_->plan(p);
  }
  Status run(const LinalgProblem& p, const LinalgKernelPlan& plan, const LinalgBuffers& b,
             std::span<std::byte> w) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen.push_back(*p.attributes);
    }
    calls.fetch_add(1);
    return inner_->run(p, plan, b, w);
  }
  std::optional<DType> refuse_dtype;
  mutable std::atomic<int> calls{0};
  mutable std::atomic<int> plans{0};
  mutable std::vector<LinalgAttributes> seen;

 private:
  std::shared_ptr<const CpuLinalgProvider> inner_;
  std::string name_;
  cpu::ProviderCapability capability_;
  mutable std::mutex mutex_;
};

std::shared_ptr<CpuLinalgEngine> eigen_engine(std::shared_ptr<const cpu::ParallelContext> parallel = nullptr,
                                              LinalgEngineOptions options = {}) {
  return std::make_shared<CpuLinalgEngine>(
      LinalgProviderPolicy::fixed(LinalgProviderBundle::all(std::make_shared<EigenLinalgProvider>())), options,
      std::move(parallel));
}

// A RecordingProvider over the LAPACK provider (null when it cannot load),
// and a ready CPU runtime whose linalg engine uses only `provider`.
std::shared_ptr<RecordingProvider> recording_lapack() {
  auto lapack = LapackLinalgProvider::load();
  EXPECT_TRUE(lapack.ok()) << lapack.status().to_string();
  return lapack.ok() ? std::make_shared<RecordingProvider>(*lapack) : nullptr;
}
// The ready CPU runtime, for the eager functions that compose linalg and
// core ops (lstsq's residuals, cond, matrix_power, multi_dot).
runtime::Runtime ready_runtime() {
  Result<cpu::CpuRuntime> cpu = cpu::make_cpu_runtime({.threads = 1});
  TENFERRO_CHECK(cpu.ok());
  return std::move(cpu->runtime);
}
runtime::Runtime runtime_over(std::shared_ptr<const CpuLinalgProvider> provider) {
  auto engine =
      std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(std::move(provider))));
  Result<cpu::CpuRuntime> cpu = cpu::make_cpu_runtime(
      {.threads = 1, .on_calling_thread = true, .linalg = false, .extensions = {[engine](EngineId id) {
                                                                   return cpu_extension_module(id, engine);
                                                                 }}});
  TENFERRO_CHECK(cpu.ok());
  return std::move(cpu->runtime);
}

Result<runtime::TensorList> eager(runtime::Runtime& rt, const std::shared_ptr<const LinalgOp>& op,
                                  std::initializer_list<Tensor> inputs) {
  runtime::EagerContext ctx = rt.on();
  return ctx.call(op, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

TEST(CpuLinalgEngineTest, PolymorphicPrepareAsksForConcreteDims) {
  auto engine = eigen_engine();
  runtime::OperandSignature operand{DType::kFloat64, 2, {}, runtime::LayoutClass::kStrided};
  runtime::ExtensionSignature sig;
  const auto op = LinalgOp::qr();
  sig.op = op.get();
  sig.operands = std::span<const runtime::OperandSignature>(&operand, 1);
  Result<runtime::PrepareCapability> answer = engine->prepare(sig);
  ASSERT_TRUE(answer.ok());
  ASSERT_EQ(answer->kind(), runtime::PrepareCapability::Kind::kNeedsSpecialization);
  EXPECT_TRUE(answer->requirements().has(program::SpecializationAxis::kConcreteDims));
}

TEST(CpuLinalgEngineTest, PreparedProgramAndEagerFastPathAgree) {
  auto engine = CpuLinalgEngine::create_default().value();
  runtime::Runtime rt = make_runtime(engine);
  program::ProgramBuilder b;
  const auto x = *b.add_input(DType::kFloat64, {3, 6, 4}, "x");
  const auto outs = *b.emit_extension(LinalgOp::svd(SvdMode::kThin), {x});
  const auto frozen = *b.freeze({outs[0], outs[1], outs[2]});
  const Tensor a = random_tensor(DType::kFloat64, {3, 6, 4}, 3);
  Result<runtime::TensorList> graph = rt.run(frozen.program, std::span<const Tensor>(&a, 1));
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  runtime::EagerContext ctx = rt.on();
  Result<SvdResult> direct = svd(ctx, a, SvdMode::kThin);
  ASSERT_TRUE(direct.ok()) << direct.status().to_string();
  EXPECT_EQ(ctx.metrics().fast_path_calls, 1u);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
  EXPECT_EQ(values_of((*graph)[0]), values_of(direct->u));
  EXPECT_EQ(values_of((*graph)[1]), values_of(direct->s));
  EXPECT_EQ(values_of((*graph)[2]), values_of(direct->vh));
  Result<std::shared_ptr<const runtime::PreparedProgram>> prepared =
      rt.prepare_for(frozen.program, runtime::InputSignature::of(std::span<const Tensor>(&a, 1)));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_NE((*prepared)->explain().find("cpu.linalg"), std::string::npos) << (*prepared)->explain();
}

// solve with b of one axis fewer than a: a vector per matrix (numpy's and
// torch's convention), equal to the [..., n, 1] solve.
TEST(CpuLinalgEngineTest, SolveTakesAVectorRightHandSide) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  runtime::EagerContext ctx = rt.on();
  const Tensor a = well_conditioned(DType::kFloat64, {2, 5, 5}, 41);
  const Tensor b = random_tensor(DType::kFloat64, {2, 5}, 42);
  Result<Tensor> x = solve(ctx, a, b);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(Dims(x->shape().begin(), x->shape().end()), (Dims{2, 5}));
  Result<Tensor> column = solve(ctx, a, b.unsqueeze(2).value());
  ASSERT_TRUE(column.ok()) << column.status().to_string();
  EXPECT_EQ(values_of(*x), values_of(*column));
  EXPECT_EQ(solve(ctx, a, random_tensor(DType::kFloat64, {2, 4}, 43)).status().code(), ErrorCode::kShapeMismatch);
}

TEST(CpuLinalgEngineTest, LstsqTakesAVectorRightHandSide) {
  runtime::Runtime rt = ready_runtime();
  runtime::EagerContext ctx = rt.on();
  const Tensor a = random_tensor(DType::kFloat64, {2, 6, 3}, 44);
  const Tensor b = random_tensor(DType::kFloat64, {2, 6}, 45);
  Result<Tensor> x = lstsq(ctx, a, b);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(Dims(x->shape().begin(), x->shape().end()), (Dims{2, 3}));  // numpy: x of [n]
  Result<Tensor> column = lstsq(ctx, a, b.unsqueeze(2).value());
  ASSERT_TRUE(column.ok()) << column.status().to_string();
  EXPECT_EQ(values_of(*x), values_of(*column));
  Result<LstsqResult> with_s = lstsq_with_singular_values(ctx, a, b);
  ASSERT_TRUE(with_s.ok()) << with_s.status().to_string();
  EXPECT_EQ(values_of(with_s->x), values_of(*x));
  EXPECT_EQ(Dims(with_s->s.shape().begin(), with_s->s.shape().end()), (Dims{2, 3}));
  EXPECT_EQ(lstsq(ctx, a, random_tensor(DType::kFloat64, {2, 5}, 46)).status().code(), ErrorCode::kShapeMismatch);
}

// Note [Eager batch broadcasting]: the batch axes of a and b broadcast as in
// numpy and torch; every system of the broadcast stack is solved.
TEST(CpuLinalgEngineTest, SystemsBroadcastTheirBatchAxes) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  runtime::EagerContext ctx = rt.on();
  const auto shape_of = [](const Tensor& t) { return Dims(t.shape().begin(), t.shape().end()); };
  const auto residual = [](const RefMatrix& a, const RefMatrix& x, const RefMatrix& b) {
    return (a * x - b).max_abs();
  };
  const auto column = [](const std::vector<cd>& v) {
    RefMatrix m(static_cast<std::int64_t>(v.size()), 1);
    m.d = v;
    return m;
  };
  const double tol = tolerance(DType::kFloat64, 4);

  // a [2, 1, 4, 4] with b [3, 4, 2]: 2 x 3 systems.
  const Tensor a = well_conditioned(DType::kFloat64, {2, 1, 4, 4}, 51);
  const Tensor b = random_tensor(DType::kFloat64, {3, 4, 2}, 52);
  Result<Tensor> x = solve(ctx, a, b);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(shape_of(*x), (Dims{2, 3, 4, 2}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      EXPECT_LT(residual(matrix_of(a, i), matrix_of(*x, i * 3 + j), matrix_of(b, j)), tol) << i << "," << j;

  // A b of one axis is one vector for every matrix (numpy 2, torch).
  const Tensor stack = well_conditioned(DType::kFloat64, {3, 4, 4}, 53);
  const Tensor v = random_tensor(DType::kFloat64, {4}, 54);
  Result<Tensor> xv = solve(ctx, stack, v);
  ASSERT_TRUE(xv.ok()) << xv.status().to_string();
  EXPECT_EQ(shape_of(*xv), (Dims{3, 4}));
  for (std::int64_t i = 0; i < 3; ++i)
    EXPECT_LT(residual(matrix_of(stack, i), column(vector_of(*xv, i)), column(values_of(v))), tol) << i;

  // A b of one axis fewer than a that is not a's shape without its last axis
  // is a matrix broadcast over the stack (torch's rule): [4, 4] with a [3, 4, 4].
  const Tensor square = random_tensor(DType::kFloat64, {4, 4}, 55);
  Result<Tensor> xm = solve(ctx, stack, square);
  ASSERT_TRUE(xm.ok()) << xm.status().to_string();
  EXPECT_EQ(shape_of(*xm), (Dims{3, 4, 4}));
  for (std::int64_t i = 0; i < 3; ++i)
    EXPECT_LT(residual(matrix_of(stack, i), matrix_of(*xm, i), matrix_of(square, 0)), tol) << i;

  // triangular_solve: one lower-triangular a for a stack of right-hand sides.
  Result<Tensor> lower = Tensor::from_values<double>({2, 0, 0, 0, 1, 3, 0, 0, -1, 2, 4, 0, 0.5, 1, -2, 5}, {4, 4});
  ASSERT_TRUE(lower.ok());
  const Tensor rhs = random_tensor(DType::kFloat64, {2, 4, 3}, 56);
  Result<Tensor> xt = triangular_solve(ctx, *lower, rhs, true);
  ASSERT_TRUE(xt.ok()) << xt.status().to_string();
  EXPECT_EQ(shape_of(*xt), (Dims{2, 4, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    EXPECT_LT(residual(matrix_of(*lower, 0), matrix_of(*xt, i), matrix_of(rhs, i)), tol) << i;

  // lstsq: a stack of tall matrices with one vector.
  const Tensor tall = random_tensor(DType::kFloat64, {2, 6, 3}, 57);
  const Tensor y = random_tensor(DType::kFloat64, {6}, 58);
  Result<Tensor> xl = lstsq(ctx, tall, y);
  ASSERT_TRUE(xl.ok()) << xl.status().to_string();
  EXPECT_EQ(shape_of(*xl), (Dims{2, 3}));
  for (std::int64_t i = 0; i < 2; ++i) {
    Result<Tensor> one = lstsq(ctx, tall.slice(0, i, i + 1).value().squeeze(0).value(), y);
    ASSERT_TRUE(one.ok()) << one.status().to_string();
    const std::vector<cd> got = vector_of(*xl, i), want = values_of(*one);
    for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(std::abs(got[k] - want[k]), 0.0, 1e-12) << i;
  }

  // Batch axes that do not broadcast: a typed error naming both shapes.
  Result<Tensor> bad = solve(ctx, a, random_tensor(DType::kFloat64, {3, 2, 4, 1}, 59));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(bad.status().message().find("found a [2, 1, 4, 4] and b [3, 2, 4, 1]"), std::string::npos)
      << bad.status().to_string();
}

// numpy.linalg.norm(x) and torch.linalg.vector_norm(x): all elements; with
// axes, one norm per index of the other axes.
// matrix_rank and cond (2, -2) from the singular values, as numpy's.
TEST(CpuLinalgEngineTest, MatrixRankAndConditionNumbersAsNumpy) {
  runtime::Runtime rt = ready_runtime();
  runtime::EagerContext ctx = rt.on();
  const auto ints = [](const Result<Tensor>& r) {
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r->to_vector<std::int64_t>() : std::vector<std::int64_t>();
  };
  const auto reals = [](const Result<Tensor>& r) {
    std::vector<double> v;
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok())
      for (const cd& x : values_of(*r)) v.push_back(x.real());
    return v;
  };
  // Ranks 1, 2 and 4 in one stack: sums of outer products of random vectors.
  for (DType dtype : kAllDTypes) {
    std::vector<cd> stack;
    for (int rank : {1, 2, 4}) {
      RefMatrix m(4, 4);
      for (int r = 0; r < rank; ++r) {
        const std::vector<cd> u = values_of(random_tensor(dtype, {4}, 60 + r)),
                              v = values_of(random_tensor(dtype, {4}, 70 + r));
        for (std::int64_t i = 0; i < 4; ++i)
          for (std::int64_t j = 0; j < 4; ++j)
            m(i, j) += u[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(j)];
      }
      stack.insert(stack.end(), m.d.begin(), m.d.end());
    }
    EXPECT_EQ(ints(matrix_rank(ctx, tensor_of(dtype, {3, 4, 4}, stack))), (std::vector<std::int64_t>{1, 2, 4}))
        << to_string(dtype);
  }
  // rtol: singular values 1, 1e-3, 1e-8.
  const Tensor graded = tensor_of(DType::kFloat64, {3, 3}, {1, 0, 0, 0, 1e-3, 0, 0, 0, 1e-8});
  EXPECT_EQ(ints(matrix_rank(ctx, graded)), (std::vector<std::int64_t>{3}));  // default: 3 * eps
  EXPECT_EQ(ints(matrix_rank(ctx, graded, 1e-5)), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ints(matrix_rank(ctx, *Tensor::zeros({2, 3}, DType::kFloat64))), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(ints(matrix_rank(ctx, *Tensor::zeros({0, 3}, DType::kFloat64))), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(matrix_rank(ctx, *Tensor::zeros({3}, DType::kFloat64)).status().code(), ErrorCode::kInvalidArgument);
  // cond: diag(4, 2, 1) is 4 (and 1/4 at -2); a singular matrix inf (0);
  // a zero matrix inf for both; float32 stays float32.
  const Tensor diag = tensor_of(DType::kFloat64, {3, 3}, {4, 0, 0, 0, 2, 0, 0, 0, 1});
  EXPECT_NEAR(reals(cond(ctx, diag))[0], 4.0, 1e-12);
  EXPECT_NEAR(reals(cond(ctx, diag, NormOrder::kNegTwo))[0], 0.25, 1e-12);
  const Tensor singular = tensor_of(DType::kFloat64, {2, 2}, {1, 0, 0, 0});
  EXPECT_EQ(reals(cond(ctx, singular))[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(reals(cond(ctx, singular, NormOrder::kNegTwo))[0], 0.0);
  EXPECT_EQ(reals(cond(ctx, *Tensor::zeros({2, 2}, DType::kFloat64), NormOrder::kNegTwo))[0],
            std::numeric_limits<double>::infinity());
  Result<Tensor> single = cond(ctx, tensor_of(DType::kComplex64, {2, 2}, {cd(0, 3), 0, 0, 1}));
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->dtype(), DType::kFloat32);
  EXPECT_NEAR(values_of(*single)[0].real(), 3.0, 1e-6);
  EXPECT_EQ(cond(ctx, *Tensor::zeros({0, 0}, DType::kFloat64)).status().code(), ErrorCode::kInvalidArgument);
  // The other orders are norm(a) * norm(inv(a)) (Note [Condition numbers by
  // the inverse]): for diag(4, 2, 1) and its inverse diag(1/4, 1/2, 1).
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<NormOrder, double> by_inverse[] = {{NormOrder::kFrobenius, std::sqrt(21.0 * 1.3125)},
                                                     {NormOrder::kNuclear, 7.0 * 1.75},
                                                     {NormOrder::kOne, 4.0},
                                                     {NormOrder::kNegOne, 0.25},
                                                     {NormOrder::kInf, 4.0},
                                                     {NormOrder::kNegInf, 0.25}};
  for (const auto& [order, expected] : by_inverse) {
    SCOPED_TRACE(to_string(order));
    EXPECT_NEAR(reals(cond(ctx, diag, order))[0], expected, 1e-12);
    // A singular matrix is inf, alone or in a stack whose other matrices
    // keep their values.
    EXPECT_EQ(reals(cond(ctx, singular, order))[0], inf);
    std::vector<cd> stack = values_of(diag);
    for (double x : {1.0, 2.0, 0.0, 2.0, 4.0, 0.0, 0.0, 0.0, 1.0}) stack.emplace_back(x);  // rows 1 and 2 dependent
    const std::vector<double> both = reals(cond(ctx, tensor_of(DType::kFloat64, {2, 1, 3, 3}, stack), order));
    ASSERT_EQ(both.size(), 2U);
    EXPECT_NEAR(both[0], expected, 1e-12);
    EXPECT_EQ(both[1], inf);
    Result<Tensor> narrow = cond(ctx, tensor_of(DType::kComplex64, {3, 3}, values_of(diag)), order);
    ASSERT_TRUE(narrow.ok()) << narrow.status().to_string();
    EXPECT_EQ(narrow->dtype(), DType::kFloat32);
    EXPECT_NEAR(values_of(*narrow)[0].real(), expected, 1e-5);
  }
  Result<Tensor> wide = cond(ctx, *Tensor::ones({2, 3}, DType::kFloat64), NormOrder::kOne);
  EXPECT_EQ(wide.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wide.status().message().find("square"), std::string::npos) << wide.status().to_string();
  EXPECT_EQ(cond(ctx, diag, NormOrder::kP).status().code(), ErrorCode::kInvalidArgument);
}

TEST(CpuLinalgEngineTest, MatrixPowersAsNumpy) {
  runtime::Runtime rt = ready_runtime();
  runtime::EagerContext ctx = rt.on();
  for (DType dtype : kAllDTypes) {
    const Tensor a = well_conditioned(dtype, {2, 3, 3}, 81);
    for (std::int64_t k : {0, 1, 2, 3, 6, -1, -3}) {
      SCOPED_TRACE(fmt::format("{} k = {}", dtype, k));
      Result<Tensor> power = matrix_power(ctx, a, k);
      ASSERT_TRUE(power.ok()) << power.status().to_string();
      EXPECT_EQ(power->dtype(), dtype);
      EXPECT_EQ(Dims(power->shape().begin(), power->shape().end()), (Dims{2, 3, 3}));
      EXPECT_NE(power->data(), a.data()) << "a new tensor";
      for (std::int64_t b = 0; b < 2; ++b) {
        // a^k (k >= 0), or I = a^|k| a^k for k < 0.
        RefMatrix expected = RefMatrix::identity(3), got = matrix_of(*power, b);
        for (std::int64_t i = 0; i < (k < 0 ? -k : k); ++i) expected = expected * matrix_of(a, b);
        if (k < 0) {
          got = expected * got;
          expected = RefMatrix::identity(3);
        }
        double scale = 1.0;
        for (const cd& x : expected.d) scale = std::max(scale, std::abs(x));
        for (std::size_t i = 0; i < got.d.size(); ++i)
          EXPECT_NEAR(std::abs(got.d[i] - expected.d[i]), 0.0, tolerance(dtype, 3) * scale) << i;
      }
    }
  }
  // Integers stay integers: Fibonacci numbers.
  Result<Tensor> fibonacci = matrix_power(ctx, Tensor::from_values<std::int64_t>({1, 1, 1, 0}, {2, 2}).value(), 10);
  ASSERT_TRUE(fibonacci.ok()) << fibonacci.status().to_string();
  EXPECT_EQ(*fibonacci->to_vector<std::int64_t>(), (std::vector<std::int64_t>{89, 55, 55, 34}));
  EXPECT_EQ(matrix_power(ctx, *Tensor::ones({2, 3}, DType::kFloat64), 2).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(matrix_power(ctx, tensor_of(DType::kFloat64, {2, 2}, {1, 0, 0, 0}), -1).status().code(),
            ErrorCode::kSingularMatrix);
}

TEST(CpuLinalgEngineTest, MultiDotOfMatricesAndEndVectorsAsNumpy) {
  runtime::Runtime rt = ready_runtime();
  runtime::EagerContext ctx = rt.on();
  // v [4], A [4, 10], B [10, 2], C [2, 6], w [6]: every combination of end
  // vectors against the product taken left to right.
  const Tensor v = random_tensor(DType::kFloat64, {4}, 91), a = random_tensor(DType::kFloat64, {4, 10}, 92),
               b = random_tensor(DType::kFloat64, {10, 2}, 93), c = random_tensor(DType::kFloat64, {2, 6}, 94),
               w = random_tensor(DType::kFloat64, {6}, 95);
  RefMatrix row(1, 4), column(6, 1);
  row.d = values_of(v);
  column.d = values_of(w);
  const RefMatrix abc = matrix_of(a, 0) * matrix_of(b, 0) * matrix_of(c, 0);
  const struct {
    std::vector<Tensor> operands;
    RefMatrix expected;
    Dims shape;
  } cases[] = {{{a, b, c}, abc, {4, 6}},
               {{v, a, b, c}, row * abc, {6}},
               {{a, b, c, w}, abc * column, {4}},
               {{v, a, b, c, w}, row * abc * column, {}},
               {{v, a}, row * matrix_of(a, 0), {10}}};
  for (const auto& [operands, expected, shape] : cases) {
    SCOPED_TRACE(operands.size());
    Result<Tensor> product = multi_dot(ctx, operands);
    ASSERT_TRUE(product.ok()) << product.status().to_string();
    EXPECT_EQ(Dims(product->shape().begin(), product->shape().end()), shape);
    const std::vector<cd> got = values_of(*product);
    ASSERT_EQ(got.size(), expected.d.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(std::abs(got[i] - expected.d[i]), 0.0, 1e-12) << i;
  }
  // Mixed dtypes go in their common dtype.
  Result<Tensor> mixed = multi_dot(ctx, std::vector<Tensor>{tensor_of(DType::kFloat32, {2, 2}, {1, 2, 3, 4}),
                                                            tensor_of(DType::kComplex128, {2, 1}, {cd(0, 1), 1})});
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  EXPECT_EQ(mixed->dtype(), DType::kComplex128);
  EXPECT_EQ(values_of(*mixed), (std::vector<cd>{cd(2, 1), cd(4, 3)}));
  EXPECT_EQ(multi_dot(ctx, std::vector<Tensor>{a}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(multi_dot(ctx, std::vector<Tensor>{a, v, c}).status().code(), ErrorCode::kInvalidArgument);
  Result<Tensor> mismatch = multi_dot(ctx, std::vector<Tensor>{a, c});
  EXPECT_EQ(mismatch.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(mismatch.status().message().find("operand 1 to have 10 rows"), std::string::npos)
      << mismatch.status().to_string();
}

TEST(CpuLinalgEngineTest, VectorNormOfAllElementsOrOverChosenAxes) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  runtime::EagerContext ctx = rt.on();
  const Tensor m = Tensor::from_values<double>({3, 4, 0, 0, 0, 12}, {2, 3}).value();
  const auto real_values = [](const Result<Tensor>& r) {
    std::vector<double> v;
    if (!r.ok()) return v;
    for (const cd& x : values_of(*r)) v.push_back(x.real());
    return v;
  };
  Result<Tensor> all = vector_norm(ctx, m);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(all->rank(), 0);
  EXPECT_EQ(real_values(all), (std::vector<double>{13}));
  EXPECT_EQ(real_values(vector_norm(ctx, m, Dims{-1})), (std::vector<double>{5, 12}));
  EXPECT_EQ(real_values(vector_norm(ctx, m, Dims{0})), (std::vector<double>{3, 4, 12}));
  EXPECT_EQ(real_values(vector_norm(ctx, m, Dims{1, 0})), (std::vector<double>{13}));
  EXPECT_EQ(real_values(vector_norm(ctx, m, NormOrder::kOne)), (std::vector<double>{19}));
  EXPECT_EQ(real_values(vector_norm(ctx, m, Dims{0}, NormOrder::kInf)), (std::vector<double>{3, 4, 12}));
  // A transposed view of a 3-D tensor over two of its axes (which merge
  // into one strided axis: no copy), against the sums done here. The
  // copying case runs in cpu_runtime_test.cpp, whose runtime has a layout
  // slot.
  const Tensor x = random_tensor(DType::kFloat64, {3, 4, 5}, 47).permute({2, 0, 1}).value();  // [5, 3, 4]
  const std::vector<cd> xv = values_of(x);
  Result<Tensor> r = vector_norm(ctx, x, Dims{1, 2});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(Dims(r->shape().begin(), r->shape().end()), (Dims{5}));
  const std::vector<double> got = real_values(r);
  for (std::size_t i = 0; i < 5; ++i) {
    double sum = 0;
    for (std::size_t jk = 0; jk < 12; ++jk) sum += std::norm(xv[i * 12 + jk]);
    EXPECT_NEAR(got[i], std::sqrt(sum), 1e-12) << i;
  }
  EXPECT_EQ(vector_norm(ctx, m, Dims{2}).status().code(), ErrorCode::kInvalidArgument);
  // No axes is refused, as numpy does (vector_norm(ctx, m) takes them all).
  const Result<Tensor> none = vector_norm(ctx, m, Dims{});
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(none.status().to_string().find("at least one axis"), std::string::npos) << none.status().to_string();
  // A 0-d tensor's norm (all of its elements) is its magnitude, as numpy's.
  EXPECT_EQ(real_values(vector_norm(ctx, *Tensor::scalar<double>(-3.0))), (std::vector<double>{3}));
  EXPECT_EQ(real_values(vector_norm(ctx, *Tensor::scalar<double>(-3.0), NormOrder::kInf)), (std::vector<double>{3}));
  EXPECT_EQ(vector_norm(ctx, m, Dims{1, -1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(vector_norm(ctx, m, Dims{1, -1}).status().message().find("twice"), std::string::npos);
}

TEST(CpuLinalgEngineTest, OuterBatchParallelismForSequentialProvidersIsOneFanOutLevel) {
  auto parallel = std::make_shared<cpu::ArenaParallelContext>(2);
  auto recording = std::make_shared<RecordingProvider>(std::make_shared<EigenLinalgProvider>(), "recording-eigen");
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(recording)),
                                                  LinalgEngineOptions{}, parallel);
  runtime::Runtime rt = make_runtime(engine);
  const Tensor a = random_tensor(DType::kFloat64, {64, 16, 16}, 4);
  Result<runtime::TensorList> outer = eager(rt, LinalgOp::eigh(), {a});
  ASSERT_TRUE(outer.ok()) << outer.status().to_string();
  LinalgEngineStats s = engine->stats();
  EXPECT_EQ(s.outer_runs, 1u);
  EXPECT_EQ(s.outer_chunks, 2u);
  EXPECT_EQ(s.inner_runs + s.sequential_runs, 0u);
  EXPECT_EQ(s.provider_calls, 64u);
  EXPECT_EQ(recording->calls.load(), 64);

  // One matrix: sequential; the same numbers as one batch element.
  const Tensor one = *a.slice(0, 5, 6);
  Result<runtime::TensorList> single = eager(rt, LinalgOp::eigh(), {one});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(engine->stats().sequential_runs, 1u);
  EXPECT_EQ(values_of((*single)[0]), vector_of((*outer)[0], 5));

  // The same batch with one thread runs sequentially and gives identical bits.
  auto sequential_engine =
      std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(recording)),
                                        LinalgEngineOptions{}, std::make_shared<cpu::ArenaParallelContext>(1));
  runtime::Runtime rt1 = make_runtime(sequential_engine);
  Result<runtime::TensorList> seq = eager(rt1, LinalgOp::eigh(), {a});
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(sequential_engine->stats().sequential_runs, 1u);
  EXPECT_EQ(sequential_engine->stats().outer_runs, 0u);
  for (std::size_t r = 0; r < 2; ++r) EXPECT_EQ(values_of((*seq)[r]), values_of((*outer)[r]));
}

TEST(CpuLinalgEngineTest, UncontrolledProvidersNeverFanOutAndAreRejectedWhenStrict) {
  auto parallel = std::make_shared<cpu::ArenaParallelContext>(2);
  auto uncontrolled = std::make_shared<RecordingProvider>(std::make_shared<EigenLinalgProvider>(), "global-pool",
                                                          cpu::ThreadCountControl::kGlobalOrUncontrolled);
  const Tensor a = random_tensor(DType::kFloat64, {8, 10, 10}, 5);

  auto strict = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(uncontrolled)),
                                                  LinalgEngineOptions{}, parallel);
  runtime::Runtime rt_strict = make_runtime(strict);
  Result<runtime::TensorList> rejected = eager(rt_strict, LinalgOp::qr(), {a});
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), ErrorCode::kPlacementError) << rejected.status().to_string();
  EXPECT_EQ(uncontrolled->calls.load(), 0);

  LinalgEngineOptions exclusive;
  exclusive.threading = cpu::ProviderThreadingPolicy::kProviderDefaultExclusive;
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(uncontrolled)),
                                                  exclusive, parallel);
  runtime::Runtime rt = make_runtime(engine);
  ASSERT_TRUE(eager(rt, LinalgOp::qr(), {a}).ok());
  EXPECT_EQ(engine->stats().inner_runs, 1u);
  EXPECT_EQ(engine->stats().outer_runs, 0u);
  EXPECT_NE(engine->explain(*LinalgOp::qr(), DType::kFloat64, std::vector<IntArrayRef>{IntArrayRef({8, 10, 10})}, 2)
                .find("process-global"),
            std::string::npos);
}

TEST(CpuLinalgEngineTest, RunsInsideARealCpuDomain) {
  Result<cpu::CpuTopology> topology = cpu::CpuTopology::discover();
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = cpu::CpuDomainSet::create_managed(*topology);
  ASSERT_TRUE(domains.ok()) << domains.status().to_string();
  const std::shared_ptr<const cpu::CpuResourceDomain> domain = (*domains)->domains()[0];
  auto engine = CpuLinalgEngine::create_default().value();
  // The CPU engine of cpu::register_cpu_engine, with the linalg module on it.
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions cpu_options;
  cpu_options.id = EngineId(7);
  cpu_options.domains = *domains;
  ASSERT_TRUE(cpu::register_cpu_engine(builder, cpu_options).ok());
  builder.add_extension_module(cpu_extension_module(EngineId(7), engine));
  runtime::Runtime rt = *builder.build();
  const Tensor a = hermitian_positive_definite(DType::kComplex128, {32, 12, 12}, 6);
  // One parallel_for through the entered domain's context: a fan-out over
  // the workers, or inline when the batch fits one chunk of the grain.
  const auto parallel_calls = [&] { return domain->metrics().parallel_fanouts + domain->metrics().parallel_inline; };
  const std::uint64_t calls = parallel_calls();
  Result<runtime::TensorList> out = eager(rt, LinalgOp::cholesky(), {a});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const LinalgEngineStats s = engine->stats();
  if (domain->thread_budget() > 1) {
    EXPECT_EQ(s.outer_runs, 1u);
    EXPECT_EQ(parallel_calls(), calls + 1);
  } else {
    EXPECT_EQ(s.sequential_runs, 1u);
  }
  for (std::int64_t b : {0, 31}) {
    const RefMatrix l = matrix_of((*out)[0], b);
    const RefMatrix want = matrix_of(a, b);
    EXPECT_LE((l * l.adjoint() - want).max_abs(), 1e-12 * want.max_abs());
  }
}

TEST(CpuLinalgEngineTest, NumericalFailuresAreTypedWithInfoAndBatchElement) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  // Batch element 1 is singular (a zero row).
  std::vector<cd> v = values_of(well_conditioned(DType::kFloat64, {3, 4, 4}, 7));
  for (int j = 0; j < 4; ++j) v[static_cast<std::size_t>(16 + 2 * 4 + j)] = 0;
  const Tensor a = tensor_of(DType::kFloat64, {3, 4, 4}, v);
  const Tensor rhs = random_tensor(DType::kFloat64, {3, 4, 2}, 8);
  const std::vector<cd> before = values_of(a);
  for (const auto& op : {LinalgOp::solve(), LinalgOp::inv()}) {
    Result<runtime::TensorList> out = op->kind() == LinalgOpKind::kSolve ? eager(rt, op, {a, rhs}) : eager(rt, op, {a});
    ASSERT_FALSE(out.ok()) << op->describe();
    EXPECT_EQ(out.status().code(), ErrorCode::kSingularMatrix);
    const std::string text = out.status().to_string();
    EXPECT_NE(text.find("LAPACK info = "), std::string::npos) << text;
    EXPECT_NE(text.find("batch element 1 of 3"), std::string::npos) << text;
  }
  EXPECT_EQ(values_of(a), before) << "inputs are never modified";
  // det of the singular element is 0, not an error.
  Result<runtime::TensorList> det = eager(rt, LinalgOp::det(), {a});
  ASSERT_TRUE(det.ok());
  EXPECT_EQ(values_of((*det)[0])[1], cd(0));

  const Tensor indefinite = tensor_of(DType::kFloat64, {4, 4}, {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, -1, 0, 0, 0, 0, 4});
  Result<runtime::TensorList> chol = eager(rt, LinalgOp::cholesky(), {indefinite});
  ASSERT_FALSE(chol.ok());
  EXPECT_EQ(chol.status().code(), ErrorCode::kNotPositiveDefinite);
  EXPECT_NE(chol.status().to_string().find("order 3"), std::string::npos) << chol.status().to_string();

  const Tensor zero_diag = tensor_of(DType::kFloat64, {2, 2}, {1, 0, 5, 0});
  Result<runtime::TensorList> tri =
      eager(rt, LinalgOp::triangular_solve(true), {zero_diag, *Tensor::zeros({2, 1}, DType::kFloat64)});
  ASSERT_FALSE(tri.ok());
  EXPECT_EQ(tri.status().code(), ErrorCode::kSingularMatrix);
  EXPECT_NE(tri.status().to_string().find("info = 2"), std::string::npos) << tri.status().to_string();
}

TEST(CpuLinalgEngineTest, NonFiniteInputsAndShapeMismatchesAreTypedErrors) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::vector<cd> v = values_of(random_tensor(DType::kComplex128, {2, 3, 3}, 9));
    v[12] = cd(0, bad);
    const Tensor a = tensor_of(DType::kComplex128, {2, 3, 3}, v);
    for (const auto& op : {LinalgOp::svd(), LinalgOp::eig(), LinalgOp::qr(), LinalgOp::det()}) {
      Result<runtime::TensorList> out = eager(rt, op, {a});
      ASSERT_FALSE(out.ok()) << op->describe();
      EXPECT_EQ(out.status().code(), ErrorCode::kNonFiniteInput) << out.status().to_string();
      EXPECT_NE(out.status().to_string().find("batch element 1"), std::string::npos);
    }
    // Norms propagate instead (numpy semantics).
    Result<runtime::TensorList> norm = eager(rt, *LinalgOp::matrix_norm(NormOrder::kTwo), {a});
    ASSERT_TRUE(norm.ok()) << norm.status().to_string();
    const double n1 = values_of((*norm)[0])[1].real();
    EXPECT_TRUE(std::isnan(bad) ? std::isnan(n1) : std::isinf(n1)) << n1;
  }
  // Real inputs, the non-finite value last (the tail of the vectorised
  // check), and a non-finite right-hand side.
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (double bad : {std::nan(""), -std::numeric_limits<double>::infinity()}) {
      std::vector<cd> v = values_of(random_tensor(dtype, {2, 3, 3}, 13));
      v.back() = cd(bad);
      Result<runtime::TensorList> out = eager(rt, LinalgOp::inv(), {tensor_of(dtype, {2, 3, 3}, v)});
      ASSERT_FALSE(out.ok()) << to_string(dtype);
      EXPECT_EQ(out.status().code(), ErrorCode::kNonFiniteInput) << out.status().to_string();
      std::vector<cd> rhs = values_of(random_tensor(dtype, {3, 2}, 14));
      rhs[4] = cd(bad);
      out = eager(rt, LinalgOp::solve(), {well_conditioned(dtype, {3, 3}, 15), tensor_of(dtype, {3, 2}, rhs)});
      ASSERT_FALSE(out.ok()) << to_string(dtype);
      EXPECT_EQ(out.status().code(), ErrorCode::kNonFiniteInput) << out.status().to_string();
      EXPECT_NE(out.status().to_string().find("operand 1"), std::string::npos) << out.status().to_string();
    }
  }
  // In a batch of several axes the error also gives the index along each.
  {
    std::vector<cd> v = values_of(random_tensor(DType::kFloat64, {2, 3, 2, 2}, 16));
    v[(1 * 3 + 2) * 4 + 3] = cd(std::nan(""));  // matrix (1, 2)
    Result<runtime::TensorList> out = eager(rt, LinalgOp::inv(), {tensor_of(DType::kFloat64, {2, 3, 2, 2}, v)});
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().to_string().find("batch element 5 of 6: index [1, 2] of batch shape [2, 3]"),
              std::string::npos)
        << out.status().to_string();
  }
  const Tensor a = random_tensor(DType::kFloat64, {3, 3}, 10);
  Result<runtime::TensorList> mismatch = eager(rt, LinalgOp::solve(), {a, random_tensor(DType::kFloat64, {4, 1}, 11)});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), ErrorCode::kShapeMismatch) << mismatch.status().to_string();
  Result<runtime::TensorList> not_square = eager(rt, LinalgOp::eigh(), {random_tensor(DType::kFloat64, {3, 4}, 12)});
  EXPECT_EQ(not_square.status().code(), ErrorCode::kShapeMismatch);
  const Tensor ints = *Tensor::zeros({2, 2}, DType::kInt32);
  EXPECT_EQ(eager(rt, LinalgOp::inv(), {ints}).status().code(), ErrorCode::kDTypeMismatch);  // the op is strict
}

// The engine gathers each matrix from the operand's strides: a transposed
// view and a right-hand side broadcast over the batch (batch stride 0) give
// bit for bit the results of their contiguous copies.
TEST(CpuLinalgEngineTest, StridedAndBroadcastOperandsMatchTheirContiguousCopies) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  for (DType dtype : kAllDTypes) {
    const Tensor view = well_conditioned(dtype, {2, 37, 37}, 21).transpose(1, 2).value();
    const Tensor copy = tensor_of(dtype, {2, 37, 37}, values_of(view));
    const Tensor rhs = random_tensor(dtype, {1, 37, 3}, 22).broadcast_to({2, 37, 3}).value();
    const Tensor rhs_copy = tensor_of(dtype, {2, 37, 3}, values_of(rhs));
    const std::vector<std::pair<std::shared_ptr<const LinalgOp>, int>> ops = {{LinalgOp::slogdet(), 1},
                                                                              {LinalgOp::qr(), 1},
                                                                              {LinalgOp::svd(SvdMode::kFull), 1},
                                                                              {LinalgOp::inv(), 1},
                                                                              {LinalgOp::solve(), 2}};
    for (const auto& [op, operands] : ops) {
      const std::vector<Tensor> strided = operands == 1 ? std::vector<Tensor>{view} : std::vector<Tensor>{view, rhs};
      const std::vector<Tensor> dense = operands == 1 ? std::vector<Tensor>{copy} : std::vector<Tensor>{copy, rhs_copy};
      Result<runtime::TensorList> got = rt.on().call(op, std::span<const Tensor>(strided));
      Result<runtime::TensorList> want = rt.on().call(op, std::span<const Tensor>(dense));
      ASSERT_TRUE(got.ok() && want.ok()) << op->describe() << ": " << got.status().to_string();
      ASSERT_EQ(got->size(), want->size());
      for (std::size_t r = 0; r < got->size(); ++r)
        EXPECT_EQ(values_of((*got)[r]), values_of((*want)[r]))
            << op->describe() << " result " << r << " " << to_string(dtype);
    }
  }
}

// Note [Elementwise norms]: vector norms and the Frobenius norm read the
// operand in place (no scratch copy; vectors across the batch no workspace
// at all), strided and transposed views included, agree with a long double reference for every order and dtype,
// propagate NaN and Inf, and rescale when the squares overflow or underflow
// (numpy answers Inf and 0 there).
TEST(CpuLinalgEngineTest, ElementwiseNormsReadOperandsInPlaceAndSurviveExtremeScales) {
  auto engine = CpuLinalgEngine::create_default().value();
  runtime::Runtime rt = make_runtime(engine);
  struct Order {
    std::shared_ptr<const LinalgOp> op;
    double p;  // 0 count, other finite p a p-norm, +-inf the extreme magnitudes
  };
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<Order> orders = {{*LinalgOp::vector_norm(NormOrder::kTwo), 2},
                                     {*LinalgOp::vector_norm(NormOrder::kP, 1.0), 1},
                                     {*LinalgOp::vector_norm(NormOrder::kP, 3.0), 3},
                                     {*LinalgOp::vector_norm(NormOrder::kP, 0.5), 0.5},
                                     {*LinalgOp::vector_norm(NormOrder::kInf), inf},
                                     {*LinalgOp::vector_norm(NormOrder::kNegInf), -inf},
                                     // Note [Integer and half-integer powers]: products, a square root
                                     // times a product, their reciprocals, and std::pow beyond.
                                     {*LinalgOp::vector_norm(NormOrder::kP, 4.0), 4},
                                     {*LinalgOp::vector_norm(NormOrder::kP, 2.5), 2.5},
                                     {*LinalgOp::vector_norm(NormOrder::kP, -1.0), -1},
                                     {*LinalgOp::vector_norm(NormOrder::kP, -2.5), -2.5},
                                     {*LinalgOp::vector_norm(NormOrder::kP, 9.5), 9.5}};
  const auto reference = [](const std::vector<cd>& v, double p) {
    long double acc = p == -inf ? static_cast<long double>(inf) : 0.0L;
    for (const cd& x : v) {
      const long double m = std::abs(std::complex<long double>(x.real(), x.imag()));
      if (p == inf)
        acc = std::max(acc, m);
      else if (p == -inf)
        acc = std::min(acc, m);
      else
        acc += std::pow(m, static_cast<long double>(p));
    }
    return std::isinf(p) ? static_cast<double>(acc) : static_cast<double>(std::pow(acc, 1.0L / p));
  };
  for (DType dtype : kAllDTypes) {
    const double tol = dtype == DType::kFloat32 || dtype == DType::kComplex64 ? 2e-5 : 1e-13;
    const Tensor base = random_tensor(dtype, {3, 41, 37}, 31);
    // Contiguous, transposed (the vectors along a stride of 37), and every
    // other row and column of a transposed view (no equal spacing at all).
    const std::vector<Tensor> views = {
        base, base.transpose(1, 2).value(),
        base.transpose(1, 2).value().slice(1, 1, 37, 2).value().slice(2, 0, 41, 3).value()};
    for (const Tensor& view : views) {
      const std::vector<cd> all = values_of(view);
      const std::int64_t rows = view.shape()[1], cols = view.shape()[2];
      // The transposed view's vectors lie across the batch (the last batch
      // axis has unit stride): norms_across_batch, which takes no workspace.
      const bool across = view.strides()[1] == 1;
      for (const Order& order : orders) {
        const LinalgEngineStats before = engine->stats();
        Result<runtime::TensorList> got = eager(rt, order.op, {view});
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        const LinalgEngineStats after = engine->stats();
        EXPECT_EQ(after.workspace_allocations + after.workspace_reuses ==
                      before.workspace_allocations + before.workspace_reuses,
                  across)
            << order.op->describe();
        const std::vector<cd> norms = values_of((*got)[0]);
        ASSERT_EQ(norms.size(), static_cast<std::size_t>(3 * rows));
        for (std::int64_t v = 0; v < 3 * rows; ++v) {
          const std::vector<cd> vector(all.begin() + v * cols, all.begin() + (v + 1) * cols);
          const double want = reference(vector, order.p);
          EXPECT_NEAR(norms[v].real(), want, tol * want) << order.op->describe() << " " << to_string(dtype);
        }
      }
      Result<runtime::TensorList> fro = eager(rt, *LinalgOp::matrix_norm(NormOrder::kFrobenius), {view});
      ASSERT_TRUE(fro.ok()) << fro.status().to_string();
      for (std::int64_t b = 0; b < 3; ++b) {
        const std::vector<cd> matrix(all.begin() + b * rows * cols, all.begin() + (b + 1) * rows * cols);
        const double want = reference(matrix, 2);
        EXPECT_NEAR(values_of((*fro)[0])[b].real(), want, tol * want) << "fro " << to_string(dtype);
      }
      // Note [Sum norms]: the largest / smallest absolute column (1, -1)
      // or row (inf, -inf) sum, read in place in either loop order.
      for (const NormOrder order : {NormOrder::kOne, NormOrder::kNegOne, NormOrder::kInf, NormOrder::kNegInf}) {
        Result<runtime::TensorList> got = eager(rt, *LinalgOp::matrix_norm(order), {view});
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        const bool columns = order == NormOrder::kOne || order == NormOrder::kNegOne;
        const bool largest = order == NormOrder::kOne || order == NormOrder::kInf;
        for (std::int64_t b = 0; b < 3; ++b) {
          double want = largest ? 0.0 : inf;
          for (std::int64_t l = 0; l < (columns ? cols : rows); ++l) {
            double sum = 0;
            for (std::int64_t k = 0; k < (columns ? rows : cols); ++k) {
              sum += std::abs(all[static_cast<std::size_t>(b * rows * cols + (columns ? k * cols + l : l * cols + k))]);
            }
            want = largest ? std::max(want, sum) : std::min(want, sum);
          }
          EXPECT_NEAR(values_of((*got)[0])[b].real(), want, tol * want) << to_string(order) << " " << to_string(dtype);
        }
      }
    }
    // No scratch copy: the workspace does not grow with the operand.
    const auto workspace = [&](const std::shared_ptr<const LinalgOp>& op, std::vector<std::int64_t> shape) {
      const IntArrayRef shapes[] = {IntArrayRef(shape)};
      return engine->select(*op, dtype, shapes, 1)->workspace_bytes_per_worker;
    };
    EXPECT_EQ(workspace(*LinalgOp::vector_norm(), {41}), workspace(*LinalgOp::vector_norm(), {1 << 20}));
    EXPECT_EQ(workspace(*LinalgOp::matrix_norm(), {41, 37}), workspace(*LinalgOp::matrix_norm(), {1024, 1024}));
    EXPECT_LT(workspace(*LinalgOp::matrix_norm(NormOrder::kOne), {1024, 1024}), std::size_t{1024 * 64});
  }
  // Extreme scales: squares overflowing (above 1e154 in float64, 1e19 in
  // float32) or underflowing (below 1e-154 / 1e-19) are rescaled.
  for (DType dtype : kAllDTypes) {
    const bool single = dtype == DType::kFloat32 || dtype == DType::kComplex64;
    const bool complex = dtype == DType::kComplex64 || dtype == DType::kComplex128;
    for (const double scale : {single ? 1e30 : 1e200, single ? 1e-30 : 1e-200, 1.0}) {
      // 40 elements 3s, 4s, 0, 0, ...: norm 5s (a complex 3s + 4si alone).
      std::vector<cd> v(40, cd(0));
      if (complex) {
        v[17] = cd(3 * scale, 4 * scale);
      } else {
        v[0] = 3 * scale;
        v[33] = 4 * scale;
      }
      // A vector, a 40 x 1 matrix's Frobenius norm, and the two columns of
      // a 40 x 2 matrix (norms across the batch).
      std::vector<cd> twice;
      for (const cd& x : v) twice.insert(twice.end(), {x, x});
      const std::vector<std::pair<std::shared_ptr<const LinalgOp>, Tensor>> cases = {
          {*LinalgOp::vector_norm(), tensor_of(dtype, {40}, v)},
          {*LinalgOp::matrix_norm(), tensor_of(dtype, {40, 1}, v)},
          {*LinalgOp::vector_norm(), tensor_of(dtype, {40, 2}, twice).transpose(0, 1).value()}};
      for (const auto& [op, t] : cases) {
        Result<runtime::TensorList> got = eager(rt, op, {t});
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        for (const cd& norm : values_of((*got)[0]))
          EXPECT_NEAR(norm.real(), 5 * scale, (single ? 1e-6 : 1e-15) * 5 * scale)
              << op->describe() << " " << to_string(dtype) << " scale " << scale;
      }
      // Note [Scaled p-norms]: |x|^p leaves the range long before the norm
      // does (9.5 and -2.5 at these scales); four elements of magnitude s
      // have the p-norm s * 4^(1/p), in a vector and across the batch.
      const std::vector<cd> four(4, complex ? cd(0.6 * scale, 0.8 * scale) : cd(scale));
      std::vector<cd> four_twice;
      for (const cd& x : four) four_twice.insert(four_twice.end(), {x, x});
      for (const double p : {3.0, 0.5, -1.0, -2.5, 9.5}) {
        const double want = scale * std::pow(4.0, 1.0 / p);
        for (const Tensor& t :
             {tensor_of(dtype, {4}, four), tensor_of(dtype, {4, 2}, four_twice).transpose(0, 1).value()}) {
          Result<runtime::TensorList> got = eager(rt, *LinalgOp::vector_norm(NormOrder::kP, p), {t});
          ASSERT_TRUE(got.ok()) << got.status().to_string();
          for (const cd& norm : values_of((*got)[0]))
            EXPECT_NEAR(norm.real(), want, (single ? 1e-5 : 1e-14) * want)
                << "p = " << p << " " << to_string(dtype) << " scale " << scale;
        }
      }
      // Note [Complex magnitudes]: the orders that fold |z| (1, +-inf) and the
      // matrix 1- and inf-norms, over contiguous runs at these scales too:
      // forty elements of magnitude s (0.6s + 0.8si), and one of them far
      // below the rest (under the squares' range in the element's precision),
      // which is the smallest magnitude.
      if (complex) {
        for (const bool with_tiny : {false, true}) {
          const double tiny = scale < 1 ? scale * 1e-5 : single ? 1e-25 : 1e-160;
          std::vector<cd> all(40, cd(0.6 * scale, 0.8 * scale));
          if (with_tiny) all[29] = cd(0, tiny);
          const double sum = with_tiny ? 39 * scale + tiny : 40 * scale, smallest = with_tiny ? tiny : scale;
          const double rel = single ? 1e-6 : 1e-14;
          for (const auto& [order, want] : {std::pair{NormOrder::kInf, scale}, {NormOrder::kNegInf, smallest}}) {
            const double got =
                values_of((*eager(rt, *LinalgOp::vector_norm(order), {tensor_of(dtype, {40}, all)}))[0])[0].real();
            EXPECT_NEAR(got, want, rel * want) << to_string(order) << " " << to_string(dtype) << " scale " << scale;
          }
          const double got =
              values_of((*eager(rt, *LinalgOp::vector_norm(NormOrder::kP, 1.0), {tensor_of(dtype, {40}, all)}))[0])[0]
                  .real();
          EXPECT_NEAR(got, sum, rel * sum) << to_string(dtype) << " scale " << scale;
          // As a 5 x 8 matrix: column sums of 5 (1-norm), row sums of 8 (inf-norm).
          const Tensor m = tensor_of(dtype, {5, 8}, all);
          const double one = values_of((*eager(rt, *LinalgOp::matrix_norm(NormOrder::kOne), {m}))[0])[0].real();
          const double row = values_of((*eager(rt, *LinalgOp::matrix_norm(NormOrder::kInf), {m}))[0])[0].real();
          EXPECT_NEAR(one, 5 * scale, rel * 5 * scale) << to_string(dtype) << " scale " << scale;
          EXPECT_NEAR(row, 8 * scale, rel * 8 * scale) << to_string(dtype) << " scale " << scale;
          const double neg = values_of((*eager(rt, *LinalgOp::matrix_norm(NormOrder::kNegInf), {m}))[0])[0].real();
          const double want_neg = with_tiny ? 7 * scale + tiny : 8 * scale;
          EXPECT_NEAR(neg, want_neg, rel * want_neg) << to_string(dtype) << " scale " << scale;
        }
      }
    }
    if (complex) {
      // A line of tiny magnitudes next to ordinary ones is the smallest sum
      // (each line's plain check sees only its own largest element), in
      // both memory orders; and |inf + NaN i| is inf, as hypot's.
      const double tiny = dtype == DType::kComplex64 ? 1e-25 : 1e-200;
      const Tensor rows = tensor_of(dtype, {2, 2}, {cd(1), cd(tiny), cd(1), cd(tiny)});
      for (const auto& [order, m] :
           {std::pair{NormOrder::kNegOne, rows}, {NormOrder::kNegInf, rows.transpose(0, 1).value()}}) {
        const double got = values_of((*eager(rt, *LinalgOp::matrix_norm(order), {m}))[0])[0].real();
        EXPECT_NEAR(got, 2 * tiny, 1e-6 * 2 * tiny) << to_string(order) << " " << to_string(dtype);
      }
      const cd inf_nan(inf, std::numeric_limits<double>::quiet_NaN());
      const Tensor v = tensor_of(dtype, {3}, {inf_nan, cd(1, 1), cd(3, 4)});
      for (const auto& op : {*LinalgOp::vector_norm(NormOrder::kP, 1.0), *LinalgOp::vector_norm(NormOrder::kInf),
                             *LinalgOp::vector_norm(NormOrder::kP, 0.5)}) {
        EXPECT_EQ(values_of((*eager(rt, op, {v}))[0])[0].real(), inf) << op->describe() << " " << to_string(dtype);
      }
      EXPECT_NEAR(values_of((*eager(rt, *LinalgOp::vector_norm(NormOrder::kNegInf), {v}))[0])[0].real(), std::sqrt(2.0),
                  1e-6);
    }
    // With p < 0 a zero element makes the norm 0, with p > 0 an infinite one inf.
    std::vector<cd> tiny_and_zero(6, cd(1e-300));
    tiny_and_zero[4] = cd(0);
    EXPECT_EQ(values_of((*eager(rt, *LinalgOp::vector_norm(NormOrder::kP, -2.0),
                                {tensor_of(dtype, {6}, tiny_and_zero)}))[0])[0]
                  .real(),
              0.0);
    std::vector<cd> special(20, cd(1));
    special[3] = cd(inf);
    EXPECT_EQ(values_of((*eager(rt, *LinalgOp::vector_norm(), {tensor_of(dtype, {20}, special)}))[0])[0].real(), inf);
    special[9] = cd(std::numeric_limits<double>::quiet_NaN());
    for (const Order& order : orders) {
      const double got = values_of((*eager(rt, order.op, {tensor_of(dtype, {20}, special)}))[0])[0].real();
      EXPECT_TRUE(std::isnan(got)) << order.op->describe() << " " << to_string(dtype) << ": " << got;
    }
    EXPECT_EQ(values_of((*eager(rt, *LinalgOp::vector_norm(), {Tensor::zeros({20}, dtype).value()}))[0])[0].real(),
              0.0);
    // A NaN anywhere makes every sum norm NaN, as numpy's max / min of the
    // sums (the column-major sums had dropped it: max(3, NaN) is 3).
    for (const NormOrder order : {NormOrder::kOne, NormOrder::kNegOne, NormOrder::kInf, NormOrder::kNegInf}) {
      for (const Tensor& m :
           {tensor_of(dtype, {4, 5}, special), tensor_of(dtype, {4, 5}, special).transpose(0, 1).value()}) {
        const double got = values_of((*eager(rt, *LinalgOp::matrix_norm(order), {m}))[0])[0].real();
        EXPECT_TRUE(std::isnan(got)) << to_string(order) << " " << to_string(dtype) << ": " << got;
      }
    }
  }
}

// A batch of one long vector (>= kSplitNormMinBytes) is split over the
// context's threads: the same norms as one thread, every order the split
// takes, NaN and rescaling included; proven by the engine's counter.
TEST(CpuLinalgEngineTest, OneLongVectorsNormIsSplitOverTheThreads) {
  auto split_engine = CpuLinalgEngine::create_default({}, std::make_shared<cpu::ArenaParallelContext>(2)).value();
  auto one_engine = CpuLinalgEngine::create_default().value();
  runtime::Runtime split_rt = make_runtime(split_engine), one_rt = make_runtime(one_engine);
  const std::int64_t n = (internal::kSplitNormMinBytes / 8) + 12345;
  for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
    std::vector<cd> v = values_of(random_tensor(dtype, {n}, 51));
    const std::vector<std::shared_ptr<const LinalgOp>> ops = {
        *LinalgOp::vector_norm(), *LinalgOp::vector_norm(NormOrder::kP, 1.0), *LinalgOp::vector_norm(NormOrder::kInf),
        *LinalgOp::vector_norm(NormOrder::kNegInf)};
    for (int variant = 0; variant < 3; ++variant) {
      if (variant == 1) v[n / 3] = cd(1e200);                                     // squares overflow: rescaled
      if (variant == 2) v[n - 7] = cd(std::numeric_limits<double>::quiet_NaN());  // NaN in the last chunk
      const Tensor x = tensor_of(dtype, {n}, v);
      for (const auto& op : ops) {
        const std::uint64_t before = split_engine->stats().split_norms;
        const double got = values_of((*eager(split_rt, op, {x}))[0])[0].real();
        const double want = values_of((*eager(one_rt, op, {x}))[0])[0].real();
        EXPECT_EQ(split_engine->stats().split_norms, before + 1) << op->describe();
        if (variant == 2) {
          EXPECT_TRUE(std::isnan(got)) << op->describe();
        } else {
          EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << op->describe() << " variant " << variant;
        }
      }
    }
  }
  EXPECT_EQ(one_engine->stats().split_norms, 0u);  // a one-thread context never splits
}

// Note [Eig scaling]: a matrix scaled far from 1 has the eigenvalues of
// the unscaled one times the scale and eigenvectors that satisfy A v = λ v
// (Eigen's solvers gave NaN vectors or no convergence there), on whichever
// provider the default table picks for this size.
TEST(CpuLinalgEngineTest, EigOfExtremelyScaledMatricesIsScaledBack) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  for (DType dtype : kAllDTypes) {
    const bool single = dtype == DType::kFloat32 || dtype == DType::kComplex64;
    const Tensor a = random_tensor(dtype, {4, 4}, 68);
    const std::vector<cd> base = values_of((*eager(rt, LinalgOp::eig(), {a}))[0]);
    // The last scale is subnormal: 2^-exponent alone would overflow.
    for (const double scale : {single ? 1e30 : 1e300, single ? 1e-30 : 1e-300, single ? 1e-40 : 1e-310}) {
      std::vector<cd> scaled = values_of(a);
      for (cd& x : scaled) x *= scale;
      Result<runtime::TensorList> got = eager(rt, LinalgOp::eig(), {tensor_of(dtype, {4, 4}, scaled)});
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      const std::vector<cd> w = values_of((*got)[0]), v = values_of((*got)[1]);
      // Eigenvalues equal the unscaled ones times the scale, as multisets.
      for (const cd& x : base) {
        double nearest = std::numeric_limits<double>::infinity();
        for (const cd& y : w) nearest = std::min(nearest, std::abs(y / scale - x));
        EXPECT_LT(nearest, (single ? 1e-4 : 1e-12) * (1 + std::abs(x))) << to_string(dtype) << " scale " << scale;
      }
      // A v_j = w_j v_j on the unscaled matrix (v is row-major 4 x 4).
      const std::vector<cd> entries = values_of(a);
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
          cd av = 0;
          for (int l = 0; l < 4; ++l) av += entries[i * 4 + l] * v[l * 4 + j];
          EXPECT_LT(std::abs(av - w[j] / scale * v[i * 4 + j]), single ? 1e-4 : 1e-12)
              << to_string(dtype) << " scale " << scale << " column " << j;
        }
      }
    }
  }
}

// Note [Spectral norm from the Gram matrix]: matrix_norm(2) asks for the
// largest singular value alone. Through the engine it matches σ_max of the
// SVD for every dtype and shape and survives extreme scales; called
// directly, the LAPACK provider writes only values[0] for float64 and
// complex128 (the Gram path) and every value for float32 and complex64.
TEST(CpuLinalgEngineTest, SpectralNormReadsOnlyTheLargestSingularValue) {
  runtime::Runtime rt = make_runtime(CpuLinalgEngine::create_default().value());
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : {Dims{2, 7, 5}, Dims{2, 5, 7}, Dims{3, 6, 6}}) {
      const Tensor a = random_tensor(dtype, shape, 31);
      Result<runtime::TensorList> norm = eager(rt, *LinalgOp::matrix_norm(NormOrder::kTwo), {a});
      Result<runtime::TensorList> svd = eager(rt, LinalgOp::svd(SvdMode::kValuesOnly), {a});
      ASSERT_TRUE(norm.ok() && svd.ok()) << norm.status().to_string();
      const std::vector<cd> got = values_of((*norm)[0]), values = values_of((*svd)[0]);
      const std::int64_t k = std::min(shape[1], shape[2]);
      for (std::int64_t b = 0; b < shape[0]; ++b) {
        EXPECT_NEAR(got[b].real(), values[b * k].real(), tolerance(dtype, k) * values[b * k].real())
            << to_string(dtype) << " " << shape_to_string(shape);
      }
    }
  }
  const Tensor a = random_tensor(DType::kFloat64, {6, 4}, 32);
  const double reference = values_of((*eager(rt, *LinalgOp::matrix_norm(NormOrder::kTwo), {a}))[0])[0].real();
  for (double scale : {1e300, 1e-300, 0.0}) {
    std::vector<cd> v = values_of(a);
    for (cd& x : v) x *= scale;
    Result<runtime::TensorList> norm =
        eager(rt, *LinalgOp::matrix_norm(NormOrder::kTwo), {tensor_of(DType::kFloat64, {6, 4}, v)});
    ASSERT_TRUE(norm.ok()) << norm.status().to_string();
    EXPECT_NEAR(values_of((*norm)[0])[0].real(), reference * scale, 1e-13 * reference * scale) << scale;
  }

  auto lapack = LapackLinalgProvider::load();
  ASSERT_TRUE(lapack.ok()) << lapack.status().to_string();
  LinalgAttributes values_only;
  values_only.kind = LinalgOpKind::kSvd;
  values_only.svd_mode = SvdMode::kValuesOnly;
  for (DType dtype : kAllDTypes) {
    for (bool largest_only : {false, true}) {
      const LinalgProblem problem{&values_only, dtype, 6, 4, 0, largest_only};
      Result<LinalgKernelPlan> plan = (*lapack)->plan(problem);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      const std::size_t item = dtype_size(dtype);
      std::vector<cd> entries = values_of(random_tensor(dtype, {4, 6}, 33));  // column-major 6 x 4
      const Tensor a = tensor_of(dtype, {4, 6}, entries);
      std::vector<std::byte> matrix(24 * item);
      std::memcpy(matrix.data(), a.data(), matrix.size());
      std::vector<double> values(4, -1.0);
      std::vector<float> values32(4, -1.0f);
      const bool single = dtype == DType::kFloat32 || dtype == DType::kComplex64;
      LinalgBuffers buffers;
      buffers.a = MatrixBuffer{matrix.data(), 6, 4, 6};
      buffers.values = single ? static_cast<void*>(values32.data()) : static_cast<void*>(values.data());
      auto* workspace = static_cast<std::byte*>(::operator new(plan->workspace_bytes + 64, std::align_val_t(64)));
      const Status run =
          (*lapack)->run(problem, *plan, buffers, std::span<std::byte>(workspace, plan->workspace_bytes));
      ::operator delete(workspace, std::align_val_t(64));
      ASSERT_TRUE(run.ok()) << run.to_string();
      for (int i = 0; i < 4; ++i) {
        const double v = single ? values32[i] : values[i];
        const bool written = i == 0 || !largest_only || single;
        EXPECT_EQ(v != -1.0, written) << to_string(dtype) << " largest_only " << largest_only << " value " << i;
      }
    }
  }
}

// Note [Shared linalg ops]: the factories hand out one op per attribute
// set, so an eager loop over one context prepares once and then takes the
// context's memo (Note [Extension call memo]); the provider plans once.
TEST(CpuLinalgEngineTest, RepeatedEagerCallsPrepareOnce) {
  EXPECT_EQ(LinalgOp::det().get(), LinalgOp::det().get());
  EXPECT_EQ(LinalgOp::svd(SvdMode::kThin).get(), LinalgOp::svd(SvdMode::kThin).get());
  EXPECT_NE(LinalgOp::svd(SvdMode::kThin).get(), LinalgOp::svd(SvdMode::kFull).get());
  EXPECT_EQ(LinalgOp::svd(SvdMode::kFull)->attributes().svd_mode, SvdMode::kFull);
  EXPECT_EQ(LinalgOp::triangular_solve(false, true, TriangularTranspose::kAdjoint)->attributes().transpose,
            TriangularTranspose::kAdjoint);
  EXPECT_FALSE(LinalgOp::triangular_solve(false, true, TriangularTranspose::kAdjoint)->attributes().lower);
  EXPECT_EQ((*LinalgOp::vector_norm(NormOrder::kInf)).get(), (*LinalgOp::vector_norm(NormOrder::kInf)).get());
  EXPECT_FALSE(LinalgOp::vector_norm(NormOrder::kNuclear).ok());
  EXPECT_FALSE(LinalgOp::matrix_norm(NormOrder::kP).ok());

  const std::shared_ptr<RecordingProvider> recording = recording_lapack();
  ASSERT_NE(recording, nullptr);
  runtime::Runtime rt = runtime_over(recording);
  runtime::EagerContext ctx = rt.on();
  const Tensor a = well_conditioned(DType::kFloat64, {4, 4}, 41);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(linalg::det(ctx, a).ok());
  EXPECT_EQ(recording->calls.load(), 5);
  EXPECT_EQ(recording->plans.load(), 1) << "the second and later calls must take the memo";
}

TEST(CpuLinalgEngineTest, ValuesOnlyRequestsNeverComputeVectors) {
  auto lapack = LapackLinalgProvider::load();
  ASSERT_TRUE(lapack.ok()) << lapack.status().to_string();
  auto recording = std::make_shared<RecordingProvider>(*lapack);
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(recording)));
  runtime::Runtime rt = make_runtime(engine);
  const Tensor a = random_tensor(DType::kFloat32, {5, 4}, 13);
  ASSERT_TRUE(eager(rt, LinalgOp::svd(SvdMode::kValuesOnly), {a}).ok());
  ASSERT_TRUE(eager(rt, *LinalgOp::matrix_norm(NormOrder::kNuclear), {a}).ok());
  ASSERT_TRUE(eager(rt, LinalgOp::eigh(false), {*a.slice(0, 0, 4)}).ok());
  ASSERT_EQ(recording->seen.size(), 3u);
  EXPECT_EQ(recording->seen[0].svd_mode, SvdMode::kValuesOnly);
  EXPECT_EQ(recording->seen[1].kind, LinalgOpKind::kSvd);
  EXPECT_EQ(recording->seen[1].svd_mode, SvdMode::kValuesOnly);
  EXPECT_FALSE(recording->seen[2].compute_vectors);
}

// lstsq with singular_values returns the values gelsd computed: one
// provider call per matrix (no second SVD), the same solution as without,
// and values equal to a values-only SVD's, empty matrices included.
TEST(CpuLinalgEngineTest, LstsqReturnsTheSolversSingularValuesFromOneFactorisation) {
  const std::shared_ptr<RecordingProvider> recording = recording_lapack();
  ASSERT_NE(recording, nullptr);
  runtime::Runtime rt = runtime_over(recording);
  runtime::EagerContext ctx = rt.on();
  for (DType dtype : {DType::kFloat64, DType::kComplex64}) {
    for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{6, 4}, {3, 5}, {4, 0}}) {
      SCOPED_TRACE(fmt::format("{} {}x{}", dtype, m, n));
      const Tensor a = random_tensor(dtype, {2, m, n}, 51);
      const Tensor b = random_tensor(dtype, {2, m, 3}, 52);
      const int calls = recording->calls.load();
      Result<LstsqResult> both = lstsq_with_singular_values(ctx, a, b);
      ASSERT_TRUE(both.ok()) << both.status().to_string();
      EXPECT_EQ(recording->calls.load() - calls, n == 0 ? 0 : 2) << "one gelsd per matrix";
      EXPECT_EQ(both->s.dtype(), real_dtype(dtype));
      EXPECT_EQ(Dims(both->s.shape().begin(), both->s.shape().end()), (Dims{2, std::min(m, n)}));
      Result<Tensor> x = lstsq(ctx, a, b);
      ASSERT_TRUE(x.ok()) << x.status().to_string();
      EXPECT_EQ(values_of(both->x), values_of(*x));
      Result<SvdResult> svd = linalg::svd(ctx, a, SvdMode::kValuesOnly);
      ASSERT_TRUE(svd.ok()) << svd.status().to_string();
      const std::vector<cd> s = values_of(both->s), expected = values_of(svd->s);
      ASSERT_EQ(s.size(), expected.size());
      for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i].real(), expected[i].real(), 1e-5) << i;
      // numpy's rank and residuals: the squared norms of b - a x per column
      // when a has full column rank and m > n, none otherwise.
      EXPECT_EQ(*both->rank.to_vector<std::int64_t>(), (std::vector<std::int64_t>(2, std::min(m, n))));
      EXPECT_EQ(both->residuals.dtype(), real_dtype(dtype));
      if (m > n) {  // n = 0 too: rank 0 = n, residuals |b|^2 (numpy)
        ASSERT_EQ(Dims(both->residuals.shape().begin(), both->residuals.shape().end()), (Dims{2, 3}));
        for (std::int64_t i = 0; i < 2; ++i) {
          const RefMatrix r = matrix_of(b, i) - matrix_of(a, i) * matrix_of(both->x, i);
          for (std::int64_t j = 0; j < 3; ++j) {
            double squares = 0;
            for (std::int64_t row = 0; row < m; ++row) squares += std::norm(r(row, j));
            EXPECT_NEAR(values_of(both->residuals)[static_cast<std::size_t>(i * 3 + j)].real(), squares,
                        1e-4 * squares);
          }
        }
      } else {
        EXPECT_EQ(Dims(both->residuals.shape().begin(), both->residuals.shape().end()), (Dims{2, 0}));
      }
    }
  }
  // A rank-deficient a (two equal columns) has rank 3 and no residuals; a
  // vector b has one residual.
  std::vector<cd> deficient = random_values(DType::kFloat64, 24, 53);
  for (std::size_t row = 0; row < 6; ++row) deficient[row * 4 + 3] = deficient[row * 4];
  Result<LstsqResult> low = lstsq_with_singular_values(ctx, tensor_of(DType::kFloat64, {6, 4}, deficient),
                                                       random_tensor(DType::kFloat64, {6}, 54));
  ASSERT_TRUE(low.ok()) << low.status().to_string();
  EXPECT_EQ(*low->rank.to_vector<std::int64_t>(), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(Dims(low->residuals.shape().begin(), low->residuals.shape().end()), (Dims{0}));
  Result<LstsqResult> vector = lstsq_with_singular_values(ctx, random_tensor(DType::kFloat64, {6, 4}, 55),
                                                          random_tensor(DType::kFloat64, {6}, 56));
  ASSERT_TRUE(vector.ok()) << vector.status().to_string();
  EXPECT_EQ(Dims(vector->x.shape().begin(), vector->x.shape().end()), (Dims{4}));
  EXPECT_EQ(Dims(vector->residuals.shape().begin(), vector->residuals.shape().end()), (Dims{1}));
  EXPECT_EQ(LinalgOp::lstsq(-1, true)->describe(), "linalg.lstsq(rcond=default, singular_values)");
  EXPECT_FALSE(LinalgOp::lstsq(-1, true)->payload_equal(*LinalgOp::lstsq()));
  EXPECT_NE(LinalgOp::lstsq(-1, true)->payload_hash(), LinalgOp::lstsq()->payload_hash());
  LinalgAttributes noisy = LinalgOp::det()->attributes();
  noisy.singular_values = true;  // not an option of det: canonicalised away
  EXPECT_TRUE((*LinalgOp::create(noisy))->payload_equal(*LinalgOp::det()));
}

// The packaged provider table (Note [Provider table file]).
ProviderTable packaged_table() { return read_provider_table(default_provider_table_path()).value(); }

TEST(CpuLinalgEngineTest, DefaultTableOrdersTheCandidatesAndPassesOverOnlyUnsupported) {
  auto lapack = LapackLinalgProvider::load();
  ASSERT_TRUE(lapack.ok()) << lapack.status().to_string();
  auto refusing = std::make_shared<RecordingProvider>(*lapack, "refusing-lapack");
  refusing->refuse_dtype = DType::kFloat32;
  auto eigen = std::make_shared<RecordingProvider>(std::make_shared<EigenLinalgProvider>(), "eigen-recording");
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::measured(packaged_table(), refusing, eigen));
  for (const DefaultProviderRow& row : engine->policy().table().rows) {
    for (std::size_t k = 0; k < kNumSizeClasses; ++k) {
      const LinalgProviderPolicy::Choice c = engine->policy().choose(row.slot, kDefaultTableSizes[k]);
      ASSERT_EQ(c.candidates.size(), 2u);
      EXPECT_EQ(c.candidates[0] == refusing.get() ? "lapack" : "eigen", row.pick(k)) << to_string(row.slot);
      EXPECT_EQ(c.candidates[1], c.candidates[0] == refusing.get()
                                     ? static_cast<const CpuLinalgProvider*>(eigen.get())
                                     : static_cast<const CpuLinalgProvider*>(refusing.get()));
      EXPECT_NE(std::string(c.reason).find("default table"), std::string::npos);
    }
  }
  const auto op = LinalgOp::qr();
  const std::vector<std::int64_t> dims = {4, 300, 300};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(dims)};
  Result<LinalgSelection> f64 = engine->select(*op, DType::kFloat64, shapes, 2);
  ASSERT_TRUE(f64.ok());
  Result<LinalgSelection> f32 = engine->select(*op, DType::kFloat32, shapes, 2);
  ASSERT_TRUE(f32.ok());
  if (f64->provider == "refusing-lapack") {
    EXPECT_EQ(f32->provider, "eigen-recording");
    EXPECT_NE(f32->reason.find("candidate refusing-lapack refused"), std::string::npos) << f32->reason;
    EXPECT_NE(engine->explain(*op, DType::kFloat32, shapes, 2).find("candidate refusing-lapack refused"),
              std::string::npos);
  } else {
    EXPECT_EQ(f64->provider, "eigen-recording");
    EXPECT_EQ(f32->provider, "eigen-recording");
    EXPECT_EQ(f32->reason.find("refused"), std::string::npos) << f32->reason;
  }
  const std::string text = engine->explain(*op, DType::kFloat64, shapes, 2);
  EXPECT_NE(text.find("default table"), std::string::npos) << text;
  EXPECT_NE(text.find("mode outer"), std::string::npos) << text;
}

TEST(CpuLinalgEngineTest, EveryCandidateRefusingIsUnsupportedListingEachRefusal) {
  auto first = std::make_shared<RecordingProvider>(std::make_shared<EigenLinalgProvider>(), "first");
  auto second = std::make_shared<RecordingProvider>(std::make_shared<EigenLinalgProvider>(), "second");
  first->refuse_dtype = DType::kFloat32;
  second->refuse_dtype = DType::kFloat32;
  // `first` is the lapack column of the table and measured faster everywhere.
  ProviderTable table = packaged_table();
  for (DefaultProviderRow& row : table.rows) {
    row.lapack_us.fill(1);
    row.eigen_us.fill(2);
  }
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::measured(table, first, second));
  const auto op = LinalgOp::qr();
  const std::vector<std::int64_t> dims = {8, 8};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(dims)};
  Result<LinalgSelection> f64 = engine->select(*op, DType::kFloat64, shapes, 1);
  ASSERT_TRUE(f64.ok()) << f64.status().to_string();
  EXPECT_EQ(f64->provider, "first");
  Result<LinalgSelection> f32 = engine->select(*op, DType::kFloat32, shapes, 1);
  ASSERT_FALSE(f32.ok());
  EXPECT_EQ(f32.status().code(), ErrorCode::kUnsupported);
  const std::string message(f32.status().message());
  const std::size_t a = message.find("candidate first refused"), b = message.find("candidate second refused");
  EXPECT_NE(a, std::string::npos) << message;
  EXPECT_NE(b, std::string::npos) << message;
  EXPECT_LT(a, b) << message;
}

// One operation per provider slot, on n x n operands (plus an n x 2 right-hand side).
struct SlotCase {
  LinalgSlot slot;
  std::shared_ptr<const LinalgOp> op;
  bool rhs;
};

std::vector<SlotCase> slot_cases() {
  return {{LinalgSlot::kSvd, LinalgOp::svd(), false},
          {LinalgSlot::kQr, LinalgOp::qr(), false},
          {LinalgSlot::kEigh, LinalgOp::eigh(), false},
          {LinalgSlot::kEig, LinalgOp::eig(), false},
          {LinalgSlot::kCholesky, LinalgOp::cholesky(), false},
          {LinalgSlot::kLu, LinalgOp::lu(), false},
          {LinalgSlot::kSolve, LinalgOp::solve(), true},
          {LinalgSlot::kTriangularSolve, LinalgOp::triangular_solve(true), true},
          {LinalgSlot::kInverse, LinalgOp::inv(), false},
          {LinalgSlot::kLstsq, LinalgOp::lstsq(), true},
          {LinalgSlot::kPinv, LinalgOp::pinv(), false}};
}

TEST(CpuLinalgEngineTest, SizeClassesSplitAtTheLogMidpointsOfTheMeasuredSizes) {
  EXPECT_EQ(default_size_class(0), 0u);
  EXPECT_EQ(default_size_class(31), 0u);
  EXPECT_EQ(default_size_class(32), 1u);
  EXPECT_EQ(default_size_class(127), 1u);
  EXPECT_EQ(default_size_class(128), 2u);
  EXPECT_EQ(default_size_class(511), 2u);
  EXPECT_EQ(default_size_class(512), 3u);
  EXPECT_EQ(default_size_class(std::int64_t{1} << 40), 3u);
  for (std::size_t k = 0; k < kNumSizeClasses; ++k) EXPECT_EQ(default_size_class(kDefaultTableSizes[k]), k);
  EXPECT_FALSE(packaged_table().source.empty());
}

TEST(CpuLinalgEngineTest, DefaultEngineSelectsWhatTheMeasuredTableSays) {
  // Through the engine's prepare-time selection (the plan explain() shows),
  // for every slot at every measured size and at the first and last size of
  // each class: the provider is the row's pick, and explain() quotes the row.
  auto lapack = LapackLinalgProvider::load();
  ASSERT_TRUE(lapack.ok()) << lapack.status().to_string();
  auto eigen = std::make_shared<EigenLinalgProvider>();
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::measured(packaged_table(), *lapack, eigen));
  for (const SlotCase& c : slot_cases()) {
    const DefaultProviderRow& row = engine->policy().table().rows[static_cast<std::size_t>(c.slot)];
    ASSERT_EQ(row.slot, c.slot);
    for (std::int64_t n : {std::int64_t{2}, std::int64_t{16}, std::int64_t{31}, std::int64_t{32}, std::int64_t{64},
                           std::int64_t{127}, std::int64_t{128}, std::int64_t{256}, std::int64_t{511},
                           std::int64_t{512}, std::int64_t{1024}, std::int64_t{2048}}) {
      const std::vector<std::int64_t> a = {n, n}, b = {n, 2};
      std::vector<IntArrayRef> shapes = {IntArrayRef(a)};
      if (c.rhs) shapes.emplace_back(b);
      Result<LinalgSelection> s = engine->select(*c.op, DType::kFloat64, shapes, 1);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      const std::string_view want = row.pick(default_size_class(n));
      EXPECT_EQ(s->provider, want == "lapack" ? (*lapack)->name() : eigen->name())
          << to_string(c.slot) << " n=" << n << ": " << s->reason;
      const std::string text = engine->explain(*c.op, DType::kFloat64, shapes, 1);
      EXPECT_NE(text.find(fmt::format("measured at n={}", kDefaultTableSizes[default_size_class(n)])),
                std::string::npos)
          << text;
      EXPECT_NE(text.find(fmt::format("-> {}", want)), std::string::npos) << text;
    }
  }
}

TEST(CpuLinalgEngineTest, WorkspaceIsReusedAcrossEagerCalls) {
  auto engine = eigen_engine();
  runtime::Runtime rt = make_runtime(engine);
  const Tensor a = random_tensor(DType::kFloat64, {6, 6}, 14);
  ASSERT_TRUE(eager(rt, LinalgOp::inv(), {a}).ok());
  const LinalgEngineStats first = engine->stats();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(eager(rt, LinalgOp::inv(), {a}).ok());
  const LinalgEngineStats later = engine->stats();
  EXPECT_EQ(later.workspace_allocations, first.workspace_allocations);
  EXPECT_EQ(later.workspace_reuses, first.workspace_reuses + 5);
}

// Note [OpenBLAS kernels for new CPUs]: the provider's own OpenBLAS runs
// kernels as wide as tenferro's own kernels run here, whatever that OpenBLAS
// knows of this CPU, and the process's other OpenBLAS keeps its own choice.
TEST(LapackProviderTest, OwnOpenBlasRunsKernelsOfTheWidthTheCpuRuns) {
  Result<std::shared_ptr<LapackLinalgProvider>> lapack = LapackLinalgProvider::load();
  ASSERT_TRUE(lapack.ok()) << lapack.status().to_string();
  const LapackIdentity& id = (*lapack)->identity();
  if (!id.own_instance || !LapackLinalgProvider::prefers_own_symbols() || std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    GTEST_SKIP() << "the provider chooses kernels only for its own copy, loaded with RTLD_DEEPBIND, without "
                    "OPENBLAS_CORETYPE";
  }
  Result<cpu::CpuIsa> isa = cpu::resolve_cpu_isa(cpu::CpuIsa::kAuto);
  ASSERT_TRUE(isa.ok()) << isa.status().to_string();
  const std::vector<std::string> avx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  std::vector<std::string> accepted;
  if (*isa == cpu::CpuIsa::kAvx512) accepted = avx512;
  if (*isa == cpu::CpuIsa::kAvx2) {
    accepted = avx512;  // OpenBLAS's own choice is kept when it is wider than a cap
    accepted.insert(accepted.end(), {"Haswell", "Zen"});
  }
  if (!accepted.empty()) {
    EXPECT_NE(std::find(accepted.begin(), accepted.end(), id.openblas_core), accepted.end())
        << id.openblas_core << " (OpenBLAS chose " << id.openblas_own_choice << ") for " << cpu::to_string(*isa);
  }
  EXPECT_NE((*lapack)->capability().detail.find(id.openblas_core + " kernels"), std::string::npos)
      << (*lapack)->capability().detail;
  if (id.openblas_own_choice.empty()) return;
  cpu::OpenBlasOptions options;
  options.build = cpu::OpenBlasBuild::kSerial;
  Result<std::shared_ptr<cpu::ExternalBlasGemmProvider>> system = cpu::ExternalBlasGemmProvider::load_openblas(options);
  if (system.ok()) {
    EXPECT_EQ((*system)->identity().arch, id.openblas_own_choice);
  }
}

TEST(LapackProviderTest, IdentifiesTheLoadedBuildInsteadOfTrustingTheRequest) {
  Result<std::shared_ptr<LapackLinalgProvider>> serial = LapackLinalgProvider::load();
  ASSERT_TRUE(serial.ok()) << serial.status().to_string();
  const LapackIdentity& id = (*serial)->identity();
  // A renamed copy of its own, pinned to one thread (Note [An OpenBLAS of
  // our own]), or the system's serial build in a build without patchelf.
  const bool own_copy = id.own_instance;
  if (own_copy) {
    EXPECT_NE(id.lapack_path.find("libtenferro_lapack"), std::string::npos) << id.lapack_path;
    EXPECT_EQ(id.openblas_threads, 1) << id.openblas_config;
  } else {
    EXPECT_EQ(id.openblas_parallel, 0) << id.openblas_config;
    EXPECT_NE(id.lapack_path.find("openblas-serial"), std::string::npos) << id.lapack_path;
  }
  EXPECT_NE(id.lapacke_path.find("liblapacke"), std::string::npos) << id.lapacke_path;
  EXPECT_EQ((*serial)->capability().thread_count, cpu::ThreadCountControl::kSequential);
  EXPECT_NE(std::string((*serial)->name()).find(own_copy && id.openblas_parallel != 0 ? "1 thread" : "serial"),
            std::string::npos)
      << (*serial)->name();
  // The provider reports what it actually got: with the serial module's own
  // copy the pthread module gets the pthread build; without it the pthread
  // module gets the OpenBLAS already loaded (same soname), the serial one.
  LapackOptions pthread;
  pthread.build = LapackBuild::kOpenBlasPthread;
  Result<std::shared_ptr<LapackLinalgProvider>> other = LapackLinalgProvider::load(pthread);
  if (other.ok()) {
    EXPECT_EQ((*other)->identity().openblas_parallel, own_copy ? 1 : 0);
    EXPECT_EQ((*other)->capability().thread_count,
              own_copy ? cpu::ThreadCountControl::kGlobalOrUncontrolled : cpu::ThreadCountControl::kSequential);
  }
  EXPECT_EQ((*serial)->identity().openblas_threads, 1);  // unchanged: still one thread per call
  EXPECT_EQ((*serial)->capability().thread_count, cpu::ThreadCountControl::kSequential);
  LapackOptions missing;
  missing.module_dir = "/nonexistent";
  EXPECT_EQ(LapackLinalgProvider::load(missing).status().code(), ErrorCode::kUnsupported);
}

TEST(LapackIsolationTest, AnOpenBlasTheProcessAlreadyHoldsDoesNotReplaceItsOwn) {
  // Note [An OpenBLAS of our own]: a fresh process (the threadsafe
  // death-test style re-executes this binary) that loads the pthread
  // OpenBLAS into its global scope first, as a program linked with
  // -lopenblas or numpy does, then loads the LAPACK provider: the provider
  // still reports its own copy, on one thread, and computes.
  if (!LapackLinalgProvider::prefers_own_symbols()) GTEST_SKIP() << "a sanitizer build loads without RTLD_DEEPBIND";
  Result<std::shared_ptr<LapackLinalgProvider>> here = LapackLinalgProvider::load({});
  if (!here.ok()) GTEST_SKIP() << here.status().to_string();
  const std::string& lapacke = (*here)->identity().lapacke_path;  // the multiarch library directory
  const std::string pthread = lapacke.substr(0, lapacke.rfind('/')) + "/openblas-pthread/libopenblas.so.0";
  if (!(*here)->identity().own_instance) {
    GTEST_SKIP() << "built without patchelf: the module links the system's serial OpenBLAS";
  }
  if (::access(pthread.c_str(), R_OK) != 0) GTEST_SKIP() << "no pthread OpenBLAS installed";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (dlopen(pthread.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) std::_Exit(2);
        Result<std::shared_ptr<LapackLinalgProvider>> p = LapackLinalgProvider::load({});
        if (!p.ok()) std::_Exit(3);
        if (!(*p)->identity().own_instance || (*p)->identity().openblas_threads != 1) std::_Exit(4);
        if ((*p)->capability().thread_count != cpu::ThreadCountControl::kSequential) std::_Exit(5);
        // And it computes: det of [[1, 2], [4, 2]] through the engine.
        runtime::Runtime rt = runtime_over(*p);
        Result<Tensor> a = Tensor::from_values<double>(std::vector<double>{1, 2, 4, 2}, {2, 2});
        Result<runtime::TensorList> d = eager(rt, LinalgOp::det(), {*a});
        if (!d.ok() || (*d)[0].to_vector<double>()->front() != -6.0) std::_Exit(6);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CpuLinalgEngineTest, SystemOpenBlasLoadedLaterKeepsItsOwnState) {
  // Note [System BLAS outside the deep scope]: in a fresh process the
  // provider loads first; then the system's pthread OpenBLAS is opened as a
  // gemm="openblas" runtime opens it and set to 2 threads. That sets the
  // system library's count, not the provider's copy: a provider loaded
  // afterwards still reports one thread and stays sequential.
  if (!LapackLinalgProvider::prefers_own_symbols()) GTEST_SKIP() << "a sanitizer build loads without RTLD_DEEPBIND";
  Result<std::shared_ptr<LapackLinalgProvider>> here = LapackLinalgProvider::load({});
  if (!here.ok()) GTEST_SKIP() << here.status().to_string();
  if (!(*here)->identity().own_instance) GTEST_SKIP() << "built without patchelf: no copy of its own";
  const std::string& lapacke = (*here)->identity().lapacke_path;
  const std::string pthread = lapacke.substr(0, lapacke.rfind('/')) + "/openblas-pthread/libopenblas.so.0";
  if (::access(pthread.c_str(), R_OK) != 0) GTEST_SKIP() << "no pthread OpenBLAS installed";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!LapackLinalgProvider::load({}).ok()) std::_Exit(2);  // the module first (the parent's load, re-run)
        void* system = dlopen(pthread.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (system == nullptr) std::_Exit(3);
        auto set = reinterpret_cast<void (*)(int)>(dlsym(system, "openblas_set_num_threads"));
        auto get = reinterpret_cast<int (*)()>(dlsym(system, "openblas_get_num_threads"));
        if (set == nullptr || get == nullptr) std::_Exit(4);
        set(2);
        if (get() != 2) std::_Exit(5);
        Result<std::shared_ptr<LapackLinalgProvider>> later = LapackLinalgProvider::load({});
        if (!later.ok()) std::_Exit(6);
        if ((*later)->identity().openblas_threads != 1) std::_Exit(7);
        if ((*later)->capability().thread_count != cpu::ThreadCountControl::kSequential) std::_Exit(8);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Loads the provider under a limit of 100 MiB of address space left (0:
// refused as Note [Loading under an address-space limit] says), then
// without, then under it again (0: loaded both times).
int load_under_a_limit() {
  constexpr std::uint64_t kHeadroom = std::uint64_t{100} << 20;
  if (!::tenferro::testing::limit_address_space(kHeadroom)) return 2;
  Result<std::shared_ptr<LapackLinalgProvider>> refused = LapackLinalgProvider::load({});
  if (refused.ok()) return 3;
  if (refused.status().code() != ErrorCode::kResourceExhausted) return 4;
  if (refused.status().message().find("address-space limit") == std::string_view::npos) return 5;
  const rlimit none{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &none) != 0) return 6;
  if (!LapackLinalgProvider::load({}).ok()) return 7;  // room again: it loads
  if (!::tenferro::testing::limit_address_space(kHeadroom)) return 8;
  if (!LapackLinalgProvider::load({}).ok()) return 9;  // loaded before: not checked
  return 0;
}

TEST(CpuLinalgEngineTest, LoadingUnderATightAddressSpaceLimitIsRefusedNotHung) {
  // In a fresh process: its OpenBLAS pool hung such a load before.
  if (!LapackLinalgProvider::prefers_own_symbols())
    GTEST_SKIP() << "sanitizers reserve address space an RLIMIT_AS breaks";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(load_under_a_limit()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tenferro::linalg
