// LinalgProviderPolicy: which provider fills each slot of the linalg
// family, either fixed (an explicit LinalgProviderBundle) or the measured
// default that picks, per slot and matrix size, the faster of the LAPACK and
// Eigen providers as measured by `tenferro bench linalg crossover`.
//
// Note [Default provider table]
// The measured default is a table, not a heuristic: for each slot the median
// time of one call with the LAPACK and with the Eigen provider at each of
// kDefaultTableSizes (n = max(m, n), float64, one thread), measured by
// `tenferro bench linalg crossover` (the command, date and load are in
// default_provider_table_source(); the numbers are in
// src/linalg_cpu/provider_policy.cpp). A problem of size n belongs to the size
// class of the measured size nearest to n on a log scale (n < 32: 16,
// n < 128: 64, n < 512: 256, else 1024), and the row picks the faster
// provider there: Eigen when its median is below kDefaultTableTieMargin
// times LAPACK's, else LAPACK (a tie goes to LAPACK, which takes all its
// working memory from the engine's workspace). Other dtypes use the float64
// row. The choice is made at prepare time from the concrete shape, recorded
// in the engine's plan and shown by CpuLinalgEngine::explain() with the row's
// numbers. When the chosen provider answers kUnsupported for a problem (e.g.
// LAPACK's 32-bit integers), the table's other provider is asked: an
// explicit, documented delegation of the composite, never a fallback after an
// execution error. A fixed bundle has no alternative.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/linalg_cpu/linalg_provider.h"

namespace tenferro::linalg {

/// The matrix sizes the default table was measured at, one size class each.
inline constexpr std::array<std::int64_t, 4> kDefaultTableSizes = {16, 64, 256, 1024};
inline constexpr std::size_t kNumSizeClasses = kDefaultTableSizes.size();
/// Eigen is picked only when its median is below this fraction of LAPACK's.
inline constexpr double kDefaultTableTieMargin = 0.95;

/// The size class of n (= max(m, n)): the index of the measured size nearest
/// to n on a log scale.
std::size_t default_size_class(std::int64_t n) noexcept;

/// One row of the measured default table.
struct DefaultProviderRow {
  LinalgSlot slot = LinalgSlot::kSvd;
  /// Median microseconds per call at kDefaultTableSizes[c] (0: not measured).
  std::array<double, kNumSizeClasses> lapack_us{};
  std::array<double, kNumSizeClasses> eigen_us{};
  /// "eigen" when eigen_us[c] < kDefaultTableTieMargin * lapack_us[c] (both
  /// measured), else "lapack".
  std::string_view pick(std::size_t size_class) const noexcept;
};

/// The table (Note [Default provider table]), one row per slot in LinalgSlot order.
std::span<const DefaultProviderRow> default_provider_table() noexcept;
/// The command, date and machine load that produced the table.
std::string_view default_provider_table_source() noexcept;

/// See the Note. Immutable after construction; thread-safe.
class LinalgProviderPolicy {
 public:
  /// The provider chosen for one problem.
  struct Choice {
    const CpuLinalgProvider* provider = nullptr;     ///< null: the slot is empty
    const CpuLinalgProvider* alternative = nullptr;  ///< asked when `provider` answers kUnsupported
    std::string_view reason;                         ///< one line for explain()
  };

  /// Every slot from `bundle` at every size; an empty slot makes its operations kUnsupported.
  static LinalgProviderPolicy fixed(LinalgProviderBundle bundle);
  /// The measured default table over `lapack` and `eigen`. Either may be
  /// null (the other then serves every size of every slot); both null is a
  /// policy with every slot empty.
  static LinalgProviderPolicy measured_default(std::shared_ptr<const CpuLinalgProvider> lapack,
                                               std::shared_ptr<const CpuLinalgProvider> eigen);

  /// The provider for `slot` at matrix size `size` (= max(m, n)). No
  /// allocation.
  Choice choose(LinalgSlot slot, std::int64_t size) const noexcept;
  /// One line per slot.
  std::string describe() const;

 private:
  struct SlotRule {
    /// Per size class: the provider, the table's other provider (asked on
    /// kUnsupported; null for a fixed bundle) and the reason.
    std::array<std::shared_ptr<const CpuLinalgProvider>, kNumSizeClasses> provider;
    std::array<std::shared_ptr<const CpuLinalgProvider>, kNumSizeClasses> alternative;
    std::array<std::string, kNumSizeClasses> reason;
  };
  std::array<SlotRule, kNumLinalgSlots> rules_;
};

}  // namespace tenferro::linalg
