// The engine-owned dot_general composite: a validated binary contraction with
// StableHLO semantics (docs/core_ops.md) executed either by a direct
// general-contraction provider or by TTGT, i.e. layout transforms (only where
// strides demand them) plus GEMM through a CpuGemmProvider.
//
// Note [TTGT without transposes]
// Axes fall into four groups: batch (B: lhs, rhs, out), lhs free (M: lhs,
// out), rhs free (N: rhs, out) and contracted (K: lhs, rhs); extent-1 axes
// are dropped. A group becomes one GEMM dimension when its axes can be
// ordered so that they fuse (stride[i] == stride[i+1] * extent[i+1]) in
// every tensor that holds the group; the GEMM then reads operands at their
// fused strides, transposed or not, so a permuted or sliced view costs no
// copy. The planner tries every choice of tensors to keep as they are and
// takes the feasible one that moves the fewest elements: a tensor it does
// not keep is copied (copy_into) into a dense [B, M, K] / [B, K, N] buffer,
// or, for the output, computed in a dense [B, M, N] buffer and copied out.
// Batch axes never force a copy: runs that fuse become the strided-batch
// dimension, the rest an outer loop. A tensor is also not kept when the GEMM
// provider cannot take its fused strides (GemmSupport::strides), e.g. a
// broadcast (stride-0) operand for a BLAS library. m = n = k = 1 everywhere
// is an elementwise product and runs as one strided loop without GEMM.
//
// Note [Broadcast products]
// With no contracted axis and free axes on at most one side (a tensor scaled
// by a smaller one broadcast over its other axes: o[b, n] = l[b] * r[b, n]),
// every output element is one product, so the free axes join the batch
// (stride 0 in the operand that lacks them) and the step runs as the
// elementwise loop over whatever strides the three tensors have: no group
// has to fuse and nothing is copied. Without this, a chain of such steps
// whose batch labels differ (the graphical-model networks: gm_queen5_5_3
// scales a 43M-element tensor by five different 2-D factors in a row)
// wrote each result into a [B, N] temporary and transposed it out for the
// next step. The einsum layout pass (Note [Layout-aware execution])
// relies on the same predicate to plan no copy for such a step.
//
// Note [dot_general parallel mode]
// The mode is chosen once per call, before any provider runs (Note [One fan-out
// level] in parallel.h): with one thread, kSequential; with several GEMM jobs,
// at least as many jobs as threads, small jobs (DotGeneralOptions) and a GEMM
// provider that can be forced sequential on each worker
// (can_run_sequential_per_worker: never parallel OpenBLAS), kOuter: the jobs
// are spread with one ctx.parallel_for and every provider call gets a
// SequentialContext; otherwise kInner: the job loop is sequential and each
// provider call receives ctx. Layout copies run before the GEMM phase (with
// ctx, one level). So at every size there is exactly one fan-out level,
// whichever provider is plugged in. The starting thresholds are PyTorch-like
// placeholders until tensor-network benchmarks pick tenferro's own.
//
// A (batched) matrix product of at most DotGeneralOptions::tiny_max_work
// multiply-adds skips all of this and runs one strided loop on the calling
// thread (Note [Tiny dot_general] in src/cpu/gemm/dot_general_tiny.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tenferro/base/sharded_counters.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/gemm/gemm_provider.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

namespace internal {
struct TtgtPlan;
struct TinyContraction;
class GemmWorkspacePool;
}  // namespace internal

/// Whether a contraction with these numbers of extent > 1 axes in its M
/// (lhs free), N (rhs free) and K groups runs as the elementwise loop
/// whatever the layouts (Note [Broadcast products]), integer dtypes too.
constexpr bool is_broadcast_product(std::size_t m_axes, std::size_t n_axes, std::size_t k_axes) noexcept {
  return k_axes == 0 && (m_axes == 0 || n_axes == 0);
}

/// StableHLO dot_general dimension numbers: axes of lhs and rhs.
struct DotGeneralDims {
  Dims lhs_batch;
  Dims rhs_batch;
  Dims lhs_contract;
  Dims rhs_contract;
};

/// How a call was (or would be) executed.
enum class DotGeneralPath : std::uint8_t {
  kEmpty,        ///< the output has no elements
  kZeroFill,     ///< a contracted extent is 0: the output is zeros
  kElementwise,  ///< m = n = k = 1: out = lhs * rhs over the batch, one strided loop
  kGemm,         ///< TTGT through the GEMM provider
  kDirect,       ///< the direct general-contraction provider
  kInteger,      ///< int32/int64: the composite's integer kernel (Note [Integer GEMM])
  kTiny,         ///< a tiny (batched) matrix product: one strided loop, no planning
};
std::string_view to_string(DotGeneralPath path) noexcept;
std::string_view to_string(ParallelMode mode) noexcept;

/// The plan of one call, for tests and explain(): which path and mode ran
/// and what was copied. Filled before any kernel runs.
struct DotGeneralPlan {
  DotGeneralPath path = DotGeneralPath::kEmpty;
  ParallelMode mode = ParallelMode::kSequential;
  bool lhs_copied = false;           ///< lhs was materialized into a dense buffer
  bool rhs_copied = false;           ///< rhs was materialized into a dense buffer
  bool out_via_temp = false;         ///< computed into a buffer, then copied to the output
  std::int64_t copied_elements = 0;  ///< elements moved by those copies
  std::int64_t m = 1;                ///< fused GEMM extents
  std::int64_t n = 1;
  std::int64_t k = 1;
  std::int64_t jobs = 0;             ///< GEMM problems (or elementwise products)
  std::int64_t batch_loop_dims = 0;  ///< batch runs looped outside the strided batch
  std::int64_t provider_calls = 0;   ///< calls made into the GEMM or direct provider
  /// Elements per block of the elementwise loop's offset tables (Note
  /// [Elementwise blocks] in dot_general.cpp); 0 when it ran plain runs.
  std::int64_t elementwise_block = 0;
  /// The elementwise kernel visited 2-D tiles: an operand's fastest axis is
  /// not the output's (Note [Elementwise products as kernels] in
  /// dot_general.cpp).
  bool elementwise_tiled = false;
  /// The ISA of the integer kernel's tiles ("avx512", "avx2", "portable")
  /// when path is kInteger; empty otherwise.
  std::string_view integer_kernel_isa;
  /// Packed int64 depth blocks whose values all fit in int32, multiplied by
  /// vpmuldq (Note [Narrow int64 products]); filled after the run.
  std::int64_t integer_narrow_blocks = 0;
};

/// Tuning of the composite. Zero means the default.
struct DotGeneralOptions {
  /// kOuter needs per-job flops (2*m*n*k) at most this, or at least
  /// 4 jobs per thread. Default 2 * 128^3.
  std::int64_t outer_max_job_flops = 0;
  /// Elementwise products below this many jobs never fork. Default 32768.
  std::int64_t elementwise_parallel_min = 0;
  /// (Batched) matrix products with batch*m*n*k at most this run the tiny
  /// loop (Note [Tiny dot_general]). Default 256; negative disables it.
  std::int64_t tiny_max_work = 0;
  /// Integer products (Note [Integer GEMM]) of fewer multiply-adds
  /// (batch * m * n * k) run on the calling thread. Default 2^20 (64^3
  /// int32 took 7 us on one thread, 11 us forked over two; Zen 5).
  std::int64_t integer_parallel_min_work = 0;
};

/// Counters proving which paths ran (relaxed atomics; cheap to bump).
struct DotGeneralCounters {
  std::int64_t tiny_calls = 0;     ///< calls run by the tiny loop without planning
  std::int64_t planned_calls = 0;  ///< calls planned (TTGT, elementwise, naive, empty, zero fill)
};

/// A provider that contracts a whole binary dot_general itself (TBLIS-like
/// label groups) without flattening it to GEMM. Thread-safe; uses `ctx` as
/// its only parallelism, one fan-out level (it is called in kInner or
/// kSequential mode). kUnsupported declines a request, and the composite
/// then runs TTGT; any other error is returned to the caller.
class CpuGeneralContractionProvider {
 public:
  virtual ~CpuGeneralContractionProvider() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual const ProviderCapability& capability() const noexcept = 0;
  /// out = dot_general(lhs, rhs) for a validated request; `out` has the
  /// result shape and any non-overlapping strides.
  virtual Status contract(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                          const TensorView& out, const ParallelContext& ctx) const = 0;
};

/// The composite. Holds its providers (shared, immutable); thread-safe.
class DotGeneralComposite {
 public:
  /// `gemm` is required; `direct` is optional and tried first.
  explicit DotGeneralComposite(std::shared_ptr<const CpuGemmProvider> gemm,
                               std::shared_ptr<const CpuGeneralContractionProvider> direct = nullptr,
                               DotGeneralOptions options = {});

  /// Returns dot_general(lhs, rhs) as a new tensor whose axes are batch, lhs
  /// free, rhs free (StableHLO order) and whose memory order is chosen to
  /// avoid copies (it may be a dense permuted view). Validation errors
  /// (kDTypeMismatch, kShapeMismatch, kAxisOutOfRange, kInvalidArgument,
  /// kUnsupported for bool or a dtype the GEMM provider lacks) come before
  /// any kernel runs. Borrows lhs and rhs for the call. `plan`, when given,
  /// receives what ran. The result and any temporary buffers come from
  /// `allocator` (the executing domain's pool; null: the default heap).
  Result<Tensor> dot_general(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                             const ParallelContext& ctx, DotGeneralPlan* plan = nullptr,
                             const std::shared_ptr<HostAllocator>& allocator = nullptr) const;

  /// Writes dot_general(lhs, rhs) into `out` (result shape, any
  /// non-overlapping strides, not overlapping lhs or rhs: kAliasConflict).
  /// Temporary buffers come from `allocator`.
  Status dot_general_into(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                          const TensorView& out, const ParallelContext& ctx, DotGeneralPlan* plan = nullptr,
                          const std::shared_ptr<HostAllocator>& allocator = nullptr) const;

  /// Validates and plans without running anything (for explain and tests);
  /// `out` may be null (then the output layout is the composite's choice).
  Result<DotGeneralPlan> plan(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims,
                              const TensorView* out, int threads) const;

  /// The result shape: batch, lhs free, rhs free. Validates.
  static Result<Dims> result_shape(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims);

  const CpuGemmProvider& gemm_provider() const noexcept { return *gemm_; }
  DotGeneralCounters counters() const noexcept;

  /// For callers that planned a GEMM themselves (the einsum engine's direct
  /// steps): runs C = A B by the tiny loop (Note [Tiny dot_general]) and
  /// returns true when m*n*k is at most tiny_max_work, alpha is 1, beta is 0
  /// and dtype is not bool; otherwise does nothing and returns false. The
  /// problem must be valid (as for a GEMM provider).
  bool gemm_if_tiny(DType dtype, const GemmProblem& problem) const noexcept;

 private:
  // Runs a matched tiny request (Note [Tiny dot_general]) into `out`.
  void run_tiny(const internal::TinyContraction& t, const TensorView& lhs, const TensorView& rhs, void* out,
                DotGeneralPlan* plan_out) const noexcept;
  Status run_plan(internal::TtgtPlan& plan, const TensorView& lhs, const TensorView& rhs, const TensorView& out,
                  bool out_is_final, const ParallelContext& ctx, DotGeneralPlan* plan_out,
                  const std::shared_ptr<HostAllocator>& allocator) const;
  Status run_integer(const internal::TtgtPlan& plan, const TensorView& lhs, const TensorView& rhs,
                     const TensorView& out, const ParallelContext& ctx, DotGeneralPlan& summary) const;

  std::shared_ptr<const CpuGemmProvider> gemm_;
  std::shared_ptr<const CpuGeneralContractionProvider> direct_;
  DotGeneralOptions options_;
  std::shared_ptr<internal::GemmWorkspacePool> integer_workspace_;  // packing buffers of the integer kernel
  enum Counter : std::size_t { kTinyCalls, kPlannedCalls, kCount };
  mutable ShardedCounters<kCount> calls_;  // Note [Sharded counters]
};

}  // namespace tenferro::cpu
