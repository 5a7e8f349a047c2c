// FftPlan: what CpuFftEngine::prepare() builds for one transform and
// concrete input (Note [FFT extension engine] in cpu_engine.h): the staging
// copy, one pass per axis with its provider kernels and batch blocks
// (Note [FFT batch parallelism]), the optional direct first pass and the
// final scaling. Immutable after build; shared by every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "tenferro/base/function_ref.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/cpu/workspace_pool.h"
#include "tenferro/fft/fft_op.h"
#include "tenferro/fft_cpu/cpu_engine.h"
#include "tenferro/fft_cpu/fft_provider.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::fft::internal {

/// Which buffer a pass reads or writes.
enum class BufferRole : std::uint8_t { kInput, kOutput, kStage };

/// One batched 1-D transform and its kernels.
struct FftPass {
  FftProblem problem;
  BufferRole src = BufferRole::kOutput;
  BufferRole dst = BufferRole::kOutput;
  std::shared_ptr<const FftKernel> full;   ///< the whole batch
  std::shared_ptr<const FftKernel> block;  ///< one block (null when nblocks == 1)
  std::shared_ptr<const FftKernel> last;   ///< the last, shorter block (null when all blocks are equal)
  std::int64_t nblocks = 1;
  std::int64_t src_block_bytes = 0;  ///< pointer advance per block
  std::int64_t dst_block_bytes = 0;
  std::size_t workspace_bytes = 0;  ///< largest kernel workspace
  double flops = 0.0;

  /// Panel mode (Note [FFT panels]): set for a pass along a strided axis
  /// whose batch has a loop of unit stride on both sides (c2c in or out of
  /// place, r2c, c2r). Then `full`, `block` and `last` are null and the pass
  /// gathers `panel_width` columns of the source into contiguous workspace,
  /// runs panel_kernel / panel_last there and scatters the result into the
  /// destination.
  bool panel = false;
  std::int64_t panel_width = 0;
  std::int64_t panel_columns = 0;                 ///< extent of the unit-stride loop
  std::int64_t panel_blocks = 0;                  ///< ceil(panel_columns / panel_width)
  std::int64_t src_stride = 0;                    ///< source elements between transform points
  std::int64_t dst_stride = 0;                    ///< destination elements between transform points
  std::int64_t src_length = 0;                    ///< transform points read (n, or n/2+1 for c2r)
  std::int64_t dst_length = 0;                    ///< transform points written (n, or n/2+1 for r2c)
  std::int64_t src_pitch = 0;                     ///< elements between rows of the source panel
  std::int64_t dst_pitch = 0;                     ///< ... of the destination panel (c2c: the same panel)
  SmallVector<FftLoop, 4> panel_outer;            ///< the other loops
  std::int64_t panel_items = 0;                   ///< panel_blocks * product of panel_outer
  std::int64_t panel_grain = 1;                   ///< items per parallel chunk (>= grain_flops of work)
  std::size_t panel_src_bytes = 0;                ///< the gathered source panel (whole cache lines)
  std::size_t panel_bytes = 0;                    ///< both panels (one for c2c, transformed in place)
  std::shared_ptr<const FftKernel> panel_kernel;  ///< [panel_width][n], contiguous
  std::shared_ptr<const FftKernel> panel_last;    ///< [columns % width][n] (null when it divides)
};

/// Runs a panel-mode pass from `src` to `dst` (the same buffer for an
/// in-place pass), over `parallel`'s workers when `split`; workspace from
/// `pool`. Adds the number of kernel calls to *calls.
Status run_panel_pass(const FftPass& pass, const std::byte* src, std::byte* dst, const cpu::ParallelContext& parallel,
                      bool split, cpu::WorkspacePool& pool, std::uint64_t* calls);

/// The copy of the input into the first pass's buffer.
struct StageSpec {
  BufferRole dst = BufferRole::kOutput;
  DType dst_dtype = DType::kComplex128;
  Dims dst_shape;    ///< row-major
  Dims copy_extent;  ///< per axis: min(input extent, dst extent)
  bool zero_fill = false;
  double scale = 1.0;
  bool conj = false;
};

struct FftPlan final : runtime::ProviderPlan {
  FftGeometry geometry;
  FftKind kind = FftKind::kFft;
  DType input_dtype = DType::kComplex128;
  DType output_dtype = DType::kComplex128;
  Dims input_shape;
  bool empty = false;  ///< the output has no elements
  StageSpec stage;
  std::size_t stage_bytes = 0;  ///< 0 when the stage goes to the output
  std::vector<FftPass> passes;
  bool has_direct = false;
  FftPass direct_first;  ///< replaces passes[0] (and the staging copy) when the input allows
  bool post_conj = false;
  std::size_t workspace_bytes = 0;  ///< largest kernel workspace over all passes
  double flops = 0.0;
  std::size_t table_bytes = 0;  ///< of its distinct kernels (Note [FFT plan memory])
};

/// The engine's bounded LRU cache of built plans, keyed by the op's payload,
/// the input dtype, shape and whether it is row-major, so repeated eager
/// calls (which prepare every time) skip building passes. Thread-safe.
class EnginePlanCache {
 public:
  EnginePlanCache(std::size_t capacity, std::size_t max_bytes)
      : capacity_(capacity < 1 ? 1 : capacity), max_bytes_(max_bytes) {}
  /// The cached plan, or the one `build` makes (outside the lock; errors
  /// are not cached).
  Result<std::shared_ptr<const FftPlan>> get_or_build(const FftOp& op, DType dtype, IntArrayRef shape, bool row_major,
                                                      FunctionRef<Result<std::shared_ptr<FftPlan>>()> build);
  std::uint64_t hits() const;
  std::uint64_t misses() const;
  /// Plans dropped to keep the bounds (not those clear() drops).
  std::uint64_t evictions() const;
  std::size_t size() const;
  /// Table bytes of the cached plans' kernels (a kernel two plans share is
  /// counted in each).
  std::size_t bytes() const;
  /// Drops every plan (plans in use stay valid: their holders share them).
  void clear();

 private:
  struct Entry {
    FftAttributes attributes;
    DType dtype;
    Dims shape;
    bool row_major;
    std::uint64_t hash;
    std::shared_ptr<const FftPlan> plan;
  };
  std::size_t capacity_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recent first
  std::uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

/// Builds the plan (prepare time). `input_row_major`: the input's layout
/// class is known to be row-major (enables the direct first pass).
Result<std::shared_ptr<FftPlan>> build_fft_plan(const CpuFftProvider& provider, const FftEngineOptions& options,
                                                const FftOp& op, DType input_dtype, IntArrayRef input_shape,
                                                bool input_row_major);

/// Copies `in` into the row-major buffer `dst` as `spec` says (pad/crop,
/// real -> complex, scale, conj), split over `parallel`.
void stage_input(const TensorView& in, const StageSpec& spec, void* dst, const cpu::ParallelContext& parallel);

/// data[i] = conj?(data[i]) * scale for `count` elements of `dtype`.
void scale_in_place(void* data, DType dtype, std::int64_t count, double scale, bool conj,
                    const cpu::ParallelContext& parallel);

}  // namespace tenferro::fft::internal
