// What a CPU resource domain is made of before it exists: its identity,
// exact CPU set, thread budget, NUMA node and placement strictness, and the
// configuration checks every spec passes before any worker starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_set.h"
#include "tenferro/cpu/domains/topology.h"

namespace tenferro::cpu {

/// How strictly a domain's CPU set binds the providers that run in it
/// (capabilities.h). Strict: every thread a call uses must be on the
/// domain's CPUs, so a provider that cannot guarantee it is a placement
/// error. Advisory: the CPU set is a preference; such providers are allowed
/// and diagnostics say placement is not enforced.
enum class CpuPlacementMode : std::uint8_t { kStrict, kAdvisory };
std::string_view to_string(CpuPlacementMode mode) noexcept;

/// The configuration of one domain. Value type.
struct CpuDomainSpec {
  /// Non-zero and unique within a domain set.
  CpuDomainId id;
  /// The exact CPUs the domain's threads may run on; non-empty.
  CpuSet cpus;
  /// Most threads one operation may use, in [1, cpus.count()]; 0 means one
  /// thread per CPU.
  int thread_budget = 0;
  /// The OS NUMA node that holds the domain's memory. nullopt: the node all
  /// `cpus` belong to when there is exactly one, otherwise none (memory is
  /// first-touched).
  std::optional<unsigned> numa_node;
  CpuPlacementMode placement = CpuPlacementMode::kStrict;
  /// Managed domains: how long the workers keep spinning for the next
  /// parallel loop after one ends, before they may sleep (Note [Worker
  /// spin] in managed_executor.cpp); zero: they leave at once. At most
  /// kMaxWorkerSpin. External domains ignore it (their executor decides).
  std::chrono::microseconds worker_spin = kDefaultWorkerSpin;

  static constexpr std::chrono::microseconds kDefaultWorkerSpin{10'000};
  static constexpr std::chrono::microseconds kMaxWorkerSpin{1'000'000};
};

/// How default_domain_specs() splits the allowed CPUs.
enum class CpuDomainLayout : std::uint8_t {
  kPerNumaNode,      ///< one domain per node with allowed CPUs, plus one for CPUs outside every node
  kWholeAllowedSet,  ///< a single domain over every allowed CPU
};

/// The managed default: domains with ids 1, 2, ... in node order, budgets of
/// one thread per CPU, strict placement. Memory-only nodes get no domain.
std::vector<CpuDomainSpec> default_domain_specs(const CpuTopology& topology,
                                                CpuDomainLayout layout = CpuDomainLayout::kPerNumaNode);

/// Static checks shared by managed and external domains (stage
/// kConfiguration): at least one spec; ids non-zero (kInvalidArgument) and
/// unique (kAlreadyExists); CPU sets non-empty and pairwise disjoint
/// (kInvalidArgument naming the shared CPUs); budgets in [0, cpus.count()]
/// (kInvalidArgument).
Status validate_static_specs(std::span<const CpuDomainSpec> specs);

/// validate_static_specs plus the checks against the process's topology that
/// managed domains need before their workers start: every CPU allowed
/// (kPlacementError naming the CPUs outside), an explicit NUMA node present
/// (kInvalidArgument). Returns the specs with budgets and inferred nodes
/// filled in.
Result<std::vector<CpuDomainSpec>> resolve_specs(const CpuTopology& topology, std::span<const CpuDomainSpec> specs);

}  // namespace tenferro::cpu
