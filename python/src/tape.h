// Define-by-run gradients for tenferro.vjp / tenferro.grad: a Python
// function built from tenferro calls and numpy operations (Note [Traced
// array protocol] in python/tenferro/_traced.py) runs eagerly on Traced values while an
// ad::GradientTape records it; the gradients come from the tape's
// backward(), i.e. from the same AD transforms (and the einsum AD rule) as
// the graph path.
//
// Note [Traced values]
// A Traced value is one TapeTensor of one PyTape plus its eager value.
// Arrays mixed with Traced values become tape constants (a copy: the tape
// retains its leaves, which must not borrow Python memory, Note [Borrowed
// operands]). The Traced operands of one call come from one tape or from
// nested ones (Note [Nested Traced values] in tape.cpp).
#pragma once

#include <memory>
#include <span>
#include <string>

#include <pybind11/pybind11.h>

#include "py_runtime.h"
#include "tenferro/ad_runtime/gradient_tape.h"
#include "tenferro/einsum/einsum_op.h"

namespace tenferro::python {

namespace py = pybind11;

/// One recording (see the file comment) on the runtime `runtime_ref`
/// holds. Thread-compatible (used with the GIL held).
struct PyTape {
  PyTape(py::object runtime_object, std::shared_ptr<PyTape> enclosing)
      : runtime_ref(std::move(runtime_object)),
        runtime(&py::cast<PyRuntime&>(runtime_ref)),
        tape(runtime->runtime(), runtime->ad_ptr(), runtime::Placement::default_placement(), runtime->compiler_ptr()),
        parent(std::move(enclosing)) {}
  py::object runtime_ref;
  PyRuntime* runtime;
  ad::GradientTape tape;
  /// The tape of the enclosing tenferro.grad / vjp / jvp / hvp, or null
  /// (Note [Nested Traced values]).
  std::shared_ptr<PyTape> parent;
  /// A tenferro.jit recording (Note [Jit recordings]): comparisons are
  /// recorded instead of read.
  bool jit = false;
  /// A Traced value of this tape, or of a tape nested in it, was read
  /// (Traced.numpy(), and so bool(), float(), .item()).
  bool value_read = false;
  /// A floating or complex one was read as a value (Traced.numpy(),
  /// float(), .item(), math functions; not bool(), a control-flow read): a
  /// plain output computed from it would have a silently zero derivative.
  bool value_escaped = false;
};

/// A value recorded on a tape (Note [Traced values]).
struct PyTraced {
  std::shared_ptr<PyTape> tape;
  ad::TapeTensor handle;
  Tensor value;
};

/// Whether any positional argument of an einsum call is a Traced value.
bool any_traced(std::span<PyObject* const> args, std::size_t first);
/// `op` on `operands` (some Traced) recorded on their tape.
py::object traced_einsum(std::span<PyObject* const> operands, const std::shared_ptr<const einsum::EinsumOp>& op);
/// linalg operation `name` (as tenferro._linalg names it) recorded on the
/// tape of the Traced operand(s); the results in LinalgOp's order.
py::tuple traced_linalg(const std::string& name, const py::list& args, const std::string& mode, bool flag,
                        double rcond);
/// Registers the Tape and Traced classes.
void register_tape(py::module_& m);

}  // namespace tenferro::python
