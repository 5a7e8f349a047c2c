// Planner benchmark (Google Benchmark): for every einsum instance file,
// greedy planning time and TreeSA under a 2 s budget, each reported with the
// log10 flops of the path found next to the file's opt_flops reference
// (ref_log10_flops) measured on the same network, plus the whole cache-miss
// cost (bind + plan) of small einsums. Instances come from
// $TENFERRO_EINSUM_INSTANCES or <shared>/bench/instances.
//   tenferro_einsum_bench --benchmark_filter=greedy
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tenferro/einsum.h"
#include "tenferro/einsum/benchmark_instance.h"

namespace tenferro::einsum {
namespace {

struct Loaded {
  std::string name;
  Network network;
  double ref_log10_flops = 0.0;
};

std::vector<Loaded> load_instances() {
  const char* env = std::getenv("TENFERRO_EINSUM_INSTANCES");
  const std::string dir = env ? env : std::string(TENFERRO_SHARED_DIR) + "/bench/instances";
  std::vector<std::string> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<Loaded> out;
  for (const std::string& file : files) {
    auto instance = load_benchmark_instance(file);
    if (!instance.ok()) continue;  // e.g. permutation_patterns.json
    const auto shapes = instance->shape_refs();
    auto network = Network::bind(instance->format_string, shapes, instance->dtype);
    if (!network.ok() || !instance->opt_flops) continue;
    auto order = ContractionOrder::from_opt_einsum_path(network->num_operands(), instance->opt_flops->pairs);
    if (!order.ok()) continue;
    const double ref = ContractionTree::build(*network, *order)->cost().log10_flops();
    out.push_back({instance->name, std::move(network).value(), ref});
  }
  return out;
}

void report(benchmark::State& state, const Loaded& loaded, const ContractionTree& tree) {
  state.counters["inputs"] = loaded.network.num_operands();
  state.counters["log10_flops"] = tree.cost().log10_flops();
  state.counters["ref_log10_flops"] = loaded.ref_log10_flops;
  state.counters["excess"] = tree.cost().log10_flops() - loaded.ref_log10_flops;
}

void plan_greedy(benchmark::State& state, const Loaded* loaded) {
  const PlanningPolicy policy{.planner = PlannerKind::kGreedy};
  Result<ContractionTree> tree = plan(loaded->network, policy);
  for (auto _ : state) {
    tree = plan(loaded->network, policy);
    benchmark::DoNotOptimize(tree);
  }
  if (!tree.ok()) return state.SkipWithError(tree.status().to_string().c_str());
  report(state, *loaded, *tree);
}

void plan_treesa(benchmark::State& state, const Loaded* loaded) {
  const PlanningPolicy policy{.planner = PlannerKind::kTreeSA};
  PlanningConfig config;
  config.treesa.time_budget_seconds = 2.0;
  config.seed = static_cast<std::uint64_t>(state.range(0));
  Result<ContractionTree> tree = Status(Error(ErrorCode::kUnknown, ErrorStage::kNone, "not run"));
  for (auto _ : state) {
    tree = plan(loaded->network, policy, config);
    benchmark::DoNotOptimize(tree);
  }
  if (!tree.ok()) return state.SkipWithError(tree.status().to_string().c_str());
  report(state, *loaded, *tree);
  state.counters["chains"] = tree->stats().chains;
}

// Small einsums of the kind an eager changing-shape sequence plans once per
// new shape: parse + bind + plan(kAuto), the whole cache-miss cost.
struct SmallCase {
  const char* name;
  const char* subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};

const std::vector<SmallCase>& small_cases() {
  static const std::vector<SmallCase> cases{
      {"matmul_2x2", "ij,jk->ik", {{2, 2}, {2, 2}}},
      {"chain3", "ij,jk,kl->il", {{8, 16}, {16, 4}, {4, 32}}},
      {"tci_sandwich", "ai,ibj,jc->abc", {{4, 8}, {8, 2, 8}, {8, 4}}},
      {"mps_env6", "ab,acd,bce,dfg,efh,gh->", {{4, 4}, {4, 2, 4}, {4, 2, 4}, {4, 2, 4}, {4, 2, 4}, {4, 4}}},
  };
  return cases;
}

void plan_small(benchmark::State& state, const SmallCase* c) {
  std::vector<IntArrayRef> shapes;
  for (const auto& shape : c->shapes) shapes.emplace_back(shape);
  Result<ContractionTree> tree = Status(Error(ErrorCode::kUnknown, ErrorStage::kNone, "not run"));
  for (auto _ : state) {
    auto network = Network::bind(c->subscripts, shapes);
    tree = plan(*network);
    benchmark::DoNotOptimize(tree);
  }
  if (!tree.ok()) return state.SkipWithError(tree.status().to_string().c_str());
  state.SetLabel(std::string(to_string(tree->stats().planner)));
}

}  // namespace
}  // namespace tenferro::einsum

int main(int argc, char** argv) {
  using namespace tenferro::einsum;
  static const std::vector<Loaded> instances = load_instances();
  for (const Loaded& loaded : instances) {
    benchmark::RegisterBenchmark(("greedy/" + loaded.name).c_str(), plan_greedy, &loaded)
        ->Unit(benchmark::kMillisecond);
  }
  for (const Loaded& loaded : instances) {
    if (loaded.network.num_operands() < 3) continue;  // one tree shape: nothing to anneal
    benchmark::RegisterBenchmark(("treesa_2s/" + loaded.name).c_str(), plan_treesa, &loaded)
        ->Arg(0)
        ->Arg(1)
        ->Arg(2)
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  }
  for (const SmallCase& c : small_cases()) {
    benchmark::RegisterBenchmark((std::string("plan_small/") + c.name).c_str(), plan_small, &c)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
