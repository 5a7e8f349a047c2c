// `tenferro bench permute`: cpu::copy_into materializing every permutation
// pattern of ../shared/bench/instances/permutation_patterns.json, against a
// memcpy of the same bytes measured alternately in the same run. Bandwidth
// counts bytes read plus bytes written. Skips (exit 0) when the pattern file
// is absent.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_command.h"
#include "bench/kernel_bench_util.h"
#include "tenferro/base/input_file.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::bench {
namespace {

struct Pattern {
  std::string id;
  DType dtype = DType::kFloat64;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> perm;
  std::vector<std::int64_t> src_strides;  // empty: use src_order
  MemoryOrder src_order = MemoryOrder::kColMajor;
  MemoryOrder dst_order = MemoryOrder::kColMajor;
};

std::optional<DType> pattern_dtype(const std::string& s) {
  if (s == "f64") return DType::kFloat64;
  if (s == "f32") return DType::kFloat32;
  if (s == "c64") return DType::kComplex64;
  if (s == "c128") return DType::kComplex128;
  return parse_dtype(s);
}

std::optional<Pattern> parse_pattern(const nlohmann::json& j, std::string& why) {
  Pattern p;
  p.id = j.at("id").get<std::string>();
  const auto dtype = pattern_dtype(j.value("dtype", "f64"));
  if (!dtype) {
    why = "unknown dtype";
    return std::nullopt;
  }
  p.dtype = *dtype;
  p.shape = j.at("shape").get<std::vector<std::int64_t>>();
  p.perm = j.at("perm").get<std::vector<std::int64_t>>();
  auto order_of = [&](const nlohmann::json& layout, MemoryOrder& order, std::vector<std::int64_t>* strides) {
    const std::string kind = layout.value("kind", "col_major");
    if (kind == "col_major") {
      order = MemoryOrder::kColMajor;
    } else if (kind == "row_major") {
      order = MemoryOrder::kRowMajor;
    } else if (kind == "explicit_strides" && strides != nullptr) {
      *strides = layout.at("strides").get<std::vector<std::int64_t>>();
    } else {
      return false;
    }
    return true;
  };
  if (!order_of(j.value("src_layout", nlohmann::json::object()), p.src_order, &p.src_strides) ||
      !order_of(j.value("dst_layout", nlohmann::json::object()), p.dst_order, nullptr)) {
    why = "unsupported layout";
    return std::nullopt;
  }
  return p;
}

// The source tensor of `p` (every element set to its storage index).
Result<Tensor> make_source(const Pattern& p) {
  if (p.src_strides.empty()) {
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(p.shape, p.dtype, p.src_order));
    return t;
  }
  std::int64_t extent = 1;
  for (std::size_t d = 0; d < p.shape.size(); ++d) extent += (p.shape[d] - 1) * p.src_strides[d];
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage,
                            Storage::allocate_host(static_cast<std::size_t>(extent) * dtype_size(p.dtype)));
  return Tensor::from_storage(std::move(storage), p.dtype, p.shape, p.src_strides);
}

void fill_index_values(const Tensor& t) {
  const std::size_t n = t.storage()->nbytes() / dtype_size(t.dtype());
  visit_dtype(t.dtype(), [&]<class T>(T) {
    T* data = static_cast<T*>(t.storage()->data());
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = (i & 1) != 0;
      } else if constexpr (std::is_arithmetic_v<T>) {
        data[i] = static_cast<T>(i);
      } else {
        data[i] = T(static_cast<typename T::value_type>(i), 0);
      }
    }
  });
}

// Checks a sample of destination elements against the source.
bool spot_check(const Tensor& src_view, const Tensor& dst) {
  const std::int64_t n = dst.numel();
  const std::size_t item = dtype_size(dst.dtype());
  for (std::int64_t k = 0; k < 257; ++k) {
    std::int64_t flat = (k * 2654435761LL) % std::max<std::int64_t>(n, 1);
    std::int64_t so = 0, d_off = 0;
    for (std::int64_t d = dst.rank(); d-- > 0;) {
      const std::int64_t i = flat % dst.shape()[d];
      flat /= dst.shape()[d];
      so += i * src_view.strides()[d];
      d_off += i * dst.strides()[d];
    }
    if (std::memcmp(static_cast<const char*>(src_view.data()) + so * static_cast<std::int64_t>(item),
                    static_cast<const char*>(dst.data()) + d_off * static_cast<std::int64_t>(item), item) != 0) {
      return false;
    }
  }
  return true;
}

std::string default_pattern_file() {
#ifdef TENFERRO_SHARED_DIR
  return std::string(TENFERRO_SHARED_DIR) + "/bench/instances/permutation_patterns.json";
#else
  return "../shared/bench/instances/permutation_patterns.json";
#endif
}

}  // namespace

int run_permute_suite(const SuiteOptions& options, Reporter& reporter) {
  const std::string path = options.inputs.empty() ? default_pattern_file() : options.inputs.front();
  Result<std::string> text = read_input_file(path, ".json pattern file", std::uint64_t{1} << 30);
  if (!text.ok()) {
    // Without a named file the default one is optional (../shared).
    reporter.progress(fmt::format("{}: nothing to measure", text.status().to_string()));
    return options.inputs.empty() ? 0 : 1;
  }
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("patterns")) {
    reporter.progress(fmt::format("{} is not a permutation pattern file", path));
    return 1;
  }
  const int rounds = options.runs > 0 ? options.runs : 7;
  // --quick: patterns up to 64 MiB per operand.
  const std::int64_t max_bytes = options.quick ? (std::int64_t{64} << 20) : (std::int64_t{1} << 40);
  for (int threads : options.threads) {
    const auto ctx = make_context(threads);
    double log_ours = 0, log_base = 0, worst = 1e300;
    int measured = 0;
    for (const nlohmann::json& j : doc["patterns"]) {
      std::string why;
      const auto pattern = parse_pattern(j, why);
      if (!pattern) {
        reporter.progress(fmt::format("skipping {}: {}", j.value("id", "?"), why));
        continue;
      }
      const Pattern& p = *pattern;
      auto source = make_source(p);
      if (!source.ok()) {
        reporter.progress(fmt::format("skipping {}: {}", p.id, source.status().to_string()));
        continue;
      }
      const auto bytes = static_cast<std::int64_t>(source->nbytes());
      if (bytes > max_bytes) {
        reporter.progress(fmt::format("skipping {} in --quick mode ({} MiB)", p.id, bytes >> 20));
        continue;
      }
      fill_index_values(*source);
      auto view = source->permute(p.perm);
      auto dst = view.ok() ? Tensor::empty(view->shape(), p.dtype, p.dst_order) : Result<Tensor>(view.status());
      if (!dst.ok()) {
        reporter.progress(fmt::format("skipping {}: {}", p.id, dst.status().to_string()));
        continue;
      }
      reporter.progress(fmt::format("{} ({} MiB, {} thread(s))", p.id, bytes >> 20, threads));
      cpu::KernelStats stats;
      Status status;
      const Interleaved t = time_interleaved(
          [&] { status = cpu::copy_into(view->view(), dst->view(), *ctx, &stats); },
          [&] { parallel_memcpy(dst->data(), source->storage()->data(), static_cast<std::size_t>(bytes), *ctx); },
          rounds);
      // The last timed call was the baseline: copy once more, then check.
      status = cpu::copy_into(view->view(), dst->view(), *ctx, &stats);
      if (!status.ok() || !spot_check(*view, *dst)) {
        reporter.progress(fmt::format("{}: wrong result ({})", p.id, status.ok() ? "values" : status.to_string()));
        return 1;
      }
      const double moved = 2.0 * static_cast<double>(bytes) / 1e9;
      Case c{fmt::format("perm_{}_t{}", p.id, threads),
             moved / t.ours.median(),
             "GB/s",
             moved / t.baseline.median(),
             "memcpy",
             threads,
             static_cast<int>(t.ours.runs())};
      c.extra["path"] = stats.tiled_transposes > 0 ? (stats.vector_tiles > 0 ? "simd_tiles" : "scalar_tiles")
                        : stats.memcpy_copies > 0  ? "memcpy"
                                                   : "runs";
      c.extra["streaming"] = stats.streaming_stores > 0;
      c.extra["mib"] = bytes >> 20;
      log_ours += std::log(c.ours);
      log_base += std::log(*c.baseline);
      worst = std::min(worst, c.ours / *c.baseline);
      ++measured;
      reporter.add(std::move(c));
    }
    if (measured > 0) {
      Case g{fmt::format("perm_geomean_t{}", threads),
             std::exp(log_ours / measured),
             "GB/s",
             std::exp(log_base / measured),
             "memcpy",
             threads,
             measured};
      g.extra["worst_ratio"] = worst;
      reporter.add(std::move(g));
    }
  }
  return 0;
}

}  // namespace tenferro::bench
