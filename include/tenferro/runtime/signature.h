// InputSignature (the value-free description of a run's inputs that a
// prepared plan is specialised for) and PrepareOptions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

/// How the runtime may use an external input (the buffer plan may reuse or
/// donate it only as allowed here).
enum class BindingMode : std::uint8_t {
  kBorrowed,   ///< read only (the default)
  kDonatable,  ///< may be overwritten in place at its last use when the
               ///< storage is exclusively owned, unviewed, ready and ours
};

/// The metadata of one input. Value type.
struct InputDescriptor {
  DType dtype = DType::kFloat64;
  Dims shape;
  LayoutClass layout = LayoutClass::kRowMajor;
  StorageDomainId storage = kHostStorageDomain;
  /// The CPU domain or device the memory lives on (for placement).
  MemoryAffinity affinity;
  BindingMode binding = BindingMode::kBorrowed;
  /// False for InputSignature::of an undefined tensor: prepare_for refuses
  /// it by name (kInvalidArgument).
  bool defined = true;

  friend bool operator==(const InputDescriptor&, const InputDescriptor&) = default;
};

/// The layout class of a tensor's strides.
LayoutClass layout_class_of(const Tensor& tensor) noexcept;

/// A value-free input signature: what prepare_for specialises on. Value
/// type; thread-compatible.
class InputSignature {
 public:
  InputSignature() = default;
  /// The signature of `inputs` (undefined tensors are marked, and rejected by
  /// prepare_for), with
  /// per-input binding modes (default: all borrowed).
  static InputSignature of(std::span<const Tensor> inputs, std::span<const BindingMode> bindings = {});
  /// Appends one input.
  InputSignature& add(InputDescriptor descriptor) {
    inputs_.push_back(std::move(descriptor));
    return *this;
  }

  std::span<const InputDescriptor> inputs() const noexcept { return inputs_.span(); }
  std::size_t size() const noexcept { return inputs_.size(); }
  std::uint64_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const InputSignature& a, const InputSignature& b) noexcept { return a.inputs_ == b.inputs_; }

 private:
  SmallVector<InputDescriptor, 4> inputs_;
};

/// An operation-local explicit override (resolution step 1): run operation
/// `operation` of the program on `engine`.
struct OperationOverride {
  program::OperationId operation;
  EngineId engine;
  friend bool operator==(const OperationOverride&, const OperationOverride&) = default;
};

/// Options of prepare_for / run. Part of the plan-cache key.
struct PrepareOptions {
  /// Overrides the runtime's default determinism policy.
  std::optional<Determinism> determinism;
  /// Where operations run when nothing more specific decides (step 2).
  Placement placement;
  /// Operation-local engine overrides (step 1).
  std::vector<OperationOverride> overrides;
  /// A hard limit on the plan's peak memory estimate in bytes; exceeding it
  /// is kWorkspaceLimitExceeded at prepare.
  std::optional<std::size_t> workspace_limit_bytes;

  std::uint64_t hash() const noexcept;
  friend bool operator==(const PrepareOptions&, const PrepareOptions&) = default;
};

}  // namespace tenferro::runtime
