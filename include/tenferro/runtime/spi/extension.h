// ExtensionEngine: the runtime side of an extension family on one engine
// (docs/engines.md). An operation library implements it for each engine it
// supports and installs it with an ExtensionModule (config.h) under (family
// id, engine). The family id string is used at registration and prepare
// only: prepared nodes and eager ExtensionSlots keep the resolved
// ExtensionEngine pointer.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::runtime {

/// Value-free description of one extension operation for prepare().
/// Borrowed.
struct ExtensionSignature {
  const program::ExtensionOp* op = nullptr;
  std::span<const OperandSignature> operands;
  std::span<const OperandSignature> results;
  program::SpecializationRequirements granted;
  Determinism determinism = Determinism::kFast;
  ResolvedPlacement placement;
};

/// One execution of an extension operation: borrowed inputs, runtime-
/// allocated row-major outputs (one per result). Same contract as
/// OperationRequest (Note [Provider contract] in providers.h).
struct ExtensionRequest {
  const program::ExtensionOp* op = nullptr;
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  const ProviderPlan* plan = nullptr;
  std::span<std::byte> scratch;
};

/// A native engine for one extension family on one engine. Thread-safe.
/// prepare() answers Prepared / NeedsSpecialization / Unsupported exactly
/// like a core provider (only Unsupported lets resolution try core lowering
/// or the fallback engine; an error stops it). The answer must depend only
/// on the signature: prepared programs and eager contexts remember it per
/// signature and do not ask again. The runtime never downcasts
/// the payload: the engine reads its own family's payload type.
class ExtensionEngine {
 public:
  virtual ~ExtensionEngine() = default;
  virtual std::string_view name() const noexcept = 0;
  /// True when every algorithm is reproducible (eager check under
  /// Determinism::kReproducible).
  virtual bool reproducible() const noexcept { return false; }
  /// As CoreFamilyRuntime::context_type() (checked against the executor of
  /// the engine it is registered for).
  virtual ExecutionContextTypeId context_type() const noexcept { return {}; }
  virtual Result<PrepareCapability> prepare(const ExtensionSignature& signature) const = 0;
  virtual Status run(const ExtensionRequest& request, ErasedExecutionContext context) const = 0;
};

}  // namespace tenferro::runtime
