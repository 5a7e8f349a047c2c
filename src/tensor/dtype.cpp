// DType name parsing.
#include "tenferro/tensor/dtype.h"

namespace tenferro {

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    if (to_string(d) == name) return d;
  }
  return std::nullopt;
}

}  // namespace tenferro
