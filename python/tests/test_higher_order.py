"""Derivatives of derivatives (Note [Nested Traced values] in
python/src/tape.cpp, Note [Nested tapes] in gradient_tape.h): grad of grad,
jvp of grad, grad of jvp / vjp / hvp, and jacobian / hessian, against
torch's double backward and torch.autograd.functional."""

import threading

import numpy as np
import pytest

import tenferro
import tenferro.fft as tfft
import tenferro.linalg as tl

torch = pytest.importorskip("torch")


def _torch_hvp(fun, x, v):
    """d/dx <grad fun(x), v> by torch's double backward."""
    xt = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(fun(xt), xt, create_graph=True)
    (h,) = torch.autograd.grad((g * torch.tensor(v)).sum(), xt)
    return h.numpy()


_A = np.arange(12.0).reshape(4, 3) / 10
# (ours, torch's, operand shape): the second derivative goes through each
# family's AD rules twice (their backward programs are differentiated).
_CASES = {
    "einsum of three": (lambda x: tenferro.einsum("ij,jk,ki->", x, x, x),
                        lambda x: torch.einsum("ij,jk,ki->", x, x, x), (4, 4)),
    "tanh of matmul": (lambda x: np.sum(np.tanh(x @ x)), lambda x: torch.tanh(x @ x).sum(), (4, 4)),
    "det": (tl.det, torch.linalg.det, (4, 4)),
    "slogdet": (lambda x: tl.slogdet(x)[1], lambda x: torch.linalg.slogdet(x)[1], (4, 4)),
    "inv": (lambda x: np.sum(tl.inv(x) ** 2), lambda x: (torch.linalg.inv(x) ** 2).sum(), (4, 4)),
    "solve": (lambda x: np.sum(tl.solve(x, np.ones(4))),
              lambda x: torch.linalg.solve(x, torch.ones(4, dtype=x.dtype)).sum(), (4, 4)),
    "eigvalsh": (lambda x: np.sum(tl.eigvalsh(x + x.T) ** 3), lambda x: (torch.linalg.eigvalsh(x + x.T) ** 3).sum(),
                 (4, 4)),
    "svdvals": (lambda x: np.sum(tl.svd(x, compute_uv=False) ** 3), lambda x: (torch.linalg.svdvals(x) ** 3).sum(),
                (4, 3)),
    "qr": (lambda x: np.sum(tl.qr(x)[1] ** 2 * _A[:3]),
           lambda x: (torch.linalg.qr(x)[1] ** 2 * torch.tensor(_A[:3])).sum(), (4, 3)),
    "cholesky": (lambda x: np.sum(tl.cholesky(x @ x.T + 4 * np.eye(4)) ** 3),
                 lambda x: (torch.linalg.cholesky(x @ x.T + 4 * torch.eye(4, dtype=x.dtype)) ** 3).sum(), (4, 4)),
    "pinv": (lambda x: np.sum(tl.pinv(x) ** 2), lambda x: (torch.linalg.pinv(x) ** 2).sum(), (4, 3)),
    "norm": (lambda x: tl.norm(x) ** 3, lambda x: torch.linalg.norm(x) ** 3, (4, 4)),
    "fft": (lambda x: np.sum(np.abs(tfft.fft(x)) ** 4), lambda x: (torch.fft.fft(x).abs() ** 4).sum(), (8,)),
    "rfft": (lambda x: np.sum(np.abs(tfft.rfft(x)) ** 4), lambda x: (torch.fft.rfft(x).abs() ** 4).sum(), (8,)),
    "logsumexp": (lambda x: np.log(np.sum(np.exp(x))), lambda x: torch.logsumexp(x, 0), (6,)),
    "cumprod": (lambda x: np.sum(np.cumprod(x)), lambda x: torch.cumprod(x, 0).sum(), (6,)),
    "sort": (lambda x: np.sum(np.sort(x) ** 3 * np.arange(6.0)),
             lambda x: (torch.sort(x)[0] ** 3 * torch.arange(6.0, dtype=x.dtype)).sum(), (6,)),
    "gather": (lambda x: np.sum(x[[0, 2, 2]] ** 3), lambda x: (x[[0, 2, 2]] ** 3).sum(), (6,)),
    "where": (lambda x: np.sum(np.where(x > 0.5, x ** 3, np.sin(x))),
              lambda x: torch.where(x > 0.5, x ** 3, torch.sin(x)).sum(), (6,)),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_grad_of_grad_matches_torch_double_backward(name, rng):
    ours, theirs, shape = _CASES[name]
    x, v = rng.random(shape), rng.random(shape)
    got = tenferro.grad(lambda y: np.sum(tenferro.grad(ours)(y) * v))(x)
    np.testing.assert_allclose(got, _torch_hvp(theirs, x, v), rtol=1e-9, atol=1e-11)
    # The same product by forward over reverse.
    np.testing.assert_allclose(got, tenferro.hvp(ours, (x,), (v,))[0], rtol=1e-9, atol=1e-11)


def test_third_derivative_and_closures(rng):
    x = rng.random(5)
    f = lambda x: np.sum(np.sin(x))  # noqa: E731
    np.testing.assert_allclose(tenferro.grad(lambda x: np.sum(tenferro.grad(f)(x)))(x), -np.sin(x), rtol=1e-14)
    third = tenferro.grad(lambda x: np.sum(tenferro.grad(lambda y: np.sum(tenferro.grad(f)(y)))(x)))(x)
    np.testing.assert_allclose(third, -np.cos(x), rtol=1e-14)

    # The inner function closes over the outer argument (only the closure is
    # traced; the inner argument is a plain array): d/dy sum((2 x y)^2).
    def outer(y):
        return np.sum(tenferro.grad(lambda z: np.sum(z * z * y))(x) ** 2)

    y = rng.random(5)
    np.testing.assert_allclose(tenferro.grad(outer)(y), 8 * x * x * y, rtol=1e-13)


def test_every_transform_nests_in_every_other(rng):
    x, v = rng.random(4), rng.random(4)
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    ft = lambda x: (torch.sin(x) * x).sum()  # noqa: E731
    hv = _torch_hvp(ft, x, v)
    # value_and_grad inside grad: both results are traced.
    xt = torch.tensor(x, requires_grad=True)
    value = ft(xt)
    (g,) = torch.autograd.grad(value, xt, create_graph=True)
    (want,) = torch.autograd.grad(value * g.sum(), xt)

    def product(x):
        value, g = tenferro.value_and_grad(f)(x)
        return value * np.sum(g)

    np.testing.assert_allclose(tenferro.grad(product)(x), want.numpy(), rtol=1e-12)
    # jvp of grad and grad of jvp.
    out, tangent = tenferro.jvp(tenferro.grad(f), (x,), (v,))
    np.testing.assert_allclose(tangent, hv, rtol=1e-12)
    np.testing.assert_allclose(out, tenferro.grad(f)(x), rtol=1e-14)
    np.testing.assert_allclose(tenferro.grad(lambda x: tenferro.jvp(f, (x,), (v,))[1])(x), hv, rtol=1e-12)
    # A vjp whose cotangent is traced: d/dct |J^T ct|^2 = 2 J J^T ct.
    def pulled(ct):
        _, vjp_fn = tenferro.vjp(lambda y: np.sin(y) * 2, x)
        return np.sum(vjp_fn(ct)[0] ** 2)

    np.testing.assert_allclose(tenferro.grad(pulled)(v), 2 * (2 * np.cos(x)) ** 2 * v, rtol=1e-12)
    # hvp inside grad: a third derivative; has_aux inside grad.
    np.testing.assert_allclose(
        tenferro.grad(lambda x: np.sum(tenferro.hvp(lambda y: np.sum(y ** 4), (x,), (v,))[0]))(x), 24 * x * v,
        rtol=1e-12)
    with_aux = tenferro.grad(lambda y: (np.sum(y ** 3), y * 2), has_aux=True)
    np.testing.assert_allclose(tenferro.grad(lambda x: np.sum(with_aux(x)[0]))(x), 6 * x, rtol=1e-12)


def test_complex_grad_of_grad_is_torchs(rng):
    z = rng.random(3) + 1j * rng.random(3)
    got = tenferro.grad(
        lambda z: np.real(np.sum(tenferro.grad(lambda w: np.sum(np.abs(w) ** 4))(z) * np.conj(z))))(z)
    zt = torch.tensor(z, requires_grad=True)
    (g,) = torch.autograd.grad((zt.abs() ** 4).sum(), zt, create_graph=True)
    (want,) = torch.autograd.grad((g * zt.conj()).sum().real, zt)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_nesting_is_per_thread(rng):
    x = rng.random(4)
    results = {}

    def work(i):
        results[i] = tenferro.grad(lambda y: np.sum(tenferro.grad(lambda q: np.sum(q ** 3))(y)))(x * i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(1, 5):
        np.testing.assert_allclose(results[i], 6 * x * i, rtol=1e-13)


def test_a_value_that_leaves_its_call_is_a_typed_error():
    leaked = []

    def inner(y):
        leaked.append(y * 2)
        return np.sum(y ** 2)

    x = np.ones(3)
    with pytest.raises(tenferro.RuntimeFailure, match="closed"):  # the inner call's tape ended with it
        tenferro.grad(lambda x: np.sum(tenferro.grad(inner)(x) * leaked[-1]))(x)
    # Used in a later, unrelated call.
    with pytest.raises(tenferro.InvalidArgumentError, match="not nested"):
        tenferro.grad(lambda x: np.sum(x * leaked[-1]))(x)


def test_jacobian_matches_torch_in_both_modes(rng):
    a, x = rng.random((3, 4)), rng.random(4)
    tj = torch.autograd.functional.jacobian
    rows = tenferro.jacobian(lambda x: np.tanh(a @ x))(x)  # 3 outputs: reverse mode
    np.testing.assert_allclose(rows, tj(lambda t: torch.tanh(torch.tensor(a) @ t), torch.tensor(x)).numpy(),
                               rtol=1e-13)
    columns = tenferro.jacobian(lambda x: np.outer(np.sin(x), x))(x)  # 16 outputs: forward mode
    assert columns.shape == (4, 4, 4)
    np.testing.assert_allclose(columns, tj(lambda t: torch.outer(torch.sin(t), t), torch.tensor(x)).numpy(),
                               rtol=1e-13)
    m = rng.random((2, 3))
    ja, jm = tenferro.jacobian(lambda x, m: m @ x[:3] * x[3], argnums=(0, 1))(x, m)
    want = tj(lambda t, u: u @ t[:3] * t[3], (torch.tensor(x), torch.tensor(m)))
    np.testing.assert_allclose(ja, want[0].numpy(), rtol=1e-13)
    np.testing.assert_allclose(jm, want[1].numpy(), rtol=1e-13)
    assert jm.shape == (2, 2, 3)


def test_jacobian_of_container_outputs_is_that_container_of_blocks(rng):
    # Note [Jacobians of containers]: jax.jacrev's structure, torch's blocks.
    import collections

    a, x, y = rng.random((3, 4)), rng.random(4), rng.random(4)
    Pair = collections.namedtuple("Pair", "left right")

    def f(x, y):
        return {"energy": tenferro.einsum("i,ij,j->", y, a.T @ a, x),
                "parts": Pair(np.tanh(a @ x), (x * y).astype(np.float32)), "nested": [np.outer(x, y)]}

    def ft(s, t):
        at = torch.tensor(a)
        return (t @ at.T @ at @ s, torch.tanh(at @ s), s * t, torch.outer(s, t))

    want = torch.autograd.functional.jacobian(ft, (torch.tensor(x), torch.tensor(y)))
    jac = tenferro.jacobian(f, argnums=(0, 1))
    for _ in range(3):  # traced, then batched (the structure remembered for the signature)
        got = jac(x, y)
        assert set(got) == {"energy", "parts", "nested"} and isinstance(got["parts"], Pair)
        leaves = [got["energy"], got["parts"].left, got["parts"].right, got["nested"][0]]
        for leaf, w in zip(leaves, want):
            assert isinstance(leaf, tuple) and len(leaf) == 2
            for block, wb in zip(leaf, w):
                assert block.shape == tuple(wb.shape)
                np.testing.assert_allclose(block, wb.numpy(), rtol=2e-6 if block.dtype == np.float32 else 1e-12)
        assert got["parts"].right[0].dtype == np.float32 and got["energy"][0].dtype == np.float64
    from test_jit import _batched_of

    assert _batched_of(jac).batched_runs > 0
    single = tenferro.jacobian(lambda x: (np.sin(x), np.sum(x ** 2)))
    for _ in range(2):
        blocks = single(x)
        assert isinstance(blocks, tuple) and blocks[0].shape == (4, 4) and blocks[1].shape == (4,)
        np.testing.assert_allclose(blocks[0], np.diag(np.cos(x)), rtol=1e-13)
        np.testing.assert_allclose(blocks[1], 2 * x, rtol=1e-13)
    # Differentiable again (the blocks are Traced inside grad); a None leaf
    # is an empty subtree (None in the Jacobian, as jax); a str is refused.
    def loss(x):
        blocks = tenferro.jacobian(lambda z: (np.sin(z), z * z, None))(x)
        assert blocks[2] is None
        return np.sum(blocks[0]) + np.sum(blocks[1])

    np.testing.assert_allclose(tenferro.grad(loss)(x), 2 - np.sin(x), rtol=1e-13)
    with pytest.raises(tenferro.DTypeError, match=r"output\[1\] to be an array, found str"):  # a TypeError, as jax
        tenferro.jacobian(lambda z: (z, "abc"))(x)
    # Arguments stay single arrays: a container argument is refused by name.
    with pytest.raises(tenferro.InvalidArgumentError, match="container|tuple"):
        tenferro.jacobian(lambda p: p[0] * p[1])((x, y))


def test_hessian_matches_torch(rng):
    a, x, y = rng.random((3, 4)), rng.random(4), rng.random((2, 2))

    def h(x, y):
        return np.sum(np.sin(x)) * np.sum(y ** 3) + x @ a.T @ a @ x

    want = torch.autograd.functional.hessian(
        lambda s, t: torch.sin(s).sum() * (t ** 3).sum() + s @ torch.tensor(a).T @ torch.tensor(a) @ s,
        (torch.tensor(x), torch.tensor(y)))
    blocks = tenferro.hessian(h, argnums=(0, 1))(x, y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(blocks[i][j], want[i][j].numpy(), rtol=1e-12, atol=1e-14)
    assert blocks[0][1].shape == (4, 2, 2)
    np.testing.assert_allclose(tenferro.hessian(h)(x, y), want[0][0].numpy(), rtol=1e-12)


def test_jacobian_and_hessian_are_differentiable(rng):
    x = rng.random(4)
    # The gradient of the Laplacian of sum(sin(x)^2) = sum(2 cos 2x).
    laplacian = lambda x: np.trace(tenferro.hessian(lambda z: np.sum(np.sin(z) ** 2))(x))  # noqa: E731
    np.testing.assert_allclose(tenferro.grad(laplacian)(x), -4 * np.sin(2 * x), rtol=1e-12)
    # d/dx sum(J) of x -> outer(sin x, x), against torch.
    xt = torch.tensor(x, requires_grad=True)
    jt = torch.autograd.functional.jacobian(lambda t: torch.outer(torch.sin(t), t), xt, create_graph=True)
    (want,) = torch.autograd.grad(jt.sum(), xt)
    got = tenferro.grad(lambda x: np.sum(tenferro.jacobian(lambda t: np.outer(np.sin(t), t))(x)))(x)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_jacobian_and_hessian_errors():
    x = np.ones(3)
    with pytest.raises(tenferro.DTypeError, match="real"):
        tenferro.jacobian(lambda x: x * 1j)(x)
    with pytest.raises(tenferro.DTypeError, match="argument 0"):
        tenferro.jacobian(lambda x: np.abs(x))(x + 0j)
    with pytest.raises(tenferro.InvalidArgumentError, match="real scalar"):
        tenferro.hessian(lambda x: x * 2)(x)
    with pytest.raises(tenferro.InvalidArgumentError, match="out of range"):
        tenferro.hessian(lambda x: np.sum(x), argnums=1)(x)
    with pytest.raises(TypeError, match="argnums"):
        tenferro.jacobian(lambda x: x, argnums="0")


def _product_hessian(x):
    """The Hessian of prod(x): the product of the others, 0 on the diagonal."""
    n = len(x)
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("x", [[0.5, -1.2, 0.0, 2.0, 0.7], [0.5, 0.0, 0.0, 2.0, 0.7], [0.5, -1.2, 0.3, 2.0, 0.7]])
def test_second_derivatives_of_products_with_zero_factors(x):
    # Note [Product of the others] and cumprod's rule: the cross terms a
    # zero factor removes from the first derivative stay in the second.
    x = np.array(x)
    w = np.array([0.3, -0.1, 0.8, 0.2, -0.5])
    want = _product_hessian(x)
    np.testing.assert_allclose(tenferro.hessian(np.prod)(x), want, atol=1e-14)
    np.testing.assert_allclose(tenferro.hvp(np.prod, (x,), (w,))[0], want @ w, atol=1e-14)
    np.testing.assert_allclose(tenferro.grad(lambda y: np.sum(tenferro.grad(np.prod)(y) * w))(x), want @ w,
                               atol=1e-14)
    np.testing.assert_allclose(tenferro.jacobian(tenferro.grad(np.prod))(x), want, atol=1e-14)
    cumulative = torch.autograd.functional.hessian(lambda t: torch.cumprod(t, 0).sum(), torch.tensor(x)).numpy()
    np.testing.assert_allclose(tenferro.hessian(lambda y: np.sum(np.cumprod(y)))(x), cumulative, atol=1e-14)
    np.testing.assert_allclose(tenferro.grad(lambda y: np.sum(tenferro.grad(lambda z: np.sum(np.cumprod(z)))(y) * w))(x),
                               cumulative @ w, atol=1e-14)
    # Over several axes of a matrix (merged, then the same rule), and over
    # one axis of it. (torch's Hessian of a product with two zero factors
    # is 0 where the product of the others, here 1.05, is right.)
    m = np.reshape(np.concatenate([x, [1.5]]), (2, 3))
    got = tenferro.hessian(lambda y: np.prod(y, axis=(0, 1)))(m)
    np.testing.assert_allclose(got.reshape(6, 6), _product_hessian(m.ravel()), atol=1e-14)
    got = tenferro.hessian(lambda y: np.sum(np.prod(y, axis=0) ** 2))(m)
    ref = torch.autograd.functional.hessian(lambda t: (torch.prod(t, 0) ** 2).sum(), torch.tensor(m)).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-13)


def _torch_hessian(f, x):
    return torch.autograd.functional.hessian(f, torch.tensor(x)).numpy()


@pytest.mark.parametrize("x", [[0.0, 3.0, 4.0], [0.0, 0.0, 2.0], [1.0, -1.0, 0.5]])
def test_second_derivatives_at_zeros_ties_and_kinks_are_torchs(x):
    # The vector 2-norm's rule has no |x| sign(x) factor (its derivative at
    # an x_i = 0 is 0), and cosh, sinh, logaddexp and hypot are recorded
    # from branches smooth at 0 and at ties: each Hessian is torch's.
    x = np.array(x)
    y = np.array([1.0, -1.0, 0.0])
    cases = [
        (lambda v: tl.norm(v) ** 2, lambda t: torch.linalg.norm(t) ** 2),
        (lambda v: tl.vector_norm(v) * 3.0, lambda t: torch.linalg.vector_norm(t) * 3.0),
        (lambda v: np.linalg.norm(v.reshape(1, 3) * 2.0), lambda t: torch.linalg.norm(t.reshape(1, 3) * 2.0)),
        (lambda v: np.sum(np.cosh(v)), lambda t: torch.cosh(t).sum()),
        (lambda v: np.sum(np.sinh(v) ** 2), lambda t: (torch.sinh(t) ** 2).sum()),
        (lambda v: np.sum(np.logaddexp(v, y)), lambda t: torch.logaddexp(t, torch.tensor(y)).sum()),
        (lambda v: np.sum(np.logaddexp(0.0, v)), lambda t: torch.nn.functional.softplus(t).sum()),
        (lambda v: np.sum(np.hypot(v, y + 1.0)), lambda t: torch.hypot(t, torch.tensor(y + 1.0)).sum()),
        (lambda v: np.sum(np.hypot(v, v[::-1])), lambda t: torch.hypot(t, t.flip(0)).sum()),
    ]
    for f, g in cases:
        if not np.all(np.isfinite(_torch_hessian(g, x))):
            continue  # the 2-norm at 0 itself
        np.testing.assert_allclose(tenferro.hessian(f)(x), _torch_hessian(g, x), atol=1e-12)
    # p < 1: an entry at 0 contributes 0 to the gradient (torch's), not NaN.
    got = tenferro.grad(lambda v: tl.vector_norm(v, ord=0.5))(np.array([0.0, 1.0, 4.0]))
    want = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    torch.linalg.vector_norm(want, ord=0.5).backward()
    np.testing.assert_allclose(got, want.grad.numpy())


def test_smooth_branches_keep_numpys_values_and_finite_gradients():
    v = np.array([0.0, -0.0, 1e-300, 0.3, -0.99, 1.0, 5.0, 699.0, 700.0, 710.0, -710.4, 711.0, 1e150, 1e151,
                  1e200, np.inf, -np.inf, np.nan])
    a, b = (m.ravel() for m in np.meshgrid(v, v))
    with np.errstate(all="ignore"):
        for dtype in (np.float64, np.float32):
            for f, args in [(np.cosh, (v,)), (np.sinh, (v,)), (np.logaddexp, (a, b)), (np.hypot, (a, b))]:
                args = tuple(x.astype(dtype) for x in args)
                got, want = tenferro.jit(f)(*args), f(*args)
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
        # A branch not taken is not read: no 0 * inf in the gradient.
        x = np.array([0.0, 800.0, -800.0, 1.0])
        np.testing.assert_allclose(tenferro.grad(lambda t: np.sum(np.cosh(t)))(x), np.sinh(x), rtol=1e-15)
        np.testing.assert_allclose(tenferro.grad(lambda t: np.sum(np.sinh(t)))(x), np.cosh(x), rtol=1e-15)
        np.testing.assert_allclose(tenferro.grad(lambda t: np.sum(np.logaddexp(t, 0.0)))(
            np.array([0.0, 800.0, -800.0, np.inf, -np.inf])), [0.5, 1.0, 0.0, 1.0, 0.0])
        got = tenferro.grad(lambda t: np.sum(np.hypot(t, np.array([0.0, 1e-200, 1e200, 3.0]))))(
            np.array([0.0, 1e-200, 1e200, 4.0]))
        np.testing.assert_allclose(got, [0.0, 2 ** -0.5, 2 ** -0.5, 0.8])


def test_numpy_functions_inside_grad():
    x = np.array([[1.2345, -2.5], [0.125, 2.675]])
    for decimals in (0, 1, 2, -1):
        assert np.array_equal(tenferro.jit(lambda a: np.round(a, decimals))(x), np.round(x, decimals))
    np.testing.assert_allclose(tenferro.grad(lambda a: np.sum(np.round(a, 2) * a))(x), np.round(x, 2))
    assert tenferro.grad(lambda a: np.sum(a) * (2.0 if np.iscomplexobj(a) else 1.0))(x)[0, 0] == 1.0
    # A full contraction through linalg.tensordot stays a recorded value.
    np.testing.assert_allclose(tenferro.grad(lambda a: tl.tensordot(a, a, axes=2))(x), 2 * x)
    # numpy's error for an empty max / min, under grad and jit alike.
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        tenferro.grad(lambda a: np.max(a))(np.zeros(0))
    with pytest.raises(ValueError, match="operation minimum"):  # jit runs such a call as numpy
        tenferro.jit(lambda a: np.min(a, axis=0))(np.zeros((0, 2)))


def test_derivatives_of_functions_that_do_not_depend_on_their_arguments_are_zeros():
    x = np.array([1.0, 2.0])
    # A constant inner derivative: grad of it is 0 at every order (jax).
    assert tenferro.grad(tenferro.grad(tenferro.grad(lambda b: b ** 2)))(1.5) == 0
    assert tenferro.grad(tenferro.grad(lambda b: 2 * b))(1.5) == 0
    np.testing.assert_array_equal(tenferro.jacobian(lambda y: np.ones(3))(x), np.zeros((3, 2)))
    np.testing.assert_array_equal(tenferro.hessian(lambda y: 3.0)(x), np.zeros((2, 2)))
    np.testing.assert_array_equal(tenferro.jvp(lambda y: np.ones(3), (x,), (x,))[1], np.zeros(3))
    out, vjp_fn = tenferro.vjp(lambda y: np.ones(3), x)
    np.testing.assert_array_equal(vjp_fn(np.ones(3))[0], np.zeros(2))
    np.testing.assert_array_equal(tenferro.hvp(lambda y: 2.0, (x,), (x,))[0], np.zeros(2))
    np.testing.assert_array_equal(tenferro.grad(lambda y: np.sum(np.sign(y)))(x), np.zeros(2))
    np.testing.assert_array_equal(tenferro.hessian(lambda a, b: np.sum(a ** 2), argnums=1)(x, x), np.zeros((2, 2)))
    with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
        tenferro.jacobian(lambda y: np.array([float(y[0])]))(x)


def test_nested_auxiliary_values_stay_differentiable_as_jax():
    x, p = np.array([0.3, -0.7, 1.1]), np.array([0.5, 1.5, -0.2])

    def inner(b, a):
        return np.sum(a * b ** 2), a * 2.0

    def outer(a):
        g, aux = tenferro.grad(inner, has_aux=True)(p, a)
        return np.sum(g * a) + np.sum(aux * a)  # = sum(2 p a^2) + sum(2 a^2)

    np.testing.assert_allclose(tenferro.grad(outer)(x), 4 * p * x + 4 * x, rtol=1e-14)


def test_leaked_values_are_errors():
    leaked = []

    def fun(y):
        leaked.append(y * 2)
        return np.sum(y ** 2)

    tenferro.grad(fun)(np.ones(3))
    with pytest.raises(tenferro.RuntimeFailure, match="closed"):
        leaked[0] + 1
    with pytest.raises(tenferro.RuntimeFailure, match="closed"):
        np.sin(leaked[0])
    np.testing.assert_array_equal(leaked[0].numpy(), 2 * np.ones(3))  # the value is still readable
    # A leaked value in a later call is refused, as jax's leaked tracers.
    with pytest.raises(tenferro.Error):
        tenferro.grad(lambda y: np.sum(y * leaked[0]))(np.ones(3))


def test_sinc_and_integer_conversion():
    # sinc''(0) = -pi^2 / 3 (jax's; torch gives NaN), sinc'(0) = 0.
    d2 = tenferro.grad(lambda y: np.sum(tenferro.grad(lambda z: np.sum(np.sinc(z)))(y)))(np.zeros(1))
    np.testing.assert_allclose(d2, [-np.pi ** 2 / 3], rtol=1e-14)
    np.testing.assert_allclose(tenferro.grad(lambda y: np.sum(np.sinc(y)))(np.array([0.0, 0.5])),
                               [0.0, (np.cos(np.pi / 2) * np.pi / 2 - 1) / (np.pi * 0.25)], atol=1e-14)
    seen = []
    tenferro.grad(lambda y: (seen.append(int(np.sum(y))), np.sum(y))[1])(np.array([1.5, 2.0]))
    assert seen == [3]


def test_einsum_vjp_inside_grad_is_differentiable(rng):
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))
    got = tenferro.grad(lambda y: np.sum(tenferro.einsum_vjp("ij,jk,kl->il", a, y, c, np.ones((3, 2)))[0] ** 2))(b)
    at, bt, ct = (torch.tensor(v, requires_grad=True) for v in (a, b, c))
    (ga,) = torch.autograd.grad(torch.einsum("ij,jk,kl->il", at, bt, ct), (at,), torch.ones(3, 2), create_graph=True)
    (want,) = torch.autograd.grad((ga ** 2).sum(), (bt,))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_vjp_and_jvp_of_several_outputs_keep_their_structure_as_jax(rng):
    x = rng.standard_normal((4, 3))
    (twice, gram), vjp_fn = tenferro.vjp(lambda a: (a * 2, a.T @ a), x)
    np.testing.assert_allclose(gram, x.T @ x)
    cts = (rng.standard_normal((4, 3)), rng.standard_normal((3, 3)))
    t = torch.tensor(x, requires_grad=True)
    torch.autograd.backward((t * 2, t.T @ t), [torch.tensor(c) for c in cts])
    np.testing.assert_allclose(vjp_fn(cts)[0], t.grad.numpy(), rtol=1e-12)
    # A named tuple of a complex and a real output: each keeps its dtype,
    # and the real one's cotangent reaches the input as torch's does.
    c = x + 1j * rng.standard_normal((4, 3))
    res, vjp_fn = tenferro.vjp(lambda a: tl.svd(a, full_matrices=False), c)
    assert type(res).__name__ == "SVDResult" and res.S.dtype == np.float64 and res.U.dtype == np.complex128
    ds = rng.standard_normal(3)
    tc = torch.tensor(c, requires_grad=True)
    torch.linalg.svdvals(tc).backward(torch.tensor(ds))
    np.testing.assert_allclose(vjp_fn((np.zeros_like(res.U), ds, np.zeros_like(res.Vh)))[0], tc.grad.numpy(),
                               rtol=1e-10)
    out, tangent = tenferro.jvp(lambda a: [np.sin(a), np.sum(a ** 2)], (x,), (x,))
    assert isinstance(out, list) and isinstance(tangent, list) and np.shape(tangent[1]) == ()
    np.testing.assert_allclose(tangent[0], np.cos(x) * x)
    np.testing.assert_allclose(tangent[1], np.sum(2 * x * x))
    # Nested: the pullback of several outputs is differentiable.
    g = tenferro.grad(lambda a: np.sum(tenferro.vjp(lambda b: (b * b, np.sin(b)), a)[1](
        (np.ones((4, 3)), np.ones((4, 3))))[0]))(x)
    np.testing.assert_allclose(g, 2 - np.sin(x), rtol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match="expected 2 cotangents, one per output"):
        tenferro.vjp(lambda a: (a, a), x)[1]((x,))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"shape \(3, 3\) for output 1"):
        tenferro.vjp(lambda a: (a, a.T @ a), x)[1]((x, x))
    with pytest.raises(tenferro.DTypeError, match="found int64 for output 1"):
        tenferro.vjp(lambda a: (a, np.argmax(a)), x)


def test_vjp_and_jvp_take_has_aux_as_jax():
    x = np.array([0.3, -0.7, 1.1])
    out, vjp_fn, aux = tenferro.vjp(lambda y: (np.sin(y), np.sum(y)), x, has_aux=True)
    np.testing.assert_allclose(out, np.sin(x))
    np.testing.assert_allclose(aux, np.sum(x))
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], np.cos(x))
    out, tangent, aux = tenferro.jvp(lambda y: (y ** 2, {"norm": np.sum(y)}), (x,), (np.ones(3),), has_aux=True)
    np.testing.assert_allclose(tangent, 2 * x)
    np.testing.assert_allclose(aux["norm"], np.sum(x))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"vjp\(has_aux=True\): expected fun to return a pair"):
        tenferro.vjp(lambda y: y, x, has_aux=True)
    # Inside grad, the auxiliary value is traced too.
    g = tenferro.grad(lambda y: np.sum(tenferro.jvp(lambda z: (z ** 2, z ** 3), (y,), (np.ones(3),),
                                                    has_aux=True)[2]))(x)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-14)
