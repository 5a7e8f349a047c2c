// The canonical form (Notes [Canonical form of the compiler] and
// [Canonical dot_general]): each rewrite fires (counted), gives the
// documented program, and preserves results (reference evaluator).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "program/extension_test_support.h"
#include "tenferro/compiler/graph_compiler.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT
using test_support::count_ops;
using test_support::same_results;
namespace pt = ::tenferro::program::testing;

CompiledGraph compile_ok(const TracedGraph& g, const CompilerOptions& options = {}) {
  Result<CompiledGraph> c = compile_uncached(g, options);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : CompiledGraph{};
}

/// The only operation named `name`.
OperationView only(const SemanticProgram& p, std::string_view name) {
  for (OperationView op : p.operations())
    if (op.name() == name) return op;
  ADD_FAILURE() << "no " << name << " in\n" << p.explain();
  return p.operation(OperationId(0));
}

TEST(Canonicalize, ComposesTransposes) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {2, 3, 4});
  Result<TracedValue> y = ctx.transpose(ctx.transpose(x, {1, 2, 0}), {2, 0, 1});  // identity overall
  Result<TracedValue> z = ctx.transpose(ctx.transpose(x, {1, 0, 2}), {0, 2, 1});
  TracedGraph g = *ctx.finish({y, z});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.views_composed, 2u);
  EXPECT_EQ(count_ops(*c.program, "transpose"), 1u);
  EXPECT_EQ(c.program->outputs()[0], c.program->input(0));  // the identity is gone
  // z: result axis i = inner axis q[i] = x axis p[q[i]] -> [1, 2, 0].
  EXPECT_EQ(only(*c.program, "transpose").attributes_as<TransposeAttributes>()->perm, (Dims{1, 2, 0}));
  EXPECT_TRUE(same_results(g, c, 1));
}

TEST(Canonicalize, ComposesReshapesAndBroadcasts) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {2, 6});
  Result<TracedValue> r = ctx.reshape(ctx.reshape(ctx.reshape(x, {12}), {3, 4}), {4, 3});
  TracedValue v = *ctx.input(DType::kFloat64, {3});
  Result<TracedValue> b = ctx.broadcast_in_dim(ctx.broadcast_in_dim(v, {2, 3}, {1}), {2, 5, 3}, {0, 2});
  TracedGraph g = *ctx.finish({r, b});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.views_composed, 3u);
  EXPECT_EQ(count_ops(*c.program, "reshape"), 1u);
  EXPECT_EQ(count_ops(*c.program, "broadcast_in_dim"), 1u);
  EXPECT_EQ(only(*c.program, "broadcast_in_dim").attributes_as<BroadcastInDimAttributes>()->dims, (Dims{2}));
  EXPECT_TRUE(same_results(g, c, 2));
}

TEST(Canonicalize, KeepsAReshapeWhoseGuardWouldBeLost) {
  // reshape(x:[s0], [s1]) needs s0 == s1; reshaping back to [s0] must not
  // drop that guard, so the inner reshape stays.
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {SymbolicExtent::unknown()});
  TracedValue n = *ctx.input(DType::kFloat64, {SymbolicExtent::unknown()});
  Result<TracedValue> y = ctx.reshape(ctx.reshape(x, {n.shape()[0]}), {x.shape()[0]});
  TracedGraph g = *ctx.finish({y, n});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.views_composed, 0u);
  EXPECT_EQ(c.program->guards().size(), g.program()->guards().size());
  EXPECT_EQ(c.program
                ->check_guards(
                    std::vector<Tensor>{*Tensor::zeros({3}, DType::kFloat64), *Tensor::zeros({4}, DType::kFloat64)})
                .code(),
            ErrorCode::kShapeGuardFailed);
  const std::int64_t symbols[] = {3, 3};
  EXPECT_TRUE(same_results(g, c, 3, symbols));
}

TEST(Canonicalize, RemovesIdentitiesButKeepsFreshOutputsFresh) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {2, 3});
  TracedValue e = *ctx.exp(x);
  Result<TracedValue> a = ctx.transpose(e, {0, 1});
  Result<TracedValue> b = ctx.reshape(e, {2, 3});
  Result<TracedValue> s = ctx.slice(e, {0, 0}, {2, 3}, {1, 1});
  Result<TracedValue> d = ctx.convert(e, DType::kFloat64);
  Result<TracedValue> r = ctx.reduce_sum(e, {});
  // convert(x) of an input is a fresh copy; removing it would make the
  // output a view of the input, so it stays.
  Result<TracedValue> kept = ctx.convert(x, DType::kFloat64);
  TracedGraph g = *ctx.finish({a, b, s, d, r, kept});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.identities_removed, 5u);
  EXPECT_EQ(c.program->num_operations(), 2u);  // exp, convert(x)
  EXPECT_EQ(count_ops(*c.program, "convert"), 1u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.program->outputs()[i], c.program->outputs()[0]);
  EXPECT_TRUE(same_results(g, c, 4));
}

TEST(Canonicalize, CommutativeOperandOrderEnablesCse) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {3});
  TracedValue b = *ctx.input(DType::kFloat64, {3});
  Result<TracedValue> ab = ctx.add(a, b);
  Result<TracedValue> ba = ctx.add(b, a);
  Result<TracedValue> lt1 = ctx.compare(a, b, ComparisonDirection::kLt);
  Result<TracedValue> lt2 = ctx.compare(b, a, ComparisonDirection::kGt);  // not merged: different op
  TracedGraph g = *ctx.finish({ctx.mul(ab, ba), lt1, lt2});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.commutative_operands_swapped, 1u);
  EXPECT_EQ(c.metrics.common_subexpressions, 1u);
  EXPECT_EQ(count_ops(*c.program, "add"), 1u);
  EXPECT_EQ(count_ops(*c.program, "compare"), 2u);
  EXPECT_TRUE(same_results(g, c, 5));

  CompilerOptions no_cse;
  no_cse.eliminate_common_subexpressions = false;
  EXPECT_EQ(count_ops(*compile_ok(g, no_cse).program, "add"), 2u);
  CompilerOptions nothing = no_cse;
  nothing.canonicalize = false;
  CompiledGraph plain = compile_ok(g, nothing);
  EXPECT_EQ(plain.metrics.commutative_operands_swapped, 0u);
  EXPECT_TRUE(structurally_equal(*plain.program, *g.program()));
}

TEST(Canonicalize, RewritesRespectPlacement) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 3});
  Result<TracedValue> host_neg = [&] {
    PlacementScope host = ctx.placement({PlacementClass::kHost, 0});
    return ctx.neg(a);
  }();
  Result<TracedValue> any_neg = ctx.neg(a);  // equal op, other placement: kept
  Result<TracedValue> inner = ctx.transpose(a, {1, 0});
  Result<TracedValue> outer = [&] {
    PlacementScope device = ctx.placement({PlacementClass::kDevice, 0});
    return ctx.transpose(inner, {1, 0});  // not composed across placements
  }();
  TracedGraph g = *ctx.finish({host_neg, any_neg, outer});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.common_subexpressions, 0u);
  EXPECT_EQ(c.metrics.views_composed, 0u);
  EXPECT_EQ(count_ops(*c.program, "neg"), 2u);
  EXPECT_EQ(count_ops(*c.program, "transpose"), 2u);
}

TEST(Canonicalize, CseMergesPureExtensionsOnly) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 2});
  auto m1 = ctx.emit_extension(std::make_shared<pt::MatmulExtension>(pt::MatmulLowering::kCorrect, 1), {a, a});
  auto m2 = ctx.emit_extension(std::make_shared<pt::MatmulExtension>(pt::MatmulLowering::kCorrect, 1), {a, a});
  auto m3 = ctx.emit_extension(std::make_shared<pt::MatmulExtension>(pt::MatmulLowering::kCorrect, 2), {a, a});
  const EffectSet rng{Effect{ResourceId{ResourceKind::kRandomState, 7}, EffectAccess::kReadWrite}};
  auto e1 = ctx.emit_extension(pt::make_unary({.family = "test.rng", .effects = rng}), {a});
  auto e2 = ctx.emit_extension(pt::make_unary({.family = "test.rng", .effects = rng}), {a});
  TracedGraph g = *ctx.finish({(*m1)[0], (*m2)[0], (*m3)[0], (*e1)[0], (*e2)[0]});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.common_subexpressions, 1u);
  EXPECT_EQ(count_ops(*c.program, "test.matmul"), 2u);
  EXPECT_EQ(count_ops(*c.program, "test.rng"), 2u);  // effectful: never merged
  EXPECT_EQ(c.program->outputs()[0], c.program->outputs()[1]);
}

TEST(Canonicalize, InPlaceOperandsKeepTheirIdentity) {
  // n1 and n2 are equal, but n1 is updated in place: merging them would
  // give the updated value a second reader.
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2});
  TracedValue n1 = *ctx.neg(a);
  TracedValue n2 = *ctx.neg(a);
  auto in_place = pt::make_unary({.family = "test.in_place", .aliases = {AliasDecl::must_alias(0)}});
  auto updated = *ctx.emit_extension(in_place, {n1});
  TracedGraph g = *ctx.finish({updated[0], n2});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.common_subexpressions, 0u);
  EXPECT_EQ(count_ops(*c.program, "neg"), 2u);
}

TEST(Canonicalize, DotGeneralFoldsTransposesThatKeepFreeAxesInOrder) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {4, 2, 3});  // [k, i, j]
  TracedValue b = *ctx.input(DType::kFloat64, {4, 5});     // [k, n]
  // lhs = transpose(a) = [i, k, j]; contract lhs axis 1 (k). Free axes
  // (i, j) = a axes (1, 2): in order, so the transpose folds.
  Result<TracedValue> y = ctx.dot_general(ctx.transpose(a, {1, 0, 2}), b, {{}, {}, {1}, {0}});
  // Here the free axes (j, i) = a axes (2, 1) are reordered: no fold.
  Result<TracedValue> z = ctx.dot_general(ctx.transpose(a, {2, 0, 1}), b, {{}, {}, {1}, {0}});
  TracedGraph g = *ctx.finish({y, z});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.dot_general_transposes_folded, 1u);
  EXPECT_EQ(count_ops(*c.program, "transpose"), 1u);
  bool found = false;
  for (OperationView op : c.program->operations()) {
    if (op.name() != "dot_general" || op.operands()[0] != c.program->input(0)) continue;
    found = true;
    EXPECT_EQ(*op.attributes_as<DotGeneralAttributes>(), (DotGeneralAttributes{{}, {}, {0}, {0}}));
  }
  EXPECT_TRUE(found) << c.program->explain();
  EXPECT_TRUE(same_results(g, c, 6));
}

TEST(Canonicalize, DotGeneralSortsContractingAndBatchPairs) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 3, 4, 5});  // [b0, b1, k0, k1]
  TracedValue b = *ctx.input(DType::kFloat64, {5, 4, 3, 2});  // [k1, k0, b1, b0]
  // Contracting pairs given as (3,0), (2,1): sorted to (2,1), (3,0); same result.
  Result<TracedValue> y = ctx.dot_general(a, b, {{0, 1}, {3, 2}, {3, 2}, {0, 1}});
  // The same product with batch pairs given as (1,2), (0,3): the canonical
  // dot has them sorted and a transpose restores [b1, b0].
  Result<TracedValue> z = ctx.dot_general(a, b, {{1, 0}, {2, 3}, {2, 3}, {1, 0}});
  TracedGraph g = *ctx.finish({y, z});
  CompiledGraph c = compile_ok(g);
  EXPECT_EQ(c.metrics.dot_general_dimensions_sorted, 2u);
  EXPECT_EQ(count_ops(*c.program, "dot_general"), 1u);  // both are the same canonical dot
  EXPECT_EQ(c.metrics.common_subexpressions, 1u);
  EXPECT_EQ(*only(*c.program, "dot_general").attributes_as<DotGeneralAttributes>(),
            (DotGeneralAttributes{{0, 1}, {3, 2}, {2, 3}, {1, 0}}));
  EXPECT_EQ(only(*c.program, "transpose").attributes_as<TransposeAttributes>()->perm, (Dims{1, 0}));
  EXPECT_TRUE(same_results(g, c, 7));
}

TEST(Canonicalize, CanonicalFormIsAFixedPoint) {
  TraceContext ctx;
  TracedValue a = *ctx.input(DType::kFloat64, {2, 3, 4});
  TracedValue b = *ctx.input(DType::kFloat64, {4, 3});
  Result<TracedValue> t = ctx.transpose(ctx.transpose(a, {2, 1, 0}), {1, 0, 2});
  Result<TracedValue> d = ctx.dot_general(ctx.transpose(a, {0, 2, 1}), b, {{}, {}, {2, 1}, {1, 0}});
  TracedGraph g = *ctx.finish({ctx.add(d, d), t});
  CompiledGraph once = compile_ok(g);
  CompiledGraph twice = compile_ok(TracedGraph(program::FrozenProgram{once.program, once.bindings}));
  EXPECT_TRUE(structurally_equal(*once.program, *twice.program)) << once.program->explain() << twice.program->explain();
  EXPECT_EQ(twice.metrics.views_composed + twice.metrics.dot_general_transposes_folded +
                twice.metrics.dot_general_dimensions_sorted + twice.metrics.common_subexpressions,
            0u);
  // Nothing to do: the input program is returned without re-emission.
  EXPECT_EQ(once.metrics.unchanged_programs_reused, 0u);
  EXPECT_EQ(twice.metrics.unchanged_programs_reused, 1u);
  EXPECT_EQ(twice.program.get(), once.program.get());
  EXPECT_TRUE(same_results(g, once, 8));
}

}  // namespace
}  // namespace tenferro::compiler
