// Test support for the native engine tests (not part of the library): a
// CpuEinsumExecutor over the native GEMM, Tensor <-> Dense conversion, and a
// runtime whose test engine has real core providers (the dot_general
// composite, cpu::reduce, cpu::copy_into) so the einsum core lowering can run
// through the same runtime as the native engine, which may be installed or
// left out.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "einsum/einsum_test_support.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu/kernels/reduction.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/spi/event_domain.h"

namespace tenferro::einsum::test_support {

inline std::shared_ptr<const cpu::DotGeneralComposite> native_composite() {
  Result<std::shared_ptr<cpu::NativeGemmProvider>> gemm = cpu::NativeGemmProvider::create();
  EXPECT_TRUE(gemm.ok()) << gemm.status().to_string();
  return std::make_shared<const cpu::DotGeneralComposite>(*gemm);
}

inline std::shared_ptr<CpuEinsumExecutor> make_executor(CpuEinsumOptions options = {}) {
  Result<std::shared_ptr<CpuEinsumExecutor>> e = CpuEinsumExecutor::create(native_composite(), std::move(options));
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return *e;
}

inline Tensor to_tensor(const Dense& d) {
  return *Tensor::from_values<double>(std::span<const double>(d.data), IntArrayRef(d.shape));
}

inline Dense to_dense(const Tensor& t) {
  Dense d;
  d.shape.assign(t.shape().begin(), t.shape().end());
  d.data = *t.to_vector<double>();
  return d;
}

inline std::vector<Tensor> to_tensors(const std::vector<Dense>& ds) {
  std::vector<Tensor> out;
  for (const Dense& d : ds) out.push_back(to_tensor(d));
  return out;
}

/// dot_general through the composite, sequential.
class CompositeDotGeneral final : public runtime::DotGeneralRuntime {
 public:
  std::string_view name() const noexcept override { return "test.composite_dot_general"; }
  bool reproducible() const noexcept override { return true; }
  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& sig) const override {
    if (sig.operands.empty() || !is_inexact(sig.operands[0].dtype))
      return runtime::PrepareCapability::unsupported("floating dtypes only");
    return runtime::PrepareCapability::prepared(runtime::PreparedKernel{nullptr, true});
  }
  Status run(const runtime::OperationRequest& r, runtime::ErasedExecutionContext) const override {
    ++calls;
    const auto& a = r.attributes_as<program::DotGeneralAttributes>();
    const cpu::DotGeneralDims dims{a.lhs_batch, a.rhs_batch, a.lhs_contract, a.rhs_contract};
    return composite_->dot_general_into(r.inputs[0], r.inputs[1], dims, r.output, sequential_);
  }
  mutable std::atomic<int> calls{0};

 private:
  std::shared_ptr<const cpu::DotGeneralComposite> composite_ = native_composite();
  cpu::SequentialContext sequential_;
};

/// reduce_sum through cpu::reduce, sequential.
class KernelReduction final : public runtime::ReductionRuntime {
 public:
  std::string_view name() const noexcept override { return "test.kernel_reduction"; }
  bool reproducible() const noexcept override { return true; }
  Result<runtime::PrepareCapability> prepare(const runtime::OperationSignature& sig) const override {
    if (sig.op != program::CoreSemanticOp::kReduceSum) return runtime::PrepareCapability::unsupported("sum only");
    return runtime::PrepareCapability::prepared(runtime::PreparedKernel{nullptr, true});
  }
  Status run(const runtime::OperationRequest& r, runtime::ErasedExecutionContext) const override {
    ++calls;
    const auto& axes = r.attributes_as<program::ReduceAttributes>().axes;
    return cpu::reduce(cpu::ReduceOp::kSum, r.inputs[0], IntArrayRef(axes.span()), r.output, sequential_);
  }
  mutable std::atomic<int> calls{0};

 private:
  cpu::SequentialContext sequential_;
};

/// Layout copies through cpu::copy_into.
class KernelLayout final : public runtime::LayoutRuntime {
 public:
  std::string_view name() const noexcept override { return "test.kernel_layout"; }
  Result<runtime::PrepareCapability> prepare_copy(const runtime::OperandSignature&, const runtime::OperandSignature&,
                                                  runtime::ResolvedPlacement) const override {
    return runtime::PrepareCapability::prepared(runtime::PreparedKernel{nullptr, true});
  }
  Status copy(const TensorView& src, const TensorView& dst, const runtime::ProviderPlan*,
              runtime::ErasedExecutionContext) const override {
    return cpu::copy_into(src, dst, sequential_);
  }

 private:
  cpu::SequentialContext sequential_;
};

/// A runtime with one inline test engine (id 1) holding real core slots,
/// with or without the native einsum module.
struct TestRuntime {
  std::shared_ptr<CpuEinsumExecutor> executor;
  std::shared_ptr<CompositeDotGeneral> dot_general = std::make_shared<CompositeDotGeneral>();
  std::shared_ptr<KernelReduction> reduction = std::make_shared<KernelReduction>();
  std::unique_ptr<runtime::Runtime> runtime;
};

inline TestRuntime make_test_runtime(bool native_einsum, CpuEinsumOptions options = {},
                                     std::shared_ptr<const cpu::ParallelContext> fallback = nullptr) {
  TestRuntime t;
  t.executor = make_executor(std::move(options));
  runtime::EngineRegistration r;
  r.metadata.id = EngineId(1);
  r.metadata.name = "test.cpu";
  r.capabilities.dot_general = t.dot_general;
  r.capabilities.reduction = t.reduction;
  r.capabilities.layout = std::make_shared<KernelLayout>();
  auto executor = std::make_shared<runtime::InlineEngineExecutor>();
  r.event_driver = runtime::make_cpu_immediate_event_driver(executor);
  r.executor = executor;
  runtime::RuntimeBuilder builder;
  builder.add_engine(std::move(r));
  if (native_einsum) builder.add_extension_module(cpu_extension_module(EngineId(1), t.executor, std::move(fallback)));
  Result<runtime::Runtime> rt = builder.build();
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  t.runtime = std::make_unique<runtime::Runtime>(std::move(*rt));
  return t;
}

}  // namespace tenferro::einsum::test_support
