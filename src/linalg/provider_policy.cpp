// LinalgProviderPolicy and the measured default provider table (Note
// [Default provider table] in provider_policy.h).
#include "tenferro/linalg/provider_policy.h"

#include <fmt/format.h>

namespace tenferro::linalg {

namespace {

// Note [Measured crossovers]
// The evidence available so far is /work/shared/design/DEPENDENCIES.md
// section 4: float64, n = 512, one thread, LAPACKE over OpenBLAS vs Eigen 3.4
// (EIGEN_DONT_PARALLELIZE), medians on this machine. LAPACK is 1.4-1.9x
// faster for the SVD (and so lstsq and pinv, which use it), about 2.2x for
// the symmetric eigensolver; QR, LU, Cholesky and solve are on par. The
// small-n crossovers are not measured yet (`tenferro bench linalg crossover`
// measures them, n = 4 ... 512, Eigen against LAPACK, interleaved), so every
// slot uses LAPACK at every size (crossover 0) until that table is filled in:
// the one choice the n = 512 measurement supports for every slot.
constexpr std::string_view kSvdEvidence = "n=512 f64: dgesdd 100 ms vs BDCSVD 142 ms (DEPENDENCIES.md 4)";
constexpr std::string_view kParEvidence = "on par at n=512 f64 (DEPENDENCIES.md 4); small n not measured";
constexpr DefaultProviderRow kDefaultTable[] = {
    {LinalgSlot::kSvd, "lapack", 0, "lapack", kSvdEvidence},
    {LinalgSlot::kQr, "lapack", 0, "lapack", "n=512 f64: geqrf+orgqr 19.3 ms vs Eigen 17.0 ms, on par"},
    {LinalgSlot::kEigh, "lapack", 0, "lapack", "n=512 f64: dsyevd 46 ms vs SelfAdjointEigenSolver 91 ms"},
    {LinalgSlot::kEig, "lapack", 0, "lapack", "not measured; LAPACK as for eigh"},
    {LinalgSlot::kCholesky, "lapack", 0, "lapack", kParEvidence},
    {LinalgSlot::kLu, "lapack", 0, "lapack", kParEvidence},
    {LinalgSlot::kSolve, "lapack", 0, "lapack", kParEvidence},
    {LinalgSlot::kTriangularSolve, "lapack", 0, "lapack", "not measured; LAPACK as for solve"},
    {LinalgSlot::kInverse, "lapack", 0, "lapack", "not measured; LAPACK as for solve"},
    {LinalgSlot::kLstsq, "lapack", 0, "lapack", kSvdEvidence},
    {LinalgSlot::kPinv, "lapack", 0, "lapack", kSvdEvidence},
};
static_assert(std::size(kDefaultTable) == kNumLinalgSlots);

}  // namespace

std::span<const DefaultProviderRow> default_provider_table() noexcept { return kDefaultTable; }

LinalgProviderPolicy LinalgProviderPolicy::fixed(LinalgProviderBundle bundle) {
  LinalgProviderPolicy policy;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(s)];
    rule.below = bundle.get(static_cast<LinalgSlot>(s));
    rule.at_or_above = rule.below;
    rule.reason_below = rule.below != nullptr
                            ? fmt::format("explicit bundle slot {}", to_string(static_cast<LinalgSlot>(s)))
                            : fmt::format("explicit bundle: slot {} is empty", to_string(static_cast<LinalgSlot>(s)));
    rule.reason_at_or_above = rule.reason_below;
  }
  return policy;
}

LinalgProviderPolicy LinalgProviderPolicy::measured_default(std::shared_ptr<const CpuLinalgProvider> lapack,
                                                            std::shared_ptr<const CpuLinalgProvider> eigen) {
  LinalgProviderPolicy policy;
  for (const DefaultProviderRow& row : kDefaultTable) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(row.slot)];
    const auto pick = [&](std::string_view which) { return which == "lapack" ? lapack : eigen; };
    rule.below = pick(row.below);
    rule.at_or_above = pick(row.at_or_above);
    if (rule.below == nullptr) rule.below = rule.at_or_above != nullptr ? rule.at_or_above : (lapack ? lapack : eigen);
    if (rule.at_or_above == nullptr) rule.at_or_above = rule.below;
    rule.crossover = row.crossover;
    const auto other = [&](const std::shared_ptr<const CpuLinalgProvider>& p) { return p == lapack ? eigen : lapack; };
    rule.alternative_below = other(rule.below);
    rule.alternative_at_or_above = other(rule.at_or_above);
    const auto reason = [&](std::string_view side) {
      return fmt::format("default table: {} {} n={} ({})", side, to_string(row.slot), row.crossover, row.evidence);
    };
    rule.reason_below = reason("below");
    rule.reason_at_or_above = reason("at or above");
  }
  return policy;
}

LinalgProviderPolicy::Choice LinalgProviderPolicy::choose(LinalgSlot slot, std::int64_t size) const noexcept {
  if (slot == LinalgSlot::kNone) return {};
  const SlotRule& rule = rules_[static_cast<std::size_t>(slot)];
  const bool below = size < rule.crossover;
  const std::shared_ptr<const CpuLinalgProvider>& chosen = below ? rule.below : rule.at_or_above;
  const std::shared_ptr<const CpuLinalgProvider>& other = below ? rule.alternative_below : rule.alternative_at_or_above;
  return Choice{chosen.get(), other.get() != chosen.get() ? other.get() : nullptr,
                below ? rule.reason_below : rule.reason_at_or_above};
}

std::string LinalgProviderPolicy::describe() const {
  std::string out;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    const SlotRule& rule = rules_[static_cast<std::size_t>(s)];
    const auto name = [](const std::shared_ptr<const CpuLinalgProvider>& p) {
      return p != nullptr ? std::string(p->name()) : std::string("(empty)");
    };
    if (rule.below == rule.at_or_above || rule.crossover <= 0) {
      out += fmt::format("{}: {}\n", to_string(static_cast<LinalgSlot>(s)), name(rule.at_or_above));
    } else {
      out += fmt::format("{}: {} below n={}, {} at or above\n", to_string(static_cast<LinalgSlot>(s)), name(rule.below),
                         rule.crossover, name(rule.at_or_above));
    }
  }
  return out;
}

}  // namespace tenferro::linalg
