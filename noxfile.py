"""Developer sessions for the zerograd monorepo: ``nox`` runs the default set (what CI runs).

Sessions never download a Python: they use the interpreter nox runs under.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"

nox.options.download_python = "never"
nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "smoke"]

# distribution folder -> the sibling folders it needs installed for its tests
DEPENDS = {
    "core": ["core"],
    "backend-numpy": ["core", "backend-numpy"],
    "backend-cupy": ["core", "backend-cupy"],
    "nn": ["core", "nn"],
    "viz": ["core", "viz"],
}
TESTED = [p for p in ("core", "backend-numpy", "nn", "viz") if (PACKAGES / p / "tests").is_dir()]
NUMPY = {"1.26": "numpy==1.26.*", "2": "numpy>=2,<3"}
TEST_DEPS = ["pytest>=8"]


def _backend_pkg(backend: str) -> str:
    return f"backend-{backend}"


def _gpu_present() -> str | None:
    """None when an NVIDIA GPU is usable, else the reason why not."""
    if shutil.which("nvidia-smi") is None:
        return "no NVIDIA driver (nvidia-smi not found) on this machine"
    return None


@nox.session
@nox.parametrize("numpy", list(NUMPY))
@nox.parametrize("backend", ["numpy", "cupy"])
@nox.parametrize("package", TESTED)
def tests(session: nox.Session, package: str, backend: str, numpy: str) -> None:
    """Run one package's tests on one backend and numpy version."""
    if backend == "cupy":
        reason = _gpu_present()
        if reason:
            session.skip(f"cupy backend skipped: {reason}")
        if not (PACKAGES / "backend-cupy").is_dir():
            session.skip("cupy backend skipped: packages/backend-cupy is not in this checkout")
    folders = dict.fromkeys(DEPENDS[package] + [_backend_pkg(backend)])
    extras = ["pillow"] if package == "nn" else []
    session.install(NUMPY[numpy], *TEST_DEPS, *extras, *[str(PACKAGES / f) for f in folders])
    session.run(
        "pytest",
        str(PACKAGES / package / "tests"),
        "-q",
        "-rs",
        *session.posargs,
        env={"ZEROGRAD_TEST_BACKEND": backend},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def smoke(session: nox.Session) -> None:
    """Build every wheel, install only zerograd + zerograd-numpy into a fresh venv, use it."""
    session.install("build", "pip")
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for folder in sorted(p for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists()):
        session.run("python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(folder))
    venv = Path(session.create_tmp()) / "smoke-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    py = str(venv / "bin" / "python")
    wheels = sorted(dist.glob("*.whl"))
    session.log("built: " + ", ".join(w.name for w in wheels))
    picked = [str(w) for w in wheels if w.name.split("-")[0] in ("zerograd", "zerograd_numpy")]
    session.run(py, "-m", "pip", "install", "-q", *picked, external=True)
    session.run(py, str(ROOT / "benchmarks" / "smoke.py"), external=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks, written as a markdown table to benchmarks/results.md (BLAS on 1 thread)."""
    folders = [f for f in ("core", "backend-numpy", "nn") if (PACKAGES / f).is_dir()]
    session.install("numpy>=2,<3", "psutil", *[str(PACKAGES / f) for f in folders])
    if os.environ.get("ZEROGRAD_BENCH_TORCH", "1") == "1":
        session.install("torch==2.13.0", success_codes=[0, 1], silent=True)
    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    session.run("python", str(ROOT / "benchmarks" / "run.py"), *session.posargs, env=env)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: install the packages and run the headline example."""
    folders = [f for f in ("core", "backend-numpy", "nn", "viz") if (PACKAGES / f).is_dir()]
    session.install(*[str(PACKAGES / f) for f in folders])
    session.run("python", str(ROOT / "examples" / "newton.py"))
