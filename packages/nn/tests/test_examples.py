"""The examples train for real: spiral above 95% training accuracy, the CNN above 95% test
accuracy on scikit-learn's digits, the LSTM and the char-RNN losses falling."""

import json

import numpy as np
import pytest
from example_scripts import EXAMPLES, bench_module, load, load_file

from zerograd.backends import backend_of


@pytest.fixture(scope="module")
def spiral_run():
    """The spiral example module and one training run of it, shared by the tests below."""
    spiral = load("spiral")
    return spiral, spiral.train(verbose=False)


def test_spiral_reaches_95_percent_training_accuracy(spiral_run):
    _, result = spiral_run
    assert result["train_accuracy"] > 0.95
    loss = result["history"]["loss"]
    assert len(loss) == 300 and loss[-1] < loss[0] / 5


def test_spiral_writes_its_plots(spiral_run, tmp_path, capsys):
    pytest.importorskip(
        "zerograd_viz", reason="zerograd-viz is not installed (pip install -e packages/viz)"
    )
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install matplotlib)")
    spiral, result = spiral_run
    spiral.plot(result, tmp_path)
    out = capsys.readouterr().out
    assert "plots skipped" not in out
    for name in ("spiral_boundary.png", "spiral_history.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000, name


def test_cnn_digits_reaches_95_percent_test_accuracy(backend):
    try:
        import sklearn  # noqa: F401
    except ImportError:
        pytest.skip("scikit-learn is not installed (pip install scikit-learn): CNN not trained")
    gpu = backend.device == "gpu"  # the book's GPU path: model.to_gpu(), loader.to_gpu()
    if backend.name != "numpy" and not gpu:
        pytest.skip(
            f"cnn_digits trains on numpy or, with --gpu, on the GPU backend: it cannot train "
            f"on the {backend.name!r} backend ({backend.device})"
        )
    cnn = load("cnn_digits")
    result = cnn.train(epochs=6, verbose=False, gpu=gpu)
    assert all(
        p.data is not None and backend_of(p.data).name == backend.name
        for p in result["model"].params()
    )
    assert result["test_accuracy"] > 0.95
    assert result["losses"][-1] < result["losses"][0] / 3
    # the Trainer's Evaluator measured the same test set each epoch
    log = result["log"]
    assert [e["epoch"] for e in log] == [1, 2, 3, 4, 5, 6]
    assert log[-1]["val/accuracy"] == pytest.approx(result["test_accuracy"], abs=1e-6)


def test_cnn_digits_writes_its_log_plot_and_snapshots_and_resumes(tmp_path, capsys):
    try:
        import sklearn  # noqa: F401
    except ImportError:
        pytest.skip("scikit-learn is not installed (pip install scikit-learn): CNN not trained")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install matplotlib)")
    cnn = load("cnn_digits")
    first = cnn.train(epochs=1, verbose=True, out=str(tmp_path))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["epoch", "loss", "accuracy", "val/loss", "val/accuracy"]
    assert printed[1].split()[0] == "1"
    for plot in ("loss.png", "accuracy.png"):
        assert (tmp_path / plot).read_bytes().startswith(b"\x89PNG")
    snapshot = tmp_path / "snapshot_iter_00000045.npz"  # 1,437 images, batches of 32: 45 an epoch
    assert snapshot.is_file()
    with pytest.warns(UserWarning, match="'PrintReport' that this trainer does not have"):
        resumed = cnn.train(epochs=2, verbose=False, out=str(tmp_path), resume=str(tmp_path))
    assert [e["epoch"] for e in resumed["log"]] == [1, 2]
    assert resumed["log"][0] == first["log"][0]  # the first epoch's entry came back
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [45, 90]


def test_lstm_sine_loss_falls():
    lstm = load("lstm_sine")
    result = lstm.train(epochs=15, verbose=False)
    losses = result["losses"]
    assert losses[-1] < losses[0] / 5
    assert result["test_mse"] < 0.05  # predicts the next point of an unseen curve


def test_char_rnn_learns_and_samples():
    char = load("char_rnn")
    result = char.train(epochs=6, verbose=False)
    losses = result["losses"]
    assert losses[-1] < losses[0] * 0.75
    assert losses[-1] < np.log(result["dataset"].vocab_size)  # better than uniform guessing
    text = char.sample(result["model"], result["dataset"], length=50)
    assert text.startswith("The ") and len(text) == 54
    assert set(text) <= set(result["dataset"].vocab)


@pytest.mark.parametrize("name, epochs", [("lstm_sine", 5), ("char_rnn", 3)])
def test_static_windows_train_to_the_eager_losses_bit_for_bit(name, epochs):
    example = load(name)
    eager = example.train(epochs=epochs, verbose=False)["losses"]
    static = example.train(epochs=epochs, verbose=False, static=True)["losses"]
    assert static == eager


def test_gpu_examples_child_trains_static_to_the_eager_losses():
    # packages/backend-cupy/gpu_examples.py's own child process, here on the CPU: the GPU
    # run does the same with gpu=True, and compares with the same_losses tested there
    script = EXAMPLES.parent / "packages" / "backend-cupy" / "gpu_examples.py"
    gpu_examples = load_file(script, "gpu_examples")
    kwargs = {"epochs": 2, "verbose": False}
    eager = gpu_examples.run("lstm_sine", False, kwargs, timeout=120)
    static = gpu_examples.run("lstm_sine", False, {**kwargs, "static": True}, timeout=120)
    assert "error" not in eager and "error" not in static, (eager, static)
    assert len(static["losses"]) == 2 and static["losses"][-1] == static["final_loss"]
    assert static["losses"] == eager["losses"]


@pytest.mark.parametrize("name", ["lstm_sine", "char_rnn"])
def test_the_benchmarks_hand_written_rnns_compute_the_examples_loss_and_gradients(
    name, backend, monkeypatch
):
    """benchmarks/fw_numpy.py's HandLSTM, the floor of the RNN epoch rows, does the
    example's arithmetic: from the same weights and window, the same loss and gradients."""
    if backend.name != "numpy":
        pytest.skip(f"the hand-written LSTM is numpy code; the backend is {backend.name}")
    fw_numpy = bench_module("fw_numpy", monkeypatch)
    example = load(name)  # puts examples/ on the path
    from _bptt import window_step, windows

    import zerograd_nn.functional as F
    from zerograd_nn.optimizers import Adam

    hand, loader, length, prepare = fw_numpy.hand_rnn(name)
    xs, ts = next(iter(windows(loader, length, prepare)))
    if name == "lstm_sine":
        hidden = fw_numpy.defaults(example.train)["hidden_size"]
        model, loss_fn = example.BetterRNN(hidden, 1), F.mean_squared_error
        pairs = {}
    else:
        vocab = loader.dataset.vocab_size
        model, loss_fn = example.CharLSTM(vocab), F.softmax_cross_entropy
        pairs = {"We": model.embed.W}
    model(xs[0])
    model(xs[1])  # every weight exists now
    model.reset_state()
    pairs.update({"Wy": model.fc.W, "by": model.fc.b})
    for g in "fiou":
        pairs["Wx" + g] = getattr(model.rnn, "x2" + g).W
        pairs["bx" + g] = getattr(model.rnn, "x2" + g).b
        pairs["Wh" + g] = getattr(model.rnn, "h2" + g).W
    assert set(pairs) == set(hand.p)
    for k, p in pairs.items():
        hand.p[k][...] = p.data
    grads: dict = {}
    monkeypatch.setattr(hand, "_update", grads.update)
    loss = window_step(model, Adam().setup(model), loss_fn)(xs, ts)
    assert hand.window(xs, ts) == pytest.approx(float(loss.data), rel=1e-5)
    for k, p in pairs.items():
        np.testing.assert_allclose(grads[k], p.grad.data, rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("case", ["random", "ties"])
def test_the_benchmarks_hand_written_cnn_takes_zerograds_step(case, backend, monkeypatch):
    """benchmarks/fw_numpy.py's CNN, the floor of the CNN rows, takes the step zerograd
    takes: the same loss and the same update of every weight, step after step. In ``ties``
    the conv passes the image through (its centre tap only) and the image's 2x2 blocks hold
    two values, so most pooling windows have tied maxima, in every pattern: the conv
    weights' update then depends on which tied element wins (each window's first maximum,
    in row-major order)."""
    if backend.name != "numpy":
        pytest.skip(f"the hand-written CNN is numpy code; the backend is {backend.name}")
    fw_numpy = bench_module("fw_numpy", monkeypatch)
    fw_zerograd = bench_module("fw_zerograd", monkeypatch)
    workloads = bench_module("workloads", monkeypatch)

    weights = workloads.cnn_weights()
    x, t = workloads.cnn_data()
    if case == "ties":
        rng = np.random.default_rng(0)
        n = len(x)
        top = rng.random((n, 1, 14, 2, 14, 2)) < 0.5  # where a block holds its larger value
        level = rng.uniform(0.5, 1.0, (n, 1, 14, 1, 14, 1))
        x = (level * np.where(top, 1.0, 0.5)).reshape(x.shape).astype(x.dtype)
        assert (top.sum(axis=(3, 5)) == 2).sum() > 1000  # two-way ties, in each pattern
        weights[0][...] = 0.0
        weights[0][:, 0, 1, 1] = rng.uniform(0.5, 1.5, 16)
        weights[1][...] = 0.0
    hand, zg = fw_numpy.CNN(weights), fw_zerograd.CNN(weights)
    for _ in range(2):  # the second step reuses the first one's buffers
        before = [w.copy() for w in zg.weights()]
        assert hand.step(x, t) == pytest.approx(zg.step(x, t), rel=1e-6)
        for name, w, a, b in zip(("W", "b", "Wl", "bl"), before, hand.weights(), zg.weights()):
            np.testing.assert_allclose(a - w, b - w, rtol=1e-4, atol=1e-8, err_msg=name)


def test_the_bench_names_processes_that_disagree_by_more_than_a_quarter(monkeypatch):
    common = bench_module("common", monkeypatch)
    res = {
        "zerograd": [{"ms": 4.84}, {"ms": 8.03}, {"ms": 4.9}],  # one slow process: named
        "torch": [{"ms": 5.61}, {"ms": 5.75}],  # within a quarter: not named
        "numpy": [{"error": "boom"}, {"ms": 1.06}, {"ms": 2.15}],  # failed rounds left out
        "static": [{"ms": 1.2}],  # one process: nothing to compare
    }
    got = common.spread(res, lambda r: r["ms"])
    assert got == "processes ranged (host noise): zerograd 4.84–8.03, numpy-hand 1.06–2.15"
    assert common.spread({"torch": res["torch"]}, lambda r: r["ms"]) == ""


def test_gpu_benchmark_script_runs_end_to_end(backend, monkeypatch):
    """benchmarks/bench_gpu.py (whose numbers need a GPU) runs on the GPU backend under test;
    the times are not read."""
    if backend.device != "gpu":
        pytest.skip(f"the backend under test ({backend.name}) is not a GPU backend")
    bench_gpu = bench_module("bench_gpu", monkeypatch)

    torch = bench_gpu._torch()
    rows = bench_gpu.measure(backend, torch, repeat=1)
    cases = [r["case"].split(",")[0].split()[0] for r in rows]
    assert cases[:2] == ["per-op"] * 2 and cases.count("MLP") == 8 and cases.count("CNN") == 8
    assert cases.count("im2col") == 2 and cases.count("col2im") == 2
    assert sum("static replay" in r["case"] for r in rows) == 9  # the chain, 2 × 2 × (time, memory)
    assert all(r["zerograd"] > 0 for r in rows)
    assert ("same gradient ✓" in rows[0]["note"]) == (torch is not None), rows[0]["note"]
    for r in rows:  # the replayed step's first (eager) loss is the eager step's
        if r["note"].startswith("first loss"):
            losses = dict(kv.split("=") for kv in r["note"][len("first loss ") :].split(", "))
            assert losses["z"] == losses["zs"], r["note"]
    assert all("same result ✓" in r["note"] for r in rows if r["case"].startswith("im2col"))


@pytest.mark.parametrize(
    ("script", "args", "words"),
    [
        ("spiral", ["--epochs", "0"], "argument --epochs: must be 1 or more, got 0"),
        ("spiral", ["--hidden", "-2"], "argument --hidden: must be 1 or more, got -2"),
        ("spiral", ["--lr", "nan"], "argument --lr: must be a finite number > 0, got nan"),
        ("spiral", ["--seed", "-3"], "argument --seed: must be in [0, 2**32), got -3"),
        ("spiral", ["--epochs", "ten"], "argument --epochs: expected a whole number, got 'ten'"),
        ("lstm_sine", ["--epochs", "-1"], "argument --epochs: must be 1 or more, got -1"),
        ("char_rnn", ["--epochs", "0"], "argument --epochs: must be 1 or more, got 0"),
        ("cnn_digits", ["--epochs", "0"], "argument --epochs: must be 1 or more, got 0"),
        ("book_graphs", ["--orders", "0"], "argument --orders: must be 1 or more, got 0"),
    ],
)
def test_an_example_refuses_a_bad_number_in_one_line(script, args, words, capsys):
    """A bad number on the command line is argparse's one-line error, before any work
    (``--epochs 0`` ended in a traceback from plot_history, ``--lr -1`` from the optimizer)."""
    module = load(script)
    with pytest.raises(SystemExit) as exit_info, pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.argv", [f"{script}.py", *args])
        module.main()
    assert exit_info.value.code == 2
    assert words in capsys.readouterr().err


def test_an_example_makes_its_output_folder_or_says_why_not(tmp_path, capsys):
    args = load("_args")
    made = args.out_folder(str(tmp_path / "new" / "plots"))
    assert made.is_dir()
    (tmp_path / "f").write_text("")
    for bad, words in [
        (tmp_path / "f", "is a file, not a folder"),
        (tmp_path / "f" / "x", "cannot make"),
    ]:
        with pytest.raises(Exception, match=words):
            args.out_folder(str(bad))
