// Execution results and observability: TensorList, ExecutionHandle (the
// observer of a submitted run), ExecutionMetrics, and the
// SubmissionExecutor that runs submitted work.
//
// Note [Submitted runs and handles]
// Runtime::submit validates, admits nothing yet, and posts the run to the
// runtime's SubmissionExecutor; it returns at once. The in-flight run owns
// exactly what the work needs (prepared plan, configuration snapshot,
// inputs, workspace, leases, event-domain runs) and never the Runtime.
// ExecutionHandle::wait blocks until the run drained and returns its outputs
// or its error (primary plus suppressed). Dropping a handle only detaches
// the observer: it neither waits nor cancels; a detached run's failure is
// still recorded in ExecutionMetrics::detached_failures. cancel() is best
// effort: a run not yet started finishes as kCancelled without acquiring
// anything; a running one stops enqueueing, drains what it started and
// reports kCancelled; already enqueued work is never undone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::runtime {

namespace internal {
struct InFlightRun;
}  // namespace internal

/// The outputs of a run, in program output order.
using TensorList = SmallVector<Tensor, 4>;

/// Observes one submitted run (Note [Submitted runs and handles]).
/// Move-only. Thread-compatible; the destructor never blocks.
class ExecutionHandle {
 public:
  ExecutionHandle() = default;
  explicit ExecutionHandle(std::shared_ptr<internal::InFlightRun> run) noexcept : run_(std::move(run)) {}
  ExecutionHandle(ExecutionHandle&&) noexcept = default;
  /// Detaches from the current run (if any) first.
  ExecutionHandle& operator=(ExecutionHandle&& other) noexcept;
  /// Detaches; never blocks, never cancels.
  ~ExecutionHandle();

  bool valid() const noexcept { return run_ != nullptr; }
  /// True once the run finished (successfully or not).
  bool is_done() const noexcept;
  /// Blocks until the run drained; returns its outputs or its error. The
  /// handle is consumed: a second wait returns kFailedPrecondition.
  Result<TensorList> wait();
  /// Best-effort cancellation request; returns immediately.
  void cancel() noexcept;

 private:
  std::shared_ptr<internal::InFlightRun> run_;
};

/// Count and accumulated wall time of one stage.
struct StageMetrics {
  std::uint64_t count = 0;
  std::uint64_t nanoseconds = 0;
};

/// Runtime-wide execution metrics (a snapshot). Stages are separated so
/// planning cost is never reported as kernel cost.
struct ExecutionMetrics {
  StageMetrics compile;         ///< building one-node programs for promoted eager calls
  StageMetrics specialization;  ///< signature derivation of run() (guards are checked while planning)
  StageMetrics cache_lookup;    ///< prepared-plan cache lookups (hits and waits)
  StageMetrics planning;        ///< prepare_for work (misses)
  StageMetrics admission_wait;  ///< run admission and node leases
  StageMetrics enqueue;         ///< input checks, workspace, admission and the loop up to the last enqueue
  StageMetrics completion;      ///< draining event-domain runs
  std::uint64_t runs = 0;       ///< runs that reached execution (successful or not)
  /// Runs that ended with an error, cancelled ones included (also those
  /// cancelled while queued, which never reached execution).
  std::uint64_t failed_runs = 0;
  std::uint64_t cancelled_runs = 0;  ///< of failed_runs, those that ended kCancelled
  std::uint64_t nodes_enqueued = 0;
  /// Concurrent groups handed to event domains (Note [Concurrent groups]);
  /// their members count in nodes_enqueued.
  std::uint64_t groups_enqueued = 0;
  std::uint64_t transfers = 0;
  /// Collective nodes whose provider ran (abandoned ones do not count).
  std::uint64_t collectives = 0;
  std::uint64_t donations = 0;
  std::uint64_t eager_promoted_calls = 0;
  /// Failures of runs whose handle was dropped (most recent last, bounded).
  std::vector<Error> detached_failures;
};

/// Runs submitted executions (Note [Submitted runs and handles]).
/// Implementations are thread-safe.
class SubmissionExecutor {
 public:
  virtual ~SubmissionExecutor() = default;
  /// Schedules `task` to run once on some thread. kRuntimeStopped after
  /// shutdown(). A task must not throw.
  virtual Status post(std::function<void()> task) = 0;
  /// Stops accepting tasks and runs (or waits for) every accepted one.
  virtual void shutdown() noexcept = 0;
};

/// A SubmissionExecutor the caller drives: post() queues, run_all() runs
/// the queued tasks on the calling thread. Deterministic; for tests and for
/// callers integrating with their own event loop. Thread-safe.
class ManualSubmissionExecutor final : public SubmissionExecutor {
 public:
  Status post(std::function<void()> task) override;
  void shutdown() noexcept override;
  /// Runs every queued task (including ones posted meanwhile); returns how many.
  std::size_t run_all();
  std::size_t queued() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::function<void()>> queue_;
  bool stopped_ = false;
};

/// The default SubmissionExecutor: one worker thread owned by the runtime,
/// started on the first post. Its destructor never blocks: with work still
/// queued it detaches the worker, which finishes the queue (each task owns
/// what it needs) and exits. shutdown() drains and joins. Thread-safe.
std::shared_ptr<SubmissionExecutor> make_thread_submission_executor();

}  // namespace tenferro::runtime
