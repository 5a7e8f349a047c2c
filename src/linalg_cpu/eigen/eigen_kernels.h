// Internal: the Eigen provider's kernels, one template per operation group,
// instantiated for float, double, complex<float> and complex<double> in
// their own translation units (eigen_qr_eig.cpp, eigen_lu.cpp) so no single
// file has to compile every Eigen decomposition. Buffers follow Note
// [Linalg provider contract].
//
// Note [Eigen kernels per type]
// Eigen's decompositions are the most expensive code of the build to
// compile (docs/performance_notes.md, "Build time"). The
// build therefore compiles eigen_qr_eig.cpp once per type
// (src/linalg_cpu/CMakeLists.txt generates the wrappers, each defining
// TENFERRO_EIGEN_ONLY_TYPE), so the types compile in parallel and no single
// object holds up the end of the build. TENFERRO_EIGEN_INSTANTIATE expands to
// the one type when it is set and to every type otherwise.
#pragma once

#include <complex>
#include <cstdint>
#include <span>

#include "tenferro/base/status.h"
#include "tenferro/linalg_cpu/linalg_provider.h"

// Every Eigen kernel runs on the calling thread (no OpenMP inside Eigen).
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

namespace tenferro::linalg::internal {

inline constexpr std::string_view kEigenProviderName = "eigen 3.4";

// eigen_qr_eig.cpp.
template <class T>
Status eigen_qr(const LinalgProblem& problem, const LinalgBuffers& buffers);
template <class T>
Status eigen_eigh(const LinalgProblem& problem, const LinalgBuffers& buffers);
template <class T>
Status eigen_eig(const LinalgProblem& problem, const LinalgBuffers& buffers);

// eigen_lu.cpp: in-place LU / LLT. `pivots` holds max(m, n) ints of workspace.
template <class T>
Status eigen_cholesky(const LinalgProblem& problem, const LinalgBuffers& buffers);
template <class T>
Status eigen_lu(const LinalgProblem& problem, const LinalgBuffers& buffers, int* pivots);
template <class T>
Status eigen_solve(const LinalgProblem& problem, const LinalgBuffers& buffers, int* pivots);
template <class T>
Status eigen_triangular_solve(const LinalgProblem& problem, const LinalgBuffers& buffers);
template <class T>
Status eigen_inverse(const LinalgProblem& problem, const LinalgBuffers& buffers, int* pivots);

#define TENFERRO_EIGEN_FOR_EACH_TYPE(MACRO) \
  MACRO(float)                              \
  MACRO(double)                             \
  MACRO(std::complex<float>)                \
  MACRO(std::complex<double>)

#ifdef TENFERRO_EIGEN_ONLY_TYPE
#define TENFERRO_EIGEN_INSTANTIATE(MACRO) MACRO(TENFERRO_EIGEN_ONLY_TYPE)
#else
#define TENFERRO_EIGEN_INSTANTIATE(MACRO) TENFERRO_EIGEN_FOR_EACH_TYPE(MACRO)
#endif

}  // namespace tenferro::linalg::internal
