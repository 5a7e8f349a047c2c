"""tenferro.linalg against numpy.linalg: values, shapes and conventions
(gauge-dependent factors are checked through the identities they satisfy)."""

import numpy as np
import pytest

import tenferro
import tenferro.linalg as tl
from conftest import DTYPES, random_array


def tol(dtype):
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    return dict(rtol=2e-3, atol=2e-4) if single else dict(rtol=1e-9, atol=1e-10)


def herm(a):
    return np.conj(np.swapaxes(a, -1, -2))


def spd(rng, n, dtype, batch=()):
    x = random_array(rng, batch + (n, n), dtype)
    return (x @ herm(x) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
def test_svd(dtype, shape, rng):
    a = random_array(rng, shape, dtype)
    k = min(shape[-2:])
    u, s, vh = tl.svd(a, full_matrices=False)
    assert u.shape == shape[:-1] + (k,) and vh.shape == shape[:-2] + (k, shape[-1])
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, **tol(dtype))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **tol(dtype))
    assert s.dtype == np.linalg.svd(a, compute_uv=False).dtype
    uf, sf, vhf = tl.svd(a)  # numpy's default: full matrices
    assert uf.shape == shape[:-1] + (shape[-2],) and vhf.shape == shape[:-2] + (shape[-1], shape[-1])
    np.testing.assert_allclose(herm(uf) @ uf, np.broadcast_to(np.eye(shape[-2]), uf.shape), **tol(dtype))
    np.testing.assert_allclose(tl.svd(a, compute_uv=False), s, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_qr(dtype, shape, rng):
    a = random_array(rng, shape, dtype)
    for mode in ("reduced", "complete"):
        q, r = tl.qr(a, mode=mode)
        qn, rn = np.linalg.qr(a, mode=mode)
        assert q.shape == qn.shape and r.shape == rn.shape
        np.testing.assert_allclose(q @ r, a, **tol(dtype))
        np.testing.assert_allclose(np.triu(r), r, **tol(dtype))
        assert np.all(np.real(np.diagonal(r)) >= -1e-6)
    np.testing.assert_allclose(tl.qr(a, mode="r"), tl.qr(a)[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(dtype, rng):
    a = random_array(rng, (5, 5), dtype)
    a = (a + herm(a)) / 2
    w, v = tl.eigh(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **tol(dtype))
    np.testing.assert_allclose(a @ v, v * w, **tol(dtype))
    # UPLO selects the triangle that is read.
    lower_only = np.tril(a)
    upper_only = np.triu(a)
    np.testing.assert_allclose(tl.eigh(lower_only, UPLO="L")[0], np.linalg.eigvalsh(lower_only, UPLO="L"), **tol(dtype))
    np.testing.assert_allclose(tl.eigh(upper_only, UPLO="U")[0], np.linalg.eigvalsh(upper_only, UPLO="U"), **tol(dtype))
    np.testing.assert_allclose(tl.eigvalsh(a), w, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig(dtype, rng):
    a = random_array(rng, (2, 4, 4), dtype)
    w, v = tl.eig(a)
    assert np.iscomplexobj(w) and np.iscomplexobj(v)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], **tol(dtype))
    wn = np.linalg.eigvals(a)
    for b in range(2):
        want = sorted(wn[b], key=lambda z: (z.real, z.imag))
        np.testing.assert_allclose(w[b], want, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_solve_inv_det(dtype, rng):
    a = spd(rng, 4, dtype, batch=(3,))
    np.testing.assert_allclose(tl.cholesky(a), np.linalg.cholesky(a), **tol(dtype))
    b = random_array(rng, (3, 4, 2), dtype)
    np.testing.assert_allclose(tl.solve(a, b), np.linalg.solve(a, b), **tol(dtype))
    bv = random_array(rng, (3, 4), dtype)
    np.testing.assert_allclose(tl.solve(a, bv), np.linalg.solve(a, bv), **tol(dtype))
    np.testing.assert_allclose(tl.solve(a[0], bv[0]), np.linalg.solve(a[0], bv[0]), **tol(dtype))
    np.testing.assert_allclose(tl.solve(a[0], b), np.linalg.solve(a[0], b), **tol(dtype))  # batch broadcast
    np.testing.assert_allclose(tl.inv(a), np.linalg.inv(a), **tol(dtype))
    np.testing.assert_allclose(tl.det(a), np.linalg.det(a), **tol(dtype))
    sign, logdet = tl.slogdet(a)
    sn, ln = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign, sn, **tol(dtype))
    np.testing.assert_allclose(logdet, ln, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_and_pinv(dtype, rng):
    a = random_array(rng, (6, 3), dtype)
    b = random_array(rng, (6, 2), dtype)
    x, res, rank, s = tl.lstsq(a, b)
    xn, resn, rankn, sn = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x, xn, **tol(dtype))
    np.testing.assert_allclose(res, resn, **tol(dtype))
    assert rank == rankn
    np.testing.assert_allclose(s, sn, **tol(dtype))
    xv, resv, _, _ = tl.lstsq(a, b[:, 0])
    np.testing.assert_allclose(xv, np.linalg.lstsq(a, b[:, 0], rcond=None)[0], **tol(dtype))
    assert resv.shape == (1,)
    # Rank deficient: no residuals, numpy's rank.
    d = np.concatenate([a[:, :2], a[:, :1]], axis=1)
    _, resd, rankd, _ = tl.lstsq(d, b)
    assert rankd == 2 and resd.shape == (0,)
    np.testing.assert_allclose(tl.pinv(a), np.linalg.pinv(a), **tol(dtype))


def test_integer_input_becomes_float64():
    a = np.array([[2, 1], [1, 3]])
    np.testing.assert_allclose(tl.inv(a), np.linalg.inv(a))
    assert tl.det(a).dtype == np.float64


def test_singular_matrix_raises_linalg_error():
    a = np.zeros((3, 3))
    with pytest.raises(np.linalg.LinAlgError) as info:
        tl.inv(a)
    assert isinstance(info.value, tenferro.LinAlgError)
    assert info.value.code == "kSingularMatrix"
    with pytest.raises(tenferro.LinAlgError) as info:
        tl.cholesky(-np.eye(3))
    assert info.value.code == "kNotPositiveDefinite"


def test_linalg_bad_input():
    with pytest.raises(tenferro.InvalidArgumentError):
        tl.inv(np.ones((3, 4)))  # not square
    with pytest.raises(ValueError):
        tl.qr(np.ones((3, 3)), mode="raw")
    with pytest.raises(ValueError):
        tl.eigh(np.eye(3), UPLO="X")
    with pytest.raises(ValueError):
        tl.solve(np.eye(3), np.ones((4, 2)))
    with pytest.raises(tenferro.LinAlgError) as info:
        tl.inv(np.array([[np.nan, 0.0], [0.0, 1.0]]))
    assert info.value.code == "kNonFiniteInput"
    with pytest.raises(TypeError):
        tl.inv(np.eye(3, dtype=np.float16))


def test_runtime_argument(rng):
    rt = tenferro.Runtime(threads=1)
    a = spd(rng, 5, np.float64)
    np.testing.assert_allclose(tl.inv(a, runtime=rt), np.linalg.inv(a), rtol=1e-9)


def test_threads_argument_picks_the_runtime_as_einsum_does(rng):
    import inspect

    # Every function that takes runtime= takes threads= as well (linalg and fft).
    for module in (tl, tenferro.fft):
        for name in module.__all__:
            params = inspect.signature(getattr(module, name)).parameters if callable(getattr(module, name)) else {}
            if "runtime" in params:
                assert "threads" in params, f"{module.__name__}.{name}"
    assert tl._runtime(None, 1) is tenferro.default_runtime(threads=1)
    own = tenferro.Runtime(threads=2)
    assert tl._runtime(own, 2) is own
    a = spd(rng, 6, np.float64)
    np.testing.assert_allclose(tl.inv(a, threads=1), np.linalg.inv(a), rtol=1e-9)
    np.testing.assert_allclose(tl.svd(a, threads=2)[1], np.linalg.svd(a)[1], rtol=1e-9)
    x = rng.random(48)
    before = tenferro.default_runtime(threads=1).cached_ops
    np.testing.assert_allclose(tenferro.fft.rfft(x, n=47, threads=1), np.fft.rfft(x, n=47), rtol=1e-9, atol=1e-12)
    assert tenferro.default_runtime(threads=1).cached_ops == before + 1  # the transform ran on that runtime
    with pytest.raises(tenferro.InvalidArgumentError, match="differs from the given runtime"):
        tl.inv(a, threads=1, runtime=own)
    with pytest.raises(tenferro.InvalidArgumentError, match="expected at least 1"):
        tenferro.fft.fft(x, threads=0)
    for bad in ("two", 1.5, True):
        with pytest.raises(TypeError, match="threads: expected an integer"):
            tl.det(a, threads=bad)
    with pytest.raises(tenferro.InvalidArgumentError, match="threads=2 differs from this runtime's threads=1"):
        tenferro.Runtime(threads=1).einsum("ij->", a, threads=2)


NORM_CASES = [
    ((7,), {}),
    ((7,), dict(ord=1)),
    ((7,), dict(ord=0)),
    ((7,), dict(ord=3.5)),
    ((7,), dict(ord=np.inf)),
    ((7,), dict(ord=-np.inf)),
    ((5, 6), {}),
    ((6, 5), dict(ord=2)),
    ((5, 6), dict(ord=-2)),
    ((5, 5), dict(ord="nuc")),
    ((5, 6), dict(ord=1)),
    ((5, 6), dict(ord=-np.inf)),
    ((6, 5), dict(ord=np.inf)),
    ((3, 4, 5), {}),
    ((3, 4, 5), dict(axis=1)),
    ((3, 4, 5), dict(axis=(0, 2))),
    ((3, 4, 5), dict(axis=(2, 0), ord=2)),
    ((3, 4, 5), dict(axis=-1, keepdims=True)),
    ((3, 4, 5), dict(axis=(0, 1), ord="fro", keepdims=True)),
    ((3, 4, 5), dict(keepdims=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kwargs", NORM_CASES)
def test_norm_matches_numpy(dtype, shape, kwargs, rng):
    x = random_array(rng, shape, dtype)
    got = tl.norm(x, **kwargs)
    want = np.linalg.norm(x, **kwargs)
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, **tol(dtype))


def test_norm_of_integers_and_the_array_api_names(rng):
    a = np.arange(12).reshape(3, 4)
    assert tl.norm(a) == pytest.approx(np.linalg.norm(a), rel=1e-12)
    x = random_array(rng, (2, 4, 3), np.float64)
    np.testing.assert_allclose(tl.matrix_norm(x, ord=2), np.linalg.norm(x, ord=2, axis=(-2, -1)), rtol=1e-12)
    np.testing.assert_allclose(tl.vector_norm(x, axis=1, ord=1), np.linalg.norm(x, ord=1, axis=1), rtol=1e-12)
    np.testing.assert_allclose(tl.vector_norm(x), np.linalg.norm(x.ravel()), rtol=1e-12)
    assert tl.vector_norm(x, keepdims=True).shape == (1, 1, 1)


@pytest.mark.parametrize(
    "x,kwargs,message",
    [
        (np.ones(4), dict(ord="fro"), "for vectors"),
        (np.ones((2, 3)), dict(ord=3), "for matrices"),
        (np.ones((2, 3)), dict(axis=(1, -1)), "duplicate axes"),
        (np.ones((2, 2, 2)), dict(ord=2), "improper number of dimensions"),
        (np.ones((2, 2, 2)), dict(axis=(0, 1, 2)), "improper number of dimensions"),
        (np.ones(4), dict(ord=np.nan), "finite order"),
    ],
)
def test_norm_rejects_bad_arguments(x, kwargs, message):
    with pytest.raises(tenferro.InvalidArgumentError, match=message):
        tl.norm(x, **kwargs)
    with pytest.raises(np.AxisError, match="out of bounds"):
        tl.norm(np.ones((2, 3)), axis=2)


def test_negative_orders_and_several_axes_as_numpy_and_torch(rng):
    x = random_array(rng, (3, 4, 5), np.float64)
    x[0, 0, 0] = 0.0
    for p in (-1, -2, -3, -0.5):
        with np.errstate(divide="ignore"):  # numpy warns at the zero
            want = np.linalg.norm(x, p, axis=1)
        np.testing.assert_allclose(tl.norm(x, p, axis=1), want, rtol=1e-12)
        np.testing.assert_allclose(tl.vector_norm(x[1, 1], ord=p), np.linalg.norm(x[1, 1], p), rtol=1e-12)
    # A zero element: (... + inf)^(1/p) = 0, as numpy (which warns).
    assert tl.norm(x[0, :, 0], -1) == 0.0
    # The derivative of a negative order away from zeros, against torch.
    torch = pytest.importorskip("torch")
    v = rng.random(6) + 0.5
    vt = torch.tensor(v, requires_grad=True)
    torch.linalg.vector_norm(vt, ord=-1.5).backward()
    np.testing.assert_allclose(tenferro.grad(lambda y: tl.vector_norm(y, ord=-1.5))(v), vt.grad.numpy(), rtol=1e-10)
    # Several axes (numpy 2, torch): one vector per index of the others.
    for axis, kwargs in (((0, 2), {}), ((0, 2), dict(ord=1, keepdims=True)), ((-1, 0), dict(ord=3))):
        want = torch.linalg.vector_norm(torch.tensor(x), dim=axis, **kwargs).numpy()
        got = tl.vector_norm(x, axis=axis, **kwargs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)
    g = tenferro.grad(lambda y: np.sum(tl.vector_norm(y, axis=(0, 2))))(x)
    xt = torch.tensor(x, requires_grad=True)
    torch.linalg.vector_norm(xt, dim=(0, 2)).sum().backward()
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-10)


def test_axes_are_checked_as_numpy(rng):
    m = np.ones((3, 3))
    for axes in (([5], [0]), ([-3], [0]), ([0], [7])):
        with pytest.raises(IndexError, match="out of bounds"):  # an AxisError, as numpy's IndexError
            tl.tensordot(m, m, axes=axes)
    with pytest.raises(tenferro.InvalidArgumentError, match="distinct"):
        tl.tensordot(m, m, axes=([0, 0], [0, 1]))
    np.testing.assert_allclose(tl.tensordot(m, m, axes=([-1], [0])), np.tensordot(m, m, axes=([-1], [0])))
    with pytest.raises(np.AxisError):
        tl.vecdot(m, m, axis=5)
    with pytest.raises(np.AxisError):
        tl.cross(np.ones(3), np.ones(3), axis=3)
    with pytest.raises(TypeError, match="integer axis"):
        tl.norm(m, axis="a")
    with pytest.raises(TypeError, match="rcond"):
        tl.lstsq(m, np.ones(3), rcond="bad")
    with pytest.raises(tenferro.InvalidArgumentError, match="broadcasts"):
        tl.pinv(np.ones((2, 3, 3)), rcond=np.ones(5))
    with pytest.raises(np.linalg.LinAlgError, match="rank >= 2"):
        tl.lstsq(np.ones(3), np.ones(3))


def test_matrix_shape_errors_are_a_public_class():
    # A traceback names the class: it is tenferro.linalg's, not a private one.
    with pytest.raises(tl.MatrixShapeError) as info:
        tl.det(np.ones((2, 3)))
    assert type(info.value) is tl.MatrixShapeError
    assert not type(info.value).__qualname__.startswith("_")
    assert isinstance(info.value, tenferro.InvalidArgumentError)
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert info.value.code == "kShapeMismatch"


def test_norm_gradients(rng):
    m = random_array(rng, (4, 3), np.float64)
    u, _, vh = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.norm(x, ord=2))(m), np.outer(u[:, 0], vh[0]), rtol=1e-9)
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.norm(x))(m), m / np.linalg.norm(m), rtol=1e-9)
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.matrix_norm(x, ord="nuc"))(m), u @ vh, rtol=1e-9)
    v = random_array(rng, (5,), np.float64)
    want = np.sign(v) * np.abs(v) ** 2 / np.linalg.norm(v, 3) ** 2
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.vector_norm(x, ord=3))(v), want, rtol=1e-9)
    # Over other axes, keepdims and the flattened norm of a stack: the
    # moves and reshapes are recorded too (Note [Traced array protocol]).
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.norm(x, axis=0).sum())(m), m / np.linalg.norm(m, axis=0),
                               rtol=1e-9)
    t = random_array(rng, (2, 3, 4), np.float64)
    g = tenferro.grad(lambda x: tl.norm(x, ord="fro", axis=(0, 2), keepdims=True).sum())(t)
    np.testing.assert_allclose(g, t / np.linalg.norm(t, axis=(0, 2), keepdims=True), rtol=1e-9)
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.norm(x))(t), t / np.linalg.norm(t), rtol=1e-9)
    np.testing.assert_allclose(tenferro.grad(lambda x: tl.vector_norm(x, ord=1))(t), np.sign(t), rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_power_rank_and_cond_match_numpy(dtype, rng):
    a = random_array(rng, (3, 4, 4), dtype) + 2 * np.eye(4, dtype=dtype)
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(tl.matrix_power(a, n), np.linalg.matrix_power(a, n), **tol(dtype))
    assert tl.matrix_power(a, 0).dtype == a.dtype
    low_rank = (random_array(rng, (2, 6, 2), dtype) @ random_array(rng, (2, 2, 5), dtype)).astype(dtype)
    np.testing.assert_array_equal(tl.matrix_rank(low_rank), np.linalg.matrix_rank(low_rank))
    assert tl.matrix_rank(low_rank[0]) == 2 and isinstance(tl.matrix_rank(low_rank[0]), np.int64)  # numpy's type
    for p in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
        np.testing.assert_allclose(tl.cond(a, p), np.linalg.cond(a, p), rtol=1e-3 if tol(dtype)["rtol"] > 1e-6 else 1e-8)


def test_integer_powers_singular_cond_and_vectors():
    ints = np.arange(9).reshape(3, 3)
    np.testing.assert_array_equal(tl.matrix_power(ints, 3), np.linalg.matrix_power(ints, 3))
    singular = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert tl.cond(singular) == np.inf and tl.cond(singular, 1) == np.inf
    assert tl.matrix_rank(np.zeros(3)) == 0 and tl.matrix_rank(np.ones(2)) == 1
    with pytest.raises(np.linalg.LinAlgError, match="square") as info:  # as numpy
        tl.matrix_power(np.ones((2, 3)), 2)
    assert isinstance(info.value, tenferro.InvalidArgumentError)
    with pytest.raises(TypeError, match="integer"):  # as numpy
        tl.matrix_power(np.eye(2), 1.5)


def test_cond_from_singular_values_matches_numpy_at_the_edges():
    # One matrix and stacks: singular, zero (0 / 0 is inf, as numpy's), Inf
    # (inf); a NaN gives NaN (numpy 1.24 raises from its SVD: python.md).
    cases = [np.zeros((3, 3)), np.diag([1.0, 0.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.zeros((2, 3, 3)),
             np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0])]), np.array([[1.0, np.inf], [0.0, 1.0]]),
             np.stack([np.eye(2), np.array([[1.0, np.inf], [0.0, 1.0]])])]
    for x in cases:
        for p in (None, 2, -2):
            with np.errstate(all="ignore"):
                want = np.linalg.cond(x, p)
            got = tl.cond(x, p)
            assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, (x, p)
            np.testing.assert_allclose(got, want, rtol=1e-12)
    for p in (None, 2, -2):
        assert np.isnan(tl.cond(np.array([[1.0, np.nan], [0.0, 1.0]]), p))


def test_multi_dot_tensorinv_and_tensorsolve_match_numpy(rng):
    a, b = rng.standard_normal((10, 30)), rng.standard_normal((30, 5))
    c, d = rng.standard_normal((5, 60)), rng.standard_normal(60)
    for chain in ([a, b], [a, b, c, d], [a[0], b, c], [a[0], b, c, d]):
        np.testing.assert_allclose(tl.multi_dot(chain), np.linalg.multi_dot(chain), rtol=1e-10)
    with pytest.raises(tenferro.InvalidArgumentError, match="at least two"):
        tl.multi_dot([a])
    with pytest.raises(tenferro.InvalidArgumentError, match="expected 2 dimensions"):
        tl.multi_dot([d, d, b])
    long_chain = [rng.standard_normal((3, 3)) * 0.5 for _ in range(60)]  # past the optimal planner and the letters
    np.testing.assert_allclose(tl.multi_dot(long_chain), np.linalg.multi_dot(long_chain), rtol=1e-9, atol=1e-12)
    t = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(tl.tensorinv(t, ind=2), np.linalg.tensorinv(t, ind=2), rtol=1e-8, atol=1e-10)
    s, rhs = rng.standard_normal((2, 3, 6, 4, 4)), rng.standard_normal((6, 4))
    np.testing.assert_allclose(
        tl.tensorsolve(s, rhs, axes=(0, 1)), np.linalg.tensorsolve(s, rhs, axes=(0, 1)), rtol=1e-8, atol=1e-10
    )


# --- numpy 2's array-API functions of numpy.linalg --------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_api_functions_match_numpy(dtype, rng):
    a = random_array(rng, (3, 4, 5), dtype)
    b = random_array(rng, (3, 5, 2), dtype)
    v, w = random_array(rng, (5,), dtype), random_array(rng, (4,), dtype)
    x, y = random_array(rng, (3, 4, 5), dtype), random_array(rng, (5, 4, 2), dtype)
    p, q = random_array(rng, (4, 3), dtype), random_array(rng, (2, 4, 3), dtype)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12

    def same(got, want):
        assert got.shape == want.shape and np.asarray(got).dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

    same(tl.svdvals(a), np.linalg.svd(a, compute_uv=False))
    same(tl.matmul(a, b), a @ b)
    same(tl.matmul(a, v), a @ v)
    same(tl.matmul(w, a), w @ a)
    same(tl.matmul(v, v), np.asarray(v @ v))
    same(tl.matrix_transpose(a), np.swapaxes(a, -1, -2))
    same(tl.outer(v, w), np.outer(v, w))
    same(tl.tensordot(x, y, axes=([1, 2], [1, 0])), np.tensordot(x, y, axes=([1, 2], [1, 0])))
    same(tl.tensordot(a, b[0], axes=1), np.tensordot(a, b[0], axes=1))
    same(tl.tensordot(v, w, axes=0), np.tensordot(v, w, axes=0))
    same(tl.trace(a, offset=1), np.trace(a, offset=1, axis1=-2, axis2=-1))
    same(tl.diagonal(a, offset=-1), np.diagonal(a, offset=-1, axis1=-2, axis2=-1))
    same(tl.vecdot(x, x[::-1], axis=-2), np.sum(np.conj(x) * x[::-1], axis=-2))
    same(tl.cross(p, q), np.cross(p, q))
    same(tl.cross(p.T, np.swapaxes(q, 1, 2), axis=-2), np.cross(p.T, np.swapaxes(q, 1, 2), axis=-2))


def test_array_api_function_errors():
    m = np.ones((3, 4))
    with pytest.raises(tenferro.InvalidArgumentError, match="1-D"):
        tl.outer(m, m[0])
    with pytest.raises(tenferro.InvalidArgumentError, match="scalar"):
        tl.matmul(m, np.float64(2.0))
    with pytest.raises(tenferro.InvalidArgumentError, match="3-element"):
        tl.cross(m, m)
    with pytest.raises(tenferro.InvalidArgumentError, match="expected equal"):
        tl.tensordot(m, m, axes=([1], [1, 0])[:1] + ([0],))
    with pytest.raises(tenferro.InvalidArgumentError, match="expected equal"):
        tl.vecdot(m, m.T, axis=-1)
    with pytest.raises(tenferro.InvalidArgumentError, match="at least two dimensions"):
        tl.trace(m[0])


def test_array_api_functions_inside_grad_match_torch(rng):
    torch = pytest.importorskip("torch")
    t0 = rng.standard_normal((4, 5))

    def loss(t, lib):
        return (lib.vecdot(t, t).sum() + lib.trace(lib.matmul(t[:3, :3], lib.matrix_transpose(t[:3, :3])))
                + lib.cross(t[:, :3], t[:, 1:4]).sum() + lib.outer(t[0], t[1]).sum() + lib.svdvals(t).sum())

    class TorchLinalg:  # torch 1.13's names for the same functions
        vecdot = staticmethod(lambda a, b: (a.conj() * b).sum(-1))
        trace = staticmethod(lambda m: torch.diagonal(m, dim1=-2, dim2=-1).sum(-1))
        matmul = staticmethod(torch.matmul)
        matrix_transpose = staticmethod(lambda m: m.transpose(-1, -2))
        cross = staticmethod(torch.linalg.cross)
        outer = staticmethod(torch.outer)
        svdvals = staticmethod(torch.linalg.svdvals)

    g = tenferro.grad(lambda t: loss(t, tl))(t0)
    tt = torch.tensor(t0, requires_grad=True)
    loss(tt, TorchLinalg).backward()
    np.testing.assert_allclose(g, tt.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_numpy_spellings_and_result_types(rng):
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    for uplo in ("u", "l", "U"):
        np.testing.assert_allclose(tl.eigvalsh(s, UPLO=uplo), np.linalg.eigvalsh(s, UPLO=uplo), rtol=1e-12)
        np.testing.assert_allclose(tl.eigh(s, UPLO=uplo)[0], np.linalg.eigh(s, UPLO=uplo)[0], rtol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match="UPLO"):
        tl.eigh(s, UPLO="X")
    a = rng.random((4, 3)) @ np.diag([1.0, 1e-3, 0.0]) @ rng.random((3, 3))
    rank = tl.matrix_rank(a)
    assert type(rank) is type(np.linalg.matrix_rank(a)) and rank == 2
    assert type(tl.matrix_rank(np.ones(3))) is int
    _, _, lrank, _ = tl.lstsq(a, np.ones(4), rcond=None)
    _, _, nrank, _ = np.linalg.lstsq(a, np.ones(4), rcond=None)
    assert type(lrank) is type(nrank) and lrank == nrank
    # numpy 2's rtol= (relative to the largest singular value).
    assert tl.matrix_rank(a, rtol=1e-2) == 1 and tl.matrix_rank(a, rtol=1e-6) == 2
    np.testing.assert_allclose(tl.pinv(a, rtol=1e-2), np.linalg.pinv(a, rcond=1e-2), rtol=1e-9, atol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match="not both"):
        tl.matrix_rank(a, tol=1.0, rtol=1e-2)
    with pytest.raises(tenferro.InvalidArgumentError, match="give one of them"):
        tl.pinv(a, rcond=1e-3, rtol=1e-2)


def test_named_results_as_numpy_2_and_cholesky_upper(rng):
    a = random_array(rng, (4, 4), np.float64)
    h = a @ a.T + 4 * np.eye(4)
    w, v = tl.eigh(h)
    r = tl.eigh(h)
    np.testing.assert_array_equal(r.eigenvalues, w)
    np.testing.assert_array_equal(r.eigenvectors, v)
    assert isinstance(r, tuple) and len(r) == 2
    u, s, vh = tl.svd(a)
    assert tl.svd(a).S is not None and np.array_equal(tl.svd(a).Vh, vh) and np.array_equal(tl.svd(a).U, u)
    assert np.array_equal(tl.qr(a).R, tl.qr(a)[1])
    sign, logabsdet = tl.slogdet(a)
    assert tl.slogdet(a).sign == sign and tl.slogdet(a).logabsdet == logabsdet
    assert np.array_equal(tl.eig(a).eigenvalues, tl.eig(a)[0])
    upper = tl.cholesky(h, upper=True)
    np.testing.assert_allclose(upper, np.linalg.cholesky(h).T, rtol=1e-14)
    np.testing.assert_allclose(upper.T @ upper, h, rtol=1e-12)
    c = h + 1j * (a - a.T)
    cu = tl.cholesky(c, upper=True)
    np.testing.assert_allclose(cu.conj().T @ cu, c, rtol=1e-12)
    # Recorded inside grad, as torch.linalg.cholesky(upper=True).
    torch = pytest.importorskip("torch")
    ht = torch.tensor(h, requires_grad=True)
    (torch.linalg.cholesky(ht, upper=True) ** 3).sum().backward()
    got = tenferro.grad(lambda x: np.sum(tl.cholesky(x, upper=True) ** 3))(h)
    np.testing.assert_allclose(np.tril(got), np.tril(ht.grad.numpy()) + np.triu(ht.grad.numpy(), 1).T, rtol=1e-10)


def test_solve_broadcasts_a_matrix_right_hand_side(rng):
    a = random_array(rng, (3, 4, 4), np.float64) + 4 * np.eye(4)
    b = random_array(rng, (4, 2), np.float64)
    x = tl.solve(a, b)  # numpy 1.x raises here; numpy 2 and torch broadcast b as one matrix
    assert x.shape == (3, 4, 2)
    np.testing.assert_allclose(a @ x, np.broadcast_to(b, (3, 4, 2)), atol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"found b of shape \(5, 2\)"):
        tl.solve(a, np.ones((5, 2)))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"found b of shape \(2, 4\)"):
        tl.solve(a, np.ones((2, 4)))
    # The ambiguous b.ndim == a.ndim - 1 follows the installed numpy.
    square = random_array(rng, (4, 4, 4), np.float64) + 4 * np.eye(4)
    rhs = random_array(rng, (4, 4), np.float64)
    np.testing.assert_allclose(tl.solve(square, rhs), np.linalg.solve(square, rhs), rtol=1e-10)


def test_lu_and_lu_factor_as_scipy_and_torch(rng):
    torch = pytest.importorskip("torch")
    for shape in ((4, 4), (5, 3), (3, 5), (2, 4, 4)):
        for dtype in (np.float64, np.float32, np.complex128):
            a = random_array(rng, shape, dtype)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            p, lower, upper = tl.lu(a)
            np.testing.assert_allclose(p @ lower @ upper, a, atol=tol)
            assert lower.shape == shape[:-1] + (min(shape[-2:]),) and p.dtype == a.dtype
            np.testing.assert_array_equal(np.tril(lower, -1) + np.eye(*lower.shape[-2:]), lower)
            np.testing.assert_array_equal(np.triu(upper), upper)
            pl, u2 = tl.lu(a, permute_l=True)
            np.testing.assert_allclose(pl @ u2, a, atol=tol)
            rows, l3, u3 = tl.lu(a, p_indices=True)
            np.testing.assert_allclose(np.take_along_axis(l3, rows[..., None], axis=-2) @ u3, a, atol=tol)
            if dtype != np.complex128:  # (complex pivots may differ: |re| + |im| against |z|)
                want = torch.linalg.lu(torch.tensor(a))
                for got, w in zip((p, lower, upper), want):
                    np.testing.assert_allclose(got, w.numpy(), atol=tol)
    a = random_array(rng, (4, 4), np.float64)
    packed, piv = tl.lu_factor(a)
    want_lu, want_piv = torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_allclose(packed, want_lu.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(piv, want_piv.numpy() - 1)  # scipy's 0-based, torch's 1-based
    assert piv.dtype == np.int32
    # Gradients through L and U, as torch.
    at = torch.tensor(a, requires_grad=True)
    _, lt, ut = torch.linalg.lu(at)
    ((lt ** 2).sum() + (ut ** 3).sum()).backward()
    got = tenferro.grad(lambda x: np.sum(tl.lu(x)[1] ** 2) + np.sum(tl.lu(x)[2] ** 3))(a)
    np.testing.assert_allclose(got, at.grad.numpy(), rtol=1e-9)


def test_solve_triangular_as_scipy(rng):
    torch = pytest.importorskip("torch")
    t = np.triu(random_array(rng, (4, 4), np.float64)) + 2 * np.eye(4)
    b = random_array(rng, (4, 2), np.float64)
    for trans, op in ((0, lambda m: m), (1, np.transpose), ("C", lambda m: m.conj().T), ("N", lambda m: m)):
        for lower in (False, True):
            m = t.T if lower else t
            x = tl.solve_triangular(m + np.tril(np.ones((4, 4)), -1) * (not lower), b, trans=trans, lower=lower)
            np.testing.assert_allclose(op(m) @ x, b, rtol=1e-12)  # (only the named triangle is read)
    x = tl.solve_triangular(t, b[:, 0])
    assert x.shape == (4,)
    np.testing.assert_allclose(t @ x, b[:, 0], rtol=1e-12)
    x = tl.solve_triangular(t + 5 * np.eye(4), b, unit_diagonal=True)
    np.testing.assert_allclose((np.triu(t, 1) + np.eye(4)) @ x, b, rtol=1e-12)
    stack = np.stack([t, 2 * t])
    np.testing.assert_allclose(stack @ tl.solve_triangular(stack, b), np.broadcast_to(b, (2, 4, 2)), rtol=1e-12)
    tt = torch.tensor(t, requires_grad=True)
    (torch.linalg.solve_triangular(tt, torch.tensor(b), upper=True) ** 2).sum().backward()
    got = tenferro.grad(lambda m: np.sum(tl.solve_triangular(m, b) ** 2))(t)
    np.testing.assert_allclose(np.triu(got), np.triu(tt.grad.numpy()), rtol=1e-10)
    np.testing.assert_array_equal(np.tril(got, -1), 0)  # the unread triangle has no gradient
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        tl.solve_triangular(t - np.diag(np.diag(t)), b)
    with pytest.raises(tenferro.InvalidArgumentError, match="trans"):
        tl.solve_triangular(t, b, trans=3)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"found \(5, 2\)"):
        tl.solve_triangular(t, np.ones((5, 2)))


def test_exactly_singular_matrices_are_found_as_numpy_finds_them(rng):
    # Note [One LU arithmetic]: solve, det, slogdet and inv share one LU,
    # so a repeated column is singular exactly where numpy says so
    # (Eigen's LU left 2e-18 pivots: solve returned 1e17 where inv raised).
    # Note [Small LU]: the inline elimination sums and rounds as OpenBLAS's
    # getf2 does; up to 5 x 5 it finds exactly numpy's zero pivots whichever
    # repeated column (beyond, numpy's own answer depends on the CPU's
    # OpenBLAS kernels), and solve, inv and det always agree with each other.
    a = np.array([[0.64, 0.64], [0.10, 0.10]])
    with pytest.raises(np.linalg.LinAlgError):
        tl.solve(a, np.ones(2))
    assert tl.det(a) == 0.0 and tuple(tl.slogdet(a)) == (0.0, -np.inf)
    assert tl.cond(a, 1) == np.inf
    for n in (2, 3, 4, 8):
        for _ in range(40):
            m = rng.random((n, n))
            m[:, 1] = m[:, 0]
            try:
                np.linalg.solve(m, np.ones(n))
                numpy_singular = False
            except np.linalg.LinAlgError:
                numpy_singular = True
            try:
                tl.solve(m, np.ones(n))
                singular = False
            except np.linalg.LinAlgError:
                singular = True
            assert singular == numpy_singular
            assert (tl.det(m) == 0.0) == (np.linalg.det(m) == 0.0)
    for n in (2, 3, 4, 5):
        m = rng.random((500, n, n))
        m[:, :, n - 1] = m[:, :, 0]
        np.testing.assert_array_equal(tl.det(m) == 0.0, np.linalg.det(m) == 0.0)
    for n in (6, 12, 48):
        for _ in range(20):
            m = rng.random((n, n))
            m[:, n - 1] = m[:, 0]
            raised = []
            for call in (lambda: tl.solve(m, np.ones(n)), lambda: tl.inv(m)):
                try:
                    call()
                    raised.append(False)
                except np.linalg.LinAlgError:
                    raised.append(True)
            assert raised == [tl.det(m) == 0.0] * 2


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_edge_inputs_numpy_accepts(rng):
    # Least squares without right-hand sides (gelsd's divide and conquer
    # rejects NRHS = 0: a zero column is solved instead).
    a = rng.random((5, 3))
    for b in (np.zeros((5, 0)), np.zeros((5, 0), dtype=np.complex128)):
        got, want = tl.lstsq(a.astype(b.dtype), b), np.linalg.lstsq(a.astype(b.dtype), b, rcond=None)
        assert [np.shape(x) for x in got] == [np.shape(x) for x in want]
        np.testing.assert_allclose(got[3], want[3])
    assert tl.lstsq(np.stack([a, a]), np.zeros((2, 5, 0)))[0].shape == (2, 3, 0)
    # np.matrix operands are read as plain arrays (its indexing is not numpy's).
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert tl.norm(m) == pytest.approx(np.linalg.norm(m)) and np.ndim(tl.norm(m)) == 0
    assert tl.vector_norm(m, axis=(0, 1)) == pytest.approx(np.linalg.norm(np.asarray(m)))
    # pinv in single precision: the default cutoff is max(M, N) eps(float32),
    # so a rank-deficient matrix keeps numpy's (float64-computed) result.
    r = np.outer(np.arange(1.0, 4.0), np.arange(1.0, 5.0))
    for dtype in (np.float32, np.complex64):
        got = tl.pinv(r.astype(dtype))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, np.linalg.pinv(r), atol=1e-6)


def test_shape_errors_are_linalg_errors_as_numpy():
    x = np.ones((2, 2))
    with pytest.raises(np.linalg.LinAlgError, match="array 1: expected 2 dimensions, found 3"):
        tl.multi_dot([x, np.ones((6, 2, 2)), x])
    for a in (np.zeros((0, 3)), np.zeros((0, 3, 3)), np.ones((2, 3))):
        with pytest.raises(np.linalg.LinAlgError, match="tensorinv: expected the first 1 axes"):
            tl.tensorinv(a, ind=1)


def test_numerics_audit_cases_match_numpy(rng):
    # Note [Determinant scaling]: partial products of the pivots no longer
    # overflow or underflow where the determinant does not.
    for d in ([1e300, 1e300, 1e-300, 1e-300], [1e-300, 1e-300, 1e300, 1e300]):
        assert tl.det(np.diag(d)) == pytest.approx(1.0, rel=1e-12)
    assert tl.det(np.diag([1e30, 1e30, 1e-30, 1e-30]).astype(np.float32)) == pytest.approx(1.0, rel=1e-5)
    # Note [Finite checks read what the op reads]: a NaN where eigh,
    # cholesky and solve_triangular never read is ignored, as in numpy.
    g = rng.standard_normal((4, 4))
    spd = g @ g.T + 4 * np.eye(4)
    lower_only, upper_only = np.tril(spd), np.triu(spd)
    lower_only[np.triu_indices(4, 1)] = np.nan
    upper_only[np.tril_indices(4, -1)] = np.nan
    np.testing.assert_allclose(tl.eigvalsh(lower_only), np.linalg.eigvalsh(spd), rtol=1e-12)
    np.testing.assert_allclose(tl.eigvalsh(upper_only, UPLO="U"), np.linalg.eigvalsh(spd), rtol=1e-12)
    np.testing.assert_allclose(tl.cholesky(lower_only), np.linalg.cholesky(spd), rtol=1e-12)
    b = rng.standard_normal(4)
    np.testing.assert_allclose(tl.solve_triangular(lower_only, b, lower=True),
                               np.linalg.solve(np.tril(spd), b), rtol=1e-12)
    with pytest.raises(tenferro.LinAlgError) as info:
        tl.cholesky(upper_only)  # the NaN is in the triangle read
    assert info.value.code == "kNonFiniteInput"
    # The inverse's zeros are +0.0, as numpy's.
    assert not np.signbit(tl.inv(np.diag([2.0, 4.0]))).any()
    # solve with a non-square a is numpy's LinAlgError, whatever b is.
    for bshape in ((3,), (3, 1), (2,)):
        with pytest.raises(np.linalg.LinAlgError, match="square"):
            tl.solve(np.ones((3, 2)), np.ones(bshape))
