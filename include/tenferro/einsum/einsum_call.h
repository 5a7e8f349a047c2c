// The einsum entry points for users: eager calls on a runtime's eager
// context and emission into a program for the graph path. Both carry one
// EinsumOp; which engine runs it is the runtime's decision (a native einsum
// engine as one operation, or core lowering when none is installed).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {

/// Eager einsum on `context` (docs/runtime.md, "Eager contexts"):
/// with a native engine installed for the context's engine this is one
/// fast-path call that builds no program; otherwise the runtime promotes it
/// to a prepared graph of the core lowering. Reuse `op` across calls to skip
/// parsing. Operands of different dtypes are converted to their common
/// dtype first (Note [Eager dtype promotion] in runtime/eager.h). Errors as
/// EinsumOp::infer_metadata and the engine's prepare/run.
Result<Tensor> einsum(runtime::EagerContext& context, const std::shared_ptr<const EinsumOp>& op,
                      std::span<const Tensor> inputs);
/// Parses `subscripts` (InheritRuntimeDefault policy; the context remembers
/// the op of a repeated text, Note [Ops from text] in runtime/eager.cpp) and
/// calls the above.
Result<Tensor> einsum(runtime::EagerContext& context, std::string_view subscripts, std::span<const Tensor> inputs);

/// An einsum with the stride-0 axes of its broadcast operands dropped (Note
/// [Broadcast operands] in einsum_call.cpp): `op` over `operands` (views of
/// the inputs), whose result times the product of the dropped summed
/// extents (`scale`, in floating point, for real and complex results: 2^32
/// x 2^32 terms sum to 2^64, which no int64 holds; `wrapped_scale`, modulo
/// 2^64, for integers, which wrap as numpy's sums do) is the original
/// einsum's.
struct BroadcastRewrite {
  std::shared_ptr<const EinsumOp> op;
  std::vector<Tensor> operands;
  double scale = 1.0;
  std::uint64_t wrapped_scale = 1;
};

/// The rewrite einsum() applies, for callers that run the contraction
/// themselves (Python's sliced einsum): nullopt when no operand has a
/// stride-0 axis, no axis is dropped, the subscripts are left as written
/// ("...", a nested order, bool or non-host operands), or the inputs do not
/// bind to `op` (running `op` itself then reports it, naming the caller's
/// subscripts). `inputs` share one dtype. The operands borrow the inputs'
/// storage. Thread-safe.
Result<std::optional<BroadcastRewrite>> drop_broadcast_labels(const EinsumOp& op, std::span<const Tensor> inputs);
/// out *= r's scale, in place; `out` is a dense result nothing else shares.
void scale_by_dropped_extents(Tensor& out, const BroadcastRewrite& r);

/// Emits `op` applied to `operands` into `builder`; returns its result.
Result<program::ProgramValue> emit_einsum(program::ProgramBuilder& builder, const std::shared_ptr<const EinsumOp>& op,
                                          std::span<const program::ProgramValue> operands);

}  // namespace tenferro::einsum
