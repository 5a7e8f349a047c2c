// The `tenferro` command-line program. Subcommands are registered explicitly.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

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
  int rc = 0;
  // A misspelled subcommand: CLI11 would report a missing one.
  if (argc > 1 && argv[1][0] != '-' &&
      app.get_subcommands([&](CLI::App* sub) { return sub->check_name(argv[1]); }).empty()) {
    std::fprintf(stderr, "tenferro: unknown subcommand '%s' (expected info, bench or einsum; see tenferro --help)\n",
                 argv[1]);
    return static_cast<int>(CLI::ExitCodes::RequiredError);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks for the subcommand before it reports unknown arguments:
    // `tenferro --bogus` said only that a subcommand is required.
    rc = app.remaining().empty() ? app.exit(e) : app.exit(CLI::ExtrasError(app.remaining()));
  } catch (const CLI::ParseError& e) {
    rc = app.exit(e);  // help, version and argument errors (CLI11's exit codes)
  }
  // Output the shell never received (a full disk, a closed stdout) is a
  // failure: a script reading the JSON must not see exit status 0.
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
    std::fprintf(stderr, "tenferro: writing to standard output failed: %s\n", std::strerror(errno));
    return rc != 0 ? rc : 1;
  }
  return rc;
}
