"""tenferro.jit: a recording per argument signature, replayed as a program
(Note [Jit signatures], Note [Jit recordings], Note [Jit fast path])."""

import warnings

import numpy as np
import pytest

import tenferro
from conftest import run_threads

RNG = np.random.default_rng(7)


def _mlp(x, w, b):
    h = np.tanh(x @ w + b)
    return (h * h).sum(axis=1) - np.where(x[:, 0] > 0, 1.0, -1.0)


FUNCTIONS = {
    "mlp": (_mlp, lambda: (RNG.standard_normal((6, 5)), RNG.standard_normal((5, 4)), RNG.standard_normal(4))),
    "einsum": (lambda a, b, c: tenferro.einsum("ij,jk,kl->il", a, b, c) * 2.0,
               lambda: (RNG.random((3, 4)), RNG.random((4, 5)), RNG.random((5, 2)))),
    "reductions": (lambda x: (x.mean(axis=0), np.max(x, axis=1), x.sum(), np.cumsum(x, axis=1)),
                   lambda: (RNG.random((4, 6)),)),
    "indexing": (lambda x: (x[1:, ::2].T, x[..., None].reshape(-1), np.concatenate([x, -x], axis=0)),
                 lambda: (RNG.random((4, 6)),)),
    "comparisons": (lambda x, y: (np.where(x >= y, x, y), np.where(x == 0.5, 1.0, 0.0), np.maximum(x, 0.25),
                                  np.where(x != y, x - y, 2.0)),
                    lambda: (RNG.random((3, 3)), RNG.random((3, 3)))),
    "linalg": (lambda a, b: (np.linalg.solve(a, b), np.linalg.det(a), tenferro.linalg.svd(a, compute_uv=False)),
               lambda: (RNG.random((4, 4)) + 4 * np.eye(4), RNG.random((4, 2)))),
    "fft": (lambda x: np.abs(np.fft.rfft(x, axis=-1)) ** 2, lambda: (RNG.random((3, 16)),)),
    "complex": (lambda z: (z * z.conj()).real + np.exp(1j * z).imag,
                lambda: (RNG.random(5) + 1j * RNG.random(5),)),
    "float32": (lambda x: np.sin(x) * 3 + x @ x.T, lambda: (RNG.random((4, 4)).astype(np.float32),)),
}


def _close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5 if want.dtype in (np.float32, np.complex64) else 1e-10,
                               atol=1e-6)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_replayed_recordings_compute_the_function_on_new_values(name):
    fun, make = FUNCTIONS[name]
    jitted = tenferro.jit(fun)
    first = make()
    _close(jitted(*first), fun(*first))
    for _ in range(3):  # new values: the program computes with them, not with the recorded ones
        args = make()
        _close(jitted(*args), fun(*args))
    info = jitted.cache_info()
    assert info["recordings"] == 1 and info["hits"] == 3 and info["eager_calls"] == 0, info
    assert info["signatures"] == 1


def test_fast_path_is_taken_for_positional_and_keyword_arrays():
    jitted = tenferro.jit(lambda x, y: x * y + 1.0)
    x, y = RNG.random((3, 2)), RNG.random((3, 2))
    jitted(x, y)
    for _ in range(5):
        jitted(x, y)
    assert jitted._hits == 5  # dispatched in C++ (Note [Jit fast path])
    np.testing.assert_allclose(jitted(x, y=y), x * y + 1.0)  # a keyword: its own signature, recorded
    assert jitted._hits == 5
    assert jitted.cache_info()["recordings"] == 2
    for _ in range(3):  # keyword arrays are matched in C++ too, by name and in the caller's order
        y2 = RNG.random((3, 2))
        np.testing.assert_allclose(jitted(x, y=y2), x * y2 + 1.0)
    assert jitted._hits == 8
    np.testing.assert_allclose(jitted(y=y, x=x), x * y + 1.0)  # another order: another signature
    np.testing.assert_allclose(jitted(y=y2, x=x), x * y2 + 1.0)
    assert jitted._hits == 9 and jitted.cache_info()["recordings"] == 3
    assert jitted(x, y=[[1.0, 2.0]] * 3).shape == (3, 2)  # a list: the Python layer
    assert jitted._hits == 9
    # plain values are matched in C++ by value (floats by their bits, bool apart from int)
    scaled = tenferro.jit(lambda x, s, k, flag, name=None: x * s + k if flag and name is None else x - s)
    cases = [(2.0, 1, True), (2.0, 1, True), (-0.0, 1, True), (0.0, 1, True), (2.0, True, True), (2.0, 1, False),
             (0.5, 1, True), (2.0, 1, True)]
    for s, k, flag in cases:
        np.testing.assert_allclose(scaled(x, s, k, flag), x * s + k if flag else x - s)
    info = scaled.cache_info()
    assert info["recordings"] == 6 and scaled._hits == 2, (info, scaled._hits)  # -0.0, 0.0, True, 1 all distinct
    np.testing.assert_allclose(scaled(x, 2.0, 1, True, name="a"), x - 2.0)
    np.testing.assert_allclose(scaled(x, 2.0, 1, True, name="a"), x - 2.0)
    assert scaled._hits == 3


def test_signatures_shapes_dtypes_and_static_values():
    calls = []

    def fun(x, scale, mode="sum"):
        calls.append(1)
        return x.sum() * scale if mode == "sum" else x.mean() * scale

    jitted = tenferro.jit(fun)
    x = RNG.random(4)
    assert np.isclose(jitted(x, 2.0), x.sum() * 2)
    assert np.isclose(jitted(x, 2.0), x.sum() * 2)
    assert len(calls) == 1
    assert np.isclose(jitted(x, 3.0), x.sum() * 3)  # a Python number is static: recorded again
    assert np.isclose(jitted(x, 3.0, mode="mean"), x.mean() * 3)
    assert len(calls) == 3
    y = RNG.random(5)
    assert np.isclose(jitted(y, 1.0), y.sum())  # a new shape: recorded again
    assert len(calls) == 4
    x32 = x.astype(np.float32)
    out = jitted(x32, 2.0)
    assert out.dtype == np.float32 and np.isclose(out, x32.sum() * 2, rtol=1e-6)
    info = jitted.cache_info()
    assert info["signatures"] == len(calls) and info["eager_calls"] == 0, info
    assert isinstance(jitted(x, 2.0), np.float64)  # 0-d results are numpy scalars, as numpy's reductions


def test_static_argnums_and_argnames():
    jitted = tenferro.jit(lambda x, axis, keep=False: x.sum(axis=axis, keepdims=keep), static_argnums=1,
                          static_argnames="keep")
    x = RNG.random((3, 4))
    np.testing.assert_allclose(jitted(x, 0), x.sum(axis=0))
    np.testing.assert_allclose(jitted(x, 1, keep=True), x.sum(axis=1, keepdims=True))
    with pytest.raises(TypeError, match="static argument 1 must be hashable"):
        jitted(x, [0])


def test_containers_in_and_out():
    def fun(params, x):
        y = np.tanh(x @ params["w"] + params["b"])
        return {"y": y, "norm": (y * y).sum(), "const": np.arange(3), "tag": "layer"}, [y.T]

    jitted = tenferro.jit(fun)
    for _ in range(3):
        params = {"w": RNG.random((4, 3)), "b": RNG.random(3)}
        x = RNG.random((2, 4))
        got, want = jitted(params, x), fun(params, x)
        assert got[0]["tag"] == "layer"
        np.testing.assert_array_equal(got[0]["const"], np.arange(3))
        for k in ("y", "norm"):
            np.testing.assert_allclose(got[0][k], want[0][k])
        np.testing.assert_allclose(got[1][0], want[1][0])
    assert jitted.cache_info()["recordings"] == 1
    got[0]["const"][0] = 99  # a constant output is a fresh array on every call
    assert jitted(params, x)[0]["const"][0] == 0


def test_closed_over_arrays_are_recorded_by_value():
    w = np.ones(3)
    jitted = tenferro.jit(lambda x: x * w)
    np.testing.assert_allclose(jitted(np.full(3, 2.0)), 2.0)
    w[:] = 5.0  # as jax.jit: the recording keeps the value it saw
    np.testing.assert_allclose(jitted(np.full(3, 2.0)), 2.0)
    returned = tenferro.jit(lambda x: (x + 1.0, w))
    _, out_w = returned(np.zeros(3))
    out_w[:] = -1.0  # writing into an output does not change the recorded constant
    np.testing.assert_allclose(returned(np.zeros(3))[1], 5.0)


def test_value_reads_and_unrecorded_operations_run_eagerly():
    def branchy(x):
        if x.sum() > 0:  # control flow on a value: the recording cannot be replayed
            return x * 2.0
        return x - 1.0

    jitted = tenferro.jit(branchy)
    with pytest.warns(RuntimeWarning, match="reads a traced value"):
        np.testing.assert_allclose(jitted(np.ones(3)), 2.0)
    np.testing.assert_allclose(jitted(-np.ones(3)), -2.0)  # the other branch: eager, right
    info = jitted.cache_info()
    assert info["eager_signatures"] == 1 and info["eager_calls"] == 1 and info["hits"] == 0, info

    unrecorded = tenferro.jit(lambda x: np.sort(np.unique(x)))  # np.unique has no recording rule
    with pytest.warns(RuntimeWarning, match="UnsupportedError"):
        np.testing.assert_array_equal(unrecorded(np.array([3.0, 1.0, 3.0])), [1.0, 3.0])
    np.testing.assert_array_equal(unrecorded(np.array([2.0, 2.0, 0.0])), [0.0, 2.0])

    strings = tenferro.jit(lambda x: x.astype(str))
    with pytest.warns(RuntimeWarning, match="dtype <U"):
        assert strings(np.array(["a"]))[0] == "a"


def test_integer_and_boolean_arguments():
    jitted = tenferro.jit(lambda n, flag, x: np.where(flag, x * n, np.where(n > 2, x, -x)))
    x = RNG.random(4)
    for n, flag in ((np.int64(3), np.array([True, False, True, False])), (np.int64(1), np.zeros(4, bool))):
        np.testing.assert_allclose(jitted(np.asarray(n), flag, x), np.where(flag, x * n, np.where(n > 2, x, -x)))
    assert jitted.cache_info()["recordings"] == 1


def test_transforms_compose_with_jit():
    def loss(w, x):
        return (np.tanh(x @ w) ** 2).sum()

    w, x = RNG.random((3, 2)), RNG.random((4, 3))
    want = tenferro.grad(loss)(w, x)
    jit_of_grad = tenferro.jit(tenferro.grad(loss))
    for _ in range(2):
        np.testing.assert_allclose(jit_of_grad(w, x), want, rtol=1e-12)
    assert jit_of_grad.cache_info()["hits"] == 1
    np.testing.assert_allclose(tenferro.grad(tenferro.jit(loss))(w, x), want, rtol=1e-12)  # inlined
    hess = tenferro.jit(tenferro.hessian(lambda v: (np.sin(v) * v).sum()))
    v = RNG.random(3)
    np.testing.assert_allclose(hess(v), np.diag(2 * np.cos(v) - v * np.sin(v)), rtol=1e-12)
    np.testing.assert_allclose(hess(v + 1), np.diag(2 * np.cos(v + 1) - (v + 1) * np.sin(v + 1)), rtol=1e-12)
    inner = tenferro.jit(lambda a: a * 2.0)
    outer = tenferro.jit(lambda a: inner(a) + 1.0)
    np.testing.assert_allclose(outer(np.ones(2)), 3.0)


def test_layouts_threads_and_methods():
    jitted = tenferro.jit(lambda a, b: a @ b + 1.0)
    a, b = RNG.random((5, 5)), RNG.random((5, 5))
    np.testing.assert_allclose(jitted(a, b), a @ b + 1.0)
    np.testing.assert_allclose(jitted(a.T, b[::-1]), a.T @ b[::-1] + 1.0)  # other layouts: same recording
    np.testing.assert_allclose(jitted(np.asfortranarray(a), b), a @ b + 1.0)

    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x, y = rng.random((5, 5)), rng.random((5, 5))
            if not np.allclose(jitted(x, y), x @ y + 1.0):
                errors.append(seed)

    run_threads(worker, 4)
    assert not errors

    class Layer:
        def __init__(self, w):
            self.w = w

        @tenferro.jit(static_argnums=0)  # self keyed by its hash (identity), as jax's static arguments
        def __call__(self, x):
            return x @ self.w

        @tenferro.jit
        def apply(self, x):  # self is not a value jit can key on: such calls run eagerly
            return x @ self.w

    layer = Layer(np.eye(3) * 2)
    np.testing.assert_allclose(layer(np.ones((2, 3))), 2.0)
    np.testing.assert_allclose(layer(np.ones((2, 3))), 2.0)
    assert Layer.__call__.__name__ == "__call__" and Layer.__call__.cache_info()["hits"] == 1
    with pytest.warns(RuntimeWarning, match="argument 0 is a Layer"):
        np.testing.assert_allclose(layer.apply(np.ones((2, 3))), 2.0)
    layer.w = np.eye(3) * 5  # an eager call sees the change
    np.testing.assert_allclose(layer.apply(np.ones((2, 3))), 5.0)


def test_cache_bound_and_errors():
    jitted = tenferro.jit(lambda x: x + 1.0, cache_size=2)
    for n in (1, 2, 3):
        jitted(np.zeros(n))
    assert jitted.cache_info()["signatures"] == 2
    jitted.clear_cache()
    assert jitted.cache_info()["signatures"] == 0
    with pytest.raises(TypeError, match="expected a function"):
        tenferro.jit(3)
    with pytest.raises(ValueError, match="cache_size"):
        tenferro.jit(lambda x: x, cache_size=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(tenferro.jit(lambda x: x)(np.arange(3.0)), np.arange(3.0))


def test_equality_inside_grad_compares_values():
    # == and != on Traced values compare elementwise, as on arrays (they
    # compared identities: np.where(x == 0, ...) took the wrong branch).
    g = tenferro.grad(lambda x: np.where(x == 0, 1.0, x).sum() + np.where(x != 2, x, 0.0).sum())
    np.testing.assert_allclose(g(np.array([0.0, 2.0, 3.0])), [1.0, 1.0, 2.0])


def test_results_never_share_memory_with_arguments_or_each_other():
    jitted = tenferro.jit(lambda x: (x.copy(), np.copy(x), x.T, x.astype(x.dtype), x))
    x = np.arange(6.0).reshape(2, 3)
    for _ in range(3):  # the recording, then replays
        outs = jitted(x)
        for o in outs:
            assert not np.shares_memory(o, x)
        for i in range(len(outs)):
            for j in range(i):
                assert not np.shares_memory(outs[i], outs[j])
        outs[0][0, 0] = 99.0
        assert x[0, 0] == 0.0
    readonly = np.arange(3.0)
    readonly.flags.writeable = False
    jitted = tenferro.jit(lambda v: v.copy())
    jitted(readonly)
    out = jitted(readonly)
    out[0] = 5.0  # a copy is writable, as numpy's


def test_named_tuples_in_and_out():
    jitted = tenferro.jit(lambda h: np.linalg.eigh(h))
    for values in ([1.0, 2.0, 3.0], [5.0, 6.0, 7.0]):
        r = jitted(np.diag(values))
        assert type(r).__name__ == "EighResult" and isinstance(r.eigenvalues, np.ndarray)
        np.testing.assert_allclose(r.eigenvalues, values)
    assert jitted.cache_info()["hits"] == 1


def test_values_are_keyed_by_value_and_objects_run_eagerly():
    x = np.arange(6.0).reshape(2, 3)
    axis_sum = tenferro.jit(lambda a, axis: a.sum(axis=axis))
    np.testing.assert_allclose(axis_sum(x, np.int64(1)), [3.0, 12.0])  # numpy integers are values (static)
    np.testing.assert_allclose(axis_sum(x, np.int64(0)), [3.0, 5.0, 7.0])
    div = tenferro.jit(lambda a, c: a / c)
    assert div(np.ones(1), 0.0)[0] == np.inf and div(np.ones(1), -0.0)[0] == -np.inf  # by bits: -0.0 != 0.0
    sliced = tenferro.jit(lambda a, s: a[s] * 2.0)  # slices are values (unhashable before Python 3.12)
    np.testing.assert_allclose(sliced(np.arange(4.0), slice(0, 2)), [0.0, 2.0])
    np.testing.assert_allclose(sliced(np.arange(4.0), slice(1, None, 2)), [2.0, 6.0])
    assert sliced.cache_info()["signatures"] == 2 and sliced.cache_info()["eager_calls"] == 0
    ordered = tenferro.jit(lambda d: np.concatenate(list(d.values())))
    np.testing.assert_allclose(ordered({"b": np.ones(1), "a": np.zeros(1)}), [1.0, 0.0])  # the caller's order
    with pytest.warns(RuntimeWarning, match="ndarray subclass"):
        m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
        np.testing.assert_allclose(tenferro.jit(lambda a, b: a * b)(m, m), m * m)  # a matrix product
    torch = pytest.importorskip("torch")
    t = torch.zeros(3, dtype=torch.float64)
    as_numpy = tenferro.jit(lambda v: v + 1)
    with pytest.warns(RuntimeWarning, match="Tensor"):
        as_numpy(t)
    t.add_(1)
    assert float(as_numpy(t)[0]) == 2.0  # run eagerly: the change is seen


def test_integer_arithmetic_runs_as_numpy_does():
    jitted = tenferro.jit(lambda i, j: (i - j, i // np.maximum(j, 0)))
    i, j = np.array([2 ** 60 + 1]), np.array([2 ** 60])
    with pytest.warns(RuntimeWarning, match="arithmetic on int64"):
        d, q = jitted(i, j)
    assert d.dtype == np.int64 and d[0] == 1 and q[0] == 1
    counts = tenferro.jit(lambda x: ((x > 0) & (x < 1)).sum())  # a recorded count: int64, as numpy
    for v in (np.array([-1.0, 0.5, 0.25, 2.0]), np.array([0.1, 0.2, 3.0, 0.3])):
        got = counts(v)
        assert got == 2 + (v[0] > 0) and got.dtype == np.int64
    assert counts.cache_info()["hits"] == 1
    masked = tenferro.jit(lambda x: np.where(~(x > 0) | (x > 2), 0.0, x))
    for v in (np.array([-1.0, 1.0, 3.0]), np.array([1.5, -2.0, 0.5])):
        np.testing.assert_allclose(masked(v), np.where(~(v > 0) | (v > 2), 0.0, v))
    assert masked.cache_info()["hits"] == 1


def test_failed_first_calls_cache_nothing():
    inv = tenferro.jit(np.linalg.inv)
    with pytest.raises(np.linalg.LinAlgError):  # numpy raises too: nothing cached
        inv(np.zeros((2, 2)))
    np.testing.assert_allclose(inv(2 * np.eye(2)), 0.5 * np.eye(2))
    np.testing.assert_allclose(inv(4 * np.eye(2)), 0.25 * np.eye(2))
    info = inv.cache_info()
    assert info["signatures"] == 1 and info["hits"] == 1 and info["eager_signatures"] == 0, info
    shape = tenferro.jit(lambda a: np.tanh(a[: len(a) // 2]) + float(a[0]))  # TypeError-free, but reads a value
    with pytest.warns(RuntimeWarning, match="reads a traced value"):
        np.testing.assert_allclose(shape(np.arange(4.0)), np.tanh([0.0, 1.0]))
    fmt = tenferro.jit(lambda a: f"{a.sum():.1f}")
    with pytest.warns(RuntimeWarning):
        assert fmt(np.ones(3)) == "3.0"


def test_jit_objects_are_collected():
    import gc
    import weakref

    class Big:
        pass

    refs = []
    for _ in range(5):
        big = Big()
        big.data = np.ones(1000)
        jitted = tenferro.jit(lambda x, big=big: x * big.data[0])
        jitted(np.ones(3))
        jitted(np.ones(3))
        refs.append(weakref.ref(big))
        del big, jitted
    gc.collect()
    assert all(r() is None for r in refs)


def test_invalid_options():
    with pytest.raises(TypeError, match="runtime"):
        tenferro.jit(lambda x: x, runtime="x")
    with pytest.raises(TypeError, match="cache_size"):
        tenferro.jit(lambda x: x, cache_size="3")
    with pytest.raises(TypeError, match="static argument 'k' must be hashable"):
        tenferro.jit(lambda x, k: x, static_argnames="k")(np.ones(1), k=np.ones(2))


def _slices(fun, *args, in_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    return [fun(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, axes)]) for k in range(n)]


VMAPPED = {
    "layer": (lambda x, w: np.tanh(x @ w).sum(), (0, None), lambda: (RNG.random((5, 3, 4)), RNG.random((4, 2)))),
    "both": (lambda x, w: (x * w).sum(axis=0) / w.max(), 0, lambda: (RNG.random((4, 3, 2)), RNG.random((4, 3, 2)))),
    "einsum": (lambda a, b: tenferro.einsum("ij,jk->ik", a, b), (None, 1),
               lambda: (RNG.random((2, 3)), RNG.random((3, 6, 4)))),
    "linalg": (lambda a: (np.linalg.det(a), np.linalg.solve(a, np.ones(3))), 0,
               lambda: (RNG.random((4, 3, 3)) + 3 * np.eye(3),)),
    "fft": (lambda x: np.abs(np.fft.rfft(x)) ** 2, 0, lambda: (RNG.random((3, 8)),)),
    "indexing": (lambda x: np.concatenate([x[::-1], np.cumsum(x)[1:]]).reshape(-1, 1).T, 1,
                 lambda: (RNG.random((4, 5)),)),
    "select": (lambda x, c: np.where(x > c, x, -x), (0, None), lambda: (RNG.random((6, 3)), np.float64(0.5))),
}


@pytest.mark.parametrize("name", sorted(VMAPPED))
def test_vmap_equals_a_loop_over_examples(name):
    fun, in_axes, make = VMAPPED[name]
    mapped = tenferro.vmap(fun, in_axes=in_axes)
    for _ in range(2):
        args = make()
        got = mapped(*args)
        want = _slices(fun, *args, in_axes=in_axes)
        if isinstance(got, tuple):
            for g, w in zip(got, zip(*want)):
                np.testing.assert_allclose(g, np.stack(w), rtol=1e-10)
        else:
            np.testing.assert_allclose(got, np.stack(want), rtol=1e-10)
    assert mapped.call_counts() == {"batched": 2, "examples": 0, "chunks": 2}


def test_vmap_axes_fallbacks_and_transforms():
    x = RNG.random((3, 4))
    np.testing.assert_allclose(tenferro.vmap(lambda v: v * 2.0, out_axes=1)(x), (x * 2.0).T)
    np.testing.assert_allclose(tenferro.vmap(lambda v: np.sum(v), in_axes=1)(x), x.sum(axis=0))
    with pytest.raises(ValueError, match="different lengths"):
        tenferro.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    # a value read: every example runs as a plain call
    branchy = tenferro.vmap(lambda v: v * 2.0 if v.sum() > 2 else -v)
    np.testing.assert_allclose(branchy(x), [r * 2.0 if r.sum() > 2 else -r for r in x])
    # the scatter of a gather's pullback, its updates batched: one batched program (Note [Batched indices])
    pullback = tenferro.vmap(lambda ct, v: tenferro.vjp(lambda u: u[[0, 2, 2]], v)[1](ct)[0], in_axes=(0, None))
    rows = pullback(np.eye(3), np.arange(4.0))
    np.testing.assert_allclose(rows, [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]])
    np.testing.assert_allclose(pullback(2 * np.eye(3), np.ones(4)), 2 * rows)
    assert pullback.call_counts() == {"batched": 2, "examples": 0, "chunks": 2}
    # a Jacobian by vmap of jvp, and vmap inside grad (examples recorded one by one)
    f = lambda v: np.sin(v) * v.sum()  # noqa: E731
    v = RNG.random(3)
    jac = tenferro.vmap(lambda t: tenferro.jvp(f, (v,), (t,))[1])(np.eye(3)).T
    np.testing.assert_allclose(jac, tenferro.jacobian(f)(v), rtol=1e-12)
    g = tenferro.grad(lambda w: tenferro.vmap(lambda r: np.tanh(r @ w))(x).sum())(np.ones(4))
    np.testing.assert_allclose(g, tenferro.grad(lambda w: np.tanh(x @ w).sum())(np.ones(4)), rtol=1e-12)


def test_batched_jacobians_and_hessians_equal_the_traced_ones():
    # Note [Batched Jacobians]: the second call of a signature runs one
    # batched program; the first call for a new function takes the traced
    # path (the objects made for one function share their plans).
    def f(x, w):
        return np.tanh(w @ x) * x.sum()

    def loss(x, w):
        return (np.sin(w @ x) ** 2).sum() + (x ** 3).sum()

    cases = [  # (transform, fun, argnums, batched runs per call)
        (tenferro.jacobian, f, 0, 1),  # forward: 4 inputs, 5 outputs
        (tenferro.jacobian, lambda x, w: f(x, w)[:2], (0, 1), 1),  # reverse: 2 outputs
        (tenferro.jacobian, f, (0, 1), 1),  # reverse: 5 outputs, 24 inputs
        (tenferro.hessian, loss, 0, 1),
        (tenferro.hessian, loss, (0, 1), 2),  # one per argument
    ]
    for transform, fun, argnums, per_call in cases:
        derivative = transform(fun, argnums)
        derivative(RNG.random(4), RNG.random((5, 4)))  # records the plan
        for _ in range(2):
            x, w = RNG.random(4), RNG.random((5, 4))
            got, want = derivative(x, w), transform(lambda *a, fun=fun: fun(*a), argnums)(x, w)
            for g, e in zip(*(_leaves(v) for v in (got, want))):
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        assert _batched_of(derivative).batched_runs == 2 * per_call, transform
        assert _batched_of(transform(fun, argnums)) is _batched_of(derivative)  # shared per function


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _batched_of(derivative):
    return next(c.cell_contents for c in derivative.__closure__
                if type(c.cell_contents).__name__ == "_BatchedDerivatives")


def test_masks_inside_library_rules_are_recorded():
    # std, nanmean, nansum and sinc guard zeros and NaNs with masks of the
    # values; under jit the masks are recorded comparisons, so they replay.
    cases = [lambda x: x.std(axis=0), lambda x: np.nanmean(x, axis=0), lambda x: np.nansum(x), lambda x: np.sinc(x),
             lambda x: np.isfinite(x) & (x > 0)]
    values = [np.array([[1.0, np.nan], [3.0, 3.0]]), np.array([[0.0, 2.0], [np.nan, 5.0]]), np.ones((2, 2))]
    for fun in cases:
        jitted = tenferro.jit(fun)
        with np.errstate(invalid="ignore"):
            for v in values:
                np.testing.assert_allclose(jitted(v), fun(v), equal_nan=True)
        assert jitted.cache_info()["hits"] == 2 and jitted.cache_info()["eager_calls"] == 0
    g = tenferro.jit(tenferro.grad(lambda x: x.std()))
    np.testing.assert_allclose(g(np.ones(3)), 0.0)  # zero variance: gradient 0, as torch
    # d std / dx_i = (x_i - mean) / (n std): std of [0, 1, 2] is sqrt(2/3)
    np.testing.assert_allclose(g(np.arange(3.0)), np.array([-1.0, 0.0, 1.0]) / (3 * np.sqrt(2 / 3)), rtol=1e-12)
    assert np.isnan(tenferro.grad(lambda x: x.std())(np.array([1.0, np.nan]))).all()  # NaN stays NaN (was 0)


def test_vmap_reads_closures_afresh_and_composes():
    # Note [Vmap calls]: recorded again on every call, as jax.vmap traces.
    w = np.ones(3)
    scaled = tenferro.vmap(lambda v: v * w)
    x = RNG.random((4, 3))
    np.testing.assert_allclose(scaled(x), x)
    w[:] = 2.0
    np.testing.assert_allclose(scaled(x), 2 * x)
    # gradients, jacobians and jit through vmap, with respect to a mapped
    # argument: one batched program recorded on the enclosing tape
    rows = tenferro.vmap(lambda r: np.tanh(r).sum())
    g = tenferro.grad(lambda a: rows(a).sum())(x)
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-12)
    w = np.ones(3)
    layer = tenferro.vmap(lambda r, m: np.tanh(r @ m).sum(), in_axes=(0, None))
    np.testing.assert_allclose(tenferro.grad(lambda m: layer(x, m).sum())(np.eye(3)),
                               tenferro.grad(lambda m: np.tanh(x @ m).sum())(np.eye(3)), rtol=1e-12)
    assert rows.call_counts()["batched"] == 1 and layer.call_counts()["batched"] == 1
    J = tenferro.jacobian(tenferro.vmap(lambda r: np.sin(r) * 2.0))(x[0:2])
    np.testing.assert_allclose(J, tenferro.jacobian(lambda a: np.sin(a) * 2.0)(x[0:2]), rtol=1e-12)
    squares = tenferro.vmap(lambda r: r @ r)
    jitted = tenferro.jit(squares)
    for _ in range(2):
        x = RNG.random((4, 3))
        np.testing.assert_allclose(jitted(x), np.einsum("ij,ij->i", x, x), rtol=1e-12)
    assert jitted.cache_info()["hits"] == 1 and jitted.cache_info()["eager_calls"] == 0
    # recorded once, batched on the jit tape (no run of vmap's own: chunks 0)
    assert squares.call_counts() == {"batched": 1, "examples": 0, "chunks": 0}
    nested = tenferro.vmap(tenferro.vmap(lambda v: v * v.sum()))
    y = RNG.random((2, 3, 4))
    np.testing.assert_allclose(nested(y), y * y.sum(axis=2, keepdims=True), rtol=1e-12)


def test_vmap_edges():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    fun = tenferro.vmap(lambda p, scale=None: Pair(p.a * scale, (p.a + p.b).sum()))
    p = Pair(RNG.random((3, 2)), RNG.random((3, 2)))
    out = fun(p, scale=np.arange(3.0))  # keyword arguments are mapped over axis 0, as in jax
    assert isinstance(out, Pair)
    np.testing.assert_allclose(out.a, p.a * np.arange(3.0)[:, None])
    np.testing.assert_allclose(out.b, (p.a + p.b).sum(axis=1))
    empty = tenferro.vmap(lambda v: v * 2.0)(np.zeros((0, 4)))
    assert empty.shape == (0, 4)
    per_output = tenferro.vmap(lambda v: (v * 2.0, v.sum()), out_axes=(1, 0))(np.ones((3, 2)))
    assert per_output[0].shape == (2, 3) and per_output[1].shape == (3,)
    with pytest.raises(ValueError, match="in_axes 2 is out of range"):
        tenferro.vmap(lambda v: v, in_axes=2)(np.ones((3, 2)))
    # chunks: values of at most max_bytes per run, the same result
    chunked = tenferro.vmap(lambda v: np.tanh(np.outer(v, v)).sum(axis=0), max_bytes=4096)
    x = RNG.random((50, 8))
    np.testing.assert_allclose(chunked(x), np.stack([np.tanh(np.outer(r, r)).sum(axis=0) for r in x]), rtol=1e-12)
    counts = chunked.call_counts()  # 50 outer products of 8 x 8 take 25 KB: several chunks of <= 4 KB
    assert counts["batched"] == 1 and counts["chunks"] > 5, counts


def test_batched_jacobians_read_closures_afresh():
    W = np.eye(3)

    def g(x):
        return np.tanh(W @ x)

    J = tenferro.jacobian(g)
    x = RNG.random(3)
    for scale in (1.0, 2.0, 3.0, 4.0):  # the first call is traced, the next ones batched
        W[:] = scale * np.eye(3)
        np.testing.assert_allclose(J(x), np.diag(scale * (1 - np.tanh(scale * x) ** 2)), rtol=1e-12)
    assert _batched_of(J).batched_runs == 3


def test_derivatives_of_empty_arguments():
    J = tenferro.jacobian(lambda x, y: np.tanh(x).sum() * y, argnums=(0, 1))
    H = tenferro.hessian(lambda x: (x ** 3).sum())
    for _ in range(2):  # the traced path, then the batched one
        jx, jy = J(np.zeros(0), np.ones(2))
        assert jx.shape == (2, 0) and jy.shape == (2, 2)
        assert H(np.zeros((0, 3))).shape == (0, 3, 0, 3)


def test_keyword_arrays_in_any_order():
    jitted = tenferro.jit(lambda x, a=None, b=None: x + a * 10 + b * 100)
    mapped = tenferro.vmap(lambda x, a=None, b=None: x + a * 10 + b * 100)
    x, a, b = np.zeros(2), np.full(2, 2.0), np.ones(2)
    for _ in range(2):  # the recording, then the replay
        np.testing.assert_allclose(jitted(x, b=b, a=a), 120.0)
        np.testing.assert_allclose(jitted(x, a=a, b=b), 120.0)
    np.testing.assert_allclose(mapped(x, b=b, a=a), 120.0)
    np.testing.assert_allclose(tenferro.grad(lambda v: mapped(v, b=b, a=a).sum())(x), 1.0)


def test_collections_while_jit_objects_are_made_and_dropped():
    # The collector may visit a _Jit whose C++ object is not constructed yet
    # (an allocation inside its __init__): that crashed the interpreter.
    import gc

    threshold = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        for k in range(300):
            jitted = tenferro.jit(lambda x, k=k: x * float(k))
            assert jitted(np.ones(2))[0] == float(k)
    finally:
        gc.set_threshold(*threshold)


def test_keyword_order_is_the_callers():
    def fun(x, **kwargs):  # depends on the order of its keyword arguments, as Python allows
        first = next(iter(kwargs.values()))
        return x * first

    jitted = tenferro.jit(fun)
    x = np.ones(2)
    np.testing.assert_allclose(jitted(x, a=2.0, b=3.0), 2.0)
    np.testing.assert_allclose(jitted(x, b=3.0, a=2.0), 3.0)
    np.testing.assert_allclose(jitted(x, b=3.0, a=2.0), 3.0)


def test_one_jacobian_from_several_threads():
    A = RNG.random((4, 3))
    J = tenferro.jacobian(lambda v: np.tanh(A @ v))
    wrong = []

    def worker(k):
        rng = np.random.default_rng(k)
        for _ in range(20):
            v = rng.random(3)
            want = (1 - np.tanh(A @ v) ** 2)[:, None] * A
            if not np.allclose(J(v), want, rtol=1e-12):
                wrong.append(k)

    run_threads(worker, 4)
    assert not wrong and _batched_of(J).batched_runs > 0


def test_collections_during_the_destruction_of_a_jit_object():
    # pybind11's dealloc left a dying _Jit tracked: a collection run by a
    # __del__ of what the function closed over freed it a second time.
    import gc
    import weakref

    class Resource:
        def __del__(self):
            gc.collect()

    for _ in range(5):
        resource = Resource()
        jitted = tenferro.jit(lambda x, r=resource: np.sin(x) + 0 * len([r]))
        del resource
        jitted(np.ones(3))
        del jitted
        finalized = tenferro.jit(lambda x: np.sin(x))
        weakref.finalize(finalized, gc.collect)
        del finalized


def test_vmap_out_axes_inside_transforms():
    v = tenferro.vmap(lambda r: np.sin(r) * 2.0, out_axes=1)
    x = RNG.random((3, 3))
    want = (np.sin(x) * 2.0).T
    np.testing.assert_allclose(v(x), want)
    jitted = tenferro.jit(lambda a: v(a))
    for _ in range(2):
        np.testing.assert_allclose(jitted(x), want)
    w = RNG.random((3, 3))
    np.testing.assert_allclose(tenferro.grad(lambda a: (v(a) * w).sum())(x), 2.0 * np.cos(x) * w.T, rtol=1e-12)
    nested = tenferro.vmap(tenferro.vmap(lambda r: r * 2.0, out_axes=1))
    assert nested(RNG.random((2, 3, 4))).shape == (2, 4, 3)


def test_vmap_out_axes_none_only_for_outputs_the_examples_share():
    # jax's rule: out_axes None for an output that depends on a mapped argument is an error (here it would
    # silently be example 0's value); the flags come from the batching transform, so inside transforms too.
    x, w = RNG.random((4, 3)), RNG.random(3)
    shared = tenferro.vmap(lambda r, w: (r @ w, w * 2.0), in_axes=(0, None), out_axes=(0, None))
    got = shared(x, w)
    np.testing.assert_allclose(got[0], x @ w, rtol=1e-12)
    np.testing.assert_allclose(got[1], w * 2.0)
    varying = tenferro.vmap(lambda r, w: (r @ w, r * 2.0), in_axes=(0, None), out_axes=(0, None))
    with pytest.raises(ValueError, match="out_axes is None for an output that depends on a mapped argument"):
        varying(x, w)
    with pytest.raises(ValueError, match="out_axes is None"):
        tenferro.jit(lambda a: varying(a, w))(x)
    with pytest.raises(ValueError, match="out_axes is None"):
        tenferro.grad(lambda a: varying(a, w)[1].sum())(x)
    np.testing.assert_allclose(tenferro.grad(lambda v: shared(x, v)[1].sum())(w), np.full(3, 2.0))
    # run per example (a value read): the examples' values decide
    branchy = lambda r, w: (r.sum() if r.sum() > 0 else -r.sum(), w * 2.0)  # noqa: E731
    np.testing.assert_allclose(tenferro.vmap(branchy, in_axes=(0, None), out_axes=(0, None))(x, w)[1], w * 2.0)
    with pytest.raises(ValueError, match="out_axes is None"):
        tenferro.vmap(branchy, in_axes=(0, None), out_axes=None)(x, w)


def test_in_place_operators_under_jit_run_eagerly():
    def step(w, g):
        w -= 0.1 * g  # numpy changes the caller's array
        return w

    jitted = tenferro.jit(step)
    w = np.ones(3)
    with pytest.warns(RuntimeWarning, match="in-place operator sub="):
        jitted(w, np.ones(3))
    jitted(w, np.ones(3))
    np.testing.assert_allclose(w, 0.8)
    # inside grad an in-place operator binds a new value, as before
    np.testing.assert_allclose(tenferro.grad(lambda v: _add_in_place(v).sum())(np.ones(2)), 2.0)


def _add_in_place(v):
    h = v * 1.0
    h += v
    return h


def test_recorded_comparisons_and_integer_scans_follow_numpy():
    i32 = np.array([1, 2 ** 30, -5], np.int32)
    flags = np.array([True, False, True])
    for fun, args in [(lambda a: a > 2 ** 40, (i32,)), (lambda a: a < -(2 ** 40), (i32,)),
                      (lambda b: b == 2, (flags,)), (lambda b: b < 2, (flags,)), (lambda b: b != -1, (flags,)),
                      (lambda a: np.cumsum(a), (i32,)), (lambda a: np.prod(a), (i32,)),
                      (lambda a: np.cumprod(a), (i32,))]:
        jitted = tenferro.jit(fun)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(2):
                got, want = jitted(*args), fun(*args)
                np.testing.assert_array_equal(got, want)
                assert np.asarray(got).dtype == np.asarray(want).dtype


def test_composed_ufuncs_follow_numpy():
    x = np.array([1.0, 5.0, 2.9, -7.0, 1e200, 1e-200, np.inf, -np.inf])
    y = np.array([0.1, -0.3, 0.7, 2.0, 1e200, 1e-200, np.nan, -np.inf])
    cases = [lambda a, b: a // b, lambda a, b: np.hypot(a, b), lambda a, b: np.logaddexp(a, b),
             lambda a, b: np.cosh(np.clip(a, -710.0, 710.0)), lambda a, b: np.sinh(np.clip(a, -710.0, 710.0)),
             lambda a, b: np.log10(np.abs(a) + 1e-5), lambda a, b: np.log2(np.abs(b) + 0.5),
             lambda a, b: np.exp2(np.clip(a, -50.0, 50.0))]
    with np.errstate(all="ignore"):
        for fun in cases:
            jitted = tenferro.jit(fun)
            for _ in range(2):
                np.testing.assert_allclose(jitted(x, y), fun(x, y), rtol=1e-12, equal_nan=True)
            assert jitted.cache_info()["eager_calls"] == 0
        powers = np.array([1e-5, 1e3, 1e22, 1.0, 0.0, np.inf])
        np.testing.assert_array_equal(tenferro.jit(lambda a: np.floor(np.log10(a)))(powers),
                                      [-5.0, 3.0, 22.0, 0.0, -np.inf, np.inf])
    # gradients of the exact forms are those of the plain ones
    np.testing.assert_allclose(tenferro.grad(lambda a: np.log10(a).sum())(np.array([1.0, 10.0, 5.0])),
                               1 / (np.array([1.0, 10.0, 5.0]) * np.log(10)), rtol=1e-12)
    np.testing.assert_allclose(tenferro.grad(lambda a: (np.cosh(a) + np.sinh(a)).sum())(np.array([0.5, -1.5])),
                               np.exp([0.5, -1.5]), rtol=1e-12)


def test_batched_jacobian_follows_a_changing_output_shape():
    shape = [(2, 3)]
    J = tenferro.jacobian(lambda v: np.tanh(v).reshape(shape[0]))  # forward: 6 outputs, 6 inputs
    x = RNG.random(6)
    J(x)
    shape[0] = (3, 2)
    assert J(x).shape == (3, 2, 6) and J(x).shape == (3, 2, 6)


def test_traced_indices_are_recorded_and_checked_as_numpy_checks_them():
    # Note [Traced indices]: integer index arguments are gathers of the recording, not value reads; an index
    # out of bounds is numpy's IndexError on a replay too, and nothing is returned.
    x = RNG.random((5, 4))
    cases = {
        "rows": (lambda x, i: x[i] * 2.0, (np.array([0, 4, -1]), np.array([3, -5, 2]))),
        "scalar": (lambda x, i: x[i] * x[1, i], (np.array(-1), np.array(3))),
        "columns": (lambda x, i: x[1:, i].sum(axis=0), (np.array([[0, -4], [3, 3]]), np.array([[1, 2], [0, 0]]))),
        "pairs": (lambda x, i, j: x[i, j] + x[i, 2], (np.array([0, 4]), np.array([3, -1]), np.array([1, 1]),
                                                        np.array([-2, 0]))),
        "along": (lambda x, i: np.take_along_axis(x, i, axis=1), (np.array([[3, 0]] * 5), np.array([[-1, 1]] * 5))),
        "take": (lambda x, i: np.take(x, i, axis=1), (np.array([2, 2, 0]), np.array([-4, 3, 1]))),
    }
    for name, (fun, indices) in cases.items():
        jitted = tenferro.jit(fun)
        half = len(indices) // 2 if name == "pairs" else 1
        for k in range(2):
            idx = indices[k * half:(k + 1) * half] if name == "pairs" else indices[k:k + 1]
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no eager fallback
                np.testing.assert_array_equal(jitted(x, *idx), fun(x, *idx), err_msg=name)
        info = jitted.cache_info()
        assert info["recordings"] == 1 and info["hits"] == 1 and info["eager_calls"] == 0, (name, info)
        bad = [np.where(np.arange(np.size(i)).reshape(np.shape(i)) == 0, 9, i) for i in idx]
        with pytest.raises(IndexError, match="index 9 is out of bounds for axis . with size [45]"):
            jitted(x, *bad)
        assert jitted.cache_info()["hits"] == 2, name  # the replay ran and raised
    # several arrays around an Ellipsis, an empty remainder, and numpy's axis in the message (audit findings)
    y = RNG.random((3, 4, 2))
    for fun, idx in ((lambda y, i, j: y[i, ..., j], (np.array([0, 2]), np.array([1, -1]))),
                     (lambda y, i, j: y[i, j, :0], (np.array([0, 2]), np.array([1, 3])))):
        jitted = tenferro.jit(fun)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):
                np.testing.assert_array_equal(jitted(y, *idx), fun(y, *idx))
        assert jitted.cache_info()["hits"] == 1
    np.testing.assert_array_equal(tenferro.grad(lambda w: w[np.array([0, 2]), np.array([1, 3]), :0].sum())(y), 0)
    ellipsis = tenferro.grad(lambda w: (w[np.array([0, 2]), ..., np.array([1, 1])] ** 2).sum())(y)
    want = np.zeros_like(y)
    want[[0, 2], :, [1, 1]] = 2 * y[[0, 2], :, [1, 1]]
    np.testing.assert_allclose(ellipsis, want)
    named = tenferro.jit(lambda y, i: y[0, :, i])
    named(y, np.array([1]))
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 2 with size 2"):
        named(y, np.array([9]))
    spread = tenferro.jit(lambda y, i: y[:, None, i])
    spread(y, np.array([1]))
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 4"):
        spread(y, np.array([9]))
    low = tenferro.jit(lambda x, i: x[i])
    low(x, np.array([1]))
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        low(x, np.array([-6]))
    empty = tenferro.jit(lambda x, i: x[i])
    assert empty(x, np.zeros(0, np.int64)).shape == (0, 4)
    # a traced boolean mask: its result's shape depends on its values, so the signature runs eagerly
    masked = tenferro.jit(lambda x, m: x[m])
    with pytest.warns(RuntimeWarning, match="boolean mask"):
        np.testing.assert_array_equal(masked(x, x[:, 0] > 0.5), x[x[:, 0] > 0.5])


def test_traced_indices_under_vmap_grad_and_nested_transforms():
    x = RNG.random((5, 4))
    rows = tenferro.vmap(lambda x, i: x[i], in_axes=(None, 0))
    np.testing.assert_array_equal(rows(x, np.array([0, 3, -1])), x[[0, 3, -1]])
    picks = tenferro.vmap(lambda r, i: r[i] * r.sum())  # operand and indices batched
    idx = np.array([0, 3, 1, -2, 2])
    np.testing.assert_allclose(picks(x, idx), x[np.arange(5), idx] * x.sum(axis=1), rtol=1e-12)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        picks(x, np.array([0, 3, 1, 4, 2]))  # example 3's index, checked over the whole batch
    assert rows.call_counts()["batched"] == 1 and picks.call_counts()["batched"] == 1  # the raising call: no count
    assert picks.call_counts()["examples"] == 0
    # shared indices: their guard is broadcast over the batch (a strided output, checked too)
    cols = tenferro.vmap(lambda r, i: r[i], in_axes=(0, None))
    np.testing.assert_array_equal(cols(x, np.array([3, -1])), x[:, [3, -1]])
    # no examples: the stand-in example's indices are not checked (an empty table is fine, as in jax)
    assert rows(np.zeros((0, 4)), np.zeros((0, 3), np.int64)).shape == (0, 3, 4)

    # jit(grad): the indices are the jit recording's, guarded there; the gradient's scatter uses them
    loss = lambda w, i: (w[i] ** 2).sum() + (w[i[::-1], i] ** 3).sum()  # noqa: E731
    gj = tenferro.jit(tenferro.grad(loss))
    for i in (np.array([0, 0, 2, 3, 3]), np.array([3, -1, 1, 0, 0])):
        want = np.zeros_like(x)
        np.add.at(want, i, 2 * x[i])
        np.add.at(want, (i[::-1], i), 3 * x[i[::-1], i] ** 2)
        np.testing.assert_allclose(gj(x, i), want, rtol=1e-12)
    assert gj.cache_info()["hits"] == 1
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        gj(x, np.array([0, 7, 1, 1, 1]))
    # jit(grad(vmap)): the vmap's guards land on the gradient's tape and move to the jit recording
    gv = tenferro.jit(tenferro.grad(lambda w, k: (picks(w, k) ** 2).sum()))
    for k in (idx, idx[::-1].copy()):
        want = tenferro.grad(lambda w: ((w[np.arange(5), k] * w.sum(axis=1)) ** 2).sum())(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(gv(x, k), want, rtol=1e-12)
    assert gv.cache_info()["hits"] == 1
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 4"):
        gv(x, np.array([0, 1, 6, 2, 3]))
    # jit(vmap): the batched program's guards are guarded again on the jit tape
    jv = tenferro.jit(picks)
    np.testing.assert_allclose(jv(x, idx), x[np.arange(5), idx] * x.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(jv(x, idx[::-1].copy()), x[np.arange(5), idx[::-1]] * x.sum(axis=1), rtol=1e-12)
    assert jv.cache_info()["hits"] == 1
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 0 with size 4"):
        jv(x, np.array([0, 1, -5, 2, 3]))
    # grad of a vmapped gather (the scatter of its pullback batched too)
    g = tenferro.grad(lambda w: picks(w, idx).sum())(x)
    np.testing.assert_allclose(g, tenferro.grad(lambda w: (w[np.arange(5), idx] * w.sum(axis=1)).sum())(x),
                               rtol=1e-12)
    # a batched Jacobian of fancy indexing and sorting: one program, no example loop
    f = lambda v: np.sort(v)[::-1][[0, 1, 1]] * v[[2, 0, 1]]  # noqa: E731
    jac = tenferro.jacobian(f)
    v = RNG.random(4)
    want = tenferro.jacobian(lambda u: np.sort(u)[::-1][[0, 1, 1]] * u[[2, 0, 1]])(v)  # first call: traced rows
    for _ in range(2):
        np.testing.assert_allclose(jac(v), want, rtol=1e-12)


def test_a_warning_when_python_float_values_record_again_and_again():
    jitted = tenferro.jit(lambda x, lr: x * lr)
    x = np.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(12):
            jitted(x, 0.1 * i)
        for i in range(12):
            jitted(x, np.float64(0.1 * i))  # an argument: one recording
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "Python float arguments were recorded 8 times" in messages[0], messages
    assert jitted.cache_info()["recordings"] == 13
    static = tenferro.jit(lambda x, lr: x * lr, static_argnums=1)  # declared static: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(12):
            static(x, 0.1 * i)


def test_hypot_keeps_float32_with_a_python_float():
    # The jit audit: np.hypot(float32, 0.7) was float64 under jit, grad and
    # vmap (its branches met the weak Python float as a numpy scalar).
    x = RNG.random(3).astype(np.float32)
    for f in (lambda a: np.hypot(a, 0.7), lambda a: np.hypot(0.7, a)):
        want = f(x)
        assert want.dtype == np.float32
        jitted = tenferro.jit(f)
        for _ in range(2):  # the recording call and a replay
            got = jitted(x)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6)
        assert tenferro.value_and_grad(lambda a: f(a)[0])(x)[0].dtype == np.float32
        assert tenferro.vmap(f)(np.stack([x, x])).dtype == np.float32


def test_static_names_of_missing_parameters_are_errors():
    y = RNG.random(4)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"static_argnums 5 is out of range for <lambda>, "
                                                            r"expected -1 <= static_argnums < 1"):
        tenferro.jit(lambda a: a * 2, static_argnums=5)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"static_argnames 'zz' names no parameter of <lambda>, "
                                                            r"expected one of \['a'\]"):
        tenferro.jit(lambda a: a * 2, static_argnames="zz")
    # *args and **kwargs take any; negative numbers count from the end.
    np.testing.assert_allclose(tenferro.jit(lambda *a: a[0] * a[1], static_argnums=1)(y, 2), y * 2)
    np.testing.assert_allclose(tenferro.jit(lambda a, **k: a * k["s"], static_argnames="s")(y, s=3), y * 3)
    np.testing.assert_allclose(tenferro.jit(lambda a, s: a * s, static_argnums=-1)(y, 3), y * 3)


def test_vmap_out_axes_out_of_range_names_out_axes():
    x = RNG.random((5, 3, 4))
    f = lambda a: a.sum(axis=0)  # noqa: E731 (each example's result has 1 axis, the batch 2)
    np.testing.assert_allclose(tenferro.vmap(f, out_axes=-1)(x), x.sum(axis=1).T)
    for fun in (f, lambda a: np.sum(a, axis=0) if float(a.sum()) > -1 else a):  # batched, and example by example
        with pytest.raises(tenferro.AxisError, match=r"vmap: out_axes 5 is out of range for an output of 1 "
                                                     r"dimension and the mapped one \(expected -2 <= out_axes < 2\)"):
            tenferro.vmap(fun, out_axes=5)(x)
    with pytest.raises(ValueError, match="in_axes has 1 entry, the call has 2 positional arguments"):
        tenferro.vmap(lambda a, b: a, in_axes=(0,))(x, x)
