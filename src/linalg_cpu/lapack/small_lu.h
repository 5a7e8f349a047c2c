// Internal: LU with partial pivoting for small matrices, run inline by the
// LAPACK provider (Note [Small LU]).
#pragma once

#include <cstdint>

namespace tenferro::linalg::internal {

// Note [Small LU]
// Up to small_lu_max() rows and columns (48; complex 32), getrf costs more
// in calls than in arithmetic: a 2 x 2 det took 118 ns a matrix, LAPACK's
// part of it spread over the LAPACKE wrapper, OpenBLAS's interface (a
// buffer taken under a mutex) and one idamax, gemv and scal call per
// column; numpy's det took 93 ns. So lu, solve and inverse (and det and
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
// equal to rounding. Beyond the bound, OpenBLAS's blocked getrf and getri
// win (docs/performance_notes.md).

/// The largest extent run inline.
constexpr std::int64_t small_lu_max(bool complex) noexcept { return complex ? 32 : 48; }

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

/// The inverse of the n x n factorization `lu` (no zero pivot) into `a`
/// (column-major, may be `lu` itself); `work` holds n * n elements.
template <class T, class P>
void small_lu_inverse(std::int64_t n, T* lu, std::int64_t lda, const P* pivots, T* work) noexcept;

}  // namespace tenferro::linalg::internal
