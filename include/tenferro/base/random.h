// A small reproducible random number generator: xoshiro256** seeded with
// splitmix64. Fast, and (unlike std::uniform_real_distribution) it gives the
// same sequence on every standard library, which reproducible planning (the
// einsum planners' Reproducible policy) and test data rely on. Not for
// cryptography.
#pragma once

#include <cstdint>

namespace tenferro {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept {
    for (std::uint64_t& word : state_) word = splitmix64(seed);
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  /// Uniform in [0, 1), 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, bound), bound > 0 (Lemire's multiply-shift; the tiny
  /// bias is irrelevant for search).
  std::uint32_t below(std::uint32_t bound) noexcept {
    return static_cast<std::uint32_t>(((next() >> 32) * static_cast<std::uint64_t>(bound)) >> 32);
  }

  /// A well-mixed seed for stream `stream` derived from `seed`.
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t stream) noexcept {
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (stream + 1));
    return splitmix64(x);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4];
};

}  // namespace tenferro
