// Keeps error messages readable when they quote long user text (an einsum
// subscripts string can run to kilobytes): messages quote at most the first
// kMaxQuoted bytes, cut at a UTF-8 character boundary, so that indices,
// offsets and labels elsewhere in the message still locate the error.
#pragma once

#include <string>
#include <string_view>

namespace tenferro {

inline constexpr std::size_t kMaxQuoted = 96;

inline std::string abbreviate(std::string_view text) {
  if (text.size() <= kMaxQuoted) return std::string(text);
  std::size_t cut = kMaxQuoted;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "…";
}

}  // namespace tenferro
