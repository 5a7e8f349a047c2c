// A sample of kernel results checked against numpy (TENFERRO_REFERENCE_PYTHON),
// an implementation independent of this repository: elementwise math,
// reductions, arg-reductions and indexing, on non-contiguous inputs. Skips
// when python or numpy is unavailable.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cpu/kernels/kernel_table.h"
#include "cpu/kernels/kernel_test_support.h"
#include "tenferro/cpu/kernels/along_axis.h"
#include "tenferro/cpu/kernels/elementwise.h"

namespace tenferro::cpu {
namespace {

using testing::Layout;
using testing::make_tensor;

// Collects named numpy expressions, runs them in one python process and
// hands back each result as a flat list of doubles (complex as re, im).
class NumpyBatch {
 public:
  /// Declares `name = np.array(values, dtype).reshape(shape)` for `t`.
  void input(const std::string& name, const Tensor& t) {
    std::string shape = "(";
    for (std::int64_t s : t.shape()) shape += std::to_string(s) + ",";
    shape += ")";
    script_ << name << " = np.array(" << testing::python_list(t) << ", dtype=" << testing::numpy_dtype(t.dtype())
            << ").reshape(" << shape << ")\n";
  }
  /// Records the value of `expression` under `name`.
  void result(const std::string& name, const std::string& expression) {
    script_ << "emit('" << name << "', " << expression << ")\n";
  }
  /// Runs the script; false when python or numpy is missing.
  bool run() {
    const std::string prelude =
        "import sys\ntry:\n    import numpy as np\nexcept ImportError:\n    print('NO_NUMPY'); sys.exit(0)\n"
        "def emit(name, v):\n    a = np.asarray(v).ravel()\n"
        "    if np.iscomplexobj(a): a = np.stack([a.real, a.imag], axis=-1).ravel()\n"
        "    print(name, ' '.join(repr(float(x)) for x in a))\n";
    const std::string out = testing::run_python(prelude + script_.str());
    if (out.empty() || out.find("NO_NUMPY") != std::string::npos) return false;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      std::string rest((std::istreambuf_iterator<char>(words)), std::istreambuf_iterator<char>());
      results_[name] = testing::parse_numbers(rest);
    }
    return true;
  }
  const std::vector<double>& operator[](const std::string& name) { return results_[name]; }
  bool has(const std::string& name) const { return results_.count(name) != 0; }

 private:
  std::ostringstream script_;
  std::map<std::string, std::vector<double>> results_;
};

// The elements of `t` as doubles in row-major order (complex as re, im).
std::vector<double> flat_values(const Tensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::complex<double> c = testing::value_at(t, testing::unravel(i, t.shape()));
    v.push_back(c.real());
    if (is_complex(t.dtype())) v.push_back(c.imag());
  }
  return v;
}

void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                  double rtol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * (1 + std::abs(want[i]))) << what << " element " << i;
    }
  }
}

TEST(NumpyReference, KernelsAgreeWithNumpy) {
  const ParallelContext& ctx = testing::two_thread_context();
  const testing::KernelTable& k = testing::kNativeKernels;
  NumpyBatch np;
  struct Check {
    std::string name;
    Tensor got;
    double rtol;
  };
  std::vector<Check> checks;

  // Elementwise on transposed / broadcast inputs.
  Tensor x = make_tensor({3, 4}, DType::kFloat64, Layout::kTransposed, 101);
  Tensor y = make_tensor({3, 4}, DType::kFloat64, Layout::kBroadcast, 102);
  Tensor z = make_tensor({3, 4}, DType::kComplex128, Layout::kSliced, 103);
  Tensor w = make_tensor({3, 4}, DType::kComplex128, Layout::kTransposed, 104);
  np.input("x", x);
  np.input("y", y);
  np.input("z", z);
  np.input("w", w);
  const std::pair<UnaryOp, std::string> unary_cases[] = {
      {UnaryOp::kExp, "np.exp"},   {UnaryOp::kLog1p, "np.log1p"}, {UnaryOp::kExpm1, "np.expm1"},
      {UnaryOp::kTanh, "np.tanh"}, {UnaryOp::kSign, "np.sign"},   {UnaryOp::kSqrt, "np.sqrt"},
      {UnaryOp::kTan, "np.tan"},   {UnaryOp::kAbs, "np.abs"},
  };
  for (const auto& [op, fn] : unary_cases) {
    for (const auto& [name, t] : {std::pair<std::string, const Tensor*>{"x", &x}, {"z", &z}}) {
      if (op == UnaryOp::kSign && name == "z") continue;  // numpy's complex sign differs (x/|x| here)
      Tensor out = *Tensor::empty(t->shape(), *result_dtype(op, t->dtype()));
      ASSERT_TRUE(k.unary(op, t->view(), out.view(), ctx, nullptr).ok());
      const std::string id = std::string(to_string(op)) + "_" + name;
      np.result(id, fn + "(" + name + ")");
      checks.push_back({id, out, 1e-12});
    }
  }
  const std::tuple<BinaryOp, std::string, const Tensor*, const Tensor*> binary_cases[] = {
      {BinaryOp::kDiv, "x / y", &x, &y},
      {BinaryOp::kPow, "np.power(np.abs(x), y)", nullptr, &y},
      {BinaryOp::kAtan2, "np.arctan2(x, y)", &x, &y},
      {BinaryOp::kMax, "np.maximum(x, y)", &x, &y},
      {BinaryOp::kDiv, "z / w", &z, &w},
      {BinaryOp::kMul, "z * w", &z, &w},
  };
  Tensor abs_x = *Tensor::empty({3, 4}, DType::kFloat64);
  ASSERT_TRUE(k.unary(UnaryOp::kAbs, x.view(), abs_x.view(), ctx, nullptr).ok());
  int id = 0;
  for (const auto& [op, expr, a, b] : binary_cases) {
    const Tensor& lhs = a != nullptr ? *a : abs_x;
    Tensor out = *Tensor::empty({3, 4}, *result_dtype(op, lhs.dtype()));
    ASSERT_TRUE(k.binary(op, lhs.view(), b->view(), out.view(), ctx, nullptr).ok());
    const std::string name = "binary" + std::to_string(id++);
    np.result(name, expr);
    checks.push_back({name, out, 1e-12});
  }

  // Reductions over axis sets of a transposed 3-D input.
  Tensor r = make_tensor({3, 4, 5}, DType::kFloat64, Layout::kTransposed, 105);
  Tensor rc = make_tensor({3, 4, 5}, DType::kComplex128, Layout::kSliced, 106);
  np.input("r", r);
  np.input("rc", rc);
  auto reduce_case = [&](ReduceOp op, const Tensor& in, std::vector<std::int64_t> axes, const std::string& expr) {
    std::vector<std::int64_t> shape;
    for (std::int64_t d = 0; d < in.rank(); ++d) {
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) shape.push_back(in.shape()[d]);
    }
    Tensor out = *Tensor::empty(shape, in.dtype());
    ASSERT_TRUE(k.reduce(op, in.view(), axes, out.view(), ctx, nullptr).ok());
    const std::string name = "reduce" + std::to_string(id++);
    np.result(name, expr);
    checks.push_back({name, out, 1e-12});
  };
  reduce_case(ReduceOp::kSum, r, {0, 2}, "r.sum(axis=(0, 2))");
  reduce_case(ReduceOp::kSum, r, {1}, "r.sum(axis=1)");
  reduce_case(ReduceOp::kMax, r, {2, 0}, "r.max(axis=(0, 2))");
  reduce_case(ReduceOp::kMin, r, {0, 1, 2}, "r.min()");
  reduce_case(ReduceOp::kProd, rc, {1}, "rc.prod(axis=1)");
  reduce_case(ReduceOp::kSum, rc, {}, "rc");
  for (std::int64_t axis = 0; axis < 3; ++axis) {
    for (ArgReduceOp op : {ArgReduceOp::kArgmax, ArgReduceOp::kArgmin}) {
      std::vector<std::int64_t> shape = {3, 4, 5};
      shape.erase(shape.begin() + axis);
      Tensor out = *Tensor::empty(shape, DType::kInt64);
      ASSERT_TRUE(k.arg_reduce(op, r.view(), axis, out.view(), ctx, nullptr).ok());
      const std::string name = "arg" + std::to_string(id++);
      np.result(name, std::string("np.") + std::string(to_string(op)) + "(r, axis=" + std::to_string(axis) + ")");
      checks.push_back({name, out, 0});
    }
  }

  // Indexing.
  Tensor g = make_tensor({4, 6, 3}, DType::kFloat64, Layout::kTransposed, 107);
  Tensor idx = *Tensor::from_values<std::int64_t>({5, 0, 2, 2, 1, 5}, {2, 3});
  np.input("g", g);
  np.input("idx", idx);
  {
    Tensor out = *Tensor::empty({4, 2, 3, 3}, DType::kFloat64);
    ASSERT_TRUE(k.gather(g.view(), idx.view(), take_dimensions(3, 2, 1), out.view(), ctx, nullptr).ok());
    np.result("take", "np.take(g, idx, axis=1)");
    checks.push_back({"take", out, 0});
  }
  {
    Tensor upd = make_tensor({4, 2, 3, 3}, DType::kFloat64, Layout::kContiguous, 108);
    np.input("upd", upd);
    Tensor out = *Tensor::empty({4, 6, 3}, DType::kFloat64);
    ASSERT_TRUE(k.scatter(g.view(), idx.view(), upd.view(), take_scatter_dimensions(3, 2, 1), ScatterCombine::kAdd,
                          out.view(), ctx, nullptr)
                    .ok());
    np.result("scatter_add", "(lambda t: (np.add.at(t, (slice(None), idx), upd), t)[1])(g.copy())");
    checks.push_back({"scatter_add", out, 1e-12});
  }
  // General gather/scatter: fancy indexing on axes 0 and 2 with index pairs
  // along indices axis 1 (g[i0, :, i2]); out-of-range entries are clamped.
  Tensor pairs = *Tensor::from_values<std::int32_t>({3, 2, 0, 0, 1, 2, 3, 1, 2, 0}, {5, 2});
  np.input("pairs", pairs);
  {
    Tensor out = *Tensor::empty({5, 6}, DType::kFloat64);
    ASSERT_TRUE(
        k.gather(g.view(), pairs.view(), GatherDimensions{{1}, {0, 2}, {0, 2}, 1}, out.view(), ctx, nullptr).ok());
    np.result("fancy", "g[pairs[:, 0], :, pairs[:, 1]]");
    checks.push_back({"fancy", out, 0});
  }
  {
    // Point gather g[i0, i1, i2] with the index vectors along indices axis 0.
    Tensor points = *Tensor::from_values<std::int64_t>({0, 3, 1, 2, 5, 0, 4, 1, 2, 0, 1, 2}, {3, 4});
    np.input("points", points);
    Tensor out = *Tensor::empty({4}, DType::kFloat64);
    ASSERT_TRUE(
        k.gather(g.view(), points.view(), GatherDimensions{{}, {0, 1, 2}, {0, 1, 2}, 0}, out.view(), ctx, nullptr)
            .ok());
    np.result("points", "g[tuple(points)]");
    checks.push_back({"points", out, 0});
  }
  // Windows of extent (2, 3, 3) at starts (s0, s1), clamped into range.
  Tensor starts = *Tensor::from_values<std::int64_t>({1, 2, 5, -1, 3, 3}, {3, 2});
  np.input("starts", starts);
  {
    Tensor out = *Tensor::empty({3, 2, 3, 3}, DType::kFloat64);
    ASSERT_TRUE(
        k.gather(g.view(), starts.view(), GatherDimensions{{1, 2, 3}, {}, {0, 1}, 1}, out.view(), ctx, nullptr).ok());
    np.result("windows",
              "np.stack([g[a:a + 2, b:b + 3, :] for a, b in zip(np.clip(starts[:, 0], 0, 2), np.clip(starts[:, 1], 0, "
              "3))])");
    checks.push_back({"windows", out, 0});
  }
  {
    // np.add.at with index pairs (duplicates (0, 0) and (3, ...) accumulate).
    Tensor upd = make_tensor({5, 6}, DType::kFloat64, Layout::kTransposed, 109);
    Tensor in_range = *Tensor::from_values<std::int32_t>({3, 2, 0, 0, 1, 2, 3, 1, 0, 0}, {5, 2});
    np.input("fupd", upd);
    np.input("fpairs", in_range);
    Tensor out = *Tensor::empty({4, 6, 3}, DType::kFloat64);
    ASSERT_TRUE(k.scatter(g.view(), in_range.view(), upd.view(), ScatterDimensions{{1}, {0, 2}, {0, 2}, 1},
                          ScatterCombine::kAdd, out.view(), ctx, nullptr)
                    .ok());
    np.result("fancy_add",
              "(lambda t: (np.add.at(t, (fpairs[:, 0], slice(None), fpairs[:, 1]), fupd), t)[1])(g.copy())");
    checks.push_back({"fancy_add", out, 1e-12});
    // Replace with distinct pairs: t[i0, :, i2] = u.
    Tensor distinct = *Tensor::from_values<std::int32_t>({3, 2, 0, 0, 1, 2, 3, 1, 2, 0}, {5, 2});
    Tensor replaced = *Tensor::empty({4, 6, 3}, DType::kFloat64);
    ASSERT_TRUE(k.scatter(g.view(), distinct.view(), upd.view(), ScatterDimensions{{1}, {0, 2}, {0, 2}, 1},
                          ScatterCombine::kReplace, replaced.view(), ctx, nullptr)
                    .ok());
    np.result("fancy_set",
              "(lambda t: (t.__setitem__((pairs[:, 0], slice(None), pairs[:, 1]), fupd), t)[1])(g.copy())");
    checks.push_back({"fancy_set", replaced, 0});
  }
  {
    // Window scatter-add; windows that do not fit (start (5, -1), (3, 3))
    // are skipped, not clamped.
    Tensor upd = make_tensor({3, 2, 3, 3}, DType::kFloat64, Layout::kContiguous, 110);
    np.input("wupd", upd);
    Tensor out = *Tensor::empty({4, 6, 3}, DType::kFloat64);
    ASSERT_TRUE(k.scatter(g.view(), starts.view(), upd.view(), ScatterDimensions{{1, 2, 3}, {}, {0, 1}, 1},
                          ScatterCombine::kAdd, out.view(), ctx, nullptr)
                    .ok());
    np.result("window_add",
              "(lambda t: ([t.__setitem__((slice(a, a + 2), slice(b, b + 3)), t[a:a + 2, b:b + 3] + w) "
              "for (a, b), w in zip(starts, wupd) if 0 <= a <= 2 and 0 <= b <= 3], t)[1])(g.copy())");
    checks.push_back({"window_add", out, 1e-12});
  }
  {
    Tensor out = *Tensor::empty({4, 6, 3}, DType::kFloat64);
    ASSERT_TRUE(k.reverse(g.view(), {0, 2}, out.view(), ctx, nullptr).ok());
    np.result("flip", "np.flip(g, axis=(0, 2))");
    checks.push_back({"flip", out, 0});
  }
  {
    Tensor value = *Tensor::scalar(-7.5);
    Tensor out = *Tensor::empty({4 + 1 + 2 + 3, 6 + 0 + 1 + 5 * 1, 3 + 2 + 0 + 2 * 2}, DType::kFloat64);
    ASSERT_TRUE(k.pad(g.view(), value.view(), {1, 0, 2}, {2, 1, 0}, {1, 1, 2}, out.view(), ctx, nullptr).ok());
    np.result("pad",
              "(lambda t: (t.__setitem__((slice(1, 8, 2), slice(0, 11, 2), slice(2, 9, 3)), g), t)[1])"
              "(np.full((10, 12, 9), -7.5))");
    checks.push_back({"pad", out, 0});
  }
  {
    Tensor out = *Tensor::empty({4, 2, 2}, DType::kFloat64);
    ASSERT_TRUE(k.dynamic_slice(g.view(), {3, -2, 1}, out.view(), ctx, nullptr).ok());
    np.result("dynamic_slice", "g[0:4, 0:2, 1:3]");  // starts clamped to (0, 0, 1)
    checks.push_back({"dynamic_slice", out, 0});
  }

  if (!np.run()) GTEST_SKIP() << "numpy (" << TENFERRO_REFERENCE_PYTHON << ") is not available";
  for (const Check& c : checks) {
    ASSERT_TRUE(np.has(c.name)) << c.name << ": numpy printed no result";
    expect_close(c.name, flat_values(c.got), np[c.name], c.rtol);
  }
}

// A row-major tensor of dtype `dtype` holding `values` converted to it.
Tensor tensor_of(DType dtype, const std::vector<double>& values, IntArrayRef shape) {
  return visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const std::vector<T> converted(values.begin(), values.end());
      return *Tensor::from_values<T>(std::span<const T>(converted), shape);
    } else {
      return Tensor();
    }
  });
}

// Rounding, classification, modulo and bitwise ops on inputs chosen for
// their edge cases: exact halves (round half to even), signed zeros and
// infinities, divisors and dividends of both signs, and shift amounts across
// the range numpy defines (numpy leaves shifts by >= the bit width to the
// platform; the conformance suite checks those against the reference).
TEST(NumpyReference, RoundingModuloAndBitwiseAgreeWithNumpy) {
  const ParallelContext& ctx = testing::two_thread_context();
  const testing::KernelTable& k = testing::kNativeKernels;
  NumpyBatch np;
  std::vector<std::pair<std::string, Tensor>> checks;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> edges = {-3.5,  -2.5, -1.5,  -0.5, -0.0, 0.5, 1.5, 2.5,  3.5,    0.49999999999999994,
                                     -7.25, 7.75, 1e300, inf,  -inf, nan, 6.0, -5.0, 1e-310, 4503599627370495.5};
  for (DType d : {DType::kFloat64, DType::kFloat32}) {
    const Tensor x = tensor_of(d, edges, {4, 5});
    const std::string xs = d == DType::kFloat64 ? "f64" : "f32";
    np.input(xs, x);
    const std::pair<UnaryOp, std::string> cases[] = {{UnaryOp::kFloor, "np.floor"},
                                                     {UnaryOp::kCeil, "np.ceil"},
                                                     {UnaryOp::kRound, "np.round"},
                                                     {UnaryOp::kIsFinite, "np.isfinite"},
                                                     {UnaryOp::kIsNan, "np.isnan"}};
    for (const auto& [op, fn] : cases) {
      Tensor out = *Tensor::empty({4, 5}, *result_dtype(op, d));
      ASSERT_TRUE(k.unary(op, x.view(), out.view(), ctx, nullptr).ok()) << to_string(op);
      const std::string id = std::string(to_string(op)) + "_" + xs;
      np.result(id, fn + "(" + xs + ")");
      checks.emplace_back(id, out);
    }
  }
  {
    const std::vector<double> a = {7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 5.0, -5.0, 1.0, -1.0, inf, 3.0};
    const std::vector<double> b = {2.0, 2.0, -2.0, -2.0, -3.0, 3.0, 2.5, 2.5, inf, inf, 2.0, 0.0};
    const Tensor ta = tensor_of(DType::kFloat64, a, {12});
    const Tensor tb = tensor_of(DType::kFloat64, b, {12});
    np.input("fa", ta);
    np.input("fb", tb);
    for (const auto& [op, fn] :
         {std::pair<BinaryOp, std::string>{BinaryOp::kRemainder, "np.remainder"}, {BinaryOp::kFmod, "np.fmod"}}) {
      Tensor out = *Tensor::empty({12}, DType::kFloat64);
      ASSERT_TRUE(k.binary(op, ta.view(), tb.view(), out.view(), ctx, nullptr).ok());
      const std::string id = std::string(to_string(op)) + "_f64";
      np.result(id, fn + "(fa, fb)");
      checks.emplace_back(id, out);
      // Zeros compare equal whatever their sign; numpy's sign of a zero
      // result is checked on its own.
      const std::string zid = id + "_zero_sign";
      np.result(zid, "np.signbit(" + fn + "(fa, fb))");
      Tensor sign = *Tensor::empty({12}, DType::kBool);
      for (std::int64_t i = 0; i < 12; ++i)
        static_cast<bool*>(sign.data())[i] = std::signbit(static_cast<const double*>(out.data())[i]);
      checks.emplace_back(zid, sign);
    }
  }
  for (DType d : {DType::kInt32, DType::kInt64}) {
    const std::string ds = d == DType::kInt32 ? "i32" : "i64";
    const Tensor a = tensor_of(d, {7, -7, 7, -7, 0, 13, -13, 1000003, -1, 6, 255, -256}, {12});
    const Tensor b = tensor_of(d, {3, 3, -3, -3, 5, 1, -1, 97, 7, -4, 9, -17}, {12});
    const Tensor s = tensor_of(d, {0, 1, 3, 7, 12, 2, 5, 9, 30, 4, 1, 6}, {12});
    np.input("a" + ds, a);
    np.input("b" + ds, b);
    np.input("s" + ds, s);
    const std::tuple<BinaryOp, std::string, const Tensor*> cases[] = {
        {BinaryOp::kRemainder, "np.remainder(a{0}, b{0})", &b},
        {BinaryOp::kFmod, "np.fmod(a{0}, b{0})", &b},
        {BinaryOp::kAnd, "np.bitwise_and(a{0}, b{0})", &b},
        {BinaryOp::kOr, "np.bitwise_or(a{0}, b{0})", &b},
        {BinaryOp::kXor, "np.bitwise_xor(a{0}, b{0})", &b},
        {BinaryOp::kShiftLeft, "np.left_shift(a{0}, s{0})", &s},
        {BinaryOp::kShiftRightArithmetic, "np.right_shift(a{0}, s{0})", &s},
        {BinaryOp::kShiftRightLogical,
         "np.right_shift(a{0}.view(np.uint{1}), s{0}.astype(np.uint{1})).view(a{0}.dtype)", &s},
    };
    for (const auto& [op, pattern, rhs] : cases) {
      Tensor out = *Tensor::empty({12}, d);
      ASSERT_TRUE(k.binary(op, a.view(), rhs->view(), out.view(), ctx, nullptr).ok()) << to_string(op);
      const std::string id = std::string(to_string(op)) + "_" + ds;
      np.result(id, fmt::format(fmt::runtime(pattern), ds, d == DType::kInt32 ? 32 : 64));
      checks.emplace_back(id, out);
    }
    Tensor inverted = *Tensor::empty({12}, d);
    ASSERT_TRUE(k.unary(UnaryOp::kNot, a.view(), inverted.view(), ctx, nullptr).ok());
    np.result("not_" + ds, "np.invert(a" + ds + ")");
    checks.emplace_back("not_" + ds, inverted);
  }

  if (!np.run()) GTEST_SKIP() << "numpy (" << TENFERRO_REFERENCE_PYTHON << ") is not available";
  for (const auto& [name, got] : checks) {
    ASSERT_TRUE(np.has(name)) << name << ": numpy printed no result";
    expect_close(name, flat_values(got), np[name], 0);
  }
}

// cumsum / cumprod (every flag), stable sort / argsort (NaNs, ties and
// signed zeros; descending as numpy's stable argsort of -x, which keeps
// NaNs last) and clamp, on transposed inputs.
TEST(NumpyReference, AlongAxisAndClampAgreeWithNumpy) {
  const ParallelContext& ctx = testing::two_thread_context();
  NumpyBatch np;
  std::vector<std::pair<std::string, Tensor>> checks;
  const Tensor c = make_tensor({3, 4, 5}, DType::kFloat64, Layout::kTransposed, 801);
  np.input("c", c);
  for (std::int64_t axis = 0; axis < 3; ++axis) {
    for (CumulativeOp op : {CumulativeOp::kSum, CumulativeOp::kProd}) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool reverse = (flags & 1) != 0, exclusive = (flags & 2) != 0;
        Tensor out = *Tensor::empty({3, 4, 5}, DType::kFloat64);
        ASSERT_TRUE(cumulative(op, c.view(), axis, reverse, exclusive, out.view(), ctx).ok());
        const std::string fn = op == CumulativeOp::kSum ? "np.cumsum" : "np.cumprod";
        const std::string identity = op == CumulativeOp::kSum ? "np.zeros_like" : "np.ones_like";
        // Exclusive: the inclusive scan shifted one step along the axis.
        const std::string src = reverse ? fmt::format("np.flip(c, {})", axis) : "c";
        std::string scan = fmt::format("{}({}, axis={})", fn, src, axis);
        if (exclusive) {
          scan =
              fmt::format("np.concatenate([{1}(np.take({2}, [0], axis={0})), np.delete({3}, -1, axis={0})], axis={0})",
                          axis, identity, src, scan);
        }
        const std::string id = fmt::format("cum{}_{}_{}", static_cast<int>(op), axis, flags);
        np.result(id, reverse ? fmt::format("np.flip({}, {})", scan, axis) : scan);
        checks.emplace_back(id, out);
      }
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor s = *Tensor::from_values<double>({3, nan, 1, 3, -0.0, 0.0, nan, 1, 2, -1, 2, nan, 5, 5, -2, 0}, {4, 4});
  const Tensor st = *s.permute({1, 0});
  np.input("st", st);
  for (std::int64_t axis = 0; axis < 2; ++axis) {
    for (bool descending : {false, true}) {
      const std::string order = fmt::format("np.argsort({}st, axis={}, kind='stable')", descending ? "-" : "", axis);
      Tensor values = *Tensor::empty({4, 4}, DType::kFloat64);
      Tensor indices = *Tensor::empty({4, 4}, DType::kInt64);
      ASSERT_TRUE(sort(SortResult::kValues, st.view(), axis, descending, values.view(), ctx).ok());
      ASSERT_TRUE(sort(SortResult::kIndices, st.view(), axis, descending, indices.view(), ctx).ok());
      const std::string id = fmt::format("sort_{}_{}", axis, descending);
      np.result(id, fmt::format("np.take_along_axis(st, {}, axis={})", order, axis));
      np.result("arg" + id, order);
      checks.emplace_back(id, values);
      checks.emplace_back("arg" + id, indices);
    }
  }
  const Tensor lo = *Tensor::from_values<double>({-1, 0, nan, 2, 0, -5}, {6});
  const Tensor x = *Tensor::from_values<double>({-3, 0.5, 1, nan, 4, 7}, {6});
  const Tensor hi = *Tensor::from_values<double>({1, 1, 2, 3, -1, nan}, {6});
  np.input("lo", lo);
  np.input("x", x);
  np.input("hi", hi);
  Tensor clamped = *Tensor::empty({6}, DType::kFloat64);
  ASSERT_TRUE(clamp(lo.view(), x.view(), hi.view(), clamped.view(), ctx).ok());
  np.result("clamp", "np.minimum(np.maximum(x, lo), hi)");
  checks.emplace_back("clamp", clamped);

  if (!np.run()) GTEST_SKIP() << "numpy (" << TENFERRO_REFERENCE_PYTHON << ") is not available";
  for (const auto& [name, got] : checks) {
    ASSERT_TRUE(np.has(name)) << name << ": numpy printed no result";
    expect_close(name, flat_values(got), np[name], 1e-12);
  }
}

}  // namespace
}  // namespace tenferro::cpu
