// LinalgProviderPolicy: which provider fills each slot of the linalg
// family, either fixed (an explicit LinalgProviderBundle) or the measured
// default that picks, per slot and matrix size, the faster of the LAPACK and
// Eigen providers on this machine.
//
// Note [Default provider table]
// The measured default is a table, not a heuristic: for each slot a
// crossover size n* (n = max(m, n) of the matrix) with the provider used
// below it and the one used at or above it, and the benchmark evidence
// behind it (Note [Measured crossovers] in src/linalg/provider_policy.cpp
// lists the numbers; `tenferro bench linalg crossover` re-measures them).
// The choice is made at prepare time from the concrete shape, recorded in
// the engine's plan and shown by CpuLinalgEngine::explain(). When the
// chosen provider answers kUnsupported for a problem (e.g. LAPACK's 32-bit
// integers), the table's other provider is asked: an explicit, documented
// delegation of the composite, never a fallback after an execution error.
// A fixed bundle has no alternative.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/linalg/linalg_provider.h"

namespace tenferro::linalg {

/// One row of the measured default table.
struct DefaultProviderRow {
  LinalgSlot slot = LinalgSlot::kSvd;
  /// The provider below the crossover, at or above it ("lapack" or "eigen").
  std::string_view below;
  std::int64_t crossover = 0;
  std::string_view at_or_above;
  /// The measurement behind the row (sizes, medians, the command).
  std::string_view evidence;
};

/// The table (Note [Default provider table]), one row per slot in LinalgSlot order.
std::span<const DefaultProviderRow> default_provider_table() noexcept;

/// See the Note. Immutable after construction; thread-safe.
class LinalgProviderPolicy {
 public:
  /// The provider chosen for one problem.
  struct Choice {
    const CpuLinalgProvider* provider = nullptr;     ///< null: the slot is empty
    const CpuLinalgProvider* alternative = nullptr;  ///< asked when `provider` answers kUnsupported
    std::string_view reason;                         ///< one line for explain()
  };

  /// Every slot from `bundle`; an empty slot makes its operations kUnsupported.
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
    std::shared_ptr<const CpuLinalgProvider> below;
    std::shared_ptr<const CpuLinalgProvider> at_or_above;
    std::int64_t crossover = 0;
    std::string reason_below;
    std::string reason_at_or_above;
    /// The table's other provider on each side, asked on kUnsupported.
    std::shared_ptr<const CpuLinalgProvider> alternative_below;
    std::shared_ptr<const CpuLinalgProvider> alternative_at_or_above;
  };
  std::array<SlotRule, kNumLinalgSlots> rules_;
};

}  // namespace tenferro::linalg
