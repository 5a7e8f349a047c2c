// The compile cache (Note [Compile cache]): hits and misses, bindings on a
// hit, the key (structure, flags, ordered transforms), LRU eviction by
// entries and bytes, clear, concurrent use.
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler_test_support.h"
#include "tenferro/compiler/graph_compiler.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT

/// A trace of `depth` chained operations over one captured tensor.
TracedGraph chain(int depth, const Tensor& captured, int variant = 0) {
  TraceContext ctx;
  TracedValue x = *ctx.input(DType::kFloat64, {4, 4});
  Result<TracedValue> y = ctx.add(x, ctx.capture(captured));
  for (int i = 0; i < depth; ++i) y = (i + variant) % 2 == 0 ? ctx.exp(y) : ctx.neg(y);
  return *ctx.finish({y});
}

/// A named transform that copies its input (only its identity matters).
class CopyTransform : public SemanticTransform {
 public:
  CopyTransform(std::string name, std::uint64_t options) : name_(std::move(name)), options_(options) {}
  std::string_view name() const noexcept override { return name_; }
  std::uint64_t options_hash() const noexcept override { return options_; }
  Result<SmallVector<ProgramValue, 4>> run(const SemanticProgram& input, TransformBuilder& out) const override {
    std::vector<ProgramValue> values(input.num_values());
    for (std::size_t i = 0; i < input.num_inputs(); ++i) values[i] = out.input(i);
    for (OperationView op : input.operations()) {
      SmallVector<ProgramValue, 4> operands;
      for (ValueId v : op.operands()) operands.push_back(values[v.index()]);
      TENFERRO_ASSIGN_OR_RETURN(auto results, out.copy_operation(op, operands.span()));
      for (std::size_t r = 0; r < results.size(); ++r) values[op.result(r).index()] = results[r];
    }
    SmallVector<ProgramValue, 4> outputs;
    for (ValueId v : input.outputs()) outputs.push_back(values[v.index()]);
    return outputs;
  }

 private:
  std::string name_;
  std::uint64_t options_;
};

Tensor tensor(std::uint64_t seed) { return *::tenferro::testing::random_tensor(DType::kFloat64, {4, 4}, seed); }

TEST(CompileCache, HitReturnsTheCachedProgramWithTheNewBindings) {
  GraphCompiler compiler;
  Tensor w1 = tensor(1), w2 = tensor(2);
  CompiledGraph a = *compiler.compile(chain(3, w1));
  CompiledGraph b = *compiler.compile(chain(3, w2));  // same structure, other data
  EXPECT_FALSE(a.metrics.cache_hit);
  EXPECT_TRUE(b.metrics.cache_hit);
  EXPECT_EQ(a.program.get(), b.program.get());
  EXPECT_EQ(b.bindings.bound_tensor(1)->storage().get(), w2.storage().get());
  EXPECT_EQ(b.metrics.operations_in, a.metrics.operations_in);
  CompileCacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 0u);
  // A different structure misses.
  EXPECT_FALSE(compiler.compile(chain(3, w1, 1))->metrics.cache_hit);
  EXPECT_EQ(compiler.cache_stats().entries, 2u);
}

TEST(CompileCache, OptionsAndOrderedTransformIdentitiesAreInTheKey) {
  GraphCompiler compiler;
  const TracedGraph g = chain(2, tensor(1));
  auto t1 = std::make_shared<CopyTransform>("copy_a", 1);
  auto t1_other_options = std::make_shared<CopyTransform>("copy_a", 2);
  auto t2 = std::make_shared<CopyTransform>("copy_b", 1);
  CompilerOptions plain, no_cse, first, other_options, ab, ba;
  no_cse.eliminate_common_subexpressions = false;
  first.transforms = {t1};
  other_options.transforms = {t1_other_options};
  ab.transforms = {t1, t2};
  ba.transforms = {t2, t1};
  for (const CompilerOptions* o : {&plain, &no_cse, &first, &other_options, &ab, &ba}) {
    EXPECT_FALSE(compiler.compile(g, *o)->metrics.cache_hit);
  }
  EXPECT_EQ(compiler.cache_stats().entries, 6u);
  // An equal identity from another object hits.
  CompilerOptions again;
  again.transforms = {std::make_shared<CopyTransform>("copy_a", 1), std::make_shared<CopyTransform>("copy_b", 1)};
  EXPECT_TRUE(compiler.compile(g, again)->metrics.cache_hit);
}

TEST(CompileCache, EvictsLeastRecentlyUsedBeyondMaxEntries) {
  GraphCompiler compiler({.max_entries = 2});
  const Tensor w = tensor(1);
  const TracedGraph g1 = chain(1, w), g2 = chain(2, w), g3 = chain(3, w);
  (void)*compiler.compile(g1);
  (void)*compiler.compile(g2);
  EXPECT_TRUE(compiler.compile(g1)->metrics.cache_hit);  // g1 is now the most recent
  (void)*compiler.compile(g3);                           // evicts g2
  CompileCacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_TRUE(compiler.compile(g1)->metrics.cache_hit);
  EXPECT_TRUE(compiler.compile(g3)->metrics.cache_hit);
  EXPECT_FALSE(compiler.compile(g2)->metrics.cache_hit);
}

TEST(CompileCache, BoundsRetainedBytes) {
  const Tensor w = tensor(1);
  const TracedGraph small = chain(1, w), large = chain(40, w);
  GraphCompiler probe;
  // The pipeline leaves `small` unchanged: the entry retains one program.
  ASSERT_EQ(probe.compile(small)->program, small.program());
  const std::size_t small_bytes = probe.cache_stats().bytes;
  EXPECT_EQ(small_bytes, small.program()->canonical_form().size());
  (void)*probe.compile(large);
  const std::size_t large_bytes = probe.cache_stats().bytes - small_bytes;
  ASSERT_GT(large_bytes, 2 * small_bytes);

  // Room for the large entry alone: adding a small one evicts it.
  GraphCompiler compiler({.max_entries = 100, .max_bytes = large_bytes + small_bytes / 2});
  (void)*compiler.compile(large);
  EXPECT_EQ(compiler.cache_stats().bytes, large_bytes);
  (void)*compiler.compile(small);
  CompileCacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.bytes, small_bytes);
  EXPECT_LE(s.bytes, compiler.cache_config().max_bytes);

  // An entry larger than the whole budget is compiled but not kept.
  GraphCompiler tiny({.max_entries = 100, .max_bytes = small_bytes - 1});
  EXPECT_TRUE(tiny.compile(small).ok());
  EXPECT_EQ(tiny.cache_stats().entries, 0u);
  EXPECT_FALSE(tiny.compile(small)->metrics.cache_hit);
}

TEST(CompileCache, ClearDropsEntriesAndKeepsCounters) {
  GraphCompiler compiler;
  const TracedGraph g = chain(2, tensor(1));
  (void)*compiler.compile(g);
  (void)*compiler.compile(g);
  compiler.clear_cache();
  CompileCacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_FALSE(compiler.compile(g)->metrics.cache_hit);
}

TEST(CompileCache, FailedCompilesAreNotCached) {
  GraphCompiler compiler;
  const TracedGraph g = chain(1, tensor(1));
  CompilerOptions bad;
  bad.transforms.push_back(nullptr);
  EXPECT_FALSE(compiler.compile(g, bad).ok());
  EXPECT_FALSE(compiler.compile(g, bad).ok());
  EXPECT_EQ(compiler.cache_stats().entries, 0u);
  EXPECT_EQ(compiler.cache_stats().misses, 0u);  // rejected before the lookup
  // ... also when the same graph without transforms is cached.
  ASSERT_TRUE(compiler.compile(g).ok());
  EXPECT_EQ(compiler.compile(g, bad).status().code(), ErrorCode::kInvalidArgument);
}

TEST(CompileCache, FingerprintCollisionsAreResolvedByStructuralEquality) {
  // Two different programs forced to the same fingerprint.
  FreezeOptions collide;
  collide.fingerprint_function = [](std::span<const std::byte>) { return Digest256{}; };
  auto make = [&](CoreSemanticOp op) {
    ProgramBuilder b;
    ProgramValue x = *b.add_input(DType::kFloat64, {3});
    return TracedGraph(*b.freeze({*b.emit(op, {x})}, collide));
  };
  const TracedGraph neg = make(CoreSemanticOp::kNeg), exp = make(CoreSemanticOp::kExp);
  ASSERT_EQ(neg.program()->fingerprint(), exp.program()->fingerprint());
  GraphCompiler compiler;
  CompiledGraph a = *compiler.compile(neg);
  CompiledGraph b = *compiler.compile(exp);
  EXPECT_FALSE(b.metrics.cache_hit);
  EXPECT_EQ(compiler.cache_stats().entries, 2u);
  EXPECT_EQ(a.program->operation(OperationId(0)).name(), "neg");
  EXPECT_EQ(b.program->operation(OperationId(0)).name(), "exp");
  EXPECT_EQ(compiler.compile(exp)->program.get(), b.program.get());
  EXPECT_EQ(compiler.compile(neg)->program.get(), a.program.get());
}

TEST(CompileCache, ConcurrentCompilesShareOneEntry) {
  GraphCompiler compiler;
  const Tensor w = tensor(1);
  std::vector<TracedGraph> graphs;
  for (int i = 0; i < 8; ++i) graphs.push_back(chain(i % 2 + 1, w));  // two structures
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        if (!compiler.compile(graphs[static_cast<std::size_t>((i + t) % 8)]).ok()) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  CompileCacheStats s = compiler.cache_stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.hits + s.misses, 32u);
}

}  // namespace
}  // namespace tenferro::compiler
