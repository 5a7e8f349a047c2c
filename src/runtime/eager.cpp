// EagerContext: runtime.on(placement) (Note [Eager fast path]).
#include "tenferro/runtime/eager.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "runtime/runtime_state.h"
#include "runtime/scheduled_graph.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::runtime {

using program::CoreSemanticOp;

namespace internal {

// The polymorphic capability of one (op, input dtype, result dtype, rank,
// attributes): a provider's answer may depend on attribute values (e.g. a
// GEMM-only dot_general), so they are part of the identity.
struct EagerCapability {
  std::uint32_t key = 0;  // 0: empty
  program::CoreAttributes attributes;
  bool fast = false;  // false: promote
  std::size_t scratch_bytes = 0;
  std::shared_ptr<const ProviderPlan> plan;
};

// Note [Extension call memo]
// Metadata inference and the engine's prepare() (a plan-cache lookup keyed
// by the whole signature) cost more than a tiny kernel's run, and eager
// callers (a Python loop, an iterative solver) repeat one signature. A
// context keeps the last kExtensionMemos native-engine answers keyed by
// what prepare() sees of the inputs: the op (retained; the same address,
// or else an equal payload, as an op rebuilt for each call has), dtypes,
// shapes and layout classes. The
// determinism and placement parts of the signature are fixed for the
// cache's epoch, and a refresh drops the memos with the cache. Only
// answers the fast path runs (prepared, and reproducible when
// determinism requires it) and whose estimated work is unknown or below
// kMemoMaxWork are remembered: above it the lookup saved is under about 1 %
// of the run, and a memo would keep a large plan alive past its engine
// cache's bounds (four FFT plans of prime lengths near 10^6 held 400 MB,
// Note [FFT plan memory] in src/fft_cpu/plan_cache.h). The storage-domain
// check still runs on every call.
inline constexpr double kMemoMaxWork = 1.0e6;  // flops

struct ExtensionMemo {
  std::shared_ptr<const program::ExtensionOp> op;  // null: empty
  const ExtensionEngine* engine = nullptr;
  SmallVector<DType, 4> dtypes;
  SmallVector<LayoutClass, 4> layouts;
  SmallVector<Dims, 4> shapes;
  SmallVector<DType, 2> result_dtypes;
  SmallVector<Dims, 2> result_shapes;
  PreparedKernel kernel;

  bool matches(const program::ExtensionOp& o, const ExtensionEngine* e, std::span<const Tensor> inputs) const {
    if (op == nullptr || engine != e || inputs.size() != dtypes.size()) return false;
    if (op.get() != &o &&
        (op->family_id() != o.family_id() || op->payload_hash() != o.payload_hash() || !op->payload_equal(o))) {
      return false;
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (t.dtype() != dtypes[i] || !std::ranges::equal(t.shape(), shapes[i].span()) ||
          layout_class_of(t) != layouts[i]) {
        return false;
      }
    }
    return true;
  }
};

// Note [Ops from text]
// An op written as text -- einsum("ij,jk->ik", ...) in C++ -- was parsed
// and built again on every call: 264 ns of a 2 x 2 product's 1.2 us, and
// the new op's address missed the extension call memo (Note [Extension
// call memo]), so the call also paid metadata inference and the engine's
// prepare. A context remembers the last kTextOps (family, text) -> op
// pairs; a repeated text returns the same op, whose calls then hit the
// memo. Ops are pure semantic values, independent of the engine, so the
// pairs survive a refresh. Each context builds its own op from a text, so
// threads with contexts of their own share no reference count (Note
// [Eager calls share no counts]).
struct TextOps {
  static constexpr std::size_t kTextOps = 8;
  struct Entry {
    std::string family;
    std::string text;
    std::shared_ptr<const program::ExtensionOp> op;  // null: free
  };
  std::array<Entry, kTextOps> entries;
  std::size_t next = 0;  // round-robin victim
};

// What a context caches (Note [Eager fast path]).
struct EagerCache {
  static constexpr std::size_t kExtensionMemos = 4;
  static constexpr std::size_t kCapabilitySlots = 64;
  static constexpr std::size_t kProbe = 4;  ///< linear probing distance
  std::size_t next_victim = 0;

  std::uint64_t epoch = 0;
  std::shared_ptr<const RuntimeConfig> config;
  const EngineEntry* engine = nullptr;
  ResolvedPlacement placement;
  bool per_call_domain = false;
  EngineExecutor* executor = nullptr;
  EngineAllocator* allocator = nullptr;
  StorageDomainId storage;
  std::array<const CoreFamilyRuntime*, 4> slots{};  // elementwise, reduction, indexing, dot_general
  const LayoutRuntime* layout = nullptr;
  Determinism determinism = Determinism::kFast;
  std::array<EagerCapability, kCapabilitySlots> capabilities;
  StorageRef scratch;
  std::vector<std::pair<std::string, const ExtensionEngine*>> extensions;
  std::array<ExtensionMemo, kExtensionMemos> extension_memos;
  std::size_t next_extension_memo = 0;  // round-robin victim

  /// `bytes` of the context's scratch (none for 0): one buffer for every
  /// kernel a call runs, grown when a kernel needs more, so a repeated call
  /// allocates none.
  Result<std::span<std::byte>> scratch_of(std::size_t bytes, const ResolvedPlacement& where) {
    if (bytes == 0) return std::span<std::byte>();
    if (!scratch || scratch->nbytes() < bytes) {
      TENFERRO_ASSIGN_OR_RETURN(scratch, allocator->allocate(bytes, where));
    }
    return std::span<std::byte>(static_cast<std::byte*>(scratch->data()), bytes);
  }

  const CoreFamilyRuntime* slot(OpFamily family) const noexcept {
    switch (family) {
      case OpFamily::kElementwise:
        return slots[0];
      case OpFamily::kReduction:
        return slots[1];
      case OpFamily::kIndexing:
        return slots[2];
      case OpFamily::kDotGeneral:
        return slots[3];
      default:
        return nullptr;
    }
  }
};

}  // namespace internal

namespace {

Error eager_error(ErrorCode code, std::string message) { return Error(code, ErrorStage::kNone, std::move(message)); }

std::uint32_t capability_key(CoreSemanticOp op, DType in, DType out, std::size_t rank) noexcept {
  return 1u | (static_cast<std::uint32_t>(op) << 1) | (static_cast<std::uint32_t>(in) << 9) |
         (static_cast<std::uint32_t>(out) << 15) | (static_cast<std::uint32_t>(std::min<std::size_t>(rank, 63)) << 21);
}

DType result_dtype(CoreSemanticOp op, DType operand) noexcept {
  switch (program::core_op_info(op).result_dtype) {
    case program::ResultDTypeRule::kRealOfOperand:
      return real_dtype(operand);
    case program::ResultDTypeRule::kComplexOfOperand:
      return complex_dtype(operand).value_or(operand);
    case program::ResultDTypeRule::kBool:
      return DType::kBool;
    case program::ResultDTypeRule::kInt64:
      return DType::kInt64;
    default:
      return operand;
  }
}

// numpy broadcasting of two shapes into `out`; false when incompatible.
bool broadcast_shapes(IntArrayRef a, IntArrayRef b, Dims& out) {
  const std::size_t rank = std::max(a.size(), b.size());
  out.resize(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    out[i] = x == 1 ? y : x;
  }
  return true;
}

program::ValueMetadata exact_metadata(const Tensor& t) { return program::ValueMetadata::exact(t.dtype(), t.shape()); }

// Note [Eager dot_general validation]
// The generic path validates with program::infer_core_metadata, the single
// source of truth, which formats descriptions of its checks as it goes (and
// so allocates). For dot_general, the hot eager op, this check accepts only
// well-formed requests and computes the result shape without allocating;
// anything it rejects goes through infer_core_metadata, which produces the
// canonical error. eager_test checks that both agree on result shapes.
bool fast_dot_general_shape(const Tensor& lhs, const Tensor& rhs, const program::DotGeneralAttributes& d, Dims& out) {
  if (!lhs.defined() || !rhs.defined() || lhs.dtype() != rhs.dtype() ||
      !program::dtype_in_class(lhs.dtype(), program::DTypeClass::kNumeric))
    return false;
  if (d.lhs_batch.size() != d.rhs_batch.size() || d.lhs_contract.size() != d.rhs_contract.size()) return false;
  const std::int64_t lr = lhs.rank();
  const std::int64_t rr = rhs.rank();
  if (lr > 64 || rr > 64) return false;
  std::uint64_t lused = 0;
  std::uint64_t rused = 0;
  auto take = [](std::int64_t axis, std::int64_t rank, std::uint64_t& used) {
    if (axis < 0 || axis >= rank || (used >> axis & 1u) != 0) return false;
    used |= std::uint64_t{1} << axis;
    return true;
  };
  for (std::size_t i = 0; i < d.lhs_batch.size(); ++i) {
    if (!take(d.lhs_batch[i], lr, lused) || !take(d.rhs_batch[i], rr, rused)) return false;
    if (lhs.size(d.lhs_batch[i]) != rhs.size(d.rhs_batch[i])) return false;
  }
  for (std::size_t i = 0; i < d.lhs_contract.size(); ++i) {
    if (!take(d.lhs_contract[i], lr, lused) || !take(d.rhs_contract[i], rr, rused)) return false;
    if (lhs.size(d.lhs_contract[i]) != rhs.size(d.rhs_contract[i])) return false;
  }
  out.clear();
  for (std::int64_t axis : d.lhs_batch) out.push_back(lhs.size(axis));
  for (std::int64_t axis = 0; axis < lr; ++axis)
    if ((lused >> axis & 1u) == 0) out.push_back(lhs.size(axis));
  for (std::int64_t axis = 0; axis < rr; ++axis)
    if ((rused >> axis & 1u) == 0) out.push_back(rhs.size(axis));
  return true;
}

}  // namespace

EagerContext::EagerContext(std::shared_ptr<internal::RuntimeState> runtime, Placement placement)
    : runtime_(std::move(runtime)), placement_(placement) {}
EagerContext::~EagerContext() = default;
EagerContext::EagerContext(EagerContext&&) noexcept = default;
EagerContext& EagerContext::operator=(EagerContext&&) noexcept = default;

Status EagerContext::refresh() {
  if (runtime_ == nullptr) {  // moved from: every call reaches here (no cache)
    return eager_error(ErrorCode::kFailedPrecondition, "the EagerContext was moved from");
  }
  auto cache = std::make_unique<internal::EagerCache>();
  cache->config = runtime_->snapshot();
  cache->epoch = cache->config->epoch();
  TENFERRO_ASSIGN_OR_RETURN(cache->placement, internal::resolve_placement(*cache->config, placement_, {}, nullptr));
  cache->engine = cache->config->find_engine(cache->placement.engine);
  const EngineEntry& e = *cache->engine;
  if (!e.registration.executable()) {
    return eager_error(ErrorCode::kFailedPrecondition,
                       fmt::format("engine {} ('{}') is preparation-only; eager calls need an executable engine",
                                   e.id(), e.metadata().name));
  }
  cache->per_call_domain = placement_.kind() != Placement::Kind::kCpuDomain &&
                           placement_.kind() != Placement::Kind::kDevice && e.metadata().domains.size() > 1 &&
                           e.metadata().hardware == HardwareClass::kCpu;
  cache->executor = e.registration.executor.get();
  cache->allocator = e.allocator.get();
  cache->storage = e.metadata().storage;
  const CoreCapabilities& c = e.registration.capabilities;
  cache->slots = {c.elementwise.get(), c.reduction.get(), c.indexing.get(), c.dot_general.get()};
  cache->layout = c.layout.get();
  cache->determinism = cache->config->policies().determinism;
  if (cache_ != nullptr) ++metrics_.refreshes;
  cache_ = std::move(cache);
  return ok_status();
}

inline Status EagerContext::ensure_fresh() {
  if (cache_ != nullptr && cache_->epoch == runtime_->epoch.load(std::memory_order_acquire)) [[likely]]
    return ok_status();
  return refresh();
}

Result<ResolvedPlacement> EagerContext::resolved_placement() {
  TENFERRO_TRY(ensure_fresh());
  return cache_->placement;
}

// The fast path proper: `inputs` are validated views (broadcast already
// applied); allocates the output and calls the resolved slot.
Result<Tensor> EagerContext::run_core(CoreSemanticOp op, std::span<const TensorView> inputs, DType out_dtype,
                                      IntArrayRef out_shape, const program::CoreAttributes& attributes,
                                      FunctionRef<Result<TensorList>()> promote_call) {
  internal::EagerCache& c = *cache_;
  for (const TensorView& v : inputs) {
    if (v.storage->storage_domain() != c.storage) {
      return eager_error(ErrorCode::kPlacementError,
                         fmt::format("{}: expected inputs in storage domain {} of engine {}, found storage domain {}; "
                                     "eager calls never transfer implicitly (transfer explicitly first)",
                                     program::to_string(op), c.storage, c.engine->id(), v.storage->storage_domain()));
    }
  }
  const CoreFamilyRuntime* slot = c.slot(core_op_family(op));
  const DType in_dtype = inputs.empty() ? out_dtype : inputs[0].dtype;
  const std::uint32_t key = capability_key(op, in_dtype, out_dtype, out_shape.size());
  const std::size_t home = (key * 2654435761u >> 8) % internal::EagerCache::kCapabilitySlots;
  internal::EagerCapability* cap = nullptr;
  for (std::size_t i = 0; i < internal::EagerCache::kProbe && cap == nullptr; ++i) {
    internal::EagerCapability& entry = c.capabilities[(home + i) % internal::EagerCache::kCapabilitySlots];
    if (entry.key == key && entry.attributes == attributes) cap = &entry;
  }
  if (cap == nullptr) {
    // Ask once: the polymorphic signature (dtypes, ranks and attributes).
    internal::EagerCapability fresh;
    fresh.key = key;
    fresh.attributes = attributes;
    if (slot != nullptr) {
      SmallVector<OperandSignature, 4> operands;
      for (const TensorView& v : inputs)
        operands.push_back(OperandSignature{v.dtype, v.rank(), {}, LayoutClass::kStrided});
      OperationSignature sig;
      sig.op = op;
      sig.attributes = &attributes;
      sig.operands = std::span<const OperandSignature>(operands.data(), operands.size());
      sig.result = OperandSignature{out_dtype, static_cast<std::int64_t>(out_shape.size()), {}, LayoutClass::kRowMajor};
      sig.determinism = c.determinism;
      sig.placement = c.placement;
      ++metrics_.capability_queries;
      Result<PrepareCapability> answer = [&]() -> Result<PrepareCapability> {
        try {
          return slot->prepare(sig);
        } catch (...) {
          return status_from_current_exception(ErrorStage::kNone, slot->name());
        }
      }();
      if (!answer.ok()) return answer.status();
      if (answer->kind() == PrepareCapability::Kind::kPrepared &&
          (c.determinism == Determinism::kFast || answer->kernel().reproducible)) {
        fresh.fast = true;
        fresh.plan = answer->kernel().plan;
        fresh.scratch_bytes = answer->kernel().scratch_bytes;
      }
    }
    std::size_t target = internal::EagerCache::kProbe;
    for (std::size_t i = 0; i < internal::EagerCache::kProbe && target == internal::EagerCache::kProbe; ++i)
      if (c.capabilities[(home + i) % internal::EagerCache::kCapabilitySlots].key == 0) target = i;
    if (target == internal::EagerCache::kProbe) target = c.next_victim++ % internal::EagerCache::kProbe;
    cap = &c.capabilities[(home + target) % internal::EagerCache::kCapabilitySlots];
    *cap = std::move(fresh);
  }
  if (!cap->fast) {
    TENFERRO_ASSIGN_OR_RETURN(TensorList out, promote_call());
    return std::move(out[0]);
  }
  ResolvedPlacement where = c.placement;
  if (c.per_call_domain) {
    std::array<internal::AffinityWeight, 8> weights;
    std::size_t count = 0;
    for (const TensorView& v : inputs) {
      if (count == weights.size()) break;
      weights[count++] =
          internal::AffinityWeight{v.storage->affinity(), static_cast<std::size_t>(v.numel()) * dtype_size(v.dtype)};
    }
    TENFERRO_ASSIGN_OR_RETURN(
        where, internal::resolve_placement(*c.config, placement_, std::span(weights.data(), count), nullptr));
  }
  const std::int64_t numel = numel_unchecked(out_shape);
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage,
                            c.allocator->allocate(static_cast<std::size_t>(numel) * dtype_size(out_dtype), where));
  TENFERRO_ASSIGN_OR_RETURN(
      Tensor out, Tensor::from_storage(std::move(storage), out_dtype, out_shape, row_major_strides(out_shape)));
  TENFERRO_ASSIGN_OR_RETURN(const std::span<std::byte> scratch, c.scratch_of(cap->scratch_bytes, where));
  OperationRequest request;
  request.op = op;
  request.attributes = &attributes;
  request.inputs = inputs;
  request.output = out.view();
  request.plan = cap->plan.get();
  request.scratch = scratch;
  const Status status = c.executor->enter(where, [&](ErasedExecutionContext context) -> Status {
    try {
      return slot->run(request, context);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kNone, slot->name());
    }
  });
  if (!status.ok()) return status;
  ++metrics_.fast_path_calls;
  return out;
}

Result<Tensor> EagerContext::binary(CoreSemanticOp op, const Tensor& a, const Tensor& b) {
  TENFERRO_TRY(ensure_fresh());
  const program::CoreOpInfo& info = program::core_op_info(op);
  if (info.min_operands != 2 || info.max_operands != 2 || core_op_family(op) != OpFamily::kElementwise ||
      op == CoreSemanticOp::kCompare) {
    return eager_error(ErrorCode::kInvalidArgument,
                       fmt::format("binary: expected a binary elementwise op, found {}", program::to_string(op)));
  }
  if (!a.defined() || !b.defined())
    return eager_error(ErrorCode::kInvalidArgument, fmt::format("{}: expected defined tensors", info.name));
  if (a.dtype() != b.dtype()) {
    const Tensor both[2] = {a, b};
    TENFERRO_ASSIGN_OR_RETURN(TensorList common, to_common_dtype(both));
    return binary(op, common[0], common[1]);
  }
  if (!program::dtype_in_class(a.dtype(), info.operand_dtypes)) {
    return eager_error(ErrorCode::kDTypeMismatch, fmt::format("{}: expected {}, found {}", info.name,
                                                              program::to_string(info.operand_dtypes), a.dtype()));
  }
  static const program::CoreAttributes kNone = program::NoAttributes{};
  if (IntArrayRef(a.shape()) == IntArrayRef(b.shape())) {
    const TensorView views[2] = {a.view(), b.view()};
    return run_core(op, views, result_dtype(op, a.dtype()), a.shape(), kNone, [&]() -> Result<TensorList> {
      const Tensor both[2] = {a, b};
      return promote(op, both, kNone);
    });
  }
  Dims shape;
  if (!broadcast_shapes(a.shape(), b.shape(), shape)) {
    return eager_error(ErrorCode::kShapeMismatch, fmt::format("{}: shapes {} and {} do not broadcast", info.name,
                                                              shape_to_string(a.shape()), shape_to_string(b.shape())));
  }
  TENFERRO_ASSIGN_OR_RETURN(Tensor ab, a.broadcast_to(shape));
  TENFERRO_ASSIGN_OR_RETURN(Tensor bb, b.broadcast_to(shape));
  const TensorView views[2] = {ab.view(), bb.view()};
  return run_core(op, views, result_dtype(op, a.dtype()), shape, kNone, [&]() -> Result<TensorList> {
    const Tensor both[2] = {ab, bb};
    return promote(op, both, kNone);
  });
}

Result<Tensor> EagerContext::unary(CoreSemanticOp op, const Tensor& x) {
  TENFERRO_TRY(ensure_fresh());
  const program::CoreOpInfo& info = program::core_op_info(op);
  if (info.min_operands != 1 || info.max_operands != 1 || core_op_family(op) != OpFamily::kElementwise ||
      op == CoreSemanticOp::kConvert) {
    return eager_error(ErrorCode::kInvalidArgument,
                       fmt::format("unary: expected a unary elementwise op, found {}", program::to_string(op)));
  }
  if (!x.defined())
    return eager_error(ErrorCode::kInvalidArgument, fmt::format("{}: expected a defined tensor", info.name));
  if (!program::dtype_in_class(x.dtype(), info.operand_dtypes)) {
    return eager_error(ErrorCode::kDTypeMismatch, fmt::format("{}: expected {}, found {}", info.name,
                                                              program::to_string(info.operand_dtypes), x.dtype()));
  }
  static const program::CoreAttributes kNone = program::NoAttributes{};
  const TensorView views[1] = {x.view()};
  return run_core(op, views, result_dtype(op, x.dtype()), x.shape(), kNone,
                  [&]() { return promote(op, std::span<const Tensor>(&x, 1), kNone); });
}

Result<Tensor> EagerContext::compare(program::ComparisonDirection direction, const Tensor& a, const Tensor& b) {
  const Tensor operands[2] = {a, b};
  return apply(CoreSemanticOp::kCompare, operands, program::CompareAttributes{direction});
}

Result<Tensor> EagerContext::select(const Tensor& predicate, const Tensor& on_true, const Tensor& on_false) {
  const Tensor operands[3] = {predicate, on_true, on_false};
  return apply(CoreSemanticOp::kSelect, operands);
}

Result<Tensor> EagerContext::convert(const Tensor& x, DType dtype) {
  return apply(CoreSemanticOp::kConvert, std::span<const Tensor>(&x, 1), program::ConvertAttributes{dtype});
}

Result<TensorList> EagerContext::to_common_dtype(std::span<const Tensor> inputs) {
  std::optional<DType> common;
  for (const Tensor& t : inputs) {
    if (t.defined()) common = common ? promote_types(*common, t.dtype()) : t.dtype();
  }
  TensorList out;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.dtype() != *common) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor c, convert(t, *common));
      out.push_back(std::move(c));
    } else {
      out.push_back(t);
    }
  }
  return out;
}

Result<Tensor> EagerContext::matmul(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return eager_error(ErrorCode::kInvalidArgument, "matmul: expected defined tensors");
  const std::int64_t ra = a.rank();
  const std::int64_t rb = b.rank();
  // Built in place in the variant the request borrows (no second copy).
  program::CoreAttributes attributes{std::in_place_type<program::DotGeneralAttributes>};
  program::DotGeneralAttributes& dims = std::get<program::DotGeneralAttributes>(attributes);
  if (ra == 1 && rb == 1) {
    dims.lhs_contract.push_back(0);
    dims.rhs_contract.push_back(0);
  } else if (ra == 2 && rb == 1) {
    dims.lhs_contract.push_back(1);
    dims.rhs_contract.push_back(0);
  } else if (ra == 1 && rb == 2) {
    dims.lhs_contract.push_back(0);
    dims.rhs_contract.push_back(0);
  } else if (ra >= 2 && ra == rb) {
    for (std::int64_t i = 0; i < ra - 2; ++i) {
      dims.lhs_batch.push_back(i);
      dims.rhs_batch.push_back(i);
    }
    dims.lhs_contract.push_back(ra - 1);
    dims.rhs_contract.push_back(rb - 2);
  } else {
    return eager_error(ErrorCode::kShapeMismatch,
                       fmt::format("matmul: expected ranks (1|2, 1|2) or equal ranks >= 2, found {} and {}", ra, rb));
  }
  return dot_general_impl(a, b, attributes);
}

Result<Tensor> EagerContext::dot_general(const Tensor& lhs, const Tensor& rhs,
                                         const program::DotGeneralAttributes& dims) {
  const program::CoreAttributes attributes = dims;
  return dot_general_impl(lhs, rhs, attributes);
}

Result<Tensor> EagerContext::dot_general_impl(const Tensor& lhs, const Tensor& rhs,
                                              const program::CoreAttributes& attributes) {
  if (lhs.defined() && rhs.defined() && lhs.dtype() != rhs.dtype()) {
    const Tensor both[2] = {lhs, rhs};
    TENFERRO_ASSIGN_OR_RETURN(TensorList common, to_common_dtype(both));
    return dot_general_impl(common[0], common[1], attributes);
  }
  Dims shape;
  if (!fast_dot_general_shape(lhs, rhs, std::get<program::DotGeneralAttributes>(attributes), shape)) {
    const Tensor operands[2] = {lhs, rhs};
    return apply(CoreSemanticOp::kDotGeneral, operands, attributes);  // the canonical error (or result)
  }
  TENFERRO_TRY(ensure_fresh());
  const TensorView views[2] = {lhs.view(), rhs.view()};
  return run_core(CoreSemanticOp::kDotGeneral, views, lhs.dtype(), shape, attributes, [&]() -> Result<TensorList> {
    const Tensor operands[2] = {lhs, rhs};
    return promote(CoreSemanticOp::kDotGeneral, operands, attributes);
  });
}

namespace {

// numpy's negative axes (-1: the last) for the convenience calls; the IR's
// attributes count from 0. An axis outside [-rank, rank) is left for the
// op's validation to report.
std::int64_t axis_of(std::int64_t axis, std::int64_t rank) noexcept {
  return axis < 0 && axis >= -rank ? axis + rank : axis;
}

Dims axes_of(IntArrayRef axes, const Tensor& x) {
  Dims out(axes.begin(), axes.end());
  for (std::int64_t& a : out) a = axis_of(a, x.rank());
  return out;
}

}  // namespace

Result<Tensor> EagerContext::sum(const Tensor& x, IntArrayRef axes) {
  return apply(CoreSemanticOp::kReduceSum, std::span<const Tensor>(&x, 1), program::ReduceAttributes{axes_of(axes, x)});
}
Result<Tensor> EagerContext::prod(const Tensor& x, IntArrayRef axes) {
  return apply(CoreSemanticOp::kReduceProd, std::span<const Tensor>(&x, 1),
               program::ReduceAttributes{axes_of(axes, x)});
}
Result<Tensor> EagerContext::max(const Tensor& x, IntArrayRef axes) {
  return apply(CoreSemanticOp::kReduceMax, std::span<const Tensor>(&x, 1), program::ReduceAttributes{axes_of(axes, x)});
}
Result<Tensor> EagerContext::min(const Tensor& x, IntArrayRef axes) {
  return apply(CoreSemanticOp::kReduceMin, std::span<const Tensor>(&x, 1), program::ReduceAttributes{axes_of(axes, x)});
}
Result<Tensor> EagerContext::argmax(const Tensor& x, std::int64_t axis) {
  return apply(CoreSemanticOp::kArgmax, std::span<const Tensor>(&x, 1),
               program::ArgReduceAttributes{axis_of(axis, x.rank())});
}
Result<Tensor> EagerContext::argmin(const Tensor& x, std::int64_t axis) {
  return apply(CoreSemanticOp::kArgmin, std::span<const Tensor>(&x, 1),
               program::ArgReduceAttributes{axis_of(axis, x.rank())});
}
Result<Tensor> EagerContext::gather(const Tensor& x, const Tensor& indices, std::int64_t axis) {
  const Tensor operands[2] = {x, indices};
  return apply(CoreSemanticOp::kGather, operands,
               program::take_attributes(program::symbolic_shape(x.shape()), indices.rank(), axis_of(axis, x.rank())));
}
Result<Tensor> EagerContext::gather(const Tensor& x, const Tensor& indices,
                                    const program::GatherAttributes& attributes) {
  const Tensor operands[2] = {x, indices};
  return apply(CoreSemanticOp::kGather, operands, attributes);
}
Result<Tensor> EagerContext::scatter(const Tensor& x, const Tensor& indices, const Tensor& updates,
                                     const program::ScatterAttributes& attributes) {
  const Tensor operands[3] = {x, indices, updates};
  return apply(CoreSemanticOp::kScatter, operands, attributes);
}
Result<Tensor> EagerContext::concatenate(std::span<const Tensor> xs, std::int64_t axis) {
  return apply(CoreSemanticOp::kConcatenate, xs,
               program::ConcatenateAttributes{xs.empty() ? axis : axis_of(axis, xs[0].rank())});
}

Result<Tensor> EagerContext::transpose(const Tensor& x, IntArrayRef perm) {
  const program::CoreAttributes attributes = program::TransposeAttributes{axes_of(perm, x)};
  return apply(CoreSemanticOp::kTranspose, std::span<const Tensor>(&x, 1), attributes);
}

Result<Tensor> EagerContext::reshape(const Tensor& x, IntArrayRef shape) {
  // Resolve one -1 extent here; the core op takes the complete shape.
  Dims extents(shape.begin(), shape.end());
  if (x.defined()) {
    std::int64_t known = 1;
    int inferred_axis = -1;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i] == -1 && inferred_axis < 0) {
        inferred_axis = static_cast<int>(i);
      } else {
        known *= extents[i];
      }
    }
    if (inferred_axis >= 0 && known > 0 && x.numel() % known == 0)
      extents[static_cast<std::size_t>(inferred_axis)] = x.numel() / known;
  }
  const program::CoreAttributes attributes = program::ReshapeAttributes{program::symbolic_shape(extents)};
  return apply(CoreSemanticOp::kReshape, std::span<const Tensor>(&x, 1), attributes);
}

Result<Tensor> EagerContext::contiguous(const Tensor& x) {
  if (x.defined() && x.is_contiguous()) return x;
  return copy(x);
}

Result<Tensor> EagerContext::copy(const Tensor& x) {
  TENFERRO_TRY(ensure_fresh());
  internal::EagerCache& c = *cache_;
  if (!x.defined()) return eager_error(ErrorCode::kInvalidArgument, "copy: expected a defined tensor");
  if (x.storage()->storage_domain() != c.storage) {
    return eager_error(ErrorCode::kPlacementError,
                       fmt::format("copy: expected storage domain {}, found {}; eager calls never transfer implicitly",
                                   c.storage, x.storage()->storage_domain()));
  }
  if (c.layout == nullptr) {
    return eager_error(ErrorCode::kUnsupportedOperation, fmt::format("copy: engine {} ('{}') has no layout slot",
                                                                     c.engine->id(), c.engine->metadata().name));
  }
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage, c.allocator->allocate(x.nbytes(), c.placement));
  TENFERRO_ASSIGN_OR_RETURN(
      Tensor out, Tensor::from_storage(std::move(storage), x.dtype(), x.shape(), row_major_strides(x.shape())));
  const LayoutRuntime* layout = c.layout;
  const TensorView src = x.view();
  const TensorView dst = out.view();
  TENFERRO_TRY(c.executor->enter(c.placement, [&](ErasedExecutionContext context) -> Status {
    try {
      return layout->copy(src, dst, nullptr, context);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kNone, layout->name());
    }
  }));
  ++metrics_.fast_path_calls;
  return out;
}

Result<Tensor> EagerContext::apply(CoreSemanticOp op, std::span<const Tensor> inputs,
                                   const program::CoreAttributes& attributes) {
  TENFERRO_TRY(ensure_fresh());
  SmallVector<program::ValueMetadata, 4> metadata;
  for (const Tensor& t : inputs) {
    if (!t.defined())
      return eager_error(ErrorCode::kInvalidArgument,
                         fmt::format("{}: expected defined tensors", program::to_string(op)));
    metadata.push_back(exact_metadata(t));
  }
  program::ShapeConstraints constraints(program::to_string(op), nullptr);
  Result<program::ValueMetadata> inferred = program::infer_core_metadata(
      op, attributes, std::span<const program::ValueMetadata>(metadata.data(), metadata.size()), constraints);
  if (!inferred.ok()) return inferred.status().in_stage(ErrorStage::kNone);
  const std::optional<Dims> shape = program::exact_shape(inferred->shape);
  if (!shape) return eager_error(ErrorCode::kInternal, "eager inference produced a symbolic shape");
  if (core_op_family(op) == OpFamily::kView) {
    // Metadata only: never a provider, except that a reshape strides cannot
    // express gets the explicit row-major copy a prepared graph would insert.
    Result<Tensor> view = internal::apply_view_op(op, attributes, inputs[0], *shape);
    if (op == CoreSemanticOp::kReshape && !view.ok() && view.status().code() == ErrorCode::kLayoutRequiresCopy) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor dense, copy(inputs[0]));
      return dense.reshape(*shape);
    }
    ++metrics_.fast_path_calls;
    return view;
  }
  SmallVector<TensorView, 4> views;
  for (const Tensor& t : inputs) views.push_back(t.view());
  return run_core(op, std::span<const TensorView>(views.data(), views.size()), inferred->dtype, *shape, attributes,
                  [&]() { return promote(op, inputs, attributes); });
}

// --- promotion -------------------------------------------------------------

Result<TensorList> EagerContext::promote(CoreSemanticOp op, std::span<const Tensor> inputs,
                                         const program::CoreAttributes& attributes) {
  return run_promoted(
      inputs,
      [&](program::ProgramBuilder& builder,
          std::span<const program::ProgramValue> values) -> Result<SmallVector<program::ProgramValue, 2>> {
        TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue out, builder.emit(op, values, attributes));
        return SmallVector<program::ProgramValue, 2>{out};
      });
}

Result<TensorList> EagerContext::promote_extension(const std::shared_ptr<const program::ExtensionOp>& op,
                                                   std::span<const Tensor> inputs) {
  return run_promoted(inputs, [&](program::ProgramBuilder& builder, std::span<const program::ProgramValue> values) {
    return builder.emit_extension(op, values);
  });
}

Result<TensorList> EagerContext::run_promoted(std::span<const Tensor> inputs,
                                              FunctionRef<Result<SmallVector<program::ProgramValue, 2>>(
                                                  program::ProgramBuilder&, std::span<const program::ProgramValue>)>
                                                  emit) {
  const std::uint64_t t = internal::now_ns();
  program::ProgramBuilder builder;
  SmallVector<program::ProgramValue, 4> values;
  for (const Tensor& x : inputs) {
    const program::SymbolicShape shape = program::symbolic_shape(x.shape());
    TENFERRO_ASSIGN_OR_RETURN(
        program::ProgramValue v,
        builder.add_input(x.dtype(), std::span<const program::SymbolicExtent>(shape.data(), shape.size())));
    values.push_back(v);
  }
  using Outputs = SmallVector<program::ProgramValue, 2>;
  TENFERRO_ASSIGN_OR_RETURN(Outputs outs,
                            emit(builder, std::span<const program::ProgramValue>(values.data(), values.size())));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen,
                            builder.freeze(std::span<const program::ProgramValue>(outs.data(), outs.size())));
  runtime_->metrics->add_stage(internal::MetricsState::kCompile, internal::now_ns() - t);
  PrepareOptions options;
  options.placement = placement_;
  ++metrics_.promoted_calls;
  runtime_->metrics->add(internal::MetricsState::kEagerPromotedCalls, 1);
  return internal::run_program(*runtime_, frozen.program, inputs, options);
}

// --- extensions ------------------------------------------------------------

ExtensionSlot EagerContext::resolve_extension(std::string_view family) {
  ExtensionSlot slot;
  slot.family_ = std::string(family);
  if (!ensure_fresh().ok()) return slot;
  const ExtensionRegistration* reg = cache_->config->find_extension(family, cache_->engine->id());
  slot.engine_ = reg != nullptr ? reg->implementation.get() : nullptr;
  slot.epoch_ = cache_->epoch;
  return slot;
}

Result<TensorList> EagerContext::run_extension_kernel(const ExtensionSlot& slot, const program::ExtensionOp& op,
                                                      std::span<const Tensor> inputs,
                                                      std::span<const DType> result_dtypes,
                                                      std::span<const Dims> result_shapes,
                                                      const PreparedKernel& kernel) {
  internal::EagerCache& c = *cache_;
  TensorList outputs;
  SmallVector<TensorView, 2> out_views;
  for (std::size_t r = 0; r < result_shapes.size(); ++r) {
    TENFERRO_ASSIGN_OR_RETURN(
        StorageRef storage,
        c.allocator->allocate(
            static_cast<std::size_t>(numel_unchecked(result_shapes[r])) * dtype_size(result_dtypes[r]), c.placement));
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::from_storage(std::move(storage), result_dtypes[r], result_shapes[r],
                                                             row_major_strides(result_shapes[r])));
    outputs.push_back(std::move(t));
  }
  for (const Tensor& t : outputs) out_views.push_back(t.view());
  SmallVector<TensorView, 4> in_views;
  for (const Tensor& t : inputs) in_views.push_back(t.view());
  TENFERRO_ASSIGN_OR_RETURN(const std::span<std::byte> scratch, c.scratch_of(kernel.scratch_bytes, c.placement));
  ExtensionRequest request;
  request.op = &op;
  request.inputs = std::span<const TensorView>(in_views.data(), in_views.size());
  request.outputs = std::span<const TensorView>(out_views.data(), out_views.size());
  request.plan = kernel.plan.get();
  request.scratch = scratch;
  const ExtensionEngine* engine = slot.engine_;
  TENFERRO_TRY(c.executor->enter(c.placement, [&](ErasedExecutionContext context) -> Status {
    try {
      return engine->run(request, context);
    } catch (...) {
      return status_from_current_exception(ErrorStage::kNone, engine->name());
    }
  }));
  ++metrics_.fast_path_calls;
  return outputs;
}

Result<std::shared_ptr<const program::ExtensionOp>> EagerContext::op_from_text(
    std::string_view family, std::string_view text,
    FunctionRef<Result<std::shared_ptr<const program::ExtensionOp>>()> make) {
  if (text_ops_ != nullptr) {
    for (const internal::TextOps::Entry& e : text_ops_->entries) {
      if (e.op != nullptr && e.text == text && e.family == family) return e.op;
    }
  } else {
    text_ops_ = std::make_unique<internal::TextOps>();
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const program::ExtensionOp> op, make());
  if (op == nullptr) return eager_error(ErrorCode::kInvalidArgument, "op_from_text: make() returned a null op");
  internal::TextOps::Entry& e = text_ops_->entries[text_ops_->next];
  text_ops_->next = (text_ops_->next + 1) % internal::TextOps::kTextOps;
  e.family.assign(family);
  e.text.assign(text);
  e.op = op;
  return op;
}

// Note [Eager calls share no counts]
// Threads calling one runtime with the same op (a cached EinsumOp, the
// shared LinalgOp::det()) used to convert its shared_ptr to one of the base
// type for every call: an increment and a decrement of the op's reference
// count, which both threads write. Two threads doing 8 x 8 products with
// one op got 1.16x the throughput of one (perf: 11-13 % of the samples in
// shared_ptr's release); calling with the base-type pointer directly gave
// 1.97x. call() therefore works on the op by reference and copies the
// shared_ptr only to keep the op: in a new memo entry or a promoted program.
Result<TensorList> EagerContext::call(const std::shared_ptr<const program::ExtensionOp>& op,
                                      std::span<const Tensor> inputs) {
  if (op == nullptr) return eager_error(ErrorCode::kInvalidArgument, "call: expected an extension op, found null");
  return call_op(
      nullptr, *op, [&op] { return op; }, inputs);
}

Result<TensorList> EagerContext::call(ExtensionSlot& slot, const std::shared_ptr<const program::ExtensionOp>& op,
                                      std::span<const Tensor> inputs) {
  if (op == nullptr) return eager_error(ErrorCode::kInvalidArgument, "call: expected an extension op, found null");
  return call_op(
      &slot, *op, [&op] { return op; }, inputs);
}

Result<TensorList> EagerContext::call_op(ExtensionSlot* given, const program::ExtensionOp& op,
                                         FunctionRef<std::shared_ptr<const program::ExtensionOp>()> retain,
                                         std::span<const Tensor> inputs) {
  TENFERRO_TRY(ensure_fresh());
  ExtensionSlot resolved;
  if (given == nullptr) {
    bool found = false;
    for (auto& [family, engine] : cache_->extensions) {
      if (family == op.family_id()) {
        resolved.family_ = family;
        resolved.engine_ = engine;
        resolved.epoch_ = cache_->epoch;
        found = true;
        break;
      }
    }
    if (!found) {
      resolved = resolve_extension(op.family_id());
      cache_->extensions.emplace_back(resolved.family_, resolved.engine_);
    }
  }
  ExtensionSlot& slot = given != nullptr ? *given : resolved;
  if (slot.family_ != op.family_id() || slot.epoch_ != cache_->epoch) slot = resolve_extension(op.family_id());
  internal::EagerCache& c = *cache_;
  for (const Tensor& t : inputs) {
    if (!t.defined()) return eager_error(ErrorCode::kInvalidArgument, "call: expected defined tensors");
    if (t.storage()->storage_domain() != c.storage) {
      return eager_error(ErrorCode::kPlacementError,
                         fmt::format("{}: expected inputs in storage domain {}, found {}; eager calls never transfer "
                                     "implicitly",
                                     op.family_id(), c.storage, t.storage()->storage_domain()));
    }
  }
  if (slot.engine_ != nullptr) {
    for (const internal::ExtensionMemo& memo : c.extension_memos) {
      if (memo.matches(op, slot.engine_, inputs)) {
        return run_extension_kernel(slot, op, inputs, memo.result_dtypes, memo.result_shapes, memo.kernel);
      }
    }
  }
  SmallVector<program::ValueMetadata, 4> metadata;
  for (const Tensor& t : inputs) metadata.push_back(exact_metadata(t));
  const std::span<const program::ValueMetadata> operand_metadata(metadata.data(), metadata.size());
  program::ShapeConstraints constraints(op.family_id(), nullptr);
  TENFERRO_ASSIGN_OR_RETURN(auto results, op.infer_metadata(operand_metadata, constraints));

  if (slot.engine_ != nullptr) {
    using program::SpecializationAxis;
    SmallVector<OperandSignature, 4> ops;
    for (const Tensor& t : inputs) ops.push_back(OperandSignature{t.dtype(), t.rank(), t.shape(), layout_class_of(t)});
    SmallVector<Dims, 2> shapes;
    for (const program::ValueMetadata& m : results) shapes.push_back(*program::exact_shape(m.shape));
    SmallVector<OperandSignature, 2> res;
    for (std::size_t r = 0; r < results.size(); ++r)
      res.push_back(OperandSignature{results[r].dtype, results[r].rank(), shapes[r].span(), LayoutClass::kRowMajor});
    ExtensionSignature sig;
    sig.op = &op;
    sig.operands = std::span<const OperandSignature>(ops.data(), ops.size());
    sig.results = std::span<const OperandSignature>(res.data(), res.size());
    sig.granted = program::SpecializationRequirements{SpecializationAxis::kConcreteDims, SpecializationAxis::kDType,
                                                      SpecializationAxis::kPlacement, SpecializationAxis::kLayoutClass};
    sig.determinism = c.determinism;
    sig.placement = c.placement;
    TENFERRO_ASSIGN_OR_RETURN(PrepareCapability answer, slot.engine_->prepare(sig));
    if (answer.kind() == PrepareCapability::Kind::kPrepared &&
        (c.determinism == Determinism::kFast || answer.kernel().reproducible)) {
      SmallVector<DType, 2> result_dtypes;
      for (const program::ValueMetadata& m : results) result_dtypes.push_back(m.dtype);
      if (answer.kernel().work >= internal::kMemoMaxWork) {  // run, not remembered
        return run_extension_kernel(slot, op, inputs, result_dtypes, shapes, answer.kernel());
      }
      internal::ExtensionMemo& memo = c.extension_memos[c.next_extension_memo];
      c.next_extension_memo = (c.next_extension_memo + 1) % c.extension_memos.size();
      memo.op = retain();
      memo.engine = slot.engine_;
      memo.dtypes.clear();
      memo.layouts.clear();
      memo.shapes.clear();
      for (const OperandSignature& o : ops) {
        memo.dtypes.push_back(o.dtype);
        memo.layouts.push_back(o.layout);
        memo.shapes.push_back(Dims(o.shape));
      }
      memo.result_dtypes = std::move(result_dtypes);
      memo.result_shapes = std::move(shapes);
      memo.kernel = answer.kernel();
      return run_extension_kernel(slot, op, inputs, memo.result_dtypes, memo.result_shapes, memo.kernel);
    }
  }
  // No native engine (or it refused): a one-core-op lowering stays on the
  // fast path; anything else is promoted.
  Result<program::CoreLowering> lowering =
      program::lower_extension_to_core(op, operand_metadata,
                                       program::SpecializationRequirements{program::SpecializationAxis::kConcreteDims,
                                                                           program::SpecializationAxis::kDType},
                                       program::make_provenance(std::string(op.family_id())));
  if (lowering.ok() && lowering->kind == program::ExtensionLoweringOutcome::Kind::kLowered &&
      lowering->fragment->num_operations() == 1 && lowering->fragment->operation(program::OperationId(0)).is_core()) {
    const program::SemanticProgram& f = *lowering->fragment;
    const program::OperationView fop = f.operation(program::OperationId(0));
    // The single op must read the fragment inputs directly.
    SmallVector<Tensor, 4> operands;
    bool direct = f.outputs().size() == 1 && f.outputs()[0] == fop.result(0);
    for (program::ValueId v : fop.operands()) {
      if (v.index() >= f.num_inputs()) direct = false;
      if (direct) operands.push_back(inputs[v.index()]);
    }
    if (direct) {
      Result<Tensor> out =
          apply(fop.core_op(), std::span<const Tensor>(operands.data(), operands.size()), fop.attributes());
      if (!out.ok()) return out.status();
      TensorList outputs;
      outputs.push_back(std::move(*out));
      return outputs;
    }
  }
  return promote_extension(retain(), inputs);
}

}  // namespace tenferro::runtime
