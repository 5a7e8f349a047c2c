// The einsum AD rule: JVP and VJP of einsums (diagonals, traces, summed-out
// labels, broadcasting, ellipsis, complex operands) against a numpy
// reference that builds each gradient column by column from np.einsum; the
// adjoint identity; reverse mode of a plain contraction chain emitting
// einsums only; N-ary einsums as their planned binary steps; symbolic operand extents; and the VJP program running on
// the native einsum engine through a runtime.
#include <complex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/ad_runtime/gradient_tape.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum_cpu/cpu_engine.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/testing/python.h"
#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::einsum {
namespace {

using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using tenferro::testing::check_allclose;
using tenferro::testing::random_tensor;
using tenferro::testing::run_python;

struct Case {
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
  DType dtype = DType::kFloat64;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}, DType::kComplex128},
      {"ii->i", {{3, 3}}},
      {"ii->", {{3, 3}}, DType::kComplex128},
      {"iij,jk->ik", {{3, 3, 2}, {2, 4}}},
      {"ij->", {{2, 3}}},
      {"ij,k->ijk", {{2, 3}, {2}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {1, 4, 5}}},
      {"ij,j->ij", {{3, 4}, {1}}},
      {"ab,bc,ca->", {{2, 3}, {3, 4}, {4, 2}}, DType::kComplex128},
      {"ij,jk,kl->li", {{3, 4}, {4, 5}, {5, 2}}},
      {"ji", {{2, 3}}},
      {"iji,jk->kj", {{2, 3, 2}, {3, 2}}},
  };
  return c;
}

// With `symbolic`, every extent other than 1 is a symbol, one per label
// (operands sharing a label share its symbol); no ellipsis then.
FrozenProgram einsum_program(const Case& c, bool symbolic = false) {
  ProgramBuilder b;
  std::vector<ProgramValue> inputs;
  const std::string operands = c.subscripts.substr(0, c.subscripts.find("->"));
  std::vector<std::optional<program::SymbolicExtent>> label_symbol(128);
  std::size_t at = 0;  // start of the current operand's labels in `operands`
  for (const auto& s : c.shapes) {
    program::SymbolicShape shape = program::symbolic_shape(IntArrayRef(s));
    if (symbolic) {
      EXPECT_EQ(operands.find('.'), std::string::npos) << c.subscripts;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const auto& known = label_symbol[static_cast<unsigned char>(operands[at + d])];
        if (!(shape[d] == program::SymbolicExtent(1))) shape[d] = known ? *known : program::SymbolicExtent::unknown();
      }
    }
    const ProgramValue x = *b.add_input(c.dtype, shape.span());
    if (symbolic) {
      const program::ValueMetadata m = *b.metadata(x);
      for (std::size_t d = 0; d < m.shape.size(); ++d)
        label_symbol[static_cast<unsigned char>(operands[at + d])] = m.shape[d];
    }
    inputs.push_back(x);
    at += shape.size() + 1;  // the labels and a comma
  }
  auto op = *EinsumOp::create(c.subscripts);
  ProgramValue y = *emit_einsum(b, op, inputs);
  return *b.freeze({y});
}

std::vector<Tensor> evaluate(const program::SemanticProgram& p, std::span<const Tensor> inputs) {
  auto r = tenferro::testing::evaluate_reference(p, inputs);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(*r) : std::vector<Tensor>{};
}

std::string numpy_literal(const Tensor& t) {
  std::ostringstream s;
  s.precision(17);
  s << "np.array([";
  if (is_complex(t.dtype())) {
    const auto v = *t.to_vector<std::complex<double>>();
    for (std::size_t i = 0; i < v.size(); ++i)
      s << (i ? "," : "") << "complex(" << v[i].real() << "," << v[i].imag() << ")";
  } else {
    const auto v = *t.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  }
  s << "]).reshape((";
  for (std::int64_t e : t.shape()) s << e << ",";
  s << "))";
  return s.str();
}

Tensor parse(std::istream& in, const Tensor& like) {
  const auto n = static_cast<std::size_t>(like.numel());
  if (is_complex(like.dtype())) {
    std::vector<std::complex<double>> v(n);
    for (auto& x : v) {
      double re = 0, im = 0;
      in >> re >> im;
      x = {re, im};
    }
    return *Tensor::from_values<std::complex<double>>(std::span<const std::complex<double>>(v), like.shape());
  }
  std::vector<double> v(n);
  for (double& x : v) in >> x;
  return *Tensor::from_values<double>(std::span<const double>(v), like.shape());
}

double real_inner(const Tensor& a, const Tensor& b) {
  double s = 0;
  if (is_complex(a.dtype())) {
    const auto x = *a.to_vector<std::complex<double>>(), y = *b.to_vector<std::complex<double>>();
    for (std::size_t i = 0; i < x.size(); ++i) s += std::real(std::conj(x[i]) * y[i]);
  } else {
    const auto x = *a.to_vector<double>(), y = *b.to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  }
  return s;
}

TEST(EinsumAdRule, MatchesNumpyAndTheAdjointIdentity) {
  ad::AdContext context;
  ASSERT_TRUE(context.install_rule(einsum_ad_rule()).ok());
  std::string script =
      "import numpy as np\n"
      "def grad(subs, ops, v, k):\n"
      "    x = ops[k]\n"
      "    g = np.zeros(x.shape, dtype=np.result_type(x, v))\n"
      "    for idx in np.ndindex(x.shape):\n"
      "        e = np.zeros_like(x); e[idx] = 1\n"
      "        args = list(ops); args[k] = e\n"
      "        g[idx] = np.conj(np.sum(np.conj(v) * np.einsum(subs, *args)))\n"
      "    return g\n"
      "def emit(a):\n"
      "    for z in np.asarray(a).ravel():\n"
      "        print(repr(float(np.real(z))), repr(float(np.imag(z))) if np.iscomplexobj(a) else '')\n";
  std::vector<std::vector<Tensor>> all_gradients;
  std::vector<std::vector<Tensor>> all_tangents;
  std::uint64_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.subscripts);
    FrozenProgram p = einsum_program(c);
    std::vector<std::uint32_t> active;
    std::vector<Tensor> x, u;
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
      active.push_back(static_cast<std::uint32_t>(i));
      x.push_back(*random_tensor(c.dtype, c.shapes[i], ++seed));
      u.push_back(*random_tensor(c.dtype, c.shapes[i], ++seed));
    }
    auto jvp = context.jvp(p, active);
    auto vjp = context.vjp(p, active);
    ASSERT_TRUE(jvp.ok()) << jvp.status().to_string();
    ASSERT_TRUE(vjp.ok()) << vjp.status().to_string();
    EXPECT_EQ(context.metrics().lowering_fallbacks, 0u);
    std::vector<Tensor> jvp_inputs = x;
    jvp_inputs.insert(jvp_inputs.end(), u.begin(), u.end());
    const std::vector<Tensor> jvp_out = evaluate(*jvp->program.program, jvp_inputs);
    ASSERT_EQ(jvp_out.size(), 2u);
    const Tensor v = *random_tensor(c.dtype, jvp_out[0].shape(), ++seed);
    std::vector<Tensor> vjp_inputs = x;
    vjp_inputs.push_back(v);
    const std::vector<Tensor> vjp_out = evaluate(*vjp->program.program, vjp_inputs);
    ASSERT_EQ(vjp_out.size(), 1 + c.shapes.size());
    // Re <v, J u> = Re <J* v, u>.
    double rhs = 0;
    for (std::size_t i = 0; i < c.shapes.size(); ++i) rhs += real_inner(vjp_out[1 + i], u[i]);
    EXPECT_NEAR(real_inner(v, jvp_out[1]), rhs, 1e-10 * (1 + std::abs(rhs)));
    all_gradients.emplace_back(vjp_out.begin() + 1, vjp_out.end());
    all_tangents.push_back({jvp_out[1]});
    std::string ops = "ops = [";
    std::string tangent = "t = 0";
    for (std::size_t i = 0; i < x.size(); ++i) {
      ops += numpy_literal(x[i]) + ",";
      tangent += " + np.einsum('" + c.subscripts + "', *[" + (i == 0 ? "" : "*ops[:" + std::to_string(i) + "], ") +
                 numpy_literal(u[i]) + ", *ops[" + std::to_string(i + 1) + ":]])";
    }
    script += ops + "]\nv = " + numpy_literal(v) + "\n" + tangent + "\nemit(t)\n";
    for (std::size_t i = 0; i < x.size(); ++i)
      script += "emit(grad('" + c.subscripts + "', ops, v, " + std::to_string(i) + "))\n";
  }
  const std::optional<std::string> out = run_python(script);
  if (!out) GTEST_SKIP() << "numpy is not available";
  std::istringstream in(*out);
  for (std::size_t n = 0; n < cases().size(); ++n) {
    SCOPED_TRACE(cases()[n].subscripts);
    const Tensor tangent = parse(in, all_tangents[n][0]);
    Status s = check_allclose(all_tangents[n][0], tangent, {1e-10, 1e-12, true});
    EXPECT_TRUE(s.ok()) << "jvp vs numpy: " << s.to_string();
    for (std::size_t i = 0; i < all_gradients[n].size(); ++i) {
      const Tensor expected = parse(in, all_gradients[n][i]);
      Status g = check_allclose(all_gradients[n][i], expected, {1e-10, 1e-12, true});
      EXPECT_TRUE(g.ok()) << "gradient " << i << " vs numpy: " << g.to_string();
    }
  }
}

TEST(EinsumAdRule, ReverseModeOfAContractionIsEinsumsOnly) {
  ad::AdContext context;
  ASSERT_TRUE(context.install_rule(einsum_ad_rule()).ok());
  const Case chain{"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}};
  const std::uint32_t active[] = {0, 1, 2};
  auto vjp = context.vjp(einsum_program(chain), active);
  ASSERT_TRUE(vjp.ok()) << vjp.status().to_string();
  std::size_t einsums = 0;
  for (program::OperationView op : vjp->program.program->operations()) {
    EXPECT_TRUE(op.is_extension()) << op.name();
    einsums += op.is_extension() ? 1 : 0;
  }
  // Note [Pairwise einsums for reverse mode]: the two planned steps, then
  // two per step (the N-ary transpose would be the forward + one einsum of
  // three operands per operand).
  EXPECT_EQ(einsums, 6u);
  EXPECT_EQ(context.metrics().expanded_nodes, 1u);
  // Symbolic extents need no lowering: the rule works on the payload.
  auto symbolic = context.vjp(einsum_program(cases()[7], /*symbolic=*/true), std::vector<std::uint32_t>{0, 1});
  ASSERT_TRUE(symbolic.ok()) << symbolic.status().to_string();
  const std::vector<Tensor> x{*random_tensor(DType::kFloat64, {2, 3, 4}, 5), *random_tensor(DType::kFloat64, {2, 4}, 6),
                              *random_tensor(DType::kFloat64, {3}, 7)};
  auto exact = context.vjp(einsum_program(cases()[7]), std::vector<std::uint32_t>{0, 1});
  const auto a = evaluate(*symbolic->program.program, x);
  const auto b = evaluate(*exact->program.program, x);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(check_allclose(a[i], b[i]).ok());
}

// y = x W_0 ... W_{n-1} as n binary einsums (the `tenferro bench ad` chain).
FrozenProgram matmul_chain(int steps, std::int64_t n) {
  auto op = EinsumOp::create("ij,jk->ik");
  EXPECT_TRUE(op.ok());
  ProgramBuilder b;
  ProgramValue y = *b.add_input(DType::kFloat64, {n, n}, "x");
  for (int i = 0; i < steps; ++i) {
    const ProgramValue operands[] = {y, *b.add_input(DType::kFloat64, {n, n}, "W")};
    y = *emit_einsum(b, *op, operands);
  }
  return *b.freeze({y});
}

struct OpCounts {
  std::size_t einsums = 0, adds = 0, other_core = 0;
  bool all_binary = true;
};

OpCounts count_ops(const program::SemanticProgram& p) {
  OpCounts c;
  for (program::OperationView op : p.operations()) {
    if (op.is_extension()) {
      ++c.einsums;
      c.all_binary = c.all_binary && op.operands().size() == 2;
    } else if (op.core_op() == program::CoreSemanticOp::kAdd) {
      ++c.adds;
    } else {
      ++c.other_core;
    }
  }
  return c;
}

// Note [Cost of the chain's derivatives]: the derivative programs of an
// n-step binary einsum chain are minimal, so whatever they cost beyond
// forward + 2 einsums per step is the runtime's, not the transform's:
// reverse mode emits exactly two binary einsums per step (dY W^T and
// Y^T dY, each writing its operand's layout directly: no transpose, copy,
// zero fill or accumulation), forward mode two einsums and one add.
TEST(EinsumAdRule, DerivativesOfAnEinsumChainAreMinimal) {
  constexpr int kSteps = 5;
  ad::AdContext context;
  ASSERT_TRUE(context.install_rule(einsum_ad_rule()).ok());
  const FrozenProgram chain = matmul_chain(kSteps, 4);
  std::vector<std::uint32_t> all(kSteps + 1);
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::uint32_t x_only[] = {0};

  auto vjp_all = context.vjp(chain, all);
  ASSERT_TRUE(vjp_all.ok()) << vjp_all.status().to_string();
  OpCounts c = count_ops(*vjp_all->program.program);
  EXPECT_EQ(c.einsums, 3u * kSteps);
  EXPECT_EQ(c.adds + c.other_core, 0u);
  EXPECT_TRUE(c.all_binary);
  // Every backward einsum's output is one operand's subscripts in order.
  for (program::OperationView op : vjp_all->program.program->operations()) {
    if (!op.is_extension()) continue;
    const auto& subscripts = static_cast<const EinsumOp*>(op.extension())->canonical_subscripts();
    EXPECT_TRUE(subscripts == "ij,jk->ik" || subscripts == "[0,2],[1,2]->[0,1]" || subscripts == "[0,2],[0,1]->[1,2]")
        << subscripts;
  }

  auto vjp_x = context.vjp(chain, x_only);
  ASSERT_TRUE(vjp_x.ok()) << vjp_x.status().to_string();
  c = count_ops(*vjp_x->program.program);
  EXPECT_EQ(c.einsums, 2u * kSteps);  // no gradient einsum for an inactive W
  EXPECT_EQ(c.adds + c.other_core, 0u);

  auto split = context.split_vjp(chain, all);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_EQ(split->num_residuals, static_cast<std::size_t>(kSteps - 1));  // y_1 .. y_{n-1}
  c = count_ops(*split->backward.program);
  EXPECT_EQ(c.einsums, 2u * kSteps);
  EXPECT_EQ(c.adds + c.other_core, 0u);

  auto jvp_all = context.jvp(chain, all);
  ASSERT_TRUE(jvp_all.ok()) << jvp_all.status().to_string();
  c = count_ops(*jvp_all->program.program);
  EXPECT_EQ(c.einsums, 3u * kSteps);
  EXPECT_EQ(c.adds, static_cast<std::size_t>(kSteps));
  EXPECT_EQ(c.other_core, 0u);

  auto jvp_x = context.jvp(chain, x_only);
  ASSERT_TRUE(jvp_x.ok()) << jvp_x.status().to_string();
  c = count_ops(*jvp_x->program.program);
  EXPECT_EQ(c.einsums, 2u * kSteps);
  EXPECT_EQ(c.adds + c.other_core, 0u);
}

// Note [Pairwise einsums for reverse mode]: an N-operand einsum recorded as
// its planned binary steps, or expanded into them by the rule, has the
// N-ary form's gradients, from 3 (N - 1) binary einsums (the steps, then two
// per step) instead of N + 1 einsums of N operands each.
TEST(EinsumAdRule, PairwiseStepsGiveTheSameGradientsFromBinaryEinsums) {
  ad::AdContext context;
  ASSERT_TRUE(context.install_rule(einsum_ad_rule()).ok());
  ad::AdContext unexpanded(ad::AdContextOptions{.expand_nodes = false});
  ASSERT_TRUE(unexpanded.install_rule(einsum_ad_rule()).ok());
  const std::vector<Case> networks = {
      {"ab,bc,cd,de,ef->af", {{3, 4}, {4, 5}, {5, 2}, {2, 6}, {6, 3}}},
      {"ab,bc,ca->", {{2, 3}, {3, 4}, {4, 2}}, DType::kComplex128},
      {"iij,jk,kl->il", {{3, 3, 2}, {2, 4}, {4, 5}}},     // a diagonal
      {"ij,jk,kl,m->li", {{3, 4}, {4, 5}, {5, 2}, {3}}},  // a label summed out alone
      {"abc,cd,bde->ae", {{2, 3, 4}, {4, 5}, {3, 5, 2}}},
      {"...ij,...jk,...kl->...il", {{2, 3, 4}, {1, 4, 5}, {2, 5, 2}}},  // a broadcast axis
      {"ab,ab,bc->ac", {{3, 1}, {3, 4}, {4, 2}}},                       // a named one
  };
  for (const Case& c : networks) {
    SCOPED_TRACE(c.subscripts);
    auto op = EinsumOp::create(c.subscripts, PlanningPolicy{PlannerKind::kGreedy});
    ASSERT_TRUE(op.ok());
    std::vector<IntArrayRef> shapes(c.shapes.begin(), c.shapes.end());
    auto steps = pairwise_steps(**op, shapes, c.dtype);
    ASSERT_TRUE(steps.ok()) << steps.status().to_string();
    const std::size_t n = c.shapes.size();
    ASSERT_EQ(steps->size(), n - 1);
    ProgramBuilder b;
    std::vector<ProgramValue> nodes;
    std::vector<std::uint32_t> active;
    for (const auto& shape : c.shapes) {
      nodes.push_back(*b.add_input(c.dtype, program::symbolic_shape(IntArrayRef(shape)).span()));
      active.push_back(static_cast<std::uint32_t>(active.size()));
    }
    for (const PairwiseStep& step : *steps) {
      EXPECT_EQ(step.op->num_operands(), 2);
      const ProgramValue pair[] = {nodes[static_cast<std::size_t>(step.lhs)],
                                   nodes[static_cast<std::size_t>(step.rhs)]};
      nodes.push_back(*emit_einsum(b, step.op, pair));
    }
    auto pairwise = context.vjp(*b.freeze({nodes.back()}), active);
    const std::uint64_t expanded_before = context.metrics().expanded_nodes;
    auto expanded = context.vjp(einsum_program(c), active);
    auto nary = unexpanded.vjp(einsum_program(c), active);
    ASSERT_TRUE(pairwise.ok()) << pairwise.status().to_string();
    ASSERT_TRUE(expanded.ok()) << expanded.status().to_string();
    ASSERT_TRUE(nary.ok()) << nary.status().to_string();
    EXPECT_EQ(context.metrics().expanded_nodes, expanded_before + 1);
    EXPECT_EQ(unexpanded.metrics().expanded_nodes, 0u);
    // Binary, but for the identity (diagonal) or ones (label summed out
    // alone) operand the transpose of such a step adds.
    const OpCounts counts = count_ops(*pairwise->program.program);
    const bool plain = c.subscripts.find("ii") == std::string::npos && c.subscripts.find(",m") == std::string::npos &&
                       c.subscripts.find("...") == std::string::npos && c.subscripts != "ab,ab,bc->ac";
    EXPECT_EQ(counts.all_binary, plain);
    for (program::OperationView o : pairwise->program.program->operations()) {
      if (o.is_extension()) {
        EXPECT_LE(o.operands().size(), 3u);
      }
    }
    EXPECT_EQ(counts.einsums, 3 * (n - 1));
    EXPECT_EQ(count_ops(*expanded->program.program).einsums, 3 * (n - 1));
    EXPECT_EQ(count_ops(*nary->program.program).einsums, n + 1);
    std::vector<Tensor> x;
    for (std::size_t i = 0; i < n; ++i) x.push_back(*random_tensor(c.dtype, c.shapes[i], 40 + i));
    const auto y = evaluate(*einsum_program(c).program, x);
    ASSERT_EQ(y.size(), 1u);
    x.push_back(*random_tensor(c.dtype, std::vector<std::int64_t>(y[0].shape().begin(), y[0].shape().end()), 60));
    const auto got = evaluate(*pairwise->program.program, x);
    const auto got_expanded = evaluate(*expanded->program.program, x);
    const auto want = evaluate(*nary->program.program, x);
    ASSERT_EQ(got.size(), n + 1);
    ASSERT_EQ(got_expanded.size(), n + 1);
    ASSERT_EQ(want.size(), n + 1);
    for (std::size_t i = 0; i <= n; ++i) {
      EXPECT_TRUE(check_allclose(got[i], want[i]).ok()) << "output " << i;
      EXPECT_TRUE(check_allclose(got_expanded[i], want[i]).ok()) << "output " << i;
    }
  }
  // Nothing to split: two operands.
  auto two = EinsumOp::create("ij,jk->ik");
  const std::vector<std::int64_t> s34{3, 4}, s45{4, 5};
  const IntArrayRef two_shapes[] = {s34, s45};
  EXPECT_TRUE(pairwise_steps(**two, two_shapes, DType::kFloat64)->empty());
  // Shapes that do not fit are the binding's error.
  auto three = EinsumOp::create("ij,jk,kl->il");
  const IntArrayRef wrong[] = {s34, s34, s45};
  EXPECT_EQ(pairwise_steps(**three, wrong, DType::kFloat64).status().code(), ErrorCode::kShapeMismatch);
}

TEST(EinsumAdRule, VjpRunsOnTheNativeEngine) {
  auto topology = cpu::CpuTopology::discover();
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  auto domains = cpu::CpuDomainSet::create_managed(*topology);
  ASSERT_TRUE(domains.ok()) << domains.status().to_string();
  auto gemm = cpu::NativeGemmProvider::create();
  ASSERT_TRUE(gemm.ok());
  auto executor = CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(*gemm));
  ASSERT_TRUE(executor.ok());
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions cpu_options;
  cpu_options.id = EngineId(3);
  cpu_options.domains = *domains;
  ASSERT_TRUE(cpu::register_cpu_engine(builder, cpu_options).ok());
  builder.add_extension_module(cpu_extension_module(EngineId(3), *executor));
  auto rt = builder.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  ad::AdContext context;
  ASSERT_TRUE(context.install_rule(einsum_ad_rule()).ok());
  const Case chain{"ij,jk,kl->il", {{6, 7}, {7, 8}, {8, 5}}};
  const std::uint32_t active[] = {0, 1, 2};
  auto vjp = context.vjp(einsum_program(chain), active);
  ASSERT_TRUE(vjp.ok());
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < 3; ++i) inputs.push_back(*random_tensor(DType::kFloat64, chain.shapes[i], 10 + i));
  inputs.push_back(*random_tensor(DType::kFloat64, {6, 5}, 20));
  auto ours = rt->run(vjp->program, inputs);
  ASSERT_TRUE(ours.ok()) << ours.status().to_string();
  const auto expected = evaluate(*vjp->program.program, inputs);
  ASSERT_EQ(ours->size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(check_allclose((*ours)[i], expected[i]).ok()) << i;
  // Every einsum of the VJP program (two forward steps, two per step) ran
  // on the native engine.
  EXPECT_EQ((*executor)->metrics().execution.executions, 6);

  // The cotangents alone: the last step's result (the einsum's value) is
  // not computed, so five einsums run, with the same gradients.
  const FrozenProgram f = einsum_program(chain);
  auto cotangents = ad::vjp_cotangents(*rt, context, f, std::span<const Tensor>(inputs.data(), 3), active,
                                       std::span<const Tensor>(&inputs[3], 1));
  ASSERT_TRUE(cotangents.ok()) << cotangents.status().to_string();
  EXPECT_EQ((*executor)->metrics().execution.executions, 6 + 5);
  ASSERT_EQ(cotangents->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(check_allclose((*cotangents)[i], expected[1 + i]).ok()) << i;

  // The eager tape records the expansion itself (Note [Expansions on the
  // tape]): the two binary steps run forward, and the backward program
  // (vjp_reusing_outputs) reuses their intermediate instead of recomputing
  // it, so it runs the four derivative einsums only, with the same gradients.
  auto shared = std::make_shared<ad::AdContext>();
  ASSERT_TRUE(shared->install_rule(einsum_ad_rule()).ok());
  ad::GradientTape tape(*rt, shared);
  std::vector<ad::TapeTensor> vars;
  for (std::size_t i = 0; i < 3; ++i) vars.push_back(*tape.variable(inputs[i]));
  auto op = EinsumOp::create(chain.subscripts);
  ASSERT_TRUE(op.ok());
  const std::int64_t before_forward = (*executor)->metrics().execution.executions;
  auto y = tape.apply(*op, std::span<const ad::TapeTensor>(vars.data(), vars.size()));
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(tape.metrics().operations_recorded, 2u);
  EXPECT_EQ((*executor)->metrics().execution.executions - before_forward, 2);
  const std::int64_t before_backward = (*executor)->metrics().execution.executions;
  const Status backward = tape.backward((*y)[0], inputs[3]);
  ASSERT_TRUE(backward.ok()) << backward.to_string();
  EXPECT_EQ((*executor)->metrics().execution.executions - before_backward, 4);
  EXPECT_EQ(shared->metrics().expanded_nodes, 0u);  // the transforms saw binary einsums only
  for (std::size_t i = 0; i < 3; ++i) {
    auto g = tape.grad(vars[i]);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_TRUE(check_allclose(*g, expected[1 + i]).ok()) << "gradient " << i;
  }
}

}  // namespace
}  // namespace tenferro::einsum
