// Tensor (owning) and TensorView (borrowed): shared storage + element offset
// + shape + element strides + dtype.
//
// Note [Views never copy]
// permute, transpose, reshape, broadcast_to, slice, diagonal, squeeze and
// unsqueeze only rewrite metadata. They never copy data and never call a
// provider. When the requested view cannot be expressed with strides (e.g.
// reshaping a transposed tensor), reshape returns kLayoutRequiresCopy instead
// of copying behind the caller's back. Strides are non-negative; a stride of
// 0 broadcasts. Every failed call leaves its receiver untouched.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/dtype.h"
#include "tenferro/tensor/scalar.h"
#include "tenferro/tensor/shape.h"
#include "tenferro/tensor/storage.h"

namespace tenferro {

/// Memory order for freshly allocated tensors.
enum class MemoryOrder : std::uint8_t {
  kRowMajor,  ///< C order, last axis fastest (numpy's default)
  kColMajor,  ///< Fortran order, first axis fastest
};

/// A borrowed view of tensor metadata and data for provider requests. It is
/// valid only while the Tensor it came from is alive and unchanged. Cheap to
/// copy; thread-compatible.
struct TensorView {
  void* data = nullptr;  ///< address of the element at index (0, ..., 0)
  std::span<const std::int64_t> shape;
  std::span<const std::int64_t> strides;
  DType dtype = DType::kFloat64;
  const Storage* storage = nullptr;

  std::int64_t rank() const noexcept { return static_cast<std::int64_t>(shape.size()); }
  std::int64_t numel() const noexcept { return numel_unchecked(shape); }
  template <class T>
  T* data_as() const noexcept {
    return static_cast<T*>(data);
  }
};

/// An n-dimensional array over shared Storage. Copies share storage (like a
/// numpy view); use a layout provider to copy data. A default-constructed
/// Tensor is undefined (defined() == false). Thread-compatible: concurrent
/// const access is safe.
class Tensor {
 public:
  Tensor() = default;

  /// Uninitialised tensor of `shape`, 64-byte aligned, in `order`. With an
  /// `allocator` the memory comes from (and returns to) that pool.
  static Result<Tensor> empty(IntArrayRef shape, DType dtype, MemoryOrder order = MemoryOrder::kRowMajor,
                              std::shared_ptr<HostAllocator> allocator = nullptr);
  /// Zero-filled tensor (all dtypes have all-zero-bits zero).
  static Result<Tensor> zeros(IntArrayRef shape, DType dtype, MemoryOrder order = MemoryOrder::kRowMajor);
  /// A tensor of `shape` with every element `value` converted to `dtype`
  /// (as Scalar::value<T>() converts: complex to real drops the imaginary
  /// part, real to integer truncates).
  static Result<Tensor> full(IntArrayRef shape, Scalar value, DType dtype, MemoryOrder order = MemoryOrder::kRowMajor);
  /// full(shape, 1, dtype).
  static Result<Tensor> ones(IntArrayRef shape, DType dtype, MemoryOrder order = MemoryOrder::kRowMajor);
  /// The rows x cols identity (cols < 0: square), row-major, as numpy.eye.
  static Result<Tensor> eye(std::int64_t rows, DType dtype, std::int64_t cols = -1);
  /// The values start, start + step, ... below `stop` (above it for a
  /// negative step), as numpy.arange: ceil((stop - start) / step) of them.
  /// kInvalidArgument for a zero or non-finite step.
  static Result<Tensor> arange(double start, double stop, double step, DType dtype);
  /// arange(0, n, 1, dtype).
  static Result<Tensor> arange(std::int64_t n, DType dtype);
  /// A tensor over existing storage. Validates that every addressed element
  /// lies inside the storage and that strides are non-negative.
  static Result<Tensor> from_storage(StorageRef storage, DType dtype, IntArrayRef shape, IntArrayRef strides,
                                     std::int64_t offset = 0);
  /// Row-major tensor holding a copy of `values`.
  template <class T>
  static Result<Tensor> from_values(std::span<const T> values, IntArrayRef shape);
  template <class T>
  static Result<Tensor> from_values(std::initializer_list<T> values, IntArrayRef shape) {
    return from_values(std::span<const T>(values.begin(), values.size()), shape);
  }
  /// A rank-0 tensor holding `value`.
  template <class T>
  static Result<Tensor> scalar(T value) {
    return from_values(std::span<const T>(&value, 1), {});
  }

  bool defined() const noexcept { return static_cast<bool>(storage_); }
  DType dtype() const noexcept { return dtype_; }
  std::int64_t rank() const noexcept { return static_cast<std::int64_t>(shape_.size()); }
  std::span<const std::int64_t> shape() const noexcept { return shape_; }
  std::span<const std::int64_t> strides() const noexcept { return strides_; }
  /// Extent of `axis` (precondition: 0 <= axis < rank()).
  std::int64_t size(std::int64_t axis) const noexcept { return shape_[static_cast<std::size_t>(axis)]; }
  std::int64_t numel() const noexcept { return numel_unchecked(shape_); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  /// Element offset of index (0, ..., 0) into the storage.
  std::int64_t offset() const noexcept { return offset_; }
  const StorageRef& storage() const noexcept { return storage_; }
  bool is_host() const noexcept { return defined() && storage_->is_host(); }

  /// Address of element (0, ..., 0).
  void* data() const noexcept {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
  }
  /// Typed address of element (0, ..., 0); kDTypeMismatch when T is not dtype().
  template <class T>
  Result<T*> typed_data() const;

  /// Borrowed view for provider requests (valid while *this lives unchanged).
  TensorView view() const noexcept {
    return TensorView{defined() ? data() : nullptr, shape_, strides_, dtype_, storage_.get()};
  }

  // --- metadata-only views (Note [Views never copy]) ---
  /// Axis i of the result is axis perm[i] of *this.
  Result<Tensor> permute(IntArrayRef perm) const;
  Result<Tensor> transpose(std::int64_t axis0, std::int64_t axis1) const;
  /// A view with `shape` (one extent may be -1) and the same elements in
  /// row-major order; kLayoutRequiresCopy when strides cannot express it.
  Result<Tensor> reshape(IntArrayRef shape) const;
  /// numpy broadcasting to `shape`; new and size-1 axes get stride 0.
  Result<Tensor> broadcast_to(IntArrayRef shape) const;
  /// Elements start, start+step, ... below stop along `axis`. Negative start
  /// and stop count from the end; both are clamped to [0, size]. step >= 1.
  Result<Tensor> slice(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const;
  /// The diagonal of axes (axis0, axis1) (sizes min of both), which are
  /// removed; the diagonal becomes the last axis (numpy.diagonal).
  Result<Tensor> diagonal(std::int64_t axis0 = 0, std::int64_t axis1 = 1) const;
  /// Removes `axis`, which must have extent 1.
  Result<Tensor> squeeze(std::int64_t axis) const;
  /// Removes every extent-1 axis.
  Tensor squeeze() const;
  /// Inserts an extent-1 axis before position `axis` (in [-rank-1, rank]).
  Result<Tensor> unsqueeze(std::int64_t axis) const;

  // --- layout queries ---
  /// Row-major dense: element i of the flattened C-order index is at data()+i.
  bool is_contiguous() const noexcept;
  /// Column-major dense.
  bool is_col_major_contiguous() const noexcept;
  /// Every element has its own address and they fill one dense block, in
  /// some axis order (a permutation of a contiguous tensor).
  bool is_non_overlapping_and_dense() const noexcept;

  /// The elements in row-major order (a copy; for tests and small results).
  template <class T>
  Result<std::vector<T>> to_vector() const;

  /// "Tensor(float64, [2, 3], strides [3, 1])".
  std::string to_string() const;
  /// The values as numpy prints them, "[[1, 2, 3],\n [4, 5, 6]]": nested
  /// brackets in row-major order, and beyond `threshold` elements only the
  /// first and last `edge_items` of each axis around "...". A host read:
  /// errors as to_vector.
  Result<std::string> format_values(std::int64_t threshold = 1000, std::int64_t edge_items = 3) const;

 private:
  friend struct internal::TensorBorrow;
  Tensor(StorageRef storage, DType dtype, Dims shape, Dims strides, std::int64_t offset) noexcept
      : storage_(std::move(storage)),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        offset_(offset),
        dtype_(dtype) {}
  Result<Tensor> with_layout(Dims shape, Dims strides, std::int64_t offset) const;
  Status copy_elements_to(void* dst) const;

  StorageRef storage_;
  Dims shape_;
  Dims strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::kFloat64;
};

namespace internal {
/// For the runtime's run workspaces only (Note [Borrowed run inputs] in
/// src/runtime/execute.cpp): a copy of a caller's tensor that holds no count
/// of its storage, valid while the caller's tensor lives. Copies made from
/// it count as usual; it must be forgotten, never destroyed or assigned.
struct TensorBorrow {
  /// `slot` (undefined) becomes the borrowed copy of `from`.
  static void borrow(Tensor& slot, const Tensor& from) {
    slot.storage_.p_ = from.storage_.p_;
    slot.shape_ = from.shape_;
    slot.strides_ = from.strides_;
    slot.offset_ = from.offset_;
    slot.dtype_ = from.dtype_;
  }
  /// Makes `slot` undefined again (defined() false; its shape stays until
  /// the next assignment) without releasing a count.
  static void forget(Tensor& slot) noexcept { slot.storage_.p_ = nullptr; }
};
Status dtype_mismatch(DType expected, DType found);
/// Copies the elements of `src` in row-major order into dense `dst`.
void copy_to_contiguous(const TensorView& src, void* dst) noexcept;
/// The reverse: `src`'s row-major elements into the (strided) view `dst`.
void copy_from_contiguous(const void* src, const TensorView& dst) noexcept;
}  // namespace internal

template <class T>
Result<T*> Tensor::typed_data() const {
  if (dtype_of<T> != dtype_) return internal::dtype_mismatch(dtype_of<T>, dtype_);
  return static_cast<T*>(data());
}

template <class T>
Result<Tensor> Tensor::from_values(std::span<const T> values, IntArrayRef shape) {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t n, checked_numel(shape));
  if (static_cast<std::size_t>(n) != values.size()) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "from_values: shape {} holds {} elements, but {} values were given", shape_to_string(shape), n,
                      values.size());
  }
  TENFERRO_ASSIGN_OR_RETURN(Tensor t, empty(shape, dtype_of<T>));
  T* dst = static_cast<T*>(t.data());
  for (std::size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return t;
}

template <class T>
Result<std::vector<T>> Tensor::to_vector() const {
  if (dtype_of<T> != dtype_) return internal::dtype_mismatch(dtype_of<T>, dtype_);
  std::vector<T> out(static_cast<std::size_t>(numel()));
  TENFERRO_TRY(copy_elements_to(out.data()));
  return out;
}

}  // namespace tenferro
