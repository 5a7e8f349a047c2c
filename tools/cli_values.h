// Checks of integer option values shared by the subcommands: the whole text
// must be a base-10 integer within the bounds. CLI11's own conversion
// reported "--runs abc" and "--runs 1.5" as out of range and wrapped
// "--seed -3" into 2^64 - 3 (the CLI audit of 2026-12-06).
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

namespace tenferro::cli {

/// The empty string when `value` is an integer in [lo, hi]; otherwise a
/// message saying what was expected (CLI11 validator convention).
template <class T>
std::string integer_error(const std::string& value, T lo, T hi, std::string_view note = {}) {
  T v{};
  const char* end = value.data() + value.size();
  const auto [stop, ec] = std::from_chars(value.data(), end, v);
  if (ec == std::errc() && stop == end && !value.empty() && v >= lo && v <= hi) return {};
  return fmt::format("{}: expected an integer from {} to {}{}", value, lo, hi, note);
}

/// A validator refusing the empty string ("-o ''" would otherwise mean no
/// output): `expected` names what the option takes.
inline auto non_empty(std::string expected) {
  return [expected = std::move(expected)](const std::string& value) {
    return value.empty() ? fmt::format("expected {}, found an empty string", expected) : std::string();
  };
}

/// The CPUs this process may use (1 when the topology cannot be read): the
/// bound of every --threads option.
int allowed_cpus();

}  // namespace tenferro::cli
