// FftPlanCache: the bounded, least-recently-used cache of prepared kernels
// a provider owns (never a global), keyed by the whole FftProblem (kind,
// precision, sign, length, strides, batch loops, in-place, alignment).
// Building a missing kernel happens under the cache's mutex, which is also
// the provider's planner lock: plan creation is serialised per provider
// (Note [FFTW planner state] in fftw_provider.h). Evicted kernels are
// released after the mutex is dropped, because a kernel's destructor may
// take the same lock (fftw_destroy_plan). Thread-safe.
#pragma once

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

class FftPlanCache {
 public:
  using KernelRef = std::shared_ptr<const FftKernel>;

  /// `lock` is the provider's planner mutex (shared with its kernels).
  FftPlanCache(std::size_t capacity, std::shared_ptr<std::mutex> lock)
      : capacity_(capacity < 1 ? 1 : capacity), lock_(std::move(lock)) {}
  ~FftPlanCache() { clear(); }
  FftPlanCache(const FftPlanCache&) = delete;
  FftPlanCache& operator=(const FftPlanCache&) = delete;

  /// The cached kernel for `problem`, or the one `make` builds (called with
  /// the planner lock held; errors are returned and not cached).
  Result<KernelRef> get_or_create(const FftProblem& problem, FunctionRef<Result<KernelRef>()> make) {
    std::vector<KernelRef> evicted;  // destroyed after the lock is released
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
      TENFERRO_ASSIGN_OR_RETURN(KernelRef kernel, make());
      lru_.push_front(Entry{problem, h, kernel});
      index_.emplace(h, lru_.begin());
      while (lru_.size() > capacity_) {
        Entry& victim = lru_.back();
        auto vr = index_.equal_range(victim.hash);
        for (auto it = vr.first; it != vr.second; ++it) {
          if (it->second == std::prev(lru_.end())) {
            index_.erase(it);
            break;
          }
        }
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
    return s;
  }

  void clear() {
    std::list<Entry> dropped;
    {
      std::lock_guard<std::mutex> guard(*lock_);
      index_.clear();
      dropped.swap(lru_);
    }
  }

 private:
  struct Entry {
    FftProblem problem;
    std::uint64_t hash = 0;
    KernelRef kernel;
  };

  std::size_t capacity_;
  std::shared_ptr<std::mutex> lock_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_multimap<std::uint64_t, std::list<Entry>::iterator> index_;
  FftPlanCacheStats stats_;
};

}  // namespace tenferro::fft::internal
