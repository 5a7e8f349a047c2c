"""tenferro.mpi in one process (the multi-rank checks are mpi_check.py, run by
ctest under mpirun as python_mpi_np2 and python_mpi_np4)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tenferro

try:
    import tenferro.mpi  # noqa: F401
except ImportError as e:  # a build without MPI
    pytest.skip(f"tenferro.mpi not built: {e}", allow_module_level=True)

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent.parent / "shared" / "bench" / "instances"


def run_python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))


def test_import_tenferro_does_not_load_mpi():
    out = run_python("import tenferro, numpy\n"
                     "tenferro.einsum('ij,jk->ik', numpy.ones((2, 2)), numpy.ones((2, 2)))\n"
                     "print(any('libmpi' in line for line in open('/proc/self/maps')))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_not_a_communicator_is_a_type_error():
    with pytest.raises(TypeError, match="mpi4py communicator"):
        tenferro.mpi.Communicator(object())


def test_other_mpi4py_handles_are_type_errors():
    # They have a py2f too, whose integer names some other communicator
    # (MPI.INFO_NULL became COMM_WORLD, MPI.SUM another live communicator).
    pytest.importorskip("mpi4py")
    out = run_python("from mpi4py import MPI\nimport tenferro.mpi\n"
                     "for h in (MPI.INFO_NULL, MPI.SUM, MPI.GROUP_EMPTY, MPI.DOUBLE, MPI.REQUEST_NULL):\n"
                     "    try:\n"
                     "        tenferro.mpi.Communicator(h)\n"
                     "        print('accepted', h)\n"
                     "    except TypeError as e:\n"
                     "        print('TypeError' if 'mpi4py communicator' in str(e) else e)\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["TypeError"] * 5, out.stdout


def test_uninitialised_mpi_is_a_typed_error():
    # mpi4py imported without MPI_Init (the application owns MPI): py2f
    # would abort the job, so the constructor reports it as a typed error.
    pytest.importorskip("mpi4py")
    out = run_python("import mpi4py\nmpi4py.rc.initialize = False\nfrom mpi4py import MPI\n"
                     "import tenferro, tenferro.mpi\n"
                     "try:\n"
                     "    tenferro.mpi.Communicator(MPI.COMM_WORLD)\n"
                     "except tenferro.Error as e:\n"
                     "    print(e.code, '|', e)\n")
    assert out.returncode == 0, out.stdout + out.stderr
    code, message = out.stdout.split("|", 1)
    assert code.strip() == "kFailedPrecondition"
    assert "not initialised" in message and "mpi4py" in message


def test_one_rank_without_mpirun():
    pytest.importorskip("mpi4py")
    # Open MPI's singleton mode: one rank, every check of the multi-rank script.
    out = subprocess.run([sys.executable, str(HERE / "mpi_check.py"), str(SHARED)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count(": ok (1 ranks)") >= 6, out.stdout


def test_calls_after_mpi_finalize_are_typed_errors():
    pytest.importorskip("mpi4py")
    # MPI aborts the process on most calls after MPI_Finalize; tenferro checks first.
    out = run_python("from mpi4py import MPI\n"
                     "import numpy, tenferro, tenferro.mpi\n"
                     "comm = tenferro.mpi.Communicator(MPI.COMM_WORLD)\n"
                     "MPI.Finalize()\n"
                     "for call in (lambda: comm.einsum('ij,jk->ik', numpy.ones((2, 2)), numpy.ones((2, 2))),\n"
                     "             lambda: tenferro.mpi.Communicator(MPI.COMM_WORLD)):\n"
                     "    try:\n"
                     "        call()\n"
                     "    except tenferro.Error as e:\n"
                     "        print(e.code, 'finalised' in str(e))\n")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["kFailedPrecondition", "True"] * 2


def test_calls_from_a_thread_mpi_does_not_allow_are_typed_errors():
    pytest.importorskip("mpi4py")
    # Under MPI_THREAD_FUNNELED only the main thread may call MPI: another
    # thread's call is kFailedPrecondition (undefined behaviour inside MPI
    # otherwise); the main thread's calls still work.
    out = run_python("import mpi4py\nmpi4py.rc.thread_level = 'funneled'\nfrom mpi4py import MPI\n"
                     "import threading, numpy, tenferro, tenferro.mpi\n"
                     "comm = tenferro.mpi.Communicator(MPI.COMM_WORLD)\n"
                     "seen = []\n"
                     "def call():\n"
                     "    try:\n"
                     "        comm.allreduce(numpy.ones(2))\n"
                     "    except tenferro.Error as e:\n"
                     "        seen.append((e.code, 'funneled' in str(e)))\n"
                     "t = threading.Thread(target=call); t.start(); t.join()\n"
                     "print(MPI.Query_thread() == MPI.THREAD_FUNNELED, seen, comm.allreduce(numpy.ones(2)).tolist())\n")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "True [('kFailedPrecondition', True)] [1.0, 1.0]", out.stdout
