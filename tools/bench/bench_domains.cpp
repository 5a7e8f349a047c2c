// `tenferro bench domains`: the fixed costs of CPU resource domains against
// same-run baselines.
//
// Note [Domain benchmark cases]
//  - enter_empty_t<N>: CpuResourceDomain::enter with an empty body on a
//    managed domain of N threads over every allowed CPU, vs a plain
//    tbb::task_arena(N)::execute of an empty lambda (the floor of any arena
//    entry); the direct call of the empty body is reported as an extra field.
//  - enter_empty_pinned_t1: entry into a one-CPU domain from a thread whose
//    affinity is wider, so every entry binds the thread and restores it
//    (the cost of exact placement for a caller outside the domain).
//  - session_op_t<N>: per operation inside one entered session (deriving a
//    kInner CpuExecutionContext and calling the operation through a
//    FunctionRef), vs calling the same operation directly with a
//    ParallelContext. Target <= 100 ns.
//  - parallel_for_2_t<N>, parallel_for_1000_t<N>: fork-join of a trivial body
//    body over 2 or 1000 iterations (grain 1) through the context, vs the
//    same body in tbb::parallel_for over a grain-1 blocked_range inside a
//    plain arena of N threads with oneTBB's default (auto) partitioner.
//  - submit_roundtrip_t<N>: submit an empty job and spin until it completes
//    on a worker, vs arena.enqueue of a lambda that sets a flag the caller
//    spins on (the bare oneTBB hand-off).
// Ours and the baseline are measured in interleaved rounds (alternating
// order); each sample times a batch of calls; medians are reported.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_command.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"

namespace tenferro::bench {
namespace {

using namespace tenferro::cpu;  // NOLINT(google-build-using-namespace): benchmark scope
using Clock = std::chrono::steady_clock;

struct Pair {
  Samples ours;
  Samples baseline;
};

double time_batch(const std::function<void()>& fn, int batch) {
  const auto t0 = Clock::now();
  for (int i = 0; i < batch; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - t0).count() / batch;
}

// One timed batch after an untimed warm-up of a quarter batch: oneTBB's
// workers are shared by every arena of the process (one worker on a 2-CPU
// machine), and moving a sleeping worker to the other side's arena costs
// far more than the calls timed, which would otherwise land in the first
// calls of each batch.
double warm_then_time(const std::function<void()>& fn, int batch) {
  for (int i = 0; i < std::max(1, batch / 4); ++i) fn();
  return time_batch(fn, batch);
}

Pair interleaved(const std::function<void()>& ours, const std::function<void()>& baseline, int batch, int rounds) {
  Pair p;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      p.ours.seconds.push_back(warm_then_time(ours, batch));
      p.baseline.seconds.push_back(warm_then_time(baseline, batch));
    } else {
      p.baseline.seconds.push_back(warm_then_time(baseline, batch));
      p.ours.seconds.push_back(warm_then_time(ours, batch));
    }
  }
  return p;
}

Case make_case(std::string name, const Pair& p, std::string baseline_name, int threads) {
  Case c;
  c.name = std::move(name);
  c.ours = p.ours.median() * 1e9;
  c.unit = "ns";
  c.baseline = p.baseline.median() * 1e9;
  c.baseline_name = std::move(baseline_name);
  c.threads = threads;
  c.runs = static_cast<int>(p.ours.runs());
  return c;
}

std::shared_ptr<const CpuDomainSet> make_set(const CpuTopology& topo, CpuSet cpus, int threads) {
  const CpuDomainSpec specs[] = {{CpuDomainId(1), std::move(cpus), threads}};
  auto set = CpuDomainSet::create_managed(topo, specs);
  return set.ok() ? std::move(set).value() : nullptr;
}

// An empty job that signals completion through an atomic (the waiter spins).
class FlagJob final : public CpuDomainJob {
 public:
  Status run(const CpuExecutionContext&) override { return ok_status(); }
  void complete(Status) noexcept override { done.store(true, std::memory_order_release); }
  std::atomic<bool> done{false};
};

void bench_threads(const CpuTopology& topo, int threads, int rounds, Reporter& reporter) {
  auto set = make_set(topo, topo.allowed_cpus(), threads);
  if (set == nullptr) {
    reporter.progress(fmt::format("domains: cannot build a {}-thread domain on CPUs {}", threads, topo.allowed_cpus()));
    return;
  }
  const CpuResourceDomain& domain = set->default_domain();
  tbb::task_arena arena(threads, threads > 1 ? 1 : 0);
  arena.initialize();
  volatile int sink = 0;

  {  // Empty entry.
    const FunctionRef<Status(const CpuDomainSession&)> empty = [](const CpuDomainSession&) { return ok_status(); };
    const Pair p = interleaved([&] { domain.enter(empty).ignore(); }, [&] { arena.execute([] {}); }, 2000, rounds);
    Case c = make_case(fmt::format("enter_empty_t{}", threads), p, "tbb_arena_execute", threads);
    const FunctionRef<Status()> empty_body = [] { return ok_status(); };
    const Samples direct = time_batched([&] { empty_body().ignore(); }, 2000);
    c.extra["direct_call_ns"] = direct.median() * 1e9;
    reporter.add(std::move(c));
  }

  {  // Per-operation overhead inside one entered session.
    const auto op = [&sink](const CpuExecutionContext& ctx) {
      sink = sink + ctx.max_threads();
      return ok_status();
    };
    const auto direct_op = [&sink](const ParallelContext& parallel) {
      sink = sink + parallel.max_threads();
      return ok_status();
    };
    Pair p;
    domain
        .enter([&](const CpuDomainSession& session) {
          const FunctionRef<Status(const CpuExecutionContext&)> call = op;
          const SequentialContext direct_ctx;
          const FunctionRef<Status(const ParallelContext&)> direct_call = direct_op;
          p = interleaved(
              [&] {
                const CpuExecutionContext ctx = session.context(ParallelMode::kInner);
                call(ctx).ignore();
              },
              [&] { direct_call(direct_ctx).ignore(); }, 20000, rounds);
          return ok_status();
        })
        .ignore();
    reporter.add(make_case(fmt::format("session_op_t{}", threads), p, "direct_call", threads));
  }

  for (const std::int64_t n : {std::int64_t{2}, std::int64_t{1000}}) {  // Fork-join.
    // Each side runs inside its own arena, so rounds alternate between one
    // domain session and one plain-arena execute (never nested: oneTBB runs
    // a loop in the arena of the calling thread).
    const auto ours = [&](const CpuExecutionContext& ctx) {
      ctx.parallel().parallel_for(0, n, 1, [&sink](std::int64_t b, std::int64_t) { sink = sink + b; });
    };
    // The same per-chunk body over a grain-1 range, split as oneTBB likes.
    const auto baseline = [&] {
      tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, 1),
                        [&sink](const tbb::blocked_range<std::int64_t>& r) { sink = sink + r.begin(); });
    };
    Pair p;
    for (int r = -1; r < rounds; ++r) {  // round -1 warms up
      double ours_s = 0;
      double base_s = 0;
      domain
          .enter([&](const CpuDomainSession& session) {
            const CpuExecutionContext ctx = session.context(ParallelMode::kInner);
            ours_s = warm_then_time([&] { ours(ctx); }, 200);
            return ok_status();
          })
          .ignore();
      arena.execute([&] { base_s = warm_then_time(baseline, 200); });
      if (r < 0) continue;
      p.ours.seconds.push_back(ours_s);
      p.baseline.seconds.push_back(base_s);
    }
    reporter.add(make_case(fmt::format("parallel_for_{}_t{}", n, threads), p, "tbb_parallel_for_auto", threads));
  }

  {  // Submit and wait: a hand-off to a worker thread and back.
    std::atomic<bool> flag{false};
    const Pair p = interleaved(
        [&] {
          auto job = std::make_shared<FlagJob>();
          domain.submit(job).ignore();
          while (!job->done.load(std::memory_order_acquire)) {
          }
        },
        [&] {
          flag.store(false, std::memory_order_relaxed);
          arena.enqueue([&flag] { flag.store(true, std::memory_order_release); });
          while (!flag.load(std::memory_order_acquire)) {
          }
        },
        200, rounds);
    reporter.add(make_case(fmt::format("submit_roundtrip_t{}", threads), p, "tbb_enqueue_flag", threads));
  }
  const CpuDomainMetrics m = domain.metrics();
  reporter.progress(fmt::format("domains t{}: installs {}, fan-outs {}, inline loops {}, worker pins {}", threads,
                                m.installs, m.parallel_fanouts, m.parallel_inline, m.worker_pins));
}

// Entry into a one-CPU domain from a thread allowed on more CPUs: bind and
// restore on every entry.
void bench_pinned_entry(const CpuTopology& topo, int rounds, Reporter& reporter) {
  if (topo.allowed_cpus().count() < 2) return;
  auto set = make_set(topo, CpuSet{topo.allowed_cpus().last()}, 1);
  if (set == nullptr) return;
  const CpuResourceDomain& domain = set->default_domain();
  tbb::task_arena arena(1, 0);
  arena.initialize();
  const FunctionRef<Status(const CpuDomainSession&)> empty = [](const CpuDomainSession&) { return ok_status(); };
  const Pair p = interleaved([&] { domain.enter(empty).ignore(); }, [&] { arena.execute([] {}); }, 200, rounds);
  Case c = make_case("enter_empty_pinned_t1", p, "tbb_arena_execute", 1);
  c.extra["entering_thread_pins"] = domain.metrics().entering_thread_pins;
  reporter.add(std::move(c));
}

}  // namespace

int run_domains_suite(const SuiteOptions& options, Reporter& reporter) {
  auto topo = CpuTopology::discover();
  if (!topo.ok()) {
    reporter.progress(topo.status().to_string());
    return 1;
  }
  const int rounds = options.runs > 0 ? options.runs : (options.quick ? 5 : 21);
  for (const int threads : options.threads) {
    if (threads < 1 || threads > topo->allowed_cpus().count()) {
      reporter.progress(
          fmt::format("domains: skipping {} threads ({} allowed CPUs)", threads, topo->allowed_cpus().count()));
      continue;
    }
    bench_threads(*topo, threads, rounds, reporter);
  }
  bench_pinned_entry(*topo, rounds, reporter);
  return 0;
}

}  // namespace tenferro::bench
