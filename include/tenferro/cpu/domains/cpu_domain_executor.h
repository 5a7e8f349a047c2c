// CpuDomainExecutor: the small interface between a CPU resource domain and
// the threads that run its work. tenferro's managed executor (one oneTBB
// arena per domain, pinned workers) implements it; in ExternalManaged mode
// the application implements it around its own pool.
//
// Note [Install and submit]
// install is the synchronous entry: the executor runs one job, on the calling
// thread or one of its workers, and returns when the job has finished. The
// job receives a ParallelContext over the executor's workers, which inner-
// parallel operations use for their one fan-out level. A CPU resource domain
// calls install once per session (any number of operations) or per
// standalone operation; never once per kernel.
// submit is the outer, asynchronous entry: the executor runs the task later
// on one of its threads. A task is a tenferro object that never throws and
// reports its own completion; an executor only has to call run() once, or
// drop the task, which completes it as cancelled.
// An executor does not know its domain's CPU set, NUMA node or thread
// budget: those belong to CpuResourceDomain. It advertises what it can
// guarantee in CpuExecutorCapabilities, read once when the domain is built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::cpu {

/// Who keeps the executor's threads on the domain's CPUs.
enum class CpuAffinityGuarantee : std::uint8_t {
  kPinnedByTenferro,  ///< managed: tenferro pins every thread that runs domain work to exactly the CPU set
  kDeclaredByOwner,   ///< external: the owner declares the CPU set; tenferro never re-pins and cannot verify
  kNone,              ///< external: no affinity claim at all
};
std::string_view to_string(CpuAffinityGuarantee guarantee) noexcept;

/// Who shuts the executor down and joins its threads.
enum class CpuShutdownOwner : std::uint8_t {
  kTenferro,       ///< the domain set that created it
  kExternalOwner,  ///< the application; tenferro only keeps its reference alive while jobs need it
};
std::string_view to_string(CpuShutdownOwner owner) noexcept;

/// What an executor guarantees, fixed for its lifetime.
struct CpuExecutorCapabilities {
  /// Most threads one installed job can use, the installing thread included (>= 1).
  int workers = 1;
  /// Whether submit() is implemented (install always is).
  bool supports_submit = false;
  /// Whether install's ParallelContext may use more than one thread.
  bool inner_parallelism = false;
  /// Whether install may be called from inside one of the executor's own jobs.
  /// tenferro never does so (it rejects nested entry); informational.
  bool reentrant_install = false;
  CpuAffinityGuarantee affinity = CpuAffinityGuarantee::kDeclaredByOwner;
  CpuShutdownOwner shutdown_owner = CpuShutdownOwner::kExternalOwner;
  /// For diagnostics, e.g. "oneTBB task_arena" or "app thread pool (4 workers)".
  std::string name;
};

/// A unit of submitted work. tenferro implements it; executors only run it.
class CpuTask {
 public:
  virtual ~CpuTask() = default;
  /// Runs the task; call at most once. Never throws.
  virtual void run() noexcept = 0;
};

/// A domain's executor. Implementations must be thread-safe: install and
/// submit may be called concurrently from several threads.
///
/// Lifetime (ExternalManaged): every domain that uses the executor and every
/// submitted task retains the shared_ptr the application registered, so the
/// last reference may be released on one of the executor's own threads right
/// after a task has run. A destructor must therefore not join the thread it
/// runs on.
class CpuDomainExecutor {
 public:
  virtual ~CpuDomainExecutor() = default;

  /// Read once, when a domain is built on this executor.
  virtual CpuExecutorCapabilities capabilities() const = 0;

  /// Runs `job` once and returns after it has finished; `workers` is valid
  /// only during the call. A failed status means the job did not run (for
  /// example, the pool is shutting down). The job never throws.
  virtual Status install(FunctionRef<void(const ParallelContext& workers)> job) = 0;

  /// Schedules `task` to run once, later, on one of the executor's threads,
  /// and returns without waiting. A failed status means the executor did not
  /// accept the task; dropping an accepted task without running it completes
  /// it as cancelled. kUnimplemented when supports_submit is false.
  virtual Status submit(std::shared_ptr<CpuTask> task) = 0;
};

}  // namespace tenferro::cpu
