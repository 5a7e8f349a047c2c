// FftPlanCache: the bounded, least-recently-used cache of prepared kernels
// a provider owns (never a global), keyed by the whole FftProblem (kind,
// precision, sign, length, strides, batch loops, in-place, alignment).
// Building a missing kernel happens under the cache's mutex, which is also
// the provider's planner lock: plan creation is serialised per provider
// (Note [FFTW planner state] in fftw_provider.h). Evicted kernels are
// released after the mutex is dropped, because a kernel's destructor may
// take the same lock (fftw_destroy_plan). Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tenferro/base/function_ref.h"
#include "tenferro/fft_cpu/fft_provider.h"

namespace tenferro::fft::internal {

std::uint64_t hash_problem(const FftProblem& problem) noexcept;

// Note [FFT plan memory]
// A plan's tables can be far larger than its workspace: a native Bluestein
// kernel of a prime length near 10^6 holds about 100 MB (chirp, two
// spectra, the sub-plan's twiddles), FFTW's plan for it about 68 MB, while
// a power of two holds little (FFTW shares its twiddles between plans).
// So counting plans bounds nothing: 20 such lengths from Python kept 2 GB.
// Every cache of kernels or of plans built from them (this one, the
// engine's EnginePlanCache) therefore also has a byte bound, counted in
// FftKernel::table_bytes (exact for native kernels; for FFTW, what the
// planner allocated while it made the plan, Note [FFTW plan bytes]), and
// evicts least recently used entries until both bounds hold, keeping the
// newest entry whatever its size (a transform larger than the bound still
// runs; it is just the only one cached). The provider also counts the
// bytes of every kernel it made that is still alive (live_bytes), wherever
// it is held: the figure the engine reports as its cache memory.

class FftPlanCache {
 public:
  using KernelRef = std::shared_ptr<const FftKernel>;

  /// `lock` is the provider's planner mutex (shared with its kernels).
  FftPlanCache(std::size_t capacity, std::size_t max_bytes, std::shared_ptr<std::mutex> lock)
      : capacity_(capacity < 1 ? 1 : capacity),
        max_bytes_(max_bytes),
        lock_(std::move(lock)),
        live_bytes_(std::make_shared<std::atomic<std::size_t>>(0)) {}
  ~FftPlanCache() { clear(); }
  FftPlanCache(const FftPlanCache&) = delete;
  FftPlanCache& operator=(const FftPlanCache&) = delete;

  /// The cached kernel for `problem`, or the one `make` builds (called with
  /// the planner lock held; errors are returned and not cached).
  Result<KernelRef> get_or_create(const FftProblem& problem, FunctionRef<Result<KernelRef>()> make) {
    std::vector<KernelRef> evicted;  // destroyed after the lock is released
    // The new kernel, held here too until the call returns: if caching it
    // throws (an allocation under the lock), its last reference is not
    // dropped under the planner lock that its destructor takes.
    KernelRef made;
    Result<KernelRef> out = [&]() -> Result<KernelRef> {
      std::lock_guard<std::mutex> guard(*lock_);
      const std::uint64_t h = hash_problem(problem);
      auto range = index_.equal_range(h);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second->problem == problem) {
          lru_.splice(lru_.begin(), lru_, it->second);
          ++stats_.hits;
          return it->second->kernel;
        }
      }
      ++stats_.misses;
      TENFERRO_ASSIGN_OR_RETURN(made, make());
      KernelRef kernel = track(made);
      lru_.push_front(Entry{problem, h, kernel});
      index_.emplace(h, lru_.begin());
      bytes_ += kernel->table_bytes();
      while (lru_.size() > capacity_ || (bytes_ > max_bytes_ && lru_.size() > 1)) {
        Entry& victim = lru_.back();
        auto vr = index_.equal_range(victim.hash);
        for (auto it = vr.first; it != vr.second; ++it) {
          if (it->second == std::prev(lru_.end())) {
            index_.erase(it);
            break;
          }
        }
        bytes_ -= victim.kernel->table_bytes();
        evicted.push_back(std::move(victim.kernel));
        lru_.pop_back();
        ++stats_.evictions;
      }
      return kernel;
    }();
    evicted.clear();
    return out;
  }

  FftPlanCacheStats stats() const {
    std::lock_guard<std::mutex> guard(*lock_);
    FftPlanCacheStats s = stats_;
    s.entries = lru_.size();
    s.capacity = capacity_;
    s.bytes = bytes_;
    s.max_bytes = max_bytes_;
    s.live_bytes = live_bytes_->load(std::memory_order_relaxed);
    return s;
  }

  void clear() {
    std::list<Entry> dropped;
    {
      std::lock_guard<std::mutex> guard(*lock_);
      index_.clear();
      dropped.swap(lru_);
      bytes_ = 0;
    }
  }

 private:
  struct Entry {
    FftProblem problem;
    std::uint64_t hash = 0;
    KernelRef kernel;
  };

  // `kernel` as a reference that takes its table bytes off live_bytes_ when
  // the last holder drops it (the kernel itself is destroyed then, as
  // before).
  KernelRef track(KernelRef kernel) const {  // a copy: the caller keeps its reference
    const std::size_t bytes = kernel->table_bytes();
    live_bytes_->fetch_add(bytes, std::memory_order_relaxed);
    const FftKernel* raw = kernel.get();
    return KernelRef(raw, [owned = std::move(kernel), live = live_bytes_, bytes](const FftKernel*) mutable {
      live->fetch_sub(bytes, std::memory_order_relaxed);
      owned.reset();
    });
  }

  std::size_t capacity_;
  std::size_t max_bytes_;
  std::shared_ptr<std::mutex> lock_;
  std::shared_ptr<std::atomic<std::size_t>> live_bytes_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_multimap<std::uint64_t, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
  FftPlanCacheStats stats_;
};

}  // namespace tenferro::fft::internal
