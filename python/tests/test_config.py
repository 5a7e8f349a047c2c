"""tenferro.show_config(): the `tenferro info` document from Python."""

import os
import subprocess
import sys

import pytest

import tenferro


def test_dicts_report_the_kernels_and_the_module():
    config = tenferro.show_config(mode="dicts")
    assert config["version"] == tenferro.__version__
    kernels = config["kernels"]
    assert kernels["cpu_best"] in ("avx512", "avx2", "portable")
    assert kernels["gemm"] in ("avx512", "avx2", "portable")
    assert config["python"]["module"] == tenferro._tenferro.__file__
    # One CPU engine per GEMM choice; the native one always builds.
    native = [e for e in config["cpu_engine"] if e["gemm"] == "native"][0]
    assert "error" not in native and native["providers"]
    # The provider table this module reads exists (Note [Locating provider files]).
    assert os.path.exists(config["linalg"]["provider_table"]), config["linalg"]
    assert "error" not in config["linalg"]


def test_the_cpu_isa_cap_shows():
    best = tenferro.show_config(mode="dicts")["kernels"]["cpu_best"]
    if best == "portable":
        pytest.skip("this CPU runs the portable kernels only")
    # A fresh process: the cap is read when the kernels are chosen.
    code = "import tenferro; k = tenferro.show_config(mode='dicts')['kernels']; print(k['gemm'], k['capped'], k['cap'])"
    env = dict(os.environ, TENFERRO_CPU_ISA="portable")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["portable", "True", "TENFERRO_CPU_ISA=portable"]


def test_the_lapack_provider_names_its_openblas_kernels():
    # Note [OpenBLAS kernels for new CPUs]: tenferro's own OpenBLAS copy runs
    # kernels as wide as the CPU's, and says when it chose them itself.
    lapack = tenferro.show_config(mode="dicts")["linalg"]["lapack"]
    assert "error" not in lapack, lapack
    assert lapack["openblas_kernels"]
    if "kernels_chosen_by" in lapack:
        assert lapack["openblas_kernels"] in ("SkylakeX", "Haswell"), lapack
        assert "OPENBLAS_CORETYPE" in lapack["kernels_chosen_by"]
    if not lapack["name"].startswith("lapack(openblas") or os.uname().machine != "x86_64":
        pytest.skip("an x86-64 OpenBLAS names its kernel tables")
    # A user's OPENBLAS_CORETYPE wins (a fresh process: the choice is made at load).
    code = "import tenferro; l = tenferro.show_config(mode='dicts')['linalg']['lapack']; print(l['openblas_kernels'], 'kernels_chosen_by' in l)"
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["Prescott", "False"]


def test_stdout_prints_the_document(capsys):
    assert tenferro.show_config() is None
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == f"tenferro {tenferro.__version__}"
    gemm = tenferro.show_config(mode="dicts")["kernels"]["gemm"]
    assert f"  gemm: {gemm}" in lines
    assert "python:" in lines


def test_python_dash_m_tenferro_prints_the_document(tmp_path):
    # `python -m tenferro` (tenferro/__main__.py) prints show_config()'s
    # text; --json the dict. From a scratch directory, so the package is the
    # one on the path, not a source checkout.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(tenferro.__file__))))
    run = lambda *args: subprocess.run([sys.executable, "-m", "tenferro", *args], capture_output=True, text=True,
                                       cwd=tmp_path, env=env)
    text = run()
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"tenferro {tenferro.__version__}"
    assert "kernels:" in lines and "python:" in lines
    as_json = run("--json")
    assert as_json.returncode == 0, as_json.stderr
    import json

    config = json.loads(as_json.stdout)
    assert config["version"] == tenferro.__version__
    assert config["kernels"]["gemm"] == tenferro.show_config(mode="dicts")["kernels"]["gemm"]
    bad = run("--yaml")
    assert bad.returncode == 2 and "unrecognized arguments: --yaml" in bad.stderr


def test_bad_mode():
    with pytest.raises(ValueError, match='expected mode "stdout" or "dicts", found \'yaml\''):
        tenferro.show_config(mode="yaml")


def test_clear_caches_gives_the_memory_back_to_the_system():
    # A gradient loop over many shapes fills the plan caches and the pool;
    # clear_caches() returns the memory, not only to the allocator. In a
    # fresh process, so that the RSS is this loop's.
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np, tenferro
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
        rt = tenferro.Runtime(threads=1)
        g = tenferro.grad(lambda x, w: np.sum(np.tanh(x @ w) ** 2), runtime=rt)
        rng = np.random.default_rng(0)
        g(rng.random((1, 3)), rng.random((3, 3)))
        start = rss()
        for d in range(1, 700):
            g(rng.random((d, 3)), rng.random((3, 3)))
        grown = rss() - start
        del g
        rt.clear_caches()
        print(grown, rss() - start)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    grown, left = (float(v) for v in out.stdout.split())
    if grown < 15:
        pytest.skip(f"the loop grew RSS by only {grown:.1f} MiB")
    assert left < grown / 4, f"RSS grew {grown:.1f} MiB and {left:.1f} MiB stayed after clear_caches()"
