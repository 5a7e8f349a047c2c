// The native CPU engine without a runtime: every notation feature against a
// brute-force reference (and numpy where it can read the subscripts), random
// networks and planners, parallel contexts, dtypes, strided inputs, the
// layout pass (no copies where none are needed, proven by counters), the
// workspace pool, and typed errors at execution.
#include <gtest/gtest.h>

#include <complex>
#include <sstream>

#include "engine_test_support.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/einsum/benchmark_instance.h"

namespace tenferro::einsum {
namespace {

using namespace test_support;  // NOLINT(google-build-using-namespace): test helpers

// Runs `subscripts` natively on random data of `shapes` and compares with
// the brute-force sum over all label assignments.
void expect_matches_reference(CpuEinsumExecutor& executor, const std::string& subscripts,
                              const std::vector<std::vector<std::int64_t>>& shapes, const cpu::ParallelContext& ctx,
                              std::uint64_t seed = 1) {
  SCOPED_TRACE(subscripts);
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(subscripts);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  const std::vector<Dense> operands = random_operands(shapes, seed);
  Result<Network> net = Network::bind(subscripts, refs(shapes));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const Dense expected = brute_force_einsum(*net, operands);
  const std::vector<Tensor> inputs = to_tensors(operands);
  Result<Tensor> out = executor.einsum(**op, inputs, ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_LT(max_abs_diff(to_dense(*out), expected), 1e-11);
}

// The float64 plan of `subscripts` on `shapes` (null, with a failure, when
// it cannot be made).
std::shared_ptr<const ExecutionPlan> prepared(CpuEinsumExecutor& executor, const std::string& subscripts,
                                              const std::vector<std::vector<std::int64_t>>& shapes) {
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(subscripts);
  EXPECT_TRUE(op.ok()) << op.status().to_string();
  if (!op.ok()) return nullptr;
  SmallVector<IntArrayRef, 4> refs_of;
  for (const auto& s : shapes) refs_of.push_back(IntArrayRef(s));
  Result<std::shared_ptr<const ExecutionPlan>> plan =
      executor.prepare(**op, std::span<const IntArrayRef>(refs_of.data(), refs_of.size()), DType::kFloat64);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? *plan : nullptr;
}

// expect_matches_reference sequentially and on two workers, each run making
// `copies` planned copies and the composite none.
void expect_matches_with_copies(CpuEinsumExecutor& executor, const std::string& subscripts,
                                const std::vector<std::vector<std::int64_t>>& shapes, std::int64_t copies) {
  const cpu::SequentialContext seq;
  const cpu::ArenaParallelContext two(2);
  const cpu::ParallelContext* contexts[] = {&seq, &two};
  for (const cpu::ParallelContext* ctx : contexts) {
    const CpuEinsumMetrics before = executor.metrics();
    expect_matches_reference(executor, subscripts, shapes, *ctx);
    const CpuEinsumMetrics after = executor.metrics();
    EXPECT_EQ(after.execution.planned_copies - before.execution.planned_copies, copies);
    EXPECT_EQ(after.execution.composite_copies, before.execution.composite_copies);
  }
}

struct NotationCase {
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};

// Every notation feature the engine executes natively.
const std::vector<NotationCase>& notation_cases() {
  static const std::vector<NotationCase> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},                      // matmul
      {"ij,jk", {{3, 4}, {4, 5}}},                          // implicit output
      {"ij,kj->ik", {{3, 4}, {5, 4}}},                      // transposed operand
      {"ij,jk->ki", {{3, 4}, {4, 5}}},                      // permuted output
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},             // batched
      {"ijb,jkb->bki", {{3, 4, 2}, {4, 5, 2}}},             // batch innermost
      {"ii", {{4, 4}}},                                     // trace
      {"ii->i", {{4, 4}}},                                  // diagonal
      {"iii->i", {{3, 3, 3}}},                              // three repeats
      {"iij->j", {{3, 3, 2}}},                              // trace with a free axis
      {"ijji->ij", {{2, 3, 3, 2}}},                         // two diagonals
      {"ij->i", {{3, 4}}},                                  // label summed out
      {"ij->", {{3, 4}}},                                   // full sum
      {"ij->ji", {{3, 4}}},                                 // pure permutation
      {"ij,jk->", {{3, 4}, {4, 5}}},                        // scalar result
      {"i,j->ij", {{3}, {4}}},                              // outer product
      {"i,i->i", {{5}, {5}}},                               // Hadamard
      {"i,i->", {{5}, {5}}},                                // dot
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                      // elementwise
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},                   // two labels contracted
      {"ii,ij->j", {{3, 3}, {3, 4}}},                       // diagonal operand in a product
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},           // chain
      {"ab,bc,cd,da->", {{2, 3}, {3, 4}, {4, 2}, {2, 2}}},  // closed ring
      {"ijk,jl,kl->il", {{2, 3, 4}, {3, 5}, {4, 5}}},       // triangle
      {"ab,ac,ad,bc,bd,cd->", {{2, 3}, {2, 4}, {2, 2}, {3, 4}, {3, 2}, {4, 2}}},
      {"abc,a->bc", {{2, 3, 4}, {2}}},
      {"ij,k->ijk", {{2, 3}, {4}}},  // outer product of a matrix and a vector
      {"ij,jk,k->i", {{3, 4}, {4, 5}, {5}}},
      {"ijx,jky->ikxy", {{2, 3, 2}, {3, 4, 3}}},       // free labels on both sides
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},  // ellipsis batch
      {"...ij,jk->...ik", {{2, 2, 3, 4}, {4, 5}}},     // ellipsis on one side
      {"ij...,j->i...", {{3, 4, 2}, {4}}},             // ellipsis at the end
      {"...,...->...", {{3, 1}, {1, 4}}},              // broadcasting under "..."
      {"ij,j->ij", {{3, 4}, {1}}},                     // size-1 broadcast of a named label
      {"ij,ij->i", {{3, 1}, {3, 4}}},                  // size-1 broadcast then contract
      {"((ij,jk),kl)->il", {{3, 4}, {4, 5}, {5, 2}}},  // nested order
      {"(ij,(jk,kl))->il", {{3, 4}, {4, 5}, {5, 2}}},
      {"ab,bc->ca", {{1, 3}, {3, 1}}},  // extent-1 labels
      {"i,->i", {{3}, {}}},             // rank-0 operand
      {",->", {{}, {}}},
      {"ij,jk->ik", {{0, 4}, {4, 5}}},  // empty output
      {"ij,jk->ik", {{3, 0}, {0, 5}}},  // empty contraction
      {"ii->", {{0, 0}}},
      {"ij,jk,kl,lm->im", {{2, 3}, {3, 0}, {0, 4}, {4, 5}}},  // empty intermediates, zero result
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 0}}},             // empty intermediate and output
      {"a,ffe->af", {{2}, {2, 2, 0}}},                        // a diagonal of an empty operand
  };
  return cases;
}

TEST(EinsumExecution, EveryNotationFeatureMatchesBruteForce) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  for (const NotationCase& c : notation_cases()) expect_matches_reference(*executor, c.subscripts, c.shapes, seq);
}

TEST(EinsumExecution, TwoThreadsGiveTheSameResults) {
  auto executor = make_executor();
  const cpu::ArenaParallelContext two(2);
  for (const NotationCase& c : notation_cases()) expect_matches_reference(*executor, c.subscripts, c.shapes, two);
  // Large enough that the composite forks (inner) and batches spread (outer).
  expect_matches_reference(*executor, "ij,jk->ik", {{96, 80}, {80, 72}}, two);
  const std::string chain = "bij,bjk,bkl->bil";
  expect_matches_reference(*executor, chain, {{64, 4, 5}, {64, 5, 6}, {64, 6, 3}}, two);
  const CpuEinsumMetrics m = executor->metrics();
  EXPECT_GT(m.execution.outer_steps + m.execution.inner_steps, 0) << "no step used the two threads";
}

TEST(EinsumExecution, UnicodeAndIntegerLabels) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  expect_matches_reference(*executor, "αβ,βγ->γα", {{2, 3}, {3, 4}}, seq);
  expect_matches_reference(*executor, "çè,èé,éЖ->Жç", {{2, 3}, {3, 2}, {2, 4}}, seq);
  // Sublist notation: einsum(a, [0, 1], b, [1, 2], [2, 0]).
  const std::vector<std::vector<LabelKey>> lists = {{0, 1}, {1, 2}};
  Result<Subscripts> s = Subscripts::from_sublists(lists, std::vector<LabelKey>{2, 0});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(*s);
  ASSERT_TRUE(op.ok());
  const std::vector<Dense> d = random_operands({{2, 3}, {3, 4}}, 7);
  Result<Tensor> out = executor->einsum(**op, to_tensors(d), seq);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  Result<Network> net = Network::bind("ij,jk->ki", refs({{2, 3}, {3, 4}}));
  EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(*net, d)), 1e-12);
}

TEST(EinsumExecution, RandomNetworksWithEveryPlannerMatchBruteForce) {
  const cpu::SequentialContext seq;
  for (PlannerKind planner :
       {PlannerKind::kGreedy, PlannerKind::kOptimal, PlannerKind::kTreeSA, PlannerKind::kLeftToRight}) {
    CpuEinsumOptions options;
    options.default_policy.planner = planner;
    options.planning.treesa.chains = 2;
    options.planning.treesa.max_sweeps = 200;
    options.planning.determinism = Determinism::kReproducible;
    auto executor = make_executor(options);
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const RandomEinsum r = random_einsum(seed, 2 + static_cast<int>(seed % 4), 6, 3, 3);
      SCOPED_TRACE(std::string(to_string(planner)) + " seed " + std::to_string(seed));
      expect_matches_reference(*executor, r.subscripts, r.shapes, seq, seed);
    }
  }
}

TEST(EinsumExecution, OtherDTypes) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  // complex128: (1+i)[2x2] @ (1-i)[2x2] = 2 * ones * 2.
  using C = std::complex<double>;
  const std::vector<C> a(4, C(1, 1)), b(4, C(1, -1));
  Result<Tensor> ta = Tensor::from_values<C>(std::span<const C>(a), {2, 2});
  Result<Tensor> tb = Tensor::from_values<C>(std::span<const C>(b), {2, 2});
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk->ik");
  const Tensor ops[] = {*ta, *tb};
  Result<Tensor> out = executor->einsum(**op, ops, seq);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const std::vector<C> values = *out->to_vector<C>();
  for (const C& v : values) EXPECT_EQ(v, C(4, 0));
  // int64 (the composite's integer loops) and float32.
  Result<Tensor> ia = Tensor::from_values<std::int64_t>({1, 2, 3, 4}, {2, 2});
  const Tensor iops[] = {*ia, *ia};
  Result<Tensor> iout = executor->einsum(**op, iops, seq);
  ASSERT_TRUE(iout.ok()) << iout.status().to_string();
  EXPECT_EQ(*iout->to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 10, 15, 22}));
  Result<Tensor> fa = Tensor::from_values<float>({1, 2, 3, 4}, {2, 2});
  const Tensor fops[] = {*fa, *fa};
  Result<Tensor> fout = executor->einsum(**op, fops, seq);
  ASSERT_TRUE(fout.ok()) << fout.status().to_string();
  EXPECT_EQ(*fout->to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  // bool cannot be contracted: kUnsupported (prepare lets a runtime try core lowering).
  Result<Tensor> ba = Tensor::from_values<bool>({true, false, true, true}, {2, 2});
  const Tensor bops[] = {*ba, *ba};
  EXPECT_EQ(executor->einsum(**op, bops, seq).status().code(), ErrorCode::kUnsupported);
}

TEST(EinsumExecution, StridedInputsAreReadInPlace) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  // A transposed view and a sliced view as inputs.
  const Dense a = random_dense({4, 3}, 3), b = random_dense({4, 10}, 4);
  Result<Tensor> at = to_tensor(a).transpose(0, 1);     // [3, 4], strides (1, 3)
  Result<Tensor> bs = to_tensor(b).slice(1, 0, 10, 2);  // [4, 5], stride 2 along axis 1
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk->ik");
  const Tensor ops[] = {*at, *bs};
  Result<Tensor> out = executor->einsum(**op, ops, seq);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  Network net = *Network::bind("ji,jk->ik", refs({{4, 3}, {4, 5}}));
  Dense b_sliced{{4, 5}, {}};
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 5; ++k) b_sliced.data.push_back(b.data[static_cast<std::size_t>(i * 10 + 2 * k)]);
  EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(net, {a, b_sliced})), 1e-12);
}

// The layout pass: intermediates are written in the order their consumer
// reads, so a chain of contractions runs as GEMMs with no copy at all.
TEST(EinsumExecution, LayoutPassAvoidsCopies) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  struct Case {
    std::string subscripts;
    std::vector<std::vector<std::int64_t>> shapes;
    std::int64_t max_planned_copies;
  };
  const Case cases[] = {
      {"ij,jk,kl,lm->im", {{8, 9}, {9, 10}, {10, 11}, {11, 12}}, 0},
      {"ab,bcd,cde,ef->af", {{4, 5}, {5, 6, 7}, {6, 7, 3}, {3, 2}}, 0},
      // MERA-like: free labels of both sides interleave in the consumer.
      {"abcd,cdef,efgh,ghab->", {{2, 3, 4, 5}, {4, 5, 2, 3}, {2, 3, 4, 5}, {4, 5, 2, 3}}, 0},
      {"bij,bjk,bkl->bil", {{4, 5, 6}, {4, 6, 7}, {4, 7, 3}}, 0},
      // The output order interleaves the groups: one copy is unavoidable.
      {"ij,jk->ki", {{5, 6}, {6, 7}}, 1},
      // Note [Broadcast products]: factors over different label pairs scale
      // one tensor in turn, whatever its order (three copies before).
      {"((pqrs,rq),sp),qs->pqrs", {{4, 5, 6, 7}, {6, 5}, {7, 4}, {5, 7}}, 0},
      {"((abcde,ec),da),bd->abcde", {{3, 2, 3, 2, 3}, {3, 3}, {2, 3}, {2, 2}}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.subscripts);
    Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(c.subscripts);
    SmallVector<IntArrayRef, 4> shapes;
    for (const auto& s : c.shapes) shapes.push_back(IntArrayRef(s));
    Result<std::shared_ptr<const ExecutionPlan>> plan =
        executor->prepare(**op, std::span<const IntArrayRef>(shapes.data(), shapes.size()), DType::kFloat64);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_LE((*plan)->planned_copies(), c.max_planned_copies) << (*plan)->explain();
    const CpuEinsumMetrics before = executor->metrics();
    expect_matches_reference(*executor, c.subscripts, c.shapes, seq);
    const CpuEinsumMetrics after = executor->metrics();
    EXPECT_EQ(after.execution.composite_copies, before.execution.composite_copies)
        << "the composite had to copy although the plan said it would not\n"
        << (*plan)->explain();
    EXPECT_EQ(after.execution.planned_copies - before.execution.planned_copies, (*plan)->planned_copies());
  }
}

// Note [Chunked temporaries]: a result temporary above 8 MB is written and
// copied out one value of its outer batch or free labels at a time (the
// last of them in ranges of values), in a workspace of one chunk, with the
// same result; a small one is written whole.
TEST(EinsumExecution, LargeTemporariesAreChunked) {
  auto executor = make_executor();
  struct Case {
    std::string subscripts;
    std::vector<std::vector<std::int64_t>> shapes;
    std::int64_t chunked;
    std::int64_t copies = 1;  // planned: the result's, and any operand's
  };
  // The results interleave both sides' free labels twice, so no label can
  // run as a broadcast batch (Note [Broadcast batch labels]).
  const Case cases[] = {
      // A [b, i, h | k, l] temporary (12.8 MB): chunks over b.
      {"bihj,bjkl->bkilh", {{8, 25, 2, 4}, {8, 4, 50, 80}}, 1},
      // A [i, h | k, l] temporary of 12.8 MB: chunks over k (the larger
      // operand's outer free label).
      {"ihj,jkl->kilh", {{20, 5, 4}, {4, 100, 160}}, 1},
      // The same with a 0.6 MB temporary: written whole.
      {"ihj,jkl->kilh", {{20, 5, 4}, {4, 5, 160}}, 0},
      // An [i, h | b, k] temporary of 10.2 MB (B copied to [j | b, k]),
      // chunked over b in ranges of 204 values (2 MB), the last one of 185:
      // 5 chunks, not 1001.
      {"ihj,bjk->bikh", {{16, 2, 8}, {1001, 8, 40}}, 1, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.subscripts);
    const std::shared_ptr<const ExecutionPlan> plan = prepared(*executor, c.subscripts, c.shapes);
    ASSERT_NE(plan, nullptr);
    EXPECT_EQ(plan->planned_copies(), c.copies) << plan->explain();
    EXPECT_EQ(plan->chunked_steps(), c.chunked) << plan->explain();
    const std::size_t result_bytes = static_cast<std::size_t>(plan->tree().steps()[0].result_elements) * 8;
    if (c.chunked > 0) {
      EXPECT_LT(plan->workspace_bytes(), result_bytes / (c.copies == 1 ? 4 : 2));  // a copied operand adds
    }
    if (c.subscripts == "ihj,bjk->bikh") {
      EXPECT_NE(plan->explain().find(" in 5 chunks"), std::string::npos) << plan->explain();
    }
    expect_matches_with_copies(*executor, c.subscripts, c.shapes, c.copies);
  }
}

// Note [Broadcast batch labels]: a result whose outermost labels are free
// labels of one operand, around the other's, runs as a batch of products
// with those labels at stride 0 in the other operand: no temporary, no
// copy, the same result (the lhs or the rhs lacking them, and with a batch
// label of the step).
TEST(EinsumExecution, OuterFreeLabelsRunAsBroadcastBatches) {
  auto executor = make_executor();
  struct Case {
    std::string subscripts;
    std::vector<std::vector<std::int64_t>> shapes;
    std::string broadcast;  // the labels explain() names
  };
  const Case cases[] = {
      {"ij,bjk->bik", {{32, 8}, {1001, 8, 40}}, "b"},         // was a 10 MB temporary and a copy of B
      {"ij,jkl->kil", {{100, 4}, {4, 100, 160}}, "k"},        // was a 12.8 MB temporary
      {"bij,bjkl->bkil", {{8, 50, 4}, {8, 4, 50, 80}}, "k"},  // with the step's batch label b
      {"bij,jk->bki", {{7, 5, 4}, {4, 3}}, "b"},              // the rhs lacks b
      {"ij,bcjk->bcik", {{5, 4}, {2, 7, 4, 3}}, "bc"},        // two labels
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.subscripts);
    const std::shared_ptr<const ExecutionPlan> plan = prepared(*executor, c.subscripts, c.shapes);
    ASSERT_NE(plan, nullptr);
    EXPECT_EQ(plan->planned_copies(), 0) << plan->explain();
    EXPECT_NE(plan->explain().find("(broadcast over " + c.broadcast + ")"), std::string::npos) << plan->explain();
    expect_matches_with_copies(*executor, c.subscripts, c.shapes, 0);
  }
}

// Note [Gathered operands]: operands whose batch axis is innermost have no
// unit stride in either GEMM dimension; they are copied into [B, M, K] /
// [B, K, N] rather than packed by gathering.
TEST(EinsumExecution, GatheredOperandsAreCopied) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  const std::vector<std::vector<std::int64_t>> shapes = {{20, 30, 8}, {30, 25, 8}};
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ijb,jkb->bik");
  ASSERT_TRUE(op.ok());
  const IntArrayRef refs[] = {IntArrayRef(shapes[0]), IntArrayRef(shapes[1])};
  Result<std::shared_ptr<const ExecutionPlan>> plan = executor->prepare(**op, refs, DType::kFloat64);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ((*plan)->planned_copies(), 2) << (*plan)->explain();
  const CpuEinsumMetrics before = executor->metrics();
  expect_matches_reference(*executor, "ijb,jkb->bik", shapes, seq);
  EXPECT_EQ(executor->metrics().execution.composite_copies, before.execution.composite_copies);
}

// Note [Direct small steps]: small steps with the planned strides call the
// GEMM provider directly; an input with other strides goes through the
// composite instead, with the same result.
TEST(EinsumExecution, SmallStepsCallTheGemmProviderDirectly) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  expect_matches_reference(*executor, "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, seq);
  expect_matches_reference(*executor, "bij,bjk->bik", {{3, 4, 2}, {3, 2, 5}}, seq);
  expect_matches_reference(*executor, "abij,bajk->abik", {{2, 3, 4, 2}, {3, 2, 2, 5}}, seq);
  const CpuEinsumMetrics m = executor->metrics();
  EXPECT_EQ(m.execution.direct_steps, 4);
  EXPECT_EQ(m.execution.steps, 4);
  // A transposed input: the planned strides do not hold, the composite runs.
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk->ik");
  const Dense a = random_dense({4, 3}, 21), b = random_dense({4, 5}, 22);
  const Tensor ops[] = {*to_tensor(a).transpose(0, 1), to_tensor(b)};
  Result<Tensor> out = executor->einsum(**op, ops, seq);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(executor->metrics().execution.direct_steps, 4);
  EXPECT_EQ(executor->metrics().execution.steps, 5);
  Network net = *Network::bind("ji,jk->ik", refs({{4, 3}, {4, 5}}));
  EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(net, {a, b})), 1e-12);
}

// An executor over the native GEMM provider whose problem counters and
// the composite's tiny calls tell which path a step took.
struct CountingEinsumExecutor {
  std::shared_ptr<cpu::NativeGemmProvider> gemm = *cpu::NativeGemmProvider::create();
  std::shared_ptr<const cpu::DotGeneralComposite> composite = std::make_shared<const cpu::DotGeneralComposite>(gemm);
  std::shared_ptr<CpuEinsumExecutor> executor = *CpuEinsumExecutor::create(composite);

  std::int64_t provider_problems() const {
    const cpu::NativeGemmCounters c = gemm->counters();
    return c.small_problems + c.blocked_problems;
  }
};

// A direct step of at most the composite's tiny_max_work multiply-adds
// runs the composite's tiny loop: the GEMM provider is not called.
TEST(EinsumExecution, TinyDirectStepsRunTheTinyLoop) {
  CountingEinsumExecutor counting;
  CpuEinsumExecutor& executor = *counting.executor;
  const cpu::DotGeneralComposite& composite = *counting.composite;
  const cpu::SequentialContext seq;
  const std::int64_t before = counting.provider_problems();
  expect_matches_reference(executor, "ij,jk->ik", {{2, 2}, {2, 2}}, seq);
  expect_matches_reference(executor, "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, seq);  // 60 and 30 multiply-adds
  expect_matches_reference(executor, "ji,jk->ik", {{3, 2}, {3, 4}}, seq);             // a transposed operand
  EXPECT_EQ(composite.counters().tiny_calls, 4);
  EXPECT_EQ(executor.metrics().execution.direct_steps, 4);
  EXPECT_EQ(counting.provider_problems(), before);
  // Above the bound the provider runs the step.
  expect_matches_reference(executor, "ij,jk->ik", {{8, 8}, {8, 8}}, seq);  // 512 multiply-adds
  EXPECT_EQ(composite.counters().tiny_calls, 4);
  EXPECT_GT(counting.provider_problems(), before);
}

// Note [Direct small steps]: a small broadcast product (a Hadamard product
// of differently laid out operands, a tensor scaled by a vector) is not a
// direct step, whose GEMMs would be a batch of 1 x 1 products: the
// composite's elementwise loop runs it, and the GEMM provider is never
// called.
TEST(EinsumExecution, SmallBroadcastProductsRunTheElementwiseLoop) {
  CountingEinsumExecutor counting;
  CpuEinsumExecutor& executor = *counting.executor;
  const cpu::DotGeneralComposite& composite = *counting.composite;
  const cpu::SequentialContext seq;
  const std::int64_t before = counting.provider_problems();
  expect_matches_reference(executor, "ij,ji->ij", {{8, 12}, {12, 8}}, seq);
  expect_matches_reference(executor, "bij,bj->bij", {{3, 5, 7}, {3, 7}}, seq);
  expect_matches_reference(executor, "ij,j->ij", {{16, 24}, {24}}, seq);
  EXPECT_EQ(executor.metrics().execution.steps, 3);
  EXPECT_EQ(executor.metrics().execution.direct_steps, 0);
  EXPECT_EQ(composite.counters().tiny_calls, 0);
  EXPECT_EQ(composite.counters().planned_calls, 3);
  EXPECT_EQ(counting.provider_problems(), before);
}

// Note [Direct products]: a small Hadamard product of operands laid out as
// its result is one flat multiply: neither the composite (no planning, no
// tiny loop) nor the GEMM provider runs it, at the tiny loop's sizes too.
TEST(EinsumExecution, SmallSameLayoutProductsAreDirectSteps) {
  CountingEinsumExecutor counting;
  CpuEinsumExecutor& executor = *counting.executor;
  const cpu::DotGeneralComposite& composite = *counting.composite;
  const cpu::SequentialContext seq;
  const std::int64_t before = counting.provider_problems();
  expect_matches_reference(executor, "ij,ij->ij", {{16, 16}, {16, 16}}, seq);
  expect_matches_reference(executor, "i,i->i", {{100}, {100}}, seq);  // within tiny_max_work
  expect_matches_reference(executor, "ijk,ijk->ijk", {{3, 1, 7}, {3, 1, 7}}, seq);
  expect_matches_reference(executor, "ij,ij,ij->ij", {{16, 24}, {16, 24}, {16, 24}}, seq);  // two steps
  EXPECT_EQ(executor.metrics().execution.steps, 5);
  EXPECT_EQ(executor.metrics().execution.direct_steps, 5);
  EXPECT_EQ(executor.metrics().execution.gemm_steps, 0);
  EXPECT_EQ(composite.counters().tiny_calls, 0);
  EXPECT_EQ(composite.counters().planned_calls, 0);
  EXPECT_EQ(counting.provider_problems(), before);
  // Above kDirectMaxMultiplyAdds the composite runs it (and may fork).
  expect_matches_reference(executor, "ij,ij->ij", {{256, 256}, {256, 256}}, seq);
  EXPECT_EQ(executor.metrics().execution.direct_steps, 5);
  EXPECT_EQ(composite.counters().planned_calls, 1);
}

// A single operand's axes of extent 1 are dropped before its copy or sum:
// more of them than the kernels' rank limit (64) still run, as networks of
// two such operands do (the C ABI audit of 2026-12-07).
TEST(EinsumExecution, SingleOperandsOfManyUnitAxesRun) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  std::vector<std::int64_t> shape(70, 1);
  shape[3] = 4;
  shape[60] = 5;
  // 70 labels: code points from U+0100, two bytes of UTF-8 each.
  std::vector<std::string> label(70);
  std::string all;
  for (int k = 0; k < 70; ++k) {
    const int c = 0x100 + k;
    label[static_cast<std::size_t>(k)] = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    all += label[static_cast<std::size_t>(k)];
  }
  expect_matches_reference(*executor, "...->...", {shape}, seq);                                    // a copy
  expect_matches_reference(*executor, all + "->" + label[60] + label[3], {shape}, seq);             // a sum
  expect_matches_reference(*executor, all + "->", {shape}, seq);                                    // a full sum
  expect_matches_reference(*executor, all + "->" + label[7] + label[60] + label[3], {shape}, seq);  // a permutation
  expect_matches_reference(*executor, "...,...->...", {shape, shape}, seq);
}

TEST(EinsumExecution, NonRowMajorInputStillCorrectAndCounted) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  // A column-major input breaks the planned fusion for a 3-D operand: the
  // composite copies on its own, which the stats report.
  const Dense b = random_dense({4, 5, 6}, 10);
  Result<Tensor> a_perm = to_tensor(random_dense({5, 4, 3}, 9)).permute({2, 1, 0});  // [3,4,5] column-major
  ASSERT_TRUE(a_perm.ok());
  const Tensor ops[] = {*a_perm, to_tensor(b)};
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ijk,jkl->il");
  Result<Tensor> out = executor->einsum(**op, ops, seq);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(executor->metrics().execution.composite_copies, 1);
  Dense a_dense = to_dense(*a_perm);  // the logical values
  Network net = *Network::bind("ijk,jkl->il", refs({{3, 4, 5}, {4, 5, 6}}));
  EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(net, {a_dense, b})), 1e-12);
}

TEST(EinsumExecution, WorkspaceIsReusedAcrossRuns) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk,kl,lm->im");
  const std::vector<Tensor> inputs = to_tensors(random_operands({{20, 30}, {30, 40}, {40, 30}, {30, 20}}, 5));
  ASSERT_TRUE(executor->einsum(**op, inputs, seq).ok());
  const CpuEinsumMetrics first = executor->metrics();
  EXPECT_GT(first.workspace_retained_bytes, 0u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(executor->einsum(**op, inputs, seq).ok());
  const CpuEinsumMetrics later = executor->metrics();
  EXPECT_EQ(later.workspace_allocations, first.workspace_allocations);
  EXPECT_EQ(later.plans_built, 1u);
  EXPECT_EQ(later.cache.hits, 5u);
}

TEST(EinsumExecution, WorkspaceIsSharedByBuffersThatDoNotOverlapInTime) {
  // A long chain: at most two intermediates are alive at once, so the
  // workspace stays far below the sum of all intermediates.
  Result<Network> net =
      Network::bind("ab,bc,cd,de,ef,fg,gh,hi->ai",
                    refs({{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}}));
  PlanningPolicy ltr;
  ltr.planner = PlannerKind::kLeftToRight;
  Result<ContractionTree> tree = plan(*net, ltr);
  ASSERT_TRUE(tree.ok());
  Result<std::shared_ptr<const ExecutionPlan>> p = ExecutionPlan::compile(*tree);
  ASSERT_TRUE(p.ok());
  const std::size_t one = 64 * 64 * sizeof(double);
  EXPECT_LE((*p)->workspace_bytes(), 2 * one);
  EXPECT_GE((*p)->workspace_bytes(), one);
}

TEST(EinsumExecution, ResultsBeyondInt64ElementsAreSizeOverflows) {
  // The outer product of two 2^40 vectors has 2^80 elements: a size
  // overflow, as for any shape, before the workspace bound is asked.
  const std::int64_t n = std::int64_t{1} << 40;
  Result<Network> net = Network::bind("i,j->ij", refs({{n}, {n}}));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Result<ContractionTree> tree = plan(*net, PlanningPolicy{});
  ASSERT_TRUE(tree.ok()) << tree.status().to_string();
  Result<std::shared_ptr<const ExecutionPlan>> p = ExecutionPlan::compile(*tree);
  EXPECT_EQ(p.status().code(), ErrorCode::kSizeOverflow) << p.status().to_string();
  EXPECT_NE(p.status().message().find("einsum: the result of shape [1099511627776, 1099511627776]"), std::string::npos)
      << p.status().to_string();
}

TEST(EinsumExecution, InstanceWithTwoPathsAgrees) {
  // A benchmark instance planned two ways (its reference path and greedy)
  // gives the same value: an end-to-end check on a real network.
  const std::string dir = shared_dir();
  if (dir.empty()) GTEST_SKIP() << "no shared instances";
  Result<BenchmarkInstance> inst =
      load_benchmark_instance(dir + "/bench/instances/lm_batch_likelihood_brackets_4_4d.json");
  ASSERT_TRUE(inst.ok()) << inst.status().to_string();
  std::vector<Dense> operands;
  std::uint64_t seed = 11;
  for (const auto& s : inst->shapes) {
    Dense d = random_dense(s, seed++);
    for (double& v : d.data) v = 0.5 + 0.5 * v;  // positive: no cancellation
    operands.push_back(std::move(d));
  }
  const std::vector<Tensor> inputs = to_tensors(operands);
  Result<ContractionOrder> ref =
      ContractionOrder::from_opt_einsum_path(static_cast<std::int32_t>(inst->shapes.size()), inst->opt_flops->pairs);
  ASSERT_TRUE(ref.ok());
  PlanningPolicy by_path;
  by_path.planner = PlannerKind::kExplicitPath;
  by_path.path = *ref;
  PlanningPolicy greedy;
  greedy.planner = PlannerKind::kGreedy;
  auto executor = make_executor();
  const cpu::ArenaParallelContext two(2);
  Result<std::shared_ptr<const EinsumOp>> op1 = EinsumOp::create(inst->format_string, by_path);
  Result<std::shared_ptr<const EinsumOp>> op2 = EinsumOp::create(inst->format_string, greedy);
  ASSERT_TRUE(op1.ok() && op2.ok());
  Result<Tensor> r1 = executor->einsum(**op1, inputs, two);
  Result<Tensor> r2 = executor->einsum(**op2, inputs, two);
  ASSERT_TRUE(r1.ok()) << r1.status().to_string();
  ASSERT_TRUE(r2.ok()) << r2.status().to_string();
  const Dense d1 = to_dense(*r1), d2 = to_dense(*r2);
  ASSERT_EQ(d1.shape, d2.shape);
  for (std::size_t i = 0; i < d1.data.size(); ++i) EXPECT_NEAR(d1.data[i], d2.data[i], 1e-9 * std::abs(d1.data[i]));
  EXPECT_EQ(executor->metrics().execution.composite_copies, 0);
}

TEST(EinsumExecution, MatchesNumpyEinsum) {
  auto executor = make_executor();
  const cpu::SequentialContext seq;
  const std::vector<NotationCase> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"iij->j", {{3, 3, 2}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
      {"ab,bc,ca->", {{2, 3}, {3, 4}, {4, 2}}},
      {"ij,j->ij", {{3, 4}, {1}}},
  };
  std::ostringstream script;
  script << "import numpy as np\n";
  std::vector<Tensor> results;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::vector<Dense> operands = random_operands(cases[c].shapes, 100 + c);
    script << "ops = []\n";
    for (const Dense& d : operands) {
      script << "ops.append(np.array([";
      for (double v : d.data) script << fmt::format("{:.17g},", v);
      script << "], dtype=np.float64).reshape([";
      for (std::int64_t e : d.shape) script << e << ",";
      script << "]))\n";
    }
    script << "r = np.einsum('" << cases[c].subscripts << "', *ops)\n";
    script << "print(' '.join(repr(float(x)) for x in np.ravel(r)))\n";
    Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(cases[c].subscripts);
    ASSERT_TRUE(op.ok());
    Result<Tensor> out = executor->einsum(**op, to_tensors(operands), seq);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    results.push_back(*out);
  }
  const std::optional<std::string> text = run_python(script.str());
  if (!text) GTEST_SKIP() << "no reference python with numpy";
  std::istringstream lines(*text);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].subscripts);
    std::string line;
    ASSERT_TRUE(static_cast<bool>(std::getline(lines, line)));
    std::istringstream values(line);
    const std::vector<double> ours = *results[c].to_vector<double>();
    for (double v : ours) {
      double expected = 0;
      ASSERT_TRUE(static_cast<bool>(values >> expected));
      EXPECT_NEAR(v, expected, 1e-12);
    }
  }
}

TEST(EinsumExecution, ExecuteRejectsMismatchedArguments) {
  Result<Network> net = Network::bind("ij,jk->ik", refs({{2, 3}, {3, 4}}));
  Result<ContractionTree> tree = plan(*net);
  Result<std::shared_ptr<const ExecutionPlan>> p = ExecutionPlan::compile(*tree);
  ASSERT_TRUE(p.ok());
  auto composite = native_composite();
  const cpu::SequentialContext seq;
  Tensor a = *Tensor::zeros({2, 3}, DType::kFloat64), b = *Tensor::zeros({3, 4}, DType::kFloat64);
  Tensor out = *Tensor::zeros({2, 4}, DType::kFloat64);
  Tensor wrong = *Tensor::zeros({3, 3}, DType::kFloat64);
  const TensorView good[] = {a.view(), b.view()};
  const TensorView bad_shape[] = {a.view(), wrong.view()};
  EXPECT_EQ((*p)->execute(bad_shape, out.view(), {}, *composite, seq).code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ((*p)->execute(std::span<const TensorView>(good, 1), out.view(), {}, *composite, seq).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ((*p)->execute(good, wrong.view(), {}, *composite, seq).code(), ErrorCode::kShapeMismatch);
  Tensor f32 = *Tensor::zeros({3, 4}, DType::kFloat32);
  const TensorView bad_dtype[] = {a.view(), f32.view()};
  EXPECT_EQ((*p)->execute(bad_dtype, out.view(), {}, *composite, seq).code(), ErrorCode::kDTypeMismatch);
  // The output's dtype is a dtype mismatch too (it was reported as a shape
  // mismatch), and a view without data (an undefined tensor's) is named.
  Tensor out32 = *Tensor::zeros({2, 4}, DType::kFloat32);
  EXPECT_EQ((*p)->execute(good, out32.view(), {}, *composite, seq).code(), ErrorCode::kDTypeMismatch);
  const Status undefined_out = (*p)->execute(good, TensorView{}, {}, *composite, seq);
  EXPECT_EQ(undefined_out.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(undefined_out.message().find("without data"), std::string::npos) << undefined_out.to_string();
  const TensorView undefined_in[] = {a.view(), TensorView{}};
  const Status undefined_input = (*p)->execute(undefined_in, out.view(), {}, *composite, seq);
  EXPECT_EQ(undefined_input.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(undefined_input.message().find("input 1"), std::string::npos) << undefined_input.to_string();
  EXPECT_TRUE((*p)->execute(good, out.view(), {}, *composite, seq).ok());
}

TEST(EinsumExecution, ExplainNamesLayoutsAndWorkspace) {
  auto executor = make_executor();
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("ij,jk,kl->li");
  const std::vector<std::int64_t> s1{3, 4}, s2{4, 5}, s3{5, 6};
  const IntArrayRef shapes[] = {IntArrayRef(s1), IntArrayRef(s2), IntArrayRef(s3)};
  Result<std::shared_ptr<const ExecutionPlan>> p = executor->prepare(**op, shapes, DType::kFloat64);
  ASSERT_TRUE(p.ok());
  const std::string text = (*p)->explain();
  EXPECT_NE(text.find("workspace"), std::string::npos) << text;
  EXPECT_NE(text.find("(output)"), std::string::npos) << text;
  EXPECT_NE(text.find("path "), std::string::npos) << text;
}

}  // namespace
}  // namespace tenferro::einsum
