// The fft AD rules (Note [FFT adjoints] in ad_rules.h) for every kind,
// through the real AD transforms and a runtime running the CPU engine and
// the fft engine: forward mode against central finite differences, reverse
// mode through the adjoint identity Re<v, J u> = Re<J* v, u> with random
// cotangents (which is what checks the Hermitian weighting of rfft / irfft /
// hfft / ihfft), with padding, cropping, several axes and every norm. A
// second check compares one gradient with torch.autograd when available.
#include <gtest/gtest.h>

#include "ad/ad_test_support.h"
#include "fft_cpu/fft_test_support.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::fft {
namespace {

using namespace testing;

struct AdCase {
  FftKind kind;
  Dims shape;
  Dims axes;
  Dims lengths;
  FftNorm norm;
};

using ad::testing::axpy;
using ad::testing::real_inner;

class FftAdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(install_fft_ad_rules(context_).ok());
    runtime_ = std::make_unique<runtime::Runtime>(make_runtime(CpuFftEngine::create_default()));
  }

  void check(const AdCase& c, DType dtype) {
    auto op = FftOp::make_n(c.kind, c.lengths, c.axes, c.norm);
    ASSERT_TRUE(op.ok()) << op.status().to_string();
    SCOPED_TRACE((*op)->describe() + " " + shape_to_string(c.shape) + " " + std::string(to_string(dtype)));
    program::ProgramBuilder b;
    auto in = b.add_input(dtype, program::symbolic_shape(c.shape).span());
    ASSERT_TRUE(in.ok());
    auto y = b.emit_extension(*op, {*in});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    auto f = b.freeze({(*y)[0]});
    ASSERT_TRUE(f.ok()) << f.status().to_string();

    const std::vector<Tensor> x{random_tensor(dtype, c.shape, 11)};
    const std::vector<Tensor> u{random_tensor(dtype, c.shape, 12)};
    const std::uint32_t active[] = {0};
    Result<ad::JvpResult> jvp = ad::jvp(*runtime_, context_, *f, x, active, u);
    ASSERT_TRUE(jvp.ok()) << jvp.status().to_string();

    const double h = 1e-6;
    const std::vector<Tensor> plus{axpy(x[0], h, u[0])}, minus{axpy(x[0], -h, u[0])};
    auto fp = runtime_->run(*f, plus), fm = runtime_->run(*f, minus);
    ASSERT_TRUE(fp.ok() && fm.ok());
    const std::vector<cd> tp = values_of((*fp)[0]), tm = values_of((*fm)[0]), tangent = values_of(jvp->tangents[0]);
    ASSERT_EQ(tangent.size(), tp.size());
    std::vector<cd> fd;
    for (std::size_t i = 0; i < tp.size(); ++i) fd.push_back((tp[i] - tm[i]) / (2 * h));
    expect_close(tangent, fd, 1e-7, "JVP vs central differences");

    const std::vector<Tensor> v{random_tensor(jvp->outputs[0].dtype(), jvp->outputs[0].shape(), 13)};
    const double lhs = real_inner(v[0], jvp->tangents[0]);
    Result<ad::VjpResult> vjp = ad::vjp(*runtime_, context_, *f, x, active, v);
    ASSERT_TRUE(vjp.ok()) << vjp.status().to_string();
    ASSERT_EQ(vjp->cotangents[0].dtype(), dtype);
    ASSERT_EQ(Dims(vjp->cotangents[0].shape()), c.shape);
    const double rhs = real_inner(vjp->cotangents[0], u[0]);
    EXPECT_NEAR(lhs, rhs, 1e-10 * std::max(1.0, std::abs(lhs))) << "adjoint identity";
  }

  ad::AdContext context_;
  std::unique_ptr<runtime::Runtime> runtime_;
};

TEST_F(FftAdTest, ComplexTransforms) {
  for (FftKind kind : {FftKind::kFft, FftKind::kIfft}) {
    check({kind, {7}, {0}, {}, FftNorm::kBackward}, DType::kComplex128);
    check({kind, {5, 6}, {1}, {8}, FftNorm::kOrtho}, DType::kFloat64);             // real input, padded
    check({kind, {4, 7}, {0, 1}, {3, 9}, FftNorm::kForward}, DType::kComplex128);  // crop + pad
    check({kind, {3, 4, 5}, {2, 0}, {}, FftNorm::kOrtho}, DType::kComplex128);
  }
}

TEST_F(FftAdTest, RealToComplexTransforms) {
  for (FftKind kind : {FftKind::kRfft, FftKind::kIhfft}) {
    for (FftNorm norm : {FftNorm::kBackward, FftNorm::kOrtho, FftNorm::kForward}) {
      check({kind, {8}, {0}, {}, norm}, DType::kFloat64);  // even: DC and Nyquist weight 1
      check({kind, {7}, {0}, {}, norm}, DType::kFloat64);  // odd: no Nyquist
    }
    check({kind, {4, 6}, {0, 1}, {5, 8}, FftNorm::kOrtho}, DType::kFloat64);
    check({kind, {3, 9}, {1}, {5}, FftNorm::kBackward}, DType::kFloat64);  // cropped
    check({kind, {2}, {0}, {}, FftNorm::kBackward}, DType::kFloat64);      // h = 2: no middle
  }
}

TEST_F(FftAdTest, ComplexToRealTransforms) {
  for (FftKind kind : {FftKind::kIrfft, FftKind::kHfft}) {
    for (FftNorm norm : {FftNorm::kBackward, FftNorm::kOrtho, FftNorm::kForward}) {
      check({kind, {5}, {0}, {}, norm}, DType::kComplex128);   // n = 8
      check({kind, {5}, {0}, {9}, norm}, DType::kComplex128);  // n = 9, input padded to 5
    }
    check({kind, {3, 4}, {0, 1}, {5, 7}, FftNorm::kOrtho}, DType::kComplex128);
    check({kind, {4, 6}, {1, 0}, {4, 6}, FftNorm::kForward}, DType::kComplex128);  // input cropped along 0
    check({kind, {6}, {0}, {3}, FftNorm::kBackward}, DType::kComplex128);          // input cropped to 2
  }
}

TEST_F(FftAdTest, GradientMatchesTorch) {
  // L = sum(|rfft(x, norm=ortho)|² · k) over the frequencies k: its gradient
  // depends on the Hermitian weighting.
  const Dims shape = {10};
  program::ProgramBuilder b;
  auto in = b.add_input(DType::kFloat64, {10});
  auto y = b.emit_extension(*FftOp::make(FftKind::kRfft, -1, 0, FftNorm::kOrtho), {*in});
  ASSERT_TRUE(y.ok());
  auto re = b.emit(program::CoreSemanticOp::kReal, {(*y)[0]});
  auto im = b.emit(program::CoreSemanticOp::kImag, {(*y)[0]});
  auto re2 = b.emit(program::CoreSemanticOp::kMul, {*re, *re});
  auto im2 = b.emit(program::CoreSemanticOp::kMul, {*im, *im});
  auto mag = b.emit(program::CoreSemanticOp::kAdd, {*re2, *im2});
  auto k = b.emit(program::CoreSemanticOp::kIota, {},
                  program::IotaAttributes{DType::kFloat64, program::symbolic_shape(Dims{6}), 0});
  auto weighted = b.emit(program::CoreSemanticOp::kMul, {*mag, *k});
  auto loss = b.emit(program::CoreSemanticOp::kReduceSum, {*weighted}, program::ReduceAttributes{{0}});
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  auto f = b.freeze({*loss});
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const std::vector<Tensor> x{random_tensor(DType::kFloat64, shape, 21)};
  const std::uint32_t active[] = {0};
  Result<std::vector<Tensor>> g = ad::grad(*runtime_, context_, *f, x, active);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  std::ostringstream script;
  script.precision(17);
  script << "import torch\nx = torch.tensor([";
  for (const cd& z : values_of(x[0])) script << z.real() << ",";
  script << "], dtype=torch.float64, requires_grad=True)\n"
            "y = torch.fft.rfft(x, norm='ortho')\n"
            "(y.abs()**2 * torch.arange(6, dtype=torch.float64)).sum().backward()\n"
            "print(' '.join(repr(float(v)) for v in x.grad))\n";
  const std::string out = run_python(script.str());
  std::istringstream in_values(out);
  std::vector<cd> want;
  double v;
  while (in_values >> v) want.emplace_back(v, 0);
  if (want.size() != 10) GTEST_SKIP() << "torch is not available: " << out.substr(0, 200);
  expect_close(values_of((*g)[0]), want, 1e-12, "gradient vs torch");
}

}  // namespace
}  // namespace tenferro::fft
