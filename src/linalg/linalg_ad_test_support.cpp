// The reference-evaluator runtime of the linalg AD tests
// (linalg_ad_test_support.h).
#include "linalg/linalg_ad_test_support.h"

#include <cstring>
#include <vector>

#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/engine.h"
#include "tenferro/runtime/engine_executor.h"
#include "tenferro/runtime/event_domain.h"
#include "tenferro/runtime/providers.h"
#include "tenferro/testing/reference_evaluator.h"

namespace tenferro::linalg::testing {

namespace {

Result<Tensor> to_tensor(const TensorView& view) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(view.shape, view.dtype));
  if (t.numel() > 0) tenferro::internal::copy_to_contiguous(view, t.data());
  return t;
}

void write_strided(const Tensor& src, const TensorView& dst) {
  const std::size_t size = dtype_size(dst.dtype);
  const auto rank = static_cast<std::size_t>(dst.rank());
  std::vector<std::int64_t> index(rank, 0);
  const auto* from = static_cast<const char*>(src.data());
  for (std::int64_t i = 0; i < dst.numel(); ++i) {
    std::int64_t offset = 0;
    for (std::size_t a = 0; a < rank; ++a) offset += index[a] * dst.strides[a];
    std::memcpy(static_cast<char*>(dst.data) + offset * static_cast<std::int64_t>(size),
                from + i * static_cast<std::int64_t>(size), size);
    for (std::size_t a = rank; a-- > 0;) {
      if (++index[a] < dst.shape[a]) break;
      index[a] = 0;
    }
  }
}

template <class Family>
class ReferenceFamily final : public Family {
 public:
  std::string_view name() const noexcept override { return "reference"; }
  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature&) const override {
    return runtime::PrepareCapability::prepared();
  }
  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext) const override {
    program::ProgramBuilder builder(program::ConstantPolicy{std::size_t{1} << 40});
    std::vector<program::ProgramValue> operands;
    std::vector<Tensor> inputs;
    for (const TensorView& v : request.inputs) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor t, to_tensor(v));
      TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue p,
                                builder.add_input(v.dtype, program::symbolic_shape(v.shape).span()));
      operands.push_back(p);
      inputs.push_back(std::move(t));
    }
    TENFERRO_ASSIGN_OR_RETURN(
        program::ProgramValue y,
        builder.emit(request.op, std::span<const program::ProgramValue>(operands), *request.attributes));
    TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, builder.freeze({y}));
    TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> out, tenferro::testing::evaluate_reference(*frozen.program, inputs));
    write_strided(out[0], request.output);
    return ok_status();
  }
};

class ReferenceLayout final : public runtime::LayoutRuntime {
 public:
  std::string_view name() const noexcept override { return "reference.layout"; }
  Result<runtime::PrepareCapability> prepare_copy(const runtime::OperandSignature&, const runtime::OperandSignature&,
                                                  runtime::ResolvedPlacement) const override {
    return runtime::PrepareCapability::prepared();
  }
  Status copy(const TensorView& src, const TensorView& dst, const runtime::ProviderPlan*,
              runtime::ErasedExecutionContext) const override {
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, to_tensor(src));
    write_strided(t, dst);
    return ok_status();
  }
};

}  // namespace

Result<runtime::Runtime> make_reference_runtime(std::shared_ptr<CpuLinalgEngine> linalg) {
  runtime::EngineRegistration r;
  r.metadata.id = EngineId(1);
  r.metadata.name = "reference";
  r.metadata.hardware = runtime::HardwareClass::kReference;
  r.capabilities.elementwise = std::make_shared<ReferenceFamily<runtime::ElementwiseRuntime>>();
  r.capabilities.reduction = std::make_shared<ReferenceFamily<runtime::ReductionRuntime>>();
  r.capabilities.indexing = std::make_shared<ReferenceFamily<runtime::IndexingRuntime>>();
  r.capabilities.dot_general = std::make_shared<ReferenceFamily<runtime::DotGeneralRuntime>>();
  r.capabilities.layout = std::make_shared<ReferenceLayout>();
  auto executor = std::make_shared<runtime::InlineEngineExecutor>();
  r.executor = executor;
  r.event_driver = runtime::make_cpu_immediate_event_driver(executor);
  runtime::RuntimeBuilder builder;
  builder.add_engine(std::move(r));
  builder.add_extension_module(cpu_extension_module(EngineId(1), std::move(linalg)));
  return builder.build();
}

}  // namespace tenferro::linalg::testing
