// `tenferro bench SUITE [options]`: runs one benchmark suite and reports it
// as ../shared/design/BENCHMARKS.md describes. Suites are listed explicitly in
// bench_command.cpp (no static self-registration).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_report.h"

namespace tenferro::bench {

/// Options shared by every suite.
struct SuiteOptions {
  std::vector<int> threads;         ///< thread counts to measure (default {1, 2})
  int runs = 0;                     ///< timed repetitions; 0 = the suite's default
  bool quick = false;               ///< smaller sizes, for smoke tests
  std::vector<std::string> inputs;  ///< positional arguments (e.g. instance files)
  std::string table_out;            ///< linalg crossover: write the provider table file here
};

/// The positional inputs a suite takes.
enum class SuiteInputs {
  kNone,  ///< none: any input is refused before the suite runs
  kOne,   ///< at most one (a file)
  kMany,  ///< any number (files, case-name prefixes, parts)
};

/// A suite returns 0 when it ran (whatever the ratios), non-zero when it
/// could not run (setup failure) or a named input matched no case or could
/// not be measured (docs/cli.md): the suite says which on the progress
/// stream.
struct Suite {
  const char* name;
  const char* description;
  int (*run)(const SuiteOptions& options, Reporter& reporter);
  SuiteInputs inputs = SuiteInputs::kNone;
};

void add_bench_command(CLI::App& app);

// Suites, one source file each under tools/bench/.
int run_permute_suite(const SuiteOptions& options, Reporter& reporter);      // bench_permute.cpp
int run_elementwise_suite(const SuiteOptions& options, Reporter& reporter);  // bench_elementwise.cpp
int run_dispatch_suite(const SuiteOptions& options, Reporter& reporter);     // bench_dispatch.cpp
int run_gemm_suite(const SuiteOptions& options, Reporter& reporter);         // bench_gemm.cpp
int run_dot_general_suite(const SuiteOptions& options, Reporter& reporter);  // bench_dot_general.cpp
int run_domains_suite(const SuiteOptions& options, Reporter& reporter);      // bench_domains.cpp
int run_einsum_suite(const SuiteOptions& options, Reporter& reporter);       // bench_einsum.cpp
int run_linalg_suite(const SuiteOptions& options, Reporter& reporter);       // bench_linalg.cpp
int run_ad_suite(const SuiteOptions& options, Reporter& reporter);           // bench_ad.cpp
int run_mpi_suite(const SuiteOptions& options, Reporter& reporter);          // bench_mpi.cpp
int run_fft_suite(const SuiteOptions& options, Reporter& reporter);          // bench_fft.cpp
int run_soak_suite(const SuiteOptions& options, Reporter& reporter);         // bench_soak.cpp

/// A note when the machine's OpenBLAS -- the GEMM baseline's, and numpy's
/// and torch's -- runs kernels narrower than this CPU runs, as an OpenBLAS
/// older than the CPU does (Note [OpenBLAS kernels for new CPUs] in
/// src/linalg_cpu/lapack/lapack_provider.cpp): ratios against it flatter
/// tenferro. `core` is openblas_get_corename(); empty means load the
/// system's pthread build and ask it.
std::optional<std::string> narrow_openblas_note(std::string core = {});

}  // namespace tenferro::bench
