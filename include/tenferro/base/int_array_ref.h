// IntArrayRef: a borrowed, read-only list of int64 (shapes, strides, axes,
// permutations) that binds to braced lists, spans, std::vector and
// SmallVector alike, so APIs need one overload. Like std::span it does not
// own its elements: a braced list lives until the end of the full expression.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "tenferro/base/small_vector.h"

namespace tenferro {

class IntArrayRef {
 public:
  constexpr IntArrayRef() noexcept = default;
  // Binding to a braced list is the point of this type; the list outlives
  // the call it is passed to, like std::span over a temporary.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<std::int64_t> values) noexcept  // NOLINT
      : data_(values.begin()), size_(values.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr IntArrayRef(std::span<const std::int64_t> values) noexcept  // NOLINT
      : data_(values.data()), size_(values.size()) {}
  IntArrayRef(const std::vector<std::int64_t>& values) noexcept  // NOLINT
      : data_(values.data()), size_(values.size()) {}
  template <std::size_t N>
  IntArrayRef(const SmallVector<std::int64_t, N>& values) noexcept  // NOLINT
      : data_(values.data()), size_(values.size()) {}
  constexpr IntArrayRef(const std::int64_t* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /// A C array or std::array of values (`std::int64_t axes[] = {0, 2};
  /// fft::fftn(ctx, x, {}, axes)`). A braced list still takes the
  /// initializer_list constructor.
  template <std::size_t N>
  constexpr IntArrayRef(const std::int64_t (&values)[N]) noexcept  // NOLINT
      : data_(values), size_(N) {}
  template <std::size_t N>
  constexpr IntArrayRef(const std::array<std::int64_t, N>& values) noexcept  // NOLINT
      : data_(values.data()), size_(N) {}

  constexpr const std::int64_t* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr const std::int64_t* begin() const noexcept { return data_; }
  constexpr const std::int64_t* end() const noexcept { return data_ + size_; }
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr std::int64_t back() const noexcept { return data_[size_ - 1]; }
  constexpr operator std::span<const std::int64_t>() const noexcept { return {data_, size_}; }  // NOLINT
  constexpr std::span<const std::int64_t> span() const noexcept { return {data_, size_}; }

  friend bool operator==(IntArrayRef a, IntArrayRef b) noexcept {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i)
      if (a.data_[i] != b.data_[i]) return false;
    return true;
  }

 private:
  const std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tenferro
