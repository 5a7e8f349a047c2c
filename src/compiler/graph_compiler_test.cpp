// GraphCompiler: the pipeline's extension output pruning, custom
// transforms, provenance, explain() and typed compile errors.
#include "tenferro/compiler/graph_compiler.h"

#include <atomic>
#include <optional>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "program/extension_test_support.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT
using test_support::count_ops;
using test_support::same_results;
using ::testing::HasSubstr;
namespace pt = ::tenferro::program::testing;

/// x -> (x, x) whose prune_outputs answers with `pruned_results` results
/// (the correct answer is one per live result).
class BadPruneExtension : public ExtensionOp {
 public:
  explicit BadPruneExtension(std::size_t results = 2, std::size_t pruned_results = 2)
      : results_(results), pruned_results_(pruned_results) {}
  std::string_view family_id() const noexcept override { return "test.bad_prune"; }
  std::uint64_t payload_hash() const noexcept override { return results_; }
  bool payload_equal(const ExtensionOp& other) const noexcept override {
    return static_cast<const BadPruneExtension&>(other).results_ == results_;
  }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints&) const override {
    SmallVector<ValueMetadata, 2> out;
    for (std::size_t r = 0; r < results_; ++r) out.push_back(operands[0]);
    return out;
  }
  EffectSet effects() const override { return EffectSet::pure(); }
  SmallVector<AliasDecl, 2> aliases() const override { return SmallVector<AliasDecl, 2>(results_, AliasDecl::fresh()); }
  std::shared_ptr<const ExtensionOp> prune_outputs(std::span<const bool>) const override {
    return std::make_shared<BadPruneExtension>(pruned_results_, pruned_results_);
  }

 private:
  std::size_t results_;
  std::size_t pruned_results_;
};

/// Infers [n] on its first call and [n + 1] afterwards: a broken,
/// non-deterministic extension.
class DriftingExtension : public ExtensionOp {
 public:
  std::string_view family_id() const noexcept override { return "test.drifting"; }
  std::uint64_t payload_hash() const noexcept override { return 0; }
  bool payload_equal(const ExtensionOp&) const noexcept override { return true; }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints&) const override {
    ValueMetadata m = operands[0];
    if (calls_++ > 0) m.shape[0] = m.shape[0] + SymbolicExtent(1);
    return SmallVector<ValueMetadata, 2>{m};
  }
  EffectSet effects() const override { return EffectSet::pure(); }
  SmallVector<AliasDecl, 2> aliases() const override { return {AliasDecl::fresh()}; }

 private:
  mutable std::atomic<int> calls_{0};
};

/// neg(x) -> mul(x, broadcast(-1)) for float64 (exact in IEEE), copying
/// everything else.
class NegToMul : public SemanticTransform {
 public:
  explicit NegToMul(std::uint64_t options = 0) : options_(options) {}
  std::string_view name() const noexcept override { return "neg_to_mul"; }
  std::uint64_t options_hash() const noexcept override { return options_; }
  Result<SmallVector<ProgramValue, 4>> run(const SemanticProgram& input, TransformBuilder& out) const override {
    std::vector<ProgramValue> values(input.num_values());
    for (std::size_t i = 0; i < input.num_inputs(); ++i) values[i] = out.input(i);
    for (OperationView op : input.operations()) {
      SmallVector<ProgramValue, 4> operands;
      for (ValueId v : op.operands()) operands.push_back(values[v.index()]);
      if (op.is_core() && op.core_op() == CoreSemanticOp::kNeg) {
        out.derive_from(op);
        const ValueMetadata& m = input.metadata(op.result());
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, out.builder().constant(Literal::scalar(Scalar::of(-1.0))));
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue b, out.builder().emit(CoreSemanticOp::kBroadcastInDim, {c},
                                                                     BroadcastInDimAttributes{m.shape, {}}));
        TENFERRO_ASSIGN_OR_RETURN(values[op.result().index()],
                                  out.builder().emit(CoreSemanticOp::kMul, {operands[0], b}));
        continue;
      }
      TENFERRO_ASSIGN_OR_RETURN(auto results, out.copy_operation(op, operands.span()));
      for (std::size_t r = 0; r < results.size(); ++r) values[op.result(r).index()] = results[r];
    }
    SmallVector<ProgramValue, 4> outputs;
    for (ValueId v : input.outputs()) outputs.push_back(values[v.index()]);
    return outputs;
  }

 private:
  std::uint64_t options_;
};

/// Returns exp(output 0) in place of output 0: changes nothing the
/// validator checks for same-shaped outputs, but `Misbehave::kShape`
/// returns a reduced output and `kThrow` throws.
class Misbehaving : public SemanticTransform {
 public:
  enum class Kind { kShape, kThrow };
  explicit Misbehaving(Kind kind) : kind_(kind) {}
  std::string_view name() const noexcept override { return "misbehaving"; }
  std::uint64_t options_hash() const noexcept override { return static_cast<std::uint64_t>(kind_); }
  Result<SmallVector<ProgramValue, 4>> run(const SemanticProgram& input, TransformBuilder& out) const override {
    if (kind_ == Kind::kThrow) throw std::runtime_error("transform exploded");
    out.derive_from(input.operation(OperationId(0)));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s,
                              out.builder().emit(CoreSemanticOp::kReduceSum, {out.input(0)}, ReduceAttributes{{0}}));
    return SmallVector<ProgramValue, 4>{s};
  }

 private:
  Kind kind_;
};

TEST(GraphCompiler, PrunesUnusedExtensionOutputs) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {3});
  auto two = ctx.emit_extension(pt::make_unary({.family = "test.split",
                                                .aliases = {AliasDecl::fresh(), AliasDecl::fresh()},
                                                .num_results = 2,
                                                .prunable = true}),
                                {x});
  auto fixed = ctx.emit_extension(
      pt::make_unary({.family = "test.fixed", .aliases = {AliasDecl::fresh(), AliasDecl::fresh()}, .num_results = 2}),
      {x});
  TracedGraph g = *ctx.finish({(*two)[1], (*fixed)[0]});
  CompiledGraph c = *compile_uncached(g);
  EXPECT_EQ(c.metrics.extension_outputs_pruned, 1u);
  for (OperationView op : c.program->operations()) {
    EXPECT_EQ(op.num_results(), op.name() == "test.split" ? 1u : 2u) << op.name();
  }
  EXPECT_TRUE(same_results(g, c, 1));
  CompilerOptions off;
  off.prune_extension_outputs = false;
  EXPECT_EQ(compile_uncached(g, off)->metrics.extension_outputs_pruned, 0u);
}

TEST(GraphCompiler, EffectfulOperationsKeepTheirOrderThroughRewrites) {
  const EffectSet rng{Effect{ResourceId{ResourceKind::kRandomState, 1}, EffectAccess::kReadWrite}};
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {2, 2});
  auto first = ctx.emit_extension(pt::make_unary({.family = "test.rng_a", .effects = rng}), {ctx.transpose(x, {0, 1})});
  auto second = ctx.emit_extension(pt::make_unary({.family = "test.rng_b", .effects = rng}), {x});
  auto unused = ctx.emit_extension(pt::make_unary({.family = "test.rng_c", .effects = rng}), {ctx.neg(x)});
  ASSERT_TRUE(unused.ok());
  TracedGraph g = *ctx.finish({(*second)[0], (*first)[0]});
  CompiledGraph c = *compile_uncached(g);
  EXPECT_EQ(c.metrics.identities_removed, 1u);  // so the program was re-emitted
  const SemanticProgram& p = *c.program;
  std::optional<OperationId> a, b, u;
  for (OperationView op : p.operations()) {
    if (op.name() == "test.rng_a") a = op.id();
    if (op.name() == "test.rng_b") b = op.id();
    if (op.name() == "test.rng_c") u = op.id();
  }
  ASSERT_TRUE(a && b && u) << p.explain();  // the unused effectful op is kept
  auto after = [&](OperationId later, OperationId earlier) {
    auto preds = p.operation(later).ordered_after();
    return std::find(preds.begin(), preds.end(), earlier) != preds.end();
  };
  EXPECT_TRUE(after(*b, *a));
  EXPECT_TRUE(after(*u, *b));
  EXPECT_EQ(p.effects(), g.program()->effects());
}

TEST(GraphCompiler, CompileErrorsAreTypedAndNameTheNodeAndProvenance) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {3});
  std::optional<ProvenanceScope> site(ctx.scope("bad prune site"));
  Result<SmallVector<TracedValue, 2>> r = ctx.emit_extension(std::make_shared<BadPruneExtension>(), {x});
  site.reset();
  TracedGraph g = *ctx.finish({(*r)[0]});
  Result<CompiledGraph> c = compile_uncached(g);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kContractViolation);
  EXPECT_EQ(c.status().stage(), ErrorStage::kCompile);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("test.bad_prune %"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("bad prune site at graph_compiler_test.cpp"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("2 results for 1 live"));

  TraceContext ctx2;
  TracedValue y = *ctx2.input(DType::kFloat64, {3});
  // The identity transpose makes the pipeline re-emit (an unchanged
  // program is returned as traced), which re-runs the inference.
  auto drift = ctx2.emit_extension(std::make_shared<DriftingExtension>(), {ctx2.transpose(y, {0})});
  Result<CompiledGraph> d = compile_uncached(*ctx2.finish({(*drift)[0]}));
  EXPECT_EQ(d.status().code(), ErrorCode::kContractViolation);
  EXPECT_EQ(d.status().stage(), ErrorStage::kCompile);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("test.drifting %1 [trace]"));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("not deterministic"));

  EXPECT_EQ(compile_uncached(TracedGraph()).status().code(), ErrorCode::kInvalidArgument);
}

TEST(GraphCompiler, CustomTransformsRunValidatedThenTheFixedPipelineAgain) {
  TraceContext ctx({.name = "model"});
  TracedValue x = *ctx.input(DType::kFloat64, {2, 3});
  std::optional<ProvenanceScope> scope(ctx.scope("negations"));
  Result<TracedValue> n1 = ctx.neg(x);
  Result<TracedValue> n2 = ctx.neg(ctx.exp(x));
  scope.reset();
  TracedGraph g = *ctx.finish({ctx.add(n1, n2)});
  CompilerOptions options;
  options.transforms.push_back(std::make_shared<NegToMul>());
  CompiledGraph c = *compile_uncached(g, options);
  EXPECT_EQ(c.metrics.custom_transforms, 1u);
  EXPECT_EQ(count_ops(*c.program, "neg"), 0u);
  EXPECT_EQ(count_ops(*c.program, "mul"), 2u);
  // The transform made a constant and a broadcast per negation; the fixed
  // pipeline ran again afterwards and merged them.
  EXPECT_EQ(count_ops(*c.program, "constant"), 1u);
  EXPECT_EQ(count_ops(*c.program, "broadcast_in_dim"), 1u);
  EXPECT_TRUE(same_results(g, c, 2));
  // Provenance: the transform's records derive from the traced scopes.
  for (OperationView op : c.program->operations()) {
    if (op.name() == "mul") {
      EXPECT_THAT(
          describe_provenance(op.provenance()),
          ::testing::MatchesRegex("transform neg_to_mul <- negations at graph_compiler_test.cpp:[0-9]+ <- model"));
    }
  }
  const std::string text = c.explain();
  EXPECT_THAT(text, HasSubstr("custom transforms 1"));
  EXPECT_THAT(text, HasSubstr("# from: transform neg_to_mul <- negations at graph_compiler_test.cpp:"));

  CompilerOptions bad;
  bad.transforms.push_back(std::make_shared<Misbehaving>(Misbehaving::Kind::kShape));
  Result<CompiledGraph> shape = compile_uncached(g, bad);
  EXPECT_EQ(shape.status().code(), ErrorCode::kContractViolation);
  EXPECT_EQ(shape.status().stage(), ErrorStage::kCompile);
  EXPECT_THAT(std::string(shape.status().message()), HasSubstr("custom transform misbehaving"));
  EXPECT_THAT(std::string(shape.status().message()), HasSubstr("output 0"));
  CompilerOptions throws;
  throws.transforms.push_back(std::make_shared<Misbehaving>(Misbehaving::Kind::kThrow));
  Result<CompiledGraph> thrown = compile_uncached(g, throws);
  EXPECT_EQ(thrown.status().code(), ErrorCode::kInternal);
  EXPECT_THAT(std::string(thrown.status().message()), HasSubstr("transform exploded"));
  CompilerOptions null_transform;
  null_transform.transforms.push_back(nullptr);
  EXPECT_EQ(compile_uncached(g, null_transform).status().code(), ErrorCode::kInvalidArgument);
}

TEST(GraphCompiler, ProvenanceSurvivesRewritesAndExplainShowsIt) {
  Tensor w = *::tenferro::testing::random_tensor(DType::kFloat64, {3, 3}, 5);
  TraceContext ctx({.name = "net"});
  TracedValue x = *ctx.input(DType::kFloat64, {3, 3}, "x");
  TracedValue wv = *ctx.capture(w, "w");
  std::optional<ProvenanceScope> scope(ctx.scope("projection"));
  Result<TracedValue> y = ctx.dot_general(ctx.transpose(ctx.transpose(x, {1, 0}), {1, 0}), wv, {{}, {}, {1}, {0}});
  scope.reset();
  TracedGraph g = *ctx.finish({y});
  CompiledGraph c = *compile_uncached(g);
  ASSERT_EQ(c.program->num_operations(), 1u);
  EXPECT_THAT(describe_provenance(c.program->operation(OperationId(0)).provenance()),
              ::testing::MatchesRegex("projection at graph_compiler_test.cpp:[0-9]+ <- net"));
  EXPECT_EQ(c.bindings.bound_tensor(1)->storage().get(), w.storage().get());
  const std::string text = c.explain();
  EXPECT_THAT(text, HasSubstr("%1 bound to Tensor(float64, [3, 3]"));
  EXPECT_THAT(text, HasSubstr("dot_general(%0, %1)"));
  EXPECT_THAT(text, HasSubstr("# from: projection at graph_compiler_test.cpp:"));
  EXPECT_THAT(text, HasSubstr("\"x\""));
  EXPECT_THAT(text, HasSubstr("views composed 1"));
  EXPECT_TRUE(same_results(g, c, 3));
}

}  // namespace
}  // namespace tenferro::compiler
