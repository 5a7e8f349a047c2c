// NativeFftProvider: tenferro's own FFT, the second provider of the fft
// extension (and the reference the FFTW provider is checked against).
//
// Note [Native FFT algorithm]
// A complex transform of length n is a mixed-radix Stockham autosort FFT
// (radix 4, 2, 3 and a generic odd radix for every other factor up to
// kMaxDirectRadix), ping-ponging between two contiguous buffers, with
// twiddle tables computed in double precision at plan time. A length with a
// prime factor above kMaxDirectRadix uses Bluestein's algorithm: the chirp
// z-transform as a circular convolution of power-of-two length m >= 2n - 1,
// whose chirp spectrum is precomputed at plan time. Real transforms run the
// complex transform of the full length n: r2c keeps the first n/2+1
// outputs; c2r rebuilds the Hermitian spectrum (X[n-k] = conj(X[k])) and
// keeps the real part, which ignores the imaginary parts of X[0] and X[n/2]
// exactly as FFTW and numpy do. Each transform of a batch is gathered into
// a contiguous buffer of the engine-lent workspace, transformed and
// scattered, so any strides and in-place problems work. Runs on the calling
// thread (kSequential, kCallingThread); kernels are cached per problem in a
// bounded cache the provider owns.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "tenferro/fft_cpu/fft_provider.h"

namespace tenferro::fft {

namespace internal {
class FftPlanCache;
}  // namespace internal

/// The largest prime factor transformed directly (larger: Bluestein).
inline constexpr std::int64_t kMaxDirectRadix = 61;

/// See Note [Native FFT algorithm]. Thread-safe.
class NativeFftProvider final : public CpuFftProvider {
 public:
  /// Kernels kept in the provider's cache (least recently used evicted)
  /// while there are at most `max_cached_plans` of them and their tables
  /// hold at most `max_cached_bytes` (the newest is kept whatever its size).
  explicit NativeFftProvider(std::size_t max_cached_plans = 256,
                             std::size_t max_cached_bytes = kDefaultMaxCachedPlanBytes);
  ~NativeFftProvider() override;

  std::string_view name() const noexcept override { return "native (stockham + bluestein)"; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }
  Result<std::shared_ptr<const FftKernel>> plan(const FftProblem& problem) const override;
  /// Every transform of a batch runs the same code on its own copy.
  bool reproducible() const noexcept override { return true; }
  FftPlanCacheStats cache_stats() const override;
  void clear_cache() const override;

 private:
  cpu::ProviderCapability capability_;
  std::shared_ptr<std::mutex> lock_;
  std::unique_ptr<internal::FftPlanCache> cache_;
};

}  // namespace tenferro::fft
