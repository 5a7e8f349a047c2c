// General (StableHLO) gather and scatter, without batching dims.
//
// Note [Gather and scatter loops]
// Both ops pair a batch loop with a window loop. The batch loop runs over
// the indices' batch axes (all but index_vector_dim) together with the
// matching axes of the dense operand (out for gather, updates for scatter)
// and reads one index vector per position; the window loop, built once,
// moves one window between the dense operand's window axes and the indexed
// operand's non-collapsed axes (a memcpy when both are dense). Gather
// splits the batch loop across threads (windows write disjoint outputs).
// Scatter keeps batch positions in order on one thread, because two
// windows may overlap, and splits one large window across threads instead,
// so every element's writes happen in batch order whatever the thread
// count.
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

bool contains(IntArrayRef axes, std::int64_t axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

std::string ints(IntArrayRef values) { return shape_to_string(values); }

Status invalid(std::string_view op, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, kStage, "{}: {}", op, message);
}

// `axes` strictly increasing inside [0, rank).
Status check_sorted(std::string_view op, std::string_view what, IntArrayRef axes, std::int64_t rank) {
  for (std::size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= rank) {
      return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: {} {} must lie in [0, {})", op, what, ints(axes),
                        rank);
    }
    if (k > 0 && axes[k] <= axes[k - 1]) {
      return invalid(op, fmt::format("{} {} must be strictly increasing", what, ints(axes)));
    }
  }
  return ok_status();
}

// One gather/scatter call resolved into its two loop nests. "dense" is out
// (gather) or updates (scatter); "target" is x (gather) or out (scatter).
struct IndexedLayout {
  std::int64_t batch_shape[kMaxKernelRank];
  std::int64_t dense_batch[kMaxKernelRank];
  std::int64_t index_batch[kMaxKernelRank];
  std::size_t batch_rank = 0;
  std::int64_t window_shape[kMaxKernelRank];
  std::int64_t dense_window[kMaxKernelRank];
  std::int64_t target_window[kMaxKernelRank];
  std::size_t window_rank = 0;
  std::int64_t vector_length = 1;
  std::int64_t vector_stride = 0;  // of the indices, in elements
  // Per index-vector component: target axis extent - window extent, and
  // the target stride (elements).
  std::int64_t limit[kMaxKernelRank];
  std::int64_t target_stride[kMaxKernelRank];
};

// Checks the dimension numbers against the shapes and fills the layout.
// `window_dims` are the dense operand's window axes, `dropped` the target
// axes outside the window, `index_map` the target axis of each component.
Status resolve_layout(std::string_view op, const TensorView& target, const TensorView& indices, const TensorView& dense,
                      IntArrayRef window_dims, IntArrayRef dropped, IntArrayRef index_map,
                      std::int64_t index_vector_dim, std::string_view dense_name, std::string_view window_name,
                      std::string_view dropped_name, std::string_view map_name, IndexedLayout& l) {
  const std::int64_t rank = target.rank();
  const std::int64_t index_rank = indices.rank();
  TENFERRO_TRY(check_sorted(op, dropped_name, dropped, rank));
  if (index_vector_dim < 0 || index_vector_dim > index_rank) {
    return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: index_vector_dim must be in [0, {}], found {}", op,
                      index_rank, index_vector_dim);
  }
  l.vector_length = index_vector_dim < index_rank ? indices.shape[static_cast<std::size_t>(index_vector_dim)] : 1;
  l.vector_stride = index_vector_dim < index_rank ? indices.strides[static_cast<std::size_t>(index_vector_dim)] : 0;
  if (static_cast<std::int64_t>(index_map.size()) != l.vector_length) {
    return invalid(op, fmt::format("{} {} must have one entry per index-vector component ({}), found {}", map_name,
                                   ints(index_map), l.vector_length, index_map.size()));
  }
  for (std::size_t k = 0; k < index_map.size(); ++k) {
    if (index_map[k] < 0 || index_map[k] >= rank) {
      return make_error(ErrorCode::kAxisOutOfRange, kStage, "{}: {} {} must lie in [0, {})", op, map_name,
                        ints(index_map), rank);
    }
    for (std::size_t j = 0; j < k; ++j)
      if (index_map[j] == index_map[k])
        return invalid(op, fmt::format("{} {} repeats an axis", map_name, ints(index_map)));
  }
  const std::int64_t window_rank = rank - static_cast<std::int64_t>(dropped.size());
  const std::int64_t batch_rank = index_rank - (index_vector_dim < index_rank ? 1 : 0);
  if (static_cast<std::int64_t>(window_dims.size()) != window_rank) {
    return invalid(op,
                   fmt::format("{} {} must have {} entries (one per operand axis outside {} {}), found {}", window_name,
                               ints(window_dims), window_rank, dropped_name, ints(dropped), window_dims.size()));
  }
  TENFERRO_TRY(check_sorted(op, window_name, window_dims, batch_rank + window_rank));
  if (dense.rank() != batch_rank + window_rank) {
    return make_error(ErrorCode::kShapeMismatch, kStage,
                      "{}: {} must have rank {} ({} batch + {} window axes), found {}", op, dense_name,
                      batch_rank + window_rank, batch_rank, window_rank, ints(dense.shape));
  }
  if (batch_rank > kMaxKernelRank || window_rank > kMaxKernelRank) {
    return make_error(ErrorCode::kUnsupported, kStage, "{}: more than {} batch or window axes", op, kMaxKernelRank);
  }
  Dims window_extent(static_cast<std::size_t>(rank), 1);
  std::size_t next_window = 0;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (contains(dropped, d)) continue;
    const auto axis = static_cast<std::size_t>(window_dims[next_window++]);
    const std::int64_t e = dense.shape[axis];
    if (e > target.shape[static_cast<std::size_t>(d)]) {
      return make_error(ErrorCode::kShapeMismatch, kStage,
                        "{}: window extent {} ({} axis {}) exceeds the operand's axis {} extent {}", op, e, dense_name,
                        axis, d, target.shape[static_cast<std::size_t>(d)]);
    }
    window_extent[static_cast<std::size_t>(d)] = e;
    l.window_shape[l.window_rank] = e;
    l.dense_window[l.window_rank] = dense.strides[axis];
    l.target_window[l.window_rank++] = target.strides[static_cast<std::size_t>(d)];
  }
  std::int64_t index_axis = 0;
  for (std::int64_t k = 0; k < dense.rank(); ++k) {
    if (contains(window_dims, k)) continue;
    if (index_axis == index_vector_dim) ++index_axis;
    const auto i = static_cast<std::size_t>(index_axis++);
    if (dense.shape[static_cast<std::size_t>(k)] != indices.shape[i]) {
      return make_error(ErrorCode::kShapeMismatch, kStage,
                        "{}: {} batch axis {} has extent {}, but the matching indices axis {} has {}", op, dense_name,
                        k, dense.shape[static_cast<std::size_t>(k)], i, indices.shape[i]);
    }
    l.batch_shape[l.batch_rank] = indices.shape[i];
    l.dense_batch[l.batch_rank] = dense.strides[static_cast<std::size_t>(k)];
    l.index_batch[l.batch_rank++] = indices.strides[i];
  }
  for (std::size_t k = 0; k < index_map.size(); ++k) {
    const auto d = static_cast<std::size_t>(index_map[k]);
    l.limit[k] = target.shape[d] - window_extent[d];
    l.target_stride[k] = target.strides[d];
  }
  return ok_status();
}

Status check_indices(std::string_view op, const TensorView& indices) {
  TENFERRO_TRY(internal::check_view(op, "indices", indices));
  if (indices.dtype == DType::kInt32 || indices.dtype == DType::kInt64) return ok_status();
  return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: indices must be int32 or int64, found {}", op,
                    indices.dtype);
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

StridedLoop<2> window_loop_of(const IndexedLayout& l, std::int64_t item, bool dst_is_dense, bool& dense) {
  const LoopOperand ops[2] = {{nullptr, dst_is_dense ? l.dense_window : l.target_window, item},
                              {nullptr, dst_is_dense ? l.target_window : l.dense_window, item}};
  StridedLoop<2> loop;
  internal::init_strided_loop(IntArrayRef(l.window_shape, l.window_rank), ops, loop);
  dense = loop.rank == 0 || (loop.rank == 1 && loop.strides[0][0] == item && loop.strides[0][1] == item);
  return loop;
}

StridedLoop<2> batch_loop_of(const IndexedLayout& l, char* dense_data, std::int64_t item, char* index_data,
                             std::int64_t index_item) {
  const LoopOperand ops[2] = {{dense_data, l.dense_batch, item}, {index_data, l.index_batch, index_item}};
  StridedLoop<2> loop;
  internal::init_strided_loop(IntArrayRef(l.batch_shape, l.batch_rank), ops, loop);
  return loop;
}

// The byte offset of the window start in the target for the index vector
// at `vector`; gather clamps, scatter reports a window outside as false.
template <class I, bool kClamp>
bool window_offset(const IndexedLayout& l, const char* vector, std::int64_t item, std::int64_t& offset) {
  offset = 0;
  for (std::int64_t k = 0; k < l.vector_length; ++k) {
    auto v = static_cast<std::int64_t>(*reinterpret_cast<const I*>(vector + k * l.vector_stride * sizeof(I)));
    if constexpr (kClamp) {
      v = std::clamp<std::int64_t>(v, 0, l.limit[k]);
    } else {
      if (v < 0 || v > l.limit[k]) return false;
    }
    offset += v * l.target_stride[k] * item;
  }
  return true;
}

template <class T, class I>
void run_gather(const TensorView& x, const TensorView& indices, const IndexedLayout& l, const TensorView& out,
                const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  bool dense = false;
  const StridedLoop<2> window = window_loop_of(l, item, /*dst_is_dense=*/true, dense);
  const StridedLoop<2> batch =
      batch_loop_of(l, static_cast<char*>(out.data), item, static_cast<char*>(indices.data), sizeof(I));
  char* const x_data = static_cast<char*>(x.data);
  const std::int64_t grain = std::max<std::int64_t>(1, kIndexGrain / std::max<std::int64_t>(1, window.numel));
  if (stats != nullptr) ++(dense ? stats->contiguous_inner : stats->strided_inner);
  internal::parallel_or_inline(ctx, batch.numel, grain, stats, [&](std::int64_t b, std::int64_t e) {
    const std::int64_t s0 = batch.inner_stride(0), s1 = batch.inner_stride(1);
    internal::for_each_run(batch, b, e, [&](char* const* p, std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t offset = 0;
        window_offset<I, true>(l, p[1] + i * s1, item, offset);
        move_block<T, false>(window, dense, p[0] + i * s0, x_data + offset);
      }
    });
  });
}

template <class T, class I, bool kAdd>
void run_scatter(const TensorView& indices, const TensorView& updates, const IndexedLayout& l, const TensorView& out,
                 const ParallelContext& ctx, KernelStats* stats) {
  constexpr auto item = static_cast<std::int64_t>(sizeof(T));
  bool dense = false;
  const StridedLoop<2> window = window_loop_of(l, item, /*dst_is_dense=*/false, dense);
  dense = dense && !kAdd;
  const StridedLoop<2> batch =
      batch_loop_of(l, static_cast<char*>(updates.data), item, static_cast<char*>(indices.data), sizeof(I));
  char* const out_data = static_cast<char*>(out.data);
  const bool split_window = window.numel >= 2 * kIndexGrain && ctx.max_threads() > 1;
  if (stats != nullptr) ++(dense ? stats->contiguous_inner : stats->strided_inner);
  const std::int64_t s0 = batch.inner_stride(0), s1 = batch.inner_stride(1);
  const std::int64_t ws0 = window.inner_stride(0), ws1 = window.inner_stride(1);
  internal::for_each_run(batch, 0, batch.numel, [&](char* const* p, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t offset = 0;
      if (!window_offset<I, false>(l, p[1] + i * s1, item, offset)) continue;
      char* dst = out_data + offset;
      char* src = p[0] + i * s0;
      if (!split_window) {
        move_block<T, kAdd>(window, dense, dst, src);
        continue;
      }
      char* base[2] = {dst, src};
      internal::parallel_or_inline(ctx, window.numel, kIndexGrain, stats, [&](std::int64_t b, std::int64_t e) {
        internal::for_each_run(
            window, b, e,
            [&](char* const* w, std::int64_t m) {
              for (std::int64_t j = 0; j < m; ++j) {
                T* d = reinterpret_cast<T*>(w[0] + j * ws0);
                const T v = *reinterpret_cast<const T*>(w[1] + j * ws1);
                if constexpr (kAdd) {
                  *d = internal::AddOp{}(*d, v);
                } else {
                  *d = v;
                }
              }
            },
            base);
      });
    }
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

GatherDimensions take_dimensions(std::int64_t x_rank, std::int64_t indices_rank, std::int64_t axis) {
  GatherDimensions d;
  for (std::int64_t k = 0; k < axis; ++k) d.offset_dims.push_back(k);
  for (std::int64_t k = axis + 1; k < x_rank; ++k) d.offset_dims.push_back(k - 1 + indices_rank);
  d.collapsed_slice_dims.push_back(axis);
  d.start_index_map.push_back(axis);
  d.index_vector_dim = indices_rank;
  return d;
}

ScatterDimensions take_scatter_dimensions(std::int64_t x_rank, std::int64_t indices_rank, std::int64_t axis) {
  const GatherDimensions g = take_dimensions(x_rank, indices_rank, axis);
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map, g.index_vector_dim};
}

Status gather(const TensorView& x, const TensorView& indices, const GatherDimensions& dims, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "gather";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(check_indices(kOp, indices));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  IndexedLayout l;
  TENFERRO_TRY(resolve_layout(kOp, x, indices, out, dims.offset_dims, dims.collapsed_slice_dims, dims.start_index_map,
                              dims.index_vector_dim, "output", "offset_dims", "collapsed_slice_dims", "start_index_map",
                              l));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/false));
  TENFERRO_TRY(internal::check_alias(kOp, out, "indices", indices, /*allow_identical=*/false));
  if (out.numel() == 0) return ok_status();
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

Status scatter(const TensorView& x, const TensorView& indices, const TensorView& updates, const ScatterDimensions& dims,
               ScatterCombine combine, const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  constexpr std::string_view kOp = "scatter";
  TENFERRO_TRY(internal::check_view(kOp, "operand", x));
  TENFERRO_TRY(check_indices(kOp, indices));
  TENFERRO_TRY(internal::check_view(kOp, "updates", updates));
  if (combine == ScatterCombine::kAdd && x.dtype == DType::kBool) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "scatter: add needs a numeric dtype, found bool");
  }
  TENFERRO_TRY(internal::check_dtype(kOp, "updates", updates, x.dtype));
  TENFERRO_TRY(internal::check_output_view(kOp, "output", out));
  TENFERRO_TRY(internal::check_dtype(kOp, "output", out, x.dtype));
  TENFERRO_TRY(internal::check_shape(kOp, "output", out, x.shape));
  IndexedLayout l;
  TENFERRO_TRY(resolve_layout(kOp, out, indices, updates, dims.update_window_dims, dims.inserted_window_dims,
                              dims.scatter_dims_to_operand_dims, dims.index_vector_dim, "updates", "update_window_dims",
                              "inserted_window_dims", "scatter_dims_to_operand_dims", l));
  TENFERRO_TRY(internal::check_alias(kOp, out, "operand", x, /*allow_identical=*/true));
  TENFERRO_TRY(internal::check_alias(kOp, out, "updates", updates, /*allow_identical=*/false));
  TENFERRO_TRY(internal::check_alias(kOp, out, "indices", indices, /*allow_identical=*/false));
  if (out.numel() == 0) return ok_status();
  if (!internal::same_layout(out, x)) {
    internal::copy_elements(x.shape, static_cast<std::int64_t>(dtype_size(x.dtype)), {out.data, out.strides.data()},
                            {x.data, x.strides.data()}, ctx, stats);
  }
  if (updates.numel() == 0) return ok_status();
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
