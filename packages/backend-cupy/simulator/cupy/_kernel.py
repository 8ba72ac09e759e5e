"""``ElementwiseKernel`` for the CPU simulator: the CUDA C body compiled as C++ and looped.

Each call runs the body once per output element with the index in ``i``, as CuPy's
kernels do; ``raw`` parameters are indexed by flat C-order position. Supported: raw and
element-wise array parameters of one shape, scalar parameters, type placeholders bound
from the arrays. Broadcasting and CuPy's special variables (``_ind``, ``_raw_*``) are not.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

from ._array import ndarray

_CTYPES = {
    "bool": ("bool", ctypes.c_bool),
    "int8": ("int8_t", ctypes.c_int8),
    "uint8": ("uint8_t", ctypes.c_uint8),
    "int16": ("int16_t", ctypes.c_int16),
    "int32": ("int32_t", ctypes.c_int32),
    "int64": ("int64_t", ctypes.c_int64),
    "float32": ("float", ctypes.c_float),
    "float64": ("double", ctypes.c_double),
}

_PRELUDE = """
#include <cstddef>
#include <cstdint>
#include <cmath>
template <typename U> struct _Raw {
    U* p;
    U& operator[](ptrdiff_t k) const { return p[k]; }
};
"""

_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL] = {}


@dataclass(frozen=True)
class _Param:
    raw: bool
    ctype: str  # a dtype name or a placeholder ("T")
    name: str

    @property
    def placeholder(self) -> bool:
        return self.ctype not in _CTYPES


def _parse(spec: str) -> list[_Param]:
    params = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        words = part.split()
        raw = words[0] == "raw"
        if raw:
            words = words[1:]
        if len(words) != 2 or not re.fullmatch(r"[A-Za-z_]\w*", words[1]):
            raise ValueError(f"ElementwiseKernel (simulator): cannot parse parameter {part!r}")
        params.append(_Param(raw, words[0], words[1]))
    return params


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        raise RuntimeError(
            "cupy CPU simulator: ElementwiseKernel needs a C++ compiler to run its body on the "
            "CPU; install one (apt-get install g++) or set CXX."
        )
    return cxx


def _build(source: str) -> ctypes.CDLL:
    key = hashlib.sha256(source.encode()).hexdigest()[:20]
    with _lock:
        if key in _libraries:
            return _libraries[key]
        folder = os.path.join(tempfile.gettempdir(), f"zerograd-cupy-sim-{os.getuid()}")
        os.makedirs(folder, exist_ok=True)
        so = os.path.join(folder, f"k{key}.so")
        if not os.path.exists(so):
            cpp = os.path.join(folder, f"k{key}.cpp")
            with open(cpp, "w") as f:
                f.write(source)
            tmp = f"{so}.{os.getpid()}.tmp"
            done = subprocess.run(
                [_compiler(), "-O2", "-shared", "-fPIC", "-std=c++17", "-o", tmp, cpp],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise RuntimeError(f"cupy CPU simulator: kernel failed to compile:\n{done.stderr}")
            os.replace(tmp, so)
        lib = _libraries[key] = ctypes.CDLL(so)
        return lib


class ElementwiseKernel:
    """CuPy's ``ElementwiseKernel(in_params, out_params, operation, name)``, run on the CPU."""

    def __init__(self, in_params, out_params, operation, name="kernel", **options):
        self.in_params = _parse(in_params)
        self.out_params = _parse(out_params)
        self.operation = operation
        self.name = name

    def __call__(self, *args, size=None):
        params = self.in_params + self.out_params
        if len(args) != len(params):
            raise TypeError(
                f"{self.name}: expected {len(params)} arguments (inputs and outputs), "
                f"got {len(args)}; the simulator needs the outputs passed in"
            )
        types = self._bind(params, args)
        shapes = {a.shape for p, a in zip(params, args) if not p.raw and isinstance(a, ndarray)}
        if len(shapes) > 1:
            raise NotImplementedError(f"{self.name}: the simulator does not broadcast {shapes}")
        if shapes and size is not None:
            raise ValueError("Specified 'size' can be used only if all of the ndarray are 'raw'.")
        n = int(np.prod(shapes.pop())) if shapes else size
        if n is None:
            raise ValueError("Loop size is undecided.")
        arrays = [isinstance(a, ndarray) for a in args]
        lib = _build(self._source(params, types, arrays))
        c_args, writebacks, alive = [], [], []  # alive: contiguous copies outlive the call
        for p, a in zip(params, args):
            dtype = types[p.ctype] if p.placeholder else np.dtype(p.ctype)
            if isinstance(a, ndarray):
                if a.dtype != dtype:
                    raise TypeError(f"{self.name}: {p.name} is {a.dtype}, expected {dtype}")
                data = np.ascontiguousarray(a._a)
                alive.append(data)
                if p in self.out_params and data is not a._a:
                    writebacks.append((a._a, data))
                c_args.append(ctypes.c_void_p(data.ctypes.data))
            else:
                c_args.append(_CTYPES[dtype.name][1](dtype.type(a).item()))
        lib[self.name](*c_args, ctypes.c_ssize_t(n))
        for target, data in writebacks:
            target[...] = data
        outs = args[len(self.in_params) :]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _bind(self, params, args) -> dict:
        types: dict = {}
        for p, a in zip(params, args):
            if p.placeholder and isinstance(a, ndarray):
                if types.setdefault(p.ctype, a.dtype) != a.dtype:
                    raise TypeError(
                        f"{self.name}: {p.ctype} bound to {types[p.ctype]} and {a.dtype}"
                    )
            elif isinstance(a, np.ndarray):
                raise TypeError(f"Unsupported type {type(a)}")
        for p, a in zip(params, args):
            if p.placeholder and p.ctype not in types:
                types[p.ctype] = np.asarray(a).dtype
        unsupported = {t.name for t in types.values()} - set(_CTYPES)
        if unsupported:
            raise NotImplementedError(f"{self.name}: the simulator has no C type for {unsupported}")
        return types

    def _source(self, params, types, arrays) -> str:
        typedefs = "".join(f"typedef {_CTYPES[t.name][0]} {k};\n" for k, t in types.items())
        sig, body = [], []
        for p, is_array in zip(params, arrays):
            ctype = p.ctype if p.placeholder else _CTYPES[p.ctype][0]
            if p.raw:
                sig.append(f"{ctype}* {p.name}_p")
                body.append(f"_Raw<{ctype}> {p.name}{{{p.name}_p}};")
            elif p in self.out_params:
                sig.append(f"{ctype}* {p.name}_p")
                body.append(f"{ctype}& {p.name} = {p.name}_p[i];")
            elif is_array:
                sig.append(f"const {ctype}* {p.name}_p")
                body.append(f"const {ctype} {p.name} = {p.name}_p[i];")
            else:
                sig.append(f"{ctype} {p.name}")
        loop = "\n        ".join(body)
        return (
            f"{_PRELUDE}{typedefs}\n"
            f'extern "C" void {self.name}({", ".join(sig)}, ptrdiff_t _n) {{\n'
            f"    for (ptrdiff_t i = 0; i < _n; ++i) {{\n        {loop}\n"
            f"        {self.operation}\n    }}\n}}\n"
        )
