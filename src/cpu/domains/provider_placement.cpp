// Provider validation against a domain (Note [Thread count and placement]).
#include "tenferro/cpu/domains/provider_placement.h"

#include "tenferro/cpu/domains/cpu_resource_domain.h"

namespace tenferro::cpu {
namespace {

std::string_view describe(ThreadCountControl control) {
  switch (control) {
    case ThreadCountControl::kSequential:
      return "sequential";
    case ThreadCountControl::kPerCall:
      return "per-call thread count";
    case ThreadCountControl::kBinaryClampToOne:
      return "clamps to one thread";
    case ThreadCountControl::kGlobalOrUncontrolled:
      break;
  }
  return "process-global or uncontrolled thread count";
}

std::string provider_name(const ProviderCapability& capability) {
  return capability.detail.empty() ? std::string("provider") : fmt::format("provider '{}'", capability.detail);
}

}  // namespace

DomainPlacementFacts placement_facts(const CpuResourceDomain& domain) {
  return DomainPlacementFacts{domain.id(), domain.cpus(), domain.thread_budget(), domain.placement(),
                              domain.covers_allowed_cpus()};
}

Result<ProviderPlacement> validate_provider_placement(const DomainPlacementFacts& domain,
                                                      const ProviderCapability& capability, int requested_threads,
                                                      ProviderThreadingPolicy policy) {
  if (requested_threads < 1 || requested_threads > domain.thread_budget) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "CPU domain {}: expected a provider thread budget in [1, {}], found {}", domain.id,
                      domain.thread_budget, requested_threads);
  }
  const std::string name = provider_name(capability);
  ProviderPlacement out;

  // Thread-count axis.
  switch (capability.thread_count) {
    case ThreadCountControl::kSequential:
    case ThreadCountControl::kBinaryClampToOne:
      out.threads = 1;
      break;
    case ThreadCountControl::kPerCall:
      out.threads = requested_threads;
      break;
    case ThreadCountControl::kGlobalOrUncontrolled:
      if (policy != ProviderThreadingPolicy::kProviderDefaultExclusive) {
        return make_error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                          "CPU domain {}: {} has a {}, so it cannot honour a thread budget of {} (expected a "
                          "sequential, clamp-to-one or per-call provider in a strict bundle; use the "
                          "ProviderDefaultExclusive compatibility policy to run it under a process-wide permit)",
                          domain.id, name, describe(capability.thread_count), requested_threads);
      }
      out.threads = requested_threads;
      out.runs_inline = false;
      out.requires_process_exclusive = true;
      out.placement_exact = domain.covers_allowed_cpus;
      out.explanation =
          fmt::format("{}: {}; runs with its own threading under the process-wide exclusive permit; placement {}", name,
                      describe(capability.thread_count),
                      domain.covers_allowed_cpus ? "within the whole allowed CPU set" : "not confined to the domain");
      return out;
  }

  // Placement axis: only a call that uses more than one thread can leave the
  // pinned calling thread.
  if (out.threads == 1 || capability.placement == PlacementControl::kCallingThread) {
    out.threads = capability.placement == PlacementControl::kCallingThread ? 1 : out.threads;
    out.explanation = fmt::format("{}: {}; runs inline on the pinned domain thread (1 thread, CPUs {})", name,
                                  describe(capability.thread_count), domain.cpus);
    return out;
  }
  out.runs_inline = false;
  if (capability.placement == PlacementControl::kEngineWorkers) {
    out.explanation =
        fmt::format("{}: {} threads on the domain's pinned workers (CPUs {})", name, out.threads, domain.cpus);
    return out;
  }
  // External workers with a budget above one.
  if (domain.covers_allowed_cpus) {
    out.explanation = fmt::format("{}: {} threads on its own workers; the domain is the whole allowed CPU set {}", name,
                                  out.threads, domain.cpus);
    return out;
  }
  if (domain.placement == CpuPlacementMode::kAdvisory) {
    out.placement_exact = false;
    out.explanation = fmt::format(
        "{}: {} threads on its own workers; placement is advisory for domain {}: those threads are not confined "
        "to CPUs {}",
        name, out.threads, domain.id, domain.cpus);
    return out;
  }
  return make_error(ErrorCode::kPlacementError, ErrorStage::kPrepare,
                    "CPU domain {} (strict placement on CPUs {}): {} would run {} threads on its own workers, which "
                    "are not confined to the domain (expected a thread budget of 1, a domain covering every allowed "
                    "CPU, or advisory placement)",
                    domain.id, domain.cpus, name, out.threads);
}

}  // namespace tenferro::cpu
