// The null engine: a complete, executable engine registration whose every
// capability answers Unsupported at prepare time. It is the skeleton a new
// backend starts from (copy null_engine.cpp, then fill one family at a
// time: each filled slot is immediately reachable through prepare/run and
// explain(), the rest keep answering Unsupported), and a test double for
// resolution paths that must cope with an engine that supports nothing.
//
// What a backend replaces, in order (docs/engines.md):
//   1. metadata: id, name, hardware class, storage domain, domains;
//   2. executor + event driver: how work enters the device and completes
//      (the null engine runs inline on the calling thread, with immediate
//      completion, like a host reference engine);
//   3. allocator: storage in the engine's storage domain (host here);
//   4. capability slots, one family at a time (NullFamily below answers
//      every signature with PrepareCapability::unsupported(reason));
//   5. extension engines for the families it runs natively (einsum, linalg,
//      fft): an ExtensionEngine installed with an ExtensionModule.
#pragma once

#include <string>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/extension.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::runtime {

/// A core family provider that supports nothing: prepare() answers
/// Unsupported naming the engine and the family; run() is never reached
/// through the runtime and reports kFailedPrecondition if called directly.
template <class Family>
class NullFamily final : public Family {
 public:
  NullFamily(std::string engine_name, std::string_view family)
      : name_(std::move(engine_name) + "." + std::string(family)) {}
  std::string_view name() const noexcept override { return name_; }
  Result<PrepareCapability> prepare(const OperationSignature&) const override {
    return PrepareCapability::unsupported(name_ + ": not implemented by this engine");
  }
  Status run(const OperationRequest&, ErasedExecutionContext) const override {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue,
                      "{}: run() called, but prepare() never answers Prepared", name_);
  }

 private:
  std::string name_;
};

/// The null layout provider (copies between layouts): Unsupported.
class NullLayout final : public LayoutRuntime {
 public:
  explicit NullLayout(std::string engine_name) : name_(std::move(engine_name) + ".layout") {}
  std::string_view name() const noexcept override { return name_; }
  Result<PrepareCapability> prepare_copy(const OperandSignature&, const OperandSignature&,
                                         ResolvedPlacement) const override {
    return PrepareCapability::unsupported(name_ + ": not implemented by this engine");
  }
  Status copy(const TensorView&, const TensorView&, const ProviderPlan*, ErasedExecutionContext) const override {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue,
                      "{}: copy() called, but prepare_copy() never answers Prepared", name_);
  }

 private:
  std::string name_;
};

/// An extension engine that supports nothing (install it for a family to
/// make that family's resolution on this engine fall through to core
/// lowering or the fallback engine).
class NullExtensionEngine final : public ExtensionEngine {
 public:
  explicit NullExtensionEngine(std::string name) : name_(std::move(name)) {}
  std::string_view name() const noexcept override { return name_; }
  Result<PrepareCapability> prepare(const ExtensionSignature&) const override {
    return PrepareCapability::unsupported(name_ + ": not implemented by this engine");
  }
  Status run(const ExtensionRequest&, ErasedExecutionContext) const override {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue,
                      "{}: run() called, but prepare() never answers Prepared", name_);
  }

 private:
  std::string name_;
};

/// The null engine's registration: host storage, inline executor with
/// immediate completion, and every core slot filled with a Null provider.
EngineRegistration null_engine_registration(EngineId id, std::string name = "null");

}  // namespace tenferro::runtime
