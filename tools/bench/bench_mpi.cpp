// `tenferro bench mpi`: scale-out over MPI, measured with mpirun in the same
// run as its baselines (docs/mpi.md).
//   mera_np1_t1, mera_np2_t1: `tenferro einsum FILE --slice-over-ranks
//     --threads 1` under mpirun with 1 and 2 ranks against the unsliced
//     `tenferro einsum FILE --threads 1` (one process, no MPI); FILE is the
//     first input or the MERA closed instance of ../shared (a given FILE
//     names the cases by its stem, `<stem>_np2_t1`); the _cpu cases
//     compare the busiest rank's process CPU time instead of wall time.
//   allreduce_64MiB_np2: mpi::allreduce (sum, in place, with its agreement
//     step) of 64 MiB of float64 against a plain MPI_Allreduce(MPI_IN_PLACE)
//     of the same buffer, interleaved, slowest rank per call.
// The parent process only launches mpirun (itself as `bench mpi` for the
// allreduce, which then runs in rank mode, detected by Open MPI's
// OMPI_COMM_WORLD_SIZE) and parses the JSON the children print.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/base/input_file.h"

#ifdef TENFERRO_HAVE_MPI
#include <mpi.h>

#include "tenferro/mpi.h"
#endif

namespace tenferro::bench {
namespace {

constexpr int kRounds = 3;  // Note [Interleaved rounds]

// Runs `command` through the shell; its stdout, or nullopt on failure.
std::optional<std::string> capture(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  const int rc = ::pclose(pipe);
  if (rc != 0) return std::nullopt;
  return out;
}

// The last line of `out` that parses as a JSON object.
std::optional<nlohmann::json> last_json(const std::string& out) {
  std::optional<nlohmann::json> found;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    if (!line.empty() && line.front() == '{') {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) found = std::move(j);
    }
    start = end + 1;
  }
  return found;
}

#ifdef TENFERRO_HAVE_MPI
// Rank mode: the allreduce case, rank 0 prints it as JSON.
int run_allreduce_ranks(const SuiteOptions& options) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  int rc = 0;
  {
    Result<std::shared_ptr<mpi::Communicator>> comm = mpi::Communicator::duplicate(MPI_COMM_WORLD);
    if (!comm.ok()) {
      std::fprintf(stderr, "bench mpi: %s\n", comm.status().to_string().c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const std::int64_t n = (std::int64_t{64} << 20) / 8;
    Tensor t = *Tensor::zeros({n}, DType::kFloat64);
    const int runs = options.runs > 0 ? options.runs : (options.quick ? 3 : 15);
    std::vector<double> ours, plain;
    const auto slowest = [&](double seconds) {
      double max = seconds;
      MPI_Allreduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, (*comm)->comm());
      return max;
    };
    for (int r = 0; r < runs + 1; ++r) {  // the first pair warms up
      MPI_Barrier((*comm)->comm());
      double start = MPI_Wtime();
      const Status s = mpi::allreduce(**comm, t, mpi::ReduceOp::kSum);
      const double a = slowest(MPI_Wtime() - start);
      if (!s.ok()) {
        std::fprintf(stderr, "bench mpi: %s\n", s.to_string().c_str());
        rc = 1;
        break;
      }
      MPI_Barrier((*comm)->comm());
      start = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, (*comm)->comm());
      const double b = slowest(MPI_Wtime() - start);
      if (r > 0) {
        ours.push_back(a);
        plain.push_back(b);
      }
    }
    if (rc == 0 && (*comm)->rank() == 0) {
      Samples o{ours}, p{plain};
      Case c{fmt::format("allreduce_64MiB_np{}", (*comm)->size()),
             o.median(),
             "s",
             p.median(),
             "MPI_Allreduce",
             1,
             static_cast<int>(ours.size())};
      std::printf("%s\n", Reporter::to_json("mpi", c).dump().c_str());
    }
  }
  MPI_Finalize();
  return rc;
}
#endif

}  // namespace

int run_mpi_suite(const SuiteOptions& options, Reporter& reporter) {
#ifndef TENFERRO_HAVE_MPI
  (void)options;
  reporter.progress("bench mpi: this tenferro was built without MPI; nothing to measure");
  return 1;
#else
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) return run_allreduce_ranks(options);
  const std::string mpiexec = TENFERRO_MPIEXEC;
  if (mpiexec.empty() || !std::filesystem::exists(mpiexec)) {
    reporter.progress("bench mpi: mpiexec not found; nothing to measure");
    return 1;
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    reporter.progress("bench mpi: cannot find this program's path");
    return 1;
  }
  const std::string launch = fmt::format("{} {} -np ", mpiexec, TENFERRO_MPIEXEC_FLAGS);
  const std::string instance = !options.inputs.empty()
                                   ? options.inputs[0]
                                   : std::string(TENFERRO_SHARED_DIR) + "/bench/instances/str_nw_mera_closed_120.json";
  // A named instance that cannot be read is a failure; without one, a
  // missing default instance only skips the einsum cases.
  if (!options.inputs.empty()) {
    if (Result<InputFile> file = open_input_file(instance, ".json instance file"); !file.ok()) {
      reporter.progress(fmt::format("bench mpi: {}; nothing measured", file.status().to_string()));
      return 1;
    }
  }
  const std::string case_prefix =
      options.inputs.empty() ? std::string("mera") : std::filesystem::path(instance).stem().string();
  const int runs = options.runs > 0 ? options.runs : (options.quick ? 1 : 3);
  // Note [Interleaved rounds]: the unsliced baseline and the 1- and 2-rank
  // runs alternate, kRounds times (once with --quick), and each case reports
  // medians over the rounds: on a VM whose speed drifts by 10-20 % over a
  // minute, one baseline measured before both sliced runs moved their
  // ratios by as much (1.78x and 1.99x for the same rank times).
  const int rounds = options.quick ? 1 : kRounds;
  int rc = 0;
  if (std::filesystem::exists(instance)) {
    const std::string einsum = fmt::format("{} einsum {} --threads 1 --runs {} --json", self, instance, runs);
    struct Series {
      std::vector<double> seconds, cpu_seconds;
      std::optional<nlohmann::json> last;
    };
    Series base;
    Series sliced[2];  // 1 and 2 ranks
    for (int round = 0; round < rounds; ++round) {
      reporter.progress(fmt::format("bench mpi: round {} of {}: {}", round + 1, rounds, einsum));
      const std::optional<std::string> base_out = capture(einsum);
      const std::optional<nlohmann::json> b = base_out ? last_json(*base_out) : std::nullopt;
      if (!b || !b->contains("median_seconds")) {
        reporter.progress("bench mpi: the unsliced baseline failed");
        return 1;
      }
      base.seconds.push_back((*b)["median_seconds"].get<double>());
      if (b->contains("median_cpu_seconds")) base.cpu_seconds.push_back((*b)["median_cpu_seconds"].get<double>());
      base.last = b;
      for (int ranks : {1, 2}) {
        const std::string command = fmt::format("{}{} {} --slice-over-ranks", launch, ranks, einsum);
        reporter.progress("bench mpi: " + command);
        const std::optional<std::string> out = capture(command);
        const std::optional<nlohmann::json> j = out ? last_json(*out) : std::nullopt;
        if (!j || !j->contains("median_seconds")) {
          reporter.progress(fmt::format("bench mpi: {} ranks failed", ranks));
          rc = 1;
          continue;
        }
        Series& series = sliced[ranks - 1];
        series.seconds.push_back((*j)["median_seconds"].get<double>());
        if (j->contains("median_cpu_seconds")) series.cpu_seconds.push_back((*j)["median_cpu_seconds"].get<double>());
        series.last = j;
      }
    }
    for (int ranks : {1, 2}) {
      const Series& series = sliced[ranks - 1];
      if (!series.last) continue;
      const nlohmann::json& j = *series.last;
      Case c{fmt::format("{}_np{}_t1", case_prefix, ranks),
             cli::median_of(series.seconds),
             "s",
             cli::median_of(base.seconds),
             "unsliced_np1_t1",
             1,
             runs * static_cast<int>(series.seconds.size())};
      c.extra["ranks"] = ranks;
      c.extra["rounds"] = series.seconds.size();
      c.extra["round_seconds"] = series.seconds;
      c.extra["round_baseline_seconds"] = base.seconds;
      c.extra["slices"] = j["slices"];
      c.extra["overhead"] = j["overhead"];
      // Round robin of index slices or one label range per rank (Note
      // [Range slicing]), and the plan's bounds on the speedup.
      if (j.contains("split")) c.extra["split"] = j["split"];
      if (j.contains("range_label")) c.extra["range_label"] = j["range_label"];
      if (j.contains("speedup_bound")) c.extra["speedup_bound"] = j["speedup_bound"];
      if (j.contains("work_speedup_bound")) c.extra["work_speedup_bound"] = j["work_speedup_bound"];
      c.extra["checksum"] = j["checksum"];
      c.extra["baseline_checksum"] = (*base.last)["checksum"];
      reporter.add(std::move(c));
      // The busiest rank's CPU time against the unsliced run's: on a loaded
      // machine closer to the idle-machine speedup than wall time.
      if (series.cpu_seconds.size() == series.seconds.size() && base.cpu_seconds.size() == base.seconds.size()) {
        Case cpu{fmt::format("{}_np{}_t1_cpu", case_prefix, ranks),
                 cli::median_of(series.cpu_seconds),
                 "s",
                 cli::median_of(base.cpu_seconds),
                 "unsliced_np1_t1_cpu",
                 1,
                 runs * static_cast<int>(series.cpu_seconds.size())};
        reporter.add(std::move(cpu));
      }
    }
  } else {
    reporter.progress("bench mpi: " + instance + " not found; skipping the einsum cases");
  }
  const std::string allreduce = fmt::format("{}2 {} bench mpi --json{}", launch, self,
                                            options.runs > 0 ? fmt::format(" --runs {}", options.runs) : "");
  reporter.progress("bench mpi: " + allreduce);
  const std::optional<std::string> out = capture(allreduce);
  const std::optional<nlohmann::json> j = out ? last_json(*out) : std::nullopt;
  if (!j || !j->contains("ours")) {
    reporter.progress("bench mpi: the allreduce ranks failed");
    return 1;
  }
  Case c{(*j)["case"].get<std::string>(),
         (*j)["ours"].get<double>(),
         "s",
         (*j)["baseline"].get<double>(),
         "MPI_Allreduce",
         1,
         (*j)["runs"].get<int>()};
  reporter.add(std::move(c));
  return rc;
#endif
}

}  // namespace tenferro::bench
