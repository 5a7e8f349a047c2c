// Runtime: the user-owned execution runtime (docs/runtime.md). It owns the
// configuration snapshot and its epoch, the prepared-plan cache, execution
// metrics and the submission executor; it prepares semantic programs for input
// signatures and runs them, synchronously or through submit();
// runtime.on(placement) returns eager contexts.
//
// Note [Runtime thread safety]
// Every Runtime method is thread-safe. Runtime is a cheap handle: copies
// share one runtime state (no process-global state: two Runtimes built
// separately are fully independent). Dropping the last handle never
// blocks: it stops admission of new submissions and leaves queued
// submitted work to finish on its own (it owns what it needs); call
// shutdown() to wait for it. Nothing the runtime creates (prepared plans,
// cache entries, in-flight runs, eager contexts' cached slots) holds a
// strong reference back to the runtime state, except EagerContext, which
// callers own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/execution.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/plan_cache.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/signature.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

namespace internal {
struct RuntimeState;
}  // namespace internal

class EagerContext;
class RuntimeBuilder;

/// Usage of one engine-owned cache, for Runtime::cache_report().
struct EngineCacheReport {
  EngineId engine;
  CacheUsage usage;
};

/// Usage of one extension engine's caches, for Runtime::cache_report().
struct ExtensionCacheReport {
  std::string family_id;
  EngineId engine;
  CacheUsage usage;
};

/// Every runtime-owned and registered cache, each counted once.
struct RuntimeCacheReport {
  PlanCacheStats plans;
  std::vector<EngineCacheReport> engines;
  std::vector<ExtensionCacheReport> extensions;
};

/// See Note [Runtime thread safety].
class Runtime {
 public:
  RuntimeId id() const noexcept;
  /// The current configuration epoch (one atomic load).
  std::uint64_t epoch() const noexcept;
  /// The current configuration snapshot.
  std::shared_ptr<const RuntimeConfig> config() const;

  /// Transactional reconfiguration (Note [Configuration snapshots and
  /// epochs]): `edit` changes a copy of the current configuration; the whole
  /// result is validated and published with the epoch advanced by one. On
  /// any error the old snapshot stays active. Reconfigurations are
  /// serialized; running work is unaffected (it holds its snapshot).
  /// Cached plans of older epochs are dropped.
  Status reconfigure(FunctionRef<Status(RuntimeConfigBuilder&)> edit);

  /// Prepares `program` for `signature` (docs/runtime.md, "How `prepare_for`
  /// works"): validates inputs and shape guards first, then resolves every
  /// operation (override, placement, family preference, native capability, core
  /// lowering, configured fallback), inserts explicit transfers, prepares
  /// engines and builds the schedule and buffer plan. Goes through the
  /// prepared-plan cache (single flight). Errors are kPrepare-stage.
  Result<std::shared_ptr<const PreparedProgram>> prepare_for(
      const std::shared_ptr<const program::SemanticProgram>& program, const InputSignature& signature,
      const PrepareOptions& options = {});

  /// Runs a prepared plan synchronously. Never re-prepares: a plan of
  /// another runtime is kRuntimeMismatch, of an older epoch
  /// kStalePreparedGraph; inputs must match its signature. `inputs` are all
  /// program inputs in order. Steady state allocates only the outputs.
  Result<TensorList> run_prepared(const PreparedProgram& prepared, std::span<const Tensor> inputs);

  /// Validates inputs and guards, derives the signature, prepares or reuses
  /// a cached plan and runs it. `inputs` are all program inputs in order.
  Result<TensorList> run(const std::shared_ptr<const program::SemanticProgram>& program, std::span<const Tensor> inputs,
                         const PrepareOptions& options = {});
  /// The same for a frozen program with bindings: `parameters` are its
  /// caller-supplied inputs; bound inputs come from the bindings.
  Result<TensorList> run(const program::FrozenProgram& program, std::span<const Tensor> parameters,
                         const PrepareOptions& options = {});

  /// Asynchronous run (Note [Submitted runs and handles]): prepares (or
  /// reuses) the plan on the calling thread, then posts the execution. An
  /// error before posting is returned directly.
  Result<ExecutionHandle> submit(const std::shared_ptr<const program::SemanticProgram>& program,
                                 std::span<const Tensor> inputs, const PrepareOptions& options = {});
  Result<ExecutionHandle> submit_prepared(std::shared_ptr<const PreparedProgram> prepared,
                                          std::span<const Tensor> inputs);

  /// Stops admitting submissions (later ones get kRuntimeStopped) and waits
  /// for every submitted run to finish. Idempotent.
  Status shutdown();

  /// An eager context bound to `placement` (see eager.h).
  EagerContext on(Placement placement = Placement::default_placement()) const;

  PlanCacheStats plan_cache_stats() const;
  void clear_plan_cache();
  /// The plan cache plus every engine and extension cache owner, each
  /// counted once.
  RuntimeCacheReport cache_report() const;
  /// Clears the plan cache and every cache owner of cache_report(): the
  /// engines' pooled free memory, the extensions' plans and workspaces.
  /// Plans and results in use stay valid (they hold what they need).
  void clear_caches();
  ExecutionMetrics execution_metrics() const;

  /// Internal (eager contexts, tests); not part of the API.
  const std::shared_ptr<internal::RuntimeState>& state() const noexcept { return state_; }

 private:
  friend class RuntimeBuilder;
  explicit Runtime(std::shared_ptr<internal::RuntimeState> state) noexcept : state_(std::move(state)) {}
  std::shared_ptr<internal::RuntimeState> state_;
};

/// Builds a Runtime. Thread-compatible.
class RuntimeBuilder {
 public:
  RuntimeBuilder() = default;

  /// The configuration being built (engines, extensions, transfers,
  /// policies, arbiter).
  RuntimeConfigBuilder& config() noexcept { return config_; }
  /// Shorthands for config().add_engine(...) etc.
  RuntimeBuilder& add_engine(EngineRegistration registration);
  RuntimeBuilder& add_extension_module(const ExtensionModule& module);
  RuntimeBuilder& add_transfer(TransferRegistration registration);
  RuntimeBuilder& add_collective(CollectiveRegistration registration);
  /// Replaces the default worker-thread SubmissionExecutor.
  RuntimeBuilder& set_submission_executor(std::shared_ptr<SubmissionExecutor> executor);

  /// Validates the configuration and creates the runtime (epoch 1). The
  /// first error of a shorthand call above is reported here.
  Result<Runtime> build();

 private:
  RuntimeConfigBuilder config_;
  std::shared_ptr<SubmissionExecutor> submission_;
  Status deferred_;
};

}  // namespace tenferro::runtime
