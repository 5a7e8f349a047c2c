// gather and scatter along one axis.
//
// Note [Gather and scatter loops]
// With P = the axes before `axis`, Q = the index axes and R = the axes after
// `axis`, gather is out[p, q, r] = x[p, idx[q], r]. One StridedLoop<3> runs
// over P ++ Q with operands (out, x with stride 0 along Q, idx with stride 0
// along P); for every (p, q) it reads the index and copies the R block with
// a second loop built once over R (a memcpy when R is dense in both, one
// element when R is empty). Scatter runs the same nest with the roles of
// out and x swapped, but only the P axes are split across threads: two q
// with the same index write the same elements, so one p's Q loop must stay
// on one thread. Indices are scanned for range errors before anything is
// written.
#include <algorithm>
#include <cstring>

#include "cpu/kernels/copy_kernel.h"
#include "cpu/kernels/elementwise_functors.h"
#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/validation.h"
#include "tenferro/cpu/kernels/indexing.h"

namespace tenferro::cpu {
namespace {

using internal::kMaxKernelRank;
using internal::kStage;
using internal::LoopOperand;
using internal::StridedLoop;

constexpr std::int64_t kIndexGrain = 32768;  // elements moved per parallel chunk

// Shapes and strides of one gather/scatter call split into P, Q, R parts.
struct IndexedLayout {
  std::int64_t pq_shape[kMaxKernelRank];
  std::int64_t dense_pq[kMaxKernelRank];   // strides of the operand with P ++ Q axes (out / updates)
  std::int64_t target_pq[kMaxKernelRank];  // strides of the indexed operand: P, then 0 for Q
  std::int64_t index_pq[kMaxKernelRank];   // index strides: 0 for P, then Q
  std::size_t pq_rank = 0;
  std::size_t p_rank = 0;
  std::int64_t r_shape[kMaxKernelRank];
  std::int64_t dense_r[kMaxKernelRank];
  std::int64_t target_r[kMaxKernelRank];
  std::size_t r_rank = 0;
  std::int64_t axis_extent = 0;
  std::int64_t axis_stride = 0;  // of the indexed operand, in elements
};

// `indexed` is x (gather) or out (scatter); `dense` is out (gather) or
// updates (scatter), whose shape was checked to be P ++ Q ++ R.
IndexedLayout split_layout(const TensorView& indexed, const TensorView& indices, const TensorView& dense,
                           std::size_t axis) {
  IndexedLayout l;
  const std::size_t q_rank = indices.shape.size();
  for (std::size_t d = 0; d < axis; ++d) {
    l.pq_shape[l.pq_rank] = indexed.shape[d];
    l.dense_pq[l.pq_rank] = dense.strides[d];
    l.target_pq[l.pq_rank] = indexed.strides[d];
    l.index_pq[l.pq_rank++] = 0;
  }
  l.p_rank = axis;
  for (std::size_t d = 0; d < q_rank; ++d) {
    l.pq_shape[l.pq_rank] = indices.shape[d];
    l.dense_pq[l.pq_rank] = dense.strides[axis + d];
    l.target_pq[l.pq_rank] = 0;
    l.index_pq[l.pq_rank++] = indices.strides[d];
  }
  for (std::size_t d = axis + 1; d < indexed.shape.size(); ++d) {
    l.r_shape[l.r_rank] = indexed.shape[d];
    l.dense_r[l.r_rank] = dense.strides[d - 1 + q_rank];
    l.target_r[l.r_rank++] = indexed.strides[d];
  }
  l.axis_extent = indexed.shape[axis];
  l.axis_stride = indexed.strides[axis];
  return l;
}

Status check_indices(std::string_view op, const TensorView& indices) {
  TENFERRO_TRY(internal::check_view(op, "indices", indices));
  if (indices.dtype == DType::kInt32 || indices.dtype == DType::kInt64) return ok_status();
  return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: indices must be int32 or int64, found {}", op,
                    indices.dtype);
}

// The expected shape x.shape[:axis] + indices.shape + x.shape[axis+1:].
Dims indexed_shape(const TensorView& x, const TensorView& indices, std::size_t axis) {
  Dims shape;
  for (std::size_t d = 0; d < axis; ++d) shape.push_back(x.shape[d]);
  for (std::int64_t s : indices.shape) shape.push_back(s);
  for (std::size_t d = axis + 1; d < x.shape.size(); ++d) shape.push_back(x.shape[d]);
  return shape;
}

// kOutOfRange for the first index outside [0, extent).
template <class I>
Status scan_indices(std::string_view op, const TensorView& indices, std::int64_t extent) {
  const LoopOperand ops[1] = {{indices.data, indices.strides.data(), static_cast<std::int64_t>(sizeof(I))}};
  StridedLoop<1> loop;
  internal::init_strided_loop(indices.shape, ops, loop);
  const std::int64_t s = loop.inner_stride(0);
  bool bad = false;
  std::int64_t bad_value = 0;
  internal::for_each_run(loop, 0, loop.numel, [&](char* const* p, std::int64_t n) {
    if (bad) return;
    bool any = false;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::int64_t>(*reinterpret_cast<const I*>(p[0] + i * s));
      any |= v < 0 || v >= extent;
    }
    if (!any) return;
    for (std::int64_t i = 0; i < n && !bad; ++i) {
      const auto v = static_cast<std::int64_t>(*reinterpret_cast<const I*>(p[0] + i * s));
      if (v < 0 || v >= extent) {
        bad = true;
        bad_value = v;
      }
    }
  });
  if (!bad) return ok_status();
  return make_error(ErrorCode::kOutOfRange, ErrorStage::kCompletion, "{}: index {} is outside [0, {})", op, bad_value,
                    extent);
}

Status scan_any_indices(std::string_view op, const TensorView& indices, std::int64_t extent) {
  return indices.dtype == DType::kInt32 ? scan_indices<std::int32_t>(op, indices, extent)
                                        : scan_indices<std::int64_t>(op, indices, extent);
}

// Moves one R block from `src` to `dst` (elements of type T) with `r_loop`
// (operands dst, src); Combine is a copy or an addition.
template <class T, bool kAdd>
void move_block(const StridedLoop<2>& r_loop, bool dense, char* dst, char* src) {
  if (dense && !kAdd) {
    std::memcpy(dst, src, static_cast<std::size_t>(r_loop.numel) * sizeof(T));
    return;
  }
  char* base[2] = {dst, src};
  const std::int64_t ds = r_loop.inner_stride(0);
  const std::int64_t ss = r_loop.inner_stride(1);
  internal::for_each_run(
      r_loop, 0, r_loop.numel,
      [&](char* const* p, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          T* d = reinterpret_cast<T*>(p[0] + i * ds);
          const T v = *reinterpret_cast<const T*>(p[1] + i * ss);
          if constexpr (kAdd) {
            *d = internal::AddOp{}(*d, v);
          } else {
            *d = v;
          }
        }
      },
      base);
}

StridedLoop<2> r_loop_of(const IndexedLayout& l, std::int64_t item, bool dst_is_dense, bool& dense) {
  const LoopOperand ops[2] = {{nullptr, dst_is_dense ? l.dense_r : l.target_r, item},
                              {nullptr, dst_is_dense ? l.target_r : l.dense_r, item}};
  StridedLoop<2> loop;
  internal::init_strided_loop(IntArrayRef(l.r_shape, l.r_rank), ops, loop);
  dense = loop.rank == 0 || (loop.rank == 1 && loop.strides[0][0] == item && loop.strides[0][1] == item);
  return loop;
}

template <class T, class I>
void run_gather(const TensorView& x, const TensorView& indices, const IndexedLayout& l, const TensorView& out,
                const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  bool dense = false;
  const StridedLoop<2> r_loop = r_loop_of(l, item, /*dst_is_dense=*/true, dense);
  const LoopOperand ops[3] = {{out.data, l.dense_pq, item},
                              {x.data, l.target_pq, item},
                              {indices.data, l.index_pq, static_cast<std::int64_t>(sizeof(I))}};
  StridedLoop<3> pq;
  internal::init_strided_loop(IntArrayRef(l.pq_shape, l.pq_rank), ops, pq);
  const std::int64_t axis_bytes = l.axis_stride * item;
  const std::int64_t grain = std::max<std::int64_t>(1, kIndexGrain / std::max<std::int64_t>(1, r_loop.numel));
  if (stats != nullptr) ++(dense ? stats->contiguous_inner : stats->strided_inner);
  internal::parallel_or_inline(ctx, pq.numel, grain, stats, [&](std::int64_t b, std::int64_t e) {
    const std::int64_t s0 = pq.inner_stride(0), s1 = pq.inner_stride(1), s2 = pq.inner_stride(2);
    internal::for_each_run(pq, b, e, [&](char* const* p, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        const auto index = static_cast<std::int64_t>(*reinterpret_cast<const I*>(p[2] + i * s2));
        move_block<T, false>(r_loop, dense, p[0] + i * s0, p[1] + i * s1 + index * axis_bytes);
      }
    });
  });
}

template <class T, class I, bool kAdd>
void run_scatter(const TensorView& indices, const TensorView& updates, const IndexedLayout& l, const TensorView& out,
                 const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  bool dense = false;
  const StridedLoop<2> r_loop = r_loop_of(l, item, /*dst_is_dense=*/false, dense);
  // P loop over (out, updates); Q loop over (updates, indices).
  const LoopOperand p_ops[2] = {{out.data, l.target_pq, item}, {updates.data, l.dense_pq, item}};
  StridedLoop<2> p_loop;
  internal::init_strided_loop(IntArrayRef(l.pq_shape, l.p_rank), p_ops, p_loop);
  const LoopOperand q_ops[2] = {{updates.data, l.dense_pq + l.p_rank, item},
                                {indices.data, l.index_pq + l.p_rank, static_cast<std::int64_t>(sizeof(I))}};
  StridedLoop<2> q_loop;
  internal::init_strided_loop(IntArrayRef(l.pq_shape + l.p_rank, l.pq_rank - l.p_rank), q_ops, q_loop);
  const std::int64_t axis_bytes = l.axis_stride * item;
  const std::int64_t per_p = std::max<std::int64_t>(1, q_loop.numel * r_loop.numel);
  if (stats != nullptr) ++(dense ? stats->contiguous_inner : stats->strided_inner);
  internal::parallel_or_inline(
      ctx, p_loop.numel, std::max<std::int64_t>(1, kIndexGrain / per_p), stats, [&](std::int64_t b, std::int64_t e) {
        const std::int64_t ps0 = p_loop.inner_stride(0), ps1 = p_loop.inner_stride(1);
        const std::int64_t qs0 = q_loop.inner_stride(0), qs1 = q_loop.inner_stride(1);
        internal::for_each_run(p_loop, b, e, [&](char* const* pp, std::int64_t pn) {
          for (std::int64_t pi = 0; pi < pn; ++pi) {
            char* out_p = pp[0] + pi * ps0;
            char* q_base[2] = {pp[1] + pi * ps1, q_loop.data[1]};
            internal::for_each_run(
                q_loop, 0, q_loop.numel,
                [&](char* const* q, std::int64_t qn) {
                  for (std::int64_t qi = 0; qi < qn; ++qi) {
                    const auto index = static_cast<std::int64_t>(*reinterpret_cast<const I*>(q[1] + qi * qs1));
                    move_block<T, kAdd>(r_loop, dense && !kAdd, out_p + index * axis_bytes, q[0] + qi * qs0);
                  }
                },
                q_base);
          }
        });
      });
}

template <class F>
void visit_index_type(DType d, F&& f) {
  if (d == DType::kInt32) {
    f(std::int32_t{});
  } else {
    f(std::int64_t{});
  }
}

}  // namespace

Status gather(const TensorView& x, const TensorView& indices, std::int64_t axis, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "gather";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(check_indices(kOp, indices));
  if (axis < 0 || axis >= x.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "gather: axis must be in [0, {}), found {}", x.rank(), axis);
  }
  const auto a = static_cast<std::size_t>(axis);
  if (x.shape.size() - 1 + indices.shape.size() > static_cast<std::size_t>(kMaxKernelRank)) {
    return make_error(ErrorCode::kUnsupported, kStage, "gather: result rank above {}", kMaxKernelRank);
  }
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, indexed_shape(x, indices, a)));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/false));
  TENFERRO_TRY(internal::check_alias(kOp, out, "indices", indices, /*allow_identical=*/false));
  TENFERRO_TRY(scan_any_indices(kOp, indices, x.shape[a]));
  if (out.numel() == 0) return ok_status();
  const IndexedLayout l = split_layout(x, indices, out, a);
  visit_index_type(indices.dtype, [&]<class I>(I) {
    switch (dtype_size(x.dtype)) {
      case 1:
        return run_gather<std::uint8_t, I>(x, indices, l, out, ctx, stats);
      case 4:
        return run_gather<std::uint32_t, I>(x, indices, l, out, ctx, stats);
      case 8:
        return run_gather<std::uint64_t, I>(x, indices, l, out, ctx, stats);
      default:
        return run_gather<std::complex<double>, I>(x, indices, l, out, ctx, stats);
    }
  });
  return ok_status();
}

Status scatter(const TensorView& x, const TensorView& indices, const TensorView& updates, std::int64_t axis,
               ScatterCombine combine, const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "scatter";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(check_indices(kOp, indices));
  TENFERRO_TRY(internal::check_view(kOp, "updates", updates));
  if (axis < 0 || axis >= x.rank()) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "scatter: axis must be in [0, {}), found {}", x.rank(), axis);
  }
  const auto a = static_cast<std::size_t>(axis);
  if (combine == ScatterCombine::kAdd && x.dtype == DType::kBool) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "scatter: add needs a numeric dtype, found bool");
  }
  TENFERRO_TRY(internal::check_dtype(kOp, "updates", updates, x.dtype));
  if (x.shape.size() - 1 + indices.shape.size() > static_cast<std::size_t>(kMaxKernelRank)) {
    return make_error(ErrorCode::kUnsupported, kStage, "scatter: updates rank above {}", kMaxKernelRank);
  }
  TENFERRO_TRY(internal::check_shape(kOp, "updates", updates, indexed_shape(x, indices, a)));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, x.shape));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/true));
  TENFERRO_TRY(internal::check_alias(kOp, out, "updates", updates, /*allow_identical=*/false));
  TENFERRO_TRY(internal::check_alias(kOp, out, "indices", indices, /*allow_identical=*/false));
  TENFERRO_TRY(scan_any_indices(kOp, indices, x.shape[a]));
  if (out.numel() == 0) return ok_status();
  if (!internal::same_layout(out, x)) {
    internal::copy_elements(x.shape, static_cast<std::int64_t>(dtype_size(x.dtype)), {out.data, out.strides.data()},
                            {x.data, x.strides.data()}, ctx, stats);
  }
  if (updates.numel() == 0) return ok_status();
  const IndexedLayout l = split_layout(out, indices, updates, a);
  visit_index_type(indices.dtype, [&]<class I>(I) {
    visit_dtype(x.dtype, [&]<class T>(T) {
      if constexpr (!std::is_same_v<T, bool>) {
        if (combine == ScatterCombine::kAdd) return run_scatter<T, I, true>(indices, updates, l, out, ctx, stats);
      }
      run_scatter<T, I, false>(indices, updates, l, out, ctx, stats);
    });
  });
  return ok_status();
}

}  // namespace tenferro::cpu
