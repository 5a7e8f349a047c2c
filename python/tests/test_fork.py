"""Note [Runtimes across fork]: a child forked while another thread was
inside a call on the default runtime gets new runtimes (it blocked forever
on the parent's oneTBB arena before)."""

import os
import threading
import time

import numpy as np
import pytest

import tenferro

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _wait(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_child_forked_during_a_call_gets_new_runtimes():
    b = np.random.default_rng(0).random((600, 600))
    parent_default = tenferro.default_runtime()
    parent_two = tenferro.default_runtime(2) if os.cpu_count() and os.cpu_count() >= 2 else None
    stop = threading.Event()
    busy = threading.Event()

    def background():
        while not stop.is_set():
            busy.set()
            tenferro.einsum("ij,jk->ik", b, b)
            if parent_two is not None:
                tenferro.einsum("ij,jk->ik", b, b, threads=2)

    thread = threading.Thread(target=background)
    thread.start()
    try:
        busy.wait(5)
        statuses = []
        for _ in range(3):  # forks land at different points of the background calls
            time.sleep(0.02)
            pid = os.fork()
            if pid == 0:  # the child: one thread, the parent's runtimes set aside
                try:
                    ok = tenferro.default_runtime() is not parent_default
                    got = tenferro.einsum("ij,ij->", np.ones((4, 4)), np.ones((4, 4)))
                    ok = ok and float(got) == 16.0
                    if parent_two is not None:
                        ok = ok and float(tenferro.einsum("ij,ij->", np.ones((4, 4)), np.ones((4, 4)), threads=2)) == 16
                    os._exit(0 if ok else 3)
                except BaseException:  # noqa: BLE001 - any failure is the child's exit status
                    os._exit(4)
            statuses.append(_wait(pid, 30))
    finally:
        stop.set()
        thread.join()
    assert statuses == [0, 0, 0], f"child exit statuses (None: hung): {statuses}"
    # The parent keeps its runtimes.
    assert tenferro.default_runtime() is parent_default


def test_jit_and_hessian_recorded_before_a_fork_record_again_in_the_child():
    # Their recordings hold programs prepared on the parent's default
    # runtime, which the child set aside: a replay there blocked forever
    # (6 of 10 children in the concurrency audit's repro).
    x = np.random.default_rng(1).random((8, 8))
    b = np.random.default_rng(2).random((300, 300))
    jitted = tenferro.jit(lambda a: np.tanh(a @ a).sum())
    hess = tenferro.hessian(lambda a: np.sum(np.sin(a) ** 2))
    want, want_h = jitted(x), hess(x[0])
    stop = threading.Event()

    def background():
        while not stop.is_set():
            jitted(x)
            tenferro.einsum("ij,jk->ik", b, b)

    thread = threading.Thread(target=background)
    thread.start()
    try:
        time.sleep(0.1)
        statuses = []
        for _ in range(4):
            time.sleep(0.02)
            pid = os.fork()
            if pid == 0:
                try:
                    ok = jitted(x) == want and np.array_equal(hess(x[0]), want_h)
                    ok = ok and jitted.cache_info()["recordings"] >= 1
                    os._exit(0 if ok else 3)
                except BaseException:  # noqa: BLE001 - any failure is the child's exit status
                    os._exit(4)
            statuses.append(_wait(pid, 60))
    finally:
        stop.set()
        thread.join()
    assert statuses == [0, 0, 0, 0]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs for a runtime with workers")
def test_a_runtime_with_workers_from_before_a_fork_raises_in_the_child():
    # Note [Runtimes from before a fork]: its workers are the parent's; a
    # call in the child blocked forever on them. Now it is a typed error;
    # an inline runtime from before the fork and a new runtime work.
    a = np.random.default_rng(1).random((200, 200))
    two = tenferro.Runtime(threads=2)
    one = tenferro.Runtime(threads=1)
    want = a @ a
    stop = threading.Event()

    def background():
        while not stop.is_set():
            tenferro.einsum("ij,jk->ik", a, a, runtime=two)

    thread = threading.Thread(target=background)
    thread.start()
    try:
        time.sleep(0.05)
        pid = os.fork()
        if pid == 0:
            try:
                codes = []
                for call in (
                    lambda: tenferro.einsum("ij,jk->ik", a, a, runtime=two),
                    lambda: two.einsum("ij,jk->ik", a, a),
                    lambda: tenferro.linalg.inv(a, runtime=two),
                    lambda: tenferro.fft.fft(a[0], runtime=two),
                    # the cache methods too: a lock another thread held at
                    # the fork stays held here (the child hung in cache_report)
                    lambda: two.cache_report(),
                    lambda: two.pooled_bytes,
                    lambda: two.clear_caches(),
                ):
                    try:
                        call()
                        codes.append("ran")
                    except tenferro.InvalidArgumentError as e:
                        codes.append("fork" if "before fork()" in str(e) else "other")
                ok = codes == ["fork"] * 7
                # jit cannot record on it, says why, and runs the function eagerly.
                import warnings

                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = tenferro.jit(lambda x: tenferro.einsum("ij,jk->ik", x, x), runtime=two)(a)
                ok = ok and np.allclose(got, want) and any("before fork()" in str(w.message) for w in caught)
                ok = ok and np.allclose(tenferro.einsum("ij,jk->ik", a, a, runtime=one), want)
                ok = ok and np.allclose(tenferro.Runtime(threads=2).einsum("ij,jk->ik", a, a), want)
                os._exit(0 if ok else 3)
            except BaseException:  # noqa: BLE001 - any failure is the child's exit status
                os._exit(4)
        assert _wait(pid, 60) == 0
        # The parent's runtime is unaffected.
        np.testing.assert_allclose(two.einsum("ij,jk->ik", a, a), want, rtol=1e-12)
    finally:
        stop.set()
        thread.join()
