// CpuLinalgProvider: what a CPU linear-algebra library implements for the
// linalg extension, and LinalgProviderBundle, the family-level bundle of
// optional per-operation slots the engine resolves at prepare time.
//
// Note [Linalg provider contract]
// A provider computes ONE matrix problem per call; the engine owns batching,
// the choice of ParallelMode, layout conversion, input validation (shapes,
// NaN/Inf) and the normalisation of results (Note [Linalg gauge convention]
// in docs/linalg.md). A call receives column-major buffers the engine laid
// out in its own scratch (LinalgBuffers, roles per operation below) and a
// workspace of the size plan() answered for the same problem.
//  - plan() runs at prepare time. It answers kUnsupported for a
//    problem the provider does not implement (operation, dtype, options, or
//    an extent beyond the library's integer range): the only answer that
//    lets the engine consider another provider. It never touches data.
//  - run() must not allocate per call beyond what the library does
//    internally (documented per provider), must not create threads, and
//    runs exactly the algorithm asked for: a values-only SVD never computes
//    vectors. Numerical failures are typed errors: kSingularMatrix and
//    kNotPositiveDefinite carrying LAPACK's info (first zero pivot or
//    failing leading minor, 1-based) in the message, kNoConvergence.
//  - Providers never see strided or row-major data, never see NaN/Inf
//    (the engine rejects them first) and never see an empty matrix.
// Buffer roles (k = min(m, n); all matrices column-major with ld >= rows):
//   svd              a m×n (destroyed) -> values k (real), u m×(m|k), v (Vᴴ) (n|k)×n;
//                    with largest_value_only (values only) just values[0] = σ_max
//   qr               a m×n (destroyed) -> u (Q) m×(k|m), v (R) (k|m)×n
//   eigh             a n×n lower triangle -> values n (real, ascending); a := V
//   eig              a n×n (destroyed) -> values n (complex), u (V) n×n complex
//   cholesky         a n×n lower triangle -> a := L (strict upper part zeroed)
//   lu               a m×n -> a := packed L\U, pivots k (0-based)
//   solve            a n×n (destroyed), b n×r -> b := X
//   triangular_solve a n×n (read only), b n×r -> b := X
//   inverse          a n×n -> a := A⁻¹
//   lstsq            a m×n (destroyed), b max(m,n)×r holding B in its first m
//                    rows -> X in its first n rows, values k (real, descending)
//   pinv             a m×n (destroyed) -> v n×m
// Implementations are immutable after construction and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::linalg {

/// A column-major matrix in engine scratch. Borrowed for one call.
struct MatrixBuffer {
  void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 1;  ///< leading dimension, >= max(1, rows)
};

/// One matrix problem, value-free (what plan() and run() see).
struct LinalgProblem {
  /// The operation; det and slogdet arrive as kLu, matrix_norm's spectral
  /// orders as a kSvd values-only problem (the engine composes the rest).
  const LinalgAttributes* attributes = nullptr;
  DType dtype = DType::kFloat64;
  std::int64_t m = 0;     ///< rows of a
  std::int64_t n = 0;     ///< columns of a
  std::int64_t nrhs = 0;  ///< columns of b (solve, triangular_solve, lstsq)
  /// A values-only SVD of which only values[0], the largest singular value
  /// (matrix_norm(2)), is read: a provider may compute that value alone
  /// (Note [Spectral norm from the Gram matrix] in lapack_kernels.cpp).
  bool largest_value_only = false;

  LinalgOpKind kind() const noexcept { return attributes->kind; }
};

/// The buffers of one call (Note [Linalg provider contract] lists roles).
struct LinalgBuffers {
  MatrixBuffer a;
  MatrixBuffer b;
  MatrixBuffer u;
  MatrixBuffer v;
  void* values = nullptr;
  std::int64_t* pivots = nullptr;
};

/// What a provider prepared for one problem: the workspace it needs and
/// up to four provider-private sizes (LAPACK's lwork, liwork, ...) so run()
/// repeats no query. Trivially copyable; stored in the engine's plan.
struct LinalgKernelPlan {
  std::size_t workspace_bytes = 0;
  std::int64_t sizes[4] = {0, 0, 0, 0};
  /// The provider computes this problem with a kernel of its own instead of
  /// its library's (the LAPACK provider's small LU: Note [Small LU]);
  /// counted by CpuLinalgEngine::stats().inline_kernel_matrices.
  bool inline_kernel = false;
};

/// A CPU linear-algebra provider (Note [Linalg provider contract]). The
/// base class is the documented null skeleton: every operation answers
/// kUnsupported, so a new provider overrides only what it implements.
class CpuLinalgProvider {
 public:
  virtual ~CpuLinalgProvider() = default;
  /// For explain(): "lapack(openblas 0.3.21 serial)", "eigen 3.4.0".
  virtual std::string_view name() const noexcept = 0;
  /// Thread-count and placement capability, fixed at construction (the
  /// engine's ParallelMode choice depends on it: Note [Linalg batch
  /// parallelism] in cpu_engine.h).
  virtual const cpu::ProviderCapability& capability() const noexcept = 0;
  /// Prepares `problem` (prepare time; may ask the library for workspace
  /// sizes), or kUnsupported. The default: kUnsupported.
  virtual Result<LinalgKernelPlan> plan(const LinalgProblem& problem) const;
  /// Computes `problem`. Preconditions: `plan` came from plan(problem) and
  /// `workspace` holds at least plan.workspace_bytes (64-byte aligned). The
  /// default: kUnsupported.
  virtual Status run(const LinalgProblem& problem, const LinalgKernelPlan& plan, const LinalgBuffers& buffers,
                     std::span<std::byte> workspace) const;
};

/// The null provider: a named skeleton that supports nothing.
std::shared_ptr<const CpuLinalgProvider> make_null_linalg_provider();

/// The family-level bundle: one optional provider per slot (null: the slot
/// is not provided and its operations are kUnsupported). The same provider
/// may fill several slots. Regular value type.
struct LinalgProviderBundle {
  std::shared_ptr<const CpuLinalgProvider> svd;
  std::shared_ptr<const CpuLinalgProvider> qr;
  std::shared_ptr<const CpuLinalgProvider> eigh;
  std::shared_ptr<const CpuLinalgProvider> eigvalsh;
  std::shared_ptr<const CpuLinalgProvider> eig;
  std::shared_ptr<const CpuLinalgProvider> cholesky;
  std::shared_ptr<const CpuLinalgProvider> lu;
  std::shared_ptr<const CpuLinalgProvider> solve;
  std::shared_ptr<const CpuLinalgProvider> triangular_solve;
  std::shared_ptr<const CpuLinalgProvider> inverse;
  std::shared_ptr<const CpuLinalgProvider> lstsq;
  std::shared_ptr<const CpuLinalgProvider> pinv;

  /// Every slot filled with `provider`.
  static LinalgProviderBundle all(const std::shared_ptr<const CpuLinalgProvider>& provider);
  /// The slot's provider (null for LinalgSlot::kNone or an empty slot).
  std::shared_ptr<const CpuLinalgProvider> get(LinalgSlot slot) const noexcept;
  /// Fills `slot` (ignored for LinalgSlot::kNone).
  void set(LinalgSlot slot, std::shared_ptr<const CpuLinalgProvider> provider) noexcept;
};

// --- helpers shared by providers -------------------------------------------------

/// The typed numerical errors of Note [Linalg provider contract] (stage
/// kNone; the engine adds the batch element and the stage).
Error singular_matrix_error(LinalgOpKind op, std::int64_t info);
Error not_positive_definite_error(std::int64_t info);
Error no_convergence_error(LinalgOpKind op, std::string_view provider, std::int64_t info);
/// kUnsupported naming the provider and the problem.
Error unsupported_problem(std::string_view provider, const LinalgProblem& problem, std::string_view why);

}  // namespace tenferro::linalg
