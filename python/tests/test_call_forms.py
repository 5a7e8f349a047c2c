"""Calls as numpy, opt_einsum and torch users write them: argument forms,
dtype promotion with Python scalars, numpy's own paths, torch tensors with
lazy bits or requires_grad in every function, numpy's exception classes."""

import numpy as np
import pytest

import tenferro
import tenferro.fft as tff
import tenferro.linalg as tl


def test_python_scalars_promote_as_numpy_does(rng):
    # numpy 1.x promotes a 0-d operand by value (float32 stays float32),
    # numpy 2 by kind: either way, numpy's own result type.
    for scalar in (2.0, np.float64(2.0), np.array(2.0), 2, 2j, True):
        for dtype in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
            v = rng.random(3).astype(dtype)
            want = np.einsum(",i->i", scalar, v)
            got = tenferro.einsum(",i->i", scalar, v)
            assert got.dtype == want.dtype, (scalar, dtype)
            np.testing.assert_allclose(got, want, rtol=1e-3)
    # Arrays of one element are not scalars: promoted by dtype.
    got = tenferro.einsum("i,i->i", np.ones(1), np.ones(1, np.float32))
    assert got.dtype == np.float64


def test_numpy_einsum_path_with_steps_of_more_than_two(rng):
    a, b, c, d = rng.random((2, 3)), rng.random(4), rng.random(5), rng.random((3, 4))
    for eq, ops in [("ij,k,l->ijkl", (a, b, c)), ("ij,k,l,jk->il", (a, b, c, d))]:
        for optimize in ("greedy", "optimal", False):
            path = np.einsum_path(eq, *ops, optimize=optimize)[0]
            np.testing.assert_allclose(tenferro.einsum(eq, *ops, optimize=path), np.einsum(eq, *ops))
    # Every split of a 4-way step: opt_einsum's list semantics kept.
    x = [rng.random((2, 3)), rng.random((3, 4)), rng.random((4, 2)), rng.random((2, 5)), rng.random(5)]
    eq = "ab,bc,ca,ad,d->"
    for path in ([(0, 1, 2, 3), (0, 1)], [(1, 3, 4), (0, 1, 2)], [(2, 4), (0, 1, 2, 3)]):
        np.testing.assert_allclose(tenferro.einsum(eq, *x, optimize=path), np.einsum(eq, *x))


def test_sublist_form_everywhere(rng):
    a, b = rng.random((3, 4)), rng.random((4, 5))
    want = np.einsum(a, [0, 1], b, [1, 2], [0, 2])
    np.testing.assert_allclose(tenferro.einsum(a, list(np.arange(2)), b, [np.int64(1), 2], [0, 2]), want)
    path, info = tenferro.contract_path(a, [0, 1], b, [1, 2], [0, 2])
    assert path == [(0, 1)] and info.opt_cost == tenferro.contract_path("ab,bc->ac", a, b)[1].opt_cost
    assert tenferro.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0] == ["einsum_path", (0, 1)]
    # Labels past the 52 letters, and an ellipsis.
    x = rng.random((2, 3, 4))
    np.testing.assert_allclose(
        tenferro.contract_path(x, [Ellipsis, 60], x, [Ellipsis, 60], [Ellipsis])[1].opt_cost,
        tenferro.contract_path("...z,...z->...", x, x)[1].opt_cost)
    # What einsum takes, contract_path takes: Python scalars and nested lists.
    assert tenferro.contract_path(",i->i", 2.0, a[0])[0] == [(0, 1)]
    assert tenferro.contract_path("ij,jk->ik", a.tolist(), b)[0] == [(0, 1)]
    np.testing.assert_allclose(tenferro.einsum(b"ij->ji", a), a.T)  # numpy takes bytes subscripts
    with pytest.raises(TypeError, match="found None"):
        tenferro.einsum(None, a)
    with pytest.raises(TypeError, match="expected an integer"):
        tenferro.einsum(a, [0, 1.5])


def test_linalg_shape_errors_are_numpy_linalg_errors():
    for call in (lambda: tl.det(np.ones((2, 3))), lambda: tl.inv(np.ones(3)), lambda: tl.svd(np.ones(3))):
        with pytest.raises(np.linalg.LinAlgError) as info:
            call()
        assert isinstance(info.value, tenferro.InvalidArgumentError) and info.value.code == "kShapeMismatch"
    # Other argument errors the engine raises are not LinAlgErrors.
    with pytest.raises(tenferro.DTypeError) as info:
        tl.inv(np.array([[1, 2], [3, 4]], dtype=object))
    assert not isinstance(info.value, np.linalg.LinAlgError)


def test_fft_arguments_are_checked_as_numpy_checks_them():
    x = np.arange(6.0).reshape(2, 3)
    for call in (lambda: tff.fft(x, axis=0.5), lambda: tff.fft(x, n=4.0), lambda: tff.fftn(x, axes=(0.0,))):
        with pytest.raises(TypeError):
            call()
    for n in (0, -1):
        with pytest.raises(tenferro.InvalidArgumentError, match=f"n={n}: expected a positive"):
            tff.rfft(x, n=n)
    np.testing.assert_allclose(tff.fft(x, n=np.int64(4), axis=np.int32(0)), np.fft.fft(x, n=4, axis=0))
    np.testing.assert_allclose(tff.fftn(x, s=(-1, 4)), np.fft.fftn(x, s=(2, 4)))  # numpy 2: -1 keeps the extent


def _torch():
    return pytest.importorskip("torch")


def test_torch_lazy_negative_and_conjugate_views_keep_their_values():
    torch = _torch()
    z = torch.tensor([[1 + 2j, 3 + 4j]], dtype=torch.complex128)
    im = z.conj().imag  # a lazily negated view
    assert im.is_neg()
    want = im.resolve_neg().numpy()
    np.testing.assert_allclose(tenferro.einsum("ij->", im), want.sum())
    np.testing.assert_allclose(tff.fft(im), np.fft.fft(want))
    zc = z.conj()  # a lazily conjugated view
    np.testing.assert_allclose(tenferro.einsum("ij->j", zc), np.conj(z.numpy())[0])
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    m = (1j * torch.tensor(s)).conj().imag  # -s, lazily negated
    assert m.is_neg()
    np.testing.assert_allclose(tl.inv(m), np.linalg.inv(-s))
    np.testing.assert_allclose(tl.solve(m, np.ones(2)), np.linalg.solve(-s, np.ones(2)))


def test_torch_tensors_in_every_linalg_function(rng):
    torch = _torch()
    a_np = rng.standard_normal((4, 4))
    v_np = rng.standard_normal(3)
    a = torch.tensor(a_np, requires_grad=True)
    v = torch.tensor(v_np, requires_grad=True)
    checks = [
        (lambda x: tl.norm(x), lambda x: np.linalg.norm(x)),
        (lambda x: tl.norm(x, axis=0), lambda x: np.linalg.norm(x, axis=0)),
        (lambda x: tl.norm(x, 1), lambda x: np.linalg.norm(x, 1)),
        (lambda x: tl.vector_norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1)),
        (lambda x: tl.matmul(x, x), lambda x: x @ x),
        (lambda x: tl.trace(x), lambda x: np.trace(x)),
        (lambda x: tl.diagonal(x), lambda x: np.diagonal(x)),
        (lambda x: tl.matrix_power(x, 3), lambda x: np.linalg.matrix_power(x, 3)),
        (lambda x: tl.multi_dot([x, x, x]), lambda x: x @ x @ x),
        (lambda x: tl.cond(x), lambda x: np.linalg.cond(x)),
        (lambda x: tl.matrix_rank(x), lambda x: np.linalg.matrix_rank(x)),
        (lambda x: tl.tensordot(x, x, axes=1), lambda x: np.tensordot(x, x, axes=1)),
        (lambda x: tl.matrix_transpose(x), lambda x: x.T),
        (lambda x: tl.inv(x), lambda x: np.linalg.inv(x)),
    ]
    for ours, numpy_call in checks:
        np.testing.assert_allclose(ours(a), numpy_call(a_np), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tl.cross(v, v * 2 + 1), np.cross(v_np, v_np * 2 + 1))
    np.testing.assert_allclose(tl.outer(v, v), np.outer(v_np, v_np))
    # Integer and bool tensors convert as numpy arrays do; irfft takes real input.
    np.testing.assert_allclose(tl.inv(torch.eye(3, dtype=torch.int64)), np.eye(3))
    np.testing.assert_allclose(tl.det(torch.eye(3, dtype=torch.bool)), 1.0)
    np.testing.assert_allclose(tff.fft(torch.arange(6)), np.fft.fft(np.arange(6)))
    np.testing.assert_allclose(tff.irfft(torch.arange(6.0, dtype=torch.float64)), np.fft.irfft(np.arange(6.0)))
    assert a.grad is None  # nothing touched autograd


def test_torch_einsum_takes_torch_call_forms():
    torch = _torch()
    import tenferro.torch as tft

    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64)
    want = torch.einsum("ij,jk->ik", a, b)
    for got in (tft.einsum("ij,jk->ik", [a, b]), tft.einsum("ij,jk->ik", (a, b)),
                tft.einsum(a, [0, 1], b, [1, 2], [0, 2])):
        torch.testing.assert_close(got, want)
        (g,) = torch.autograd.grad(got.sum(), a)
        torch.testing.assert_close(g, torch.autograd.grad(want.sum(), a, retain_graph=True)[0])


def test_parentheses_fix_the_order_by_default(rng):
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))
    np.testing.assert_allclose(tenferro.einsum("ij,(jk,kl)->il", a, b, c), a @ b @ c)
    # An explicit planner that cannot keep the order still says so.
    with pytest.raises(tenferro.InvalidArgumentError, match="parentheses"):
        tenferro.einsum("ij,(jk,kl)->il", a, b, c, optimize="greedy")


def test_singular_determinant_is_positive_zero():
    d = tl.det(np.array([[1.0, 2.0], [2.0, 4.0]]))  # a row swap times a zero pivot
    assert d == 0.0 and not np.signbit(d) and not np.signbit(np.linalg.det([[1.0, 2.0], [2.0, 4.0]]))
