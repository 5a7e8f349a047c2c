// `tenferro bench gemm`: the native GEMM provider against OpenBLAS, both
// through the CpuGemmProvider interface, on square row-major problems
// (C = A B, the numpy layout), interleaved sample by sample in one run.
// Baseline: the pthread OpenBLAS build with its global thread count set to
// the case's (at 1 thread it runs the serial code path).
// Ours: native kernels on a SequentialContext (1 thread) or, for more
// threads, inside one managed CPU domain of that many pinned workers.
// Small products (n = 4 to 64: Note [Small GEMM]) are reported in ns per
// call, timed in batches of consecutive calls, at 1 thread only. Positional
// inputs, when given, keep only the cases whose name starts with one of them
// (`tenferro bench gemm zgemm_n256 dgemm_n1024_t2`), for tuning loops.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/cpu/domains/execution_context.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::bench {
namespace {

using cpu::CpuGemmProvider;
using cpu::GemmRequest;

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Matrices are tenferro tensors, as a user's operands would be (for n >= 724
// their storage is backed by transparent huge pages, Note [Huge pages for
// large buffers]); OpenBLAS gets the same buffers.
template <class T>
std::span<T> elements(Tensor& t) {
  return {static_cast<T*>(t.data()), static_cast<std::size_t>(t.numel())};
}

template <class T>
Tensor random_matrix(DType dtype, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor v = *Tensor::empty({n, n}, dtype);
  for (T& x : elements<T>(v)) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(u(rng));
    } else {
      const double re = u(rng);
      x = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(u(rng)));
    }
  }
  return v;
}

struct GemmCase {
  const char* prefix;  // "dgemm", ...
  DType dtype;
  std::int64_t n;
};

template <class T>
void run_case(const GemmCase& c, int threads, const cpu::ParallelContext& ctx, const CpuGemmProvider& ours,
              const CpuGemmProvider* base, int runs_option, Reporter& reporter) {
  const std::int64_t n = c.n;
  Tensor a = random_matrix<T>(c.dtype, n, 1), b = random_matrix<T>(c.dtype, n, 2);
  Tensor c_ours = *Tensor::zeros({n, n}, c.dtype), c_base = *Tensor::zeros({n, n}, c.dtype);
  auto request = [&](Tensor& out) {
    return GemmRequest{c.dtype, cpu::GemmProblem{n, n, n, cpu::GemmInput{a.data(), n, 1},
                                                 cpu::GemmInput{b.data(), n, 1}, cpu::GemmOutput{out.data(), n, 1}}};
  };
  const GemmRequest req_ours = request(c_ours), req_base = request(c_base);
  const cpu::SequentialContext seq;
  auto call_ours = [&] { ours.gemm(req_ours, ctx).ignore(); };
  auto call_base = [&] { base->gemm(req_base, seq).ignore(); };
  // Warm up (packing buffers, library pools), then size the sample count
  // from one call: about 0.8 s per side, 8..240 samples. The sides
  // alternate in blocks of consecutive calls (as real workloads issue
  // them): after an OpenBLAS block a pause lets its worker threads, which
  // keep spinning for a while after a call, stop competing for the cores.
  call_ours();
  if (base != nullptr) call_base();
  const double one = seconds_of(call_ours);
  const int runs = runs_option > 0 ? runs_option : static_cast<int>(std::clamp(0.8 / std::max(one, 1e-9), 8.0, 240.0));
  // Each block starts with one untimed call when calls are short: after a
  // pause the first call ran up to twice as slow on a 2-vCPU VM for both
  // sides (cold caches, a sleeping worker: Note [Worker spin] in
  // src/cpu/domains/managed_executor.cpp), and ours follows the longer pause.
  constexpr int kRounds = 4;
  const int block = std::max(2, runs / kRounds);
  const bool warm_up = one < 0.05;
  Samples so, sb;
  for (int round = 0; round < kRounds; ++round) {
    if (warm_up) call_ours();
    for (int r = 0; r < block; ++r) so.seconds.push_back(seconds_of(call_ours));
    if (base == nullptr) continue;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // our workers spin for 10 ms
    if (warm_up) call_base();
    for (int r = 0; r < block; ++r) sb.seconds.push_back(seconds_of(call_base));
    std::this_thread::sleep_for(std::chrono::milliseconds(threads > 1 ? 150 : 20));
  }
  const double flops =
      (is_complex(c.dtype) ? 8.0 : 2.0) * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  Case out;
  out.name = fmt::format("{}_n{}_t{}", c.prefix, n, threads);
  out.ours = flops / so.median() * 1e-9;
  out.unit = "GFLOP/s";
  out.threads = threads;
  out.runs = static_cast<int>(so.runs());
  if (base != nullptr) {
    out.baseline = flops / sb.median() * 1e-9;
    out.baseline_name = "openblas";
    double max_diff = 0, max_mag = 0;
    const std::span<T> ours_c = elements<T>(c_ours), base_c = elements<T>(c_base);
    for (std::size_t i = 0; i < ours_c.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(ours_c[i] - base_c[i])));
      max_mag = std::max(max_mag, static_cast<double>(std::abs(base_c[i])));
    }
    out.extra["max_rel_diff_vs_baseline"] = max_diff / std::max(max_mag, 1e-300);
  }
  reporter.add(std::move(out));
}

// ns per call of an n^3 product too short to time alone: batches of
// consecutive calls, ours and OpenBLAS alternating batch by batch.
template <class T>
void run_small_case(const GemmCase& c, const CpuGemmProvider& ours, const CpuGemmProvider* base, Reporter& reporter) {
  const std::int64_t n = c.n;
  Tensor a = random_matrix<T>(c.dtype, n, 1), b = random_matrix<T>(c.dtype, n, 2);
  Tensor out = *Tensor::zeros({n, n}, c.dtype);
  const GemmRequest req{c.dtype, cpu::GemmProblem{n, n, n, cpu::GemmInput{a.data(), n, 1},
                                                  cpu::GemmInput{b.data(), n, 1}, cpu::GemmOutput{out.data(), n, 1}}};
  const cpu::SequentialContext seq;
  constexpr int kBatch = 2000;
  auto batch = [&](const CpuGemmProvider& p) {
    return seconds_of([&] {
             for (int i = 0; i < kBatch; ++i) p.gemm(req, seq).ignore();
           }) /
           kBatch;
  };
  batch(ours);
  if (base != nullptr) batch(*base);
  Samples so, sb;
  for (int r = 0; r < 15; ++r) {
    so.seconds.push_back(batch(ours));
    if (base != nullptr) sb.seconds.push_back(batch(*base));
  }
  Case result{fmt::format("{}_n{}_t1", c.prefix, n), so.median() * 1e9, "ns"};
  result.runs = static_cast<int>(so.runs()) * kBatch;
  if (base != nullptr) {
    result.baseline = sb.median() * 1e9;
    result.baseline_name = "openblas";
  }
  reporter.add(std::move(result));
}

}  // namespace

int run_gemm_suite(const SuiteOptions& options, Reporter& reporter) {
  std::set<std::string> matched;  // the prefixes that selected a case
  const auto selected = [&](const GemmCase& c, int threads) {
    if (options.inputs.empty()) return true;
    const std::string name = fmt::format("{}_n{}_t{}", c.prefix, c.n, threads);
    bool any = false;
    for (const std::string& prefix : options.inputs) {
      if (name.starts_with(prefix)) {
        matched.insert(prefix);
        any = true;
      }
    }
    return any;
  };
  auto native = cpu::NativeGemmProvider::create();
  if (!native.ok()) {
    reporter.progress(native.status().to_string());
    return 1;
  }
  auto openblas = cpu::ExternalBlasGemmProvider::load_openblas({cpu::OpenBlasBuild::kPthread});
  const cpu::ExternalBlasGemmProvider* base = openblas.ok() ? openblas->get() : nullptr;
  if (base == nullptr) reporter.progress("no OpenBLAS baseline: " + openblas.status().to_string());
  reporter.progress(fmt::format("ours: {}", (*native)->capability().detail));
  if (base != nullptr) reporter.progress(fmt::format("baseline: {}", base->capability().detail));
  if (base != nullptr) {
    if (std::optional<std::string> note = narrow_openblas_note(base->identity().arch)) reporter.progress(*note);
  }
  // An ISA cap applies to tenferro only: without OPENBLAS_CORETYPE the
  // baseline keeps the machine's widest kernels (the audit of 2026-12-07
  // read 0.59-0.78 under TENFERRO_CPU_ISA=avx2 alone on an AVX-512 Xeon).
  const char* cap = std::getenv("TENFERRO_CPU_ISA");
  if (base != nullptr && cap != nullptr && *cap != '\0' && std::string_view(cap) != "auto" &&
      std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    reporter.progress(fmt::format(
        "note: TENFERRO_CPU_ISA={} caps tenferro's kernels only; the OpenBLAS baseline runs its own choice ({}). "
        "Set OPENBLAS_CORETYPE too (Haswell for avx2) to compare like with like",
        cap, base->capability().detail));
  }

  std::vector<GemmCase> cases;
  const std::vector<std::int64_t> sizes =
      options.quick ? std::vector<std::int64_t>{256} : std::vector<std::int64_t>{256, 1024, 2048};
  for (std::int64_t n : sizes) cases.push_back({"dgemm", DType::kFloat64, n});
  for (std::int64_t n : sizes) cases.push_back({"sgemm", DType::kFloat32, n});
  for (std::int64_t n : sizes) {
    if (n <= 1024) cases.push_back({"zgemm", DType::kComplex128, n});
  }
  for (std::int64_t n : sizes) {
    if (n <= 1024) cases.push_back({"cgemm", DType::kComplex64, n});
  }
  if (std::find(options.threads.begin(), options.threads.end(), 1) != options.threads.end()) {
    if (base != nullptr) base->set_global_thread_count(1).ignore();
    for (const GemmCase& c : {GemmCase{"dgemm", DType::kFloat64, 4}, GemmCase{"dgemm", DType::kFloat64, 8},
                              GemmCase{"dgemm", DType::kFloat64, 16}, GemmCase{"dgemm", DType::kFloat64, 24},
                              GemmCase{"dgemm", DType::kFloat64, 32}, GemmCase{"dgemm", DType::kFloat64, 48},
                              GemmCase{"dgemm", DType::kFloat64, 64}, GemmCase{"sgemm", DType::kFloat32, 16},
                              GemmCase{"sgemm", DType::kFloat32, 32}, GemmCase{"sgemm", DType::kFloat32, 64}}) {
      if (!selected(c, 1)) continue;
      reporter.progress(fmt::format("{} n={} threads=1", c.prefix, c.n));
      if (c.dtype == DType::kFloat64) {
        run_small_case<double>(c, **native, base, reporter);
      } else {
        run_small_case<float>(c, **native, base, reporter);
      }
    }
  }
  for (int threads : options.threads) {
    if (base != nullptr) base->set_global_thread_count(threads).ignore();
    const auto run_cases = [&](const cpu::ParallelContext& ctx) {
      for (const GemmCase& c : cases) {
        if (!selected(c, threads)) continue;
        reporter.progress(fmt::format("{} n={} threads={}", c.prefix, c.n, threads));
        visit_dtype(c.dtype, [&]<class T>(T) {
          if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, std::complex<float>> ||
                        std::is_same_v<T, std::complex<double>>) {
            run_case<T>(c, threads, ctx, **native, base, options.runs, reporter);
          }
        });
      }
    };
    if (threads <= 1) {
      run_cases(cpu::SequentialContext());
      continue;
    }
    // Several threads: one managed domain with pinned workers, entered once.
    Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = cpu::make_managed_domains(threads);
    if (!domains.ok()) {
      reporter.progress("gemm: " + domains.status().to_string());
      return 1;
    }
    const Status entered = (*domains)->default_domain().run(cpu::ParallelMode::kInner,
                                                            [&](const cpu::CpuExecutionContext& context) -> Status {
                                                              run_cases(context.parallel());
                                                              return ok_status();
                                                            });
    if (!entered.ok()) {
      reporter.progress("gemm: " + entered.to_string());
      return 1;
    }
  }
  // A named prefix that matched no case measured nothing: the run fails.
  int unmatched = 0;
  for (const std::string& prefix : options.inputs) {
    if (matched.count(prefix) == 0) {
      reporter.progress(
          fmt::format("gemm: no case matches '{}' (at threads {})", prefix, fmt::join(options.threads, ",")));
      ++unmatched;
    }
  }
  return unmatched > 0 ? 1 : 0;
}

}  // namespace tenferro::bench
