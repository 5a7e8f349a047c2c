// Default domain layouts and the configuration checks on domain specs.
#include "tenferro/cpu/domains/domain_spec.h"

namespace tenferro::cpu {
namespace {

Error config_error(ErrorCode code, std::string message) {
  return Error(code, ErrorStage::kConfiguration, std::move(message));
}

// The node whose CPUs contain all of `cpus`, if exactly one does.
std::optional<unsigned> node_containing(const CpuTopology& topology, const CpuSet& cpus) {
  for (const NumaNode& node : topology.numa_nodes()) {
    if (!node.cpus.empty() && cpus.is_subset_of(node.cpus)) return node.os_index;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(CpuPlacementMode mode) noexcept {
  return mode == CpuPlacementMode::kStrict ? "strict" : "advisory";
}

std::vector<CpuDomainSpec> default_domain_specs(const CpuTopology& topology, CpuDomainLayout layout) {
  std::vector<CpuDomainSpec> specs;
  auto add = [&specs](CpuSet cpus, std::optional<unsigned> node) {
    const int budget = cpus.count();
    specs.push_back(CpuDomainSpec{CpuDomainId(specs.size() + 1), std::move(cpus), budget, node});
  };
  if (layout == CpuDomainLayout::kWholeAllowedSet) {
    add(topology.allowed_cpus(), node_containing(topology, topology.allowed_cpus()));
    return specs;
  }
  for (const NumaNode& node : topology.numa_nodes()) {
    if (!node.cpus.empty()) add(node.cpus, node.os_index);
  }
  CpuSet outside = topology.cpus_outside_nodes();
  if (!outside.empty()) add(std::move(outside), std::nullopt);
  return specs;
}

Status validate_static_specs(std::span<const CpuDomainSpec> specs) {
  if (specs.empty()) {
    return config_error(ErrorCode::kInvalidArgument, "CPU domains: expected at least one domain, found none");
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const CpuDomainSpec& a = specs[i];
    if (!a.id.valid()) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("CPU domain #{}: expected a non-zero CpuDomainId, found 0", i));
    }
    if (a.cpus.empty()) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("CPU domain {}: expected a non-empty CPU set, found an empty one", a.id));
    }
    if (a.thread_budget < 0 || a.thread_budget > a.cpus.count()) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("CPU domain {}: expected a thread budget in [1, {}] (its CPUs {}), found {}",
                                      a.id, a.cpus.count(), a.cpus, a.thread_budget));
    }
    if (a.worker_spin.count() < 0 || a.worker_spin > CpuDomainSpec::kMaxWorkerSpin) {
      return config_error(ErrorCode::kInvalidArgument,
                          fmt::format("CPU domain {}: expected a worker spin in [0, {}] us, found {} us", a.id,
                                      CpuDomainSpec::kMaxWorkerSpin.count(), a.worker_spin.count()));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const CpuDomainSpec& b = specs[j];
      if (a.id == b.id) {
        return config_error(
            ErrorCode::kAlreadyExists,
            fmt::format("CPU domains: expected unique ids, found id {} twice (CPUs {} and {})", a.id, b.cpus, a.cpus));
      }
      if (a.cpus.intersects(b.cpus)) {
        return config_error(ErrorCode::kInvalidArgument,
                            fmt::format("CPU domains {} (CPUs {}) and {} (CPUs {}): expected disjoint CPU sets, found "
                                        "CPUs {} in both",
                                        b.id, b.cpus, a.id, a.cpus, a.cpus & b.cpus));
      }
    }
  }
  return ok_status();
}

Result<std::vector<CpuDomainSpec>> resolve_specs(const CpuTopology& topology, std::span<const CpuDomainSpec> specs) {
  TENFERRO_TRY(validate_static_specs(specs));
  std::vector<CpuDomainSpec> resolved(specs.begin(), specs.end());
  for (CpuDomainSpec& spec : resolved) {
    const CpuSet outside = spec.cpus.minus(topology.allowed_cpus());
    if (!outside.empty()) {
      return config_error(ErrorCode::kPlacementError,
                          fmt::format("CPU domain {} (CPUs {}): expected CPUs this process may run on ({}), found "
                                      "CPUs {} outside them",
                                      spec.id, spec.cpus, topology.allowed_cpus(), outside));
    }
    if (spec.numa_node.has_value()) {
      const NumaNode* node = topology.find_node(*spec.numa_node);
      if (node == nullptr || !node->memory_allowed) {
        std::string known;
        for (const NumaNode& n : topology.numa_nodes()) {
          if (n.memory_allowed) known += fmt::format("{}{}", known.empty() ? "" : ",", n.os_index);
        }
        return config_error(ErrorCode::kInvalidArgument,
                            fmt::format("CPU domain {}: expected a NUMA node the process may use ({}), found node {}",
                                        spec.id, known, *spec.numa_node));
      }
    } else {
      spec.numa_node = node_containing(topology, spec.cpus);
    }
    if (spec.thread_budget == 0) spec.thread_budget = spec.cpus.count();
  }
  return resolved;
}

}  // namespace tenferro::cpu
