#include "tenferro/cpu/kernels/layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/transpose_micro.h"

namespace tenferro::cpu {
namespace {

using testing::kAllDTypes;
using testing::kAllLayouts;
using testing::kOutputLayouts;
using testing::Layout;
using testing::make_tensor;

using testing::row_major_bytes;

const std::vector<std::vector<std::int64_t>> kLayoutShapes = {
    {}, {0}, {3, 0, 2}, {7}, {1, 1}, {3, 4}, {2, 3, 5}, {4, 1, 5, 3}, {2, 3, 1, 2, 3}};

TEST(CopyIntoTest, EveryDTypeLayoutAndShapeMatchesTheSource) {
  for (DType dtype : kAllDTypes) {
    for (const auto& shape : kLayoutShapes) {
      for (Layout src_layout : kAllLayouts) {
        for (Layout dst_layout : kOutputLayouts) {
          for (const ParallelContext* ctx : {&testing::sequential_context(), &testing::two_thread_context()}) {
            SCOPED_TRACE(fmt::format("{} {} {} -> {}", dtype, shape_to_string(shape), layout_name(src_layout),
                                     layout_name(dst_layout)));
            Tensor src = make_tensor(shape, dtype, src_layout, 7);
            Tensor dst = make_tensor(shape, dtype, dst_layout, 8);
            ASSERT_TRUE(copy_into(src.view(), dst.view(), *ctx).ok());
            EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
          }
        }
      }
    }
  }
}

// Permutations are views; copy_into materializes them.
TEST(CopyIntoTest, MaterializesPermutationsOfLargerTensors) {
  const std::vector<std::vector<std::int64_t>> perms = {{1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {0, 2, 1}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex128, DType::kBool}) {
    for (const auto& perm : perms) {
      Tensor base = make_tensor({37, 45, 19}, dtype, Layout::kContiguous, 3);
      Tensor view = *base.permute(perm);
      for (MemoryOrder order : {MemoryOrder::kRowMajor, MemoryOrder::kColMajor}) {
        Tensor dst = *Tensor::empty(view.shape(), dtype, order);
        ASSERT_TRUE(copy_into(view.view(), dst.view(), testing::two_thread_context()).ok());
        EXPECT_EQ(row_major_bytes(dst), row_major_bytes(view)) << to_string(dtype) << " " << shape_to_string(perm);
      }
    }
  }
}

TEST(CopyIntoTest, LargeCopiesSplitOverTwoThreads) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex128}) {
    Tensor src = *make_tensor({257, 301, 3}, dtype, Layout::kContiguous, 5).permute({2, 0, 1});
    Tensor dst = *Tensor::empty(src.shape(), dtype);
    KernelStats stats;
    ASSERT_TRUE(copy_into(src.view(), dst.view(), testing::two_thread_context(), &stats).ok());
    EXPECT_EQ(stats.parallel_calls, 1u);
    EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
  }
}

// Note [Blocked transpose]: small axes are fused into tile groups, large
// ones are blocked, both through the SIMD tile kernels.
TEST(CopyIntoTest, PermutationsRunThroughVectorTiles) {
  struct Case {
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{37, 45}, {1, 0}},                                                // edges in both directions
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},  // fused 2s
      {{3, 3, 3, 3, 3, 3, 3}, {6, 5, 4, 3, 2, 1, 0}},                    // fused 3s with edges
      {{3, 5, 7, 11}, {3, 1, 2, 0}},                                     // mixed
      {{16, 9, 24}, {2, 0, 1}},
      {{701, 3}, {1, 0}},  // interleaved source: strided runs
      {{333, 2}, {1, 0}},
      {{5, 129, 4}, {2, 0, 1}},
  };
  for (DType dtype : {DType::kInt32, DType::kFloat64, DType::kComplex64, DType::kComplex128}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} {} perm {}", dtype, shape_to_string(c.shape), shape_to_string(c.perm)));
      Tensor src = *make_tensor(c.shape, dtype, Layout::kContiguous, 12).permute(c.perm);
      Tensor dst = *Tensor::empty(src.shape(), dtype);
      KernelStats stats;
      ASSERT_TRUE(copy_into(src.view(), dst.view(), testing::sequential_context(), &stats).ok());
      EXPECT_EQ(stats.tiled_transposes, 1u);
      EXPECT_EQ(stats.vector_tiles, 1u);
      EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
    }
  }
}

// Note [ISA cap]: the register tiles follow the context's kernel_isa(), so
// an engine's cap reaches the copy; kAuto falls back to the process-wide
// layout_kernel_isa(). A portable cap copies with scalar tiles.
TEST(CopyIntoTest, TheContextsKernelIsaSelectsTheTiles) {
  Tensor src = *make_tensor({37, 45}, DType::kFloat64, Layout::kContiguous, 14).transpose(0, 1);
  for (CpuIsa isa : {CpuIsa::kPortable, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!cpu_supports(isa)) continue;
    SCOPED_TRACE(to_string(isa));
    const SequentialContext sequential(isa);
    const KernelIsaContext workers(testing::two_thread_context(), isa);
    EXPECT_EQ(workers.max_threads(), testing::two_thread_context().max_threads());
    for (const ParallelContext* ctx :
         {static_cast<const ParallelContext*>(&sequential), static_cast<const ParallelContext*>(&workers)}) {
      EXPECT_EQ(ctx->kernel_isa(), isa);
      Tensor dst = *Tensor::empty(src.shape(), DType::kFloat64);
      KernelStats stats;
      ASSERT_TRUE(copy_into(src.view(), dst.view(), *ctx, &stats).ok());
      EXPECT_EQ(stats.tiled_transposes, 1u);
      EXPECT_EQ(stats.vector_tiles, isa == CpuIsa::kPortable ? 0u : 1u);
      EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
    }
  }
}

// Note [Staged streaming]: destination rows of 1088 elements are whole
// cache lines and stream directly when a register tile's column is a whole
// line (AVX-512 doubles); rows of 1100 doubles (8800 bytes) are not, and
// half-line tiles (AVX2, and floats) always stream through the stage. All
// match the source, on one and two workers.
TEST(CopyIntoTest, LargeTransposesStreamTheirStores) {
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!cpu_supports(isa)) continue;
    const SequentialContext sequential(isa);
    const KernelIsaContext workers(testing::two_thread_context(), isa);
    for (const DType dtype : {DType::kFloat64, DType::kFloat32}) {
      const std::int64_t item = static_cast<std::int64_t>(dtype_size(dtype));
      const bool whole_line_tiles = internal::select_tile_transpose(item, isa).width * item == 64;
      for (const ParallelContext* ctx :
           {static_cast<const ParallelContext*>(&sequential), static_cast<const ParallelContext*>(&workers)}) {
        for (const std::int64_t row : {1100, 1088}) {
          SCOPED_TRACE(fmt::format("{} {} rows of {}", to_string(isa), to_string(dtype), row));
          const std::int64_t cols = 2 * (8 << 20) / (row * item);  // 16 MiB, above the streaming threshold
          Tensor src = *make_tensor({row, cols}, dtype, Layout::kContiguous, 13).transpose(0, 1);
          Tensor dst = *Tensor::empty(src.shape(), dtype);
          KernelStats stats;
          ASSERT_TRUE(copy_into(src.view(), dst.view(), *ctx, &stats).ok());
          EXPECT_EQ(stats.streaming_stores, 1u);
          EXPECT_EQ(stats.staged_streaming, row == 1088 && whole_line_tiles ? 0u : 1u);
          EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
        }
      }
    }
  }
}

// Note [Streaming runs]: contiguous runs of at least 1 KB into a slice of
// a 40 MB tensor go out as non-temporal stores, on one and two workers,
// starting 24 bytes past a line; everything outside the slice stays as it
// was. So do shorter runs that are contiguous in the destination. Short
// runs apart in the destination, or a destination spanning less than 8 MB,
// use memcpy.
TEST(CopyIntoTest, RunsIntoALargeDestinationStreamTheirStores) {
  const SequentialContext sequential;
  for (const ParallelContext* ctx :
       {static_cast<const ParallelContext*>(&sequential), &testing::two_thread_context()}) {
    for (const std::int64_t run : {200, 100}) {  // 1600 and 800 bytes
      SCOPED_TRACE(fmt::format("{} threads, runs of {} doubles", ctx->max_threads(), run));
      Tensor big = *Tensor::zeros({20, 1000, 256}, DType::kFloat64);
      Tensor dst = *(*big.slice(1, 7, 8)).slice(2, 3, 3 + run);
      Tensor src = make_tensor(dst.shape(), DType::kFloat64, Layout::kContiguous, 21);
      KernelStats stats;
      ASSERT_TRUE(copy_into(src.view(), dst.view(), *ctx, &stats).ok());
      EXPECT_EQ(stats.run_copies, 1u);
      EXPECT_EQ(stats.streaming_stores, run == 200 ? 1u : 0u);
      EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
      const std::vector<double> all = *big.to_vector<double>();
      const std::vector<double> copied = *src.to_vector<double>();
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const std::size_t a = i / (1000 * 256), b = i / 256 % 1000, c = i % 256;
        const bool inside = b == 7 && c >= 3 && c < static_cast<std::size_t>(3 + run);
        const double expected = inside ? copied[a * static_cast<std::size_t>(run) + (c - 3)] : 0.0;
        mismatches += all[i] != expected ? 1 : 0;
      }
      EXPECT_EQ(mismatches, 0u);
    }
  }
  // Runs of 864 bytes that follow each other in a contiguous 8.6 MB
  // destination (not in the source): they stream.
  {
    Tensor wide = make_tensor({10000, 216}, DType::kFloat64, Layout::kContiguous, 23);
    Tensor src = *wide.slice(1, 0, 108);
    Tensor dst = *Tensor::empty({10000, 108}, DType::kFloat64);
    KernelStats stats;
    ASSERT_TRUE(copy_into(src.view(), dst.view(), sequential, &stats).ok());
    EXPECT_EQ(stats.run_copies, 1u);
    EXPECT_EQ(stats.streaming_stores, 1u);
    EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
  }
  // A destination spanning less than kStreamingBytes: memcpy.
  Tensor small = *Tensor::zeros({20, 4, 256}, DType::kFloat64);
  Tensor dst = *small.slice(1, 1, 2);
  Tensor src = make_tensor(dst.shape(), DType::kFloat64, Layout::kContiguous, 22);
  KernelStats stats;
  ASSERT_TRUE(copy_into(src.view(), dst.view(), sequential, &stats).ok());
  EXPECT_EQ(stats.run_copies, 1u);
  EXPECT_EQ(stats.streaming_stores, 0u);
  EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
}

// Note [Small matrix copies]: every layout pair (transposing both ways,
// contiguous columns or rows, general strides) of every side length around
// the register tiles' widths, for each element size, against an element
// loop; nothing outside the destination matrix is written.
TEST(CopySmallMatrixTest, MatchesAnElementLoopInEveryLayout) {
  struct Strides {
    std::int64_t rs, cs;
  };
  for (const std::int64_t item : {1, 4, 8, 16}) {
    for (std::int64_t rows = 1; rows <= 37; rows += (rows < 18 ? 1 : 6)) {
      for (std::int64_t cols : {1, 3, 4, 8, 9, 16, 17, 33}) {
        const std::int64_t pad = 3;  // leading dimensions with a gap
        const Strides layouts[] = {{1, rows + pad}, {cols + pad, 1}, {2, 2 * rows + pad}, {2 * cols + pad, 2}};
        for (const Strides s : layouts) {
          for (const Strides d : layouts) {
            SCOPED_TRACE(
                fmt::format("item {} {}x{} src ({}, {}) dst ({}, {})", item, rows, cols, s.rs, s.cs, d.rs, d.cs));
            const std::int64_t span_s = ((rows - 1) * s.rs + (cols - 1) * s.cs + 1) * item;
            const std::int64_t span_d = ((rows - 1) * d.rs + (cols - 1) * d.cs + 1) * item;
            std::vector<unsigned char> src(static_cast<std::size_t>(span_s));
            for (std::size_t k = 0; k < src.size(); ++k) src[k] = static_cast<unsigned char>(k * 7 + 1);
            std::vector<unsigned char> got(static_cast<std::size_t>(span_d), 0xEE), want = got;
            for (std::int64_t j = 0; j < cols; ++j)
              for (std::int64_t i = 0; i < rows; ++i)
                std::memcpy(want.data() + (i * d.rs + j * d.cs) * item, src.data() + (i * s.rs + j * s.cs) * item,
                            static_cast<std::size_t>(item));
            copy_small_matrix(src.data(), s.rs, s.cs, got.data(), d.rs, d.cs, rows, cols, item);
            ASSERT_EQ(got, want);
          }
        }
      }
    }
  }
}

TEST(CopyIntoTest, StridedSourcesAndDestinationsUseScalarTiles) {
  // Every other element on both sides: no contiguous side for SIMD tiles.
  Tensor big_src = make_tensor({40, 60}, DType::kFloat32, Layout::kContiguous, 14);
  Tensor src = *big_src.slice(0, 0, 40, 2)->slice(1, 0, 60, 2)->transpose(0, 1);
  Tensor big_dst = *Tensor::empty({60, 40}, DType::kFloat32);
  Tensor dst = *big_dst.slice(0, 0, 60, 2)->slice(1, 0, 40, 2);
  KernelStats stats;
  ASSERT_TRUE(copy_into(src.view(), dst.view(), testing::sequential_context(), &stats).ok());
  EXPECT_EQ(stats.tiled_transposes, 1u);
  EXPECT_EQ(stats.vector_tiles, 0u);
  EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
}

TEST(CopyIntoTest, ContiguousCopyIsOneMemcpy) {
  Tensor src = make_tensor({4, 5, 6}, DType::kFloat64, Layout::kContiguous);
  Tensor dst = *Tensor::empty({4, 5, 6}, DType::kFloat64);
  KernelStats stats;
  ASSERT_TRUE(copy_into(src.view(), dst.view(), testing::sequential_context(), &stats).ok());
  EXPECT_EQ(stats.memcpy_copies, 1u);
  EXPECT_EQ(row_major_bytes(dst), row_major_bytes(src));
  // Same for two column-major tensors: dense in the same axis order.
  Tensor fsrc = make_tensor({4, 5, 6}, DType::kFloat64, Layout::kColMajor);
  Tensor fdst = *Tensor::empty({4, 5, 6}, DType::kFloat64, MemoryOrder::kColMajor);
  ASSERT_TRUE(copy_into(fsrc.view(), fdst.view(), testing::sequential_context(), &stats).ok());
  EXPECT_EQ(stats.memcpy_copies, 2u);
}

TEST(CopyIntoTest, IdenticalSourceAndDestinationIsANoOp) {
  Tensor t = make_tensor({3, 4}, DType::kInt32, Layout::kContiguous);
  const auto before = row_major_bytes(t);
  ASSERT_TRUE(copy_into(t.view(), t.view(), testing::sequential_context()).ok());
  EXPECT_EQ(row_major_bytes(t), before);
}

TEST(CopyIntoTest, InterleavedViewsOfOneBufferAreDisjoint) {
  // Even and odd elements: overlapping address ranges, no shared element.
  Tensor base = make_tensor({10}, DType::kFloat64, Layout::kContiguous);
  Tensor even = *base.slice(0, 0, 10, 2);
  Tensor odd = *base.slice(0, 1, 10, 2);
  const std::vector<double> odd_before = testing::values_of<double>(odd);
  ASSERT_TRUE(copy_into(odd.view(), even.view(), testing::sequential_context()).ok());
  EXPECT_EQ(testing::values_of<double>(even), odd_before);
}

TEST(CopyIntoTest, BadInputIsATypedErrorAndWritesNothing) {
  const ParallelContext& ctx = testing::sequential_context();
  Tensor src = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 1);
  Tensor dst = make_tensor({3, 4}, DType::kFloat64, Layout::kContiguous, 2);
  const auto dst_before = row_major_bytes(dst);
  auto expect_error = [&](const TensorView& s, const TensorView& d, ErrorCode code) {
    const Status st = copy_into(s, d, ctx);
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_FALSE(st.message().empty());
    EXPECT_EQ(row_major_bytes(dst), dst_before);
  };
  Tensor wrong_shape = make_tensor({4, 3}, DType::kFloat64, Layout::kContiguous);
  expect_error(wrong_shape.view(), dst.view(), ErrorCode::kShapeMismatch);
  Tensor wrong_dtype = make_tensor({3, 4}, DType::kFloat32, Layout::kContiguous);
  expect_error(wrong_dtype.view(), dst.view(), ErrorCode::kDTypeMismatch);
  // A broadcast destination writes one element several times.
  Tensor row = make_tensor({1, 4}, DType::kFloat64, Layout::kContiguous);
  expect_error(src.view(), row.broadcast_to({3, 4})->view(), ErrorCode::kAliasConflict);
  // Partial overlap: dst shifted by one element inside src's buffer.
  Tensor big = make_tensor({13}, DType::kFloat64, Layout::kContiguous);
  Tensor a = *big.slice(0, 0, 12)->reshape({3, 4});
  Tensor b = *big.slice(0, 1, 13)->reshape({3, 4});
  const auto big_before = row_major_bytes(big);
  EXPECT_EQ(copy_into(a.view(), b.view(), ctx).code(), ErrorCode::kAliasConflict);
  EXPECT_EQ(row_major_bytes(big), big_before);
  // The transpose of itself overlaps too (same buffer, different layout).
  Tensor sq = make_tensor({4, 4}, DType::kFloat64, Layout::kContiguous);
  EXPECT_EQ(copy_into(sq.transpose(0, 1)->view(), sq.view(), ctx).code(), ErrorCode::kAliasConflict);
  // Malformed views.
  TensorView bad = dst.view();
  const std::int64_t negative[] = {-1, 1};
  bad.strides = negative;
  expect_error(src.view(), bad, ErrorCode::kInvalidArgument);
  TensorView short_strides = dst.view();
  short_strides.strides = short_strides.strides.subspan(1);
  expect_error(src.view(), short_strides, ErrorCode::kShapeMismatch);
}

}  // namespace
}  // namespace tenferro::cpu
