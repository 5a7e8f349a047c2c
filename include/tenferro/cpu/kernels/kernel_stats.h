// KernelStats: which loop a CPU kernel call actually ran. Callers that want
// to know (tests proving a fast path is taken, explain/metrics output) pass a
// pointer; kernels never keep global counters.
#pragma once

#include <cstdint>

namespace tenferro::cpu {

/// Counters a kernel call adds to when the caller passes one. Each counter
/// counts calls (not elements). Updated only by the calling thread, before
/// or after the parallel part; thread-compatible.
struct KernelStats {
  std::uint64_t flat_contiguous = 0;   ///< every operand row-major dense: one flat loop, no plan built
  std::uint64_t contiguous_inner = 0;  ///< strided plan whose inner loop is contiguous in every operand
  std::uint64_t broadcast_inner = 0;   ///< inner loop with a stride-0 (broadcast) input, others contiguous
  std::uint64_t strided_inner = 0;     ///< general strided inner loop
  std::uint64_t tiled_inner = 0;       ///< of the above loops, visited in 2-D tiles (an input's fastest axis differs)
  std::uint64_t packed_tiles = 0;      ///< 2-D tiles with transposed inputs packed into a buffer, contiguous inner loop
  std::uint64_t memcpy_copies = 0;     ///< copy_into that reduced to one flat memcpy
  std::uint64_t run_copies = 0;        ///< copy_into copying contiguous runs
  std::uint64_t tiled_transposes = 0;  ///< copy_into through the blocked transpose kernel
  std::uint64_t vector_tiles = 0;      ///< of those, with the SIMD micro-kernel
  std::uint64_t streaming_stores = 0;  ///< copy_into using non-temporal stores
  std::uint64_t staged_streaming = 0;  ///< of those, through an L1 stage (destination lines not whole)
  std::uint64_t parallel_calls = 0;    ///< calls that fanned out through ParallelContext::parallel_for
  std::uint64_t vector_math = 0;       ///< unary calls whose contiguous runs call a vector math function
};

}  // namespace tenferro::cpu
