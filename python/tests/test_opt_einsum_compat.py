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
                   {"memory_limit": "max_input"}]:
        np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, **kwargs), want, err_msg=str(kwargs))
    _, unbounded = tenferro.contract_path("ij,jk,kl->il", a, b, c)
    _, bounded = tenferro.contract_path("ij,jk,kl->il", a, b, c, memory_limit=500)
    assert unbounded.slices == 1 and unbounded.largest_intermediate > 500
    assert bounded.slices > 1 and bounded.slice_largest_intermediate <= 500
    _, pair = tenferro.contract_path("ij,jk,kl->il", a, b, c, optimize=("greedy", 500))
    assert pair.slices == bounded.slices
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
