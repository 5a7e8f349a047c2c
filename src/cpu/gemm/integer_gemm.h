// Integer matrix products for the dot_general composite (no GEMM provider
// computes integers).
//
// Note [Integer GEMM]
// int32 and int64 contractions (numpy.einsum and torch.einsum users contract
// integer tensors: path counts, adjacency powers, index arithmetic) run a
// BLIS-shaped kernel instead of scalar triple loops over the operands'
// strides, which were 5-10x slower than numpy's einsum at n = 256:
//  - an operation's m, n and k groups arrive as element-offset tables
//    (any strides, several axes per group), read only by the packing
//    routines, which gather an mc x kc block of the lhs into mr-row panels
//    and a kc x nc block of the rhs into nr-column panels;
//  - a register tile of mr x nr accumulators (GCC vector extensions over
//    the unsigned type, so products and sums wrap modulo 2^bits as numpy's
//    integer arithmetic does) runs over the panels; the tile is added into
//    the output through its offset tables, in whole vectors when the
//    output's n offsets are unit stride;
//  - one job is one (batch index, mc row block, nc column block) and packs
//    its own blocks, so jobs are independent: the composite spreads them
//    over the context's workers (Note [One fan-out level]) and each takes a
//    packing buffer from the composite's workspace pool.
// The tile is compiled per ISA (Note [ISA translation units]): AVX-512
// (8 rows x 2 zmm), AVX2 (4 x 2 ymm), portable (4 x 2 xmm); the context's
// kernel_isa() cap picks one, so TENFERRO_CPU_ISA=avx2 runs the AVX2 tile.
//
// Note [Narrow int64 products]
// AVX2 has no 64-bit lane multiply (GCC builds one from three vpmuludq,
// shifts and adds) and AVX-512's vpmullq is three uops on Intel; but a
// product of two int32 values is exact in 64 bits, and vpmuldq (one uop on
// both) forms it from the sign-extended low halves of the lanes. The
// packing routines note whether every value of a packed block fits in
// int32 (the usual case: counts, indices, small weights), and such block
// pairs run the tile with vpmuldq. Sums still wrap modulo 2^64, so the
// result is the same as with the full multiply.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tenferro/cpu/cpu_isa.h"

namespace tenferro::cpu::internal {

/// One job: rows [0, m) and columns [0, n) of one product,
/// out[mo[i] + no[j]] = sum over q < k of lhs[ml[i] + kl[q]] * rhs[kr[q] + nr[j]],
/// the pointers already at the job's batch index, the tables at its first
/// row / column. `unit_n`: no[j] == j for every j of the whole product.
template <class T>
struct IntegerGemmJob {
  const T* lhs;
  const T* rhs;
  T* out;
  const std::int64_t* ml;
  const std::int64_t* mo;
  const std::int64_t* nr;
  const std::int64_t* no;
  const std::int64_t* kl;
  const std::int64_t* kr;
  std::int64_t m, n, k;
  bool unit_n;
};

/// The kernels of one ISA for one element type.
template <class T>
struct IntegerGemmKernel {
  /// Elements of packing workspace a job of at most m x n x k needs
  /// (the buffer 64-byte aligned).
  std::int64_t (*workspace)(std::int64_t m, std::int64_t n, std::int64_t k) = nullptr;
  /// Runs `job` (m <= kMc, n <= kNc, k >= 1) using `workspace`; returns how many
  /// depth blocks ran narrow (Note [Narrow int64 products]).
  std::int64_t (*run)(const IntegerGemmJob<T>& job, T* workspace) = nullptr;
};

struct IntegerGemmTable {
  const char* isa = "";
  IntegerGemmKernel<std::int32_t> i32;
  IntegerGemmKernel<std::int64_t> i64;

  /// The kernels for T (int32_t or int64_t).
  template <class T>
  const IntegerGemmKernel<T>& kernel() const noexcept {
    if constexpr (std::is_same_v<T, std::int32_t>) {
      return i32;
    } else {
      return i64;
    }
  }
};

/// Rows and columns of one job at most; depth is blocked inside a job.
inline constexpr std::int64_t kIntegerGemmMc = 128;
inline constexpr std::int64_t kIntegerGemmNc = 1024;

/// The table for `isa` (kAuto: layout_kernel_isa()); an ISA the CPU lacks
/// is never requested (the context's cap is resolved against the CPU).
const IntegerGemmTable& integer_gemm_table(CpuIsa isa) noexcept;

const IntegerGemmTable& avx512_integer_gemm_table() noexcept;
const IntegerGemmTable& avx2_integer_gemm_table() noexcept;
const IntegerGemmTable& portable_integer_gemm_table() noexcept;

}  // namespace tenferro::cpu::internal
