// Register tiles for small real GEMMs (Note [Small GEMM]), instantiated by
// each ISA translation unit with its own vector width and handed to the
// driver through GemmKernelSet::small_tiles.
#pragma once

#include <algorithm>
#include <bit>
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
// Note [Partial small tiles]
// A row block short of whole vectors (m = 6 floats against 16 lanes: most
// of a batch of 6 x 6 matrices) was copied into the stack buffer, padded
// with zeros, and its C stored one element at a time through a lane
// buffer: a b = 2000 batch of 6 x 6 float32 or float64 from Python ran at
// 0.48-0.53 of numpy's matmul. Where the tile struct loads and stores a vector's first
// lanes (Tile::load_first, Tile::store_first: AVX-512 masks; AVX2 masked
// loads, whose load form is cheap on Intel and AMD, and plain 16-, 8- and
// 4-byte stores, since AVX2 masked stores are microcoded on Zen 2 and 3), a
// unit-stride A is read in place whatever m is, the partial vector through
// a mask (no row past m is read), and a unit-stride C's partial vector is
// stored the same way. The portable tiles keep the copy.
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

  // Whether the ISA loads and stores a vector's first lanes without touching
  // the others (Note [Partial small tiles]): Tile::load_first and
  // Tile::store_first.
  template <class T>
  static constexpr bool kPartialIo = requires(const T* q) {
    Tile::load_first(q, 1);
  };

  // Lanes 0 .. count-1 from p, the others zero; reads nothing past them.
  template <class T>
  static SmallVec<T> load_part(const T* p, int count) {
    if constexpr (kPartialIo<T>) {
      return std::bit_cast<SmallVec<T>>(Tile::load_first(p, count));
    } else {
      SmallVec<T> v = {};
      for (int i = 0; i < count; ++i) v[i] = p[i];
      return v;
    }
  }

  // Stores lanes 0 .. count-1 (< a vector) of v.
  template <class T>
  static void store_part(T* p, SmallVec<T> v, int count) {
    if constexpr (kPartialIo<T>) {
      Tile::store_first(p, std::bit_cast<decltype(Tile::load_first(p, 1))>(v), count);
    } else {
      for (int i = 0; i < count; ++i) p[i] = v[i];
    }
  }

  // One (MV x kSmallRows) x NB tile of C (rows i < mb stored) from the
  // column-major A block `ap` (leading dimension lda): padded to whole
  // vectors, or (kPartialA) read in place, rows from mb on not read.
  template <class T, int MV, int NB, bool kPartialA>
  static void small_tile(std::int64_t k, const T* ap, std::int64_t lda, const T* b, std::int64_t rsb, std::int64_t csb,
                         T alpha, T beta, T* c, std::int64_t rsc, std::int64_t csc, std::int64_t mb) {
    using V = SmallVec<T>;
    constexpr int L = kSmallRows<T>;
    int rows[MV];  // valid rows of each vector
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) rows[v] = static_cast<int>(std::clamp<std::int64_t>(mb - v * L, 0, L));
    V acc[NB][MV] = {};
    // The loops over v unrolled: GCC left the three-vector tile's loops
    // rolled, with acc in memory (15 times slower).
    for (std::int64_t l = 0; l < k; ++l) {
      V a[MV];
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) {
        if constexpr (kPartialA) {
          a[v] = load_part<T>(ap + l * lda + v * L, rows[v]);
        } else {
          std::memcpy(&a[v], ap + l * lda + v * L, sizeof(V));
        }
      }
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
      if (rsc == 1 && (mb == MV * L || kPartialIo<T>)) {
        for (int v = 0; v < MV; ++v) {
          V out = alpha * acc[q][v];
          if (rows[v] == L) {
            if (beta != T(0)) {
              V old;
              std::memcpy(&old, cq + v * L, sizeof(V));
              out += beta * old;
            }
            std::memcpy(cq + v * L, &out, sizeof(V));
          } else if (rows[v] > 0) {
            if (beta != T(0)) out += beta * load_part<T>(cq + v * L, rows[v]);
            store_part<T>(cq + v * L, out, rows[v]);
          }
        }
      } else {
        T lanes[MV * L];  // acc itself indexed by a run-time lane would live in memory
        for (int v = 0; v < MV; ++v) {
          const V out = acc[q][v];
          std::memcpy(lanes + v * L, &out, sizeof(V));
        }
        for (std::int64_t i = 0; i < std::min<std::int64_t>(mb, MV * L); ++i) {  // mb <= MV * L
          T& x = cq[i * rsc];
          const T r = alpha * lanes[i];
          x = beta == T(0) ? r : r + beta * x;
        }
      }
    }
  }

  // small_tile with the widest NB <= kNb that fits nb columns.
  template <class T, int MV, int NB, bool kPartialA>
  static void small_tile_columns(std::int64_t nb, std::int64_t k, const T* ap, std::int64_t lda, const T* b,
                                 std::int64_t rsb, std::int64_t csb, T alpha, T beta, T* c, std::int64_t rsc,
                                 std::int64_t csc, std::int64_t mb) {
    if constexpr (NB > 1) {
      if (nb < NB) {
        return small_tile_columns<T, MV, NB - 1, kPartialA>(nb, k, ap, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
      }
    }
    small_tile<T, MV, NB, kPartialA>(k, ap, lda, b, rsb, csb, alpha, beta, c, rsc, csc, mb);
  }

  // The row block of `rows` rows at `a`: one vector's tile when that holds
  // it, and a partial block of an in-place A read through masks.
  template <class T, int MV, int kNb>
  static void small_row_block(std::int64_t rows, bool own, std::int64_t nb, std::int64_t k, const T* a,
                              std::int64_t lda, const T* b, std::int64_t rsb, std::int64_t csb, T alpha, T beta, T* c,
                              std::int64_t rsc, std::int64_t csc) {
    constexpr int L = kSmallRows<T>;
    if (MV > 1 && rows <= L) {  // a last block of one vector: no padded rows computed
      if (own && rows < L) {
        small_tile_columns<T, 1, kNb, true>(nb, k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, rows);
      } else {
        small_tile_columns<T, 1, kNb, false>(nb, k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, rows);
      }
    } else if (own && rows < MV * L) {
      small_tile_columns<T, MV, kNb, true>(nb, k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, rows);
    } else {
      small_tile_columns<T, MV, kNb, false>(nb, k, a, lda, b, rsb, csb, alpha, beta, c, rsc, csc, rows);
    }
  }

  // The tiles of Note [Small GEMM] with row blocks of MV vectors, the first
  // `in_place` rows of A read where they are and the rest from a copy (rows
  // padded to lda_local) in a stack buffer of kLocal elements.
  template <class T, int MV, std::int64_t kLocal>
  static void small_tiles(const TypedProblem<T>& p, std::int64_t in_place, std::int64_t lda_local) {
    constexpr int kRows = MV * kSmallRows<T>;
    constexpr int kNb = std::min(8, kTileAccumulators / MV);
    T local[kLocal];
    copy_a_rows(p, in_place, lda_local, local);
    for (std::int64_t j = 0; j < p.n; j += kNb) {
      const std::int64_t nb = std::min<std::int64_t>(kNb, p.n - j);
      for (std::int64_t i = 0; i < p.m; i += kRows) {
        const bool own = i < in_place;
        const T* a = own ? p.a + i : local + (i - in_place);
        const std::int64_t lda = own ? p.csa : lda_local;
        const std::int64_t rows = std::min<std::int64_t>(kRows, p.m - i);
        small_row_block<T, MV, kNb>(rows, own, nb, p.k, a, lda, p.b + j * p.csb, p.rsb, p.csb, p.alpha, p.beta,
                                    p.c + i * p.rsc + j * p.csc, p.rsc, p.csc);
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
        } else if constexpr (kPartialIo<T>) {  // the last vector through a mask, zeros past it
          for (int v = 0; v < MV; ++v) {
            const SmallVec<T> x =
                load_part<T>(src + v * kSmallRows<T>,
                             static_cast<int>(std::clamp<std::int64_t>(rows - v * kSmallRows<T>, 0, kSmallRows<T>)));
            std::memcpy(col + v * kSmallRows<T>, &x, sizeof(x));
          }
        } else {
          for (std::int64_t r = 0; r < rows; ++r) col[r] = src[r];
          for (std::int64_t r = rows; r < kRows; ++r) col[r] = T(0);
        }
      }
      for (std::int64_t j = 0; j < p.n; j += kNb) {
        const std::int64_t nb = std::min<std::int64_t>(kNb, p.n - j);
        small_row_block<T, MV, kNb>(rows, /*own=*/false, nb, p.k, panel, kRows, p.b + j * p.csb, p.rsb, p.csb, p.alpha,
                                    p.beta, p.c + i * p.rsc + j * p.csc, p.rsc, p.csc);
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
    // A unit-stride A in place: all of it where partial blocks read through
    // masks (Note [Partial small tiles]), else its whole blocks.
    const std::int64_t in_place = p.rsa != 1 ? 0 : kPartialIo<T> ? p.m : p.m / kRows * kRows;
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
