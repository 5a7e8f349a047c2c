// Test-only mock engines for the runtime unit tests: real float64
// arithmetic over strided TensorViews, configurable capabilities and fault
// injection (prepare, allocation, enqueue, completion, transfer), counting
// executors, event drivers (immediate or deferred-to-drain) and allocators
// that can live in a non-host storage class.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/extension.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/runtime/spi/transfer.h"

namespace tenferro::runtime::testing {

/// The storage domain of the mock "device" engine in transfer tests.
inline constexpr StorageDomainId kDevice{7};

using program::CoreSemanticOp;

/// Calls f(offset_a, offset_b, ...) style: visits every multi-index of
/// `shape` and reports the element offsets in each view (strides).
template <class F>
void for_each_offset(std::span<const std::int64_t> shape, std::span<const TensorView> views, F&& f) {
  const std::size_t rank = shape.size();
  std::int64_t total = 1;
  for (std::int64_t e : shape) total *= e;
  // Inline storage: the mock kernels allocate nothing per call (the eager
  // allocation test counts every operator new of this binary).
  SmallVector<std::int64_t, 8> index(rank, 0);
  SmallVector<std::int64_t, 8> offsets(views.size(), 0);
  for (std::int64_t n = 0; n < total; ++n) {
    f(offsets);
    for (std::size_t axis = rank; axis-- > 0;) {
      ++index[axis];
      for (std::size_t v = 0; v < views.size(); ++v) offsets[v] += views[v].strides[axis];
      if (index[axis] < shape[axis]) break;
      for (std::size_t v = 0; v < views.size(); ++v) offsets[v] -= views[v].strides[axis] * shape[axis];
      index[axis] = 0;
    }
  }
}

/// Copies every element of `src` into `dst` (same shape, dtype float64).
inline void strided_copy(const TensorView& src, const TensorView& dst) {
  const TensorView views[2] = {src, dst};
  const std::size_t size = dtype_size(src.dtype);
  for_each_offset(src.shape, views, [&](const SmallVector<std::int64_t, 8>& o) {
    std::memcpy(static_cast<char*>(dst.data) + o[1] * static_cast<std::int64_t>(size),
                static_cast<const char*>(src.data) + o[0] * static_cast<std::int64_t>(size), size);
  });
}

/// Fault injection and behaviour switches shared by a mock engine's slots.
struct MockBehaviour {
  std::set<CoreSemanticOp> unsupported;  ///< answered kUnsupported at prepare
  Status prepare_error;                  ///< returned by every prepare when set
  /// NeedsSpecialization answers given before Prepared, in order.
  std::vector<program::SpecializationRequirements> specialization_script;
  bool reproducible = true;
  bool in_place_ok = false;
  std::size_t scratch_bytes = 0;
  SmallVector<ResourceAmount, 2> resources;
  /// PreparedKernel::work per op (absent: 0, unknown).
  std::map<CoreSemanticOp, double> work;
  int fail_run_at = -1;  ///< the n-th run (0-based, all slots) fails with kInternal
  /// Always answers NeedsSpecialization with what was already granted (a
  /// contract violation the runtime must reject).
  bool repeat_specialization = false;
  /// Called at the start of every run (e.g. to cancel from inside a kernel).
  std::function<void()> on_run;
  std::atomic<int> prepares{0};
  std::atomic<int> runs{0};
  std::atomic<int> wrong_context{0};
  std::atomic<int> wrong_scratch{0};  ///< runs whose scratch span had the wrong size
  ExecutionContextTypeId expected_context = ExecutionContextTypeId::of<NoExecutionContext>();
};

/// Elementwise (neg, exp, add, sub, mul, div, max, min), reduce_sum, and
/// dot_general (2-D or batched matmul) on float64, plus layout copies.
class MockProvider final : public ElementwiseRuntime {
 public:
  MockProvider(std::string name, std::shared_ptr<MockBehaviour> behaviour)
      : name_(std::move(name)), behaviour_(std::move(behaviour)) {}

  std::string_view name() const noexcept override { return name_; }
  bool reproducible() const noexcept override { return behaviour_->reproducible; }

  Result<PrepareCapability> prepare(const OperationSignature& sig) const override {
    MockBehaviour& b = *behaviour_;
    const int n = b.prepares.fetch_add(1);
    (void)n;
    if (!b.prepare_error.ok()) return b.prepare_error;
    if (b.unsupported.count(sig.op) != 0) return PrepareCapability::unsupported("disabled in this test");
    switch (sig.op) {
      case CoreSemanticOp::kNeg:
      case CoreSemanticOp::kExp:
      case CoreSemanticOp::kAdd:
      case CoreSemanticOp::kSub:
      case CoreSemanticOp::kMul:
      case CoreSemanticOp::kDiv:
      case CoreSemanticOp::kMax:
      case CoreSemanticOp::kMin:
      case CoreSemanticOp::kReduceSum:
        break;
      case CoreSemanticOp::kDotGeneral: {
        // Only [..., m, k] x [..., k, n] with leading batch axes.
        const auto& d = std::get<program::DotGeneralAttributes>(*sig.attributes);
        const std::int64_t batch = static_cast<std::int64_t>(d.lhs_batch.size());
        bool standard = d.lhs_contract.size() == 1 && d.lhs_contract[0] == batch + 1 && d.rhs_contract[0] == batch &&
                        sig.operands[0].rank == batch + 2 && sig.operands[1].rank == batch + 2;
        for (std::int64_t i = 0; i < batch; ++i) standard = standard && d.lhs_batch[i] == i && d.rhs_batch[i] == i;
        if (!standard) return PrepareCapability::unsupported("the mock multiplies [..., m, k] x [..., k, n] only");
        break;
      }
      default:
        return PrepareCapability::unsupported("the mock does not implement this op");
    }
    for (const OperandSignature& o : sig.operands)
      if (o.dtype != DType::kFloat64) return PrepareCapability::unsupported("float64 only");
    if (b.repeat_specialization) return PrepareCapability::needs_specialization(sig.granted);
    for (const program::SpecializationRequirements& r : b.specialization_script)
      if (!sig.granted.contains(r)) return PrepareCapability::needs_specialization(r);
    PreparedKernel k;
    k.reproducible = b.reproducible;
    k.in_place_ok = b.in_place_ok;
    k.scratch_bytes = b.scratch_bytes;
    k.resources = b.resources;
    if (auto it = b.work.find(sig.op); it != b.work.end()) k.work = it->second;
    return PrepareCapability::prepared(std::move(k));
  }

  Status run(const OperationRequest& r, ErasedExecutionContext context) const override {
    MockBehaviour& b = *behaviour_;
    if (context.type() != b.expected_context) ++b.wrong_context;
    if (r.plan == nullptr && r.scratch.empty()) {
      // An eager call without a plan: no runtime scratch is expected.
    } else if (r.scratch.size() != b.scratch_bytes) {
      ++b.wrong_scratch;
    }
    const int n = b.runs.fetch_add(1);
    if (b.on_run) b.on_run();
    if (n == b.fail_run_at) return Error(ErrorCode::kInternal, ErrorStage::kNone, "injected kernel failure");
    return compute(r);
  }

  static Status compute(const OperationRequest& r) {
    auto* out = static_cast<double*>(r.output.data);
    if (r.op == CoreSemanticOp::kDotGeneral) return matmul(r);
    if (r.op == CoreSemanticOp::kReduceSum) {
      const auto& axes = r.attributes_as<program::ReduceAttributes>().axes;
      const TensorView& x = r.inputs[0];
      const std::int64_t total = r.output.numel();
      for (std::int64_t i = 0; i < total; ++i) out[i] = 0;
      const TensorView views[1] = {x};
      SmallVector<std::int64_t, 8> index(x.shape.size(), 0);
      for_each_offset(x.shape, views, [&](const SmallVector<std::int64_t, 8>& o) {
        std::int64_t dst = 0;
        for (std::size_t a = 0; a < x.shape.size(); ++a) {
          if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) != axes.end()) continue;
          dst = dst * x.shape[a] + index[a];
        }
        out[dst] += static_cast<const double*>(x.data)[o[0]];
        for (std::size_t a = x.shape.size(); a-- > 0;) {
          if (++index[a] < x.shape[a]) break;
          index[a] = 0;
        }
      });
      return ok_status();
    }
    SmallVector<TensorView, 4> views(r.inputs.begin(), r.inputs.end());
    views.push_back(r.output);
    for_each_offset(r.output.shape, std::span<const TensorView>(views.data(), views.size()),
                    [&](const SmallVector<std::int64_t, 8>& o) {
                      const auto in = [&](std::size_t i) { return static_cast<const double*>(r.inputs[i].data)[o[i]]; };
                      double& y = out[o[r.inputs.size()]];
                      switch (r.op) {
                        case CoreSemanticOp::kNeg:
                          y = -in(0);
                          break;
                        case CoreSemanticOp::kExp:
                          y = std::exp(in(0));
                          break;
                        case CoreSemanticOp::kAdd:
                          y = in(0) + in(1);
                          break;
                        case CoreSemanticOp::kSub:
                          y = in(0) - in(1);
                          break;
                        case CoreSemanticOp::kMul:
                          y = in(0) * in(1);
                          break;
                        case CoreSemanticOp::kDiv:
                          y = in(0) / in(1);
                          break;
                        case CoreSemanticOp::kMax:
                          y = std::max(in(0), in(1));
                          break;
                        case CoreSemanticOp::kMin:
                          y = std::min(in(0), in(1));
                          break;
                        default:
                          y = 0;
                          break;
                      }
                    });
    return ok_status();
  }

  // Batched matmul: lhs [..., m, k], rhs [..., k, n] (batch dims first).
  static Status matmul(const OperationRequest& r) {
    const TensorView& a = r.inputs[0];
    const TensorView& b = r.inputs[1];
    const auto& d = r.attributes_as<program::DotGeneralAttributes>();
    const std::size_t batch = d.lhs_batch.size();
    if (a.rank() != static_cast<std::int64_t>(batch) + 2 || b.rank() != static_cast<std::int64_t>(batch) + 2)
      return Error(ErrorCode::kUnsupported, ErrorStage::kNone, "mock matmul handles [..., m, k] x [..., k, n] only");
    std::int64_t batches = 1;
    for (std::size_t i = 0; i < batch; ++i) batches *= a.shape[i];
    const std::int64_t m = a.shape[batch], k = a.shape[batch + 1], n = b.shape[batch + 1];
    auto* out = static_cast<double*>(r.output.data);
    for (std::int64_t p = 0; p < batches; ++p) {
      std::int64_t ao = 0, bo = 0, rem = p;
      for (std::size_t i = batch; i-- > 0;) {
        ao += (rem % a.shape[i]) * a.strides[i];
        bo += (rem % a.shape[i]) * b.strides[i];
        rem /= a.shape[i];
      }
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (std::int64_t q = 0; q < k; ++q)
            s += static_cast<const double*>(a.data)[ao + i * a.strides[batch] + q * a.strides[batch + 1]] *
                 static_cast<const double*>(b.data)[bo + q * b.strides[batch] + j * b.strides[batch + 1]];
          out[(p * m + i) * n + j] = s;
        }
    }
    return ok_status();
  }

 private:
  std::string name_;
  std::shared_ptr<MockBehaviour> behaviour_;
};

/// Adapters so one MockProvider serves several typed slots.
template <class Family>
class MockFamily final : public Family {
 public:
  explicit MockFamily(std::shared_ptr<MockProvider> impl) : impl_(std::move(impl)) {}
  std::string_view name() const noexcept override { return impl_->name(); }
  bool reproducible() const noexcept override { return impl_->reproducible(); }
  Result<PrepareCapability> prepare(const OperationSignature& sig) const override { return impl_->prepare(sig); }
  Status run(const OperationRequest& r, ErasedExecutionContext c) const override { return impl_->run(r, c); }

 private:
  std::shared_ptr<MockProvider> impl_;
};

class MockLayout final : public LayoutRuntime {
 public:
  std::string_view name() const noexcept override { return "mock.layout"; }
  Result<PrepareCapability> prepare_copy(const OperandSignature&, const OperandSignature&,
                                         ResolvedPlacement) const override {
    return PrepareCapability::prepared(PreparedKernel{nullptr, true});
  }
  Status copy(const TensorView& src, const TensorView& dst, const ProviderPlan*,
              ErasedExecutionContext) const override {
    ++copies;
    strided_copy(src, dst);
    return ok_status();
  }
  mutable std::atomic<int> copies{0};
};

/// Counts entries; runs work inline with a NoExecutionContext.
class CountingExecutor final : public EngineExecutor {
 public:
  ExecutionContextTypeId context_type() const noexcept override {
    return ExecutionContextTypeId::of<NoExecutionContext>();
  }
  Status enter(ResolvedPlacement placement, FunctionRef<Status(ErasedExecutionContext)> body) noexcept override {
    ++enters;
    last_domain = placement.domain;
    NoExecutionContext context;
    return body(ErasedExecutionContext::of(context));
  }
  std::atomic<int> enters{0};
  std::atomic<std::uint64_t> last_domain{0};
};

/// An allocator of host memory labelled with any storage domain; counts live
/// blocks; can fail from the n-th allocation on.
class MockAllocator final : public EngineAllocator {
 public:
  explicit MockAllocator(StorageDomainId storage) : storage_(storage) {}

  Result<StorageRef> allocate(std::size_t nbytes, ResolvedPlacement placement) noexcept override {
    const int n = allocations.fetch_add(1);
    if (fail_from >= 0 && n >= fail_from)
      return Error(ErrorCode::kResourceExhausted, ErrorStage::kNone, "injected allocation failure");
    void* data = std::aligned_alloc(64, std::max<std::size_t>(64, (nbytes + 63) / 64 * 64));
    ++live;
    StorageDescriptor d;
    d.storage_domain = storage_;
    d.allocation_domain = AllocationDomainId(900 + storage_.value());
    d.affinity = MemoryAffinity::cpu_domain(CpuDomainId(placement.domain));
    return Storage::wrap(data, nbytes, d, owner_);
  }

  std::atomic<int> allocations{0};
  std::atomic<int> live{0};
  int fail_from = -1;

 private:
  struct Owner final : StorageOwner {
    explicit Owner(std::atomic<int>* live) : live_(live) {}
    void reclaim(void* data, std::size_t) noexcept override {
      std::free(data);
      --*live_;
    }
    std::atomic<int>* live_;
  };
  StorageDomainId storage_;
  std::shared_ptr<Owner> owner_ = std::make_shared<Owner>(&live);
};

/// Event driver: immediate (work inside enqueue) or deferred (work runs at
/// wait/drain, in order). Fault injection per operation; counts calls.
struct MockDriverControl {
  bool deferred = false;
  int fail_begin = 0;         ///< begin() fails when non-zero
  int fail_enqueue_at = -1;   ///< the n-th enqueue (0-based) fails without launching
  bool wrong_origin = false;  ///< enqueue returns a token of another domain
  bool fail_drain = false;    ///< drain reports a failure after retiring
  std::atomic<int> begins{0}, enqueues{0}, drains{0}, segments{0}, runs_created{0}, runs_destroyed{0};
  std::atomic<int> executed{0};
};

class MockRun final : public EventDomainRun {
 public:
  MockRun(EventDomainId domain, std::shared_ptr<EngineExecutor> executor, std::shared_ptr<MockDriverControl> control)
      : domain_(domain), executor_(std::move(executor)), control_(std::move(control)) {
    ++control_->runs_created;
  }
  ~MockRun() override {
    (void)retire();
    ++control_->runs_destroyed;
  }
  EventDomainId domain() const noexcept override { return domain_; }
  Status begin() noexcept override {
    ++control_->begins;
    if (control_->fail_begin != 0)
      return event_domain_error(ErrorCode::kUnavailable, ErrorStage::kEnqueue, domain_, EventDomainOperation::kBeginRun,
                                "injected begin failure");
    sequence_ = 0;
    return ok_status();
  }
  Result<CompletionToken> enqueue(const EnqueueRequest& request) noexcept override {
    const int n = control_->enqueues.fetch_add(1);
    if (n == control_->fail_enqueue_at)
      return event_domain_error(ErrorCode::kUnavailable, ErrorStage::kEnqueue, domain_, EventDomainOperation::kEnqueue,
                                "injected enqueue failure");
    for (const CompletionToken& t : request.dependencies)
      if (t.origin != domain_)
        return event_domain_error(ErrorCode::kContractViolation, ErrorStage::kEnqueue, domain_,
                                  EventDomainOperation::kEnqueue, "foreign dependency");
    const CompletionToken token{control_->wrong_origin ? EventDomainId(424242) : domain_, ++sequence_};
    if (control_->deferred) {
      pending_.push_back({request.work, request.placement});
      return token;
    }
    Status s = executor_->enter(request.placement, [&](ErasedExecutionContext c) { return request.work->execute(c); });
    ++control_->executed;
    if (!s.ok()) return s.in_stage(ErrorStage::kCompletion);
    return token;
  }
  Status wait(CompletionToken token) noexcept override {
    // Deferred: run everything up to the token.
    Status first;
    while (next_ < token.sequence && next_ < pending_.size()) {
      Status s = run_next();
      if (first.ok() && !s.ok()) first = s;
    }
    return first;
  }
  Status drain() noexcept override {
    ++control_->drains;
    Status s = retire();
    if (s.ok() && control_->fail_drain)
      s = event_domain_error(ErrorCode::kDataLoss, ErrorStage::kCompletion, domain_, EventDomainOperation::kDrain,
                             "injected drain failure");
    return s;
  }
  bool completes_at_enqueue() const noexcept override { return !control_->deferred; }
  Status run_segment(ResolvedPlacement placement, FunctionRef<Status()> body) noexcept override {
    ++control_->segments;
    (void)placement;
    return body();
  }

 private:
  struct Pending {
    EnqueuedWork* work;
    ResolvedPlacement placement;
  };
  Status run_next() {
    Pending p = pending_[next_++];
    Status s = executor_->enter(p.placement, [&](ErasedExecutionContext c) { return p.work->execute(c); });
    ++control_->executed;
    return s.in_stage(ErrorStage::kCompletion);
  }
  Status retire() {
    Status first;
    while (next_ < pending_.size()) {
      Status s = run_next();
      if (first.ok() && !s.ok()) first = s;
    }
    pending_.clear();
    next_ = 0;
    return first;
  }

  EventDomainId domain_;
  std::shared_ptr<EngineExecutor> executor_;
  std::shared_ptr<MockDriverControl> control_;
  std::uint64_t sequence_ = 0;
  std::vector<Pending> pending_;
  std::size_t next_ = 0;
};

class MockDriver final : public EventDomainDriver {
 public:
  MockDriver(std::shared_ptr<EngineExecutor> executor, std::shared_ptr<MockDriverControl> control)
      : executor_(std::move(executor)), control_(std::move(control)) {}
  Result<std::unique_ptr<EventDomainRun>> create_run(EventDomainId domain) override {
    return std::unique_ptr<EventDomainRun>(std::make_unique<MockRun>(domain, executor_, control_));
  }

 private:
  std::shared_ptr<EngineExecutor> executor_;
  std::shared_ptr<MockDriverControl> control_;
};

/// Copies between storage classes; counts calls; can fail.
class MockTransfer final : public TransferProvider {
 public:
  Status transfer(const TransferRequest& r, ErasedExecutionContext) override {
    ++calls;
    if (fail) return Error(ErrorCode::kDataLoss, ErrorStage::kNone, "injected transfer failure");
    strided_copy(r.src, r.dst);
    return ok_status();
  }
  std::atomic<int> calls{0};
  bool fail = false;
};

/// Which slots a mock engine registers.
struct MockSlots {
  bool elementwise = true;
  bool reduction = true;
  bool dot_general = true;
  bool layout = true;
};

/// Everything one mock engine owns, ready to register.
struct MockEngine {
  EngineId id;
  StorageDomainId storage;
  std::shared_ptr<MockBehaviour> behaviour = std::make_shared<MockBehaviour>();
  std::shared_ptr<MockProvider> provider;
  std::shared_ptr<MockLayout> layout = std::make_shared<MockLayout>();
  std::shared_ptr<CountingExecutor> executor = std::make_shared<CountingExecutor>();
  std::shared_ptr<MockDriverControl> control = std::make_shared<MockDriverControl>();
  std::shared_ptr<MockAllocator> allocator;

  MockEngine(std::uint64_t engine_id, StorageDomainId storage_domain, std::string name = "mock")
      : id(engine_id), storage(storage_domain) {
    provider = std::make_shared<MockProvider>(name + ".provider", behaviour);
    allocator = std::make_shared<MockAllocator>(storage_domain);
    name_ = std::move(name);
  }

  EngineRegistration registration(MockSlots slots = MockSlots(), std::vector<std::uint64_t> domains = {}) const {
    EngineRegistration r;
    r.metadata.id = id;
    r.metadata.name = name_;
    r.metadata.storage = storage;
    r.metadata.domains = std::move(domains);
    if (!r.metadata.domains.empty()) r.metadata.default_domain = r.metadata.domains.front();
    if (slots.elementwise) r.capabilities.elementwise = std::make_shared<MockFamily<ElementwiseRuntime>>(provider);
    if (slots.reduction) r.capabilities.reduction = std::make_shared<MockFamily<ReductionRuntime>>(provider);
    if (slots.dot_general) r.capabilities.dot_general = std::make_shared<MockFamily<DotGeneralRuntime>>(provider);
    if (slots.layout) r.capabilities.layout = layout;
    r.executor = executor;
    r.event_driver = std::make_shared<MockDriver>(executor, control);
    r.allocator = allocator;
    return r;
  }

 private:
  std::string name_;
};

/// A float64 tensor in `allocator`'s storage holding `values`.
inline Tensor make_tensor(MockAllocator& allocator, std::initializer_list<double> values, IntArrayRef shape) {
  Result<StorageRef> s = allocator.allocate(values.size() * sizeof(double), ResolvedPlacement{});
  std::memcpy((*s)->data(), values.begin(), values.size() * sizeof(double));
  return *Tensor::from_storage(*s, DType::kFloat64, shape, row_major_strides(shape));
}

/// The elements of a float64 tensor in row-major order, read directly from
/// memory (mock "device" storage is host memory with another label).
inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  if (!t.defined()) return {};
  TensorView dst = t.view();
  Dims strides = row_major_strides(t.shape());
  dst.data = out.data();
  dst.strides = strides;
  strided_copy(t.view(), dst);
  return out;
}

/// y = -x: lowers to exactly one core op (neg).
class NegateExtension final : public program::ExtensionOp {
 public:
  std::string_view family_id() const noexcept override { return "test.negate"; }
  std::uint64_t payload_hash() const noexcept override { return 1; }
  bool payload_equal(const ExtensionOp&) const noexcept override { return true; }
  Result<SmallVector<program::ValueMetadata, 2>> infer_metadata(std::span<const program::ValueMetadata> operands,
                                                                program::ShapeConstraints& c) const override {
    if (operands.size() != 1) return c.error(ErrorCode::kInvalidArgument, "expected one operand");
    return SmallVector<program::ValueMetadata, 2>{operands[0]};
  }
  program::EffectSet effects() const override { return program::EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override { return {program::AliasDecl::fresh()}; }
  Result<program::ExtensionLoweringOutcome> lower_to_core(program::ExtensionLoweringContext& c) const override {
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue v, c.builder().emit(CoreSemanticOp::kNeg, {c.operand(0)}));
    return program::ExtensionLoweringOutcome::lowered({v});
  }
};

/// y = x * x + x: lowers to two core ops; `needs_dims` first asks for
/// concrete dims; `repeat` repeats the granted request (a contract error).
class SquarePlusExtension final : public program::ExtensionOp {
 public:
  explicit SquarePlusExtension(bool lowerable = true, bool needs_dims = false)
      : lowerable_(lowerable), needs_dims_(needs_dims) {}
  std::string_view family_id() const noexcept override { return "test.square_plus"; }
  std::uint64_t payload_hash() const noexcept override { return 2 + lowerable_ * 4 + needs_dims_ * 8; }
  bool payload_equal(const ExtensionOp& o) const noexcept override {
    const auto& other = static_cast<const SquarePlusExtension&>(o);
    return other.lowerable_ == lowerable_ && other.needs_dims_ == needs_dims_;
  }
  Result<SmallVector<program::ValueMetadata, 2>> infer_metadata(std::span<const program::ValueMetadata> operands,
                                                                program::ShapeConstraints& c) const override {
    if (operands.size() != 1) return c.error(ErrorCode::kInvalidArgument, "expected one operand");
    return SmallVector<program::ValueMetadata, 2>{operands[0]};
  }
  program::EffectSet effects() const override { return program::EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override { return {program::AliasDecl::fresh()}; }
  Result<program::ExtensionLoweringOutcome> lower_to_core(program::ExtensionLoweringContext& c) const override {
    if (!lowerable_) return program::ExtensionLoweringOutcome::unsupported("not lowerable in this test");
    if (needs_dims_ && !c.granted().has(program::SpecializationAxis::kConcreteDims))
      return program::ExtensionLoweringOutcome::needs_specialization({program::SpecializationAxis::kConcreteDims});
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue sq,
                              c.builder().emit(CoreSemanticOp::kMul, {c.operand(0), c.operand(0)}));
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue y, c.builder().emit(CoreSemanticOp::kAdd, {sq, c.operand(0)}));
    return program::ExtensionLoweringOutcome::lowered({y});
  }

 private:
  bool lowerable_;
  bool needs_dims_;
};

/// A native extension engine for test.square_plus: computes x*x + x.
class SquarePlusEngine final : public ExtensionEngine {
 public:
  std::string_view name() const noexcept override { return "mock.square_plus"; }
  bool reproducible() const noexcept override { return true; }
  Result<PrepareCapability> prepare(const ExtensionSignature& sig) const override {
    ++prepares;
    if (unsupported) return PrepareCapability::unsupported("disabled");
    if (!sig.granted.has(program::SpecializationAxis::kConcreteDims))
      return PrepareCapability::needs_specialization({program::SpecializationAxis::kConcreteDims});
    PreparedKernel kernel{nullptr, true};
    kernel.scratch_bytes = scratch_bytes;
    kernel.work = work;
    return PrepareCapability::prepared(std::move(kernel));
  }
  Status run(const ExtensionRequest& r, ErasedExecutionContext) const override {
    ++runs;
    if (r.scratch.size() != scratch_bytes) {
      return make_error(ErrorCode::kInternal, ErrorStage::kNone, "scratch of {} bytes, expected {}", r.scratch.size(),
                        scratch_bytes);
    }
    const TensorView views[2] = {r.inputs[0], r.outputs[0]};
    for_each_offset(r.inputs[0].shape, views, [&](const SmallVector<std::int64_t, 8>& o) {
      const double x = static_cast<const double*>(r.inputs[0].data)[o[0]];
      static_cast<double*>(r.outputs[0].data)[o[1]] = x * x + x;
    });
    return ok_status();
  }
  mutable std::atomic<int> prepares{0};
  mutable std::atomic<int> runs{0};
  bool unsupported = false;
  std::size_t scratch_bytes = 0;  ///< the kernel's, checked in run()
  double work = 0.0;              ///< the kernel's estimate
};

/// A one-input program: y = f(builder, x).
inline std::shared_ptr<const program::SemanticProgram> make_program(
    std::initializer_list<std::initializer_list<program::SymbolicExtent>> input_shapes,
    const std::function<Result<SmallVector<program::ProgramValue, 4>>(program::ProgramBuilder&,
                                                                      std::span<const program::ProgramValue>)>& body) {
  program::ProgramBuilder b;
  SmallVector<program::ProgramValue, 4> inputs;
  for (auto shape : input_shapes) inputs.push_back(*b.add_input(DType::kFloat64, shape));
  Result<SmallVector<program::ProgramValue, 4>> outs =
      body(b, std::span<const program::ProgramValue>(inputs.data(), inputs.size()));
  if (!outs.ok()) return nullptr;
  Result<program::FrozenProgram> frozen = b.freeze(std::span<const program::ProgramValue>(outs->data(), outs->size()));
  return frozen.ok() ? frozen->program : nullptr;
}

}  // namespace tenferro::runtime::testing
