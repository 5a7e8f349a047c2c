// DotGeneralComposite: executes a TtgtPlan (dot_general_planner.h): layout
// copies, then GEMM jobs in the parallel mode chosen once per call (Note
// [dot_general parallel mode]), or the elementwise / integer loops.
#include "tenferro/cpu/gemm/dot_general.h"

#include <algorithm>
#include <atomic>
#include <complex>
#include <mutex>
#include <type_traits>
#include <vector>

#include "cpu/gemm/dot_general_planner.h"
#include "cpu/gemm/dot_general_tiny.h"
#include "cpu/gemm/integer_gemm.h"
#include "cpu/gemm/native/gemm_workspace_pool.h"
#include "cpu/kernels/elementwise_functors.h"
#include "tenferro/base/assert.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/cpu/kernels/layout.h"

namespace tenferro::cpu {
namespace {

using internal::AxisList;
using internal::kLhs;
using internal::kOut;
using internal::kRhs;
using internal::PlanAxis;
using internal::Slot;
using internal::TtgtPlan;

// Records the first error of concurrent jobs.
class FirstError {
 public:
  void set(Status st) {
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.ok()) status_ = std::move(st);
  }
  Status take() { return std::move(status_); }

 private:
  std::mutex mutex_;
  Status status_;
};

// Element offsets of job `outer` of the looped batch runs (last run fastest).
void decode_outer(const AxisList& loops, std::int64_t outer, std::int64_t (&off)[3]) {
  off[0] = off[1] = off[2] = 0;
  for (std::size_t r = loops.size(); r-- > 0;) {
    const std::int64_t idx = outer % loops[r].extent;
    outer /= loops[r].extent;
    for (int s = 0; s < 3; ++s) off[s] += idx * loops[r].stride[s];
  }
}

// The batch split into looped runs and one inner (strided-batch) run.
struct BatchGeometry {
  AxisList loops;
  PlanAxis inner;  // extent 1 when there is no batch
  std::int64_t jobs = 1;

  explicit BatchGeometry(const AxisList& batch) {
    loops = internal::fuse_batch_runs(batch);
    if (!loops.empty()) {
      inner = loops.back();
      loops.pop_back();
    }
    jobs = inner.extent * internal::group_extent(loops);
  }

  // Element offsets of job `j`.
  void offsets(std::int64_t j, std::int64_t (&off)[3]) const {
    decode_outer(loops, j / inner.extent, off);
    for (int s = 0; s < 3; ++s) off[s] += (j % inner.extent) * inner.stride[s];
  }

  // Calls fn(offsets, first_inner, count) for the jobs [j0, j1) in runs
  // that are contiguous in the inner batch.
  template <class F>
  void for_runs(std::int64_t j0, std::int64_t j1, F&& fn) const {
    while (j0 < j1) {
      const std::int64_t outer = j0 / inner.extent;
      const std::int64_t i0 = j0 % inner.extent;
      const std::int64_t count = std::min(inner.extent - i0, j1 - j0);
      std::int64_t off[3];
      decode_outer(loops, outer, off);
      for (int s = 0; s < 3; ++s) off[s] += i0 * inner.stride[s];
      fn(off, count);
      j0 += count;
    }
  }
};

// Note [Elementwise blocks]: the elementwise loop walks the innermost batch
// runs, up to kElementwiseBlock elements together, through per-tensor offset
// tables built once per call, and decodes an index only once per block. A
// broadcast product (Note [Broadcast products]) over a graphical model's
// extent-2 and -3 axes has runs of a few elements (a factor's axes
// interleave with the others), and decoding per run cost more than the
// multiply. Runs of kElementwiseShortRun elements or more go to the
// elementwise kernel instead (Note [Elementwise products as kernels]).
constexpr std::int64_t kElementwiseBlock = 512;
constexpr std::int64_t kElementwiseShortRun = 16;

// Note [Elementwise products as kernels]
// An elementwise product whose innermost batch runs are not short (Note
// [Elementwise blocks]) is the elementwise kernel's multiply (cpu::binary, kMul)
// over the fused batch runs as three strided views: its contiguous loops
// vectorize complex products too (std::complex's operator* calls __muldc3),
// and an operand transposed against the output (einsum `ij,ji->ij`) is
// packed tile by tile (Note [Packed transposed tiles] in
// kernels/elementwise_loop.h) instead of read one cache line per element.
// The kernel gets ctx only in kOuter mode, so the product forks when the
// composite's threshold says so and never below it. Both loops multiply as
// internal::MulOp does (integers wrap; complex written out).

struct ElementwiseBlocks {
  AxisList outer;                     // looped once per block (last fastest)
  std::int64_t size = 1;              // elements per block
  std::int64_t count = 1;             // blocks
  bool unit[3] = {true, true, true};  // table[s][i] == i for every i
  std::int64_t table[3][kElementwiseBlock];

  // From the runs `geo` fused; false when the innermost run alone fills a
  // block (geo's plain runs are then long enough).
  bool init(const BatchGeometry& geo) {
    AxisList runs = geo.loops;
    runs.push_back(geo.inner);
    std::size_t first = runs.size();
    while (first > 0 && size * runs[first - 1].extent <= kElementwiseBlock) size *= runs[--first].extent;
    if (first == runs.size() || size == 1) return false;
    outer.append(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(first));
    count = internal::group_extent(outer);
    for (int s = 0; s < 3; ++s) table[s][0] = 0;
    std::int64_t n = 1;  // table entries filled, innermost run first
    for (std::size_t r = runs.size(); r-- > first;) {
      for (std::int64_t j = 1; j < runs[r].extent; ++j)
        for (std::int64_t i = 0; i < n; ++i)
          for (int s = 0; s < 3; ++s) table[s][j * n + i] = table[s][i] + j * runs[r].stride[s];
      n *= runs[r].extent;
    }
    for (int s = 0; s < 3; ++s)
      for (std::int64_t i = 0; i < size; ++i) unit[s] = unit[s] && table[s][i] == i;
    return true;
  }

  // o[to[i]] = l[tl[i]] * r[tr[i]] over the blocks [b0, b1).
  template <class T, class Mul>
  void run(const T* lhs, const T* rhs, T* out, std::int64_t b0, std::int64_t b1, Mul mul) const {
    const std::int64_t* tl = table[kLhs];
    const std::int64_t* tr = table[kRhs];
    const std::int64_t* to = table[kOut];
    for (std::int64_t b = b0; b < b1; ++b) {
      std::int64_t off[3];
      decode_outer(outer, b, off);
      const T* l = lhs + off[kLhs];
      const T* r = rhs + off[kRhs];
      T* o = out + off[kOut];
      if (unit[kOut] && unit[kRhs]) {
        for (std::int64_t i = 0; i < size; ++i) o[i] = mul(l[tl[i]], r[i]);
      } else if (unit[kOut] && unit[kLhs]) {
        for (std::int64_t i = 0; i < size; ++i) o[i] = mul(l[i], r[tr[i]]);
      } else {
        for (std::int64_t i = 0; i < size; ++i) o[to[i]] = mul(l[tl[i]], r[tr[i]]);
      }
    }
  }
};

// A dense buffer whose memory order follows the plan ([B, first, second]
// groups, each in plan order) viewed with axes in `logical_shape` order;
// `axis_slot` selects which tensor's axis numbers the plan axes carry.
Result<Tensor> allocate_in_plan_order(const AxisList& b, const AxisList& first, const AxisList& second, Slot axis_slot,
                                      IntArrayRef logical_shape, DType dtype,
                                      const std::shared_ptr<HostAllocator>& allocator) {
  const std::int64_t rank = static_cast<std::int64_t>(logical_shape.size());
  Dims order;  // logical axes in memory order
  SmallVector<bool, 8> placed(static_cast<std::size_t>(rank), false);
  for (const AxisList* g : {&b, &first, &second}) {
    for (const PlanAxis& a : *g) {
      if (a.axis[axis_slot] >= 0) {
        order.push_back(a.axis[axis_slot]);
        placed[static_cast<std::size_t>(a.axis[axis_slot])] = true;
      }
    }
  }
  for (std::int64_t a = 0; a < rank; ++a)
    if (!placed[static_cast<std::size_t>(a)]) order.push_back(a);
  Dims mem_shape;
  for (std::int64_t a : order) mem_shape.push_back(logical_shape[static_cast<std::size_t>(a)]);
  TENFERRO_ASSIGN_OR_RETURN(Tensor buffer, Tensor::empty(mem_shape, dtype, MemoryOrder::kRowMajor, allocator));
  Dims inverse(static_cast<std::size_t>(rank));
  for (std::int64_t i = 0; i < rank; ++i) inverse[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
  return buffer.permute(inverse);
}

// Sets `slot` strides of the plan axes from `t`'s strides (axis numbers of
// `axis_slot`).
void take_strides(AxisList& group, Slot slot, Slot axis_slot, const Tensor& t) {
  for (PlanAxis& a : group) a.stride[slot] = t.strides()[static_cast<std::size_t>(a.axis[axis_slot])];
}

// Copies an operand into a dense [B, first, second] buffer; the plan axes
// then carry the buffer's strides. The buffer is viewed with the operand's
// non-trivial axes renumbered 0..r-1 in memory order.
Result<Tensor> materialize_operand(const TensorView& src, Slot slot, AxisList& b, AxisList& first, AxisList& second,
                                   const ParallelContext& ctx, const std::shared_ptr<HostAllocator>& allocator) {
  Dims shape, strides;
  for (const AxisList* g : {&b, &first, &second}) {
    for (const PlanAxis& a : *g) {
      shape.push_back(a.extent);
      strides.push_back(a.stride[slot]);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(Tensor dense, Tensor::empty(shape, src.dtype, MemoryOrder::kRowMajor, allocator));
  const TensorView from{src.data, shape, strides, src.dtype, src.storage};
  TENFERRO_TRY(copy_into(from, dense.view(), ctx));
  std::size_t i = 0;
  for (AxisList* g : {&b, &first, &second})
    for (PlanAxis& a : *g) a.stride[slot] = dense.strides()[i++];
  return dense;
}

template <class T>
void zero_fill_typed(const TensorView& out) {
  const std::int64_t rank = out.rank();
  const std::int64_t total = out.numel();
  Dims idx(static_cast<std::size_t>(rank), 0);
  T* base = static_cast<T*>(out.data);
  std::int64_t off = 0;
  for (std::int64_t e = 0; e < total; ++e) {
    base[off] = T(0);
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      if (++idx[du] < out.shape[du]) {
        off += out.strides[du];
        break;
      }
      off -= (out.shape[du] - 1) * out.strides[du];
      idx[du] = 0;
    }
  }
}

// Element offsets of every index of a group in `slot` (mixed radix).
std::vector<std::int64_t> group_offsets(const AxisList& g, Slot slot) {
  std::vector<std::int64_t> offs(1, 0);
  for (const PlanAxis& a : g) {
    std::vector<std::int64_t> next;
    next.reserve(offs.size() * static_cast<std::size_t>(a.extent));
    for (std::int64_t o : offs)
      for (std::int64_t i = 0; i < a.extent; ++i) next.push_back(o + i * a.stride[slot]);
    offs = std::move(next);
  }
  return offs;
}

ParallelMode select_mode(int threads, std::int64_t jobs, double job_flops, bool provider_sequential_per_worker,
                         const DotGeneralOptions& options) {
  if (threads <= 1) return ParallelMode::kSequential;
  const bool small_jobs = job_flops <= static_cast<double>(options.outer_max_job_flops);
  if (jobs >= threads && provider_sequential_per_worker && (small_jobs || jobs >= 4LL * threads)) {
    return ParallelMode::kOuter;
  }
  return ParallelMode::kInner;
}

}  // namespace

std::string_view to_string(DotGeneralPath path) noexcept {
  switch (path) {
    case DotGeneralPath::kEmpty:
      return "empty";
    case DotGeneralPath::kZeroFill:
      return "zero_fill";
    case DotGeneralPath::kElementwise:
      return "elementwise";
    case DotGeneralPath::kGemm:
      return "gemm";
    case DotGeneralPath::kDirect:
      return "direct";
    case DotGeneralPath::kInteger:
      return "integer";
    case DotGeneralPath::kTiny:
      return "tiny";
  }
  return "unknown";
}

std::string_view to_string(ParallelMode mode) noexcept {
  switch (mode) {
    case ParallelMode::kSequential:
      return "sequential";
    case ParallelMode::kInner:
      return "inner";
    case ParallelMode::kOuter:
      return "outer";
  }
  return "unknown";
}

DotGeneralComposite::DotGeneralComposite(std::shared_ptr<const CpuGemmProvider> gemm,
                                         std::shared_ptr<const CpuGeneralContractionProvider> direct,
                                         DotGeneralOptions options)
    : gemm_(std::move(gemm)), direct_(std::move(direct)), options_(options) {
  TENFERRO_CHECK(gemm_ != nullptr);
  if (options_.outer_max_job_flops <= 0) options_.outer_max_job_flops = 2LL * 128 * 128 * 128;
  if (options_.elementwise_parallel_min <= 0) options_.elementwise_parallel_min = 32768;
  if (options_.tiny_max_work == 0) options_.tiny_max_work = 256;
  if (options_.integer_parallel_min_work <= 0) options_.integer_parallel_min_work = std::int64_t{1} << 20;
  integer_workspace_ = std::make_shared<internal::GemmWorkspacePool>();
}

DotGeneralCounters DotGeneralComposite::counters() const noexcept {
  DotGeneralCounters c;
  c.tiny_calls = calls_.load(kTinyCalls);
  c.planned_calls = calls_.load(kPlannedCalls);
  return c;
}

void DotGeneralComposite::run_tiny(const internal::TinyContraction& t, const TensorView& lhs, const TensorView& rhs,
                                   void* out, DotGeneralPlan* plan_out) const noexcept {
  internal::run_tiny(lhs.dtype, t, lhs.data, rhs.data, out);
  calls_.add(kTinyCalls, 1);
  if (plan_out != nullptr) {
    *plan_out = DotGeneralPlan{};
    plan_out->path = DotGeneralPath::kTiny;
    plan_out->m = t.m;
    plan_out->n = t.n;
    plan_out->k = t.k;
    plan_out->jobs = t.batch;
  }
}

bool DotGeneralComposite::gemm_if_tiny(DType dtype, const GemmProblem& p) const noexcept {
  if (options_.tiny_max_work <= 0 || dtype == DType::kBool || p.alpha != 1.0 || p.beta != 0.0) return false;
  if (p.m > options_.tiny_max_work || p.n > options_.tiny_max_work || p.k > options_.tiny_max_work ||
      p.m * p.n * p.k > options_.tiny_max_work) {
    return false;
  }
  internal::TinyContraction t;
  t.m = p.m;
  t.n = p.n;
  t.k = p.k;
  t.lhs[1] = p.a.row_stride;
  t.lhs[2] = p.a.col_stride;
  t.rhs[1] = p.b.row_stride;
  t.rhs[2] = p.b.col_stride;
  t.out[1] = p.c.row_stride;
  t.out[2] = p.c.col_stride;
  internal::run_tiny(dtype, t, p.a.data, p.b.data, p.c.data);
  calls_.add(kTinyCalls, 1);
  return true;
}

Result<Dims> DotGeneralComposite::result_shape(const TensorView& lhs, const TensorView& rhs,
                                               const DotGeneralDims& dims) {
  GemmSupport all;
  all.f32 = all.f64 = all.c64 = all.c128 = true;
  TENFERRO_TRY(internal::validate_dot_general(lhs, rhs, dims, nullptr, all));
  return internal::dot_general_result_shape(lhs, rhs, dims);
}

Result<DotGeneralPlan> DotGeneralComposite::plan(const TensorView& lhs, const TensorView& rhs,
                                                 const DotGeneralDims& dims, const TensorView* out, int threads) const {
  TENFERRO_TRY(internal::validate_dot_general(lhs, rhs, dims, out, gemm_->support()));
  TtgtPlan p = internal::plan_ttgt(lhs, rhs, dims, out, gemm_->support().strides);
  if (p.summary.path == DotGeneralPath::kGemm) {
    p.summary.mode = select_mode(
        threads, p.summary.jobs,
        2.0 * static_cast<double>(p.summary.m) * static_cast<double>(p.summary.n) * static_cast<double>(p.summary.k),
        can_run_sequential_per_worker(gemm_->capability()), options_);
  } else if (p.summary.path == DotGeneralPath::kElementwise) {
    p.summary.mode = threads > 1 && p.summary.jobs >= options_.elementwise_parallel_min ? ParallelMode::kOuter
                                                                                        : ParallelMode::kSequential;
  }
  return p.summary;
}

Result<Tensor> DotGeneralComposite::dot_general(const TensorView& lhs, const TensorView& rhs,
                                                const DotGeneralDims& dims, const ParallelContext& ctx,
                                                DotGeneralPlan* plan_out,
                                                const std::shared_ptr<HostAllocator>& allocator) const {
  TENFERRO_TRY(internal::validate_dot_general(lhs, rhs, dims, nullptr, gemm_->support()));
  const Dims shape = internal::dot_general_result_shape(lhs, rhs, dims);
  if (options_.tiny_max_work > 0) {
    const Dims strides = row_major_strides(shape);
    const TensorView row_major{nullptr, shape, strides, lhs.dtype, nullptr};
    internal::TinyContraction tiny;
    if (internal::match_tiny(lhs, rhs, dims, row_major, options_.tiny_max_work, tiny)) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(shape, lhs.dtype, MemoryOrder::kRowMajor, allocator));
      run_tiny(tiny, lhs, rhs, out.data(), plan_out);
      return out;
    }
  }
  if (direct_ != nullptr) {
    TENFERRO_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(shape, lhs.dtype, MemoryOrder::kRowMajor, allocator));
    TENFERRO_TRY(dot_general_into(lhs, rhs, dims, out.view(), ctx, plan_out, allocator));
    return out;
  }
  TtgtPlan p = internal::plan_ttgt(lhs, rhs, dims, nullptr, gemm_->support().strides);
  Tensor out;
  if (p.summary.path == DotGeneralPath::kEmpty || p.summary.path == DotGeneralPath::kZeroFill) {
    TENFERRO_ASSIGN_OR_RETURN(out, Tensor::empty(shape, lhs.dtype, MemoryOrder::kRowMajor, allocator));
  } else {
    TENFERRO_ASSIGN_OR_RETURN(out, allocate_in_plan_order(p.batch, p.m, p.n, kOut, shape, lhs.dtype, allocator));
  }
  TENFERRO_TRY(run_plan(p, lhs, rhs, out.view(), /*out_is_final=*/true, ctx, plan_out, allocator));
  return out;
}

Status DotGeneralComposite::dot_general_into(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                                             const TensorView& out, const ParallelContext& ctx,
                                             DotGeneralPlan* plan_out,
                                             const std::shared_ptr<HostAllocator>& allocator) const {
  TENFERRO_TRY(internal::validate_dot_general(lhs, rhs, dims, &out, gemm_->support()));
  if (options_.tiny_max_work > 0) {
    internal::TinyContraction tiny;
    if (internal::match_tiny(lhs, rhs, dims, out, options_.tiny_max_work, tiny)) {
      run_tiny(tiny, lhs, rhs, out.data, plan_out);
      return ok_status();
    }
  }
  if (direct_ != nullptr && out.numel() > 0) {
    const Status st = direct_->contract(lhs, rhs, dims, out, ctx);
    if (st.ok()) {
      if (plan_out != nullptr) {
        *plan_out = DotGeneralPlan{};
        plan_out->path = DotGeneralPath::kDirect;
        plan_out->mode = ctx.max_threads() > 1 ? ParallelMode::kInner : ParallelMode::kSequential;
        plan_out->provider_calls = 1;
      }
      return ok_status();
    }
    if (st.code() != ErrorCode::kUnsupported) return st;
  }
  TtgtPlan p = internal::plan_ttgt(lhs, rhs, dims, &out, gemm_->support().strides);
  return run_plan(p, lhs, rhs, out, /*out_is_final=*/false, ctx, plan_out, allocator);
}

// Note [Integer GEMM] (integer_gemm.h): jobs of one batch index, one row
// block and one column block, spread over the context's workers when the
// product is large enough.
Status DotGeneralComposite::run_integer(const TtgtPlan& p, const TensorView& lhs, const TensorView& rhs,
                                        const TensorView& out, const ParallelContext& ctx, DotGeneralPlan& s) const {
  const BatchGeometry geo(p.batch);
  std::vector<std::int64_t> ml = group_offsets(p.m, kLhs), mo = group_offsets(p.m, kOut);
  std::vector<std::int64_t> nr = group_offsets(p.n, kRhs), no = group_offsets(p.n, kOut);
  std::vector<std::int64_t> kl = group_offsets(p.k, kLhs), kr = group_offsets(p.k, kRhs);
  const auto unit = [](const std::vector<std::int64_t>& offsets) {
    for (std::size_t i = 0; i < offsets.size(); ++i)
      if (offsets[i] != static_cast<std::int64_t>(i)) return false;
    return true;
  };
  // The tile's vectors run along n: where the output's unit stride is along
  // m instead, compute out^T = rhs^T lhs^T (the roles of the operands swap).
  const void* a_data = lhs.data;
  const void* b_data = rhs.data;
  Slot a_slot = kLhs, b_slot = kRhs;
  bool unit_n = unit(no);
  if (!unit_n && unit(mo)) {
    std::swap(ml, nr);
    std::swap(mo, no);
    std::swap(kl, kr);
    std::swap(a_data, b_data);
    std::swap(a_slot, b_slot);
    unit_n = true;
  }
  const auto m = static_cast<std::int64_t>(ml.size()), n = static_cast<std::int64_t>(nr.size()),
             k = static_cast<std::int64_t>(kl.size());
  const int threads = std::max(1, ctx.max_threads());
  const double work =
      static_cast<double>(geo.jobs) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const bool parallel = threads > 1 && work >= static_cast<double>(options_.integer_parallel_min_work);
  // Row blocks of at most kIntegerGemmMc rows, smaller when that leaves a
  // worker without a job.
  const std::int64_t col_blocks = (n + internal::kIntegerGemmNc - 1) / internal::kIntegerGemmNc;
  std::int64_t mc = internal::kIntegerGemmMc;
  if (parallel && geo.jobs * col_blocks * ((m + mc - 1) / mc) < threads) {
    mc = std::max<std::int64_t>(1, (m + threads - 1) / threads);
  }
  const std::int64_t row_blocks = (m + mc - 1) / mc;
  const std::int64_t tiles = row_blocks * col_blocks;
  const std::int64_t jobs = geo.jobs * tiles;
  s.jobs = jobs;
  s.mode = parallel && jobs > 1 ? ParallelMode::kOuter : ParallelMode::kSequential;

  const internal::IntegerGemmTable& table = internal::integer_gemm_table(ctx.kernel_isa());
  s.integer_kernel_isa = table.isa;
  FirstError errors;
  std::atomic<std::int64_t> narrow_blocks{0};
  visit_dtype(lhs.dtype, [&]<class T>(T) {
    if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
      const internal::IntegerGemmKernel<T>& kernel = table.kernel<T>();
      const auto bytes =
          static_cast<std::size_t>(kernel.workspace(mc, std::min(n, internal::kIntegerGemmNc), k)) * sizeof(T);
      auto body = [&](std::int64_t j0, std::int64_t j1) {
        std::int64_t narrow = 0;
        internal::GemmWorkspacePool::Lease lease = integer_workspace_->acquire(bytes);
        if (!lease) {
          errors.set(make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                                "dot_general: no memory for the integer kernel's {} byte packing buffer", bytes));
          return;
        }
        for (std::int64_t j = j0; j < j1; ++j) {
          const std::int64_t b = j / tiles, tile = j % tiles;
          const std::int64_t i0 = (tile / col_blocks) * mc, c0 = (tile % col_blocks) * internal::kIntegerGemmNc;
          std::int64_t off[3];
          geo.offsets(b, off);
          const internal::IntegerGemmJob<T> job{static_cast<const T*>(a_data) + off[a_slot],
                                                static_cast<const T*>(b_data) + off[b_slot],
                                                static_cast<T*>(out.data) + off[kOut],
                                                ml.data() + i0,
                                                mo.data() + i0,
                                                nr.data() + c0,
                                                no.data() + c0,
                                                kl.data(),
                                                kr.data(),
                                                std::min(mc, m - i0),
                                                std::min(internal::kIntegerGemmNc, n - c0),
                                                k,
                                                unit_n};
          narrow += kernel.run(job, static_cast<T*>(lease.data()));
        }
        narrow_blocks.fetch_add(narrow, std::memory_order_relaxed);
      };
      if (s.mode == ParallelMode::kOuter) {
        ctx.parallel_for(0, jobs, 1, body);
      } else {
        body(0, jobs);
      }
    }
  });
  s.integer_narrow_blocks = narrow_blocks.load(std::memory_order_relaxed);
  return errors.take();
}

Status DotGeneralComposite::run_plan(TtgtPlan& p, const TensorView& lhs, const TensorView& rhs, const TensorView& out,
                                     bool out_is_final, const ParallelContext& ctx, DotGeneralPlan* plan_out,
                                     const std::shared_ptr<HostAllocator>& allocator) const {
  calls_.add(kPlannedCalls, 1);
  DotGeneralPlan& s = p.summary;
  const int threads = std::max(1, ctx.max_threads());
  const DType dtype = lhs.dtype;
  const std::int64_t elem = static_cast<std::int64_t>(dtype_size(dtype));
  auto report = [&] {
    if (plan_out != nullptr) *plan_out = s;
  };

  if (s.path == DotGeneralPath::kEmpty) {
    report();
    return ok_status();
  }
  if (s.path == DotGeneralPath::kZeroFill) {
    visit_dtype(dtype, [&]<class T>(T) { zero_fill_typed<T>(out); });
    report();
    return ok_status();
  }
  // In "free output" mode the output buffer was allocated in plan order;
  // take its strides (dot_general_into planned with the real ones).
  if (out_is_final) {
    for (AxisList* g : {&p.batch, &p.m, &p.n})
      for (PlanAxis& a : *g) a.stride[kOut] = out.strides[static_cast<std::size_t>(a.axis[kOut])];
  }

  if (s.path == DotGeneralPath::kInteger) {
    TENFERRO_TRY(run_integer(p, lhs, rhs, out, ctx, s));
    report();
    return ok_status();
  }
  if (s.path == DotGeneralPath::kElementwise) {
    const BatchGeometry geo(p.batch);
    s.jobs = geo.jobs;
    s.mode =
        threads > 1 && geo.jobs >= options_.elementwise_parallel_min ? ParallelMode::kOuter : ParallelMode::kSequential;
    ElementwiseBlocks blocks;
    const bool blocked = geo.inner.extent < kElementwiseShortRun && blocks.init(geo);
    s.elementwise_block = blocked ? blocks.size : 0;
    if (!blocked) {
      // Note [Elementwise products as kernels]: longer runs are the
      // elementwise kernel's multiply over the fused batch runs.
      SmallVector<std::int64_t, 8> shape;
      SmallVector<std::int64_t, 8> strides[3];
      const auto add = [&](const PlanAxis& a) {
        shape.push_back(a.extent);
        for (int t = 0; t < 3; ++t) strides[t].push_back(a.stride[t]);
      };
      for (const PlanAxis& a : geo.loops) add(a);
      add(geo.inner);
      const TensorView lv{lhs.data, shape, strides[kLhs], dtype, lhs.storage};
      const TensorView rv{rhs.data, shape, strides[kRhs], dtype, rhs.storage};
      const TensorView ov{out.data, shape, strides[kOut], dtype, out.storage};
      const SequentialContext sequential;
      KernelStats stats;
      TENFERRO_TRY(binary(BinaryOp::kMul, lv, rv, ov, s.mode == ParallelMode::kOuter ? ctx : sequential, &stats));
      s.elementwise_tiled = stats.tiled_inner + stats.packed_tiles > 0;
      report();
      return ok_status();
    }
    const auto* lb = static_cast<const char*>(lhs.data);
    const auto* rb = static_cast<const char*>(rhs.data);
    auto* ob = static_cast<char*>(out.data);
    visit_dtype(dtype, [&]<class T>(T) {
      if constexpr (!std::is_same_v<T, bool>) {
        auto body = [&](std::int64_t b0, std::int64_t b1) {
          blocks.run(reinterpret_cast<const T*>(lb), reinterpret_cast<const T*>(rb), reinterpret_cast<T*>(ob), b0, b1,
                     internal::MulOp{});
        };
        if (s.mode == ParallelMode::kOuter) {
          ctx.parallel_for(0, blocks.count,
                           std::max<std::int64_t>(1, options_.elementwise_parallel_min / 2 / blocks.size), body);
        } else {
          body(0, blocks.count);
        }
      }
    });
    report();
    return ok_status();
  }

  // TTGT: layout copies (each one fan-out level on ctx), then GEMM jobs.
  Tensor lhs_dense, rhs_dense, out_temp;
  const void* lhs_data = lhs.data;
  const void* rhs_data = rhs.data;
  void* out_data = out.data;
  if (p.replace[kLhs]) {
    TENFERRO_ASSIGN_OR_RETURN(lhs_dense, materialize_operand(lhs, kLhs, p.batch, p.m, p.k, ctx, allocator));
    lhs_data = lhs_dense.data();
  }
  if (p.replace[kRhs]) {
    TENFERRO_ASSIGN_OR_RETURN(rhs_dense, materialize_operand(rhs, kRhs, p.batch, p.k, p.n, ctx, allocator));
    rhs_data = rhs_dense.data();
  }
  if (p.replace[kOut] && !out_is_final) {
    TENFERRO_ASSIGN_OR_RETURN(out_temp, allocate_in_plan_order(p.batch, p.m, p.n, kOut, out.shape, dtype, allocator));
    for (AxisList* g : {&p.batch, &p.m, &p.n}) take_strides(*g, kOut, kOut, out_temp);
    out_data = out_temp.data();
  }

  const BatchGeometry geo(p.batch);
  s.jobs = geo.jobs;
  s.batch_loop_dims = static_cast<std::int64_t>(geo.loops.size());
  s.mode = select_mode(threads, geo.jobs,
                       2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k),
                       can_run_sequential_per_worker(gemm_->capability()), options_);
  GemmProblem proto;
  proto.m = s.m;
  proto.n = s.n;
  proto.k = s.k;
  proto.a = GemmInput{nullptr, internal::group_stride(p.m, kLhs), internal::group_stride(p.k, kLhs)};
  proto.b = GemmInput{nullptr, internal::group_stride(p.k, kRhs), internal::group_stride(p.n, kRhs)};
  proto.c = GemmOutput{nullptr, internal::group_stride(p.m, kOut), internal::group_stride(p.n, kOut)};
  std::atomic<std::int64_t> calls{0};
  auto run_jobs = [&](std::int64_t j0, std::int64_t j1, const ParallelContext& kernel_ctx) -> Status {
    Status first;
    std::int64_t chunk_calls = 0;  // one shared add per chunk, not per call
    geo.for_runs(j0, j1, [&](const std::int64_t(&off)[3], std::int64_t count) {
      if (!first.ok()) return;
      GemmProblem prob = proto;
      prob.a.data = static_cast<const char*>(lhs_data) + off[kLhs] * elem;
      prob.b.data = static_cast<const char*>(rhs_data) + off[kRhs] * elem;
      prob.c.data = static_cast<char*>(out_data) + off[kOut] * elem;
      ++chunk_calls;
      if (count == 1) {
        first = gemm_->gemm(GemmRequest{dtype, prob}, kernel_ctx);
      } else {
        first = gemm_->gemm_strided_batched(StridedBatchedGemmRequest{dtype, prob, count, geo.inner.stride[kLhs],
                                                                      geo.inner.stride[kRhs], geo.inner.stride[kOut]},
                                            kernel_ctx);
      }
    });
    calls.fetch_add(chunk_calls, std::memory_order_relaxed);
    return first;
  };
  if (s.mode == ParallelMode::kOuter) {
    const SequentialContext sequential(ctx.kernel_isa());
    FirstError errors;
    ctx.parallel_for(0, geo.jobs, 1,
                     [&](std::int64_t j0, std::int64_t j1) { errors.set(run_jobs(j0, j1, sequential)); });
    TENFERRO_TRY(errors.take());
  } else {
    TENFERRO_TRY(run_jobs(0, geo.jobs, ctx));
  }
  s.provider_calls = calls.load(std::memory_order_relaxed);
  if (p.replace[kOut] && !out_is_final) TENFERRO_TRY(copy_into(out_temp.view(), out, ctx));
  report();
  return ok_status();
}

}  // namespace tenferro::cpu
