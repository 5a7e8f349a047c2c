// `tenferro bench linalg [crossover|batch]`: the linalg extension through the
// runtime's eager path (an inline CPU engine with the linalg module), float64.
//  - Providers: every operation at n = 256 and 1024 (--quick: 64, 256) with
//    the LAPACK provider (serial OpenBLAS) and with the Eigen provider (where
//    it serves the operation: not the SVD family, Note [No Eigen SVD]), each
//    against numpy/scipy (/usr/bin/python3, OPENBLAS_NUM_THREADS=1, same
//    shapes, random data) timed in one python process per size, between the
//    two halves of our samples. LAPACK and Eigen samples alternate (ABAB).
//    `default` in each case says which provider the measured default table
//    picks for that size.
//  - Batch (alone with `batch`): 1,000 16x16 thin SVDs with the default engine at 1 and 2 threads
//    (the CPU engine over a managed domain of pinned workers), alternating; the
//    2-thread case's baseline is the 1-thread time (ratio = speedup), the
//    1-thread case's is numpy's batched svd on 1 thread.
//  - `crossover`: each provider operation at linalg::kDefaultTableSizes
//    (n = 16, 64, 256, 1024; --quick: 16, 64), Eigen (ours) against LAPACK
//    (baseline), alternating, where Eigen serves the operation (otherwise
//    LAPACK alone, eigen_us 0); ratio > 1 means Eigen is faster, `faster`
//    applies the table's tie margin and `table` is what the engine's current
//    provider table picks there ("none" when it cannot be read). With
//    --table-out FILE the medians (microseconds) are written as a provider
//    table file (Note [Provider table file]) the linalg engine reads
//    (LinalgEngineOptions::provider_table, TENFERRO_LINALG_PROVIDER_TABLE);
//    sizes not measured (--quick) are 0 there.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
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
#include "einsum_command.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/linalg_cpu.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/spi/event_domain.h"

namespace tenferro::bench {
namespace {

using linalg::LinalgOp;

struct OpCase {
  const char* name;
  std::shared_ptr<const LinalgOp> op;
  enum class Input { kGeneral, kSpd, kWellConditioned, kLower } input;
  bool rhs;  ///< a second operand [n, 16]
};

std::vector<OpCase> op_cases() {
  using I = OpCase::Input;
  return {
      {"svd", LinalgOp::svd(linalg::SvdMode::kThin), I::kGeneral, false},
      {"svd_values", LinalgOp::svd(linalg::SvdMode::kValuesOnly), I::kGeneral, false},
      {"qr", LinalgOp::qr(), I::kGeneral, false},
      {"eigh", LinalgOp::eigh(), I::kSpd, false},
      {"eigvalsh", LinalgOp::eigh(false), I::kSpd, false},
      {"eig", LinalgOp::eig(), I::kGeneral, false},
      {"cholesky", LinalgOp::cholesky(), I::kSpd, false},
      {"lu", LinalgOp::lu(), I::kGeneral, false},
      {"solve", LinalgOp::solve(), I::kWellConditioned, true},
      {"triangular_solve", LinalgOp::triangular_solve(true), I::kLower, true},
      {"inv", LinalgOp::inv(), I::kWellConditioned, false},
      {"det", LinalgOp::det(), I::kWellConditioned, false},
      {"slogdet", LinalgOp::slogdet(), I::kWellConditioned, false},
      {"lstsq", LinalgOp::lstsq(), I::kGeneral, true},
      {"pinv", LinalgOp::pinv(), I::kGeneral, false},
      {"norm2", *LinalgOp::matrix_norm(linalg::NormOrder::kTwo), I::kGeneral, false},
      // Note [Elementwise norms]: engine-computed, no provider slot.
      {"norm_fro", *LinalgOp::matrix_norm(linalg::NormOrder::kFrobenius), I::kGeneral, false},
  };
}

// numpy/scipy equivalents; prints {"op", "n", "batch", "seconds"} per job.
constexpr const char* kLinalgPeerScript = R"PY(
import json, sys, time
import numpy as np
try:
    import scipy.linalg as sl
except ImportError:  # lu and triangular_solve then have no peer
    sl = None
    print("scipy is not installed: no peer for lu and triangular_solve", file=sys.stderr)
jobs = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
def inputs(kind, n, batch):
    shape = (batch, n, n) if batch > 1 else (n, n)
    a = rng.uniform(-1, 1, shape)
    if kind == "spd":
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    elif kind in ("well", "lower"):
        a = a + n * np.eye(n)
        if kind == "lower":
            a = np.tril(a)
    return a, rng.uniform(-1, 1, (n, 16))
ops = {
    "svd": lambda a, b: np.linalg.svd(a, full_matrices=False),
    "svd_values": lambda a, b: np.linalg.svd(a, compute_uv=False),
    "qr": lambda a, b: np.linalg.qr(a),
    "eigh": lambda a, b: np.linalg.eigh(a),
    "eigvalsh": lambda a, b: np.linalg.eigvalsh(a),
    "eig": lambda a, b: np.linalg.eig(a),
    "cholesky": lambda a, b: np.linalg.cholesky(a),
    "lu": lambda a, b: sl.lu_factor(a, check_finite=False) if sl else None,
    "solve": lambda a, b: np.linalg.solve(a, b),
    "triangular_solve": lambda a, b: sl.solve_triangular(a, b, lower=True, check_finite=False) if sl else None,
    "inv": lambda a, b: np.linalg.inv(a),
    "det": lambda a, b: np.linalg.det(a),
    "slogdet": lambda a, b: np.linalg.slogdet(a),
    "lstsq": lambda a, b: np.linalg.lstsq(a, b, rcond=None),
    "pinv": lambda a, b: np.linalg.pinv(a),
    "norm2": lambda a, b: np.linalg.norm(a, 2),
    "norm_fro": lambda a, b: np.linalg.norm(a, axis=(-2, -1)),
}
for job in jobs:
    if sl is None and job["op"] in ("lu", "triangular_solve"):
        continue
    a, b = inputs(job["input"], job["n"], job["batch"])
    fn = ops[job["op"]]
    fn(a, b)
    t0 = time.perf_counter(); fn(a, b); one = time.perf_counter() - t0
    runs = int(min(job["max_runs"], max(3, 1.0 / max(one, 1e-9))))
    out = []
    for _ in range(runs):
        t0 = time.perf_counter(); fn(a, b); out.append(time.perf_counter() - t0)
    out.sort()
    print(json.dumps({"op": job["op"], "n": job["n"], "batch": job["batch"], "seconds": out[len(out) // 2]}),
          flush=True)
)PY";

const char* input_name(OpCase::Input i) {
  switch (i) {
    case OpCase::Input::kSpd:
      return "spd";
    case OpCase::Input::kWellConditioned:
      return "well";
    case OpCase::Input::kLower:
      return "lower";
    default:
      return "general";
  }
}

// (op, n, batch) -> median seconds; empty when python failed.
std::map<std::string, double> run_peers(const nlohmann::json& jobs, Reporter& reporter) {
  std::map<std::string, double> out;
  const std::string args[] = {jobs.dump()};
  const std::optional<std::string> text = run_python_peer(kLinalgPeerScript, args, 1);
  if (!text) {
    reporter.progress("the numpy/scipy peer exited with an error");
    return out;
  }
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("op")) {
      out[fmt::format("{}/{}/{}", j["op"].get<std::string>(), j["n"].get<int>(), j["batch"].get<int>())] =
          j["seconds"].get<double>();
    }
  }
  return out;
}

runtime::Runtime make_runtime(std::shared_ptr<linalg::CpuLinalgEngine> engine) {
  runtime::RuntimeBuilder builder;
  runtime::EngineRegistration r;
  r.metadata.id = EngineId(1);
  r.metadata.name = "bench-cpu";
  auto executor = std::make_shared<runtime::InlineEngineExecutor>();
  r.event_driver = runtime::make_cpu_immediate_event_driver(executor);
  r.executor = std::move(executor);
  builder.add_engine(std::move(r));
  builder.add_extension_module(linalg::cpu_extension_module(EngineId(1), std::move(engine)));
  return *builder.build();
}

Tensor random_input(OpCase::Input kind, std::int64_t batch, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(batch * n * n));
  for (double& x : v) x = u(rng);
  for (std::int64_t b = 0; b < batch; ++b) {
    double* m = v.data() + b * n * n;
    if (kind == OpCase::Input::kSpd) {
      std::vector<double> s(static_cast<std::size_t>(n * n), 0.0);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < n; ++k)
          for (std::int64_t j = 0; j < n; ++j) s[i * n + j] += m[i * n + k] * m[j * n + k];
      std::copy(s.begin(), s.end(), m);
    }
    if (kind != OpCase::Input::kGeneral)
      for (std::int64_t i = 0; i < n; ++i) m[i * n + i] += static_cast<double>(n);
    if (kind == OpCase::Input::kLower)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = i + 1; j < n; ++j) m[i * n + j] = 0;
  }
  const Dims shape = batch > 1 ? Dims{batch, n, n} : Dims{n, n};
  return *Tensor::from_values<double>(std::span<const double>(v.data(), v.size()), shape);
}

double seconds_of(runtime::EagerContext& ctx, const std::shared_ptr<const LinalgOp>& op,
                  const std::vector<Tensor>& inputs) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<runtime::TensorList> out = ctx.call(op, inputs);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.ok()) std::fprintf(stderr, "%s failed: %s\n", op->describe().c_str(), out.status().to_string().c_str());
  return s;
}

// Alternating samples of two contexts; `runs` pairs.
void sample_pair(runtime::EagerContext& a, runtime::EagerContext& b, const std::shared_ptr<const LinalgOp>& op,
                 const std::vector<Tensor>& inputs, int runs, Samples& sa, Samples& sb) {
  for (int r = 0; r < runs; ++r) {
    sa.seconds.push_back(seconds_of(a, op, inputs));
    sb.seconds.push_back(seconds_of(b, op, inputs));
  }
}

std::shared_ptr<linalg::CpuLinalgEngine> engine_with(const std::shared_ptr<const linalg::CpuLinalgProvider>& p) {
  return std::make_shared<linalg::CpuLinalgEngine>(
      linalg::LinalgProviderPolicy::fixed(linalg::LinalgProviderBundle::all(p)));
}

// Whether the op is computed by the engine itself (no provider slot).
bool engine_computed(const OpCase& c) { return linalg::slot_of(c.op->attributes()) == linalg::LinalgSlot::kNone; }

// Whether `provider` serves `op` on float64 [n, n] operands (the Eigen
// provider leaves the SVD family to LAPACK: Note [No Eigen SVD]); an
// engine-computed op is measured once, as the LAPACK side.
bool serves(const std::shared_ptr<const linalg::CpuLinalgProvider>& provider, const OpCase& c, std::int64_t n) {
  const Dims square = {n, n};
  const Dims rhs_shape = {n, 16};
  std::vector<IntArrayRef> shapes = {IntArrayRef(square)};
  if (c.rhs) shapes.push_back(rhs_shape);
  return engine_with(provider)->select(*c.op, DType::kFloat64, shapes, 1).ok();
}

// Alternating samples of two contexts, or of the first alone when the
// second's provider does not serve the operation.
void sample_pair_if(bool both, runtime::EagerContext& a, runtime::EagerContext& b,
                    const std::shared_ptr<const LinalgOp>& op, const std::vector<Tensor>& inputs, int runs, Samples& sa,
                    Samples& sb) {
  if (both) return sample_pair(a, b, op, inputs, runs, sa, sb);
  for (int r = 0; r < runs; ++r) sa.seconds.push_back(seconds_of(a, op, inputs));
}

int run_providers(const SuiteOptions& options, Reporter& reporter,
                  const std::shared_ptr<const linalg::CpuLinalgProvider>& lapack,
                  const std::shared_ptr<const linalg::CpuLinalgProvider>& eigen) {
  runtime::Runtime rl = make_runtime(engine_with(lapack)), re = make_runtime(engine_with(eigen));
  const auto table = linalg::CpuLinalgEngine::create_default().value();
  const std::vector<std::int64_t> sizes =
      options.quick ? std::vector<std::int64_t>{64, 256} : std::vector<std::int64_t>{256, 1024};
  for (std::int64_t n : sizes) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const OpCase& c : op_cases()) {
      jobs.push_back({{"op", c.name}, {"n", n}, {"batch", 1}, {"input", input_name(c.input)}, {"max_runs", 20}});
    }
    struct Timing {
      Samples lapack, eigen;
    };
    std::vector<Timing> timings(op_cases().size());
    std::map<std::string, double> peers;
    for (int half = 0; half < 2; ++half) {
      if (half == 1) {
        reporter.progress(fmt::format("numpy/scipy peers at n={}", n));
        peers = run_peers(jobs, reporter);
      }
      std::size_t i = 0;
      for (const OpCase& c : op_cases()) {
        reporter.progress(fmt::format("{} n={} ({} half)", c.name, n, half == 0 ? "first" : "second"));
        std::vector<Tensor> inputs = {random_input(c.input, 1, n, 1)};
        if (c.rhs) inputs.push_back(random_input(OpCase::Input::kGeneral, 1, n, 2).slice(1, 0, 16).value());
        runtime::EagerContext cl = rl.on(), ce = re.on();
        const bool eigen_serves = !engine_computed(c) && serves(eigen, c, n);
        if (half == 0) {  // warm up both, size the run count from one call
          (void)seconds_of(cl, c.op, inputs);
          if (eigen_serves) (void)seconds_of(ce, c.op, inputs);
        }
        const double one = std::max(seconds_of(cl, c.op, inputs), 1e-6);
        const int runs = options.runs > 0 ? options.runs : static_cast<int>(std::clamp(0.75 / one, 2.0, 15.0));
        sample_pair_if(eigen_serves, cl, ce, c.op, inputs, runs, timings[i].lapack, timings[i].eigen);
        ++i;
      }
    }
    std::size_t i = 0;
    for (const OpCase& c : op_cases()) {
      const Dims square = {n, n};
      const Dims rhs_shape = {n, 16};
      std::vector<IntArrayRef> shapes = {IntArrayRef(square)};
      if (c.rhs) shapes.push_back(rhs_shape);
      Result<linalg::LinalgSelection> chosen = table->select(*c.op, DType::kFloat64, shapes, 1);
      const auto peer = peers.find(fmt::format("{}/{}/1", c.name, n));
      for (int side = 0; side < 2; ++side) {
        const Samples& s = side == 0 ? timings[i].lapack : timings[i].eigen;
        if (s.runs() == 0) continue;  // a provider that does not serve the operation
        Case row{fmt::format("{}_n{}_{}", c.name, n,
                             side == 1            ? "eigen"
                             : engine_computed(c) ? "engine"
                                                  : "lapack"),
                 s.median(),
                 "s",
                 std::nullopt,
                 "numpy",
                 1,
                 static_cast<int>(s.runs())};
        if (peer != peers.end()) row.baseline = peer->second;
        row.extra["default"] = chosen.ok() ? chosen->provider : std::string("error");
        row.extra["lapack_s"] = timings[i].lapack.median();
        if (timings[i].eigen.runs() > 0) row.extra["eigen_s"] = timings[i].eigen.median();
        reporter.add(std::move(row));
      }
      ++i;
    }
  }
  return 0;
}

// The CPU engine (cpu::register_cpu_engine) over one managed domain of
// `threads` pinned CPUs with the linalg module on it, as a user runs it.
Result<runtime::Runtime> domain_runtime(int threads, std::shared_ptr<linalg::CpuLinalgEngine> engine) {
  cpu::CpuEngineOptions options;
  TENFERRO_ASSIGN_OR_RETURN(options.domains, cli::managed_cpu_domains(threads));
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, options));
  builder.add_extension_module(linalg::cpu_extension_module(options.id, std::move(engine)));
  return builder.build();
}

int run_batch(const SuiteOptions& options, Reporter& reporter) {
  const std::int64_t batch = 1000, n = 16;
  auto t1 = linalg::CpuLinalgEngine::create_default().value();
  auto t2 = linalg::CpuLinalgEngine::create_default().value();
  Result<runtime::Runtime> rt1 = domain_runtime(1, t1), rt2 = domain_runtime(2, t2);
  if (!rt1.ok() || !rt2.ok()) {
    reporter.progress("cannot build the CPU engine over managed domains: " +
                      (rt1.ok() ? rt2.status() : rt1.status()).to_string());
    return 1;
  }
  runtime::Runtime& r1 = *rt1;
  runtime::Runtime& r2 = *rt2;
  const std::vector<Tensor> inputs = {random_input(OpCase::Input::kGeneral, batch, n, 3)};
  const auto op = LinalgOp::svd(linalg::SvdMode::kThin);
  runtime::EagerContext c1 = r1.on(), c2 = r2.on();
  (void)seconds_of(c1, op, inputs);
  (void)seconds_of(c2, op, inputs);
  const int runs = options.runs > 0 ? options.runs : (options.quick ? 5 : 21);
  Samples s1, s2;
  sample_pair(c1, c2, op, inputs, runs / 2, s1, s2);
  nlohmann::json jobs =
      nlohmann::json::array({{{"op", "svd"}, {"n", n}, {"batch", batch}, {"input", "general"}, {"max_runs", 30}}});
  reporter.progress("numpy batched svd");
  const std::map<std::string, double> peers = run_peers(jobs, reporter);
  sample_pair(c1, c2, op, inputs, runs - runs / 2, s1, s2);
  const Dims batched = {batch, n, n};
  const std::vector<IntArrayRef> shapes = {IntArrayRef(batched)};
  Case one{"svd_batch1000_n16_t1", s1.median(), "s", std::nullopt, "numpy", 1, static_cast<int>(s1.runs())};
  if (auto p = peers.find(fmt::format("svd/{}/{}", n, batch)); p != peers.end()) one.baseline = p->second;
  one.extra["explain"] = t1->explain(*op, DType::kFloat64, shapes, 1);
  Case two{"svd_batch1000_n16_t2", s2.median(), "s", s1.median(), "tenferro_t1", 2, static_cast<int>(s2.runs())};
  two.extra["explain"] = t2->explain(*op, DType::kFloat64, shapes, 2);
  two.extra["outer_runs"] = t2->stats().outer_runs;
  two.extra["outer_chunks"] = t2->stats().outer_chunks;
  reporter.add(std::move(one));
  reporter.add(std::move(two));
  return 0;
}

int run_crossover(const SuiteOptions& options, Reporter& reporter,
                  const std::shared_ptr<const linalg::CpuLinalgProvider>& lapack,
                  const std::shared_ptr<const linalg::CpuLinalgProvider>& eigen) {
  runtime::Runtime rl = make_runtime(engine_with(lapack)), re = make_runtime(engine_with(eigen));
  const std::size_t classes = options.quick ? 2 : linalg::kNumSizeClasses;
  // What the current table picks, for comparison; the measured one is built below.
  const Result<linalg::ProviderTable> current = linalg::read_provider_table(linalg::default_provider_table_path());
  linalg::ProviderTable measured;
  for (int s = 0; s < linalg::kNumLinalgSlots; ++s)
    measured.rows[static_cast<std::size_t>(s)].slot = static_cast<linalg::LinalgSlot>(s);
  for (const OpCase& c : op_cases()) {
    const std::string name = c.name;
    if (name == "det" || name == "slogdet" || name == "norm2" || name == "norm_fro") continue;  // no slot of their own
    const linalg::LinalgSlot slot = linalg::slot_of(c.op->attributes());
    const bool table_op = name != "svd_values";  // svd_values is shown, the thin svd makes the svd row
    for (std::size_t k = 0; k < classes; ++k) {
      const std::int64_t n = linalg::kDefaultTableSizes[k];
      reporter.progress(fmt::format("crossover {} n={}", c.name, n));
      std::vector<Tensor> inputs = {random_input(c.input, 1, n, 5)};
      if (c.rhs)
        inputs.push_back(random_input(OpCase::Input::kGeneral, 1, std::max<std::int64_t>(n, 16), 6)
                             .slice(0, 0, n)
                             .value()
                             .slice(1, 0, 16)
                             .value());
      runtime::EagerContext cl = rl.on(), ce = re.on();
      const bool eigen_serves = serves(eigen, c, n);
      (void)seconds_of(cl, c.op, inputs);
      if (eigen_serves) (void)seconds_of(ce, c.op, inputs);
      const double one = std::max(seconds_of(cl, c.op, inputs), 1e-7);
      const int runs = options.runs > 0 ? options.runs : static_cast<int>(std::clamp(0.3 / one, 5.0, 2001.0));
      Samples sl, se;
      sample_pair_if(eigen_serves, cl, ce, c.op, inputs, runs, sl, se);
      if (table_op) measured.rows[static_cast<std::size_t>(slot)].lapack_us[k] = sl.median() * 1e6;
      if (!eigen_serves) continue;  // eigen_us stays 0: not measured, so the table picks LAPACK
      if (table_op) measured.rows[static_cast<std::size_t>(slot)].eigen_us[k] = se.median() * 1e6;
      Case out{fmt::format("{}_n{}_crossover", c.name, n),
               se.median(),
               "s",
               sl.median(),
               "lapack",
               1,
               static_cast<int>(se.runs())};
      out.extra["faster"] = se.median() < linalg::kDefaultTableTieMargin * sl.median() ? "eigen" : "lapack";
      out.extra["table"] = current.ok() ? std::string(current->rows[static_cast<std::size_t>(slot)].pick(k)) : "none";
      reporter.add(std::move(out));
    }
  }
  if (options.table_out.empty()) return 0;
  double load[1] = {-1};
  (void)getloadavg(load, 1);
  const std::time_t now = std::time(nullptr);
  char date[32] = {};
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  measured.source = fmt::format("`tenferro bench linalg crossover{}` on {}, {} CPUs online, load {:.2f}",
                                options.quick ? " --quick" : "", date, std::thread::hardware_concurrency(), load[0]);
  std::ofstream file(options.table_out, std::ios::binary | std::ios::trunc);
  file << linalg::format_provider_table(measured);
  file.close();
  if (!file) {
    reporter.progress(fmt::format("cannot write the provider table to {}", options.table_out));
    return 1;
  }
  reporter.progress(fmt::format("provider table written to {}", options.table_out));
  return 0;
}

}  // namespace

int run_linalg_suite(const SuiteOptions& options, Reporter& reporter) {
  for (const std::string& part : options.inputs) {
    if (part != "crossover" && part != "batch") {
      reporter.progress(fmt::format("linalg: unknown part '{}'; expected crossover or batch", part));
      return 1;
    }
  }
  Result<std::shared_ptr<linalg::LapackLinalgProvider>> lapack = linalg::LapackLinalgProvider::load();
  if (!lapack.ok()) {
    reporter.progress("cannot load the LAPACK provider: " + lapack.status().to_string());
    return 1;
  }
  reporter.progress(fmt::format("LAPACK provider: {} ({})", (*lapack)->name(), (*lapack)->capability().detail));
  if (std::optional<std::string> note = narrow_openblas_note()) reporter.progress(*note);
  const auto eigen = std::make_shared<linalg::EigenLinalgProvider>();
  const auto asked = [&](std::string_view part) {
    return std::find(options.inputs.begin(), options.inputs.end(), part) != options.inputs.end();
  };
  if (asked("crossover")) return run_crossover(options, reporter, *lapack, eigen);
  // The other parts run the default engine, which needs the table.
  if (Result<linalg::ProviderTable> t = linalg::read_provider_table(linalg::default_provider_table_path()); !t.ok()) {
    reporter.progress("cannot read the linalg provider table: " + t.status().to_string());
    return 1;
  }
  if (const int rc = run_batch(options, reporter); rc != 0 || asked("batch")) return rc;
  return run_providers(options, reporter, *lapack, eigen);
}

}  // namespace tenferro::bench
