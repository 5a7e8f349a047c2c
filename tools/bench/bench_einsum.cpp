// `tenferro bench einsum [FILES...]`: instance files contracted by the native
// einsum engine (eager, through a Runtime, along the instance's opt_flops
// reference path) against numpy.einsum and torch.einsum contracting pairwise
// along the same path (/usr/bin/python3, OPENBLAS_NUM_THREADS and
// OMP_NUM_THREADS set to the case's thread count), all in one run and
// interleaved per case: ours, then the peers, then ours again. Also the
// OpenBLAS DGEMM n=1024 rate per thread count, and the MERA instance's
// effective rate (2 * multiply-adds / time) against it. Without FILES every
// instance of ../shared/bench/instances except permutation_patterns.json,
// then the eager cases; the pseudo-file "eager" runs only those.
//
// Note [Einsum eager cases]
// eager_einsum_2x2: 'ij,jk->ik' on 2x2 float64 through EagerContext (one
// native-engine fast-path call) on an inline engine, so the number is the
// eager layer plus the einsum engine without an executor entry; baseline:
// numpy.einsum of the same 2x2 product in the same run. tci_changing_shapes:
// a TCI-like sweep of small three-tensor einsums whose bond dimensions
// change every call (each shape new in the first sweep, repeated in later
// ones); ours is the mean per call over all sweeps, planning included,
// against numpy.einsum(optimize=True) on the same sequence, and the case
// records that the engine planned once per distinct shape. vector_*: dot
// and matrix-vector shaped contractions (a GEMM with M or N of 1: `i,i->`,
// `ij,ij->i`, `ijk,ijk->k`, `ij,j->i`, `i,ij->j`) on the same inline engine
// against numpy.einsum of the same shapes; each records how many problems
// the native GEMM ran in its matrix-vector and batched-dot kernels (Note
// [Matrix-vector GEMM]), which those shapes must take.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::bench {
namespace {

// Pairwise contraction along the opt_flops path, opt_einsum's convention
// (the two positions are popped, larger first, and the result appended),
// labels renamed to ASCII letters per step for numpy.
constexpr const char* kEinsumPeerScript = R"PY(
import json, sys, time
import numpy as np
inst = json.load(open(sys.argv[1]))
runs = int(sys.argv[2])
peers = sys.argv[3].split(',')
lhs, out = inst['format_string'].split('->')
terms = lhs.split(',')
path = inst['paths']['opt_flops']['path']
rng = np.random.default_rng(0)
arrays = [rng.uniform(-1.0, 1.0, size=tuple(s)) for s in inst['shapes']]
letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
steps = []
cur = list(terms)
for pair in path:
    i, j = sorted(pair, reverse=True)
    a, b = cur[i], cur[j]
    rest = [t for k, t in enumerate(cur) if k != i and k != j]
    keep = set(out).union(*[set(t) for t in rest]) if rest else set(out)
    res = ''.join(c for c in a if c in keep)
    res += ''.join(c for c in b if c in keep and c not in res)
    if not rest:
        res = out
    names = {}
    for c in a + b + res:
        if c not in names:
            names[c] = letters[len(names)]
    sub = ''.join(names[c] for c in a) + ',' + ''.join(names[c] for c in b) + '->' + ''.join(names[c] for c in res)
    steps.append((i, j, sub))
    cur = rest + [res]
if len(terms) == 1:
    steps = []
def contract(ops, einsum):
    ops = list(ops)
    for i, j, sub in steps:
        x, y = ops[i], ops[j]
        ops = [t for k, t in enumerate(ops) if k != i and k != j] + [einsum(sub, x, y)]
    return ops[0]
result = {}
for peer in peers:
    if peer == 'numpy':
        ops = arrays
        fn = lambda: contract(ops, lambda s, x, y: np.einsum(s, x, y, optimize=True))
    else:
        import torch
        ops = [torch.from_numpy(a) for a in arrays]
        fn = lambda: contract(ops, torch.einsum)
    fn()
    times = []
    cpu = []
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    result[peer] = times
    result[peer + '_cpu'] = cpu
print(json.dumps(result))
)PY";

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Peer timings (seconds per run) by peer name; empty when python failed.
std::map<std::string, std::vector<double>> run_peers(const std::string& file, int threads, int runs) {
  std::map<std::string, std::vector<double>> out;
  const std::string args[] = {file, std::to_string(runs), "numpy,torch"};
  const std::optional<std::string> text = run_python_peer(kEinsumPeerScript, args, threads);
  if (!text) return out;
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = it.value().get<std::vector<double>>();
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

// The instance files of a directory, sorted; permutation_patterns.json (the
// layout suite's input, which sits beside the instances) is not one.
std::vector<std::string> instances_in(const std::string& dir) {
  // The error_code overloads: a path the OS refuses (too long, unreadable)
  // is not a directory here, and the loader names the reason.
  std::vector<std::string> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->path().filename() != "permutation_patterns.json")
      files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// OpenBLAS DGEMM rate (GFLOP/s, median) at n = 1024 with `threads`. One
// build, the pthread one, for every thread count: the loader shares a
// loaded libopenblas.so.0 by SONAME (Note [External BLAS isolation]), so a
// serial build loaded for one thread would also serve the request for two.
std::optional<double> openblas_dgemm_rate(int threads, int runs) {
  cpu::OpenBlasOptions options;
  options.build = cpu::OpenBlasBuild::kPthread;
  Result<std::shared_ptr<cpu::ExternalBlasGemmProvider>> blas = cpu::ExternalBlasGemmProvider::load_openblas(options);
  if (!blas.ok()) return std::nullopt;
  if (threads > 1 && (*blas)->identity().threading == cpu::BlasThreading::kSerial) return std::nullopt;
  if (!(*blas)->set_global_thread_count(threads).ok()) return std::nullopt;
  const std::int64_t n = 1024;
  std::vector<double> a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size());
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& x : a) x = u(rng);
  for (double& x : b) x = u(rng);
  const cpu::GemmRequest request{
      DType::kFloat64, cpu::GemmProblem{n, n, n, cpu::GemmInput{a.data(), n, 1}, cpu::GemmInput{b.data(), n, 1},
                                        cpu::GemmOutput{c.data(), n, 1}}};
  const cpu::SequentialContext seq;
  if (!(*blas)->gemm(request, seq).ok()) return std::nullopt;
  std::vector<double> seconds;
  for (int r = 0; r < std::max(runs, 5); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)(*blas)->gemm(request, seq);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n * n * n) / median(seconds) * 1e-9;
}

// numpy per-call seconds of the eager cases, keyed "2x2" and "tci".
constexpr const char* kEagerPeerScript = R"PY(
import json, sys, time
import numpy as np
bonds = [int(x) for x in sys.argv[1].split(',')]
sweeps = int(sys.argv[2])
a = np.random.default_rng(0).uniform(-1, 1, (2, 2)); b = a.copy()
for _ in range(1000): np.einsum('ij,jk->ik', a, b)
best = []
for _ in range(9):
    t0 = time.perf_counter()
    for _ in range(2000): np.einsum('ij,jk->ik', a, b)
    best.append((time.perf_counter() - t0) / 2000)
best.sort()
seq = []
rng = np.random.default_rng(1)
for s in range(len(bonds) - 3):
    x, y, z, w = bonds[s:s + 4]
    seq.append((rng.uniform(-1, 1, (x, 2, y)), rng.uniform(-1, 1, (y, 2, z)), rng.uniform(-1, 1, (z, 2, w))))
t0 = time.perf_counter()
calls = 0
for _ in range(sweeps):
    for p, q, r in seq:
        np.einsum('aib,bjc,ckd->aijkd', p, q, r, optimize=True)
        calls += 1
tci = (time.perf_counter() - t0) / calls
vector = []
for subscripts, shapes in json.loads(sys.argv[3]):
    ops = [rng.uniform(-1, 1, s) for s in shapes]
    reps = max(1, int(2e6 / sum(o.size for o in ops)))
    np.einsum(subscripts, *ops)
    times = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(reps): np.einsum(subscripts, *ops)
        times.append((time.perf_counter() - t0) / reps)
    times.sort()
    vector.append(times[4])
print(json.dumps({'2x2': best[4], 'tci': tci, 'vector': vector}))
)PY";

struct VectorCase {
  const char* name;
  const char* subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};

const std::vector<VectorCase>& vector_cases() {
  static const std::vector<VectorCase> cases = {
      {"vector_dot_1048576", "i,i->", {{1 << 20}, {1 << 20}}},
      {"vector_row_dots_1024x1024", "ij,ij->i", {{1024, 1024}, {1024, 1024}}},
      {"vector_row_dots_1000000x3", "ij,ij->i", {{1000000, 3}, {1000000, 3}}},
      {"vector_batched_dots_128x128x128", "ijk,ijk->k", {{128, 128, 128}, {128, 128, 128}}},
      {"vector_matvec_1024", "ij,j->i", {{1024, 1024}, {1024}}},
      {"vector_vecmat_1024", "i,ij->j", {{1024}, {1024, 1024}}},
  };
  return cases;
}

// The CPU engine without domains (work runs inline on the calling thread,
// sequential), with the native einsum module.
Result<runtime::Runtime> inline_einsum_runtime(std::shared_ptr<einsum::CpuEinsumExecutor> executor) {
  runtime::RuntimeBuilder builder;
  const cpu::CpuEngineOptions cpu_options;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, cpu_options));
  builder.add_extension_module(einsum::cpu_extension_module(cpu_options.id, std::move(executor)));
  return builder.build();
}

Tensor random_tensor(std::vector<std::int64_t> shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor t = *Tensor::empty(IntArrayRef(shape), DType::kFloat64);
  auto* d = static_cast<double*>(t.data());
  for (std::int64_t i = 0; i < t.numel(); ++i) d[i] = u(rng);
  return t;
}

void run_eager_cases(const SuiteOptions& options, Reporter& reporter) {
  reporter.progress("einsum: eager cases");
  Result<std::shared_ptr<cpu::NativeGemmProvider>> gemm = cpu::NativeGemmProvider::create();
  if (!gemm.ok()) return;
  Result<std::shared_ptr<einsum::CpuEinsumExecutor>> executor =
      einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(*gemm));
  if (!executor.ok()) return;
  Result<runtime::Runtime> rt = inline_einsum_runtime(*executor);
  if (!rt.ok()) {
    reporter.progress("einsum: " + rt.status().to_string());
    return;
  }
  runtime::EagerContext ctx = rt->on();
  std::mt19937_64 rng(3);

  // TCI-like bond dimensions: up and down, so later sweeps repeat shapes.
  std::vector<std::int64_t> bonds;
  for (std::int64_t d : {1, 2, 3, 4, 6, 8, 12, 16, 12, 8, 6, 4, 3, 2, 1, 2, 4, 8, 16, 8, 4, 2, 1}) bonds.push_back(d);
  const int sweeps = options.quick ? 2 : 5;
  std::string bond_list;
  for (std::size_t i = 0; i < bonds.size(); ++i) bond_list += (i > 0 ? "," : "") + std::to_string(bonds[i]);
  std::optional<double> numpy_2x2, numpy_tci;
  std::vector<double> numpy_vector;
  nlohmann::json vector_spec = nlohmann::json::array();
  for (const VectorCase& v : vector_cases()) vector_spec.push_back({v.subscripts, v.shapes});
  const std::string args[] = {bond_list, std::to_string(sweeps), vector_spec.dump()};
  if (const std::optional<std::string> text = run_python_peer(kEagerPeerScript, args, 1)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(*text);
      numpy_2x2 = j["2x2"].get<double>() * 1e9;
      numpy_tci = j["tci"].get<double>() * 1e6;
      numpy_vector = j["vector"].get<std::vector<double>>();
    } catch (const std::exception&) {
    }
  }

  // eager_einsum_2x2
  std::shared_ptr<const einsum::EinsumOp> mm = *einsum::EinsumOp::create("ij,jk->ik");
  const std::vector<Tensor> ab = {random_tensor({2, 2}, rng), random_tensor({2, 2}, rng)};
  bool ok = true;
  const Samples eager = time_batched(
      [&] {
        Result<Tensor> out = einsum::einsum(ctx, mm, ab);
        ok = ok && out.ok();
      },
      2000);
  const einsum::CpuEinsumMetrics after_2x2 = (*executor)->metrics();
  Case c{"eager_einsum_2x2",
         eager.median() * 1e9,
         "ns",
         numpy_2x2,
         numpy_2x2 ? "numpy" : "",
         1,
         static_cast<int>(eager.runs())};
  c.extra["fast_path_calls"] = ctx.metrics().fast_path_calls;
  c.extra["promoted_calls"] = ctx.metrics().promoted_calls;
  c.extra["plans_built"] = after_2x2.plans_built;
  c.extra["target_ns"] = 500;
  if (ok) reporter.add(std::move(c));

  // The same product through the executor alone (no runtime): the engine's share.
  const cpu::SequentialContext seq;
  const Samples direct = time_batched([&] { (void)(*executor)->einsum(*mm, ab, seq); }, 2000);
  reporter.add(Case{"direct_executor_einsum_2x2", direct.median() * 1e9, "ns", std::nullopt, "", 1,
                    static_cast<int>(direct.runs())});

  // tci_changing_shapes
  std::shared_ptr<const einsum::EinsumOp> tci = *einsum::EinsumOp::create("aib,bjc,ckd->aijkd");
  std::vector<std::vector<Tensor>> sequence;
  for (std::size_t s = 0; s + 3 < bonds.size(); ++s) {
    sequence.push_back({random_tensor({bonds[s], 2, bonds[s + 1]}, rng),
                        random_tensor({bonds[s + 1], 2, bonds[s + 2]}, rng),
                        random_tensor({bonds[s + 2], 2, bonds[s + 3]}, rng)});
  }
  const std::uint64_t plans_before = (*executor)->metrics().plans_built;
  const auto t0 = std::chrono::steady_clock::now();
  int calls = 0;
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (const std::vector<Tensor>& inputs : sequence) {
      ok = ok && einsum::einsum(ctx, tci, inputs).ok();
      ++calls;
    }
  }
  const double per_call = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls * 1e6;
  Case t{"tci_changing_shapes", per_call, "us", numpy_tci, numpy_tci ? "numpy" : "", 1, calls};
  std::set<std::vector<std::int64_t>> distinct;
  for (std::size_t s = 0; s + 3 < bonds.size(); ++s)
    distinct.insert({bonds[s], bonds[s + 1], bonds[s + 2], bonds[s + 3]});
  t.extra["distinct_shapes"] = distinct.size();
  t.extra["plans_built"] = (*executor)->metrics().plans_built - plans_before;
  t.extra["sweeps"] = sweeps;
  if (ok) reporter.add(std::move(t));

  // vector_*
  for (std::size_t i = 0; i < vector_cases().size(); ++i) {
    const VectorCase& v = vector_cases()[i];
    std::shared_ptr<const einsum::EinsumOp> op = *einsum::EinsumOp::create(v.subscripts);
    std::vector<Tensor> inputs;
    std::int64_t elements = 0;
    for (const std::vector<std::int64_t>& shape : v.shapes) {
      inputs.push_back(random_tensor(shape, rng));
      elements += inputs.back().numel();
    }
    const cpu::NativeGemmCounters before = (*gemm)->counters();
    bool ran = true;
    const Samples samples = time_batched([&] { ran = ran && einsum::einsum(ctx, op, inputs).ok(); },
                                         static_cast<int>(std::max<std::int64_t>(1, 2000000 / elements)));
    const cpu::NativeGemmCounters after = (*gemm)->counters();
    const std::optional<double> numpy =
        i < numpy_vector.size() ? std::optional<double>(numpy_vector[i] * 1e6) : std::nullopt;
    Case vc{v.name, samples.median() * 1e6, "us", numpy, numpy ? "numpy" : "", 1, static_cast<int>(samples.runs())};
    vc.extra["gemv_problems"] = after.gemv_problems - before.gemv_problems;
    vc.extra["dot_batch_problems"] = after.dot_batch_problems - before.dot_batch_problems;
    vc.extra["blocked_problems"] = after.blocked_problems - before.blocked_problems;
    if (ran) reporter.add(std::move(vc));
  }
}

}  // namespace

int run_einsum_suite(const SuiteOptions& options, Reporter& reporter) {
  const bool eager_only = options.inputs.size() == 1 && options.inputs[0] == "eager";
  // A directory stands for the instances in it; no input for the shared ones.
  std::vector<std::string> files;
  if (options.inputs.empty()) files = instances_in(std::string(TENFERRO_SHARED_DIR) + "/bench/instances");
  for (const std::string& input : eager_only ? std::vector<std::string>{} : options.inputs) {
    std::vector<std::string> in_dir = instances_in(input);
    if (in_dir.empty()) files.push_back(input);  // a file, or an empty directory refused by the loader
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  if (files.empty() && !eager_only) {
    reporter.progress("einsum: no instance files given and ../shared/bench/instances is absent");
    return 1;
  }
  if (std::optional<std::string> note = narrow_openblas_note()) reporter.progress(*note);
  std::map<int, std::vector<double>> ratios;  // ours / best peer, per thread count
  std::map<int, double> mera_rate;
  int unreadable = 0;  // named inputs that could not be measured: the suite fails
  for (const std::string& file : files) {
    Result<einsum::BenchmarkInstance> instance = einsum::load_benchmark_instance(file);
    if (!instance.ok()) {
      reporter.progress(fmt::format("einsum: skipping {}: {}", file, instance.status().to_string()));
      unreadable += options.inputs.empty() ? 0 : 1;
      continue;
    }
    for (int threads : options.threads) {
      reporter.progress(fmt::format("einsum: {} ({} tensors), {} thread{}", instance->name, instance->shapes.size(),
                                    threads, threads == 1 ? "" : "s"));
      cli::EinsumRunOptions run;
      run.threads = threads;
      run.runs = 1;
      Result<cli::EinsumRunResult> probe = cli::run_einsum_instance(*instance, run);
      if (!probe.ok()) {
        reporter.progress(fmt::format("einsum: {} failed: {}", instance->name, probe.status().to_string()));
        unreadable += options.inputs.empty() ? 0 : 1;
        continue;
      }
      // About a second of ours per block; 3..100 runs (sub-millisecond
      // instances need many: a block's first runs after the peers pay for
      // waking the domain's workers).
      const int runs = options.runs > 0 ? options.runs
                       : options.quick
                           ? 1
                           : static_cast<int>(std::clamp(1.0 / std::max(probe->min_seconds(), 1e-6), 3.0, 100.0));
      run.runs = runs;
      Result<cli::EinsumRunResult> first = cli::run_einsum_instance(*instance, run);
      const std::map<std::string, std::vector<double>> peers =
          instance->opt_flops ? run_peers(file, threads, runs) : std::map<std::string, std::vector<double>>{};
      Result<cli::EinsumRunResult> second = cli::run_einsum_instance(*instance, run);
      if (!first.ok() || !second.ok()) continue;
      std::vector<double> ours = first->seconds;
      ours.insert(ours.end(), second->seconds.begin(), second->seconds.end());
      std::vector<double> ours_cpu = first->cpu_seconds;
      ours_cpu.insert(ours_cpu.end(), second->cpu_seconds.begin(), second->cpu_seconds.end());
      Case c;
      c.name = fmt::format("{}_t{}", instance->name, threads);
      c.ours = median(ours);
      c.unit = "s";
      c.threads = threads;
      c.runs = static_cast<int>(ours.size());
      c.extra["path"] = first->path;
      c.extra["log10_flops"] = first->log10_flops;
      c.extra["effective_gflops"] = 2.0 * first->multiply_adds / c.ours * 1e-9;
      c.extra["planned_copies"] = first->planned_copies;
      c.extra["ours_cpu_s"] = median(ours_cpu);
      double best = INFINITY;
      for (const auto& [peer, seconds] : peers) {
        const double m = median(seconds);
        if (peer.ends_with("_cpu")) {
          c.extra[peer + "_s"] = m;
          continue;
        }
        c.extra[peer + "_s"] = m;
        if (m < best) {
          best = m;
          c.baseline_name = peer;
        }
      }
      if (std::isfinite(best)) {
        c.baseline = best;
        ratios[threads].push_back(c.ours / best);
      } else {
        c.baseline_name = "";
        reporter.progress(fmt::format("einsum: no peer timing for {}", instance->name));
      }
      if (instance->name == "str_nw_mera_closed_120") mera_rate[threads] = 2.0 * first->multiply_adds / c.ours * 1e-9;
      reporter.add(std::move(c));
    }
  }
  for (int threads : files.empty() ? std::vector<int>{} : options.threads) {
    const std::optional<double> dgemm = openblas_dgemm_rate(threads, options.quick ? 3 : 15);
    if (dgemm) {
      reporter.add(Case{fmt::format("openblas_dgemm_n1024_t{}", threads), *dgemm, "GFLOP/s", std::nullopt, "", threads,
                        options.quick ? 5 : 15});
    }
    if (mera_rate.count(threads) != 0) {
      Case c{fmt::format("mera_effective_rate_vs_dgemm_t{}", threads),
             mera_rate[threads],
             "GFLOP/s",
             dgemm,
             "openblas_dgemm_n1024",
             threads,
             1};
      reporter.add(std::move(c));
    }
    const std::vector<double>& r = ratios[threads];
    if (!r.empty()) {
      double log_sum = 0.0;
      for (double x : r) log_sum += std::log(x);
      Case g{fmt::format("geomean_time_vs_best_peer_t{}", threads),
             std::exp(log_sum / static_cast<double>(r.size())),
             "fraction",
             std::nullopt,
             "",
             threads,
             static_cast<int>(r.size())};
      g.extra["target"] = "<= 0.5";
      reporter.add(std::move(g));
    }
  }
  if (eager_only || options.inputs.empty()) run_eager_cases(options, reporter);
  if (unreadable > 0) reporter.progress(fmt::format("einsum: {} named input(s) could not be measured", unreadable));
  return unreadable > 0 ? 1 : 0;
}

}  // namespace tenferro::bench
