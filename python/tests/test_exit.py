"""Note [Daemon threads at exit]: a daemon thread still inside a call when
the interpreter exits no longer aborts the process (it ended with
"terminate called without an active exception", status 134). Note [Calls in
flight at exit]: nor does it fault inside LAPACK or FFTW while exit() runs
the libraries' destructors (SIGSEGV, status -11)."""

import os
import subprocess
import sys

import pytest

import tenferro

_SCRIPT = """
import threading, time
import numpy as np
import tenferro
a = np.random.default_rng(0).random((400, 400))
def plain():
    while True:
        tenferro.einsum("ij,jk->ik", a, a)
def sliced():
    b = np.random.default_rng(1).random((60, 60, 60))
    while True:
        tenferro.einsum("ijk,jkl,lmn->imn", b, b, b, max_intermediate_bytes=60 * 60 * 8 * 4)
def svd():
    rt = tenferro.Runtime(threads=2)
    while True:
        tenferro.linalg.svd(a, runtime=rt)
def fft():
    while True:
        tenferro.fft.fft2(a)
for _ in range(2):
    threading.Thread(target={target}, daemon=True).start()
time.sleep(0.5)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("target", ["plain", "sliced", "svd", "fft"])
def test_exit_with_a_daemon_thread_inside_a_call_is_clean(target):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tenferro.__file__)) + os.pathsep + env["PYTHONPATH"]
    for _ in range(3):  # the thread is caught at different points of its calls
        done = subprocess.run([sys.executable, "-c", _SCRIPT.format(target=target)], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert "exiting" in done.stdout
        assert "terminate" not in done.stderr


_FORK = """
import os, sys, threading, time
import numpy as np
import tenferro
a = np.random.default_rng(0).random((300, 300))
def svd():
    while True:
        tenferro.linalg.svd(a)
threading.Thread(target=svd, daemon=True).start()
time.sleep(0.3)
pid = os.fork()  # most likely while the thread is inside a call
if pid == 0:
    print("child", flush=True)
    sys.exit(0)  # a normal exit: the child has no call in flight to wait for
_, status = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(status), flush=True)
"""


def test_a_forked_child_does_not_wait_for_its_parents_calls_at_exit():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tenferro.__file__)))
    done = subprocess.run([sys.executable, "-c", _FORK], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "child status 0" in done.stdout, done.stdout
