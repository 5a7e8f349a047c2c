// The info document (info.h): one JSON object from every section, and its
// indented text form.
#include "info.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "tenferro/base/build_info.h"
#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/fft_cpu/fftw_provider.h"
#include "tenferro/fft_cpu/native_provider.h"
#include "tenferro/linalg_cpu/lapack_provider.h"
#include "tenferro/linalg_cpu/provider_policy.h"

namespace tenferro::info {
namespace {

nlohmann::json build_section() {
  const BuildInfo& b = build_info();
  return {{"git_revision", b.git_revision},
          {"type", b.build_type},
          {"compiler", b.compiler},
          {"cxx_flags", b.cxx_flags},
          {"sanitizers", b.sanitizers.empty() ? "none" : b.sanitizers},
          {"arch", b.arch},
          {"assertions", b.assertions},
          {"installed_module_dir", b.installed_module_dir},
          {"installed_data_dir", b.installed_data_dir}};
}

// Which kernels run (Note [ISA cap] in tenferro/cpu/cpu_isa.h): the
// instruction set the CPU offers, the cap TENFERRO_CPU_ISA puts on it, what
// the native GEMM, the layout transposes, the vector math and the integer
// contractions then run, and the compile target of everything else.
nlohmann::json kernels_section() {
  using namespace tenferro::cpu;  // NOLINT(google-build-using-namespace): one function
  const std::string env_name(kCpuIsaEnv);
  const char* env = std::getenv(env_name.c_str());
  nlohmann::json section = {{"cpu_best", to_string(best_cpu_isa())},
                            {"cap", env != nullptr && *env != '\0' ? fmt::format("{}={}", kCpuIsaEnv, env) : "none"}};
  Result<CpuIsa> isa = resolve_cpu_isa(CpuIsa::kAuto);
  if (!isa.ok()) {
    // An invalid cap: no engine runs, so no kernel is listed.
    section["error"] = isa.status().to_string();
    section["compile_target"] = fmt::format("-march={}", build_info().arch);
    return section;
  }
  section["capped"] = *isa != best_cpu_isa();
  section["gemm"] = to_string(*isa);
  section["layout_transpose"] = to_string(layout_kernel_isa());
  // Note [Vector math]: exp/log/sin/cos/tan/tanh/expm1/log1p of float32/64.
  section["vector_math"] = layout_kernel_isa() == CpuIsa::kPortable
                               ? std::string("scalar libm")
                               : fmt::format("libmvec {}", to_string(layout_kernel_isa()));
  // Note [Integer GEMM]: int32/int64 contractions, tiles of the engine's cap.
  section["integer_gemm"] = fmt::format("{} tiles", to_string(layout_kernel_isa()));
  section["compile_target"] = fmt::format("-march={}", build_info().arch);
  if (Result<std::shared_ptr<NativeGemmProvider>> gemm = NativeGemmProvider::create(); gemm.ok()) {
    // The register tiles of small products come with the GEMM's kernel table.
    const auto edge = static_cast<std::int64_t>(std::llround(std::cbrt((*gemm)->small_max_mnk(DType::kFloat64))));
    section["small_gemm_tiles"] = fmt::format("{} (real products up to {}^3)", to_string((*gemm)->isa()), edge);
  }
  return section;
}

// The CPU topology this process may use and the managed domains tenferro
// builds on it by default (one per NUMA node).
nlohmann::json cpu_section() {
  using namespace tenferro::cpu;  // NOLINT(google-build-using-namespace): one function
  auto topo = CpuTopology::discover();
  if (!topo.ok()) return {{"error", topo.status().to_string()}};
  nlohmann::json nodes = nlohmann::json::array();
  for (const NumaNode& node : topo->numa_nodes()) {
    nodes.push_back({{"os_index", node.os_index},
                     {"cpus", node.cpus.to_string()},
                     {"memory_bytes", node.memory_bytes},
                     {"memory_allowed", node.memory_allowed}});
  }
  nlohmann::json section;
  section["topology"] = {{"source", topo->source_description()},
                         {"this_system", topo->is_this_system()},
                         {"machine_cpus", topo->machine_cpus().to_string()},
                         {"allowed_cpus", topo->allowed_cpus().to_string()},
                         {"cores", topo->cores().size()},
                         {"cpus_outside_nodes", topo->cpus_outside_nodes().to_string()},
                         {"numa_nodes", nodes}};
  auto set = CpuDomainSet::create_managed(*topo);
  if (!set.ok()) {
    section["domains"] = {{"error", set.status().to_string()}};
    return section;
  }
  nlohmann::json domains = nlohmann::json::array();
  for (const auto& domain : (*set)->domains()) {
    const CpuDomainReport r = domain->report();
    domains.push_back({{"id", r.id.value()},
                       {"mode", to_string(r.mode)},
                       {"cpus", r.cpus.to_string()},
                       {"numa_node", r.numa_node ? nlohmann::json(*r.numa_node) : nlohmann::json("none")},
                       {"thread_budget", r.thread_budget},
                       {"placement", to_string(r.placement)},
                       {"executor", r.executor.name},
                       {"affinity", to_string(r.executor.affinity)},
                       {"shutdown_owner", to_string(r.executor.shutdown_owner)},
                       {"memory", to_string(r.memory_policy)},
                       {"worker_spin_us", r.worker_spin.count()},
                       {"notes", r.notes}});
  }
  section["domains"] = domains;
  return section;
}

std::string_view capability_name(tenferro::cpu::ThreadCountControl c) {
  using tenferro::cpu::ThreadCountControl;
  switch (c) {
    case ThreadCountControl::kSequential:
      return "sequential";
    case ThreadCountControl::kPerCall:
      return "per_call";
    case ThreadCountControl::kBinaryClampToOne:
      return "binary_clamp_to_one";
    case ThreadCountControl::kGlobalOrUncontrolled:
      return "global_or_uncontrolled";
  }
  return "unknown";
}

std::string_view capability_name(tenferro::cpu::PlacementControl c) {
  using tenferro::cpu::PlacementControl;
  switch (c) {
    case PlacementControl::kCallingThread:
      return "calling_thread";
    case PlacementControl::kEngineWorkers:
      return "engine_workers";
    case PlacementControl::kExternalWorkers:
      return "external_workers";
  }
  return "unknown";
}

// The CPU engine's providers for each GEMM provider name, on the default
// managed domains, with the thread-count and placement capability each
// reports (a library that is not installed says why).
nlohmann::json cpu_engine_section() {
  using namespace tenferro::cpu;  // NOLINT(google-build-using-namespace): one function
  std::shared_ptr<const CpuDomainSet> domains;
  if (auto topo = CpuTopology::discover(); topo.ok()) {
    if (auto set = CpuDomainSet::create_managed(*topo); set.ok()) domains = *set;
  }
  nlohmann::json engines = nlohmann::json::array();
  for (std::string_view name : kGemmProviderNames) {
    CpuEngineOptions options;
    options.gemm = {std::string(name)};
    options.domains = domains;
    nlohmann::json entry = {{"gemm", name}, {"domains", domains ? "managed default" : "none"}};
    auto engine = make_cpu_engine(options);
    if (!engine.ok()) {
      entry["error"] = engine.status().to_string();
      engines.push_back(entry);
      continue;
    }
    nlohmann::json providers = nlohmann::json::array();
    for (const CpuEngineProviderInfo& p : engine->providers) {
      nlohmann::json refusals = nlohmann::json::array();
      for (const ProviderRefusal& r : p.refusals)
        refusals.push_back({{"candidate", r.candidate}, {"reason", r.reason}});
      providers.push_back({{"family", runtime::to_string(p.family)},
                           {"name", p.name},
                           {"thread_count", capability_name(p.capability.thread_count)},
                           {"placement", capability_name(p.capability.placement)},
                           {"detail", p.capability.detail},
                           {"refusals", refusals}});
    }
    entry["providers"] = providers;
    engines.push_back(entry);
  }
  return engines;
}

// The FFT providers the fft engine can use, with their capability.
nlohmann::json fft_section() {
  nlohmann::json providers = nlohmann::json::array();
  const std::shared_ptr<const fft::CpuFftProvider> all[] = {std::make_shared<fft::FftwFftProvider>(),
                                                            std::make_shared<fft::NativeFftProvider>()};
  for (const auto& p : all) {
    providers.push_back({{"name", p->name()},
                         {"thread_count", capability_name(p->capability().thread_count)},
                         {"placement", capability_name(p->capability().placement)},
                         {"detail", p->capability().detail}});
  }
  return {{"default", "fftw"}, {"providers", providers}};
}

// The measured provider table the default linalg engine reads (Note
// [Provider table file]): where it is and what produced it, or why it
// cannot be read.
nlohmann::json linalg_section() {
  const std::string path = linalg::default_provider_table_path();
  nlohmann::json section = {{"provider_table", path}};
  Result<linalg::ProviderTable> table = linalg::read_provider_table(path);
  if (table.ok()) {
    section["source"] = table->source;
  } else {
    section["error"] = table.status().to_string();
  }
  // The default LAPACK provider's OpenBLAS and its kernels (Note [OpenBLAS
  // kernels for new CPUs] in src/linalg_cpu/lapack/lapack_provider.cpp).
  Result<std::shared_ptr<linalg::LapackLinalgProvider>> lapack = linalg::LapackLinalgProvider::load();
  if (lapack.ok()) {
    const linalg::LapackIdentity& id = (*lapack)->identity();
    nlohmann::json provider = {
        {"name", std::string((*lapack)->name())}, {"openblas_kernels", id.openblas_core}, {"library", id.lapack_path}};
    if (!id.openblas_own_choice.empty()) {
      provider["kernels_chosen_by"] = fmt::format(
          "tenferro (OpenBLAS chose {} for this CPU; set OPENBLAS_CORETYPE to choose)", id.openblas_own_choice);
    }
    section["lapack"] = provider;
  } else {
    section["lapack"] = {{"error", lapack.status().to_string()}};
  }
  return section;
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

nlohmann::json gather() {
  nlohmann::json info;
  info["version"] = build_info().version;
  info["build"] = build_section();
  info["kernels"] = kernels_section();
  info["cpu"] = cpu_section();
  info["cpu_engine"] = cpu_engine_section();
  info["fft"] = fft_section();
  info["linalg"] = linalg_section();
  return info;
}

std::string to_text(const nlohmann::json& document) {
  std::string text;
  nlohmann::json rest = document;
  if (rest.contains("version") && rest["version"].is_string()) {
    text = fmt::format("tenferro {}\n", rest["version"].get<std::string>());
    rest.erase("version");
  }
  print_text(rest, 0, text);
  return text;
}

}  // namespace tenferro::info
