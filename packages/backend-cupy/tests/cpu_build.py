"""Kernel bodies compiled as C++ for the CPU: the CUDA C that CuPy compiles, in a plain loop."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")

RAW = """
#include <cstddef>
template <typename T> struct Raw {
    const T* p;
    const T& operator[](ptrdiff_t k) const { return p[k]; }
};
"""
"""CuPy's ``raw`` kernel arguments as the bodies index them (``x[k]``), for the harnesses."""


def build(source: str, folder: Path, flags: tuple[str, ...] = ("-O1",)) -> ctypes.CDLL:
    """Compile ``source`` into a shared library in ``folder`` and load it (skip without a
    C++ compiler, saying so); ``flags`` go to the compiler before the fixed ones."""
    if CXX is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++) to build the kernel bodies for the CPU")
    (folder / "k.cpp").write_text(source)
    so, cpp = folder / "k.so", folder / "k.cpp"
    cmd = [CXX, *flags, "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(so), str(cpp)]
    subprocess.run(cmd, check=True, capture_output=True)
    return ctypes.CDLL(str(so))


def ptr(a: Any) -> ctypes.c_void_p:
    """The address of numpy array ``a``'s data, as a ctypes argument."""
    return a.ctypes.data_as(ctypes.c_void_p)
