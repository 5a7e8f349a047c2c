"""tenferro.einsum against numpy.einsum: fixed cases covering numpy's
semantics, random networks on random shapes, every dtype."""

import os

import numpy as np
import pytest

import tenferro
from conftest import DTYPES, random_array, tolerance

# (subscripts, shapes): numpy semantics the module must reproduce.
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),  # implicit output
    ("ji,jk", [(4, 3), (4, 5)]),  # implicit output sorts labels
    ("ii", [(4, 4)]),  # trace
    ("ii->i", [(4, 4)]),  # diagonal
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i", [(5,), (5,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (3, 4, 2)]),
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("abc,cd,dbe->ae", [(2, 3, 4), (4, 5), (5, 3, 2)]),
    ("ij,j->i", [(3, 1), (4,)]),  # size-1 broadcast of a named label
    ("i,i->", [(0,), (0,)]),  # empty
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("subscripts,shapes", CASES)
def test_matches_numpy(subscripts, shapes, dtype, rng):
    ops = [random_array(rng, s, dtype) for s in shapes]
    got = tenferro.einsum(subscripts, *ops)
    want = np.einsum(subscripts, *ops)
    assert type(got) is type(want)  # a numpy scalar for a full contraction, as numpy gives
    assert got.dtype == np.dtype(dtype)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, **tolerance(dtype))


def random_network(rng):
    """A random einsum: 1-4 operands over labels a-f with extents 1-4,
    labels repeated within and across operands, a random output."""
    labels = "abcdef"
    extents = {c: int(rng.integers(1, 5)) for c in labels}
    terms = []
    for _ in range(int(rng.integers(1, 5))):
        rank = int(rng.integers(0, 4))
        terms.append("".join(rng.choice(list(labels), size=rank)))
    used = sorted(set("".join(terms)))
    out = "".join(c for c in used if rng.random() < 0.4)
    out = "".join(rng.permutation(list(out))) if out else ""
    subscripts = ",".join(terms) + "->" + out
    shapes = [tuple(extents[c] for c in t) for t in terms]
    return subscripts, shapes


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_networks_match_numpy(dtype):
    rng = np.random.default_rng(7 + DTYPES.index(dtype))
    for _ in range(40):
        subscripts, shapes = random_network(rng)
        ops = [random_array(rng, s, dtype) for s in shapes]
        got = tenferro.einsum(subscripts, *ops)
        want = np.einsum(subscripts, *ops)
        assert got.shape == want.shape, subscripts
        np.testing.assert_allclose(got, want, err_msg=subscripts, **tolerance(dtype))


def test_strided_views_match_numpy(rng):
    base = random_array(rng, (6, 8, 5), np.float64)
    views = [
        base[::2, 1::3, :],  # steps
        base.transpose(2, 0, 1)[:, :4, :],  # permuted
        np.broadcast_to(base[0, 0], (3, 5)),  # stride 0
        base[:, :, 2],  # non-contiguous 2-D
        base[::-1, :, :],  # negative stride: copied once
    ]
    for v in views:
        sub = "abc->cab" if v.ndim == 3 else "ab->ba"
        np.testing.assert_allclose(tenferro.einsum(sub, v), np.einsum(sub, v))
        np.testing.assert_allclose(tenferro.einsum(sub.split("->")[0] + "->", v), v.sum(), rtol=1e-12)
    a, b = base[::2, ::2, 0], base[1::2, :4, 1].T
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b), a @ b, rtol=1e-12)


def test_sublist_form(rng):
    a = random_array(rng, (3, 4), np.float64)
    b = random_array(rng, (4, 5), np.float64)
    np.testing.assert_allclose(tenferro.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b, rtol=1e-12)
    np.testing.assert_allclose(tenferro.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]), rtol=1e-12)
    c = random_array(rng, (2, 3, 4), np.float64)
    np.testing.assert_allclose(tenferro.einsum(c, [Ellipsis, 0, 1], [Ellipsis]), np.einsum(c, [Ellipsis, 0, 1], [Ellipsis]))


def test_mixed_dtypes_promote_like_numpy(rng):
    a32 = random_array(rng, (3, 4), np.float32)
    b64 = random_array(rng, (4, 2), np.float64)
    c64 = random_array(rng, (4, 2), np.complex64)
    assert tenferro.einsum("ij,jk->ik", a32, b64).dtype == np.float64
    assert tenferro.einsum("ij,jk->ik", a32, c64).dtype == np.complex64
    assert tenferro.einsum("ij,jk->ik", b64.T, c64).dtype == np.complex128
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a32, b64), a32.astype(np.float64) @ b64, rtol=1e-6)


# Note [Integer einsum]: numpy's result dtype and values, wrap-around
# included, for every numeric dtype numpy.einsum takes.
INT_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def full_range(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_random_integer_networks_match_numpy(dtype):
    # Random subscripts (repeated labels, traces, broadcasting extents of 1),
    # wrapping values, and strided or reversed views of the operands.
    rng = np.random.default_rng(70 + INT_DTYPES.index(dtype))
    for i in range(60):
        subscripts, shapes = random_network(rng)
        ops = [full_range(rng, tuple(2 * e for e in s), dtype)[tuple(slice(None, None, 2) for _ in s)] for s in shapes]
        if i % 3 == 0:
            ops = [op[tuple(slice(None, None, -1) for _ in op.shape)] for op in ops]
        want = np.einsum(subscripts, *ops)
        got = tenferro.einsum(subscripts, *ops)
        assert got.dtype == want.dtype, subscripts
        np.testing.assert_array_equal(got, want, err_msg=subscripts)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("subscripts,shapes", CASES)
def test_integer_and_bool_dtypes_match_numpy(subscripts, shapes, dtype, rng):
    ops = [full_range(rng, s, dtype) for s in shapes]
    want = np.einsum(subscripts, *ops)
    got = tenferro.einsum(subscripts, *ops)
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64])
def test_integer_contractions_past_the_kernel_blocks(dtype, rng):
    # Depth > 256, rows > 128 and columns > 1024 (Note [Integer GEMM]) with
    # values that wrap, values that fit in int32, one thread and two.
    a, b = full_range(rng, (130, 300), dtype), full_range(rng, (300, 1030), dtype)
    small_a, small_b = a % 1000, b % 1000
    for threads in (1, 2):
        np.testing.assert_array_equal(tenferro.einsum("ij,jk->ik", a, b, threads=threads), np.einsum("ij,jk->ik", a, b))
        np.testing.assert_array_equal(
            tenferro.einsum("ij,jk->ik", small_a, small_b, threads=threads), np.einsum("ij,jk->ik", small_a, small_b)
        )
    b3, at2 = b[:, ::3], a.T[:, ::2]  # strided operands, a transposed result
    np.testing.assert_array_equal(tenferro.einsum("kj,ki->ji", b3, at2), np.einsum("kj,ki->ji", b3, at2))


def test_mixed_numeric_dtypes_promote_like_numpy(rng):
    i8, i32, i64 = (np.arange(-4, 8, dtype=d).reshape(3, 4) for d in (np.int8, np.int32, np.int64))
    u64 = np.arange(12, dtype=np.uint64).reshape(4, 3)
    f16, f32 = np.linspace(-1, 1, 12, dtype=np.float16).reshape(4, 3), np.ones((4, 3), np.float32)
    for x, y in [(i8, f16), (i8, f32), (i32, u64), (i64, u64), (i8, u64), (i32, f16), (i64, f32),
                 (i8.astype(bool), u64.astype(np.uint8)), (i8, f32.astype(np.complex64))]:
        want = np.einsum("ij,jk->ik", x, y)
        got = tenferro.einsum("ij,jk->ik", x, y)
        assert got.dtype == want.dtype, (x.dtype, y.dtype)
        if want.dtype == np.float16:
            # Accumulated in float32 and rounded once: the float16 nearest the
            # exact value (numpy's own float16 einsum can be one ulp off it).
            exact = np.einsum("ij,jk->ik", x.astype(np.float64), y.astype(np.float64))
            np.testing.assert_array_equal(got, exact.astype(np.float16))
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6)
    # Python ints and lists of them are int64, as in numpy.
    assert tenferro.einsum("ij,j->i", [[1, 2], [3, 4]], [1, 1]).tolist() == [3, 7]
    assert tenferro.einsum(",->", 2, 3) == 6 and tenferro.einsum(",->", 2, 3).dtype == np.int64
    # float16 accumulates in float32 and rounds once, as numpy does.
    h = np.full(4096, 0.1, np.float16)
    assert tenferro.einsum("i,i->", h, h) == np.einsum("i,i->", h, h)
    # out= follows numpy's casting rule for the integer result.
    out = np.zeros((3, 3), np.int64)
    assert tenferro.einsum("ij,kj->ik", i32, i32, out=out) is out
    np.testing.assert_array_equal(out, i32 @ i32.T)
    with pytest.raises(tenferro.DTypeError):
        tenferro.einsum("ij,kj->ik", i64, i64, out=np.zeros((3, 3), np.int32))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": np.float64},
        {"dtype": np.complex128},
        {"dtype": "int64"},
        {"dtype": np.int32, "casting": "unsafe"},
        {"dtype": np.float16, "casting": "unsafe"},
        {"dtype": np.complex64, "casting": "same_kind"},
        {"dtype": np.uint8, "casting": "unsafe"},
        {"casting": "unsafe"},
    ],
    ids=str,
)
def test_dtype_and_casting_keywords_like_numpy(kwargs, rng):
    # Note [einsum dtype=]: the operands cast under numpy's rule, the result of that dtype.
    a, b = rng.integers(-50, 50, (3, 4)), rng.integers(-50, 50, (4, 5)).astype(np.int32)
    want = np.einsum("ij,jk->ik", a, b, **kwargs)
    got = tenferro.einsum("ij,jk->ik", a, b, **kwargs)
    assert got.dtype == want.dtype
    if want.dtype == np.float16:  # rounded once from float32 (numpy's float16 einsum can be an ulp off)
        want = np.einsum("ij,jk->ik", a, b.astype(np.int64)).astype(np.float16)
    np.testing.assert_array_equal(got, want)
    out = np.zeros_like(want)
    assert tenferro.einsum("ij,jk->ik", a, b, out=out, **kwargs) is out
    np.testing.assert_array_equal(out, want)


def test_dtype_casts_operands_to_dtype_before_computing_like_numpy():
    # numpy casts each operand to dtype= first: 0.5 is True as bool, 70000
    # is inf as float16 (tenferro then computes in a wider dtype).
    a, b = np.array([0.5, 0.0]), np.array([0.5, 1.0])
    for subscripts, x, y in [("i,i->i", a, b), ("ij,jk->ik", np.array([[0.5, -0.5]]), np.ones((2, 1)))]:
        want = np.einsum(subscripts, x, y, dtype=bool, casting="unsafe")
        got = tenferro.einsum(subscripts, x, y, dtype=bool, casting="unsafe")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    big = np.full(3, 70000.0)
    with np.errstate(over="ignore"):
        want = np.einsum("i,i->", big, np.full(3, 1e-3), dtype=np.float16, casting="unsafe")
        got = tenferro.einsum("i,i->", big, np.full(3, 1e-3), dtype=np.float16, casting="unsafe")
    assert np.isinf(want) and np.isinf(got) and got.dtype == np.float16


def test_out_follows_the_casting_keyword_like_numpy(rng):
    a, b = rng.random((3, 4)), rng.random((4, 5))
    out = np.zeros((3, 5), np.float32)
    assert tenferro.einsum("ij,jk->ik", a, b, out=out, casting="unsafe") is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-6)
    with pytest.raises(tenferro.DTypeError, match="casting='safe'"):
        tenferro.einsum("ij,jk->ik", a, b, out=out)
    o64 = np.zeros((3, 5))
    with pytest.raises(TypeError):
        np.einsum("ij,jk->ik", a.astype(np.float32), b.astype(np.float32), out=o64, casting="no")
    with pytest.raises(tenferro.DTypeError, match="casting='no'"):
        tenferro.einsum("ij,jk->ik", a.astype(np.float32), b.astype(np.float32), out=o64, casting="no")
    assert not o64.any()  # left unchanged


def test_dtype_and_casting_errors_like_numpy(rng):
    a = rng.standard_normal((3, 4))
    for kwargs in ({"dtype": np.float32}, {"dtype": np.int64}, {"casting": "no", "dtype": np.complex128}):
        with pytest.raises(TypeError):
            np.einsum("ij->j", a, **kwargs)
        with pytest.raises(tenferro.DTypeError, match="cannot cast float64"):
            tenferro.einsum("ij->j", a, **kwargs)
    with pytest.raises(TypeError, match="not understood"):
        tenferro.einsum("ij->j", a, dtype="bogus")
    with pytest.raises(tenferro.DTypeError):
        tenferro.einsum("ij->j", a, dtype=object)
    with pytest.raises(ValueError):
        tenferro.einsum("ij->j", a, casting="sometimes")
    with pytest.raises(tenferro.InvalidArgumentError, match="dtype=, casting=, order=, max_intermediate_bytes= and memory limits"):
        tenferro.grad(lambda x: tenferro.einsum("ij->", x, dtype=np.float64))(a)


def test_order_keyword_like_numpy(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    for order, c, f in (("C", True, False), ("F", False, True)):
        got = tenferro.einsum("ij,jk->ki", a, b, order=order)
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (c, f)
        np.testing.assert_allclose(got, np.einsum("ij,jk->ki", a, b))
    for order in ("A", "K"):  # the contraction's own layout
        np.testing.assert_allclose(tenferro.einsum("ij,jk->ki", a, b, order=order), (a @ b).T)
    with pytest.raises(ValueError, match="order must be one of"):
        tenferro.einsum("ij->j", a, order="Q")


def test_array_likes(rng):
    np.testing.assert_allclose(tenferro.einsum("ij,j->i", [[1.0, 2.0], [3.0, 4.0]], (1.0, 1.0)), [3.0, 7.0])


@pytest.mark.parametrize("optimize", ["greedy", "optimal", "treesa", "auto", "left_to_right", True, False])
def test_planners_agree(optimize, rng):
    shapes = [(3, 4), (4, 5), (5, 6), (6, 3)]
    ops = [random_array(rng, s, np.float64) for s in shapes]
    got = tenferro.einsum("ij,jk,kl,lm->im", *ops, optimize=optimize)
    np.testing.assert_allclose(got, np.einsum("ij,jk,kl,lm->im", *ops), rtol=1e-10)


def test_explicit_paths(rng):
    ops = [random_array(rng, s, np.float64) for s in [(3, 4), (4, 5), (5, 6)]]
    want = np.einsum("ij,jk,kl->il", *ops)
    for path in ([(1, 2), (0, 1)], [(0, 1), (0, 1)], np.einsum_path("ij,jk,kl->il", *ops)[0]):
        np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", *ops, optimize=path), want, rtol=1e-10)
    path, _ = tenferro.contract_path("ij,jk,kl->il", *ops)
    np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", *ops, optimize=path), want, rtol=1e-10)


def test_nested_subscripts(rng):
    ops = [random_array(rng, s, np.float64) for s in [(3, 4), (4, 5), (5, 6)]]
    got = tenferro.einsum("(ij,(jk,kl))->il", *ops, optimize="auto")
    np.testing.assert_allclose(got, np.einsum("ij,jk,kl->il", *ops), rtol=1e-10)


def test_runtimes_and_threads(rng):
    a = random_array(rng, (30, 40), np.float64)
    b = random_array(rng, (40, 20), np.float64)
    want = a @ b
    rt = tenferro.Runtime(threads=1)
    assert rt.threads == 1 and rt.gemm == "native"
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, runtime=rt), want, rtol=1e-12)
    np.testing.assert_allclose(rt.einsum("ij,jk->ik", a, b), want, rtol=1e-12)
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, threads=1), want, rtol=1e-12)
    assert rt.cached_ops == 1
    rt.clear_caches()
    assert rt.cached_ops == 0
    assert tenferro.default_runtime().threads >= 1
    assert "Runtime(threads=" in repr(rt)
    assert rt.domain == "inline"
    managed = tenferro.Runtime(threads=1, domain="managed")
    assert managed.domain == "managed"
    np.testing.assert_allclose(managed.einsum("ij,jk->ik", a, b), want, rtol=1e-12)


def test_worker_spin(rng):
    # Note [Worker spin]: seconds, default 0.01, zero without domain workers.
    assert tenferro.Runtime(threads=1).worker_spin == 0.0
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two allowed CPUs")
    a = random_array(rng, (200, 300), np.float64)
    b = random_array(rng, (300, 100), np.float64)
    for spin, want in [(None, 0.01), (0, 0.0), (0.002, 0.002), (1, 1.0)]:
        rt = tenferro.Runtime(threads=2, worker_spin=spin)
        assert rt.worker_spin == want
        np.testing.assert_allclose(rt.einsum("ij,jk->ik", a, b), a @ b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("gemm", ["openblas", "blis"])
def test_external_gemm(gemm, rng):
    try:
        rt = tenferro.Runtime(threads=1, gemm=gemm)
    except tenferro.UnsupportedError as e:
        pytest.skip(f"{gemm} not available: {e}")
    a = random_array(rng, (20, 30), np.complex128)
    b = random_array(rng, (30, 10), np.complex128)
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", a, b, runtime=rt), a @ b, rtol=1e-12)


def test_gemm_candidate_list_falls_back_to_native(rng):
    # Whether or not BLIS is installed, the list yields a working runtime.
    rt = tenferro.Runtime(threads=1, gemm="blis,native")
    try:
        tenferro.Runtime(threads=1, gemm="blis")
        chosen = "blis"
    except tenferro.UnsupportedError:
        chosen = "native"
    assert rt.gemm == chosen  # the provider in use, not the list
    assert f"gemm='{chosen}'" in repr(rt)
    a = random_array(rng, (20, 30), np.float64)
    b = random_array(rng, (30, 10), np.float64)
    np.testing.assert_allclose(rt.einsum("ij,jk->ik", a, b), a @ b, rtol=1e-12)


def test_the_gil_is_released_during_a_contraction(rng):
    # The worker stamps the time right before and after its call (holding
    # the GIL); a main-thread stamp strictly between the two can only exist
    # when the call released the GIL.
    import threading
    import time

    a = random_array(rng, (700, 700), np.float64)
    rt = tenferro.Runtime(threads=1)
    rt.einsum("ij,jk->ik", a, a)  # plan outside the timed call
    span = {}
    started = threading.Event()

    def work():
        started.set()
        span["start"] = time.perf_counter()
        rt.einsum("ij,jk->ik", a, a)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    stamps = []
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    assert any(span["start"] < s < span["end"] for s in stamps)


def test_tiny_calls_keep_the_gil_and_larger_ones_release_it(rng):
    # Note [Keeping the GIL for tiny calls]: a handoff to a waiting thread
    # costs more than an 8 x 8 contraction, so such calls keep the GIL; the
    # runtime counts the calls that released it.
    import tenferro.fft as tff
    import tenferro.linalg as tl

    rt = tenferro.Runtime(threads=1)
    small = random_array(rng, (8, 8), np.float64)
    big = random_array(rng, (128, 128), np.float64)
    kept = [
        lambda: rt.einsum("ij,jk->ik", big[:64, :64], big[:64, :64]),
        lambda: rt.einsum("ij,jk->ik", small, small),
        lambda: rt.einsum("ij,jk,kl->il", small, small, small),
        lambda: tl.svd(small, runtime=rt),
        lambda: tl.inv(small, runtime=rt),
        lambda: tff.fft(small[0], runtime=rt),
    ]
    released = [
        lambda: rt.einsum("ij,jk->ik", big, big),
        lambda: tl.svd(random_array(rng, (16, 16), np.float64), runtime=rt),
        lambda: tff.fft(big, runtime=rt),
        lambda: rt.einsum("ij,jk->ik", small, small, max_intermediate_bytes=1 << 20),  # sliced: always
    ]
    # A jit function counts every value of its program: small inputs with a
    # large intermediate release it.
    jit_small = tenferro.jit(lambda x: tenferro.einsum("ij,jk->ik", x, x), runtime=rt)
    jit_outer = tenferro.jit(lambda x, y: tenferro.einsum("i,j->ij", x, y).sum(), runtime=rt)
    v = random_array(rng, (1000,), np.float64)
    jit_small(small)
    jit_outer(v, v)
    kept.append(lambda: jit_small(small))
    released.append(lambda: jit_outer(v, v))
    for call in kept:
        before = rt.gil_releases
        call()
        assert rt.gil_releases == before
    for call in released:
        before = rt.gil_releases
        call()
        assert rt.gil_releases == before + 1
    # Values are the same either way.
    np.testing.assert_allclose(rt.einsum("ij,jk->ik", small, small), small @ small, rtol=1e-12)


def test_tiny_calls_from_threads_next_to_a_sliced_einsum_finish(rng):
    # A tiny call holds the GIL while it runs on the runtime a sliced einsum
    # is using; the sliced einsum takes the GIL back between slices (its
    # interrupt check). Neither may wait for the other forever.
    import threading

    rt = tenferro.Runtime(threads=2)
    a = random_array(rng, (32, 32, 8), np.float64)
    b = random_array(rng, (8, 32, 32), np.float64)
    small = random_array(rng, (8, 8), np.float64)
    want = np.einsum("ijk,klm->ijlm", a, b)
    errors = []

    def sliced():
        try:
            for _ in range(3):
                got = rt.einsum("ijk,klm->ijlm", a, b, max_intermediate_bytes=1 << 16)
                np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def tiny():
        try:
            for _ in range(2000):
                rt.einsum("ij,jk->ik", small, small)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=sliced), threading.Thread(target=tiny), threading.Thread(target=tiny)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread did not finish"
    assert not errors


def test_concurrent_calls_on_one_runtime(rng):
    # Several Python threads contracting on one runtime at once (a busy
    # eager context is not shared).
    import threading

    rt = tenferro.Runtime(threads=1)
    a = random_array(rng, (64, 64), np.float64)
    want = a @ a
    errors = []

    def work():
        try:
            for _ in range(50):
                np.testing.assert_allclose(rt.einsum("ij,jk->ik", a, a), want, rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors



def test_version_is_the_builds():
    # The project version CMake configured (set by the ctest that runs pytest).
    expected = os.environ.get("TENFERRO_EXPECTED_VERSION")
    if expected is None:
        pytest.skip("run through ctest to know the configured version")
    assert tenferro.__version__ == expected
    assert "__version__" in tenferro.__all__


@pytest.mark.parametrize("runtime_call", [False, True])
def test_out_receives_the_result_like_numpy(runtime_call, rng):
    # numpy.einsum's out=: written in place (a strided view included) and
    # returned; the result casts safely to out's dtype.
    a = random_array(rng, (3, 4), np.float64)
    b = random_array(rng, (4, 5), np.float64)
    call = tenferro.Runtime(threads=1).einsum if runtime_call else tenferro.einsum
    want = np.einsum("ij,jk->ik", a, b)

    out = np.full((3, 5), np.nan)
    got = call("ij,jk->ik", a, b, out=out)
    assert got is out
    np.testing.assert_allclose(out, want, rtol=1e-12)

    wide = np.zeros((5, 3 * 2), dtype=np.complex128)
    view = wide[:, ::2].T  # non-contiguous
    assert call("ij,jk->ik", a, b, out=view) is view
    np.testing.assert_allclose(view, want, rtol=1e-12)
    assert np.all(wide[:, 1::2] == 0), "only the view's elements are written"


def test_out_may_overlap_an_operand(rng):
    a = random_array(rng, (4, 4), np.float64)
    want = a.T.copy()
    tenferro.einsum("ij->ji", a, out=a)
    np.testing.assert_array_equal(a, want)
    m = random_array(rng, (4, 4), np.float64)
    want = m @ m
    tenferro.einsum("ij,jk->ik", m, m, out=m)
    np.testing.assert_allclose(m, want, rtol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_large_out_copies_run_on_the_copy_kernel_unless_they_overlap(threads, dtype):
    # Note [einsum out=]: a result of out's dtype (here a transposed view of
    # the operand) is copied into a disjoint out by the runtime's copy kernel,
    # which releases the GIL once (counted); an overlapping or casting out
    # is copied by numpy, with the same values.
    rng = np.random.default_rng(5)
    rt = tenferro.Runtime(threads=threads)
    a = random_array(rng, (300, 200), dtype)
    for out in (np.empty((200, 300), dtype), np.empty((300, 200), dtype).T, np.empty((200, 600), dtype)[:, ::2]):
        before = rt.gil_releases
        assert rt.einsum("ij->ji", a, out=out) is out
        assert rt.gil_releases == before + 1
        np.testing.assert_array_equal(out, a.T)
    square = random_array(rng, (256, 256), dtype)
    want = square.T.copy()
    before = rt.gil_releases
    rt.einsum("ij->ji", square, out=square)
    assert rt.gil_releases == before
    np.testing.assert_array_equal(square, want)
    # An out that addresses its elements more than once (as_strided) is
    # refused by the copy kernel and written by numpy's copy, as before.
    got_buf, want_buf = np.zeros(300 * 200 + 1, dtype), np.zeros(300 * 200 + 1, dtype)
    item = got_buf.itemsize
    got = np.lib.stride_tricks.as_strided(got_buf, (200, 300), (item, item))
    want = np.lib.stride_tricks.as_strided(want_buf, (200, 300), (item, item))
    assert rt.einsum("ij->ji", a, out=got) is got
    np.copyto(want, a.T)
    np.testing.assert_array_equal(got_buf, want_buf)
    wider = np.empty((200, 300), np.complex128)
    if dtype != np.complex128:
        before = rt.gil_releases
        rt.einsum("ij->ji", a, out=wider)
        assert rt.gil_releases == before
        np.testing.assert_array_equal(wider, a.T)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_out_takes_the_result_in_place_when_it_can(threads, dtype):
    # Note [einsum out= in place]: an out of the result's dtype that shares
    # no memory with the operands is written by the contraction itself: one
    # GIL release (the compute-then-copy path releases it twice, once more
    # for the copy kernel), whatever out's layout.
    rng = np.random.default_rng(6)
    rt = tenferro.Runtime(threads=threads)
    a, b = random_array(rng, (150, 120), dtype), random_array(rng, (120, 130), dtype)
    want = np.einsum("ij,jk->ik", a, b)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    outs = (np.empty((150, 130), dtype), np.empty((150, 130), dtype, order="F"),
            np.empty((150, 260), dtype)[:, ::2], np.empty((130, 150), dtype).T)
    for out in outs:
        before = rt.gil_releases
        assert rt.einsum("ij,jk->ik", a, b, out=out) is out
        assert rt.gil_releases == before + 1
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    # An out that is an operand: computed first, then copied (numpy's values).
    square = random_array(rng, (130, 130), dtype)
    want = square @ square
    assert rt.einsum("ij,jk->ik", square, square, out=square) is square
    np.testing.assert_allclose(square, want, rtol=tol, atol=tol)
    # A wider out dtype and a broadcast operand take the general path, with
    # numpy's values.
    wide = np.empty((150, 130), np.complex128 if dtype == np.float32 else np.complex64)
    rt.einsum("ij,jk->ik", a, b, out=wide, casting="unsafe" if dtype == np.complex128 else "safe")
    np.testing.assert_allclose(wide, np.einsum("ij,jk->ik", a, b), rtol=1e-4, atol=1e-4)
    row = np.broadcast_to(a[:1], (150, 120))
    out = np.empty((150, 130), dtype)
    assert rt.einsum("ij,jk->ik", row, b, out=out) is out
    np.testing.assert_allclose(out, row @ b, rtol=tol, atol=tol)


# --- max_intermediate_bytes= (Note [Sliced einsum in Python]) -------------

SLICED_EQ = "ab,bc,cd,de->ae"
SLICED_SHAPES = [(40, 30), (30, 50), (50, 20), (20, 40)]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_sliced_einsum_matches_numpy(dtype, threads):
    rng = np.random.default_rng(3)
    ops = [(rng.standard_normal(s) * 4).astype(dtype) for s in SLICED_SHAPES]
    want = np.einsum(SLICED_EQ, *ops)
    bound = 6000
    _, info = tenferro.contract_path(SLICED_EQ, *ops, max_intermediate_bytes=bound)
    assert info.slices > 1 and (info.sliced_labels or info.ranges > 1)
    assert info.slice_largest_intermediate * np.dtype(dtype).itemsize <= bound
    assert info.largest_intermediate * np.dtype(dtype).itemsize > bound  # slicing was needed
    got = tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=bound, runtime=tenferro.Runtime(threads=threads))
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.issubdtype(dtype, np.integer):
        assert np.array_equal(got, want)
    else:
        tol = 1e-4 if dtype == np.float32 else 1e-10
        assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_a_bound_below_the_peak_cuts_a_label_into_ranges():
    # Note [Range chunks]: a chain of large extents under its peak / 1.5 is
    # cut into a few ranges of one label (index slicing would fix a label
    # of extent 102..511 one value at a time), within the bound, and gives
    # numpy's result; an output label's ranges fill their part of it.
    rng = np.random.default_rng(5)
    eq = "ab,bc,cd,de,ef->af"
    ops = [rng.standard_normal(s) for s in [(303, 281), (281, 511), (511, 205), (205, 484), (484, 102)]]
    _, unsliced = tenferro.contract_path(eq, *ops)
    bound = unsliced.largest_intermediate * 8 / 1.5
    _, info = tenferro.contract_path(eq, *ops, max_intermediate_bytes=bound)
    assert info.range_label is not None and 2 <= info.ranges <= 4
    assert info.slice_largest_intermediate * 8 <= bound
    assert info.slicing_overhead < 1.5
    assert unsliced.range_label is None and unsliced.ranges == 1
    want = np.einsum(eq, *ops, optimize=True)
    for threads in (1, 2):
        got = tenferro.einsum(eq, *ops, max_intermediate_bytes=bound, runtime=tenferro.Runtime(threads=threads))
        assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def test_sliced_einsum_takes_the_other_keywords():
    rng = np.random.default_rng(4)
    ops = [rng.standard_normal(s) for s in SLICED_SHAPES]
    out = np.empty((40, 40), np.complex128)
    res = tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=3000, out=out, optimize="optimal")
    assert res is out
    np.testing.assert_allclose(out.real, np.einsum(SLICED_EQ, *ops), rtol=1e-10)
    f = tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=3000.0, order="F")
    assert f.flags.f_contiguous


def test_contract_path_bound_counts_the_arrays_element_size():
    ops = [np.ones(s, np.complex128) for s in SLICED_SHAPES]
    _, wide = tenferro.contract_path(SLICED_EQ, *ops, max_intermediate_bytes=16000)
    _, narrow = tenferro.contract_path(SLICED_EQ, *[s for s in SLICED_SHAPES], max_intermediate_bytes=16000)
    assert wide.slice_largest_intermediate * 16 <= 16000
    assert narrow.slice_largest_intermediate * 8 <= 16000
    assert wide.slice_largest_intermediate < narrow.slice_largest_intermediate
    _, none = tenferro.contract_path(SLICED_EQ, *ops)
    assert none.slices == 1 and none.sliced_labels == [] and none.slicing_overhead == 1.0
    # An impossible bound is named in the caller's bytes, as einsum names it
    # (contract_path had said 6 bytes for 3 of float32).
    f32 = [np.ones(s, np.float32) for s in SLICED_SHAPES]
    for call in (tenferro.contract_path, tenferro.einsum):
        with pytest.raises(tenferro.ResourceExhaustedError, match="fit 3 bytes; found 4 bytes"):
            call(SLICED_EQ, *f32, max_intermediate_bytes=3)


def test_a_view_of_one_operand_is_never_sliced():
    # einsum returns a view for one operand without a summed label, so no
    # bound applies; contract_path says so (it had reported 4,000,000
    # slices, or an error for a bound below one element).
    a = np.ones((200, 200))
    for eq in ("ab->ba", "ii->i", "a...->...a"):
        _, info = tenferro.contract_path(eq, a, max_intermediate_bytes=4)
        assert info.slices == 1 and info.ranges == 1 and info.sliced_labels == [], eq
        assert tenferro.einsum(eq, a, max_intermediate_bytes=4).shape == np.einsum(eq, a).shape
    with pytest.raises(tenferro.ResourceExhaustedError):  # a sum: sliced, and 4 bytes cannot hold a float64
        tenferro.contract_path("ab->", a, max_intermediate_bytes=4)


def test_the_bound_may_be_a_numpy_scalar():
    ops = [np.ones(s) for s in SLICED_SHAPES]
    want = np.einsum(SLICED_EQ, *ops)
    for bound in (np.int64(6000), np.int32(6000), np.float64(6000.0), np.float32(6000.0), np.uint16(6000)):
        np.testing.assert_allclose(tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=bound), want)
        assert tenferro.contract_path(SLICED_EQ, *ops, max_intermediate_bytes=bound)[1].slices > 1
    for bad in (True, np.bool_(True), "6000", 6000j, np.complex128(6000)):
        with pytest.raises(TypeError, match="number of bytes"):
            tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=bad)


def test_sliced_einsum_errors():
    ops = [np.ones(s) for s in SLICED_SHAPES]
    with pytest.raises(tenferro.ResourceExhaustedError, match="fit 4 bytes"):
        tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=4)
    with pytest.raises(tenferro.ResourceExhaustedError, match="fit 4 bytes"):
        tenferro.contract_path(SLICED_EQ, *ops, max_intermediate_bytes=4)
    for bad in (-1, 0, float("nan")):
        with pytest.raises(tenferro.InvalidArgumentError, match="positive number of bytes"):
            tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=bad)
    for bad in ("1e6", True, [1]):
        with pytest.raises(TypeError, match="number of bytes"):
            tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=bad)

    def loss(a):
        return tenferro.einsum("ab,bc->", a, ops[1], max_intermediate_bytes=1000)

    with pytest.raises(tenferro.InvalidArgumentError, match="max_intermediate_bytes"):
        tenferro.grad(loss)(ops[0])


def test_sliced_einsum_plans_once_per_signature():
    rt = tenferro.Runtime(threads=1)
    rng = np.random.default_rng(5)
    ops = [rng.standard_normal(s) for s in SLICED_SHAPES]
    want = np.einsum(SLICED_EQ, *ops)
    for _ in range(3):
        np.testing.assert_allclose(tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=4000, runtime=rt), want,
                                   rtol=1e-10)
    assert rt.cached_sliced_plans == 1
    tenferro.einsum(SLICED_EQ, *ops, max_intermediate_bytes=8000, runtime=rt)  # another bound
    tenferro.einsum(SLICED_EQ, *[o.astype(np.float32) for o in ops], max_intermediate_bytes=4000, runtime=rt)
    assert rt.cached_sliced_plans == 3
    for n in range(2, 30):  # bounded
        tenferro.einsum("ab,bc->ac", np.ones((n, 3)), np.ones((3, n)), max_intermediate_bytes=64, runtime=rt)
    assert rt.cached_sliced_plans == 16
    rt.clear_caches()
    assert rt.cached_sliced_plans == 0


@pytest.mark.parametrize("domain", ["managed", None])
def test_clear_caches_returns_the_memory_pools_blocks(domain):
    # Freed results stay in the runtime's pool for reuse (bounded); clear_caches()
    # hands them back to the system, as a user freeing memory expects. A
    # one-thread runtime without a domain has a pool of its own (Note
    # [Calling-thread pool]), which is counted and emptied too.
    rt = tenferro.Runtime(threads=1, domain=domain)
    results = [rt.einsum("ij,jk->ik", np.ones((n, 8)), np.ones((8, n))) for n in (1200, 900)]
    del results
    assert rt.pooled_bytes >= 900 * 900 * 8
    rt.clear_caches()
    assert rt.pooled_bytes == 0
    np.testing.assert_allclose(rt.einsum("ij,jk->ik", np.ones((3, 2)), np.ones((2, 3))), np.full((3, 3), 2.0))


def test_clear_caches_drops_the_engines_plans_and_workspaces():
    # cache_report() shows the engines' caches; clear_caches() empties the
    # einsum plans, the FFT plans and the workspaces they keep.
    rt = tenferro.Runtime(threads=1)
    for n in range(2, 12):
        rt.einsum("ij,jk,kl->il", np.ones((n, 40)), np.ones((40, 50)), np.ones((50, n)))
        tenferro.fft.fft(np.ones(100 + n), runtime=rt)
    report = rt.cache_report()
    assert report["extensions"]["tenferro.einsum"]["entries"] >= 10
    assert report["extensions"]["tenferro.fft"]["entries"] >= 10
    assert report["extensions"]["tenferro.einsum"]["bytes"] > 0
    rt.clear_caches()
    report = rt.cache_report()
    for family in ("tenferro.einsum", "tenferro.fft", "tenferro.linalg"):
        assert report["extensions"][family]["entries"] == 0 and report["extensions"][family]["bytes"] == 0, family
    assert report["prepared_plans"]["entries"] == 0
    np.testing.assert_allclose(tenferro.fft.fft(np.ones(4), runtime=rt), [4, 0, 0, 0])


class _Stop(Exception):
    pass


@pytest.mark.parametrize("threads", [1, None])
def test_a_signal_handler_interrupts_a_sliced_einsum(threads):
    # Note [Interrupting a sliced einsum]: the handler's exception arrives
    # between slices, not when the (here many seconds long) run ends.
    import signal
    import time

    def handler(*_):
        raise _Stop

    previous = signal.signal(signal.SIGALRM, handler)
    b = np.random.default_rng(1).random((2000, 2000))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        start = time.perf_counter()
        with pytest.raises(_Stop):  # uninterrupted: 10 s or more on the 2-core VM
            tenferro.einsum("ij,jk,kl->il", b, b, b, max_intermediate_bytes=8 * 2000 * 100, threads=threads)
        assert time.perf_counter() - start < 5.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The runtime is usable afterwards.
    np.testing.assert_allclose(tenferro.einsum("ij,jk->ik", b[:4, :4], b[:4, :4], threads=threads),
                               b[:4, :4] @ b[:4, :4])


def test_more_threads_than_cpus_warns_and_uses_the_allowed_cpus():
    import os

    allowed = len(os.sched_getaffinity(0))
    with pytest.warns(RuntimeWarning, match=f"threads={allowed + 3} but this process may use {allowed} CPU"):
        rt = tenferro.Runtime(threads=allowed + 3)
    assert rt.threads == allowed
    np.testing.assert_allclose(rt.einsum("ij,jk->ik", np.ones((2, 2)), np.ones((2, 2))), np.full((2, 2), 2.0))
    with pytest.warns(RuntimeWarning):
        got = tenferro.einsum("i,i->", np.ones(3), np.ones(3), threads=allowed + 5)
    assert float(got) == 3.0


def test_the_default_runtime_reads_the_thread_variables():
    # TENFERRO_NUM_THREADS, else OMP_NUM_THREADS (set to 1 by MPI and
    # multiprocessing setups); capped to the allowed CPUs; junk ignored.
    import os
    import subprocess
    import sys

    allowed = len(os.sched_getaffinity(0))
    code = "import tenferro; print(tenferro.default_runtime().threads)"
    cases = [({"OMP_NUM_THREADS": "1"}, 1), ({"OMP_NUM_THREADS": "999"}, allowed),
             ({"TENFERRO_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"}, 1), ({"OMP_NUM_THREADS": "many"}, allowed),
             ({}, allowed)]
    for extra, want in cases:
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "TENFERRO_NUM_THREADS")}
        env.update(extra)
        out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=env,
                             capture_output=True, text=True, check=True).stdout
        assert int(out) == want, (extra, out)


def test_a_bad_tenferro_num_threads_warns():
    # Note [Thread variables and warnings]: tenferro's own variable warns
    # when it is not a positive integer (then OMP_NUM_THREADS, else every
    # CPU) and when it exceeds the allowed CPUs (capped), as
    # Runtime(threads=n) does; OMP_NUM_THREADS stays silent (above).
    import os
    import subprocess
    import sys

    allowed = len(os.sched_getaffinity(0))
    code = ("import warnings, tenferro\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    threads = tenferro.default_runtime().threads\n"
            "print(threads)\n"
            "for w in caught: print(w.category.__name__, str(w.message))\n")
    cases = [({"TENFERRO_NUM_THREADS": "abc"}, allowed, "TENFERRO_NUM_THREADS is 'abc'; expected a positive integer"),
             ({"TENFERRO_NUM_THREADS": "0"}, allowed, "TENFERRO_NUM_THREADS is '0'; expected a positive integer"),
             ({"TENFERRO_NUM_THREADS": "-3", "OMP_NUM_THREADS": "1"}, 1,
              "TENFERRO_NUM_THREADS is '-3'; expected a positive integer"),
             ({"TENFERRO_NUM_THREADS": "4x"}, allowed, "TENFERRO_NUM_THREADS is '4x'"),
             ({"TENFERRO_NUM_THREADS": str(allowed + 62)}, allowed,
              f"TENFERRO_NUM_THREADS={allowed + 62} but this process may use {allowed} CPU"),
             ({"TENFERRO_NUM_THREADS": "1"}, 1, None), ({"TENFERRO_NUM_THREADS": ""}, allowed, None)]
    for extra, want, warning in cases:
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "TENFERRO_NUM_THREADS")}
        env.update(extra)
        lines = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               check=True).stdout.splitlines()
        assert int(lines[0]) == want, (extra, lines)
        if warning is None:
            assert lines[1:] == [], (extra, lines)
        else:
            assert len(lines) == 2 and lines[1].startswith("RuntimeWarning ") and warning in lines[1], (extra, lines)


def test_full_contractions_are_numpy_scalars_as_in_numpy():
    a, m = np.arange(3.0), np.eye(3, dtype=np.complex64)
    for got, want in [(tenferro.einsum("i,i->", a, a), np.einsum("i,i->", a, a)),
                      (tenferro.einsum("ii", m), np.einsum("ii", m)),
                      (tenferro.einsum(a, [0], a, [0], []), np.einsum(a, [0], a, [0], [])),
                      (tenferro.linalg.matmul(a, a), np.matmul(a, a)),
                      (tenferro.linalg.tensordot(a, a, axes=1), np.tensordot(a, a, 1))]:
        assert type(got) is type(want) and got.dtype == want.dtype and got == want
    out = np.zeros(())
    assert tenferro.einsum("i,i->", a, a, out=out) is out and out == 5.0


def test_sliced_einsum_drops_broadcast_axes_as_the_plain_call_does():
    # The edge audit: max_intermediate_bytes= skipped Note [Broadcast
    # operands], contracting broadcast operands at their logical size (28.7 s
    # for a 4x4 result). With the rewrite the sliced plan is that of the
    # small einsum "i,k->ik" whatever the broadcast extent n, so one plan
    # serves every n (without it, one plan per n).
    rt = tenferro.Runtime(threads=1)
    x, y = np.arange(1.0, 5.0).reshape(4, 1), np.arange(2.0, 6.0).reshape(1, 4)
    for plans, limit in enumerate(({"max_intermediate_bytes": 10**6}, {"memory_limit": 10**5}), 1):
        for n in (1000, 2000, 3000):
            a, b = np.broadcast_to(x, (4, n)), np.broadcast_to(y, (n, 4))
            got = tenferro.einsum("ij,jk->ik", a, b, runtime=rt, **limit)
            np.testing.assert_allclose(got, np.einsum("ij,jk->ik", a, b), rtol=1e-12)
        assert rt.cached_sliced_plans == plans
    # A broadcast label kept in the output, and an integer scale.
    c = np.broadcast_to(np.arange(3).reshape(3, 1), (3, 5))
    np.testing.assert_array_equal(tenferro.einsum("ij,jk->ijk", c, np.ones((5, 2), np.int64), runtime=rt,
                                                  max_intermediate_bytes=10**6),
                                  np.einsum("ij,jk->ijk", c, np.ones((5, 2), np.int64)))


def test_results_past_numpy_rank_are_refused_before_any_work():
    # The edge audit: 34 output axes were computed in full, then numpy's
    # untyped ValueError refused the result.
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    ops = [np.ones((1, 2))] * 17
    subscripts = ",".join(letters[2 * i:2 * i + 2] for i in range(17))
    with pytest.raises(tenferro.InvalidArgumentError, match="expected a result of at most 32 axes .numpy's limit., "
                                                            "found 34"):
        tenferro.einsum(subscripts, *ops)
    # 32 axes, and many operand axes summed away, are fine.
    assert tenferro.einsum(",".join(letters[2 * i:2 * i + 2] for i in range(16)), *ops[:16]).ndim == 32
    assert tenferro.einsum(subscripts + "->ab", *ops).shape == (1, 2)


def test_subscript_text_errors_show_what_was_written():
    a, b = np.ones((3, 4)), np.ones((4, 5))
    with pytest.raises(tenferro.InvalidArgumentError, match=r"operand 0 has the control character U\+0000 at byte 1"):
        tenferro.einsum("i\x00,jk->ik", a, b)
    for call in (lambda s: tenferro.einsum(s, a, b), lambda s: tenferro.contract_path(s, a, b),
                 lambda s: tenferro.contract_expression(s, a.shape, b.shape),
                 lambda s: tenferro.grad(lambda x: tenferro.einsum(s, x, b).sum())(a)):
        with pytest.raises(tenferro.InvalidArgumentError, match=r"found the lone surrogate U\+D800 at index 0"):
            call("\ud800j,jk->\ud800k")
    # Any non-ASCII character is a label (Note [Einsum notation]: no Unicode
    # tables), as opt_einsum's generated symbols are; a combining mark too.
    np.testing.assert_allclose(tenferro.einsum("e\u0301j,jk->e\u0301k", np.ones((2, 3, 4)), b),
                               np.full((2, 3, 5), 4.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_outer_free_labels_run_as_broadcast_batches_in_every_layout(dtype):
    # Note [Broadcast batch labels]: a matrix applied to a batch (numpy's
    # matmul broadcasting) and its relatives run as batches of products with
    # stride-0 operands; F-ordered, reversed and broadcast inputs take the
    # composite's path with the same plan.
    rng = np.random.default_rng(3)
    cases = [("ij,bjk->bik", (5, 4), (7, 4, 3)), ("ij,jkl->kil", (6, 4), (4, 5, 3)),
             ("bij,bjkl->bkil", (2, 5, 4), (2, 4, 3, 6)), ("bij,jk->bki", (7, 5, 4), (4, 3)),
             ("ij,bcjk->bcik", (5, 4), (2, 3, 4, 3))]
    layouts = [lambda x: x, np.asfortranarray, lambda x: np.ascontiguousarray(x[::-1])[::-1]]
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    for subscripts, sa, sb in cases:
        a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
        for la in layouts:
            for lb in layouts:
                x, y = la(a), lb(b)
                want = np.einsum(subscripts, x, y)
                for threads in (1, 2):
                    np.testing.assert_allclose(tenferro.einsum(subscripts, x, y, threads=threads), want, rtol=tol,
                                               atol=tol, err_msg=subscripts)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((7, 4, 3))
    np.testing.assert_allclose(tenferro.einsum("bij,bjk->bik", np.broadcast_to(a, (7, 5, 4)), b), a @ b, rtol=1e-12)
