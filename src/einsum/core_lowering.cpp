// EinsumOp::lower_to_core: the portable expansion of an einsum into core
// operations (Note [Core lowering] in extension_op.h), for
// engines without a native einsum, AD and XLA.
//
// Note [Einsum core lowering]
// The contraction path depends on concrete shapes, so the lowering asks for
// SpecializationAxis::kConcreteDims first. It then binds and plans exactly
// like the native engine (the op's policy, else the default policy, with a
// reproducible configuration so the lowering is a pure function) and emits:
//  - per input: reshape dropping broadcast axes of extent 1; for each label
//    repeated r times with extent n, transpose its axes to the back, reshape
//    them into one axis of n^r and slice it with stride 1 + n + ... + n^(r-1)
//    (the diagonal);
//  - per step: reduce_sum of labels only one operand holds, then one
//    dot_general whose result axes (batch, lhs free, rhs free) become the
//    intermediate's label order;
//  - a final transpose into the output order (omitted when it is the
//    identity). The op's result is fresh, so a result that would be a view
//    of an operand (a transpose, or a lone diagonal) is materialised with a
//    reduce_sum over no axes.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "tenferro/einsum/einsum_op.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::einsum {

namespace {

using program::CoreSemanticOp;
using program::ProgramBuilder;
using program::ProgramValue;

// A value of the fragment with the label of each of its axes.
struct LabelledValue {
  ProgramValue value;
  LabelList labels;
  Dims shape;
};

Result<LabelledValue> transpose_to(ProgramBuilder& b, LabelledValue x, const LabelList& order) {
  if (x.labels == order) return x;
  Dims perm;
  Dims shape;
  for (LabelId l : order) {
    const auto at = std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin();
    perm.push_back(at);
    shape.push_back(x.shape[static_cast<std::size_t>(at)]);
  }
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v,
                            b.emit(CoreSemanticOp::kTranspose, {x.value}, program::TransposeAttributes{perm}));
  return LabelledValue{v, order, shape};
}

Result<LabelledValue> reshape_to(ProgramBuilder& b, LabelledValue x, LabelList labels, Dims shape) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, b.emit(CoreSemanticOp::kReshape, {x.value},
                                                   program::ReshapeAttributes{program::symbolic_shape(shape)}));
  return LabelledValue{v, std::move(labels), std::move(shape)};
}

// Takes the diagonal of the first repeated label; false when none is left.
Result<bool> take_one_diagonal(ProgramBuilder& b, LabelledValue& x) {
  for (std::size_t i = 0; i < x.labels.size(); ++i) {
    const LabelId l = x.labels[i];
    const auto repeats = std::count(x.labels.begin(), x.labels.end(), l);
    if (repeats < 2) continue;
    LabelList order;
    for (LabelId other : x.labels)
      if (other != l) order.push_back(other);
    const std::size_t kept = order.size();
    for (std::int64_t r = 0; r < repeats; ++r) order.push_back(l);
    // transpose_to matches labels by value: place the repeated axes by position.
    Dims perm;
    Dims shape;
    for (std::size_t a = 0; a < x.labels.size(); ++a)
      if (x.labels[a] != l) perm.push_back(static_cast<std::int64_t>(a));
    for (std::size_t a = 0; a < x.labels.size(); ++a)
      if (x.labels[a] == l) perm.push_back(static_cast<std::int64_t>(a));
    for (std::int64_t a : perm) shape.push_back(x.shape[static_cast<std::size_t>(a)]);
    bool identity = true;
    for (std::size_t a = 0; a < perm.size(); ++a) identity = identity && perm[a] == static_cast<std::int64_t>(a);
    if (!identity) {
      TENFERRO_ASSIGN_OR_RETURN(x.value,
                                b.emit(CoreSemanticOp::kTranspose, {x.value}, program::TransposeAttributes{perm}));
    }
    const std::int64_t n = x.shape[i];
    std::int64_t total = 1;
    std::int64_t stride = 0;  // 1 + n + ... + n^(r-1)
    for (std::int64_t r = 0; r < repeats; ++r) {
      if (n != 0 && total > std::numeric_limits<std::int64_t>::max() / 4 / n) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare,
                          "einsum core lowering: the diagonal of a label repeated {} times with extent {} does not "
                          "fit in int64",
                          repeats, n);
      }
      stride += total;
      total *= n;
    }
    if (n == 0) stride = 1;
    Dims merged(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(kept));
    merged.push_back(total);
    LabelList merged_labels(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept));
    merged_labels.push_back(l);
    TENFERRO_ASSIGN_OR_RETURN(LabelledValue flat,
                              reshape_to(b, LabelledValue{x.value, order, shape}, merged_labels, merged));
    program::SliceAttributes slice;
    for (std::size_t a = 0; a < kept; ++a) {
      slice.start.push_back(0);
      slice.limit.push_back(merged[a]);
      slice.stride.push_back(1);
    }
    slice.start.push_back(0);
    slice.limit.push_back(total);
    slice.stride.push_back(stride);
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, b.emit(CoreSemanticOp::kSlice, {flat.value}, slice));
    merged.back() = n;
    x = LabelledValue{v, merged_labels, merged};
    return true;
  }
  return false;
}

Result<LabelledValue> lower_input(ProgramBuilder& b, const Network& net, std::int32_t i, ProgramValue operand,
                                  IntArrayRef shape) {
  const NetworkOperand& op = net.operand(i);
  LabelledValue x{operand, op.axis_labels, Dims(shape.begin(), shape.end())};
  if (std::find(x.labels.begin(), x.labels.end(), kBroadcastAxis) != x.labels.end()) {
    LabelList labels;
    Dims kept;
    for (std::size_t a = 0; a < x.labels.size(); ++a) {
      if (x.labels[a] == kBroadcastAxis) continue;
      labels.push_back(x.labels[a]);
      kept.push_back(x.shape[a]);
    }
    TENFERRO_ASSIGN_OR_RETURN(x, reshape_to(b, x, labels, kept));
  }
  while (true) {
    TENFERRO_ASSIGN_OR_RETURN(bool taken, take_one_diagonal(b, x));
    if (!taken) break;
  }
  return x;
}

Result<LabelledValue> sum_out(ProgramBuilder& b, LabelledValue x, const LabelList& summed) {
  if (summed.empty()) return x;
  program::ReduceAttributes reduce;
  LabelledValue out;
  for (std::size_t a = 0; a < x.labels.size(); ++a) {
    if (std::find(summed.begin(), summed.end(), x.labels[a]) != summed.end()) {
      reduce.axes.push_back(static_cast<std::int64_t>(a));
    } else {
      out.labels.push_back(x.labels[a]);
      out.shape.push_back(x.shape[a]);
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(out.value, b.emit(CoreSemanticOp::kReduceSum, {x.value}, reduce));
  return out;
}

std::int64_t position(const LabelList& labels, LabelId l) {
  return std::find(labels.begin(), labels.end(), l) - labels.begin();
}

}  // namespace

Result<program::ExtensionLoweringOutcome> EinsumOp::lower_to_core(program::ExtensionLoweringContext& context) const {
  using program::SpecializationAxis;
  SmallVector<Dims, 4> shapes;
  bool exact = true;
  for (std::size_t i = 0; i < context.num_operands(); ++i) {
    const std::optional<Dims> shape = program::exact_shape(context.operand_metadata(i).shape);
    exact = exact && shape.has_value();
    shapes.push_back(shape.value_or(Dims()));
  }
  if (!exact) {
    if (!context.granted().has(SpecializationAxis::kConcreteDims)) {
      return program::ExtensionLoweringOutcome::needs_specialization(
          context.granted().with(SpecializationAxis::kConcreteDims));
    }
    return program::ExtensionLoweringOutcome::unsupported(
        "einsum core lowering needs exact operand extents, and the granted concrete dims left some symbolic");
  }
  if (context.num_operands() == 0) return program::ExtensionLoweringOutcome::unsupported("no operands");
  const DType dtype = context.operand_metadata(0).dtype;
  SmallVector<IntArrayRef, 4> refs;
  for (const Dims& d : shapes) refs.push_back(IntArrayRef(d.span()));
  const std::span<const IntArrayRef> shape_span(refs.data(), refs.size());
  Result<Network> bound = bind(shape_span, dtype);
  if (!bound.ok()) return bound.status();  // compile-stage (Note [Einsum binding errors are compile-stage])
  const Network& net = *bound;
  PlanningPolicy policy = policy_.value_or(PlanningPolicy{});
  if (!policy_ && net.nesting()) policy.planner = PlannerKind::kNested;
  PlanningConfig config;
  config.determinism = Determinism::kReproducible;
  TENFERRO_ASSIGN_OR_RETURN(ContractionTree tree, plan(net, policy, config));

  ProgramBuilder& b = context.builder();
  const std::int32_t n = net.num_operands();
  std::vector<LabelledValue> nodes;
  for (std::int32_t i = 0; i < n; ++i) {
    TENFERRO_ASSIGN_OR_RETURN(LabelledValue x, lower_input(b, net, i, context.operand(static_cast<std::size_t>(i)),
                                                           refs[static_cast<std::size_t>(i)]));
    nodes.push_back(std::move(x));
  }
  LabelledValue root;
  if (tree.steps().empty()) {
    TENFERRO_ASSIGN_OR_RETURN(root, sum_out(b, nodes[0], tree.root_summed()));
  }
  for (const ContractionStep& s : tree.steps()) {
    TENFERRO_ASSIGN_OR_RETURN(LabelledValue lhs, sum_out(b, nodes[static_cast<std::size_t>(s.lhs)], s.lhs_summed));
    TENFERRO_ASSIGN_OR_RETURN(LabelledValue rhs, sum_out(b, nodes[static_cast<std::size_t>(s.rhs)], s.rhs_summed));
    program::DotGeneralAttributes dims;
    LabelledValue out;
    for (LabelId l : s.batch) {
      dims.lhs_batch.push_back(position(lhs.labels, l));
      dims.rhs_batch.push_back(position(rhs.labels, l));
      out.labels.push_back(l);
      out.shape.push_back(net.extent(l));
    }
    for (LabelId l : s.contracted) {
      dims.lhs_contract.push_back(position(lhs.labels, l));
      dims.rhs_contract.push_back(position(rhs.labels, l));
    }
    for (const LabelledValue* side : {&lhs, &rhs}) {
      const LabelList& free = side == &lhs ? s.lhs_free : s.rhs_free;
      for (LabelId l : side->labels) {
        if (std::find(free.begin(), free.end(), l) == free.end()) continue;
        out.labels.push_back(l);
        out.shape.push_back(net.extent(l));
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(out.value, b.emit(CoreSemanticOp::kDotGeneral, {lhs.value, rhs.value}, dims));
    nodes.push_back(out);
    root = std::move(out);
  }
  const bool permuted = root.labels != net.output();
  TENFERRO_ASSIGN_OR_RETURN(LabelledValue result, transpose_to(b, std::move(root), net.output()));
  if (permuted || (tree.steps().empty() && tree.root_summed().empty())) {
    // The result is a view of an operand; the op declares a fresh result,
    // so materialise it (a reduction over no axes is a copy).
    TENFERRO_ASSIGN_OR_RETURN(result.value,
                              b.emit(CoreSemanticOp::kReduceSum, {result.value}, program::ReduceAttributes{}));
  }
  return program::ExtensionLoweringOutcome::lowered({result.value});
}

}  // namespace tenferro::einsum
