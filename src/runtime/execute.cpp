// Executing a prepared program: run workspaces, run admission, node leases,
// event-domain runs, the enqueue loop with fail-fast, and drain.
//
// Note [Fail-fast execution]
// Before anything runs: the inputs are checked against the plan's
// signature, the run is admitted (memory from the buffer plan), escaping
// buffers are allocated, and one EventDomainRun is begun per event domain
// in first-use order. Then nodes are enqueued in schedule order; a node's
// resources are leased atomically just before its enqueue and released when
// it completes. The first failure (lease, allocation, enqueue, a returned
// token of the wrong origin, a host wait, a cancellation) becomes the
// primary error and nothing more is enqueued. Every begun run is then
// drained in first-use order, success or not; later failures are attached
// to the primary as suppressed errors. Outputs are collected only after the
// drain and only on success: there are no partial outputs. All storage,
// leases and runs are released before returning. A failed run then
// abandons the Collective nodes it did not reach (Note [Collective nodes]
// in spi/collective.h).
#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/runtime_state.h"
#include "runtime/scheduled_graph.h"

namespace tenferro::runtime::internal {

namespace {

Error enqueue_error(ErrorCode code, std::string message) {
  return Error(code, ErrorStage::kEnqueue, std::move(message));
}

bool layout_satisfies(LayoutClass actual, LayoutClass planned) noexcept {
  return static_cast<int>(actual) <= static_cast<int>(planned);
}

}  // namespace

// One node's work; lives in the workspace so async domains can run it
// after enqueue returned.
class NodeWork final : public EnqueuedWork {
 public:
  void bind(const NodeRecord* node, RunWorkspace* workspace) noexcept {
    node_ = node;
    workspace_ = workspace;
  }
  Status execute(ErasedExecutionContext context) noexcept override;

 private:
  const NodeRecord* node_ = nullptr;
  RunWorkspace* workspace_ = nullptr;
};

struct RunWorkspace {
  const PreparedState* state = nullptr;
  std::vector<Tensor> values;                         // per slot
  std::vector<StorageRef> storage;                    // per buffer (workspace buffers persist)
  std::vector<std::unique_ptr<EventDomainRun>> runs;  // per domain
  std::vector<CompletionToken> tokens;                // per node
  std::vector<ResourceLease> leases;                  // per node
  std::vector<NodeWork> works;                        // per node
  std::vector<std::uint32_t> outstanding;             // async nodes holding a lease
  std::size_t outstanding_head = 0;
};

WorkspacePool::WorkspacePool() = default;
WorkspacePool::~WorkspacePool() {
  for (List& list : lists_) delete list.hot.load(std::memory_order_acquire);
}

std::unique_ptr<RunWorkspace> WorkspacePool::take() {
  const std::size_t first = this_cpu_shard(kLists);
  for (std::size_t k = 0; k < kLists; ++k) {
    List& list = lists_[(first + k) % kLists];
    if (RunWorkspace* hot = list.hot.exchange(nullptr, std::memory_order_acq_rel)) {
      return std::unique_ptr<RunWorkspace>(hot);
    }
    std::lock_guard<std::mutex> lock(list.mutex);
    if (list.free.empty()) continue;
    std::unique_ptr<RunWorkspace> w = std::move(list.free.back());
    list.free.pop_back();
    return w;
  }
  return nullptr;
}

void WorkspacePool::give_back(std::unique_ptr<RunWorkspace> workspace) {
  List& list = lists_[this_cpu_shard(kLists)];
  RunWorkspace* empty = nullptr;
  if (list.hot.compare_exchange_strong(empty, workspace.get(), std::memory_order_acq_rel)) {
    workspace.release();  // the slot owns it
    return;
  }
  std::lock_guard<std::mutex> lock(list.mutex);
  list.free.push_back(std::move(workspace));
}

Status NodeWork::execute(ErasedExecutionContext context) noexcept {
  const NodeRecord& node = *node_;
  RunWorkspace& ws = *workspace_;
  try {
    SmallVector<TensorView, 4> inputs;
    for (std::uint32_t s : node.inputs) inputs.push_back(ws.values[s].view());
    std::span<std::byte> scratch;
    if (node.scratch_buffer != kNoIndex)
      scratch =
          std::span<std::byte>(static_cast<std::byte*>(ws.storage[node.scratch_buffer]->data()), node.scratch_bytes);
    switch (node.kind) {
      case ScheduledNodeKind::kOperation: {
        OperationRequest request;
        request.op = node.op;
        request.attributes = node.attributes;
        request.inputs = std::span<const TensorView>(inputs.data(), inputs.size());
        request.output = ws.values[node.outputs[0]].view();
        request.plan = node.plan.get();
        request.scratch = scratch;
        return node.provider->run(request, context);
      }
      case ScheduledNodeKind::kExtension: {
        SmallVector<TensorView, 2> outputs;
        for (std::uint32_t s : node.outputs) outputs.push_back(ws.values[s].view());
        ExtensionRequest request;
        request.op = node.extension_op;
        request.inputs = std::span<const TensorView>(inputs.data(), inputs.size());
        request.outputs = std::span<const TensorView>(outputs.data(), outputs.size());
        request.plan = node.plan.get();
        request.scratch = scratch;
        return node.extension->run(request, context);
      }
      case ScheduledNodeKind::kCopy:
        return node.layout->copy(inputs[0], ws.values[node.outputs[0]].view(), node.plan.get(), context);
      case ScheduledNodeKind::kTransfer: {
        TransferRequest request{inputs[0], ws.values[node.outputs[0]].view(), node.transfer_source,
                                node.transfer_destination};
        return node.transfer->transfer(request, context);
      }
      default:
        return Error(ErrorCode::kInternal, ErrorStage::kEnqueue, "non-enqueueable node enqueued");
    }
  } catch (...) {
    return status_from_current_exception(ErrorStage::kCompletion, node.provider_name);
  }
}

namespace {

// Creates a workspace: persistent buffers, their slot tensors, event-domain
// runs. Errors are enqueue-stage (allocation, missing driver, create_run).
Result<std::unique_ptr<RunWorkspace>> create_workspace(const PreparedState& st) {
  auto ws = std::make_unique<RunWorkspace>();
  ws->state = &st;
  ws->values.resize(st.slots.size());
  ws->storage.resize(st.buffers.size());
  ws->tokens.resize(st.nodes.size());
  ws->leases.resize(st.nodes.size());
  ws->works.resize(st.nodes.size());
  ws->outstanding.reserve(st.nodes.size());
  for (std::size_t n = 0; n < st.nodes.size(); ++n) ws->works[n].bind(&st.nodes[n], ws.get());
  for (std::size_t b = 0; b < st.buffers.size(); ++b) {
    const BufferInfo& buffer = st.buffers[b];
    if (buffer.per_run) continue;
    Result<StorageRef> storage = st.engines[buffer.engine]->allocator->allocate(buffer.bytes, buffer.placement);
    if (!storage.ok()) return storage.status().with_context("allocating a run workspace buffer", ErrorStage::kEnqueue);
    ws->storage[b] = std::move(*storage);
  }
  for (std::size_t s = 0; s < st.slots.size(); ++s) {
    const SlotInfo& slot = st.slots[s];
    if (slot.buffer == kNoIndex || st.buffers[slot.buffer].per_run) continue;
    TENFERRO_ASSIGN_OR_RETURN(ws->values[s],
                              Tensor::from_storage(ws->storage[slot.buffer], slot.dtype, slot.shape, slot.strides));
  }
  for (const DomainUse& d : st.domains) {
    const EngineEntry& engine = *st.engines[d.engine];
    if (engine.registration.event_driver == nullptr) {
      return event_domain_error(ErrorCode::kFailedPrecondition, ErrorStage::kEnqueue, d.id,
                                EventDomainOperation::kBeginRun,
                                fmt::format("engine {} ('{}') is preparation-only: it has no executor or event-domain "
                                            "driver",
                                            engine.id(), engine.metadata().name));
    }
    Result<std::unique_ptr<EventDomainRun>> run = [&]() -> Result<std::unique_ptr<EventDomainRun>> {
      try {
        return engine.registration.event_driver->create_run(d.id);
      } catch (...) {
        return status_from_current_exception(ErrorStage::kEnqueue, "event-domain driver create_run");
      }
    }();
    if (!run.ok()) return run.status().in_stage(ErrorStage::kEnqueue);
    ws->runs.push_back(std::move(*run));
  }
  return ws;
}

}  // namespace

Result<Tensor> apply_view_op(program::CoreSemanticOp op, const program::CoreAttributes& attributes, const Tensor& src,
                             IntArrayRef out_shape) {
  using program::CoreSemanticOp;
  switch (op) {
    case CoreSemanticOp::kTranspose:
      return src.permute(std::get<program::TransposeAttributes>(attributes).perm);
    case CoreSemanticOp::kReshape:
      return src.reshape(out_shape);
    case CoreSemanticOp::kSlice: {
      const auto& a = std::get<program::SliceAttributes>(attributes);
      Tensor t = src;
      for (std::size_t axis = 0; axis < a.start.size(); ++axis) {
        TENFERRO_ASSIGN_OR_RETURN(
            t, t.slice(static_cast<std::int64_t>(axis), a.start[axis], a.limit[axis], a.stride[axis]));
      }
      return t;
    }
    case CoreSemanticOp::kBroadcastInDim: {
      const auto& a = std::get<program::BroadcastInDimAttributes>(attributes);
      // Insert unit axes where the result has axes the operand lacks, then
      // broadcast (numpy rules) to the result shape.
      Tensor t = src;
      std::size_t k = 0;
      for (std::size_t axis = 0; axis < out_shape.size(); ++axis) {
        if (k < a.dims.size() && a.dims[k] == static_cast<std::int64_t>(axis)) {
          ++k;
          continue;
        }
        TENFERRO_ASSIGN_OR_RETURN(t, t.unsqueeze(static_cast<std::int64_t>(axis)));
      }
      return t.broadcast_to(out_shape);
    }
    default:
      return Error(ErrorCode::kInternal, ErrorStage::kNone, "not a view operation");
  }
}

namespace {

Status apply_view(const PreparedState& st, const NodeRecord& node, RunWorkspace& ws) {
  TENFERRO_ASSIGN_OR_RETURN(
      ws.values[node.outputs[0]],
      apply_view_op(node.op, *node.attributes, ws.values[node.inputs[0]], st.slots[node.outputs[0]].shape));
  return ok_status();
}

class RunExecution {
 public:
  RunExecution(const PreparedState& st, RunWorkspace& ws, MetricsState& metrics, const std::atomic<bool>* cancelled,
               std::size_t runtime_refs)
      : st_(st),
        ws_(ws),
        metrics_(metrics),
        cancelled_(cancelled),
        arbiter_(st.config->arbiter()),
        runtime_refs_(runtime_refs) {}

  Status run(std::span<const Tensor> inputs) {
    Status primary = start(inputs);
    std::uint32_t n = 0;
    const std::uint32_t count = static_cast<std::uint32_t>(st_.nodes.size());
    while (primary.ok() && n < count) {
      const NodeRecord& node = st_.nodes[n];
      if (node.kind == ScheduledNodeKind::kOperation || node.kind == ScheduledNodeKind::kExtension ||
          node.kind == ScheduledNodeKind::kCopy) {
        const std::uint32_t end = node.segment_end;
        EventDomainRun& run = *ws_.runs[node.domain];
        primary = run.run_segment(node.placement, [&]() -> Status {
          for (std::uint32_t k = n; k < end;) {
            const std::uint32_t group_end = st_.nodes[k].group_end;
            if (group_end > k + 1) {
              TENFERRO_TRY(process_group(k, group_end));
              k = group_end;
            } else {
              TENFERRO_TRY(process(k));
              ++k;
            }
          }
          return ok_status();
        });
        n = end;
      } else {
        primary = process(n);
        ++n;
      }
    }
    enqueue_end_ = now_ns();
    Status status = finish(std::move(primary));
    if (!status.ok()) abandon_collectives(st_, collective_resume_, status);
    return status;
  }

  std::uint64_t enqueue_end_ns() const { return enqueue_end_; }
  /// Every event-domain run completed its work at enqueue (CPU immediate).
  bool immediate() const { return immediate_; }
  std::uint64_t enqueued() const { return enqueued_; }

 private:
  bool cancelled() const { return cancelled_ != nullptr && cancelled_->load(std::memory_order_acquire); }

  Status start(std::span<const Tensor> inputs) {
    if (cancelled())
      return Error(ErrorCode::kCancelled, ErrorStage::kEnqueue, "the run was cancelled before it started");
    if (!st_.admission.empty()) {
      // Only a wait is timed: the uncontended grant costs no clock reads.
      if (!arbiter_.try_acquire(st_.admission)) {
        const std::uint64_t t = now_ns();
        TENFERRO_TRY(arbiter_.acquire(st_.admission, cancelled_));
        metrics_.add_stage(MetricsState::kAdmissionWait, now_ns() - t);
      }
      run_lease_ = ResourceLease(&arbiter_, st_.admission);
    }
    // Note [Borrowed run inputs].
    for (std::size_t i = 0; i < inputs.size(); ++i)
      tenferro::internal::TensorBorrow::borrow(ws_.values[st_.input_slots[i]], inputs[i]);
    // Donation: the output of an in-place capable node takes over a
    // Donatable input's storage when nobody but the caller's tensor and the
    // runtime's own references hold it (not shared, not viewed), it is
    // ready, ours and row-major dense. Otherwise the output is allocated.
    // (The input slot's borrowed copy holds no count.)
    for (std::size_t n = 0; n < st_.nodes.size(); ++n) {
      const NodeRecord& node = st_.nodes[n];
      if (node.donate_input == kNoIndex) continue;
      const Tensor& in = ws_.values[node.donate_input];
      const Storage& storage = *in.storage();
      if (storage.use_count() <= runtime_refs_ + 1 && storage.pending() == nullptr && in.is_contiguous() &&
          storage.storage_domain() == st_.engines[node.engine]->metadata().storage) {
        ws_.values[node.outputs[0]] = in;
        ++donations_;
      }
    }
    // Escaping buffers: allocated per run (unless donated).
    for (std::size_t b = 0; b < st_.buffers.size(); ++b) {
      const BufferInfo& buffer = st_.buffers[b];
      if (!buffer.per_run) continue;
      const std::uint32_t slot = buffer.occupants[0];
      if (ws_.values[slot].defined()) continue;  // donated
      Result<StorageRef> storage = st_.engines[buffer.engine]->allocator->allocate(buffer.bytes, buffer.placement);
      if (!storage.ok()) return storage.status().with_context("allocating a run output buffer", ErrorStage::kEnqueue);
      const SlotInfo& info = st_.slots[slot];
      TENFERRO_ASSIGN_OR_RETURN(ws_.values[slot],
                                Tensor::from_storage(std::move(*storage), info.dtype, info.shape, info.strides));
    }
    for (std::size_t d = 0; d < ws_.runs.size(); ++d) {
      EventDomainRun& run = *ws_.runs[d];
      if (run.domain() != st_.domains[d].id) {
        return event_domain_error(
            ErrorCode::kContractViolation, ErrorStage::kEnqueue, st_.domains[d].id, EventDomainOperation::kBeginRun,
            fmt::format("expected the run of this domain, found a run of domain {}", run.domain()));
      }
      Status s = run.begin();
      if (!s.ok()) return s.in_stage(ErrorStage::kEnqueue);
      ++begun_;
      immediate_ = immediate_ && run.completes_at_enqueue();
    }
    return ok_status();
  }

  // Waits on the host for node `dep`'s completion (transfer sources,
  // barriers).
  Status host_wait(std::uint32_t dep) {
    const CompletionToken token = ws_.tokens[dep];
    if (!token.valid()) return ok_status();  // a view or barrier: nothing to wait for
    EventDomainRun& run = *ws_.runs[st_.nodes[dep].domain];
    Status s = run.wait(token);
    if (!s.ok()) return s.in_stage(ErrorStage::kCompletion);
    return ok_status();
  }

  Status acquire_lease(std::uint32_t k) {
    const NodeRecord& node = st_.nodes[k];
    if (arbiter_.try_acquire(node.resources)) {
      ws_.leases[k] = ResourceLease(&arbiter_, node.resources);
      return ok_status();
    }
    const std::uint64_t t = now_ns();
    for (;;) {
      if (arbiter_.try_acquire(node.resources)) break;
      if (ws_.outstanding_head == ws_.outstanding.size()) {
        TENFERRO_TRY(arbiter_.acquire(node.resources, cancelled_));
        break;
      }
      // Retire our own oldest in-flight node first: we never wait for
      // resources we hold ourselves.
      const std::uint32_t j = ws_.outstanding[ws_.outstanding_head++];
      Status s = host_wait(j);
      ws_.leases[j].reset();
      TENFERRO_TRY(s);
    }
    ws_.leases[k] = ResourceLease(&arbiter_, node.resources);
    metrics_.add_stage(MetricsState::kAdmissionWait, now_ns() - t);
    return ok_status();
  }

  Status process(std::uint32_t k) {
    if (cancelled()) return Error(ErrorCode::kCancelled, ErrorStage::kEnqueue, "the run was cancelled");
    const NodeRecord& node = st_.nodes[k];
    switch (node.kind) {
      case ScheduledNodeKind::kView:
        return apply_view(st_, node, ws_);
      case ScheduledNodeKind::kBarrier:
        for (std::uint32_t d : node.deps) TENFERRO_TRY(host_wait(d));
        return ok_status();
      case ScheduledNodeKind::kCollective:
        return run_collective(k);
      default:
        break;
    }
    SmallVector<CompletionToken, 4> deps;
    TENFERRO_TRY(gather_dependencies(node, deps));
    if (!node.resources.empty()) TENFERRO_TRY(acquire_lease(k));
    EventDomainRun& run = *ws_.runs[node.domain];
    const EventDomainId expected = st_.domains[node.domain].id;
    if (run.domain() != expected) {
      ws_.leases[k].reset();
      return wrong_run(expected, run);
    }
    EnqueueRequest request;
    request.dependencies = std::span<const CompletionToken>(deps.data(), deps.size());
    request.work = &ws_.works[k];
    request.placement = node.placement;
    request.node = k;
    Result<CompletionToken> token = run.enqueue(request);
    if (!token.ok()) {
      ws_.leases[k].reset();
      return token.status().in_stage(ErrorStage::kEnqueue);
    }
    ++enqueued_;
    if (node.kind == ScheduledNodeKind::kTransfer) ++transfers_;
    if (token->origin != expected) {
      // The work launched; the token is not recorded and nothing downstream
      // may launch.
      return foreign_token(expected, *token);
    }
    ws_.tokens[k] = *token;
    if (ws_.leases[k].held()) {
      if (run.completes_at_enqueue()) {
        ws_.leases[k].reset();
      } else {
        ws_.outstanding.push_back(k);
      }
    }
    return ok_status();
  }

  // A Collective node (Note [Collective nodes] in spi/collective.h): on
  // this thread, once its producers completed, under its node lease. It
  // records no completion token: it has completed when it returns.
  Status run_collective(std::uint32_t k) {
    const NodeRecord& node = st_.nodes[k];
    for (std::uint32_t d : node.deps) TENFERRO_TRY(host_wait(d));
    if (!node.resources.empty()) TENFERRO_TRY(acquire_lease(k));
    CollectiveRequest request;
    request.op = node.collective_op;
    request.input = ws_.values[node.inputs[0]].view();
    request.output = ws_.values[node.outputs[0]].view();
    request.plan = node.plan.get();
    collective_resume_ = k + 1;  // from here on the provider has taken part
    Status status;
    try {
      status = node.collective->run(request);
    } catch (...) {
      status = status_from_current_exception(ErrorStage::kCompletion, node.provider_name);
    }
    ws_.leases[k].reset();
    ++collectives_;
    if (!status.ok()) return status.in_stage(ErrorStage::kCompletion);
    return ok_status();
  }

  // The nodes [first, end) of a concurrent group (Note [Concurrent
  // groups]): operation or extension nodes of one domain without leases,
  // none depending on another.
  Status process_group(std::uint32_t first, std::uint32_t end) {
    if (cancelled()) return Error(ErrorCode::kCancelled, ErrorStage::kEnqueue, "the run was cancelled");
    const std::uint32_t size = end - first;
    SmallVector<CompletionToken, 16> deps;
    std::array<std::size_t, kMaxConcurrentGroup + 1> offsets{};
    for (std::uint32_t i = 0; i < size; ++i) {
      offsets[i] = deps.size();
      TENFERRO_TRY(gather_dependencies(st_.nodes[first + i], deps));
    }
    offsets[size] = deps.size();
    const NodeRecord& node = st_.nodes[first];
    EventDomainRun& run = *ws_.runs[node.domain];
    const EventDomainId expected = st_.domains[node.domain].id;
    if (run.domain() != expected) return wrong_run(expected, run);
    std::array<EnqueueRequest, kMaxConcurrentGroup> requests;
    std::array<CompletionToken, kMaxConcurrentGroup> tokens{};
    for (std::uint32_t i = 0; i < size; ++i) {
      requests[i].dependencies =
          std::span<const CompletionToken>(deps.data() + offsets[i], offsets[i + 1] - offsets[i]);
      requests[i].work = &ws_.works[first + i];
      requests[i].placement = st_.nodes[first + i].placement;
      requests[i].node = first + i;
    }
    ++groups_;
    const Status status = run.enqueue_group(std::span<const EnqueueRequest>(requests.data(), size),
                                            std::span<CompletionToken>(tokens.data(), size));
    for (std::uint32_t i = 0; i < size; ++i) {
      if (!tokens[i].valid()) continue;
      ++enqueued_;
      if (tokens[i].origin != expected) return foreign_token(expected, tokens[i]);
      ws_.tokens[first + i] = tokens[i];
    }
    return status.in_stage(ErrorStage::kEnqueue);
  }

  // Appends the tokens of `node`'s same-domain dependencies to `deps`;
  // waits on the host for the others (transfer sources, barriers).
  template <std::size_t N>
  Status gather_dependencies(const NodeRecord& node, SmallVector<CompletionToken, N>& deps) {
    for (std::uint32_t d : node.deps) {
      if (st_.nodes[d].domain == node.domain) {
        if (ws_.tokens[d].valid()) deps.push_back(ws_.tokens[d]);
        continue;
      }
      // Only transfers (source side) and barriers cross domains.
      Status s = host_wait(d);
      if (!s.ok()) {
        return node.kind == ScheduledNodeKind::kTransfer
                   ? Status(s.error().with_cause(event_domain_error(
                         s.code(), ErrorStage::kCompletion, st_.domains[st_.nodes[d].domain].id,
                         EventDomainOperation::kTransferBridge, "waiting for the transfer source failed")))
                   : s;
      }
    }
    return ok_status();
  }

  static Error wrong_run(EventDomainId expected, const EventDomainRun& run) {
    return event_domain_error(ErrorCode::kContractViolation, ErrorStage::kEnqueue, expected,
                              EventDomainOperation::kEnqueue,
                              fmt::format("expected the run of this domain, found one of domain {}", run.domain()));
  }

  static Error foreign_token(EventDomainId expected, CompletionToken token) {
    return event_domain_error(
        ErrorCode::kContractViolation, ErrorStage::kEnqueue, expected, EventDomainOperation::kValidateCompletion,
        fmt::format("expected a completion of this domain, found one of domain {}", token.origin));
  }

  Status finish(Status primary) {
    for (std::size_t d = 0; d < begun_; ++d) {
      Status s = ws_.runs[d]->drain();
      if (s.ok()) continue;
      s = s.in_stage(ErrorStage::kCompletion);
      if (primary.ok()) {
        primary = s;
      } else {
        primary = primary.error().with_suppressed(s.error());
      }
    }
    for (ResourceLease& lease : ws_.leases) lease.reset();
    run_lease_.reset();
    ws_.outstanding.clear();
    ws_.outstanding_head = 0;
    return primary;
  }

 public:
  std::uint64_t donations_ = 0;
  std::uint64_t transfers_ = 0;
  std::uint64_t groups_ = 0;
  std::uint64_t collectives_ = 0;

 private:
  const PreparedState& st_;
  RunWorkspace& ws_;
  MetricsState& metrics_;
  const std::atomic<bool>* cancelled_;
  ResourceArbiter& arbiter_;
  ResourceLease run_lease_;
  std::size_t begun_ = 0;
  // The first Collective node whose provider this run has not called.
  std::uint32_t collective_resume_ = 0;
  std::uint64_t enqueued_ = 0;
  std::size_t runtime_refs_;
  std::uint64_t enqueue_end_ = 0;
  bool immediate_ = true;
};

// Note [Borrowed run inputs]
// A run used to copy each input Tensor into its workspace slot and drop the
// copy at the end: an increment and a decrement of the input storage's
// count. Threads running programs over the same input tensors (one set of
// network tensors contracted from several threads, each with its own
// runtime and plan even) then all wrote that one count: two threads ran
// 0.83-0.87x the calls of one (the concurrency audit; perf: a fifth of the
// time in Storage::release), against 2.0x with private copies of the inputs. The
// input slots now hold borrowed copies (internal::TensorBorrow) that own no
// count: the caller's tensors outlive the run (every domain is drained
// before it returns), nothing writes an input slot, and whatever keeps an
// input past the run (an output that is an input or a view of one, a
// donated buffer) copies the slot, which counts as usual. The run forgets
// the slots in reset_workspace, on success and on failure alike.

// Drops per-run references (inputs, views, escaping buffers, tokens) so the
// workspace retains only its own buffers.
void reset_workspace(const PreparedState& st, RunWorkspace& ws) {
  for (std::uint32_t s : st.input_slots) tenferro::internal::TensorBorrow::forget(ws.values[s]);  // then reset below
  for (std::size_t s = 0; s < st.slots.size(); ++s) {
    const SlotInfo& slot = st.slots[s];
    if (slot.buffer == kNoIndex || st.buffers[slot.buffer].per_run) ws.values[s] = Tensor();
  }
  std::fill(ws.tokens.begin(), ws.tokens.end(), CompletionToken{});
}

Status check_inputs(const PreparedState& st, std::span<const Tensor> inputs) {
  if (inputs.size() != st.input_slots.size()) {
    return enqueue_error(ErrorCode::kInvalidArgument, fmt::format("expected {} inputs for this prepared program, "
                                                                  "found {}",
                                                                  st.input_slots.size(), inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const InputDescriptor& d = st.signature.inputs()[i];
    if (!t.defined()) return enqueue_error(ErrorCode::kInvalidArgument, fmt::format("input {} is undefined", i));
    if (t.dtype() != d.dtype) {
      return enqueue_error(ErrorCode::kDTypeMismatch,
                           fmt::format("input {}: expected dtype {}, found {}", i, d.dtype, t.dtype()));
    }
    if (!(IntArrayRef(t.shape()) == IntArrayRef(d.shape))) {
      return enqueue_error(ErrorCode::kShapeMismatch,
                           fmt::format("input {}: expected shape {}, found {}", i, shape_to_string(d.shape),
                                       shape_to_string(t.shape())));
    }
    if (t.storage()->storage_domain() != d.storage) {
      return enqueue_error(ErrorCode::kInvalidArgument, fmt::format("input {}: expected storage domain {}, found {}", i,
                                                                    d.storage, t.storage()->storage_domain()));
    }
    if (!layout_satisfies(layout_class_of(t), d.layout)) {
      return enqueue_error(
          ErrorCode::kInvalidArgument,
          fmt::format("input {}: the plan expects a {} layout, found a {} one (strides [{}]); "
                      "prepare with InputDescriptor::layout = LayoutClass::kStrided to accept any "
                      "strides, or pass a contiguous copy",
                      i, to_string(d.layout), to_string(layout_class_of(t)), fmt::join(t.strides(), ", ")));
    }
  }
  return ok_status();
}

}  // namespace

Result<TensorList> execute_prepared(const PreparedProgram& prepared, std::span<const Tensor> inputs,
                                    MetricsState& metrics, const std::atomic<bool>* cancelled,
                                    std::size_t runtime_refs) {
  const PreparedState& st = prepared.state();
  const std::uint64_t t0 = now_ns();
  if (Status checked = check_inputs(st, inputs); !checked.ok()) {
    abandon_collectives(st, 0, checked);
    return checked;
  }
  std::unique_ptr<RunWorkspace> ws = st.pool.take();
  if (ws == nullptr) {
    Result<std::unique_ptr<RunWorkspace>> created = create_workspace(st);
    if (!created.ok()) {
      metrics.add(MetricsState::kFailedRuns, 1);
      abandon_collectives(st, 0, created.status());
      return created.status();
    }
    ws = std::move(*created);
  }

  // Input checks, workspace, admission and the enqueue loop count as
  // `enqueue`; draining as `completion`. Two clock reads per run when every
  // domain completes at enqueue (its completion counts 0 ns), three
  // otherwise: a read cost about 30 ns on a kvm-clock VM.
  RunExecution execution(st, *ws, metrics, cancelled, runtime_refs);
  Status status = execution.run(inputs);
  {
    using M = MetricsState;
    const M::Local local = metrics.values.local();  // one CPU lookup for the run's counts
    M::add_stage(local, M::kEnqueue, execution.enqueue_end_ns() - t0);
    const std::uint64_t end = execution.immediate() ? execution.enqueue_end_ns() : now_ns();
    M::add_stage(local, M::kCompletion, end - execution.enqueue_end_ns());
    M::add(local, M::kRuns, 1);
    M::add(local, M::kNodesEnqueued, execution.enqueued());
    M::add(local, M::kGroupsEnqueued, execution.groups_);
    M::add(local, M::kTransfers, execution.transfers_);
    M::add(local, M::kCollectives, execution.collectives_);
    M::add(local, M::kDonations, execution.donations_);
  }

  TensorList outputs;
  if (status.ok()) {
    for (std::uint32_t s : st.output_slots) outputs.push_back(ws->values[s]);
  } else {
    metrics.add(MetricsState::kFailedRuns, 1);
    if (status.code() == ErrorCode::kCancelled) metrics.add(MetricsState::kCancelledRuns, 1);
  }
  reset_workspace(st, *ws);
  // A failed run's workspace is dropped: its event-domain runs may not be
  // reusable after a failure (they were drained; destruction retires them).
  if (status.ok()) st.pool.give_back(std::move(ws));
  if (!status.ok()) return status;
  return outputs;
}

}  // namespace tenferro::runtime::internal
