// The CPU engine's ElementwiseRuntime: unary and binary ops, compare,
// select, convert, constant and iota over the cpu/kernels functions.
#include <algorithm>
#include <array>

#include <fmt/ranges.h>

#include "cpu_engine/engine_slots.h"
#include "tenferro/cpu/kernels/creation.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/program/core_op.h"

namespace tenferro::cpu::internal {
namespace {

using program::CoreSemanticOp;
using runtime::OperationRequest;

constexpr std::string_view kElementwiseName = "cpu.elementwise";

// Note [Core op to kernel op]
// The kernels' unary and binary op lists (elementwise_ops.def) use the core
// ops' names, so the mapping is generated from that one list.
std::optional<UnaryOp> unary_kernel_op(CoreSemanticOp op) noexcept {
  switch (op) {
#define TENFERRO_UNARY_OP(name, str, domain, cost) \
  case CoreSemanticOp::k##name:                    \
    return UnaryOp::k##name;
#include "tenferro/cpu/kernels/elementwise_ops.def"
    default:
      return std::nullopt;
  }
}

std::optional<BinaryOp> binary_kernel_op(CoreSemanticOp op) noexcept {
  switch (op) {
#define TENFERRO_BINARY_OP(name, str, domain, cost) \
  case CoreSemanticOp::k##name:                     \
    return BinaryOp::k##name;
#include "tenferro/cpu/kernels/elementwise_ops.def"
    default:
      return std::nullopt;
  }
}

CompareDirection kernel_direction(program::ComparisonDirection direction) noexcept {
  switch (direction) {
    case program::ComparisonDirection::kEq:
      return CompareDirection::kEq;
    case program::ComparisonDirection::kNe:
      return CompareDirection::kNe;
    case program::ComparisonDirection::kLt:
      return CompareDirection::kLt;
    case program::ComparisonDirection::kLe:
      return CompareDirection::kLe;
    case program::ComparisonDirection::kGt:
      return CompareDirection::kGt;
    case program::ComparisonDirection::kGe:
      return CompareDirection::kGe;
  }
  return CompareDirection::kEq;
}

// A constant: the literal's bytes as a row-major view copied into the output.
Status write_constant(const program::ConstantAttributes& attributes, const TensorView& out,
                      const ParallelContext& ctx) {
  const program::Literal& literal = attributes.literal;
  const std::span<const std::int64_t> shape = literal.shape();
  if (shape.size() != out.shape.size() || !std::equal(shape.begin(), shape.end(), out.shape.begin())) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "{}: constant expected an output of the literal's shape [{}], found [{}]", kElementwiseName,
                      fmt::join(shape, ", "), fmt::join(out.shape, ", "));
  }
  std::array<std::int64_t, 64> strides{};
  if (shape.size() > strides.size()) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "{}: constant of rank {} (at most {} supported)",
                      kElementwiseName, shape.size(), strides.size());
  }
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  TensorView src;
  src.data = const_cast<std::byte*>(literal.bytes().data());  // read only: copy_into never writes src
  src.shape = shape;
  src.strides = std::span<const std::int64_t>(strides.data(), shape.size());
  src.dtype = literal.dtype();
  return copy_into(src, out, ctx);
}

class CpuElementwiseRuntime final : public runtime::ElementwiseRuntime {
 public:
  std::string_view name() const noexcept override { return kElementwiseName; }
  bool reproducible() const noexcept override { return true; }
  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& signature) const override {
    // The kernels allow the output to be identical to operand 0 when the
    // element sizes match (the runtime offers it only for equal dtypes).
    const bool has_operands = !signature.operands.empty();
    return prepare_in_family(signature, runtime::OpFamily::kElementwise, /*reproducible=*/true, has_operands);
  }

  Status run(const OperationRequest& request, runtime::ErasedExecutionContext context) const override {
    TENFERRO_ASSIGN_OR_RETURN(const CpuEngineContext* engine, engine_context(context, kElementwiseName));
    TENFERRO_TRY(check_request(request, runtime::OpFamily::kElementwise, kElementwiseName));
    const ParallelContext& ctx = *engine->parallel;
    const std::span<const TensorView> in = request.inputs;
    switch (request.op) {
      case CoreSemanticOp::kCompare:
        return compare(kernel_direction(request.attributes_as<program::CompareAttributes>().direction), in[0], in[1],
                       request.output, ctx);
      case CoreSemanticOp::kSelect:
        return select(in[0], in[1], in[2], request.output, ctx);
      case CoreSemanticOp::kClamp:
        return clamp(in[0], in[1], in[2], request.output, ctx);
      case CoreSemanticOp::kConvert:
        return convert(in[0], request.output, ctx);
      case CoreSemanticOp::kConstant:
        return write_constant(request.attributes_as<program::ConstantAttributes>(), request.output, ctx);
      case CoreSemanticOp::kIota:
        return iota(request.output, request.attributes_as<program::IotaAttributes>().axis, ctx);
      case CoreSemanticOp::kRngPhilox: {
        const auto& a = request.attributes_as<program::RandomAttributes>();
        return random_philox(request.output, a.key, a.counter,
                             a.distribution == program::RandomDistribution::kNormal ? RandomDistribution::kNormal
                                                                                    : RandomDistribution::kUniform,
                             ctx);
      }
      default:
        break;
    }
    if (const std::optional<BinaryOp> op = binary_kernel_op(request.op)) {
      return binary(*op, in[0], in[1], request.output, ctx);
    }
    if (const std::optional<UnaryOp> op = unary_kernel_op(request.op)) return unary(*op, in[0], request.output, ctx);
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "{}: no kernel for {}", kElementwiseName,
                      program::to_string(request.op));
  }
};

}  // namespace

std::shared_ptr<runtime::ElementwiseRuntime> make_elementwise_slot() {
  return std::make_shared<CpuElementwiseRuntime>();
}

}  // namespace tenferro::cpu::internal
