// ExecutionPlan: compiling a ContractionTree with its layouts (layout_planner)
// into flat per-step instructions with a planned workspace, and running them
// (Note [Einsum execution] in execution_plan.h).
#include "tenferro/einsum_cpu/execution_plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "layout_planner.h"
#include "tenferro/base/assert.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu/kernels/reduction.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::einsum {

namespace {

using internal::LabelledView;
using internal::Strides;

constexpr std::size_t kAlignment = 64;

// A view of workspace memory fixed at plan time (axes in a logical order).
struct PlannedView {
  std::int32_t buffer = -1;
  Dims shape;
  Dims strides;
};

// How one step reads one operand (Note [Einsum execution]).
struct OperandPlan {
  std::int32_t node = 0;
  bool presum = false;
  Dims presum_axes;  // axes of the node view that are summed out
  PlannedView presum_out;
  bool copy = false;
  PlannedView copy_out;
  LabelList labels;  // the operand's logical axes as the GEMM sees them
  // Note [Broadcast batch labels]: the last `broadcast` labels are batch
  // labels the operand lacks, read with stride 0; their extents.
  std::int32_t broadcast = 0;
  Dims broadcast_extents;
};

// Note [Direct small steps]
// For a small step (at most kDirectMaxMultiplyAdds multiply-adds) whose
// groups all fuse in the planned views, compile() also records the GEMM
// itself: fused m, n, k with their strides and the batch labels as loops.
// execute() then calls the GEMM provider directly on the calling thread
// (the composite would run such a step sequentially too), skipping its
// per-call validation and planning, provided every input and the output
// have the strides the plan assumed; otherwise the composite runs the step.
// A single GEMM of at most the composite's tiny_max_work multiply-adds runs
// the composite's tiny loop instead of the provider (Note [Tiny dot_general]).
// A broadcast product (a Hadamard product, a tensor scaled by a smaller one)
// is not recorded as a GEMM: that is a batch of 1 x 1 products, one provider
// call per batch row (64 x 64 complex128 `ij,ij->ij` took 68 us against the
// composite's elementwise loop's 5); see Note [Direct products].
//
// Note [Direct products]
// A small Hadamard product whose operands and result have the same dense
// layout (`i,i->i`, `ij,ij->ij` of C-order arrays: every label in all three,
// no broadcasting) is recorded as one flat multiply of its elements, run by
// the elementwise kernel's contiguous loop. Through the composite the step
// was validated and planned as a dot_general on every call: a 1000-element
// `i,i->i` spent about 0.3 us there around a 0.1 us multiply, and at 256
// elements or fewer it took the tiny loop's per-element indexing instead.
// Other broadcast products keep the composite's strided loops.
constexpr double kDirectMaxMultiplyAdds = 16384.0;

struct BatchLoop {
  std::int64_t extent = 1;
  std::int64_t stride[3] = {0, 0, 0};  // lhs, rhs, out (elements)
};

// A step run directly (Note [Direct small steps]): one flat product of
// `product` elements (Note [Direct products]), else a GEMM of m, n, k.
struct DirectStep {
  bool enabled = false;
  std::int64_t product = 0;  // > 0: a flat product of this many elements
  std::int64_t m = 1, n = 1, k = 1;
  std::int64_t lhs_rs = 0, lhs_cs = 0, rhs_rs = 0, rhs_cs = 0, out_rs = 0, out_cs = 0;
  SmallVector<BatchLoop, 4> loops;  // outermost first
  Dims operand_strides[2];          // the planned strides of the operands' final views
  Dims out_strides;                 // the planned strides of the GEMM output view
};

// Note [Chunked temporaries]
// A step whose result goes through a temporary (the layout pass could not
// give the GEMM the result's order) writes the whole temporary, then reads
// it back to copy it out: for MERA's 34M-element steps that is two more
// passes over memory than the GEMM's own. When the temporary exceeds
// kChunkMinBytes, the step runs instead one value at a time of a few of its
// labels -- batch labels first, then free labels of the larger operand, in
// the temporary's order, outermost first -- until a chunk is at most
// kChunkBytes: each chunk's GEMM writes a temporary that stays in cache and
// is copied out at once. A free label is chunked only while a chunk stays at
// least as large as the other operand, which each chunk's GEMM reads again.
// The last label chunked runs in ranges of as many values as keep a chunk
// within kChunkBytes (and not smaller than the other operand): one value at
// a time, `ij,bjk->bik` with b = 10000 and 16 x 16 results ran 10000 GEMMs
// of 1 KB each, 6.9 ms against numpy's matmul at 1.6 ms from Python (a case
// the shape-sweep audit of 2026-12-07 found); in ranges, 2.6 ms.
constexpr std::size_t kChunkMinBytes = std::size_t{8} << 20;
constexpr std::size_t kChunkBytes = std::size_t{2} << 20;

struct ChunkAxis {
  std::int64_t extent = 1;
  std::int64_t step = 1;                    // values per chunk (more than 1: the last axis, run in ranges)
  std::int32_t operand_axis[2] = {-1, -1};  // axis in the lhs / rhs view, -1 if absent
  std::int32_t result_axis = 0;             // axis in the composite-order result
};

struct StepPlan {
  DirectStep direct;
  OperandPlan operand[2];
  cpu::DotGeneralDims dims;
  LabelList result_labels;  // composite order: batch, lhs free, rhs free
  bool root = false;
  PlannedView result;                        // non-root: the node's buffer in composite order
  SmallVector<std::int32_t, 8> output_axis;  // root: output axis of each composite-order axis
  bool temp = false;
  PlannedView temp_out;              // composite order, temporary strides (one chunk's when chunked)
  SmallVector<ChunkAxis, 4> chunks;  // Note [Chunked temporaries]; outermost first
};

// The chunks a chunked step runs (Note [Chunked temporaries]).
std::int64_t num_chunks(const StepPlan& s) {
  std::int64_t chunks = 1;
  for (const ChunkAxis& c : s.chunks) chunks *= (c.extent + c.step - 1) / c.step;
  return chunks;
}

// How an input becomes its node view.
struct InputRecipe {
  Dims shape;                              // the operand's expected shape
  Dims node_shape;                         // one extent per distinct label
  SmallVector<std::int32_t, 8> axis_node;  // operand axis -> node axis, -1 for broadcast axes
};

// First-fit placement of buffers in one workspace, in step order.
class WorkspaceAllocator {
 public:
  std::size_t allocate(std::size_t bytes) {
    bytes = round_up(bytes);
    if (bytes == 0) return 0;
    for (std::size_t i = 0; i < free_.size(); ++i) {
      auto& [offset, size] = free_[i];
      if (size >= bytes) {
        const std::size_t at = offset;
        offset += bytes;
        size -= bytes;
        if (size == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return at;
      }
    }
    // Grow the top, absorbing a free block that ends there.
    std::size_t at = top_;
    if (!free_.empty() && free_.back().first + free_.back().second == top_) {
      at = free_.back().first;
      free_.pop_back();
    }
    top_ = at + bytes;
    return at;
  }
  void release(std::size_t offset, std::size_t bytes) {
    bytes = round_up(bytes);
    if (bytes == 0) return;
    auto it = std::lower_bound(free_.begin(), free_.end(), std::make_pair(offset, std::size_t{0}));
    it = free_.insert(it, {offset, bytes});
    // Merge with the neighbours.
    if (it + 1 != free_.end() && it->first + it->second == (it + 1)->first) {
      it->second += (it + 1)->second;
      free_.erase(it + 1);
    }
    if (it != free_.begin() && (it - 1)->first + (it - 1)->second == it->first) {
      (it - 1)->second += it->second;
      free_.erase(it);
    }
  }
  std::size_t peak() const noexcept { return top_; }
  static std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  std::vector<std::pair<std::size_t, std::size_t>> free_;  // (offset, size), sorted, disjoint
  std::size_t top_ = 0;
};

std::int32_t position(const LabelList& labels, LabelId label) {
  const auto it = std::find(labels.begin(), labels.end(), label);
  TENFERRO_ASSERT(it != labels.end());
  return static_cast<std::int32_t>(it - labels.begin());
}

Dims extents_of(const Network& net, const LabelList& labels) {
  Dims out;
  for (LabelId l : labels) out.push_back(net.extent(l));
  return out;
}

Dims to_dims(const Strides& strides) { return Dims(strides.begin(), strides.end()); }

void count_mode(cpu::ParallelMode mode, ExecutionStats& stats) {
  switch (mode) {
    case cpu::ParallelMode::kInner:
      ++stats.inner_steps;
      break;
    case cpu::ParallelMode::kOuter:
      ++stats.outer_steps;
      break;
    case cpu::ParallelMode::kSequential:
      ++stats.sequential_steps;
      break;
  }
}

// Runs a step recorded by compile_direct (Note [Direct small steps]) on
// the calling thread: one flat product, one GEMM, or strided-batched GEMMs
// over the innermost batch loop with the outer loops around them.
Status run_direct(const DirectStep& d, const TensorView& lhs, const TensorView& rhs, const TensorView& out,
                  const cpu::DotGeneralComposite& composite, DType dtype) {
  const cpu::SequentialContext sequential;
  if (d.product > 0) {  // Note [Direct products]
    const std::int64_t shape[1] = {d.product};
    const std::int64_t unit[1] = {1};
    return cpu::binary(cpu::BinaryOp::kMul, TensorView{lhs.data, shape, unit, dtype, nullptr},
                       TensorView{rhs.data, shape, unit, dtype, nullptr},
                       TensorView{out.data, shape, unit, dtype, nullptr}, sequential);
  }
  const cpu::CpuGemmProvider& gemm = composite.gemm_provider();
  const auto elem = static_cast<std::int64_t>(dtype_size(dtype));
  cpu::GemmProblem problem;
  problem.m = d.m;
  problem.n = d.n;
  problem.k = d.k;
  problem.a = cpu::GemmInput{lhs.data, d.lhs_rs, d.lhs_cs};
  problem.b = cpu::GemmInput{rhs.data, d.rhs_rs, d.rhs_cs};
  problem.c = cpu::GemmOutput{out.data, d.out_rs, d.out_cs};
  if (d.loops.empty()) {
    if (composite.gemm_if_tiny(dtype, problem)) return ok_status();  // Note [Tiny dot_general]
    return gemm.gemm(cpu::GemmRequest{dtype, problem}, sequential);
  }
  const BatchLoop& inner = d.loops.back();
  const std::size_t outer = d.loops.size() - 1;
  SmallVector<std::int64_t, 4> index(outer, 0);
  while (true) {
    std::int64_t offset[3] = {0, 0, 0};
    for (std::size_t i = 0; i < outer; ++i)
      for (int t = 0; t < 3; ++t) offset[t] += index[i] * d.loops[i].stride[t];
    cpu::StridedBatchedGemmRequest request{dtype,           problem,         inner.extent,
                                           inner.stride[0], inner.stride[1], inner.stride[2]};
    request.problem.a.data = static_cast<const char*>(lhs.data) + offset[0] * elem;
    request.problem.b.data = static_cast<const char*>(rhs.data) + offset[1] * elem;
    request.problem.c.data = static_cast<char*>(out.data) + offset[2] * elem;
    TENFERRO_TRY(gemm.gemm_strided_batched(request, sequential));
    std::size_t axis = outer;
    while (axis > 0 && ++index[axis - 1] == d.loops[axis - 1].extent) index[--axis] = 0;
    if (axis == 0) return ok_status();
  }
}

}  // namespace

struct ExecutionPlan::Impl {
  ContractionTree tree;
  internal::TreeLayout layout;
  std::vector<InputRecipe> inputs;
  std::vector<StepPlan> steps;
  std::vector<std::size_t> buffer_offset;
  std::vector<std::size_t> buffer_bytes;
  std::vector<PlannedView> intermediate;  // node n + k, axes in memory order
  Dims output_shape;
  std::size_t workspace = 0;
  std::int64_t planned_copies = 0;
  // A network without steps: one reduce (or copy) of input 0 into the output,
  // over the node's axes of extent > 1 (Note [Unit axes of one operand]).
  SmallVector<std::int32_t, 8> single_node_axis;    // the axes read, in node order
  Dims single_reduce_axes;                          // positions in single_node_axis
  SmallVector<std::int32_t, 8> single_output_axis;  // per kept axis read: its output axis

  explicit Impl(ContractionTree t) : tree(std::move(t)) {}

  std::int32_t add_buffer(WorkspaceAllocator& alloc, std::size_t bytes) {
    buffer_offset.push_back(alloc.allocate(bytes));
    buffer_bytes.push_back(bytes);
    return static_cast<std::int32_t>(buffer_offset.size() - 1);
  }
  void release(WorkspaceAllocator& alloc, std::int32_t buffer) {
    if (buffer >= 0)
      alloc.release(buffer_offset[static_cast<std::size_t>(buffer)], buffer_bytes[static_cast<std::size_t>(buffer)]);
  }
  std::size_t bytes_of(const LabelList& labels) const {
    const Network& net = tree.network();
    std::size_t n = dtype_size(net.dtype());
    for (LabelId l : labels) n *= static_cast<std::size_t>(net.extent(l));
    return n;
  }

  void compile_inputs() {
    const Network& net = tree.network();
    for (std::int32_t i = 0; i < net.num_operands(); ++i) {
      const NetworkOperand& op = net.operand(i);
      InputRecipe r;
      for (LabelId l : op.labels) r.node_shape.push_back(net.extent(l));
      for (LabelId l : op.axis_labels) {
        r.shape.push_back(l == kBroadcastAxis ? 1 : net.extent(l));
        r.axis_node.push_back(l == kBroadcastAxis ? -1 : position(op.labels, l));
      }
      inputs.push_back(std::move(r));
    }
  }

  // Note [Unit axes of one operand]
  // The node's axes of extent 1 are left out of the copy or reduce (each
  // addresses one element): `...->...` of 65 such axes ran into the
  // kernels' rank limit (kUnsupported, while two operands ran; the C ABI
  // audit of 2026-12-07), and 2^65 elements cannot exist. The extents are
  // the plan's, so the axes are chosen here, not per run.
  void compile_single() {
    const Network& net = tree.network();
    const LabelList& labels = tree.node_labels(0);
    for (std::size_t j = 0; j < labels.size(); ++j) {
      if (net.extent(labels[j]) == 1) continue;
      if (std::find(tree.root_summed().begin(), tree.root_summed().end(), labels[j]) != tree.root_summed().end()) {
        single_reduce_axes.push_back(static_cast<std::int64_t>(single_node_axis.size()));
      } else {
        single_output_axis.push_back(position(net.output(), labels[j]));
      }
      single_node_axis.push_back(static_cast<std::int32_t>(j));
    }
  }

  // The planned view of a step operand after pre-summing and copying (and
  // its broadcast axes: Note [Broadcast batch labels]).
  Dims planned_operand_strides(const OperandPlan& o) const {
    Dims strides;
    if (o.copy) {
      strides = o.copy_out.strides;
    } else if (o.presum) {
      strides = o.presum_out.strides;
    } else {
      const LabelledView& v = layout.nodes[static_cast<std::size_t>(o.node)];
      LabelList own = o.labels;
      own.resize(own.size() - static_cast<std::size_t>(o.broadcast));
      strides = to_dims(internal::strides_in_order(v, own));
    }
    for (std::int32_t i = 0; i < o.broadcast; ++i) strides.push_back(0);
    return strides;
  }

  // Note [Direct small steps].
  void compile_direct(const ContractionStep& s, StepPlan& p) const {
    const Network& net = tree.network();
    if (!(s.multiply_adds <= kDirectMaxMultiplyAdds)) return;
    const bool product = internal::is_broadcast_step(net, s);
    if (product && (!is_inexact(net.dtype()) || p.operand[0].broadcast > 0 || p.operand[1].broadcast > 0)) return;
    DirectStep d;
    d.operand_strides[0] = planned_operand_strides(p.operand[0]);
    d.operand_strides[1] = planned_operand_strides(p.operand[1]);
    if (p.temp) {
      d.out_strides = p.temp_out.strides;
    } else if (p.root) {
      const Strides row_major = internal::dense_strides(net, net.output(), net.output());
      for (std::int32_t axis : p.output_axis) d.out_strides.push_back(row_major[static_cast<std::size_t>(axis)]);
    } else {
      d.out_strides = p.result.strides;
    }
    const LabelList* labels[3] = {&p.operand[0].labels, &p.operand[1].labels, &p.result_labels};
    const Dims* strides[3] = {&d.operand_strides[0], &d.operand_strides[1], &d.out_strides};
    const auto stride = [&](int t, LabelId l) -> std::int64_t {
      return (*strides[t])[static_cast<std::size_t>(position(*labels[t], l))];
    };
    if (product) {
      // Note [Direct products]: every result label of extent > 1 in both
      // operands at the result's stride, and those strides dense.
      SmallVector<std::pair<std::int64_t, std::int64_t>, 8> axes;  // (stride, extent)
      for (LabelId l : p.result_labels) {
        const std::int64_t extent = net.extent(l);
        if (extent == 0) return;
        if (extent == 1) continue;
        for (int t = 0; t < 2; ++t) {
          const LabelList& own = *labels[t];
          if (std::find(own.begin(), own.end(), l) == own.end() || stride(t, l) != stride(2, l)) return;
        }
        axes.emplace_back(stride(2, l), extent);
      }
      std::sort(axes.begin(), axes.end());  // innermost first
      std::int64_t elements = 1;
      for (const auto& [axis_stride, extent] : axes) {
        if (axis_stride != elements) return;
        elements *= extent;
      }
      d.product = elements;
      d.enabled = true;
      p.direct = std::move(d);
      return;
    }
    // A group fuses in tensor t when its labels of extent > 1, by
    // decreasing stride, are nested; then (extent, innermost stride).
    const auto fuse = [&](const LabelList& group, int t, std::int64_t& extent, std::int64_t& inner) {
      SmallVector<std::pair<std::int64_t, LabelId>, 8> e;
      for (LabelId l : group) {
        if (net.extent(l) == 0) return false;
        if (net.extent(l) != 1) e.emplace_back(stride(t, l), l);
      }
      std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      extent = 1;
      inner = 0;
      for (std::size_t i = 0; i < e.size(); ++i) {
        extent *= net.extent(e[i].second);
        if (i + 1 < e.size() && e[i].first != e[i + 1].first * net.extent(e[i + 1].second)) return false;
      }
      if (!e.empty()) inner = e.back().first;
      return true;
    };
    // The same label order in every tensor holding a group.
    const auto same_order = [&](const LabelList& group, int t1, int t2) {
      LabelList a, b;
      for (LabelId l : group)
        if (net.extent(l) != 1) a.push_back(l);
      b = a;
      std::sort(a.begin(), a.end(), [&](LabelId x, LabelId y) { return stride(t1, x) > stride(t1, y); });
      std::sort(b.begin(), b.end(), [&](LabelId x, LabelId y) { return stride(t2, x) > stride(t2, y); });
      return a == b;
    };
    std::int64_t ext = 1, other = 1;
    if (!fuse(s.lhs_free, 0, d.m, d.lhs_rs) || !fuse(s.lhs_free, 2, ext, d.out_rs)) return;
    if (!fuse(s.rhs_free, 1, d.n, d.rhs_cs) || !fuse(s.rhs_free, 2, other, d.out_cs)) return;
    if (!fuse(s.contracted, 0, d.k, d.lhs_cs) || !fuse(s.contracted, 1, ext, d.rhs_rs)) return;
    if (!same_order(s.lhs_free, 0, 2) || !same_order(s.rhs_free, 1, 2) || !same_order(s.contracted, 0, 1)) return;
    for (LabelId l : s.batch) {
      if (net.extent(l) == 0) return;
      if (net.extent(l) == 1) continue;
      d.loops.push_back(BatchLoop{net.extent(l), {stride(0, l), stride(1, l), stride(2, l)}});
    }
    d.enabled = true;
    p.direct = std::move(d);
  }

  // Note [Chunked temporaries]: the labels a temporary of `order` is
  // chunked over (empty: it is written whole).
  // The labels to chunk, outermost first; the last runs `last_step` values
  // at a time (Note [Chunked temporaries]).
  LabelList chunk_labels(const ContractionStep& s, const LabelList& order, std::int64_t& last_step) const {
    const Network& net = tree.network();
    const std::size_t item = dtype_size(net.dtype());
    LabelList chunked;
    last_step = 1;
    double chunk = s.result_elements * static_cast<double>(item);
    if (chunk <= static_cast<double>(kChunkMinBytes)) return chunked;
    const bool rhs_side = s.rhs_elements >= s.lhs_elements;
    const LabelList& free = rhs_side ? s.rhs_free : s.lhs_free;
    const double other = (rhs_side ? s.lhs_elements : s.rhs_elements) * static_cast<double>(item);
    for (LabelId l : order) {
      if (chunk <= static_cast<double>(kChunkBytes)) break;
      const std::int64_t e = net.extent(l);
      if (e <= 1) continue;
      const bool batch = std::find(s.batch.begin(), s.batch.end(), l) != s.batch.end();
      if (!batch && std::find(free.begin(), free.end(), l) == free.end()) continue;
      const double per_value = chunk / static_cast<double>(e);
      double values = std::max(1.0, std::floor(static_cast<double>(kChunkBytes) / per_value));
      if (!batch) values = std::max(values, std::ceil(other / per_value));
      if (values >= static_cast<double>(e)) break;
      chunked.push_back(l);
      if (values > 1.0) {
        last_step = static_cast<std::int64_t>(values);
        break;
      }
      chunk = per_value;
    }
    return chunked;
  }

  // Strides, in `logical` order, of a dense buffer in memory order `order`
  // whose `chunked` labels have extent 1, except the last, `last_step`.
  static Dims dense_chunk_strides(const Network& net, const LabelList& order, const LabelList& logical,
                                  const LabelList& chunked, std::int64_t last_step) {
    Dims by_order(order.size(), 0);
    std::int64_t stride = 1;
    for (std::size_t i = order.size(); i-- > 0;) {
      by_order[i] = stride;
      const auto at = std::find(chunked.begin(), chunked.end(), order[i]);
      if (at == chunked.end()) {
        stride *= net.extent(order[i]);
      } else if (at + 1 == chunked.end()) {
        stride *= last_step;
      }
    }
    Dims out;
    for (LabelId l : logical) out.push_back(by_order[static_cast<std::size_t>(position(order, l))]);
    return out;
  }

  void compile_steps() {
    const Network& net = tree.network();
    const std::int32_t n = tree.num_inputs();
    const auto tree_steps = tree.steps();
    intermediate.resize(tree_steps.size());
    WorkspaceAllocator alloc;
    for (std::size_t k = 0; k < tree_steps.size(); ++k) {
      const internal::StepLayout& sl = layout.steps[k];
      // Note [Broadcast batch labels]: the step as the GEMM runs it.
      ContractionStep s = tree_steps[k];
      if (!sl.broadcast.empty()) {
        LabelList& free = sl.broadcast_side == 0 ? s.rhs_free : s.lhs_free;
        for (LabelId l : sl.broadcast) free.erase(std::find(free.begin(), free.end(), l));
        s.batch.append(sl.broadcast.begin(), sl.broadcast.end());
      }
      StepPlan p;
      p.root = k + 1 == tree_steps.size();
      SmallVector<std::int32_t, 4> step_buffers;  // released after the step
      for (int side = 0; side < 2; ++side) {
        OperandPlan& o = p.operand[side];
        o.node = side == 0 ? s.lhs : s.rhs;
        const LabelList& node_labels = layout.nodes[static_cast<std::size_t>(o.node)].labels;
        const LabelList& summed = side == 0 ? s.lhs_summed : s.rhs_summed;
        for (std::size_t j = 0; j < node_labels.size(); ++j) {
          if (std::find(summed.begin(), summed.end(), node_labels[j]) != summed.end()) {
            o.presum_axes.push_back(static_cast<std::int64_t>(j));
          } else {
            o.labels.push_back(node_labels[j]);
          }
        }
        if (sl.presum[side]) {
          o.presum = true;
          o.presum_out.buffer = add_buffer(alloc, bytes_of(o.labels));
          o.presum_out.shape = extents_of(net, o.labels);
          o.presum_out.strides = to_dims(internal::dense_strides(net, sl.presum_order[side], o.labels));
          step_buffers.push_back(o.presum_out.buffer);
        }
        if (sl.copy[side]) {
          o.copy = true;
          o.copy_out.buffer = add_buffer(alloc, bytes_of(o.labels));
          o.copy_out.shape = extents_of(net, o.labels);
          o.copy_out.strides = to_dims(internal::dense_strides(net, sl.copy_order[side], o.labels));
          step_buffers.push_back(o.copy_out.buffer);
          ++planned_copies;
        }
        if (side == sl.broadcast_side) {
          o.labels.append(sl.broadcast.begin(), sl.broadcast.end());
          o.broadcast = static_cast<std::int32_t>(sl.broadcast.size());
          o.broadcast_extents = extents_of(net, sl.broadcast);
        }
      }
      // dot_general dimension numbers over the operands' logical axes.
      for (LabelId l : s.batch) {
        p.dims.lhs_batch.push_back(position(p.operand[0].labels, l));
        p.dims.rhs_batch.push_back(position(p.operand[1].labels, l));
        p.result_labels.push_back(l);
      }
      for (LabelId l : s.contracted) {
        p.dims.lhs_contract.push_back(position(p.operand[0].labels, l));
        p.dims.rhs_contract.push_back(position(p.operand[1].labels, l));
      }
      for (int side = 0; side < 2; ++side) {
        const LabelList& free = side == 0 ? s.lhs_free : s.rhs_free;
        for (LabelId l : p.operand[side].labels)
          if (std::find(free.begin(), free.end(), l) != free.end()) p.result_labels.push_back(l);
      }
      const Dims result_shape = extents_of(net, p.result_labels);
      if (sl.temp) {
        p.temp = true;
        std::int64_t last_step = 1;
        const LabelList chunked = chunk_labels(s, sl.temp_order, last_step);
        Dims chunk_shape = result_shape;
        for (LabelId l : chunked) {
          ChunkAxis c;
          c.extent = net.extent(l);
          c.step = l == chunked.back() ? last_step : 1;
          for (int side = 0; side < 2; ++side) {
            const LabelList& labels = p.operand[side].labels;
            if (std::find(labels.begin(), labels.end(), l) != labels.end()) c.operand_axis[side] = position(labels, l);
          }
          c.result_axis = position(p.result_labels, l);
          chunk_shape[static_cast<std::size_t>(c.result_axis)] = c.step;
          p.chunks.push_back(c);
        }
        std::size_t chunk_elements = 1;
        for (std::int64_t e : chunk_shape) chunk_elements *= static_cast<std::size_t>(e);
        p.temp_out.buffer = add_buffer(alloc, chunk_elements * dtype_size(net.dtype()));
        p.temp_out.shape = chunk_shape;
        p.temp_out.strides = dense_chunk_strides(net, sl.temp_order, p.result_labels, chunked, last_step);
        step_buffers.push_back(p.temp_out.buffer);
        ++planned_copies;
      }
      if (p.root) {
        for (LabelId l : p.result_labels) p.output_axis.push_back(position(net.output(), l));
      } else {
        const LabelList& order = layout.nodes[static_cast<std::size_t>(n) + k].labels;
        PlannedView& node = intermediate[k];
        node.buffer = add_buffer(alloc, bytes_of(order));
        node.shape = extents_of(net, order);
        node.strides = to_dims(internal::dense_strides(net, order, order));
        p.result.buffer = node.buffer;
        p.result.shape = result_shape;
        p.result.strides = to_dims(internal::dense_strides(net, order, p.result_labels));
      }
      compile_direct(s, p);
      if (!p.chunks.empty()) p.direct.enabled = false;
      for (std::int32_t b : step_buffers) release(alloc, b);
      for (int side = 0; side < 2; ++side) {
        const std::int32_t node = p.operand[side].node;
        if (node >= n) release(alloc, intermediate[static_cast<std::size_t>(node - n)].buffer);
      }
      steps.push_back(std::move(p));
    }
    workspace = alloc.peak();
  }
};

ExecutionPlan::ExecutionPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExecutionPlan::~ExecutionPlan() = default;

Result<std::shared_ptr<const ExecutionPlan>> ExecutionPlan::compile(const ContractionTree& tree,
                                                                    const ExecutionPlanOptions& options) {
  // Refuse what cannot be addressed before building anything: a result
  // whose element count overflows (kSizeOverflow, as every shape), then
  // intermediates beyond an addressable workspace.
  const std::vector<std::int64_t> out_shape = tree.network().output_shape();
  if (Result<std::int64_t> out_elements = checked_numel(out_shape); !out_elements.ok()) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kPrepare, "einsum: the result of shape {}: {}",
                      shape_to_string(out_shape), out_elements.status().message());
  }
  if (!(tree.cost().workspace_bytes < static_cast<double>(std::numeric_limits<std::int64_t>::max() / 4))) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kPrepare,
                      "einsum: the path needs {:.4g} bytes of intermediates; expected an addressable workspace",
                      tree.cost().workspace_bytes);
  }
  auto impl = std::make_unique<Impl>(tree);
  impl->output_shape = Dims(out_shape.begin(), out_shape.end());
  impl->layout = internal::plan_layouts(impl->tree, options.gemm_strides);
  impl->compile_inputs();
  if (tree.steps().empty()) {
    impl->compile_single();
  } else {
    impl->compile_steps();
  }
  return std::shared_ptr<const ExecutionPlan>(new ExecutionPlan(std::move(impl)));
}

const ContractionTree& ExecutionPlan::tree() const noexcept { return impl_->tree; }
IntArrayRef ExecutionPlan::output_shape() const noexcept { return IntArrayRef(impl_->output_shape.span()); }
std::size_t ExecutionPlan::workspace_bytes() const noexcept { return impl_->workspace; }
std::int64_t ExecutionPlan::planned_copies() const noexcept { return impl_->planned_copies; }
std::int64_t ExecutionPlan::chunked_steps() const noexcept {
  return std::count_if(impl_->steps.begin(), impl_->steps.end(), [](const StepPlan& s) { return !s.chunks.empty(); });
}

std::size_t ExecutionPlan::retained_bytes() const noexcept {
  const Impl& p = *impl_;
  const std::size_t nodes = static_cast<std::size_t>(p.tree.num_nodes());
  const std::size_t labels = static_cast<std::size_t>(p.tree.network().num_labels());
  return sizeof(ExecutionPlan) + sizeof(Impl) + p.steps.size() * (sizeof(StepPlan) + sizeof(ContractionStep)) +
         nodes * (2 * sizeof(LabelList) + sizeof(internal::LabelledView)) + p.inputs.size() * sizeof(InputRecipe) +
         labels * sizeof(LabelInfo);
}

namespace {

// Note [Chunked temporaries]: the step one chunk at a time, each chunk's
// GEMM into `temp` and copied out to its part of `destination`.
Status run_chunked(const StepPlan& s, const TensorView (&operand)[2], const TensorView& temp,
                   const TensorView& destination, const cpu::DotGeneralComposite& composite,
                   const cpu::ParallelContext& ctx, ExecutionStats& local) {
  const std::int64_t item = static_cast<std::int64_t>(dtype_size(temp.dtype));
  Dims shape[2] = {Dims(operand[0].shape), Dims(operand[1].shape)};
  Dims out_shape(destination.shape);
  Dims temp_shape(temp.shape);
  // The chunk's extent along each chunked axis: 1, or the last axis's range.
  const auto set_extent = [&](const ChunkAxis& c, std::int64_t values) {
    for (int side = 0; side < 2; ++side)
      if (c.operand_axis[side] >= 0) shape[side][static_cast<std::size_t>(c.operand_axis[side])] = values;
    out_shape[static_cast<std::size_t>(c.result_axis)] = values;
    temp_shape[static_cast<std::size_t>(c.result_axis)] = values;
  };
  for (const ChunkAxis& c : s.chunks) set_extent(c, c.step);
  SmallVector<std::int64_t, 4> index(s.chunks.size(), 0);
  const std::int64_t chunks = num_chunks(s);
  for (std::int64_t done = 0; done < chunks; ++done) {
    std::int64_t offset[3] = {0, 0, 0};  // elements: lhs, rhs, destination
    for (std::size_t i = 0; i < s.chunks.size(); ++i) {
      const ChunkAxis& c = s.chunks[i];
      if (c.step > 1) set_extent(c, std::min(c.step, c.extent - index[i]));
      for (int side = 0; side < 2; ++side) {
        const std::int32_t a = c.operand_axis[side];
        if (a >= 0) offset[side] += index[i] * operand[side].strides[static_cast<std::size_t>(a)];
      }
      offset[2] += index[i] * destination.strides[static_cast<std::size_t>(c.result_axis)];
    }
    const auto at = [&](const TensorView& v, std::int64_t elements, const Dims& chunk_shape) {
      return TensorView{static_cast<char*>(v.data) + elements * item, chunk_shape.span(), v.strides, v.dtype,
                        v.storage};
    };
    const TensorView lhs = at(operand[0], offset[0], shape[0]);
    const TensorView rhs = at(operand[1], offset[1], shape[1]);
    const TensorView out = at(destination, offset[2], out_shape);
    const TensorView chunk_temp = at(temp, 0, temp_shape);
    cpu::DotGeneralPlan summary;
    TENFERRO_TRY(composite.dot_general_into(lhs, rhs, s.dims, chunk_temp, ctx, &summary));
    if (summary.lhs_copied || summary.rhs_copied || summary.out_via_temp) ++local.composite_copies;
    TENFERRO_TRY(cpu::copy_into(chunk_temp, out, ctx).with_context("result copy"));
    if (done == 0) {
      if (summary.path == cpu::DotGeneralPath::kGemm) ++local.gemm_steps;
      count_mode(summary.mode, local);
    }
    for (std::size_t i = s.chunks.size(); i-- > 0;) {  // the last chunk label fastest
      if ((index[i] += s.chunks[i].step) < s.chunks[i].extent) break;
      index[i] = 0;
    }
  }
  ++local.planned_copies;
  local.copied_elements += destination.numel();
  return ok_status();
}

}  // namespace

Status ExecutionPlan::check_inputs(std::span<const TensorView> inputs) const {
  const Impl& p = *impl_;
  const DType dtype = p.tree.network().dtype();
  if (inputs.size() != p.inputs.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "einsum: expected {} inputs, found {}",
                      p.inputs.size(), inputs.size());
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].data == nullptr && numel_unchecked(p.inputs[i].shape) > 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "einsum: expected input {} of {}{}, found a view without data (an undefined tensor's view?)", i,
                        dtype, shape_to_string(p.inputs[i].shape));
    }
    if (inputs[i].dtype != dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                        "einsum: input {} is {}; the plan was made for {}", i, inputs[i].dtype, dtype);
    }
    if (IntArrayRef(inputs[i].shape) != IntArrayRef(p.inputs[i].shape.span())) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "einsum: input {} has shape {}; the plan was made for {}", i, shape_to_string(inputs[i].shape),
                        shape_to_string(p.inputs[i].shape));
    }
  }
  return ok_status();
}

Status ExecutionPlan::execute(std::span<const TensorView> inputs, const TensorView& output,
                              std::span<std::byte> workspace, const cpu::DotGeneralComposite& composite,
                              const cpu::ParallelContext& ctx, ExecutionStats* stats) const {
  const Impl& p = *impl_;
  const DType dtype = p.tree.network().dtype();
  TENFERRO_TRY(check_inputs(inputs));
  if (output.data == nullptr && numel_unchecked(p.output_shape) > 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum: expected an output view of {}{}, found one without data (an undefined tensor's view?)",
                      dtype, shape_to_string(p.output_shape));
  }
  if (output.dtype != dtype) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "einsum: the output is {}{}; expected {}{}",
                      output.dtype, shape_to_string(output.shape), dtype, shape_to_string(p.output_shape));
  }
  if (IntArrayRef(output.shape) != IntArrayRef(p.output_shape.span())) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "einsum: the output is {}{}; expected {}{}",
                      output.dtype, shape_to_string(output.shape), dtype, shape_to_string(p.output_shape));
  }
  if (workspace.size() < p.workspace ||
      (p.workspace > 0 && reinterpret_cast<std::uintptr_t>(workspace.data()) % kAlignment != 0)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "einsum: expected a {}-byte aligned workspace of at least {} bytes, found {} bytes", kAlignment,
                      p.workspace, workspace.size());
  }
  std::byte* base = workspace.data();
  const auto planned = [&](const PlannedView& v) {
    void* data = base + p.buffer_offset[static_cast<std::size_t>(v.buffer)];
    return TensorView{data, v.shape.span(), v.strides.span(), dtype, nullptr};
  };
  // An input's node view: diagonal axes add their strides, broadcast axes vanish.
  const auto input_view = [&](std::int32_t i, Dims& strides) {
    const InputRecipe& r = p.inputs[static_cast<std::size_t>(i)];
    strides.clear();
    strides.resize(r.node_shape.size(), 0);
    const TensorView& in = inputs[static_cast<std::size_t>(i)];
    for (std::size_t a = 0; a < r.axis_node.size(); ++a)
      if (r.axis_node[a] >= 0) strides[static_cast<std::size_t>(r.axis_node[a])] += in.strides[a];
    return TensorView{in.data, r.node_shape.span(), strides.span(), dtype, in.storage};
  };
  ExecutionStats local;
  ++local.executions;

  if (p.steps.empty()) {  // Note [Unit axes of one operand]
    Dims in_strides, src_shape, src_strides, out_strides, out_shape;
    const TensorView node = input_view(0, in_strides);
    for (const std::int32_t a : p.single_node_axis) {
      src_shape.push_back(node.shape[static_cast<std::size_t>(a)]);
      src_strides.push_back(node.strides[static_cast<std::size_t>(a)]);
    }
    for (const std::int32_t axis : p.single_output_axis) {
      out_shape.push_back(output.shape[static_cast<std::size_t>(axis)]);
      out_strides.push_back(output.strides[static_cast<std::size_t>(axis)]);
    }
    const TensorView src{node.data, src_shape.span(), src_strides.span(), dtype, node.storage};
    const TensorView dst{output.data, out_shape.span(), out_strides.span(), dtype, output.storage};
    if (p.single_reduce_axes.empty()) {
      TENFERRO_TRY(cpu::copy_into(src, dst, ctx));
    } else {
      TENFERRO_TRY(cpu::reduce(cpu::ReduceOp::kSum, src, IntArrayRef(p.single_reduce_axes.span()), dst, ctx));
      ++local.presums;
    }
  }

  const std::int32_t n = static_cast<std::int32_t>(p.inputs.size());
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const StepPlan& s = p.steps[k];
    Dims input_strides[2], broadcast_shape[2], broadcast_strides[2];
    TensorView operand[2];
    for (int side = 0; side < 2; ++side) {
      const OperandPlan& o = s.operand[side];
      TensorView view = o.node < n ? input_view(o.node, input_strides[side])
                                   : planned(p.intermediate[static_cast<std::size_t>(o.node - n)]);
      if (o.presum) {
        const TensorView reduced = planned(o.presum_out);
        const Status st = cpu::reduce(cpu::ReduceOp::kSum, view, IntArrayRef(o.presum_axes.span()), reduced, ctx);
        if (!st.ok()) return st.with_context(fmt::format("einsum step {}: pre-summing operand", k));
        ++local.presums;
        view = reduced;
      }
      if (o.copy) {
        const TensorView copy = planned(o.copy_out);
        const Status st = cpu::copy_into(view, copy, ctx);
        if (!st.ok()) return st.with_context(fmt::format("einsum step {}: operand copy", k));
        ++local.planned_copies;
        local.copied_elements += copy.numel();
        view = copy;
      }
      if (o.broadcast > 0) {  // Note [Broadcast batch labels]: stride-0 batch axes
        broadcast_shape[side].assign(std::span<const std::int64_t>(view.shape.begin(), view.shape.end()));
        broadcast_strides[side].assign(std::span<const std::int64_t>(view.strides.begin(), view.strides.end()));
        broadcast_shape[side].append(o.broadcast_extents.begin(), o.broadcast_extents.end());
        broadcast_strides[side].resize(broadcast_shape[side].size(), 0);
        view = TensorView{view.data, broadcast_shape[side].span(), broadcast_strides[side].span(), dtype, view.storage};
      }
      operand[side] = view;
    }
    Dims result_shape, out_strides;
    TensorView destination;
    if (s.root) {
      for (std::int32_t axis : s.output_axis) {
        result_shape.push_back(output.shape[static_cast<std::size_t>(axis)]);
        out_strides.push_back(output.strides[static_cast<std::size_t>(axis)]);
      }
      destination = TensorView{output.data, result_shape.span(), out_strides.span(), dtype, output.storage};
    } else {
      destination = planned(s.result);
    }
    const TensorView gemm_out = s.temp ? planned(s.temp_out) : destination;
    ++local.steps;
    if (!s.chunks.empty()) {
      const Status st = run_chunked(s, operand, gemm_out, destination, composite, ctx, local);
      if (!st.ok()) return st.with_context(fmt::format("einsum step {}", k));
      continue;
    }
    const DirectStep& d = s.direct;
    if (d.enabled && (d.product > 0 || composite.gemm_provider().support().supports(dtype)) &&
        IntArrayRef(operand[0].strides) == IntArrayRef(d.operand_strides[0].span()) &&
        IntArrayRef(operand[1].strides) == IntArrayRef(d.operand_strides[1].span()) &&
        IntArrayRef(gemm_out.strides) == IntArrayRef(d.out_strides.span())) {
      const Status st = run_direct(d, operand[0], operand[1], gemm_out, composite, dtype);
      if (!st.ok()) return st.with_context(fmt::format("einsum step {}", k));
      ++local.direct_steps;
      if (d.product == 0) ++local.gemm_steps;
      ++local.sequential_steps;
    } else {
      cpu::DotGeneralPlan summary;
      const Status st = composite.dot_general_into(operand[0], operand[1], s.dims, gemm_out, ctx, &summary);
      if (!st.ok()) return st.with_context(fmt::format("einsum step {}", k));
      if (summary.path == cpu::DotGeneralPath::kGemm) ++local.gemm_steps;
      if (summary.lhs_copied || summary.rhs_copied || summary.out_via_temp) ++local.composite_copies;
      count_mode(summary.mode, local);
    }
    if (s.temp) {
      const Status copied = cpu::copy_into(gemm_out, destination, ctx);
      if (!copied.ok()) return copied.with_context(fmt::format("einsum step {}: result copy", k));
      ++local.planned_copies;
      local.copied_elements += gemm_out.numel();
    }
  }
  if (stats != nullptr) {
    stats->executions += local.executions;
    stats->steps += local.steps;
    stats->gemm_steps += local.gemm_steps;
    stats->direct_steps += local.direct_steps;
    stats->presums += local.presums;
    stats->planned_copies += local.planned_copies;
    stats->copied_elements += local.copied_elements;
    stats->composite_copies += local.composite_copies;
    stats->inner_steps += local.inner_steps;
    stats->outer_steps += local.outer_steps;
    stats->sequential_steps += local.sequential_steps;
  }
  return ok_status();
}

std::string ExecutionPlan::explain() const {
  const Impl& p = *impl_;
  const Network& net = p.tree.network();
  std::string out = p.tree.explain();
  out += fmt::format("execution: workspace {} bytes, {} planned copies per run\n", p.workspace, p.planned_copies);
  const std::int32_t n = p.tree.num_inputs();
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const StepPlan& s = p.steps[k];
    out += fmt::format("  step {}: ", k);
    for (int side = 0; side < 2; ++side) {
      const OperandPlan& o = s.operand[side];
      out += fmt::format("{}#{} {}", side == 0 ? "" : " * ", o.node,
                         net.labels_to_string(p.layout.nodes[static_cast<std::size_t>(o.node)].labels));
      if (o.presum) out += fmt::format(" (presum -> {})", net.labels_to_string(p.layout.steps[k].presum_order[side]));
      if (o.copy) out += fmt::format(" (copy -> {})", net.labels_to_string(p.layout.steps[k].copy_order[side]));
      if (o.broadcast > 0) {  // Note [Broadcast batch labels]
        out += fmt::format(" (broadcast over {})", net.labels_to_string(p.layout.steps[k].broadcast));
      }
    }
    const LabelList& result = s.root ? net.output() : p.layout.nodes[static_cast<std::size_t>(n) + k].labels;
    out += fmt::format(" -> {}", net.labels_to_string(result));
    if (s.root) out += " (output)";
    if (s.temp) out += fmt::format(" (via temporary {})", net.labels_to_string(p.layout.steps[k].temp_order));
    if (!s.chunks.empty()) out += fmt::format(" in {} chunks", num_chunks(s));
    if (!s.root) {
      out +=
          fmt::format(" at workspace offset {}", p.buffer_offset[static_cast<std::size_t>(p.intermediate[k].buffer)]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tenferro::einsum
