"""Ctrl-C in the examples: one line and exit status 130 (the shell's for SIGINT), as the
Trainer's scripts end, not a traceback from wherever the training happened to be."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def run_main(main: Callable[[], None]) -> None:
    """Call ``main()``; on Ctrl-C say so in one line on stderr and exit with status 130.

    The examples' files are written whole or not at all (zerograd-viz writes a temporary
    file and renames it), so an interrupted run leaves only complete files behind.
    """
    try:
        main()
    except KeyboardInterrupt:
        script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "example"
        print(
            f"{script}: interrupted (Ctrl-C); the files written before it are complete, "
            "the rest were not written",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(130) from None
