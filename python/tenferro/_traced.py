"""Traced values behave as arrays inside tenferro.vjp / grad (docs/python.md)."""

# Note [Traced array protocol]
# A Traced value is one recorded tensor of a GradientTape (Note [Traced
# values] in python/src/tape.h). Everything a numpy user writes on it is
# recorded as a core operation of the tape, so that its gradient comes from
# the same AD rules as a traced program:
#
# - operators (+ - * / ** @, unary - and abs) and numpy's ufuncs
#   (__array_ufunc__: exp, log, sqrt, sin, maximum, ...) become elementwise
#   core ops after numpy's broadcasting (broadcast_in_dim) and dtype
#   promotion (convert; Python scalars are weak, as in numpy 2);
# - sum/mean, transpose/.T, reshape, basic indexing (integers, slices of
#   any step, None, ...) become reduce_sum, transpose, reshape, slice and
#   reverse; one integer array or boolean mask as the index (or one array
#   among basic indices), and np.take, become a gather; matmul and dot
#   become einsums;
# - numpy functions with a tenferro counterpart (__array_function__:
#   np.einsum, np.sum, np.linalg.*, np.fft.*, np.where, ...) call it.
#
# A numpy function or ufunc without a recording rule raises UnsupportedError
# naming it, instead of computing on a copy that silently has no gradient
# (call .numpy() to leave the tape on purpose). Comparisons give plain
# boolean arrays of the eager values (they have no gradient; np.where turns
# them into a select that has one).

import builtins
import operator

import numpy as _np

from . import _tenferro
from ._errors import AxisError, InvalidArgumentError, UnsupportedError

Traced = _tenferro.Traced


def _invalid(message, code="kInvalidArgument"):
    return InvalidArgumentError(message, code=code, canonical="kInvalidArgument")


def _unsupported(what):
    return UnsupportedError(
        f"{what} is not recorded inside tenferro.grad / jit (call .numpy() for a value without a gradient)",
        code="kUnsupported",
        canonical="kUnsupported",
    )


_SCALARS = (bool, int, float, complex)


def _is_scalar(x):
    return type(x) in _SCALARS


def _result_dtype(operands):
    """numpy 2's promotion: Traced values and arrays are strong, Python
    scalars weak (they only lift a real result to complex). Arithmetic is
    recorded in floating and complex dtypes only: integer or boolean
    Traced values that would promote to an integer (under tenferro.jit) are
    an UnsupportedError (numpy's integer arithmetic, wrapping and floor
    division included, would otherwise silently become float64's)."""
    strong = [x.dtype if isinstance(x, Traced) else _np.asarray(x).dtype for x in operands if not _is_scalar(x)]
    if not strong:
        strong = [_np.dtype(_np.complex128 if any(type(x) is complex for x in operands) else _np.float64)]
    dtype = strong[0] if all(d == strong[0] for d in strong) else _np.result_type(*strong)
    if dtype.kind not in "fc":
        if any(isinstance(x, Traced) and x.dtype.kind not in "fc" for x in operands):
            raise _unsupported(f"arithmetic on {dtype} values")
        dtype = _np.dtype(_np.float64)
    if dtype.kind == "f" and any(type(x) is complex for x in operands):
        dtype = _np.result_type(dtype, _np.complex64)
    return dtype


def _shape(x):
    return tuple(x.shape) if isinstance(x, Traced) else _np.shape(x)


def _convert(x, dtype):
    return x if x.dtype == dtype else _tenferro._traced_convert(x, dtype.name)


def _broadcast(x, shape):
    """x (Traced) broadcast to `shape` as numpy broadcasts."""
    if x.shape == tuple(shape):
        return x
    lead = len(shape) - x.ndim
    return _tenferro._traced_broadcast_in_dim(x, list(shape), list(range(lead, len(shape))))


def _aligned(operands, dtype, shape=None):
    """Each operand as `dtype`, and broadcast to `shape` when given: Traced
    values through convert / broadcast_in_dim, the rest as constants."""
    out = []
    for x in operands:
        if isinstance(x, Traced):
            x = _convert(x, dtype)
            out.append(x if shape is None else _broadcast(x, shape))
        else:
            a = _np.asarray(x, dtype=dtype)
            out.append(a if shape is None or a.shape == shape else _np.broadcast_to(a, shape))
    return out


def _elementwise(name, *operands):
    """Core elementwise op `name` over numpy-broadcast, promoted operands."""
    shapes = [() if _is_scalar(x) else _shape(x) for x in operands]
    shape = shapes[0]
    if any(s != shape for s in shapes):  # np.broadcast_shapes costs microseconds
        try:
            shape = _np.broadcast_shapes(*shapes)
        except ValueError as e:
            raise _invalid(f"{name}: operands could not be broadcast together ({e})", "kShapeMismatch") from None
    return _tenferro._traced_op(name, _aligned(operands, _result_dtype(operands), shape))


def _power(a, b):
    """a ** b; like numpy, the common scalar exponents become cheaper ops
    (x ** 2 is x * x: no pow per element, forward or backward)."""
    if isinstance(a, Traced) and _is_scalar(b) and not isinstance(b, complex):  # weak: a's dtype stays
        if b == 2:
            return _square(a)
        if b == 1:
            return a
        if b == 0.5:
            return _unary("sqrt")(a)
        if b == -1:
            return _reciprocal(a)
    return _elementwise("pow", a, b)


def _unary(name):
    return lambda x: _tenferro._traced_op(name, [x])


def _reciprocal(x):
    return _elementwise("div", 1.0, x)


def _square(x):
    return _elementwise("mul", x, x)


def _log_base(base):
    """log(x) / log(base), exact at powers of the base as numpy's log2 and
    log10 are (floor(log10(1e-5)) is -5): where base ** round(y) == x the
    difference to round(y) is added as a term of derivative 0 (a multiple
    of 2^-60, so rounding it at that scale is exact). A Python float for
    the constants (weak, as numpy takes it): float32 stays float32."""

    def log(x):
        y = _elementwise("div", _unary("log")(x), float(_np.log(base)))
        if y.dtype.kind == "c":
            return y
        r = _round(y)
        exact = _logical("and")(_UFUNCS[_np.equal](_elementwise("pow", float(base), r), x),
                                _UFUNCS[_np.isfinite](y))  # log of 0 or inf stays -inf / inf
        gap = _elementwise("mul", _round(_elementwise("mul", _elementwise("sub", r, y), 2.0 ** 60)), 2.0 ** -60)
        return _elementwise("add", y, _where(exact, gap, 0.0))

    return log


def _cosh(x):
    """(e^x + e^-x) / 2; for real |x| >= 700, (e^(|x|/2) / 2) e^(|x|/2) (no
    overflow before cosh itself overflows, an ulp or two from numpy's). Each branch reads x only where it is
    taken (a branch's inf would make 0 * inf = NaN in its derivative), and
    the branch at 0 is smooth: no |x| kink there to lose the curvature."""
    def two_sided(v):
        return _elementwise("mul", _elementwise("add", _unary("exp")(v), _unary("exp")(-v)), 0.5)
    if x.dtype.kind == "c":
        return two_sided(x)
    small = _UFUNCS[_np.less](_unary("abs")(x), 700.0)
    half = _unary("exp")(_elementwise("mul", _unary("abs")(_where(small, 700.0, x)), 0.5))
    large = _elementwise("mul", _elementwise("mul", half, 0.5), half)
    return _where(small, two_sided(_where(small, x, 0.0)), large)


def _sinh(x):
    """Through expm1 near 0 (exp(x) - exp(-x) cancels there) and as
    sign(x) ((e^(|x|/2) / 2) e^(|x|/2) - e^-|x| / 2) beyond 1 for real x
    (no early overflow); each branch reads x only where it is taken, as in
    _cosh."""
    def near_zero(v):
        return _elementwise("mul", _elementwise("sub", _unary("expm1")(v), _unary("expm1")(-v)), 0.5)
    if x.dtype.kind == "c":
        return near_zero(x)
    small = _UFUNCS[_np.less](_unary("abs")(x), 1.0)
    xl = _where(small, 1.0, x)
    ax = _unary("abs")(xl)
    half = _unary("exp")(_elementwise("mul", ax, 0.5))
    large = _elementwise("mul", _unary("sign")(xl),
                         _elementwise("sub", _elementwise("mul", _elementwise("mul", half, 0.5), half),
                                      _elementwise("mul", _unary("exp")(-ax), 0.5)))
    return _where(small, near_zero(_where(small, x, 0.0)), large)


def _logaddexp(a, b):
    """a + log1p(e^(b - a)) where a >= b, else b + log1p(e^(a - b)): each
    branch is smooth where it is taken, ties included (max(a, b) + log1p(
    e^-|a - b|) has the same values but drops the curvature at a == b),
    and reads the difference only where it is taken (e^d <= 1). a where a
    and b are the same infinity (their difference is NaN; numpy gives the
    infinity)."""
    first = _UFUNCS[_np.greater_equal](a, b)
    d = _elementwise("sub", b, a)
    log1p_exp = lambda v: _unary("log1p")(_unary("exp")(v))  # noqa: E731
    general = _where(first, _elementwise("add", a, log1p_exp(_where(first, d, 0.0))),
                     _elementwise("add", b, log1p_exp(_where(first, 0.0, -d))))
    same_infinity = _logical("and")(_UFUNCS[_np.equal](a, b), _logical_not(_UFUNCS[_np.isfinite](
        a if isinstance(a, Traced) else _np.asarray(a, dtype=general.dtype))))
    return _where(same_infinity, a, general)


def _conj(x):
    return x if x.dtype.kind != "c" else _tenferro._traced_op("conj", [x])


def _real(x):
    return x if x.dtype.kind != "c" else _tenferro._traced_op("real", [x])


def _imag(x):
    if x.dtype.kind != "c":
        return _elementwise("mul", x, 0.0)
    return _tenferro._traced_op("imag", [x])


# --- shapes and axes ---


def _axes(axis, ndim, what):
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, (int, _np.integer)) else list(axis)
    out = []
    for a in axes:
        if not isinstance(a, (int, _np.integer)) or not -ndim <= a < ndim:
            raise AxisError(f"{what}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise _invalid(f"{what}: repeated axis in {axis}")
    return out


def _sum(x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if out is not None or where is not None or initial is not None:
        raise _unsupported("sum with out, where or initial")
    if dtype is not None:  # summed in that dtype, as numpy (an inexact one: it has a gradient)
        dtype = _np.dtype(dtype)
        if dtype.kind not in "fc":
            raise _unsupported(f"sum(dtype={dtype}) (an integer sum has no gradient)")
        x = _convert(x, dtype)
    elif x.dtype == bool:  # a count (a recorded comparison under tenferro.jit), as numpy: int64
        x = _convert(x, _np.dtype(_np.int64))
    elif x.dtype.kind not in "fc":
        raise _unsupported(f"sum of {x.dtype} values")
    axes = _axes(axis, x.ndim, "sum")
    return _reduce("reduce_sum", x, axes, keepdims)


def _reduce(name, x, axes, keepdims):
    r = _tenferro._traced_reduce(name, x, axes) if axes else x
    if keepdims:
        r = _reshape(r, [1 if i in axes else n for i, n in enumerate(x.shape)])
    return r


def _extreme(name, what):
    def reduce(x, axis=None, out=None, keepdims=False, initial=None, where=None):
        if out is not None or initial is not None or where is not None:
            raise _unsupported(f"{what} with out, initial or where")
        if x.dtype.kind == "c":
            raise _invalid(f"{what}: complex values are not ordered", "kDTypeMismatch")
        axes = _axes(axis, x.ndim, what)
        if any(x.shape[a] == 0 for a in axes):  # numpy's error (the reduction has no identity)
            raise _invalid(f"zero-size array to reduction operation {'maximum' if what == 'max' else 'minimum'} "
                           "which has no identity", "kShapeMismatch")
        return _reduce(name, x, axes, keepdims)

    return reduce


def _prod(x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if out is not None or where is not None or dtype is not None or initial is not None:
        raise _unsupported("prod with out, where, dtype or initial")
    if x.dtype.kind not in "fc":  # numpy multiplies integers in int64 (and wraps): not recorded
        raise _unsupported(f"prod of {x.dtype} values")
    return _reduce("reduce_prod", x, _axes(axis, x.ndim, "prod"), keepdims)


def _cumulative(name, record):
    def scan(x, axis=None, dtype=None, out=None):
        if out is not None or dtype is not None:
            raise _unsupported(f"{name} with out or dtype")
        if x.dtype.kind not in "fc":  # numpy accumulates integers in int64 (and wraps): not recorded
            raise _unsupported(f"{name} of {x.dtype} values")
        if axis is None:
            x, axis = _reshape(x, -1), 0
        (axis,) = _axes(axis, x.ndim, name)
        return record(x, axis)

    return scan


_cumsum = _cumulative("cumsum", lambda x, axis: _tenferro._traced_cumsum(x, axis))
_cumprod = _cumulative("cumprod", lambda x, axis: _tenferro._traced_cumprod(x, axis))


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise _unsupported("sort(order=...)")
    if a.dtype.kind == "c":
        raise _unsupported("sort of complex values")
    if axis is None:
        a, axis = _reshape(a, -1), 0
    (axis,) = _axes(axis, a.ndim, "sort")
    return _tenferro._traced_sort(a, axis)


def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    """numpy.var: the mean of |a - mean(a)|^2 over `axis`, divided by
    N - ddof (real for complex a)."""
    if out is not None or dtype is not None or where is not None or mean is not None:
        raise _unsupported("var / std with out, dtype, where or mean")
    if correction is not None:
        ddof = correction
    axes = _axes(axis, a.ndim, "var")
    count = 1
    for i in axes:
        count *= a.shape[i]
    d = _elementwise("sub", a, _mean(a, tuple(axes), keepdims=True))
    squared = _real(_elementwise("mul", d, _conj(d))) if a.dtype.kind == "c" else _square(d)
    return _elementwise("div", _sum(squared, tuple(axes), keepdims=keepdims), float(max(count - ddof, 0)))


def _std(a, *args, **kwargs):
    """sqrt(var); where the variance is 0 (constant data) the gradient is
    0, as torch.std gives it, not sqrt's infinite slope times 0 (NaN): the
    square root is taken of 1 there and the result replaced by 0."""
    v = _var(a, *args, **kwargs)
    zero = _UFUNCS[_np.equal](v, 0.0)  # values inside grad, recorded under jit; NaN stays NaN
    if not isinstance(zero, Traced) and not _np.any(zero):
        return _unary("sqrt")(v)
    return _where(zero, 0.0, _unary("sqrt")(_where(zero, 1.0, v)))


def _like(fill):
    """np.zeros_like and its kin: a plain array (it depends on a's shape
    only, not on its values)."""
    return lambda a, dtype=None, order="K", subok=True, shape=None: _np.full(
        _shape(a) if shape is None else shape, fill, dtype=a.dtype if dtype is None else dtype)


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return _like(fill_value)(a, dtype, order, subok, shape)


def _tensordot(a, b, axes=2):
    from . import einsum

    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, _np.integer)):
        ax_a, ax_b = list(range(na - axes, na)), list(range(int(axes)))
    else:
        ax_a, ax_b = ([x] if isinstance(x, (int, _np.integer)) else list(x) for x in axes)
    ax_a, ax_b = _axes(ax_a, na, "tensordot"), _axes(ax_b, nb, "tensordot")
    if len(ax_a) != len(ax_b):
        raise _invalid(f"tensordot: {len(ax_a)} axes of a against {len(ax_b)} of b", "kShapeMismatch")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in range(na)]
    lb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [la[i] for i in range(na) if i not in ax_a] + [lb[j] for j in range(nb) if j not in ax_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", *_aligned((a, b), _result_dtype((a, b))))


def _diag(v, k=0):
    if len(_shape(v)) == 2:
        return _diagonal(v, k)
    if k != 0:
        raise _unsupported("diag(k != 0) of a 1-D array")
    if len(_shape(v)) != 1:
        raise _invalid(f"diag: expected a 1-D or 2-D array, found shape {_shape(v)}")
    n = _shape(v)[0]
    return _where(_np.eye(n, dtype=bool), _reshape(v, (n, 1)), _np.zeros((), dtype=v.dtype))


def _triangle(numpy_fn):
    def part(m, k=0):
        if len(_shape(m)) < 2:
            raise _invalid(f"{numpy_fn.__name__}: expected an array of rank >= 2, found shape {_shape(m)}")
        mask = numpy_fn(_np.ones(_shape(m)[-2:], dtype=bool), k)
        return _where(mask, m, _np.zeros((), dtype=m.dtype))

    return part


def _pad(array, pad_width, mode="constant", constant_values=0, **kwargs):
    if mode != "constant" or kwargs or _np.ndim(constant_values) != 0:
        raise _unsupported("pad with a mode other than 'constant' or per-axis constant_values")
    try:
        widths = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64), (array.ndim, 2))
    except ValueError as e:
        raise _invalid(f"pad: pad_width {pad_width!r} does not fit {array.ndim} axes ({e})") from None
    if (widths < 0).any():
        raise _invalid(f"pad: negative pad_width {pad_width!r}")
    value = _np.asarray(constant_values, dtype=array.dtype)
    return _tenferro._traced_pad(array, value, [int(w) for w in widths[:, 0]], [int(w) for w in widths[:, 1]])


def _round(a, decimals=0, out=None):
    """numpy's rounding to `decimals`: x * 10^d rounded half to even, then
    / 10^d (x / 10^-d, then * 10^-d, for d < 0); derivative 0."""
    if out is not None:
        raise _unsupported("round with out")
    if a.dtype.kind == "c":
        raise _unsupported("round of complex values")
    decimals = operator.index(decimals)
    if decimals == 0:
        return _tenferro._traced_op("round", [a])
    if a.dtype.kind != "f":
        raise _unsupported(f"round of {a.dtype} values with decimals")
    f = float(10.0 ** abs(decimals))
    if decimals > 0:
        return _elementwise("div", _tenferro._traced_op("round", [_elementwise("mul", a, f)]), f)
    return _elementwise("mul", _tenferro._traced_op("round", [_elementwise("div", a, f)]), f)


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None or dtype is not None:
        raise _unsupported("concatenate with out or dtype")
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [_np.reshape(a, -1) for a in arrays], 0
    ndim = len(_shape(arrays[0]))
    if any(len(_shape(a)) != ndim for a in arrays):
        raise _invalid("concatenate: all the input arrays must have the same number of dimensions", "kShapeMismatch")
    (axis,) = _axes(axis, ndim, "concatenate")
    return _tenferro._traced_concatenate(_aligned(arrays, _result_dtype(arrays)), axis)


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    shapes = {_shape(a) for a in arrays}
    if len(shapes) != 1:
        raise _invalid(f"stack: all input arrays must have the same shape, found {sorted(shapes)}", "kShapeMismatch")
    (axis,) = _axes(axis, len(_shape(arrays[0])) + 1, "stack")
    return _concatenate([_np.expand_dims(a, axis) for a in arrays], axis, out=out, dtype=dtype)


def _clip(a, a_min=None, a_max=None, out=None, **kwargs):
    if out is not None or kwargs:
        raise _unsupported("clip with out or ufunc keywords")
    if a.dtype.kind == "c":
        raise _invalid("clip: complex values are not ordered", "kDTypeMismatch")
    lo = -_np.inf if a_min is None else a_min
    hi = _np.inf if a_max is None else a_max
    return _elementwise("clamp", lo, a, hi)


def _flip(m, axis=None):
    axes = _axes(axis, m.ndim, "flip")
    return _tenferro._traced_reverse(m, axes) if axes else m


def _roll(a, shift, axis=None):
    """numpy.roll as slices and a concatenate per rolled axis (the
    concatenate's rule sends each part's gradient back through its slice)."""
    if axis is None:
        return _np.reshape(_roll(_np.reshape(a, -1), shift, 0), a.shape)
    shifts, axes = _np.broadcast_arrays(_np.asarray(shift), _np.asarray(axis))
    if shifts.ndim > 1:
        raise _invalid(f"roll: 'shift' and 'axis' should be scalars or 1D sequences, found {shift!r} and {axis!r}")
    total = {}
    for s, ax in zip(shifts.reshape(-1).tolist(), axes.reshape(-1).tolist()):
        (ax,) = _axes(int(ax), a.ndim, "roll")
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in total.items():
        n = a.shape[ax]
        s = s % n if n else 0
        if s:
            head = tuple(slice(None) if k != ax else slice(n - s, None) for k in range(a.ndim))
            tail = tuple(slice(None) if k != ax else slice(0, n - s) for k in range(a.ndim))
            a = _concatenate([a[head], a[tail]], ax)
    return a


def _fftshift(sign):
    def shift(x, axes=None):
        axes = _axes(axes, x.ndim, "fftshift" if sign > 0 else "ifftshift")
        return _roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)

    return shift


def _diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the two axes moved last, the square block where the
    `offset` diagonal lies sliced out (any shape, any offset), then its
    diagonal by einsum."""
    from . import einsum

    offset = operator.index(offset)
    i, j = _axes([axis1, axis2], a.ndim, "diagonal")
    rest = [k for k in range(a.ndim) if k not in (i, j)]
    labels = "abcdefghijklmnopqrstuvwx"[: len(rest)]
    t = _transpose(a, rest + [i, j])
    m, n = t.shape[-2], t.shape[-1]
    row, col = max(0, -offset), max(0, offset)
    length = max(0, min(m - row, n - col))
    if (row, col, length) != (0, 0, m) or m != n:
        t = t[..., row:row + length, col:col + length]
    return einsum(f"{labels}yy->{labels}y", t)


def _mean(x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    axes = _axes(axis, x.ndim, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    return _elementwise("div", _sum(x, axis, dtype, out, keepdims, where=where), float(count))


def _reshape(x, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, _np.integer)):
        shape = tuple(shape[0])
    if order == "F":  # column-major: the C-order reshape of the reversed axes, reversed back
        shape = _np.broadcast_to(0, (int(_np.prod(x.shape)),)).reshape(shape).shape
        return _transpose(_reshape(_transpose(x), tuple(reversed(shape))))
    if order not in ("C", "A"):
        raise _unsupported(f"reshape(order={order!r})")
    size = 1
    for n in x.shape:
        size *= n
    try:  # numpy's rules (one -1, equal sizes) on a view of no memory
        shape = _np.broadcast_to(0, (size,)).reshape(shape).shape
    except ValueError as e:
        raise _invalid(f"reshape: cannot reshape an array of shape {tuple(x.shape)} into {shape} ({e})",
                       "kShapeMismatch") from None
    return x if tuple(shape) == tuple(x.shape) else _tenferro._traced_reshape(x, list(shape))


def _transpose(x, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, _np.integer))):
        axes = axes[0]
    perm = list(range(x.ndim))[::-1] if axes is None or axes == () else _axes(axes, x.ndim, "transpose")
    if len(perm) != x.ndim:
        raise _invalid(f"transpose: expected {x.ndim} axes, found {len(perm)}")
    return x if perm == list(range(x.ndim)) else _tenferro._traced_transpose(x, perm)


def _swapaxes(x, a, b):
    (a,), (b,) = _axes(a, x.ndim, "swapaxes"), _axes(b, x.ndim, "swapaxes")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return _transpose(x, perm)


def _moveaxis(x, source, destination):
    src = _axes(source, x.ndim, "moveaxis")
    dst = _axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise _invalid("moveaxis: source and destination must have the same number of elements")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose(x, order)


def _squeeze(x, axis=None):
    axes = [i for i, n in enumerate(x.shape) if n == 1] if axis is None else _axes(axis, x.ndim, "squeeze")
    if any(x.shape[a] != 1 for a in axes):
        raise _invalid("squeeze: cannot select an axis to squeeze out which has size not equal to one")
    return _reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def _expand_dims(x, axis):
    ndim = x.ndim + (1 if isinstance(axis, (int, _np.integer)) else len(axis))
    axes = _axes(axis, ndim, "expand_dims")
    dims = iter(x.shape)
    return _reshape(x, [1 if i in axes else next(dims) for i in range(ndim)])


def _broadcast_to(x, shape):
    shape = tuple(shape)
    try:
        if _np.broadcast_shapes(tuple(x.shape), shape) != shape:
            raise ValueError(f"the result would have shape {_np.broadcast_shapes(tuple(x.shape), shape)}")
    except ValueError as e:
        raise _invalid(f"broadcast_to: cannot broadcast {tuple(x.shape)} to {shape} ({e})", "kShapeMismatch") from None
    return _broadcast(x, shape)


def _take(a, indices, axis=None, out=None, mode="raise"):
    """numpy.take as a gather; indices are checked as numpy checks them
    (the gather itself would clamp)."""
    if out is not None or mode != "raise":
        raise _unsupported("take with out or mode")
    if axis is None:
        a, axis = _reshape(a, -1), 0
    (axis,) = _axes(axis, a.ndim, "take")
    return _gather(a, indices, axis)


def _gather(a, indices, axis, named=None):
    """a's entries `indices` along `axis`, checked (IndexError naming axis
    `named` of the array the user indexed, default `axis`)."""
    return _tenferro._traced_take(a, _checked_indices(indices, a.shape[axis], axis if named is None else named), axis)


# Note [Traced indices]
# An integer index array that is itself Traced (an argument of tenferro.jit
# or tenferro.vmap, or computed from one) is recorded, not read: x[i],
# x[i, j], np.take and np.take_along_axis become gathers with the traced
# indices, negative ones wrapped by a remainder. numpy raises IndexError for
# an index out of bounds where the gather would clamp, so every traced
# index array also records its least and greatest value, a guard
# (_index_guard): they are checked on this call's values at once, and the
# guard is kept on the tape of the values, so that the recordings made of
# it (jit's signature, vmap's batched program) return them as extra
# outputs, checked after each run (the recording, a _Function, raises the
# IndexError; a replay or batched run with a bad index returns nothing;
# IndexGuard in python/src/tape.cpp). The guards of a
# batched program applied on a running tape are guarded there again; the
# guards of a gradient's tape nested in a recording (jit(grad(vmap(f))):
# the vmap's guards land on the gradient's tape) move to the enclosing tape
# when the gradient's function returns (tenferro._run). Boolean masks stay
# values: their result's shape depends on them, so they cannot be
# recorded (a jit signature indexing with a traced mask runs eagerly).


def _index_guard(lo, hi, n, axis):
    """The guard of a traced index array whose least and greatest index
    are lo and hi (Note [Traced indices])."""
    from . import _running

    least, greatest = lo._peek(), hi._peek()
    if getattr(_running, "zero_example", False):  # vmap over no examples records on zeros: nothing to check
        least, greatest = 0, -1
    if least < -n or greatest >= n:  # (an empty array's least is int64's greatest, and the other way)
        raise IndexError(f"index {greatest if greatest >= n else least} is out of bounds for axis {axis} "
                         f"with size {n}")
    if lo._jit:
        tape = lo._tape
        guards = getattr(tape, "guards", None)
        if guards is None:
            guards = tape.guards = []
        guards.append((lo, hi, n, axis))


def _int64(x, shape):
    """x (Traced or a constant) as int64, broadcast to shape."""
    if isinstance(x, Traced):
        return _broadcast(_convert(x, _np.dtype(_np.int64)), shape)
    return _np.broadcast_to(_np.asarray(x, dtype=_np.int64), shape)


def _traced_indices(idx, n, axis):
    """A Traced integer index array into an axis of extent n: int64, the
    negative ones wrapped, guarded (Note [Traced indices])."""
    if idx.dtype.kind not in "iu":
        if idx.dtype == bool:
            raise _unsupported("a traced boolean mask as an index (its result's shape depends on its values)")
        raise IndexError(f"arrays used as indices must be of integer type, found {idx.dtype}")
    i = _convert(idx, _np.dtype(_np.int64))
    every = list(range(i.ndim))
    _index_guard(_tenferro._traced_reduce("reduce_min", i, every), _tenferro._traced_reduce("reduce_max", i, every),
                 n, axis)
    # In [-n, n) (guarded), so (i + n) mod n wraps the negative ones; a remainder by 0 never runs (n = 0
    # guards every index out).
    shape = tuple(i.shape)
    extent = _int64(builtins.max(n, 1), shape)
    return _tenferro._traced_op("remainder", [_tenferro._traced_op("add", [i, extent]), extent])


def _checked_indices(indices, n, axis):
    """Integer `indices` into an axis of extent n as int64 in [0, n), checked
    as numpy checks them (the gather itself would clamp)."""
    if isinstance(indices, Traced):
        return _traced_indices(indices, n, axis)
    idx = _np.asarray(indices)
    if idx.dtype.kind not in "iu" and idx.size > 0:
        raise IndexError(f"arrays used as indices must be of integer type, found {idx.dtype}")
    idx = idx.astype(_np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return _np.where(idx < 0, idx + n, idx)


def _advanced(x, key):
    """x[key] for one integer array (axis 0) or one boolean mask over the
    leading axes: a gather."""
    if isinstance(key, Traced):  # Note [Traced indices]
        return _take(x, key, axis=0)
    k = _np.asarray(key)
    if k.dtype == bool:
        if k.shape != tuple(x.shape[: k.ndim]):
            raise IndexError(f"boolean index of shape {k.shape} does not match the array's {tuple(x.shape)}")
        flat = _reshape(x, (-1,) + tuple(x.shape[k.ndim :]))
        return _take(flat, _np.flatnonzero(k), axis=0)
    return _take(x, k, axis=0)


_INDEX_ARRAYS = (list, _np.ndarray, Traced)


def _getitem(x, key):
    """Basic indexing (integers, slices of any step, None, Ellipsis), one
    integer array or boolean mask as the whole index, one integer array (or
    1-D mask) among basic indices (a gather after the basic part), or several
    integer arrays among integers and slices (_multi)."""
    if isinstance(key, _INDEX_ARRAYS):
        return _advanced(x, key)
    key = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(key) if isinstance(k, _INDEX_ARRAYS)]
    if len(arrays) == 1:
        return _mixed(x, key, arrays[0])
    if len(arrays) > 1:
        return _multi(x, key)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, (int, _np.integer, slice))) or isinstance(k, bool):
            raise _unsupported(f"indexing with {type(k).__name__} (advanced indexing)")
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise _invalid("an index can only have a single ellipsis ('...')", "kOutOfRange")
    used = builtins.sum(k is not None and k is not Ellipsis for k in key)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (x.ndim - used) + key[at + 1 :]
    else:
        key = key + (slice(None),) * (x.ndim - used)
    start, limit, stride, reverse, shape = [], [], [], [], []
    axis = 0
    for k in key:
        if k is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(k, slice):
            s, e, step = k.indices(n)
            count = len(range(s, e, step))
            if step < 0:  # the reversed axis, read forward
                reverse.append(axis)
                s, step = n - 1 - s, -step
            start.append(s)
            limit.append(s + (count - 1) * step + 1 if count > 0 else s)
            stride.append(step)
            shape.append(count)
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            start.append(i)
            limit.append(i + 1)
            stride.append(1)
        axis += 1
    r = _tenferro._traced_reverse(x, reverse) if reverse else x
    if (start, limit, stride) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        r = _tenferro._traced_slice(r, start, limit, stride)
    return _reshape(r, shape)


def _mixed(x, key, at):
    """x[key] where key[at] is the only index array: the basic index with
    that array replaced by ':', then a gather along the axis it selected
    (where numpy puts the array's axes when there is one index array and
    the integers, if any, stand next to it)."""
    k = key[at] if isinstance(key[at], Traced) else _np.asarray(key[at])
    mask_length = None
    if k.dtype == bool and not isinstance(k, Traced):
        if k.ndim != 1:
            raise _unsupported("a boolean mask of more than one axis among other indices")
        mask_length, k = k.shape[0], _np.flatnonzero(k)
    elif k.dtype.kind not in "iu" and k.size > 0:
        raise IndexError(f"arrays used as indices must be of integer type, found {k.dtype}")
    basic = key[:at] + (slice(None),) + key[at + 1 :]
    # The axis of the result that the array's ':' became: one per slice or
    # None before it, and the axes an Ellipsis before it stands for; and
    # the axis of x it indexes (numpy's error names it): one per slice or
    # integer before it, and the Ellipsis' axes.
    used = builtins.sum(i is not None and i is not Ellipsis for i in basic)
    axis = named = 0
    for i in key[:at]:
        if i is Ellipsis:
            axis += x.ndim - used
            named += x.ndim - used
        elif i is None or isinstance(i, slice):
            axis += 1
        if i is not None and i is not Ellipsis:
            named += 1
    part = _getitem(x, basic)
    if mask_length is not None and mask_length != part.shape[axis]:
        raise IndexError(f"boolean index of length {mask_length} does not match axis {axis} of length "
                         f"{part.shape[axis]}")
    r = _gather(part, k, axis, named)
    # numpy counts integers as index arrays too; when one stands apart from
    # the array (a slice between them), the array's axes come first.
    integers = [i for i, j in enumerate(key) if isinstance(j, (int, _np.integer)) and not isinstance(j, bool)]
    advanced = sorted([at] + integers)
    if advanced != list(range(advanced[0], advanced[-1] + 1)):
        r = _moveaxis(r, list(range(axis, axis + k.ndim)), list(range(k.ndim)))
    return r


def _multi(x, key):
    """x[key] with several integer index arrays among integers, slices and an
    Ellipsis (numpy's advanced indexing): the arrays and integers broadcast
    to one index shape B; the axes they index are merged into one (after
    moving them to the front when a slice separates them, as numpy places B
    first then) and gathered by the flat index of each position, so the
    result has B where numpy puts it. The gradient is the gather's
    (repeated positions add up)."""
    if any(k is None for k in key):
        raise _unsupported("None among several index arrays")
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise _invalid("an index can only have a single ellipsis ('...')", "kOutOfRange")
    used = builtins.sum(k is not Ellipsis for k in key)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)  # by identity: == on arrays is elementwise
        key = key[:at] + (slice(None),) * (x.ndim - used) + key[at + 1 :]
    else:
        key = key + (slice(None),) * (x.ndim - used)
    advanced, indices = [], []
    for axis, k in enumerate(key):
        if isinstance(k, slice):
            continue
        if isinstance(k, bool) or not isinstance(k, _INDEX_ARRAYS + (int, _np.integer)):
            raise _unsupported(f"indexing with {type(k).__name__} among several index arrays")
        if (k.dtype if isinstance(k, Traced) else _np.asarray(k).dtype) == bool:
            raise _unsupported("a boolean mask among several index arrays")
        advanced.append(axis)
        indices.append(_checked_indices(k, x.shape[axis], axis))
    try:
        shape = _np.broadcast_shapes(*[_shape(i) for i in indices])
    except ValueError:
        shapes = " ".join(str(_shape(i)) for i in indices)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}") from None
    indices = [_int64(i, shape) for i in indices]
    part = _getitem(x, tuple(slice(None) if a in advanced else k for a, k in enumerate(key)))
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    first = advanced[0] if adjacent else 0
    if not adjacent:
        rest = [a for a in range(part.ndim) if a not in advanced]
        part = _transpose(part, advanced + rest)
    dims = [part.shape[first + i] for i in range(len(advanced))]
    merged = _reshape(part, tuple(part.shape[:first]) + (int(_np.prod(dims)),) +
                      tuple(part.shape[first + len(advanced) :]))  # not -1: ambiguous for an empty part
    flat = indices[0] if all(dims) else _np.zeros(shape, _np.int64)
    for i, d in zip(indices[1:], dims[1:]) if all(dims) else ():  # row-major positions (recorded when traced)
        flat = _int_op("add", _int_op("mul", flat, _int64(d, shape)), i)
    return _tenferro._traced_take(merged, flat, first)  # each index was checked: flat is in range


def _int_op(name, a, b):
    """add or mul of int64 arrays of one shape: recorded when one is Traced."""
    if isinstance(a, Traced) or isinstance(b, Traced):
        return _tenferro._traced_op(name, [a, b])
    return _np.add(a, b) if name == "add" else _np.multiply(a, b)


# --- products ---


def _matmul(a, b):
    from . import einsum

    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        raise _invalid("matmul: operands must not be scalars (use *)")
    ka, kb = _shape(a)[-1], _shape(b)[-2 if nb > 1 else -1]
    if ka != kb:  # numpy's message (the einsum's would name labels the caller never wrote)
        raise InvalidArgumentError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
            f"(n?,k),(k,m?)->(n?,m?) (size {kb} is different from {ka})", code="kShapeMismatch",
            canonical="kInvalidArgument")
    lhs = "...ij" if na > 1 else "j"
    rhs = "...jk" if nb > 1 else "j"
    out = ("...i" if na > 1 else "...") + ("k" if nb > 1 else "")
    if na == 1 and nb == 1:
        out = ""
    return einsum(f"{lhs},{rhs}->{out}", *_aligned((a, b), _result_dtype((a, b))))


def _dot(a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _elementwise("mul", a, b)
    if na <= 2 and nb <= 2:
        return _matmul(a, b)
    # numpy.dot of N-D arrays: a's last axis with b's second-to-last (its
    # only axis when b is 1-D); the result's axes are a's rest, then b's.
    return _tensordot(a, b, ([-1], [-1 if nb == 1 else -2]))


def _trace(x, offset=0, axis1=0, axis2=1):
    return _sum(_diagonal(x, offset, axis1, axis2), axis=-1)


def _einsum(*operands, optimize="greedy", **kwargs):
    from . import einsum

    if kwargs:
        raise _unsupported(f"numpy.einsum with {', '.join(kwargs)}")
    if isinstance(optimize, bool):
        optimize = "greedy" if optimize else None
    return einsum(*operands, optimize=optimize)


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise _unsupported("numpy.where with one argument")
    if isinstance(condition, Traced) and condition.dtype == bool:  # a recorded comparison (tenferro.jit)
        shape = _np.broadcast_shapes(condition.shape, _shape(x), _shape(y))
        traced = isinstance(x, Traced) or isinstance(y, Traced)
        dtype = _result_dtype((x, y)) if traced else _np.result_type(x, y)  # constants: numpy's dtype
        if dtype not in _COMPARED:
            raise _unsupported(f"numpy.where of {dtype} values")
        return _tenferro._traced_op("select", [_broadcast(condition, shape), *_aligned((x, y), dtype, shape)])
    cond = _np.asarray(condition.numpy() if isinstance(condition, Traced) else condition, dtype=bool)
    if not isinstance(x, Traced) and not isinstance(y, Traced):
        return _np.where(cond, x, y)  # only the condition was traced: no gradient flows
    shape = _np.broadcast_shapes(cond.shape, _shape(x), _shape(y))
    return _tenferro._traced_op("select", [_np.broadcast_to(cond, shape), *_aligned((x, y), _result_dtype((x, y)), shape)])


# --- numpy functions composed from the recorded ones ---


# numpy's atleast_Nd: the shape a lower-rank array takes.
_ATLEAST = {
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1,) + s},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,), 2: lambda s: s + (1,)},
}


def _atleast(ndim):
    def at_least(*arrays):
        out = []
        for a in arrays:
            shape = tuple(_shape(a))
            grow = _ATLEAST[ndim].get(len(shape))
            out.append(a if grow is None else _np.reshape(a, grow(shape)))
        return out[0] if len(out) == 1 else out

    return at_least


def _take_along_axis(arr, indices, axis):
    """numpy.take_along_axis as one gather: integer arrays for every axis,
    `indices` on `axis` and the broadcast positions on the others."""
    if not isinstance(arr, Traced):  # a constant indexed by traced indices: recorded on their tape
        arr = indices._tape.constant(_np.asarray(arr))
    if axis is None:
        arr, axis = _np.reshape(arr, -1), 0
    (axis,) = _axes(axis, arr.ndim, "take_along_axis")
    idx = indices if isinstance(indices, Traced) else _np.asarray(indices)
    if idx.ndim != arr.ndim:
        raise _invalid(f"take_along_axis: expected indices of {arr.ndim} dimensions, found {idx.ndim}",
                       "kShapeMismatch")
    idx = _checked_indices(idx, arr.shape[axis], axis)
    shape = _np.broadcast_shapes(tuple(n if k != axis else 1 for k, n in enumerate(arr.shape)),
                                 tuple(n if k != axis else 1 for k, n in enumerate(idx.shape)))
    key = []
    for k in range(arr.ndim):
        if k == axis:
            key.append(idx)
        else:
            key.append(_np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(arr.ndim)]))
    return arr[tuple(key)]


def _column_stack(tup):
    return _concatenate([_np.reshape(a, (-1, 1)) if len(_shape(a)) < 2 else a for a in tup], 1)


def _tile(a, reps):
    reps = (operator.index(reps),) if _np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    shape = _shape(a)
    d = max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + tuple(shape)
    reps = (1,) * (d - len(reps)) + reps
    # (r0, n0, r1, n1, ...) broadcast from (1, n0, 1, n1, ...), then merged.
    interleaved = _np.reshape(a, [v for n in shape for v in (1, n)])
    wide = _broadcast_to(interleaved, [v for r, n in zip(reps, shape) for v in (r, n)])
    return _np.reshape(wide, [r * n for r, n in zip(reps, shape)])


def _repeat(a, repeats, axis=None):
    if axis is None:
        a, axis = _np.reshape(a, -1), 0
    (axis,) = _axes(axis, a.ndim, "repeat")
    n = a.shape[axis]
    counts = _np.broadcast_to(_np.asarray(repeats, dtype=_np.int64), (n,))
    if (counts < 0).any():
        raise _invalid(f"repeat: negative repeats {repeats!r}")
    return _take(a, _np.repeat(_np.arange(n), counts), axis)  # a gather: repeated rows add up in the gradient


def _kron(a, b):
    from . import einsum

    na, nb = len(_shape(a)), len(_shape(b))
    d = max(na, nb)
    a = _np.reshape(a, (1,) * (d - na) + tuple(_shape(a)))
    b = _np.reshape(b, (1,) * (d - nb) + tuple(_shape(b)))
    la, lb = "abcdefghijkl"[:d], "mnopqrstuvwx"[:d]
    outer = einsum(f"{la},{lb}->{''.join(x + y for x, y in zip(la, lb))}", a, b)
    return _np.reshape(outer, [m * n for m, n in zip(_shape(a), _shape(b))])


def _rot90(m, k=1, axes=(0, 1)):
    i, j = _axes(list(axes), m.ndim, "rot90")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return _flip(_flip(m, i), j)
    perm = list(range(m.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(_flip(m, j), perm) if k == 1 else _flip(_transpose(m, perm), j)


def _broadcast_arrays(*args, subok=False):
    shape = _np.broadcast_shapes(*[_shape(a) for a in args])
    return [_broadcast_to(a, shape) if isinstance(a, Traced) else _np.broadcast_to(a, shape) for a in args]


def _values(fn):
    """A numpy function of the values only (comparisons, argsort, isclose,
    ...): plain boolean or integer arrays, no gradient. Their reads are
    control flow (_read), not values taken off the tape."""
    return lambda *args, **kwargs: fn(*[a._read() if isinstance(a, Traced) else a for a in args], **kwargs)


# The dtypes a comparison is recorded in (Note [Jit recordings]).
_COMPARED = frozenset(_np.dtype(d) for d in ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128"))


def _comparison(ufunc, direction):
    """A comparison: inside tenferro.grad, a plain boolean array of the
    values (comparisons have no gradient); inside tenferro.jit, a recorded
    compare (Note [Jit recordings] in python/src/tape.cpp), whose values
    change with the arguments."""
    values = _values(ufunc)

    def compare(a, b):
        if not any(isinstance(x, Traced) and x._jit for x in (a, b)):
            return values(a, b)
        operands = (a, b)
        strong = [x.dtype if isinstance(x, Traced) else _np.asarray(x).dtype for x in operands if not _is_scalar(x)]
        dtype = _np.result_type(*strong)
        for x in operands:  # a Python number by its value, as numpy 1.x compares (int32 > 2**40 in int64)
            if _is_scalar(x):
                dtype = _np.result_type(dtype, x)
        if dtype not in _COMPARED or (dtype.kind == "c" and direction not in ("eq", "ne")):
            raise _unsupported(f"numpy.{ufunc.__name__} of {dtype} values")
        shape = _np.broadcast_shapes(*[() if _is_scalar(x) else _shape(x) for x in operands])
        return _tenferro._traced_compare(direction, _aligned(operands, dtype, shape))

    return compare


def _logical(name):
    """np.logical_and / or / xor and &, |, ^ on booleans (recorded
    comparisons under tenferro.jit)."""

    def boolean(x):
        return x.dtype == bool if isinstance(x, Traced) else _np.asarray(x).dtype == bool

    plain = {"and": _np.logical_and, "or": _np.logical_or, "xor": _np.logical_xor}[name]

    def apply(a, b):
        if not isinstance(a, Traced) and not isinstance(b, Traced):  # masks of values (inside grad)
            return plain(a, b)
        if not (boolean(a) and boolean(b)):
            raise _unsupported(f"{name} of non-boolean values")
        shape = _np.broadcast_shapes(*[() if _is_scalar(x) else _shape(x) for x in (a, b)])
        return _tenferro._traced_op(name, _aligned((a, b), _np.dtype(bool), shape))

    return apply


def _logical_not(x):
    if not isinstance(x, Traced):  # a mask of values (inside grad)
        return _np.logical_not(x)
    if x.dtype != bool:
        raise _unsupported(f"not of {x.dtype} values")
    return _tenferro._traced_op("not", [x])


def _inplace(name, op):
    """x op= y: inside grad a new value bound to the name, as before (the
    tape's values are immutable); under jit UnsupportedError, so the call
    runs eagerly: numpy changes the array itself (the caller's argument,
    or the array a view looks into), which a replay could not."""

    def apply(x, y):
        if x._jit:
            raise _unsupported(f"the in-place operator {'@' if name == 'matmul' else ''}{name}= on a traced value")
        return op(x, y)

    return apply


def _iter(x):
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (x[i] for i in range(x.shape[0]))


def _index(x):
    """operator.index (x[:n], range(n)): reads the value, as int() does."""
    if x.dtype.kind not in "iub" or x.ndim != 0:
        raise TypeError("only integer scalar arrays can be converted to a scalar index")
    return operator.index(x.numpy().item())


def _nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    if out is not None or kwargs:
        raise _unsupported("nansum with out, initial or where")
    return _sum(_where(_UFUNCS[_np.isnan](a), _np.zeros((), a.dtype), a), axis, dtype, keepdims=keepdims)


def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    if out is not None or kwargs:
        raise _unsupported("nanmean with out or where")
    real = _np.finfo(a.dtype).dtype
    nan = _UFUNCS[_np.isnan](a)  # values inside grad, recorded under jit
    if isinstance(nan, Traced):
        counts = _convert(_sum(_logical_not(nan), axis, keepdims=keepdims), real)
    else:
        counts = _np.sum(~nan, axis=axis, keepdims=keepdims).astype(real)
    return _elementwise("div", _nansum(a, axis, dtype, keepdims=keepdims), counts)


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is None:
        mean = _np.mean(a, axis=axis, keepdims=keepdims)
        count = _np.broadcast_to(_np.asarray(_np.prod(_shape(a)) / max(1, int(_np.prod(_shape(mean)))), float),
                                 _shape(mean))
        return (mean, count) if returned else mean
    w = weights
    if len(_shape(w)) != len(_shape(a)):
        if axis is None or len(_shape(w)) != 1:
            raise _invalid("average: 1D weights need an axis; other weights must have a's shape", "kShapeMismatch")
        (ax,) = _axes(axis, len(_shape(a)), "average")
        w = _np.reshape(w, [(_shape(w)[0] if k == ax else 1) for k in range(len(_shape(a)))])
    total = _np.sum(_np.broadcast_to(w, _shape(a)) if not isinstance(w, Traced) else _broadcast_to(w, _shape(a)),
                    axis=axis, keepdims=keepdims)
    mean = _elementwise("div", _np.sum(_elementwise("mul", a, w), axis=axis, keepdims=keepdims), total)
    return (mean, total) if returned else mean


def _hypot(x, y):
    """sqrt(x^2 + y^2) where the larger magnitude m is far from overflow and
    underflow (smooth: exact derivatives of every order, equal magnitudes
    and zeros included); elsewhere m sqrt(1 + (n/m)^2), n the smaller
    magnitude (no overflow or underflow; 0 at (0, 0), whose gradient is
    then 0); infinity where either is. The direct branch reads x and y
    only where it is taken. A Python number is weak: it becomes an array
    of the result's dtype first (the branches' constants would otherwise
    meet it as numpy scalars and promote float32 to float64)."""
    dtype = _result_dtype((x, y))
    x, y = (_np.asarray(v, dtype) if _is_scalar(v) else v for v in (x, y))
    magnitude = lambda v: abs(v) if _is_scalar(v) else (_unary("abs")(v) if isinstance(v, Traced) else _np.abs(v))  # noqa: E731
    ax, ay = magnitude(x), magnitude(y)
    m, n = _elementwise("max", ax, ay), _elementwise("min", ax, ay)
    lo, hi = (1e-150, 1e150) if _np.dtype(m.dtype).itemsize >= 8 else (1e-18, 1e18)
    direct = _logical("and")(_UFUNCS[_np.greater](m, lo), _UFUNCS[_np.less](m, hi))
    one = _np.ones((), dtype)  # not 1.0: np.where of a plain y and a Python float is float64 in numpy 1
    xs, ys = _where(direct, x, one), _where(direct, y, one)
    plain = _unary("sqrt")(xs * xs + ys * ys)  # one of them Traced
    zero = _UFUNCS[_np.equal](m, 0.0)
    r = _elementwise("div", n, _where(zero, 1.0, m))
    scaled = _elementwise("mul", m, _unary("sqrt")(_elementwise("add", _elementwise("mul", r, r), 1.0)))
    eq = _UFUNCS[_np.equal]
    infinite = _logical("or")(eq(ax, _np.inf), eq(ay, _np.inf))  # IEEE: hypot(inf, nan) is inf
    return _where(infinite, _np.inf, _where(direct, plain, scaled))


def _sinc(x):
    """sin(pi x) / (pi x): at 0 the division is taken at 1 (no 0/0 in the
    value or the gradient) and the result replaced by sinc's Taylor
    polynomial 1 - (pi x)^2 / 6 + (pi x)^4 / 120, which is 1 there with
    sinc's derivatives up to the fourth (the second is -pi^2 / 3, as jax)."""
    zero = _UFUNCS[_np.equal](x, 0.0)  # values inside grad, recorded under jit
    px = _elementwise("mul", _where(zero, _np.ones((), x.dtype), x), float(_np.pi))
    s2 = _elementwise("mul", _elementwise("mul", x, x), float(_np.pi) ** 2)
    taylor = _elementwise("add", _elementwise("mul", s2, _elementwise("add", _elementwise("mul", s2, 1.0 / 120),
                                                                       -1.0 / 6)), 1.0)
    return _where(zero, taylor, _elementwise("div", _unary("sin")(px), px))


def _floor_divide(a, b):
    """a // b as numpy computes it (npy_divmod), consistent with a % b:
    (a - fmod(a, b)) / b, one less when the remainder's sign is not the
    divisor's, rounded to the nearest integer; a / b for b == 0. Derivative
    0 (floor's). The masks are values inside grad, recorded under jit."""
    lt, ne, gt = _UFUNCS[_np.less], _UFUNCS[_np.not_equal], _UFUNCS[_np.greater]
    mod = _elementwise("fmod", a, b)
    div = _elementwise("div", _elementwise("sub", a, mod), b)
    div = _where(_logical("and")(ne(mod, 0.0), ne(lt(b, 0.0), lt(mod, 0.0))), _elementwise("sub", div, 1.0), div)
    whole = _unary("floor")(div)
    whole = _where(gt(_elementwise("sub", div, whole), 0.5), _elementwise("add", whole, 1.0), whole)
    return _where(_UFUNCS[_np.equal](b, 0.0), _elementwise("div", a, b), whole)


# ufuncs that are one core op of the same name for every operand; the fast
# paths of python/src/tape.cpp record these (and np.square, np.matmul)
# without this module (Note [Traced fast paths], _FAST_UFUNCS below).
_UNARY_UFUNCS = {
    _np.negative: "neg", _np.absolute: "abs", _np.exp: "exp", _np.expm1: "expm1", _np.log: "log",
    _np.log1p: "log1p", _np.sqrt: "sqrt", _np.sin: "sin", _np.cos: "cos", _np.tan: "tan", _np.tanh: "tanh",
    _np.sign: "sign", _np.floor: "floor", _np.ceil: "ceil",  # sign, floor, ceil: derivative 0
}
_BINARY_UFUNCS = {
    _np.add: "add", _np.subtract: "sub", _np.multiply: "mul", _np.true_divide: "div", _np.maximum: "max",
    _np.minimum: "min", _np.arctan2: "atan2", _np.remainder: "remainder", _np.fmod: "fmod",
}


def _binary(name):
    return lambda a, b: _elementwise(name, a, b)


_UFUNCS = {
    **{u: _unary(name) for u, name in _UNARY_UFUNCS.items()},
    **{u: _binary(name) for u, name in _BINARY_UFUNCS.items()},
    _np.power: _power,
    _np.matmul: _matmul,
    _np.positive: lambda x: x,
    _np.log2: _log_base(2.0),
    _np.log10: _log_base(10.0),
    _np.conjugate: _conj,
    _np.square: _square,
    _np.reciprocal: _reciprocal,
    _np.exp2: lambda x: _elementwise("pow", 2.0, x),  # exact at integers, as numpy's
    _np.sinh: _sinh,
    _np.cosh: _cosh,
    _np.logaddexp: _logaddexp,
    _np.rint: _round,
    _np.floor_divide: _floor_divide,
    _np.hypot: _hypot,
}
_UFUNCS[_np.logical_and] = _UFUNCS[_np.bitwise_and] = _logical("and")
_UFUNCS[_np.logical_or] = _UFUNCS[_np.bitwise_or] = _logical("or")
_UFUNCS[_np.logical_xor] = _UFUNCS[_np.bitwise_xor] = _logical("xor")
_UFUNCS[_np.logical_not] = _UFUNCS[_np.invert] = _logical_not
def _classify(ufunc, name):
    """np.isnan / np.isfinite: the values inside grad, recorded under jit."""
    values = _values(ufunc)

    def classify(x):
        if isinstance(x, Traced) and x._jit and x.dtype.kind in "fc":
            return _tenferro._traced_op(name, [x])
        return values(x)

    return classify


_UFUNCS[_np.isnan] = _classify(_np.isnan, "is_nan")
_UFUNCS[_np.isfinite] = _classify(_np.isfinite, "is_finite")
for _cmp, _direction in ((_np.less, "lt"), (_np.less_equal, "le"), (_np.greater, "gt"), (_np.greater_equal, "ge"),
                         (_np.equal, "eq"), (_np.not_equal, "ne")):
    _UFUNCS[_cmp] = _comparison(_cmp, _direction)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method != "__call__" or kwargs:
        raise _unsupported(f"numpy.{ufunc.__name__}.{method}" if method != "__call__" else
                           f"numpy.{ufunc.__name__} with {', '.join(kwargs)}")
    fn = _UFUNCS.get(ufunc)
    if fn is None:
        raise _unsupported(f"numpy.{ufunc.__name__}")
    return fn(*inputs)


def _numpy_functions():
    from . import fft, linalg

    table = {
        _np.sum: _sum,
        _np.mean: _mean,
        # numpy's own parameter names, so that keyword calls work too
        _np.transpose: lambda a, axes=None: _transpose(a, axes),
        _np.reshape: lambda a, newshape=None, order="C", shape=None: _reshape(
            a, newshape if shape is None else shape, order=order),
        _np.swapaxes: lambda a, axis1, axis2: _swapaxes(a, axis1, axis2),
        _np.moveaxis: _moveaxis,
        _np.squeeze: _squeeze,
        _np.expand_dims: _expand_dims,
        _np.broadcast_to: lambda x, shape, subok=False: _broadcast_to(x, shape),
        _np.einsum: _einsum,
        _np.dot: _dot,
        _np.trace: _trace,
        _np.real: _real,
        _np.imag: _imag,
        _np.where: _where,
        _np.prod: _prod,
        _np.max: _extreme("reduce_max", "max"),
        _np.amax: _extreme("reduce_max", "max"),
        _np.min: _extreme("reduce_min", "min"),
        _np.amin: _extreme("reduce_min", "min"),
        _np.cumsum: _cumsum,
        _np.cumprod: _cumprod,
        _np.sort: _sort,
        _np.var: _var,
        _np.std: _std,
        _np.zeros_like: _like(0),
        _np.ones_like: _like(1),
        _np.empty_like: _like(0),
        _np.full_like: _full_like,
        _np.copy: lambda a, order="K", subok=False: a,  # values on the tape are immutable
        _np.tensordot: _tensordot,
        _np.inner: lambda a, b: _tensordot(a, b, ([-1], [-1])),
        _np.vdot: lambda a, b: _matmul(_np.reshape(_np.conj(a), -1), _np.reshape(b, -1)),
        _np.diag: _diag,
        _np.triu: _triangle(_np.triu),
        _np.tril: _triangle(_np.tril),
        _np.pad: _pad,
        _np.round: _round,
        _np.around: _round,
        _np.concatenate: _concatenate,
        _np.stack: _stack,
        _np.clip: _clip,
        _np.flip: _flip,
        _np.roll: _roll,
        _np.diagonal: _diagonal,
        _np.take: _take,
        _np.outer: lambda a, b, out=None: _elementwise("mul", _np.reshape(a, (-1, 1)), _np.reshape(b, -1)),
        _np.atleast_1d: _atleast(1),
        _np.atleast_2d: _atleast(2),
        _np.atleast_3d: _atleast(3),
        _np.column_stack: _column_stack,
        _np.tile: _tile,
        _np.repeat: _repeat,
        _np.kron: _kron,
        _np.rot90: _rot90,
        _np.broadcast_arrays: _broadcast_arrays,
        _np.argsort: _values(_np.argsort),
        _np.take_along_axis: _take_along_axis,
        _np.argmax: _values(_np.argmax),
        _np.argmin: _values(_np.argmin),
        _np.isclose: _values(_np.isclose),
        _np.allclose: _values(_np.allclose),
        _np.array_equal: _values(_np.array_equal),
        _np.nansum: _nansum,
        _np.nanmean: _nanmean,
        _np.average: _average,
        _np.sinc: _sinc,
        _np.shape: _shape,
        _np.ndim: lambda x: len(_shape(x)),
        _np.iscomplexobj: lambda x: _np.dtype(x.dtype).kind == "c",
        _np.isrealobj: lambda x: _np.dtype(x.dtype).kind != "c",
        _np.size: lambda x, axis=None: int(_np.prod(_shape(x))) if axis is None else _shape(x)[axis],
    }
    for module, ours in ((_np.linalg, linalg), (_np.fft, fft)):
        for name in dir(ours):
            theirs = getattr(module, name, None)
            # numpy's own functions tenferro.fft re-exports (fftshift, ...)
            # would dispatch back to themselves.
            if not name.startswith("_") and callable(theirs) and theirs is not getattr(ours, name):
                table[theirs] = getattr(ours, name)
    # numpy's own implementations, written with functions recorded above
    # (atleast_*d, concatenate, swapaxes, slicing): run as they are.
    for fn in (_np.hstack, _np.vstack, _np.dstack, _np.split, _np.array_split, _np.hsplit, _np.vsplit,
               _np.dsplit):
        implementation = getattr(fn, "_implementation", None)  # numpy's undispatched function
        if implementation is not None:
            table[fn] = implementation
    table[_np.fft.fftshift] = _fftshift(1)
    table[_np.fft.ifftshift] = _fftshift(-1)
    return table


_FUNCTIONS = None


def _array_function(self, func, types, args, kwargs):
    global _FUNCTIONS
    if _FUNCTIONS is None:
        _FUNCTIONS = _numpy_functions()
    fn = _FUNCTIONS.get(func)
    if fn is None:
        raise _unsupported(f"{func.__module__}.{func.__name__}")
    return fn(*args, **kwargs)


def _array(x, dtype=None, copy=None):
    """np.asarray(x), np.array(x), out[i] = x, ...: a conversion numpy
    makes on its own would silently drop the gradient, so it is an error;
    .numpy() leaves the tape on purpose."""
    tape = x._tape
    if tape is not None and tape.closed:
        raise UnsupportedError(
            f"a Traced value (shape {tuple(x.shape)}, {x.dtype}) cannot become a numpy array: it was kept after the "
            "tenferro.grad / vjp / jit call that recorded it ended (return it, or call .numpy() inside the function)",
            code="kUnsupported",
            canonical="kUnsupported",
        )
    raise UnsupportedError(
        f"a Traced value (shape {tuple(x.shape)}, {x.dtype}) cannot become a numpy array inside "
        "tenferro.grad / jit: the gradient would be lost (build arrays with np.stack / np.concatenate, "
        "call .numpy() or float() for a value without a gradient)",
        code="kUnsupported",
        canonical="kUnsupported",
    )


def _setitem(x, key, value):
    """Assignment would need numpy's view semantics (y = x[0]; y[1] = v
    also changes x), which recorded values do not have."""
    raise UnsupportedError(
        "item assignment into a Traced value is not recorded (values on the tape are immutable); build the result "
        "with np.where, np.concatenate, np.stack or np.pad",
        code="kUnsupported",
        canonical="kUnsupported",
    )


def _item(x):
    if x.ndim != 0 and int(_np.prod(x.shape)) != 1:
        raise _invalid(f"item: can only convert an array of size 1, found shape {tuple(x.shape)}")
    return x.numpy().item()


def _len(x):
    if x.ndim == 0:
        raise TypeError("len() of unsized object")
    return x.shape[0]


def _bool(x):
    """numpy's truth value (control flow on the value, off the tape like
    comparisons): one element, else numpy's ValueError."""
    if int(_np.prod(x.shape)) != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    return bool(x._read().reshape(()))


# The ufuncs that python/src/tape.cpp records without this module (Note
# [Traced fast paths]): np.square is mul with one input, np.matmul (-1) the
# fast a @ b.
_FAST_UFUNCS = {**_UNARY_UFUNCS, **_BINARY_UFUNCS, _np.square: "mul"}


def _install():
    """Completes the protocol on the Traced class; its operators, sum, mean
    and __array_ufunc__ are python/src/tape.cpp's fast paths, which call the
    rules above for every other form."""
    T = Traced
    T._fast_ufuncs = {u: _tenferro._core_op_code(name) for u, name in _FAST_UFUNCS.items()}
    T._fast_ufuncs[_np.matmul] = -1
    T.__array_function__ = _array_function
    T.__array__ = _array
    T.__rpow__ = lambda a, b: _elementwise("pow", b, a)
    T.__pos__ = lambda self: self
    T.__floordiv__ = _floor_divide
    T.__rfloordiv__ = lambda a, b: _floor_divide(b, a)
    T.__round__ = lambda self, ndigits=None: _round(self, 0 if ndigits is None else ndigits)
    for name, ufunc in (("__lt__", _np.less), ("__le__", _np.less_equal), ("__gt__", _np.greater),
                        ("__ge__", _np.greater_equal), ("__eq__", _np.equal), ("__ne__", _np.not_equal)):
        setattr(T, name, _UFUNCS[ufunc])
    T.__hash__ = object.__hash__  # by identity, as before == compared values
    for name, op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
                     ("floordiv", operator.floordiv), ("mod", operator.mod), ("pow", operator.pow),
                     ("matmul", operator.matmul), ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)):
        setattr(T, f"__i{name}__", _inplace(name, op))
    T.__getitem__ = _getitem
    T.__iter__ = _iter
    T.__index__ = _index
    T.__and__ = _logical("and")
    T.__rand__ = lambda a, b: _logical("and")(b, a)
    T.__or__ = _logical("or")
    T.__ror__ = lambda a, b: _logical("or")(b, a)
    T.__xor__ = _logical("xor")
    T.__rxor__ = lambda a, b: _logical("xor")(b, a)
    T.__invert__ = _logical_not
    T.__format__ = lambda self, spec: format(_item(self) if self.ndim == 0 else self.numpy(), spec)
    T.tolist = lambda self: self.numpy().tolist()
    T.__setitem__ = _setitem
    T.__len__ = _len
    T.__bool__ = _bool
    T.__float__ = lambda self: float(_item(self))
    T.__int__ = lambda self: int(_item(self))  # numpy: a size-1 array converts; off the tape as float()
    T.__complex__ = lambda self: complex(_item(self))
    T.item = _item
    T.size = property(lambda self: int(_np.prod(self.shape)))
    T.T = property(lambda self: _transpose(self))
    T.mT = property(lambda self: _swapaxes(self, -1, -2))
    T.real = property(_real)
    T.imag = property(_imag)
    T.conj = _conj
    T.conjugate = _conj
    T.prod = _prod
    T.max = _extreme("reduce_max", "max")
    T.min = _extreme("reduce_min", "min")
    T.cumsum = _cumsum
    T.cumprod = _cumprod
    T.var = _var
    T.std = _std
    T.copy = lambda self, order="C": self  # values on the tape are immutable
    T.round = _round
    T.clip = lambda self, min=None, max=None: _clip(self, min, max)  # noqa: A002 (numpy's names)
    T.flatten = lambda self, order="C": _reshape(self, -1, order=order)
    T.ravel = T.flatten
    T.diagonal = _diagonal
    T.take = _take
    T.reshape = _reshape
    T.transpose = _transpose
    T.swapaxes = _swapaxes
    T.squeeze = _squeeze
    T.astype = lambda self, dtype: _convert(self, _np.dtype(dtype))
    T.dot = _dot
    T.trace = _trace
    T.__repr__ = lambda self: f"tenferro.Traced(shape={self.shape}, dtype={self.dtype})"
