// Benchmark reporting and timing helpers (see bench_report.h).
#include "bench/bench_report.h"

#include <algorithm>
#include <chrono>

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

}  // namespace tenferro::bench
