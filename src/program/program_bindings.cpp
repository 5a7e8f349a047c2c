// ProgramBindings (Note [Constants and bindings]).
#include "tenferro/program/program_bindings.h"

namespace tenferro::program {

ProgramBindings ProgramBindings::all_parameters(std::size_t num_inputs) {
  ProgramBindings bindings;
  for (std::size_t i = 0; i < num_inputs; ++i) bindings.add_input(nullptr);
  return bindings;
}

ProgramBindings ProgramBindings::of(std::span<const Tensor> inputs) {
  ProgramBindings bindings;
  for (const Tensor& t : inputs) bindings.add_input(t.defined() ? &t : nullptr);
  return bindings;
}

void ProgramBindings::add_input(const Tensor* bound) {
  if (bound == nullptr) parameters_.push_back(static_cast<std::uint32_t>(bound_.size()));
  bound_.push_back(bound ? *bound : Tensor());
}

std::size_t ProgramBindings::bound_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const Tensor& t : bound_)
    if (t.defined()) bytes += t.nbytes();
  return bytes;
}

Result<std::vector<Tensor>> ProgramBindings::assemble_inputs(std::span<const Tensor> parameters) const {
  if (parameters.size() != parameters_.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "expected {} parameters ({} of {} program inputs are bound), found {}", parameters_.size(),
                      num_bound(), bound_.size(), parameters.size());
  }
  std::vector<Tensor> inputs = bound_;
  for (std::size_t k = 0; k < parameters_.size(); ++k) inputs[parameters_[k]] = parameters[k];
  return inputs;
}

}  // namespace tenferro::program
