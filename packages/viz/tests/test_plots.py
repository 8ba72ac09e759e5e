"""plot_history, predict_grid, plot_decision_boundary: files written, predictions, errors."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Config, Variable
from zerograd.backends import as_numpy, backend_of
from zerograd.testing.interleave import paused_thread
from zerograd_viz import plot_decision_boundary, plot_history, predict_grid

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def mpl():
    return pytest.importorskip(
        "matplotlib", reason="matplotlib not installed: pip install 'zerograd-viz[plot]'"
    )


def is_png(path):
    data = open(path, "rb").read()
    return data[:8] == PNG_MAGIC and len(data) > 2000


def test_history_list(mpl, tmp_path):
    out = tmp_path / "loss.png"
    assert plot_history([1.0, 0.6, 0.4, 0.3], out) == str(out)
    assert is_png(out)


def test_history_dict_of_lists_and_dict_of_dicts(mpl, tmp_path, arr):
    losses = [Variable(arr(v)) for v in (1.2, 0.7, 0.5)]  # Variables, 0-d arrays, floats
    accs = [np.float32(0.3), arr(0.6), 0.8]
    a = tmp_path / "curves.png"
    b = tmp_path / "train test.png"
    assert plot_history({"loss": losses, "accuracy": accs}, a, title="spiral") == str(a)
    history = {"loss": {"train": [1.0, 0.5], "test": [1.1, 0.7]}, "accuracy": [0.5, 0.9]}
    assert plot_history(history, b) == str(b)
    assert is_png(a) and is_png(b)


def test_history_svg_has_one_line_per_curve(mpl, tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    calls, real_plot = [], Axes.plot

    def spy(self, *args, **kwargs):
        calls.append((list(args[1]), kwargs.get("label")))
        return real_plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    out = tmp_path / "h.svg"
    plot_history({"loss": {"train": [3, 2, 1], "test": [4, 3, 2]}, "acc": [0.1, 0.5, 0.9]}, out)
    assert calls == [([3, 2, 1], "train"), ([4, 3, 2], "test"), ([0.1, 0.5, 0.9], None)]
    root = ET.parse(out).getroot()
    ids = [g.get("id") or "" for g in root.iter("{http://www.w3.org/2000/svg}g")]
    assert sum(1 for i in ids if i.startswith("axes_")) == 2  # one panel per name


def test_history_errors(mpl, tmp_path):
    out = tmp_path / "h.png"
    with pytest.raises(ValueError, match="history is empty"):
        plot_history([], out)
    with pytest.raises(ValueError, match="empty dict"):
        plot_history({}, out)
    with pytest.raises(ValueError, match=r"history\['loss'\] is empty"):
        plot_history({"loss": []}, out)
    with pytest.raises(TypeError, match=r"history\['loss'\]\[1\] is a string"):
        plot_history({"loss": [1.0, "0.5"]}, out)
    with pytest.raises(TypeError, match=r"history\[0\] must be a number"):
        plot_history([[1.0, 2.0]], out)
    with pytest.raises(TypeError, match=r"history must be a list of numbers, got int"):
        plot_history(3, out)
    with pytest.raises(ValueError, match=r"to_file=.*h\.xyz.*\.png"):
        plot_history([1.0], tmp_path / "h.xyz")
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    for mod in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ImportError, match=r"plot_history needs matplotlib.*zerograd-viz\[plot\]"):
        plot_history([1.0], tmp_path / "h.png")
    with pytest.raises(ImportError, match=r"plot_decision_boundary needs matplotlib"):
        plot_decision_boundary(lambda a: a, np.zeros((2, 2)), [0, 1], tmp_path / "b.png")


def linear_scores(arr, dtype="float64"):
    """Scores (-x0, x0): class 1 exactly where x0 > 0."""
    W = Variable(arr([[-1.0, 1.0], [0.0, 0.0]], dtype))
    return lambda a: F.matmul(a, W)


def test_predict_grid_matches_the_rule(arr):
    x = arr([[-2.0, -1.0], [2.0, 3.0], [1.0, 0.0]])
    xs, ys, classes = predict_grid(linear_scores(arr), x, resolution=41)
    assert xs.shape == (41,) and ys.shape == (41,) and classes.shape == (41, 41)
    # the grid covers the points with a 10% margin on each side
    assert np.allclose([xs[0], xs[-1], ys[0], ys[-1]], [-2.4, 2.4, -1.4, 3.4])
    expected = np.broadcast_to((xs > 0).astype(np.int64), (41, 41))
    assert np.array_equal(classes, expected)


def test_predict_grid_runs_under_no_grad_and_test_mode_on_xs_backend(arr):
    seen = []

    def model(a):
        seen.append((Config.enable_backprop, Config.train, type(a), a.dtype, a.shape))
        return F.sum(Variable(a), axis=1)  # one score per point: x0 + x1

    x = arr([[0.0, 0.0], [1.0, 1.0]], "float32")
    _, _, classes = predict_grid(model, x, resolution=100, threshold=1.0)  # 10,000 points
    assert len(seen) == 3  # evaluated in chunks of 4096 rows
    for backprop, train, kind, dtype, shape in seen:
        assert (backprop, train) == (False, False)
        assert kind is type(x) and str(dtype) == "float32" and shape[1] == 2
    assert classes[0, 0] == 0 and classes[-1, -1] == 1
    assert Config.enable_backprop is True and Config.train is True


def test_predict_grid_single_score_and_integer_outputs(arr):
    x = arr([[-1.0, -1.0], [1.0, 1.0]])
    xb = backend_of(x)

    def prob(a):  # (M, 1) probability of class 1: 1 where x1 > 0.2
        return xb.asarray((as_numpy(a)[:, 1:] > 0.2).astype("float64"))

    def labels(a):  # integer classes directly
        return xb.asarray((as_numpy(a)[:, 0] > 0).astype("int64") * 2)

    xs, ys, c1 = predict_grid(prob, x, resolution=11)
    assert np.array_equal(c1, np.broadcast_to((ys > 0.2)[:, None], (11, 11)).astype(int))
    xs, ys, c2 = predict_grid(labels, x, resolution=11)
    assert np.array_equal(c2, np.broadcast_to((xs > 0) * 2, (11, 11)))


def test_decision_boundary_png(mpl, tmp_path, arr):
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(60, 2))
    t = (pts[:, 0] > 0).astype(np.int64)
    out = tmp_path / "boundary.png"
    x = Variable(arr(pts))
    assert plot_decision_boundary(linear_scores(arr), x, t, out, resolution=50) == str(out)
    assert is_png(out)
    svg = tmp_path / "boundary.svg"
    plot_decision_boundary(linear_scores(arr), pts, t.reshape(-1, 1), svg, title="b")
    assert ET.parse(svg).getroot().tag.endswith("svg")


def test_decision_boundary_errors(mpl, tmp_path, arr):
    out = tmp_path / "b.png"
    f = linear_scores(arr)
    with pytest.raises(ValueError, match=r"x must hold 2-D points, shape \(N, 2\); got shape"):
        plot_decision_boundary(f, np.zeros((4, 3)), [0, 1, 0, 1], out)
    with pytest.raises(ValueError, match=r"t must hold one integer class label per point"):
        plot_decision_boundary(f, np.zeros((4, 2)), [0, 1], out)
    with pytest.raises(ValueError, match=r"t must hold one integer.*dtype float64"):
        plot_decision_boundary(f, np.zeros((2, 2)), [0.0, 1.0], out)
    with pytest.raises(ValueError, match=r"resolution must be an int >= 2, got 1"):
        plot_decision_boundary(f, np.zeros((2, 2)), [0, 1], out, resolution=1)
    with pytest.raises(ValueError, match=r"the model must return one row per point.*got shape"):
        plot_decision_boundary(lambda a: np.zeros((2, 2, 2)), np.zeros((2, 2)), [0, 1], out)
    assert list(tmp_path.iterdir()) == []


# -- the same discipline for every argument (issue 11): right, or one clear error ------


def test_history_paths_are_checked_and_written_in_one_step(mpl, tmp_path, monkeypatch):
    with pytest.raises(TypeError, match=r"plot_history: to_file must be a file path .*got int"):
        plot_history([1.0], 123)
    (tmp_path / "d.png").mkdir()
    with pytest.raises(IsADirectoryError, match=r"plot_history: to_file=.*d\.png' is a folder"):
        plot_history([1.0], tmp_path / "d.png")
    with pytest.raises(FileNotFoundError, match=r"plot_history: the folder of to_file=.*exist"):
        plot_history([1.0], tmp_path / "nope" / "h.png")
    out = tmp_path / "h.png"
    out.write_bytes(b"old")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match=r"plot_history: cannot write to_file=.*No space left"):
        plot_history([1.0, 0.5], out)
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png", "h.png"]


def test_decision_boundary_argument_errors(mpl, tmp_path, arr):
    out = tmp_path / "b.png"
    f = linear_scores(arr)
    pts = np.array([[0.0, 0.0], [1.0, 1.0]])
    op = "plot_decision_boundary"
    for kwargs, error, words in (
        ({"model_or_fn": 3}, TypeError, r"model_or_fn must be a model or function .*got int"),
        ({"resolution": True}, TypeError, r"resolution must be an int >= 2, got bool"),
        ({"resolution": 5.0}, TypeError, r"resolution must be an int >= 2, got float"),
        ({"threshold": "x"}, TypeError, r"threshold must be a real number, got str"),
        ({"x": None}, TypeError, r"x must be an array, a Variable or a list of numbers"),
        ({"x": np.array([["a", "b"]]), "t": [0]}, TypeError, r"x must hold real numbers"),
        ({"x": np.array([[0.0, np.nan], [1.0, 1.0]])}, ValueError, r"x holds NaN or infinite"),
        ({"t": None}, TypeError, r"t must hold one integer class label per point, got None"),
        ({"t": [-1, 1]}, ValueError, r"t holds negative class labels \(-1\)"),
        ({"to_file": 5}, TypeError, r"to_file must be a file path .*got int"),
        ({"model_or_fn": lambda a: None}, TypeError, r"the model returned NoneType"),
    ):
        args = {"model_or_fn": f, "x": pts, "t": [0, 1], "to_file": out, "resolution": 5}
        args.update(kwargs)
        with pytest.raises(error, match=f"{op}: {words}"):
            plot_decision_boundary(**args)
    with pytest.raises(ValueError, match=rf"{op}: margin must be >= 0, got -1"):
        predict_grid(f, pts, 5, margin=-1)
    assert list(tmp_path.iterdir()) == []


def test_numpy_integer_resolution_is_accepted(mpl, tmp_path, arr):
    pts = np.array([[0.0, 0.0], [1.0, 1.0]])
    xs, ys, classes = predict_grid(linear_scores(arr), arr(pts), np.int64(7))
    assert classes.shape == (7, 7) and xs.shape == ys.shape == (7,)


# -- every value shows in the picture ----------------------------------------------


def pixels_of(mpl, path, color):
    """How many pixels of the image at ``path`` have ``color`` (a "#rrggbb" string)."""
    from matplotlib.colors import to_rgb

    img = mpl.image.imread(path)[..., :3]
    return int(np.all(np.abs(img - np.array(to_rgb(color))) < 0.02, axis=-1).sum())


def test_history_of_one_value_shows_a_point(mpl, tmp_path):
    out = tmp_path / "one.png"
    plot_history([0.3], out)
    assert pixels_of(mpl, out, "#1f77b4") > 10  # matplotlib's first colour, C0


def test_history_values_between_non_finite_ones_show(mpl, tmp_path):
    # 1.0 and 0.5 have no finite neighbour, so no line segment reaches them
    out = tmp_path / "gaps.png"
    plot_history([1.0, float("nan"), float("inf"), 0.5, -float("inf")], out)
    assert pixels_of(mpl, out, "#1f77b4") > 20


def test_history_marks_non_finite_values(mpl, tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    legends, real_legend = [], Axes.legend

    def spy(self, *args, **kwargs):
        legends.append([t.get_text() for t in real_legend(self, *args, **kwargs).get_texts()])
        return legends[-1]

    monkeypatch.setattr(Axes, "legend", spy)
    out = tmp_path / "nan.png"
    plot_history({"loss": [0.9, 0.7, float("nan"), float("nan")], "acc": [0.1, 0.2, 0.3]}, out)
    assert legends == [["nan/inf (not drawn)"]]  # only the panel that has them
    assert pixels_of(mpl, out, "#d62728") > 10  # the marks, in red
    plot_history([float("nan")] * 3, tmp_path / "all_nan.png")  # nothing finite: marks only
    assert pixels_of(mpl, tmp_path / "all_nan.png", "#d62728") > 10


# -- a model's output is taken as it is, or refused --------------------------------


def test_predict_grid_refuses_nan_scores(arr):
    # argmax of nan scores is 0 and nan > threshold is False: a model that diverged
    # would colour the whole plane class 0
    x = arr([[0.0, 0.0], [1.0, 1.0]])
    xb = backend_of(x)

    def scores(a):
        s = as_numpy(a)[:, :1] * np.array([[1.0, -1.0]])
        s[::7] = np.nan
        return xb.asarray(s)

    with pytest.raises(ValueError, match=r"the model returned nan scores for 15 of 100 points"):
        predict_grid(scores, x, resolution=10)
    with pytest.raises(ValueError, match=r"the model returned nan scores for 100 of 100 points"):
        predict_grid(lambda a: xb.asarray(np.full(a.shape[0], np.nan)), x, resolution=10)
    # infinite scores still have an order: taken as they are
    big = predict_grid(lambda a: xb.asarray(np.where(as_numpy(a)[:, :1] > 0.5, np.inf, 0.0)), x, 5)
    assert np.array_equal(big[2], np.broadcast_to((big[0] > 0.5).astype(int), (5, 5)))


def test_predict_grid_names_the_shape_the_model_returned(arr):
    x = arr([[0.0, 0.0], [1.0, 1.0]])
    xb = backend_of(x)
    with pytest.raises(
        ValueError, match=r"the model returned shape \(5, 3\) for 100 points; it must return"
    ):
        predict_grid(lambda a: xb.asarray(np.ones((5, 3))), x, resolution=10)
    # scores transposed, (C, M): one row per class
    with pytest.raises(ValueError, match=r"returned shape \(2, 100\) for 100 points"):
        predict_grid(lambda a: xb.asarray(np.ones((a.shape[0], 2)).T), x, resolution=10)


def test_predict_grid_refuses_negative_integer_classes(mpl, tmp_path, arr):
    # a sign classifier's -1/+1: class -1 had no colour, and its region was left blank
    x = arr([[-1.0, 0.0], [1.0, 1.0]])
    xb = backend_of(x)

    def sign(a):
        return xb.asarray(np.where(as_numpy(a)[:, 0] > 0, 1, -1))

    with pytest.raises(ValueError, match=r"the model returned negative classes \(-1\); integer"):
        predict_grid(sign, x, resolution=5)
    with pytest.raises(ValueError, match=r"plot_decision_boundary: the model returned negative"):
        plot_decision_boundary(sign, x, [0, 1], tmp_path / "b.png", resolution=5)
    assert list(tmp_path.iterdir()) == []


def test_read_only_file_is_refused_before_any_work(mpl, tmp_path):
    out = tmp_path / "h.png"
    out.write_bytes(b"old")
    out.chmod(0o444)
    calls = []
    try:
        with pytest.raises(PermissionError, match=r"plot_history: to_file=.*h\.png' is read-only"):
            plot_history([1.0, 0.5], out)
        with pytest.raises(
            PermissionError, match=r"plot_decision_boundary: to_file=.*h\.png' is read-only"
        ):
            plot_decision_boundary(lambda a: calls.append(a), np.zeros((2, 2)), [0, 1], out)
        assert calls == []  # refused before the model ran
        assert out.read_bytes() == b"old" and out.stat().st_mode & 0o777 == 0o444
    finally:
        out.chmod(0o644)


def test_label_errors_say_what_is_wrong_and_what_to_do(mpl, tmp_path, arr):
    f = linear_scores(arr)
    pts = np.zeros((3, 2))
    out = tmp_path / "b.png"
    op = "plot_decision_boundary"
    # float labels: the shapes agree, the dtype is the problem ("shape (3,); got shape (3,)")
    with pytest.raises(
        ValueError,
        match=rf"{op}: t must hold one integer class label per point; got dtype float64 "
        r"\(whole-number labels: pass t.astype\(int\)\)$",
    ):
        plot_decision_boundary(f, pts, np.array([0.0, 1.0, 1.0]), out)
    with pytest.raises(ValueError, match=r"got shape \(3, 2\) \(one-hot labels\? pass "):
        plot_decision_boundary(f, pts, np.eye(2)[[0, 1, 1]], out)
    with pytest.raises(ValueError, match=r"shape \(3,\); got shape \(2,\)$"):
        plot_decision_boundary(f, pts, [0, 1], out)
    assert list(tmp_path.iterdir()) == []


def test_nan_threshold_or_margin_is_a_value_error(arr):
    # a float is the right type: nan is a wrong value (zerograd.checks' rule), and the
    # message said "must be a real number, got float (nan)"
    f = linear_scores(arr)
    pts = arr([[0.0, 0.0], [1.0, 1.0]])
    op = "plot_decision_boundary"
    with pytest.raises(ValueError, match=rf"{op}: threshold must be a number, not nan$"):
        predict_grid(f, pts, 5, threshold=float("nan"))
    with pytest.raises(ValueError, match=rf"{op}: margin must be a number, not nan$"):
        predict_grid(f, pts, 5, margin=np.float32("nan"))
    with pytest.raises(TypeError, match=rf"{op}: threshold must be a real number, got str"):
        predict_grid(f, pts, 5, threshold="0.5")


def test_history_value_too_large_for_a_float_is_named(mpl, tmp_path):
    # Python ints have no limit: float(10**400) raised a bare OverflowError
    with pytest.raises(
        ValueError, match=r"plot_history: history\['loss'\]\[1\] = 1000.* is too large for a float"
    ):
        plot_history({"loss": [1, 10**400]}, tmp_path / "h.png")
    assert list(tmp_path.iterdir()) == []


def test_plots_leave_pyplots_state_alone(mpl, tmp_path):
    """viz's README: both plots draw on matplotlib's Agg canvas "without touching pyplot's
    state": they do not import pyplot, and where a program uses it, its figures, current
    figure and axes, backend and rcParams are as they were."""
    code = (
        "import sys, numpy as np\n"
        "from zerograd_viz import plot_history\n"
        f"plot_history([1.0, 0.5], {str(tmp_path / 'a.png')!r})\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "False\n", done.stderr
    import matplotlib
    import matplotlib.pyplot as plt

    fig = plt.figure()
    plt.plot([1, 2])
    before = (plt.get_fignums(), plt.gcf(), plt.gca(), matplotlib.get_backend())
    rc = dict(matplotlib.rcParams)
    try:
        plot_history({"loss": {"train": [3, 2], "test": [4, 3]}}, tmp_path / "b.png", title="t")
        x = np.random.default_rng(0).random((20, 2))
        t = (x[:, 0] > 0.5).astype(int)
        plot_decision_boundary(lambda a: a[:, 0], x, t, tmp_path / "c.png", resolution=20)
        assert (plt.get_fignums(), plt.gcf(), plt.gca(), matplotlib.get_backend()) == before
        assert dict(matplotlib.rcParams) == rc
    finally:
        plt.close(fig)


@pytest.mark.skipif(os.name != "posix", reason="file modes and the umask are POSIX's")
def test_a_file_written_while_another_thread_writes_one_gets_the_umasks_mode(mpl, tmp_path):
    # a new file's mode was found by setting the process's umask to 0o022 and back: a
    # file made in another thread between the two got 0o022's mode instead of the umask's

    def after_umask_or_open(frame, event, arg):  # that thread read the umask or made a file
        return event == "c_return" and arg in (os.umask, os.open)

    before = os.umask(0o027)
    try:
        other = lambda: plot_history([1.0, 0.5], tmp_path / "other.png")  # noqa: E731
        with paused_thread(other, after_umask_or_open) as release:
            try:
                plot_history([1.0, 0.5], tmp_path / "mine.png")
            finally:
                release()
        umask = os.umask(0o027)
    finally:
        os.umask(before)
    assert umask == 0o027
    for name in ("mine.png", "other.png"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o640, name
