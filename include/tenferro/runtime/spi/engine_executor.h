// EngineExecutor: the executable witness of an engine registration. It owns
// nothing the runtime sees; it declares the engine's typed execution context
// and enters it (an executor install for a CPU domain, a device/stream
// selection for a GPU) around work the runtime hands it.
#pragma once

#include <cstddef>

#include "tenferro/base/function_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/placement.h"

namespace tenferro::runtime {

/// Implemented by engines. Thread-safe: several runs may enter concurrently.
class EngineExecutor {
 public:
  virtual ~EngineExecutor() = default;

  /// The typed context every provider of this engine receives. Constant.
  virtual ExecutionContextTypeId context_type() const noexcept = 0;

  /// Runs `body` once, synchronously, inside an execution context for
  /// `placement` (one executor entry) and returns its status. `body` may run
  /// on another thread of the engine (e.g. a pinned domain worker) but
  /// `enter` returns only after it finished. Must not allocate per call in
  /// steady state; must not throw. Nested entry into another domain of the
  /// same engine from inside `body` is the engine's to reject (kReentryRejected).
  virtual Status enter(ResolvedPlacement placement, FunctionRef<Status(ErasedExecutionContext)> body) noexcept = 0;

  /// Calls `task(i, context_i)` once for every i < count, from inside an
  /// entry: `entered` is the context enter() handed its body. The tasks are
  /// independent of each other (a concurrent group, Note [Concurrent
  /// groups]); an engine may run them at the same time, each with a context
  /// of its own, and returns when all have run. Tasks report their own
  /// failures. Must not throw. The default runs them in order with `entered`.
  virtual void run_concurrently(ErasedExecutionContext entered, std::size_t count,
                                FunctionRef<void(std::size_t, ErasedExecutionContext)> task) noexcept {
    for (std::size_t i = 0; i < count; ++i) task(i, entered);
  }
};

/// An executor that runs work inline on the calling thread with a
/// NoExecutionContext; for reference and test engines. Thread-safe.
class InlineEngineExecutor final : public EngineExecutor {
 public:
  ExecutionContextTypeId context_type() const noexcept override {
    return ExecutionContextTypeId::of<NoExecutionContext>();
  }
  Status enter(ResolvedPlacement /*placement*/, FunctionRef<Status(ErasedExecutionContext)> body) noexcept override {
    NoExecutionContext context;
    return body(ErasedExecutionContext::of(context));
  }
};

}  // namespace tenferro::runtime
