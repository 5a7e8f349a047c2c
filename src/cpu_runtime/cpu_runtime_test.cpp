// The ready CPU runtime: einsum and linalg run on it, options are honoured,
// and bad options are typed errors.
#include "tenferro/cpu_runtime/cpu_runtime.h"

#include <gtest/gtest.h>

#include <complex>
#include <thread>

#include "tenferro/ad_runtime/gradient_tape.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/linalg/eager_linalg.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/program/program_builder.h"
#include "testing/address_space.h"

namespace tenferro::cpu {
namespace {

TEST(CpuRuntimeTest, EinsumAndLinalgRunOnOneThread) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu->threads, 1);
  ASSERT_NE(cpu->einsum, nullptr);
  ASSERT_NE(cpu->linalg, nullptr);
  runtime::EagerContext ctx = cpu->runtime.on();
  const Tensor operands[] = {*Tensor::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3}),
                             *Tensor::from_values<double>({1, 0, 0, 1, 1, 1}, {3, 2})};
  Result<Tensor> c = einsum::einsum(ctx, "ij,jk->ik", operands);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(*c->to_vector<double>(), (std::vector<double>{4, 5, 10, 11}));
  Result<Tensor> det = linalg::det(ctx, *Tensor::from_values<double>({4, 5, 10, 11}, {2, 2}));
  ASSERT_TRUE(det.ok()) << det.status().to_string();
  EXPECT_NEAR((*det->to_vector<double>())[0], 4.0 * 11 - 5.0 * 10, 1e-12);
}

// Runtime::cache_report lists the einsum and linalg engines' caches,
// each once, and Runtime::clear_caches empties them with the CPU engine's
// pool (a one-thread runtime's calling-thread pool included).
TEST(CpuRuntimeTest, ClearCachesEmptiesEveryEngineAndExtensionCache) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1, .on_calling_thread = true});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  runtime::EagerContext ctx = cpu->runtime.on();
  for (std::int64_t n = 2; n < 8; ++n) {
    const Tensor operands[] = {*Tensor::ones({n, 300}, DType::kFloat64), *Tensor::ones({300, n}, DType::kFloat64)};
    ASSERT_TRUE(einsum::einsum(ctx, "ij,jk->ik", operands).ok());
  }
  {
    const Tensor outer[] = {*Tensor::ones({400, 2}, DType::kFloat64), *Tensor::ones({2, 400}, DType::kFloat64)};
    ASSERT_TRUE(einsum::einsum(ctx, "ij,jk->ik", outer).ok());  // its result freed at once
  }
  runtime::RuntimeCacheReport report = cpu->runtime.cache_report();
  const auto extension = [&](std::string_view family) {
    for (const runtime::ExtensionCacheReport& x : report.extensions)
      if (x.family_id == family) return x.usage;
    ADD_FAILURE() << family << " is not reported";
    return runtime::CacheUsage{};
  };
  ASSERT_EQ(report.extensions.size(), 2u);  // einsum, linalg (FFT is installed through options.extensions)
  EXPECT_GE(extension("tenferro.einsum").entries, 6u);
  ASSERT_EQ(report.engines.size(), 1u);
  EXPECT_GT(report.engines[0].usage.bytes, 0u);  // the freed 400 x 400 result, pooled
  cpu->runtime.clear_caches();
  report = cpu->runtime.cache_report();
  EXPECT_EQ(extension("tenferro.einsum").entries, 0u);
  EXPECT_EQ(extension("tenferro.einsum").bytes, 0u);
  EXPECT_EQ(report.engines[0].usage.bytes, 0u);
}

// linalg::vector_norm over axes that do not merge into one strided axis:
// the eager call copies them together first (through the CPU engine's
// layout slot), and every element counts once. Reading a value out of a
// temporary Result in a range-for is safe (Note [Values out of temporary
// results] in status.h).
TEST(CpuRuntimeTest, VectorNormOverAxesThatNeedACopy) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  runtime::EagerContext ctx = cpu->runtime.on();
  std::vector<double> v(60);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3.0;
  const Tensor x = *Tensor::from_values<double>(v, {3, 4, 5});
  Result<Tensor> r = linalg::vector_norm(ctx, x, Dims{0, 2}, linalg::NormOrder::kOne);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(Dims(r->shape().begin(), r->shape().end()), (Dims{4}));
  std::vector<double> got;
  for (double value : *r->to_vector<double>()) got.push_back(value);
  for (std::size_t j = 0; j < 4; ++j) {
    double sum = 0;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t k = 0; k < 5; ++k) sum += std::abs(v[(i * 4 + j) * 5 + k]);
    EXPECT_EQ(got[j], sum) << j;
  }
}

// The eager functions take operands as numpy does: integers as float64,
// mixed dtypes in their common dtype.
TEST(CpuRuntimeTest, EagerLinalgPromotesOperandsAsNumpy) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  runtime::EagerContext ctx = cpu->runtime.on();
  Result<Tensor> d = linalg::det(ctx, *Tensor::from_values<std::int64_t>({4, 1, 2, 3}, {2, 2}));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->dtype(), DType::kFloat64);
  EXPECT_NEAR((*d->to_vector<double>())[0], 10.0, 1e-12);
  const Tensor a32 = Tensor::from_values<float>({2, 0, 0, 4}, {2, 2}).value();
  const Tensor b64 = Tensor::from_values<double>({1, 1}, {2}).value();
  Result<Tensor> x = linalg::solve(ctx, a32, b64);  // float32 with float64: float64
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(x->dtype(), DType::kFloat64);
  EXPECT_EQ(*x->to_vector<double>(), (std::vector<double>{0.5, 0.25}));
  Result<Tensor> n = linalg::vector_norm(ctx, *Tensor::from_values<std::int32_t>({3, 4}, {2}));
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n->to_vector<double>(), (std::vector<double>{5.0}));
}

// Note [Eager dtype promotion]: mixed operands are converted to numpy's
// common dtype before the call; the results equal the call on operands
// converted by hand.
TEST(CpuRuntimeTest, EagerCallsPromoteMixedDtypesAsNumpy) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  runtime::EagerContext ctx = cpu->runtime.on();
  const Tensor f64 = *Tensor::from_values<double>({1.5, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor f32 = *Tensor::from_values<float>({1, 0, 0.25f, 1, 1, 1}, {3, 2});
  const Tensor c64 =
      *Tensor::from_values<std::complex<float>>({{1, 1}, {0, 2}, {1, 0}, {0, 0}, {3, 0}, {1, -1}}, {3, 2});
  const Tensor i32 = *Tensor::from_values<std::int32_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  struct Case {
    Tensor b;
    DType want;
  };
  for (const Case& c : {Case{f32, DType::kFloat64}, Case{c64, DType::kComplex128}, Case{i32, DType::kFloat64}}) {
    SCOPED_TRACE(to_string(c.b.dtype()));
    const Tensor mixed[] = {f64, c.b};
    Result<Tensor> got = einsum::einsum(ctx, "ij,jk->ik", mixed);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->dtype(), c.want);
    const Tensor by_hand[] = {*ctx.convert(f64, c.want), *ctx.convert(c.b, c.want)};
    Result<Tensor> want = einsum::einsum(ctx, "ij,jk->ik", by_hand);
    ASSERT_TRUE(want.ok());
    const Result<Tensor> diff = ctx.sub(*got, *want);
    ASSERT_TRUE(diff.ok());
    const Result<Tensor> norm = ctx.sum(*ctx.abs(*diff), {0, 1});
    ASSERT_TRUE(norm.ok()) << norm.status().to_string();
    EXPECT_EQ(*ctx.convert(*norm, DType::kFloat64)->to_vector<double>(), std::vector<double>{0.0});
  }
  const Tensor c32 = *Tensor::from_values<std::complex<float>>({{1, 1}, {2, 0}, {0, 1}}, {3});
  Result<Tensor> sum = ctx.add(*Tensor::from_values<float>({1, 2, 3}, {3}), c32);  // float32 + complex64
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ(sum->dtype(), DType::kComplex64);
  EXPECT_EQ(*sum->to_vector<std::complex<float>>(), (std::vector<std::complex<float>>{{2, 1}, {4, 0}, {3, 1}}));
  Result<Tensor> broadcast = ctx.mul(f64, *Tensor::from_values<std::int64_t>({2, 3, 4}, {3}));  // int64 row
  ASSERT_TRUE(broadcast.ok()) << broadcast.status().to_string();
  EXPECT_EQ(*broadcast->to_vector<double>(), (std::vector<double>{3, 6, 12, 8, 15, 24}));
  Result<Tensor> product = ctx.matmul(f64, f32);  // float64 @ float32
  ASSERT_TRUE(product.ok()) << product.status().to_string();
  EXPECT_EQ(product->dtype(), DType::kFloat64);
  EXPECT_EQ(*product->to_vector<double>(), (std::vector<double>{5.0, 5.0, 11.25, 11.0}));
  // What no dtype makes valid is still a typed error: bool einsum operands.
  const Tensor flags[] = {*Tensor::zeros({2, 3}, DType::kBool), *Tensor::zeros({3, 2}, DType::kBool)};
  EXPECT_EQ(einsum::einsum(ctx, "ij,jk->ik", flags).status().code(), ErrorCode::kDTypeMismatch);
}

// The runtime's AdContext differentiates what it runs: a GradientTape of
// det(A B) against central differences of the eager calls.
TEST(CpuRuntimeTest, ItsAdContextDifferentiatesEinsumAndLinalg) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_NE(cpu->ad, nullptr);
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 0.5, 0, 1, 1, 1};
  auto op = einsum::EinsumOp::create("ij,jk->ik");
  ASSERT_TRUE(op.ok());
  ad::GradientTape tape(cpu->runtime, cpu->ad);
  auto va = tape.variable(*Tensor::from_values<double>(a, {2, 3}));
  auto vb = tape.variable(*Tensor::from_values<double>(b, {3, 2}));
  ASSERT_TRUE(va.ok() && vb.ok());
  const ad::TapeTensor ab[] = {*va, *vb};
  auto c = tape.apply(*op, ab);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const ad::TapeTensor cs[] = {(*c)[0]};
  auto det = tape.apply(linalg::LinalgOp::det(), cs);
  ASSERT_TRUE(det.ok()) << det.status().to_string();
  const Status backward = tape.backward((*det)[0]);
  ASSERT_TRUE(backward.ok()) << backward.to_string();
  const std::vector<double> grad = *tape.grad(*va)->to_vector<double>();
  runtime::EagerContext ctx = cpu->runtime.on();
  auto det_of = [&](const std::vector<double>& x) {
    const Tensor operands[] = {*Tensor::from_values<double>(x, {2, 3}), *Tensor::from_values<double>(b, {3, 2})};
    return (*linalg::det(ctx, *einsum::einsum(ctx, "ij,jk->ik", operands))->to_vector<double>())[0];
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<double> up = a, down = a;
    up[i] += 1e-6;
    down[i] -= 1e-6;
    EXPECT_NEAR(grad[i], (det_of(up) - det_of(down)) / 2e-6, 1e-6) << i;
  }
  // Without the linalg engine, no linalg rule either.
  Result<CpuRuntime> bare = make_cpu_runtime({.threads = 1, .linalg = false});
  ASSERT_TRUE(bare.ok());
  EXPECT_NE(bare->ad->rule(einsum::kEinsumFamilyId), nullptr);
  EXPECT_EQ(bare->ad->rule(linalg::kLinalgFamilyId), nullptr);
}

TEST(CpuRuntimeTest, ZeroThreadsTakesEveryAllowedCpu) {
  Result<CpuRuntime> cpu = make_cpu_runtime();
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  Result<CpuTopology> topology = CpuTopology::discover();
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(cpu->threads, static_cast<int>(topology->allowed_cpus().to_vector().size()));
}

TEST(CpuRuntimeTest, WithoutLinalgTheLinalgFamilyIsUnsupported) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1, .linalg = false});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu->linalg, nullptr);
  runtime::EagerContext ctx = cpu->runtime.on();
  Result<Tensor> det = linalg::det(ctx, *Tensor::from_values<double>({1, 2, 3, 4}, {2, 2}));
  ASSERT_FALSE(det.ok());
  EXPECT_EQ(det.status().code(), ErrorCode::kUnsupportedExtension) << det.status().to_string();
}

TEST(CpuRuntimeTest, BadThreadCountsAreTypedErrors) {
  for (int threads : {-1, 1 << 20}) {
    Result<CpuRuntime> cpu = make_cpu_runtime({.threads = threads});
    ASSERT_FALSE(cpu.ok()) << threads;
    EXPECT_EQ(cpu.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(cpu.status().message().find(std::to_string(threads)), std::string::npos) << cpu.status().message();
  }
}

TEST(CpuRuntimeTest, OnTheCallingThreadThereIsNoDomainAndOneThread) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1, .on_calling_thread = true});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(cpu->domains, nullptr);
  EXPECT_EQ(cpu->threads, 1);
  runtime::EagerContext ctx = cpu->runtime.on();
  const Tensor operands[] = {*Tensor::from_values<double>({1, 2, 3, 4}, {2, 2}),
                             *Tensor::from_values<double>({1, 0, 0, 1}, {2, 2})};
  Result<Tensor> c = einsum::einsum(ctx, "ij,jk->ik", operands);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(*c->to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));

  Result<CpuRuntime> two = make_cpu_runtime({.threads = 2, .on_calling_thread = true});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(two.status().message().find("found 2"), std::string::npos) << two.status().message();
}

TEST(CpuRuntimeTest, ManagedDomainsStartAtTheGivenCpuAndWrapAround) {
  Result<CpuTopology> topology = CpuTopology::discover();
  ASSERT_TRUE(topology.ok());
  const std::vector<int> allowed = topology->allowed_cpus().to_vector();
  const int n = static_cast<int>(allowed.size());
  for (int first : {0, 1, n}) {
    Result<std::shared_ptr<const CpuDomainSet>> set = make_managed_domains(1, first);
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ((*set)->domains().front()->cpus().to_vector(),
              std::vector<int>{allowed[static_cast<std::size_t>(first % n)]})
        << "first " << first;
  }
  EXPECT_EQ(make_managed_domains(1, -1).status().code(), ErrorCode::kInvalidArgument);
}

// Note [Default placement]: without a first CPU the domain spans every
// allowed CPU with the asked budget, and a call pins nothing; with one, the
// calling thread is pinned for the call (where the process may use more
// than the domain's CPUs).
TEST(CpuRuntimeTest, DefaultPlacementPinsNothingAndFirstCpuPins) {
  Result<CpuTopology> topology = CpuTopology::discover();
  ASSERT_TRUE(topology.ok());
  const CpuSet allowed = topology->allowed_cpus();
  const Tensor operands[] = {*Tensor::from_values<double>({1, 2, 3, 4}, {2, 2}),
                             *Tensor::from_values<double>({1, 0, 0, 1}, {2, 2})};
  auto pins_of_one_call = [&](const CpuRuntimeOptions& options) -> std::uint64_t {
    Result<CpuRuntime> cpu = make_cpu_runtime(options);
    EXPECT_TRUE(cpu.ok()) << cpu.status().to_string();
    if (!cpu.ok()) return ~std::uint64_t{0};
    const CpuResourceDomain& domain = cpu->domains->default_domain();
    EXPECT_EQ(domain.thread_budget(), 1);
    runtime::EagerContext ctx = cpu->runtime.on();
    Result<Tensor> c = einsum::einsum(ctx, "ij,jk->ik", operands);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return domain.metrics().entering_thread_pins;
  };
  Result<std::shared_ptr<const CpuDomainSet>> set = make_managed_domains(1);
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  EXPECT_EQ((*set)->domains().front()->cpus(), allowed);
  EXPECT_EQ((*set)->domains().front()->thread_budget(), 1);
  EXPECT_EQ(pins_of_one_call({.threads = 1}), 0u);
  if (allowed.count() < 2) GTEST_SKIP() << "one allowed CPU: a pinned domain covers it all";
  EXPECT_EQ(pins_of_one_call({.threads = 1, .first_cpu = 0}), 1u);
}

TEST(CpuRuntimeTest, FirstCpuWithoutADomainIsAnError) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1, .first_cpu = 0, .on_calling_thread = true});
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(cpu.status().message().find("expected no first_cpu, found 0"), std::string::npos) << cpu.status().message();
}

TEST(CpuRuntimeTest, OpenBlasProviderIsUsedWhenChosen) {
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1, .gemm = {"openblas"}});
  if (!cpu.ok() && cpu.status().code() == ErrorCode::kUnsupported) GTEST_SKIP() << cpu.status().to_string();
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_NE(std::string(cpu->gemm->name()).find("openblas"), std::string::npos) << cpu->gemm->name();
}

// Regression (issue 17, the eigh / pinv backward programs): the buffer plan
// wrote an elementwise result in place over operand 0 while another operand
// read the same memory through a transpose, and over a reused buffer that
// only had the result's byte size (an f32 value converted to f64). Both
// reached the kernels as kAliasConflict at completion (Note [Buffer
// planning]).
std::shared_ptr<const program::SemanticProgram> freeze(program::ProgramBuilder& b, program::ProgramValue out) {
  Result<program::FrozenProgram> frozen = b.freeze(std::span<const program::ProgramValue>(&out, 1));
  return frozen.ok() ? frozen->program : nullptr;
}

Result<runtime::TensorList> run_once(runtime::Runtime& rt,
                                     const std::shared_ptr<const program::SemanticProgram>& program, const Tensor& x) {
  TENFERRO_ASSIGN_OR_RETURN(auto prepared, rt.prepare_for(program, runtime::InputSignature::of({&x, 1})));
  return rt.run_prepared(*prepared, {&x, 1});
}

TEST(CpuRuntimeTest, InPlaceNeverOverlapsAnOperandViewingOperandZero) {
  using program::CoreSemanticOp;
  program::ProgramBuilder b;
  program::ProgramValue x = *b.add_input(DType::kFloat64, {3, 3});
  // y dies at the add, which also reads it transposed: y + y^T may not be
  // written over y.
  program::ProgramValue y = *b.emit(CoreSemanticOp::kNeg, {x});
  program::ProgramValue yt = *b.emit(CoreSemanticOp::kTranspose, {y}, program::TransposeAttributes{Dims{1, 0}});
  program::ProgramValue sum = *b.emit(CoreSemanticOp::kAdd, {y, yt});
  program::ProgramValue out = *b.emit(CoreSemanticOp::kNeg, {sum});
  auto program = freeze(b, out);
  ASSERT_NE(program, nullptr);
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  Result<runtime::TensorList> got =
      run_once(cpu->runtime, program, *Tensor::from_values<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*(*got)[0].to_vector<double>(), (std::vector<double>{2, 6, 10, 6, 10, 14, 10, 14, 18}));
}

// Note [Concrete validation]: iota, rng_philox, broadcast_in_dim and
// reshape whose shape attribute is symbolic are prepared with it evaluated
// for the inputs, and run over the extents the inputs give.
TEST(CpuRuntimeTest, ShapeAttributesOfSymbolicExtentsArePreparedForTheInputs) {
  using program::CoreSemanticOp;
  program::ProgramBuilder b;
  program::ProgramValue x = *b.add_input(DType::kFloat64, {program::SymbolicExtent::unknown()});
  const program::SymbolicExtent s = b.metadata(x)->shape[0];
  program::ProgramValue i = *b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kFloat64, {s}, 0});
  program::ProgramValue sum = *b.emit(CoreSemanticOp::kAdd, {x, i});  // x + iota(s)
  program::ProgramValue grid =
      *b.emit(CoreSemanticOp::kBroadcastInDim, {sum}, program::BroadcastInDimAttributes{{s, s}, Dims{1}});
  program::ProgramValue flat = *b.emit(CoreSemanticOp::kReshape, {grid}, program::ReshapeAttributes{{s * s}});
  program::ProgramValue noise =
      *b.emit(CoreSemanticOp::kRngPhilox, {}, program::RandomAttributes{DType::kFloat64, {s}, 7, 0});
  Result<program::FrozenProgram> frozen = b.freeze({flat, noise});
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  for (std::int64_t n : {3, 5}) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = 10.0 * static_cast<double>(k + 1);
    Result<runtime::TensorList> got =
        run_once(cpu->runtime, frozen->program, *Tensor::from_values<double>(std::span<const double>(v), {n}));
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    std::vector<double> want;
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t k = 0; k < n; ++k) want.push_back(v[static_cast<std::size_t>(k)] + static_cast<double>(k));
    EXPECT_EQ(*(*got)[0].to_vector<double>(), want) << n;
    EXPECT_EQ((*got)[1].numel(), n);
  }
}

TEST(CpuRuntimeTest, InPlaceNeedsTheOperandsDtypeNotJustItsBuffersSize) {
  using program::CoreSemanticOp;
  program::ProgramBuilder b;
  program::ProgramValue x = *b.add_input(DType::kFloat64, {4});
  // a (f64, 32 bytes) dies at the first convert; its buffer is free when
  // c (f32, 16 bytes) needs one, so c sits in a 32-byte buffer. Converting
  // c to f64 (32 bytes) must not be written over it.
  program::ProgramValue a = *b.emit(CoreSemanticOp::kNeg, {x});
  program::ProgramValue f32 = *b.emit(CoreSemanticOp::kConvert, {a}, program::ConvertAttributes{DType::kFloat32});
  program::ProgramValue c = *b.emit(CoreSemanticOp::kNeg, {f32});
  program::ProgramValue c64 = *b.emit(CoreSemanticOp::kConvert, {c}, program::ConvertAttributes{DType::kFloat64});
  program::ProgramValue f64 = *b.emit(CoreSemanticOp::kConvert, {f32}, program::ConvertAttributes{DType::kFloat64});
  program::ProgramValue out = *b.emit(CoreSemanticOp::kSub, {c64, f64});
  auto program = freeze(b, out);
  ASSERT_NE(program, nullptr);
  Result<CpuRuntime> cpu = make_cpu_runtime({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  Result<runtime::TensorList> got = run_once(cpu->runtime, program, *Tensor::from_values<double>({1, 2, 3, 4}, {4}));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*(*got)[0].to_vector<double>(), (std::vector<double>{2, 4, 6, 8}));
}

// Creates a two-thread runtime with 1 MiB of address space left: 0 when
// that is kResourceExhausted (oneTBB's std::bad_alloc reached the caller).
int runtime_under_a_limit() {
  if (!::tenferro::testing::limit_address_space(std::uint64_t{1} << 20)) return 2;
  try {
    Result<CpuRuntime> rt = make_cpu_runtime({.threads = 2});
    if (rt.ok()) return 3;
    return rt.status().code() == ErrorCode::kResourceExhausted ? 0 : 4;
  } catch (...) {
    return 5;
  }
}

TEST(CpuRuntimeTest, NoMemoryForTheRuntimeIsATypedError) {
  if (::tenferro::testing::kSanitized) GTEST_SKIP() << "sanitizers reserve address space an RLIMIT_AS breaks";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: no two-thread runtime";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(runtime_under_a_limit()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tenferro::cpu
