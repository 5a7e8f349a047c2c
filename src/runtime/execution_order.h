// Internal: the order in which prepare plans (and a run executes) the
// operations of a program (Note [Execution order]).
#pragma once

#include <vector>

#include "tenferro/program/semantic_program.h"

namespace tenferro::runtime::internal {

// Note [Execution order]
// A frozen program lists its operations in canonical order: a depth-first
// post-order from the outputs (Note [Canonical form and fingerprint]). That
// order is part of the program's identity, not a good schedule: a program
// whose first output needs a long chain (a reverse-mode gradient: the
// cotangent chain, then every weight gradient) runs the whole chain before
// any of the side consumers, so every chain value stays live (and leaves
// the cache) until the end.
//
// Prepare therefore plans the operations in an order of its own, greedy
// over the ready operations (all operands produced, effect predecessors
// done):
//   1. the one whose operands were touched (produced or read) most
//      recently -- its data is likely still in cache;
//   2. then one that is the last reader of a planned value -- it frees a
//      buffer;
//   3. then program order.
// Effectful operations keep their program order among themselves. For the
// 100-step chain gradient of `tenferro bench ad` this interleaves each
// weight gradient with the chain step that produced its cotangent, and the
// buffer plan keeps two chain values instead of a hundred.
//
// Each pick is followed by a partner when one is ready: the best ready
// operation (by the same keys) of the same kind, pure, and either an
// extension or a dot_general -- operations that carry work estimates.
// Being ready before the pick ran, the partner does not depend on it, so
// the two can form a concurrent group (Note [Concurrent groups]). A
// gradient of a linear chain thereby alternates between the forward chain
// and the cotangent chain, which needs only the cotangent and the weights,
// and on a domain of two threads both run side by side. Elementwise
// operations are never paired: they run as before. The order is a
// deterministic function of the program.
std::vector<program::OperationId> execution_order(const program::SemanticProgram& program);

}  // namespace tenferro::runtime::internal
