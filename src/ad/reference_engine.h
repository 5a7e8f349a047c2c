// Test support: a runtime engine that executes every core op through the
// reference evaluator (tenferro::testing), so AD programs and eager
// differentiation run through a real Runtime (prepare_for, buffer plan,
// run) before the CPU engine registration exists. Every provider call
// builds a one-operation program and evaluates it; slow, but independent of
// the CPU kernels. Counts its calls.
#pragma once

#include <atomic>
#include <memory>

#include "tenferro/base/status.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::ad::testing {

/// Calls the reference engine served, for proving that work ran through it.
struct ReferenceEngineStats {
  std::atomic<std::uint64_t> operations{0};
  std::atomic<std::uint64_t> copies{0};
};

/// A runtime with one host engine (id 1) whose elementwise, reduction,
/// indexing, dot_general and layout slots are the reference evaluator.
Result<runtime::Runtime> make_reference_runtime(std::shared_ptr<ReferenceEngineStats> stats = nullptr);

}  // namespace tenferro::ad::testing
