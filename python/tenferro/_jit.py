"""tenferro.jit and tenferro.vmap: record a numpy function once per argument
signature, then run the recording as one prepared program (docs/python.md,
"tenferro.jit", "tenferro.vmap").
"""

# Note [Jit signatures]
# A call's arguments (positional and keyword, through tuples, named tuples,
# lists and dicts) are split into arrays and values. Arrays (exactly
# numpy.ndarray, and numpy floating and complex scalars, of bool, int32,
# int64, float32, float64, complex64 or complex128) are the program's
# parameters: only their dtypes and shapes enter the signature. Values --
# Python and numpy numbers other than those floating scalars, strings, bytes,
# None, dtypes, slices -- are part of the signature by value (floats by their bits,
# so -0.0 is not 0.0), and so are the arguments named by static_argnums /
# static_argnames (by their hash, as jax's static arguments): a new value
# records again. Anything else (an object holding arrays, a torch tensor, an
# ndarray subclass, an array of another dtype) cannot be keyed without
# silently keeping stale contents, so that call runs eagerly (one
# RuntimeWarning per reason).
# The first call of a signature runs the function on Traced values of a tape
# marked for jit (Note [Jit recordings] in python/src/tape.cpp), returns what
# it computed and keeps the recording as a program (Note [Recorded functions]
# in gradient_tape.h); later calls only run that program. A signature whose
# recording cannot be replayed -- the function read a value (bool(), float(),
# .item(), a comparison in Python control flow), used something that is not
# recorded, or returned something jit cannot rebuild -- runs eagerly from then
# on, with one RuntimeWarning saying why; a first call that fails is run
# eagerly once and, when numpy raises too, leaves nothing cached. Inside
# tenferro.grad or another jit the function is called as it is, so that the
# enclosing recording sees it.

import collections
import functools
import inspect
import operator
import struct
import threading
import warnings
import weakref

import numpy as _np

from . import _tenferro, _traced
from ._errors import AxisError, Error, InvalidArgumentError, UnsupportedError

Traced = _tenferro.Traced

# The dtypes of array arguments a recording takes.
_DTYPES = frozenset(_np.dtype(d) for d in ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128"))
# The argument types the C++ fast path matches (Note [Jit fast path]).
_FAST = frozenset((_np.ndarray, float, int, bool, str, type(None)))
# Values keyed by themselves (Note [Jit signatures]).
_VALUES = (int, str, bytes, type(None), _np.integer, _np.bool_, _np.dtype, type, type(Ellipsis))
# What a recording raises when fun does something it does not record:
# numpy would run it (or raise the same), so the call runs eagerly.
_UNRECORDED = (Error, TypeError, AttributeError, IndexError, ValueError, NotImplementedError)


class _Eager(Exception):
    """A call that cannot be recorded (its reason), run eagerly."""


def _number_key(value):
    """A Python float or complex by its bits (-0.0 is not 0.0; nan is nan)."""
    if type(value) is float:
        return ("f", struct.pack("<d", value))
    return ("z", struct.pack("<dd", value.real, value.imag))


def _flatten(value, arrays, where):
    """The signature of `value` (hashable), its arrays appended to `arrays`
    (Note [Jit signatures])."""
    t = type(value)
    if t is _np.ndarray or t is Traced or isinstance(value, (_np.floating, _np.complexfloating)):
        if value.dtype not in _DTYPES:
            raise _Eager(f"{where} is an array of dtype {value.dtype}")
        arrays.append(value)
        return ("a", value.dtype, value.shape)
    if t in (float, complex):
        return ("s", t, _number_key(value))
    if t is slice:  # unhashable before Python 3.12: by its bounds
        return ("s", slice, tuple(_flatten(v, arrays, where) for v in (value.start, value.stop, value.step)))
    if isinstance(value, _VALUES):
        return ("s", t, value)
    if t is list or t is tuple:
        return (t, tuple(_flatten(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)))
    if isinstance(value, tuple) and hasattr(t, "_make"):  # a named tuple
        return (t, tuple(_flatten(v, arrays, f"{where}.{f}") for f, v in zip(t._fields, value)))
    if t is dict:  # in the caller's order, which the function sees
        return (dict, tuple((k, _flatten(v, arrays, f"{where}[{k!r}]")) for k, v in value.items()))
    if isinstance(value, _np.ndarray):
        raise _Eager(f"{where} is a {t.__name__} (an ndarray subclass)")
    raise _Eager(f"{where} is a {t.__name__}, neither an array nor a value jit can key on (pass its arrays as "
                 f"arguments, or name it in static_argnums to key it by its hash)")


def _rebuild(signature, values):
    """The value of `signature` with the next of `values` (an iterator) for
    each array."""
    kind = signature[0]
    if kind == "a":
        return next(values)
    if kind == "s":
        if signature[1] is slice:
            return slice(*(_rebuild(b, values) for b in signature[2]))
        return signature[2] if signature[1] not in (float, complex) else _unkey(signature)
    if kind is dict:
        return {k: _rebuild(s, values) for k, s in signature[1]}
    items = [_rebuild(s, values) for s in signature[1]]
    return kind._make(items) if hasattr(kind, "_make") else kind(items)


def _unkey(signature):
    kind, bits = signature[2]
    if kind == "f":
        return signature[1](struct.unpack("<d", bits)[0])
    re, im = struct.unpack("<dd", bits)
    return complex(re, im)


def _has_traced(value):
    if isinstance(value, Traced):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_traced(v) for v in value)
    if type(value) is dict:
        return any(_has_traced(v) for v in value.values())
    return False


# What a result may hold besides Traced values and containers.
_PLAIN = (_np.ndarray, _np.generic, int, float, complex, str, bytes, type(None), _np.dtype)


def _outputs(value, traced):
    """The structure of fun's result: Traced values become ("o", k), k their
    position in `traced`; arrays and numbers ("c", a copy)."""
    if isinstance(value, Traced):
        traced.append(value)
        return ("o", len(traced) - 1)
    t = type(value)
    if t is list or t is tuple or isinstance(value, tuple) and hasattr(t, "_make"):
        return (t, tuple(_outputs(v, traced) for v in value))
    if t is dict:
        return (dict, tuple((k, _outputs(v, traced)) for k, v in value.items()))
    if isinstance(value, _PLAIN):
        return ("c", _np.copy(value) if isinstance(value, _np.ndarray) else value)
    raise _Eager(f"the function returns a {t.__name__}, which jit cannot rebuild from a recording")


def _guards(tape, traced):
    """The index guards of `tape` (Note [Traced indices] in _traced.py):
    their values appended to the outputs `traced` (a pair each), and their
    (n, axis) returned for the recording (_Tape.function), which checks
    them after every run and returns the other outputs only."""
    specs = []
    for lo, hi, n, axis in getattr(tape, "guards", ()):
        traced += [lo, hi]
        specs.append((n, axis))
    return specs


def _result(structure, outputs):
    kind = structure[0]
    if kind == "o":
        return outputs[structure[1]]
    if kind == "c":
        value = structure[1]
        return value.copy() if isinstance(value, _np.ndarray) else value
    if kind is dict:
        return {k: _result(s, outputs) for k, s in structure[1]}
    items = [_result(s, outputs) for s in structure[1]]
    return kind._make(items) if hasattr(kind, "_make") else kind(items)


def _value(t):
    """t's numpy value; a 0-d one as a numpy scalar, as numpy's reductions
    give it (and tenferro.grad's value_and_grad, vjp and jvp)."""
    array = t.numpy()
    return array[()] if array.ndim == 0 else array


class _Recording:
    """One signature's program and the structure of its result."""

    __slots__ = ("function", "structure")

    def __init__(self, function, structure):
        self.function = function
        self.structure = structure

    def __call__(self, arrays):
        outputs = self.function(*arrays) if self.function is not None else ()
        return _result(self.structure, outputs)


def _trace(fun, runtime, args, kwargs, examples, static):
    """Runs fun on a jit tape, the arrays of its arguments replaced by
    Traced values of `examples` (in order): (tape, those values, fun's
    Traced results, the structure of its result, whether it read a value).
    `static(i_or_name, n)`: whether an argument is passed as it is."""
    from . import _run, default_runtime

    rt = default_runtime() if runtime is None else runtime
    tape = _tenferro._tape_for(rt, (), None)
    tape.jit = True
    xs = [tape.argument(a, i) for i, a in enumerate(examples)]
    it = iter(xs)
    targs = [a if static(i, len(args)) else _rebuild(_flatten(a, [], ""), it) for i, a in enumerate(args)]
    # Keyword arguments in the caller's order, as _signature and _batch_arrays take their arrays.
    tkwargs = {k: (v if static(k, 0) else _rebuild(_flatten(v, [], ""), it)) for k, v in kwargs.items()}
    out = _run(tape, fun, *targs, **tkwargs)
    traced = []
    structure = _outputs(out, traced)
    return tape, xs, traced, structure, tape.value_read


_VALUE_READ = ("the function reads a traced value (bool(), float(), .item(), .numpy() or a comparison in Python "
               "control flow), so its recording cannot be replayed")


def _record(fun, runtime, args, kwargs, arrays, static):
    """(this call's result, a _Recording of it), or (result, the reason)
    when the recording cannot be replayed."""
    tape, xs, traced, structure, read = _trace(fun, runtime, args, kwargs, arrays, static)
    result = _result(structure, [_value(t) for t in traced])  # what the recorded calls computed
    if read:
        return result, _VALUE_READ
    guards = _guards(tape, traced)
    return result, _Recording(tape.function(xs, traced, guards=guards) if traced else None, structure)


# Recordings of one signature with different Python float values after
# which jit warns (each value records again, Note [Jit signatures]).
_FLOAT_VALUES_WARNED = 8


def _without_floats(key):
    """The signature `key` with the values of its Python floats (and
    complex numbers) left out."""
    if type(key) is not tuple:
        return key
    if len(key) == 3 and key[0] == "s" and key[1] in (float, complex) and type(key[2]) is tuple:  # not static
        return ("s", key[1])
    return tuple(_without_floats(k) for k in key)


def _static_test(nums, names):
    def static(key, n):
        return key in names if isinstance(key, str) else (key in nums or key - n in nums)

    return static


def _signature(args, kwargs, static):
    """(the signature key, the arrays) of a call (Note [Jit signatures])."""
    arrays = []
    key = []
    n = len(args)
    for i, a in enumerate(args):
        if static(i, n):
            if isinstance(a, Traced):
                raise _Eager(f"static argument {i} is a traced value")
            try:
                hash(a)
            except TypeError:
                raise TypeError(f"jit: static argument {i} must be hashable, found {type(a).__name__}") from None
            key.append(("s", type(a), a))
        else:
            key.append(_flatten(a, arrays, f"argument {i}"))
    for k, v in kwargs.items():  # in the caller's order, which fun sees (and may depend on)
        if static(k, 0):
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"jit: static argument {k!r} must be hashable, found {type(v).__name__}") from None
            key.append((k, ("s", type(v), v)))
        else:
            key.append((k, _flatten(v, arrays, f"argument {k!r}")))
    return tuple(key), arrays


def _check_static(fun, nums, names):
    """InvalidArgumentError for static_argnums / static_argnames naming no
    parameter of fun (a typo would otherwise leave the argument traced
    without a word); fun taking *args or **kwargs, or whose signature
    cannot be read (some builtins), accepts any."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = {p.kind for p in parameters}
    if nums and inspect.Parameter.VAR_POSITIONAL not in kinds:
        positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for i in sorted(nums):
            if not -len(positional) <= i < len(positional):
                raise InvalidArgumentError(
                    f"jit: static_argnums {i} is out of range for {getattr(fun, '__name__', 'fun')}, expected "
                    f"{-len(positional)} <= static_argnums < {len(positional)} (its positional parameters: "
                    f"{', '.join(positional) or 'none'})", code="kInvalidArgument", canonical="kInvalidArgument")
    if names and inspect.Parameter.VAR_KEYWORD not in kinds:
        named = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        for name in sorted(names):
            if name not in named:
                raise InvalidArgumentError(
                    f"jit: static_argnames {name!r} names no parameter of {getattr(fun, '__name__', 'fun')}, "
                    f"expected one of {named}", code="kInvalidArgument", canonical="kInvalidArgument")


def _check_options(fun, static_argnums, static_argnames, runtime, cache_size, who):
    if not callable(fun):
        raise TypeError(f"{who}: expected a function, found {type(fun).__name__}")
    nums = (static_argnums,) if not isinstance(static_argnums, (tuple, list)) else tuple(static_argnums)
    nums = frozenset(operator.index(i) for i in nums)
    names = frozenset((static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    if runtime is not None and not isinstance(runtime, _tenferro.Runtime):
        raise TypeError(f"{who}: expected runtime=None or a tenferro.Runtime, found {type(runtime).__name__}")
    try:
        size = operator.index(cache_size)
    except TypeError:
        raise TypeError(f"{who}: expected an int cache_size, found {type(cache_size).__name__}") from None
    if size < 1:
        raise ValueError(f"{who}: expected cache_size >= 1, found {cache_size}")
    return nums, names, size


# Note [Runtimes across fork] (__init__.py): a recording holds the programs
# prepared on the runtime it ran on; in a forked child each live jit's
# recordings are set aside (kept referenced, never used nor destroyed) and
# the next call records again on the child's runtime.
_live_jits = weakref.WeakSet()
_set_aside = []


def _after_fork_in_child():
    for jitted in list(_live_jits):
        jitted._set_aside_recordings()


class _Cache:
    """Recorded signatures, least recently used first, bounded; entries are
    dropped outside the lock (dropping one may run arbitrary __del__ code,
    even a call of the same function)."""

    def __init__(self, size, on_drop):
        self.size = size
        self.entries = collections.OrderedDict()
        self.lock = threading.Lock()
        self.on_drop = on_drop
        self.stats = {"hits": 0, "recordings": 0, "eager_calls": 0}

    def get(self, key):
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                self.entries.move_to_end(key)
            return entry

    def put(self, key, entry):
        with self.lock:
            self.entries[key] = entry
            dropped = [self.entries.popitem(last=False)[1] for _ in range(len(self.entries) - self.size)]
        for d in dropped:
            self.on_drop(d)

    def clear(self):
        with self.lock:
            dropped = list(self.entries.values())
            self.entries.clear()
        for d in dropped:
            self.on_drop(d)

    def info(self, fast_hits):
        with self.lock:
            eager = sum(1 for e in self.entries.values() if isinstance(e, str))
            return {**self.stats, "hits": self.stats["hits"] + fast_hits, "signatures": len(self.entries) - eager,
                    "eager_signatures": eager}


def jit(fun=None, *, static_argnums=(), static_argnames=(), runtime=None, cache_size=64):
    """fun recorded once per argument signature and replayed as one prepared
    program afterwards, as jax.jit and torch.compile do (Note [Jit
    signatures]). Usable as @jit or @jit(static_argnums=...). fun is numpy
    code on its arrays, as for tenferro.grad (tenferro calls, numpy
    operations and functions with a recording rule), and may call the
    tenferro transforms (jit(grad(f)) records the gradient). Arrays the
    function closes over are recorded with their values at the first call
    of a signature, as jax does. `cache_size`: recorded signatures kept
    (least recently used dropped)."""
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames, runtime=runtime,
                             cache_size=cache_size)
    nums, names, size = _check_options(fun, static_argnums, static_argnames, runtime, cache_size, "jit")
    _check_static(fun, nums, names)
    static = _static_test(nums, names)
    from . import _running

    warned = set()
    fast_ref = []  # a weak reference to the _Jit made below (the closures must not keep it alive)

    def fast():
        return fast_ref[0]() if fast_ref else None

    def dropped(entry):  # the fast path forgets what the cache forgets
        f = fast()
        if f is not None and isinstance(entry, _Recording) and entry.function is not None:
            f._remove(entry.function)

    cache = _Cache(size, dropped)
    float_values = {}  # signature without its float values: the signatures recorded (up to the warning)

    def warn(reason):
        if reason not in warned:
            warned.add(reason)
            _warn(fun, reason)

    def eagerly(args, kwargs):
        cache.stats["eager_calls"] += 1
        return fun(*args, **kwargs)

    def slow(*args, **kwargs):
        """A call the C++ fast path did not take (Note [Jit fast path] in
        python/src/tape.cpp)."""
        if getattr(_running, "tapes", None):
            return fun(*args, **kwargs)  # inside a transformation: its recording sees fun's operations
        try:
            key, arrays = _signature(args, kwargs, static)
        except _Eager as e:
            warn(f"{e}: such calls run eagerly")
            return eagerly(args, kwargs)
        if any(type(a) is Traced for a in arrays):  # values of a transformation (_signature takes them as arrays)
            return fun(*args, **kwargs)
        entry = cache.get(key)
        if entry is not None:
            if isinstance(entry, str):
                return eagerly(args, kwargs)
            cache.stats["hits"] += 1
            return entry(arrays)
        floats = _without_floats(key)
        if floats != key:  # a recording for each value of a Python float: say how to make it an argument
            if len(float_values) > 4 * size:  # bounded, as the cache is
                float_values.clear()
            seen = float_values.setdefault(floats, set())
            if len(seen) < _FLOAT_VALUES_WARNED:
                seen.add(key)
                if len(seen) == _FLOAT_VALUES_WARNED:
                    warn(f"calls differing only in Python float arguments were recorded {_FLOAT_VALUES_WARNED} "
                         f"times: a Python number is part of the signature (its value), so every new value records "
                         f"again; pass it as a numpy scalar of the arrays' dtype (np.float64(v), np.float32(v)) "
                         f"to make it an argument")
        try:
            result, entry = _record(fun, runtime, args, kwargs, arrays, static)
        except (_Eager,) + _UNRECORDED as e:  # numpy runs what tenferro does not record, or raises the same
            result = eagerly(args, kwargs)
            entry = f"{type(e).__name__}: {getattr(e, 'message', None) or e}"
        cache.stats["recordings"] += 1
        cache.put(key, entry)
        f = fast()
        if isinstance(entry, str):
            warn(f"{entry}; calls with this signature run eagerly")
        elif (f is not None and entry.function is not None and not nums and not any(k in names for k in kwargs)
              and all(type(a) in _FAST for a in args) and all(type(v) in _FAST for v in kwargs.values())):
            structure = entry.structure  # Note [Jit fast path]: arrays and plain values, matched in C++
            f._add([*args, *kwargs.values()], entry.function,
                   None if structure == ("o", 0) else (lambda outs: _result(structure, outs)), tuple(kwargs))
        return result

    jitted = _tenferro._Jit(slow, _running, size)
    fast_ref.append(weakref.ref(jitted))
    functools.update_wrapper(jitted, fun)

    def cache_info():
        """Recorded signatures and how calls ran: hits (a recording
        replayed), recordings, eager_calls, signatures, eager_signatures."""
        f = fast()
        return cache.info(f._hits if f is not None else 0)

    def set_aside():  # in a forked child (Note [Runtimes across fork]); no lock: its holder may not exist here
        _set_aside.append(list(cache.entries.values()))
        cache.entries.clear()
        cache.lock = threading.Lock()
        jitted._clear()

    jitted.cache_info = cache_info
    jitted.clear_cache = cache.clear
    jitted._set_aside_recordings = set_aside
    _live_jits.add(jitted)
    return jitted


# Note [Vmap calls]
# tenferro.vmap records fun again on every call, as jax.vmap traces it:
# nothing is kept between calls, so arrays fun reads from closures,
# globals or objects are read afresh (the compiler's and the runtime's
# caches, keyed by the program and not by bound values, make the repeated
# compile and prepare cheap). One call: the mapped axes are moved to the
# front; fun runs on Traced values of example 0 (a zero example for a batch
# of none) on a jit tape; the recording becomes a program over the batch
# (Note [Batching transform]), run in chunks of at most `max_bytes` of
# values (the batched program's value bytes scaled to the chunk); a function
# that cannot be recorded, or a recording with an operation that has no
# batching rule, runs fun once per example as plain code ("examples").
# Index guards (Note [Traced indices]) are outputs of the batched program,
# checked over the whole batch. Inside a running
# tenferro.grad or jit the recording is made on a tape nested in the
# running one and its batched program is applied to the whole batch on the
# running tape (GradientTape::apply_onto), so the enclosing call
# differentiates or replays one program; what cannot be batched there runs
# the examples one by one on the running tape.


def _vmap_call(fun, in_axes, out_axes, runtime, args, kwargs, max_bytes=None, examples=True, runs=None):
    """fun mapped over the batch (Note [Vmap calls]): (result, how it ran:
    "batched" or "examples"); without `examples`, (None,
    "examples") instead of running the examples one by one. `runs` (a
    list) gets the number of batched program runs (chunks) appended."""
    from . import _running

    moved, mapped_of, n = _moved(args, kwargs, in_axes)
    stack = getattr(_running, "tapes", None)
    if stack or _has_traced(moved) or _has_traced(kwargs):
        onto = _batched_onto(fun, runtime, moved, mapped_of, kwargs, n, stack[-1] if stack else None)
        if onto is not None:
            value, varying = onto
            return _placed(value, out_axes, varying), "batched"
        return (_by_example(fun, moved, mapped_of, kwargs, n, out_axes) if examples else None), "examples"
    try:
        arrays, batched = _batch_arrays(moved, kwargs, mapped_of)
        first = [(a[0] if n else _np.zeros(a.shape[1:], a.dtype)) if b else a for a, b in zip(arrays, batched)]
        _running.zero_example = n == 0  # a stand-in example: its index values are not checked (Note [Traced indices])
        try:
            tape, xs, traced, structure, read = _trace(fun, runtime, moved, kwargs, first, lambda k, m: False)
        finally:
            _running.zero_example = False
    except (_Eager,) + _UNRECORDED:
        read = True
    if read:  # numpy runs it, one example at a time
        if not examples:
            return None, "examples"
        if n == 0:
            raise ValueError("vmap: a function that tenferro cannot record cannot be mapped over an axis of length 0")
        return _by_example(fun, moved, mapped_of, kwargs, n, out_axes), "examples"
    guards = _guards(tape, traced)
    if not traced:  # a constant result
        return _placed(_broadcast_constants(_result(structure, []), structure, n), out_axes), "batched"
    try:
        programs = {n: tape.function(xs, traced, batched, n, guards)}
    except UnsupportedError:  # an operation without a batching rule
        if not examples:
            return None, "examples"
        return _by_example(fun, moved, mapped_of, kwargs, n, out_axes), "examples"
    chunk = n
    if max_bytes and n > 1 and programs[n].value_bytes > max_bytes:  # chunks whose values fit max_bytes
        chunk = max(1, int(n * max_bytes // programs[n].value_bytes))
        programs = {chunk: tape.function(xs, traced, batched, chunk, guards)}
    varying = _result(structure, programs[chunk].varying)
    if chunk >= n:  # one run (also for a batch of none)
        outputs = programs[chunk](*arrays)
    else:
        parts = []
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            if size not in programs:
                programs[size] = tape.function(xs, traced, batched, size, guards)
            parts.append(programs[size](*[a[start:start + size] if b else a for a, b in zip(arrays, batched)]))
        outputs = tuple(_np.concatenate(o) for o in zip(*parts))
    if runs is not None:
        runs.append(1 if chunk >= n else -(-n // chunk))
    return _placed(_broadcast_constants(_result(structure, outputs), structure, n), out_axes, varying), "batched"


def _batch_arrays(moved, kwargs, mapped_of):
    """The arrays of the positional and keyword arguments, in order, and
    whether each is mapped (_Eager for what jit cannot take)."""
    arrays, batched = [], []
    for where, a, m in zip(list(range(len(moved))) + list(kwargs), list(moved) + list(kwargs.values()), mapped_of):
        before = len(arrays)
        _flatten(a, arrays, f"argument {where!r}")
        batched += [m] * (len(arrays) - before)
    return arrays, batched


def _batched_onto(fun, runtime, moved, mapped_of, kwargs, n, running):
    """Inside a running tenferro.grad or jit (Note [Vmap calls]): fun
    recorded on example 0 on a tape nested in the running one, its batched
    program applied to the whole batch on the running tape (so the
    enclosing call differentiates or replays one program); None when that
    cannot be done (the caller runs the examples one by one); otherwise
    (the result, its structure of flags: True where an output depends on
    a mapped argument)."""
    from . import _run, default_runtime

    if n == 0:
        return None
    try:
        arrays, batched = _batch_arrays(moved, kwargs, mapped_of)
    except _Eager:
        return None
    rt = default_runtime() if runtime is None else runtime
    tape = _tenferro._tape_for(rt, [a for a in arrays if isinstance(a, Traced)], running)
    tape.jit = True
    values = [a._peek() if isinstance(a, Traced) else a for a in arrays]
    xs = [tape.argument(v[0] if b else v, i) for i, (v, b) in enumerate(zip(values, batched))]
    it = iter(xs)
    targs = [_rebuild(_flatten(a, [], ""), it) for a in moved]
    tkwargs = {k: _rebuild(_flatten(v, [], ""), it) for k, v in kwargs.items()}  # in _batch_arrays' order
    try:
        out = _run(tape, fun, *targs, **tkwargs)
        traced = []
        structure = _outputs(out, traced)
        if tape.value_read:
            return None
        guards = _guards(tape, traced)
        outputs, varying = tape.apply_batched(xs, arrays, traced, batched, n) if traced else ((), ())
    except (_Eager,) + _UNRECORDED:
        return None
    for k, (extent, axis) in enumerate(guards):  # the batch's guard values, guarded on the running tape
        lo, hi = outputs[len(outputs) - 2 * len(guards) + 2 * k:][:2]
        _traced._index_guard(_tenferro._traced_reduce("reduce_min", lo, [0]),
                             _tenferro._traced_reduce("reduce_max", hi, [0]), extent, axis)
    return _broadcast_constants(_result(structure, outputs), structure, n), _result(structure, varying)


def _moved(args, kwargs, in_axes):
    """The arguments with their mapped axes first (keyword arguments mapped
    over axis 0, as jax.vmap maps them), whether each positional and then
    keyword argument is mapped, and the batch size."""
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(args):
            raise ValueError(f"vmap: in_axes has {_entries(len(in_axes))}, the call has {len(args)} positional "
                             f"argument{'' if len(args) == 1 else 's'}")
        axes = list(in_axes)
    else:
        axes = [in_axes] * len(args)
    sizes = set()

    def move(value, axis, where):
        if axis is None:
            return value
        if isinstance(value, (tuple, list)):
            items = [move(v, axis, f"{where}[{i}]") for i, v in enumerate(value)]
            return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
        if type(value) is dict:
            return {k: move(v, axis, f"{where}[{k!r}]") for k, v in value.items()}
        array = value if isinstance(value, Traced) else _np.asarray(value)
        try:
            axis = operator.index(axis)
        except TypeError:
            raise TypeError(f"vmap: expected in_axes entries that are ints or None, found {axis!r}") from None
        if not -array.ndim <= axis < array.ndim:
            raise ValueError(f"vmap: in_axes {axis} is out of range for {where} of shape {tuple(array.shape)}")
        moved = _np.moveaxis(array, axis, 0) if axis % array.ndim else array
        sizes.add(moved.shape[0])
        return moved

    moved = [move(a, ax, f"argument {i}") for i, (a, ax) in enumerate(zip(args, axes))]
    for k in kwargs:
        kwargs[k] = move(kwargs[k], 0, f"argument {k!r}")
    if not sizes:
        raise ValueError("vmap: in_axes maps no argument (at least one must not be None)")
    if len(sizes) > 1:
        raise ValueError(f"vmap: the mapped axes have different lengths {sorted(sizes)}")
    return moved, [ax is not None for ax in axes] + [True] * len(kwargs), sizes.pop()


def _by_example(fun, moved, mapped_of, kwargs, n, out_axes):
    def pick(value, k):
        if isinstance(value, (tuple, list)):
            items = [pick(v, k) for v in value]
            return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
        if type(value) is dict:
            return {key: pick(v, k) for key, v in value.items()}
        return value[k]

    results = [fun(*[pick(a, k) if m else a for a, m in zip(moved, mapped_of)],
                   **{key: pick(v, k) for key, v in kwargs.items()}) for k in range(n)]
    return _stacked(results, out_axes)


def _stacked(results, out_axes):
    """Per-example results stacked along the mapped axis, placed at out_axes."""
    first = results[0]
    if isinstance(first, (tuple, list)):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else [out_axes] * len(first)
        items = [_stacked([r[i] for r in results], axes[i]) for i in range(len(first))]
        return type(first)._make(items) if hasattr(type(first), "_make") else type(first)(items)
    if type(first) is dict:
        return {k: _stacked([r[k] for r in results], out_axes) for k in first}
    if out_axes is None:
        if any(not _np.array_equal(r, first, equal_nan=True) for r in results[1:]):
            raise ValueError(_UNMAPPED)
        return first
    return _np.stack(results, axis=_out_axis(out_axes, _np.ndim(first) + 1))


_UNMAPPED = ("vmap: out_axes is None for an output that depends on a mapped argument (None is for outputs that "
             "are the same for every example)")


def _placed(value, out_axes, varying=None):
    """A batched result (mapped axis first) with its mapped axes at out_axes
    (an int, None: the example's value, or one entry per top-level output).
    `varying`: the result's structure with True where an output depends on
    a mapped argument (the batched program's flags); such an output with
    out_axes None is a ValueError, as in jax."""
    if isinstance(out_axes, (tuple, list)):
        if not isinstance(value, (tuple, list)) or len(out_axes) != len(value):
            raise ValueError(f"vmap: out_axes has {_entries(len(out_axes))}, fun returned {_describe(value)}")
        flags = varying if isinstance(varying, (tuple, list)) else [None] * len(value)
        items = [_placed(v, ax, f) for v, ax, f in zip(value, out_axes, flags)]
        return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
    if out_axes == 0:
        return value
    if out_axes is None:
        if _any_true(varying):
            raise ValueError(_UNMAPPED)
        return _map_arrays(value, lambda a: a[0])
    return _map_arrays(value, lambda a: _np.moveaxis(a, 0, _out_axis(out_axes, len(a.shape))))


def _entries(n):
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _out_axis(axis, ndim):
    """out_axes `axis` for a batched output of `ndim` dimensions (the
    mapped one included): a typed error naming out_axes, where numpy's
    moveaxis would name its own `destination`."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"vmap: expected out_axes entries that are ints or None, found {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"vmap: out_axes {axis} is out of range for an output of {ndim - 1} dimension"
                        f"{'' if ndim == 2 else 's'} and the mapped one (expected {-ndim} <= out_axes < {ndim})")
    return axis


def _any_true(flags):
    if flags is True:
        return True
    if isinstance(flags, (tuple, list)):
        return any(_any_true(f) for f in flags)
    if isinstance(flags, dict):
        return any(_any_true(f) for f in flags.values())
    return False


def _describe(value):
    return f"a {type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list)) else "one value"


def vmap(fun, in_axes=0, out_axes=0, *, runtime=None, max_bytes=None):
    """fun mapped over an axis of its arguments, as jax.vmap (Note [Vmap
    calls]): in_axes (an int, None, or one per positional argument, applied
    to every array inside it) names the mapped axis of each positional
    argument (None: not mapped); keyword arguments are mapped over axis 0.
    out_axes (an int, None, or one per top-level output) is where the
    mapped axis goes in the result. fun is recorded on one example on every
    call and the recording runs as a program over the whole batch (Note
    [Batching transform]), in chunks whose values take at most `max_bytes`
    when given; what cannot be recorded runs once per example."""
    _check_options(fun, (), (), runtime, 1, "vmap")
    counts = {"batched": 0, "examples": 0, "chunks": 0}

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        runs = []
        result, how = _vmap_call(fun, in_axes, out_axes, runtime, args, dict(kwargs), max_bytes, runs=runs)
        counts[how] += 1
        counts["chunks"] += sum(runs)
        return result

    vmapped.call_counts = lambda: dict(counts)
    vmapped.call_counts.__doc__ = ("How the calls ran: batched (one program over the batch, in `chunks` runs), examples "
                                   "(fun per example).")
    return vmapped


def _map_arrays(value, fn):
    if isinstance(value, (_np.ndarray, Traced)):  # Traced: a vmap inside a transform
        return fn(value)
    if isinstance(value, (tuple, list)):
        items = [_map_arrays(v, fn) for v in value]
        return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
    if type(value) is dict:
        return {k: _map_arrays(v, fn) for k, v in value.items()}
    return value


def _broadcast_constants(value, structure, n):
    """A batched result: constants of the example's result (not computed
    from the arguments) repeated along the mapped axis, as jax.vmap gives
    them."""
    kind = structure[0]
    if kind == "o":
        return value
    if kind == "c":
        if isinstance(structure[1], (_np.ndarray, _np.generic, int, float, complex)):
            c = _np.asarray(structure[1])
            return _np.broadcast_to(c, (n,) + c.shape).copy()
        return value
    if kind is dict:
        return {k: _broadcast_constants(value[k], s, n) for k, s in structure[1]}
    items = [_broadcast_constants(v, s, n) for v, s in zip(value, structure[1])]
    return kind._make(items) if hasattr(kind, "_make") else kind(items)


def _warn(fun, message):
    warnings.warn(f"tenferro.jit({getattr(fun, '__name__', 'fun')}): {message}", RuntimeWarning, stacklevel=3)
