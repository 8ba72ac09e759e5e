"""Running a test's script so that file permissions stop it (they do not stop root)."""

import os
import shutil

import pytest


def unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` as it must run for a file's permissions to apply, or skip saying why.

    A user's command runs as it is; root's runs under ``setpriv`` without the capabilities
    that read and list past permissions.
    """
    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv (util-linux) is missing to drop privileges")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", *cmd]
