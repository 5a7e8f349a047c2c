// The per-ISA building blocks of the native GEMM (BLIS-style): a register
// micro-kernel, the two packing routines and the cache blocking tuned for
// them, and the register tiles for small problems. Each ISA translation unit (gemm_kernels_avx512.cpp, _avx2.cpp,
// _portable.cpp) provides one GemmKernelTable; the driver (native_gemm.cpp)
// picks a table once, at provider construction.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>

namespace tenferro::cpu::internal {

/// One problem C = alpha * A * B + beta * C of element type T, strides in
/// elements, after the driver's orientation (C's unit stride along M).
template <class T>
struct TypedProblem {
  std::int64_t m, n, k;
  const T* a;
  std::int64_t rsa, csa;
  const T* b;
  std::int64_t rsb, csb;
  T* c;
  std::int64_t rsc, csc;
  T alpha, beta;
};

/// A product without the C99 Annex G NaN recovery of std::complex's
/// operator* (BLAS semantics); the plain product for real types.
template <class T>
inline T plain_mul(T x, T y) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return T(x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real());
  } else {
    return x * y;
  }
}

/// Rows [from, m) of p's A as a column-major block at `local` (leading
/// dimension ld >= m - from, the rows past m zero): the rows the register
/// tiles do not read in place (Note [Small GEMM] in small_tiles.h).
template <class T>
inline void copy_a_rows(const TypedProblem<T>& p, std::int64_t from, std::int64_t ld, T* local) {
  const std::int64_t copied = p.m - from;
  for (std::int64_t l = 0; copied > 0 && l < p.k; ++l) {
    T* col = local + l * ld;
    const T* src = p.a + from * p.rsa + l * p.csa;
    if (p.rsa == 1) {  // a loop: a memcpy call per column costs more than 16 elements
      for (std::int64_t i = 0; i < copied; ++i) col[i] = src[i];
    } else {
      for (std::int64_t i = 0; i < copied; ++i) col[i] = src[i * p.rsa];
    }
    for (std::int64_t i = copied; i < ld; ++i) col[i] = T(0);
  }
}

/// How a small real problem ran in register tiles, if it did (Note [Small
/// GEMM] in small_tiles.h).
enum class SmallTilePath { kNone, kInPlace, kPanels };

/// Kernels and blocking for element type T (float, double, std::complex<>).
///
/// Packed layouts: pack_a stores an mc x kc block of A as ceil(mc / mr)
/// micro-panels, each kc steps of mr contiguous elements (rows past mc are
/// zero). pack_b stores a kc x nc block of B as ceil(nc / nr) micro-panels,
/// each kc steps of nr contiguous elements (columns past nc are zero). Both
/// buffers are 64-byte aligned; panels are a multiple of 64 bytes apart.
template <class T>
struct GemmKernelSet {
  int mr = 0;  ///< register block rows
  int nr = 0;  ///< register block columns
  int mc = 0;  ///< rows of A packed per block (L2-resident), multiple of mr
  int kc = 0;  ///< depth per block (B micro-panel L1-resident)
  int nc = 0;  ///< columns of B packed per block, multiple of nr
  /// C[0:m_valid, 0:n_valid] = alpha * (Apanel * Bpanel) + beta * C, with C
  /// at general strides; beta == 0 never reads C. m_valid <= mr, n_valid <= nr.
  void (*micro_kernel)(std::int64_t k, const T* a_panel, const T* b_panel, T alpha, T beta, T* c, std::int64_t rs_c,
                       std::int64_t cs_c, std::int64_t m_valid, std::int64_t n_valid) = nullptr;
  /// micro_kernel with B read in place, column j and depth step p at
  /// b[p * rs_b + j * cs_b], instead of from a packed panel (Note [Unpacked
  /// B] in native_gemm.cpp); reads no column past n_valid. Null: B is always
  /// packed.
  void (*micro_kernel_in_place_b)(std::int64_t k, const T* a_panel, const T* b, std::int64_t rs_b, std::int64_t cs_b,
                                  T alpha, T beta, T* c, std::int64_t rs_c, std::int64_t cs_c, std::int64_t m_valid,
                                  std::int64_t n_valid) = nullptr;
  void (*pack_a)(std::int64_t mc, std::int64_t kc, const T* a, std::int64_t rs, std::int64_t cs, T* dst) = nullptr;
  /// Columns [j0, j1) of a depth-1 problem, C = alpha * a b + beta * C
  /// written once (Note [Rank-1 GEMM] in micro_kernels.h).
  void (*rank1)(const TypedProblem<T>& p, std::int64_t j0, std::int64_t j1) = nullptr;
  void (*pack_b)(std::int64_t kc, std::int64_t nc, const T* b, std::int64_t rs, std::int64_t cs, T* dst) = nullptr;
  /// Rows [i0, i1) of a problem with n == 1, A read in place (Note
  /// [Matrix-vector GEMM] in gemv_kernels.h).
  void (*gemv)(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) = nullptr;
  /// Members [j0, j1) of a batch of problems with n == 1, member j's
  /// operands at p.a + j * sa, p.b + j * sb, p.c + j * sc (gemv_batch in
  /// gemv_kernels.h, Note [Batched dot products]).
  void (*gemv_batch)(const TypedProblem<T>& p, std::int64_t sa, std::int64_t sb, std::int64_t sc, std::int64_t j0,
                     std::int64_t j1) = nullptr;
  /// Rows [i0, i1) of a problem with rsa == 1 and 2 <= n <=
  /// kSweepMaxColumns, A read in place (Note [Few-column GEMM] in
  /// gemv_kernels.h).
  void (*few_columns)(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) = nullptr;
  /// Rows [i0, i1) of a complex problem with csa == rsb == 1 and at most
  /// kSweepMaxColumns columns, every column per block of rows (Note
  /// [Complex dot columns] in gemv_kernels.h); null for real types.
  void (*dot_columns)(const TypedProblem<T>& p, std::int64_t i0, std::int64_t i1) = nullptr;
  /// Problems of at most this many multiply-adds may run unpacked (the
  /// provider's default small_max_mnk for this type).
  std::int64_t small_max_mnk = 16 * 16 * 16;
  /// Register tiles for small problems (Note [Small GEMM] in small_tiles.h,
  /// Note [Small complex GEMM] in complex_small_tiles.h). kNone, nothing
  /// written, when they cannot take `p`.
  SmallTilePath (*small_tiles)(const TypedProblem<T>& p) = nullptr;
  /// The set that runs blocked problems whose M spans at most
  /// kInPlaceBMaxPanels of its micro-tiles (Note [Unpacked B] in
  /// native_gemm.cpp), where this set cannot read B in place (Note
  /// [Row-vector kernel] in micro_kernels.h); null: this set runs them.
  const GemmKernelSet* thin_m = nullptr;
};

/// The four dtypes of one ISA.
struct GemmKernelTable {
  const char* isa = "";
  GemmKernelSet<float> f32;
  GemmKernelSet<double> f64;
  GemmKernelSet<std::complex<float>> c64;
  GemmKernelSet<std::complex<double>> c128;
};

/// Tables compiled with the matching target flags; call only after checking
/// the CPU supports the ISA (cpu_supports() in tenferro/cpu/cpu_isa.h).
const GemmKernelTable& avx512_kernel_table() noexcept;
const GemmKernelTable& avx2_kernel_table() noexcept;
const GemmKernelTable& portable_kernel_table() noexcept;

}  // namespace tenferro::cpu::internal
