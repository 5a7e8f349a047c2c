// The CPU linalg engine under concurrent eager callers (built into
// tenferro_linalg_cpu_tsan_tests, which also runs under ThreadSanitizer):
// threads share one runtime, one engine and its workspace pool, calling
// eigh, qr, solve and (where the engine serves it) svd on matrices of several sizes. Each result must equal,
// bit for bit, the result of the same call made before any thread started
// (the providers are deterministic for a given input), so a race on a
// shared workspace or plan shows up as a wrong value even without TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "linalg_test_support.h"
#include "tenferro/linalg.h"

namespace tenferro::linalg {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test helpers

struct Call {
  Tensor a;
  Tensor b;
  int kind = 0;  // 0 eigh, 1 qr, 2 solve, 3 svd
};

std::vector<std::vector<cd>> evaluate(runtime::Runtime& rt, const Call& c) {
  runtime::EagerContext ctx = rt.on();
  std::vector<std::vector<cd>> out;
  if (c.kind == 0) {
    Result<EigenResult> r = eigh(ctx, c.a);
    if (r.ok()) out = {values_of(r->eigenvalues), values_of(r->eigenvectors)};
  } else if (c.kind == 3) {
    Result<SvdResult> r = svd(ctx, c.a);
    if (r.ok()) out = {values_of(r->u), values_of(r->s), values_of(r->vh)};
  } else if (c.kind == 1) {
    Result<QrResult> r = qr(ctx, c.a);
    if (r.ok()) out = {values_of(r->q), values_of(r->r)};
  } else {
    Result<Tensor> r = solve(ctx, c.a, c.b);
    if (r.ok()) out = {values_of(*r)};
  }
  return out;
}

// `with_svd`: the engine serves svd (the Eigen provider leaves it to LAPACK).
void expect_concurrent_calls_match_sequential(const std::shared_ptr<CpuLinalgEngine>& engine, bool with_svd) {
  const int kinds = with_svd ? 4 : 3;
  runtime::Runtime rt = make_runtime(engine);
  std::vector<Call> calls;
  for (int i = 0; i < 3 * kinds; ++i) {
    const std::int64_t n = 3 + i;
    const auto seed = static_cast<std::uint32_t>(i);
    calls.push_back(Call{well_conditioned(DType::kFloat64, {2, n, n}, seed),
                         random_tensor(DType::kFloat64, {2, n, 2}, seed + 100), i % kinds});
  }
  std::vector<std::vector<std::vector<cd>>> expected;
  for (const Call& c : calls) {
    expected.push_back(evaluate(rt, c));
    ASSERT_FALSE(expected.back().empty()) << "sequential call " << expected.size() - 1 << " failed";
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const std::size_t i = (k + static_cast<std::size_t>(t * 2 + round)) % calls.size();
          if (evaluate(rt, calls[i]) != expected[i]) wrong.fetch_add(1);
        }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(LinalgConcurrency, EigenEngineSharedByEagerThreads) {
  expect_concurrent_calls_match_sequential(
      std::make_shared<CpuLinalgEngine>(
          LinalgProviderPolicy::fixed(LinalgProviderBundle::all(std::make_shared<EigenLinalgProvider>())),
          LinalgEngineOptions{}, nullptr),
      /*with_svd=*/false);
}

TEST(LinalgConcurrency, DefaultEngineSharedByEagerThreads) {
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default();
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  expect_concurrent_calls_match_sequential(engine.value(), /*with_svd=*/true);
}

// Notes [Serial OpenBLAS is not reentrant] and [An OpenBLAS of our own]:
// two runtimes, each with its own default engine (and LAPACK provider),
// computing SVDs of 96 x 96 matrices on two threads at once. On the serial
// OpenBLAS without the provider's lock its shared GEMM buffers gave wrong
// values (the audit: 187 of 3,000 pinv calls and 8 of 3,000 SVDs on 2
// threads); the default provider's own pthread copy runs them unlocked.
TEST(LinalgConcurrency, TwoRuntimesCallingLapackAtOnceGetTheirOwnResults) {
  std::vector<runtime::Runtime> runtimes;
  for (int r = 0; r < 2; ++r) {
    Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default();
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    runtimes.push_back(make_runtime(*engine));
  }
  const Call call{well_conditioned(DType::kFloat64, {96, 96}, 7), Tensor(), 3};
  const std::vector<std::vector<cd>> expected = evaluate(runtimes[0], call);
  ASSERT_FALSE(expected.empty());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i)
        if (evaluate(runtimes[static_cast<std::size_t>(t)], call) != expected) wrong.fetch_add(1);
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tenferro::linalg
