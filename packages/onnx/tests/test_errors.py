"""Bad input gives one clear error, and nothing is written: no file, no temporary, an old
file at the path untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import types

import numpy as np
import onnx
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
import zerograd_onnx
from zerograd import Function, Parameter, using_config
from zerograd_nn import Layer, Model
from zerograd_nn.models import MLP
from zerograd_onnx import ExportError, ParityError


class Twice(Function):
    """A function of the user's own: zerograd-onnx has no converter for it."""

    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return 2 * gy


class Doubling(Layer):
    def forward(self, x):
        return Twice()(x)


class Block(Layer):
    def __init__(self):
        super().__init__()
        self.fc = L.Linear(4)
        self.act = Doubling()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(Model):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.out = L.Linear(2)

    def forward(self, x):
        return self.out(self.block(x))


def _x(rng, n=3, d=5):
    return rng.standard_normal((n, d)).astype(np.float32)


def _nothing_but(folder, *names):
    assert sorted(os.listdir(folder)) == sorted(names)


def test_a_function_without_a_counterpart_names_itself_and_its_layer(rng, tmp_path):
    old = tmp_path / "net.onnx"
    old.write_bytes(b"the old file")
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(Net(), _x(rng), old)
    assert str(err.value).startswith(
        f"zerograd_onnx.export: no ONNX counterpart for {__name__}.Twice (applied in layer "
        f"'block.act' (Doubling)). zerograd_onnx.supported() lists the functions it converts; "
        f"give a function of your own a converter with zerograd_onnx.register(FunctionClass, "
        f"converter). Nothing was written."
    )
    assert old.read_bytes() == b"the old file"
    _nothing_but(tmp_path, "net.onnx")


def test_a_registered_converter_exports_the_function(rng, tmp_path):
    @zerograd_onnx.register(Twice, ops=("Add",))
    def twice(ctx):
        (x,) = ctx.inputs
        ctx.node("Add", [x, x], ctx.outputs[0])

    try:
        assert zerograd_onnx.supported()[Twice] == ("Add",)
        model = Net()
        path = zerograd_onnx.export(model, _x(rng), tmp_path / "net.onnx")
        assert zerograd_onnx.check(model, path, _x(rng, 6)).ok
    finally:
        zerograd_onnx.unregister(Twice)
    assert Twice not in zerograd_onnx.supported()


def test_register_refuses_what_is_not_a_function_class():
    with pytest.raises(TypeError, match="function_class must be a subclass of zerograd.Function"):
        zerograd_onnx.register(len, lambda ctx: None)
    with pytest.raises(TypeError, match="the converter must be callable, got int 3"):
        zerograd_onnx.register(Twice, 3)


def test_replacing_a_built_in_converter_and_unregistering_restores_it():
    import zerograd.functions as ZF

    builtin = zerograd_onnx.registry.CONVERTERS[ZF.Exp]
    zerograd_onnx.register(ZF.Exp, lambda ctx: None)
    zerograd_onnx.unregister(ZF.Exp)
    assert zerograd_onnx.registry.CONVERTERS[ZF.Exp] is builtin


@pytest.mark.parametrize(
    "returns, message",
    [
        (lambda y: y.data, "the model returned numpy.ndarray, not a Variable"),
        (lambda y: (y, 1.0), "output 1 is builtins.float, not a Variable"),
        (lambda y: None, "the model returned builtins.NoneType, not a Variable"),
    ],
)
def test_a_model_returning_something_else_than_variables_is_a_type_error(
    returns, message, rng, tmp_path
):
    model = MLP((3,))

    def wrapped(x):
        return returns(model(x))

    with pytest.raises(TypeError, match=message) as err:
        zerograd_onnx.export(wrapped, _x(rng), tmp_path / "m.onnx")
    assert "return the Variable (or a tuple of Variables) the forward computes" in str(err.value)
    _nothing_but(tmp_path)


def test_check_refuses_inputs_whose_fixed_axis_differs(rng, tmp_path):
    model = MLP((3,))
    path = zerograd_onnx.export(model, _x(rng), tmp_path / "m.onnx")
    with pytest.raises(ValueError) as err:
        zerograd_onnx.check(model, path, _x(rng, 3, 6))
    assert str(err.value) == (
        "zerograd_onnx.check: input 'input' has shape (3, 6) but axis 1 is fixed at 5 in the "
        "file (its shape is ['batch', 5]; only named axes such as 'batch' take any length). "
        "Give an array of that length there, or export again with an example of this shape."
    )
    with pytest.raises(ValueError, match=r"input 'input' has 2 axes \['batch', 5\] in the file"):
        zerograd_onnx.check(model, path, np.zeros((3, 5, 1), np.float32))
    with pytest.raises(TypeError, match=r"input 'input' is tensor\(float\) in the file but the"):
        zerograd_onnx.check(model, path, np.zeros((3, 5)))  # float64
    with pytest.raises(ValueError, match=r"the file takes 1 inputs \['input'\] but 2 were given"):
        zerograd_onnx.check(model, path, (_x(rng), _x(rng)))


def test_a_static_batch_fixes_the_batch_axis_too(rng, tmp_path):
    model = MLP((3,))
    path = zerograd_onnx.export(model, _x(rng), tmp_path / "m.onnx", dynamic_batch=False)
    assert zerograd_onnx.check(model, path, _x(rng)).ok
    with pytest.raises(
        ValueError, match=r"axis 0 is fixed at 3 in the file \(its shape is \[3, 5\]"
    ):
        zerograd_onnx.check(model, path, _x(rng, 4))


def test_check_reports_outputs_that_differ(rng, tmp_path):
    model = MLP((3,))
    path = zerograd_onnx.export(model, _x(rng), tmp_path / "m.onnx")
    model.l0.b.data = model.l0.b.data + np.float32(1e-3)  # the file keeps the old bias
    with pytest.raises(ParityError) as err:
        zerograd_onnx.check(model, path, _x(rng))
    assert "ONNX Runtime's outputs differ from zerograd's:\noutput (3, 3): max abs error 0.001" in (
        str(err.value)
    )
    assert "(OUTSIDE rtol=1e-05, atol=1e-05)" in str(err.value)
    assert isinstance(err.value, AssertionError)
    result = zerograd_onnx.check(model, path, _x(rng), atol=2e-3)
    assert result.ok and 9e-4 < result.outputs[0].max_abs_error < 1.1e-3


def test_check_of_a_missing_file(rng, tmp_path):
    with pytest.raises(FileNotFoundError, match="no ONNX file at '.*nothing.onnx'; export one"):
        zerograd_onnx.check(MLP((3,)), tmp_path / "nothing.onnx", _x(rng))


def test_check_of_a_path_that_is_no_onnx_file_says_what_it_is(rng, tmp_path):
    """A folder or a FIFO was "no ONNX file at ..."; a file that is not ONNX gave ONNX
    Runtime's raw InvalidProtobuf, an empty file its raw InvalidArgument."""
    model = MLP((3,))
    with pytest.raises(FileNotFoundError, match=r"'.*' is a folder, not an ONNX file; give"):
        zerograd_onnx.check(model, tmp_path, _x(rng))
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.onnx")
        with pytest.raises(FileNotFoundError, match=r"is a FIFO, a device or a socket, not an"):
            zerograd_onnx.check(model, tmp_path / "pipe.onnx", _x(rng))
    for name, data in (("garbage.onnx", b"not a protobuf at all"), ("empty.onnx", b"")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(
            ValueError,
            match=rf"^zerograd_onnx\.check: ONNX Runtime cannot load '.*{name}' \(.*\); it is "
            r"not an ONNX file, or a damaged one: export it again\.$",
        ):
            zerograd_onnx.check(model, tmp_path / name, _x(rng))


def test_an_onnx_runtime_error_ending_in_a_newline_reads_as_one_line(rng, tmp_path, monkeypatch):
    """ONNX Runtime 1.23 (the last release for Python 3.10) ends its load errors with a
    newline: the message read "... does not have a graph.\n); it is not an ONNX file"."""
    ort = pytest.importorskip("onnxruntime", reason="zerograd_onnx.check needs ONNX Runtime")

    def refuse(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : ModelProto does not have a graph.\n")

    monkeypatch.setattr(ort, "InferenceSession", refuse)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ValueError) as info:
        zerograd_onnx.check(MLP((3,)), tmp_path / "empty.onnx", _x(rng))
    assert "\n" not in str(info.value)
    assert (
        "(RuntimeError: [ONNXRuntimeError] : 1 : FAIL : ModelProto does not have a graph.); it "
        "is not an ONNX file, or a damaged one: export it again." in str(info.value)
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"rtol": -1.0}, ValueError, r"rtol must be a number >= 0, got -1\.0"),
        ({"atol": float("nan")}, ValueError, r"atol must be a number >= 0, got nan"),
        ({"atol": "1e-5"}, TypeError, r"atol must be a real number, got '1e-5' \(str\)"),
    ],
)
def test_check_refuses_bad_tolerances(kwargs, error, message, rng, tmp_path):
    """A negative or nan tolerance reported a ParityError for equal outputs; a string
    failed inside numpy."""
    model = MLP((3,))
    path = zerograd_onnx.export(model, _x(rng), tmp_path / "m.onnx")
    with pytest.raises(error, match=rf"^zerograd_onnx\.check: {message}"):
        zerograd_onnx.check(model, path, _x(rng), **kwargs)


def test_export_to_an_empty_path_or_a_folder_writes_nothing(rng, tmp_path, monkeypatch):
    """'' failed with a raw FileNotFoundError naming the temporary; a folder's error
    suggested a file named 'model.npz'."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^zerograd_onnx\.export: the path is empty; give a"):
        zerograd_onnx.export(MLP((3,)), _x(rng), "")
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match=r"is a folder, not a file; .*'d/model\.onnx'"):
        zerograd_onnx.export(MLP((3,)), _x(rng), "d")
    _nothing_but(tmp_path, "d")
    _nothing_but(tmp_path / "d")


def test_a_path_in_a_missing_folder(rng, tmp_path):
    path = tmp_path / "missing" / "m.onnx"
    with pytest.raises(FileNotFoundError) as err:
        zerograd_onnx.export(MLP((3,)), _x(rng), path)
    assert str(err.value) == (
        f"zerograd_onnx.export: the directory '{path.parent}' of '{path}' does not exist; "
        f"create it first (os.makedirs)."
    )
    _nothing_but(tmp_path)


READ_ONLY = """
import sys
import numpy as np
import zerograd_onnx
from zerograd_nn.models import MLP
try:
    zerograd_onnx.export(MLP((3,)), np.ones((2, 5), np.float32), sys.argv[1] + "/m.onnx")
except OSError as exc:
    print(type(exc).__name__, exc)
"""


def test_a_read_only_folder_gives_one_error_and_keeps_the_old_file(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "m.onnx").write_bytes(b"the old file")
    script = tmp_path / "ro.py"
    script.write_text(textwrap.dedent(READ_ONLY))
    cmd = [sys.executable, str(script), str(folder)]
    if os.geteuid() == 0:  # root writes anywhere: run without the capability to
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and setpriv (util-linux) is missing to drop privileges")
        cmd = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", *cmd]
    os.chmod(folder, 0o555)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(folder, 0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"PermissionError [Errno 13] zerograd_onnx.export: cannot write '{folder}/m.onnx': the "
        f"folder '{folder}' does not take new files (Permission denied); choose a folder you can "
        f"write to. Nothing was written"
    )
    assert (folder / "m.onnx").read_bytes() == b"the old file"
    _nothing_but(folder, "m.onnx")


def test_a_failure_while_writing_leaves_no_partial_file(rng, tmp_path, monkeypatch):
    from zerograd_onnx import exporter

    real = exporter.write_atomically

    def disk_full(path, write, op, **kwargs):
        def partial(f):
            f.write(b"\x08\x07")  # the start of a model
            raise OSError(28, "No space left on device")

        return real(path, partial, op, **kwargs)

    monkeypatch.setattr(exporter, "write_atomically", disk_full)
    (tmp_path / "m.onnx").write_bytes(b"the old file")
    with pytest.raises(OSError, match="No space left on device"):
        zerograd_onnx.export(MLP((3,)), _x(rng), tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == b"the old file"
    _nothing_but(tmp_path, "m.onnx")


def test_a_value_read_into_python_is_refused(rng, tmp_path):
    class Gate(Layer):
        def forward(self, x):
            return x * 2.0 if float(x.sum()) > 0 else x

    class Gated(Model):
        def __init__(self):
            super().__init__()
            self.gate = Gate()

        def forward(self, x):
            return self.gate(x)

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(Gated(), _x(rng), tmp_path / "g.onnx")
    assert str(err.value).startswith(
        "zerograd_onnx.export: the forward reads a Variable's value into Python (float(), in "
        "layer 'gate' (Gate)); an ONNX graph cannot follow a computation that goes through "
        "Python values."
    )
    _nothing_but(tmp_path)


def test_a_backward_inside_the_forward_is_refused(rng, tmp_path):
    """export hears a backward where Variable.backward starts it, and names the layer."""

    class Probe(Layer):
        def forward(self, x):
            with using_config("enable_backprop", True):
                w = Parameter(np.ones(5, dtype=np.float32))
                (x * w).sum().backward()
            return x * 2.0

    class Probed(Model):
        def __init__(self):
            super().__init__()
            self.probe = Probe()

        def forward(self, x):
            return self.probe(x)

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(Probed(), _x(rng), tmp_path / "p.onnx")
    assert str(err.value) == (
        "zerograd_onnx.export: the forward runs a backward pass (in layer 'probe' (Probe)); "
        "an exported model is its forward computation only."
    )
    _nothing_but(tmp_path)


def test_an_array_computed_outside_the_graph_from_the_input_is_refused(rng, tmp_path):
    def centered(x):
        return x - np.asarray(x.data).mean(axis=1, keepdims=True)  # a raw array: no graph

    line = centered.__code__.co_firstlineno + 1
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(centered, _x(rng), tmp_path / "c.onnx")
    assert str(err.value).startswith(
        f"zerograd_onnx.export: the forward reads a Variable's value into Python (x.data at "
        f"{__file__}, line {line}, outside any layer of the model); an ONNX graph cannot follow "
        f"a computation that goes through Python values. A branch on them would keep the "
        f"example's path and an array made from them the example's values."
    )
    _nothing_but(tmp_path)


def test_a_mean_over_the_batch_needs_a_static_batch(rng, tmp_path):
    def loss(x):
        return F.mean(x)  # a sum times 1 / size: a constant that follows the batch

    with pytest.raises(
        ExportError, match=r"Constant 0.06666667 at batch 3, Constant 0.05 at batch 4"
    ):
        zerograd_onnx.export(loss, _x(rng), tmp_path / "l.onnx")
    path = zerograd_onnx.export(loss, _x(rng), tmp_path / "l.onnx", dynamic_batch=False)
    assert zerograd_onnx.check(loss, path, _x(rng)).ok


def test_an_index_that_follows_the_batch_size_is_refused(rng, tmp_path):
    def all_but_last(x):
        return x[: x.shape[0] - 1]

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(all_but_last, _x(rng), tmp_path / "i.onnx")
    assert str(err.value) == (
        "zerograd_onnx.export: the index of GetItem (applied outside any layer of the model) "
        "changes with the batch size: [slice(None, 2, None)] at batch 3, [slice(None, 3, None)] "
        "at batch 4. Index the batch axis with bounds that do not depend on its length (x[:], "
        "x[1:], x[-1]), or export with dynamic_batch=False."
    )

    def all_but_last_written_well(x):
        return x[:-1]

    path = zerograd_onnx.export(all_but_last_written_well, _x(rng), tmp_path / "i.onnx")
    assert zerograd_onnx.check(all_but_last_written_well, path, _x(rng, 7)).ok


def test_a_slice_of_the_batch_whose_count_only_looks_fixed_is_refused(rng, tmp_path):
    # x[::2] keeps 2 rows of 3 and of 4: the two runs saw a fixed axis, and the Reshape
    # wrote 8 for it, where ONNX Runtime failed at batch 1 (4 values into 8)
    def every_other_row(x):
        return F.reshape(x[::2], (-1,))

    path = tmp_path / "s.onnx"
    path.write_bytes(b"old")
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(every_other_row, _x(rng, 3, 4), path)
    assert str(err.value) == (
        "zerograd_onnx.export: GetItem (applied outside any layer of the model): the slice "
        "[::2] of axis 0, which follows the batch size, keeps 2 of 3 and of 4 (at batch 3 and "
        "4) but 1 of 1: the graph would fix that length at 2, and ONNX Runtime would fail or "
        "compute another shape at other batch sizes. Slice the batch axis so that the count "
        "follows it (x[1:], x[::-1]) or is fixed (x[-1:], x[0:1]), or export with "
        "dynamic_batch=False. Nothing was written."
    )
    assert path.read_bytes() == b"old"

    def first_two(x):
        return F.reshape(x[:2], (-1,))

    with pytest.raises(ExportError, match=r"the slice \[:2\] of axis 0, .* keeps 2 of 3 and of 4"):
        zerograd_onnx.export(first_two, _x(rng, 3, 4), path)
    # a count that follows the batch at both sizes, or one row at every size, exports
    for model, n in ((every_other_row, 4), (lambda x: F.reshape(x[-1:], (-1,)), 3)):
        zerograd_onnx.export(model, _x(rng, n, 4), path)
        for b in (1, 3, 7):
            assert zerograd_onnx.check(model, path, _x(rng, b, 4)).ok
    zerograd_onnx.export(every_other_row, _x(rng, 3, 4), path, dynamic_batch=False)
    assert zerograd_onnx.check(every_other_row, path, _x(rng, 3, 4)).ok


def test_a_window_over_the_batch_whose_count_only_looks_fixed_is_refused(rng, tmp_path):
    # the batch transposed into the image's height: stride 2 gives 2 positions over 3 and
    # over 4 rows, and the Reshape wrote 8, where ONNX Runtime failed at batch 1, 5 and 7
    w = rng.standard_normal((2, 2, 1, 1)).astype(np.float32)

    def windows(op):
        def model(x):
            y = op(F.transpose(x, (1, 2, 0, 3)))  # (C, H, N, W)
            return F.reshape(y, (-1,))

        return model

    x = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    path = tmp_path / "w.onnx"
    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(windows(lambda y: F.pooling(y, 1, 2)), x, path)
    assert str(err.value) == (
        "zerograd_onnx.export: Pooling (applied outside any layer of the model): its window "
        "slides over axis 2, which follows the batch size (3 and 4 long at batch 3 and 4), and "
        "gives 2 positions at both: the graph would fix that length, where other batch sizes "
        "change it, and ONNX Runtime would fail or compute another shape. Keep the batch off "
        "the image axes (transpose it back to axis 0 first), or export with "
        "dynamic_batch=False. Nothing was written."
    )
    assert not path.exists()
    for name, op in (
        ("AveragePooling", lambda y: F.average_pooling(y, 1, 2)),
        ("Conv2d", lambda y: F.conv2d(y, w, None, 2)),
    ):
        with pytest.raises(ExportError, match=f"^zerograd_onnx.export: {name} .* gives 2 pos"):
            zerograd_onnx.export(windows(op), x, path)
    # im2col's nodes take the batch on axis 0 only, whatever the stride
    with pytest.raises(ExportError, match="Im2col .* axis 2 of its input follows the batch"):
        zerograd_onnx.export(windows(lambda y: F.im2col(y, 1, 1, to_matrix=True)), x, path)
    assert not path.exists()
    # a window whose count changed between the runs follows the batch in the graph too
    model = windows(lambda y: F.pooling(y, (1, 2), 1))
    zerograd_onnx.export(model, x, path)
    for b in (1, 3, 7):
        assert zerograd_onnx.check(
            model, path, rng.standard_normal((b, 2, 2, 2)).astype(np.float32)
        ).ok


def test_broadcasting_to_a_new_batch_axis_is_refused(rng, tmp_path):
    class Tiled(Layer):
        def __init__(self):
            super().__init__()
            self.w = Parameter(np.ones((1, 5), np.float32))

        def forward(self, x):
            return F.broadcast_to(self.w, (x.shape[0], 5)) * x

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(Tiled(), _x(rng), tmp_path / "t.onnx")
    assert str(err.value).startswith(
        "zerograd_onnx.export: BroadcastTo (applied in the model's own forward (Tiled)): "
        "broadcasting (1, 5) to (3, 5) creates the batch axis 0; ONNX's Expand would freeze "
        "its length."
    )


def test_a_forward_that_raises_says_where_export_ran_it(rng, tmp_path):
    model = MLP((3,))
    model(_x(rng))  # sized for 5 features
    with pytest.raises(ValueError) as err:
        zerograd_onnx.export(model, _x(rng, 3, 6), tmp_path / "m.onnx")
    assert err.value.__notes__ == [
        "zerograd_onnx.export ran the model's forward on the example inputs (test mode, no "
        "gradients)"
    ]
    _nothing_but(tmp_path)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"opset": 17}, ValueError, r"opset 17 is outside 18\.\.\d+ \(the oldest the converters"),
        ({"opset": 99}, ValueError, r"opset 99 is outside 18\.\."),
        ({"opset": 18.0}, TypeError, r"opset must be an int"),
        (
            {"dynamic_batch": 1},
            TypeError,
            r"^zerograd_onnx\.export: dynamic_batch must be True or False, got 1$",
        ),
        ({"dynamic_batch": "no"}, TypeError, r"dynamic_batch must be True or False, got 'no'$"),
        ({"input_names": ["a", "b"]}, ValueError, r"input_names names 2 values \['a', 'b'\]"),
        ({"input_names": "x"}, TypeError, r"input_names must be a list or tuple of strings"),
        (
            {"output_names": ["l0.W"]},
            ValueError,
            r"\['l0.W'\] name both inputs or outputs and parameters",
        ),
    ],
)
def test_bad_arguments(kwargs, error, message, rng, tmp_path):
    with pytest.raises(error, match=message):
        zerograd_onnx.export(MLP((3,)), _x(rng), tmp_path / "m.onnx", **kwargs)
    _nothing_but(tmp_path)


def test_dynamic_batch_takes_numpys_bools(rng, tmp_path):
    """np.True_ was refused: "dynamic_batch must be True or False, got np.True_"."""
    for value in (np.True_, np.False_):
        path = zerograd_onnx.export(
            MLP((3,)), _x(rng), tmp_path / f"{value}.onnx", dynamic_batch=value
        )
        batch = onnx.load(path).graph.input[0].type.tensor_type.shape.dim[0]
        assert (batch.dim_param != "", batch.dim_value) == ((True, 0) if value else (False, 3))


@pytest.mark.parametrize(
    "model, inputs, path, error, message",
    [
        (
            "not a model",
            np.ones((2, 3)),
            "m.onnx",
            TypeError,
            "model must be a Layer or a callable",
        ),
        (MLP((3,)), [], "m.onnx", ValueError, "example_inputs is empty"),
        (MLP((3,)), "abc", "m.onnx", TypeError, r"example_inputs\[0\] is builtins.str, not an"),
        (MLP((3,)), np.ones((2, 3)), 3, TypeError, "path must be a string or os.PathLike, got 3"),
        (MLP((3,)), np.ones(()), "m.onnx", ValueError, r"input 0 of shape \(\) has no batch"),
        (
            lambda x, y: x + y,
            (np.ones((2, 3)), np.ones((3, 3))),
            "m.onnx",
            ValueError,
            r"the inputs' batch sizes \(axis 0\) differ: \[2, 3\]",
        ),
    ],
)
def test_bad_models_inputs_and_paths(model, inputs, path, error, message, tmp_path):
    path = path if not isinstance(path, str) else tmp_path / path
    with pytest.raises(error, match=message):
        zerograd_onnx.export(model, inputs, path)
    _nothing_but(tmp_path)


def _raw_maxima_subtracted(x):
    return x - np.max(x.data, axis=1, keepdims=True)


# the same as zerograd's own code (what softmax_simple did until it took the maximum with
# zerograd's max): the read is zerograd's, so the export finds the array it makes
_minus_raw_maxima = types.FunctionType(
    _raw_maxima_subtracted.__code__,
    {**globals(), "__name__": "zerograd_nn.functional"},
    "minus_raw_maxima",
)


@pytest.mark.parametrize(
    "fn, message",
    [
        (_minus_raw_maxima, "input 1 of Sub .* is an array made outside zerograd's functions"),
        # its winners come from a function of their own (so that vmap batches them), which
        # has no ONNX counterpart: refused by name, where the index array it computed in
        # Python was refused only when the two runs' indices differed
        (
            lambda x: F.pooling_simple(x, 2, 2),
            "no ONNX counterpart for zerograd_nn.functional.pooling.WinnerPicks",
        ),
    ],
    ids=["raw_maxima", "pooling_simple"],
)
def test_the_simple_forms_that_compute_arrays_outside_the_graph_are_refused(
    fn, message, rng, tmp_path
):
    x = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    with pytest.raises(ExportError, match=message) as err:
        zerograd_onnx.export(fn, x, tmp_path / "s.onnx")
    assert isinstance(err.value, ValueError)
    _nothing_but(tmp_path)


def test_a_converter_whose_nodes_give_another_shape_is_refused(rng, tmp_path):
    def wrong(ctx):  # sums the rows away: the next Add broadcasts, so onnx's checker passes
        ctx.node("ReduceSum", [ctx.inputs[0], ctx.ints([0])], ctx.outputs[0], keepdims=1)

    def plus(x):
        return Twice()(x) + x

    zerograd_onnx.register(Twice, wrong)
    try:
        with pytest.raises(ExportError) as err:
            zerograd_onnx.export(plus, _x(rng), tmp_path / "n.onnx", dynamic_batch=False)
    finally:
        zerograd_onnx.unregister(Twice)
    assert str(err.value) == (
        "zerograd_onnx.export: Twice (applied outside any layer of the model) gives shape "
        "(3, 5) but its ONNX nodes give length 1 on axis 0; a converter's fault, please report it."
    )
    _nothing_but(tmp_path)


def test_a_converter_that_fixes_the_batch_size_is_refused(rng, tmp_path):
    def frozen(ctx):
        (x,) = ctx.inputs
        shape = ctx.ints(ctx.shape(x))  # the example's batch size, written as a number
        ctx.node("Reshape", [ctx.node("Add", [x, x]), shape], ctx.outputs[0])

    zerograd_onnx.register(Twice, frozen)
    try:
        with pytest.raises(ExportError) as err:
            zerograd_onnx.export(Net(), _x(rng), tmp_path / "n.onnx")
    finally:
        zerograd_onnx.unregister(Twice)
    assert str(err.value).startswith(
        "zerograd_onnx.export: Twice (applied in layer 'block.act' (Doubling)) fixes axis 0 of "
        "its result at 3, but that axis follows the batch size (3 at batch 3, 4 at batch 4)"
    )
    _nothing_but(tmp_path)


def test_a_converter_that_writes_an_invalid_graph_is_refused(rng, tmp_path):
    def invalid(ctx):
        ctx.node("NoSuchOperator", [ctx.inputs[0]], ctx.outputs[0])

    zerograd_onnx.register(Twice, invalid)
    try:
        with pytest.raises(ExportError, match="the ONNX model fails onnx's checker .*NoSuchOp"):
            zerograd_onnx.export(Net(), _x(rng), tmp_path / "n.onnx")
    finally:
        zerograd_onnx.unregister(Twice)
    _nothing_but(tmp_path)


@pytest.mark.parametrize("flag", [True, False])
def test_a_boolean_scalar_index_is_named(flag, rng, tmp_path):
    """x[np.array(True)] raised numpy's raw 'only integer scalar arrays can be converted to
    a scalar index' from inside the converter."""

    def pick(x):
        return x[np.array(flag)]

    with pytest.raises(ExportError) as err:
        zerograd_onnx.export(pick, _x(rng), tmp_path / "b.onnx")
    assert str(err.value) == (
        "zerograd_onnx.export: GetItem (applied outside any layer of the model): a boolean "
        "scalar as an index (numpy adds an axis of length 1 for True, 0 for False) is not "
        "supported; index with None to add an axis."
    )
    _nothing_but(tmp_path)


def test_an_output_named_as_an_input_says_what_to_do(rng, tmp_path):
    """The message named the clash and stopped there."""

    def same(x):
        return x * 2.0

    with pytest.raises(ValueError) as err:
        zerograd_onnx.export(
            same, _x(rng), tmp_path / "s.onnx", input_names=["x"], output_names=["x"]
        )
    assert str(err.value) == (
        "zerograd_onnx.export: output name 'x' is also an input's name ['x']; ONNX names each "
        "value once: choose other output_names (an output that is an input gets its own "
        "name). Nothing was written."
    )
    _nothing_but(tmp_path)
