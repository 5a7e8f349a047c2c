// `tenferro info`: gathers one JSON document from every section and prints it
// as JSON or as indented text.
#include "info_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tenferro/base/build_info.h"

namespace tenferro::cli {
namespace {

nlohmann::json build_section() {
  const BuildInfo& b = build_info();
  return {{"git_revision", b.git_revision},
          {"type", b.build_type},
          {"compiler", b.compiler},
          {"cxx_flags", b.cxx_flags},
          {"sanitizers", b.sanitizers.empty() ? "none" : b.sanitizers},
          {"native_arch", b.native_arch},
          {"assertions", b.assertions}};
}

nlohmann::json gather() {
  nlohmann::json info;
  info["version"] = build_info().version;
  info["build"] = build_section();
  return info;
}

void print_text(const nlohmann::json& j, int depth, std::string& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    if (value.is_object()) {
      out += fmt::format("{}{}:\n", indent, key);
      print_text(value, depth + 1, out);
    } else if (value.is_array() && !value.empty() && value.front().is_object()) {
      out += fmt::format("{}{}:\n", indent, key);
      for (const auto& item : value) {
        out += fmt::format("{}  -\n", indent);
        print_text(item, depth + 2, out);
      }
    } else {
      out += fmt::format("{}{}: {}\n", indent, key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print version, build configuration, topology and providers");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([json] {
    const nlohmann::json info = gather();
    if (*json) {
      std::puts(info.dump(2).c_str());
    } else {
      std::string text = fmt::format("tenferro {}\n", info["version"].get<std::string>());
      nlohmann::json rest = info;
      rest.erase("version");
      print_text(rest, 0, text);
      std::fputs(text.c_str(), stdout);
    }
  });
}

}  // namespace tenferro::cli
