"""tenferro.jvp and tenferro.hvp (forward mode and Hessian-vector products
over the recording, Note [Tape forward mode]) against torch.autograd.functional."""

import numpy as np
import pytest

import tenferro
import tenferro.linalg as tl

torch = pytest.importorskip("torch")
from torch.autograd.functional import hvp as torch_hvp  # noqa: E402
from torch.autograd.functional import jvp as torch_jvp  # noqa: E402


def _t(*arrays):
    return tuple(torch.tensor(a) for a in arrays)


def test_jvp_matches_torch(rng):
    x, y = rng.standard_normal((3, 3)), rng.standard_normal(3)
    u, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    cases = [
        (lambda a, b: np.tanh(a @ b) * b, lambda a, b: torch.tanh(a @ b) * b),
        (lambda a, b: tenferro.einsum("ij,j,jk->ik", a, b, a), lambda a, b: torch.einsum("ij,j,jk->ik", a, b, a)),
        (lambda a, b: tl.solve(a + 3 * np.eye(3), b), lambda a, b: torch.linalg.solve(a + 3 * torch.eye(3, dtype=a.dtype), b)),
        (lambda a, b: np.exp(a).sum(axis=0) - b ** 2, lambda a, b: torch.exp(a).sum(dim=0) - b ** 2),
    ]
    for fun, reference in cases:
        out, tangent = tenferro.jvp(fun, (x, y), (u, v))
        want_out, want = torch_jvp(reference, _t(x, y), _t(u, v))
        np.testing.assert_allclose(out, want_out.numpy(), rtol=1e-12)
        np.testing.assert_allclose(tangent, want.numpy(), rtol=1e-10, atol=1e-12)
    # A tangent of None is zero.
    _, only_b = tenferro.jvp(cases[0][0], (x, y), (None, v))
    _, want = torch_jvp(cases[0][1], _t(x, y), (torch.zeros(3, 3, dtype=torch.float64), torch.tensor(v)))
    np.testing.assert_allclose(only_b, want.numpy(), rtol=1e-12)


def test_jvp_of_complex_functions(rng):
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    dz = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    _, tangent = tenferro.jvp(lambda v: tenferro.fft.fft(v) * v, (z,), (dz,))
    _, want = torch_jvp(lambda v: torch.fft.fft(v) * v, _t(z), _t(dz))
    np.testing.assert_allclose(tangent, want.numpy(), rtol=1e-12)
    with pytest.raises(tenferro.DTypeError, match="real tangent"):
        tenferro.jvp(lambda v: v * 2.0, (z.real,), (dz,))


def test_hvp_matches_torch(rng):
    x, y = rng.standard_normal((3, 3)), rng.standard_normal(3)
    u, v = rng.standard_normal((3, 3)), rng.standard_normal(3)

    def f(a, b):
        return (np.tanh(a @ b) * b).sum() + tl.det(a) + tenferro.einsum("ij,ij->", a, a)

    def g(a, b):
        return (torch.tanh(a @ b) * b).sum() + torch.linalg.det(a) + torch.einsum("ij,ij->", a, a)

    hv = tenferro.hvp(f, (x, y), (u, v))
    _, want = torch_hvp(g, _t(x, y), _t(u, v))
    assert len(hv) == 2
    for h, w in zip(hv, want):
        np.testing.assert_allclose(h, w.numpy(), rtol=1e-9, atol=1e-12)


def test_forward_mode_errors(rng):
    x = rng.standard_normal(3)
    with pytest.raises(tenferro.InvalidArgumentError, match="one tangent per primal"):
        tenferro.jvp(lambda v: v * 2.0, (x,), ())
    with pytest.raises(tenferro.InvalidArgumentError, match="real scalar"):
        tenferro.hvp(lambda v: v * 2.0, (x,), (x,))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"jvp: expected a tangent for primal 0 of shape \(3,\), found \(4,\)"):
        tenferro.jvp(lambda v: v * 2.0, (x,), (np.ones(4),))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"hvp: expected a tangent for primal 0 of shape \(3,\), found \(2, 2\)"):
        tenferro.hvp(lambda v: np.sum(v**3), (x,), (np.ones((2, 2)),))


def test_tangents_of_another_dtype_are_errors_as_in_jax(rng):
    # The jit audit: a float32 or int64 tangent of a float64 primal was cast
    # without a word; jax raises. Python numbers are weak and cast.
    x = rng.standard_normal(4)
    for tangent in (np.ones(4, np.float32), np.arange(4)):
        with pytest.raises(tenferro.DTypeError, match=rf"jvp: tangent 0: expected a tangent of the primal's dtype float64, "
                                                      rf"found {np.dtype(tangent.dtype)}"):
            tenferro.jvp(lambda v: v * 2.0, (x,), (tangent,))
    with pytest.raises(tenferro.DTypeError, match="hvp: vector 0: expected a vector of the primal's dtype float64, found float32"):
        tenferro.hvp(lambda v: np.sum(v**3), (x,), (np.ones(4, np.float32),))
    _, t = tenferro.jvp(lambda v: v * 2.0, (np.float32(1.5),), (1.0,))
    assert t.dtype == np.float32 and t == 2.0
