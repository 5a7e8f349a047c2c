// Reductions, arg-reductions and creation kernels against scalar references
// computed here, over every dtype, every subset of axes and every layout.
#include "tenferro/cpu/kernels/reduction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "cpu/kernels/kernel_table.h"
#include "cpu/kernels/kernel_test_support.h"

namespace tenferro::cpu {
namespace {

using C = std::complex<double>;
using testing::KernelTable;
using testing::kSweepInputLayouts;
using testing::Layout;
using testing::make_tensor;
using testing::unravel;
using testing::value_at;

const std::vector<std::vector<std::int64_t>> kReductionShapes = {{},        {0},       {5},         {3, 4},
                                                                 {2, 3, 4}, {2, 0, 3}, {4, 1, 5, 3}};
constexpr ReduceOp kReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin};

bool defined(ReduceOp op, DType dtype) {
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) return !is_complex(dtype);
  return dtype != DType::kBool;
}

// Wraps an integer result to the width of `dtype`, as the kernels do.
C wrap_integer(std::uint64_t bits, DType dtype) {
  if (dtype == DType::kInt32) return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)));
  return static_cast<double>(static_cast<std::int64_t>(bits));
}

// The reference: accumulate every input element into its output index.
std::vector<C> reference_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                                const std::vector<std::int64_t>& out_shape) {
  std::int64_t out_n = 1;
  for (std::int64_t s : out_shape) out_n *= s;
  const bool integer = is_integer(x.dtype());
  std::vector<C> acc(static_cast<std::size_t>(out_n));
  std::vector<std::uint64_t> iacc(acc.size(), op == ReduceOp::kProd ? 1 : 0);
  for (auto& a : acc) {
    switch (op) {
      case ReduceOp::kSum:
        a = 0;
        break;
      case ReduceOp::kProd:
        a = 1;
        break;
      case ReduceOp::kMax:
        a = x.dtype() == DType::kBool ? 0.0
            : integer                 ? (x.dtype() == DType::kInt32 ? double{INT32_MIN} : double(INT64_MIN))
                                      : -INFINITY;
        break;
      case ReduceOp::kMin:
        a = x.dtype() == DType::kBool ? 1.0
            : integer                 ? (x.dtype() == DType::kInt32 ? double{INT32_MAX} : double(INT64_MAX))
                                      : INFINITY;
        break;
    }
  }
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto idx = unravel(i, x.shape());
    std::int64_t o = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) {
      if (!reduced[d]) o = o * x.shape()[d] + idx[d];
    }
    const C v = value_at(x, idx);
    C& a = acc[static_cast<std::size_t>(o)];
    std::uint64_t& ia = iacc[static_cast<std::size_t>(o)];
    switch (op) {
      case ReduceOp::kSum:
        a += v;
        ia += static_cast<std::uint64_t>(static_cast<std::int64_t>(v.real()));
        break;
      case ReduceOp::kProd:
        a *= v;
        ia *= static_cast<std::uint64_t>(static_cast<std::int64_t>(v.real()));
        break;
      case ReduceOp::kMax:
        a = std::isnan(a.real()) || std::isnan(v.real()) ? C(NAN) : C(std::max(a.real(), v.real()));
        break;
      case ReduceOp::kMin:
        a = std::isnan(a.real()) || std::isnan(v.real()) ? C(NAN) : C(std::min(a.real(), v.real()));
        break;
    }
  }
  if (integer && (op == ReduceOp::kSum || op == ReduceOp::kProd)) {
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = wrap_integer(iacc[i], x.dtype());
  }
  return acc;
}

class ReductionConformance : public ::testing::TestWithParam<const KernelTable*> {
 protected:
  const KernelTable& k() const { return *GetParam(); }

  // Runs reduce(op, x, axes) into a fresh output of `out_layout` and checks
  // every element against the reference.
  void check_reduce(ReduceOp op, const Tensor& x, const std::vector<std::int64_t>& axes, Layout out_layout,
                    const ParallelContext& ctx) {
    std::vector<bool> reduced(static_cast<std::size_t>(x.rank()), false);
    for (std::int64_t a : axes) reduced[static_cast<std::size_t>(a)] = true;
    std::vector<std::int64_t> out_shape;
    for (std::int64_t d = 0; d < x.rank(); ++d) {
      if (!reduced[static_cast<std::size_t>(d)]) out_shape.push_back(x.shape()[static_cast<std::size_t>(d)]);
    }
    Tensor out = make_tensor(out_shape, x.dtype(), out_layout, 99);
    const Status st = k().reduce(op, x.view(), axes, out.view(), ctx, nullptr);
    ASSERT_TRUE(st.ok()) << st.to_string();
    const std::vector<C> want = reference_reduce(op, x, reduced, out_shape);
    std::int64_t n_reduced = 1;
    for (std::int64_t a : axes) n_reduced *= x.shape()[static_cast<std::size_t>(a)];
    const double rtol =
        (real_dtype(x.dtype()) == DType::kFloat32 ? 2e-6 : 1e-14) * (2.0 + static_cast<double>(n_reduced));
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      const auto idx = unravel(i, out.shape());
      const C got = value_at(out, idx);
      ASSERT_TRUE(testing::matches(got, want[static_cast<std::size_t>(i)], x.dtype(), rtol))
          << "output " << i << ": got " << got << ", want " << want[static_cast<std::size_t>(i)];
    }
  }
};

TEST_P(ReductionConformance, EveryOpDTypeAxisSetAndLayoutMatchesTheReference) {
  for (ReduceOp op : kReduceOps) {
    for (DType dtype : testing::kAllDTypes) {
      if (!defined(op, dtype)) continue;
      for (const auto& shape : kReductionShapes) {
        const auto rank = static_cast<std::int64_t>(shape.size());
        for (std::int64_t mask = 0; mask < (std::int64_t{1} << rank); ++mask) {
          std::vector<std::int64_t> axes;
          for (std::int64_t a = rank; a-- > 0;) {  // descending: order must not matter
            if ((mask >> a) & 1) axes.push_back(a);
          }
          for (Layout xl : kSweepInputLayouts) {
            SCOPED_TRACE(fmt::format("{} {} {} axes {} x:{}", to_string(op), dtype, shape_to_string(shape),
                                     shape_to_string(axes), layout_name(xl)));
            Tensor x = make_tensor(shape, dtype, xl, 5 + static_cast<std::uint64_t>(mask));
            check_reduce(op, x, axes, mask % 2 == 0 ? Layout::kContiguous : Layout::kSliced,
                         testing::sequential_context());
          }
        }
      }
    }
  }
}

TEST_P(ReductionConformance, LargeReductionsAreThreadCountIndependent) {
  Tensor x = make_tensor({301, 517}, DType::kFloat32, Layout::kContiguous, 3);
  Tensor xt = *x.transpose(0, 1);
  for (const std::vector<std::int64_t>& axes : {std::vector<std::int64_t>{0}, {1}, {0, 1}}) {
    for (const Tensor* in : {&x, &xt}) {
      std::vector<std::int64_t> out_shape;
      for (std::int64_t d = 0; d < 2; ++d) {
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) out_shape.push_back(in->shape()[d]);
      }
      Tensor seq = *Tensor::empty(out_shape, DType::kFloat32);
      Tensor par = *Tensor::empty(out_shape, DType::kFloat32);
      KernelStats stats;
      ASSERT_TRUE(
          k().reduce(ReduceOp::kSum, in->view(), axes, seq.view(), testing::sequential_context(), nullptr).ok());
      ASSERT_TRUE(k().reduce(ReduceOp::kSum, in->view(), axes, par.view(), testing::two_thread_context(), &stats).ok());
      EXPECT_EQ(testing::values_of<float>(seq), testing::values_of<float>(par)) << shape_to_string(axes);
      if (GetParam() == &testing::kNativeKernels) {
        EXPECT_GE(stats.parallel_calls, 1u);
      }
      check_reduce(ReduceOp::kSum, *in, axes, Layout::kContiguous, testing::two_thread_context());
    }
  }
}

// Note [Transposed reductions]: x's fastest kept axis is the output's
// slowest (einsum "ijkl->lj" with i, k summed); tiles partial and whole,
// two reduced axes, one and two threads.
TEST_P(ReductionConformance, TransposedKeptAxesMatchTheReferenceAtEveryThreadCount) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex128, DType::kInt32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      if (!defined(op, dtype)) continue;
      // (shape, reduced axes): "ijkl->lj" (two reduced axes) and "ijk->kj" (one; the loop then orders the
      // output's unit axis first).
      for (const auto& [shape, axes] :
           {std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>{{5, 37, 3, 21}, {0, 2}},
            {{40, 70, 3, 45}, {0, 2}},
            {{64, 20, 33}, {0}}}) {
        SCOPED_TRACE(fmt::format("{} {} {}", to_string(op), dtype, shape_to_string(shape)));
        const Tensor x = make_tensor(shape, dtype, Layout::kContiguous, 17);
        // The output (j, last) stored last-major: its fastest axis is j.
        const std::int64_t last = shape.back();
        Tensor seq_base = *Tensor::empty({last, shape[1]}, dtype);
        Tensor par_base = *Tensor::empty({last, shape[1]}, dtype);
        Tensor seq = *seq_base.transpose(0, 1);
        Tensor par = *par_base.transpose(0, 1);
        KernelStats seq_stats, par_stats;
        ASSERT_TRUE(k().reduce(op, x.view(), axes, seq.view(), testing::sequential_context(), &seq_stats).ok());
        ASSERT_TRUE(k().reduce(op, x.view(), axes, par.view(), testing::two_thread_context(), &par_stats).ok());
        std::vector<bool> reduced(shape.size(), false);
        for (std::int64_t r : axes) reduced[static_cast<std::size_t>(r)] = true;
        const std::vector<C> want = reference_reduce(op, x, reduced, {shape[1], last});
        for (std::int64_t i = 0; i < seq.numel(); ++i) {
          const auto idx = unravel(i, seq.shape());
          const double rtol = real_dtype(dtype) == DType::kFloat32 ? 1e-4 : 1e-12;
          ASSERT_TRUE(testing::matches(value_at(seq, idx), want[static_cast<std::size_t>(i)], dtype, rtol)) << i;
          ASSERT_EQ(value_at(seq, idx), value_at(par, idx)) << "thread counts differ at " << i;
        }
        if (GetParam() == &testing::kNativeKernels) {
          EXPECT_EQ(seq_stats.tiled_inner, 1u);  // the tiles ran
          if (x.numel() > 100000) {
            EXPECT_EQ(par_stats.parallel_calls, 1u);
          }
        }
      }
    }
  }
}

TEST_P(ReductionConformance, LongFloatSumsArePairwiseAccurate) {
  // 2^22 float32 values of 0.1: a naive running sum drifts by ~1e-2
  // relative; a pairwise sum stays within a few ulps.
  const std::int64_t n = std::int64_t{1} << 22;
  Tensor x = *Tensor::empty({n}, DType::kFloat32);
  std::fill_n(static_cast<float*>(x.data()), n, 0.1f);
  Tensor out = *Tensor::empty({}, DType::kFloat32);
  ASSERT_TRUE(k().reduce(ReduceOp::kSum, x.view(), {0}, out.view(), testing::two_thread_context(), nullptr).ok());
  const double want = static_cast<double>(0.1f) * static_cast<double>(n);
  EXPECT_NEAR(testing::values_of<float>(out)[0], want, want * 1e-6);
}

// Note [GCC 12 and the accumulator loop]: contiguous runs of every length
// up to past one pairwise block, each dtype, folded whole (16 int32 ones
// once summed to 15) and row by row.
TEST_P(ReductionConformance, SumsOfEveryRunLength) {
  for (DType dtype : testing::kAllDTypes) {
    if (dtype == DType::kBool) continue;
    for (std::int64_t n = 1; n <= 600; ++n) {
      SCOPED_TRACE(fmt::format("{} n {}", dtype, n));
      const Tensor x = make_tensor({n}, dtype, Layout::kContiguous, static_cast<std::uint64_t>(n));
      check_reduce(ReduceOp::kSum, x, {0}, Layout::kContiguous, testing::sequential_context());
      if (defined(ReduceOp::kMax, dtype)) {
        check_reduce(ReduceOp::kMax, x, {0}, Layout::kContiguous, testing::sequential_context());
      }
      if (n % 37 == 0) {
        const Tensor rows = make_tensor({3, n}, dtype, Layout::kContiguous, static_cast<std::uint64_t>(n));
        check_reduce(ReduceOp::kSum, rows, {1}, Layout::kContiguous, testing::sequential_context());
      }
    }
  }
}

TEST_P(ReductionConformance, ArgReductionsFindTheFirstExtremeWithNaNAsExtreme) {
  for (DType dtype : testing::kAllDTypes) {
    if (is_complex(dtype)) continue;
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{5}, {3, 4}, {2, 3, 4}, {4, 1, 5, 3}}) {
      for (Layout xl : kSweepInputLayouts) {
        for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(shape.size()); ++axis) {
          for (ArgReduceOp op : {ArgReduceOp::kArgmax, ArgReduceOp::kArgmin}) {
            SCOPED_TRACE(fmt::format("{} {} {} axis {} x:{}", to_string(op), dtype, shape_to_string(shape), axis,
                                     layout_name(xl)));
            Tensor x = make_tensor(shape, dtype, xl, 17);
            std::vector<std::int64_t> out_shape = shape;
            out_shape.erase(out_shape.begin() + axis);
            Tensor out = make_tensor(out_shape, DType::kInt64, Layout::kSliced, 18);
            ASSERT_TRUE(k().arg_reduce(op, x.view(), axis, out.view(), testing::sequential_context(), nullptr).ok());
            for (std::int64_t i = 0; i < out.numel(); ++i) {
              auto idx = unravel(i, out.shape());
              idx.insert(idx.begin() + axis, 0);
              std::int64_t best = 0;
              double best_v = value_at(x, idx).real();
              for (std::int64_t j = 1; j < shape[static_cast<std::size_t>(axis)]; ++j) {
                idx[static_cast<std::size_t>(axis)] = j;
                const double v = value_at(x, idx).real();
                if (op == ArgReduceOp::kArgmax ? v > best_v : v < best_v) {
                  best = j;
                  best_v = v;
                }
              }
              ASSERT_EQ(testing::element<std::int64_t>(out, unravel(i, out.shape())), best) << "output " << i;
            }
          }
        }
      }
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = *Tensor::from_values<double>({1.0, 3.0, 3.0, nan, 5.0, nan, 0.5, 0.5, 2.0}, {3, 3});
  Tensor out = *Tensor::empty({3}, DType::kInt64);
  ASSERT_TRUE(
      k().arg_reduce(ArgReduceOp::kArgmax, x.view(), 1, out.view(), testing::sequential_context(), nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int64_t>(out), (std::vector<std::int64_t>{1, 0, 2}));
  ASSERT_TRUE(
      k().arg_reduce(ArgReduceOp::kArgmin, x.view(), 1, out.view(), testing::sequential_context(), nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int64_t>(out), (std::vector<std::int64_t>{0, 0, 0}));
  ASSERT_TRUE(
      k().arg_reduce(ArgReduceOp::kArgmin, x.view(), 0, out.view(), testing::sequential_context(), nullptr).ok());
  EXPECT_EQ(testing::values_of<std::int64_t>(out), (std::vector<std::int64_t>{1, 2, 1}));
}

TEST_P(ReductionConformance, BadInputIsATypedErrorAndWritesNothing) {
  const ParallelContext& ctx = testing::sequential_context();
  Tensor x = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 1);
  Tensor out = make_tensor({3}, DType::kFloat64, Layout::kContiguous, 2);
  const auto before = testing::row_major_bytes(out);
  auto expect_code = [&](const Status& st, ErrorCode code) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_EQ(testing::row_major_bytes(out), before);
  };
  expect_code(k().reduce(ReduceOp::kSum, x.view(), {2}, out.view(), ctx, nullptr), ErrorCode::kAxisOutOfRange);
  expect_code(k().reduce(ReduceOp::kSum, x.view(), {1, 1}, out.view(), ctx, nullptr), ErrorCode::kInvalidArgument);
  expect_code(k().reduce(ReduceOp::kSum, x.view(), {0}, out.view(), ctx, nullptr), ErrorCode::kShapeMismatch);
  Tensor b = make_tensor({3, 4}, DType::kBool, Layout::kContiguous);
  expect_code(k().reduce(ReduceOp::kSum, b.view(), {1}, out.view(), ctx, nullptr), ErrorCode::kDTypeMismatch);
  Tensor c = make_tensor({3, 4}, DType::kComplex128, Layout::kContiguous);
  expect_code(k().reduce(ReduceOp::kMax, c.view(), {1}, out.view(), ctx, nullptr), ErrorCode::kDTypeMismatch);
  Tensor f = make_tensor({3, 4}, DType::kFloat32, Layout::kContiguous);
  expect_code(k().reduce(ReduceOp::kSum, f.view(), {1}, out.view(), ctx, nullptr), ErrorCode::kDTypeMismatch);
  // The output inside the input.
  const auto x_before = testing::row_major_bytes(x);
  EXPECT_EQ(k().reduce(ReduceOp::kSum, x.view(), {1}, x.slice(1, 0, 1)->squeeze(1)->view(), ctx, nullptr).code(),
            ErrorCode::kAliasConflict);
  EXPECT_EQ(testing::row_major_bytes(x), x_before);
  // arg reductions.
  Tensor idx = make_tensor({3}, DType::kInt64, Layout::kContiguous, 3);
  const auto idx_before = testing::row_major_bytes(idx);
  EXPECT_EQ(k().arg_reduce(ArgReduceOp::kArgmax, x.view(), 1, out.view(), ctx, nullptr).code(),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(k().arg_reduce(ArgReduceOp::kArgmax, x.view(), 2, idx.view(), ctx, nullptr).code(),
            ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(k().arg_reduce(ArgReduceOp::kArgmax, c.view(), 1, idx.view(), ctx, nullptr).code(),
            ErrorCode::kDTypeMismatch);
  Tensor empty_axis = make_tensor({3, 0}, DType::kFloat64, Layout::kContiguous);
  EXPECT_EQ(k().arg_reduce(ArgReduceOp::kArgmin, empty_axis.view(), 1, idx.view(), ctx, nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(testing::row_major_bytes(idx), idx_before);
}

TEST_P(ReductionConformance, FillAndIotaWriteEveryElement) {
  for (DType dtype : testing::kAllDTypes) {
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{}, {0}, {7}, {3, 4}, {2, 3, 4}}) {
      for (Layout l : testing::kOutputLayouts) {
        Tensor out = make_tensor(shape, dtype, l, 4);
        Scalar value;
        std::mt19937_64 rng(9);
        visit_dtype(dtype, [&]<class T>(T) { value = Scalar::of(testing::random_value<T>(rng)); });
        ASSERT_TRUE(k().fill(out.view(), value, testing::sequential_context(), nullptr).ok());
        visit_dtype(dtype, [&]<class T>(T) {
          for (auto v : testing::values_of<T>(out)) EXPECT_EQ(static_cast<T>(v), value.value<T>());
        });
        for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(shape.size()); ++axis) {
          ASSERT_TRUE(k().iota(out.view(), axis, testing::two_thread_context(), nullptr).ok());
          for (std::int64_t i = 0; i < out.numel(); ++i) {
            const auto idx = unravel(i, out.shape());
            const double j = static_cast<double>(idx[static_cast<std::size_t>(axis)]);
            EXPECT_EQ(value_at(out, idx), C(dtype == DType::kBool ? (j != 0 ? 1.0 : 0.0) : j));
          }
        }
      }
    }
  }
  Tensor big = *Tensor::empty({1000, 300}, DType::kInt32);
  for (std::int64_t axis : {0, 1}) {
    ASSERT_TRUE(k().iota(big.view(), axis, testing::two_thread_context(), nullptr).ok());
    const auto v = testing::values_of<std::int32_t>(big);
    EXPECT_EQ(v[300 * 999 + 299], axis == 0 ? 999 : 299);
  }
  Tensor out = *Tensor::empty({3}, DType::kFloat64);
  EXPECT_EQ(k().fill(out.view(), Scalar::of(1.0f), testing::sequential_context(), nullptr).code(),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(k().iota(out.view(), 1, testing::sequential_context(), nullptr).code(), ErrorCode::kAxisOutOfRange);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ReductionConformance, ::testing::Values(&testing::kNativeKernels),
                         testing::kernel_table_name);

}  // namespace
}  // namespace tenferro::cpu
