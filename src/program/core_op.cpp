// CoreSemanticOp name lookup and dtype classes (the table is core_ops.def).
#include "tenferro/program/core_op.h"

namespace tenferro::program {

std::optional<CoreSemanticOp> parse_core_op(std::string_view name) noexcept {
  for (int i = 0; i < kNumCoreOps; ++i) {
    auto op = static_cast<CoreSemanticOp>(i);
    if (to_string(op) == name) return op;
  }
  return std::nullopt;
}

std::string_view to_string(DTypeClass dtype_class) noexcept {
  switch (dtype_class) {
    case DTypeClass::kAny:
      return "any dtype";
    case DTypeClass::kBool:
      return "bool";
    case DTypeClass::kNumeric:
      return "a numeric dtype (integer, floating or complex)";
    case DTypeClass::kRealNumeric:
      return "a real numeric dtype (integer or floating)";
    case DTypeClass::kInexact:
      return "an inexact dtype (floating or complex)";
    case DTypeClass::kFloating:
      return "a floating dtype";
  }
  return "?";
}

bool dtype_in_class(DType dtype, DTypeClass dtype_class) noexcept {
  switch (dtype_class) {
    case DTypeClass::kAny:
      return true;
    case DTypeClass::kBool:
      return dtype == DType::kBool;
    case DTypeClass::kNumeric:
      return dtype != DType::kBool;
    case DTypeClass::kRealNumeric:
      return is_integer(dtype) || is_floating(dtype);
    case DTypeClass::kInexact:
      return is_inexact(dtype);
    case DTypeClass::kFloating:
      return is_floating(dtype);
  }
  return false;
}

}  // namespace tenferro::program
