// BenchmarkInstance: one einsum problem in the instance-file format of the
// einsum benchmark (../shared/bench/instances/*.json): row-major
// format_string, shapes, dtype and reference paths in opt_einsum's pairwise
// format with their log10 flops and log2 size.
// Tests, benchmarks and the `tenferro einsum` command read instances here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/dtype.h"

namespace tenferro::einsum {

/// A reference contraction path of an instance file.
struct ReferencePath {
  /// opt_einsum pairs (ContractionOrder::from_opt_einsum_path).
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  /// As recorded in the file (Note [Flop convention] in cost_model.h).
  double log10_flops = 0.0;
  double log2_size = 0.0;
};

/// One instance file. Plain value type.
struct BenchmarkInstance {
  std::string name;
  std::string format_string;
  std::vector<std::vector<std::int64_t>> shapes;
  DType dtype = DType::kFloat64;
  std::optional<ReferencePath> opt_flops;
  std::optional<ReferencePath> opt_size;

  /// Borrowed views of `shapes`, valid while this instance lives unchanged.
  std::vector<IntArrayRef> shape_refs() const;
};

/// Parses instance JSON. kInvalidArgument names the missing or malformed
/// field (also a shape count that differs from the format_string's
/// operands or from num_tensors, and a reference path that does not
/// contract the inputs); files without a format_string
/// (permutation_patterns.json) are kInvalidArgument too. An extent of 2^63
/// or more is kSizeOverflow.
Result<BenchmarkInstance> parse_benchmark_instance(std::string_view json_text);
/// Reads and parses `path`, which must be a regular file of at most 1 GiB:
/// kNotFound / kPermissionDenied with the system's reason when it cannot be
/// opened, kInvalidArgument for a directory, FIFO or device (refused before
/// reading), kResourceExhausted for a larger file (input_file.h).
Result<BenchmarkInstance> load_benchmark_instance(const std::string& path);

}  // namespace tenferro::einsum
