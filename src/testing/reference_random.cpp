// Reference evaluation of rng_philox (docs/core_ops.md "Creation"): the
// Philox-4x32-10 stream written out from the algorithm's definition (a key
// schedule table, the rounds, the word stream), separately from the CPU
// kernel's implementation, then mapped to uniform or normal values element
// by element in row-major order.
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "reference_ops.h"
#include "tenferro/program/attributes.h"

namespace tenferro::testing::internal {
namespace {

using Block = std::array<std::uint32_t, 4>;

Block philox_block(std::uint64_t counter, std::uint64_t key) {
  constexpr std::uint64_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  std::array<std::array<std::uint32_t, 2>, 10> schedule{};
  schedule[0] = {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
  for (std::size_t r = 1; r < schedule.size(); ++r) {
    schedule[r] = {schedule[r - 1][0] + kWeyl0, schedule[r - 1][1] + kWeyl1};
  }
  Block x = {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0, 0};
  for (const auto& k : schedule) {
    const std::uint64_t p0 = kMultiplier0 * x[0];
    const std::uint64_t p1 = kMultiplier1 * x[2];
    x = {static_cast<std::uint32_t>(p1 >> 32) ^ x[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ x[3] ^ k[1], static_cast<std::uint32_t>(p0)};
  }
  return x;
}

// Word n of the stream (block counter + n / 4, word n % 4).
std::uint32_t stream_word(const program::RandomAttributes& a, std::uint64_t n) {
  return philox_block(a.counter + n / 4, a.key)[n % 4];
}

// Uniform i in [0, 1) at the result dtype's resolution.
double uniform(const program::RandomAttributes& a, std::uint64_t i) {
  if (a.dtype == DType::kFloat32) return std::ldexp(static_cast<double>(stream_word(a, i) >> 8), -24);
  const std::uint64_t bits = (static_cast<std::uint64_t>(stream_word(a, 2 * i + 1)) << 32) | stream_word(a, 2 * i);
  return std::ldexp(static_cast<double>(bits >> 11), -53);
}

double normal(const program::RandomAttributes& a, std::uint64_t i) {
  const std::uint64_t pair = i - i % 2;
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform(a, pair)));
  const double angle = 2.0 * std::numbers::pi * uniform(a, pair + 1);
  return radius * (i % 2 == 0 ? std::cos(angle) : std::sin(angle));
}

}  // namespace

Result<Tensor> evaluate_random(const CoreCall& call) {
  const auto& a = *call.op.attributes_as<program::RandomAttributes>();
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, call.result_dtype));
  const bool gauss = a.distribution == program::RandomDistribution::kNormal;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto n = static_cast<std::uint64_t>(i);
    const double v = gauss ? normal(a, n) : uniform(a, n);
    if (call.result_dtype == DType::kFloat32) {
      mutable_elements<float>(y)[i] = static_cast<float>(v);
    } else if (call.result_dtype == DType::kFloat64) {
      mutable_elements<double>(y)[i] = v;
    } else {
      return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: rng_philox to {}",
                        call.result_dtype);
    }
  }
  return y;
}

}  // namespace tenferro::testing::internal
