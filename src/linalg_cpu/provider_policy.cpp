// LinalgProviderPolicy and the measured default provider table (Note
// [Default provider table] in provider_policy.h).
#include "tenferro/linalg_cpu/provider_policy.h"

#include <algorithm>

#include <fmt/format.h>

namespace tenferro::linalg {

namespace {

// Note [Measured crossovers]
// Medians of one call in microseconds, float64, one thread, LAPACK (serial
// OpenBLAS) and Eigen alternating, at kDefaultTableSizes; produced by
// `tenferro bench linalg crossover` (its last progress lines print these
// rows). A 0 is a size not measured: LAPACK is used there.
constexpr std::string_view kTableSource =
    "`tenferro bench linalg crossover` on 2026-11-30, 2-core Xeon VM (AVX-512), OpenBLAS 0.3.21 serial, load < 1";
constexpr DefaultProviderRow kDefaultTable[] = {
    {LinalgSlot::kSvd, {41.37, 491.4, 1.375e+04, 1.01e+06}, {60.2, 1424, 2.968e+04, 1.418e+06}},
    {LinalgSlot::kQr, {6.518, 91.94, 3113, 2.487e+05}, {7.113, 116, 3039, 2.725e+05}},
    {LinalgSlot::kEigh, {22.75, 285.5, 6463, 4.067e+05}, {16.43, 230.2, 8043, 8.707e+05}},
    {LinalgSlot::kEig, {59.13, 1418, 4.57e+04, 1.564e+06}, {39.58, 1163, 1.404e+05, 2.01e+07}},
    {LinalgSlot::kCholesky, {1.409, 16.11, 414.4, 5.064e+04}, {1.26, 14.11, 356.8, 5.052e+04}},
    {LinalgSlot::kLu, {2.477, 28.09, 753.3, 8.136e+04}, {2.16, 24.19, 910.7, 9.201e+04}},
    {LinalgSlot::kSolve, {5.74, 42.64, 813, 6.857e+04}, {3.456, 31.62, 802, 7.365e+04}},
    {LinalgSlot::kTriangularSolve, {3.142, 14.37, 177, 1.706e+04}, {1.832, 10.59, 136.1, 1.844e+04}},
    {LinalgSlot::kInverse, {3.549, 58.18, 1789, 1.519e+05}, {3.65, 57.3, 2148, 2.313e+05}},
    {LinalgSlot::kLstsq, {48.34, 507.6, 9713, 5.471e+05}, {64.77, 1387, 2.97e+04, 1.658e+06}},
    {LinalgSlot::kPinv, {40.41, 478.4, 1.404e+04, 9.639e+05}, {58.79, 1285, 2.757e+04, 1.377e+06}},
};
static_assert(std::size(kDefaultTable) == kNumLinalgSlots);

constexpr bool rows_in_slot_order() {
  for (std::size_t i = 0; i < std::size(kDefaultTable); ++i)
    if (static_cast<std::size_t>(kDefaultTable[i].slot) != i) return false;
  return true;
}
static_assert(rows_in_slot_order());

// "n < 32" / "32 <= n < 128" / "n >= 512": the sizes of class c.
std::string class_range(std::size_t c) {
  const auto bound = [](std::size_t i) {  // the first n of class i (i >= 1)
    std::int64_t n = kDefaultTableSizes[i - 1];
    while (default_size_class(n) < i) ++n;
    return n;
  };
  if (c == 0) return fmt::format("n < {}", bound(1));
  if (c + 1 == kNumSizeClasses) return fmt::format("n >= {}", bound(c));
  return fmt::format("{} <= n < {}", bound(c), bound(c + 1));
}

}  // namespace

std::size_t default_size_class(std::int64_t n) noexcept {
  // Nearest on a log scale: n belongs to class c + 1 once n * n >= s[c] * s[c + 1].
  if (n >= kDefaultTableSizes.back()) return kNumSizeClasses - 1;  // (no overflow below)
  std::size_t c = 0;
  while (c + 1 < kNumSizeClasses && n * n >= kDefaultTableSizes[c] * kDefaultTableSizes[c + 1]) ++c;
  return c;
}

std::string_view DefaultProviderRow::pick(std::size_t size_class) const noexcept {
  const double l = lapack_us[size_class], e = eigen_us[size_class];
  return l > 0 && e > 0 && e < kDefaultTableTieMargin * l ? "eigen" : "lapack";
}

std::span<const DefaultProviderRow> default_provider_table() noexcept { return kDefaultTable; }

std::string_view default_provider_table_source() noexcept { return kTableSource; }

LinalgProviderPolicy LinalgProviderPolicy::fixed(LinalgProviderBundle bundle) {
  LinalgProviderPolicy policy;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(s)];
    const auto slot = static_cast<LinalgSlot>(s);
    const std::shared_ptr<const CpuLinalgProvider> provider = bundle.get(slot);
    const std::string reason = provider != nullptr ? fmt::format("explicit bundle slot {}", to_string(slot))
                                                   : fmt::format("explicit bundle: slot {} is empty", to_string(slot));
    rule.provider.fill(provider);
    rule.reason.fill(reason);
  }
  return policy;
}

LinalgProviderPolicy LinalgProviderPolicy::measured_default(std::shared_ptr<const CpuLinalgProvider> lapack,
                                                            std::shared_ptr<const CpuLinalgProvider> eigen) {
  LinalgProviderPolicy policy;
  for (const DefaultProviderRow& row : kDefaultTable) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(row.slot)];
    for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
      const std::string_view pick = row.pick(c);
      std::shared_ptr<const CpuLinalgProvider> chosen = pick == "lapack" ? lapack : eigen;
      std::shared_ptr<const CpuLinalgProvider> other = pick == "lapack" ? eigen : lapack;
      std::string missing;
      if (chosen == nullptr) {
        chosen = std::move(other);
        missing = fmt::format("; {} is not available", pick);
      }
      rule.provider[c] = chosen;
      rule.alternative[c] = other;
      rule.reason[c] = fmt::format("default table: {} {} measured at n={}: lapack {} us, eigen {} us -> {}{}",
                                   to_string(row.slot), class_range(c), kDefaultTableSizes[c],
                                   row.lapack_us[c] > 0 ? fmt::format("{:.4g}", row.lapack_us[c]) : "?",
                                   row.eigen_us[c] > 0 ? fmt::format("{:.4g}", row.eigen_us[c]) : "?", pick, missing);
    }
  }
  return policy;
}

LinalgProviderPolicy::Choice LinalgProviderPolicy::choose(LinalgSlot slot, std::int64_t size) const noexcept {
  if (slot == LinalgSlot::kNone) return {};
  const SlotRule& rule = rules_[static_cast<std::size_t>(slot)];
  const std::size_t c = default_size_class(size);
  const CpuLinalgProvider* chosen = rule.provider[c].get();
  const CpuLinalgProvider* other = rule.alternative[c].get();
  return Choice{chosen, other != chosen ? other : nullptr, rule.reason[c]};
}

std::string LinalgProviderPolicy::describe() const {
  std::string out;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    const SlotRule& rule = rules_[static_cast<std::size_t>(s)];
    const auto name = [](const std::shared_ptr<const CpuLinalgProvider>& p) {
      return p != nullptr ? std::string(p->name()) : std::string("(empty)");
    };
    out += fmt::format("{}:", to_string(static_cast<LinalgSlot>(s)));
    if (std::all_of(rule.provider.begin(), rule.provider.end(), [&](const auto& p) { return p == rule.provider[0]; })) {
      out += fmt::format(" {}\n", name(rule.provider[0]));
      continue;
    }
    for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
      out += fmt::format("{} {} for {}", c == 0 ? "" : ",", name(rule.provider[c]), class_range(c));
    }
    out += "\n";
  }
  return out;
}

}  // namespace tenferro::linalg
