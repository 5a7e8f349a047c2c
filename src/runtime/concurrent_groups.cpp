// Concurrent groups: independent neighbours of a schedule segment that an
// event domain may run at the same time.
//
// Note [Concurrent groups]
// A program's schedule is a sequence, but many programs hold independent
// operations side by side: the reverse pass of a chain computes, per step,
// the cotangent of the previous value and the gradient of the step's
// weight, both from the same incoming cotangent. On a domain with several
// workers each such operation would otherwise run alone, split over all of them
// (ParallelMode::kInner). Two operations of similar size run faster side by
// side, each on one worker at full single-thread efficiency, than one after the
// other with each split in two: a split costs fork-joins and partition edges,
// and small problems scale poorly.
//
// A group is a run of consecutive nodes of one segment (same event domain
// and placement, no view in between) such that
//  - no member depends on another (data and effect dependencies),
//  - every member is an operation or extension node with no leased
//    resources and a work estimate (PreparedKernel::work) of at least
//    kMinWork flops,
//  - the largest estimate is at most kMaxImbalance times the smallest
//    (kMaxLargeImbalance once the largest reaches kLargeWork), so no member
//    runs alone on one worker for long while the others idle. A pair with
//    ratio r beats splitting each member over two workers only while r is
//    below 1 / (s - 1), s being the two-thread speedup of one member
//    (Note [Single-block parallel GEMM]); the two limits follow that bound
//    for the measured speedups (docs/performance_notes.md, "Runtime:
//    concurrent groups"),
//  - it has at most kMaxConcurrentGroup members.
// Groups are formed greedily in schedule order, before the buffer plan,
// which then treats each group as one step: what a member frees is reused
// only after the group's last member, and a member writes in place only
// over an operand no other member reads. Members therefore share no buffer
// and no reuse edge points inside a group (the prepare tests check both).
//
// Estimates come from the provider's PreparedKernel::work (the einsum
// engine gives its contraction tree's flops); for a core dot_general the
// runtime computes 2 x result elements x contracted extent itself. Other
// core ops have none: they are memory-bound and fast to split.
//
// The scheduler hands a group to EventDomainRun::enqueue_group. The CPU
// immediate run, inside a segment, calls EngineExecutor::run_concurrently;
// the CPU engine runs the members on the domain's workers, each with a
// sequential context (outer parallelism at the graph level), and a member
// left over after whole batches of the thread count with the inner
// context. With one worker, or on an engine without run_concurrently, the
// members run one after the other exactly as ungrouped nodes do.
#include <algorithm>

#include "runtime/scheduled_graph.h"

namespace tenferro::runtime::internal {
namespace {

// Below this a member is too short to pay for a fork-join (its cost:
// `tenferro bench domains`, parallel_for_2).
constexpr double kMinWork = 65536.0;
constexpr double kMaxImbalance = 1.5;
constexpr double kLargeWork = 16777216.0;  // 2^24 flops: between a 128^3 and a 256^3 dgemm
constexpr double kMaxLargeImbalance = 1.2;

bool groupable(const NodeRecord& n) noexcept {
  return (n.kind == ScheduledNodeKind::kOperation || n.kind == ScheduledNodeKind::kExtension) && n.resources.empty() &&
         n.work >= kMinWork;
}

}  // namespace

void form_concurrent_groups(PreparedState& st) {
  const std::uint32_t count = static_cast<std::uint32_t>(st.nodes.size());
  for (std::uint32_t i = 0; i < count; ++i) st.nodes[i].group_end = i + 1;
  std::uint32_t i = 0;
  while (i < count) {
    const NodeRecord& first = st.nodes[i];
    if (!groupable(first)) {
      ++i;
      continue;
    }
    double lo = first.work;
    double hi = first.work;
    std::uint32_t j = i + 1;
    while (j < first.segment_end && j - i < kMaxConcurrentGroup) {
      const NodeRecord& m = st.nodes[j];
      if (!groupable(m) || m.domain != first.domain || !(m.placement == first.placement)) break;
      if (std::any_of(m.deps.begin(), m.deps.end(), [&](std::uint32_t d) { return d >= i; })) break;
      const double new_lo = std::min(lo, m.work);
      const double new_hi = std::max(hi, m.work);
      if (new_hi > (new_hi >= kLargeWork ? kMaxLargeImbalance : kMaxImbalance) * new_lo) break;
      lo = new_lo;
      hi = new_hi;
      ++j;
    }
    if (j - i >= 2) st.nodes[i].group_end = j;
    i = j;
  }
}

}  // namespace tenferro::runtime::internal
