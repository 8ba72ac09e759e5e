"""gpu_check.py, the one command for a GPU machine, on a machine without a usable GPU: it
says so and exits non-zero, running nothing; its junit parsing gives the counts it prints."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import zerograd.backends as B

HERE = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", ["gpu_check.py", "gpu_examples.py"])
def test_without_a_gpu_it_says_so_and_exits_3(script, tmp_path):
    if "cupy" in {r.name for r in B.list_backends() if r.available}:
        pytest.skip("a usable GPU is here: the script would run the GPU sequence")
    done = subprocess.run([sys.executable, str(HERE / script), *(
        ["--out", str(tmp_path)] if script == "gpu_check.py" else [])],
        capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "no usable GPU here" in done.stderr
    if script == "gpu_check.py":
        assert "nvidia-smi:" in done.stdout and "numpy" in done.stdout  # the versions first
        assert not list(tmp_path.glob("*.xml"))  # no suite ran


def test_counts_read_a_junit_report(tmp_path):
    gpu_check = _load("gpu_check")
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest" tests="10" failures="2" errors="1" skipped="3">'
        "</testsuite></testsuites>"
    )
    assert gpu_check.counts(report) == {"passed": 4, "failed": 2, "errors": 1, "skipped": 3}
    assert gpu_check.counts(tmp_path / "missing.xml")["passed"] == -1


def test_unknown_stage_is_refused(capsys):
    gpu_check = _load("gpu_check")
    with pytest.raises(SystemExit):
        gpu_check.main(["--only", "suites,bogus"])
    assert "unknown stages ['bogus']" in capsys.readouterr().err


def test_a_suite_that_ran_nothing_is_not_a_pass():
    gpu_check = _load("gpu_check")
    row = {"rc": 0, "passed": 12, "failed": 0, "errors": 0, "skipped": 3}
    assert gpu_check._passed(row)
    assert not gpu_check._passed({**row, "passed": 0})  # every test skipped
    assert not gpu_check._passed({**row, "rc": 5, "passed": 0})  # pytest collected nothing
    assert not gpu_check._passed({**row, "rc": "timeout"})


def test_second_gpu_runs_are_compared_bit_for_bit(capsys):
    gpu_examples = _load("gpu_examples")
    first = {"losses": [0.5, 0.25, 0.125], "seconds": 1.0}
    assert gpu_examples.same_losses("lstm_sine", "--gpu --static", first, {**first, "seconds": 0.5})
    assert "lstm_sine   --gpu --static: the first GPU run's 3 epoch losses bit for bit: yes" in (
        capsys.readouterr().out
    )
    off = {"losses": [0.5, 0.25 + 2**-40, 0.125], "seconds": 0.5}
    assert not gpu_examples.same_losses("spiral", "--gpu again", first, off)
    assert "bit for bit: NO (0.5 s); first differs at epoch 2" in capsys.readouterr().out
    assert not gpu_examples.same_losses(
        "spiral", "--gpu again", first, {"losses": [0.5], "seconds": 0.1}
    )
    assert not gpu_examples.same_losses(
        "char_rnn", "--gpu --static", first, {"error": "boom", "stderr": ""}
    )
    assert "char_rnn    --gpu --static failed: boom" in capsys.readouterr().out
    assert not gpu_examples.same_losses("spiral", "--gpu again", {"error": "x"}, first)
    assert "spiral      --gpu again: no first GPU run to compare with" in capsys.readouterr().out
