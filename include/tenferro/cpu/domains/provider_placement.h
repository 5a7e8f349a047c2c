// Enforcing the two CPU capability axes (capabilities.h) when a provider is
// bound to a domain, at construction or prepare time, never per call.
//
// Note [Thread count and placement]
// A provider reports, once, whether it can enforce a thread budget per call
// (ThreadCountControl) and where its threads run (PlacementControl); see
// capabilities.h. Given a domain and a requested budget:
//  - thread count: a sequential or clamp-to-one provider uses one thread
//    whatever the budget (a budget is an upper bound); a per-call provider
//    uses the budget; an uncontrolled provider (parallel OpenBLAS, whose
//    count is process-global) fails every strict bundle and is usable only
//    under the process-wide ProviderDefaultExclusive compatibility policy;
//  - placement, when the call uses more than one thread: engine-supplied
//    workers are the domain's pinned workers (exact); a provider's own
//    threads are not confined to the domain, which is a kPlacementError for
//    a strict domain unless the domain is the process's whole allowed CPU
//    set (nothing to escape to) or its placement is advisory (allowed, and
//    the decision says placement is not enforced);
//  - one thread: the call runs inline on the calling domain thread, which
//    is pinned, so both axes hold.
#pragma once

#include <cstdint>
#include <string>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/domains/cpu_set.h"
#include "tenferro/cpu/domains/domain_spec.h"

namespace tenferro::cpu {

class CpuResourceDomain;

/// How providers without per-call thread control may be used.
enum class ProviderThreadingPolicy : std::uint8_t {
  kStrict,                    ///< every provider must honour the budget: uncontrolled ones are rejected
  kProviderDefaultExclusive,  ///< legacy compatibility: uncontrolled providers run with their own threading
                              ///< while holding a process-wide exclusive permit
};

/// The facts of a domain that provider validation needs.
struct DomainPlacementFacts {
  CpuDomainId id;
  CpuSet cpus;
  int thread_budget = 1;
  CpuPlacementMode placement = CpuPlacementMode::kStrict;
  /// cpus is every CPU the process may use.
  bool covers_allowed_cpus = false;
};
DomainPlacementFacts placement_facts(const CpuResourceDomain& domain);

/// The accepted binding of a provider to a domain.
struct ProviderPlacement {
  /// Threads a call may use: 1 for sequential and clamp-to-one providers,
  /// the budget for per-call providers; for an uncontrolled provider under
  /// the exclusive policy, the budget it is asked for (it may use others).
  int threads = 1;
  /// The call runs on the calling, pinned domain thread.
  bool runs_inline = true;
  /// Every thread of the call is on the domain's CPUs.
  bool placement_exact = true;
  /// The call must hold the process-wide exclusive provider permit.
  bool requires_process_exclusive = false;
  /// One line for explain()/diagnostics.
  std::string explanation;
};

/// Validates `capability` for `domain` with `requested_threads` (>= 1, at
/// most the domain's budget). Errors (stage kPrepare): kInvalidArgument for
/// a budget outside [1, domain budget]; kPlacementError for an uncontrolled
/// provider under kStrict, or external workers with more than one thread in
/// a strict domain smaller than the allowed CPUs. Pure; thread-safe.
Result<ProviderPlacement> validate_provider_placement(
    const DomainPlacementFacts& domain, const ProviderCapability& capability, int requested_threads,
    ProviderThreadingPolicy policy = ProviderThreadingPolicy::kStrict);

}  // namespace tenferro::cpu
