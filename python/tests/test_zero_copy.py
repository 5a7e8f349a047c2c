"""Zero-copy in and out: operands are borrowed by address (strided views
included), results are numpy arrays over tenferro's storage, and torch
tensors go in and come out through DLPack without copies."""

import gc

import numpy as np
import pytest

import tenferro
from tenferro import _tenferro


def address(a):
    return a.__array_interface__["data"][0]


def test_operands_are_borrowed_by_address(rng):
    base = rng.uniform(size=(6, 8, 5))
    for view in (base, base[::2, 1::3, :], base.transpose(2, 0, 1), base[:, :, 2], np.broadcast_to(base[0, 0], (4, 5))):
        assert _tenferro._operand_address(view) == address(view)


def test_negative_strides_are_copied_once(rng):
    base = rng.uniform(size=(4, 5))
    flipped = base[::-1]
    assert _tenferro._operand_address(flipped) != address(flipped)
    np.testing.assert_allclose(tenferro.einsum("ij->j", flipped), flipped.sum(axis=0), rtol=1e-12)


def test_result_is_tenferro_storage(rng):
    a = rng.uniform(size=(5, 6))
    b = rng.uniform(size=(6, 7))
    c = tenferro.einsum("ij,jk->ik", a, b)
    # The base is the capsule owning tenferro's Tensor; the array does not
    # own (or copy) its memory, which is 64-byte aligned like every host
    # allocation tenferro makes.
    assert "tenferro.Tensor" in repr(c.base)
    assert not c.flags.owndata
    assert c.flags.writeable
    assert address(c) % 64 == 0
    assert not np.shares_memory(c, a) and not np.shares_memory(c, b)
    # It outlives its operands and the call.
    want = a @ b
    del a, b
    gc.collect()
    np.testing.assert_allclose(c, want, rtol=1e-12)
    c[0, 0] = 42.0
    assert c[0, 0] == 42.0


def test_views_of_results_keep_the_storage_alive(rng):
    a = rng.uniform(size=(5, 6))
    v = tenferro.einsum("ij,jk->ik", a, a.T)[1:3]
    gc.collect()
    np.testing.assert_allclose(v, (a @ a.T)[1:3], rtol=1e-12)


def test_torch_in_and_out(torch):
    a = torch.randn(4, 5, dtype=torch.float64)
    b = torch.randn(6, 5, dtype=torch.float64).t()  # a strided view
    assert _tenferro._operand_address(a) == a.data_ptr()
    assert _tenferro._operand_address(b) == b.data_ptr()
    c = tenferro.einsum("ij,jk->ik", a, b)
    assert isinstance(c, np.ndarray)
    np.testing.assert_allclose(c, (a @ b).numpy(), rtol=1e-12)
    t = torch.from_dlpack(c)
    assert t.data_ptr() == address(c)  # no copy on the way out either
    assert torch.allclose(t, a @ b)
    # A tensor that requires grad is detached (not copied).
    w = torch.randn(5, 3, dtype=torch.float32, requires_grad=True)
    assert _tenferro._operand_address(w) == w.data_ptr()
    np.testing.assert_allclose(tenferro.einsum("ij->ji", w), w.detach().numpy().T)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_torch_dtypes(torch, dtype):
    t = torch.randn(3, 4, dtype=getattr(torch, dtype))
    u = torch.randn(4, 2, dtype=getattr(torch, dtype))
    got = torch.from_dlpack(tenferro.einsum("ij,jk->ik", t, u))
    assert got.dtype == t.dtype
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-12
    assert torch.allclose(got, torch.einsum("ij,jk->ik", t, u), rtol=tol, atol=tol)


# Note [Relabeling einsums are views] (python/src/module.cpp)
@pytest.mark.parametrize(
    "subscripts, shape",
    [("ij->ji", (3, 4)), ("ij", (3, 4)), ("ji", (3, 4)), ("ij->ij", (3, 4)), ("ii->i", (3, 3)),
     ("...j->j...", (2, 3, 4)), ("iji->ij", (3, 2, 3)), ("bii->ib", (2, 3, 3)), ("c...c->c", (3, 3)),
     ("i...i->i...", (3, 2, 3))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int16, np.bool_])
def test_relabeling_einsums_are_writeable_views_as_in_numpy(subscripts, shape, dtype):
    base = np.arange(2 * int(np.prod(shape))).reshape(shape + (2,)).astype(dtype)
    x = base[..., 0]  # strided, not contiguous
    got = tenferro.einsum(subscripts, x)
    want = np.einsum(subscripts, x)
    assert got.shape == want.shape and got.dtype == want.dtype and got.strides == want.strides
    np.testing.assert_array_equal(got, want)
    assert np.shares_memory(got, x) and got.flags.writeable
    got[(0,) * got.ndim] = 1  # writes go through to the operand, as in numpy
    assert x.flat[0] == 1
    x.setflags(write=False)
    assert not tenferro.einsum(subscripts, x).flags.writeable


def test_permutations_of_many_axes_are_views_with_numpys_strides():
    # Permutations are read off the subscripts (relabeled_view), without
    # binding the network: the identity and reversal of 24 axes, an operand
    # with negative strides, the sublist form, and a repeated label (a
    # diagonal, the bound path) next to them.
    import string
    x = np.arange(32768.0).reshape((1, 2) * 9 + (2,) * 6)
    labels = string.ascii_letters[:24]
    for out in (labels, labels[::-1], labels[1:] + labels[0]):
        for operand in (x, x[::-1, ::-1, :, ::-1]):
            got, want = tenferro.einsum(labels + "->" + out, operand), np.einsum(labels + "->" + out, operand)
            assert got.shape == want.shape and got.strides == want.strides and np.shares_memory(got, operand)
            np.testing.assert_array_equal(got, want)
    m = np.arange(12.0).reshape(3, 4)[:, ::-1]
    got = tenferro.einsum(m, [7, 3], [3, 7])
    assert got.strides == np.einsum(m, [7, 3], [3, 7]).strides and np.shares_memory(got, m)
    d = np.arange(27.0).reshape(3, 3, 3)
    np.testing.assert_array_equal(tenferro.einsum("iij->ji", d), np.einsum("iij->ji", d))
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.einsum("ij->jj", m)


def test_einsums_that_sum_or_cast_are_new_arrays():
    x = np.arange(12.0).reshape(3, 4)
    s = np.arange(9.0).reshape(3, 3)
    for subscripts, operand in [("ij->i", x), ("ii", s), ("ij->", x)]:
        assert not np.shares_memory(tenferro.einsum(subscripts, operand), operand)
    cast = tenferro.einsum("ij->ji", x.astype(np.float32), dtype=np.float64)
    np.testing.assert_array_equal(cast, x.T)
    # order='C' copies a transposed view into C order; out= copies into out.
    c = tenferro.einsum("ij->ji", x, order="C")
    assert c.flags.c_contiguous and not np.shares_memory(c, x)
    np.testing.assert_array_equal(c, x.T)
    # ... written by the engine's permutation kernel (a tenferro result: its
    # base is the tensor's capsule; numpy's copy of the view has none).
    cube = np.arange(60.0).reshape(3, 4, 5)
    c3 = tenferro.einsum("ijk->kji", cube, order="C")
    assert c3.flags.c_contiguous and type(c3.base).__name__ == "PyCapsule"
    np.testing.assert_array_equal(c3, cube.transpose(2, 1, 0))
    assert np.shares_memory(tenferro.einsum("ijk->ijk", cube, order="C"), cube)  # C already: the view
    sq = np.arange(16.0).reshape(4, 4)
    want = sq.T.copy()
    assert tenferro.einsum("ij->ji", sq, out=sq) is sq  # out overlapping the operand
    np.testing.assert_array_equal(sq, want)
    # A ContractExpression of one operand gives the same view.
    expr = tenferro.contract_expression("ij->ji", x.shape)
    assert np.shares_memory(expr(x), x)
    # Bad input is still the contraction's error.
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.einsum("ii->i", x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_broadcast_operands_match_numpy_without_copies(rng, dtype):
    # Note [Broadcast operands] (src/einsum/einsum_call.cpp): random networks
    # whose operands are broadcast views (stride-0 axes, from numpy's
    # broadcast_to), with implicit and explicit outputs, diagonals and size-1
    # axes, against numpy's einsum.
    from conftest import random_array

    letters = "abcd"
    for _ in range(150):
        extents = {c: int(rng.integers(1, 5)) for c in letters}
        operands, terms = [], []
        for _ in range(int(rng.integers(1, 4))):
            term = "".join(rng.choice(list(letters), size=int(rng.integers(0, 4))))
            shape = [extents[c] for c in term]
            # Each axis is stored (the real extent) or broadcast (extent 1 stored).
            stored = [e if rng.random() < 0.5 else 1 for e in shape]
            base = random_array(rng, stored, np.float64)
            if dtype == np.int64:
                base = np.round(base * 10)
            base = base.astype(dtype)
            operands.append(np.broadcast_to(base, shape) if rng.random() < 0.8 else np.broadcast_to(base, shape).copy())
            terms.append(term)
        if rng.random() < 0.5:
            subscripts = ",".join(terms)
        else:
            present = sorted(set("".join(terms)))
            out = "".join(c for c in present if rng.random() < 0.5)
            subscripts = ",".join(terms) + "->" + out
        want = np.einsum(subscripts, *operands)
        got = tenferro.einsum(subscripts, *operands)
        assert got.shape == want.shape, subscripts
        if dtype == np.int64:
            np.testing.assert_array_equal(got, want, err_msg=subscripts)
        else:
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10, err_msg=subscripts)


def test_contracting_broadcast_operands_takes_no_memory_of_their_logical_size():
    # Two 4000 x 4000 broadcast views hold 8000 elements; their contraction
    # used to copy each into a dense buffer (256 MB) first.
    import resource

    n = 4000
    row = np.linspace(0.0, 1.0, n)
    a = np.broadcast_to(row, (n, n))
    b = np.broadcast_to(row[:, None], (n, n))
    rt = tenferro.Runtime(threads=1)
    rt.einsum("ij,ij->", a[:8, :8], b[:8, :8])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got = rt.einsum("ij,ij->", a, b)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert got == pytest.approx(row.sum() ** 2, rel=1e-12)
    assert grown_kib < 64 * 1024, grown_kib


def test_broadcast_operands_that_need_a_cast_are_cast_as_stored():
    # Note [Casting broadcast operands] (python/src/array_bridge.cpp): an
    # int8, bool, float16 or byte-swapped broadcast view is cast (or copied)
    # as its stored elements, not its logical size (2^27 int8 ones had cost
    # 512 MB, 2^33 a MemoryError; the edge audit of 2026-12-07).
    import tracemalloc

    n = 2**33
    cases = [(np.int8(3), "i->", np.int8((3 * n) % 256)), (np.float16(1), "i,j->j", None),
             (np.array(2.0, ">f8"), "i->", 2.0 * n), (np.True_, "i->", True), (np.float32(1), "i,j->", 3.0 * n)]
    for value, subscripts, want in cases:
        ops = [np.broadcast_to(value, (n,))]
        if subscripts.count(",") == 1:
            ops.append(np.ones(3))
        tracemalloc.start()
        got = tenferro.einsum(subscripts, *ops)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 1 << 20, (value.dtype, subscripts, peak)
        if want is None:  # float16 times float64 ones: n each
            np.testing.assert_array_equal(got, np.full(np.shape(got), float(n)))
        else:
            assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (value.dtype, got, want)
    # Small cases against numpy, broadcast along some axes and not others.
    base = np.arange(1, 8, dtype=np.int16).reshape(7, 1)
    for op in (np.broadcast_to(base, (7, 5)), np.broadcast_to(base.astype(">i4"), (7, 5)),
               np.broadcast_to(base.astype(np.uint8).T, (5, 7))):
        for subscripts in ("ij->", "ij->i", "ij->j", "ij->ji"):
            got, want = tenferro.einsum(subscripts, op), np.einsum(subscripts, op)
            np.testing.assert_array_equal(got, want, err_msg=subscripts)
            assert got.dtype == want.dtype


def test_summed_broadcast_extents_past_2_to_the_63_keep_their_value():
    # Note [Broadcast operands]: the factor of the summed broadcast labels
    # (2^32 x 2^32 terms here) had wrapped in an int64 to 0.
    v = np.broadcast_to(1.0, (2**32,))
    assert tenferro.einsum("i,j->", v, v) == 2.0**64
    w = np.broadcast_to(np.float32(1), (3 * 2**31,))
    assert tenferro.einsum("i,j->", w, w) == np.float32(9 * 2.0**62)
    k = np.broadcast_to(np.int64(3), (2**32,))
    assert tenferro.einsum("i,j->", k, k) == np.int64(0)  # 9 * 2^64 wraps to 0, as numpy's sums


def test_products_return_the_operands_memory_order_as_numpy():
    # Note [Results in the operands' memory order]: an einsum that sums no
    # label returns its result in its operands' layout, as numpy.einsum's
    # order='K' does (Fortran-order operands give a Fortran-order result);
    # contractions, order='C' and C-order operands give row-major results.
    rng = np.random.default_rng(3)
    c = rng.random((64, 80))  # at least 4096 elements (smaller products are computed row-major)
    f = np.asfortranarray(c)
    v = rng.random(80)

    def layout(r):
        return "C" if r.flags.c_contiguous else "F" if r.flags.f_contiguous else "other"

    for subscripts, ops in [("ij,ij->ij", (f, f)), ("ij,ij->ji", (c, c)), ("ij,j->ij", (f, v)),
                            ("ij,j->ji", (c, v)), ("j,ij->ij", (v, f)), ("ij,ij->ij", (c, f)),
                            ("ij,ij->ij", (c, c)), ("ij,jk->ik", (c, c.T.copy())),
                            # vectors have no order: C, as numpy (had been j-outer, F)
                            ("i,j->ij", (rng.random(4), rng.random(5000))),
                            ("i,j->ji", (rng.random(4), rng.random(5000)))]:
        got, want = tenferro.einsum(subscripts, *ops), np.einsum(subscripts, *ops)
        np.testing.assert_allclose(got, want, rtol=1e-14)
        assert layout(got) == layout(want), (subscripts, layout(got), layout(want))
        assert type(got.base).__name__ == "PyCapsule"  # computed, not a view of an operand
    r3 = tenferro.einsum("ijk,ijk->ijk", np.asfortranarray(rng.random((8, 16, 32))),
                         np.asfortranarray(rng.random((8, 16, 32))))
    assert r3.flags.f_contiguous
    assert tenferro.einsum("ij,ij->ji", c[:8, :8], c[:8, :8]).flags.c_contiguous  # small: as written
    assert tenferro.einsum("ij,ij->ij", f, f, order="C").flags.c_contiguous


def test_reversed_operands_are_read_in_place(rng):
    # Note [Reversed operands]: when every axis of a label runs backwards,
    # einsum reads the operands with those axes reversed back (their own
    # memory, no copy) and reverses the label's output axes in the result,
    # which then has positive strides as numpy's results do.
    base_a = rng.standard_normal((6, 7, 5))
    base_b = rng.standard_normal((6, 7, 5))
    m = rng.standard_normal((7, 7))
    a, b = base_a[::-1, :, ::-1], base_b[::-1, :, ::-1]
    addresses, out_axes = _tenferro._einsum_operand_addresses("ijk,ijk->ik", a, b)
    assert addresses == [address(base_a), address(base_b)]
    assert out_axes == 0b11  # i and k, reversed back in the result
    addresses, out_axes = _tenferro._einsum_operand_addresses("ijk,ijk->j", a, b)
    assert addresses == [address(base_a), address(base_b)] and out_axes == 0
    # A label reversed in one operand and not in another: the reversed
    # operand is copied as before.
    addresses, out_axes = _tenferro._einsum_operand_addresses("ijk,ijk->", a, base_b)
    assert addresses[0] not in (address(a), address(base_a)) and addresses[1] == address(base_b) and out_axes == 0
    addresses, _ = _tenferro._einsum_operand_addresses("ii->i", m[::-1, :])
    assert addresses[0] != address(m)

    cases = [
        ("ijk,ijk->", (a, b)),
        ("ijk,ijk->ijk", (a, b)),
        ("ijk,ijk->kji", (a, b)),
        ("ijk,ijk->ik", (a, b)),
        ("ijk,ijk->j", (a, b)),
        ("ijk,kl->ijl", (a, base_b[0, :5, ::-1].T)),  # k reversed in both (the second's rows)
        ("ijk,jl->il", (a, m[:, ::-1])),  # l reversed only in the output's operand
        ("ijk,ijk", (a, b)),  # implicit output
        ("...k,...k->...", (a, b)),
        ("ijk,k->ij", (a, base_b[0, 0, ::-1])),
        ("ijk,ijk,ijk->ik", (a, b, a)),
        ("ii->i", (m[::-1, ::-1],)),
        ("ii->", (m[::-1, ::-1],)),
        ("ij,ij->ij", (m[::-1], m)),  # disagreeing directions: copied
        ("ijk,ljk->il", (a, base_b[::-2, :, ::-1])),
        ("ij,j->i", (m[::-1], np.ones(1)[::-1])),  # a broadcast size-1 axis
    ]
    for subscripts, ops in cases:
        got, want = tenferro.einsum(subscripts, *ops), np.einsum(subscripts, *ops)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=subscripts)
        got = np.asarray(got)
        if np.shares_memory(got, ops[0]):  # a relabeling view, with numpy's strides
            assert got.strides == want.strides, subscripts
        else:
            assert all(s >= 0 for s in got.strides), (subscripts, got.strides)
    # Other dtypes, dtype=, order=, out= and sublists take the same path.
    ai = (base_a * 10).astype(np.int32)[::-1]
    np.testing.assert_array_equal(tenferro.einsum("ijk,ijk->ij", ai, ai), np.einsum("ijk,ijk->ij", ai, ai))
    af = base_a.astype(np.float32)[:, ::-1]
    np.testing.assert_allclose(tenferro.einsum("ijk,ijk->jk", af, af, dtype=np.float64),
                               np.einsum("ijk,ijk->jk", af, af, dtype=np.float64), rtol=1e-6)
    for order in ("C", "F"):
        got = tenferro.einsum("ijk,ijk->ik", a, b, order=order)
        assert got.flags.c_contiguous if order == "C" else got.flags.f_contiguous
        np.testing.assert_allclose(got, np.einsum("ijk,ijk->ik", a, b), rtol=1e-12)
    out = np.zeros((6, 5))
    tenferro.einsum("ijk,ijk->ik", a, b, out=out)
    np.testing.assert_allclose(out, np.einsum("ijk,ijk->ik", a, b), rtol=1e-12)
    np.testing.assert_allclose(tenferro.einsum(a, [0, 1, 2], b, [0, 1, 2], [2, 0]),
                               np.einsum("ijk,ijk->ki", a, b), rtol=1e-12)
    # The operands are unchanged and still readable.
    np.testing.assert_array_equal(a, base_a[::-1, :, ::-1])
