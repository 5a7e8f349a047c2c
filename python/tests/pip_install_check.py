"""`pip install .` of a built tree (ctest python_pip_install): installs the
package with pip into a fresh directory, then imports it from there in a new
process and checks that the extension, the LAPACK module and the external
BLAS module it loads are the installed copies (Note [Locating provider
files]).

usage: pip_install_check.py SOURCE_DIR BUILD_DIR"""

import glob
import os
import subprocess
import sys
import tempfile

CHECK = r"""
import numpy as np, tenferro
pkg = tenferro.__file__.rsplit("/", 1)[0]
assert pkg == TARGET + "/tenferro", pkg
a = np.random.default_rng(0).random((5, 5)) + 5 * np.eye(5)
x = tenferro.linalg.solve(a, np.ones(5))
assert np.allclose(a @ x, 1)
rt = tenferro.Runtime(gemm="openblas", threads=1)
c = tenferro.einsum("ij,jk->ik", a, a, runtime=rt)
assert np.allclose(c, a @ a)
assert np.allclose(tenferro.fft.fft(a[0]), np.fft.fft(a[0]))
loaded = {l.split()[-1] for l in open("/proc/self/maps") if "tenferro" in l.rsplit("/", 1)[-1]}
for kind in ("_tenferro", "tenferro_lapack_", "tenferro_blas_"):
    mine = [m for m in loaded if m.rsplit("/", 1)[1].startswith(kind)]
    assert mine and all(m.startswith(pkg + "/") for m in mine), (kind, sorted(loaded))
import glob
assert bool(glob.glob(pkg + "/_mpi*.so")) == HAS_MPI, "tenferro._mpi: installed iff built"
import os
assert os.path.exists(pkg + "/py.typed") and os.path.exists(pkg + "/_tenferro.pyi"), "type stubs installed"
if HAS_MPI:  # tenferro.mpi works from the installed copy
    from mpi4py import MPI
    import tenferro.mpi
    assert tenferro.mpi._mpi.__file__.startswith(pkg + "/")
    comm = tenferro.mpi.Communicator(MPI.COMM_WORLD)
    assert np.allclose(comm.einsum("ij,jk->ik", a, a), a @ a)
print("installed", tenferro.__version__, "from", pkg)
"""


def main():
    source, build = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as target:
        env = dict(os.environ, TENFERRO_CMAKE_BUILD_DIR=build, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        subprocess.check_call(
            [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-compile", "--quiet",
             "--target", target, source],
            env=env,
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = target
        has_mpi = bool(glob.glob(os.path.join(build, "python", "tenferro", "_mpi*.so")))
        subprocess.check_call([sys.executable, "-c", f"TARGET = {target!r}\nHAS_MPI = {has_mpi}\n" + CHECK], env=env,
                              cwd=target)


if __name__ == "__main__":
    main()
