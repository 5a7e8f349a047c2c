// Fuzzes the einsum instance-file loader (parse_benchmark_instance) and what
// `tenferro einsum FILE` does next with an accepted file: bind its
// format_string to its shapes, translate its reference paths, and plan
// along them. Every malformed file must come back as a typed error.
#include <cstdint>
#include <string_view>

#include "tenferro/einsum/benchmark_instance.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/planner.h"

namespace einsum = tenferro::einsum;

namespace {

void plan_along(const einsum::Network& net, const std::optional<einsum::ReferencePath>& path) {
  if (!path) return;
  tenferro::Result<einsum::ContractionOrder> order =
      einsum::ContractionOrder::from_opt_einsum_path(net.num_operands(), path->pairs);
  if (!order.ok()) return;
  einsum::PlanningPolicy policy;
  policy.planner = einsum::PlannerKind::kExplicitPath;
  policy.path = std::move(*order);
  (void)einsum::plan(net, policy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tenferro::Result<einsum::BenchmarkInstance> instance = einsum::parse_benchmark_instance(text);
  if (!instance.ok()) return 0;
  const std::vector<tenferro::IntArrayRef> shapes = instance->shape_refs();
  tenferro::Result<einsum::Network> net = einsum::Network::bind(instance->format_string, shapes, instance->dtype);
  if (!net.ok()) return 0;
  plan_along(*net, instance->opt_flops);
  plan_along(*net, instance->opt_size);
  // Greedy planning is polynomial in the operand count, so any accepted
  // network is cheap to plan.
  einsum::PlanningPolicy greedy;
  greedy.planner = einsum::PlannerKind::kGreedy;
  (void)einsum::plan(*net, greedy);
  return 0;
}
