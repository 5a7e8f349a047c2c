// LinalgProviderPolicy: which providers fill each slot of the linalg family,
// as an ordered candidate list per slot and size class: either fixed (an
// explicit LinalgProviderBundle, one candidate) or the measured default,
// whose first candidate is the faster of the LAPACK and Eigen providers as
// measured by `tenferro bench linalg crossover`.
//
// Note [Default provider table]
// The measured default is a table, not a heuristic: for each slot the median
// time of one call with the LAPACK and with the Eigen provider at each of
// kDefaultTableSizes (n = max(m, n), float64, one thread), measured by
// `tenferro bench linalg crossover --table-out FILE`. The numbers are data,
// not code: data/linalg_provider_table.json, installed with the package
// (Note [Provider table file]). A problem of size n belongs to the size class
// of the measured size nearest to n on a log scale (n < 32: 16, n < 128: 64,
// n < 512: 256, else 1024), and the row orders the candidates there: Eigen
// first when its median is below kDefaultTableTieMargin times LAPACK's, else
// LAPACK first (a tie goes to LAPACK, which takes all its working memory from
// the engine's workspace). Other dtypes use the float64 row. The choice is
// made at prepare time from the concrete shape, recorded in the engine's plan
// and shown by CpuLinalgEngine::explain() with the row's numbers. The LU
// family is the exception (Note [One LU arithmetic]).
//
// Note [One LU arithmetic]
// Whether a matrix is exactly singular is decided by an exactly zero pivot,
// and that depends on how the elimination rounds: Eigen's blocked LU (FMA
// Schur updates, division by the pivot) turns the zero pivot of a 2 x 2
// matrix with two equal columns into 2e-18, where LAPACK's getrf (and so
// numpy) finds 0. With Eigen first for small solves, `solve` returned
// 1e17 where `inv` of the same matrix raised LinAlgError, and det was 2e-18
// instead of 0 (numpy: 77 % of random 2 x 2 matrices with a repeated column
// are singular, tenferro's solve: 0 %). So lu, solve and inverse (det and
// slogdet go through lu) always take LAPACK first, whatever the table
// says (its small matrices keep getf2's order: Note [Small LU]); Eigen
// stays their fallback where LAPACK is missing. The table keeps
// their measured numbers (explain() shows them).
//
// Note [Linalg candidates]
// Each slot and size class has an ordered candidate list (oneDNN's
// implementation-list style). At prepare time the candidates plan the
// problem in order; one that answers kUnsupported (e.g. LAPACK's 32-bit
// integers) is passed over and its reason recorded in the plan's reason,
// which explain() shows; the first that accepts serves the plan, and any
// other error stops resolution. When every candidate refuses, prepare fails
// with kUnsupported listing each refusal. An execution error never moves work
// to another candidate. A fixed bundle has one candidate per slot.
//
// Note [Provider table file]
// JSON: {"format": "tenferro.linalg_provider_table", "version": 1,
// "source": "<command, date, machine, load>", "sizes": [16, 64, 256, 1024],
// "rows": [{"slot": "svd", "lapack_us": [4 numbers], "eigen_us": [...]},
// ...]}, one row per slot (any order, each once), medians in microseconds,
// 0 for a size not measured (LAPACK first there). `sizes` must equal
// kDefaultTableSizes: the size classes are fixed in code. The default engine
// reads it from LinalgEngineOptions::provider_table, else the file named by
// the TENFERRO_LINALG_PROVIDER_TABLE environment variable, else the first
// copy Note [Locating provider files] (base/build_info.h) finds: next to
// the loaded binary, in the build tree, in the install. A missing or malformed
// file is a typed error naming the file and what was wrong; there is no
// built-in fallback order, so a machine's measured choice is never replaced
// silently by another.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/status.h"

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

/// The environment variable that names a provider table file.
inline constexpr std::string_view kProviderTableEnv = "TENFERRO_LINALG_PROVIDER_TABLE";

/// One row of the measured default table.
struct DefaultProviderRow {
  LinalgSlot slot = LinalgSlot::kSvd;
  /// Median microseconds per call at kDefaultTableSizes[c] (0: not measured).
  std::array<double, kNumSizeClasses> lapack_us{};
  std::array<double, kNumSizeClasses> eigen_us{};
  /// "eigen" when eigen_us[c] < kDefaultTableTieMargin * lapack_us[c] (both
  /// measured) and the slot is not LU-family (lapack_pivots_only), else
  /// "lapack".
  std::string_view pick(std::size_t size_class) const noexcept;
};

/// Whether `slot` takes LAPACK first whatever its row says (Note [One LU
/// arithmetic]): lu, solve and inverse.
bool lapack_pivots_only(LinalgSlot slot) noexcept;

/// A measured table (Note [Default provider table]).
struct ProviderTable {
  /// The command, date and machine load that produced the table.
  std::string source;
  /// One row per slot, in LinalgSlot order.
  std::array<DefaultProviderRow, kNumLinalgSlots> rows{};
};

/// The table in `text` (Note [Provider table file]); `file` names it in
/// errors. kInvalidArgument saying what was expected and found.
Result<ProviderTable> parse_provider_table(std::string_view text, std::string_view file);
/// The table in the file at `path`. kNotFound when it cannot be read,
/// kInvalidArgument when it is malformed; both name the file.
Result<ProviderTable> read_provider_table(const std::string& path);
/// `table` in the file format, as parse_provider_table reads it.
std::string format_provider_table(const ProviderTable& table);
/// The file the default engine reads given `explicit_path` (an option;
/// empty: none): see Note [Provider table file].
std::string default_provider_table_path(std::string_view explicit_path = {});

/// See the Note. Immutable after construction; thread-safe.
class LinalgProviderPolicy {
 public:
  /// The candidates for one problem (Note [Linalg candidates]).
  struct Choice {
    /// In order; empty: the slot is empty. Borrowed from the policy.
    std::span<const CpuLinalgProvider* const> candidates;
    std::string_view reason;  ///< why this order, one line for explain()
  };

  /// Every slot from `bundle` at every size; an empty slot makes its operations kUnsupported.
  static LinalgProviderPolicy fixed(LinalgProviderBundle bundle);
  /// `table` over `lapack` and `eigen`. Either may be null (the other then
  /// is the only candidate at every size of every slot); both null is a
  /// policy with every slot empty. `lapack_missing`: why `lapack` is null
  /// (its load error), named in the reasons that pick it.
  static LinalgProviderPolicy measured(const ProviderTable& table, std::shared_ptr<const CpuLinalgProvider> lapack,
                                       std::shared_ptr<const CpuLinalgProvider> eigen,
                                       std::string_view lapack_missing = {});

  /// The candidates for `slot` at matrix size `size` (= max(m, n)). No
  /// allocation.
  Choice choose(LinalgSlot slot, std::int64_t size) const noexcept;
  /// One line per slot.
  std::string describe() const;
  /// The table a measured policy was built from (source empty for a fixed one).
  const ProviderTable& table() const noexcept { return table_; }

 private:
  struct SlotRule {
    /// Per size class: the candidates in order and why.
    std::array<std::vector<const CpuLinalgProvider*>, kNumSizeClasses> candidates;
    std::array<std::string, kNumSizeClasses> reason;
  };
  /// Keeps the candidates alive.
  std::vector<std::shared_ptr<const CpuLinalgProvider>> owned_;
  std::array<SlotRule, kNumLinalgSlots> rules_;
  ProviderTable table_;
};

}  // namespace tenferro::linalg
