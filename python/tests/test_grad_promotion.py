"""Gradients where operands mix dtypes, where a loss has a zero derivative,
and torch's forward mode: values and gradients against torch.autograd."""

import numpy as np
import pytest

import tenferro
import tenferro.linalg as tl

torch = pytest.importorskip("torch")
import tenferro.torch  # noqa: E402


def _torch_grad(fun, x):
    t = torch.tensor(x, requires_grad=True)
    fun(t).backward()
    return t.grad.numpy()


def test_a_complex_constant_promotes_a_real_variable(rng):
    # numpy promotes einsum(real, complex) to complex; the constant used to
    # be cast to the variable's dtype, dropping its imaginary part.
    w = rng.standard_normal((3, 4))
    c = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    ct = torch.tensor(c)
    cases = [
        (lambda x: np.abs(tenferro.einsum("ij,jk->ik", x, c)).sum(), lambda t: torch.einsum("ij,jk->ik", t.to(ct.dtype), ct).abs().sum()),
        (lambda x: np.abs(np.einsum("ij,jk->ik", x, c)).sum(), lambda t: torch.einsum("ij,jk->ik", t.to(ct.dtype), ct).abs().sum()),
        (lambda x: tenferro.einsum("ij,jk->ik", x, c).imag.sum(), lambda t: (t.to(ct.dtype) @ ct).imag.sum()),
        (lambda x: np.abs(tl.matmul(x, c)).sum(), lambda t: (t.to(ct.dtype) @ ct).abs().sum()),
    ]
    for fun, reference in cases:
        value, g = tenferro.value_and_grad(fun)(w)
        np.testing.assert_allclose(value, reference(torch.tensor(w)).item(), rtol=1e-12)
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, _torch_grad(reference, w), rtol=1e-10, atol=1e-12)
    # Inside vjp the forward value has numpy's dtype.
    out, _ = tenferro.vjp(lambda x: tenferro.einsum("ij,jk->ik", x, c), w)
    assert out.dtype == np.complex128
    np.testing.assert_allclose(out, w @ c)
    # A square solve with a complex right-hand side.
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    g = tenferro.grad(lambda x: np.abs(tl.solve(x, b)).sum())(a)
    np.testing.assert_allclose(
        g, _torch_grad(lambda t: torch.linalg.solve(t.to(torch.complex128), torch.tensor(b)).abs().sum(), a), rtol=1e-9)


def test_traced_values_of_two_dtypes_promote(rng):
    x32 = rng.standard_normal((2, 3)).astype(np.float32)
    z = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))

    def f(a, b):
        return np.abs(tenferro.einsum("ij,jk->ik", a, b)).sum()

    ga, gb = tenferro.grad(f, argnums=(0, 1))(x32, z)
    assert ga.dtype == np.float32 and gb.dtype == np.complex128
    ta = torch.tensor(x32, requires_grad=True)
    tb = torch.tensor(z, requires_grad=True)
    torch.einsum("ij,jk->ik", ta.to(torch.complex128), tb).abs().sum().backward()
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-10)
    # float32 variable, float64 constant: float64 as numpy gives it.
    out, _ = tenferro.vjp(lambda a: tenferro.einsum("ij,jk->ik", a, z.real), x32)
    assert out.dtype == np.float64


def test_einsum_vjp_gives_each_gradient_its_operands_dtype(rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    ct = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
    ga, gb = tenferro.einsum_vjp("ij,jk->ik", a, b, ct)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    want = torch.autograd.grad(torch.einsum("ij,jk->ik", ta.to(torch.complex128), tb), (ta, tb), torch.tensor(ct))
    assert ga.dtype == np.float64 and gb.dtype == np.complex128
    np.testing.assert_allclose(ga, want[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb, want[1].numpy(), rtol=1e-12)
    # float32 next to float64; an integer operand gets the computed dtype.
    g32, g64 = tenferro.einsum_vjp("ij,jk->ik", a.astype(np.float32), b.real, ct.real)
    assert g32.dtype == np.float32 and g64.dtype == np.float64
    gi, gf = tenferro.einsum_vjp("ij,jk->ik", np.ones((2, 3), np.int64), b.real, ct.real)
    assert gi.dtype == np.float64 and gf.dtype == np.float64
    np.testing.assert_allclose(gf, np.ones((3, 2)) * ct.real.sum(axis=0), rtol=1e-12)
    with pytest.raises(tenferro.DTypeError, match="integer or bool einsum has no gradient"):
        tenferro.einsum_vjp("ij,jk->ik", np.ones((2, 3), np.int64), np.ones((3, 2), np.int64), np.ones((2, 2)))
    # The sublist form; a forgotten cotangent says so.
    gs = tenferro.einsum_vjp(a, [0, 1], b.real, [1, 2], [0, 2], ct.real)
    np.testing.assert_allclose(gs[0], ct.real @ b.real.T, rtol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match="before the cotangent"):
        tenferro.einsum_vjp("ij,jk->ik", a, b)


def test_parenthesised_subscripts_differentiate_by_default(rng):
    x = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 2))]
    ct = rng.standard_normal((2, 2))
    grads = tenferro.einsum_vjp("(ij,jk),kl->il", *x, ct)
    plain = tenferro.einsum_vjp("ij,jk,kl->il", *x, ct)
    for g, p in zip(grads, plain):
        np.testing.assert_allclose(g, p, rtol=1e-12)
    ts = [torch.tensor(v, requires_grad=True) for v in x]
    tenferro.torch.einsum("(ij,jk),kl->il", *ts).sum().backward()
    np.testing.assert_allclose(ts[0].grad.numpy(), tenferro.einsum_vjp("ij,jk,kl->il", *x, np.ones((2, 2)))[0])


def test_torch_backward_through_integer_and_float16_operands(rng):
    w = torch.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    tenferro.torch.einsum("ij,jk->ik", torch.ones(2, 2, dtype=torch.int64), w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((2, 2), 2.0))
    h = torch.tensor(rng.standard_normal((2, 2)), dtype=torch.float16, requires_grad=True)
    y = tenferro.torch.einsum("ij,jk->ik", h, torch.ones(2, 2, dtype=torch.float16))
    assert y.dtype == torch.float16
    y.sum().backward()
    assert h.grad.dtype == torch.float16
    np.testing.assert_allclose(h.grad.numpy().astype(np.float64), np.full((2, 2), 2.0))


def test_torch_forward_mode_carries_tangents(rng):
    import torch.autograd.forward_ad as fwad

    a = torch.tensor(rng.standard_normal((3, 2)))
    b = torch.tensor(rng.standard_normal((2, 4)))
    ta = torch.tensor(rng.standard_normal((3, 2)))
    tb = torch.tensor(rng.standard_normal((2, 4)))
    for requires_grad in (False, True):
        with fwad.dual_level():
            x = fwad.make_dual(a.clone().requires_grad_(requires_grad), ta)
            y = fwad.make_dual(b, tb)
            got = fwad.unpack_dual(tenferro.torch.einsum("ij,jk->ik", x, y)).tangent
            want = fwad.unpack_dual(torch.einsum("ij,jk->ik", x, y)).tangent
        assert got is not None
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    # Only one operand dual.
    with fwad.dual_level():
        got = fwad.unpack_dual(tenferro.torch.einsum("ij,jk->ik", fwad.make_dual(a, ta), b)).tangent
    np.testing.assert_allclose(got.numpy(), (ta @ b).numpy(), rtol=1e-12)


def test_losses_of_zero_derivative_and_constant_functions_give_zeros(rng):
    x = rng.standard_normal(4)
    for fun in (lambda v: np.sign(v).sum(), lambda v: np.floor(v).sum(), lambda v: np.round(v).sum()):
        np.testing.assert_array_equal(tenferro.grad(fun)(x), np.zeros(4))
    value, g = tenferro.value_and_grad(lambda v: 3.0)(x)
    assert value == 3.0
    np.testing.assert_array_equal(g, np.zeros(4))
    with pytest.raises(tenferro.InvalidArgumentError, match="argnums 2 is out of range"):
        tenferro.grad(lambda v: v.sum(), argnums=2)(x)
    with pytest.raises(tenferro.InvalidArgumentError, match="found an array of shape"):
        tenferro.grad(lambda v: v * 2)(x)


def test_remainder_and_fmod_are_recorded(rng):
    x = rng.standard_normal(5) * 4
    for fun, reference in [
        (lambda v: (v % 1.5 * v).sum(), lambda t: (torch.remainder(t, 1.5) * t).sum()),
        (lambda v: (np.remainder(v, 1.5) * v).sum(), lambda t: (torch.remainder(t, 1.5) * t).sum()),
        (lambda v: (np.fmod(v, 1.5) * v).sum(), lambda t: (torch.fmod(t, 1.5) * t).sum()),
        (lambda v: (7.0 % v).sum(), lambda t: (7.0 - torch.floor(7.0 / t) * t).sum()),
    ]:
        value, g = tenferro.value_and_grad(fun)(x)
        t = torch.tensor(x, requires_grad=True)
        r = reference(t)
        r.backward()
        np.testing.assert_allclose(value, r.item(), rtol=1e-12)
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12)


def test_vjp_refuses_a_complex_cotangent_for_a_real_output(rng):
    _, vjp_fn = tenferro.vjp(lambda v: v * 2.0, rng.standard_normal(3))
    with pytest.raises(tenferro.DTypeError, match="expected a real cotangent"):
        vjp_fn(np.ones(3, complex))
    np.testing.assert_allclose(vjp_fn(np.ones(3))[0], np.full(3, 2.0))


def test_repeated_einsum_vjp_runs_its_remembered_backward_program(rng):
    # Note [Einsum gradients in Python]: a miss always remembers a program,
    # so a count that stays at one over repeated calls shows they hit; each
    # new signature (shapes, a transposed layout, a dtype, subscripts) gets
    # its own program and its own, correct gradients.
    rt = tenferro.Runtime(threads=1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    ct = rng.standard_normal((3, 5))

    def check(x, y, g, subscripts="ij,jk->ik"):
        got = tenferro.einsum_vjp(subscripts, x, y, g, runtime=rt)
        tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        want = torch.autograd.grad(torch.einsum(subscripts, tx, ty), (tx, ty), torch.tensor(g))
        for k in range(2):
            np.testing.assert_allclose(got[k], want[k].numpy(), rtol=1e-6)
            assert got[k].dtype == (x, y)[k].dtype

    for _ in range(5):
        check(a, b, ct)
    assert rt.cached_einsum_gradients == 1
    check(a[:2], b, ct[:2])  # other shapes
    check(np.asfortranarray(a), b, ct)  # another layout class
    check(a.astype(np.float32), b.astype(np.float32), ct.astype(np.float32))
    check(a, b[:, :3].T.copy(), ct[:, :3], "ij,kj->ik")
    assert rt.cached_einsum_gradients == 5
    for _ in range(3):
        check(a, b, ct)  # still remembered
    assert rt.cached_einsum_gradients == 5
    for n in range(1, 6):
        check(a[:, :n], b[:n], ct)
    assert rt.cached_einsum_gradients == 8  # the bound
    rt.clear_caches()
    assert rt.cached_einsum_gradients == 0
