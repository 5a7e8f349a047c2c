// Test support for the einsum tests (not part of the library): small dense
// tensors, a brute-force einsum that sums over every label assignment (an
// independent reference), a naive executor that follows a ContractionTree
// step by step (so a wrong label group or order shows up as a wrong value),
// random networks, and access to the shared instance files and numpy.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tenferro/base/random.h"
#include "tenferro/einsum.h"

namespace tenferro::einsum::test_support {

/// A row-major dense float64 tensor.
struct Dense {
  std::vector<std::int64_t> shape;
  std::vector<double> data;
};

inline std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  return n;
}

/// Deterministic pseudo-random values in [-1, 1).
inline Dense random_dense(const std::vector<std::int64_t>& shape, std::uint64_t seed) {
  Rng rng(seed);
  Dense t{shape, std::vector<double>(static_cast<std::size_t>(numel(shape)))};
  for (double& v : t.data) v = 2.0 * rng.uniform() - 1.0;
  return t;
}

/// Calls f(index) for every multi-index of `extents` (row-major order).
template <class F>
void for_each_index(const std::vector<std::int64_t>& extents, F&& f) {
  for (std::int64_t e : extents)
    if (e == 0) return;
  std::vector<std::int64_t> index(extents.size(), 0);
  while (true) {
    f(index);
    std::size_t axis = extents.size();
    while (axis > 0) {
      --axis;
      if (++index[axis] < extents[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (extents.empty()) return;
  }
}

inline std::int64_t offset_of(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& index) {
  std::int64_t offset = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) offset = offset * shape[a] + index[a];
  return offset;
}

/// Sums the product of all operands over every assignment of every label.
inline Dense brute_force_einsum(const Network& net, const std::vector<Dense>& operands) {
  std::vector<std::int64_t> extents;
  for (const LabelInfo& info : net.labels()) extents.push_back(info.extent);
  Dense out{net.output_shape(), {}};
  out.data.assign(static_cast<std::size_t>(numel(out.shape)), 0.0);
  std::vector<std::int64_t> operand_index, output_index(net.output().size());
  for_each_index(extents, [&](const std::vector<std::int64_t>& value) {
    double product = 1.0;
    for (std::int32_t i = 0; i < net.num_operands(); ++i) {
      const NetworkOperand& op = net.operand(i);
      operand_index.assign(op.axis_labels.size(), 0);
      for (std::size_t a = 0; a < op.axis_labels.size(); ++a)
        operand_index[a] = op.axis_labels[a] == kBroadcastAxis ? 0 : value[static_cast<std::size_t>(op.axis_labels[a])];
      product *=
          operands[static_cast<std::size_t>(i)]
              .data[static_cast<std::size_t>(offset_of(operands[static_cast<std::size_t>(i)].shape, operand_index))];
    }
    for (std::size_t a = 0; a < net.output().size(); ++a)
      output_index[a] = value[static_cast<std::size_t>(net.output()[a])];
    out.data[static_cast<std::size_t>(offset_of(out.shape, output_index))] += product;
  });
  return out;
}

/// A tensor over labels (one axis per label, in `labels` order).
struct Labelled {
  LabelList labels;
  Dense tensor;
};

/// Generic naive contraction: out[out_labels] = sum over `summed` of the
/// product of the given labelled tensors.
inline Labelled naive_product(const Network& net, const std::vector<const Labelled*>& factors,
                              const LabelList& out_labels, const LabelList& summed) {
  LabelList all = out_labels;
  all.append(summed.begin(), summed.end());
  std::vector<std::int64_t> extents;
  for (LabelId l : all) extents.push_back(net.extent(l));
  Labelled out{out_labels, {{}, {}}};
  for (LabelId l : out_labels) out.tensor.shape.push_back(net.extent(l));
  out.tensor.data.assign(static_cast<std::size_t>(numel(out.tensor.shape)), 0.0);
  std::vector<std::int64_t> index;
  for_each_index(extents, [&](const std::vector<std::int64_t>& value) {
    const auto value_of = [&](LabelId l) {
      return value[static_cast<std::size_t>(std::find(all.begin(), all.end(), l) - all.begin())];
    };
    double product = 1.0;
    for (const Labelled* f : factors) {
      index.clear();
      for (LabelId l : f->labels) index.push_back(value_of(l));
      product *= f->tensor.data[static_cast<std::size_t>(offset_of(f->tensor.shape, index))];
    }
    index.clear();
    for (LabelId l : out_labels) index.push_back(value_of(l));
    out.tensor.data[static_cast<std::size_t>(offset_of(out.tensor.shape, index))] += product;
  });
  return out;
}

/// Executes `tree` step by step as Note [Step semantics] describes.
inline Dense execute_tree(const ContractionTree& tree, const std::vector<Dense>& operands) {
  const Network& net = tree.network();
  std::vector<Labelled> nodes;
  // Input nodes: diagonals taken, broadcast axes indexed at 0.
  for (std::int32_t i = 0; i < net.num_operands(); ++i) {
    const NetworkOperand& op = net.operand(i);
    const Dense& src = operands[static_cast<std::size_t>(i)];
    Labelled node{tree.node_labels(i), {{}, {}}};
    for (LabelId l : node.labels) node.tensor.shape.push_back(net.extent(l));
    node.tensor.data.resize(static_cast<std::size_t>(numel(node.tensor.shape)));
    std::vector<std::int64_t> src_index(op.axis_labels.size());
    for_each_index(node.tensor.shape, [&](const std::vector<std::int64_t>& index) {
      for (std::size_t a = 0; a < op.axis_labels.size(); ++a) {
        const LabelId l = op.axis_labels[a];
        src_index[a] = l == kBroadcastAxis
                           ? 0
                           : index[static_cast<std::size_t>(std::find(node.labels.begin(), node.labels.end(), l) -
                                                            node.labels.begin())];
      }
      node.tensor.data[static_cast<std::size_t>(offset_of(node.tensor.shape, index))] =
          src.data[static_cast<std::size_t>(offset_of(src.shape, src_index))];
    });
    nodes.push_back(std::move(node));
  }
  if (tree.steps().empty()) {
    const Labelled out = naive_product(net, {&nodes[0]}, net.output(), tree.root_summed());
    return out.tensor;
  }
  for (const ContractionStep& step : tree.steps()) {
    const auto presum = [&](const Labelled& child, const LabelList& summed) {
      LabelList kept;
      for (LabelId l : child.labels)
        if (std::find(summed.begin(), summed.end(), l) == summed.end()) kept.push_back(l);
      return naive_product(net, {&child}, kept, summed);
    };
    const Labelled lhs = presum(nodes[static_cast<std::size_t>(step.lhs)], step.lhs_summed);
    const Labelled rhs = presum(nodes[static_cast<std::size_t>(step.rhs)], step.rhs_summed);
    nodes.push_back(naive_product(net, {&lhs, &rhs}, step.result, step.contracted));
  }
  return nodes.back().tensor;
}

inline double max_abs_diff(const Dense& a, const Dense& b) {
  if (a.shape != b.shape || a.data.size() != b.data.size()) return INFINITY;
  double diff = 0.0;
  for (std::size_t i = 0; i < a.data.size(); ++i) diff = std::max(diff, std::abs(a.data[i] - b.data[i]));
  return diff;
}

/// Random operand data for `net`'s original shapes.
inline std::vector<Dense> random_operands(const std::vector<std::vector<std::int64_t>>& shapes, std::uint64_t seed) {
  std::vector<Dense> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) out.push_back(random_dense(shapes[i], seed * 131 + i));
  return out;
}

inline std::vector<IntArrayRef> refs(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::vector<IntArrayRef> out;
  for (const auto& s : shapes) out.emplace_back(s);
  return out;
}

/// A random einsum over ASCII letters: `inputs` operands of rank 0..max_rank
/// over `num_labels` labels with extents 1..max_extent, some repeats, some
/// labels only in one operand, an explicit random output.
struct RandomEinsum {
  std::string subscripts;
  std::vector<std::vector<std::int64_t>> shapes;
};
inline RandomEinsum random_einsum(std::uint64_t seed, int inputs, int num_labels, int max_rank, int max_extent,
                                  bool allow_repeats = true) {
  Rng rng(seed);
  std::vector<std::int64_t> extent(static_cast<std::size_t>(num_labels));
  for (auto& e : extent) e = 1 + rng.below(static_cast<std::uint32_t>(max_extent));
  RandomEinsum out;
  std::vector<int> used(static_cast<std::size_t>(num_labels), 0);
  for (int i = 0; i < inputs; ++i) {
    if (i > 0) out.subscripts += ',';
    const int rank = static_cast<int>(rng.below(static_cast<std::uint32_t>(max_rank + 1)));
    std::vector<int> labels;
    for (int a = 0; a < rank; ++a) {
      int label = static_cast<int>(rng.below(static_cast<std::uint32_t>(num_labels)));
      // Without repeats, take the next label not yet in this operand.
      for (int tries = 0;
           !allow_repeats && tries < num_labels && std::find(labels.begin(), labels.end(), label) != labels.end();
           ++tries)
        label = (label + 1) % num_labels;
      if (!allow_repeats && std::find(labels.begin(), labels.end(), label) != labels.end()) break;
      labels.push_back(label);
    }
    std::vector<std::int64_t> shape;
    for (int label : labels) {
      out.subscripts += static_cast<char>('a' + label);
      shape.push_back(extent[static_cast<std::size_t>(label)]);
      ++used[static_cast<std::size_t>(label)];
    }
    out.shapes.push_back(shape);
  }
  out.subscripts += "->";
  for (int l = 0; l < num_labels; ++l)
    if (used[static_cast<std::size_t>(l)] > 0 && rng.below(3) == 0) out.subscripts += static_cast<char>('a' + l);
  return out;
}

/// The shared directory with bench/instances, or empty when absent.
inline std::string shared_dir() {
  const std::string dir = TENFERRO_SHARED_DIR;
  return !dir.empty() && std::filesystem::is_directory(dir + "/bench/instances") ? dir : std::string();
}

/// The instance files that describe einsum problems, sorted by name.
inline std::vector<std::string> instance_files() {
  std::vector<std::string> files;
  const std::string dir = shared_dir();
  if (dir.empty()) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/bench/instances")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".json" && entry.path().filename() != "permutation_patterns.json")
      files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Runs `script` with the reference python; its stdout, or nullopt when
/// python (with numpy) is unavailable.
inline std::optional<std::string> run_python(const std::string& script) {
  const std::string python = TENFERRO_REFERENCE_PYTHON;
  if (python.empty() || !std::filesystem::exists(python)) return std::nullopt;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tenferro_einsum_" + std::to_string(::getpid()) + ".py")).string();
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return std::nullopt;
    std::fputs(script.c_str(), f);
    std::fclose(f);
  }
  std::FILE* pipe = ::popen((python + " " + path + " 2>/dev/null").c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  const int rc = ::pclose(pipe);
  std::filesystem::remove(path);
  if (rc != 0) return std::nullopt;
  return out;
}

}  // namespace tenferro::einsum::test_support
