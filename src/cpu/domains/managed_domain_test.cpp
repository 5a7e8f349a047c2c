// Managed domains on the real machine: entry amortization, the fan-out
// context, re-entry rejection, submitted jobs, exceptions and pinning
// (verified with sched_getcpu and pthread_getaffinity_np).
#include <gtest/gtest.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/domains/domain_test_support.h"
#include "cpu/domains/managed_executor.h"
#include "cpu/domains/thread_state.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::cpu {
namespace {

CpuTopology this_system() {
  auto topo = CpuTopology::discover();
  EXPECT_TRUE(topo.ok()) << topo.status().to_string();
  return std::move(topo).value();
}

std::shared_ptr<const CpuDomainSet> whole_machine_set() {
  const CpuTopology topo = this_system();
  const auto specs = default_domain_specs(topo, CpuDomainLayout::kWholeAllowedSet);
  auto set = CpuDomainSet::create_managed(topo, specs);
  EXPECT_TRUE(set.ok()) << set.status().to_string();
  return std::move(set).value();
}

CpuSet affinity() {
  auto a = internal::this_thread_affinity();
  EXPECT_TRUE(a.ok());
  return std::move(a).value();
}

TEST(ChunkPlanTest, ChunksRespectGrainAndThreads) {
  for (std::int64_t n : {1, 2, 7, 10, 64, 1000, 1001}) {
    for (std::int64_t grain : {0, 1, 3, 4, 100, 5000}) {
      for (int threads : {1, 2, 3, 8}) {
        const internal::ChunkPlan p = internal::plan_chunks(n, grain, threads);
        ASSERT_GE(p.chunks, 1);
        ASSERT_LE(p.chunks, threads);
        ASSERT_GE(p.chunks * p.chunk_size, n);
        ASSERT_LT((p.chunks - 1) * p.chunk_size, n);  // no empty chunk
        if (p.chunks > 1) {
          ASSERT_GE(p.chunk_size, std::max<std::int64_t>(grain, 1));
        }
      }
    }
  }
  EXPECT_EQ(internal::plan_chunks(0, 1, 4).chunks, 0);
}

TEST(ManagedDomainTest, OneInstallForAnyNumberOfOperations) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  const std::uint64_t before = domain.metrics().installs;
  std::vector<std::int64_t> data(4096, 1);
  std::uint64_t operations = 0;
  ASSERT_TRUE(domain
                  .enter([&](const CpuDomainSession& session) {
                    for (int op = 0; op < 100; ++op) {
                      const CpuExecutionContext ctx =
                          session.context(op % 2 ? ParallelMode::kInner : ParallelMode::kSequential);
                      ctx.parallel().parallel_for(0, 4096, 256, [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t i = b; i < e; ++i) data[i] += 1;
                      });
                    }
                    operations = session.operations();
                    return ok_status();
                  })
                  .ok());
  EXPECT_EQ(domain.metrics().installs - before, 1u);
  EXPECT_EQ(operations, 100u);
  for (std::int64_t v : data) ASSERT_EQ(v, 101);
  // A standalone operation enters once per operation.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(domain.run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); }).ok());
  }
  EXPECT_EQ(domain.metrics().installs - before, 4u);
}

TEST(ManagedDomainTest, ContextsExposeDomainFactsPerMode) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  ASSERT_TRUE(domain
                  .enter([&](const CpuDomainSession& session) {
                    const CpuExecutionContext seq = session.context(ParallelMode::kSequential);
                    const CpuExecutionContext inner = session.context(ParallelMode::kInner);
                    const CpuExecutionContext outer = session.context(ParallelMode::kOuter);
                    EXPECT_EQ(seq.domain_id(), domain.id());
                    EXPECT_EQ(&inner.domain(), &domain);
                    EXPECT_EQ(seq.parallel_mode(), ParallelMode::kSequential);
                    EXPECT_EQ(seq.max_threads(), 1);
                    EXPECT_EQ(inner.max_threads(), domain.thread_budget());
                    EXPECT_EQ(outer.max_threads(), domain.thread_budget());
                    EXPECT_EQ(outer.sequential().max_threads(), 1);
                    return ok_status();
                  })
                  .ok());
}

TEST(ManagedDomainTest, ParallelForCoversTheRangeOnceWithinTheBudget) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  for (std::int64_t n : {1, 5, 100, 10007}) {
    for (std::int64_t grain : {1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> chunks{0};
      ASSERT_TRUE(domain
                      .run(ParallelMode::kInner,
                           [&](const CpuExecutionContext& ctx) {
                             ctx.parallel().parallel_for(0, n, grain, [&](std::int64_t b, std::int64_t e) {
                               chunks.fetch_add(1);
                               if (e != n) {
                                 EXPECT_GE(e - b, grain);
                               }
                               for (std::int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
                             });
                             return ok_status();
                           })
                      .ok());
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      EXPECT_LE(chunks.load(), domain.thread_budget());
    }
  }
}

// Note [Entering the arena for loops]: a job runs on its caller outside the
// domain's oneTBB arena (whose entry and exit cost a small call 8 % of its
// time). Seen from a budget-one domain: its arena has one slot, the
// caller's implicit arena oneTBB's default concurrency.
TEST(ManagedDomainTest, JobsRunOutsideTheArena) {
  if (tbb::info::default_concurrency() < 2) GTEST_SKIP() << "one CPU: the arenas have the same concurrency";
  const CpuTopology topo = this_system();
  auto specs = default_domain_specs(topo, CpuDomainLayout::kWholeAllowedSet);
  for (CpuDomainSpec& spec : specs) spec.thread_budget = 1;
  auto set = CpuDomainSet::create_managed(topo, specs);
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  const CpuResourceDomain& domain = (*set)->default_domain();
  ASSERT_EQ(domain.thread_budget(), 1);
  int concurrency = 0;
  ASSERT_TRUE(domain
                  .run(ParallelMode::kInner,
                       [&](const CpuExecutionContext&) {
                         concurrency = tbb::this_task_arena::max_concurrency();
                         return ok_status();
                       })
                  .ok());
  EXPECT_EQ(concurrency, tbb::info::default_concurrency());
}

TEST(ManagedDomainTest, SmallAndNestedLoopsRunInline) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  const CpuDomainMetrics before = domain.metrics();
  std::atomic<int> nested_other_thread{0};
  ASSERT_TRUE(domain
                  .run(ParallelMode::kInner,
                       [&](const CpuExecutionContext& ctx) {
                         // One chunk: the fast path, no fan-out.
                         ctx.parallel().parallel_for(0, 10, 100, [](std::int64_t, std::int64_t) {});
                         // Nested inside a chunk: runs inline on the chunk's thread.
                         ctx.parallel().parallel_for(0, 2, 1, [&](std::int64_t, std::int64_t) {
                           const auto outer = std::this_thread::get_id();
                           ctx.parallel().parallel_for(0, 1000, 1, [&](std::int64_t, std::int64_t) {
                             if (std::this_thread::get_id() != outer) nested_other_thread.fetch_add(1);
                           });
                         });
                         return ok_status();
                       })
                  .ok());
  const CpuDomainMetrics after = domain.metrics();
  EXPECT_EQ(nested_other_thread.load(), 0);
  if (domain.thread_budget() > 1) {
    EXPECT_EQ(after.parallel_fanouts - before.parallel_fanouts, 1u);
    EXPECT_EQ(after.parallel_inline - before.parallel_inline, 3u);  // the small loop + 2 nested
  } else {
    EXPECT_EQ(after.parallel_inline - before.parallel_inline, 4u);
  }
}

// A composite provider in the style of dot_general: an outer job loop on the
// fan-out level, a sequential kernel per job, and a provider it delegates to
// with the context it was given. One entry, one fan-out level.
Status scale_kernel(const ParallelContext& ctx, std::vector<double>& v, std::int64_t job) {
  ctx.parallel_for(0, 64, 8, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) v[static_cast<std::size_t>(job * 64 + i)] *= 2;
  });
  return ok_status();
}

Status composite(const CpuExecutionContext& ctx, std::vector<double>& v, std::int64_t jobs) {
  if (ctx.parallel_mode() == ParallelMode::kOuter) {
    ctx.parallel().parallel_for(0, jobs, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t job = b; job < e; ++job) scale_kernel(ctx.sequential(), v, job).ignore();
    });
    return ok_status();
  }
  for (std::int64_t job = 0; job < jobs; ++job) TENFERRO_TRY(scale_kernel(ctx.parallel(), v, job));
  return ok_status();
}

TEST(ManagedDomainTest, ProviderCompositionReusesTheEnteredContext) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  const CpuDomainMetrics before = domain.metrics();
  std::vector<double> v(8 * 64, 1.0);
  ASSERT_TRUE(domain
                  .enter([&](const CpuDomainSession& session) {
                    TENFERRO_TRY(composite(session.context(ParallelMode::kOuter), v, 8));
                    return composite(session.context(ParallelMode::kInner), v, 8);
                  })
                  .ok());
  for (double x : v) ASSERT_EQ(x, 4.0);
  const CpuDomainMetrics after = domain.metrics();
  EXPECT_EQ(after.installs - before.installs, 1u);
  EXPECT_EQ(after.reentries_rejected, before.reentries_rejected);
  if (domain.thread_budget() > 1) {
    // Outer: one fan-out over the jobs (the kernels got a sequential context).
    // Inner: one fan-out per job.
    EXPECT_EQ(after.parallel_fanouts - before.parallel_fanouts, 1u + 8u);
  }
}

TEST(ManagedDomainTest, NestedEntryIsATypedErrorAndTheSessionSurvives) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  std::atomic<int> rejected_in_chunks{0};
  Status nested;
  Status after_nested;
  const Status outer = domain.enter([&](const CpuDomainSession& session) {
    nested = domain.run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); });
    const CpuExecutionContext ctx = session.context(ParallelMode::kInner);
    ctx.parallel().parallel_for(0, 4, 1, [&](std::int64_t, std::int64_t) {
      const Status s = domain.enter([](const CpuDomainSession&) { return ok_status(); });
      if (s.code() == ErrorCode::kReentryRejected) rejected_in_chunks.fetch_add(1);
    });
    after_nested = ok_status();
    return ok_status();
  });
  ASSERT_TRUE(outer.ok()) << outer.to_string();
  EXPECT_EQ(nested.code(), ErrorCode::kReentryRejected);
  EXPECT_EQ(nested.stage(), ErrorStage::kEnqueue);
  EXPECT_NE(nested.message().find("reuse the CpuExecutionContext"), std::string_view::npos);
  EXPECT_TRUE(after_nested.ok());
  EXPECT_EQ(rejected_in_chunks.load(), std::min(4, domain.thread_budget()));
  EXPECT_GE(domain.metrics().reentries_rejected, 1u + rejected_in_chunks.load());
  // The domain is usable again afterwards.
  EXPECT_TRUE(domain.run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); }).ok());
}

TEST(ManagedDomainTest, ExceptionsBecomeStatuses) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  const Status thrown = domain.run(ParallelMode::kSequential,
                                   [](const CpuExecutionContext&) -> Status { throw std::runtime_error("x"); });
  EXPECT_EQ(thrown.code(), ErrorCode::kInternal);
  EXPECT_EQ(thrown.stage(), ErrorStage::kCompletion);
  const Status from_chunk = domain.run(ParallelMode::kInner, [](const CpuExecutionContext& ctx) {
    ctx.parallel().parallel_for(0, 8, 1, [](std::int64_t b, std::int64_t) {
      if (b == 0) throw std::runtime_error("chunk");
    });
    return ok_status();
  });
  EXPECT_EQ(from_chunk.code(), ErrorCode::kInternal);
  auto job =
      std::make_shared<testing::WaitableJob>([](const CpuExecutionContext&) -> Status { throw std::bad_alloc(); });
  ASSERT_TRUE(domain.submit(job).ok());
  EXPECT_EQ(job->wait().code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(domain.run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); }).ok());
}

TEST(ManagedDomainTest, SubmittedJobsRunSequentiallyOnDomainThreadsAndCompleteOnce) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  std::vector<std::shared_ptr<testing::WaitableJob>> jobs;
  for (int i = 0; i < 16; ++i) {
    jobs.push_back(std::make_shared<testing::WaitableJob>([&domain, i](const CpuExecutionContext& ctx) -> Status {
      if (ctx.parallel_mode() != ParallelMode::kSequential || ctx.max_threads() != 1 || ctx.domain_id() != domain.id())
        return make_error(ErrorCode::kInternal, ErrorStage::kNone, "wrong context");
      if (!affinity().is_subset_of(domain.cpus())) return make_error(ErrorCode::kInternal, ErrorStage::kNone, "cpu");
      // Entering from a submitted job is nested entry.
      if (domain.enter([](const CpuDomainSession&) { return ok_status(); }).code() != ErrorCode::kReentryRejected)
        return make_error(ErrorCode::kInternal, ErrorStage::kNone, "re-entry accepted");
      return i == 7 ? make_error(ErrorCode::kOutOfRange, ErrorStage::kCompletion, "job 7") : ok_status();
    }));
    ASSERT_TRUE(domain.submit(jobs.back()).ok());
  }
  for (int i = 0; i < 16; ++i) {
    const Status s = jobs[i]->wait();
    if (i == 7) {
      EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
    } else {
      EXPECT_TRUE(s.ok()) << i << ": " << s.to_string();
    }
  }
  for (auto& job : jobs) EXPECT_EQ(job->completions(), 1);
  EXPECT_EQ(domain.submit(nullptr).code(), ErrorCode::kInvalidArgument);
}

TEST(ManagedDomainTest, AJobKeepsItsDomainAliveAfterTheSetIsDropped) {
  std::weak_ptr<const CpuResourceDomain> weak;
  std::mutex gate;
  std::unique_lock<std::mutex> hold(gate);
  std::shared_ptr<testing::WaitableJob> job;
  {
    auto set = whole_machine_set();
    weak = set->domains().front();
    job = std::make_shared<testing::WaitableJob>([&gate](const CpuExecutionContext&) {
      std::lock_guard<std::mutex> wait_for_test(gate);
      return ok_status();
    });
    ASSERT_TRUE(set->default_domain().submit(job).ok());
  }
  EXPECT_FALSE(weak.expired());  // retained by the queued job
  hold.unlock();
  EXPECT_TRUE(job->wait().ok());
  for (int i = 0; i < 1000 && !weak.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(weak.expired());  // released on the worker once the job finished
}

// Note [Worker spin]
std::shared_ptr<const CpuDomainSet> two_thread_set(std::chrono::microseconds spin) {
  const CpuTopology topo = this_system();
  CpuDomainSpec spec{CpuDomainId(1), topo.allowed_cpus(), 2};
  spec.worker_spin = spin;
  auto set = CpuDomainSet::create_managed(topo, {&spec, 1});
  EXPECT_TRUE(set.ok()) << set.status().to_string();
  return std::move(set).value();
}

Status two_chunk_loop(const CpuResourceDomain& domain) {
  return domain.run(ParallelMode::kInner, [](const CpuExecutionContext& ctx) {
    ctx.parallel().parallel_for(0, 2, 1, [](std::int64_t, std::int64_t) {});
    return ok_status();
  });
}

// Polls `done` for up to `limit`.
template <class F>
bool eventually_within(std::chrono::milliseconds limit, F done) {
  for (std::int64_t i = 0; i < limit.count(); ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

template <class F>
bool eventually(F done) {
  return eventually_within(std::chrono::seconds(10), done);
}

TEST(ManagedWorkerSpinTest, AWorkerSpinsAfterALoopAndTheNextLoopEndsTheSpin) {
  if (this_system().allowed_cpus().count() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  auto set = two_thread_set(CpuDomainSpec::kMaxWorkerSpin);
  const CpuResourceDomain& domain = set->default_domain();
  EXPECT_EQ(domain.report().worker_spin, CpuDomainSpec::kMaxWorkerSpin);
  ASSERT_TRUE(two_chunk_loop(domain).ok());
  ASSERT_TRUE(eventually([&] { return domain.metrics().worker_spins >= 1; }));
  EXPECT_EQ(domain.metrics().spin_handoffs, 0u);
  // The spin lasts a second; the next loop ends it at once.
  ASSERT_TRUE(two_chunk_loop(domain).ok());
  EXPECT_TRUE(eventually([&] { return domain.metrics().spin_handoffs >= 1; }));
  // Loops arm new spins, and a submitted job ends one too. A loop whose
  // chunks the caller ran before the spinning worker left arms none (Note
  // [Worker spin]), hence the retries.
  bool job_ended_a_spin = false;
  for (int attempt = 0; attempt < 50 && !job_ended_a_spin; ++attempt) {
    const std::uint64_t spins = domain.metrics().worker_spins;
    ASSERT_TRUE(two_chunk_loop(domain).ok());
    if (!eventually_within(std::chrono::milliseconds(200), [&] { return domain.metrics().worker_spins > spins; })) {
      continue;
    }
    const std::uint64_t handoffs = domain.metrics().spin_handoffs;
    auto job = std::make_shared<testing::WaitableJob>([](const CpuExecutionContext&) { return ok_status(); });
    ASSERT_TRUE(domain.submit(job).ok());
    EXPECT_TRUE(job->wait().ok());
    job_ended_a_spin = eventually([&] { return domain.metrics().spin_handoffs > handoffs; });
  }
  EXPECT_TRUE(job_ended_a_spin);
}

TEST(ManagedWorkerSpinTest, ASpinEndsAtItsDeadline) {
  if (this_system().allowed_cpus().count() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  auto set = two_thread_set(std::chrono::milliseconds(5));
  const CpuResourceDomain& domain = set->default_domain();
  ASSERT_TRUE(two_chunk_loop(domain).ok());
  ASSERT_TRUE(eventually([&] { return domain.metrics().worker_spins >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // 100 times the spin
  ASSERT_TRUE(two_chunk_loop(domain).ok());
  EXPECT_EQ(domain.metrics().spin_handoffs, 0u);
}

TEST(ManagedWorkerSpinTest, NoSpinWhenItIsZeroOrTheBudgetIsOne) {
  const CpuTopology topo = this_system();
  auto zero = two_thread_set(std::chrono::microseconds(0));
  const CpuDomainSpec one_spec{CpuDomainId(1), CpuSet{topo.allowed_cpus().first()}, 1};
  auto one = CpuDomainSet::create_managed(topo, {&one_spec, 1});
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(two_chunk_loop(zero->default_domain()).ok());
    ASSERT_TRUE(two_chunk_loop((*one)->default_domain()).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(zero->default_domain().metrics().worker_spins, 0u);
  EXPECT_EQ((*one)->default_domain().metrics().worker_spins, 0u);
  EXPECT_EQ((*one)->default_domain().report().worker_spin.count(), 0);
}

// The caller may pick a queued spin task while it waits for a loop's
// chunks; were it to spin there, it would wait until the deadline (a second
// here) with nobody left to end the spin. Two things prevent it (the loop's
// own bump makes the task stale, and a thread inside install() drops spin
// tasks); this checks the contract, not either guard alone.
TEST(ManagedWorkerSpinTest, LoopsNeverWaitForASpin) {
  if (this_system().allowed_cpus().count() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  auto set = two_thread_set(CpuDomainSpec::kMaxWorkerSpin);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(set->default_domain()
                  .run(ParallelMode::kInner,
                       [](const CpuExecutionContext& ctx) {
                         std::atomic<std::int64_t> sum{0};
                         for (int i = 0; i < 100; ++i) {
                           ctx.parallel().parallel_for(0, 2, 1, [&](std::int64_t b, std::int64_t) { sum += b; });
                         }
                         EXPECT_EQ(sum.load(), 100);
                         return ok_status();
                       })
                  .ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(two_chunk_loop(set->default_domain()).ok());
  // One wait for a spin would take a second.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
}

// Dropping the domain stops its spinning worker: another domain's loop gets
// the worker (oneTBB's workers are shared) at once, not when the second-long
// spin is over.
TEST(ManagedWorkerSpinTest, DroppingTheDomainStopsItsSpin) {
  if (this_system().allowed_cpus().count() < 2) GTEST_SKIP() << "needs two allowed CPUs";
  auto other = two_thread_set(std::chrono::microseconds(0));  // built first: topology discovery takes time
  auto spinning = two_thread_set(CpuDomainSpec::kMaxWorkerSpin);
  ASSERT_TRUE(two_chunk_loop(spinning->default_domain()).ok());
  ASSERT_TRUE(eventually([&] { return spinning->default_domain().metrics().worker_spins >= 1; }));
  spinning.reset();
  const auto start = std::chrono::steady_clock::now();
  // Both chunks must run at once: each waits for the other to start.
  std::atomic<int> started{0};
  std::atomic<bool> met{true};
  ASSERT_TRUE(other->default_domain()
                  .run(ParallelMode::kInner,
                       [&](const CpuExecutionContext& ctx) {
                         ctx.parallel().parallel_for(0, 2, 1, [&](std::int64_t, std::int64_t) {
                           started.fetch_add(1);
                           const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                           while (started.load() < 2) {
                             if (std::chrono::steady_clock::now() > give_up) {
                               met = false;
                               return;
                             }
                           }
                         });
                         return ok_status();
                       })
                  .ok());
  EXPECT_TRUE(met.load());
  // Without the stop, about 0.95 s of the spin would be left here.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

// Pinning on the real machine: one domain per allowed CPU (first two).
class ManagedPinningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topo_ = this_system();
    if (topo_.allowed_cpus().count() < 2) GTEST_SKIP() << "needs two allowed CPUs";
    cpu_a_ = topo_.allowed_cpus().first();
    cpu_b_ = topo_.allowed_cpus().next(cpu_a_);
    const CpuDomainSpec specs[] = {{CpuDomainId(1), CpuSet{cpu_a_}},
                                   {CpuDomainId(2), CpuSet{cpu_b_}},
                                   {CpuDomainId(3), topo_.allowed_cpus().minus(CpuSet{cpu_a_, cpu_b_})}};
    const std::size_t n = topo_.allowed_cpus().count() > 2 ? 3 : 2;
    auto set = CpuDomainSet::create_managed(topo_, std::span<const CpuDomainSpec>(specs, n));
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    set_ = std::move(set).value();
  }
  CpuTopology topo_ = this_system();
  int cpu_a_ = -1;
  int cpu_b_ = -1;
  std::shared_ptr<const CpuDomainSet> set_;
};

TEST_F(ManagedPinningTest, EnteringThreadRunsOnTheDomainAndIsRestored) {
  const CpuSet original = affinity();
  for (const CpuDomainId id : {CpuDomainId(1), CpuDomainId(2)}) {
    const CpuResourceDomain& domain = *set_->find(id);
    ASSERT_TRUE(domain.executor_capabilities().affinity == CpuAffinityGuarantee::kPinnedByTenferro);
    CpuSet inside;
    int cpu = -1;
    ASSERT_TRUE(domain
                    .run(ParallelMode::kSequential,
                         [&](const CpuExecutionContext&) {
                           inside = affinity();
                           cpu = sched_getcpu();
                           return ok_status();
                         })
                    .ok());
    EXPECT_EQ(inside, domain.cpus());
    EXPECT_TRUE(domain.cpus().contains(cpu));
    EXPECT_EQ(affinity(), original);  // restored after the entry
    if (!original.is_subset_of(domain.cpus())) {
      EXPECT_GE(domain.metrics().entering_thread_pins, 1u);
    }
  }
}

TEST_F(ManagedPinningTest, WorkersFollowTheDomainOfEachJob) {
  for (int round = 0; round < 3; ++round) {
    for (const CpuDomainId id : {CpuDomainId(1), CpuDomainId(2)}) {
      const CpuResourceDomain& domain = *set_->find(id);
      CpuSet seen;
      int cpu = -1;
      auto job = std::make_shared<testing::WaitableJob>([&](const CpuExecutionContext&) {
        seen = affinity();
        cpu = sched_getcpu();
        return ok_status();
      });
      ASSERT_TRUE(domain.submit(job).ok());
      ASSERT_TRUE(job->wait().ok());
      EXPECT_EQ(seen, domain.cpus()) << "round " << round << " domain " << id.value();
      EXPECT_TRUE(domain.cpus().contains(cpu));
    }
  }
  EXPECT_GE(set_->find(CpuDomainId(1))->metrics().worker_pins + set_->find(CpuDomainId(2))->metrics().worker_pins, 2u);
  EXPECT_EQ(set_->find(CpuDomainId(1))->metrics().pin_failures, 0u);
}

TEST(ManagedPinningWholeSetTest, ChunksRunOnTheDomainCpus) {
  auto set = whole_machine_set();
  const CpuResourceDomain& domain = set->default_domain();
  std::mutex mutex;
  bool all_inside = true;
  std::atomic<int> active{0};
  std::atomic<int> most_active{0};
  for (int rep = 0; rep < 20; ++rep) {
    ASSERT_TRUE(domain
                    .run(ParallelMode::kInner,
                         [&](const CpuExecutionContext& ctx) {
                           ctx.parallel().parallel_for(0, 64, 1, [&](std::int64_t, std::int64_t) {
                             const int now = active.fetch_add(1) + 1;
                             int seen = most_active.load();
                             while (now > seen && !most_active.compare_exchange_weak(seen, now)) {
                             }
                             const CpuSet a = affinity();
                             std::this_thread::sleep_for(std::chrono::microseconds(200));
                             {
                               std::lock_guard<std::mutex> lock(mutex);
                               all_inside = all_inside && a.is_subset_of(domain.cpus()) && !a.empty();
                             }
                             active.fetch_sub(1);
                           });
                           return ok_status();
                         })
                    .ok());
  }
  EXPECT_TRUE(all_inside);
  EXPECT_LE(most_active.load(), domain.thread_budget());
  // The domain covers every allowed CPU: entering never needs a bind.
  EXPECT_EQ(domain.metrics().entering_thread_pins, 0u);
}

}  // namespace
}  // namespace tenferro::cpu
