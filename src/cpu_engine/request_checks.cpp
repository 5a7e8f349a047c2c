// Checks shared by every CPU engine slot (engine_slots.h).
#include <fmt/format.h>

#include "cpu_engine/engine_slots.h"
#include "tenferro/program/core_op.h"

namespace tenferro::cpu::internal {

using program::CoreSemanticOp;
using runtime::OpFamily;

Result<const CpuEngineContext*> engine_context(runtime::ErasedExecutionContext context, std::string_view provider) {
  const CpuEngineContext* typed = context.get<CpuEngineContext>();
  if (typed == nullptr || typed->parallel == nullptr) {
    return make_error(ErrorCode::kProviderContractError, ErrorStage::kNone,
                      "{}: expected the CPU engine's execution context (CpuEngineContext), found another "
                      "engine's or an empty context",
                      provider);
  }
  return typed;
}

std::optional<DType> expected_result_dtype(CoreSemanticOp op, std::span<const DType> operands,
                                           const program::CoreAttributes& attributes) noexcept {
  const program::CoreOpInfo& info = program::core_op_info(op);
  switch (info.result_dtype) {
    case program::ResultDTypeRule::kBool:
      return DType::kBool;
    case program::ResultDTypeRule::kInt64:
      return DType::kInt64;
    case program::ResultDTypeRule::kFromAttributes:
      if (const auto* c = std::get_if<program::ConvertAttributes>(&attributes)) return c->dtype;
      if (const auto* c = std::get_if<program::ConstantAttributes>(&attributes)) return c->literal.dtype();
      if (const auto* c = std::get_if<program::IotaAttributes>(&attributes)) return c->dtype;
      if (const auto* c = std::get_if<program::RandomAttributes>(&attributes)) return c->dtype;
      return std::nullopt;
    default:
      break;
  }
  // select's data operands are 1 and 2; every other op's is operand 0.
  const std::size_t data = op == CoreSemanticOp::kSelect ? 1 : 0;
  if (operands.size() <= data) return std::nullopt;
  const DType in = operands[data];
  switch (info.result_dtype) {
    case program::ResultDTypeRule::kRealOfOperand:
      return real_dtype(in);
    case program::ResultDTypeRule::kComplexOfOperand:
      return complex_dtype(in);
    default:
      return in;
  }
}

Status check_request(const runtime::OperationRequest& request, OpFamily family, std::string_view provider) {
  const program::CoreOpInfo& info = program::core_op_info(request.op);
  if (runtime::core_op_family(request.op) != family) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: expected a {} op, found {}", provider,
                      runtime::to_string(family), info.name);
  }
  const auto count = static_cast<int>(request.inputs.size());
  if (count < info.min_operands || (info.max_operands != program::kVariadic && count > info.max_operands)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "{}: {} expected {} to {} operands, found {}",
                      provider, info.name, info.min_operands,
                      info.max_operands == program::kVariadic ? std::string("any") : std::to_string(info.max_operands),
                      count);
  }
  if (request.attributes == nullptr || request.attributes->index() != info.attributes_index) {
    return make_error(
        ErrorCode::kInvalidArgument, ErrorStage::kNone,
        "{}: {} expected its attribute struct (alternative {}), found {}", provider, info.name, info.attributes_index,
        request.attributes == nullptr ? std::string("none") : std::to_string(request.attributes->index()));
  }
  SmallVector<DType, 4> dtypes;
  for (const TensorView& v : request.inputs) dtypes.push_back(v.dtype);
  const std::optional<DType> expected =
      expected_result_dtype(request.op, std::span<const DType>(dtypes.data(), dtypes.size()), *request.attributes);
  if (!expected.has_value()) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "{}: {} is not defined for operand dtype {}",
                      provider, info.name, request.inputs.empty() ? DType::kFloat64 : request.inputs[0].dtype);
  }
  if (*expected != request.output.dtype) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "{}: {} expected a {} output, found {}", provider,
                      info.name, *expected, request.output.dtype);
  }
  return ok_status();
}

Result<runtime::PrepareCapability> prepare_in_family(const runtime::OperationSignature& signature, OpFamily family,
                                                     bool reproducible, bool in_place_ok) {
  const program::CoreOpInfo& info = program::core_op_info(signature.op);
  if (runtime::core_op_family(signature.op) != family) {
    return runtime::PrepareCapability::unsupported(
        fmt::format("{} is not a {} op", info.name, runtime::to_string(family)));
  }
  // select's predicate and the index operands of gather / scatter / dynamic
  // slices are checked by the kernels; the data operand must be in class.
  const std::size_t data = signature.op == CoreSemanticOp::kSelect ? 1 : 0;
  if (signature.operands.size() > data &&
      !program::dtype_in_class(signature.operands[data].dtype, info.operand_dtypes)) {
    return runtime::PrepareCapability::unsupported(fmt::format("{} is not defined for {} (expected a {} dtype)",
                                                               info.name, signature.operands[data].dtype,
                                                               program::to_string(info.operand_dtypes)));
  }
  runtime::PreparedKernel kernel;
  kernel.reproducible = reproducible;
  kernel.in_place_ok = in_place_ok;
  return runtime::PrepareCapability::prepared(std::move(kernel));
}

}  // namespace tenferro::cpu::internal
