"""The reference reads ``zerograd.functions`` as users see it: every op's function, with
its signature and docstring, though the source binds a generated function (``exp =
op(Exp, ...)``) and the package gathers its op modules with ``import *``."""

from __future__ import annotations

from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe", reason="griffe comes with the docs requirements")
runtime_exports = pytest.importorskip(
    "runtime_exports", reason="the docs extension next to this test imports griffe"
)

CORE = Path(__file__).resolve().parents[2] / "packages" / "core" / "src"


@pytest.fixture(scope="module")
def functions():
    ext = griffe.load_extensions(runtime_exports.RuntimeExports)
    loader = griffe.GriffeLoader(
        extensions=ext, search_paths=[str(CORE)], docstring_parser=griffe.Parser.google
    )
    package = loader.load("zerograd")
    loader.resolve_aliases(implicit=False, external=None)
    return package["functions"]


def test_every_exported_name_is_a_member(functions):
    import zerograd.functions as F

    assert set(F.__all__) <= set(functions.members), set(F.__all__) - set(functions.members)


def test_a_generated_function_reads_as_a_function_with_its_signature(functions):
    exp = functions["exp"]
    assert exp.is_function
    assert [(p.name, str(p.annotation)) for p in exp.parameters] == [("x", "ArrayLike")]
    assert str(exp.returns) == "Variable"
    assert exp.docstring.value.startswith("Compute e raised to the power of ``x``")
    # parsed as the hand-written ones are (mkdocs.yml: docstring_style google)
    kinds = [section.kind.value for section in exp.docstring.parsed]
    assert kinds == ["text", "parameters", "returns", "examples"], kinds
    clip = functions["clip"]
    assert [p.name for p in clip.parameters] == ["x", "x_min", "x_max"]
    assert str(functions["sum"].parameters["keepdims"].default) == "False"
    mean = functions["mean"]  # hand-written: read from the source as before
    names = [p.name for p in mean.parameters]  # PyTorch's dim and keepdim follow DeZero's
    assert mean.is_function and names == ["x", "axis", "keepdims", "dim", "keepdim"]
