"""tenferro.jit: record a numpy function once per argument signature, then
run the recording as one prepared program (docs/python.md, "tenferro.jit").

Note [Jit signatures]
A call's arguments (positional and keyword, through tuples, lists and
dicts) are split into arrays and everything else. Arrays (numpy arrays and
numpy scalars of bool, int32, int64, float32, float64, complex64 or
complex128) are the program's parameters: only their dtypes and shapes
enter the signature. Everything else (Python numbers, strings, None, the
arguments named by static_argnums / static_argnames) is part of the
signature by value, as jax's static arguments: a new value records again.
The first call of a signature runs the function on Traced values of a tape
marked for jit (Note [Jit recordings] in python/src/tape.cpp), returns what
it computed and keeps the recording as a program (Note [Recorded functions]
in gradient_tape.h); later calls only run that program. A signature whose
recording cannot be replayed -- the function read a value (bool(), float(),
.item(), a comparison in Python control flow), used something that is not
recorded, or took an array of another dtype -- runs eagerly from then on,
with one RuntimeWarning saying why. Inside tenferro.grad or another jit the
function is called as it is, so that the enclosing recording sees it.
"""

import collections
import functools
import operator
import threading
import warnings

import numpy as _np

from . import _tenferro
from ._errors import Error

Traced = _tenferro.Traced

# The dtypes of array arguments a recording takes.
_DTYPES = frozenset(_np.dtype(d) for d in ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128"))


class _Eager(Exception):
    """A call that cannot be recorded (its reason), run eagerly."""


def _flatten(value, arrays, where):
    """The signature of `value` (hashable), its arrays appended to `arrays`
    (Note [Jit signatures])."""
    if isinstance(value, (_np.ndarray, _np.generic)):
        if value.dtype not in _DTYPES:
            raise _Eager(f"{where} is an array of dtype {value.dtype}")
        arrays.append(value)
        return ("a", value.dtype, value.shape)
    if isinstance(value, Traced):
        raise _Eager("Traced")  # not reached: callers inline first
    if type(value) in (tuple, list):
        return (type(value), tuple(_flatten(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)))
    if type(value) is dict:
        return (dict, tuple((k, _flatten(value[k], arrays, f"{where}[{k!r}]")) for k in sorted(value)))
    try:
        hash(value)
    except TypeError:
        raise _Eager(f"{where} (a {type(value).__name__}) is neither an array nor hashable") from None
    return ("s", type(value), value)


def _rebuild(signature, values):
    """The value of `signature` with the next of `values` (an iterator) for
    each array."""
    kind = signature[0]
    if kind == "a":
        return next(values)
    if kind == "s":
        return signature[2]
    if kind is dict:
        return {k: _rebuild(s, values) for k, s in signature[1]}
    return kind(_rebuild(s, values) for s in signature[1])


def _has_traced(value):
    if isinstance(value, Traced):
        return True
    if type(value) in (tuple, list):
        return any(_has_traced(v) for v in value)
    if type(value) is dict:
        return any(_has_traced(v) for v in value.values())
    return False


def _outputs(value, traced, tape):
    """The structure of fun's result: Traced values of `tape` become
    ("o", k), k their position in `traced`; the rest stays as it is."""
    if isinstance(value, Traced):
        traced.append(value)
        return ("o", len(traced) - 1)
    if type(value) in (tuple, list):
        return (type(value), tuple(_outputs(v, traced, tape) for v in value))
    if type(value) is dict:
        return (dict, tuple((k, _outputs(v, traced, tape)) for k, v in value.items()))
    return ("c", _np.copy(value) if isinstance(value, _np.ndarray) else value)


def _result(structure, outputs):
    kind = structure[0]
    if kind == "o":
        return outputs[structure[1]]
    if kind == "c":
        value = structure[1]
        return value.copy() if isinstance(value, _np.ndarray) else value
    if kind is dict:
        return {k: _result(s, outputs) for k, s in structure[1]}
    return kind(_result(s, outputs) for s in structure[1])


def _value(t):
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
    if not callable(fun):
        raise TypeError(f"jit: expected a function, found {type(fun).__name__}")
    nums = (static_argnums,) if not isinstance(static_argnums, (tuple, list)) else tuple(static_argnums)
    nums = frozenset(operator.index(i) for i in nums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    names = frozenset(names)
    if int(cache_size) < 1:
        raise ValueError(f"jit: expected cache_size >= 1, found {cache_size}")
    from . import _run, _running, default_runtime  # the package defines them before importing this module

    cache = collections.OrderedDict()
    lock = threading.Lock()
    stats = {"hits": 0, "recordings": 0, "eager_calls": 0}

    def signature(args, kwargs):
        arrays = []
        n = len(args)
        key = []
        for i, a in enumerate(args):
            if i in nums or i - n in nums:
                try:
                    hash(a)
                except TypeError:
                    raise TypeError(f"jit: static argument {i} must be hashable, found {type(a).__name__}") from None
                key.append(("s", type(a), a))
            else:
                key.append(_flatten(a, arrays, f"argument {i}"))
        for k in sorted(kwargs):
            v = kwargs[k]
            key.append((k, ("s", type(v), v) if k in names else _flatten(v, arrays, f"argument {k!r}")))
        return tuple(key), arrays

    def record(key, args, kwargs, arrays):
        """Runs fun on a jit tape: (this call's result, the cache entry)."""
        rt = default_runtime() if runtime is None else runtime
        tape = _tenferro._tape_for(rt, (), None)
        tape.jit = True
        xs = [tape.argument(a, i) for i, a in enumerate(arrays)]
        it = iter(xs)
        n = len(args)
        targs = [a if (i in nums or i - n in nums) else _rebuild(key[i], it) for i, a in enumerate(args)]
        tkwargs = {}
        for k, entry in zip(sorted(kwargs), key[n:]):
            tkwargs[k] = kwargs[k] if k in names else _rebuild(entry[1], it)
        out = _run(tape, fun, *targs, **tkwargs)
        traced = []
        structure = _outputs(out, traced, tape)
        if tape.value_read:
            return _result(structure, [_value(t) for t in traced]), (
                "the function reads a traced value (bool(), float(), .item(), .numpy() or a comparison in Python "
                "control flow), so its recording cannot be replayed")
        function = tape.function(xs, traced) if traced else None
        values = [_value(t) for t in traced]
        return _result(structure, values), _Recording(function, structure)

    def eagerly(args, kwargs):
        stats["eager_calls"] += 1
        return fun(*args, **kwargs)

    def slow(*args, **kwargs):
        """A call the C++ fast path did not take (Note [Jit fast path] in
        python/src/tape.cpp)."""
        if getattr(_running, "tapes", None) or _has_traced(args) or _has_traced(kwargs):
            return fun(*args, **kwargs)  # inside a transformation: its recording sees fun's operations
        try:
            key, arrays = signature(args, kwargs)
        except _Eager as e:
            _warn(fun, f"{e}: this call runs eagerly")
            return eagerly(args, kwargs)
        entry = cache.get(key)
        if entry is not None:
            if isinstance(entry, str):
                return eagerly(args, kwargs)
            stats["hits"] += 1
            with lock:
                if key in cache:
                    cache.move_to_end(key)
            return entry(arrays)
        try:
            result, entry = record(key, args, kwargs, arrays)
        except Error as e:  # something tenferro does not record: numpy runs it
            entry = f"{type(e).__name__}: {e.message if hasattr(e, 'message') else e}"
            result = None
        stats["recordings"] += 1
        with lock:
            cache[key] = entry
            while len(cache) > cache_size:
                cache.popitem(last=False)
        if isinstance(entry, str):
            _warn(fun, f"{entry}; calls with this signature run eagerly")
            return eagerly(args, kwargs) if result is None else result
        if entry.function is not None and not kwargs and not nums and all(type(a) is _np.ndarray for a in args):
            structure = entry.structure
            fast._add(arrays, entry.function, None if structure == ("o", 0) else (lambda outs: _result(structure, outs)))
        return result

    def cache_info():
        """Recorded signatures and how calls ran: hits (a recording
        replayed), recordings, eager_calls, signatures, eager_signatures."""
        with lock:
            eager = sum(1 for e in cache.values() if isinstance(e, str))
            return {**stats, "hits": stats["hits"] + fast._hits, "signatures": len(cache) - eager,
                    "eager_signatures": eager}

    def clear_cache():
        with lock:
            cache.clear()
            fast._clear()

    fast = _tenferro._Jit(slow, _running, int(cache_size))
    functools.update_wrapper(fast, fun)
    fast.cache_info = cache_info
    fast.clear_cache = clear_cache
    return fast


def _warn(fun, message):
    warnings.warn(f"tenferro.jit({getattr(fun, '__name__', 'fun')}): {message}", RuntimeWarning, stacklevel=3)
