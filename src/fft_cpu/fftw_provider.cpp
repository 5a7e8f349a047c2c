// The FFTW provider (Note [FFTW planner state] in fftw_provider.h): guru64
// plans over exact strides made under the provider's planner lock and
// cached, executed with the thread-safe new-array functions.
#include "tenferro/fft_cpu/fftw_provider.h"

#include <fftw3.h>

#include <algorithm>
#include <bit>
#include <complex>
#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include "fft_cpu/plan_cache.h"
#include "fft_cpu/prime_factor_kernel.h"

// The sanitizers' allocator interface (sanitizer/allocator_interface.h),
// null unless a sanitizer runtime is in the process (Note [FFTW plan bytes]).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes() __attribute__((weak));

namespace tenferro::fft {

namespace {

template <class R>
struct Fftw;

template <>
struct Fftw<double> {
  using Complex = fftw_complex;
  using Plan = fftw_plan;
  static Plan dft(int rank, const fftw_iodim64* dims, int howmany_rank, const fftw_iodim64* howmany, void* in,
                  void* out, int sign, unsigned flags) {
    return fftw_plan_guru64_dft(rank, dims, howmany_rank, howmany, static_cast<Complex*>(in),
                                static_cast<Complex*>(out), sign, flags);
  }
  static Plan r2c(int rank, const fftw_iodim64* dims, int howmany_rank, const fftw_iodim64* howmany, void* in,
                  void* out, unsigned flags) {
    return fftw_plan_guru64_dft_r2c(rank, dims, howmany_rank, howmany, static_cast<double*>(in),
                                    static_cast<Complex*>(out), flags);
  }
  static Plan c2r(int rank, const fftw_iodim64* dims, int howmany_rank, const fftw_iodim64* howmany, void* in,
                  void* out, unsigned flags) {
    return fftw_plan_guru64_dft_c2r(rank, dims, howmany_rank, howmany, static_cast<Complex*>(in),
                                    static_cast<double*>(out), flags);
  }
  static void execute(FftTransform t, Plan p, void* in, void* out) {
    switch (t) {
      case FftTransform::kC2C:
        fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        break;
      case FftTransform::kR2C:
        fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out));
        break;
      case FftTransform::kC2R:
        fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out));
        break;
    }
  }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
  static void* malloc(std::size_t bytes) { return fftw_malloc(bytes); }
  static void free(void* p) { fftw_free(p); }
  static int alignment_of(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
};

template <>
struct Fftw<float> {
  using Complex = fftwf_complex;
  using Plan = fftwf_plan;
  static Plan dft(int rank, const fftwf_iodim64* dims, int howmany_rank, const fftwf_iodim64* howmany, void* in,
                  void* out, int sign, unsigned flags) {
    return fftwf_plan_guru64_dft(rank, dims, howmany_rank, howmany, static_cast<Complex*>(in),
                                 static_cast<Complex*>(out), sign, flags);
  }
  static Plan r2c(int rank, const fftwf_iodim64* dims, int howmany_rank, const fftwf_iodim64* howmany, void* in,
                  void* out, unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(rank, dims, howmany_rank, howmany, static_cast<float*>(in),
                                     static_cast<Complex*>(out), flags);
  }
  static Plan c2r(int rank, const fftwf_iodim64* dims, int howmany_rank, const fftwf_iodim64* howmany, void* in,
                  void* out, unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(rank, dims, howmany_rank, howmany, static_cast<Complex*>(in),
                                     static_cast<float*>(out), flags);
  }
  static void execute(FftTransform t, Plan p, void* in, void* out) {
    switch (t) {
      case FftTransform::kC2C:
        fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        break;
      case FftTransform::kR2C:
        fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out));
        break;
      case FftTransform::kC2R:
        fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out));
        break;
    }
  }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
  static void* malloc(std::size_t bytes) { return fftwf_malloc(bytes); }
  static void free(void* p) { fftwf_free(p); }
  static int alignment_of(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
};

// Note [FFTW allocation failures]
// FFTW aborts the process when one of its own allocations fails
// (fftw_malloc_plain asserts): its planner's twiddle tables and some
// solvers' execution buffers are as large as the data, and FFTW has no
// hook to report the failure instead. Under an address-space limit
// (ulimit -v, common on HPC nodes) a large transform therefore killed the
// process where numpy raises MemoryError. Before planning a problem of at
// least kHeadroomFrom bytes, and before each execution of one, the
// provider allocates and frees as much as its larger array (a large
// malloc is an mmap that touches no page: microseconds, against
// milliseconds for the transform); when that fails the call is
// kResourceExhausted and FFTW is not entered. For a length with a large
// prime factor p, FFTW's Rader and Bluestein solvers work on convolutions
// of about 2p, padded, with several arrays of them: the peak address space
// of a prime-length complex128 transform (VmPeak in a fresh process,
// 2026-12-06, n from 2e6 to 1.7e7) was 10.0 to 10.3 times the data, against
// 3 times for powers of two (the output and the two planning arrays). The
// probe therefore adds 8 p complex values (working_bytes). It is a guard,
// not a proof, but no measured length escapes it.
constexpr std::size_t kHeadroomFrom = std::size_t{32} << 20;

std::int64_t largest_prime_factor(std::int64_t n) noexcept {
  std::int64_t largest = 1;
  for (std::int64_t f = 2; f <= n / f; ++f) {
    while (n % f == 0) {
      largest = f;
      n /= f;
    }
  }
  return n > 1 ? n : largest;
}

// The bytes the probe asks for: the larger array, and the prime solvers'
// working arrays for a prime factor beyond FFTW's codelets.
std::size_t working_bytes(std::size_t data_bytes, std::int64_t n, std::size_t complex_bytes) noexcept {
  const std::int64_t p = largest_prime_factor(n);
  return p <= 64 ? data_bytes : data_bytes + 8 * static_cast<std::size_t>(p) * complex_bytes;
}

Status reserve_headroom(std::size_t bytes, std::string_view name, ErrorStage stage) {
  if (bytes < kHeadroomFrom) return ok_status();
  void* probe = std::malloc(bytes);
  if (probe == nullptr) {
    return make_error(ErrorCode::kResourceExhausted, stage,
                      "fft provider {}: expected {} bytes of free memory for FFTW's working arrays (the transform's "
                      "larger array, and more for a large prime factor of its length), found the allocation failing "
                      "(an address-space limit or too little memory)",
                      name, bytes);
  }
  std::free(probe);
  return ok_status();
}

// One FFTW plan. Destroyed under the provider's planner lock.
template <class R>
class FftwKernel final : public FftKernel {
 public:
  using Plan = typename Fftw<R>::Plan;
  FftwKernel(Plan plan, FftTransform transform, bool aligned, int in_alignment, int out_alignment,
             std::shared_ptr<std::mutex> lock, std::size_t headroom, std::size_t table_bytes, std::string name)
      : plan_(plan),
        transform_(transform),
        aligned_(aligned),
        in_alignment_(in_alignment),
        out_alignment_(out_alignment),
        lock_(std::move(lock)),
        headroom_(headroom),
        table_bytes_(table_bytes),
        name_(std::move(name)) {}
  ~FftwKernel() override {
    std::lock_guard<std::mutex> guard(*lock_);
    Fftw<R>::destroy(plan_);
  }
  bool accepts(const void* in, const void* out) const noexcept override {
    if (!aligned_) return true;
    return Fftw<R>::alignment_of(const_cast<void*>(in)) == in_alignment_ &&
           Fftw<R>::alignment_of(const_cast<void*>(out)) == out_alignment_;
  }
  std::size_t table_bytes() const noexcept override { return table_bytes_; }
  Status execute(void* in, void* out, std::span<std::byte> /*workspace*/) const noexcept override {
    // Note [FFTW allocation failures]
    if (Status room = reserve_headroom(headroom_, name_, ErrorStage::kCompletion); !room.ok()) return room;
    Fftw<R>::execute(transform_, plan_, in, out);
    return ok_status();
  }

 private:
  Plan plan_;
  FftTransform transform_;
  bool aligned_;
  int in_alignment_;
  int out_alignment_;
  std::shared_ptr<std::mutex> lock_;
  std::size_t headroom_;  // bytes reserve_headroom checks before each execution
  std::size_t table_bytes_;
  std::string name_;
};

// Note [FFTW plan bytes]
// FFTW does not say how much memory a plan holds, and it varies from a few
// KB (a power of two: its twiddles are shared between plans) to 4 x 16 n
// bytes (a prime near 10^6: Rader's tables, 68 MB). A kernel's table_bytes
// (Note [FFT plan memory]) is therefore what the heap grew by while the
// planner made it (glibc's mallinfo2: in-use arena plus mmapped bytes),
// measured under the planner lock, at most 16 complex values per point plus
// 64 KB (Rader's tables of a prime near 10^6 took 4.2 per point); a plan
// that reuses shared twiddles counts nothing for them. Under a sanitizer,
// which replaces malloc (so mallinfo2 saw nothing:
// ProviderConformance.PlanCacheHasAByteBound failed under ASan), the
// sanitizer's own count of allocated bytes is read; it is looked up as a
// weak symbol, so a sanitized program linking a release build is measured
// too. Another thread allocating or freeing at the same
// moment skews the figure, within that clamp (it moves when the cache
// evicts and what cache_usage reports, never what a transform computes);
// without glibc or a sanitizer it is 0.
class HeapGrowth {
 public:
  HeapGrowth() : start_(in_use()) {}
  std::size_t bytes() const noexcept {
    const std::size_t now = in_use();
    return now > start_ ? now - start_ : 0;
  }

 private:
  static std::size_t in_use() noexcept {
    if (&__sanitizer_get_current_allocated_bytes != nullptr) return __sanitizer_get_current_allocated_bytes();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 m = ::mallinfo2();
    return m.uordblks + m.hblkhd;
#else
    return 0;
#endif
  }
  std::size_t start_;
};

// Elements one side of the problem addresses: 1 + sum (extent - 1) * stride.
std::int64_t span_elements(std::int64_t n, std::int64_t stride, std::span<const FftLoop> batch, bool input) {
  std::int64_t last = (n - 1) * stride;
  for (const FftLoop& l : batch) last += (l.n - 1) * (input ? l.in_stride : l.out_stride);
  return last + 1;
}

// Scratch arrays a plan is made on (FFTW_MEASURE overwrites them).
class PlanningArray {
 public:
  template <class R>
  static PlanningArray make(std::size_t bytes) {
    return PlanningArray(Fftw<R>::malloc(std::max<std::size_t>(bytes, 64)), &Fftw<R>::free);
  }
  PlanningArray(PlanningArray&& o) noexcept : data_(o.data_), free_(o.free_) { o.data_ = nullptr; }
  PlanningArray& operator=(PlanningArray&&) = delete;
  ~PlanningArray() {
    if (data_ != nullptr) free_(data_);
  }
  void* data() const noexcept { return data_; }

 private:
  PlanningArray(void* data, void (*free)(void*)) : data_(data), free_(free) {}
  void* data_;
  void (*free_)(void*);
};

template <class R>
Result<std::shared_ptr<const FftKernel>> make_kernel(const FftProblem& p, unsigned flags,
                                                     const std::shared_ptr<std::mutex>& lock, std::string_view name) {
  using C = std::complex<R>;
  const bool real_in = p.transform == FftTransform::kR2C;
  const bool real_out = p.transform == FftTransform::kC2R;
  const std::int64_t half = p.dim.n / 2 + 1;
  const std::int64_t in_n = p.transform == FftTransform::kC2R ? half : p.dim.n;
  const std::int64_t out_n = p.transform == FftTransform::kR2C ? half : p.dim.n;
  const std::size_t in_bytes =
      static_cast<std::size_t>(span_elements(in_n, p.dim.in_stride, p.batch, true)) * (real_in ? sizeof(R) : sizeof(C));
  const std::size_t out_bytes = static_cast<std::size_t>(span_elements(out_n, p.dim.out_stride, p.batch, false)) *
                                (real_out ? sizeof(R) : sizeof(C));
  PlanningArray in = PlanningArray::make<R>(p.in_place ? std::max(in_bytes, out_bytes) : in_bytes);
  PlanningArray out = PlanningArray::make<R>(p.in_place ? 0 : out_bytes);
  if (in.data() == nullptr || out.data() == nullptr) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kPrepare,
                      "fft provider {}: expected planning arrays of {} and {} bytes, found the allocation failing",
                      name, in_bytes, out_bytes);
  }
  // Note [FFTW allocation failures]
  const std::size_t headroom = working_bytes(std::max(in_bytes, out_bytes), p.dim.n, sizeof(C));
  TENFERRO_TRY(reserve_headroom(headroom, name, ErrorStage::kPrepare));
  void* out_ptr = p.in_place ? in.data() : out.data();
  fftw_iodim64 dim{p.dim.n, p.dim.in_stride, p.dim.out_stride};
  SmallVector<fftw_iodim64, 4> loops;
  for (const FftLoop& l : p.batch) loops.push_back(fftw_iodim64{l.n, l.in_stride, l.out_stride});
  const int howmany_rank = static_cast<int>(loops.size());
  typename Fftw<R>::Plan plan = nullptr;
  const HeapGrowth growth;  // Note [FFTW plan bytes]
  switch (p.transform) {
    case FftTransform::kC2C:
      plan = Fftw<R>::dft(1, &dim, howmany_rank, loops.data(), in.data(), out_ptr,
                          p.sign < 0 ? FFTW_FORWARD : FFTW_BACKWARD, flags);
      break;
    case FftTransform::kR2C:
      plan = Fftw<R>::r2c(1, &dim, howmany_rank, loops.data(), in.data(), out_ptr, flags);
      break;
    case FftTransform::kC2R:
      plan = Fftw<R>::c2r(1, &dim, howmany_rank, loops.data(), in.data(), out_ptr, flags | FFTW_DESTROY_INPUT);
      break;
  }
  if (plan == nullptr) return unsupported_fft_problem(name, p, "FFTW's planner found no plan");
  // Clamped (Note [FFTW plan bytes]): another thread's allocation during
  // planning is not the plan's.
  const std::size_t table_bytes =
      std::min(growth.bytes(), 16 * static_cast<std::size_t>(p.dim.n) * sizeof(C) + (std::size_t{64} << 10));
  return std::shared_ptr<const FftKernel>(std::make_shared<FftwKernel<R>>(
      plan, p.transform, p.aligned, Fftw<R>::alignment_of(in.data()), Fftw<R>::alignment_of(out_ptr), lock,
      headroom >= kHeadroomFrom ? headroom : 0, table_bytes, std::string(name)));
}

// Note [Batch size classes]
// FFTW plans a batched transform for its exact batch count (howmany), and
// planning costs more than small transforms do: in ESTIMATE mode each new
// batch count of 1000-point transforms cost about 0.7 ms of planning
// against 0.1 ms of work, so a workload whose batch varies (signals cut into
// a varying number of frames) planned on every call. plan() therefore
// splits the largest batch loop, of count c, into size classes: c = q * m +
// r with q the 64-byte alignment quantum of the loop's strides (so every
// part starts at the alignment the plans were made for) and r < q, one part
// of q * 2^b for each bit b of m and one of r. Each class is planned once
// (the plan cache keeps it) and a BatchClassesKernel runs the parts one
// after another at their offsets: a new batch count plans only the classes
// not seen yet (log2(c) at most), none once they are cached.
class BatchClassesKernel final : public FftKernel {
 public:
  struct Part {
    std::shared_ptr<const FftKernel> kernel;
    std::int64_t in_offset = 0;  // bytes
    std::int64_t out_offset = 0;
  };
  explicit BatchClassesKernel(SmallVector<Part, 8> parts) : parts_(std::move(parts)) {
    for (const Part& p : parts_) workspace_ = std::max(workspace_, p.kernel->workspace_bytes());
  }
  std::size_t workspace_bytes() const noexcept override { return workspace_; }
  std::size_t table_bytes() const noexcept override {
    std::size_t bytes = 0;
    for (const Part& p : parts_) bytes += p.kernel->table_bytes();
    return bytes;
  }
  bool accepts(const void* in, const void* out) const noexcept override {
    for (const Part& p : parts_) {
      if (!p.kernel->accepts(static_cast<const std::byte*>(in) + p.in_offset,
                             static_cast<const std::byte*>(out) + p.out_offset)) {
        return false;
      }
    }
    return true;
  }
  Status execute(void* in, void* out, std::span<std::byte> workspace) const noexcept override {
    for (const Part& p : parts_) {
      TENFERRO_TRY(p.kernel->execute(static_cast<std::byte*>(in) + p.in_offset,
                                     static_cast<std::byte*>(out) + p.out_offset, workspace));
    }
    return ok_status();
  }

 private:
  SmallVector<Part, 8> parts_;
  std::size_t workspace_ = 0;
};

}  // namespace

FftwFftProvider::FftwFftProvider(FftwProviderOptions options)
    : options_(options), planner_lock_(std::make_shared<std::mutex>()) {
  // Note [FFTW planner state]: FFTW's own lock around its process-global
  // planner, so providers of independent runtimes cannot race on it.
  fftw_make_planner_thread_safe();
  fftwf_make_planner_thread_safe();
  name_ = fmt::format("{} ({})", fftw_version, options_.mode == FftwPlannerMode::kEstimate ? "estimate" : "measure");
  capability_ = cpu::ProviderCapability{cpu::ThreadCountControl::kSequential, cpu::PlacementControl::kCallingThread,
                                        "FFTW without its threads library: every execute runs on the calling thread"};
  cache_ =
      std::make_unique<internal::FftPlanCache>(options_.max_cached_plans, options_.max_cached_bytes, planner_lock_);
}

FftwFftProvider::~FftwFftProvider() = default;

Result<std::shared_ptr<const FftKernel>> FftwFftProvider::plan_one(const FftProblem& problem) const {
  unsigned flags = options_.mode == FftwPlannerMode::kEstimate ? FFTW_ESTIMATE : FFTW_MEASURE;
  if (!problem.aligned) flags |= FFTW_UNALIGNED;
  // Note [Medium prime factors] (up to 2^20 points: the kernel's twiddles
  // hold n complex values).
  if (const std::int64_t p = internal::medium_prime_factor(problem.dim.n);
      p != 0 && options_.mode == FftwPlannerMode::kEstimate && problem.dim.n <= (std::int64_t{1} << 20)) {
    // The m-point stage first, outside the cache's lock (it is cached too);
    // none for a pure prime (Note [Grouped prime factors]) or a prime m the
    // kernel transforms itself (Note [Direct prime columns]).
    std::shared_ptr<const FftKernel> columns;
    if (problem.dim.n != p && !internal::prime_factor_direct_columns(problem, p)) {
      TENFERRO_ASSIGN_OR_RETURN(columns, plan_one(internal::prime_factor_columns_problem(problem, p)));
    }
    return cache_->get_or_create(problem, [&]() -> Result<std::shared_ptr<const FftKernel>> {
      return internal::make_prime_factor_kernel(problem, p, columns);
    });
  }
  return cache_->get_or_create(problem, [&]() -> Result<std::shared_ptr<const FftKernel>> {
    return problem.precision == DType::kFloat64 ? make_kernel<double>(problem, flags, planner_lock_, name_)
                                                : make_kernel<float>(problem, flags, planner_lock_, name_);
  });
}

Result<std::shared_ptr<const FftKernel>> FftwFftProvider::plan(const FftProblem& problem) const {
  if (problem.precision != DType::kFloat32 && problem.precision != DType::kFloat64) {
    return unsupported_fft_problem(name_, problem, "expected precision float32 or float64");
  }
  if (problem.dim.n < 1) return unsupported_fft_problem(name_, problem, "expected a length >= 1");
  if (problem.batch.empty()) return plan_one(problem);
  // Note [Batch size classes]
  std::size_t split = 0;
  for (std::size_t i = 1; i < problem.batch.size(); ++i)
    if (problem.batch[i].n > problem.batch[split].n) split = i;
  const FftLoop loop = problem.batch[split];
  const std::int64_t real = problem.precision == DType::kFloat64 ? 8 : 4;
  const std::int64_t in_bytes = loop.in_stride * (problem.transform == FftTransform::kR2C ? real : 2 * real);
  const std::int64_t out_bytes = loop.out_stride * (problem.transform == FftTransform::kC2R ? real : 2 * real);
  const std::int64_t q = problem.aligned ? alignment_quantum(in_bytes, out_bytes) : 1;
  const std::int64_t m = loop.n / q, r = loop.n % q;
  if (std::popcount(static_cast<std::uint64_t>(m)) + (r > 0 ? 1 : 0) <= 1) return plan_one(problem);
  SmallVector<BatchClassesKernel::Part, 8> parts;
  std::int64_t done = 0;
  const auto add = [&](std::int64_t count) -> Status {
    FftProblem part = problem;
    part.batch[split].n = count;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const FftKernel> kernel, plan_one(part));
    parts.push_back(BatchClassesKernel::Part{std::move(kernel), done * in_bytes, done * out_bytes});
    done += count;
    return ok_status();
  };
  for (int b = 63; b >= 0; --b) {
    if ((static_cast<std::uint64_t>(m) >> b) & 1u) TENFERRO_TRY(add(q << b));
  }
  if (r > 0) TENFERRO_TRY(add(r));
  return std::shared_ptr<const FftKernel>(std::make_shared<BatchClassesKernel>(std::move(parts)));
}

FftPlanCacheStats FftwFftProvider::cache_stats() const { return cache_->stats(); }

void FftwFftProvider::clear_cache() const { cache_->clear(); }

}  // namespace tenferro::fft
