// Property tests on random traced programs: whatever the compiler does
// (canonicalization, CSE, DCE, extension pruning), the compiled program
// computes the same outputs as the traced one (reference evaluator on
// random inputs), keeps every guard, and compiling it again changes
// nothing (the canonical form is a fixed point).
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "program/extension_test_support.h"
#include "tenferro/compiler/batching.h"
#include "tenferro/compiler/graph_compiler.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT
namespace pt = ::tenferro::program::testing;

/// Records random float64 programs, biased towards what the compiler
/// rewrites: view chains, identities, duplicated and commuted operations,
/// dot_generals over transposed operands, extensions. With `symbolic`, the
/// first input is [s0, s1] (unknown extents) and later shapes mix s0, s1
/// and exact extents, so rewrites meet shape guards.
class RandomTracer {
 public:
  RandomTracer(std::uint64_t seed, bool symbolic) : rng_(seed), symbolic_(symbolic) {}

  TracedGraph trace() {
    TraceContext ctx;
    if (symbolic_) {
      pool_.push_back(*ctx.input(DType::kFloat64, {SymbolicExtent::unknown(), SymbolicExtent::unknown()}));
      symbols_ = {pool_[0].shape()[0], pool_[0].shape()[1]};
    }
    const int num_inputs = pick(1, 3);
    for (int i = 0; i < num_inputs; ++i) pool_.push_back(*ctx.input(DType::kFloat64, random_shape()));
    if (pick(0, 1) == 1)
      pool_.push_back(*ctx.capture(*::tenferro::testing::random_tensor(DType::kFloat64, {2, 3}, 99)));
    const int steps = pick(4, 18);
    for (int s = 0; s < steps; ++s) {
      Result<TracedValue> v = step(ctx);
      if (v.ok()) pool_.push_back(*v);
    }
    std::vector<TracedOperand> outputs{pool_.back()};
    const int num_outputs = pick(0, 2);
    for (int i = 0; i < num_outputs; ++i) outputs.emplace_back(any());
    return *ctx.finish(outputs);
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  /// A value of the pool, usually a recent one (so chains grow deep).
  const TracedValue& any() {
    const int n = static_cast<int>(pool_.size());
    const int lo = pick(0, 2) == 0 ? 0 : std::max(0, n - 3);
    return pool_[static_cast<std::size_t>(pick(lo, n - 1))];
  }
  static const SymbolicExtent& extent(const TracedValue& v, std::size_t k) { return v.shape()[k]; }
  SymbolicShape random_shape() {
    SymbolicShape shape;
    const int rank = pick(1, 3);
    for (int k = 0; k < rank; ++k) {
      const int choice = pick(0, symbols_.empty() ? 3 : 5);
      shape.push_back(choice < 4 ? SymbolicExtent(choice + 1) : symbols_[static_cast<std::size_t>(choice - 4)]);
    }
    return shape;
  }
  Dims random_perm(std::int64_t rank) {
    Dims perm;
    for (std::int64_t i = 0; i < rank; ++i) perm.push_back(i);
    std::shuffle(perm.begin(), perm.end(), rng_);
    return perm;
  }
  /// A value with the shape of `like` (an existing one when possible).
  Result<TracedValue> same_shape(TraceContext& ctx, const TracedValue& like) {
    for (int tries = 0; tries < 4; ++tries) {
      const TracedValue& v = any();
      if (v.shape() == like.shape()) return v;
    }
    return ctx.emit(CoreSemanticOp::kSin, {like});
  }

  Result<TracedValue> step(TraceContext& ctx) {
    const TracedValue x = any();
    switch (pick(0, 13)) {
      case 0:
        return ctx.emit(pick(0, 1) ? CoreSemanticOp::kSin : CoreSemanticOp::kNeg, {x});
      case 1:
      case 2: {
        const CoreSemanticOp ops[] = {CoreSemanticOp::kAdd, CoreSemanticOp::kMul, CoreSemanticOp::kSub,
                                      CoreSemanticOp::kMax};
        Result<TracedValue> y = same_shape(ctx, x);
        return ctx.emit(ops[pick(0, 3)], pick(0, 1) ? std::initializer_list<TracedOperand>{x, y}
                                                    : std::initializer_list<TracedOperand>{y, x});
      }
      case 3:
      case 4:
        return ctx.transpose(x, random_perm(x.rank()));
      case 5: {  // reshape: merge everything, or split into a random factorisation
        const SymbolicExtent n = symbolic_numel(x.shape());
        if (pick(0, 1) == 0 || !n.is_exact()) return ctx.reshape(x, {n});
        for (std::int64_t f = 2; f <= *n.exact_value(); ++f)
          if (*n.exact_value() % f == 0) return ctx.reshape(x, {f, *n.exact_value() / f});
        return ctx.reshape(x, {n});
      }
      case 6: {  // broadcast: a new leading axis
        SymbolicShape shape{SymbolicExtent(pick(1, 3))};
        Dims dims;
        for (std::size_t k = 0; k < x.shape().size(); ++k) {
          shape.push_back(x.shape()[k]);
          dims.push_back(static_cast<std::int64_t>(k) + 1);
        }
        return ctx.broadcast_in_dim(x, std::move(shape), std::move(dims));
      }
      case 7: {  // identities
        switch (pick(0, 3)) {
          case 0: {
            Dims id;
            for (std::int64_t i = 0; i < x.rank(); ++i) id.push_back(i);
            return ctx.transpose(x, id);
          }
          case 1:
            return ctx.reshape(x, x.shape());
          case 2:
            return ctx.convert(x, DType::kFloat64);
          default: {
            auto limit = exact_shape(x.shape());
            if (!limit) return ctx.neg(x);
            Dims start(static_cast<std::size_t>(x.rank()), 0), stride(static_cast<std::size_t>(x.rank()), 1);
            return ctx.slice(x, start, *limit, stride);
          }
        }
      }
      case 8: {  // reduce random axes
        Dims axes;
        for (std::int64_t k = 0; k < x.rank(); ++k)
          if (pick(0, 1)) axes.push_back(k);
        return ctx.reduce_sum(x, axes);
      }
      case 9:
      case 10: {  // dot_general of x or a transpose of it with a partner sharing extents
        Result<TracedValue> lhs = pick(0, 1) ? ctx.transpose(x, random_perm(x.rank())) : Result<TracedValue>(x);
        if (!lhs.ok()) return lhs;
        const TracedValue y = any();
        program::DotGeneralAttributes d;
        std::vector<bool> used(static_cast<std::size_t>(y.rank()), false);
        for (std::size_t i = 0; i < lhs->shape().size(); ++i) {
          for (std::size_t j = 0; j < used.size(); ++j) {
            if (used[j] || extent(*lhs, i) != extent(y, j) || pick(0, 2) == 0) continue;
            used[j] = true;
            const bool batch = pick(0, 2) == 0;
            (batch ? d.lhs_batch : d.lhs_contract).push_back(static_cast<std::int64_t>(i));
            (batch ? d.rhs_batch : d.rhs_contract).push_back(static_cast<std::int64_t>(j));
            break;
          }
        }
        return ctx.dot_general(lhs, y, d);
      }
      case 11: {  // an exact duplicate of a recent operation's pattern
        return ctx.neg(x);
      }
      case 12: {
        if (x.rank() != 2) return ctx.neg(x);
        Result<TracedValue> xt = ctx.transpose(x, {1, 0});
        auto r = ctx.emit_extension(std::make_shared<pt::MatmulExtension>(), {x, xt});
        if (!r.ok()) return r.status();
        return (*r)[0];
      }
      default: {
        auto r = ctx.emit_extension(pt::make_unary({.family = "test.split",
                                                    .aliases = {AliasDecl::fresh(), AliasDecl::fresh()},
                                                    .num_results = 2,
                                                    .prunable = true}),
                                    {x});
        if (!r.ok()) return r.status();
        return (*r)[static_cast<std::size_t>(pick(0, 1))];
      }
    }
  }

  std::mt19937_64 rng_;
  bool symbolic_;
  std::vector<SymbolicExtent> symbols_;
  std::vector<TracedValue> pool_;
};

class RandomTraces : public ::testing::TestWithParam<bool> {};

TEST_P(RandomTraces, CompilationPreservesResultsGuardsAndIsAFixedPoint) {
  const bool symbolic = GetParam();
  CompileMetrics total;
  for (std::uint64_t seed = 1; seed <= 250; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomTracer tracer(seed, symbolic);
    const TracedGraph g = tracer.trace();
    // Symbol values that satisfy the traced guards (the first that do).
    std::vector<std::int64_t> symbols;
    if (symbolic) {
      bool found = false;
      for (std::int64_t s0 = 1; s0 <= 4 && !found; ++s0) {
        for (std::int64_t s1 = 1; s1 <= 4 && !found; ++s1) {
          symbols = {s0, s1};
          found = std::all_of(g.program()->guards().begin(), g.program()->guards().end(),
                              [&](const ShapeGuard& guard) { return guard.holds(symbols); });
        }
      }
      if (!found) continue;
    }
    for (int variant = 0; variant < 2; ++variant) {
      CompilerOptions options;
      options.eliminate_common_subexpressions = variant == 0;
      Result<CompiledGraph> c = compile_uncached(g, options);
      ASSERT_TRUE(c.ok()) << c.status().to_string() << "\n" << g.program()->explain();
      ASSERT_TRUE(test_support::same_results(g, *c, seed, symbols)) << g.program()->explain() << c->program->explain();
      // Every traced guard is kept (the pipeline checks it too).
      for (const ShapeGuard& guard : g.program()->guards()) {
        EXPECT_TRUE(std::any_of(c->program->guards().begin(), c->program->guards().end(),
                                [&](const ShapeGuard& h) { return h.same_predicate(guard); }));
      }
      EXPECT_LE(c->program->num_operations(), g.program()->num_operations() + c->metrics.dot_general_dimensions_sorted);
      Result<CompiledGraph> again = compile_uncached(TracedGraph(FrozenProgram{c->program, c->bindings}), options);
      ASSERT_TRUE(again.ok()) << again.status().to_string();
      EXPECT_TRUE(structurally_equal(*again->program, *c->program))
          << g.program()->explain() << c->program->explain() << again->program->explain();
      EXPECT_EQ(again->metrics.unchanged_programs_reused, 1u) << c->program->explain() << again->program->explain();
      if (variant == 0) {
        total.views_composed += c->metrics.views_composed;
        total.identities_removed += c->metrics.identities_removed;
        total.common_subexpressions += c->metrics.common_subexpressions;
        total.dot_general_transposes_folded += c->metrics.dot_general_transposes_folded;
        total.dot_general_dimensions_sorted += c->metrics.dot_general_dimensions_sorted;
        total.commutative_operands_swapped += c->metrics.commutative_operands_swapped;
        total.extension_outputs_pruned += c->metrics.extension_outputs_pruned;
      }
    }
  }
  // The generator must actually exercise every rewrite.
  EXPECT_GT(total.views_composed, 0u);
  EXPECT_GT(total.identities_removed, 0u);
  EXPECT_GT(total.common_subexpressions, 0u);
  EXPECT_GT(total.dot_general_transposes_folded, 0u);
  EXPECT_GT(total.dot_general_dimensions_sorted, 0u);
  EXPECT_GT(total.commutative_operands_swapped, 0u);
  EXPECT_GT(total.extension_outputs_pruned, 0u);
}

// Note [Batching transform] on random programs: batched with a random
// subset of the inputs (at least one), the program computes each example;
// what has no rule (the test extensions) is kUnsupported.
TEST(RandomTraces, BatchingComputesEveryExample) {
  int batched_programs = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const TracedGraph g = RandomTracer(seed, /*symbolic=*/false).trace();
    const SemanticProgram& p = *g.program();
    const std::int64_t b = static_cast<std::int64_t>(seed % 3) + 1;
    SmallVector<bool, 8> flags;
    std::vector<Tensor> inputs;
    std::size_t next = 0;
    const std::vector<Tensor> parameters = test_support::random_parameters(g, seed);
    for (std::size_t i = 0; i < p.num_inputs(); ++i) {
      const Tensor* bound = g.bindings().bound_tensor(i);
      const bool batch = bound == nullptr && (next == 0 || (seed >> next) % 2 == 1);
      flags.push_back(batch);
      const Tensor& one = bound != nullptr ? *bound : parameters[next++];
      if (!batch) {
        inputs.push_back(one);
        continue;
      }
      Dims shape{b};
      for (const std::int64_t e : one.shape()) shape.push_back(e);
      inputs.push_back(*::tenferro::testing::random_tensor(one.dtype(), shape, seed * 31 + i));
    }
    const std::span<const bool> is_batched(flags.data(), flags.size());
    Result<std::shared_ptr<const SemanticProgram>> batched = batch_program(p, is_batched, b);
    if (!batched.ok()) {
      EXPECT_EQ(batched.status().code(), ErrorCode::kUnsupported) << batched.status().to_string();
      continue;
    }
    ++batched_programs;
    EXPECT_TRUE(test_support::batched_equals_examples(p, **batched, is_batched, b, inputs))
        << p.explain() << (*batched)->explain();
  }
  EXPECT_GT(batched_programs, 60);  // most programs have only rules the transform knows
}

INSTANTIATE_TEST_SUITE_P(ExactAndSymbolic, RandomTraces, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "symbolic" : "exact"; });

}  // namespace
}  // namespace tenferro::compiler
