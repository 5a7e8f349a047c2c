// The eager fast path through the real CPU engine allocates nothing besides
// the output: a counting operator new in this test binary
// (its own program, so no other test sees the replacement) counts every
// allocation around 1000 calls of ctx.add on 8 elements and of a 2x2
// matmul, and the context's metrics prove every call took the fast path.
#include <gtest/gtest.h>

#include <algorithm>

#include "cpu_engine/engine_test_support.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "testing/counting_new.h"

// Every global operator new of this test program counts (Note [Counting
// operator new] in src/testing/counting_new.h); tests read the difference
// around the code they check. Storage::allocate_host uses the nothrow
// form, so an output tensor from the default host allocator is exactly one
// counted allocation.

namespace tenferro::cpu {
namespace {

TEST(CpuEngineEager, OnlyTheOutputIsAllocatedPerCall) {
  if (!::tenferro::testing::kCountsAllocations)
    GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto rt = testing::runtime_over(*engine);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  runtime::EagerContext ctx = rt->on();
  const Tensor a = *Tensor::from_values<double>({1, 2, 3, 4, 5, 6, 7, 8}, Dims{8});
  const Tensor m = *Tensor::from_values<double>({1, 2, 3, 4}, Dims{2, 2});
  ASSERT_TRUE(ctx.add(a, a).ok());  // warm up: capability queries, slot cache
  ASSERT_TRUE(ctx.matmul(m, m).ok());
  const auto* native = dynamic_cast<const NativeGemmProvider*>(engine->gemm.get());
  ASSERT_NE(native, nullptr);
  const NativeGemmCounters gemm_before = native->counters();
  const DotGeneralCounters dot_before = engine->dot_general->counters();

  constexpr int kCalls = 1000;
  const std::uint64_t before = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.add(a, a);
    ASSERT_TRUE(y.ok());
  }
  // Tensor storage is one allocation (Storage::allocate_host, nothrow operator new).
  EXPECT_EQ(::tenferro::testing::allocation_count() - before, static_cast<std::uint64_t>(kCalls));
  const std::uint64_t before_mm = ::tenferro::testing::allocation_count();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.matmul(m, m);
    ASSERT_TRUE(y.ok());
  }
  EXPECT_EQ(::tenferro::testing::allocation_count() - before_mm, static_cast<std::uint64_t>(kCalls));

  // Every call ran on the CPU engine's slots directly, and the matmuls on
  // the dot_general composite's tiny loop (Note [Tiny dot_general]): no
  // planning, no GEMM provider call.
  EXPECT_EQ(ctx.metrics().fast_path_calls, 2u * kCalls + 2u);
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
  EXPECT_EQ(ctx.metrics().capability_queries, 2u);
  EXPECT_EQ(engine->dot_general->counters().tiny_calls - dot_before.tiny_calls, kCalls);
  EXPECT_EQ(engine->dot_general->counters().planned_calls, dot_before.planned_calls);
  EXPECT_EQ(native->counters().small_problems, gemm_before.small_problems);
  auto y = ctx.matmul(m, m);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->to_vector<double>().value(), (std::vector<double>{7, 10, 15, 22}));
}

}  // namespace
}  // namespace tenferro::cpu
