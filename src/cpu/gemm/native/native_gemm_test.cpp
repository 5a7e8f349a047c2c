// Native GEMM provider specifics: the ISA chosen from the CPU, the paths its
// counters prove were taken (small tiles or loop, blocked, parallel),
// steady-state calls without workspace allocation, workspace affinity, and
// option validation.
#include "tenferro/cpu/gemm/native_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "cpu/cpu_isa_test_support.h"
#include "cpu/gemm/gemm_test_support.h"
#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/gemm_workspace_pool.h"
#include "cpu/gemm/native/gemv_kernels.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"

namespace tenferro::cpu::testing {
namespace {

// The native provider on the kernel table of `isa`.
std::shared_ptr<NativeGemmProvider> native_on(NativeGemmIsa isa) {
  NativeGemmOptions o;
  o.isa = isa;
  return *NativeGemmProvider::create(o);
}

template <class T>
Status run(const NativeGemmProvider& p, std::int64_t m, std::int64_t n, std::int64_t k, const ParallelContext& ctx,
           StridedMatrix<T>& a, StridedMatrix<T>& b, StridedMatrix<T>& c) {
  return p.gemm(GemmRequest{dtype_of<T>, GemmProblem{m, n, k, a.input(), b.input(), c.output()}}, ctx);
}

TEST(NativeGemmTest, AutoPicksTheBestIsaTheCpuHas) {
  const ScopedCpuIsaEnv unset(nullptr);
  auto p = NativeGemmProvider::create();
  ASSERT_TRUE(p.ok());
  const NativeGemmIsa expected = best_cpu_isa();
  EXPECT_EQ((*p)->isa(), expected);
  EXPECT_NE((*p)->capability().detail.find(std::string(to_string(expected))), std::string::npos);
  NativeGemmOptions bad;
  bad.kc = -1;
  EXPECT_EQ(NativeGemmProvider::create(bad).status().code(), ErrorCode::kInvalidArgument);
}

TEST(NativeGemmTest, CountersProveWhichPathRan) {
  auto p = *NativeGemmProvider::create();
  SequentialContext seq;
  ArenaParallelContext two(2);
  StridedMatrix<double> a(200, 200, MatLayout::kRowMajor, 1), b(200, 200, MatLayout::kColMajor, 2),
      c(200, 200, MatLayout::kRowMajor, 3);

  ASSERT_TRUE(run(*p, 8, 8, 8, seq, a, b, c).ok());  // 512 <= small_max_mnk
  NativeGemmCounters n = p->counters();
  EXPECT_EQ(n.small_problems, 1);
  EXPECT_EQ(n.small_tiled_problems, 1) << "a real 8^3 problem runs in register tiles (Note [Small GEMM])";
  EXPECT_EQ(n.blocked_problems, 0);
  // A product with one column reads A in place, whatever its size (Note
  // [Matrix-vector GEMM]).
  StridedMatrix<double> thin_a(13, 300, MatLayout::kRowMajor, 7), thin_b(300, 1, MatLayout::kColMajor, 8),
      thin_c(13, 1, MatLayout::kColMajor, 9);
  ASSERT_TRUE(run(*p, 13, 1, 300, seq, thin_a, thin_b, thin_c).ok());
  n = p->counters();
  EXPECT_EQ(n.gemv_problems, 1);
  EXPECT_EQ(n.small_problems, 1);
  // A small complex problem runs in register tiles too (Note [Small complex
  // GEMM]: the AVX-512 and AVX2 tables), A read in place or copied.
  for (const MatLayout la : {MatLayout::kColMajor, MatLayout::kRowMajor}) {
    StridedMatrix<std::complex<double>> za(5, 4, la, 1), zb(4, 3, MatLayout::kColMajor, 2),
        zc(5, 3, MatLayout::kColMajor, 3);
    ASSERT_TRUE(
        p->gemm(GemmRequest{DType::kComplex128, GemmProblem{5, 3, 4, za.input(), zb.input(), zc.output()}}, seq).ok());
  }
  n = p->counters();
  const bool simd = p->isa() != NativeGemmIsa::kPortable;
  EXPECT_EQ(n.small_problems, 3);
  EXPECT_EQ(n.small_tiled_problems, simd ? 3 : 1);
  if (simd) {
    // The AVX-512 and AVX2 tiles take products up to 64^3 (Note [Small GEMM]),
    // complex ones too.
    ASSERT_TRUE(run(*p, 48, 40, 64, seq, a, b, c).ok());
    StridedMatrix<std::complex<float>> ca(64, 64, MatLayout::kRowMajor, 4), cb(64, 64, MatLayout::kColMajor, 5),
        cc(64, 64, MatLayout::kRowMajor, 6);
    ASSERT_TRUE(run(*p, 64, 64, 64, seq, ca, cb, cc).ok());
    n = p->counters();
    EXPECT_EQ(n.small_tiled_problems, 5);
    EXPECT_EQ(n.blocked_problems, 0);
  }

  ASSERT_TRUE(run(*p, 200, 200, 200, seq, a, b, c).ok());
  n = p->counters();
  EXPECT_EQ(n.blocked_problems, 1);
  EXPECT_EQ(n.parallel_problems, 0);
  EXPECT_EQ(n.fork_joins, 0) << "a sequential context never forks";
  const std::int64_t allocations = n.workspace_allocations;
  EXPECT_GE(allocations, 1);

  // One (NC, KC) block: one fork-join, every task packing its own operands
  // (Note [Single-block parallel GEMM]).
  ASSERT_TRUE(run(*p, 200, 200, 200, two, a, b, c).ok());
  n = p->counters();
  EXPECT_EQ(n.parallel_problems, 1);
  EXPECT_EQ(n.fork_joins, 1);
  // A depth above KC (256 or 512 doubles, by ISA) takes the shared-panel path.
  StridedMatrix<double> deep_a(200, 600, MatLayout::kRowMajor, 4), deep_b(600, 200, MatLayout::kColMajor, 5);
  ASSERT_TRUE(run(*p, 200, 200, 600, two, deep_a, deep_b, c).ok());
  n = p->counters();
  EXPECT_EQ(n.parallel_problems, 2);
  EXPECT_GE(n.fork_joins, 1 + 2 * 2) << "B packing and the C blocks each fork once per block step";

  // Steady state: repeated calls reuse the packing workspace.
  const std::int64_t before = p->counters().workspace_allocations;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(run(*p, 200, 200, 200, seq, a, b, c).ok());
    ASSERT_TRUE(run(*p, 200, 200, 200, two, a, b, c).ok());
  }
  EXPECT_EQ(p->counters().workspace_allocations, before);

  // A problem below parallel_min_flops stays on the calling thread.
  ASSERT_TRUE(run(*p, 20, 20, 20, two, a, b, c).ok());
  EXPECT_EQ(p->counters().parallel_problems, 2 + 5);

  // Depth 1 is written directly (Note [Rank-1 GEMM]), split over the
  // workers only when large: 200 x 200 is below parallel_min_flops.
  const NativeGemmCounters before_rank1 = p->counters();
  ASSERT_TRUE(run(*p, 200, 200, 1, two, a, b, c).ok());
  n = p->counters();
  EXPECT_EQ(n.rank1_problems, before_rank1.rank1_problems + 1);
  EXPECT_EQ(n.blocked_problems, before_rank1.blocked_problems);
  EXPECT_EQ(n.small_problems, before_rank1.small_problems);
  EXPECT_EQ(n.fork_joins, before_rank1.fork_joins);
}

TEST(NativeGemmTest, DotAndMatrixVectorProductsSplitWithoutChangingTheResult) {
  // Note [Matrix-vector GEMM]: the rows of a long matrix-vector product, and
  // the depth chunks of a long dot product, split over the workers; each
  // element sums in the same order either way, so the results are equal.
  auto p = *NativeGemmProvider::create();
  SequentialContext seq;
  ArenaParallelContext two(2);
  const std::int64_t k = 600000;  // 2 k flops >= parallel_min_flops (2^20); 19 depth chunks
  StridedMatrix<double> x(1, k, MatLayout::kRowMajor, 1), y(k, 1, MatLayout::kColMajor, 2);
  StridedMatrix<double> d1(1, 1, MatLayout::kColMajor, 3), d2(1, 1, MatLayout::kColMajor, 3);
  ASSERT_TRUE(run(*p, 1, 1, k, seq, x, y, d1).ok());
  const NativeGemmCounters before = p->counters();
  ASSERT_TRUE(run(*p, 1, 1, k, two, x, y, d2).ok());
  NativeGemmCounters n = p->counters();
  EXPECT_EQ(n.gemv_problems, before.gemv_problems + 1);
  EXPECT_EQ(n.fork_joins, before.fork_joins + 1);
  EXPECT_EQ(n.blocked_problems, 0);
  EXPECT_EQ(n.workspace_allocations, 0) << "nothing is packed";
  EXPECT_EQ(d1.at(0, 0), d2.at(0, 0));
  double want = 0;
  for (std::int64_t l = 0; l < k; ++l) want += x.at(0, l) * y.at(l, 0);
  EXPECT_NEAR(d1.at(0, 0), want, 1e-9);

  auto rows_split_alike = [&]<class T>(T, MatLayout la) {
    const std::int64_t m = 1000, depth = 700;  // >= 1.4 M flops: 16 row grains split over two workers
    StridedMatrix<T> a(m, depth, la, 4), b(depth, 1, MatLayout::kColMajor, 5);
    StridedMatrix<T> c1(m, 1, MatLayout::kColMajor, 6), c2(m, 1, MatLayout::kColMajor, 6);
    ASSERT_TRUE(run(*p, m, 1, depth, seq, a, b, c1).ok());
    const std::int64_t forks = p->counters().fork_joins;
    ASSERT_TRUE(run(*p, m, 1, depth, two, a, b, c2).ok());
    EXPECT_EQ(p->counters().fork_joins, forks + 1);
    for (std::int64_t i = 0; i < m; ++i) ASSERT_EQ(c1.at(i, 0), c2.at(i, 0)) << "row " << i;
  };
  for (const MatLayout la : {MatLayout::kRowMajor, MatLayout::kColMajor}) {
    rows_split_alike(double{}, la);
    rows_split_alike(std::complex<double>{}, la);
  }
  EXPECT_EQ(p->counters().blocked_problems, 0);
}

TEST(NativeGemmTest, LongMatrixVectorProductsSweepTheirRowsInParts) {
  // Note [Matrix-vector GEMM]: 2600 rows of a column-major A are summed in
  // sweeps of 8 KB of sums (1024 doubles, 2048 floats, 512 complex<double>,
  // 1024 complex<float>: 2 to 6 sweeps, the last one partial), on every ISA
  // table, against the reference.
  SequentialContext seq;
  const auto check = [&]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    const std::int64_t m = 2600, k = 5;
    StridedMatrix<T> a(m, k, MatLayout::kColMajor, 31), b(k, 1, MatLayout::kColMajor, 32),
        c(m, 1, MatLayout::kColMajor, 33);
    std::vector<std::complex<double>> ref;
    std::vector<double> bound;
    reference_gemm(a, b, 1.0, 0.0, c, ref, bound);
    const auto before = c.buffer;
    const std::int64_t gemv = p->counters().gemv_problems;
    ASSERT_TRUE(run(*p, m, 1, k, seq, a, b, c).ok());
    EXPECT_EQ(p->counters().gemv_problems, gemv + 1);
    EXPECT_TRUE(matches_reference(c, ref, bound, k, before)) << to_string(isa);
  };
  const ScopedCpuIsaEnv unset(nullptr);
  for (const NativeGemmIsa isa : {NativeGemmIsa::kAvx512, NativeGemmIsa::kAvx2, NativeGemmIsa::kPortable}) {
    if (!cpu_supports(isa)) continue;
    check(double{}, isa);
    check(float{}, isa);
    check(std::complex<double>{}, isa);
    check(std::complex<float>{}, isa);
  }
}

TEST(NativeGemmTest, BatchedDotProductsRunAcrossTheBatchAtEveryAlignment) {
  // Note [Batched dot products], and Note [Matrix-vector GEMM]'s alignment:
  // the operands start at every element offset from a cache line (with
  // AVX-512, a masked head vector up to the line, full vectors, a masked
  // tail), for batches with and without a tail.
  auto p = *NativeGemmProvider::create();
  auto check = [&]<class T>(T, std::int64_t count, std::int64_t k, std::int64_t offset) {
    SCOPED_TRACE(::testing::Message() << to_string(dtype_of<T>) << " count=" << count << " offset=" << offset);
    const std::int64_t ld = (count + 7) / 8 * 8;  // rows a multiple of 64 bytes apart
    std::vector<T> a(static_cast<std::size_t>(ld * k + 16)), b(a.size()), c(static_cast<std::size_t>(count));
    std::mt19937_64 rng(static_cast<std::uint64_t>(count + offset));
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = random_scalar<T>(rng);
      b[i] = random_scalar<T>(rng);
    }
    // The first element of the 64-byte line that holds a[0], plus `offset`.
    const std::size_t lead = (64 - reinterpret_cast<std::uintptr_t>(a.data()) % 64) % 64 / sizeof(T) % 8;
    const T* a0 = a.data() + lead + offset;
    const T* b0 = b.data() + lead + offset;
    StridedBatchedGemmRequest req;
    req.dtype = dtype_of<T>;
    req.problem = GemmProblem{1, 1, k, GemmInput{a0, 0, ld}, GemmInput{b0, ld, 0}, GemmOutput{c.data(), 0, 0}};
    req.batch_count = count;
    req.a_batch_stride = req.b_batch_stride = req.c_batch_stride = 1;
    const std::int64_t before = p->counters().dot_batch_problems;
    ASSERT_TRUE(p->gemm_strided_batched(req, SequentialContext{}).ok());
    EXPECT_EQ(p->counters().dot_batch_problems, before + count);
    for (std::int64_t j = 0; j < count; ++j) {
      std::complex<double> want = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        want += std::complex<double>(a0[l * ld + j]) * std::complex<double>(b0[l * ld + j]);
      }
      EXPECT_NEAR(std::abs(std::complex<double>(c[static_cast<std::size_t>(j)]) - want), 0.0, 1e-12) << j;
    }
  };
  for (std::int64_t offset = 0; offset < 8; ++offset) {
    for (const std::int64_t count : {3, 13, 64, 77}) {
      check(double{}, count, 30, offset);
      check(std::complex<double>{}, count, 9, offset);
    }
  }
  EXPECT_EQ(p->counters().gemv_problems, 0);
}

TEST(NativeGemmTest, BatchesOfShortDotsRunInOneKernelCall) {
  // `ij,ij->i` over rows of 3: the members run in the matrix-vector kernels
  // (run_vector_batch), not through the driver per member.
  auto p = *NativeGemmProvider::create();
  const std::int64_t count = 1000, k = 3;
  std::vector<double> a(static_cast<std::size_t>(count * k)), b(a.size()), c(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 0.5 + static_cast<double>(i % 7);
    b[i] = 1.0 - static_cast<double>(i % 5);
  }
  StridedBatchedGemmRequest req;
  req.dtype = DType::kFloat64;
  req.problem = GemmProblem{1, 1, k, GemmInput{a.data(), 0, 1}, GemmInput{b.data(), 1, 0}, GemmOutput{c.data(), 0, 0}};
  req.batch_count = count;
  req.a_batch_stride = req.b_batch_stride = k;
  req.c_batch_stride = 1;
  ASSERT_TRUE(p->gemm_strided_batched(req, SequentialContext{}).ok());
  const NativeGemmCounters n = p->counters();
  EXPECT_EQ(n.gemv_problems, count);
  EXPECT_EQ(n.small_problems + n.blocked_problems + n.dot_batch_problems, 0);
  for (std::int64_t j = 0; j < count; ++j) {
    double want = 0;
    for (std::int64_t l = 0; l < k; ++l)
      want += a[static_cast<std::size_t>(j * k + l)] * b[static_cast<std::size_t>(j * k + l)];
    EXPECT_EQ(c[static_cast<std::size_t>(j)], want) << j;
  }
}

TEST(NativeGemmTest, LargeOuterProductSplitsOverTheWorkers) {
  auto p = *NativeGemmProvider::create();
  ArenaParallelContext two(2);
  const std::int64_t m = 1000, n = 600;  // 2 m n = 1,200,000 flops >= parallel_min_flops (2^20)
  StridedMatrix<double> a(m, 1, MatLayout::kColMajor, 1), b(1, n, MatLayout::kRowMajor, 2),
      c(m, n, MatLayout::kRowMajor, 3);
  ASSERT_TRUE(run(*p, m, n, 1, two, a, b, c).ok());
  EXPECT_EQ(p->counters().rank1_problems, 1);
  EXPECT_EQ(p->counters().fork_joins, 1);
  for (std::int64_t i = 0; i < m; i += 37)
    for (std::int64_t j = 0; j < n; j += 41) EXPECT_DOUBLE_EQ(c.at(i, j), a.at(i, 0) * b.at(0, j)) << i << "," << j;
}

TEST(NativeGemmTest, SmallTilesFollowTheTablesIsa) {
  // Note [Small GEMM]: each kernel table brings its own tiles, so an ISA cap
  // (or a build whose compile target is narrower than the CPU) gets the
  // tiles of the table it runs: up to 64^3 with AVX-512 and AVX2, 16^3 with
  // the portable kernels.
  const ScopedCpuIsaEnv unset(nullptr);
  SequentialContext seq;
  for (const NativeGemmIsa isa : {NativeGemmIsa::kAvx512, NativeGemmIsa::kAvx2, NativeGemmIsa::kPortable}) {
    if (!cpu_supports(isa)) continue;
    auto p = native_on(isa);
    for (const std::int64_t size : {16, 40}) {
      StridedMatrix<double> a(size, size, MatLayout::kColMajor, 21), b(size, size, MatLayout::kRowMajor, 22),
          c(size, size, MatLayout::kColMajor, 23);
      std::vector<std::complex<double>> ref;
      std::vector<double> bound;
      reference_gemm(a, b, 1.0, 0.0, c, ref, bound);
      const auto before = c.buffer;
      const NativeGemmCounters start = p->counters();
      ASSERT_TRUE(run(*p, size, size, size, seq, a, b, c).ok());
      EXPECT_TRUE(matches_reference(c, ref, bound, size, before)) << to_string(isa) << " " << size;
      const bool tiled = size == 16 || isa != NativeGemmIsa::kPortable;
      EXPECT_EQ(p->counters().small_tiled_problems - start.small_tiled_problems, tiled ? 1 : 0)
          << to_string(isa) << " " << size;
    }
  }
}

// Note [Unpacked B]: a product whose M spans at most two micro-tiles reads
// B in place (every layout, depth blocks above KC, edge columns, one and
// two threads, the single-block and shared-panel paths) and matches the
// reference; three micro-tiles only when B's depth is contiguous; a taller
// one packs B.
TEST(NativeGemmTest, ThinProductsReadBInPlace) {
  auto p = *NativeGemmProvider::create();
  SequentialContext seq;
  ArenaParallelContext two(2);
  enum class InPlace { kYes, kNo, kIfDepthContiguous };
  struct Shape {
    std::int64_t m, n, k;
    InPlace in_place;
  };
  const internal::GemmKernelTable& table = p->isa() == NativeGemmIsa::kAvx512 ? internal::avx512_kernel_table()
                                           : p->isa() == NativeGemmIsa::kAvx2 ? internal::avx2_kernel_table()
                                                                              : internal::portable_kernel_table();
  // 13 rows are at most two micro-tiles of every ISA's in-place set (mr >= 8;
  // AVX2 double hands them from its 4-row set to the 8-row thin_m set, Note
  // [Row-vector kernel]); k = 150 fits one depth block, k = 300 does not;
  // n = 203 leaves edge columns. Depth-contiguous B runs in blocks of a
  // cache line of steps (Note [Depth-contiguous B in place]): k = 150 leaves
  // a remainder for float and double.
  auto check = [&]<class T>(DType dtype, const internal::GemmKernelSet<T>& set) {
    const internal::GemmKernelSet<T>& thin = set.thin_m != nullptr ? *set.thin_m : set;
    if (thin.micro_kernel_in_place_b == nullptr) GTEST_SKIP() << "no in-place kernel in " << table.isa;
    const std::int64_t mr = thin.mr;
    for (const Shape s : {Shape{13, 203, 150, InPlace::kYes}, Shape{13, 203, 300, InPlace::kYes},
                          Shape{5, 97, 600, InPlace::kYes}, Shape{3 * mr, 203, 150, InPlace::kIfDepthContiguous},
                          Shape{3 * mr + 1, 203, 150, InPlace::kNo}, Shape{200, 203, 150, InPlace::kNo}}) {
      for (const MatLayout lb : kInputLayouts) {
        // 5 rows times a B with contiguous rows is a few-column product, and
        // with contiguous columns (A's rows are) a dot-shaped one (Notes
        // [Few-column GEMM], [Dot-shaped GEMM]; tests of their own).
        const auto bv = StridedMatrix<T>(s.k, s.n, lb, 2).input();
        if (s.m <= internal::kSweepMaxColumns && (bv.col_stride == 1 || bv.row_stride == 1)) continue;
        for (const ParallelContext* ctx :
             {static_cast<const ParallelContext*>(&seq), static_cast<const ParallelContext*>(&two)}) {
          SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k << " B " << mat_layout_name(lb)
                                            << " threads " << ctx->max_threads() << " " << to_string(dtype));
          StridedMatrix<T> a(s.m, s.k, MatLayout::kRowMajor, 1), b(s.k, s.n, lb, 2),
              c(s.m, s.n, MatLayout::kColMajor, 3);
          std::vector<std::complex<double>> ref;
          std::vector<double> bound;
          reference_gemm(a, b, 1.5, -0.5, c, ref, bound);
          const auto before = c.buffer;
          const NativeGemmCounters n0 = p->counters();
          ASSERT_TRUE(
              p->gemm(GemmRequest{dtype, GemmProblem{s.m, s.n, s.k, a.input(), b.input(), c.output(), 1.5, -0.5}}, *ctx)
                  .ok());
          EXPECT_TRUE(matches_reference(c, ref, bound, s.k, before));
          const NativeGemmCounters n1 = p->counters();
          EXPECT_EQ(n1.blocked_problems, n0.blocked_problems + 1);
          const bool in_place =
              s.in_place == InPlace::kYes || (s.in_place == InPlace::kIfDepthContiguous && b.input().row_stride == 1);
          EXPECT_EQ(n1.in_place_b_problems, n0.in_place_b_problems + (in_place ? 1 : 0));
        }
      }
    }
  };
  check.operator()<double>(DType::kFloat64, table.f64);
  check.operator()<float>(DType::kFloat32, table.f32);
}

// C = 1.5 A B - 0.5 C into c1 on `seq` (against the reference) and into c2
// on `two`, which must give the same bits; `counted` is called between the
// two runs (for the counters of the first).
template <class T, class F>
void expect_alike_on_one_and_two_workers(const NativeGemmProvider& p, StridedMatrix<T>& a, StridedMatrix<T>& b,
                                         StridedMatrix<T>& c1, StridedMatrix<T>& c2, std::int64_t m, std::int64_t n,
                                         std::int64_t k, F&& counted) {
  SequentialContext seq;
  ArenaParallelContext two(2);
  std::vector<std::complex<double>> ref;
  std::vector<double> bound;
  reference_gemm(a, b, 1.5, -0.5, c1, ref, bound);
  const auto before = c1.buffer;
  ASSERT_TRUE(
      p.gemm(GemmRequest{dtype_of<T>, GemmProblem{m, n, k, a.input(), b.input(), c1.output(), 1.5, -0.5}}, seq).ok());
  EXPECT_TRUE(matches_reference(c1, ref, bound, k, before));
  counted();
  ASSERT_TRUE(
      p.gemm(GemmRequest{dtype_of<T>, GemmProblem{m, n, k, a.input(), b.input(), c2.output(), 1.5, -0.5}}, two).ok());
  ASSERT_EQ(c1.buffer, c2.buffer);
}

// f(T{}, isa) for every ISA table the CPU runs and every dtype in Ts.
template <class... Ts, class F>
void for_each_isa(F&& f) {
  const ScopedCpuIsaEnv unset(nullptr);
  for (const NativeGemmIsa isa : {NativeGemmIsa::kAvx512, NativeGemmIsa::kAvx2, NativeGemmIsa::kPortable}) {
    if (cpu_supports(isa)) (f(Ts{}, isa), ...);
  }
}

TEST(NativeGemmTest, FewColumnProductsReadAInPlace) {
  // Note [Few-column GEMM]: 2 to 8 columns of C with A's columns contiguous,
  // or 2 to 8 rows of C with B's rows contiguous (numpy's x @ W), sweep the
  // large operand in place on every ISA table (rows past the last whole
  // vector in scalars), at any layout of the small operand and of C, alike
  // on one worker and two; other layouts keep their paths. Against the
  // reference.
  for_each_isa<double, float, std::complex<double>, std::complex<float>>([]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    for (const std::int64_t small : {2, 3, 5, 8}) {
      for (const auto& size : {std::pair<std::int64_t, std::int64_t>{67, 17}, {523, 260}}) {
        const std::int64_t large = size.first, k = size.second;  // (clang 14 captures no structured bindings)
        for (const bool wide : {false, true}) {                  // C is small x large (x @ W) or large x small
          const std::int64_t m = wide ? small : large, n = wide ? large : small;
          for (const MatLayout la : kInputLayouts) {
            for (const MatLayout lb : kInputLayouts) {
              for (const MatLayout lc : {MatLayout::kColMajor, MatLayout::kRowMajor}) {
                SCOPED_TRACE(::testing::Message() << to_string(isa) << " " << to_string(dtype_of<T>) << " " << m << "x"
                                                  << n << "x" << k << " A " << mat_layout_name(la) << " B "
                                                  << mat_layout_name(lb) << " C " << mat_layout_name(lc));
                StridedMatrix<T> a(m, k, la, 1), b(k, n, lb, 2), c1(m, n, lc, 3), c2(m, n, lc, 3);
                const std::int64_t few = p->counters().few_column_problems;
                expect_alike_on_one_and_two_workers(*p, a, b, c1, c2, m, n, k, [&] {
                  // The large operand's unit stride along the large dimension.
                  // Small problems stay in register tiles (Note [Small GEMM]).
                  const bool small_problem = m * n * k <= p->small_max_mnk(dtype_of<T>);
                  const bool swept = (wide ? b.input().col_stride == 1 : a.input().row_stride == 1) &&
                                     small <= internal::sweep_max_columns<T>() && !small_problem;
                  if (!small_problem) {
                    EXPECT_EQ(p->counters().few_column_problems, few + (swept ? 1 : 0));
                  }
                });
              }
            }
          }
        }
      }
    }
  });
}

TEST(NativeGemmTest, DotShapedProductsRunAsDotProducts) {
  // Note [Dot-shaped GEMM]: a few rows by a few columns over a long depth,
  // both operands contiguous along it, runs as matrix-vector products over
  // the smaller side, on every ISA table and dtype, alike on one worker and
  // two; against the reference. A depth-strided operand keeps its path.
  struct Shape {
    std::int64_t m, n, k;
  };
  for_each_isa<double, float, std::complex<double>, std::complex<float>>([]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    for (const Shape s :
         {Shape{2, 2, 2051}, Shape{3, 8, 700}, Shape{8, 5, 128}, Shape{100, 2, 300}, Shape{2, 37, 600}}) {
      for (const MatLayout lc : {MatLayout::kColMajor, MatLayout::kRowMajor}) {
        for (const bool contiguous : {true, false}) {
          SCOPED_TRACE(::testing::Message()
                       << to_string(isa) << " " << to_string(dtype_of<T>) << " " << s.m << "x" << s.n << "x" << s.k
                       << " C " << mat_layout_name(lc) << (contiguous ? "" : " A column-major"));
          // A's rows and B's columns run along the depth (ij,kj->ik).
          StridedMatrix<T> a(s.m, s.k, contiguous ? MatLayout::kRowMajor : MatLayout::kColMajor, 1),
              b(s.k, s.n, MatLayout::kColMajor, 2), c1(s.m, s.n, lc, 3), c2(s.m, s.n, lc, 3);
          const std::int64_t dots = p->counters().dot_shaped_problems;
          expect_alike_on_one_and_two_workers(*p, a, b, c1, c2, s.m, s.n, s.k, [&] {
            EXPECT_EQ(p->counters().dot_shaped_problems, dots + (contiguous ? 1 : 0));
          });
        }
      }
    }
  });
}

TEST(NativeGemmTest, TallComplexDotShapedProductsStreamAOnce) {
  // Note [Tall dot-shaped GEMM]: a complex A larger than the cache whose
  // rows run along the depth, times 2 to 8 columns, runs as dot products
  // over row chunks, B's columns copied when they are strided, alike on one
  // worker and two (rows split mid-chunk), against the reference; real
  // types keep the blocked path.
  for_each_isa<double, float, std::complex<double>, std::complex<float>>([]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    constexpr bool kComplex = !std::is_floating_point_v<T>;
    for (const std::int64_t n : {3, 8}) {
      const std::int64_t m = 1100, k = 301;  // A: 2.6 or 5.3 MB complex
      for (const MatLayout lb : {MatLayout::kRowMajor, MatLayout::kColMajor}) {
        for (const MatLayout lc : {MatLayout::kColMajor, MatLayout::kRowMajor}) {
          SCOPED_TRACE(::testing::Message() << to_string(isa) << " " << to_string(dtype_of<T>) << " n " << n << " B "
                                            << mat_layout_name(lb) << " C " << mat_layout_name(lc));
          StridedMatrix<T> a(m, k, MatLayout::kRowMajor, 1), b(k, n, lb, 2), c1(m, n, lc, 3), c2(m, n, lc, 3);
          const NativeGemmCounters before = p->counters();
          expect_alike_on_one_and_two_workers(*p, a, b, c1, c2, m, n, k, [&] {
            EXPECT_EQ(p->counters().dot_shaped_problems, before.dot_shaped_problems + (kComplex ? 1 : 0));
            EXPECT_EQ(p->counters().blocked_problems, before.blocked_problems + (kComplex ? 0 : 1));
          });
        }
      }
    }
  });
}

TEST(NativeGemmTest, ShortRowsRunWithTheirDepthAsAConstant) {
  // Note [Short rows]: a matrix-vector product whose rows are contiguous
  // and shorter than 8 elements runs short_rows, A dense or padded, C
  // contiguous or strided, with and without alpha / beta, on every ISA
  // table and dtype, alike on one worker and two; against the reference.
  for_each_isa<double, float, std::complex<double>, std::complex<float>>([]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    SequentialContext seq;
    for (const std::int64_t k : {1, 2, 3, 4, 5, 7, 8}) {
      for (const std::int64_t m : {1, 5, 67, 3000}) {
        for (const std::int64_t pad : {0, 3}) {  // A dense (row stride k) or its rows k + 3 apart
          for (const MatLayout lc : {MatLayout::kColMajor, MatLayout::kPadded}) {
            SCOPED_TRACE(::testing::Message() << to_string(isa) << " " << to_string(dtype_of<T>) << " " << m << "x" << k
                                              << " A pad " << pad << " C " << mat_layout_name(lc));
            StridedMatrix<T> a(m, k + pad, MatLayout::kRowMajor, 1), b(k, 1, lc, 2), c1(m, 1, lc, 3), c2(m, 1, lc, 3),
                plain(m, 1, MatLayout::kColMajor, 4);
            a.cols = k;
            const std::int64_t before = p->counters().short_row_problems;
            expect_alike_on_one_and_two_workers(*p, a, b, c1, c2, m, 1, k, [&] {
              // (a depth of 1 is an outer product: Note [Rank-1 GEMM])
              EXPECT_EQ(p->counters().short_row_problems, before + (k > 1 && k < 8 ? 1 : 0));
            });
            // alpha = 1, beta = 0 into a contiguous C: the plain stores.
            std::vector<std::complex<double>> ref;
            std::vector<double> bound;
            reference_gemm(a, b, 1.0, 0.0, plain, ref, bound);
            const auto old = plain.buffer;
            ASSERT_TRUE(run(*p, m, 1, k, seq, a, b, plain).ok());
            EXPECT_TRUE(matches_reference(plain, ref, bound, k, old));
          }
        }
      }
    }
  });
}

TEST(NativeGemmTest, TinyBatchMembersRunInOneLoop) {
  // Note [Tiny batch members]: batches of members of at most 4 x 4 x 4, in
  // row- and column-major layouts, run in one loop over the batch; every
  // member equals the same product run alone (the per-member driver), and a
  // split over two workers changes no bit.
  auto p = *NativeGemmProvider::create();
  NativeGemmOptions forking;
  forking.parallel_min_flops = 1;  // every batch splits over the workers
  auto split = *NativeGemmProvider::create(forking);
  SequentialContext seq;
  ArenaParallelContext two(2);
  const auto check = [&]<class T>(T) {
    std::mt19937_64 rng(7);
    for (std::int64_t m = 2; m <= 4; ++m) {
      for (std::int64_t n = 2; n <= 4; ++n) {
        for (std::int64_t k = 1; k <= 4; ++k) {
          for (const bool row_major : {true, false}) {
            SCOPED_TRACE(::testing::Message() << to_string(dtype_of<T>) << " " << m << "x" << n << "x" << k
                                              << (row_major ? " row-major" : " column-major"));
            const std::int64_t count = 201;  // four row grains (kGemvRowGrain), the last partial
            const auto strides = [&](std::int64_t rows, std::int64_t cols) {
              return row_major ? std::pair<std::int64_t, std::int64_t>{cols, 1}
                               : std::pair<std::int64_t, std::int64_t>{1, rows};
            };
            std::vector<T> a(static_cast<std::size_t>(count * m * k)), b(static_cast<std::size_t>(count * k * n));
            for (T& x : a) x = random_scalar<T>(rng);
            for (T& x : b) x = random_scalar<T>(rng);
            std::vector<T> c(static_cast<std::size_t>(count * m * n));
            for (T& x : c) x = random_scalar<T>(rng);
            std::vector<T> alone = c, batched = c, forked = c;
            // Plain pairs: clang 14 captures no structured bindings.
            const std::pair<std::int64_t, std::int64_t> sa = strides(m, k), sb = strides(k, n), sc = strides(m, n);
            const auto member = [&](std::vector<T>& out, std::int64_t j) {
              return GemmProblem{m,
                                 n,
                                 k,
                                 GemmInput{a.data() + j * m * k, sa.first, sa.second},
                                 GemmInput{b.data() + j * k * n, sb.first, sb.second},
                                 GemmOutput{out.data() + j * m * n, sc.first, sc.second},
                                 1.5,
                                 -0.5};
            };
            for (std::int64_t j = 0; j < count; ++j) {
              ASSERT_TRUE(p->gemm(GemmRequest{dtype_of<T>, member(alone, j)}, seq).ok());
            }
            const std::int64_t tiny = p->counters().tiny_batch_problems;
            ASSERT_TRUE(
                p->gemm_strided_batched(
                     StridedBatchedGemmRequest{dtype_of<T>, member(batched, 0), count, m * k, k * n, m * n}, seq)
                    .ok());
            EXPECT_EQ(p->counters().tiny_batch_problems, tiny + count);
            for (std::size_t e = 0; e < c.size(); ++e) {
              ASSERT_NEAR(std::abs(batched[e] - alone[e]), 0.0, 1e-5 * (1.0 + std::abs(alone[e]))) << "element " << e;
            }
            const std::int64_t forks = split->counters().fork_joins;
            ASSERT_TRUE(
                split
                    ->gemm_strided_batched(
                        StridedBatchedGemmRequest{dtype_of<T>, member(forked, 0), count, m * k, k * n, m * n}, two)
                    .ok());
            EXPECT_EQ(split->counters().fork_joins, forks + 1);
            EXPECT_EQ(forked, batched);
          }
        }
      }
    }
  };
  check(double{});
  check(float{});
  check(std::complex<double>{});
  check(std::complex<float>{});
}

TEST(NativeGemmTest, TiledBatchMembersGoStraightToTheTiles) {
  // Note [Tiled batch members]: after the first member chose the register
  // tiles, every member runs in them, each equal to the member run alone
  // (members at odd offsets, so that the tiles' per-member panel choice for
  // a misaligned A varies), on every ISA table and dtype.
  for_each_isa<double, float, std::complex<double>, std::complex<float>>([]<class T>(T, NativeGemmIsa isa) {
    auto p = native_on(isa);
    SequentialContext seq;
    std::mt19937_64 rng(7);
    struct Shape {
      std::int64_t m, n, k;
    };
    for (const Shape s : {Shape{6, 6, 6}, Shape{16, 2, 3}, Shape{13, 11, 9}}) {
      SCOPED_TRACE(::testing::Message() << to_string(isa) << " " << to_string(dtype_of<T>) << " " << s.m << "x" << s.n
                                        << "x" << s.k);
      const std::int64_t count = 37, sa = s.m * s.k + 1, sb = s.k * s.n + 3, sc = s.m * s.n + 1;
      std::vector<T> a(static_cast<std::size_t>(count * sa)), b(static_cast<std::size_t>(count * sb)),
          c(static_cast<std::size_t>(count * sc));
      for (T& x : a) x = random_scalar<T>(rng);
      for (T& x : b) x = random_scalar<T>(rng);
      for (T& x : c) x = random_scalar<T>(rng);
      std::vector<T> alone = c, batched = c;
      const auto member = [&](std::vector<T>& out, std::int64_t j) {  // column-major members
        return GemmProblem{s.m,
                           s.n,
                           s.k,
                           GemmInput{a.data() + j * sa, 1, s.m},
                           GemmInput{b.data() + j * sb, 1, s.k},
                           GemmOutput{out.data() + j * sc, 1, s.m},
                           1.5,
                           -0.5};
      };
      for (std::int64_t j = 0; j < count; ++j)
        ASSERT_TRUE(p->gemm(GemmRequest{dtype_of<T>, member(alone, j)}, seq).ok());
      const NativeGemmCounters before = p->counters();
      ASSERT_TRUE(
          p->gemm_strided_batched(StridedBatchedGemmRequest{dtype_of<T>, member(batched, 0), count, sa, sb, sc}, seq)
              .ok());
      const NativeGemmCounters after = p->counters();
      const bool tiles = dtype_of<T> == DType::kFloat32 || dtype_of<T> == DType::kFloat64 ||
                         isa != NativeGemmIsa::kPortable;  // Note [Small complex GEMM]
      EXPECT_EQ(after.small_tiled_problems - before.small_tiled_problems, tiles ? count : 0);
      EXPECT_EQ(after.tiled_batch_members - before.tiled_batch_members, tiles ? count - 1 : 0);
      EXPECT_EQ(batched, alone);
    }
  });
}

TEST(NativeGemmTest, Avx2DoubleRunsTheRowVectorKernelEveryTileShape) {
  // Note [Row-vector kernel]: the AVX2 double set broadcasts 4 rows of A and
  // loads 12 columns of B as vectors; thin M goes to the 8 x 6 set, which
  // reads B in place.
  if (!cpu_supports(NativeGemmIsa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const internal::GemmKernelSet<double>& ks = internal::avx2_kernel_table().f64;
  ASSERT_EQ(ks.mr, 4);
  ASSERT_EQ(ks.nr, 12);
  EXPECT_EQ(ks.micro_kernel_in_place_b, nullptr);
  ASSERT_NE(ks.thin_m, nullptr);
  EXPECT_NE(ks.thin_m->micro_kernel_in_place_b, nullptr);
  const std::int64_t k = 37;
  std::vector<double> a(static_cast<std::size_t>(k * 7)), b(static_cast<std::size_t>(k * 13));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25 * static_cast<double>((i * 7) % 11) - 1.0;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.5 * static_cast<double>((i * 5) % 13) - 3.0;
  // Packed panels (64-byte aligned, as the driver's workspace is).
  alignas(64) double ap[4 * k];
  alignas(64) double bp[12 * k];
  const std::int64_t lda = 7;  // A column-major, 7 x k; B column-major, k x 13
  ks.pack_a(4, k, a.data(), 1, lda, ap);
  ks.pack_b(k, 12, b.data(), 1, k, bp);
  for (const double beta : {0.0, 0.5}) {
    for (const std::int64_t rs_c : {std::int64_t{1}, std::int64_t{13}}) {  // C column- or row-major
      for (std::int64_t m_valid = 1; m_valid <= 4; ++m_valid) {
        for (std::int64_t n_valid = 1; n_valid <= 12; ++n_valid) {
          SCOPED_TRACE(::testing::Message()
                       << "beta " << beta << " rs_c " << rs_c << " tile " << m_valid << "x" << n_valid);
          const std::int64_t cs_c = rs_c == 1 ? 5 : 1;
          std::vector<double> c(5 * 13);  // 5 x 13
          for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<double>(i % 9) - 4.0;
          const std::vector<double> before = c;
          ks.micro_kernel(k, ap, bp, 1.5, beta, c.data(), rs_c, cs_c, m_valid, n_valid);
          for (std::int64_t i = 0; i < 5; ++i) {
            for (std::int64_t j = 0; j < 13; ++j) {
              const std::size_t at = static_cast<std::size_t>(i * rs_c + j * cs_c);
              if (i >= m_valid || j >= n_valid) {
                EXPECT_EQ(c[at], before[at]) << "written outside the tile at " << i << "," << j;
                continue;
              }
              double sum = 0.0;
              for (std::int64_t p = 0; p < k; ++p) {
                sum += a[static_cast<std::size_t>(i + p * lda)] * b[static_cast<std::size_t>(p + j * k)];
              }
              EXPECT_NEAR(c[at], 1.5 * sum + beta * before[at], 1e-12 * (1.0 + std::abs(sum))) << i << "," << j;
            }
          }
        }
      }
    }
  }
}

// Packs A row-major and B column-major -- the transposing packs of Note
// [Transposing packs] -- with `ks` and checks every packed element against
// the packed layout (gemm_kernel_set.h), the zeros past the last line, and
// that nothing past the packed panels is written.
template <class T>
void expect_transposing_packs_match(const internal::GemmKernelSet<T>& ks) {
  for (const std::int64_t k : {8, 19, 37}) {  // whole register blocks, then depth tails
    for (const bool is_a : {true, false}) {
      const int r = is_a ? ks.mr : ks.nr;
      for (const std::int64_t lines : {std::int64_t{r}, std::int64_t{2 * r + 1}, std::int64_t{3 * r - 1}}) {
        SCOPED_TRACE(::testing::Message()
                     << (is_a ? "A" : "B") << " panels of " << r << ", " << lines << " lines, depth " << k);
        const std::int64_t ld = k + 3;  // line l, step p at src[l * ld + p]
        std::vector<T> src(static_cast<std::size_t>(lines * ld));
        for (std::size_t i = 0; i < src.size(); ++i) {
          src[i] = static_cast<T>(static_cast<double>(i % 97) + 0.5);
          if constexpr (!std::is_floating_point_v<T>) src[i] += T(0, static_cast<double>(i % 13));  // distinct parts
        }
        const std::int64_t panels = (lines + r - 1) / r;
        constexpr std::size_t kGuard = 16;
        const T sentinel = static_cast<T>(-7.25);
        std::vector<T> dst(static_cast<std::size_t>(panels * r * k) + kGuard, sentinel);
        if (is_a) {
          ks.pack_a(lines, k, src.data(), ld, 1, dst.data());  // A row-major: lines x k
        } else {
          ks.pack_b(k, lines, src.data(), 1, ld, dst.data());  // B column-major: k x lines
        }
        for (std::int64_t q = 0; q < panels; ++q) {
          for (std::int64_t p = 0; p < k; ++p) {
            for (std::int64_t i = 0; i < r; ++i) {
              const std::int64_t line = q * r + i;
              const T want = line < lines ? src[static_cast<std::size_t>(line * ld + p)] : T(0);
              ASSERT_EQ(dst[static_cast<std::size_t>(q * r * k + p * r + i)], want)
                  << "panel " << q << " step " << p << " lane " << i;
            }
          }
        }
        for (std::size_t g = 0; g < kGuard; ++g) ASSERT_EQ(dst[dst.size() - kGuard + g], sentinel) << "guard " << g;
      }
    }
  }
}

TEST(NativeGemmTest, TransposingPacksMatchTheLayout) {
  // AVX2: the sets transpose in registers (RegisterTransposes, static_assert
  // in gemm_kernels_avx2.cpp), including the 6-wide float and thin-M double
  // B panels whose last lanes go through store_first. AVX-512: every set,
  // including the complex<float> B panels of 4, which are narrower than the
  // 8-wide 8-byte tile and take the AVX2 4 x 4 tiles.
  if (!cpu_supports(NativeGemmIsa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const internal::GemmKernelTable& avx2 = internal::avx2_kernel_table();
  ASSERT_EQ(avx2.f32.nr, 6);
  ASSERT_NE(avx2.f64.thin_m, nullptr);
  ASSERT_EQ(avx2.f64.thin_m->nr, 6);
  for (const internal::GemmKernelSet<double>* set : {&avx2.f64, avx2.f64.thin_m}) {
    expect_transposing_packs_match(*set);
  }
  expect_transposing_packs_match(avx2.f32);
  if (!cpu_supports(NativeGemmIsa::kAvx512)) return;
  const internal::GemmKernelTable& avx512 = internal::avx512_kernel_table();
  ASSERT_EQ(avx512.c64.nr, 4);
  expect_transposing_packs_match(avx512.f32);
  expect_transposing_packs_match(avx512.f64);
  expect_transposing_packs_match(avx512.c64);
  expect_transposing_packs_match(avx512.c128);
}

TEST(NativeGemmTest, MisalignedAIsCopiedIntoAlignedPanels) {
  // Note [Misaligned small GEMM]: a column-major A (the operand the tiles
  // load as vectors) one element past a 64-byte boundary, reused over
  // several column blocks, runs from aligned panels; the same product at
  // the boundary reads A in place. Both equal the reference, with beta != 0
  // and a last row block shorter than a tile.
  auto p = *NativeGemmProvider::create();
  SequentialContext seq;
  const std::int64_t m = 13, n = 16, k = 16;  // 16^3 <= small_max_mnk on every target
  for (const std::int64_t offset : {0, 1}) {
    StridedMatrix<double> a(m, k, MatLayout::kColMajor, 11), b(k, n, MatLayout::kRowMajor, 12),
        c(m, n, MatLayout::kColMajor, 13);
    // A's columns at `offset` elements past a 64-byte boundary.
    std::vector<double> storage(static_cast<std::size_t>(16 * k + 16));
    double* base = storage.data();
    while (reinterpret_cast<std::uintptr_t>(base) % 64 != 0) ++base;
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < m; ++i) base[offset + i + j * 16] = a.at(i, j);
    const GemmInput in{base + offset, 1, 16};  // lda 16: every column starts `offset` past a boundary
    std::vector<std::complex<double>> ref;
    std::vector<double> bound;
    reference_gemm(a, b, 1.0, 0.5, c, ref, bound);
    const auto before = c.buffer;
    const NativeGemmCounters start = p->counters();
    ASSERT_TRUE(
        p->gemm(GemmRequest{DType::kFloat64, GemmProblem{m, n, k, in, b.input(), c.output(), 1.0, 0.5}}, seq).ok());
    EXPECT_TRUE(matches_reference(c, ref, bound, k, before)) << "offset " << offset;
    const NativeGemmCounters end = p->counters();
    EXPECT_EQ(end.small_tiled_problems - start.small_tiled_problems, 1);
    EXPECT_EQ(end.small_panel_problems - start.small_panel_problems, offset == 0 ? 0 : 1) << "offset " << offset;
  }
}

TEST(NativeGemmTest, ForcedIsaThatTheCpuLacksIsUnsupported) {
  for (NativeGemmIsa isa : {NativeGemmIsa::kAvx512, NativeGemmIsa::kAvx2}) {
    NativeGemmOptions o;
    o.isa = isa;
    const bool available = cpu_supports(isa);
    auto p = NativeGemmProvider::create(o);
    EXPECT_EQ(p.ok(), available);
    if (!available) {
      EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
    }
  }
}

TEST(NativeGemmTest, TuningOverridesStillCompute) {
  // Tiny cache blocks force many block steps, edge tiles and the parallel
  // split on every path; the result must not change.
  NativeGemmOptions o;
  o.mc = 30;
  o.kc = 7;
  o.nc = 20;
  o.small_max_mnk = 1;
  o.parallel_min_flops = 1;
  auto p = *NativeGemmProvider::create(o);
  ArenaParallelContext two(2);
  const std::int64_t m = 61, n = 45, k = 33;
  StridedMatrix<double> a(m, k, MatLayout::kPadded, 1), b(k, n, MatLayout::kRowMajor, 2),
      c(m, n, MatLayout::kColMajor, 3);
  std::vector<std::complex<double>> ref;
  std::vector<double> bound;
  reference_gemm(a, b, 1.5, -0.5, c, ref, bound);
  const auto before = c.buffer;
  ASSERT_TRUE(
      p->gemm(GemmRequest{DType::kFloat64, GemmProblem{m, n, k, a.input(), b.input(), c.output(), 1.5, -0.5}}, two)
          .ok());
  EXPECT_TRUE(matches_reference(c, ref, bound, k, before));
  EXPECT_GT(p->counters().fork_joins, 4);
}

TEST(GemmWorkspacePoolTest, AThreadGetsBackTheBufferItReleased) {
  // Note [Workspace affinity]: two idle buffers of one size, the other
  // thread's listed first; this thread's acquire returns its own.
  internal::GemmWorkspacePool pool;
  void* mine = nullptr;
  void* theirs = nullptr;
  {
    internal::GemmWorkspacePool::Lease lease = pool.acquire(std::size_t{1} << 16);
    mine = lease.data();
    std::thread other([&] { theirs = pool.acquire(std::size_t{1} << 16).data(); });
    other.join();
  }
  ASSERT_NE(mine, theirs);
  EXPECT_EQ(pool.allocations(), 2);
  EXPECT_EQ(pool.acquire(std::size_t{1} << 16).data(), mine);
}

}  // namespace
}  // namespace tenferro::cpu::testing
