"""The docs page's op table says what the registry holds (docs/export-onnx.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zerograd_onnx.registry import CONVERTERS

PAGE = Path(__file__).resolve().parents[3] / "docs" / "export-onnx.md"


def _rows():
    if not PAGE.is_file():
        pytest.skip(f"{PAGE} not found (tests run outside the repository checkout)")
    text = PAGE.read_text(encoding="utf-8").split("## The op table", 1)[1]
    table = text.split("| --- | --- | --- |\n", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines():
        functions, _, operators = line.strip("|").split("|")
        operators = re.sub(r"\([^)]*\)", "", operators)
        yield re.findall(r"`(\w+)`", functions), set(re.findall(r"`(\w+)`", operators))


def test_the_op_table_lists_every_converter_with_its_operators():
    by_name = {cls.__name__: fn for cls, fn in CONVERTERS.items()}
    listed = []
    for names, operators in _rows():
        listed += names
        assert operators == {op for name in names for op in by_name[name].onnx_ops}, names
    assert sorted(listed) == sorted(by_name)
