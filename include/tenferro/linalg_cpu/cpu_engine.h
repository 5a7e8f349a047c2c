// CpuLinalgEngine: the runtime::ExtensionEngine of family "tenferro.linalg"
// on a CPU engine, and cpu_extension_module(), the ExtensionModule any
// runtime installs it with. The runtime knows nothing about linalg: it sees
// one extension family, prepares it with concrete dims and runs it with the
// CPU engine's execution context.
//
// Note [Linalg extension engine]
// prepare() answers NeedsSpecialization(concrete dims) for a polymorphic
// signature (the provider and its workspace depend on the matrix size),
// validates the concrete shapes (typed kPrepare errors), picks the provider
// of the operation's slot from the LinalgProviderPolicy (Note [Default
// provider table]) and asks it to plan the problem; kUnsupported from every
// candidate makes prepare() answer Unsupported (the runtime then tries core
// lowering or an explicitly configured fallback engine). The plan
// (LinalgPlan, the PreparedKernel's ProviderPlan) holds the chosen
// provider, its kernel plan, the engine's per-matrix scratch layout and the
// batch policy. run() loops over the batch: it copies each matrix into
// column-major scratch (rejecting NaN/Inf with kNonFiniteInput), calls the
// provider, normalises the result (Note [Linalg gauge convention] in
// docs/linalg.md) and writes the row-major outputs. Workspace comes from an
// engine-owned pool (warm buffers across eager calls, which runtime scratch
// cannot give). Errors name the operation and the batch element.
//
// Note [Linalg batch parallelism]
// Exactly one fan-out level (Note [One fan-out level] in cpu/parallel.h),
// chosen per run from the provider's ProviderCapability and the context's
// thread budget, never by the provider:
//  - one matrix, or one thread: kSequential (a provider with its own threads,
//    such as a parallel OpenBLAS, may use them inside the call: kInner);
//  - a batch, with a provider that can be forced to one thread on the
//    calling worker (kSequential, kBinaryClampToOne; kPerCall for matrices
//    below LinalgEngineOptions::inner_threshold_flops): kOuter, the batch is
//    split over the domain's workers in chunks of at least
//    outer_grain_flops of estimated work, each matrix computed sequentially;
//  - a batch with a provider whose threading is process-global
//    (kGlobalOrUncontrolled, parallel OpenBLAS): kInner, a sequential batch
//    loop, because such a provider cannot be made sequential per worker and
//    an outer fan-out would nest two levels. Under the default
//    ProviderThreadingPolicy::kStrict such a provider is rejected at prepare
//    (kPlacementError); kProviderDefaultExclusive admits it.
// stats() counts which mode each run used.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/ids.h"
#include "tenferro/cpu/domains/provider_placement.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/linalg_cpu/provider_policy.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/spi/extension.h"

namespace tenferro::cpu {
class WorkspacePool;
}  // namespace tenferro::cpu

namespace tenferro::linalg {

struct LinalgEngineOptions {
  /// Whether providers without per-call thread control are admitted.
  cpu::ProviderThreadingPolicy threading = cpu::ProviderThreadingPolicy::kStrict;
  /// Smallest estimated work (flops) of one outer chunk.
  double outer_grain_flops = 2.0e5;
  /// kPerCall providers: matrices at or above this estimated work use kInner.
  double inner_threshold_flops = 5.0e7;
  /// Workspace bytes the engine keeps for reuse.
  std::size_t max_retained_workspace_bytes = std::size_t{64} << 20;
  /// The measured provider table create_default() reads; empty: the
  /// TENFERRO_LINALG_PROVIDER_TABLE environment variable, else the packaged
  /// table (Note [Provider table file]).
  std::string provider_table;
};

/// Run counters (relaxed snapshots).
struct LinalgEngineStats {
  std::uint64_t runs = 0;
  std::uint64_t matrices = 0;  ///< matrices computed
  std::uint64_t provider_calls = 0;
  std::uint64_t sequential_runs = 0;
  std::uint64_t inner_runs = 0;              ///< sequential batch loop, provider's own threads allowed
  std::uint64_t outer_runs = 0;              ///< batch spread over the context's workers
  std::uint64_t outer_chunks = 0;            ///< chunks those runs were split into
  std::uint64_t split_norms = 0;             ///< one long vector's norm split over threads
  std::uint64_t inline_kernel_matrices = 0;  ///< matrices a provider computed inline (LinalgKernelPlan::inline_kernel)
  std::uint64_t workspace_allocations = 0;
  std::uint64_t workspace_reuses = 0;
};

/// What prepare() decides for one operation and concrete signature.
struct LinalgSelection {
  std::string provider;  ///< provider name, or "engine" for engine-computed operations
  std::string reason;    ///< why that provider
  cpu::ParallelMode mode = cpu::ParallelMode::kSequential;
  std::string mode_reason;
  std::size_t workspace_bytes_per_worker = 0;
};

/// See Notes [Linalg extension engine] and [Linalg batch parallelism].
/// Thread-safe.
class CpuLinalgEngine final : public runtime::ExtensionEngine {
 public:
  /// `fallback` (optional; sequential when null) is the parallelism used when
  /// the engine passes a runtime::NoExecutionContext. Retained.
  explicit CpuLinalgEngine(LinalgProviderPolicy policy, LinalgEngineOptions options = {},
                           std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);
  ~CpuLinalgEngine() override;

  /// The measured default: LAPACK over the serial OpenBLAS plus Eigen, in
  /// the order the provider table gives per slot and size (Notes [Default
  /// provider table], [Linalg candidates]). When the LAPACK module cannot
  /// be loaded, Eigen is the only candidate (the reason is in
  /// policy().describe()). Errors: those of read_provider_table, naming
  /// the file.
  static Result<std::shared_ptr<CpuLinalgEngine>> create_default(
      LinalgEngineOptions options = {}, std::shared_ptr<const cpu::ParallelContext> fallback = nullptr);

  std::string_view name() const noexcept override { return "cpu.linalg"; }
  bool reproducible() const noexcept override { return false; }
  Result<runtime::PrepareCapability> prepare(const runtime::ExtensionSignature& signature) const override;
  Status run(const runtime::ExtensionRequest& request, runtime::ErasedExecutionContext context) const override;

  /// The decision prepare() makes for `op` on operands of `dtype` and
  /// `shapes`, with the mode a run with `threads` threads would use. Errors
  /// as prepare(); kUnsupported when no provider serves it.
  Result<LinalgSelection> select(const LinalgOp& op, DType dtype, std::span<const IntArrayRef> shapes,
                                 int threads) const;
  /// select() as readable text: "linalg.svd(thin) float64 1000 x [16, 16]:
  /// provider eigen 3.4 (default table: ...); mode outer (...)".
  std::string explain(const LinalgOp& op, DType dtype, std::span<const IntArrayRef> shapes, int threads) const;

  const LinalgProviderPolicy& policy() const noexcept { return policy_; }
  const LinalgEngineOptions& options() const noexcept { return options_; }
  LinalgEngineStats stats() const noexcept;
  /// Its retained workspace (bytes).
  runtime::CacheUsage cache_usage() const noexcept;
  /// Frees its idle workspace.
  void clear_caches() noexcept;

  struct Counters {
    std::atomic<std::uint64_t> runs{0}, matrices{0}, provider_calls{0}, sequential_runs{0}, inner_runs{0},
        outer_runs{0}, outer_chunks{0}, split_norms{0}, inline_kernel_matrices{0};
  };

 private:
  LinalgProviderPolicy policy_;
  LinalgEngineOptions options_;
  std::shared_ptr<const cpu::ParallelContext> fallback_;
  cpu::SequentialContext sequential_;
  std::unique_ptr<cpu::WorkspacePool> pool_;
  mutable Counters counters_;
};

/// The linalg extension module for engine `engine`: one registration of
/// family kLinalgFamilyId backed by `linalg` (retained).
runtime::ExtensionModule cpu_extension_module(EngineId engine, std::shared_ptr<CpuLinalgEngine> linalg);

}  // namespace tenferro::linalg
