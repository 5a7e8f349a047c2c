// Internal: carving typed arrays out of one workspace buffer. The same code
// measures (no buffer: only the total) and carves (a buffer of at least that
// total), so a provider's plan() and run() cannot disagree about a layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tenferro::linalg::internal {

class WorkspaceLayout {
 public:
  /// Measuring mode: take() returns nullptr and only counts bytes.
  WorkspaceLayout() noexcept = default;
  /// Carving mode over `buffer` (64-byte aligned, large enough).
  explicit WorkspaceLayout(std::span<std::byte> buffer) noexcept : base_(buffer.data()) {}

  /// `bytes` (at least 1) starting at a 64-byte aligned offset; returns it.
  std::size_t reserve(std::size_t bytes) noexcept {
    offset_ = (offset_ + 63) / 64 * 64;
    const std::size_t start = offset_;
    offset_ += bytes > 0 ? bytes : 1;
    return start;
  }
  /// `count` elements of U, 64-byte aligned (at least one element's room,
  /// so LAPACK always gets a valid pointer); nullptr when measuring.
  template <class U>
  U* take(std::int64_t count) noexcept {
    const std::size_t start = reserve(static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(U));
    return base_ != nullptr ? reinterpret_cast<U*>(base_ + start) : nullptr;
  }
  /// Bytes taken so far (rounded to 64).
  std::size_t bytes() const noexcept { return (offset_ + 63) / 64 * 64; }

 private:
  std::byte* base_ = nullptr;
  std::size_t offset_ = 0;
};

}  // namespace tenferro::linalg::internal
