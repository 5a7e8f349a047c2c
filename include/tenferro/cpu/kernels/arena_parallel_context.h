// ArenaParallelContext: a ParallelContext over a private oneTBB task_arena,
// for kernel tests and benchmarks that need real threads. The engine's CPU
// resource domains provide the production contexts (pinned arenas); this one
// pins nothing and is not meant for engines.
#pragma once

#include <algorithm>
#include <cstdint>

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "tenferro/cpu/parallel.h"

namespace tenferro::cpu {

/// Splits parallel_for ranges into at most `threads` chunks of at least
/// `grain` elements and runs them in its own arena. Creates the arena (and
/// oneTBB may start its workers) at construction: only tests and benchmarks
/// own one. Thread-safe.
class ArenaParallelContext final : public ParallelContext {
 public:
  explicit ArenaParallelContext(int threads) : threads_(std::max(1, threads)), arena_(threads_) {}

  int max_threads() const noexcept override { return threads_; }

  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    const std::int64_t n = end - begin;
    if (n <= 0) return;
    const std::int64_t chunks = std::clamp<std::int64_t>(n / std::max<std::int64_t>(grain, 1), 1, threads_);
    if (chunks == 1) {
      body(begin, end);
      return;
    }
    arena_.execute([&] {
      oneapi::tbb::parallel_for(std::int64_t{0}, chunks,
                                [&](std::int64_t c) { body(begin + n * c / chunks, begin + n * (c + 1) / chunks); });
    });
  }

 private:
  int threads_;
  mutable oneapi::tbb::task_arena arena_;
};

}  // namespace tenferro::cpu
