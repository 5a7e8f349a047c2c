// Building managed and external domain sets.
#include "tenferro/cpu/domains/cpu_domain_set.h"

#include <algorithm>

#include "cpu/domains/managed_executor.h"

namespace tenferro::cpu {

Result<std::shared_ptr<const CpuDomainSet>> CpuDomainSet::create_managed(const CpuTopology& topology,
                                                                         std::span<const CpuDomainSpec> specs,
                                                                         MemoryPoolOptions memory) {
  std::vector<CpuDomainSpec> defaults;
  if (specs.empty()) {
    defaults = default_domain_specs(topology);
    specs = defaults;
  }
  // Every check happens here, before any arena or worker exists.
  TENFERRO_ASSIGN_OR_RETURN(std::vector<CpuDomainSpec> resolved, resolve_specs(topology, specs));

  auto set = std::shared_ptr<CpuDomainSet>(new CpuDomainSet());
  set->mode_ = CpuDomainMode::kManaged;
  set->topology_ = topology;
  for (CpuDomainSpec& spec : resolved) {
    const bool covers_all = spec.cpus == topology.allowed_cpus();
    auto counters = std::make_shared<CpuResourceDomain::Counters>();
    std::shared_ptr<CpuDomainExecutor> executor = internal::make_managed_executor(
        {spec.cpus, spec.thread_budget, topology.is_this_system(), !covers_all, spec.worker_spin, counters});
    auto pool = CpuDomainMemoryPool::create(spec.id, spec.numa_node, topology.hwloc(), memory);
    CpuExecutorCapabilities capabilities = executor->capabilities();
    set->domains_.push_back(CpuResourceDomain::create(std::move(spec), CpuDomainMode::kManaged, covers_all,
                                                      std::move(executor), std::move(capabilities), std::move(counters),
                                                      std::move(pool)));
  }
  return std::shared_ptr<const CpuDomainSet>(std::move(set));
}

Result<std::shared_ptr<const CpuDomainSet>> CpuDomainSet::create_external(std::span<const ExternalCpuDomainSpec> specs,
                                                                          const CpuTopology* topology,
                                                                          MemoryPoolOptions memory) {
  std::vector<CpuDomainSpec> declared;
  std::vector<CpuExecutorCapabilities> capabilities;
  for (const ExternalCpuDomainSpec& spec : specs) {
    if (spec.executor == nullptr) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "external CPU domain {}: expected an executor, found null", spec.domain.id);
    }
    capabilities.push_back(spec.executor->capabilities());
    declared.push_back(spec.domain);
  }
  TENFERRO_TRY(validate_static_specs(declared));
  for (std::size_t i = 0; i < declared.size(); ++i) {
    CpuDomainSpec& spec = declared[i];
    const int workers = capabilities[i].workers;
    if (workers < 1) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "external CPU domain {}: expected an executor with at least one worker, found {} ('{}')",
                        spec.id, workers, capabilities[i].name);
    }
    if (spec.thread_budget > workers) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "external CPU domain {}: expected a thread budget of at most the executor's {} workers ('{}'), "
                        "found {}",
                        spec.id, workers, capabilities[i].name, spec.thread_budget);
    }
    if (spec.thread_budget == 0) spec.thread_budget = std::min(spec.cpus.count(), workers);
  }

  auto set = std::shared_ptr<CpuDomainSet>(new CpuDomainSet());
  set->mode_ = CpuDomainMode::kExternal;
  if (topology != nullptr) set->topology_ = *topology;
  for (std::size_t i = 0; i < declared.size(); ++i) {
    CpuDomainSpec& spec = declared[i];
    const bool covers_all = topology != nullptr && spec.cpus == topology->allowed_cpus();
    auto pool =
        CpuDomainMemoryPool::create(spec.id, spec.numa_node, topology != nullptr ? topology->hwloc() : nullptr, memory);
    set->domains_.push_back(CpuResourceDomain::create(
        std::move(spec), CpuDomainMode::kExternal, covers_all, specs[i].executor, std::move(capabilities[i]),
        std::make_shared<CpuResourceDomain::Counters>(), std::move(pool)));
  }
  return std::shared_ptr<const CpuDomainSet>(std::move(set));
}

const CpuResourceDomain* CpuDomainSet::find(CpuDomainId id) const noexcept {
  for (const auto& domain : domains_) {
    if (domain->id() == id) return domain.get();
  }
  return nullptr;
}

}  // namespace tenferro::cpu
