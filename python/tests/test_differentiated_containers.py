"""Differentiated arguments that are tuples, lists, named tuples and dicts
(Note [Differentiated containers] in tenferro/__init__.py): fun receives the
container with traced leaves and the derivatives come back in its structure,
as jax treats a pytree (the jit audit found them stacked into one array)."""

import collections
import warnings

import numpy as np
import pytest

import tenferro

Params = collections.namedtuple("Params", ["w", "b"])


def _loss(p):
    return np.sum(np.tanh(p[0] * 2.0 + p[1]) ** 2)


def _loss_grads(w, b):
    """d/dw and d/db of _loss((w, b))."""
    t = np.tanh(w * 2.0 + b)
    g = 2 * t * (1 - t**2)
    return 2.0 * g, g


def test_grad_of_tuple_list_named_tuple_and_dict_keeps_the_structure(rng):
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    gw, gb = _loss_grads(w, b)
    for params, pick in [((w, b), lambda p: p), ([w, b], lambda p: p), (Params(w, b), lambda p: p),
                         ({"w": w, "b": b}, lambda p: (p["w"], p["b"]))]:
        value, g = tenferro.value_and_grad(lambda p: _loss(pick(p)))(params)
        np.testing.assert_allclose(value, _loss((w, b)), rtol=1e-12)
        assert type(g) is type(params)
        got = pick(g)
        np.testing.assert_allclose(got[0], gw, rtol=1e-12)
        np.testing.assert_allclose(got[1], gb, rtol=1e-12)
    assert list(tenferro.grad(lambda p: _loss((p["w"], p["b"])))({"w": w, "b": b})) == ["w", "b"]


def test_fun_sees_the_container_so_values_match_the_plain_call(rng):
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    f = lambda p: np.sum((p + p)[-1])  # noqa: E731 (tuple concatenation: (w, b, w, b)[-1] is b)
    value, (gw, gb) = tenferro.value_and_grad(f)((w, b))
    assert value == f((w, b))
    np.testing.assert_array_equal(gw, np.zeros(4))
    np.testing.assert_array_equal(gb, np.ones(4))


def test_ragged_and_nested_containers_and_other_arguments(rng):
    w, b, c = rng.standard_normal((3, 2)), rng.standard_normal(3), rng.standard_normal(())
    f = lambda x, p: np.sum(x * (p[0] @ p[1][0])) + p[1][1] * x.sum()  # noqa: E731
    x = rng.standard_normal(3)
    gx, (gw, (gb, gc)) = tenferro.grad(f, argnums=(0, 1))(x, (w, [b[:2], c]))
    np.testing.assert_allclose(gx, w @ b[:2] + c, rtol=1e-12)
    np.testing.assert_allclose(gw, np.outer(x, b[:2]), rtol=1e-12)
    np.testing.assert_allclose(gb, w.T @ x, rtol=1e-12)
    np.testing.assert_allclose(gc, x.sum(), rtol=1e-12)
    # Leaves the output does not depend on get zeros; Python floats are 0-d leaves.
    g = tenferro.grad(lambda p: p[0] * 3.0)([2.0, 5.0])
    assert isinstance(g, list) and float(g[0]) == 3.0 and float(g[1]) == 0.0


def test_errors_name_the_leaf(rng):
    with pytest.raises(tenferro.DTypeError, match=r"argument 0\['n'\]: expected a float32"):
        tenferro.grad(lambda p: np.sum(p["x"]))({"x": np.ones(2), "n": np.arange(2)})
    for transform in (tenferro.jacobian, tenferro.hessian):
        with pytest.raises(tenferro.InvalidArgumentError, match="argument 0: expected an array to differentiate, "
                                                                 "found a tuple of 2 values"):
            transform(lambda p: np.sum(p[0] * p[1]))((np.ones(2), np.ones(2)))


def test_vjp_jvp_and_hvp_of_containers(rng):
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    f = lambda p, s: np.tanh(p["w"] * s + p[("b")])  # noqa: E731
    s = rng.standard_normal(4)
    out, pullback = tenferro.vjp(f, {"w": w, "b": b}, s)
    ct = rng.standard_normal(4)
    d = 1 - np.tanh(w * s + b) ** 2
    gp, gs = pullback(ct)
    assert set(gp) == {"w", "b"}
    np.testing.assert_allclose(gp["w"], ct * d * s, rtol=1e-12)
    np.testing.assert_allclose(gp["b"], ct * d, rtol=1e-12)
    np.testing.assert_allclose(gs, ct * d * w, rtol=1e-12)
    u, v = rng.standard_normal(4), rng.standard_normal(4)
    _, tangent = tenferro.jvp(f, ({"w": w, "b": b}, s), ({"w": u, "b": v}, None))
    np.testing.assert_allclose(tangent, d * (u * s + v), rtol=1e-12)
    _, tangent = tenferro.jvp(f, ({"w": w, "b": b}, s), (None, u))
    np.testing.assert_allclose(tangent, d * u * w, rtol=1e-12)
    with pytest.raises(tenferro.InvalidArgumentError, match=r"tangent 0: expected a dict with the primal's keys"):
        tenferro.jvp(f, ({"w": w, "b": b}, s), ((u, v), None))
    (hw, hb), = tenferro.hvp(lambda p: np.sum(p[0] ** 2 * p[1]), ((w, b),), ((u, v),))
    np.testing.assert_allclose(hw, 2 * b * u + 2 * w * v, rtol=1e-12)
    np.testing.assert_allclose(hb, 2 * w * u, rtol=1e-12)


def test_jit_of_grad_of_a_tuple_records_without_warnings(rng):
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    jitted = tenferro.jit(tenferro.grad(_loss))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            gw, gb = jitted((w, b))
            want = _loss_grads(w, b)
            np.testing.assert_allclose(gw, want[0], rtol=1e-12)
            np.testing.assert_allclose(gb, want[1], rtol=1e-12)
    assert jitted.cache_info()["hits"] == 1


def test_an_argument_numpy_cannot_read_is_reported_without_a_traceback():
    # pybind11's what() appends the Python traceback ("At: ..."); it ended
    # up in messages and in jit's warnings (14 lines for one jit(grad)).
    class Bad:
        def __array__(self, dtype=None):
            raise ValueError("not an array")

    with pytest.raises(tenferro.InvalidArgumentError) as error:
        tenferro.grad(lambda a: np.sum(a))(Bad())
    assert "ValueError: not an array" in str(error.value)
    assert "At:" not in str(error.value) and len(str(error.value).splitlines()) == 1
