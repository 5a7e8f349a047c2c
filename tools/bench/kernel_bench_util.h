// Helpers shared by the kernel suites (`tenferro bench permute` and
// `tenferro bench elementwise`): interleaved timing of ours against a
// baseline, thread contexts, and a parallel memcpy baseline.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "bench/bench_report.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::bench {

/// Medians of ours and the baseline, measured alternately in one run.
struct Interleaved {
  Samples ours;
  Samples baseline;
};

/// Times `ours` and `baseline` alternately for `rounds` rounds; each sample
/// is the per-call time of a batch sized so that one batch takes about
/// `min_batch_seconds` (single calls for slow operations).
template <class Ours, class Baseline>
Interleaved time_interleaved(Ours&& ours, Baseline&& baseline, int rounds, double min_batch_seconds = 2e-3) {
  using Clock = std::chrono::steady_clock;
  auto time_batch = [](auto& fn, int batch) {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) fn();
    return std::chrono::duration<double>(Clock::now() - start).count() / batch;
  };
  // Warm up both (page faults, caches) and size the batch from the slower.
  const double once = std::max(time_batch(ours, 1), time_batch(baseline, 1));
  const int batch =
      once >= min_batch_seconds ? 1 : static_cast<int>(std::min(1e6, min_batch_seconds / std::max(once, 1e-9)));
  Interleaved r;
  for (int i = 0; i < rounds; ++i) {
    r.baseline.seconds.push_back(time_batch(baseline, batch));
    r.ours.seconds.push_back(time_batch(ours, batch));
  }
  return r;
}

/// A context with `threads` workers (a plain sequential one for 1).
inline std::unique_ptr<cpu::ParallelContext> make_context(int threads) {
  if (threads <= 1) return std::make_unique<cpu::SequentialContext>();
  return std::make_unique<cpu::ArenaParallelContext>(threads);
}

/// memcpy of `bytes`, split in equal chunks over `ctx`'s threads: the
/// bandwidth baseline for the same thread count.
inline void parallel_memcpy(void* dst, const void* src, std::size_t bytes, const cpu::ParallelContext& ctx) {
  const std::int64_t threads = ctx.max_threads();
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const auto n = static_cast<std::int64_t>(bytes);
  ctx.parallel_for(0, threads, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t c = b; c < e; ++c) {
      const std::int64_t lo = n * c / threads / 64 * 64;
      const std::int64_t hi = c + 1 == threads ? n : n * (c + 1) / threads / 64 * 64;
      std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, static_cast<std::size_t>(hi - lo));
    }
  });
}

}  // namespace tenferro::bench
