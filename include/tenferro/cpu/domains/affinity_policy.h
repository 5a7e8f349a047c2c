// The CPU affinity resolver shared by eager dispatch and prepared-graph
// input binding (seed "Placement-bound eager API"): which CPU domain runs an
// operation, given its inputs' memory affinities.
//
// Note [Choosing the execution domain]
//  1. An explicit placement (runtime.on(domain), an execution-request
//     constraint) wins, whatever the inputs and the policy.
//  2. Otherwise inputs vote with their logical bytes for the CPU domain in
//     their MemoryAffinity; inputs with no affinity do not vote.
//     kDominantInputBytes picks the domain with the most bytes, ties broken
//     by the smaller CpuDomainId; kRequireSingleDomain rejects inputs from
//     more than one domain (kPlacementError) - an opt-in diagnostic.
//  3. With no vote, the runtime's default domain runs it.
// NUMA domains share one address space, so inputs are never migrated: the
// chosen domain reads remote inputs in place and places outputs and scratch
// in its own pool. A GPU-resident input is not a CPU question: it is a
// kPlacementError (an explicit transfer is required).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/storage.h"

namespace tenferro::cpu {

enum class CpuAffinityPolicy : std::uint8_t { kDominantInputBytes, kRequireSingleDomain };
std::string_view to_string(CpuAffinityPolicy policy) noexcept;

/// One input's vote: where its memory lives and how many logical bytes it has.
struct CpuAffinityInput {
  MemoryAffinity affinity;
  std::uint64_t bytes = 0;
};

/// Why a domain was chosen.
enum class CpuAffinityReason : std::uint8_t {
  kExplicitPlacement,   ///< an explicit placement won
  kDominantInputBytes,  ///< the most input bytes
  kTieBrokenById,       ///< the most input bytes, shared with another domain: smaller id
  kSingleInputDomain,   ///< all voting inputs were in this domain
  kRuntimeDefault,      ///< no input has a CPU affinity
};
std::string_view to_string(CpuAffinityReason reason) noexcept;

/// The resolver's answer. Trivially copyable; explain() formats it.
struct CpuAffinityDecision {
  CpuDomainId domain;
  CpuAffinityReason reason = CpuAffinityReason::kRuntimeDefault;
  /// Input bytes in the chosen domain, and in all voting inputs.
  std::uint64_t domain_bytes = 0;
  std::uint64_t voting_bytes = 0;
  /// Distinct domains among the voting inputs.
  int voting_domains = 0;

  /// e.g. "CPU domain 2: most input bytes (4096 of 4160 bytes from 2 domains)".
  std::string explain() const;
};

/// Resolves the execution domain (Note [Choosing the execution domain]).
/// No heap allocation on success for up to 8 distinct input domains.
/// Errors (stage kPrepare): kPlacementError for a device-resident input or,
/// under kRequireSingleDomain, inputs from several domains; kInvalidArgument
/// when no explicit domain and no vote leave an invalid runtime default.
Result<CpuAffinityDecision> resolve_cpu_affinity(std::span<const CpuAffinityInput> inputs,
                                                 std::optional<CpuDomainId> explicit_domain, CpuAffinityPolicy policy,
                                                 CpuDomainId runtime_default);

}  // namespace tenferro::cpu
