// The AD rule of the einsum family: install it in an AdContext to
// differentiate programs (and GradientTape recordings) that contain
// EinsumOps without going through their core lowering.
//
// Note [The derivative of an einsum is an einsum]
// An einsum is multilinear in its operands, so
//  - linearize: d einsum(x_1..x_n) = sum over operands k with a tangent of
//    the same einsum with dx_k in position k (one linear einsum node per
//    active operand, summed);
//  - transpose of the node linear in operand k: ct_k = einsum(ct, conj(x_j)
//    for j != k) with operand k's subscripts as the output, where
//      * a label repeated in operand k (a diagonal) gets a fresh label for
//        every further occurrence and an identity matrix delta(l, l') as an
//        extra operand, which writes the cotangent onto the diagonal;
//      * a label of operand k that occurs in neither the cotangent nor any
//        other operand (summed out by the primal einsum) gets a ones vector
//        as an extra operand, which broadcasts the cotangent along it;
//      * an axis of operand k of extent 1 broadcast against a larger extent
//        elsewhere is summed (left out of the output) and restored with a
//        reshape; broadcast axes of the other operands get fresh labels.
// So reverse mode of an einsum without diagonals, summed-out labels or
// broadcasting emits einsums only; the derived einsums inherit the runtime's
// default planning policy (their operand count differs from the primal's).
// Conjugation follows Note [Complex convention] in ad/ad_context.h.
//
// Note [Pairwise einsums for reverse mode]
// That rule transposes an einsum of N operands into N einsums of N
// operands, one per operand, each costing about what the primal costs: the
// gradient of a network of N tensors costs about N primals (einsum_vjp of
// a chain of ten 100 x 100 matrices took 11.4 times its forward). Reverse
// mode through the planned contraction tree costs two binary products per
// step instead, about twice the primal, and the backward reuses the
// forward's intermediates. pairwise_steps() gives the planned steps as
// two-operand EinsumOps; the rule's expansion() puts them in the place of
// an einsum of three or more operands of exact shapes and one dtype in
// every AD transform (primal pass included), and ad::GradientTape (so the
// Python tape too) records them as it runs them (Note [Expansions on the
// tape]); the rule above then only meets binary einsums
// (and N-ary ones with symbolic extents).
// A broadcast axis (extent 1 against a larger extent) gets a label of its
// own in its operand's step, which sums it away: the value does not depend
// on the broadcast label, and the transpose restores the axis.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "tenferro/ad/ad_rule.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/planner.h"

namespace tenferro::einsum {

/// The einsum family's AD rule (immutable, thread-safe, shareable between
/// AdContexts).
std::shared_ptr<const ad::ExtensionAdRule> einsum_ad_rule();

/// One step of pairwise_steps(): `op` (two operands) applied to nodes `lhs`
/// and `rhs`. Nodes 0..N-1 are the einsum's operands, node N + s the result
/// of step s.
struct PairwiseStep {
  std::shared_ptr<const EinsumOp> op;
  std::int32_t lhs = 0;
  std::int32_t rhs = 0;
};

/// `op` over operands of `shapes` and `dtype`, planned with the op's policy
/// (the planner's default when it inherits the runtime's), as two-operand
/// einsums along the contraction tree (Note [Pairwise einsums
/// for reverse mode]); the last step's result is the einsum's. Empty for
/// fewer than three operands. Errors as EinsumOp::bind and plan().
Result<std::vector<PairwiseStep>> pairwise_steps(const EinsumOp& op, std::span<const IntArrayRef> shapes, DType dtype);

}  // namespace tenferro::einsum
