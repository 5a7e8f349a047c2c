"""tenferro.torch.einsum: torch tensors in and out, gradients by torch.autograd."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tenferro  # noqa: E402
import tenferro.torch as tft  # noqa: E402

NETWORKS = [
    ("ab,bc->ac", [(4, 5), (5, 3)]),
    ("ab,bc,cd->ad", [(3, 4), (4, 5), (5, 2)]),
    ("ii->i", [(4, 4)]),
    ("ij,j->", [(3, 4), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ab,ab->ab", [(3, 4), (3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("abc->cab", [(2, 3, 4)]),
]


def tensors(shapes, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in shapes:
        t = torch.randn(*s, dtype=dtype, generator=g) if s else torch.randn((), dtype=dtype, generator=g)
        out.append(t.requires_grad_())
    return out


@pytest.mark.parametrize("subscripts,shapes", NETWORKS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_values_and_gradients_match_torch(subscripts, shapes, dtype):
    ours_in = tensors(shapes, dtype)
    ref_in = [t.detach().clone().requires_grad_() for t in ours_in]
    ours = tft.einsum(subscripts, *ours_in)
    ref = torch.einsum(subscripts, *ref_in)
    assert isinstance(ours, torch.Tensor) and ours.dtype == dtype and ours.shape == ref.shape
    assert ours.grad_fn is not None
    torch.testing.assert_close(ours, ref)
    cot = torch.randn(ref.shape, dtype=dtype, generator=torch.Generator().manual_seed(1))
    (ours * cot.conj()).real.sum().backward()
    (ref * cot.conj()).real.sum().backward()
    for a, b in zip(ours_in, ref_in):
        torch.testing.assert_close(a.grad, b.grad)


def test_gradcheck():
    ins = tensors([(3, 4), (4, 5), (5, 2)], torch.float64, seed=3)
    assert torch.autograd.gradcheck(lambda a, b, c: tft.einsum("ab,bc,cd->ad", a, b, c), ins)
    zin = tensors([(3, 4), (4, 2)], torch.complex128, seed=4)
    assert torch.autograd.gradcheck(lambda a, b: tft.einsum("ab,bc->ac", a, b), zin)


def test_only_the_operands_that_require_grad_get_one():
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64)
    tft.einsum("ab,bc->ac", a, b).sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(3, 5, dtype=torch.float64) @ b.T)
    assert b.grad is None


def test_in_a_model():
    # Twenty SGD steps through tenferro follow torch.einsum's trajectory.
    def train(contract):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(8, 8, dtype=torch.float64))
        x = torch.randn(16, 8, dtype=torch.float64)
        target = torch.randn(16, 8, dtype=torch.float64)
        opt = torch.optim.SGD([w], lr=0.1)
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = ((contract("ni,ij->nj", x, w) - target) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ours, ref = train(tft.einsum), train(torch.einsum)
    assert ours[-1] < 0.7 * ours[0], ours
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_no_copies(monkeypatch):
    # Watch what crosses into and out of tenferro.einsum.
    seen = {}

    def watched(subscripts, *arrays, **options):
        seen["in"] = [a.ctypes.data for a in arrays]
        seen["out"] = tenferro.einsum(subscripts, *arrays, **options)
        return seen["out"]

    monkeypatch.setattr(tft, "_einsum", watched)
    a = torch.randn(64, 32, dtype=torch.float64)
    b = torch.randn(16, 32, dtype=torch.float64).T  # a transposed view, read through its strides
    y = tft.einsum("ab,bc->ac", a, b)
    assert seen["in"] == [a.data_ptr(), b.data_ptr()]
    # The result is tenferro's array, wrapped rather than copied.
    assert y.data_ptr() == seen["out"].ctypes.data
    torch.testing.assert_close(y, a @ b)
    # Without requires_grad there is no graph.
    assert y.grad_fn is None and not y.requires_grad
    # With it, the forward reads the same memory.
    w = a.clone().requires_grad_()
    tft.einsum("ab,bc->ac", w, b)
    assert seen["in"][0] == w.data_ptr()


def test_lazy_conjugate_and_views():
    z = torch.randn(3, 4, dtype=torch.complex128)
    zc = z.conj()  # a conjugate bit, resolved before reading
    torch.testing.assert_close(tft.einsum("ab->ba", zc), zc.T.resolve_conj())
    x = torch.randn(6, 8, dtype=torch.float64)[::2, 1::3]
    torch.testing.assert_close(tft.einsum("ab,ab->", x, x), (x * x).sum())


def test_mixed_dtypes_promote_and_gradients_keep_each_dtype():
    a = torch.randn(3, 4, dtype=torch.float32, requires_grad=True)
    b = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    y = tft.einsum("ab,bc->ac", a, b)
    assert y.dtype == torch.float64
    y.sum().backward()
    assert a.grad.dtype == torch.float32 and b.grad.dtype == torch.float64
    torch.testing.assert_close(a.grad, (torch.ones(3, 2, dtype=torch.float64) @ b.detach().T).float())


def test_errors():
    a = torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(tenferro.InvalidArgumentError, match="expected a torch.Tensor, found ndarray"):
        tft.einsum("ab,bc->ac", a, np.ones((4, 2)))
    with pytest.raises(tenferro.DTypeError, match="bfloat16"):
        tft.einsum("ab->ba", a.to(torch.bfloat16))
    with pytest.raises(tenferro.UnsupportedError, match="expected a CPU tensor, found one on meta"):
        tft.einsum("ab->ba", torch.empty(3, 4, device="meta"))
    with pytest.raises(tenferro.UnsupportedError, match="strided"):
        tft.einsum("ab->ba", a.to_sparse())
    with pytest.raises(tenferro.InvalidArgumentError, match="sublist 0: expected integer labels"):
        tft.einsum(3, a)
    # tenferro's own errors pass through (a shape that does not fit).
    with pytest.raises(tenferro.InvalidArgumentError):
        tft.einsum("ab,bc->ac", a, torch.randn(5, 2, dtype=torch.float64, requires_grad=True))


def test_import_tenferro_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys, tenferro; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_second_derivatives_are_refused_not_dropped():
    w = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    y = tft.einsum("ij,jk->", w, w)
    with pytest.raises(tenferro.UnsupportedError, match="create_graph=True"):
        torch.autograd.grad(y, w, create_graph=True)
    # First order after that still works, and matches torch.
    (g,) = torch.autograd.grad(tft.einsum("ij,jk->", w, w), w)
    (want,) = torch.autograd.grad(torch.einsum("ij,jk->", w, w), w)
    torch.testing.assert_close(g, want)
