"""The examples as a user runs them: ``python examples/<name>.py ...`` in a fresh process,
with small settings. A user's mistake (a folder that cannot be written, a bad text file,
Ctrl-C) ends in one line that says what to do, not a traceback."""

import os
import signal
import subprocess
import sys
import time

import pytest
from example_scripts import EXAMPLES

ENV = {**os.environ, "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}


def default_sigint():
    """Give a child SIGINT's default action (run before its Python starts).

    A shell without job control (``cmd &`` in a script: a CI run started in the
    background) ignores SIGINT in what it starts, and children inherit that: their Python
    then never raises KeyboardInterrupt, and ``_thread.interrupt_main`` does nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_example(name, *args, cwd=None, timeout=60):
    """Run ``examples/<name>.py args`` as a script; the finished process."""
    script = EXAMPLES / f"{name}.py"
    if not script.is_file():
        pytest.skip(f"{script} not found (tests run outside the repository checkout)")
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(done, script, *words):
    """``done`` failed with exit status 2 or 1, printing one line that names ``script``
    and holds every one of ``words``, and no traceback."""
    assert done.returncode in (1, 2), (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}.py"), done.stderr
    for w in words:
        assert w in last, (w, last)
    return last


@pytest.fixture
def unwritable(tmp_path):
    """A folder that exists and cannot be written into (``/proc`` when running as root,
    who writes into a read-only folder)."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    probe = folder / "probe"
    try:
        probe.write_text("")
    except OSError:
        yield folder
    else:
        probe.unlink()
        if not os.path.isdir("/proc/self"):
            pytest.skip("no read-only folder to test with (root, and no /proc)")
        yield "/proc/self"
    folder.chmod(0o755)


@pytest.mark.parametrize(
    "name, args",
    [
        ("spiral", ["--epochs", "1"]),
        ("lstm_sine", ["--epochs", "1"]),
        ("book_graphs", ["--orders", "1"]),
    ],
)
@pytest.mark.parametrize("how", ["--out", "cwd"])
def test_an_unwritable_output_folder_is_refused_before_training(name, args, how, unwritable):
    """``--out`` a read-only folder, or no ``--out`` in a read-only current folder: the
    run stopped after training in a traceback from the plot's write."""
    if how == "--out":
        done = run_example(name, *args, "--out", unwritable)
    else:
        done = run_example(name, *args, cwd=unwritable)
    last = one_line_error(done, name, "argument --out: cannot write into the folder")
    assert "epoch" not in done.stdout and "goldstein" not in done.stdout  # nothing ran
    assert last.endswith("give --out a folder you can write to")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX's")
@pytest.mark.parametrize(
    "name, args",
    [
        ("spiral", ["--epochs", "100000"]),
        ("lstm_sine", ["--epochs", "100000"]),
        ("char_rnn", ["--epochs", "100000"]),
    ],
)
def test_ctrl_c_during_training_ends_in_one_line_and_writes_nothing(name, args, tmp_path):
    """Ctrl-C while an example trains: exit status 130 and one line on stderr; it was a
    KeyboardInterrupt's traceback from wherever the training was (a vjp, the optimizer)."""
    script = EXAMPLES / f"{name}.py"
    out = tmp_path / "out"
    if name != "char_rnn":
        args = [*args, "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=default_sigint,
    )
    try:
        first = proc.stdout.readline()  # the first epoch's line: it is training now
        assert "epoch" in first or "loss" in first, first
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        f"{name}.py: interrupted (Ctrl-C); the files written before it are complete, "
        "the rest were not written"
    ]
    assert "final" not in rest and "sample" not in rest
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "no file"),
        ("", "need at least 2 characters, got 0"),
        (b"\xff\xfe\x00\xecbinary", "as utf-8 text"),
        ("tiny text", "holds 9 characters; char_rnn.py needs 17 or more"),
        ("folder", "is a directory"),
    ],
)
def test_char_rnn_refuses_a_bad_text_file_in_one_line_before_training(content, words, tmp_path):
    """``--text`` a missing, empty, binary or too short file, or a folder: a traceback from
    TextCharDataset or SeqDataLoader (``use batch_size <= 1``, an option char_rnn.py does
    not have)."""
    path = tmp_path / "text.txt"
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_example("char_rnn", "--epochs", "1", "--text", path)
    assert done.returncode == 2
    one_line_error(done, "char_rnn", "argument --text:", words)
    assert done.stdout == ""


def test_char_rnn_samples_from_a_text_without_the_default_prime(tmp_path):
    """A text with no capital T (here: lower case) trained, then its sampling stopped in
    ``KeyError: characters not in the vocabulary: ['T']``: the sample now starts from the
    text's first characters."""
    path = tmp_path / "lower.txt"
    path.write_text("the sea was calm and the boat was slow. " * 3, encoding="utf-8")
    done = run_example("char_rnn", "--epochs", "1", "--text", path)
    assert done.returncode == 0, done.stderr
    sampled = done.stdout.split("sample:\n\n", 1)[1].rstrip("\n")
    assert sampled.startswith("the ") and len(sampled) == 304
    assert set(sampled) <= set(path.read_text(encoding="utf-8"))


def test_ctrl_c_inside_a_weak_reference_callback_still_stops_the_example(tmp_path):
    """A Ctrl-C landing in a weak reference's callback (zerograd frees an unchained graph
    through one) was ignored by Python, "Exception ignored in ...", and the example
    trained on: about 1 Ctrl-C in 20 during lstm_sine.py. Here the callback raises the
    KeyboardInterrupt itself, every time."""
    script = tmp_path / "weak_ctrl_c.py"
    script.write_text(
        "import sys, time, weakref\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from _interrupt import run_main\n"
        "class Node: pass\n"
        "def cut(ref): raise KeyboardInterrupt\n"
        "def main():\n"
        "    node = Node()\n"
        "    ref = weakref.ref(node, cut)\n"
        "    del node\n"
        "    for _ in range(500):\n"
        "        time.sleep(0.01)\n"
        "    print('trained on')\n"
        "run_main(main)\n",
        encoding="utf-8",
    )
    if not (EXAMPLES / "_interrupt.py").is_file():
        pytest.skip(f"{EXAMPLES} not found (tests run outside the repository checkout)")
    done = subprocess.run(
        [sys.executable, str(script)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_sigint,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "trained on" not in done.stdout
    assert done.stderr.strip().splitlines()[-1].startswith("weak_ctrl_c.py: interrupted")


@pytest.fixture
def fake_digits(tmp_path, monkeypatch):
    """A stand-in for scikit-learn's ``load_digits`` (random 8x8 images, labels 0-9) on the
    examples' path, so that cnn_digits.py's command line is tested without scikit-learn."""
    package = tmp_path / "fake_sklearn" / "sklearn"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "datasets.py").write_text(
        "from types import SimpleNamespace\n"
        "import numpy as np\n"
        "def load_digits():\n"
        "    rng = np.random.RandomState(0)\n"
        "    return SimpleNamespace(images=rng.randint(0, 17, (200, 8, 8)).astype(float),\n"
        "                           target=rng.randint(0, 10, 200))\n"
    )
    path = os.pathsep.join(filter(None, [str(package.parent), ENV.get("PYTHONPATH")]))
    monkeypatch.setitem(ENV, "PYTHONPATH", path)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--resume", "{tmp}/missing.npz"], "argument --resume: load_checkpoint: no"),
        (["--resume", "{tmp}/empty.npz"], "is not a readable .npz checkpoint"),
        (["--resume", "{tmp}/folder"], "argument --resume: latest_checkpoint: no"),
        (["--out", "{tmp}/a_file"], "argument --out: '{tmp}/a_file' is a file"),
        (["--out", "/proc/self"], "argument --out: cannot write into the folder"),
    ],
)
def test_cnn_digits_refuses_a_bad_resume_or_out_in_one_line(args, words, tmp_path, fake_digits):
    """A --resume with no snapshot, a damaged one, or an --out that cannot be written:
    a traceback from Trainer.resume, load_checkpoint or the Trainer's folder check."""
    if "/proc/self" in args and not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    (tmp_path / "a_file").write_text("")
    args = [a.format(tmp=tmp_path) for a in args]
    done = run_example("cnn_digits", "--epochs", "1", *args, cwd=tmp_path)
    assert done.returncode == 2
    one_line_error(done, "cnn_digits", words.format(tmp=tmp_path))
    assert done.stdout == ""  # nothing trained
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a_file", "empty.npz", "fake_sklearn", "folder"
    ]  # fmt: skip


def test_spiral_says_when_its_training_diverged_and_plots_nothing(tmp_path):
    """``--lr 1e308``: the loss became nan, and the run stopped in a traceback from
    plot_decision_boundary (nan scores for the whole grid) after printing its accuracy."""
    out = tmp_path / "out"
    done = run_example("spiral", "--epochs", "2", "--lr", "1e308", "--out", out)
    last = one_line_error(done, "spiral", "the training diverged (the loss was nan at epoch 1)")
    assert done.returncode == 1
    assert last.endswith("try an --lr smaller than 1e+308")
    assert list(out.iterdir()) == []


def test_book_graphs_without_graphviz_says_so_in_one_line(tmp_path, monkeypatch):
    """No ``dot`` on PATH: a GraphvizNotFoundError traceback after the first values."""
    pytest.importorskip("zerograd_viz", reason="zerograd-viz is not installed")
    empty = tmp_path / "no_programs"
    empty.mkdir()
    monkeypatch.setitem(ENV, "PATH", str(empty))
    done = run_example("book_graphs", "--out", tmp_path / "out")
    assert done.returncode == 1
    one_line_error(done, "book_graphs", "Graphviz's `dot` program was not found on PATH")
    assert list((tmp_path / "out").iterdir()) == []


def test_newton_has_a_help_and_refuses_options_it_does_not_have():
    """``newton.py --help`` ran the ten steps, and ``--steps 3`` was silently ignored."""
    done = run_example("newton", "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: newton.py")
    assert "step 0" not in done.stdout
    done = run_example("newton", "--steps", "3")
    assert done.returncode == 2 and done.stdout == ""
    one_line_error(done, "newton", "error: unrecognized arguments: --steps 3")
    done = run_example("newton")
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1] == "minimum at x = 1.0000000000 (exact: 1)"


@pytest.mark.parametrize(
    "name, epochs, shown",
    [("spiral", 45, [1, 30, 45]), ("lstm_sine", 12, [1, 10, 12]), ("spiral", 1, [1])],
)
def test_the_last_epoch_is_printed_whatever_the_epoch_count(name, epochs, shown, tmp_path):
    """``--epochs 45``: the lines stopped at epoch 30, so the output did not show that the
    run went on to 45 (nor the numbers it ended with)."""
    done = run_example(name, "--epochs", epochs, "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    printed = [
        int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("epoch")
    ]
    assert printed == shown


def test_cnn_digits_refuses_to_resume_with_another_split_seed(tmp_path, fake_digits):
    """The split of train and test images is drawn from ``--seed``, which the snapshot did
    not keep: resumed with another seed, the run trained on images its first epoch had
    tested on, and the test accuracy it printed was inflated, silently."""
    out = tmp_path / "run"
    done = run_example("cnn_digits", "--epochs", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    done = run_example("cnn_digits", "--epochs", "2", "--out", out, "--resume", out, "--seed", 3)
    assert done.returncode == 2
    one_line_error(
        done, "cnn_digits", "the snapshot was trained on the split of --seed 0", "--seed 3"
    )
    assert done.stdout == ""
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing changed
    done = run_example("cnn_digits", "--epochs", "2", "--out", out, "--resume", out)
    assert done.returncode == 0, done.stderr
    assert len((out / "log.jsonl").read_text().splitlines()) == 2


def shadow(tmp_path, module):
    """A folder to put first on PYTHONPATH in which ``import <module>`` fails as it does
    where the module is not installed."""
    folder = tmp_path / f"without_{module}"
    folder.mkdir()
    (folder / f"{module}.py").write_text(
        f"raise ModuleNotFoundError({f'No module named {module!r}'!r}, name={module!r})\n"
    )
    return os.pathsep.join(filter(None, [str(folder), ENV.get("PYTHONPATH")]))


def test_lstm_sine_without_matplotlib_skips_its_plot_in_one_line(tmp_path, monkeypatch):
    """zerograd-viz without matplotlib: a traceback from plot_history after the training
    (spiral.py said "plots skipped")."""
    pytest.importorskip("zerograd_viz", reason="zerograd-viz is not installed")
    monkeypatch.setitem(ENV, "PYTHONPATH", shadow(tmp_path, "matplotlib"))
    out = tmp_path / "out"
    done = run_example("lstm_sine", "--epochs", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    last = done.stdout.splitlines()[-1]
    assert last.startswith("(plot skipped: plot_history needs matplotlib"), last
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("name", ["spiral", "lstm_sine", "book_graphs"])
def test_a_missing_zerograd_viz_names_the_install_that_works(name, tmp_path, monkeypatch):
    """Without zerograd-viz, spiral.py and lstm_sine.py said ``pip install zerograd-viz``,
    a name not published (README: install from the checkout), and book_graphs.py, which
    only draws, stopped in a ModuleNotFoundError traceback."""
    monkeypatch.setitem(ENV, "PYTHONPATH", shadow(tmp_path, "zerograd_viz"))
    args = ["--out", tmp_path] if name == "book_graphs" else ["--epochs", "1", "--out", tmp_path]
    done = run_example(name, *args)
    if name == "book_graphs":
        assert done.returncode == 1
        one_line_error(done, name, "needs zerograd-viz", "pip install ./packages/viz")
    else:
        assert done.returncode == 0, done.stderr
        last = done.stdout.splitlines()[-1]
        assert "zerograd-viz is not installed" in last, last
        assert "pip install './packages/viz[plot]'" in last, last


@pytest.mark.parametrize(
    "name, options",
    [
        (
            "spiral",
            {"--epochs": "300", "--hidden": "10", "--lr": "1.0", "--seed": "0", "--out": "."},
        ),
        ("lstm_sine", {"--epochs": "100", "--out": "."}),
        (
            "char_rnn",
            {"--epochs": "20", "--text": "examples/data/tiny_tales.txt", "--encoding": "utf-8"},
        ),
        ("cnn_digits", {"--epochs": "15", "--seed": "0"}),
        ("book_graphs", {"--out": ".", "--orders": "3"}),
    ],
)
def test_help_gives_each_option_its_default(name, options):
    """``--help`` listed ``--epochs EPOCHS`` and the others with no word on them."""
    done = run_example(name, "--help")
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {name}.py")
    text = " ".join(done.stdout.split())  # argparse wraps long help lines
    for option, default in options.items():
        metavar = option[2:].upper()
        entry = text.split(f" {option} {metavar} ", 1)[1]
        assert f"(default: {default})" in entry.split(" --", 1)[0], (option, entry)


def test_char_rnn_reads_a_text_in_another_encoding_with_encoding(tmp_path):
    """A latin-1 text was refused with advice to ``give its encoding (encoding=...)``,
    which the script had no option for."""
    path = tmp_path / "latin1.txt"
    text = "The café was near the rivière, and the été was long. " * 2
    path.write_bytes(text.encode("latin-1"))
    done = run_example("char_rnn", "--epochs", "1", "--text", path)
    one_line_error(done, "char_rnn", "is not valid utf-8", "give its encoding")
    done = run_example("char_rnn", "--epochs", "1", "--text", path, "--encoding", "latin-1")
    assert done.returncode == 0, done.stderr
    sampled = done.stdout.split("sample:\n\n", 1)[1].rstrip("\n")
    assert sampled.startswith("The ") and set(sampled) <= set(text)
    done = run_example("char_rnn", "--text", path, "--encoding", "no-such-codec")
    one_line_error(done, "char_rnn", "argument --encoding:", "unknown encoding 'no-such-codec'")


def test_book_graphs_stops_a_dot_that_runs_too_long_and_says_what_to_do(tmp_path, monkeypatch):
    """Each order's graph is about 3 times the last one's, and dot ran without a time
    limit: ``--orders 8`` drew for minutes with no word. A ``dot`` that hangs stands in
    for a huge graph here."""
    if sys.platform == "win32":
        pytest.skip("the stand-in dot is a shell script")
    pytest.importorskip("zerograd_viz", reason="zerograd-viz is not installed")
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "dot").write_text("#!/bin/sh\nsleep 30\n")
    (programs / "dot").chmod(0o755)
    monkeypatch.setitem(ENV, "PATH", f"{programs}{os.pathsep}{ENV.get('PATH', '')}")
    out = tmp_path / "out"
    started = time.perf_counter()
    done = run_example("book_graphs", "--out", out, "--dot-timeout", "0.5")
    assert time.perf_counter() - started < 20
    assert done.returncode == 1
    last = one_line_error(done, "book_graphs", "dot did not draw a graph within 0.5 s")
    assert last.endswith("draw fewer --orders than 3, or give --dot-timeout more seconds")
    assert list(out.iterdir()) == []
