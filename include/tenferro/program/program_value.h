// ProgramValue: the opaque token a ProgramBuilder hands out for each SSA
// value it holds.
#pragma once

#include <cstdint>

#include <fmt/format.h>

namespace tenferro::program {

class ProgramBuilder;

/// An opaque handle to one value of one ProgramBuilder. Only that builder
/// accepts it; any other builder answers kForeignValue. Raw numbering is not
/// exposed and the formatted form is the constant "ProgramValue(..)". A
/// default-constructed token is invalid. Trivially copyable.
class ProgramValue {
 public:
  constexpr ProgramValue() noexcept = default;
  constexpr bool valid() const noexcept { return builder_ != 0; }
  friend constexpr bool operator==(ProgramValue, ProgramValue) noexcept = default;

 private:
  friend class ProgramBuilder;
  constexpr ProgramValue(std::uint64_t builder, std::uint32_t index) noexcept : builder_(builder), index_(index) {}
  std::uint64_t builder_ = 0;
  std::uint32_t index_ = 0;
};

}  // namespace tenferro::program

template <>
struct fmt::formatter<tenferro::program::ProgramValue> : fmt::formatter<std::string_view> {
  auto format(tenferro::program::ProgramValue value, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(value.valid() ? "ProgramValue(..)" : "ProgramValue(invalid)", ctx);
  }
};
