"""The Python quick starts of README.md and docs/python.md run as written."""

import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("doc", ["README.md", os.path.join("docs", "python.md")])
def test_quick_start_runs(doc):
    path = os.path.join(ROOT, doc)
    if not os.path.exists(path):
        pytest.skip(f"{doc} not found")
    text = open(path, encoding="utf-8").read()
    assert "## Python quick start" in text or "## Quick start" in text, doc
    heading = "## Python quick start" if "## Python quick start" in text else "## Quick start"
    section = text.split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, f"{doc} quick start", "exec"), {})
