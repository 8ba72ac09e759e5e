"""Check that the built API reference documents every public name:
``python docs/_ext/check_reference.py SITE_DIR``.

A public name is one listed in the ``__all__`` of a module of zerograd's packages (the
modules are imported, so ``__all__`` is what it is at run time). It is documented when a
page under ``SITE_DIR/reference`` has an entry (a mkdocstrings heading) with the same last
name whose dotted path leads to the same object, of the kind the entry says (module, class,
function, attribute): ``zerograd_nn.functional.sum`` is
documented by the entry ``zerograd.functions.sum``, an alias under another name is not.
Exits 1 naming every public name that has no entry.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
# the import package of each distribution in packages/
PACKAGES = (
    "zerograd",
    "zerograd_numpy",
    "zerograd_cupy",
    "zerograd_nn",
    "zerograd_viz",
    "zerograd_distributed",
    "zerograd_onnx",
)


class _Entries(HTMLParser):
    """The mkdocstrings entries of one page: the id of each heading (``doc-heading``) with
    the kind of object its block (``doc-object doc-<kind>``) documents."""

    def __init__(self) -> None:
        super().__init__()
        self.kind = ""
        self.found: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "doc-object" in classes:
            kinds = [c[4:] for c in classes if c.startswith("doc-") and c != "doc-object"]
            self.kind = kinds[0] if kinds else ""
        elif "doc-heading" in classes and found.get("id"):
            self.found[found["id"]] = self.kind


def entries(reference: Path) -> dict[str, str]:
    """The dotted paths that the pages in the folder ``reference`` document, each with the
    kind of object documented there (``module``, ``class``, ``function``, ``attribute``)."""
    found: dict[str, str] = {}
    for page in sorted(reference.rglob("*.html")):
        parser = _Entries()
        parser.feed(page.read_text(encoding="utf-8"))
        found.update(parser.found)
    return found


def _is_kind(obj: object, kind: str) -> bool:
    """Whether an entry of ``kind`` can document ``obj`` (an attribute can be anything)."""
    if kind == "module":
        return isinstance(obj, ModuleType)
    if kind in ("class", "function"):
        return isinstance(obj, type) == (kind == "class") and not isinstance(obj, ModuleType)
    return True


def modules(package: str, private: bool = False) -> list[ModuleType]:
    """``package`` and its modules: those whose dotted path has a part starting with ``_``
    only when ``private``."""
    top = importlib.import_module(package)
    found = [top]
    for info in pkgutil.walk_packages(getattr(top, "__path__", []), package + "."):
        if private or not any(part.startswith("_") for part in info.name.split(".")):
            try:
                found.append(importlib.import_module(info.name))
            except ImportError as exc:
                raise ImportError(f"cannot import {info.name} to read its __all__: {exc}") from exc
    return found


def resolve(path: str) -> list[object]:
    """The objects the dotted ``path`` can name: from its first part, each next part is an
    attribute or, where the object is a package, a submodule (``zerograd_nn.functional.linear``
    is both the function ``linear`` and the module that defines it)."""
    parts = path.split(".")
    try:
        found = [importlib.import_module(parts[0])]
    except ImportError:
        return []
    for n, part in enumerate(parts[1:], start=2):
        step = []
        for obj in found:
            if hasattr(obj, part):
                step.append(getattr(obj, part))
            if isinstance(obj, ModuleType) and hasattr(obj, "__path__"):
                try:
                    step.append(importlib.import_module(".".join(parts[:n])))
                except ImportError:
                    pass
        found = step
    return found


def undocumented(reference: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """``module.name`` for each name in a ``__all__`` of ``packages`` with no entry."""
    by_name: dict[str, list[object]] = {}
    for path, kind in entries(reference).items():
        objects = [obj for obj in resolve(path) if _is_kind(obj, kind)]
        by_name.setdefault(path.rsplit(".", 1)[-1], []).extend(objects)
    missing = []
    for package in packages:
        for module in modules(package):
            for name in getattr(module, "__all__", ()):
                obj = getattr(module, name)
                if not any(obj is documented for documented in by_name.get(name, ())):
                    missing.append(f"{module.__name__}.{name}")
    return missing


def main(argv: list[str]) -> int:
    """Check the site folder ``argv[0]`` (default ``site``); print what is missing."""
    site = Path(argv[0] if argv else ROOT / "site").resolve()
    try:
        missing = undocumented(site / "reference")
    except ImportError as exc:
        print(f"check_reference: {exc}")
        return 1
    if missing:
        print(
            f"{len(missing)} public name(s) (listed in a module's __all__) missing from the "
            f"API reference in {site / 'reference'}; add them to a page of docs/reference/:"
        )
        for name in missing:
            print(f"  {name}")
        return 1
    print(f"every name in the __all__ of {', '.join(PACKAGES)} is in the API reference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
