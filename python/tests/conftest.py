"""Shared fixtures of the tenferro Python tests (run with PYTHONPATH set to
the build tree's python/ directory; see docs/python.md)."""

import numpy as np
import pytest

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def tolerance(dtype):
    """rtol/atol for results of `dtype` computed in a different order than numpy."""
    if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)):
        return dict(rtol=2e-4, atol=2e-5)
    return dict(rtol=1e-10, atol=1e-12)


def random_array(rng, shape, dtype):
    """Uniform in [-1, 1) (real and imaginary parts) of `dtype`."""
    x = rng.uniform(-1, 1, size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.uniform(-1, 1, size=shape)
    return np.asarray(x, dtype=dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


def run_threads(worker, count):
    """worker(k) for k < count, each on its own thread; joins them all."""
    import threading

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
