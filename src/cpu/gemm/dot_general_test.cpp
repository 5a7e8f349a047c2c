// dot_general composite: results against a brute-force reference for many
// dimension groupings, layouts and dtypes; the plan proves when no copy is
// made and which parallel mode ran; a counting ParallelContext proves
// exactly one fan-out level with every GEMM provider; bad requests are typed
// errors before any kernel runs.
#include "tenferro/cpu/gemm/dot_general.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <map>

#include "cpu/kernels/kernel_test_support.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"

namespace tenferro::cpu::testing {
namespace {

// Counts parallel_for calls and detects nesting (a call made while another
// call on this context is running is a second fan-out level).
class CountingContext final : public ParallelContext {
 public:
  explicit CountingContext(int threads) : inner_(threads) {}
  int max_threads() const noexcept override { return inner_.max_threads(); }
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    calls_.fetch_add(1);
    if (active_.fetch_add(1) > 0) nested_.fetch_add(1);
    inner_.parallel_for(begin, end, grain, body);
    active_.fetch_sub(1);
  }
  int calls() const { return calls_.load(); }
  int nested() const { return nested_.load(); }
  void reset() { calls_ = nested_ = 0; }

 private:
  ArenaParallelContext inner_;
  mutable std::atomic<int> calls_{0};
  mutable std::atomic<int> active_{0};
  mutable std::atomic<int> nested_{0};
};

std::vector<std::int64_t> unravel_index(std::int64_t flat, std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return idx;
}

// All values of `t` in row-major logical order.
std::vector<std::complex<double>> logical_values(const Tensor& t) {
  std::vector<std::complex<double>> values(static_cast<std::size_t>(t.numel()));
  for (std::int64_t flat = 0; flat < t.numel(); ++flat) {
    values[static_cast<std::size_t>(flat)] = value_at(t, unravel_index(flat, t.shape()));
  }
  return values;
}

// Row-major strides of `t`'s logical shape.
std::vector<std::int64_t> logical_strides(const Tensor& t) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(t.rank()));
  std::int64_t s = 1;
  for (std::int64_t d = t.rank(); d-- > 0;) {
    strides[static_cast<std::size_t>(d)] = s;
    s *= t.size(d);
  }
  return strides;
}

// Brute force: every output element is a sum over every contracted index.
// Operand values are read once into row-major buffers.
void check_against_reference(const Tensor& lhs, const Tensor& rhs, const DotGeneralDims& dims, const Tensor& out) {
  Dims lhs_free, rhs_free;
  auto listed = [](const Dims& x, const Dims& y, std::int64_t a) {
    return std::find(x.begin(), x.end(), a) != x.end() || std::find(y.begin(), y.end(), a) != y.end();
  };
  for (std::int64_t a = 0; a < lhs.rank(); ++a)
    if (!listed(dims.lhs_batch, dims.lhs_contract, a)) lhs_free.push_back(a);
  for (std::int64_t a = 0; a < rhs.rank(); ++a)
    if (!listed(dims.rhs_batch, dims.rhs_contract, a)) rhs_free.push_back(a);
  Dims kshape;
  for (std::int64_t a : dims.lhs_contract) kshape.push_back(lhs.size(a));
  const std::int64_t kcount = numel_unchecked(kshape);
  const std::size_t nb = dims.lhs_batch.size();
  ASSERT_EQ(static_cast<std::size_t>(out.rank()), nb + lhs_free.size() + rhs_free.size());
  const std::vector<std::complex<double>> lv = logical_values(lhs), rv = logical_values(rhs);
  const std::vector<std::int64_t> ls = logical_strides(lhs), rs = logical_strides(rhs);
  // Magnitudes for the error bound, and the product written out in real
  // arithmetic: hypot and the NaN-checking complex multiply would dominate.
  auto magnitudes = [](const std::vector<std::complex<double>>& values) {
    std::vector<double> m(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) m[i] = std::abs(values[i]);
    return m;
  };
  const std::vector<double> labs = magnitudes(lv), rabs = magnitudes(rv);
  auto at = [](const std::vector<std::int64_t>& strides, std::int64_t axis) {
    return strides[static_cast<std::size_t>(axis)];
  };
  // Offsets of every contracted index combination in both operands.
  std::vector<std::int64_t> lk(static_cast<std::size_t>(kcount)), rk(static_cast<std::size_t>(kcount));
  for (std::int64_t kf = 0; kf < kcount; ++kf) {
    const auto ki = unravel_index(kf, kshape);
    for (std::size_t c = 0; c < ki.size(); ++c) {
      lk[static_cast<std::size_t>(kf)] += ki[c] * at(ls, dims.lhs_contract[c]);
      rk[static_cast<std::size_t>(kf)] += ki[c] * at(rs, dims.rhs_contract[c]);
    }
  }
  const double eps = out.dtype() == DType::kFloat32 || out.dtype() == DType::kComplex64
                         ? std::numeric_limits<float>::epsilon()
                         : std::numeric_limits<double>::epsilon();
  int failures = 0;
  for (std::int64_t flat = 0; flat < out.numel() && failures < 5; ++flat) {
    const auto oi = unravel_index(flat, out.shape());
    std::int64_t lbase = 0, rbase = 0;
    for (std::size_t b = 0; b < nb; ++b) {
      lbase += oi[b] * at(ls, dims.lhs_batch[b]);
      rbase += oi[b] * at(rs, dims.rhs_batch[b]);
    }
    for (std::size_t f = 0; f < lhs_free.size(); ++f) lbase += oi[nb + f] * at(ls, lhs_free[f]);
    for (std::size_t f = 0; f < rhs_free.size(); ++f) rbase += oi[nb + lhs_free.size() + f] * at(rs, rhs_free[f]);
    double want_re = 0, want_im = 0, mag = 0;
    for (std::int64_t kf = 0; kf < kcount; ++kf) {
      const auto li = static_cast<std::size_t>(lbase + lk[static_cast<std::size_t>(kf)]);
      const auto ri = static_cast<std::size_t>(rbase + rk[static_cast<std::size_t>(kf)]);
      const std::complex<double> x = lv[li], y = rv[ri];
      want_re += x.real() * y.real() - x.imag() * y.imag();
      want_im += x.real() * y.imag() + x.imag() * y.real();
      mag += labs[li] * rabs[ri];
    }
    const std::complex<double> want(want_re, want_im);
    const std::complex<double> got = value_at(out, oi);
    const double tol = is_integer(out.dtype()) ? 0.0 : 8.0 * eps * static_cast<double>(kcount + 2) * (mag + 1e-30);
    if (is_integer(out.dtype()) ? got != want : !(std::abs(got - want) <= tol)) {
      ADD_FAILURE() << "out[" << flat << "] = " << got << ", expected " << want;
      ++failures;
    }
  }
}

DotGeneralDims dims_of(Dims lb, Dims rb, Dims lc, Dims rc) { return DotGeneralDims{lb, rb, lc, rc}; }

std::shared_ptr<const CpuGemmProvider> native() {
  static const std::shared_ptr<const CpuGemmProvider> p = *NativeGemmProvider::create();
  return p;
}

// Options without the tiny shortcut: every call is planned (the tests of
// planning, copies and parallel modes use small problems).
DotGeneralOptions planned_only() {
  DotGeneralOptions options;
  options.tiny_max_work = -1;
  return options;
}

struct Case {
  const char* name;
  std::vector<std::int64_t> lhs_shape, rhs_shape;
  DotGeneralDims dims;
};

// Dimension groupings: plain, transposed, batched anywhere, several
// contracting and free axes, outer products, elementwise, scalars.
std::vector<Case> grouping_cases() {
  return {
      {"matmul", {7, 5}, {5, 9}, dims_of({}, {}, {1}, {0})},
      {"matmul_t_lhs", {5, 7}, {5, 9}, dims_of({}, {}, {0}, {0})},
      {"matmul_t_both", {5, 7}, {9, 5}, dims_of({}, {}, {0}, {1})},
      {"batched", {3, 6, 4}, {3, 4, 5}, dims_of({0}, {0}, {2}, {1})},
      {"batch_last", {6, 4, 3}, {4, 5, 3}, dims_of({2}, {2}, {1}, {0})},
      {"batch_mixed", {4, 3, 6}, {5, 3, 4}, dims_of({1}, {1}, {0}, {2})},
      {"two_batch", {2, 3, 4, 5}, {3, 2, 5, 6}, dims_of({0, 1}, {1, 0}, {3}, {2})},
      {"two_contract", {4, 3, 5}, {3, 5, 6}, dims_of({}, {}, {1, 2}, {0, 1})},
      {"contract_reversed", {4, 3, 5}, {5, 3, 6}, dims_of({}, {}, {1, 2}, {1, 0})},
      {"two_free_each", {2, 3, 4}, {4, 5, 6}, dims_of({}, {}, {2}, {0})},
      {"outer", {6}, {7}, dims_of({}, {}, {}, {})},
      {"batched_outer", {5, 4, 3}, {5, 6}, dims_of({0}, {0}, {}, {})},
      {"elementwise", {6, 7}, {6, 7}, dims_of({0, 1}, {0, 1}, {}, {})},
      {"dot", {13}, {13}, dims_of({}, {}, {0}, {0})},
      {"scalar_times_matrix", {}, {3, 4}, dims_of({}, {}, {}, {})},
      {"matvec", {6, 8}, {8}, dims_of({}, {}, {1}, {0})},
      {"unit_axes", {1, 5, 1, 4}, {4, 1, 3}, dims_of({}, {}, {3}, {0})},
      {"big_k", {3, 40, 33}, {33, 40, 2}, dims_of({}, {}, {1, 2}, {1, 0})},
      {"block_crossing", {70, 300}, {300, 45}, dims_of({}, {}, {1}, {0})},
  };
}

class DotGeneralGroupings : public ::testing::TestWithParam<Case> {};

// Every case runs planned and with the tiny shortcut allowed (then the
// counters say which one ran, and the plan agrees).
TEST_P(DotGeneralGroupings, MatchesBruteForceInEveryLayoutAndDType) {
  const Case& c = GetParam();
  const DotGeneralComposite planned(native(), nullptr, planned_only());
  const DotGeneralComposite with_tiny(native());
  std::map<std::pair<Layout, Layout>, DotGeneralPath> float_paths;
  for (DType dtype : {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kComplex64, DType::kInt64}) {
    for (Layout ll : kAllLayouts) {
      for (Layout rl : {Layout::kContiguous, Layout::kTransposed, Layout::kBroadcast}) {
        SCOPED_TRACE(::testing::Message()
                     << c.name << " " << to_string(dtype) << " lhs " << layout_name(ll) << " rhs " << layout_name(rl));
        const Tensor lhs = make_tensor(c.lhs_shape, dtype, ll, 11);
        const Tensor rhs = make_tensor(c.rhs_shape, dtype, rl, 12);
        DotGeneralPlan plan;
        auto out = planned.dot_general(lhs.view(), rhs.view(), c.dims, sequential_context(), &plan);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        check_against_reference(lhs, rhs, c.dims, *out);
        // Integers run the integer kernel (Note [Integer GEMM]) except where
        // float64 ran the elementwise loop (Note [Broadcast products]).
        if (dtype == DType::kFloat64) float_paths[{ll, rl}] = plan.path;
        const bool elementwise = float_paths.at({ll, rl}) == DotGeneralPath::kElementwise;
        EXPECT_EQ(plan.path == DotGeneralPath::kInteger, is_integer(dtype) && !elementwise);
        EXPECT_EQ(plan.path == DotGeneralPath::kElementwise, elementwise);
        EXPECT_EQ(planned.counters().tiny_calls, 0);

        const DotGeneralCounters before = with_tiny.counters();
        out = with_tiny.dot_general(lhs.view(), rhs.view(), c.dims, sequential_context(), &plan);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        check_against_reference(lhs, rhs, c.dims, *out);
        const DotGeneralCounters after = with_tiny.counters();
        EXPECT_EQ(after.tiny_calls - before.tiny_calls + after.planned_calls - before.planned_calls, 1);
        EXPECT_EQ(plan.path == DotGeneralPath::kTiny, after.tiny_calls == before.tiny_calls + 1);
      }
    }
  }
}

TEST_P(DotGeneralGroupings, WritesIntoGivenOutputLayouts) {
  const Case& c = GetParam();
  const DotGeneralComposite planned(native(), nullptr, planned_only());
  const DotGeneralComposite with_tiny(native());
  const Tensor lhs = make_tensor(c.lhs_shape, DType::kFloat64, Layout::kContiguous, 3);
  const Tensor rhs = make_tensor(c.rhs_shape, DType::kFloat64, Layout::kColMajor, 4);
  const Dims shape = *DotGeneralComposite::result_shape(lhs.view(), rhs.view(), c.dims);
  for (Layout ol : kOutputLayouts) {
    SCOPED_TRACE(::testing::Message() << c.name << " out " << layout_name(ol));
    for (const DotGeneralComposite* composite : {&planned, &with_tiny}) {
      Tensor out = make_tensor(shape, DType::kFloat64, ol, 5);
      for (const auto& ctx : {&sequential_context(), &two_thread_context()}) {
        ASSERT_TRUE(composite->dot_general_into(lhs.view(), rhs.view(), c.dims, out.view(), *ctx).ok());
        check_against_reference(lhs, rhs, c.dims, out);
      }
    }
  }
}

// Note [Tiny dot_general]: (batched) matrix, vector and outer products up to
// tiny_max_work multiply-adds skip planning, in every dtype and layout;
// larger or multi-axis problems, and a composite with the shortcut off, are
// planned.
TEST(DotGeneralTest, TinyShortcutRunsOnlyForTinyProblems) {
  const DotGeneralComposite composite(native());
  struct TinyCase {
    const char* name;
    std::vector<std::int64_t> lhs_shape, rhs_shape;
    DotGeneralDims dims;
    bool tiny;
  };
  const TinyCase cases[] = {
      {"matmul_2x2", {2, 2}, {2, 2}, dims_of({}, {}, {1}, {0}), true},
      {"matmul_t_both", {3, 2}, {4, 3}, dims_of({}, {}, {0}, {1}), true},
      {"batched_last", {2, 3, 4}, {3, 2, 4}, dims_of({2}, {2}, {1}, {0}), true},
      {"matvec", {5, 6}, {6}, dims_of({}, {}, {1}, {0}), true},
      {"outer", {4}, {5}, dims_of({}, {}, {}, {}), true},
      {"hadamard", {40}, {40}, dims_of({0}, {0}, {}, {}), true},  // m = n = k = 1: its own loop
      {"batched_dot", {6, 7}, {6, 7}, dims_of({0}, {0}, {1}, {1}), true},
      {"at_the_limit", {4, 8}, {8, 8}, dims_of({}, {}, {1}, {0}), true},  // 256 multiply-adds
      {"over_the_limit", {4, 8}, {8, 9}, dims_of({}, {}, {1}, {0}), false},
      {"two_contracted", {2, 2, 2}, {2, 2, 2}, dims_of({}, {}, {1, 2}, {0, 1}), false},
      {"two_free", {2, 2, 2}, {2, 2}, dims_of({}, {}, {2}, {0}), false},
      {"large", {16, 16}, {16, 16}, dims_of({}, {}, {1}, {0}), false},
  };
  for (const TinyCase& c : cases) {
    for (DType dtype :
         {DType::kFloat64, DType::kFloat32, DType::kComplex128, DType::kComplex64, DType::kInt64, DType::kInt32}) {
      for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kSliced, Layout::kBroadcast}) {
        SCOPED_TRACE(::testing::Message() << c.name << " " << to_string(dtype) << " " << layout_name(l));
        const Tensor lhs = make_tensor(c.lhs_shape, dtype, l, 21);
        const Tensor rhs = make_tensor(c.rhs_shape, dtype, Layout::kColMajor, 22);
        const Dims shape = *DotGeneralComposite::result_shape(lhs.view(), rhs.view(), c.dims);
        Tensor out = make_tensor(shape, dtype, Layout::kTransposed, 23);
        const DotGeneralCounters before = composite.counters();
        DotGeneralPlan plan;
        ASSERT_TRUE(
            composite.dot_general_into(lhs.view(), rhs.view(), c.dims, out.view(), sequential_context(), &plan).ok());
        check_against_reference(lhs, rhs, c.dims, out);
        const DotGeneralCounters after = composite.counters();
        EXPECT_EQ(after.tiny_calls - before.tiny_calls, c.tiny ? 1 : 0);
        EXPECT_EQ(after.planned_calls - before.planned_calls, c.tiny ? 0 : 1);
        EXPECT_EQ(plan.path == DotGeneralPath::kTiny, c.tiny);
        EXPECT_EQ(plan.provider_calls == 0, c.tiny || plan.path != DotGeneralPath::kGemm);
      }
    }
  }
  // The shortcut can be switched off.
  const DotGeneralComposite planned(native(), nullptr, planned_only());
  const Tensor a = make_tensor({2, 2}, DType::kFloat64, Layout::kContiguous, 1);
  DotGeneralPlan plan;
  ASSERT_TRUE(planned.dot_general(a.view(), a.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan).ok());
  EXPECT_EQ(plan.path, DotGeneralPath::kGemm);
  EXPECT_EQ(planned.counters().tiny_calls, 0);
  EXPECT_EQ(planned.counters().planned_calls, 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, DotGeneralGroupings, ::testing::ValuesIn(grouping_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(DotGeneralTest, NoCopyWhenStridesAllowGemm) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  DotGeneralPlan plan;
  // Row-major, column-major and transposed operands: GEMM reads them as they are.
  for (Layout ll : {Layout::kContiguous, Layout::kColMajor, Layout::kTransposed}) {
    for (Layout rl : {Layout::kContiguous, Layout::kColMajor, Layout::kTransposed}) {
      const Tensor a = make_tensor({40, 30}, DType::kFloat64, ll, 1);
      const Tensor b = make_tensor({30, 20}, DType::kFloat64, rl, 2);
      auto out = composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
      ASSERT_TRUE(out.ok());
      EXPECT_EQ(plan.path, DotGeneralPath::kGemm);
      EXPECT_FALSE(plan.lhs_copied || plan.rhs_copied || plan.out_via_temp);
      EXPECT_EQ(plan.copied_elements, 0);
      EXPECT_EQ(plan.provider_calls, 1);
    }
  }
  // Batched, with fused multi-axis groups: one strided-batched call.
  const Tensor a = make_tensor({8, 6, 5, 4}, DType::kFloat64, Layout::kContiguous, 1);  // b, i, j, k
  const Tensor b = make_tensor({8, 4, 7, 3}, DType::kFloat64, Layout::kContiguous, 2);  // b, k, l, m
  auto out = composite.dot_general(a.view(), b.view(), dims_of({0}, {0}, {3}, {1}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(plan.lhs_copied || plan.rhs_copied);
  EXPECT_EQ(plan.m, 30);
  EXPECT_EQ(plan.n, 21);
  EXPECT_EQ(plan.k, 4);
  EXPECT_EQ(plan.jobs, 8);
  EXPECT_EQ(plan.provider_calls, 1);
  // The batched outer product C[t,o,k,j] = A[t,k,j] B[t,o] written into a
  // [t,o,k,j] buffer: fused strides reach GEMM, nothing is copied.
  const Tensor lhs = make_tensor({64, 16, 16}, DType::kFloat64, Layout::kContiguous, 3);
  const Tensor rhs = make_tensor({64, 64}, DType::kFloat64, Layout::kContiguous, 4);
  Tensor buffer = *Tensor::empty({64, 64, 16, 16}, DType::kFloat64);
  const Tensor out_view = *buffer.permute({0, 2, 3, 1});  // (t, k, j, o)
  ASSERT_TRUE(composite
                  .dot_general_into(lhs.view(), rhs.view(), dims_of({0}, {0}, {}, {}), out_view.view(),
                                    sequential_context(), &plan)
                  .ok());
  EXPECT_EQ(plan.copied_elements, 0);
  EXPECT_EQ(plan.m, 256);
  EXPECT_EQ(plan.k, 1);
  check_against_reference(lhs, rhs, dims_of({0}, {0}, {}, {}), out_view);
}

TEST(DotGeneralTest, CopiesOnlyTheCheapestOperandWhenAGroupCannotFuse) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  DotGeneralPlan plan;
  // C[t,o,k,j] = A[t,j,k] B[t,o] into a [t,o,k,j] buffer: the lhs free axes
  // run in opposite orders in lhs and out, so one must move; lhs is smaller.
  const Tensor lhs = make_tensor({64, 16, 16}, DType::kFloat64, Layout::kContiguous, 3);
  const Tensor rhs = make_tensor({64, 64}, DType::kFloat64, Layout::kContiguous, 4);
  Tensor buffer = *Tensor::empty({64, 64, 16, 16}, DType::kFloat64);
  const Tensor out_view = *buffer.permute({0, 3, 2, 1});  // (t, j, k, o) over a (t, o, k, j) buffer
  ASSERT_TRUE(composite
                  .dot_general_into(lhs.view(), rhs.view(), dims_of({0}, {0}, {}, {}), out_view.view(),
                                    sequential_context(), &plan)
                  .ok());
  EXPECT_TRUE(plan.lhs_copied);
  EXPECT_FALSE(plan.rhs_copied || plan.out_via_temp);
  EXPECT_EQ(plan.copied_elements, lhs.numel());
  check_against_reference(lhs, rhs, dims_of({0}, {0}, {}, {}), out_view);
  // Contracting axes in opposite orders: the smaller operand is copied.
  const Tensor a = make_tensor({4, 3, 5}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor b = make_tensor({5, 3, 60}, DType::kFloat64, Layout::kContiguous, 2);
  auto out = composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1, 2}, {1, 0}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(plan.lhs_copied);
  EXPECT_FALSE(plan.rhs_copied);
  check_against_reference(a, b, dims_of({}, {}, {1, 2}, {1, 0}), *out);
}

TEST(DotGeneralTest, BroadcastOperandIsReadInPlaceByNativeButCopiedForBlas) {
  const Tensor a = make_tensor({30, 20}, DType::kFloat64, Layout::kBroadcast, 1);  // row stride 0
  const Tensor b = make_tensor({20, 10}, DType::kFloat64, Layout::kContiguous, 2);
  DotGeneralPlan plan;
  const DotGeneralComposite native_composite(native(), nullptr, planned_only());
  auto out = native_composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(plan.lhs_copied);
  check_against_reference(a, b, dims_of({}, {}, {1}, {0}), *out);
  auto openblas = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kSerial});
  if (!openblas.ok()) GTEST_SKIP() << openblas.status().to_string();
  const DotGeneralComposite blas_composite(*openblas, nullptr, planned_only());
  out = blas_composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(plan.lhs_copied);
  check_against_reference(a, b, dims_of({}, {}, {1}, {0}), *out);
}

TEST(DotGeneralTest, OuterModeForManySmallJobsInnerForOneLargeJob) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  CountingContext ctx(2);
  DotGeneralPlan plan;
  const Tensor a = make_tensor({32, 24, 24}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor b = make_tensor({32, 24, 24}, DType::kFloat64, Layout::kContiguous, 2);
  auto out = composite.dot_general(a.view(), b.view(), dims_of({0}, {0}, {2}, {1}), ctx, &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(plan.mode, ParallelMode::kOuter);
  EXPECT_EQ(ctx.calls(), 1) << "one fan-out over the jobs, sequential kernels inside";
  EXPECT_EQ(ctx.nested(), 0);
  check_against_reference(a, b, dims_of({0}, {0}, {2}, {1}), *out);

  ctx.reset();
  const Tensor c = make_tensor({300, 200}, DType::kFloat64, Layout::kContiguous, 3);
  const Tensor d = make_tensor({200, 250}, DType::kFloat64, Layout::kContiguous, 4);
  out = composite.dot_general(c.view(), d.view(), dims_of({}, {}, {1}, {0}), ctx, &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(plan.mode, ParallelMode::kInner);
  EXPECT_GE(ctx.calls(), 1) << "the native kernel splits the single job";
  EXPECT_EQ(ctx.nested(), 0);
  check_against_reference(c, d, dims_of({}, {}, {1}, {0}), *out);

  ctx.reset();
  out = composite.dot_general(c.view(), d.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
  EXPECT_EQ(plan.mode, ParallelMode::kSequential);
}

// Every provider, one fan-out level: batched small and single large jobs,
// with copies in front, never nest a parallel_for; parallel OpenBLAS (no
// per-worker sequential control) is never used in outer jobs.
TEST(DotGeneralTest, ExactlyOneFanOutLevelWithEveryProvider) {
  std::vector<std::shared_ptr<const CpuGemmProvider>> providers = {native()};
  if (auto p = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kSerial}); p.ok()) providers.push_back(*p);
  if (auto p = ExternalBlasGemmProvider::load_openblas({OpenBlasBuild::kPthread}); p.ok()) providers.push_back(*p);
  if (auto p = ExternalBlasGemmProvider::load_blis(); p.ok()) providers.push_back(*p);
  CountingContext ctx(2);
  const Tensor small_a = make_tensor({16, 12, 10}, DType::kFloat64, Layout::kTransposed, 1);
  const Tensor small_b = make_tensor({16, 10, 14}, DType::kFloat64, Layout::kSliced, 2);
  const Tensor big_a = make_tensor({260, 240}, DType::kFloat64, Layout::kContiguous, 3);
  const Tensor big_b = make_tensor({240, 230}, DType::kFloat64, Layout::kSliced, 4);
  for (const auto& provider : providers) {
    SCOPED_TRACE(provider->capability().detail);
    const DotGeneralComposite composite(provider, nullptr, planned_only());
    DotGeneralPlan plan;
    ctx.reset();
    // small_a is (b, i, k) in a transposed layout; small_b is (b, k, j).
    const DotGeneralDims batched = dims_of({0}, {0}, {2}, {1});
    auto out = composite.dot_general(small_a.view(), small_b.view(), batched, ctx, &plan);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(ctx.nested(), 0);
    if (can_run_sequential_per_worker(provider->capability())) {
      EXPECT_EQ(plan.mode, ParallelMode::kOuter);
    } else {
      EXPECT_EQ(plan.mode, ParallelMode::kInner) << "parallel OpenBLAS must not run inside outer jobs";
    }
    check_against_reference(small_a, small_b, batched, *out);
    ctx.reset();
    out = composite.dot_general(big_a.view(), big_b.view(), dims_of({}, {}, {1}, {0}), ctx, &plan);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(ctx.nested(), 0);
    EXPECT_NE(plan.mode, ParallelMode::kOuter);
    check_against_reference(big_a, big_b, dims_of({}, {}, {1}, {0}), *out);
  }
}

TEST(DotGeneralTest, ElementwiseAndEmptyAndZeroContraction) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  DotGeneralPlan plan;
  const Tensor a = make_tensor({300, 200}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor b = make_tensor({300, 200}, DType::kFloat64, Layout::kTransposed, 2);
  auto out = composite.dot_general(a.view(), b.view(), dims_of({0, 1}, {0, 1}, {}, {}), two_thread_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(plan.path, DotGeneralPath::kElementwise);
  EXPECT_EQ(plan.provider_calls, 0);
  EXPECT_EQ(plan.mode, ParallelMode::kOuter);
  check_against_reference(a, b, dims_of({0, 1}, {0, 1}, {}, {}), *out);

  const Tensor e = make_tensor({3, 0}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor f = make_tensor({0, 4}, DType::kFloat64, Layout::kContiguous, 2);
  out = composite.dot_general(e.view(), f.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(plan.path, DotGeneralPath::kZeroFill);
  EXPECT_EQ(*out->to_vector<double>(), std::vector<double>(12, 0.0));
  const Tensor g = make_tensor({0, 5}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor h = make_tensor({5, 3}, DType::kFloat64, Layout::kContiguous, 2);
  out = composite.dot_general(g.view(), h.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(plan.path, DotGeneralPath::kEmpty);
  EXPECT_EQ(out->numel(), 0);
  EXPECT_EQ(out->size(1), 3);
}

// Note [Broadcast products]: no contracted axis and free axes on one side
// only run as the elementwise loop over the tensors' own strides, whatever
// the layouts, with nothing copied; short runs (extent-2 and -3 axes
// interleaved with the smaller operand's) go through offset-table blocks
// (Note [Elementwise blocks]), long ones as plain runs.
TEST(DotGeneralTest, BroadcastProductsRunElementwiseWithoutCopies) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  struct Case {
    const char* name;
    Dims small_shape, big_shape;
    DotGeneralDims dims;  // lhs small, rhs big
    bool blocked;
  };
  // small [a, c] scales big [a, b, c, d] (batch a, c; rhs free b, d).
  const Case cases[] = {
      {"short runs", {3, 2}, {3, 2, 2, 3}, dims_of({0, 1}, {0, 2}, {}, {}), true},
      {"long runs", {3, 2}, {3, 4, 2, 600}, dims_of({0, 1}, {0, 2}, {}, {}), false},
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat64, DType::kComplex64}) {
      for (bool big_on_left : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << c.name << " " << to_string(dtype) << (big_on_left ? " big lhs" : " big rhs"));
        const Tensor small = make_tensor(c.small_shape, dtype, Layout::kContiguous, 31);
        const Tensor big = make_tensor(c.big_shape, dtype, Layout::kContiguous, 32);
        DotGeneralDims dims = c.dims;
        if (big_on_left) dims = dims_of(c.dims.rhs_batch, c.dims.lhs_batch, {}, {});
        const Tensor& lhs = big_on_left ? big : small;
        const Tensor& rhs = big_on_left ? small : big;
        const Dims shape = *DotGeneralComposite::result_shape(lhs.view(), rhs.view(), dims);
        for (Layout ol : kOutputLayouts) {
          SCOPED_TRACE(layout_name(ol));
          Tensor out = make_tensor(shape, dtype, ol, 33);
          DotGeneralPlan plan;
          ASSERT_TRUE(
              composite.dot_general_into(lhs.view(), rhs.view(), dims, out.view(), sequential_context(), &plan).ok());
          EXPECT_EQ(plan.path, DotGeneralPath::kElementwise);
          EXPECT_FALSE(plan.lhs_copied || plan.rhs_copied || plan.out_via_temp);
          EXPECT_EQ(plan.provider_calls, 0);
          EXPECT_EQ(plan.jobs, out.numel());
          if (ol == Layout::kContiguous) {
            EXPECT_EQ(plan.elementwise_block > 0, c.blocked);
          }
          check_against_reference(lhs, rhs, dims, out);
        }
        // A free output, and two threads.
        DotGeneralPlan plan;
        auto out = composite.dot_general(lhs.view(), rhs.view(), dims, two_thread_context(), &plan);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        EXPECT_EQ(plan.path, DotGeneralPath::kElementwise);
        EXPECT_FALSE(plan.lhs_copied || plan.rhs_copied || plan.out_via_temp);
        check_against_reference(lhs, rhs, dims, *out);
      }
    }
  }
}

// Note [Elementwise products as kernels]: an operand transposed against the
// output is packed tile by tile (partial tiles at both edges here); when
// every operand runs along the output the kernel runs plain loops.
TEST(DotGeneralTest, TransposedElementwiseProductsRunInTiles) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  const DotGeneralDims dims = dims_of({0, 1}, {0, 1}, {}, {});
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex128, DType::kInt32}) {
    for (Layout lhs_layout : {Layout::kContiguous, Layout::kTransposed}) {
      for (Layout rhs_layout : {Layout::kContiguous, Layout::kTransposed}) {
        for (const ParallelContext* ctx : {&sequential_context(), &two_thread_context()}) {
          SCOPED_TRACE(::testing::Message() << to_string(dtype) << " " << layout_name(lhs_layout) << " x "
                                            << layout_name(rhs_layout) << (ctx->max_threads() > 1 ? " 2 threads" : ""));
          const Tensor a = make_tensor({70, 45}, dtype, lhs_layout, 3);
          const Tensor b = make_tensor({70, 45}, dtype, rhs_layout, 4);
          DotGeneralPlan plan;
          auto out = composite.dot_general(a.view(), b.view(), dims, *ctx, &plan);
          ASSERT_TRUE(out.ok()) << out.status().to_string();
          EXPECT_EQ(plan.path, DotGeneralPath::kElementwise);
          EXPECT_EQ(plan.elementwise_block, 0);
          EXPECT_EQ(plan.elementwise_tiled, lhs_layout != rhs_layout);
          check_against_reference(a, b, dims, *out);
        }
      }
    }
  }
}

TEST(DotGeneralTest, InvalidRequestsAreTypedErrorsBeforeAnyKernel) {
  const DotGeneralComposite composite(native(), nullptr, planned_only());
  const Tensor a = make_tensor({4, 5}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor b = make_tensor({5, 6}, DType::kFloat64, Layout::kContiguous, 2);
  const Tensor bf = make_tensor({5, 6}, DType::kFloat32, Layout::kContiguous, 2);
  const Tensor bb = make_tensor({5, 6}, DType::kBool, Layout::kContiguous, 2);
  auto code = [&](const Tensor& x, const Tensor& y, const DotGeneralDims& d) {
    return composite.dot_general(x.view(), y.view(), d, sequential_context()).status().code();
  };
  EXPECT_EQ(code(a, bf, dims_of({}, {}, {1}, {0})), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(bb, bb, dims_of({}, {}, {1}, {1})), ErrorCode::kUnsupported);
  EXPECT_EQ(code(a, b, dims_of({}, {}, {0}, {0})), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code(a, b, dims_of({}, {}, {2}, {0})), ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(code(a, b, dims_of({}, {}, {1, 1}, {0, 0})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(a, b, dims_of({}, {}, {1}, {})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(a, b, dims_of({1}, {0}, {1}, {0})), ErrorCode::kInvalidArgument);  // axis used twice
  EXPECT_EQ(code(a, b, dims_of({0}, {1}, {1}, {0})), ErrorCode::kShapeMismatch);    // batch 4 vs 6

  // Output checks: shape, dtype, self-overlap, overlap with an operand. The
  // output is left untouched.
  Tensor out = make_tensor({4, 6}, DType::kFloat64, Layout::kContiguous, 9);
  auto into = [&](const TensorView& o) {
    return composite.dot_general_into(a.view(), b.view(), dims_of({}, {}, {1}, {0}), o, sequential_context()).code();
  };
  EXPECT_EQ(into(make_tensor({6, 4}, DType::kFloat64, Layout::kContiguous, 1).view()), ErrorCode::kShapeMismatch);
  EXPECT_EQ(into(make_tensor({4, 6}, DType::kFloat32, Layout::kContiguous, 1).view()), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(into(out.broadcast_to({4, 6})->view()), ErrorCode::kOk);
  const Tensor squeezed = *out.slice(0, 0, 1)->broadcast_to({4, 6});  // rows alias each other
  EXPECT_EQ(into(squeezed.view()), ErrorCode::kAliasConflict);
  const Tensor over_b = *Tensor::from_storage(b.storage(), DType::kFloat64, {4, 6}, {6, 1});
  EXPECT_EQ(into(over_b.view()), ErrorCode::kAliasConflict);

  // A GEMM provider without the dtype: kUnsupported at validation.
  const DotGeneralComposite null_composite(std::make_shared<NullGemmProvider>());
  EXPECT_EQ(
      null_composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1}, {0}), sequential_context()).status().code(),
      ErrorCode::kUnsupported);
}

// A direct provider is tried first; kUnsupported falls back to TTGT.
class RecordingDirectProvider final : public CpuGeneralContractionProvider {
 public:
  explicit RecordingDirectProvider(bool accept) : accept_(accept) { cap_.detail = "test direct provider"; }
  std::string_view name() const noexcept override { return "recording"; }
  const ProviderCapability& capability() const noexcept override { return cap_; }
  Status contract(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims, const TensorView& out,
                  const ParallelContext& ctx) const override {
    ++calls;
    if (!accept_) return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "declined");
    const DotGeneralComposite fallback(native(), nullptr, planned_only());
    return fallback.dot_general_into(lhs, rhs, dims, out, ctx);
  }
  mutable int calls = 0;

 private:
  bool accept_;
  ProviderCapability cap_;
};

TEST(DotGeneralTest, DirectProviderSlot) {
  const Tensor a = make_tensor({4, 5}, DType::kFloat64, Layout::kContiguous, 1);
  const Tensor b = make_tensor({5, 6}, DType::kFloat64, Layout::kContiguous, 2);
  for (bool accept : {true, false}) {
    auto direct = std::make_shared<RecordingDirectProvider>(accept);
    const DotGeneralComposite composite(native(), direct, planned_only());
    DotGeneralPlan plan;
    auto out = composite.dot_general(a.view(), b.view(), dims_of({}, {}, {1}, {0}), sequential_context(), &plan);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(direct->calls, 1);
    EXPECT_EQ(plan.path, accept ? DotGeneralPath::kDirect : DotGeneralPath::kGemm);
    check_against_reference(a, b, dims_of({}, {}, {1}, {0}), *out);
  }
}

}  // namespace
}  // namespace tenferro::cpu::testing
