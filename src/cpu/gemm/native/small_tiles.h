// Register tiles for small real GEMMs (Note [Small GEMM]), instantiated by
// each ISA translation unit with its own vector width and handed to the
// driver through GemmKernelSet::small_tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/gemm/native/gemm_kernel_set.h"

namespace tenferro::cpu::internal {

// Note [Small GEMM]
// Packing and its workspace cost more than a small product. Real problems
// of at most small_max_mnk multiply-adds (by default the kernel table's:
// 64^3 for the AVX-512 and AVX2 tables, 16^3 for the portable one; AVX2's
// bound was 16^3 until the AVX2-capped `tenferro bench gemm` on the Xeon VM
// showed the tiles ahead of the blocked path up to 64^3: dgemm n = 24..64
// from 1.03-1.11 of OpenBLAS's Haswell kernels to 1.29-1.38, sgemm n = 32
// from 0.93-0.96 to 1.32-1.35) therefore run in register tiles
// when their A fits the tiles' stack buffer and the context would not split
// them (parallel_min_flops). Each ISA translation unit instantiates the
// tiles with its own vector width (Note [ISA translation units]), so they
// follow the table the provider chose -- the ISA cap included -- and not
// the compile target:
//  - a tile is MB rows x NB columns of C and accumulates over the whole
//    depth before it touches C once; MB is one vector of rows (kSmallRows;
//    the vector is the ISA's widest register, so that the compiler keeps
//    each in one register: a 64-byte vector on an AVX2 target was lowered
//    to memory operations, docs/performance_notes.md)
//    when m fits one, three when m fits three but not two (AVX-512 only),
//    else two, with a last block of one vector when that is all that is
//    left (three vectors instead of two and one: a one-vector tile loads a
//    vector and NB broadcasts for NB multiply-adds, so at m = 24 doubles its
//    loads, not its multiply-adds, set the pace; `tenferro bench gemm
//    dgemm_n24_t1` on the Xeon VM went from 0.81-0.89 of OpenBLAS to
//    1.01-1.07, 464-508 to 379-401 ns); NB makes the tile hold
//    kTileAccumulators vectors (16 of AVX-512's 32 registers, 12 of AVX2's
//    16, as the AVX2 blocked kernel's 8x6 tile, else 8), at most 8 columns;
//  - B's elements are broadcast from wherever they are, whatever its
//    strides;
//  - A is read in place, in whole row blocks, when it is unit-stride along
//    M; its other rows are copied into a column-major buffer on the stack,
//    padded with zeros to a whole block (rows past m are computed and never
//    stored); a unit-stride A off the vector alignment that several column
//    blocks reuse is copied into aligned panels instead (Note [Misaligned
//    small GEMM]).
// Problems up to kLoopMaxMnk (16^3, native_gemm.cpp) that the tiles cannot
// run -- complex ones, or an A too large for the buffer (a long thin A with
// n = 1, say) -- run the plain column loop, vectorised over i when A and C
// are unit-stride along M. The tiles cover the sizes where that loop, and
// above it the blocked path, fell well behind OpenBLAS in `tenferro bench
// gemm` (docs/performance_notes.md, "Native GEMM").
//
// Note [Misaligned small GEMM]
// numpy places a large array 16 bytes past a 64-byte boundary, so every
// vector load of an in-place A column splits across two cache lines: on
// AVX-512 a batched 64^3 product took 4-9 % longer than on aligned data
// (docs/python.md). When A is reused over more than one column block and a
// row block of it fits kSmallLocalA, each row block is copied once into an
// aligned panel (depth-major, kRows rows per column) and every column block
// of C is run from the panel before the next row block: the copy is one
// aligned store per vector that the tiles then read n / kNb times.

/// The tiles for one ISA. Tile (a struct local to the ISA's translation
/// unit, so that no two instantiations share a symbol) provides
/// kVectorBytes, the ISA's widest register, and kAccumulators, the vectors
/// a tile may hold.
template <class Tile>
struct SmallTiles {
  static constexpr int kSmallVectorBytes = Tile::kVectorBytes;
  static constexpr int kTileAccumulators = Tile::kAccumulators;
  static constexpr std::int64_t kSmallLocalA = 4096;

  // One register of T (GCC/Clang vector extension): a zmm, ymm or xmm.
  template <class T>
  using SmallVec __attribute__((vector_size(kSmallVectorBytes))) = T;
  template <class T>
  static constexpr int kSmallRows = kSmallVectorBytes / static_cast<int>(sizeof(T));

  // One (MV x kSmallRows) x NB tile of C (rows i < mb stored) from the padded
  // column-major A block `ap` (leading dimension lda).
  template <class T, int MV, int NB>
  static void small_tile(std::int64_t k, const T* ap, std::int64_t lda, const T* b, std::int64_t rsb, std::int64_t csb,
                         T alpha, T beta, T* c, std::int64_t rsc, std::int64_t csc, std::int64_t mb) {
    using V = SmallVec<T>;
    constexpr int L = kSmallRows<T>;
    V acc[NB][MV] = {};
    // The loops over v unrolled: GCC left the three-vector tile's loops
    // rolled, with acc in memory (15 times slower).
    for (std::int64_t l = 0; l < k; ++l) {
      V a[MV];
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) std::memcpy(&a[v], ap + l * lda + v * L, sizeof(V));
      const T* bl = b + l * rsb;
      for (int q = 0; q < NB; ++q) {
        const T bq = bl[q * csb];
#pragma GCC unroll 4
        for (int v = 0; v < MV; ++v) acc[q][v] += a[v] * bq;
      }
    }
    // Unrolled, so that acc stays in registers: a store loop over a run-time
    // q made GCC keep acc addressable and zero it in memory (`rep stos` of
    // 1 KB) on every call.
#pragma GCC unroll 8
    for (int q = 0; q < NB; ++q) {
      T* cq = c + q * csc;
      if (rsc == 1 && mb == MV * L) {
        for (int v = 0; v < MV; ++v) {
          V out = alpha * acc[q][v];
          if (beta != T(0)) {
            V old;
            std::memcpy(&old, cq + v * L, sizeof(V));
            out += beta * old;
          }
          std::memcpy(cq + v * L, &out, sizeof(V));
        }
      } else {
        T lanes[MV * L];  // acc itself indexed by a run-time lane would live in memory
        for (int v = 0; v < MV; ++v) {
          const V out = acc[q][v];
          std::memcpy(lanes + v * L, &out, sizeof(V));
        }
        for (std::int64_t i = 0; i < mb; ++i) {
          T& x = cq[i * rsc];
          const T r = alpha * lanes[i];
          x = beta == T(0) ? r : r + beta * x;
        }
      }
    }
  }

  // small_tile with the widest NB <= kNb that fits nb columns.
  template <class T, int MV, int NB>
  static void small_tile_columns(std::int64_t nb, std::int64_t k, const T* ap, std::int64_t lda, const T* b,
                                 std::int64_t rsb, std::int64_t csb, T alpha, T beta, T* c, std::int64_t rsc,
                                 std::int64_t csc, std::int64_t mb) {
    if constexpr (NB > 1) {
      if (nb < NB) return small_tile_columns<T, MV, NB - 1>(nb, k, ap, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
    }
    small_tile<T, MV, NB>(k, ap, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
  }

  // The tiles of Note [Small GEMM] with row blocks of MV vectors, the first
  // `in_place` rows of A read where they are and the rest from a copy (rows
  // padded to lda_local) in a stack buffer of kLocal elements.
  template <class T, int MV, std::int64_t kLocal>
  static void small_tiles(const TypedProblem<T>& p, std::int64_t in_place, std::int64_t lda_local) {
    constexpr int kRows = MV * kSmallRows<T>;
    constexpr int kNb = std::min(8, kTileAccumulators / MV);
    const std::int64_t copied = p.m - in_place;
    T local[kLocal];
    for (std::int64_t l = 0; copied > 0 && l < p.k; ++l) {
      T* col = local + l * lda_local;
      const T* src = p.a + in_place * p.rsa + l * p.csa;
      if (p.rsa == 1) {  // a loop: a memcpy call per column costs more than 16 elements
        for (std::int64_t i = 0; i < copied; ++i) col[i] = src[i];
      } else {
        for (std::int64_t i = 0; i < copied; ++i) col[i] = src[i * p.rsa];
      }
      for (std::int64_t i = copied; i < lda_local; ++i) col[i] = T(0);
    }
    for (std::int64_t j = 0; j < p.n; j += kNb) {
      const std::int64_t nb = std::min<std::int64_t>(kNb, p.n - j);
      for (std::int64_t i = 0; i < p.m; i += kRows) {
        const bool own = i < in_place;
        const T* a = own ? p.a + i : local + (i - in_place);
        const std::int64_t lda = own ? p.csa : lda_local;
        const std::int64_t rows = std::min<std::int64_t>(kRows, p.m - i);
        T* c = p.c + i * p.rsc + j * p.csc;
        if (MV > 1 && rows <= kSmallRows<T>) {  // a last block of one vector: no padded rows computed
          small_tile_columns<T, 1, kNb>(nb, p.k, a, lda, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c, p.rsc,
                                        p.csc, rows);
        } else {
          small_tile_columns<T, MV, kNb>(nb, p.k, a, lda, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c, p.rsc,
                                         p.csc, rows);
        }
      }
    }
  }

  // Note [Misaligned small GEMM].
  template <class T, int MV, std::int64_t kLocal>
  static void small_tiles_panels(const TypedProblem<T>& p) {
    constexpr int kRows = MV * kSmallRows<T>;
    constexpr int kNb = std::min(8, kTileAccumulators / MV);
    alignas(64) T panel[kLocal];
    for (std::int64_t i = 0; i < p.m; i += kRows) {
      const std::int64_t rows = std::min<std::int64_t>(kRows, p.m - i);
      for (std::int64_t l = 0; l < p.k; ++l) {
        T* col = panel + l * kRows;
        const T* src = p.a + i + l * p.csa;
        if (rows == kRows) {  // whole vectors: a loop of scalars becomes `rep movs`, slow for 16 elements
          for (int v = 0; v < MV; ++v) {
            SmallVec<T> x;
            std::memcpy(&x, src + v * kSmallRows<T>, sizeof(x));
            std::memcpy(col + v * kSmallRows<T>, &x, sizeof(x));
          }
        } else {
          for (std::int64_t r = 0; r < rows; ++r) col[r] = src[r];
          for (std::int64_t r = rows; r < kRows; ++r) col[r] = T(0);
        }
      }
      for (std::int64_t j = 0; j < p.n; j += kNb) {
        const std::int64_t nb = std::min<std::int64_t>(kNb, p.n - j);
        T* c = p.c + i * p.rsc + j * p.csc;
        if (MV > 1 && rows <= kSmallRows<T>) {
          small_tile_columns<T, 1, kNb>(nb, p.k, panel, kRows, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c, p.rsc,
                                        p.csc, rows);
        } else {
          small_tile_columns<T, MV, kNb>(nb, p.k, panel, kRows, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta, c,
                                         p.rsc, p.csc, rows);
        }
      }
    }
  }

  // Whether A's columns are unit-stride but not aligned to the tiles' vector
  // and reused over several column blocks (Note [Misaligned small GEMM]).
  template <class T, int MV>
  static bool wants_panels(const TypedProblem<T>& p) {
    constexpr int kNb = std::min(8, kTileAccumulators / MV);
    if (p.rsa != 1 || p.n <= kNb) return false;
    const auto misaligned = [](std::uintptr_t v) { return v % kSmallVectorBytes != 0; };
    return misaligned(reinterpret_cast<std::uintptr_t>(p.a)) ||
           misaligned(static_cast<std::uintptr_t>(p.csa) * sizeof(T));
  }

  // small_tiles with the smallest buffer that holds the copied rows (a large
  // stack frame costs a small product its probes), or in aligned panels (Note
  // [Misaligned small GEMM]); kNone, nothing written, when kSmallLocalA does
  // not hold them.
  template <class T, int MV>
  static SmallTilePath small_tiles(const TypedProblem<T>& p) {
    constexpr int kRows = MV * kSmallRows<T>;
    if (wants_panels<T, MV>(p) && kRows * p.k <= kSmallLocalA) {
      if (kRows * p.k <= 512) {
        small_tiles_panels<T, MV, 512>(p);
      } else {
        small_tiles_panels<T, MV, kSmallLocalA>(p);
      }
      return SmallTilePath::kPanels;
    }
    const std::int64_t in_place = p.rsa == 1 ? p.m / kRows * kRows : 0;  // whole blocks of a unit-stride A
    const std::int64_t lda_local = (p.m - in_place + kRows - 1) / kRows * kRows;
    const std::int64_t needed = lda_local * p.k;
    if (needed <= 512) {
      small_tiles<T, MV, 512>(p, in_place, lda_local);
    } else if (needed <= kSmallLocalA) {
      small_tiles<T, MV, kSmallLocalA>(p, in_place, lda_local);
    } else {
      return SmallTilePath::kNone;
    }
    return SmallTilePath::kInPlace;
  }

  /// Runs `p` in register tiles; kNone, nothing written, when they cannot
  /// take it.
  template <class T>
  static SmallTilePath run(const TypedProblem<T>& p) {
    if (p.m <= kSmallRows<T>) return small_tiles<T, 1>(p);
    if constexpr (kTileAccumulators / 3 >= 5) {  // AVX-512's 16 (AVX2's 12 would leave no spare register)
      if (p.m <= 3 * kSmallRows<T> && p.m > 2 * kSmallRows<T>) return small_tiles<T, 3>(p);
    }
    return small_tiles<T, 2>(p);
  }
};

/// Makes SmallTiles<Tile> the real types' small-problem path in `t`, with
/// `max_mnk` as their default small_max_mnk.
template <class Tile>
void add_small_tiles(GemmKernelTable& t, std::int64_t max_mnk) {
  t.f32.small_tiles = &SmallTiles<Tile>::template run<float>;
  t.f64.small_tiles = &SmallTiles<Tile>::template run<double>;
  t.f32.small_max_mnk = max_mnk;
  t.f64.small_max_mnk = max_mnk;
}

}  // namespace tenferro::cpu::internal
