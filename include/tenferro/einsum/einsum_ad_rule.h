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
#pragma once

#include <memory>

#include "tenferro/ad/ad_rule.h"

namespace tenferro::einsum {

/// The einsum family's AD rule (immutable, thread-safe, shareable between
/// AdContexts).
std::shared_ptr<const ad::ExtensionAdRule> einsum_ad_rule();

}  // namespace tenferro::einsum
