// ContractionOrder: which pairs of tensors an N-ary einsum contracts, and in
// which order, independent of labels and shapes. Planners produce one; users
// supply one as an explicit path (opt_einsum's pairwise format or SSA pairs);
// nested subscripts "((ij,jk),kl)" define one.
//
// Note [SSA contraction order]
// Node ids 0..n-1 name the n inputs; step k contracts two earlier nodes and
// creates node n+k. A complete order has n-1 steps, every node except the
// last one (the root, node 2n-2) is consumed exactly once, and the root is
// the result. A single input needs no step (its root is node 0). opt_einsum
// paths instead name positions in a shrinking operand list (both operands
// are removed, the result is appended); from_opt_einsum_path translates.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenferro/base/status.h"

namespace tenferro::einsum {

/// A complete binary contraction order in SSA form (Note [SSA contraction
/// order]). Immutable value type; thread-compatible.
class ContractionOrder {
 public:
  /// One step: the node ids of its two operands (lhs, rhs).
  using Step = std::pair<std::int32_t, std::int32_t>;

  /// The order of a single input (no step).
  ContractionOrder() = default;

  /// Validates `steps` as a complete SSA order over `num_inputs` inputs.
  /// kInvalidArgument names the offending step: a node id out of range or
  /// not yet created, a node consumed twice, or a wrong number of steps.
  static Result<ContractionOrder> from_ssa(std::int32_t num_inputs, std::span<const Step> steps);
  /// Translates an opt_einsum path (positions in the shrinking operand list;
  /// both are removed and the result appended) over `num_inputs` inputs.
  /// The path must be complete: n-1 pairs. kInvalidArgument otherwise.
  static Result<ContractionOrder> from_opt_einsum_path(std::int32_t num_inputs,
                                                       std::span<const std::pair<std::int64_t, std::int64_t>> path);
  /// Parses the nested form that to_string prints, e.g. "((0,2),(1,3))"
  /// (spaces allowed): every input 0..num_inputs-1 exactly once, pairs in
  /// parentheses. Steps are numbered in post order, left before right.
  /// kInvalidArgument names the byte offset and what was expected.
  static Result<ContractionOrder> parse(std::int32_t num_inputs, std::string_view text);
  /// ((0,1),2),3)...: inputs contracted left to right. num_inputs >= 1.
  static ContractionOrder left_to_right(std::int32_t num_inputs);

  std::int32_t num_inputs() const noexcept { return num_inputs_; }
  std::span<const Step> steps() const noexcept { return steps_; }
  /// The node holding the result: 2n-2, or 0 for a single input.
  std::int32_t root() const noexcept { return num_inputs_ - 1 + static_cast<std::int32_t>(steps_.size()); }

  /// The same order in opt_einsum's pairwise format (each pair sorted
  /// ascending, as opt_einsum prints it).
  std::vector<std::pair<std::int64_t, std::int64_t>> to_opt_einsum_path() const;
  /// Nested form with input indices, e.g. "((0,1),2)"; "0" for one input.
  std::string to_string() const;

  friend bool operator==(const ContractionOrder&, const ContractionOrder&) = default;

 private:
  ContractionOrder(std::int32_t num_inputs, std::vector<Step> steps)
      : num_inputs_(num_inputs), steps_(std::move(steps)) {}

  std::int32_t num_inputs_ = 1;
  std::vector<Step> steps_;
};

}  // namespace tenferro::einsum
