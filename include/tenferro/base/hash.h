// Small non-cryptographic hashing for payload hashes and cache keys
// (splitmix64 mixing). Not stable across versions; never persisted.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace tenferro::hashing {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) noexcept {
  return mix64(seed ^ (mix64(value) + (seed << 6) + (seed >> 2)));
}

inline std::uint64_t hash_double(std::uint64_t seed, double value) noexcept {
  if (value == 0.0) value = 0.0;  // +0 and -0 compare equal
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return hash_combine(seed, bits);
}

inline std::uint64_t hash_string(std::uint64_t seed, std::string_view text) noexcept {
  seed = hash_combine(seed, text.size());
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    seed = hash_combine(seed, word);
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, text.data() + i, text.size() - i);
  return hash_combine(seed, tail);
}

}  // namespace tenferro::hashing
