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

#include "tenferro/base/sharded_counters.h"
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

/// Runtime-wide metrics, shared with in-flight runs (which must not own the
/// runtime state). Thread-safe. Every run and eager promotion adds to them
/// from whatever thread runs it, so they are per-CPU copies (Note [Sharded
/// counters] in tenferro/base/sharded_counters.h).
struct MetricsState {
  static constexpr std::size_t kMaxDetachedFailures = 32;

  /// The timed stages: each a count and a sum of nanoseconds.
  enum Stage : std::size_t {
    kCompile,
    kSpecialization,
    kCacheLookup,
    kPlanning,
    kAdmissionWait,
    kEnqueue,
    kCompletion,
    kStages
  };
  /// The counts (after the stages' 2 * kStages values).
  enum Counter : std::size_t {
    kRuns = 2 * kStages,
    kFailedRuns,
    kCancelledRuns,
    kNodesEnqueued,
    kGroupsEnqueued,
    kTransfers,
    kCollectives,
    kDonations,
    kEagerPromotedCalls,
    kValues
  };
  ShardedCounters<kValues> values;
  std::mutex detached_mutex;
  std::deque<Error> detached_failures;

  using Local = ShardedCounters<kValues>::Local;

  void add(Counter counter, std::uint64_t value) noexcept { add(values.local(), counter, value); }
  void add_stage(Stage stage, std::uint64_t ns) noexcept { add_stage(values.local(), stage, ns); }
  /// The same into `local` (values.local(): one CPU lookup for several).
  static void add(const Local& local, Counter counter, std::uint64_t value) noexcept {
    local.add(counter, static_cast<std::int64_t>(value));
  }
  static void add_stage(const Local& local, Stage stage, std::uint64_t ns) noexcept {
    local.add(2 * stage, 1);
    local.add(2 * stage + 1, static_cast<std::int64_t>(ns));
  }
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
