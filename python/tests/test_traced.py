"""Traced values as arrays inside tenferro.grad / vjp (Note [Traced array
protocol] in python/tenferro/_traced.py): every operation against
torch.autograd, numpy's promotion and broadcasting, and typed errors for
what is not recorded."""

import numpy as np
import pytest
from conftest import random_array

import tenferro

# (id, f(x, y) with numpy semantics on Traced values, the same with torch,
# real_only). x has shape (3, 4), y (4, 5).
CASES = [
    ("add_scalar", lambda x, y: x + 2.5, lambda x, y: x + 2.5, False),
    ("radd_array_broadcast", lambda x, y: np.arange(4.0) + x, lambda x, y: _t(np.arange(4.0), x) + x, False),
    ("sub_traced_broadcast", lambda x, y: x - x[:1], lambda x, y: x - x[:1], False),
    ("rsub", lambda x, y: 1.0 - x, lambda x, y: 1.0 - x, False),
    ("mul_column", lambda x, y: x * x[:, 1:2], lambda x, y: x * x[:, 1:2], False),
    ("div", lambda x, y: x / (x * x + 2.0), lambda x, y: x / (x * x + 2.0), False),
    ("rdiv", lambda x, y: 1.0 / (x + 3.0), lambda x, y: 1.0 / (x + 3.0), False),
    ("pow_int", lambda x, y: x**3, lambda x, y: x**3, False),
    ("pow_special_scalars", lambda x, y: x**2 + (x * x + 1.0) ** 0.5 + (x + 3.0) ** -1 + x**1 + np.power(x, 2.0),
     lambda x, y: x**2 + (x * x + 1.0) ** 0.5 + (x + 3.0) ** -1 + x**1 + x**2.0, False),
    ("pow_traced", lambda x, y: (x * x + 1.0) ** (x * 0.5), lambda x, y: (x * x + 1.0) ** (x * 0.5), False),
    ("rpow", lambda x, y: 2.0**x, lambda x, y: 2.0**x, True),
    ("neg_pos_abs", lambda x, y: -abs(+x), lambda x, y: -abs(+x), False),
    ("exp_log", lambda x, y: np.log(np.exp(x) + 1.0), lambda x, y: torch_().log(torch_().exp(x) + 1.0), False),
    ("log1p_expm1", lambda x, y: np.log1p(np.expm1(x * 0.5)), lambda x, y: torch_().log1p(torch_().expm1(x * 0.5)), True),
    ("log2_log10", lambda x, y: np.log2(x * x + 1.0) + np.log10(x * x + 2.0),
     lambda x, y: torch_().log2(x * x + 1.0) + torch_().log10(x * x + 2.0), False),
    ("sqrt", lambda x, y: np.sqrt(x * x + 1.0), lambda x, y: torch_().sqrt(x * x + 1.0), False),
    ("trig", lambda x, y: np.sin(x) * np.cos(x) + np.tan(x * 0.3) + np.tanh(x),
     lambda x, y: torch_().sin(x) * torch_().cos(x) + torch_().tan(x * 0.3) + torch_().tanh(x), False),
    ("square_reciprocal", lambda x, y: np.square(x) + np.reciprocal(x + 3.0),
     lambda x, y: torch_().square(x) + torch_().reciprocal(x + 3.0), False),
    ("conj_real_imag", lambda x, y: np.conj(x) * 2.0 + x.real + x.imag, lambda x, y: x.conj() * 2.0 + _re(x) + _im(x), False),
    ("max_min", lambda x, y: np.maximum(x, 0.1) + np.minimum(x, x[::-1] * 0.5),
     lambda x, y: torch_().maximum(x, _t(0.1, x)) + torch_().minimum(x, torch_().flip(x, (0,)) * 0.5), True),
    ("arctan2", lambda x, y: np.arctan2(x, x[:, :1] + 2.0), lambda x, y: torch_().atan2(x, x[:, :1] + 2.0), True),
    ("where", lambda x, y: np.where(x > 0, x * x, -x), lambda x, y: torch_().where(x > 0, x * x, -x), True),
    ("T_transpose", lambda x, y: x.T + np.transpose(x, (1, 0)) * 2.0, lambda x, y: x.T + x.permute(1, 0) * 2.0, False),
    ("mT_swapaxes", lambda x, y: x[None].mT + np.swapaxes(x[None], 1, 2), lambda x, y: x[None].mT + x[None].transpose(1, 2), False),
    ("moveaxis", lambda x, y: np.moveaxis(x.reshape(3, 2, 2), 0, -1), lambda x, y: x.reshape(3, 2, 2).movedim(0, -1), False),
    ("numpy_keywords", lambda x, y: np.transpose(x, axes=(1, 0)) + np.reshape(x, newshape=(4, 3)) + np.sum(x.T, axis=1, keepdims=True),
     lambda x, y: x.T + x.reshape(4, 3) + x.T.sum(1, keepdim=True), False),
    ("reshape", lambda x, y: x.reshape(-1) + np.reshape(x, (4, 3)).reshape(12), lambda x, y: x.reshape(-1) + x.reshape(4, 3).reshape(12), False),
    ("squeeze_expand", lambda x, y: np.squeeze(np.expand_dims(x, (0, 2)), 0), lambda x, y: x[None, :, None].squeeze(0), False),
    ("broadcast_to", lambda x, y: np.broadcast_to(x[0], (2, 4)) * 1.0, lambda x, y: x[0].expand(2, 4) * 1.0, False),
    ("sum_axes", lambda x, y: x.sum(axis=0) + np.sum(x, axis=1, keepdims=True).sum(axis=(0, 1)),
     lambda x, y: x.sum(0) + x.sum(1, keepdim=True).sum((0, 1)), False),
    ("mean", lambda x, y: x.mean(axis=-1) + np.mean(x), lambda x, y: x.mean(-1) + x.mean(), False),
    ("prod_cumsum", lambda x, y: x.prod(axis=0) + np.cumsum(x, axis=0)[-1] + np.cumsum(x)[:4],
     lambda x, y: x.prod(0) + x.cumsum(0)[-1] + x.reshape(-1).cumsum(0)[:4], False),
    ("max_min_reductions", lambda x, y: x.max(axis=1) + np.min(x, axis=1) + np.amax(x) + x.min(keepdims=True)[0, :1],
     lambda x, y: x.amax(1) + x.amin(1) + x.max() + x.min().reshape(1), True),
    ("concatenate_stack",
     lambda x, y: (np.concatenate([x, x[:1] * 2, np.ones((1, 4))]) @ y)[:3, :4] + np.stack([x, -x * 3], axis=1).sum(axis=1),
     lambda x, y: (torch_().cat([x, x[:1] * 2, _t(np.ones((1, 4)), x)]) @ y)[:3, :4] + torch_().stack([x, -x * 3], 1).sum(1),
     False),
    ("clip_flip_sign", lambda x, y: np.clip(x, -0.3, 0.5) + np.flip(x, 1) * np.sign(x) + np.floor(x) + x.clip(max=0.2),
     lambda x, y: x.clamp(-0.3, 0.5) + torch_().flip(x, (1,)) * x.sign() + x.floor() + x.clamp(max=0.2), True),
    ("diagonal_outer_flatten", lambda x, y: np.diagonal(x @ x.T) + np.outer(x[0], y[:, 0]).sum(axis=1)[:3] + x.flatten()[:3],
     lambda x, y: torch_().diagonal(x @ x.T) + torch_().outer(x[0], y[:, 0]).sum(1)[:3] + x.flatten()[:3], False),
    ("index_int_slice", lambda x, y: x[1] + x[-1, ::1] + x[:, 1:3].sum(), lambda x, y: x[1] + x[-1] + x[:, 1:3].sum(), False),
    ("index_steps", lambda x, y: x[::2, 1::2] + x[::-2, ::-2], lambda x, y: x[::2, 1::2] + torch_().flip(x, (0, 1))[::2, ::2], False),
    ("take_and_masks", lambda x, y: x[[2, 0, 2]].sum(axis=0) + x[np.array([True, False, True])][1] + np.take(x, [3, 3, -4, 1], axis=1)[0]
     + x[x.real > 0].sum() + x.take([5, 0])[:1],
     lambda x, y: x[[2, 0, 2]].sum(0) + x[torch_().tensor([True, False, True])][1] + x[:, [3, 3, 0, 1]][0]
     + x[_re(x) > 0].sum() + x.reshape(-1)[[5, 0]][:1], False),
    ("index_newaxis_ellipsis", lambda x, y: x[..., None, 2] * x[None, 1, -1:], lambda x, y: x[..., None, 2] * x[None, 1, -1:], False),
    ("matmul", lambda x, y: x @ y, lambda x, y: x @ y, False),
    ("matmul_vectors", lambda x, y: (x[0] @ y) + (x @ y[:, 0]).sum() + x[0] @ x[1],
     # (torch's complex 1-D @ 1-D returns 0 with Debian's OpenBLAS: zdotu's ABI)
     lambda x, y: (x[0] @ y) + (x @ y[:, 0]).sum() + (x[0] * x[1]).sum(), False),
    ("rmatmul_array", lambda x, y: np.ones((2, 3)) @ x, lambda x, y: _t(np.ones((2, 3)), x) @ x, False),
    ("batched_matmul", lambda x, y: x.reshape(2, 3, 2) @ x.reshape(2, 2, 3), lambda x, y: x.reshape(2, 3, 2) @ x.reshape(2, 2, 3), False),
    ("dot_trace_einsum", lambda x, y: np.dot(x, y).sum() + np.trace(x[:, :3]) + np.einsum("ij,jk->ik", x, y),
     lambda x, y: (x @ y).sum() + torch_().trace(x[:, :3]) + torch_().einsum("ij,jk->ik", x, y), False),
    ("var_std", lambda x, y: np.var(x, axis=0) + np.std(x, axis=1, ddof=1).sum() + x.var() + x.std(keepdims=True)[0],
     lambda x, y: x.var(0, correction=0) + x.std(1, correction=1).sum() + x.var(unbiased=False)
     + x.std(unbiased=False).reshape(1), False),
    ("cumprod_sort", lambda x, y: np.cumprod(x, axis=1) + np.sort(x, axis=0) + np.sort(x, axis=None)[:4] + x.cumprod()[:4],
     lambda x, y: torch_().cumprod(x, 1) + torch_().sort(x, 0).values + torch_().sort(x.reshape(-1)).values[:4]
     + x.reshape(-1).cumprod(0)[:4], True),
    ("exp2_sinh_cosh_logaddexp", lambda x, y: np.exp2(x * 0.5) + np.sinh(x) + np.cosh(x * 0.5) + np.logaddexp(x, x[::-1] * 0.5),
     lambda x, y: torch_().exp2(x * 0.5) + torch_().sinh(x) + torch_().cosh(x * 0.5)
     + torch_().logaddexp(x, torch_().flip(x, (0,)) * 0.5), True),
    ("sinh_cosh_complex", lambda x, y: np.sinh(x) * np.cosh(x * 0.5), lambda x, y: torch_().sinh(x) * torch_().cosh(x * 0.5),
     False),
    ("tensordot_inner_vdot", lambda x, y: np.tensordot(x, y, axes=1) + np.inner(x, x)[:, :1] + np.vdot(x, x)
     + np.tensordot(x, x, axes=([0, 1], [0, 1])),
     lambda x, y: torch_().tensordot(x, y, 1) + torch_().inner(x, x)[:, :1] + (x.conj() * x).sum() + (x * x).sum(), False),
    ("diag_triu_tril_pad", lambda x, y: np.diag(np.diag(x[:, :3])) + np.triu(x[:, :3], 1) + np.tril(x[:, :3])
     + np.pad(x, ((0, 0), (1, 0)))[:, :3] + np.pad(x, 1, constant_values=2.0)[1:4, :3],
     lambda x, y: torch_().diag(torch_().diag(x[:, :3])) + torch_().triu(x[:, :3], 1) + torch_().tril(x[:, :3])
     + torch_().nn.functional.pad(x, (1, 0))[:, :3] + torch_().nn.functional.pad(x, (1, 1, 1, 1), value=2.0)[1:4, :3],
     False),
    ("copy_like_round", lambda x, y: x.copy() * np.ones_like(x) + np.zeros_like(x) + np.full_like(x, 2.0) + np.round(x)
     + np.rint(x * 2.0) + np.copy(x),
     lambda x, y: x.clone() + 2.0 + torch_().round(x) + torch_().round(x * 2.0) + x, True),
    ("astype_complex", lambda x, y: (x.astype(np.complex128) * (1.0 + 2.0j)).real,
     lambda x, y: _re(x.to(torch_().complex128) * (1.0 + 2.0j)), True),
    ("linalg_via_numpy", lambda x, y: np.linalg.norm(x, axis=0) + np.linalg.det(x[:, :3] + 3 * np.eye(3)),
     lambda x, y: torch_().linalg.norm(x, dim=0) + torch_().linalg.det(x[:, :3] + 3 * _t(np.eye(3), x)), True),
    ("fft_via_numpy", lambda x, y: np.abs(np.fft.rfft(x, axis=-1)), lambda x, y: torch_().fft.rfft(x, dim=-1).abs(), True),
    # Real input of the Hermitian transforms, made complex on the tape as eagerly.
    ("irfft_hfft_of_real", lambda x, y: np.fft.irfft(x, n=6) + np.fft.hfft(x)[:, :6],
     lambda x, y: torch_().fft.irfft(x, n=6) + torch_().fft.hfft(x)[:, :6], True),
    # Diagonals of non-square matrices, at offsets (x is 3 x 4, y 4 x 5).
    ("diagonal_offsets_nonsquare",
     lambda x, y: np.diagonal(x, 1) * 2.0 + np.trace(x, -1) + np.diag(y)[:3] + x.diagonal(-2).sum() + np.diag(y, 3).sum(),
     lambda x, y: torch_().diagonal(x, 1) * 2.0 + torch_().diagonal(x, -1).sum() + torch_().diag(y)[:3]
     + torch_().diagonal(x, -2).sum() + torch_().diag(y, 3).sum(), False),
    # numpy functions composed from the recorded ones (x is 3 x 4, y 4 x 5).
    ("stacks_and_splits",
     lambda x, y: np.hstack([x, 2.0 * x]).sum(0)[:4] + np.vstack([x, x[:1]]).sum(0) + np.dstack([x, x])[..., 1].sum(0)
     + np.split(x, 2, axis=1)[1].sum(1)[:1] + np.column_stack([x[0], x[1]]).sum(1) + np.atleast_2d(x[0])[0],
     lambda x, y: torch_().hstack([x, 2.0 * x]).sum(0)[:4] + torch_().vstack([x, x[:1]]).sum(0)
     + torch_().dstack([x, x])[..., 1].sum(0) + torch_().tensor_split(x, 2, dim=1)[1].sum(1)[:1]
     + torch_().column_stack([x[0], x[1]]).sum(1) + x[0], False),
    ("tile_repeat_kron_rot90",
     lambda x, y: np.tile(x, (2, 1)).sum(0) + np.repeat(x, 2, axis=0).sum(0) + np.repeat(x, [1, 0, 2], axis=0)[1]
     + np.kron(x[:2, :2], x[1:, 2:]).sum(0) + np.rot90(x).sum(1) + np.rot90(x, 2)[0] + np.rot90(x, -1).sum(1),
     lambda x, y: torch_().tile(x, (2, 1)).sum(0) + torch_().repeat_interleave(x, 2, dim=0).sum(0)
     + torch_().repeat_interleave(x, torch_().tensor([1, 0, 2]), dim=0)[1]
     + torch_().kron(x[:2, :2], x[1:, 2:]).sum(0) + torch_().rot90(x).sum(1) + torch_().rot90(x, 2)[0]
     + torch_().rot90(x, -1).sum(1), False),
    ("broadcast_take_along_average",
     lambda x, y: np.broadcast_arrays(x[:, :1], x[0])[0] * np.take_along_axis(x, np.argsort(x, axis=1), axis=1)
     + np.average(x, axis=1, weights=np.arange(1.0, 5.0))[:, None] + np.average(x),
     lambda x, y: torch_().broadcast_tensors(x[:, :1], x[0])[0] * torch_().sort(x, dim=1)[0]
     + ((x * _t(np.arange(1.0, 5.0), x)).sum(1) / 10.0)[:, None] + x.mean(), True),
    ("nansum_hypot_sinc_dot",
     lambda x, y: np.nansum(x * _NANS, axis=0) + np.hypot(x, x[::-1]).sum(0) + np.sinc(x).sum(0)
     + np.dot(np.reshape(x, (3, 2, 2)), y[:2, :4]).sum((0, 1)),
     lambda x, y: torch_().nansum(x * _t(_NANS, x), 0) + torch_().hypot(x, torch_().flip(x, [0])).sum(0)
     + torch_().sinc(x).sum(0) + torch_().tensordot(x.reshape(3, 2, 2), y[:2, :4], dims=([2], [0])).sum((0, 1)), True),
    ("sum_dtype_reshape_f",
     lambda x, y: x.sum(axis=1, dtype=np.float64) + np.reshape(x, (2, 6), order="F").sum(0)[:3],
     lambda x, y: x.sum(1, dtype=torch_().float64) + x.t().reshape(6, 2).t().sum(0)[:3], True),
    # cumprod through zeros (no, one and two zeros per row): exact, as torch.
    ("cumprod_with_zeros", lambda x, y: np.cumprod(x * _ZEROS, axis=1),
     lambda x, y: torch_().cumprod(x * _t(_ZEROS, x), 1), False),
]

_NANS = np.array([[1.0, np.nan, 1.0, 1.0], [1.0, 1.0, 1.0, np.nan], [np.nan, 1.0, 1.0, 1.0]])
_ZEROS = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]])

_TORCH = None


def torch_():
    return _TORCH


def _t(array, like):
    return torch_().from_numpy(np.asarray(array, dtype=np.float64)).to(like.dtype)


def _re(x):
    return x.real if x.is_complex() else x


def _im(x):
    return x.imag if x.is_complex() else x * 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_operation_gradients_match_torch(case, dtype, rng, torch):
    global _TORCH
    _TORCH = torch
    _, ours, theirs, real_only = case
    if real_only and dtype is np.complex128:
        pytest.skip("real only")
    x = random_array(rng, (3, 4), dtype)
    y = random_array(rng, (4, 5), dtype)
    shape = np.shape(theirs(torch.from_numpy(x), torch.from_numpy(y)).detach().numpy())
    w = random_array(rng, shape, np.float64)

    def loss(x, y):
        r = ours(x, y)
        assert isinstance(r, tenferro.Traced), f"{case[0]} left the tape: {type(r)}"
        return (r * w).sum().real

    value, (gx, gy) = tenferro.value_and_grad(loss, argnums=(0, 1))(x, y)
    tx, ty = (torch.from_numpy(v.copy()).requires_grad_(True) for v in (x, y))
    tl = _re((theirs(tx, ty) * torch.from_numpy(w)).sum())
    want_x, want_y = torch.autograd.grad(tl, (tx, ty), allow_unused=True)
    np.testing.assert_allclose(value, tl.item(), rtol=1e-10)
    np.testing.assert_allclose(gx, want_x.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gy, np.zeros_like(y) if want_y is None else want_y.numpy(), rtol=1e-8, atol=1e-10)


def test_promotion_follows_numpy(rng):
    seen = {}

    def loss(x):
        seen["scalar"] = (x * 2.0).dtype  # Python scalars are weak
        seen["array"] = (x * np.ones(4)).dtype  # a float64 array is not
        seen["complex"] = (x * 1j).dtype
        seen["int_array"] = (x + np.arange(4)).dtype
        return (x * 1j).imag.sum()

    x = random_array(rng, (3, 4), np.float32)
    g = tenferro.grad(loss)(x)
    assert seen == {
        "scalar": np.float32,
        "array": np.float64,
        "complex": np.complex64,
        "int_array": np.float64,
    }
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.ones_like(x))


def test_shape_helpers_and_plain_values(rng):
    x = random_array(rng, (3, 4), np.float64)

    def loss(t):
        assert t.size == 12 and len(t) == 3 and np.shape(t) == (3, 4) and np.ndim(t) == 2
        assert (t > 0).dtype == bool and isinstance(t > 0, np.ndarray)
        np.testing.assert_array_equal(t < 0, x < 0)
        np.testing.assert_array_equal(np.where(t, 1.0, 0.0), np.where(x, 1.0, 0.0))  # a plain array
        s = t.sum()
        assert float(s) == pytest.approx(x.sum()) and s.item() == pytest.approx(x.sum())
        return s

    tenferro.grad(loss)(x)


def test_unrecorded_operations_raise_typed_errors(rng):
    x = random_array(rng, (3, 4), np.float64)

    def fails(fun, error=tenferro.UnsupportedError, match=None):
        with pytest.raises(error, match=match):
            tenferro.grad(lambda t: fun(t).sum())(x)

    fails(np.arcsin, match="numpy.arcsin")  # a ufunc without a rule
    fails(np.unique, match="unique")  # a numpy function without one
    fails(lambda t: t.__setitem__(0, 1.0) or t, match="item assignment")
    fails(lambda t: np.pad(t, 1, mode="edge"), match="pad")
    fails(lambda t: np.sort(t.astype(np.complex128)), match="sort of complex")
    fails(lambda t: np.pad(t, -1), tenferro.InvalidArgumentError, match="negative")
    fails(lambda t: np.tensordot(t, t, axes=([0], [0, 1])), tenferro.InvalidArgumentError, match="tensordot")
    fails(lambda t: np.add.reduce(t), match="reduce")
    fails(lambda t: np.exp(t, out=np.empty((3, 4))), match="out")
    fails(lambda t: t[[0, 2], None, [1, 2]], match="None among several index arrays")
    fails(lambda t: t[[0, 2], np.array([True, False, True, True])], match="boolean mask among several")
    fails(lambda t: t[[0, 2], [1, 2, 3]], IndexError, match="could not be broadcast")
    fails(lambda t: t[[0, 3], [1, 2]], IndexError, match="out of bounds")
    fails(lambda t: t[None, np.ones((3, 4), dtype=bool)], match="boolean mask of more than one axis")
    fails(lambda t: t[[0, 3]], IndexError)
    fails(lambda t: t[np.array([True, False])], IndexError)
    fails(lambda t: t[:, [True, False, True]], IndexError)  # a mask list of the wrong length
    fails(lambda t: np.take(t, [1.5]), IndexError)
    fails(lambda t: t[3], IndexError)
    fails(lambda t: t[0, 0, 0], IndexError)
    fails(lambda t: t.reshape(5, 3), tenferro.InvalidArgumentError, match="reshape")
    fails(lambda t: t + np.ones((2, 4)), tenferro.InvalidArgumentError, match="broadcast")
    fails(lambda t: t.sum(axis=2), np.AxisError, match="out of bounds")
    fails(lambda t: np.transpose(t, (0, 0)), tenferro.InvalidArgumentError, match="repeated")
    # Nothing was left half recorded: the same tape-free call still works.
    np.testing.assert_allclose(tenferro.grad(lambda t: (t * t).sum())(x), 2 * x)


def test_values_of_two_tapes_do_not_mix(rng):
    x = random_array(rng, (2, 2), np.float64)
    kept = []
    tenferro.grad(lambda t: kept.append(t) or t.sum())(x)
    with pytest.raises(tenferro.Error):
        tenferro.grad(lambda t: (t + kept[0]).sum())(x)


# --- Note [Traced fast paths] (python/src/tape.cpp) ---

# Forms that python/src/tape.cpp records without the Python rules. x has
# shape (3, 4); m is a numpy array of x's dtype and shape.
FAST_FORMS = [
    ("operators", lambda x, m: ((x + x) - x * x) / (x + 3.0) - 2 * x + 1.5 / (x * x + 1.0) - (4 - x) + (-x) + 2.0),
    ("abs", lambda x, m: abs(x) * abs(x) + 1),
    ("arrays", lambda x, m: x * m + m - x / (m + 2.0) + (m - x)),
    ("ufuncs", lambda x, m: np.tanh(x) + np.exp(x * 0.1) + np.log(x * x + 1.0) + np.sqrt(x * x + 2.0) + np.sin(x)
     * np.cos(x) + np.square(x) + np.add(x, 1.0) + np.multiply(m, x) + np.negative(x) + np.expm1(x * 0.1)),
    ("power", lambda x, m: x**2 + (x * x + 1.0) ** 0.5 + x**1 + x**2.0),
    ("matmul", lambda x, m: x @ m.T + m @ x.T + x @ x.T),
    ("reductions", lambda x, m: x.sum() + x.mean() + (x * m).sum()),
]
REAL_FAST_FORMS = [("maximum_minimum", lambda x, m: np.maximum(x, m) + np.minimum(x, 0.25) + np.arctan2(x, m))]


def _general_rules(monkeypatch):
    """The Traced class with the Python rules of _traced.py in place of the
    fast paths."""
    t, tr = tenferro.Traced, tenferro._traced
    for name, op, swapped in [("__add__", "add", False), ("__radd__", "add", True), ("__sub__", "sub", False),
                              ("__rsub__", "sub", True), ("__mul__", "mul", False), ("__rmul__", "mul", True),
                              ("__truediv__", "div", False), ("__rtruediv__", "div", True)]:
        def rule(a, b, op=op, swapped=swapped):
            return tr._elementwise(op, b, a) if swapped else tr._elementwise(op, a, b)
        monkeypatch.setattr(t, name, rule)
    monkeypatch.setattr(t, "__pow__", tr._power)
    monkeypatch.setattr(t, "__matmul__", tr._matmul)
    monkeypatch.setattr(t, "__rmatmul__", lambda a, b: tr._matmul(b, a))
    monkeypatch.setattr(t, "__neg__", tr._unary("neg"))
    monkeypatch.setattr(t, "__abs__", tr._unary("abs"))
    monkeypatch.setattr(t, "sum", tr._sum)
    monkeypatch.setattr(t, "mean", tr._mean)
    monkeypatch.setattr(t, "__array_ufunc__", tr._array_ufunc)


def _fast_cases():
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        for name, form in FAST_FORMS + (REAL_FAST_FORMS if np.dtype(dtype).kind == "f" else []):
            yield pytest.param(form, dtype, id=f"{name}-{np.dtype(dtype).name}")


def _value_dtype_and_grad(form, x, m):
    seen = {}

    def loss(t):
        r = form(t, m)
        assert isinstance(r, tenferro.Traced)
        seen["dtype"] = r.dtype
        return (r * 1.0).sum().real

    value, g = tenferro.value_and_grad(loss)(x)
    return value, seen["dtype"], g


@pytest.mark.parametrize("form,dtype", _fast_cases())
def test_fast_paths_record_what_the_general_rules_record(form, dtype, rng, monkeypatch):
    x = random_array(rng, (3, 4), dtype)
    m = random_array(rng, (3, 4), dtype)
    fast = _value_dtype_and_grad(form, x, m)
    with monkeypatch.context() as patch:
        _general_rules(patch)
        general = _value_dtype_and_grad(form, x, m)
    tol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    assert fast[1] == general[1]
    np.testing.assert_allclose(fast[0], general[0], rtol=tol)
    assert fast[2].dtype == general[2].dtype == dtype
    np.testing.assert_allclose(fast[2], general[2], rtol=tol, atol=tol)


def test_fast_paths_are_taken_and_other_forms_use_the_rules(rng, monkeypatch):
    tr = tenferro._traced
    calls = []
    for name in ("_elementwise", "_power", "_matmul", "_sum", "_mean", "_array_ufunc"):
        original = getattr(tr, name)

        def counting(*args, name=name, original=original, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(tr, name, counting)
    x = random_array(rng, (3, 4), np.float64)
    m = random_array(rng, (3, 4), np.float64)
    for _, form in FAST_FORMS + REAL_FAST_FORMS:
        tenferro.grad(lambda t: form(t, m).sum())(x)
    assert calls == []
    # Broadcasting, promotion, numpy scalars, axes, other exponents and
    # ufuncs without a fast form take the rules.
    for rule, fun in [("_elementwise", lambda t: t + t[:1]), ("_elementwise", lambda t: t * np.float64(2.0)),
                      ("_elementwise", lambda t: t * np.ones(4, dtype=np.float32)), ("_power", lambda t: t**3),
                      ("_sum", lambda t: t.sum(axis=0)), ("_mean", lambda t: t.mean(axis=1)),
                      ("_matmul", lambda t: t @ t[0]), ("_array_ufunc", np.conjugate)]:
        calls.clear()
        tenferro.grad(lambda t: fun(t).sum())(x)
        assert calls[:1] == [rule]


def test_fast_paths_reject_bad_operands_with_typed_errors(rng):
    x = random_array(rng, (3, 4), np.float64)
    with pytest.raises(tenferro.InvalidArgumentError, match="broadcast"):
        tenferro.grad(lambda t: (t * np.ones((2, 4))).sum())(x)
    with pytest.raises(tenferro.Error):
        tenferro.grad(lambda t: (t @ np.ones((3, 2))).sum())(x)
    with pytest.raises(TypeError):
        tenferro.Traced.__neg__(1.0)


def test_implicit_numpy_conversions_raise_instead_of_dropping_the_gradient(rng):
    x = random_array(rng, (3, 4), np.float64)

    def into_array(t):
        out = np.zeros(3)
        out[:2] = t[0, :2]  # numpy would convert t with __array__
        return out

    for convert in (np.asarray, np.array, into_array, lambda t: np.array([t[0, 0], t[1, 1]])):
        with pytest.raises(tenferro.UnsupportedError, match="gradient would be lost"):
            tenferro.grad(lambda t: convert(t).sum())(x)
    # On purpose: .numpy(), float() and integer results such as matrix_rank.
    seen = {}

    def loss(t):
        seen["copy"] = t.numpy()
        seen["float"] = float(t[0, 0])
        seen["rank"] = np.linalg.matrix_rank(t)
        return (t * t).sum()

    np.testing.assert_allclose(tenferro.grad(loss)(x), 2 * x)
    np.testing.assert_array_equal(seen["copy"], x)
    assert seen["float"] == x[0, 0] and seen["rank"] == 3


MIXED_INDICES = [
    (slice(None), [0, 2]),
    (1, slice(None), [4, 0, 0]),  # the integer stands apart: the array's axis comes first
    (Ellipsis, [1, 3]),
    (None, slice(None), [3], slice(1, 4)),
    (slice(None), np.array([True, False, True, True])),
    (slice(None, None, -1), np.array([[0, 1], [2, 3]]), slice(None, None, 2)),
    (0, [1, -1]),
    (slice(None), 0, [1, 1]),
]


MULTI_INDICES = [
    ([0, 2, 1, 2], [1, 3, 3, 3]),  # repeated positions add up in the gradient
    ([0, 1], slice(None), [2, 4]),  # a slice between: the index axes come first
    (slice(1, 3), [0, 3, 3], [1, 1, 2]),
    (Ellipsis, [1, 3], [0, -1]),
    ([[0], [2]], [1, 2, 3]),  # broadcast to (2, 3)
    (1, [0, 3], [4, 4]),  # the integer counts as an index array
    ([1, 2], 3, slice(None, None, -2)),
    ([-1, 0], [-4, 2], -1),
    (np.array([[1, 2], [0, 0]]), slice(None), np.array(3)),
]


@pytest.mark.parametrize("key", MIXED_INDICES + MULTI_INDICES,
                         ids=[str(i) for i in range(len(MIXED_INDICES) + len(MULTI_INDICES))])
def test_index_arrays_among_basic_indices_match_numpy(key, rng):
    x = random_array(rng, (3, 4, 5), np.float64)
    want = x[key]
    w = random_array(rng, want.shape, np.float64)
    seen = {}

    def loss(t):
        r = t[key]
        seen["value"] = r.numpy()
        return (r * w).sum()

    g = tenferro.grad(loss)(x)
    np.testing.assert_array_equal(seen["value"], want)
    expected = np.zeros_like(x)
    np.add.at(expected, key, w)  # repeated indices add up
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)


def test_kinks_follow_torch_clip_at_its_bounds_and_std_of_constant_data(torch):
    x = np.array([-1.0, 0.0, 1.0, 2.0])
    g = tenferro.grad(lambda v: np.clip(v, -1.0, 1.0).sum())(x)
    t = torch.tensor(x, requires_grad=True)
    torch.clamp(t, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(g, t.grad.numpy())  # 1 at both bounds, 0 outside
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0, 0.0])
    c = np.full((2, 3), 4.0)
    for axis in (None, 1):
        g = tenferro.grad(lambda v: np.std(v, axis=axis).sum())(c)
        t = torch.tensor(c, requires_grad=True)
        (torch.std(t, unbiased=False) if axis is None else torch.std(t, dim=axis, unbiased=False).sum()).backward()
        np.testing.assert_array_equal(g, t.grad.numpy())  # 0, not NaN
    mixed = np.array([[4.0, 4.0, 4.0], [1.0, 2.0, 4.0]])
    g = tenferro.grad(lambda v: np.std(v, axis=1).sum())(mixed)
    t = torch.tensor(mixed, requires_grad=True)
    torch.std(t, dim=1, unbiased=False).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12)


def test_floor_division_round_sinc_at_zero_and_value_only_functions(torch):
    x = np.array([-1.2, 0.0, 0.7, 2.5])
    seen = {}

    def f(v):
        seen["argsort"], seen["close"] = np.argsort(v), np.isclose(v, 0.7)
        return (v // 0.5).sum() + round(v.sum()) + np.sinc(v).sum()

    g = tenferro.grad(f)(x)
    t = torch.tensor(x, requires_grad=True)
    torch.sinc(t).sum().backward()  # // and round have derivative 0
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert g[1] == 0.0  # sinc at 0: no 0/0
    np.testing.assert_array_equal(seen["argsort"], np.argsort(x))
    np.testing.assert_array_equal(seen["close"], np.isclose(x, 0.7))
    np.testing.assert_array_equal(tenferro.vjp(lambda v: v // 0.5 + 2.0 // (v + 3.0), x)[0], x // 0.5 + 2.0 // (x + 3.0))
    np.testing.assert_allclose(tenferro.vjp(np.sinc, x)[0], np.sinc(x), rtol=1e-15)


def test_scalar_values_are_numpy_scalars_as_when_fun_runs_alone():
    # (x * x).sum() on a numpy array is a numpy.float64; value_and_grad, vjp,
    # jvp and jit give the value as the function gives it by itself.
    def f(x):
        return (x * x).sum()

    x = np.arange(3.0)
    alone = f(x)
    value, g = tenferro.value_and_grad(f)(x)
    (value_aux, aux), _ = tenferro.value_and_grad(lambda x: (f(x), 1.0), has_aux=True)(x)
    primal, _ = tenferro.vjp(f, x)
    out, tangent = tenferro.jvp(f, (x,), (np.ones(3),))
    for v in (value, value_aux, primal, out, tenferro.jit(f)(x)):
        assert type(v) is type(alone) is np.float64
        assert v == alone == 5.0
    np.testing.assert_allclose(g, 2 * x)
    assert tangent == 6.0
    # Arrays stay arrays.
    primal, _ = tenferro.vjp(lambda x: x * 2, x)
    assert type(primal) is np.ndarray and primal.shape == (3,)
