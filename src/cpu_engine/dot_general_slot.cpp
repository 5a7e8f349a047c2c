// The CPU engine's DotGeneralRuntime (the engine-owned composite: TTGT over
// the chosen GEMM provider, Note [TTGT without transposes]) and its
// LayoutRuntime (copy_into).
#include <fmt/format.h>

#include "cpu_engine/engine_slots.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/program/core_op.h"

namespace tenferro::cpu::internal {
namespace {

using program::CoreSemanticOp;

constexpr std::string_view kDotName = "cpu.dot_general";
constexpr std::string_view kLayoutName = "cpu.layout";

class CpuDotGeneralRuntime final : public runtime::DotGeneralRuntime {
 public:
  explicit CpuDotGeneralRuntime(std::shared_ptr<const DotGeneralComposite> composite)
      : composite_(std::move(composite)) {}

  std::string_view name() const noexcept override { return kDotName; }
  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& signature) const override {
    if (signature.op == CoreSemanticOp::kDotGeneral && !signature.operands.empty()) {
      const DType dtype = signature.operands[0].dtype;
      // Integers run the composite's plain loops; inexact dtypes need the
      // GEMM provider.
      if (!is_integer(dtype) && !composite_->gemm_provider().support().supports(dtype)) {
        return runtime::PrepareCapability::unsupported(
            fmt::format("the {} GEMM provider does not compute {}", composite_->gemm_provider().name(), dtype));
      }
    }
    // Parallel GEMM splits are not claimed to be bitwise reproducible.
    return prepare_in_family(signature, runtime::OpFamily::kDotGeneral, /*reproducible=*/false,
                             /*in_place_ok=*/false);
  }

  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext context) const override {
    TENFERRO_ASSIGN_OR_RETURN(const CpuEngineContext* engine, engine_context(context, kDotName));
    TENFERRO_TRY(check_request(request, runtime::OpFamily::kDotGeneral, kDotName));
    const auto& a = request.attributes_as<program::DotGeneralAttributes>();
    DotGeneralDims dims;  // inline storage up to rank 6: no allocation
    dims.lhs_batch = a.lhs_batch;
    dims.rhs_batch = a.rhs_batch;
    dims.lhs_contract = a.lhs_contract;
    dims.rhs_contract = a.rhs_contract;
    return composite_->dot_general_into(request.inputs[0], request.inputs[1], dims, request.output, *engine->parallel,
                                        nullptr, engine->allocator != nullptr ? *engine->allocator : no_allocator_);
  }

 private:
  std::shared_ptr<const DotGeneralComposite> composite_;
  std::shared_ptr<HostAllocator> no_allocator_;  // always null: the default heap
};

class CpuLayoutRuntime final : public runtime::LayoutRuntime {
 public:
  std::string_view name() const noexcept override { return kLayoutName; }
  bool reproducible() const noexcept override { return true; }
  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Result<runtime::PrepareCapability> prepare_copy(const runtime::OperandSignature& src,
                                                  const runtime::OperandSignature& dst,
                                                  runtime::ResolvedPlacement /*placement*/) const override {
    if (src.dtype != dst.dtype || src.rank != dst.rank) {
      return runtime::PrepareCapability::unsupported(
          fmt::format("{}: copies keep dtype and rank (found {} rank {} -> {} rank {})", kLayoutName, src.dtype,
                      src.rank, dst.dtype, dst.rank));
    }
    runtime::PreparedKernel kernel;
    kernel.reproducible = true;
    return runtime::PrepareCapability::prepared(std::move(kernel));
  }

  Status copy(const TensorView& src, const TensorView& dst, const runtime::ProviderPlan* /*plan*/,
              runtime::ErasedExecutionContext context) const override {
    TENFERRO_ASSIGN_OR_RETURN(const CpuEngineContext* engine, engine_context(context, kLayoutName));
    return copy_into(src, dst, *engine->parallel);
  }
};

}  // namespace

std::shared_ptr<runtime::DotGeneralRuntime> make_dot_general_slot(
    std::shared_ptr<const DotGeneralComposite> composite) {
  return std::make_shared<CpuDotGeneralRuntime>(std::move(composite));
}

std::shared_ptr<runtime::LayoutRuntime> make_layout_slot() { return std::make_shared<CpuLayoutRuntime>(); }

}  // namespace tenferro::cpu::internal
