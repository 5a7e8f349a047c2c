// GEMM conformance, written once and run against every provider
// (conformance_providers()): dtypes, operand layouts, odd and block-crossing
// sizes, alpha/beta handling, empty extents, batched and grouped entry
// points, validation errors. A provider that does not declare a dtype or
// layout must answer kUnsupported and leave C untouched.
#include <gtest/gtest.h>

#include <limits>

#include "cpu/gemm/gemm_test_support.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"

namespace tenferro::cpu::testing {

std::vector<ProviderFactory> conformance_providers() {
  std::vector<ProviderFactory> out;
  for (NativeGemmIsa isa : {NativeGemmIsa::kAvx512, NativeGemmIsa::kAvx2, NativeGemmIsa::kPortable}) {
    out.push_back({std::string("native_") + std::string(to_string(isa)),
                   [isa]() -> Result<std::shared_ptr<const CpuGemmProvider>> {
                     NativeGemmOptions o;
                     o.isa = isa;
                     TENFERRO_ASSIGN_OR_RETURN(auto p, NativeGemmProvider::create(o));
                     return std::shared_ptr<const CpuGemmProvider>(std::move(p));
                   }});
  }
  for (OpenBlasBuild build : {OpenBlasBuild::kSerial, OpenBlasBuild::kPthread}) {
    out.push_back({std::string("openblas_") + std::string(to_string(build)),
                   [build]() -> Result<std::shared_ptr<const CpuGemmProvider>> {
                     TENFERRO_ASSIGN_OR_RETURN(auto p, ExternalBlasGemmProvider::load_openblas({build}));
                     return std::shared_ptr<const CpuGemmProvider>(std::move(p));
                   }});
  }
  out.push_back({"blis", []() -> Result<std::shared_ptr<const CpuGemmProvider>> {
                   TENFERRO_ASSIGN_OR_RETURN(auto p, ExternalBlasGemmProvider::load_blis());
                   return std::shared_ptr<const CpuGemmProvider>(std::move(p));
                 }});
  out.push_back({"null", []() -> Result<std::shared_ptr<const CpuGemmProvider>> {
                   return std::shared_ptr<const CpuGemmProvider>(std::make_shared<NullGemmProvider>());
                 }});
  return out;
}

namespace {

class GemmConformance : public ::testing::TestWithParam<ProviderFactory> {
 protected:
  void SetUp() override {
    auto made = GetParam().make();
    if (!made.ok()) {
      ASSERT_EQ(made.status().code(), ErrorCode::kUnsupported) << made.status().to_string();
      GTEST_SKIP() << GetParam().name << " is not available here: " << made.status().message();
    }
    provider_ = *made;
  }

  bool is_null() const { return provider_->name() == "null"; }

  // Whether the provider must accept operands of this layout (classic BLAS
  // needs one unit stride and a leading dimension).
  bool accepts(MatLayout l) const {
    switch (provider_->support().strides) {
      case GemmStrideSupport::kAny:
        return true;
      case GemmStrideSupport::kPositiveTilted:
        return l != MatLayout::kBroadcast;
      case GemmStrideSupport::kUnitStride:
        return l == MatLayout::kColMajor || l == MatLayout::kRowMajor;
    }
    return false;
  }

  // Runs one GEMM on `ctx` and checks it against the reference (or checks
  // kUnsupported with C untouched when the provider does not accept it).
  template <class T>
  void check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatLayout la, MatLayout lb, MatLayout lc,
                  std::complex<double> alpha, std::complex<double> beta, const ParallelContext& ctx,
                  bool nan_in_c = false) {
    SCOPED_TRACE(::testing::Message() << to_string(dtype_of<T>) << " m=" << m << " n=" << n << " k=" << k << " A "
                                      << mat_layout_name(la) << " B " << mat_layout_name(lb) << " C "
                                      << mat_layout_name(lc) << " alpha " << alpha << " beta " << beta);
    StridedMatrix<T> a(m, k, la, 1 + static_cast<std::uint64_t>(m * 131 + k));
    StridedMatrix<T> b(k, n, lb, 2 + static_cast<std::uint64_t>(n * 71 + k));
    StridedMatrix<T> c(m, n, lc, 3 + static_cast<std::uint64_t>(m + n));
    if (nan_in_c) {
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) c.at(i, j) = T(std::numeric_limits<real_t<T>>::quiet_NaN());
    }
    std::vector<std::complex<double>> ref;
    std::vector<double> bound;
    reference_gemm(a, b, alpha, beta, c, ref, bound);
    const std::vector<T> before = c.buffer;

    GemmRequest req;
    req.dtype = dtype_of<T>;
    req.problem = GemmProblem{m, n, k, a.input(), b.input(), c.output(), alpha, beta};
    const Status st = provider_->gemm(req, ctx);
    // Layout restrictions only matter for operands that are not vectors.
    const bool expect_ok = !is_null() && provider_->support().supports(dtype_of<T>) &&
                           gemm_layout_supported(provider_->support().strides, req.problem);
    if (m > 1 && k > 1 && n > 1 && !is_null() && provider_->support().supports(dtype_of<T>)) {
      EXPECT_EQ(expect_ok, accepts(la) && accepts(lb) && accepts(lc));
    }
    if (!expect_ok) {
      EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.to_string();
      EXPECT_TRUE(c.buffer == before || nan_in_c) << "C written by a refused call";
      return;
    }
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(matches_reference(c, ref, bound, k, before));
  }

  // Runs a batched request: true when it ran (the null provider must refuse
  // it with kUnsupported; any other failure is a test failure).
  bool ran_batched(const StridedBatchedGemmRequest& req, const ParallelContext& ctx) {
    const Status st = provider_->gemm_strided_batched(req, ctx);
    if (is_null()) {
      EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
      return false;
    }
    EXPECT_TRUE(st.ok()) << st.to_string();
    return st.ok();
  }

  template <class T>
  void check_all_layouts(std::int64_t m, std::int64_t n, std::int64_t k, const ParallelContext& ctx) {
    for (MatLayout la : kInputLayouts)
      for (MatLayout lb : kInputLayouts)
        for (MatLayout lc : kOutputMatLayouts) check_gemm<T>(m, n, k, la, lb, lc, 1.0, 0.0, ctx);
  }

  std::shared_ptr<const CpuGemmProvider> provider_;
  SequentialContext seq_;
};

TEST_P(GemmConformance, ReportsCapabilityAtConstruction) {
  const ProviderCapability& cap = provider_->capability();
  EXPECT_FALSE(cap.detail.empty());
  EXPECT_EQ(&cap, &provider_->capability()) << "capability must be a fixed snapshot";
  if (provider_->name() == "native") {
    EXPECT_EQ(cap.thread_count, ThreadCountControl::kPerCall);
    EXPECT_EQ(cap.placement, PlacementControl::kEngineWorkers);
  }
}

TEST_P(GemmConformance, AllLayoutsSmallOddSizes) {
  // Below the native provider's small-problem bounds (Note [Small GEMM]):
  // register tiles of one and two vectors of rows, whole and partial (m of
  // 8, 16, 20 and 33 against 8 doubles or 16 floats per vector; A read in
  // place, copied, or both), column remainders, the largest tiled size
  // (64^3 with AVX-512 and AVX2), one-column products (the native provider's
  // matrix-vector kernels) and an A block too large for the tiles' local
  // copy (40 x 100, which runs the blocked path). Complex types run the
  // same sizes through their tiles (Note [Small complex GEMM]: 4 or 8
  // complex elements per AVX-512 vector, 2 or 4 per AVX2 one).
  for (auto [m, n, k] : {std::tuple{1, 1, 1},
                         {3, 5, 7},
                         {7, 3, 2},
                         {2, 9, 1},
                         {1, 17, 5},
                         {13, 1, 4},
                         {8, 8, 8},
                         {16, 16, 16},
                         {20, 7, 9},
                         {9, 12, 16},
                         {13, 1, 300},
                         {24, 24, 24},
                         {33, 17, 40},
                         {64, 64, 64},
                         {40, 9, 100}}) {
    check_all_layouts<float>(m, n, k, seq_);
    check_all_layouts<double>(m, n, k, seq_);
    check_all_layouts<std::complex<float>>(m, n, k, seq_);
    check_all_layouts<std::complex<double>>(m, n, k, seq_);
  }
}

TEST_P(GemmConformance, AllDTypesAcrossBlockBoundaries) {
  // Sizes that cross micro-tile and cache-block edges of every kernel set
  // (k = 530: the depth block of 512 of AVX2 double's row set). Each size
  // runs three (A, C) layout pairs; the shift per size makes the sizes
  // cover all nine pairs (the reference dominates the run time).
  constexpr MatLayout kLayouts[] = {MatLayout::kColMajor, MatLayout::kRowMajor, MatLayout::kPadded};
  int shift = 0;
  for (auto [m, n, k] : {std::tuple{33, 29, 65}, {100, 37, 300}, {203, 17, 260}, {49, 131, 129}, {37, 13, 530}}) {
    for (int i = 0; i < 3; ++i) {
      const MatLayout la = kLayouts[i];
      const MatLayout lc = kLayouts[(i + shift) % 3];
      check_gemm<float>(m, n, k, la, MatLayout::kRowMajor, lc, 1.0, 0.0, seq_);
      check_gemm<double>(m, n, k, la, MatLayout::kColMajor, lc, 1.0, 0.0, seq_);
      check_gemm<std::complex<float>>(m, n, k, la, MatLayout::kColMajor, lc, 1.0, 0.0, seq_);
      check_gemm<std::complex<double>>(m, n, k, la, MatLayout::kRowMajor, lc, 1.0, 0.0, seq_);
    }
    ++shift;
  }
}

TEST_P(GemmConformance, AllLayoutsAcrossPanelEdges) {
  // Whole packing panels in every layout -- including the transposing packs
  // of row-major A and column-major B (Note [Transposing packs]) with a depth
  // that is not a multiple of the register tile -- and M remainders of one
  // and two vectors, which run the narrower edge kernels (Note [Edge tiles]).
  // Depth 1 (outer products) takes the rank-1 path (Note [Rank-1 GEMM]).
  for (auto [m, n, k] : {std::tuple{50, 20, 19}, {41, 16, 24}, {50, 20, 1}}) {
    check_all_layouts<float>(m, n, k, seq_);
    check_all_layouts<double>(m, n, k, seq_);
    check_all_layouts<std::complex<float>>(m, n, k, seq_);
    check_all_layouts<std::complex<double>>(m, n, k, seq_);
  }
}

TEST_P(GemmConformance, MatrixVectorAndDotProducts) {
  // m or n == 1 (the native provider's Note [Matrix-vector GEMM]): vector
  // blocks of rows and their remainders, depths around the unroll, a dot
  // product longer than one depth chunk (2^15), on one and two workers.
  ArenaParallelContext two(2);
  for (auto [m, n, k] : {std::tuple{1, 1, 2}, {1, 1, 37}, {71, 1, 5}, {1, 300, 77}, {300, 1, 77}, {130, 1, 1000}}) {
    check_all_layouts<float>(m, n, k, seq_);
    check_all_layouts<double>(m, n, k, seq_);
    check_all_layouts<std::complex<float>>(m, n, k, seq_);
    check_all_layouts<std::complex<double>>(m, n, k, seq_);
  }
  const std::complex<double> alpha(0.75, -1.25), beta(-0.5, 0.25);
  for (const ParallelContext* ctx :
       {static_cast<const ParallelContext*>(&seq_), static_cast<const ParallelContext*>(&two)}) {
    check_gemm<double>(1, 1, 100003, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.0, 0.0, *ctx);
    check_gemm<double>(1, 1, 100003, MatLayout::kColMajor, MatLayout::kPadded, MatLayout::kColMajor, 2.0, 0.5, *ctx);
    check_gemm<std::complex<float>>(1, 1, 70001, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kRowMajor,
                                    alpha, beta, *ctx);
    check_gemm<float>(1200, 1, 700, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.5, -1.0, *ctx);
    check_gemm<double>(1, 1200, 700, MatLayout::kRowMajor, MatLayout::kRowMajor, MatLayout::kPadded, 1.0, 0.0, *ctx);
    check_gemm<std::complex<double>>(1200, 1, 500, MatLayout::kColMajor, MatLayout::kPadded, MatLayout::kColMajor,
                                     alpha, beta, *ctx);
    check_gemm<std::complex<double>>(777, 1, 600, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kColMajor,
                                     alpha, 0.0, *ctx, /*nan_in_c=*/true);
  }
}

TEST_P(GemmConformance, BatchedDotProductsAlongTheUnitStride) {
  // m == n == 1 per member, the batch along the operands' unit stride (the
  // native provider's Note [Batched dot products]), C strided; one and two
  // workers, every dtype, alpha and beta.
  ArenaParallelContext two(2);
  auto check = [&]<class T>(T, std::int64_t count, std::int64_t k, std::int64_t sc, std::complex<double> alpha,
                            std::complex<double> beta, const ParallelContext& ctx) {
    SCOPED_TRACE(::testing::Message() << to_string(dtype_of<T>) << " count=" << count << " k=" << k << " sc=" << sc);
    // Operand (l, j) at l * count + j: the k x count matrices of random_scalar values.
    StridedMatrix<T> a(k, count, MatLayout::kRowMajor, 7 + static_cast<std::uint64_t>(count)),
        b(k, count, MatLayout::kRowMajor, 8 + static_cast<std::uint64_t>(k)), c(1, count, MatLayout::kRowMajor, 9);
    std::vector<T> cbuf(static_cast<std::size_t>(count * sc + 3), T(5));
    for (std::int64_t j = 0; j < count; ++j) cbuf[static_cast<std::size_t>(j * sc)] = c.at(0, j);
    const std::vector<T> before = cbuf;
    StridedBatchedGemmRequest req;
    req.dtype = dtype_of<T>;
    req.problem = GemmProblem{
        1,     1,   k, GemmInput{a.data(), 0, count}, GemmInput{b.data(), count, 0}, GemmOutput{cbuf.data(), 0, 0},
        alpha, beta};
    req.batch_count = count;
    req.a_batch_stride = req.b_batch_stride = 1;
    req.c_batch_stride = sc;
    if (!ran_batched(req, ctx)) return;
    const double eps = std::numeric_limits<real_t<T>>::epsilon();
    for (std::int64_t j = 0; j < count; ++j) {
      std::complex<double> sum = 0;
      double mag = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        sum += std::complex<double>(a.at(l, j)) * std::complex<double>(b.at(l, j));
        mag += std::abs(std::complex<double>(a.at(l, j))) * std::abs(std::complex<double>(b.at(l, j)));
      }
      std::complex<double> want = alpha * sum + beta * std::complex<double>(before[static_cast<std::size_t>(j * sc)]);
      if constexpr (std::is_floating_point_v<T>) want = want.real();
      const std::complex<double> got(cbuf[static_cast<std::size_t>(j * sc)]);
      ASSERT_LE(std::abs(got - want), 8.0 * eps * static_cast<double>(k + 2) * (std::abs(alpha) * mag + 2.0))
          << "member " << j << ": " << got << ", expected " << want;
    }
    for (std::size_t x = 0; x < cbuf.size(); ++x) {
      if (x % static_cast<std::size_t>(sc) != 0 || x >= static_cast<std::size_t>(count * sc)) {
        ASSERT_TRUE(cbuf[x] == before[x]) << "element " << x << " outside C was written";
      }
    }
  };
  const std::complex<double> alpha(0.75, -1.25), beta(-0.5, 0.25);
  for (auto [count, k, sc] : {std::tuple{2, 3, 1}, {5, 37, 2}, {67, 2, 1}, {200, 40, 3}}) {
    check(float{}, count, k, sc, 1.0, 0.0, seq_);
    check(double{}, count, k, sc, 2.0, -1.0, seq_);
    check(std::complex<float>{}, count, k, sc, alpha, beta, seq_);
    check(std::complex<double>{}, count, k, sc, alpha, 0.0, seq_);
  }
  check(double{}, 4000, 300, 1, 1.0, 0.0, two);  // 2.4 M flops: split over the members
  check(std::complex<float>{}, 3001, 200, 2, alpha, beta, two);
}

TEST_P(GemmConformance, BatchesOfSmallMatrixVectorMembers) {
  // Members with m or n of 1 stacked one after another (the native
  // provider runs them in one kernel call, without its per-member driver):
  // short and longer dots, matrix-vector and vector-matrix products, both
  // operand layouts, every dtype, alpha and beta, one and two workers.
  ArenaParallelContext two(2);
  auto check = [&]<class T>(T, std::int64_t m, std::int64_t n, std::int64_t k, MatLayout la, std::int64_t count,
                            std::complex<double> alpha, std::complex<double> beta, const ParallelContext& ctx) {
    SCOPED_TRACE(::testing::Message() << to_string(dtype_of<T>) << " m=" << m << " n=" << n << " k=" << k << " A "
                                      << mat_layout_name(la) << " count=" << count);
    std::vector<StridedMatrix<T>> as, bs, cs;
    for (std::int64_t i = 0; i < count; ++i) {
      as.emplace_back(m, k, la, 100 + static_cast<std::uint64_t>(i));
      bs.emplace_back(k, n, MatLayout::kColMajor, 200 + static_cast<std::uint64_t>(i));
      cs.emplace_back(m, n, MatLayout::kColMajor, 300 + static_cast<std::uint64_t>(i));
    }
    // Stacked copies: member i at i * (its element count).
    const std::int64_t sa = m * k, sb = k * n, sc = m * n;
    std::vector<T> abuf(static_cast<std::size_t>(count * sa)), bbuf(static_cast<std::size_t>(count * sb)),
        cbuf(static_cast<std::size_t>(count * sc));
    for (std::int64_t i = 0; i < count; ++i) {
      std::copy(as[i].data(), as[i].data() + sa, abuf.begin() + i * sa);
      std::copy(bs[i].data(), bs[i].data() + sb, bbuf.begin() + i * sb);
      std::copy(cs[i].data(), cs[i].data() + sc, cbuf.begin() + i * sc);
    }
    StridedBatchedGemmRequest req;
    req.dtype = dtype_of<T>;
    req.problem = GemmProblem{m,
                              n,
                              k,
                              GemmInput{abuf.data(), as[0].rs, as[0].cs},
                              GemmInput{bbuf.data(), 1, k},
                              GemmOutput{cbuf.data(), 1, m},
                              alpha,
                              beta};
    req.batch_count = count;
    req.a_batch_stride = sa;
    req.b_batch_stride = sb;
    req.c_batch_stride = sc;
    if (!ran_batched(req, ctx)) return;
    for (std::int64_t i = 0; i < count; ++i) {
      std::vector<std::complex<double>> ref;
      std::vector<double> bound;
      reference_gemm(as[i], bs[i], alpha, beta, cs[i], ref, bound);
      std::copy(cbuf.begin() + i * sc, cbuf.begin() + (i + 1) * sc, cs[i].data());
      const std::vector<T> unchanged = cs[i].buffer;
      ASSERT_TRUE(matches_reference(cs[i], ref, bound, k, unchanged)) << "member " << i;
    }
  };
  const std::complex<double> alpha(0.75, -1.25), beta(-0.5, 0.25);
  for (const MatLayout la : {MatLayout::kRowMajor, MatLayout::kColMajor}) {
    for (auto [m, n, k] : {std::tuple{1, 1, 3}, {1, 1, 16}, {1, 1, 45}, {3, 1, 3}, {1, 4, 5}, {5, 1, 9}}) {
      check(double{}, m, n, k, la, 70, 1.0, 0.0, seq_);
      check(float{}, m, n, k, la, 70, 2.0, -1.0, seq_);
      check(std::complex<double>{}, m, n, k, la, 70, alpha, beta, seq_);
      check(std::complex<float>{}, m, n, k, la, 70, alpha, 0.0, seq_);
    }
  }
  check(double{}, 1, 1, 32, MatLayout::kRowMajor, 20000, 1.0, 0.0, two);  // >= 2^20 flops: members split
  check(std::complex<double>{}, 5, 1, 9, MatLayout::kRowMajor, 12000, alpha, beta, two);
}

TEST_P(GemmConformance, AlphaBetaAndNaNInOutput) {
  const std::complex<double> alpha(0.75, -1.25);
  const std::complex<double> beta(-0.5, 0.25);
  for (auto [m, n, k] : {std::tuple{5, 4, 3}, {40, 30, 20}, {40, 30, 1}}) {
    check_gemm<float>(m, n, k, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kColMajor, 2.5, -1.5, seq_);
    check_gemm<double>(m, n, k, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kRowMajor, 2.5, 1.0, seq_);
    check_gemm<std::complex<float>>(m, n, k, MatLayout::kColMajor, MatLayout::kRowMajor, MatLayout::kColMajor, alpha,
                                    beta, seq_);
    check_gemm<std::complex<double>>(m, n, k, MatLayout::kRowMajor, MatLayout::kRowMajor, MatLayout::kRowMajor, alpha,
                                     beta, seq_);
    // beta == 0 must ignore whatever C holds, NaN included.
    check_gemm<double>(m, n, k, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.0, 0.0, seq_,
                       /*nan_in_c=*/true);
    check_gemm<std::complex<double>>(m, n, k, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kRowMajor, alpha,
                                     0.0, seq_, /*nan_in_c=*/true);
  }
}

TEST_P(GemmConformance, EmptyExtents) {
  // k == 0: C = beta * C without reading A or B; m == 0 or n == 0: nothing.
  check_gemm<double>(6, 5, 0, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.0, 0.5, seq_);
  check_gemm<double>(6, 5, 0, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kRowMajor, 1.0, 0.0, seq_,
                     /*nan_in_c=*/true);
  check_gemm<std::complex<float>>(0, 5, 3, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.0, 0.0,
                                  seq_);
  check_gemm<float>(4, 0, 3, MatLayout::kRowMajor, MatLayout::kRowMajor, MatLayout::kRowMajor, 1.0, 0.0, seq_);
  // alpha == 0: C = beta * C.
  check_gemm<double>(7, 6, 5, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kColMajor, 0.0, 2.0, seq_);
}

TEST_P(GemmConformance, TwoThreadsLargeProblems) {
  ArenaParallelContext two(2);
  // One (NC, KC) block split along M or N with edges in both (Note
  // [Single-block parallel GEMM] for the native provider).
  for (auto [m, n, k] : {std::tuple{130, 70, 90}, {100, 129, 64}, {27, 300, 40}}) {
    check_all_layouts<double>(m, n, k, two);
    check_all_layouts<std::complex<float>>(m, n, k, two);
  }
  check_gemm<float>(150, 90, 100, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.5, -0.5, two);
  check_gemm<double>(300, 280, 270, MatLayout::kRowMajor, MatLayout::kRowMajor, MatLayout::kRowMajor, 1.0, 0.0, two);
  check_gemm<float>(130, 520, 300, MatLayout::kColMajor, MatLayout::kRowMajor, MatLayout::kColMajor, 1.0, 1.0, two);
  check_gemm<std::complex<double>>(40, 300, 90, MatLayout::kColMajor, MatLayout::kColMajor, MatLayout::kRowMajor,
                                   std::complex<double>(1, 1), 0.0, two);
  check_gemm<std::complex<float>>(250, 60, 130, MatLayout::kRowMajor, MatLayout::kColMajor, MatLayout::kColMajor, 1.0,
                                  0.0, two);
}

TEST_P(GemmConformance, StridedBatchedWithBroadcastOperand) {
  // Three problems; A is shared (batch stride 0), B and C are stacked.
  const std::int64_t m = 9, n = 7, k = 11, batch = 3;
  StridedMatrix<double> a(m, k, MatLayout::kColMajor, 5);
  std::vector<StridedMatrix<double>> bs, cs;
  std::vector<double> bbuf(static_cast<std::size_t>(batch * k * n)), cbuf(static_cast<std::size_t>(batch * m * n));
  for (std::int64_t i = 0; i < batch; ++i) {
    bs.emplace_back(k, n, MatLayout::kColMajor, 10 + static_cast<std::uint64_t>(i));
    cs.emplace_back(m, n, MatLayout::kColMajor, 20 + static_cast<std::uint64_t>(i));
    std::copy(bs.back().buffer.begin(), bs.back().buffer.begin() + k * n, bbuf.begin() + i * k * n);
  }
  StridedBatchedGemmRequest req;
  req.dtype = DType::kFloat64;
  req.problem = GemmProblem{m, n, k, a.input(), GemmInput{bbuf.data(), 1, k}, GemmOutput{cbuf.data(), 1, m}};
  req.batch_count = batch;
  req.a_batch_stride = 0;
  req.b_batch_stride = k * n;
  req.c_batch_stride = m * n;
  if (!ran_batched(req, seq_)) return;
  for (std::int64_t i = 0; i < batch; ++i) {
    std::vector<std::complex<double>> ref;
    std::vector<double> bound;
    reference_gemm(a, bs[static_cast<std::size_t>(i)], 1.0, 0.0, cs[static_cast<std::size_t>(i)], ref, bound);
    for (std::int64_t x = 0; x < m * n; ++x) {
      EXPECT_NEAR(cbuf[static_cast<std::size_t>(i * m * n + x)], ref[static_cast<std::size_t>(x)].real(), 1e-12)
          << "batch " << i << " element " << x;
    }
  }
}

TEST_P(GemmConformance, GroupedProblemsOfDifferentShapes) {
  StridedMatrix<std::complex<double>> a0(5, 3, MatLayout::kColMajor, 1), b0(3, 4, MatLayout::kRowMajor, 2),
      c0(5, 4, MatLayout::kColMajor, 3);
  StridedMatrix<std::complex<double>> a1(30, 20, MatLayout::kRowMajor, 4), b1(20, 10, MatLayout::kColMajor, 5),
      c1(30, 10, MatLayout::kRowMajor, 6);
  std::vector<std::complex<double>> r0, r1;
  std::vector<double> bd0, bd1;
  reference_gemm(a0, b0, 1.0, 0.0, c0, r0, bd0);
  reference_gemm(a1, b1, 2.0, 1.0, c1, r1, bd1);
  const auto before0 = c0.buffer;
  const auto before1 = c1.buffer;
  const GemmProblem problems[] = {GemmProblem{5, 4, 3, a0.input(), b0.input(), c0.output(), 1.0, 0.0},
                                  GemmProblem{30, 10, 20, a1.input(), b1.input(), c1.output(), 2.0, 1.0}};
  const Status st = provider_->gemm_grouped(GroupedGemmRequest{DType::kComplex128, problems}, seq_);
  if (is_null()) {
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
    return;
  }
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(matches_reference(c0, r0, bd0, 3, before0));
  EXPECT_TRUE(matches_reference(c1, r1, bd1, 20, before1));
}

TEST_P(GemmConformance, InvalidRequestsAreTypedErrorsAndWriteNothing) {
  StridedMatrix<double> a(4, 3, MatLayout::kColMajor, 1), b(3, 5, MatLayout::kColMajor, 2),
      c(4, 5, MatLayout::kColMajor, 3);
  const auto before = c.buffer;
  auto run = [&](GemmProblem p, DType dtype = DType::kFloat64) {
    return provider_->gemm(GemmRequest{dtype, p}, seq_).code();
  };
  const GemmProblem good{4, 5, 3, a.input(), b.input(), c.output()};
  GemmProblem p = good;
  p.m = -1;
  EXPECT_EQ(run(p), ErrorCode::kInvalidArgument);
  p = good;
  p.c.data = nullptr;
  EXPECT_EQ(run(p), ErrorCode::kInvalidArgument);
  p = good;
  p.a.col_stride = -4;
  EXPECT_EQ(run(p), ErrorCode::kInvalidArgument);
  p = good;
  p.c.col_stride = 0;  // every column of C at the same address
  EXPECT_EQ(run(p), ErrorCode::kAliasConflict);
  p = good;
  p.c.data = a.data();  // C overlaps A
  p.c.row_stride = 1;
  p.c.col_stride = 4;
  p.m = 4;
  p.n = 3;
  p.b.data = b.data();
  EXPECT_EQ(run(p), ErrorCode::kAliasConflict);
  EXPECT_EQ(run(good, DType::kInt32), ErrorCode::kUnsupported);

  StridedBatchedGemmRequest batched{DType::kFloat64, good, 2, 0, 0, /*c_batch_stride=*/0};
  EXPECT_EQ(provider_->gemm_strided_batched(batched, seq_).code(), ErrorCode::kAliasConflict);
  batched.batch_count = -1;
  EXPECT_EQ(provider_->gemm_strided_batched(batched, seq_).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(c.buffer == before);
}

INSTANTIATE_TEST_SUITE_P(Providers, GemmConformance, ::testing::ValuesIn(conformance_providers()),
                         [](const ::testing::TestParamInfo<ProviderFactory>& info) { return info.param.name; });

}  // namespace
}  // namespace tenferro::cpu::testing
