// SemanticProgram: guard evaluation, concrete shapes, explain() and
// structural equality.
#include "tenferro/program/semantic_program.h"

#include <cstring>

#include <fmt/format.h>

#include "tenferro/program/extension_op.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

SemanticProgram::~SemanticProgram() = default;

std::string_view OperationView::name() const noexcept {
  return record_->extension ? record_->extension->family_id() : to_string(record_->core);
}

namespace {

Error guard_error(std::string message) {
  return Error(ErrorCode::kShapeGuardFailed, ErrorStage::kPrepare, std::move(message));
}

}  // namespace

Status SemanticProgram::check_guards(std::span<const ConcreteInput> inputs, SymbolValues* symbols) const {
  if (inputs.size() != num_inputs_) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kPrepare, "expected {} program inputs, found {}",
                      num_inputs_, inputs.size());
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueMetadata& want = metadata(input(i));
    if (inputs[i].dtype != want.dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kPrepare, "input {}: expected {}, found {}", i,
                        want.dtype, inputs[i].dtype);
    }
    if (inputs[i].shape.size() != want.shape.size()) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kPrepare, "input {}: expected shape {}, found {}", i,
                        shape_string(want.shape), shape_to_string(inputs[i].shape));
    }
  }
  SymbolValues values(symbols_.size());
  for (std::size_t s = 0; s < symbols_.size(); ++s) {
    const SymbolInfo& info = symbols_[s];
    const std::int64_t v = inputs[info.input].shape[info.axis];
    if (v < 0 || (info.upper_bound && v > *info.upper_bound)) {
      return guard_error(fmt::format("input {} axis {}: extent {} of symbol s{} is outside [0, {}]", info.input,
                                     info.axis, v, s,
                                     info.upper_bound ? fmt::format("{}", *info.upper_bound) : std::string("inf")));
    }
    values[s] = v;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueMetadata& want = metadata(input(i));
    for (std::size_t k = 0; k < want.shape.size(); ++k) {
      std::int64_t expected;
      const bool known = want.shape[k].try_evaluate(values, &expected);
      if (!known || expected != inputs[i].shape[k]) {
        return guard_error(fmt::format("input {} axis {}: expected extent {}, found {}", i, k,
                                       want.shape[k].to_string(), inputs[i].shape[k]));
      }
    }
  }
  for (const ShapeGuard& g : guards_) {
    if (!g.holds(values)) {
      std::int64_t v = 0;
      const bool known = g.expression.try_evaluate(values, &v);
      return guard_error(fmt::format("shape guard {} failed ({} = {}): {}; origin: {}", g.to_string(),
                                     g.expression.to_string(), known ? fmt::format("{}", v) : std::string("overflow"),
                                     g.reason, describe_provenance(g.origin)));
    }
  }
  if (symbols) *symbols = std::move(values);
  return ok_status();
}

Status SemanticProgram::check_guards(std::span<const Tensor> inputs, SymbolValues* symbols) const {
  SmallVector<ConcreteInput, 8> concrete;
  for (const Tensor& t : inputs) concrete.push_back(ConcreteInput{t.dtype(), t.shape()});
  return check_guards(concrete.span(), symbols);
}

Result<Dims> SemanticProgram::concrete_shape(ValueId value, std::span<const std::int64_t> symbols) const {
  const ValueMetadata& m = metadata(value);
  Dims shape;
  for (const SymbolicExtent& e : m.shape) {
    std::int64_t v;
    if (!e.try_evaluate(symbols, &v) || v < 0) {
      return make_error(ErrorCode::kShapeGuardFailed, ErrorStage::kPrepare,
                        "value %{}: extent {} has no valid value for the given symbols", value.index(), e.to_string());
    }
    shape.push_back(v);
  }
  return shape;
}

std::string SemanticProgram::explain() const {
  std::string out = fmt::format("SemanticProgram {} ({} inputs, {} operations, {} outputs, {})\n",
                                fingerprint_.hex().substr(0, 16), num_inputs_, operations_.size(), outputs_.size(),
                                effects_.is_pure() ? std::string("pure") : "effects " + effects_.to_string());
  if (!symbols_.empty()) {
    out += "symbols:\n";
    for (std::size_t s = 0; s < symbols_.size(); ++s) {
      const SymbolInfo& info = symbols_[s];
      out += fmt::format("  s{} {} (input {} axis {})\n", s,
                         info.upper_bound ? fmt::format("<= {}", *info.upper_bound) : std::string("unbounded"),
                         info.input, info.axis);
    }
  }
  out += "inputs:\n";
  for (std::size_t i = 0; i < num_inputs_; ++i) {
    out += fmt::format("  %{}: {}{}\n", i, metadata(input(i)).to_string(),
                       input_names_[i].empty() ? std::string() : fmt::format("  \"{}\"", input_names_[i]));
  }
  out += "operations:\n";
  for (OperationView op : operations()) {
    std::string results, types, operands;
    for (std::size_t r = 0; r < op.num_results(); ++r) {
      results += fmt::format("{}%{}", r ? ", " : "", op.result(r).index());
      types += fmt::format("{}{}", r ? ", " : "", metadata(op.result(r)).to_string());
    }
    for (std::size_t k = 0; k < op.operands().size(); ++k)
      operands += fmt::format("{}%{}", k ? ", " : "", op.operands()[k].index());
    std::string details = op.is_core() ? to_string(op.attributes()) : "<" + op.extension()->describe() + ">";
    out += fmt::format("  {} = {}({}){}{} : {}", results.empty() ? std::string("()") : results, op.name(), operands,
                       details.empty() ? "" : " ", details, types);
    if (!op.effects().is_pure()) out += " effects " + op.effects().to_string();
    bool plain_aliases = true;
    for (const AliasDecl& a : op.aliases()) plain_aliases = plain_aliases && a.kind == AliasKind::kFresh;
    if (!plain_aliases && op.is_extension()) {
      out += " aliases [";
      for (std::size_t r = 0; r < op.aliases().size(); ++r) out += (r ? ", " : "") + op.aliases()[r].to_string();
      out += "]";
    }
    if (!op.placement().is_unconstrained()) out += " placement " + op.placement().to_string();
    if (!op.ordered_after().empty()) {
      out += " after [";
      for (std::size_t p = 0; p < op.ordered_after().size(); ++p)
        out += fmt::format("{}op {}", p ? ", " : "", op.ordered_after()[p].index());
      out += "]";
    }
    out += fmt::format("\n      # from: {}\n", describe_provenance(op.provenance()));
  }
  if (!guards_.empty()) {
    out += "guards:\n";
    for (const ShapeGuard& g : guards_) out += fmt::format("  {}   # {}\n", g.to_string(), g.reason);
  }
  out += "outputs:";
  for (std::size_t k = 0; k < outputs_.size(); ++k) out += fmt::format("{}%{}", k ? ", " : " ", outputs_[k].index());
  out += "\n";
  return out;
}

bool structurally_equal(const SemanticProgram& a, const SemanticProgram& b) {
  if (&a == &b) return true;
  const auto ca = a.canonical_form(), cb = b.canonical_form();
  if (ca.size() != cb.size() || std::memcmp(ca.data(), cb.data(), ca.size()) != 0) return false;
  // Same canonical form: same operation kinds in the same places, so only
  // extension payloads (identified by hash in the encoding) remain.
  for (std::uint32_t i = 0; i < a.num_operations(); ++i) {
    const ExtensionOp* x = a.operation(OperationId(i)).extension();
    const ExtensionOp* y = b.operation(OperationId(i)).extension();
    if (x != nullptr && x != y && !x->payload_equal(*y)) return false;
  }
  return true;
}

}  // namespace tenferro::program
