// SmallVector<T, N>: the repository-wide inline small vector for shapes,
// strides, slot lists and other short variable-length lists on hot paths.
//
// Note [Why an own small vector]
// Shapes and slot lists are created on every eager call, so they must not
// touch the heap for the common ranks. The well-known alternatives either pull
// a large dependency into every component for one header (Boost.Container,
// LLVM ADT) or are not packaged as a standalone header (absl). This one is
// deliberately small: elements must be nothrow-move-constructible (so growth
// cannot half-fail), trivially copyable elements are moved with memcpy, size
// and capacity are 32-bit, and it converts to std::span for borrowed views.
// Iterators and references are invalidated by any growth, as for std::vector.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "tenferro/base/assert.h"

namespace tenferro {

template <class T, std::size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs an inline capacity of at least 1");
  static_assert(std::is_nothrow_move_constructible_v<T>, "SmallVector elements must be nothrow move constructible");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  static constexpr std::size_t kInlineCapacity = N;

  SmallVector() noexcept : data_(inline_data()) {}
  explicit SmallVector(size_type count) : SmallVector() { resize(count); }
  SmallVector(size_type count, const T& value) : SmallVector() { resize(count, value); }
  SmallVector(std::initializer_list<T> values) : SmallVector() { append(values.begin(), values.end()); }
  template <std::input_iterator It>
  SmallVector(It first, It last) : SmallVector() {
    append(first, last);
  }
  explicit SmallVector(std::span<const T> values) : SmallVector() { append(values.begin(), values.end()); }

  SmallVector(const SmallVector& other) : SmallVector() { append(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept : SmallVector() { steal(std::move(other)); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      release_heap();
      steal(std::move(other));
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> values) {
    clear();
    append(values.begin(), values.end());
    return *this;
  }
  ~SmallVector() {
    destroy_range(data_, data_ + size_);
    release_heap();
  }

  size_type size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_type capacity() const noexcept { return capacity_; }
  /// True while the elements live in the inline buffer (no heap storage).
  bool is_inline() const noexcept { return data_ == inline_data(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cbegin() const noexcept { return data_; }
  const_iterator cend() const noexcept { return data_ + size_; }

  T& operator[](size_type i) noexcept {
    TENFERRO_ASSERT(i < size_);
    return data_[i];
  }
  const T& operator[](size_type i) const noexcept {
    TENFERRO_ASSERT(i < size_);
    return data_[i];
  }
  T& front() noexcept { return (*this)[0]; }
  const T& front() const noexcept { return (*this)[0]; }
  T& back() noexcept { return (*this)[size_ - 1]; }
  const T& back() const noexcept { return (*this)[size_ - 1]; }

  operator std::span<const T>() const noexcept { return {data_, size_}; }  // NOLINT
  std::span<const T> span() const noexcept { return {data_, size_}; }
  std::span<T> mutable_span() noexcept { return {data_, size_}; }

  void reserve(size_type capacity) {
    if (capacity > capacity_) grow_to(capacity);
  }

  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      // Build the element first: `args` may refer to an element of *this.
      T value(std::forward<Args>(args)...);
      grow_to(next_capacity(size_ + 1));
      new (data_ + size_) T(std::move(value));
    } else {
      new (data_ + size_) T(std::forward<Args>(args)...);
    }
    return data_[size_++];
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() noexcept {
    TENFERRO_ASSERT(size_ > 0);
    --size_;
    data_[size_].~T();
  }

  void resize(size_type count) {
    if (count < size_) {
      destroy_range(data_ + count, data_ + size_);
    } else {
      reserve(count);
      for (size_type i = size_; i < count; ++i) new (data_ + i) T();
    }
    size_ = static_cast<std::uint32_t>(count);
  }
  void resize(size_type count, const T& value) {
    if (count < size_) {
      destroy_range(data_ + count, data_ + size_);
      size_ = static_cast<std::uint32_t>(count);
      return;
    }
    T copy(value);
    reserve(count);
    for (size_type i = size_; i < count; ++i) new (data_ + i) T(copy);
    size_ = static_cast<std::uint32_t>(count);
  }
  void clear() noexcept {
    destroy_range(data_, data_ + size_);
    size_ = 0;
  }
  void assign(std::span<const T> values) {
    clear();
    append(values.begin(), values.end());
  }
  template <std::input_iterator It>
  void append(It first, It last) {
    if constexpr (std::forward_iterator<It>) reserve(size_ + static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }

  /// Inserts `value` before `pos`; returns an iterator to it.
  iterator insert(const_iterator pos, T value) {
    const auto index = static_cast<size_type>(pos - data_);
    TENFERRO_ASSERT(index <= size_);
    emplace_back(std::move(value));
    std::rotate(data_ + index, data_ + size_ - 1, data_ + size_);
    return data_ + index;
  }
  /// Removes the element at `pos`; returns an iterator to the next one.
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const auto index = static_cast<size_type>(first - data_);
    const auto count = static_cast<size_type>(last - first);
    TENFERRO_ASSERT(index + count <= size_);
    std::move(data_ + index + count, data_ + size_, data_ + index);
    destroy_range(data_ + size_ - count, data_ + size_);
    size_ -= static_cast<std::uint32_t>(count);
    return data_ + index;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const noexcept { return std::launder(reinterpret_cast<const T*>(inline_)); }

  size_type next_capacity(size_type needed) const noexcept {
    return std::max<size_type>(needed, static_cast<size_type>(capacity_) * 2);
  }

  static T* allocate(size_type count) {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t(alignof(T))));
    } else {
      return static_cast<T*>(::operator new(count * sizeof(T)));
    }
  }
  static void deallocate(T* p) noexcept {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete(p, std::align_val_t(alignof(T)));
    } else {
      ::operator delete(p);
    }
  }
  static void destroy_range(T* first, T* last) noexcept {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      for (; first != last; ++first) first->~T();
    }
  }
  // Moves [src, src+count) into uninitialised `dst` and destroys the source.
  static void relocate(T* src, size_type count, T* dst) noexcept {
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (count != 0) std::memcpy(static_cast<void*>(dst), static_cast<const void*>(src), count * sizeof(T));
    } else {
      for (size_type i = 0; i < count; ++i) {
        new (dst + i) T(std::move(src[i]));
        src[i].~T();
      }
    }
  }

  void grow_to(size_type capacity) {
    TENFERRO_CHECK(capacity <= UINT32_MAX);
    T* fresh = allocate(capacity);
    relocate(data_, size_, fresh);
    release_heap();
    data_ = fresh;
    capacity_ = static_cast<std::uint32_t>(capacity);
  }
  void release_heap() noexcept {
    if (!is_inline()) {
      deallocate(data_);
      data_ = inline_data();
      capacity_ = N;
    }
  }
  // Precondition: *this is empty and inline.
  void steal(SmallVector&& other) noexcept {
    if (other.is_inline()) {
      relocate(other.data_, other.size_, data_);
    } else {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_data();
      other.capacity_ = N;
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  T* data_;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace tenferro
