// The provider skeleton (Note [FFT provider contract]), problem identity
// and the null provider.
#include "tenferro/fft_cpu/fft_provider.h"

#include <numeric>

#include <fmt/format.h>

#include "fft_cpu/plan_cache.h"

namespace tenferro::fft {

std::string_view to_string(FftTransform transform) noexcept {
  switch (transform) {
    case FftTransform::kC2C:
      return "c2c";
    case FftTransform::kR2C:
      return "r2c";
    case FftTransform::kC2R:
      return "c2r";
  }
  return "?";
}

std::int64_t FftProblem::howmany() const noexcept {
  std::int64_t n = 1;
  for (const FftLoop& l : batch) n *= l.n;
  return n;
}

std::string FftProblem::to_string() const {
  std::string loops;
  for (const FftLoop& l : batch)
    loops += fmt::format("{}{}x({},{})", loops.empty() ? "" : " ", l.n, l.in_stride, l.out_stride);
  return fmt::format("{}{} {} n={} ({},{}) [{}]{}{}", fft::to_string(transform),
                     transform == FftTransform::kC2C ? (sign < 0 ? "-1" : "+1") : "", precision, dim.n, dim.in_stride,
                     dim.out_stride, loops, in_place ? " in-place" : "", aligned ? "" : " unaligned");
}

Result<std::shared_ptr<const FftKernel>> CpuFftProvider::plan(const FftProblem& problem) const {
  return unsupported_fft_problem(name(), problem, "the provider implements no transform");
}

namespace {

class NullFftProvider final : public CpuFftProvider {
 public:
  std::string_view name() const noexcept override { return "null"; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }

 private:
  cpu::ProviderCapability capability_{cpu::ThreadCountControl::kSequential, cpu::PlacementControl::kCallingThread,
                                      "null skeleton"};
};

}  // namespace

std::shared_ptr<const CpuFftProvider> make_null_fft_provider() { return std::make_shared<NullFftProvider>(); }

std::int64_t alignment_quantum(std::int64_t in_bytes, std::int64_t out_bytes) noexcept {
  const auto one = [](std::int64_t bytes) { return 64 / std::gcd<std::int64_t>(64, bytes == 0 ? 64 : bytes); };
  return std::lcm(one(in_bytes), one(out_bytes));
}

Error unsupported_fft_problem(std::string_view provider, const FftProblem& problem, std::string_view why) {
  return Error(ErrorCode::kUnsupported, ErrorStage::kPrepare,
               fmt::format("fft provider {}: {} is unsupported: {}", provider, problem.to_string(), why));
}

namespace internal {

std::uint64_t hash_problem(const FftProblem& p) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0x100000001b3ULL;
  };
  mix(static_cast<std::uint64_t>(p.transform));
  mix(static_cast<std::uint64_t>(p.precision));
  mix(static_cast<std::uint64_t>(p.sign + 2));
  mix(static_cast<std::uint64_t>(p.dim.n));
  mix(static_cast<std::uint64_t>(p.dim.in_stride));
  mix(static_cast<std::uint64_t>(p.dim.out_stride));
  for (const FftLoop& l : p.batch) {
    mix(static_cast<std::uint64_t>(l.n));
    mix(static_cast<std::uint64_t>(l.in_stride));
    mix(static_cast<std::uint64_t>(l.out_stride));
  }
  mix((p.in_place ? 1u : 0u) | (p.aligned ? 2u : 0u));
  return h;
}

}  // namespace internal

}  // namespace tenferro::fft
