// The CPU engine's capability slots (one per core family) and the checks
// every slot shares: recovering the typed context and validating a request's
// operand count, attributes and output dtype before a kernel runs.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/runtime/spi/providers.h"

namespace tenferro::cpu::internal {

std::shared_ptr<runtime::ElementwiseRuntime> make_elementwise_slot();
std::shared_ptr<runtime::ReductionRuntime> make_reduction_slot();
std::shared_ptr<runtime::IndexingRuntime> make_indexing_slot();
std::shared_ptr<runtime::DotGeneralRuntime> make_dot_general_slot(std::shared_ptr<const DotGeneralComposite> composite);
std::shared_ptr<runtime::LayoutRuntime> make_layout_slot();

/// The CPU engine's context, or a kProviderContractError naming `provider`
/// when the runtime passed another engine's context (one comparison).
Result<const CpuEngineContext*> engine_context(runtime::ErasedExecutionContext context, std::string_view provider);

/// The result dtype `op` gives for these operand dtypes and attributes, or
/// nullopt when the operands are missing.
std::optional<DType> expected_result_dtype(program::CoreSemanticOp op, std::span<const DType> operands,
                                           const program::CoreAttributes& attributes) noexcept;

/// Checks the parts of `request` the kernels cannot see: `op` belongs to
/// `family`, the operand count is within the op's arity, the attributes are
/// the op's alternative and the output dtype is the op's result dtype.
/// Errors: kInvalidArgument, kDTypeMismatch (stage kNone), naming
/// `provider` and what was expected and found.
Status check_request(const runtime::OperationRequest& request, runtime::OpFamily family, std::string_view provider);

/// The common prepare() answer of a slot: kUnsupported for ops outside
/// `family` or with operand dtypes outside the op's class; otherwise
/// Prepared with the given flags.
Result<runtime::PrepareCapability> prepare_in_family(const runtime::OperationSignature& signature,
                                                     runtime::OpFamily family, bool reproducible, bool in_place_ok);

}  // namespace tenferro::cpu::internal
