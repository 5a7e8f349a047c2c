// Fuzzes the einsum planners and the native CPU engine on small random
// networks built from the input bytes (up to 5 operands of rank <= 3 over
// <= 6 labels of extent <= 3, repeated labels and broadcast-free). The
// chosen planner's tree, executed step by step, and the engine's planned
// contraction must both equal a brute-force einsum that sums over every label
// assignment. Planning and binding errors are typed results, never crashes.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "einsum/einsum_test_support.h"
#include "fuzz_input.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/einsum_cpu/cpu_executor.h"

namespace tenferro::einsum {
namespace {

using fuzz::FuzzInput;
using fuzz::property_violated;
using test_support::Dense;

struct FuzzNetwork {
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};

FuzzNetwork network_from(FuzzInput& in) {
  FuzzNetwork net;
  const std::uint32_t num_labels = 1 + in.below(6);
  std::vector<std::int64_t> extent(num_labels);
  for (std::int64_t& e : extent) e = in.in_range(1, 3);
  std::vector<bool> used(num_labels, false);
  const std::uint32_t operands = 1 + in.below(5);
  for (std::uint32_t i = 0; i < operands; ++i) {
    if (i > 0) net.subscripts += ',';
    std::vector<std::int64_t> shape;
    const std::uint32_t rank = in.below(4);
    for (std::uint32_t a = 0; a < rank; ++a) {
      const std::uint32_t label = in.below(num_labels);
      net.subscripts += static_cast<char>('a' + label);
      shape.push_back(extent[label]);
      used[label] = true;
    }
    net.shapes.push_back(std::move(shape));
  }
  net.subscripts += "->";
  std::string output;
  for (std::uint32_t l = 0; l < num_labels; ++l)
    if (used[l] && in.flag()) output += static_cast<char>('a' + l);
  if (in.flag()) std::reverse(output.begin(), output.end());
  net.subscripts += output;
  return net;
}

PlanningPolicy policy_from(FuzzInput& in) {
  constexpr PlannerKind kPlanners[] = {PlannerKind::kAuto, PlannerKind::kGreedy, PlannerKind::kOptimal,
                                       PlannerKind::kTreeSA, PlannerKind::kLeftToRight};
  PlanningPolicy policy;
  policy.planner = kPlanners[in.below(std::size(kPlanners))];
  if (policy.planner == PlannerKind::kTreeSA) {
    // A few sweeps: the search itself is what is fuzzed, not its quality.
    TreeSAOptions treesa;
    treesa.chains = 1 + static_cast<std::int32_t>(in.below(2));
    treesa.sweeps_per_beta = 1;
    treesa.beta_step = 5.0;
    treesa.greedy_trials = 1;
    treesa.time_budget_seconds = 0.05;
    policy.treesa = treesa;
  }
  return policy;
}

void check_close(const Dense& got, const Dense& want, const char* what, const std::string& subscripts) {
  if (got.shape != want.shape) property_violated(what, subscripts + ": shape differs from brute force");
  for (std::size_t k = 0; k < want.data.size(); ++k)
    if (!(std::abs(got.data[k] - want.data[k]) <= 1e-9 * (1.0 + std::abs(want.data[k]))))
      property_violated(what, subscripts + ": value differs from brute force");
}

void run(FuzzInput& in) {
  const FuzzNetwork spec = network_from(in);
  const PlanningPolicy policy = policy_from(in);
  const std::uint64_t seed = in.byte();
  const std::vector<IntArrayRef> refs = test_support::refs(spec.shapes);
  Result<Network> net = Network::bind(spec.subscripts, refs);
  if (!net.ok()) property_violated("a well-formed network does not bind", spec.subscripts);
  const std::vector<Dense> operands = test_support::random_operands(spec.shapes, seed);
  const Dense want = test_support::brute_force_einsum(*net, operands);

  Result<ContractionTree> tree = plan(*net, policy);
  if (!tree.ok()) property_violated("planning a small network failed", tree.status().to_string());
  check_close(test_support::execute_tree(*tree, operands), want, "planned tree", spec.subscripts);

  Result<std::shared_ptr<cpu::NativeGemmProvider>> gemm = cpu::NativeGemmProvider::create();
  if (!gemm.ok()) property_violated("no native GEMM", gemm.status().to_string());
  Result<std::shared_ptr<CpuEinsumExecutor>> executor =
      CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(*gemm));
  Result<std::shared_ptr<const EinsumOp>> op = EinsumOp::create(spec.subscripts, policy);
  if (!executor.ok() || !op.ok()) property_violated("engine or op creation failed", spec.subscripts);
  std::vector<Tensor> inputs;
  for (const Dense& d : operands)
    inputs.push_back(*Tensor::from_values<double>(std::span<const double>(d.data), IntArrayRef(d.shape)));
  const cpu::SequentialContext sequential;
  Result<Tensor> got = (*executor)->einsum(**op, inputs, sequential);
  if (!got.ok()) property_violated("engine einsum failed", got.status().to_string());
  Dense engine{std::vector<std::int64_t>(got->shape().begin(), got->shape().end()), *got->to_vector<double>()};
  check_close(engine, want, "engine", spec.subscripts);
}

}  // namespace
}  // namespace tenferro::einsum

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tenferro::fuzz::FuzzInput in(data, size);
  tenferro::einsum::run(in);
  return 0;
}
