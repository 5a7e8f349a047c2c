// The CPU immediate event-domain driver and event-domain error helpers.
#include "tenferro/runtime/spi/event_domain.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace tenferro::runtime {

std::string_view to_string(EventDomainOperation operation) noexcept {
  switch (operation) {
    case EventDomainOperation::kBeginRun:
      return "begin_run";
    case EventDomainOperation::kEnqueue:
      return "enqueue";
    case EventDomainOperation::kDrain:
      return "drain";
    case EventDomainOperation::kTransferBridge:
      return "transfer_bridge";
    case EventDomainOperation::kValidateCompletion:
      return "validate_completion";
  }
  return "unknown";
}

Error event_domain_error(ErrorCode code, ErrorStage stage, EventDomainId domain, EventDomainOperation operation,
                         std::string_view message) {
  return make_error(code, stage, "event domain {} ({}): {}", domain, to_string(operation), message);
}

Status EventDomainRun::enqueue_group(std::span<const EnqueueRequest> requests,
                                     std::span<CompletionToken> tokens) noexcept {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Result<CompletionToken> token = enqueue(requests[i]);
    if (!token.ok()) return token.status();
    tokens[i] = *token;
  }
  return ok_status();
}

namespace {

// Note [CPU immediate runs]
// Work runs inside enqueue, so a token is complete when it is returned and a
// work failure is reported by that enqueue (completion stage: the work ran).
// Inside run_segment the executor is entered once and every enqueue of the
// segment reuses the entered context instead of entering again.
class CpuImmediateRun final : public EventDomainRun {
 public:
  CpuImmediateRun(EventDomainId domain, std::shared_ptr<EngineExecutor> executor) noexcept
      : domain_(domain), executor_(std::move(executor)) {}

  EventDomainId domain() const noexcept override { return domain_; }

  Status begin() noexcept override {
    if (begun_) {
      return event_domain_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue, domain_,
                                EventDomainOperation::kBeginRun, "expected a drained run, found one already begun");
    }
    begun_ = true;
    next_sequence_ = 1;
    return ok_status();
  }

  Result<CompletionToken> enqueue(const EnqueueRequest& request) noexcept override {
    TENFERRO_TRY(check_request(request));
    const CompletionToken token{domain_, next_sequence_++};
    Status status;
    if (!segment_context_.empty() && request.placement == segment_placement_) {
      status = request.work->execute(segment_context_);
    } else {
      EnqueuedWork* work = request.work;
      status = executor_->enter(request.placement,
                                [work](ErasedExecutionContext context) { return work->execute(context); });
    }
    if (!status.ok()) return status.in_stage(ErrorStage::kCompletion);
    return token;
  }

  // Inside a segment, a group placed there runs through the executor's
  // run_concurrently; every member runs, and the first failure (in schedule
  // order) is reported with the later ones suppressed.
  Status enqueue_group(std::span<const EnqueueRequest> requests, std::span<CompletionToken> tokens) noexcept override {
    bool in_segment = !segment_context_.empty();
    for (const EnqueueRequest& r : requests) {
      TENFERRO_TRY(check_request(r));
      in_segment = in_segment && r.placement == segment_placement_;
    }
    if (!in_segment || requests.size() > kMaxConcurrentGroup) return EventDomainRun::enqueue_group(requests, tokens);
    std::array<Status, kMaxConcurrentGroup> statuses;
    executor_->run_concurrently(segment_context_, requests.size(), [&](std::size_t i, ErasedExecutionContext context) {
      statuses[i] = requests[i].work->execute(context);
    });
    Status first;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      tokens[i] = CompletionToken{domain_, next_sequence_++};
      if (statuses[i].ok()) continue;
      const Status s = statuses[i].in_stage(ErrorStage::kCompletion);
      first = first.ok() ? s : Status(first.error().with_suppressed(s.error()));
    }
    return first;
  }

  Status wait(CompletionToken token) noexcept override {
    return check_token(token, EventDomainOperation::kTransferBridge);
  }

  Status drain() noexcept override {
    begun_ = false;
    return ok_status();
  }

  bool completes_at_enqueue() const noexcept override { return true; }

  Status run_segment(ResolvedPlacement placement, FunctionRef<Status()> body) noexcept override {
    if (!segment_context_.empty()) return body();  // already inside a segment
    return executor_->enter(placement, [&](ErasedExecutionContext context) {
      segment_context_ = context;
      segment_placement_ = placement;
      Status status = body();
      segment_context_ = ErasedExecutionContext();
      return status;
    });
  }

 private:
  Status check_request(const EnqueueRequest& request) const {
    if (!begun_) {
      return event_domain_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue, domain_,
                                EventDomainOperation::kEnqueue, "expected a begun run, found none");
    }
    for (const CompletionToken& dep : request.dependencies)
      TENFERRO_TRY(check_token(dep, EventDomainOperation::kEnqueue));
    return ok_status();
  }

  // A token handed out by this run and not from the future.
  Status check_token(CompletionToken token, EventDomainOperation operation) const {
    if (token.origin == domain_ && token.sequence != 0 && token.sequence < next_sequence_) return ok_status();
    return event_domain_error(ErrorCode::kContractViolation, ErrorStage::kEnqueue, domain_, operation,
                              fmt::format("expected a token of this run, found one from domain {} (sequence {})",
                                          token.origin, token.sequence));
  }

  EventDomainId domain_;
  std::shared_ptr<EngineExecutor> executor_;
  bool begun_ = false;
  std::uint64_t next_sequence_ = 1;
  ErasedExecutionContext segment_context_;
  ResolvedPlacement segment_placement_;
};

class CpuImmediateDriver final : public EventDomainDriver {
 public:
  explicit CpuImmediateDriver(std::shared_ptr<EngineExecutor> executor) : executor_(std::move(executor)) {}
  Result<std::unique_ptr<EventDomainRun>> create_run(EventDomainId domain) override {
    return std::unique_ptr<EventDomainRun>(std::make_unique<CpuImmediateRun>(domain, executor_));
  }

 private:
  std::shared_ptr<EngineExecutor> executor_;
};

}  // namespace

std::shared_ptr<EventDomainDriver> make_cpu_immediate_event_driver(std::shared_ptr<EngineExecutor> executor) {
  return std::make_shared<CpuImmediateDriver>(std::move(executor));
}

}  // namespace tenferro::runtime
