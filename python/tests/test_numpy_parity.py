"""numpy.linalg / numpy.fft behaviours a user porting numpy code relies on
(from an audit against numpy 1.24 and torch): scalar results, lstsq's rcond
conventions, multi_dot's dtypes, FFT axis edge cases, fftshift/roll under
grad, norms over every layout and at extreme scales, and typed errors."""

import json
import warnings

import numpy as np
import pytest

import tenferro
import tenferro.fft as tff
import tenferro.linalg as tl

torch = pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_single_matrix_results_are_numpy_scalars(rng):
    a = rng.random((3, 3)) + np.eye(3)
    v = rng.random(4)
    for got, want in [
        (tl.det(a), np.linalg.det(a)),
        (tl.slogdet(a)[0], np.linalg.slogdet(a)[0]),
        (tl.slogdet(a)[1], np.linalg.slogdet(a)[1]),
        (tl.norm(v), np.linalg.norm(v)),
        (tl.norm(a, "fro"), np.linalg.norm(a, "fro")),
        (tl.norm(a, 1), np.linalg.norm(a, 1)),
        (tl.vector_norm(v), np.linalg.norm(v)),
        (tl.matrix_norm(a), np.linalg.norm(a)),
        (tl.multi_dot([v, np.ones((4, 4)), v]), np.linalg.multi_dot([v, np.ones((4, 4)), v])),
        (tl.cond(a), np.linalg.cond(a)),
    ]:
        assert type(got) is type(want), (got, want)
        assert got == pytest.approx(want)
        hash(got)
        json.dumps(float(got))
    assert isinstance(tl.norm(v), float)
    # Stacks stay arrays.
    assert tl.det(np.stack([a, a])).shape == (2,)


def test_multi_dot_keeps_integer_dtypes():
    a = np.arange(6).reshape(2, 3)
    b = np.arange(12).reshape(3, 4)
    got = tl.multi_dot([a, b, b.T])
    want = np.linalg.multi_dot([a, b, b.T])
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_lstsq_rcond_conventions_match_numpy(rng):
    # Singular values (about) 1, 1 and 5e-15: machine precision keeps the
    # third (rank 3), numpy 2's eps * max(M, N) drops it (rank 2).
    a = rng.random((100, 3))
    a[:, 2] = a[:, 0] + 5e-15 * rng.random(100)
    b = rng.random(100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for rcond in (-1, -0.5, "warn", None, 1e-3):
            x, _, rank, s = tl.lstsq(a, b, rcond=rcond)
            x_np, _, rank_np, s_np = np.linalg.lstsq(a, b, rcond=rcond)
            assert rank == rank_np, rcond
            if rank_np == 3:
                # Full rank at a condition number near 1e15: the solution is
                # only as accurate as cond * eps, and BLAS kernels of another
                # width round differently (Note [OpenBLAS kernels for new
                # CPUs]). The singular values are well-conditioned.
                cond = s_np[0] / s_np[-1]
                np.testing.assert_allclose(x, x_np, rtol=cond * np.finfo(float).eps)  # about 0.2
                np.testing.assert_allclose(s, s_np, rtol=0, atol=100 * np.finfo(float).eps * s_np[0])
            else:
                np.testing.assert_allclose(x, x_np, rtol=1e-8, atol=1e-8 * np.abs(x_np).max())
    assert tl.lstsq(a, b, rcond=-1)[2] == 3 and tl.lstsq(a, b)[2] == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_pinv_takes_an_array_rcond_broadcast_over_the_stack(dtype, rng):
    a = rng.random((3, 4, 5))
    a[1, :, 4] = a[1, :, 3] * (1 + 1e-9)
    if np.iscomplexobj(dtype(0)):
        a = a + 1j * rng.random(a.shape)
    a = a.astype(dtype)
    atol = 1e-9 if dtype in (np.float64, np.complex128) else 1e-3
    for x, rcond in [(a, np.array([1e-15, 1e-6, 0.5])), (a[:2, None, :, :3], np.array([[1e-3], [0.9]])),
                     (a[:0], np.ones(1)), (a[:, :0], np.ones(3)), (a[:, :, :0], np.ones(3))]:
        got, want = tl.pinv(x, rcond=rcond), np.linalg.pinv(x, rcond=rcond)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, atol=atol)


def test_fft_repeated_axes_transform_twice_like_numpy(rng):
    x = rng.random((4, 6, 5)) + 1j * rng.random((4, 6, 5))
    xr = rng.random((4, 6, 5))
    for name, a in [("fftn", x), ("ifftn", x), ("rfftn", xr), ("irfftn", x)]:
        for axes, s in [((0, 0), None), ((1, 0, 1), None), ((2, 2), (6, 8)), ((0, 2, 0), (3, 4, 5))]:
            got = getattr(tff, name)(a, s=s, axes=axes)
            want = getattr(np.fft, name)(a, s=s, axes=axes)
            assert got.shape == want.shape, (name, axes, s)
            np.testing.assert_allclose(got, want, atol=1e-12)


def test_fft_without_axes_is_the_identity_and_lengths_are_checked(rng):
    x = rng.random((3, 4))
    for got, want in [(tff.fftn(x, axes=()), np.fft.fftn(x, axes=())), (tff.fftn(np.float64(3)), 3.0)]:
        np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(tff.fftn(x, axes=()), x)
    with pytest.raises(tenferro.InvalidArgumentError, match="different lengths"):
        tff.fft2(x, s=())
    with pytest.raises(tenferro.InvalidArgumentError, match="at most the input's 2 dimensions"):
        tff.fftn(x, s=(2, 3, 4))
    long = np.arange(8).astype(np.longdouble)
    np.testing.assert_allclose(tff.fft(long), np.fft.fft(long.astype(np.float64)))
    assert tff.fft(long).dtype == np.complex128


@pytest.mark.parametrize("fn,tfn", [(np.fft.fftshift, "fftshift"), (np.fft.ifftshift, "ifftshift")])
@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 1), -1])
def test_fftshift_is_recorded_inside_grad(fn, tfn, axes, rng):
    x = rng.random((5, 6))
    w = rng.random((5, 6))
    value, pullback = tenferro.vjp(lambda v: fn(v, axes), x)
    np.testing.assert_array_equal(value, fn(x, axes))
    (g,) = pullback(w)
    t = torch.tensor(x, requires_grad=True)
    getattr(torch.fft, tfn)(t, dim=axes).backward(torch.tensor(w))
    np.testing.assert_allclose(g, t.grad.numpy())
    # tenferro.fft re-exports numpy's function: the same recording.
    spectrum = tenferro.grad(lambda v: (getattr(tff, tfn)(tff.fft(v)).real * np.arange(4.0)).sum())(np.arange(4.0))
    t = torch.arange(4.0, dtype=torch.float64, requires_grad=True)
    (getattr(torch.fft, tfn)(torch.fft.fft(t)).real * torch.arange(4.0)).sum().backward()
    np.testing.assert_allclose(spectrum, t.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("shift,axis", [(2, None), (-3, 1), ((1, 2), (0, 1)), (7, 0), ((1, 1), (0, 0))])
def test_roll_is_recorded_inside_grad(shift, axis, rng):
    x = rng.random((5, 6))
    w = rng.random((5, 6))
    value, pullback = tenferro.vjp(lambda v: np.roll(v, shift, axis), x)
    np.testing.assert_array_equal(value, np.roll(x, shift, axis))
    t = torch.tensor(x, requires_grad=True)
    torch.roll(t, shift, axis).backward(torch.tensor(w))
    np.testing.assert_allclose(pullback(w)[0], t.grad.numpy())


def _layouts(rng, dtype, shape=(6, 40, 33)):
    base = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        base = base + 1j * rng.standard_normal(shape)
    base = base.astype(dtype)
    return {
        "C": base,
        "F": np.asfortranarray(base),
        "transposed": base.transpose(0, 2, 1),
        "strided": base[:, ::2, ::-3],
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_norms_match_numpy_over_every_layout(dtype, rng):
    rtol = 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    for name, x in _layouts(rng, dtype).items():
        for kwargs in [{}, {"axis": -1}, {"axis": 1}, {"axis": 0}, {"ord": 1, "axis": 1}, {"ord": np.inf, "axis": 1},
                       {"ord": -np.inf, "axis": 2}, {"ord": 3, "axis": 1}, {"ord": 0, "axis": 1},
                       {"axis": (1, 2)}, {"ord": "fro", "axis": (2, 1)}, {"ord": 1, "axis": (1, 2)}]:
            got = tl.norm(x, **kwargs)
            want = np.linalg.norm(x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64), **kwargs)
            np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"{name} {kwargs}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_two_norms_survive_squares_that_overflow_or_underflow(dtype):
    single = np.dtype(dtype) in (np.float32, np.complex64)
    for scale in ([1e30, 1e-30] if single else [1e200, 1e-200]):
        v = np.zeros((40, 3), dtype=dtype)
        v[0], v[33] = 3 * scale, 4 * scale
        for got in [tl.norm(v[:, 0]), tl.norm(v, axis=0)[1], tl.norm(v.T, axis=1)[2], tl.norm(v) / np.sqrt(3)]:
            assert got == pytest.approx(5 * scale, rel=1e-6)
    x = np.ones(20, dtype=dtype)
    x[3] = np.inf
    assert tl.norm(x) == np.inf
    x[9] = np.nan
    for ord_ in (None, 1, 3, np.inf, -np.inf):
        assert np.isnan(tl.norm(x, ord_)), ord_


def test_typed_errors_from_the_audit():
    with pytest.raises(np.linalg.LinAlgError, match="non-empty"):
        tl.cond(np.zeros((0, 0)))
    with pytest.raises(np.linalg.LinAlgError, match="expected a matrix"):
        tl.cond(np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        tl.cond(np.ones((2, 3)), 1)
    with pytest.raises(np.linalg.LinAlgError, match="tensorsolve"):
        tl.tensorsolve(np.ones((2, 3, 4)), np.ones((5,)))
    with pytest.raises(tenferro.InvalidArgumentError, match="UPLO"):
        tl.eigvalsh(np.eye(2), UPLO="x")
    with pytest.raises(tenferro.DTypeError, match="grad: argument 1: .*found int64"):
        tenferro.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(np.ones(3), np.arange(3))
    assert {"eigvals", "eigvalsh"} <= set(tl.__all__)
    np.testing.assert_allclose(tl.norm(np.ones((2, 2)), axis=1.0), np.linalg.norm(np.ones((2, 2)), axis=1))


def test_cond_of_a_stack_with_a_singular_matrix(rng):
    stack = rng.random((4, 3, 3)) + np.eye(3)
    stack[2] = 0
    stack[3, 0] = stack[3, 1]  # singular, not zero: inf or ~1e16, as rounding falls (numpy's too)
    for p in (1, -1, np.inf, -np.inf, "fro", "nuc", None, 2, -2):
        got = tl.cond(stack, p)
        np.testing.assert_allclose(got[:2], np.linalg.cond(stack[:2], p))
        if p in (1, -1, np.inf, "fro"):
            np.testing.assert_allclose(got[2], np.linalg.cond(stack[2], p))
        # The singular ones (numpy's SVD does not converge on their inverses
        # for some p, and p = -1 gives ~1 from 1e16-sized entries).
        if p == -2:
            assert got[2] == np.inf and got[3] < 1e-15  # 0 / 0 for the zero matrix, as numpy
        elif p == -1:  # the inverse's smallest column sum is rounding noise, as numpy's
            assert got[2] == np.inf and got[3] > 1.0
        else:
            assert got[2] == np.inf and got[3] > 1e15, (p, got[2:])
    # Non-finite matrices: NaN where the matrix has a NaN, inf for an inf
    # (numpy's NaN-to-inf rule), the others unchanged.
    stack[1, 1, 1] = np.nan
    stack[2, 0, 0] = np.inf
    got = tl.cond(stack, 1)
    assert np.isnan(got[1]) and got[2] == np.inf and got[3] > 1e15  # numpy: 5.3e16 (finite, not singular by pivots)
    np.testing.assert_allclose(got[0], np.linalg.cond(stack[0], 1))


def test_big_endian_operands_give_native_results():
    x = np.arange(1.0, 9.0).astype(">f2")
    np.testing.assert_allclose(tenferro.fft.fft(x), np.fft.fft(x.astype(np.float32)), rtol=1e-6)
    assert tenferro.fft.rfft(x).dtype == np.complex64
    a, b = np.ones(3, dtype=">f8"), np.arange(3.0)
    grads = tenferro.einsum_vjp("i,i->", a, b, cotangent=np.float64(1.0))
    assert [g.dtype.str for g in grads] == ["<f8", "<f8"]
    np.testing.assert_array_equal(grads[0], b)


def test_norms_of_empty_operands_are_numpys():
    # Note [Norms of empty operands]: 0 for p > 0, inf for p < 0, and an
    # error (ValueError) for norms that are the largest or smallest of
    # nothing, for vectors, matrices and stacks of either.
    shapes = [(0,), (0, 3), (3, 0), (0, 0), (2, 0), (0, 2, 3), (0, 0, 3), (0, 3, 0), (2, 0, 3)]
    orders = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf, 0, 0.5, -0.5, 3]
    checked = 0
    for shape in shapes:
        x = np.zeros(shape)
        axes = [None] if len(shape) < 3 else [(1, 2), (0, 1), 2, 0]
        if len(shape) == 2:
            axes += [0, 1]
        for axis in axes:
            for ord in orders:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        want = np.linalg.norm(x, ord=ord, axis=axis)
                    except ValueError:
                        with pytest.raises(ValueError):
                            tl.norm(x, ord=ord, axis=axis)
                        checked += 1
                        continue
                got = tl.norm(x, ord=ord, axis=axis)
                np.testing.assert_array_equal(got, want, err_msg=f"{shape} axis={axis} ord={ord}")
                checked += 1
    assert checked == 377
