// The CPU engine's IndexingRuntime: reverse, concatenate, pad, dynamic_slice,
// dynamic_update_slice, gather and scatter over the cpu/kernels functions.
#include <algorithm>

#include <fmt/ranges.h>

#include "cpu_engine/engine_slots.h"
#include "tenferro/cpu/kernels/indexing.h"
#include "tenferro/program/core_op.h"

namespace tenferro::cpu::internal {
namespace {

using program::CoreSemanticOp;

constexpr std::string_view kIndexingName = "cpu.indexing";

// The gather kernel takes its window extents from the output; the exact
// slice sizes of the attributes must agree with them (symbolic ones were
// resolved when the output shape was).
Status check_slice_sizes(const program::GatherAttributes& a, const TensorView& out) {
  std::size_t window = 0;
  for (std::size_t d = 0; d < a.slice_sizes.size(); ++d) {
    if (std::find(a.collapsed_slice_dims.begin(), a.collapsed_slice_dims.end(), static_cast<std::int64_t>(d)) !=
        a.collapsed_slice_dims.end())
      continue;
    if (window >= a.offset_dims.size()) break;
    const auto axis = static_cast<std::size_t>(a.offset_dims[window++]);
    const std::optional<std::int64_t> size = a.slice_sizes[d].exact_value();
    if (size && axis < out.shape.size() && *size != out.shape[axis]) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "{}: gather slice size {} of operand axis {} does not match output axis {} extent {}",
                        kIndexingName, *size, d, axis, out.shape[axis]);
    }
  }
  return ok_status();
}

class CpuIndexingRuntime final : public runtime::IndexingRuntime {
 public:
  std::string_view name() const noexcept override { return kIndexingName; }
  // scatter is not (duplicate indices: an unspecified write wins, or a
  // parallel accumulation order); every other op is.
  bool reproducible() const noexcept override { return false; }
  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& signature) const override {
    // scatter and dynamic_update_slice may update operand 0 in place.
    const bool in_place =
        signature.op == CoreSemanticOp::kScatter || signature.op == CoreSemanticOp::kDynamicUpdateSlice;
    return prepare_in_family(signature, runtime::OpFamily::kIndexing,
                             /*reproducible=*/signature.op != CoreSemanticOp::kScatter, in_place);
  }

  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext context) const override {
    TENFERRO_ASSIGN_OR_RETURN(const CpuEngineContext* engine, engine_context(context, kIndexingName));
    TENFERRO_TRY(check_request(request, runtime::OpFamily::kIndexing, kIndexingName));
    const ParallelContext& ctx = *engine->parallel;
    const std::span<const TensorView> in = request.inputs;
    const TensorView& out = request.output;
    switch (request.op) {
      case CoreSemanticOp::kReverse:
        return reverse(in[0], request.attributes_as<program::ReverseAttributes>().axes, out, ctx);
      case CoreSemanticOp::kConcatenate:
        return concatenate(in, request.attributes_as<program::ConcatenateAttributes>().axis, out, ctx);
      case CoreSemanticOp::kPad: {
        const auto& a = request.attributes_as<program::PadAttributes>();
        return pad(in[0], in[1], a.low, a.high, a.interior, out, ctx);
      }
      case CoreSemanticOp::kDynamicSlice: {
        const Dims& sizes = request.attributes_as<program::DynamicSliceAttributes>().sizes;
        if (!std::equal(sizes.begin(), sizes.end(), out.shape.begin(), out.shape.end())) {
          return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                            "{}: dynamic_slice expected an output of the slice sizes [{}], found [{}]", kIndexingName,
                            fmt::join(sizes, ", "), fmt::join(out.shape, ", "));
        }
        Dims starts;
        TENFERRO_TRY(read_start_indices(in.subspan(1), starts));
        return dynamic_slice(in[0], starts, out, ctx);
      }
      case CoreSemanticOp::kDynamicUpdateSlice: {
        Dims starts;
        TENFERRO_TRY(read_start_indices(in.subspan(2), starts));
        return dynamic_update_slice(in[0], in[1], starts, out, ctx);
      }
      case CoreSemanticOp::kGather: {
        const auto& a = request.attributes_as<program::GatherAttributes>();
        TENFERRO_TRY(check_slice_sizes(a, out));
        return gather(in[0], in[1], {a.offset_dims, a.collapsed_slice_dims, a.start_index_map, a.index_vector_dim}, out,
                      ctx);
      }
      case CoreSemanticOp::kScatter: {
        const auto& a = request.attributes_as<program::ScatterAttributes>();
        const ScatterCombine combine =
            a.combine == program::ScatterCombine::kAdd ? ScatterCombine::kAdd : ScatterCombine::kReplace;
        return scatter(
            in[0], in[1], in[2],
            {a.update_window_dims, a.inserted_window_dims, a.scatter_dims_to_operand_dims, a.index_vector_dim}, combine,
            out, ctx);
      }
      default:
        return make_error(ErrorCode::kUnsupported, ErrorStage::kNone, "{}: no kernel for {}", kIndexingName,
                          program::to_string(request.op));
    }
  }
};

}  // namespace

std::shared_ptr<runtime::IndexingRuntime> make_indexing_slot() { return std::make_shared<CpuIndexingRuntime>(); }

}  // namespace tenferro::cpu::internal
