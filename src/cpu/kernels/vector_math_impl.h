// The body of vector_math_avx512.cpp and vector_math_avx2.cpp (Note [Vector
// math] in vector_math.h): each defines the vector types (TENFERRO_VM_VD/VF),
// libmvec's names for its ISA (TENFERRO_VM_NAME_D/F), the unaligned
// loads/stores and the table's name (TENFERRO_VM_TABLE), then includes this
// file once.
#include <cstring>

#include "cpu/kernels/vector_math.h"

// libmvec's entry points for this ISA (glibc's vector function ABI names).
#define TENFERRO_VM_DECLARE(fn)                                              \
  extern "C" TENFERRO_VM_VD TENFERRO_VM_NAME_D(fn)(TENFERRO_VM_VD) noexcept; \
  extern "C" TENFERRO_VM_VF TENFERRO_VM_NAME_F(fn)(TENFERRO_VM_VF) noexcept;
TENFERRO_VM_DECLARE(exp)
TENFERRO_VM_DECLARE(log)
TENFERRO_VM_DECLARE(log1p)
TENFERRO_VM_DECLARE(expm1)
TENFERRO_VM_DECLARE(sin)
TENFERRO_VM_DECLARE(cos)
TENFERRO_VM_DECLARE(tan)
TENFERRO_VM_DECLARE(tanh)
#undef TENFERRO_VM_DECLARE

namespace tenferro::cpu::internal {
namespace {

template <class T, class V, V (*F)(V) noexcept, V (*Load)(const T*), void (*Store)(T*, V)>
void apply(char* out, const char* x, std::int64_t n) {
  constexpr std::int64_t kLanes = sizeof(V) / sizeof(T);
  T* o = reinterpret_cast<T*>(out);
  const T* in = reinterpret_cast<const T*>(x);
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(o + i, F(Load(in + i)));
  if (i < n) {  // the tail through a zero-padded vector
    T buffer[kLanes] = {};
    std::memcpy(buffer, in + i, static_cast<std::size_t>(n - i) * sizeof(T));
    Store(buffer, F(Load(buffer)));
    std::memcpy(o + i, buffer, static_cast<std::size_t>(n - i) * sizeof(T));
  }
}

TENFERRO_VM_VD load_d(const double* p) { return TENFERRO_VM_LOAD_D(p); }
void store_d(double* p, TENFERRO_VM_VD v) { TENFERRO_VM_STORE_D(p, v); }
TENFERRO_VM_VF load_f(const float* p) { return TENFERRO_VM_LOAD_F(p); }
void store_f(float* p, TENFERRO_VM_VF v) { TENFERRO_VM_STORE_F(p, v); }

template <TENFERRO_VM_VD (*D)(TENFERRO_VM_VD) noexcept, TENFERRO_VM_VF (*F)(TENFERRO_VM_VF) noexcept>
VectorMathFn pick(DType dtype) {
  if (dtype == DType::kFloat64) return &apply<double, TENFERRO_VM_VD, D, &load_d, &store_d>;
  if (dtype == DType::kFloat32) return &apply<float, TENFERRO_VM_VF, F, &load_f, &store_f>;
  return nullptr;
}

}  // namespace

VectorMathFn TENFERRO_VM_TABLE(UnaryOp op, DType dtype) noexcept {
#define TENFERRO_VM_CASE(Op, fn) \
  case UnaryOp::k##Op:           \
    return pick<&TENFERRO_VM_NAME_D(fn), &TENFERRO_VM_NAME_F(fn)>(dtype);
  switch (op) {
    TENFERRO_VM_CASE(Exp, exp)
    TENFERRO_VM_CASE(Log, log)
    TENFERRO_VM_CASE(Log1p, log1p)
    TENFERRO_VM_CASE(Expm1, expm1)
    TENFERRO_VM_CASE(Sin, sin)
    TENFERRO_VM_CASE(Cos, cos)
    TENFERRO_VM_CASE(Tan, tan)
    TENFERRO_VM_CASE(Tanh, tanh)
    default:
      return nullptr;
  }
#undef TENFERRO_VM_CASE
}

}  // namespace tenferro::cpu::internal
