// Engine registration: what an engine tells the runtime about itself
// (metadata), which core operation families it implements (typed optional
// capability slots), and the objects the runtime uses to run its work (the
// executable witness, the event-domain driver, the allocator) plus an
// optional cache owner for statistics and clearing.
//
// Note [Capability slots]
// Standard core families are direct typed fields, not a map: resolution at
// prepare time reads a field, and prepared nodes and eager contexts keep the
// resolved pointer, so execution never looks anything up and never branches on
// whether a family exists. A null slot means the engine does not implement the
// family; a provider that implements it for some requests answers the others
// with kUnsupported at prepare time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/spi/engine_executor.h"
#include "tenferro/runtime/spi/event_domain.h"
#include "tenferro/tensor/storage.h"

namespace tenferro::runtime {

class ElementwiseRuntime;
class ReductionRuntime;
class IndexingRuntime;
class DotGeneralRuntime;
class LayoutRuntime;
class SubgraphCompiler;

/// The kind of hardware an engine drives (diagnostics, placement rules).
enum class HardwareClass : std::uint8_t { kCpu, kGpu, kCompiler, kReference };
std::string_view to_string(HardwareClass hardware) noexcept;

/// Immutable facts about an engine.
struct EngineMetadata {
  /// Caller-chosen, unique within a runtime, valid (non-zero).
  EngineId id;
  /// For diagnostics and explain() only; never used for lookup after prepare.
  std::string name;
  HardwareClass hardware = HardwareClass::kCpu;
  /// The storage class (storage domain) the engine computes on and allocates
  /// in. Tensors of another storage domain reach it only through a transfer.
  StorageDomainId storage = kHostStorageDomain;
  /// The CPU domains or devices the engine serves (ids used in
  /// ResolvedPlacement::domain). Empty: one implicit domain, 0.
  std::vector<std::uint64_t> domains;
  /// The domain used when a placement does not name one.
  std::uint64_t default_domain = 0;
};

/// The typed optional capability slots (Note [Capability slots]).
struct CoreCapabilities {
  std::shared_ptr<ElementwiseRuntime> elementwise;
  std::shared_ptr<ReductionRuntime> reduction;
  std::shared_ptr<IndexingRuntime> indexing;
  std::shared_ptr<DotGeneralRuntime> dot_general;
  std::shared_ptr<LayoutRuntime> layout;
  std::shared_ptr<SubgraphCompiler> subgraph;
};

/// Allocates storage for runtime-allocated buffers (outputs, intermediates,
/// transfer destinations) in the engine's storage domain. Thread-safe.
class EngineAllocator {
 public:
  virtual ~EngineAllocator() = default;
  /// `nbytes` of storage placed at `placement`; kResourceExhausted (any
  /// stage; the runtime restages) when it cannot.
  virtual Result<StorageRef> allocate(std::size_t nbytes, ResolvedPlacement placement) noexcept = 0;
};

/// Allocates host memory with tenferro's default aligned allocator (or
/// `allocator` when given) regardless of placement. Thread-safe.
std::shared_ptr<EngineAllocator> make_host_engine_allocator(std::shared_ptr<HostAllocator> allocator = nullptr);

/// Usage of an engine-owned cache.
struct CacheUsage {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
};

/// An engine-owned cache (provider plans, packed weights, ...) the runtime
/// reports in its statistics and can clear; it is counted once, by its owner
/// (never also in the runtime's own plan cache). Thread-safe.
class CacheOwner {
 public:
  virtual ~CacheOwner() = default;
  virtual CacheUsage usage() const noexcept = 0;
  virtual void clear() noexcept = 0;
};

/// The CacheOwner of an object (an extension engine) with
/// `CacheUsage cache_usage() const noexcept` and `void clear_caches() noexcept`,
/// which it retains.
template <class T>
class CacheOwnerOf final : public CacheOwner {
 public:
  explicit CacheOwnerOf(std::shared_ptr<T> object) noexcept : object_(std::move(object)) {}
  CacheUsage usage() const noexcept override { return object_->cache_usage(); }
  void clear() noexcept override { object_->clear_caches(); }

 private:
  std::shared_ptr<T> object_;
};

/// Everything one engine registers. The runtime retains every object.
/// Executable registrations carry `executor` and `event_driver`;
/// preparation-only registrations (no executor, no driver) can be prepared
/// for but a run that reaches them fails at enqueue.
struct EngineRegistration {
  EngineMetadata metadata;
  CoreCapabilities capabilities;
  /// The executable witness: declares and enters the engine's typed context.
  std::shared_ptr<EngineExecutor> executor;
  std::shared_ptr<EventDomainDriver> event_driver;
  /// Null: host engines get make_host_engine_allocator(); other storage
  /// classes must provide one.
  std::shared_ptr<EngineAllocator> allocator;
  std::shared_ptr<CacheOwner> cache_owner;

  bool executable() const noexcept { return executor != nullptr; }
};

}  // namespace tenferro::runtime
