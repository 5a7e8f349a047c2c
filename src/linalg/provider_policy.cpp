// LinalgProviderPolicy and the measured default provider table (Note
// [Default provider table] in provider_policy.h).
#include "tenferro/linalg/provider_policy.h"

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
    "not measured yet with `tenferro bench linalg crossover`: every size uses LAPACK";
constexpr DefaultProviderRow kDefaultTable[] = {
    {LinalgSlot::kSvd, {}, {}},      {LinalgSlot::kQr, {}, {}},
    {LinalgSlot::kEigh, {}, {}},     {LinalgSlot::kEig, {}, {}},
    {LinalgSlot::kCholesky, {}, {}}, {LinalgSlot::kLu, {}, {}},
    {LinalgSlot::kSolve, {}, {}},    {LinalgSlot::kTriangularSolve, {}, {}},
    {LinalgSlot::kInverse, {}, {}},  {LinalgSlot::kLstsq, {}, {}},
    {LinalgSlot::kPinv, {}, {}},
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
