// The native GEMM driver: orientation, small-problem loop, the BLIS-style
// blocked loop nest (jc → pc → ic → jr → ir) over the selected kernel table,
// and its partition across the ParallelContext (Note [Native GEMM
// parallelism] in native_gemm.h).
#include "tenferro/cpu/gemm/native_gemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "cpu/gemm/native/gemm_kernel_set.h"
#include "cpu/gemm/native/gemm_workspace_pool.h"

namespace tenferro::cpu {
namespace {

using internal::GemmKernelSet;
using internal::GemmWorkspacePool;
using internal::NativeGemmAtomicCounters;
using internal::plain_mul;
using internal::SmallTilePath;
using internal::TypedProblem;

template <class T>
struct IsComplex : std::false_type {};
template <class S>
struct IsComplex<std::complex<S>> : std::true_type {};

template <class T>
T to_scalar(std::complex<double> v) {
  if constexpr (IsComplex<T>::value) {
    using S = typename T::value_type;
    return T(static_cast<S>(v.real()), static_cast<S>(v.imag()));
  } else {
    return static_cast<T>(v.real());
  }
}

// C = A B  <=>  C^T = B^T A^T: swaps the roles so that C's unit stride runs
// along M, where the micro-kernel stores whole vectors.
bool orientation_swaps(const GemmProblem& p) {
  const bool unit_along_m = p.c.row_stride == 1 && p.m > 1;
  const bool unit_along_n = p.c.col_stride == 1 && p.n > 1;
  return unit_along_n && !unit_along_m;
}

template <class T>
TypedProblem<T> oriented(const GemmProblem& p) {
  TypedProblem<T> t{p.m,
                    p.n,
                    p.k,
                    static_cast<const T*>(p.a.data),
                    p.a.row_stride,
                    p.a.col_stride,
                    static_cast<const T*>(p.b.data),
                    p.b.row_stride,
                    p.b.col_stride,
                    static_cast<T*>(p.c.data),
                    p.c.row_stride,
                    p.c.col_stride,
                    to_scalar<T>(p.alpha),
                    to_scalar<T>(p.beta)};
  if (orientation_swaps(p)) {
    t = TypedProblem<T>{t.n, t.m, t.k, t.b, t.csb, t.rsb, t.a, t.csa, t.rsa, t.c, t.csc, t.rsc, t.alpha, t.beta};
  }
  return t;
}

template <class T>
void scale_c(const TypedProblem<T>& p) {
  for (std::int64_t j = 0; j < p.n; ++j) {
    T* cj = p.c + j * p.csc;
    for (std::int64_t i = 0; i < p.m; ++i) {
      T& x = cj[i * p.rsc];
      x = p.beta == T(0) ? T(0) : plain_mul(p.beta, x);
    }
  }
}

// Problems up to kLoopMaxMnk that the register tiles of Note [Small GEMM]
// (small_tiles.h) cannot run -- complex ones, or an A too large for the
// tiles' buffer (a long thin A with n = 1, say) -- run the plain column
// loop below.
constexpr std::int64_t kLoopMaxMnk = 16 * 16 * 16;

// The largest m*n*k that may run unpacked with `ks`: the option when set,
// else the kernel table's (Note [Small GEMM]).
template <class T>
std::int64_t small_bound(const NativeGemmOptions& options, const GemmKernelSet<T>& ks) {
  return options.small_max_mnk > 0 ? options.small_max_mnk : ks.small_max_mnk;
}

// The plain column loop for tiny problems the tiles cannot run.
template <class T>
void small_loop(const TypedProblem<T>& p) {
  for (std::int64_t j = 0; j < p.n; ++j) {
    T* __restrict cj = p.c + j * p.csc;
    if (p.beta == T(0)) {
      for (std::int64_t i = 0; i < p.m; ++i) cj[i * p.rsc] = T(0);
    } else if (p.beta != T(1)) {
      for (std::int64_t i = 0; i < p.m; ++i) cj[i * p.rsc] = plain_mul(p.beta, cj[i * p.rsc]);
    }
    for (std::int64_t l = 0; l < p.k; ++l) {
      const T t = plain_mul(p.alpha, p.b[l * p.rsb + j * p.csb]);
      const T* __restrict al = p.a + l * p.csa;
      if (p.rsa == 1 && p.rsc == 1) {
        for (std::int64_t i = 0; i < p.m; ++i) cj[i] += plain_mul(al[i], t);
      } else {
        for (std::int64_t i = 0; i < p.m; ++i) cj[i * p.rsc] += plain_mul(al[i * p.rsa], t);
      }
    }
  }
}

std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }
std::int64_t round_up(std::int64_t x, std::int64_t y) { return ceil_div(x, y) * y; }

struct Blocking {
  std::int64_t mc, kc, nc;
};

// Splits [0, units) into `parts` nearly equal ranges; returns range `i`.
inline std::pair<std::int64_t, std::int64_t> split_range(std::int64_t units, std::int64_t parts, std::int64_t i) {
  return {units * i / parts, units * (i + 1) / parts};
}

// Chooses how many parts to split M and N into for `threads` workers. Each
// task packs its own A rows and shares the packed B panel, so a split along
// N packs A once per part; a split along M can be uneven because rows go in
// whole micro-tiles. Cost, in micro-tiles, of the slowest task: its tiles
// plus its A packing (about 1.5 micro-tiles of work per packed row panel).
std::pair<std::int64_t, std::int64_t> choose_partition(std::int64_t m_units, std::int64_t n_units,
                                                       std::int64_t threads) {
  std::pair<std::int64_t, std::int64_t> best{1, 1};
  double best_cost = -1;
  for (std::int64_t mp = 1; mp <= threads; ++mp) {
    if (threads % mp != 0) continue;
    const std::int64_t np = threads / mp;
    if (mp > m_units || np > n_units) continue;
    const double rows = static_cast<double>(ceil_div(m_units, mp));
    const double cost = rows * static_cast<double>(ceil_div(n_units, np)) + 1.5 * rows;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = {mp, np};
    }
  }
  return best;
}

// Note [Unpacked B]
// Packing B pays off when each packed element is read by many row panels.
// A product whose M (after orientation) spans at most kInPlaceBMaxPanels
// micro-tiles reads each element of B once or twice -- an einsum step whose
// output is a long, thin matrix (lm_batch_likelihood_brackets_4_4d: 16 x 64
// by 64 x 7984) -- so packing it (a transposing copy when B's depth is
// contiguous, element by element when NR is not a multiple of the transpose
// tile) costs about as much as the products it feeds. Such problems run the
// micro-kernel on B in place (GemmKernelSet::micro_kernel_in_place_b, real
// types); A, small, is still packed (docs/performance_notes.md, "Native
// GEMM"). A B with its depth contiguous is read a cache line of steps at a
// time (Note [Depth-contiguous B in place] in micro_kernels.h), cheaply
// enough for one more panel: 1000 x 64 by 64 x 64 float64 `bij,jk->bik`
// (three 24-row panels) ran 1.24x faster in place than packed; a strided B
// at three panels made gm_queen5_5_3 3 % slower, so it keeps two.
constexpr std::int64_t kInPlaceBMaxPanels = 2;
constexpr std::int64_t kInPlaceDepthContiguousBMaxPanels = 3;

// B's columns for one depth block: packed slivers (column j's sliver at
// data + (j - j0) * kc) or, with in_place, the operand itself (column j,
// step p at data + p * rs + (j - j0) * cs).
template <class T>
struct BColumns {
  const T* data;
  bool in_place = false;
  std::int64_t rs = 0;
  std::int64_t cs = 0;
};

// C[i0:i_end, j0:j_end] (columns relative to c) = alpha * A B + beta * C
// for one depth block of kc: A's rows (from a, depth block already offset)
// are packed into ap in equal MC chunks, each a multiple of mr; b holds B's
// columns from j0 on.
template <class T>
void multiply_rows(const GemmKernelSet<T>& ks, const TypedProblem<T>& p, const T* a, std::int64_t kc, T beta,
                   std::int64_t i0, std::int64_t i_end, std::int64_t mc_max, T* ap, const BColumns<T>& b, T* c,
                   std::int64_t j0, std::int64_t j_end) {
  const std::int64_t mr = ks.mr;
  const std::int64_t nr = ks.nr;
  const std::int64_t rows = i_end - i0;
  const std::int64_t mc_step = round_up(ceil_div(rows, ceil_div(rows, mc_max)), mr);
  for (std::int64_t ic = i0; ic < i_end; ic += mc_step) {
    const std::int64_t mc = std::min(mc_step, i_end - ic);
    ks.pack_a(mc, kc, a + ic * p.rsa, p.rsa, p.csa, ap);
    for (std::int64_t jr = j0; jr < j_end; jr += nr) {
      const std::int64_t nr_valid = std::min(nr, j_end - jr);
      T* c_col = c + jr * p.csc;
      if (b.in_place) {
        const T* b_cols = b.data + (jr - j0) * b.cs;
        for (std::int64_t ir = 0; ir < mc; ir += mr) {
          ks.micro_kernel_in_place_b(kc, ap + ir * kc, b_cols, b.rs, b.cs, p.alpha, beta, c_col + (ic + ir) * p.rsc,
                                     p.rsc, p.csc, std::min(mr, mc - ir), nr_valid);
        }
        continue;
      }
      const T* b_panel = b.data + (jr - j0) * kc;
      for (std::int64_t ir = 0; ir < mc; ir += mr) {
        ks.micro_kernel(kc, ap + ir * kc, b_panel, p.alpha, beta, c_col + (ic + ir) * p.rsc, p.rsc, p.csc,
                        std::min(mr, mc - ir), nr_valid);
      }
    }
  }
}

// Note [Single-block parallel GEMM]
// A problem that is one (NC, KC) block -- every 128^3 or 256^3 product --
// is split in one fork-join, and each task packs everything it reads: its
// B slivers and its A rows, in buffers of its own. Sharing one B panel
// packed by all workers (the blocked path below) costs a second fork-join
// and, worse, makes every task read the slivers another core packed: those
// lines sit modified in the other core's cache, so at these sizes a second
// thread gained little that way, or nothing (docs/performance_notes.md,
// "Native GEMM"). The split minimises the slowest task's
// cost in micro-tiles: its tiles (rows counted exactly, so an M edge tile
// of 8 rows weighs a third of a 24-row one), plus about 1.5 tiles per
// packed A row panel and 0.5 per packed B sliver; a task packs the A rows
// of its whole row range, so a split along N packs A once per part.
// Above this (512^3) the duplicated packs of single_block_gemm start to
// cost more than the shared panel's second fork-join.
constexpr std::int64_t kSingleBlockMaxMnk = std::int64_t{1} << 27;

template <class T>
Status single_block_gemm(const GemmKernelSet<T>& ks, const Blocking& blk, const TypedProblem<T>& p,
                         const ParallelContext& ctx, std::int64_t threads, bool in_place_b, GemmWorkspacePool& pool,
                         NativeGemmAtomicCounters& counters) {
  const std::int64_t mr = ks.mr;
  const std::int64_t nr = ks.nr;
  const std::int64_t kc = p.k;
  const std::int64_t m_units = ceil_div(p.m, mr);
  const std::int64_t n_units = ceil_div(p.n, nr);
  std::int64_t mparts = 1;
  std::int64_t nparts = 1;
  double best = -1;
  for (std::int64_t mp = 1; mp <= threads; ++mp) {
    if (threads % mp != 0) continue;
    const std::int64_t np = threads / mp;
    if (mp > m_units || np > n_units) continue;
    double rows = 0;  // the largest part's rows, in micro-tiles
    for (std::int64_t t = 0; t < mp; ++t) {
      const auto [u0, u1] = split_range(m_units, mp, t);
      rows = std::max(rows, static_cast<double>(std::min(p.m, u1 * mr) - u0 * mr) / static_cast<double>(mr));
    }
    const double cols = static_cast<double>(ceil_div(n_units, np));
    const double cost = rows * cols + 1.5 * std::ceil(rows) + 0.5 * cols;
    if (best < 0 || cost < best) {
      best = cost;
      mparts = mp;
      nparts = np;
    }
  }
  const std::int64_t mc_max = blk.mc;
  const std::int64_t a_elems = round_up(kc * std::min(mc_max, round_up(ceil_div(m_units, mparts) * mr, mr)), 64);
  const std::int64_t b_elems = in_place_b ? 0 : round_up(kc * ceil_div(n_units, nparts) * nr, 64);
  const std::int64_t tasks = mparts * nparts;
  const std::size_t bytes = static_cast<std::size_t>(tasks * (a_elems + b_elems)) * sizeof(T);
  GemmWorkspacePool::Lease lease = pool.acquire(bytes);
  if (!lease) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                      "native gemm: could not allocate {} bytes of packing workspace", bytes);
  }
  T* const base = static_cast<T*>(lease.data());
  ctx.parallel_for(0, tasks, 1, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      T* const ap = base + t * (a_elems + b_elems);
      T* const bp = ap + a_elems;
      const auto [mu0, mu1] = split_range(m_units, mparts, t / nparts);
      const auto [nu0, nu1] = split_range(n_units, nparts, t % nparts);
      const std::int64_t i_end = std::min(p.m, mu1 * mr);
      const std::int64_t j0 = nu0 * nr;
      const std::int64_t j_end = std::min(p.n, nu1 * nr);
      BColumns<T> b{p.b + j0 * p.csb, in_place_b, p.rsb, p.csb};
      if (!in_place_b) {
        ks.pack_b(kc, j_end - j0, p.b + j0 * p.csb, p.rsb, p.csb, bp);
        b.data = bp;
      }
      multiply_rows(ks, p, p.a, kc, p.beta, mu0 * mr, i_end, mc_max, ap, b, p.c, j0, j_end);
    }
  });
  counters.add_fork_joins(1);
  return ok_status();
}

template <class T>
Status blocked_gemm(const GemmKernelSet<T>& ks, const Blocking& blk, const TypedProblem<T>& p,
                    const ParallelContext& ctx, std::int64_t threads, bool in_place_b, GemmWorkspacePool& pool,
                    NativeGemmAtomicCounters& counters) {
  const std::int64_t mr = ks.mr;
  const std::int64_t nr = ks.nr;
  // Balanced block sizes: as many blocks as the tuned size needs, equal sized.
  const std::int64_t kc_max = ceil_div(p.k, ceil_div(p.k, blk.kc));
  const std::int64_t nc_max = round_up(ceil_div(p.n, ceil_div(p.n, blk.nc)), nr);
  const std::int64_t mc_max = blk.mc;
  if (threads > 1 && p.k <= kc_max && p.n <= nc_max && p.m * p.n * p.k <= kSingleBlockMaxMnk)
    return single_block_gemm(ks, blk, p, ctx, threads, in_place_b, pool, counters);
  const std::int64_t b_elems = in_place_b ? 0 : round_up(kc_max * nc_max, 64);
  const std::int64_t a_elems = round_up(kc_max * mc_max, 64);
  GemmWorkspacePool::Lease lease = pool.acquire(static_cast<std::size_t>(b_elems + threads * a_elems) * sizeof(T));
  if (!lease) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                      "native gemm: could not allocate {} bytes of packing workspace",
                      static_cast<std::size_t>(b_elems + threads * a_elems) * sizeof(T));
  }
  T* const bp = static_cast<T*>(lease.data());
  T* const ap_all = bp + b_elems;
  std::int64_t forks = 0;

  for (std::int64_t jc = 0; jc < p.n; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, p.n - jc);
    const std::int64_t n_units = ceil_div(nc, nr);
    const std::int64_t m_units = ceil_div(p.m, mr);
    // Plain variables: clang 14 cannot capture structured bindings.
    const std::pair<std::int64_t, std::int64_t> partition = choose_partition(m_units, n_units, threads);
    const std::int64_t mparts = partition.first;
    const std::int64_t nparts = partition.second;
    for (std::int64_t pc = 0; pc < p.k; pc += kc_max) {
      const std::int64_t kc = std::min(kc_max, p.k - pc);
      const T beta = pc == 0 ? p.beta : T(1);
      const T* b_block = p.b + pc * p.rsb + jc * p.csb;
      auto pack_slivers = [&](std::int64_t s0, std::int64_t s1) {
        const std::int64_t cols = std::min(nc, s1 * nr) - s0 * nr;
        ks.pack_b(kc, cols, b_block + s0 * nr * p.csb, p.rsb, p.csb, bp + s0 * nr * kc);
      };
      if (in_place_b) {
        // Note [Unpacked B]: the tasks read b_block.
      } else if (threads > 1 && n_units >= 2) {
        ctx.parallel_for(0, n_units, ceil_div(n_units, threads), pack_slivers);
        ++forks;
      } else {
        pack_slivers(0, n_units);
      }

      auto run_tasks = [&](std::int64_t t0, std::int64_t t1) {
        for (std::int64_t t = t0; t < t1; ++t) {
          T* ap = ap_all + t * a_elems;
          const auto [mu0, mu1] = split_range(m_units, mparts, t / nparts);
          const auto [nu0, nu1] = split_range(n_units, nparts, t % nparts);
          const std::int64_t i_end = std::min(p.m, mu1 * mr);
          const std::int64_t j0 = nu0 * nr;
          const std::int64_t j_end = std::min(nc, nu1 * nr);
          const BColumns<T> b =
              in_place_b ? BColumns<T>{b_block + j0 * p.csb, true, p.rsb, p.csb} : BColumns<T>{bp + j0 * kc};
          multiply_rows(ks, p, p.a + pc * p.csa, kc, beta, mu0 * mr, i_end, mc_max, ap, b, p.c + jc * p.csc, j0, j_end);
        }
      };
      const std::int64_t tasks = mparts * nparts;
      if (tasks > 1) {
        ctx.parallel_for(0, tasks, 1, run_tasks);
        ++forks;
      } else {
        run_tasks(0, 1);
      }
    }
  }
  counters.add_fork_joins(forks);
  return ok_status();
}

// f(table's kernel set for dtype), or nullopt for a dtype without one.
template <class F>
auto visit_kernel_set(const internal::GemmKernelTable& table, DType dtype, F&& f)
    -> std::optional<decltype(f(table.f64))> {
  switch (dtype) {
    case DType::kFloat32:
      return f(table.f32);
    case DType::kFloat64:
      return f(table.f64);
    case DType::kComplex64:
      return f(table.c64);
    case DType::kComplex128:
      return f(table.c128);
    default:
      return std::nullopt;
  }
}

// The same product with A and B exchanged and transposed (C^T = B^T A^T).
template <class T>
TypedProblem<T> transposed(const TypedProblem<T>& t) {
  return TypedProblem<T>{t.n, t.m, t.k, t.b, t.csb, t.rsb, t.a, t.csa, t.rsa, t.c, t.csc, t.rsc, t.alpha, t.beta};
}

// A dot product longer than kDotChunk is summed in chunks of a length fixed
// by k alone (at most kDotMaxChunks of them), the chunks' sums added in
// order: the result does not depend on how many workers ran the chunks.
constexpr std::int64_t kDotChunk = std::int64_t{1} << 15;
constexpr std::int64_t kDotMaxChunks = 64;

// Turns a problem with m == 1 or n == 1 into one with n == 1 and, for a dot
// product, A read along its unit stride when only B has one (the product
// is symmetric in its two vectors). True when A and B traded places an odd
// number of times (a batch's strides trade with them).
template <class T>
bool to_column_form(TypedProblem<T>& p) {
  bool traded = false;
  if (p.n != 1) {
    p = transposed(p);
    traded = true;
  }
  if (p.m == 1 && p.csa != 1 && p.rsb == 1) {
    std::swap(p.a, p.b);
    std::swap(p.csa, p.rsb);
    traded = !traded;
  }
  return traded;
}

// f(i0, i1) over [0, n) in units of kGemvRowGrain, split over `threads`
// workers when there are several units.
template <class F>
void for_row_units(const ParallelContext& ctx, std::int64_t threads, std::int64_t n, NativeGemmAtomicCounters& counters,
                   F&& f) {
  const std::int64_t units = ceil_div(n, internal::kGemvRowGrain);
  if (threads > 1 && units > 1) {
    ctx.parallel_for(0, units, ceil_div(units, threads), [&](std::int64_t u0, std::int64_t u1) {
      f(u0 * internal::kGemvRowGrain, std::min(n, u1 * internal::kGemvRowGrain));
    });
    counters.add_fork_joins(1);
  } else {
    f(0, n);
  }
}

// Note [Few-column GEMM] (gemv_kernels.h): `p` with 2..sweep_max_columns<T>()
// columns and A's columns contiguous, or the same with A and B exchanged
// (C^T = B^T A^T, B's rows contiguous); at least kFewColumnMinRows rows and
// a depth of kFewColumnMinDepth, below which the register tiles and the
// blocked path's fixed costs are no burden.
constexpr std::int64_t kFewColumnMinRows = 64;
constexpr std::int64_t kFewColumnMinDepth = 16;

template <class T>
std::optional<TypedProblem<T>> few_column_form(const GemmKernelSet<T>& ks, const TypedProblem<T>& p) {
  if (ks.few_columns == nullptr || p.k < kFewColumnMinDepth) return std::nullopt;
  const auto fits = [](const TypedProblem<T>& q) {
    return q.n >= 2 && q.n <= internal::sweep_max_columns<T>() && q.rsa == 1 && q.m >= kFewColumnMinRows;
  };
  if (fits(p)) return p;
  const TypedProblem<T> t = transposed(p);
  if (fits(t)) return t;
  return std::nullopt;
}

// Note [Dot-shaped GEMM]
// A product of a few rows by a few columns over a long depth, both operands
// contiguous along it (`ij,kj->ik` with i, k <= 8 and j in the thousands),
// is a handful of dot products. The register tiles and the blocked path
// padded the few rows to a 24- or 48-row panel over the whole depth:
// 2 x 2048 by 2048 x 2 took 59 us against numpy's 0.7 (the shape-sweep
// audit of 2026-12-07; 6 us at a depth of 1024, 31 at 1100). It runs
// instead as one matrix-vector product (Note [Matrix-vector GEMM]) per
// column of the smaller side (at most kSweepMaxColumns; complex types all
// columns per pass: Note [Tall dot-shaped GEMM]). From
// Python: 2 x 2048 by 2048 x 2 float32 67.8 -> 1.5 us, 4 x 4 x 8192
// float64 137 -> 10 us, 100 x 2 x 2048 float64 97 -> 45 us (numpy's
// 0.76, 6.7 and 30 us; the rest of the gap at these sizes is the call).
//
// Note [Tall dot-shaped GEMM]
// The same shape with many rows -- a tall A whose rows run along the depth
// times a few columns (`ij,jk->ik` with A C-ordered, 2048 x 500 by 500 x 3
// complex: 0.65-0.71 of numpy's, audit of 2026-12-07) -- had neither unit
// stride the sweep wants and was packed by the blocked path. Complex types
// run it as blocks of rows by every column (Note [Complex dot columns] in
// gemv_kernels.h), so A streams from memory once; B's columns are copied
// to be contiguous when they are not (B is the small side: at most
// kSweepMaxColumns columns), for an A larger than kDotShapedMaxBytes.
// 2048 x 500 by 500 x 3 complex128 2352 -> 614 us (numpy 1486), 4096 x
// 256 by 256 x 8 complex128 2141 -> 1459 us (numpy 1567); complex64 at 8
// columns 1653 -> 1137 us (numpy 865: the lane sums of each block weigh on
// a depth of 256). Real types keep their blocked path, which measured
// faster than dot products there (4096 x 256 by 256 x 8 float64: 341
// against 447 us); their dot form (a cached A, or at most 2 columns) runs
// one matrix-vector pass per column over row chunks of about
// kDotChunkBytes (L1-resident), every column's pass over one chunk before
// the next.
constexpr std::int64_t kDotShapedMinDepth = 128;
constexpr std::int64_t kDotShapedMaxBytes = 512 << 10;
constexpr std::int64_t kDotChunkBytes = 32 << 10;
constexpr std::int64_t kDotChunkMinRows = 8;  // a multiple of gemv_rows' row groups (2, 4)
static_assert(internal::kGemvRowGrain % kDotChunkMinRows == 0);

// q: the problem with the smaller side as its columns, when A's rows run
// along the depth; B's columns contiguous, or copyable (copy_b).
template <class T>
std::optional<TypedProblem<T>> dot_form(const TypedProblem<T>& p, bool& copy_b) {
  if (p.k < kDotShapedMinDepth) return std::nullopt;
  const TypedProblem<T> q = p.n <= p.m ? p : transposed(p);  // q.n: the smaller side
  if (q.n > internal::kSweepMaxColumns || q.csa != 1) return std::nullopt;
  const bool cached = q.m * q.k * static_cast<std::int64_t>(sizeof(T)) <= kDotShapedMaxBytes || q.m <= 16;
  copy_b = q.rsb != 1;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // Real ones: the blocked kernel's tiles beat 3 to 8 dot products per
    // row of an uncached A (4096 x 256 by 256 x 8 float64: 341 us blocked,
    // 447 us as dot products; numpy 663).
    if (copy_b || (q.n > 2 && !cached)) return std::nullopt;
  } else {
    if (copy_b && cached) return std::nullopt;  // the tiles or the blocked path
  }
  return q;
}

// A problem with m == 1 or n == 1 (Note [Matrix-vector GEMM] in
// gemv_kernels.h): the rows split over `threads` workers, a single dot
// product over its depth chunks.
template <class T>
void matrix_vector(const GemmKernelSet<T>& ks, TypedProblem<T> p, const ParallelContext& ctx, std::int64_t threads,
                   NativeGemmAtomicCounters& counters, internal::NativeGemmTally& tally) {
  to_column_form(p);
  if (internal::runs_short_rows(p)) ++tally.short_row_problems;  // Note [Short rows]
  if (p.m > 1) {
    for_row_units(ctx, threads, p.m, counters, [&](std::int64_t i0, std::int64_t i1) { ks.gemv(p, i0, i1); });
    return;
  }
  const std::int64_t chunk = std::max(kDotChunk, ceil_div(p.k, kDotMaxChunks));
  if (p.k <= chunk) {
    ks.gemv(p, 0, 1);
    return;
  }
  const std::int64_t chunks = ceil_div(p.k, chunk);
  T partial[kDotMaxChunks]{};
  auto run = [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      TypedProblem<T> part = p;
      part.a += c * chunk * p.csa;
      part.b += c * chunk * p.rsb;
      part.k = std::min(chunk, p.k - c * chunk);
      part.c = &partial[c];
      part.rsc = part.csc = 1;
      part.alpha = T(1);
      part.beta = T(0);
      ks.gemv(part, 0, 1);
    }
  };
  if (threads > 1) {
    ctx.parallel_for(0, chunks, ceil_div(chunks, threads), run);
    counters.add_fork_joins(1);
  } else {
    run(0, chunks);
  }
  T sum = partial[0];
  for (std::int64_t c = 1; c < chunks; ++c) sum += partial[c];
  internal::gemv_detail::write_c(p.c, sum, p.alpha, p.beta);
}

// Note [Tiny batch members]
// Members of at most kTinyMemberDim in every dimension (batches of 2 x 2 to
// 4 x 4 matrices) paid the per-member driver -- orientation, path choice,
// the register tiles' dispatch, about 35 ns -- several times over their
// arithmetic: b = 10000 2 x 2 x 2 float32 took 354 us against torch's bmm at
// 105 (the shape-sweep audit of 2026-12-07). They run in one loop over the
// batch instead, each member a product unrolled for its (m, n, k), split
// over the workers by members (each member's sums in one fixed order).
constexpr std::int64_t kTinyMemberDim = 4;

template <class T, int M, int N, int K>
void tiny_members(const TypedProblem<T>& p, std::int64_t sa, std::int64_t sb, std::int64_t sc, std::int64_t j0,
                  std::int64_t j1) {
  for (std::int64_t j = j0; j < j1; ++j) {
    const T* a = p.a + j * sa;
    const T* b = p.b + j * sb;
    T* c = p.c + j * sc;
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
      for (int n = 0; n < N; ++n) {
        T s = plain_mul(a[i * p.rsa], b[n * p.csb]);
#pragma GCC unroll 4
        for (int l = 1; l < K; ++l) s += plain_mul(a[i * p.rsa + l * p.csa], b[l * p.rsb + n * p.csb]);
        internal::gemv_detail::write_c(c + i * p.rsc + n * p.csc, s, p.alpha, p.beta);
      }
    }
  }
}

template <class T>
using TinyMembers = void (*)(const TypedProblem<T>&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                             std::int64_t);

// tiny_members for every (m, n, k) up to kTinyMemberDim, at (m-1)*16 + (n-1)*4 + (k-1).
template <class T, std::size_t... I>
constexpr std::array<TinyMembers<T>, sizeof...(I)> tiny_member_table(std::index_sequence<I...>) {
  return {
      &tiny_members<T, static_cast<int>(I / 16 + 1), static_cast<int>(I / 4 % 4 + 1), static_cast<int>(I % 4 + 1)>...};
}

}  // namespace

Result<std::shared_ptr<NativeGemmProvider>> NativeGemmProvider::create(const NativeGemmOptions& options) {
  if (options.small_max_mnk < 0 || options.parallel_min_flops < 0 || options.mc < 0 || options.kc < 0 ||
      options.nc < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "native gemm: expected non-negative options, found small_max_mnk={}, parallel_min_flops={}, "
                      "mc={}, kc={}, nc={}",
                      options.small_max_mnk, options.parallel_min_flops, options.mc, options.kc, options.nc);
  }
  Result<CpuIsa> resolved = resolve_cpu_isa(options.isa);
  if (!resolved.ok()) {
    return make_error(resolved.status().code(), ErrorStage::kConfiguration, "native gemm: {}",
                      resolved.status().message());
  }
  const NativeGemmIsa isa = *resolved;
  const internal::GemmKernelTable& table = isa == NativeGemmIsa::kAvx512 ? internal::avx512_kernel_table()
                                           : isa == NativeGemmIsa::kAvx2 ? internal::avx2_kernel_table()
                                                                         : internal::portable_kernel_table();
  return std::shared_ptr<NativeGemmProvider>(new NativeGemmProvider(isa, table, options));
}

NativeGemmProvider::NativeGemmProvider(NativeGemmIsa isa, const internal::GemmKernelTable& table,
                                       const NativeGemmOptions& options)
    : isa_(isa), table_(&table), options_(options), workspace_(std::make_unique<internal::GemmWorkspacePool>()) {
  // 2^20 flops (about 81^3): from 88^3 on two threads win, at 64^3 they
  // lose (10.1 against 6.6 us, 72^3 11.1 against 9.5, 80^3 even; eager
  // Python einsum, 2026-12-04, Zen 5 VM).
  if (options_.parallel_min_flops == 0) options_.parallel_min_flops = std::int64_t{1} << 20;
  capability_.thread_count = ThreadCountControl::kPerCall;
  capability_.placement = PlacementControl::kEngineWorkers;
  capability_.detail = fmt::format("tenferro native GEMM ({} kernels) on the engine's ParallelContext", table.isa);
}

NativeGemmProvider::~NativeGemmProvider() = default;

std::int64_t NativeGemmProvider::small_max_mnk(DType dtype) const noexcept {
  switch (dtype) {
    case DType::kFloat32:
      return small_bound(options_, table_->f32);
    case DType::kFloat64:
      return small_bound(options_, table_->f64);
    case DType::kComplex64:
      return small_bound(options_, table_->c64);
    case DType::kComplex128:
      return small_bound(options_, table_->c128);
    default:
      return 0;
  }
}

GemmSupport NativeGemmProvider::support() const noexcept {
  GemmSupport s;
  s.f32 = s.f64 = s.c64 = s.c128 = true;
  s.strides = GemmStrideSupport::kAny;
  return s;
}

NativeGemmCounters NativeGemmProvider::counters() const noexcept {
  NativeGemmCounters c;
  using C = NativeGemmAtomicCounters;
  c.small_tiled_problems = counters_.values.load(C::kSmallTiled);
  c.small_panel_problems = counters_.values.load(C::kSmallPanel);
  c.small_problems = c.small_tiled_problems + counters_.values.load(C::kSmallLoop);
  c.rank1_problems = counters_.values.load(C::kRank1);
  c.blocked_problems = counters_.values.load(C::kBlocked);
  c.parallel_problems = counters_.values.load(C::kParallel);
  c.in_place_b_problems = counters_.values.load(C::kInPlaceB);
  c.gemv_problems = counters_.values.load(C::kGemv);
  c.dot_batch_problems = counters_.values.load(C::kDotBatch);
  c.few_column_problems = counters_.values.load(C::kFewColumns);
  c.dot_shaped_problems = counters_.values.load(C::kDotShaped);
  c.tiny_batch_problems = counters_.values.load(C::kTinyBatch);
  c.short_row_problems = counters_.values.load(C::kShortRows);
  c.tiled_batch_members = counters_.values.load(C::kTiledBatchMembers);
  c.fork_joins = counters_.values.load(C::kForkJoins);
  c.workspace_allocations = workspace_->allocations();
  return c;
}

void internal::NativeGemmAtomicCounters::add(const NativeGemmTally& t) noexcept {
  const auto local = values.local();
  local.add(kSmallLoop, t.small_loop_problems);
  local.add(kSmallTiled, t.small_tiled_problems);
  local.add(kSmallPanel, t.small_panel_problems);
  local.add(kRank1, t.rank1_problems);
  local.add(kBlocked, t.blocked_problems);
  local.add(kParallel, t.parallel_problems);
  local.add(kInPlaceB, t.in_place_b_problems);
  local.add(kGemv, t.gemv_problems);
  local.add(kDotBatch, t.dot_batch_problems);
  local.add(kFewColumns, t.few_column_problems);
  local.add(kDotShaped, t.dot_shaped_problems);
  local.add(kTinyBatch, t.tiny_batch_problems);
  local.add(kShortRows, t.short_row_problems);
  local.add(kTiledBatchMembers, t.tiled_batch_members);
}

Status NativeGemmProvider::run_problem(DType dtype, const GemmProblem& problem, const ParallelContext& ctx,
                                       internal::NativeGemmTally& tally) const {
  auto run = [&]<class T>(const GemmKernelSet<T>& ks) -> Status {
    const TypedProblem<T> p = oriented<T>(problem);
    if (p.m == 0 || p.n == 0) return ok_status();
    if (p.k == 0 || p.alpha == T(0)) {
      scale_c(p);
      return ok_status();
    }
    // Workers for a problem of `flops`: the context's, from parallel_min_flops on.
    auto threads_for = [&](double flops) -> std::int64_t {
      return flops >= static_cast<double>(options_.parallel_min_flops) ? std::max(1, ctx.max_threads()) : 1;
    };
    if (p.k == 1) {
      const std::int64_t threads = threads_for(2.0 * static_cast<double>(p.m) * static_cast<double>(p.n));
      if (threads > 1 && p.n > 1) {
        ctx.parallel_for(0, p.n, ceil_div(p.n, threads),
                         [&](std::int64_t j0, std::int64_t j1) { ks.rank1(p, j0, j1); });
        counters_.add_fork_joins(1);
      } else {
        ks.rank1(p, 0, p.n);  // Note [Rank-1 GEMM] in micro_kernels.h
      }
      ++tally.rank1_problems;
      return ok_status();
    }
    const std::int64_t mnk = p.m * p.n * p.k;
    const std::int64_t threads =
        threads_for(2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k));
    if (p.m == 1 || p.n == 1) {
      matrix_vector(ks, p, ctx, threads, counters_, tally);  // Note [Matrix-vector GEMM]
      ++tally.gemv_problems;
      return ok_status();
    }
    bool copy_b = false;
    if (std::optional<TypedProblem<T>> dots = dot_form(p, copy_b)) {
      TypedProblem<T>& q = *dots;  // Note [Dot-shaped GEMM], Note [Tall dot-shaped GEMM]
      GemmWorkspacePool::Lease lease;
      if (copy_b) {
        const std::size_t bytes = static_cast<std::size_t>(q.k * q.n) * sizeof(T);
        lease = workspace_->acquire(bytes);
        if (!lease) {
          return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone,
                            "native gemm: could not allocate {} bytes for B's columns", bytes);
        }
        T* columns = static_cast<T*>(lease.data());
        for (std::int64_t j = 0; j < q.n; ++j)
          for (std::int64_t l = 0; l < q.k; ++l) columns[j * q.k + l] = q.b[l * q.rsb + j * q.csb];
        q.b = columns;
        q.rsb = 1;
        q.csb = q.k;
      }
      if (ks.dot_columns != nullptr) {  // complex: Note [Complex dot columns]
        for_row_units(ctx, threads, q.m, counters_,
                      [&](std::int64_t i0, std::int64_t i1) { ks.dot_columns(q, i0, i1); });
        ++tally.dot_shaped_problems;
        return ok_status();
      }
      // Whole groups of kDotChunkMinRows: the dot kernel sums a group of
      // rows from the first row's cache-line offset, so the chunks keep the
      // groups of any split over the workers (at multiples of
      // kGemvRowGrain) and the results do not depend on it.
      const std::int64_t chunk =
          std::max<std::int64_t>(1, kDotChunkBytes / (q.k * static_cast<std::int64_t>(sizeof(T))) / kDotChunkMinRows) *
          kDotChunkMinRows;
      for_row_units(ctx, threads, q.m, counters_, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t c0 = i0; c0 < i1; c0 += chunk) {
          for (std::int64_t j = 0; j < q.n; ++j) {
            TypedProblem<T> column = q;
            column.n = 1;
            column.b += j * q.csb;
            column.c += j * q.csc;
            ks.gemv(column, c0, std::min(i1, c0 + chunk));
          }
        }
      });
      ++tally.dot_shaped_problems;
      return ok_status();
    }
    // One thread's tiles; a product the context would split runs blocked.
    const std::int64_t small_max_mnk = small_bound(options_, ks);
    if (mnk <= small_max_mnk && threads == 1 && ks.small_tiles != nullptr) {
      const SmallTilePath path = ks.small_tiles(p);
      if (path != SmallTilePath::kNone) {
        ++tally.small_tiled_problems;
        if (path == SmallTilePath::kPanels) ++tally.small_panel_problems;
        return ok_status();
      }
    }
    if (mnk <= std::min(small_max_mnk, kLoopMaxMnk)) {
      small_loop(p);
      ++tally.small_loop_problems;
      return ok_status();
    }
    if (const std::optional<TypedProblem<T>> few = few_column_form(ks, p)) {
      for_row_units(ctx, threads, few->m, counters_,
                    [&](std::int64_t i0, std::int64_t i1) { ks.few_columns(*few, i0, i1); });
      ++tally.few_column_problems;
      return ok_status();
    }
    // Note [Unpacked B]: M within kInPlaceBMaxPanels of a set's tiles.
    const std::int64_t max_panels = p.rsb == 1 ? kInPlaceDepthContiguousBMaxPanels : kInPlaceBMaxPanels;
    auto thin_for = [&](const GemmKernelSet<T>& set) { return ceil_div(p.m, set.mr) <= max_panels; };
    const GemmKernelSet<T>& bks = ks.thin_m != nullptr && thin_for(*ks.thin_m) ? *ks.thin_m : ks;
    const Blocking blk{options_.mc > 0 ? round_up(options_.mc, bks.mr) : bks.mc, options_.kc > 0 ? options_.kc : bks.kc,
                       options_.nc > 0 ? round_up(options_.nc, bks.nr) : bks.nc};
    ++tally.blocked_problems;
    if (threads > 1) ++tally.parallel_problems;
    const bool in_place_b = bks.micro_kernel_in_place_b != nullptr && thin_for(bks);
    if (in_place_b) ++tally.in_place_b_problems;
    return blocked_gemm(bks, blk, p, ctx, threads, in_place_b, *workspace_, counters_);
  };
  if (std::optional<Status> done = visit_kernel_set(*table_, dtype, run)) return *done;
  return check_dtype_supported(support(), dtype, "native");
}

Status NativeGemmProvider::gemm(const GemmRequest& request, const ParallelContext& ctx) const {
  TENFERRO_TRY(check_dtype_supported(support(), request.dtype, "native"));
  TENFERRO_TRY(validate_gemm_problem(request.dtype, request.problem, "native gemm"));
  internal::NativeGemmTally tally;
  const Status status = run_problem(request.dtype, request.problem, ctx, tally);
  counters_.add(tally);
  return status;
}

Status NativeGemmProvider::gemm_strided_batched(const StridedBatchedGemmRequest& request,
                                                const ParallelContext& ctx) const {
  TENFERRO_TRY(check_dtype_supported(support(), request.dtype, "native"));
  TENFERRO_TRY(validate_strided_batched(request, "native gemm_strided_batched"));
  internal::NativeGemmTally tally;
  if (run_vector_batch(request, ctx, tally) || run_tiny_batch(request, ctx, tally)) {
    counters_.add(tally);
    return ok_status();
  }
  const std::int64_t elem = static_cast<std::int64_t>(dtype_size(request.dtype));
  GemmProblem p = request.problem;
  const auto* a0 = static_cast<const char*>(request.problem.a.data);
  const auto* b0 = static_cast<const char*>(request.problem.b.data);
  auto* c0 = static_cast<char*>(request.problem.c.data);
  // Note [Tiled batch members]
  // Every member of a batch has the same extents and strides, so the path
  // the driver chooses for the first one (run_problem) is the path of all
  // of them; when that is the register tiles, the others go to the tiles
  // directly, without the driver's orientation and path tests (about a
  // fifth of a batched 6 x 6 member's time). The tiles' own choices (an
  // aligned panel for a misaligned A) are still made per member.
  bool tiled = false;
  Status status;
  for (std::int64_t i = 0; i < request.batch_count && status.ok(); ++i) {
    // Null operands are allowed only where they are never read; keep them null.
    if (a0 != nullptr) p.a.data = a0 + i * request.a_batch_stride * elem;
    if (b0 != nullptr) p.b.data = b0 + i * request.b_batch_stride * elem;
    if (c0 != nullptr) p.c.data = c0 + i * request.c_batch_stride * elem;
    if (tiled) {
      const auto tile = [&]<class T>(const GemmKernelSet<T>& ks) { return ks.small_tiles(oriented<T>(p)); };
      const SmallTilePath path = visit_kernel_set(*table_, request.dtype, tile).value_or(SmallTilePath::kNone);
      if (path != SmallTilePath::kNone) {
        ++tally.small_tiled_problems;
        ++tally.tiled_batch_members;
        if (path == SmallTilePath::kPanels) ++tally.small_panel_problems;
        continue;
      }
    }
    const std::int64_t before = tally.small_tiled_problems;
    status = run_problem(request.dtype, p, ctx, tally);
    tiled = tally.small_tiled_problems > before;
  }
  counters_.add(tally);
  return status;
}

// A batch whose members have m or n of 1 (Note [Matrix-vector GEMM],
// gemv_kernels.h) runs the matrix-vector kernels directly, the members
// split over the context's workers:
// - depth-only members with batch stride 1 in A and B and depth strides
//   that are not 1: the batch in vector lanes (Note [Batched dot products]);
// - members of at most kSmallVectorMember multiply-adds: one after another
//   in the kernel (gemv_batch), without the driver's per-problem steps.
//   `ij,ij->i` over a million rows of 3 took 94 ms through run_problem per
//   member, numpy 13 ms.
// Larger members keep the per-member driver (its cost is amortised).
constexpr std::int64_t kSmallVectorMember = 4096;

bool NativeGemmProvider::run_vector_batch(const StridedBatchedGemmRequest& request, const ParallelContext& ctx,
                                          internal::NativeGemmTally& tally) const {
  const GemmProblem& g = request.problem;
  if ((g.m != 1 && g.n != 1) || g.m == 0 || g.n == 0 || g.k < 1 || request.batch_count < 2 || g.alpha == 0.0) {
    return false;
  }
  auto run = [&]<class T>(const GemmKernelSet<T>& ks) {
    TypedProblem<T> p = oriented<T>(g);
    std::int64_t sa = request.a_batch_stride, sb = request.b_batch_stride;
    if (orientation_swaps(g) != to_column_form(p)) std::swap(sa, sb);
    const bool lanes = internal::runs_in_lanes(p, sa, sb);
    const std::int64_t member = p.m * p.k;
    if (!lanes && member > kSmallVectorMember) return false;
    const std::int64_t count = request.batch_count;
    const double flops = 2.0 * static_cast<double>(member) * static_cast<double>(count);
    const std::int64_t threads =
        flops >= static_cast<double>(options_.parallel_min_flops) ? std::max(1, ctx.max_threads()) : 1;
    for_row_units(ctx, threads, count, counters_,
                  [&](std::int64_t j0, std::int64_t j1) { ks.gemv_batch(p, sa, sb, request.c_batch_stride, j0, j1); });
    (lanes ? tally.dot_batch_problems : tally.gemv_problems) += count;
    return true;
  };
  return visit_kernel_set(*table_, request.dtype, run).value_or(false);
}

bool NativeGemmProvider::run_tiny_batch(const StridedBatchedGemmRequest& request, const ParallelContext& ctx,
                                        internal::NativeGemmTally& tally) const {
  const GemmProblem& g = request.problem;
  const auto tiny = [](std::int64_t d) { return d >= 1 && d <= kTinyMemberDim; };
  if (!tiny(g.m) || !tiny(g.n) || !tiny(g.k) || request.batch_count < 2 || g.alpha == 0.0) return false;
  auto run = [&]<class T>(const GemmKernelSet<T>&) {
    const TypedProblem<T> p = oriented<T>(g);
    std::int64_t sa = request.a_batch_stride, sb = request.b_batch_stride;
    if (orientation_swaps(g)) std::swap(sa, sb);
    static constexpr std::array<TinyMembers<T>, 64> kTable = tiny_member_table<T>(std::make_index_sequence<64>{});
    const TinyMembers<T> members = kTable[static_cast<std::size_t>((p.m - 1) * 16 + (p.n - 1) * 4 + (p.k - 1))];
    const std::int64_t count = request.batch_count;
    const double flops = 2.0 * static_cast<double>(p.m * p.n * p.k) * static_cast<double>(count);
    const std::int64_t threads =
        flops >= static_cast<double>(options_.parallel_min_flops) ? std::max(1, ctx.max_threads()) : 1;
    for_row_units(ctx, threads, count, counters_,
                  [&](std::int64_t j0, std::int64_t j1) { members(p, sa, sb, request.c_batch_stride, j0, j1); });
    tally.tiny_batch_problems += count;
    return true;
  };
  return visit_kernel_set(*table_, request.dtype, run).value_or(false);
}

Status NativeGemmProvider::gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const {
  TENFERRO_TRY(check_dtype_supported(support(), request.dtype, "native"));
  for (const GemmProblem& p : request.problems) {
    TENFERRO_TRY(validate_gemm_problem(request.dtype, p, "native gemm_grouped"));
  }
  internal::NativeGemmTally tally;
  Status status;
  for (const GemmProblem& p : request.problems) {
    status = run_problem(request.dtype, p, ctx, tally);
    if (!status.ok()) break;
  }
  counters_.add(tally);
  return status;
}

}  // namespace tenferro::cpu
