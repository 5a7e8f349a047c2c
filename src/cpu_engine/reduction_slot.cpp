// The CPU engine's ReductionRuntime: reduce_sum / prod / max / min over any
// axes and argmax / argmin over the cpu/kernels reductions, and the
// along-axis ops (cumsum, cumprod, sort, argsort), which share the family.
#include "cpu_engine/engine_slots.h"
#include "tenferro/cpu/kernels/along_axis.h"
#include "tenferro/cpu/kernels/reduction.h"
#include "tenferro/program/core_op.h"

namespace tenferro::cpu::internal {
namespace {

using program::CoreSemanticOp;

constexpr std::string_view kReductionName = "cpu.reduction";

class CpuReductionRuntime final : public runtime::ReductionRuntime {
 public:
  std::string_view name() const noexcept override { return kReductionName; }
  // Results do not depend on the thread count (reduction.h).
  bool reproducible() const noexcept override { return true; }
  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& signature) const override {
    return prepare_in_family(signature, runtime::OpFamily::kReduction, /*reproducible=*/true, /*in_place_ok=*/false);
  }

  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext context) const override {
    TENFERRO_ASSIGN_OR_RETURN(const CpuEngineContext* engine, engine_context(context, kReductionName));
    TENFERRO_TRY(check_request(request, runtime::OpFamily::kReduction, kReductionName));
    const ParallelContext& ctx = *engine->parallel;
    const TensorView& x = request.inputs[0];
    switch (request.op) {
      case CoreSemanticOp::kReduceSum:
        return reduce(ReduceOp::kSum, x, request.attributes_as<program::ReduceAttributes>().axes, request.output, ctx);
      case CoreSemanticOp::kReduceProd:
        return reduce(ReduceOp::kProd, x, request.attributes_as<program::ReduceAttributes>().axes, request.output, ctx);
      case CoreSemanticOp::kReduceMax:
        return reduce(ReduceOp::kMax, x, request.attributes_as<program::ReduceAttributes>().axes, request.output, ctx);
      case CoreSemanticOp::kReduceMin:
        return reduce(ReduceOp::kMin, x, request.attributes_as<program::ReduceAttributes>().axes, request.output, ctx);
      case CoreSemanticOp::kArgmax:
        return arg_reduce(ArgReduceOp::kArgmax, x, request.attributes_as<program::ArgReduceAttributes>().axis,
                          request.output, ctx);
      case CoreSemanticOp::kArgmin:
        return arg_reduce(ArgReduceOp::kArgmin, x, request.attributes_as<program::ArgReduceAttributes>().axis,
                          request.output, ctx);
      case CoreSemanticOp::kCumsum:
      case CoreSemanticOp::kCumprod: {
        const auto& a = request.attributes_as<program::CumulativeAttributes>();
        return cumulative(request.op == CoreSemanticOp::kCumsum ? CumulativeOp::kSum : CumulativeOp::kProd, x, a.axis,
                          a.reverse, a.exclusive, request.output, ctx);
      }
      case CoreSemanticOp::kSort:
      case CoreSemanticOp::kArgsort: {
        const auto& a = request.attributes_as<program::SortAttributes>();
        return sort(request.op == CoreSemanticOp::kSort ? SortResult::kValues : SortResult::kIndices, x, a.axis,
                    a.descending, request.output, ctx);
      }
      default:
        return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "{}: no kernel for {}", kReductionName,
                          program::to_string(request.op));
    }
  }
};

}  // namespace

std::shared_ptr<runtime::ReductionRuntime> make_reduction_slot() { return std::make_shared<CpuReductionRuntime>(); }

}  // namespace tenferro::cpu::internal
