// The sliced paths of `tenferro einsum` (einsum_slicing.h).
//
// Note [One CLI with MPI]
// When CMake finds MPI, the `tenferro` program links it (TENFERRO_HAVE_MPI)
// rather than shipping a second program: Open MPI's library does nothing
// until MPI_Init, so the plain command neither prints nor waits, and only
// --slice-over-ranks initialises MPI (MPI_THREAD_FUNNELED: every MPI call
// is made on the main thread; the contraction runs in the rank's CPU
// domain) and finalises it before returning. Run without mpirun it is a
// one-rank job (Open MPI's singleton mode).
// Each rank's CPU domain starts where Note [Rank CPU domains]
// (mpi/sliced_einsum.h) says.
#include "einsum_slicing.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "einsum_command.h"

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include <time.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tenferro/base/hash.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/tensor/shape.h"

#ifdef TENFERRO_HAVE_MPI
#include <mpi.h>

#include "tenferro/mpi.h"
#endif

namespace tenferro::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Note [Rank CPU domains] in mpi/sliced_einsum.h.
Result<std::shared_ptr<const cpu::CpuDomainSet>> rank_cpu_domains(int threads, int local_rank) {
  if (threads < 1) return invalid(fmt::format("--threads {}: expected at least 1", threads));
  return cpu::make_managed_domains(threads, local_rank * threads);
}

// The ranks of the job: MPI's when distributed, else a single one. Every
// collective here is made on the main thread.
class RankGroup {
 public:
#ifdef TENFERRO_HAVE_MPI
  ~RankGroup() {
    runtime_.reset();  // the runtime's collective provider retains comm_
    comm_.reset();     // frees the duplicate before MPI_Finalize
    if (owns_mpi_) MPI_Finalize();
  }

  Status start_mpi() {
    int initialized = 0;
    TENFERRO_TRY(mpi::mpi_status(MPI_Initialized(&initialized), "MPI_Initialized"));
    if (!initialized) {
      int provided = 0;
      TENFERRO_TRY(mpi::mpi_status(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init"));
      owns_mpi_ = true;
    }
    TENFERRO_ASSIGN_OR_RETURN(comm_, mpi::Communicator::duplicate(MPI_COMM_WORLD));
    // The rank sum runs as a collective node (sliced_einsum.h) of a runtime
    // whose CPU engine runs on this thread: the node only communicates.
    TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, mpi::rank_runtime(comm_, kSliceCommunicator));
    runtime_.emplace(std::move(rt));
    TENFERRO_ASSIGN_OR_RETURN(local_rank_, mpi::node_rank(*comm_));
    return ok_status();
  }
#else
  Status start_mpi() {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                      "--slice-over-ranks: expected a tenferro built with MPI (libopenmpi-dev), found one without");
  }
#endif

  int rank() const noexcept { return distributed() ? comm_rank() : 0; }
  int size() const noexcept { return distributed() ? comm_size() : 1; }
  int local_rank() const noexcept { return local_rank_; }

  // Every rank's status, agreed (Note [Checked collectives]).
  Status agree(const Status& local, std::string_view what = "across ranks") {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      bool root_reports = false;
      Status agreed = mpi::agree(*comm_, local, what, &root_reports);
      return agreed.ok() ? agreed : agreed_failure(std::move(agreed), root_reports);
    }
#endif
    return local;
  }
  // Whether this rank's failure is one every rank returned from the same
  // collective, so that each can wait for the others (a barrier).
  bool failure_agreed() const noexcept { return failure_agreed_; }
  // Whether this rank's failure is one rank 0 reports as well: this rank
  // then prints nothing (Note [One report per job]).
  bool rank0_reports_failure() const noexcept { return rank0_reports_failure_; }
  // Collective: rank 0 prints a warning when the ranks' CPU domains on a
  // node pin two ranks' workers to one CPU (Note [Rank CPU domains]).
  Status warn_if_cpus_are_shared(const cpu::CpuSet& cpus, int threads) {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      TENFERRO_ASSIGN_OR_RETURN(const mpi::NodeCpuSharing sharing, mpi::node_cpu_sharing(*comm_, cpus));
      if (sharing.most_shared > 0 && rank() == 0) {
        std::fprintf(stderr,
                     "tenferro einsum: warning: ranks x threads exceed the CPUs the ranks may use: on the most "
                     "crowded node %d CPU(s) are pinned by two or more ranks' domains (rank 0's node: %d rank(s) x "
                     "--threads %d over %d CPUs), so their threads compete for cores; use fewer ranks or threads "
                     "per node, or let mpirun bind each rank to its own cores (docs/mpi.md, \"Threads per rank\")\n",
                     sharing.most_shared, sharing.node_ranks, threads, sharing.cpus);
      }
    }
#endif
    (void)cpus;
    (void)threads;
    return ok_status();
  }
  Status barrier() {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) return mpi::mpi_status(MPI_Barrier(comm_->comm()), "MPI_Barrier");
#endif
    return ok_status();
  }
  // kInvalidArgument on every rank unless each option has one value on
  // every rank: one allreduce (max) of each value and its complement, whose
  // max is the complement of the min.
  Status same_options(std::initializer_list<std::pair<std::string_view, std::int64_t>> options) {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      std::vector<std::int64_t> v;
      for (const auto& [name, value] : options) {
        v.push_back(value);
        v.push_back(~value);
      }
      TENFERRO_ASSIGN_OR_RETURN(
          Tensor t, Tensor::from_values<std::int64_t>(v, IntArrayRef({static_cast<std::int64_t>(v.size())})));
      TENFERRO_TRY(mpi::allreduce(*comm_, t, mpi::ReduceOp::kMax));
      const auto* agreed = static_cast<const std::int64_t*>(t.data());
      std::size_t i = 0;
      for (const auto& [name, value] : options) {
        if (agreed[i] != ~agreed[i + 1]) {
          // Every rank finds the mismatch.
          return agreed_failure(
              make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                         "{}: expected the same value on every rank (the ranks would run different collectives "
                         "or contract different data), found {} here and values from {} to {} across ranks",
                         name, value, ~agreed[i + 1], agreed[i]),
              true);
        }
        i += 2;
      }
    }
#endif
    (void)options;
    return ok_status();
  }
  // The largest `value` over the ranks.
  Result<double> max(double value) {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::scalar<double>(value));
      TENFERRO_TRY(mpi::allreduce(*comm_, t, mpi::ReduceOp::kMax));
      return *static_cast<const double*>(t.data());
    }
#endif
    return value;
  }
  // Every rank's planning outcome, agreed, and the same plan on every rank.
  Status agree_on_split(const Result<einsum::WorkerSlicing>& sliced, DType dtype) {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      // The planning outcome first, so that a failure is reported once
      // (Note [One report per job]); then the same split everywhere, whose
      // mismatch every rank finds alike (an MPI failure is unavailable).
      TENFERRO_TRY(agree(sliced.status(), "sliced einsum plan"));
      const Status same = mpi::agree_on_split(*comm_, *sliced, dtype);
      return same.ok() ? same : agreed_failure(same, true);
    }
#endif
    return sliced.status();
  }
  // This rank's share of the slices into `output`, in `domain`, summed over
  // the ranks (Note [Failure before the allreduce] in mpi/sliced_einsum.h).
  Status run(const einsum::WorkerSliceExecutor& runner, std::span<const TensorView> inputs, Tensor& output,
             const cpu::CpuResourceDomain& domain, einsum::SliceRunStats& stats) {
#ifdef TENFERRO_HAVE_MPI
    if (comm_) {
      return mpi::run_slices_over_ranks(*comm_, *runtime_, kSliceCommunicator, runner, inputs, output, domain, &stats);
    }
#endif
    const TensorView out = output.view();
    return domain.enter([&](const cpu::CpuDomainSession& session) {
      const cpu::CpuExecutionContext context = session.context(cpu::ParallelMode::kInner);
      return runner.run(inputs, out, context.parallel(), &stats);
    });
  }

 private:
#ifdef TENFERRO_HAVE_MPI
  bool distributed() const noexcept { return comm_ != nullptr; }
  int comm_rank() const noexcept { return comm_->rank(); }
  int comm_size() const noexcept { return comm_->size(); }
  static constexpr std::uint64_t kSliceCommunicator = 1;
  std::shared_ptr<mpi::Communicator> comm_;
  std::optional<runtime::Runtime> runtime_;
  bool owns_mpi_ = false;
#else
  bool distributed() const noexcept { return false; }
  int comm_rank() const noexcept { return 0; }
  int comm_size() const noexcept { return 1; }
#endif
  // `failure` came out of a collective that every rank left with a
  // failure, unless MPI itself failed (kUnavailable: a rank may be gone);
  // `root_reports`: rank 0's failure carries this rank's.
  Status agreed_failure(Status failure, bool root_reports) {
    failure_agreed_ = failure.code() != ErrorCode::kUnavailable;
    rank0_reports_failure_ = failure_agreed_ && rank() > 0 && root_reports;
    return failure;
  }

  int local_rank_ = 0;
  bool failure_agreed_ = false;
  bool rank0_reports_failure_ = false;
};

struct SlicedReport {
  std::string path;
  std::string planner;
  double plan_seconds = 0.0;
  double first_seconds = 0.0;
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;  ///< of the busiest rank
  einsum::SliceRunStats stats;
  Tensor output;
};

void print_report(const einsum::BenchmarkInstance& instance, bool random, const EinsumRunOptions& options,
                  const EinsumSlicingOptions& slicing, const einsum::WorkerSlicing& workers, int ranks,
                  const SlicedReport& r, const std::string& output_path, bool json) {
  // Rank 0's part: the shared contraction of a round robin, its range of a
  // range split (Note [Range slicing]).
  const einsum::SlicedContraction& sliced = workers.part(0);
  const einsum::PathCost& unsliced = sliced.tree().cost();
  if (json) {
    nlohmann::json j;
    j["instance"] = instance.name;
    j["tensors"] = instance.shapes.size();
    j["dtype"] = std::string(to_string(instance.dtype));
    j["path"] = r.path;
    j["planner"] = r.planner;
    j["log10_flops"] = unsliced.log10_flops();
    j["log2_size"] = unsliced.log2_max_intermediate();
    j["plan_seconds"] = r.plan_seconds;
    j["threads"] = options.threads;
    j["ranks"] = ranks;
    j["max_intermediate_bytes"] = slicing.max_intermediate_bytes;
    std::vector<std::string> labels;
    for (einsum::LabelId l : sliced.sliced_labels()) labels.push_back(sliced.network().label_name(l));
    j["sliced_labels"] = labels;
    j["slices"] = workers.num_slices();
    j["slice_log10_flops"] = sliced.slice_cost().log10_flops();
    j["slice_max_intermediate_bytes"] = workers.slice_max_intermediate_bytes();
    j["overhead"] = workers.overhead();
    j["split"] = workers.is_range_split() ? "range" : "round_robin";
    if (workers.is_range_split()) {
      j["range_label"] = sliced.network().label_name(sliced.range().label);
      j["ranges"] = workers.parts().size();
    }
    j["speedup_bound"] = workers.speedup_bound();
    j["work_speedup_bound"] = workers.work_speedup_bound();
    j["plan_only"] = options.plan_only;
    j["runs"] = r.seconds.size();
    if (!options.plan_only) {
      j["first_seconds"] = r.first_seconds;
      j["seconds"] = r.seconds;
      if (!r.seconds.empty()) j["median_seconds"] = median_of(r.seconds);
      if (!r.cpu_seconds.empty()) j["median_cpu_seconds"] = median_of(r.cpu_seconds);
      j["slices_on_rank0"] = r.stats.slices;
      j["output_shape"] = std::vector<std::int64_t>(r.output.shape().begin(), r.output.shape().end());
      const std::complex<double> checksum = sum_of(r.output);
      j["checksum"] = checksum.real();
      if (is_complex(r.output.dtype())) j["checksum_imag"] = checksum.imag();
      if (!output_path.empty()) j["output"] = output_path;
    }
    // replace: a file name need not be UTF-8 (a strict dump throws).
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  if (options.explain) std::printf("%s", sliced.tree().explain().c_str());
  std::printf("instance   %s (%zu tensors, %s%s)\n", instance.name.c_str(), instance.shapes.size(),
              std::string(to_string(instance.dtype)).c_str(), random ? ", random data" : "");
  std::printf("path       %s (planner %s): log10 flops %.4f, log2 largest intermediate %.2f, planned in %.3f ms\n",
              r.path.c_str(), r.planner.c_str(), unsliced.log10_flops(), unsliced.log2_max_intermediate(),
              r.plan_seconds * 1e3);
  if (ranks > 1 || workers.is_range_split()) {
    std::printf("slicing    %s", workers.explain().c_str());
  } else {
    std::printf("slicing    %s", sliced.explain().c_str());
  }
  if (options.plan_only) return;
  std::printf("engine     native einsum, %d rank%s x %d thread%s, %s (%lld slices on rank 0)\n", ranks,
              ranks == 1 ? "" : "s", options.threads, options.threads == 1 ? "" : "s",
              !workers.is_range_split()                                              ? "slices round robin"
              : workers.parts().size() > static_cast<std::size_t>(workers.workers()) ? "ranges in turn"
                                                                                     : "one range per rank",
              static_cast<long long>(r.stats.slices));
  if (!r.seconds.empty()) {
    std::printf("time       median %.6g s over %zu runs, busiest rank's CPU %.6g s (slowest rank; first call %.6g s)\n",
                median_of(r.seconds), r.seconds.size(), median_of(r.cpu_seconds), r.first_seconds);
  } else {
    std::printf("time       %.6g s for one call (slowest rank)\n", r.first_seconds);
  }
  std::printf("output     %s %s%s%s\n", std::string(to_string(r.output.dtype())).c_str(),
              shape_to_string(r.output.shape()).c_str(), output_path.empty() ? "" : " written to ",
              output_path.c_str());
  const std::complex<double> checksum = sum_of(r.output);
  if (is_complex(r.output.dtype())) {
    std::printf("checksum   %.17g %+.17gi\n", checksum.real(), checksum.imag());
  } else {
    std::printf("checksum   %.17g\n", checksum.real());
  }
}

// A hash of the operands' dtypes, shapes and bytes (row-major), as the
// non-negative int64 RankGroup::same_options compares.
std::int64_t operand_fingerprint(std::span<const Tensor> inputs) {
  std::uint64_t h = 0;
  std::vector<std::byte> dense;
  for (const Tensor& t : inputs) {
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(t.dtype()));
    for (const std::int64_t d : t.shape()) h = hashing::hash_combine(h, static_cast<std::uint64_t>(d));
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    const void* data = t.data();
    if (!t.is_contiguous()) {
      dense.resize(bytes);
      tenferro::internal::copy_to_contiguous(t.view(), dense.data());
      data = dense.data();
    }
    h = hashing::hash_string(h, std::string_view(static_cast<const char*>(data), bytes));
  }
  return static_cast<std::int64_t>(h >> 1);
}

}  // namespace

void add_einsum_slicing_options(CLI::App& cmd, EinsumSlicingOptions& options) {
  cmd.add_option("--max-intermediate", options.max_intermediate_bytes,
                 "Slice the contraction so that no intermediate of a slice exceeds BYTES; the slices run in sequence")
      ->check([](const std::string& text) {
        // Decimal only (strtod would also read hexadecimal), a whole
        // number of bytes: 2e8 is one, 1.5 is not.
        char* end = nullptr;
        const bool decimal = text.find_first_of("xX") == std::string::npos;
        const double bytes = std::strtod(text.c_str(), &end);
        return decimal && end != text.c_str() && *end == '\0' && std::isfinite(bytes) && bytes >= 1 &&
                       bytes == std::floor(bytes)
                   ? std::string()
                   : "expected a positive, finite, whole number of bytes (such as 2e8), found " + text;
      })
      ->type_name("BYTES");
  cmd.add_flag("--slice-over-ranks", options.slice_over_ranks,
               "Under mpirun: spread the slices over the ranks and allreduce the result (docs/mpi.md)");
}

namespace {

// run_sliced_einsum over `ranks`, which start_mpi() starts when asked.
Result<SlicedEinsumOutcome> run_over(RankGroup& ranks, const einsum::BenchmarkInstance& instance,
                                     std::span<const Tensor> given, const EinsumRunOptions& options,
                                     const EinsumSlicingOptions& slicing, const std::string& output_path, bool json,
                                     const Status& inputs_status) {
  if (!inputs_status.ok()) {  // this rank could not read its operands: tell the others
    if (slicing.slice_over_ranks) TENFERRO_TRY(ranks.start_mpi());
    return ranks.agree(inputs_status);
  }
  if (options.threads < 1) return invalid(fmt::format("--threads {}: expected at least 1", options.threads));
  if (options.gemm != "native") {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "--gemm {}: sliced runs use the native GEMM; expected native", options.gemm);
  }
  if (options.mode != "eager") {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "--mode {}: sliced runs execute slice by slice (no prepared program); expected eager",
                      options.mode);
  }
  if (given.empty() && instance.dtype != DType::kFloat64) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "instance '{}' is {}; sliced runs use random float64 data (give --inputs DIR for other dtypes)",
                      instance.name, instance.dtype);
  }
  if (slicing.slice_over_ranks) TENFERRO_TRY(ranks.start_mpi());
  // Only the reporting rank writes the output file.
  TENFERRO_TRY(
      ranks.agree(ranks.rank() == 0 && !output_path.empty() ? check_output_directory(output_path) : ok_status()));
  // A different --runs or --plan-only would leave ranks in different
  // collectives (a hang), a different --seed sum shares of different data.
  TENFERRO_TRY(ranks.same_options({{"--runs", options.runs},
                                   {"--plan-only", options.plan_only ? 1 : 0},
                                   {"--seed", static_cast<std::int64_t>(options.seed)}}));

  SlicedReport report;
  report.path = options.path;
  Result<einsum::WorkerSlicing> sliced = [&]() -> Result<einsum::WorkerSlicing> {
    TENFERRO_ASSIGN_OR_RETURN(einsum::PlanningPolicy policy, policy_for(instance, report.path));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                              einsum::EinsumOp::create(instance.format_string, policy));
    const std::vector<IntArrayRef> shapes = instance.shape_refs();
    TENFERRO_ASSIGN_OR_RETURN(einsum::Network network, op->bind(shapes, instance.dtype));
    // Every rank must plan the same tree: no wall-clock budget.
    einsum::PlanningConfig config;
    config.determinism = einsum::Determinism::kReproducible;
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionTree tree, einsum::plan(network, policy, config));
    report.planner = std::string(einsum::to_string(tree.stats().planner));
    report.plan_seconds = tree.stats().seconds;
    einsum::SlicingOptions so;
    so.max_intermediate_bytes = slicing.max_intermediate_bytes;
    so.min_slices = ranks.size();
    so.workers = ranks.size();
    // Round robin of index slices or one range per rank, whichever leaves
    // the busiest rank fewer flops (Note [Range slicing]); on one rank,
    // index slicing or ranges run in turn (Note [Range chunks]).
    return ranks.size() == 1 ? einsum::WorkerSlicing::plan_sequential(tree, so) : einsum::WorkerSlicing::plan(tree, so);
  }();
  TENFERRO_TRY(ranks.agree_on_split(sliced, instance.dtype));
  const bool random = given.empty();
  if (options.plan_only) {
    if (ranks.rank() == 0) print_report(instance, random, options, slicing, *sliced, ranks.size(), report, {}, json);
    return SlicedEinsumOutcome{ranks.rank() == 0, Tensor()};
  }

  // The same data on every rank, or the same failure agreed (one rank
  // short of memory must not leave the others waiting in the allreduce).
  Result<std::vector<Tensor>> made = random ? random_inputs(instance, options.seed) : std::vector<Tensor>{};
  TENFERRO_TRY(ranks.agree(made.status()));
  const std::vector<Tensor> generated = std::move(made).value();
  const std::span<const Tensor> inputs = random ? std::span<const Tensor>(generated) : given;
  // Given operands (--inputs) are read on each rank: different files, or
  // a float32 copy on one rank, would sum shares of different data into a
  // wrong result without an error (the MPI audit of 2026-12-07). One pass
  // over the operands and one small allreduce.
  if (!random)
    TENFERRO_TRY(ranks.same_options(
        {{"the operands (a hash of --inputs' dtypes, shapes and values)", operand_fingerprint(given)}}));
  std::vector<TensorView> views;
  for (const Tensor& t : inputs) views.push_back(t.view());
  Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = rank_cpu_domains(options.threads, ranks.local_rank());
  Result<einsum::WorkerSliceExecutor> runner = [&]() -> Result<einsum::WorkerSliceExecutor> {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
    TENFERRO_ASSIGN_OR_RETURN(
        std::shared_ptr<einsum::CpuEinsumExecutor> executor,
        einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(std::move(gemm))));
    return einsum::WorkerSliceExecutor::create(*sliced, ranks.rank(), std::move(executor));
  }();
  TENFERRO_TRY(ranks.agree(!domains.ok() ? domains.status() : runner.status()));
  TENFERRO_TRY(ranks.warn_if_cpus_are_shared((*domains)->default_domain().cpus(), options.threads));

  const auto timed_run = [&](double& seconds, double& cpu_seconds) -> Status {
    TENFERRO_ASSIGN_OR_RETURN(Tensor out,
                              Tensor::empty(IntArrayRef(sliced->part(0).network().output_shape()), instance.dtype));
    TENFERRO_TRY(ranks.barrier());
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    TENFERRO_TRY(ranks.run(*runner, views, out, (*domains)->default_domain(), report.stats));
    const double cpu = process_cpu_seconds() - cpu_start;
    TENFERRO_ASSIGN_OR_RETURN(seconds, ranks.max(std::chrono::duration<double>(Clock::now() - start).count()));
    TENFERRO_ASSIGN_OR_RETURN(cpu_seconds, ranks.max(cpu));
    report.output = std::move(out);
    return ok_status();
  };
  double first_cpu = 0.0;
  TENFERRO_TRY(timed_run(report.first_seconds, first_cpu));
  for (int r = 0; r < options.runs; ++r) {
    double seconds = 0.0, cpu = 0.0;
    TENFERRO_TRY(timed_run(seconds, cpu));
    report.seconds.push_back(seconds);
    report.cpu_seconds.push_back(cpu);
  }

  if (ranks.rank() == 0) {
    print_report(instance, random, options, slicing, *sliced, ranks.size(), report, output_path, json);
  }
  return SlicedEinsumOutcome{ranks.rank() == 0, std::move(report.output)};
}

}  // namespace

Result<SlicedEinsumOutcome> run_sliced_einsum(const einsum::BenchmarkInstance& instance, std::span<const Tensor> given,
                                              const EinsumRunOptions& options, const EinsumSlicingOptions& slicing,
                                              const std::string& output_path, bool json, const Status& inputs_status,
                                              bool* failure_printed) {
  RankGroup ranks;
  Result<SlicedEinsumOutcome> outcome =
      run_over(ranks, instance, given, options, slicing, output_path, json, inputs_status);
  if (failure_printed != nullptr) *failure_printed = false;
  if (!outcome.ok() && ranks.failure_agreed()) {  // Note [One report per job]
    if (!ranks.rank0_reports_failure()) {
      std::fprintf(stderr, "tenferro einsum: %s\n", outcome.status().to_string().c_str());
    }
    // mpirun aborts the job when a rank exits with an error: a quiet rank
    // must not exit before rank 0 has printed. Every rank left the same
    // collective with this failure, so every rank reaches the barrier.
    (void)ranks.barrier();
    if (failure_printed != nullptr) *failure_printed = true;
  }
  return outcome;
}

Status check_output_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return make_error(ErrorCode::kNotFound, ErrorStage::kNone, "-o {}: expected an existing directory {}", path,
                      parent.string());
  }
  if (std::filesystem::is_directory(path, ec)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "-o {}: expected a file name, found a directory (name the .npy file to write)", path);
  }
  return ok_status();
}

}  // namespace tenferro::cli
