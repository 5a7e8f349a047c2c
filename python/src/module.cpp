// The extension module tenferro._tenferro (docs/python.md): einsum and its
// path planning, the linalg operations, einsum's VJP and the Runtime class.
// The package's Python files (python/tenferro/*.py) add numpy.linalg's
// conventions, contract_path's PathInfo and the exception classes.
#define TENFERRO_PYTHON_IMPORT_ARRAY
#include "numpy_api.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array_bridge.h"
#include "info.h"
#include "py_runtime.h"
#include "tape.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/einsum/contraction_tree.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/fft/eager_fft.h"
#include "tenferro/linalg/eager_linalg.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::python {
namespace {

using einsum::PlannerKind;
/// Positional arguments as the interpreter passes them (borrowed).
using ArgSpan = std::span<PyObject* const>;

// ---------------------------------------------------------------------------
// Runtimes: the Runtime class wraps a PyRuntime; module-level calls without
// runtime= use Python-owned module attributes (Note [Default runtimes]).
//
// Note [Default runtimes]
// tenferro has no process-global state, so the module keeps its default
// runtimes as attributes of the extension module (owned by Python, freed
// with the module): `_default_runtime` for calls without threads=, and one
// entry per thread count in the dict `_runtimes_by_threads`. Both are
// created on first use. The default runtime uses every CPU the process may
// use.

py::object make_runtime(int threads, const std::string& gemm) {
  std::unique_ptr<PyRuntime> rt = value_or_raise(PyRuntime::create(threads, gemm));
  return py::cast(std::move(rt));
}

// The module's default runtime for `threads` (Note [Default runtimes]).
// The default runtime's thread count: TENFERRO_NUM_THREADS, else
// OMP_NUM_THREADS (what numpy's OpenBLAS and torch read, set to 1 by MPI and
// multiprocessing setups against oversubscription), else 0: every CPU the
// process may use. Read when the default runtime is created.
//
// Note [Thread variables and warnings]
// TENFERRO_NUM_THREADS is tenferro's own: a value that is not a positive
// integer ("abc", "0", "-3") gives a RuntimeWarning and is skipped, one
// above the CPUs the process may use gives the RuntimeWarning that
// Runtime(threads=n) gives and is capped, so a typo or a count written for
// another machine is not silently replaced by a different one.
// OMP_NUM_THREADS belongs to every OpenMP library in the process and is
// often set for a whole node or job, larger than one process's CPU set:
// like OpenBLAS, the default runtime caps it, and skips a value it cannot
// use, without a word. An empty variable counts as unset.
int default_thread_count() {
  for (const char* name : {"TENFERRO_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    const bool ours = std::string_view(name) == "TENFERRO_NUM_THREADS";
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || n < 1 || errno == ERANGE) {
      if (ours) {
        const std::string warning = fmt::format(
            "TENFERRO_NUM_THREADS is '{}'; expected a positive integer, so the default runtime ignores it (and uses "
            "OMP_NUM_THREADS, else every CPU this process may use)",
            value);
        if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) throw py::error_already_set();
      }
      continue;
    }
    const Result<cpu::CpuTopology> topology = cpu::CpuTopology::discover();
    const long allowed = topology.ok() ? static_cast<long>(topology->allowed_cpus().count()) : n;
    if (ours && n > allowed) {
      const std::string warning = fmt::format("TENFERRO_NUM_THREADS={} but this process may use {} CPU{}; using {}", n,
                                              allowed, allowed == 1 ? "" : "s", allowed);
      if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) throw py::error_already_set();
    }
    return static_cast<int>(std::min(n, allowed));
  }
  return 0;
}

// A threads= value: an int or numpy integer (a bool, a float or a string is
// a TypeError, as range() has it).
std::int64_t thread_count(py::handle threads) {
  if (PyBool_Check(threads.ptr())) raise_type_error("threads: expected an integer (int or numpy integer), found bool");
  return as_index(threads, "threads");
}

py::object default_runtime_object(PyObject* module, py::handle threads) {
  if (threads.is_none()) {
    PyObject* rt = PyObject_GetAttrString(module, "_default_runtime");
    if (rt == nullptr) throw py::error_already_set();
    py::object owned = py::reinterpret_steal<py::object>(rt);
    if (owned.is_none()) {
      owned = make_runtime(default_thread_count(), "native");
      if (PyObject_SetAttrString(module, "_default_runtime", owned.ptr()) != 0) throw py::error_already_set();
    }
    return owned;
  }
  const std::int64_t n = thread_count(threads);
  if (n < 1) raise_error(ErrorCode::kInvalidArgument, fmt::format("threads={}: expected at least 1 (or None)", n));
  py::dict by_threads = py::reinterpret_borrow<py::object>(py::handle(module)).attr("_runtimes_by_threads");
  py::int_ key(n);
  if (!by_threads.contains(key)) by_threads[key] = make_runtime(static_cast<int>(n), "native");
  return by_threads[key];
}

// The module attribute keeps the runtime alive.
PyRuntime& default_runtime(PyObject* module, py::handle threads) {
  return py::cast<PyRuntime&>(default_runtime_object(module, threads));
}

// The runtime for a call's runtime= and threads= arguments.
// The PyRuntime of a tenferro.Runtime object; a TypeError for one made by
// Runtime.__new__ without __init__ (its PyRuntime does not exist: using it
// crashed).
PyRuntime& initialised_runtime(py::handle runtime) {
  auto* inst = reinterpret_cast<py::detail::instance*>(runtime.ptr());
  if (!inst->get_value_and_holder(py::detail::get_type_info(typeid(PyRuntime))).holder_constructed()) {
    raise_type_error("tenferro.Runtime: the object was not initialised (create it as tenferro.Runtime(...))");
  }
  return py::cast<PyRuntime&>(runtime);
}

// A Runtime method or property `f` (a member pointer or a callable taking
// the PyRuntime) bound so that an object made by Runtime.__new__ alone, or
// another type passed to the unbound function, is a TypeError: pybind11's
// own self conversion read the missing PyRuntime's memory.
template <class F>
auto on_runtime(F f) {
  return [f](py::handle self) {
    if (!py::isinstance<PyRuntime>(self)) {
      raise_type_error(fmt::format("expected a tenferro.Runtime, found {}", type_name(self)));
    }
    return std::invoke(f, initialised_runtime(self));
  };
}

PyRuntime& runtime_for(PyObject* module, py::handle runtime, py::handle threads) {
  if (runtime.is_none()) return default_runtime(module, threads);
  if (!py::isinstance<PyRuntime>(runtime)) {
    raise_type_error(fmt::format("runtime: expected a tenferro.Runtime, found {}", type_name(runtime)));
  }
  PyRuntime& rt = initialised_runtime(runtime);
  if (rt.from_before_fork()) ok_or_raise(rt.fork_error());  // Note [Runtimes from before a fork]
  if (!threads.is_none() && thread_count(threads) != rt.threads()) {
    raise_error(ErrorCode::kInvalidArgument, fmt::format("threads={} differs from the given runtime's threads={}",
                                                         thread_count(threads), rt.threads()));
  }
  return rt;
}

// ---------------------------------------------------------------------------
// einsum

// numpy's sublist form: einsum(op0, sublist0, op1, sublist1, ..., [out]).
std::vector<einsum::LabelKey> parse_sublist(py::handle obj, std::size_t index) {
  if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr())) {
    raise_error(
        ErrorCode::kInvalidArgument,
        fmt::format("einsum: argument {} should be a sublist of integer labels, found {}", index, type_name(obj)));
  }
  std::vector<einsum::LabelKey> labels;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
    if (item.ptr() == Py_Ellipsis) {
      labels.push_back(einsum::kEllipsisKey);
      continue;
    }
    const std::int64_t label = as_index(item, "einsum sublist label");
    if (label < 0) {
      raise_error(
          ErrorCode::kInvalidArgument,
          fmt::format("einsum: sublist label {} in argument {}: expected a non-negative integer", label, index));
    }
    labels.push_back(label);
  }
  return labels;
}

// numpy's sublist form (op0, sublist0, op1, sublist1, ..., [out]) as an op;
// `operands` gets every other argument, the operands.
std::shared_ptr<const einsum::EinsumOp> sublist_op(ArgSpan args, const OptimizeSpec& spec,
                                                   std::vector<PyObject*>& operands) {
  const std::size_t n = args.size();
  std::vector<std::vector<einsum::LabelKey>> sublists;
  std::optional<std::vector<einsum::LabelKey>> output;
  std::size_t i = 0;
  for (; i + 1 < n; i += 2) {
    operands.push_back(args[i]);
    sublists.push_back(parse_sublist(args[i + 1], i + 1));
  }
  if (i < n) output = parse_sublist(args[i], i);
  einsum::Subscripts subscripts = value_or_raise(einsum::Subscripts::from_sublists(sublists, output));
  einsum::PlanningPolicy policy = value_or_raise(policy_of(spec, subscripts.num_operands()));
  return value_or_raise(einsum::EinsumOp::create(std::move(subscripts), std::move(policy)));
}

bool is_subscripts(PyObject* first) { return PyUnicode_Check(first) || PyBytes_Check(first); }

// The UTF-8 text of subscripts (a str, or bytes as numpy accepts them),
// borrowed from `first`. A lone surrogate ('\ud800') has no UTF-8 form: an
// InvalidArgumentError naming it, not Python's UnicodeEncodeError.
std::string_view subscripts_text(PyObject* first) {
  Py_ssize_t len = 0;
  const char* text = nullptr;
  if (PyBytes_Check(first)) {
    char* bytes = nullptr;
    if (PyBytes_AsStringAndSize(first, &bytes, &len) < 0) throw py::error_already_set();
    text = bytes;
  } else {
    text = PyUnicode_AsUTF8AndSize(first, &len);
    if (text == nullptr && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
      const py::error_already_set e;
      const auto at = py::cast<Py_ssize_t>(e.value().attr("start"));
      raise_error(ErrorCode::kInvalidArgument,
                  fmt::format("einsum: expected subscripts of Unicode characters, found the lone surrogate U+{:04X} "
                              "at index {}",
                              static_cast<unsigned>(PyUnicode_ReadChar(first, at)), at));
    }
  }
  if (text == nullptr) throw py::error_already_set();
  return {text, static_cast<std::size_t>(len)};
}

/// A ContractExpression's op: every positional argument is an operand.
using GivenOp = std::shared_ptr<const einsum::EinsumOp>;

// Parses the positional arguments into an op and the operands (with a
// `given` op, all of them are operands).
std::shared_ptr<const einsum::EinsumOp> einsum_operands(PyRuntime& rt, ArgSpan args, const OptimizeSpec& spec,
                                                        OperandList& operands, const GivenOp& given) {
  const std::size_t n = args.size();
  if (given) {
    for (std::size_t i = 0; i < n; ++i) {
      operands.add(args[i], "einsum operand", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
    }
    return given;
  }
  if (n == 0) raise_type_error("einsum() missing the subscripts argument");
  std::shared_ptr<const einsum::EinsumOp> op;
  PyObject* first = args[0];
  if (first == Py_None) {
    raise_type_error("einsum(): expected subscripts (a str) or the sublist form (operand, labels, ...), found None");
  }
  if (is_subscripts(first)) {
    op = value_or_raise(rt.op_for(subscripts_text(first), spec));
    for (std::size_t i = 1; i < n; ++i) {
      operands.add(args[i], "einsum operand", static_cast<std::ptrdiff_t>(i - 1), OperandList::Accept::kNumeric);
    }
  } else {
    std::vector<PyObject*> objects;
    op = sublist_op(args, spec, objects);
    for (std::size_t i = 0; i < objects.size(); ++i) {
      operands.add(objects[i], "einsum operand", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
    }
  }
  if (static_cast<std::size_t>(op->num_operands()) != operands.size()) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("einsum '{}': the subscripts name {} operand{}, found {}", op->canonical_subscripts(),
                            op->num_operands(), op->num_operands() == 1 ? "" : "s", operands.size()),
                ErrorStage::kCompile);  // Note [Einsum binding errors are compile-stage]
  }
  return op;
}

// Note [einsum out=]
// numpy.einsum's out=: the result is written into `out`, an ndarray of
// exactly the result's shape whose dtype the result casts to under the
// casting= rule (numpy's default 'safe'); the call returns `out`. Like
// numpy's own einsum when it contracts through BLAS (optimize=True), the
// result is computed first and then copied, so an `out` that overlaps an
// operand is safe. Every check runs before anything is written: a rejected
// out= leaves `out` unchanged. The copy of a result of out's dtype that does
// not overlap `out` runs on the runtime's copy kernel: numpy's copy of a
// transposed 2048 x 2048 float64 view took 36 ms where the kernel takes 5
// (`einsum('ij->ji', a, out=o)` was 7x slower than without out=; found by
// the AVX2 audit of 2026-12-07).
constexpr npy_intp kKernelCopyMinElements = 1 << 14;

// [first, last] byte addresses of a borrowed tensor's elements.
std::pair<std::uintptr_t, std::uintptr_t> byte_span(const Tensor& t) {
  std::int64_t last = 0;
  for (std::int64_t d = 0; d < t.rank(); ++d) {
    if (t.size(d) > 1) last += (t.size(d) - 1) * t.strides()[static_cast<std::size_t>(d)];
  }
  const auto first = reinterpret_cast<std::uintptr_t>(t.data());
  return {first,
          first + static_cast<std::uintptr_t>((last + 1) * static_cast<std::int64_t>(dtype_size(t.dtype()))) - 1};
}

bool copy_with_kernel(PyRuntime& rt, PyArrayObject* dst, PyArrayObject* src) {
  if (PyArray_SIZE(src) < kKernelCopyMinElements || !PyArray_EquivTypes(PyArray_DESCR(src), PyArray_DESCR(dst))) {
    return false;
  }
  const std::optional<Tensor> s = borrowed_tensor(reinterpret_cast<PyObject*>(src));
  const std::optional<Tensor> d = borrowed_tensor(reinterpret_cast<PyObject*>(dst));
  if (!s || !d) return false;
  const auto [s0, s1] = byte_span(*s);
  const auto [d0, d1] = byte_span(*d);
  if (s0 <= d1 && d0 <= s1) return false;  // may overlap: numpy's copy handles it (the GIL kept)
  Status copied;
  {
    const ReleaseGilUnlessTiny nogil(std::numeric_limits<double>::infinity(), rt.gil_releases());  // counted
    copied = rt.copy_into(s->view(), d->view());
  }
  // An out that addresses an element twice (as_strided) is refused before
  // anything is written; numpy copies into it as it always did.
  if (copied.code() == ErrorCode::kAliasConflict) return false;
  ok_or_raise(copied);
  return true;
}
// Note [einsum out= in place]
// einsum's out= was computed into a new result and then copied into out:
// one more pass over the result, so `i,i->i` of 10^6 float64 with out= took
// 1.48 ms against 0.90 without (numpy's multiply with out= 0.88). When out
// can take the result as it is -- the computed dtype, a layout tensors can
// borrow (aligned, native byte order, non-negative element strides), no
// stride-0 axis, no byte shared with an operand -- and the operands need
// none of the rewrites the eager call makes (a dtype= or casting=, a
// memory bound, reversed or broadcast axes), the einsum executor's plan
// writes straight into it (PyRuntime::einsum_into), with the output
// strides folded into the last step as for any result. Anything else keeps
// the compute-then-copy path.
std::optional<Tensor> in_place_out(py::handle out, const OperandList& operands) {
  std::optional<Tensor> target = borrowed_tensor(out);
  if (!target || operands.size() == 0 || target->dtype() != operands.tensors()[0].dtype()) return std::nullopt;
  const auto broadcast = [](const Tensor& t) {
    for (std::int64_t d = 0; d < t.rank(); ++d) {
      if (t.size(d) > 1 && t.strides()[static_cast<std::size_t>(d)] == 0) return true;
    }
    return false;
  };
  if (broadcast(*target) || target->numel() == 0) return std::nullopt;
  const auto [o0, o1] = byte_span(*target);
  for (const Tensor& t : operands.tensors()) {
    if (broadcast(t) || t.numel() == 0) return std::nullopt;
    const auto [t0, t1] = byte_span(t);
    if (t0 <= o1 && o0 <= t1) return std::nullopt;
  }
  return target;
}

void check_out(py::handle out) {
  if (!PyArray_Check(out.ptr())) {
    raise_type_error(fmt::format("einsum(): out must be a numpy.ndarray, found {}", type_name(out)));
  }
  if (!PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(out.ptr()))) {
    raise_error(ErrorCode::kInvalidArgument, "einsum: out is read-only");
  }
}

py::object write_out(PyRuntime& rt, py::handle out, const py::object& result, py::handle casting) {
  auto* dst = reinterpret_cast<PyArrayObject*>(out.ptr());
  auto* src = reinterpret_cast<PyArrayObject*>(result.ptr());
  const int ndim = PyArray_NDIM(src);
  if (PyArray_NDIM(dst) != ndim || !std::equal(PyArray_DIMS(src), PyArray_DIMS(src) + ndim, PyArray_DIMS(dst))) {
    raise_error(ErrorCode::kShapeMismatch,
                fmt::format("einsum: out has shape {}, expected {} (the result's shape)",
                            shape_tuple({PyArray_DIMS(dst), static_cast<std::size_t>(PyArray_NDIM(dst))}),
                            shape_tuple({PyArray_DIMS(src), static_cast<std::size_t>(ndim)})));
  }
  NPY_CASTING rule = NPY_SAFE_CASTING;
  if (!casting.is_none() && PyArray_CastingConverter(casting.ptr(), &rule) == 0) throw py::error_already_set();
  if (!PyArray_CanCastTypeTo(PyArray_DESCR(src), PyArray_DESCR(dst), rule)) {
    raise_error(ErrorCode::kDTypeMismatch,
                fmt::format("einsum: cannot write a {} result into out of dtype {} (casting='{}')",
                            std::string(py::str(reinterpret_cast<PyObject*>(PyArray_DESCR(src)))),
                            std::string(py::str(reinterpret_cast<PyObject*>(PyArray_DESCR(dst)))),
                            casting.is_none() ? std::string("safe") : std::string(py::str(casting))));
  }
  if (!copy_with_kernel(rt, dst, src) && PyArray_CopyInto(dst, src) < 0) throw py::error_already_set();
  return py::reinterpret_borrow<py::object>(out);
}

struct EinsumKwargs {
  py::handle optimize = py::none();
  py::handle threads = py::none();
  py::handle runtime = py::none();
  py::handle out = py::none();
  py::handle dtype = py::none();
  py::handle casting = py::none();
  py::handle order = py::none();
  py::handle max_intermediate_bytes = py::none();
  py::handle memory_limit = py::none();
};

// numpy's order= on einsum's result: 'C' / 'F' make it C- / Fortran-
// contiguous (a copy when it is not already); 'A' and 'K' (and None) keep
// the layout the contraction chose, as numpy's einsum does for its own
// output.
NPY_ORDER order_of(py::handle order_arg) {
  NPY_ORDER order = NPY_KEEPORDER;
  if (!order_arg.is_none() && PyArray_OrderConverter(order_arg.ptr(), &order) == 0) throw py::error_already_set();
  return order;
}

py::object ordered(py::object array, py::handle order_arg) {
  const NPY_ORDER order = order_of(order_arg);
  if (order != NPY_CORDER && order != NPY_FORTRANORDER) return array;
  PyObject* c = PyArray_FromAny(array.ptr(), nullptr, 0, 0,
                                order == NPY_CORDER ? NPY_ARRAY_C_CONTIGUOUS : NPY_ARRAY_F_CONTIGUOUS, nullptr);
  if (c == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(c);
}

// Note [Relabeling einsums are views]
// numpy.einsum returns a view of its operand when one operand's axes are
// only permuted or diagonals taken ("ij->ji", "...ij->...ji", "ii->i",
// "ij"): nothing is summed, so each output axis is the operand's axes of
// that label walked together (their strides added). tenferro does the
// same: no copy, writeable when the operand is, and writes through the
// result change the operand, as in numpy. The subscripts are checked first
// (one operand, nothing summed) so that other single-operand einsums do
// not bind twice. With dtype= or casting= the result is computed (a new
// array), as numpy does.
py::object relabeled_view(const einsum::EinsumOp& op, const OperandList& operands) {
  if (op.num_operands() != 1 || operands.size() != 1) return {};
  const einsum::Subscripts& subscripts = op.subscripts();
  const einsum::Term& in = subscripts.operands()[0];
  auto* array = reinterpret_cast<PyArrayObject*>(operands.array(0).ptr());
  const int ndim = PyArray_NDIM(array);
  SmallVector<std::int64_t, 8> dims, strides;
  const std::optional<einsum::Term>& explicit_out = subscripts.explicit_output();
  // A permutation of distinct labels (`ij->ji`, the identity of 24 axes):
  // read off the subscripts, the labels sorted once. Binding the network
  // for it cost 2.9 us at 24 axes (the AVX2 audit of 2026-12-07), where
  // numpy returns the input.
  if (explicit_out.has_value() && !in.has_ellipsis() && !explicit_out->has_ellipsis() &&
      in.labels.size() == static_cast<std::size_t>(ndim) && explicit_out->labels.size() == in.labels.size() &&
      ndim <= 64) {
    SmallVector<std::pair<einsum::LabelKey, int>, 8> axes;  // (label, input axis), by label
    for (int a = 0; a < ndim; ++a) axes.emplace_back(in.labels[static_cast<std::size_t>(a)], a);
    std::sort(axes.begin(), axes.end());
    bool permutation = std::adjacent_find(axes.begin(), axes.end(), [](const auto& x, const auto& y) {
                         return x.first == y.first;
                       }) == axes.end();  // else a diagonal
    std::uint64_t seen = 0;
    for (std::size_t j = 0; j < explicit_out->labels.size() && permutation; ++j) {
      const einsum::LabelKey key = explicit_out->labels[j];
      const auto* it = std::lower_bound(axes.begin(), axes.end(), key,
                                        [](const auto& x, einsum::LabelKey k) { return x.first < k; });
      permutation = it != axes.end() && it->first == key && (seen >> it->second & 1u) == 0;
      if (!permutation) break;
      seen |= std::uint64_t{1} << it->second;
      dims.push_back(PyArray_DIMS(array)[it->second]);
      strides.push_back(PyArray_STRIDES(array)[it->second]);
    }
    if (permutation) return view_of(operands.array(0), dims, strides, PyArray_DATA(array));
    dims.clear();
    strides.clear();
  }
  if (explicit_out.has_value()) {
    for (const einsum::LabelKey key : in.labels) {
      if (std::find(explicit_out->labels.begin(), explicit_out->labels.end(), key) == explicit_out->labels.end()) {
        return {};  // summed
      }
    }
    // An ellipsis missing from the output sums its axes unless it stands for
    // none (c...c->c of a matrix): the bound network's labels tell (below).
  } else {
    for (std::size_t i = 0; i < in.labels.size(); ++i) {  // implicit: a repeated label is summed
      if (std::find(in.labels.begin() + static_cast<std::ptrdiff_t>(i) + 1, in.labels.end(), in.labels[i]) !=
          in.labels.end()) {
        return {};
      }
    }
  }
  const IntArrayRef shape(reinterpret_cast<const std::int64_t*>(PyArray_DIMS(array)), static_cast<std::size_t>(ndim));
  static_assert(sizeof(npy_intp) == sizeof(std::int64_t));
  Result<einsum::Network> bound = op.bind(std::span<const IntArrayRef>(&shape, 1), DType::kFloat64);
  if (!bound.ok()) return {};  // the contraction path reports it
  const einsum::NetworkOperand& operand = bound->operand(0);
  const einsum::LabelList& output = bound->output();
  if (output.size() != operand.labels.size()) return {};
  for (const einsum::LabelId label : output) {
    std::int64_t stride = 0;
    for (int a = 0; a < ndim; ++a) {
      if (operand.axis_labels[static_cast<std::size_t>(a)] == label) stride += PyArray_STRIDES(array)[a];
    }
    dims.push_back(bound->extent(label));
    strides.push_back(stride);
  }
  return view_of(operands.array(0), dims, strides, PyArray_DATA(array));
}

// Note [Reversed operands]
// Tensor views have non-negative strides (tensor.h), so an operand with a
// negative stride (`a[::-1]`) was copied first: `ij,ij->` of two reversed
// 2048 x 2048 arrays took 17 ms against numpy's 4.2 (the Python
// performance audit of 2026-12-06). A sum over a label visits the same
// elements in either direction, and a product pairs the elements of a
// label's axes index by index. So when every operand axis of a label (of
// extent > 1) runs backwards, the einsum runs on the operands with those
// axes reversed back (positive strides over the same memory, no copy), and
// the output axes of those labels are reversed in the result. numpy's
// results have positive strides (and torch.from_numpy refuses negative
// ones), so such a result is copied once into a new array in its memory
// order: a copy of the output instead of the operands (`ij,ij->ij` of two
// reversed 2048 x 2048 arrays: 8.3 ms for the product and the copy, numpy
// 8.9 in the same loaded run; 19 ms in the audit's run with the operands
// copied). Reductions over the reversed labels (`ij,ij->`, `ij->j`) copy
// nothing (`ij,ij->`: 1.8-1.9 ms, numpy 4.1-4.2). A label whose axes disagree
// (`ij,ij->` of `a[::-1]` and `b`) leaves every operand as it is, and
// wrap() copies the reversed ones as before. Sums over reversed labels
// run in the other direction: the result may differ from numpy's in the
// last bits.

// The sliced einsum (max_intermediate_bytes= / memory_limit=) with the
// broadcast-operand rewrite the unsliced call applies (Note [Broadcast
// operands] in src/einsum/einsum_call.cpp): without it a broadcast chain
// was contracted at its logical size (a 4x4 result of broadcast operands
// of 2^37 logical elements took 28.7 s instead of no time, the edge audit).
Result<Tensor> sliced_einsum_call(const PyRuntime& rt, const einsum::EinsumOp& op, std::span<const Tensor> inputs,
                                  double bound) {
  TENFERRO_ASSIGN_OR_RETURN(std::optional<einsum::BroadcastRewrite> r, einsum::drop_broadcast_labels(op, inputs));
  if (!r.has_value()) return rt.sliced_einsum(op, inputs, bound);
  TENFERRO_ASSIGN_OR_RETURN(Tensor out, rt.sliced_einsum(*r->op, r->operands, bound));
  if (r->scale != 1.0) einsum::scale_by_dropped_extents(out, *r);  // a fresh dense result
  return out;
}

// Note [Results past numpy's rank]
// A numpy array has at most NPY_MAXDIMS (32) axes. An einsum whose result
// has more was computed in full and then refused by numpy with an untyped
// ValueError (the edge audit: 34 axes of 17 (1, 2) operands); the result's
// rank is checked before any work instead. The result has at most as many
// axes as the operands together, so the exact shape is computed only past
// that bound (never for ordinary calls).
void check_result_rank(const einsum::EinsumOp& op, const OperandList& operands) {
  std::size_t axes = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    axes += static_cast<std::size_t>(PyArray_NDIM(reinterpret_cast<PyArrayObject*>(operands.array(i).ptr())));
  }
  if (axes <= NPY_MAXDIMS || static_cast<std::int32_t>(operands.size()) != op.num_operands()) return;
  SmallVector<IntArrayRef, 8> shapes;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    auto* array = reinterpret_cast<PyArrayObject*>(operands.array(i).ptr());
    shapes.push_back(IntArrayRef(reinterpret_cast<const std::int64_t*>(PyArray_DIMS(array)),
                                 static_cast<std::size_t>(PyArray_NDIM(array))));
  }
  Dims out;
  if (!op.output_shape(shapes, out).ok()) return;  // the call reports the binding error
  if (out.size() > NPY_MAXDIMS) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("einsum '{}': expected a result of at most {} axes (numpy's limit), found {}",
                            op.canonical_subscripts(), NPY_MAXDIMS, out.size()));
  }
}

/// Reverses the operands' axes of labels whose axes all run backwards
/// (Note [Reversed operands]); returns the output axes to reverse back
/// (bit a for axis a), 0 when nothing was reversed.
std::uint64_t reverse_backward_labels(const einsum::EinsumOp& op, OperandList& operands) {
  const std::size_t n = operands.size();
  const auto backward = [&](std::size_t i, int a) {
    auto* array = reinterpret_cast<PyArrayObject*>(operands.array(i).ptr());
    return PyArray_DIM(array, a) > 1 && PyArray_STRIDE(array, a) < 0;
  };
  bool any = false;
  SmallVector<IntArrayRef, 8> shapes;
  for (std::size_t i = 0; i < n; ++i) {
    auto* array = reinterpret_cast<PyArrayObject*>(operands.array(i).ptr());
    const int ndim = PyArray_NDIM(array);
    for (int a = 0; a < ndim && !any; ++a) any = backward(i, a);
    shapes.push_back(
        IntArrayRef(reinterpret_cast<const std::int64_t*>(PyArray_DIMS(array)), static_cast<std::size_t>(ndim)));
  }
  if (!any || static_cast<std::int32_t>(n) != op.num_operands()) return 0;
  Result<einsum::Network> bound = op.bind(shapes, DType::kFloat64);
  if (!bound.ok() || bound->output().size() > 64) return 0;  // the call reports a binding error
  enum : std::uint8_t { kUnseen, kForward, kBackward };
  SmallVector<std::uint8_t, 16> direction(static_cast<std::size_t>(bound->num_labels()), kUnseen);
  for (std::size_t i = 0; i < n; ++i) {
    const einsum::LabelList& labels = bound->operand(static_cast<std::int32_t>(i)).axis_labels;
    for (std::size_t a = 0; a < labels.size(); ++a) {
      if (shapes[i][a] <= 1) continue;  // its stride is never used
      std::uint8_t& d = direction[static_cast<std::size_t>(labels[a])];
      const std::uint8_t here = backward(i, static_cast<int>(a)) ? kBackward : kForward;
      if (d != kUnseen && d != here) return 0;
      d = here;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t axes = 0;
    for (std::size_t a = 0; a < shapes[i].size(); ++a) {
      if (backward(i, static_cast<int>(a))) axes |= std::uint64_t{1} << a;
    }
    operands.reverse_axes(i, axes);
  }
  std::uint64_t out_axes = 0;
  const einsum::LabelList& output = bound->output();
  for (std::size_t a = 0; a < output.size(); ++a) {
    if (direction[static_cast<std::size_t>(output[a])] == kBackward) out_axes |= std::uint64_t{1} << a;
  }
  return out_axes;
}

// The permutation that puts `t`'s axes in memory order (descending strides;
// the identity when they are in it already), or nullopt where no order
// applies: an axis of extent 0 or 1, or a broadcast (stride 0) axis (Notes
// [Results in the operands' memory order], [Transforms in memory order]).
std::optional<Dims> memory_order(const Tensor& t) {
  const IntArrayRef shape = t.shape(), strides = t.strides();
  Dims order;
  bool row_major = true;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 1 || strides[d] <= 0) return std::nullopt;
    row_major = row_major && (d == 0 || strides[d] <= strides[d - 1]);
    order.push_back(static_cast<std::int64_t>(d));
  }
  if (!row_major) {
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return strides[static_cast<std::size_t>(a)] > strides[static_cast<std::size_t>(b)];
    });
  }
  return order;
}

bool is_identity(IntArrayRef perm) {
  for (std::size_t d = 0; d < perm.size(); ++d) {
    if (perm[d] != static_cast<std::int64_t>(d)) return false;
  }
  return true;
}

// Note [Results in the operands' memory order]
// numpy.einsum returns its result in the operands' memory order (order='K'):
// a product of Fortran-order arrays is Fortran-order. tenferro's engine
// writes a row-major result, so `ij,ij->ij` of two Fortran-order 2048 x 2048
// arrays wrote every element across rows: 9 ms against numpy's 5 (the
// Python performance audit of 2026-12-06). An einsum that sums no label
// (a product with broadcasting: every operand label is an output label,
// none repeated within an operand, no ellipsis, an explicit output of two or
// more axes) now runs with its output labels in the memory order of its
// operand of the most labels (the first of those), the output labels that
// operand lacks outermost, and returns that result permuted back to the
// order asked for: a view with the operands' layout, as numpy's (not when
// every operand is a vector: `i,j->ij` is C-order in numpy, and with j
// outermost its 4 x 25000 product ran 25000 columns of 4, 80 us against
// numpy's 11; the shape-sweep audit of 2026-12-07). Einsums
// that contract (GEMM steps choose their own layouts), order='C'/'F',
// out=, operands with size-1 or broadcast axes, and products whose largest
// operand has fewer than kMemoryOrderMinElements elements (where the
// write order costs nothing and the rewrite would: 0.25 us of a 2 x 2
// product) are computed as written.
constexpr std::int64_t kMemoryOrderMinElements = 4096;

std::shared_ptr<const einsum::EinsumOp> memory_order_op(PyRuntime& rt, const einsum::EinsumOp& op,
                                                        std::span<const Tensor> operands, const OptimizeSpec& spec,
                                                        Dims& back) {
  std::int64_t largest = 0;
  for (const Tensor& t : operands) largest = std::max(largest, t.numel());
  if (largest < kMemoryOrderMinElements) return nullptr;
  const einsum::Subscripts& sub = op.subscripts();
  const std::optional<einsum::Term>& out = sub.explicit_output();
  if (!out.has_value() || out->has_ellipsis() || out->labels.size() < 2 || sub.nesting().has_value() ||
      sub.notation() != einsum::LabelNotation::kCharacters || operands.size() != sub.operands().size()) {
    return nullptr;
  }
  const auto in_output = [&](einsum::LabelKey key) {
    return std::find(out->labels.begin(), out->labels.end(), key) != out->labels.end();
  };
  std::size_t reference = 0;
  for (std::size_t i = 0; i < sub.operands().size(); ++i) {
    const einsum::Term& term = sub.operands()[i];
    if (term.has_ellipsis() || term.labels.size() != static_cast<std::size_t>(operands[i].rank())) return nullptr;
    for (std::size_t a = 0; a < term.labels.size(); ++a) {
      if (!in_output(term.labels[a])) return nullptr;  // summed
      for (std::size_t b = 0; b < a; ++b) {
        if (term.labels[b] == term.labels[a]) return nullptr;  // a diagonal
      }
    }
    if (term.labels.size() > sub.operands()[reference].labels.size()) reference = i;
  }
  const einsum::Term& ref = sub.operands()[reference];
  if (ref.labels.size() < 2) return nullptr;  // vectors have no order: numpy's result is C-order
  const std::optional<Dims> axes = memory_order(operands[reference]);
  if (!axes.has_value()) return nullptr;
  SmallVector<einsum::LabelKey, 8> desired;
  for (const einsum::LabelKey key : out->labels) {
    if (std::find(ref.labels.begin(), ref.labels.end(), key) == ref.labels.end()) desired.push_back(key);
  }
  for (const std::int64_t a : *axes) desired.push_back(ref.labels[static_cast<std::size_t>(a)]);
  if (std::equal(desired.begin(), desired.end(), out->labels.begin(), out->labels.end())) return nullptr;
  std::string text;
  for (std::size_t i = 0; i < sub.operands().size(); ++i) {
    if (i > 0) text += ',';
    for (const einsum::LabelKey key : sub.operands()[i].labels) text += sub.label_name(key);
  }
  text += "->";
  for (const einsum::LabelKey key : desired) text += sub.label_name(key);
  Result<std::shared_ptr<const einsum::EinsumOp>> rewritten = rt.op_for(text, spec);
  if (!rewritten.ok()) return nullptr;  // computed as written
  back.clear();
  for (const einsum::LabelKey key : out->labels) {
    back.push_back(std::find(desired.begin(), desired.end(), key) - desired.begin());
  }
  return std::move(rewritten).value();
}

// Note [einsum dtype=]
// numpy.einsum's dtype= and casting=: the operands are cast to `dtype`
// (every cast must pass the casting rule, 'safe' by default, checked before
// anything runs) and the result has that dtype, computed as Note [Integer
// einsum] says for dtypes tenferro does not contract directly. order= is
// applied to the result.
// einsum without out=: an ndarray (0-d for a full contraction; with
// `scalar`, a numpy scalar instead, as numpy.einsum returns it) or, for
// Traced operands, a Traced value.
py::object einsum_array(PyRuntime& rt, ArgSpan args, const OptimizeSpec& spec, const EinsumKwargs& k, bool traced,
                        const GivenOp& given, bool scalar) {
  if (traced && !(k.dtype.is_none() && k.casting.is_none() && k.order.is_none() && k.max_intermediate_bytes.is_none() &&
                  k.memory_limit.is_none() && spec.memory_limit == 0)) {
    raise_error(ErrorCode::kInvalidArgument,
                "einsum: dtype=, casting=, order=, max_intermediate_bytes= and memory limits are not supported inside "
                "tenferro.vjp or grad");
  }
  const double max_intermediate_bytes = max_intermediate_bytes_of(k.max_intermediate_bytes);
  OptimizeSpec limited = spec;
  if (!k.memory_limit.is_none()) {
    if (spec.memory_limit != 0) {
      raise_error(ErrorCode::kInvalidArgument, "einsum: memory_limit= given twice (also in optimize=(name, limit))");
    }
    limited.memory_limit = memory_limit_of(k.memory_limit, "einsum memory_limit=");
  }
  if (traced) {
    // Inside tenferro.vjp / grad: recorded on the operands' tape.
    if (given) return traced_einsum(args, given);
    if (!is_subscripts(args[0])) {
      std::vector<PyObject*> operands;
      std::shared_ptr<const einsum::EinsumOp> op = sublist_op(args, spec, operands);
      return traced_einsum(operands, op);
    }
    return traced_einsum(args.subspan(1), value_or_raise(rt.op_for(subscripts_text(args[0]), spec)));
  }
  OperandList operands;
  std::shared_ptr<const einsum::EinsumOp> op = einsum_operands(rt, args, spec, operands, given);
  check_result_rank(*op, operands);
  if (k.dtype.is_none() && k.casting.is_none()) {
    if (py::object view = relabeled_view(*op, operands)) {
      // order='C' of a permuted view: computed below, where the engine's
      // permutation kernel writes the row-major result (numpy's copy of the
      // view took 1.5x as long, on one thread; the Python performance audit).
      const bool c_copy =
          order_of(k.order) == NPY_CORDER && !PyArray_IS_C_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(view.ptr()));
      if (!c_copy) return ordered(std::move(view), k.order);
    }
  }
  const py::object result_dtype =
      k.dtype.is_none() && k.casting.is_none() ? operands.unify_numeric() : operands.unify_numeric(k.dtype, k.casting);
  const std::uint64_t reversed = reverse_backward_labels(*op, operands);  // Note [Reversed operands]
  operands.wrap();
  if (!k.out.is_none() && result_dtype.is_none() && reversed == 0 && max_intermediate_bytes == 0.0 &&
      limited.memory_limit == 0.0) {
    if (std::optional<Tensor> target = in_place_out(k.out, operands)) {  // Note [einsum out= in place]
      const SmallVector<Tensor, 8>& tensors = operands.tensors();
      const std::span<const Tensor> inputs(tensors.data(), tensors.size());
      Status written;
      {
        const ReleaseGilUnlessTiny nogil(estimated_work(inputs, WorkKind::kElements), rt.gil_releases());
        written = rt.einsum_into(*op, inputs, target->view());
      }
      // Another shape: the general path below raises numpy's message.
      if (written.code() != ErrorCode::kShapeMismatch) {
        ok_or_raise(written);
        return py::reinterpret_borrow<py::object>(k.out);
      }
    }
  }
  Result<Tensor> result = [&] {
    const SmallVector<Tensor, 8>& tensors = operands.tensors();
    const std::span<const Tensor> inputs(tensors.data(), tensors.size());
    double largest = 0;
    for (const Tensor& t : tensors) largest = std::max(largest, static_cast<double>(t.numel()));
    const double bound =
        slicing_bound(limited, max_intermediate_bytes, largest, tensors.empty() ? 8 : dtype_size(tensors[0].dtype()));
    if (bound > 0.0) {
      // Always: its interrupt check takes the GIL back.
      const ReleaseGilUnlessTiny nogil(std::numeric_limits<double>::infinity(), rt.gil_releases());
      return sliced_einsum_call(rt, *op, inputs, bound);
    }
    // Note [Results in the operands' memory order].
    Dims back;
    const NPY_ORDER order = order_of(k.order);
    std::shared_ptr<const einsum::EinsumOp> in_memory_order =
        order == NPY_CORDER || order == NPY_FORTRANORDER ? nullptr : memory_order_op(rt, *op, inputs, spec, back);
    const ReleaseGilUnlessTiny nogil(estimated_work(inputs, WorkKind::kElements), rt.gil_releases());
    if (in_memory_order != nullptr) {
      Result<Tensor> r =
          rt.with_context([&](runtime::EagerContext& ctx) { return einsum::einsum(ctx, in_memory_order, inputs); });
      if (!r.ok()) return r;
      return r->permute(back);
    }
    return rt.with_context([&](runtime::EagerContext& ctx) { return einsum::einsum(ctx, op, inputs); });
  }();
  // Note [Interrupting a sliced einsum]: the signal handler's exception.
  if (!result.ok() && result.status().code() == ErrorCode::kCancelled && PyErr_Occurred() != nullptr) {
    throw py::error_already_set();
  }
  if (scalar && result.ok() && result->rank() == 0 && result_dtype.is_none()) return scalar_of(*result);
  py::object array = OperandList::finish(operands.to_numpy(value_or_raise(std::move(result))), result_dtype);
  if (reversed != 0) {  // Note [Reversed operands]: positive strides, as numpy's results
    array = reversed_axes(std::move(array), reversed);
    const NPY_ORDER order = order_of(k.order);
    if (order != NPY_CORDER && order != NPY_FORTRANORDER) {
      PyObject* copy = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(array.ptr()), NPY_KEEPORDER);
      if (copy == nullptr) throw py::error_already_set();
      array = py::reinterpret_steal<py::object>(copy);
    }
  }
  return ordered(std::move(array), k.order);
}

py::object einsum_call(PyRuntime& rt, ArgSpan args, const OptimizeSpec& spec, const EinsumKwargs& k = {},
                       const GivenOp& given = nullptr) {
  // Traced operands (inside tenferro.vjp / grad), in either call form.
  const bool traced = given ? any_traced(args, 0) : args.size() > 1 && any_traced(args, is_subscripts(args[0]) ? 1 : 0);
  if (!k.out.is_none()) {
    if (traced) raise_error(ErrorCode::kInvalidArgument, "einsum: out= is not supported inside tenferro.vjp or grad");
    check_out(k.out);
    py::object result = einsum_array(rt, args, spec, k, traced, given, false);
    if (result.ptr() == k.out.ptr()) return result;  // written in place (Note [einsum out= in place])
    return write_out(rt, k.out, result, k.casting);
  }
  return scalar_if_0d(einsum_array(rt, args, spec, k, traced, given, true));
}

void set_kwarg(EinsumKwargs& k, py::handle key, py::handle value, const char* function) {
  const std::string name = py::cast<std::string>(key);
  if (name == "optimize") {
    k.optimize = value;
  } else if (name == "threads") {
    k.threads = value;
  } else if (name == "runtime") {
    k.runtime = value;
  } else if (name == "out") {
    k.out = value;
  } else if (name == "dtype") {
    k.dtype = value;
  } else if (name == "casting") {
    k.casting = value;
  } else if (name == "order") {
    k.order = value;
  } else if (name == "max_intermediate_bytes") {
    k.max_intermediate_bytes = value;
  } else if (name == "memory_limit") {
    k.memory_limit = value;
  } else {
    raise_type_error(fmt::format("{}() got an unexpected keyword argument '{}'", function, name));
  }
}

EinsumKwargs parse_kwargs(const py::kwargs& kwargs, const char* function) {
  EinsumKwargs k;
  for (auto [key, value] : kwargs) set_kwarg(k, key, value, function);
  return k;
}

// The items of a positional-argument tuple.
ArgSpan items_of(const py::args& args) {
  return ArgSpan(&PyTuple_GET_ITEM(args.ptr(), 0), static_cast<std::size_t>(PyTuple_GET_SIZE(args.ptr())));
}

// Note [Default runtime lookup]
// A call without runtime= needs the module's `_default_runtime` (Note
// [Default runtimes]). Looking it up by a C string and casting it through
// pybind11's type registry costs a large part of a tiny call, so
// tenferro.einsum's self is an EinsumFunctionState (owned by a capsule):
// the interned attribute name and the last runtime object seen with its
// PyRuntime. Each call still reads the module attribute (a dict lookup by
// an interned key), and the remembered PyRuntime is used only while the
// attribute is that same object (held, so its address is not reused).
struct EinsumFunctionState {
  explicit EinsumFunctionState(PyObject* m) : module(py::reinterpret_borrow<py::object>(m)) {
    PyObject* interned = PyUnicode_InternFromString("_default_runtime");
    if (interned == nullptr) throw py::error_already_set();
    key = py::reinterpret_steal<py::object>(interned);
  }
  py::object module;
  py::object key;     // interned "_default_runtime"
  py::object cached;  // the runtime object `rt` belongs to
  PyRuntime* rt = nullptr;
};

PyRuntime& default_runtime_fast(EinsumFunctionState& state) {
  PyObject* current = PyDict_GetItemWithError(PyModule_GetDict(state.module.ptr()), state.key.ptr());
  if (current != nullptr && current == state.cached.ptr()) return *state.rt;
  if (current == nullptr && PyErr_Occurred()) throw py::error_already_set();
  py::object rt = default_runtime_object(state.module.ptr(), py::none());
  state.rt = &py::cast<PyRuntime&>(rt);
  state.cached = std::move(rt);
  return *state.rt;
}

void destroy_einsum_state(PyObject* capsule) {
  delete static_cast<EinsumFunctionState*>(PyCapsule_GetPointer(capsule, "tenferro.einsum_state"));
}

// tenferro.einsum as a vectorcall function (METH_FASTCALL | METH_KEYWORDS):
// no argument tuple or keyword dict is built per call (Note [Python eager
// path]); `self` is a capsule over the EinsumFunctionState (Note [Default
// runtime lookup]).
PyObject* einsum_fastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return python_entry([&] {
    auto& state = *static_cast<EinsumFunctionState*>(PyCapsule_GetPointer(self, "tenferro.einsum_state"));
    PyObject* module = state.module.ptr();
    const ArgSpan positional(args, static_cast<std::size_t>(nargs));
    if (kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0) {
      return einsum_call(default_runtime_fast(state), positional, OptimizeSpec{});
    }
    EinsumKwargs k;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
      set_kwarg(k, PyTuple_GET_ITEM(kwnames, i), args[nargs + i], "einsum");
    }
    // Keywords other than runtime= and threads= (optimize=, out=) keep the
    // remembered default runtime: the lookup by name cost 0.19 us a call.
    PyRuntime& rt = k.runtime.is_none() && k.threads.is_none() ? default_runtime_fast(state)
                                                               : runtime_for(module, k.runtime, k.threads);
    return einsum_call(rt, positional, parse_optimize(k.optimize), k);
  });
}

// Runtime.einsum as a vectorcall method (METH_FASTCALL | METH_KEYWORDS):
// pybind11's dispatch of a method taking *args and **kwargs cost 0.17 us
// more per call than tenferro.einsum.
PyObject* runtime_einsum_fastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return python_entry([&] {
    PyRuntime& rt = initialised_runtime(self);
    EinsumKwargs k;
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; ++i) set_kwarg(k, PyTuple_GET_ITEM(kwnames, i), args[nargs + i], "einsum");
    if (!k.runtime.is_none()) raise_type_error("Runtime.einsum() got an unexpected keyword argument 'runtime'");
    if (!k.threads.is_none() && thread_count(k.threads) != rt.threads()) {
      raise_error(ErrorCode::kInvalidArgument, fmt::format("Runtime.einsum: threads={} differs from this runtime's "
                                                           "threads={}",
                                                           thread_count(k.threads), rt.threads()));
    }
    return einsum_call(rt, ArgSpan(args, static_cast<std::size_t>(nargs)), parse_optimize(k.optimize), k);
  });
}

// ---------------------------------------------------------------------------
// contract_expression
//
// Note [Contract expressions]
// tenferro.contract_expression (opt_einsum's) plans the path once, for the
// shapes it is given (contract_path), and keeps a Contraction: the op
// parsed once with that explicit path, the planning arguments and the
// constant operands. A call puts the arrays and the constants at their
// positions and runs einsum's path with that op: no subscripts are parsed,
// no path is read and no op cache is searched. As in opt_einsum the path
// stays the one planned, whatever extents a call brings (einsum's own checks
// still apply: operand count, ranks, consistent extents). The op does not
// belong to a runtime, so a call may name any runtime= or threads=.
struct Contraction {
  GivenOp op;
  OptimizeSpec spec;  // the explicit path and memory limit the op was made with
  py::object max_intermediate_bytes = py::none();
  // Per operand position: the constant array, or null for a call's array.
  std::vector<py::object> constants;
  std::size_t num_args = 0;
  EinsumFunctionState state;  // the default runtime (Note [Default runtime lookup])
  explicit Contraction(PyObject* module) : state(module) {}
};

std::unique_ptr<Contraction> make_contraction(PyObject* module, const std::string& subscripts, py::handle path,
                                              py::handle memory_limit, py::handle max_intermediate_bytes,
                                              const py::dict& constants) {
  auto c = std::make_unique<Contraction>(module);
  c->spec = parse_optimize(path);
  if (!memory_limit.is_none())
    c->spec.memory_limit = memory_limit_of(memory_limit, "contract_expression memory_limit=");
  max_intermediate_bytes_of(max_intermediate_bytes);  // checked now, not at the first call
  c->max_intermediate_bytes = py::reinterpret_borrow<py::object>(max_intermediate_bytes);
  einsum::Subscripts parsed = value_or_raise(einsum::Subscripts::parse(subscripts));
  einsum::PlanningPolicy policy = value_or_raise(policy_of(c->spec, parsed.num_operands()));
  c->op = value_or_raise(einsum::EinsumOp::create(std::move(parsed), std::move(policy)));
  const auto n = static_cast<std::size_t>(c->op->num_operands());
  c->constants.resize(n);
  for (auto [key, value] : constants) {
    const std::int64_t position = as_index(key, "contract_expression constants position");
    if (position < 0 || static_cast<std::size_t>(position) >= n) {
      raise_error(ErrorCode::kOutOfRange, fmt::format("contract_expression: constant position {} is not an operand "
                                                      "of '{}' (expected 0 to {})",
                                                      position, subscripts, n - 1));
    }
    c->constants[static_cast<std::size_t>(position)] = py::reinterpret_borrow<py::object>(value);
  }
  c->num_args = static_cast<std::size_t>(
      std::count_if(c->constants.begin(), c->constants.end(), [](const py::object& o) { return !o; }));
  return c;
}

py::object call_contraction(Contraction& c, const py::args& args, const py::kwargs& kwargs) {
  EinsumKwargs k = parse_kwargs(kwargs, "ContractExpression");
  if (!k.optimize.is_none() || !k.memory_limit.is_none()) {
    raise_type_error(
        fmt::format("ContractExpression() got an unexpected keyword argument '{}' (the path and its "
                    "memory limit are fixed when the expression is made)",
                    k.optimize.is_none() ? "memory_limit" : "optimize"));
  }
  if (k.max_intermediate_bytes.is_none()) k.max_intermediate_bytes = c.max_intermediate_bytes;
  ArgSpan operands = items_of(args);
  if (operands.size() != c.num_args) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("ContractExpression('{}') takes exactly {} array{}, found {}", c.op->canonical_subscripts(),
                            c.num_args, c.num_args == 1 ? "" : "s", operands.size()));
  }
  SmallVector<PyObject*, 8> all;
  if (c.num_args != c.constants.size()) {
    std::size_t next = 0;
    for (const py::object& constant : c.constants) all.push_back(constant ? constant.ptr() : operands[next++]);
    operands = ArgSpan(all.data(), all.size());
  }
  PyRuntime& rt = k.runtime.is_none() && k.threads.is_none() ? default_runtime_fast(c.state)
                                                             : runtime_for(c.state.module.ptr(), k.runtime, k.threads);
  return einsum_call(rt, operands, c.spec, k, c.op);
}

// The type's tp_call (inherited by ContractExpression): a pybind11
// __call__ method cost 0.2-0.3 us more per call in its dispatch.
PyObject* contraction_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return python_entry([&] {
    const py::kwargs k = kwargs != nullptr ? py::reinterpret_borrow<py::kwargs>(kwargs) : py::kwargs();
    return call_contraction(py::cast<Contraction&>(py::handle(self)), py::reinterpret_borrow<py::args>(args), k);
  });
}

// ---------------------------------------------------------------------------
// contract_path's planning

// `who`: the Python function that plans (contract_path, einsum_path or
// contract_expression), named in errors.
py::dict plan_path(const std::string& subscripts, const std::vector<std::vector<std::int64_t>>& shapes,
                   py::handle optimize, py::handle max_intermediate_bytes, py::handle memory_limit,
                   const std::string& who, std::size_t itemsize) {
  OptimizeSpec spec = parse_optimize(optimize);
  if (!memory_limit.is_none()) {
    if (spec.memory_limit != 0) {
      raise_error(ErrorCode::kInvalidArgument,
                  fmt::format("{}: memory_limit= given twice (also in optimize=(name, limit))", who));
    }
    spec.memory_limit = memory_limit_of(memory_limit, fmt::format("{} memory_limit=", who).c_str());
  }
  double largest = 0;
  for (const auto& shape : shapes) {
    double n = 1;
    for (const std::int64_t d : shape) n *= static_cast<double>(d);
    largest = std::max(largest, n);
  }
  // The bound in bytes of the arrays' result dtype (`itemsize` bytes an
  // element; 8 for shapes alone): the network is bound with a dtype of that
  // size, so that slicing and its errors speak of the caller's bytes.
  const DType sized = itemsize == 4 ? DType::kFloat32 : itemsize == 16 ? DType::kComplex128 : DType::kFloat64;
  const double max_bytes = slicing_bound(spec, max_intermediate_bytes_of(max_intermediate_bytes), largest, itemsize) *
                           static_cast<double>(dtype_size(sized)) /
                           static_cast<double>(std::max<std::size_t>(itemsize, 1));
  einsum::Subscripts parsed = value_or_raise(einsum::Subscripts::parse(subscripts));
  if (static_cast<std::size_t>(parsed.num_operands()) != shapes.size()) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("{} '{}': the subscripts name {} operands, found {}", who, subscripts,
                            parsed.num_operands(), shapes.size()),
                ErrorStage::kCompile);  // Note [Einsum binding errors are compile-stage]
  }
  const einsum::PlanningPolicy policy = value_or_raise(policy_of(spec, parsed.num_operands()));
  std::vector<IntArrayRef> refs;
  for (const auto& s : shapes) refs.emplace_back(s);
  std::vector<DType> dtypes(shapes.size(), sized);
  einsum::Network network = value_or_raise(einsum::Network::bind(parsed, refs, dtypes));
  einsum::ContractionTree tree = [&] {
    Result<einsum::ContractionTree> r = [&] {
      GilRelease nogil;
      return einsum::plan(network, policy);
    }();
    return value_or_raise(std::move(r));
  }();

  py::list path;
  if (network.num_operands() == 1) {
    path.append(py::make_tuple(0));
  } else {
    for (const auto& [a, b] : tree.order().to_opt_einsum_path()) path.append(py::make_tuple(a, b));
  }
  const auto names = [&](std::span<const einsum::LabelId> labels) {
    py::list l;
    for (einsum::LabelId id : labels) l.append(network.label_name(id));
    return l;
  };
  py::list steps;
  for (const einsum::ContractionStep& s : tree.steps()) {
    py::dict d;
    d["lhs"] = names(tree.node_labels(s.lhs));
    d["rhs"] = names(tree.node_labels(s.rhs));
    d["result"] = names(s.result);
    d["flops"] = s.flops;
    d["result_elements"] = s.result_elements;
    steps.append(d);
  }
  double naive_size = 1.0;
  py::dict size_dict;  // opt_einsum's PathInfo.size_dict
  for (std::size_t id = 0; id < network.labels().size(); ++id) {
    const einsum::LabelInfo& l = network.labels()[id];
    naive_size *= static_cast<double>(l.extent);
    size_dict[py::str(network.label_name(static_cast<einsum::LabelId>(id)))] = l.extent;
  }
  py::list operand_labels;
  for (const einsum::NetworkOperand& o : network.operands()) operand_labels.append(names(o.labels));
  py::dict info;
  info["path"] = path;
  info["steps"] = steps;
  info["operand_labels"] = operand_labels;
  info["output_labels"] = names(network.output());
  info["num_labels"] = network.num_labels();
  info["size_dict"] = size_dict;
  info["naive_size"] = naive_size;
  info["flops"] = tree.cost().flops;
  info["multiply_adds"] = tree.cost().multiply_adds;
  info["log10_flops"] = tree.cost().log10_flops();
  info["largest_intermediate"] = tree.cost().max_intermediate_elements;
  info["log2_size"] = tree.cost().log2_max_intermediate();
  info["read_write_elements"] = tree.cost().read_write_elements;
  info["workspace_bytes"] = tree.cost().workspace_bytes;
  info["planner"] = std::string(einsum::to_string(tree.stats().planner));
  info["planning_seconds"] = tree.stats().seconds;
  info["eq"] = parsed.to_string();
  info["explain"] = tree.explain();
  // With a memory bound, the slicing einsum(max_intermediate_bytes=) runs
  // (Note [Sliced einsum in Python]; float64 elements).
  info["sliced_labels"] = py::list();
  info["slices"] = 1;
  info["slice_largest_intermediate"] = tree.cost().max_intermediate_elements;
  info["slicing_overhead"] = 1.0;
  info["range_label"] = py::none();
  info["ranges"] = 1;
  // A single operand without a summed label is a view of it (einsum returns
  // one): nothing to slice, whatever the bound.
  const bool view = network.num_operands() == 1 && network.output().size() == network.operand(0).labels.size();
  if (max_bytes > 0.0 && !view) {
    einsum::SlicingOptions options;
    options.max_intermediate_bytes = max_bytes;
    const einsum::WorkerSlicing split = value_or_raise(einsum::WorkerSlicing::plan_sequential(tree, options));
    const einsum::SlicedContraction& first = split.part(0);
    info["sliced_labels"] = names(first.sliced_labels());
    info["slices"] = split.num_slices();
    info["slice_largest_intermediate"] =
        split.slice_max_intermediate_bytes() / static_cast<double>(dtype_size(network.dtype()));
    info["slicing_overhead"] = split.overhead();
    if (split.is_range_split()) {  // Note [Range chunks]
      info["range_label"] = first.network().label_name(first.range().label);
      info["ranges"] = split.parts().size();
    }
  }
  return info;
}

// ---------------------------------------------------------------------------
// linalg

// One linalg operation on the runtime's eager context; the results that
// are defined, in the order of Note [Linalg operation semantics].
py::tuple linalg_call(PyRuntime& rt, const std::string& name, const py::list& args, const std::string& mode, bool flag,
                      double rcond) {
  const std::shared_ptr<const linalg::LinalgOp> op = value_or_raise(linalg_op_of(name, mode, flag, rcond));
  const auto expected = static_cast<std::size_t>(linalg::num_operands(op->kind()));
  if (args.size() != expected) {
    raise_error(ErrorCode::kInvalidArgument, fmt::format("linalg.{}: expected {} operand{}, found {}", name, expected,
                                                         expected == 1 ? "" : "s", args.size()));
  }
  OperandList operands;
  const std::string what = "linalg." + name + " operand";
  for (std::size_t i = 0; i < args.size(); ++i) operands.add(args[i], what.c_str(), static_cast<std::ptrdiff_t>(i));
  operands.unify_dtypes();
  operands.wrap();
  const SmallVector<Tensor, 8>& t = operands.tensors();
  runtime::TensorList results;
  Status status;
  {
    const ReleaseGilUnlessTiny nogil(estimated_work(std::span<const Tensor>(t.data(), t.size()), WorkKind::kMatrices),
                                     rt.gil_releases());
    status = rt.with_context([&](runtime::EagerContext& ctx) -> Status {
      TENFERRO_ASSIGN_OR_RETURN(results, ctx.call(op, std::span<const Tensor>(t.data(), t.size())));
      return ok_status();
    });
  }
  ok_or_raise(status);
  py::tuple out(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) out[i] = operands.to_numpy(std::move(results[i]));
  return out;
}

// ---------------------------------------------------------------------------
// fft

// One transform of tenferro.fft on the runtime's eager context.
// Note [Transforms in memory order]
// The FFT engine writes a row-major result. For an input whose axes are not
// in row-major order (a Fortran-order array, a transposed view), the
// transform along its first axis read contiguous rows and wrote its result
// with a stride of the whole row: fft(F, axis=0) of a 2048 x 2048
// Fortran-order array took 1.8x numpy's time (the Python performance audit
// of 2026-12-06). numpy's pocketfft works on the array with its axes in
// memory order and returns the result in that order. So does fft_call: the
// axes are permuted into memory order (a view), transformed there, and the
// result permuted back (a view with the input's axis order, as numpy's).
// Inputs with an axis of extent 0 or 1, a broadcast (stride 0) axis, or
// axes out of range go as given. The order of an input in row-major order
// already is checked with one pass over its strides.

py::object fft_call(PyRuntime& rt, std::string_view kind, py::handle x, py::handle lengths, py::handle axes,
                    std::string_view norm) {
  fft::FftAttributes attributes =
      value_or_raise(fft_attributes_of(kind, dims_or_empty(lengths), dims_or_empty(axes), norm));
  OperandList operands;
  static constexpr const char* kWhat[] = {"fft.fft operand",   "fft.ifft operand", "fft.rfft operand",
                                          "fft.irfft operand", "fft.hfft operand", "fft.ihfft operand"};
  operands.add(x, kWhat[static_cast<int>(attributes.kind)]);
  operands.wrap();
  Tensor operand = operands.tensors()[0];
  // Note [Transforms in memory order]: `back` permutes the result back.
  const auto rank = static_cast<std::int64_t>(operand.rank());
  const std::optional<Dims> order = memory_order(operand);
  bool permute = order.has_value() && !is_identity(*order) && !attributes.axes.empty();
  for (const std::int64_t a : attributes.axes) permute = permute && a >= -rank && a < rank;
  Dims back;
  if (permute) {
    back.resize(order->size());
    for (std::size_t p = 0; p < order->size(); ++p)
      back[static_cast<std::size_t>((*order)[p])] = static_cast<std::int64_t>(p);
    for (std::int64_t& a : attributes.axes) a = back[static_cast<std::size_t>(a < 0 ? a + rank : a)];
    operand = value_or_raise(operand.permute(*order));
  }
  const std::shared_ptr<const fft::FftOp> op = value_or_raise(rt.fft_op_for(attributes));
  Tensor result;
  Status status;
  {
    const std::span<const Tensor> input(&operand, 1);
    const ReleaseGilUnlessTiny nogil(estimated_work(input, WorkKind::kTransforms), rt.gil_releases());
    status = rt.with_context([&](runtime::EagerContext& ctx) -> Status {
      TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, ctx.call(op, input));
      result = std::move(out[0]);
      return ok_status();
    });
  }
  ok_or_raise(status);
  if (permute) result = value_or_raise(result.permute(back));
  return operands.to_numpy(std::move(result));
}

// tenferro.fft's entry as a vectorcall function (METH_FASTCALL): six
// positional arguments (runtime, kind, x, s, axes, norm), the default
// runtime remembered as einsum's (`self` is einsum's capsule, Note [Default
// runtime lookup]), instead of pybind11's dispatch and the default
// runtime's lookup by name on every transform.
PyObject* fft_fastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  return python_entry([&] {
    if (nargs != 6) raise_type_error(fmt::format("_fft: expected 6 positional arguments, found {}", nargs));
    const auto text = [&](Py_ssize_t i, const char* what) {
      Py_ssize_t size = 0;
      const char* data = PyUnicode_Check(args[i]) ? PyUnicode_AsUTF8AndSize(args[i], &size) : nullptr;
      if (data == nullptr) {
        PyErr_Clear();
        raise_type_error(fmt::format("_fft: expected a str {}, found {}", what, type_name(args[i])));
      }
      return std::string_view(data, static_cast<std::size_t>(size));
    };
    auto& state = *static_cast<EinsumFunctionState*>(PyCapsule_GetPointer(self, "tenferro.einsum_state"));
    const py::handle runtime(args[0]);
    PyRuntime& rt =
        runtime.is_none() ? default_runtime_fast(state) : runtime_for(state.module.ptr(), runtime, py::none());
    return fft_call(rt, text(1, "kind"), args[2], args[3], args[4], text(5, "norm"));
  });
}

// ---------------------------------------------------------------------------
// einsum's VJP through the AD transforms (the einsum AD rule)

py::tuple einsum_vjp_call(PyRuntime& rt, const std::string& subscripts, const py::list& args, py::handle cotangent,
                          py::handle optimize) {
  const OptimizeSpec spec = parse_optimize(optimize);
  std::shared_ptr<const einsum::EinsumOp> op = value_or_raise(rt.op_for(subscripts, spec));
  OperandList operands;
  for (std::size_t i = 0; i < args.size(); ++i)
    operands.add(args[i], "einsum_vjp operand", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
  if (static_cast<std::size_t>(op->num_operands()) != operands.size()) {
    raise_error(
        ErrorCode::kInvalidArgument,
        fmt::format("einsum_vjp '{}': the subscripts name {} operand{}, found {} before the cotangent (the last "
                    "argument, or cotangent=)",
                    op->canonical_subscripts(), op->num_operands(), op->num_operands() == 1 ? "" : "s",
                    operands.size()),
        ErrorStage::kCompile);
  }
  // Each gradient takes its operand's dtype, as torch.autograd gives it: the
  // real part for a real operand of a complex einsum, float32 for a float32
  // operand of a float64 one. Integer and bool operands (numpy promotes
  // them) get the gradient in the dtype the einsum is computed in.
  // (In native byte order: a big-endian operand gets a native gradient.)
  std::vector<py::object> operand_dtypes;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    PyArray_Descr* descr = PyArray_DESCR(reinterpret_cast<PyArrayObject*>(operands.array(i).ptr()));
    operand_dtypes.push_back(PyArray_ISNBO(descr->byteorder)
                                 ? py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(descr))
                                 : py::reinterpret_steal<py::object>(
                                       reinterpret_cast<PyObject*>(PyArray_DescrNewByteorder(descr, NPY_NATIVE))));
  }
  operands.unify_numeric();
  const DType dtype = operands.dtype(0);
  if (!is_inexact(dtype)) {
    raise_error(ErrorCode::kDTypeMismatch,
                fmt::format("einsum_vjp '{}': expected operands that promote to float32, float64, complex64 or "
                            "complex128, found {} (an integer or bool einsum has no gradient)",
                            op->canonical_subscripts(), dtype));
  }
  operands.wrap();
  std::vector<IntArrayRef> shapes;
  for (const Tensor& t : operands.tensors()) shapes.emplace_back(t.shape());
  Dims out_shape;
  ok_or_raise(op->output_shape(shapes, out_shape));

  OperandList ct;
  ct.add(cotangent, "einsum_vjp cotangent", -1, OperandList::Accept::kNumeric);
  if (is_complex(ct.dtype(0)) && !is_complex(dtype)) {
    raise_error(
        ErrorCode::kDTypeMismatch,
        fmt::format("einsum_vjp: the cotangent is {} but the einsum's output is real ({})", ct.dtype(0), dtype));
  }
  ct.cast(0, dtype);
  ct.wrap();
  const Tensor& ct_tensor = ct.tensors()[0];
  if (IntArrayRef(ct_tensor.shape()) != IntArrayRef(out_shape)) {
    raise_error(ErrorCode::kShapeMismatch,
                fmt::format("einsum_vjp: expected a cotangent of the output's shape {}, found {}",
                            shape_to_string(out_shape), shape_to_string(ct_tensor.shape())));
  }

  // Note [Einsum gradients in Python]: the operands, then the cotangent.
  std::vector<Tensor> params(operands.tensors().begin(), operands.tensors().end());
  params.push_back(ct_tensor);
  runtime::InputSignature signature = runtime::InputSignature::of(params);
  std::shared_ptr<const runtime::PreparedProgram> backward = rt.einsum_backward(*op, signature);
  std::shared_ptr<const runtime::PreparedProgram> made;
  std::optional<program::FrozenProgram> f;
  std::vector<std::uint32_t> active(operands.size());
  if (backward == nullptr) {
    program::ProgramBuilder b;
    std::vector<program::ProgramValue> inputs;
    for (const Tensor& t : operands.tensors()) {
      const program::SymbolicShape s = program::symbolic_shape(t.shape());
      inputs.push_back(
          value_or_raise(b.add_input(dtype, std::span<const program::SymbolicExtent>(s.data(), s.size()))));
    }
    // The AD context differentiates it through its planned pairwise steps
    // (Note [Pairwise einsums for reverse mode]).
    const program::ProgramValue out = value_or_raise(einsum::emit_einsum(b, op, inputs));
    f = value_or_raise(b.freeze({out}));
    for (std::size_t i = 0; i < active.size(); ++i) active[i] = static_cast<std::uint32_t>(i);
  }
  if (rt.from_before_fork()) ok_or_raise(rt.fork_error());
  Result<std::vector<Tensor>> r = [&]() -> Result<std::vector<Tensor>> {
    GilRelease nogil;
    if (backward == nullptr) {
      TENFERRO_ASSIGN_OR_RETURN(made, ad::prepare_vjp_cotangents(rt.runtime(), rt.ad(), *f, active, signature));
      if (made == nullptr) {  // vjp_cotangents serves what the prepared program cannot
        return ad::vjp_cotangents(rt.runtime(), rt.ad(), *f, std::span<const Tensor>(params.data(), active.size()),
                                  active, std::span<const Tensor>(&params.back(), 1));
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out,
                              rt.runtime().run_prepared(backward != nullptr ? *backward : *made, params));
    return std::vector<Tensor>(out.begin(), out.end());
  }();
  if (made != nullptr) rt.remember_einsum_backward(op, std::move(signature), std::move(made));
  std::vector<Tensor> cotangents = value_or_raise(std::move(r));
  py::tuple grads(cotangents.size());
  for (std::size_t i = 0; i < cotangents.size(); ++i) {
    py::object g = operands.to_numpy(std::move(cotangents[i]));
    const auto* want = reinterpret_cast<const PyArray_Descr*>(operand_dtypes[i].ptr());
    if (want->kind == 'f' || want->kind == 'c') {
      if (want->kind == 'f' && is_complex(dtype)) g = g.attr("real");
      if (!PyArray_EquivTypes(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(g.ptr())),
                              const_cast<PyArray_Descr*>(want))) {
        g = g.attr("astype")(operand_dtypes[i]);
      }
    }
    grads[i] = std::move(g);
  }
  return grads;
}

}  // namespace
}  // namespace tenferro::python

PYBIND11_MODULE(_tenferro, m) {
  using namespace tenferro;
  using namespace tenferro::python;
  if (_import_array() < 0) throw py::error_already_set();
  m.doc() = "tenferro's compiled core; use the `tenferro` package (docs/python.md).";
  PyObject* module = m.ptr();
  m.attr("_default_runtime") = py::none();
  m.attr("_runtimes_by_threads") = py::dict();
  register_exit_wait();  // Note [Calls in flight at exit]
  register_tape(m);

  py::class_<PyRuntime> runtime_class(m, "Runtime", R"doc(
A tenferro runtime: the CPU engine with its GEMM provider and thread count,
the native einsum and linalg engines, plan and op caches.

Runtime(threads=None, gemm="native", domain=None, worker_spin=None)
  threads: worker threads (None: every CPU this process may use).
  gemm:    "native", "openblas" or "blis".
  domain:  "managed" (one managed CPU domain of `threads` pinned workers,
           as the CLI builds it) or "inline" (threads=1 only: work runs on
           the calling thread); None: inline for one thread, else managed.
  worker_spin: seconds the managed domain's workers keep spinning for the
           next parallel loop before they sleep, in [0, 1]; None: 0.01.
           0 where the CPUs are shared with other busy processes.
Pass it as runtime= to tenferro.einsum, contract_path, einsum_vjp and the
tenferro.linalg functions, or call its einsum method.)doc");
  runtime_class
      .def(py::init([](py::handle threads, const std::string& gemm, py::handle domain, py::handle worker_spin) {
             int n = 0;
             if (!threads.is_none()) {
               const std::int64_t t = thread_count(threads);
               if (t < 1) {
                 raise_error(ErrorCode::kInvalidArgument, fmt::format("threads={}: expected at least 1 (or None)", t));
               }
               n = static_cast<int>(t);
             }
             std::chrono::microseconds spin = cpu::CpuDomainSpec::kDefaultWorkerSpin;
             if (!worker_spin.is_none()) {
               if (!py::isinstance<py::float_>(worker_spin) && !py::isinstance<py::int_>(worker_spin)) {
                 raise_type_error("worker_spin: expected a number of seconds or None");
               }
               const double seconds = py::cast<double>(worker_spin);
               const double max_seconds = static_cast<double>(cpu::CpuDomainSpec::kMaxWorkerSpin.count()) * 1e-6;
               if (!(seconds >= 0.0 && seconds <= max_seconds)) {  // also NaN
                 raise_error(
                     ErrorCode::kInvalidArgument,
                     fmt::format("worker_spin={}: expected seconds in [0, {}] (or None)", seconds, max_seconds));
               }
               spin = std::chrono::microseconds(static_cast<std::int64_t>(std::llround(seconds * 1e6)));
             }
             return value_or_raise(
                 PyRuntime::create(n, gemm, domain.is_none() ? std::string() : py::cast<std::string>(domain), spin));
           }),
           py::arg("threads") = py::none(), py::arg("gemm") = "native", py::arg("domain") = py::none(),
           py::arg("worker_spin") = py::none())
      .def_property_readonly("threads", on_runtime(&PyRuntime::threads))
      .def_property_readonly("gemm", on_runtime(&PyRuntime::gemm))
      .def_property_readonly("domain", on_runtime(&PyRuntime::domain))
      .def_property_readonly("worker_spin", on_runtime([](const PyRuntime& rt) {
                               return static_cast<double>(rt.worker_spin().count()) * 1e-6;
                             }),
                             "Seconds the workers spin for the next loop (0.0 without domain workers).")
      .def_property_readonly("cached_ops", on_runtime(&PyRuntime::cached_ops),
                             "Parsed einsum and fft operations kept for reuse.")
      .def_property_readonly("gil_releases", on_runtime(&PyRuntime::gil_release_count),
                             "Calls on this runtime that released the GIL while they computed; calls with less "
                             "work keep it, so threads doing tiny calls take turns instead of handing it over "
                             "(docs/python.md, threads).")
      .def_property_readonly("cached_einsum_gradients", on_runtime(&PyRuntime::cached_einsum_backwards),
                             "Prepared backward programs of einsum_vjp kept for reuse (at most 8, the most recently "
                             "used; one per subscripts, optimize, dtypes, shapes and layouts).")
      .def_property_readonly("cached_sliced_plans", on_runtime(&PyRuntime::cached_sliced_plans),
                             "Compiled slicings of einsum(max_intermediate_bytes=) kept for reuse (at most 16).")
      .def_property_readonly("pooled_bytes", on_runtime([](const PyRuntime& self) {
                               // Note [Runtimes from before a fork]: locks another thread held at the
                               // fork stay held in the child (the stress audit's child hung here).
                               if (self.from_before_fork()) ok_or_raise(self.fork_error());
                               return self.pooled_bytes();
                             }),
                             "Bytes of freed results the runtime's memory pool keeps for reuse (bounded; "
                             "clear_caches() returns them to the system).")
      .def("cache_report", on_runtime([](PyRuntime& self) {
             if (self.from_before_fork()) ok_or_raise(self.fork_error());  // Note [Runtimes from before a fork]
             // Without the GIL: the FFT counters wait for a plan another
             // thread is making (0.4 s froze every Python thread; stress audit).
             const runtime::RuntimeCacheReport report = [&] {
               const py::gil_scoped_release nogil;
               return self.runtime().cache_report();
             }();
             const auto usage = [](const runtime::CacheUsage& u) {
               py::dict d;
               d["entries"] = u.entries;
               d["bytes"] = u.bytes;
               d["hits"] = u.hits;
               d["misses"] = u.misses;
               d["evictions"] = u.evictions;
               return d;
             };
             py::dict out;
             py::dict plans;
             plans["entries"] = report.plans.entries;
             plans["bytes"] = report.plans.bytes;
             plans["hits"] = report.plans.hits;
             plans["misses"] = report.plans.misses;
             plans["evictions"] = report.plans.evictions;
             out["prepared_plans"] = plans;
             py::list engines;
             for (const runtime::EngineCacheReport& e : report.engines) {
               py::dict d = usage(e.usage);
               d["engine"] = e.engine.value();
               engines.append(d);
             }
             out["engines"] = engines;
             py::dict extensions;
             for (const runtime::ExtensionCacheReport& x : report.extensions)
               extensions[py::str(x.family_id)] = usage(x.usage);
             out["extensions"] = extensions;
             return out;
           }),
           "The runtime's C++ caches (Runtime::cache_report): the prepared plans, each engine's pooled free memory "
           "and each extension engine's plans and workspaces (entries, bytes, hits, misses, evictions); what "
           "clear_caches() empties.")
      .def("clear_caches", on_runtime([](PyRuntime& self) {
             if (self.from_before_fork()) ok_or_raise(self.fork_error());  // Note [Runtimes from before a fork]
             self.clear_caches();
           }),
           "Drops the parsed-op cache, the einsum_vjp programs, the compiled slicings, the compile cache of recorded "
           "gradients, the AD transform cache, the prepared-plan cache and the einsum, FFT and linalg engines' "
           "plans and workspaces, and returns the memory pool's freed blocks to the system (also a one-thread "
           "runtime's).")
      .def("__repr__", on_runtime([](const PyRuntime& rt) {
             return fmt::format("tenferro.Runtime(threads={}, gemm='{}', domain='{}')", rt.threads(), rt.gemm(),
                                rt.domain());
           }));
  static PyMethodDef runtime_einsum_def = {
      "einsum", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&runtime_einsum_fastcall)),
      METH_FASTCALL | METH_KEYWORDS, "einsum on this runtime; see tenferro.einsum."};
  PyObject* runtime_einsum =
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(runtime_class.ptr()), &runtime_einsum_def);
  if (runtime_einsum == nullptr) throw py::error_already_set();
  runtime_class.attr("einsum") = py::reinterpret_steal<py::object>(runtime_einsum);

  // tp_call is set before the type is readied, so that the type gets a
  // __call__ slot wrapper and ContractExpression inherits the slot itself.
  py::class_<Contraction> contraction(
      m, "_Contraction",
      "An einsum with its path fixed (Note [Contract expressions]); tenferro.ContractExpression is the public class.",
      py::custom_type_setup([](PyHeapTypeObject* heap) { heap->ht_type.tp_call = &contraction_tp_call; }));
  contraction
      .def(py::init([module](const std::string& subscripts, py::handle path, py::handle memory_limit,
                             py::handle max_intermediate_bytes, const py::dict& constants) {
             return make_contraction(module, subscripts, path, memory_limit, max_intermediate_bytes, constants);
           }),
           py::arg("subscripts"), py::arg("path"), py::arg("memory_limit") = py::none(),
           py::arg("max_intermediate_bytes") = py::none(), py::arg("constants") = py::dict())
      .def_property_readonly("num_args", [](const Contraction& c) { return c.num_args; });

  static PyMethodDef einsum_def = {
      "einsum", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&einsum_fastcall)),
      METH_FASTCALL | METH_KEYWORDS,
      R"doc(einsum(subscripts, *operands, optimize="auto", threads=None, runtime=None, out=None, dtype=None, casting="safe", order="K", max_intermediate_bytes=None, memory_limit=None)

numpy.einsum semantics (ellipsis, repeated labels, implicit output, the
sublist form) for numpy's numeric dtypes, with numpy's result dtype;
operands are borrowed without copying and the result is a numpy array over
tenferro's storage (a numpy scalar for a full contraction). out=: a numpy
array of the result's shape to write the result into (under casting=,
'safe' by default); it is returned. dtype=/casting=/order= as numpy's.
max_intermediate_bytes=: slice the contraction so that no intermediate
exceeds that many bytes. See docs/python.md.)doc"};
  auto state = std::make_unique<EinsumFunctionState>(module);
  PyObject* capsule = PyCapsule_New(state.get(), "tenferro.einsum_state", destroy_einsum_state);
  if (capsule == nullptr) throw py::error_already_set();
  state.release();
  const py::object self = py::reinterpret_steal<py::object>(capsule);
  m.attr("einsum") =
      py::reinterpret_steal<py::object>(PyCFunction_NewEx(&einsum_def, self.ptr(), m.attr("__name__").ptr()));
  // _fft(runtime, kind, x, s, axes, norm), positional only: fft.py's call of
  // every transform (fft_fastcall).
  static PyMethodDef fft_def = {"_fft", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fft_fastcall)),
                                METH_FASTCALL, "_fft(runtime, kind, x, s, axes, norm): tenferro.fft's transforms."};
  m.attr("_fft") = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&fft_def, self.ptr(), m.attr("__name__").ptr()));

  m.def(
      "default_runtime", [module](py::handle threads) { return default_runtime_object(module, threads); },
      py::arg("threads") = py::none(),
      "The module's runtime for threads= (None: every allowed CPU), created on first use.");
  m.def(
      "_runtime_for",
      [module](py::handle runtime, py::handle threads) {
        if (runtime.is_none()) return default_runtime_object(module, threads);
        runtime_for(module, runtime, threads);  // checks the type and the thread count
        return py::reinterpret_borrow<py::object>(runtime);
      },
      py::arg("runtime"), py::arg("threads"),
      "The runtime for a call's runtime= and threads= (linalg's and fft's, as einsum picks it).");
  m.def(
      "_operand_address",
      [](py::handle obj) {
        OperandList operands;
        operands.add(obj, "operand");
        operands.wrap();
        return reinterpret_cast<std::uintptr_t>(operands.tensors()[0].data());
      },
      "The address of the Tensor an operand is borrowed as (for the zero-copy tests).");
  m.def(
      "_einsum_operand_addresses",
      [module](const std::string& subscripts, py::args arrays) {
        PyRuntime& rt = default_runtime(module, py::none());
        const std::shared_ptr<const einsum::EinsumOp> op = value_or_raise(rt.op_for(subscripts, OptimizeSpec{}));
        OperandList operands;
        for (std::size_t i = 0; i < arrays.size(); ++i) {
          operands.add(arrays[i], "einsum operand", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
        }
        operands.unify_numeric();
        const std::uint64_t reversed = reverse_backward_labels(*op, operands);
        operands.wrap();
        py::list addresses;
        for (const Tensor& t : operands.tensors()) addresses.append(reinterpret_cast<std::uintptr_t>(t.data()));
        return py::make_tuple(addresses, reversed);
      },
      "The addresses of the Tensors einsum borrows its operands as, and the output axes it reverses (bits), "
      "for the zero-copy tests (Note [Reversed operands]).");
  m.def(
      "_from_dlpack", [](py::handle obj) { return from_dlpack(obj, "operand"); },
      "A numpy view of a DLPack producer (Note [DLPack operands]: detached, lazy conjugate/negative bits "
      "resolved).");
  m.def(
      "_config", [] { return tenferro::info::gather().dump(); },
      "The info document of `tenferro info` (info.h) as JSON: what tenferro.show_config() reports.");
  m.def(
      "_config_text", [](const std::string& json) { return tenferro::info::to_text(nlohmann::json::parse(json)); },
      "A document of _config (plus sections) as `tenferro info` prints it.");
  m.def("_plan", &plan_path, py::arg("subscripts"), py::arg("shapes"), py::arg("optimize") = py::none(),
        py::arg("max_intermediate_bytes") = py::none(), py::arg("memory_limit") = py::none(),
        py::arg("who") = "contract_path", py::arg("itemsize") = 8);
  m.def(
      "_linalg",
      [module](py::handle runtime, const std::string& name, const py::list& args, const std::string& mode, bool flag,
               double rcond) {
        return linalg_call(runtime_for(module, runtime, py::none()), name, args, mode, flag, rcond);
      },
      py::arg("runtime"), py::arg("name"), py::arg("args"), py::arg("mode") = "", py::arg("flag") = true,
      py::arg("rcond") = -1.0);
  m.def(
      "_einsum_vjp",
      [module](py::handle runtime, py::handle threads, const std::string& subscripts, const py::list& args,
               py::handle cotangent, py::handle optimize) {
        return einsum_vjp_call(runtime_for(module, runtime, threads), subscripts, args, cotangent, optimize);
      },
      py::arg("runtime"), py::arg("threads"), py::arg("subscripts"), py::arg("args"), py::arg("cotangent"),
      py::arg("optimize") = py::none());
}
