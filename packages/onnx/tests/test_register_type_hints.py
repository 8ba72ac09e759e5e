"""register's annotations, as a user's type checker reads them (the package ships py.typed)."""

import sys
import typing
from collections.abc import Callable

import pytest

import zerograd_onnx
from zerograd.testing.typecheck import run_mypy
from zerograd_onnx import OpContext

Converter = Callable[[OpContext], None]


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="typing.get_overloads is Python 3.11+ (mypy checks below)"
)
def test_register_tells_the_decorator_form_from_the_direct_call():
    # with one signature returning "decorator | converter", @register(Cls, ops=...) applied
    # to a converter was a type error: "incompatible type Callable[[Any], Any]; expected
    # OpContext"
    overloads = typing.get_overloads(zerograd_onnx.register)
    returns = {
        typing.get_type_hints(f)["converter"]: typing.get_type_hints(f)["return"] for f in overloads
    }
    assert returns == {type(None): Callable[[Converter], Converter], Converter: Converter}


DOCS_CODE = """
import zerograd
import zerograd_onnx


class Twice(zerograd.Function):
    def forward(self, x):
        return x + x


@zerograd_onnx.register(Twice, ops=("Add",))
def twice(ctx: zerograd_onnx.OpContext) -> None:
    (x,) = ctx.inputs
    ctx.node("Add", [x, x], ctx.outputs[0])


zerograd_onnx.register(Twice, twice, ops=["Add"])
zerograd_onnx.unregister(Twice)
"""


def test_mypy_accepts_register_as_the_docs_use_it(tmp_path):
    result = run_mypy(DOCS_CODE, tmp_path, "--ignore-missing-imports")
    assert result.returncode == 0, result.stdout + result.stderr
