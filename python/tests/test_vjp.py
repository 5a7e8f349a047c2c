"""tenferro.einsum_vjp against torch.autograd (and, without torch, against
the closed-form gradients of a matrix product)."""

import numpy as np
import pytest

import tenferro
from conftest import DTYPES, random_array, run_threads, tolerance

VJP_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("ij,ij->ij", [(3, 1), (3, 4)]),  # size-1 broadcast
    # Three or more operands: recorded as the planned binary steps (Note
    # [Pairwise einsums for reverse mode]), with a diagonal, a label summed
    # out alone, a scalar output, and broadcast axes.
    ("ab,bc,cd,de,ef->af", [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3)]),
    ("iij,jk,kl->il", [(3, 3, 2), (2, 4), (4, 5)]),
    ("ij,jk,kl,m->li", [(3, 4), (4, 5), (5, 2), (3,)]),
    ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),
    ("abc,cd,bde->ae", [(2, 3, 4), (4, 5), (3, 5, 2)]),
    ("...ij,...jk,...kl->...il", [(2, 3, 4), (1, 4, 5), (2, 5, 2)]),
    ("ab,ab,bc->ac", [(3, 1), (3, 4), (4, 2)]),
]


def test_matrix_product_closed_form(rng):
    a = random_array(rng, (3, 4), np.float64)
    b = random_array(rng, (4, 5), np.float64)
    ct = random_array(rng, (3, 5), np.float64)
    ga, gb = tenferro.einsum_vjp("ij,jk->ik", a, b, ct)
    np.testing.assert_allclose(ga, ct @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ ct, rtol=1e-12)
    ga2, gb2 = tenferro.einsum_vjp("ij,jk->ik", a, b, cotangent=ct, runtime=tenferro.Runtime(threads=1))
    np.testing.assert_allclose(ga2, ga)
    np.testing.assert_allclose(gb2, gb)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("subscripts,shapes", VJP_CASES)
def test_matches_torch_autograd(subscripts, shapes, dtype, rng, torch):
    ops = [random_array(rng, s, dtype) for s in shapes]
    out_shape = np.einsum(subscripts, *ops).shape
    ct = random_array(rng, out_shape, dtype)
    grads = tenferro.einsum_vjp(subscripts, *ops, ct)
    assert len(grads) == len(ops)
    ts = [torch.from_numpy(o.copy()).requires_grad_(True) for o in ops]
    y = torch.einsum(subscripts, *ts)
    want = torch.autograd.grad(y, ts, torch.from_numpy(ct.copy()))
    for g, w, o in zip(grads, want, ops):
        assert g.shape == o.shape and g.dtype == o.dtype
        np.testing.assert_allclose(g, w.numpy(), err_msg=subscripts, **tolerance(dtype))


@pytest.mark.parametrize("subscripts,shapes", [c for c in VJP_CASES if c[0].count(",") >= 2])
def test_traced_einsum_of_three_or_more_operands_matches_einsum_vjp(subscripts, shapes, rng):
    # The tape records such einsums as their planned binary steps; the
    # gradients are einsum_vjp's (checked against torch above).
    ops = [random_array(rng, s, np.complex128) for s in shapes]
    ct = random_array(rng, np.einsum(subscripts, *ops).shape, np.complex128)
    value, pullback = tenferro.vjp(lambda *xs: tenferro.einsum(subscripts, *xs), *ops)
    np.testing.assert_allclose(value, np.einsum(subscripts, *ops), rtol=1e-12, atol=1e-12)
    for g, w in zip(pullback(ct), tenferro.einsum_vjp(subscripts, *ops, ct)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=subscripts)


def test_vjp_bad_input(rng):
    a = random_array(rng, (3, 4), np.float64)
    b = random_array(rng, (4, 5), np.float64)
    with pytest.raises(tenferro.InvalidArgumentError) as info:
        tenferro.einsum_vjp("ij,jk->ik", a, b, np.ones((3, 4)))
    assert info.value.code == "kShapeMismatch"
    with pytest.raises(tenferro.DTypeError):
        tenferro.einsum_vjp("ij,jk->ik", a, b, np.ones((3, 5), dtype=np.complex128))
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.einsum_vjp("ij,jk->ik", a, np.ones((3, 5)))  # one operand short


# --- tenferro.vjp / grad over Python functions (a GradientTape recording) ---


@pytest.mark.parametrize("dtype", DTYPES)
def test_vjp_of_a_function_matches_torch(dtype, rng, torch):
    x = random_array(rng, (3, 4), dtype)
    y = random_array(rng, (4, 5), dtype)
    z = random_array(rng, (5, 2), dtype)

    def f(einsum, x, y, z):
        xy = einsum("ij,jk->ik", x, y)
        return einsum("ik,kl->il", xy * xy, z) - 0.5 * einsum("ik,kl->il", xy, z)

    out, vjp_fn = tenferro.vjp(lambda *a: f(tenferro.einsum, *a), x, y, z)
    ct = random_array(rng, out.shape, dtype)
    grads = vjp_fn(ct)
    ts = [torch.from_numpy(v.copy()).requires_grad_(True) for v in (x, y, z)]
    tout = f(torch.einsum, *ts)
    np.testing.assert_allclose(out, tout.detach().numpy(), **tolerance(dtype))
    want = torch.autograd.grad(tout, ts, torch.from_numpy(ct.copy()))
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w.numpy(), **tolerance(dtype))
    # vjp_fn can be called again (gradients do not accumulate across calls).
    for g, w in zip(vjp_fn(ct), want):
        np.testing.assert_allclose(g, w.numpy(), **tolerance(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_grad_matches_torch(dtype, rng, torch):
    a = random_array(rng, (4, 4), dtype)
    b = random_array(rng, (4,), dtype)

    def loss(einsum, a, b):
        v = einsum("ij,j->i", a, b)
        return einsum("i,i->", v.conj(), v).real + einsum("ii->", a).real

    value, (ga, gb) = tenferro.value_and_grad(lambda a, b: loss(tenferro.einsum, a, b), argnums=(0, 1))(a, b)
    ta, tb = (torch.from_numpy(v.copy()).requires_grad_(True) for v in (a, b))
    tl = loss(torch.einsum, ta, tb)
    want_a, want_b = torch.autograd.grad(tl, (ta, tb))
    np.testing.assert_allclose(value, tl.item(), rtol=1e-12)
    np.testing.assert_allclose(ga, want_a.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb, want_b.numpy(), rtol=1e-10, atol=1e-12)
    g = tenferro.grad(lambda a: loss(tenferro.einsum, a, b))(a)
    np.testing.assert_allclose(g, want_a.numpy(), rtol=1e-10, atol=1e-12)


def test_vjp_fn_called_per_row_gives_the_jacobian(rng):
    # Each call seeds the output with its cotangent (nothing is recorded), so
    # a Jacobian by rows costs one backward program, compiled once.
    x = random_array(rng, (3, 4), np.float64)
    w = random_array(rng, (4, 2), np.float64)
    out, vjp_fn = tenferro.vjp(lambda t: np.tanh(t @ w), x)
    rows = []
    for k in range(out.size):
        e = np.zeros(out.size)
        e[k] = 1.0
        rows.append(vjp_fn(e.reshape(out.shape))[0])
    jac = np.stack(rows).reshape(out.shape + x.shape)
    d = 1.0 - np.tanh(x @ w) ** 2  # d out[i, j] / d x[i, l] = d[i, j] w[l, j]
    want = np.zeros(out.shape + x.shape)
    for i in range(3):
        want[i, :, i, :] = (d[i][:, None] * w.T)
    np.testing.assert_allclose(jac, want, rtol=1e-12, atol=1e-14)
    # The identity: the gradient is the cotangent itself.
    _, identity = tenferro.vjp(lambda t: t, x)
    np.testing.assert_array_equal(identity(2.0 * x + 1.0)[0], 2.0 * x + 1.0)


def test_grad_without_torch(rng):
    a = random_array(rng, (3, 4), np.float64)
    g = tenferro.grad(lambda x: tenferro.einsum("ij,ij->", x, x))(a)
    np.testing.assert_allclose(g, 2 * a, rtol=1e-12)
    # An argument the output does not depend on gets zeros.
    g0, g1 = tenferro.grad(lambda x, y: tenferro.einsum("ij->", x), argnums=(0, 1))(a, a)
    np.testing.assert_allclose(g0, np.ones_like(a))
    np.testing.assert_allclose(g1, np.zeros_like(a))
    # Integer and bool constants next to Traced values take their dtype.
    for w, dtype in ((np.array([1, -2, 3, 4]), np.float64), (np.array([True, False, True, True]), np.float32)):
        g = tenferro.grad(lambda x: tenferro.einsum("ij,j->", x, w))(a.astype(dtype))
        assert g.dtype == dtype
        np.testing.assert_array_equal(g, np.broadcast_to(w.astype(dtype), a.shape))
    # The variable itself must be inexact, as in JAX and PyTorch.
    with pytest.raises(tenferro.DTypeError):
        tenferro.grad(lambda x: tenferro.einsum("ij,ij->", x, x))(np.ones((2, 2), np.int64))


def test_grad_bad_use(rng):
    a = random_array(rng, (3, 4), np.float64)
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.grad(lambda x: tenferro.einsum("ij->i", x))(a)  # not a scalar
    # Nothing traced: a constant function, whose pullback gives zeros (jax's).
    np.testing.assert_array_equal(tenferro.vjp(lambda x: np.ones(3), a)[1](np.ones(3))[0], np.zeros_like(a))
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.vjp(lambda x: "text", a)  # not an array
    out, vjp_fn = tenferro.vjp(lambda x: tenferro.einsum("ij->ji", x), a)
    with pytest.raises(tenferro.InvalidArgumentError):
        vjp_fn(np.ones((3, 4)))  # wrong cotangent shape
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.grad(lambda x: (tenferro.einsum("ij->ji", x) + np.ones((2, 2))).sum())(a)  # bad broadcast


# eigh and pinv once failed here with kAliasConflict: the runtime's buffer
# plan wrote an add in place over an operand another operand read
# transposed (eigh), and a convert over a larger reused buffer of another
# dtype (pinv). C++ regressions: CpuRuntimeTest.InPlace*.
def _squares(w):
    return w * w


LINALG_LOSSES = [
    pytest.param(lambda L, x, b: L["det"](x) + L["inv"](x).sum(), id="det+inv"),
    pytest.param(lambda L, x, b: L["svdvals"](x).sum(), id="svdvals"),
    pytest.param(lambda L, x, b: L["solve"](x, b).sum(), id="solve"),
    pytest.param(lambda L, x, b: L["slogdet"](x)[1], id="slogdet"),
    pytest.param(lambda L, x, b: _squares(L["eigvalsh"](x + L["t"](x))).sum(), id="eigvalsh"),
    pytest.param(lambda L, x, b: L["pinv"](x).sum(), id="pinv"),
]


def _tenferro_ops():
    tl = tenferro.linalg
    return {
        "det": tl.det,
        "inv": tl.inv,
        "svdvals": lambda x: tl.svd(x, compute_uv=False),
        "eigvalsh": tl.eigvalsh,
        "t": lambda x: tenferro.einsum("ij->ji", x),
        "solve": tl.solve,
        "slogdet": tl.slogdet,
        "pinv": tl.pinv,
    }


def _torch_ops(torch):
    return {
        "det": torch.linalg.det,
        "inv": torch.linalg.inv,
        "svdvals": torch.linalg.svdvals,
        "eigvalsh": torch.linalg.eigvalsh,
        "t": lambda x: x.T,
        "solve": torch.linalg.solve,
        "slogdet": torch.linalg.slogdet,
        "pinv": torch.linalg.pinv,
    }


@pytest.mark.parametrize("loss", LINALG_LOSSES)
def test_grad_through_linalg_matches_torch(loss, rng, torch):
    x = random_array(rng, (4, 4), np.float64) + 3 * np.eye(4)
    b = random_array(rng, (4, 2), np.float64)
    value, (gx, gb) = tenferro.value_and_grad(lambda x, b: loss(_tenferro_ops(), x, b), argnums=(0, 1))(x, b)
    tx, tb = (torch.from_numpy(v.copy()).requires_grad_(True) for v in (x, b))
    tl = loss(_torch_ops(torch), tx, tb)
    want_x, want_b = torch.autograd.grad(tl, (tx, tb), allow_unused=True)
    np.testing.assert_allclose(value, tl.item(), rtol=1e-10)
    np.testing.assert_allclose(gx, want_x.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gb, np.zeros_like(b) if want_b is None else want_b.numpy(), rtol=1e-8, atol=1e-10)


def _assert_gradients_match(ours, theirs, args, torch):
    """The value and every argument's gradient of ours (tenferro.grad) and
    theirs (torch.autograd) agree."""
    value, grads = tenferro.value_and_grad(ours, argnums=tuple(range(len(args))))(*args)
    targs = [torch.from_numpy(v.copy()).requires_grad_(True) for v in args]
    tl = theirs(*targs)
    want = torch.autograd.grad(tl, targs)
    np.testing.assert_allclose(value, tl.item(), rtol=1e-10)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-8, atol=1e-10)


def test_linalg_with_numpy_conveniences_matches_torch(rng, torch):
    # lstsq (its solution and singular values, one recorded op), eigvalsh(UPLO="U")
    # and solve with a vector right-hand side and broadcast batch axes.
    a = random_array(rng, (5, 3), np.float64)
    b = random_array(rng, (5,), np.float64)
    s = random_array(rng, (2, 3, 3), np.float64) + 3 * np.eye(3)
    v = random_array(rng, (3,), np.float64)

    def ours(a, b, s, v):
        tl = tenferro.linalg
        x, _, _, sv = tl.lstsq(a, b)
        return (x**2).sum() + (sv**3).sum() + tl.eigvalsh(s[0], UPLO="U")[-1] + (tl.solve(s, v) * 2).sum()

    def theirs(a, b, s, v):
        x = torch.linalg.lstsq(a, b[:, None]).solution[:, 0]
        sv = torch.linalg.svdvals(a)
        # The Hermitian matrix eigvalsh(UPLO="U") reads: the gradient lands on
        # the upper triangle (torch's own eigvalsh symmetrises it instead).
        upper = torch.triu(s[0]) + torch.triu(s[0], 1).T
        return ((x**2).sum() + (sv**3).sum() + torch.linalg.eigvalsh(upper)[-1]
                + (torch.linalg.solve(s, v) * 2).sum())

    args = (a, b, s, v)
    _assert_gradients_match(ours, theirs, args, torch)


def test_linalg_compositions_record_their_parts(rng, torch):
    # matrix_power, multi_dot, cond, tensorinv and tensorsolve are built from
    # recorded operations, so they differentiate too (no silent copy).
    x = random_array(rng, (3, 3), np.float64) + 3 * np.eye(3)
    y = random_array(rng, (3, 4), np.float64)
    t = random_array(rng, (2, 3, 6), np.float64) + np.eye(6).reshape(6, 2, 3).transpose(1, 2, 0)

    def ours(x, y, t):
        tl = tenferro.linalg
        return (tl.matrix_power(x, 3).sum() + tl.matrix_power(x, -2).sum() + tl.multi_dot([x, x.T, y]).sum()
                + tl.cond(x) + tl.cond(x, "fro") + tl.tensorinv(t, ind=2).sum()
                + tl.tensorsolve(t, np.ones((2, 3))).sum())

    def theirs(x, y, t):
        la = torch.linalg
        tinv = la.inv(t.reshape(6, 6)).reshape(6, 2, 3)
        tsol = la.solve(t.reshape(6, 6), torch.ones(6, dtype=t.dtype))
        inv = la.inv(x)
        s = la.svdvals(x)  # (torch's own cond and negative matrix_power modify a saved inverse in place)
        return (la.matrix_power(x, 3).sum() + (inv @ inv).sum() + la.multi_dot([x, x.T, y]).sum()
                + s[0] / s[-1] + la.norm(x, "fro") * la.norm(inv, "fro") + tinv.sum() + tsol.sum())

    args = (x, y, t)
    _assert_gradients_match(ours, theirs, args, torch)


# --- From an audit of the AD API against torch and jax ---


def test_a_shared_pullback_is_safe_across_threads(rng):
    # vjp_fn resets, seeds and reads one tape: calls from several threads
    # are serialised (they used to mix each other's cotangents, ~1 in 2,000).
    x = rng.standard_normal((5, 5))
    _, fn = tenferro.vjp(lambda x: np.tanh(x @ x), x)
    cts = [rng.standard_normal((5, 5)) for _ in range(4)]
    wants = [fn(c)[0].copy() for c in cts]
    wrong = []

    def worker(k):
        for _ in range(400):
            if not np.array_equal(fn(cts[k])[0], wants[k]):
                wrong.append(k)

    run_threads(worker, 4)
    assert not wrong


def test_where_on_zero_dimensional_values():
    # A 0-d boolean condition used to reach the tape as shape [1].
    f = lambda x: np.where(x > 0, x * 2.0, np.sin(x))  # noqa: E731
    assert tenferro.grad(f)(np.array(0.5)) == 2.0
    assert np.isclose(tenferro.grad(f)(np.array(-0.5)), np.cos(-0.5))
    np.testing.assert_array_equal(tenferro.grad(lambda x: np.where(np.sum(x) > 0, np.sum(x), 0.0))(np.ones(3)),
                                  np.ones(3))


def test_repeated_and_numpy_integer_argnums():
    a, b = np.full((2, 2), 2.0), np.ones((2, 2))
    f = lambda a, b: np.sum(a * a * b)  # noqa: E731
    for nums in ((0, 0), (0, -2)):
        g = tenferro.grad(f, argnums=nums)(a, b)
        assert len(g) == 2
        np.testing.assert_array_equal(g[0], 2 * a * b)
        np.testing.assert_array_equal(g[1], 2 * a * b)
    np.testing.assert_array_equal(tenferro.grad(f, argnums=np.int64(1))(a, b), a * a)
    for bad in (1.0, None, "0"):
        with pytest.raises(TypeError, match="argnums"):
            tenferro.grad(f, argnums=bad)


def test_einsum_sublist_form_is_recorded(rng):
    a = rng.standard_normal((3, 4))
    want = tenferro.grad(lambda a: np.sum(np.einsum("ij,jk->ik", a, a.T)))(a)
    for call in (lambda a: np.einsum(a, [0, 1], a.T, [1, 2], [0, 2]),
                 lambda a: tenferro.einsum(a, [0, 1], a.T, [1, 2], [0, 2])):
        np.testing.assert_allclose(tenferro.grad(lambda a: np.sum(call(a)))(a), want, rtol=1e-12)


def test_log2_and_log10_keep_float32():
    x = np.linspace(1, 2, 3, dtype=np.float32)
    for fn in (np.log2, np.log10):
        seen = []
        tenferro.grad(lambda x: (seen.append(fn(x).dtype), np.sum(fn(x)))[1])(x)
        assert seen == [np.float32]


def test_values_taken_off_the_tape_are_an_error_not_a_zero_gradient():
    import math

    x = np.ones(3)
    for fun in (lambda x: float(np.sum(x ** 2)), lambda x: math.exp(np.sum(x)), lambda x: np.sum(x).item()):
        with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
            tenferro.grad(fun)(x)
    np.testing.assert_array_equal(tenferro.grad(lambda x: 3.0)(x), np.zeros(3))  # a constant function
    for transform in (tenferro.grad, tenferro.hessian):  # jax's TypeError
        with pytest.raises(tenferro.DTypeError, match="complex128"):
            transform(lambda x: np.sum(x * 1j))(x)
    # A scalar argument read before anything is recorded (math.exp(x) of a
    # 0-d x records nothing) is taken off the tape as well, in every entry.
    s = np.array(1.5)
    for fun in (lambda x: math.exp(x), lambda x: float(x) ** 2, lambda x: x.item() ** 2, lambda x: math.sin(x)):
        with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
            tenferro.grad(fun)(s)
        with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
            tenferro.vjp(fun, s)
        with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
            tenferro.jvp(fun, (s,), (s,))
    with pytest.raises(tenferro.InvalidArgumentError, match="off the tape"):
        tenferro.grad(lambda x: math.exp(x))(1.5)
    # Control flow on the value is not taking it off the tape: a piecewise
    # constant function has a zero derivative, and a traced branch its own.
    assert tenferro.grad(lambda x: 1.0 if x > 0 else 0.0)(s) == 0.0
    assert tenferro.grad(lambda x: x * x if bool(x > 0) else -x)(s) == 3.0
    assert tenferro.grad(lambda x: x * 2 if x else x)(s) == 2.0


def test_integer_and_bool_outputs_are_dtype_errors():
    x = np.array([0.3, -1.0, 2.0, 0.5])
    for fun in (lambda a: np.argmax(a), lambda a: a > 0, lambda a: (a * 2).astype(np.int64), lambda a: 3):
        for call in (lambda f: tenferro.vjp(f, x), lambda f: tenferro.jvp(f, (x,), (x,)),
                     lambda f: tenferro.grad(f)(x), lambda f: tenferro.jacobian(f)(x)):
            with pytest.raises(tenferro.DTypeError, match="as aux") as e:
                call(fun)
            assert e.value.code == "kDTypeMismatch" and e.value.canonical == "kInvalidArgument"
    # As aux they are returned as they are.
    value, aux = tenferro.grad(lambda a: (np.sum(a * a), np.argmax(a)), has_aux=True)(x)
    np.testing.assert_array_equal(value, 2 * x)
    assert aux == 2


def test_matmul_shape_errors_inside_grad_name_matmul():
    a, b = np.ones((2, 3)), np.ones(5)
    for fun in (lambda a: np.sum(a @ b), lambda a: np.sum(np.matmul(a, b)), lambda a: np.sum(a @ np.ones((4, 2)))):
        with pytest.raises(tenferro.InvalidArgumentError, match="^matmul: Input operand 1 has a mismatch") as e:
            tenferro.grad(fun)(a)
        assert isinstance(e.value, ValueError) and e.value.code == "kShapeMismatch"


def test_forward_mode_takes_sequences():
    x = np.ones(3)
    with pytest.raises(TypeError, match="tuple or list"):
        tenferro.jvp(lambda x: x * 2, x, x)
    with pytest.raises(TypeError, match="tuple or list"):
        tenferro.hvp(lambda x: np.sum(x * x), x, (x,))


def test_truth_value_of_a_traced_value():
    seen = []

    def f(x):
        s = np.sum(x)
        seen.append(bool(s))
        if s:  # control flow on the value, as on a numpy 0-d array
            return s * 2
        return s

    np.testing.assert_array_equal(tenferro.grad(f)(np.ones(3)), np.full(3, 2.0))
    assert seen == [True]
    with pytest.raises(ValueError, match="ambiguous"):
        tenferro.grad(lambda x: np.sum(x) if x else np.sum(x))(np.ones(3))


def test_grad_has_aux_and_keyword_arguments_as_jax():
    x = np.array([1.0, 2.0, 3.0])

    def loss(v, scale=1.0):
        return (scale * v**2).sum(), {"mean": v.mean(), "tag": "ok"}

    g, aux = tenferro.grad(loss, has_aux=True)(x, scale=2.0)
    np.testing.assert_allclose(g, 4.0 * x)
    assert aux["tag"] == "ok" and isinstance(aux["mean"], np.ndarray) and aux["mean"] == 2.0
    (value, aux), g = tenferro.value_and_grad(loss, has_aux=True)(x)
    np.testing.assert_allclose(value, 14.0)
    np.testing.assert_allclose(g, 2.0 * x)
    np.testing.assert_allclose(tenferro.grad(lambda v, s: (s * v).sum())(x, s=3.0), np.full(3, 3.0))
    with pytest.raises(tenferro.InvalidArgumentError, match="found a tuple of 2 values .*has_aux=True"):
        tenferro.grad(loss)(x)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"expected fun to return a pair \(output, aux\)"):
        tenferro.grad(lambda v: v.sum(), has_aux=True)(x)


def test_a_traced_value_kept_after_the_call_says_so():
    # An array conversion of a Traced value that escaped the call names the ended call, not "inside grad".
    kept = []
    b = np.random.default_rng(0).random((3, 3))

    def f(x):
        y = tenferro.einsum("ij,jk->ik", x, b)
        kept.append(y)
        return (y * y).sum()

    tenferro.grad(f)(np.ones((3, 3)))
    with pytest.raises(tenferro.UnsupportedError, match="kept after the tenferro.grad / vjp / jit call"):
        np.asarray(kept[0])
    with pytest.raises(tenferro.UnsupportedError, match="inside tenferro.grad / jit: the gradient would be lost"):
        tenferro.grad(lambda x: np.asarray(x).sum())(np.ones(3))
