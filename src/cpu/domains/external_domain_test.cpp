// ExternalManaged domains over an application-style thread pool: entry
// counting, budget enforcement, no re-pinning, lifetime retention of the
// owner (weak_ptr sentinel), refusals and diagnostics.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/domains/domain_test_support.h"
#include "cpu/domains/managed_executor.h"
#include "cpu/domains/thread_state.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::cpu {
namespace {

// A small application thread pool implementing CpuDomainExecutor the way the
// interface asks: install runs on the caller, parallel_for spreads chunks
// over the pool, submit queues tasks, and the destructor never joins the
// thread it runs on (the last reference may be dropped by a finished task).
class AppThreadPool final : public CpuDomainExecutor {
 public:
  struct Options {
    int threads = 2;
    bool refuse_install = false;
    bool refuse_submit = false;
    bool drop_submitted = false;
    bool skip_installed_job = false;  // a broken executor: install "succeeds" without running the job
  };

  explicit AppThreadPool(Options options) : options_(options), state_(std::make_shared<State>()), context_(this) {
    for (int i = 0; i < options.threads; ++i) {
      threads_.emplace_back([state = state_] { worker_loop(state); });
    }
  }
  ~AppThreadPool() override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stop = true;
    }
    state_->cv.notify_all();
    for (std::thread& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else {
        t.join();
      }
    }
  }

  CpuExecutorCapabilities capabilities() const override {
    CpuExecutorCapabilities caps;
    caps.workers = options_.threads + 1;
    caps.supports_submit = true;
    caps.inner_parallelism = true;
    caps.affinity = CpuAffinityGuarantee::kDeclaredByOwner;
    caps.shutdown_owner = CpuShutdownOwner::kExternalOwner;
    caps.name = "app thread pool";
    return caps;
  }

  Status install(FunctionRef<void(const ParallelContext& workers)> job) override {
    installs.fetch_add(1);
    if (options_.refuse_install) return make_error(ErrorCode::kUnavailable, ErrorStage::kEnqueue, "pool is draining");
    if (options_.skip_installed_job) return ok_status();
    job(context_);
    return ok_status();
  }

  Status submit(std::shared_ptr<CpuTask> task) override {
    submits.fetch_add(1);
    if (options_.refuse_submit) return make_error(ErrorCode::kUnavailable, ErrorStage::kEnqueue, "queue full");
    if (options_.drop_submitted) return ok_status();  // accepted, then dropped
    push([task = std::move(task)] { task->run(); });
    return ok_status();
  }

  /// Affinity of every pool thread, as each reports it now.
  std::vector<CpuSet> thread_affinities() {
    std::vector<CpuSet> out(static_cast<std::size_t>(options_.threads));
    std::atomic<int> left{options_.threads};
    std::mutex m;
    // One blocking task per thread, so each thread reports once.
    std::mutex gate;
    std::unique_lock<std::mutex> hold(gate);
    std::atomic<int> index{0};
    std::atomic<int> finished{0};
    for (int i = 0; i < options_.threads; ++i) {
      push([&] {
        const int me = index.fetch_add(1);
        CpuSet a = internal::this_thread_affinity().value();
        {
          std::lock_guard<std::mutex> lock(m);
          out[static_cast<std::size_t>(me)] = std::move(a);
        }
        left.fetch_sub(1);
        { std::lock_guard<std::mutex> wait_for_all(gate); }
        finished.fetch_add(1);
      });
    }
    while (left.load() > 0) std::this_thread::yield();
    hold.unlock();
    while (finished.load() < options_.threads) std::this_thread::yield();  // the tasks use locals
    return out;
  }

  std::atomic<int> installs{0};
  std::atomic<int> submits{0};
  std::atomic<int> active_chunks{0};
  std::atomic<int> most_active_chunks{0};

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool stop = false;
  };

  class PoolContext final : public ParallelContext {
   public:
    explicit PoolContext(AppThreadPool* pool) : pool_(pool) {}
    int max_threads() const noexcept override { return pool_->options_.threads + 1; }
    void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                      FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
      const internal::ChunkPlan plan = internal::plan_chunks(end - begin, grain, max_threads());
      std::atomic<std::int64_t> left{plan.chunks};
      auto run_chunk = [&](std::int64_t c) {
        const int now = pool_->active_chunks.fetch_add(1) + 1;
        int seen = pool_->most_active_chunks.load();
        while (now > seen && !pool_->most_active_chunks.compare_exchange_weak(seen, now)) {
        }
        const std::int64_t lo = begin + c * plan.chunk_size;
        body(lo, std::min(end, lo + plan.chunk_size));
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        pool_->active_chunks.fetch_sub(1);
        left.fetch_sub(1);
      };
      for (std::int64_t c = 1; c < plan.chunks; ++c) pool_->push([&run_chunk, c] { run_chunk(c); });
      if (plan.chunks > 0) run_chunk(0);
      while (left.load() > 0) std::this_thread::yield();
    }

   private:
    AppThreadPool* pool_;
  };

  static void worker_loop(std::shared_ptr<State> state) {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->cv.wait(lock, [&] { return state->stop || !state->queue.empty(); });
        if (state->queue.empty()) return;
        fn = std::move(state->queue.front());
        state->queue.pop_front();
      }
      fn();
      fn = nullptr;  // may release the last reference to the pool; only `state` is used afterwards
    }
  }

  void push(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->queue.push_back(std::move(fn));
    }
    state_->cv.notify_one();
  }

  Options options_;
  std::shared_ptr<State> state_;
  PoolContext context_;
  std::vector<std::thread> threads_;
};

std::shared_ptr<const CpuDomainSet> external_set(std::shared_ptr<AppThreadPool> pool, CpuSet cpus, int budget = 0) {
  const ExternalCpuDomainSpec specs[] = {{{CpuDomainId(10), std::move(cpus), budget}, std::move(pool)}};
  auto set = CpuDomainSet::create_external(specs);
  EXPECT_TRUE(set.ok()) << set.status().to_string();
  return std::move(set).value();
}

TEST(ExternalDomainTest, OneInstallForASessionOfOperations) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{});
  auto set = external_set(pool, CpuSet::range(0, 2));
  const CpuResourceDomain& domain = set->default_domain();
  EXPECT_EQ(set->mode(), CpuDomainMode::kExternal);
  EXPECT_EQ(domain.thread_budget(), 3);  // min(3 CPUs, 3 workers)
  std::vector<int> data(3000, 0);
  ASSERT_TRUE(domain
                  .enter([&](const CpuDomainSession& session) {
                    for (int op = 0; op < 50; ++op) {
                      const CpuExecutionContext ctx = session.context(ParallelMode::kInner);
                      ctx.parallel().parallel_for(0, 3000, 1, [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t i = b; i < e; ++i) data[i] += 1;
                      });
                    }
                    return ok_status();
                  })
                  .ok());
  EXPECT_EQ(pool->installs.load(), 1);
  EXPECT_EQ(domain.metrics().installs, 1u);
  for (int v : data) ASSERT_EQ(v, 50);
}

TEST(ExternalDomainTest, ThreadBudgetCapsTheExternalFanout) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{4});
  auto set = external_set(pool, CpuSet::range(0, 7), 2);
  const CpuResourceDomain& domain = set->default_domain();
  EXPECT_EQ(domain.thread_budget(), 2);
  ASSERT_TRUE(domain
                  .run(ParallelMode::kInner,
                       [&](const CpuExecutionContext& ctx) {
                         EXPECT_EQ(ctx.max_threads(), 2);
                         ctx.parallel().parallel_for(0, 1000, 1, [](std::int64_t, std::int64_t) {});
                         return ok_status();
                       })
                  .ok());
  EXPECT_GE(pool->most_active_chunks.load(), 1);
  EXPECT_LE(pool->most_active_chunks.load(), 2);
}

TEST(ExternalDomainTest, NeverRepinsExternalWorkers) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{2});
  const std::vector<CpuSet> before = pool->thread_affinities();
  // Declare a single CPU: a managed executor would pin to it; an external one must not.
  auto set = external_set(pool, CpuSet{0}, 1);
  const CpuResourceDomain& domain = set->default_domain();
  auto job = std::make_shared<testing::WaitableJob>();
  ASSERT_TRUE(domain.submit(job).ok());
  ASSERT_TRUE(job->wait().ok());
  ASSERT_TRUE(domain
                  .run(ParallelMode::kInner,
                       [](const CpuExecutionContext& ctx) {
                         ctx.parallel().parallel_for(0, 100, 1, [](std::int64_t, std::int64_t) {});
                         return ok_status();
                       })
                  .ok());
  EXPECT_EQ(pool->thread_affinities(), before);
  const CpuDomainMetrics m = domain.metrics();
  EXPECT_EQ(m.worker_pins + m.entering_thread_pins, 0u);
  EXPECT_EQ(domain.executor_capabilities().affinity, CpuAffinityGuarantee::kDeclaredByOwner);
}

TEST(ExternalDomainTest, OwnerIsRetainedUntilTheLastJobCompletes) {
  std::weak_ptr<AppThreadPool> sentinel;
  std::weak_ptr<const CpuResourceDomain> domain_sentinel;
  std::mutex gate;
  std::unique_lock<std::mutex> hold(gate);
  auto job = std::make_shared<testing::WaitableJob>([&gate](const CpuExecutionContext&) {
    std::lock_guard<std::mutex> wait_for_test(gate);
    return ok_status();
  });
  {
    auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
    sentinel = pool;
    auto set = external_set(pool, CpuSet{0, 1});
    domain_sentinel = set->domains().front();
    ASSERT_TRUE(set->default_domain().submit(job).ok());
  }                                  // the application and the set drop their references
  EXPECT_FALSE(sentinel.expired());  // the submitted job keeps the owner alive
  EXPECT_FALSE(domain_sentinel.expired());
  hold.unlock();
  EXPECT_TRUE(job->wait().ok());
  for (int i = 0; i < 2000 && !sentinel.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(sentinel.expired());  // released once the job has completed
  EXPECT_TRUE(domain_sentinel.expired());
  EXPECT_EQ(job->completions(), 1);
}

TEST(ExternalDomainTest, DroppedJobsCompleteAsCancelled) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1, false, false, /*drop_submitted=*/true});
  auto set = external_set(pool, CpuSet{0});
  auto job = std::make_shared<testing::WaitableJob>();
  ASSERT_TRUE(set->default_domain().submit(job).ok());
  const Status s = job->wait();
  EXPECT_EQ(s.code(), ErrorCode::kCancelled);
  EXPECT_EQ(job->completions(), 1);
}

TEST(ExternalDomainTest, RefusalsAreReportedWithContext) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1, true, true, false});
  auto set = external_set(pool, CpuSet{0});
  const CpuResourceDomain& domain = set->default_domain();
  bool ran = false;
  const Status entry = domain.run(ParallelMode::kSequential, [&](const CpuExecutionContext&) {
    ran = true;
    return ok_status();
  });
  EXPECT_FALSE(ran);
  EXPECT_EQ(entry.code(), ErrorCode::kUnavailable);
  EXPECT_NE(entry.to_string().find("the executor refused the entry"), std::string::npos);
  auto job = std::make_shared<testing::WaitableJob>();
  const Status submitted = domain.submit(job);
  EXPECT_EQ(submitted.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(job->completions(), 0);  // a refused job is not completed: the caller got the error
  EXPECT_EQ(domain.metrics().submits, 0u);
}

TEST(ExternalDomainTest, AnInstallThatSkipsTheJobIsAContractError) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1, false, false, false, true});
  auto set = external_set(pool, CpuSet{0});
  const Status s =
      set->default_domain().run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); });
  EXPECT_EQ(s.code(), ErrorCode::kProviderContractError);
  EXPECT_NE(s.message().find("without running the job"), std::string_view::npos);
}

TEST(ExternalDomainTest, NestedEntryFromAnExternalWorkerIsRejected) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
  auto set = external_set(pool, CpuSet{0, 1});
  const CpuResourceDomain& domain = set->default_domain();
  auto job = std::make_shared<testing::WaitableJob>([&domain](const CpuExecutionContext&) {
    return domain.run(ParallelMode::kSequential, [](const CpuExecutionContext&) { return ok_status(); });
  });
  ASSERT_TRUE(domain.submit(job).ok());
  EXPECT_EQ(job->wait().code(), ErrorCode::kReentryRejected);
}

TEST(ExternalDomainTest, StaticConfigurationIsValidated) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
  const ExternalCpuDomainSpec null_executor[] = {{{CpuDomainId(1), CpuSet{0}}, nullptr}};
  EXPECT_EQ(CpuDomainSet::create_external(null_executor).status().code(), ErrorCode::kInvalidArgument);
  const ExternalCpuDomainSpec empty[] = {{{CpuDomainId(1), CpuSet{}}, pool}};
  EXPECT_EQ(CpuDomainSet::create_external(empty).status().code(), ErrorCode::kInvalidArgument);
  const ExternalCpuDomainSpec duplicate[] = {{{CpuDomainId(1), CpuSet{0}}, pool}, {{CpuDomainId(1), CpuSet{1}}, pool}};
  EXPECT_EQ(CpuDomainSet::create_external(duplicate).status().code(), ErrorCode::kAlreadyExists);
  const ExternalCpuDomainSpec overlap[] = {{{CpuDomainId(1), CpuSet{0, 1}}, pool}, {{CpuDomainId(2), CpuSet{1}}, pool}};
  const auto overlapping = CpuDomainSet::create_external(overlap);
  EXPECT_EQ(overlapping.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(overlapping.status().message().find("found CPUs 1 in both"), std::string_view::npos);
  const ExternalCpuDomainSpec budget[] = {{{CpuDomainId(1), CpuSet::range(0, 7), 4}, pool}};  // pool has 2 workers
  const auto too_many = CpuDomainSet::create_external(budget);
  EXPECT_EQ(too_many.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("at most the executor's 2 workers"), std::string_view::npos);
  EXPECT_EQ(pool->installs.load(), 0);  // nothing ran during validation
}

TEST(ExternalDomainTest, SeveralDomainsResolvedByPlacement) {
  auto first = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
  auto second = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
  const ExternalCpuDomainSpec specs[] = {{{CpuDomainId(10), CpuSet{0}}, first}, {{CpuDomainId(20), CpuSet{1}}, second}};
  auto set = CpuDomainSet::create_external(specs);
  ASSERT_TRUE(set.ok());
  ASSERT_EQ((*set)->find(CpuDomainId(30)), nullptr);
  const CpuResourceDomain* d20 = (*set)->find(CpuDomainId(20));
  ASSERT_NE(d20, nullptr);
  ASSERT_TRUE(d20->run(ParallelMode::kSequential,
                       [](const CpuExecutionContext& ctx) {
                         EXPECT_EQ(ctx.domain_id(), CpuDomainId(20));
                         return ok_status();
                       })
                  .ok());
  EXPECT_EQ(first->installs.load(), 0);
  EXPECT_EQ(second->installs.load(), 1);
  EXPECT_EQ(&(*set)->default_domain(), (*set)->find(CpuDomainId(10)));
}

TEST(ExternalDomainTest, DiagnosticsSayWhatCannotBeVerified) {
  auto pool = std::make_shared<AppThreadPool>(AppThreadPool::Options{1});
  auto set = external_set(pool, CpuSet{0, 1});
  const CpuDomainReport report = set->default_domain().report();
  EXPECT_EQ(report.mode, CpuDomainMode::kExternal);
  EXPECT_EQ(report.executor.name, "app thread pool");
  std::string all;
  for (const std::string& note : report.notes) all += note + "\n";
  EXPECT_NE(all.find("declared, not verified"), std::string::npos) << all;
  EXPECT_NE(all.find("fairness: the owner's responsibility"), std::string::npos) << all;
  EXPECT_NE(all.find("shutdown: the external owner"), std::string::npos) << all;
  EXPECT_FALSE(set->default_domain().covers_allowed_cpus());  // unknown without a topology

  auto topo = CpuTopology::discover();
  ASSERT_TRUE(topo.ok());
  const ExternalCpuDomainSpec whole[] = {{{CpuDomainId(1), topo->allowed_cpus()}, pool}};
  auto with_topology = CpuDomainSet::create_external(whole, &*topo);
  ASSERT_TRUE(with_topology.ok());
  EXPECT_TRUE((*with_topology)->default_domain().covers_allowed_cpus());
}

}  // namespace
}  // namespace tenferro::cpu
