"""The quick start of docs/python.md runs as written."""

import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")


def test_quick_start_runs():
    if not os.path.exists(DOC):
        pytest.skip("docs/python.md not found")
    text = open(DOC, encoding="utf-8").read()
    section = text.split("## Quick start", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/python.md quick start", "exec"), {})
