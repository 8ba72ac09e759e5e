"""Hatchling metadata hook: pins on sibling zerograd distributions follow this release.

The version itself is read by hatchling from the repository's ``VERSION`` file
(``[tool.hatch.version]``); this hook turns each ``{pin}`` in the templates of
``[tool.hatch.metadata.hooks.custom]`` into ``>=VERSION,<NEXT_MINOR`` so that packages
released together require each other's release series. Built from an sdist, hatchling reads
the finished metadata from ``PKG-INFO`` instead and this hook has nothing to fill in.

Every package holds an identical copy (an sdist must be self-contained); the ``smoke`` nox
session checks that the copies agree.
"""

from __future__ import annotations

from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface


def sibling_pin(version: str) -> str:
    """The requirement specifier on a sibling distribution for release ``version``."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return f">={version},<{major}.{minor + 1}"


class SiblingPins(MetadataHookInterface):
    """Fill ``dependencies`` and ``optional-dependencies`` from the hook's templates."""

    def update(self, metadata: dict[str, Any]) -> None:
        """Replace ``{pin}`` in every template with this release's sibling pin."""
        pin = sibling_pin(metadata["version"])
        if "dependencies" in self.config:
            metadata["dependencies"] = [d.format(pin=pin) for d in self.config["dependencies"]]
        extras = self.config.get("optional-dependencies")
        if extras is not None:
            metadata["optional-dependencies"] = {
                name: [d.format(pin=pin) for d in deps] for name, deps in extras.items()
            }
