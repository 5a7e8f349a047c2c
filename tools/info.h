// What this tenferro binary is and which kernels and providers it runs: the
// document behind `tenferro info` and the Python module's
// tenferro.show_config() (docs/cli.md). Internal to the tools and the
// Python module; not installed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tenferro::info {

/// The sections every binary can report: version, build, kernels, cpu,
/// cpu_engine, fft, linalg. Never fails: a section that cannot be
/// gathered holds an "error" entry instead.
nlohmann::json gather();

/// `document` as `tenferro info` prints it without --json: "tenferro
/// VERSION", then one "key: value" line per scalar, nested objects and
/// lists of objects indented.
std::string to_text(const nlohmann::json& document);

}  // namespace tenferro::info
