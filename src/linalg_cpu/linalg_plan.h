// Internal: the linalg engine's prepared plan (the ProviderPlan of a
// prepared linalg node) and the per-matrix processing it drives (Note
// [Linalg extension engine] in cpu_engine.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/linalg_cpu/linalg_provider.h"
#include "tenferro/linalg_cpu/provider_policy.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::linalg::internal {

/// Byte offsets of the per-matrix scratch regions (64-byte aligned), and the
/// matrices' shapes and leading dimensions (data filled per call).
struct ScratchLayout {
  std::size_t a = 0, b = 0, u = 0, v = 0, values = 0, pivots = 0, order = 0, workspace = 0;
  std::size_t total = 0;
  MatrixBuffer a_shape, b_shape, u_shape, v_shape;
};

/// See Note [Linalg extension engine]. Immutable; shared by every run of a
/// prepared node (or built per eager call).
struct LinalgPlan final : runtime::ProviderPlan {
  LinalgAttributes attributes;           ///< the operation
  LinalgAttributes provider_attributes;  ///< what the provider computes (lu for det, values-only svd for norms)
  DType dtype = DType::kFloat64;
  Dims batch_shape;
  std::int64_t batch = 1;
  std::int64_t m = 0, n = 0, nrhs = 0;
  /// Null for engine-computed operations (most norms).
  const CpuLinalgProvider* provider = nullptr;
  LinalgKernelPlan kernel;
  ScratchLayout layout;
  /// Estimated flops of one matrix (batch policy only).
  double flops = 0;
  std::string reason;  ///< provider choice, for explain()

  LinalgProblem problem() const noexcept {
    return {&provider_attributes,
            dtype,
            m,
            n,
            nrhs,
            attributes.kind == LinalgOpKind::kMatrixNorm && attributes.norm == NormOrder::kTwo};
  }
  cpu::ThreadCountControl thread_count() const noexcept {
    return provider != nullptr ? provider->capability().thread_count : cpu::ThreadCountControl::kSequential;
  }
};

/// Norms computed from the operand where it lies, without scratch (Note
/// [Elementwise norms] in process_matrix.cpp): vector norms and Frobenius.
inline bool is_elementwise_norm(const LinalgAttributes& a) noexcept {
  return a.kind == LinalgOpKind::kVectorNorm ||
         (a.kind == LinalgOpKind::kMatrixNorm && a.norm == NormOrder::kFrobenius);
}

/// The 1, -1, inf and -inf matrix norms: the largest or smallest absolute
/// column or row sum, read in place into max(m, n) sums of scratch (Note
/// [Sum norms] in process_matrix.cpp).
inline bool is_sum_norm(const LinalgAttributes& a) noexcept {
  return a.kind == LinalgOpKind::kMatrixNorm && (a.norm == NormOrder::kOne || a.norm == NormOrder::kNegOne ||
                                                 a.norm == NormOrder::kInf || a.norm == NormOrder::kNegInf);
}

/// Validates `shapes` for `attributes` (kPrepare errors naming what was
/// expected and found), chooses the provider and plans it. kUnsupported
/// when no provider serves the problem.
Result<std::shared_ptr<LinalgPlan>> build_plan(const LinalgProviderPolicy& policy, const LinalgAttributes& attributes,
                                               DType dtype, std::span<const IntArrayRef> shapes);

/// One vector's elementwise norm (a batch of one) of at least this many
/// bytes is split over the context's threads (below, waking the workers
/// costs more than it saves: a 1 MB float32 vector took 16 us split, 10 us
/// not; 2 MB of float64 17 us split, 27 us not).
inline constexpr std::int64_t kSplitNormMinBytes = std::int64_t{1} << 21;

/// Computes the elementwise norm of a batch of one long vector (or matrix
/// whose elements are equally spaced) split over `parallel`'s threads;
/// false (nothing written) when it does not apply. Never fails.
bool split_norm(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                const cpu::ParallelContext& parallel);

/// Computes the vector norms of batch elements [begin, end) when the
/// vectors lie across the batch (the last batch axis has unit stride, the
/// vector axis does not), a block of adjacent vectors at a time; false
/// (nothing written) otherwise. Never fails.
bool norms_across_batch(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                        std::int64_t begin, std::int64_t end);

/// Computes batch element `index` of `plan`: gathers the inputs into
/// `scratch` (plan.layout.total bytes), calls the provider, normalises and
/// writes the outputs. Errors are stage kNone without the batch index.
Status process_matrix(const LinalgPlan& plan, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                      std::int64_t index, std::span<std::byte> scratch);

}  // namespace tenferro::linalg::internal
