// `tenferro info [--json]`: version, build configuration and (as components
// land) topology and providers.
#pragma once

#include <CLI/CLI.hpp>

namespace tenferro::cli {

void add_info_command(CLI::App& app);

}  // namespace tenferro::cli
