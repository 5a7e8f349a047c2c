// Internal: Eigen views of the engine's column-major buffers.
#pragma once

#include "linalg_cpu/eigen/eigen_kernels.h"

#include <Eigen/Core>

namespace tenferro::linalg::internal {

template <class T>
using EigenMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <class T>
using EigenMap = Eigen::Map<EigenMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using EigenReal = typename Eigen::NumTraits<T>::Real;

/// The `rows` x `cols` view of `buffer` (its leading dimension as stride).
template <class T>
EigenMap<T> map(const MatrixBuffer& buffer, std::int64_t rows, std::int64_t cols) {
  return EigenMap<T>(static_cast<T*>(buffer.data), rows, cols, Eigen::OuterStride<>(buffer.ld));
}
template <class T>
EigenMap<T> map(const MatrixBuffer& buffer) {
  return map<T>(buffer, buffer.rows, buffer.cols);
}

}  // namespace tenferro::linalg::internal
