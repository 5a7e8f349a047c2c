// rng_philox: each Philox block yields whole elements (four float32 or two
// float64 uniforms, or as many normals from Box-Muller pairs inside the
// block), so blocks are independent work units and every element depends on
// its row-major index alone.
#include <cmath>
#include <numbers>

#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/philox.h"
#include "cpu/kernels/validation.h"
#include "tenferro/cpu/kernels/creation.h"

namespace tenferro::cpu {
namespace {

constexpr std::int64_t kBlockGrain = 4096;  // Philox blocks per parallel chunk

// The uniforms of one block at the result dtype's resolution, as doubles.
template <class T>
int block_uniforms(const internal::PhiloxBlock& w, double* u) {
  if constexpr (std::is_same_v<T, float>) {
    for (int k = 0; k < 4; ++k) u[k] = static_cast<double>(w[static_cast<std::size_t>(k)] >> 8) * 0x1.0p-24;
    return 4;
  } else {
    for (int k = 0; k < 2; ++k) {
      const std::uint64_t bits = (static_cast<std::uint64_t>(w[static_cast<std::size_t>(2 * k + 1)]) << 32) |
                                 w[static_cast<std::size_t>(2 * k)];
      u[k] = static_cast<double>(bits >> 11) * 0x1.0p-53;
    }
    return 2;
  }
}

// Box-Muller on (u[0], u[1]), (u[2], u[3]), ...; 1 - u keeps the log finite.
void to_normals(double* u, int n) {
  for (int k = 0; k + 1 < n; k += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - u[k]));
    const double angle = 2.0 * std::numbers::pi * u[k + 1];
    u[k] = radius * std::cos(angle);
    u[k + 1] = radius * std::sin(angle);
  }
}

}  // namespace

Status random_philox(const TensorView& out, std::uint64_t key, std::uint64_t counter, RandomDistribution distribution,
                     const ParallelContext& ctx, KernelStats* stats) {
  TENFERRO_TRY(internal::check_output_view("rng_philox", "output", out));
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                      "rng_philox: expected a float32 or float64 output, found {}", out.dtype);
  }
  const std::int64_t numel = out.numel();
  if (numel == 0) return ok_status();
  bool row_major = true;
  for (std::size_t d = out.shape.size(), expected = 1; d-- > 0;) {
    if (out.shape[d] != 1 && out.strides[d] != static_cast<std::int64_t>(expected)) row_major = false;
    expected *= static_cast<std::size_t>(out.shape[d]);
  }
  // Element offset of row-major index i (strided outputs only).
  auto offset_of = [&](std::int64_t i) {
    std::int64_t offset = 0;
    for (std::size_t d = out.shape.size(); d-- > 0;) {
      offset += (i % out.shape[d]) * out.strides[d];
      i /= out.shape[d];
    }
    return offset;
  };
  const internal::PhiloxKey words = {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
  visit_dtype(out.dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      constexpr std::int64_t kPerBlock = std::is_same_v<T, float> ? 4 : 2;
      const std::int64_t blocks = (numel + kPerBlock - 1) / kPerBlock;
      T* dst = static_cast<T*>(out.data);
      internal::parallel_or_inline(ctx, blocks, kBlockGrain, stats, [&](std::int64_t b, std::int64_t e) {
        double u[4];
        for (std::int64_t j = b; j < e; ++j) {
          const std::uint64_t c = counter + static_cast<std::uint64_t>(j);
          const internal::PhiloxBlock w = internal::philox4x32_10(
              {static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), 0, 0}, words);
          const int n = block_uniforms<T>(w, u);
          if (distribution == RandomDistribution::kNormal) to_normals(u, n);
          for (int k = 0; k < n; ++k) {
            const std::int64_t i = j * kPerBlock + k;
            if (i >= numel) break;
            dst[row_major ? i : offset_of(i)] = static_cast<T>(u[k]);
          }
        }
      });
    }
  });
  return ok_status();
}

}  // namespace tenferro::cpu
