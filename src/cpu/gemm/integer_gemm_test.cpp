// Note [Integer GEMM]: int32/int64 products through every ISA's tiles
// against a wrapping brute-force reference, over shapes that cross the
// register tiles and the depth, row and column blocks, with strided,
// broadcast and multi-axis operands, one and two threads; the plan says
// which tiles ran.
#include "cpu/gemm/integer_gemm.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "cpu/kernels/kernel_test_support.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"

namespace tenferro::cpu::testing {
namespace {

// Element offset of a logical index.
std::int64_t offset_of(const Tensor& t, std::span<const std::int64_t> index) {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
  return off;
}

std::vector<std::int64_t> unravel(std::int64_t flat, IntArrayRef shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

template <class T>
T& at(const Tensor& t, std::span<const std::int64_t> index) {
  return static_cast<T*>(const_cast<void*>(t.data()))[offset_of(t, index)];
}

// Full-range random values, so that products and sums wrap.
template <class T>
void fill_wide(const Tensor& t, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::int64_t f = 0; f < t.numel(); ++f) at<T>(t, unravel(f, t.shape())) = static_cast<T>(rng());
}

// out[batch, lhs free, rhs free] = sum over contracted of lhs * rhs, modulo
// 2^bits, compared element by element.
template <class T>
void expect_wrapping_product(const Tensor& lhs, const Tensor& rhs, const DotGeneralDims& dims, const Tensor& out) {
  using U = std::make_unsigned_t<T>;
  Dims lf, rf, kshape;
  auto listed = [](const Dims& x, const Dims& y, std::int64_t a) {
    return std::find(x.begin(), x.end(), a) != x.end() || std::find(y.begin(), y.end(), a) != y.end();
  };
  for (std::int64_t a = 0; a < lhs.rank(); ++a)
    if (!listed(dims.lhs_batch, dims.lhs_contract, a)) lf.push_back(a);
  for (std::int64_t a = 0; a < rhs.rank(); ++a)
    if (!listed(dims.rhs_batch, dims.rhs_contract, a)) rf.push_back(a);
  for (std::int64_t a : dims.lhs_contract) kshape.push_back(lhs.size(a));
  const std::size_t nb = dims.lhs_batch.size();
  int failures = 0;
  for (std::int64_t f = 0; f < out.numel() && failures < 5; ++f) {
    const std::vector<std::int64_t> oi = unravel(f, out.shape());
    std::vector<std::int64_t> li(static_cast<std::size_t>(lhs.rank())), ri(static_cast<std::size_t>(rhs.rank()));
    for (std::size_t b = 0; b < nb; ++b) {
      li[static_cast<std::size_t>(dims.lhs_batch[b])] = oi[b];
      ri[static_cast<std::size_t>(dims.rhs_batch[b])] = oi[b];
    }
    for (std::size_t x = 0; x < lf.size(); ++x) li[static_cast<std::size_t>(lf[x])] = oi[nb + x];
    for (std::size_t x = 0; x < rf.size(); ++x) ri[static_cast<std::size_t>(rf[x])] = oi[nb + lf.size() + x];
    U want = 0;
    const std::int64_t kcount = numel_unchecked(kshape);
    for (std::int64_t kf = 0; kf < kcount; ++kf) {
      const std::vector<std::int64_t> ki = unravel(kf, kshape);
      for (std::size_t c = 0; c < ki.size(); ++c) {
        li[static_cast<std::size_t>(dims.lhs_contract[c])] = ki[c];
        ri[static_cast<std::size_t>(dims.rhs_contract[c])] = ki[c];
      }
      want = static_cast<U>(want + static_cast<U>(static_cast<U>(at<T>(lhs, li)) * static_cast<U>(at<T>(rhs, ri))));
    }
    const T got = at<T>(out, oi);
    if (got != static_cast<T>(want)) {
      ADD_FAILURE() << "out[" << f << "] = " << got << ", expected " << static_cast<T>(want);
      ++failures;
    }
  }
}

// Runs body(ctx) on the workers of a managed domain over the allowed CPUs:
// its hand-offs are annotated for ThreadSanitizer (Note [ThreadSanitizer
// and oneTBB] in managed_executor.cpp), a bare oneTBB arena's are not, so
// the TSan build of this test sees the kernel's real synchronisation.
void on_workers(FunctionRef<void(const ParallelContext&)> body) {
  auto topology = CpuTopology::discover();
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  auto set =
      CpuDomainSet::create_managed(*topology, default_domain_specs(*topology, CpuDomainLayout::kWholeAllowedSet));
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  const Status entered = (*set)->default_domain().enter([&](const CpuDomainSession& session) {
    body(session.context(ParallelMode::kInner).parallel());
    return ok_status();
  });
  ASSERT_TRUE(entered.ok()) << entered.to_string();
}

struct IntCase {
  const char* name;
  Dims lhs, rhs;
  DotGeneralDims dims;
};

DotGeneralDims mm() {
  DotGeneralDims d;
  d.lhs_contract = {1};
  d.rhs_contract = {0};
  return d;
}

std::vector<IntCase> int_cases() {
  DotGeneralDims batched;
  batched.lhs_batch = {0};
  batched.rhs_batch = {0};
  batched.lhs_contract = {2};
  batched.rhs_contract = {1};
  DotGeneralDims two_axes;  // lhs [i1, q1, i2, q2], rhs [q2, j, q1]
  two_axes.lhs_contract = {1, 3};
  two_axes.rhs_contract = {2, 0};
  return {
      {"one", {1, 1}, {1, 1}, mm()},
      {"below_the_tile", {3, 5}, {5, 7}, mm()},
      {"depth_blocks", {13, 600}, {600, 37}, mm()},  // k > kKc: two depth blocks and a partial one
      {"row_blocks", {300, 9}, {9, 33}, mm()},       // m > kIntegerGemmMc
      {"column_blocks", {5, 3}, {3, 2100}, mm()},    // n > kIntegerGemmNc
      {"batched", {3, 17, 19}, {3, 19, 41}, batched},
      {"two_axis_groups", {3, 4, 5, 6}, {6, 11, 4}, two_axes},
  };
}

struct IsaCase {
  CpuIsa isa;
  const char* name;
};

std::vector<IsaCase> supported_isas() {
  std::vector<IsaCase> isas{{CpuIsa::kPortable, "portable"}};
  if (cpu_supports(CpuIsa::kAvx2)) isas.push_back({CpuIsa::kAvx2, "avx2"});
  if (cpu_supports(CpuIsa::kAvx512)) isas.push_back({CpuIsa::kAvx512, "avx512"});
  return isas;
}

TEST(IntegerGemmTest, EveryTileMatchesAWrappingReference) {
  const DotGeneralComposite composite(*NativeGemmProvider::create());
  on_workers([&](const ParallelContext& workers) {
    for (const IsaCase& isa : supported_isas()) {
      const SequentialContext sequential(isa.isa);
      const KernelIsaContext parallel(workers, isa.isa);
      for (const IntCase& c : int_cases()) {
        for (DType dtype : {DType::kInt32, DType::kInt64}) {
          for (Layout ll : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced, Layout::kBroadcast}) {
            for (const ParallelContext* ctx :
                 {static_cast<const ParallelContext*>(&sequential), static_cast<const ParallelContext*>(&parallel)}) {
              SCOPED_TRACE(::testing::Message() << isa.name << " " << c.name << " " << to_string(dtype) << " lhs "
                                                << layout_name(ll) << " threads " << ctx->max_threads());
              const Tensor lhs = make_tensor(c.lhs, dtype, ll, 1);
              const Tensor rhs = make_tensor(c.rhs, dtype, Layout::kColMajor, 2);
              visit_dtype(dtype, [&]<class T>(T) {
                if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
                  fill_wide<T>(lhs, 3);
                  fill_wide<T>(rhs, 4);
                  DotGeneralPlan plan;
                  Result<Tensor> out = composite.dot_general(lhs.view(), rhs.view(), c.dims, *ctx, &plan);
                  ASSERT_TRUE(out.ok()) << out.status().to_string();
                  expect_wrapping_product<T>(lhs, rhs, c.dims, *out);
                  if (plan.path != DotGeneralPath::kTiny) {
                    EXPECT_EQ(plan.path, DotGeneralPath::kInteger);
                    EXPECT_EQ(plan.integer_kernel_isa, isa.name);
                  }
                  // Into a transposed output (n offsets not unit stride).
                  const Dims shape = *DotGeneralComposite::result_shape(lhs.view(), rhs.view(), c.dims);
                  const Tensor into = make_tensor(shape, dtype, Layout::kTransposed, 5);
                  ASSERT_TRUE(
                      composite.dot_general_into(lhs.view(), rhs.view(), c.dims, into.view(), *ctx, &plan).ok());
                  expect_wrapping_product<T>(lhs, rhs, c.dims, into);
                }
              });
            }
          }
        }
      }
    }
  });
}

// Note [Narrow int64 products]: depth blocks whose packed values all fit in
// int32 multiply with vpmuldq (AVX2, AVX-512), others with the full 64-bit
// product; both equal the wrapping reference.
TEST(IntegerGemmTest, BlocksOfInt32ValuesRunNarrow) {
  const DotGeneralComposite composite(*NativeGemmProvider::create());
  for (const IsaCase& isa : supported_isas()) {
    SCOPED_TRACE(isa.name);
    const SequentialContext ctx(isa.isa);
    const bool has_narrow = isa.isa != CpuIsa::kPortable;
    const Tensor lhs = make_tensor({20, 600}, DType::kInt64, Layout::kContiguous, 1);  // depth blocks 256, 256, 88
    const Tensor rhs = make_tensor({600, 30}, DType::kInt64, Layout::kTransposed, 2);
    std::mt19937_64 rng(7);
    for (const Tensor* t : {&lhs, &rhs}) {
      for (std::int64_t f = 0; f < t->numel(); ++f) {
        at<std::int64_t>(*t, unravel(f, t->shape())) = static_cast<std::int64_t>(rng() % 2001) - 1000;
      }
    }
    // The int32 extremes still fit.
    at<std::int64_t>(lhs, std::vector<std::int64_t>{0, 0}) = std::numeric_limits<std::int32_t>::min();
    at<std::int64_t>(rhs, std::vector<std::int64_t>{0, 0}) = std::numeric_limits<std::int32_t>::max();
    DotGeneralPlan plan;
    Result<Tensor> out = composite.dot_general(lhs.view(), rhs.view(), mm(), ctx, &plan);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_wrapping_product<std::int64_t>(lhs, rhs, mm(), *out);
    EXPECT_EQ(plan.integer_narrow_blocks, has_narrow ? 3 : 0);
    // One value past int32 in the second depth block (lhs), one in the
    // third (rhs): only the first block stays narrow.
    at<std::int64_t>(lhs, std::vector<std::int64_t>{19, 300}) = std::int64_t{1} << 31;
    at<std::int64_t>(rhs, std::vector<std::int64_t>{599, 29}) = -(std::int64_t{1} << 40) - 3;
    out = composite.dot_general(lhs.view(), rhs.view(), mm(), ctx, &plan);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_wrapping_product<std::int64_t>(lhs, rhs, mm(), *out);
    EXPECT_EQ(plan.integer_narrow_blocks, has_narrow ? 1 : 0);
  }
}

// Large products split into jobs over the workers; small ones stay on the
// calling thread.
TEST(IntegerGemmTest, LargeProductsSpreadOverTheWorkers) {
  const DotGeneralComposite composite(*NativeGemmProvider::create());
  on_workers([&](const ParallelContext& two) {
    if (two.max_threads() < 2) GTEST_SKIP() << "one allowed CPU";
    DotGeneralPlan plan;
    const Tensor a = make_tensor({128, 128}, DType::kInt64, Layout::kContiguous, 1);
    ASSERT_TRUE(composite.dot_general(a.view(), a.view(), mm(), two, &plan).ok());
    EXPECT_EQ(plan.path, DotGeneralPath::kInteger);
    EXPECT_EQ(plan.mode, ParallelMode::kOuter);  // 128^3 >= 2^20 multiply-adds: rows split in two jobs
    EXPECT_EQ(plan.jobs, 2);
    const Tensor b = make_tensor({64, 64}, DType::kInt64, Layout::kContiguous, 1);  // 2^18
    ASSERT_TRUE(composite.dot_general(b.view(), b.view(), mm(), two, &plan).ok());
    EXPECT_EQ(plan.path, DotGeneralPath::kInteger);
    EXPECT_EQ(plan.mode, ParallelMode::kSequential);
  });
}

}  // namespace
}  // namespace tenferro::cpu::testing
