// The sliced paths of `tenferro einsum` (docs/mpi.md):
//   --max-intermediate BYTES  slice the planned contraction so that no
//                             intermediate of a slice exceeds BYTES, and run
//                             the slices one after another;
//   --slice-over-ranks        under mpirun: split the slices round robin over
//                             the ranks (at least one slice per rank), each
//                             rank contracts its share, one allreduce sums
//                             them; rank 0 reports.
// MPI is initialised here, and only for --slice-over-ranks, so the plain
// command never touches MPI (Note [One CLI with MPI] in einsum_slicing.cpp).
#pragma once

#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "einsum_command.h"
#include "tenferro/base/status.h"
#include "tenferro/einsum/benchmark_instance.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cli {

/// The slicing options of `tenferro einsum`.
struct EinsumSlicingOptions {
  /// --max-intermediate: bytes per slice intermediate; 0: no bound.
  double max_intermediate_bytes = 0.0;
  /// --slice-over-ranks.
  bool slice_over_ranks = false;

  bool requested() const noexcept { return max_intermediate_bytes > 0.0 || slice_over_ranks; }
};

/// Adds --max-intermediate and --slice-over-ranks to `cmd`, writing `options`.
void add_einsum_slicing_options(CLI::App& cmd, EinsumSlicingOptions& options);

/// What a sliced run leaves to its caller.
struct SlicedEinsumOutcome {
  /// Whether this process printed the report (rank 0, or the only one); only
  /// it should write the output file.
  bool reporting = true;
  /// The result (every rank holds it; undefined with plan_only).
  Tensor output;
};

/// Plans `instance` (options.path as `tenferro einsum`), slices it, runs the
/// slices (over the MPI ranks with slice_over_ranks, then finalises MPI) on
/// `inputs` or on the same random float64 data `tenferro einsum` uses, and
/// prints the report on rank 0 (naming `output_path`, which the caller
/// writes). Typed errors as planning, slicing (kResourceExhausted for an
/// impossible bound) and execution, on every rank; kUnsupported for
/// --slice-over-ranks in a build without MPI or for a GEMM other than native.
/// `inputs_status` is how reading the operands went on this rank: a failure
/// there (a missing file on one rank) and rank 0's check of output_path's
/// directory are agreed over the ranks before anything else, so every rank
/// reports it and none waits in a collective (`instance` is then unused).
/// On a failure, `failure_printed` (when given) says whether the failure
/// was printed already, here or by rank 0 (Note [One report per job]).
///
/// Note [One report per job]
/// A failure the ranks agree on reached every rank, and each printed it:
/// a missing operand file under `mpirun -np 64` printed 64 identical
/// lines. A rank other than 0 now prints its error only when rank 0's does
/// not carry it: when its own failure differs from the one every rank
/// received (Note [Checked collectives]; rank 0 prints that one, or a
/// report naming the rank that had it). Disagreeing options are found by
/// every rank alike and printed by rank 0 alone. Such a failure is printed
/// before MPI is finalised, and the ranks then meet in a barrier: mpirun
/// aborts the job when the first rank exits with an error, and a quiet rank
/// that left first had rank 0 killed before it printed (a CI run showed no
/// error at all). Failures before MPI starts, and failures of MPI itself,
/// are still printed by every rank, after it.
Result<SlicedEinsumOutcome> run_sliced_einsum(const einsum::BenchmarkInstance& instance, std::span<const Tensor> inputs,
                                              const EinsumRunOptions& options, const EinsumSlicingOptions& slicing,
                                              const std::string& output_path, bool json,
                                              const Status& inputs_status = ok_status(),
                                              bool* failure_printed = nullptr);

/// kNotFound unless the directory `path` would be written in exists.
Status check_output_directory(const std::string& path);

}  // namespace tenferro::cli
