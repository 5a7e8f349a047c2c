// build_transform: runs linearize (and transpose) and emits the JVP, VJP or
// split-VJP programs with the layout of Note [AD program layout].
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "transforms.h"

namespace tenferro::ad::internal {

using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using program::SemanticProgram;
using program::ValueId;
using program::ValueMetadata;

namespace {

// Copies of source constants must be kept whatever their size.
ProgramBuilder make_builder() {
  return ProgramBuilder(program::ConstantPolicy{std::numeric_limits<std::size_t>::max()});
}

bool has_role(const GraphNode& node, std::initializer_list<NodeRole> roles) {
  for (NodeRole r : roles)
    if (node.role == r) return true;
  return false;
}

Result<ProgramValue> add_extra_input(ProgramBuilder& builder, const SemanticProgram& source,
                                     const ValueMetadata& metadata, std::string name) {
  program::SymbolicShape spec = input_shape_spec(metadata.shape.span(), source.num_symbols());
  return builder.add_input(metadata.dtype, spec.span(), name);
}

Result<std::shared_ptr<const SemanticProgram>> freeze(const ProgramBuilder& builder,
                                                      std::span<const ProgramValue> outputs) {
  TENFERRO_ASSIGN_OR_RETURN(FrozenProgram frozen, builder.freeze(outputs));
  return std::move(frozen.program);
}

struct Context {
  const SemanticProgram& source;
  AdGraph& graph;
  const Linearization& lin;
  AdLayout& layout;
};

// [x..., extra...] -> mirrored source inputs in `map`.
Status mirror(Context& c, ProgramBuilder& builder, std::vector<ProgramValue>& map) {
  map.assign(c.graph.num_values(), ProgramValue());
  TENFERRO_ASSIGN_OR_RETURN(auto inputs, mirror_inputs(c.source, builder));
  for (std::size_t i = 0; i < inputs.size(); ++i) map[c.graph.inputs(InputClass::kPrimal)[i]] = inputs[i];
  return ok_status();
}

Status add_cotangent_inputs(Context& c, ProgramBuilder& builder, std::vector<ProgramValue>& map) {
  const auto seeds = c.graph.inputs(InputClass::kCotangent);
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    const std::uint32_t j = c.layout.differentiated_outputs[k];
    TENFERRO_ASSIGN_OR_RETURN(map[seeds[k]], add_extra_input(builder, c.source, c.graph.value(seeds[k]).metadata,
                                                             fmt::format("cotangent of output {}", j)));
  }
  return ok_status();
}

Result<BuiltTransform> build_jvp(Context& c) {
  ProgramBuilder builder = make_builder();
  std::vector<ProgramValue> map;
  TENFERRO_TRY(mirror(c, builder, map));
  const auto tangents = c.graph.inputs(InputClass::kTangent);
  for (std::size_t k = 0; k < tangents.size(); ++k) {
    const std::uint32_t a = c.layout.active_inputs[k];
    TENFERRO_ASSIGN_OR_RETURN(map[tangents[k]], add_extra_input(builder, c.source, c.graph.value(tangents[k]).metadata,
                                                                fmt::format("tangent of {}", c.source.input_name(a))));
  }
  TENFERRO_TRY(replay(
      c.graph,
      [](std::uint32_t, const GraphNode& n) {
        return has_role(n, {NodeRole::kPrimal, NodeRole::kCoefficient, NodeRole::kLinear});
      },
      builder, map));
  SmallVector<ProgramValue, 4> outputs;
  for (ValueId v : c.source.outputs()) outputs.push_back(map[c.lin.primal[v.index()]]);
  for (std::uint32_t j : c.layout.differentiated_outputs)
    outputs.push_back(map[static_cast<std::size_t>(c.lin.tangent[c.source.outputs()[j].index()])]);
  BuiltTransform out;
  TENFERRO_ASSIGN_OR_RETURN(out.program, freeze(builder, outputs.span()));
  out.layout = c.layout;
  return out;
}

Result<BuiltTransform> build_vjp(Context& c, const std::vector<std::int64_t>& cotangent) {
  ProgramBuilder builder = make_builder();
  std::vector<ProgramValue> map;
  TENFERRO_TRY(mirror(c, builder, map));
  TENFERRO_TRY(add_cotangent_inputs(c, builder, map));
  TENFERRO_TRY(replay(
      c.graph,
      [](std::uint32_t, const GraphNode& n) {
        return has_role(n, {NodeRole::kPrimal, NodeRole::kCoefficient, NodeRole::kBackward});
      },
      builder, map));
  SmallVector<ProgramValue, 4> outputs;
  for (ValueId v : c.source.outputs()) outputs.push_back(map[c.lin.primal[v.index()]]);
  const auto tangents = c.graph.inputs(InputClass::kTangent);
  for (std::size_t k = 0; k < tangents.size(); ++k) {
    if (cotangent[tangents[k]] >= 0) outputs.push_back(map[static_cast<std::size_t>(cotangent[tangents[k]])]);
  }
  BuiltTransform out;
  TENFERRO_ASSIGN_OR_RETURN(out.program, freeze(builder, outputs.span()));
  out.layout = c.layout;
  return out;
}

// The nodes the backward program runs for the gradients: every needed
// coefficient and backward node, plus primal nodes whose values are not
// `available` (recomputed); the available primal values they read (outside
// the inputs) are the residuals.
struct BackwardCut {
  std::vector<bool> node;
  std::vector<std::uint32_t> residuals;  // graph values, increasing
};

BackwardCut cut_backward(const AdGraph& graph, std::span<const std::uint32_t> roots,
                         const std::function<bool(std::uint32_t)>& available) {
  BackwardCut cut;
  cut.node.assign(graph.num_nodes(), false);
  std::vector<bool> seen(graph.num_values(), false);
  std::vector<bool> residual(graph.num_values(), false);
  std::vector<std::uint32_t> work(roots.begin(), roots.end());
  while (!work.empty()) {
    const std::uint32_t v = work.back();
    work.pop_back();
    if (seen[v]) continue;
    seen[v] = true;
    const GraphValue& value = graph.value(v);
    if (value.node < 0) continue;
    const GraphNode& producer = graph.node(static_cast<std::uint32_t>(value.node));
    if (producer.role == NodeRole::kPrimal && available(v)) {
      residual[v] = true;
      continue;
    }
    cut.node[static_cast<std::size_t>(value.node)] = true;
    for (std::uint32_t o : producer.operands) work.push_back(o);
  }
  for (std::uint32_t v = 0; v < graph.num_values(); ++v)
    if (residual[v]) cut.residuals.push_back(v);
  return cut;
}

// backward: [x..., residuals..., cotangents...] -> gradients.
Result<std::shared_ptr<const SemanticProgram>> build_backward(Context& c, const BackwardCut& cut,
                                                              std::span<const std::uint32_t> roots) {
  ProgramBuilder builder = make_builder();
  std::vector<ProgramValue> map;
  TENFERRO_TRY(mirror(c, builder, map));
  for (std::size_t k = 0; k < cut.residuals.size(); ++k) {
    const std::uint32_t r = cut.residuals[k];
    TENFERRO_ASSIGN_OR_RETURN(
        map[r], add_extra_input(builder, c.source, c.graph.value(r).metadata, fmt::format("residual {}", k)));
  }
  TENFERRO_TRY(add_cotangent_inputs(c, builder, map));
  TENFERRO_TRY(replay(
      c.graph, [&](std::uint32_t index, const GraphNode&) { return cut.node[index]; }, builder, map));
  SmallVector<ProgramValue, 4> outputs;
  for (std::uint32_t root : roots) outputs.push_back(map[root]);
  return freeze(builder, outputs.span());
}

SmallVector<std::uint32_t, 4> gradient_roots(const AdGraph& graph, const std::vector<std::int64_t>& cotangent) {
  SmallVector<std::uint32_t, 4> roots;
  for (std::uint32_t t : graph.inputs(InputClass::kTangent))
    if (cotangent[t] >= 0) roots.push_back(static_cast<std::uint32_t>(cotangent[t]));
  return roots;
}

// Reuse VJP: the source outputs past the differentiated ones are values the
// caller holds; the backward program reads them and recomputes the rest.
Result<BuiltTransform> build_reuse(Context& c, const std::vector<std::int64_t>& cotangent,
                                   std::size_t num_differentiated) {
  std::vector<std::int64_t> output_of(c.graph.num_values(), -1);
  const auto outputs = c.source.outputs();
  for (std::size_t j = outputs.size(); j-- > num_differentiated;)
    output_of[c.lin.primal[outputs[j].index()]] = static_cast<std::int64_t>(j);
  const SmallVector<std::uint32_t, 4> roots = gradient_roots(c.graph, cotangent);
  const BackwardCut cut = cut_backward(c.graph, roots.span(), [&](std::uint32_t v) { return output_of[v] >= 0; });
  BuiltTransform out;
  TENFERRO_ASSIGN_OR_RETURN(out.backward, build_backward(c, cut, roots.span()));
  for (std::uint32_t r : cut.residuals) out.reused_outputs.push_back(static_cast<std::uint32_t>(output_of[r]));
  out.num_residuals = cut.residuals.size();
  out.layout = c.layout;
  return out;
}

Result<BuiltTransform> build_split(Context& c, const std::vector<std::int64_t>& cotangent) {
  const SmallVector<std::uint32_t, 4> roots = gradient_roots(c.graph, cotangent);
  const BackwardCut cut = cut_backward(c.graph, roots.span(), [](std::uint32_t) { return true; });
  BuiltTransform out;
  // forward: the primal program plus the residuals.
  ProgramBuilder builder = make_builder();
  std::vector<ProgramValue> map;
  TENFERRO_TRY(mirror(c, builder, map));
  TENFERRO_TRY(replay(
      c.graph, [](std::uint32_t, const GraphNode& n) { return n.role == NodeRole::kPrimal; }, builder, map));
  SmallVector<ProgramValue, 4> outputs;
  for (ValueId v : c.source.outputs()) outputs.push_back(map[c.lin.primal[v.index()]]);
  for (std::uint32_t r : cut.residuals) outputs.push_back(map[r]);
  TENFERRO_ASSIGN_OR_RETURN(out.program, freeze(builder, outputs.span()));
  TENFERRO_ASSIGN_OR_RETURN(out.backward, build_backward(c, cut, roots.span()));
  out.num_residuals = cut.residuals.size();
  out.layout = c.layout;
  return out;
}

}  // namespace

Result<BuiltTransform> build_transform(TransformKind kind, const SemanticProgram& source,
                                       std::span<const std::uint32_t> active, const TransformSetup& setup,
                                       TransformCounters& counters, std::size_t num_differentiated) {
  num_differentiated = std::min(num_differentiated, source.outputs().size());
  AdGraph graph(setup.rules);
  TransformSetup s = setup;
  s.reverse = kind != TransformKind::kJvp;
  TENFERRO_ASSIGN_OR_RETURN(Linearization lin, linearize(source, active, s, graph, counters));

  AdLayout layout;
  layout.num_inputs = source.num_inputs();
  layout.num_outputs = num_differentiated;
  layout.active_inputs.append(active.begin(), active.end());
  for (std::size_t j = 0; j < num_differentiated; ++j) {
    const ValueId v = source.outputs()[j];
    const std::int64_t t = lin.tangent[v.index()];
    if (!is_inexact(source.metadata(v).dtype)) {
      layout.output_tangents.push_back(TangentState::kNonDifferentiable);
    } else if (t < 0) {
      layout.output_tangents.push_back(TangentState::kZero);
    } else {
      layout.output_tangents.push_back(TangentState::kPresent);
      layout.differentiated_outputs.push_back(static_cast<std::uint32_t>(j));
    }
  }
  Context c{source, graph, lin, layout};
  if (kind == TransformKind::kJvp) return build_jvp(c);

  SmallVector<std::uint32_t, 4> seeded, seeds;
  for (std::uint32_t j : layout.differentiated_outputs) {
    const ValueId v = source.outputs()[j];
    seeded.push_back(static_cast<std::uint32_t>(lin.tangent[v.index()]));
    seeds.push_back(graph.add_input(InputClass::kCotangent, source.metadata(v)));
  }
  TENFERRO_ASSIGN_OR_RETURN(std::vector<std::int64_t> cotangent,
                            transpose(graph, seeded.span(), seeds.span(), counters));
  const auto tangents = graph.inputs(InputClass::kTangent);
  for (std::size_t k = 0; k < tangents.size(); ++k) {
    const bool present = cotangent[tangents[k]] >= 0;
    layout.input_cotangents.push_back(present ? TangentState::kPresent : TangentState::kZero);
    if (present) layout.gradient_inputs.push_back(layout.active_inputs[k]);
  }
  if (kind == TransformKind::kVjp) return build_vjp(c, cotangent);
  if (kind == TransformKind::kReuseVjp) return build_reuse(c, cotangent, num_differentiated);
  return build_split(c, cotangent);
}

}  // namespace tenferro::ad::internal
