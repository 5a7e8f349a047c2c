"""numpy.linalg-compatible linear algebra on tenferro's linalg engine.

Every function accepts float32, float64, complex64 and complex128 arrays
(integer and bool arrays are converted to float64, as numpy.linalg does) of
shape (..., M, N), batched over the leading axes, and returns numpy arrays
over tenferro's storage. Differences from numpy.linalg (docs/python.md):
eig always returns complex eigenvalues and eigenvectors, sorted by (real,
imag); singular vectors, eigenvectors and QR factors follow tenferro's gauge
(largest-magnitude entry of each vector real and positive, R's diagonal
non-negative); qr mode 'raw' is not supported. Errors are tenferro.Error
subclasses; singular or non positive definite matrices raise
tenferro.LinAlgError, which is a numpy.linalg.LinAlgError.
"""

import collections as _collections
import operator as _operator
import string as _string

import numpy as _np

from . import _tenferro
from ._errors import AxisError, InvalidArgumentError, LinAlgError

__all__ = [
    "MatrixShapeError",
    "svd",
    "qr",
    "eigh",
    "eig",
    "eigvals",
    "eigvalsh",
    "cholesky",
    "lu",
    "lu_factor",
    "solve",
    "solve_triangular",
    "inv",
    "det",
    "slogdet",
    "lstsq",
    "pinv",
    "norm",
    "matrix_norm",
    "vector_norm",
    "cond",
    "matrix_rank",
    "matrix_power",
    "multi_dot",
    "tensorinv",
    "tensorsolve",
    "svdvals",
    "matmul",
    "matrix_transpose",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
    "diagonal",
    "cross",
    "LinAlgError",
]


def _invalid(message):
    return InvalidArgumentError(message, code="kInvalidArgument", canonical="kInvalidArgument")


def _array(a):
    """A numpy array (a view of a DLPack producer such as a torch tensor,
    detached, its lazy conjugate/negative bits resolved; a plain ndarray
    view of an ndarray subclass such as np.matrix), or a Traced value
    (recorded as it is)."""
    if type(a) is _np.ndarray or isinstance(a, _tenferro.Traced):
        return a
    if isinstance(a, _np.ndarray):  # np.matrix and other subclasses: their indexing is not numpy's
        return _np.asarray(a)
    if hasattr(a, "__dlpack__"):
        return _tenferro._from_dlpack(a)
    return _np.asarray(a)


def _operand(a):
    """_array(a), integer and bool data as float64 like numpy.linalg."""
    arr = _array(a)
    if not isinstance(arr, _tenferro.Traced) and arr.dtype.kind in "biu":
        return arr.astype(_np.float64)
    return arr


class MatrixShapeError(InvalidArgumentError, LinAlgError):
    """An operand that is not a (stack of) matrices of the shape the
    function needs: a tenferro.InvalidArgumentError that is also a
    numpy.linalg.LinAlgError, as numpy.linalg raises for these."""


def _traced(*operands):
    for x in operands:  # a loop: any() over a generator costs a few hundred ns per call
        if isinstance(x, _Traced):
            return True
    return False


_Traced = _tenferro.Traced
_ndarray = _np.ndarray


def _scalar(r):
    """A 0-d result as a numpy scalar (numpy.float64, ...), as numpy.linalg
    returns one; arrays and Traced values unchanged."""
    return r[()] if isinstance(r, _np.ndarray) and r.ndim == 0 else r


def _shape_error(message):
    return MatrixShapeError(message, code="kShapeMismatch", canonical="kInvalidArgument")


def _axis(axis, ndim, who):
    """`axis` as a position in [0, ndim): an integer (TypeError otherwise,
    as numpy) in [-ndim, ndim) (AxisError otherwise)."""
    try:
        i = _operator.index(axis)
    except TypeError:
        raise TypeError(f"{who}: expected an integer axis, found {axis!r}") from None
    if not -ndim <= i < ndim:
        raise AxisError(f"{who}: axis {i} is out of bounds for an array of dimension {ndim}")
    return i % ndim


def _runtime(runtime, threads):
    """The runtime of a call's runtime= and threads=, as tenferro.einsum
    picks it: the module's runtime of that many threads, or `runtime`
    when its thread count agrees."""
    return _tenferro._runtime_for(runtime, threads)


def _call(name, operands, runtime, mode="", flag=True, rcond=-1.0):
    try:
        if _traced(*operands):
            # Inside tenferro.vjp / grad: recorded on the operands' tape.
            return _tenferro._traced_linalg(name, list(operands), mode, flag, rcond)
        return _tenferro._linalg(runtime, name, list(operands), mode, flag, rcond)
    except InvalidArgumentError as e:
        if e.code != "kShapeMismatch" or isinstance(e, LinAlgError):
            raise
        raise MatrixShapeError(str(e), code=e.code, canonical=e.canonical, stage=e.stage,
                                message=e.message) from None


# numpy 2's named results (tuples: unpacking works as with numpy 1.x).
EigResult = _collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EighResult = _collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _collections.namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _collections.namedtuple("SVDResult", ["U", "S", "Vh"])


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, *, threads=None, runtime=None):
    """U, S, Vh with a = U @ diag(S) @ Vh (numpy.linalg.svd); S only when
    compute_uv is False. `hermitian` is accepted and ignored (the general
    SVD is computed)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    del hermitian
    a = _operand(a)
    if not compute_uv:
        return _call("svd", [a], runtime, mode="values")[0]
    return SVDResult(*_call("svd", [a], runtime, mode="full" if full_matrices else "thin"))


def qr(a, mode="reduced", *, threads=None, runtime=None):
    """numpy.linalg.qr: mode 'reduced' or 'complete' returns (Q, R), 'r'
    returns R of the reduced factorisation."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    if mode not in ("reduced", "complete", "r"):
        raise _invalid(f"qr mode '{mode}': expected 'reduced', 'complete' or 'r' ('raw' is not supported)")
    q, r = _call("qr", [_operand(a)], runtime, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else QRResult(q, r)


def _uplo(uplo, who):
    """numpy's UPLO: 'L' or 'U' in either case."""
    if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
        raise _invalid(f"{who}: UPLO {uplo!r}: expected 'L' or 'U'")
    return uplo.upper()


def eigh(a, UPLO="L", *, threads=None, runtime=None):  # noqa: N803 (numpy's name)
    """(w, v) of a Hermitian matrix from its lower ('L') or upper ('U')
    triangle: w real ascending, v's columns the eigenvectors."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    UPLO = _uplo(UPLO, "eigh")  # noqa: N806
    if UPLO == "U":
        # The Hermitian matrix the upper triangle defines is the one the lower
        # triangle of the conjugate transpose defines (recorded when traced).
        a = _np.conjugate(_np.swapaxes(a, -1, -2))
    return EighResult(*_call("eigh", [a], runtime, flag=True))


def eigvalsh(a, UPLO="L", *, threads=None, runtime=None):  # noqa: N803
    """The eigenvalues of eigh, ascending."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    UPLO = _uplo(UPLO, "eigvalsh")  # noqa: N806
    if UPLO == "U":
        a = _np.conjugate(_np.swapaxes(a, -1, -2))
    return _call("eigh", [a], runtime, flag=False)[0]


def eig(a, *, threads=None, runtime=None):
    """(w, v) of a general square matrix: always complex, w sorted by (real,
    imag) ascending, v's columns unit-norm eigenvectors."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return EigResult(*_call("eig", [_operand(a)], runtime, flag=True))


def eigvals(a, *, threads=None, runtime=None):
    """The eigenvalues of eig (complex, sorted by (real, imag))."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return _call("eig", [_operand(a)], runtime, flag=False)[0]


def cholesky(a, *, upper=False, threads=None, runtime=None):
    """Lower-triangular L with a = L @ L^H (reads the lower triangle); with
    upper=True (numpy 2, torch) the upper-triangular U = L^H with
    a = U^H @ U."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    lower = _call("cholesky", [_operand(a)], runtime)[0]
    return _np.conjugate(_np.swapaxes(lower, -1, -2)) if upper else lower


def _batch_broadcast(a, b, b_core):
    """Broadcasts the batch axes of a (core 2) and b (core b_core) against
    each other as numpy does; the views have stride 0, nothing is copied."""
    if a.ndim < 2:
        raise _invalid(f"expected a matrix of rank >= 2, found shape {a.shape}")
    a_batch, b_batch = a.shape[:-2], b.shape[: b.ndim - b_core]
    if a_batch == b_batch:
        return a, b  # np.broadcast_to costs about 2 us a call
    batch = _np.broadcast_shapes(a_batch, b_batch)
    if a_batch != batch:
        a = _np.broadcast_to(a, batch + a.shape[-2:])
    if b_batch != batch:
        b = _np.broadcast_to(b, batch + b.shape[b.ndim - b_core :])
    return a, b


# numpy 2 reads solve's b as vectors only when it is 1-D; numpy 1.x also
# when b.ndim == a.ndim - 1. solve follows the numpy it runs with.
_NUMPY2 = _np.lib.NumpyVersion(_np.__version__) >= "2.0.0"


def _broadcasts(a, b, vector):
    """Whether b (a stack of vectors or of matrices) fits a's stack."""
    core = 1 if vector else 2
    if b.ndim < core or b.shape[b.ndim - core] != a.shape[-1]:
        return False
    if a.shape[:-2] == b.shape[: b.ndim - core]:  # the common case: np.broadcast_shapes costs a microsecond
        return True
    try:
        _np.broadcast_shapes(a.shape[:-2], b.shape[: b.ndim - core])
        return True
    except ValueError:
        return False


def _lu(a, threads, runtime, who):
    """(a as an operand, the LU op's (packed, pivots, permutation))."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    if a.ndim < 2:
        raise _shape_error(f"{who}: expected a matrix (..., M, N), found shape {tuple(a.shape)}")
    return a, _call("lu", [a], runtime)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False, *, threads=None, runtime=None):
    """scipy.linalg.lu: (P, L, U) with a = P @ L @ U for a (..., M, N), L
    unit lower-triangular (..., M, K), U upper-triangular (..., K, N),
    K = min(M, N), P a permutation matrix of a's dtype (torch.linalg.lu's
    order too); permute_l=True: (P @ L, U); p_indices=True: (p, L, U) with
    a = L[p] @ U (int64 row indices). Batched over leading axes; recorded
    inside tenferro.grad (through L and U). overwrite_a and check_finite
    are accepted and ignored (NaN or Inf input is a LinAlgError)."""
    del overwrite_a, check_finite
    a, (packed, _, perm) = _lu(a, threads, runtime, "lu")
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    lower = _np.tril(packed[..., :, :k], -1) + _np.eye(m, k, dtype=packed.dtype)
    upper = _np.triu(packed[..., :k, :])
    rows = perm.numpy() if _traced(perm) else perm  # a[rows] = L @ U
    if p_indices:
        return _np.argsort(rows, axis=-1), lower, upper
    p = _np.swapaxes(_np.eye(m, dtype=packed.dtype)[rows], -1, -2)
    if permute_l:
        return p @ lower, upper
    return p, lower, upper


def lu_factor(a, overwrite_a=False, check_finite=True, *, threads=None, runtime=None):
    """scipy.linalg.lu_factor: (lu, piv), the packed factors of a (..., M,
    N) (L's unit diagonal implied) and LAPACK's 0-based row interchanges:
    row i was interchanged with row piv[i] (int32, as scipy)."""
    del overwrite_a, check_finite
    _, (packed, piv, _) = _lu(a, threads, runtime, "lu_factor")
    return packed, (piv.numpy() if _traced(piv) else piv).astype(_np.int32)


_TRANS = {0: "N", "N": "N", "n": "N", 1: "T", "T": "T", "t": "T", 2: "C", "C": "C", "c": "C"}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True, *,
                     threads=None, runtime=None):
    """scipy.linalg.solve_triangular: x with op(a) @ x = b, a (..., M, M)
    triangular (only the `lower` or upper triangle is read; with
    unit_diagonal its diagonal is taken as ones), op by `trans` (0 or 'N':
    a, 1 or 'T': a.T, 2 or 'C': a^H), b (..., M) or (..., M, K), the stacks
    broadcast. A zero on the diagonal is a LinAlgError (singular).
    Recorded inside tenferro.grad. overwrite_b and check_finite are accepted
    and ignored."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    del overwrite_b, check_finite
    try:
        op = _TRANS[trans]
    except (KeyError, TypeError):
        raise _invalid(f"solve_triangular: trans {trans!r}: expected 0, 1, 2, 'N', 'T' or 'C'") from None
    a = _operand(a)
    b = _operand(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise _shape_error(f"solve_triangular: expected a square matrix a (..., M, M), found {tuple(a.shape)}")
    vector = b.ndim == 1
    if not _broadcasts(a, b, vector):
        raise InvalidArgumentError(
            f"solve_triangular: expected b of shape (..., {a.shape[-1]}) or (..., {a.shape[-1]}, K) whose stack "
            f"broadcasts with a's {tuple(a.shape[:-2])}, found {tuple(b.shape)}", code="kShapeMismatch",
            canonical="kInvalidArgument")
    if vector:
        b = b[..., None]
    a, b = _batch_broadcast(a, b, 2)
    x = _call("triangular_solve", [a, b], runtime, mode=("L:" if lower else "U:") + op, flag=bool(unit_diagonal))[0]
    return x[..., 0] if vector else x


def solve(a, b, *, threads=None, runtime=None):
    """x with a @ x = b for a of shape (..., M, M) and b of shape (..., M)
    (vectors) or (..., M, K) (matrices), the stacks broadcast. A 1-D b is a
    vector; a b with b.ndim == a.ndim - 1 is a stack of vectors under
    numpy 1.x's rule and a stack of matrices under numpy 2's: solve
    follows the installed numpy, and takes the other reading when only
    that one fits (where numpy raises)."""
    if (threads is None and type(a) is _ndarray and type(b) is _ndarray and a.ndim == 2 and 0 < b.ndim <= 2
            and a.dtype.char in "fdFD" and b.dtype == a.dtype and a.shape[0] == a.shape[1] == b.shape[0]):
        # One system of a computed dtype, straight to the extension: the
        # checks below cost about 2 us of a 2 x 2 solve's 4.7.
        if b.ndim == 2:
            return _tenferro._linalg(runtime, "solve", [a, b], "", True, -1.0)[0]
        return _tenferro._linalg(runtime, "solve", [a, b[:, None]], "", True, -1.0)[0][:, 0]
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    b = _operand(b)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:  # before b's shape, as numpy: a LinAlgError
        raise _shape_error(f"solve: expected a square matrix a of shape (..., M, M), found {tuple(a.shape)}")
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and not _NUMPY2)
    if b.ndim == a.ndim - 1 and b.ndim > 1 and not _broadcasts(a, b, vector) and _broadcasts(a, b, not vector):
        vector = not vector
    if not _broadcasts(a, b, vector):
        raise InvalidArgumentError(
            f"solve: expected b of shape (..., {a.shape[-1]}) or (..., {a.shape[-1]}, K) whose stack broadcasts with "
            f"a's {tuple(a.shape[:-2])}, found b of shape {tuple(b.shape)} for a of shape {tuple(a.shape)}",
            code="kShapeMismatch", canonical="kInvalidArgument")
    if vector:
        b = b[..., None]
    a, b = _batch_broadcast(a, b, 2)
    x = _call("solve", [a, b], runtime)[0]
    return x[..., 0] if vector else x


def inv(a, *, threads=None, runtime=None):
    """The inverse of each square matrix."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return _call("inv", [_operand(a)], runtime)[0]


def det(a, *, threads=None, runtime=None):
    """The determinant of each square matrix (a's dtype; shape a.shape[:-2];
    a numpy scalar for one matrix)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return _scalar(_call("det", [_operand(a)], runtime)[0])


def slogdet(a, *, threads=None, runtime=None):
    """(sign, logabsdet) of each square matrix."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return SlogdetResult(*(_scalar(r) for r in _call("slogdet", [_operand(a)], runtime)))


# Machine precision of float64 (False) and float32 (True) results.
_EPS = {False: float(_np.finfo(_np.float64).eps), True: float(_np.finfo(_np.float32).eps)}


def lstsq(a, b, rcond=None, *, threads=None, runtime=None):
    """numpy.linalg.lstsq's (x, residuals, rank, s): x the minimum-norm
    least-squares solution of a @ x = b (b of shape (M,) or (M, K));
    singular values below rcond * max(s) count as zero. rcond None (the
    default, numpy 2's): machine precision * max(M, N); a negative rcond
    or 'warn' (numpy 1.x's default): machine precision, as LAPACK and
    numpy 1.x take them. Also accepts batches (..., M, N)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    b = _operand(b)
    if a.ndim < 2:
        raise _shape_error(f"lstsq: expected a matrix a of rank >= 2, found shape {tuple(a.shape)}")
    vector = b.ndim == a.ndim - 1
    b2 = b[..., None] if vector else b
    m, n = a.shape[-2], a.shape[-1]
    eps = _EPS[a.dtype.char in "fF"]
    if rcond is None:
        eps_rcond = eps * max(m, n)
    else:
        r = -1.0 if isinstance(rcond, str) and rcond == "warn" else _float_arg(rcond, "lstsq", "rcond")
        eps_rcond = eps if r < 0 else r
    # One gelsd call gives the solution and the singular values (recorded
    # with the lstsq AD rule inside tenferro.vjp / grad).
    x, s = _call("lstsq", [a, b2], runtime, rcond=eps_rcond)
    s_values = s.numpy() if _traced(s) else s
    # The singular values come in descending order: the largest is the first.
    if s_values.ndim == 1:  # one matrix: plain counts (numpy's axis= forms cost microseconds here)
        rank = _np.int32(_np.count_nonzero(s_values > eps_rcond * s_values[0]) if s_values.shape[0] else 0)
        full_rank = rank == n
    else:
        cutoff = eps_rcond * s_values[..., :1] if s_values.shape[-1] > 0 else 0.0
        rank = _np.asarray(_np.count_nonzero(s_values > cutoff, axis=-1), dtype=_np.int32)  # LAPACK's int, as numpy
        full_rank = bool(_np.all(rank == n))
    if full_rank and m > n:
        r = b2 - a @ x
        residuals = ((r.real ** 2 + r.imag ** 2) if r.dtype.kind == "c" else r * r).sum(axis=-2)
    else:
        residuals = _np.empty(b2.shape[:-2] + (0,), dtype=s.dtype)
    if vector:
        x = x[..., 0]
    return x, residuals, rank, s


def _float_arg(value, who, name):
    """`value` as a float (TypeError naming the argument otherwise)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: expected a number for {name}, found {value!r}") from None


def pinv(a, rcond=None, hermitian=False, *, rtol=None, threads=None, runtime=None):
    """The Moore-Penrose pseudo-inverse; singular values below rcond *
    max(s) count as zero (rcond None: numpy's default 1e-15 for double
    precision; float32 / complex64 are computed in single precision, where
    the default is max(M, N) * eps(float32), torch's; an array of rcond
    broadcasts over the stack, as in numpy). `rtol` is numpy 2's name for
    the same cutoff (give one of the two). `hermitian` is accepted and
    ignored."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    del hermitian
    if rtol is not None and rcond is not None:
        raise _invalid("pinv: rcond and rtol are the same cutoff: give one of them")
    a = _operand(a)
    if rtol is not None:
        rcond = rtol
    elif rcond is None:  # numpy's 1e-15 (it computes float32 in float64); max(M, N) eps in single precision, as torch
        single = _np.dtype(a.dtype).char in "fF"
        rcond = _EPS[True] * max(a.shape[-2:], default=1) if single and len(a.shape) >= 2 else 1e-15
    if _np.ndim(rcond) == 0:
        return _call("pinv", [a], runtime, rcond=_float_arg(rcond, "pinv", "rcond"))[0]
    if _traced(a):
        raise _invalid("pinv: an array rcond is not recorded inside tenferro.vjp / grad (pass one float)")
    a = _np.asarray(a)
    try:
        batch = _np.broadcast_shapes(a.shape[:-2], _np.shape(rcond))
    except ValueError:
        raise InvalidArgumentError(
            f"pinv: expected rcond of a shape that broadcasts with the stack's {a.shape[:-2]}, found "
            f"{_np.shape(rcond)}", code="kShapeMismatch", canonical="kInvalidArgument") from None
    a = _np.broadcast_to(a, batch + a.shape[-2:])
    rcond = _np.asarray(rcond, dtype=float)
    # One batched SVD and numpy's own composition (one cutoff per matrix):
    # V diag(1/s where s > rcond * max(s), else 0) U^H.
    u, s, vh = _call("svd", [a], runtime, mode="thin")
    cutoff = rcond[..., None] * (s.max(axis=-1, keepdims=True) if s.shape[-1] else 0.0)
    with _np.errstate(divide="ignore"):
        s_inv = _np.where(s > cutoff, 1.0 / s, 0.0).astype(s.dtype, copy=False)
    return _np.matmul(_np.swapaxes(vh, -1, -2).conj() * s_inv[..., None, :], _np.swapaxes(u, -1, -2).conj())


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", 1: "1", -1: "-1", 2: "2", -2: "-2", _np.inf: "inf", -_np.inf: "-inf"}


def _matrix_ord(ord):  # noqa: A002 (numpy's name)
    key = "fro" if ord is None else ord
    try:
        return _MATRIX_ORDS[key]
    except (KeyError, TypeError):
        raise _invalid(f"norm: invalid norm order {ord!r} for matrices: expected None, 'fro', 'nuc', 1, -1, 2, -2, "
                       "inf or -inf") from None


def _vector_ord(ord):  # noqa: A002
    """(mode, p) for the vector_norm extension."""
    if ord is None:
        return "2", 2.0
    if isinstance(ord, str):
        raise _invalid(f"norm: invalid norm order {ord!r} for vectors: expected a number, inf or -inf")
    p = float(ord)
    if p == _np.inf:
        return "inf", p
    if p == -_np.inf:
        return "-inf", p
    if p == 2.0:
        return "2", p
    return "p", p


def _axes(axis, ndim, count):
    axes = tuple(axis)
    if count is not None and len(axes) != count:
        raise _invalid(f"norm: expected {count} axes, found {axes}")
    out = [_axis(a, ndim, "norm") for a in axes]
    if len(set(out)) != len(out):
        raise _invalid(f"norm: duplicate axes given: {axes}")
    return out


def _norm_over(x, ord, axes, keepdims, runtime):  # noqa: A002
    """The vector (one axis) or matrix (two axes) norm of x over `axes`."""
    ndim = len(x.shape)
    last = list(range(ndim - len(axes), ndim))
    if axes != last:
        x = _np.moveaxis(x, axes, last)  # recorded when x is traced
    if len(axes) == 1:
        mode, p = _vector_ord(ord)
        r = _call("vector_norm", [x], runtime, mode=mode, rcond=p)[0]
    else:
        r = _call("matrix_norm", [x], runtime, mode=_matrix_ord(ord))[0]
    if keepdims:
        r = _np.expand_dims(r, tuple(sorted(axes)))
    return _scalar(r)


def norm(x, ord=None, axis=None, keepdims=False, *, threads=None, runtime=None):  # noqa: A002
    """numpy.linalg.norm: a vector norm over one axis (ord None or 2: the
    2-norm; inf, -inf, 0 (nonzero count) or any other p, negative too:
    (sum |x|^p)^(1/p)) or a matrix norm over
    two axes (ord None or 'fro', 'nuc', 1, -1, 2, -2, inf, -inf). axis None:
    the 2-norm of the flattened array when ord is None, else the vector or
    matrix norm of a 1-D or 2-D x. The result is real (float64 for integer
    input)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    if axis is None and not keepdims and type(x) is _np.ndarray and x.dtype.kind in "fc":
        # The common calls, without the general path's Python work (1.5 us
        # of a 3 us call on 16 elements): the 2-norm of the flattened array
        # (a view when x is contiguous), a vector's or a matrix's norm.
        if ord is None:
            return _tenferro._linalg(runtime, "vector_norm", [x.reshape(-1)], "2", True, 2.0)[0][()]
        if x.ndim == 1:
            mode, p = _vector_ord(ord)
            return _tenferro._linalg(runtime, "vector_norm", [x], mode, True, p)[0][()]
        if x.ndim == 2:
            return _call("matrix_norm", [x], runtime, mode=_matrix_ord(ord))[0][()]
    if (type(x) is _np.ndarray and x.dtype.kind in "fc" and not keepdims and type(axis) is int and x.ndim >= 1
            and axis in (-1, x.ndim - 1)):  # vector norms over the last axis, also without the general path
        mode, p = _vector_ord(ord)
        return _scalar(_tenferro._linalg(runtime, "vector_norm", [x], mode, True, p)[0])
    x = _operand(x)
    ndim = len(x.shape)
    if axis is None:
        if ord is None:
            r = _call("vector_norm", [_np.reshape(x, -1)], runtime, mode="2", rcond=2.0)[0]
            return _np.reshape(r, (1,) * ndim) if keepdims else _scalar(r)
        if ndim not in (1, 2):
            raise _invalid(f"norm: improper number of dimensions to norm: expected 1 or 2 with ord={ord!r}, found {ndim}")
        axis = tuple(range(ndim))
    elif not isinstance(axis, (tuple, list)):
        try:
            axis = (int(axis),)  # numpy: any integer-convertible axis (1.0 too)
        except (TypeError, ValueError):
            raise TypeError(f"norm: expected an integer axis, a tuple of them or None, found {axis!r}") from None
    axis = tuple(axis)
    if len(axis) not in (1, 2):
        raise _invalid(f"norm: improper number of dimensions to norm: expected 1 or 2 axes, found {len(axis)}")
    return _norm_over(x, ord, _axes(axis, ndim, len(axis)), keepdims, runtime)


def matrix_norm(x, /, *, keepdims=False, ord="fro", threads=None, runtime=None):  # noqa: A002
    """The matrix norm over the last two axes (numpy.linalg.matrix_norm)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x = _operand(x)
    return _norm_over(x, ord, _axes((-2, -1), len(x.shape), 2), keepdims, runtime)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2, threads=None, runtime=None):  # noqa: A002
    """The vector norm over `axis` (numpy.linalg.vector_norm; None: the
    flattened array)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    if axis is None and not keepdims and type(x) is _np.ndarray and x.dtype.kind in "fc":  # as norm()'s
        mode, p = _vector_ord(ord)
        return _tenferro._linalg(runtime, "vector_norm", [x.reshape(-1)], mode, True, p)[0][()]
    x = _operand(x)
    ndim = len(x.shape)
    if axis is None:
        mode, p = _vector_ord(ord)
        r = _call("vector_norm", [_np.reshape(x, -1)], runtime, mode=mode, rcond=p)[0]
        return _np.reshape(r, (1,) * ndim) if keepdims else _scalar(r)
    if not isinstance(axis, (tuple, list)):
        return _norm_over(x, ord, _axes((axis,), ndim, 1), keepdims, runtime)
    # Several axes (numpy 2, torch): one vector per index of the others.
    axes = _axes(axis, ndim, None)
    rest = [a for a in range(ndim) if a not in axes]
    moved = _np.moveaxis(x, axes, list(range(ndim - len(axes), ndim)))
    flat = _np.reshape(moved, tuple(x.shape[a] for a in rest) + (-1,))
    r = _norm_over(flat, ord, [len(rest)], False, runtime)
    if keepdims:
        r = _np.reshape(r, tuple(1 if a in axes else x.shape[a] for a in range(ndim)))
    return _scalar(r)


def _matmul(a, b, runtime):
    """a @ b for stacks of matrices through tenferro.einsum (numpy's matmul
    for dtypes einsum does not take)."""
    same = a.dtype == b.dtype  # (np.result_type costs most of a small product)
    if (a.dtype if same else _np.result_type(a.dtype, b.dtype)).kind not in "fc":  # (of dtypes: Traced too)
        return _np.matmul(a, b)
    subscripts = "ij,jk->ik" if a.ndim == 2 and b.ndim == 2 else "...ij,...jk->...ik"
    return _tenferro.einsum(subscripts, a, b, runtime=runtime)


def matrix_power(a, n, *, threads=None, runtime=None):
    """a raised to the integer power n by repeated squaring (numpy.linalg.
    matrix_power): n = 0 gives the identity, n < 0 the power of inv(a)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    if not isinstance(n, (int, _np.integer)):
        raise TypeError(f"matrix_power: expected an integer exponent, found {n!r}")
    a = _array(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise _shape_error(f"matrix_power: expected a square matrix (..., M, M), found shape {a.shape}")
    if n == 0:
        return _np.broadcast_to(_np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
    if n < 0:
        a = inv(a, runtime=runtime)
        n = -n
    result = None
    square = a
    while True:
        if n & 1:
            result = square if result is None else _matmul(result, square, runtime)
        n >>= 1
        if n == 0:
            return _np.array(result, copy=True) if result is a and not _traced(a) else result
        square = _matmul(square, square, runtime)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None, threads=None, runtime=None):  # noqa: N803
    """The number of singular values above tol (default: S.max() * max(M, N)
    * eps, numpy.linalg.matrix_rank), or above rtol * S.max() (numpy 2's
    rtol; give tol or rtol); `hermitian` is accepted and ignored."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    del hermitian
    if tol is not None and rtol is not None:
        raise _invalid("matrix_rank: give tol (absolute) or rtol (relative), not both")
    A = _operand(A)  # noqa: N806
    A = A.numpy() if _traced(A) else _np.asarray(A)  # noqa: N806 (an integer: no gradient)
    if A.ndim < 2:
        return int(not _np.all(A == 0))
    s = svd(A, compute_uv=False, runtime=runtime)
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] > 0 else _np.zeros(s.shape[:-1] + (1,), s.dtype)
    if tol is not None:
        tol = _np.asarray(tol)[..., None]
    elif rtol is not None:
        tol = smax * _np.asarray(rtol)[..., None]
    else:
        tol = smax * max(A.shape[-2:]) * _np.finfo(s.dtype).eps
    rank = _np.count_nonzero(s > tol, axis=-1)
    return _np.int64(rank) if A.ndim == 2 else rank  # numpy's types


def cond(x, p=None, *, threads=None, runtime=None):
    """The condition number of each matrix (numpy.linalg.cond): p None, 2 or
    -2 from the singular values, otherwise norm(x, p) * norm(inv(x), p);
    a singular matrix gives inf."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x = _operand(x)
    if not _traced(x):
        x = _np.asarray(x)
    if x.ndim < 2:
        raise _shape_error(f"cond: expected a matrix (..., M, N), found shape {x.shape}")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise _shape_error(f"cond: expected non-empty matrices, found shape {x.shape}")
    if p not in (None, 2, -2) and x.shape[-1] != x.shape[-2]:
        raise _shape_error(f"cond: expected square matrices for p={p!r}, found shape {x.shape}")
    if _traced(x):
        # Recorded: the same formulas on the whole stack (a singular matrix
        # raises LinAlgError here instead of giving inf).
        if p is None or p == 2 or p == -2:
            s = svd(x, compute_uv=False, runtime=runtime)
            return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
        return norm(x, p, axis=(-2, -1), runtime=runtime) * norm(inv(x, runtime=runtime), p, axis=(-2, -1),
                                                                 runtime=runtime)
    if p is None or p == 2 or p == -2:
        try:  # finite matrices (the common call): the singular values alone
            s = _call("svd", [x], runtime, mode="values")[0]
        except LinAlgError:  # non-finite values: below
            s = None
        if s is not None:
            num, den = (s[..., -1], s[..., 0]) if p == -2 else (s[..., 0], s[..., -1])
            if s.ndim == 1:  # one matrix: 0 / 0 (a zero matrix's -2 ratio) is inf too, as numpy's
                return num / den if den != 0 else s.dtype.type(_np.inf)
            with _np.errstate(all="ignore"):
                r = _np.asarray(num / den)
            r[_np.isnan(r)] = _np.inf
            return r
        finite = _np.isfinite(x).all(axis=(-2, -1))
        y = x if finite.all() else _np.where(finite[..., None, None], x, _np.eye(x.shape[-1], dtype=x.dtype))
        s = svd(y, compute_uv=False, runtime=runtime)
        with _np.errstate(all="ignore"):
            r = _np.asarray(s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1])
        r[~finite] = _np.inf  # numpy: NaN from the non-finite values, then inf unless x has a NaN
        r[_np.isnan(x).any(axis=(-2, -1))] = _np.nan
    else:
        try:  # the whole stack at once
            r = norm(x, p, axis=(-2, -1), runtime=runtime) * norm(inv(x, runtime=runtime), p, axis=(-2, -1),
                                                                  runtime=runtime)
        except LinAlgError:
            # Singular or non-finite matrices in the stack: the others in one
            # pass with those replaced by the identity, then inf for them (NaN
            # where the matrix has a NaN, as numpy gives it).
            finite = _np.isfinite(x).all(axis=(-2, -1))
            eye = _np.eye(x.shape[-1], dtype=x.dtype)
            bad = ~finite
            bad |= det(_np.where(bad[..., None, None], eye, x), runtime=runtime) == 0
            y = _np.where(bad[..., None, None], eye, x)
            r = _np.asarray(norm(y, p, axis=(-2, -1), runtime=runtime) *
                            norm(inv(y, runtime=runtime), p, axis=(-2, -1), runtime=runtime))
            r[bad] = _np.inf
            r[_np.isnan(x).any(axis=(-2, -1))] = _np.nan
            return r[()] if r.ndim == 0 else r
    r = _np.asarray(r)
    r[_np.isnan(r) & ~_np.isnan(x).any(axis=(-2, -1))] = _np.inf
    return r[()] if r.ndim == 0 else r


def multi_dot(arrays, *, out=None, threads=None, runtime=None):
    """The product of a chain of matrices in the cheapest order
    (numpy.linalg.multi_dot): the first array may be 1-D (a row vector),
    the last 1-D (a column vector). The order comes from tenferro's optimal
    contraction-path planner (the greedy one beyond 16 arrays)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    arrays = [_array(a) for a in arrays]  # integers stay integers (numpy's chain of dot)
    if len(arrays) < 2:
        raise _invalid(f"multi_dot: expected at least two arrays, found {len(arrays)}")
    for i, a in enumerate(arrays):
        allowed = (1, 2) if i in (0, len(arrays) - 1) else (2,)  # vectors only at the ends
        if a.ndim not in allowed:
            raise _shape_error(f"multi_dot: array {i}: expected {' or '.join(map(str, allowed))} dimensions, found "
                               f"{a.ndim}")
    labels = [_string.ascii_letters[i] if i < 52 else chr(0xC0 + i) for i in range(len(arrays) + 1)]
    terms = [labels[i] + labels[i + 1] for i in range(len(arrays))]
    first, last = labels[0], labels[-1]
    if arrays[0].ndim == 1:
        terms[0] = terms[0][1:]
        first = ""
    if arrays[-1].ndim == 1:
        terms[-1] = terms[-1][:-1]
        last = ""
    subscripts = ",".join(terms) + "->" + first + last
    # The optimal planner takes at most 16 operands; longer chains go greedy.
    optimize = "optimal" if len(arrays) <= 16 else "greedy"
    return _tenferro.einsum(subscripts, *arrays, optimize=optimize, runtime=runtime, out=out)


def tensorinv(a, ind=2, *, threads=None, runtime=None):
    """The inverse of `a` with respect to tensordot over its first `ind`
    axes (numpy.linalg.tensorinv)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a = _operand(a)
    a = a if _traced(a) else _np.asarray(a)
    if ind <= 0:
        raise _invalid(f"tensorinv: expected ind > 0, found {ind}")
    inv_shape = a.shape[ind:] + a.shape[:ind]
    rows, cols = int(_np.prod(a.shape[:ind])), int(_np.prod(a.shape[ind:]))
    if rows != cols:
        raise _shape_error(f"tensorinv: expected the first {ind} axes of a (extents {a.shape[:ind]}) to have as many "
                           f"elements as the others ({a.shape[ind:]}), found {rows} and {cols}")
    return inv(a.reshape(rows, cols), runtime=runtime).reshape(inv_shape)


def tensorsolve(a, b, axes=None, *, threads=None, runtime=None):
    """x with tensordot(a, x, x.ndim) == b (numpy.linalg.tensorsolve)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    a, b = _operand(a), _operand(b)
    a, b = (x if _traced(x) else _np.asarray(x) for x in (a, b))
    if axes is not None:
        order = [k for k in range(a.ndim) if k not in [ax % a.ndim for ax in axes]]
        order += [ax % a.ndim for ax in axes]
        a = a.transpose(order)
    x_shape = a.shape[-(a.ndim - b.ndim):]
    rows = int(_np.prod(x_shape))
    matrix = a.reshape(-1, rows)
    if matrix.shape[0] != rows:
        raise _shape_error(
            f"tensorsolve: expected prod(a.shape[b.ndim:]) == prod(b.shape) ({rows}), found {matrix.shape[0]}")
    return solve(matrix, b.reshape(-1), runtime=runtime).reshape(x_shape)


# --- numpy 2's array-API functions of numpy.linalg ---------------------------


def svdvals(x, /, *, threads=None, runtime=None):
    """The singular values of each matrix, descending (numpy 2's
    numpy.linalg.svdvals)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    return svd(x, compute_uv=False, runtime=runtime)


def matmul(x1, x2, /, *, threads=None, runtime=None):
    """x1 @ x2 (numpy 2's numpy.linalg.matmul): a 1-D operand is a vector,
    stacks of matrices broadcast."""
    if runtime is None and threads is None and type(x1) is _ndarray and type(x2) is _ndarray and x1.ndim == 2 \
            and x2.ndim == 2:
        # The common call, without the ellipsis, the conversions and the
        # runtime= keyword (pybind's keyword handling: 0.25 us of a 2 x 2
        # product's 1.4)
        return _tenferro.einsum("ij,jk->ik", x1, x2)
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x1, x2 = _array(x1), _array(x2)
    if x1.ndim == 2 and x2.ndim == 2:  # without the ellipsis (0.2 us of 1.8 at 8 x 8)
        return _tenferro.einsum("ij,jk->ik", x1, x2, runtime=runtime)
    if x1.ndim == 0 or x2.ndim == 0:
        raise _invalid("matmul: expected operands of at least one dimension, found a scalar")
    lhs = "...ij" if x1.ndim > 1 else "j"
    rhs = "...jk" if x2.ndim > 1 else "j"
    out = {(True, True): "...ik", (True, False): "...i", (False, True): "...k", (False, False): ""}
    return _tenferro.einsum(f"{lhs},{rhs}->{out[x1.ndim > 1, x2.ndim > 1]}", x1, x2, runtime=runtime)


def matrix_transpose(x, /):
    """Each matrix transposed: the last two axes swapped (a view)."""
    x = _array(x)
    if x.ndim < 2:
        raise _invalid(f"matrix_transpose: expected at least two dimensions, found {x.ndim}")
    return _np.swapaxes(x, -1, -2)


def outer(x1, x2, /, *, threads=None, runtime=None):
    """The outer product of two vectors (numpy 2's numpy.linalg.outer:
    1-D operands only)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x1, x2 = _array(x1), _array(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise _invalid(f"outer: expected two 1-D arrays, found {x1.ndim}-D and {x2.ndim}-D")
    return _tenferro.einsum("i,j->ij", x1, x2, runtime=runtime)


def _letters(n, start=0):
    return [_string.ascii_letters[start + i] for i in range(n)]


def tensordot(x1, x2, /, *, axes=2, threads=None, runtime=None):
    """numpy.tensordot as one tenferro.einsum: `axes` an integer (the last
    axes of x1 against the first of x2) or a pair of axis sequences."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x1, x2 = _array(x1), _array(x2)
    if isinstance(axes, (int, _np.integer)):
        if axes < 0 or axes > min(x1.ndim, x2.ndim):
            raise _invalid(f"tensordot: axes={axes}: expected 0 to {min(x1.ndim, x2.ndim)}")
        a1, a2 = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        a1, a2 = (([axes[0]], [axes[1]]) if _np.ndim(axes[0]) == 0 else (list(axes[0]), list(axes[1])))
        if len(a1) != len(a2):
            raise _invalid(f"tensordot: expected as many axes of x1 as of x2, found {len(a1)} and {len(a2)}")
        a1 = [_axis(a, x1.ndim, "tensordot (x1)") for a in a1]
        a2 = [_axis(a, x2.ndim, "tensordot (x2)") for a in a2]
        if len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
            raise _invalid(f"tensordot: expected distinct axes, found {axes!r}")
    lhs = _letters(x1.ndim)
    rhs = _letters(x2.ndim, x1.ndim)
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise InvalidArgumentError(
                f"tensordot: axis {i} of x1 has extent {x1.shape[i]}, axis {j} of x2 {x2.shape[j]}; expected equal",
                code="kShapeMismatch",
                canonical="kInvalidArgument",
            )
        rhs[j] = lhs[i]
    out = [lhs[i] for i in range(x1.ndim) if i not in a1] + [rhs[j] for j in range(x2.ndim) if j not in a2]
    r = _tenferro.einsum("".join(lhs) + "," + "".join(rhs) + "->" + "".join(out), x1, x2, runtime=runtime)
    if out or isinstance(r, _tenferro.Traced):
        return r
    return _np.asarray(r)  # numpy.tensordot: a 0-d array, not a scalar


def trace(x, /, *, offset=0, dtype=None):
    """The sum of each matrix's `offset` diagonal (numpy 2's
    numpy.linalg.trace: over the last two axes)."""
    x = _array(x)
    if x.ndim < 2:
        raise _invalid(f"trace: expected at least two dimensions, found {x.ndim}")
    if dtype is None:  # (the recorded trace takes no dtype)
        return _np.trace(x, offset=offset, axis1=-2, axis2=-1)
    return _np.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """Each matrix's `offset` diagonal (numpy 2's numpy.linalg.diagonal:
    over the last two axes)."""
    x = _array(x)
    if x.ndim < 2:
        raise _invalid(f"diagonal: expected at least two dimensions, found {x.ndim}")
    return _np.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def vecdot(x1, x2, /, *, axis=-1, threads=None, runtime=None):
    """sum(conj(x1) * x2) over `axis`, the other axes broadcast (numpy 2's
    numpy.linalg.vecdot)."""
    if threads is not None:
        runtime = _runtime(runtime, threads)
    x1, x2 = _array(x1), _array(x2)
    i1, i2 = _axis(axis, x1.ndim, "vecdot (x1)"), _axis(axis, x2.ndim, "vecdot (x2)")
    if x1.shape[i1] != x2.shape[i2]:
        raise InvalidArgumentError(
            f"vecdot: axis {axis} has extent {x1.shape[i1]} in x1 and {x2.shape[i2]} in x2; expected equal",
            code="kShapeMismatch",
            canonical="kInvalidArgument",
        )
    # The contracted axis last (np.moveaxis costs a microsecond or two, so only when it is elsewhere).
    if i1 != x1.ndim - 1:
        x1 = _np.moveaxis(x1, i1, -1)
    if i2 != x2.ndim - 1:
        x2 = _np.moveaxis(x2, i2, -1)
    if x1.dtype.kind == "c":
        x1 = _np.conjugate(x1)
    subscripts = "i,i->" if x1.ndim == 1 and x2.ndim == 1 else "...i,...i->..."
    return _tenferro.einsum(subscripts, x1, x2, runtime=runtime)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-element vectors along `axis` (numpy 2's
    numpy.linalg.cross: 3-vectors only), the other axes broadcast."""
    x1, x2 = _array(x1), _array(x2)
    _axis(axis, x1.ndim, "cross (x1)")
    _axis(axis, x2.ndim, "cross (x2)")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise _invalid(f"cross: expected 3-element vectors along axis {axis}, found {x1.shape[axis]} and "
                       f"{x2.shape[axis]}")
    a, b = _np.moveaxis(x1, axis, -1), _np.moveaxis(x2, axis, -1)
    parts = [a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
             a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
             a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]]
    return _np.moveaxis(_np.stack(parts, axis=-1), -1, axis)
