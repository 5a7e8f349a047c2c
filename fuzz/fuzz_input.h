// FuzzInput: reads the fuzzer's byte string as a sequence of small choices
// (a byte, an integer below a bound, a short string), so a target can build
// structured inputs (op sequences, networks) from it. Reading past the end
// yields zeros, which keeps every input a valid, finite choice sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tenferro::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  bool empty() const noexcept { return pos_ >= size_; }
  std::uint8_t byte() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  /// A value in [0, bound); bound must be in [1, 256].
  std::uint32_t below(std::uint32_t bound) noexcept { return byte() % bound; }
  /// A value in [lo, hi].
  std::int64_t in_range(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint32_t>(hi - lo + 1)));
  }
  bool flag() noexcept { return (byte() & 1) != 0; }
  /// The unread rest of the input, as text.
  std::string_view rest() noexcept {
    const std::string_view out(reinterpret_cast<const char*>(data_ + pos_), pos_ < size_ ? size_ - pos_ : 0);
    pos_ = size_;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// Reports a broken property (not a user error) and stops the fuzzer with
/// a crash it records as a finding.
[[noreturn]] void property_violated(const char* what, std::string_view detail);

}  // namespace tenferro::fuzz
