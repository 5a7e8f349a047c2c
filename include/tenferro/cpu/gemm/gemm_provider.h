// CpuGemmProvider: the GEMM primitives a CPU dot_general composite builds on:
// one GEMM, strided-batched GEMM and grouped GEMM over f32, f64, c64 and c128,
// with general row and column strides. A provider computes; it does not own
// batch scheduling, create threads or choose a resource domain.
//
// Note [GEMM operand strides]
// Every operand is described by its first element and two element strides:
// element (i, j) of A (m x k) lives at a + i * a.row_stride + j * a.col_stride,
// and likewise for B (k x n) and C (m x n). A transposed operand is the same
// matrix with its two strides swapped, so there are no separate transposition
// flags. Strides are non-negative; a stride of 0 repeats a row or column
// (broadcast inputs). The stride of an extent-1 dimension is never read.
// C must not overlap A or B, and distinct elements of C must have distinct
// addresses. Providers with narrower layout support (classic BLAS needs one
// unit stride per operand, BLIS positive "tilted" strides) say so in
// GemmSupport::strides and answer other layouts with kUnsupported, so the
// composite can materialize the operand instead (gemm_layout_supported is
// the one definition both sides use).
//
// Note [Null GEMM provider]
// NullGemmProvider is the documented skeleton a new provider starts from
// (the IREE drivers/null pattern): it reports the most conservative
// capability, supports nothing, and answers every entry point with
// kUnsupported after validation. Copy it, then implement one entry point at a
// time; kUnsupported is the only code that lets a caller try another provider.
#pragma once

#include <complex>
#include <cstdint>
#include <span>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::cpu {

/// A read-only GEMM operand (Note [GEMM operand strides]). Borrowed.
struct GemmInput {
  const void* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;
};

/// The GEMM output C (Note [GEMM operand strides]). Borrowed.
struct GemmOutput {
  void* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;
};

/// One problem C = alpha * A * B + beta * C, A m x k, B k x n, C m x n.
/// alpha and beta are converted to the request dtype (the imaginary part is
/// ignored for real dtypes). With beta == 0, C is never read (NaNs in C do
/// not propagate); with k == 0 or alpha == 0, A and B are never read.
struct GemmProblem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  GemmInput a;
  GemmInput b;
  GemmOutput c;
  std::complex<double> alpha = 1.0;
  std::complex<double> beta = 0.0;
};

/// A single GEMM. Borrowed; thread-compatible.
struct GemmRequest {
  DType dtype = DType::kFloat64;
  GemmProblem problem;
};

/// `batch_count` problems of the same shape: problem b uses
/// a.data + b * a_batch_stride (elements) and likewise for B and C. Input
/// batch strides may be 0 (the same matrix for every problem); C's may not
/// when batch_count > 1.
struct StridedBatchedGemmRequest {
  DType dtype = DType::kFloat64;
  GemmProblem problem;
  std::int64_t batch_count = 1;
  std::int64_t a_batch_stride = 0;
  std::int64_t b_batch_stride = 0;
  std::int64_t c_batch_stride = 0;
};

/// Independent problems of possibly different shapes, run as one call. The
/// outputs of different problems must not overlap.
struct GroupedGemmRequest {
  DType dtype = DType::kFloat64;
  std::span<const GemmProblem> problems;
};

/// Operand layouts a provider accepts (Note [GEMM operand strides]). The
/// stride of an extent-1 dimension never matters.
enum class GemmStrideSupport : std::uint8_t {
  /// Classic BLAS: each operand has a unit stride in one dimension and a
  /// leading dimension of at least the other extent.
  kUnitStride,
  /// BLIS: any positive strides where the larger stride spans the other
  /// dimension (column tilt: cs >= rows * rs; row tilt: rs >= cols * cs).
  kPositiveTilted,
  /// Any non-negative strides, including 0 (broadcast) inputs.
  kAny,
};

/// What a provider accepts, fixed at construction.
struct GemmSupport {
  bool f32 = false;
  bool f64 = false;
  bool c64 = false;
  bool c128 = false;
  GemmStrideSupport strides = GemmStrideSupport::kUnitStride;

  bool supports(DType dtype) const noexcept;
};

/// Whether a rows x cols operand at (rs, cs) is accepted under `support`.
bool gemm_operand_layout_supported(GemmStrideSupport support, std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                   std::int64_t cs) noexcept;
/// Whether all three operands of `problem` are accepted under `support`.
bool gemm_layout_supported(GemmStrideSupport support, const GemmProblem& problem) noexcept;

/// A GEMM provider. Implementations are immutable after construction and
/// thread-safe: any number of threads may call the entry points at once.
///
/// Every entry point receives the ParallelContext of the already entered CPU
/// domain and uses it as its only source of parallelism: a provider never
/// creates threads and never nests a second fan-out level (Note [One fan-out
/// level] in parallel.h). A provider whose capability() is not kPerCall may
/// ignore `ctx` (a serial library runs on the calling thread; a library with
/// its own uncontrolled pool uses that pool, which is why the composite never
/// calls it from parallel jobs). Grouped and strided-batched calls run their
/// problems in sequence with per-problem inner parallelism; splitting jobs
/// across workers is the composite's decision, not the provider's.
///
/// Invalid requests (negative extents, null data for a non-empty operand,
/// negative strides) are kInvalidArgument, overlapping outputs
/// kAliasConflict; requests the provider cannot run (dtype, layout) are
/// kUnsupported. Every problem is checked before any is computed, so
/// nothing is written on error.
class CpuGemmProvider {
 public:
  virtual ~CpuGemmProvider() = default;

  /// Stable short name: "native", "openblas", "blis", "null".
  virtual std::string_view name() const noexcept = 0;
  /// Thread-count and placement capability, probed once at construction.
  virtual const ProviderCapability& capability() const noexcept = 0;
  /// Accepted dtypes and layouts, fixed at construction.
  virtual GemmSupport support() const noexcept = 0;

  virtual Status gemm(const GemmRequest& request, const ParallelContext& ctx) const = 0;
  virtual Status gemm_strided_batched(const StridedBatchedGemmRequest& request, const ParallelContext& ctx) const = 0;
  virtual Status gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const = 0;
};

/// True when a provider with this capability can be forced to run a call
/// sequentially on the calling worker, i.e. may be used inside outer
/// (ParallelMode::kOuter) jobs given a sequential context.
bool can_run_sequential_per_worker(const ProviderCapability& capability) noexcept;

/// The skeleton provider (Note [Null GEMM provider]): validates, then answers
/// kUnsupported everywhere. Thread-safe.
class NullGemmProvider final : public CpuGemmProvider {
 public:
  NullGemmProvider();
  std::string_view name() const noexcept override { return "null"; }
  const ProviderCapability& capability() const noexcept override { return capability_; }
  GemmSupport support() const noexcept override { return {}; }
  Status gemm(const GemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_strided_batched(const StridedBatchedGemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const override;

 private:
  ProviderCapability capability_;
};

// ---- for provider implementers -------------------------------------------

/// Validates one problem (Note [GEMM operand strides]): kInvalidArgument for
/// bad extents, strides or null data, kAliasConflict when C overlaps itself
/// or the address range of A or B. Names `where`. Does not check dtype support.
Status validate_gemm_problem(DType dtype, const GemmProblem& problem, std::string_view where);
/// Validates a strided-batched request (problem + batch strides).
Status validate_strided_batched(const StridedBatchedGemmRequest& request, std::string_view where);
/// kUnsupported unless `support` accepts `dtype`.
Status check_dtype_supported(const GemmSupport& support, DType dtype, std::string_view provider);
/// kUnsupported unless `support` accepts the layout of every operand.
Status check_layout_supported(const GemmSupport& support, const GemmProblem& problem, std::string_view provider);

}  // namespace tenferro::cpu
