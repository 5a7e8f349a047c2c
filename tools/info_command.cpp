// `tenferro info`: the info document (info.h) with the CUDA and MPI
// sections only the CLI links, printed as JSON or as indented text.
#include "info_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "info.h"
#ifdef TENFERRO_HAVE_CUDA
#include "tenferro/cuda/device.h"
#endif
#ifdef TENFERRO_HAVE_MPI
#include <mpi.h>
#endif

namespace tenferro::cli {
namespace {

// The CUDA devices, or why there are none: the toolkit was not found at
// build time, or the runtime's reason (no driver, no device).
nlohmann::json cuda_section() {
#ifdef TENFERRO_HAVE_CUDA
  const auto version = [](int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); };
  nlohmann::json section = {{"built", true}, {"runtime_version", version(cuda::runtime_version())}};
  if (Result<int> driver = cuda::driver_version(); driver.ok()) {
    section["driver_version"] = version(*driver);
  } else {
    section["driver_version"] = "none";
  }
  Result<std::vector<cuda::DeviceInfo>> devices = cuda::query_devices();
  if (!devices.ok()) {
    section["devices"] = nlohmann::json::array();
    section["error"] = devices.status().to_string();
    return section;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const cuda::DeviceInfo& d : *devices) {
    list.push_back(
        {{"ordinal", d.ordinal},
         {"name", d.name},
         {"pci_bus_id", d.pci_bus_id},
         {"memory_bytes", d.total_memory_bytes},
         {"compute_capability", fmt::format("{}.{}", d.compute_capability_major, d.compute_capability_minor)},
         {"multiprocessors", d.multiprocessors}});
  }
  section["devices"] = list;
  return section;
#else
  return {{"built", false}, {"error", "tenferro was built without the CUDA toolkit (tenferro::cuda is absent)"}};
#endif
}

// MPI: whether --slice-over-ranks (and the Python module's tenferro.mpi) is
// built, and the MPI library (MPI_Get_library_version may be called before
// MPI_Init; this never initialises MPI).
nlohmann::json mpi_section() {
#ifdef TENFERRO_HAVE_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  // Open MPI counts the terminating NUL in `length`; keep the first line.
  std::string library(text, static_cast<std::size_t>(std::clamp(length, 0, MPI_MAX_LIBRARY_VERSION_STRING)));
  if (const std::size_t end = library.find_first_of(std::string_view("\0\r\n", 3)); end != std::string::npos) {
    library.resize(end);
  }
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return {{"built", true},
          {"library", library},
          {"standard", fmt::format("{}.{}", major, minor)},
          {"mpiexec", TENFERRO_MPIEXEC}};
#else
  return {{"built", false}, {"error", "tenferro was built without MPI (libopenmpi-dev); --slice-over-ranks is absent"}};
#endif
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print version, build configuration, topology and providers");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([json] {
    nlohmann::json document = info::gather();
    document["cuda"] = cuda_section();
    document["mpi"] = mpi_section();
    const std::string text = *json ? document.dump(2) + "\n" : info::to_text(document);
    std::fputs(text.c_str(), stdout);
    // An invalid TENFERRO_CPU_ISA (kernels) or a provider table that cannot
    // be read (linalg: TENFERRO_LINALG_PROVIDER_TABLE naming a missing or
    // malformed file): the document says why, and no runtime could be made,
    // so the command fails, as einsum and bench do. Each error goes to
    // stderr too.
    bool failed = false;
    for (const char* section : {"kernels", "linalg"}) {
      if (const nlohmann::json& s = document[section]; s.contains("error")) {
        std::fprintf(stderr, "tenferro info: %s\n", s["error"].get<std::string>().c_str());
        failed = true;
      }
    }
    if (failed) throw CLI::RuntimeError(1);
  });
}

}  // namespace tenferro::cli
