// Test-only helpers of the fft tests: a runtime with the CPU engine and the
// fft module, random tensors of the fft dtypes (row-major or strided
// views), values as complex<double>, a naive DFT reference, and a batch of
// numpy.fft references evaluated by one python run
// (TENFERRO_REFERENCE_PYTHON).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/kernels/kernel_test_support.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/fft_cpu.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::fft::testing {

using cpu::testing::run_python;

using cd = std::complex<double>;

/// A runtime with the CPU engine (id 1, sequential, no domains) and `fft`.
inline runtime::Runtime make_runtime(std::shared_ptr<CpuFftEngine> fft) {
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions options;
  options.id = EngineId(1);
  Status s = cpu::register_cpu_engine(builder, options);
  EXPECT_TRUE(s.ok()) << s.to_string();
  builder.add_extension_module(cpu_extension_module(EngineId(1), std::move(fft)));
  Result<runtime::Runtime> rt = builder.build();
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return std::move(rt).value();
}

/// Every element of `t` (any strides) as complex<double>, row-major.
inline std::vector<cd> values_of(const Tensor& t) { return tenferro::testing::complex_values(t); }

/// A row-major tensor of `dtype` holding `values` (imaginary parts dropped
/// for real dtypes).
inline Tensor tensor_of(DType dtype, IntArrayRef shape, const std::vector<cd>& values) {
  Result<Tensor> t = tenferro::testing::from_complex_values(dtype, shape, values);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(t).value() : Tensor();
}

/// Uniform [-1, 1) values (both parts for complex dtypes).
inline Tensor random_tensor(DType dtype, IntArrayRef shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<cd> v(static_cast<std::size_t>(numel_unchecked(shape)));
  for (cd& x : v) x = cd(u(rng), u(rng));
  return tensor_of(dtype, shape, v);
}

/// A non-row-major view with `shape`: the transpose of a row-major tensor
/// with the last two axes swapped (rank >= 2), or every other element of a
/// twice-as-long one (rank 1).
inline Tensor strided_tensor(DType dtype, IntArrayRef shape, std::uint32_t seed) {
  Dims s(shape.span());
  if (s.size() >= 2) {
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    Tensor base = random_tensor(dtype, s, seed);
    return *base.transpose(static_cast<std::int64_t>(s.size()) - 1, static_cast<std::int64_t>(s.size()) - 2);
  }
  s[0] = 2 * s[0];
  Tensor base = random_tensor(dtype, s, seed);
  return *base.slice(0, 0, s[0], 2);
}

/// max |got - want| <= tol * max(1e-300, max |want|); reports the worst index.
inline void expect_close(const std::vector<cd>& got, const std::vector<cd>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, err = 0;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    const double e = std::abs(got[i] - want[i]);
    if (e > err) {
      err = e;
      worst = i;
    }
  }
  EXPECT_LE(err, tol * std::max(scale, 1e-300))
      << what << ": max |difference| " << err << " at " << worst << " (scale " << scale << ")";
}

/// Named numpy expressions over named inputs, evaluated in one python run.
/// Each result comes back flattened (row-major) with its shape.
class NumpyBatch {
 public:
  /// Makes `t` available as `name` (its dtype and values, row-major).
  void input(const std::string& name, const Tensor& t) {
    const std::vector<cd> v = values_of(t);
    std::ostringstream s;
    s.precision(17);
    s << name << " = np.array([";
    const bool complex = is_complex(t.dtype());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) s << ",";
      if (complex) {
        s << "complex(" << v[i].real() << "," << v[i].imag() << ")";
      } else {
        s << v[i].real();
      }
    }
    s << "], dtype=" << numpy_dtype(t.dtype()) << ").reshape(" << shape_tuple(t.shape()) << ")\n";
    script_ += s.str();
  }
  void result(const std::string& name, const std::string& expression) {
    script_ += "emit('" + name + "', " + expression + ")\n";
  }
  /// False when python/numpy is unavailable.
  bool run() {
    const std::string prologue =
        "import numpy as np\n"
        "def emit(name, a):\n"
        "    a = np.asarray(a)\n"
        "    print('R', name, ' '.join(str(d) for d in a.shape) if a.ndim else '-', flush=False)\n"
        "    print('V', ' '.join(repr(float(z)) for x in a.reshape(-1) for z in (complex(x).real, complex(x).imag)))\n";
    const std::string out = run_python(prologue + script_ + "print('DONE')\n");
    if (out.find("DONE") == std::string::npos) {
      if (!out.empty()) ADD_FAILURE() << "python failed:\n" << out.substr(0, 2000);
      return false;
    }
    std::istringstream lines(out);
    std::string line, name;
    while (std::getline(lines, line)) {
      std::istringstream l(line);
      std::string tag;
      l >> tag;
      if (tag == "R") {
        l >> name;
        Dims shape;
        std::string d;
        while (l >> d)
          if (d != "-") shape.push_back(std::stoll(d));
        shapes_[name] = shape;
      } else if (tag == "V") {
        std::vector<cd> v;
        double re, im;
        while (l >> re >> im) v.emplace_back(re, im);
        values_[name] = std::move(v);
      }
    }
    return true;
  }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const std::vector<cd>& operator[](const std::string& name) const { return values_.at(name); }
  const Dims& shape(const std::string& name) const { return shapes_.at(name); }

 private:
  static std::string numpy_dtype(DType d) {
    switch (d) {
      case DType::kFloat32:
        return "np.float32";
      case DType::kFloat64:
        return "np.float64";
      case DType::kComplex64:
        return "np.complex64";
      default:
        return "np.complex128";
    }
  }
  static std::string shape_tuple(IntArrayRef shape) {
    std::string s = "(";
    for (std::int64_t d : shape) s += std::to_string(d) + ",";
    return s + ")";
  }
  std::string script_;
  std::map<std::string, std::vector<cd>> values_;
  std::map<std::string, Dims> shapes_;
};

}  // namespace tenferro::fft::testing
