// einsum's planning arguments, shared by the extension modules: optimize=
// (a planner name, a bool -- numpy's: True greedy, False left to right --
// or an explicit path in opt_einsum's pair format, numpy.einsum_path's
// output included) and max_intermediate_bytes=.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "tenferro/base/status.h"
#include "tenferro/einsum/planner.h"

namespace tenferro::python {

namespace py = pybind11;

/// How tenferro.einsum / contract_path choose a contraction path.
struct OptimizeSpec {
  einsum::PlannerKind planner = einsum::PlannerKind::kGreedy;
  /// optimize=None: greedy, or 'auto' (which keeps their order) for
  /// subscripts with parentheses.
  bool by_default = true;
  /// opt_einsum-format steps for kExplicitPath: operand positions in the
  /// current list, pairs or (as numpy.einsum_path writes outer products)
  /// more; policy_of() splits longer steps into pairs.
  std::vector<std::vector<std::int64_t>> path;
};

/// The path of `spec` as text for cache keys ("0,1;2,3,4;").
std::string path_key(const OptimizeSpec& spec);

/// `optimize` (None, a bool, a planner name or a path) as a spec; raises
/// InvalidArgumentError for anything else.
OptimizeSpec parse_optimize(py::handle optimize);

/// einsum's max_intermediate_bytes= (Note [Sliced einsum in Python]): a
/// positive number of bytes, 0 for None; a TypeError for another type, an
/// InvalidArgumentError for a value that is not positive.
double max_intermediate_bytes_of(py::handle value);

/// The planning policy `spec` stands for over `num_operands` operands.
Result<einsum::PlanningPolicy> policy_of(const OptimizeSpec& spec, std::int32_t num_operands);

}  // namespace tenferro::python
