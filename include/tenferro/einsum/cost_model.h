// The cost model every planner optimises and every ContractionTree reports:
// flops, largest intermediate, read/write volume, logical workspace, and the
// combined score that weighs them.
//
// Note [Flop convention]
// A binary step over the label union U of its two (pre-summed) operands
// performs prod(extent(U)) multiply-adds. Its flops follow opt_einsum and
// the instance files: 2 per multiply-add when the step sums over at least
// one label, 1 when it sums over none (an outer or Hadamard product). The
// instance files' log10_flops of multi-tensor networks match this exactly;
// their two-tensor instances record multiply-adds instead, which
// PathCost::multiply_adds reports. Summing a label that only one input has
// (and the output lacks) happens on that input alone before its first step
// and costs one flop per element of the input. Flops count scalar
// operations of the operands' dtype: a complex multiply-add counts as one.
//
// Note [Workspace estimate]
// The logical workspace is the peak number of bytes of intermediates that
// are alive at once when the steps run one after another in step order: at
// step k the results of earlier steps not yet consumed, the pre-summed
// copies of this step's input operands, and step k's result. Inputs (owned
// by the caller) are not counted; the root result (the output) is. Engines
// may plan buffers differently (reuse, in-place); this is the bound the
// planner checks against a hard workspace limit.
#pragma once

#include <cstdint>

namespace tenferro::einsum {

/// Weights of the combined score:
///   score = log2(flops + read_write * read_write_elements)
///         + size * max(0, log2_max_intermediate - size_target_log2)
/// The defaults score flops alone.
struct CostWeights {
  /// Cost of moving one element, in flops.
  double read_write = 0.0;
  /// Penalty per doubling of the largest intermediate beyond the target.
  double size = 0.0;
  /// log2 of the largest intermediate (elements) that costs nothing.
  double size_target_log2 = 0.0;

  friend bool operator==(const CostWeights&, const CostWeights&) = default;
};

/// Costs of a complete contraction path. Sizes are in elements unless the
/// name says bytes; doubles because large networks exceed int64.
struct PathCost {
  /// Sum of step flops plus pre-summing flops (Note [Flop convention]).
  double flops = 0.0;
  /// Sum of step multiply-adds (no factor 2, no pre-summing).
  double multiply_adds = 0.0;
  /// Elements of the largest intermediate, the root result included.
  double max_intermediate_elements = 0.0;
  /// Elements read (both operands of every step) plus written (results).
  double read_write_elements = 0.0;
  /// Peak logical workspace (Note [Workspace estimate]).
  double workspace_bytes = 0.0;

  /// log10(max(flops, 1)), the instance files' log10_flops.
  double log10_flops() const noexcept;
  /// log2(max(max_intermediate_elements, 1)), the instance files' log2_size.
  double log2_max_intermediate() const noexcept;
};

/// The combined score of `cost` under `weights`; lower is better.
double combined_score(const PathCost& cost, const CostWeights& weights) noexcept;

}  // namespace tenferro::einsum
