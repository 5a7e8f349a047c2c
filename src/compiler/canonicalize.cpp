// Pipeline step 4: canonicalization and CSE in one forward pass (Notes
// [Canonical form of the compiler] and [Canonical dot_general] in
// graph_compiler.h).
//
// The pass rebuilds the graph operation by operation. Each operation's
// operands are already canonical, so a rewrite only looks at the
// operation and its operands' producers. Every rewrite is checked: the
// rewritten operation is re-inferred and must give the traced metadata,
// otherwise the original is kept.
#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "tenferro/base/hash.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/program/shape_guard.h"
#include "working_graph.h"

namespace tenferro::compiler::internal {
namespace {

using program::CoreSemanticOp;
using program::ValueMetadata;

bool is_iota(const Dims& dims) {
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

bool is_commutative(const WorkingNode& n) {
  switch (n.core) {
    case CoreSemanticOp::kAdd:
    case CoreSemanticOp::kMul:
    case CoreSemanticOp::kMax:
    case CoreSemanticOp::kMin:
    case CoreSemanticOp::kAnd:
    case CoreSemanticOp::kOr:
    case CoreSemanticOp::kXor:
      return true;
    case CoreSemanticOp::kCompare: {
      const auto direction = std::get<program::CompareAttributes>(n.attributes).direction;
      return direction == program::ComparisonDirection::kEq || direction == program::ComparisonDirection::kNe;
    }
    default:
      return false;
  }
}

/// Whether a node may be merged with an equal one: pure, and no result
/// updates an operand in place or aliases external state.
bool mergeable(const WorkingNode& n) {
  if (!n.effects.is_pure()) return false;
  return std::none_of(n.aliases.begin(), n.aliases.end(), [](const program::AliasDecl& a) {
    return a.kind == program::AliasKind::kMustAlias || a.kind == program::AliasKind::kExternalAlias;
  });
}

class Canonicalizer {
 public:
  Canonicalizer(const WorkingGraph& in, const CompilerOptions& options, CompileMetrics& metrics)
      : in_(in),
        options_(options),
        metrics_(metrics),
        out_(in.empty_copy()),
        map_(in.values.size(), kNoNode),
        in_place_(in_place_operands(in)) {
    for (std::uint32_t i = 0; i < in.num_inputs; ++i) map_[i] = i;
    input_view_.assign(in.num_inputs, true);
    out_.nodes.reserve(in.nodes.size());
    out_.values.reserve(in.values.size());
  }

  WorkingGraph run() {
    for (const WorkingNode& original : in_.nodes) {
      WorkingNode n = original;
      for (std::uint32_t& v : n.operands) v = map_[v];
      bool keep_identity = false;  // a result updated in place keeps its own node
      for (std::uint32_t r = 0; r < n.num_results; ++r) keep_identity = keep_identity || in_place_[n.first_result + r];
      const std::uint32_t in_first = original.first_result;
      if (n.is_core() && !keep_identity) {
        map_[in_first] = canonical_core(std::move(n), in_.values[in_first].metadata);
        continue;
      }
      SmallVector<ValueMetadata, 2> results;
      for (std::uint32_t r = 0; r < n.num_results; ++r) results.push_back(in_.values[in_first + r].metadata);
      const std::uint32_t first = add(std::move(n), results.span(), !keep_identity);
      for (std::uint32_t r = 0; r < original.num_results; ++r) map_[in_first + r] = first + r;
    }
    for (std::uint32_t v : in_.outputs) out_.outputs.push_back(map_[v]);
    return std::move(out_);
  }

 private:
  const ValueMetadata& meta(std::uint32_t v) const { return out_.values[v].metadata; }
  /// The core node producing out value `v`, or nullptr.
  const WorkingNode* core_producer(std::uint32_t v) const {
    const std::uint32_t node = out_.values[v].node;
    if (node == kNoNode || !out_.nodes[node].is_core()) return nullptr;
    return &out_.nodes[node];
  }

  /// Infers `op` on out operands; nullopt when inference fails. With
  /// `guards`, the shape guards it needs are appended there.
  std::optional<ValueMetadata> infer(CoreSemanticOp op, const program::CoreAttributes& attributes,
                                     std::span<const std::uint32_t> operands,
                                     std::vector<program::ShapeGuard>* guards) const {
    SmallVector<ValueMetadata, 4> m;
    for (std::uint32_t v : operands) m.push_back(meta(v));
    std::vector<program::ShapeGuard> scratch;
    program::ShapeConstraints constraints("canonicalize", guards ? guards : &scratch);
    auto result = program::infer_core_metadata(op, attributes, m.span(), constraints);
    if (!result.ok()) return std::nullopt;
    return std::move(result).value();
  }

  /// True when bypassing `inner` loses no shape guard: it needed none.
  bool needs_no_guards(const WorkingNode& inner) const {
    std::vector<program::ShapeGuard> guards;
    return infer(inner.core, inner.attributes, inner.operands.span(), &guards).has_value() && guards.empty();
  }

  /// Appends `n` (or finds an equal node when `merge` and CSE allow it);
  /// returns its first result.
  std::uint32_t add(WorkingNode n, std::span<const ValueMetadata> results, bool merge) {
    merge = merge && options_.eliminate_common_subexpressions && mergeable(n);
    std::uint64_t key = 0;
    if (merge) {
      key = n.is_core() ? static_cast<std::uint64_t>(n.core) + 1 : n.extension->payload_hash();
      key = hashing::hash_combine(key, program::hash_value(n.attributes));
      key = hashing::hash_combine(key, n.placement.hash());
      for (std::uint32_t v : n.operands) key = hashing::hash_combine(key, v);
      auto it = table_.find(key);
      if (it != table_.end()) {
        for (std::uint32_t candidate : it->second) {
          if (equal(out_.nodes[candidate], n)) {
            ++metrics_.common_subexpressions;
            return out_.nodes[candidate].first_result;
          }
        }
      }
    }
    for (std::size_t r = 0; r < results.size(); ++r)
      input_view_.push_back(produces_input_view(n, static_cast<std::uint32_t>(r)));
    const std::uint32_t index = out_.append(std::move(n), results);
    if (merge) table_[key].push_back(index);
    return out_.nodes[index].first_result;
  }

  static bool equal(const WorkingNode& a, const WorkingNode& b) {
    if (a.is_core() != b.is_core() || a.operands != b.operands || !(a.placement == b.placement)) return false;
    if (a.is_core()) return a.core == b.core && a.attributes == b.attributes;
    return a.extension == b.extension ||
           (a.extension->family_id() == b.extension->family_id() &&
            a.extension->payload_hash() == b.extension->payload_hash() && a.extension->payload_equal(*b.extension));
  }

  /// Whether result r of `n` is a program input or a view chain of one
  /// (Note [Alias strength] in validation.h).
  bool produces_input_view(const WorkingNode& n, std::uint32_t r) const {
    if (n.is_core()) {
      return program::core_op_info(n.core).alias == program::AliasClass::kViewOfOperand0 && input_view_[n.operands[0]];
    }
    const program::AliasDecl& a = n.aliases[r];
    const bool through = a.kind == program::AliasKind::kViewOf || a.kind == program::AliasKind::kMustAlias;
    return through && a.operand < n.operands.size() && input_view_[n.operands[a.operand]];
  }

  /// Appends a new core node made by a rewrite of `like` (its provenance
  /// and placement); nullopt when it does not infer to `want`.
  std::optional<std::uint32_t> add_rewritten(CoreSemanticOp op, program::CoreAttributes attributes,
                                             SmallVector<std::uint32_t, 4> operands, const WorkingNode& like,
                                             const ValueMetadata* want) {
    std::optional<ValueMetadata> m = infer(op, attributes, operands.span(), nullptr);
    if (!m || (want != nullptr && !(*m == *want))) return std::nullopt;
    WorkingNode n;
    n.core = op;
    n.attributes = std::move(attributes);
    n.operands = std::move(operands);
    n.aliases.push_back(program::AliasDecl::fresh());
    n.placement = like.placement;
    n.provenance = like.provenance;
    return add(std::move(n), std::span<const ValueMetadata>(&*m, 1), true);
  }

  std::uint32_t canonical_core(WorkingNode n, const ValueMetadata& want) {
    if (options_.canonicalize) {
      if (auto v = identity_of(n, want)) {
        ++metrics_.identities_removed;
        return *v;
      }
      if (compose(n, want)) {
        ++metrics_.views_composed;
        if (auto v = identity_of(n, want)) return *v;
      }
      if (is_commutative(n) && n.operands[1] < n.operands[0]) {
        std::swap(n.operands[0], n.operands[1]);
        ++metrics_.commutative_operands_swapped;
      }
      if (n.core == CoreSemanticOp::kDotGeneral) {
        if (auto v = canonical_dot_general(n, want)) return *v;
      }
    }
    return add(std::move(n), std::span<const ValueMetadata>(&want, 1), true);
  }

  /// The operand `n` is an identity of, if any.
  std::optional<std::uint32_t> identity_of(const WorkingNode& n, const ValueMetadata& want) const {
    if (n.operands.empty()) return std::nullopt;
    const std::uint32_t x = n.operands[0];
    if (!(meta(x) == want)) return std::nullopt;  // also rules out shape/dtype changes
    const bool fresh_ok = !input_view_[x];        // keeps a fresh result fresh
    switch (n.core) {
      case CoreSemanticOp::kTranspose:
        return is_iota(std::get<program::TransposeAttributes>(n.attributes).perm) ? std::optional(x) : std::nullopt;
      case CoreSemanticOp::kReshape:
        return x;  // same metadata: same shape
      case CoreSemanticOp::kBroadcastInDim:
        return is_iota(std::get<program::BroadcastInDimAttributes>(n.attributes).dims) ? std::optional(x)
                                                                                       : std::nullopt;
      case CoreSemanticOp::kSlice: {
        const auto& a = std::get<program::SliceAttributes>(n.attributes);
        for (std::size_t k = 0; k < a.start.size(); ++k)
          if (a.start[k] != 0 || a.stride[k] != 1) return std::nullopt;
        return x;  // same shape, start 0, stride 1: everything
      }
      case CoreSemanticOp::kConvert:
        return fresh_ok ? std::optional(x) : std::nullopt;
      case CoreSemanticOp::kReverse:
        return fresh_ok && std::get<program::ReverseAttributes>(n.attributes).axes.empty() ? std::optional(x)
                                                                                           : std::nullopt;
      case CoreSemanticOp::kReduceSum:
      case CoreSemanticOp::kReduceProd:
      case CoreSemanticOp::kReduceMax:
      case CoreSemanticOp::kReduceMin:
        return fresh_ok && std::get<program::ReduceAttributes>(n.attributes).axes.empty() ? std::optional(x)
                                                                                          : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  /// Composes `n` with an inner view of the same kind (in place); false
  /// when it does not apply.
  bool compose(WorkingNode& n, const ValueMetadata& want) const {
    if (n.operands.size() != 1) return false;
    const WorkingNode* inner = core_producer(n.operands[0]);
    if (inner == nullptr || inner->core != n.core || !(inner->placement == n.placement)) return false;
    program::CoreAttributes attributes;
    switch (n.core) {
      case CoreSemanticOp::kTranspose: {
        const Dims& outer = std::get<program::TransposeAttributes>(n.attributes).perm;
        const Dims& first = std::get<program::TransposeAttributes>(inner->attributes).perm;
        Dims perm;
        for (std::int64_t axis : outer) perm.push_back(first[static_cast<std::size_t>(axis)]);
        attributes = program::TransposeAttributes{std::move(perm)};
        break;
      }
      case CoreSemanticOp::kReshape:
        attributes = n.attributes;
        break;
      case CoreSemanticOp::kBroadcastInDim: {
        const auto& outer = std::get<program::BroadcastInDimAttributes>(n.attributes);
        const auto& first = std::get<program::BroadcastInDimAttributes>(inner->attributes);
        Dims dims;
        for (std::int64_t d : first.dims) dims.push_back(outer.dims[static_cast<std::size_t>(d)]);
        attributes = program::BroadcastInDimAttributes{outer.shape, std::move(dims)};
        break;
      }
      default:
        return false;
    }
    if (!needs_no_guards(*inner)) return false;
    const std::uint32_t source = inner->operands[0];
    std::optional<ValueMetadata> m = infer(n.core, attributes, std::span<const std::uint32_t>(&source, 1), nullptr);
    if (!m || !(*m == want)) return false;
    n.attributes = std::move(attributes);
    n.operands[0] = source;
    return true;
  }

  /// Note [Canonical dot_general]; nullopt keeps `n` as it is.
  std::optional<std::uint32_t> canonical_dot_general(const WorkingNode& n, const ValueMetadata& want) {
    program::DotGeneralAttributes d = std::get<program::DotGeneralAttributes>(n.attributes);
    SmallVector<std::uint32_t, 4> operands = n.operands;
    std::size_t folded = 0;
    // (a) Fold operand transposes that keep the free axes in order.
    for (int side = 0; side < 2; ++side) {
      const WorkingNode* t = core_producer(operands[side]);
      if (t == nullptr || t->core != CoreSemanticOp::kTranspose || !(t->placement == n.placement)) continue;
      const Dims& perm = std::get<program::TransposeAttributes>(t->attributes).perm;
      Dims& batch = side == 0 ? d.lhs_batch : d.rhs_batch;
      Dims& contract = side == 0 ? d.lhs_contract : d.rhs_contract;
      std::int64_t last_free = -1;
      bool in_order = true;
      for (std::size_t axis = 0; axis < perm.size(); ++axis) {
        const auto a = static_cast<std::int64_t>(axis);
        if (std::find(batch.begin(), batch.end(), a) != batch.end() ||
            std::find(contract.begin(), contract.end(), a) != contract.end())
          continue;
        in_order = in_order && perm[axis] > last_free;
        last_free = perm[axis];
      }
      if (!in_order) continue;
      for (std::int64_t& a : batch) a = perm[static_cast<std::size_t>(a)];
      for (std::int64_t& a : contract) a = perm[static_cast<std::size_t>(a)];
      operands[side] = t->operands[0];
      ++folded;
    }
    // (b), (c) Sort contracting and batch pairs by lhs axis.
    auto sort_pairs = [](Dims& lhs, Dims& rhs) {
      SmallVector<std::size_t, 4> order(lhs.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lhs[a] < lhs[b]; });
      Dims l, r;
      for (std::size_t i : order) {
        l.push_back(lhs[i]);
        r.push_back(rhs[i]);
      }
      lhs = std::move(l);
      rhs = std::move(r);
      return order;
    };
    const Dims old_contract = d.lhs_contract;
    sort_pairs(d.lhs_contract, d.rhs_contract);
    const SmallVector<std::size_t, 4> batch_order = sort_pairs(d.lhs_batch, d.rhs_batch);
    bool batch_moved = false;
    for (std::size_t i = 0; i < batch_order.size(); ++i) batch_moved = batch_moved || batch_order[i] != i;
    const bool sorted = batch_moved || old_contract != d.lhs_contract;
    if (folded == 0 && !sorted) return std::nullopt;

    std::optional<std::uint32_t> result;
    if (!batch_moved) {
      result = add_rewritten(CoreSemanticOp::kDotGeneral, d, operands, n, &want);
    } else {
      // New result axis s is traced batch axis batch_order[s]; the
      // transpose puts traced axis j back at position j.
      Dims perm(static_cast<std::size_t>(want.rank()), 0);
      for (std::size_t s = 0; s < batch_order.size(); ++s) perm[batch_order[s]] = static_cast<std::int64_t>(s);
      for (std::size_t j = batch_order.size(); j < perm.size(); ++j) perm[j] = static_cast<std::int64_t>(j);
      std::optional<std::uint32_t> dot = add_rewritten(CoreSemanticOp::kDotGeneral, d, operands, n, nullptr);
      if (dot) {
        result =
            add_rewritten(CoreSemanticOp::kTranspose, program::TransposeAttributes{std::move(perm)}, {*dot}, n, &want);
      }
    }
    if (!result) return std::nullopt;  // the dead dot (if any) goes with DCE
    metrics_.dot_general_transposes_folded += folded;
    if (sorted) ++metrics_.dot_general_dimensions_sorted;
    return result;
  }

  const WorkingGraph& in_;
  const CompilerOptions& options_;
  CompileMetrics& metrics_;
  WorkingGraph out_;
  std::vector<std::uint32_t> map_;  // in value -> out value
  std::vector<bool> in_place_;      // in values updated in place
  std::vector<bool> input_view_;    // out value is an input or a view chain of one
  std::unordered_map<std::uint64_t, SmallVector<std::uint32_t, 1>> table_;  // CSE: key -> out nodes
};

}  // namespace

WorkingGraph canonicalize(const WorkingGraph& graph, const CompilerOptions& options, CompileMetrics& metrics) {
  return Canonicalizer(graph, options, metrics).run();
}

}  // namespace tenferro::compiler::internal
