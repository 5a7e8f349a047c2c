// Benchmarks of the compiler component. The cases: compile time of a
// 300-input einsum-shaped trace, and (as the same-run comparison) freeze +
// fingerprint of a 1,000-operation program, plus compiling that same
// program, tracing the einsum, and a compile-cache hit. Run with
//   --benchmark_enable_random_interleaving=true --benchmark_repetitions=N
// to interleave cases on a noisy machine, and compare medians.
#include <benchmark/benchmark.h>

#include "tenferro/compiler.h"
#include "tenferro/program.h"

namespace tenferro::compiler {
namespace {

using namespace tenferro::program;  // NOLINT

// A 300-input einsum-shaped trace: matrices A_i ([8, 8]; every second one
// stored transposed, so the trace transposes it first, as an einsum front
// end normalising operand layouts does) contracted pairwise in a balanced
// tree of 299 dot_generals (matching labels: "ab,bc->ac" at every node).
TracedGraph trace_einsum_tree(int inputs) {
  TraceContext ctx({.name = "einsum"});
  std::vector<TracedValue> level;
  for (int i = 0; i < inputs; ++i) {
    TracedValue a = *ctx.input(DType::kFloat64, {8, 8});
    level.push_back(i % 2 == 0 ? a : *ctx.transpose(a, {1, 0}));
  }
  while (level.size() > 1) {
    std::vector<TracedValue> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back(*ctx.dot_general(level[i], level[i + 1], {{}, {}, {1}, {0}}));
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  return *ctx.finish({level[0]});
}

// The program of tenferro_program_bench: dot_general + bias add + tanh
// blocks with a transpose pair every fourth block, ~1,000 operations.
struct Built {
  ProgramBuilder builder;
  ProgramValue output;
};

Built build_program(int target_ops) {
  Built built{ProgramBuilder(), ProgramValue()};
  ProgramBuilder& b = built.builder;
  b.set_provenance(make_provenance("bench"));
  ProgramValue h = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(4096), 32}, "x");
  std::vector<ProgramValue> weights, biases;
  for (int i = 0; i < 8; ++i) {
    weights.push_back(*b.add_input(DType::kFloat64, {32, 32}));
    biases.push_back(*b.add_input(DType::kFloat64, {32}));
  }
  const SymbolicExtent batch = b.metadata(h)->shape[0];
  for (int layer = 0; static_cast<int>(b.num_operations()) + 6 <= target_ops; ++layer) {
    h = *b.emit(CoreSemanticOp::kDotGeneral, {h, weights[static_cast<std::size_t>(layer % 8)]},
                DotGeneralAttributes{{}, {}, {1}, {0}});
    ProgramValue bias = *b.emit(CoreSemanticOp::kBroadcastInDim, {biases[static_cast<std::size_t>(layer % 8)]},
                                BroadcastInDimAttributes{{batch, 32}, {1}});
    h = *b.emit(CoreSemanticOp::kAdd, {h, bias});
    h = *b.emit(CoreSemanticOp::kTanh, {h});
    if (layer % 4 == 3) {
      h = *b.emit(CoreSemanticOp::kTranspose, {h}, TransposeAttributes{{1, 0}});
      h = *b.emit(CoreSemanticOp::kTranspose, {h}, TransposeAttributes{{1, 0}});
    }
  }
  while (static_cast<int>(b.num_operations()) < target_ops - 1) h = *b.emit(CoreSemanticOp::kNeg, {h});
  built.output = *b.emit(CoreSemanticOp::kReduceSum, {h}, ReduceAttributes{{0, 1}});
  return built;
}

void BM_TraceEinsum(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(trace_einsum_tree(static_cast<int>(state.range(0))).program());
}

void BM_CompileEinsum(benchmark::State& state) {
  const TracedGraph g = trace_einsum_tree(static_cast<int>(state.range(0)));
  CompileMetrics metrics;
  for (auto _ : state) {
    Result<CompiledGraph> c = compile_uncached(g);
    metrics = c->metrics;
    benchmark::DoNotOptimize(c->program);
  }
  state.counters["ops_in"] = static_cast<double>(metrics.operations_in);
  state.counters["ops_out"] = static_cast<double>(metrics.operations_out);
  state.counters["folded"] = static_cast<double>(metrics.dot_general_transposes_folded);
}

void BM_CompileCacheHitEinsum(benchmark::State& state) {
  const TracedGraph g = trace_einsum_tree(static_cast<int>(state.range(0)));
  GraphCompiler compiler;
  (void)*compiler.compile(g);
  for (auto _ : state) benchmark::DoNotOptimize(compiler.compile(g)->program);
  if (compiler.cache_stats().hits != static_cast<std::uint64_t>(state.iterations())) state.SkipWithError("not a hit");
}

void BM_FreezeAndFingerprint(benchmark::State& state) {
  Built built = build_program(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(built.builder.freeze({built.output})->program->fingerprint());
  state.counters["ops"] = static_cast<double>(built.builder.num_operations());
}

void BM_CompileProgram(benchmark::State& state) {
  Built built = build_program(static_cast<int>(state.range(0)));
  const TracedGraph g(*built.builder.freeze({built.output}));
  CompileMetrics metrics;
  for (auto _ : state) {
    Result<CompiledGraph> c = compile_uncached(g);
    metrics = c->metrics;
    benchmark::DoNotOptimize(c->program);
  }
  state.counters["ops_in"] = static_cast<double>(metrics.operations_in);
  state.counters["ops_out"] = static_cast<double>(metrics.operations_out);
}

BENCHMARK(BM_TraceEinsum)->Arg(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CompileEinsum)->Arg(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CompileCacheHitEinsum)->Arg(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FreezeAndFingerprint)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CompileProgram)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tenferro::compiler

BENCHMARK_MAIN();
