// Tensor construction, metadata-only views and layout queries.
#include "tenferro/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <type_traits>

#include <fmt/format.h>

namespace tenferro {
namespace {

// Bytes needed by `numel` elements of `dtype`, with overflow checking.
Result<std::size_t> checked_nbytes(std::int64_t numel, DType dtype) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(numel), dtype_size(dtype), &bytes)) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "{} elements of {} do not fit in memory", numel,
                      dtype);
  }
  return bytes;
}

// View strides for reshaping (old_shape, old_strides) to new_shape, or
// nullopt when no strides express it. Walks both shapes from the last axis,
// grouping old axes into runs that are contiguous among themselves; each run
// must be covered exactly by a run of new axes.
std::optional<Dims> view_strides(IntArrayRef old_shape, IntArrayRef old_strides, IntArrayRef new_shape) {
  Dims new_strides(new_shape.size());
  if (numel_unchecked(old_shape) == 0 || old_shape.empty()) {
    // No element or a single one: any strides address it; use row-major.
    return row_major_strides(new_shape);
  }
  auto view_axis = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t base_stride = old_strides.back();
  std::int64_t run_numel = 1;
  std::int64_t view_numel = 1;
  for (auto axis = static_cast<std::int64_t>(old_shape.size()) - 1; axis >= 0; --axis) {
    const auto a = static_cast<std::size_t>(axis);
    run_numel *= old_shape[a];
    const bool run_ends = axis == 0 || (old_shape[a - 1] != 1 && old_strides[a - 1] != run_numel * base_stride);
    if (!run_ends) continue;
    while (view_axis >= 0 && (view_numel < run_numel || new_shape[static_cast<std::size_t>(view_axis)] == 1)) {
      new_strides[static_cast<std::size_t>(view_axis)] = view_numel * base_stride;
      view_numel *= new_shape[static_cast<std::size_t>(view_axis)];
      --view_axis;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (axis > 0) {
      base_stride = old_strides[a - 1];
      run_numel = 1;
      view_numel = 1;
    }
  }
  if (view_axis != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

namespace internal {

Status dtype_mismatch(DType expected, DType found) {
  return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "expected dtype {}, found {}", expected, found);
}

namespace {

// Calls run(strided element, contiguous element) for every element of
// `view` in row-major order (an odometer over all axes but the last, the
// last axis a strided run); the contiguous side is char* or const char*.
template <class Byte, class Run>
void for_each_element(const TensorView& view, Byte* contiguous, Run run) noexcept {
  const std::int64_t n = view.numel();
  if (n == 0) return;
  const std::size_t item = dtype_size(view.dtype);
  const std::size_t rank = view.shape.size();
  auto* base = static_cast<char*>(view.data);
  if (rank == 0) {
    run(base, contiguous, item);
    return;
  }
  Dims index(rank, 0);
  const std::int64_t inner = view.shape[rank - 1];
  const std::int64_t inner_stride = view.strides[rank - 1] * static_cast<std::int64_t>(item);
  for (std::int64_t done = 0; done < n; done += inner) {
    std::int64_t offset = 0;
    for (std::size_t a = 0; a + 1 < rank; ++a) offset += index[a] * view.strides[a];
    char* p = base + offset * static_cast<std::int64_t>(item);
    for (std::int64_t i = 0; i < inner; ++i, contiguous += item) run(p + i * inner_stride, contiguous, item);
    for (std::size_t a = rank - 1; a-- > 0;) {
      if (++index[a] < view.shape[a]) break;
      index[a] = 0;
    }
  }
}

}  // namespace

void copy_to_contiguous(const TensorView& src, void* dst) noexcept {
  for_each_element(src, static_cast<char*>(dst), [](const char* strided, char* contiguous, std::size_t item) {
    std::memcpy(contiguous, strided, item);
  });
}

void copy_from_contiguous(const void* src, const TensorView& dst) noexcept {
  for_each_element(dst, static_cast<const char*>(src), [](char* strided, const char* contiguous, std::size_t item) {
    std::memcpy(strided, contiguous, item);
  });
}

}  // namespace internal

Result<Tensor> Tensor::empty(IntArrayRef shape, DType dtype, MemoryOrder order,
                             std::shared_ptr<HostAllocator> allocator) {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t n, checked_numel(shape));
  TENFERRO_ASSIGN_OR_RETURN(std::size_t bytes, checked_nbytes(n, dtype));
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage, Storage::allocate_host(bytes, std::move(allocator)));
  Dims strides = order == MemoryOrder::kRowMajor ? row_major_strides(shape) : col_major_strides(shape);
  return Tensor(std::move(storage), dtype, Dims(shape.span()), std::move(strides), 0);
}

Result<Tensor> Tensor::zeros(IntArrayRef shape, DType dtype, MemoryOrder order) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, empty(shape, dtype, order));
  std::memset(t.data(), 0, t.nbytes());
  return t;
}

Result<Tensor> Tensor::full(IntArrayRef shape, Scalar value, DType dtype, MemoryOrder order) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, empty(shape, dtype, order));
  visit_dtype(dtype, [&]<class T>(T) {
    const T v = value.value<T>();
    std::fill_n(static_cast<T*>(t.data()), t.numel(), v);  // every element: the order does not matter
  });
  return t;
}

Result<Tensor> Tensor::ones(IntArrayRef shape, DType dtype, MemoryOrder order) {
  return full(shape, Scalar::of(1.0), dtype, order);
}

Result<Tensor> Tensor::eye(std::int64_t rows, DType dtype, std::int64_t cols) {
  if (cols < 0) cols = rows;
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, zeros({rows, cols}, dtype));
  visit_dtype(dtype, [&]<class T>(T) {
    T* p = static_cast<T*>(t.data());
    const T one = Scalar::of(1.0).value<T>();
    for (std::int64_t i = 0; i < std::min(rows, cols); ++i) p[i * cols + i] = one;
  });
  return t;
}

Result<Tensor> Tensor::arange(double start, double stop, double step, DType dtype) {
  if (!(step != 0.0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(stop))) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "arange: expected finite start, stop and a non-zero finite step, found {}, {}, {}", start, stop,
                      step);
  }
  const double count = std::max(0.0, std::ceil((stop - start) / step));
  if (count > static_cast<double>(std::numeric_limits<std::int64_t>::max() / 16)) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kNone, "arange: {} elements is too many", count);
  }
  const auto n = static_cast<std::int64_t>(count);
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, empty({n}, dtype));
  visit_dtype(dtype, [&]<class T>(T) {
    T* p = static_cast<T*>(t.data());
    for (std::int64_t i = 0; i < n; ++i) p[i] = Scalar::of(start + static_cast<double>(i) * step).value<T>();
  });
  return t;
}

Result<Tensor> Tensor::arange(std::int64_t n, DType dtype) {
  return arange(0.0, static_cast<double>(std::max<std::int64_t>(n, 0)), 1.0, dtype);
}

Result<Tensor> Tensor::from_storage(StorageRef storage, DType dtype, IntArrayRef shape, IntArrayRef strides,
                                    std::int64_t offset) {
  if (!storage) return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "from_storage: null storage");
  if (shape.size() != strides.size()) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "from_storage: shape {} has rank {} but strides {} rank {}", shape_to_string(shape), shape.size(),
                      shape_to_string(strides), strides.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t n, checked_numel(shape));
  if (offset < 0)
    return make_error(ErrorCode::kOutOfRange, ErrorStage::kNone, "from_storage: negative offset {}", offset);
  for (std::int64_t s : strides) {
    if (s < 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "from_storage: strides {} must be non-negative",
                        shape_to_string(strides));
    }
  }
  const auto capacity = static_cast<std::int64_t>(storage->nbytes() / dtype_size(dtype));
  std::int64_t last = offset;
  bool overflow = false;
  if (n > 0) {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      std::int64_t span = 0;
      overflow = overflow || __builtin_mul_overflow(shape[i] - 1, strides[i], &span) ||
                 __builtin_add_overflow(last, span, &last);
    }
  }
  if (overflow || (n > 0 && last >= capacity) || offset > capacity) {
    return make_error(ErrorCode::kOutOfRange, ErrorStage::kNone,
                      "from_storage: shape {} strides {} offset {} address elements beyond the {} {} elements of the "
                      "storage",
                      shape_to_string(shape), shape_to_string(strides), offset, capacity, dtype);
  }
  return Tensor(std::move(storage), dtype, Dims(shape.span()), Dims(strides.span()), offset);
}

Result<Tensor> Tensor::with_layout(Dims shape, Dims strides, std::int64_t offset) const {
  if (!defined()) return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone, "view of an undefined tensor");
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset);
}

Result<Tensor> Tensor::permute(IntArrayRef perm) const {
  if (static_cast<std::int64_t>(perm.size()) != rank()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "permute: expected {} axes for shape {}, found {}", rank(), shape_to_string(shape_),
                      shape_to_string(perm));
  }
  Dims shape(perm.size());
  Dims strides(perm.size());
  SmallVector<bool, 8> seen(perm.size(), false);
  for (std::size_t i = 0; i < perm.size(); ++i) {
    auto axis = normalize_axis(perm[i], rank());
    if (!axis.ok()) return axis.status().with_context(fmt::format("permute {}", shape_to_string(perm)));
    const auto a = static_cast<std::size_t>(*axis);
    if (seen[a]) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "permute: {} repeats axis {}",
                        shape_to_string(perm), a);
    }
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return with_layout(std::move(shape), std::move(strides), offset_);
}

Result<Tensor> Tensor::transpose(std::int64_t axis0, std::int64_t axis1) const {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t a, normalize_axis(axis0, rank()));
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t b, normalize_axis(axis1, rank()));
  Dims shape = shape_;
  Dims strides = strides_;
  std::swap(shape[static_cast<std::size_t>(a)], shape[static_cast<std::size_t>(b)]);
  std::swap(strides[static_cast<std::size_t>(a)], strides[static_cast<std::size_t>(b)]);
  return with_layout(std::move(shape), std::move(strides), offset_);
}

Result<Tensor> Tensor::reshape(IntArrayRef shape) const {
  Dims target(shape.span());
  std::int64_t inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferred >= 0) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "reshape: {} has more than one -1",
                          shape_to_string(shape));
      }
      inferred = static_cast<std::int64_t>(i);
    } else if (target[i] < 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "reshape: negative extent in {}",
                        shape_to_string(shape));
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "reshape: element count of {} overflows",
                        shape_to_string(shape));
    }
  }
  const std::int64_t n = numel();
  if (inferred >= 0) {
    if (known == 0 || n % known != 0) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "reshape: cannot infer -1 in {} for {} elements",
                        shape_to_string(shape), n);
    }
    target[static_cast<std::size_t>(inferred)] = n / known;
  } else if (known != n) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "reshape: shape {} holds {} elements, tensor has {} ({})", shape_to_string(shape), known, n,
                      shape_to_string(shape_));
  }
  std::optional<Dims> strides = view_strides(shape_, strides_, target);
  if (!strides) {
    return make_error(ErrorCode::kLayoutRequiresCopy, ErrorStage::kNone,
                      "reshape: shape {} with strides {} cannot be viewed as {} without a copy; copy it first "
                      "(EagerContext::contiguous or copy; EagerContext::reshape copies when it must)",
                      shape_to_string(shape_), shape_to_string(strides_), shape_to_string(target));
  }
  return with_layout(std::move(target), std::move(*strides), offset_);
}

Result<Tensor> Tensor::broadcast_to(IntArrayRef shape) const {
  if (shape.size() < shape_.size()) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "broadcast_to: cannot broadcast {} to lower rank {}", shape_to_string(shape_),
                      shape_to_string(shape));
  }
  TENFERRO_TRY(checked_numel(shape));
  const std::size_t lead = shape.size() - shape_.size();
  Dims strides(shape.size(), 0);
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    const std::int64_t have = shape_[i];
    const std::int64_t want = shape[lead + i];
    if (have == want) {
      strides[lead + i] = strides_[i];
    } else if (have != 1) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "broadcast_to: cannot broadcast {} to {} (axis {} has extent {}, expected 1 or {})",
                        shape_to_string(shape_), shape_to_string(shape), i, have, want);
    }
  }
  return with_layout(Dims(shape.span()), std::move(strides), offset_);
}

Result<Tensor> Tensor::slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t a, normalize_axis(axis, rank()));
  if (step < 1) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "slice: step must be >= 1 (views have non-negative strides), found {}", step);
  }
  const auto ax = static_cast<std::size_t>(a);
  const std::int64_t extent = shape_[ax];
  auto clamp = [extent](std::int64_t v) {
    if (v < 0) v += extent;
    return std::clamp<std::int64_t>(v, 0, extent);
  };
  const std::int64_t begin = clamp(start);
  const std::int64_t end = std::max(begin, clamp(stop));
  const std::int64_t count = (end - begin + step - 1) / step;
  Dims shape = shape_;
  Dims strides = strides_;
  shape[ax] = count;
  strides[ax] = strides_[ax] * step;
  const std::int64_t offset = count > 0 ? offset_ + begin * strides_[ax] : offset_;
  return with_layout(std::move(shape), std::move(strides), offset);
}

Result<Tensor> Tensor::diagonal(std::int64_t axis0, std::int64_t axis1) const {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t a, normalize_axis(axis0, rank()));
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t b, normalize_axis(axis1, rank()));
  if (a == b) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "diagonal: axes must differ, both are {}", a);
  }
  Dims shape;
  Dims strides;
  for (std::int64_t i = 0; i < rank(); ++i) {
    if (i == a || i == b) continue;
    shape.push_back(shape_[static_cast<std::size_t>(i)]);
    strides.push_back(strides_[static_cast<std::size_t>(i)]);
  }
  const auto ua = static_cast<std::size_t>(a);
  const auto ub = static_cast<std::size_t>(b);
  shape.push_back(std::min(shape_[ua], shape_[ub]));
  strides.push_back(strides_[ua] + strides_[ub]);
  return with_layout(std::move(shape), std::move(strides), offset_);
}

Result<Tensor> Tensor::squeeze(std::int64_t axis) const {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t a, normalize_axis(axis, rank()));
  const auto ax = static_cast<std::size_t>(a);
  if (shape_[ax] != 1) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "squeeze: axis {} of {} has extent {}, expected 1",
                      a, shape_to_string(shape_), shape_[ax]);
  }
  Dims shape = shape_;
  Dims strides = strides_;
  shape.erase(shape.begin() + ax);
  strides.erase(strides.begin() + ax);
  return with_layout(std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::squeeze() const {
  Dims shape;
  Dims strides;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == 1) continue;
    shape.push_back(shape_[i]);
    strides.push_back(strides_[i]);
  }
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Result<Tensor> Tensor::unsqueeze(std::int64_t axis) const {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t a, normalize_axis(axis, rank() + 1));
  const auto ax = static_cast<std::size_t>(a);
  const std::int64_t stride = ax < shape_.size() ? strides_[ax] * std::max<std::int64_t>(shape_[ax], 1) : 1;
  Dims shape = shape_;
  Dims strides = strides_;
  shape.insert(shape.begin() + ax, 1);
  strides.insert(strides.begin() + ax, stride);
  return with_layout(std::move(shape), std::move(strides), offset_);
}

bool Tensor::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

bool Tensor::is_col_major_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const noexcept {
  if (numel() == 0) return true;
  SmallVector<std::size_t, 8> axes;
  for (std::size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1) axes.push_back(i);
  std::sort(axes.begin(), axes.end(), [this](std::size_t x, std::size_t y) {
    return strides_[x] != strides_[y] ? strides_[x] < strides_[y] : shape_[x] < shape_[y];
  });
  std::int64_t expected = 1;
  for (std::size_t axis : axes) {
    if (strides_[axis] != expected) return false;
    expected *= shape_[axis];
  }
  return true;
}

Status Tensor::copy_elements_to(void* dst) const {
  if (!defined()) return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone, "read of an undefined tensor");
  if (!is_host()) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                      "host read of a tensor in storage domain {}; transfer it to the host explicitly first",
                      storage_->storage_domain());
  }
  TENFERRO_TRY(storage_->wait_ready());
  internal::copy_to_contiguous(view(), dst);
  return ok_status();
}

namespace {

// A real as numpy prints it: NaN is "nan" whatever its sign bit (fmt
// prints "-nan").
template <class R>
void append_real(std::string& out, R v) {
  if constexpr (std::is_floating_point_v<R>) {
    if (std::isnan(v)) {
      out += "nan";
      return;
    }
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
}

template <class T>
void append_value(std::string& out, const std::byte* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    append_real(out, v.real());
    out += std::signbit(v.imag()) && !std::isnan(v.imag()) ? "-" : "+";
    append_real(out, std::abs(v.imag()));
    out += 'j';
  } else {
    append_real(out, v);
  }
}

// numpy's layout: one line per innermost row, a blank line more per axis
// above, the rows indented to their bracket.
struct ValueFormatter {
  const std::byte* data;
  std::size_t item;
  void (*append)(std::string&, const std::byte*);
  IntArrayRef shape;
  bool summarize;
  std::int64_t edge;
  std::string out;

  void axis(std::size_t d, std::int64_t offset) {
    if (d == shape.size()) {
      append(out, data + static_cast<std::size_t>(offset) * item);
      return;
    }
    std::int64_t inner = 1;
    for (std::size_t a = d + 1; a < shape.size(); ++a) inner *= shape[a];
    const std::int64_t n = shape[d];
    const std::string sep = "," + std::string(shape.size() - d - 1, '\n') +
                            (d + 1 < shape.size() ? std::string(d + 1, ' ') : std::string(" "));
    out += '[';
    for (std::int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * edge && i == edge) {
        out += "..." + sep;
        i = n - edge;
      }
      axis(d + 1, offset + i * inner);
      if (i + 1 < n) out += sep;
    }
    out += ']';
  }
};

}  // namespace

Result<std::string> Tensor::format_values(std::int64_t threshold, std::int64_t edge_items) const {
  const std::size_t item = dtype_size(dtype_);
  std::vector<std::byte> bytes(static_cast<std::size_t>(numel()) * item);
  TENFERRO_TRY(copy_elements_to(bytes.data()));
  ValueFormatter f{
      bytes.data(), item, nullptr, IntArrayRef(shape_), numel() > threshold, std::max<std::int64_t>(edge_items, 1), {}};
  switch (dtype_) {
#define TENFERRO_DTYPE(name, str, cpp, kind) \
  case DType::k##name:                       \
    f.append = &append_value<cpp>;           \
    break;
#include "tenferro/tensor/dtype.def"
  }
  f.axis(0, 0);
  return std::move(f.out);
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  return fmt::format("Tensor({}, {}, strides {}, offset {})", dtype_, shape_to_string(shape_),
                     shape_to_string(strides_), offset_);
}

}  // namespace tenferro
