// FftwFftProvider: the FFTW 3 provider of the fft extension (double and
// single precision, libfftw3 / libfftw3f).
//
// Note [FFTW planner state]
// Plans are made at prepare time with FFTW's guru64 interface
// (fftw_plan_guru64_dft / _dft_r2c / _dft_c2r: one transform dimension with
// exact strides, the batch as howmany loops) and executed in run() with the
// new-array functions (fftw_execute_dft, _dft_r2c, _dft_c2r), which are
// thread-safe and plan nothing. (Some FFTW solvers, the buffered and
// indirect ones, take temporary buffers inside execute: on the stack when
// small, from malloc otherwise; a documented exception to the no-allocation
// rule, like Eigen's in linalg.) A plan is valid for arrays with the same
// SIMD alignment as the ones it was planned on: the provider plans on
// 64-byte aligned scratch arrays, and FftKernel::accepts() compares
// fftw_alignment_of() of the arrays at run time (a problem the engine marks
// unaligned is planned with FFTW_UNALIGNED).
// FFTW keeps process-global state that no object can own: the planner (its
// wisdom, the twiddle-factor cache, the solver registry) is shared by every
// plan in the process, and the planner and fftw_destroy_plan are not
// thread-safe. It is the one shared state of this component. It is guarded
// twice:
//  - each provider owns a planner mutex (shared with its kernels): plan
//    creation, plan destruction and its bounded plan cache happen under it;
//  - construction calls fftw_make_planner_thread_safe() (and the fftwf_
//    one), which installs FFTW's own lock around its planner and
//    destroy_plan, so two providers (two runtimes) in one process cannot
//    race on the shared planner either. That function comes from
//    libfftw3_threads; nothing else of it is used: fftw_init_threads and
//    fftw_plan_with_nthreads are never called, so FFTW never starts a
//    thread. Batches are split over the CPU domain's workers by the engine.
// Wisdom is neither imported nor exported (the default planner mode is
// FFTW_ESTIMATE, which needs none).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "tenferro/fft_cpu/fft_provider.h"

namespace tenferro::fft {

namespace internal {
class FftPlanCache;
}  // namespace internal

enum class FftwPlannerMode : std::uint8_t {
  kEstimate,  ///< FFTW_ESTIMATE: fast planning, heuristic plans (the default)
  kMeasure,   ///< FFTW_MEASURE: times candidate plans on scratch arrays at prepare
};

struct FftwProviderOptions {
  FftwPlannerMode mode = FftwPlannerMode::kEstimate;
  /// Plans kept in the provider's cache (least recently used evicted)...
  std::size_t max_cached_plans = 256;
  /// ... while their tables hold at most this many bytes (the newest is kept
  /// whatever its size; Note [FFT plan memory]).
  std::size_t max_cached_bytes = kDefaultMaxCachedPlanBytes;
};

/// See Note [FFTW planner state]. Sequential per call (kSequential,
/// kCallingThread). Thread-safe.
class FftwFftProvider final : public CpuFftProvider {
 public:
  explicit FftwFftProvider(FftwProviderOptions options = {});
  ~FftwFftProvider() override;

  std::string_view name() const noexcept override { return name_; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }
  Result<std::shared_ptr<const FftKernel>> plan(const FftProblem& problem) const override;
  FftPlanCacheStats cache_stats() const override;
  void clear_cache() const override;

  const FftwProviderOptions& options() const noexcept { return options_; }

 private:
  /// The cached kernel of `problem` as one FFTW plan.
  Result<std::shared_ptr<const FftKernel>> plan_one(const FftProblem& problem) const;

  FftwProviderOptions options_;
  std::string name_;
  cpu::ProviderCapability capability_;
  std::shared_ptr<std::mutex> planner_lock_;
  std::unique_ptr<internal::FftPlanCache> cache_;
};

}  // namespace tenferro::fft
