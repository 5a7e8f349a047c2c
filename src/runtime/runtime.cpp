// Runtime and RuntimeBuilder: snapshots and reconfiguration, prepare through
// the plan cache, run / run_prepared / submit, handles, shutdown, metrics.
#include "tenferro/runtime/runtime.h"

#include <algorithm>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "runtime/runtime_state.h"
#include "runtime/scheduled_graph.h"
#include "tenferro/runtime/eager.h"

namespace tenferro::runtime {
namespace internal {

// ---------------------------------------------------------------------------
// Metrics

void MetricsState::record_detached_failure(const Error& error) {
  std::lock_guard<std::mutex> lock(detached_mutex);
  detached_failures.push_back(error);
  if (detached_failures.size() > kMaxDetachedFailures) detached_failures.pop_front();
}

ExecutionMetrics MetricsState::snapshot() {
  ExecutionMetrics m;
  const auto stage = [&](Stage s) {
    return StageMetrics{static_cast<std::uint64_t>(values.load(2 * s)),
                        static_cast<std::uint64_t>(values.load(2 * s + 1))};
  };
  const auto count = [&](Counter c) { return static_cast<std::uint64_t>(values.load(c)); };
  m.compile = stage(kCompile);
  m.specialization = stage(kSpecialization);
  m.cache_lookup = stage(kCacheLookup);
  m.planning = stage(kPlanning);
  m.admission_wait = stage(kAdmissionWait);
  m.enqueue = stage(kEnqueue);
  m.completion = stage(kCompletion);
  m.runs = count(kRuns);
  m.failed_runs = count(kFailedRuns);
  m.cancelled_runs = count(kCancelledRuns);
  m.nodes_enqueued = count(kNodesEnqueued);
  m.groups_enqueued = count(kGroupsEnqueued);
  m.transfers = count(kTransfers);
  m.collectives = count(kCollectives);
  m.donations = count(kDonations);
  m.eager_promoted_calls = count(kEagerPromotedCalls);
  std::lock_guard<std::mutex> lock(detached_mutex);
  m.detached_failures.assign(detached_failures.begin(), detached_failures.end());
  return m;
}

// ---------------------------------------------------------------------------
// The plan-cache key

PreparedPlanKey PreparedPlanKey::make(std::shared_ptr<const program::SemanticProgram> program, RuntimeId runtime,
                                      std::uint64_t epoch, const PrepareOptions& options, InputSignature signature) {
  PreparedPlanKey key;
  std::uint64_t h = program->fingerprint().prefix64();
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 0x100000001B3ull + (h >> 29); };
  mix(runtime.value());
  mix(epoch);
  mix(options.hash());
  mix(signature.hash());
  key.hash = static_cast<std::size_t>(h);
  key.program = std::move(program);
  key.runtime = runtime;
  key.epoch = epoch;
  key.options = options;
  key.signature = std::move(signature);
  return key;
}

bool operator==(const PreparedPlanKey& a, const PreparedPlanKey& b) {
  if (a.hash != b.hash || a.runtime != b.runtime || a.epoch != b.epoch) return false;
  if (!(a.signature == b.signature) || !(a.options == b.options)) return false;
  if (a.program == b.program) return true;
  return a.program->fingerprint() == b.program->fingerprint() && program::structurally_equal(*a.program, *b.program);
}

// ---------------------------------------------------------------------------
// RuntimeState

RuntimeState::RuntimeState(RuntimeId runtime_id, std::shared_ptr<const RuntimeConfig> initial,
                           std::shared_ptr<SubmissionExecutor> submission_executor)
    : id(runtime_id),
      config(std::move(initial)),
      plans(config->policies().plan_cache, [](const PreparedProgram& p) -> std::size_t { return p.retained_bytes(); }),
      metrics(std::make_shared<MetricsState>()),
      submission(std::move(submission_executor)),
      inflight(std::make_shared<InFlightTracker>()) {
  epoch.store(config->epoch(), std::memory_order_release);
}

// Never blocks (Note [Runtime thread safety]): submitted runs own what they
// need; the default submission executor detaches a busy worker.
RuntimeState::~RuntimeState() { stopped.store(true, std::memory_order_release); }

Result<std::shared_ptr<const PreparedProgram>> prepare_cached(
    RuntimeState& state, const std::shared_ptr<const program::SemanticProgram>& program, InputSignature signature,
    const PrepareOptions& options) {
  if (program == nullptr)
    return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, "expected a program, found null");
  const std::uint64_t t0 = now_ns();
  std::shared_ptr<const RuntimeConfig> config = state.snapshot();
  PreparedPlanKey key = PreparedPlanKey::make(program, state.id, config->epoch(), options, signature);
  std::uint64_t planning = 0;
  MetricsState& metrics = *state.metrics;
  auto result = state.plans.get_or_prepare(key, [&]() -> Result<std::shared_ptr<const PreparedProgram>> {
    const std::uint64_t t = now_ns();
    Result<std::unique_ptr<PreparedState>> prepared = prepare_program(config, program, key.signature, options);
    planning = now_ns() - t;
    metrics.add_stage(MetricsState::kPlanning, planning);
    if (!prepared.ok()) return prepared.status().in_stage(ErrorStage::kPrepare);
    return std::shared_ptr<const PreparedProgram>(std::make_shared<PreparedProgram>(std::move(*prepared)));
  });
  metrics.add_stage(MetricsState::kCacheLookup, now_ns() - t0 - planning);
  return result;
}

Result<TensorList> run_program(RuntimeState& state, const std::shared_ptr<const program::SemanticProgram>& program,
                               std::span<const Tensor> inputs, const PrepareOptions& options) {
  const std::uint64_t t0 = now_ns();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                   fmt::format("input {}: expected a defined tensor, found an undefined one", i));
    }
  }
  InputSignature signature = InputSignature::of(inputs);
  state.metrics->add_stage(MetricsState::kSpecialization, now_ns() - t0);
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedProgram> prepared,
                            prepare_cached(state, program, std::move(signature), options));
  return execute_prepared(*prepared, inputs, *state.metrics, nullptr, 0);
}

// ---------------------------------------------------------------------------
// In-flight runs

void InFlightRun::execute() noexcept {
  Result<TensorList> result = [&]() -> Result<TensorList> {
    if (cancelled.load(std::memory_order_acquire)) {
      metrics->add(MetricsState::kCancelledRuns, 1);
      metrics->add(MetricsState::kFailedRuns, 1);
      return Error(ErrorCode::kCancelled, ErrorStage::kEnqueue, "the run was cancelled before it started");
    }
    try {
      return execute_prepared(*prepared, inputs, *metrics, &cancelled, 1);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kEnqueue, "submitted run");
    }
  }();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    if (result.ok()) {
      outputs = std::move(*result);
    } else {
      status = result.status();
      if (!attached.load(std::memory_order_acquire)) metrics->record_detached_failure(status.error());
    }
    // Completed: release what only the execution needed.
    inputs.clear();
    prepared.reset();
  }
  finished.notify_all();
  tracker->end();
}

}  // namespace internal

using internal::now_ns;

// ---------------------------------------------------------------------------
// ExecutionHandle

bool ExecutionHandle::is_done() const noexcept {
  if (run_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(run_->mutex);
  return run_->done;
}

Result<TensorList> ExecutionHandle::wait() {
  if (run_ == nullptr)
    return Error(ErrorCode::kFailedPrecondition, ErrorStage::kNone, "expected a valid execution handle, found none");
  std::unique_lock<std::mutex> lock(run_->mutex);
  if (run_->consumed) {
    return Error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                 "expected an unobserved run, found one whose result wait() already returned");
  }
  run_->finished.wait(lock, [&] { return run_->done; });
  run_->consumed = true;
  if (!run_->status.ok()) return run_->status;
  return std::move(run_->outputs);
}

void ExecutionHandle::cancel() noexcept {
  if (run_ == nullptr) return;
  run_->cancelled.store(true, std::memory_order_release);
  std::shared_ptr<const PreparedProgram> prepared;
  {
    std::lock_guard<std::mutex> lock(run_->mutex);
    prepared = run_->prepared;
  }
  if (prepared != nullptr) prepared->state().config->arbiter().wake_waiters();
}

namespace {
void detach(const std::shared_ptr<internal::InFlightRun>& run) noexcept {
  if (run == nullptr) return;
  std::lock_guard<std::mutex> lock(run->mutex);
  run->attached.store(false, std::memory_order_release);
  if (run->done && !run->consumed && !run->status.ok()) run->metrics->record_detached_failure(run->status.error());
}
}  // namespace

ExecutionHandle& ExecutionHandle::operator=(ExecutionHandle&& other) noexcept {
  if (this != &other) {
    detach(run_);
    run_ = std::move(other.run_);
  }
  return *this;
}

ExecutionHandle::~ExecutionHandle() { detach(run_); }

// ---------------------------------------------------------------------------
// Submission executors

Status ManualSubmissionExecutor::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return Error(ErrorCode::kRuntimeStopped, ErrorStage::kEnqueue, "the submission executor is stopped");
  queue_.push_back(std::move(task));
  return ok_status();
}

void ManualSubmissionExecutor::shutdown() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  run_all();
}

std::size_t ManualSubmissionExecutor::run_all() {
  std::size_t ran = 0;
  for (;;) {
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(queue_);
    }
    if (batch.empty()) return ran;
    for (auto& task : batch) {
      task();
      ++ran;
    }
  }
}

std::size_t ManualSubmissionExecutor::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

namespace {

class ThreadSubmissionExecutor final : public SubmissionExecutor {
 public:
  ~ThreadSubmissionExecutor() override {
    bool idle = false;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->stop = true;
      idle = shared_->queue.empty() && !shared_->busy;
    }
    shared_->wake.notify_all();
    if (!worker_.joinable()) return;
    if (idle) {
      worker_.join();  // exits at once: nothing queued or running
    } else {
      worker_.detach();  // finishes the queue on its own (tasks own their state)
    }
  }

  Status post(std::function<void()> task) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->stop) return Error(ErrorCode::kRuntimeStopped, ErrorStage::kEnqueue, "the runtime is shut down");
    shared_->queue.push_back(std::move(task));
    if (!worker_.joinable()) {
      std::shared_ptr<Shared> shared = shared_;
      worker_ = std::thread([shared] { work(*shared); });
    }
    shared_->wake.notify_one();
    return ok_status();
  }

  void shutdown() noexcept override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->stop = true;
    }
    shared_->wake.notify_all();
    if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> queue;
    bool stop = false;
    bool busy = false;
  };

  static void work(Shared& shared) {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(shared.mutex);
        shared.wake.wait(lock, [&] { return shared.stop || !shared.queue.empty(); });
        if (shared.queue.empty()) return;  // stopped and drained
        task = std::move(shared.queue.front());
        shared.queue.pop_front();
        shared.busy = true;
      }
      task();
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.busy = false;
    }
  }

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread worker_;
};

}  // namespace

std::shared_ptr<SubmissionExecutor> make_thread_submission_executor() {
  return std::make_shared<ThreadSubmissionExecutor>();
}

// ---------------------------------------------------------------------------
// PreparedProgram

PreparedProgram::PreparedProgram(std::unique_ptr<internal::PreparedState> state) : state_(std::move(state)) {}
PreparedProgram::~PreparedProgram() = default;
RuntimeId PreparedProgram::runtime_id() const noexcept { return state_->runtime; }
std::uint64_t PreparedProgram::epoch() const noexcept { return state_->epoch; }
const program::SemanticFingerprint& PreparedProgram::fingerprint() const noexcept {
  return state_->program->fingerprint();
}
const std::shared_ptr<const program::SemanticProgram>& PreparedProgram::program() const noexcept {
  return state_->program;
}
const InputSignature& PreparedProgram::signature() const noexcept { return state_->signature; }
const PrepareOptions& PreparedProgram::options() const noexcept { return state_->options; }
std::size_t PreparedProgram::num_nodes() const noexcept { return state_->nodes.size(); }
std::size_t PreparedProgram::num_buffers() const noexcept { return state_->buffers.size(); }
std::size_t PreparedProgram::peak_memory_bytes() const noexcept { return state_->peak_bytes; }

ScheduledNodeInfo PreparedProgram::node(std::size_t index) const noexcept {
  const internal::NodeRecord& n = state_->nodes[index];
  ScheduledNodeInfo info;
  info.kind = n.kind;
  info.engine = state_->engines[n.engine]->id();
  if (n.source_engine != internal::kNoIndex) info.source_engine = state_->engines[n.source_engine]->id();
  info.name = n.name;
  info.provider = n.provider_name;
  info.dependencies = n.deps.span();
  return info;
}

std::size_t PreparedProgram::retained_bytes() const noexcept {
  const internal::PreparedState& s = *state_;
  return sizeof(internal::PreparedState) + s.nodes.size() * sizeof(internal::NodeRecord) +
         s.slots.size() * sizeof(internal::SlotInfo) + s.buffers.size() * sizeof(internal::BufferInfo) +
         s.workspace_bytes;
}

std::string PreparedProgram::explain() const { return internal::explain_prepared(*state_); }

// ---------------------------------------------------------------------------
// Runtime

RuntimeId Runtime::id() const noexcept { return state_->id; }
std::uint64_t Runtime::epoch() const noexcept { return state_->epoch.load(std::memory_order_acquire); }
std::shared_ptr<const RuntimeConfig> Runtime::config() const { return state_->snapshot(); }

Status Runtime::reconfigure(FunctionRef<Status(RuntimeConfigBuilder&)> edit) {
  internal::RuntimeState& s = *state_;
  std::lock_guard<std::mutex> serial(s.reconfigure_mutex);
  std::shared_ptr<const RuntimeConfig> current = s.snapshot();
  RuntimeConfigBuilder builder(*current);
  Status edited = [&]() -> Status {
    try {
      return edit(builder);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kConfiguration, "reconfiguration callback");
    }
  }();
  if (!edited.ok()) return edited.in_stage(ErrorStage::kConfiguration);
  const std::uint64_t next = current->epoch() + 1;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const RuntimeConfig> replacement, builder.build(s.id, next));
  {
    std::lock_guard<std::mutex> lock(s.config_mutex);
    s.config = replacement;
    s.epoch.store(next, std::memory_order_release);
  }
  s.plans.set_limits(replacement->policies().plan_cache);
  s.plans.erase_if([next](const internal::PreparedPlanKey& key) { return key.epoch != next; });
  return ok_status();
}

Result<std::shared_ptr<const PreparedProgram>> Runtime::prepare_for(
    const std::shared_ptr<const program::SemanticProgram>& program, const InputSignature& signature,
    const PrepareOptions& options) {
  for (std::size_t i = 0; i < signature.size(); ++i) {
    if (!signature.inputs()[i].defined) {
      return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                   fmt::format("input {}: expected a defined tensor in the signature, found an undefined one", i));
    }
  }
  return internal::prepare_cached(*state_, program, signature, options);
}

namespace {
Status check_plan_owner(const internal::RuntimeState& s, const PreparedProgram& prepared) {
  if (prepared.runtime_id() != s.id) {
    return make_error(ErrorCode::kRuntimeMismatch, ErrorStage::kEnqueue,
                      "expected a plan prepared by runtime {}, found one of runtime {}", s.id, prepared.runtime_id());
  }
  const std::uint64_t epoch = s.epoch.load(std::memory_order_acquire);
  if (prepared.epoch() != epoch) {
    return make_error(ErrorCode::kStalePreparedGraph, ErrorStage::kEnqueue,
                      "expected a plan of configuration epoch {}, found one of epoch {} (prepare it again)", epoch,
                      prepared.epoch());
  }
  return ok_status();
}
}  // namespace

Result<TensorList> Runtime::run_prepared(const PreparedProgram& prepared, std::span<const Tensor> inputs) {
  TENFERRO_TRY(check_plan_owner(*state_, prepared));
  return internal::execute_prepared(prepared, inputs, *state_->metrics, nullptr, 0);
}

Result<TensorList> Runtime::run(const std::shared_ptr<const program::SemanticProgram>& program,
                                std::span<const Tensor> inputs, const PrepareOptions& options) {
  return internal::run_program(*state_, program, inputs, options);
}

Result<TensorList> Runtime::run(const program::FrozenProgram& frozen, std::span<const Tensor> parameters,
                                const PrepareOptions& options) {
  if (frozen.program == nullptr)
    return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, "expected a program, found null");
  const program::ProgramBindings& bindings = frozen.bindings;
  if (bindings.num_inputs() == 0 || bindings.num_bound() == 0) return run(frozen.program, parameters, options);
  if (parameters.size() != bindings.parameters().size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                      "expected {} parameters (the program binds {} more inputs), found {}",
                      bindings.parameters().size(), bindings.num_bound(), parameters.size());
  }
  SmallVector<Tensor, 8> all;
  std::size_t next = 0;
  for (std::size_t i = 0; i < bindings.num_inputs(); ++i) {
    const Tensor* bound = bindings.bound_tensor(i);
    all.push_back(bound != nullptr ? *bound : parameters[next++]);
  }
  return run(frozen.program, std::span<const Tensor>(all.data(), all.size()), options);
}

Result<ExecutionHandle> Runtime::submit(const std::shared_ptr<const program::SemanticProgram>& program,
                                        std::span<const Tensor> inputs, const PrepareOptions& options) {
  if (state_->stopped.load(std::memory_order_acquire))
    return Error(ErrorCode::kRuntimeStopped, ErrorStage::kEnqueue, "the runtime is shut down");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      return Error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                   fmt::format("input {}: expected a defined tensor, found an undefined one", i));
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedProgram> prepared,
                            internal::prepare_cached(*state_, program, InputSignature::of(inputs), options));
  return submit_prepared(std::move(prepared), inputs);
}

Result<ExecutionHandle> Runtime::submit_prepared(std::shared_ptr<const PreparedProgram> prepared,
                                                 std::span<const Tensor> inputs) {
  internal::RuntimeState& s = *state_;
  if (s.stopped.load(std::memory_order_acquire))
    return Error(ErrorCode::kRuntimeStopped, ErrorStage::kEnqueue, "the runtime is shut down");
  if (prepared == nullptr)
    return Error(ErrorCode::kInvalidArgument, ErrorStage::kEnqueue, "expected a prepared program, found null");
  TENFERRO_TRY(check_plan_owner(s, *prepared));
  auto run = std::make_shared<internal::InFlightRun>();
  run->prepared = std::move(prepared);
  run->inputs.assign(inputs.begin(), inputs.end());
  run->metrics = s.metrics;
  run->tracker = s.inflight;
  s.inflight->begin();
  Status posted = s.submission->post([run] { run->execute(); });
  if (!posted.ok()) {
    s.inflight->end();
    return posted;
  }
  return ExecutionHandle(std::move(run));
}

Status Runtime::shutdown() {
  state_->stopped.store(true, std::memory_order_release);
  state_->submission->shutdown();
  state_->inflight->wait_idle();
  return ok_status();
}

EagerContext Runtime::on(Placement placement) const { return EagerContext(state_, placement); }

PlanCacheStats Runtime::plan_cache_stats() const { return state_->plans.stats(); }
void Runtime::clear_plan_cache() { state_->plans.clear(); }

namespace {

// Calls on_engine(entry, owner) and on_extension(registration, owner) once
// per distinct cache owner of `config`.
template <class OnEngine, class OnExtension>
void for_each_cache_owner(const RuntimeConfig& config, OnEngine&& on_engine, OnExtension&& on_extension) {
  std::vector<const CacheOwner*> seen;
  const auto first_time = [&](const CacheOwner* owner) {
    if (owner == nullptr || std::find(seen.begin(), seen.end(), owner) != seen.end()) return false;
    seen.push_back(owner);
    return true;
  };
  for (const EngineEntry& e : config.engines()) {
    if (first_time(e.registration.cache_owner.get())) on_engine(e, *e.registration.cache_owner);
  }
  for (const ExtensionRegistration& x : config.extensions()) {
    if (first_time(x.cache_owner.get())) on_extension(x, *x.cache_owner);
  }
}

}  // namespace

RuntimeCacheReport Runtime::cache_report() const {
  RuntimeCacheReport report;
  report.plans = state_->plans.stats();
  std::shared_ptr<const RuntimeConfig> config = state_->snapshot();
  for_each_cache_owner(
      *config,
      [&](const EngineEntry& e, const CacheOwner& owner) {
        report.engines.push_back(EngineCacheReport{e.id(), owner.usage()});
      },
      [&](const ExtensionRegistration& x, const CacheOwner& owner) {
        report.extensions.push_back(ExtensionCacheReport{x.family_id, x.engine, owner.usage()});
      });
  return report;
}

void Runtime::clear_caches() {
  state_->plans.clear();
  std::shared_ptr<const RuntimeConfig> config = state_->snapshot();
  for_each_cache_owner(
      *config, [](const EngineEntry&, CacheOwner& owner) { owner.clear(); },
      [](const ExtensionRegistration&, CacheOwner& owner) { owner.clear(); });
}

ExecutionMetrics Runtime::execution_metrics() const { return state_->metrics->snapshot(); }

// ---------------------------------------------------------------------------
// RuntimeBuilder

RuntimeBuilder& RuntimeBuilder::add_engine(EngineRegistration registration) {
  if (deferred_.ok()) deferred_ = config_.add_engine(std::move(registration));
  return *this;
}

RuntimeBuilder& RuntimeBuilder::add_extension_module(const ExtensionModule& module) {
  if (deferred_.ok()) deferred_ = config_.add_extension_module(module);
  return *this;
}

RuntimeBuilder& RuntimeBuilder::add_transfer(TransferRegistration registration) {
  if (deferred_.ok()) deferred_ = config_.add_transfer(std::move(registration));
  return *this;
}

RuntimeBuilder& RuntimeBuilder::add_collective(CollectiveRegistration registration) {
  if (deferred_.ok()) deferred_ = config_.add_collective(std::move(registration));
  return *this;
}

RuntimeBuilder& RuntimeBuilder::set_submission_executor(std::shared_ptr<SubmissionExecutor> executor) {
  submission_ = std::move(executor);
  return *this;
}

Result<Runtime> RuntimeBuilder::build() {
  TENFERRO_TRY(deferred_);
  const RuntimeId id(next_unique_id());
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const RuntimeConfig> config, config_.build(id, 1));
  std::shared_ptr<SubmissionExecutor> submission =
      submission_ != nullptr ? submission_ : make_thread_submission_executor();
  return Runtime(std::make_shared<internal::RuntimeState>(id, std::move(config), std::move(submission)));
}

}  // namespace tenferro::runtime
