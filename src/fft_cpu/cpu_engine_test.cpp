// CpuFftEngine: the graph path against the eager path, the parallel split
// of batches (Note [FFT batch parallelism]) against sequential runs, the
// direct first pass and its fallbacks (strided or misaligned input),
// workspace reuse, explain(), empty tensors and errors through eager calls.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fft_cpu/fft_test_support.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/spi/event_domain.h"
#include "tenferro/testing/reference_engine.h"

namespace tenferro::fft {
namespace {

using namespace testing;

// One engine running work inline: the fft engine sees NoExecutionContext and
// uses its fallback parallel context.
runtime::Runtime make_inline_runtime(std::shared_ptr<CpuFftEngine> fft) {
  return tenferro::testing::make_inline_extension_runtime(cpu_extension_module(EngineId(1), std::move(fft)));
}

TEST(CpuFftEngine, GraphPathMatchesEager) {
  auto engine = CpuFftEngine::create_default();
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  Tensor x = random_tensor(DType::kFloat64, {6, 10, 7}, 1);
  program::ProgramBuilder b;
  auto in = b.add_input(DType::kFloat64, {6, 10, 7});
  ASSERT_TRUE(in.ok());
  auto op = FftOp::make_n(FftKind::kRfft, {-1, 12}, {0, 2}, FftNorm::kOrtho);
  ASSERT_TRUE(op.ok());
  auto y = b.emit_extension(*op, {*in});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  // Chain an irfft back (through the graph) to check the round trip too.
  auto back = b.emit_extension(*FftOp::make_n(FftKind::kIrfft, {6, 12}, {0, 2}, FftNorm::kOrtho), {(*y)[0]});
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const program::ProgramValue outs[] = {(*y)[0], (*back)[0]};
  auto frozen = b.freeze(outs);
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
  const Tensor inputs[] = {x};
  auto got = rt.run(*frozen, inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  Result<Tensor> eager = rfftn(ctx, x, {-1, 12}, {0, 2}, FftNorm::kOrtho);
  ASSERT_TRUE(eager.ok());
  expect_close(values_of((*got)[0]), values_of(*eager), 1e-13, "graph vs eager");
  // irfftn(rfftn(x, s=12 along axis 2)) is x zero-padded to 12 along axis 2.
  std::vector<cd> padded;
  const std::vector<cd> xv = values_of(x);
  for (std::int64_t i = 0; i < 6 * 10; ++i)
    for (std::int64_t k = 0; k < 12; ++k) padded.push_back(k < 7 ? xv[static_cast<std::size_t>(i * 7 + k)] : cd(0));
  expect_close(values_of((*got)[1]), padded, 1e-13, "round trip");
}

TEST(CpuFftEngine, SymbolicProgramSpecialisesPerShape) {
  auto engine = CpuFftEngine::create_default();
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  program::ProgramBuilder b;
  auto in = b.add_input(DType::kComplex128, {program::SymbolicExtent::unknown(), 6});
  ASSERT_TRUE(in.ok());
  auto y = b.emit_extension(*FftOp::make_n(FftKind::kIfft, {}, {0, 1}, FftNorm::kOrtho), {*in});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  auto frozen = b.freeze({(*y)[0]});
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();
  for (std::int64_t rows : {5, 8, 5}) {
    const Tensor x = random_tensor(DType::kComplex128, {rows, 6}, static_cast<std::uint32_t>(rows));
    const Tensor inputs[] = {x};
    auto got = rt.run(*frozen, inputs);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(Dims((*got)[0].shape()), (Dims{rows, 6}));
    expect_close(values_of((*got)[0]), values_of(*ifftn(ctx, x, {}, {}, FftNorm::kOrtho)), 1e-13, "symbolic");
  }
}

TEST(CpuFftEngine, BatchesSplitOverTheContextMatchSequential) {
  FftEngineOptions options;
  options.grain_flops = 1e3;
  auto parallel = std::make_shared<cpu::ArenaParallelContext>(2);
  for (const std::string name : {"fftw", "native"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<const CpuFftProvider> provider =
        name == "fftw" ? std::shared_ptr<const CpuFftProvider>(std::make_shared<FftwFftProvider>())
                       : std::make_shared<NativeFftProvider>();
    auto split = std::make_shared<CpuFftEngine>(provider, options, parallel);
    auto sequential = std::make_shared<CpuFftEngine>(provider, options);
    runtime::Runtime rt_split = make_inline_runtime(split), rt_seq = make_inline_runtime(sequential);
    runtime::EagerContext a = rt_split.on(), b = rt_seq.on();
    for (DType dtype : {DType::kComplex64, DType::kComplex128}) {
      Tensor x = random_tensor(dtype, {37, 24, 5}, 3);
      Result<Tensor> ya = fftn(a, x, {}, {0, 1}), yb = fftn(b, x, {}, {0, 1});
      ASSERT_TRUE(ya.ok() && yb.ok()) << ya.status().to_string() << yb.status().to_string();
      expect_close(values_of(*ya), values_of(*yb), 1e-6, "fftn split vs sequential");
      // 70 columns: several r2c/c2r panels (Note [FFT panels]) in both precisions.
      Tensor r = random_tensor(real_dtype(dtype), {33, 70}, 4);
      Result<Tensor> ra = rfft(a, r, -1, 0), rb = rfft(b, r, -1, 0);
      ASSERT_TRUE(ra.ok() && rb.ok());
      expect_close(values_of(*ra), values_of(*rb), 1e-6, "rfft split vs sequential");
      Result<Tensor> ia = irfftn(a, *ra, {33, 70}, {1, 0}), ib = irfftn(b, *rb, {33, 70}, {1, 0});
      ASSERT_TRUE(ia.ok() && ib.ok());
      expect_close(values_of(*ia), values_of(*ib), 1e-6, "irfftn split vs sequential");
    }
    if (provider->reproducible()) {  // the same bits whatever the split
      Tensor x = random_tensor(DType::kComplex128, {37, 24, 5}, 3);
      EXPECT_EQ(values_of(*fftn(a, x, {}, {0, 1})), values_of(*fftn(b, x, {}, {0, 1})));
    }
    EXPECT_GT(split->stats().outer_runs, 0u);
    EXPECT_EQ(split->stats().sequential_runs, 0u);
    EXPECT_EQ(sequential->stats().outer_runs, 0u);
    EXPECT_GT(split->stats().kernel_calls, sequential->stats().kernel_calls);
    auto op = FftOp::make_n(FftKind::kFft, {}, {0, 1});
    const std::string text = split->explain(**op, DType::kComplex128, {37, 24, 5});
    EXPECT_NE(text.find("panels"), std::string::npos) << text;
    EXPECT_NE(text.find(provider->name()), std::string::npos) << text;
  }
}

TEST(CpuFftEngine, DirectFirstPassAndItsFallbacks) {
  auto engine = CpuFftEngine::create_default();
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  Tensor x = random_tensor(DType::kComplex64, {9, 16}, 5);
  Result<Tensor> direct = fft(ctx, x, -1, -1, FftNorm::kOrtho);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(engine->stats().direct_runs, 1u);
  // The same values through a strided view and through a view one element
  // off FFTW's SIMD alignment: both take the staged path.
  Tensor wide = random_tensor(DType::kComplex64, {9, 17}, 6);
  Tensor copy_into = *Tensor::empty({9, 17}, DType::kComplex64);
  std::vector<cd> v = values_of(wide), xv = values_of(x);
  for (std::int64_t i = 0; i < 9; ++i)
    for (std::int64_t j = 0; j < 16; ++j)
      v[static_cast<std::size_t>(i * 17 + j + 1)] = xv[static_cast<std::size_t>(i * 16 + j)];
  Tensor holder = tensor_of(DType::kComplex64, {9 * 17}, v);
  Tensor strided = *(*holder.reshape({9, 17})).slice(1, 1, 17);
  Result<Tensor> via_strided = fft(ctx, strided, -1, -1, FftNorm::kOrtho);
  ASSERT_TRUE(via_strided.ok());
  Tensor shifted = *(*holder.slice(0, 1, 1 + 9 * 16)).reshape({9, 16});  // contiguous but 8 bytes off
  std::vector<cd> sv = values_of(shifted);
  Result<Tensor> via_shifted = fft(ctx, shifted, -1, -1, FftNorm::kOrtho);
  ASSERT_TRUE(via_shifted.ok());
  EXPECT_EQ(engine->stats().direct_runs, 1u);
  expect_close(values_of(*via_strided), values_of(*direct), 1e-6, "strided");
  Result<Tensor> reference = fft(ctx, tensor_of(DType::kComplex64, {9, 16}, sv), -1, -1, FftNorm::kOrtho);
  expect_close(values_of(*via_shifted), values_of(*reference), 1e-6, "misaligned");
}

// A contiguous copy of `t` with axes `a` and `b` swapped.
Tensor swapped_copy(const Tensor& t, std::int64_t a, std::int64_t b) {
  Tensor view = *t.transpose(a, b);
  return tensor_of(t.dtype(), view.shape(), values_of(view));
}

// Note [FFT panels]: every kind along a strided axis (axis 0 of a row-major
// array, the middle axis of a 3-D one) runs in panels, the r2c and c2r
// ones reading the input directly where they can, and equals the same transform along the
// contiguous last axis of the transposed copy (which runs no panel).
// Column counts below, at and above one panel (32 float32, 8 float64
// reals), not multiples of it; odd and even lengths.
TEST(CpuFftEngine, TransformsAlongStridedAxesRunInPanels) {
  for (const std::string name : {"fftw", "native"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<const CpuFftProvider> provider =
        name == "fftw" ? std::shared_ptr<const CpuFftProvider>(std::make_shared<FftwFftProvider>())
                       : std::make_shared<NativeFftProvider>();
    auto engine = std::make_shared<CpuFftEngine>(provider);
    runtime::Runtime rt = make_runtime(engine);
    runtime::EagerContext ctx = rt.on();
    for (DType real : {DType::kFloat32, DType::kFloat64}) {
      const DType complex = *complex_dtype(real);
      const double tol = real == DType::kFloat32 ? 2e-5 : 1e-12;
      for (std::int64_t n : {2, 9, 10, 33, 64}) {
        for (std::int64_t cols : {3, 8, 19, 37}) {  // 37: one full float32 panel and a short one
          SCOPED_TRACE(fmt::format("{} n={} cols={}", real, n, cols));
          const std::uint32_t seed = static_cast<std::uint32_t>(n * 100 + cols);
          const Tensor x = random_tensor(real, {n, cols}, seed);
          const Tensor xt = swapped_copy(x, 0, 1);
          const Tensor c = random_tensor(complex, {n, cols}, seed + 1);
          const Tensor ct = swapped_copy(c, 0, 1);
          const auto check = [&](const char* what, Result<Tensor> strided, Result<Tensor> contiguous,
                                 std::uint64_t panels, std::uint64_t direct) {
            SCOPED_TRACE(what);
            ASSERT_TRUE(strided.ok()) << strided.status().to_string();
            ASSERT_TRUE(contiguous.ok()) << contiguous.status().to_string();
            EXPECT_EQ(strided->dtype(), contiguous->dtype());
            expect_close(values_of(*strided), values_of(*contiguous->transpose(0, 1)), tol, what);
            EXPECT_EQ(engine->stats().panel_passes, panels) << "the strided call ran in panels";
            EXPECT_EQ(engine->stats().direct_runs, direct);
          };
          const auto stats = [&] { return std::pair{engine->stats().panel_passes, engine->stats().direct_runs}; };
          // Each strided call below runs one panel pass; each contiguous one none.
          auto [p0, d0] = stats();
          Result<Tensor> y = rfft(ctx, x, -1, 0);
          check("rfft", y, rfft(ctx, xt, -1, -1), p0 + 1, d0 + 2);  // both read their input directly
          auto [p1, d1] = stats();
          check("rfft ortho, padded to n+3", rfft(ctx, x, n + 3, 0, FftNorm::kOrtho),
                rfft(ctx, xt, n + 3, -1, FftNorm::kOrtho), p1 + 1, d1);  // padded: both staged
          auto [p2, d2] = stats();
          check("ihfft", ihfft(ctx, x, -1, 0), ihfft(ctx, xt, -1, -1), p2 + 1, d2 + 2);
          auto [p3, d3] = stats();
          // irfft to an even and an odd length: the c2r pass gathers from
          // the input directly (the contiguous call stages its input).
          check("irfft", irfft(ctx, c, -1, 0), irfft(ctx, ct, -1, -1), p3 + 1, d3 + 1);
          auto [p4, d4] = stats();
          check("irfft odd", irfft(ctx, c, 2 * n - 1, 0, FftNorm::kForward),
                irfft(ctx, ct, 2 * n - 1, -1, FftNorm::kForward), p4 + 1, d4 + 1);  // n bins: not resized
          auto [p45, d45] = stats();
          check("irfft padded", irfft(ctx, c, 2 * n + 1, 0), irfft(ctx, ct, 2 * n + 1, -1), p45 + 1, d45);
          auto [p5, d5] = stats();
          check("hfft", hfft(ctx, c, -1, 0), hfft(ctx, ct, -1, -1), p5 + 1, d5);  // conjugated: staged
          auto [p6, d6] = stats();
          check("fft", fft(ctx, c, -1, 0), fft(ctx, ct, -1, -1), p6 + 1, d6 + 1);  // c2c panels stay staged
        }
      }
      // N-D: rfftn's r2c pass along axis 0 (a panel) and its c2c pass along
      // axis 1; irfftn with the c2r pass along axis 0; a 3-D middle axis.
      const Tensor x3 = random_tensor(real, {5, 12, 11}, 7);
      const Tensor x3t = swapped_copy(x3, 1, 2);  // (5, 11, 12)
      const std::uint64_t before = engine->stats().panel_passes;
      Result<Tensor> y3 = rfft(ctx, x3, -1, 1);
      Result<Tensor> y3t = rfft(ctx, x3t, -1, 2);
      ASSERT_TRUE(y3.ok() && y3t.ok());
      expect_close(values_of(*y3), values_of(*y3t->transpose(1, 2)), tol, "rfft middle axis");
      Result<Tensor> back = irfft(ctx, *y3, 12, 1);
      ASSERT_TRUE(back.ok());
      expect_close(values_of(*back), values_of(x3), tol, "irfft middle axis round trip");
      EXPECT_EQ(engine->stats().panel_passes, before + 2);
      const Tensor x2 = random_tensor(real, {14, 9}, 8);
      Result<Tensor> yn = rfftn(ctx, x2, {}, {1, 0});  // r2c along axis 0, then c2c along axis 1
      Result<Tensor> ynt = rfftn(ctx, swapped_copy(x2, 0, 1), {}, {0, 1});
      ASSERT_TRUE(yn.ok() && ynt.ok());
      expect_close(values_of(*yn), values_of(*ynt->transpose(0, 1)), tol, "rfftn");
      Result<Tensor> xn = irfftn(ctx, *yn, {9, 14}, {1, 0});
      ASSERT_TRUE(xn.ok()) << xn.status().to_string();
      expect_close(values_of(*xn), values_of(x2), tol, "irfftn round trip");
      // The 3-D pair 2; yn's r2c, ynt's c2c along its axis 0 and xn's c2r 3.
      EXPECT_EQ(engine->stats().panel_passes, before + 5);
    }
    auto op = FftOp::make(FftKind::kRfft, -1, 0);
    const std::string text = engine->explain(**op, DType::kFloat32, {64, 40});
    EXPECT_NE(text.find("r2c"), std::string::npos) << text;
    EXPECT_NE(text.find("2 panels of 32 columns"), std::string::npos) << text;
  }
}

TEST(CpuFftEngine, WorkspaceIsReusedAcrossRuns) {
  auto engine = std::make_shared<CpuFftEngine>(std::make_shared<NativeFftProvider>());
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  Tensor x = random_tensor(DType::kFloat64, {8, 30}, 7);
  ASSERT_TRUE(rfft(ctx, x).ok());
  const std::uint64_t allocations = engine->stats().workspace_allocations;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(rfft(ctx, x).ok());
  EXPECT_EQ(engine->stats().workspace_allocations, allocations);
  EXPECT_GE(engine->stats().workspace_reuses, 5u);
  // Every call builds a new op of an equal payload, which the context's
  // call memo answers (Note [Extension call memo]): the engine prepared once.
  EXPECT_EQ(engine->stats().plan_cache_misses, 1u);
  EXPECT_EQ(engine->stats().plan_cache_hits, 0u);
  ASSERT_TRUE(rfft(ctx, *x.transpose(0, 1)).ok());  // another shape and layout: another plan
  EXPECT_EQ(engine->stats().plan_cache_misses, 2u);
}

TEST(CpuFftEngine, PlanCacheEvictionsAreCounted) {
  FftEngineOptions options;
  options.max_cached_plans = 2;
  auto engine = std::make_shared<CpuFftEngine>(std::make_shared<NativeFftProvider>(), options);
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  for (std::int64_t n : {5, 6, 7, 8}) ASSERT_TRUE(rfft(ctx, random_tensor(DType::kFloat64, {n}, 3)).ok());
  EXPECT_EQ(engine->stats().plan_cache_misses, 4u);
  EXPECT_EQ(engine->stats().plan_cache_evictions, 2u);
  const runtime::CacheUsage usage = engine->cache_usage();
  EXPECT_EQ(usage.entries, 2u);
  EXPECT_EQ(usage.evictions, 2u);
  engine->clear_caches();  // clearing is not eviction
  EXPECT_EQ(engine->cache_usage().entries, 0u);
  EXPECT_EQ(engine->cache_usage().evictions, 2u);
}

// Note [FFT plan memory]: the engine's plans are bounded in table bytes as
// well, and its cache usage counts the tables of every live kernel.
TEST(CpuFftEngine, PlanCacheHasAByteBound) {
  FftEngineOptions options;
  options.max_cached_plan_bytes = 1;  // every plan is larger: the newest alone is kept
  auto provider = std::make_shared<NativeFftProvider>(256, std::size_t{1} << 30);
  auto engine = std::make_shared<CpuFftEngine>(provider, options);
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  const std::int64_t primes[] = {100003, 100019, 100043, 100049};
  for (std::int64_t n : primes) {
    ASSERT_TRUE(fft(ctx, random_tensor(DType::kComplex128, {n}, 3)).ok());
    EXPECT_GE(engine->stats().plan_cache_bytes, 16u * static_cast<std::size_t>(n))
        << "a prime length's tables hold more than one signal";
  }
  // Again the last length: the cached plan (the eager context's memo does
  // not keep plans of this much work, so the engine is asked each time).
  ASSERT_TRUE(fft(ctx, random_tensor(DType::kComplex128, {primes[3]}, 4)).ok());
  const FftEngineStats s = engine->stats();
  EXPECT_EQ(s.plan_cache_misses, 4u);
  EXPECT_EQ(s.plan_cache_hits, 1u);
  EXPECT_EQ(s.plan_cache_evictions, 3u);
  EXPECT_EQ(engine->cache_usage().entries, 1u);
  // The provider (bound 1 GiB) still holds every kernel; the usage counts
  // their tables with the retained workspaces.
  const FftPlanCacheStats p = provider->cache_stats();
  EXPECT_GE(p.entries, 4u);
  EXPECT_EQ(p.live_bytes, p.bytes);
  EXPECT_GT(p.bytes, s.plan_cache_bytes);
  EXPECT_GE(engine->cache_usage().bytes, p.live_bytes);
  engine->clear_caches();
  EXPECT_EQ(provider->cache_stats().live_bytes, 0u) << "nothing else holds a kernel";
  EXPECT_EQ(engine->stats().plan_cache_bytes, 0u);
}

TEST(CpuFftEngine, EmptyTensorsAndPaddedEmptyAxes) {
  runtime::Runtime rt = make_runtime(CpuFftEngine::create_default());
  runtime::EagerContext ctx = rt.on();
  Result<Tensor> empty_batch = fft(ctx, random_tensor(DType::kComplex128, {0, 8}, 1));
  ASSERT_TRUE(empty_batch.ok()) << empty_batch.status().to_string();
  EXPECT_EQ(Dims(empty_batch->shape()), (Dims{0, 8}));
  Result<Tensor> padded = fft(ctx, *Tensor::zeros({3, 0}, DType::kFloat64), 4, 1);
  ASSERT_TRUE(padded.ok()) << padded.status().to_string();
  EXPECT_EQ(Dims(padded->shape()), (Dims{3, 4}));
  for (const cd& z : values_of(*padded)) EXPECT_EQ(z, cd(0));
}

TEST(CpuFftEngine, BadInputThroughEagerCalls) {
  runtime::Runtime rt = make_runtime(CpuFftEngine::create_default());
  runtime::EagerContext ctx = rt.on();
  Tensor c = random_tensor(DType::kComplex128, {4, 5}, 1);
  Tensor r = random_tensor(DType::kFloat32, {4, 5}, 2);
  EXPECT_EQ(fftn(ctx, c, {}, {0, -2}).status().code(), ErrorCode::kInvalidArgument);  // repeated
  EXPECT_EQ(fft(ctx, c, -1, 2).status().code(), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(fft(ctx, c, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rfft(ctx, c).status().code(), ErrorCode::kDTypeMismatch);
  // irfft and hfft take real input as complex with zero imaginary parts
  // (float32 as complex64, integers as complex128), as numpy and torch do.
  Result<Tensor> of_real = irfft(ctx, r);
  ASSERT_TRUE(of_real.ok()) << of_real.status().to_string();
  EXPECT_EQ(of_real->dtype(), DType::kFloat32);
  Result<Tensor> of_complex = irfft(ctx, *ctx.convert(r, DType::kComplex64));
  ASSERT_TRUE(of_complex.ok());
  EXPECT_EQ(values_of(*of_real), values_of(*of_complex));
  Result<Tensor> hermitian = hfft(ctx, *Tensor::from_values<std::int64_t>({1, 2, 3}, {3}));
  ASSERT_TRUE(hermitian.ok()) << hermitian.status().to_string();
  EXPECT_EQ(hermitian->dtype(), DType::kFloat64);
  EXPECT_EQ(values_of(*hermitian), (std::vector<cd>{8, -2, 0, -2}));  // numpy.fft.hfft([1, 2, 3])
  // An N-D transform of a 0-d tensor has no axis; the error names fftn.
  Result<Tensor> scalar = fftn(ctx, *Tensor::scalar<double>(2.0));
  EXPECT_EQ(scalar.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(scalar.status().to_string().find("fft.fftn"), std::string::npos) << scalar.status().to_string();
  // Integers are transformed as float64, as numpy does.
  Result<Tensor> of_ints = rfft(ctx, *Tensor::from_values<std::int32_t>({1, 2, 3, 4}, {4}));
  ASSERT_TRUE(of_ints.ok()) << of_ints.status().to_string();
  EXPECT_EQ(of_ints->dtype(), DType::kComplex128);
  EXPECT_EQ(values_of(*of_ints), (std::vector<cd>{{10, 0}, {-2, 2}, {-2, 0}}));
  EXPECT_EQ(irfft(ctx, random_tensor(DType::kComplex64, {3, 1}, 3)).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(fftn(ctx, c, {4, 4, 4}).status().code(), ErrorCode::kInvalidArgument);  // s longer than the rank
}

}  // namespace
}  // namespace tenferro::fft
