// Test support for the CPU engine tests: the provider table the conformance
// suite runs over, one-node programs, and a Managed two-thread domain set.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::cpu::testing {

/// A Managed set with one domain over every allowed CPU and a budget of
/// min(2, allowed CPUs) threads.
inline Result<std::shared_ptr<const CpuDomainSet>> two_thread_domain_set() {
  TENFERRO_ASSIGN_OR_RETURN(CpuTopology topology, CpuTopology::discover());
  std::vector<CpuDomainSpec> specs = default_domain_specs(topology, CpuDomainLayout::kWholeAllowedSet);
  specs.front().thread_budget = std::min(2, specs.front().cpus.count());
  return CpuDomainSet::create_managed(topology, specs);
}

/// The CPU engine over two_thread_domain_set(), with the set it serves.
struct ManagedEngine {
  std::shared_ptr<const CpuDomainSet> domains;
  CpuEngine engine;
};
inline Result<ManagedEngine> two_thread_engine(CpuIsa isa = CpuIsa::kAuto) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const CpuDomainSet> domains, two_thread_domain_set());
  CpuEngineOptions options;
  options.domains = domains;
  options.isa = isa;
  TENFERRO_ASSIGN_OR_RETURN(CpuEngine engine, make_cpu_engine(options));
  return ManagedEngine{std::move(domains), std::move(engine)};
}

/// One entry of the provider table: how to build the engine under test.
/// `make` answering kUnsupported (a library that is not installed) skips.
struct ProviderCase {
  std::string name;
  std::function<Result<CpuEngine>()> make;
};

inline std::string provider_case_name(const ::testing::TestParamInfo<ProviderCase>& info) { return info.param.name; }

/// Every engine configuration the conformance suite covers: native GEMM on
/// the calling thread, OpenBLAS (serial build), BLIS, native GEMM in a
/// Managed two-thread domain, and a partial engine that declares only the
/// elementwise and layout families.
inline std::vector<ProviderCase> provider_cases() {
  std::vector<ProviderCase> cases;
  cases.push_back({"native", [] { return make_cpu_engine({}); }});
  cases.push_back({"openblas", [] {
                     CpuEngineOptions o;
                     o.gemm = {"openblas"};
                     return make_cpu_engine(o);
                   }});
  cases.push_back({"blis", [] {
                     CpuEngineOptions o;
                     o.gemm = {"blis"};
                     return make_cpu_engine(o);
                   }});
  cases.push_back({"managed2", []() -> Result<CpuEngine> {
                     TENFERRO_ASSIGN_OR_RETURN(ManagedEngine managed, two_thread_engine());
                     return std::move(managed.engine);
                   }});
  cases.push_back({"partial", []() -> Result<CpuEngine> {
                     TENFERRO_ASSIGN_OR_RETURN(CpuEngine e, make_cpu_engine({}));
                     e.registration.capabilities.reduction = nullptr;
                     e.registration.capabilities.indexing = nullptr;
                     e.registration.capabilities.dot_general = nullptr;
                     return e;
                   }});
  return cases;
}

/// A runtime over `engine` alone.
inline Result<runtime::Runtime> runtime_over(const CpuEngine& engine) {
  runtime::RuntimeBuilder builder;
  builder.add_engine(engine.registration);
  return builder.build();
}

/// A program with one core op over inputs of the given tensors' dtypes and
/// shapes.
inline Result<std::shared_ptr<const program::SemanticProgram>> one_op_program(
    program::CoreSemanticOp op, std::span<const Tensor> inputs, const program::CoreAttributes& attributes) {
  program::ProgramBuilder b;
  SmallVector<program::ProgramValue, 4> values;
  for (const Tensor& t : inputs) {
    const program::SymbolicShape shape = program::symbolic_shape(t.shape());
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue v, b.add_input(t.dtype(), std::span<const program::SymbolicExtent>(
                                                                                  shape.data(), shape.size())));
    values.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(
      program::ProgramValue y,
      b.emit(op, std::span<const program::ProgramValue>(values.data(), values.size()), attributes));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, b.freeze({y}));
  return frozen.program;
}

}  // namespace tenferro::cpu::testing
