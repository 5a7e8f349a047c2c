"""The type stubs of the compiled module (tenferro/_tenferro.pyi) name what
the module has: every public class, function, method and property, with
the keyword arguments the module accepts."""

import ast
from pathlib import Path

import pytest

import tenferro
from tenferro import _tenferro

STUB = Path(tenferro.__file__).with_name("_tenferro.pyi")


def _stub():
    if not STUB.exists():
        pytest.skip(f"no stub next to the package ({STUB})")
    return ast.parse(STUB.read_text())


def _names(body):
    return {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _keywords(fn):
    args = fn.args
    return [a.arg for a in args.args + args.kwonlyargs if a.arg != "self"]


def test_package_is_marked_typed():
    assert STUB.with_name("py.typed").exists()


def test_stub_covers_the_public_module():
    tree = _stub()
    public = {n for n in dir(_tenferro) if not n.startswith("_")}
    assert public <= _names(tree.body), public - _names(tree.body)
    assert "__getattr__" in _names(tree.body)  # the private entry points


@pytest.mark.parametrize("cls", ["Runtime", "Traced"])
def test_stub_classes_match_the_built_classes(cls):
    node = next(n for n in _stub().body if isinstance(n, ast.ClassDef) and n.name == cls)
    stubbed = _names(node.body)
    built = {n for n in dir(getattr(_tenferro, cls)) if not n.startswith("_")}
    assert built == stubbed - {n for n in stubbed if n.startswith("_")}, (built ^ stubbed)
    dunders = {n for n in stubbed if n.startswith("__") and n != "__init__"}
    assert dunders <= set(dir(getattr(_tenferro, cls))), dunders - set(dir(getattr(_tenferro, cls)))


def test_stub_keywords_are_accepted():
    tree = _stub()
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    runtime = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Runtime")
    methods = {n.name: n for n in runtime.body if isinstance(n, ast.FunctionDef)}
    # Runtime(...) and default_runtime(...): the pybind11 signatures.
    init_doc = _tenferro.Runtime.__init__.__doc__
    for kw in _keywords(methods["__init__"]):
        assert f"{kw}:" in init_doc, (kw, init_doc)
    assert _keywords(fns["default_runtime"]) == ["threads"]
    # einsum's keywords: each accepted (a wrong value is fine, an unknown
    # keyword is numpy's TypeError).
    a = [[1.0, 2.0], [3.0, 4.0]]
    for fn, call in ((fns["einsum"], tenferro.einsum), (methods["einsum"], tenferro.Runtime(threads=1).einsum)):
        keywords = [k for k in _keywords(fn) if k != "subscripts"]
        for kw in keywords:
            try:
                call("ij->", a, **{kw: None})
            except TypeError as e:
                assert "unexpected keyword" not in str(e), (kw, e)
            except Exception:
                pass
        with pytest.raises(TypeError, match="unexpected keyword"):
            call("ij->", a, not_a_keyword=None)
