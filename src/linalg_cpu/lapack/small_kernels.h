// Internal: LU with partial pivoting and Householder QR for small matrices,
// run inline by the LAPACK provider (Notes [Small LU], [Small QR]).
#pragma once

#include <cstdint>

namespace tenferro::linalg::internal {

// Note [Small LU]
// Up to kSmallLuMax rows and columns, getrf costs more in calls than in
// arithmetic: a 2 x 2 det took 118 ns a matrix, LAPACK's part of it spread
// over the LAPACKE wrapper, OpenBLAS's interface (a buffer taken under a
// mutex) and one idamax, gemv and scal call per column; numpy's det took
// 93 ns. So lu, solve and inverse (and det and
// slogdet, which go through lu) of such a matrix run the elimination of
// OpenBLAS's getf2 inline, left-looking like it: column j takes the swaps
// so far, then loses L times its rows above (each row's products summed in
// order, then subtracted, as getf2's dot and gemv calls do); its pivot is
// the first entry of largest |x| (|re| + |im| for complex, as i?amax), the
// rows are swapped, and the column below is multiplied by the pivot's
// reciprocal (divided by the pivot where that reciprocal would overflow).
// Solves apply the swaps and then the two triangular solves of getrs
// (trsm's loops); the inverse solves against the identity, as numpy's inv
// does (gesv), with the same operations on each element run along rows of
// the identity's image, so the innermost loop is n long.
// Every product and sum rounds on its own (the file is built with
// -ffp-contract=off). Whether a pivot is exactly zero depends on that
// rounding and order (Note [One LU arithmetic]): on real matrices of 2 to
// 5 rows with a repeated column this finds exactly numpy's zero pivots
// (tested; the reference getf2's right-looking order missed 12 % at 3 x 3).
// Beyond that numpy's answer depends on the CPU's OpenBLAS kernels (gemv
// fuses and blocks its sums): of 1,000 12 x 12 matrices whose last column
// repeats the first, numpy finds 8 % singular with OpenBLAS's SkylakeX
// kernels, 41 % with its Haswell kernels (Zen 3 runs those), this kernel
// 41 % on every CPU. solve, inv and det agree with each other always.
// Complex matrices agree with numpy less often (82 % at 2 x 2). Results
// agree with getrf's to rounding; pivots differ only between entries
// equal to rounding. Beyond the bound OpenBLAS's blocked getrf wins (48 x
// 48 float64 det: 13.1 against 12.3 us), and for the inverse once its n²
// elements pass kSmallInverseBytes (complex128 28 x 28: 16.1 against 14.9
// us; the identity's image and the factors leave L1); measured in
// docs/performance_notes.md.

/// The largest extent run inline, and the inverse's bound on its n² elements.
inline constexpr std::int64_t kSmallLuMax = 32;
inline constexpr std::int64_t kSmallInverseBytes = 9 * 1024;

/// LU of the column-major m x n matrix `a` in place (L unit lower below the
/// diagonal, U on and above), 0-based row swaps in pivots[0, min(m, n)).
/// Returns LAPACK's info: 0, or j + 1 for the first exactly zero pivot U(j, j)
/// (the factorization is still complete).
template <class T, class P>
std::int64_t small_lu(std::int64_t m, std::int64_t n, T* a, std::int64_t lda, P* pivots) noexcept;

/// B := A⁻¹ B for the n x n factorization `lu` (its pivots), B n x nrhs.
/// The factorization has no zero pivot.
template <class T, class P>
void small_lu_solve(std::int64_t n, std::int64_t nrhs, const T* lu, std::int64_t lda, const P* pivots, T* b,
                    std::int64_t ldb) noexcept;

/// The inverse of the n x n factorization `lu` (no zero pivot), written
/// over it; `work` holds n * n elements.
template <class T, class P>
void small_lu_inverse(std::int64_t n, T* lu, std::int64_t lda, const P* pivots, T* work) noexcept;

// Note [Small QR]
// geqrf and orgqr of a matrix with at most small_qr_max() rows and
// columns (32; complex 16) spent more in calls than in arithmetic too: a
// 2 x 2 float64 qr took 341 ns a matrix (numpy 196), ilaenv's string
// compares, dlamch, dlarfg's dnrm2/dlapy2 and one gemv and ger call per
// column among it. Such a matrix
// runs geqr2 and org2r inline, in their order: column j's reflector
// H = I - tau v vᴴ (v(0) = 1) maps it to beta e1 with beta real and of the
// opposite sign to its first entry (dlarfg/zlarfg: tau = 0 when the column
// below the diagonal is zero and the first entry real), Hᴴ is applied to
// the columns on its right, and Q = H(0) ... H(k-1) is formed backwards
// from the identity's columns. Norms are scaled only where their sum of
// squares would leave the normal range; a column too small for beta to be
// normal is scaled up first, as dlarfg does. The gauge convention (a real
// positive diagonal of R, Note [Linalg gauge convention]) is applied
// afterwards as for LAPACK's factors.

/// The largest extent run inline (beyond it, and for taller matrices,
/// OpenBLAS's blocked geqrf and orgqr win).
constexpr std::int64_t small_qr_max(bool complex) noexcept { return complex ? 16 : 32; }

/// Householder QR of the column-major m x n matrix `a` in place (R on and
/// above the diagonal, the reflectors' v below it), tau[0, min(m, n)).
template <class T>
void small_qr(std::int64_t m, std::int64_t n, T* a, std::int64_t lda, T* tau) noexcept;

/// Q's first `cols` columns (min(m, n) <= cols <= m) from the k reflectors
/// stored in the first k columns of `q` (m x cols, column-major) in place.
template <class T>
void small_qr_q(std::int64_t m, std::int64_t cols, std::int64_t k, T* q, std::int64_t ldq, const T* tau) noexcept;

}  // namespace tenferro::linalg::internal
