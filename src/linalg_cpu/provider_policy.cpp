// LinalgProviderPolicy, its candidate lists and the provider table file
// (Notes [Default provider table], [Linalg candidates] and [Provider table
// file] in provider_policy.h).
#include "tenferro/linalg_cpu/provider_policy.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tenferro/base/build_info.h"

namespace tenferro::linalg {

namespace {

#ifndef TENFERRO_LINALG_PROVIDER_TABLE_BUILD_DIR
#define TENFERRO_LINALG_PROVIDER_TABLE_BUILD_DIR ""
#endif

constexpr std::string_view kTableFormat = "tenferro.linalg_provider_table";
constexpr std::string_view kTableFileName = "linalg_provider_table.json";

Status malformed(std::string_view file, std::string_view what) {
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "linalg provider table {}: {}", file,
                    what);
}

// `row[key]`: kNumSizeClasses non-negative numbers.
Result<std::array<double, kNumSizeClasses>> read_medians(const nlohmann::json& row, std::string_view key,
                                                         std::string_view slot, std::string_view file) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_array() || it->size() != kNumSizeClasses) {
    return malformed(file, fmt::format("row '{}': expected \"{}\" to be an array of {} numbers, found {}", slot, key,
                                       kNumSizeClasses, it == row.end() ? "none" : it->dump()));
  }
  std::array<double, kNumSizeClasses> out{};
  for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
    const nlohmann::json& v = (*it)[c];
    if (!v.is_number() || v.get<double>() < 0) {
      return malformed(
          file, fmt::format("row '{}': expected \"{}\"[{}] to be a number >= 0 (0: not measured), found {}", slot, key,
                            c, v.dump()));
    }
    out[c] = v.get<double>();
  }
  return out;
}

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
  if (lapack_pivots_only(slot)) return "lapack";  // Note [One LU arithmetic]
  const double l = lapack_us[size_class], e = eigen_us[size_class];
  return l > 0 && e > 0 && e < kDefaultTableTieMargin * l ? "eigen" : "lapack";
}

bool lapack_pivots_only(LinalgSlot slot) noexcept {
  return slot == LinalgSlot::kLu || slot == LinalgSlot::kSolve || slot == LinalgSlot::kInverse;
}

Result<ProviderTable> parse_provider_table(std::string_view text, std::string_view file) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return malformed(file, "expected a JSON document, found text that does not parse");
  if (!doc.is_object()) return malformed(file, fmt::format("expected a JSON object, found {}", doc.type_name()));
  const auto format = doc.find("format");
  if (format == doc.end() || *format != kTableFormat) {
    return malformed(file, fmt::format("expected \"format\": \"{}\", found {}", kTableFormat,
                                       format == doc.end() ? "none" : format->dump()));
  }
  const auto version = doc.find("version");
  if (version == doc.end() || *version != 1) {
    return malformed(file,
                     fmt::format("expected \"version\": 1, found {}", version == doc.end() ? "none" : version->dump()));
  }
  const auto sizes = doc.find("sizes");
  const nlohmann::json want_sizes(kDefaultTableSizes);
  if (sizes == doc.end() || *sizes != want_sizes) {
    return malformed(file, fmt::format("expected \"sizes\": {} (the size classes are fixed), found {}",
                                       want_sizes.dump(), sizes == doc.end() ? "none" : sizes->dump()));
  }
  ProviderTable table;
  if (const auto source = doc.find("source"); source != doc.end() && source->is_string()) {
    table.source = source->get<std::string>();
  } else {
    return malformed(file, "expected \"source\" to be a string naming the command, date and machine");
  }
  const auto rows = doc.find("rows");
  if (rows == doc.end() || !rows->is_array()) return malformed(file, "expected \"rows\" to be an array");
  std::array<bool, kNumLinalgSlots> seen{};
  for (const nlohmann::json& row : *rows) {
    const auto slot_name = row.is_object() ? row.find("slot") : row.end();
    if (!row.is_object() || slot_name == row.end() || !slot_name->is_string()) {
      return malformed(file,
                       fmt::format("expected each row to be an object with a \"slot\" name, found {}", row.dump()));
    }
    const std::string name = slot_name->get<std::string>();
    int slot = 0;
    while (slot < kNumLinalgSlots && to_string(static_cast<LinalgSlot>(slot)) != name) ++slot;
    if (slot == kNumLinalgSlots) return malformed(file, fmt::format("expected a linalg slot name, found '{}'", name));
    const auto index = static_cast<std::size_t>(slot);
    if (seen[index]) return malformed(file, fmt::format("expected one row per slot, found '{}' twice", name));
    seen[index] = true;
    DefaultProviderRow& out = table.rows[index];
    out.slot = static_cast<LinalgSlot>(slot);
    TENFERRO_ASSIGN_OR_RETURN(out.lapack_us, read_medians(row, "lapack_us", name, file));
    TENFERRO_ASSIGN_OR_RETURN(out.eigen_us, read_medians(row, "eigen_us", name, file));
  }
  for (int slot = 0; slot < kNumLinalgSlots; ++slot) {
    if (!seen[static_cast<std::size_t>(slot)]) {
      return malformed(file, fmt::format("expected a row for every slot, found none for '{}'",
                                         to_string(static_cast<LinalgSlot>(slot))));
    }
  }
  return table;
}

Result<ProviderTable> read_provider_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in) {
    return make_error(ErrorCode::kNotFound, ErrorStage::kConfiguration,
                      "linalg provider table {}: expected a readable file, found: {}", path, std::strerror(errno));
  }
  return parse_provider_table(text.str(), path);
}

std::string format_provider_table(const ProviderTable& table) {
  const auto list = [](const std::array<double, kNumSizeClasses>& v) {
    std::string out;
    for (double x : v) out += fmt::format("{}{:.4g}", out.empty() ? "" : ", ", x);
    return out;
  };
  std::string out = fmt::format(
      "{{\n  \"format\": \"{}\",\n  \"version\": 1,\n  \"source\": {},\n  \"sizes\": [{}],\n  \"rows\": [\n",
      kTableFormat, nlohmann::json(table.source).dump(), fmt::join(kDefaultTableSizes, ", "));
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const DefaultProviderRow& row = table.rows[i];
    out += fmt::format("    {{\"slot\": \"{}\", \"lapack_us\": [{}], \"eigen_us\": [{}]}}{}\n", to_string(row.slot),
                       list(row.lapack_us), list(row.eigen_us), i + 1 < table.rows.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return out;
}

std::string default_provider_table_path(std::string_view explicit_path) {
  if (!explicit_path.empty()) return std::string(explicit_path);
  // Reading the environment at engine construction (not cached): a
  // configuration input like the option, not process state of ours.
  if (const char* env = std::getenv(kProviderTableEnv.data()); env != nullptr && *env != '\0') return env;
  // Note [Locating provider files]: the build tree's copy sits in its data/.
  const std::string_view build = TENFERRO_LINALG_PROVIDER_TABLE_BUILD_DIR;
  return fmt::format("{}/{}", locate_provider_file(kTableFileName, build, ProviderFileKind::kData), kTableFileName);
}

LinalgProviderPolicy LinalgProviderPolicy::fixed(LinalgProviderBundle bundle) {
  LinalgProviderPolicy policy;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(s)];
    const auto slot = static_cast<LinalgSlot>(s);
    const std::shared_ptr<const CpuLinalgProvider> provider = bundle.get(slot);
    const std::string reason = provider != nullptr ? fmt::format("explicit bundle slot {}", to_string(slot))
                                                   : fmt::format("explicit bundle: slot {} is empty", to_string(slot));
    if (provider != nullptr) {
      rule.candidates.fill({provider.get()});
      policy.owned_.push_back(provider);
    }
    rule.reason.fill(reason);
  }
  return policy;
}

LinalgProviderPolicy LinalgProviderPolicy::measured(const ProviderTable& table,
                                                    std::shared_ptr<const CpuLinalgProvider> lapack,
                                                    std::shared_ptr<const CpuLinalgProvider> eigen,
                                                    std::string_view lapack_missing) {
  LinalgProviderPolicy policy;
  policy.table_ = table;
  for (const auto& p : {lapack, eigen})
    if (p != nullptr) policy.owned_.push_back(p);
  for (const DefaultProviderRow& row : table.rows) {
    SlotRule& rule = policy.rules_[static_cast<std::size_t>(row.slot)];
    for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
      const std::string_view pick = row.pick(c);
      const CpuLinalgProvider* first = pick == "lapack" ? lapack.get() : eigen.get();
      const CpuLinalgProvider* second = pick == "lapack" ? eigen.get() : lapack.get();
      for (const CpuLinalgProvider* p : {first, second})
        if (p != nullptr) rule.candidates[c].push_back(p);
      rule.reason[c] = fmt::format(
          "default table: {} {} measured at n={}: lapack {} us, eigen {} us -> {}{}{}", to_string(row.slot),
          class_range(c), kDefaultTableSizes[c], row.lapack_us[c] > 0 ? fmt::format("{:.4g}", row.lapack_us[c]) : "?",
          row.eigen_us[c] > 0 ? fmt::format("{:.4g}", row.eigen_us[c]) : "?", pick,
          lapack_pivots_only(row.slot) ? " (LU family: LAPACK's pivots first)" : "",
          first == nullptr
              ? fmt::format(
                    "; {} is not available{}", pick,
                    pick == "lapack" && !lapack_missing.empty() ? fmt::format(" ({})", lapack_missing) : std::string())
              : "");
    }
  }
  return policy;
}

LinalgProviderPolicy::Choice LinalgProviderPolicy::choose(LinalgSlot slot, std::int64_t size) const noexcept {
  if (slot == LinalgSlot::kNone) return {};
  const SlotRule& rule = rules_[static_cast<std::size_t>(slot)];
  const std::size_t c = default_size_class(size);
  return Choice{rule.candidates[c], rule.reason[c]};
}

std::string LinalgProviderPolicy::describe() const {
  std::string out;
  for (int s = 0; s < kNumLinalgSlots; ++s) {
    const SlotRule& rule = rules_[static_cast<std::size_t>(s)];
    const auto names = [](const std::vector<const CpuLinalgProvider*>& candidates) {
      if (candidates.empty()) return std::string("(empty)");
      std::string out;
      for (const CpuLinalgProvider* p : candidates) out += fmt::format("{}{}", out.empty() ? "" : " then ", p->name());
      return out;
    };
    out += fmt::format("{}:", to_string(static_cast<LinalgSlot>(s)));
    if (std::all_of(rule.candidates.begin(), rule.candidates.end(),
                    [&](const auto& c) { return c == rule.candidates[0]; })) {
      out += fmt::format(" {}\n", names(rule.candidates[0]));
      continue;
    }
    for (std::size_t c = 0; c < kNumSizeClasses; ++c) {
      out += fmt::format("{} {} for {}", c == 0 ? "" : ",", names(rule.candidates[c]), class_range(c));
    }
    out += "\n";
  }
  return out;
}

}  // namespace tenferro::linalg
