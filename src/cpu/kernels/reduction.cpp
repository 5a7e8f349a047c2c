// Reductions and arg-reductions over a StridedLoop in which the output has
// stride 0 along the reduced axes (Note [Reduction loops]).
#include "tenferro/cpu/kernels/reduction.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "cpu/kernels/elementwise_functors.h"
#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/fill_kernel.h"
#include "cpu/kernels/validation.h"

// Note [Reduction loops]
// The output is given the input's shape with stride 0 along every reduced
// axis, and one StridedLoop<2> runs over (out, x). Axis ordering and merging
// (Note [Strided iteration]) then bring the input's fastest axis first, and
// the inner loop is chosen once:
//  - the fastest axis is reduced: each run is folded into one value with
//    8 independent accumulators (a contiguous floating sum: four vector
//    accumulators, Note [Wide float sums]) and pairwise blocks (error
//    O(log n) for floating sums), then combined into its output element;
//  - the fastest axis is kept: each run updates a row of outputs,
//    out[i] = combine(out[i], x[i]), a contiguous vectorizable loop.
// The output is first filled with the identity. Parallel splits go along
// the largest kept axis, so chunks own disjoint outputs and every output
// combines its elements in the sequential order. When every axis is reduced
// (one output element) the input is cut into a fixed number of partial
// chunks that depends on the size only, so results do not depend on the
// thread count either.

namespace tenferro::cpu {
namespace {

using internal::kStage;
using internal::LoopOperand;
using internal::StridedLoop;

constexpr std::int64_t kReduceGrain = 32768;      // input elements per parallel chunk
constexpr std::int64_t kPartialElements = 65536;  // input elements per partial of a full reduction
constexpr int kMaxPartials = 64;
constexpr std::int64_t kPairwiseBlock = 512;  // elements folded by one 8-accumulator pass
constexpr int kLanes = 8;

template <class T>
struct SumReducer {
  static constexpr T identity() noexcept { return T{}; }
  static T combine(T a, T b) noexcept { return internal::AddOp{}(a, b); }
};
template <class T>
struct ProdReducer {
  static constexpr T identity() noexcept { return T{1}; }
  static T combine(T a, T b) noexcept { return internal::MulOp{}(a, b); }
};
template <class T>
struct MaxReducer {
  static constexpr T identity() noexcept {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();  // false for bool
  }
  static T combine(T a, T b) noexcept { return internal::MaxOp{}(a, b); }
};
template <class T>
struct MinReducer {
  static constexpr T identity() noexcept {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();  // true for bool
  }
  static T combine(T a, T b) noexcept { return internal::MinOp{}(a, b); }
};

// Note [GCC 12 and the accumulator loop]
// GCC 12.2 at -O3 with AVX-512 enabled under a generic or Zen tuning
// (-march=native on AMD EPYC, -mavx512f) miscompiles fold_block's main loop
// for int32 (and int16): loop vectorization over the 8 SLP-vectorized
// accumulators drops elements, so 16 ones summed to 15 and 48 to 45
// (tenferro.einsum("i->", np.ones(16, np.int32)) returned 15; float,
// 64-bit and 8-bit types and -march=skylake-avx512 were right). Reproduced
// with fold_block alone in a standalone file. Turning off loop
// vectorization for this function keeps the accumulators' SLP vectors and
// gives the right sums; the test ReductionConformance.SumsOfEveryRunLength
// covers the lengths that failed.
#if defined(__GNUC__) && !defined(__clang__)
#define TENFERRO_NO_LOOP_VECTORIZE __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define TENFERRO_NO_LOOP_VECTORIZE
#endif

// Folds n <= kPairwiseBlock elements with kLanes independent accumulators.
template <class R, class T, class Load>
TENFERRO_NO_LOOP_VECTORIZE T fold_block(Load load, std::int64_t n) {
  T acc[kLanes];
  for (T& a : acc) a = R::identity();
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] = R::combine(acc[j], load(i + j));
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] = R::combine(acc[j], load(i));
  return R::combine(R::combine(R::combine(acc[0], acc[1]), R::combine(acc[2], acc[3])),
                    R::combine(R::combine(acc[4], acc[5]), R::combine(acc[6], acc[7])));
}

// Note [Wide float sums]
// fold_block's eight accumulators become one vector chain at best (SLP),
// and the chain's add latency bounded a contiguous float sum: `ijk->` of
// 64^3 float32 took 31.9 us against np.einsum's 15.1 (the AVX2 audit of
// 2026-12-07; float64 0.63-0.79 of numpy). A contiguous floating sum runs
// in four 64-byte vector accumulators instead (GCC vector extensions: one
// zmm each with AVX-512, two ymm with AVX2, four xmm on baseline x86-64),
// and folds their lanes pairwise; the blocks are still pairwise combined
// (fold_pairwise), so the error stays O(log n).
template <class T>
T sum_contiguous_block(const T* x, std::int64_t n) {
  constexpr int L = 64 / static_cast<int>(sizeof(T));
  typedef T V __attribute__((vector_size(64)));
  V a0{}, a1{}, a2{}, a3{};
  std::int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    V v0, v1, v2, v3;
    std::memcpy(&v0, x + i, sizeof(V));
    std::memcpy(&v1, x + i + L, sizeof(V));
    std::memcpy(&v2, x + i + 2 * L, sizeof(V));
    std::memcpy(&v3, x + i + 3 * L, sizeof(V));
    a0 += v0;
    a1 += v1;
    a2 += v2;
    a3 += v3;
  }
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    a0 += v;
  }
  V total = (a0 + a1) + (a2 + a3);
  T lanes[L];
  std::memcpy(lanes, &total, sizeof(V));
  for (int j = 0; i < n; ++i, ++j) lanes[j] += x[i];
  for (int w = L / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  return lanes[0];
}

// Pairwise fold of a run: halves until a block fits one `leaf(begin, n)`.
template <class R, class T, class Leaf>
T fold_pairwise(const Leaf& leaf, std::int64_t begin, std::int64_t n) {
  if (n <= kPairwiseBlock) return leaf(begin, n);
  const std::int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
  return R::combine(fold_pairwise<R, T>(leaf, begin, half), fold_pairwise<R, T>(leaf, begin + half, n - half));
}

template <class R, class T>
T fold_run(const char* p, std::int64_t stride, std::int64_t n) {
  if (stride == static_cast<std::int64_t>(sizeof(T))) {
    const T* x = reinterpret_cast<const T*>(p);
    if constexpr (std::is_floating_point_v<T> && std::is_same_v<R, SumReducer<T>>) {
      return fold_pairwise<R, T>([x](std::int64_t b, std::int64_t m) { return sum_contiguous_block(x + b, m); }, 0, n);
    } else {
      return fold_pairwise<R, T>(
          [x](std::int64_t b, std::int64_t m) {
            return fold_block<R, T>([x, b](std::int64_t i) { return x[b + i]; }, m);
          },
          0, n);
    }
  }
  return fold_pairwise<R, T>(
      [p, stride](std::int64_t b, std::int64_t m) {
        return fold_block<R, T>(
            [p, stride, b](std::int64_t i) { return *reinterpret_cast<const T*>(p + (b + i) * stride); }, m);
      },
      0, n);
}

// Runs the linear range [begin, end) of `loop` (operands out, x).
template <class R, class T>
void reduce_range(const StridedLoop<2>& loop, std::int64_t begin, std::int64_t end) {
  const std::int64_t os = loop.inner_stride(0);
  const std::int64_t xs = loop.inner_stride(1);
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  if (loop.rank == 0 || os == 0) {
    internal::for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      *o = R::combine(*o, fold_run<R, T>(p[1], xs, n));
    });
  } else if (os == item && xs == item) {
    internal::for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      TENFERRO_IVDEP
      for (std::int64_t i = 0; i < n; ++i) o[i] = R::combine(o[i], x[i]);
    });
  } else {
    internal::for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        T* o = reinterpret_cast<T*>(p[0] + i * os);
        *o = R::combine(*o, *reinterpret_cast<const T*>(p[1] + i * xs));
      }
    });
  }
}

// `loop` restricted to indices [b, e) of merged axis `d`.
StridedLoop<2> sub_loop(const StridedLoop<2>& loop, int d, std::int64_t b, std::int64_t e) {
  StridedLoop<2> sub = loop;
  sub.numel = loop.numel / loop.shape[d] * (e - b);
  sub.shape[d] = e - b;
  for (int k = 0; k < 2; ++k) sub.data[k] += b * loop.strides[d][k];
  return sub;
}

// Note [Transposed reductions]
// A reduction whose kept axes are transposed between x and out (einsum
// "ijk->kj": x's fastest axis k is the output's slowest) would update the
// output one strided element at a time: no vector loop, a cache line per
// element (10x numpy's a.sum(0).T at 64^3 float32). When exactly two axes
// are kept -- x's fastest (a) and the output's fastest (b) -- and every
// other axis is reduced, the kept plane is visited in kTile x kTile tiles:
// a tile accumulates its x rows (contiguous along a) over every reduced
// index in a local array, then is combined into the output once,
// transposed. Each output element still combines its elements in the
// reduced axes' loop order (fastest first), the order of the untiled loop,
// so the results are the same bits at every thread count; parallel chunks
// own whole tiles.
constexpr std::int64_t kTile = 16;

template <class R, class T>
bool reduce_transposed(const StridedLoop<2>& loop, bool parallel, const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  int a = -1;  // x's unit axis
  int b = -1;  // the output's unit axis
  int reduced[kMaxKernelRank];
  int num_reduced = 0;
  for (int d = 0; d < loop.rank; ++d) {
    if (loop.strides[d][0] == 0) {
      reduced[num_reduced++] = d;  // in loop order: the untiled loop's order for each output element
    } else if (a < 0 && loop.strides[d][1] == item && loop.strides[d][0] != item) {
      a = d;
    } else if (b < 0 && loop.strides[d][0] == item && loop.strides[d][1] != item) {
      b = d;
    } else {
      return false;  // another kept axis
    }
  }
  if (a < 0 || b < 0 || num_reduced == 0) return false;
  const std::int64_t na = loop.shape[a];
  const std::int64_t nb = loop.shape[b];
  const std::int64_t out_a = loop.strides[a][0];
  const std::int64_t x_b = loop.strides[b][1];
  const std::int64_t count = loop.numel / (na * nb);  // reduced elements per output element
  const std::int64_t tiles_a = (na + kTile - 1) / kTile;
  const std::int64_t tiles = tiles_a * ((nb + kTile - 1) / kTile);
  const auto tile_range = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t a0 = (t % tiles_a) * kTile;
      const std::int64_t b0 = (t / tiles_a) * kTile;
      const std::int64_t ma = std::min(kTile, na - a0);
      const std::int64_t mb = std::min(kTile, nb - b0);
      T acc[kTile][kTile];  // [b][a]
      for (auto& row : acc)
        for (T& v : row) v = R::identity();
      std::int64_t index[kMaxKernelRank] = {};
      const char* p = loop.data[1] + a0 * item + b0 * x_b;
      for (std::int64_t r = 0; r < count; ++r) {
        for (std::int64_t u = 0; u < mb; ++u) {
          const T* row = reinterpret_cast<const T*>(p + u * x_b);
          TENFERRO_IVDEP
          for (std::int64_t v = 0; v < ma; ++v) acc[u][v] = R::combine(acc[u][v], row[v]);
        }
        for (int k = 0; k < num_reduced; ++k) {  // the next reduced index, the fastest axis first
          const int d = reduced[k];
          p += loop.strides[d][1];
          if (++index[k] < loop.shape[d]) break;
          p -= loop.shape[d] * loop.strides[d][1];
          index[k] = 0;
        }
      }
      char* o = loop.data[0] + a0 * out_a + b0 * item;
      for (std::int64_t v = 0; v < ma; ++v) {
        T* column = reinterpret_cast<T*>(o + v * out_a);
        for (std::int64_t u = 0; u < mb; ++u) column[u] = R::combine(column[u], acc[u][v]);
      }
    }
  };
  if (stats != nullptr) ++stats->tiled_inner;
  if (!parallel) {
    tile_range(0, tiles);
  } else {
    if (stats != nullptr) ++stats->parallel_calls;
    ctx.parallel_for(0, tiles, std::max<std::int64_t>(1, kReduceGrain / (kTile * kTile * count)), tile_range);
  }
  return true;
}

template <template <class> class Reducer, class T>
void run_reduce(const TensorView& x, const std::int64_t* out_strides, const TensorView& out, const ParallelContext& ctx,
                KernelStats* stats) {
  using R = Reducer<T>;
  internal::fill_elements<T>(out.data, out.shape, out.strides.data(), R::identity(), ctx, stats);
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  const LoopOperand ops[2] = {{out.data, out_strides, item}, {x.data, x.strides.data(), item}};
  StridedLoop<2> loop;
  internal::init_strided_loop(x.shape, ops, loop);
  if (loop.numel == 0) return;
  if (stats != nullptr) ++(loop.rank == 0 || loop.strides[0][0] == 0 ? stats->strided_inner : stats->contiguous_inner);
  const bool parallel = ctx.max_threads() > 1 && loop.numel >= 2 * kReduceGrain;
  if (reduce_transposed<R, T>(loop, parallel, ctx, stats)) return;
  int split = -1;  // the largest kept axis (outermost among equals)
  for (int d = 0; d < loop.rank; ++d) {
    if (loop.strides[d][0] != 0 && (split < 0 || loop.shape[d] >= loop.shape[split])) split = d;
  }
  if (split >= 0) {
    if (!parallel) return reduce_range<R, T>(loop, 0, loop.numel);
    if (stats != nullptr) ++stats->parallel_calls;
    const std::int64_t per_index = loop.numel / loop.shape[split];
    ctx.parallel_for(0, loop.shape[split], std::max<std::int64_t>(1, kReduceGrain / per_index),
                     [&](std::int64_t b, std::int64_t e) {
                       const StridedLoop<2> sub = sub_loop(loop, split, b, e);
                       reduce_range<R, T>(sub, 0, sub.numel);
                     });
    return;
  }
  // One output element: fixed partial chunks (see Note [Reduction loops]).
  const auto chunks = static_cast<int>(std::clamp<std::int64_t>(loop.numel / kPartialElements, 1, kMaxPartials));
  if (chunks == 1) return reduce_range<R, T>(loop, 0, loop.numel);
  T partial[kMaxPartials];
  internal::parallel_or_inline(ctx, chunks, 1, stats, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t c = b; c < e; ++c) {
      StridedLoop<2> sub = loop;
      partial[c] = R::identity();
      sub.data[0] = reinterpret_cast<char*>(&partial[c]);
      reduce_range<R, T>(sub, loop.numel * c / chunks, loop.numel * (c + 1) / chunks);
    }
  });
  T* o = static_cast<T*>(out.data);
  for (int c = 0; c < chunks; ++c) *o = R::combine(*o, partial[c]);
}

// ---- arg reductions ----

template <bool kMax, class T>
bool better(T v, T best) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    if (best != best) return false;  // the first NaN stays
    if (v != v) return true;
  }
  return kMax ? best < v : v < best;
}

template <bool kMax, class T>
void arg_range(const StridedLoop<2>& loop, std::int64_t len, std::int64_t axis_stride, std::int64_t begin,
               std::int64_t end) {
  constexpr int kBlock = 256;
  const std::int64_t os = loop.inner_stride(0);
  const std::int64_t xs = loop.inner_stride(1);
  const bool axis_is_faster = std::abs(axis_stride) <= std::abs(xs);
  internal::for_each_run(loop, begin, end, [&](char* const* p, std::int64_t n) {
    if (n == 1 || axis_is_faster) {
      for (std::int64_t i = 0; i < n; ++i) {
        const char* x = p[1] + i * xs;
        T best = *reinterpret_cast<const T*>(x);
        std::int64_t best_index = 0;
        for (std::int64_t j = 1; j < len; ++j) {
          const T v = *reinterpret_cast<const T*>(x + j * axis_stride);
          if (better<kMax>(v, best)) {
            best = v;
            best_index = j;
          }
        }
        *reinterpret_cast<std::int64_t*>(p[0] + i * os) = best_index;
      }
      return;
    }
    // The kept axis is faster: sweep the reduced axis over a block of outputs.
    T best[kBlock];
    std::int64_t best_index[kBlock];
    for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int m = static_cast<int>(std::min<std::int64_t>(kBlock, n - i0));
      const char* x0 = p[1] + i0 * xs;
      for (int i = 0; i < m; ++i) {
        best[i] = *reinterpret_cast<const T*>(x0 + i * xs);
        best_index[i] = 0;
      }
      for (std::int64_t j = 1; j < len; ++j) {
        const char* row = x0 + j * axis_stride;
        for (int i = 0; i < m; ++i) {
          const T v = *reinterpret_cast<const T*>(row + i * xs);
          if (better<kMax>(v, best[i])) {
            best[i] = v;
            best_index[i] = j;
          }
        }
      }
      for (int i = 0; i < m; ++i) *reinterpret_cast<std::int64_t*>(p[0] + (i0 + i) * os) = best_index[i];
    }
  });
}

std::string_view op_name(ReduceOp op) {
  constexpr std::string_view kNames[] = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"};
  return kNames[static_cast<int>(op)];
}

}  // namespace

std::string_view to_string(ReduceOp op) noexcept { return op_name(op); }
std::string_view to_string(ArgReduceOp op) noexcept { return op == ArgReduceOp::kArgmax ? "argmax" : "argmin"; }

Status reduce(ReduceOp op, const TensorView& x, IntArrayRef axes, const TensorView& out, const ParallelContext& ctx,
              KernelStats* stats) {
  const std::string_view name = op_name(op);
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  const bool ordered = op == ReduceOp::kMax || op == ReduceOp::kMin;
  if (ordered ? is_complex(x.dtype) : x.dtype == DType::kBool) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: expected {}, found {}", name,
                      ordered ? "a non-complex dtype" : "a numeric dtype (integer, floating or complex)", x.dtype);
  }
  bool reduced[kMaxKernelRank] = {};
  for (std::int64_t a : axes) {
    if (a < 0 || a >= x.rank()) {
      return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: axes must be in [0, {}), found {}", name, x.rank(), a);
    }
    if (reduced[a]) {
      return make_error(ErrorCode::kInvalidArgument, kStage, "{}: axes must be distinct, found {} twice", name, a);
    }
    reduced[a] = true;
  }
  std::int64_t expected[kMaxKernelRank];
  std::int64_t out_strides[kMaxKernelRank];  // per input axis, 0 where reduced
  std::size_t kept = 0;
  TENFERRO_TRY(internal::check_output_view(name, "output", out));
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d]) {
      out_strides[d] = 0;
    } else {
      expected[kept] = x.shape[d];
      out_strides[d] = kept < out.strides.size() ? out.strides[kept] : 0;
      ++kept;
    }
  }
  TENFERRO_TRY(internal::check_shape(name, "output", out, IntArrayRef(expected, kept)));
  TENFERRO_TRY(internal::check_dtype(name, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_alias(name, out, "operand", x, /*allow_identical=*/false));

  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (!internal::kIsComplex<T>) {
      switch (op) {
        case ReduceOp::kMax:
          return run_reduce<MaxReducer, T>(x, out_strides, out, ctx, stats);
        case ReduceOp::kMin:
          return run_reduce<MinReducer, T>(x, out_strides, out, ctx, stats);
        default:
          break;
      }
    }
    if constexpr (!std::is_same_v<T, bool>) {
      switch (op) {
        case ReduceOp::kSum:
          return run_reduce<SumReducer, T>(x, out_strides, out, ctx, stats);
        case ReduceOp::kProd:
          return run_reduce<ProdReducer, T>(x, out_strides, out, ctx, stats);
        default:
          break;
      }
    }
  });
  return ok_status();
}

Status arg_reduce(ArgReduceOp op, const TensorView& x, std::int64_t axis, const TensorView& out,
                  const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = to_string(op);
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  if (is_complex(x.dtype)) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: expected a non-complex dtype, found {}", name, x.dtype);
  }
  if (axis < 0 || axis >= x.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: axis must be in [0, {}), found {}", name, x.rank(),
                      axis);
  }
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t rest_shape[kMaxKernelRank];
  std::int64_t rest_strides[kMaxKernelRank];
  std::size_t rest = 0;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (d == a) continue;
    rest_shape[rest] = x.shape[d];
    rest_strides[rest++] = x.strides[d];
  }
  TENFERRO_TRY(internal::check_output_view(name, "output", out));
  TENFERRO_TRY(internal::check_shape(name, "output", out, IntArrayRef(rest_shape, rest)));
  TENFERRO_TRY(internal::check_dtype(name, "output", out, DType::kInt64));
  TENFERRO_TRY(internal::check_alias(name, out, "operand", x, /*allow_identical=*/false));
  const std::int64_t len = x.shape[a];
  if (len == 0 && out.numel() > 0) {
    return make_error(ErrorCode::kInvalidArgument, kStage, "{}: axis {} of shape {} is empty: no extreme to index",
                      name, axis, shape_to_string(x.shape));
  }
  if (out.numel() == 0) return ok_status();
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (!internal::kIsComplex<T>) {
      constexpr auto item = static_cast<std::int64_t>(sizeof(T));
      const LoopOperand ops[2] = {{out.data, out.strides.data(), 8}, {x.data, rest_strides, item}};
      StridedLoop<2> loop;
      internal::init_strided_loop(IntArrayRef(rest_shape, rest), ops, loop);
      const std::int64_t axis_stride = x.strides[a] * item;
      if (stats != nullptr) ++stats->strided_inner;
      internal::parallel_or_inline(ctx, loop.numel, std::max<std::int64_t>(1, kReduceGrain / len), stats,
                                   [&](std::int64_t b, std::int64_t e) {
                                     if (op == ArgReduceOp::kArgmax) {
                                       arg_range<true, T>(loop, len, axis_stride, b, e);
                                     } else {
                                       arg_range<false, T>(loop, len, axis_stride, b, e);
                                     }
                                   });
    }
  });
  return ok_status();
}

}  // namespace tenferro::cpu
