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
//
// A context also carries the instruction-set cap of the engine it runs for
// (kernel_isa(), Note [ISA cap] in tenferro/cpu/cpu_isa.h), since it is the
// one object every layout kernel call receives: a kernel that derives a
// context for a nested loop (kOuter jobs) passes the cap on.
#pragma once

#include <cstdint>

#include "tenferro/base/function_ref.h"
#include "tenferro/cpu/cpu_isa.h"

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
  /// The instruction set the layout kernels' register tiles may use under
  /// this context: the cap of the engine the work runs for, or kAuto (the
  /// default) for the process-wide layout_kernel_isa().
  virtual CpuIsa kernel_isa() const noexcept { return CpuIsa::kAuto; }
};

/// Runs every loop inline on the calling thread. Immutable; thread-safe.
class SequentialContext final : public ParallelContext {
 public:
  SequentialContext() = default;
  /// Reports `kernel_isa` (an engine's resolved cap, or the cap of the
  /// context a nested loop derives from).
  explicit SequentialContext(CpuIsa kernel_isa) noexcept : kernel_isa_(kernel_isa) {}
  int max_threads() const noexcept override { return 1; }
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t /*grain*/,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    if (begin < end) body(begin, end);
  }
  CpuIsa kernel_isa() const noexcept override { return kernel_isa_; }

 private:
  CpuIsa kernel_isa_ = CpuIsa::kAuto;
};

/// Runs loops on `inner` and reports `kernel_isa`: how an engine hands its
/// ISA cap to kernels running on a context it did not create (a domain's
/// workers). Borrows `inner`, which must outlive it; thread-safe as `inner`.
class KernelIsaContext final : public ParallelContext {
 public:
  KernelIsaContext(const ParallelContext& inner, CpuIsa kernel_isa) noexcept
      : inner_(&inner), kernel_isa_(kernel_isa) {}
  int max_threads() const noexcept override { return inner_->max_threads(); }
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    FunctionRef<void(std::int64_t, std::int64_t)> body) const override {
    inner_->parallel_for(begin, end, grain, body);
  }
  CpuIsa kernel_isa() const noexcept override { return kernel_isa_; }

 private:
  const ParallelContext* inner_;
  CpuIsa kernel_isa_;
};

}  // namespace tenferro::cpu
