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

/// The prime factors the prime-factor kernel takes: 17, 19 and 23, and 37
/// to 89 (Note [Medium prime factors]; 29 and 31 FFTW plans well).
inline constexpr std::int64_t kMinMediumPrime = 37;
inline constexpr std::int64_t kMaxMediumPrime = 89;
constexpr bool prime_factor_kernel_takes(std::int64_t p) noexcept {
  return (p >= 17 && p <= 23) || (p >= kMinMediumPrime && p <= kMaxMediumPrime);
}

/// The largest prime factor p of `n` when prime_factor_kernel_takes(p),
/// else 0; a pure prime n = p from 37 on is taken (p one-point transforms,
/// Note [Grouped prime factors]), 17, 19 and 23 alone are left to FFTW.
std::int64_t medium_prime_factor(std::int64_t n) noexcept;

/// Whether the kernel runs the m-point stage of `problem` (complex length
/// p * m) itself, as direct m-point transforms (m a prime it takes; Note
/// [Direct prime columns]), so that the provider plans no FFTW columns
/// stage for it.
bool prime_factor_direct_columns(const FftProblem& problem, std::int64_t p) noexcept;

/// How many complex transforms the kernel runs together for `problem` (Note
/// [Grouped prime factors]): enough that the group's columns fill the
/// p-point step's vectors, 1 when one transform's m columns do. Real
/// transforms of odd n count two to a complex one (Note [Paired real
/// transforms]).
std::int64_t prime_factor_group(const FftProblem& problem, std::int64_t p) noexcept;

/// The c2c problem of the m-point stage for `problem` (length n = p * m)
/// and a group of g = prime_factor_group() transforms: for each transform
/// b < g of g contiguous n-point arrays, p transforms of length m reading
/// with stride p, into p rows of g * m (row r holds the g transforms' r-th
/// m-point results one after another). Sign: `problem`'s (r2c: -1, c2r:
/// +1).
FftProblem prime_factor_columns_problem(const FftProblem& problem, std::int64_t p);

/// The kernel for `problem` (any kind, strides and batch loops) with the
/// m-point stage `columns` (planned for prime_factor_columns_problem;
/// retained; null for a pure prime n = p, whose stage is a transpose, and
/// when prime_factor_direct_columns(problem, p), whose stage the kernel
/// runs). Its
/// workspace holds two arrays of a group's n-point complex transforms and
/// the stage's workspace. Thread-safe execute().
Result<std::shared_ptr<const FftKernel>> make_prime_factor_kernel(const FftProblem& problem, std::int64_t p,
                                                                  std::shared_ptr<const FftKernel> columns);

}  // namespace tenferro::fft::internal
