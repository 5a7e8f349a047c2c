// Event domains: how an engine orders and completes the work the runtime
// enqueues (docs/runtime.md, "Execution: event domains, admission and
// fail-fast").
//
// Note [Event domains]
// Every engine registration names an EventDomainDriver. For one execution
// the scheduler begins one EventDomainRun per event domain the schedule uses
// (before any node is enqueued, so a missing driver or a failing begin never
// shows up after an effect ran), enqueues nodes with their same-domain
// dependency tokens, and drains every begun run in first-use order at the
// end, on success and on failure alike. Cross-domain dependencies exist only
// at Transfer nodes, whose source-domain tokens the scheduler waits for on
// the host. A CompletionToken names its origin domain; the scheduler and the
// drivers reject tokens from any other domain with a typed error naming the
// EventDomainOperation. `drain` is a retirement boundary: after it returns,
// no enqueued work touches any retained buffer. Run objects are reused across
// executions (begin/drain), so steady-state runs allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/placement.h"
#include "tenferro/runtime/spi/engine_executor.h"

namespace tenferro::runtime {

/// The event-domain operation an error comes from (closed set; errors name it).
enum class EventDomainOperation : std::uint8_t { kBeginRun, kEnqueue, kDrain, kTransferBridge, kValidateCompletion };
std::string_view to_string(EventDomainOperation operation) noexcept;

/// A completion handle for one enqueued piece of work. `sequence` is the
/// driver's own numbering inside one run. Trivially copyable.
struct CompletionToken {
  EventDomainId origin;
  std::uint64_t sequence = 0;

  constexpr bool valid() const noexcept { return origin.valid(); }
  friend constexpr bool operator==(CompletionToken, CompletionToken) noexcept = default;
};

/// Work the scheduler enqueues. The object stays valid until the run that
/// accepted it has been drained; `execute` is called exactly once (unless the
/// run is drained after a failure before it started) and must not throw.
class EnqueuedWork {
 public:
  virtual Status execute(ErasedExecutionContext context) noexcept = 0;

 protected:
  ~EnqueuedWork() = default;
};

/// The most requests the scheduler puts in one EventDomainRun::enqueue_group.
inline constexpr std::size_t kMaxConcurrentGroup = 8;

/// One enqueue: borrowed for the duration of the call.
struct EnqueueRequest {
  /// Tokens this work must wait for; all originate in the run's domain.
  std::span<const CompletionToken> dependencies;
  EnqueuedWork* work = nullptr;
  ResolvedPlacement placement;
  /// The scheduled node index, for diagnostics.
  std::uint32_t node = 0;
};

/// One execution's use of one event domain. Thread-compatible: the scheduler
/// calls it from one thread at a time. Implementations must not throw; the
/// destructor performs best-effort retirement of anything not drained and
/// never unwinds.
class EventDomainRun {
 public:
  virtual ~EventDomainRun() = default;

  /// The domain this run belongs to (validated after begin and before every
  /// enqueue).
  virtual EventDomainId domain() const noexcept = 0;
  /// Starts an execution (kBeginRun errors). A run is begun at most once
  /// between drains.
  virtual Status begin() noexcept = 0;
  /// Enqueues (or, for an immediate domain, performs) `request.work` after its
  /// dependencies. An error means the work was not launched, or, for
  /// immediate domains, that it ran and failed (completion stage).
  virtual Result<CompletionToken> enqueue(const EnqueueRequest& request) noexcept = 0;
  /// Enqueues a concurrent group (Note [Concurrent groups]): requests that
  /// do not depend on each other, in schedule order. Writes each launched
  /// request's token to `tokens[i]` (others stay invalid) and returns the
  /// first failure, later ones attached as suppressed. A driver may run the
  /// group's work at the same time. The default enqueues them one by one and
  /// stops at the first failure.
  virtual Status enqueue_group(std::span<const EnqueueRequest> requests, std::span<CompletionToken> tokens) noexcept;
  /// Blocks the host until `token` (of this domain) completed; its work's
  /// failure, if any, is returned. Repeatable.
  virtual Status wait(CompletionToken token) noexcept = 0;
  /// Waits for every enqueued work item and returns the first completion
  /// failure (kCompletion stage) after all of them retired.
  virtual Status drain() noexcept = 0;
  /// True when enqueue returns only after the work completed (CPU immediate);
  /// the scheduler then releases node resources right after enqueue.
  virtual bool completes_at_enqueue() const noexcept { return false; }
  /// Runs `body`, inside which the scheduler enqueues consecutive nodes
  /// placed at `placement`; a driver may enter its executor once for all of
  /// them (entry amortisation). The default just calls `body`.
  virtual Status run_segment(ResolvedPlacement /*placement*/, FunctionRef<Status()> body) noexcept { return body(); }
};

/// Creates reusable runs for one engine's event domain. Thread-safe.
class EventDomainDriver {
 public:
  virtual ~EventDomainDriver() = default;
  /// A new run object for `domain` (may allocate; called when a run
  /// workspace is created, not per execution).
  virtual Result<std::unique_ptr<EventDomainRun>> create_run(EventDomainId domain) = 0;
};

/// The CPU immediate driver: enqueue enters `executor` and performs the work
/// before returning (an amortised segment enters once for all of its nodes);
/// tokens complete at enqueue; drain only reports. Foreign-origin tokens are
/// rejected. `executor` is retained.
std::shared_ptr<EventDomainDriver> make_cpu_immediate_event_driver(std::shared_ptr<EngineExecutor> executor);

/// A typed event-domain error: "event domain D (operation): message".
Error event_domain_error(ErrorCode code, ErrorStage stage, EventDomainId domain, EventDomainOperation operation,
                         std::string_view message);

}  // namespace tenferro::runtime
