// PreparedProgram: what Runtime::prepare_for returns. It binds one
// SemanticProgram to one runtime, configuration epoch, input signature and
// set of prepare options, and holds the ScheduledGraph the runtime executes:
// Operation / Transfer / Barrier / Collective nodes with their
// resolved providers, dependency DAG, value slots, event dependencies and
// buffer plan. Its public surface is immutable metadata and explain().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/signature.h"

namespace tenferro::runtime {

namespace internal {
struct PreparedState;
}  // namespace internal

/// The kind of a scheduled node.
enum class ScheduledNodeKind : std::uint8_t {
  kOperation,   ///< a core operation on a capability slot
  kExtension,   ///< an extension operation on its native ExtensionEngine
  kView,        ///< a metadata-only view (no provider, no event)
  kCopy,        ///< a layout materialisation (LayoutRuntime)
  kTransfer,    ///< an explicit transfer between endpoints
  kBarrier,     ///< a cross-event-domain ordering point
  kCollective,  ///< a collective on a communicator (spi/collective.h)
};
std::string_view to_string(ScheduledNodeKind kind) noexcept;

/// Immutable public facts about one scheduled node. Borrowed from the
/// prepared program.
struct ScheduledNodeInfo {
  ScheduledNodeKind kind = ScheduledNodeKind::kOperation;
  /// The executing engine (the destination engine for a transfer).
  EngineId engine;
  /// The source engine of a transfer (invalid otherwise).
  EngineId source_engine;
  /// The core op or extension family name, "transfer", "copy", ...
  std::string_view name;
  /// The provider / extension engine / transfer provider that runs it.
  std::string_view provider;
  /// Nodes this one depends on (indices into the schedule).
  std::span<const std::uint32_t> dependencies;
};

/// A prepared program. Immutable and thread-safe: several threads may
/// run_prepared the same plan at once (each run takes its own workspace).
/// Retains its SemanticProgram, configuration snapshot and providers; never
/// the Runtime itself.
class PreparedProgram {
 public:
  explicit PreparedProgram(std::unique_ptr<internal::PreparedState> state);
  ~PreparedProgram();
  PreparedProgram(const PreparedProgram&) = delete;
  PreparedProgram& operator=(const PreparedProgram&) = delete;

  RuntimeId runtime_id() const noexcept;
  /// The configuration epoch it was prepared in.
  std::uint64_t epoch() const noexcept;
  const program::SemanticFingerprint& fingerprint() const noexcept;
  const std::shared_ptr<const program::SemanticProgram>& program() const noexcept;
  const InputSignature& signature() const noexcept;
  const PrepareOptions& options() const noexcept;

  std::size_t num_nodes() const noexcept;
  ScheduledNodeInfo node(std::size_t index) const noexcept;
  /// Number of runtime-planned buffers and the peak-memory estimate (the sum
  /// of every planned buffer, per storage domain added together).
  std::size_t num_buffers() const noexcept;
  std::size_t peak_memory_bytes() const noexcept;
  /// Logical bytes this plan retains (for the plan cache's byte bound).
  std::size_t retained_bytes() const noexcept;

  /// A readable explanation: specialization signature, every node with its
  /// provenance, chosen engine/provider and why (including refused
  /// candidates and lowering), placement, transfers and barriers, buffer
  /// lifetimes and reuse, resources and the peak-memory estimate.
  std::string explain() const;

  /// Runtime internals (src/runtime); not part of the API.
  const internal::PreparedState& state() const noexcept { return *state_; }

 private:
  std::unique_ptr<internal::PreparedState> state_;
};

}  // namespace tenferro::runtime
