// Index slicing (slicing.h): the greedy choice of sliced labels, the slice
// tree, the strided views of one slice, and the split over workers (Note
// [Index slicing], Note [Slice views], Note [Range slicing]).
#include "tenferro/einsum/slicing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "search_planners.h"
#include "tenferro/base/abbreviate.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/subscripts.h"

namespace tenferro::einsum {

namespace {

bool contains(std::span<const LabelId> labels, LabelId label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// The step quantities the greedy search re-evaluates for every candidate,
// with sliced labels counting as extent 1.
struct StepLabels {
  LabelList lhs;       // the lhs node's labels (before pre-summing)
  LabelList rhs;       // the rhs node's labels
  LabelList lhs_kept;  // lhs minus lhs_summed
  LabelList rhs_free;
  LabelList result;
  bool lhs_presum = false;
  bool rhs_presum = false;
  bool contracts = false;
};

class SliceCostModel {
 public:
  explicit SliceCostModel(const ContractionTree& tree) : network_(tree.network()) {
    for (LabelId l = 0; l < network_.num_labels(); ++l) extent_.push_back(static_cast<double>(network_.extent(l)));
    for (const ContractionStep& s : tree.steps()) {
      StepLabels step;
      step.lhs = tree.node_labels(s.lhs);
      step.rhs = tree.node_labels(s.rhs);
      for (LabelId l : step.lhs)
        if (!contains(s.lhs_summed, l)) step.lhs_kept.push_back(l);
      step.rhs_free = s.rhs_free;
      step.result = s.result;
      step.lhs_presum = !s.lhs_summed.empty();
      step.rhs_presum = !s.rhs_summed.empty();
      step.contracts = !s.contracted.empty();
      steps_.push_back(std::move(step));
    }
    if (steps_.empty()) {
      // One operand: the output is the only intermediate.
      single_input_ = tree.node_labels(0);
      single_presum_ = !tree.root_summed().empty();
    }
  }

  struct Evaluation {
    double max_size = 0.0;  // elements of the largest intermediate
    double excess = 0.0;    // sum over intermediates of elements beyond the bound
    double slice_flops = 0.0;
  };

  // Costs with the labels flagged in `sliced` fixed.
  Evaluation evaluate(const std::vector<char>& sliced, double bound_elements) const {
    const auto elements = [&](const LabelList& labels) {
      double e = 1.0;
      for (LabelId l : labels)
        if (!sliced[static_cast<std::size_t>(l)]) e *= extent_[static_cast<std::size_t>(l)];
      return e;
    };
    Evaluation out;
    const auto add_size = [&](double size) {
      out.max_size = std::max(out.max_size, size);
      if (bound_elements > 0.0 && size > bound_elements) out.excess += size - bound_elements;
    };
    if (steps_.empty()) {
      add_size(elements(network_.output()));
      out.slice_flops = single_presum_ ? elements(single_input_) : 0.0;
      return out;
    }
    for (const StepLabels& step : steps_) {
      add_size(elements(step.result));
      double flops = elements(step.lhs_kept) * elements(step.rhs_free) * (step.contracts ? 2.0 : 1.0);
      if (step.lhs_presum) flops += elements(step.lhs);
      if (step.rhs_presum) flops += elements(step.rhs);
      out.slice_flops += flops;
    }
    return out;
  }

  // Counts `label` with `extent` (a range, Note [Range slicing]).
  void set_extent(LabelId label, double extent) { extent_[static_cast<std::size_t>(label)] = extent; }

  // Whether `label` occurs in an intermediate larger than the bound.
  bool in_oversized(LabelId label, const std::vector<char>& sliced, double bound_elements) const {
    const auto elements = [&](const LabelList& labels) {
      double e = 1.0;
      for (LabelId l : labels)
        if (!sliced[static_cast<std::size_t>(l)]) e *= extent_[static_cast<std::size_t>(l)];
      return e;
    };
    if (steps_.empty()) return contains(network_.output(), label) && elements(network_.output()) > bound_elements;
    for (const StepLabels& step : steps_)
      if (contains(step.result, label) && elements(step.result) > bound_elements) return true;
    return false;
  }

 private:
  const Network& network_;
  std::vector<double> extent_;  // per label; a range's size for its label
  std::vector<StepLabels> steps_;
  LabelList single_input_;
  bool single_presum_ = false;
};

double log2_at_least_1(double x) { return std::log2(std::max(x, 1.0)); }

// Balancing (Note [Index slicing]) adds a label only when the busiest
// worker's flops drop below this fraction of what they were, and stops at
// this many slices per worker: every slice costs a fixed launch overhead.
constexpr double kBalancingGain = 0.97;

// Flops one element moved costs when splits are compared (Note [Comparing
// splits]).
constexpr double kSliceElementCost = 16.0;
constexpr double kBalancingSlicesPerWorker = 16.0;

// Re-planning every candidate costs a greedy planning of the sliced
// network; only this many of the best by the fixed-order model are built.
constexpr std::size_t kBalancedCandidates = 8;
// The balanced search's limit on slices per worker: more than the greedy
// balancing's, so that a pair of odd extents (e.g. 9 * 9 = 81 slices over
// two workers, 41 on the busiest) can split nearly evenly.
constexpr double kBalancedSearchSlicesPerWorker = 64.0;
// Labels paired with each other in the balanced search (Note [Balanced
// slicing]): the pairs grow with its square.
constexpr std::size_t kPairedLabels = 32;
// Range splits built and re-planned (Note [Range slicing]).
constexpr std::size_t kRangeCandidates = 6;
// The most ranges plan_sequential cuts one label into (Note [Range chunks]).
constexpr std::int64_t kMaxRanges = 4096;
// Index-sliced labels tried as re-planned ranges (Note [Re-planned ranges]).
constexpr std::size_t kReplannedRangeLabels = 4;

// Note [Balanced slicing]
// Spreading slices over workers, the quantity to minimise is the busiest
// worker's flops, ceil(num_slices / workers) * flops(slice), not the
// overhead alone: one label of extent 9 over 2 workers leaves one worker
// 5/9 of the work however cheap the slicing is, while a label of extent 2
// or a pair of labels can split evenly at a slightly higher overhead. The
// greedy search adds one label at a time and stops when a single label
// does not help, so it misses pairs whose first label alone looks worse.
// With several workers, the labels the memory bound required are kept and
// every set of one or two further labels (slice count within the
// balancing limit and at least min_slices) is scored by the fixed-order
// cost model, together with the greedy choice; the best few are built,
// re-planned when SlicingOptions::replan is set (cotengra's
// slice-and-reconfigure, per candidate), and the lowest busiest-worker
// flops wins (ties: the earlier, cheaper-by-model candidate).
// Choosing labels alone stays bounded on networks whose cheap labels have
// odd extents: on the MERA instance (docs/performance_notes.md) the best
// round robin is f(9) at a bound of 1.52x over two workers (5 of 9 slices
// on one, 1.19x overhead). WorkerSlicing::plan therefore also scores one
// contiguous range of a label per worker (Note [Range slicing] in
// slicing.h): each worker repeats the steps that miss the label once, not
// once per value, so M(8) split 4 + 4 bounds at 1.89x (the steps that miss
// M are 5.6% of the flops and run on both). The ranges are as even as the
// extent allows: a worker's flops are affine in its range's size (the
// steps that miss the label, plus the size's share of the rest), so equal
// sizes minimise the busiest; re-planning per range (greedy, kept when
// cheaper) did not find a cheaper order for MERA, nor did TreeSA.
std::vector<LabelList> balanced_candidates(const Network& net, const SliceCostModel& model, const LabelList& required,
                                           const LabelList& greedy_choice, const SlicingOptions& options, double bound,
                                           double max_slices) {
  const auto num_labels = static_cast<std::size_t>(net.num_labels());
  const auto workers = static_cast<double>(options.workers);
  std::vector<char> sliced(num_labels, 0);
  double base_slices = 1.0;
  for (LabelId l : required) {
    sliced[static_cast<std::size_t>(l)] = 1;
    base_slices *= static_cast<double>(net.extent(l));
  }
  struct Scored {
    double busiest;
    LabelList labels;
  };
  std::vector<Scored> scored;
  const auto score = [&](const LabelList& labels) {
    std::vector<char> flags(num_labels, 0);
    double n = 1.0;
    for (LabelId l : labels) {
      flags[static_cast<std::size_t>(l)] = 1;
      n *= static_cast<double>(net.extent(l));
    }
    const SliceCostModel::Evaluation e = model.evaluate(flags, bound);
    return std::ceil(n / workers) * e.slice_flops;
  };
  scored.push_back({score(greedy_choice), greedy_choice});
  const auto consider = [&](const LabelList& extra, double n) {
    if (n < static_cast<double>(options.min_slices) || n > max_slices) return;
    LabelList labels = required;
    for (LabelId l : extra) labels.push_back(l);
    scored.push_back({score(labels), std::move(labels)});
  };
  // Every single label; pairs only among the labels whose own total flops
  // (slices * flops per slice) are lowest, which bounds the search on
  // large networks.
  std::vector<std::pair<double, LabelId>> singles;
  for (std::size_t a = 0; a < num_labels; ++a) {
    const auto label = static_cast<LabelId>(a);
    const std::int64_t extent = net.extent(label);
    if (sliced[a] || extent <= 1) continue;
    const double n = base_slices * static_cast<double>(extent);
    sliced[a] = 1;
    singles.emplace_back(n * model.evaluate(sliced, bound).slice_flops, label);
    sliced[a] = 0;
    consider(LabelList{label}, n);
  }
  std::sort(singles.begin(), singles.end());
  const std::size_t paired = std::min(singles.size(), kPairedLabels);
  for (std::size_t i = 0; i < paired; ++i) {
    for (std::size_t j = i + 1; j < paired; ++j) {
      const LabelId a = std::min(singles[i].second, singles[j].second);
      const LabelId b = std::max(singles[i].second, singles[j].second);
      consider(LabelList{a, b}, base_slices * static_cast<double>(net.extent(a)) * static_cast<double>(net.extent(b)));
    }
  }
  // The greedy choice stays first among equals (stable sort).
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& x, const Scored& y) { return x.busiest < y.busiest; });
  std::vector<LabelList> out;
  bool has_greedy = false;
  for (const Scored& s : scored) {
    if (out.size() >= kBalancedCandidates) break;
    has_greedy = has_greedy || std::ranges::equal(s.labels, greedy_choice);
    out.push_back(s.labels);
  }
  if (!has_greedy) out.push_back(greedy_choice);
  return out;
}

}  // namespace

double SlicedContraction::overhead() const noexcept {
  const double base = tree_.cost().flops;
  return base > 0.0 ? total_flops() / base : 1.0;
}

double SlicedContraction::slice_max_intermediate_bytes() const noexcept {
  return slice_cost().max_intermediate_elements * static_cast<double>(dtype_size(network().dtype()));
}

namespace {

double elements_of(const Network& net, const LabelList& labels) {
  double e = 1.0;
  for (LabelId l : labels) e *= static_cast<double>(net.extent(l));
  return e;
}

// A tree's flops plus kSliceElementCost per element it moves (Note
// [Comparing splits]): every step's operands and result; a single operand
// is read once.
double tree_work(const ContractionTree& tree) {
  double moved = tree.cost().read_write_elements;
  if (tree.steps().empty()) moved += elements_of(tree.network(), tree.network().operand(0).labels);
  return tree.cost().flops + kSliceElementCost * moved;
}

}  // namespace

double SlicedContraction::slice_work() const noexcept {
  // Each slice's product is read, added to and written back into the output.
  const double sums = sliced_.size() > sliced_output_count_
                          ? 2.0 * elements_of(slice_tree_.network(), slice_tree_.network().output())
                          : 0.0;
  return tree_work(slice_tree_) + kSliceElementCost * sums;
}

void SlicedContraction::slice_values(std::int64_t k, std::span<std::int64_t> values) const noexcept {
  for (std::size_t i = sliced_.size(); i > 0; --i) {
    const std::int64_t extent = network().extent(sliced_[i - 1]);
    values[i - 1] = k % extent;
    k /= extent;
  }
}

Result<SlicedContraction> SlicedContraction::build(const ContractionTree& tree, LabelList sliced,
                                                   const LabelRange& range) {
  const Network& net = tree.network();
  // Output labels first, in output order; then summed labels by id.
  LabelList ordered;
  for (LabelId l : net.output())
    if (contains(sliced, l)) ordered.push_back(l);
  const std::size_t output_count = ordered.size();
  std::sort(sliced.begin(), sliced.end());
  for (LabelId l : sliced)
    if (!contains(net.output(), l)) ordered.push_back(l);

  // The slice network in sublist form: each key is the original label id.
  std::vector<std::vector<LabelKey>> operands;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const NetworkOperand& op : net.operands()) {
    std::vector<LabelKey>& keys = operands.emplace_back();
    std::vector<std::int64_t>& shape = shapes.emplace_back();
    for (LabelId l : op.labels) {
      if (contains(ordered, l)) continue;
      keys.push_back(l);
      shape.push_back(l == range.label ? range.size() : net.extent(l));
    }
  }
  std::vector<LabelKey> output;
  for (LabelId l : net.output())
    if (!contains(ordered, l)) output.push_back(l);
  TENFERRO_ASSIGN_OR_RETURN(Subscripts subscripts, Subscripts::from_sublists(operands, output));
  std::vector<IntArrayRef> shape_refs(shapes.begin(), shapes.end());
  std::vector<DType> dtypes(shapes.size(), net.dtype());
  TENFERRO_ASSIGN_OR_RETURN(Network slice_net, Network::bind(subscripts, shape_refs, dtypes));
  TENFERRO_ASSIGN_OR_RETURN(ContractionTree slice_tree, ContractionTree::build(slice_net, tree.order()));
  slice_tree.set_stats(tree.stats());

  SlicedContraction out(tree, std::move(slice_tree));
  out.sliced_ = std::move(ordered);
  out.sliced_output_count_ = output_count;
  out.range_ = range;
  double slices = 1.0, output_slices = 1.0;
  for (std::size_t i = 0; i < out.sliced_.size(); ++i) {
    const auto extent = static_cast<double>(net.extent(out.sliced_[i]));
    slices *= extent;
    if (i < output_count) output_slices *= extent;
  }
  if (slices > static_cast<double>(std::int64_t{1} << 62)) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                      "slicing labels \"{}\": expected at most 2^62 slices, found {:.4g}",
                      net.labels_to_string(out.sliced_), slices);
  }
  out.num_slices_ = static_cast<std::int64_t>(slices);
  out.num_output_slices_ = static_cast<std::int64_t>(output_slices);
  return out;
}

Result<SlicedContraction> SlicedContraction::with_labels(const ContractionTree& tree, std::span<const LabelId> labels) {
  const Network& net = tree.network();
  LabelList sliced;
  for (LabelId l : labels) {
    if (l < 0 || l >= net.num_labels()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "slicing: expected label ids in [0, {}), found {}", net.num_labels(), l);
    }
    if (contains(sliced, l)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "slicing: label \"{}\" is given twice; expected each label at most once", net.label_name(l));
    }
    if (net.extent(l) < 1) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "slicing: expected labels of extent >= 1, found \"{}\" of extent 0", net.label_name(l));
    }
    sliced.push_back(l);
  }
  return build(tree, std::move(sliced));
}

Result<SlicedContraction> SlicedContraction::plan(const ContractionTree& tree, const SlicingOptions& options) {
  return plan_impl(tree, options, LabelRange{});
}

Result<SlicedContraction> SlicedContraction::plan_range(const ContractionTree& tree, const LabelRange& range,
                                                        const SlicingOptions& options) {
  const Network& net = tree.network();
  if (range.label < 0 || range.label >= net.num_labels() || range.begin < 0 || range.end <= range.begin ||
      range.end > net.extent(range.label)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "range slicing: expected a label id in [0, {}) and 0 <= begin < end <= its extent; found label "
                      "{}, range [{}, {})",
                      net.num_labels(), range.label, range.begin, range.end);
  }
  SlicingOptions one = options;
  one.workers = 1;
  return plan_impl(tree, one, range);
}

Result<SlicedContraction> SlicedContraction::plan_impl(const ContractionTree& tree, const SlicingOptions& options,
                                                       const LabelRange& range) {
  if (!(options.max_intermediate_bytes >= 0.0) || options.min_slices < 1 || options.workers < 1 ||
      options.max_slices < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slicing: expected max_intermediate_bytes >= 0, min_slices >= 1, workers >= 1 and max_slices "
                      ">= 1; found {}, {}, {} and {}",
                      options.max_intermediate_bytes, options.min_slices, options.workers, options.max_slices);
  }
  const Network& net = tree.network();
  const auto element_bytes = static_cast<double>(dtype_size(net.dtype()));
  const double bound = options.max_intermediate_bytes > 0.0 ? options.max_intermediate_bytes / element_bytes : 0.0;
  SliceCostModel model(tree);
  if (range.label >= 0) model.set_extent(range.label, static_cast<double>(range.size()));
  const auto num_labels = static_cast<std::size_t>(net.num_labels());
  std::vector<char> sliced(num_labels, 0);
  LabelList chosen;
  LabelList required;  // chosen while an intermediate exceeded the bound
  double slices = 1.0;
  SliceCostModel::Evaluation current = model.evaluate(sliced, bound);

  const auto fits = [&](const SliceCostModel::Evaluation& e) { return bound == 0.0 || e.max_size <= bound; };
  const auto workers = static_cast<double>(options.workers);
  const double max_balancing_slices =
      std::min(static_cast<double>(options.max_slices), kBalancingSlicesPerWorker * workers);
  while (true) {
    const bool shrinking = !fits(current);
    const bool too_few = slices < static_cast<double>(options.min_slices);
    // Balancing: more slices only while that shortens the busiest worker.
    const bool balancing = !shrinking && !too_few && options.workers > 1;
    if (!shrinking && !too_few && !balancing) break;
    const double total = log2_at_least_1(slices * current.slice_flops);
    LabelId best = -1;
    double best_key = std::numeric_limits<double>::infinity(), best_reduction = 0.0;
    SliceCostModel::Evaluation best_eval;
    bool over_max_slices = false;
    for (std::size_t l = 0; l < num_labels; ++l) {
      const auto label = static_cast<LabelId>(l);
      const std::int64_t extent = net.extent(label);
      if (sliced[l] || extent <= 1 || label == range.label) continue;
      if (shrinking && !model.in_oversized(label, sliced, bound)) continue;
      const double n = slices * static_cast<double>(extent);
      if (n > static_cast<double>(options.max_slices)) {
        over_max_slices = true;
        continue;
      }
      if (balancing && n > max_balancing_slices) continue;
      sliced[l] = 1;
      const SliceCostModel::Evaluation e = model.evaluate(sliced, bound);
      sliced[l] = 0;
      double key = 0.0, reduction = 0.0;
      if (shrinking) {
        reduction = std::log2(1.0 + current.excess) - std::log2(1.0 + e.excess);
        if (!(reduction > 0.0)) continue;
        key = std::max(0.0, log2_at_least_1(n * e.slice_flops) - total) / reduction;
      } else {
        reduction = std::log2(static_cast<double>(extent));
        key = std::ceil(n / workers) * e.slice_flops;
      }
      if (key < best_key || (key == best_key && reduction > best_reduction)) {
        best = label;
        best_key = key;
        best_reduction = reduction;
        best_eval = e;
      }
    }
    if (balancing && !(best_key < kBalancingGain * std::ceil(slices / workers) * current.slice_flops)) break;
    if (best < 0) {
      if (!shrinking) break;  // min_slices is a target: every label is sliced already
      return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                        "slicing \"{}\": expected the largest intermediate of a slice to fit {:.6g} bytes; found "
                        "{:.6g} bytes after slicing \"{}\" ({} slices), and {}",
                        abbreviate(net.to_string()), options.max_intermediate_bytes, current.max_size * element_bytes,
                        net.labels_to_string(chosen), slices,
                        over_max_slices ? fmt::format("slicing more would exceed {} slices", options.max_slices)
                                        : std::string("no label left to slice shrinks it"));
    }
    sliced[static_cast<std::size_t>(best)] = 1;
    chosen.push_back(best);
    if (shrinking) required.push_back(best);
    slices *= static_cast<double>(net.extent(best));
    current = best_eval;
  }

  // Candidate label sets, cheapest busiest worker first (Note [Balanced
  // slicing]); with one worker only the greedy choice.
  std::vector<LabelList> candidates;
  candidates.push_back(chosen);
  if (options.workers > 1) {
    const double search_slices =
        std::min(static_cast<double>(options.max_slices), kBalancedSearchSlicesPerWorker * workers);
    candidates = balanced_candidates(net, model, required, chosen, options, bound, search_slices);
  }
  std::optional<SlicedContraction> best_out;
  double best_busiest = std::numeric_limits<double>::infinity();
  for (const LabelList& labels : candidates) {
    TENFERRO_ASSIGN_OR_RETURN(SlicedContraction out, build(tree, labels, range));
    if (bound > 0.0 && out.slice_cost().max_intermediate_elements > bound) {
      return make_error(ErrorCode::kInternal, ErrorStage::kNone,
                        "slicing: the slice tree's largest intermediate ({:.6g} elements) exceeds the bound ({:.6g}) "
                        "the search met",
                        out.slice_cost().max_intermediate_elements, bound);
    }
    if (options.replan && (out.num_slices() > 1 || out.has_range())) TENFERRO_TRY(out.replan(bound));
    const double busiest = std::ceil(static_cast<double>(out.num_slices()) / workers) * out.slice_cost().flops;
    if (busiest < best_busiest) {
      best_busiest = busiest;
      best_out.emplace(std::move(out));
    }
  }
  if (options.workers == 1 && options.replan && bound > 0.0) {
    TENFERRO_ASSIGN_OR_RETURN(best_out, pruned(tree, std::move(*best_out), options, bound, range));
  }
  return std::move(*best_out);
}

// The order was chosen for the unsliced network; the sliced one may
// contract more cheaply in another (Note [Index slicing]). A greedy order
// within `bound` (elements; 0: none) replaces the slice tree when it has
// fewer flops or the slice tree exceeds the bound.
Status SlicedContraction::replan(double bound) {
  // The greedy planner defers pairs whose result exceeds the bound (Note
  // [Greedy planner]): an order that meets it is worth more than a cheaper one.
  const Network& net = slice_tree_.network();
  internal::SearchObjective objective;
  if (bound > 0.0) objective.max_log2_elements = std::log2(bound);
  const internal::GreedyResult greedy =
      internal::best_greedy_order(internal::SearchNetwork::from(net), objective, nullptr);
  TENFERRO_ASSIGN_OR_RETURN(ContractionTree replanned, ContractionTree::build(net, greedy.order));
  PlanningStats stats;
  stats.planner = PlannerKind::kGreedy;
  stats.search_score = greedy.score;
  replanned.set_stats(stats);
  const auto fits = [&](const ContractionTree& t) {
    return bound == 0.0 || t.cost().max_intermediate_elements <= bound;
  };
  if (fits(replanned) && (replanned.cost().flops < slice_cost().flops || !fits(slice_tree_))) {
    slice_tree_ = std::move(replanned);
  }
  return ok_status();
}

// Note [Pruning sliced labels]
// The labels are chosen against the unsliced tree's fixed order, which can
// need more of them than a re-planned order does. "ab,bc,cd,de->ae" (40,
// 30, 50, 20, 40) under 4000 bytes: the fixed order ((ab bc)(cd de)) keeps
// the 50 x 40 intermediate of cd de unless d is sliced as well as a (800
// slices, 14x the unsliced flops), while a alone, re-planned, is a chain of
// vector-matrix products within the bound at the unsliced flops (40
// slices). So, with one worker, each sliced label is dropped in turn
// (last chosen first) while the rest, re-planned with the greedy planner,
// still meet the bound and min_slices with fewer flops in all.
Result<SlicedContraction> SlicedContraction::pruned(const ContractionTree& tree, SlicedContraction best,
                                                    const SlicingOptions& options, double bound,
                                                    const LabelRange& range) {
  const Network& net = tree.network();
  for (bool improved = true; improved && !best.sliced_.empty();) {
    improved = false;
    for (std::size_t drop = best.sliced_.size(); drop-- > 0;) {
      LabelList fewer;
      double slices = 1.0;
      for (std::size_t i = 0; i < best.sliced_.size(); ++i) {
        if (i == drop) continue;
        fewer.push_back(best.sliced_[i]);
        slices *= static_cast<double>(net.extent(best.sliced_[i]));
      }
      if (slices < static_cast<double>(options.min_slices)) continue;
      TENFERRO_ASSIGN_OR_RETURN(SlicedContraction out, build(tree, fewer, range));
      TENFERRO_TRY(out.replan(bound));
      if (out.slice_cost().max_intermediate_elements > bound) continue;
      if (out.total_flops() < best.total_flops()) {
        best = std::move(out);
        improved = true;
        break;
      }
    }
  }
  return best;
}

WorkerSlicing WorkerSlicing::round_robin(SlicedContraction sliced, std::int64_t workers) {
  WorkerSlicing out;
  out.workers_ = std::max<std::int64_t>(workers, 1);
  out.parts_.push_back(std::move(sliced));
  return out;
}

double WorkerSlicing::worker_flops(std::int64_t w) const noexcept {
  if (!round_robin_) {  // its ranges w, w + workers, ...
    double flops = 0.0;
    for (std::size_t i = static_cast<std::size_t>(w); i < parts_.size(); i += static_cast<std::size_t>(workers_))
      flops += parts_[i].total_flops();
    return flops;
  }
  const SlicedContraction& p = parts_[0];
  const std::int64_t n = p.num_slices();
  const std::int64_t mine = w < n ? (n - w + workers_ - 1) / workers_ : 0;
  return static_cast<double>(mine) * p.slice_cost().flops;
}

double WorkerSlicing::busiest_flops() const noexcept {
  if (round_robin_) return worker_flops(0);  // worker 0 has the most slices
  double busiest = 0.0;
  for (std::int64_t w = 0; w < workers_; ++w) busiest = std::max(busiest, worker_flops(w));
  return busiest;
}

double WorkerSlicing::busiest_work() const noexcept {
  if (round_robin_) {  // worker 0 has the most slices
    const SlicedContraction& p = parts_[0];
    return static_cast<double>((p.num_slices() + workers_ - 1) / workers_) * p.slice_work();
  }
  double busiest = 0.0;
  for (std::int64_t w = 0; w < workers_; ++w) {
    double work = 0.0;
    for (std::size_t i = static_cast<std::size_t>(w); i < parts_.size(); i += static_cast<std::size_t>(workers_))
      work += static_cast<double>(parts_[i].num_slices()) * parts_[i].slice_work();
    busiest = std::max(busiest, work);
  }
  return busiest;
}

double WorkerSlicing::speedup_bound() const noexcept {
  const double busiest = busiest_flops();
  return busiest > 0.0 ? parts_[0].tree().cost().flops / busiest : 1.0;
}

double WorkerSlicing::work_speedup_bound() const noexcept {
  const double busiest = busiest_work();
  return busiest > 0.0 ? tree_work(parts_[0].tree()) / busiest : 1.0;
}

std::int64_t WorkerSlicing::num_slices() const noexcept {
  std::int64_t slices = 0;
  for (const SlicedContraction& p : parts_) slices += p.num_slices();
  return slices;
}

double WorkerSlicing::slice_max_intermediate_bytes() const noexcept {
  double largest = 0.0;
  for (const SlicedContraction& p : parts_) largest = std::max(largest, p.slice_max_intermediate_bytes());
  return largest;
}

double WorkerSlicing::overhead() const noexcept {
  if (round_robin_) return parts_[0].overhead();
  double total = 0.0;
  for (const SlicedContraction& p : parts_) total += p.total_flops();
  const double base = parts_[0].tree().cost().flops;
  return base > 0.0 ? total / base : 1.0;
}

std::string WorkerSlicing::bounds_text() const {
  return fmt::format("speedup bound {:.4f} by flops, {:.4f} counting elements moved (Note [Comparing splits])",
                     speedup_bound(), work_speedup_bound());
}

std::string WorkerSlicing::explain() const {
  const Network& net = parts_[0].network();
  if (round_robin_) {
    return fmt::format("round robin of {} slices over {} workers: {}\n{}", parts_[0].num_slices(), workers_,
                       bounds_text(), parts_[0].explain());
  }
  const LabelRange& first = parts_[0].range();
  std::string out;
  if (workers_ == 1) {
    out = fmt::format("range split of {}({}) into {} ranges run in turn (Note [Range chunks])\n",
                      net.label_name(first.label), net.extent(first.label), parts_.size());
  } else if (parts_.size() > static_cast<std::size_t>(workers_)) {
    out = fmt::format("range split of {}({}) into {} ranges over {} workers, each running its ranges in turn: {}\n",
                      net.label_name(first.label), net.extent(first.label), parts_.size(), workers_, bounds_text());
  } else {
    out = fmt::format("range split of {}({}) over {} workers: {}\n", net.label_name(first.label),
                      net.extent(first.label), workers_, bounds_text());
  }
  // Parts of one range size differ only in their offset: the first of each
  // size is shown, and the ranges of all.
  std::vector<std::pair<std::int64_t, std::size_t>> shown;  // range size, first worker of that size
  bool elided = false;  // more than 16 parts: the repeats between the first and the last are elided
  for (std::size_t w = 0; w < parts_.size(); ++w) {
    const LabelRange& r = parts_[w].range();
    const auto same = std::find_if(shown.begin(), shown.end(), [&](const auto& s) { return s.first == r.size(); });
    std::string who = fmt::format("worker {}", w);
    if (workers_ == 1) {
      who = fmt::format("range {}", w);
    } else if (parts_.size() > static_cast<std::size_t>(workers_)) {
      who = fmt::format("range {} (worker {})", w, w % static_cast<std::size_t>(workers_));
    }
    if (same == shown.end()) {
      shown.emplace_back(r.size(), w);
      out += fmt::format("{}: {}", who, parts_[w].explain());
    } else if (parts_.size() <= 16 || w + 1 == parts_.size()) {
      out += fmt::format("{}: {}[{}:{}), as {}\n", who, net.label_name(r.label), r.begin, r.end,
                         parts_.size() > static_cast<std::size_t>(workers_) ? fmt::format("range {}", same->second)
                                                                            : fmt::format("worker {}", same->second));
    } else if (!elided) {
      elided = true;
      out += "... (ranges of the sizes above, up to the last)\n";
    }
  }
  return out + fmt::format("total over the {}: overhead {:.4f}x the unsliced {:.6g} flops\n",
                           workers_ == 1 ? "ranges" : "workers", overhead(), parts_[0].tree().cost().flops);
}

Result<WorkerSlicing> WorkerSlicing::range_split(const ContractionTree& tree, LabelId label,
                                                 const SlicingOptions& options, std::int64_t parts) {
  const Network& net = tree.network();
  const std::int64_t workers = options.workers;
  const std::int64_t ranges = parts == 0 ? workers : parts;
  if (workers < 1 || ranges < workers) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "range split: expected workers >= 1 and at least one range per worker; found {} workers and {} "
                      "ranges",
                      workers, ranges);
  }
  if (label < 0 || label >= net.num_labels() || net.extent(label) < ranges) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "range split: expected a label id in [0, {}) of extent >= the ranges ({}); found label {}{}",
                      net.num_labels(), ranges, label,
                      label >= 0 && label < net.num_labels() ? fmt::format(" of extent {}", net.extent(label)) : "");
  }
  SlicingOptions per_range = options;
  per_range.workers = 1;
  per_range.min_slices = 1;
  const std::int64_t extent = net.extent(label);
  WorkerSlicing out;
  out.workers_ = workers;
  out.round_robin_ = false;
  // As even as the extent allows, the larger ranges first. Ranges of one
  // size share their plan; only the offset differs.
  std::optional<SlicedContraction> larger, smaller;
  std::int64_t begin = 0;
  for (std::int64_t w = 0; w < ranges; ++w) {
    const std::int64_t size = extent / ranges + (w < extent % ranges ? 1 : 0);
    std::optional<SlicedContraction>& shared = size > extent / ranges ? larger : smaller;
    if (!shared) {
      TENFERRO_ASSIGN_OR_RETURN(SlicedContraction part,
                                SlicedContraction::plan_range(tree, LabelRange{label, 0, size}, per_range));
      shared.emplace(std::move(part));
    }
    SlicedContraction part = *shared;
    part.range_ = LabelRange{label, begin, begin + size};
    out.parts_.push_back(std::move(part));
    begin += size;
  }
  return out;
}

// Note [Comparing splits]
// Flops alone rank splits that run very differently. "ab,bc->ac" (300,
// 400, 200) over two ranks: slicing the summed b round robin gives each
// rank 200 outer products of 300 x 200 (1.2e7 flops by the convention,
// which counts an outer product once) to add into the output, a range of
// one label gives each rank one GEMM of half the size (2.4e7 flops). The flops chose the
// round robin, which from Python took 20 ms against 0.58 ms on one rank:
// an outer product moves an element per multiply, a GEMM 2 k multiply-adds
// per element it writes. ("ab,bc,cd->ad", 300 x 400 x 500 x 200, likewise:
// 28 ms against 1.6 ms.) WorkerSlicing::plan therefore compares the
// busiest worker's work (slice_work()): per slice, the flops plus
// kSliceElementCost per element moved -- each step's operands and result
// (PathCost::read_write_elements) and, when summed labels are sliced, the
// read, add and write back of the output slice. 16 flops per element is
// about one cycle of L2 traffic against a core's 16-32 double flops per
// cycle (AVX2, AVX-512). The reported flops (worker_flops, speedup_bound)
// stay flops.

namespace {

// The fewest ranges per worker in [1, most] for which `fits` (monotone:
// fewer values per range never fit worse) holds, by bisection; nullopt when
// not even `most` fits. fits(ranges per worker) -> Result<bool>.
template <class F>
Result<std::optional<std::int64_t>> fewest_ranges_per_worker(std::int64_t most, F&& fits) {
  TENFERRO_ASSIGN_OR_RETURN(const bool one, fits(std::int64_t{1}));
  if (one) return std::optional<std::int64_t>(1);
  TENFERRO_ASSIGN_OR_RETURN(const bool all, fits(most));
  if (!all) return std::optional<std::int64_t>();
  std::int64_t lo = 1, hi = most;  // lo does not fit, hi does
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    TENFERRO_ASSIGN_OR_RETURN(const bool f, fits(mid));
    (f ? hi : lo) = mid;
  }
  return std::optional<std::int64_t>(hi);
}

}  // namespace

// Note [Re-planned ranges]
// The fixed-order model sees a range of label p shrink only the
// intermediates of the unsliced order that hold p. An order chosen for the
// whole network can keep large intermediates without p that a re-planned
// order avoids: the matrix chain instance (bonds of 200-500) under its
// unsliced peak / 16 keeps bond x bond products in the unsliced order
// whatever range of the output row label a is taken, so the model finds no
// range count that meets the bound, and index slicing fixed a (371 slices,
// each a chain of vector-matrix products streaming every matrix: 0.77 s,
// and 32x the flops over two ranks, 1.26 s, against 12 ms unsliced). A
// range of a few rows of a, re-planned, is a chain of thin GEMMs within the
// bound at the same flops that streams the matrices once per range. So the
// labels index slicing chose are also tried as ranges, with the fewest
// ranges (bisection) whose parts, each planned and re-planned by
// plan_range, meet the bound with no further index slicing.
Status WorkerSlicing::add_replanned_ranges(const ContractionTree& tree, const SlicingOptions& options,
                                           const WorkerSlicing& best, std::vector<RangeCandidate>& scored) {
  const Network& net = tree.network();
  const std::int64_t workers = options.workers;
  if (!(options.max_intermediate_bytes > 0.0) || !best.round_robin_ || best.parts_[0].num_slices() < 2) {
    return ok_status();
  }
  SlicingOptions per_range = options;
  per_range.workers = 1;
  per_range.min_slices = 1;
  const std::span<const LabelId> sliced = best.parts_[0].sliced_labels();
  for (std::size_t i = 0; i < std::min(sliced.size(), kReplannedRangeLabels); ++i) {
    const LabelId l = sliced[i];
    const std::int64_t extent = net.extent(l);
    const std::int64_t most = std::min(extent, kMaxRanges) / workers;  // ranges per worker
    if (most < 1) continue;
    const auto fits = [&](std::int64_t per_worker) -> Result<bool> {
      const std::int64_t ranges = per_worker * workers;
      Result<SlicedContraction> part =
          SlicedContraction::plan_range(tree, LabelRange{l, 0, (extent + ranges - 1) / ranges}, per_range);
      if (!part.ok()) {
        if (part.status().code() == ErrorCode::kResourceExhausted) return false;
        return part.status();
      }
      return part->num_slices() == 1;
    };
    TENFERRO_ASSIGN_OR_RETURN(const std::optional<std::int64_t> fewest, fewest_ranges_per_worker(most, fits));
    if (!fewest) continue;
    const std::int64_t ranges = *fewest * workers;
    if (ranges < 2) continue;
    const bool listed = std::ranges::any_of(
        scored, [&](const RangeCandidate& c) { return std::get<2>(c) == l && std::get<3>(c) == ranges; });
    if (!listed) scored.emplace_back(false, 0.0, l, ranges);
  }
  return ok_status();
}

Status WorkerSlicing::consider_ranges(const ContractionTree& tree, const SlicingOptions& options, WorkerSlicing& best) {
  // Notes [Range slicing] and [Range chunks]: per label, the fewest ranges
  // P, a multiple of the workers, whose fixed-order model meets the memory
  // bound (with several workers and no such P, or no bound: one range per
  // worker, sliced further by index), scored by the busiest worker's flops
  // (P / workers ranges of ceil(extent / P) values), those that meet the
  // bound first (one that does not is sliced further by index, which the
  // model does not count: on the matrix chain over 2 ranks under its peak /
  // 1.5 such labels scored best and lost to the round robin when built,
  // while the label of the peak, scored lower, was never built); the best
  // few are built, re-planned and sliced for the bound per range, and
  // replace `best` when they leave the busiest worker less work.
  const Network& net = tree.network();
  const std::int64_t workers = options.workers;
  const double bound = options.max_intermediate_bytes > 0.0
                           ? options.max_intermediate_bytes / static_cast<double>(dtype_size(net.dtype()))
                           : 0.0;
  SliceCostModel model(tree);
  const std::vector<char> none(static_cast<std::size_t>(net.num_labels()), 0);
  const auto with_ranges = [&](LabelId l, std::int64_t ranges) {
    const std::int64_t extent = net.extent(l);
    model.set_extent(l, static_cast<double>((extent + ranges - 1) / ranges));
    const SliceCostModel::Evaluation e = model.evaluate(none, bound);
    model.set_extent(l, static_cast<double>(extent));
    return e;
  };
  const auto fits = [&](LabelId l, std::int64_t ranges) {
    return bound <= 0.0 || with_ranges(l, ranges).max_size <= bound;
  };
  std::vector<RangeCandidate> scored;
  for (LabelId l = 0; l < net.num_labels(); ++l) {
    const std::int64_t most = std::min(net.extent(l), kMaxRanges) / workers;  // ranges per worker
    if (most < 1 || (workers == 1 && most < 2)) continue;
    TENFERRO_ASSIGN_OR_RETURN(
        const std::optional<std::int64_t> fewest,
        fewest_ranges_per_worker(most, [&](std::int64_t w) -> Result<bool> { return fits(l, w * workers); }));
    if (!fewest && workers == 1) continue;  // index slicing alone does that
    const bool misses = !fewest.has_value();
    const std::int64_t per_worker = fewest.value_or(1);
    const std::int64_t ranges = per_worker * workers;
    if (ranges < 2) continue;
    scored.emplace_back(misses, static_cast<double>(per_worker) * with_ranges(l, ranges).slice_flops, l, ranges);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
  });
  if (scored.size() > kRangeCandidates) scored.resize(kRangeCandidates);
  TENFERRO_TRY(add_replanned_ranges(tree, options, best, scored));
  for (const auto& [misses, flops, label, ranges] : scored) {
    Result<WorkerSlicing> candidate = range_split(tree, label, options, ranges);
    if (!candidate.ok()) {
      if (candidate.status().code() == ErrorCode::kResourceExhausted) continue;  // a range misses the bound
      return candidate.status();
    }
    if (candidate->busiest_work() < best.busiest_work()) best = std::move(candidate).value();
  }
  return ok_status();
}

Result<WorkerSlicing> WorkerSlicing::plan(const ContractionTree& tree, const SlicingOptions& options) {
  TENFERRO_ASSIGN_OR_RETURN(SlicedContraction rr, SlicedContraction::plan(tree, options));
  WorkerSlicing best = round_robin(std::move(rr), options.workers);
  if (options.workers < 2) return best;
  TENFERRO_TRY(consider_ranges(tree, options, best));
  return best;
}

Result<WorkerSlicing> WorkerSlicing::plan_sequential(const ContractionTree& tree, const SlicingOptions& options) {
  SlicingOptions one = options;
  one.workers = 1;
  one.min_slices = 1;
  TENFERRO_ASSIGN_OR_RETURN(SlicedContraction indexed, SlicedContraction::plan(tree, one));
  WorkerSlicing best = round_robin(std::move(indexed), 1);
  if (!(one.max_intermediate_bytes > 0.0) || best.parts_[0].num_slices() == 1) return best;
  TENFERRO_TRY(consider_ranges(tree, one, best));
  return best;
}

std::string SlicedContraction::explain() const {
  const Network& net = network();
  std::string labels;
  for (std::size_t i = 0; i < sliced_.size(); ++i) {
    labels += fmt::format("{}{}({}{})", i > 0 ? " " : "", net.label_name(sliced_[i]), net.extent(sliced_[i]),
                          i < sliced_output_count_ ? ", output" : "");
  }
  const double element_bytes = static_cast<double>(dtype_size(net.dtype()));
  const std::string range =
      has_range() ? fmt::format("range {}[{}:{}) of {}{}, ", net.label_name(range_.label), range_.begin, range_.end,
                                net.extent(range_.label), contains(net.output(), range_.label) ? " (output)" : "")
                  : std::string();
  // A range is one worker's share (Note [Range slicing]): its flops are a
  // fraction of the unsliced, not an overhead (WorkerSlicing::explain gives
  // the total over the workers).
  const std::string total = has_range() ? fmt::format("this range: {:.6g} flops, {:.4f} of the unsliced {:.6g}\n",
                                                      total_flops(), overhead(), tree_.cost().flops)
                                        : fmt::format("total: {:.6g} flops, overhead {:.4f}x the unsliced {:.6g}\n",
                                                      total_flops(), overhead(), tree_.cost().flops);
  return fmt::format(
      "{}sliced labels {}: {} slices ({} output slices)\n"
      "per slice: log10 flops {:.4f}, largest intermediate {:.6g} bytes (unsliced {:.6g})\n{}",
      range, labels.empty() ? "none" : labels, num_slices_, num_output_slices_, slice_cost().log10_flops(),
      slice_max_intermediate_bytes(), tree_.cost().max_intermediate_elements * element_bytes, total);
}

Status SliceViews::bind(const SlicedContraction& sliced, std::int64_t k, std::span<const TensorView> inputs,
                        const TensorView& output) {
  const Network& net = sliced.network();
  if (static_cast<std::int64_t>(inputs.size()) != net.num_operands()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "slice views: expected {} operands, found {}",
                      net.num_operands(), inputs.size());
  }
  if (k < 0 || k >= sliced.num_slices()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice views: expected a slice index in [0, {}), found {}", sliced.num_slices(), k);
  }
  const std::span<const LabelId> labels = sliced.sliced_labels();
  values_.resize(labels.size());
  sliced.slice_values(k, values_);
  const auto value_of = [&](LabelId l) -> std::int64_t {
    const auto it = std::find(labels.begin(), labels.end(), l);
    return it == labels.end() ? -1 : values_[static_cast<std::size_t>(it - labels.begin())];
  };
  // Note [Range slicing]: the range label's axes start at range.begin.
  const LabelRange& range = sliced.range();

  const std::size_t n = inputs.size();
  shapes_.resize(n);
  strides_.resize(n);
  inputs_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const TensorView& in = inputs[i];
    const NetworkOperand& op = net.operand(static_cast<std::int32_t>(i));
    if (in.dtype != net.dtype()) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "slice views: operand {}: expected {}, found {}",
                        i, net.dtype(), in.dtype);
    }
    bool shape_ok = in.shape.size() == op.axis_labels.size() && in.strides.size() == in.shape.size();
    for (std::size_t a = 0; shape_ok && a < op.axis_labels.size(); ++a) {
      const LabelId l = op.axis_labels[a];
      shape_ok = in.shape[a] == (l == kBroadcastAxis ? 1 : net.extent(l));
    }
    if (!shape_ok) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "slice views: operand {}: expected a tensor of rank {} over labels \"{}\", found shape {}", i,
                        op.axis_labels.size(), net.labels_to_string(op.labels), shape_to_string(in.shape));
    }
    Dims& shape = shapes_[i];
    Dims& strides = strides_[i];
    shape.clear();
    strides.clear();
    std::int64_t offset = 0;
    for (LabelId l : op.labels) {
      std::int64_t stride = 0;
      for (std::size_t a = 0; a < op.axis_labels.size(); ++a)
        if (op.axis_labels[a] == l) stride += in.strides[a];
      const std::int64_t value = value_of(l);
      if (value >= 0) {
        offset += value * stride;
      } else if (l == range.label) {
        offset += range.begin * stride;
        shape.push_back(range.size());
        strides.push_back(stride);
      } else {
        shape.push_back(net.extent(l));
        strides.push_back(stride);
      }
    }
    char* base = static_cast<char*>(in.data);
    inputs_[i] = TensorView{base == nullptr ? nullptr : base + offset * static_cast<std::int64_t>(dtype_size(in.dtype)),
                            shape, strides, in.dtype, in.storage};
  }

  const LabelList& out_labels = net.output();
  if (output.dtype != net.dtype()) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "slice views: output: expected {}, found {}",
                      net.dtype(), output.dtype);
  }
  bool out_ok = output.shape.size() == out_labels.size() && output.strides.size() == output.shape.size();
  for (std::size_t a = 0; out_ok && a < out_labels.size(); ++a) out_ok = output.shape[a] == net.extent(out_labels[a]);
  if (!out_ok) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "slice views: output: expected shape {}, found {}",
                      shape_to_string(net.output_shape()), shape_to_string(output.shape));
  }
  output_shape_.clear();
  output_strides_.clear();
  std::int64_t offset = 0;
  for (std::size_t a = 0; a < out_labels.size(); ++a) {
    const std::int64_t value = value_of(out_labels[a]);
    if (value >= 0) {
      offset += value * output.strides[a];
    } else if (out_labels[a] == range.label) {
      offset += range.begin * output.strides[a];
      output_shape_.push_back(range.size());
      output_strides_.push_back(output.strides[a]);
    } else {
      output_shape_.push_back(output.shape[a]);
      output_strides_.push_back(output.strides[a]);
    }
  }
  char* base = static_cast<char*>(output.data);
  output_ = TensorView{base == nullptr ? nullptr : base + offset * static_cast<std::int64_t>(dtype_size(output.dtype)),
                       output_shape_, output_strides_, output.dtype, output.storage};
  return ok_status();
}

}  // namespace tenferro::einsum
