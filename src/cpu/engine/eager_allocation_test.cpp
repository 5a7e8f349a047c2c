// The eager fast path through the real CPU engine allocates nothing besides
// the output (issue 5 item 5): a counting operator new in this test binary
// (its own program, so no other test sees the replacement) counts every
// allocation around 1000 calls of ctx.add on 8 elements and of a 2x2
// matmul, and the context's metrics prove every call took the fast path.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "cpu/engine/engine_test_support.h"
#include "tenferro/cpu/gemm/native_gemm.h"

// Note [Counting allocator] (as in src/runtime/eager_test.cpp): every global
// operator new of this binary counts into g_allocations. ThreadSanitizer's
// runtime defines operator new itself, so the replacement and the test are
// compiled out under TSan.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TENFERRO_NO_COUNTING_NEW 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TENFERRO_NO_COUNTING_NEW 1
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

#ifndef TENFERRO_NO_COUNTING_NEW
namespace {
void* counted_malloc(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_aligned(std::size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t align = std::max<std::size_t>(static_cast<std::size_t>(a), sizeof(void*));
  return std::aligned_alloc(align, (std::max<std::size_t>(n, 1) + align - 1) / align * align);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace tenferro::cpu {
namespace {

TEST(CpuEngineEager, OnlyTheOutputIsAllocatedPerCall) {
#ifdef TENFERRO_NO_COUNTING_NEW
  GTEST_SKIP() << "ThreadSanitizer owns operator new; the release and ASan builds run this test";
#endif
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
  const std::uint64_t before = g_allocations.load();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.add(a, a);
    ASSERT_TRUE(y.ok());
  }
  // Tensor storage is one allocation (Storage::allocate_host, aligned nothrow).
  EXPECT_EQ(g_allocations.load() - before, static_cast<std::uint64_t>(kCalls));
  const std::uint64_t before_mm = g_allocations.load();
  for (int i = 0; i < kCalls; ++i) {
    Result<Tensor> y = ctx.matmul(m, m);
    ASSERT_TRUE(y.ok());
  }
  EXPECT_EQ(g_allocations.load() - before_mm, static_cast<std::uint64_t>(kCalls));

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
