// The parallel surface CPU kernels and provider composites see.
//
// Note [One fan-out level]
// A CPU operation runs in exactly one ParallelMode, chosen once by the
// engine-owned composite, so the thread budget is spent at one level only:
//  - kSequential: everything runs on the calling (already pinned) thread;
//  - kInner: the job loop is sequential and each kernel may split its own
//    work with ParallelContext::parallel_for;
//  - kOuter: independent jobs are spread with parallel_for and every kernel
//    inside a job receives a sequential context.
// Kernels never create threads and never nest a second fan-out: they only
// use the ParallelContext they are given. The executor behind a context
// (oneTBB arena, an external pool) belongs to a CPU resource domain.
#pragma once

#include <cstdint>

#include "tenferro/base/function_ref.h"

namespace tenferro::cpu {

enum class ParallelMode : std::uint8_t { kSequential, kInner, kOuter };

/// Splits index ranges over the workers of an already entered CPU domain.
/// Implementations are thread-safe; parallel_for returns when every chunk has
/// run. A body must not throw.
class ParallelContext {
 public:
  virtual ~ParallelContext() = default;
  /// Upper bound on the threads parallel_for may use (>= 1).
  virtual int max_threads() const noexcept = 0;
  /// Calls body(b, e) over disjoint chunks covering [begin, end), each at
  /// least `grain` long except possibly the last, possibly concurrently.
  virtual void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                            FunctionRef<void(std::int64_t, std::int64_t)> body) const = 0;
};

/// Runs every loop inline on the calling thread. Stateless; thread-safe.
class SequentialContext final : public ParallelContext {
 public:
  int max_threads() const noexcept override { return 1; }
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t /*grain*/,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    if (begin < end) body(begin, end);
  }
};

}  // namespace tenferro::cpu
