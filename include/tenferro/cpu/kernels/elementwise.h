// Elementwise CPU kernels: unary and binary ops from elementwise_ops.def,
// compare, select and convert (docs/core_ops.md), for every dtype where the
// op is defined.
//
// All operands have the same shape; broadcasting is expressed with stride-0
// input views (Tensor::broadcast_to). Any non-negative strides work. The
// output may be identical to an input (in place) when both have the same
// element size; any other overlap is kAliasConflict (Note [Kernel alias
// contract] in src/cpu/kernels/validation.h). Every call validates first and
// writes nothing on error. Calls borrow their views for the call only, may
// split work with `ctx` (one fan-out level) and are thread-safe for disjoint
// outputs. `stats`, when given, counts the loop taken.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/cpu/kernels/kernel_stats.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

/// The input dtypes an op is defined for.
enum class OpDomain : std::uint8_t { kNumeric, kInexact, kFloating, kRealNumeric, kBool, kIntegral, kInteger, kAny };
/// True when `dtype` belongs to `domain`.
constexpr bool in_domain(OpDomain domain, DType dtype) noexcept {
  switch (domain) {
    case OpDomain::kNumeric:
      return dtype != DType::kBool;
    case OpDomain::kInexact:
      return is_inexact(dtype);
    case OpDomain::kFloating:
      return is_floating(dtype);
    case OpDomain::kRealNumeric:
      return is_integer(dtype) || is_floating(dtype);
    case OpDomain::kBool:
      return dtype == DType::kBool;
    case OpDomain::kIntegral:
      return dtype == DType::kBool || is_integer(dtype);
    case OpDomain::kInteger:
      return is_integer(dtype);
    case OpDomain::kAny:
      return true;
  }
  return false;
}

enum class UnaryOp : std::uint8_t {
#define TENFERRO_UNARY_OP(name, str, domain, cost) k##name,
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
enum class BinaryOp : std::uint8_t {
#define TENFERRO_BINARY_OP(name, str, domain, cost) k##name,
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
/// compare(direction); lt/le/gt/ge are not defined for complex dtypes.
enum class CompareDirection : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

std::string_view to_string(UnaryOp op) noexcept;
std::string_view to_string(BinaryOp op) noexcept;
std::string_view to_string(CompareDirection direction) noexcept;
OpDomain op_domain(UnaryOp op) noexcept;
OpDomain op_domain(BinaryOp op) noexcept;

/// The result dtype of `op` on `input`, or nullopt when `op` is not defined
/// for `input`.
std::optional<DType> result_dtype(UnaryOp op, DType input) noexcept;
std::optional<DType> result_dtype(BinaryOp op, DType input) noexcept;

/// out = op(x). out.dtype must be result_dtype(op, x.dtype).
/// Integer neg/abs wrap (abs(INT_MIN) == INT_MIN); sign of a complex is
/// x/|x| (0 at 0); round rounds half to even; not of an integer is bitwise.
Status unary(UnaryOp op, const TensorView& x, const TensorView& out, const ParallelContext& ctx,
             KernelStats* stats = nullptr);

/// out = op(a, b); a and b have the same dtype. Integer add/sub/mul wrap;
/// integer div truncates toward zero, INT_MIN / -1 wraps to INT_MIN, and a
/// zero divisor is a kInvalidArgument error (ErrorStage::kCompletion)
/// detected before anything is written. max/min propagate NaN. remainder
/// takes the divisor's sign (Python %), fmod the dividend's (C fmod); on
/// integers a zero divisor is the same error as for div. Shifts by a
/// negative amount or by at least the bit width give 0 (left, logical) or
/// the sign fill (arithmetic), as in StableHLO.
Status binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out, const ParallelContext& ctx,
              KernelStats* stats = nullptr);

/// out (bool) = a <direction> b; a and b have the same dtype.
Status compare(CompareDirection direction, const TensorView& a, const TensorView& b, const TensorView& out,
               const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = pred ? on_true : on_false, elementwise; pred is bool, on_true,
/// on_false and out share a dtype.
Status select(const TensorView& pred, const TensorView& on_true, const TensorView& on_false, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = min(max(x, lo), hi), elementwise (StableHLO clamp); lo, x, hi and
/// out share an integer or floating dtype. A NaN in any operand gives NaN;
/// where lo > hi the result is hi.
Status clamp(const TensorView& lo, const TensorView& x, const TensorView& hi, const TensorView& out,
             const ParallelContext& ctx, KernelStats* stats = nullptr);

/// out = x converted to out.dtype: C++ conversion, except that complex ->
/// real takes the real part, -> bool is x != 0, and floating -> integer
/// saturates at the integer range with NaN -> 0 (C++ leaves those undefined).
/// In place only between same-size dtypes.
Status convert(const TensorView& x, const TensorView& out, const ParallelContext& ctx, KernelStats* stats = nullptr);

}  // namespace tenferro::cpu
