// einsum's planning arguments, shared by the extension modules: optimize=
// (a planner name -- tenferro's or opt_einsum's --, a bool -- numpy's: True
// greedy, False left to right --, numpy's (name, memory_limit) pair, or an
// explicit path in opt_einsum's pair format, numpy.einsum_path's output
// included), memory_limit= and max_intermediate_bytes=.
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
  /// optimize=None: 'auto', the C++ default and opt_einsum's (it keeps the
  /// order parentheses give).
  einsum::PlannerKind planner = einsum::PlannerKind::kAuto;
  /// Note [Memory limits]: the largest intermediate in elements (0: none;
  /// kMaxInput: the largest operand's size).
  double memory_limit = 0;
  /// opt_einsum-format steps for kExplicitPath: operand positions in the
  /// current list, pairs or (as numpy.einsum_path writes outer products)
  /// more; policy_of() splits longer steps into pairs.
  std::vector<std::vector<std::int64_t>> path;
};

/// The path of `spec` as text for cache keys ("0,1;2,3,4;").
std::string path_key(const OptimizeSpec& spec);

/// memory_limit='max_input' (opt_einsum's): the largest operand's size.
inline constexpr double kMaxInput = -1;

/// `optimize` (None, a bool, a planner name, a (name, memory_limit) pair or
/// a path) as a spec; raises InvalidArgumentError for anything else.
OptimizeSpec parse_optimize(py::handle optimize);

/// A memory_limit= value (a positive number of elements, 'max_input', or
/// None for 0) as OptimizeSpec::memory_limit; raises for anything else.
double memory_limit_of(py::handle value, const char* what);

/// The slicing bound in bytes for `spec`: `max_intermediate_bytes` when
/// given (> 0), else the memory limit in elements of `element_bytes` each
/// (kMaxInput: `largest_input` elements); 0 for none.
double slicing_bound(const OptimizeSpec& spec, double max_intermediate_bytes, double largest_input,
                     std::size_t element_bytes);

/// einsum's max_intermediate_bytes= (Note [Sliced einsum in Python]): a
/// positive number of bytes, 0 for None; a TypeError for another type, an
/// InvalidArgumentError for a value that is not positive.
double max_intermediate_bytes_of(py::handle value);

/// The planning policy `spec` stands for over `num_operands` operands.
Result<einsum::PlanningPolicy> policy_of(const OptimizeSpec& spec, std::int32_t num_operands);

}  // namespace tenferro::python
