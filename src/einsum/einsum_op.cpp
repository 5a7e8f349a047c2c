// EinsumOp: payload identity, policy validation and metadata inference
// (Notes [Einsum payload identity] and [Einsum metadata inference] in
// einsum_op.h). The core lowering lives in core_lowering.cpp.
#include "tenferro/einsum/einsum_op.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "tenferro/base/abbreviate.h"
#include "tenferro/base/hash.h"
#include "tenferro/program/core_op.h"

namespace tenferro::einsum {

namespace {

using program::SymbolicExtent;
using program::ValueMetadata;

std::uint64_t hash_weights(std::uint64_t h, const CostWeights& w) noexcept {
  h = hashing::hash_double(h, w.read_write);
  h = hashing::hash_double(h, w.size);
  return hashing::hash_double(h, w.size_target_log2);
}

// One occurrence of a label: which operand and axis carry it.
struct Occurrence {
  std::int32_t operand = 0;
  std::int32_t axis = 0;
};

}  // namespace

std::uint64_t hash_policy(const PlanningPolicy& policy) noexcept {
  std::uint64_t h = hashing::hash_combine(0x5eed, static_cast<std::uint64_t>(policy.planner));
  h = hashing::hash_combine(h, policy.path.has_value());
  if (policy.path) {
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(policy.path->num_inputs()));
    for (auto [a, b] : policy.path->steps()) {
      h = hashing::hash_combine(h, (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b));
    }
  }
  h = hashing::hash_combine(h, policy.treesa.has_value());
  if (policy.treesa) {
    const TreeSAOptions& t = *policy.treesa;
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(t.chains));
    h = hashing::hash_double(h, t.beta_start);
    h = hashing::hash_double(h, t.beta_end);
    h = hashing::hash_double(h, t.beta_step);
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(t.sweeps_per_beta));
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(t.max_sweeps));
    h = hashing::hash_double(h, t.time_budget_seconds);
    h = hashing::hash_combine(h, static_cast<std::uint64_t>(t.greedy_trials));
  }
  h = hashing::hash_combine(h, policy.weights.has_value());
  if (policy.weights) h = hash_weights(h, *policy.weights);
  return h;
}

std::string describe_policy(const std::optional<PlanningPolicy>& policy) {
  if (!policy) return "inherit";
  std::string out(to_string(policy->planner));
  if (policy->path) out += " " + policy->path->to_string();
  if (policy->treesa) {
    const TreeSAOptions& t = *policy->treesa;
    out += fmt::format("(chains {}, beta {}..{} step {}, sweeps {}, budget {} s)", t.chains, t.beta_start, t.beta_end,
                       t.beta_step, t.sweeps_per_beta, t.time_budget_seconds);
  }
  if (policy->weights) {
    out += fmt::format(" weights(rw {}, size {} beyond 2^{})", policy->weights->read_write, policy->weights->size,
                       policy->weights->size_target_log2);
  }
  return out;
}

EinsumOp::EinsumOp(Subscripts subscripts, std::optional<PlanningPolicy> policy)
    : subscripts_(std::move(subscripts)), policy_(std::move(policy)) {
  canonical_ = subscripts_.to_string();
  hash_ =
      hashing::hash_string(hashing::hash_combine(0xe1, static_cast<std::uint64_t>(subscripts_.notation())), canonical_);
  hash_ = hashing::hash_combine(hash_, policy_ ? hash_policy(*policy_) : 0x1be7);
}

Result<std::shared_ptr<const EinsumOp>> EinsumOp::create(std::string_view subscripts,
                                                         std::optional<PlanningPolicy> policy) {
  TENFERRO_ASSIGN_OR_RETURN(Subscripts parsed, Subscripts::parse(subscripts));
  return create(std::move(parsed), std::move(policy));
}

Result<std::shared_ptr<const EinsumOp>> EinsumOp::create(Subscripts subscripts, std::optional<PlanningPolicy> policy) {
  if (policy) {
    TENFERRO_TRY(validate_policy(*policy, subscripts.num_operands(), subscripts.nesting().has_value(),
                                 abbreviate(subscripts.to_string()), ErrorStage::kNone));
  }
  std::shared_ptr<EinsumOp> op(new EinsumOp(std::move(subscripts), std::move(policy)));
  // Without "..." the label structure is fixed by the terms: precompile it
  // for the allocation-free output-shape check. A label's id is its rank
  // among the distinct keys; the implicit output is numpy's (the keys
  // written once, ascending). Parsing has checked the explicit output.
  const auto terms = op->subscripts_.operands();
  const bool has_ellipsis = std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.has_ellipsis(); });
  if (!has_ellipsis) {
    SmallVector<LabelKey, 16> keys;
    for (const Term& t : terms) keys.append(t.labels.begin(), t.labels.end());
    std::sort(keys.begin(), keys.end());
    SmallVector<LabelKey, 16> distinct;
    SmallVector<LabelKey, 8> once;
    for (std::size_t i = 0; i < keys.size();) {
      std::size_t j = i;
      while (j < keys.size() && keys[j] == keys[i]) ++j;
      distinct.push_back(keys[i]);
      if (j - i == 1) once.push_back(keys[i]);
      i = j;
    }
    const auto id = [&](LabelKey key) {
      return static_cast<std::int32_t>(std::lower_bound(distinct.begin(), distinct.end(), key) - distinct.begin());
    };
    FlatStructure flat;
    flat.num_labels = static_cast<std::int32_t>(distinct.size());
    for (const Term& t : terms) {
      flat.operand_rank.push_back(static_cast<std::int32_t>(t.labels.size()));
      for (LabelKey key : t.labels) flat.axis_label.push_back(id(key));
    }
    const auto& output = op->subscripts_.explicit_output();
    for (LabelKey key : output ? std::span<const LabelKey>(output->labels.data(), output->labels.size())
                               : std::span<const LabelKey>(once.data(), once.size())) {
      flat.output_label.push_back(id(key));
    }
    op->flat_ = std::move(flat);
  }
  return std::shared_ptr<const EinsumOp>(std::move(op));
}

Result<Network> EinsumOp::bind(std::span<const IntArrayRef> shapes, DType dtype) const {
  SmallVector<DType, 8> dtypes(shapes.size(), dtype);
  return Network::bind(subscripts_, shapes, std::span<const DType>(dtypes.data(), dtypes.size()));
}

template <class Rank, class Extent>
bool EinsumOp::flat_extents(std::size_t num_operands, Rank rank, Extent extent_of,
                            SmallVector<std::int64_t, 16>& extent) const {
  if (!flat_ || num_operands != flat_->operand_rank.size()) return false;
  extent.assign(std::span<const std::int64_t>());
  extent.resize(static_cast<std::size_t>(flat_->num_labels), -1);
  std::size_t axis = 0;
  for (std::size_t i = 0; i < num_operands; ++i) {
    const std::size_t r = rank(i);
    if (static_cast<std::int32_t>(r) != flat_->operand_rank[i]) return false;
    for (std::size_t a = 0; a < r; ++a) {
      const std::int64_t e = extent_of(i, a);
      std::int64_t& slot = extent[static_cast<std::size_t>(flat_->axis_label[axis++])];
      if (e < 0 || (slot >= 0 && slot != e)) return false;  // broadcasting or an error: the binder decides
      slot = e;
    }
  }
  return true;
}

Status EinsumOp::output_shape(std::span<const IntArrayRef> shapes, Dims& out) const {
  SmallVector<std::int64_t, 16> extent;
  if (flat_extents(
          shapes.size(), [&](std::size_t i) { return shapes[i].size(); },
          [&](std::size_t i, std::size_t a) { return shapes[i][a]; }, extent)) {
    out.clear();
    for (std::int32_t label : flat_->output_label) out.push_back(extent[static_cast<std::size_t>(label)]);
    return ok_status();
  }
  TENFERRO_ASSIGN_OR_RETURN(Network net, bind(shapes, DType::kFloat64));
  const std::vector<std::int64_t> shape = net.output_shape();
  out = Dims(shape.begin(), shape.end());
  return ok_status();
}

bool EinsumOp::payload_equal(const program::ExtensionOp& other) const noexcept {
  if (&other == this) return true;
  const auto& o = static_cast<const EinsumOp&>(other);
  return hash_ == o.hash_ && subscripts_.notation() == o.subscripts_.notation() && canonical_ == o.canonical_ &&
         policy_ == o.policy_;
}

Result<SmallVector<ValueMetadata, 2>> EinsumOp::infer_metadata(std::span<const ValueMetadata> operands,
                                                               program::ShapeConstraints& constraints) const {
  const auto n = static_cast<std::size_t>(num_operands());
  if (operands.size() != n) {
    return constraints.error(ErrorCode::kInvalidArgument,
                             "einsum \"{}\" has {} operand{}; expected as many inputs, found {}",
                             abbreviate(canonical_), n, n == 1 ? "" : "s", operands.size());
  }
  const DType dtype = operands[0].dtype;
  for (std::size_t i = 0; i < n; ++i) {
    if (operands[i].dtype != dtype) {
      return constraints.error(ErrorCode::kDTypeMismatch,
                               "einsum \"{}\": operand {} has dtype {}, operand 0 has {}; expected one dtype for all "
                               "operands (promote before calling einsum)",
                               abbreviate(canonical_), i, operands[i].dtype, dtype);
    }
  }
  if (!program::dtype_in_class(dtype, program::DTypeClass::kNumeric)) {
    return constraints.error(ErrorCode::kDTypeMismatch, "einsum \"{}\": expected a numeric dtype, found {}",
                             abbreviate(canonical_), dtype);
  }
  bool all_exact = true;
  for (const ValueMetadata& m : operands) all_exact = all_exact && m.is_exact();

  SmallVector<ValueMetadata, 2> results;
  SmallVector<std::int64_t, 16> flat;
  if (all_exact && flat_extents(
                       operands.size(), [&](std::size_t i) { return operands[i].shape.size(); },
                       [&](std::size_t i, std::size_t a) { return *operands[i].shape[a].exact_value(); }, flat)) {
    // The precompiled check decided (the eager hot path).
    ValueMetadata out;
    out.dtype = dtype;
    for (std::int32_t label : flat_->output_label)
      out.shape.push_back(SymbolicExtent(flat[static_cast<std::size_t>(label)]));
    results.push_back(std::move(out));
    return results;
  }
  if (all_exact) {
    // Exact shapes: the concrete binder's rules (and messages).
    SmallVector<Dims, 4> shapes;
    SmallVector<IntArrayRef, 4> refs;
    for (const ValueMetadata& m : operands) {
      Dims d;
      for (const SymbolicExtent& e : m.shape) d.push_back(*e.exact_value());
      shapes.push_back(std::move(d));
    }
    for (const Dims& d : shapes) refs.push_back(IntArrayRef(d.span()));
    Dims out;
    const Status st = output_shape(std::span<const IntArrayRef>(refs.data(), refs.size()), out);
    if (!st.ok()) return st.in_stage(ErrorStage::kCompile);
    results.push_back(ValueMetadata::exact(dtype, out));
    return results;
  }

  // Symbolic: the label structure from the ranks alone, then the extents.
  std::vector<std::vector<std::int64_t>> ones;
  for (const ValueMetadata& m : operands) ones.emplace_back(static_cast<std::size_t>(m.rank()), 1);
  std::vector<IntArrayRef> refs(ones.begin(), ones.end());
  Result<Network> structure = bind(refs, dtype);
  if (!structure.ok()) return structure.status().in_stage(ErrorStage::kCompile);
  const Network& net = *structure;
  std::vector<std::optional<SymbolicExtent>> extent(static_cast<std::size_t>(net.num_labels()));
  std::vector<Occurrence> first(static_cast<std::size_t>(net.num_labels()));
  for (std::int32_t i = 0; i < net.num_operands(); ++i) {
    const NetworkOperand& operand = net.operand(i);
    for (std::size_t a = 0; a < operand.axis_labels.size(); ++a) {
      const LabelId label = operand.axis_labels[a];
      const SymbolicExtent& e = operands[static_cast<std::size_t>(i)].shape[a];
      std::optional<SymbolicExtent>& slot = extent[static_cast<std::size_t>(label)];
      const Occurrence here{i, static_cast<std::int32_t>(a)};
      if (!slot) {
        slot = e;
        first[static_cast<std::size_t>(label)] = here;
        continue;
      }
      const bool same_operand = first[static_cast<std::size_t>(label)].operand == i;
      const auto a_exact = slot->exact_value();
      const auto b_exact = e.exact_value();
      if (!same_operand && a_exact == 1) {
        slot = e;  // a broadcast axis of extent 1
        first[static_cast<std::size_t>(label)] = here;
        continue;
      }
      if (!same_operand && b_exact == 1) continue;
      if (a_exact && b_exact && *a_exact != *b_exact) {
        const Occurrence& f = first[static_cast<std::size_t>(label)];
        return constraints.error(ErrorCode::kShapeMismatch,
                                 "einsum \"{}\": label '{}' has extent {} at operand {} axis {} but {} at operand {} "
                                 "axis {}; expected equal extents{}",
                                 abbreviate(canonical_), net.label_name(label), *a_exact, f.operand, f.axis, *b_exact,
                                 i, a, same_operand ? " (repeated labels take a diagonal)" : " or 1");
      }
      TENFERRO_TRY(constraints.require_equal(*slot, e, "einsum label extents"));
      if (b_exact) slot = e;
    }
  }
  ValueMetadata out;
  out.dtype = dtype;
  for (LabelId label : net.output()) out.shape.push_back(extent[static_cast<std::size_t>(label)].value_or(1));
  results.push_back(std::move(out));
  return results;
}

program::EffectSet EinsumOp::effects() const { return program::EffectSet::pure(); }

SmallVector<program::AliasDecl, 2> EinsumOp::aliases() const { return {program::AliasDecl::fresh()}; }

std::shared_ptr<const program::ExtensionOp> EinsumOp::batched(std::span<const program::ValueMetadata>,
                                                              std::span<const bool> batched) const {
  // As sublists: every key as written, kEllipsisKey for "...", and a key
  // no term uses for the batch.
  LabelKey fresh = 0;
  for (const Term& t : subscripts_.operands())
    for (LabelKey k : t.labels) fresh = std::max(fresh, k + 1);
  const auto sublist = [](const Term& t, bool batch, LabelKey b) {
    std::vector<LabelKey> out;
    if (batch) out.push_back(b);
    for (std::size_t i = 0; i <= t.labels.size(); ++i) {
      if (static_cast<std::int32_t>(i) == t.ellipsis_at) out.push_back(kEllipsisKey);
      if (i < t.labels.size()) out.push_back(t.labels[i]);
    }
    return out;
  };
  std::vector<std::vector<LabelKey>> operands;
  bool ellipsis = false;
  for (std::size_t i = 0; i < subscripts_.operands().size(); ++i) {
    const Term& t = subscripts_.operands()[i];
    ellipsis = ellipsis || t.has_ellipsis();
    operands.push_back(sublist(t, i < batched.size() && batched[i], fresh));
  }
  Term output;
  if (subscripts_.explicit_output()) {
    output = *subscripts_.explicit_output();
  } else {  // numpy's implicit output (Network::bind): "...", then the labels written once, sorted
    std::map<LabelKey, int> counts;
    for (const Term& t : subscripts_.operands())
      for (LabelKey k : t.labels) ++counts[k];
    if (ellipsis) output.ellipsis_at = 0;
    for (auto [k, n] : counts)
      if (n == 1) output.labels.push_back(k);
  }
  Result<Subscripts> s = Subscripts::from_sublists(operands, sublist(output, true, fresh));
  if (!s.ok()) return nullptr;
  std::optional<PlanningPolicy> policy = policy_;
  if (policy && policy->planner == PlannerKind::kNested) policy.reset();
  Result<std::shared_ptr<const EinsumOp>> op = create(std::move(*s), std::move(policy));
  return op.ok() ? *op : nullptr;
}

std::string EinsumOp::describe() const {
  return fmt::format("einsum {} (policy: {})", abbreviate(canonical_), describe_policy(policy_));
}

}  // namespace tenferro::einsum
