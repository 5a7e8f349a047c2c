// Reporting for `tenferro bench SUITE` (docs/CONTRIBUTING.md, "Benchmarks"):
// a readable table by default, or one JSON
// object per case with --json. Ratios are oriented so that >= 1 means tenferro
// is as good as or better than the same-run baseline.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tenferro::bench {

/// Units whose larger values are better (rates); everything else is a cost.
bool is_rate_unit(const std::string& unit);

/// One reported case.
struct Case {
  std::string name;  ///< stable case name, e.g. "dgemm_n1024_t1"
  double ours = 0;
  std::string unit;  ///< "s", "ns", "GB/s", "GFLOP/s", "allocs", ...
  std::optional<double> baseline;
  std::string baseline_name;
  int threads = 1;
  int runs = 1;
  nlohmann::json extra = nlohmann::json::object();  ///< additional fields

  /// baseline/ours for costs, ours/baseline for rates; nullopt without a
  /// baseline or when the denominator is zero.
  std::optional<double> ratio() const;
};

/// Collects cases of one suite and prints them. Not thread-safe.
class Reporter {
 public:
  Reporter(std::string suite, bool json, std::FILE* out = stdout, std::FILE* progress = stderr);

  /// Prints a JSON line immediately (json mode) or remembers the row.
  void add(Case c);
  /// A progress line on the progress stream.
  void progress(const std::string& message);
  /// Prints the table (text mode). Call once at the end.
  void finish();

  const std::vector<Case>& cases() const { return cases_; }
  static nlohmann::json to_json(const std::string& suite, const Case& c);

 private:
  std::string suite_;
  bool json_;
  std::FILE* out_;
  std::FILE* progress_;
  std::vector<Case> cases_;
};

/// Timing samples of a repeated measurement, in seconds.
struct Samples {
  std::vector<double> seconds;
  double median() const;
  double min() const;
  std::size_t runs() const { return seconds.size(); }
};

/// Runs `fn` once to warm up, then at least `min_runs` times and until
/// `min_seconds` have passed (capped at `max_runs`), timing each call.
Samples time_runs(const std::function<void()>& fn, int min_runs = 5, double min_seconds = 0.2, int max_runs = 1000000);

/// Times `batch` calls of `fn` per sample and reports per-call seconds; for
/// operations too short to time one by one.
Samples time_batched(const std::function<void()>& fn, int batch, int min_samples = 9, double min_seconds = 0.2);

/// The interpreter that runs the numpy and torch peers: Debian's, where
/// python3-numpy and python3-torch install (the python3 first on PATH may
/// lack them).
inline constexpr const char* kPeerPython = "/usr/bin/python3";

/// Runs `script` (Python source, written to a temporary file) with
/// kPeerPython and `args` as its arguments, with OPENBLAS_NUM_THREADS,
/// OMP_NUM_THREADS and MKL_NUM_THREADS set to `threads`. Returns what it
/// printed on stdout; nullopt when it could not start or exited non-zero (a
/// missing module, say), or when an argument holds a single quote. Its
/// stderr is discarded.
std::optional<std::string> run_python_peer(std::string_view script, std::span<const std::string> args, int threads);

}  // namespace tenferro::bench
