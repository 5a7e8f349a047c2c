// Small non-cryptographic hashing helpers for payload/attribute hashes and
// the Merkle ordering keys of freeze (SHA-256 is used for fingerprints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace tenferro::program::internal {

/// The splitmix64 finaliser: a good 64-bit mixer.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) noexcept {
  return mix64(seed ^ (mix64(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

inline std::uint64_t hash_bytes(const void* data, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0x84222325cbf29ce4ULL ^ size;
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = hash_combine(h, word);
  }
  std::uint64_t tail = 0;
  for (std::size_t k = 0; i < size; ++i, ++k) tail |= static_cast<std::uint64_t>(p[i]) << (8 * k);
  return hash_combine(h, tail);
}

inline std::uint64_t hash_string(std::string_view text) noexcept { return hash_bytes(text.data(), text.size()); }

template <class Range>
std::uint64_t hash_int_range(std::uint64_t seed, const Range& values) noexcept {
  seed = hash_combine(seed, static_cast<std::uint64_t>(values.size()));
  for (auto v : values) seed = hash_combine(seed, static_cast<std::uint64_t>(v));
  return seed;
}

}  // namespace tenferro::program::internal
