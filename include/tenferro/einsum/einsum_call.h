// The einsum entry points for users: eager calls on a runtime's eager
// context and emission into a program for the graph path. Both carry one
// EinsumOp; which engine runs it is the runtime's decision (a native einsum
// engine as one operation, or core lowering when none is installed).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

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

/// Emits `op` applied to `operands` into `builder`; returns its result.
Result<program::ProgramValue> emit_einsum(program::ProgramBuilder& builder, const std::shared_ptr<const EinsumOp>& op,
                                          std::span<const program::ProgramValue> operands);

}  // namespace tenferro::einsum
