// Internal: the layout pass of the native CPU engine (Note [Layout-aware
// execution]). Given a ContractionTree it chooses the memory order of every
// intermediate, of every pre-summed operand and of any copy or temporary a
// step cannot avoid, so that the dot_general composite runs each step as
// GEMMs over fused strides without materialising anything itself.
//
// Note [Layout-aware execution]
// A dot_general step runs without copies when each of its groups M (lhs
// free), N (rhs free) and K (contracted) fuses into one GEMM dimension in
// every tensor holding it, in the same label order there, and the fused
// strides suit the GEMM provider (Note [TTGT without transposes] in
// cpu/gemm/dot_general.h; batch labels never force a copy). Inputs come with
// their layout (assumed row-major at planning; a diagonal is a strided view);
// intermediates are dense and the engine picks their order. The pass works
// top-down from the root, whose result is the output (row-major in output
// order):
//  1. At step s the result's order is fixed (by its consumer, or the
//     output). Each child whose order is free (an intermediate or a
//     pre-summed operand) is given [B, M, K] (lhs) or [B, K, N] (rhs) or the
//     variant with the last two blocks swapped, with B, M and N in the order
//     the result holds them and K in the order of a fixed sibling. Of the
//     variants, the one its own producer step can write without a temporary
//     wins ([B, M, K] / [B, K, N] on ties).
//  2. With every order fixed, each step keeps the largest-value subset of
//     {lhs, rhs, result} that is consistent (as the composite would) and
//     plans the rest explicitly: an operand copy into [B, M, K] / [B, K, N],
//     or the result computed into a [B, M, N] temporary and copied out. The
//     copies then run through copy_into on workspace buffers, so the
//     composite never allocates.
// A consumer then always reads its intermediate children in place; copies
// remain only where an input's layout or the output order conflicts with
// the GEMM groups (the classic TTGT transposes), or where one intermediate
// cannot serve both its producer's and its consumer's groups.
//
// Note [Broadcast batch labels]
// `ij,bjk->bik` (a matrix applied to a batch: numpy's matmul broadcasts it)
// has M = {i}, N = {b, k}: the output holds N around M, so the product
// went through a [M, N] temporary and a copy of the whole result (f64,
// b = 10000 of 16x8 by 8x16: 9.6 ms against numpy's 1.4). When the
// result's outermost non-batch labels are free labels of one operand and
// taking them out of its group makes the step copy-free (and gathers no
// operand: Note [Gathered operands]) while the group keeps a label of
// extent > 1, they run as batch
// labels instead: the other operand gets them as stride-0 axes, and the
// composite runs a batch of products (here 10000 products of 16x8 by 8x16,
// the tiled batch path). A group left without a label would make each
// product a vector times a matrix: in lm_batch_likelihood_brackets_4_4d
// four such steps (results of 128-32k elements) made the instance 28 %
// slower (9.6 against 7.6 ms) than their temporaries and copies. The
// contraction tree keeps its groups; only the layout and the execution
// plan see the broadcast.
#pragma once

#include <cstdint>
#include <vector>

#include "tenferro/base/small_vector.h"
#include "tenferro/cpu/gemm/gemm_provider.h"
#include "tenferro/einsum/contraction_tree.h"

namespace tenferro::einsum::internal {

using Strides = SmallVector<std::int64_t, 8>;

/// A tensor over labels: its axes in `labels` order with element strides.
struct LabelledView {
  LabelList labels;
  Strides strides;
};

/// What one step does besides the GEMM (Note [Layout-aware execution]).
struct StepLayout {
  /// Pre-summed operand (lhs, rhs): memory order of the reduced buffer.
  bool presum[2] = {false, false};
  LabelList presum_order[2];
  /// Operand copied into a dense buffer of this memory order.
  bool copy[2] = {false, false};
  LabelList copy_order[2];
  /// Result computed into a dense temporary of this order, then copied out.
  bool temp = false;
  LabelList temp_order;
  /// Note [Broadcast batch labels]: free labels of one operand run as batch
  /// labels, with stride 0 in the operand `broadcast_side` (0: lhs, 1: rhs)
  /// that lacks them.
  LabelList broadcast;
  int broadcast_side = -1;
};

/// The chosen layouts of a whole tree.
struct TreeLayout {
  /// Per node: inputs have their view (labels = NetworkOperand::labels,
  /// strides of the row-major input with diagonals summed); intermediates
  /// list their memory order with row-major strides.
  std::vector<LabelledView> nodes;
  std::vector<StepLayout> steps;
};

/// Runs the pass. `strides` is the GEMM provider's layout support.
TreeLayout plan_layouts(const ContractionTree& tree, cpu::GemmStrideSupport strides);

/// Whether step `s` is a broadcast product (Note [Broadcast products] in
/// cpu/gemm/dot_general.h): no contracted label and free labels on at most
/// one side, extent-1 labels aside. The composite runs such a step as one
/// strided elementwise loop, whatever the three layouts.
bool is_broadcast_step(const Network& net, const ContractionStep& s);

/// Row-major strides of a dense buffer whose memory order is `order`,
/// reported in `logical` axis order (a permutation of, or subset-free equal
/// set to, `order`).
Strides dense_strides(const Network& network, const LabelList& order, const LabelList& logical);

/// Strides of `view` rearranged to the axis order `logical` (same labels).
Strides strides_in_order(const LabelledView& view, const LabelList& logical);

}  // namespace tenferro::einsum::internal
