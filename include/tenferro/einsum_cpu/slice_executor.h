// SliceExecutor: runs the slices of a SlicedContraction (slicing.h) on the
// native CPU einsum engine. The slice tree is compiled once into an
// ExecutionPlan; each slice then contracts strided views of the caller's
// operands (no copy) and accumulates into the caller's output.
//
// Note [Slice accumulation]
// run() executes the slices first, first + step, first + 2 step, ... in
// order. Slices that share an output slice (they differ only in summed
// labels) are summed: the first of them this call runs writes the output
// slice directly (the root step's GEMM writes into it), each later one
// writes a scratch buffer of the output slice's shape that is then added
// in. Output slices that none of this call's slices writes are set to zero,
// so that the partial outputs of disjoint slice sets (one per rank) add up
// to the full result. A contraction over a range of an output label (Note
// [Range slicing] in einsum/slicing.h) first zeroes the whole output, then
// writes its range. With `accumulate`, run() adds every slice into
// `output` (through the scratch buffer) and zeroes nothing: how a worker
// sums its second and later range parts into the first's output (Note
// [Range chunks]).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/einsum_cpu/execution_plan.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {

/// What one SliceExecutor::run did.
struct SliceRunStats {
  std::int64_t slices = 0;       ///< slices contracted
  std::int64_t accumulated = 0;  ///< slices added through the scratch buffer
  std::int64_t zeroed_output_slices = 0;
};

/// See the file comment. Immutable after create; run() is thread-safe
/// (each call uses its own views and scratch) when the executor is.
class SliceExecutor {
 public:
  /// Compiles `sliced`'s slice tree for `executor`'s GEMM provider. The
  /// executor is retained. kInvalidArgument for a null executor; plan
  /// compilation errors as ExecutionPlan::compile.
  static Result<SliceExecutor> create(SlicedContraction sliced, std::shared_ptr<CpuEinsumExecutor> executor);

  const SlicedContraction& sliced() const noexcept { return sliced_; }
  const ExecutionPlan& slice_plan() const noexcept { return *plan_; }

  /// Contracts slices first, first + step, ... below num_slices() into
  /// `output` (Note [Slice accumulation]) on `ctx`. `inputs` and `output`
  /// as SliceViews::bind (borrowed for the call); `output` must not overlap
  /// the inputs. kInvalidArgument for first < 0 or step < 1; view errors as
  /// SliceViews::bind; execution errors name the slice. `interrupted`, when
  /// given, is asked between slices; true stops the run with kCancelled
  /// (the output is then partial: the caller discards it).
  Status run(std::span<const TensorView> inputs, const TensorView& output, const cpu::ParallelContext& ctx,
             std::int64_t first = 0, std::int64_t step = 1, SliceRunStats* stats = nullptr,
             FunctionRef<bool()> interrupted = nullptr, bool accumulate = false) const;

 private:
  SliceExecutor(SlicedContraction sliced, std::shared_ptr<const ExecutionPlan> plan,
                std::shared_ptr<CpuEinsumExecutor> executor) noexcept
      : sliced_(std::move(sliced)), plan_(std::move(plan)), executor_(std::move(executor)) {}
  friend class WorkerSliceExecutor;

  SlicedContraction sliced_;
  std::shared_ptr<const ExecutionPlan> plan_;
  std::shared_ptr<CpuEinsumExecutor> executor_;
};

/// Worker w's share of a WorkerSlicing (slicing.h): its slices of a round
/// robin, or its range parts one after another, summed into one output
/// (Note [Range chunks]). Parts of one range size share one compiled plan.
/// Immutable after create; run() is thread-safe when the executor is.
class WorkerSliceExecutor {
 public:
  /// kInvalidArgument for a null executor or a worker outside [0,
  /// split.workers()); plan compilation errors.
  static Result<WorkerSliceExecutor> create(WorkerSlicing split, std::int64_t worker,
                                            std::shared_ptr<CpuEinsumExecutor> executor);

  const WorkerSlicing& split() const noexcept { return split_; }
  std::int64_t worker() const noexcept { return worker_; }
  /// The network (of every part).
  const Network& network() const noexcept { return split_.part(0).network(); }
  /// This worker's parts, in the order run() contracts them.
  std::span<const SliceExecutor> parts() const noexcept { return parts_; }

  /// This worker's slices into `output` as SliceExecutor::run would for
  /// one part (its partial output, zero where it contributes nothing);
  /// `stats` sums over the parts. Errors as SliceExecutor::run.
  Status run(std::span<const TensorView> inputs, const TensorView& output, const cpu::ParallelContext& ctx,
             SliceRunStats* stats = nullptr, FunctionRef<bool()> interrupted = nullptr) const;

 private:
  WorkerSliceExecutor(WorkerSlicing split, std::int64_t worker) : split_(std::move(split)), worker_(worker) {}

  WorkerSlicing split_;
  std::int64_t worker_;
  std::vector<SliceExecutor> parts_;
};

}  // namespace tenferro::einsum
