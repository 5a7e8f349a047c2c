"""Bad input gives a clean Python exception carrying tenferro's ErrorCode,
never a crash."""

import numpy as np
import pytest

import tenferro


def raises(exc, code, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    if code is not None:
        assert isinstance(info.value, tenferro.Error)
        assert info.value.code == code, str(info.value)
        assert info.value.message
        assert info.value.stage
    return info.value


def test_bad_subscripts():
    a = np.ones((2, 2))
    e = raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk-ik", a, a)
    assert "ij,jk-ik" in str(e) or "-" in str(e)
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "i!j", a)
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->iz", a)  # output label nobody has
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->ii", a)  # repeated output label


def test_one_failure_has_one_stage_in_every_call():
    # Note [Einsum binding errors are compile-stage]: subscripts that do not
    # parse, operands that do not fit them and a wrong operand count are
    # `compile`, whichever function finds them (the C API and the CLI say
    # the same: c_api_test.c, check_cli_failures.cmake).
    m34 = np.ones((3, 4))
    calls = {
        "einsum": lambda *a: tenferro.einsum(*a),
        "contract_path": lambda *a: tenferro.contract_path(*a),
        "einsum_path": lambda *a: tenferro.einsum_path(*a),
        "contract_expression": lambda s, *a: tenferro.contract_expression(s, *(x.shape for x in a))(*a),
        "Runtime.einsum": lambda *a: tenferro.Runtime(threads=1).einsum(*a),
    }
    for name, call in calls.items():
        for args, code in ((("ij,jk->ik", m34, m34), "kShapeMismatch"), (("ij,jk->ik", m34), "kInvalidArgument"),
                           (("ij,jk-ik", m34, m34), "kInvalidArgument")):
            with pytest.raises(tenferro.Error) as info:
                call(*args)
            assert (info.value.code, info.value.stage) == (code, "compile"), (name, args[0], str(info.value))
            assert str(info.value).startswith("compile "), (name, str(info.value))


def test_operand_count():
    a = np.ones((2, 2))
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk->ik", a)
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->ij", a, a)
    raises(TypeError, None, tenferro.einsum)


def test_shape_errors():
    raises(ValueError, "kShapeMismatch", tenferro.einsum, "ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))
    raises(ValueError, "kShapeMismatch", tenferro.einsum, "ijk,jk->i", np.ones((2, 3)), np.ones((3, 2)))  # rank
    raises(ValueError, "kShapeMismatch", tenferro.einsum, "ii->i", np.ones((2, 3)))


def test_unsupported_dtypes():
    e = raises(TypeError, "kDTypeMismatch", tenferro.einsum, "i->", np.array([object(), object()]))
    assert isinstance(e, tenferro.DTypeError) and isinstance(e, ValueError)
    assert "found object" in str(e) and "int8-int64" in str(e)
    raises(TypeError, "kDTypeMismatch", tenferro.einsum, "i->", np.array(["a", "b"]))
    raises(TypeError, "kDTypeMismatch", tenferro.einsum, "i,i->", np.ones(3), np.ones(3, dtype=np.longdouble))
    raises(TypeError, "kDTypeMismatch", tenferro.einsum, "i->", np.ones(3, dtype="datetime64[s]"))
    # Integers are numpy.einsum's dtypes (Note [Integer einsum]) but have no gradient.
    e = raises(TypeError, "kDTypeMismatch", tenferro.einsum_vjp, "ij->ji", np.ones((2, 2), dtype=np.int64), cotangent=np.ones((2, 2)))
    assert "int64" in str(e)


def test_non_contiguous_and_odd_layouts_work():
    base = np.arange(24.0).reshape(4, 6)
    np.testing.assert_allclose(tenferro.einsum("ij->", base[:, ::2]), base[:, ::2].sum())
    np.testing.assert_allclose(tenferro.einsum("ij->", base[::-1, ::-2]), base[::-1, ::-2].sum())
    swapped = base.astype(">f8")  # non-native byte order: copied
    np.testing.assert_allclose(tenferro.einsum("ij->j", swapped), base.sum(axis=0))
    raw = np.zeros(8 * 6 + 1, dtype=np.uint8)[1:].view(np.float64)  # misaligned
    raw[:] = 1.0
    np.testing.assert_allclose(tenferro.einsum("i->", raw), 6.0)


def test_bad_options():
    a = np.ones((2, 2))
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk->ik", a, a, optimize="fastest")
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk->ik", a, a, optimize=[(0, 5)])
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk,kl->il", a, a, a, optimize=[(0, 1, 3)])
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk,kl->il", a, a, a, optimize=[(0, 0, 1)])
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk,kl->il", a, a, a, optimize=[()])
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk->ik", a, a, optimize=3.5)
    raises(TypeError, None, tenferro.einsum, "ij->ji", a, bogus=a)
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->ji", a, threads=0)
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, threads=0)
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, gemm="mkl")
    unknown = raises(ValueError, "kInvalidArgument", tenferro.Runtime, gemm="native,mkl")
    assert "native, openblas, blis" in unknown.message
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, threads=1, domain="numa")
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, threads=2, domain="inline")
    spin = raises(ValueError, "kInvalidArgument", tenferro.Runtime, worker_spin=-0.001)
    assert "expected seconds in [0, 1]" in spin.message
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, worker_spin=2.0)
    raises(ValueError, "kInvalidArgument", tenferro.Runtime, worker_spin=float("nan"))
    raises(TypeError, None, tenferro.Runtime, worker_spin="fast")
    rt = tenferro.Runtime(threads=1)
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->ji", a, runtime=rt, threads=2)
    raises(TypeError, None, tenferro.einsum, "ij->ji", a, runtime="not a runtime")


def test_bad_operands():
    raises(TypeError, "kDTypeMismatch", tenferro.einsum, "ij,j->i", np.ones((2, 2)), "ab")
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij->ji", [[1.0, 2.0], [3.0]])  # ragged
    raises(TypeError, None, tenferro.einsum, np.ones(2), ["a"])  # sublist of non-integers, as numpy
    raises(ValueError, "kInvalidArgument", tenferro.einsum, np.ones(2), [-1])


def test_contract_path_errors():
    raises(ValueError, "kInvalidArgument", tenferro.contract_path, "ij,jk->ik", (2, 3))
    raises(ValueError, "kShapeMismatch", tenferro.contract_path, "ij,jk->ik", (2, 3), (4, 5))
    raises(ValueError, "kInvalidArgument", tenferro.contract_path, "ij,jk->ik", (2, 3), "x")
    # 42 is an operand of the sublist form, its labels (2, 3) too many.
    raises(ValueError, "kShapeMismatch", tenferro.contract_path, 42, (2, 3))
    raises(ValueError, "kInvalidArgument", tenferro.contract_path, 42, "ij")
    with pytest.raises(TypeError, match="found None"):
        tenferro.contract_path(None, (2, 3))
    # Each planning function names itself.
    a = np.ones((3, 4))
    for name, call in (("contract_path", lambda: tenferro.contract_path("ij,jk->ik", a)),
                       ("einsum_path", lambda: tenferro.einsum_path("ij,jk->ik", a)),
                       ("contract_expression", lambda: tenferro.contract_expression("ij,jk->ik", (3, 4)))):
        with pytest.raises(tenferro.InvalidArgumentError, match=f"^compile invalid_argument: {name} 'ij,jk->ik': the "
                                                                f"subscripts name 2 operands, found 1"):
            call()
    with pytest.raises(tenferro.InvalidArgumentError, match=r"contract_expression operand 1: expected"):
        tenferro.contract_expression("ij,jk->ik", (3, 4), "x")


def test_incomplete_paths_say_how_many_operands_they_leave():
    ops = [np.ones((2, 2))] * 3
    for path, found in (([(0, 1), (0,)], "1 step that leaves 2"), (["einsum_path"], "0 steps that leave 3"),
                        (["einsum_path", (0, 1)], "1 step that leaves 2"),
                        ([(0, 1), (0, 1), (0, 1)], "3 steps that leave fewer than one")):
        with pytest.raises(tenferro.InvalidArgumentError,
                           match=f"expected steps that contract the 3 operands into one, found {found}"):
            tenferro.einsum("ij,jk,kl->il", *ops, optimize=path)


def test_exception_hierarchy():
    assert issubclass(tenferro.LinAlgError, np.linalg.LinAlgError)
    assert issubclass(tenferro.DTypeError, TypeError)
    assert issubclass(tenferro.InvalidArgumentError, ValueError)
    assert issubclass(tenferro.UnsupportedError, NotImplementedError)
    for cls in (tenferro.LinAlgError, tenferro.DTypeError, tenferro.RuntimeFailure):
        assert issubclass(cls, tenferro.Error)


def test_axis_errors_are_numpys_axis_error():
    # `except np.AxisError` catches every axis out of range, from the C++
    # engines (kAxisOutOfRange) and from the Python layer alike.
    x = np.ones((2, 3))
    for fn in (lambda: tenferro.fft.fft(x, axis=5),
               lambda: tenferro.fft.fftn(x, axes=(0, -3)),
               lambda: tenferro.linalg.norm(x, axis=4),
               lambda: tenferro.grad(lambda a: np.sum(a, axis=3).sum())(x)):
        with pytest.raises(np.AxisError) as info:
            fn()
        e = info.value
        assert isinstance(e, tenferro.AxisError) and isinstance(e, tenferro.OutOfRangeError)
        assert isinstance(e, IndexError) and isinstance(e, ValueError)
        assert e.code == "kAxisOutOfRange" and e.canonical == "kOutOfRange"
        assert "axis" in str(e) or "axes" in str(e), str(e)


def test_bad_out_is_rejected_and_left_unchanged():
    a = np.ones((3, 4))
    b = np.ones((4, 5))
    out = np.full((3, 5), 7.0)
    raises(TypeError, None, tenferro.einsum, "ij,jk->ik", a, b, out=[0.0] * 15)
    e = raises(ValueError, "kShapeMismatch", tenferro.einsum, "ij,jk->ik", a, b, out=np.zeros((5, 3)))
    assert "(5, 3)" in e.message and "(3, 5)" in e.message
    raises(ValueError, "kShapeMismatch", tenferro.einsum, "ij,jk->ik", a, b, out=np.zeros(15))
    e = raises(TypeError, "kDTypeMismatch", tenferro.einsum, "ij,jk->ik", a, b, out=np.zeros((3, 5), np.float32))
    assert "float64" in e.message and "float32" in e.message
    frozen = np.zeros((3, 5))
    frozen.flags.writeable = False
    raises(ValueError, "kInvalidArgument", tenferro.einsum, "ij,jk->ik", a, b, out=frozen)
    assert np.all(frozen == 0)
    # A failed contraction leaves out as it was.
    raises(ValueError, "kShapeMismatch", tenferro.einsum, "ij,jk->ik", a, np.ones((3, 5)), out=out)
    assert np.all(out == 7.0)
    # Inside vjp the result is traced: out= has nothing to receive.
    sink = np.zeros((2, 2))
    raises(ValueError, "kInvalidArgument", tenferro.vjp, lambda x: tenferro.einsum("ij->ji", x, out=sink), np.ones((2, 2)))
    assert np.all(sink == 0)


def test_a_failed_workspace_allocation_is_typed_and_names_the_path():
    # Under an address-space limit the 8192 x 8192 intermediate of this path
    # (512 MiB) cannot be allocated: a ResourceExhaustedError naming the
    # path's largest intermediate, and the runtime keeps working.
    script = """
import resource, numpy as np, tenferro as tf
def vm():
    for line in open('/proc/self/status'):
        if line.startswith('VmSize'):
            return int(line.split()[1]) * 1024
tf.einsum('ij,jk->ik', np.ones((2, 2)), np.ones((2, 2)))
limit = vm() + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    tf.einsum('ia,aj,jb->ib', np.ones((8192, 1)), np.ones((1, 8192)), np.ones((8192, 1)), optimize=[(0, 1), (0, 1)])
    print('no error')
except tf.ResourceExhaustedError as e:
    print('typed:', e)
print(tf.einsum('ij,jk->ik', np.ones((2, 2)), np.ones((2, 2))).sum())
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("typed:") and "the given path's largest intermediate has 6.711e+07 elements" in lines[0]
    assert lines[1] == "8.0"


def test_einsum_on_a_runtime_never_initialised_is_a_type_error():
    # Runtime.__new__ without __init__ leaves no C++ runtime behind the
    # object; einsum on it (the method or runtime=) crashed.
    r = tenferro.Runtime.__new__(tenferro.Runtime)
    with pytest.raises(TypeError, match="not initialised"):
        r.einsum("i->", np.ones(2))
    with pytest.raises(TypeError, match="not initialised"):
        tenferro.einsum("i->", np.ones(2), runtime=r)
    # Every other method and property too (they read uninitialised memory).
    for name in ("threads", "gemm", "domain", "worker_spin", "cached_ops", "gil_releases", "cached_einsum_gradients",
                 "cached_sliced_plans", "pooled_bytes"):
        with pytest.raises(TypeError, match="not initialised"):
            getattr(r, name)
    for method in (r.cache_report, r.clear_caches, r.__repr__):
        with pytest.raises(TypeError, match="not initialised"):
            method()
    # The unbound functions check their argument's type.
    with pytest.raises(TypeError, match="expected a tenferro.Runtime, found int"):
        tenferro.Runtime.clear_caches(5)
    with pytest.raises(TypeError, match="expected a tenferro.Runtime, found str"):
        tenferro.Runtime.threads.fget("x")
