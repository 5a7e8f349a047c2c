// Benchmarks of the program component: emitting, freezing + fingerprinting
// and comparing a 1,000-operation program. The same-run baseline for freeze
// is SHA-256 over the same canonical bytes (the floor of any fingerprint).
// Run with --benchmark_enable_random_interleaving=true
// --benchmark_repetitions=N to interleave cases on a noisy machine.
#include <benchmark/benchmark.h>

#include "tenferro/program.h"

namespace tenferro::program {
namespace {

// A traced-network-shaped program: a symbolic batch through `layers` blocks
// of dot_general + bias add + tanh, with a transpose/reshape pair every
// fourth block, ending in a reduction. About 4 ops per block.
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

void BM_EmitProgram(benchmark::State& state) {
  const int ops = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Built built = build_program(ops);
    benchmark::DoNotOptimize(built.output);
  }
  state.counters["ops"] = ops;
}

void BM_FreezeAndFingerprint(benchmark::State& state) {
  Built built = build_program(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto frozen = built.builder.freeze({built.output});
    bytes = frozen->program->canonical_form().size();
    benchmark::DoNotOptimize(frozen->program->fingerprint());
  }
  state.counters["ops"] = static_cast<double>(built.builder.num_operations());
  state.counters["canonical_bytes"] = static_cast<double>(bytes);
}

// Baseline: hashing the same canonical bytes, nothing else.
void BM_Sha256OfCanonicalForm(benchmark::State& state) {
  Built built = build_program(static_cast<int>(state.range(0)));
  auto frozen = built.builder.freeze({built.output});
  const auto bytes = frozen->program->canonical_form();
  for (auto _ : state) benchmark::DoNotOptimize(sha256(bytes));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}

void BM_StructurallyEqual(benchmark::State& state) {
  Built a = build_program(static_cast<int>(state.range(0)));
  Built b = build_program(static_cast<int>(state.range(0)));
  auto pa = a.builder.freeze({a.output})->program;
  auto pb = b.builder.freeze({b.output})->program;
  for (auto _ : state) benchmark::DoNotOptimize(structurally_equal(*pa, *pb));
}

BENCHMARK(BM_EmitProgram)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FreezeAndFingerprint)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sha256OfCanonicalForm)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StructurallyEqual)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tenferro::program

BENCHMARK_MAIN();
