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

std::string_view to_string(CoreOpFamily family) noexcept {
  switch (family) {
    case CoreOpFamily::kElementwise:
      return "elementwise";
    case CoreOpFamily::kCreation:
      return "creation";
    case CoreOpFamily::kDataMovement:
      return "data_movement";
    case CoreOpFamily::kReduction:
      return "reduction";
    case CoreOpFamily::kAlongAxis:
      return "along_axis";
    case CoreOpFamily::kContraction:
      return "contraction";
  }
  return "unknown";
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
    case DTypeClass::kIntegral:
      return "bool or an integer dtype";
    case DTypeClass::kInteger:
      return "an integer dtype";
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
    case DTypeClass::kIntegral:
      return dtype == DType::kBool || is_integer(dtype);
    case DTypeClass::kInteger:
      return is_integer(dtype);
  }
  return false;
}

}  // namespace tenferro::program
