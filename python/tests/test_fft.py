"""tenferro.fft against numpy.fft: values, shapes, dtypes, errors and
gradients."""

import numpy as np
import pytest

import tenferro
import tenferro.fft as tff
from conftest import random_array

COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def tol(dtype):
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    return dict(rtol=1e-4, atol=1e-4) if single else dict(rtol=1e-10, atol=1e-10)


ONE_AXIS = [
    ("fft", {}),
    ("fft", dict(n=5, axis=0)),
    ("ifft", dict(n=11, norm="ortho")),
    ("ifft", dict(axis=1, norm="forward")),
    ("hfft", {}),
    ("hfft", dict(n=9, axis=1)),
    ("irfft", {}),
    ("irfft", dict(n=7, norm="ortho")),
]
N_AXES = [
    ("fftn", {}),
    ("fftn", dict(s=(3, 10))),
    ("ifftn", dict(axes=(0, 2), norm="ortho")),
    ("fft2", {}),
    ("ifft2", dict(s=(5, 4))),
    ("irfftn", dict(axes=(1, 2))),
    ("irfft2", dict(s=(6, 9))),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,kwargs", ONE_AXIS + N_AXES)
def test_complex_input_matches_numpy(dtype, name, kwargs, rng):
    x = random_array(rng, (4, 6, 8), dtype)
    got = getattr(tff, name)(x, **kwargs)
    want = getattr(np.fft, name)(x, **kwargs)
    assert got.shape == want.shape
    real = {np.complex64: np.float32, np.complex128: np.float64}[dtype]
    assert got.dtype == (real if name.startswith(("irfft", "hfft")) else dtype)
    np.testing.assert_allclose(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("fft", {}),
        ("rfft", {}),
        ("rfft", dict(n=9, axis=1, norm="ortho")),
        ("ihfft", {}),
        ("ihfft", dict(n=6, norm="forward")),
        ("rfftn", {}),
        ("rfftn", dict(s=(5, 7))),
        ("rfft2", dict(axes=(0, 2))),
        ("fftn", dict(axes=(-1,))),
    ],
)
def test_real_input_matches_numpy_and_keeps_precision(dtype, name, kwargs, rng):
    x = random_array(rng, (4, 6, 8), dtype)
    got = getattr(tff, name)(x, **kwargs)
    want = getattr(np.fft, name)(x, **kwargs)
    assert got.shape == want.shape
    assert got.dtype == COMPLEX_OF[np.dtype(dtype)]  # numpy < 2 widens float32 to complex128
    np.testing.assert_allclose(got, want, **tol(dtype))


def test_round_trips_integers_and_numpy_helpers(rng):
    x = random_array(rng, (3, 16), np.float64)
    np.testing.assert_allclose(tff.irfft(tff.rfft(x), n=16), x, atol=1e-12)
    np.testing.assert_allclose(tff.ifftn(tff.fftn(x)).real, x, atol=1e-12)
    ints = np.arange(8)
    assert tff.fft(ints).dtype == np.complex128
    np.testing.assert_allclose(tff.fft(ints), np.fft.fft(ints), atol=1e-12)
    assert tff.fftfreq is np.fft.fftfreq and tff.fftshift is np.fft.fftshift


def test_float16_and_real_input_of_the_complex_input_transforms_like_numpy(rng):
    # float16 is computed in float32 (complex64 results, numpy 2's choice);
    # irfft/hfft take real input as complex with a zero imaginary part.
    h = rng.standard_normal((3, 10)).astype(np.float16)
    for name in ("fft", "rfft", "ifft", "ihfft", "fftn", "rfft2"):
        got = getattr(tff, name)(h)
        assert got.dtype == np.complex64, name
        np.testing.assert_allclose(got, getattr(np.fft, name)(h.astype(np.float32)), rtol=1e-4, atol=1e-4)
    for name in ("irfft", "hfft", "irfftn"):
        for dtype, out in ((np.float32, np.float32), (np.float64, np.float64), (np.float16, np.float32)):
            x = rng.standard_normal((3, 10)).astype(dtype)
            got = getattr(tff, name)(x)
            assert got.dtype == out, (name, dtype)
            np.testing.assert_allclose(got, getattr(np.fft, name)(x.astype(np.float64)), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda x: tff.fft(x, axis=3), tenferro.OutOfRangeError, "expected axes in"),
        (lambda x: tff.fft(x, norm="unitary"), tenferro.InvalidArgumentError, "norm"),
        # numpy refuses a norm that is not a string (pybind took bytes as a string)
        (lambda x: tff.fft(x, norm=1), tenferro.InvalidArgumentError, "found 1 \\(int\\)"),
        (lambda x: tff.fft(x, norm=b"ortho"), tenferro.InvalidArgumentError, "bytes"),
        (lambda x: tff.fftn(x, norm=True), tenferro.InvalidArgumentError, "bool"),
        (lambda x: tff.rfft2(x, s=(2, 2), norm=1.0), tenferro.InvalidArgumentError, "float"),
        (lambda x: tff.fft(x, n=0), tenferro.InvalidArgumentError, "positive number of data points"),
        (lambda x: tff.rfft(x + 1j), tenferro.DTypeError, "float32 or float64"),
    ],
)
def test_bad_arguments_raise_typed_errors(call, error, message, rng):
    with pytest.raises(error, match=message):
        call(random_array(rng, (2, 3, 4), np.float64))


def test_gradients_through_the_fft_ad_rules(rng):
    x = random_array(rng, (8,), np.float64)
    # d/dx sum(Re fft(x)) = Re of the column sums of the DFT matrix.
    np.testing.assert_allclose(tenferro.grad(lambda v: tff.fft(v).real.sum())(x), np.fft.fft(np.ones(8)).real, atol=1e-12)
    w = random_array(rng, (5,), np.complex128)
    # sum |rfft(x)|^2 weighted: compare with a finite difference.
    f = lambda v: (tff.rfft(v) * w).real.sum()  # noqa: E731
    g = tenferro.grad(f)(x)
    eps = 1e-6
    fd = [(np.sum((np.fft.rfft(x + eps * e) * w).real) - np.sum((np.fft.rfft(x - eps * e) * w).real)) / (2 * eps)
          for e in np.eye(8)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_repeated_transforms_reuse_one_cached_op(rng):
    rt = tenferro.Runtime(threads=1)
    x = random_array(rng, (3, 8), np.complex128)
    before = rt.cached_ops
    for _ in range(3):
        tff.fft(x, runtime=rt)
    assert rt.cached_ops == before + 1
    tff.fft(x, n=4, runtime=rt)
    tff.fftn(x, runtime=rt)
    assert rt.cached_ops == before + 3


def test_a_transform_too_large_for_the_address_space_raises_memory_error():
    # Note [FFTW allocation failures]: under ulimit -v, FFTW's own
    # allocations used to abort the interpreter; numpy raises MemoryError.
    import os
    import subprocess
    import sys

    script = (
        "import resource, numpy as np, tenferro\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "for f in (tenferro.fft.fft, tenferro.fft.rfft):\n"
        "    try:\n"
        "        f(np.ones(10), n=160_000_000)\n"
        "        print('no error')\n"
        "    except tenferro.ResourceExhaustedError as e:\n"
        "        assert isinstance(e, MemoryError)\n"
        "        print('MemoryError')\n"
        "print(tenferro.fft.fft(np.ones(4)).real.tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TENFERRO_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["MemoryError", "MemoryError", "[4.0, 0.0, 0.0, 0.0]"], done.stdout


def test_lengths_beyond_the_address_space_are_value_errors_as_numpy():
    # 2^60 complex values are 2^64 bytes: the byte count wrapped around and
    # FFTW aborted the interpreter; numpy raises ValueError ("array is too big").
    x = np.ones(3)
    for call in (lambda: tenferro.fft.fft(x, n=2**60), lambda: tenferro.fft.rfft(x, n=2**62),
                 lambda: tenferro.fft.fft(x, n=2**63), lambda: tenferro.fft.fftn(np.ones((2, 2)), s=(2**40, 2**40))):
        with pytest.raises(ValueError, match="fits in memory"):
            call()
    np.testing.assert_allclose(tenferro.fft.fft(x), np.fft.fft(x))  # the runtime still works


def test_object_arrays_of_numbers_are_transformed_as_numpy():
    for a in (np.array([1, 2.5, 3], dtype=object), np.array([1, 2j, 3], dtype=object)):
        np.testing.assert_allclose(tenferro.fft.fft(a), np.fft.fft(a), rtol=1e-14)
    with pytest.raises(tenferro.DTypeError):
        tenferro.fft.fft(np.array(["a", "b"], dtype=object))


def test_real_transforms_of_long_double_complex_name_the_given_dtype():
    z = np.ones(8, dtype=np.clongdouble)
    for f in (tff.rfft, tff.ihfft):
        with pytest.raises(tenferro.DTypeError, match="found complex256"):
            f(z)
    np.testing.assert_allclose(tff.fft(z), np.fft.fft(z))  # computed in double, as numpy.fft


def test_out_writes_the_result_as_numpy_2():
    x = np.random.default_rng(0).random((3, 8))
    for fn, ref_fn, dtype in ((tenferro.fft.fft, np.fft.fft, np.complex128), (tenferro.fft.rfft2, np.fft.rfft2,
                              np.complex128), (tenferro.fft.irfft, np.fft.irfft, np.float64),
                              (tenferro.fft.fftn, np.fft.fftn, np.complex64)):
        want = ref_fn(x)
        out = np.empty(want.shape, dtype)
        got = fn(x, out=out)
        assert got is out
        np.testing.assert_allclose(out, want, rtol=1e-6)
    with pytest.raises(tenferro.InvalidArgumentError, match="shape"):
        tenferro.fft.fft(x, out=np.empty((3, 7), complex))
    with pytest.raises(tenferro.DTypeError, match="float64"):
        tenferro.fft.fft(x, out=np.empty((3, 8)))  # complex into float
    with pytest.raises(TypeError, match="numpy array"):
        tenferro.fft.fft(x, out=[0] * 8)
    with pytest.raises(tenferro.UnsupportedError, match="out="):
        tenferro.grad(lambda y: np.sum(np.abs(tenferro.fft.fft(y, out=np.empty(8, complex)))))(x[0])


@pytest.mark.parametrize("layout", ["F", "transposed", "C"])
def test_inputs_are_transformed_in_memory_order_as_numpy(layout, rng):
    # Note [Transforms in memory order]: a Fortran-order array or a
    # transposed view is transformed with its axes in memory order, and the
    # result has the input's axis order, as numpy's: F in, F out (the engine
    # writes row-major, so an F-order result shows the path was taken).
    base = rng.random((6, 5, 4)) + 1j * rng.random((6, 5, 4))
    x = {"F": np.asfortranarray(base), "transposed": base.transpose(2, 0, 1), "C": base}[layout]
    real = np.ascontiguousarray(x.real) if layout == "C" else (np.asfortranarray(x.real) if layout == "F" else
                                                               base.real.transpose(2, 0, 1))
    cases = [("fft", x, dict(axis=0)), ("ifft", x, dict(axis=-1, n=7)), ("fftn", x, dict(axes=(0, 2))),
             ("ifftn", x, dict(s=(3, 4), axes=(2, 1), norm="ortho")), ("rfft", real, dict(axis=0)),
             ("rfftn", real, dict(axes=(1, 0))), ("irfft", x, dict(axis=1)), ("hfft", x, dict(axis=0, n=8)),
             ("ihfft", real, dict(axis=2)), ("fft2", x, {})]
    for name, arg, kwargs in cases:
        got, want = getattr(tff, name)(arg, **kwargs), getattr(np.fft, name)(arg, **kwargs)
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"{name} {kwargs}")
        if layout == "F":
            assert got.flags.f_contiguous, name
        elif layout == "C":
            assert got.flags.c_contiguous, name
    # The transposed view's result is ordered as its memory: axis 1 slowest.
    if layout == "transposed":
        r = tff.fft(x, axis=0)
        assert r.strides[1] > r.strides[2] > r.strides[0]


def test_read_only_out_is_a_typed_error_as_for_einsum():
    out = np.zeros(5, complex)
    out.flags.writeable = False
    with pytest.raises(tenferro.InvalidArgumentError, match=r"fft.rfft: out is read-only"):
        tff.rfft(np.ones(8), out=out)
    np.testing.assert_array_equal(out, np.zeros(5))


def _eps_error(got, want, dtype):
    # max |got - want| in units of eps * max |want| of the result precision.
    eps = np.finfo(np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64).eps
    return np.max(np.abs(got - want)) / (eps * max(np.max(np.abs(want)), 1e-300))


@pytest.mark.parametrize("real", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C axis 0", "F axis -1", "transposed axis -1", "C middle axis"])
@pytest.mark.parametrize("n", [31, 64])
def test_real_transforms_along_strided_axes_match_numpy(real, layout, n, rng):
    # Note [FFT panels]: r2c/c2r passes along a strided axis (after Note
    # [Transforms in memory order], the first axis of the row-major view)
    # run in panels; every kind, odd and even lengths, column counts that
    # are not multiples of a panel (8 float64 / 32 float32 reals).
    shapes = {"C axis 0": ((n, 37), 0), "F axis -1": ((37, n), -1), "transposed axis -1": ((37, n), -1),
              "C middle axis": ((3, n, 21), 1)}
    shape, axis = shapes[layout]

    def arrange(a):
        if layout == "F axis -1":
            return np.asfortranarray(a)
        if layout == "transposed axis -1":
            return np.ascontiguousarray(a.T).T
        return a

    x = arrange(random_array(rng, shape, real))
    c = arrange(random_array(rng, shape, COMPLEX_OF[np.dtype(real)]))
    wide = lambda a: a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)  # numpy's reference in double
    for name, arg, kwargs in [("rfft", x, {}), ("rfft", x, dict(n=n + 3, norm="ortho")), ("ihfft", x, {}),
                              ("irfft", c, {}), ("irfft", c, dict(n=2 * n - 1, norm="forward")),
                              ("hfft", c, {}), ("fft", c, {})]:
        got = getattr(tff, name)(arg, axis=axis, **kwargs)
        want = getattr(np.fft, name)(wide(arg), axis=axis, **kwargs)
        assert got.shape == want.shape, name
        assert got.dtype == (real if name in ("irfft", "hfft") else COMPLEX_OF[np.dtype(real)]), name
        assert _eps_error(got, want, real) < 8 * np.log2(2 * n), f"{name} {kwargs}"
    # rfft2 / irfftn: the r2c and c2r passes along the strided axis of the pair.
    if len(shape) == 2:
        got = tff.rfft2(x)
        assert _eps_error(got, np.fft.rfft2(wide(x)), real) < 8 * np.log2(2 * n * 37)
        back = tff.irfftn(got, s=x.shape)
        assert _eps_error(back, wide(x), real) < 8 * np.log2(2 * n * 37)


@pytest.mark.parametrize("n", [74, 592, 848, 999, 1998, 2624, 255, 272, 304, 184, 1020])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_lengths_with_a_medium_prime_factor_match_numpy(n, dtype, rng):
    # Note [Medium prime factors]: a prime factor 17..23 or 37..89 of a composite
    # length runs as one Cooley-Tukey step; errors stay those of an FFT.
    x = random_array(rng, (3, n), dtype)
    wide = x.astype(np.complex128)
    bound = 8 * np.log2(n)
    assert _eps_error(tff.fft(x), np.fft.fft(wide), dtype) < bound
    assert _eps_error(tff.ifft(x, axis=-1, norm="ortho"), np.fft.ifft(wide, norm="ortho"), dtype) < bound
    assert _eps_error(tff.rfft(x.real), np.fft.rfft(wide.real), dtype) < bound
    assert _eps_error(tff.irfft(x, n=n), np.fft.irfft(wide, n=n), dtype) < bound
    assert _eps_error(tff.fft(x.T, axis=0), np.fft.fft(wide.T, axis=0), dtype) < bound
