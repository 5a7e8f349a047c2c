// `tenferro bench fft`: complex128 transforms through the eager fft calls
// on the CPU engine over a managed domain of 1 and 2 pinned threads (the
// default FFTW engine), against numpy.fft and torch.fft measured in the
// same run at the same thread count (the baseline is the faster peer):
//  - 1-D fft, n = 2^10 .. 2^20 (a single transform: one thread does it);
//  - 2-D fft2 of 1024 x 1024 (each axis pass split over the workers);
//  - a batch of 4096 transforms of length 256 (fft along the last axis);
//  - lengths the prime-factor kernel takes (Notes [Medium prime factors],
//    [Grouped prime factors]): fft2 of 255 x 255 (255 = 15 * 17) and a
//    batch of 256 transforms of the prime 89.
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/fft_cpu.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::bench {
namespace {

struct FftCase {
  std::string name;
  Dims shape;
  Dims axes;
};

std::vector<FftCase> fft_cases(bool quick) {
  std::vector<FftCase> cases;
  for (int p = 10; p <= 20; p += quick ? 4 : 2) cases.push_back({fmt::format("fft_c128_n2^{}", p), {1 << p}, {0}});
  cases.push_back({"fft2_c128_1024x1024", {1024, 1024}, {0, 1}});
  cases.push_back({"fft_c128_batch4096_n256", {4096, 256}, {1}});
  cases.push_back({"fft2_c128_255x255", {255, 255}, {0, 1}});
  cases.push_back({"fft_c128_batch256_n89", {256, 89}, {1}});
  cases.push_back({"fft_c128_batch256_n289", {256, 289}, {1}});  // Note [Direct prime columns]
  return cases;
}

constexpr const char* kFftPeerScript = R"PY(
import json, sys, time
import numpy as np
try:
    import torch
except Exception:
    torch = None
jobs = json.loads(sys.argv[1])
threads = int(sys.argv[2])
if torch is not None:
    torch.set_num_threads(threads)
def median_time(fn, max_runs):
    fn()
    out = []
    t_end = time.perf_counter() + 0.3
    while len(out) < 5 or (time.perf_counter() < t_end and len(out) < max_runs):
        t0 = time.perf_counter(); fn(); out.append(time.perf_counter() - t0)
    out.sort()
    return out[len(out) // 2]
for job in jobs:
    rng = np.random.default_rng(1)
    shape = job["shape"]
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    axes = tuple(job["axes"])
    res = {"case": job["name"], "numpy": median_time(lambda: np.fft.fftn(x, axes=axes), 200)}
    if torch is not None:
        xt = torch.from_numpy(x)
        res["torch"] = median_time(lambda: torch.fft.fftn(xt, dim=axes), 200)
    print(json.dumps(res), flush=True)
)PY";

Result<runtime::Runtime> domain_runtime(int threads, std::shared_ptr<fft::CpuFftEngine> engine) {
  cpu::CpuEngineOptions options;
  TENFERRO_ASSIGN_OR_RETURN(options.domains, cli::managed_cpu_domains(threads));
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, options));
  builder.add_extension_module(fft::cpu_extension_module(options.id, std::move(engine)));
  return builder.build();
}

Tensor random_c128(IntArrayRef shape) {
  std::vector<std::complex<double>> v(static_cast<std::size_t>(numel_unchecked(shape)));
  std::uint64_t state = 88172645463325252ULL;
  for (auto& z : v) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const double a = static_cast<double>(state >> 11) * 0x1.0p-53;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    z = {a - 0.5, static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5};
  }
  return *Tensor::from_values<std::complex<double>>(std::span<const std::complex<double>>(v), shape);
}

}  // namespace

int run_fft_suite(const SuiteOptions& options, Reporter& reporter) {
  const std::vector<FftCase> cases = fft_cases(options.quick);
  std::vector<double> ratios;
  for (int threads : options.threads) {
    auto engine = fft::CpuFftEngine::create_default();
    Result<runtime::Runtime> rt = domain_runtime(threads, engine);
    if (!rt.ok()) {
      reporter.progress("cannot build the CPU engine over managed domains: " + rt.status().to_string());
      return 1;
    }
    runtime::EagerContext ctx = rt->on();
    nlohmann::json jobs = nlohmann::json::array();
    for (const FftCase& c : cases) jobs.push_back({{"name", c.name}, {"shape", c.shape}, {"axes", c.axes}});
    reporter.progress(fmt::format("numpy.fft / torch.fft at {} thread(s)", threads));
    const std::string args[] = {jobs.dump(), std::to_string(threads)};
    const std::optional<std::string> text = run_python_peer(kFftPeerScript, args, threads);
    std::map<std::string, nlohmann::json> peers;
    if (text) {
      std::istringstream lines(*text);
      for (std::string line; std::getline(lines, line);) {
        auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("case")) peers[j["case"].get<std::string>()] = j;
      }
    } else {
      reporter.progress("the numpy/torch peer exited with an error");
    }
    for (const FftCase& c : cases) {
      reporter.progress(fmt::format("{} at {} thread(s)", c.name, threads));
      const Tensor x = random_c128(c.shape);
      Status failure;
      const Samples s = time_runs(
          [&] {
            Result<Tensor> y = fft::fftn(ctx, x, {}, c.axes);
            if (!y.ok()) failure = y.status();
          },
          options.runs > 0 ? options.runs : 5, 0.3, 200);
      if (!failure.ok()) {
        reporter.progress(c.name + ": " + failure.to_string());
        return 1;
      }
      Case out{fmt::format("{}_t{}", c.name, threads),
               s.median(),
               "s",
               std::nullopt,
               "",
               threads,
               static_cast<int>(s.runs())};
      if (auto p = peers.find(c.name); p != peers.end()) {
        const nlohmann::json& j = p->second;
        double best = j["numpy"].get<double>();
        out.baseline_name = "numpy";
        if (j.contains("torch") && j["torch"].get<double>() < best) {
          best = j["torch"].get<double>();
          out.baseline_name = "torch";
        }
        out.baseline = best;
        out.extra["numpy_s"] = j["numpy"];
        if (j.contains("torch")) out.extra["torch_s"] = j["torch"];
        ratios.push_back(best / s.median());
      }
      auto op = fft::FftOp::make_n(fft::FftKind::kFft, {}, c.axes);
      out.extra["explain"] = engine->explain(**op, DType::kComplex128, c.shape);
      reporter.add(std::move(out));
    }
  }
  if (!ratios.empty()) {
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    reporter.progress(fmt::format("geomean ratio vs the best peer: {:.3f} over {} cases",
                                  std::exp(log_sum / static_cast<double>(ratios.size())), ratios.size()));
  }
  return 0;
}

}  // namespace tenferro::bench
