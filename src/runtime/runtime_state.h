// Internal: the state behind a Runtime handle, its metrics, the prepared-plan
// cache key, and in-flight submitted runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/execution.h"
#include "tenferro/runtime/plan_cache.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/signature.h"

namespace tenferro::runtime::internal {

/// Monotonic nanoseconds (for stage metrics).
inline std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

struct AtomicStage {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> nanoseconds{0};
  void add(std::uint64_t ns) noexcept {
    count.fetch_add(1, std::memory_order_relaxed);
    nanoseconds.fetch_add(ns, std::memory_order_relaxed);
  }
  StageMetrics load() const noexcept {
    return {count.load(std::memory_order_relaxed), nanoseconds.load(std::memory_order_relaxed)};
  }
};

/// Runtime-wide metrics, shared with in-flight runs (which must not own the
/// runtime state). Thread-safe.
struct MetricsState {
  static constexpr std::size_t kMaxDetachedFailures = 32;

  AtomicStage compile, specialization, cache_lookup, planning, admission_wait, enqueue, completion;
  std::atomic<std::uint64_t> runs{0}, failed_runs{0}, cancelled_runs{0}, nodes_enqueued{0}, groups_enqueued{0},
      transfers{0}, collectives{0}, donations{0}, eager_promoted_calls{0};
  std::mutex detached_mutex;
  std::deque<Error> detached_failures;

  void record_detached_failure(const Error& error);
  ExecutionMetrics snapshot();
};

/// The prepared-plan cache key (docs/runtime.md, "The plan cache contract"):
/// fingerprint, runtime, epoch, options and the input signature. Equality
/// compares the fingerprint digest and, when the program objects differ,
/// decides with structural equality (the key retains its program: the
/// collision bucket).
struct PreparedPlanKey {
  std::shared_ptr<const program::SemanticProgram> program;
  RuntimeId runtime;
  std::uint64_t epoch = 0;
  PrepareOptions options;
  InputSignature signature;
  std::size_t hash = 0;

  static PreparedPlanKey make(std::shared_ptr<const program::SemanticProgram> program, RuntimeId runtime,
                              std::uint64_t epoch, const PrepareOptions& options, InputSignature signature);
  friend bool operator==(const PreparedPlanKey& a, const PreparedPlanKey& b);
};
struct PreparedPlanKeyHash {
  std::size_t operator()(const PreparedPlanKey& key) const noexcept { return key.hash; }
};

using PreparedPlanCache = PlanCache<PreparedPlanKey, PreparedProgram, PreparedPlanKeyHash>;

/// Counts submitted runs that have not finished, for shutdown(). Shared with
/// in-flight runs. Thread-safe.
struct InFlightTracker {
  std::mutex mutex;
  std::condition_variable idle;
  std::size_t active = 0;
  void begin() {
    std::lock_guard<std::mutex> lock(mutex);
    ++active;
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex);
    if (--active == 0) idle.notify_all();
  }
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return active == 0; });
  }
};

/// One submitted run (Note [Submitted runs and handles]). Owns exactly what
/// the execution needs; never the RuntimeState.
struct InFlightRun {
  std::shared_ptr<const PreparedProgram> prepared;
  std::vector<Tensor> inputs;
  std::shared_ptr<MetricsState> metrics;
  std::shared_ptr<InFlightTracker> tracker;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> attached{true};

  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool consumed = false;
  Status status;
  TensorList outputs;

  /// Runs the execution (on the submission executor) and publishes the result.
  void execute() noexcept;
};

/// Runs `prepared` synchronously on the calling thread (execute.cpp; Note
/// [Fail-fast execution]). `inputs` are validated against the signature
/// here; runtime/epoch checks are the caller's. `runtime_refs` is how many
/// references to each input storage the runtime itself holds besides the
/// run workspace (0 for a synchronous call, 1 for a submitted run that
/// copied its inputs), for the donation exclusivity check.
Result<TensorList> execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> inputs,
                                    MetricsState& metrics, const std::atomic<bool>* cancelled,
                                    std::size_t runtime_refs);

/// The state behind Runtime handles (Note [Runtime thread safety]).
struct RuntimeState {
  RuntimeState(RuntimeId id, std::shared_ptr<const RuntimeConfig> config,
               std::shared_ptr<SubmissionExecutor> submission);
  ~RuntimeState();

  std::shared_ptr<const RuntimeConfig> snapshot() const {
    std::lock_guard<std::mutex> lock(config_mutex);
    return config;
  }

  const RuntimeId id;
  std::atomic<std::uint64_t> epoch{0};
  mutable std::mutex config_mutex;
  std::shared_ptr<const RuntimeConfig> config;  // guarded by config_mutex
  std::mutex reconfigure_mutex;
  PreparedPlanCache plans;
  std::shared_ptr<MetricsState> metrics;
  std::shared_ptr<SubmissionExecutor> submission;
  std::shared_ptr<InFlightTracker> inflight;
  std::atomic<bool> stopped{false};
};

/// prepare_for through the cache (runtime.cpp); used by Runtime and eager
/// promotion.
Result<std::shared_ptr<const PreparedProgram>> prepare_cached(
    RuntimeState& state, const std::shared_ptr<const program::SemanticProgram>& program, InputSignature signature,
    const PrepareOptions& options);

/// run() on the state (runtime.cpp); used by Runtime and eager promotion.
Result<TensorList> run_program(RuntimeState& state, const std::shared_ptr<const program::SemanticProgram>& program,
                               std::span<const Tensor> inputs, const PrepareOptions& options);

}  // namespace tenferro::runtime::internal
