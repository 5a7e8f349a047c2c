// Test support: a runtime engine that executes every core op through the
// reference evaluator, so programs (AD transforms, extension rules, eager
// differentiation) run through a real Runtime (prepare_for, buffer plan,
// run) independently of any production engine. Every provider call
// builds a one-operation program and evaluates it; slow, but independent of
// the CPU kernels. Counts its calls.
#pragma once

#include <atomic>
#include <memory>

#include "tenferro/base/status.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::testing {

/// Calls the reference engine served, for proving that work ran through it.
struct ReferenceEngineStats {
  std::atomic<std::uint64_t> operations{0};
  std::atomic<std::uint64_t> copies{0};
};

/// A host engine registration (`id`) whose elementwise, reduction,
/// indexing, dot_general and layout slots are the reference evaluator;
/// extension modules (einsum, linalg, ...) can be installed for its id.
runtime::EngineRegistration reference_engine_registration(EngineId id = EngineId(1),
                                                          std::shared_ptr<ReferenceEngineStats> stats = nullptr);

/// A runtime with one host engine (id 1) that has no core slots and runs
/// work inline on the calling thread (providers see NoExecutionContext),
/// with `module` installed: for testing an extension engine alone.
runtime::Runtime make_inline_extension_runtime(runtime::ExtensionModule module);

/// A runtime with the reference engine (id 1) only.
Result<runtime::Runtime> make_reference_runtime(std::shared_ptr<ReferenceEngineStats> stats = nullptr);

}  // namespace tenferro::testing
