// TraceContext: recording, errors, cross-context rejection and import,
// captures and bindings, constants, scopes.
#include "tenferro/compiler/trace_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "program/extension_test_support.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT
using ::testing::HasSubstr;
namespace ref = ::tenferro::testing;
namespace pt = ::tenferro::program::testing;

TEST(TraceContext, RecordsOpsWithMetadataAndChainsResults) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "x");
  TracedValue w = *ctx.input(DType::kFloat64, {3, 4}, "w");
  Result<TracedValue> y = ctx.reduce_sum(ctx.exp(ctx.dot_general(x, w, {{}, {}, {1}, {0}})), {1});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DType::kFloat64);
  ASSERT_EQ(y->rank(), 1);
  EXPECT_EQ(y->shape()[0], x.shape()[0]);  // the symbol carries through
  EXPECT_EQ(ctx.num_operations(), 3u);
  TracedGraph g = *ctx.finish({y});
  EXPECT_EQ(g.context_id(), ctx.id());
  EXPECT_EQ(g.program()->num_inputs(), 2u);
  EXPECT_EQ(g.bindings().parameters().size(), 2u);
  Tensor xt = *ref::random_tensor(DType::kFloat64, {2, 3}, 1);
  Tensor wt = *ref::random_tensor(DType::kFloat64, {3, 4}, 2);
  std::vector<Tensor> out = *ref::evaluate_reference(*g.program(), {xt, wt});
  EXPECT_EQ(out[0].shape()[0], 2);
}

TEST(TraceContext, ErrorsAreCompileStageAtomicAndPropagate) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 3});
  TracedValue b = *ctx.input(DType::kFloat64, {3, 2});
  Result<TracedValue> bad = ctx.add(a, b);
  EXPECT_EQ(bad.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(bad.status().stage(), ErrorStage::kCompile);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("add"));
  EXPECT_EQ(ctx.num_operations(), 0u);  // nothing recorded
  // The first error propagates through nested calls; nothing more is recorded.
  Result<TracedValue> nested = ctx.neg(ctx.mul(ctx.add(a, b), a));
  EXPECT_EQ(nested.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(ctx.num_operations(), 0u);
  // The context stays usable.
  EXPECT_TRUE(ctx.add(a, a).ok());
  EXPECT_EQ(ctx.transpose(a, {0, 0}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(TraceContext, ValuesOfAnotherContextNeedAnExplicitImport) {
  TraceContext first;
  TracedValue x = *first.input(DType::kFloat64, {2, 2}, "x");
  TracedValue y = *first.neg(x);
  TraceContext second;
  TracedValue z = *second.input(DType::kFloat64, {2, 2}, "z");
  Result<TracedValue> mixed = second.add(z, y);
  EXPECT_EQ(mixed.status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(mixed.status().stage(), ErrorStage::kCompile);
  EXPECT_THAT(std::string(mixed.status().message()), HasSubstr("operand 1"));
  EXPECT_THAT(std::string(mixed.status().message()), HasSubstr("import"));
  EXPECT_EQ(second.finish({y}).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(second.neg(TracedValue()).status().code(), ErrorCode::kForeignValue);
  EXPECT_EQ(second.num_operations(), 0u);

  // Explicit import: finish the first trace and import it.
  TracedGraph g = *first.finish({y});
  auto imported = second.import(g, {z});
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  TracedValue sum = *second.add(z, (*imported)[0]);
  TracedGraph h = *second.finish({sum});
  Tensor zt = *ref::random_tensor(DType::kFloat64, {2, 2}, 3);
  std::vector<Tensor> out = *ref::evaluate_reference(*h.program(), {zt});
  EXPECT_TRUE(ref::check_allclose(out[0], *Tensor::zeros({2, 2}, DType::kFloat64)).ok());  // z + -z
  // Import checks its parameters.
  TracedValue wrong = *second.input(DType::kFloat32, {2, 2});
  EXPECT_EQ(second.import(g, {wrong}).status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(second.import(g, {}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(TraceContext, CapturesAreBoundOnceAndNeverInlined) {
  Tensor w = *ref::random_tensor(DType::kFloat64, {64, 64}, 4);  // 32 KiB: far above the inline limit
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {64, 64});
  TracedValue a = *ctx.capture(w, "w");
  TracedValue b = *ctx.capture(w, "w again");
  TracedValue c = *ctx.capture(*w.transpose(0, 1), "w^T");  // another view: another input
  TracedGraph g = *ctx.finish({ctx.add(ctx.add(x, a), ctx.add(b, c))});
  EXPECT_EQ(g.program()->num_inputs(), 3u);
  EXPECT_EQ(g.bindings().num_bound(), 2u);
  EXPECT_EQ(g.bindings().bound_tensor(1)->storage().get(), w.storage().get());  // retained, not copied
  EXPECT_EQ(test_support::count_ops(*g.program(), "constant"), 0u);
  // Large constants are refused inline; constantize is explicit.
  EXPECT_EQ(ctx.constant(*Literal::from_tensor(w)).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ctx.constantize(w, {1024}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ctx.constantize(w, {1 << 20}).ok());
  EXPECT_TRUE(ctx.scalar(Scalar::of(2.0)).ok());
}

TEST(TraceContext, ScopesLabelProvenanceAndPlacement) {
  TraceContext ctx({.name = "model"});
  TracedValue x = *ctx.input(DType::kFloat64, {2});
  TracedValue y;
  {
    auto layer = ctx.scope("layer 1");
    auto host = ctx.placement({PlacementClass::kHost, 0});
    y = *ctx.neg(x);
  }
  TracedValue z = *ctx.exp(y);
  TracedGraph g = *ctx.finish({z});
  const SemanticProgram& p = *g.program();
  ASSERT_EQ(p.num_operations(), 2u);
  OperationView neg = p.operation(OperationId(0));
  OperationView exp = p.operation(OperationId(1));
  EXPECT_THAT(describe_provenance(neg.provenance()),
              ::testing::MatchesRegex("layer 1 at trace_context_test.cpp:[0-9]+ <- model"));
  EXPECT_EQ(neg.placement().where, PlacementClass::kHost);
  EXPECT_EQ(describe_provenance(exp.provenance()), "model");
  EXPECT_TRUE(exp.placement().is_unconstrained());
}

TEST(TraceContext, ExtensionsAndFinishTwice) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 3});
  TracedValue b = *ctx.input(DType::kFloat64, {3, 4});
  auto r = ctx.emit_extension(std::make_shared<pt::MatmulExtension>(), {a, b});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape()[1], SymbolicExtent(4));
  EXPECT_EQ(ctx.emit_extension(nullptr, {a}).status().code(), ErrorCode::kInvalidArgument);
  TracedGraph g1 = *ctx.finish({(*r)[0]});
  TracedGraph g2 = *ctx.finish({a});  // finish is const: another graph from the same context
  EXPECT_EQ(g1.program()->num_operations(), 1u);
  EXPECT_EQ(g2.program()->num_operations(), 0u);
  // An in-place result over a shared operand is a compile-stage alias error at finish.
  auto in_place = pt::make_unary({.family = "test.in_place", .aliases = {AliasDecl::must_alias(0)}});
  TracedValue n = *ctx.neg(a);
  auto updated = *ctx.emit_extension(in_place, {n});
  Result<TracedGraph> shared = ctx.finish({updated[0], n});
  EXPECT_EQ(shared.status().code(), ErrorCode::kAliasConflict);
  EXPECT_EQ(shared.status().stage(), ErrorStage::kCompile);
}

}  // namespace
}  // namespace tenferro::compiler
