// The prime-factor kernel of the FFTW provider: a transform of length
// n = p * m whose prime factor p lies in the range FFTW_ESTIMATE plans
// badly (Note [Medium prime factors] in prime_factor_kernel.cpp) runs as
// one Cooley-Tukey step: FFTW's m-point transforms, then twiddles and the
// p-point transforms done here, vectorised across the m columns.
#pragma once

#include <cstdint>
#include <memory>

#include "tenferro/fft_cpu/fft_provider.h"

namespace tenferro::fft::internal {

/// The smallest and largest prime factor the prime-factor kernel takes
/// (Note [Medium prime factors]).
inline constexpr std::int64_t kMinMediumPrime = 37;
inline constexpr std::int64_t kMaxMediumPrime = 89;

/// The largest prime factor p of `n` when it lies in [kMinMediumPrime,
/// kMaxMediumPrime] and n != p (a pure prime is left to FFTW), else 0.
std::int64_t medium_prime_factor(std::int64_t n) noexcept;

/// The c2c problem of the m-point stage for `problem` (length n = p * m):
/// p transforms of length m reading with stride p from a contiguous
/// n-point array and writing p contiguous rows of m. Sign: `problem`'s
/// (r2c: -1, c2r: +1).
FftProblem prime_factor_columns_problem(const FftProblem& problem, std::int64_t p);

/// The kernel for `problem` (any kind, strides and batch loops) with the
/// m-point stage `columns` (planned for prime_factor_columns_problem;
/// retained). Its workspace holds two n-point complex arrays and the
/// stage's workspace. Thread-safe execute().
Result<std::shared_ptr<const FftKernel>> make_prime_factor_kernel(const FftProblem& problem, std::int64_t p,
                                                                  std::shared_ptr<const FftKernel> columns);

}  // namespace tenferro::fft::internal
