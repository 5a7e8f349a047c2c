// The FFT provider conformance suite, written once and run against every
// provider (FFTW, native): c2c in both directions, r2c and c2r, float32 and
// float64, lengths with small, odd, prime and Bluestein-sized factors,
// batches of several loops with arbitrary strides, in place and out of
// place, each transform checked against a naive O(n²) DFT. The null
// skeleton refuses everything (and an engine holding it reports the op as
// unsupported); the providers' plan caches are bounded and shared kernels
// outlive eviction.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "fft_cpu/fft_test_support.h"
#include "fft_cpu/prime_factor_kernel.h"
#include "testing/address_space.h"

namespace tenferro::fft {
namespace {

using namespace testing;

std::shared_ptr<const CpuFftProvider> provider_named(const std::string& name, std::size_t cache = 256,
                                                     std::size_t max_bytes = kDefaultMaxCachedPlanBytes) {
  if (name == "fftw") {
    FftwProviderOptions o;
    o.max_cached_plans = cache;
    o.max_cached_bytes = max_bytes;
    return std::make_shared<FftwFftProvider>(o);
  }
  return std::make_shared<NativeFftProvider>(cache, max_bytes);
}

// 64-byte aligned zeroed bytes.
struct Buffer {
  explicit Buffer(std::size_t bytes) : size((bytes + 63) / 64 * 64 + 64) {
    data = static_cast<std::byte*>(std::aligned_alloc(64, size));
    std::memset(data, 0, size);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data;
  std::size_t size;
};

std::int64_t span_of(std::int64_t n, std::int64_t stride, const SmallVector<FftLoop, 4>& batch, bool in) {
  std::int64_t last = (n - 1) * stride;
  for (const FftLoop& l : batch) last += (l.n - 1) * (in ? l.in_stride : l.out_stride);
  return last + 1;
}

// Runs `p` on random data and compares every transform with a naive DFT.
void check_problem(const CpuFftProvider& provider, const FftProblem& p, std::uint32_t seed) {
  SCOPED_TRACE(p.to_string());
  Result<std::shared_ptr<const FftKernel>> kernel = provider.plan(p);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const bool single = p.precision == DType::kFloat32;
  const std::size_t real_bytes = single ? 4 : 8, complex_bytes = 2 * real_bytes;
  const std::int64_t n = p.dim.n, half = n / 2 + 1;
  const bool real_in = p.transform == FftTransform::kR2C, real_out = p.transform == FftTransform::kC2R;
  const std::int64_t in_n = p.transform == FftTransform::kC2R ? half : n;
  const std::int64_t out_n = p.transform == FftTransform::kR2C ? half : n;
  const std::size_t in_bytes =
      static_cast<std::size_t>(span_of(in_n, p.dim.in_stride, p.batch, true)) * (real_in ? real_bytes : complex_bytes);
  const std::size_t out_bytes = static_cast<std::size_t>(span_of(out_n, p.dim.out_stride, p.batch, false)) *
                                (real_out ? real_bytes : complex_bytes);
  Buffer in(std::max(in_bytes, out_bytes)), out(out_bytes), ws((*kernel)->workspace_bytes());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto load = [&](const std::byte* base, std::int64_t index, bool real) -> cd {
    if (real)
      return single ? cd(reinterpret_cast<const float*>(base)[index], 0)
                    : cd(reinterpret_cast<const double*>(base)[index], 0);
    if (single) {
      const auto* c = reinterpret_cast<const std::complex<float>*>(base);
      return cd(c[index].real(), c[index].imag());
    }
    return reinterpret_cast<const cd*>(base)[index];
  };
  const auto store = [&](std::byte* base, std::int64_t index, bool real, cd v) {
    if (real) {
      if (single) {
        reinterpret_cast<float*>(base)[index] = static_cast<float>(v.real());
      } else {
        reinterpret_cast<double*>(base)[index] = v.real();
      }
    } else if (single) {
      reinterpret_cast<std::complex<float>*>(base)[index] = {static_cast<float>(v.real()),
                                                             static_cast<float>(v.imag())};
    } else {
      reinterpret_cast<cd*>(base)[index] = v;
    }
  };
  // Batch offsets (row-major over the loops).
  std::vector<std::pair<std::int64_t, std::int64_t>> offsets{{0, 0}};
  for (const FftLoop& l : p.batch) {
    std::vector<std::pair<std::int64_t, std::int64_t>> next;
    for (const auto& [i, o] : offsets)
      for (std::int64_t k = 0; k < l.n; ++k) next.emplace_back(i + k * l.in_stride, o + k * l.out_stride);
    offsets = std::move(next);
  }
  std::vector<std::vector<cd>> inputs;
  for (const auto& [io, oo] : offsets) {
    std::vector<cd> x(static_cast<std::size_t>(in_n));
    for (std::int64_t j = 0; j < in_n; ++j) {
      x[static_cast<std::size_t>(j)] = real_in ? cd(u(rng), 0) : cd(u(rng), u(rng));
      store(in.data, io + j * p.dim.in_stride, real_in, x[static_cast<std::size_t>(j)]);
    }
    inputs.push_back(std::move(x));
  }
  std::byte* dst = p.in_place ? in.data : out.data;
  ASSERT_TRUE((*kernel)->accepts(in.data, dst));
  ASSERT_TRUE((*kernel)->execute(in.data, dst, std::span<std::byte>(ws.data, ws.size)).ok());
  const int sign = p.transform == FftTransform::kC2C ? p.sign : (real_in ? -1 : +1);
  for (std::size_t b = 0; b < offsets.size(); ++b) {
    // The logical length-n input: c2r's is the Hermitian extension.
    std::vector<cd> x(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      if (!real_out) {
        x[static_cast<std::size_t>(j)] = inputs[b][static_cast<std::size_t>(j)];
      } else {
        x[static_cast<std::size_t>(j)] =
            j < half ? inputs[b][static_cast<std::size_t>(j)] : std::conj(inputs[b][static_cast<std::size_t>(n - j)]);
      }
    }
    std::vector<cd> want, got;
    for (std::int64_t k = 0; k < out_n; ++k) {
      cd acc = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        const double angle = sign * 2.0 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n);
        acc += x[static_cast<std::size_t>(j)] * cd(std::cos(angle), std::sin(angle));
      }
      want.push_back(real_out ? cd(acc.real(), 0) : acc);
      got.push_back(load(dst, offsets[b].second + k * p.dim.out_stride, real_out));
    }
    expect_close(got, want, single ? 1e-5 : 1e-12, fmt::format("batch element {}", b));
  }
}

// r2c and c2r of each length in `lengths`, `batch` contiguous transforms.
void check_real_batches(const CpuFftProvider& provider, DType precision, std::initializer_list<std::int64_t> lengths,
                        std::int64_t batch, std::uint32_t& seed) {
  for (FftTransform t : {FftTransform::kR2C, FftTransform::kC2R}) {
    for (std::int64_t n : lengths) {
      FftProblem r;
      r.transform = t;
      r.precision = precision;
      r.dim = {n, 1, 1};
      r.batch = {{batch, n, n}};
      check_problem(provider, r, seed++);
    }
  }
}

class ProviderConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(ProviderConformance, ComplexToComplex) {
  auto provider = provider_named(GetParam());
  std::uint32_t seed = 1;
  for (DType precision : {DType::kFloat64, DType::kFloat32}) {
    // 74, 159, 592: prime factors 37 and 53 (Note [Medium prime factors]).
    for (std::int64_t n : {1, 2, 3, 4, 5, 8, 12, 17, 30, 64, 67, 74, 97, 100, 128, 159, 243, 592}) {
      for (int sign : {-1, +1}) {
        FftProblem p;
        p.transform = FftTransform::kC2C;
        p.precision = precision;
        p.sign = sign;
        p.dim = {n, 1, 1};
        check_problem(*provider, p, seed++);
        // Batched, strided, out of place: [3][n] read with stride 2, written transposed.
        p.dim = {n, 2, 3};
        p.batch = {{3, 2 * n, 1}};
        check_problem(*provider, p, seed++);
        // In place over two loops.
        p.dim = {n, 4, 4};
        p.batch = {{2, 4 * n, 4 * n}, {4, 1, 1}};
        p.in_place = true;
        check_problem(*provider, p, seed++);
      }
    }
  }
}

TEST_P(ProviderConformance, RealToComplexAndBack) {
  auto provider = provider_named(GetParam());
  std::uint32_t seed = 100;
  for (DType precision : {DType::kFloat64, DType::kFloat32}) {
    // 111, 178, 666: prime factors 37 and 89 (Note [Medium prime factors]).
    for (std::int64_t n : {1, 2, 3, 4, 7, 8, 15, 16, 67, 100, 101, 111, 178, 666}) {
      for (FftTransform t : {FftTransform::kR2C, FftTransform::kC2R}) {
        FftProblem p;
        p.transform = t;
        p.precision = precision;
        p.dim = {n, 1, 1};
        check_problem(*provider, p, seed++);
        const std::int64_t half = n / 2 + 1;
        const std::int64_t in_len = t == FftTransform::kR2C ? n : half;
        const std::int64_t out_len = t == FftTransform::kR2C ? half : n;
        // A batch of 5 along a loop with its own strides: the transform axis outer.
        p.dim = {n, 5, 5};
        p.batch = {{5, 1, 1}};
        check_problem(*provider, p, seed++);
        p.dim = {n, 1, 1};
        p.batch = {{3, in_len + 2, out_len + 1}};
        check_problem(*provider, p, seed++);
      }
    }
  }
}

TEST_P(ProviderConformance, PlanCacheIsBoundedAndKernelsOutliveEviction) {
  auto provider = provider_named(GetParam(), 2);
  FftProblem p;
  p.dim = {16, 1, 1};
  auto first = provider->plan(p);
  ASSERT_TRUE(first.ok());
  auto again = provider->plan(p);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());  // shared from the cache
  FftPlanCacheStats s = provider->cache_stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  for (std::int64_t n : {17, 18, 19}) {
    FftProblem q = p;
    q.dim.n = n;
    ASSERT_TRUE(provider->plan(q).ok());
  }
  s = provider->cache_stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.capacity, 2u);
  EXPECT_EQ(s.evictions, 2u);
  check_problem(*provider, p, 7);  // replans (a miss) while `first` still holds the evicted kernel
  Buffer buf(1024), ws((*first)->workspace_bytes());
  EXPECT_TRUE((*first)->execute(buf.data, buf.data + 256, std::span<std::byte>(ws.data, ws.size)).ok());
  provider->clear_cache();
  EXPECT_EQ(provider->cache_stats().entries, 0u);
}

// Note [FFT plan memory]: a prime length's tables are large (Bluestein's or
// Rader's, about 2-7 x 16 n bytes), counted in table_bytes, the cache
// evicts to its byte bound keeping the newest kernel, and live_bytes
// follows every kernel still held, cached or not.
TEST_P(ProviderConformance, PlanCacheHasAByteBound) {
  constexpr std::int64_t kPrime = 100003;  // Bluestein (native) or Rader (FFTW)
  const std::size_t one = 16 * kPrime;     // bytes of one complex<double> signal
  auto provider = provider_named(GetParam(), 256, 4 * one);
  FftProblem p;
  p.dim = {kPrime, 1, 1};
  Result<std::shared_ptr<const FftKernel>> held = provider->plan(p);
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  const std::size_t table = (*held)->table_bytes();
  EXPECT_GE(table, one) << "a prime length's tables hold at least one signal's worth";
  FftPlanCacheStats s = provider->cache_stats();
  EXPECT_EQ(s.bytes, table);
  EXPECT_EQ(s.max_bytes, 4 * one);
  EXPECT_EQ(s.live_bytes, table);
  // Nine more prime lengths: the cache keeps what fits 4 signals' worth
  // (at least the newest), each eviction counted.
  std::int64_t made = 1;
  for (std::int64_t n : {100019, 100043, 100049, 100057, 100069, 100103, 100109, 100129, 100151}) {
    FftProblem q = p;
    q.dim.n = n;
    ASSERT_TRUE(provider->plan(q).ok());
    ++made;
    s = provider->cache_stats();
    EXPECT_GE(s.entries, 1u);
    if (s.entries > 1) {
      EXPECT_LE(s.bytes, s.max_bytes) << n;
    }
  }
  EXPECT_LT(s.entries, 10u);
  EXPECT_EQ(s.evictions, static_cast<std::uint64_t>(made) - s.entries);
  // The first kernel was evicted, but it is still held here, so it is live.
  EXPECT_GE(s.live_bytes, s.bytes + table);
  const std::size_t live = s.live_bytes;
  held = Error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "released");
  EXPECT_EQ(provider->cache_stats().live_bytes, live - table);
  provider->clear_cache();
  s = provider->cache_stats();
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.live_bytes, 0u);
  // A kernel larger than the whole bound is still cached, alone.
  auto tiny = provider_named(GetParam(), 256, 1);
  ASSERT_TRUE(tiny->plan(p).ok());
  ASSERT_TRUE(tiny->plan(p).ok());
  EXPECT_EQ(tiny->cache_stats().entries, 1u);
  EXPECT_EQ(tiny->cache_stats().hits, 1u);
}

TEST_P(ProviderConformance, UnsupportedPrecision) {
  auto provider = provider_named(GetParam());
  FftProblem p;
  p.precision = DType::kInt32;
  p.dim = {4, 1, 1};
  EXPECT_EQ(provider->plan(p).status().code(), ErrorCode::kUnsupported);
}

INSTANTIATE_TEST_SUITE_P(Providers, ProviderConformance, ::testing::Values("fftw", "native"),
                         [](const auto& info) { return info.param; });

TEST(FftwProvider, AlignmentIsPartOfThePlan) {
  FftwFftProvider provider;
  FftProblem p;
  p.precision = DType::kFloat32;
  p.dim = {64, 1, 1};
  auto aligned = provider.plan(p);
  p.aligned = false;
  auto unaligned = provider.plan(p);
  ASSERT_TRUE(aligned.ok() && unaligned.ok());
  EXPECT_NE(aligned->get(), unaligned->get());
  Buffer a(1024), b(1024);
  EXPECT_TRUE((*aligned)->accepts(a.data, b.data));
  EXPECT_FALSE((*aligned)->accepts(a.data + 8, b.data));  // off FFTW's SIMD alignment
  EXPECT_TRUE((*unaligned)->accepts(a.data + 8, b.data));
  check_problem(provider, p, 3);
}

// Note [Batch size classes]: every batch count of a loop is run from plans
// of the power-of-two classes (times the alignment quantum) plus one
// remainder, so counts 1..64 of a contiguous batch plan 7 kernels, not 64,
// and every count's result is right. A float32 r2c of n = 5 (20- and
// 24-byte strides: a quantum of 16 counts) checks parts at aligned offsets
// and the remainder.
TEST(FftwProvider, BatchCountsShareThePlansOfTheirSizeClasses) {
  FftwFftProvider provider;
  FftProblem p;
  p.dim = {12, 1, 1};
  for (std::int64_t count = 1; count <= 64; ++count) {
    p.batch = {FftLoop{count, 12, 12}};
    ASSERT_TRUE(provider.plan(p).ok());
  }
  EXPECT_EQ(provider.cache_stats().entries, 7u);  // 1, 2, 4, ..., 64
  for (std::int64_t count : {3, 37, 63}) {
    p.batch = {FftLoop{count, 12, 12}};
    check_problem(provider, p, static_cast<std::uint32_t>(count));
  }
  FftProblem r;
  r.transform = FftTransform::kR2C;
  r.precision = DType::kFloat32;
  r.dim = {5, 1, 1};
  for (std::int64_t count : {5, 16, 37, 70}) {
    r.batch = {FftLoop{count, 5, 3}};
    check_problem(provider, r, static_cast<std::uint32_t>(count));
  }
  // Two batch loops: the larger one is split.
  p.batch = {FftLoop{3, 12 * 11, 12 * 11}, FftLoop{11, 12, 12}};
  check_problem(provider, p, 11);
}

// Plans and runs an n-point complex128 transform under an address-space
// limit with room for the two planning arrays and `halves` / 2 more, beside
// its input and output: 0 when the plan is kResourceExhausted.
int transform_under_a_limit(std::int64_t n, std::size_t halves) {
  const std::size_t array = static_cast<std::size_t>(n) * 16;
  void* in = std::calloc(array, 1);  // an mmap of zero pages: no memory touched
  void* out = std::calloc(array, 1);
  if (in == nullptr || out == nullptr) return 4;
  if (!::tenferro::testing::limit_address_space(2 * array + halves * (array / 2))) return 3;
  FftwFftProvider provider;
  FftProblem p;
  p.dim = {n, 1, 1};
  const auto planned = provider.plan(p);
  if (planned.ok()) return (*planned)->execute(in, out, {}).ok() ? 1 : 5;
  return planned.status().code() == ErrorCode::kResourceExhausted ? 0 : 2;
}

// Note [FFTW allocation failures]: where the planning arrays fit but not
// FFTW's twiddle tables, the plan is kResourceExhausted; FFTW would abort
// the process (the death test sees an abort as a wrong exit): 2^26 points
// (1 GiB arrays) with room for half an array more. The prime 16777259
// (256 MiB arrays) with room for 2.5 arrays more: a probe of one array fits
// and FFTW plans, but its run needs about 7 arrays more.
TEST(FftwProvider, AllocationFailuresAreErrorsNotAborts) {
  if (::tenferro::testing::kSanitized) GTEST_SKIP() << "sanitizers reserve address space an RLIMIT_AS breaks";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(transform_under_a_limit(std::int64_t{1} << 26, 1)), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(std::_Exit(transform_under_a_limit(16777259, 5)), ::testing::ExitedWithCode(0), "");
}

// Note [Medium prime factors]: lengths whose largest prime factor is 37..89
// (and not the length itself) run as one Cooley-Tukey step whose p-point
// transforms are the provider's own; its kernel takes workspace (two
// n-point arrays), FFTW's plans take none. The measure-mode provider
// leaves them to FFTW_MEASURE.
TEST(FftwProvider, MediumPrimeFactorsRunAsOneCooleyTukeyStep) {
  EXPECT_EQ(internal::medium_prime_factor(592), 37);
  EXPECT_EQ(internal::medium_prime_factor(999), 37);
  EXPECT_EQ(internal::medium_prime_factor(848), 53);
  EXPECT_EQ(internal::medium_prime_factor(1998), 37);
  EXPECT_EQ(internal::medium_prime_factor(2624), 41);
  EXPECT_EQ(internal::medium_prime_factor(178), 89);
  EXPECT_EQ(internal::medium_prime_factor(1517), 41);  // 37 * 41
  EXPECT_EQ(internal::medium_prime_factor(255), 17);
  EXPECT_EQ(internal::medium_prime_factor(304), 19);
  EXPECT_EQ(internal::medium_prime_factor(184), 23);
  // Pure primes from 37 to 89 run as p one-point transforms (Note [Grouped
  // prime factors]).
  EXPECT_EQ(internal::medium_prime_factor(37), 37);
  EXPECT_EQ(internal::medium_prime_factor(89), 89);
  // Other pure primes, factors FFTW plans well (29, 31, 97 and up, codelets).
  for (std::int64_t n : {1, 2, 17, 23, 97, 1009, 496, 1552, 1024, 116, 155, 62, 240})
    EXPECT_EQ(internal::medium_prime_factor(n), 0) << n;
  FftwFftProvider provider;
  FftProblem p;
  p.dim = {592, 1, 1};
  p.batch = {{3, 592, 592}};
  auto medium = provider.plan(p);
  ASSERT_TRUE(medium.ok()) << medium.status().to_string();
  EXPECT_GE((*medium)->workspace_bytes(), 2u * 592u * 16u);
  p.dim.n = 1552;  // 16 * 97: FFTW's plan
  p.batch = {{3, 1552, 1552}};
  auto large = provider.plan(p);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ((*large)->workspace_bytes(), 0u);
  FftwFftProvider measuring(FftwProviderOptions{FftwPlannerMode::kMeasure});
  p.dim.n = 74;
  p.batch.clear();
  auto measured = measuring.plan(p);
  ASSERT_TRUE(measured.ok());
  EXPECT_EQ((*measured)->workspace_bytes(), 0u);
  // Both directions, both precisions, two medium factors (the m-point stage
  // of 1517 = 41 * 37 splits again), strided in place over two loops, and
  // the real kinds at an odd and an even length against the naive DFT.
  std::uint32_t seed = 500;
  for (DType precision : {DType::kFloat64, DType::kFloat32}) {
    for (int sign : {-1, +1}) {
      FftProblem c;
      c.precision = precision;
      c.sign = sign;
      c.dim = {1517, 1, 1};
      check_problem(provider, c, seed++);
      c.dim = {222, 4, 4};
      c.batch = {{2, 4 * 222, 4 * 222}, {4, 1, 1}};
      c.in_place = true;
      check_problem(provider, c, seed++);
    }
    for (const std::int64_t n : {255, 304, 184}) {  // the factors 17, 19, 23
      FftProblem c;
      c.precision = precision;
      c.dim = {n, 1, 1};
      c.batch = {{3, n, n}};
      check_problem(provider, c, seed++);
    }
    for (FftTransform t : {FftTransform::kR2C, FftTransform::kC2R}) {
      for (std::int64_t n : {999, 1998, 255, 272}) {
        FftProblem r;
        r.transform = t;
        r.precision = precision;
        r.dim = {n, 3, 3};
        r.batch = {{3, 1, 1}};
        check_problem(provider, r, seed++);
      }
    }
  }
}

// Note [Direct prime columns]: a length p * m whose m is a prime the kernel
// takes runs its m-point stage itself, so the provider caches one plan
// (the kernel) where it cached two (the kernel and FFTW's columns plan);
// both precisions and signs, groups, strided batches and the real kinds
// (578 = 2 * 17 * 17 r2c runs as 289 complex points; odd 289 paired)
// against the naive DFT.
TEST(FftwProvider, PrimeColumnsRunAsDirectTransforms) {
  FftProblem c;
  c.dim = {289, 1, 1};
  c.batch = {{8, 289, 289}};  // one batch size class (Note [Batch size classes]): one plan_one
  EXPECT_TRUE(internal::prime_factor_direct_columns(c, 17));
  for (const std::int64_t n : {323, 391, 529, 1369, 1517}) {
    c.dim.n = n;
    EXPECT_TRUE(internal::prime_factor_direct_columns(c, internal::medium_prime_factor(n))) << n;
  }
  for (const std::int64_t n : {255, 1156, 592, 848}) {  // m = 15, 68, 16, 16: FFTW's columns
    c.dim.n = n;
    EXPECT_FALSE(internal::prime_factor_direct_columns(c, internal::medium_prime_factor(n))) << n;
  }
  const auto plans_for = [](const FftProblem& problem) {
    FftwFftProvider provider;
    EXPECT_TRUE(provider.plan(problem).ok());
    return provider.cache_stats().entries;
  };
  c.dim = {289, 1, 1};
  EXPECT_EQ(plans_for(c), 1u);
  c.dim = {255, 1, 1};
  c.batch = {{8, 255, 255}};
  EXPECT_EQ(plans_for(c), 2u);  // the kernel and FFTW's 15-point columns
  FftwFftProvider provider;
  std::uint32_t seed = 1300;
  for (DType precision : {DType::kFloat64, DType::kFloat32}) {
    for (int sign : {-1, +1}) {
      for (const std::int64_t n : {289, 323, 1369}) {
        FftProblem d;
        d.precision = precision;
        d.sign = sign;
        d.dim = {n, 1, 1};
        d.batch = {{7, n, n}};  // groups of ceil(64 / m) and a smaller last one
        check_problem(provider, d, seed++);
      }
      FftProblem strided;  // interleaved: transform stride 3, batch stride 1, in place
      strided.precision = precision;
      strided.sign = sign;
      strided.dim = {391, 3, 3};
      strided.batch = {{3, 1, 1}};
      strided.in_place = true;
      check_problem(provider, strided, seed++);
    }
    check_real_batches(provider, precision, {578, 289}, 5, seed);
  }
}

// Note [Grouped prime factors]: transforms of a short m run in groups whose
// columns sit side by side; batches of several groups, a smaller last
// group, strided loops and the real kinds against the naive DFT.
TEST(FftwProvider, ShortPrimeFactorTransformsRunInGroups) {
  FftwFftProvider provider;
  FftProblem c;
  c.dim = {255, 1, 1};  // 17 * 15: groups of ceil(64 / 15) = 5
  c.batch = {{2, 7 * 255, 7 * 255}, {7, 255, 255}};
  EXPECT_EQ(internal::prime_factor_group(c, 17), 5);
  auto planned = provider.plan(c);
  ASSERT_TRUE(planned.ok()) << planned.status().to_string();
  EXPECT_GE((*planned)->workspace_bytes(), 2u * 5u * 255u * 16u);  // two arrays of a group
  FftProblem one = c;
  one.batch = {{1, 255, 255}};
  EXPECT_EQ(internal::prime_factor_group(one, 17), 1);
  FftProblem wide = c;
  wide.dim = {17 * 64, 1, 1};  // m = 64 columns: no group
  EXPECT_EQ(internal::prime_factor_group(wide, 17), 1);
  std::uint32_t seed = 900;
  for (DType precision : {DType::kFloat64, DType::kFloat32}) {
    for (int sign : {-1, +1}) {
      c.precision = precision;
      c.sign = sign;
      check_problem(provider, c, seed++);  // 14 transforms: 5 + 5 + 4
    }
    FftProblem strided;
    strided.precision = precision;
    strided.dim = {184, 11, 2};  // 23 * 8: groups of 8, read interleaved
    strided.batch = {{11, 1, 184 * 2}};
    check_problem(provider, strided, seed++);
    for (const std::int64_t n : {37, 89}) {  // pure primes (m = 1): a group of 64 and one of 6
      FftProblem pure;
      pure.precision = precision;
      pure.dim = {n, 1, 1};
      pure.batch = {{70, n, n}};
      check_problem(provider, pure, seed++);
    }
    // Note [Paired real transforms]: real transforms of odd n take one
    // complex slot per two (a group counts slots); the batch of 33 ends
    // with an unpaired one.
    FftProblem odd;
    odd.transform = FftTransform::kR2C;
    odd.dim = {255, 1, 1};
    odd.batch = {{2, 255, 128}};
    EXPECT_EQ(internal::prime_factor_group(odd, 17), 1);
    odd.batch = {{10, 255, 128}};
    EXPECT_EQ(internal::prime_factor_group(odd, 17), 5);
    // 2 * 17 points complex (m = 2), odd 255, 2 * 19, prime 53.
    check_real_batches(provider, precision, {68, 255, 76, 53}, 33, seed);
  }
}

TEST(FftwProvider, MeasureModePlansOnScratchArrays) {
  FftwProviderOptions options;
  options.mode = FftwPlannerMode::kMeasure;
  FftwFftProvider provider(options);
  EXPECT_NE(std::string(provider.name()).find("measure"), std::string::npos) << provider.name();
  FftProblem p;
  p.dim = {48, 3, 1};
  p.batch = {{3, 1, 48}};
  check_problem(provider, p, 41);  // planning overwrote only the provider's scratch arrays
  p.transform = FftTransform::kR2C;
  p.precision = DType::kFloat32;
  p.dim = {30, 1, 1};
  p.batch = {{2, 30, 16}};
  check_problem(provider, p, 42);
  p.transform = FftTransform::kC2R;
  p.dim = {31, 1, 1};
  p.batch = {{2, 16, 31}};
  check_problem(provider, p, 43);
}

// Note [FFTW planner state]: two providers (two runtimes) planning and
// destroying plans at the same time share FFTW's process-global planner;
// FFTW's own lock (fftw_make_planner_thread_safe) serialises them.
TEST(FftwProvider, ProvidersPlanConcurrently) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      FftwFftProvider provider(FftwProviderOptions{FftwPlannerMode::kEstimate, 4});  // small cache: evictions too
      for (std::int64_t n = 10 + t; n < 200; n += 2) {
        FftProblem p;
        p.precision = n % 2 == 0 ? DType::kFloat64 : DType::kFloat32;
        p.dim = {n, 1, 1};
        p.batch = {{3, n, n}};
        Result<std::shared_ptr<const FftKernel>> k = provider.plan(p);
        if (!k.ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  FftwFftProvider provider;
  FftProblem p;
  p.dim = {24, 1, 1};
  check_problem(provider, p, 9);
}

TEST(NullProvider, RefusesEverythingAndTheRuntimeReportsIt) {
  auto null = make_null_fft_provider();
  FftProblem p;
  p.dim = {8, 1, 1};
  EXPECT_EQ(null->plan(p).status().code(), ErrorCode::kUnsupported);
  runtime::Runtime rt = make_runtime(std::make_shared<CpuFftEngine>(null));
  runtime::EagerContext ctx = rt.on();
  Result<Tensor> y = fft::fft(ctx, random_tensor(DType::kComplex128, {8}, 1));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupportedExtension) << y.status().to_string();
}

}  // namespace
}  // namespace tenferro::fft
