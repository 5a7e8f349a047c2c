// ProgramBuilder::freeze: liveness, canonical operation order and value
// numbering, must-alias validation, guard selection, bindings, and the
// fingerprint (Note [Canonical form and fingerprint]).
#include <algorithm>

#include <fmt/format.h>

#include "builder_impl.h"

namespace tenferro::program {
namespace {

constexpr std::uint32_t kUnmapped = std::numeric_limits<std::uint32_t>::max();

// Depth-first post-order from the roots: operands in order, then effect
// predecessors by structural hash. Iterative, so long chains cannot
// overflow the stack.
class CanonicalOrder {
 public:
  explicit CanonicalOrder(const ProgramBuilder::Impl& b) : b_(b), state_(b.operations.size(), kUnvisited) {}

  void visit(std::uint32_t root) {
    if (state_[root] != kUnvisited) return;
    push(root);
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.next < top.children.size()) {
        std::uint32_t child = top.children[top.next++];
        if (state_[child] == kUnvisited) push(child);  // invalidates `top`
        continue;
      }
      state_[top.op] = kDone;
      order_.push_back(top.op);
      stack_.pop_back();
    }
  }
  bool visited(std::uint32_t op) const { return state_[op] != kUnvisited; }
  std::vector<std::uint32_t> take() { return std::move(order_); }

 private:
  enum : std::uint8_t { kUnvisited, kOnStack, kDone };
  struct Frame {
    std::uint32_t op;
    SmallVector<std::uint32_t, 8> children;
    std::size_t next = 0;
  };

  void push(std::uint32_t op) {
    state_[op] = kOnStack;
    Frame frame{op, {}, 0};
    const internal::OperationRecord& record = b_.operations[op];
    for (ValueId v : record.operands) {
      const ValueProducer& p = b_.values[v.index()].producer;
      if (!p.is_input) frame.children.push_back(p.operation.index());
    }
    SmallVector<std::uint32_t, 4> preds;
    for (OperationId p : record.ordered_after) preds.push_back(p.index());
    std::sort(preds.begin(), preds.end(), [&](std::uint32_t x, std::uint32_t y) {
      return b_.operation_hashes[x] != b_.operation_hashes[y] ? b_.operation_hashes[x] < b_.operation_hashes[y] : x < y;
    });
    for (std::uint32_t p : preds) frame.children.push_back(p);
    stack_.push_back(std::move(frame));
  }

  const ProgramBuilder::Impl& b_;
  std::vector<std::uint8_t> state_;
  std::vector<Frame> stack_;
  std::vector<std::uint32_t> order_;
};

std::string label_of(const internal::OperationRecord& op, std::uint32_t value_index) {
  return internal::node_label(op.extension ? op.extension->family_id() : to_string(op.core), value_index,
                              op.provenance);
}

}  // namespace

Result<FrozenProgram> ProgramBuilder::freeze(std::span<const ProgramValue> outputs,
                                             const FreezeOptions& options) const {
  if (!impl_) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kCompile, "the ProgramBuilder was moved from");
  }
  const Impl& b = *impl_;
  std::vector<std::uint32_t> output_values;
  for (ProgramValue v : outputs) {
    TENFERRO_ASSIGN_OR_RETURN(std::uint32_t index, b.index_of(v));
    output_values.push_back(index);
  }

  // Liveness and canonical order.
  CanonicalOrder walk(b);
  for (std::uint32_t v : output_values) {
    const ValueProducer& p = b.values[v].producer;
    if (!p.is_input) walk.visit(p.operation.index());
  }
  std::vector<std::uint32_t> effect_roots;
  for (std::uint32_t op = 0; op < b.operations.size(); ++op)
    if (!b.operations[op].effects.is_pure() && !walk.visited(op)) effect_roots.push_back(op);
  std::sort(effect_roots.begin(), effect_roots.end(), [&](std::uint32_t x, std::uint32_t y) {
    return b.operation_hashes[x] != b.operation_hashes[y] ? b.operation_hashes[x] < b.operation_hashes[y] : x < y;
  });
  for (std::uint32_t op : effect_roots) walk.visit(op);
  const std::vector<std::uint32_t> order = walk.take();

  // Canonical numbering: inputs first, then results in operation order.
  std::vector<std::uint32_t> new_value(b.values.size(), kUnmapped);
  std::vector<std::uint32_t> new_op(b.operations.size(), kUnmapped);
  for (std::size_t i = 0; i < b.inputs.size(); ++i) new_value[b.inputs[i]] = static_cast<std::uint32_t>(i);
  auto next_value = static_cast<std::uint32_t>(b.inputs.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const internal::OperationRecord& op = b.operations[order[k]];
    new_op[order[k]] = static_cast<std::uint32_t>(k);
    for (std::uint32_t r = 0; r < op.num_results; ++r) new_value[op.first_result + r] = next_value++;
  }

  internal::ProgramParts parts;
  parts.num_inputs = b.inputs.size();
  parts.input_names = b.input_names;
  parts.values.resize(next_value);
  for (std::size_t i = 0; i < b.inputs.size(); ++i) parts.values[i] = b.values[b.inputs[i]];
  parts.operations.reserve(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    internal::OperationRecord op = b.operations[order[k]];
    const std::uint32_t old_first = op.first_result;
    for (ValueId& v : op.operands) v = ValueId(new_value[v.index()]);
    for (OperationId& p : op.ordered_after) p = OperationId(new_op[p.index()]);
    std::sort(op.ordered_after.begin(), op.ordered_after.end());
    op.first_result = new_value[old_first];
    for (std::uint32_t r = 0; r < op.num_results; ++r) {
      parts.values[op.first_result + r] = internal::ValueRecord{
          b.values[old_first + r].metadata, ValueProducer{false, OperationId(static_cast<std::uint32_t>(k)), r}};
    }
    parts.effects.add_all(op.effects);
    parts.operations.push_back(std::move(op));
  }
  for (std::uint32_t v : output_values) parts.outputs.push_back(ValueId(new_value[v]));

  // In-place results: the aliased operand may have no other use and may be
  // neither a program input nor an output (Note [Alias declarations]).
  std::vector<std::uint32_t> uses(parts.values.size(), 0);
  for (const internal::OperationRecord& op : parts.operations)
    for (ValueId v : op.operands) ++uses[v.index()];
  for (ValueId v : parts.outputs) ++uses[v.index()];
  for (const internal::OperationRecord& op : parts.operations) {
    for (const AliasDecl& a : op.aliases) {
      if (a.kind != AliasKind::kMustAlias) continue;
      const ValueId v = op.operands[a.operand];
      const ValueProducer& producer = parts.values[v.index()].producer;
      if (producer.is_input || uses[v.index()] > 1) {
        return make_error(ErrorCode::kAliasConflict, ErrorStage::kCompile,
                          "{}: result must alias operand {}, which is {}; an in-place update needs a value nobody "
                          "else reads (copy it first)",
                          label_of(op, op.first_result), a.operand,
                          producer.is_input ? fmt::format("program input {}", producer.index)
                                            : fmt::format("used {} times", uses[v.index()]));
      }
    }
  }

  // Guards of live operations and import preconditions, sorted and unique.
  std::vector<ShapeGuard> guards;
  for (std::size_t g = 0; g < b.guards.size(); ++g) {
    const std::uint32_t origin = b.guard_origins[g];
    if (origin == kNoOperation || new_op[origin] != kUnmapped) guards.push_back(b.guards[g]);
  }
  std::stable_sort(guards.begin(), guards.end(), [](const ShapeGuard& x, const ShapeGuard& y) {
    return x.kind != y.kind ? x.kind < y.kind : x.expression < y.expression;
  });
  guards.erase(std::unique(guards.begin(), guards.end(),
                           [](const ShapeGuard& x, const ShapeGuard& y) { return x.same_predicate(y); }),
               guards.end());
  parts.guards = std::move(guards);
  parts.symbols = b.symbols;

  FrozenProgram frozen;
  for (const Tensor& t : b.input_bindings) frozen.bindings.add_input(t.defined() ? &t : nullptr);
  frozen.program = internal::ProgramParts::build(std::move(parts), options);
  return frozen;
}

namespace internal {

std::shared_ptr<const SemanticProgram> ProgramParts::build(ProgramParts parts, const FreezeOptions& options) {
  std::shared_ptr<SemanticProgram> program(new SemanticProgram());
  program->canonical_ = encode_canonical_form(parts);
  program->fingerprint_.digest =
      options.fingerprint_function ? options.fingerprint_function(program->canonical_) : sha256(program->canonical_);
  program->num_inputs_ = parts.num_inputs;
  program->input_names_ = std::move(parts.input_names);
  program->values_ = std::move(parts.values);
  program->operations_ = std::move(parts.operations);
  program->outputs_ = std::move(parts.outputs);
  program->symbols_ = std::move(parts.symbols);
  program->guards_ = std::move(parts.guards);
  program->effects_ = std::move(parts.effects);
  return program;
}

}  // namespace internal
}  // namespace tenferro::program
