// The along-axis kernels and clamp beyond what the conformance suite
// checks: typed errors for bad input, and results that do not depend on the
// thread count (numpy agreement is in numpy_reference_test.cpp).
#include "tenferro/cpu/kernels/along_axis.h"

#include <gtest/gtest.h>

#include <cstring>

#include "cpu/kernels/kernel_test_support.h"
#include "tenferro/cpu/kernels/elementwise.h"

namespace tenferro::cpu {
namespace {

using testing::Layout;
using testing::make_tensor;

ErrorCode code_of(const Status& s) { return s.ok() ? ErrorCode::kOk : s.code(); }

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(AlongAxisKernels, BadInputIsATypedError) {
  const ParallelContext& ctx = testing::sequential_context();
  const Tensor x = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 1);
  Tensor out = *Tensor::empty({3, 4}, DType::kFloat64);
  Tensor indices = *Tensor::empty({3, 4}, DType::kInt64);
  EXPECT_EQ(code_of(cumulative(CumulativeOp::kSum, x.view(), 2, false, false, out.view(), ctx)),
            ErrorCode::kAxisOutOfRange);
  EXPECT_EQ(code_of(sort(SortResult::kValues, x.view(), -1, false, out.view(), ctx)), ErrorCode::kAxisOutOfRange);
  const Tensor flags = make_tensor({3, 4}, DType::kBool, Layout::kContiguous, 2);
  Tensor bool_out = *Tensor::empty({3, 4}, DType::kBool);
  EXPECT_EQ(code_of(cumulative(CumulativeOp::kProd, flags.view(), 0, false, false, bool_out.view(), ctx)),
            ErrorCode::kDTypeMismatch);
  const Tensor z = make_tensor({3, 4}, DType::kComplex128, Layout::kContiguous, 3);
  Tensor z_out = *Tensor::empty({3, 4}, DType::kComplex128);
  EXPECT_EQ(code_of(sort(SortResult::kValues, z.view(), 0, false, z_out.view(), ctx)), ErrorCode::kDTypeMismatch);
  // argsort writes int64, sort writes the operand's dtype.
  EXPECT_EQ(code_of(sort(SortResult::kIndices, x.view(), 0, false, out.view(), ctx)), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code_of(sort(SortResult::kValues, x.view(), 0, false, indices.view(), ctx)), ErrorCode::kDTypeMismatch);
  Tensor wrong_shape = *Tensor::empty({4, 3}, DType::kFloat64);
  EXPECT_EQ(code_of(cumulative(CumulativeOp::kSum, x.view(), 0, false, false, wrong_shape.view(), ctx)),
            ErrorCode::kShapeMismatch);
  // Lanes are read after earlier outputs are written: no in-place.
  Tensor y = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 4);
  EXPECT_EQ(code_of(sort(SortResult::kValues, y.view(), 1, false, y.view(), ctx)), ErrorCode::kAliasConflict);
  EXPECT_EQ(code_of(clamp(x.view(), z.view(), x.view(), out.view(), ctx)), ErrorCode::kDTypeMismatch);
  const Tensor f32 = make_tensor({3, 4}, DType::kFloat32, Layout::kContiguous, 5);
  EXPECT_EQ(code_of(clamp(f32.view(), x.view(), x.view(), out.view(), ctx)), ErrorCode::kDTypeMismatch);
}

TEST(AlongAxisKernels, ResultsDoNotDependOnTheThreadCount) {
  const Tensor x = make_tensor({96, 700}, DType::kFloat32, Layout::kTransposed, 11);
  for (std::int64_t axis : {0, 1}) {
    SCOPED_TRACE(axis);
    Tensor seq = *Tensor::empty({96, 700}, DType::kFloat32);
    Tensor par = *Tensor::empty({96, 700}, DType::kFloat32);
    KernelStats stats;
    ASSERT_TRUE(
        cumulative(CumulativeOp::kSum, x.view(), axis, true, false, seq.view(), testing::sequential_context()).ok());
    ASSERT_TRUE(
        cumulative(CumulativeOp::kSum, x.view(), axis, true, false, par.view(), testing::two_thread_context(), &stats)
            .ok());
    EXPECT_GT(stats.parallel_calls, 0u) << "the input must be large enough to split";
    EXPECT_TRUE(same_bits(seq, par));
    Tensor seq_idx = *Tensor::empty({96, 700}, DType::kInt64);
    Tensor par_idx = *Tensor::empty({96, 700}, DType::kInt64);
    ASSERT_TRUE(sort(SortResult::kIndices, x.view(), axis, true, seq_idx.view(), testing::sequential_context()).ok());
    ASSERT_TRUE(sort(SortResult::kIndices, x.view(), axis, true, par_idx.view(), testing::two_thread_context()).ok());
    EXPECT_TRUE(same_bits(seq_idx, par_idx));
  }
}

}  // namespace
}  // namespace tenferro::cpu
