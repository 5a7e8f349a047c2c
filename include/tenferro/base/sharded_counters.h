// Statistics counters that many threads bump on every call, without making
// the threads contend for one cache line.
//
// Note [Sharded counters]
// The per-call statistics of shared objects (the einsum executor's step
// counts, the native GEMM's path counts, the dot_general composite's call
// counts, the runtime's run metrics) were one std::atomic each. Two threads
// calling one runtime then wrote the same cache lines on every call: each
// relaxed fetch_add had to take the line from the other core. Two threads
// doing 8 x 8 products through one CpuEinsumExecutor got 0.91x the
// throughput of one (CPU time per call 160 -> 373 ns; perf: 28 % of the
// samples in the executor's counter adds, 22 % in the GEMM's), where one
// runtime per thread scaled 2x. Each counter set is therefore kept in
// kShards copies, each in its own 128-byte block (two cache lines: the
// adjacent-line prefetcher fetches pairs), and a call adds to the copy of
// the CPU it runs on (sched_getcpu: glibc reads it from the thread's rseq
// area). Two threads running at the same time are on different CPUs, so
// they write different lines; the adds stay atomic, so a thread moved to
// another CPU, or two CPUs sharing a copy on machines with more CPUs than
// copies, still count exactly. Reads sum the copies: they are for metrics
// and tests, not for the hot path.
#pragma once

#include <sched.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tenferro {

/// The copy of `shards` the calling thread's current CPU uses (0 when the
/// CPU is unknown). Threads running at the same time get different copies
/// on machines with at most `shards` CPUs.
inline std::size_t this_cpu_shard(std::size_t shards) noexcept {
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<std::size_t>(cpu) % shards;
}

/// N counters, indexed 0..N-1 (use an enum). Thread-safe; add() is
/// wait-free and writes only the calling CPU's copy.
template <std::size_t N>
class ShardedCounters {
 public:
  static constexpr std::size_t kShards = 32;

  /// This CPU's copy, to add several counters with one CPU lookup.
  class Local {
   public:
    void add(std::size_t counter, std::int64_t value) const noexcept {
      if (value != 0) (*values_)[counter].fetch_add(value, std::memory_order_relaxed);
    }

   private:
    friend class ShardedCounters;
    explicit Local(std::array<std::atomic<std::int64_t>, N>& values) noexcept : values_(&values) {}
    std::array<std::atomic<std::int64_t>, N>* values_;
  };

  Local local() noexcept { return Local(shards_[this_cpu_shard(kShards)].values); }
  void add(std::size_t counter, std::int64_t value) noexcept { local().add(counter, value); }
  /// The sum over the copies.
  std::int64_t load(std::size_t counter) const noexcept {
    std::int64_t sum = 0;
    for (const Shard& s : shards_) sum += s.values[counter].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(128) Shard {
    std::array<std::atomic<std::int64_t>, N> values{};
  };
  std::array<Shard, kShards> shards_{};
};

}  // namespace tenferro
