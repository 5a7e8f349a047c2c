// Internal: tenferro's managed CpuDomainExecutor, one oneTBB task_arena per
// CPU resource domain with every thread that runs domain work pinned to the
// domain's exact CPU set (Note [Pinning] in managed_executor.cpp). oneTBB
// stays inside managed_executor.cpp (Note [ThreadSanitizer and oneTBB]).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "tenferro/cpu/domains/cpu_domain_executor.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/cpu/domains/cpu_set.h"

namespace tenferro::cpu::internal {

/// How parallel_for splits n iterations over at most `threads` workers with
/// chunks of at least `grain` iterations (except possibly the last): one
/// chunk per thread, like at::parallel_for.
struct ChunkPlan {
  std::int64_t chunks = 0;
  std::int64_t chunk_size = 0;
};
ChunkPlan plan_chunks(std::int64_t n, std::int64_t grain, int threads) noexcept;

struct ManagedExecutorOptions {
  CpuSet cpus;
  int thread_budget = 1;
  /// Pin threads (the topology describes this system).
  bool bind_threads = false;
  /// The domain is smaller than the process's allowed CPUs, so a thread that
  /// installs may run outside it and is pinned for the entry.
  bool pin_entering_threads = false;
  /// How long workers spin for the next loop after one ends (Note [Worker
  /// spin] in managed_executor.cpp).
  std::chrono::microseconds worker_spin{0};
  /// Where pinning is counted.
  std::shared_ptr<CpuResourceDomain::Counters> counters;
};

/// A new managed executor: an initialized arena of thread_budget slots.
std::shared_ptr<CpuDomainExecutor> make_managed_executor(ManagedExecutorOptions options);

}  // namespace tenferro::cpu::internal
