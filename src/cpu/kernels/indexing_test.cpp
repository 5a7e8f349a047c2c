// Indexing kernels against references computed here element by element, for
// every dtype and operand layout.
#include "tenferro/cpu/kernels/indexing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <random>
#include <vector>

#include "cpu/kernels/kernel_table.h"
#include "cpu/kernels/kernel_test_support.h"

namespace tenferro::cpu {
namespace {

using C = std::complex<double>;
using Index = std::vector<std::int64_t>;
using testing::KernelTable;
using testing::kSweepInputLayouts;
using testing::Layout;
using testing::make_tensor;
using testing::unravel;
using testing::value_at;

class IndexingConformance : public ::testing::TestWithParam<const KernelTable*> {
 protected:
  const KernelTable& k() const { return *GetParam(); }
  const ParallelContext& seq() const { return testing::sequential_context(); }
};

bool contains_axis(const Dims& axes, std::int64_t axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

// Checks every element of `out` against want(index).
template <class Want>
void expect_all(const Tensor& out, Want&& want) {
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const Index idx = unravel(i, out.shape());
    ASSERT_EQ(value_at(out, idx), want(idx)) << "element " << i;
  }
}

// An index tensor of `shape` with values in [0, extent), in `layout`.
Tensor make_indices(const Index& shape, std::int64_t extent, DType dtype, Layout layout, std::uint64_t seed) {
  Tensor t = make_tensor(shape, dtype, layout, seed);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const Index idx = unravel(i, t.shape());
    std::int64_t off = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    const std::int64_t v = (i * 7 + static_cast<std::int64_t>(seed)) % extent;
    if (dtype == DType::kInt32) {
      static_cast<std::int32_t*>(t.data())[off] = static_cast<std::int32_t>(v);
    } else {
      static_cast<std::int64_t*>(t.data())[off] = v;
    }
  }
  return t;
}

TEST_P(IndexingConformance, GatherTakesAlongEveryAxis) {
  for (DType dtype : testing::kAllDTypes) {
    for (DType index_dtype : {DType::kInt32, DType::kInt64}) {
      for (const Index& shape : std::vector<Index>{{6}, {4, 5}, {3, 4, 5}}) {
        for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(shape.size()); ++axis) {
          for (const Index& ishape : std::vector<Index>{{}, {3}, {2, 4}, {0}}) {
            for (Layout xl : kSweepInputLayouts) {
              SCOPED_TRACE(fmt::format("{} idx {} x {} axis {} indices {} {}", dtype, index_dtype,
                                       shape_to_string(shape), axis, shape_to_string(ishape), layout_name(xl)));
              const auto a = static_cast<std::size_t>(axis);
              Tensor x = make_tensor(shape, dtype, xl, 3);
              Tensor idx = make_indices(ishape, shape[a], index_dtype,
                                        xl == Layout::kBroadcast ? Layout::kBroadcast : Layout::kTransposed, 4);
              Index out_shape(shape.begin(), shape.begin() + axis);
              out_shape.insert(out_shape.end(), ishape.begin(), ishape.end());
              out_shape.insert(out_shape.end(), shape.begin() + axis + 1, shape.end());
              Tensor out = make_tensor(out_shape, dtype, Layout::kSliced, 5);
              const Status st = k().gather(x.view(), idx.view(), take_dimensions(x.rank(), idx.rank(), axis),
                                           out.view(), seq(), nullptr);
              ASSERT_TRUE(st.ok()) << st.to_string();
              expect_all(out, [&](const Index& o) {
                Index q(o.begin() + axis, o.begin() + axis + static_cast<std::int64_t>(ishape.size()));
                Index xi(o.begin(), o.begin() + axis);
                xi.push_back(static_cast<std::int64_t>(value_at(idx, q).real()));
                xi.insert(xi.end(), o.begin() + axis + static_cast<std::int64_t>(ishape.size()), o.end());
                return value_at(x, xi);
              });
            }
          }
        }
      }
    }
  }
}

TEST_P(IndexingConformance, ScatterReplacesAndAddsWithDuplicates) {
  for (DType dtype : testing::kAllDTypes) {
    for (ScatterCombine combine : {ScatterCombine::kReplace, ScatterCombine::kAdd}) {
      if (combine == ScatterCombine::kAdd && dtype == DType::kBool) continue;
      for (const Index& shape : std::vector<Index>{{6}, {4, 5}, {3, 4, 5}}) {
        for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(shape.size()); ++axis) {
          for (bool in_place : {false, true}) {
            const auto a = static_cast<std::size_t>(axis);
            SCOPED_TRACE(fmt::format("{} {} x {} axis {} in_place {}", dtype,
                                     combine == ScatterCombine::kAdd ? "add" : "replace", shape_to_string(shape), axis,
                                     in_place));
            Tensor x = make_tensor(shape, dtype, in_place ? Layout::kSliced : Layout::kTransposed, 6);
            // Replace gets distinct indices (a reversal); add gets duplicates.
            const Index ishape = combine == ScatterCombine::kAdd ? Index{2, 3} : Index{shape[a]};
            Tensor idx = *Tensor::empty(ishape, DType::kInt64);
            for (std::int64_t i = 0; i < idx.numel(); ++i) {
              static_cast<std::int64_t*>(idx.data())[i] = combine == ScatterCombine::kAdd ? i % 2 : shape[a] - 1 - i;
            }
            Index ushape(shape.begin(), shape.begin() + axis);
            ushape.insert(ushape.end(), ishape.begin(), ishape.end());
            ushape.insert(ushape.end(), shape.begin() + axis + 1, shape.end());
            Tensor updates = make_tensor(ushape, dtype, Layout::kTransposed, 7);
            // Reference: start from x, apply every update in order.
            std::vector<C> want(static_cast<std::size_t>(x.numel()));
            for (std::int64_t i = 0; i < x.numel(); ++i)
              want[static_cast<std::size_t>(i)] = value_at(x, unravel(i, x.shape()));
            for (std::int64_t u = 0; u < updates.numel(); ++u) {
              const Index ui = unravel(u, updates.shape());
              Index q(ui.begin() + axis, ui.begin() + axis + static_cast<std::int64_t>(ishape.size()));
              Index xi(ui.begin(), ui.begin() + axis);
              xi.push_back(static_cast<std::int64_t>(value_at(idx, q).real()));
              xi.insert(xi.end(), ui.begin() + axis + static_cast<std::int64_t>(ishape.size()), ui.end());
              std::int64_t flat = 0;
              for (std::size_t d = 0; d < xi.size(); ++d) flat = flat * shape[d] + xi[d];
              C& w = want[static_cast<std::size_t>(flat)];
              const C v = value_at(updates, ui);
              w = combine == ScatterCombine::kAdd ? w + v : v;
            }
            Tensor out = in_place ? x : make_tensor(shape, dtype, Layout::kContiguous, 8);
            const Status st =
                k().scatter(x.view(), idx.view(), updates.view(), take_scatter_dimensions(x.rank(), idx.rank(), axis),
                            combine, out.view(), testing::two_thread_context(), nullptr);
            ASSERT_TRUE(st.ok()) << st.to_string();
            for (std::int64_t i = 0; i < out.numel(); ++i) {
              ASSERT_TRUE(
                  testing::matches(value_at(out, unravel(i, out.shape())), want[static_cast<std::size_t>(i)], dtype))
                  << "element " << i;
            }
          }
        }
      }
    }
  }
}

// Note [Random gather and scatter configurations]
// A random StableHLO gather: operand rank 1..3 with extents 1..4, a random
// set of collapsed axes, a random start_index_map (distinct axes, in random
// order, possibly none collapsed), slice sizes 1..extent, 0..2 batch axes,
// the index vector on a random indices axis (or implicit when it has length
// 1) and offset_dims a random increasing subset of the result axes. Index
// values range over [-2, extent + 1] so clamping (gather) and skipped
// windows (scatter) both happen.
struct RandomIndexing {
  Index x_shape;
  Index window;  // per operand axis; 1 on collapsed axes
  GatherDimensions dims;
  Index indices_shape;
  std::vector<std::int64_t> index_values;
  Index out_shape;
};

RandomIndexing random_indexing(std::mt19937_64& rng) {
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  RandomIndexing r;
  const std::int64_t rank = uniform(1, 3);
  for (std::int64_t d = 0; d < rank; ++d) r.x_shape.push_back(uniform(1, 4));
  Index axes(static_cast<std::size_t>(rank));
  for (std::int64_t d = 0; d < rank; ++d) axes[static_cast<std::size_t>(d)] = d;
  std::shuffle(axes.begin(), axes.end(), rng);
  const std::int64_t n = uniform(1, rank);
  for (std::int64_t k = 0; k < n; ++k) r.dims.start_index_map.push_back(axes[static_cast<std::size_t>(k)]);
  for (std::int64_t d = 0; d < rank; ++d) {
    const bool collapse = uniform(0, 2) == 0;
    if (collapse) r.dims.collapsed_slice_dims.push_back(d);
    r.window.push_back(collapse ? 1 : uniform(1, r.x_shape[static_cast<std::size_t>(d)]));
  }
  const std::int64_t batch_rank = uniform(0, 2);
  Index batch;
  for (std::int64_t b = 0; b < batch_rank; ++b) batch.push_back(uniform(1, 3));
  const bool implicit = n == 1 && uniform(0, 1) == 0;
  r.dims.index_vector_dim = implicit ? batch_rank : uniform(0, batch_rank);
  r.indices_shape = batch;
  if (!implicit) r.indices_shape.insert(r.indices_shape.begin() + r.dims.index_vector_dim, n);
  std::int64_t count = 1;
  for (std::int64_t e : r.indices_shape) count *= e;
  for (std::int64_t i = 0; i < count; ++i) r.index_values.push_back(uniform(-2, 5));
  const std::int64_t window_rank = rank - static_cast<std::int64_t>(r.dims.collapsed_slice_dims.size());
  Index positions(static_cast<std::size_t>(batch_rank + window_rank));
  for (std::size_t k = 0; k < positions.size(); ++k) positions[k] = static_cast<std::int64_t>(k);
  std::shuffle(positions.begin(), positions.end(), rng);
  std::sort(positions.begin(), positions.begin() + window_rank);
  for (std::int64_t k = 0; k < window_rank; ++k) r.dims.offset_dims.push_back(positions[static_cast<std::size_t>(k)]);
  std::size_t next_batch = 0, next_window = 0;
  Index window_extents;
  for (std::int64_t d = 0; d < rank; ++d)
    if (!contains_axis(r.dims.collapsed_slice_dims, d)) window_extents.push_back(r.window[static_cast<std::size_t>(d)]);
  for (std::size_t k = 0; k < positions.size(); ++k) {
    r.out_shape.push_back(contains_axis(r.dims.offset_dims, static_cast<std::int64_t>(k))
                              ? window_extents[next_window++]
                              : batch[next_batch++]);
  }
  return r;
}

// For the result (or updates) element `o`: the operand index its window
// start and offset give, unclamped starts in `start` (brute force, straight
// from the StableHLO spec).
Index operand_index_of(const RandomIndexing& r, const Tensor& indices, const Index& o, bool clamp, Index& start) {
  Index batch, offset;
  for (std::size_t k = 0; k < o.size(); ++k)
    (contains_axis(r.dims.offset_dims, static_cast<std::int64_t>(k)) ? offset : batch).push_back(o[k]);
  const auto rank = r.x_shape.size();
  start.assign(rank, 0);
  for (std::size_t k = 0; k < r.dims.start_index_map.size(); ++k) {
    Index at = batch;
    if (static_cast<std::size_t>(r.dims.index_vector_dim) <= at.size() && r.indices_shape.size() > batch.size())
      at.insert(at.begin() + r.dims.index_vector_dim, static_cast<std::int64_t>(k));
    const auto v = static_cast<std::int64_t>(value_at(indices, at).real());
    const auto d = static_cast<std::size_t>(r.dims.start_index_map[k]);
    start[d] = clamp ? std::clamp<std::int64_t>(v, 0, r.x_shape[d] - r.window[d]) : v;
  }
  Index full(rank, 0);
  std::size_t next = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t w =
        contains_axis(r.dims.collapsed_slice_dims, static_cast<std::int64_t>(d)) ? 0 : offset[next++];
    full[d] = start[d] + w;
  }
  return full;
}

TEST_P(IndexingConformance, GeneralGatherAndScatterMatchABruteForceReference) {
  std::mt19937_64 rng(20261202);
  for (int trial = 0; trial < 300; ++trial) {
    const RandomIndexing r = random_indexing(rng);
    const DType dtype = trial % 3 == 0 ? DType::kComplex64 : (trial % 3 == 1 ? DType::kFloat64 : DType::kInt32);
    const DType index_dtype = trial % 2 == 0 ? DType::kInt32 : DType::kInt64;
    SCOPED_TRACE(
        fmt::format("trial {}: x {} window {} offset_dims {} collapsed {} start_index_map {} ivd {} indices {}", trial,
                    shape_to_string(r.x_shape), shape_to_string(r.window), shape_to_string(r.dims.offset_dims),
                    shape_to_string(r.dims.collapsed_slice_dims), shape_to_string(r.dims.start_index_map),
                    r.dims.index_vector_dim, shape_to_string(r.indices_shape)));
    Tensor x = make_tensor(r.x_shape, dtype, trial % 2 == 0 ? Layout::kTransposed : Layout::kContiguous, 11);
    Tensor indices = *Tensor::empty(r.indices_shape, index_dtype);
    for (std::size_t i = 0; i < r.index_values.size(); ++i) {
      if (index_dtype == DType::kInt32) {
        static_cast<std::int32_t*>(indices.data())[i] = static_cast<std::int32_t>(r.index_values[i]);
      } else {
        static_cast<std::int64_t*>(indices.data())[i] = r.index_values[i];
      }
    }
    Tensor out = make_tensor(r.out_shape, dtype, Layout::kSliced, 12);
    const ParallelContext& ctx = trial % 2 == 0 ? seq() : testing::two_thread_context();
    Status st = k().gather(x.view(), indices.view(), r.dims, out.view(), ctx, nullptr);
    ASSERT_TRUE(st.ok()) << st.to_string();
    Index start;
    expect_all(out, [&](const Index& o) { return value_at(x, operand_index_of(r, indices, o, true, start)); });

    // The scatter with the same dimension numbers; updates have the gather
    // result's shape. Windows outside the operand are skipped.
    const ScatterDimensions sd{r.dims.offset_dims, r.dims.collapsed_slice_dims, r.dims.start_index_map,
                               r.dims.index_vector_dim};
    Tensor updates = make_tensor(r.out_shape, dtype, Layout::kTransposed, 13);
    for (ScatterCombine combine : {ScatterCombine::kAdd, ScatterCombine::kReplace}) {
      // want: the sum (add) or the original value; written: every value a
      // replace may leave (duplicate windows: any one write wins).
      std::vector<C> want(static_cast<std::size_t>(x.numel()));
      std::vector<std::vector<C>> written(want.size());
      for (std::int64_t i = 0; i < x.numel(); ++i)
        want[static_cast<std::size_t>(i)] = value_at(x, unravel(i, x.shape()));
      for (std::int64_t u = 0; u < updates.numel(); ++u) {
        const Index ui = unravel(u, updates.shape());
        const Index target = operand_index_of(r, indices, ui, false, start);
        bool inside = true;
        for (std::size_t d = 0; d < start.size(); ++d)
          inside = inside && start[d] >= 0 && start[d] + r.window[d] <= r.x_shape[d];
        if (!inside) continue;
        std::int64_t flat = 0;
        for (std::size_t d = 0; d < target.size(); ++d) flat = flat * r.x_shape[d] + target[d];
        want[static_cast<std::size_t>(flat)] += value_at(updates, ui);
        written[static_cast<std::size_t>(flat)].push_back(value_at(updates, ui));
      }
      Tensor scattered = make_tensor(r.x_shape, dtype, Layout::kContiguous, 14);
      st = k().scatter(x.view(), indices.view(), updates.view(), sd, combine, scattered.view(), ctx, nullptr);
      ASSERT_TRUE(st.ok()) << st.to_string();
      for (std::int64_t i = 0; i < scattered.numel(); ++i) {
        const C got = value_at(scattered, unravel(i, scattered.shape()));
        const auto f = static_cast<std::size_t>(i);
        if (combine == ScatterCombine::kAdd) {
          ASSERT_TRUE(testing::matches(got, want[f], dtype, 1e-6)) << "add element " << i;
        } else if (written[f].empty()) {
          ASSERT_EQ(got, value_at(x, unravel(i, x.shape()))) << "untouched element " << i;
        } else {
          ASSERT_TRUE(std::find(written[f].begin(), written[f].end(), got) != written[f].end())
              << "replace element " << i << " holds none of its " << written[f].size() << " writes";
        }
      }
    }
  }
}

// A window big enough that scatter splits it across threads (Note [Gather
// and scatter loops]): duplicate rows still accumulate in one fixed order,
// so two threads give the sequential result bit for bit.
TEST_P(IndexingConformance, LargeScatterWindowsSplitAcrossThreadsDeterministically) {
  Tensor x = make_tensor({3, 256, 300}, DType::kFloat64, Layout::kContiguous, 21);
  Tensor rows = *Tensor::from_values<std::int64_t>({1, 0, 1, 7, 1}, {5});  // 7 is skipped
  Tensor updates = make_tensor({5, 256, 300}, DType::kFloat64, Layout::kTransposed, 22);
  const ScatterDimensions dims = take_scatter_dimensions(3, 1, 0);
  Tensor sequential = *Tensor::empty({3, 256, 300}, DType::kFloat64);
  Tensor parallel = *Tensor::empty({3, 256, 300}, DType::kFloat64);
  ASSERT_TRUE(
      k().scatter(x.view(), rows.view(), updates.view(), dims, ScatterCombine::kAdd, sequential.view(), seq(), nullptr)
          .ok());
  ASSERT_TRUE(k().scatter(x.view(), rows.view(), updates.view(), dims, ScatterCombine::kAdd, parallel.view(),
                          testing::two_thread_context(), nullptr)
                  .ok());
  EXPECT_EQ(testing::row_major_bytes(parallel), testing::row_major_bytes(sequential));
  for (std::int64_t i = 0; i < x.numel(); i += 997) {
    const Index at = unravel(i, x.shape());
    C want = value_at(x, at);
    const std::int64_t row = at[0];
    for (std::int64_t u = 0; u < 5; ++u) {
      const std::int64_t r = static_cast<std::int64_t*>(rows.data())[u];
      if (r == row) want += value_at(updates, Index{u, at[1], at[2]});
    }
    ASSERT_NEAR(value_at(parallel, at).real(), want.real(), 1e-12) << "element " << i;
  }
  // Replace: the last of the duplicate rows is not promised, but every
  // element of row 1 holds one of its writes and row 2 is untouched.
  ASSERT_TRUE(k().scatter(x.view(), rows.view(), updates.view(), dims, ScatterCombine::kReplace, parallel.view(),
                          testing::two_thread_context(), nullptr)
                  .ok());
  for (std::int64_t i = 0; i < x.numel(); i += 991) {
    const Index at = unravel(i, x.shape());
    const C got = value_at(parallel, at);
    if (at[0] == 2) {
      EXPECT_EQ(got, value_at(x, at));
    } else if (at[0] == 0) {
      EXPECT_EQ(got, value_at(updates, Index{1, at[1], at[2]}));
    } else {
      EXPECT_TRUE(got == value_at(updates, Index{0, at[1], at[2]}) ||
                  got == value_at(updates, Index{2, at[1], at[2]}) || got == value_at(updates, Index{4, at[1], at[2]}));
    }
  }
}

TEST_P(IndexingConformance, DynamicSliceAndUpdateClampTheirStarts) {
  for (DType dtype : testing::kAllDTypes) {
    for (Layout xl : kSweepInputLayouts) {
      const Index shape = {5, 6, 4};
      Tensor x = make_tensor(shape, dtype, xl, 9);
      for (const Index& starts : std::vector<Index>{{0, 0, 0}, {1, 2, 3}, {-3, 9, 2}, {4, 4, 100}}) {
        const Index window = {2, 3, 2};
        Index clamped(3);
        for (std::size_t d = 0; d < 3; ++d) clamped[d] = std::clamp<std::int64_t>(starts[d], 0, shape[d] - window[d]);
        Tensor out = make_tensor(window, dtype, Layout::kSliced, 10);
        ASSERT_TRUE(k().dynamic_slice(x.view(), starts, out.view(), seq(), nullptr).ok());
        expect_all(out, [&](const Index& o) {
          return value_at(x, Index{o[0] + clamped[0], o[1] + clamped[1], o[2] + clamped[2]});
        });
        Tensor update = make_tensor(window, dtype, Layout::kTransposed, 11);
        auto in_window = [&](const Index& o) {
          for (std::size_t d = 0; d < 3; ++d) {
            if (o[d] < clamped[d] || o[d] >= clamped[d] + window[d]) return false;
          }
          return true;
        };
        if (xl != Layout::kBroadcast) {
          // In place: only the window changes.
          Tensor y = make_tensor(shape, dtype, xl, 12);
          std::vector<C> before;
          for (std::int64_t i = 0; i < y.numel(); ++i) before.push_back(value_at(y, unravel(i, y.shape())));
          ASSERT_TRUE(k().dynamic_update_slice(y.view(), update.view(), starts, y.view(), seq(), nullptr).ok());
          expect_all(y, [&](const Index& o) {
            if (in_window(o)) return value_at(update, Index{o[0] - clamped[0], o[1] - clamped[1], o[2] - clamped[2]});
            return before[static_cast<std::size_t>((o[0] * shape[1] + o[1]) * shape[2] + o[2])];
          });
        }
        Tensor dus = make_tensor(shape, dtype, Layout::kContiguous, 13);
        ASSERT_TRUE(k().dynamic_update_slice(x.view(), update.view(), starts, dus.view(), seq(), nullptr).ok());
        expect_all(dus, [&](const Index& o) {
          if (in_window(o)) return value_at(update, Index{o[0] - clamped[0], o[1] - clamped[1], o[2] - clamped[2]});
          return value_at(x, o);
        });
      }
    }
  }
}

TEST_P(IndexingConformance, ConcatenatePadAndReverse) {
  for (DType dtype : testing::kAllDTypes) {
    for (std::int64_t axis = 0; axis < 3; ++axis) {
      const auto a = static_cast<std::size_t>(axis);
      Index s0 = {2, 3, 4}, s1 = {2, 3, 4}, s2 = {2, 3, 4};
      s0[a] = 1;
      s1[a] = 0;
      s2[a] = 3;
      Tensor x0 = make_tensor(s0, dtype, Layout::kTransposed, 14);
      Tensor x1 = make_tensor(s1, dtype, Layout::kContiguous, 15);
      Tensor x2 = make_tensor(s2, dtype, Layout::kBroadcast, 16);
      Index os = {2, 3, 4};
      os[a] = 4;
      Tensor out = make_tensor(os, dtype, Layout::kSliced, 17);
      const TensorView inputs[] = {x0.view(), x1.view(), x2.view()};
      ASSERT_TRUE(k().concatenate(std::span<const TensorView>(inputs), axis, out.view(), seq(), nullptr).ok());
      expect_all(out, [&](Index o) {
        if (o[a] < 1) return value_at(x0, o);
        o[a] -= 1;
        return value_at(x2, o);
      });
    }
    for (Layout xl : kSweepInputLayouts) {
      const Index shape = {3, 2, 4};
      Tensor x = make_tensor(shape, dtype, xl, 18);
      Tensor value = make_tensor({}, dtype, Layout::kContiguous, 19);
      const Index low = {1, 0, 2}, high = {0, 3, 1}, interior = {2, 1, 0};
      Index os(3);
      for (std::size_t d = 0; d < 3; ++d) os[d] = low[d] + high[d] + shape[d] + (shape[d] - 1) * interior[d];
      Tensor out = make_tensor(os, dtype, Layout::kTransposed, 20);
      ASSERT_TRUE(k().pad(x.view(), value.view(), low, high, interior, out.view(), seq(), nullptr).ok());
      expect_all(out, [&](const Index& o) {
        Index xi(3);
        for (std::size_t d = 0; d < 3; ++d) {
          const std::int64_t p = o[d] - low[d];
          if (p < 0 || p % (interior[d] + 1) != 0 || p / (interior[d] + 1) >= shape[d]) return value_at(value, Index{});
          xi[d] = p / (interior[d] + 1);
        }
        return value_at(x, xi);
      });
      for (const Index& axes : std::vector<Index>{{}, {0}, {2, 1}, {0, 1, 2}}) {
        Tensor r = make_tensor(shape, dtype, Layout::kSliced, 21);
        ASSERT_TRUE(k().reverse(x.view(), axes, r.view(), seq(), nullptr).ok());
        expect_all(r, [&](Index o) {
          for (std::int64_t ax : axes)
            o[static_cast<std::size_t>(ax)] = shape[static_cast<std::size_t>(ax)] - 1 - o[static_cast<std::size_t>(ax)];
          return value_at(x, o);
        });
      }
    }
  }
}

TEST_P(IndexingConformance, BadInputIsATypedErrorAndWritesNothing) {
  Tensor x = make_tensor({4, 5}, DType::kFloat64, Layout::kContiguous, 1);
  Tensor out = make_tensor({4, 3}, DType::kFloat64, Layout::kContiguous, 2);
  const auto before = testing::row_major_bytes(out);
  auto expect_code = [&](const Status& st, ErrorCode code, ErrorStage stage = ErrorStage::kNone) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_EQ(st.stage(), stage) << st.to_string();
    EXPECT_EQ(testing::row_major_bytes(out), before);
  };
  auto take = [](std::int64_t axis) { return take_dimensions(2, 1, axis); };
  Tensor fidx = *Tensor::from_values<double>({0, 1, 2}, {3});
  expect_code(k().gather(x.view(), fidx.view(), take(1), out.view(), seq(), nullptr), ErrorCode::kDTypeMismatch);
  Tensor good = *Tensor::from_values<std::int64_t>({0, 1, 2}, {3});
  expect_code(k().gather(x.view(), good.view(), take(2), out.view(), seq(), nullptr), ErrorCode::kAxisOutOfRange);
  expect_code(k().gather(x.view(), good.view(), take(0), out.view(), seq(), nullptr), ErrorCode::kShapeMismatch);
  // Bad dimension numbers: unsorted offset_dims, a repeated start_index_map
  // axis, a wrong index-vector length, index_vector_dim past the rank, too
  // few offset_dims, a window wider than the operand.
  expect_code(k().gather(x.view(), good.view(), GatherDimensions{{1, 0}, {}, {1}, 1}, out.view(), seq(), nullptr),
              ErrorCode::kInvalidArgument);
  Tensor pairs = *Tensor::from_values<std::int64_t>({0, 1, 2, 3, 1, 1}, {3, 2});
  expect_code(k().gather(x.view(), pairs.view(), GatherDimensions{{}, {0, 1}, {1, 1}, 1}, out.view(), seq(), nullptr),
              ErrorCode::kInvalidArgument);
  expect_code(k().gather(x.view(), pairs.view(), GatherDimensions{{1}, {0}, {0}, 1}, out.view(), seq(), nullptr),
              ErrorCode::kInvalidArgument);
  expect_code(k().gather(x.view(), good.view(), GatherDimensions{{0}, {1}, {1}, 2}, out.view(), seq(), nullptr),
              ErrorCode::kAxisOutOfRange);
  expect_code(k().gather(x.view(), good.view(), GatherDimensions{{}, {1}, {1}, 1}, out.view(), seq(), nullptr),
              ErrorCode::kInvalidArgument);
  Tensor wide = make_tensor({3, 6}, DType::kFloat64, Layout::kContiguous, 2);
  EXPECT_EQ(k().gather(x.view(), good.view(), GatherDimensions{{1}, {0}, {0}, 1}, wide.view(), seq(), nullptr).code(),
            ErrorCode::kShapeMismatch);
  // Out-of-range indices are no error: gather clamps, scatter skips.
  Tensor far = *Tensor::from_values<std::int64_t>({0, 4, 5}, {3});
  Tensor clamped = make_tensor({4, 3}, DType::kFloat64, Layout::kContiguous, 2);
  EXPECT_TRUE(k().gather(x.view(), far.view(), take(1), clamped.view(), seq(), nullptr).ok());
  EXPECT_EQ(value_at(clamped, Index{2, 2}), value_at(x, Index{2, 4}));  // 5 clamped to 4
  const auto x_before = testing::row_major_bytes(x);
  Tensor updates = make_tensor({4, 3}, DType::kFloat64, Layout::kContiguous, 3);
  Tensor outside = *Tensor::from_values<std::int64_t>({5, -1, 9}, {3});
  EXPECT_TRUE(k().scatter(x.view(), outside.view(), updates.view(), take_scatter_dimensions(2, 1, 1),
                          ScatterCombine::kAdd, x.view(), seq(), nullptr)
                  .ok());
  EXPECT_EQ(testing::row_major_bytes(x), x_before);
  // Updates overlapping the output.
  EXPECT_EQ(k().scatter(x.view(), good.view(), x.slice(1, 0, 3)->view(), take_scatter_dimensions(2, 1, 1),
                        ScatterCombine::kReplace, x.view(), seq(), nullptr)
                .code(),
            ErrorCode::kAliasConflict);
  Tensor bools = make_tensor({4, 5}, DType::kBool, Layout::kContiguous);
  Tensor bool_updates = make_tensor({4, 3}, DType::kBool, Layout::kContiguous);
  EXPECT_EQ(k().scatter(bools.view(), good.view(), bool_updates.view(), take_scatter_dimensions(2, 1, 1),
                        ScatterCombine::kAdd, bools.view(), seq(), nullptr)
                .code(),
            ErrorCode::kDTypeMismatch);
  // Updates whose batch extent does not match the indices.
  Tensor short_updates = make_tensor({4, 2}, DType::kFloat64, Layout::kContiguous, 4);
  EXPECT_EQ(k().scatter(x.view(), good.view(), short_updates.view(), take_scatter_dimensions(2, 1, 1),
                        ScatterCombine::kAdd, x.view(), seq(), nullptr)
                .code(),
            ErrorCode::kShapeMismatch);
  // Slices, concatenation, padding, reversal.
  expect_code(k().dynamic_slice(x.view(), {0}, out.view(), seq(), nullptr), ErrorCode::kShapeMismatch);
  Tensor too_big = make_tensor({5, 5}, DType::kFloat64, Layout::kContiguous);
  EXPECT_EQ(k().dynamic_slice(x.view(), {0, 0}, too_big.view(), seq(), nullptr).code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(k().dynamic_slice(x.view(), {0, 0}, x.slice(1, 0, 3)->view(), seq(), nullptr).code(),
            ErrorCode::kAliasConflict);
  Tensor y = make_tensor({4, 2}, DType::kFloat32, Layout::kContiguous);
  const TensorView mixed[] = {x.view(), y.view()};
  Tensor cat = make_tensor({4, 7}, DType::kFloat64, Layout::kContiguous);
  EXPECT_EQ(k().concatenate(std::span<const TensorView>(mixed), 1, cat.view(), seq(), nullptr).code(),
            ErrorCode::kDTypeMismatch);
  EXPECT_EQ(k().concatenate({}, 0, cat.view(), seq(), nullptr).code(), ErrorCode::kInvalidArgument);
  Tensor value = make_tensor({}, DType::kFloat64, Layout::kContiguous);
  expect_code(k().pad(x.view(), value.view(), {0, -1}, {0, 0}, {0, 0}, out.view(), seq(), nullptr),
              ErrorCode::kInvalidArgument);
  expect_code(k().pad(x.view(), value.view(), {0, 0}, {0, 0}, {0, 0}, out.view(), seq(), nullptr),
              ErrorCode::kShapeMismatch);
  EXPECT_EQ(k().reverse(x.view(), {0}, x.view(), seq(), nullptr).code(), ErrorCode::kAliasConflict);
  EXPECT_EQ(testing::row_major_bytes(x), x_before);
  Dims starts;
  Tensor s0 = *Tensor::scalar<std::int32_t>(3);
  Tensor s1 = *Tensor::scalar<std::int64_t>(-2);
  const TensorView scalars[] = {s0.view(), s1.view()};
  ASSERT_TRUE(read_start_indices(scalars, starts).ok());
  EXPECT_EQ(IntArrayRef(starts), IntArrayRef({3, -2}));
  const TensorView not_scalars[] = {x.view()};
  EXPECT_EQ(read_start_indices(not_scalars, starts).code(), ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Cpu, IndexingConformance, ::testing::Values(&testing::kNativeKernels),
                         testing::kernel_table_name);

}  // namespace
}  // namespace tenferro::cpu
