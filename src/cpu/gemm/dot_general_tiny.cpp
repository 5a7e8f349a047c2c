// Note [Tiny dot_general] (dot_general_tiny.h).
#include "cpu/gemm/dot_general_tiny.h"

#include <complex>
#include <type_traits>

namespace tenferro::cpu::internal {
namespace {

// The operand's only axis that is in neither list, or -1; false when there
// are two or more.
bool single_free_axis(const TensorView& t, const Dims& batch, const Dims& contract, std::int64_t& free) noexcept {
  free = -1;
  for (std::int64_t a = 0; a < t.rank(); ++a) {
    bool listed = false;
    for (std::int64_t b : batch) listed = listed || b == a;
    for (std::int64_t c : contract) listed = listed || c == a;
    if (listed) continue;
    if (free >= 0) return false;
    free = a;
  }
  return true;
}

// Extent and stride of axis `a` of `t` (1 and 0 when a < 0).
void axis_of(const TensorView& t, std::int64_t a, std::int64_t& extent, std::int64_t& stride) noexcept {
  extent = a < 0 ? 1 : t.shape[static_cast<std::size_t>(a)];
  stride = a < 0 ? 0 : t.strides[static_cast<std::size_t>(a)];
}

// acc + x * y; wraps for integers (no signed-overflow UB) and uses plain
// real arithmetic for complex numbers (no __muldc3 call).
template <class T>
inline T multiply_add(T acc, T x, T y) noexcept {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x) * static_cast<U>(y));
  } else if constexpr (std::is_floating_point_v<T>) {
    return acc + x * y;
  } else {
    return T(acc.real() + x.real() * y.real() - x.imag() * y.imag(),
             acc.imag() + x.real() * y.imag() + x.imag() * y.real());
  }
}

// Four columns of a row at a time: one sum per element would be a chain of
// dependent multiply-adds, k of them, each waiting on the last (at m = n =
// 8, k = 4 the loop took longer than the provider's 16 x 16 x 8 product).
// Each element's sum still runs over k in order.
template <class T>
void run_tiny_typed(const TinyContraction& t, const T* lhs, const T* rhs, T* out) noexcept {
  constexpr std::int64_t kColumns = 4;
  if (t.m == 1 && t.n == 1 && t.k == 1) {
    // An elementwise product (`i,i->i`): the loops below cost about ten
    // cycles of set-up per batch element around its one multiply.
    for (std::int64_t b = 0; b < t.batch; ++b)
      out[b * t.out[0]] = multiply_add(T(0), lhs[b * t.lhs[0]], rhs[b * t.rhs[0]]);
    return;
  }
  const std::int64_t rs = t.rhs[2];
  for (std::int64_t b = 0; b < t.batch; ++b) {
    const T* l = lhs + b * t.lhs[0];
    const T* r = rhs + b * t.rhs[0];
    T* o = out + b * t.out[0];
    for (std::int64_t i = 0; i < t.m; ++i) {
      const T* li = l + i * t.lhs[1];
      T* oi = o + i * t.out[1];
      std::int64_t j = 0;
      for (; j + kColumns <= t.n; j += kColumns) {
        T acc[kColumns] = {};
        const T* rj = r + j * rs;
        for (std::int64_t q = 0; q < t.k; ++q) {
          const T x = li[q * t.lhs[2]];
          const T* rq = rj + q * t.rhs[1];
          for (std::int64_t c = 0; c < kColumns; ++c) acc[c] = multiply_add(acc[c], x, rq[c * rs]);
        }
        for (std::int64_t c = 0; c < kColumns; ++c) oi[(j + c) * t.out[2]] = acc[c];
      }
      for (; j < t.n; ++j) {
        T acc = T(0);
        for (std::int64_t q = 0; q < t.k; ++q) acc = multiply_add(acc, li[q * t.lhs[2]], r[q * t.rhs[1] + j * rs]);
        oi[j * t.out[2]] = acc;
      }
    }
  }
}

}  // namespace

bool match_tiny(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims, const TensorView& out,
                std::int64_t max_work, TinyContraction& t) noexcept {
  if (dims.lhs_batch.size() > 1 || dims.lhs_contract.size() > 1) return false;
  std::int64_t lhs_free = -1, rhs_free = -1;
  if (!single_free_axis(lhs, dims.lhs_batch, dims.lhs_contract, lhs_free) ||
      !single_free_axis(rhs, dims.rhs_batch, dims.rhs_contract, rhs_free)) {
    return false;
  }
  std::int64_t unused = 0;
  axis_of(lhs, dims.lhs_batch.empty() ? -1 : dims.lhs_batch[0], t.batch, t.lhs[0]);
  axis_of(rhs, dims.rhs_batch.empty() ? -1 : dims.rhs_batch[0], unused, t.rhs[0]);
  axis_of(lhs, lhs_free, t.m, t.lhs[1]);
  axis_of(lhs, dims.lhs_contract.empty() ? -1 : dims.lhs_contract[0], t.k, t.lhs[2]);
  axis_of(rhs, dims.rhs_contract.empty() ? -1 : dims.rhs_contract[0], unused, t.rhs[1]);
  axis_of(rhs, rhs_free, t.n, t.rhs[2]);
  // Output axes: batch, lhs free, rhs free (those that exist).
  std::int64_t axis = 0;
  for (int g = 0; g < 3; ++g) {
    const bool present = g == 0 ? !dims.lhs_batch.empty() : g == 1 ? lhs_free >= 0 : rhs_free >= 0;
    t.out[g] = present ? out.strides[static_cast<std::size_t>(axis++)] : 0;
  }
  // Extents are validated non-negative; a zero extent is not tiny work
  // worth special-casing (the planner handles empty and zero-fill).
  if (t.batch <= 0 || t.m <= 0 || t.n <= 0 || t.k <= 0) return false;
  if (t.batch > max_work || t.m > max_work || t.n > max_work || t.k > max_work) return false;
  return t.batch * t.m <= max_work && t.batch * t.m * t.n <= max_work && t.batch * t.m * t.n * t.k <= max_work;
}

void run_tiny(DType dtype, const TinyContraction& t, const void* lhs, const void* rhs, void* out) noexcept {
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (!std::is_same_v<T, bool>) {
      run_tiny_typed<T>(t, static_cast<const T*>(lhs), static_cast<const T*>(rhs), static_cast<T*>(out));
    }
  });
}

}  // namespace tenferro::cpu::internal
