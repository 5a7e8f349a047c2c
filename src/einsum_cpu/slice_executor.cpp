// SliceExecutor (slice_executor.h): one compiled slice plan run over the
// views of many slices (Note [Slice accumulation]).
#include "tenferro/einsum_cpu/slice_executor.h"

#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "tenferro/tensor/shape.h"

namespace tenferro::einsum {

namespace {

template <class T>
constexpr bool kAddable = !std::is_same_v<T, bool>;

// Calls f(dst_offset, src_index) for every element of a row-major `shape`,
// with the element offset into a tensor of `strides`.
template <class F>
void for_each_strided(std::span<const std::int64_t> shape, std::span<const std::int64_t> strides, F&& f) {
  const std::int64_t n = numel_unchecked(shape);
  if (n == 0) return;
  const auto rank = static_cast<std::ptrdiff_t>(shape.size());
  Dims index(shape.size(), 0);
  std::int64_t offset = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    f(offset, k);
    for (std::ptrdiff_t d = rank - 1; d >= 0; --d) {
      const auto u = static_cast<std::size_t>(d);
      if (++index[u] < shape[u]) {
        offset += strides[u];
        break;
      }
      offset -= strides[u] * (shape[u] - 1);
      index[u] = 0;
    }
  }
}

// dst (any strides) += src (row-major, same shape and dtype).
void add_into(const TensorView& dst, const void* src) {
  visit_dtype(dst.dtype, [&]<class T>(T) {
    if constexpr (kAddable<T>) {
      T* out = static_cast<T*>(dst.data);
      const T* in = static_cast<const T*>(src);
      for_each_strided(dst.shape, dst.strides, [&](std::int64_t offset, std::int64_t k) { out[offset] += in[k]; });
    }
  });
}

void fill_zero(const TensorView& dst) {
  visit_dtype(dst.dtype, [&]<class T>(T) {
    T* out = static_cast<T*>(dst.data);
    for_each_strided(dst.shape, dst.strides, [&](std::int64_t offset, std::int64_t) { out[offset] = T{}; });
  });
}

}  // namespace

Result<SliceExecutor> SliceExecutor::create(SlicedContraction sliced, std::shared_ptr<CpuEinsumExecutor> executor) {
  if (!executor) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice executor: expected a CPU einsum executor, found null");
  }
  ExecutionPlanOptions options;
  options.gemm_strides = executor->composite().gemm_provider().support().strides;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan,
                            ExecutionPlan::compile(sliced.slice_tree(), options));
  return SliceExecutor(std::move(sliced), std::move(plan), std::move(executor));
}

Status SliceExecutor::run(std::span<const TensorView> inputs, const TensorView& output, const cpu::ParallelContext& ctx,
                          std::int64_t first, std::int64_t step, SliceRunStats* stats, FunctionRef<bool()> interrupted,
                          bool accumulate) const {
  if (first < 0 || step < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice executor: expected first >= 0 and step >= 1, found first {} and step {}", first, step);
  }
  if (output.dtype == DType::kBool) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "slice executor: expected a numeric dtype to sum slices, found bool");
  }
  SliceRunStats local;
  // Note [Range slicing]: a range of an output label writes only its part
  // of the output; the rest is this worker's zero.
  const LabelRange& range = sliced_.range();
  const LabelList& output_labels = sliced_.network().output();
  if (!accumulate && sliced_.has_range() &&
      std::find(output_labels.begin(), output_labels.end(), range.label) != output_labels.end()) {
    if (output.shape.size() != output_labels.size()) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "slice executor: output: expected rank {}, found shape {}", output_labels.size(),
                        shape_to_string(output.shape));
    }
    fill_zero(output);
  }
  const std::int64_t num_slices = sliced_.num_slices();
  const std::int64_t per_output_slice = num_slices / sliced_.num_output_slices();
  // Accumulating, every output slice counts as written already: each slice
  // is added in, and none is zeroed.
  std::vector<char> written(static_cast<std::size_t>(sliced_.num_output_slices()), accumulate ? 1 : 0);
  SliceViews views;
  Tensor scratch;
  for (std::int64_t k = first; k < num_slices; k += step) {
    if (interrupted && k != first && interrupted()) {
      return make_error(ErrorCode::kCancelled, ErrorStage::kNone, "slice executor: interrupted before slice {} of {}",
                        k, num_slices);
    }
    TENFERRO_TRY(views.bind(sliced_, k, inputs, output));
    char& done = written[static_cast<std::size_t>(k / per_output_slice)];
    if (!done) {
      Status s = executor_->execute(*plan_, views.inputs(), views.output(), ctx);
      if (!s.ok()) return std::move(s).with_context(fmt::format("slice {} of {}", k, num_slices));
      done = 1;
    } else {
      if (!scratch.defined()) {
        TENFERRO_ASSIGN_OR_RETURN(scratch, Tensor::empty(views.output().shape, output.dtype));
      }
      Status s = executor_->execute(*plan_, views.inputs(), scratch.view(), ctx);
      if (!s.ok()) return std::move(s).with_context(fmt::format("slice {} of {}", k, num_slices));
      add_into(views.output(), scratch.data());
      ++local.accumulated;
    }
    ++local.slices;
  }
  for (std::int64_t o = 0; o < sliced_.num_output_slices(); ++o) {
    if (written[static_cast<std::size_t>(o)]) continue;
    TENFERRO_TRY(views.bind(sliced_, o * per_output_slice, inputs, output));
    fill_zero(views.output());
    ++local.zeroed_output_slices;
  }
  if (stats) *stats = local;
  return ok_status();
}

Result<WorkerSliceExecutor> WorkerSliceExecutor::create(WorkerSlicing split, std::int64_t worker,
                                                        std::shared_ptr<CpuEinsumExecutor> executor) {
  if (!executor) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice executor: expected a CPU einsum executor, found null");
  }
  if (worker < 0 || worker >= split.workers()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice executor: expected a worker in [0, {}), found {}", split.workers(), worker);
  }
  WorkerSliceExecutor out(std::move(split), worker);
  // A round robin's one contraction is every worker's (its slices worker,
  // worker + workers, ...); a range split's parts worker, worker + workers, ...
  const std::span<const SlicedContraction> all = out.split_.parts();
  const bool ranges = out.split_.is_range_split();
  const std::size_t step = ranges ? static_cast<std::size_t>(out.split_.workers()) : all.size();
  for (std::size_t i = ranges ? static_cast<std::size_t>(worker) : 0; i < all.size(); i += step) {
    // Note [Range chunks]: ranges of one size have one slice tree.
    const auto same = std::find_if(out.parts_.begin(), out.parts_.end(), [&](const SliceExecutor& e) {
      return e.sliced().range().size() == all[i].range().size();
    });
    if (same != out.parts_.end()) {
      out.parts_.push_back(SliceExecutor(all[i], same->plan_, executor));
    } else {
      TENFERRO_ASSIGN_OR_RETURN(SliceExecutor part, SliceExecutor::create(all[i], executor));
      out.parts_.push_back(std::move(part));
    }
  }
  return out;
}

Status WorkerSliceExecutor::run(std::span<const TensorView> inputs, const TensorView& output,
                                const cpu::ParallelContext& ctx, SliceRunStats* stats,
                                FunctionRef<bool()> interrupted) const {
  SliceRunStats total;
  const bool round_robin = !split_.is_range_split();
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    if (interrupted && i > 0 && interrupted()) {
      return make_error(ErrorCode::kCancelled, ErrorStage::kNone,
                        "slice executor: interrupted before range part {} of {}", i, parts_.size());
    }
    SliceRunStats one;
    TENFERRO_TRY(parts_[i].run(inputs, output, ctx, round_robin ? worker_ : 0, round_robin ? split_.workers() : 1, &one,
                               interrupted, /*accumulate=*/i > 0));
    total.slices += one.slices;
    total.accumulated += one.accumulated;
    total.zeroed_output_slices += one.zeroed_output_slices;
  }
  if (stats) *stats = total;
  return ok_status();
}

}  // namespace tenferro::einsum
