// Tests of SliceExecutor: all slices run on the native engine equal the
// brute-force einsum; disjoint round-robin subsets (as ranks run them) add
// up to the same result; summed slices accumulate and unwritten output
// slices are zeroed; one label range per worker (range parts) adds up to
// the result too; argument errors are typed.
#include "tenferro/einsum_cpu/slice_executor.h"

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "tenferro/einsum/planner.h"

namespace tenferro::einsum {
namespace {

using test_support::Dense;

struct SliceCase {
  Network network;
  ContractionTree tree;
  std::vector<Dense> operands;
  Dense expected;
};

SliceCase make_case(std::uint64_t seed) {
  const int inputs = 2 + static_cast<int>(seed % 5);  // 2..6
  const auto e = test_support::random_einsum(seed, inputs, 6, 3, 4);
  const auto r = test_support::refs(e.shapes);
  Network net = Network::bind(e.subscripts, r).value();
  ContractionTree tree = plan(net, PlanningPolicy{.planner = PlannerKind::kGreedy}).value();
  auto operands = test_support::random_operands(e.shapes, seed);
  Dense expected = test_support::brute_force_einsum(net, operands);
  return SliceCase{std::move(net), std::move(tree), std::move(operands), std::move(expected)};
}

// A case's operands as tensors, and views of them.
struct CaseInputs {
  explicit CaseInputs(const SliceCase& c) : tensors(test_support::to_tensors(c.operands)) {
    for (const Tensor& t : tensors) views.push_back(t.view());
  }
  std::vector<Tensor> tensors;
  std::vector<TensorView> views;
};

TEST(SliceExecutorTest, AllSlicesAndRankSubsetsEqualTheEinsum) {
  const auto executor = test_support::make_executor();
  const cpu::SequentialContext ctx;
  int multi_slice = 0;
  for (std::uint64_t seed = 200; seed < 240; ++seed) {
    const SliceCase c = make_case(seed);
    SCOPED_TRACE(c.network.to_string());
    SlicingOptions options;
    options.max_intermediate_bytes = std::max(8.0, c.tree.cost().max_intermediate_elements * 8.0 / 6.0);
    options.min_slices = 3;
    options.workers = 3;
    auto sliced = SlicedContraction::plan(c.tree, options);
    if (!sliced.ok()) {
      EXPECT_EQ(sliced.status().code(), ErrorCode::kResourceExhausted);
      continue;
    }
    if (sliced->num_slices() > 1) ++multi_slice;
    auto runner = SliceExecutor::create(*sliced, executor);
    ASSERT_TRUE(runner.ok()) << runner.status().to_string();
    const CaseInputs in(c);

    Tensor out = Tensor::empty(IntArrayRef(c.network.output_shape()), DType::kFloat64).value();
    SliceRunStats stats;
    ASSERT_TRUE(runner->run(in.views, out.view(), ctx, 0, 1, &stats).ok());
    EXPECT_EQ(stats.slices, sliced->num_slices());
    EXPECT_EQ(stats.accumulated, sliced->num_slices() - sliced->num_output_slices());
    EXPECT_EQ(stats.zeroed_output_slices, 0);
    EXPECT_LT(test_support::max_abs_diff(test_support::to_dense(out), c.expected), 1e-10) << sliced->explain();

    // Three "ranks", round-robin; their partial outputs sum to the result.
    Dense total{c.expected.shape, std::vector<double>(c.expected.data.size(), 0.0)};
    for (std::int64_t rank = 0; rank < 3; ++rank) {
      // NaN-filled so that an output slice left unwritten shows.
      Tensor part = Tensor::empty(IntArrayRef(c.network.output_shape()), DType::kFloat64).value();
      for (std::int64_t i = 0; i < part.numel(); ++i) static_cast<double*>(part.data())[i] = NAN;
      ASSERT_TRUE(runner->run(in.views, part.view(), ctx, rank, 3).ok());
      const Dense d = test_support::to_dense(part);
      for (std::size_t i = 0; i < d.data.size(); ++i) total.data[i] += d.data[i];
    }
    EXPECT_LT(test_support::max_abs_diff(total, c.expected), 1e-10) << sliced->explain();
  }
  EXPECT_GT(multi_slice, 20);
}

// Note [Range slicing]: each worker runs all slices of its range part on
// the native engine into a NaN-filled output (a range of an output label
// must zero the rest), and the workers' outputs add up to the einsum.
TEST(SliceExecutorTest, RangePartsAddUpToTheEinsum) {
  const auto executor = test_support::make_executor();
  const cpu::SequentialContext ctx;
  int splits = 0;
  for (std::uint64_t seed = 200; seed < 230; ++seed) {
    const SliceCase c = make_case(seed);
    SCOPED_TRACE(c.network.to_string());
    const CaseInputs in(c);
    SlicingOptions options;
    options.workers = 2;
    options.max_intermediate_bytes = std::max(8.0, c.tree.cost().max_intermediate_elements * 8.0 / 3.0);
    for (LabelId l = 0; l < c.network.num_labels(); ++l) {
      if (c.network.extent(l) < 2) continue;
      auto split = WorkerSlicing::range_split(c.tree, l, options);
      if (!split.ok()) continue;  // a range that cannot meet the bound
      ++splits;
      Dense total{c.expected.shape, std::vector<double>(c.expected.data.size(), 0.0)};
      for (std::int64_t w = 0; w < 2; ++w) {
        auto runner = SliceExecutor::create(split->part(w), executor);
        ASSERT_TRUE(runner.ok()) << runner.status().to_string();
        Tensor part = Tensor::empty(IntArrayRef(c.network.output_shape()), DType::kFloat64).value();
        for (std::int64_t i = 0; i < part.numel(); ++i) static_cast<double*>(part.data())[i] = NAN;
        SliceRunStats stats;
        ASSERT_TRUE(runner->run(in.views, part.view(), ctx, split->first_slice(w), split->slice_step(), &stats).ok());
        EXPECT_EQ(stats.slices, split->part(w).num_slices());
        const Dense d = test_support::to_dense(part);
        for (std::size_t i = 0; i < d.data.size(); ++i) total.data[i] += d.data[i];
      }
      EXPECT_LT(test_support::max_abs_diff(total, c.expected), 1e-10) << split->explain();
    }
  }
  EXPECT_GT(splits, 40);
}

// Note [Range chunks]: one worker running several range parts one after
// another (the later ones accumulated) into a NaN-filled output gives the
// einsum, for every label cut into 2 or 3 ranges and for whatever
// plan_sequential chooses; two workers with two ranges each, and three
// workers sharing a round robin, add up to it.
TEST(SliceExecutorTest, RangePartsRunInTurnGiveTheEinsum) {
  const auto executor = test_support::make_executor();
  const cpu::SequentialContext ctx;
  int splits = 0, sequential_ranges = 0;
  const auto run = [&](const SliceCase& c, const WorkerSlicing& split, std::int64_t worker,
                       std::span<const TensorView> views) {
    auto runner = WorkerSliceExecutor::create(split, worker, executor);
    EXPECT_TRUE(runner.ok()) << runner.status().to_string();
    Tensor out = Tensor::empty(IntArrayRef(c.network.output_shape()), DType::kFloat64).value();
    for (std::int64_t i = 0; i < out.numel(); ++i) static_cast<double*>(out.data())[i] = NAN;
    SliceRunStats stats;
    const Status s = runner->run(views, out.view(), ctx, &stats);
    EXPECT_TRUE(s.ok()) << s.to_string();
    std::int64_t slices = 0;
    for (const SliceExecutor& p : runner->parts()) slices += p.sliced().num_slices();
    if (split.is_range_split()) {
      EXPECT_EQ(stats.slices, slices);
    }
    return test_support::to_dense(out);
  };
  for (std::uint64_t seed = 200; seed < 230; ++seed) {
    const SliceCase c = make_case(seed);
    SCOPED_TRACE(c.network.to_string());
    const CaseInputs in(c);
    SlicingOptions options;
    options.max_intermediate_bytes = std::max(8.0, c.tree.cost().max_intermediate_elements * 8.0 / 3.0);
    for (LabelId l = 0; l < c.network.num_labels(); ++l) {
      for (std::int64_t ranges : {2, 3}) {
        if (c.network.extent(l) < ranges) continue;
        auto split = WorkerSlicing::range_split(c.tree, l, options, ranges);
        if (!split.ok()) continue;  // a range that cannot meet the bound
        ++splits;
        EXPECT_EQ(split->parts().size(), static_cast<std::size_t>(ranges));
        EXPECT_LT(test_support::max_abs_diff(run(c, *split, 0, in.views), c.expected), 1e-10) << split->explain();
      }
      if (c.network.extent(l) >= 4) {  // two workers, two ranges each
        SlicingOptions two = options;
        two.workers = 2;
        auto split = WorkerSlicing::range_split(c.tree, l, two, 4);
        if (!split.ok()) continue;
        Dense total = run(c, *split, 0, in.views);
        const Dense other = run(c, *split, 1, in.views);
        for (std::size_t i = 0; i < total.data.size(); ++i) total.data[i] += other.data[i];
        EXPECT_LT(test_support::max_abs_diff(total, c.expected), 1e-10) << split->explain();
      }
    }
    // A round robin over three workers: every worker runs the one
    // contraction's slices w, w + 3, ...; their outputs add up.
    if (auto indexed = SlicedContraction::plan(c.tree, options); indexed.ok()) {
      const WorkerSlicing rr = WorkerSlicing::round_robin(*indexed, 3);
      Dense total = run(c, rr, 0, in.views);
      for (std::int64_t w = 1; w < 3; ++w) {
        const Dense d = run(c, rr, w, in.views);
        for (std::size_t i = 0; i < total.data.size(); ++i) total.data[i] += d.data[i];
      }
      EXPECT_LT(test_support::max_abs_diff(total, c.expected), 1e-10) << rr.explain();
    }
    auto planned = WorkerSlicing::plan_sequential(c.tree, options);
    if (!planned.ok()) {
      EXPECT_EQ(planned.status().code(), ErrorCode::kResourceExhausted);
      continue;
    }
    if (planned->is_range_split()) ++sequential_ranges;
    for (const SlicedContraction& p : planned->parts())
      EXPECT_LE(p.slice_max_intermediate_bytes(), options.max_intermediate_bytes) << planned->explain();
    EXPECT_LT(test_support::max_abs_diff(run(c, *planned, 0, in.views), c.expected), 1e-10) << planned->explain();
  }
  EXPECT_GT(splits, 40);
  EXPECT_GT(sequential_ranges, 0);
}

TEST(SliceExecutorTest, StridedOutputAndTypedErrors) {
  // ij,jk->ik with i (output) and j (summed) sliced, into a transposed output.
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 5}, {5, 4}};
  const auto r = test_support::refs(shapes);
  const Network net = Network::bind("ij,jk->ik", r).value();
  const ContractionTree tree = plan(net).value();
  const LabelId labels[] = {0, 1};
  auto sliced = SlicedContraction::with_labels(tree, labels);
  ASSERT_TRUE(sliced.ok());
  EXPECT_EQ(sliced->num_slices(), 15);
  EXPECT_EQ(sliced->num_output_slices(), 3);
  auto runner = SliceExecutor::create(*sliced, test_support::make_executor());
  ASSERT_TRUE(runner.ok());
  const auto operands = test_support::random_operands(shapes, 5);
  const std::vector<Tensor> inputs = test_support::to_tensors(operands);
  const TensorView views[] = {inputs[0].view(), inputs[1].view()};
  Tensor storage = Tensor::empty({4, 3}, DType::kFloat64).value();
  Tensor out = storage.transpose(0, 1).value();
  const cpu::SequentialContext ctx;
  ASSERT_TRUE(runner->run(views, out.view(), ctx).ok());
  const Dense expected = test_support::brute_force_einsum(net, operands);
  const Dense got{{3, 4}, out.to_vector<double>().value()};
  EXPECT_LT(test_support::max_abs_diff(got, expected), 1e-12);

  EXPECT_EQ(runner->run(views, out.view(), ctx, -1, 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(runner->run(views, out.view(), ctx, 0, 0).code(), ErrorCode::kInvalidArgument);
  const TensorView one[] = {inputs[0].view()};
  EXPECT_EQ(runner->run(one, out.view(), ctx).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(SliceExecutor::create(*sliced, nullptr).status().code(), ErrorCode::kInvalidArgument);

  // Asked between slices (never before the first): true stops with kCancelled.
  int asked = 0;
  SliceRunStats stats;
  const Status stopped = runner->run(views, out.view(), ctx, 0, 1, &stats, [&asked] { return ++asked == 4; });
  EXPECT_EQ(stopped.code(), ErrorCode::kCancelled) << stopped.to_string();
  EXPECT_EQ(asked, 4);
  EXPECT_EQ(stats.slices, 0);  // the stats of an interrupted run are not reported
  asked = 0;
  EXPECT_TRUE(runner->run(views, out.view(), ctx, 0, 1, nullptr, [&asked] { return ++asked > 100; }).ok());
  EXPECT_EQ(asked, 14);  // once between each two of the 15 slices
}

}  // namespace
}  // namespace tenferro::einsum
