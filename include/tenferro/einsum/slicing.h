// Index slicing: fix some labels of a contraction to one value at a time so
// that the largest intermediate of each slice fits a memory bound (or so
// that there are enough slices to spread over workers or ranks), the
// strided views that give one slice's operands without copying, and the
// split of a contraction over workers (round robin of slices, or one label
// range per worker).
//
// Note [Index slicing]
// Slicing label l (extent d) turns one contraction into d independent ones:
// slice v reads every operand with l fixed to v and yields, when l is an
// output label, the output's hyperplane l = v, and otherwise a term of a sum
// over v. A set S of sliced labels gives prod(extent(S)) slices. Each slice
// is the original network with the labels of S removed, contracted along the
// same ContractionOrder (the slice tree; but see re-planning below);
// intermediates that held a label of S shrink by its extent, and steps whose
// labels miss S are repeated once per slice, which is the flops overhead:
//   overhead = num_slices * flops(slice tree) / flops(unsliced tree)
// It is usually >= 1; it can fall below 1 when a step that contracted only
// sliced labels becomes an outer product (one flop per multiply-add instead
// of two) or when re-planning finds a cheaper order than the original.
//
// The greedy choice (cotengra's SliceFinder without its randomisation):
// while the bound or the minimum slice count is not met, try every label
// not yet sliced and keep the one with the lowest added overhead per unit of
// reduction. While some intermediate exceeds the bound the reduction is that
// of the excess (the sum over steps of elements beyond the bound, log2);
// afterwards (only the minimum slice count is missing) the label that keeps
// ceil(num_slices / workers) * flops(slice), the busiest worker's flops,
// lowest wins. With several workers the search then keeps slicing while that
// lowers the busiest worker's flops by at least 3% (e.g. 9 slices over 2
// workers leave one with 5/9 of the work; 18 slices, 9/18), up to 16 slices
// per worker. Ties go to the larger reduction, then the lower label id, so
// the choice is deterministic. Finally (SlicingOptions::replan) the sliced
// network is planned again with the greedy planner, and the slice tree is
// that tree when it costs fewer flops and meets the bound: the original
// order was chosen for the unsliced network (a cheap form of cotengra's
// slice-and-reconfigure). With several workers the greedy choice is one
// candidate among single labels and pairs scored by the busiest worker's
// flops, the best few re-planned (Note [Balanced slicing] in slicing.cpp).
//
// Note [Range slicing]
// Spreading a contraction over W workers, index slicing repeats every step
// that misses the sliced labels once per slice, and d slices of one label
// split over W workers evenly only when W divides d. A range split instead
// gives each worker one contiguous range [begin, end) of one label p:
// worker w contracts the network with p's extent end - begin, reading its
// operands through views narrowed on p's axes (an element offset, no copy),
// so the steps that miss p run once per worker, not once per value, and
// the ranges may be as even as the extent allows (8 over 2 workers: 4 and
// 4). A summed p gives each worker a term of the sum; an output p gives
// each its part of the output (the rest of its partial output is zero), so
// in both cases the workers' partial outputs add up to the result (one
// allreduce). A worker's part is an ordinary SlicedContraction carrying the
// range: it may further slice labels one value at a time to meet the
// memory bound, and its slice tree is re-planned like any slice tree.
// WorkerSlicing::plan() scores every label of extent >= W by the busiest
// worker's flops under the fixed order (each worker pays the steps that
// miss p in full and its range's share of the others: affine in the
// range's size, so sizes as equal as possible minimise the busiest),
// builds the best few, and keeps the range split when its busiest worker
// has fewer flops than the round robin of index slices (Note [Balanced
// slicing] in slicing.cpp).
//
// Note [Range chunks]
// Meeting a memory bound on one worker, index slicing fixes a label one
// value at a time, so every step that misses the sliced labels runs once
// per value: on a network of large extents the bound costs far more than
// the memory it saves (the matrix chain instance, bonds of 200-500, under
// its unsliced peak / 1.5: 371 slices, 16x the flops, 64x the time; the C++
// einsum audit of 2026-12-07). Cutting one label p into P contiguous ranges
// (Note [Range slicing]) shrinks every intermediate holding p by about P
// and repeats the steps that miss p only P times. WorkerSlicing::
// plan_sequential() scores each label by the fewest ranges that bring the
// fixed-order model's largest intermediate under the bound (found by
// bisection; the model's sizes fall as the range narrows) times the flops
// of a range, builds the best few as range splits into P parts (each part
// sliced further by index where it must be, and re-planned), and keeps the
// one with the least work (Note [Comparing splits] in slicing.cpp) when it
// beats index slicing alone. One worker then runs the parts one after
// another and sums them (einsum::WorkerSliceExecutor): a summed p adds
// terms, an output p fills its range of the output.
//
// Note [Slice views]
// An operand's slice view is its input-node view (Note [Step semantics]:
// diagonals taken, broadcast axes dropped) with the sliced labels fixed: a
// label's axis stride is the sum of the strides of the input axes carrying
// it (a diagonal), a sliced label adds value * those strides to the element
// offset and loses its axis, and a range label (Note [Range slicing]) adds
// begin * those strides and keeps its axis with the range's size. No
// element is copied. The output's slice view fixes the sliced output
// labels (and narrows a range output label) the same way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {

/// What slice_contraction must achieve.
struct SlicingOptions {
  /// Bytes the largest intermediate of one slice (the output slice
  /// included; Note [Flop convention]) may hold; 0 means no bound.
  double max_intermediate_bytes = 0.0;
  /// At least this many slices (e.g. one per rank); >= 1.
  std::int64_t min_slices = 1;
  /// The workers the slices will be spread over round robin; with more than
  /// one, labels are chosen to balance them (Note [Index slicing]); >= 1.
  std::int64_t workers = 1;
  /// Refuse a slicing with more slices than this (kResourceExhausted).
  std::int64_t max_slices = std::int64_t{1} << 40;
  /// Re-plan the sliced network with the greedy planner and keep that tree
  /// when it has fewer flops and meets the bound (Note [Index slicing]).
  bool replan = true;
};

/// A contiguous range of one label's values (Note [Range slicing]).
struct LabelRange {
  LabelId label = -1;  ///< -1: no range
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const noexcept { return end - begin; }
  bool operator==(const LabelRange&) const = default;
};

/// A contraction tree with a set of sliced labels (Note [Index slicing]),
/// optionally restricted to a range of one further label (Note [Range
/// slicing]). Immutable value type; thread-compatible.
class SlicedContraction {
 public:
  /// Chooses the labels to slice greedily so that `options` hold. Errors:
  /// kInvalidArgument for a negative bound or min_slices/workers < 1;
  /// kResourceExhausted (expected/found in the message) when no slicing
  /// meets the bound (an intermediate of unsliceable labels is too large,
  /// or the bound needs more than max_slices slices).
  static Result<SlicedContraction> plan(const ContractionTree& tree, const SlicingOptions& options);
  /// Slices exactly `labels` (each a label of the network, no repeats).
  /// kInvalidArgument otherwise.
  static Result<SlicedContraction> with_labels(const ContractionTree& tree, std::span<const LabelId> labels);
  /// The part of `tree` over `range` (Note [Range slicing]), sliced further
  /// as plan() slices (options.workers is ignored: one worker runs all of
  /// this part's slices). kInvalidArgument for a label that is not the
  /// network's or a range outside [0, extent) or empty; plan()'s errors.
  static Result<SlicedContraction> plan_range(const ContractionTree& tree, const LabelRange& range,
                                              const SlicingOptions& options);

  /// The unsliced tree.
  const ContractionTree& tree() const noexcept { return tree_; }
  const Network& network() const noexcept { return tree_.network(); }
  /// The tree one slice runs: the network without the sliced labels, bound
  /// with integer labels (each key is the original LabelId), contracted in
  /// tree()'s order or, after re-planning, in a cheaper one.
  const ContractionTree& slice_tree() const noexcept { return slice_tree_; }
  /// The sliced labels of the original network: output labels first (in
  /// output order), then summed labels; slice indices enumerate their
  /// values row-major over this list.
  std::span<const LabelId> sliced_labels() const noexcept { return sliced_; }
  /// The range this contraction covers (label -1: every value of every
  /// label). The range label is not among sliced_labels(); the slice tree
  /// has it with extent range().size(), and the views narrow it.
  const LabelRange& range() const noexcept { return range_; }
  bool has_range() const noexcept { return range_.label >= 0; }
  /// How many of sliced_labels() are output labels (they come first).
  std::size_t num_sliced_output_labels() const noexcept { return sliced_output_count_; }
  std::int64_t num_slices() const noexcept { return num_slices_; }
  /// The number of distinct output slices (product of the sliced output
  /// labels' extents); slice k writes output slice k / (num_slices /
  /// num_output_slices).
  std::int64_t num_output_slices() const noexcept { return num_output_slices_; }
  /// The cost of one slice (slice_tree().cost()).
  const PathCost& slice_cost() const noexcept { return slice_tree_.cost(); }
  /// num_slices() * slice flops.
  double total_flops() const noexcept { return static_cast<double>(num_slices_) * slice_cost().flops; }
  /// total_flops() / unsliced flops (1 when nothing is sliced; for a range,
  /// the range's share).
  double overhead() const noexcept;
  /// Bytes of the largest intermediate of one slice.
  double slice_max_intermediate_bytes() const noexcept;
  /// What WorkerSlicing::plan compares (Note [Comparing splits] in
  /// slicing.cpp): one slice's flops plus a cost per element it moves --
  /// every step's operands and result, and the read, add and write back of
  /// its output slice when summed labels are sliced.
  double slice_work() const noexcept;

  /// The value of every sliced label in slice `k` (0 <= k < num_slices()),
  /// in sliced_labels() order; `values` has sliced_labels().size() entries.
  void slice_values(std::int64_t k, std::span<std::int64_t> values) const noexcept;

  /// Sliced labels, slice count, per-slice and total cost, one line each.
  std::string explain() const;

 private:
  SlicedContraction(ContractionTree tree, ContractionTree slice_tree) noexcept
      : tree_(std::move(tree)), slice_tree_(std::move(slice_tree)) {}
  static Result<SlicedContraction> build(const ContractionTree& tree, LabelList sliced, const LabelRange& range = {});
  static Result<SlicedContraction> plan_impl(const ContractionTree& tree, const SlicingOptions& options,
                                             const LabelRange& range);
  Status replan(double bound);
  static Result<SlicedContraction> pruned(const ContractionTree& tree, SlicedContraction best,
                                          const SlicingOptions& options, double bound, const LabelRange& range);
  friend class WorkerSlicing;

  ContractionTree tree_;
  ContractionTree slice_tree_;
  LabelList sliced_;
  LabelRange range_;
  std::size_t sliced_output_count_ = 0;
  std::int64_t num_slices_ = 1;
  std::int64_t num_output_slices_ = 1;
};

/// How the slices of a contraction are spread over workers (ranks): either
/// one SlicedContraction whose slices go round robin (worker w runs slices
/// w, w + W, ...), or one range part per worker (Note [Range slicing]),
/// each run whole. Immutable value type; thread-compatible.
class WorkerSlicing {
 public:
  /// The round robin of SlicedContraction::plan(tree, options) or a range
  /// split, whichever leaves the busiest worker fewer flops (Note [Range
  /// slicing]). Errors as SlicedContraction::plan.
  static Result<WorkerSlicing> plan(const ContractionTree& tree, const SlicingOptions& options);
  /// One range of `label` per worker (options.workers of them), or `parts`
  /// ranges (at least options.workers; worker w runs ranges w, w + workers,
  /// ... one after another), as even as its extent allows, each part sliced
  /// further as plan() slices for the memory bound. kInvalidArgument for a
  /// label that is not the network's or whose extent is below the number
  /// of ranges; plan()'s errors otherwise.
  static Result<WorkerSlicing> range_split(const ContractionTree& tree, LabelId label, const SlicingOptions& options,
                                           std::int64_t parts = 0);
  /// The round robin of `sliced` over `workers` (>= 1).
  static WorkerSlicing round_robin(SlicedContraction sliced, std::int64_t workers);
  /// For one worker (options.workers and min_slices are taken as 1): index
  /// slicing as SlicedContraction::plan, or one label cut into ranges run
  /// one after another (Note [Range chunks]), whichever has less work.
  /// Errors as SlicedContraction::plan.
  static Result<WorkerSlicing> plan_sequential(const ContractionTree& tree, const SlicingOptions& options);

  std::int64_t workers() const noexcept { return workers_; }
  bool is_range_split() const noexcept { return !round_robin_; }
  /// Worker w's contraction (0 <= w < workers()): the shared one for a
  /// round robin, its first range part otherwise -- only part of its work
  /// when there are more ranges than workers: run a worker's share with
  /// einsum::WorkerSliceExecutor (einsum_cpu/slice_executor.h).
  const SlicedContraction& part(std::int64_t w) const noexcept {
    return parts_[round_robin_ ? 0 : static_cast<std::size_t>(w)];
  }
  /// The contractions: one for a round robin; for a range split one per
  /// range, worker w running parts w, w + workers(), ... one after another
  /// (more parts than workers: plan_sequential, Note [Range chunks]).
  std::span<const SlicedContraction> parts() const noexcept { return parts_; }
  /// The slices worker w runs of part(w): first_slice(w), + slice_step(), ...
  std::int64_t first_slice(std::int64_t w) const noexcept { return round_robin_ ? w : 0; }
  std::int64_t slice_step() const noexcept { return round_robin_ ? workers_ : 1; }
  /// Worker w's flops.
  double worker_flops(std::int64_t w) const noexcept;
  /// The largest worker_flops.
  double busiest_flops() const noexcept;
  /// The busiest worker's slices times SlicedContraction::slice_work().
  double busiest_work() const noexcept;
  /// The unsliced flops / busiest_flops(): the plan's bound on the speedup.
  double speedup_bound() const noexcept;
  /// The same ratio of work as WorkerSlicing::plan compares it (flops plus a
  /// cost per element moved, SlicedContraction::slice_work()): lower than
  /// speedup_bound() where the steps every worker repeats move many
  /// elements per flop (copies and products of large intermediates).
  double work_speedup_bound() const noexcept;
  /// The flops of all workers / the unsliced flops.
  double overhead() const noexcept;
  /// The slices of every part (a round robin's one contraction, or all ranges).
  std::int64_t num_slices() const noexcept;
  /// The largest slice intermediate over the parts, in bytes.
  double slice_max_intermediate_bytes() const noexcept;
  /// The split and its bound, then part(0)'s explain(); for a range split,
  /// the explain() of the first part of each range size and every range.
  std::string explain() const;

 private:
  // Replaces `best` by a range split of options.workers workers when one
  // leaves the busiest worker less work (Notes [Range slicing], [Range
  // chunks]).
  static Status consider_ranges(const ContractionTree& tree, const SlicingOptions& options, WorkerSlicing& best);
  // Misses the bound by the model, busiest worker's flops, label, ranges.
  using RangeCandidate = std::tuple<bool, double, LabelId, std::int64_t>;
  // Adds the labels `best` slices by index as ranges that meet the bound
  // once re-planned (Note [Re-planned ranges] in slicing.cpp).
  static Status add_replanned_ranges(const ContractionTree& tree, const SlicingOptions& options,
                                     const WorkerSlicing& best, std::vector<RangeCandidate>& scored);
  // "speedup bound X by flops, Y counting elements moved ...".
  std::string bounds_text() const;

  std::vector<SlicedContraction> parts_;
  std::int64_t workers_ = 1;
  bool round_robin_ = true;
};

/// The operands and output of one slice as strided views into the caller's
/// tensors (Note [Slice views]). Owns the views' shapes and strides, so it
/// is neither copyable nor movable; bind() again for the next slice (no
/// allocation after the first bind of a given contraction). The views
/// borrow the data of the tensors given to bind(). Thread-compatible.
class SliceViews {
 public:
  SliceViews() = default;
  SliceViews(const SliceViews&) = delete;
  SliceViews& operator=(const SliceViews&) = delete;

  /// Views slice `k` of `sliced`. `inputs` have the original network's
  /// operand shapes and dtype, `output` its output shape and dtype (any
  /// strides). kInvalidArgument for a wrong operand count or slice index,
  /// kShapeMismatch / kDTypeMismatch naming the operand otherwise.
  Status bind(const SlicedContraction& sliced, std::int64_t k, std::span<const TensorView> inputs,
              const TensorView& output);

  /// One view per operand, with the slice tree's operand shapes.
  std::span<const TensorView> inputs() const noexcept { return inputs_; }
  /// The output slice, with the slice tree's output shape.
  const TensorView& output() const noexcept { return output_; }
  /// Values of the sliced labels of the bound slice.
  std::span<const std::int64_t> values() const noexcept { return values_; }

 private:
  std::vector<Dims> shapes_;
  std::vector<Dims> strides_;
  std::vector<TensorView> inputs_;
  Dims output_shape_;
  Dims output_strides_;
  TensorView output_;
  std::vector<std::int64_t> values_;
};

}  // namespace tenferro::einsum
