// The Philox-4x32 counter-based generator with 10 rounds: a bijection of a
// 128-bit counter keyed by 64 bits, used by rng_philox. Header-only so the
// known-answer test can call the block function itself.
#pragma once

#include <array>
#include <cstdint>

namespace tenferro::cpu::internal {

using PhiloxBlock = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

/// The 10-round Philox-4x32 image of `counter` under `key`. Pure and
/// thread-safe.
constexpr PhiloxBlock philox4x32_10(PhiloxBlock counter, PhiloxKey key) noexcept {
  constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const std::uint64_t p0 = kM0 * counter[0];
    const std::uint64_t p1 = kM1 * counter[2];
    counter = {static_cast<std::uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<std::uint32_t>(p1),
               static_cast<std::uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return counter;
}

}  // namespace tenferro::cpu::internal
