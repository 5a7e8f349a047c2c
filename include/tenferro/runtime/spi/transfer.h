// Transfers: explicit data movement between execution endpoints. A transfer
// endpoint is the immutable pair (engine, storage class); providers are
// registered per (source, destination) endpoint pair and resolved at prepare
// time into scheduled Transfer nodes. There is no implicit copy anywhere: a
// missing provider is a typed prepare error (kMissingTransfer).
#pragma once

#include <functional>
#include <string>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

/// One side of a transfer. Trivially copyable value.
struct TransferEndpoint {
  EngineId engine;
  StorageDomainId storage;

  friend constexpr bool operator==(TransferEndpoint, TransferEndpoint) noexcept = default;
  std::string to_string() const;
};

/// A borrowed transfer request: copy every element of `src` (in the source
/// endpoint's storage) into `dst` (runtime-allocated, row-major dense, same
/// shape and dtype, in the destination endpoint's storage).
struct TransferRequest {
  TensorView src;
  TensorView dst;
  TransferEndpoint source;
  TransferEndpoint destination;
};

/// Moves data between two endpoints. Runs as a node of the destination's
/// event domain, after the scheduler waited for the source-domain producer;
/// `context` is the destination engine's execution context. Thread-safe.
/// Exceptions become errors at the call boundary.
class TransferProvider {
 public:
  virtual ~TransferProvider() = default;
  /// The destination-engine context transfer() recovers (invalid: any);
  /// checked when the configuration is built.
  virtual ExecutionContextTypeId context_type() const noexcept { return {}; }
  virtual Status transfer(const TransferRequest& request, ErasedExecutionContext context) = 0;
};

}  // namespace tenferro::runtime

template <>
struct std::hash<tenferro::runtime::TransferEndpoint> {
  std::size_t operator()(tenferro::runtime::TransferEndpoint e) const noexcept {
    return std::hash<std::uint64_t>()(e.engine.value() * 0x9E3779B97F4A7C15ull ^ e.storage.value());
  }
};
