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
# None, dtypes -- are part of the signature by value (floats by their bits,
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
import operator
import struct
import threading
import warnings
import weakref

import numpy as _np

from . import _tenferro
from ._errors import Error, UnsupportedError

Traced = _tenferro.Traced

# The dtypes of array arguments a recording takes.
_DTYPES = frozenset(_np.dtype(d) for d in ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128"))
# Values keyed by themselves (Note [Jit signatures]).
_VALUES = (int, str, bytes, type(None), _np.integer, _np.bool_, _np.dtype, type, type(Ellipsis), slice)
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
    if t is _np.ndarray or isinstance(value, (_np.floating, _np.complexfloating)):
        if value.dtype not in _DTYPES:
            raise _Eager(f"{where} is an array of dtype {value.dtype}")
        arrays.append(value)
        return ("a", value.dtype, value.shape)
    if t in (float, complex):
        return ("s", t, _number_key(value))
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
    array = t.numpy()
    return array[()] if array.ndim == 0 else array


class _Recording:
    """One signature's program and the structure of its result; `looped`:
    a vmap recording of one example (its program had no batched form)."""

    __slots__ = ("function", "structure", "looped")

    def __init__(self, function, structure, looped=False):
        self.function = function
        self.structure = structure
        self.looped = looped

    def __call__(self, arrays):
        outputs = self.function(*arrays) if self.function is not None else ()
        return _result(self.structure, outputs)


def _record(fun, runtime, args, kwargs, arrays, static, batched=None, batch_size=0):
    """Runs fun on a jit tape, its arrays Traced (for vmap: example 0 of the
    batched ones): (this call's result, a _Recording), or (result, reason)
    when the recording cannot be replayed. `static(i_or_name)`: whether an
    argument is passed as it is."""
    from . import _run, default_runtime

    rt = default_runtime() if runtime is None else runtime
    tape = _tenferro._tape_for(rt, (), None)
    tape.jit = True
    examples = arrays if batched is None else [a[0] if b else a for a, b in zip(arrays, batched)]
    xs = [tape.argument(a, i) for i, a in enumerate(examples)]
    it = iter(xs)
    targs = [a if static(i, len(args)) else _rebuild(_flatten(a, [], ""), it) for i, a in enumerate(args)]
    tkwargs = {k: (v if static(k, 0) else _rebuild(_flatten(v, [], ""), it)) for k, v in kwargs.items()}
    out = _run(tape, fun, *targs, **tkwargs)
    traced = []
    structure = _outputs(out, traced)
    read = tape.value_read  # before _value reads the results
    result = _result(structure, [_value(t) for t in traced])  # what the recorded calls computed
    if read:
        return result, ("the function reads a traced value (bool(), float(), .item(), .numpy() or a comparison in "
                        "Python control flow), so its recording cannot be replayed")
    if not traced:
        return result, _Recording(None, structure)
    if batched is not None:
        try:
            return result, _Recording(tape.function(xs, traced, batched, batch_size), structure)
        except UnsupportedError:  # an operation without a batching rule: the example's program, once per example
            return result, _Recording(tape.function(xs, traced), structure, looped=True)
    return result, _Recording(tape.function(xs, traced), structure)


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
            try:
                hash(a)
            except TypeError:
                raise TypeError(f"jit: static argument {i} must be hashable, found {type(a).__name__}") from None
            key.append(("s", type(a), a))
        else:
            key.append(_flatten(a, arrays, f"argument {i}"))
    for k in sorted(kwargs):
        v = kwargs[k]
        if static(k, 0):
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"jit: static argument {k!r} must be hashable, found {type(v).__name__}") from None
            key.append((k, ("s", type(v), v)))
        else:
            key.append((k, _flatten(v, arrays, f"argument {k!r}")))
    return tuple(key), arrays


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
            looped = sum(1 for e in self.entries.values() if isinstance(e, _Recording) and e.looped)
            info = {**self.stats, "hits": self.stats["hits"] + fast_hits, "signatures": len(self.entries) - eager,
                    "eager_signatures": eager}
            return {**info, "looped_signatures": looped} if looped else info


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
        if getattr(_running, "tapes", None) or _has_traced(args) or _has_traced(kwargs):
            return fun(*args, **kwargs)  # inside a transformation: its recording sees fun's operations
        try:
            key, arrays = _signature(args, kwargs, static)
        except _Eager as e:
            warn(f"{e}: such calls run eagerly")
            return eagerly(args, kwargs)
        entry = cache.get(key)
        if entry is not None:
            if isinstance(entry, str):
                return eagerly(args, kwargs)
            cache.stats["hits"] += 1
            return entry(arrays)
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
        elif (f is not None and entry.function is not None and not kwargs and not nums
              and all(type(a) is _np.ndarray for a in args)):
            structure = entry.structure
            f._add(arrays, entry.function, None if structure == ("o", 0) else (lambda outs: _result(structure, outs)))
        return result

    jitted = _tenferro._Jit(slow, _running, size)
    fast_ref.append(weakref.ref(jitted))
    functools.update_wrapper(jitted, fun)

    def cache_info():
        """Recorded signatures and how calls ran: hits (a recording
        replayed), recordings, eager_calls, signatures, eager_signatures."""
        f = fast()
        return cache.info(f._hits if f is not None else 0)

    jitted.cache_info = cache_info
    jitted.clear_cache = cache.clear
    return jitted


def vmap(fun, in_axes=0, out_axes=0, *, runtime=None, cache_size=16):
    """fun mapped over an axis of its arguments, as jax.vmap: in_axes (an
    int, None, or one per positional argument) names the mapped axis of
    each argument's arrays (None: not mapped), out_axes where the mapped
    axis goes in every array of the result. fun is recorded on one example
    and the recording is turned into a program over the whole batch (Note
    [Batching transform]); a function that cannot be recorded, or whose
    recording has an operation without a batching rule, runs once per
    example (numpy stacks the results). Inside tenferro.grad or jit the
    examples run one by one as plain calls, so that the enclosing recording
    sees them."""
    nums, names, size = _check_options(fun, (), (), runtime, cache_size, "vmap")
    cache = _Cache(size, lambda entry: None)

    def axes_of(args):
        if isinstance(in_axes, (tuple, list)):
            if len(in_axes) != len(args):
                raise ValueError(f"vmap: in_axes has {len(in_axes)} entries, the call {len(args)} positional arguments")
            return list(in_axes)
        return [in_axes] * len(args)

    def mapped(args):
        """The arguments with every mapped axis moved to the front, and the batch size."""
        axes = axes_of(args)
        sizes = set()

        def move(value, axis):
            if axis is None:
                return value
            if isinstance(value, (tuple, list)):
                return type(value)(move(v, axis) for v in value)
            if type(value) is dict:
                return {k: move(v, axis) for k, v in value.items()}
            array = _np.asarray(value)
            if array.ndim == 0:
                raise ValueError(f"vmap: in_axes {axis} given for a 0-d argument")
            moved = _np.moveaxis(array, operator.index(axis), 0)
            sizes.add(moved.shape[0])
            return moved

        moved = [move(a, ax) for a, ax in zip(args, axes)]
        if not sizes:
            raise ValueError("vmap: in_axes maps no argument (at least one must not be None)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: the mapped axes have different sizes {sorted(sizes)}")
        return moved, axes, sizes.pop()

    def example(moved, axes, k):
        def pick(value, axis):
            if axis is None:
                return value
            if isinstance(value, (tuple, list)):
                return type(value)(pick(v, axis) for v in value)
            if type(value) is dict:
                return {key: pick(v, axis) for key, v in value.items()}
            return value[k]

        return [pick(a, ax) for a, ax in zip(moved, axes)]

    def stacked(results, n):
        first = results[0]
        if isinstance(first, (tuple, list)):
            items = [stacked([r[i] for r in results], n) for i in range(len(first))]
            return first._make(items) if hasattr(type(first), "_make") else type(first)(items)
        if type(first) is dict:
            return {k: stacked([r[k] for r in results], n) for k in first}
        return _np.moveaxis(_np.stack(results), 0, out_axes) if out_axes != 0 else _np.stack(results)

    def by_example(moved, axes, n, kwargs):
        return stacked([fun(*example(moved, axes, k), **kwargs) for k in range(n)], n)

    def out_moved(structure_result):
        if out_axes == 0:
            return structure_result
        return _map_arrays(structure_result, lambda a: _np.moveaxis(a, 0, out_axes))

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        from . import _running

        moved, axes, n = mapped(args)
        if getattr(_running, "tapes", None) or _has_traced(args) or _has_traced(kwargs) or n == 0:
            return by_example(moved, axes, n, kwargs)
        batched_of = []  # per array of the signature, in order
        try:
            arrays = []
            key = [n, tuple(ax is not None for ax in axes)]
            for a, ax in zip(moved, axes):
                before = len(arrays)
                key.append(_flatten(a, arrays, "argument"))
                batched_of += [ax is not None] * (len(arrays) - before)
            for k in sorted(kwargs):
                before = len(arrays)
                key.append((k, _flatten(kwargs[k], arrays, f"argument {k!r}")))
                batched_of += [False] * (len(arrays) - before)
            key = tuple(key)
        except _Eager:
            return by_example(moved, axes, n, kwargs)
        entry = cache.get(key)
        if entry is None:
            try:
                _, entry = _record(fun, runtime, moved, kwargs, arrays, lambda k, m: False, batched_of, n)
            except (_Eager,) + _UNRECORDED as e:
                entry = f"{type(e).__name__}: {getattr(e, 'message', None) or e}"
            cache.stats["recordings"] += 1
            cache.put(key, entry)
        if isinstance(entry, str):
            cache.stats["eager_calls"] += 1
            return by_example(moved, axes, n, kwargs)
        cache.stats["hits"] += 1
        if entry.looped:  # the example's program once per example
            results = [entry([a[k] if b else a for a, b in zip(arrays, batched_of)]) for k in range(n)]
            return stacked(results, n)
        return out_moved(_broadcast_constants(entry(arrays), entry.structure, n))

    vmapped.cache_info = lambda: cache.info(0)
    vmapped.clear_cache = cache.clear
    return vmapped


def _map_arrays(value, fn):
    if isinstance(value, _np.ndarray):
        return fn(value)
    if isinstance(value, (tuple, list)):
        items = [_map_arrays(v, fn) for v in value]
        return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
    if type(value) is dict:
        return {k: _map_arrays(v, fn) for k, v in value.items()}
    return value


def _broadcast_constants(value, structure, n):
    """A vmapped result: constants of the example's result (not computed from
    the arguments) repeated along the batch axis, as jax.vmap gives them."""
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
