// The einsum extension through a Runtime: the native engine as one eager
// fast-path call (no program, no prepare) and as one scheduled node in a
// prepared graph; without it, promotion to the core lowering as a
// multi-node prepared graph with the same results; the changing-shape gate
// on the eager path; typed errors that leave everything usable; and the
// einsum-only CPU engine over a real CPU resource domain.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/prepared_program.h"

namespace tenferro::einsum {
namespace {

using namespace test_support;  // NOLINT(google-build-using-namespace): test helpers

struct Problem {
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};

const std::vector<Problem>& problems() {
  static const std::vector<Problem> p = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk,kl->li", {{3, 4}, {4, 5}, {5, 2}}},
      {"iij->j", {{3, 3, 2}}},
      {"ii->i", {{4, 4}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
      {"ij,j->ij", {{3, 4}, {1}}},
      {"abc,cd,dbe->ae", {{2, 3, 4}, {4, 5}, {5, 3, 2}}},
      {"ab,bc,ca->", {{2, 3}, {3, 4}, {4, 2}}},
      {"((ij,jk),kl)->il", {{3, 4}, {4, 5}, {5, 2}}},
  };
  return p;
}

Dense reference(const Problem& p, const std::vector<Dense>& operands) {
  Result<Network> net = Network::bind(p.subscripts, refs(p.shapes));
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  return brute_force_einsum(*net, operands);
}

std::shared_ptr<const program::SemanticProgram> einsum_program(const std::shared_ptr<const EinsumOp>& op,
                                                               const std::vector<std::vector<std::int64_t>>& shapes) {
  program::ProgramBuilder b;
  SmallVector<program::ProgramValue, 4> inputs;
  for (const auto& s : shapes) {
    const program::SymbolicShape shape = program::symbolic_shape(IntArrayRef(s));
    inputs.push_back(
        *b.add_input(DType::kFloat64, std::span<const program::SymbolicExtent>(shape.data(), shape.size())));
  }
  Result<program::ProgramValue> out =
      emit_einsum(b, op, std::span<const program::ProgramValue>(inputs.data(), inputs.size()));
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  Result<program::FrozenProgram> frozen = b.freeze({*out});
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return frozen->program;
}

TEST(EinsumRuntime, EagerNativeCallIsOneFastPathOperation) {
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  runtime::EagerContext ctx = t.runtime->on();
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.subscripts);
    const std::vector<Dense> operands = random_operands(p.shapes, 3);
    Result<Tensor> out = einsum(ctx, p.subscripts, to_tensors(operands));
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_LT(max_abs_diff(to_dense(*out), reference(p, operands)), 1e-11);
  }
  // Every call ran on the fast path: no promotion, no program prepared or
  // run, no core provider called; the native engine ran each one.
  EXPECT_EQ(ctx.metrics().fast_path_calls, problems().size());
  EXPECT_EQ(ctx.metrics().promoted_calls, 0u);
  EXPECT_EQ(t.runtime->plan_cache_stats().misses, 0u);
  EXPECT_EQ(t.runtime->plan_cache_stats().entries, 0u);
  EXPECT_EQ(t.runtime->execution_metrics().runs, 0u);
  EXPECT_EQ(t.runtime->execution_metrics().eager_promoted_calls, 0u);
  EXPECT_EQ(t.dot_general->calls.load(), 0);
  EXPECT_EQ(t.executor->metrics().execution.executions, static_cast<std::int64_t>(problems().size()));
}

TEST(EinsumRuntime, PreparedGraphSchedulesTheNativeOpAsOneNode) {
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.subscripts);
    Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(p.subscripts);
    ASSERT_TRUE(op.ok());
    auto program = einsum_program(*op, p.shapes);
    const std::vector<Dense> operands = random_operands(p.shapes, 5);
    const std::vector<Tensor> inputs = to_tensors(operands);
    Result<runtime::TensorList> out = t.runtime->run(program, inputs);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_LT(max_abs_diff(to_dense((*out)[0]), reference(p, operands)), 1e-11);
    Result<std::shared_ptr<const runtime::PreparedProgram>> prepared =
        t.runtime->prepare_for(program, runtime::InputSignature::of(inputs));
    ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
    std::size_t operations = 0;
    for (std::size_t n = 0; n < (*prepared)->num_nodes(); ++n) {
      const runtime::ScheduledNodeInfo node = (*prepared)->node(n);
      if (node.kind == runtime::ScheduledNodeKind::kView) continue;
      ++operations;
      EXPECT_EQ(node.kind, runtime::ScheduledNodeKind::kExtension);
      EXPECT_EQ(node.provider, "cpu.native_einsum");
    }
    EXPECT_EQ(operations, 1u) << (*prepared)->explain();
    Result<runtime::TensorList> again = t.runtime->run_prepared(**prepared, inputs);
    ASSERT_TRUE(again.ok());
    EXPECT_LT(max_abs_diff(to_dense((*again)[0]), reference(p, operands)), 1e-11);
  }
  EXPECT_EQ(t.dot_general->calls.load(), 0);
}

TEST(EinsumRuntime, WithoutTheNativeEnginePromotesToTheCoreLowering) {
  TestRuntime native = make_test_runtime(/*native_einsum=*/true);
  TestRuntime lowered = make_test_runtime(/*native_einsum=*/false);
  runtime::EagerContext native_ctx = native.runtime->on();
  runtime::EagerContext lowered_ctx = lowered.runtime->on();
  std::uint64_t multi_op_lowerings = 0;
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.subscripts);
    Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(p.subscripts);
    ASSERT_TRUE(op.ok());
    std::vector<program::ValueMetadata> metadata;
    for (const auto& shape : p.shapes)
      metadata.push_back(program::ValueMetadata::exact(DType::kFloat64, IntArrayRef(shape)));
    Result<program::CoreLowering> lowering = program::lower_extension_to_core(
        **op, metadata, {program::SpecializationAxis::kConcreteDims}, program::make_provenance("test"));
    ASSERT_TRUE(lowering.ok()) << lowering.status().to_string();
    multi_op_lowerings += lowering->fragment->num_operations() > 1;
    const std::vector<Dense> operands = random_operands(p.shapes, 8);
    const std::vector<Tensor> inputs = to_tensors(operands);
    Result<Tensor> a = einsum(native_ctx, *op, inputs);
    Result<Tensor> b = einsum(lowered_ctx, *op, inputs);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    // The core lowering equals the native path (and the reference).
    EXPECT_LT(max_abs_diff(to_dense(*a), to_dense(*b)), 1e-12);
    EXPECT_LT(max_abs_diff(to_dense(*b), reference(p, operands)), 1e-11);
  }
  // Every lowering of two or more core ops was promoted to a prepared
  // graph; a single dot_general stays on the fast path.
  EXPECT_GE(multi_op_lowerings, 5u);
  EXPECT_EQ(lowered_ctx.metrics().promoted_calls, multi_op_lowerings);
  EXPECT_EQ(lowered_ctx.metrics().fast_path_calls, problems().size() - multi_op_lowerings);
  EXPECT_GT(lowered.runtime->execution_metrics().runs, 0u);
  EXPECT_GT(lowered.dot_general->calls.load(), 0);
  EXPECT_EQ(native_ctx.metrics().promoted_calls, 0u);

  const Problem& chain = problems()[1];
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(chain.subscripts);
  auto program = einsum_program(*op, chain.shapes);
  const std::vector<Tensor> inputs = to_tensors(random_operands(chain.shapes, 1));
  Result<std::shared_ptr<const runtime::PreparedProgram>> prepared =
      lowered.runtime->prepare_for(program, runtime::InputSignature::of(inputs));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  std::size_t dot_generals = 0;
  for (std::size_t n = 0; n < (*prepared)->num_nodes(); ++n) dot_generals += (*prepared)->node(n).name == "dot_general";
  EXPECT_EQ(dot_generals, 2u) << (*prepared)->explain();
  EXPECT_GT((*prepared)->num_nodes(), 2u);
}

TEST(EinsumRuntime, EagerChangingShapeSequencePlansOncePerShape) {
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  runtime::EagerContext ctx = t.runtime->on();
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create("aib,bjc->aijc");
  ASSERT_TRUE(op.ok());
  const std::vector<std::int64_t> bonds = {1, 2, 4, 8, 4, 2, 1};
  std::uint64_t calls = 0;
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (std::size_t s = 0; s + 2 < bonds.size(); ++s) {
      const std::vector<std::vector<std::int64_t>> shapes = {{bonds[s], 2, bonds[s + 1]},
                                                             {bonds[s + 1], 2, bonds[s + 2]}};
      const std::vector<Dense> d = random_operands(shapes, s);
      Result<Tensor> out = einsum(ctx, *op, to_tensors(d));
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      Result<Network> net = Network::bind("aib,bjc->aijc", refs(shapes));
      EXPECT_LT(max_abs_diff(to_dense(*out), brute_force_einsum(*net, d)), 1e-12);
      ++calls;
    }
  }
  const std::uint64_t distinct = bonds.size() - 2;
  const CpuEinsumMetrics m = t.executor->metrics();
  EXPECT_EQ(m.plans_built, distinct);
  EXPECT_EQ(m.cache.entries, distinct);
  EXPECT_EQ(m.cache.hits, calls - distinct);
  EXPECT_EQ(ctx.metrics().fast_path_calls, calls);
  EXPECT_EQ(t.runtime->execution_metrics().runs, 0u);
}

// Note [Ops from text] and [Extension call memo]: a repeated subscripts
// text reuses its op, and an op rebuilt with an equal payload hits the
// context's call memo; neither reaches the engine's prepare again.
TEST(EinsumRuntime, RepeatedTextAndRebuiltOpsSkipTheEnginesPrepare) {
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  runtime::EagerContext ctx = t.runtime->on();
  const std::vector<Dense> d = random_operands({{3, 4}, {4, 5}}, 7);
  const std::vector<Tensor> inputs = to_tensors(d);
  const Dense expected = reference({"ij,jk->ik", {{3, 4}, {4, 5}}}, d);
  for (int i = 0; i < 50; ++i) {
    Result<Tensor> out = einsum(ctx, "ij,jk->ik", inputs);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_LT(max_abs_diff(to_dense(*out), expected), 1e-12);
  }
  EXPECT_EQ(t.executor->metrics().plans_built, 1u);
  EXPECT_EQ(t.executor->metrics().cache.hits, 0u);  // the 49 repeats never asked the engine

  const auto make = []() -> Result<std::shared_ptr<const program::ExtensionOp>> {
    ADD_FAILURE() << "a remembered text was built again";
    return std::shared_ptr<const program::ExtensionOp>(*EinsumOp::create("ij,jk->ik"));
  };
  Result<std::shared_ptr<const program::ExtensionOp>> first = ctx.op_from_text(kEinsumFamilyId, "ij,jk->ik", make);
  Result<std::shared_ptr<const program::ExtensionOp>> second = ctx.op_from_text(kEinsumFamilyId, "ij,jk->ik", make);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());

  for (int i = 0; i < 20; ++i) {
    Result<Tensor> out = einsum(ctx, *EinsumOp::create("ij,jk->ik"), inputs);  // a new op, an equal payload
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_LT(max_abs_diff(to_dense(*out), expected), 1e-12);
  }
  EXPECT_EQ(t.executor->metrics().cache.hits, 0u);

  // Another text is another op; a text that fails to parse is not remembered.
  Result<Tensor> transposed = einsum(ctx, "ij,jk->ki", inputs);
  ASSERT_TRUE(transposed.ok());
  EXPECT_EQ(transposed->shape()[0], 5);
  EXPECT_EQ(t.executor->metrics().plans_built, 2u);
  for (int i = 0; i < 2; ++i) {
    Result<Tensor> bad = einsum(ctx, "ij,jk->iq", inputs);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("iq"), std::string::npos) << bad.status().to_string();
  }
  EXPECT_EQ(ctx.metrics().fast_path_calls, 71u);
}

TEST(EinsumRuntime, TypedErrorsLeaveEverythingUsable) {
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  runtime::EagerContext ctx = t.runtime->on();
  const Tensor a = to_tensor(random_dense({2, 3}, 1)), b = to_tensor(random_dense({3, 4}, 2));
  const Tensor c = to_tensor(random_dense({4, 4}, 3));
  const auto code = [&](std::string_view subscripts, std::vector<Tensor> inputs) {
    return einsum(ctx, subscripts, inputs).status().code();
  };
  EXPECT_EQ(code("ij,jk->ik", {a, c}), ErrorCode::kShapeMismatch);     // j: 3 vs 4
  EXPECT_EQ(code("ij,jk->ik", {a}), ErrorCode::kInvalidArgument);      // operand count
  EXPECT_EQ(code("ijk,jk->ik", {a, b}), ErrorCode::kShapeMismatch);    // rank
  EXPECT_EQ(code("ij,jk->iz", {a, b}), ErrorCode::kInvalidArgument);   // unknown output label
  EXPECT_EQ(code("ij,,jk->ik", {a, b}), ErrorCode::kInvalidArgument);  // three operands declared
  EXPECT_EQ(code("ij,j!->i", {a, b}), ErrorCode::kInvalidArgument);    // malformed
  const Tensor flag = *Tensor::zeros({3, 4}, DType::kBool);
  EXPECT_EQ(code("ij,jk->ik", {*Tensor::zeros({2, 3}, DType::kBool), flag}), ErrorCode::kDTypeMismatch);
  // The message names the label and the operands.
  const Status st = einsum(ctx, "ij,jk->ik", std::vector<Tensor>{a, c}).status();
  EXPECT_NE(st.message().find("'j'"), std::string::npos) << st.to_string();
  // Nothing broke: the same context still runs einsums.
  Result<Tensor> ok = einsum(ctx, "ij,jk->ik", std::vector<Tensor>{a, b});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->shape()[1], 4);
}

TEST(EinsumRuntime, BroadcastOperandsLoseTheirBroadcastLabelsNotTheirValues) {
  // Note [Broadcast operands]: stride-0 axes are dropped from their operand
  // (or summed as a factor), so nothing is copied to the logical size.
  TestRuntime t = make_test_runtime(/*native_einsum=*/true);
  runtime::EagerContext ctx = t.runtime->on();
  constexpr std::int64_t n = 96;
  const Tensor row = *to_tensor(random_dense({n}, 1)).broadcast_to({n, n});     // stride 0 on i
  const Tensor col = *to_tensor(random_dense({n, 1}, 2)).broadcast_to({n, n});  // stride 0 on j
  const Tensor dense = to_tensor(random_dense({n, 8}, 3));
  const Tensor one = to_tensor(random_dense({1}, 4));
  const Tensor scalar = *to_tensor(random_dense({1}, 5)).broadcast_to({n, 3});  // stride 0 on both
  struct Case {
    const char* subscripts;
    std::vector<Tensor> operands;
  };
  const std::vector<Case> cases = {
      {"ij,ij->", {row, col}},  // i and j each summed with one stride-0 side
      {"ij->", {row}},          // i: n equal terms
      {"ij,jk->ik", {row, dense}},
      {"ij->ij", {row}},       // i only here and in the output: kept
      {"ii->i", {row}},        // a diagonal stays
      {"ij,i->", {row, one}},  // i's other occurrence has extent 1: summed as a factor
      {"ij,ji", {col, row}},   // implicit output
      {"ab->", {scalar}},
      {"ab,ab->b", {scalar, scalar}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.subscripts);
    const std::int64_t copies = t.executor->metrics().execution.composite_copies;
    Result<Tensor> out = einsum(ctx, c.subscripts, c.operands);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(t.executor->metrics().execution.composite_copies, copies);
    std::vector<IntArrayRef> shapes;
    std::vector<Dense> values;
    for (const Tensor& x : c.operands) {
      shapes.push_back(x.shape());
      values.push_back(to_dense(x));
    }
    Result<Network> net = Network::bind(c.subscripts, shapes);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    const Dense want = brute_force_einsum(*net, values);
    double scale = 1.0;
    for (double v : want.data) scale = std::max(scale, std::abs(v));
    EXPECT_LT(max_abs_diff(to_dense(*out), want), 1e-12 * scale);
  }
  EXPECT_LT(t.executor->metrics().workspace_retained_bytes, static_cast<std::size_t>(n * n * 8));
  // Summed extents whose product passes 2^63 (the Python edge audit of
  // 2026-12-07: an int64 factor wrapped to 0, so 2^32 x 2^32 ones summed
  // to 0): floating results take the product in floating point, integers
  // wrap modulo 2^64 as numpy's sums do.
  {
    constexpr std::int64_t big = std::int64_t{3} << 31;
    const Tensor ones = *Tensor::full({1}, Scalar::of(1.0), DType::kFloat64).value().broadcast_to({big});
    Result<Tensor> sum = einsum(ctx, "i,j->", std::vector<Tensor>{ones, ones});
    ASSERT_TRUE(sum.ok()) << sum.status().to_string();
    EXPECT_DOUBLE_EQ(static_cast<const double*>(sum->data())[0], 9.0 * std::ldexp(1.0, 62));
    const Tensor three = *Tensor::full({1}, Scalar::of(std::int64_t{3}), DType::kInt64).value().broadcast_to({big});
    Result<Tensor> wrapped = einsum(ctx, "i,j->", std::vector<Tensor>{three, three});
    ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
    const std::uint64_t terms = static_cast<std::uint64_t>(big) * static_cast<std::uint64_t>(big);
    EXPECT_EQ(static_cast<const std::int64_t*>(wrapped->data())[0], static_cast<std::int64_t>(9 * terms));
  }
  // An error still names the caller's subscripts and labels.
  const Status st = einsum(ctx, "ij,jk->ik", std::vector<Tensor>{row, to_tensor(random_dense({5, 8}, 6))}).status();
  EXPECT_EQ(st.code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(st.message().find("'j'"), std::string::npos) << st.to_string();
}

TEST(EinsumRuntime, WorkspaceLimitIsAPrepareError) {
  CpuEinsumOptions options;
  options.planning.workspace_limit_bytes = 1000.0;
  TestRuntime t = make_test_runtime(/*native_einsum=*/true, options);
  runtime::EagerContext ctx = t.runtime->on();
  const std::vector<Tensor> inputs = to_tensors(random_operands({{20, 20}, {20, 20}, {20, 20}}, 1));
  Result<Tensor> out = einsum(ctx, "ij,jk,kl->il", inputs);
  EXPECT_EQ(out.status().code(), ErrorCode::kWorkspaceLimitExceeded) << out.status().to_string();
  EXPECT_EQ(out.status().stage(), ErrorStage::kPrepare);
}

TEST(EinsumRuntime, RunsOnTheCpuEngineOfARealDomain) {
  Result<cpu::CpuTopology> topology = cpu::CpuTopology::discover();
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = cpu::CpuDomainSet::create_managed(*topology);
  ASSERT_TRUE(domains.ok()) << domains.status().to_string();
  auto executor = make_executor();
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions cpu_options;
  cpu_options.id = EngineId(3);
  cpu_options.domains = *domains;
  ASSERT_TRUE(cpu::register_cpu_engine(builder, cpu_options).ok());
  builder.add_extension_module(cpu_extension_module(EngineId(3), executor));
  Result<runtime::Runtime> rt = builder.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  runtime::EagerContext ctx = rt->on();
  const Problem p{"bij,bjk->bik", {{8, 40, 30}, {8, 30, 50}}};
  const std::vector<Dense> operands = random_operands(p.shapes, 2);
  Result<Tensor> out = einsum(ctx, p.subscripts, to_tensors(operands));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_LT(max_abs_diff(to_dense(*out), reference(p, operands)), 1e-11);
  EXPECT_EQ(ctx.metrics().fast_path_calls, 1u);
  EXPECT_GE((*domains)->domains()[0]->metrics().installs, 1u);
  // And as a prepared graph.
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(p.subscripts);
  Result<runtime::TensorList> graph = rt->run(einsum_program(*op, p.shapes), to_tensors(operands));
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_LT(max_abs_diff(to_dense((*graph)[0]), reference(p, operands)), 1e-11);
}

// Two contractions that do not depend on each other, each with a work
// estimate, form a concurrent group (Note [Concurrent groups]); on a domain
// of two threads the CPU engine runs them side by side.
TEST(EinsumRuntime, IndependentContractionsRunAsAConcurrentGroup) {
  Result<cpu::CpuTopology> topology = cpu::CpuTopology::discover();
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = cpu::CpuDomainSet::create_managed(*topology);
  ASSERT_TRUE(domains.ok()) << domains.status().to_string();
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions cpu_options;
  cpu_options.id = EngineId(3);
  cpu_options.domains = *domains;
  ASSERT_TRUE(cpu::register_cpu_engine(builder, cpu_options).ok());
  builder.add_extension_module(cpu_extension_module(EngineId(3), make_executor()));
  Result<runtime::Runtime> rt = builder.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();

  const Problem p{"ij,jk->ik", {{48, 40}, {40, 56}}};
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(p.subscripts);
  ASSERT_TRUE(op.ok());
  program::ProgramBuilder b;
  SmallVector<program::ProgramValue, 4> x;
  for (int i = 0; i < 4; ++i) x.push_back(*b.add_input(DType::kFloat64, {p.shapes[i % 2][0], p.shapes[i % 2][1]}));
  const program::ProgramValue first[] = {x[0], x[1]};
  const program::ProgramValue second[] = {x[2], x[3]};
  Result<program::ProgramValue> y0 = emit_einsum(b, *op, first);
  Result<program::ProgramValue> y1 = emit_einsum(b, *op, second);
  ASSERT_TRUE(y0.ok() && y1.ok());
  Result<program::FrozenProgram> frozen = b.freeze({*y0, *y1});
  ASSERT_TRUE(frozen.ok()) << frozen.status().to_string();

  std::vector<Dense> operands = random_operands(p.shapes, 5);
  const std::vector<Dense> more = random_operands(p.shapes, 6);
  operands.insert(operands.end(), more.begin(), more.end());
  const std::vector<Tensor> inputs = to_tensors(operands);
  auto plan = rt->prepare_for(frozen->program, runtime::InputSignature::of(inputs));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_NE((*plan)->explain().find("concurrent group: #0..#1"), std::string::npos) << (*plan)->explain();
  const Dense expected0 = reference(p, {operands[0], operands[1]});
  const Dense expected1 = reference(p, {operands[2], operands[3]});
  for (int run = 0; run < 20; ++run) {
    Result<runtime::TensorList> out = rt->run_prepared(**plan, inputs);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_LT(max_abs_diff(to_dense((*out)[0]), expected0), 1e-11);
    EXPECT_LT(max_abs_diff(to_dense((*out)[1]), expected1), 1e-11);
  }
  EXPECT_EQ(rt->execution_metrics().groups_enqueued, 20u);
}

TEST(EinsumRuntime, FallbackContextGivesTheInlineEngineThreads) {
  auto two = std::make_shared<const cpu::ArenaParallelContext>(2);
  TestRuntime t = make_test_runtime(/*native_einsum=*/true, {}, two);
  runtime::EagerContext ctx = t.runtime->on();
  const Problem p{"bij,bjk->bik", {{64, 8, 8}, {64, 8, 8}}};
  const std::vector<Dense> operands = random_operands(p.shapes, 4);
  Result<Tensor> out = einsum(ctx, p.subscripts, to_tensors(operands));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_LT(max_abs_diff(to_dense(*out), reference(p, operands)), 1e-11);
  EXPECT_EQ(t.executor->metrics().execution.outer_steps, 1) << "64 small GEMMs on two threads run kOuter";
}

}  // namespace
}  // namespace tenferro::einsum
