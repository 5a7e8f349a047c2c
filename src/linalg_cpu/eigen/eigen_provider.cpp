// EigenLinalgProvider: support checks, the pivot workspace of the LU-based
// kernels and dispatch to the per-operation kernels (eigen_kernels.h).
#include "tenferro/linalg_cpu/eigen_provider.h"

#include <algorithm>

#include "linalg_cpu/eigen/eigen_kernels.h"
#include "linalg_cpu/workspace_layout.h"

namespace tenferro::linalg {

namespace {

using namespace internal;

// Note [No Eigen SVD]: the SVD family (svd, lstsq, pinv) is LAPACK's. Eigen's
// BDCSVD was slower than LAPACK's gesdd at every size of the measured
// provider table, so the default policy never chose it, yet it was a quarter
// of the build's compile time (docs/performance_notes.md, "Build time").
// Refusing it sends these calls to the next candidate.
constexpr std::string_view kNoSvdReason =
    "the SVD family (svd, lstsq, pinv) is left to the LAPACK provider (Note [No Eigen SVD])";

// Eigen indexes with std::ptrdiff_t, but the pivot kernels store int.
constexpr std::int64_t kMaxExtent = std::int64_t{1} << 30;

bool uses_pivots(LinalgOpKind kind) noexcept {
  return kind == LinalgOpKind::kLu || kind == LinalgOpKind::kSolve || kind == LinalgOpKind::kInv;
}

template <class T>
Status run_typed(const LinalgProblem& p, const LinalgBuffers& b, int* pivots) {
  switch (p.kind()) {
    case LinalgOpKind::kQr:
      return eigen_qr<T>(p, b);
    case LinalgOpKind::kEigh:
      return eigen_eigh<T>(p, b);
    case LinalgOpKind::kEig:
      return eigen_eig<T>(p, b);
    case LinalgOpKind::kCholesky:
      return eigen_cholesky<T>(p, b);
    case LinalgOpKind::kLu:
      return eigen_lu<T>(p, b, pivots);
    case LinalgOpKind::kSolve:
      return eigen_solve<T>(p, b, pivots);
    case LinalgOpKind::kTriangularSolve:
      return eigen_triangular_solve<T>(p, b);
    case LinalgOpKind::kInv:
      return eigen_inverse<T>(p, b, pivots);
    default:
      return unsupported_problem(kEigenProviderName, p, "not a provider operation");
  }
}

}  // namespace

EigenLinalgProvider::EigenLinalgProvider()
    : capability_{cpu::ThreadCountControl::kSequential, cpu::PlacementControl::kCallingThread,
                  "Eigen 3.4 compiled with EIGEN_DONT_PARALLELIZE: every call runs on the calling thread"} {}

Result<LinalgKernelPlan> EigenLinalgProvider::plan(const LinalgProblem& p) const {
  switch (p.kind()) {
    case LinalgOpKind::kSvd:
    case LinalgOpKind::kLstsq:
    case LinalgOpKind::kPinv:
      return unsupported_problem(name(), p, kNoSvdReason);
    case LinalgOpKind::kMatrixNorm:
    case LinalgOpKind::kVectorNorm:
    case LinalgOpKind::kDet:
    case LinalgOpKind::kSlogdet:
      return unsupported_problem(name(), p, "not a provider operation");
    default:
      break;
  }
  if (p.dtype != DType::kFloat32 && p.dtype != DType::kFloat64 && p.dtype != DType::kComplex64 &&
      p.dtype != DType::kComplex128) {
    return unsupported_problem(name(), p, "unsupported dtype");
  }
  if (std::max({p.m, p.n, p.nrhs}) > kMaxExtent) {
    return unsupported_problem(name(), p, "extents beyond 2^30 (the pivot kernels store int)");
  }
  LinalgKernelPlan plan;
  if (uses_pivots(p.kind())) {
    WorkspaceLayout layout;
    layout.take<int>(std::max(p.m, p.n));
    plan.workspace_bytes = layout.bytes();
  }
  return plan;
}

Status EigenLinalgProvider::run(const LinalgProblem& p, const LinalgKernelPlan& /*plan*/, const LinalgBuffers& b,
                                std::span<std::byte> workspace) const {
  int* pivots = nullptr;
  if (uses_pivots(p.kind())) {
    WorkspaceLayout layout(workspace);
    pivots = layout.take<int>(std::max(p.m, p.n));
  }
  switch (p.dtype) {
    case DType::kFloat32:
      return run_typed<float>(p, b, pivots);
    case DType::kFloat64:
      return run_typed<double>(p, b, pivots);
    case DType::kComplex64:
      return run_typed<std::complex<float>>(p, b, pivots);
    default:
      return run_typed<std::complex<double>>(p, b, pivots);
  }
}

}  // namespace tenferro::linalg
