// The native GEMM provider: tenferro's own sequential high-performance
// kernels (BLIS-style packing, MC/KC/NC cache blocking, AVX-512 or AVX2
// register micro-kernels, chosen once from the CPU's features), parallelised
// only through the ParallelContext of the entered CPU domain.
//
// Note [Native GEMM parallelism]
// With ctx.max_threads() > 1 and enough work, a problem that is a single
// (NC, KC) block of at most 512^3 multiply-adds is split in one fork-join,
// each task packing its own A rows and B columns (Note [Single-block
// parallel GEMM] in native_gemm.cpp). Larger problems make two fork-joins
// per block step: the packed B panel is filled in parallel, then the C
// block is split into ctx.max_threads() rectangles (along M when M is the
// larger extent, else along N), each packing its own A rows. A problem below
// NativeGemmOptions::parallel_min_flops runs on the calling thread. Every
// fork-join is a single level: nothing inside a chunk calls ctx again, so
// the kernel can be given the domain's context under ParallelMode::kInner
// and a SequentialContext under kOuter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tenferro/base/sharded_counters.h"
#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/gemm/gemm_provider.h"

namespace tenferro::cpu {

namespace internal {
struct GemmKernelTable;
class GemmWorkspacePool;
/// One request's path counts, kept on the caller's stack and added to the
/// shared counters once per request: a per-problem atomic add from every
/// worker of an outer fan-out contends for one cache line, which shows in
/// `tenferro bench einsum` (docs/performance_notes.md, "Native GEMM").
struct NativeGemmTally {
  std::int64_t small_loop_problems = 0;
  std::int64_t small_tiled_problems = 0;
  std::int64_t small_panel_problems = 0;
  std::int64_t rank1_problems = 0;
  std::int64_t blocked_problems = 0;
  std::int64_t parallel_problems = 0;
  std::int64_t in_place_b_problems = 0;
  std::int64_t gemv_problems = 0;
  std::int64_t dot_batch_problems = 0;
  std::int64_t few_column_problems = 0;
  std::int64_t dot_shaped_problems = 0;
  std::int64_t tiny_batch_problems = 0;
  std::int64_t short_row_problems = 0;
  std::int64_t tiled_batch_members = 0;
};
/// Storage behind NativeGemmCounters, bumped by the driver (per CPU: Note
/// [Sharded counters] in tenferro/base/sharded_counters.h).
struct NativeGemmAtomicCounters {
  enum Counter : std::size_t {
    kSmallLoop,
    kSmallTiled,
    kSmallPanel,
    kRank1,
    kBlocked,
    kParallel,
    kInPlaceB,
    kGemv,
    kDotBatch,
    kFewColumns,
    kDotShaped,
    kTinyBatch,
    kShortRows,
    kTiledBatchMembers,
    kForkJoins,
    kCount
  };
  ShardedCounters<kCount> values;
  void add(const NativeGemmTally& t) noexcept;
  void add_fork_joins(std::int64_t forks) noexcept { values.add(kForkJoins, forks); }
};
}  // namespace internal

/// Which micro-kernels the native provider uses (Note [ISA cap] in
/// tenferro/cpu/cpu_isa.h): kAuto is TENFERRO_CPU_ISA when set, else the best
/// the CPU supports; a named set the CPU lacks is kUnsupported at creation.
using NativeGemmIsa = CpuIsa;

/// Construction options. Zero means "the tuned default".
struct NativeGemmOptions {
  NativeGemmIsa isa = NativeGemmIsa::kAuto;
  /// Problems with m*n*k at most this may run unpacked (no workspace; Note
  /// [Small GEMM] in src/cpu/gemm/native/small_tiles.h); 0 takes the kernel
  /// table's (64^3 for the AVX-512 and AVX2 kernels, 16^3 for the
  /// portable ones); 1 forces the blocked path.
  std::int64_t small_max_mnk = 0;
  /// Problems below this many flops (2*m*n*k) never fork, whatever the
  /// context; 0 takes 2^20 (about 81^3, docs/performance_notes.md).
  std::int64_t parallel_min_flops = 0;
  /// Cache-blocking overrides (for tuning experiments); 0 keeps the ISA's.
  int mc = 0;
  int kc = 0;
  int nc = 0;
};

/// Counters proving which paths ran (relaxed atomics; cheap to bump).
struct NativeGemmCounters {
  std::int64_t small_problems = 0;        ///< problems run unpacked (Note [Small GEMM])
  std::int64_t small_tiled_problems = 0;  ///< of those, the ones run in register tiles
  std::int64_t small_panel_problems = 0;  ///< of those, the ones whose misaligned A was copied into aligned panels
  std::int64_t rank1_problems = 0;        ///< depth-1 problems written directly (Note [Rank-1 GEMM])
  std::int64_t blocked_problems = 0;      ///< problems run by the packed, blocked path
  std::int64_t parallel_problems = 0;     ///< blocked problems that forked on the context
  std::int64_t in_place_b_problems = 0;   ///< blocked problems that read B unpacked (Note [Unpacked B])
  std::int64_t gemv_problems = 0;         ///< problems with m or n == 1 run in place (Note [Matrix-vector GEMM])
  std::int64_t dot_batch_problems = 0;    ///< batch members run as lanes of dot products (Note [Batched dot products])
  /// problems with 2..8 columns (or rows) run in place (Note [Few-column GEMM])
  std::int64_t few_column_problems = 0;
  /// few rows by few columns over a long depth, as dot products (Note [Dot-shaped GEMM])
  std::int64_t dot_shaped_problems = 0;
  /// batch members of at most 4 x 4 x 4 run in one loop (Note [Tiny batch members])
  std::int64_t tiny_batch_problems = 0;
  /// matrix-vector products with rows shorter than 8 elements (Note [Short rows])
  std::int64_t short_row_problems = 0;
  /// batch members sent straight to the register tiles after the first (Note [Tiled batch members])
  std::int64_t tiled_batch_members = 0;
  std::int64_t fork_joins = 0;             ///< ctx.parallel_for calls made
  std::int64_t workspace_allocations = 0;  ///< packing buffers allocated (steady state: 0)
};

/// See the file comment. Immutable after creation except for its workspace
/// pool and counters, both thread-safe; thread-safe to call concurrently.
/// Capability: kPerCall thread count on kEngineWorkers (it runs exactly on
/// the workers of the context it is given).
class NativeGemmProvider final : public CpuGemmProvider {
 public:
  /// kUnsupported when options.isa (or, for kAuto, TENFERRO_CPU_ISA) names
  /// kernels the CPU cannot run; kInvalidArgument for negative or
  /// inconsistent options or an unknown TENFERRO_CPU_ISA value.
  static Result<std::shared_ptr<NativeGemmProvider>> create(const NativeGemmOptions& options = {});
  ~NativeGemmProvider() override;

  std::string_view name() const noexcept override { return "native"; }
  const ProviderCapability& capability() const noexcept override { return capability_; }
  GemmSupport support() const noexcept override;
  /// The kernels selected at creation (never kAuto).
  NativeGemmIsa isa() const noexcept { return isa_; }
  /// The largest m*n*k of `dtype` that may run unpacked: small_max_mnk when
  /// set, else the kernel table's (Note [Small GEMM]); 0 for other dtypes.
  std::int64_t small_max_mnk(DType dtype) const noexcept;
  NativeGemmCounters counters() const noexcept;

  Status gemm(const GemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_strided_batched(const StridedBatchedGemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const override;

 private:
  NativeGemmProvider(NativeGemmIsa isa, const internal::GemmKernelTable& table, const NativeGemmOptions& options);
  Status run_problem(DType dtype, const GemmProblem& problem, const ParallelContext& ctx,
                     internal::NativeGemmTally& tally) const;
  /// Runs a batch of matrix-vector or dot products in the matrix-vector
  /// kernels without the per-member driver (Note [Matrix-vector GEMM]);
  /// false, nothing done, for other batches.
  bool run_vector_batch(const StridedBatchedGemmRequest& request, const ParallelContext& ctx,
                        internal::NativeGemmTally& tally) const;
  /// Runs a batch of members of at most 4 x 4 x 4 in one loop (Note [Tiny
  /// batch members]); false, nothing done, for other batches.
  bool run_tiny_batch(const StridedBatchedGemmRequest& request, const ParallelContext& ctx,
                      internal::NativeGemmTally& tally) const;

  NativeGemmIsa isa_;
  const internal::GemmKernelTable* table_;
  NativeGemmOptions options_;
  ProviderCapability capability_;
  std::unique_ptr<internal::GemmWorkspacePool> workspace_;
  mutable internal::NativeGemmAtomicCounters counters_;
};

}  // namespace tenferro::cpu
