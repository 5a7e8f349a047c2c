"""Every fenced ```python block of README.md and docs/*.md runs as written.

Each block is run on its own, in a fresh interpreter from a scratch
directory, so a block that leans on names or imports of an earlier one (or
of the test process) fails here as it would for a reader who pastes it.
Blocks that need an optional package (torch, mpi4py with tenferro.mpi) are
skipped when it is absent; an MPI block runs as a single rank, as
`python3 contract.py` without mpirun does.
"""

import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def python_blocks():
    """(doc, line, code) of every ```python block, line 1-based at the fence."""
    blocks = []
    for doc in DOCS:
        path = os.path.join(ROOT, doc)
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read()
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            blocks.append((doc, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return blocks


BLOCKS = python_blocks()


def needs(code):
    """The optional modules a block imports."""
    modules = []
    if re.search(r"^\s*import torch|tenferro\.torch", code, re.M):
        modules.append("torch")
    if "mpi4py" in code or "tenferro.mpi" in code:
        modules += ["mpi4py", "tenferro.mpi"]
    return modules


def test_the_docs_have_python_blocks():
    docs = {doc for doc, _, _ in BLOCKS}
    assert {"README.md", os.path.join("docs", "python.md")} <= docs, docs
    assert sum(doc == os.path.join("docs", "python.md") for doc, _, _ in BLOCKS) >= 7


@pytest.mark.parametrize("doc,line,code", BLOCKS, ids=[f"{doc}:{line}" for doc, line, _ in BLOCKS])
def test_python_block_runs(doc, line, code, tmp_path):
    assert not code.lstrip().startswith(">>>"), f"{doc}:{line} is a doctest; write it as a script"
    import tenferro

    # The package under test, whatever the cwd (a relative PYTHONPATH would not survive cwd=tmp_path).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tenferro.__file__)))
    path = os.pathsep.join([package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    env = dict(os.environ, OMP_NUM_THREADS="1", TENFERRO_NUM_THREADS="1", PYTHONPATH=path)
    for module in needs(code):
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, text=True,
                               cwd=tmp_path)
        if probe.returncode != 0:
            pytest.skip(f"{doc}:{line} needs {module}, which does not import here")
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, f"{doc}:{line} failed:\n{code}\n--- stderr:\n{done.stderr}"
