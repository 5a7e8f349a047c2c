// numpy <-> Tensor without copies, and errors as Python exceptions
// (array_bridge.h).
#include "array_bridge.h"

#include <cxxabi.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "numpy_api.h"

namespace tenferro::python {
namespace {

constexpr std::string_view kCodeNames[] = {
#define TENFERRO_ERROR_CODE(name, str, canonical) "k" #name,
#include "tenferro/base/error_code.def"
};

std::string_view code_name(ErrorCode code) noexcept {
  const auto i = static_cast<std::size_t>(code);
  return i < std::size(kCodeNames) ? kCodeNames[i] : std::string_view("kUnknown");
}

int typenum_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::kBool:
      return NPY_BOOL;
    case DType::kInt32:
      return NPY_INT32;
    case DType::kInt64:
      return NPY_INT64;
    case DType::kFloat32:
      return NPY_FLOAT32;
    case DType::kFloat64:
      return NPY_FLOAT64;
    case DType::kComplex64:
      return NPY_COMPLEX64;
    case DType::kComplex128:
      return NPY_COMPLEX128;
  }
  return NPY_FLOAT64;
}

void destroy_tensor_capsule(PyObject* capsule) {
  delete static_cast<Tensor*>(PyCapsule_GetPointer(capsule, "tenferro.Tensor"));
}

// A new ndarray over `t`'s elements with `base` as its base object (stolen).
py::object array_over(const Tensor& t, PyObject* base, bool writeable) {
  const int nd = static_cast<int>(t.rank());
  const auto itemsize = static_cast<npy_intp>(dtype_size(t.dtype()));
  SmallVector<npy_intp, 8> dims(static_cast<std::size_t>(nd)), strides(static_cast<std::size_t>(nd));
  for (int i = 0; i < nd; ++i) {
    dims[static_cast<std::size_t>(i)] = static_cast<npy_intp>(t.shape()[static_cast<std::size_t>(i)]);
    strides[static_cast<std::size_t>(i)] = static_cast<npy_intp>(t.strides()[static_cast<std::size_t>(i)]) * itemsize;
  }
  PyArray_Descr* descr = PyArray_DescrFromType(typenum_of(t.dtype()));  // new reference, stolen below
  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims.data(), strides.data(), t.data(),
                                       writeable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
  if (arr == nullptr) {
    Py_DECREF(base);
    throw py::error_already_set();
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), base) != 0) {  // steals base even on failure
    Py_DECREF(arr);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(arr);
}

const char* dtype_list() { return "float32, float64, complex64 or complex128"; }
const char* numeric_dtype_list() {
  return "bool, int8-int64, uint8-uint64, float16, float32, float64, complex64 or complex128";
}

// Note [Integer einsum]
// numpy.einsum takes every numeric dtype and returns numpy's result dtype of
// its operands (int64 for lists of Python ints, bool for bool operands, int8
// for int8, with wrap-around). tenferro contracts int32, int64, float32,
// float64, complex64 and complex128 (the integers by the CPU engine's integer
// kernel); the other dtypes are computed in a wider one and the result cast
// back: int8, int16 and the unsigned integers up to 32 bits in int32 (half
// the memory and twice the speed of int64), uint64 and bool in int64,
// float16 in float32. That gives numpy's values: sums of products modulo
// 2^bits are the same whether formed in the narrow type or in a wider one
// and then truncated (unsigned values too, as the bits are: uint32 maps to
// int32 bit for bit), and a bool sum of products is "any(a and b)", which
// is "count != 0" -- counted in int64 so that no count can wrap to 0.
// float16 is accumulated in float32 and rounded once (numpy's own float16
// einsum can be an ulp further from the exact value). float128 is a
// DTypeError.
std::optional<DType> numeric_compute_dtype(const PyArray_Descr* descr) noexcept {
  switch (descr->kind) {
    case 'b':
      return DType::kInt64;
    case 'i':
    case 'u':
      return descr->elsize <= 4 ? DType::kInt32 : DType::kInt64;
    case 'f':
      if (descr->elsize <= 4) return DType::kFloat32;
      if (descr->elsize == 8) return DType::kFloat64;
      return std::nullopt;
    case 'c':
      if (descr->elsize == 8) return DType::kComplex64;
      if (descr->elsize == 16) return DType::kComplex128;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// Whether the array's layout can be borrowed: aligned, native byte order,
// strides non-negative multiples of the item size (axes of extent <= 1 do
// not count, their strides are never used).
// The four dtypes' item sizes (4, 8, 16) are powers of two, so strides are
// checked and converted to elements with a mask and a shift instead of two
// integer divisions per axis (a visible part of a tiny call).
int itemsize_shift(DType dtype) noexcept { return std::countr_zero(dtype_size(dtype)); }

bool borrowable(PyArrayObject* a, DType dtype) {
  if (!PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a)) return false;
  const npy_intp mask = (npy_intp{1} << itemsize_shift(dtype)) - 1;
  const int nd = PyArray_NDIM(a);
  for (int i = 0; i < nd; ++i) {
    if (PyArray_DIM(a, i) <= 1) continue;
    const npy_intp s = PyArray_STRIDE(a, i);
    if (s < 0 || (s & mask) != 0) return false;
  }
  return true;
}

Result<Tensor> borrow(PyArrayObject* a, DType dtype) {
  const int nd = PyArray_NDIM(a);
  const npy_intp itemsize = PyArray_ITEMSIZE(a);
  const int shift = itemsize_shift(dtype);
  Dims shape(static_cast<std::size_t>(nd)), strides(static_cast<std::size_t>(nd));
  std::int64_t last = 0;  // element offset of the last addressed element
  bool empty = false;
  for (int i = 0; i < nd; ++i) {
    const std::int64_t n = PyArray_DIM(a, i);
    const std::int64_t s = n <= 1 ? 0 : PyArray_STRIDE(a, i) >> shift;
    shape[static_cast<std::size_t>(i)] = n;
    strides[static_cast<std::size_t>(i)] = s;
    if (n == 0) empty = true;
    if (n > 1) last += (n - 1) * s;
  }
  const std::size_t nbytes = empty ? 0 : static_cast<std::size_t>(last + 1) * static_cast<std::size_t>(itemsize);
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage, Storage::wrap(PyArray_DATA(a), nbytes, StorageDescriptor{}, nullptr));
  return Tensor::from_storage(std::move(storage), dtype, shape, strides);
}

// Note [Casting broadcast operands]
// An array with stride-0 axes (np.broadcast_to) stores one element along
// each of them. Cast or copied as a whole, as numpy does, it becomes its
// logical size: 2^27 broadcast int8 ones cost 512 MB, and 2^33 a plain
// MemoryError (the edge audit of 2026-12-07). `convert` (returning a new
// reference) is applied to the array narrowed to one element along those
// axes, and its result is broadcast back along them.
template <class F>
py::object on_stored_elements(const py::object& array, F&& convert) {
  auto* a = reinterpret_cast<PyArrayObject*>(array.ptr());
  const int nd = PyArray_NDIM(a);
  SmallVector<std::int64_t, 8> dims(PyArray_DIMS(a), PyArray_DIMS(a) + nd);
  SmallVector<std::int64_t, 8> compact = dims;
  bool broadcast = false;
  for (int d = 0; d < nd; ++d) {
    if (dims[static_cast<std::size_t>(d)] > 1 && PyArray_STRIDE(a, d) == 0) {
      compact[static_cast<std::size_t>(d)] = 1;
      broadcast = true;
    }
  }
  const auto steal = [](PyObject* o) {
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
  };
  if (!broadcast) return steal(convert(a));
  const SmallVector<std::int64_t, 8> strides(PyArray_STRIDES(a), PyArray_STRIDES(a) + nd);
  const py::object narrow = view_of(array, compact, strides, PyArray_BYTES(a));
  const py::object converted = steal(convert(reinterpret_cast<PyArrayObject*>(narrow.ptr())));
  auto* c = reinterpret_cast<PyArrayObject*>(converted.ptr());
  SmallVector<std::int64_t, 8> spread(PyArray_STRIDES(c), PyArray_STRIDES(c) + nd);
  for (int d = 0; d < nd; ++d) {
    if (compact[static_cast<std::size_t>(d)] != dims[static_cast<std::size_t>(d)])
      spread[static_cast<std::size_t>(d)] = 0;
  }
  return view_of(converted, dims, spread, PyArray_BYTES(c));
}

}  // namespace

std::optional<DType> dtype_of_typenum(int typenum) noexcept {
  switch (typenum) {
    case NPY_FLOAT32:
      return DType::kFloat32;
    case NPY_FLOAT64:
      return DType::kFloat64;
    case NPY_COMPLEX64:
      return DType::kComplex64;
    case NPY_COMPLEX128:
      return DType::kComplex128;
    default:
      return std::nullopt;
  }
}

std::string shape_tuple(std::span<const std::int64_t> dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i)
    fmt::format_to(std::back_inserter(text), "{}{}", i > 0 ? ", " : "", dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

std::optional<Tensor> borrowed_tensor(py::handle array) {
  auto* a = reinterpret_cast<PyArrayObject*>(array.ptr());
  const std::optional<DType> dtype = dtype_of_typenum(PyArray_TYPE(a));
  if (!dtype || dtype_size(*dtype) != static_cast<std::size_t>(PyArray_ITEMSIZE(a)) || !borrowable(a, *dtype)) {
    return std::nullopt;
  }
  Result<Tensor> t = borrow(a, *dtype);
  if (!t.ok()) return std::nullopt;
  return std::move(t).value();
}

void raise_status(const Status& status) {
  py::module_ errors = py::module_::import("tenferro._errors");
  py::object exc =
      errors.attr("_make")(std::string(code_name(status.code())), std::string(code_name(canonical_code(status.code()))),
                           std::string(to_string(status.stage())), std::string(status.message()), status.to_string());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

Status status_of(const py::error_already_set& e) {
  py::module_ errors = py::module_::import("tenferro._errors");
  if (e.matches(errors.attr("Error"))) {
    const std::string code = py::cast<std::string>(e.value().attr("code"));
    for (std::size_t i = 0; i < std::size(kCodeNames); ++i) {
      if (kCodeNames[i] == code) {
        return Error(static_cast<ErrorCode>(i), ErrorStage::kNone, py::cast<std::string>(e.value().attr("message")));
      }
    }
  }
  // A builtin exception keeps its family where tenferro has one (so that an
  // `except TypeError` catches the error on every rank of an MPI call):
  // TypeError as a DTypeError, IndexError as an OutOfRangeError, MemoryError
  // as resource exhaustion; anything else is an invalid argument.
  ErrorCode code = ErrorCode::kInvalidArgument;
  if (e.matches(PyExc_TypeError)) {
    code = ErrorCode::kDTypeMismatch;
  } else if (e.matches(PyExc_IndexError)) {
    code = ErrorCode::kOutOfRange;
  } else if (e.matches(PyExc_MemoryError)) {
    code = ErrorCode::kResourceExhausted;
  }
  return Error(code, ErrorStage::kNone,
               fmt::format("{}: {}", std::string(py::str(e.type().attr("__name__"))), std::string(py::str(e.value()))));
}

void raise_error(ErrorCode code, std::string_view message, ErrorStage stage) {
  raise_status(Status(Error(code, stage, std::string(message))));
}

// Note [DLPack operands]
// DLPack producers (torch CPU tensors) are viewed through numpy without
// copying. A tensor that requires grad is detached first, and torch's lazy
// conjugate and negative bits are resolved (copies only when set): torch
// 1.13's __dlpack__ refuses the first and silently drops the second, which
// would flip signs. What numpy cannot view through DLPack (torch's bool
// tensors) is taken through the producer's own numpy() when it has one.
py::object from_dlpack(py::handle obj, const std::string& what) {
  // A plain CPU torch tensor: Tensor.numpy() views it directly. It raises
  // for what needs the path below (requires_grad, a lazy conjugate or
  // negative bit, another device, a dtype numpy lacks); the DLPack round
  // trip and the resolve_conj/resolve_neg calls (a new tensor each) cost
  // about 2.7 us per operand, as much as a whole 64 x 64 product.
  if (PyObject_HasAttrString(obj.ptr(), "resolve_conj") == 1) {
    PyObject* view = PyObject_CallMethod(obj.ptr(), "numpy", nullptr);
    if (view != nullptr && PyArray_Check(view)) return py::reinterpret_steal<py::object>(view);
    Py_XDECREF(view);
    PyErr_Clear();
  }
  py::object source = py::reinterpret_borrow<py::object>(obj);
  if (py::hasattr(source, "requires_grad") && py::hasattr(source, "detach") &&
      py::bool_(source.attr("requires_grad"))) {
    source = source.attr("detach")();
  }
  if (py::hasattr(source, "resolve_neg") && py::hasattr(source, "resolve_conj")) {
    source = source.attr("resolve_conj")().attr("resolve_neg")();
  }
  py::module_ np = py::module_::import("numpy");
  try {
    return np.attr("from_dlpack")(source);
  } catch (py::error_already_set& e) {
    if (py::hasattr(source, "numpy")) {
      try {
        return source.attr("numpy")();
      } catch (py::error_already_set&) {
      }
    }
    const std::string why = py::str(e.value());
    // numpy names a dtype it lacks (bfloat16) "Unsupported dtype": a DTypeError, as numpy.einsum's TypeError.
    raise_error(why.find("dtype") != std::string::npos ? ErrorCode::kDTypeMismatch : ErrorCode::kInvalidArgument,
                fmt::format("{}: expected a CPU array numpy can view through DLPack, found {} ({})", what,
                            type_name(obj), why));
  }
}

void OperandList::add(py::handle obj, const char* what_text, std::ptrdiff_t index, Accept accept) {
  // Formatted on the error paths only.
  const auto what = [&] { return index < 0 ? std::string(what_text) : fmt::format("{} {}", what_text, index); };
  py::object arr;
  if (PyArray_Check(obj.ptr())) {
    arr = py::reinterpret_borrow<py::object>(obj);
  } else {
    py::module_ np = py::module_::import("numpy");
    if (py::hasattr(obj, "__dlpack__")) {
      arr = python::from_dlpack(obj, what());
    } else {
      try {
        arr = np.attr("asarray")(obj);
      } catch (py::error_already_set& e) {
        // numpy's message, without the traceback what() appends (it ended up in jit's warnings).
        raise_error(ErrorCode::kInvalidArgument,
                    fmt::format("{}: expected an array, found {} ({}: {})", what(),
                                std::string(py::str(py::type::handle_of(obj).attr("__name__"))),
                                std::string(py::str(py::type::handle_of(e.value()).attr("__name__"))),
                                std::string(py::str(e.value()))));
      }
    }
  }
  auto* a = reinterpret_cast<PyArrayObject*>(arr.ptr());
  std::optional<DType> dtype = dtype_of_typenum(PyArray_TYPE(a));
  if (!dtype && accept == Accept::kNumeric) dtype = numeric_compute_dtype(PyArray_DESCR(a));
  if (!dtype) {
    raise_error(ErrorCode::kDTypeMismatch,
                fmt::format("{}: expected dtype {}, found {}", what(),
                            accept == Accept::kNumeric ? numeric_dtype_list() : dtype_list(),
                            std::string(py::str(reinterpret_cast<PyObject*>(PyArray_DESCR(a))))));
  }
  arrays_.push_back(std::move(arr));
  dtypes_.push_back(*dtype);
  exact_.push_back(PyArray_EquivTypenums(PyArray_TYPE(a), typenum_of(*dtype)) != 0);
}

DType OperandList::unify_dtypes() {
  if (dtypes_.empty()) return DType::kFloat64;
  DType d = dtypes_[0];
  for (DType x : dtypes_) d = promote_types(d, x);
  for (std::size_t i = 0; i < dtypes_.size(); ++i) cast(i, d);
  return d;
}

py::object OperandList::unify_numeric() {
  // numpy's own promotion (PyArray_ResultType) where it can differ from
  // tenferro's: other dtypes, and 0-d operands (Python scalars), which
  // numpy 1.x promotes by value (2.0 * float32 stays float32).
  const bool scalars = std::any_of(arrays_.begin(), arrays_.end(), [](const py::object& a) {
    return PyArray_NDIM(reinterpret_cast<PyArrayObject*>(a.ptr())) == 0;
  });
  if (!scalars && std::all_of(exact_.begin(), exact_.end(), [](bool e) { return e; }) &&
      std::all_of(dtypes_.begin(), dtypes_.end(), [](DType d) { return is_inexact(d); })) {
    unify_dtypes();
    return py::none();
  }
  return unify_numeric(py::none(), py::none());
}

py::object OperandList::unify_numeric(py::handle dtype, py::handle casting) {
  PyArray_Descr* target = nullptr;
  if (dtype.is_none()) {
    std::vector<PyArrayObject*> arrays;
    for (const py::object& a : arrays_) arrays.push_back(reinterpret_cast<PyArrayObject*>(a.ptr()));
    target = PyArray_ResultType(static_cast<npy_intp>(arrays.size()), arrays.data(), 0, nullptr);
  } else if (PyArray_DescrConverter(dtype.ptr(), &target) == 0) {
    throw py::error_already_set();  // numpy's TypeError for a non-dtype
  }
  if (target == nullptr) throw py::error_already_set();
  const py::object descr = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(target));
  NPY_CASTING rule = NPY_SAFE_CASTING;
  if (!casting.is_none() && PyArray_CastingConverter(casting.ptr(), &rule) == 0) throw py::error_already_set();
  const std::optional<DType> compute = numeric_compute_dtype(target);
  if (!compute) {
    raise_error(ErrorCode::kDTypeMismatch, fmt::format("einsum dtype=: expected dtype {}, found {}",
                                                       numeric_dtype_list(), std::string(py::str(descr))));
  }
  for (std::size_t i = 0; i < arrays_.size(); ++i) {
    auto* a = reinterpret_cast<PyArrayObject*>(arrays_[i].ptr());
    if (!PyArray_CanCastArrayTo(a, target, rule)) {
      raise_error(
          ErrorCode::kDTypeMismatch,
          fmt::format("einsum operand {}: cannot cast {} to {} under casting='{}'", i,
                      std::string(py::str(reinterpret_cast<PyObject*>(PyArray_DESCR(a)))), std::string(py::str(descr)),
                      casting.is_none() ? std::string("safe") : std::string(py::str(casting))));
    }
  }
  for (std::size_t i = 0; i < dtypes_.size(); ++i) {
    // As numpy: each operand is first cast to `dtype` (0.5 becomes True for
    // bool, 70000 inf for float16), then widened to the compute dtype.
    auto* a = reinterpret_cast<PyArrayObject*>(arrays_[i].ptr());
    if (!dtype.is_none() && PyArray_EquivTypes(PyArray_DESCR(a), target) == 0) {
      arrays_[i] = on_stored_elements(arrays_[i], [&](PyArrayObject* x) {
        Py_INCREF(target);  // stolen
        return PyArray_CastToType(x, target, 0);
      });
      // In `dtype` now: when that is the compute dtype, cast() copies no more.
      exact_[i] = PyArray_EquivTypenums(PyArray_TYPE(reinterpret_cast<PyArrayObject*>(arrays_[i].ptr())),
                                        typenum_of(*compute)) != 0;
      if (exact_[i]) dtypes_[i] = *compute;
    }
    cast(i, *compute);
  }
  PyArray_Descr* computed = PyArray_DescrFromType(typenum_of(*compute));
  const bool same = PyArray_EquivTypes(target, computed) != 0;
  Py_DECREF(computed);
  return same ? py::object(py::none()) : descr;
}

py::object OperandList::finish(py::object result, const py::object& descr) {
  if (descr.is_none()) return result;
  // numpy's unsafe cast: integers wrap as numpy's own integer arithmetic
  // does, bool is "!= 0", float16 rounds.
  auto* d = reinterpret_cast<PyArray_Descr*>(descr.ptr());
  Py_INCREF(d);  // stolen
  PyObject* c = PyArray_CastToType(reinterpret_cast<PyArrayObject*>(result.ptr()), d, 0);
  if (c == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(c);
}

void OperandList::cast(std::size_t i, DType dtype) {
  if (dtypes_[i] == dtype && exact_[i]) return;
  arrays_[i] = on_stored_elements(
      arrays_[i], [&](PyArrayObject* x) { return PyArray_CastToType(x, PyArray_DescrFromType(typenum_of(dtype)), 0); });
  dtypes_[i] = dtype;
  exact_[i] = true;
}

void OperandList::reverse_axes(std::size_t i, std::uint64_t axes) {
  arrays_[i] = reversed_axes(std::move(arrays_[i]), axes);
}

void OperandList::wrap() {
  tensors_.clear();
  for (std::size_t i = 0; i < arrays_.size(); ++i) {
    auto* a = reinterpret_cast<PyArrayObject*>(arrays_[i].ptr());
    if (!borrowable(a, dtypes_[i])) {
      // Negative strides, strides that are not whole elements, misaligned or
      // byte-swapped data: one C-order native copy (Note [Borrowed operands])
      // of the stored elements (Note [Casting broadcast operands]).
      arrays_[i] = on_stored_elements(arrays_[i], [&](PyArrayObject* x) {
        return PyArray_FromArray(x, PyArray_DescrFromType(typenum_of(dtypes_[i])),
                                 NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_ENSURECOPY);
      });
      a = reinterpret_cast<PyArrayObject*>(arrays_[i].ptr());
    }
    tensors_.push_back(value_or_raise(borrow(a, dtypes_[i])));
  }
}

py::object OperandList::to_numpy(Tensor t) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (t.storage().get() == tensors_[i].storage().get()) {
      // A view of operand i: its base is that array, which owns the memory.
      PyObject* base = arrays_[i].ptr();
      Py_INCREF(base);
      return array_over(t, base, PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject*>(base)));
    }
  }
  return tensor_to_numpy(std::move(t));
}

static_assert(sizeof(npy_intp) == sizeof(std::int64_t));

py::object view_of(py::handle array, std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                   void* data) {
  auto* a = reinterpret_cast<PyArrayObject*>(array.ptr());
  PyArray_Descr* descr = PyArray_DESCR(a);
  Py_INCREF(descr);  // stolen below
  PyObject* view = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()),
                                        reinterpret_cast<npy_intp*>(const_cast<std::int64_t*>(dims.data())),
                                        reinterpret_cast<npy_intp*>(const_cast<std::int64_t*>(strides.data())), data,
                                        PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE, nullptr);
  if (view == nullptr) throw py::error_already_set();
  py::object owned = py::reinterpret_steal<py::object>(view);
  Py_INCREF(array.ptr());
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view), array.ptr()) < 0) {
    throw py::error_already_set();  // the base reference was stolen
  }
  return owned;
}

py::object reversed_axes(py::object array, std::uint64_t axes) {
  if (axes == 0) return array;
  auto* a = reinterpret_cast<PyArrayObject*>(array.ptr());
  const int nd = PyArray_NDIM(a);
  const std::span<const std::int64_t> dims(reinterpret_cast<const std::int64_t*>(PyArray_DIMS(a)),
                                           static_cast<std::size_t>(nd));
  SmallVector<std::int64_t, 8> strides(PyArray_STRIDES(a), PyArray_STRIDES(a) + nd);
  char* data = PyArray_BYTES(a);
  for (int d = 0; d < nd; ++d) {
    if (((axes >> d) & 1u) == 0 || dims[static_cast<std::size_t>(d)] == 0) continue;
    std::int64_t& s = strides[static_cast<std::size_t>(d)];
    data += (dims[static_cast<std::size_t>(d)] - 1) * s;
    s = -s;
  }
  return view_of(array, dims, strides, data);
}

bool interpreter_finalizing() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void park_forever() noexcept {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

namespace {
// Note [Calls in flight at exit]
struct ExitGate {
  std::atomic<int> in_flight{0};
  std::atomic<bool> exiting{false};
  std::mutex mutex;
  std::condition_variable done;
};

ExitGate& exit_gate() noexcept {
  static ExitGate* const gate = new ExitGate();  // never destroyed: parked threads may read it during exit
  return *gate;
}

void reset_exit_gate_in_child() noexcept {
  exit_gate().in_flight.store(0);
  exit_gate().exiting.store(false);
}

// One call fewer in flight; whether the exit has begun.
bool leave(ExitGate& gate) noexcept {
  const bool last = gate.in_flight.fetch_sub(1) == 1;
  const bool exiting = gate.exiting.load();
  if (last && exiting) {
    const std::lock_guard<std::mutex> lock(gate.mutex);
    gate.done.notify_all();
  }
  return exiting;
}

void wait_for_calls_in_flight() {
  ExitGate& gate = exit_gate();
  gate.exiting.store(true);
  if (gate.in_flight.load() == 0) return;
  PyThreadState* const state = PyEval_SaveThread();
  {
    std::unique_lock<std::mutex> lock(gate.mutex);
    gate.done.wait(lock, [&gate] { return gate.in_flight.load() == 0; });
  }
  PyEval_RestoreThread(state);
}
}  // namespace

bool exit_began() noexcept { return exit_gate().exiting.load(std::memory_order_relaxed); }

void register_exit_wait() {
  static const bool forks = pthread_atfork(nullptr, nullptr, reset_exit_gate_in_child) == 0;
  (void)forks;
  py::module_::import("atexit").attr("register")(py::cpp_function(&wait_for_calls_in_flight));
}

GilRelease::GilRelease(bool awaited) noexcept : state_(nullptr), awaited_(awaited) {
  if (awaited_) {
    ExitGate& gate = exit_gate();
    gate.in_flight.fetch_add(1);
    if (gate.exiting.load()) {  // the exit began: no new native work
      leave(gate);
      PyEval_SaveThread();
      park_forever();
    }
  }
  state_ = PyEval_SaveThread();
}

GilRelease::~GilRelease() {
  if (awaited_ && leave(exit_gate())) park_forever();
  take_gil_or_park(state_);
}

void take_gil_or_park(PyThreadState* state) noexcept {
  if (interpreter_finalizing()) park_forever();
#if defined(__GLIBCXX__)
  // Finalizing may begin while this thread waits for the GIL: CPython then
  // ends it inside PyEval_RestoreThread with pthread_exit, whose forced
  // unwinding would reach this noexcept frame. The thread parks inside the
  // handler instead (the unwinding is neither finished nor rethrown, and
  // CPython dropped the GIL before exiting).
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    park_forever();
  }
#else
  PyEval_RestoreThread(state);
#endif
}

py::object numpy_dtype(DType dtype) {
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyArray_DescrFromType(typenum_of(dtype))));
}

py::object scalar_if_0d(py::object result) {
  if (!PyArray_Check(result.ptr()) || PyArray_NDIM(reinterpret_cast<PyArrayObject*>(result.ptr())) != 0) return result;
  PyObject* scalar = PyArray_Return(reinterpret_cast<PyArrayObject*>(result.release().ptr()));
  if (scalar == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(scalar);
}

py::object scalar_of(const Tensor& t) {
  PyArray_Descr* descr = PyArray_DescrFromType(typenum_of(t.dtype()));
  PyObject* scalar = PyArray_Scalar(t.data(), descr, nullptr);
  Py_DECREF(descr);
  if (scalar == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(scalar);
}

py::object tensor_to_result(Tensor t) {
  if (t.defined() && t.rank() == 0) return scalar_of(t);
  return tensor_to_numpy(std::move(t));
}

py::object tensor_to_numpy(Tensor t) {
  if (!t.defined()) return py::none();
  auto* owned = new Tensor(std::move(t));
  PyObject* capsule = PyCapsule_New(owned, "tenferro.Tensor", destroy_tensor_capsule);
  if (capsule == nullptr) {
    delete owned;
    throw py::error_already_set();
  }
  return array_over(*owned, capsule, true);
}

void raise_type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

std::int64_t as_index(py::handle obj, const char* what) {
  // Python ints and anything with __index__ (numpy integers), as
  // operator.index takes them.
  py::object index;
  if (PyLong_Check(obj.ptr()) || (PyIndex_Check(obj.ptr()) && !PyFloat_Check(obj.ptr()))) {
    index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    if (!index) PyErr_Clear();
  }
  if (!index)
    raise_type_error(fmt::format("{}: expected an integer (int or numpy integer), found {}", what, type_name(obj)));
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    raise_error(ErrorCode::kOutOfRange,
                fmt::format("{}: expected an integer that fits int64, found {}", what, std::string(py::str(index))));
  }
  if (value == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return value;
}

double estimated_work(std::span<const Tensor> operands, WorkKind kind) {
  double work = 0;
  for (const Tensor& t : operands) {
    const auto n = static_cast<double>(t.numel());
    const std::span<const std::int64_t> shape = t.shape();
    switch (kind) {
      case WorkKind::kElements:
        work += n;
        break;
      case WorkKind::kMatrices:
        work += 3 * (shape.size() < 2
                         ? n
                         : n * static_cast<double>(std::min(shape[shape.size() - 1], shape[shape.size() - 2])));
        break;
      case WorkKind::kTransforms:
        work += n * std::log2(std::max(n, 2.0));
        break;
    }
  }
  return work;
}

Dims dims_or_empty(py::handle sequence) {
  Dims d;
  if (!sequence.is_none()) {
    for (py::handle v : sequence) d.push_back(py::cast<std::int64_t>(v));
  }
  return d;
}

}  // namespace tenferro::python
