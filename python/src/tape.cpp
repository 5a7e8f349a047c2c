// Traced values and tapes for tenferro.vjp / tenferro.grad (tape.h).
#include "tape.h"

#include <algorithm>
#include <complex>
#include <cstring>

#include <fmt/format.h>

#include "array_bridge.h"
#include "numpy_api.h"
#include "tenferro/compiler/batching.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/linalg/linalg_op.h"

namespace tenferro::python {
namespace {

using program::CoreSemanticOp;

// A dense copy of `obj` (an array-like) as a tenferro tensor of `dtype`
// (Note [Traced values]: tape leaves never borrow Python memory).
Tensor copied_leaf(PyRuntime& runtime, py::handle obj, std::optional<DType> dtype, const char* what) {
  OperandList operands;
  // A constant next to Traced values takes their dtype, from any numeric
  // dtype (an integer weight vector in an einsum); a variable must be inexact.
  operands.add(obj, what, -1, dtype ? OperandList::Accept::kNumeric : OperandList::Accept::kInexact);
  if (dtype) operands.cast(0, *dtype);
  operands.wrap();
  const Tensor& borrowed = operands.tensors()[0];
  return value_or_raise(runtime.with_context([&](runtime::EagerContext& ctx) { return ctx.copy(borrowed); }));
}

PyTraced record(const std::shared_ptr<PyTape>& tape, Result<ad::TapeTensor> handle) {
  ad::TapeTensor h = value_or_raise(std::move(handle));
  Tensor value = value_or_raise(tape->tape.value(h));
  return PyTraced{tape, h, std::move(value)};
}

// Note [Nested Traced values]
// tenferro.grad inside tenferro.grad (grad of grad): the inner call's tape
// has the enclosing call's tape as its parent, and its differentiated
// arguments are variables standing for the enclosing Traced values (Note
// [Nested tapes] in gradient_tape.h); the inner call's results are recorded
// on the parent by the *_onto transforms, as Traced values of the parent.
// A Traced value of an enclosing tape that the inner function uses (one it
// closes over) becomes a constant of the inner tape standing for it,
// through every tape in between, so the enclosing tape differentiates
// through it as well. The operands of one call are recorded on the
// innermost of their tapes; Traced values of tapes that are not nested
// (a value that left its tenferro.grad call) are a kForeignValue error.
bool encloses(const PyTape* outer, const PyTape* inner) {
  for (const PyTape* p = inner->parent.get(); p != nullptr; p = p->parent.get()) {
    if (p == outer) return true;
  }
  return false;
}

const std::shared_ptr<PyTape>& innermost(const std::shared_ptr<PyTape>& a, const std::shared_ptr<PyTape>& b,
                                         std::string_view what) {
  if (!a || a == b || encloses(a.get(), b.get())) return b;
  if (encloses(b.get(), a.get())) return a;
  raise_error(ErrorCode::kForeignValue,
              fmt::format("{}: Traced values of two tapes that are not nested (a value used outside the "
                          "tenferro.grad / vjp call that traced it)",
                          what));
}

// `t` as a tensor of `tape` (Note [Nested Traced values]).
ad::TapeTensor handle_on(PyTape& tape, const PyTraced& t) {
  if (t.tape.get() == &tape) return t.handle;
  if (!tape.parent) {
    raise_error(ErrorCode::kForeignValue,
                "a Traced value of another tape (a value used outside the tenferro.grad / vjp call that traced it)");
  }
  const ad::TapeTensor outer = handle_on(*tape.parent, t);
  return value_or_raise(tape.tape.constant(tape.parent->tape, outer));
}

// Note [Traced promotion]
// einsum and linalg on Traced values and array-likes compute in numpy's
// result dtype of all their operands (PyArray_ResultType: 0-d arrays and
// Python scalars by value, as numpy 1.x's einsum promotes), like the same
// calls on arrays. A Traced operand of a narrower dtype is converted on the
// tape (the convert rule brings its gradient back to its dtype: the real
// part for a real value), constants are cast to the result dtype. Casting
// the constants to the Traced dtype instead dropped the imaginary part of a
// complex constant next to a real variable, value and gradient wrong.
struct TracedOperands {
  std::shared_ptr<PyTape> tape;
  DType dtype = DType::kFloat64;
};

TracedOperands promote_traced(std::span<const py::handle> operands, const char* what) {
  TracedOperands out;
  std::vector<py::object> owned;
  std::vector<PyArrayObject*> arrays;
  std::vector<PyArray_Descr*> dtypes;
  for (py::handle a : operands) {
    if (py::isinstance<PyTraced>(a)) {
      const PyTraced& t = py::cast<const PyTraced&>(a);
      out.tape = innermost(out.tape, t.tape, what);
      owned.push_back(numpy_dtype(t.value.dtype()));
      dtypes.push_back(reinterpret_cast<PyArray_Descr*>(owned.back().ptr()));
    } else {
      PyObject* arr = PyArray_FROM_O(a.ptr());
      if (arr == nullptr) throw py::error_already_set();
      owned.push_back(py::reinterpret_steal<py::object>(arr));
      arrays.push_back(reinterpret_cast<PyArrayObject*>(arr));
    }
  }
  if (!out.tape) raise_error(ErrorCode::kInvalidArgument, fmt::format("{}: no Traced operand", what));
  PyArray_Descr* target = PyArray_ResultType(static_cast<npy_intp>(arrays.size()), arrays.data(),
                                             static_cast<npy_intp>(dtypes.size()), dtypes.data());
  if (target == nullptr) throw py::error_already_set();
  const py::object descr = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(target));
  const std::optional<DType> d = dtype_of_typenum(target->type_num);
  if (!d || !is_inexact(*d)) {
    raise_error(ErrorCode::kDTypeMismatch,
                fmt::format("{}: expected operands that promote to float32, float64, complex64 or complex128, found "
                            "the result dtype {}",
                            what, std::string(py::str(descr))));
  }
  out.dtype = *d;
  return out;
}

// `a` as an operand of the promoted dtype on the operands' tape: a Traced
// value (converted on the tape when its dtype differs) or a constant copy.
ad::TapeTensor promoted_operand(const TracedOperands& to, py::handle a, const char* what) {
  if (py::isinstance<PyTraced>(a)) {
    const PyTraced& t = py::cast<const PyTraced&>(a);
    const ad::TapeTensor h = handle_on(*to.tape, t);
    if (t.value.dtype() == to.dtype) return h;
    return value_or_raise(to.tape->tape.apply(CoreSemanticOp::kConvert, {h}, program::ConvertAttributes{to.dtype}));
  }
  return value_or_raise(to.tape->tape.constant(copied_leaf(*to.tape->runtime, a, to.dtype, what)));
}

}  // namespace

bool any_traced(std::span<PyObject* const> args, std::size_t first) {
  for (std::size_t i = first; i < args.size(); ++i) {
    if (!PyArray_Check(args[i]) && py::isinstance<PyTraced>(py::handle(args[i]))) return true;
  }
  return false;
}

py::object traced_einsum(std::span<PyObject* const> objects, const std::shared_ptr<const einsum::EinsumOp>& op) {
  if (static_cast<std::size_t>(op->num_operands()) != objects.size()) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("einsum '{}': the subscripts name {} operands, found {}", op->canonical_subscripts(),
                            op->num_operands(), objects.size()),
                ErrorStage::kCompile);  // Note [Einsum binding errors are compile-stage]
  }
  const std::vector<py::handle> operands(objects.begin(), objects.end());
  const TracedOperands promoted = promote_traced(operands, "einsum");
  const std::shared_ptr<PyTape>& tape = promoted.tape;
  SmallVector<ad::TapeTensor, 8> handles;
  for (py::handle a : operands) handles.push_back(promoted_operand(promoted, a, "einsum operand"));
  // The tape records an einsum of three or more operands as its planned
  // binary steps (Note [Expansions on the tape], Note [Pairwise einsums for
  // reverse mode]), so the gradient costs about twice the forward.
  SmallVector<ad::TapeTensor, 2> out =
      value_or_raise(tape->tape.apply(op, std::span<const ad::TapeTensor>(handles.data(), handles.size())));
  return py::cast(record(tape, out[0]));
}

py::tuple traced_linalg(const std::string& name, const py::list& args, const std::string& mode, bool flag,
                        double rcond) {
  const std::shared_ptr<const linalg::LinalgOp> op = value_or_raise(linalg_op_of(name, mode, flag, rcond));
  const std::vector<py::handle> operands(args.begin(), args.end());
  const std::string what = "linalg." + name;
  const TracedOperands promoted = promote_traced(operands, what.c_str());
  const std::shared_ptr<PyTape>& tape = promoted.tape;
  SmallVector<ad::TapeTensor, 8> handles;
  for (py::handle a : operands) handles.push_back(promoted_operand(promoted, a, "linalg operand"));
  SmallVector<ad::TapeTensor, 2> outs =
      value_or_raise(tape->tape.apply(op, std::span<const ad::TapeTensor>(handles.data(), handles.size())));
  py::tuple result(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) result[i] = py::cast(record(tape, outs[i]));
  return result;
}

// tenferro.fft inside vjp / grad: the FftOp applied on the operand's tape
// (the fft AD rules installed on the runtime's AdContext).
py::object traced_fft(const std::string& kind, const PyTraced& x, const py::object& lengths, const py::object& axes,
                      const std::string& norm) {
  const fft::FftAttributes attributes =
      value_or_raise(fft_attributes_of(kind, dims_or_empty(lengths), dims_or_empty(axes), norm));
  const std::shared_ptr<const fft::FftOp> op = value_or_raise(fft::FftOp::create(attributes));
  SmallVector<ad::TapeTensor, 2> out =
      value_or_raise(x.tape->tape.apply(op, std::span<const ad::TapeTensor>(&x.handle, 1)));
  return py::cast(record(x.tape, out[0]));
}

// The dtype of a numpy bool, int32 or int64 array (a select's predicate,
// a gather's indices, a recorded comparison's operand): the array bridge takes the inexact dtypes only.
std::optional<DType> exact_dtype_of(py::handle a) {
  if (!PyArray_Check(a.ptr())) return std::nullopt;
  switch (PyArray_TYPE(reinterpret_cast<PyArrayObject*>(a.ptr()))) {
    case NPY_BOOL:
      return DType::kBool;
    case NPY_INT32:
      return DType::kInt32;
    case NPY_INT64:
      return DType::kInt64;
    default:
      return std::nullopt;
  }
}

// Such an array as a tensor of `dtype` (a dense copy).
Tensor exact_leaf(py::handle a, DType dtype) {
  // (Not numpy.ascontiguousarray, which makes a 0-d array 1-d.)
  PyObject* c = PyArray_FROM_OF(a.ptr(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
  if (c == nullptr) throw py::error_already_set();
  const py::object dense = py::reinterpret_steal<py::object>(c);
  auto* arr = reinterpret_cast<PyArrayObject*>(dense.ptr());
  Dims shape(PyArray_DIMS(arr), PyArray_DIMS(arr) + PyArray_NDIM(arr));
  Tensor t = value_or_raise(Tensor::empty(shape, dtype));
  if (t.nbytes() > 0) std::memcpy(t.data(), PyArray_DATA(arr), t.nbytes());
  return t;
}

// A core op applied to Traced values and arrays (Note [Traced array
// protocol] in python/tenferro/_traced.py): the operands already have the
// op's shapes and dtypes; arrays become constants as they are.
py::object traced_core(const std::string& name, const py::sequence& args, program::CoreAttributes attributes) {
  const std::optional<CoreSemanticOp> op = program::parse_core_op(name);
  if (!op) raise_error(ErrorCode::kInvalidArgument, fmt::format("Traced: no core operation named '{}'", name));
  std::shared_ptr<PyTape> tape;
  for (py::handle a : args) {
    if (py::isinstance<PyTraced>(a)) tape = innermost(tape, py::cast<const PyTraced&>(a).tape, name);
  }
  if (!tape) raise_error(ErrorCode::kInvalidArgument, fmt::format("{}: no Traced operand", name));
  SmallVector<ad::TapeTensor, 4> handles;
  for (py::handle a : args) {
    if (py::isinstance<PyTraced>(a)) {
      handles.push_back(handle_on(*tape, py::cast<const PyTraced&>(a)));
    } else {
      const std::optional<DType> exact = exact_dtype_of(a);
      Tensor leaf = exact ? exact_leaf(a, *exact) : copied_leaf(*tape->runtime, a, std::nullopt, name.c_str());
      handles.push_back(value_or_raise(tape->tape.constant(leaf)));
    }
  }
  return py::cast(record(tape, tape->tape.apply(*op, std::span<const ad::TapeTensor>(handles.data(), handles.size()),
                                                std::move(attributes))));
}

Dims dims_of(const py::sequence& values) {
  Dims out;
  for (py::handle v : values) out.push_back(py::cast<std::int64_t>(v));
  return out;
}

program::SymbolicShape shape_of(const py::sequence& values) {
  program::SymbolicShape out;
  for (py::handle v : values) out.push_back(program::SymbolicExtent(py::cast<std::int64_t>(v)));
  return out;
}

// Note [Traced fast paths]
// What numpy code writes most on Traced values -- an operator or ufunc on
// Traced values of one shape and one floating or complex dtype, or on one
// such value and a Python int or float (weak: the value's dtype stays, as
// in numpy 2), x ** 2, 2-D @ 2-D, .sum() and .mean() -- is recorded here
// without the Python layer of Note [Traced array protocol]. Every other
// form calls that layer's general rule (numpy broadcasting, promotion, typed
// errors), which records the same core operations, so both give the same
// tape; the tests compare each fast form with the general rule.
namespace {

const PyTraced* traced_or_null(py::handle h) {
  return py::isinstance<PyTraced>(h) ? &py::cast<const PyTraced&>(h) : nullptr;
}

// The general rule `name` of python/tenferro/_traced.py.
py::object general_rule(const char* name) { return py::module_::import("tenferro._traced").attr(name); }

py::object record_core(const PyTraced& like, CoreSemanticOp op, std::initializer_list<ad::TapeTensor> operands,
                       program::CoreAttributes attributes = program::NoAttributes{}) {
  return py::cast(record(like.tape, like.tape->tape.apply(op, operands, std::move(attributes))));
}

// np.matmul's entry in Traced._fast_ufuncs.
constexpr long kMatmulUfunc = -1;

// `h` when it is a Python int or float, as a constant of like's dtype
// broadcast to like's shape; nullopt for anything else (bool, numpy
// scalars, complex, an int beyond double's range).
std::optional<ad::TapeTensor> weak_scalar(const PyTraced& like, py::handle h) {
  if (!is_inexact(like.value.dtype())) return std::nullopt;
  double v = 0;
  if (PyFloat_CheckExact(h.ptr())) {
    v = PyFloat_AS_DOUBLE(h.ptr());
  } else if (PyLong_CheckExact(h.ptr())) {
    v = PyLong_AsDouble(h.ptr());
    if (v == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  Result<Tensor> scalar = [&]() -> Result<Tensor> {
    switch (like.value.dtype()) {
      case DType::kFloat32:
        return Tensor::scalar(static_cast<float>(v));
      case DType::kComplex64:
        return Tensor::scalar(std::complex<float>(static_cast<float>(v), 0.0f));
      case DType::kComplex128:
        return Tensor::scalar(std::complex<double>(v, 0.0));
      default:
        return Tensor::scalar(v);
    }
  }();
  ad::GradientTape& tape = like.tape->tape;
  ad::TapeTensor c = value_or_raise(tape.constant(value_or_raise(std::move(scalar))));
  if (like.value.rank() == 0) return c;
  return value_or_raise(tape.apply(CoreSemanticOp::kBroadcastInDim, {c},
                                   program::BroadcastInDimAttributes{program::symbolic_shape(like.value.shape()), {}}));
}

// `h` when it is a numpy array of like's dtype and `shape`, as a constant
// (a copy, Note [Traced values]); nullopt otherwise.
std::optional<ad::TapeTensor> array_constant(const PyTraced& like, py::handle h, std::span<const std::int64_t> shape) {
  if (!PyArray_CheckExact(h.ptr())) return std::nullopt;
  auto* arr = reinterpret_cast<PyArrayObject*>(h.ptr());
  if (dtype_of_typenum(PyArray_TYPE(arr)) != like.value.dtype() || !PyArray_ISNOTSWAPPED(arr) ||
      !std::ranges::equal(std::span<const npy_intp>(PyArray_DIMS(arr), PyArray_NDIM(arr)), shape)) {
    return std::nullopt;
  }
  return value_or_raise(like.tape->tape.constant(copied_leaf(*like.tape->runtime, h, std::nullopt, "operand")));
}

// a <op> b for a binary elementwise core op; `a` or `b` is Traced.
py::object traced_binary(CoreSemanticOp op, py::handle a, py::handle b) {
  const PyTraced* ta = traced_or_null(a);
  const PyTraced* tb = traced_or_null(b);
  if (ta && tb) {
    if (ta->tape == tb->tape && ta->value.dtype() == tb->value.dtype() && is_inexact(ta->value.dtype()) &&
        std::ranges::equal(ta->value.shape(), tb->value.shape())) {
      return record_core(*ta, op, {ta->handle, tb->handle});
    }
  } else if (ta) {
    if (auto c = weak_scalar(*ta, b)) return record_core(*ta, op, {ta->handle, *c});
    if (auto c = array_constant(*ta, b, ta->value.shape())) return record_core(*ta, op, {ta->handle, *c});
  } else if (tb) {
    if (auto c = weak_scalar(*tb, a)) return record_core(*tb, op, {*c, tb->handle});
    if (auto c = array_constant(*tb, a, tb->value.shape())) return record_core(*tb, op, {*c, tb->handle});
  }
  return general_rule("_elementwise")(std::string(program::to_string(op)), a, b);
}

py::object traced_unary(CoreSemanticOp op, const PyTraced& x) { return record_core(x, op, {x.handle}); }

// x ** y: numpy's cheaper forms of the common exponents (_power's rule).
py::object traced_power(py::handle x, py::handle y) {
  const PyTraced* t = traced_or_null(x);
  if (t && is_inexact(t->value.dtype()) && (PyFloat_CheckExact(y.ptr()) || PyLong_CheckExact(y.ptr()))) {
    const double e = PyFloat_CheckExact(y.ptr()) ? PyFloat_AS_DOUBLE(y.ptr()) : PyLong_AsDouble(y.ptr());
    if (e == 2.0) return record_core(*t, CoreSemanticOp::kMul, {t->handle, t->handle});
    if (e == 1.0) return py::reinterpret_borrow<py::object>(x);
    if (e == 0.5) return traced_unary(CoreSemanticOp::kSqrt, *t);
    PyErr_Clear();  // an int beyond double's range: the general rule decides
  }
  return general_rule("_power")(x, y);
}

// The shape of `h` as an operand of a matrix product recorded with `like`'s
// tape and dtype (a Traced matrix, or a numpy matrix of that dtype), or
// nullopt; nothing is recorded.
std::optional<std::array<std::int64_t, 2>> matrix_shape(const PyTraced& like, py::handle h) {
  if (const PyTraced* t = traced_or_null(h)) {
    if (t->tape != like.tape || t->value.dtype() != like.value.dtype() || t->value.rank() != 2) return std::nullopt;
    return std::array<std::int64_t, 2>{t->value.shape()[0], t->value.shape()[1]};
  }
  if (!PyArray_CheckExact(h.ptr())) return std::nullopt;
  auto* arr = reinterpret_cast<PyArrayObject*>(h.ptr());
  if (PyArray_NDIM(arr) != 2 || dtype_of_typenum(PyArray_TYPE(arr)) != like.value.dtype() ||
      !PyArray_ISNOTSWAPPED(arr)) {
    return std::nullopt;
  }
  return std::array<std::int64_t, 2>{PyArray_DIMS(arr)[0], PyArray_DIMS(arr)[1]};
}

// a @ b of two matrices: Traced values, or a Traced value and a numpy
// array of its dtype.
py::object traced_matmul(py::handle a, py::handle b) {
  const PyTraced* t = traced_or_null(a);
  if (!t) t = traced_or_null(b);
  if (t && t->value.rank() == 2 && is_inexact(t->value.dtype())) {
    const auto sa = matrix_shape(*t, a);
    const auto sb = sa ? matrix_shape(*t, b) : std::nullopt;
    if (sb && (*sa)[1] == (*sb)[0]) {
      auto handle = [&](py::handle h, std::span<const std::int64_t> shape) {
        const PyTraced* x = traced_or_null(h);
        return x ? x->handle : *array_constant(*t, h, shape);
      };
      const ad::TapeTensor operands[] = {handle(a, *sa), handle(b, *sb)};
      const std::shared_ptr<const einsum::EinsumOp> op = value_or_raise(t->tape->runtime->op_for("ij,jk->ik", {}));
      SmallVector<ad::TapeTensor, 2> out = value_or_raise(t->tape->tape.apply(op, operands));
      return py::cast(record(t->tape, out[0]));
    }
  }
  return general_rule("_matmul")(a, b);
}

// x.sum() / x.mean() without arguments: over every axis.
py::object traced_sum_all(const PyTraced& x, py::handle self) {
  if (x.value.rank() == 0) return py::reinterpret_borrow<py::object>(self);
  Dims axes;
  for (std::int64_t k = 0; k < x.value.rank(); ++k) axes.push_back(k);
  return record_core(x, CoreSemanticOp::kReduceSum, {x.handle}, program::ReduceAttributes{std::move(axes)});
}

}  // namespace

namespace {

// A tangent (jvp) or vector (hvp) for `primal`: an array-like cast to its
// dtype (a complex one for a real primal is a DTypeError: the imaginary part
// would be dropped) of its shape (else a kShapeMismatch error).
Tensor tangent_of(PyTape& tape, const Tensor& primal, py::handle given, std::size_t i, const char* what) {
  const DType dtype = primal.dtype();
  const py::object array = py::module_::import("numpy").attr("asarray")(given);
  if (array.attr("dtype").attr("kind").cast<std::string>() == "c" && !is_complex(dtype)) {
    raise_error(ErrorCode::kDTypeMismatch, fmt::format("{}: expected a real tangent for primal {} ({}), found {}", what,
                                                       i, dtype, std::string(py::str(array.attr("dtype")))));
  }
  Tensor tangent = copied_leaf(*tape.runtime, array, dtype, "tangent");
  if (!std::ranges::equal(tangent.shape(), primal.shape())) {
    raise_error(ErrorCode::kShapeMismatch,
                fmt::format("{}: expected a tangent for primal {} of shape {}, found {}", what, i,
                            shape_tuple(primal.shape()), shape_tuple(tangent.shape())));
  }
  return tangent;
}

void check_per_variable(const py::sequence& variables, const py::sequence& given, const char* what) {
  if (py::len(given) != py::len(variables)) {
    raise_error(ErrorCode::kInvalidArgument, fmt::format("{}: expected one tangent per primal ({}), found {}", what,
                                                         py::len(variables), py::len(given)));
  }
}

const Tensor& variable_value(const py::sequence& variables, std::size_t i) {
  return py::cast<const PyTraced&>(variables[i]).value;
}

// One tensor per variable for jvp / hvp (None: zero).
std::vector<Tensor> per_variable(PyTape& tape, const py::sequence& variables, const py::sequence& given,
                                 const char* what) {
  check_per_variable(variables, given, what);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < py::len(given); ++i) {
    const py::handle t = given[i];
    out.push_back(t.is_none() ? Tensor() : tangent_of(tape, variable_value(variables, i), t, i, what));
  }
  return out;
}

// The same as tensors of the enclosing tape (Note [Nested Traced values]):
// a Traced value stands for itself, an array-like is a constant there.
std::vector<ad::TapeTensor> per_variable_onto(PyTape& tape, const py::sequence& variables, const py::sequence& given,
                                              const char* what) {
  check_per_variable(variables, given, what);
  PyTape& outer = *tape.parent;
  std::vector<ad::TapeTensor> out;
  for (std::size_t i = 0; i < py::len(given); ++i) {
    const py::handle t = given[i];
    if (t.is_none()) {
      out.emplace_back();
    } else if (py::isinstance<PyTraced>(t)) {
      out.push_back(handle_on(outer, py::cast<const PyTraced&>(t)));
    } else {
      out.push_back(value_or_raise(outer.tape.constant(tangent_of(tape, variable_value(variables, i), t, i, what))));
    }
  }
  return out;
}

// Tensors of the enclosing tape as a tuple of its Traced values.
py::tuple traced_tuple(const std::shared_ptr<PyTape>& tape, const std::vector<ad::TapeTensor>& handles) {
  py::tuple out(handles.size());
  for (std::size_t i = 0; i < handles.size(); ++i) out[i] = py::cast(record(tape, handles[i]));
  return out;
}

PyTape& nested(PyTape& tape, const char* what) {
  if (!tape.parent) raise_error(ErrorCode::kFailedPrecondition, fmt::format("{}: the tape is not nested", what));
  return *tape.parent;
}

// Note [Jit recordings]
// tenferro.jit (python/tenferro/__init__.py) runs a function once per
// argument signature on a tape marked `jit`, its array arguments leaves of
// any tenferro dtype, and keeps the recording as a program (Note [Recorded
// functions] in gradient_tape.h) that a PyFunction runs on the next calls.
// Two things differ from a recording for gradients:
// - comparisons are recorded (compare, giving Traced booleans that
//   np.where turns into a select) instead of computed on the values, since
//   a comparison's values would be constants of the program;
// - every read of a value (Traced.numpy(), and bool(), float(), .item()
//   built on it) marks the tape and the tapes it is nested in: a function
//   whose control flow or constants depend on a value read cannot be
//   replayed, and tenferro.jit runs that signature eagerly instead.

// The tenferro dtype an array of `descr` is recorded in as a jit argument
// (bool, int32, int64, float32, float64, complex64, complex128), or nullopt.
std::optional<DType> argument_dtype(const PyArray_Descr* descr) noexcept {
  switch (descr->kind) {
    case 'b':
      return DType::kBool;
    case 'i':
      if (descr->elsize == 4) return DType::kInt32;
      if (descr->elsize == 8) return DType::kInt64;
      return std::nullopt;
    case 'f':
    case 'c':
      return dtype_of_typenum(descr->type_num);
    default:
      return std::nullopt;
  }
}

// A copy of `obj` (an array of such a dtype) as a tape leaf.
Tensor argument_leaf(PyRuntime& runtime, py::handle obj, std::size_t index) {
  OperandList operands;
  operands.add(obj, "jit argument", static_cast<std::ptrdiff_t>(index), OperandList::Accept::kNumeric);
  const std::optional<DType> dtype =
      argument_dtype(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(operands.array(0).ptr())));
  if (!dtype) {
    raise_error(ErrorCode::kDTypeMismatch,
                fmt::format("jit argument {}: expected dtype bool, int32, int64, float32, float64, complex64 or "
                            "complex128, found {}",
                            index, std::string(py::str(operands.array(0).attr("dtype")))));
  }
  operands.cast(0, *dtype);
  operands.wrap();
  const Tensor& borrowed = operands.tensors()[0];
  return value_or_raise(runtime.with_context([&](runtime::EagerContext& ctx) { return ctx.copy(borrowed); }));
}

// An index guard (Note [Traced indices] in python/tenferro/_traced.py):
// the least and the greatest index of a traced index array into an axis of
// extent n, two int64 outputs of the program (one per example when batched).
struct IndexGuard {
  std::int64_t n = 0;
  std::int64_t axis = 0;
};

// A recording kept as a program (Note [Jit recordings]): its arguments'
// dtypes, the runtime it runs on, and its plan for the layouts of the
// first call's arguments, made by that call (with the GIL held).
struct PyFunction {
  py::object runtime_ref;
  PyRuntime* runtime;
  program::FrozenProgram program;
  std::vector<DType> dtypes;
  std::shared_ptr<const runtime::PreparedProgram> prepared;
  std::vector<runtime::LayoutClass> layouts;  // of every program input, as prepared
  std::vector<IndexGuard> guards;             // their outputs last, in pairs; checked, not returned
  std::vector<bool> varying;                  // a batched program's: which outputs depend on the batch
  double work = 0;  // elements of every value, inputs included (Note [Keeping the GIL for tiny calls])
};

// Elements (or bytes) of every value of `p`, inputs included.
double value_total(const program::SemanticProgram& p, bool bytes) {
  double total = 0;
  for (std::uint32_t v = 0; v < p.num_values(); ++v) {
    const program::ValueMetadata& m = p.metadata(program::ValueId(v));
    double n = bytes ? static_cast<double>(dtype_size(m.dtype)) : 1.0;
    for (const program::SymbolicExtent& e : m.shape) n *= static_cast<double>(e.exact_value().value_or(1));
    total += n;
  }
  return total;
}

// IndexError unless the guards' outputs lie in [-n, n) (the outputs of
// `f`, guards last).
void check_guards(const PyFunction& f, std::span<const Tensor> outputs) {
  std::size_t at = outputs.size() - 2 * f.guards.size();
  // The least or greatest element of a guard output: read in place when it
  // is dense (a reduction's result; no copy on a replay), else through a
  // copy (a batch's broadcast of an unbatched guard).
  const auto extreme = [](const Tensor& t, bool greatest) {
    std::vector<std::int64_t> copy;
    std::span<const std::int64_t> v;
    if (t.is_contiguous()) {
      v = std::span<const std::int64_t>(value_or_raise(t.typed_data<std::int64_t>()),
                                        static_cast<std::size_t>(t.numel()));
    } else {
      copy = value_or_raise(t.to_vector<std::int64_t>());
      v = copy;
    }
    return greatest ? *std::ranges::max_element(v) : *std::ranges::min_element(v);
  };
  for (const IndexGuard& g : f.guards) {
    const Tensor& lo = outputs[at++];
    const Tensor& hi = outputs[at++];
    if (lo.numel() == 0) continue;
    const std::int64_t least = extreme(lo, false);
    const std::int64_t greatest = extreme(hi, true);
    if (least < -g.n || greatest >= g.n) {
      const std::string message = fmt::format("index {} is out of bounds for axis {} with size {}",
                                              greatest >= g.n ? greatest : least, g.axis, g.n);
      PyErr_SetString(PyExc_IndexError, message.c_str());
      throw py::error_already_set();
    }
  }
}

// tenferro.vmap: `f` over a batch of `batch_size` (Note [Batching
// transform]), `batched` one flag per parameter of f.
std::shared_ptr<const program::SemanticProgram> batched_program(const program::FrozenProgram& f,
                                                                const py::sequence& batched, std::int64_t batch_size,
                                                                std::vector<bool>& varying) {
  const std::span<const std::uint32_t> parameters = f.bindings.parameters();
  SmallVector<bool, 8> flags(f.bindings.num_inputs(), false);
  std::size_t next = 0;
  for (py::handle b : batched) {
    if (next >= parameters.size()) break;
    flags[parameters[next++]] = py::cast<bool>(b);
  }
  return value_or_raise(
      compiler::batch_program(*f.program, std::span<const bool>(flags.data(), flags.size()), batch_size, &varying));
}

// Prepares f's program for `inputs` (every program input).
void prepare(PyFunction& f, std::span<const Tensor> inputs) {
  const runtime::InputSignature signature = runtime::InputSignature::of(inputs);
  if (f.runtime->from_before_fork()) ok_or_raise(f.runtime->fork_error());
  f.prepared = value_or_raise(f.runtime->runtime().prepare_for(f.program.program, signature));
  f.work = value_total(*f.program.program, /*bytes=*/false);
  f.layouts.clear();
  for (const runtime::InputDescriptor& d : signature.inputs()) f.layouts.push_back(d.layout);
}

// f(*args): the outputs as numpy arrays (0-d ones as numpy scalars, as
// numpy's reductions give them). Arguments with the recorded layouts run
// the plan made at recording (Runtime::run_prepared: no signature, no plan
// cache lookup); others go through Runtime::run, which prepares once per
// layout. Every output is an array of its own, as the recording's first
// call returned it: an output that shares memory with a program input (an
// argument the function returned, x.copy() or x.T of one, an array it
// closed over) or with an earlier output is copied, so that writing into a
// result can change neither the caller's arrays, nor the next call's
// constants, nor another result.
py::tuple call_function(PyFunction& f, std::span<PyObject* const> args) {
  if (args.size() != f.dtypes.size()) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("jit: the recording takes {} arrays, found {}", f.dtypes.size(), args.size()));
  }
  OperandList operands;
  for (std::size_t i = 0; i < args.size(); ++i) {
    operands.add(args[i], "jit argument", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
    operands.cast(i, f.dtypes[i]);
  }
  operands.wrap();
  const std::vector<Tensor> inputs = value_or_raise(
      f.program.bindings.assemble_inputs(std::span<const Tensor>(operands.tensors().data(), operands.size())));
  const std::span<const Tensor> all(inputs.data(), inputs.size());
  if (f.prepared == nullptr) prepare(f, all);
  const std::shared_ptr<const runtime::PreparedProgram> prepared = f.prepared;  // another thread may replace it
  bool as_prepared = true;
  for (std::size_t i = 0; i < inputs.size() && as_prepared; ++i) {
    as_prepared = runtime::layout_class_of(inputs[i]) == f.layouts[i];
  }
  if (f.runtime->from_before_fork()) ok_or_raise(f.runtime->fork_error());
  Result<runtime::TensorList> result = [&] {
    const ReleaseGilUnlessTiny nogil(f.work, f.runtime->gil_releases());
    if (as_prepared) {
      Result<runtime::TensorList> r = f.runtime->runtime().run_prepared(*prepared, all);
      // A reconfigured runtime (a new epoch): the plan cache prepares again.
      if (r.ok() || r.status().code() != ErrorCode::kStalePreparedGraph) return r;
    }
    return f.runtime->runtime().run(f.program.program, all);
  }();
  runtime::TensorList outputs = value_or_raise(std::move(result));
  check_guards(f, std::span<const Tensor>(outputs.data(), outputs.size()));
  const std::size_t returned = outputs.size() - 2 * f.guards.size();
  py::tuple out(returned);
  for (std::size_t k = 0; k < returned; ++k) {
    const auto* memory = outputs[k].storage().get();
    const auto shares = [&](const Tensor& other) { return other.storage().get() == memory; };
    if (std::ranges::any_of(inputs, shares) ||
        std::any_of(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(k), shares)) {
      outputs[k] =
          value_or_raise(f.runtime->with_context([&](runtime::EagerContext& ctx) { return ctx.copy(outputs[k]); }));
    }
    out[k] = tensor_to_result(outputs[k]);
  }
  return out;
}

// Note [Jit fast path]
// A call of a tenferro.jit function whose arguments, positional or
// keyword, are all numpy arrays (exactly ndarray) or plain values (a
// float, int, bool, str or None) of a signature recorded before is
// dispatched here without Python: the signatures of such calls (dtype and
// shape per array, each value itself -- floats by their bits, as
// Note [Jit signatures] keys them -- and the keywords' names in the
// caller's order) are compared in C++ with those of the recordings the
// Python layer registered (most recently used first), and a hit runs the
// recording's program on the arrays. Everything else -- other argument
// types, containers, static arguments, a miss, a call inside a running
// tenferro.grad or jit -- goes to the Python layer (tenferro/_jit.py),
// which records, runs eagerly or calls the function as it is.
struct JitSlot {
  py::object value;  // a value argument, keyed by itself; null for an array
  int typenum = 0;
  Dims shape;
};

struct JitEntry {
  std::vector<JitSlot> slots;        // one per argument: positional, then keyword values
  std::vector<py::object> keywords;  // the keyword arguments' names, in the caller's order
  std::shared_ptr<PyFunction> function;
  py::object rebuild;  // None: the program's one output is the result
};

bool is_plain_value(PyObject* v) {
  return PyFloat_CheckExact(v) || PyLong_CheckExact(v) || PyBool_Check(v) || v == Py_None || PyUnicode_CheckExact(v);
}

// `v` is the value `key` (the same type; a float's bits, as the Python
// layer keys floats: -0.0 is not 0.0).
bool same_value(PyObject* v, PyObject* key) {
  if (v == key) return true;
  if (Py_TYPE(v) != Py_TYPE(key)) return false;
  if (PyFloat_CheckExact(v)) {
    const double a = PyFloat_AS_DOUBLE(v);
    const double b = PyFloat_AS_DOUBLE(key);
    return std::memcmp(&a, &b, sizeof(double)) == 0;
  }
  if (PyLong_CheckExact(v)) return PyObject_RichCompareBool(v, key, Py_EQ) == 1;
  if (PyUnicode_CheckExact(v)) return PyUnicode_Compare(v, key) == 0;
  return false;  // bool and None: identity
}

struct PyJit {
  py::object slow;     // the Python layer's call
  py::object running;  // tenferro's thread-local stack of running tapes
  std::size_t capacity = 64;
  std::vector<JitEntry> entries;  // most recently used first (GIL held)
  std::uint64_t hits = 0;
};

// `args`: the positional arguments, then the keyword arguments' values
// (named `keys`, in the caller's order); the arrays among them go to
// `arrays`.
bool matches(const JitEntry& e, std::span<PyObject* const> args, std::span<PyObject* const> keys,
             SmallVector<PyObject*, 8>& arrays) {
  if (args.size() != e.slots.size() || keys.size() != e.keywords.size()) return false;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != e.keywords[i].ptr() && PyUnicode_Compare(keys[i], e.keywords[i].ptr()) != 0) return false;
  }
  arrays.clear();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const JitSlot& slot = e.slots[i];
    if (slot.value) {
      if (!same_value(args[i], slot.value.ptr())) return false;
      continue;
    }
    if (!PyArray_CheckExact(args[i])) return false;
    auto* a = reinterpret_cast<PyArrayObject*>(args[i]);
    if (PyArray_TYPE(a) != slot.typenum || PyArray_NDIM(a) != static_cast<int>(slot.shape.size())) return false;
    for (int d = 0; d < PyArray_NDIM(a); ++d) {
      if (PyArray_DIM(a, d) != slot.shape[static_cast<std::size_t>(d)]) return false;
    }
    arrays.push_back(args[i]);
  }
  return true;
}

bool tapes_running(const PyJit& jit) {
  PyObject* tapes = PyObject_GetAttrString(jit.running.ptr(), "tapes");
  if (tapes == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool running = PyObject_IsTrue(tapes) == 1;
  Py_DECREF(tapes);
  return running;
}

// The garbage collector's view of a _Jit (its C++ members hold Python
// objects: the Python layer's closure refers back to the _Jit, a cycle
// through C++ that pybind's own traversal, of the instance dict only,
// does not see).
// The PyJit of a _Jit, or null while its C++ object is not constructed
// (an allocation in __init__ may run the collector over it).
PyJit* constructed_jit(PyObject* self) {
  py::detail::value_and_holder v = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder();
  return v.holder_constructed() ? v.value_ptr<PyJit>() : nullptr;
}

int jit_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_VISIT(*dict);
  if (const PyJit* jit = constructed_jit(self)) {
    Py_VISIT(jit->slow.ptr());
    Py_VISIT(jit->running.ptr());
    for (const JitEntry& e : jit->entries) Py_VISIT(e.rebuild.ptr());
  }
  return 0;
}

int jit_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  if (PyJit* jit = constructed_jit(self)) {
    // Moved out first: releasing them may run code that looks at this object.
    std::vector<JitEntry> entries = std::move(jit->entries);
    jit->entries.clear();
    py::object slow = std::move(jit->slow);
    py::object running = std::move(jit->running);
    jit->slow = py::none();
    jit->running = py::none();
  }
  return 0;
}

// pybind11's dealloc (2.10) does not untrack a collected instance: a
// collection run by code in the destructor (a __del__ of what the function
// closed over) would find the dying _Jit and free it a second time. The
// type's own dealloc untracks it first, then runs the base's.
void jit_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  Py_TYPE(self)->tp_base->tp_dealloc(self);  // _Jit has no subclasses
}

PyObject* jit_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return python_entry([&]() -> py::object {
    PyJit& jit = py::cast<PyJit&>(py::handle(self));
    const std::span<PyObject* const> positional(&PyTuple_GET_ITEM(args, 0),
                                                static_cast<std::size_t>(PyTuple_GET_SIZE(args)));
    SmallVector<PyObject*, 8> all;  // positional, then keyword values
    SmallVector<PyObject*, 4> keys;
    std::span<PyObject* const> given = positional;
    if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) > 0) {
      for (PyObject* a : positional) all.push_back(a);
      Py_ssize_t pos = 0;
      PyObject* key = nullptr;
      PyObject* value = nullptr;
      while (PyDict_Next(kwargs, &pos, &key, &value)) {  // insertion order: the caller's
        keys.push_back(key);
        all.push_back(value);
      }
      given = std::span<PyObject* const>(all.data(), all.size());
    }
    if (!jit.entries.empty() && !tapes_running(jit)) {
      const std::span<PyObject* const> names(keys.data(), keys.size());
      SmallVector<PyObject*, 8> arrays;
      for (std::size_t k = 0; k < jit.entries.size(); ++k) {
        if (!matches(jit.entries[k], given, names, arrays)) continue;
        if (k > 0)
          std::rotate(jit.entries.begin(), jit.entries.begin() + static_cast<std::ptrdiff_t>(k),
                      jit.entries.begin() + static_cast<std::ptrdiff_t>(k) + 1);
        const JitEntry entry = jit.entries[0];  // kept alive through the call
        ++jit.hits;
        py::tuple out = call_function(*entry.function, std::span<PyObject* const>(arrays.data(), arrays.size()));
        if (entry.rebuild.is_none()) return out[0];
        return entry.rebuild(out);
      }
    }
    PyObject* r = PyObject_Call(jit.slow.ptr(), args, kwargs);
    if (r == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
  });
}

}  // namespace

void register_tape(py::module_& m) {
  m.def(
      "_traced_op",
      [](const std::string& name, const py::sequence& args) {
        return traced_core(name, args, program::NoAttributes{});
      },
      py::arg("name"), py::arg("args"));
  m.def("_traced_transpose", [](const PyTraced& x, const py::sequence& perm) {
    return traced_core("transpose", py::make_tuple(x), program::TransposeAttributes{dims_of(perm)});
  });
  m.def("_traced_reshape", [](const PyTraced& x, const py::sequence& shape) {
    return traced_core("reshape", py::make_tuple(x), program::ReshapeAttributes{shape_of(shape)});
  });
  m.def("_traced_broadcast_in_dim", [](const PyTraced& x, const py::sequence& shape, const py::sequence& dims) {
    return traced_core("broadcast_in_dim", py::make_tuple(x),
                       program::BroadcastInDimAttributes{shape_of(shape), dims_of(dims)});
  });
  m.def("_traced_reduce", [](const std::string& name, const PyTraced& x, const py::sequence& axes) {
    return traced_core(name, py::make_tuple(x), program::ReduceAttributes{dims_of(axes)});
  });
  m.def("_traced_concatenate", [](const py::sequence& args, std::int64_t axis) {
    return traced_core("concatenate", args, program::ConcatenateAttributes{axis});
  });
  m.def("_traced_take", [](const PyTraced& x, const py::object& indices, std::int64_t axis) {
    return traced_core("gather", py::make_tuple(x, indices),
                       program::take_attributes(program::symbolic_shape(x.value.shape()),
                                                py::cast<std::int64_t>(indices.attr("ndim")), axis));
  });
  m.def("_traced_cumsum", [](const PyTraced& x, std::int64_t axis) {
    return traced_core("cumsum", py::make_tuple(x), program::CumulativeAttributes{axis, false, false});
  });
  m.def("_traced_cumprod", [](const PyTraced& x, std::int64_t axis) {
    return traced_core("cumprod", py::make_tuple(x), program::CumulativeAttributes{axis, false, false});
  });
  m.def("_traced_sort", [](const PyTraced& x, std::int64_t axis) {
    return traced_core("sort", py::make_tuple(x), program::SortAttributes{axis, false});
  });
  m.def("_traced_pad", [](const PyTraced& x, py::handle value, const py::sequence& low, const py::sequence& high) {
    Dims interior(static_cast<std::size_t>(x.value.rank()), 0);
    return traced_core("pad", py::make_tuple(x, value),
                       program::PadAttributes{dims_of(low), dims_of(high), std::move(interior)});
  });
  m.def("_traced_slice",
        [](const PyTraced& x, const py::sequence& start, const py::sequence& limit, const py::sequence& stride) {
          return traced_core("slice", py::make_tuple(x),
                             program::SliceAttributes{dims_of(start), dims_of(limit), dims_of(stride)});
        });
  m.def("_traced_reverse", [](const PyTraced& x, const py::sequence& axes) {
    return traced_core("reverse", py::make_tuple(x), program::ReverseAttributes{dims_of(axes)});
  });
  m.def("_traced_convert", [](const PyTraced& x, const std::string& dtype) {
    const std::optional<DType> d = parse_dtype(dtype);
    if (!d) raise_error(ErrorCode::kDTypeMismatch, fmt::format("Traced.astype: unsupported dtype '{}'", dtype));
    return traced_core("convert", py::make_tuple(x), program::ConvertAttributes{*d});
  });

  m.def("_traced_compare", [](const std::string& direction, const py::sequence& args) {
    static constexpr std::pair<std::string_view, program::ComparisonDirection> kDirections[] = {
        {"eq", program::ComparisonDirection::kEq}, {"ne", program::ComparisonDirection::kNe},
        {"lt", program::ComparisonDirection::kLt}, {"le", program::ComparisonDirection::kLe},
        {"gt", program::ComparisonDirection::kGt}, {"ge", program::ComparisonDirection::kGe}};
    for (const auto& [name, d] : kDirections) {
      if (name == direction) return traced_core("compare", args, program::CompareAttributes{d});
    }
    raise_error(ErrorCode::kInvalidArgument, fmt::format("compare: no direction '{}'", direction));
  });
  py::class_<PyFunction, std::shared_ptr<PyFunction>>(m, "_Function", "A tenferro.jit or vmap recording.")
      .def("__call__",
           [](PyFunction& f, const py::args& args) {
             return call_function(f, std::span<PyObject* const>(&PyTuple_GET_ITEM(args.ptr(), 0),
                                                                static_cast<std::size_t>(py::len(args))));
           })
      .def_property_readonly(
          "varying", [](const PyFunction& f) { return py::cast(f.varying); },
          "A batched program's outputs: whether each depends on the batch (Note [Batching transform]).")
      .def_property_readonly(
          "value_bytes",
          [](const PyFunction& f) {
            // Bytes of every value of the program (inputs included): what
            // one run may hold at most, for tenferro.vmap's chunks.
            return value_total(*f.program.program, /*bytes=*/true);
          },
          "Bytes of every value of the program.");
  // tp_call is set before the type is readied (as for _Contraction), so
  // that a call reaches jit_call without pybind's dispatch.
  py::class_<PyJit>(m, "_Jit", "A tenferro.jit function (Note [Jit fast path]).", py::dynamic_attr(),
                    py::custom_type_setup([](PyHeapTypeObject* heap) {
                      heap->ht_type.tp_call = &jit_call;
                      heap->ht_type.tp_flags |= Py_TPFLAGS_HAVE_GC;
                      heap->ht_type.tp_traverse = &jit_traverse;
                      heap->ht_type.tp_clear = &jit_clear;
                      heap->ht_type.tp_dealloc = &jit_dealloc;
                    }))
      .def(py::init([](py::object slow, py::object running, std::size_t capacity) {
        auto j = std::make_unique<PyJit>();
        j->slow = std::move(slow);
        j->running = std::move(running);
        j->capacity = std::max<std::size_t>(capacity, 1);
        return j;
      }))
      .def("_add",
           [](PyJit& jit, const py::sequence& arguments, std::shared_ptr<PyFunction> function, py::object rebuild,
              const py::sequence& keywords) {
             // `arguments`: positional, then the keyword values (named `keywords`).
             JitEntry e{{}, {}, std::move(function), std::move(rebuild)};
             for (py::handle k : keywords) e.keywords.push_back(py::reinterpret_borrow<py::object>(k));
             for (py::handle a : arguments) {
               JitSlot slot;
               if (PyArray_CheckExact(a.ptr())) {
                 auto* arr = reinterpret_cast<PyArrayObject*>(a.ptr());
                 slot.typenum = PyArray_TYPE(arr);
                 slot.shape = Dims(PyArray_DIMS(arr), PyArray_DIMS(arr) + PyArray_NDIM(arr));
               } else if (is_plain_value(a.ptr())) {
                 slot.value = py::reinterpret_borrow<py::object>(a);
               } else {
                 return;  // numpy scalars, subclasses, containers: the Python layer
               }
               e.slots.push_back(std::move(slot));
             }
             jit.entries.insert(jit.entries.begin(), std::move(e));
             if (jit.entries.size() > jit.capacity) jit.entries.pop_back();
           })
      .def("_clear", [](PyJit& jit) { jit.entries.clear(); })
      .def("_remove",
           [](PyJit& jit, const std::shared_ptr<PyFunction>& function) {
             std::erase_if(jit.entries, [&](const JitEntry& e) { return e.function == function; });
           })
      .def_property_readonly("_hits", [](const PyJit& jit) { return jit.hits; })
      .def("__get__", [](py::object self, py::object instance, py::object) -> py::object {
        if (instance.is_none()) return self;  // a method: bound as a function would be
        return py::module_::import("types").attr("MethodType")(self, instance);
      });
  m.def("_traced_fft", &traced_fft, py::arg("kind"), py::arg("x"), py::arg("s") = py::none(),
        py::arg("axes") = py::none(), py::arg("norm") = "backward");
  m.def("_traced_linalg", &traced_linalg, py::arg("name"), py::arg("args"), py::arg("mode") = "",
        py::arg("flag") = true, py::arg("rcond") = -1.0);
  py::class_<PyTape, std::shared_ptr<PyTape>>(m, "_Tape", py::dynamic_attr())  // guards: Note [Traced indices]
      .def("variable",
           [](const std::shared_ptr<PyTape>& tape, py::handle value) {
             if (py::isinstance<PyTraced>(value)) {  // Note [Nested Traced values]
               PyTape& outer = nested(*tape, "variable");
               const ad::TapeTensor h = handle_on(outer, py::cast<const PyTraced&>(value));
               return record(tape, tape->tape.variable(outer.tape, h));
             }
             Tensor leaf = copied_leaf(*tape->runtime, value, std::nullopt, "variable");
             return record(tape, tape->tape.variable(leaf));
           })
      .def_property_readonly("nested", [](const PyTape& tape) { return tape.parent != nullptr; })
      .def("close", [](PyTape& tape) { tape.tape.close(); })
      .def_property_readonly("closed", [](const PyTape& tape) { return tape.tape.closed(); })
      .def_property(
          "jit", [](const PyTape& tape) { return tape.jit; }, [](PyTape& tape, bool jit) { tape.jit = jit; })
      .def_property_readonly("value_read", [](const PyTape& tape) { return tape.value_read; })
      .def_property_readonly("value_escaped", [](const PyTape& tape) { return tape.value_escaped; })
      .def("argument",
           [](const std::shared_ptr<PyTape>& tape, py::handle value, std::size_t index) {
             return record(tape, tape->tape.constant(argument_leaf(*tape->runtime, value, index)));
           })
      .def(
          "function",
          [](const std::shared_ptr<PyTape>& tape, const py::sequence& arguments, const py::sequence& outputs,
             py::object batched, std::int64_t batch_size, const py::sequence& guards) {
            std::vector<ad::TapeTensor> args, outs;
            auto f = std::make_shared<PyFunction>();
            for (py::handle g : guards) {  // (n, axis): their outputs last
              const auto [n, axis] = py::cast<std::pair<std::int64_t, std::int64_t>>(g);
              f->guards.push_back(IndexGuard{n, axis});
            }
            if (2 * f->guards.size() > py::len(outputs))
              raise_error(ErrorCode::kInvalidArgument, "function: two outputs per index guard expected last");
            for (py::handle a : arguments) {
              const PyTraced& t = py::cast<const PyTraced&>(a);
              args.push_back(t.handle);
              f->dtypes.push_back(t.value.dtype());
            }
            for (py::handle o : outputs) outs.push_back(handle_on(*tape, py::cast<const PyTraced&>(o)));
            f->program = value_or_raise(tape->tape.function(args, outs));
            f->runtime_ref = tape->runtime_ref;
            f->runtime = tape->runtime;
            if (!batched.is_none()) {
              f->program.program = batched_program(f->program, py::cast<py::sequence>(batched), batch_size, f->varying);
            }
            return f;
          },
          py::arg("arguments"), py::arg("outputs"), py::arg("batched") = py::none(), py::arg("batch_size") = 0,
          py::arg("guards") = py::tuple())
      .def(
          "apply_batched",
          [](const std::shared_ptr<PyTape>& tape, const py::sequence& arguments, const py::sequence& values,
             const py::sequence& outputs, const py::sequence& batched, std::int64_t batch_size) {
            // tenferro.vmap inside a running call (Note [Vmap calls]): the
            // batched program of this (nested) recording, applied on the
            // enclosing tape to the whole batch.
            PyTape& outer = nested(*tape, "apply_batched");
            std::vector<ad::TapeTensor> args, outs, on_outer;
            for (py::handle a : arguments) args.push_back(py::cast<const PyTraced&>(a).handle);
            for (py::handle o : outputs) outs.push_back(handle_on(*tape, py::cast<const PyTraced&>(o)));
            std::size_t index = 0;
            for (py::handle v : values) {
              on_outer.push_back(py::isinstance<PyTraced>(v)
                                     ? handle_on(outer, py::cast<const PyTraced&>(v))
                                     : value_or_raise(outer.tape.constant(argument_leaf(*tape->runtime, v, index))));
              ++index;
            }
            std::vector<bool> varying;
            const std::shared_ptr<const program::SemanticProgram> program =
                batched_program(value_or_raise(tape->tape.function(args, outs)), batched, batch_size, varying);
            return py::make_tuple(
                traced_tuple(tape->parent, value_or_raise(tape->tape.apply_onto(outer.tape, *program, args, on_outer))),
                py::cast(varying));
          })
      .def("requires_grad",
           [](const std::shared_ptr<PyTape>& tape, const PyTraced& value) {
             return value.tape == tape && value_or_raise(tape->tape.requires_grad(value.handle));
           })
      .def("constant",
           [](const std::shared_ptr<PyTape>& tape, py::handle value) {
             return record(tape, tape->tape.constant(copied_leaf(*tape->runtime, value, std::nullopt, "output")));
           })
      .def("value_onto",
           [](const std::shared_ptr<PyTape>& tape, const PyTraced& output) {
             PyTape& outer = nested(*tape, "value_onto");
             return record(tape->parent, tape->tape.value_onto(outer.tape, handle_on(*tape, output)));
           })
      .def(
          "vjp_onto",
          [](const std::shared_ptr<PyTape>& tape, const PyTraced& output, py::handle cotangent) {
            PyTape& outer = nested(*tape, "vjp_onto");
            ad::TapeTensor ct;
            if (cotangent.is_none()) {  // grad: the seed 1
              const py::object one = py::module_::import("numpy").attr("ones")(py::tuple());
              ct = value_or_raise(outer.tape.constant(copied_leaf(*tape->runtime, one, output.value.dtype(), "seed")));
            } else if (py::isinstance<PyTraced>(cotangent)) {
              ct = handle_on(outer, py::cast<const PyTraced&>(cotangent));
            } else {
              ct = value_or_raise(
                  outer.tape.constant(copied_leaf(*tape->runtime, cotangent, output.value.dtype(), "cotangent")));
            }
            return traced_tuple(tape->parent,
                                value_or_raise(tape->tape.vjp_onto(outer.tape, handle_on(*tape, output), ct)));
          },
          py::arg("output"), py::arg("cotangent") = py::none())
      .def("jvp_onto",
           [](const std::shared_ptr<PyTape>& tape, const PyTraced& output, const py::sequence& variables,
              const py::sequence& tangents) {
             PyTape& outer = nested(*tape, "jvp_onto");
             const std::vector<ad::TapeTensor> t = per_variable_onto(*tape, variables, tangents, "jvp");
             return traced_tuple(tape->parent,
                                 value_or_raise(tape->tape.jvp_onto(outer.tape, handle_on(*tape, output), t)));
           })
      .def("hvp_onto",
           [](const std::shared_ptr<PyTape>& tape, const PyTraced& output, const py::sequence& variables,
              const py::sequence& vectors) {
             PyTape& outer = nested(*tape, "hvp_onto");
             const std::vector<ad::TapeTensor> v = per_variable_onto(*tape, variables, vectors, "hvp");
             return traced_tuple(tape->parent,
                                 value_or_raise(tape->tape.hvp_onto(outer.tape, handle_on(*tape, output), v)));
           })
      .def(
          "backward",
          [](PyTape& tape, const PyTraced& loss, py::handle cotangent) {
            if (loss.tape.get() != &tape)
              raise_error(ErrorCode::kForeignValue,
                          "fun returned a Traced value of another tape (one traced by a tenferro.grad / vjp call "
                          "inside fun, or by another call)");
            if (cotangent.is_none()) return ok_or_raise(tape.tape.backward(loss.handle));
            // vjp: the cotangent seeds the output itself (nothing recorded).
            const Tensor ct = copied_leaf(*tape.runtime, cotangent, loss.value.dtype(), "cotangent");
            ok_or_raise(tape.tape.backward(loss.handle, ct));
          },
          py::arg("loss"), py::arg("cotangent") = py::none())
      .def("grad",
           [](PyTape& tape, const PyTraced& variable) {
             return tensor_to_numpy(value_or_raise(tape.tape.grad(variable.handle)));
           })
      .def("zero_grad", [](PyTape& tape) { tape.tape.zero_grad(); })
      .def("jvp",
           [](PyTape& tape, const PyTraced& output, const py::sequence& variables, const py::sequence& tangents) {
             return tensor_to_numpy(
                 value_or_raise(tape.tape.jvp(output.handle, per_variable(tape, variables, tangents, "jvp"))));
           })
      .def("hvp", [](PyTape& tape, const PyTraced& output, const py::sequence& variables, const py::sequence& vectors) {
        std::vector<Tensor> hv =
            value_or_raise(tape.tape.hvp(output.handle, per_variable(tape, variables, vectors, "hvp")));
        py::tuple out(hv.size());
        for (std::size_t i = 0; i < hv.size(); ++i) out[i] = tensor_to_numpy(std::move(hv[i]));
        return out;
      });

  py::class_<PyTraced>(m, "Traced", "A value recorded by tenferro.vjp / tenferro.grad (docs/python.md).")
      .def_property_readonly("shape",
                             [](const PyTraced& t) {
                               py::tuple s(t.value.rank());
                               for (std::int64_t i = 0; i < t.value.rank(); ++i) {
                                 s[static_cast<std::size_t>(i)] = t.value.shape()[static_cast<std::size_t>(i)];
                               }
                               return s;
                             })
      .def_property_readonly("ndim", [](const PyTraced& t) { return t.value.rank(); })
      .def_property_readonly("dtype", [](const PyTraced& t) { return numpy_dtype(t.value.dtype()); })
      .def(
          "numpy",
          [](const PyTraced& t) {
            const bool inexact = is_inexact(t.value.dtype());
            for (PyTape* p = t.tape.get(); p != nullptr; p = p->parent.get()) {
              p->value_read = true;
              p->value_escaped = p->value_escaped || inexact;
            }
            return tensor_to_numpy(t.value).attr("copy")();
          },
          "A copy of the eager value.")
      .def(
          "_read",
          [](const PyTraced& t) {
            for (PyTape* p = t.tape.get(); p != nullptr; p = p->parent.get()) p->value_read = true;
            return tensor_to_numpy(t.value).attr("copy")();
          },
          "A copy of the eager value for control flow (bool()): a read, not a value taken off the tape.")
      .def(
          "_peek", [](const PyTraced& t) { return tensor_to_numpy(t.value).attr("copy")(); },
          "A copy of the eager value that is not a read (tenferro.vmap's example inside a recording).")
      .def_property_readonly("_tape", [](const PyTraced& t) { return t.tape; })
      .def_property_readonly("_jit",
                             [](const PyTraced& t) {
                               for (const PyTape* p = t.tape.get(); p != nullptr; p = p->parent.get()) {
                                 if (p->jit) return true;
                               }
                               return false;
                             })
      // Note [Traced fast paths]; the rest of the protocol is installed by
      // python/tenferro/_traced.py.
      .def("__add__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kAdd, a, b); })
      .def("__radd__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kAdd, b, a); })
      .def("__sub__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kSub, a, b); })
      .def("__rsub__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kSub, b, a); })
      .def("__mul__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kMul, a, b); })
      .def("__rmul__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kMul, b, a); })
      .def("__truediv__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kDiv, a, b); })
      .def("__rtruediv__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kDiv, b, a); })
      .def("__mod__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kRemainder, a, b); })
      .def("__rmod__", [](py::handle a, py::handle b) { return traced_binary(CoreSemanticOp::kRemainder, b, a); })
      .def("__pow__", &traced_power)
      .def("__matmul__", &traced_matmul)
      .def("__rmatmul__", [](py::handle a, py::handle b) { return traced_matmul(b, a); })
      .def("__neg__", [](const PyTraced& x) { return traced_unary(CoreSemanticOp::kNeg, x); })
      .def("__abs__", [](const PyTraced& x) { return traced_unary(CoreSemanticOp::kAbs, x); })
      .def("sum",
           [](py::handle self, py::args args, py::kwargs kwargs) {
             const PyTraced& x = py::cast<const PyTraced&>(self);
             if (args.empty() && kwargs.empty() && is_inexact(x.value.dtype())) return traced_sum_all(x, self);
             return general_rule("_sum")(self, *args, **kwargs);
           })
      .def("mean",
           [](py::handle self, py::args args, py::kwargs kwargs) {
             const PyTraced& x = py::cast<const PyTraced&>(self);
             if (!args.empty() || !kwargs.empty() || !is_inexact(x.value.dtype())) {
               return general_rule("_mean")(self, *args, **kwargs);
             }
             return traced_binary(CoreSemanticOp::kDiv, traced_sum_all(x, self),
                                  py::float_(static_cast<double>(x.value.numel())));
           })
      .def("__array_ufunc__",
           [](py::handle self, py::handle ufunc, py::handle method, py::args inputs, py::kwargs kwargs) -> py::object {
             // Traced._fast_ufuncs: ufunc -> core op (_traced.py); np.square is
             // mul with one input (x * x), np.matmul is -1.
             if (kwargs.empty() && PyUnicode_Check(method.ptr()) &&
                 PyUnicode_CompareWithASCIIString(method.ptr(), "__call__") == 0) {
               const py::object table = py::type::handle_of(self).attr("_fast_ufuncs");
               if (PyObject* code = PyDict_GetItemWithError(table.ptr(), ufunc.ptr())) {
                 const long value = PyLong_AsLong(code);
                 if (value == kMatmulUfunc) {
                   if (inputs.size() == 2) return traced_matmul(inputs[0], inputs[1]);
                 } else if (inputs.size() == 2) {
                   return traced_binary(static_cast<CoreSemanticOp>(value), inputs[0], inputs[1]);
                 } else if (const PyTraced* x = inputs.size() == 1 ? traced_or_null(inputs[0]) : nullptr) {
                   const auto op = static_cast<CoreSemanticOp>(value);
                   return op == CoreSemanticOp::kMul ? record_core(*x, op, {x->handle, x->handle})
                                                     : traced_unary(op, *x);
                 }
               } else if (PyErr_Occurred()) {
                 throw py::error_already_set();
               }
             }
             return general_rule("_array_ufunc")(self, ufunc, method, *inputs, **kwargs);
           });
  // A tape for the primals of a tenferro.grad / vjp / jvp / hvp call:
  // nested in the innermost of the running tape and the tapes of its
  // Traced primals, if any (Note [Nested Traced values]).
  m.def("_tape_for", [](py::object runtime, const py::sequence& primals, std::shared_ptr<PyTape> running) {
    if (!py::isinstance<PyRuntime>(runtime)) raise_error(ErrorCode::kInvalidArgument, "_Tape: expected a Runtime");
    std::shared_ptr<PyTape> parent = std::move(running);
    for (py::handle p : primals) {
      if (py::isinstance<PyTraced>(p)) parent = innermost(parent, py::cast<const PyTraced&>(p).tape, "grad");
    }
    return std::make_shared<PyTape>(std::move(runtime), std::move(parent));
  });
  m.def("_core_op_code", [](const std::string& name) {
    const std::optional<CoreSemanticOp> op = program::parse_core_op(name);
    if (!op) raise_error(ErrorCode::kInvalidArgument, fmt::format("no core operation named '{}'", name));
    return static_cast<int>(*op);
  });
}

}  // namespace tenferro::python
