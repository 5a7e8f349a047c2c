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

namespace {

// opt_einsum's optimizer names, run by tenferro's nearest planner: the
// exhaustive and dynamic-programming searches by 'auto' (exact up to 10
// operands, a refined greedy path beyond), the randomised greedy ones by
// TreeSA, 'eager' and 'branch-1' by greedy.
std::optional<PlannerKind> opt_einsum_planner(std::string_view name) {
  if (name == "dp" || name == "auto-hq" || name == "branch-all" || name == "branch-2") return PlannerKind::kAuto;
  if (name == "random-greedy" || name == "random-greedy-128") return PlannerKind::kTreeSA;
  if (name == "eager" || name == "branch-1") return PlannerKind::kGreedy;
  return std::nullopt;
}

PlannerKind planner_named(py::handle optimize) {
  const std::string name = py::cast<std::string>(optimize);
  std::optional<PlannerKind> kind = einsum::parse_planner_kind(name);
  if (!kind) kind = opt_einsum_planner(name);
  if (!kind || *kind == PlannerKind::kExplicitPath) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("optimize='{}': expected 'auto', 'greedy', 'optimal', 'treesa', 'nested', "
                            "'left_to_right' (or opt_einsum's 'dp', 'branch-all', 'branch-2', 'branch-1', "
                            "'random-greedy', 'eager'), a bool, a (name, memory_limit) pair or a path (list of "
                            "index pairs)",
                            name));
  }
  return *kind;
}

}  // namespace

double memory_limit_of(py::handle value, const char* what) {
  if (value.is_none()) return 0;
  if (PyUnicode_Check(value.ptr())) {
    if (py::cast<std::string>(value) == "max_input") return kMaxInput;
  } else if (!PyBool_Check(value.ptr()) && (PyIndex_Check(value.ptr()) || PyFloat_Check(value.ptr()))) {
    const double limit = PyFloat_AsDouble(value.ptr());
    if (limit == -1.0 && PyErr_Occurred() != nullptr) throw py::error_already_set();
    if (limit > 0) return limit;
    if (limit == -1.0) return 0;  // opt_einsum's "no limit"
  }
  raise_error(ErrorCode::kInvalidArgument,
              fmt::format("{}: expected a positive number of elements, 'max_input', -1 or None, found {}", what,
                          std::string(py::repr(value))));
}

// Note [Memory limits]
// numpy's optimize=(name, memory_limit) and opt_einsum's memory_limit=
// bound the largest intermediate, in elements ('max_input': the largest
// operand's size). numpy and opt_einsum search for a path without a larger
// intermediate (numpy falls back to one unoptimised einsum when there is
// none); tenferro plans the path as usual and slices it (Note [Sliced
// einsum in Python]) so that every intermediate of a slice fits the bound:
// the same memory bound, without giving up the path's flops (beyond the
// slicing overhead contract_path reports). The bound in bytes is the limit
// times the size of the dtype the einsum computes in.
double slicing_bound(const OptimizeSpec& spec, double max_intermediate_bytes, double largest_input,
                     std::size_t element_bytes) {
  if (max_intermediate_bytes > 0) return max_intermediate_bytes;
  const double elements = spec.memory_limit == kMaxInput ? largest_input : spec.memory_limit;
  return std::max(elements, 0.0) * static_cast<double>(element_bytes);
}

OptimizeSpec parse_optimize(py::handle optimize) {
  OptimizeSpec spec;
  if (optimize.is_none()) return spec;  // auto
  if (optimize.ptr() == Py_True) {      // numpy's optimize=True: greedy
    spec.planner = PlannerKind::kGreedy;
    return spec;
  }
  if (optimize.ptr() == Py_False) {
    spec.planner = PlannerKind::kLeftToRight;
    return spec;
  }
  if (PyUnicode_Check(optimize.ptr())) {
    spec.planner = planner_named(optimize);
    return spec;
  }
  if (PyTuple_Check(optimize.ptr()) && PyTuple_GET_SIZE(optimize.ptr()) == 2 &&
      PyUnicode_Check(PyTuple_GET_ITEM(optimize.ptr(), 0)) &&
      (!PySequence_Check(PyTuple_GET_ITEM(optimize.ptr(), 1)) ||
       PyUnicode_Check(PyTuple_GET_ITEM(optimize.ptr(), 1)))) {
    // numpy's (name, memory_limit): Note [Memory limits].
    spec.planner = planner_named(PyTuple_GET_ITEM(optimize.ptr(), 0));
    spec.memory_limit = memory_limit_of(PyTuple_GET_ITEM(optimize.ptr(), 1), "optimize=(name, memory_limit)");
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
  // An int or a float, numpy's integer and real scalars included (a bound
  // computed as np.prod(shape) * 8 is a numpy.int64); never a bool.
  PyObject* v = value.ptr();
  const std::string kind =
      PyObject_HasAttrString(v, "dtype") ? std::string(py::str(value.attr("dtype").attr("kind"))) : std::string();
  const bool integer = !PyBool_Check(v) && kind != "b" && PyIndex_Check(v);
  const bool real = PyFloat_Check(v) || kind == "f";
  if (!integer && !real) {
    raise_type_error(
        fmt::format("max_intermediate_bytes must be a number of bytes or None, found {}", type_name(value)));
  }
  const double bytes = integer ? py::cast<double>(py::int_(py::reinterpret_borrow<py::object>(value)))
                               : py::cast<double>(py::float_(py::reinterpret_borrow<py::object>(value)));
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
    // Each pair contracts two operands into one: a complete path leaves one.
    const std::int64_t left = num_operands - static_cast<std::int64_t>(pairs.size());
    if (num_operands >= 1 && left != 1) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "optimize path: expected steps that contract the {} operands into one, found {} step{} that "
                        "leave{} {} (a path of numpy's or opt_einsum's form: ['einsum_path', (0, 1), ...] or "
                        "[(0, 1), ...])",
                        num_operands, spec.path.size(), spec.path.size() == 1 ? "" : "s",
                        spec.path.size() == 1 ? "s" : "", left < 1 ? "fewer than one" : std::to_string(left));
    }
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionOrder order,
                              einsum::ContractionOrder::from_opt_einsum_path(num_operands, pairs));
    policy.path = std::move(order);
  }
  return policy;
}

}  // namespace tenferro::python
