// `tenferro bench dot_general [instance.json ...]`: the binary einsum
// instances (../shared/bench/instances/bin_*.json by default; skipped
// cleanly when absent) through the dot_general composite with the native
// GEMM provider, against numpy.einsum(optimize=True) and torch.einsum run by
// /usr/bin/python3 with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
// torch.set_num_threads equal to the case's thread count, on random float64
// data. Every side allocates its result, as a user call does: ours from a
// CpuDomainMemoryPool, as the CPU engine does (numpy and torch use their own
// allocators), and returns the einsum output order as a view (no copy).
// Interleaving is coarse: half of our samples before the python process,
// half after it, in the same run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_command.h"
#include "tenferro/base/input_file.h"
#include "tenferro/cpu/domains/memory_pool.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu/kernels/arena_parallel_context.h"

#ifndef TENFERRO_SHARED_DIR
#define TENFERRO_SHARED_DIR ""
#endif

namespace tenferro::bench {
namespace {

// The peers, timed in one python process per thread count; prints one JSON
// object per instance: {"file", "numpy_s", "torch_s"} (medians, seconds).
constexpr const char* kDotGeneralPeerScript = R"PY(
import json, sys, time
import numpy as np
threads = int(sys.argv[1])
try:
    import torch
    torch.set_num_threads(threads)
except Exception:
    torch = None

def samples(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); out.append(time.perf_counter() - t0)
    return out

for path in sys.argv[2:]:
    inst = json.load(open(path))
    fmt = inst["format_string"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(inst["shapes"][0])
    b = rng.standard_normal(inst["shapes"][1])
    peers = {"numpy": lambda: np.einsum(fmt, a, b, optimize=True)}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        peers["torch"] = lambda: torch.einsum(fmt, ta, tb)
    for fn in peers.values():
        fn()
    one = min(samples(peers["numpy"], 1))
    runs = int(min(200, max(6, 0.6 / max(one, 1e-9))))
    got = {k: [] for k in peers}
    for _ in range(3):  # blocks, alternating peers
        for k, fn in peers.items():
            got[k] += samples(fn, max(2, runs // 3))
    res = {"file": path}
    for k, v in got.items():
        res[k + "_s"] = float(np.median(v))
    print(json.dumps(res), flush=True)
)PY";

struct Instance {
  std::string file;
  std::string name;
  std::string format;
  std::vector<std::int64_t> lhs_shape, rhs_shape;
  cpu::DotGeneralDims dims;
  Dims to_einsum_order;  // permutes the dot_general result into the einsum output order
  Tensor lhs, rhs;
};

// "bij,bjk->bik" -> dot_general dims; false for what a binary dot_general
// cannot express (repeated labels, labels summed within one operand).
bool parse_instance(const nlohmann::json& j, Instance& inst, std::string& why) {
  inst.format = j.at("format_string").get<std::string>();
  const auto shapes = j.at("shapes");
  if (shapes.size() != 2) {
    why = "not a binary instance";
    return false;
  }
  inst.lhs_shape = shapes[0].get<std::vector<std::int64_t>>();
  inst.rhs_shape = shapes[1].get<std::vector<std::int64_t>>();
  const auto arrow = inst.format.find("->");
  const auto comma = inst.format.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) {
    why = "unexpected format string";
    return false;
  }
  const std::string l = inst.format.substr(0, comma), r = inst.format.substr(comma + 1, arrow - comma - 1),
                    o = inst.format.substr(arrow + 2);
  auto unique = [](const std::string& s) {
    std::string t = s;
    std::sort(t.begin(), t.end());
    return std::adjacent_find(t.begin(), t.end()) == t.end();
  };
  if (!unique(l) || !unique(r) || !unique(o)) {
    why = "repeated labels";
    return false;
  }
  std::string result;  // dot_general result labels: batch, lhs free, rhs free
  for (std::size_t i = 0; i < l.size(); ++i) {
    const auto in_r = r.find(l[i]);
    const bool in_o = o.find(l[i]) != std::string::npos;
    if (in_r != std::string::npos && in_o) {
      inst.dims.lhs_batch.push_back(static_cast<std::int64_t>(i));
      inst.dims.rhs_batch.push_back(static_cast<std::int64_t>(in_r));
      result.push_back(l[i]);
    } else if (in_r != std::string::npos) {
      inst.dims.lhs_contract.push_back(static_cast<std::int64_t>(i));
      inst.dims.rhs_contract.push_back(static_cast<std::int64_t>(in_r));
    } else if (!in_o) {
      why = "a label summed within one operand";
      return false;
    }
  }
  for (char c : l)
    if (r.find(c) == std::string::npos) result.push_back(c);
  for (char c : r) {
    if (l.find(c) != std::string::npos) continue;
    if (o.find(c) == std::string::npos) {
      why = "a label summed within one operand";
      return false;
    }
    result.push_back(c);
  }
  if (result.size() != o.size()) {
    why = "output labels do not match";
    return false;
  }
  for (char c : o) inst.to_einsum_order.push_back(static_cast<std::int64_t>(result.find(c)));
  return true;
}

template <class F>
std::vector<double> sample(F&& fn, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

// Runs the peer script; file -> {"numpy_s": x, "torch_s": y}.
std::map<std::string, nlohmann::json> run_peers(const std::vector<Instance>& instances, int threads,
                                                Reporter& reporter) {
  std::map<std::string, nlohmann::json> out;
  std::vector<std::string> args{std::to_string(threads)};
  for (const Instance& inst : instances) args.push_back(inst.file);
  const std::optional<std::string> text = run_python_peer(kDotGeneralPeerScript, args, threads);
  if (!text) {
    reporter.progress("the python peers exited with an error (numpy/torch missing?)");
    return out;
  }
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("file")) out[j["file"].get<std::string>()] = j;
  }
  return out;
}

std::vector<std::string> bin_instances() {
  std::vector<std::string> files;
  const std::filesystem::path dir = std::filesystem::path(TENFERRO_SHARED_DIR) / "bench" / "instances";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("bin_", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int run_dot_general_suite(const SuiteOptions& options, Reporter& reporter) {
  const std::vector<std::string> files = options.inputs.empty() ? bin_instances() : options.inputs;
  if (files.empty()) {
    reporter.progress(
        fmt::format("no instances (looked for bin_*.json in {}/bench/instances); nothing to run", TENFERRO_SHARED_DIR));
    return 0;
  }
  std::vector<Instance> instances;
  int unmeasured = 0;  // named inputs that cannot be measured: the run fails
  for (const std::string& file : files) {
    const auto skip = [&](const std::string& why) {
      reporter.progress(fmt::format("skipping {}: {}", file, why));
      unmeasured += options.inputs.empty() ? 0 : 1;
    };
    Result<std::string> text = read_input_file(file, ".json instance file", std::uint64_t{1} << 30);
    if (!text.ok()) {
      skip(text.status().to_string());
      continue;
    }
    auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    Instance inst;
    std::string why;
    if (!j.is_object() || !j.contains("format_string") || !j.contains("shapes")) {
      skip("not an instance file (expected a JSON object with \"format_string\" and \"shapes\")");
      continue;
    }
    if (!parse_instance(j, inst, why)) {
      skip(why);
      continue;
    }
    inst.file = file;
    inst.name = j.value("name", std::filesystem::path(file).stem().string());
    inst.lhs = *Tensor::empty(inst.lhs_shape, DType::kFloat64);
    inst.rhs = *Tensor::empty(inst.rhs_shape, DType::kFloat64);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (Tensor* t : {&inst.lhs, &inst.rhs}) {
      double* p = static_cast<double*>(t->data());
      for (std::int64_t i = 0; i < t->numel(); ++i) p[i] = u(rng);
    }
    instances.push_back(std::move(inst));
  }
  if (instances.empty()) {
    reporter.progress("dot_general: no instance could be read; nothing to measure");
    return unmeasured > 0 ? 1 : 0;
  }
  auto native = cpu::NativeGemmProvider::create();
  if (!native.ok()) {
    reporter.progress(native.status().to_string());
    return 1;
  }
  const cpu::DotGeneralComposite composite(*native);
  const std::shared_ptr<HostAllocator> pool = cpu::CpuDomainMemoryPool::create(CpuDomainId(1), std::nullopt, nullptr);

  for (int threads : options.threads) {
    std::unique_ptr<cpu::ParallelContext> ctx;
    if (threads <= 1) {
      ctx = std::make_unique<cpu::SequentialContext>();
    } else {
      ctx = std::make_unique<cpu::ArenaParallelContext>(threads);
    }
    std::vector<std::vector<double>> ours(instances.size());
    std::vector<cpu::DotGeneralPlan> plans(instances.size());
    std::vector<int> runs(instances.size(), 0);
    auto measure_half = [&](std::size_t i) {
      const Instance& inst = instances[i];
      auto call = [&] {
        auto out = composite.dot_general(inst.lhs.view(), inst.rhs.view(), inst.dims, *ctx, &plans[i], pool);
        if (out.ok()) out->permute(inst.to_einsum_order).status().ignore();
      };
      if (runs[i] == 0) {
        call();
        const double one = sample(call, 1).front();
        runs[i] = options.runs > 0 ? options.runs : static_cast<int>(std::clamp(0.6 / std::max(one, 1e-9), 6.0, 200.0));
      }
      auto s = sample(call, std::max(2, runs[i] / 2));
      ours[i].insert(ours[i].end(), s.begin(), s.end());
    };
    for (std::size_t i = 0; i < instances.size(); ++i) {
      reporter.progress(fmt::format("{} threads={} (ours, first half)", instances[i].name, threads));
      measure_half(i);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    reporter.progress(fmt::format("numpy and torch, threads={}", threads));
    const auto peers = run_peers(instances, threads, reporter);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    for (std::size_t i = 0; i < instances.size(); ++i) {
      reporter.progress(fmt::format("{} threads={} (ours, second half)", instances[i].name, threads));
      measure_half(i);
    }
    for (std::size_t i = 0; i < instances.size(); ++i) {
      Samples s{ours[i]};
      const cpu::DotGeneralPlan& plan = plans[i];
      nlohmann::json extra = {{"format", instances[i].format},
                              {"path", std::string(cpu::to_string(plan.path))},
                              {"mode", std::string(cpu::to_string(plan.mode))},
                              {"copied_elements", plan.copied_elements},
                              {"jobs", plan.jobs},
                              {"m", plan.m},
                              {"n", plan.n},
                              {"k", plan.k}};
      const auto it = peers.find(instances[i].file);
      for (const char* peer : {"numpy", "torch"}) {
        Case c;
        c.name = fmt::format("{}_t{}_{}", instances[i].name, threads, peer);
        c.ours = s.median();
        c.unit = "s";
        c.threads = threads;
        c.runs = static_cast<int>(s.runs());
        c.extra = extra;
        const std::string key = std::string(peer) + "_s";
        if (it != peers.end() && it->second.contains(key)) {
          c.baseline = it->second[key].get<double>();
          c.baseline_name = peer;
        } else if (std::string(peer) == "torch") {
          continue;  // torch unavailable: report numpy only
        }
        reporter.add(std::move(c));
      }
    }
  }
  if (unmeasured > 0)
    reporter.progress(fmt::format("dot_general: {} named input(s) could not be measured", unmeasured));
  return unmeasured > 0 ? 1 : 0;
}

}  // namespace tenferro::bench
