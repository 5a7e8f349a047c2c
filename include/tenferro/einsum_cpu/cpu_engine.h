// The runtime side of the native CPU einsum engine: CpuEinsumEngine, the
// runtime::ExtensionEngine for family "tenferro.einsum" on a CPU engine, and
// cpu_extension_module(), the ExtensionModule any runtime can install.
//
// Note [Einsum extension engine]
// prepare() answers NeedsSpecialization(concrete dims) for a polymorphic
// signature (the contraction path depends on extents), Unsupported for a
// dtype the composite cannot contract, and otherwise looks the concrete
// signature up in the executor's plan cache (planning on a miss), so
// concrete-shape planning completes before any executor entry or admission.
// The PreparedKernel carries the ExecutionPlan as its ProviderPlan; the
// whole N-ary einsum is one prepared operation, eager or in a graph. Its
// workspace comes from the executor's pool (scratch_bytes stays 0: the
// pool keeps warm buffers across runs, which runtime scratch cannot do for
// eager calls). run() takes its parallelism from the engine's context
// (cpu::parallel_context_of: the CPU engine of cpu::register_cpu_engine, or
// an engine entering one CPU domain), or the module's fallback context under
// runtime::NoExecutionContext (reference and test engines); any other
// context type is a kContractViolation.
//
// Usage (the CPU engine with the native einsum on it):
//   runtime::RuntimeBuilder builder;
//   TENFERRO_TRY(cpu::register_cpu_engine(builder, cpu_options));
//   builder.add_extension_module(einsum::cpu_extension_module(cpu_options.id, executor));
#pragma once

#include <memory>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/extension.h"

namespace tenferro::einsum {

/// See Note [Einsum extension engine]. Thread-safe.
class CpuEinsumEngine final : public runtime::ExtensionEngine {
 public:
  /// `fallback` (optional; sequential when null) is the parallelism used
  /// when the engine passes a runtime::NoExecutionContext. Both are retained.
  explicit CpuEinsumEngine(std::shared_ptr<CpuEinsumExecutor> executor,
                           std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);

  std::string_view name() const noexcept override { return "cpu.native_einsum"; }
  bool reproducible() const noexcept override { return true; }
  Result<runtime::PrepareCapability> prepare(const runtime::ExtensionSignature& signature) const override;
  Status run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const override;

  CpuEinsumExecutor& executor() const noexcept { return *executor_; }

 private:
  std::shared_ptr<CpuEinsumExecutor> executor_;
  std::shared_ptr<const cpu::ParallelContext> fallback_;
  cpu::SequentialContext sequential_;
};

/// The einsum extension module for engine `engine`: one registration of
/// family kEinsumFamilyId backed by `executor` (retained).
runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuEinsumExecutor> executor,
                                              std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);

}  // namespace tenferro::einsum
