// Vectorised transcendental functions for the flat elementwise path.
//
// Note [Vector math]
// exp, log, log1p, expm1, sin, cos, tan and tanh of float32/float64 on
// contiguous data call glibc's libmvec (the vector variants GCC's
// `#pragma omp simd` would call: _ZGVeN8v_tanh for AVX-512, _ZGVdN4v_tanh
// for AVX2, ...; glibc >= 2.35 has all eight; at most 4 ulp from the
// correctly rounded result, as the libmvec manual states) instead of the
// scalar libm function per element. They are called from per-ISA
// translation units (Note [ISA translation units]) chosen by the context's
// kernel ISA, so TENFERRO_CPU_ISA=avx2 / portable runs the AVX2 variants /
// scalar libm. A tail shorter than one vector goes through a zero-padded
// register. Strided operands use them too: each contiguous run of the
// strided loop (Note [Choosing the inner loop once]), including the rows of
// packed transposed tiles (Note [Packed transposed tiles]), is one vector
// call; only a general strided inner loop calls the scalar function per
// element. Complex dtypes keep the scalar path.
#pragma once

#include <cstdint>

#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/kernels/elementwise.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::cpu::internal {

/// out[i] = f(x[i]) for i < n over contiguous elements.
using VectorMathFn = void (*)(char* out, const char* x, std::int64_t n);

/// Whether some dtype and ISA have a vector function for `op` (the ops of
/// vector_math_impl.h's table).
constexpr bool has_vector_math(UnaryOp op) noexcept {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kLog1p:
    case UnaryOp::kExpm1:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTan:
    case UnaryOp::kTanh:
      return true;
    default:
      return false;
  }
}

/// The vectorised `op` for `dtype` under `isa` (resolved, never kAuto), or
/// nullptr where there is none (the caller runs the scalar loop).
VectorMathFn vector_math_unary(UnaryOp op, DType dtype, CpuIsa isa) noexcept;

VectorMathFn avx512_vector_math(UnaryOp op, DType dtype) noexcept;
VectorMathFn avx2_vector_math(UnaryOp op, DType dtype) noexcept;

}  // namespace tenferro::cpu::internal
