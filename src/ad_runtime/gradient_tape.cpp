// GradientTape (include/tenferro/ad_runtime/gradient_tape.h).
#include "tenferro/ad_runtime/gradient_tape.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tenferro/ad/derivative_programs.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/compiler/trace_context.h"
#include "tenferro/runtime/eager.h"

namespace tenferro::ad {

using compiler::TracedOperand;
using compiler::TracedValue;
using program::CoreSemanticOp;

namespace {

// Expansions inside expansions, at most (as the transforms allow).
constexpr int kMaxExpansionDepth = 4;

// Variables live across clear(); their handles carry this bit.
constexpr std::uint32_t kVariableBit = 0x80000000u;

struct Entry {
  Tensor value;
  TracedValue traced;
  bool requires_grad = false;
  bool leaf = false;
  std::uint32_t input = 0;  // leaves: position among the trace's inputs
  Tensor grad;              // variables: the accumulated gradient
  std::string name;
  TapeTensor link;  // leaves: the outer tape's tensor it stands for (Note [Nested tapes])
};

Error tape_error(ErrorCode code, std::string message) { return Error(code, ErrorStage::kNone, std::move(message)); }

// `given` as the tensor that takes the place of `like` (an output or a
// variable): its dtype and shape.
Status check_like(const Tensor& like, const Tensor& given, std::string_view who, std::string_view what) {
  if (given.dtype() != like.dtype()) {
    return tape_error(ErrorCode::kDTypeMismatch,
                      fmt::format("{}: expected {} of dtype {}, found {}", who, what, like.dtype(), given.dtype()));
  }
  if (!std::ranges::equal(given.shape(), like.shape())) {
    return tape_error(ErrorCode::kShapeMismatch,
                      fmt::format("{}: expected {} of shape {}, found {}", who, what, shape_to_string(like.shape()),
                                  shape_to_string(given.shape())));
  }
  return ok_status();
}

// kInvalidArgument unless `given` tensors come one per variable.
Status check_per_variable_count(std::size_t given, std::size_t variables, std::string_view who) {
  if (given != variables) {
    return tape_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: expected one tensor per variable ({}), found {}", who, variables, given));
  }
  return ok_status();
}

Status check_scalar(const Tensor& value, std::string_view who, std::string_view what) {
  if (value.rank() != 0 || !is_floating(value.dtype())) {
    return tape_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: expected a real floating scalar {}, found {}{}", who, what, value.dtype(),
                                  shape_to_string(value.shape())));
  }
  return ok_status();
}

}  // namespace

struct GradientTape::State {
  State(runtime::Runtime rt, runtime::Placement placement, std::shared_ptr<compiler::GraphCompiler> shared)
      : runtime(std::move(rt)),
        eager(runtime.on(placement)),
        compiler(shared ? std::move(shared) : std::make_shared<compiler::GraphCompiler>()) {
    recorded.reserve(16);  // a short recording never moves its entries
  }

  runtime::Runtime runtime;
  runtime::EagerContext eager;
  compiler::TraceContext trace;
  std::shared_ptr<compiler::GraphCompiler> compiler;
  std::vector<Entry> variables;
  std::vector<Entry> recorded;
  /// The leaf behind each trace input: a variable (kVariableBit) or a recorded constant.
  std::vector<std::uint32_t> inputs;
  std::uint64_t generation = 1;
  bool closed = false;  // close(): apply() refused

  // Note [Derivative programs of a recording]
  // jvp(), hvp() and the *_onto transforms take the recording that produced
  // their output as a program; jacobian and hessian call them once per
  // element on the same output of an unchanged recording. The last such
  // program and its JVP and Hessian-vector programs are kept, keyed by the
  // output, the generation and the recording's size, so those calls run a
  // program instead of tracing, compiling and transforming it again.
  struct Recorded {
    std::uint32_t output = 0;
    std::uint64_t generation = 0;  // 0: none kept (generations start at 1)
    std::size_t operations = 0;
    std::size_t leaves = 0;
    program::FrozenProgram program;
    std::vector<Tensor> parameters;
    SmallVector<std::uint32_t, 4> variables;  // input positions, in variable order
    std::optional<JvpProgram> jvp;
    std::optional<JvpProgram> hvp;
  };
  Recorded last;
  int expansion_depth = 0;  // Note [Expansions on the tape]

  /// The trace inputs' values (the recording's parameters), in input order.
  std::vector<Tensor> leaf_values() const {
    std::vector<Tensor> values;
    for (std::uint32_t leaf : inputs)
      values.push_back(leaf & kVariableBit ? variables[leaf & ~kVariableBit].value : recorded[leaf].value);
    return values;
  }
  /// Each variable's position among the trace inputs, in variable order.
  SmallVector<std::uint32_t, 4> variable_inputs() const {
    SmallVector<std::uint32_t, 4> positions;
    for (const Entry& v : variables) positions.push_back(v.input);
    return positions;
  }

  Result<Entry*> resolve(std::uint32_t index, std::uint64_t generation) {
    if (index & kVariableBit) {
      const std::uint32_t i = index & ~kVariableBit;
      if (i >= variables.size()) return tape_error(ErrorCode::kInvalidArgument, "invalid tape tensor");
      return &variables[i];
    }
    if (generation != this->generation || index >= recorded.size()) {
      return tape_error(ErrorCode::kFailedPrecondition,
                        "the tape tensor was recorded before GradientTape::clear(); only variables survive a clear");
    }
    return &recorded[index];
  }

  Result<TracedValue> leaf_input(const Tensor& value, std::string_view name) {
    if (!value.defined()) return tape_error(ErrorCode::kInvalidArgument, "expected a defined tensor for a tape leaf");
    const program::SymbolicShape shape = program::symbolic_shape(value.shape());
    return trace.input(value.dtype(), shape.span(), name);
  }
};

GradientTape::GradientTape(runtime::Runtime runtime, std::shared_ptr<AdContext> context, runtime::Placement placement,
                           std::shared_ptr<compiler::GraphCompiler> compiler)
    : context_(context ? std::move(context) : std::make_shared<AdContext>()),
      state_(std::make_unique<State>(std::move(runtime), placement, std::move(compiler))) {}

GradientTape::~GradientTape() = default;
GradientTape::GradientTape(GradientTape&&) noexcept = default;
GradientTape& GradientTape::operator=(GradientTape&&) noexcept = default;

namespace {
Status moved_from() {
  return Error(ErrorCode::kFailedPrecondition, ErrorStage::kNone, "the GradientTape was moved from");
}

// A handle names its recording (the State), which moves with the tape.
Status foreign(const void* recording, const GradientTape::State* state) {
  if (state == nullptr) return moved_from();
  if (recording != state) {
    return Error(ErrorCode::kForeignValue, ErrorStage::kNone,
                 recording == nullptr ? "expected a valid TapeTensor, found an invalid one"
                                      : "the TapeTensor belongs to another GradientTape");
  }
  return ok_status();
}
}  // namespace

Result<TapeTensor> GradientTape::variable(const Tensor& value, std::string_view name) {
  if (state_ == nullptr) return moved_from();
  if (value.defined() && !is_inexact(value.dtype())) {
    return tape_error(ErrorCode::kDTypeMismatch,
                      fmt::format("a variable must be floating or complex, found {} ('{}')", value.dtype(), name));
  }
  TENFERRO_ASSIGN_OR_RETURN(TracedValue traced, state_->leaf_input(value, name));
  Entry e{value, traced, true, true, static_cast<std::uint32_t>(state_->inputs.size()), Tensor(), std::string(name)};
  const auto index = static_cast<std::uint32_t>(state_->variables.size());
  state_->inputs.push_back(index | kVariableBit);
  state_->variables.push_back(std::move(e));
  return TapeTensor(state_.get(), index | kVariableBit, 0);
}

Result<TapeTensor> GradientTape::constant(const Tensor& value, std::string_view name) {
  if (state_ == nullptr) return moved_from();
  TENFERRO_ASSIGN_OR_RETURN(TracedValue traced, state_->leaf_input(value, name));
  Entry e{value, traced, false, true, static_cast<std::uint32_t>(state_->inputs.size()), Tensor(), std::string(name)};
  const auto index = static_cast<std::uint32_t>(state_->recorded.size());
  state_->inputs.push_back(index);
  state_->recorded.push_back(std::move(e));
  return TapeTensor(state_.get(), index, state_->generation);
}

namespace {
Status closed_tape() {
  return tape_error(ErrorCode::kFailedPrecondition,
                    "the GradientTape is closed: its value is used after the computation that recorded it ended");
}
}  // namespace

Result<TapeTensor> GradientTape::apply(CoreSemanticOp op, std::span<const TapeTensor> operands,
                                       program::CoreAttributes attributes) {
  if (state_ == nullptr) return moved_from();
  if (state_->closed) return closed_tape();
  SmallVector<Tensor, 4> values;
  SmallVector<TracedOperand, 4> traced;
  bool requires_grad = false;
  for (const TapeTensor& t : operands) {
    TENFERRO_TRY(foreign(t.recording_, state_.get()));
    TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(t.index_, t.generation_));
    values.push_back(e->value);
    traced.push_back(e->traced);
    requires_grad = requires_grad || e->requires_grad;
  }
  TENFERRO_ASSIGN_OR_RETURN(TracedValue result, state_->trace.emit(op, traced.span(), attributes));
  TENFERRO_ASSIGN_OR_RETURN(Tensor value, state_->eager.apply(op, values.span(), attributes));
  const auto index = static_cast<std::uint32_t>(state_->recorded.size());
  requires_grad = requires_grad && is_inexact(value.dtype());
  state_->recorded.push_back(Entry{std::move(value), std::move(result), requires_grad, false, 0, Tensor(), {}});
  ++metrics_.operations_recorded;
  return TapeTensor(state_.get(), index, state_->generation);
}

Result<SmallVector<TapeTensor, 2>> GradientTape::apply(std::shared_ptr<const program::ExtensionOp> op,
                                                       std::span<const TapeTensor> operands) {
  if (state_ == nullptr) return moved_from();
  if (state_->closed) return closed_tape();
  SmallVector<Tensor, 4> values;
  SmallVector<TracedOperand, 4> traced;
  bool requires_grad = false;
  for (const TapeTensor& t : operands) {
    TENFERRO_TRY(foreign(t.recording_, state_.get()));
    TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(t.index_, t.generation_));
    values.push_back(e->value);
    traced.push_back(e->traced);
    requires_grad = requires_grad || e->requires_grad;
  }
  // Note [Expansions on the tape]
  // An extension op whose AD rule expands it for these operands (an einsum
  // of three or more operands: its planned binary steps) is recorded as the
  // expansion, one operation at a time, as the transforms would
  // differentiate it: backward() then reuses the steps' values instead of
  // recomputing them from the operands.
  if (requires_grad && state_->expansion_depth < kMaxExpansionDepth) {
    SmallVector<program::ValueMetadata, 4> metadata;
    for (const Tensor& v : values) metadata.push_back(program::ValueMetadata::exact(v.dtype(), v.shape()));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const program::SemanticProgram> expansion,
                              context_->expansion(*op, metadata.span()));
    if (expansion != nullptr) return apply_program(*expansion, operands);
  }
  using TracedList = SmallVector<TracedValue, 2>;
  TENFERRO_ASSIGN_OR_RETURN(TracedList results, state_->trace.emit_extension(op, traced.span()));
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList outputs, state_->eager.call(op, values.span()));
  SmallVector<TapeTensor, 2> out;
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto index = static_cast<std::uint32_t>(state_->recorded.size());
    const bool grad = requires_grad && is_inexact(outputs[k].dtype());
    state_->recorded.push_back(Entry{outputs[k], results[k], grad, false, 0, Tensor(), {}});
    out.push_back(TapeTensor(state_.get(), index, state_->generation));
  }
  ++metrics_.operations_recorded;
  return out;
}

Result<SmallVector<TapeTensor, 2>> GradientTape::apply_program(const program::SemanticProgram& expansion,
                                                               std::span<const TapeTensor> operands) {
  if (expansion.num_inputs() != operands.size()) {
    return tape_error(
        ErrorCode::kContractViolation,
        fmt::format("a recorded program takes {} inputs, found {} operands", expansion.num_inputs(), operands.size()));
  }
  ++state_->expansion_depth;
  std::vector<TapeTensor> value_of(expansion.num_values());
  for (std::size_t i = 0; i < operands.size(); ++i) value_of[expansion.input(i).index()] = operands[i];
  const Status applied = [&]() -> Status {
    for (const program::OperationView o : expansion.operations()) {
      SmallVector<TapeTensor, 4> args;
      for (const program::ValueId v : o.operands()) args.push_back(value_of[v.index()]);
      if (o.is_core()) {
        TENFERRO_ASSIGN_OR_RETURN(value_of[o.result().index()], apply(o.core_op(), args.span(), o.attributes()));
      } else {
        TENFERRO_ASSIGN_OR_RETURN(auto results, apply(o.shared_extension(), args.span()));
        for (std::size_t k = 0; k < results.size(); ++k) value_of[o.result(k).index()] = results[k];
      }
    }
    return ok_status();
  }();
  --state_->expansion_depth;
  TENFERRO_TRY(applied);
  SmallVector<TapeTensor, 2> out;
  for (const program::ValueId v : expansion.outputs()) out.push_back(value_of[v.index()]);
  return out;
}

Result<Tensor> GradientTape::value(const TapeTensor& tensor) const {
  TENFERRO_TRY(foreign(tensor.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(tensor.index_, tensor.generation_));
  return e->value;
}

namespace {

// backward(): the VJP program of the recording with `seed` as the
// cotangent of `loss` (Note [Eager backward]).
Status run_backward(GradientTape::State& s, AdContext& context, TapeMetrics& metrics, const Entry& loss, Tensor seed) {
  if (!loss.requires_grad) {
    return tape_error(ErrorCode::kFailedPrecondition, "backward: the loss does not depend on any variable");
  }
  // outputs: [loss, every recorded non-leaf value].
  SmallVector<TracedOperand, 16> outputs;
  SmallVector<const Entry*, 16> output_entries;
  outputs.push_back(loss.traced);
  output_entries.push_back(&loss);
  for (const Entry& e : s.recorded) {
    if (e.leaf) continue;
    outputs.push_back(e.traced);
    output_entries.push_back(&e);
  }
  TENFERRO_ASSIGN_OR_RETURN(compiler::TracedGraph graph, s.trace.finish(outputs.span()));
  TENFERRO_ASSIGN_OR_RETURN(compiler::CompiledGraph compiled, s.compiler->compile(graph));
  const SmallVector<std::uint32_t, 4> active = s.variable_inputs();
  TENFERRO_ASSIGN_OR_RETURN(
      ReusingVjpProgram program,
      context.vjp_reusing_outputs(program::FrozenProgram{compiled.program, compiled.bindings}, active.span(), 1));
  if (program.layout.differentiated_outputs.empty()) {
    // The loss depends on variables only through operations whose
    // derivative is zero (sign, floor, round, comparisons): every gradient
    // is zero, as torch.autograd gives it, so nothing is added.
    ++metrics.backward_calls;
    return ok_status();
  }
  std::vector<Tensor> parameters = s.leaf_values();
  for (std::uint32_t j : program.reused_outputs) parameters.push_back(output_entries[j]->value);
  parameters.push_back(std::move(seed));
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList gradients, s.runtime.run(program.backward, parameters));
  ++metrics.backward_calls;
  metrics.reused_values += program.reused_outputs.size();
  for (std::size_t k = 0; k < program.layout.gradient_inputs.size(); ++k) {
    Entry& v = s.variables[s.inputs[program.layout.gradient_inputs[k]] & ~kVariableBit];
    if (!v.grad.defined()) {
      v.grad = gradients[k];
    } else {
      TENFERRO_ASSIGN_OR_RETURN(v.grad, s.eager.add(v.grad, gradients[k]));
    }
  }
  return ok_status();
}

}  // namespace

Status GradientTape::backward(const TapeTensor& loss) {
  TENFERRO_TRY(foreign(loss.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * loss_entry, state_->resolve(loss.index_, loss.generation_));
  TENFERRO_TRY(check_scalar(loss_entry->value, "backward", "loss"));
  TENFERRO_ASSIGN_OR_RETURN(Tensor seed, loss_entry->value.dtype() == DType::kFloat32 ? Tensor::scalar<float>(1.0f)
                                                                                      : Tensor::scalar<double>(1.0));
  return run_backward(*state_, *context_, metrics_, *loss_entry, std::move(seed));
}

Status GradientTape::backward(const TapeTensor& output, const Tensor& cotangent) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  if (!cotangent.defined()) {
    return tape_error(ErrorCode::kDTypeMismatch, fmt::format("backward: expected a cotangent of the output's dtype {}, "
                                                             "found none",
                                                             entry->value.dtype()));
  }
  TENFERRO_TRY(check_like(entry->value, cotangent, "backward", "a cotangent (the output's)"));
  return run_backward(*state_, *context_, metrics_, *entry, cotangent);
}

// Note [Tape forward mode]
// jvp() and hvp() differentiate the recording that produced `output` as a
// program: the trace up to `output` (every variable and recorded constant
// an input, as backward() sees it), compiled through the tape's
// GraphCompiler (so a repeated call compiles nothing), then the functional
// jvp / hvp of ad_runtime/functional.h with the variables as the active
// inputs. Forward mode therefore needs no rules beyond the linearizations
// reverse mode transposes.
namespace {

using RecordedProgram = GradientTape::State::Recorded;

// The recording up to `output` (handle index `index`) as a program (Note
// [Derivative programs of a recording]).
Result<RecordedProgram*> recorded_program(GradientTape::State& s, const Entry& output, std::uint32_t index) {
  RecordedProgram& r = s.last;
  if (r.generation == s.generation && r.output == index && r.operations == s.recorded.size() &&
      r.leaves == s.inputs.size()) {
    return &r;
  }
  r = RecordedProgram{};
  const TracedOperand outputs[] = {output.traced};
  TENFERRO_ASSIGN_OR_RETURN(compiler::TracedGraph graph, s.trace.finish(outputs));
  TENFERRO_ASSIGN_OR_RETURN(compiler::CompiledGraph compiled, s.compiler->compile(graph));
  r.program = program::FrozenProgram{compiled.program, compiled.bindings};
  r.parameters = s.leaf_values();
  r.variables = s.variable_inputs();
  r.output = index;
  r.generation = s.generation;
  r.operations = s.recorded.size();
  r.leaves = s.inputs.size();
  return &r;
}

// Its JVP program (`hessian`: its Hessian-vector program), made once.
Result<const JvpProgram*> derivative_program(AdContext& context, RecordedProgram& r, bool hessian) {
  std::optional<JvpProgram>& memo = hessian ? r.hvp : r.jvp;
  if (!memo) {
    TENFERRO_ASSIGN_OR_RETURN(JvpProgram p, hessian ? hessian_vector_program(context, r.program, r.variables.span())
                                                    : context.jvp(r.program, r.variables.span()));
    memo = std::move(p);
  }
  return &*memo;
}

// One tensor per variable, each of its variable's dtype and shape (an
// undefined one: zeros).
Result<std::vector<Tensor>> per_variable(const GradientTape::State& s, std::span<const Tensor> given,
                                         std::string_view what) {
  TENFERRO_TRY(check_per_variable_count(given.size(), s.variables.size(), what));
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < given.size(); ++i) {
    const Tensor& v = s.variables[i].value;
    if (!given[i].defined()) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor zero, Tensor::zeros(v.shape(), v.dtype()));
      out.push_back(std::move(zero));
      continue;
    }
    TENFERRO_TRY(check_like(v, given[i], what, fmt::format("a tensor for variable {}", i)));
    out.push_back(given[i]);
  }
  return out;
}

}  // namespace

Result<Tensor> GradientTape::jvp(const TapeTensor& output, std::span<const Tensor> tangents) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> u, per_variable(*state_, tangents, "jvp"));
  if (!entry->requires_grad) return Tensor::zeros(entry->value.shape(), entry->value.dtype());
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(const JvpProgram* p, derivative_program(*context_, *r, false));
  TENFERRO_ASSIGN_OR_RETURN(JvpResult result, run_jvp(state_->runtime, *p, r->parameters, u));
  return std::move(result.tangents[0]);
}

Result<std::vector<Tensor>> GradientTape::hvp(const TapeTensor& output, std::span<const Tensor> vectors) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_TRY(check_scalar(entry->value, "hvp", "output"));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> v, per_variable(*state_, vectors, "hvp"));
  if (!entry->requires_grad) return per_variable(*state_, std::vector<Tensor>(state_->variables.size()), "hvp");
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(const JvpProgram* p, derivative_program(*context_, *r, true));
  return run_hvp(state_->runtime, *p, r->parameters, v, r->variables.size());
}

// --- nested tapes (Note [Nested tapes]) ---

namespace {
Status check_outer(const GradientTape& inner, const GradientTape& outer, std::string_view who) {
  if (&inner == &outer) {
    return tape_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: expected an enclosing tape, found the tape itself", who));
  }
  return ok_status();
}

}  // namespace

Result<TapeTensor> GradientTape::variable(GradientTape& outer, const TapeTensor& value, std::string_view name) {
  if (state_ == nullptr) return moved_from();
  TENFERRO_TRY(check_outer(*this, outer, "variable"));
  TENFERRO_ASSIGN_OR_RETURN(Tensor v, outer.value(value));
  TENFERRO_ASSIGN_OR_RETURN(TapeTensor t, variable(v, name));
  state_->variables[t.index_ & ~kVariableBit].link = value;
  return t;
}

Result<TapeTensor> GradientTape::constant(GradientTape& outer, const TapeTensor& value, std::string_view name) {
  if (state_ == nullptr) return moved_from();
  TENFERRO_TRY(check_outer(*this, outer, "constant"));
  TENFERRO_ASSIGN_OR_RETURN(Tensor v, outer.value(value));
  TENFERRO_ASSIGN_OR_RETURN(TapeTensor t, constant(v, name));
  state_->recorded[t.index_].link = value;
  return t;
}

Result<std::vector<TapeTensor>> GradientTape::leaves_on(GradientTape& outer) {
  std::vector<TapeTensor> out;
  for (std::uint32_t leaf : state_->inputs) {
    const Entry& e = leaf & kVariableBit ? state_->variables[leaf & ~kVariableBit] : state_->recorded[leaf];
    if (!e.link.valid()) {
      TENFERRO_ASSIGN_OR_RETURN(TapeTensor c, outer.constant(e.value));
      out.push_back(c);
    } else if (e.link.recording_ != outer.state_.get()) {
      return tape_error(ErrorCode::kInvalidArgument,
                        "a leaf of the inner tape stands for a tensor of another tape than the enclosing one given");
    } else {
      out.push_back(e.link);
    }
  }
  return out;
}

Result<SmallVector<TapeTensor, 2>> GradientTape::apply_program(const program::FrozenProgram& f,
                                                               std::span<const TapeTensor> parameters) {
  if (f.bindings.num_bound() == 0) return apply_program(*f.program, parameters);
  std::vector<TapeTensor> operands;
  std::size_t next = 0;
  for (std::size_t i = 0; i < f.program->num_inputs(); ++i) {
    if (const Tensor* bound = f.bindings.bound_tensor(i)) {
      TENFERRO_ASSIGN_OR_RETURN(TapeTensor c, constant(*bound));
      operands.push_back(c);
    } else if (next < parameters.size()) {
      operands.push_back(parameters[next++]);
    }
  }
  return apply_program(*f.program, operands);
}

Result<TapeTensor> GradientTape::zeros_like(const Tensor& like) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor z, Tensor::zeros(like.shape(), like.dtype()));
  return constant(z);
}

Result<TapeTensor> GradientTape::value_onto(GradientTape& outer, const TapeTensor& output) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_TRY(check_outer(*this, outer, "value_onto"));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<TapeTensor> operands, leaves_on(outer));
  TENFERRO_ASSIGN_OR_RETURN(auto out, outer.apply_program(r->program, operands));
  return out[0];
}

Result<std::vector<TapeTensor>> GradientTape::vjp_onto(GradientTape& outer, const TapeTensor& output,
                                                       const TapeTensor& cotangent) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_TRY(check_outer(*this, outer, "vjp_onto"));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_ASSIGN_OR_RETURN(Tensor ct, outer.value(cotangent));
  TENFERRO_TRY(check_like(entry->value, ct, "vjp_onto", "a cotangent"));
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(VjpProgram p, context_->vjp(r->program, r->variables.span()));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<TapeTensor> operands, leaves_on(outer));
  if (!p.layout.differentiated_outputs.empty()) operands.push_back(cotangent);
  TENFERRO_ASSIGN_OR_RETURN(auto out, outer.apply_program(p.program, operands));
  // outputs [output, ct_a for a in gradient_inputs] (Note [AD program layout])
  std::vector<TapeTensor> result{out[0]};
  TENFERRO_TRY(append_per_variable_results(outer, p.layout.input_cotangents, out, p.layout.num_outputs, result));
  return result;
}

Result<std::vector<TapeTensor>> GradientTape::jvp_onto(GradientTape& outer, const TapeTensor& output,
                                                       std::span<const TapeTensor> tangents) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_TRY(check_outer(*this, outer, "jvp_onto"));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<TapeTensor> operands, leaves_on(outer));
  TENFERRO_TRY(append_per_variable(outer, tangents, "jvp_onto", operands));
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(const JvpProgram* p, derivative_program(*context_, *r, false));
  TENFERRO_ASSIGN_OR_RETURN(auto out, outer.apply_program(p->program, operands));
  // outputs [output, its tangent when present] (Note [AD program layout])
  if (p->layout.output_tangents[0] == TangentState::kPresent) return std::vector<TapeTensor>{out[0], out[1]};
  TENFERRO_ASSIGN_OR_RETURN(TapeTensor z, outer.zeros_like(entry->value));
  return std::vector<TapeTensor>{out[0], z};
}

Result<std::vector<TapeTensor>> GradientTape::hvp_onto(GradientTape& outer, const TapeTensor& output,
                                                       std::span<const TapeTensor> vectors) {
  TENFERRO_TRY(foreign(output.recording_, state_.get()));
  TENFERRO_TRY(check_outer(*this, outer, "hvp_onto"));
  TENFERRO_ASSIGN_OR_RETURN(Entry * entry, state_->resolve(output.index_, output.generation_));
  TENFERRO_TRY(check_scalar(entry->value, "hvp_onto", "output"));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<TapeTensor> operands, leaves_on(outer));
  TENFERRO_TRY(append_per_variable(outer, vectors, "hvp_onto", operands));
  TENFERRO_ASSIGN_OR_RETURN(RecordedProgram * r, recorded_program(*state_, *entry, output.index_));
  TENFERRO_ASSIGN_OR_RETURN(const JvpProgram* p, derivative_program(*context_, *r, true));
  TENFERRO_ASSIGN_OR_RETURN(auto out, outer.apply_program(p->program, operands));
  // outputs [gradients, H v for each present tangent] (hessian_vector_program)
  std::vector<TapeTensor> result;
  TENFERRO_TRY(append_per_variable_results(outer, p->layout.output_tangents, out, p->layout.num_outputs, result));
  return result;
}

Status GradientTape::append_per_variable_results(GradientTape& outer, std::span<const TangentState> states,
                                                 std::span<const TapeTensor> out, std::size_t next,
                                                 std::vector<TapeTensor>& result) {
  for (std::size_t k = 0; k < state_->variables.size(); ++k) {
    if (states[k] == TangentState::kPresent) {
      result.push_back(out[next++]);
    } else {
      TENFERRO_ASSIGN_OR_RETURN(TapeTensor z, outer.zeros_like(state_->variables[k].value));
      result.push_back(z);
    }
  }
  return ok_status();
}

Status GradientTape::append_per_variable(GradientTape& outer, std::span<const TapeTensor> given, std::string_view who,
                                         std::vector<TapeTensor>& operands) {
  TENFERRO_TRY(check_per_variable_count(given.size(), state_->variables.size(), who));
  for (std::size_t i = 0; i < given.size(); ++i) {
    const Tensor& v = state_->variables[i].value;
    if (!given[i].valid()) {
      TENFERRO_ASSIGN_OR_RETURN(TapeTensor z, outer.zeros_like(v));
      operands.push_back(z);
      continue;
    }
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, outer.value(given[i]));
    TENFERRO_TRY(check_like(v, t, who, fmt::format("a tensor for variable {}", i)));
    operands.push_back(given[i]);
  }
  return ok_status();
}

Result<program::FrozenProgram> GradientTape::function(std::span<const TapeTensor> arguments,
                                                      std::span<const TapeTensor> outputs) {
  if (state_ == nullptr) return moved_from();
  State& s = *state_;
  if (outputs.empty()) return tape_error(ErrorCode::kInvalidArgument, "function: expected at least one output");
  std::vector<Tensor> bound = s.leaf_values();
  std::int64_t previous = -1;
  for (std::size_t k = 0; k < arguments.size(); ++k) {
    TENFERRO_TRY(foreign(arguments[k].recording_, &s));
    TENFERRO_ASSIGN_OR_RETURN(Entry * e, s.resolve(arguments[k].index_, arguments[k].generation_));
    if (!e->leaf) {
      return tape_error(ErrorCode::kInvalidArgument,
                        fmt::format("function: argument {} is not a leaf of the tape (a variable or a constant)", k));
    }
    if (static_cast<std::int64_t>(e->input) <= previous) {
      return tape_error(ErrorCode::kInvalidArgument,
                        fmt::format("function: expected distinct leaves in the order they were made, found argument "
                                    "{} made before argument {}",
                                    k, k - 1));
    }
    previous = e->input;
    bound[e->input] = Tensor();
  }
  SmallVector<TracedOperand, 4> traced;
  for (const TapeTensor& o : outputs) {
    TENFERRO_TRY(foreign(o.recording_, &s));
    TENFERRO_ASSIGN_OR_RETURN(Entry * e, s.resolve(o.index_, o.generation_));
    traced.push_back(e->traced);
  }
  TENFERRO_ASSIGN_OR_RETURN(compiler::TracedGraph graph, s.trace.finish(traced.span()));
  TENFERRO_ASSIGN_OR_RETURN(compiler::CompiledGraph compiled, s.compiler->compile(graph));
  if (compiled.program->num_inputs() != bound.size() || compiled.bindings.num_bound() != 0) {
    return tape_error(ErrorCode::kInternal, "function: the compiled recording does not take the tape's leaves");
  }
  return program::FrozenProgram{std::move(compiled.program), program::ProgramBindings::of(bound)};
}

Result<std::vector<TapeTensor>> GradientTape::apply_onto(GradientTape& outer, const program::SemanticProgram& program,
                                                         std::span<const TapeTensor> arguments,
                                                         std::span<const TapeTensor> values) {
  if (state_ == nullptr) return moved_from();
  TENFERRO_TRY(check_outer(*this, outer, "apply_onto"));
  if (program.num_inputs() != state_->inputs.size() || arguments.size() != values.size()) {
    return tape_error(ErrorCode::kInvalidArgument,
                      fmt::format("apply_onto: expected a program of the tape's {} leaves and one value per argument, "
                                  "found {} inputs, {} arguments and {} values",
                                  state_->inputs.size(), program.num_inputs(), arguments.size(), values.size()));
  }
  TENFERRO_ASSIGN_OR_RETURN(std::vector<TapeTensor> operands, leaves_on(outer));
  for (std::size_t k = 0; k < arguments.size(); ++k) {
    TENFERRO_TRY(foreign(arguments[k].recording_, state_.get()));
    TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(arguments[k].index_, arguments[k].generation_));
    if (!e->leaf) {
      return tape_error(ErrorCode::kInvalidArgument, fmt::format("apply_onto: argument {} is not a leaf", k));
    }
    operands[e->input] = values[k];
  }
  TENFERRO_ASSIGN_OR_RETURN(auto out, outer.apply_program(program, operands));
  return std::vector<TapeTensor>(out.begin(), out.end());
}

Result<Tensor> GradientTape::grad(const TapeTensor& variable) const {
  TENFERRO_TRY(foreign(variable.recording_, state_.get()));
  if (!(variable.index_ & kVariableBit)) {
    return tape_error(ErrorCode::kInvalidArgument, "grad: expected a variable of the tape");
  }
  TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(variable.index_, variable.generation_));
  return e->grad;
}

void GradientTape::close() noexcept {
  if (state_ != nullptr) state_->closed = true;
}

bool GradientTape::closed() const noexcept { return state_ != nullptr && state_->closed; }

Result<bool> GradientTape::requires_grad(const TapeTensor& tensor) const {
  TENFERRO_TRY(foreign(tensor.recording_, state_.get()));
  TENFERRO_ASSIGN_OR_RETURN(Entry * e, state_->resolve(tensor.index_, tensor.generation_));
  return e->requires_grad;
}

void GradientTape::zero_grad() {
  if (state_ == nullptr) return;
  for (Entry& v : state_->variables) v.grad = Tensor();
}

Status GradientTape::clear() {
  if (state_ == nullptr) return moved_from();
  State& s = *state_;
  compiler::TraceContext trace;
  std::vector<std::uint32_t> inputs;
  std::vector<TracedValue> traced;
  for (std::size_t i = 0; i < s.variables.size(); ++i) {
    const program::SymbolicShape shape = program::symbolic_shape(s.variables[i].value.shape());
    TENFERRO_ASSIGN_OR_RETURN(TracedValue t,
                              trace.input(s.variables[i].value.dtype(), shape.span(), s.variables[i].name));
    traced.push_back(std::move(t));
    inputs.push_back(static_cast<std::uint32_t>(i) | kVariableBit);
  }
  for (std::size_t i = 0; i < s.variables.size(); ++i) {
    s.variables[i].traced = std::move(traced[i]);
    s.variables[i].input = static_cast<std::uint32_t>(i);
  }
  s.trace = std::move(trace);
  s.inputs = std::move(inputs);
  s.recorded.clear();
  ++s.generation;
  s.closed = false;
  return ok_status();
}

}  // namespace tenferro::ad
