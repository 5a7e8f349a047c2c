// The runtime configuration: RuntimeConfigBuilder (mutable, validated as a
// whole) and RuntimeConfig, the immutable snapshot a runtime publishes with
// an epoch (docs/runtime.md, "Configuration, epochs and ownership").
//
// Note [Configuration snapshots and epochs]
// A RuntimeConfig holds the engines (with the event domain the runtime
// assigned to each), extension registrations, transfer providers, the
// collective providers, policies and the topology derived from the
// engines. It never changes after it is built. Reconfiguration copies the
// current snapshot into a builder, applies the caller's edits, validates the
// complete replacement and only then publishes it with the epoch advanced by
// one; any failure leaves the old snapshot active and the epoch unchanged.
// Preparation pins one snapshot; prepared programs remember its epoch, so
// run_prepared of a plan from an older epoch fails with kStalePreparedGraph
// while run() re-prepares. In-flight work keeps its own snapshot alive until
// it drains. Registering an identical object again is a no-op; a different
// object under the same identity is kAlreadyExists; replacing is explicit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/runtime/admission.h"
#include "tenferro/runtime/plan_cache.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/transfer.h"

namespace tenferro::runtime {

class CollectiveProvider;
class ExtensionEngine;

/// ExecutionPolicy::determinism (docs/runtime.md, "Observability and determinism").
enum class Determinism : std::uint8_t {
  /// Deterministic compilation, selection and cache identity; no fixed
  /// concurrent order or bitwise-identical parallel reductions.
  kFast,
  /// Only provider algorithms that declare reproducibility; others fail at
  /// prepare with kDeterminismUnsupported.
  kReproducible,
};
std::string_view to_string(Determinism determinism) noexcept;

/// Core operation families (capability slots) plus extensions, for
/// preferences and explain().
enum class OpFamily : std::uint8_t {
  kElementwise,
  kReduction,
  kIndexing,
  kDotGeneral,
  kLayout,
  kView,       ///< metadata-only views: never a provider
  kExtension,  ///< an extension family (named by its family id)
};
std::string_view to_string(OpFamily family) noexcept;

/// Runtime family preference: the engines tried, in order, for operations of
/// `family` (for kExtension: of extension family `extension_family`) whose
/// placement does not already fix the engine.
struct FamilyPreference {
  OpFamily family = OpFamily::kElementwise;
  std::string extension_family;
  std::vector<EngineId> engines;
};

/// How a CPU engine with several domains picks one when the placement
/// does not name it (docs/runtime.md, "Eager contexts").
enum class CpuAffinityPolicy : std::uint8_t {
  /// The domain holding the most input bytes; ties by lowest domain id.
  kDominantInputBytes,
  /// As above, but inputs from several domains are a kPlacementError.
  kRequireSingleDomain,
};

/// Policies of one configuration.
struct RuntimePolicies {
  /// Default determinism for prepare options that do not set it.
  Determinism determinism = Determinism::kFast;
  /// The engine of Placement::default_placement(); invalid = the first
  /// registered engine.
  EngineId default_engine;
  /// Per-family engine order (resolution step 3).
  std::vector<FamilyPreference> preferences;
  /// An explicitly configured fallback engine (resolution step 6); invalid =
  /// none. There is no other fallback.
  EngineId fallback_engine;
  CpuAffinityPolicy cpu_affinity = CpuAffinityPolicy::kDominantInputBytes;
  /// Bounds of the prepared-plan cache.
  PlanCacheLimits plan_cache;
  /// Admission capacities (memory bytes per storage domain, CPU threads per
  /// domain, ...). Empty: nothing is accounted.
  std::vector<ResourceAmount> capacities;
};

/// One extension engine registered for (family id, engine).
struct ExtensionRegistration {
  /// The stable family id of the ExtensionOp payloads it executes.
  std::string family_id;
  EngineId engine;
  std::shared_ptr<ExtensionEngine> implementation;
  /// The implementation's caches (plans, workspaces), reported by
  /// Runtime::cache_report() and cleared by Runtime::clear_caches(); null
  /// when it keeps none.
  std::shared_ptr<CacheOwner> cache_owner;
};

/// A set of extension registrations installed together (e.g. one operation
/// library's adapters for several engines).
struct ExtensionModule {
  std::string name;
  std::vector<ExtensionRegistration> registrations;
};

/// A registered transfer provider for one endpoint pair.
struct TransferRegistration {
  TransferEndpoint source;
  TransferEndpoint destination;
  std::shared_ptr<TransferProvider> provider;
};

/// The collective provider of one communicator (Note [Collective nodes] in
/// spi/collective.h): collective operations whose spec names
/// `communicator` run on `provider`.
struct CollectiveRegistration {
  std::uint64_t communicator = 0;
  std::shared_ptr<CollectiveProvider> provider;
};

/// An engine with the event domain the runtime assigned to it.
struct EngineEntry {
  EngineRegistration registration;
  EventDomainId event_domain;
  /// registration.allocator, or the default host allocator (set at build).
  std::shared_ptr<EngineAllocator> allocator;

  EngineId id() const noexcept { return registration.metadata.id; }
  const EngineMetadata& metadata() const noexcept { return registration.metadata; }
  /// True when the engine serves `domain` (its implicit domain 0 when it
  /// lists none).
  bool serves(std::uint64_t domain) const noexcept;
};

/// One (engine, domain) pair of the runtime's topology.
struct TopologyEntry {
  EngineId engine;
  HardwareClass hardware = HardwareClass::kCpu;
  StorageDomainId storage;
  std::uint64_t domain = 0;
};

/// An immutable configuration snapshot. Thread-safe (immutable).
class RuntimeConfig {
 public:
  RuntimeId runtime_id() const noexcept { return runtime_id_; }
  std::uint64_t epoch() const noexcept { return epoch_; }
  std::span<const EngineEntry> engines() const noexcept { return engines_; }
  const EngineEntry* find_engine(EngineId id) const noexcept;
  /// The engine of Placement::default_placement().
  const EngineEntry* default_engine() const noexcept;
  const RuntimePolicies& policies() const noexcept { return policies_; }
  std::span<const ExtensionRegistration> extensions() const noexcept { return extensions_; }
  /// The extension engine for (family, engine), or null.
  const ExtensionRegistration* find_extension(std::string_view family_id, EngineId engine) const noexcept;
  std::span<const TransferRegistration> transfers() const noexcept { return transfers_; }
  /// The provider for the endpoint pair, or null.
  TransferProvider* find_transfer(TransferEndpoint source, TransferEndpoint destination) const noexcept;
  std::span<const CollectiveRegistration> collectives() const noexcept { return collectives_; }
  /// The provider registered for `communicator`, or null.
  const CollectiveProvider* find_collective(std::uint64_t communicator) const noexcept;
  /// Every (engine, domain) pair, in registration order.
  std::span<const TopologyEntry> topology() const noexcept { return topology_; }
  /// The admission arbiter of this configuration (never null).
  ResourceArbiter& arbiter() const noexcept { return *arbiter_; }
  const std::shared_ptr<ResourceArbiter>& arbiter_ptr() const noexcept { return arbiter_; }
  /// A readable multi-line description (engines, slots, extensions,
  /// transfers, policies).
  std::string describe() const;

 private:
  friend class RuntimeConfigBuilder;
  RuntimeConfig() = default;

  RuntimeId runtime_id_;
  std::uint64_t epoch_ = 0;
  std::vector<EngineEntry> engines_;
  std::vector<ExtensionRegistration> extensions_;
  std::vector<TransferRegistration> transfers_;
  std::vector<CollectiveRegistration> collectives_;
  std::vector<TopologyEntry> topology_;
  RuntimePolicies policies_;
  std::shared_ptr<ResourceArbiter> arbiter_;
  bool arbiter_injected_ = false;
};

/// Collects a complete configuration. Thread-compatible. Every method
/// either applies fully or returns an error and changes nothing. Errors are
/// kConfiguration-stage.
class RuntimeConfigBuilder {
 public:
  RuntimeConfigBuilder() = default;
  /// A builder holding a copy of `snapshot` (for reconfiguration).
  explicit RuntimeConfigBuilder(const RuntimeConfig& snapshot);

  /// Registers an engine. Same id: a no-op when every retained object is the
  /// same, kAlreadyExists otherwise.
  Status add_engine(EngineRegistration registration);
  /// Replaces the engine with the same id (kNotFound when absent).
  Status replace_engine(EngineRegistration registration);
  /// Removes an engine and every extension and transfer registration naming
  /// it (kNotFound when absent).
  Status remove_engine(EngineId id);

  /// Registers one extension engine; duplicate (family, engine) with another
  /// object is kAlreadyExists.
  Status add_extension(ExtensionRegistration registration);
  /// Installs every registration of `module`, all or none.
  Status add_extension_module(const ExtensionModule& module);
  /// Replaces the registration for (family, engine) (kNotFound when absent).
  Status replace_extension(ExtensionRegistration registration);

  /// Registers a transfer provider; duplicate endpoint pair with another
  /// provider is kAlreadyExists.
  Status add_transfer(TransferRegistration registration);
  Status replace_transfer(TransferRegistration registration);

  /// Registers the collective provider of a communicator: kInvalidArgument
  /// for a null provider; the same communicator with another provider is
  /// kAlreadyExists (the same one again is a no-op).
  Status add_collective(CollectiveRegistration registration);
  /// Removes the provider of `communicator` (kNotFound when absent).
  Status remove_collective(std::uint64_t communicator);

  RuntimePolicies& policies() noexcept { return policies_; }
  const RuntimePolicies& policies() const noexcept { return policies_; }

  /// Uses `arbiter` instead of a FifoResourceArbiter over the capacities
  /// (mock arbiters in tests, a shared arbiter across runtimes).
  void set_arbiter(std::shared_ptr<ResourceArbiter> arbiter) {
    arbiter_ = std::move(arbiter);
    arbiter_injected_ = arbiter_ != nullptr;
  }

  /// Validates the whole configuration (engines complete, references
  /// resolvable, endpoints matching engine storage classes, preferences and
  /// capacities well-formed) and freezes it as the snapshot of `runtime` at
  /// `epoch`. The builder is unchanged.
  Result<std::shared_ptr<const RuntimeConfig>> build(RuntimeId runtime, std::uint64_t epoch) const;

 private:
  Status validate() const;

  std::vector<EngineEntry> engines_;
  std::vector<ExtensionRegistration> extensions_;
  std::vector<TransferRegistration> transfers_;
  std::vector<CollectiveRegistration> collectives_;
  RuntimePolicies policies_;
  std::shared_ptr<ResourceArbiter> arbiter_;
  // Capacities the current (non-injected) arbiter was built from; it is
  // reused across reconfigurations that keep them.
  std::vector<ResourceAmount> arbiter_capacities_;
  bool arbiter_injected_ = false;
};

}  // namespace tenferro::runtime
