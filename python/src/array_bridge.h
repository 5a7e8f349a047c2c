// The numpy side of the Python module: numpy arrays (and DLPack producers,
// through numpy.from_dlpack) borrowed as tenferro Tensors without copying,
// tenferro Tensors handed out as numpy arrays over their own storage, and
// tenferro Status values raised as tenferro.Error exceptions.
//
// Note [Borrowed operands]
// An operand is wrapped in a Storage with no owner: the Tensor borrows the
// array's memory. That is sound because every Tensor made from an operand
// lives only inside one call, while the call's argument tuple (or the
// OperandList that converted it) keeps the array alive, and the eager
// einsum and linalg calls retain no input. A result that is a view of an
// operand (an einsum that only permutes axes) shares a borrowed storage; it
// is handed out as a numpy view whose base is that operand, never as a
// capsule over the borrowed storage (Note [Zero-copy results]).
//
// Note [Zero-copy results]
// A result Tensor becomes a numpy array whose data pointer is the tensor's
// data and whose base is a capsule owning a copy of the Tensor (one
// reference on its storage), so numpy frees tenferro's storage when the
// last view of it goes away. No element is copied.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <pybind11/pybind11.h>

#include "tenferro/base/sharded_counters.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::python {

namespace py = pybind11;

/// Raises `status` (not ok) as a tenferro.Error subclass chosen by
/// tenferro._errors from its code (throws py::error_already_set).
[[noreturn]] void raise_status(const Status& status);
/// A raised Python exception as a Status: a tenferro.Error's own code and
/// message; any other exception kInvalidArgument with its type and text.
Status status_of(const py::error_already_set& e);
/// Raises a kInvalidArgument / kDTypeMismatch error built from a message,
/// of `stage` (kNone, printed `api`: the module's own argument checks).
[[noreturn]] void raise_error(ErrorCode code, std::string_view message, ErrorStage stage = ErrorStage::kNone);

/// Raises a TypeError with `message`.
[[noreturn]] void raise_type_error(const std::string& message);
/// The name of obj's type, for messages.
std::string type_name(py::handle obj);
/// `obj` as an integer (a Python int or anything with __index__ but a
/// float); kInvalidArgument naming `what` otherwise.
std::int64_t as_index(py::handle obj, const char* what);
/// A numpy array viewing DLPack producer `obj` (Note [DLPack operands]);
/// kInvalidArgument naming `what` when numpy cannot view it.
py::object from_dlpack(py::handle obj, const std::string& what);

// Note [Keeping the GIL for tiny calls]
// A call releases the GIL while it computes, so other Python threads run.
// That is free when no other thread waits; with one waiting, each release
// and re-take hands the GIL over: a futex wake and a switch of CPUs,
// several microseconds on a VM, longer than an 8 x 8 einsum (1-2 us). Two
// threads doing such calls got 0.16-0.24x the calls per second of one (the
// concurrency audit of 2026-12-05; numpy keeps the GIL for loops under 500
// elements, and its 8 x 8 `@` got 0.81-0.97x). A call whose estimated work
// is below kGilReleaseWork therefore keeps the GIL: threads doing tiny
// calls take turns, and larger calls still run in parallel. The estimate is
// in nanoseconds of this VM (AMD EPYC, 2026-12-06): einsum 1 ns per operand
// element (two 64 x 64 matrices: 8192 ns estimated, 7.0 us measured);
// linalg 3 ns per element times the smaller matrix extent (n^3 for n x n;
// svd 40 x 40: 192 us against 193 measured); fft 1 ns per element times
// log2 of the elements; a jit function 1 ns per element of every value of
// its program (tape.cpp, PyFunction::work). 10 us puts the line at an einsum of two 70 x 70
// matrices, a 15 x 15 decomposition, a 1024-point transform: there a
// handoff costs at most about as much as the call, and two threads doing
// 64 x 64 products got 0.6-1.4x released against about 1x kept. Holding
// the GIL is safe because nothing a call waits for takes it: the one thing
// in tenferro that takes the GIL back, a sliced einsum's interrupt check,
// always runs with it released.
inline constexpr double kGilReleaseWork = 10000;

// Note [Daemon threads at exit]
// A daemon thread still inside a call when the interpreter finalizes
// aborted the process ("terminate called without an active exception",
// status 134; the Python leak audit of 2026-12-06): taking the GIL back then
// makes CPython 3.11 end the thread with pthread_exit, whose forced
// unwinding through the destructor that took it (noexcept) calls
// std::terminate. The module takes the GIL back through GilRelease and
// take_gil_or_park(), which park such a thread for good instead of taking
// it: the process ends with the main thread, as CPython 3.14 does with
// every daemon thread. Finalizing can also begin while the thread waits
// for the GIL (about 1 exit in 50 under load): CPython's pthread_exit is
// then caught as abi::__forced_unwind inside take_gil_or_park, which parks
// there.

/// Takes the GIL, or parks this thread forever when the interpreter is
/// finalizing (Note [Daemon threads at exit]).
void take_gil_or_park(PyThreadState* state) noexcept;
/// Whether the interpreter is finalizing.
bool interpreter_finalizing() noexcept;
/// Parks this thread forever (it holds no GIL; the process ends without it).
[[noreturn]] void park_forever() noexcept;

// Note [Calls in flight at exit]
// A daemon thread still inside a call (the GIL released) when the program
// exits kept running native code while exit() ran the destructors of the
// shared libraries and of statics: a LAPACK call in tenferro's OpenBLAS or
// an FFTW plan then faulted (SIGSEGV in 9 of 12 exits with two daemon
// threads in linalg.svd, about 1 in 12 with fft.fft2; the Python
// concurrency audit of 2026-12-06; numpy's svd exited cleanly). GilRelease
// therefore counts the calls in flight, and a callback registered with
// Python's atexit at import (it runs before finalizing, while daemon
// threads still run) marks the exit and waits, with the GIL released, until
// none is left. A call that returns after the mark parks instead of taking
// the GIL back, and one that would begin after it parks at once, so no
// daemon thread starts new native work: the exit waits for the longest call
// in flight (a sliced einsum stops at its next slice: its interrupt check
// sees the mark). MPI calls are not awaited (one may wait for other ranks
// for ever). The count lives for the process (never destroyed: parked
// threads use it during exit); a forked child starts with none.

/// Whether the interpreter's exit has begun (Note [Calls in flight at exit]).
bool exit_began() noexcept;
/// Registers the wait of Note [Calls in flight at exit] with Python's atexit.
void register_exit_wait();

/// GilRelease's argument for a call the exit does not wait for.
inline constexpr bool kNotAwaitedAtExit = false;

/// Releases the GIL for its scope (pybind11's gil_scoped_release, taking it
/// back as Note [Daemon threads at exit] says), as a call in flight the
/// exit waits for unless `awaited` is false (Note [Calls in flight at
/// exit]).
class GilRelease {
 public:
  explicit GilRelease(bool awaited = true) noexcept;
  ~GilRelease();
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
  bool awaited_;
};

/// Releases the GIL for its scope unless `work` is below kGilReleaseWork,
/// and counts each release in `releases` (a runtime's gil_releases).
class ReleaseGilUnlessTiny {
 public:
  ReleaseGilUnlessTiny(double work, ShardedCounters<1>& releases) {
    if (work < kGilReleaseWork) return;
    releases.add(0, 1);
    release_.emplace();
  }

 private:
  std::optional<GilRelease> release_;
};

enum class WorkKind { kElements, kMatrices, kTransforms };
/// The estimate of Note [Keeping the GIL for tiny calls] over `operands`.
double estimated_work(std::span<const Tensor> operands, WorkKind kind);

/// The integers of a Python sequence; empty for None.
Dims dims_or_empty(py::handle sequence);

/// Unwraps `r` or raises its error.
template <class T>
T value_or_raise(Result<T>&& r) {
  if (!r.ok()) raise_status(r.status());
  return std::move(r).value();
}
inline void ok_or_raise(const Status& s) {
  if (!s.ok()) raise_status(s);
}

/// Runs `body` (returning a py::object) for a C-level entry point: its
/// result as a new reference, or null with the Python error set from what
/// it threw.
template <class F>
PyObject* python_entry(F&& body) noexcept {
  try {
    return body().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

/// The operands of one call: each converted to a numpy array of a tenferro
/// dtype (Note [Borrowed operands]) and wrapped as a Tensor. Holds the
/// arrays (new references) for its own lifetime.
class OperandList {
 public:
  OperandList() = default;
  OperandList(const OperandList&) = delete;
  OperandList& operator=(const OperandList&) = delete;

  /// Which numpy dtypes add() takes.
  enum class Accept : std::uint8_t {
    kInexact,  ///< float32, float64, complex64, complex128
    kNumeric,  ///< also bool, the integers and float16 (Note [Integer einsum])
  };
  /// Converts `obj` (ndarray, DLPack producer or array-like) to an array.
  /// A dtype outside `accept` is a DTypeError naming `what` (and `index`
  /// when >= 0, e.g. "einsum operand 1").
  void add(py::handle obj, const char* what, std::ptrdiff_t index = -1, Accept accept = Accept::kInexact);
  /// Casts every operand to one dtype (numpy's promotion among float32,
  /// float64, complex64 and complex128; casting copies those operands).
  /// Only for operands added as kInexact.
  DType unify_dtypes();
  /// unify_dtypes() for operands added as kNumeric: casts every operand to
  /// the dtype tenferro computes numpy's result dtype in (Note [Integer
  /// einsum]); returns that result dtype when it differs from the computed
  /// one (finish() converts the result), else None.
  py::object unify_numeric();
  /// unify_numeric() with numpy's dtype= and casting= (None: 'safe'): every
  /// operand cast to `dtype` under the casting rule (a DTypeError naming the
  /// operand otherwise, before anything is cast); returns numpy's dtype
  /// object for `dtype` when it differs from the computed one, else None.
  py::object unify_numeric(py::handle dtype, py::handle casting);
  /// `result` as numpy's result dtype `descr` (from unify_numeric(); None
  /// returns `result` unchanged).
  static py::object finish(py::object result, const py::object& descr);
  /// Casts operand `i` to `dtype` when it differs (a copy).
  void cast(std::size_t i, DType dtype);
  /// Replaces operand `i` with a view of it whose axes in `axes` (bit a for
  /// axis a) are reversed (Note [Reversed operands] in module.cpp).
  void reverse_axes(std::size_t i, std::uint64_t axes);
  /// Wraps the arrays as Tensors (strided views without copying; negative
  /// or non-element strides, misaligned or byte-swapped data copied once).
  void wrap();

  std::size_t size() const noexcept { return arrays_.size(); }
  const SmallVector<Tensor, 8>& tensors() const noexcept { return tensors_; }
  DType dtype(std::size_t i) const noexcept { return dtypes_[i]; }
  py::handle array(std::size_t i) const noexcept { return arrays_[i]; }

  /// `t` as a numpy array (Note [Zero-copy results]); a view of an operand
  /// when `t` shares that operand's storage.
  py::object to_numpy(Tensor t) const;

 private:
  SmallVector<py::object, 8> arrays_;
  SmallVector<DType, 8> dtypes_;
  SmallVector<bool, 8> exact_;  // the array's dtype is dtypes_[i] (not yet cast when false)
  SmallVector<Tensor, 8> tensors_;
};

/// A shape as Python prints a tuple: "(3, 4)", "(5,)", "()".
std::string shape_tuple(std::span<const std::int64_t> dims);
/// The numpy dtype of `obj`'s array conversion as a tenferro dtype, or nullopt.
std::optional<DType> dtype_of_typenum(int typenum) noexcept;
/// `a` as a Tensor over its own memory (no copy), or nullopt when its dtype
/// is not a tenferro dtype or its layout cannot be borrowed (negative or
/// non-element strides, misaligned or byte-swapped data).
std::optional<Tensor> borrowed_tensor(py::handle array);
/// numpy's dtype object for `dtype` (numpy keeps one per builtin type).
py::object numpy_dtype(DType dtype);
/// A Tensor that tenferro allocated, as a numpy array (Note [Zero-copy results]).
py::object tensor_to_numpy(Tensor t);
/// The element of a 0-d `t` as a numpy scalar of its dtype (a copy).
py::object scalar_of(const Tensor& t);
/// A result as numpy returns it: scalar_of(t) when `t` is 0-d (numpy.einsum
/// and the reductions return scalars; making the ndarray first and
/// converting it cost about 0.15 us of a tiny call), else tensor_to_numpy(t).
py::object tensor_to_result(Tensor t);
/// A 0-d ndarray as a numpy scalar (numpy.float64, ...), as numpy.einsum
/// returns a full contraction (PyArray_Return); anything else unchanged.
py::object scalar_if_0d(py::object result);
/// A numpy view of `array`'s memory: `dims` and `strides` (bytes) from
/// `data`, `array`'s dtype, its base `array`, writeable when `array` is.
py::object view_of(py::handle array, std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                   void* data);
/// `array` (an ndarray) with the axes in `axes` (bit a for axis a)
/// reversed, as `array[::-1]` along each: a view, `array` itself when
/// `axes` is 0.
py::object reversed_axes(py::object array, std::uint64_t axes);

}  // namespace tenferro::python
