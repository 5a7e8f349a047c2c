// GradientTape: eager recording on a runtime, backward() with gradient
// accumulation and clearing, residual reuse, re-recording hitting the
// transform cache, extension ops on the tape, and typed errors.
#include <cmath>

#include <gtest/gtest.h>

#include "ad/ad_test_support.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/ad_runtime/gradient_tape.h"
#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/testing/reference_engine.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::ad {
namespace {

using program::CoreSemanticOp;
using tenferro::testing::check_allclose;
using tenferro::testing::random_tensor;

// loss = sum(tanh(W x) * x) recorded on `tape`.
Result<TapeTensor> record_loss(GradientTape& tape, TapeTensor w, TapeTensor x) {
  TENFERRO_ASSIGN_OR_RETURN(
      TapeTensor wx, tape.apply(CoreSemanticOp::kDotGeneral, {w, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}}));
  TENFERRO_ASSIGN_OR_RETURN(TapeTensor t, tape.apply(CoreSemanticOp::kTanh, {wx}));
  TENFERRO_ASSIGN_OR_RETURN(TapeTensor p, tape.apply(CoreSemanticOp::kMul, {t, x}));
  return tape.apply(CoreSemanticOp::kReduceSum, {p}, program::ReduceAttributes{{0}});
}

// The same loss as a program, for the expected gradients.
program::FrozenProgram loss_program() {
  program::ProgramBuilder b;
  auto w = *b.add_input(DType::kFloat64, {3, 3}, "W");
  auto x = *b.add_input(DType::kFloat64, {3}, "x");
  auto wx = *b.emit(CoreSemanticOp::kDotGeneral, {w, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  auto t = *b.emit(CoreSemanticOp::kTanh, {wx});
  auto p = *b.emit(CoreSemanticOp::kMul, {t, x});
  return *b.freeze({*b.emit(CoreSemanticOp::kReduceSum, {p}, program::ReduceAttributes{{0}})});
}

TEST(GradientTape, BackwardAccumulatesAndClears) {
  auto stats = std::make_shared<tenferro::testing::ReferenceEngineStats>();
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime(stats);
  GradientTape tape(rt);
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 1);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 2);
  TapeTensor w = *tape.variable(wv, "W");
  TapeTensor x = *tape.variable(xv, "x");
  auto loss = record_loss(tape, w, x);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  EXPECT_FALSE(tape.grad(w)->defined());
  Status s = tape.backward(*loss);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(stats->operations.load(), 0u);
  EXPECT_GT(tape.metrics().reused_values, 0u);  // recorded tensors served as residuals

  AdContext reference;
  const std::uint32_t active[] = {0, 1};
  const std::vector<Tensor> expected =
      testing::evaluate(*grad_program(reference, loss_program(), active), std::vector<Tensor>{wv, xv});
  EXPECT_TRUE(check_allclose(*tape.grad(w), expected[0]).ok()) << tenferro::testing::format_tensor(*tape.grad(w));
  EXPECT_TRUE(check_allclose(*tape.grad(x), expected[1]).ok());

  // A second backward accumulates.
  ASSERT_TRUE(tape.backward(*loss).ok());
  EXPECT_TRUE(check_allclose(*tape.grad(x), testing::axpy(expected[1], 1.0, expected[1])).ok());
  tape.zero_grad();
  EXPECT_FALSE(tape.grad(x)->defined());

  // clear(): recorded tensors go stale, variables stay; re-recording the
  // same structure reuses the transformed program.
  ASSERT_TRUE(tape.clear().ok());
  EXPECT_EQ(tape.value(*loss).status().code(), ErrorCode::kFailedPrecondition);
  auto again = record_loss(tape, w, x);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  const std::uint64_t hits = tape.ad_context().cache_stats().hits;
  ASSERT_TRUE(tape.backward(*again).ok());
  EXPECT_GT(tape.ad_context().cache_stats().hits, hits);
  EXPECT_TRUE(check_allclose(*tape.grad(w), expected[0]).ok());
  EXPECT_EQ(tape.metrics().backward_calls, 3u);
}

// Tapes sharing a compiler and an AdContext (as tenferro.grad's tapes on
// one Python runtime do): the second recording of the same function
// compiles nothing and gives the same gradients.
TEST(GradientTape, TapesSharingACompilerCompileARecordingOnce) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto context = std::make_shared<AdContext>();
  auto compiler = std::make_shared<compiler::GraphCompiler>();
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 1);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 2);
  std::vector<Tensor> gradients;
  for (int k = 0; k < 2; ++k) {
    GradientTape tape(rt, context, runtime::Placement::default_placement(), compiler);
    TapeTensor w = *tape.variable(wv, "W");
    TapeTensor x = *tape.variable(xv, "x");
    auto loss = record_loss(tape, w, x);
    ASSERT_TRUE(loss.ok()) << loss.status().to_string();
    ASSERT_TRUE(tape.backward(*loss).ok());
    gradients.push_back(*tape.grad(w));
    EXPECT_EQ(compiler->cache_stats().misses, 1u);
    EXPECT_EQ(compiler->cache_stats().hits, static_cast<std::uint64_t>(k));
  }
  EXPECT_TRUE(check_allclose(gradients[1], gradients[0]).ok());
  // A tape without a shared compiler has its own.
  GradientTape own(rt, context);
  TapeTensor w = *own.variable(wv, "W");
  TapeTensor x = *own.variable(xv, "x");
  ASSERT_TRUE(own.backward(*record_loss(own, w, x)).ok());
  EXPECT_EQ(compiler->cache_stats().misses, 1u);
  EXPECT_EQ(compiler->cache_stats().hits, 1u);
}

// backward(output, cotangent): J^T ct of a tensor output, recording nothing,
// so that a second cotangent reuses the compiled program.
TEST(GradientTape, CotangentOfATensorOutput) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto compiler = std::make_shared<compiler::GraphCompiler>();
  GradientTape tape(rt, nullptr, runtime::Placement::default_placement(), compiler);
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 1);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 2);
  TapeTensor w = *tape.variable(wv, "W");
  TapeTensor x = *tape.variable(xv, "x");
  // y = tanh(W x) * x, a vector.
  TapeTensor wx = *tape.apply(CoreSemanticOp::kDotGeneral, {w, x}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
  TapeTensor y = *tape.apply(CoreSemanticOp::kMul, {*tape.apply(CoreSemanticOp::kTanh, {wx}), x});
  const std::uint64_t recorded = tape.metrics().operations_recorded;
  for (int k = 0; k < 2; ++k) {
    // The cotangent e_k picks row k of the Jacobian: d y_k / d x.
    std::vector<double> e(3, 0.0);
    e[static_cast<std::size_t>(k)] = 1.0;
    tape.zero_grad();
    Status s = tape.backward(y, *Tensor::from_values<double>(e, {3}));
    ASSERT_TRUE(s.ok()) << s.to_string();
    // Reference: the scalar loss y_k recorded on a fresh tape.
    GradientTape ref(rt);
    TapeTensor rw = *ref.variable(wv, "W");
    TapeTensor rx = *ref.variable(xv, "x");
    TapeTensor rwx = *ref.apply(CoreSemanticOp::kDotGeneral, {rw, rx}, program::DotGeneralAttributes{{}, {}, {1}, {0}});
    TapeTensor ry = *ref.apply(CoreSemanticOp::kMul, {*ref.apply(CoreSemanticOp::kTanh, {rwx}), rx});
    TapeTensor pick = *ref.constant(*Tensor::from_values<double>(e, {3}));
    ASSERT_TRUE(ref.backward(*ref.apply(CoreSemanticOp::kReduceSum, {*ref.apply(CoreSemanticOp::kMul, {ry, pick})},
                                        program::ReduceAttributes{{0}}))
                    .ok());
    EXPECT_TRUE(check_allclose(*tape.grad(x), *ref.grad(rx)).ok()) << k;
    EXPECT_TRUE(check_allclose(*tape.grad(w), *ref.grad(rw)).ok()) << k;
  }
  EXPECT_EQ(tape.metrics().operations_recorded, recorded);
  EXPECT_EQ(compiler->cache_stats().misses, 1u);
  EXPECT_EQ(compiler->cache_stats().hits, 1u);
  // A variable is its own output: the gradient is the cotangent.
  tape.zero_grad();
  ASSERT_TRUE(tape.backward(x, xv).ok());
  EXPECT_TRUE(check_allclose(*tape.grad(x), xv).ok());
  // Typed errors; nothing accumulated.
  tape.zero_grad();
  EXPECT_EQ(tape.backward(y, *Tensor::from_values<float>({1, 2, 3}, {3})).code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(tape.backward(y, *Tensor::from_values<double>({1, 2}, {2})).code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(tape.backward(y, Tensor()).code(), ErrorCode::kDTypeMismatch);
  EXPECT_FALSE(tape.grad(x)->defined());
}

TEST(GradientTape, ConstantsAndNonDifferentiablePaths) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  GradientTape tape(rt);
  const Tensor xv = *random_tensor(DType::kFloat64, {4}, 3);
  const Tensor cv = *random_tensor(DType::kFloat64, {4}, 4);
  TapeTensor x = *tape.variable(xv, "x");
  TapeTensor unused = *tape.variable(*random_tensor(DType::kFloat64, {2}, 5), "unused");
  TapeTensor c = *tape.constant(cv, "c");
  // loss = sum(exp(x) * c) + sum(convert(argmax-free compare)) (the latter has no gradient).
  TapeTensor e = *tape.apply(CoreSemanticOp::kExp, {x});
  TapeTensor p = *tape.apply(CoreSemanticOp::kMul, {e, c});
  TapeTensor cmp =
      *tape.apply(CoreSemanticOp::kCompare, {x, c}, program::CompareAttributes{program::ComparisonDirection::kLt});
  TapeTensor f = *tape.apply(CoreSemanticOp::kConvert, {cmp}, program::ConvertAttributes{DType::kFloat64});
  TapeTensor q = *tape.apply(CoreSemanticOp::kAdd, {p, f});
  TapeTensor loss = *tape.apply(CoreSemanticOp::kReduceSum, {q}, program::ReduceAttributes{{0}});
  const Status backward = tape.backward(loss);
  ASSERT_TRUE(backward.ok()) << backward.to_string();
  // d/dx = exp(x) * c.
  const std::vector<double> xs = *xv.to_vector<double>(), cs = *cv.to_vector<double>();
  std::vector<double> g(4);
  for (std::size_t i = 0; i < 4; ++i) g[i] = std::exp(xs[i]) * cs[i];
  EXPECT_TRUE(check_allclose(*tape.grad(x), *Tensor::from_values<double>(std::span<const double>(g), {4})).ok());
  EXPECT_FALSE(tape.grad(unused)->defined());

  // A loss that depends on x only through an operation of zero derivative
  // (sign): backward succeeds and adds nothing, so x's gradient is zero
  // (torch.autograd gives zeros; this was a kFailedPrecondition).
  tape.zero_grad();
  TapeTensor s = *tape.apply(CoreSemanticOp::kSign, {x});
  TapeTensor flat = *tape.apply(CoreSemanticOp::kReduceSum, {s}, program::ReduceAttributes{{0}});
  const Status zero = tape.backward(flat);
  ASSERT_TRUE(zero.ok()) << zero.to_string();
  EXPECT_FALSE(tape.grad(x)->defined());
}

// Note [Tape forward mode]: jvp and hvp of a recording equal the functional
// jvp / hvp of the same loss as a program.
TEST(GradientTape, ForwardModeAndHessianVectorProductsOfTheRecording) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto context = std::make_shared<AdContext>();
  GradientTape tape(rt, context);
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 21);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 22);
  TapeTensor w = *tape.variable(wv, "W");
  TapeTensor x = *tape.variable(xv, "x");
  TapeTensor loss = *record_loss(tape, w, x);
  const Tensor uw = *random_tensor(DType::kFloat64, {3, 3}, 23);
  const Tensor ux = *random_tensor(DType::kFloat64, {3}, 24);
  const program::FrozenProgram f = loss_program();
  const Tensor params[] = {wv, xv};
  const std::uint32_t active[] = {0, 1};
  const Tensor u[] = {uw, ux};

  Result<Tensor> tangent = tape.jvp(loss, u);
  ASSERT_TRUE(tangent.ok()) << tangent.status().to_string();
  Result<JvpResult> want = ad::jvp(rt, *context, f, params, active, u);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  EXPECT_TRUE(check_allclose(*tangent, want->tangents[0]).ok());
  // An undefined tangent is zero: only x moves.
  const Tensor only_x[] = {Tensor(), ux};
  const Tensor zero_w[] = {*Tensor::zeros({3, 3}, DType::kFloat64), ux};
  EXPECT_TRUE(
      check_allclose(*tape.jvp(loss, only_x), ad::jvp(rt, *context, f, params, active, zero_w)->tangents[0]).ok());

  Result<std::vector<Tensor>> hv = tape.hvp(loss, u);
  ASSERT_TRUE(hv.ok()) << hv.status().to_string();
  Result<std::vector<Tensor>> want_hv = ad::hvp(rt, *context, f, params, active, u);
  ASSERT_TRUE(want_hv.ok()) << want_hv.status().to_string();
  ASSERT_EQ(hv->size(), 2u);
  EXPECT_TRUE(check_allclose((*hv)[0], (*want_hv)[0]).ok());
  EXPECT_TRUE(check_allclose((*hv)[1], (*want_hv)[1]).ok());
  // Neither records nor touches the gradients.
  EXPECT_FALSE(tape.grad(x)->defined());

  const Tensor one[] = {uw};
  EXPECT_EQ(tape.jvp(loss, one).status().code(), ErrorCode::kInvalidArgument);
  const Tensor wrong_dtype[] = {uw, *random_tensor(DType::kFloat32, {3}, 25)};
  EXPECT_EQ(tape.jvp(loss, wrong_dtype).status().code(), ErrorCode::kDTypeMismatch);
  const Tensor wrong_shape[] = {uw, *random_tensor(DType::kFloat64, {4}, 26)};
  EXPECT_EQ(tape.hvp(loss, wrong_shape).status().code(), ErrorCode::kShapeMismatch);
  TapeTensor vector_output = *tape.apply(CoreSemanticOp::kTanh, {x});
  EXPECT_EQ(tape.hvp(vector_output, u).status().code(), ErrorCode::kInvalidArgument);
  // A vector output's jvp: d tanh(x) = (1 - tanh^2) dx.
  const Tensor t = *tape.value(vector_output);
  const std::vector<double> tv = *t.to_vector<double>(), dx = *ux.to_vector<double>();
  std::vector<double> expected(3);
  for (std::size_t i = 0; i < 3; ++i) expected[i] = (1 - tv[i] * tv[i]) * dx[i];
  EXPECT_TRUE(
      check_allclose(*tape.jvp(vector_output, u), *Tensor::from_values<double>(std::span<const double>(expected), {3}))
          .ok());
}

// Note [Nested tapes]: the inner tape's gradient, recorded on the outer
// tape, is differentiated again there. With W a constant of the inner tape
// that stands for the outer variable W (a closed-over value), the outer
// backward of v . grad_x f gives (d2f/dW dx) v and (d2f/dx2) v: the
// Hessian of f with respect to (W, x) times (0, v).
TEST(GradientTape, GradOfGradOnANestedTape) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto context = std::make_shared<AdContext>();
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 31);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 32);
  const Tensor vv = *random_tensor(DType::kFloat64, {3}, 33);
  GradientTape outer(rt, context);
  TapeTensor w = *outer.variable(wv, "W");
  TapeTensor x = *outer.variable(xv, "x");
  TapeTensor v = *outer.constant(vv, "v");

  GradientTape inner(rt, context);
  TapeTensor wi = *inner.constant(outer, w, "W");
  TapeTensor xi = *inner.variable(outer, x, "x");
  TapeTensor loss = *record_loss(inner, wi, xi);
  TapeTensor seed = *outer.constant(*Tensor::scalar<double>(1.0));
  Result<std::vector<TapeTensor>> onto = inner.vjp_onto(outer, loss, seed);
  ASSERT_TRUE(onto.ok()) << onto.status().to_string();
  ASSERT_EQ(onto->size(), 2u);  // the loss, then the gradient of the one variable
  EXPECT_TRUE(check_allclose(*outer.value((*onto)[0]), *inner.value(loss)).ok());
  EXPECT_TRUE(check_allclose(*outer.value(*inner.value_onto(outer, loss)), *inner.value(loss)).ok());
  EXPECT_FALSE(inner.grad(xi)->defined());  // the inner gradients are left alone

  AdContext reference;
  const std::uint32_t active[] = {0, 1};
  const std::vector<Tensor> params = {wv, xv};
  const std::vector<Tensor> grads = testing::evaluate(*grad_program(reference, loss_program(), active), params);
  EXPECT_TRUE(check_allclose(*outer.value((*onto)[1]), grads[1]).ok());

  TapeTensor gv = *outer.apply(CoreSemanticOp::kMul, {(*onto)[1], v});
  TapeTensor s = *outer.apply(CoreSemanticOp::kReduceSum, {gv}, program::ReduceAttributes{{0}});
  const Status backward = outer.backward(s);
  ASSERT_TRUE(backward.ok()) << backward.to_string();
  const Tensor u[] = {*Tensor::zeros({3, 3}, DType::kFloat64), vv};
  const std::vector<Tensor> hv = *ad::hvp(rt, reference, loss_program(), params, active, u);
  EXPECT_TRUE(check_allclose(*outer.grad(w), hv[0]).ok()) << tenferro::testing::format_tensor(*outer.grad(w));
  EXPECT_TRUE(check_allclose(*outer.grad(x), hv[1]).ok()) << tenferro::testing::format_tensor(*outer.grad(x));
}

// jvp_onto and hvp_onto equal jvp and hvp of the inner recording; nesting
// has any depth (the third derivative of sum(sin x) is -cos x); typed errors.
TEST(GradientTape, ForwardModeAndDeeperNesting) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto context = std::make_shared<AdContext>();
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 41);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 42);
  const Tensor uw = *random_tensor(DType::kFloat64, {3, 3}, 43);
  const Tensor ux = *random_tensor(DType::kFloat64, {3}, 44);
  GradientTape outer(rt, context);
  TapeTensor x = *outer.variable(xv, "x");
  GradientTape inner(rt, context);
  TapeTensor wi = *inner.variable(wv, "W");  // not linked: an outer constant
  TapeTensor xi = *inner.variable(outer, x, "x");
  TapeTensor loss = *record_loss(inner, wi, xi);
  const Tensor u[] = {uw, ux};
  const TapeTensor tangents[] = {*outer.constant(uw), *outer.constant(ux)};
  Result<std::vector<TapeTensor>> jv = inner.jvp_onto(outer, loss, tangents);
  ASSERT_TRUE(jv.ok()) << jv.status().to_string();
  EXPECT_TRUE(check_allclose(*outer.value((*jv)[1]), *inner.jvp(loss, u)).ok());
  Result<std::vector<TapeTensor>> hv = inner.hvp_onto(outer, loss, tangents);
  ASSERT_TRUE(hv.ok()) << hv.status().to_string();
  const std::vector<Tensor> want = *inner.hvp(loss, u);
  ASSERT_EQ(hv->size(), 2u);
  EXPECT_TRUE(check_allclose(*outer.value((*hv)[0]), want[0]).ok());
  EXPECT_TRUE(check_allclose(*outer.value((*hv)[1]), want[1]).ok());
  // An invalid tangent is zero.
  const TapeTensor only_x[] = {TapeTensor(), tangents[1]};
  const Tensor zero_w[] = {*Tensor::zeros({3, 3}, DType::kFloat64), ux};
  EXPECT_TRUE(check_allclose(*outer.value((*inner.jvp_onto(outer, loss, only_x))[1]), *inner.jvp(loss, zero_w)).ok());

  // Typed errors, nothing recorded on the inner tape.
  GradientTape third(rt, context);
  TapeTensor y = *third.variable(xv, "y");
  EXPECT_EQ(inner.vjp_onto(inner, loss, loss).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(inner.variable(inner, xi).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(inner.vjp_onto(outer, loss, x).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(inner.vjp_onto(outer, loss, y).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(inner.vjp_onto(third, loss, *third.constant(*Tensor::scalar<double>(1.0))).status().code(),
            ErrorCode::kInvalidArgument);  // x stands for a tensor of `outer`, not `third`
  const TapeTensor one[] = {tangents[1]};
  EXPECT_EQ(inner.jvp_onto(outer, loss, one).status().code(), ErrorCode::kInvalidArgument);
  const TapeTensor wrong[] = {tangents[1], tangents[1]};
  EXPECT_EQ(inner.hvp_onto(outer, loss, wrong).status().code(), ErrorCode::kShapeMismatch);

  // d3/dx3 sum(sin x) = -cos x through three tapes.
  GradientTape t0(rt, context), t1(rt, context), t2(rt, context);
  TapeTensor x0 = *t0.variable(xv, "x");
  TapeTensor x1 = *t1.variable(t0, x0);
  TapeTensor x2 = *t2.variable(t1, x1);
  TapeTensor f2 =
      *t2.apply(CoreSemanticOp::kReduceSum, {*t2.apply(CoreSemanticOp::kSin, {x2})}, program::ReduceAttributes{{0}});
  TapeTensor g1 = (*t2.vjp_onto(t1, f2, *t1.constant(*Tensor::scalar<double>(1.0))))[1];  // cos x
  TapeTensor f1 = *t1.apply(CoreSemanticOp::kReduceSum, {g1}, program::ReduceAttributes{{0}});
  TapeTensor g0 = (*t1.vjp_onto(t0, f1, *t0.constant(*Tensor::scalar<double>(1.0))))[1];  // -sin x
  TapeTensor f0 = *t0.apply(CoreSemanticOp::kReduceSum, {g0}, program::ReduceAttributes{{0}});
  ASSERT_TRUE(t0.backward(f0).ok());
  std::vector<double> expected = *xv.to_vector<double>();
  for (double& e : expected) e = -std::cos(e);
  const Tensor third_derivative = *t0.grad(x0);
  EXPECT_TRUE(
      check_allclose(third_derivative, *Tensor::from_values<double>(std::span<const double>(expected), {3})).ok())
      << tenferro::testing::format_tensor(third_derivative);
}

// Note [Derivative programs of a recording]: a second jvp / hvp on the
// same output of an unchanged recording (a Jacobian's or Hessian's next
// column) runs the kept program: no transform is looked up again; a new
// operation makes the recording new.
TEST(GradientTape, RepeatedForwardModeCallsReuseTheirProgram) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  auto context = std::make_shared<AdContext>();
  GradientTape tape(rt, context);
  TapeTensor w = *tape.variable(*random_tensor(DType::kFloat64, {3, 3}, 51), "W");
  TapeTensor x = *tape.variable(*random_tensor(DType::kFloat64, {3}, 52), "x");
  TapeTensor loss = *record_loss(tape, w, x);
  const Tensor u[] = {*random_tensor(DType::kFloat64, {3, 3}, 53), *random_tensor(DType::kFloat64, {3}, 54)};
  const auto lookups = [&] { return context->cache_stats().hits + context->cache_stats().misses; };
  const std::vector<Tensor> first = *tape.hvp(loss, u);
  const Tensor tangent = *tape.jvp(loss, u);
  const std::uint64_t after_first = lookups();
  for (int i = 0; i < 3; ++i) {
    const std::vector<Tensor> again = *tape.hvp(loss, u);
    EXPECT_TRUE(check_allclose(again[0], first[0]).ok());
    EXPECT_TRUE(check_allclose(again[1], first[1]).ok());
    EXPECT_TRUE(check_allclose(*tape.jvp(loss, u), tangent).ok());
  }
  EXPECT_EQ(lookups(), after_first);
  TapeTensor doubled = *tape.apply(CoreSemanticOp::kAdd, {loss, loss});
  const std::vector<Tensor> twice = *tape.hvp(doubled, u);
  EXPECT_GT(lookups(), after_first);
  std::vector<double> want = *first[1].to_vector<double>();
  for (double& v : want) v *= 2;
  EXPECT_TRUE(check_allclose(twice[1], *Tensor::from_values<double>(std::span<const double>(want), {3})).ok());
}

TEST(GradientTape, TypedErrors) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  GradientTape tape(rt);
  GradientTape other(rt);
  TapeTensor x = *tape.variable(*random_tensor(DType::kFloat64, {3}, 6), "x");
  TapeTensor c = *tape.constant(*random_tensor(DType::kFloat64, {3}, 7), "c");
  EXPECT_EQ(tape.variable(*Tensor::zeros({2}, DType::kInt64)).status().code(), ErrorCode::kDTypeMismatch);
  TapeTensor y = *tape.apply(CoreSemanticOp::kSin, {x});
  EXPECT_EQ(tape.backward(y).code(), ErrorCode::kInvalidArgument);  // not a scalar
  TapeTensor cs = *tape.apply(CoreSemanticOp::kReduceSum, {c}, program::ReduceAttributes{{0}});
  EXPECT_EQ(tape.backward(cs).code(), ErrorCode::kFailedPrecondition);  // no variable involved
  EXPECT_EQ(other.apply(CoreSemanticOp::kSin, {x}).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(tape.grad(y).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tape.apply(CoreSemanticOp::kAdd, {x, TapeTensor()}).status().code(), ErrorCode::kForeignValue);
  // A failed call records nothing and leaves the tape usable.
  EXPECT_FALSE(tape.apply(CoreSemanticOp::kDotGeneral, {x, c}, program::DotGeneralAttributes{{}, {}, {0}, {1}}).ok());
  TapeTensor loss = *tape.apply(CoreSemanticOp::kReduceSum, {y}, program::ReduceAttributes{{0}});
  const Status backward = tape.backward(loss);
  EXPECT_TRUE(backward.ok()) << backward.to_string();
}

// Handles name the recording, which moves with the tape: tapes returned
// from a factory or kept in a growing vector keep working; a moved-from
// tape answers kFailedPrecondition instead of crashing.
TEST(GradientTape, HandlesFollowAMovedTape) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  std::vector<GradientTape> tapes;
  tapes.emplace_back(rt);
  const Tensor wv = *random_tensor(DType::kFloat64, {3, 3}, 1);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 2);
  TapeTensor w = *tapes[0].variable(wv, "W");
  TapeTensor x = *tapes[0].variable(xv, "x");
  for (int i = 0; i < 8; ++i) tapes.emplace_back(rt);  // reallocates: tapes[0] is moved
  auto loss = record_loss(tapes[0], w, x);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  ASSERT_TRUE(tapes[0].backward(*loss).ok());
  GradientTape moved = std::move(tapes[0]);
  AdContext reference;
  const std::uint32_t active[] = {0, 1};
  const std::vector<Tensor> expected =
      testing::evaluate(*grad_program(reference, loss_program(), active), std::vector<Tensor>{wv, xv});
  EXPECT_TRUE(check_allclose(*moved.grad(w), expected[0]).ok());
  EXPECT_EQ(tapes[1].grad(w).status().code(), ErrorCode::kForeignValue);

  GradientTape& from = tapes[0];  // NOLINT(bugprone-use-after-move): the moved-from state is what is checked
  EXPECT_EQ(from.variable(xv).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.constant(xv).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.apply(CoreSemanticOp::kSin, {x}).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.apply(CoreSemanticOp::kSin, std::span<const TapeTensor>()).status().code(),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.backward(*loss).code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.grad(w).status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(from.clear().code(), ErrorCode::kFailedPrecondition);
  from.zero_grad();  // nothing to clear
}

// Note [Recorded functions]: the recording of sum(tanh(W x) * x) + c, with
// W and x its arguments and c a closed-over constant, run on new values
// equals the loss program there; the constant stays bound to its value.
TEST(GradientTape, RecordingRunsAsAFunctionOfItsArguments) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  GradientTape tape(rt);
  TapeTensor w = *tape.constant(*random_tensor(DType::kFloat64, {3, 3}, 1), "W");
  TapeTensor x = *tape.constant(*random_tensor(DType::kFloat64, {3}, 2), "x");
  const Tensor cv = *random_tensor(DType::kFloat64, {}, 3);
  TapeTensor c = *tape.constant(cv, "c");
  auto loss = record_loss(tape, w, x);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  TapeTensor shifted = *tape.apply(CoreSemanticOp::kAdd, {*loss, c});

  const TapeTensor arguments[] = {w, x};
  const TapeTensor outputs[] = {shifted, x};
  Result<program::FrozenProgram> f = tape.function(arguments, outputs);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->bindings.parameters().size(), 2u);
  EXPECT_EQ(f->bindings.num_bound(), 1u);

  const Tensor w2 = *random_tensor(DType::kFloat64, {3, 3}, 4);
  const Tensor x2 = *random_tensor(DType::kFloat64, {3}, 5);
  Result<runtime::TensorList> out = rt.run(*f, std::vector<Tensor>{w2, x2});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 2u);
  const Tensor expected = testing::evaluate(loss_program(), std::vector<Tensor>{w2, x2})[0];
  const double want = *static_cast<const double*>(expected.data()) + *static_cast<const double*>(cv.data());
  EXPECT_NEAR(*static_cast<const double*>((*out)[0].data()), want, 1e-12);
  EXPECT_TRUE(check_allclose((*out)[1], x2).ok());  // an argument as an output

  // Typed errors: a recorded value as an argument, arguments out of order,
  // repeated, no outputs, a foreign tensor.
  EXPECT_EQ(tape.function(std::vector<TapeTensor>{*loss}, outputs).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tape.function(std::vector<TapeTensor>{x, w}, outputs).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tape.function(std::vector<TapeTensor>{w, w}, outputs).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tape.function(arguments, std::span<const TapeTensor>()).status().code(), ErrorCode::kInvalidArgument);
  GradientTape other(rt);
  TapeTensor y = *other.constant(cv);
  EXPECT_EQ(tape.function(arguments, std::vector<TapeTensor>{y}).status().code(), ErrorCode::kForeignValue);
}

// apply_onto: a recording of an inner tape, as a function of an argument
// leaf, applied on the enclosing tape to another tensor; a leaf linked to
// an outer variable carries the gradient back to it.
TEST(GradientTape, RecordedFunctionAppliedOnTheEnclosingTape) {
  runtime::Runtime rt = *tenferro::testing::make_reference_runtime();
  GradientTape outer(rt);
  const Tensor wv = *random_tensor(DType::kFloat64, {3}, 1);
  const Tensor xv = *random_tensor(DType::kFloat64, {3}, 2);
  TapeTensor w = *outer.variable(wv, "w");
  TapeTensor x = *outer.variable(xv, "x");
  GradientTape inner(rt);
  TapeTensor a = *inner.constant(*random_tensor(DType::kFloat64, {3}, 3), "example");  // recorded on other values
  TapeTensor c = *inner.constant(outer, w);
  TapeTensor y = *inner.apply(CoreSemanticOp::kReduceSum, {*inner.apply(CoreSemanticOp::kMul, {a, c})},
                              program::ReduceAttributes{{0}});
  const TapeTensor arguments[] = {a};
  const TapeTensor outputs[] = {y};
  Result<program::FrozenProgram> f = inner.function(arguments, outputs);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TapeTensor values[] = {x};
  Result<std::vector<TapeTensor>> z = inner.apply_onto(outer, *f->program, arguments, values);
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  ASSERT_TRUE(outer.backward((*z)[0]).ok());
  EXPECT_TRUE(check_allclose(*outer.grad(w), xv).ok());  // d(x . w)/dw through the linked leaf
  EXPECT_TRUE(check_allclose(*outer.grad(x), wv).ok());  // and through the argument
  EXPECT_EQ(inner.apply_onto(outer, *f->program, arguments, std::span<const TapeTensor>()).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(inner.apply_onto(inner, *f->program, arguments, values).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::ad
