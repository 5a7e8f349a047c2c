// Functional differentiation through a Runtime (reference engine): grad,
// jvp / vjp with materialized zeros, Hessian-vector products by forward
// over reverse and reverse over reverse against finite differences of
// gradients, the reuse-outputs backward program, and the complex
// convention against PyTorch and finite differences.
#include <complex>
#include <cstring>
#include <sstream>

#include <gtest/gtest.h>

#include "ad/ad_test_support.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/compiler/batching.h"
#include "tenferro/testing/reference_engine.h"
#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::ad {
namespace {

using program::CoreSemanticOp;
using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using program::ValueMetadata;
using tenferro::testing::check_allclose;
using tenferro::testing::random_tensor;

Result<ProgramValue> sum_all(ProgramBuilder& b, ProgramValue v) {
  TENFERRO_ASSIGN_OR_RETURN(ValueMetadata m, b.metadata(v));
  Dims axes;
  for (std::int64_t a = 0; a < m.rank(); ++a) axes.push_back(a);
  if (axes.empty()) return v;
  return b.emit(CoreSemanticOp::kReduceSum, {v}, program::ReduceAttributes{axes});
}

// loss = sum(tanh(A x) * exp(x0 . x)) with x: [3], A: [3, 3], x0 bound.
FrozenProgram scalar_program(const Tensor& bound) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
  ProgramValue a = *b.add_input(DType::kFloat64, {3, 3}, "A");
  ProgramValue x0 = *b.capture(bound, "x0");
  ProgramValue ax = *b.emit(CoreSemanticOp::kDotGeneral, {a, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  ProgramValue t = *b.emit(CoreSemanticOp::kTanh, {ax});
  ProgramValue d = *b.emit(CoreSemanticOp::kDotGeneral, {x0, x}, program::DotGeneralAttributes{{}, {}, {0}, {0}});
  ProgramValue e = *b.emit(CoreSemanticOp::kExp, {d});
  ProgramValue eb = *b.emit(CoreSemanticOp::kBroadcastInDim, {e}, program::BroadcastInDimAttributes{{3}, {}});
  ProgramValue p = *b.emit(CoreSemanticOp::kMul, {t, eb});
  return *b.freeze({*sum_all(b, p)});
}

// Central differences of a scalar program's output 0 for every element of
// parameter `which` (float64).
Tensor finite_difference_gradient(const FrozenProgram& f, std::vector<Tensor> parameters, std::size_t which,
                                  double h = 1e-6) {
  std::vector<double> x = *parameters[which].to_vector<double>();
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<double> xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    parameters[which] = *Tensor::from_values<double>(std::span<const double>(xp), parameters[which].shape());
    const double fp = *testing::evaluate(f, parameters)[0].to_vector<double>().value().data();
    parameters[which] = *Tensor::from_values<double>(std::span<const double>(xm), parameters[which].shape());
    const double fm = *testing::evaluate(f, parameters)[0].to_vector<double>().value().data();
    g[i] = (fp - fm) / (2 * h);
  }
  return *Tensor::from_values<double>(std::span<const double>(g), parameters[which].shape());
}

TEST(Functional, GradThroughTheRuntime) {
  auto stats = std::make_shared<tenferro::testing::ReferenceEngineStats>();
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime(stats);
  AdContext context;
  const Tensor x0 = *random_tensor(DType::kFloat64, {3}, 1);
  FrozenProgram f = scalar_program(x0);
  const std::vector<Tensor> params{*random_tensor(DType::kFloat64, {3}, 2), *random_tensor(DType::kFloat64, {3, 3}, 3)};
  const std::uint32_t active[] = {0, 1};
  auto g = grad(rt, context, f, params, active);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_GT(stats->operations.load(), 0u);
  for (std::size_t k = 0; k < 2; ++k) {
    Status s = check_allclose((*g)[k], finite_difference_gradient(f, params, k), {1e-6, 1e-8, true});
    EXPECT_TRUE(s.ok()) << k << ": " << s.to_string();
  }
  // Repeated calls take the gradient program from the transform cache (the
  // same program object, so the runtime's plan cache finds its plan): no
  // transform is built and nothing is prepared again.
  const AdMetrics built = context.metrics();
  const runtime::PlanCacheStats plans = rt.plan_cache_stats();
  const std::shared_ptr<const program::SemanticProgram> first = grad_program(context, f, active)->program;
  for (int i = 0; i < 3; ++i) {
    auto again = grad(rt, context, f, params, active);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(check_allclose((*again)[0], (*g)[0], {0, 0, true}).ok());
  }
  EXPECT_EQ(grad_program(context, f, active)->program, first);
  EXPECT_EQ(context.metrics().transforms_built, built.transforms_built);
  EXPECT_EQ(rt.plan_cache_stats().misses, plans.misses);
  EXPECT_GE(rt.plan_cache_stats().hits, plans.hits + 3);
  // A non-scalar output cannot be grad()'s loss.
  ProgramBuilder b;
  ProgramValue v = *b.add_input(DType::kFloat64, {2}, "v");
  auto bad = grad(rt, context, *b.freeze({v}), std::vector<Tensor>{*random_tensor(DType::kFloat64, {2}, 4)},
                  std::vector<std::uint32_t>{0});
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Functional, HessianVectorProducts) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  AdContext context;
  const Tensor x0 = *random_tensor(DType::kFloat64, {3}, 5);
  FrozenProgram f = scalar_program(x0);
  const std::vector<Tensor> params{*random_tensor(DType::kFloat64, {3}, 6), *random_tensor(DType::kFloat64, {3, 3}, 7)};
  const std::vector<Tensor> v{*random_tensor(DType::kFloat64, {3}, 8), *random_tensor(DType::kFloat64, {3, 3}, 9)};
  const std::uint32_t active[] = {0, 1};
  auto hv = hvp(rt, context, f, params, active, v);
  ASSERT_TRUE(hv.ok()) << hv.status().to_string();
  // Finite differences of gradients along v.
  const double h = 1e-5;
  std::vector<Tensor> plus, minus;
  for (std::size_t k = 0; k < 2; ++k) {
    plus.push_back(testing::axpy(params[k], h, v[k]));
    minus.push_back(testing::axpy(params[k], -h, v[k]));
  }
  const auto gp = *grad(rt, context, f, plus, active);
  const auto gm = *grad(rt, context, f, minus, active);
  for (std::size_t k = 0; k < 2; ++k) {
    Tensor fd = testing::axpy(gp[k], -1.0, gm[k]);
    fd = testing::axpy(*Tensor::zeros(fd.shape(), fd.dtype()), 0.5 / h, fd);
    Status s = check_allclose((*hv)[k], fd, {1e-5, 1e-7, true});
    EXPECT_TRUE(s.ok()) << "forward over reverse " << k << ": " << s.to_string();
  }
  // Reverse over reverse: vjp(grad_program) with cotangent v is H v too.
  FrozenProgram g = *grad_program(context, f, active);
  auto rr = vjp(rt, context, g, params, active, v);
  ASSERT_TRUE(rr.ok()) << rr.status().to_string();
  for (std::size_t k = 0; k < 2; ++k) {
    Status s = check_allclose(rr->cotangents[k], (*hv)[k], {1e-10, 1e-12, true});
    EXPECT_TRUE(s.ok()) << "reverse over reverse " << k << ": " << s.to_string();
  }
  // And every level agrees with its own finite differences and adjoint (a
  // fresh context: a cache hit would carry the first program's provenance).
  AdContext fresh;
  EXPECT_TRUE(testing::check_derivatives(fresh, g, params, active));
}

TEST(Functional, JvpAndVjpMaterializeAbsentTangents) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  AdContext context;
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {2, 3}, "x");
  (void)*b.add_input(DType::kFloat64, {4}, "z");
  ProgramValue y = *b.emit(CoreSemanticOp::kSin, {x});
  ProgramValue i = *b.emit(CoreSemanticOp::kArgmax, {x}, program::ArgReduceAttributes{1});
  ProgramValue c = *b.emit(CoreSemanticOp::kIota, {}, program::IotaAttributes{DType::kFloat64, {5}, 0});
  FrozenProgram f = *b.freeze({y, i, c});
  const std::vector<Tensor> params{*random_tensor(DType::kFloat64, {2, 3}, 1), *random_tensor(DType::kFloat64, {4}, 2)};
  const std::uint32_t active[] = {0, 1};
  const std::vector<Tensor> u{*random_tensor(DType::kFloat64, {2, 3}, 3), *random_tensor(DType::kFloat64, {4}, 4)};
  auto j = jvp(rt, context, f, params, active, u);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  ASSERT_EQ(j->tangents.size(), 3u);
  EXPECT_TRUE(j->tangents[0].defined());
  EXPECT_FALSE(j->tangents[1].defined());  // int64: not differentiable
  ASSERT_TRUE(j->tangents[2].defined());   // zeros
  EXPECT_EQ(testing::max_abs(j->tangents[2]), 0.0);
  EXPECT_EQ(j->tangents[2].shape()[0], 5);
  // vjp with an undefined cotangent (zero) for y: gradients are zeros of x's and z's shapes.
  auto r = vjp(rt, context, f, params, active, std::vector<Tensor>(3));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->cotangents.size(), 2u);
  EXPECT_EQ(testing::max_abs(r->cotangents[0]), 0.0);
  EXPECT_EQ(r->cotangents[1].shape()[0], 4);
  EXPECT_EQ(jvp(rt, context, f, params, active, std::span<const Tensor>()).status().code(),
            ErrorCode::kInvalidArgument);
}

// Note [Checked tangents]: tangents and cotangents are checked against the
// inputs and outputs they stand for, and named so; an undefined tangent is
// zero, as an undefined cotangent is.
TEST(Functional, TangentsAndCotangentsAreCheckedAndNamed) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  AdContext context;
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {program::SymbolicExtent::unknown()}, "x");
  (void)*b.add_input(DType::kInt64, {3}, "i");
  ProgramValue w = *b.add_input(DType::kFloat64, {3}, "w");
  FrozenProgram f = *b.freeze({*b.emit(CoreSemanticOp::kExp, {x}), *b.emit(CoreSemanticOp::kMul, {w, w})});
  const std::vector<Tensor> params{*random_tensor(DType::kFloat64, {4}, 1), *Tensor::arange(3, DType::kInt64),
                                   *random_tensor(DType::kFloat64, {3}, 2)};
  const std::uint32_t active[] = {0, 2};
  const auto names = [](const Status& s, std::string_view what) {
    return s.to_string().find(what) != std::string::npos;
  };
  std::vector<Tensor> u{*random_tensor(DType::kFloat64, {3}, 3), *random_tensor(DType::kFloat64, {3}, 4)};
  Status wrong = jvp(rt, context, f, params, active, u).status();
  EXPECT_EQ(wrong.code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE(names(wrong, "tangent 0 (of active input 0) of dtype float64 and shape [4]")) << wrong.to_string();
  u[0] = *random_tensor(DType::kFloat32, {4}, 3);
  wrong = jvp(rt, context, f, params, active, u).status();
  EXPECT_EQ(wrong.code(), ErrorCode::kDTypeMismatch);
  EXPECT_TRUE(names(wrong, "tangent 0")) << wrong.to_string();
  // An undefined tangent is zero: the first output's tangent is zeros.
  u[0] = Tensor();
  auto j = jvp(rt, context, f, params, active, u);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(testing::max_abs(j->tangents[0]), 0.0);
  EXPECT_GT(testing::max_abs(j->tangents[1]), 0.0);
  // Cotangents: the outputs' shapes for these inputs ([4] and [3]).
  std::vector<Tensor> v{*random_tensor(DType::kFloat64, {3}, 5), Tensor()};
  for (const bool alone : {false, true}) {
    const Status s = alone ? vjp_cotangents(rt, context, f, params, active, v).status()
                           : vjp(rt, context, f, params, active, v).status();
    EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
    EXPECT_TRUE(names(s, "cotangent 0 of dtype float64 and shape [4]")) << s.to_string();
  }
  v[0] = *random_tensor(DType::kFloat64, {4}, 5);
  EXPECT_TRUE(vjp(rt, context, f, params, active, v).ok());
}

TEST(Functional, ReusingOutputsSkipsPrimalRecomputation) {
  // loss = sum(sin(sin(x))), with s1 = sin(x) and s2 = sin(s1) also returned.
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {4}, "x");
  ProgramValue s1 = *b.emit(CoreSemanticOp::kSin, {x});
  ProgramValue s2 = *b.emit(CoreSemanticOp::kSin, {s1});
  ProgramValue loss = *sum_all(b, s2);
  FrozenProgram f = *b.freeze({loss, s1, s2});
  AdContext context;
  const std::uint32_t active[] = {0};
  auto reuse = context.vjp_reusing_outputs(f, active, 1);
  ASSERT_TRUE(reuse.ok()) << reuse.status().to_string();
  // The backward program reads s1 instead of recomputing it: no sin in it.
  for (program::OperationView op : reuse->backward.program->operations()) EXPECT_NE(op.core_op(), CoreSemanticOp::kSin);
  ASSERT_EQ(reuse->reused_outputs.size(), 1u);
  EXPECT_EQ(reuse->reused_outputs[0], 1u);
  const Tensor xv = *random_tensor(DType::kFloat64, {4}, 5);
  const std::vector<Tensor> y = testing::evaluate(f, std::vector<Tensor>{xv});
  const Tensor one = *Tensor::from_values<double>({1.0}, {});
  const auto g = testing::evaluate(reuse->backward, std::vector<Tensor>{xv, y[1], one});
  const auto expected = testing::evaluate(*grad_program(context, f, active), std::vector<Tensor>{xv});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(check_allclose(g[0], expected[0]).ok());
  EXPECT_EQ(context.vjp_reusing_outputs(f, active, 4).status().code(), ErrorCode::kInvalidArgument);
}

// prepare_vjp_cotangents: the backward program prepared once gives
// vjp_cotangents' gradients on every run; null where it cannot run on the
// parameters and cotangents alone.
TEST(Functional, PreparedVjpCotangentsRunAsVjpCotangents) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  AdContext context;
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
  ProgramValue a = *b.add_input(DType::kFloat64, {3, 3}, "A");
  ProgramValue ax = *b.emit(CoreSemanticOp::kDotGeneral, {a, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  FrozenProgram f = *b.freeze({*b.emit(CoreSemanticOp::kTanh, {ax})});
  const std::uint32_t active[] = {0, 1};
  std::vector<Tensor> inputs{*random_tensor(DType::kFloat64, {3}, 1), *random_tensor(DType::kFloat64, {3, 3}, 2),
                             *random_tensor(DType::kFloat64, {3}, 3)};
  auto prepared = prepare_vjp_cotangents(rt, context, f, active, runtime::InputSignature::of(inputs));
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ASSERT_NE(*prepared, nullptr);
  for (std::uint32_t seed = 4; seed < 7; ++seed) {  // new values, the same signature
    inputs[0] = *random_tensor(DType::kFloat64, {3}, seed);
    auto got = rt.run_prepared(**prepared, inputs);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    auto want = vjp_cotangents(rt, context, f, std::span<const Tensor>(inputs.data(), 2), active,
                               std::span<const Tensor>(&inputs[2], 1));
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_EQ(got->size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) EXPECT_TRUE(check_allclose((*got)[k], (*want)[k]).ok()) << seed << " " << k;
  }
  // A captured input, or an active input nothing depends on: null.
  const Tensor x0 = *random_tensor(DType::kFloat64, {3}, 7);
  const std::vector<Tensor> scalar_inputs{inputs[0], inputs[1], *Tensor::from_values<double>({1.0}, {})};
  auto captured =
      prepare_vjp_cotangents(rt, context, scalar_program(x0), active, runtime::InputSignature::of(scalar_inputs));
  ASSERT_TRUE(captured.ok()) << captured.status().to_string();
  EXPECT_EQ(*captured, nullptr);
  ProgramBuilder u;
  ProgramValue y = *u.add_input(DType::kFloat64, {3}, "y");
  (void)*u.add_input(DType::kFloat64, {3, 3}, "unused");
  FrozenProgram g = *u.freeze({*u.emit(CoreSemanticOp::kSin, {y})});
  auto unused = prepare_vjp_cotangents(rt, context, g, active, runtime::InputSignature::of(inputs));
  ASSERT_TRUE(unused.ok()) << unused.status().to_string();
  EXPECT_EQ(*unused, nullptr);
}

// --- complex convention (Note [Complex convention]) ---

struct ComplexLoss {
  const char* name;
  /// The loss on z (complex128 [4]) and w (complex128 [4], inactive).
  std::function<Result<ProgramValue>(ProgramBuilder&, ProgramValue, ProgramValue)> body;
  const char* torch;  ///< the same loss in torch, of z and w
};

Result<ProgramValue> real_sum(ProgramBuilder& b, ProgramValue v) {
  TENFERRO_ASSIGN_OR_RETURN(ValueMetadata m, b.metadata(v));
  if (is_complex(m.dtype)) {
    TENFERRO_ASSIGN_OR_RETURN(v, b.emit(CoreSemanticOp::kReal, {v}));
  }
  return sum_all(b, v);
}

std::vector<ComplexLoss> complex_losses() {
  using B = ProgramBuilder;
  using V = ProgramValue;
  return {
      {"holomorphic: Re sum(exp(z) w)",
       [](B& b, V z, V w) -> Result<V> {
         TENFERRO_ASSIGN_OR_RETURN(V e, b.emit(CoreSemanticOp::kExp, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V p, b.emit(CoreSemanticOp::kMul, {e, w}));
         return real_sum(b, p);
       },
       "(torch.exp(z) * w).real.sum()"},
      {"abs: sum |z|",
       [](B& b, V z, V) -> Result<V> {
         TENFERRO_ASSIGN_OR_RETURN(V a, b.emit(CoreSemanticOp::kAbs, {z}));
         return sum_all(b, a);
       },
       "z.abs().sum()"},
      {"real and imag: sum(real(z)^2 + 3 imag(z))",
       [](B& b, V z, V) -> Result<V> {
         TENFERRO_ASSIGN_OR_RETURN(V re, b.emit(CoreSemanticOp::kReal, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V im, b.emit(CoreSemanticOp::kImag, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V re2, b.emit(CoreSemanticOp::kMul, {re, re}));
         TENFERRO_ASSIGN_OR_RETURN(V three, b.constant(program::Literal::scalar(Scalar::of(3.0))));
         TENFERRO_ASSIGN_OR_RETURN(
             V three_b, b.emit(CoreSemanticOp::kBroadcastInDim, {three}, program::BroadcastInDimAttributes{{4}, {}}));
         TENFERRO_ASSIGN_OR_RETURN(V im3, b.emit(CoreSemanticOp::kMul, {im, three_b}));
         TENFERRO_ASSIGN_OR_RETURN(V s, b.emit(CoreSemanticOp::kAdd, {re2, im3}));
         return sum_all(b, s);
       },
       "(z.real ** 2 + 3 * z.imag).sum()"},
      {"conj: Re sum(conj(z) w)",
       [](B& b, V z, V w) -> Result<V> {
         TENFERRO_ASSIGN_OR_RETURN(V c, b.emit(CoreSemanticOp::kConj, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V p, b.emit(CoreSemanticOp::kMul, {c, w}));
         return real_sum(b, p);
       },
       "(z.conj() * w).real.sum()"},
      {"mixed: sum |sin(z) conj(z)| + Re sum(z z w)",
       [](B& b, V z, V w) -> Result<V> {
         TENFERRO_ASSIGN_OR_RETURN(V s, b.emit(CoreSemanticOp::kSin, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V c, b.emit(CoreSemanticOp::kConj, {z}));
         TENFERRO_ASSIGN_OR_RETURN(V p, b.emit(CoreSemanticOp::kMul, {s, c}));
         TENFERRO_ASSIGN_OR_RETURN(V a, b.emit(CoreSemanticOp::kAbs, {p}));
         TENFERRO_ASSIGN_OR_RETURN(V l1, sum_all(b, a));
         TENFERRO_ASSIGN_OR_RETURN(V zz, b.emit(CoreSemanticOp::kMul, {z, z}));
         TENFERRO_ASSIGN_OR_RETURN(V zzw, b.emit(CoreSemanticOp::kMul, {zz, w}));
         TENFERRO_ASSIGN_OR_RETURN(V l2, real_sum(b, zzw));
         return b.emit(CoreSemanticOp::kAdd, {l1, l2});
       },
       "(torch.sin(z) * z.conj()).abs().sum() + (z * z * w).real.sum()"},
  };
}

FrozenProgram complex_program(const ComplexLoss& loss) {
  ProgramBuilder b;
  ProgramValue z = *b.add_input(DType::kComplex128, {4}, "z");
  ProgramValue w = *b.add_input(DType::kComplex128, {4}, "w");
  auto l = loss.body(b, z, w);
  EXPECT_TRUE(l.ok()) << l.status().to_string();
  return *b.freeze({*l});
}

// grad = dL/dx + i dL/dy by central differences, element by element.
Tensor finite_difference_complex_gradient(const FrozenProgram& f, const Tensor& z, const Tensor& w) {
  const double h = 1e-6;
  std::vector<std::complex<double>> zv = *z.to_vector<std::complex<double>>();
  std::vector<std::complex<double>> g(zv.size());
  auto loss = [&](const std::vector<std::complex<double>>& values) {
    const Tensor t =
        *Tensor::from_values<std::complex<double>>(std::span<const std::complex<double>>(values), z.shape());
    return (*testing::evaluate(f, std::vector<Tensor>{t, w})[0].to_vector<double>())[0];
  };
  for (std::size_t i = 0; i < zv.size(); ++i) {
    double parts[2];
    for (int part = 0; part < 2; ++part) {
      const std::complex<double> step = part == 0 ? std::complex<double>(h, 0) : std::complex<double>(0, h);
      auto plus = zv, minus = zv;
      plus[i] += step;
      minus[i] -= step;
      parts[part] = (loss(plus) - loss(minus)) / (2 * h);
    }
    g[i] = {parts[0], parts[1]};
  }
  return *Tensor::from_values<std::complex<double>>(std::span<const std::complex<double>>(g), z.shape());
}

TEST(ComplexConvention, GradientIsDxPlusIDyLikePyTorch) {
  AdContext context;
  const Tensor z = *random_tensor(DType::kComplex128, {4}, 21);
  const Tensor w = *random_tensor(DType::kComplex128, {4}, 22);
  const std::uint32_t active[] = {0};
  const std::vector<ComplexLoss> losses = complex_losses();
  std::vector<Tensor> ours;
  std::string script = "import numpy as np\nimport torch\nw = torch.tensor(" + testing::numpy_literal(w) + ")\n";
  for (const ComplexLoss& loss : losses) {
    SCOPED_TRACE(loss.name);
    FrozenProgram f = complex_program(loss);
    auto g = grad_program(context, f, active);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ours.push_back(testing::evaluate(*g, std::vector<Tensor>{z, w})[0]);
    Status s = check_allclose(ours.back(), finite_difference_complex_gradient(f, z, w), {1e-6, 1e-8, true});
    EXPECT_TRUE(s.ok()) << "vs finite differences: " << s.to_string();
    script += "z = torch.tensor(" + testing::numpy_literal(z) + ", requires_grad=True)\nL = " + loss.torch +
              "\nL.backward()\nprint(' '.join(repr(float(p)) for v in z.grad.resolve_conj().numpy().ravel() for p in "
              "(v.real, "
              "v.imag)))\n";
  }
  // One python process for every loss (importing torch is slow).
  const std::optional<std::string> out = testing::run_python(script);
  if (!out) GTEST_SKIP() << "torch is not available; checked against finite differences only";
  std::istringstream lines(*out);
  std::string line;
  for (std::size_t k = 0; k < losses.size(); ++k) {
    ASSERT_TRUE(std::getline(lines, line)) << *out;
    const Tensor expected = *testing::parse_tensor(line, DType::kComplex128, {4});
    Status t = check_allclose(ours[k], expected, {1e-10, 1e-12, true});
    EXPECT_TRUE(t.ok()) << losses[k].name << " vs torch: " << t.to_string();
  }
}

// docs/ad.md, "Batching (vmap) and recorded functions": the JVP program
// batched over its tangent input (Note [Batching transform]) and run on the
// identity basis gives the whole Jacobian, column k equal to the JVP of e_k.
TEST(Functional, BatchedJvpProgramGivesTheJacobian) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
  ProgramValue a = *b.add_input(DType::kFloat64, {3, 3}, "A");
  ProgramValue ax = *b.emit(CoreSemanticOp::kDotGeneral, {a, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  const FrozenProgram f = *b.freeze({*b.emit(CoreSemanticOp::kMul, {*b.emit(CoreSemanticOp::kTanh, {ax}), x})});
  AdContext context;
  const std::uint32_t active[] = {0};
  Result<JvpProgram> jvp_program = context.jvp(f, active);
  ASSERT_TRUE(jvp_program.ok()) << jvp_program.status().to_string();
  const bool batched[] = {false, false, true};  // [x, A, dx]
  Result<std::shared_ptr<const program::SemanticProgram>> columns =
      compiler::batch_program(*jvp_program->program.program, batched, 3);
  ASSERT_TRUE(columns.ok()) << columns.status().to_string();
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 1);
  const Tensor av = *random_tensor(DType::kFloat64, {3, 3}, 2);
  Tensor identity = *Tensor::zeros({3, 3}, DType::kFloat64);
  for (int k = 0; k < 3; ++k) static_cast<double*>(identity.data())[4 * k] = 1.0;
  Result<std::vector<Tensor>> all = tenferro::testing::evaluate_reference(**columns, {xv, av, identity});
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  for (int k = 0; k < 3; ++k) {
    Tensor e = *Tensor::zeros({3}, DType::kFloat64);
    static_cast<double*>(e.data())[k] = 1.0;
    Result<JvpResult> one = run_jvp(rt, *jvp_program, std::vector<Tensor>{xv, av}, std::vector<Tensor>{e});
    ASSERT_TRUE(one.ok()) << one.status().to_string();
    Tensor column = *Tensor::empty({3}, DType::kFloat64);
    std::memcpy(column.data(), static_cast<const double*>((*all)[1].data()) + 3 * k, 3 * sizeof(double));
    EXPECT_TRUE(check_allclose(column, one->tangents[0]).ok()) << "column " << k;
  }
}

}  // namespace
}  // namespace tenferro::ad
