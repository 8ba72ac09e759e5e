"""Developer sessions for the zerograd monorepo: ``nox`` runs the default set (what CI runs).

Sessions never download a Python: they use the interpreter nox runs under.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"

nox.options.download_python = "never"
nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.sessions = [
    "lint",
    "tests",
    "strict_backend(core)",
    "strict_backend(nn)",
    "cupy_without_gpu",
    "smoke",
    "docs",
    "doc_code",
    "plugin_example",
    "jax_example",
    "torch_example",
    "distributed",
    "onnx",
]

# distribution folder -> the sibling folders it needs installed for its tests
DEPENDS = {
    "core": ["core"],
    "backend-numpy": ["core", "backend-numpy"],
    "backend-cupy": ["core", "backend-cupy"],
    "nn": ["core", "nn", "viz"],  # viz: the book's graph steps and models' plot() run too
    "viz": ["core", "viz"],
}
# extra pip requirements a package's tests need
TEST_EXTRAS = {
    "core": ["hypothesis>=6.80"],
    "nn": ["hypothesis>=6.80", "pillow", "tqdm", "scikit-learn", "matplotlib>=3.7"],
    "viz": ["matplotlib>=3.7"],
}
NUMPY = {"1.26": "numpy==1.26.*", "2": "numpy>=2,<3"}
PACKAGE_NAMES = [p for p in DEPENDS if (PACKAGES / p / "tests").is_dir()]


def _combos() -> list:
    """(package, backend, numpy) triples: every package on numpy 1.26 and 2.x; the cupy
    backend for the packages that compute (on numpy 2 only: CuPy follows current numpy)."""
    combos = []
    for package in PACKAGE_NAMES:
        for numpy in NUMPY:
            combos.append(nox.param(package, "numpy", numpy, id=f"{package}-numpy-np{numpy}"))
        if package in ("core", "nn", "backend-cupy"):
            combos.append(nox.param(package, "cupy", "2", id=f"{package}-cupy-np2"))
    return combos


# the strict backend: the array-api-strict example plugin, its arrays on a device that
# refuses implicit conversion to numpy (see examples/backend-arrayapi)
STRICT = ROOT / "examples" / "backend-arrayapi"


def _gpu_missing() -> str | None:
    """None when an NVIDIA GPU looks usable, else the reason why not."""
    if shutil.which("nvidia-smi") is None:
        return "no NVIDIA driver (nvidia-smi not found) on this machine"
    return None


def _cupy_extra() -> str:
    """cuda13 when the driver speaks CUDA 13+, else cuda12 (override: ZEROGRAD_CUPY_EXTRA)."""
    if os.environ.get("ZEROGRAD_CUPY_EXTRA"):
        return os.environ["ZEROGRAD_CUPY_EXTRA"]
    out = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    m = re.search(r"CUDA Version:\s*(\d+)", out)
    return "cuda13" if m and int(m.group(1)) >= 13 else "cuda12"


@nox.session
@nox.parametrize("package, backend, numpy", _combos())
def tests(session: nox.Session, package: str, backend: str, numpy: str) -> None:
    """Run one package's tests on one backend and numpy version."""
    # numpy is always there: the default backend for scalars, to_cpu() and the mixing tests
    env = {"ZEROGRAD_TEST_BACKEND": backend}
    folders = dict.fromkeys(DEPENDS[package] + ["backend-numpy", f"backend-{backend}"])
    reqs = [str(PACKAGES / f) for f in folders]
    if backend == "cupy":
        reason = _gpu_missing()
        if reason:
            session.skip(f"cupy backend not tested: {reason}")
        reqs = [r + f"[{_cupy_extra()}]" if r.endswith("backend-cupy") else r for r in reqs]
    # the packages promise their annotations (py.typed): the type-hint tests run mypy over
    # documented code, once per package (numpy 2's stubs)
    typing = ["mypy"] if numpy == "2" and backend == "numpy" and package in ("core", "nn") else []
    session.install(NUMPY[numpy], "pytest>=8", *TEST_EXTRAS.get(package, []), *typing, *reqs)
    session.run(
        "pytest",
        str(PACKAGES / package / "tests"),
        "-q",
        "-rs",
        *session.posargs,
        env=env,
    )


@nox.session
@nox.parametrize("package", ["core", "nn"], ids=["core", "nn"])
def strict_backend(session: nox.Session, package: str) -> None:
    """A package's whole suite on the strict backend (array-api-strict arrays on a device
    that refuses implicit host conversion, installed through its entry point like any
    plugin): a call outside the contract, or data reaching numpy other than through
    ``Backend.to_numpy``, fails a test. Both are default sessions."""
    reqs = [str(PACKAGES / f) for f in dict.fromkeys(DEPENDS[package] + ["backend-numpy"])]
    session.install(NUMPY["2"], "pytest>=8", *TEST_EXTRAS.get(package, []), *reqs, str(STRICT))
    session.run(
        "pytest", str(PACKAGES / package / "tests"), "-q", "-rs", *session.posargs,
        env={"ZEROGRAD_TEST_BACKEND": "arrayapi"},
    )  # fmt: skip


@nox.session
def cupy_without_gpu(session: nox.Session) -> None:
    """The real CuPy wheel where no GPU is usable: the backend must say why, not break."""
    if _gpu_missing() is None:
        session.skip("an NVIDIA GPU is present: the tests(...-cupy-np2) sessions cover it")
    extra = os.environ.get("ZEROGRAD_CUPY_EXTRA", "cuda12")
    folders = ["core", "backend-numpy", "backend-cupy"]
    reqs = [str(PACKAGES / f) for f in folders]
    reqs[-1] += f"[{extra}]"
    session.install("numpy>=2,<3", "pytest>=8", *reqs)
    tests = PACKAGES / "backend-cupy" / "tests"
    session.run(
        "pytest",
        str(tests / "test_cupy_real_without_gpu.py"),
        "-q",
        "-rs",
        env={"ZEROGRAD_EXPECT_REAL_CUPY": "1"},
    )


@nox.session
def gpu(session: nox.Session) -> None:
    """Everything that needs a real GPU, in one command (not a default session): the GPU
    versions, then the cupy suites, the examples next to the CPU and the GPU benchmark, via
    ``packages/backend-cupy/gpu_check.py`` (its docstring says what runs). On a machine
    without an NVIDIA driver it skips, saying so; the script itself exits 3 without a GPU."""
    reason = _gpu_missing()
    if reason:
        session.skip(f"nothing to run: {reason}")
    folders = ["core", "backend-numpy", "nn", "viz", "distributed"]
    reqs = [str(PACKAGES / f) for f in folders]
    reqs.append(f"{PACKAGES / 'backend-cupy'}[{_cupy_extra()}]")
    session.install(NUMPY["2"], "pytest>=8", "pytest-xdist", "mpich", *TEST_EXTRAS["nn"], *reqs)
    # the benchmark's PyTorch CUDA column: PyPI's Linux wheel is the CUDA build (optional)
    session.install(TORCH, success_codes=[0, 1], silent=True)
    script = PACKAGES / "backend-cupy" / "gpu_check.py"
    session.run("python", str(script), "--out", str(ROOT / "gpu-run"), *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


# what a wheel of ours may hold besides its import package's .py files and py.typed
DIST_INFO_FILES = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}
# files every package folder holds as an identical copy (an sdist must be self-contained)
COPIED = {"LICENSE": ROOT / "LICENSE", "hatch_build.py": PACKAGES / "core" / "hatch_build.py"}


def _wheel_problems(wheel: Path, version: str) -> list[str]:
    """What is wrong with one built wheel: missing LICENSE/py.typed, tests or stray files."""
    import zipfile

    name, wheel_version = wheel.name.split("-")[:2]
    problems = [] if wheel_version == version else [f"version {wheel_version}, not {version}"]
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"{name}-{wheel_version}.dist-info/"
    for required in (f"{name}/py.typed", dist_info + "licenses/LICENSE", f"{name}/__init__.py"):
        if required not in names:
            problems.append(f"{required} is missing")
    for entry in names:
        if entry.startswith(dist_info):
            if entry[len(dist_info) :] not in DIST_INFO_FILES:
                problems.append(f"unexpected {entry}")
        elif not entry.startswith(f"{name}/") or not entry.endswith((".py", "/py.typed")):
            problems.append(f"stray file {entry}")
        elif "/tests/" in entry or "/test_" in entry or "__pycache__" in entry:
            problems.append(f"test or cache file {entry}")
    return [f"{wheel.name}: {p}" for p in problems]


@nox.session
def smoke(session: nox.Session) -> None:
    """Build every sdist and wheel (the wheel from the sdist), check them as a package index
    would (``twine check``) and what each wheel holds, then install only zerograd +
    zerograd-numpy into a fresh venv and use it."""
    session.install("build", "pip", "twine")
    folders = sorted(p for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists())
    stale = [f"{f / n}" for f in folders for n, src in COPIED.items() if
             not (f / n).is_file() or (f / n).read_bytes() != src.read_bytes()]  # fmt: skip
    if stale:
        session.error(f"these copies differ from {', '.join(map(str, COPIED.values()))}: {stale}")
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for folder in folders:
        session.run("python", "-m", "build", "-q", "--outdir", str(dist), str(folder))
    built = sorted(dist.iterdir())
    session.log("built: " + ", ".join(p.name for p in built))
    session.run("twine", "check", "--strict", *map(str, built))
    version = (ROOT / "VERSION").read_text().strip()
    wheels = [p for p in built if p.suffix == ".whl"]
    problems = [line for w in wheels for line in _wheel_problems(w, version)]
    if len(wheels) != len(folders) or problems:
        session.error(f"{len(wheels)} wheels for {len(folders)} packages; " + "; ".join(problems))
    session.log(f"{len(wheels)} wheels hold LICENSE and py.typed, no tests, no stray files")
    venv = Path(session.create_tmp()) / "smoke-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    py = str(venv / "bin" / "python")
    picked = [str(w) for w in wheels if w.name.split("-")[0] in ("zerograd", "zerograd_numpy")]
    session.run(py, "-m", "pip", "install", "-q", *picked, external=True)
    session.run(py, str(ROOT / "benchmarks" / "smoke.py"), external=True)


@nox.session
def distributed(session: nox.Session) -> None:
    """zerograd-distributed: its tests on one process, then on every rank of ``mpiexec -n 2``
    and ``-n 3`` (uneven shards). MPI comes from the mpich wheel; MPICH runs more ranks than
    cores without flags (a failing rank aborts the run; MPIEXEC_TIMEOUT bounds a hang)."""
    folders = ["core", "backend-numpy", "nn", "distributed"]
    reqs = [str(PACKAGES / f) for f in folders]
    session.install(NUMPY["2"], "pytest>=8", "mpi4py>=4", "mpich", *reqs)
    tests = PACKAGES / "distributed" / "tests"
    session.run("pytest", str(tests), "-q", "-rs", "-p", "no:cacheprovider", *session.posargs)
    bin_dir = Path(session.bin)
    for n in ("2", "3"):
        session.run(
            str(bin_dir / "mpiexec"), "-n", n, str(bin_dir / "python"), "-m", "pytest",
            str(tests / "mpi"), "-q", "-rs", "-p", "no:cacheprovider", *session.posargs,
            env={"MPIEXEC_TIMEOUT": "600"}, external=True,
        )  # fmt: skip


def _onnx_install(session: nox.Session) -> None:
    """zerograd-onnx with ONNX Runtime (its [check] extra) beside core, numpy and nn."""
    reqs = [str(PACKAGES / f) for f in ("core", "backend-numpy", "nn")]
    session.install(NUMPY["2"], "pytest>=8", "mypy", *reqs, f"{PACKAGES / 'onnx'}[check]")


@nox.session
def onnx(session: nox.Session) -> None:
    """zerograd-onnx: every function of its op table and the model zoo (MLP, the digits CNN,
    SqueezeNet, ResNet-50 and VGG16's layers on small images, an unrolled LSTM) exported,
    checked by onnx's full checker and run in ONNX Runtime at two batch sizes against
    zerograd's forward (rtol = atol = 1e-5); bad input. The full-size VGG16 and ResNet-50
    are ``onnx_large``'s."""
    _onnx_install(session)
    tests = PACKAGES / "onnx" / "tests"
    session.run(
        "pytest", str(tests), "-q", "-rs", f"--ignore={tests / 'large'}", *session.posargs
    )  # fmt: skip


@nox.session
def onnx_large(session: nox.Session) -> None:
    """The full-size VGG16 (138 M parameters, a 553 MB file) and ResNet-50 on 224 x 224
    images through ONNX Runtime at batch 1 and 2, and a 2.16 GB model whose weights go into
    an external data file (not a default session: 1 to 2 minutes of tests and 9.5 GB of
    peak memory on the shared 2-core machine)."""
    _onnx_install(session)
    session.run(
        "pytest", str(PACKAGES / "onnx" / "tests" / "large"), "-q", "-rs", *session.posargs,
        env={"ZEROGRAD_ONNX_LARGE": "1"},
    )  # fmt: skip


TORCH = "torch==2.13.0"  # the bench column and the torch example
TORCH_CPU = ("--index-url", "https://download.pytorch.org/whl/cpu")  # no CUDA libraries


def _install_torch(session: nox.Session, required: bool) -> None:
    """Install TORCH: the CPU wheel from PyTorch's index, else PyPI's wheel (a no-op when
    the CPU wheel went in, since ``2.13.0+cpu`` satisfies ``==2.13.0``). A failure of
    both ends the session only when ``required``."""
    session.install(TORCH, *TORCH_CPU, success_codes=[0, 1], silent=True)
    session.install(TORCH, success_codes=[0] if required else [0, 1], silent=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with PyTorch CPU and DeZero, written to benchmarks/results.md.

    Every measurement runs in a fresh process that pins its own thread count (see
    benchmarks/README.md). ZEROGRAD_BENCH_TORCH=0 / ZEROGRAD_BENCH_DEZERO=0 skip installing
    torch / DeZero (their column is then empty unless the session's venv already has them).
    """
    folders = [f for f in ("core", "backend-numpy", "nn", "distributed") if (PACKAGES / f).is_dir()]
    reqs = [str(PACKAGES / f) for f in folders] + ["mpi4py>=4", "mpich"]  # bench_distributed
    reqs.append(f"{PACKAGES / 'onnx'}[check]")  # bench_onnx: ONNX Runtime on exported files
    if _gpu_missing() is None:
        reqs.append(f"{PACKAGES / 'backend-cupy'}[{_cupy_extra()}]")
    session.install("numpy>=2,<3", *reqs)
    # optional columns: an install that fails leaves the column empty, with the reason
    if os.environ.get("ZEROGRAD_BENCH_TORCH", "1") == "1":
        _install_torch(session, required=False)
    if os.environ.get("ZEROGRAD_BENCH_DEZERO", "1") == "1":  # DeZero imports matplotlib
        session.install("dezero==0.0.13", "matplotlib", success_codes=[0, 1], silent=True)
    # the parent runs in-process rows (GPU, MPI) on 1 thread; children set their own
    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    session.run("python", str(ROOT / "benchmarks" / "run.py"), *session.posargs, env=env)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: train an MLP on the spiral; plots and the graph go to ./out/."""
    folders = ["core", "backend-numpy", "nn", "viz"]
    session.install("tqdm", "matplotlib>=3.7", *[str(PACKAGES / f) for f in folders])
    session.run("python", str(ROOT / "examples" / "spiral.py"), "--out", str(ROOT / "out"))


@nox.session
def docs(session: nox.Session) -> None:
    """Test the docs tooling (docs/_ext: the build's hooks, the checkers), build the site
    offline with ``mkdocs build --strict`` (a warning fails), then check every internal link
    of the built site, the 404 page's included, that the API reference documents every
    name of every ``__all__`` (docs/_ext/check_reference.py), and that the search finds
    code identifiers on the pages that show them (docs/_ext/check_search.py).

    The build runs code (mkdocs.yml ``hooks``): the examples gallery runs ``examples/`` for
    its pictures, and each tutorial page becomes a notebook executed in a Jupyter kernel of
    this session's Python, its outputs checked against the page's. Both need Graphviz's
    ``dot``. Their outputs are cached in .cache/docs/ by a hash of the sources they read."""
    # pytest: the tooling's tests, and the reference check imports zerograd.testing.conformance
    session.install("-r", str(ROOT / "docs" / "requirements.txt"), "pytest>=8")
    # the API reference is read from the sources, each __all__ from the installed packages
    folders = ("core", "backend-numpy", "nn", "viz", "distributed", "backend-cupy", "onnx")
    session.install(*[str(PACKAGES / f) for f in folders if (PACKAGES / f).is_dir()])
    ext = ROOT / "docs" / "_ext"
    session.run("pytest", str(ext), "-q", "-rs", f"--ignore={ext / 'test_doc_code.py'}")
    session.run(
        "mkdocs", "build", "--strict", "--clean", "-f", str(ROOT / "mkdocs.yml"),
        "-d", str(ROOT / "site"), env={"NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    session.run("python", str(ext / "check_links.py"), str(ROOT / "site"))
    session.run("python", str(ext / "check_reference.py"), str(ROOT / "site"))
    session.run("python", str(ext / "check_search.py"), str(ROOT / "site"))


@nox.session
def doc_code(session: nox.Session) -> None:
    """Run every docs page's Python code blocks in page order and compare what they print
    with the outputs the pages show (docs/_ext/test_doc_code.py); the runner's own tests."""
    folders = ("core", "backend-numpy", "nn", "viz", "distributed")
    extras = ["matplotlib>=3.7", "tqdm", "mpi4py>=4", "mpich"]  # the pages' plots, progress, MPI
    onnx = f"{PACKAGES / 'onnx'}[check]"  # the export page runs ONNX Runtime
    session.install(NUMPY["2"], "pytest>=8", *extras, *[str(PACKAGES / f) for f in folders], onnx)
    session.run(
        "pytest", str(ROOT / "docs" / "_ext" / "test_doc_code.py"), "-q", "-rs",
        *session.posargs, env={"MPLBACKEND": "Agg"},
    )  # fmt: skip


def _example(
    session: nox.Session,
    folder: str,
    backend: str | None = None,
    extras: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> None:
    """Install ``examples/<folder>`` like a third-party package beside core, numpy and nn;
    run the conformance suites on ``backend`` (with ``env`` added) when one is named (core's,
    then nn's kernels and layers), then the example's own tests."""
    example = ROOT / "examples" / folder
    core = [str(PACKAGES / f) for f in ("core", "backend-numpy", "nn")]
    session.install(NUMPY["2"], "pytest>=8", *extras, *core, str(example))
    if backend is not None:
        for suite in ("zerograd.testing.conformance", "zerograd_nn.testing.conformance"):
            session.run(
                "pytest", "--pyargs", suite, "-q", "-rs",
                env={"ZEROGRAD_CONFORMANCE_BACKEND": backend, **(env or {})},
            )  # fmt: skip
    session.run("pytest", str(example / "tests"), "-q", "-rs", *session.posargs)


@nox.session
def plugin_example(session: nox.Session) -> None:
    """The out-of-tree example backend, installed like a third-party package: the backend
    conformance suite against it, then its own tests (spiral MLP, plugin failures)."""
    _example(session, "backend-arrayapi", "arrayapi")


@nox.session
def jax_example(session: nox.Session) -> None:
    """The JAX backend example (immutable arrays, keyed random numbers), installed like a
    third-party package: the conformance suite in JAX's 64-bit mode (it checks float64),
    then its own tests in JAX's default 32-bit mode (the suite again, float64 checks as
    named xfails: tests/test_conformance.py)."""
    _example(session, "backend-jax", "jax", ("scikit-learn",), {"JAX_ENABLE_X64": "1"})


@nox.session
def torch_example(session: nox.Session) -> None:
    """The PyTorch backend example (CPU tensors through array-api-compat), installed like a
    third-party package with the CPU wheel: its tests, the conformance suite among them
    (tests/test_conformance.py), and the spiral MLP. With PyTorch at hand, zerograd.func's
    values are also checked against torch.func here (the tests sessions skip that file)."""
    _install_torch(session, required=True)
    _example(session, "backend-torch")
    session.install(*TEST_EXTRAS["core"])
    tests = PACKAGES / "core" / "tests"
    session.run("pytest", str(tests / "test_func_torch.py"), "-q", "-rs", "-p", "no:cacheprovider")
