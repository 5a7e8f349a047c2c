// einsum's planning arguments: optimize= and max_intermediate_bytes= (optimize.h).
#include "optimize.h"

#include <optional>
#include <string>

#include <fmt/format.h>

#include "array_bridge.h"

namespace tenferro::python {

using einsum::PlannerKind;

OptimizeSpec parse_optimize(py::handle optimize) {
  OptimizeSpec spec;
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
      py::sequence pair = py::reinterpret_borrow<py::sequence>(step);
      if (pair.size() == 1) continue;  // (0,): opt_einsum's path of a single operand
      if (pair.size() != 2) {
        raise_error(ErrorCode::kInvalidArgument,
                    fmt::format("optimize path step {}: expected a pair of operand positions, found {} positions "
                                "(only pairwise contraction paths are supported)",
                                i - start, pair.size()));
      }
      spec.path.emplace_back(as_index(pair[0], "optimize path"), as_index(pair[1], "optimize path"));
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

Result<einsum::PlanningPolicy> policy_of(const OptimizeSpec& spec, std::int32_t num_operands) {
  einsum::PlanningPolicy policy;
  policy.planner = spec.planner;
  if (spec.planner == einsum::PlannerKind::kExplicitPath) {
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionOrder order,
                              einsum::ContractionOrder::from_opt_einsum_path(num_operands, spec.path));
    policy.path = std::move(order);
  }
  return policy;
}

}  // namespace tenferro::python
