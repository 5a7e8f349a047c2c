// Scalar formatting.
#include "tenferro/tensor/scalar.h"

#include <fmt/format.h>

namespace tenferro {

std::string Scalar::to_string() const {
  switch (dtype_kind(dtype_)) {
    case DTypeKind::kBool:
      return int_ != 0 ? "true" : "false";
    case DTypeKind::kInteger:
      return fmt::format("{}:{}", int_, dtype_);
    case DTypeKind::kFloating:
      return fmt::format("{}:{}", real_, dtype_);
    case DTypeKind::kComplex:
      return fmt::format("({}{:+}j):{}", complex_.real(), complex_.imag(), dtype_);
  }
  return "?";
}

}  // namespace tenferro
