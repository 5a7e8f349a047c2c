// CpuResourceDomain: one CPU resource domain: its identity, exact CPU set, NUMA
// node, thread budget, executor, node-local memory pool (also the scratch
// owner), and the only ways in: enter (one install for a session of
// operations), run (a standalone operation) and submit (outer work). Domains
// are built by CpuDomainSet and shared through std::shared_ptr; a runtime may
// hold them by shared_ptr or by reference to its set.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_domain_executor.h"
#include "tenferro/cpu/domains/cpu_set.h"
#include "tenferro/cpu/domains/domain_spec.h"
#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/cpu/domains/memory_pool.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::cpu {

/// Managed (tenferro builds and pins the executor) or ExternalManaged (the
/// application supplies it).
enum class CpuDomainMode : std::uint8_t { kManaged, kExternal };
std::string_view to_string(CpuDomainMode mode) noexcept;

/// Counters of one domain since it was built (relaxed snapshots).
struct CpuDomainMetrics {
  std::uint64_t installs = 0;              ///< executor entries (enter + run)
  std::uint64_t submits = 0;               ///< jobs accepted by the executor
  std::uint64_t reentries_rejected = 0;    ///< nested entries refused with kReentryRejected
  std::uint64_t parallel_fanouts = 0;      ///< parallel_for calls spread over workers
  std::uint64_t parallel_inline = 0;       ///< parallel_for calls run inline (one chunk or nested)
  std::uint64_t worker_pins = 0;           ///< managed: threads pinned to the CPU set on first domain work
  std::uint64_t entering_thread_pins = 0;  ///< managed: installing threads pinned for one entry and restored
  std::uint64_t pin_failures = 0;          ///< managed: pinning calls the OS refused
  std::uint64_t worker_spins = 0;          ///< managed: workers kept spinning after a loop (Note [Worker spin])
  std::uint64_t spin_handoffs = 0;         ///< managed: spins that ended because new work arrived
};

/// What a domain guarantees and what it cannot verify, for `tenferro info`
/// and explain(). Value type.
struct CpuDomainReport {
  CpuDomainId id;
  CpuDomainMode mode = CpuDomainMode::kManaged;
  CpuSet cpus;
  std::optional<unsigned> numa_node;
  int thread_budget = 1;
  CpuPlacementMode placement = CpuPlacementMode::kStrict;
  CpuExecutorCapabilities executor;
  NumaMemoryPolicy memory_policy = NumaMemoryPolicy::kFirstTouch;
  /// Managed: how long workers spin for the next loop (CpuDomainSpec::worker_spin);
  /// zero for external domains.
  std::chrono::microseconds worker_spin{0};
  /// One line each: placement, affinity, fairness, shutdown owner; external
  /// domains say what tenferro cannot verify.
  std::vector<std::string> notes;
};

/// One CPU resource domain. Immutable facts; enter, run and submit are
/// thread-safe. Built only by CpuDomainSet.
class CpuResourceDomain : public std::enable_shared_from_this<CpuResourceDomain> {
 public:
  CpuResourceDomain(const CpuResourceDomain&) = delete;
  CpuResourceDomain& operator=(const CpuResourceDomain&) = delete;
  ~CpuResourceDomain();

  CpuDomainId id() const noexcept { return spec_.id; }
  CpuDomainMode mode() const noexcept { return mode_; }
  /// The exact CPUs (declared, for an external domain).
  const CpuSet& cpus() const noexcept { return spec_.cpus; }
  std::optional<unsigned> numa_node() const noexcept { return spec_.numa_node; }
  /// Most threads one operation may use (>= 1).
  int thread_budget() const noexcept { return spec_.thread_budget; }
  CpuPlacementMode placement() const noexcept { return spec_.placement; }
  /// True when cpus() is every CPU the process may use (known only with a
  /// topology; false otherwise).
  bool covers_allowed_cpus() const noexcept { return covers_allowed_cpus_; }
  const CpuExecutorCapabilities& executor_capabilities() const noexcept { return capabilities_; }
  /// The node-local pool for outputs and scratch placed in this domain.
  /// Storage allocated from it remembers this domain and returns here.
  const std::shared_ptr<CpuDomainMemoryPool>& memory() const noexcept { return memory_; }

  /// Enters the executor once and runs `body` with a session from which any
  /// number of operations derive their contexts (Note [Entered contexts
  /// only]). `body` runs on the calling thread or, when the executor
  /// delegates the entry, on one of its threads; enter returns after it.
  /// Returns body's status; kReentryRejected (stage kEnqueue) when the
  /// calling thread is already running domain work; an executor refusal with
  /// context added; kProviderContractError when an executor reports success
  /// without running the body; an exception thrown by body as kInternal (or
  /// kResourceExhausted for std::bad_alloc), stage kCompletion.
  Status enter(FunctionRef<Status(const CpuDomainSession&)> body) const;

  /// A standalone operation: one entry, one context in `mode`.
  Status run(ParallelMode mode, FunctionRef<Status(const CpuExecutionContext&)> operation) const;

  /// Outer work: runs `job` later on one of the domain's threads. The job,
  /// this domain and its executor stay alive until job->complete() has
  /// returned, whoever else drops them. kUnimplemented when the executor has
  /// no submit; kReentryRejected is not applied (submission does not enter).
  Status submit(std::shared_ptr<CpuDomainJob> job) const;

  /// The calling thread's loop context (stateless).
  const ParallelContext& sequential_context() const noexcept { return sequential_; }

  CpuDomainMetrics metrics() const noexcept;
  CpuDomainReport report() const;

  // -- Implementation only below (used by CpuDomainSet and the executors) --

  /// Relaxed counters shared with the executor and the entered contexts.
  struct Counters {
    std::atomic<std::uint64_t> installs{0};
    std::atomic<std::uint64_t> submits{0};
    std::atomic<std::uint64_t> reentries_rejected{0};
    std::atomic<std::uint64_t> parallel_fanouts{0};
    std::atomic<std::uint64_t> parallel_inline{0};
    std::atomic<std::uint64_t> worker_pins{0};
    std::atomic<std::uint64_t> entering_thread_pins{0};
    std::atomic<std::uint64_t> pin_failures{0};
    std::atomic<std::uint64_t> worker_spins{0};
    std::atomic<std::uint64_t> spin_handoffs{0};
  };

  /// `spec` must already be resolved (budget filled in, checks passed);
  /// `capabilities` are the executor's, read once by the caller.
  static std::shared_ptr<CpuResourceDomain> create(CpuDomainSpec spec, CpuDomainMode mode, bool covers_allowed_cpus,
                                                   std::shared_ptr<CpuDomainExecutor> executor,
                                                   CpuExecutorCapabilities capabilities,
                                                   std::shared_ptr<Counters> counters,
                                                   std::shared_ptr<CpuDomainMemoryPool> memory);

 private:
  CpuResourceDomain(CpuDomainSpec spec, CpuDomainMode mode, bool covers_allowed_cpus,
                    std::shared_ptr<CpuDomainExecutor> executor, CpuExecutorCapabilities capabilities,
                    std::shared_ptr<Counters> counters, std::shared_ptr<CpuDomainMemoryPool> memory);
  class SubmittedTask;
  Status reject_reentry() const;
  Status run_submitted(CpuDomainJob& job) const noexcept;

  CpuDomainSpec spec_;
  CpuDomainMode mode_;
  bool covers_allowed_cpus_;
  std::shared_ptr<CpuDomainExecutor> executor_;
  CpuExecutorCapabilities capabilities_;
  std::shared_ptr<Counters> counters_;
  std::shared_ptr<CpuDomainMemoryPool> memory_;
  SequentialContext sequential_;
};

}  // namespace tenferro::cpu
