// A sample of CPU engine results (eager and prepared) checked against numpy
// (TENFERRO_REFERENCE_PYTHON), an implementation independent of this
// repository and of the reference evaluator: strided complex and real
// contractions, reductions, gather and a fused chain. Skips when python or
// numpy is unavailable.
#include <gtest/gtest.h>

#include <complex>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/kernels/kernel_test_support.h"
#include "cpu_engine/engine_test_support.h"

namespace tenferro::cpu {
namespace {

using testing::Layout;
using testing::make_tensor;

// The elements of `t` in row-major order (complex as re, im).
std::vector<double> flat(const Tensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::complex<double> c = testing::value_at(t, testing::unravel(i, t.shape()));
    v.push_back(c.real());
    if (is_complex(t.dtype())) v.push_back(c.imag());
  }
  return v;
}

std::string declare(const std::string& name, const Tensor& t) {
  std::string shape = "(";
  for (std::int64_t s : t.shape()) shape += std::to_string(s) + ",";
  return name + " = np.array(" + testing::python_list(t) + ", dtype=" + testing::numpy_dtype(t.dtype()) + ").reshape(" +
         shape + "))\n";
}

TEST(CpuEngineNumpy, SampleMatchesNumpy) {
  auto engine = make_cpu_engine();
  ASSERT_TRUE(engine.ok());
  auto rt = testing::runtime_over(*engine);
  ASSERT_TRUE(rt.ok());
  runtime::EagerContext ctx = rt->on();

  const Tensor a = make_tensor({5, 7}, DType::kComplex128, Layout::kTransposed, 1);
  const Tensor b = make_tensor({7, 3}, DType::kComplex128, Layout::kSliced, 2);
  const Tensor x = make_tensor({2, 5, 4}, DType::kFloat64, Layout::kTransposed, 3);
  const Tensor y = make_tensor({2, 4, 6}, DType::kFloat64, Layout::kColMajor, 4);
  const Tensor idx = *Tensor::from_values<std::int64_t>({3, 0, 3, 1}, Dims{4});

  std::vector<std::pair<std::string, Tensor>> got;
  auto keep = [&](const std::string& name, Result<Tensor> r) {
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().to_string();
    got.emplace_back(name, *std::move(r));
  };
  keep("ab", ctx.matmul(a, b));
  keep("xy", ctx.matmul(x, y));
  keep("sum_x", ctx.sum(x, Dims{0, 2}));
  keep("argmax_x", ctx.argmax(x, 1));
  keep("gather_x", ctx.gather(x, idx, 2));
  keep("tanh_a", ctx.tanh(a));
  // General gather/scatter through the eager API: x[i0, :, i2] and
  // np.add.at on those positions.
  const Tensor pairs = *Tensor::from_values<std::int32_t>({1, 3, 0, 0, 1, 3, 0, 2}, Dims{4, 2});
  const Tensor u = make_tensor({4, 5}, DType::kFloat64, Layout::kTransposed, 5);
  const program::SymbolicShape window = program::symbolic_shape(Dims{1, 5, 1});
  keep("fancy_x", ctx.gather(x, pairs, program::GatherAttributes{{1}, {0, 2}, {0, 2}, 1, window}));
  keep("add_at_x",
       ctx.scatter(x, pairs, u, program::ScatterAttributes{{1}, {0, 2}, {0, 2}, 1, program::ScatterCombine::kAdd}));
  // A malformed attribute is a typed error from inference.
  const Result<Tensor> bad = ctx.gather(x, pairs, program::GatherAttributes{{1}, {0, 2}, {0, 0}, 1, window});
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument) << bad.status().to_string();
  std::string script =
      "import sys\ntry:\n    import numpy as np\nexcept ImportError:\n    print('NO_NUMPY'); sys.exit(0)\n"
      "def emit(name, v):\n    a = np.asarray(v).ravel()\n"
      "    if np.iscomplexobj(a): a = np.stack([a.real, a.imag], axis=-1).ravel()\n"
      "    print(name, ' '.join(repr(float(x)) for x in a))\n";
  script +=
      declare("a", a) + declare("b", b) + declare("x", x) + declare("y", y) + declare("pairs", pairs) + declare("u", u);
  script +=
      "emit('ab', a @ b)\nemit('xy', x @ y)\nemit('sum_x', x.sum(axis=(0, 2)))\n"
      "emit('argmax_x', x.argmax(axis=1))\nemit('gather_x', np.take(x, [3, 0, 3, 1], axis=2))\n"
      "emit('tanh_a', np.tanh(a))\nemit('fancy_x', x[pairs[:, 0], :, pairs[:, 1]])\n"
      "t = x.copy()\nnp.add.at(t, (pairs[:, 0], slice(None), pairs[:, 1]), u)\nemit('add_at_x', t)\n";
  const std::string out = testing::run_python(script);
  if (out.empty() || out.find("NO_NUMPY") != std::string::npos) GTEST_SKIP() << "numpy unavailable";
  std::istringstream lines(out);
  std::string line;
  std::size_t checked = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    std::string rest((std::istreambuf_iterator<char>(words)), std::istreambuf_iterator<char>());
    const std::vector<double> want = testing::parse_numbers(rest);
    for (const auto& [n, t] : got) {
      if (n != name) continue;
      SCOPED_TRACE(name);
      const std::vector<double> have = flat(t);
      ASSERT_EQ(have.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(have[i], want[i], 1e-12 * (1 + std::abs(want[i])));
      ++checked;
    }
  }
  EXPECT_EQ(checked, got.size()) << out;
}

}  // namespace
}  // namespace tenferro::cpu
