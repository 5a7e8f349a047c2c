// `tenferro einsum`: the main job. Contracts user data from .npy files
// (`tenferro einsum SUBSCRIPTS A.npy B.npy ... [-o OUT.npy]`), or an einsum
// instance (../shared/bench/instances format) or the built-in example network
// with random float64 data or operands from `--inputs DIR`; plans a
// contraction path and contracts with the native CPU einsum engine through a
// Runtime (eager or prepared graph), reporting the path's cost and the
// timings. docs/cli.md describes the command. The runner is shared with
// `tenferro bench einsum`.
#pragma once

#include <complex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/einsum/benchmark_instance.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cli {

/// How to run one instance (the command's options).
struct EinsumRunOptions {
  /// ref-flops, ref-size, greedy, optimal, treesa, nested; empty: nested
  /// for parenthesised subscripts, else ref-flops when the instance has it,
  /// else greedy.
  std::string path;
  int threads = 1;
  std::string gemm = "native";  ///< GEMM candidates: native, openblas, blis, comma-separated
  std::string mode = "eager";   ///< eager, graph
  /// Timed repetitions after the first call; 0: the first call only.
  int runs = 5;
  bool plan_only = false;
  bool explain = false;
  std::uint64_t seed = 0;
};

/// What a run measured.
struct EinsumRunResult {
  std::string instance;
  std::string path;     ///< the --path value used
  std::string planner;  ///< the planner that produced the tree
  std::size_t tensors = 0;
  double log10_flops = 0.0;
  double log2_size = 0.0;
  double multiply_adds = 0.0;
  double plan_seconds = 0.0;     ///< path search
  double prepare_seconds = 0.0;  ///< the first call (graph: prepare_for and the first run), planning included
  std::vector<double> seconds;   ///< timed runs (empty with plan_only)
  /// Process CPU time of each timed run (all threads): steadier than wall
  /// time on a loaded machine, and for one thread close to it.
  std::vector<double> cpu_seconds;
  std::size_t workspace_bytes = 0;
  std::int64_t planned_copies = 0;
  std::string gemm_provider;   ///< the GEMM candidate that was chosen (--gemm lists candidates)
  std::string explain;         ///< with EinsumRunOptions::explain
  double checksum = 0.0;       ///< sum of the output elements (last run); real part for complex
  double checksum_imag = 0.0;  ///< imaginary part of that sum (complex outputs)
  Tensor output;               ///< the result of the last run (undefined with plan_only)

  double median_seconds() const;
  double min_seconds() const;
  double median_cpu_seconds() const;
};

/// The operation-local planning policy for `--path` on `instance`; an empty
/// `path` becomes the default (nested for parenthesised subscripts, the
/// instance's opt_flops path when it has one, else greedy).
/// kInvalidArgument for an unknown choice or a missing reference path.
Result<einsum::PlanningPolicy> policy_for(const einsum::BenchmarkInstance& instance, std::string& path);

/// The random float64 operands of `instance` for `seed`, the same in every
/// command (sliced and unsliced runs report the same checksum).
Result<std::vector<Tensor>> random_inputs(const einsum::BenchmarkInstance& instance, std::uint64_t seed);

/// cpu::make_managed_domains for a --threads option: kInvalidArgument
/// below 1 or above the CPUs this process may use.
Result<std::shared_ptr<const cpu::CpuDomainSet>> managed_cpu_domains(int threads);

/// The built-in example network (an MPS-like chain with a reference path).
einsum::BenchmarkInstance builtin_einsum_instance();

/// Plans and (unless plan_only) runs `instance` on `inputs`, or on random
/// float64 data of the instance's shapes (options.seed) when `inputs` is
/// empty. Given inputs must match the instance's shapes (kShapeMismatch)
/// and dtype (kDTypeMismatch); they are borrowed for the call. Typed errors
/// for invalid options (kInvalidArgument), unavailable GEMM libraries
/// (kUnsupported) and anything planning or execution reports.
Result<EinsumRunResult> run_einsum_instance(const einsum::BenchmarkInstance& instance, const EinsumRunOptions& options,
                                            std::span<const Tensor> inputs = {});

void add_einsum_command(CLI::App& app);

/// CPU time of the whole process (all threads), in seconds.
double process_cpu_seconds();
/// The median (the mean of the middle two for an even count); 0 for none.
double median_of(std::vector<double> values);
/// The sum of the elements as a complex number (imaginary part 0 for reals).
std::complex<double> sum_of(const Tensor& t);
/// A kInvalidArgument error about the command line or its files.
Error invalid(std::string message);

}  // namespace tenferro::cli
