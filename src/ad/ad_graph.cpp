// AdGraph, AdBuilder and the rule contexts (ad_graph.h, ad_rule.h).
#include "ad_graph.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "tenferro/base/assert.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/program/shape_guard.h"

namespace tenferro::ad {

using program::CoreAttributes;
using program::CoreSemanticOp;
using program::ValueMetadata;

namespace internal {

namespace {

ValueKind kind_of(NodeRole role) noexcept {
  switch (role) {
    case NodeRole::kLinear:
    case NodeRole::kOpaqueLinear:
      return ValueKind::kLinear;
    case NodeRole::kBackward:
      return ValueKind::kBackward;
    case NodeRole::kPrimal:
    case NodeRole::kCoefficient:
      break;
  }
  return ValueKind::kPrimal;
}

Scalar convert_scalar(const Scalar& value, DType dtype) {
  switch (dtype) {
#define TENFERRO_DTYPE(name, str, cpp, kind) \
  case DType::k##name:                       \
    return Scalar::of<cpp>(value.value<cpp>());
#include "tenferro/tensor/dtype.def"
  }
  return value;
}

}  // namespace

// --- AdGraph ---

std::uint32_t AdGraph::add_input(InputClass input_class, ValueMetadata metadata) {
  auto& list = inputs_[static_cast<int>(input_class)];
  const auto index = static_cast<std::uint32_t>(values_.size());
  GraphValue v;
  v.metadata = std::move(metadata);
  v.kind = input_class == InputClass::kPrimal    ? ValueKind::kPrimal
           : input_class == InputClass::kTangent ? ValueKind::kLinear
                                                 : ValueKind::kBackward;
  v.node = -1;
  v.index = static_cast<std::uint32_t>(list.size());
  v.input_class = input_class;
  values_.push_back(std::move(v));
  list.push_back(index);
  return index;
}

Result<std::uint32_t> AdGraph::append(GraphNode node, SmallVector<ValueMetadata, 2> results) {
  const auto node_index = static_cast<std::int32_t>(nodes_.size());
  node.first_result = static_cast<std::uint32_t>(values_.size());
  node.num_results = static_cast<std::uint32_t>(results.size());
  node.provenance = scope_.provenance;
  node.placement = scope_.placement;
  node.source_label = scope_.label;
  const ValueKind kind = kind_of(node.role);
  for (std::size_t k = 0; k < results.size(); ++k) {
    GraphValue v;
    v.metadata = std::move(results[k]);
    v.kind = kind;
    v.node = node_index;
    v.index = static_cast<std::uint32_t>(k);
    values_.push_back(std::move(v));
  }
  const std::uint32_t first = node.first_result;
  nodes_.push_back(std::move(node));
  return first;
}

Result<std::uint32_t> AdGraph::append_core(NodeRole role, CoreSemanticOp op, std::span<const std::uint32_t> operands,
                                           CoreAttributes attributes) {
  SmallVector<ValueMetadata, 4> metadata;
  for (std::uint32_t o : operands) metadata.push_back(values_[o].metadata);
  std::vector<program::ShapeGuard> guards;
  program::ShapeConstraints constraints(scope_.label, &guards, scope_.provenance);
  TENFERRO_ASSIGN_OR_RETURN(ValueMetadata result,
                            program::infer_core_metadata(op, attributes, metadata.span(), constraints));
  GraphNode node;
  node.role = role;
  node.core = op;
  node.attributes = std::move(attributes);
  node.operands.append(operands.begin(), operands.end());
  SmallVector<ValueMetadata, 2> results;
  results.push_back(std::move(result));
  return append(std::move(node), std::move(results));
}

Result<std::uint32_t> AdGraph::append_extension(NodeRole role, std::shared_ptr<const program::ExtensionOp> op,
                                                std::span<const std::uint32_t> operands) {
  if (!op) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "{}: expected an extension op, found null",
                      scope_.label);
  }
  if (role != NodeRole::kPrimal) {
    TENFERRO_ASSIGN_OR_RETURN(
        program::EffectSet effects,
        guarded("ExtensionOp::effects", [&]() -> Result<program::EffectSet> { return op->effects(); }));
    if (!effects.is_pure()) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: an AD rule emitted effectful extension {} ({}); rules may emit pure operations only",
                        scope_.label, op->family_id(), effects.to_string());
    }
  }
  SmallVector<ValueMetadata, 4> metadata;
  for (std::uint32_t o : operands) metadata.push_back(values_[o].metadata);
  std::vector<program::ShapeGuard> guards;
  program::ShapeConstraints constraints(scope_.label, &guards, scope_.provenance);
  using ResultList = SmallVector<ValueMetadata, 2>;
  TENFERRO_ASSIGN_OR_RETURN(ResultList results, guarded("ExtensionOp::infer_metadata", [&]() {
                              return op->infer_metadata(metadata.span(), constraints);
                            }));
  GraphNode node;
  node.role = role;
  node.extension = std::move(op);
  node.operands.append(operands.begin(), operands.end());
  return append(std::move(node), std::move(results));
}

std::uint32_t AdGraph::append_opaque(std::shared_ptr<const program::ExtensionOp> op,
                                     std::span<const std::uint32_t> operands, SmallVector<std::int64_t, 4> tangents,
                                     std::uint32_t primal_results, std::span<const ValueMetadata> results,
                                     const ExtensionAdRule* rule) {
  GraphNode node;
  node.role = NodeRole::kOpaqueLinear;
  node.extension = std::move(op);
  node.operands.append(operands.begin(), operands.end());
  node.opaque_tangents = std::move(tangents);
  node.opaque_primal_results = primal_results;
  node.opaque_rule = rule;
  SmallVector<ValueMetadata, 2> metadata(results.begin(), results.end());
  Result<std::uint32_t> first = append(std::move(node), std::move(metadata));
  TENFERRO_CHECK(first.ok());  // append() itself cannot fail
  return *first;
}

Result<std::uint32_t> AdGraph::index_of(AdValue value) const {
  if (!value.valid()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "{}: expected a valid AdValue, found an "
                      "invalid (default-constructed) one",
                      scope_.label);
  }
  if (value.graph_ != this || value.index_ >= values_.size()) {
    return make_error(ErrorCode::kForeignValue, ErrorStage::kCompile, "{}: the AdValue belongs to another AD transform",
                      scope_.label);
  }
  return value.index_;
}

std::uint32_t AdGraph::index_unchecked(AdValue value) const noexcept {
  TENFERRO_CHECK(value.graph_ == this && value.index_ < values_.size());
  return value.index_;
}

// --- check_linear_use ---

namespace {

enum class LinearPattern : std::uint8_t { kNone, kFirst, kAll, kExactlyOne, kSelect, kPairFirst, kScatter };

LinearPattern linear_pattern(CoreSemanticOp op) noexcept {
  using enum CoreSemanticOp;
  switch (op) {
    case kNeg:
    case kConj:
    case kReal:
    case kImag:
    case kConvert:
    case kReduceSum:
    case kCumsum:
    case kBroadcastInDim:
    case kReshape:
    case kTranspose:
    case kSlice:
    case kReverse:
    case kGather:
    case kDynamicSlice:
    case kDiv:
      return LinearPattern::kFirst;
    case kAdd:
    case kSub:
    case kComplex:
    case kConcatenate:
      return LinearPattern::kAll;
    case kMul:
    case kDotGeneral:
      return LinearPattern::kExactlyOne;
    case kSelect:
      return LinearPattern::kSelect;
    case kPad:
    case kDynamicUpdateSlice:
      return LinearPattern::kPairFirst;
    case kScatter:
      return LinearPattern::kScatter;
    default:
      return LinearPattern::kNone;
  }
}

std::string_view describe(LinearPattern pattern) noexcept {
  switch (pattern) {
    case LinearPattern::kNone:
      return "no operand";
    case LinearPattern::kFirst:
      return "operand 0 only";
    case LinearPattern::kAll:
      return "all operands together";
    case LinearPattern::kExactlyOne:
      return "exactly one operand";
    case LinearPattern::kSelect:
      return "operands 1 and 2 (the predicate stays primal)";
    case LinearPattern::kPairFirst:
      return "operands 0 and 1 together";
    case LinearPattern::kScatter:
      return "operands 0 and 2 together (the indices stay primal)";
  }
  return "?";
}

}  // namespace

Status check_linear_use(CoreSemanticOp op, std::span<const bool> linear, const CoreAttributes& attributes,
                        std::span<const ValueMetadata> operands, std::string_view who) {
  const LinearPattern pattern = linear_pattern(op);
  const std::size_t n = linear.size();
  auto only = [&](std::initializer_list<std::size_t> positions) {
    for (std::size_t i = 0; i < n; ++i) {
      const bool wanted = std::find(positions.begin(), positions.end(), i) != positions.end();
      if (linear[i] != wanted) return false;
    }
    return true;
  };
  bool ok = false;
  switch (pattern) {
    case LinearPattern::kNone:
      ok = false;
      break;
    case LinearPattern::kFirst:
      ok = only({0});
      break;
    case LinearPattern::kAll:
      ok = std::all_of(linear.begin(), linear.end(), [](bool b) { return b; });
      break;
    case LinearPattern::kExactlyOne:
      ok = std::count(linear.begin(), linear.end(), true) == 1;
      break;
    case LinearPattern::kSelect:
      ok = only({1, 2});
      break;
    case LinearPattern::kPairFirst:
      ok = only({0, 1});
      break;
    case LinearPattern::kScatter:
      ok = only({0, 2});
      break;
  }
  if (ok && op == CoreSemanticOp::kConvert) {
    const auto* convert = std::get_if<program::ConvertAttributes>(&attributes);
    ok = convert != nullptr && !operands.empty() && is_inexact(operands[0].dtype) && is_inexact(convert->dtype);
  }
  if (ok) return ok_status();
  std::string flagged;
  for (std::size_t i = 0; i < n; ++i) {
    if (!linear[i]) continue;
    if (!flagged.empty()) flagged += ", ";
    flagged += std::to_string(i);
  }
  return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                    "{}: an AD rule applied {} to tangents in operands [{}]; {} is linear in {}{}", who, op, flagged,
                    op, describe(pattern), op == CoreSemanticOp::kConvert ? " (between floating/complex dtypes)" : "");
}

// --- replay ---

Status replay(const AdGraph& graph, const std::function<bool(std::uint32_t, const GraphNode&)>& include,
              program::ProgramBuilder& builder, std::vector<program::ProgramValue>& map) {
  map.resize(graph.num_values());
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n) {
    const GraphNode& node = graph.node(n);
    if (!include(n, node)) continue;
    SmallVector<program::ProgramValue, 4> operands;
    for (std::uint32_t o : node.operands) {
      if (!map[o].valid()) {
        return make_error(ErrorCode::kInternal, ErrorStage::kCompile,
                          "AD replay: {} uses a value that was not emitted (value {})", node.source_label, o);
      }
      operands.push_back(map[o]);
    }
    builder.set_provenance(node.provenance);
    builder.set_placement(node.placement);
    if (node.extension) {
      TENFERRO_ASSIGN_OR_RETURN(auto results, builder.emit_extension(node.extension, operands.span()));
      for (std::uint32_t k = 0; k < node.num_results; ++k) map[node.first_result + k] = results[k];
    } else {
      TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue result,
                                builder.emit(node.core, operands.span(), node.attributes));
      map[node.first_result] = result;
    }
  }
  builder.set_provenance(nullptr);
  builder.set_placement({});
  return ok_status();
}

program::SymbolicShape input_shape_spec(std::span<const program::SymbolicExtent> shape, std::size_t num_symbols) {
  program::SymbolicShape spec;
  for (const program::SymbolicExtent& e : shape) {
    auto symbol = e.as_symbol();
    if (e.is_exact() || (symbol && *symbol < num_symbols)) {
      spec.push_back(e);
    } else {
      auto bound = e.upper_bound();
      spec.push_back(bound ? program::SymbolicExtent::bounded(*bound) : program::SymbolicExtent::unknown());
    }
  }
  return spec;
}

Result<SmallVector<program::ProgramValue, 4>> mirror_inputs(const program::SemanticProgram& source,
                                                            program::ProgramBuilder& builder) {
  SmallVector<program::ProgramValue, 4> out;
  for (std::size_t i = 0; i < source.num_inputs(); ++i) {
    const ValueMetadata& m = source.metadata(source.input(i));
    program::SymbolicShape spec;
    for (std::size_t k = 0; k < m.shape.size(); ++k) {
      const program::SymbolicExtent& e = m.shape[k];
      auto symbol = e.as_symbol();
      const bool first = symbol && source.symbol(*symbol).input == i && source.symbol(*symbol).axis == k;
      if (first) {
        spec.push_back(e.upper_bound() ? program::SymbolicExtent::bounded(*e.upper_bound())
                                       : program::SymbolicExtent::unknown());
      } else {
        spec.push_back(e);
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue v, builder.add_input(m.dtype, spec.span(), source.input_name(i)));
    out.push_back(v);
  }
  return out;
}

// --- AdBuilderAccess ---

LinearizeContext AdBuilderAccess::linearize_context(std::shared_ptr<const program::ExtensionOp> op,
                                                    SmallVector<AdValue, 4> operands,
                                                    SmallVector<std::optional<AdValue>, 4> tangents,
                                                    SmallVector<AdValue, 2> results, AdBuilder* builder) {
  LinearizeContext c;
  c.op_ = std::move(op);
  c.operands_ = std::move(operands);
  c.tangents_ = std::move(tangents);
  c.results_ = std::move(results);
  c.builder_ = builder;
  return c;
}

TransposeContext AdBuilderAccess::transpose_context(std::shared_ptr<const program::ExtensionOp> op,
                                                    SmallVector<AdValue, 4> operands, SmallVector<bool, 4> linear,
                                                    SmallVector<ValueMetadata, 4> operand_metadata,
                                                    SmallVector<std::optional<AdValue>, 2> cotangents,
                                                    SmallVector<ValueMetadata, 2> result_metadata, AdBuilder* builder) {
  TransposeContext c;
  c.op_ = std::move(op);
  c.operands_ = std::move(operands);
  c.linear_ = std::move(linear);
  c.operand_metadata_ = std::move(operand_metadata);
  c.cotangents_ = std::move(cotangents);
  c.result_metadata_ = std::move(result_metadata);
  c.builder_ = builder;
  return c;
}

DirectVjpContext AdBuilderAccess::direct_vjp_context(std::shared_ptr<const program::ExtensionOp> op,
                                                     SmallVector<AdValue, 4> operands, SmallVector<bool, 4> needed,
                                                     SmallVector<AdValue, 2> results,
                                                     SmallVector<std::optional<AdValue>, 2> cotangents,
                                                     AdBuilder* builder) {
  DirectVjpContext c;
  c.op_ = std::move(op);
  c.operands_ = std::move(operands);
  c.needed_ = std::move(needed);
  c.results_ = std::move(results);
  c.cotangents_ = std::move(cotangents);
  c.builder_ = builder;
  return c;
}

}  // namespace internal

// --- AdBuilder ---

using internal::AdGraph;
using internal::EmitPhase;
using internal::NodeRole;
using internal::ValueKind;

Result<AdValue> AdBuilder::emit(CoreSemanticOp op, std::span<const AdValue> operands, CoreAttributes attributes) {
  AdGraph& g = *graph_;
  SmallVector<std::uint32_t, 4> indices;
  SmallVector<bool, 4> linear;
  SmallVector<ValueMetadata, 4> metadata;
  bool any_linear = false;
  for (AdValue v : operands) {
    TENFERRO_ASSIGN_OR_RETURN(std::uint32_t i, g.index_of(v));
    const bool is_linear = g.value(i).kind == ValueKind::kLinear;
    indices.push_back(i);
    linear.push_back(is_linear);
    metadata.push_back(g.value(i).metadata);
    any_linear = any_linear || is_linear;
  }
  NodeRole role = NodeRole::kCoefficient;
  if (g.scope().phase == EmitPhase::kTranspose) {
    if (any_linear) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: a transpose or direct-VJP rule applied {} to a tangent; reverse-mode rules see primal "
                        "values and cotangents only",
                        g.scope().label, op);
    }
    role = NodeRole::kBackward;
  } else if (any_linear) {
    TENFERRO_TRY(internal::check_linear_use(op, linear.span(), attributes, metadata.span(), g.scope().label));
    role = NodeRole::kLinear;
  }
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t r, g.append_core(role, op, indices.span(), std::move(attributes)));
  return g.token(r);
}

Result<SmallVector<AdValue, 2>> AdBuilder::emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                          std::span<const AdValue> operands) {
  AdGraph& g = *graph_;
  SmallVector<std::uint32_t, 4> indices;
  bool any_linear = false;
  for (AdValue v : operands) {
    TENFERRO_ASSIGN_OR_RETURN(std::uint32_t i, g.index_of(v));
    indices.push_back(i);
    any_linear = any_linear || g.value(i).kind == ValueKind::kLinear;
  }
  NodeRole role = NodeRole::kCoefficient;
  if (g.scope().phase == EmitPhase::kTranspose) {
    if (any_linear) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: a transpose or direct-VJP rule applied extension {} to a tangent", g.scope().label,
                        op ? op->family_id() : std::string_view("(null)"));
    }
    role = NodeRole::kBackward;
  } else if (any_linear) {
    if (op && g.rules().find(op->family_id()) == nullptr) {
      return make_error(ErrorCode::kContractViolation, ErrorStage::kCompile,
                        "{}: an AD rule applied extension {} to a tangent, but the AdContext has no rule for that "
                        "family to transpose it",
                        g.scope().label, op->family_id());
    }
    role = NodeRole::kLinear;
  }
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t first, g.append_extension(role, std::move(op), indices.span()));
  SmallVector<AdValue, 2> out;
  const internal::GraphNode& node = g.node(static_cast<std::uint32_t>(g.num_nodes() - 1));
  for (std::uint32_t k = 0; k < node.num_results; ++k) out.push_back(g.token(first + k));
  return out;
}

Result<AdValue> AdBuilder::scalar(const Scalar& value, DType dtype) {
  AdGraph& g = *graph_;
  const NodeRole role = g.scope().phase == EmitPhase::kTranspose ? NodeRole::kBackward : NodeRole::kCoefficient;
  program::ConstantAttributes attributes{program::Literal::scalar(internal::convert_scalar(value, dtype))};
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t r, g.append_core(role, CoreSemanticOp::kConstant, {}, std::move(attributes)));
  return g.token(r);
}

Result<AdValue> AdBuilder::full(const Scalar& value, const ValueMetadata& like) {
  ValueMetadata target = like;  // `like` may live in the graph, which grows below
  TENFERRO_ASSIGN_OR_RETURN(AdValue s, scalar(value, target.dtype));
  if (target.shape.empty()) return s;
  return emit(CoreSemanticOp::kBroadcastInDim, {s}, program::BroadcastInDimAttributes{std::move(target.shape), {}});
}

Result<AdValue> AdBuilder::zeros(const ValueMetadata& like) {
  AdGraph& g = *graph_;
  ValueMetadata metadata = like;  // `like` may live in the graph, which grows below
  if (g.scope().phase == EmitPhase::kTranspose) return full(Scalar::of(0.0), metadata);
  TENFERRO_ASSIGN_OR_RETURN(AdValue s, scalar(Scalar::of(0.0), metadata.dtype));
  const std::uint32_t operand = g.index_unchecked(s);
  TENFERRO_ASSIGN_OR_RETURN(std::uint32_t r, g.append_core(NodeRole::kLinear, CoreSemanticOp::kBroadcastInDim,
                                                           std::span<const std::uint32_t>(&operand, 1),
                                                           program::BroadcastInDimAttributes{metadata.shape, {}}));
  g.mark_zero(r);
  return g.token(r);
}

ValueMetadata AdBuilder::metadata(AdValue value) const {
  return graph_->value(graph_->index_unchecked(value)).metadata;
}

bool AdBuilder::is_linear(AdValue value) const {
  return graph_->value(graph_->index_unchecked(value)).kind == ValueKind::kLinear;
}

Result<CotangentList> ExtensionAdRule::direct_vjp(DirectVjpContext& context) const {
  return make_error(ErrorCode::kUnimplemented, ErrorStage::kCompile, "extension {} has no direct VJP rule",
                    context.op().family_id());
}

Result<std::shared_ptr<const program::SemanticProgram>> ExtensionAdRule::expansion(
    const program::ExtensionOp& /*op*/, std::span<const program::ValueMetadata> /*operands*/) const {
  return std::shared_ptr<const program::SemanticProgram>();
}

}  // namespace tenferro::ad
