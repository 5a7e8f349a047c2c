// The native einsum engine under concurrent callers (built into
// tenferro_einsum_cpu_tsan_tests, which also runs under ThreadSanitizer):
// eager einsum from several threads on one runtime, and the executor's
// shared plan cache and workspace pool with a cache small enough that
// threads evict each other's plans. Every result is checked against a
// brute-force einsum, so a race that corrupts a plan or a workspace fails
// here even without TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_support.h"

namespace tenferro::einsum {
namespace {

using namespace test_support;  // NOLINT(google-build-using-namespace): test helpers

struct Problem {
  RandomEinsum spec;
  std::vector<Dense> operands;
  Dense expected;
};

// Small random networks (distinct shapes, so distinct cache keys) with their
// brute-force results, computed before any thread starts.
std::vector<Problem> problems(int count) {
  std::vector<Problem> out;
  for (int i = 0; i < count; ++i) {
    Problem p;
    p.spec = random_einsum(1000 + static_cast<std::uint64_t>(i), 3, 5, 3, 3);
    Result<Network> net = Network::bind(p.spec.subscripts, refs(p.spec.shapes));
    EXPECT_TRUE(net.ok()) << net.status().to_string();
    p.operands = random_operands(p.spec.shapes, static_cast<std::uint64_t>(i));
    p.expected = brute_force_einsum(*net, p.operands);
    out.push_back(std::move(p));
  }
  return out;
}

// Runs `call(problem)` for every problem from `threads` threads, each in its
// own order; returns the number of results that differed from brute force.
template <class Call>
int run_concurrently(const std::vector<Problem>& ps, int threads, int rounds, Call call) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r)
        for (std::size_t k = 0; k < ps.size(); ++k) {
          const Problem& p = ps[(k * static_cast<std::size_t>(t + 1) + static_cast<std::size_t>(r)) % ps.size()];
          Result<Tensor> got = call(p);
          if (!got.ok() || max_abs_diff(to_dense(*got), p.expected) > 1e-10) wrong.fetch_add(1);
        }
    });
  for (std::thread& w : workers) w.join();
  return wrong.load();
}

TEST(EinsumConcurrency, EagerCallsFromManyThreadsOnOneRuntime) {
  const std::vector<Problem> ps = problems(12);
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  const int wrong = run_concurrently(ps, 4, 3, [&](const Problem& p) {
    runtime::EagerContext ctx = t.runtime->on();
    const std::vector<Tensor> inputs = to_tensors(p.operands);
    return einsum(ctx, p.spec.subscripts, inputs);
  });
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(t.executor->metrics().cache.hits, 0u);
}

TEST(EinsumConcurrency, SharedPlanCacheEvictingUnderConcurrentPrepares) {
  const std::vector<Problem> ps = problems(16);
  CpuEinsumOptions options;
  options.cache.max_entries = 4;  // fewer than the problems: threads evict each other's plans
  std::shared_ptr<CpuEinsumExecutor> executor = make_executor(options);
  const cpu::SequentialContext sequential;
  const int wrong = run_concurrently(ps, 4, 2, [&](const Problem& p) -> Result<Tensor> {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const EinsumOp> op, EinsumOp::create(p.spec.subscripts));
    return executor->einsum(*op, to_tensors(p.operands), sequential);
  });
  EXPECT_EQ(wrong, 0);
  const EinsumPlanCacheStats stats = executor->metrics().cache;
  EXPECT_LE(stats.entries, 4u);
  EXPECT_GT(stats.evictions, 0u);
}

}  // namespace
}  // namespace tenferro::einsum
