// SHA-256 through OpenSSL's EVP interface (uses SHA-NI where the CPU has it).
// Used for semantic-program fingerprints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tenferro {

/// A 32-byte SHA-256 digest.
struct Digest256 {
  std::array<std::uint8_t, 32> bytes{};

  /// Lowercase hexadecimal, 64 characters.
  std::string hex() const;
  /// The first 8 bytes as an integer: a compact hash-table key.
  std::uint64_t prefix64() const noexcept;

  friend bool operator==(const Digest256&, const Digest256&) = default;
  friend auto operator<=>(const Digest256&, const Digest256&) = default;
};

/// An incremental SHA-256 hasher. Move-only; thread-compatible (one hasher
/// per thread). Feeds are typed so canonical encodings stay unambiguous.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> bytes);
  void update(const void* data, std::size_t size);
  /// Feeds the 8 little-endian bytes of `value`.
  void update_u64(std::uint64_t value);
  /// Feeds the length, then the bytes, so adjacent strings cannot run together.
  void update_string(std::string_view text);
  /// Returns the digest and resets the hasher for reuse.
  Digest256 finish();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL headers stay private
};

/// One-shot SHA-256 of `bytes`.
Digest256 sha256(std::span<const std::byte> bytes);
Digest256 sha256(std::string_view text);

}  // namespace tenferro
