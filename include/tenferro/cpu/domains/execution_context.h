// Entered CPU contexts: what an operation sees once its domain's executor
// has been entered, and the session that amortizes one entry over many
// operations.
//
// Note [Entered contexts only]
// A CpuExecutionContext exists only inside an entered executor, so the cost
// of entering is paid once per session, not per operation: CpuResourceDomain::
// enter() installs once and hands the body a CpuDomainSession; each
// operation derives its own context with session.context(mode), which costs
// a few stores and no executor entry. A submitted job receives a sequential
// context on the worker that runs it. Neither type can be copied, moved or
// built by a caller, so a context cannot outlive the entry that made it.
// Contexts expose domain facts and the ParallelMode chosen for the
// operation; they have no install, submit or mode-changing surface. Providers
// that compose other providers pass the context they were given on (direct
// delegation, no second entry); entering any domain again from inside an
// entered one is rejected with kReentryRejected (Note [Re-entry] in
// cpu_resource_domain.cpp).
#pragma once

#include <cstdint>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/parallel.h"

namespace tenferro::cpu {

class CpuResourceDomain;

/// The context of one operation running inside an entered domain. Borrowed:
/// valid only during the call that received it. Thread-safe to read; its
/// parallel() may be used by the thread that received it (and from inside
/// parallel_for chunks only as Note [One fan-out level] allows: nested loops
/// run inline).
class CpuExecutionContext {
 public:
  CpuExecutionContext(const CpuExecutionContext&) = delete;
  CpuExecutionContext& operator=(const CpuExecutionContext&) = delete;

  /// The selected domain: id, CPU set, NUMA node, memory pool.
  const CpuResourceDomain& domain() const noexcept { return *domain_; }
  CpuDomainId domain_id() const noexcept;
  /// The ParallelMode chosen for this operation.
  ParallelMode parallel_mode() const noexcept { return mode_; }
  /// The operation's one fan-out level: the domain's workers (at most its
  /// thread budget) for kInner and kOuter, the calling thread for kSequential.
  const ParallelContext& parallel() const noexcept { return *parallel_; }
  /// Always the calling thread: what kernels inside an outer job receive.
  const ParallelContext& sequential() const noexcept;
  /// parallel().max_threads().
  int max_threads() const noexcept { return parallel_->max_threads(); }

 private:
  friend class CpuDomainSession;
  friend class CpuResourceDomain;
  CpuExecutionContext(const CpuResourceDomain* domain, ParallelMode mode, const ParallelContext* parallel) noexcept
      : domain_(domain), mode_(mode), parallel_(parallel) {}

  const CpuResourceDomain* domain_;
  ParallelMode mode_;
  const ParallelContext* parallel_;
};

/// One entry into a domain's executor, shared by any number of operations.
/// Borrowed by the enter() body; used by the thread running that body.
class CpuDomainSession {
 public:
  CpuDomainSession(const CpuDomainSession&) = delete;
  CpuDomainSession& operator=(const CpuDomainSession&) = delete;

  const CpuResourceDomain& domain() const noexcept { return *domain_; }
  /// The context for one operation in `mode`; no executor entry.
  CpuExecutionContext context(ParallelMode mode) const noexcept;
  /// Contexts derived so far in this session.
  std::uint64_t operations() const noexcept { return operations_; }

 private:
  friend class CpuResourceDomain;
  CpuDomainSession(const CpuResourceDomain* domain, const ParallelContext* workers) noexcept
      : domain_(domain), workers_(workers) {}

  const CpuResourceDomain* domain_;
  const ParallelContext* workers_;
  mutable std::uint64_t operations_ = 0;
};

/// Outer work submitted to a domain (CpuResourceDomain::submit).
class CpuDomainJob {
 public:
  virtual ~CpuDomainJob() = default;
  /// Runs once on one of the domain's threads with a kSequential context.
  /// An exception is caught and reported to complete() as an error.
  virtual Status run(const CpuExecutionContext& context) = 0;
  /// Called exactly once for an accepted job: with run()'s status, or with
  /// kCancelled when the executor dropped the job without running it.
  virtual void complete(Status status) noexcept = 0;
};

}  // namespace tenferro::cpu
