// einsum's planning arguments: optimize= and max_intermediate_bytes= (optimize.h).
#include "optimize.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "array_bridge.h"

namespace tenferro::python {

using einsum::PlannerKind;

OptimizeSpec parse_optimize(py::handle optimize) {
  OptimizeSpec spec;
  spec.by_default = optimize.is_none();
  if (optimize.is_none() || optimize.ptr() == Py_True) return spec;  // greedy
  if (optimize.ptr() == Py_False) {
    spec.planner = PlannerKind::kLeftToRight;
    return spec;
  }
  if (PyUnicode_Check(optimize.ptr())) {
    const std::string name = py::cast<std::string>(optimize);
    const std::optional<PlannerKind> kind = einsum::parse_planner_kind(name);
    if (!kind || *kind == PlannerKind::kExplicitPath) {
      raise_error(ErrorCode::kInvalidArgument,
                  fmt::format("optimize='{}': expected 'greedy', 'optimal', 'treesa', 'auto', 'nested', "
                              "'left_to_right', a bool or a path (list of index pairs)",
                              name));
    }
    spec.planner = *kind;
    return spec;
  }
  if (PyList_Check(optimize.ptr()) || PyTuple_Check(optimize.ptr())) {
    spec.planner = PlannerKind::kExplicitPath;
    py::sequence seq = py::reinterpret_borrow<py::sequence>(optimize);
    std::size_t start = 0;
    // numpy.einsum_path's format starts with the string 'einsum_path'.
    if (seq.size() > 0 && PyUnicode_Check(seq[0].ptr())) start = 1;
    for (std::size_t i = start; i < seq.size(); ++i) {
      py::handle step = seq[i];
      if (!PySequence_Check(step.ptr()) || PyUnicode_Check(step.ptr())) {
        raise_error(ErrorCode::kInvalidArgument,
                    fmt::format("optimize path step {}: expected a pair of operand positions, found {}", i - start,
                                type_name(step)));
      }
      py::sequence positions = py::reinterpret_borrow<py::sequence>(step);
      if (positions.size() == 1) continue;  // (0,): opt_einsum's path of a single operand
      if (positions.size() == 0) {
        raise_error(ErrorCode::kInvalidArgument,
                    fmt::format("optimize path step {}: expected operand positions, found an empty step", i - start));
      }
      std::vector<std::int64_t>& out = spec.path.emplace_back();
      for (py::handle p : positions) out.push_back(as_index(p, "optimize path"));
    }
    return spec;
  }
  raise_error(ErrorCode::kInvalidArgument,
              fmt::format("optimize: expected a planner name, a bool or a path, found {}", type_name(optimize)));
}

double max_intermediate_bytes_of(py::handle value) {
  if (value.is_none()) return 0.0;
  if (PyBool_Check(value.ptr()) || !(PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr()))) {
    raise_type_error(
        fmt::format("max_intermediate_bytes must be a number of bytes or None, found {}", type_name(value)));
  }
  const double bytes = py::cast<double>(value);
  if (!(bytes > 0.0)) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("max_intermediate_bytes={}: expected a positive number of bytes or None",
                            std::string(py::str(value))));
  }
  return bytes;
}

std::string path_key(const OptimizeSpec& spec) {
  std::string key;
  for (const std::vector<std::int64_t>& step : spec.path) {
    for (std::int64_t p : step) fmt::format_to(std::back_inserter(key), "{},", p);
    key.push_back(';');
  }
  return key;
}

namespace {

// opt_einsum's steps as pairs: a step of k positions contracts them and
// appends the result, so it is the pair of its two smallest positions
// (whose result goes last) and then each further position, shifted down
// by the operands removed before it, with the last result.
Result<std::vector<std::pair<std::int64_t, std::int64_t>>> pairwise_path(
    std::span<const std::vector<std::int64_t>> steps, std::int32_t num_operands) {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::int64_t live = num_operands;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    std::vector<std::int64_t> p = steps[s];
    if (p.size() == 2) {
      pairs.emplace_back(p[0], p[1]);
      live -= 1;
      continue;
    }
    std::sort(p.begin(), p.end());
    if (p.front() < 0 || p.back() >= live || std::adjacent_find(p.begin(), p.end()) != p.end()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "optimize path step {}: expected distinct positions below {} (the operands left), found {}", s,
                        live, fmt::join(steps[s], ", "));
    }
    pairs.emplace_back(p[0], p[1]);
    for (std::size_t k = 2; k < p.size(); ++k) {
      const std::int64_t left = live - static_cast<std::int64_t>(k) + 1;  // after k - 1 pair contractions
      pairs.emplace_back(p[k] - static_cast<std::int64_t>(k), left - 1);
    }
    live -= static_cast<std::int64_t>(p.size()) - 1;
  }
  return pairs;
}

}  // namespace

Result<einsum::PlanningPolicy> policy_of(const OptimizeSpec& spec, std::int32_t num_operands) {
  einsum::PlanningPolicy policy;
  policy.planner = spec.planner;
  if (spec.planner == einsum::PlannerKind::kExplicitPath) {
    TENFERRO_ASSIGN_OR_RETURN(auto pairs, pairwise_path(spec.path, num_operands));
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionOrder order,
                              einsum::ContractionOrder::from_opt_einsum_path(num_operands, pairs));
    policy.path = std::move(order);
  }
  return policy;
}

}  // namespace tenferro::python
