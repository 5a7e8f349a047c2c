// EigenLinalgProvider: the linalg provider over Eigen 3.4 (header-only,
// compiled into tenferro with EIGEN_DONT_PARALLELIZE, so every call runs on
// the calling thread).
#pragma once

#include <memory>

#include "tenferro/linalg_cpu/linalg_provider.h"

namespace tenferro::linalg {

/// Implements every slot but the SVD family for float32, float64, complex64
/// and complex128: qr HouseholderQR, eigh
///   SelfAdjointEigenSolver, eig EigenSolver / ComplexEigenSolver, cholesky
///   and lu Eigen's in-place blocked LLT and partial-pivoting LU kernels
///   (which report the failing minor / first zero pivot like LAPACK's
///   info), solve and inverse on that LU, triangular_solve triangularView.
/// svd, lstsq and pinv answer kUnsupported: LAPACK was faster at every size
/// measured (Note [No Eigen SVD] in src/linalg_cpu/eigen/eigen_provider.cpp).
/// Capability: kSequential / kCallingThread. Eigen's decomposition objects
/// allocate their own working memory inside run() (the LU-based kernels
/// take their pivots from the engine's workspace). Immutable; thread-safe.
class EigenLinalgProvider final : public CpuLinalgProvider {
 public:
  EigenLinalgProvider();

  std::string_view name() const noexcept override { return "eigen 3.4"; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }
  Result<LinalgKernelPlan> plan(const LinalgProblem& problem) const override;
  Status run(const LinalgProblem& problem, const LinalgKernelPlan& plan, const LinalgBuffers& buffers,
             std::span<std::byte> workspace) const override;

 private:
  cpu::ProviderCapability capability_;
};

}  // namespace tenferro::linalg
