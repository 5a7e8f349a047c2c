// The batching transform: a program over one example turned into the same
// program over a batch of them (jax.vmap's transform), for tenferro.vmap
// and the batched Jacobians of the AD layer.
//
// Note [Batching transform]
// batch_program(p, batched, b) emits every operation of `p` again, in
// order. An input marked in `batched` carries one more leading axis of
// extent b; a value computed from such an input carries it too (it is
// "batched"), the others are computed once, as in `p`. An operation whose
// operands are all unbatched is copied. Otherwise each family has its rule:
//
// - elementwise ops (compare, select, convert, clamp included): unbatched
//   operands are broadcast along the new axis; same attributes;
// - data movement (broadcast_in_dim, reshape, transpose, slice, reverse,
//   pad, concatenate) and reductions, scans, sorts and arg-reductions: the
//   same op with every axis of its attributes moved past the new one
//   (concatenate and pad broadcast an unbatched operand; pad's padding
//   value must be unbatched); gather with a batched operand and unbatched
//   indices gains a full offset dimension in front;
// - gathers and scatters with batched indices, scatters with any batched
//   operand, dynamic slices: index vectors led by the example's number
//   (Note [Batched indices] in batching.cpp);
// - dot_general: with both operands batched the new axis is one more batch
//   dimension (the first); with one, a free dimension of that operand,
//   moved to the front by a transpose when it does not land there;
// - extension ops: ExtensionOp::batched (einsum: a new label, linalg: the
//   same op over all-batched operands, FFT: axes moved); an op without a
//   form for the given flags is asked again with every operand broadcast.
//
// Every output of the result is batched (an output that does not depend on
// a batched input is broadcast). What has no rule -- effectful operations,
// a pad with a batched padding value, an extension without a batched form,
// a dynamic_update_slice of symbolic extents with batched starts -- is
// kUnsupported naming the operation: callers (tenferro.vmap) then run the
// unbatched program once per example.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::compiler {

/// `program` over a batch of `batch_size` examples (Note [Batching
/// transform]): the same inputs, those with `batched[i]` set with a leading
/// axis of extent `batch_size`, and every output with that leading axis.
/// kInvalidArgument when `batched` does not have one flag per input or
/// `batch_size` < 0; kUnsupported for an operation without a rule. With
/// `varying`, it gets one flag per output: whether it depends on a batched
/// input (the others are the same for every example, broadcast).
Result<std::shared_ptr<const program::SemanticProgram>> batch_program(const program::SemanticProgram& program,
                                                                      std::span<const bool> batched,
                                                                      std::int64_t batch_size,
                                                                      std::vector<bool>* varying = nullptr);

}  // namespace tenferro::compiler
