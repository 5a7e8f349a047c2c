"""tenferro.jit: a recording per argument signature, replayed as a program
(Note [Jit signatures], Note [Jit recordings], Note [Jit fast path])."""

import threading
import warnings

import numpy as np
import pytest

import tenferro

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


def test_fast_path_is_taken_for_positional_arrays():
    jitted = tenferro.jit(lambda x, y: x * y + 1.0)
    x, y = RNG.random((3, 2)), RNG.random((3, 2))
    jitted(x, y)
    for _ in range(5):
        jitted(x, y)
    assert jitted._hits == 5  # dispatched in C++ (Note [Jit fast path])
    np.testing.assert_allclose(jitted(x, y=y), x * y + 1.0)  # a keyword: the Python layer, same signature
    assert jitted._hits == 5
    assert jitted.cache_info()["recordings"] == 2  # the keyword call is its own signature


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

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors

    class Layer:
        def __init__(self, w):
            self.w = w

        @tenferro.jit
        def __call__(self, x):
            return x @ self.w

    layer = Layer(np.eye(3) * 2)
    np.testing.assert_allclose(layer(np.ones((2, 3))), 2.0)
    assert Layer.__call__.__name__ == "__call__"


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
