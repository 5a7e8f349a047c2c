// Benchmark reporting and timing helpers (see bench_report.h).
#include "bench/bench_report.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace tenferro::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string format_value(double v) {
  if (v == 0) return "0";
  if (v >= 1e4 || v < 1e-3) return fmt::format("{:.3e}", v);
  return fmt::format("{:.4g}", v);
}

}  // namespace

bool is_rate_unit(const std::string& unit) { return unit.find("/s") != std::string::npos; }

std::optional<double> Case::ratio() const {
  if (!baseline) return std::nullopt;
  if (is_rate_unit(unit)) {
    if (*baseline == 0) return std::nullopt;
    return ours / *baseline;
  }
  if (ours == 0) return std::nullopt;
  return *baseline / ours;
}

Reporter::Reporter(std::string suite, bool json, std::FILE* out, std::FILE* progress)
    : suite_(std::move(suite)), json_(json), out_(out), progress_(progress) {}

nlohmann::json Reporter::to_json(const std::string& suite, const Case& c) {
  nlohmann::json j = {{"suite", suite}, {"case", c.name},       {"ours", c.ours},
                      {"unit", c.unit}, {"threads", c.threads}, {"runs", c.runs}};
  if (c.baseline) {
    j["baseline"] = *c.baseline;
    j["baseline_name"] = c.baseline_name;
  }
  if (auto r = c.ratio()) j["ratio"] = *r;
  for (const auto& [key, value] : c.extra.items()) j[key] = value;
  return j;
}

void Reporter::add(Case c) {
  if (json_) {
    std::fputs((to_json(suite_, c).dump() + "\n").c_str(), out_);
    std::fflush(out_);
  }
  cases_.push_back(std::move(c));
}

void Reporter::progress(const std::string& message) {
  if (progress_ != nullptr) {
    std::fputs(fmt::format("[{}] {}\n", suite_, message).c_str(), progress_);
    std::fflush(progress_);
  }
}

void Reporter::finish() {
  if (json_) return;
  std::size_t width = 4;
  for (const Case& c : cases_) width = std::max(width, c.name.size());
  std::string text = fmt::format("suite {}\n{:<{}}  {:>11}  {:<8} {:>11}  {:<20} {:>7} {:>7} {:>6}\n", suite_, "case",
                                 width, "ours", "unit", "baseline", "baseline_name", "ratio", "threads", "runs");
  for (const Case& c : cases_) {
    const auto r = c.ratio();
    text += fmt::format("{:<{}}  {:>11}  {:<8} {:>11}  {:<20} {:>7} {:>7} {:>6}\n", c.name, width, format_value(c.ours),
                        c.unit, c.baseline ? format_value(*c.baseline) : "-", c.baseline ? c.baseline_name : "-",
                        r ? fmt::format("{:.3f}", *r) : "-", c.threads, c.runs);
  }
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

double Samples::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double Samples::min() const { return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end()); }

Samples time_runs(const std::function<void()>& fn, int min_runs, double min_seconds, int max_runs) {
  fn();  // warm-up: caches, lazy initialisation, page faults
  Samples samples;
  const auto start = Clock::now();
  while (static_cast<int>(samples.seconds.size()) < max_runs &&
         (static_cast<int>(samples.seconds.size()) < min_runs || seconds_since(start) < min_seconds)) {
    const auto t0 = Clock::now();
    fn();
    samples.seconds.push_back(seconds_since(t0));
  }
  return samples;
}

Samples time_batched(const std::function<void()>& fn, int batch, int min_samples, double min_seconds) {
  for (int i = 0; i < batch; ++i) fn();
  Samples samples;
  const auto start = Clock::now();
  while (static_cast<int>(samples.seconds.size()) < min_samples || seconds_since(start) < min_seconds) {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) fn();
    samples.seconds.push_back(seconds_since(t0) / batch);
  }
  return samples;
}

std::optional<std::string> run_python_peer(std::string_view script, std::span<const std::string> args, int threads) {
  for (const std::string& arg : args) {
    if (arg.find('\'') != std::string::npos) return std::nullopt;
  }
  char path[] = "/tmp/tenferro_peer_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return std::nullopt;
  const bool written = ::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
  ::close(fd);
  std::optional<std::string> out;
  if (written) {
    std::string command = fmt::format("OPENBLAS_NUM_THREADS={0} OMP_NUM_THREADS={0} MKL_NUM_THREADS={0} {1} {2}",
                                      threads, kPeerPython, path);
    for (const std::string& arg : args) command += " '" + arg + "'";
    if (std::FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r")) {
      std::string text;
      char buffer[4096];
      while (const std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, got);
      if (::pclose(pipe) == 0) out = std::move(text);
    }
  }
  std::remove(path);
  return out;
}

}  // namespace tenferro::bench
