"""Looking at models: the tree repr, count_params, summary, and train()/eval() with Config."""

import io
import threading

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Config, Variable, test_mode
from zerograd_nn import Model
from zerograd_nn.models import MLP, Sequential


class Net(L.Layer):
    """A conv, a batch norm, dropout and a nested model of two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv = L.Conv2d(2, kernel_size=3, pad=1, in_channels=1)
        self.bn = L.BatchNorm()
        self.head = Sequential(L.Linear(4, in_size=32), L.Linear(3, in_size=4, nobias=True))

    def forward(self, x):
        h = self.bn(F.relu(self.conv(x)))
        return self.head(F.dropout(F.reshape(h, (h.shape[0], -1))))


def test_repr_is_a_tree_that_follows_lazy_sizes():
    model = MLP((10, 1))
    assert repr(model) == (
        "MLP(\n  (l0): Linear(in=None, out=10)\n  (l1): Linear(in=None, out=1)\n)"
    )
    model(np.zeros((2, 3), np.float32))
    assert repr(model) == ("MLP(\n  (l0): Linear(in=3, out=10)\n  (l1): Linear(in=10, out=1)\n)")


def test_repr_of_nested_layers_lists_and_settings():
    assert repr(Net()) == (
        "Net(\n"
        "  (conv): Conv2d(in=1, out=2, kernel=3, stride=1, pad=1)\n"
        "  (bn): BatchNorm(size=None)\n"
        "  (head): Sequential(\n"
        "    (l0): Linear(in=32, out=4)\n"
        "    (l1): Linear(in=4, out=3, nobias=True)\n"
        "  )\n"
        ")"
    )
    outer = Sequential(L.RNN(2, in_size=3), L.EmbedID(5, 2))
    assert repr(outer) == (
        "Sequential(\n"
        "  (l0): RNN(\n"
        "    hidden=2\n"
        "    (x2h): Linear(in=3, out=2)\n"
        "    (h2h): Linear(in=2, out=2, nobias=True)\n"
        "  )\n"
        "  (l1): EmbedID(in=5, out=2)\n"
        ")"
    )
    assert repr(L.Layer()) == "Layer()"


class Blocks(L.Layer):
    """Sub-layers in a list attribute, one of them also an attribute."""

    def __init__(self):
        super().__init__()
        self.first = L.Linear(2, in_size=3)
        self.blocks = [self.first, L.Linear(4, in_size=2, nobias=True)]

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_layers_in_a_list_are_shown_and_counted_once():
    model = Blocks()
    assert repr(model) == (
        "Blocks(\n  (first): Linear(in=3, out=2)\n  (blocks.1): Linear(in=2, out=4, nobias=True)\n)"
    )
    assert model.count_params() == 3 * 2 + 2 + 2 * 4
    assert list(model.named_params()) == ["first.W", "first.b", "blocks.1.W"]
    rows = model.summary(np.zeros((1, 3), np.float32), verbose=False).rows
    assert [(r["name"], r["output_shape"]) for r in rows] == [
        ("", (1, 4)),
        ("first", (1, 2)),
        ("blocks.1", (1, 4)),
    ]


def test_count_params_counts_each_scalar_once():
    model = Net()
    # conv 2*1*3*3 + 2, bn unsized (0), 32*4 + 4, 4*3
    assert model.count_params() == 20 + 0 + 132 + 12
    model(np.zeros((1, 1, 4, 4), np.float32))
    assert model.count_params() == 164 + 4 * 2  # bn: avg_mean, avg_var, gamma, beta
    shared = L.Linear(2, in_size=2)
    twice = Sequential(shared, shared)
    assert twice.count_params() == 6
    assert MLP((3,)).count_params() == 3  # the bias; W is sized at the first call


def test_summary_lists_output_shapes_and_parameters():
    model = MLP((10, 1))
    out = io.StringIO()
    summary = model.summary(np.zeros((5, 3), np.float32), file=out)
    rows = [(r["name"], r["type"], r["output_shape"], r["params"]) for r in summary.rows]
    assert rows == [
        ("", "MLP", (5, 1), 0),
        ("l0", "Linear", (5, 10), 40),
        ("l1", "Linear", (5, 1), 11),
    ]
    assert summary.total_params == 51 == model.count_params()
    text = out.getvalue().splitlines()
    assert text[0].split() == ["Layer", "Type", "Output", "shape", "Params"]
    assert text[3].split() == ["l0", "Linear", "(5,", "10)", "40"]
    assert text[-1] == "Total params: 51"
    assert str(summary) == out.getvalue().rstrip("\n")


def test_summary_prints_to_the_current_stdout(capsys):
    summary = MLP((2,)).summary(np.zeros((1, 3), np.float32))
    assert capsys.readouterr().out == str(summary) + "\n"
    MLP((2,)).summary(np.zeros((1, 3), np.float32), verbose=False)
    assert capsys.readouterr().out == ""


def test_summary_runs_in_test_mode_without_a_graph_and_changes_no_state():
    model = Net()
    model(np.random.RandomState(0).rand(4, 1, 4, 4).astype(np.float32))  # size bn
    mean_before = model.bn.avg_mean.data.copy()
    x = Variable(np.random.RandomState(1).rand(4, 1, 4, 4).astype(np.float32))
    summary = model.summary(x, verbose=False)
    np.testing.assert_array_equal(model.bn.avg_mean.data, mean_before)
    names = [r["name"] for r in summary.rows]
    assert names == ["", "conv", "bn", "head", "head.l0", "head.l1"]
    assert [r["depth"] for r in summary.rows] == [0, 1, 1, 1, 2, 2]
    assert summary.rows[1]["output_shape"] == (4, 2, 4, 4)
    assert summary.rows[5]["output_shape"] == (4, 3)
    assert all("forward" not in vars(layer) for layer in (model, model.conv, model.bn))
    assert x.grad is None and Config.enable_backprop and Config.train
    # The same in test mode by hand (dropout off): the summary's forward must match it.
    with test_mode():
        expected = model(x).data
    records = {}
    last = model.head.l1
    last.forward = lambda h: records.setdefault("y", L.Linear.forward(last, h))
    model.summary(x, verbose=False)
    del last.forward
    np.testing.assert_array_equal(records["y"].data, expected)
    assert records["y"].creator is None  # no graph was recorded


def test_summary_puts_back_a_recurrent_state_and_keeps_lazy_sizes():
    cell = L.LSTM(3)
    summary = cell.summary(np.ones((2, 4), np.float32), verbose=False)
    assert cell.h is None and cell.c is None
    assert cell.x2f.in_size == 4 and summary.rows[0]["output_shape"] == (2, 3)
    assert [r["output_shape"] for r in summary.rows if r["name"] == "h2f"] == [None]


def test_summary_that_fails_puts_the_forwards_and_states_back():
    def fail(h):
        raise RuntimeError("boom")

    model = Sequential(L.RNN(4, in_size=3), fail)
    with pytest.raises(RuntimeError, match="boom"):
        model.summary(np.zeros((2, 3), np.float32), verbose=False)
    assert all("forward" not in vars(layer) for layer in (model, model.l0, model.l0.x2h))
    assert model.l0.h is None
    summary = model.l0.summary(np.zeros((2, 3), np.float32), verbose=False)
    assert summary.total_params == 3 * 4 + 4 + 4 * 4  # h2h too: in_size was given


class Dropper(L.Layer):
    def __init__(self):
        super().__init__()
        self.inner = L.Linear(2, in_size=2)  # a sub-layer, to see train()/eval() propagate

    def forward(self, x):
        return F.dropout(x, 0.5)


def _is_train_mode(layer, x):
    """True when the layer's dropout dropped something (train mode)."""
    return not np.array_equal(layer(x).data, x)


def test_eval_and_train_switch_a_layer_and_its_sub_layers():
    x = np.ones((200,), np.float32)
    layer = Dropper()
    assert layer.training and _is_train_mode(layer, x)
    assert layer.eval() is layer
    assert not layer.training and not layer.inner.training
    assert not _is_train_mode(layer, x)
    assert Config.train  # the switch lasted for the call only
    assert layer.train() is layer and layer.training and layer.inner.training
    assert _is_train_mode(layer, x)
    layer.train(False)
    assert not layer.inner.training


def test_train_mode_is_a_bool():
    """train("no") put the layer in train mode (``not "no"`` is False: not eval), where
    PyTorch refuses it; numpy's bools count."""
    layer = Dropper().eval()
    for bad in ("no", 0, None):
        with pytest.raises(TypeError) as info:
            layer.train(bad)
        assert str(info.value) == f"Dropper.train: mode must be True or False, got {bad!r}"
        assert not layer.training and not layer.inner.training  # nothing changed
    assert layer.train(np.True_).training and layer.inner.training
    assert not layer.train(np.False_).inner.training


def test_summary_verbose_is_a_bool():
    """verbose="no" printed the table (read by its truth); numpy's bools count."""
    model, x = MLP((2,)), np.zeros((1, 3), np.float32)
    for bad in ("no", 0, None):
        with pytest.raises(TypeError) as info:
            model.summary(x, verbose=bad)
        assert str(info.value) == f"MLP.summary: verbose must be True or False, got {bad!r}"
    out = io.StringIO()
    model.summary(x, verbose=np.False_, file=out)
    assert out.getvalue() == ""


def test_test_mode_still_wins_over_train():
    x = np.ones((200,), np.float32)
    layer = Dropper().train()
    with test_mode():
        assert not layer.training
        assert not _is_train_mode(layer, x)


def test_eval_does_not_leak_into_another_thread():
    """While an eval-mode layer runs in one thread, another thread still trains."""
    inside, done = threading.Event(), threading.Event()
    seen = {}

    class Waiting(L.Layer):
        def forward(self, x):
            seen["eval_thread"] = Config.train
            inside.set()
            done.wait(5)
            return x

    def run():
        Waiting().eval()(np.ones(2))

    worker = threading.Thread(target=run)
    worker.start()
    assert inside.wait(5)
    seen["main_thread"] = Config.train
    seen["main_dropout"] = _is_train_mode(Dropper(), np.ones((200,), np.float32))
    done.set()
    worker.join(5)
    assert seen == {"eval_thread": False, "main_thread": True, "main_dropout": True}


def test_eval_is_the_models_own_and_holds_in_every_thread_that_calls_it():
    """The tutorial's "Threads and async tasks": model.eval() in one thread, the model
    called in another: no dropout there; a model left in train mode drops there."""
    x = np.ones((200,), np.float32)
    evaluated, training, seen = Dropper().eval(), Dropper(), {}

    def run():
        seen["eval"] = _is_train_mode(evaluated, x)
        seen["train"] = _is_train_mode(training, x)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(5)
    assert seen == {"eval": False, "train": True}


def test_eval_mode_survives_pickle_and_deepcopy():
    import copy
    import pickle

    layer = Dropper().eval()
    x = np.ones((200,), np.float32)
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert not twin.training and not twin.inner.training
        assert not _is_train_mode(twin, x)
        assert _is_train_mode(twin.train(), x)
    assert not layer.training  # the copies switched on their own


def test_summary_without_inputs_says_to_give_them_and_changes_nothing():
    model = MLP((4, 2))
    with pytest.raises(
        TypeError,
        match=r"^MLP\.summary\(\) runs one forward pass to find each layer's output shape: "
        r"give it inputs for that pass, mlp\.summary\(x\) \(a small batch is enough\)\.$",
    ):
        model.summary()
    assert model.l0.W.data is None  # nothing sized

    class Source(Model):  # a forward that takes no input (a generator's noise source)
        def __init__(self):
            super().__init__()
            self.fc = L.Linear(2)

        def forward(self):
            return self.fc(Variable(np.ones((1, 3), np.float32)))

    assert Source().summary(verbose=False).total_params == 8
