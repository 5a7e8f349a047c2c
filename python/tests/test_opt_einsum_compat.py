"""What numpy.einsum / opt_einsum users reach for (from an audit): empty
intermediates, numpy's (name, memory_limit) form, opt_einsum's memory_limit=
and optimizer names, PathInfo's opt_einsum fields, and 'auto' as the
default planner."""

import json
import os

import numpy as np
import pytest

import tenferro

# ../shared next to the checkout (absent in a user's clone: the test skips).
INSTANCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "bench", "instances")


def test_empty_intermediates_give_zeros_forward_and_backward():
    cases = [
        ("ij,jk,kl,lm->im", [(2, 3), (3, 0), (0, 4), (4, 5)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 0)]),
        ("a,ffe->af", [(2,), (2, 2, 0)]),
    ]
    for subscripts, shapes in cases:
        operands = [np.ones(s) for s in shapes]
        want = np.einsum(subscripts, *operands)
        for optimize in ("auto", "greedy", "optimal", None):
            got = tenferro.einsum(subscripts, *operands, optimize=optimize)
            np.testing.assert_array_equal(got, want)
        grads = tenferro.einsum_vjp(subscripts, *operands, cotangent=np.ones(want.shape))
        for g, x in zip(grads, operands):
            assert g.shape == x.shape
            np.testing.assert_array_equal(g, np.zeros(x.shape))


def test_numpy_memory_limit_pair_and_opt_einsum_memory_limit_slice_the_path():
    rng = np.random.default_rng(3)
    a, b, c = rng.random((30, 40)), rng.random((40, 50)), rng.random((50, 20))
    want = a @ b @ c
    for kwargs in [{"optimize": ("greedy", 500)}, {"optimize": ("optimal", 500.0)}, {"memory_limit": 500},
                   {"memory_limit": "max_input"}, {"optimize": ("greedy", "max_input")},
                   {"memory_limit": np.int64(500)}, {"memory_limit": -1}]:
        np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, **kwargs), want, err_msg=str(kwargs))
    _, unbounded = tenferro.contract_path("ij,jk,kl->il", a, b, c)
    _, bounded = tenferro.contract_path("ij,jk,kl->il", a, b, c, memory_limit=500)
    assert unbounded.slices == 1 and unbounded.largest_intermediate > 500
    assert bounded.slices > 1 and bounded.slice_largest_intermediate <= 500
    _, pair = tenferro.contract_path("ij,jk,kl->il", a, b, c, optimize=("greedy", 500))
    assert pair.slices == bounded.slices
    _, unlimited = tenferro.contract_path("ij,jk,kl->il", a, b, c, memory_limit=-1)  # opt_einsum's "no limit"
    assert unlimited.slices == 1
    with pytest.raises(tenferro.InvalidArgumentError, match="given twice"):
        tenferro.einsum("ij,jk->ik", a, b, optimize=("greedy", 10), memory_limit=10)
    for bad in (0, -3, "huge", True):
        with pytest.raises(tenferro.InvalidArgumentError, match="memory_limit"):
            tenferro.einsum("ij,jk->ik", a, b, memory_limit=bad)
    # numpy's own tuple form agrees.
    np.testing.assert_allclose(np.einsum("ij,jk,kl->il", a, b, c, optimize=("greedy", 500)), want)


def test_opt_einsum_planner_names_run_the_nearest_planner():
    shapes = [(4, 5), (5, 6), (6, 7), (7, 3)]
    expected = {"dp": "auto", "branch-all": "auto", "branch-2": "auto", "auto-hq": "auto",
                "random-greedy": "treesa", "random-greedy-128": "treesa", "eager": "greedy", "branch-1": "greedy"}
    for name, ours in expected.items():
        _, theirs = tenferro.contract_path("ab,bc,cd,de->ae", *shapes, optimize=name)
        _, same = tenferro.contract_path("ab,bc,cd,de->ae", *shapes, optimize=ours)
        assert theirs.path == same.path and theirs.opt_cost == same.opt_cost, name
    with pytest.raises(tenferro.InvalidArgumentError, match="opt_einsum's 'dp'"):
        tenferro.einsum("ij,jk->ik", np.ones((2, 2)), np.ones((2, 2)), optimize="branchy")


def test_path_info_has_opt_einsum_fields():
    path, info = tenferro.contract_path("ij,jk,kl->il", (2, 3), (3, 4), (4, 5))
    assert info.size_dict == {"i": 2, "j": 3, "k": 4, "l": 5}
    assert info.indices == set("ijkl")
    assert info.shapes == [(2, 3), (3, 4), (4, 5)]
    assert len(info.contraction_list) == len(path) == 2
    remaining = ["ij", "jk", "kl"]
    for (positions, removed, eq, left, blas), step in zip(info.contraction_list, path):
        assert positions == tuple(sorted(step, reverse=True))
        lhs, rhs = eq.split("->")[0].split(",")
        assert sorted([lhs, rhs]) == sorted(remaining[k] for k in step)
        for k in positions:
            del remaining[k]
        remaining.append(eq.split("->")[1])
        assert left == remaining and blas is False
        assert removed == (set(lhs) | set(rhs)) - set(eq.split("->")[1])
    assert remaining == ["il"]


def test_auto_is_the_default_planner():
    shapes = [(4, 5), (5, 6), (6, 7), (7, 3)]
    _, default = tenferro.contract_path("ab,bc,cd,de->ae", *shapes)
    _, auto = tenferro.contract_path("ab,bc,cd,de->ae", *shapes, optimize="auto")
    assert default.planner == auto.planner == "optimal"  # auto is exact up to 10 operands
    _, numpy_style = tenferro.einsum_path("ab,bc,cd,de->ae", *[np.ones(s) for s in shapes])
    assert "greedy" in numpy_style  # einsum_path keeps numpy.einsum_path's default


@pytest.mark.skipif(not os.path.isdir(INSTANCES), reason="no shared benchmark instances")
def test_default_path_is_autos_on_a_network_where_greedy_is_16x_worse():
    path = os.path.join(INSTANCES, "lm_batch_likelihood_brackets_4_4d.json")
    if not os.path.exists(path):
        pytest.skip("instance absent")
    with open(path) as f:
        instance = json.load(f)
    subscripts = instance["format_string"]
    shapes = [tuple(s) for s in instance["shapes"]]
    _, default = tenferro.contract_path(subscripts, *shapes)
    _, auto = tenferro.contract_path(subscripts, *shapes, optimize="auto")
    _, greedy = tenferro.contract_path(subscripts, *shapes, optimize="greedy")
    assert default.opt_cost == auto.opt_cost
    assert greedy.opt_cost > 4 * default.opt_cost


# ---------------------------------------------------------------------------
# contract_expression (Note [Contract expressions] in python/src/module.cpp)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.int64])
def test_contract_expression_matches_numpy_and_keeps_contract_paths_path(dtype):
    rng = np.random.default_rng(7)
    shapes = [(5, 6), (6, 7, 3), (3, 4), (7, 4, 2)]
    subscripts = "ab,bcd,de,cef->af"
    expr = tenferro.contract_expression(subscripts, *shapes)
    path, info = tenferro.contract_path(subscripts, *shapes)
    assert expr.path == path and expr.num_args == 4 and expr.shapes == shapes
    assert expr.contraction == subscripts and expr.contraction_list == info.contraction_list
    assert repr(expr) == "<ContractExpression('ab,bcd,de,cef->af')>"
    assert str(expr).splitlines()[1:] == [f"  {i + 1}.  '{c[2]}'" for i, c in enumerate(info.contraction_list)]
    for _ in range(2):  # new arrays of the same shapes, again
        arrays = [(rng.uniform(-1, 1, s) * 8).astype(dtype) for s in shapes]
        got = expr(*arrays)
        want = np.einsum(subscripts, *arrays)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype in (np.float32, np.complex64) else 1e-12)


def test_contract_expression_parses_and_plans_nothing_per_call():
    rng = np.random.default_rng(8)
    a, b, c = rng.random((4, 5)), rng.random((5, 6)), rng.random((6, 3))
    rt = tenferro.Runtime(threads=1)
    expr = tenferro.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape)
    for _ in range(3):
        np.testing.assert_allclose(expr(a, b, c, runtime=rt), a @ b @ c)
    assert rt.cached_ops == 0  # the expression's own op: no subscripts parsed, no op cache searched
    tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=expr.path, runtime=rt)
    assert rt.cached_ops == 1  # what einsum with the same path keeps


def test_contract_expression_constants_are_held_and_skipped_in_calls():
    rng = np.random.default_rng(9)
    a, b, c = rng.random((4, 5)), rng.random((5, 6)), rng.random((6, 3))
    expr = tenferro.contract_expression("ij,jk,kl->il", a.shape, b, c.shape, constants=[1])
    assert expr.num_args == 2 and expr.constants == [1]
    assert repr(expr) == "<ContractExpression('ij,jk,kl->il', constants=[1])>"
    np.testing.assert_allclose(expr(a, c), a @ b @ c)
    b *= 2  # held, not copied
    np.testing.assert_allclose(expr(a, c), a @ b @ c)
    both = tenferro.contract_expression("ij,jk,kl->il", a, b.shape, c, constants=[0, 2])
    np.testing.assert_allclose(both(b), a @ b @ c)


def test_contract_expression_call_arguments():
    rng = np.random.default_rng(10)
    a, b, c = rng.random((30, 40)), rng.random((40, 50)), rng.random((50, 20))
    want = a @ b @ c
    expr = tenferro.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape)
    out = np.empty((30, 20))
    assert expr(a, b, c, out=out) is out
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(expr(a, b, c, threads=2), want)
    assert expr(a, b, c, dtype=np.float32, casting="same_kind").dtype == np.float32
    assert expr(a, b, c, order="F").flags.f_contiguous
    # A bound given when the expression is made slices every call.
    rt = tenferro.Runtime(threads=1)
    sliced = tenferro.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape, max_intermediate_bytes=2000)
    np.testing.assert_allclose(sliced(a, b, c, runtime=rt), want)
    assert rt.cached_sliced_plans == 1
    limited = tenferro.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape, memory_limit=300)
    np.testing.assert_allclose(limited(a, b, c, runtime=rt), want)
    assert rt.cached_sliced_plans == 2
    # Other extents than planned: the same path, still right (as opt_einsum).
    small = [rng.random((3, 4)), rng.random((4, 2)), rng.random((2, 5))]
    np.testing.assert_allclose(expr(*small), small[0] @ small[1] @ small[2])
    # The sublist form.
    sub = tenferro.contract_expression(a.shape, [0, 1], b.shape, [1, 2], [0, 2])
    np.testing.assert_allclose(sub(a, b), a @ b)


def test_contract_expression_under_grad_gives_einsums_gradient():
    rng = np.random.default_rng(11)
    a, b, c = rng.random((4, 5)), rng.random((5, 6)), rng.random((6, 4))
    expr = tenferro.contract_expression("ij,jk,ki->", a.shape, b, c.shape, constants=[1])
    got = tenferro.grad(lambda x, z: expr(x, z), argnums=(0, 1))(a, c)
    want = tenferro.grad(lambda x, z: tenferro.einsum("ij,jk,ki->", x, b, z), argnums=(0, 1))(a, c)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    np.testing.assert_allclose(got[0], (b @ c).T)


def test_contract_expression_bad_input_raises_typed_errors():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    expr = tenferro.contract_expression("ij,jk->ik", a.shape, b.shape)
    with pytest.raises(tenferro.InvalidArgumentError, match="takes exactly 2 arrays, found 1"):
        expr(a)
    with pytest.raises(TypeError, match="optimize"):
        expr(a, b, optimize="greedy")
    with pytest.raises(TypeError, match="unexpected keyword argument 'backend'"):
        expr(a, b, backend="torch")
    with pytest.raises(tenferro.InvalidArgumentError):
        expr(a, np.ones((4, 4)))  # j is 3 in a, 4 here
    with pytest.raises(tenferro.OutOfRangeError, match="constant position 2"):
        tenferro.contract_expression("ij,jk->ik", a, b, constants=[2])
    with pytest.raises(tenferro.InvalidArgumentError, match="operand 0 is a constant and must be an array"):
        tenferro.contract_expression("ij,jk->ik", (2, 3), b, constants=[0])
    with pytest.raises(tenferro.InvalidArgumentError):
        tenferro.contract_expression("ij,jk->ik", (2, 3), (4, 4))
    np.testing.assert_allclose(expr(a, b), a @ b)  # still usable


def test_contract_expression_pickles_and_copies_with_its_path_and_constants():
    import copy
    import pickle

    rng = np.random.default_rng(12)
    a, b, c = rng.random((4, 5)), rng.random((5, 6)), rng.random((6, 3))
    expr = tenferro.contract_expression("ij,jk,kl->il", a.shape, b, c.shape, constants=[np.int64(1)],
                                        optimize=[(1, 2), (0, 1)], memory_limit=-1)
    assert expr.constants == [1] and expr.path == [(1, 2), (0, 1)]
    for twin in (pickle.loads(pickle.dumps(expr)), copy.deepcopy(expr), copy.copy(expr)):
        assert isinstance(twin, tenferro.ContractExpression)
        assert twin.path == expr.path and twin.constants == [1] and twin.shapes == expr.shapes
        np.testing.assert_allclose(twin(a, c), a @ b @ c)
    with pytest.raises(TypeError, match="operand positions"):
        tenferro.contract_expression("ij,jk->ik", a, b.shape, constants=["0"])
