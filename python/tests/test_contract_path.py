"""tenferro.contract_path: opt_einsum's (path, info) with tenferro's costs."""

import numpy as np
import pytest

import tenferro


def brute_force_flops(subscripts, shapes, path):
    """opt_einsum's flop count of `path`: per pairwise step, the product of
    the extents of every label involved, times 2 when a label is summed."""
    inputs, output = subscripts.split("->")
    terms = inputs.split(",")
    extent = {}
    for t, s in zip(terms, shapes):
        extent.update(zip(t, s))
    terms = [set(t) for t in terms]
    total = 0.0
    for i, j in path:
        a, b = terms[i], terms[j]
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        keep = set(output).union(*rest) if rest else set(output)
        union = a | b
        result = union & keep
        size = float(np.prod([extent[c] for c in union]))
        total += size * (2 if union - result else 1)
        terms = rest + [result]
    return total


def test_chain_path_and_costs():
    shapes = [(10, 20), (20, 30), (30, 5)]
    path, info = tenferro.contract_path("ij,jk,kl->il", *shapes)
    assert all(isinstance(p, tuple) and len(p) == 2 for p in path)
    assert len(path) == 2
    # The cheaper order contracts (1, 2) first: 20*30*5 + 10*20*5 products.
    assert path[0] == (1, 2)
    assert info.opt_cost == pytest.approx(brute_force_flops("ij,jk,kl->il", shapes, path))
    assert info.log10_flops == pytest.approx(np.log10(info.opt_cost))
    assert info.largest_intermediate == pytest.approx(20 * 5)
    assert info.naive_cost > info.opt_cost and info.speedup > 1
    text = str(info)
    assert "Complete contraction:  ij,jk,kl->il" in text
    assert "Optimized FLOP count" in text and "Largest intermediate" in text


def test_arrays_and_planners_agree_on_cost(rng):
    ops = [rng.uniform(size=s) for s in [(4, 5), (5, 6), (6, 7), (7, 4)]]
    _, greedy = tenferro.contract_path("ij,jk,kl,lm->im", *ops)
    path, optimal = tenferro.contract_path("ij,jk,kl,lm->im", *ops, optimize="optimal")
    assert optimal.opt_cost <= greedy.opt_cost
    assert optimal.planner == "optimal"
    assert optimal.opt_cost == pytest.approx(brute_force_flops("ij,jk,kl,lm->im", [o.shape for o in ops], path))
    same, info = tenferro.contract_path("ij,jk,kl,lm->im", *ops, optimize=path)
    assert same == path and info.opt_cost == optimal.opt_cost


def test_single_operand_and_ellipsis():
    path, info = tenferro.contract_path("ii->", (3, 3))
    assert path == [(0,)]
    path, info = tenferro.contract_path("...ij,...jk->...ik", (2, 3, 4), (4, 5))
    assert path == [(0, 1)]
    assert info.largest_intermediate == 2 * 3 * 5


def test_einsum_path_has_numpys_form(rng):
    a, b, c = rng.random((2, 100)), rng.random((100, 3)), rng.random((3, 50))
    path, report = tenferro.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")
    want, _ = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")
    assert path == want == ["einsum_path", (0, 1), (0, 1)]
    assert isinstance(report, str) and "Complete contraction" in report
    # Either library takes the path back.
    np.testing.assert_allclose(tenferro.einsum("ij,jk,kl->il", a, b, c, optimize=path), a @ b @ c)
    np.testing.assert_allclose(np.einsum("ij,jk,kl->il", a, b, c, optimize=path), a @ b @ c)
    assert tenferro.einsum_path("ii", np.eye(3))[0] == ["einsum_path", (0,)]


def test_lists_are_data_tuples_are_shapes_and_shapes_true():
    # numpy reads a list as data; a tuple of ints is a shape (documented), and opt_einsum's shapes=True makes every
    # operand a shape; einsum_path reads everything as data, as numpy.einsum_path does.
    path, info = tenferro.contract_path("i,i->", [1, 2, 3], [4, 5, 6])
    assert [tuple(s) for s in info.shapes] == [(3,), (3,)]
    _, info = tenferro.contract_path("i,i->", [5], [5])
    assert info.size_dict["i"] == 1
    _, info = tenferro.contract_path("ij,jk->ik", (2, 3), (3, 4))
    assert info.size_dict == {"i": 2, "j": 3, "k": 4}
    _, info = tenferro.contract_path("ij,jk->ik", [2, 3], [3, 4], shapes=True)
    assert info.size_dict == {"i": 2, "j": 3, "k": 4}
    with pytest.raises(tenferro.InvalidArgumentError, match="expected a shape"):
        tenferro.contract_path("ij,jk->ik", np.ones((2, 3)), (3, 4), shapes=True)
    for args in (("i,i->", [1, 2, 3], [4, 5, 6]), ("ij,j->i", ((1, 2), (3, 4)), (4, 5)), ("i,i->", [5], [5])):
        assert tenferro.einsum_path(*args)[0] == np.einsum_path(*args)[0]
        assert tenferro.einsum_path(*args)[1].split("\n")[3] == np.einsum_path(*args)[1].split("\n")[3]


def test_extents_beyond_int64_are_typed_errors():
    for extent in (2**63, 2**64):
        with pytest.raises(tenferro.OutOfRangeError, match="does not fit in int64"):
            tenferro.contract_path("ij,jk->ik", (extent, 2), (2, 4))
        with pytest.raises(tenferro.OutOfRangeError, match="does not fit in int64"):
            tenferro.contract_expression("ij,jk->ik", (extent, 2), (2, 4))


def test_one_operand_path_info_counts_the_one_step_as_the_naive_one():
    for subscripts, shape in (("ij->ji", (3, 3)), ("ij->", (3, 3)), ("ijk->i", (3, 3, 3))):
        path, info = tenferro.contract_path(subscripts, shape)
        assert path == [(0,)] and info.speedup == 1.0 and info.opt_cost == info.naive_cost
        assert len(info.contraction_list) == 1 and info.contraction_list[0][0] == (0,)
