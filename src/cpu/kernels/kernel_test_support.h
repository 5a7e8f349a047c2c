// Test support for the CPU kernels: random tensors in every layout the
// kernels must handle, element access by multi-index (an independent scalar
// reference), dtype lists, thread contexts and a numpy bridge. Written so the
// provider conformance suite can reuse it with other kernel tables.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tenferro/cpu/kernels/arena_parallel_context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu::testing {

inline constexpr DType kAllDTypes[] = {DType::kBool,    DType::kInt32,     DType::kInt64,     DType::kFloat32,
                                       DType::kFloat64, DType::kComplex64, DType::kComplex128};

/// Layouts every kernel test covers for its operands.
enum class Layout {
  kContiguous,  ///< row-major dense
  kColMajor,    ///< column-major dense
  kTransposed,  ///< a reversed-axes view of a row-major tensor
  kSliced,      ///< every other element of a larger tensor, offset by one
  kBroadcast,   ///< the first axis with extent > 1 has stride 0
};
inline constexpr Layout kAllLayouts[] = {Layout::kContiguous, Layout::kColMajor, Layout::kTransposed, Layout::kSliced,
                                         Layout::kBroadcast};
/// The input layouts of the elementwise, indexing and reduction sweeps (row-major,
/// transposed, sliced, broadcast).
inline constexpr Layout kSweepInputLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kSliced,
                                                Layout::kBroadcast};
/// Layouts an output may have (no broadcast).
inline constexpr Layout kOutputLayouts[] = {Layout::kContiguous, Layout::kColMajor, Layout::kTransposed,
                                            Layout::kSliced};

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kColMajor:
      return "col_major";
    case Layout::kTransposed:
      return "transposed";
    case Layout::kSliced:
      return "sliced";
    case Layout::kBroadcast:
      return "broadcast";
  }
  return "?";
}

/// A deterministic random value of T (small integers, reals in [-2, 2]).
template <class T>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, bool>) {
    return (rng() & 1) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::int64_t>(rng() % 101) - 50);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(std::uniform_real_distribution<double>(-2.0, 2.0)(rng));
  } else {
    using R = typename T::value_type;
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    const double re = u(rng);
    return T(static_cast<R>(re), static_cast<R>(u(rng)));
  }
}

/// Fills every element of `t` (through its strides) with random values.
inline void fill_random(const Tensor& t, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  visit_dtype(t.dtype(), [&]<class T>(T) {
    const std::int64_t n = t.numel();
    const auto rank = static_cast<std::size_t>(t.rank());
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off = 0;
      for (std::size_t d = 0; d < rank; ++d) off += index[d] * t.strides()[d];
      static_cast<T*>(t.data())[off] = random_value<T>(rng);
      for (std::size_t d = rank; d-- > 0;) {
        if (++index[d] < t.shape()[d]) break;
        index[d] = 0;
      }
    }
  });
}

/// A tensor of `shape` and `dtype` with layout `layout`, filled with random
/// values (for kBroadcast, the broadcast axis repeats its values).
inline Tensor make_tensor(IntArrayRef shape, DType dtype, Layout layout, std::uint64_t seed = 1) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  Tensor t;
  switch (layout) {
    case Layout::kContiguous:
      t = *Tensor::empty(shape, dtype);
      break;
    case Layout::kColMajor:
      t = *Tensor::empty(shape, dtype, MemoryOrder::kColMajor);
      break;
    case Layout::kTransposed: {
      std::vector<std::int64_t> reversed(shape.begin(), shape.end()), perm;
      std::reverse(reversed.begin(), reversed.end());
      for (std::int64_t a = rank; a-- > 0;) perm.push_back(a);
      t = *Tensor::empty(reversed, dtype)->permute(perm);
      break;
    }
    case Layout::kSliced: {
      std::vector<std::int64_t> big;
      for (std::int64_t s : shape) big.push_back(2 * s + 1);
      t = *Tensor::empty(big, dtype);
      for (std::int64_t a = 0; a < rank; ++a) t = *t.slice(a, 1, 2 * shape[static_cast<std::size_t>(a)] + 1, 2);
      break;
    }
    case Layout::kBroadcast: {
      std::vector<std::int64_t> small(shape.begin(), shape.end());
      for (auto& s : small) {
        if (s > 1) {
          s = 1;
          break;
        }
      }
      t = *Tensor::empty(small, dtype)->broadcast_to(shape);
      break;
    }
  }
  fill_random(t, seed);
  return t;
}

/// Element `index` of `t`, read through its strides.
template <class T>
T element(const Tensor& t, std::span<const std::int64_t> index) {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
  return static_cast<const T*>(t.data())[off];
}

/// Row-major multi-index of flat position `flat` in `shape`.
inline std::vector<std::int64_t> unravel(std::int64_t flat, std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return index;
}

/// T, except bool is stored as unsigned char (std::vector<bool> has no data()).
template <class T>
using Stored = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

/// The elements of `t` in row-major order, read through its strides (the
/// independent reference: no kernel involved).
template <class T>
std::vector<Stored<T>> values_of(const Tensor& t) {
  std::vector<Stored<T>> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<Stored<T>>(element<T>(t, unravel(static_cast<std::int64_t>(i), t.shape())));
  }
  return out;
}

/// The bytes of every element of `t` in row-major order (exact comparison
/// for every dtype, NaN payloads included).
inline std::vector<unsigned char> row_major_bytes(const Tensor& t) {
  std::vector<unsigned char> out;
  visit_dtype(t.dtype(), [&]<class T>(T) {
    const auto v = values_of<T>(t);
    out.resize(v.size() * sizeof(Stored<T>));
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  });
  return out;
}

/// Equality for tests: exact for bool/integers, relative tolerance for
/// inexact types (NaNs equal each other).
template <class T>
bool near(T a, T b, double rtol) {
  if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) {
    return a == b;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::abs(static_cast<double>(a) - static_cast<double>(b)) <= rtol * (1.0 + std::abs(static_cast<double>(b)));
  } else {
    return near(a.real(), b.real(), rtol) && near(a.imag(), b.imag(), rtol);
  }
}

/// Default tolerance for dtype T's results.
template <class T>
double default_rtol() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>) return 2e-5;
  return 1e-12;
}

/// Element `index` of `t` (any dtype) as a complex<double>.
inline std::complex<double> value_at(const Tensor& t, std::span<const std::int64_t> index) {
  std::complex<double> v;
  visit_dtype(t.dtype(), [&]<class T>(T) {
    const T x = element<T>(t, index);
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      v = {static_cast<double>(x.real()), static_cast<double>(x.imag())};
    } else {
      v = static_cast<double>(x);
    }
  });
  return v;
}

/// Whether `got` (a result of dtype `dtype`) matches the reference `want`:
/// exact for bool and integers, |got - want| <= rtol (1 + |want|) otherwise,
/// with rtol from the precision of `dtype`. NaNs match NaNs, infinities
/// match themselves.
inline bool matches(std::complex<double> got, std::complex<double> want, DType dtype, double rtol = 0) {
  if (!is_inexact(dtype)) return got == want;
  if (rtol == 0) rtol = real_dtype(dtype) == DType::kFloat32 ? 3e-6 : 1e-13;
  const double scale = std::isfinite(std::abs(want)) ? 1.0 + std::abs(want) : 1.0;
  auto part = [&](double g, double w) {
    if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
    if (std::isinf(w) || std::isinf(g)) return g == w;
    return std::abs(g - w) <= rtol * scale;
  };
  return part(got.real(), want.real()) && part(got.imag(), want.imag());
}

/// A sequential context and a 2-thread arena, shared by a test binary.
inline const ParallelContext& sequential_context() {
  static const SequentialContext ctx;
  return ctx;
}
inline const ParallelContext& two_thread_context() {
  static const ArenaParallelContext ctx(2);
  return ctx;
}

/// Runs `script` with numpy's python (TENFERRO_REFERENCE_PYTHON) and returns
/// its stdout; empty when python is unavailable (callers GTEST_SKIP()).
inline std::string run_python(const std::string& script) {
  const std::string python = TENFERRO_REFERENCE_PYTHON;
  if (python.empty()) return {};
  char path[] = "/tmp/tenferro_kernel_ref_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  {
    std::ofstream f(path);
    f << script;
  }
  std::string out;
  if (FILE* p = popen((python + " " + path + " 2>&1").c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  std::remove(path);
  return out;
}

/// The elements of `t` in row-major order as a python list literal of
/// floats/complex/ints (enough digits to round-trip).
inline std::string python_list(const Tensor& t) {
  std::ostringstream s;
  s.precision(17);
  s << "[";
  visit_dtype(t.dtype(), [&]<class T>(T) {
    const auto v = values_of<T>(t);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) s << ",";
      if constexpr (std::is_same_v<T, bool>) {
        s << (v[i] ? "True" : "False");
      } else if constexpr (std::is_integral_v<T>) {
        s << static_cast<std::int64_t>(v[i]);
      } else if constexpr (std::is_floating_point_v<T>) {
        s << "float('" << static_cast<double>(v[i]) << "')";
      } else {
        s << "complex(" << static_cast<double>(v[i].real()) << "," << static_cast<double>(v[i].imag()) << ")";
      }
    }
  });
  s << "]";
  return s.str();
}

/// numpy's name of a dtype.
inline std::string numpy_dtype(DType d) {
  switch (d) {
    case DType::kBool:
      return "np.bool_";
    case DType::kInt32:
      return "np.int32";
    case DType::kInt64:
      return "np.int64";
    case DType::kFloat32:
      return "np.float32";
    case DType::kFloat64:
      return "np.float64";
    case DType::kComplex64:
      return "np.complex64";
    case DType::kComplex128:
      return "np.complex128";
  }
  return "";
}

/// Parses whitespace-separated numbers printed by numpy (reals; complex as
/// two numbers).
inline std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> v;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) v.push_back(std::strtod(tok.c_str(), nullptr));
  return v;
}

}  // namespace tenferro::cpu::testing
