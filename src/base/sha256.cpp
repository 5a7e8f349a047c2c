// SHA-256 over OpenSSL EVP. The EVP_MD is fetched once (immutable after
// initialisation); each hasher reuses one EVP_MD_CTX across finish() calls.
#include "tenferro/base/sha256.h"

#include <openssl/evp.h>

#include "tenferro/base/assert.h"

namespace tenferro {
namespace {

const EVP_MD* sha256_md() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  TENFERRO_CHECK(md != nullptr);
  return md;
}

EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

}  // namespace

std::string Digest256::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(64, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

std::uint64_t Digest256::prefix64() const noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | bytes[static_cast<std::size_t>(i)];
  return v;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  TENFERRO_CHECK(ctx_ != nullptr);
  TENFERRO_CHECK(EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) == 1);
}

Sha256::~Sha256() {
  if (ctx_ != nullptr) EVP_MD_CTX_free(as_ctx(ctx_));
}

Sha256::Sha256(Sha256&& other) noexcept : ctx_(other.ctx_) { other.ctx_ = nullptr; }

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    if (ctx_ != nullptr) EVP_MD_CTX_free(as_ctx(ctx_));
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

void Sha256::update(const void* data, std::size_t size) {
  TENFERRO_CHECK(ctx_ != nullptr);
  if (size != 0) TENFERRO_CHECK(EVP_DigestUpdate(as_ctx(ctx_), data, size) == 1);
}

void Sha256::update(std::span<const std::byte> bytes) { update(bytes.data(), bytes.size()); }

void Sha256::update_u64(std::uint64_t value) {
  std::uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(value >> (8 * i));
  update(le, sizeof(le));
}

void Sha256::update_string(std::string_view text) {
  update_u64(text.size());
  update(text.data(), text.size());
}

Digest256 Sha256::finish() {
  TENFERRO_CHECK(ctx_ != nullptr);
  Digest256 digest;
  unsigned int length = 0;
  TENFERRO_CHECK(EVP_DigestFinal_ex(as_ctx(ctx_), digest.bytes.data(), &length) == 1);
  TENFERRO_CHECK(length == digest.bytes.size());
  TENFERRO_CHECK(EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) == 1);
  return digest;
}

Digest256 sha256(std::span<const std::byte> bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

Digest256 sha256(std::string_view text) {
  Sha256 hasher;
  hasher.update(text.data(), text.size());
  return hasher.finish();
}

}  // namespace tenferro
