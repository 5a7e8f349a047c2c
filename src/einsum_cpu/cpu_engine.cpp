// CpuEinsumEngine and the einsum extension module (Note [Einsum extension
// engine] in cpu_engine.h).
#include "tenferro/einsum_cpu/cpu_engine.h"

#include <utility>

#include "tenferro/base/abbreviate.h"
#include "tenferro/cpu_engine/engine.h"

namespace tenferro::einsum {

using program::SpecializationAxis;

CpuEinsumEngine::CpuEinsumEngine(std::shared_ptr<CpuEinsumExecutor> executor,
                                 std::shared_ptr<const cpu::ParallelContext> fallback)
    : executor_(std::move(executor)), fallback_(std::move(fallback)) {}

Result<runtime::PrepareCapability> CpuEinsumEngine::prepare(const runtime::ExtensionSignature& sig) const {
  if (sig.op == nullptr || sig.op->family_id() != kEinsumFamilyId) {
    return runtime::PrepareCapability::unsupported("cpu.native_einsum runs only tenferro.einsum operations");
  }
  const auto& op = static_cast<const EinsumOp&>(*sig.op);
  if (!sig.granted.has(SpecializationAxis::kConcreteDims)) {
    return runtime::PrepareCapability::needs_specialization(sig.granted.with(SpecializationAxis::kConcreteDims));
  }
  if (sig.operands.size() != static_cast<std::size_t>(op.num_operands()) || sig.operands.empty()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "einsum \"{}\" has {} operands; the signature lists {}", abbreviate(op.canonical_subscripts()),
                      op.num_operands(), sig.operands.size());
  }
  SmallVector<IntArrayRef, 8> shapes;
  for (const runtime::OperandSignature& o : sig.operands) {
    if (o.dtype != sig.operands[0].dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kPrepare,
                        "einsum \"{}\": expected one dtype for all operands, found {} and {}",
                        abbreviate(op.canonical_subscripts()), sig.operands[0].dtype, o.dtype);
    }
    shapes.push_back(IntArrayRef(o.shape));
  }
  const Determinism determinism =
      sig.determinism == runtime::Determinism::kReproducible ? Determinism::kReproducible : Determinism::kFast;
  Result<std::shared_ptr<const ExecutionPlan>> plan = executor_->prepare(
      op, std::span<const IntArrayRef>(shapes.data(), shapes.size()), sig.operands[0].dtype, determinism);
  if (!plan.ok()) {
    if (plan.status().code() == ErrorCode::kUnsupported) {
      return runtime::PrepareCapability::unsupported(std::string(plan.status().message()));
    }
    return plan.status();
  }
  runtime::PreparedKernel kernel;
  kernel.work = (*plan)->tree().cost().flops;
  kernel.plan = std::move(plan).value();
  kernel.reproducible = true;
  return runtime::PrepareCapability::prepared(std::move(kernel));
}

Status CpuEinsumEngine::run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const {
  const auto* plan = static_cast<const ExecutionPlan*>(request.plan);
  if (plan == nullptr || request.outputs.size() != 1) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.native_einsum: expected the plan from prepare() and one output, found {} plan and {} "
                      "outputs",
                      plan == nullptr ? "no" : "a", request.outputs.size());
  }
  const cpu::ParallelContext* parallel = cpu::parallel_context_of(context);
  if (parallel == nullptr && context.get<runtime::NoExecutionContext>() != nullptr) {
    parallel = fallback_ != nullptr ? fallback_.get() : &sequential_;
  }
  if (parallel == nullptr) {
    return make_error(ErrorCode::kContractViolation, ErrorStage::kNone,
                      "cpu.native_einsum: expected a CPU engine context (cpu::CpuEngineContext or "
                      "cpu::CpuExecutionContext) or runtime::NoExecutionContext, found another execution context "
                      "type");
  }
  return executor_->execute(*plan, request.inputs, request.outputs[0], *parallel);
}

runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuEinsumExecutor> executor,
                                              std::shared_ptr<const cpu::ParallelContext> fallback) {
  runtime::ExtensionModule module;
  module.name = "tenferro.einsum.cpu";
  auto caches = std::make_shared<runtime::CacheOwnerOf<CpuEinsumExecutor>>(executor);
  module.registrations.push_back(runtime::ExtensionRegistration{
      std::string(kEinsumFamilyId), engine, std::make_shared<CpuEinsumEngine>(std::move(executor), std::move(fallback)),
      std::move(caches)});
  return module;
}

}  // namespace tenferro::einsum
