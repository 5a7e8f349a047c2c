// CpuDomainSet: the validated set of CPU resource domains an engine owns, in
// Managed mode (tenferro discovers topology, builds and pins one oneTBB
// executor per domain) or ExternalManaged mode (the application supplies an
// executor per domain).
// Construction is atomic: every spec is checked before any executor or
// worker is created, and a failure creates nothing.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_resource_domain.h"
#include "tenferro/cpu/domains/domain_spec.h"
#include "tenferro/cpu/domains/memory_pool.h"
#include "tenferro/cpu/domains/topology.h"

namespace tenferro::cpu {

/// An application-supplied domain: the declared spec and its executor.
struct ExternalCpuDomainSpec {
  /// A zero thread_budget means min(cpus.count(), executor workers).
  CpuDomainSpec domain;
  /// Retained by the domain and by every job submitted to it.
  std::shared_ptr<CpuDomainExecutor> executor;
};

/// A validated, immutable set of domains. Thread-safe. Share it with
/// std::shared_ptr; domains stay alive while anything (a job, a storage's
/// memory pool) still refers to them.
class CpuDomainSet {
 public:
  /// Managed mode. `specs` empty: default_domain_specs(topology) (one domain
  /// per NUMA node). Checks resolve_specs() before building anything.
  static Result<std::shared_ptr<const CpuDomainSet>> create_managed(const CpuTopology& topology,
                                                                    std::span<const CpuDomainSpec> specs = {},
                                                                    MemoryPoolOptions memory = {});

  /// ExternalManaged mode. Checks validate_static_specs(), a non-null
  /// executor per domain (kInvalidArgument) and budgets within the
  /// executor's workers (kInvalidArgument). With `topology`, domains learn
  /// whether they cover the allowed CPUs and NUMA-bound pools become
  /// possible; without it neither is assumed. Declared CPU sets are never
  /// verified against live thread affinity.
  static Result<std::shared_ptr<const CpuDomainSet>> create_external(std::span<const ExternalCpuDomainSpec> specs,
                                                                     const CpuTopology* topology = nullptr,
                                                                     MemoryPoolOptions memory = {});

  CpuDomainMode mode() const noexcept { return mode_; }
  /// In spec order; never empty.
  std::span<const std::shared_ptr<const CpuResourceDomain>> domains() const noexcept { return domains_; }
  /// The domain with `id`, or nullptr.
  const CpuResourceDomain* find(CpuDomainId id) const noexcept;
  /// The first domain: where work without an explicit or input-derived
  /// placement runs.
  const CpuResourceDomain& default_domain() const noexcept { return *domains_.front(); }
  /// The topology the set was built on (always present in Managed mode).
  const std::optional<CpuTopology>& topology() const noexcept { return topology_; }

 private:
  CpuDomainSet() = default;
  CpuDomainMode mode_ = CpuDomainMode::kManaged;
  std::vector<std::shared_ptr<const CpuResourceDomain>> domains_;
  std::optional<CpuTopology> topology_;
};

}  // namespace tenferro::cpu
