// The layout pass (Note [Layout-aware execution] in layout_planner.h).
#include "layout_planner.h"

#include <algorithm>
#include <array>
#include <limits>

#include "tenferro/base/assert.h"
#include "tenferro/cpu/gemm/dot_general.h"

namespace tenferro::einsum::internal {
namespace {

constexpr int kX = 0;  // lhs operand
constexpr int kY = 1;  // rhs operand
constexpr int kZ = 2;  // result

bool contains(const LabelList& labels, LabelId label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

std::int64_t stride_of(const LabelledView& view, LabelId label) {
  const auto it = std::find(view.labels.begin(), view.labels.end(), label);
  TENFERRO_ASSERT(it != view.labels.end());
  return view.strides[static_cast<std::size_t>(it - view.labels.begin())];
}

// How a group sits in a view: its labels of extent > 1 by decreasing stride,
// whether they fuse into one dimension, its extent and innermost stride.
struct GroupInView {
  LabelList order;
  bool fused = true;
  std::int64_t extent = 1;
  std::int64_t inner_stride = 0;
};

GroupInView group_in(const Network& net, const LabelList& group, const LabelledView& view) {
  GroupInView g;
  SmallVector<std::pair<std::int64_t, LabelId>, 8> entries;
  for (LabelId l : group)
    if (net.extent(l) != 1) entries.emplace_back(stride_of(view, l), l);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < entries.size(); ++i) {
    g.order.push_back(entries[i].second);
    g.extent *= net.extent(entries[i].second);
    if (i + 1 < entries.size() && entries[i].first != entries[i + 1].first * net.extent(entries[i + 1].second)) {
      g.fused = false;
    }
  }
  if (!entries.empty()) g.inner_stride = entries.back().first;
  return g;
}

// Every label of `group` ordered by decreasing stride in `view` (extent-1
// labels last, in group order).
LabelList full_order(const Network& net, const LabelList& group, const LabelledView& view) {
  LabelList order = group_in(net, group, view).order;
  for (LabelId l : group)
    if (net.extent(l) == 1) order.push_back(l);
  return order;
}

// `labels` ordered by their position in `order` (every label is in it).
LabelList by_position(const LabelList& labels, const LabelList& order) {
  LabelList out = labels;
  std::stable_sort(out.begin(), out.end(), [&](LabelId x, LabelId y) {
    return std::find(order.begin(), order.end(), x) < std::find(order.begin(), order.end(), y);
  });
  return out;
}

LabelList concat(std::initializer_list<const LabelList*> parts) {
  LabelList out;
  for (const LabelList* p : parts) out.append(p->begin(), p->end());
  return out;
}

LabelledView dense_view(const Network& net, const LabelList& order) {
  return LabelledView{order, dense_strides(net, order, order)};
}

// The four GEMM groups of a step and which of X, Y, Z hold each.
struct StepGroups {
  const LabelList* batch;
  const LabelList* m;
  const LabelList* n;
  const LabelList* k;
};

// Views of X, Y, Z; a null view is a wildcard (its order is still free, so
// it adapts to whatever the others need).
using StepViews = std::array<const LabelledView*, 3>;

bool broadcast_product(const Network& net, const StepGroups& g) {
  const auto wide = [&](const LabelList& group) {
    return static_cast<std::size_t>(
        std::count_if(group.begin(), group.end(), [&](LabelId l) { return net.extent(l) != 1; }));
  };
  return cpu::is_broadcast_product(wide(*g.m), wide(*g.n), wide(*g.k));
}

bool any_empty_extent(const Network& net, const StepGroups& g) {
  for (const LabelList* group : {g.batch, g.m, g.n, g.k})
    for (LabelId l : *group)
      if (net.extent(l) == 0) return true;
  return false;
}

// Whether the composite can keep every non-wildcard tensor in `keep` as it
// is (Note [Layout-aware execution]). `gathered` gets the kept tensors that
// have no unit stride in either of their GEMM dimensions (Note [Gathered
// operands]).
bool feasible(const Network& net, const StepGroups& g, const StepViews& views, unsigned keep,
              cpu::GemmStrideSupport support, unsigned* gathered) {
  *gathered = 0;
  if (broadcast_product(net, g)) return true;
  const auto kept = [&](int t) { return (keep >> t & 1u) != 0 && views[static_cast<std::size_t>(t)] != nullptr; };
  struct Holders {
    const LabelList* group;
    std::array<int, 2> tensors;
  };
  const Holders holders[] = {{g.m, {kX, kZ}}, {g.n, {kY, kZ}}, {g.k, {kX, kY}}};
  std::array<GroupInView, 3> m_in, n_in, k_in;  // per tensor, when held
  for (const Holders& h : holders) {
    const GroupInView* reference = nullptr;
    for (int t : h.tensors) {
      if (!kept(t)) continue;
      GroupInView gi = group_in(net, *h.group, *views[static_cast<std::size_t>(t)]);
      if (!gi.fused) return false;
      std::array<GroupInView, 3>& slot = h.group == g.m ? m_in : (h.group == g.n ? n_in : k_in);
      slot[static_cast<std::size_t>(t)] = std::move(gi);
      if (reference == nullptr) {
        reference = &slot[static_cast<std::size_t>(t)];
      } else if (reference->order != slot[static_cast<std::size_t>(t)].order) {
        return false;
      }
    }
  }
  const auto supported = [&](const GroupInView& rows, const GroupInView& cols) {
    return cpu::gemm_operand_layout_supported(support, rows.extent, cols.extent, rows.inner_stride, cols.inner_stride);
  };
  if (kept(kX) && !supported(m_in[kX], k_in[kX])) return false;
  if (kept(kY) && !supported(k_in[kY], n_in[kY])) return false;
  if (kept(kZ) && !supported(m_in[kZ], n_in[kZ])) return false;
  const auto unit = [](const GroupInView& gi) { return gi.extent <= 1 || gi.inner_stride == 1; };
  if (kept(kX) && !unit(m_in[kX]) && !unit(k_in[kX])) *gathered |= 1u << kX;
  if (kept(kY) && !unit(k_in[kY]) && !unit(n_in[kY])) *gathered |= 1u << kY;
  if (kept(kZ) && !unit(m_in[kZ]) && !unit(n_in[kZ])) *gathered |= 1u << kZ;
  return true;
}

// Note [Gathered operands]
// The native GEMM takes any strides, but an operand kept with no unit stride
// in either GEMM dimension (its batch axes innermost, say) is packed by
// gathering one element per cache line, again for every block: in
// gm_queen5_5_3 such a 43M-element operand, kept to save a transposing copy
// of the producer's result, put 37% of the run in packing and made the
// instance 1.3x slower. Keeping one costs twice its elements, so a copy (or
// a temporary) wins.
constexpr double kGatherCost = 2.0;

// Note [Producer-shaped children] (LayoutPlanner::assign).
constexpr double kProducerShapeGain = 0.5;

// The cheapest set of tensors to keep: copies cost the elements they move,
// gathered operands twice theirs. Ties keep more tensors, then prefer
// keeping the result.
unsigned best_keep(const Network& net, const StepGroups& g, const StepViews& views, const std::array<double, 3>& size,
                   cpu::GemmStrideSupport support, double* cost_out) {
  if (any_empty_extent(net, g)) {
    if (cost_out != nullptr) *cost_out = 0.0;
    return 7u;
  }
  unsigned best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (unsigned keep = 8; keep-- > 0;) {
    unsigned gathered = 0;
    if (!feasible(net, g, views, keep, support, &gathered)) continue;
    double cost = 0.0;
    for (int t = 0; t < 3; ++t) {
      if (views[static_cast<std::size_t>(t)] == nullptr) continue;
      if ((keep >> t & 1u) == 0) cost += size[static_cast<std::size_t>(t)];
      if ((gathered >> t & 1u) != 0) cost += kGatherCost * size[static_cast<std::size_t>(t)];
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = keep;
    }
  }
  if (cost_out != nullptr) *cost_out = best_cost;
  return best;
}

class LayoutPlanner {
 public:
  LayoutPlanner(const ContractionTree& tree, cpu::GemmStrideSupport support)
      : tree_(tree), net_(tree.network()), support_(support), n_(tree.num_inputs()) {}

  TreeLayout run() {
    layout_.nodes.resize(static_cast<std::size_t>(tree_.num_nodes()));
    layout_.steps.resize(tree_.steps().size());
    for (std::int32_t i = 0; i < n_; ++i) layout_.nodes[static_cast<std::size_t>(i)] = input_view(i);
    output_ = dense_view(net_, net_.output());
    const auto steps = tree_.steps();
    for (std::size_t k = steps.size(); k-- > 0;) choose_children(static_cast<std::int32_t>(k));
    for (std::size_t k = 0; k < steps.size(); ++k) plan_copies(static_cast<std::int32_t>(k));
    return std::move(layout_);
  }

 private:
  const ContractionStep& step(std::int32_t k) const { return tree_.steps()[static_cast<std::size_t>(k)]; }
  bool is_root(std::int32_t k) const { return k + 1 == static_cast<std::int32_t>(tree_.steps().size()); }
  StepGroups groups(std::int32_t k) const {
    const ContractionStep& s = step(k);
    return StepGroups{&s.batch, &s.lhs_free, &s.rhs_free, &s.contracted};
  }
  const LabelList& summed(std::int32_t k, int side) const {
    return side == kX ? step(k).lhs_summed : step(k).rhs_summed;
  }
  std::int32_t child(std::int32_t k, int side) const { return side == kX ? step(k).lhs : step(k).rhs; }

  // The view of input i: its distinct labels with the strides of the
  // row-major operand (diagonal axes add up; broadcast axes vanish).
  LabelledView input_view(std::int32_t i) const {
    const NetworkOperand& op = net_.operand(i);
    const std::size_t rank = op.axis_labels.size();
    Strides axis_stride(rank, 0);
    std::int64_t stride = 1;
    for (std::size_t a = rank; a-- > 0;) {
      axis_stride[a] = stride;
      const LabelId l = op.axis_labels[a];
      stride *= l == kBroadcastAxis ? 1 : net_.extent(l);
    }
    LabelledView v;
    v.labels = op.labels;
    v.strides = Strides(op.labels.size(), 0);
    for (std::size_t a = 0; a < rank; ++a) {
      const LabelId l = op.axis_labels[a];
      if (l == kBroadcastAxis) continue;
      const auto at = std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin();
      v.strides[static_cast<std::size_t>(at)] += axis_stride[a];
    }
    return v;
  }

  const LabelledView& result_view(std::int32_t k) const {
    return is_root(k) ? output_ : layout_.nodes[static_cast<std::size_t>(n_ + k)];
  }
  // Whether the step reads this side through a buffer whose order is ours.
  bool side_is_free(std::int32_t k, int side) const { return !summed(k, side).empty() || child(k, side) >= n_; }
  // The operand's labels after pre-summing, in the child's view order.
  LabelList kept_labels(std::int32_t k, int side) const {
    LabelList kept;
    const LabelList& s = summed(k, side);
    for (LabelId l : layout_.nodes[static_cast<std::size_t>(child(k, side))].labels)
      if (!contains(s, l)) kept.push_back(l);
    return kept;
  }
  std::array<double, 3> sizes(std::int32_t k) const {
    const ContractionStep& s = step(k);
    return {s.lhs_elements, s.rhs_elements, s.result_elements};
  }

  // Copy cost at step p when its result had layout `z` and its free
  // children adapted (used to pick a child's block order).
  double producer_cost(std::int32_t p, const LabelledView& z) const {
    StepViews views{nullptr, nullptr, &z};
    for (int side : {kX, kY})
      if (!side_is_free(p, side))
        views[static_cast<std::size_t>(side)] = &layout_.nodes[static_cast<std::size_t>(child(p, side))];
    double cost = 0.0;
    best_keep(net_, groups(p), views, sizes(p), support_, &cost);
    return cost;
  }

  // Step 1 of Note [Layout-aware execution]: the orders of step k's free
  // children, given its result's order.
  void choose_children(std::int32_t k) {
    const ContractionStep& s = step(k);
    const LabelledView& z = result_view(k);
    if (broadcast_product(net_, groups(k))) {
      // Any layout runs without a copy; children in the result's order give
      // the loop unit-stride runs.
      const LabelList x = full_order(net_, concat({&s.batch, &s.lhs_free, &s.contracted}), z);
      const LabelList y = full_order(net_, concat({&s.batch, &s.rhs_free, &s.contracted}), z);
      assign(k, kX, x, x);
      assign(k, kY, y, y);
      return;
    }
    const LabelList b = full_order(net_, s.batch, z);
    const LabelList m = full_order(net_, s.lhs_free, z);
    const LabelList n = full_order(net_, s.rhs_free, z);
    LabelList kk;
    if (!side_is_free(k, kY)) {
      kk = full_order(net_, s.contracted, layout_.nodes[static_cast<std::size_t>(s.rhs)]);
    } else if (!side_is_free(k, kX)) {
      kk = full_order(net_, s.contracted, layout_.nodes[static_cast<std::size_t>(s.lhs)]);
    } else {
      // Both free: follow the lhs producer's natural order, which tends to
      // keep its own groups together.
      kk = s.contracted;
      const LabelList& hint = tree_.node_labels(s.lhs);
      std::stable_sort(kk.begin(), kk.end(), [&](LabelId x, LabelId y) {
        return std::find(hint.begin(), hint.end(), x) < std::find(hint.begin(), hint.end(), y);
      });
    }
    assign(k, kX, concat({&b, &m, &kk}), concat({&b, &kk, &m}));
    assign(k, kY, concat({&b, &kk, &n}), concat({&b, &n, &kk}));
  }

  void assign(std::int32_t k, int side, const LabelList& preferred, const LabelList& alternative) {
    if (!side_is_free(k, side)) return;
    const std::int32_t c = child(k, side);
    StepLayout& sl = layout_.steps[static_cast<std::size_t>(k)];
    if (!summed(k, side).empty()) {
      sl.presum[side] = true;
      sl.presum_order[side] = preferred;
      return;
    }
    // Note [Producer-shaped children]: besides the two orders that suit
    // step k, the producer's own [B, M, N] and [B, N, M] (each group in the
    // order `preferred` gives its labels), which it writes without a
    // temporary and in which k's groups stay whole when each lies inside
    // one producer group. Costs count the elements copied at k and at the
    // producer. A producer-shaped order must at least halve the cost: the
    // count does not see that a copy moving whole runs (memmove) is cheaper
    // than a transposing one, and in the MERA instance a producer-shaped
    // order saved a 1.3M-element temporary but turned the next step's
    // 34M-element run copy into a transpose (1.23 s -> 1.32 s).
    const std::int32_t p = c - n_;
    const auto cost_of = [&](const LabelList& order) {
      const LabelledView view = dense_view(net_, order);
      return consumer_cost(k, side, view) + producer_cost(p, view);
    };
    const LabelList* chosen = &preferred;
    double best = cost_of(preferred);
    if (alternative != preferred) {
      const double cost = cost_of(alternative);
      if (cost < best) {
        best = cost;
        chosen = &alternative;
      }
    }
    const ContractionStep& ps = step(p);
    const LabelList pb = by_position(ps.batch, preferred);
    const LabelList pm = by_position(ps.lhs_free, preferred);
    const LabelList pn = by_position(ps.rhs_free, preferred);
    const LabelList shaped[] = {concat({&pb, &pm, &pn}), concat({&pb, &pn, &pm})};
    const double bar = kProducerShapeGain * best;
    for (const LabelList& order : shaped) {
      if (order == *chosen) continue;
      const double cost = cost_of(order);
      if (cost < bar && cost < best) {
        best = cost;
        chosen = &order;
      }
    }
    layout_.nodes[static_cast<std::size_t>(c)] = dense_view(net_, *chosen);
  }

  // Copy cost at step k when the child on `side` had layout `view` (a free
  // sibling adapts).
  double consumer_cost(std::int32_t k, int side, const LabelledView& view) const {
    StepViews views{nullptr, nullptr, &result_view(k)};
    views[static_cast<std::size_t>(side)] = &view;
    const int other = 1 - side;
    if (!side_is_free(k, other))
      views[static_cast<std::size_t>(other)] = &layout_.nodes[static_cast<std::size_t>(child(k, other))];
    double cost = 0.0;
    best_keep(net_, groups(k), views, sizes(k), support_, &cost);
    return cost;
  }

  // Step 2: with every order fixed, what step k keeps and what it copies.
  void plan_copies(std::int32_t k) {
    const ContractionStep& s = step(k);
    StepLayout& sl = layout_.steps[static_cast<std::size_t>(k)];
    std::array<LabelledView, 2> operand;
    for (int side : {kX, kY}) {
      const LabelList kept = kept_labels(k, side);
      operand[static_cast<std::size_t>(side)] =
          sl.presum[side] ? LabelledView{kept, dense_strides(net_, sl.presum_order[side], kept)}
                          : layout_.nodes[static_cast<std::size_t>(child(k, side))];
    }
    const LabelledView& z = result_view(k);
    const StepViews views{&operand[0], &operand[1], &z};
    const unsigned keep = best_keep(net_, groups(k), views, sizes(k), support_, nullptr);
    if (keep == 7u || broadcast_batch(k, views, sl)) return;
    const auto kept = [&](int t) { return (keep >> t & 1u) != 0; };
    // Each group's order from a kept tensor holding it, else from the first holder.
    const auto order_of = [&](const LabelList& group, std::initializer_list<int> holders) {
      for (int t : holders)
        if (kept(t)) return full_order(net_, group, *views[static_cast<std::size_t>(t)]);
      return full_order(net_, group, *views[static_cast<std::size_t>(*holders.begin())]);
    };
    const LabelList b = order_of(s.batch, {kZ, kX, kY});
    const LabelList m = order_of(s.lhs_free, {kZ, kX});
    const LabelList n = order_of(s.rhs_free, {kZ, kY});
    const LabelList kk = order_of(s.contracted, {kY, kX});
    if (!kept(kX)) {
      sl.copy[kX] = true;
      sl.copy_order[kX] = concat({&b, &m, &kk});
    }
    if (!kept(kY)) {
      sl.copy[kY] = true;
      sl.copy_order[kY] = concat({&b, &kk, &n});
    }
    if (!kept(kZ)) {
      sl.temp = true;
      sl.temp_order = concat({&b, &m, &n});
    }
  }

  // Note [Broadcast batch labels]: the result's outermost labels other than
  // batch ones, when they are free labels of one side, as batch labels with
  // stride 0 in the other operand, if that keeps all three tensors.
  bool broadcast_batch(std::int32_t k, const StepViews& views, StepLayout& sl) const {
    const ContractionStep& s = step(k);
    const LabelledView& z = *views[kZ];
    const auto has = [](const LabelList& list, LabelId l) {
      return std::find(list.begin(), list.end(), l) != list.end();
    };
    SmallVector<std::pair<std::int64_t, LabelId>, 8> by_stride;  // z's labels, outermost first
    for (std::size_t i = 0; i < z.labels.size(); ++i) {
      if (net_.extent(z.labels[i]) > 1 && !has(s.batch, z.labels[i])) by_stride.emplace_back(z.strides[i], z.labels[i]);
    }
    std::stable_sort(by_stride.begin(), by_stride.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int side : {kX, kY}) {
      const LabelList& free = side == kX ? s.lhs_free : s.rhs_free;
      LabelList outer;
      for (const auto& [stride, l] : by_stride) {
        if (!has(free, l)) break;
        outer.push_back(l);
      }
      if (outer.empty()) continue;
      LabelList rest;
      std::int64_t rest_extent = 1;
      for (LabelId l : free) {
        if (!has(outer, l)) {
          rest.push_back(l);
          rest_extent *= net_.extent(l);
        }
      }
      if (rest_extent <= 1) continue;  // a batch of vector products: the temporary is cheaper
      const LabelList batch = concat({&s.batch, &outer});
      const StepGroups g = side == kX ? StepGroups{&batch, &rest, &s.rhs_free, &s.contracted}
                                      : StepGroups{&batch, &s.lhs_free, &rest, &s.contracted};
      unsigned gathered = 0;  // a gathered operand is copied instead (Note [Gathered operands])
      if (broadcast_product(net_, g) || !feasible(net_, g, views, 7u, support_, &gathered) || gathered != 0) continue;
      sl.broadcast = std::move(outer);
      sl.broadcast_side = 1 - side;
      return true;
    }
    return false;
  }

  const ContractionTree& tree_;
  const Network& net_;
  cpu::GemmStrideSupport support_;
  std::int32_t n_;
  LabelledView output_;
  TreeLayout layout_;
};

}  // namespace

Strides dense_strides(const Network& network, const LabelList& order, const LabelList& logical) {
  Strides by_order(order.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t i = order.size(); i-- > 0;) {
    by_order[i] = stride;
    stride *= network.extent(order[i]);
  }
  Strides out;
  for (LabelId l : logical) {
    const auto at = std::find(order.begin(), order.end(), l) - order.begin();
    TENFERRO_ASSERT(at < static_cast<std::ptrdiff_t>(order.size()));
    out.push_back(by_order[static_cast<std::size_t>(at)]);
  }
  return out;
}

Strides strides_in_order(const LabelledView& view, const LabelList& logical) {
  Strides out;
  for (LabelId l : logical) out.push_back(stride_of(view, l));
  return out;
}

bool is_broadcast_step(const Network& net, const ContractionStep& s) {
  return broadcast_product(net, StepGroups{&s.batch, &s.lhs_free, &s.rhs_free, &s.contracted});
}

TreeLayout plan_layouts(const ContractionTree& tree, cpu::GemmStrideSupport strides) {
  return LayoutPlanner(tree, strides).run();
}

}  // namespace tenferro::einsum::internal
