// Internal: the per-thread facts CPU domains need on their entry paths:
// whether the thread is running domain work (re-entry detection, Note
// [Re-entry] in cpu_resource_domain.cpp), whether it is inside a fan-out
// (nested loops run inline, Note [One fan-out level]) and which CPU set it
// is pinned to (managed executors pin lazily, Note [Pinning] in
// managed_executor.cpp), plus thread-affinity calls.
//
// Note [The thread-local domain state]
// This is tenferro's only thread_local. It holds no configuration and no
// ownership, only what the current thread is doing; two runtimes in one
// process stay independent. It must be per thread because nested entry and
// nested fan-out are properties of the call stack, which may cross domains,
// runtimes and executors (a submitted job on a worker thread, a delegated
// install).
#pragma once

#include <cstdint>
#include <memory>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_set.h"

namespace tenferro::cpu {
class CpuTask;
}

namespace tenferro::cpu::internal {

struct ThreadDomainState {
  /// The domain whose work this thread is running, or null.
  const void* entered = nullptr;
  /// True inside a parallel_for chunk (or an inline loop body) of a domain.
  bool in_fanout = false;
  /// Id of the managed executor whose CPU set this thread is bound to, or 0.
  std::uint64_t pinned_to = 0;
};

/// The calling thread's state.
ThreadDomainState& this_thread_domain_state() noexcept;

/// Marks the calling thread as running `domain`'s work (and, optionally, a
/// fan-out chunk) for the scope; restores the previous marks afterwards.
class ScopedDomainWork {
 public:
  ScopedDomainWork(const void* domain, bool in_fanout) noexcept
      : state_(this_thread_domain_state()), entered_(state_.entered), in_fanout_(state_.in_fanout) {
    state_.entered = domain;
    state_.in_fanout = in_fanout;
  }
  ~ScopedDomainWork() {
    state_.entered = entered_;
    state_.in_fanout = in_fanout_;
  }
  ScopedDomainWork(const ScopedDomainWork&) = delete;
  ScopedDomainWork& operator=(const ScopedDomainWork&) = delete;

 private:
  ThreadDomainState& state_;
  const void* entered_;
  bool in_fanout_;
};

/// The calling thread's CPU affinity (sched_getaffinity of the thread).
Result<CpuSet> this_thread_affinity();
/// Binds the calling thread to exactly `cpus` (non-empty). kPlacementError
/// when the OS refuses (for example CPUs outside the cgroup).
Status bind_this_thread(const CpuSet& cpus);

/// Drops a reference to a submitted task from this (sanitizer-instrumented)
/// file. The managed executor calls it on its worker after running the task:
/// that file is compiled without ThreadSanitizer instrumentation (Note
/// [ThreadSanitizer and oneTBB] in managed_executor.cpp), so a reference
/// count decremented there is invisible to TSan, and a submitter that drops
/// the last reference and frees the task afterwards would be reported as
/// racing with the worker's reads in CpuTask::run.
void release_task(std::shared_ptr<CpuTask>& task) noexcept;

}  // namespace tenferro::cpu::internal
