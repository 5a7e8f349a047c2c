// CpuFftEngine: the runtime::ExtensionEngine of family "tenferro.fft" on a
// CPU engine, and cpu_extension_module(), the ExtensionModule any runtime
// installs it with.
//
// Note [FFT extension engine]
// prepare() answers NeedsSpecialization(concrete dims + layout class) for
// a polymorphic signature, resolves the transform against the concrete
// shape (FftOp::geometry) and decomposes it into one pass per axis, each a
// batched 1-D FftProblem over exact row-major strides that the provider
// plans into an FftKernel (FFTW plans are made here, never in run()):
//   fft/ifft     the input is staged into the output (pad/crop, real ->
//                complex, scale), then one in-place c2c pass per axis;
//   rfft/ihfft   the real input is staged into workspace, an r2c pass along
//                the last axis writes the output, c2c passes on the other
//                axes run in place (ihfft conjugates the result);
//   irfft/hfft   the input is staged into workspace (hfft conjugates),
//                c2c passes on the other axes run in place there, and a c2r
//                pass along the last axis writes the output.
// A pass along a strided axis runs in panels (Note [FFT panels] in
// src/fft_cpu/fft_plan.cpp): it gathers columns into workspace itself, so
// an r2c panel pass reads the input directly whatever its alignment, and a
// one-axis irfft along such an axis needs no staging copy either (c2c
// panel passes stay staged: measured faster).
// When the input already is what the first pass reads (row-major, the
// computed dtype, no padding or cropping, alignment the kernel accepts),
// fft/ifft/rfft/ihfft read it directly (an out-of-place first pass) and the
// normalisation is applied to the output afterwards. The plan (FftPlan, the
// PreparedKernel's ProviderPlan) holds the kernels; run() only copies,
// executes kernels and scales: no planning, and no allocation once the
// engine's workspace pool is warm.
//
// Note [FFT batch parallelism]
// Exactly one fan-out level (Note [One fan-out level] in cpu/parallel.h),
// chosen by the engine, never by the provider (both providers run each
// execute on the calling thread). Each pass's batch (the loops other than
// the transform axis) is split at prepare time into up to kMaxBlocks blocks
// along its largest loop, each of at least FftEngineOptions::grain_flops of
// estimated work and with block offsets that keep 64-byte alignment, and
// the provider plans a kernel for a block (and for the last, shorter one).
// In run(), with a context of more than one thread and more than one block,
// the blocks are spread with ParallelContext::parallel_for (kOuter: every
// kernel call is sequential); otherwise one kernel over the whole batch runs
// on the calling thread (kSequential). A single 1-D transform without a
// batch therefore runs on one thread. The staging copy and the final
// scaling are split over the same context. stats() counts the runs of each
// mode.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/fft/fft_op.h"
#include "tenferro/fft_cpu/fft_provider.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/spi/extension.h"

namespace tenferro::cpu {
class WorkspacePool;
}  // namespace tenferro::cpu

namespace tenferro::fft {

namespace internal {
class EnginePlanCache;
}  // namespace internal

struct FftEngineOptions {
  /// Smallest estimated work (flops, 5 n log2 n per complex transform) of
  /// one parallel block.
  double grain_flops = 2.0e5;
  /// Blocks a pass is split into at most.
  std::int64_t max_blocks = 64;
  /// Workspace bytes the engine keeps for reuse.
  std::size_t max_retained_workspace_bytes = std::size_t{256} << 20;
  /// Built plans (per op payload, dtype, shape and layout) kept for repeated
  /// prepares, least recently used evicted... Each holds its kernels.
  std::size_t max_cached_plans = 64;
  /// ... while their kernels' tables hold at most this many bytes (the
  /// newest plan is kept whatever its size; Note [FFT plan memory]).
  std::size_t max_cached_plan_bytes = kDefaultMaxCachedPlanBytes;
};

/// Run counters (relaxed snapshots).
struct FftEngineStats {
  std::uint64_t runs = 0;
  std::uint64_t sequential_runs = 0;  ///< every pass on the calling thread
  std::uint64_t outer_runs = 0;       ///< at least one pass split over the context's workers
  std::uint64_t direct_runs = 0;      ///< the first pass read the input directly
  std::uint64_t kernel_calls = 0;
  std::uint64_t panel_passes = 0;  ///< passes run in panels (Note [FFT panels] in src/fft_cpu/fft_plan.cpp)
  std::uint64_t workspace_allocations = 0;
  std::uint64_t workspace_reuses = 0;
  std::uint64_t plan_cache_hits = 0;  ///< prepares served by a cached plan
  std::uint64_t plan_cache_misses = 0;
  std::uint64_t plan_cache_evictions = 0;  ///< plans dropped to keep max_cached_plans or max_cached_plan_bytes
  std::size_t plan_cache_bytes = 0;        ///< table bytes of the cached plans' kernels
};

/// What prepare() decides for one transform and concrete input.
struct FftSelection {
  std::string provider;
  std::string passes;  ///< one line per pass: the FftProblem and its blocks
  std::size_t workspace_bytes = 0;
  double flops = 0.0;
};

/// See Notes [FFT extension engine] and [FFT batch parallelism].
/// Thread-safe.
class CpuFftEngine final : public runtime::ExtensionEngine {
 public:
  /// `provider` is retained. `fallback` (optional; sequential when null) is
  /// the parallelism used when the engine passes a runtime::NoExecutionContext.
  explicit CpuFftEngine(std::shared_ptr<const CpuFftProvider> provider, FftEngineOptions options = {},
                        std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);
  ~CpuFftEngine() override;

  /// The FFTW provider (FFTW_ESTIMATE plans).
  static std::shared_ptr<CpuFftEngine> create_default(FftEngineOptions options = {},
                                                      std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);

  std::string_view name() const noexcept override { return "cpu.fft"; }
  /// The provider's answer (the native provider: true; FFTW: false, its
  /// plans for a block and for a whole batch may differ in rounding).
  bool reproducible() const noexcept override { return provider_->reproducible(); }
  Result<runtime::PrepareCapability> prepare(const runtime::ExtensionSignature& signature) const override;
  Status run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const override;

  /// The plan prepare() makes for `op` on an input of `dtype` and `shape`
  /// (row-major), described. Errors as prepare().
  Result<FftSelection> select(const FftOp& op, DType dtype, IntArrayRef shape) const;
  /// select() as text.
  std::string explain(const FftOp& op, DType dtype, IntArrayRef shape) const;

  const CpuFftProvider& provider() const noexcept { return *provider_; }
  const FftEngineOptions& options() const noexcept { return options_; }
  FftEngineStats stats() const noexcept;
  /// Its plans (entries, hits, misses) and retained workspace (bytes).
  runtime::CacheUsage cache_usage() const noexcept;
  /// Drops its plans, the provider's cached kernels and idle workspace.
  void clear_caches() noexcept;

  struct Counters {
    std::atomic<std::uint64_t> runs{0}, sequential_runs{0}, outer_runs{0}, direct_runs{0}, kernel_calls{0},
        panel_passes{0};
  };

 private:
  std::shared_ptr<const CpuFftProvider> provider_;
  FftEngineOptions options_;
  std::shared_ptr<const cpu::ParallelContext> fallback_;
  cpu::SequentialContext sequential_;
  std::unique_ptr<cpu::WorkspacePool> pool_;
  std::unique_ptr<internal::EnginePlanCache> plans_;
  mutable Counters counters_;
};

/// The fft extension module for engine `engine`: one registration of family
/// kFftFamilyId backed by `fft` (retained).
runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuFftEngine> fft);

}  // namespace tenferro::fft
