"""tenferro.einsum_vjp against torch.autograd (and, without torch, against
the closed-form gradients of a matrix product)."""

import numpy as np
import pytest

import tenferro
from conftest import DTYPES, random_array, tolerance

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
