// rng_philox's kernel: the block function against the generator's published
// known-answer vectors, the first outputs against values derived from them
// here, the counter layout, the thread-count independence of the bits,
// coarse distribution moments and typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "cpu/kernels/kernel_test_support.h"
#include "cpu/kernels/philox.h"
#include "tenferro/cpu/kernels/creation.h"

namespace tenferro::cpu {
namespace {

using internal::PhiloxBlock;

// Known-answer vectors of Philox-4x32-10 (counter, key -> output) from the
// generator's reference distribution.
TEST(Philox, BlockFunctionMatchesKnownAnswers) {
  EXPECT_EQ(internal::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(internal::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(internal::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// Key 0, counter 0: block 0 is the first known answer above.
TEST(Philox, FirstOutputsFollowTheDocumentedLayout) {
  const ParallelContext& ctx = testing::sequential_context();
  const std::uint32_t w[] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  Tensor f = *Tensor::empty({4}, DType::kFloat32);
  ASSERT_TRUE(random_philox(f.view(), 0, 0, RandomDistribution::kUniform, ctx).ok());
  for (int k = 0; k < 4; ++k) EXPECT_EQ(static_cast<const float*>(f.data())[k], std::ldexp(float(w[k] >> 8), -24));

  const double u0 = std::ldexp(double(((std::uint64_t{w[1]} << 32) | w[0]) >> 11), -53);
  const double u1 = std::ldexp(double(((std::uint64_t{w[3]} << 32) | w[2]) >> 11), -53);
  Tensor d = *Tensor::empty({2}, DType::kFloat64);
  ASSERT_TRUE(random_philox(d.view(), 0, 0, RandomDistribution::kUniform, ctx).ok());
  EXPECT_EQ(static_cast<const double*>(d.data())[0], u0);
  EXPECT_EQ(static_cast<const double*>(d.data())[1], u1);

  Tensor n = *Tensor::empty({2}, DType::kFloat64);
  ASSERT_TRUE(random_philox(n.view(), 0, 0, RandomDistribution::kNormal, ctx).ok());
  const double radius = std::sqrt(-2.0 * std::log(1.0 - u0));
  EXPECT_NEAR(static_cast<const double*>(n.data())[0], radius * std::cos(2 * std::numbers::pi * u1), 1e-15);
  EXPECT_NEAR(static_cast<const double*>(n.data())[1], radius * std::sin(2 * std::numbers::pi * u1), 1e-15);
}

TEST(Philox, CounterOffsetsSkipWholeBlocks) {
  const ParallelContext& ctx = testing::sequential_context();
  Tensor from0 = *Tensor::empty({3, 4}, DType::kFloat32);
  Tensor from1 = *Tensor::empty({2, 4}, DType::kFloat32);
  ASSERT_TRUE(random_philox(from0.view(), 77, 5, RandomDistribution::kUniform, ctx).ok());
  ASSERT_TRUE(random_philox(from1.view(), 77, 6, RandomDistribution::kUniform, ctx).ok());
  EXPECT_EQ(std::memcmp(static_cast<const float*>(from0.data()) + 4, from1.data(), 8 * sizeof(float)), 0);
  // Another key gives other numbers.
  Tensor other = *Tensor::empty({3, 4}, DType::kFloat32);
  ASSERT_TRUE(random_philox(other.view(), 78, 5, RandomDistribution::kUniform, ctx).ok());
  EXPECT_NE(std::memcmp(from0.data(), other.data(), from0.nbytes()), 0);
}

TEST(Philox, BitsDoNotDependOnTheThreadCountOrLayout) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (RandomDistribution dist : {RandomDistribution::kUniform, RandomDistribution::kNormal}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (dist == RandomDistribution::kNormal ? " normal" : " uniform"));
      Tensor seq = *Tensor::empty({250, 201}, dtype);
      Tensor par = *Tensor::empty({250, 201}, dtype);
      KernelStats stats;
      ASSERT_TRUE(random_philox(seq.view(), 0x1234'5678'9abc'def0ull, 3, dist, testing::sequential_context()).ok());
      ASSERT_TRUE(
          random_philox(par.view(), 0x1234'5678'9abc'def0ull, 3, dist, testing::two_thread_context(), &stats).ok());
      EXPECT_GT(stats.parallel_calls, 0u);
      EXPECT_EQ(std::memcmp(seq.data(), par.data(), seq.nbytes()), 0);
      // A transposed output holds the same row-major values.
      Tensor storage = *Tensor::empty({201, 250}, dtype);
      Tensor transposed = *storage.permute({1, 0});
      ASSERT_TRUE(
          random_philox(transposed.view(), 0x1234'5678'9abc'def0ull, 3, dist, testing::two_thread_context()).ok());
      std::int64_t mismatches = 0;
      for (std::int64_t i = 0; i < seq.numel(); ++i) {
        const std::vector<std::int64_t> at = testing::unravel(i, seq.shape());
        if (testing::value_at(transposed, at) != testing::value_at(seq, at)) ++mismatches;
      }
      EXPECT_EQ(mismatches, 0);
      // Coarse moments: uniform mean 1/2, variance 1/12; normal 0 and 1.
      double sum = 0, squares = 0;
      for (std::int64_t i = 0; i < seq.numel(); ++i) {
        const std::complex<double> v = testing::value_at(seq, testing::unravel(i, seq.shape()));
        sum += v.real();
        squares += v.real() * v.real();
      }
      const double mean = sum / double(seq.numel());
      const double variance = squares / double(seq.numel()) - mean * mean;
      const bool normal = dist == RandomDistribution::kNormal;
      EXPECT_NEAR(mean, normal ? 0.0 : 0.5, 0.01);
      EXPECT_NEAR(variance, normal ? 1.0 : 1.0 / 12, 0.02);
    }
  }
}

TEST(Philox, NonFloatingOutputIsATypedError) {
  Tensor out = *Tensor::empty({4}, DType::kInt32);
  const Status s = random_philox(out.view(), 0, 0, RandomDistribution::kUniform, testing::sequential_context());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kDTypeMismatch);
}

}  // namespace
}  // namespace tenferro::cpu
