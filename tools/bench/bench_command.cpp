// `tenferro bench`: the suite table and the command that runs one suite.
#include "bench/bench_command.h"

#include <cstdio>
#include <cstdlib>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_values.h"
#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/gemm/external_blas.h"

namespace tenferro::bench {

std::optional<std::string> narrow_openblas_note(std::string core) {
  if (core.empty()) {
    cpu::OpenBlasOptions options;
    options.build = cpu::OpenBlasBuild::kPthread;
    auto blas = cpu::ExternalBlasGemmProvider::load_openblas(options);
    if (!blas.ok()) return std::nullopt;
    core = (*blas)->identity().arch;
  }
  const cpu::CpuIsa best = cpu::best_cpu_isa();
  const std::string_view wider = cpu::openblas_core_for(best, core);
  if (wider.empty() || std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  return fmt::format(
      "note: this machine's OpenBLAS (the baseline's, numpy's, torch's) runs its {} kernels on this {} CPU, which "
      "it does not know; the ratios flatter tenferro. OPENBLAS_CORETYPE={} gives the peers their widest kernels",
      core, cpu::to_string(best), wider);
}

namespace {

// Every suite, in the order `tenferro bench --list` shows them. Components
// add their suite here and a source file under tools/bench/.
constexpr Suite kSuites[] = {
    {"selftest", "Times an empty loop against itself (checks the harness)",
     [](const SuiteOptions& options, Reporter& reporter) {
       volatile int sink = 0;
       const Samples ours = time_batched([&sink] { sink = sink + 1; }, 1000);
       const Samples base = time_batched([&sink] { sink = sink + 1; }, 1000);
       reporter.add(Case{"empty_loop", ours.median() * 1e9, "ns", base.median() * 1e9, "empty_loop",
                         options.threads.empty() ? 1 : options.threads.front(), static_cast<int>(ours.runs())});
       return 0;
     }},
    {"permute", "copy_into over permutation_patterns.json vs memcpy of the same bytes", &run_permute_suite,
     SuiteInputs::kOne},
    {"elementwise", "Large add/mul vs memcpy bandwidth; 8-element add vs a plain loop", &run_elementwise_suite},
    {"dispatch", "Runtime fixed costs (eager, prepared runs, plan cache) vs direct provider calls",
     &run_dispatch_suite},
    {"gemm", "Native GEMM vs OpenBLAS (f64/f32/c128/c64, n = 256..2048), GFLOP/s", &run_gemm_suite, SuiteInputs::kMany},
    {"dot_general", "bin_*.json einsum instances through the dot_general composite vs numpy and torch",
     &run_dot_general_suite, SuiteInputs::kMany},
    {"domains", "CPU domain entry, per-op session overhead, fork-join and submit vs oneTBB arenas", &run_domains_suite},
    {"einsum", "Instance files (FILES... or all) through the native einsum engine vs numpy and torch",
     &run_einsum_suite, SuiteInputs::kMany},
    {"linalg",
     "Each linalg op with LAPACK and Eigen vs numpy (n = 256, 1024); 1,000 batched 16x16 SVDs at 1 and 2 threads; "
     "`crossover` re-measures the default provider table",
     &run_linalg_suite, SuiteInputs::kMany},
    {"ad", "JVP/VJP of a 100-step einsum chain through the runtime vs 3x its forward time (interleaved)",
     &run_ad_suite},
    {"mpi", "MERA sliced over 2 ranks vs 1 rank unsliced; 64 MiB mpi::allreduce vs MPI_Allreduce (mpirun)",
     &run_mpi_suite, SuiteInputs::kOne},
    {"fft",
     "c128 fft (n = 2^10..2^20, 1024^2, 4096 x 256, 255^2, 256 x 89) through the FFTW engine vs numpy.fft and "
     "torch.fft",
     &run_fft_suite},
    {"soak", "1e6 eager calls and 1e4 prepares over changing shapes in one process: RSS and cache sizes vs bounds",
     &run_soak_suite},
};

const Suite* find_suite(const std::string& name) {
  for (const Suite& s : kSuites)
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Run a benchmark suite against same-run baselines");
  struct State {
    std::string suite;
    bool json = false;
    bool list = false;
    SuiteOptions options;
  };
  auto state = std::make_shared<State>();
  cmd->add_option("suite", state->suite, "Suite name (see --list)");
  cmd->add_option("inputs", state->options.inputs, "Suite inputs, e.g. instance files");
  cmd->add_flag("--json", state->json, "One JSON object per case");
  cmd->add_flag("--list", state->list, "List the suites");
  cmd->add_flag("--quick", state->options.quick, "Smaller problem sizes (smoke test)");
  cmd->add_option("--threads", state->options.threads, "Thread counts to measure, comma-separated (default: 1,2)")
      ->delimiter(',')
      ->check([](const std::string& value) {  // each count, as einsum --threads
        return cli::integer_error(value, 1, cli::allowed_cpus(), " (the CPUs this process may use)");
      });
  cmd->add_option("--runs", state->options.runs, "Timed repetitions per case (where the suite takes a count)")
      ->check([](const std::string& value) { return cli::integer_error(value, 1, 1000000); });
  cmd->add_option("--table-out", state->options.table_out,
                  "linalg crossover: write the measured provider table (the file the linalg engine reads) here");
  cmd->callback([state] {
    if (state->list) {  // on stdout: text, or one JSON array
      if (state->json) {
        nlohmann::json list = nlohmann::json::array();
        for (const Suite& s : kSuites) list.push_back({{"name", s.name}, {"description", s.description}});
        std::printf("%s\n", list.dump().c_str());
      } else {
        for (const Suite& s : kSuites) std::printf("%-12s %s\n", s.name, s.description);
      }
      return;
    }
    if (state->suite.empty()) {  // a missing subcommand's status, the suites on stderr
      std::fprintf(stderr, "tenferro bench: expected a suite, one of:\n");
      for (const Suite& s : kSuites) std::fprintf(stderr, "  %-12s %s\n", s.name, s.description);
      throw CLI::RuntimeError(106);
    }
    const Suite* suite = find_suite(state->suite);
    if (suite == nullptr) {
      throw CLI::ValidationError("suite", fmt::format("unknown suite '{}' (see tenferro bench --list)", state->suite));
    }
    if (state->options.threads.empty()) {
      state->options.threads = cli::allowed_cpus() >= 2 ? std::vector<int>{1, 2} : std::vector<int>{1};
    }
    const std::vector<std::string>& inputs = state->options.inputs;
    if ((suite->inputs == SuiteInputs::kNone && !inputs.empty()) ||
        (suite->inputs == SuiteInputs::kOne && inputs.size() > 1)) {
      // Inputs the suite would ignore match no case: not a success.
      std::fprintf(stderr, "tenferro bench %s: expected %s, found %zu: %s\n", suite->name,
                   suite->inputs == SuiteInputs::kNone ? "no inputs" : "at most one input file", inputs.size(),
                   fmt::format("{}", fmt::join(inputs, " ")).c_str());
      throw CLI::RuntimeError(1);
    }
    Reporter reporter(suite->name, state->json);
    int rc = suite->run(state->options, reporter);
    reporter.finish();
    if (rc == 0 && !state->options.inputs.empty() && reporter.cases().empty()) {
      // Named inputs that matched no case (an unknown gemm case, an
      // unreadable instance) measured nothing: not a success.
      std::fprintf(stderr, "tenferro bench %s: no case ran for the inputs given\n", suite->name);
      rc = 1;
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tenferro::bench
