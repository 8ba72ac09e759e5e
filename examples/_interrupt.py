"""Ctrl-C in the examples: one line and exit status 130 (the shell's for SIGINT), as the
Trainer's scripts end, not a traceback from wherever the training happened to be."""

from __future__ import annotations

import _thread  # the standard library's low-level threads: interrupt_main
import sys
from collections.abc import Callable
from pathlib import Path


def run_main(main: Callable[[], None]) -> None:
    """Call ``main()``; on Ctrl-C say so in one line on stderr and exit with status 130.

    The examples' files are written whole or not at all (zerograd-viz writes a temporary
    file and renames it), so an interrupted run leaves only complete files behind.

    A Ctrl-C that lands in a weak reference's callback (the graph frees itself that way)
    is one Python ignores: it prints "Exception ignored in ..." and goes on. While
    ``main()`` runs, such a KeyboardInterrupt is raised again in the code the callback
    interrupted.
    """
    previous = sys.unraisablehook

    def hook(unraisable: object) -> None:
        if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
            # SIGINT again, from a new thread (started without waiting for it): raised
            # in this hook it would be ignored again; it reaches the main thread after the
            # hook has returned, in the code the callback interrupted (or, ignored once
            # more, comes back here)
            _thread.start_new_thread(_thread.interrupt_main, ())
        else:
            previous(unraisable)

    sys.unraisablehook = hook
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
    finally:
        sys.unraisablehook = previous
