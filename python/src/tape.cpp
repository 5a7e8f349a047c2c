// Traced values and tapes for tenferro.vjp / tenferro.grad (tape.h).
#include "tape.h"

#include <cstring>

#include <fmt/format.h>

#include "array_bridge.h"
#include "numpy_api.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/linalg/linalg_op.h"

namespace tenferro::python {
namespace {

using program::CoreSemanticOp;

// A dense copy of `obj` (an array-like) as a tenferro tensor of `dtype`
// (Note [Traced values]: tape leaves never borrow Python memory).
Tensor copied_leaf(PyRuntime& runtime, py::handle obj, std::optional<DType> dtype, const char* what) {
  OperandList operands;
  operands.add(obj, what);
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

}  // namespace

bool any_traced(std::span<PyObject* const> args, std::size_t first) {
  for (std::size_t i = first; i < args.size(); ++i) {
    if (!PyArray_Check(args[i]) && py::isinstance<PyTraced>(py::handle(args[i]))) return true;
  }
  return false;
}

py::object traced_einsum(std::span<PyObject* const> args, const std::shared_ptr<const einsum::EinsumOp>& op) {
  std::shared_ptr<PyTape> tape;
  std::optional<DType> dtype;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!py::isinstance<PyTraced>(py::handle(args[i]))) continue;
    const PyTraced& t = py::cast<const PyTraced&>(py::handle(args[i]));
    if (tape && t.tape != tape) raise_error(ErrorCode::kForeignValue, "einsum: Traced operands of two different tapes");
    if (dtype && *dtype != t.value.dtype()) {
      raise_error(
          ErrorCode::kDTypeMismatch,
          fmt::format("einsum: Traced operands of dtypes {} and {}; expected one dtype", *dtype, t.value.dtype()));
    }
    tape = t.tape;
    dtype = t.value.dtype();
  }
  if (static_cast<std::size_t>(op->num_operands()) != args.size() - 1) {
    raise_error(ErrorCode::kInvalidArgument,
                fmt::format("einsum '{}': the subscripts name {} operands, found {}", op->canonical_subscripts(),
                            op->num_operands(), args.size() - 1));
  }
  SmallVector<ad::TapeTensor, 8> handles;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (py::isinstance<PyTraced>(py::handle(args[i]))) {
      handles.push_back(py::cast<const PyTraced&>(py::handle(args[i])).handle);
    } else {
      Tensor leaf = copied_leaf(*tape->runtime, args[i], dtype, "einsum operand");
      handles.push_back(value_or_raise(tape->tape.constant(leaf)));
    }
  }
  SmallVector<ad::TapeTensor, 2> out =
      value_or_raise(tape->tape.apply(op, std::span<const ad::TapeTensor>(handles.data(), handles.size())));
  return py::cast(record(tape, out[0]));
}

py::tuple traced_linalg(const std::string& name, const py::list& args, const std::string& mode, bool flag,
                        double rcond) {
  std::shared_ptr<const linalg::LinalgOp> op;
  if (name == "svd") {
    op = linalg::LinalgOp::svd(mode == "full"     ? linalg::SvdMode::kFull
                               : mode == "values" ? linalg::SvdMode::kValuesOnly
                                                  : linalg::SvdMode::kThin);
  } else if (name == "qr") {
    op = linalg::LinalgOp::qr(mode == "complete" ? linalg::QrMode::kComplete : linalg::QrMode::kReduced);
  } else if (name == "eigh") {
    op = linalg::LinalgOp::eigh(flag);
  } else if (name == "eig") {
    op = linalg::LinalgOp::eig(flag);
  } else if (name == "cholesky") {
    op = linalg::LinalgOp::cholesky();
  } else if (name == "solve") {
    op = linalg::LinalgOp::solve();
  } else if (name == "inv") {
    op = linalg::LinalgOp::inv();
  } else if (name == "det") {
    op = linalg::LinalgOp::det();
  } else if (name == "slogdet") {
    op = linalg::LinalgOp::slogdet();
  } else if (name == "pinv") {
    op = linalg::LinalgOp::pinv(rcond);
  } else if (name == "matrix_norm") {
    op = value_or_raise(linalg::LinalgOp::matrix_norm(value_or_raise(norm_order_of(mode))));
  } else if (name == "vector_norm") {
    op = value_or_raise(linalg::LinalgOp::vector_norm(value_or_raise(norm_order_of(mode)), rcond));  // rcond carries p
  } else {
    raise_error(ErrorCode::kUnimplemented, fmt::format("linalg.{} is not recorded inside tenferro.vjp / grad", name));
  }
  std::shared_ptr<PyTape> tape;
  DType dtype = DType::kFloat64;
  for (py::handle a : args) {
    if (!py::isinstance<PyTraced>(a)) continue;
    const PyTraced& t = py::cast<const PyTraced&>(a);
    if (tape && t.tape != tape) raise_error(ErrorCode::kForeignValue, "linalg: Traced operands of two different tapes");
    tape = t.tape;
    dtype = t.value.dtype();
  }
  if (!tape) raise_error(ErrorCode::kInvalidArgument, fmt::format("linalg.{}: no Traced operand", name));
  SmallVector<ad::TapeTensor, 8> handles;
  for (py::handle a : args) {
    if (py::isinstance<PyTraced>(a)) {
      handles.push_back(py::cast<const PyTraced&>(a).handle);
    } else {
      Tensor leaf = copied_leaf(*tape->runtime, a, dtype, "linalg operand");
      handles.push_back(value_or_raise(tape->tape.constant(leaf)));
    }
  }
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

// The dtype of a numpy bool or int64 array (a select's predicate, a
// gather's indices): the array bridge takes the inexact dtypes only.
std::optional<DType> exact_dtype_of(py::handle a) {
  if (!PyArray_Check(a.ptr())) return std::nullopt;
  switch (PyArray_TYPE(reinterpret_cast<PyArrayObject*>(a.ptr()))) {
    case NPY_BOOL:
      return DType::kBool;
    case NPY_INT64:
      return DType::kInt64;
    default:
      return std::nullopt;
  }
}

// Such an array as a tensor of `dtype` (a dense copy).
Tensor exact_leaf(py::handle a, DType dtype) {
  py::object dense = py::module_::import("numpy").attr("ascontiguousarray")(a);
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
  const PyTraced* first = nullptr;
  for (py::handle a : args) {
    if (!py::isinstance<PyTraced>(a)) continue;
    const PyTraced& t = py::cast<const PyTraced&>(a);
    if (first && t.tape != first->tape)
      raise_error(ErrorCode::kForeignValue, fmt::format("{}: Traced values of two tapes", name));
    if (!first) first = &t;
  }
  if (!first) raise_error(ErrorCode::kInvalidArgument, fmt::format("{}: no Traced operand", name));
  SmallVector<ad::TapeTensor, 4> handles;
  for (py::handle a : args) {
    if (py::isinstance<PyTraced>(a)) {
      handles.push_back(py::cast<const PyTraced&>(a).handle);
    } else {
      const std::optional<DType> exact = exact_dtype_of(a);
      Tensor leaf = exact ? exact_leaf(a, *exact) : copied_leaf(*first->tape->runtime, a, std::nullopt, name.c_str());
      handles.push_back(value_or_raise(first->tape->tape.constant(leaf)));
    }
  }
  return py::cast(
      record(first->tape, first->tape->tape.apply(*op, std::span<const ad::TapeTensor>(handles.data(), handles.size()),
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
    program::SymbolicShape shape;
    for (std::int64_t d : x.value.shape()) shape.push_back(program::SymbolicExtent(d));
    return traced_core("gather", py::make_tuple(x, indices),
                       program::take_attributes(shape, py::cast<std::int64_t>(indices.attr("ndim")), axis));
  });
  m.def("_traced_cumsum", [](const PyTraced& x, std::int64_t axis) {
    return traced_core("cumsum", py::make_tuple(x), program::CumulativeAttributes{axis, false, false});
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

  m.def("_traced_fft", &traced_fft, py::arg("kind"), py::arg("x"), py::arg("s") = py::none(),
        py::arg("axes") = py::none(), py::arg("norm") = "backward");
  m.def("_traced_linalg", &traced_linalg, py::arg("name"), py::arg("args"), py::arg("mode") = "",
        py::arg("flag") = true, py::arg("rcond") = -1.0);
  py::class_<PyTape, std::shared_ptr<PyTape>>(m, "_Tape")
      .def(py::init([](py::object runtime) {
        if (!py::isinstance<PyRuntime>(runtime)) raise_error(ErrorCode::kInvalidArgument, "_Tape: expected a Runtime");
        return std::make_shared<PyTape>(std::move(runtime));
      }))
      .def("variable",
           [](const std::shared_ptr<PyTape>& tape, py::handle value) {
             Tensor leaf = copied_leaf(*tape->runtime, value, std::nullopt, "variable");
             return record(tape, tape->tape.variable(leaf));
           })
      .def("backward",
           [](PyTape& tape, const PyTraced& loss) {
             if (loss.tape.get() != &tape) raise_error(ErrorCode::kForeignValue, "backward: a value of another tape");
             ok_or_raise(tape.tape.backward(loss.handle));
           })
      .def("grad",
           [](PyTape& tape, const PyTraced& variable) {
             return tensor_to_numpy(value_or_raise(tape.tape.grad(variable.handle)));
           })
      .def("zero_grad", [](PyTape& tape) { tape.tape.zero_grad(); });

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
      .def_property_readonly(
          "dtype",
          [](const PyTraced& t) {
            return py::module_::import("numpy").attr("dtype")(std::string(to_string(t.value.dtype())));
          })
      .def(
          "numpy", [](const PyTraced& t) { return tensor_to_numpy(t.value).attr("copy")(); },
          "A copy of the eager value.");
}

}  // namespace tenferro::python
