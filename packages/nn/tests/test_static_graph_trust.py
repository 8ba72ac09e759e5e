"""static_graph under a training loop that changes things between calls: eager's bits, or a warning.

Each case runs the same calls twice from the same seed, once eagerly and once with the
step under ``static_graph``, and compares after every call the bytes of what the call
returned (or the error it raised), of every parameter and gradient and of the
optimizer's state. A case either replays with no warning, or says why once, with a
:class:`~zerograd.StaticGraphWarning`. The cases here are the ones
``test_static_graph_adversarial.py`` does not try: a call that raises after its backward,
or in a forward after batch norm moved its running statistics, with the loop carrying on.
"""

import re
import warnings

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import StaticGraphWarning, Variable, static_graph
from zerograd_nn import Model, models
from zerograd_nn import optimizers as O

REPLAYS = "replays"


def _bits(a):
    if a is None:
        return None
    a = np.asarray(a.data if isinstance(a, Variable) else a)
    return (a.shape, str(a.dtype), a.tobytes())


def _tree(x):
    if isinstance(x, dict):
        return {k: _tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_tree(v) for v in x]
    if isinstance(x, Variable) or hasattr(x, "dtype"):
        return _bits(x)
    return x


def _snap(out, model, opt):
    params = [(k, _bits(p), _bits(p.grad)) for k, p in sorted(model.named_params().items())]
    return _tree(out), params, _tree(opt.state_dict())


def _call(step, *args):
    try:
        return step(*args)
    except Exception as e:  # the error is part of the result: the same, eagerly and replayed
        return type(e).__name__, str(e)


def _batch(i, n=8, classes=3):
    r = np.random.default_rng(i)
    return r.standard_normal((n, 4)), r.integers(0, classes, n)


def _model(opt):
    zerograd.seed(0)
    model = models.MLP((6, 3))
    return model, opt.setup(model)


# -- the cases: each takes the decorator (identity, or static_graph) --------------------------


def metric_with_bad_labels_after_backward_then_accumulate(deco):
    """A metric's labels are refused after the backward gave the gradients: eagerly those
    gradients stay, and the loop (catching the error) updates with them."""
    model, opt = _model(O.SGD(lr=0.1))

    @deco
    def step(x, t, t_metric):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()  # accumulates: the loop updates every second call
        return loss, F.softmax_cross_entropy(model(x), t_metric)

    out = []
    for i in range(10):
        x, t = _batch(i)
        t_metric = t.copy()
        if i == 6:
            t_metric[0] = 3  # out of range, in a replay
        out.append(_snap(_call(step, x, t, t_metric), model, opt))
        if i % 2 == 1:
            opt.update()
            model.cleargrads()
    return out, step


def metric_with_bad_labels_before_update(deco):
    """The same refusal between backward and update, with Adam: gradients as eager's."""
    model, opt = _model(O.Adam(alpha=0.01))

    @deco
    def step(x, t, t_metric):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        metric = F.softmax_cross_entropy(model(x), t_metric)
        opt.update()
        return loss, metric

    out = []
    for i in range(9):
        x, t = _batch(i)
        t_metric = t.copy()
        if i == 5:
            t_metric[0] = -1
        out.append(_snap(_call(step, x, t, t_metric), model, opt))
    return out, step


class BNNet(Model):
    def __init__(self):
        super().__init__()
        self.l1, self.bn, self.l2 = L.Linear(8), L.BatchNorm(), L.Linear(3)

    def forward(self, x):
        return self.l2(F.relu(self.bn(self.l1(x))))


def bad_labels_after_batch_norm_moved_its_statistics(deco):
    """Eagerly, batch norm's forward moves the running statistics before the loss refuses
    its labels; a replay that checked the labels first would leave them behind for good."""
    zerograd.seed(0)
    model = BNNet()
    opt = O.Adam(alpha=0.01).setup(model)

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(9):
        x, t = _batch(i)
        if i == 5:
            t = t.copy()
            t[0] = 5
        out.append(_snap(_call(step, x, t), model, opt))  # avg_mean, avg_var are params
    return out, step


CASES = {
    "bad_labels_after_batch_norm_moved_its_statistics": (
        bad_labels_after_batch_norm_moved_its_statistics,
        REPLAYS,
    ),
    "metric_with_bad_labels_after_backward_then_accumulate": (
        metric_with_bad_labels_after_backward_then_accumulate,
        REPLAYS,
    ),
    "metric_with_bad_labels_before_update": (metric_with_bad_labels_before_update, REPLAYS),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_replay_is_eager_to_the_bit_or_says_why_not(name):
    scenario, expected = CASES[name]
    eager, _ = scenario(lambda f: f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static, step = scenario(static_graph)
    said = [str(w.message) for w in caught if issubclass(w.category, StaticGraphWarning)]
    for i, (e, s) in enumerate(zip(eager, static)):
        assert s == e, f"{name}: call {i} differs from the eager run"
    assert len(static) == len(eager)
    if expected is REPLAYS:
        assert said == [], f"{name}: {said}"
        assert step.counts["replayed"] > 0, step.counts
    else:
        assert len(said) == 1, said
        assert re.search(expected, said[0]), said[0]


def test_a_variable_returned_twice_is_one_variable_as_eagerly():
    """``return loss, {"loss": loss}``: eagerly both are one Variable (a gradient given to
    one is the other's); a replay made one per place it was returned."""

    def run(deco):
        model, opt = _model(O.AdaGrad(lr=0.05))

        @deco
        def step(x, t):
            model.cleargrads()
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            loss.backward()
            opt.update()
            return loss, [y, {"loss": loss}], y

        out = []
        for i in range(6):
            loss, (y, d), y2 = step(*_batch(i))
            out.append((_bits(loss), _bits(y), loss is d["loss"], y is y2))
        return out, step

    eager, _ = run(lambda f: f)
    static, step = run(static_graph)
    assert step.counts["replayed"] == 3, step.counts
    assert static == eager
    assert all(same_loss and same_y for _, _, same_loss, same_y in static)
