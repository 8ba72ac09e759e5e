"""Models far wider and deeper than the other tests': each surface stays linear.

Costs are asserted as operation counts, never as wall time.
"""

import copy
import csv
import os
import pickle

import numpy as np
import pytest

import zerograd.functions as F
from zerograd import Parameter, Variable
from zerograd.func import functional_call, grad
from zerograd.testing.lines import lines_run
from zerograd_nn import DataLoader, Layer, optimizers, training
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam
from zerograd_nn.training import LogReport, Trainer
from zerograd_nn.weights import WeightFileError


class _Name(str):
    """An attribute name that counts the comparisons made with it."""

    compared = 0
    __hash__ = str.__hash__

    def __eq__(self, other):
        _Name.compared += 1
        return str.__eq__(self, other)


def test_a_layer_with_thousands_of_parameters_finds_each_name_in_one_step():
    # each assignment looked its name up in a list of the names before it: n**2 / 2
    # comparisons for n Parameters (seconds for 20,000)
    n = 2000
    layer = Layer()
    _Name.compared = 0
    for i in range(n):
        setattr(layer, _Name(f"p{i}"), Parameter(np.full(1, float(i))))
    setattr(layer, _Name("p7"), Parameter(np.full(1, -7.0)))  # a replaced member
    setattr(layer, _Name("p8"), 8.0)  # a member that became a plain attribute
    assert _Name.compared < n
    names = [name for name, _ in layer.named_members()]
    assert names == [f"p{i}" for i in range(n) if i != 8]
    assert float(layer.p7.data[0]) == -7.0 and layer.p8 == 8.0
    del layer.p9
    assert len(list(layer.params())) == n - 2
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer)), copy.copy(layer)):
        assert [name for name, _ in twin.named_members()] == [x for x in names if x != "p9"]
        twin.extra = Parameter(np.zeros(1))  # a copy's names are its own
        assert len(list(twin.params())) == n - 1
    assert len(list(layer.params())) == n - 2


def test_a_layer_pickled_with_lists_of_member_names_loads():
    # layers pickled while the member names were kept in lists
    layer = Layer()
    layer.W = Parameter(np.ones(2))
    layer.blocks = [Parameter(np.zeros(1))]
    state = layer.__getstate__()
    state["_params"], state["_lists"] = ["W"], ["blocks"]
    old = Layer.__new__(Layer)
    old.__setstate__(state)
    old.b = Parameter(np.zeros(3))
    del old.W
    assert [name for name, _ in old.named_members()] == ["b", "blocks.0"]


def _lines_run_in(folder, fn, *args):
    """``fn(*args)``'s result and the number of Python lines run in files under ``folder``."""
    return lines_run(fn, *args, counted=lambda code: code.co_filename.startswith(folder))


def _first_update_of_one_group_each(n):
    """Lines the optimizers run for the first Adam update of ``n`` one-Parameter groups,
    checked against one Adam per Parameter (the same update done in pieces)."""
    start = np.linspace(-1.0, 1.0, n).astype(np.float32)
    grads = np.cos(np.arange(n, dtype=np.float32))
    params = [Parameter(start[i : i + 1].copy()) for i in range(n)]
    apart = [Parameter(start[i : i + 1].copy()) for i in range(n)]
    lr = [1e-3 * (1 + i % 3) for i in range(n)]
    grouped = Adam().setup([{"params": [p], "lr": lr[i]} for i, p in enumerate(params)])
    for i in range(n):
        params[i].grad = Variable(grads[i : i + 1].copy())
        apart[i].grad = Variable(grads[i : i + 1].copy())
        Adam(lr=lr[i]).setup([apart[i]]).update()
    _, lines = _lines_run_in(os.path.dirname(optimizers.__file__), grouped.update)
    for p, q in zip(params, apart):
        assert p.data.tobytes() == q.data.tobytes()
    return lines


def test_the_first_update_of_thousands_of_parameter_groups_is_linear():
    # each group's new flat segment looked for memory it shares with every Parameter of
    # the optimizer: groups x parameters (3,000 one-Parameter groups: 13 s)
    short = _first_update_of_one_group_each(300)
    long = _first_update_of_one_group_each(600)
    assert long < 2.3 * short, (short, long)


def test_parameters_sharing_memory_across_groups_stay_tied():
    base = np.arange(6, dtype=np.float64)
    a, b, c = Parameter(base[0:4]), Parameter(base[2:6]), Parameter(np.zeros(2))
    opt = SGD(lr=0.5).setup([{"params": [a]}, {"params": [b, c]}])
    for p in (a, b, c):
        p.grad = Variable(np.ones(p.shape))
    opt.update()
    # overlapping views of one array: each step lands in the shared memory (not copied out)
    assert np.shares_memory(a.data, base) and np.shares_memory(b.data, base)
    np.testing.assert_array_equal(base, [-0.5, 0.5, 1.0, 2.0, 3.5, 4.5])
    np.testing.assert_array_equal(c.data, [-0.5, -0.5])


def _csv_log_lines(tmp_path, epochs):
    """Lines the training package runs for ``epochs`` of 300 iterations, each one logged to
    a CSV file with a column that appears at the second iteration; checks the file."""
    np.random.seed(0)
    model = MLP((4, 3))
    loader = DataLoader(Spiral(train=True), batch_size=1)
    trainer = Trainer(model, SGD(lr=0.1).setup(model), loader, max_epochs=epochs, out=tmp_path)
    log = trainer.extend(LogReport(trigger=(1, "iteration"), filename="log.csv"))

    def late(tr):  # a key first observed at the second iteration: the file is rewritten
        if tr.iteration >= 2:
            tr.observation["late"] = float(tr.iteration)

    trainer.extend(late, priority=300)
    _, lines = _lines_run_in(os.path.dirname(training.__file__), trainer.run)
    with open(tmp_path / "log.csv", newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header[:3] == ["epoch", "iteration", "elapsed_time"] and header[-1] == "late"
    assert len(header) == len(set(header)) and len(rows) == 1 + 300 * epochs == 1 + len(log.log)
    at = header.index("late")
    assert rows[1][at] == ""
    assert [float(r[at]) for r in rows[2:]] == list(range(2, 300 * epochs + 1))
    return lines


def test_a_csv_log_of_thousands_of_entries_is_written_in_linear_time(tmp_path):
    # each write read every entry logged so far for its keys: n**2 / 2 entry reads for n
    # entries (a log written at every iteration: 12 s for 8,000)
    short = _csv_log_lines(tmp_path / "short", 1)
    long = _csv_log_lines(tmp_path / "long", 2)
    assert long < 2.3 * short, (short, long)


class _Cell(Layer):
    """A layer holding a Parameter and, as its second member, the next cell down."""

    def __init__(self, inner=None):
        super().__init__()
        self.w = Parameter(np.full(1, 0.0 if inner is None else inner.w.data[0] + 1.0))
        if inner is not None:
            self.inner = inner


def test_a_layer_tree_thousands_deep_is_walked_without_recursion(tmp_path):
    # every walk of a model (params, named_params, state dicts, weight files, train/eval)
    # recursed once per level: a RecursionError past about 900 levels
    depth = 3000
    model = None
    for _ in range(depth):
        model = _Cell(model)
    names = [".".join(["inner"] * k + ["w"]) for k in range(depth)]
    assert list(model.named_params()) == names
    assert [float(p.data[0]) for p in model.params()] == [
        float(depth - 1 - k) for k in range(depth)
    ]
    walked = [(name, level) for name, _, level, member in model.walk() if isinstance(member, Layer)]
    assert walked == [(".".join(["inner"] * k), k) for k in range(depth)]
    assert model.count_params() == depth
    state = model.state_dict()
    assert list(state) == names
    model.save_weights(tmp_path / "deep.npz")
    for p in model.params():
        p.data = p.data * 0.0
    model.load_weights(tmp_path / "deep.npz")
    assert [float(p.data[0]) for p in model.params()] == [
        float(depth - 1 - k) for k in range(depth)
    ]
    lines = repr(model).split("\n")
    assert len(lines) == 2 * depth - 1 and lines[:2] == ["_Cell(", "  (inner): _Cell("]
    assert lines[depth - 1] == " " * (2 * depth - 2) + "(inner): _Cell()"
    assert lines[depth:] == [" " * (2 * k) + ")" for k in reversed(range(depth - 1))]
    model.eval()
    bottom = model
    while hasattr(bottom, "inner"):
        bottom = bottom.inner
    assert not bottom.training


class _Wide(Layer):
    def __init__(self, n, attribute="ps", size=1):
        super().__init__()
        setattr(self, attribute, [Parameter(np.full(size, float(i))) for i in range(n)])


def test_a_wide_model_that_does_not_fit_a_file_names_ten_names_and_counts_the_rest(tmp_path):
    # every name was listed: 50,000 parameters made a message of over a megabyte, with what
    # to do (and that nothing changed) at its end
    n = 5000
    _Wide(n).save_weights(tmp_path / "w.npz")
    other = _Wide(n, "qs")
    with pytest.raises(WeightFileError) as info:
        other.load_weights(tmp_path / "w.npz")
    ten = [f"qs/{i}" for i in range(10)]
    assert str(info.value) == (
        f"load_weights: {str(tmp_path / 'w.npz')!r} does not fit _Wide (missing in the file: "
        f"{ten} and 4,990 more; not in the model: {[f'ps/{i}' for i in range(10)]} and "
        f"4,990 more). The model was not changed."
    )
    with pytest.raises(ValueError) as info:
        other.load_state_dict(_Wide(n).state_dict())
    message = str(info.value)
    assert len(message) < 500 and "and 4,990 more" in message
    assert message.endswith("or strict=False to load the names that match.")
    wider = _Wide(n, size=2)
    with pytest.raises(WeightFileError) as info:
        wider.load_weights(tmp_path / "w.npz")
    message = str(info.value)
    assert "ps/9: model (2,), file (1,); and 4,990 more)" in message and len(message) < 600
    assert [float(p.data[0]) for p in wider.params()] == list(range(n))  # unchanged
    assert [float(p.data[0]) for p in other.params()] == list(range(n))


class _Chain(Layer):
    """A cell holding a weight and the next cell down; its forward runs down without
    recursion (a loop), so any depth runs."""

    def __init__(self, inner=None):
        super().__init__()
        self.w = Parameter(np.ones(1))
        if inner is not None:
            self.inner = inner

    def forward(self, x):
        cell = self
        while True:
            x = x * cell.w
            if "inner" not in cell.__dict__:
                return x
            cell = cell.inner


def test_with_params_and_functional_call_of_a_tree_thousands_deep(tmp_path):
    # the twin with_params makes was built one call per level: a RecursionError past about
    # 900 levels, for a model whose own forward runs at any depth
    depth = 3000
    model = None
    for _ in range(depth):
        model = _Chain(model)
    names = list(model.named_params())
    twin = model.with_params({names[0]: np.full(1, 2.0), names[-1]: np.full(1, 3.0)})
    assert float(twin(np.ones(1)).data[0]) == 6.0
    assert float(model(np.ones(1)).data[0]) == 1.0  # the model keeps its own
    values = {k: np.full(1, 1.0 + (i % 3 == 0) * 0.001) for i, k in enumerate(names)}
    x = np.full(1, 0.5)
    product = np.prod([v[0] for v in values.values()])
    out = functional_call(model, values, (x,))
    assert float(out.data[0]) == pytest.approx(0.5 * product, rel=1e-12)
    grads = grad(lambda ps: F.sum(functional_call(model, ps, (x,))))(values)
    for k in (names[0], names[1], names[-1]):  # d(x * prod w) / dw_k = x * prod w / w_k
        assert float(grads[k][0]) == pytest.approx(0.5 * product / values[k][0], rel=1e-12)


def test_with_params_of_a_name_a_wide_model_lacks_names_ten_of_its_parameters():
    model = _Wide(5000)
    with pytest.raises(ValueError) as info:
        model.with_params({"ps.5000": np.zeros(1)})
    assert str(info.value) == (
        f"with_params: ['ps.5000'] are not parameters of _Wide; its parameters are "
        f"{[f'ps.{i}' for i in range(10)]} and 4,990 more."
    )
