// CpuFftProvider: what a CPU FFT library implements for the fft extension:
// one batched one-dimensional transform (complex-to-complex, real-to-complex
// or complex-to-real) over exact strides, prepared into an FftKernel at
// prepare time and executed many times.
//
// Note [FFT provider contract]
// The engine (CpuFftEngine) owns everything else: decomposing an N-D
// transform into one pass per axis, padding/cropping, dtype promotion,
// normalisation, conjugation (hfft/ihfft) and the split of a pass's batch
// over the domain's workers (Note [FFT batch parallelism] in cpu_engine.h).
//  - plan() runs at prepare time and may be slow (FFTW's planner); it
//    answers kUnsupported for a problem it does not implement (the only
//    answer that lets the engine try another provider) and never touches
//    caller data. Kernels for equal problems may be shared (a provider's
//    bounded cache); they are immutable.
//  - FftKernel::execute() is thread-safe (one kernel runs concurrently on
//    several workers, on disjoint data), allocates nothing beyond what the
//    library does internally (documented per provider), creates no
//    threads and runs on the calling thread. A complex-to-real kernel may
//    overwrite its input (the engine passes its own staging buffer).
//  - Units: every stride counts elements of the array it applies to (real
//    elements on the real side of r2c/c2r, complex elements otherwise).
//    Strides are >= 0 and the arrays of one call do not overlap unless
//    `in_place` (then in == out and the strides are equal).
// Implementations are immutable after construction (apart from internal,
// synchronised caches) and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::fft {

enum class FftTransform : std::uint8_t {
  kC2C,  ///< complex -> complex, sign -1 (forward) or +1 (backward)
  kR2C,  ///< n reals -> n/2+1 complex, sign -1
  kC2R,  ///< n/2+1 complex -> n reals, sign +1
};
std::string_view to_string(FftTransform transform) noexcept;

/// One loop of a batched transform (FFTW's iodim).
struct FftLoop {
  std::int64_t n = 1;
  std::int64_t in_stride = 0;
  std::int64_t out_stride = 0;

  friend bool operator==(const FftLoop&, const FftLoop&) = default;
};

/// One batched 1-D transform, value-free (what plan() sees). Regular value
/// type.
struct FftProblem {
  FftTransform transform = FftTransform::kC2C;
  DType precision = DType::kFloat64;  ///< kFloat32 or kFloat64
  int sign = -1;                      ///< c2c only: -1 forward, +1 backward
  FftLoop dim;                        ///< the transform: logical length n and strides
  SmallVector<FftLoop, 4> batch;      ///< independent transforms (any number, any order)
  bool in_place = false;
  /// The engine passes SIMD-aligned (64-byte) in/out pointers to every
  /// execute() of the kernel; false when it cannot promise that.
  bool aligned = true;

  std::int64_t howmany() const noexcept;
  /// "c2c-1 float64 n=16 [4x(16,16)] in-place".
  std::string to_string() const;
  friend bool operator==(const FftProblem&, const FftProblem&) = default;
};

/// A prepared transform (Note [FFT provider contract]). Immutable;
/// execute() is thread-safe.
class FftKernel {
 public:
  virtual ~FftKernel() = default;
  /// Workspace bytes one execute() needs (the engine lends a 64-byte aligned
  /// buffer of at least this size, one per concurrent call).
  virtual std::size_t workspace_bytes() const noexcept { return 0; }
  /// Bytes the kernel holds for its lifetime (twiddle tables, sub-plans):
  /// what the plan caches count against their byte bounds (Note [FFT plan
  /// memory] in src/fft_cpu/plan_cache.h). 0 when it holds only a few.
  virtual std::size_t table_bytes() const noexcept { return 0; }
  /// Whether execute() accepts these pointers (FFTW: the SIMD alignment the
  /// plan was made for). The engine checks before it calls.
  virtual bool accepts(const void* /*in*/, const void* /*out*/) const noexcept { return true; }
  /// Runs the transform from `in` to `out`. Never throws; allocates nothing
  /// beyond the library's own temporaries (Note [FFT provider contract]).
  virtual Status execute(void* in, void* out, std::span<std::byte> workspace) const noexcept = 0;
};

/// The default byte bound of the FFT plan caches (Note [FFT plan memory]
/// in src/fft_cpu/plan_cache.h).
inline constexpr std::size_t kDefaultMaxCachedPlanBytes = std::size_t{256} << 20;

/// Plan-cache counters of a provider (relaxed snapshot).
struct FftPlanCacheStats {
  std::size_t entries = 0;
  std::size_t capacity = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;  ///< kernels dropped to keep either bound
  std::size_t bytes = 0;        ///< table_bytes of the cached kernels
  std::size_t max_bytes = 0;
  /// table_bytes of every kernel the provider made that is still alive,
  /// cached or not (held by an engine's plans or a run in flight).
  std::size_t live_bytes = 0;
};

/// A CPU FFT provider (Note [FFT provider contract]). The base class is the
/// null skeleton: plan() answers kUnsupported for everything.
class CpuFftProvider {
 public:
  virtual ~CpuFftProvider() = default;
  /// For explain(): "fftw-3.3.10-sse2-avx (estimate)", "native (stockham + bluestein)".
  virtual std::string_view name() const noexcept = 0;
  /// Thread-count and placement capability, fixed at construction.
  virtual const cpu::ProviderCapability& capability() const noexcept = 0;
  /// Prepares `problem` (prepare time), or kUnsupported. The default:
  /// kUnsupported.
  virtual Result<std::shared_ptr<const FftKernel>> plan(const FftProblem& problem) const;
  /// True when a transform's result does not depend on how its batch is
  /// grouped into kernels (the engine's blocks and panels), so runs give the
  /// same bits at every thread count. The default: false.
  virtual bool reproducible() const noexcept { return false; }
  /// The provider's plan cache (zeros when it has none).
  virtual FftPlanCacheStats cache_stats() const { return {}; }
  /// Drops every cached plan not held by a prepared kernel.
  virtual void clear_cache() const {}
};

/// The null provider: a named skeleton that supports nothing.
std::shared_ptr<const CpuFftProvider> make_null_fft_provider();

/// The smallest count of a batch loop whose pointer advance, `in_bytes` and
/// `out_bytes` per step (stride times element size), keeps both arrays at
/// the 64-byte alignment the engine promises (FftProblem::aligned): blocks
/// of a pass and a provider's parts of one batch start at multiples of it.
std::int64_t alignment_quantum(std::int64_t in_bytes, std::int64_t out_bytes) noexcept;

/// kUnsupported naming the provider and the problem.
Error unsupported_fft_problem(std::string_view provider, const FftProblem& problem, std::string_view why);

}  // namespace tenferro::fft
