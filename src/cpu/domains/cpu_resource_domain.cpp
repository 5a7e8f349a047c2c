// CPU resource domains: entry (enter/run), submission, the domain-level
// fan-out context and diagnostics.
//
// Note [Re-entry]
// Entering a domain from a thread that is already running domain work (an
// operation calling enter() or run() from inside its session, a parallel_for
// chunk, or a submitted job) is rejected with kReentryRejected before the
// executor is touched: nested entry would stack a second fan-out level and a
// second thread budget on the first. It is a typed error, never a crash or a
// deadlock. Trusted composition (one provider calling another) passes the
// CpuExecutionContext it received instead. The check reads the thread-local
// domain state (Note [The thread-local domain state] in thread_state.h), so it
// also catches entry into a different domain or runtime from inside an entered
// one.
#include "tenferro/cpu/domains/cpu_resource_domain.h"

#include <algorithm>

#include "cpu/domains/managed_executor.h"
#include "cpu/domains/thread_state.h"

namespace tenferro::cpu {
namespace {

// The fan-out level handed to inner/outer operations: enforces the thread
// budget (at most budget chunks reach the executor), marks chunk threads as
// running domain work, and runs nested or single-chunk loops inline.
class DomainFanout final : public ParallelContext {
 public:
  DomainFanout(const CpuResourceDomain* domain, const ParallelContext* workers, int threads,
               CpuResourceDomain::Counters* counters) noexcept
      : domain_(domain), workers_(workers), threads_(threads), counters_(counters) {}

  int max_threads() const noexcept override { return threads_; }

  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    const internal::ChunkPlan plan = internal::plan_chunks(end - begin, grain, threads_);
    if (plan.chunks == 0) return;
    if (plan.chunks == 1 || internal::this_thread_domain_state().in_fanout) {
      counters_->parallel_inline.fetch_add(1, std::memory_order_relaxed);
      internal::ScopedDomainWork work(domain_, /*in_fanout=*/true);
      body(begin, end);
      return;
    }
    counters_->parallel_fanouts.fetch_add(1, std::memory_order_relaxed);
    workers_->parallel_for(0, plan.chunks, 1, [&](std::int64_t first, std::int64_t last) {
      internal::ScopedDomainWork work(domain_, /*in_fanout=*/true);
      for (std::int64_t chunk = first; chunk < last; ++chunk) {
        const std::int64_t lo = begin + chunk * plan.chunk_size;
        body(lo, std::min(end, lo + plan.chunk_size));
      }
    });
  }

 private:
  const CpuResourceDomain* domain_;
  const ParallelContext* workers_;
  int threads_;
  CpuResourceDomain::Counters* counters_;
};

}  // namespace

// A submitted job with everything it needs retained (Note [Install and
// submit] in cpu_domain_executor.h): the domain, hence its executor.
class CpuResourceDomain::SubmittedTask final : public CpuTask {
 public:
  SubmittedTask(std::shared_ptr<const CpuResourceDomain> domain, std::shared_ptr<CpuDomainJob> job) noexcept
      : domain_(std::move(domain)), job_(std::move(job)) {}
  ~SubmittedTask() override {
    if (armed_ && !ran_.exchange(true)) {
      job_->complete(make_error(ErrorCode::kCancelled, ErrorStage::kCompletion,
                                "CPU domain {}: the executor dropped a submitted job without running it",
                                domain_->id()));
    }
  }
  void run() noexcept override {
    if (ran_.exchange(true)) return;
    job_->complete(domain_->run_submitted(*job_));
  }
  /// The executor refused the task: the caller reports the error instead.
  void disarm() noexcept { armed_ = false; }

 private:
  std::shared_ptr<const CpuResourceDomain> domain_;
  std::shared_ptr<CpuDomainJob> job_;
  std::atomic<bool> ran_{false};
  bool armed_ = true;
};

std::string_view to_string(CpuAffinityGuarantee guarantee) noexcept {
  switch (guarantee) {
    case CpuAffinityGuarantee::kPinnedByTenferro:
      return "pinned_by_tenferro";
    case CpuAffinityGuarantee::kDeclaredByOwner:
      return "declared_by_owner";
    case CpuAffinityGuarantee::kNone:
      break;
  }
  return "none";
}

std::string_view to_string(CpuShutdownOwner owner) noexcept {
  return owner == CpuShutdownOwner::kTenferro ? "tenferro" : "external_owner";
}

std::string_view to_string(CpuDomainMode mode) noexcept {
  return mode == CpuDomainMode::kManaged ? "managed" : "external";
}

std::shared_ptr<CpuResourceDomain> CpuResourceDomain::create(CpuDomainSpec spec, CpuDomainMode mode,
                                                             bool covers_allowed_cpus,
                                                             std::shared_ptr<CpuDomainExecutor> executor,
                                                             CpuExecutorCapabilities capabilities,
                                                             std::shared_ptr<Counters> counters,
                                                             std::shared_ptr<CpuDomainMemoryPool> memory) {
  return std::shared_ptr<CpuResourceDomain>(new CpuResourceDomain(std::move(spec), mode, covers_allowed_cpus,
                                                                  std::move(executor), std::move(capabilities),
                                                                  std::move(counters), std::move(memory)));
}

CpuResourceDomain::CpuResourceDomain(CpuDomainSpec spec, CpuDomainMode mode, bool covers_allowed_cpus,
                                     std::shared_ptr<CpuDomainExecutor> executor, CpuExecutorCapabilities capabilities,
                                     std::shared_ptr<Counters> counters, std::shared_ptr<CpuDomainMemoryPool> memory)
    : spec_(std::move(spec)),
      mode_(mode),
      covers_allowed_cpus_(covers_allowed_cpus),
      executor_(std::move(executor)),
      capabilities_(std::move(capabilities)),
      counters_(std::move(counters)),
      memory_(std::move(memory)) {}

CpuResourceDomain::~CpuResourceDomain() = default;

Status CpuResourceDomain::reject_reentry() const {
  counters_->reentries_rejected.fetch_add(1, std::memory_order_relaxed);
  const auto* inside = static_cast<const CpuResourceDomain*>(internal::this_thread_domain_state().entered);
  return make_error(ErrorCode::kReentryRejected, ErrorStage::kEnqueue,
                    "CPU domain {}: expected entry from a thread outside every CPU domain, found this thread already "
                    "running work of CPU domain {}; providers must reuse the CpuExecutionContext they were given "
                    "instead of entering a domain again",
                    id(), inside->id());
}

Status CpuResourceDomain::enter(FunctionRef<Status(const CpuDomainSession&)> body) const {
  if (internal::this_thread_domain_state().entered != nullptr) return reject_reentry();
  counters_->installs.fetch_add(1, std::memory_order_relaxed);
  Status result;
  Status entry;
  bool ran = false;
  try {
    entry = executor_->install([&](const ParallelContext& workers) {
      // The job may run on another thread than the caller (a delegated entry).
      ran = true;
      internal::ScopedDomainWork work(this, /*in_fanout=*/false);
      const int threads = std::max(1, std::min(spec_.thread_budget, workers.max_threads()));
      DomainFanout fanout(this, &workers, threads, counters_.get());
      CpuDomainSession session(this, &fanout);
      try {
        result = body(session);
      } catch (...) {
        result = status_from_current_exception(ErrorStage::kCompletion, "a CPU domain session");
      }
    });
  } catch (...) {
    entry = status_from_current_exception(ErrorStage::kEnqueue, "CpuDomainExecutor::install");
  }
  if (!entry.ok()) return entry.with_context(fmt::format("CPU domain {}: the executor refused the entry", id()));
  if (!ran) {
    return make_error(ErrorCode::kProviderContractError, ErrorStage::kEnqueue,
                      "CPU domain {}: executor '{}' reported a successful install without running the job", id(),
                      capabilities_.name);
  }
  return result;
}

Status CpuResourceDomain::run(ParallelMode mode, FunctionRef<Status(const CpuExecutionContext&)> operation) const {
  return enter([&](const CpuDomainSession& session) {
    const CpuExecutionContext context = session.context(mode);
    return operation(context);
  });
}

Status CpuResourceDomain::run_submitted(CpuDomainJob& job) const noexcept {
  internal::ScopedDomainWork work(this, /*in_fanout=*/false);
  const CpuExecutionContext context(this, ParallelMode::kSequential, &sequential_);
  try {
    return job.run(context);
  } catch (...) {
    return status_from_current_exception(ErrorStage::kCompletion, "CpuDomainJob::run");
  }
}

Status CpuResourceDomain::submit(std::shared_ptr<CpuDomainJob> job) const {
  if (job == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kEnqueue, "CPU domain {}: expected a job, found null",
                      id());
  }
  if (!capabilities_.supports_submit) {
    return make_error(ErrorCode::kUnimplemented, ErrorStage::kEnqueue,
                      "CPU domain {}: executor '{}' does not support submit (install only)", id(), capabilities_.name);
  }
  auto task = std::make_shared<SubmittedTask>(shared_from_this(), std::move(job));
  Status accepted;
  try {
    accepted = executor_->submit(task);
  } catch (...) {
    accepted = status_from_current_exception(ErrorStage::kEnqueue, "CpuDomainExecutor::submit");
  }
  if (!accepted.ok()) {
    task->disarm();
    return accepted.with_context(fmt::format("CPU domain {}: the executor refused a job", id()));
  }
  counters_->submits.fetch_add(1, std::memory_order_relaxed);
  return ok_status();
}

CpuDomainMetrics CpuResourceDomain::metrics() const noexcept {
  const auto load = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return CpuDomainMetrics{load(counters_->installs),
                          load(counters_->submits),
                          load(counters_->reentries_rejected),
                          load(counters_->parallel_fanouts),
                          load(counters_->parallel_inline),
                          load(counters_->worker_pins),
                          load(counters_->entering_thread_pins),
                          load(counters_->pin_failures),
                          load(counters_->worker_spins),
                          load(counters_->spin_handoffs)};
}

CpuExecutionContext CpuDomainSession::context(ParallelMode mode) const noexcept {
  ++operations_;
  return CpuExecutionContext(domain_, mode,
                             mode == ParallelMode::kSequential ? &domain_->sequential_context() : workers_);
}

CpuDomainId CpuExecutionContext::domain_id() const noexcept { return domain_->id(); }

const ParallelContext& CpuExecutionContext::sequential() const noexcept { return domain_->sequential_context(); }

CpuDomainReport CpuResourceDomain::report() const {
  CpuDomainReport r;
  r.id = id();
  r.mode = mode_;
  r.cpus = cpus();
  r.numa_node = numa_node();
  r.thread_budget = thread_budget();
  r.placement = placement();
  r.executor = capabilities_;
  r.memory_policy = memory_->policy();
  const bool managed = mode_ == CpuDomainMode::kManaged;
  if (managed && thread_budget() > 1) r.worker_spin = spec_.worker_spin;
  switch (capabilities_.affinity) {
    case CpuAffinityGuarantee::kPinnedByTenferro:
      r.notes.push_back(
          fmt::format("affinity: verified; tenferro pins every thread running this domain's work to "
                      "exactly CPUs {}",
                      cpus()));
      break;
    case CpuAffinityGuarantee::kDeclaredByOwner:
      r.notes.push_back(
          fmt::format("affinity: declared, not verified; the owner keeps its workers on CPUs {} and "
                      "tenferro never re-pins them",
                      cpus()));
      break;
    case CpuAffinityGuarantee::kNone:
      r.notes.push_back(managed ? "affinity: not enforced; the topology does not describe this system"
                                : "affinity: none claimed by the executor; CPU placement cannot be verified");
      break;
  }
  r.notes.push_back(fmt::format("placement: {} for providers{}", to_string(placement()),
                                covers_allowed_cpus_ ? " (the domain covers every allowed CPU)" : ""));
  r.notes.push_back(
      managed ? "fairness: oneTBB arena (submitted jobs are taken roughly in submission order; oneTBB does not "
                "guarantee FIFO, so no job may wait on a later one)"
              : "fairness: the owner's responsibility after submission; not verified by tenferro");
  r.notes.push_back(managed ? "shutdown: tenferro (the executor lives as long as its domain or a job needs it)"
                            : "shutdown: the external owner; tenferro only retains the executor while a domain or a "
                              "submitted job refers to it");
  if (!managed) {
    r.notes.push_back("oversubscription and external BLAS/OpenMP global state: the owner's responsibility");
  }
  r.notes.push_back(fmt::format("memory: {}{}", to_string(r.memory_policy),
                                numa_node() ? fmt::format(" on NUMA node {}", *numa_node()) : std::string()));
  return r;
}

}  // namespace tenferro::cpu
