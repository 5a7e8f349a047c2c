"""numpy.fft-compatible discrete Fourier transforms on tenferro's FFT engine
(FFTW plans, batched over the axes not transformed; docs/fft.md).

Every function takes numpy's arguments (n or s, axis or axes, norm
"backward", "ortho" or "forward") and returns a numpy array over tenferro's
storage. Differences from numpy.fft (docs/python.md): precision is kept, as
numpy >= 2 and torch.fft do (float16, float32 and complex64 give complex64
or float32, not the double types); integer and bool input becomes float64.
Inside tenferro.vjp / grad the transforms are recorded (tenferro's FFT AD
rules). fftfreq, rfftfreq, fftshift and ifftshift are numpy's own
(fftshift and ifftshift are recorded inside tenferro.vjp / grad too).
"""

import operator as _operator

import numpy as _np
from numpy.fft import fftfreq, fftshift, ifftshift, rfftfreq

from . import _tenferro
from ._errors import DTypeError, InvalidArgumentError, OutOfRangeError, UnsupportedError
from .linalg import _invalid, _operand, _runtime

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]


# Transforms of a complex (Hermitian) input; numpy takes real input there
# as complex with a zero imaginary part.
_COMPLEX_INPUT = ("irfft", "hfft")
_INT64_MAX = 2**63 - 1


def _fft_operand(kind, a):
    """_operand, float16 computed in float32 (complex64 results, as numpy
    2's fft gives), and real input of irfft/hfft made complex."""
    a = _operand(a)
    if isinstance(a, _np.ndarray):
        if a.dtype == object:  # numbers in an object array: their own dtype, as numpy.fft takes them
            a = _np.array(a.tolist())
        if a.dtype.char == "e":  # float16 in either byte order
            a = a.astype(_np.float32)
        elif a.dtype.char in "gG":  # long double: computed in double, as numpy.fft does
            if a.dtype.kind == "c" and kind in ("rfft", "ihfft"):  # named as given, not as converted
                raise DTypeError(f"tenferro.fft: fft.{kind}: expected a real input, found {a.dtype}",
                                 code="kDTypeMismatch", canonical="kInvalidArgument")
            a = a.astype(_np.complex128 if a.dtype.kind == "c" else _np.float64)
    if kind in _COMPLEX_INPUT and a.dtype.kind == "f":  # also a Traced value (recorded)
        a = a.astype(_np.result_type(a.dtype, _np.complex64))
    return a


def _length(n, what):
    """A transform length: an integer (TypeError otherwise, as numpy), at
    least 1; in s= also -1 (numpy 2: the input's extent)."""
    i = _operator.index(n)
    if i > _INT64_MAX:
        raise OutOfRangeError(f"fft: {what}={i}: expected a number of data points that fits in memory (at most "
                              f"2**63 - 1)", code="kSizeOverflow", canonical="kOutOfRange")
    if i < 1 and not (i == -1 and what == "s"):
        raise _invalid(f"fft: {what}={i}: expected a positive number of data points"
                       + (" (or -1: the input's extent)" if what == "s" else ""))
    return i


def _norm(norm):
    """None as "backward"; anything but a string an InvalidArgumentError
    (numpy's ValueError; the names themselves are checked by the extension)."""
    if norm is None:
        return "backward"
    if type(norm) is not str:
        raise _invalid(f'fft: expected norm None, "backward", "ortho" or "forward", found {norm!r} '
                       f"({type(norm).__name__})")
    return norm


def _transform(kind, a, s, axes, norm, runtime):
    a = _fft_operand(kind, a)
    norm = norm if type(norm) is str else _norm(norm)
    s = None if s is None else [_length(v, "s") for v in s]
    ndim = len(a.shape)
    if axes is None:  # numpy: the last len(s) axes, or every axis
        if s is not None and len(s) > ndim:
            raise _invalid(f"fft: s={s} has {len(s)} entries; expected at most the input's {ndim} dimensions")
        axes = range(ndim - len(s), ndim) if s is not None else range(ndim)
    axes = [_operator.index(v) for v in axes]
    if s is not None and len(s) != len(axes):
        raise _invalid(f"fft: s={s} and axes={axes} have different lengths")
    if not axes and kind in ("fft", "ifft"):
        return a if isinstance(a, _tenferro.Traced) else _np.array(a, copy=True)  # no axis: the identity, as numpy
    if len({v % ndim if -ndim <= v < ndim else v for v in axes}) < len(axes):
        return _repeated_axes(kind, a, s, axes, norm, runtime)
    if isinstance(a, _tenferro.Traced):
        return _tenferro._traced_fft(kind, a, s, axes, norm)
    return _tenferro._fft(runtime, kind, a, s, axes, norm)


def _repeated_axes(kind, a, s, axes, norm, runtime):
    """An axis named twice: numpy's one-axis transforms in sequence (the
    complex ones from the last axis back, the real one last for rfftn and
    first for irfftn), so it is transformed twice."""
    if s is None:  # numpy: the input's extents (the last one of a Hermitian input 2 (n - 1))
        s = [a.shape[axis] for axis in axes]
        if kind == "irfft":
            s[-1] = 2 * (s[-1] - 1)
    lengths = [[v] for v in s]
    if kind == "irfft":
        for axis, n in zip(axes[:-1], lengths[:-1]):
            a = _transform("ifft", a, n, [axis], norm, runtime)
        return _transform("irfft", a, lengths[-1], [axes[-1]], norm, runtime)
    last = len(axes) - 1
    if kind == "rfft":
        a = _transform("rfft", a, lengths[-1], [axes[-1]], norm, runtime)
        kind, last = "fft", last - 1
    for k in range(last, -1, -1):
        a = _transform(kind, a, lengths[k], [axes[k]], norm, runtime)
    return a


def _into(r, out, who):
    """numpy 2's out=: the result written into `out` (the result's shape, a
    dtype it casts to within its kind) and returned."""
    if isinstance(r, _tenferro.Traced) or isinstance(out, _tenferro.Traced):
        raise UnsupportedError(f"fft.{who}: out= is not recorded inside tenferro.vjp / grad (use the result)",
                               code="kUnsupported", canonical="kUnsupported")
    if not isinstance(out, _np.ndarray):
        raise TypeError(f"fft.{who}: expected out as a numpy array, found {type(out).__name__}")
    if out.shape != r.shape:
        raise InvalidArgumentError(f"fft.{who}: expected out of the result's shape {r.shape}, found {out.shape}",
                                   code="kShapeMismatch", canonical="kInvalidArgument")
    if not _np.can_cast(r.dtype, out.dtype, casting="same_kind"):
        raise DTypeError(f"fft.{who}: cannot write the {r.dtype} result into out of dtype {out.dtype}",
                         code="kDTypeMismatch", canonical="kInvalidArgument")
    if not out.flags.writeable:  # numpy's copyto would raise its untyped ValueError; einsum's error
        raise InvalidArgumentError(f"fft.{who}: out is read-only (expected a writeable array)",
                                   code="kInvalidArgument", canonical="kInvalidArgument")
    _np.copyto(out, r, casting="same_kind")
    return out


def _one_axis(kind, a, n, axis, norm, runtime):
    # The common call, straight to the extension.
    n = None if n is None else [_length(n, "n")]
    if type(a) is _np.ndarray and a.dtype.char in ("FD" if kind in _COMPLEX_INPUT else "fdFD"):
        return _tenferro._fft(runtime, kind, a, n, [_operator.index(axis)], norm if type(norm) is str else _norm(norm))
    return _transform(kind, a, n, [axis], norm, runtime)


def _n_axes(kind, a, s, axes, norm, runtime):
    # The common N-D call (an array of a computed dtype, no s, distinct axes
    # in range), straight to the extension: _transform's checks cost about
    # a microsecond of a 2 x 2 fftn.
    if s is None and type(a) is _np.ndarray and a.ndim and a.dtype.char in (
            "FD" if kind in _COMPLEX_INPUT else "fdFD"):
        ndim = a.ndim
        norm = norm if type(norm) is str else _norm(norm)
        if axes is None:
            return _tenferro._fft(runtime, kind, a, None, list(range(ndim)), norm)
        if type(axes) in (tuple, list) and axes:
            given = [v for v in axes if type(v) is int and -ndim <= v < ndim]
            if len(given) == len(axes) and len({v % ndim for v in given}) == len(given):
                return _tenferro._fft(runtime, kind, a, None, given, norm)
    return _transform(kind, a, s, axes, norm, runtime)


def _public(transform, kind, a, size, axes, norm, out, threads, runtime, name):
    """A public transform `name`: `transform` (_one_axis or _n_axes) of
    `kind` on a runtime of `threads` threads when given, into `out` when
    given."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    r = transform(kind, a, size, axes, norm, runtime)
    return r if out is None else _into(r, out, name)


def fft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The 1-D discrete Fourier transform along `axis` (numpy.fft.fft)."""
    return _public(_one_axis, "fft", a, n, axis, norm, out, threads, runtime, "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The inverse of fft (numpy.fft.ifft)."""
    return _public(_one_axis, "ifft", a, n, axis, norm, out, threads, runtime, "ifft")


def rfft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The transform of real input: n // 2 + 1 outputs (numpy.fft.rfft)."""
    return _public(_one_axis, "rfft", a, n, axis, norm, out, threads, runtime, "rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The inverse of rfft: n real outputs, 2 (m - 1) by default (numpy.fft.irfft)."""
    return _public(_one_axis, "irfft", a, n, axis, norm, out, threads, runtime, "irfft")


def hfft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The transform of a Hermitian-symmetric signal: real output (numpy.fft.hfft)."""
    return _public(_one_axis, "hfft", a, n, axis, norm, out, threads, runtime, "hfft")


def ihfft(a, n=None, axis=-1, norm=None, out=None, *, threads=None, runtime=None):
    """The inverse of hfft (numpy.fft.ihfft)."""
    return _public(_one_axis, "ihfft", a, n, axis, norm, out, threads, runtime, "ihfft")


def fftn(a, s=None, axes=None, norm=None, out=None, *, threads=None, runtime=None):
    """The N-D transform over `axes` (None: the last len(s) axes, or all)."""
    return _public(_n_axes, "fft", a, s, axes, norm, out, threads, runtime, "fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None, *, threads=None, runtime=None):
    """The inverse of fftn."""
    return _public(_n_axes, "ifft", a, s, axes, norm, out, threads, runtime, "ifftn")


def rfftn(a, s=None, axes=None, norm=None, out=None, *, threads=None, runtime=None):
    """The N-D transform of real input; the last axis keeps s[-1] // 2 + 1 outputs."""
    return _public(_n_axes, "rfft", a, s, axes, norm, out, threads, runtime, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, out=None, *, threads=None, runtime=None):
    """The inverse of rfftn."""
    return _public(_n_axes, "irfft", a, s, axes, norm, out, threads, runtime, "irfftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, threads=None, runtime=None):
    """fftn over the last two axes."""
    return _public(_n_axes, "fft", a, s, axes, norm, out, threads, runtime, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, threads=None, runtime=None):
    """ifftn over the last two axes."""
    return _public(_n_axes, "ifft", a, s, axes, norm, out, threads, runtime, "ifft2")


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, threads=None, runtime=None):
    """rfftn over the last two axes."""
    return _public(_n_axes, "rfft", a, s, axes, norm, out, threads, runtime, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, threads=None, runtime=None):
    """irfftn over the last two axes."""
    return _public(_n_axes, "irfft", a, s, axes, norm, out, threads, runtime, "irfft2")
