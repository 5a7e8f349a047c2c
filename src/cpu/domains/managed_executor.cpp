// The managed executor: a oneTBB task_arena per domain, pinned threads.
//
// Note [Pinning]
// Every thread that runs a managed domain's work runs on exactly the
// domain's CPU set:
//  - oneTBB workers are shared by all arenas of the process, so a worker is
//    (re)bound when it starts a chunk or a task of this domain and is not
//    already bound to it (ThreadDomainState::pinned_to, one compare per
//    chunk; one pthread_setaffinity_np when it moves between domains). It
//    stays bound afterwards; the next domain to use it re-binds it.
//  - the thread that installs (the caller: Note [Entering the arena for
//    loops]) is bound for the duration of the entry when its current
//    affinity is not already inside the CPU set, and its affinity is
//    restored when the entry returns. When the domain covers every CPU the
//    process may use, every thread of the process already runs inside it
//    and no affinity call is made (the check is much cheaper than a
//    bind+restore pair; docs/performance_notes.md, "CPU resource domains").
// This replaces a task_scheduler_observer, whose callbacks cost time on
// every entry even when nothing needs pinning (oneTBB's own NUMA
// constraints bind to whole nodes, not exact CPU sets).
// Binding is skipped on an injected topology, where it would silently do
// nothing (or pin to CPUs of a machine we are not running on).
//
// Note [Arena slots]
// The arena has thread_budget slots. An installed job runs on the calling
// thread outside the arena, and enters it only for a loop that fans out
// (Note [Entering the arena for loops]). With a budget above one, one slot
// is reserved for that entering thread, so a loop never waits for a slot
// and runs on the caller plus at most budget-1 workers. A budget-one arena
// reserves nothing, so its single slot can also run submitted tasks (a
// reserved slot would leave them without a thread).
// oneTBB sizes its worker pool from the process mask (P-1 workers): on a
// 2-CPU machine submitted tasks of all domains share one worker. A process
// whose mask is one CPU -- an MPI rank bound to its core, as mpirun does by
// default -- has no workers at all: there the budget-one arena reserves
// its slot too, since asking oneTBB for a worker only made it print "TBB
// Warning: The number of workers is currently limited to 0" on every rank,
// and no worker would come either way.
//
// Note [Worker spin]
// oneTBB's workers leave an arena as soon as it runs out of work and soon
// sleep. On a VM, an idle vCPU is halted by the host, and waking it again
// took 0.1-4 ms here (2-vCPU AMD EPYC VM, docs/performance_notes.md,
// "Worker spin"): after 20 ms or more without domain work, the worker
// reached a 2-chunk loop of 0.5-0.8 ms only after the caller had run both
// chunks, in five of the first six back-to-back loops after 150 ms idle,
// because each late worker found nothing to do, left, and slept again (one
// likely reason why 2-thread cgemm of n = 256 ran at about one thread's
// speed in some `tenferro bench gemm` runs). OpenBLAS
// (about 0.1 s) and OpenMP runtimes (KMP_BLOCKTIME, GOMP_SPINCOUNT) keep
// their threads spinning after a parallel region for the same reason.
// So after a loop that fanned out, the caller enqueues one spin task per
// worker (CpuDomainSpec::worker_spin long; none while earlier ones are
// queued or spinning, so at most one enqueue per loop the workers joined):
// a worker that takes it stays in the arena, pinned, polling the
// executor's activity count, and returns to oneTBB's dispatch the moment
// a new loop or submitted task bumps that count, or when the time is up.
// A spin task never holds up work: it ends on the first bump after it was
// queued (a stale one ends at once), and a thread inside install() (the
// caller, which may pick queued tasks while it waits for a loop's chunks)
// drops it. The executor's destructor stops spinning workers and waits (at
// most 200 ms) until every queued spin task has run: a task still queued
// when the arena went was never run nor destroyed, and its state (with the
// pin target and the domain's counters) leaked -- LeakSanitizer reported
// it at exit in 23 of 40 repeats of a test creating a two-thread runtime
// under load (2026-12-04). A spin yields the CPU every few microseconds to
// any other runnable thread.
// Domains that never fan out (budget one, MPI ranks bound to one core)
// never spin. Counted in CpuDomainMetrics::worker_spins / spin_handoffs.
//
// Note [Entering the arena for loops]
// install() used to run the whole job inside the arena
// (task_arena::execute), which cost every eager call the entry and exit of
// oneTBB's arena (8 % of the samples of a 2 x 2 linalg.det loop, perf,
// 2026-12-06) although a small call never fans out. The job now runs
// directly on the caller, pinned as before (Note [Pinning]), and
// ArenaContext::parallel_for enters the arena for the loops that fan out
// (the spin tasks it arms are queued inside that entry, so they go to this
// arena). A budget-one domain never fans out, so its jobs never enter the
// arena at all; several threads calling one domain run their jobs at once
// on their own threads, as they did inside the arena. Submitted jobs still
// run on the arena's threads. An empty entry costs 17 ns instead of 46-76,
// a 2 x 2 eager call 45-60 ns less; a loop that fans out pays the arena's
// entry instead (about 40 ns on loops worth fanning out); large
// contractions are unchanged (docs/performance_notes.md, CPU resource
// domains).
//
// Note [ThreadSanitizer and oneTBB]
// oneTBB's library is not instrumented, so TSan cannot see the
// synchronisation of its task hand-off and join, and it reports the task
// code oneTBB inlines from its headers as racing. This file is the only one
// that includes oneTBB; the TSan build compiles it without instrumentation
// (src/cpu/domains/sources.cmake), and each hand-off tenferro relies on
// (entry, loop chunks, submitted tasks) is annotated with __tsan_release
// before it and __tsan_acquire on the receiving thread before any
// instrumented code runs. Everything the hand-offs call (domain contexts,
// kernels, jobs, tests) stays instrumented and checked.
#include "cpu/domains/managed_executor.h"

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "cpu/domains/thread_state.h"

// Set by sources.cmake in ThreadSanitizer builds, where this file itself is
// compiled without instrumentation (so __has_feature cannot tell).
#ifdef TENFERRO_TSAN_ANNOTATIONS
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define TENFERRO_TSAN_ACQUIRE(p) __tsan_acquire(const_cast<void*>(static_cast<const void*>(p)))
#define TENFERRO_TSAN_RELEASE(p) __tsan_release(const_cast<void*>(static_cast<const void*>(p)))
#else
#define TENFERRO_TSAN_ACQUIRE(p) static_cast<void>(0)
#define TENFERRO_TSAN_RELEASE(p) static_cast<void>(0)
#endif

namespace tenferro::cpu::internal {
namespace {
// The receiving end of a hand-off: releases when the scope ends, also by an
// exception (a throwing loop chunk, which oneTBB rethrows on the caller).
struct TsanReleaseAtExit {
  const void* address;
  ~TsanReleaseAtExit() { TENFERRO_TSAN_RELEASE(address); }
};
// The caller's end: acquires what every receiver released, also when oneTBB
// rethrows.
struct TsanAcquireAtExit {
  const void* address;
  ~TsanAcquireAtExit() { TENFERRO_TSAN_ACQUIRE(address); }
};

// Where the threads of one executor must run. Shared with queued tasks so
// that they can pin their worker even after the executor is gone.
struct PinTarget {
  std::uint64_t id = 0;  // process-unique, never 0
  CpuSet cpus;
  bool enabled = false;  // false on an injected topology (binding would not act)
  std::shared_ptr<CpuResourceDomain::Counters> counters;

  // Binds the calling worker thread to `cpus` unless it is already confined
  // to them; it stays bound until another executor re-binds it.
  void confine_worker() const noexcept;
};

// Note [Worker spin]: shared with the queued spin tasks, which may outlive
// the executor.
struct SpinState {
  std::chrono::microseconds duration{0};
  int workers = 0;                         // spin tasks per arming: the arena's workers
  std::shared_ptr<const PinTarget> pin;    // also the domain's counters
  std::atomic<std::uint64_t> activity{0};  // bumped by every loop and submitted task
  std::atomic<int> pending{0};             // spin tasks queued or spinning
  std::atomic<bool> stopped{false};        // set by the executor's destructor

  void bump() noexcept { activity.fetch_add(1, std::memory_order_release); }
  // After a loop that fanned out, inside the arena: keeps the workers.
  void arm(const std::shared_ptr<SpinState>& self);
};

// Note [ThreadSanitizer and oneTBB]: the last reference to a spin state may
// be dropped by a spin task, in oneTBB's uninstrumented code; whoever frees
// it (and, through it, the pin target and the domain's counters) comes after
// every thread that released it.
std::shared_ptr<SpinState> make_spin_state() {
  return std::shared_ptr<SpinState>(new SpinState(), [](SpinState* state) {
    TENFERRO_TSAN_ACQUIRE(state);
    delete state;
  });
}

// Depth of install() on this thread: such a thread drops spin tasks.
thread_local int installing = 0;

// One step of a spin-wait loop: tells the core that this thread is polling.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

class ManagedCpuExecutor final : public CpuDomainExecutor {
 public:
  explicit ManagedCpuExecutor(ManagedExecutorOptions options);
  ~ManagedCpuExecutor() override {
    spin_->stopped.store(true, std::memory_order_relaxed);  // Note [Worker spin]
    spin_->bump();
    // Queued spin tasks end at once now; let them run before the arena goes
    // (Note [Worker spin]; bounded: a wake-up can take milliseconds on a VM).
    const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (spin_->pending.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    TENFERRO_TSAN_RELEASE(spin_.get());  // see make_spin_state
  }
  ManagedCpuExecutor(const ManagedCpuExecutor&) = delete;
  ManagedCpuExecutor& operator=(const ManagedCpuExecutor&) = delete;

  CpuExecutorCapabilities capabilities() const override;
  Status install(FunctionRef<void(const ParallelContext& workers)> job) override;
  Status submit(std::shared_ptr<CpuTask> task) override;

 private:
  // parallel_for over the arena's threads; valid inside install.
  class ArenaContext final : public ParallelContext {
   public:
    ArenaContext(std::shared_ptr<SpinState> spin, int threads, tbb::task_arena* arena) noexcept
        : spin_(std::move(spin)), threads_(threads), arena_(arena) {}
    int max_threads() const noexcept override { return threads_; }
    void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                      FunctionRef<void(std::int64_t, std::int64_t)> body) const override;

   private:
    std::shared_ptr<SpinState> spin_;  // also the pin target
    int threads_;
    tbb::task_arena* arena_;  // the executor's
  };

  std::shared_ptr<const PinTarget> pin_;
  std::shared_ptr<SpinState> spin_;
  int thread_budget_;
  bool pin_entering_threads_;
  tbb::task_arena arena_;
  ArenaContext context_;
};

// Binds the installing thread for one entry (Note [Pinning]).
class EnteringThreadPin {
 public:
  EnteringThreadPin(const PinTarget& pin, bool may_be_outside) noexcept
      : pin_(pin), state_(this_thread_domain_state()), previous_(state_.pinned_to) {
    if (!pin_.enabled || previous_ == pin_.id) return;
    if (may_be_outside) {
      Result<CpuSet> current = this_thread_affinity();
      if (!current.ok()) {
        pin_.counters->pin_failures.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if (!current->is_subset_of(pin_.cpus)) {
        if (!bind_this_thread(pin_.cpus).ok()) {
          pin_.counters->pin_failures.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        restore_ = std::move(current).value();
        pin_.counters->entering_thread_pins.fetch_add(1, std::memory_order_relaxed);
      }
    }
    state_.pinned_to = pin_.id;
  }
  ~EnteringThreadPin() {
    if (!restore_.empty() && !bind_this_thread(restore_).ok()) {
      pin_.counters->pin_failures.fetch_add(1, std::memory_order_relaxed);
    }
    state_.pinned_to = previous_;
  }
  EnteringThreadPin(const EnteringThreadPin&) = delete;
  EnteringThreadPin& operator=(const EnteringThreadPin&) = delete;

 private:
  const PinTarget& pin_;
  ThreadDomainState& state_;
  std::uint64_t previous_;
  CpuSet restore_;  // the affinity to restore, empty when nothing was bound
};

// The arena's slots (Note [Arena slots]): the budget, but never more threads
// than this machine lets the process use. Only an injected topology can ask
// for more (a 4-CPU synthetic domain on a 2-CPU machine); oneTBB would refuse
// the extra workers with a warning on stderr. Loops still split into
// budget-many chunks; fewer threads run them.
int arena_slots(int thread_budget) { return std::max(1, std::min(thread_budget, tbb::info::default_concurrency())); }

// Note [Arena slots].
int reserved_slots(int thread_budget) {
  return arena_slots(thread_budget) > 1 || tbb::info::default_concurrency() == 1 ? 1 : 0;
}

void PinTarget::confine_worker() const noexcept {
  if (!enabled) return;
  ThreadDomainState& state = this_thread_domain_state();
  if (state.pinned_to == id) return;
  if (bind_this_thread(cpus).ok()) {
    state.pinned_to = id;
    counters->worker_pins.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters->pin_failures.fetch_add(1, std::memory_order_relaxed);
  }
}

void ManagedCpuExecutor::ArenaContext::parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                                                    FunctionRef<void(std::int64_t, std::int64_t)> body) const {
  const ChunkPlan plan = plan_chunks(end - begin, grain, threads_);
  if (plan.chunks == 0) return;
  if (plan.chunks == 1) {
    body(begin, end);
    return;
  }
  spin_->bump();  // Note [Worker spin]: a spinning worker takes its chunk
  // Note [Entering the arena for loops]: nested execute on the arena a
  // worker is already in (a loop inside a submitted job) runs in place.
  const PinTarget& pin = *spin_->pin;
  arena_->execute([&] {
    {
      TENFERRO_TSAN_RELEASE(&body);
      const TsanAcquireAtExit joined{&body};
      tbb::parallel_for(
          std::int64_t{0}, plan.chunks,
          [&](std::int64_t chunk) {
            TENFERRO_TSAN_ACQUIRE(&body);
            const TsanReleaseAtExit done{&body};
            pin.confine_worker();
            const std::int64_t lo = begin + chunk * plan.chunk_size;
            body(lo, std::min(end, lo + plan.chunk_size));
          },
          tbb::static_partitioner());
    }
    spin_->arm(spin_);
  });
}

// A spin task (Note [Worker spin]) on a worker of the arena.
struct SpinRun {
  std::shared_ptr<SpinState> spin;
  std::uint64_t armed_at;  // the activity count when it was queued

  void operator()() const {
    TENFERRO_TSAN_ACQUIRE(spin.get());
    SpinState& s = *spin;
    // Nothing to wait for when this thread is inside install(), when a loop
    // or task came after it was queued, or when the executor is gone.
    if (installing == 0 && s.activity.load(std::memory_order_acquire) == armed_at &&
        !s.stopped.load(std::memory_order_relaxed)) {
      spin_until_work(s);
    }
    s.pending.fetch_sub(1, std::memory_order_acq_rel);
    TENFERRO_TSAN_RELEASE(spin.get());  // before the task drops its reference
  }

  void spin_until_work(SpinState& s) const {
    s.pin->confine_worker();
    CpuResourceDomain::Counters& counters = *s.pin->counters;
    counters.worker_spins.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() + s.duration;
    for (int round = 1;; ++round) {
      for (int i = 0; i < 64; ++i) {
        if (s.activity.load(std::memory_order_acquire) != armed_at) {
          counters.spin_handoffs.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        cpu_relax();
      }
      if (s.stopped.load(std::memory_order_relaxed) || std::chrono::steady_clock::now() >= deadline) return;
      // Every few microseconds, let another runnable thread of this CPU
      // (another library's pool, another process) have it.
      if (round % 16 == 0) std::this_thread::yield();
    }
  }
};

void SpinState::arm(const std::shared_ptr<SpinState>& self) {
  if (workers < 1 || duration.count() <= 0) return;
  // One round at a time. A spin ended by this loop left before its worker
  // took a chunk, so a loop the workers joined finds none pending; one that
  // ended before they left (the caller ran every chunk) arms nothing, and
  // the next loop will.
  int expected = 0;
  if (!pending.compare_exchange_strong(expected, workers, std::memory_order_acq_rel)) return;
  const std::uint64_t now = activity.load(std::memory_order_acquire);
  TENFERRO_TSAN_RELEASE(self.get());
  for (int i = 0; i < workers; ++i) tbb::this_task_arena::enqueue(SpinRun{self, now});
}

ManagedCpuExecutor::ManagedCpuExecutor(ManagedExecutorOptions options)
    : pin_(std::make_shared<const PinTarget>(
          PinTarget{next_unique_id(), std::move(options.cpus), options.bind_threads, std::move(options.counters)})),
      spin_(make_spin_state()),
      thread_budget_(options.thread_budget),
      pin_entering_threads_(options.pin_entering_threads),
      arena_(arena_slots(options.thread_budget), reserved_slots(options.thread_budget)),
      context_(spin_, options.thread_budget, &arena_) {
  spin_->duration = options.worker_spin;
  spin_->workers = options.thread_budget > 1 ? arena_slots(options.thread_budget) - 1 : 0;
  spin_->pin = pin_;
  arena_.initialize();
}

CpuExecutorCapabilities ManagedCpuExecutor::capabilities() const {
  CpuExecutorCapabilities caps;
  caps.workers = thread_budget_;
  caps.supports_submit = true;
  caps.inner_parallelism = thread_budget_ > 1;
  caps.reentrant_install = false;
  caps.affinity = pin_->enabled ? CpuAffinityGuarantee::kPinnedByTenferro : CpuAffinityGuarantee::kNone;
  caps.shutdown_owner = CpuShutdownOwner::kTenferro;
  caps.name = pin_->enabled ? "oneTBB task_arena, pinned"
                            : "oneTBB task_arena, not pinned (the topology does not describe this system)";
  return caps;
}

Status ManagedCpuExecutor::install(FunctionRef<void(const ParallelContext& workers)> job) {
  // Note [Entering the arena for loops]: the job runs here, on the caller.
  EnteringThreadPin pin(*pin_, pin_entering_threads_);
  struct Installing {  // Note [Worker spin]: this thread drops spin tasks
    Installing() noexcept { ++installing; }
    ~Installing() { --installing; }
  } installing_scope;
  job(context_);
  return ok_status();
}

// A submitted task on a worker of the arena. oneTBB calls it as const; the
// task reference is dropped by release_task, where TSan sees the count.
struct SubmittedRun {
  std::shared_ptr<const PinTarget> pin;
  mutable std::shared_ptr<CpuTask> task;
  void operator()() const {
    TENFERRO_TSAN_ACQUIRE(task.get());
    pin->confine_worker();
    task->run();
    release_task(task);
  }
};

Status ManagedCpuExecutor::submit(std::shared_ptr<CpuTask> task) {
  TENFERRO_TSAN_RELEASE(task.get());
  spin_->bump();  // Note [Worker spin]: a spinning worker takes the task
  arena_.enqueue(SubmittedRun{pin_, std::move(task)});
  return ok_status();
}

}  // namespace

ChunkPlan plan_chunks(std::int64_t n, std::int64_t grain, int threads) noexcept {
  if (n <= 0) return {};
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t by_grain = (n + grain - 1) / grain;
  const std::int64_t wanted = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, by_grain));
  const std::int64_t chunk_size = (n + wanted - 1) / wanted;
  return {(n + chunk_size - 1) / chunk_size, chunk_size};
}

// The executor's destructor does not wait for submitted tasks: they keep
// what they need (their PinTarget, their task) and oneTBB keeps the arena's
// internals until its last task has run. It waits for spin tasks only
// (Note [Worker spin]).
std::shared_ptr<CpuDomainExecutor> make_managed_executor(ManagedExecutorOptions options) {
  return std::make_shared<ManagedCpuExecutor>(std::move(options));
}

}  // namespace tenferro::cpu::internal
