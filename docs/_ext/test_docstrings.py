"""Docstrings say what a signature cannot: every public method has one, or overrides one.

ruff's D102 is off (it cannot see overrides): an override of a documented base method
(``Function.forward``/``vjp``, ``Layer.forward``, ``Backend``'s methods, ...) needs no
docstring of its own. This test puts the rest of D102 back: a public method or property
without a docstring must override one that has one. It runs where every package is
installed (``nox -s docs``; zerograd_cupy imports without CuPy).
"""

from __future__ import annotations

import inspect

import pytest
from check_reference import PACKAGES, modules

_METHODS = (property, staticmethod, classmethod)


def _doc(obj: object) -> str:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return (getattr(obj, "__doc__", None) or "").strip()


def _undocumented(cls: type) -> list[str]:
    """The public methods and properties ``cls`` defines with no docstring, none inherited."""
    missing = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if not (inspect.isfunction(value) or isinstance(value, _METHODS)):
            continue
        if _doc(value):
            continue
        if not any(_doc(vars(base).get(name)) for base in cls.__mro__[1:]):
            missing.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
    return missing


def test_the_check_finds_an_undocumented_method_and_passes_an_override():
    class Base:
        def forward(self):
            """Documented here."""

    class Child(Base):
        def forward(self):
            pass

        def extra(self):
            pass

    assert _undocumented(Child) == [f"{__name__}.{Child.__qualname__}.extra"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_method_has_a_docstring_or_overrides_a_documented_one(package):
    missing = []
    for module in modules(package, private=True):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                missing += _undocumented(cls)
    assert not missing, "public methods with no docstring that override none:\n" + (
        "\n".join(sorted(set(missing)))
    )
