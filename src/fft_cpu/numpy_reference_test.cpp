// Every fft kind against numpy.fft (TENFERRO_REFERENCE_PYTHON) on random
// cases, for both providers through the eager path: ranks 1-3, odd, prime
// (including lengths that take Bluestein in the native provider) and
// power-of-two extents, random subsets and orders of axes (negative ones
// too), padded and cropped lengths, every norm, float32/float64/complex
// inputs, row-major and strided views. hfft/ihfft over several axes are
// compared with scipy's definition written in numpy (irfftn of the
// conjugate / conjugate of rfftn with the norm swapped); one axis with
// numpy.fft.hfft / ihfft themselves.
#include <gtest/gtest.h>

#include <algorithm>

#include "fft_cpu/fft_test_support.h"

namespace tenferro::fft {
namespace {

using namespace testing;

struct Case {
  FftAttributes attributes;
  DType dtype = DType::kComplex128;
  Dims shape;
  bool strided = false;
  std::string expression;  // numpy, over input `x<i>`
};

std::string py_list(IntArrayRef v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string norm_str(FftNorm n) { return "'" + std::string(to_string(n)) + "'"; }

// The numpy expression for case `c` over input `x`.
std::string numpy_expression(const Case& c, const std::string& x) {
  const FftAttributes& a = c.attributes;
  const auto rank = static_cast<std::int64_t>(c.shape.size());
  Dims s;
  for (std::size_t i = 0; i < a.axes.size(); ++i) {
    const std::int64_t axis = a.axes[i] < 0 ? a.axes[i] + rank : a.axes[i];
    const std::int64_t given = a.lengths.empty() ? -1 : a.lengths[i];
    const bool halved = i + 1 == a.axes.size() && (a.kind == FftKind::kIrfft || a.kind == FftKind::kHfft);
    s.push_back(given != -1 ? given
                            : (halved ? 2 * (c.shape[static_cast<std::size_t>(axis)] - 1)
                                      : c.shape[static_cast<std::size_t>(axis)]));
  }
  const std::string args = "s=" + py_list(s) + ", axes=" + py_list(a.axes);
  const std::string norm = norm_str(a.norm), swapped_norm = norm_str(swapped(a.norm));
  const bool one = a.axes.size() == 1;
  const std::string one_args = "n=" + std::to_string(s[0]) + ", axis=" + std::to_string(a.axes[0]);
  switch (a.kind) {
    case FftKind::kFft:
      return "np.fft.fftn(" + x + ", " + args + ", norm=" + norm + ")";
    case FftKind::kIfft:
      return "np.fft.ifftn(" + x + ", " + args + ", norm=" + norm + ")";
    case FftKind::kRfft:
      return "np.fft.rfftn(" + x + ", " + args + ", norm=" + norm + ")";
    case FftKind::kIrfft:
      return "np.fft.irfftn(" + x + ", " + args + ", norm=" + norm + ")";
    case FftKind::kHfft:
      return one ? "np.fft.hfft(" + x + ", " + one_args + ", norm=" + norm + ")"
                 : "np.fft.irfftn(np.conj(" + x + "), " + args + ", norm=" + swapped_norm + ")";
    case FftKind::kIhfft:
      return one ? "np.fft.ihfft(" + x + ", " + one_args + ", norm=" + norm + ")"
                 : "np.conj(np.fft.rfftn(" + x + ", " + args + ", norm=" + swapped_norm + "))";
  }
  return "";
}

std::vector<Case> random_cases(std::uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const auto pick = [&](auto const& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]; };
  const auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const std::vector<std::int64_t> small = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17};
  const std::vector<std::int64_t> large = {31, 32, 45, 64, 67, 97, 100, 127, 128, 210, 243, 256};
  std::vector<Case> cases;
  while (static_cast<int>(cases.size()) < count) {
    Case c;
    FftAttributes& a = c.attributes;
    a.kind = static_cast<FftKind>(std::uniform_int_distribution<int>(0, 5)(rng));
    a.norm = static_cast<FftNorm>(std::uniform_int_distribution<int>(0, 2)(rng));
    const bool real_in = a.kind == FftKind::kRfft || a.kind == FftKind::kIhfft;
    const bool complex_in = a.kind == FftKind::kIrfft || a.kind == FftKind::kHfft;
    c.dtype = real_in ? pick(std::vector<DType>{DType::kFloat32, DType::kFloat64})
              : complex_in
                  ? pick(std::vector<DType>{DType::kComplex64, DType::kComplex128})
                  : pick(std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128});
    const int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < rank; ++d) c.shape.push_back(rank == 1 ? pick(chance(0.5) ? large : small) : pick(small));
    if (rank == 2 && chance(0.3)) c.shape[0] = pick(large);
    std::vector<std::int64_t> all(static_cast<std::size_t>(rank));
    for (int d = 0; d < rank; ++d) all[static_cast<std::size_t>(d)] = d;
    std::shuffle(all.begin(), all.end(), rng);
    const int naxes = std::uniform_int_distribution<int>(1, rank)(rng);
    for (int i = 0; i < naxes; ++i) {
      const std::int64_t axis = all[static_cast<std::size_t>(i)];
      a.axes.push_back(chance(0.3) ? axis - rank : axis);
    }
    if (chance(0.5)) {
      for (int i = 0; i < naxes; ++i) a.lengths.push_back(chance(0.4) ? -1 : pick(small) + (chance(0.3) ? 16 : 0));
    }
    // irfft/hfft's default last length 2(m-1) needs m >= 2.
    const std::int64_t last = a.axes.back() < 0 ? a.axes.back() + rank : a.axes.back();
    if (complex_in && (a.lengths.empty() || a.lengths.back() == -1) && c.shape[static_cast<std::size_t>(last)] < 2) {
      c.shape[static_cast<std::size_t>(last)] = 5;
    }
    c.strided = chance(0.4);
    cases.push_back(std::move(c));
  }
  return cases;
}

class NumpyReference : public ::testing::TestWithParam<std::string> {
 protected:
  std::shared_ptr<const CpuFftProvider> provider() const {
    if (GetParam() == "fftw") return std::make_shared<FftwFftProvider>();
    return std::make_shared<NativeFftProvider>();
  }
};

TEST_P(NumpyReference, RandomCasesMatchNumpy) {
  runtime::Runtime rt = make_runtime(std::make_shared<CpuFftEngine>(provider()));
  runtime::EagerContext ctx = rt.on();
  const std::vector<Case> cases = random_cases(GetParam() == "fftw" ? 7 : 11, 70);
  NumpyBatch np;
  std::vector<Tensor> got;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::uint32_t seed = static_cast<std::uint32_t>(1000 + i);
    Tensor x = c.strided ? strided_tensor(c.dtype, c.shape, seed) : random_tensor(c.dtype, c.shape, seed);
    const std::string name = "x" + std::to_string(i);
    np.input(name, x);
    np.result("r" + std::to_string(i), numpy_expression(c, name));
    Result<Tensor> y = transform(ctx, x, c.attributes);
    ASSERT_TRUE(y.ok()) << i << " " << FftOp::create(c.attributes).value()->describe() << " "
                        << shape_to_string(c.shape) << ": " << y.status().to_string();
    got.push_back(*y);
  }
  if (!np.run()) GTEST_SKIP() << "numpy (" << TENFERRO_REFERENCE_PYTHON << ") is not available";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string r = "r" + std::to_string(i);
    const std::string what = fmt::format("case {}: {} {} {}{}", i, (*FftOp::create(c.attributes))->describe(), c.dtype,
                                         shape_to_string(c.shape), c.strided ? " strided" : "");
    ASSERT_TRUE(np.has(r)) << what;
    EXPECT_EQ(Dims(got[i].shape()), np.shape(r)) << what;
    const bool single = real_dtype(c.dtype) == DType::kFloat32;
    expect_close(values_of(got[i]), np[r], single ? 2e-5 : 1e-12, what);
  }
}

TEST_P(NumpyReference, LargeOddAndPrimeLengths) {
  runtime::Runtime rt = make_runtime(std::make_shared<CpuFftEngine>(provider()));
  runtime::EagerContext ctx = rt.on();
  NumpyBatch np;
  std::vector<std::pair<std::string, Tensor>> got;
  const std::int64_t lengths[] = {1, 2, 3, 1009, 4096, 2310, 4099};  // 4099 is prime
  for (std::int64_t n : lengths) {
    Tensor x = random_tensor(DType::kComplex128, {n}, static_cast<std::uint32_t>(n));
    Tensor r = random_tensor(DType::kFloat64, {n}, static_cast<std::uint32_t>(n + 1));
    const std::string xs = "x" + std::to_string(n), rs = "y" + std::to_string(n);
    np.input(xs, x);
    np.input(rs, r);
    np.result("fft" + std::to_string(n), "np.fft.fft(" + xs + ")");
    np.result("ifft" + std::to_string(n), "np.fft.ifft(" + xs + ", norm='ortho')");
    np.result("rfft" + std::to_string(n), "np.fft.rfft(" + rs + ")");
    got.emplace_back("fft" + std::to_string(n), *fft(ctx, x));
    got.emplace_back("ifft" + std::to_string(n), *ifft(ctx, x, -1, -1, FftNorm::kOrtho));
    got.emplace_back("rfft" + std::to_string(n), *rfft(ctx, r));
    if (n >= 2) {
      np.result("irfft" + std::to_string(n), "np.fft.irfft(" + xs + ", n=" + std::to_string(n) + ")");
      got.emplace_back("irfft" + std::to_string(n), *irfft(ctx, x, n));
    }
  }
  if (!np.run()) GTEST_SKIP() << "numpy is not available";
  for (const auto& [name, t] : got) {
    ASSERT_TRUE(np.has(name)) << name;
    expect_close(values_of(t), np[name], 1e-11, name);
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, NumpyReference, ::testing::Values("fftw", "native"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tenferro::fft
