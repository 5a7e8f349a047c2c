// Building FftPlan (Note [FFT extension engine], Note [FFT batch
// parallelism] in cpu_engine.h) and the engine's copy kernels: staging the
// input and the final scaling.
#include "fft_cpu/fft_plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <mutex>

namespace tenferro::fft::internal {

namespace {

// A row-major array one pass reads or writes.
struct ArrayDesc {
  Dims shape;
  Dims strides;
  std::size_t element_bytes = 0;
};

ArrayDesc row_major(IntArrayRef shape, DType dtype) {
  ArrayDesc a;
  a.shape.assign(shape.span());
  a.strides = row_major_strides(shape);
  a.element_bytes = dtype_size(dtype);
  return a;
}

double transform_flops(FftTransform t, std::int64_t n) {
  const double nn = static_cast<double>(std::max<std::int64_t>(n, 2));
  const double f = 5.0 * nn * std::log2(nn);
  return t == FftTransform::kC2C ? f : 0.5 * f;
}

// Note [FFT panels]
// A transform along a strided axis (stride s > 1) whose batch holds a
// unit-stride loop (the columns of a row-major array) reads one element per
// cache line from each of n rows; the providers' strided kernels run at a
// fraction of their contiguous speed there. Such a pass instead gathers a
// panel of `width` adjacent columns into contiguous workspace as `width`
// rows of n, runs the contiguous kernel on them and scatters the result
// into the destination's columns, as pocketfft does. The panels (times the
// other loops) are the pass's parallel items.
//   c2c  one panel of 64 bytes of columns (4 complex128, 8 complex64),
//        transformed in place on the output after the staging copy (the
//        direct first pass, gathering from the input and scattering into
//        the untouched output, measured slower: complex64 4096x256 along
//        axis 0 6.4 ms against 5.0 ms, 2026-12-07);
//   r2c  a real panel (8 float64 or 32 float32 columns: of 8, 16, 32 and
//        64 columns these measured best, 2026-12-07) and a complex one of
//        n/2+1 points, out of place;
//   c2r  the same, the other way; the c2r kernel may overwrite its input,
//        which is the engine's panel, so a one-axis irfft reads the user's
//        input directly too.
// FFTW's guru plans for r2c/c2r along a strided axis ran through its
// buffered solver (fftw_cpy2d_pair was 36-41 % of the profile in the
// audit of 2026-12-07), at 0.23-0.5 of torch's speed. With panels, rfft
// float32 4096x256 along axis 0 took 3.3 ms against 15.4 ms (torch 3.7),
// float64 4.9 against 14.9 ms (torch 7.5): docs/performance_notes.md ("FFT:
// strided real transforms and medium prime factors").
Result<FftPass> make_panel_pass(const CpuFftProvider& provider, const FftEngineOptions& options, FftPass pass,
                                std::size_t column_loop) {
  const FftProblem& p = pass.problem;
  const std::int64_t n = p.dim.n;
  const std::int64_t half = n / 2 + 1;
  const std::int64_t real_bytes = p.precision == DType::kFloat32 ? 4 : 8;
  const bool c2c = p.transform == FftTransform::kC2C;
  pass.panel = true;
  pass.panel_width = c2c ? 64 / (2 * real_bytes) : (real_bytes == 4 ? 32 : 8);
  pass.panel_columns = p.batch[column_loop].n;
  pass.panel_width = std::min(pass.panel_width, pass.panel_columns);
  pass.panel_blocks = (pass.panel_columns + pass.panel_width - 1) / pass.panel_width;
  pass.src_stride = p.dim.in_stride;
  pass.dst_stride = p.dim.out_stride;
  pass.src_length = p.transform == FftTransform::kC2R ? half : n;
  pass.dst_length = p.transform == FftTransform::kR2C ? half : n;
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    if (i == column_loop) continue;
    pass.panel_outer.push_back(p.batch[i]);
    outer *= p.batch[i].n;
  }
  pass.panel_items = outer * pass.panel_blocks;
  const double item_flops = pass.flops / static_cast<double>(pass.panel_items);
  pass.panel_grain =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(options.grain_flops / std::max(item_flops, 1.0))));
  // Panel rows an odd number of cache lines apart: rows of a power-of-two
  // size (4096 float32, 16 KB) all fell into one L1 set, and the gather of
  // 32 of them thrashed it (rfft float32 4096x256 along axis 0: 5.4 ms
  // against 3.1 ms with odd pitches, 2026-12-07).
  const auto pitch = [](std::int64_t length, std::int64_t element) {
    std::int64_t lines = (length * element + 63) / 64;
    if (lines % 2 == 0) ++lines;
    return lines * 64 / element;
  };
  const std::int64_t src_element = p.transform == FftTransform::kR2C ? real_bytes : 2 * real_bytes;
  const std::int64_t dst_element = p.transform == FftTransform::kC2R ? real_bytes : 2 * real_bytes;
  pass.src_pitch = pitch(pass.src_length, src_element);
  pass.dst_pitch = pitch(pass.dst_length, dst_element);
  pass.panel_src_bytes = static_cast<std::size_t>(pass.panel_width * pass.src_pitch * src_element);
  pass.panel_bytes =
      pass.panel_src_bytes + (c2c ? 0 : static_cast<std::size_t>(pass.panel_width * pass.dst_pitch * dst_element));
  FftProblem panel;
  panel.transform = p.transform;
  panel.precision = p.precision;
  panel.sign = p.sign;
  panel.dim = FftLoop{n, 1, 1};
  panel.batch.push_back(FftLoop{pass.panel_width, pass.src_pitch, pass.dst_pitch});
  panel.in_place = c2c;
  TENFERRO_ASSIGN_OR_RETURN(pass.panel_kernel, provider.plan(panel));
  pass.workspace_bytes = pass.panel_kernel->workspace_bytes();
  const std::int64_t rest = pass.panel_columns % pass.panel_width;
  if (rest != 0) {
    panel.batch[0].n = rest;
    TENFERRO_ASSIGN_OR_RETURN(pass.panel_last, provider.plan(panel));
    pass.workspace_bytes = std::max(pass.workspace_bytes, pass.panel_last->workspace_bytes());
  }
  return pass;
}

Result<FftPass> make_pass(const CpuFftProvider& provider, const FftEngineOptions& options, FftTransform transform,
                          int sign, DType precision, std::int64_t n, std::int64_t axis, const ArrayDesc& src,
                          const ArrayDesc& dst, BufferRole src_role, BufferRole dst_role) {
  FftPass pass;
  pass.src = src_role;
  pass.dst = dst_role;
  FftProblem& p = pass.problem;
  p.transform = transform;
  p.precision = precision;
  p.sign = transform == FftTransform::kC2C ? sign : (transform == FftTransform::kR2C ? -1 : +1);
  const std::size_t a = static_cast<std::size_t>(axis);
  p.dim = FftLoop{n, src.strides[a], dst.strides[a]};
  p.in_place = src_role == dst_role;
  for (std::size_t d = 0; d < src.shape.size(); ++d) {
    if (d == a || src.shape[d] == 1) continue;
    const FftLoop cur{src.shape[d], src.strides[d], dst.strides[d]};
    if (!p.batch.empty()) {
      FftLoop& prev = p.batch.back();
      if (prev.in_stride == cur.n * cur.in_stride && prev.out_stride == cur.n * cur.out_stride) {
        prev = FftLoop{prev.n * cur.n, cur.in_stride, cur.out_stride};
        continue;
      }
    }
    p.batch.push_back(cur);
  }
  const double per = transform_flops(transform, n);
  pass.flops = per * static_cast<double>(p.howmany());
  if ((p.dim.in_stride != 1 || p.dim.out_stride != 1) && n > 1) {  // Note [FFT panels]
    for (std::size_t i = 0; i < p.batch.size(); ++i) {
      if (p.batch[i].in_stride == 1 && p.batch[i].out_stride == 1 && p.batch[i].n >= 2) {
        return make_panel_pass(provider, options, std::move(pass), i);
      }
    }
  }
  TENFERRO_ASSIGN_OR_RETURN(pass.full, provider.plan(p));
  pass.workspace_bytes = pass.full->workspace_bytes();

  // Blocks along the largest loop (Note [FFT batch parallelism]).
  if (p.batch.empty()) return pass;
  std::size_t split = 0;
  for (std::size_t i = 1; i < p.batch.size(); ++i)
    if (p.batch[i].n > p.batch[split].n) split = i;
  const FftLoop loop = p.batch[split];
  const double wanted = std::floor(pass.flops / std::max(options.grain_flops, 1.0));
  const std::int64_t blocks = std::clamp<std::int64_t>(static_cast<std::int64_t>(wanted), 1,
                                                       std::min<std::int64_t>(options.max_blocks, loop.n));
  if (blocks <= 1) return pass;
  const std::int64_t src_bytes = loop.in_stride * static_cast<std::int64_t>(src.element_bytes);
  const std::int64_t dst_bytes = loop.out_stride * static_cast<std::int64_t>(dst.element_bytes);
  const std::int64_t quantum = alignment_quantum(src_bytes, dst_bytes);
  std::int64_t length = (loop.n + blocks - 1) / blocks;
  length = (length + quantum - 1) / quantum * quantum;
  const std::int64_t nblocks = (loop.n + length - 1) / length;
  if (nblocks <= 1) return pass;
  FftProblem block = p;
  block.batch[split].n = length;
  TENFERRO_ASSIGN_OR_RETURN(pass.block, provider.plan(block));
  const std::int64_t rest = loop.n - (nblocks - 1) * length;
  if (rest != length) {
    FftProblem last = p;
    last.batch[split].n = rest;
    TENFERRO_ASSIGN_OR_RETURN(pass.last, provider.plan(last));
    pass.workspace_bytes = std::max(pass.workspace_bytes, pass.last->workspace_bytes());
  }
  pass.workspace_bytes = std::max(pass.workspace_bytes, pass.block->workspace_bytes());
  pass.nblocks = nblocks;
  pass.src_block_bytes = length * src_bytes;
  pass.dst_block_bytes = length * dst_bytes;
  return pass;
}

bool real_to_complex(FftKind k) noexcept { return k == FftKind::kRfft || k == FftKind::kIhfft; }
bool complex_to_real(FftKind k) noexcept { return k == FftKind::kIrfft || k == FftKind::kHfft; }

}  // namespace

Result<std::shared_ptr<FftPlan>> build_fft_plan(const CpuFftProvider& provider, const FftEngineOptions& options,
                                                const FftOp& op, DType input_dtype, IntArrayRef input_shape,
                                                bool input_row_major) {
  auto plan = std::make_shared<FftPlan>();
  const FftKind kind = op.kind();
  plan->kind = kind;
  plan->input_dtype = input_dtype;
  TENFERRO_ASSIGN_OR_RETURN(plan->output_dtype, op.result_dtype(input_dtype));
  TENFERRO_ASSIGN_OR_RETURN(plan->geometry, op.geometry(input_shape));
  plan->input_shape.assign(input_shape.span());
  const FftGeometry& g = plan->geometry;
  const DType precision = real_dtype(plan->output_dtype);
  const DType complex = *complex_dtype(precision);
  if (numel_unchecked(g.output_shape) == 0) {
    plan->empty = true;
    return plan;
  }

  // The staged array: the input with each transform axis at its staged extent.
  Dims staged(input_shape.span());
  for (std::size_t i = 0; i < g.axes.size(); ++i) staged[static_cast<std::size_t>(g.axes[i])] = g.staged_extents[i];
  StageSpec& stage = plan->stage;
  stage.dst_shape = staged;
  for (std::size_t d = 0; d < staged.size(); ++d) {
    stage.copy_extent.push_back(std::min(input_shape[d], staged[d]));
    if (stage.copy_extent.back() < staged[d]) stage.zero_fill = true;
  }
  stage.scale = g.scale;
  stage.conj = kind == FftKind::kHfft;
  plan->post_conj = kind == FftKind::kIhfft;

  const ArrayDesc out = row_major(g.output_shape, plan->output_dtype);
  const std::int64_t last_axis = g.axes.back();
  const std::int64_t last_n = g.lengths.back();
  // The other axes, innermost first.
  SmallVector<std::size_t, 6> others;
  for (std::size_t i = 0; i + 1 < g.axes.size(); ++i) others.push_back(i);
  std::sort(others.begin(), others.end(), [&](std::size_t a, std::size_t b) { return g.axes[a] > g.axes[b]; });

  if (!real_to_complex(kind) && !complex_to_real(kind)) {
    stage.dst = BufferRole::kOutput;
    stage.dst_dtype = complex;
    const int sign = kind == FftKind::kFft ? -1 : +1;
    SmallVector<std::size_t, 6> order = others;
    order.insert(order.begin(), g.axes.size() - 1);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return g.axes[a] > g.axes[b]; });
    for (std::size_t i : order) {
      TENFERRO_ASSIGN_OR_RETURN(
          FftPass pass, make_pass(provider, options, FftTransform::kC2C, sign, precision, g.lengths[i], g.axes[i], out,
                                  out, BufferRole::kOutput, BufferRole::kOutput));
      plan->passes.push_back(std::move(pass));
    }
    const bool resized = g.input_extents != g.lengths;
    // Note [FFT panels]: a c2c panel pass stays staged.
    if (input_row_major && input_dtype == complex && !resized && !plan->passes[0].panel) {
      const ArrayDesc in = row_major(input_shape, input_dtype);
      const std::size_t first = order[0];
      TENFERRO_ASSIGN_OR_RETURN(plan->direct_first,
                                make_pass(provider, options, FftTransform::kC2C, sign, precision, g.lengths[first],
                                          g.axes[first], in, out, BufferRole::kInput, BufferRole::kOutput));
      plan->has_direct = true;
    }
  } else if (real_to_complex(kind)) {
    stage.dst = BufferRole::kStage;
    stage.dst_dtype = precision;
    const ArrayDesc st = row_major(staged, precision);
    plan->stage_bytes = static_cast<std::size_t>(numel_unchecked(staged)) * dtype_size(precision);
    TENFERRO_ASSIGN_OR_RETURN(FftPass first, make_pass(provider, options, FftTransform::kR2C, -1, precision, last_n,
                                                       last_axis, st, out, BufferRole::kStage, BufferRole::kOutput));
    plan->passes.push_back(std::move(first));
    for (std::size_t i : others) {
      TENFERRO_ASSIGN_OR_RETURN(
          FftPass pass, make_pass(provider, options, FftTransform::kC2C, -1, precision, g.lengths[i], g.axes[i], out,
                                  out, BufferRole::kOutput, BufferRole::kOutput));
      plan->passes.push_back(std::move(pass));
    }
    const bool resized = g.input_extents != g.lengths;
    if (input_row_major && !resized) {
      const ArrayDesc in = row_major(input_shape, input_dtype);
      TENFERRO_ASSIGN_OR_RETURN(plan->direct_first,
                                make_pass(provider, options, FftTransform::kR2C, -1, precision, last_n, last_axis, in,
                                          out, BufferRole::kInput, BufferRole::kOutput));
      plan->has_direct = true;
    }
  } else {
    stage.dst = BufferRole::kStage;
    stage.dst_dtype = complex;
    const ArrayDesc st = row_major(staged, complex);
    plan->stage_bytes = static_cast<std::size_t>(numel_unchecked(staged)) * dtype_size(complex);
    for (std::size_t i : others) {
      TENFERRO_ASSIGN_OR_RETURN(
          FftPass pass, make_pass(provider, options, FftTransform::kC2C, +1, precision, g.lengths[i], g.axes[i], st, st,
                                  BufferRole::kStage, BufferRole::kStage));
      plan->passes.push_back(std::move(pass));
    }
    TENFERRO_ASSIGN_OR_RETURN(FftPass last, make_pass(provider, options, FftTransform::kC2R, +1, precision, last_n,
                                                      last_axis, st, out, BufferRole::kStage, BufferRole::kOutput));
    plan->passes.push_back(std::move(last));
    // A one-axis irfft whose c2r pass runs in panels gathers from the input
    // (Note [FFT panels]): a c2r kernel overwrites only the engine's panel.
    const bool resized = g.input_extents != g.staged_extents;
    if (input_row_major && input_dtype == complex && !resized && kind == FftKind::kIrfft && plan->passes.size() == 1 &&
        plan->passes[0].panel) {
      const ArrayDesc in = row_major(input_shape, input_dtype);
      TENFERRO_ASSIGN_OR_RETURN(plan->direct_first,
                                make_pass(provider, options, FftTransform::kC2R, +1, precision, last_n, last_axis, in,
                                          out, BufferRole::kInput, BufferRole::kOutput));
      plan->has_direct = plan->direct_first.panel;
    }
  }
  for (const FftPass& p : plan->passes) {
    plan->workspace_bytes = std::max(plan->workspace_bytes, p.workspace_bytes);
    plan->flops += p.flops;
  }
  if (plan->has_direct) plan->workspace_bytes = std::max(plan->workspace_bytes, plan->direct_first.workspace_bytes);
  // Note [FFT plan memory]: the distinct kernels' tables.
  SmallVector<const FftKernel*, 8> seen;
  const auto count = [&](const std::shared_ptr<const FftKernel>& k) {
    if (k == nullptr || std::find(seen.begin(), seen.end(), k.get()) != seen.end()) return;
    seen.push_back(k.get());
    plan->table_bytes += k->table_bytes();
  };
  const auto count_pass = [&](const FftPass& p) {
    for (const auto* k : {&p.full, &p.block, &p.last, &p.panel_kernel, &p.panel_last}) count(*k);
  };
  for (const FftPass& p : plan->passes) count_pass(p);
  if (plan->has_direct) count_pass(plan->direct_first);
  return plan;
}

Result<std::shared_ptr<const FftPlan>> EnginePlanCache::get_or_build(
    const FftOp& op, DType dtype, IntArrayRef shape, bool row_major,
    FunctionRef<Result<std::shared_ptr<FftPlan>>()> build) {
  std::uint64_t h =
      op.payload_hash() ^ (static_cast<std::uint64_t>(dtype) * 0x9e3779b97f4a7c15ULL) ^ (row_major ? 1 : 0);
  for (std::int64_t d : shape) h = (h ^ static_cast<std::uint64_t>(d)) * 0x100000001b3ULL;
  const auto matches = [&](const Entry& e) {
    return e.hash == h && e.dtype == dtype && e.row_major == row_major && IntArrayRef(e.shape) == shape &&
           e.attributes == op.attributes();
  };
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (matches(*it)) {
        lru_.splice(lru_.begin(), lru_, it);
        ++hits_;
        return lru_.front().plan;
      }
    }
    ++misses_;
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<FftPlan> built, build());
  std::list<Entry> evicted;  // released outside the lock (kernel destructors take the planner lock)
  {
    std::lock_guard<std::mutex> guard(mutex_);
    lru_.push_front(Entry{op.attributes(), dtype, Dims(shape.span()), row_major, h, built});
    bytes_ += built->table_bytes;
    // Note [FFT plan memory]: both bounds, the newest plan kept.
    while (lru_.size() > capacity_ || (bytes_ > max_bytes_ && lru_.size() > 1)) {
      bytes_ -= lru_.back().plan->table_bytes;
      evicted.splice(evicted.begin(), lru_, std::prev(lru_.end()));
      ++evictions_;
    }
  }
  return std::shared_ptr<const FftPlan>(std::move(built));
}

std::uint64_t EnginePlanCache::hits() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return hits_;
}

std::uint64_t EnginePlanCache::misses() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return misses_;
}

std::uint64_t EnginePlanCache::evictions() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return evictions_;
}

std::size_t EnginePlanCache::size() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return lru_.size();
}

std::size_t EnginePlanCache::bytes() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return bytes_;
}

void EnginePlanCache::clear() {
  std::list<Entry> dropped;  // released outside the lock (kernel destructors take the planner lock)
  {
    std::lock_guard<std::mutex> guard(mutex_);
    dropped.swap(lru_);
    bytes_ = 0;
  }
}

namespace {

template <class R>
std::complex<R> load_complex(const void* p, bool complex) {
  if (complex) return *static_cast<const std::complex<R>*>(p);
  return {*static_cast<const R*>(p), R(0)};
}

// One row of the copy: `count` elements from src (stride in elements) to dst.
template <class R>
void copy_row(const std::byte* src, std::int64_t src_stride, bool src_complex, void* dst, bool dst_complex,
              std::int64_t count, R scale, bool conj) {
  if (dst_complex) {
    auto* d = static_cast<std::complex<R>*>(dst);
    const std::size_t step = static_cast<std::size_t>(src_stride) * (src_complex ? sizeof(std::complex<R>) : sizeof(R));
    for (std::int64_t j = 0; j < count; ++j) {
      std::complex<R> v = load_complex<R>(src + static_cast<std::size_t>(j) * step, src_complex);
      if (conj) v = std::conj(v);
      d[j] = v * scale;
    }
  } else {
    auto* d = static_cast<R*>(dst);
    const R* s = reinterpret_cast<const R*>(src);
    for (std::int64_t j = 0; j < count; ++j) d[j] = s[j * src_stride] * scale;
  }
}

template <class R>
void stage_typed(const TensorView& in, const StageSpec& spec, void* dst, const cpu::ParallelContext& parallel) {
  const std::size_t rank = spec.dst_shape.size();
  const bool src_complex = is_complex(in.dtype);
  const bool dst_complex = is_complex(spec.dst_dtype);
  const std::size_t src_bytes = dtype_size(in.dtype), dst_bytes = dtype_size(spec.dst_dtype);
  const Dims dst_strides = row_major_strides(spec.dst_shape);
  if (spec.zero_fill) {
    std::memset(dst, 0, static_cast<std::size_t>(numel_unchecked(spec.dst_shape)) * dst_bytes);
  }
  const std::int64_t inner = spec.copy_extent[rank - 1];
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= spec.copy_extent[d];
  if (rows == 0 || inner == 0) return;
  const R scale = static_cast<R>(spec.scale);
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(inner, 1));
  parallel.parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      // Row index -> offsets (outer axes row-major over copy_extent).
      std::int64_t rest = r, src_off = 0, dst_off = 0;
      for (std::size_t d = rank - 1; d-- > 0;) {
        const std::int64_t i = rest % spec.copy_extent[d];
        rest /= spec.copy_extent[d];
        src_off += i * in.strides[d];
        dst_off += i * dst_strides[d];
      }
      copy_row<R>(static_cast<const std::byte*>(in.data) + src_off * static_cast<std::int64_t>(src_bytes),
                  in.strides[rank - 1], src_complex,
                  static_cast<std::byte*>(dst) + dst_off * static_cast<std::int64_t>(dst_bytes), dst_complex, inner,
                  scale, spec.conj);
    }
  });
}

}  // namespace

void stage_input(const TensorView& in, const StageSpec& spec, void* dst, const cpu::ParallelContext& parallel) {
  if (real_dtype(spec.dst_dtype) == DType::kFloat32) {
    stage_typed<float>(in, spec, dst, parallel);
  } else {
    stage_typed<double>(in, spec, dst, parallel);
  }
}

void scale_in_place(void* data, DType dtype, std::int64_t count, double scale, bool conj,
                    const cpu::ParallelContext& parallel) {
  const auto run = [&]<class R>(R) {
    const R s = static_cast<R>(scale);
    parallel.parallel_for(0, count, 32768, [&](std::int64_t begin, std::int64_t end) {
      if (is_complex(dtype)) {
        auto* d = static_cast<std::complex<R>*>(data);
        for (std::int64_t i = begin; i < end; ++i) d[i] = (conj ? std::conj(d[i]) : d[i]) * s;
      } else {
        auto* d = static_cast<R*>(data);
        for (std::int64_t i = begin; i < end; ++i) d[i] *= s;
      }
    });
  };
  if (real_dtype(dtype) == DType::kFloat32) {
    run(0.0f);
  } else {
    run(0.0);
  }
}

namespace {

// Note [FFT panels]: gather `w` columns of `src` into rows of the panel,
// transform, scatter the panel's rows into the columns of `dst`.
template <class In, class Out>
Status run_panels(const FftPass& pass, const In* src, Out* dst, const cpu::ParallelContext& parallel, bool split,
                  cpu::WorkspacePool& pool, std::uint64_t* calls) {
  const std::int64_t width = pass.panel_width, n_in = pass.src_length, n_out = pass.dst_length;
  const std::int64_t in_pitch = pass.src_pitch, out_pitch = pass.dst_pitch;
  const std::int64_t src_stride = pass.src_stride, dst_stride = pass.dst_stride;
  const bool in_place = pass.problem.transform == FftTransform::kC2C;  // one panel, transformed in place
  std::atomic<bool> failed{false};
  std::mutex mutex;
  Status first;
  const auto run_items = [&](std::int64_t begin, std::int64_t end) {
    if (failed.load(std::memory_order_relaxed)) return;
    Result<cpu::WorkspacePool::Lease> lease = pool.acquire(pass.panel_bytes + pass.workspace_bytes);
    if (!lease.ok()) {
      std::lock_guard<std::mutex> guard(mutex);
      if (!failed.exchange(true)) first = lease.status();
      return;
    }
    In* buf_in = reinterpret_cast<In*>(lease->bytes().data());
    Out* buf_out = in_place ? reinterpret_cast<Out*>(buf_in)
                            : reinterpret_cast<Out*>(lease->bytes().data() + pass.panel_src_bytes);
    const std::span<std::byte> ws = lease->bytes().subspan(pass.panel_bytes);
    for (std::int64_t item = begin; item < end; ++item) {
      std::int64_t rest = item / pass.panel_blocks;
      const std::int64_t block = item % pass.panel_blocks;
      std::int64_t src_base = block * width, dst_base = block * width;
      for (std::size_t l = pass.panel_outer.size(); l-- > 0;) {
        const std::int64_t i = rest % pass.panel_outer[l].n;
        src_base += i * pass.panel_outer[l].in_stride;
        dst_base += i * pass.panel_outer[l].out_stride;
        rest /= pass.panel_outer[l].n;
      }
      const std::int64_t w = std::min(width, pass.panel_columns - block * width);
      const In* src_col = src + src_base;
      for (std::int64_t r = 0; r < n_in; ++r) {
        const In* row = src_col + r * src_stride;
        for (std::int64_t k = 0; k < w; ++k) buf_in[k * in_pitch + r] = row[k];
      }
      const FftKernel& kernel = w == width ? *pass.panel_kernel : *pass.panel_last;
      Status s = kernel.execute(buf_in, buf_out, ws);
      if (!s.ok()) {
        std::lock_guard<std::mutex> guard(mutex);
        if (!failed.exchange(true)) first = std::move(s);
        return;
      }
      Out* dst_col = dst + dst_base;
      for (std::int64_t r = 0; r < n_out; ++r) {
        Out* row = dst_col + r * dst_stride;
        for (std::int64_t k = 0; k < w; ++k) row[k] = buf_out[k * out_pitch + r];
      }
    }
  };
  if (split && pass.panel_items > pass.panel_grain) {
    parallel.parallel_for(0, pass.panel_items, pass.panel_grain, run_items);
  } else {
    run_items(0, pass.panel_items);
  }
  *calls += static_cast<std::uint64_t>(pass.panel_items);
  return failed.load() ? first : ok_status();
}

template <class R>
Status run_panel_pass_typed(const FftPass& pass, const std::byte* src, std::byte* dst,
                            const cpu::ParallelContext& parallel, bool split, cpu::WorkspacePool& pool,
                            std::uint64_t* calls) {
  using C = std::complex<R>;
  switch (pass.problem.transform) {
    case FftTransform::kC2C:
      return run_panels(pass, reinterpret_cast<const C*>(src), reinterpret_cast<C*>(dst), parallel, split, pool, calls);
    case FftTransform::kR2C:
      return run_panels(pass, reinterpret_cast<const R*>(src), reinterpret_cast<C*>(dst), parallel, split, pool, calls);
    case FftTransform::kC2R:
      return run_panels(pass, reinterpret_cast<const C*>(src), reinterpret_cast<R*>(dst), parallel, split, pool, calls);
  }
  return ok_status();
}

}  // namespace

Status run_panel_pass(const FftPass& pass, const std::byte* src, std::byte* dst, const cpu::ParallelContext& parallel,
                      bool split, cpu::WorkspacePool& pool, std::uint64_t* calls) {
  if (pass.problem.precision == DType::kFloat32) {
    return run_panel_pass_typed<float>(pass, src, dst, parallel, split, pool, calls);
  }
  return run_panel_pass_typed<double>(pass, src, dst, parallel, split, pool, calls);
}

}  // namespace tenferro::fft::internal
