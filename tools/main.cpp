// The `tenferro` command-line program. Subcommands are registered explicitly.
#include <CLI/CLI.hpp>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "info_command.h"
#include "tenferro/base/build_info.h"

int main(int argc, char** argv) {
  CLI::App app{"tenferro: tensor contraction, linear algebra and differentiation runtime"};
  app.set_version_flag("--version", std::string(tenferro::build_info().version));
  app.require_subcommand(1);
  tenferro::cli::add_info_command(app);
  tenferro::bench::add_bench_command(app);
  tenferro::cli::add_einsum_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
