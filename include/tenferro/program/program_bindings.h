// ProgramBindings: the process-local tensors a program's inputs are bound
// to (captured tensors, defaults, large constants), kept outside the
// program so its identity never depends on tensor data.
//
// Note [Constants and bindings]
// Only small literals are inlined in a program (ConstantPolicy, enforced by
// ProgramBuilder::constant). A captured tensor becomes an ordinary program
// input whose binding lives here; a caller supplies the remaining inputs
// (the parameters) in order. Turning a large tensor into an inline literal
// is explicit (ProgramBuilder::constantize) and governed by the policy
// passed there. Because bindings are excluded from the fingerprint, a
// program capturing W and the same program taking W as a parameter share
// compiled and prepared artifacts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

/// How large an inline literal may be.
struct ConstantPolicy {
  /// Largest literal, in bytes, that may be inlined in a program.
  std::size_t max_inline_bytes = 256;
};

/// Which program inputs are bound to tensors. Copies share the tensors
/// (Tensor copies share storage). Thread-compatible value type.
class ProgramBindings {
 public:
  ProgramBindings() = default;
  /// Bindings for a program with `num_inputs` inputs, all parameters.
  static ProgramBindings all_parameters(std::size_t num_inputs);
  /// Bindings for a program with `inputs.size()` inputs: input i bound to
  /// inputs[i] when that is defined, a parameter otherwise.
  static ProgramBindings of(std::span<const Tensor> inputs);

  std::size_t num_inputs() const noexcept { return bound_.size(); }
  /// The tensor bound to program input `input`, or nullptr when the caller
  /// supplies it.
  const Tensor* bound_tensor(std::size_t input) const noexcept {
    return input < bound_.size() && bound_[input].defined() ? &bound_[input] : nullptr;
  }
  /// The program inputs the caller supplies, in order.
  std::span<const std::uint32_t> parameters() const noexcept { return parameters_; }
  std::size_t num_bound() const noexcept { return bound_.size() - parameters_.size(); }
  /// Sum of nbytes() of the bound tensors.
  std::size_t bound_bytes() const noexcept;
  /// Every program input in order: `parameters` where the caller supplies
  /// them, the bound tensors elsewhere. kInvalidArgument on a wrong count.
  Result<std::vector<Tensor>> assemble_inputs(std::span<const Tensor> parameters) const;

 private:
  friend class ProgramBuilder;
  void add_input(const Tensor* bound);

  std::vector<Tensor> bound_;  // undefined Tensor: a parameter
  std::vector<std::uint32_t> parameters_;
};

}  // namespace tenferro::program
