// The reference-evaluator runtime engine (tenferro/testing/reference_engine.h).
#include "tenferro/testing/reference_engine.h"

#include <cstring>
#include <vector>

#include "tenferro/base/assert.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/engine_executor.h"
#include "tenferro/runtime/spi/event_domain.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/testing/reference_evaluator.h"

namespace tenferro::testing {

namespace {

// A contiguous copy of a borrowed view.
Result<Tensor> to_tensor(const TensorView& view) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(view.shape, view.dtype));
  if (t.numel() > 0) tenferro::internal::copy_to_contiguous(view, t.data());
  return t;
}

// Writes contiguous `src` into the (any-strided) view `dst`.
void write_strided(const Tensor& src, const TensorView& dst) {
  const std::size_t size = dtype_size(dst.dtype);
  const auto rank = static_cast<std::size_t>(dst.rank());
  const std::int64_t n = dst.numel();
  std::vector<std::int64_t> index(rank, 0);
  const auto* from = static_cast<const char*>(src.data());
  for (std::int64_t i = 0; i < n; ++i) {
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
  explicit ReferenceFamily(std::shared_ptr<ReferenceEngineStats> stats) : stats_(std::move(stats)) {}
  std::string_view name() const noexcept override { return "reference"; }
  bool reproducible() const noexcept override { return true; }
  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature&) const override {
    runtime::PreparedKernel kernel;
    kernel.reproducible = true;
    return runtime::PrepareCapability::prepared(std::move(kernel));
  }
  Status run(const runtime::OperationRequest& request, runtime::ErasedExecutionContext) const override {
    ++stats_->operations;
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

 private:
  std::shared_ptr<ReferenceEngineStats> stats_;
};

class ReferenceLayout final : public runtime::LayoutRuntime {
 public:
  explicit ReferenceLayout(std::shared_ptr<ReferenceEngineStats> stats) : stats_(std::move(stats)) {}
  std::string_view name() const noexcept override { return "reference.layout"; }
  Result<runtime::PrepareCapability> prepare_copy(const runtime::OperandSignature&, const runtime::OperandSignature&,
                                                  runtime::ResolvedPlacement) const override {
    return runtime::PrepareCapability::prepared();
  }
  Status copy(const TensorView& src, const TensorView& dst, const runtime::ProviderPlan*,
              runtime::ErasedExecutionContext) const override {
    ++stats_->copies;
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, to_tensor(src));
    write_strided(t, dst);
    return ok_status();
  }

 private:
  std::shared_ptr<ReferenceEngineStats> stats_;
};

}  // namespace

runtime::EngineRegistration reference_engine_registration(EngineId id, std::shared_ptr<ReferenceEngineStats> stats) {
  if (!stats) stats = std::make_shared<ReferenceEngineStats>();
  runtime::EngineRegistration r;
  r.metadata.id = id;
  r.metadata.name = "reference";
  r.metadata.hardware = runtime::HardwareClass::kReference;
  r.capabilities.elementwise = std::make_shared<ReferenceFamily<runtime::ElementwiseRuntime>>(stats);
  r.capabilities.reduction = std::make_shared<ReferenceFamily<runtime::ReductionRuntime>>(stats);
  r.capabilities.indexing = std::make_shared<ReferenceFamily<runtime::IndexingRuntime>>(stats);
  r.capabilities.dot_general = std::make_shared<ReferenceFamily<runtime::DotGeneralRuntime>>(stats);
  r.capabilities.layout = std::make_shared<ReferenceLayout>(stats);
  auto executor = std::make_shared<runtime::InlineEngineExecutor>();
  r.executor = executor;
  r.event_driver = runtime::make_cpu_immediate_event_driver(executor);
  return r;
}

runtime::Runtime make_inline_extension_runtime(runtime::ExtensionModule module) {
  runtime::RuntimeBuilder builder;
  runtime::EngineRegistration r;
  r.metadata.id = EngineId(1);
  r.metadata.name = "test-cpu";
  auto executor = std::make_shared<runtime::InlineEngineExecutor>();
  r.event_driver = runtime::make_cpu_immediate_event_driver(executor);
  r.executor = std::move(executor);
  builder.add_engine(std::move(r));
  builder.add_extension_module(std::move(module));
  Result<runtime::Runtime> rt = builder.build();
  TENFERRO_CHECK(rt.ok());  // a test's own module that does not install is a bug in the test
  return std::move(rt).value();
}

Result<runtime::Runtime> make_reference_runtime(std::shared_ptr<ReferenceEngineStats> stats) {
  runtime::RuntimeBuilder builder;
  builder.add_engine(reference_engine_registration(EngineId(1), std::move(stats)));
  return builder.build();
}

}  // namespace tenferro::testing
