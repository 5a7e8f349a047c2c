// The CPU affinity resolver (Note [Choosing the execution domain]).
#include "tenferro/cpu/domains/affinity_policy.h"

#include <algorithm>
#include <utility>

#include "tenferro/base/small_vector.h"

namespace tenferro::cpu {

std::string_view to_string(CpuAffinityPolicy policy) noexcept {
  return policy == CpuAffinityPolicy::kDominantInputBytes ? "dominant_input_bytes" : "require_single_domain";
}

std::string_view to_string(CpuAffinityReason reason) noexcept {
  switch (reason) {
    case CpuAffinityReason::kExplicitPlacement:
      return "explicit placement";
    case CpuAffinityReason::kDominantInputBytes:
      return "most input bytes";
    case CpuAffinityReason::kTieBrokenById:
      return "most input bytes, tie broken by the smaller domain id";
    case CpuAffinityReason::kSingleInputDomain:
      return "every input with a CPU affinity is there";
    case CpuAffinityReason::kRuntimeDefault:
      break;
  }
  return "runtime default (no input has a CPU affinity)";
}

std::string CpuAffinityDecision::explain() const {
  if (reason == CpuAffinityReason::kExplicitPlacement || reason == CpuAffinityReason::kRuntimeDefault) {
    return fmt::format("CPU domain {}: {}", domain, to_string(reason));
  }
  return fmt::format("CPU domain {}: {} ({} of {} input bytes from {} domain{})", domain, to_string(reason),
                     domain_bytes, voting_bytes, voting_domains, voting_domains == 1 ? "" : "s");
}

Result<CpuAffinityDecision> resolve_cpu_affinity(std::span<const CpuAffinityInput> inputs,
                                                 std::optional<CpuDomainId> explicit_domain, CpuAffinityPolicy policy,
                                                 CpuDomainId runtime_default) {
  // Tally per domain; a handful of domains, so a linear scan beats a map.
  SmallVector<std::pair<CpuDomainId, std::uint64_t>, 8> tally;
  std::uint64_t voting_bytes = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const MemoryAffinity affinity = inputs[i].affinity;
    if (affinity.has_device()) {
      return make_error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                        "input #{}: expected host memory for a CPU operation, found memory on device {} (transfer "
                        "it explicitly)",
                        i, affinity.device_id());
    }
    if (!affinity.has_cpu_domain()) continue;
    voting_bytes += inputs[i].bytes;
    auto* entry =
        std::find_if(tally.begin(), tally.end(), [&](const auto& e) { return e.first == affinity.cpu_domain_id(); });
    if (entry == tally.end()) {
      tally.emplace_back(affinity.cpu_domain_id(), inputs[i].bytes);
    } else {
      entry->second += inputs[i].bytes;
    }
  }

  CpuAffinityDecision decision;
  decision.voting_bytes = voting_bytes;
  decision.voting_domains = static_cast<int>(tally.size());
  if (explicit_domain.has_value()) {
    decision.domain = *explicit_domain;
    decision.reason = CpuAffinityReason::kExplicitPlacement;
    for (const auto& [id, bytes] : tally) {
      if (id == decision.domain) decision.domain_bytes = bytes;
    }
    return decision;
  }
  if (tally.empty()) {
    if (!runtime_default.valid()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                        "CPU affinity: expected a runtime default domain when no input has a CPU affinity, found none");
    }
    decision.domain = runtime_default;
    decision.reason = CpuAffinityReason::kRuntimeDefault;
    return decision;
  }
  if (policy == CpuAffinityPolicy::kRequireSingleDomain && tally.size() > 1) {
    std::string found;
    for (const auto& [id, bytes] : tally) found += fmt::format("{}{} ({} bytes)", found.empty() ? "" : ", ", id, bytes);
    return make_error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                      "CPU affinity policy require_single_domain: expected inputs in one CPU domain, found domains {}",
                      found);
  }
  std::uint64_t most = 0;
  for (const auto& e : tally) most = std::max(most, e.second);
  const std::pair<CpuDomainId, std::uint64_t>* best = nullptr;
  int with_most = 0;
  for (const auto& e : tally) {
    if (e.second != most) continue;
    ++with_most;
    if (best == nullptr || e.first < best->first) best = &e;
  }
  const bool tied = with_most > 1;
  decision.domain = best->first;
  decision.domain_bytes = best->second;
  decision.reason = tally.size() == 1 ? CpuAffinityReason::kSingleInputDomain
                    : tied            ? CpuAffinityReason::kTieBrokenById
                                      : CpuAffinityReason::kDominantInputBytes;
  return decision;
}

}  // namespace tenferro::cpu
