"""Generated fused-chain kernel bodies, compiled as C++ for the CPU and compared with numpy.

The body ``fusion.kernel_parts`` writes for ``cupy.ElementwiseKernel`` runs here in a plain
loop, on float32 and float64, its arithmetic helpers (CUDA's ``__fmul_rn`` and kin on the
GPU, never contracted) written as plain operations built with ``-ffp-contract=off``, against
the ops applied one at a time with numpy, as the unfused replay does.
Chains of exact ops (one IEEE operation each) must match byte for byte. Chains calling
exp/log/tanh may differ in the last bits: numpy uses its own (SIMD) implementations, the
host C library another, so those are held to a few ulp (the bound below), not to bytes.
"""

from __future__ import annotations

import ctypes
import zlib

import fusion_steps
import numpy as np
import pytest
from cpu_build import build, ptr

import zerograd.functions as F
from zerograd import Parameter, Variable, no_grad, static_graph
from zerograd.backends import backend_of
from zerograd.backends.chains import ARITY, Chain, Step
from zerograd.testing.chains import FUNCTIONS, fuse_step_by_step
from zerograd_cupy.fusion import EXACT, EXPRESSIONS, PREAMBLE, kernel_parts

MAX_ULP = 8
"""Per-chain bound for chains with a transcendental op. numpy's and glibc's exp, log, tanh, sin
and cos each differ from the true value by about an ulp; tanh_grad's ``1 - y*y`` then
magnifies the difference in ``y`` by up to 2y^2/(1-y^2), about 3x for |y| <= 0.77 (7 ulp seen
in float32)."""

S = Step
CHAINS = {
    # shapes of the bench MLP/CNN replay steps' elementwise runs, written out by hand
    "sgd_update": Chain(("p", "g"), (S("a", "mul", ("g", 0.01)), S("o", "sub", ("p", "a")))),
    "bias_relu": Chain(("x", "b"), (S("a", "add", ("x", "b")), S("o", "maximum", ("a", 0.0)))),
    "relu_grad": Chain(
        ("x", "gy"), (S("m", "greater", ("x", 0.0)), S("o", "where", ("m", "gy", 0.0)))
    ),
    "mse_grad": Chain(
        ("y", "t"),
        (S("d", "sub", ("y", "t")), S("e", "mul", ("d", 2.0)), S("o", "div", ("e", 64.0))),
    ),
    "momentum": Chain(
        ("v", "g", "p"),
        (
            S("a", "mul", ("v", 0.9)),
            S("b", "mul", ("g", 0.01)),
            S("c", "sub", ("a", "b")),
            S("o", "add", ("p", "c")),
        ),
    ),
    "rms_scale": Chain(
        ("g", "s"), (S("r", "sqrt", ("s",)), S("e", "add", ("r", 1e-8)), S("o", "div", ("g", "e")))
    ),
    "neg_maximum_nan": Chain(("x", "y"), (S("n", "neg", ("x",)), S("o", "maximum", ("n", "y")))),
    "sigmoid": Chain(
        ("x",),
        (
            S("n", "neg", ("x",)),
            S("e", "exp", ("n",)),
            S("d", "add", ("e", 1.0)),
            S("o", "div", (1.0, "d")),
        ),
    ),
    "tanh_grad": Chain(
        ("x", "gy"),
        (
            S("y", "tanh", ("x",)),
            S("q", "mul", ("y", "y")),
            S("r", "sub", (1.0, "q")),
            S("o", "mul", ("gy", "r")),
        ),
    ),
    # the vjps of sin and cos, as a first-order replay records them
    "sin_grad": Chain(("x", "gy"), (S("c", "cos", ("x",)), S("o", "mul", ("gy", "c")))),
    "cos_grad": Chain(
        ("x", "gy"),
        (S("n", "neg", ("gy",)), S("s", "sin", ("x",)), S("o", "mul", ("n", "s"))),
    ),
    "softmax_exp": Chain(("x", "m"), (S("d", "sub", ("x", "m")), S("o", "exp", ("d",)))),
    "log_prob": Chain(("p",), (S("a", "add", ("p", 1e-7)), S("o", "log", ("a",)))),
}


def test_the_chains_cover_every_op():
    used = {s.op for c in CHAINS.values() for s in c.steps}
    assert used == set(ARITY) == set(EXPRESSIONS)


def _harness(chains: dict[str, Chain]) -> str:
    parts = [
        "#include <cmath>\n#include <cstddef>\n",
        "using std::exp; using std::log; using std::tanh; using std::sqrt;\n",
        "using std::sin; using std::cos;\n",
        # the CPU twins of fusion.PREAMBLE's helpers (the file is built without contraction)
        "template <typename T> static T zg_add(T a, T b) { return a + b; }\n",
        "template <typename T> static T zg_sub(T a, T b) { return a - b; }\n",
        "template <typename T> static T zg_mul(T a, T b) { return a * b; }\n",
        "template <typename T> static T zg_div(T a, T b) { return a / b; }\n",
    ]
    for key, chain in chains.items():
        _, _, body = kernel_parts(chain)
        loads = "".join(
            f"const T in{k} = ((const T*)ins[{k}])[scalar[{k}] ? 0 : i];\n"
            for k in range(len(chain.inputs))
        )
        parts.append(
            f"template <typename T> static void {key}(void** ins, const int* scalar, T* out,"
            f" ptrdiff_t n) {{\n for (ptrdiff_t i = 0; i < n; ++i) {{\n T& out0 = out[i];\n"
            f"{loads}{body}\n }}\n}}\n"
            f'extern "C" void {key}_f(void** a, const int* s, float* o, ptrdiff_t n)'
            f" {{ {key}<float>(a, s, o, n); }}\n"
            f'extern "C" void {key}_d(void** a, const int* s, double* o, ptrdiff_t n)'
            f" {{ {key}<double>(a, s, o, n); }}\n"
        )
    return "".join(parts)


CONTRACTION_OFF = ("-O2", "-ffp-contract=off")
"""The CPU twin of kernels that never contract a multiply and an add (see fusion.PREAMBLE)."""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_harness(CHAINS), tmp_path_factory.mktemp("fusion"), CONTRACTION_OFF)


def _unfused(chain: Chain, values: dict[str, np.ndarray], dtype) -> np.ndarray:
    env = dict(values)
    for step in chain.steps:
        args = [env[a] if isinstance(a, str) else dtype.type(a) for a in step.args]
        env[step.name] = np.asarray(FUNCTIONS[step.op](np, *args), dtype=dtype)
    return env[chain.steps[-1].name]


def _fused(lib, key: str, chain: Chain, values: dict, dtype, n: int) -> np.ndarray:
    arrays = [np.require(values[name], requirements="C") for name in chain.inputs]
    ins = (ctypes.c_void_p * len(arrays))(*[ptr(a).value for a in arrays])
    scalar = (ctypes.c_int * len(arrays))(*[int(a.ndim == 0) for a in arrays])
    out = np.empty(n, dtype=dtype)
    fn = getattr(lib, f"{key}_{'f' if dtype == np.float32 else 'd'}")
    fn(ins, scalar, ptr(out), ctypes.c_ssize_t(n))
    return out


def _inputs(key: str, chain: Chain, dtype, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    values = {}
    for name in chain.inputs:
        if key == "softmax_exp" and name == "m":
            values[name] = np.asarray(2.5, dtype=dtype)  # the row max, broadcast as a 0-d operand
        elif name in ("s", "p") and key in ("rms_scale", "log_prob"):
            values[name] = rng.uniform(0.0, 3.0, n).astype(dtype)
        elif key == "tanh_grad" and name == "x":
            # |tanh(x)| <= 0.77 here, so 1 - y*y does not magnify tanh's last-bit difference
            values[name] = rng.uniform(-1.0, 1.0, n).astype(dtype)
        else:
            values[name] = rng.normal(0.0, 2.0, n).astype(dtype)
    if key == "neg_maximum_nan":
        values["x"][::7] = np.nan
        values["y"][3::11] = np.nan
    if key in ("relu_grad", "bias_relu"):
        values["x"][::5] = 0.0
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("key", sorted(CHAINS))
def test_fused_body_matches_the_unfused_ops(lib, key, dtype):
    dtype = np.dtype(dtype)
    chain, n = CHAINS[key], 4099
    values = _inputs(key, chain, dtype, n)
    fused = _fused(lib, key, chain, values, dtype, n)
    unfused = np.broadcast_to(_unfused(chain, values, dtype), (n,))
    if all(s.op in EXACT for s in chain.steps):
        assert fused.tobytes() == np.ascontiguousarray(unfused).tobytes()
    else:
        np.testing.assert_array_max_ulp(fused, unfused, maxulp=MAX_ULP)


def test_multiply_then_add_stays_two_roundings():
    """``a * b + c`` is two helpers, each one CUDA round-to-nearest intrinsic for float and
    for double, which the compiler never merges into a fused multiply-add; the kernel keeps
    CuPy's default options (its ufuncs' own), so exp and tanh compile as theirs do."""
    chain = Chain(("a", "b", "c"), (S("m", "mul", ("a", "b")), S("o", "add", ("m", "c"))))
    _, _, body = kernel_parts(chain)
    assert body == "const T t0 = zg_mul(in0, in1);\nout0 = zg_add(t0, in2);"
    for op in ("add", "sub", "mul", "div"):
        assert f"float zg_{op}(float a, float b) {{ return __f{op}_rn(a, b); }}" in PREAMBLE
        assert f"double zg_{op}(double a, double b) {{ return __d{op}_rn(a, b); }}" in PREAMBLE
        assert EXPRESSIONS[op] == f"zg_{op}({{0}}, {{1}})"


def test_chain_errors_name_the_problem():
    with pytest.raises(ValueError, match="no elementwise op 'cosh'"):
        Chain(("x",), (S("o", "cosh", ("x",)),))
    with pytest.raises(ValueError, match="add takes 2 operands, got 1"):
        Chain(("x",), (S("o", "add", ("x",)),))
    with pytest.raises(ValueError, match="step 'o' reads 'y' before it is made"):
        Chain(("x",), (S("o", "add", ("x", "y")),))


def test_kernel_parts_name_inputs_and_constants():
    in_params, out_params, body = kernel_parts(CHAINS["sgd_update"])
    assert (in_params, out_params) == ("T in0, T in1", "T out0")
    assert body == "const T t0 = zg_mul(in1, (T)(0.01));\nout0 = zg_sub(in0, t0);"


def test_a_replay_runs_its_chains_as_the_compiled_bodies(tmp_path, monkeypatch):
    """The chains a CuPy replay would compile, found in real replays, built here as C++ and
    given to numpy's backend as its ``fuse``: the replays keep eager's bytes (exact ops)."""
    compiled = []

    def fuse(chain, dtype):
        key = f"chain{len(compiled)}"
        folder = tmp_path / key
        folder.mkdir()
        built = build(_harness({key: chain}), folder, CONTRACTION_OFF)
        compiled.append([s.op for s in chain.steps])

        def run(*arrays):
            shape = max((a.shape for a in arrays), key=len)
            n = int(np.prod(shape))
            values = dict(zip(chain.inputs, arrays))
            return _fused(built, key, chain, values, dtype, n).reshape(shape)

        return run

    monkeypatch.setattr(backend_of(np.zeros(1)), "fuse", fuse)
    w = Parameter(np.linspace(-2.0, 2.0, 12).reshape(4, 3))
    w_eager = Parameter(w.data.copy())

    def make(w):
        def step(x):
            x = Variable(x)
            w.cleargrad()
            b = x * w - 0.5  # the product is read by the subtraction only
            d = -(b / 3.0) + x  # Div's vjp reads 3.0 only: the five ops are one chain
            y = F.sum(d * d)
            y.backward()
            with no_grad():
                scaled = (x * 0.5 + w) / (x - 2.0)  # nothing reads what it makes: one chain
            return y, w.grad, scaled

        return step

    eager, replayed = make(w_eager), static_graph(make(w))
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.standard_normal((4, 3))
        for got, want in zip(replayed(x), eager(x)):
            assert got.data.tobytes() == want.data.tobytes()
    assert replayed.counts["replayed"] == 2
    # the forward's chain, the no_grad chain, and in the backward d's gradient through
    # neg's and div's vjps (their operations, recorded as forwards)
    assert sorted(compiled) == [
        ["mul", "add", "sub", "div"],
        ["mul", "sub", "div", "neg", "add"],
        ["neg", "div"],
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_gpu_tests_step_finds_its_chains_on_the_cpu(dtype, monkeypatch):
    """The CPU twin of test_cupy_gpu.py's fused replay: the same step on numpy, with the
    step-by-step reference as numpy's ``fuse``, finds the chains and saves the calls that
    the GPU test expects, with eager's bits."""
    fused_chains = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    start = np.linspace(-2.0, 2.0, 12).reshape(4, 3).astype(dtype)
    eager = fusion_steps.make(Parameter(start.copy()))
    fused = static_graph(fusion_steps.make(Parameter(start.copy())))
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.standard_normal((4, 3)).astype(dtype)
        for got, want in zip(fused(x), eager(x)):
            assert got.data.tobytes() == want.data.tobytes()
    assert [r.ops for r in fused_chains] == fusion_steps.CHAINS
    monkeypatch.setattr(backend_of(np.zeros(1)), "fuse", lambda chain, dtype: None)
    unfused = static_graph(fusion_steps.make(Parameter(start.copy())))
    for _ in range(3):
        unfused(x)
    saved = fusion_steps.kernel_calls(unfused) - fusion_steps.kernel_calls(fused)
    assert saved == fusion_steps.SAVED == 12


def test_the_cupy_backend_fuses_float32_and_float64_chains_only():
    from zerograd_cupy.backend import CupyBackend

    backend = CupyBackend()  # asks nothing of CuPy: the answer comes before any import
    for dtype in ("float16", "int64", "complex64", "bool"):
        assert backend.fuse(CHAINS["sgd_update"], np.dtype(dtype)) is None
