// TraceContext and its scopes (Notes in trace_context.h).
#include "tenferro/compiler/trace_context.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "tenferro/base/ids.h"

namespace tenferro::compiler {

using program::ProgramValue;

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.storage().get() == b.storage().get() && a.offset() == b.offset() && a.dtype() == b.dtype() &&
         std::ranges::equal(a.shape(), b.shape()) && std::ranges::equal(a.strides(), b.strides());
}

}  // namespace

// --- scopes ---

ProvenanceScope::ProvenanceScope(ProvenanceScope&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)), previous_(std::move(other.previous_)) {}
ProvenanceScope::~ProvenanceScope() {
  if (context_ != nullptr) context_->builder_.set_provenance(std::move(previous_));
}
PlacementScope::PlacementScope(PlacementScope&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)), previous_(other.previous_) {}
PlacementScope::~PlacementScope() {
  if (context_ != nullptr) context_->builder_.set_placement(previous_);
}

// --- TraceContext ---

TraceContext::TraceContext(TraceOptions options)
    : id_(next_unique_id()),
      builder_(options.constant_policy),
      root_provenance_(program::make_provenance(options.name.empty() ? std::string("trace") : options.name)) {
  builder_.set_provenance(root_provenance_);
}
TraceContext::~TraceContext() = default;
TraceContext::TraceContext(TraceContext&&) noexcept = default;
TraceContext& TraceContext::operator=(TraceContext&&) noexcept = default;

Result<ProgramValue> TraceContext::resolve(const TracedOperand& operand, std::size_t position,
                                           std::string_view what) const {
  if (!operand.ok()) return operand.status();
  const TracedValue& v = operand.value();
  if (v.context_id_ != id_) {
    return make_error(ErrorCode::kForeignValue, ErrorStage::kCompile,
                      "{}: operand {} {}; a trace does not merge graphs implicitly: finish the other trace and "
                      "import it (TraceContext::import)",
                      what, position,
                      v.valid()
                          ? fmt::format("was traced in another TraceContext (#{}, this is #{})", v.context_id_, id_)
                          : std::string("is an invalid (default-constructed) TracedValue"));
  }
  return v.value_;
}

Result<TracedValue> TraceContext::wrap(ProgramValue value) const {
  TENFERRO_ASSIGN_OR_RETURN(program::ValueMetadata metadata, builder_.metadata(value));
  return TracedValue(id_, value, std::move(metadata));
}

Result<TracedValue> TraceContext::input(DType dtype, std::span<const program::SymbolicExtent> shape,
                                        std::string_view name) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, builder_.add_input(dtype, shape, name));
  return wrap(v);
}

Result<TracedValue> TraceContext::capture(const Tensor& tensor, std::string_view name) {
  for (const Capture& c : captures_) {
    if (tensor.defined() && same_tensor(c.tensor, tensor)) return wrap(c.value);
  }
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, builder_.capture(tensor, name));
  captures_.push_back(Capture{tensor, v});
  return wrap(v);
}

Result<TracedValue> TraceContext::constant(const program::Literal& literal) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, builder_.constant(literal));
  return wrap(v);
}

Result<TracedValue> TraceContext::constantize(const Tensor& tensor, const program::ConstantPolicy& policy) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, builder_.constantize(tensor, policy));
  return wrap(v);
}

Result<TracedValue> TraceContext::emit(program::CoreSemanticOp op, std::span<const TracedOperand> operands,
                                       program::CoreAttributes attributes) {
  SmallVector<ProgramValue, 4> values;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, resolve(operands[i], i, to_string(op)));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, builder_.emit(op, values.span(), std::move(attributes)));
  return wrap(y);
}

Result<SmallVector<TracedValue, 2>> TraceContext::emit_extension(std::shared_ptr<const program::ExtensionOp> op,
                                                                 std::span<const TracedOperand> operands) {
  if (!op) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "emit_extension: expected an operation, found nullptr");
  }
  SmallVector<ProgramValue, 4> values;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, resolve(operands[i], i, op->family_id()));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(auto results, builder_.emit_extension(std::move(op), values.span()));
  SmallVector<TracedValue, 2> out;
  for (ProgramValue v : results) {
    TENFERRO_ASSIGN_OR_RETURN(TracedValue t, wrap(v));
    out.push_back(std::move(t));
  }
  return out;
}

ProvenanceScope TraceContext::scope(std::string_view label, const char* file, int line) {
  program::ProvenanceRef previous = builder_.provenance();
  builder_.set_provenance(program::make_provenance(
      fmt::format("{} at {}:{}", label, std::filesystem::path(file != nullptr ? file : "?").filename().string(), line),
      previous));
  return ProvenanceScope(this, std::move(previous));
}

PlacementScope TraceContext::placement(program::PlacementConstraint placement) {
  const program::PlacementConstraint previous = builder_.placement();
  builder_.set_placement(placement);
  return PlacementScope(this, previous);
}

Result<SmallVector<TracedValue, 4>> TraceContext::import(const TracedGraph& graph,
                                                         std::span<const TracedOperand> parameters) {
  if (!graph.program()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile, "import: expected a finished TracedGraph");
  }
  SmallVector<ProgramValue, 4> values;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, resolve(parameters[i], i, "import"));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(auto results, builder_.import_program(graph.frozen(), values.span()));
  SmallVector<TracedValue, 4> out;
  for (ProgramValue v : results) {
    TENFERRO_ASSIGN_OR_RETURN(TracedValue t, wrap(v));
    out.push_back(std::move(t));
  }
  return out;
}

Result<TracedGraph> TraceContext::finish(std::span<const TracedOperand> outputs) const {
  SmallVector<ProgramValue, 4> values;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, resolve(outputs[i], i, "finish"));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, builder_.freeze(values.span()));
  return TracedGraph(std::move(frozen), id_);
}

}  // namespace tenferro::compiler
