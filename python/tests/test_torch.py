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


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("subscripts", ["ab,bc,cd->ad", "ab,bc,cd->", "ab,bc,cd->da"])
def test_second_derivatives_match_torch(dtype, subscripts):
    # Note [Einsum gradients of any order]: create_graph=True gradients are
    # differentiable again (Hessian-vector products against torch.einsum's).
    torch.manual_seed(1)
    ins = [torch.randn(*s, dtype=dtype, requires_grad=True) for s in [(3, 4), (4, 5), (5, 2)]]

    def loss(fn):
        y = fn(subscripts, *ins)
        return (y * y.conj()).real.sum()

    ours = torch.autograd.grad(loss(tft.einsum), ins, create_graph=True)
    theirs = torch.autograd.grad(loss(torch.einsum), ins, create_graph=True)
    for g, want in zip(ours, theirs):
        assert g.grad_fn is not None
        torch.testing.assert_close(g, want)
    v = [torch.randn_like(x) for x in ins]
    hvp = torch.autograd.grad(sum((g * w.conj()).real.sum() for g, w in zip(ours, v)), ins)
    want = torch.autograd.grad(sum((g * w.conj()).real.sum() for g, w in zip(theirs, v)), ins)
    for h, w in zip(hvp, want):
        torch.testing.assert_close(h, w)


def test_gradgradcheck_third_order_and_mixed_dtypes():
    x = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda x, y: tft.einsum("ii,i->i", x, y), (x, y))
    z = torch.randn(3, 3, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda z, y: tft.einsum("ij,j->i", z, y), (z, y))
    # d^3/dw^3 of sum_i w_i^3 = 6 per element, through three backward passes.
    w = torch.randn(4, dtype=torch.float64, requires_grad=True)
    (g1,) = torch.autograd.grad(tft.einsum("i,i,i->", w, w, w), w, create_graph=True)
    (g2,) = torch.autograd.grad(g1.sum(), w, create_graph=True)
    (g3,) = torch.autograd.grad(g2.sum(), w)
    torch.testing.assert_close(g3, torch.full((4,), 6.0, dtype=torch.float64))


def test_mixed_dtypes_promote_as_torch_does():
    a = torch.ones(2, 3, dtype=torch.int64)
    b = torch.randn(3, 2, dtype=torch.float32, requires_grad=True)
    y = tft.einsum("ij,jk->ik", a, b)
    assert y.dtype == torch.promote_types(a.dtype, b.dtype) == torch.float32
    y.sum().backward()
    assert b.grad.dtype == torch.float32
    torch.testing.assert_close(b.grad, a.to(torch.float32).T @ torch.ones(2, 2))


def test_functorch_transforms_are_refused_clearly():
    vmap = getattr(torch, "vmap", None)
    if vmap is None:
        functorch = pytest.importorskip("functorch")
        vmap = functorch.vmap
    with pytest.raises(tenferro.UnsupportedError, match="functorch transforms"):
        vmap(lambda t: tft.einsum("i,i->", t, t))(torch.randn(3, 4))
    functorch = pytest.importorskip("functorch")
    a = torch.randn(3, 4)
    f = lambda a: tft.einsum("ij,jk->", a, torch.ones(4, 5))  # noqa: E731
    for transform in (lambda: functorch.grad(f)(a), lambda: functorch.jvp(f, (a,), (a,)),
                      lambda: functorch.jacrev(lambda a: tft.einsum("ij->j", a))(a)):
        with pytest.raises(tenferro.UnsupportedError, match="functorch transforms"):
            transform()


def test_relabeled_results_alias_as_torch_views():
    # Note [Relabeled results in torch]: a relabeling's numpy view is a torch view of the operand without autograd
    # (one version counter, so torch's in-place checks see edits through it) and a copy under autograd.
    c = torch.arange(9.0, dtype=torch.float64).reshape(3, 3)
    t = tft.einsum("ij->ji", c)
    assert t._base is not None and torch.equal(t, c.T)
    d = tft.einsum("ii->i", c)
    before = c._version
    d.add_(100.0)
    assert c._version > before and torch.equal(torch.diagonal(c), torch.tensor([100.0, 104.0, 108.0], dtype=c.dtype))
    # under autograd: an edit of the result does not reach the operand, so the gradient is the forward's
    x = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    y = x * 1.0
    w = tft.einsum("ij,jk->ik", y, y)
    v = tft.einsum("ij->ji", y)
    v.add_(100.0)
    w.sum().backward()
    ones = torch.ones(3, 3, dtype=torch.float64)
    torch.testing.assert_close(x.grad, ones @ x.detach().T + x.detach().T @ ones)
    leaf = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    kept = leaf.detach().clone()
    tft.einsum("ii->i", leaf).detach().mul_(0)
    assert torch.equal(leaf.detach(), kept)


def test_dtypes_numpy_lacks_are_dtype_errors_everywhere():
    # bfloat16 through DLPack: numpy's "Unsupported dtype" is a DTypeError (a TypeError, as numpy.einsum raises)
    b = torch.ones(3, dtype=torch.bfloat16)
    for call in (lambda: tenferro.einsum("i,i->", b, b), lambda: tenferro.linalg.norm(b),
                 lambda: tenferro.fft.fft(b), lambda: tft.einsum("i,i->", b, b)):
        with pytest.raises(tenferro.DTypeError):
            call()


@pytest.mark.parametrize("subscripts", ["ij->", "ij->i", "ii", "ij,k->ik", "ij,jk->", "ii->i", "ij->ji", "ij,jk->ik",
                                        "i,i->"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.bool])
def test_integer_and_bool_dtypes_as_torch_einsum(subscripts, dtype):
    # torch.einsum sums an axis only one operand has with torch.sum: int64 for integers and bools (an int8 sum of
    # 1200 ones is 1200, not -80); other integer contractions keep the dtype.
    if dtype == torch.bool and subscripts in ("ij,jk->ik", "i,i->"):
        pytest.skip("torch's bmm has no bool kernel")
    ops = [torch.ones(20, 20, dtype=dtype) if len(t) == 2 else torch.ones(20, dtype=dtype)
           for t in subscripts.split("->")[0].split(",")]
    want = torch.einsum(subscripts, *ops)
    got = tft.einsum(subscripts, *ops)
    assert got.dtype == want.dtype, (subscripts, dtype)
    assert torch.equal(got, want)


def test_integer_sums_with_a_float_operand_stay_float():
    # the promoted dtype decides: an int8 operand with a float32 one is a float32 einsum
    a = torch.ones(3, 4, dtype=torch.int8)
    b = torch.full((5,), 0.5, dtype=torch.float32)
    want = torch.einsum("ij,k->k", a, b)
    got = tft.einsum("ij,k->k", a, b)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want)


def test_forward_mode_tangents_are_differentiable_torch_results():
    # Note [Tangents by substitution]
    import torch.autograd.forward_ad as fwad
    torch.manual_seed(0)
    p, t0, b0 = (torch.randn(*s, dtype=torch.float64) for s in [(3, 4), (3, 4), (4, 2)])
    results = []
    for fn in (torch.einsum, tft.einsum):
        # reverse over forward: a loss of the tangent differentiates into the tangent and the operands
        t, b = t0.clone().requires_grad_(), b0.clone().requires_grad_()
        with fwad.dual_level():
            y = fn("ij,jk->ik", fwad.make_dual(p, t), b)
            primal, tangent = fwad.unpack_dual(y)
            loss = tangent.pow(2).sum() + primal.sum()
        grads = torch.autograd.grad(loss, (t, b))
        # forward over reverse: the tangent of a create_graph gradient (a Hessian-vector product)
        q = p.clone().requires_grad_()
        with fwad.dual_level():
            out = fn("ij,jk->ik", fwad.make_dual(q, t0), b0).pow(2).sum()
            (g,) = torch.autograd.grad(out, q, create_graph=True)
            hvp = fwad.unpack_dual(g).tangent
        results.append((*grads, hvp))
    for ours, theirs in zip(results[1], results[0]):
        assert ours is not None
        torch.testing.assert_close(ours, theirs)
    # a relabeling's tangent is a copy, as its value is: an edit of the output's tangent leaves the input's
    with fwad.dual_level():
        x = fwad.make_dual(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64))
        y = tft.einsum("ij->ji", x)
        fwad.unpack_dual(y).tangent.mul_(5)
        assert torch.equal(fwad.unpack_dual(x).tangent, torch.ones(2, 2, dtype=torch.float64))


def test_forward_ad_checks():
    ins = tensors([(3, 4), (4, 5), (5, 2)], torch.float64, seed=5)
    assert torch.autograd.gradcheck(lambda a, b, c: tft.einsum("ab,bc,cd->ad", a, b, c), ins, check_forward_ad=True)
    zin = tensors([(3, 4), (4, 2)], torch.complex128, seed=6)
    assert torch.autograd.gradcheck(lambda a, b: tft.einsum("ab,bc->ac", a, b), zin, check_forward_ad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: tft.einsum("ab,bc->ac", a, b), zin, check_fwd_over_rev=True,
                                        check_rev_over_rev=True)


def test_in_place_edits_of_operands_the_backward_does_not_read():
    # Only b's values enter a's gradient: editing a in place after the call is no error (torch.einsum saves no
    # more), while editing b still is.
    w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64)
    a = w * 1
    y = tft.einsum("ij,jk->ik", a, b)
    a.relu_()
    y.sum().backward()
    torch.testing.assert_close(w.grad, torch.ones(3, 5, dtype=torch.float64) @ b.T)
    c = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    d = c * 1
    y = tft.einsum("ij,jk->ik", a.detach().requires_grad_(), d)
    d.relu_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("subscripts,shapes", [("i...->i", [(2, 3, 4)]), ("...i,...i->i", [(5, 2, 3), (2, 3)]),
                                               ("b...,b...->", [(2, 3), (2, 1)]), ("ij...,jk->ik", [(2, 3, 4), (3, 5)])])
def test_an_ellipsis_the_output_omits_is_summed_as_torch_einsum(subscripts, shapes):
    torch.manual_seed(2)
    ins = [torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    want = torch.einsum(subscripts, *ins)
    got = tft.einsum(subscripts, *ins)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(torch.autograd.grad(got.sum(), ins), torch.autograd.grad(want.sum(), ins))


def test_under_no_grad_a_relabeling_is_a_view_as_torch_einsum():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        y = tft.einsum("ij->ji", x)
    assert y._base is not None and not y.requires_grad and torch.equal(y, x.detach().T)
