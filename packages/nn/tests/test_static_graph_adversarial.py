"""static_graph against a hostile but fair user: bit for bit with eager, or one warning.

Every case is a small training or inference loop written the way a user would write it,
with something that differs between the recorded calls and a later one: Python state,
object identity, threads, the mode of a layer, randomness drawn in Python, gradients
cleared or given at odd places. Each runs twice from the same seed, once eagerly and once
with the step under ``static_graph``, through the public API only; the snapshots after
every call (losses, parameters and gradients as bytes) must be equal, and the static run
must either have replayed with no warning, or have said why it did not, once, with a
:class:`~zerograd.StaticGraphWarning` whose text the case names.

These cases are about the replay's promise, not its mechanism: a redesign of how the
replay records must keep them passing unchanged.
"""

import contextlib
import copy
import random
import re
import threading
import warnings

import numpy as np
import pytest

import zerograd
import zerograd.functions as ZF
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Parameter, StaticGraphWarning, Variable, no_grad, static_graph, test_mode
from zerograd_nn import Model, models
from zerograd_nn import optimizers as O
from zerograd_nn.schedulers import StepLR

REPLAYS = "replays"  # the expectation of a case that must replay, with no warning


def _bits(a):
    if a is None:
        return None
    a = np.asarray(a.data if isinstance(a, Variable) else a)
    return (a.shape, str(a.dtype), a.tobytes())


def _snap(*things):
    out = []
    for t in things:
        if hasattr(t, "named_params"):
            out += [(k, _bits(p), _bits(p.grad)) for k, p in sorted(t.named_params().items())]
        elif isinstance(t, Variable):
            out.append((_bits(t), _bits(t.grad)))
        else:
            out.append(_bits(t))
    return out


def _batch(i, n=8, classes=3):
    r = np.random.default_rng(i)
    return r.standard_normal((n, 4)), r.integers(0, classes, n)


def _mlp(seed=0):
    zerograd.seed(seed)
    model = models.MLP((6, 3))
    return model, O.SGD(lr=0.1).setup(model)


class DropNet(Model):
    """Linear, batch norm, dropout, linear: everything that depends on the mode."""

    def __init__(self):
        super().__init__()
        self.l1, self.bn, self.l2 = L.Linear(8), L.BatchNorm(), L.Linear(3)

    def forward(self, x):
        return self.l2(F.dropout(F.relu(self.bn(self.l1(x))), 0.5))


class DezeroSGD(O.Optimizer):
    """The book's way of writing an optimizer: its own lr attribute, update_one."""

    def __init__(self, lr=0.1):
        super().__init__()
        self.lr = lr

    def update_one(self, param):
        param.data -= self.lr * param.grad.data


# -- the cases ---------------------------------------------------------------------------------
# each takes the decorator (identity, or static_graph) and returns (snapshots, the step)


def clear_after_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        model.cleargrads()  # at the end, not the start
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(10)], step


def zero_grad_after_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(10)], step


def cleargrad_each_after_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        for p in model.params():
            p.cleargrad()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(10)], step


def update_now_flag(deco):
    model, opt = _mlp()

    @deco
    def step(x, t, now):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        if now:  # an argument: part of the key
            opt.update()
            opt.zero_grad()
        return loss

    return [_snap(step(*_batch(i), i % 2 == 1), model) for i in range(16)], step


def accumulate_three_then_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()  # adds onto what the last micro-batch left
        return loss

    out = []
    for i in range(15):
        out.append(_snap(step(*_batch(i)), model))
        if i % 3 == 2:
            opt.update()
            model.cleargrads()
    return out, step


def accumulate_two_then_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()  # a new gradient, then one added onto it, in turn
        return loss

    out = []
    for i in range(12):
        out.append(_snap(step(*_batch(i)), model))
        if i % 2 == 1:
            opt.update()
            model.cleargrads()
    return out, step


def freeze_by_cleargrad_before_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        model.l0.W.cleargrad()  # freezes l0.W for this update
        opt.update()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def freeze_param_hook(deco):
    model, opt = _mlp()
    opt.add_hook(O.FreezeParam(model.l1))

    @deco
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def eval_after_recording_predict(deco):
    zerograd.seed(0)
    model = DropNet()

    @deco
    def predict(x):
        with no_grad():
            return model(x)

    out = [_snap(predict(_batch(i)[0])) for i in range(5)]
    model.eval()  # dropout off, batch norm on its running statistics
    out += [_snap(predict(_batch(i)[0]), model) for i in range(5)]
    model.train()
    out += [_snap(predict(_batch(i)[0]), model) for i in range(5)]
    return out, predict


def eval_of_one_sub_layer(deco):
    zerograd.seed(0)
    model = DropNet()
    opt = O.SGD(lr=0.05).setup(model)

    @deco
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(12):
        if i == 5:
            model.bn.eval()  # freeze the statistics only
        if i == 9:
            model.bn.train()
        out.append(_snap(step(*_batch(i)), model))
    return out, step


def eval_and_train_inside_the_step(deco):
    zerograd.seed(0)
    model = DropNet()
    opt = O.SGD(lr=0.05).setup(model)

    @deco
    def step(x, t, xv):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        model.eval()
        with no_grad():
            val = model(xv)
        model.train()  # left as it was found
        return loss, val

    out = []
    for i in range(8):
        x, t = _batch(i)
        loss, val = step(x, t, _batch(100 + i)[0])
        out.append(_snap(loss, val, model))
    return out, step


def eval_left_on_inside_the_step(deco):
    zerograd.seed(0)
    model = DropNet()

    @deco
    def predict(x):
        model.eval()  # and never train() again
        with no_grad():
            return model(x)

    out = []
    for i in range(6):
        out.append(_snap(predict(_batch(i)[0])) + [model.training])
        model.train()  # the caller switches back between calls
    return out, predict


def eval_left_on_and_never_switched_back(deco):
    """static-graph.md: a step that switches a layer to eval() and leaves it so runs
    eagerly on the calls that find the layer in train mode; where nothing switches it back,
    the later calls find it in eval mode already, and replay the eager bits."""
    zerograd.seed(0)
    model = DropNet()

    @deco
    def predict(x):
        model.eval()
        with no_grad():
            return model(x)

    return [_snap(predict(_batch(i)[0])) + [model.training] for i in range(6)], predict


class ModeNet(Model):
    """A user's forward that branches on its own training flag."""

    def __init__(self):
        super().__init__()
        self.l1 = L.Linear(3)

    def forward(self, x):
        y = self.l1(x)
        return y * 2.0 if self.training else y


def training_property_in_forward(deco):
    zerograd.seed(0)
    model = ModeNet()

    @deco
    def predict(x):
        with no_grad():
            return model(x)

    out = [_snap(predict(_batch(i)[0])) for i in range(4)]
    model.eval()
    out += [_snap(predict(_batch(i)[0])) for i in range(4)]
    return out, predict


def _plain_step(model, opt):
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        return loss

    return step


def dezero_optimizer_lr_between_calls(deco):
    zerograd.seed(0)
    model = models.MLP((6, 3))
    opt = DezeroSGD(0.2).setup(model)
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(8):
        out.append(_snap(step(*_batch(i)), model))
        opt.lr *= 0.5  # its own attribute, outside any parameter group
    return out, step


def weight_decay_rate_between_calls(deco):
    model, opt = _mlp()
    decay = O.WeightDecay(0.01)
    opt.add_hook(decay)
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(8):
        out.append(_snap(step(*_batch(i)), model))
        decay.rate *= 2
    return out, step


def clip_limit_between_calls(deco):
    model, opt = _mlp()
    clip = O.ClipGrad(0.01)
    opt.add_hook(clip)
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(8):
        out.append(_snap(step(*_batch(i)), model))
        clip.max_norm *= 3  # from clipping every gradient to clipping none
    return out, step


def weight_decay_rate_inside(deco):
    model, opt = _mlp()
    decay = O.WeightDecay(0.01)
    opt.add_hook(decay)

    @deco
    def step(x, t, rate):
        decay.rate = rate  # a 0-d array: every rate is one kind of call
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.01 * i)), model) for i in range(6)], step


def clip_limit_inside(deco):
    model, opt = _mlp()
    clip = O.ClipGrad(1.0)
    opt.add_hook(clip)

    @deco
    def step(x, t, limit):
        clip.max_norm = float(limit)  # a 0-d array: every limit is one kind of call
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.3 / (i + 1))), model) for i in range(6)], step


def dezero_optimizer_lr_inside(deco):
    zerograd.seed(0)
    model = models.MLP((6, 3))
    opt = DezeroSGD(0.1).setup(model)

    @deco
    def step(x, t, lr):
        opt.lr = lr  # a 0-d array given to the book's optimizer
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.1 / (i + 1))), model) for i in range(6)], step


def lr_float_argument_inside(deco):
    model, opt = _mlp()

    @deco
    def step(x, t, lr):
        opt.lr = lr  # the same value within a kind of call, another kind in between
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), 0.1 if i % 2 else 0.2), model) for i in range(10)], step


def lr_0d_array_argument_inside(deco):
    model, opt = _mlp()

    @deco
    def step(x, t, lr):
        opt.lr = lr  # a 0-d array: taken as a float, as a Python float is
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.1 / (i + 1))), model) for i in range(6)], step


def group_dict_written_inside(deco):
    model, opt = _mlp()

    @deco
    def step(x, t, lr):
        for g in opt.param_groups:
            g["lr"] = float(lr)  # PyTorch's habit
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.1 / (i + 1))), model) for i in range(6)], step


def group_lr_put_back_inside(deco):
    """static-graph.md: a step that assigns a parameter group's "lr" runs eagerly. Here it
    puts back the same float object on every call, which no comparison sees; an lr set
    between calls is then undone by the eager call, and was kept by a replay."""
    model, opt = _mlp()

    @deco
    def step(x, t):
        opt.param_groups[0]["lr"] = 0.1
        return _plain_step(model, opt)(x, t)

    out = []
    for i in range(8):
        if i >= 5:
            opt.lr = 0.5  # between calls
        out.append(_snap(step(*_batch(i)), model))
    return out, step


def function_hook_reading_a_cell_rebound_inside(deco):
    model, opt = _mlp()

    def hook(params):
        for p in params:
            p.grad = Variable(p.grad.data * factor)

    factor = 1.0
    opt.add_hook(hook)

    @deco
    def step(x, t, s):
        nonlocal factor
        factor = float(s)  # the hook reads it at the update
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i), np.array(0.5 + i)), model) for i in range(6)], step


def argument_is_a_parameters_own_array(deco):
    w = Parameter(np.arange(4.0), name="w")

    @deco
    def step(x):
        w.cleargrad()
        y = F.sum(w * x)
        y.backward()
        return y

    out = [_snap(step(w.data), w) for _ in range(4)]  # w's own array, four times
    out += [_snap(step(np.full(4, float(i))), w) for i in range(4)]  # then others
    return out, step


def argument_is_a_view_of_a_parameter_the_step_updates(deco):
    w = Parameter(np.arange(1.0, 5.0), name="w")
    opt = O.SGD(lr=0.1).setup([w])

    @deco
    def step(x):
        w.cleargrad()
        loss = F.sum(w * w) + F.sum(x)
        loss.backward()
        opt.update()  # writes w's array, and so the argument, a view of it
        return loss

    return [_snap(step(w.data[:1]), w) for _ in range(6)], step


def argument_views_one_of_two_packed_parameters(deco):
    w = Parameter(np.arange(1.0, 5.0), name="w")
    b = Parameter(np.arange(1.0, 3.0), name="b")
    opt = O.SGD(lr=0.1).setup([w, b])  # packs w and b into one buffer at the first update

    @deco
    def step(x):
        w.cleargrad()
        b.cleargrad()
        loss = F.sum(w * w) + F.sum(b * b) + F.sum(x)
        loss.backward()
        opt.update()
        return loss

    return [_snap(step(b.data[1:]), w, b) for _ in range(6)], step


def copy_of_a_model_with_a_decorated_method(deco):
    class Net(Model):
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(3, in_size=4)

        def step(self, x, t):
            self.cleargrads()
            loss = F.mean_squared_error(self.l1(x), t)
            loss.backward()
            self.opt.update()
            return loss

    Net.step = deco(Net.step)
    zerograd.seed(0)
    a = Net()
    a.opt = O.SGD(lr=0.1).setup(a)
    x, t = np.ones((2, 4)), np.zeros((2, 3))
    out = [_snap(a.step(x, t), a) for _ in range(4)]
    b = copy.copy(a)  # shares a's __dict__ entries: its layers, and its recordings
    b.l1 = copy.deepcopy(a.l1)
    b.opt = O.SGD(lr=0.1).setup(b)
    for _ in range(4):
        out.append(_snap(b.step(x, t), a, b))
    step = b.__dict__.get("_static_graphs", {})
    return out, next(iter(step.values()), None)


def double_backprop_through_cross_entropy_with_shared_labels(deco):
    W = Parameter(np.random.default_rng(0).standard_normal((4, 3)), name="W")

    @deco
    def step(x, t):
        W.cleargrad()
        x.cleargrad()
        loss = F.softmax_cross_entropy(F.matmul(x, W), t)
        loss.backward(create_graph=True)
        gx = x.grad
        W.cleargrad()
        x.cleargrad()
        F.sum(gx * gx).backward()  # through the cross-entropy's vjp: its one-hot labels
        return loss

    out = []
    for i in range(7):
        t = np.array([0, 1]) if i < 3 else np.array([2, i % 3])  # the recorded calls share t
        x = Variable(np.random.default_rng(i).standard_normal((2, 4)))
        out.append(_snap(step(x, t), W, x))
    return out, step


def negative_zero_argument(deco):
    @deco
    def f(x, c):
        with no_grad(), np.errstate(divide="ignore"):
            return 1 / (x * np.full(2, c))  # inf or -inf

    cs = (0.0,) * 4 + (-0.0,) * 4
    return [_snap(f(Variable(np.array([1.0, -2.0]) * (i + 1)), c)) for i, c in enumerate(cs)], f


def negative_zero_numpy_scalar_argument(deco):
    @deco
    def f(x, c):
        with no_grad(), np.errstate(divide="ignore"):
            return 1 / (x * np.full(2, c, dtype=np.float32))

    cs = [np.float32(0.0)] * 4 + [np.float32(-0.0)] * 4
    xs = [Variable(np.array([1.0, -2.0], dtype=np.float32) * (i + 1)) for i in range(8)]
    return [_snap(f(x, c)) for x, c in zip(xs, cs)], f


def nan_argument_is_one_kind(deco):
    @deco
    def f(x, c):
        with no_grad():
            return x * np.full(2, c)

    return [_snap(f(Variable(np.arange(2.0) + i), float("nan"))) for i in range(5)], f


def nan_guard_on_loss_data(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        if not np.isfinite(loss.data):  # skip a bad batch
            return loss
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(8):
        x, t = _batch(i)
        out.append(_snap(step(x * np.nan if i == 6 else x, t), model))
    return out, step


def model_rebuilt_under_the_same_name(deco):
    g = globals()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(kfold_model(x), t)  # noqa: F821 - rebound below
        kfold_model.cleargrads()  # noqa: F821
        loss.backward()
        kfold_opt.update()  # noqa: F821
        return loss

    out = []
    for fold in range(3):
        zerograd.seed(fold)
        g["kfold_model"] = models.MLP((6, 3))
        g["kfold_opt"] = O.SGD(lr=0.1).setup(g["kfold_model"])
        out += [_snap(step(*_batch(i)), g["kfold_model"]) for i in range(6)]
    return out, step


def target_network_resynced_by_deepcopy(deco):
    model, opt = _mlp()
    target = copy.deepcopy(model)

    @deco
    def step(x):
        with no_grad():
            q = target(x)  # a closure cell, rebound below
        loss = F.mean_squared_error(model(x), q * 0.9)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(14):
        out.append(_snap(step(_batch(i)[0]), model))
        if i % 4 == 3:
            target = copy.deepcopy(model)
    return out, step


class Agent:
    """A plain object holding the networks; its method is the step."""

    def __init__(self):
        self.model, self.opt = _mlp()
        self.target = copy.deepcopy(self.model)

    def step(self, x):
        with no_grad():
            q = self.target(x)
        loss = F.mean_squared_error(self.model(x), q * 0.9)
        self.model.cleargrads()
        loss.backward()
        self.opt.update()
        return loss


def target_network_attribute_of_an_agent(deco):
    agent = Agent()
    step = deco(agent.step)
    out = []
    for i in range(14):
        out.append(_snap(step(_batch(i)[0]), agent.model))
        if i % 4 == 3:
            agent.target = copy.deepcopy(agent.model)
    return out, step


class TwoLayers(Model):
    """Two Linear layers called by their attribute names."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = L.Linear(6), L.Linear(3)

    def forward(self, x):
        return self.l2(F.sigmoid(self.l1(x)))


def replaced_layer(deco):
    zerograd.seed(0)
    model = TwoLayers()
    opt = O.SGD(lr=0.1).setup(model)
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(10):
        out.append(_snap(step(*_batch(i)), model))
        if i == 4:
            model.l2 = L.Linear(3)  # a new, lazily sized layer
    return out, step


def replaced_parameter(deco):
    model, opt = _mlp()
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(10):
        out.append(_snap(step(*_batch(i)), model))
        if i == 4:
            model.l0.W = Parameter(model.l0.W.data * 0.5, name="W")
    return out, step


def optimizer_set_up_on_another_model(deco):
    model, opt = _mlp()
    zerograd.seed(1)
    other = models.MLP((6, 3))

    @deco
    def step(x, t):
        net = opt.target  # the model the optimizer trains
        net.cleargrads()
        loss = F.softmax_cross_entropy(net(x), t)
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(10):
        out.append(_snap(step(*_batch(i)), model, other))
        if i == 4:
            opt.setup(other)
    return out, step


def helper_function_reads_the_rebuilt_model(deco):
    g = globals()

    @deco
    def step(x, t):
        loss = _helper_loss(x, t)
        helper_model.cleargrads()  # noqa: F821
        loss.backward()
        helper_opt.update()  # noqa: F821
        return loss

    out = []
    for run in range(2):
        zerograd.seed(run)
        g["helper_model"] = models.MLP((6, 3))
        g["helper_opt"] = O.SGD(lr=0.1).setup(g["helper_model"])
        out += [_snap(step(*_batch(i)), g["helper_model"]) for i in range(6)]
    return out, step


def _helper_loss(x, t):
    return F.softmax_cross_entropy(helper_model(x), t)  # noqa: F821 - set by the case


def scale_global_changed_between_calls(deco):
    g = globals()
    g["loss_scale"] = 1.0
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t) * loss_scale  # noqa: F821
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(16):
        if i == 8:
            g["loss_scale"] = 0.5  # a Python number the step reads by name
        out.append(_snap(step(*_batch(i)), model))
    return out, step


def global_rebound_on_every_call(deco):
    g = globals()
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t) * every_call  # noqa: F821
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(12):
        g["every_call"] = 1.0 / (i + 1)
        out.append(_snap(step(*_batch(i)), model))
    return out, step


def history_append_inside(deco):
    model, opt = _mlp()
    history = []

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        history.append(loss)
        return loss

    out = [_snap(step(*_batch(i)), model) for i in range(6)]
    return out + [len(history)], step


def counter_incremented_inside(deco):
    model, opt = _mlp()
    n = 0

    @deco
    def step(x, t):
        nonlocal n
        n += 1
        return _plain_step(model, opt)(x, t)

    out = [_snap(step(*_batch(i)), model) for i in range(6)]
    return out + [n], step


def coin_flip_with_numpy(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        if np.random.rand() < 0.5:  # augmentation: flip the features
            x = x[:, ::-1].copy()
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def coin_flip_with_python_random(deco):
    random.seed(0)
    model, opt = _mlp()

    @deco
    def step(x, t):
        if random.random() < 0.5:
            x = -x
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def noise_from_a_generator(deco):
    model, opt = _mlp()
    rng = np.random.default_rng(0)

    @deco
    def step(x, t):
        return _plain_step(model, opt)(x + 0.1 * rng.standard_normal(x.shape), t)

    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def seeding_inside_the_step(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        np.random.seed(1)  # Python state a replay would not set
        return _plain_step(model, opt)(x, t)

    out = []
    for i in range(6):
        out.append(_snap(step(*_batch(i)), model, np.random.rand(2)))  # what is drawn next
    return out, step


def argument_changed_in_place(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        x *= 2.0  # the caller's array, in place
        return _plain_step(model, opt)(x, t)

    out = []
    for i in range(6):
        x, t = _batch(i)
        out.append(_snap(step(x, t), model, x))
    return out, step


def zerograd_seed_inside_a_dropout_step(deco):
    zerograd.seed(0)
    model = DropNet()
    opt = O.SGD(lr=0.05).setup(model)

    @deco
    def step(x, t):
        zerograd.seed(7)  # the same dropout masks on every call, eagerly
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def one_hot_targets_in_numpy_sorted_labels(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        onehot = np.eye(3)[t]  # made in Python from the labels
        loss = F.mean_squared_error(F.softmax(model(x)), onehot)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(10):
        x, t = _batch(i)
        t = np.zeros(8, dtype=np.int64) if i < 5 else t  # sorted data: class 0 first
        out.append(_snap(step(x, t), model))
    return out, step


def one_hot_targets_in_numpy_same_labels_every_call(deco):
    model, opt = _mlp()
    t = np.array([0, 1, 2, 0, 1, 2, 0, 1])

    @deco
    def step(x, t):
        loss = F.mean_squared_error(F.softmax(model(x)), np.eye(3)[t])
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    return [_snap(step(_batch(i)[0], t), model) for i in range(10)], step


def method_reading_a_state_it_writes(deco):
    class Running(Model):
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(3, in_size=3)
            self.h = None

        def step(self, x):
            with no_grad():
                h = self.l1(x) if self.h is None else self.l1(x) + self.h * 0.5
                self.h = h  # a state: the replay writes it back
                return h

    Running.step = deco(Running.step)
    zerograd.seed(0)
    net = Running()
    out = []
    for i in range(10):
        if i == 5:
            net.h = None  # a reset: another variant
        out.append(_snap(net.step(np.full((1, 3), float(i))), net.h))
    return out, net.__dict__.get("_static_graphs", {}) and next(
        iter(net.__dict__["_static_graphs"].values())
    )


def global_state_rebound_by_the_caller(deco):
    zerograd.seed(0)
    cell = L.Linear(3, in_size=3)
    state = {"h": Variable(np.zeros((1, 3)))}
    g = globals()
    g["carried"] = state["h"]

    @deco
    def step(x):
        with no_grad():
            return F.tanh(cell(x) + carried)  # noqa: F821 - the caller rebinds it

    out = []
    for i in range(8):
        h = step(np.full((1, 3), 0.1 * i))
        g["carried"] = h  # carried by the caller under the same name
        out.append(_snap(h))
    return out, step


def value_read_from_a_dict_changed_between_calls(deco):
    model, opt = _mlp()
    settings = {"scale": 1.0}

    @deco
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t) * settings["scale"]
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(12):
        if i == 6:
            settings["scale"] = 0.5  # the same dict, another value
        out.append(_snap(step(*_batch(i)), model))
    return out, step


def warmup_zero_with_lazily_sized_layers(deco):
    model, opt = _mlp()
    d = (lambda f: static_graph(f, warmup=0)) if deco is static_graph else deco
    step = d(_plain_step(model, opt))
    return [_snap(step(*_batch(i)), model) for i in range(8)], step


def layer_made_inside_the_step(deco):
    zerograd.seed(0)

    @deco
    def step(x):
        with no_grad():
            return L.Linear(2)(x)  # a new layer, sized and drawn on every call

    return [_snap(step(_batch(i)[0])) for i in range(8)], step


def argument_keeps_its_gradient_across_calls(deco):
    x = Variable(np.arange(3.0))

    @deco
    def f(x):
        y = F.sum(x * x)
        y.backward()  # adds onto the gradient x kept from the last call
        return y

    return [_snap(f(x), x) for _ in range(6)], f


def gradient_scaled_between_backward_and_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        for p in model.params():
            p.grad = p.grad * 0.5  # zerograd's operators, but given by hand
        opt.update()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def gradient_given_after_update(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        model.l0.b.grad = Variable(np.ones(6))  # left for whoever reads it next
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def gradient_seeded_by_hand_before_backward(deco):
    w = Parameter(np.arange(3.0), name="w")

    @deco
    def step(x):
        w.grad = Variable(np.ones(3))  # a seed the walk adds onto
        y = F.sum(w * x)
        y.backward()
        return y

    return [_snap(step(np.full(3, float(i))), w) for i in range(6)], step


def data_assigned_by_hand(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        model.l0.b.data = np.zeros(6)  # a reset by hand
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def print_inside_the_step(deco):
    model, opt = _mlp()
    printed = []

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        printed.append(repr(loss))  # as print(loss) would
        return loss

    return [_snap(step(*_batch(i)), model) + [len(printed)] for i in range(6)], step


def returns_loss_data(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        return loss.data  # straight out: Python looks at no value

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def shape_from_data_of_a_parameter(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        n = model.l0.b.data.shape[0]  # the step reads .data, for its shape only
        return _plain_step(model, opt)(F.reshape(x, (x.shape[0], -1)) if n == 6 else x, t)

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


class BookLinear(Model):
    """A layer written as the book's: sized at its first call, tested by ``W.data is None``."""

    def __init__(self, out_size):
        super().__init__()
        self.out_size = out_size
        self.W = Parameter(None, name="W")

    def forward(self, x):
        if self.W.data is None:
            rng = np.random.default_rng(0)
            self.W.data = rng.standard_normal((x.shape[1], self.out_size)) * 0.1
        return F.matmul(x, self.W)


def book_style_lazy_layer(deco):
    model = BookLinear(3)
    opt = O.SGD(lr=0.1).setup(model)
    step = deco(_plain_step(model, opt))
    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def value_read_from_data_of_a_parameter(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        if model.l0.b.data.max() > 10.0:  # a value: Python branches on it
            x = x * 0.0
        return _plain_step(model, opt)(x, t)

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def shape_without_data(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        x = F.reshape(x, (x.shape[0], -1))  # Variable.shape: no value read
        return _plain_step(model, opt)(x, t)

    return [_snap(step(Variable(_batch(i)[0]), _batch(i)[1]), model) for i in range(6)], step


def branch_on_a_plain_array_argument(deco):
    model, opt = _mlp()

    @deco
    def step(x, t):
        if x[0, 0] > 0:  # a plain array: Python reads it unseen, the recordings differ
            x = x * 2.0
        return _plain_step(model, opt)(x, t)

    out = []
    for i in range(10):
        x, t = _batch(i)
        x[0, 0] = 1.0 if i % 2 else -1.0
        out.append(_snap(step(x, t), model))
    return out, step


def train_and_predict_alternate_with_modes(deco):
    zerograd.seed(0)
    model = DropNet()
    opt = O.Adam().setup(model)
    train = deco(_plain_step(model, opt))

    @deco
    def predict(x):
        with no_grad():
            return model(x)

    out = []
    for epoch in range(4):
        model.train()
        for i in range(3):
            out.append(_snap(train(*_batch(10 * epoch + i)), model))
        model.eval()
        out.append(_snap(predict(_batch(99)[0])))
    return out, train


def predict_in_test_mode_then_train(deco):
    zerograd.seed(0)
    model = DropNet()
    model(_batch(0)[0])  # sized

    @deco
    def predict(x):
        with no_grad():
            return model(x)

    out = []
    for i in range(6):
        with test_mode():
            out.append(_snap(predict(_batch(i)[0])))
        out.append(_snap(predict(_batch(i)[0])))  # train mode: dropout on
    return out, predict


def scheduler_step_inside(deco):
    model, opt = _mlp()
    sched = StepLR(opt, step_size=1, gamma=0.5)

    @deco
    def step(x, t):
        loss = _plain_step(model, opt)(x, t)
        sched.step()
        return loss

    return [_snap(step(*_batch(i)), model) for i in range(6)], step


def lstm_window_after_eval_toggle(deco):
    class Seq(Model):
        def __init__(self):
            super().__init__()
            self.rnn, self.drop, self.fc = L.LSTM(6), 0.3, L.Linear(1)

        def forward(self, x):
            h = self.rnn(x)
            return self.fc(F.dropout(h, self.drop) if self.training else h)

    zerograd.seed(0)
    model = Seq()
    opt = O.SGD(lr=0.05).setup(model)

    @deco
    def window(xs, ts):
        loss = 0
        for x, t in zip(xs, ts):
            loss += F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        opt.update()
        return loss

    wave = np.sin(np.linspace(0, 6, 41)).reshape(-1, 1, 1)
    out = []
    for epoch in range(4):
        model.rnn.reset_state()
        if epoch == 2:
            model.eval()  # the recorded windows used dropout
        for s in range(0, 40, 10):
            loss = window(list(wave[s : s + 10]), list(wave[s + 1 : s + 11]))
            out.append(_snap(loss, model))
    return out, window


def clip_reads_the_norm_of_each_replay(deco):
    model, opt = _mlp()
    opt.add_hook(O.ClipGrad(0.5))
    step = deco(_plain_step(model, opt))
    out = []
    for i in range(10):
        x, t = _batch(i)
        out.append(_snap(step(x * (10.0 if i % 3 == 0 else 0.1), t), model))
    return out, step


def closure_model_rebound_between_calls(deco):
    model, opt = _mlp()

    def rebind(new):
        nonlocal model, opt
        model, opt = new

    @deco
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        return loss

    out = []
    for i in range(12):
        if i == 6:
            rebind(_mlp(seed=5))
        out.append(_snap(step(*_batch(i)), model))
    return out, step


CASES = {
    # (1) clearing gradients after the update
    "clear_after_update": (clear_after_update, REPLAYS),
    "zero_grad_after_update": (zero_grad_after_update, REPLAYS),
    "cleargrad_each_after_update": (cleargrad_each_after_update, REPLAYS),
    "update_now_flag": (update_now_flag, REPLAYS),
    "accumulate_three_then_update": (accumulate_three_then_update, REPLAYS),
    "accumulate_two_then_update": (accumulate_two_then_update, REPLAYS),
    # (2) gradients dropped between backward and update
    "freeze_by_cleargrad_before_update": (freeze_by_cleargrad_before_update, REPLAYS),
    "freeze_param_hook": (freeze_param_hook, REPLAYS),
    # (3) eval/train
    "eval_after_recording_predict": (eval_after_recording_predict, REPLAYS),
    "eval_of_one_sub_layer": (eval_of_one_sub_layer, REPLAYS),
    "eval_and_train_inside_the_step": (eval_and_train_inside_the_step, REPLAYS),
    "eval_left_on_inside_the_step": (
        eval_left_on_inside_the_step,
        r"leaves DropNet in another mode than it found it",
    ),
    "eval_left_on_and_never_switched_back": (eval_left_on_and_never_switched_back, REPLAYS),
    "training_property_in_forward": (training_property_in_forward, REPLAYS),
    "train_and_predict_alternate_with_modes": (train_and_predict_alternate_with_modes, REPLAYS),
    "predict_in_test_mode_then_train": (
        predict_in_test_mode_then_train,
        REPLAYS,
    ),
    "lstm_window_after_eval_toggle": (lstm_window_after_eval_toggle, REPLAYS),
    # (4, 5) hyperparameters outside the groups, changed between or inside calls
    "dezero_optimizer_lr_between_calls": (dezero_optimizer_lr_between_calls, REPLAYS),
    "weight_decay_rate_between_calls": (weight_decay_rate_between_calls, REPLAYS),
    "clip_limit_between_calls": (clip_limit_between_calls, REPLAYS),
    "clip_reads_the_norm_of_each_replay": (clip_reads_the_norm_of_each_replay, REPLAYS),
    "weight_decay_rate_inside": (weight_decay_rate_inside, r"assigns WeightDecay\.rate inside"),
    "clip_limit_inside": (clip_limit_inside, r"assigns ClipGrad\.max_norm inside"),
    "dezero_optimizer_lr_inside": (dezero_optimizer_lr_inside, r"assigns DezeroSGD\.lr inside"),
    "lr_float_argument_inside": (lr_float_argument_inside, r"assigns SGD\.lr inside the call"),
    "lr_0d_array_argument_inside": (
        lr_0d_array_argument_inside,
        r"assigns SGD\.lr inside the call",
    ),
    "group_dict_written_inside": (
        group_dict_written_inside,
        r"assigns a parameter group's 'lr' \(group\['lr'\] = \.\.\., or a scheduler's step",
    ),
    "group_lr_put_back_inside": (group_lr_put_back_inside, r"assigns a parameter group's 'lr'"),
    "function_hook_reading_a_cell_rebound_inside": (
        function_hook_reading_a_cell_rebound_inside,
        r"rebinds 'factor' inside the call|changes SGD's hyperparameters",
    ),
    "scheduler_step_inside": (
        scheduler_step_inside,
        r"assigns a parameter group's 'lr' \(group\['lr'\] = \.\.\., or a scheduler's step",
    ),
    # (6) an argument that is a captured Parameter's own array
    "argument_is_a_parameters_own_array": (argument_is_a_parameters_own_array, REPLAYS),
    "argument_is_a_view_of_a_parameter_the_step_updates": (
        argument_is_a_view_of_a_parameter_the_step_updates,
        r"its argument 0 \(an array of shape \(1,\)\) is a view of the data of a Parameter "
        r"'w' of shape \(4,\), which changes in place inside the call \(an optimizer's update",
    ),
    "argument_views_one_of_two_packed_parameters": (
        argument_views_one_of_two_packed_parameters,
        r"its argument 0 \(an array of shape \(1,\)\) is a view of the data of a Parameter "
        r"'b' of shape \(2,\)",
    ),
    # (8) a copy of a model with a decorated method
    "copy_of_a_model_with_a_decorated_method": (copy_of_a_model_with_a_decorated_method, REPLAYS),
    # (9) double backprop through the cross-entropy, recorded calls sharing labels
    "double_backprop_through_cross_entropy_with_shared_labels": (
        double_backprop_through_cross_entropy_with_shared_labels,
        REPLAYS,
    ),
    # (10) -0.0 is not 0.0, nan is nan
    "negative_zero_argument": (negative_zero_argument, REPLAYS),
    "negative_zero_numpy_scalar_argument": (negative_zero_numpy_scalar_argument, REPLAYS),
    "nan_argument_is_one_kind": (nan_argument_is_one_kind, REPLAYS),
    # the named limits: values read into Python, objects replaced, side effects, randomness
    "nan_guard_on_loss_data": (nan_guard_on_loss_data, r"reads a Variable of shape \(\)'s"),
    "model_rebuilt_under_the_same_name": (model_rebuilt_under_the_same_name, REPLAYS),
    "helper_function_reads_the_rebuilt_model": (
        helper_function_reads_the_rebuilt_model,
        REPLAYS,
    ),
    "closure_model_rebound_between_calls": (closure_model_rebound_between_calls, REPLAYS),
    "target_network_resynced_by_deepcopy": (target_network_resynced_by_deepcopy, REPLAYS),
    "target_network_attribute_of_an_agent": (target_network_attribute_of_an_agent, REPLAYS),
    "replaced_layer": (replaced_layer, REPLAYS),
    "replaced_parameter": (replaced_parameter, REPLAYS),
    "optimizer_set_up_on_another_model": (optimizer_set_up_on_another_model, REPLAYS),
    "scale_global_changed_between_calls": (scale_global_changed_between_calls, REPLAYS),
    "global_rebound_on_every_call": (
        global_rebound_on_every_call,
        r"'every_call' refers to another object on one call after another",
    ),
    "history_append_inside": (history_append_inside, r"changes 'history' \(a list\) in place"),
    "counter_incremented_inside": (counter_incremented_inside, r"rebinds 'n' inside the call"),
    "coin_flip_with_numpy": (coin_flip_with_numpy, r"numpy\.random\.rand\(\) at .*line"),
    "coin_flip_with_python_random": (coin_flip_with_python_random, r"random\.random\(\) at"),
    "noise_from_a_generator": (noise_from_a_generator, r"draws random numbers from 'rng'"),
    "seeding_inside_the_step": (
        seeding_inside_the_step,
        r"seeds random numbers inside the call \(numpy\.random\.seed\(\) at .*line",
    ),
    "argument_changed_in_place": (
        argument_changed_in_place,
        r"changes its argument 0 \(an array of shape \(8, 4\)\) in place",
    ),
    "zerograd_seed_inside_a_dropout_step": (
        zerograd_seed_inside_a_dropout_step,
        r"seeds random numbers inside the call \(numpy\.random\.seed\(\) at .*adversarial",
    ),
    "one_hot_targets_in_numpy_sorted_labels": (
        one_hot_targets_in_numpy_sorted_labels,
        r"a constant made inside the call changed",
    ),
    "one_hot_targets_in_numpy_same_labels_every_call": (
        one_hot_targets_in_numpy_same_labels_every_call,
        r"in each of its last 4 recorded calls argument 1 had the same values in both",
    ),
    "method_reading_a_state_it_writes": (method_reading_a_state_it_writes, REPLAYS),
    "global_state_rebound_by_the_caller": (
        global_state_rebound_by_the_caller,
        r"'carried' refers to another object on one call after another",
    ),
    "value_read_from_a_dict_changed_between_calls": (
        value_read_from_a_dict_changed_between_calls,
        REPLAYS,
    ),
    "warmup_zero_with_lazily_sized_layers": (warmup_zero_with_lazily_sized_layers, REPLAYS),
    "layer_made_inside_the_step": (
        layer_made_inside_the_step,
        r"of shape \(2,\) got its first value \(a layer or Parameter made inside the step\?\)",
    ),
    # gradients held, given or changed by hand
    "argument_keeps_its_gradient_across_calls": (
        argument_keeps_its_gradient_across_calls,
        REPLAYS,
    ),
    "gradient_scaled_between_backward_and_update": (
        gradient_scaled_between_backward_and_update,
        r"were changed between backward and the update",
    ),
    "gradient_given_after_update": (
        gradient_given_after_update,
        r"changes the gradient of a Parameter 'b' of shape \(6,\) after backward",
    ),
    "gradient_seeded_by_hand_before_backward": (
        gradient_seeded_by_hand_before_backward,
        r"adds onto a gradient given to a Parameter 'w' of shape \(3,\) by hand inside",
    ),
    "data_assigned_by_hand": (data_assigned_by_hand, r"assigns a Parameter 'b' of shape \(6,\)"),
    "print_inside_the_step": (print_inside_the_step, r"repr\(x\), print\(x\)"),
    "returns_loss_data": (returns_loss_data, REPLAYS),
    "shape_from_data_of_a_parameter": (shape_from_data_of_a_parameter, REPLAYS),
    "book_style_lazy_layer": (book_style_lazy_layer, REPLAYS),
    "value_read_from_data_of_a_parameter": (
        value_read_from_data_of_a_parameter,
        r"reads a Parameter 'b' of shape \(6,\)'s values into Python \(x\.data at .*line",
    ),
    "shape_without_data": (shape_without_data, REPLAYS),
    "branch_on_a_plain_array_argument": (branch_on_a_plain_array_argument, r"did different work"),
}


# -- a call that raises midway, the loop carrying on (the error is the call's result) -------


def _tree(x):
    if isinstance(x, dict):
        return {k: _tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_tree(v) for v in x]
    if isinstance(x, Variable) or hasattr(x, "dtype"):
        return _bits(x)
    return x


def _state_snap(out, model, opt):
    """What a call returned, the parameters and gradients, and the optimizer's state."""
    return _tree(out), _snap(model), _tree(opt.state_dict())


def _call(step, *args):
    try:
        return step(*args)
    except Exception as e:  # the error is part of the result: the same, eagerly and replayed
        return type(e).__name__, str(e)


def _model(opt):
    zerograd.seed(0)
    model = models.MLP((6, 3))
    return model, opt.setup(model)


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
        out.append(_state_snap(_call(step, x, t, t_metric), model, opt))
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
        out.append(_state_snap(_call(step, x, t, t_metric), model, opt))
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
        out.append(_state_snap(_call(step, x, t), model, opt))  # avg_mean, avg_var are params
    return out, step


CASES.update(
    {
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
)


# -- what a step returns beside its loss: a metric, Parameters, detached values ---------------


def _origins(out, model, seen):
    """Where each Variable in ``out`` comes from, as eager returns it.

    A Parameter of ``model`` is named (the very object); any other Variable says whether it
    is new (no call returned it before: ``seen`` holds what earlier calls returned).
    ``seen`` is extended.
    """
    if isinstance(out, dict):
        return {k: _origins(v, model, seen) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [_origins(v, model, seen) for v in out]
    if not isinstance(out, Variable):
        return out
    names = {id(p): k for k, p in model.named_params().items()}
    origin = names.get(id(out)) or ("new", all(out is not v for v in seen))
    seen.append(out)
    return origin


def _returns_loop(model, opt, step, calls=8, x0=None):
    """Call ``step`` on batches; after each call, what it returned (bits and origins),
    the parameters, gradients and optimizer state. ``x0(i)``: ``x[0, 0]`` of call ``i``."""
    out, seen = [], []
    for i in range(calls):
        x, t = _batch(i)
        if x0 is not None:
            x[0, 0] = x0(i)
        got = step(x, t)
        out.append((_origins(got, model, seen), _state_snap(got, model, opt)))
    return out


def _trained(model, opt, x, t):
    y = model(x)
    loss = F.softmax_cross_entropy(y, t)
    model.cleargrads()
    loss.backward()
    opt.update()
    return y, loss


def returns_accuracy(deco):
    """F.accuracy beside the loss: computed again by each replay, a new Variable each call."""
    model, opt = _model(O.Adam(alpha=0.01))

    @deco
    def step(x, t):
        y, loss = _trained(model, opt, x, t)
        return loss, F.accuracy(y, t)

    return _returns_loop(model, opt, step), step


def returns_a_parameter(deco):
    """A Parameter for logging: the model's own, updated, as eager returns it."""
    model, opt = _model(O.Adam(alpha=0.01))

    @deco
    def step(x, t):
        return _trained(model, opt, x, t)[1], model.l0.W

    return _returns_loop(model, opt, step), step


def returns_a_dict_mixing_loss_metric_and_parameters(deco):
    """Loss, accuracy, Parameters (one twice), a Parameter detached before and after the
    update, a value under no_grad and the loss again, in a dict, a tuple and a list."""
    model, opt = _model(O.MomentumSGD(lr=0.1))

    @deco
    def step(x, t):
        before = model.l1.b.detach()
        y, loss = _trained(model, opt, x, t)
        with no_grad():
            p = F.softmax(y)
        acc = F.accuracy(y, t)
        return {
            "loss": loss,
            "acc": acc,
            "W": model.l1.W,
            "pair": (model.l0.b, loss, acc),
            "more": [before, model.l0.W.detach(), p, model.l1.W],
        }

    return _returns_loop(model, opt, step), step


def returns_a_parameter_the_data_chose(deco):
    """Python reads a plain array to choose which Parameter to return: not replayable."""
    model, opt = _model(O.Adam(alpha=0.01))

    @deco
    def step(x, t):
        loss = _trained(model, opt, x, t)[1]
        return loss, model.l0.W if x[0, 0] > 0 else model.l1.W

    return _returns_loop(model, opt, step, x0=lambda i: 1.0 if i % 2 else -1.0), step


def returns_a_metric_the_data_chose(deco):
    """The same with two values that every call computes: the accuracy or the loss."""
    model, opt = _model(O.SGD(lr=0.1))

    @deco
    def step(x, t):
        y, loss = _trained(model, opt, x, t)
        acc = F.accuracy(y, t)
        return acc if x[0, 0] > 0 else loss

    return _returns_loop(model, opt, step, x0=lambda i: 1.0 if i % 2 else -1.0), step


_RETURNED_DIFFERENT_THINGS = (
    r"two of its calls with the same kind of arguments did different work \(they returned "
    r"different things\): Python control flow depends on the data"
)
CASES.update(
    {
        "returns_accuracy": (returns_accuracy, REPLAYS),
        "returns_a_parameter": (returns_a_parameter, REPLAYS),
        "returns_a_dict_mixing_loss_metric_and_parameters": (
            returns_a_dict_mixing_loss_metric_and_parameters,
            REPLAYS,
        ),
        "returns_a_parameter_the_data_chose": (
            returns_a_parameter_the_data_chose,
            _RETURNED_DIFFERENT_THINGS,
        ),
        "returns_a_metric_the_data_chose": (
            returns_a_metric_the_data_chose,
            _RETURNED_DIFFERENT_THINGS,
        ),
    }
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_replay_is_eager_to_the_bit_or_says_why_not(name):
    scenario, expected = CASES[name]
    eager, _ = scenario(lambda f: f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static, step = scenario(static_graph)
    said = [str(w.message) for w in caught if issubclass(w.category, StaticGraphWarning)]
    assert static == eager, f"{name}: the static run differs from the eager run"
    if expected is REPLAYS:
        assert said == [], f"{name}: {said}"
        assert step.counts["replayed"] > 0, step.counts
    else:
        assert len(said) == 1, said
        assert re.search(expected, said[0]), said[0]


def test_two_threads_calling_one_step_get_their_own_results():
    def step(x):
        y = ZF.sum(ZF.clip(x * 1.0, -0.5, 0.5) * 3.0)  # clip's vjp reads its input
        y.backward()
        return y

    static = static_graph(step)
    for _ in range(4):
        static(Variable(np.zeros(50)))
    bad = []

    def worker(k):
        for i in range(300):
            v = np.linspace(-1, 1, 50) * (1.0 if (k + i) % 2 else -0.1)
            a, b = Variable(v), Variable(v.copy())
            if _snap(static(a), a) != _snap(step(b), b):
                bad.append((k, i))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    assert static.counts["replayed"] == 1200 + 1


def test_a_layer_replaced_in_another_thread_while_a_step_records_is_not_the_steps_doing():
    # a recording refuses a call that replaces a layer's Parameter or sets an optimizer up
    # again; it read a count moved by every thread, so building or changing another model
    # in another thread sent the recording step to eager for good, with a false warning
    gate, inside, done = threading.Event(), threading.Event(), threading.Event()

    def pause():  # the call made with the gate open waits for the other thread's change
        if gate.is_set():
            gate.clear()
            inside.set()
            assert done.wait(30)

    def make():
        zerograd.seed(0)
        model = models.MLP((4, 2))
        model(np.zeros((1, 3)))  # sized now: both models get the same weights
        opt = O.SGD(lr=0.1).setup(model)

        def step(x, t):
            pause()
            loss = F.mean_squared_error(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()
            return loss

        return step, model

    x, t = np.linspace(-1, 1, 6).reshape(2, 3), np.zeros((2, 2))
    (eager, eager_model), (step, model) = make(), make()
    step = static_graph(step)
    assert _snap(step(x, t)) == _snap(eager(x, t))  # the warm-up call

    def other():
        assert inside.wait(30)
        layer = L.Linear(3, in_size=2)
        layer.W = Parameter(np.zeros((2, 3)))  # replaces the layer's W
        O.SGD().setup(layer).setup(layer)  # sets an optimizer up again
        done.set()

    helper = threading.Thread(target=other)
    helper.start()
    gate.set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaticGraphWarning)
        assert _snap(step(x, t)) == _snap(eager(x, t))  # recorded while the other replaces
        helper.join(30)
        for _ in range(4):
            assert _snap(step(x, t)) == _snap(eager(x, t))
    assert _snap(model) == _snap(eager_model)
    # (the change moved the count every replay checks: one more recording, as after a
    # change between two calls)
    assert step.counts["replayed"] >= 2 and sum(step.counts.values()) == 6, step.counts


def _in_a_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(30)
    return out[0]


def test_work_a_step_hands_to_another_thread_is_named_in_the_warning():
    # Functions applied in another thread (a pool) are not the recording's, and that
    # thread's Config is its own; the warnings blamed the step for not using no_grad()
    # (it did) or guessed at an input's .data replaced
    w = Parameter(np.array([1.0, 2.0]))

    def infer(x):  # under no_grad() in the calling thread, not in the pool's
        return _in_a_thread(lambda: ZF.sum(w * x))

    def train(x):
        w.cleargrad()
        loss = _in_a_thread(lambda: ZF.sum(w * x))
        loss.backward()
        return loss

    for step, context in ((infer, no_grad), (train, contextlib.nullcontext)):
        static = static_graph(step)
        with warnings.catch_warnings(record=True) as caught, context():
            warnings.simplefilter("always")
            for i in range(3):
                x = Variable(np.array([1.0, float(i)]))
                assert _snap(static(x)) == _snap(step(x))
        said = [str(c.message) for c in caught if issubclass(c.category, StaticGraphWarning)]
        assert len(said) == 1 and "another thread" in said[0], said


def test_a_shallow_copy_leaves_the_original_alone():
    class Net(Model):
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(3, in_size=4)

        @static_graph
        def step(self, x, t):
            self.cleargrads()
            loss = F.mean_squared_error(self.l1(x), t)
            loss.backward()
            self.opt.update()
            return loss

    zerograd.seed(0)
    a = Net()
    a.opt = O.SGD(lr=0.1).setup(a)
    x, t = np.ones((2, 4)), np.zeros((2, 3))
    for _ in range(4):
        a.step(x, t)
    b = copy.copy(a)
    b.l1 = copy.deepcopy(a.l1)
    b.opt = O.SGD(lr=0.1).setup(b)
    before = _bits(a.l1.W)
    b.step(x, t)
    assert _bits(a.l1.W) == before  # the copy's step moved the copy, not the original
    assert _bits(b.l1.W) != before
    assert b.step is not a.step and b.step.counts == {"eager": 1, "traced": 0, "replayed": 0}


# -- what the docs page says a recording cannot see: shown, so that the page stays true -------


def _both(run):
    return run(lambda f: f), run(static_graph)


def test_a_value_read_through_an_attribute_is_frozen_as_the_page_says():
    class Config:
        scale = 1.0

    def run(deco):
        zerograd.seed(0)
        net = models.MLP((3,))
        config = Config()

        @deco
        def f(x):
            with no_grad():
                return net(x) * config.scale

        out = []
        for i in range(6):
            config.scale = 1.0 if i < 4 else 0.5  # the same object: not seen
            out.append(_snap(f(np.ones((2, 4)))))
        return out

    eager, static = _both(run)
    assert static[:4] == eager[:4] and static[4:] != eager[4:]


def test_a_layer_replaced_inside_a_list_is_not_seen_as_the_page_says():
    class Blocks(Model):
        def __init__(self):
            super().__init__()
            self.blocks = [L.Linear(4), L.Linear(2)]

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    def run(deco):
        zerograd.seed(0)
        deep = Blocks()

        @deco
        def f(x):
            with no_grad():
                return deep(x)

        out = [_snap(f(np.ones((2, 3)))) for _ in range(4)]
        deep.blocks[0] = L.Linear(4, in_size=3)  # in place: no layer sees it
        return out + [_snap(f(np.ones((2, 3))))]

    eager, static = _both(run)
    assert static[:4] == eager[:4] and static[4] != eager[4]


def test_a_side_effect_through_an_attribute_is_skipped_as_the_page_says():
    class Log:
        def __init__(self):
            self.losses = []

    def run(deco):
        model, opt = _mlp()
        log = Log()
        step = _plain_step(model, opt)

        @deco
        def logged(x, t):
            loss = step(x, t)
            log.losses.append(loss)  # log is the same object; its list is not watched
            return loss

        for i in range(5):
            logged(*_batch(i))
        return len(log.losses)

    assert _both(run) == (5, 3)  # the replays appended nothing


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


@pytest.mark.parametrize(
    "activation", [F.relu, lambda h: F.leaky_relu(h, 0.1)], ids=["relu", "leaky_relu"]
)
def test_an_activation_mask_under_create_graph_follows_each_call(activation):
    """A gradient penalty through ReLU: its derivative's mask, made from ``y.data`` under
    create_graph, was a constant; the recorded calls (all inputs positive) agreed on it,
    so the replay kept it and gave a call with negative inputs the wrong gradient."""

    def run(deco):
        w = Parameter(np.array([0.5, -1.0, 2.0]), name="w")

        @deco
        def step(x):
            w.cleargrad()
            F.sum(activation(x * w) * x).backward(create_graph=True)
            return w.grad

        return [_bits(step(np.full(3, v))) for v in (1.0, 2.0, 3.0, -4.0, 5.0, -6.0)], step

    eager, _ = run(lambda f: f)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaticGraphWarning)
        static, step = run(static_graph)
    assert static == eager
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 3}


def test_a_replay_refusing_labels_after_a_dropout_has_drawn_its_mask_as_eagerly():
    """The cross-entropy's label check ran before any of the replay's work, before the
    dropout ahead of it drew its mask: a refused replay left the random state where the
    eager call (which drew, then refused) had moved it from, and every later mask and
    weight differed."""

    def run(deco):
        model, opt = _mlp()

        @deco
        def step(x, t):
            loss = F.softmax_cross_entropy(F.dropout(model(x), 0.5), t)
            model.cleargrads()
            loss.backward()
            opt.update()
            return loss

        out = []
        for i in range(7):
            x, t = _batch(i)
            if i == 4:
                t = np.where(t == 0, 5, t)  # out of range: refused, eagerly and replayed
            try:
                out.append(_snap(step(x, t), model))
            except ValueError as exc:
                out.append(str(exc))
            out.append(np.random.get_state()[1].tobytes())
        return out, step

    eager, _ = run(lambda f: f)
    static, step = run(static_graph)
    assert "labels must be class ids in 0..2" in eager[8]
    assert static == eager
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 3}


def test_gradients_cleared_before_a_metric_that_refuses_its_labels_are_cleared_as_eagerly():
    """``cleargrads()`` after the backward, then a metric: the recording placed the clear
    at the call's end, so a replay whose metric refused its labels (out of range) had not
    cleared the gradients the eager call had cleared when it raised."""

    def run(deco):
        model, _ = _mlp()

        @deco
        def step(x, t):
            y = model(x)
            F.softmax_cross_entropy(y, np.zeros(len(t), dtype=np.int64)).backward()
            model.cleargrads()
            return F.accuracy(y, t)

        out = []
        for i in range(6):
            x, t = _batch(i)
            if i == 4:
                t = np.where(t == 0, 5, t)  # out of range for the accuracy
            try:
                out.append(_snap(step(x, t), model))
            except ValueError as exc:
                out.append((str(exc), _snap(model)))
        return out, step

    eager, _ = run(lambda f: f)
    static, step = run(static_graph)
    assert eager[4][0].startswith("accuracy: labels must be class ids in 0..2")
    assert static == eager
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 2}


def test_a_double_backward_through_dropout_stays_eager_and_says_why():
    """Under create_graph dropout's derivative multiplies by the mask its forward drew,
    a constant to a recording: two recorded calls that drew the same mask (likely on two
    elements) froze it, and each replay's second derivative used it, whatever the
    forward drew. For 20 of these 40 seeds the replay differed from eager."""

    def run(deco, seed):
        zerograd.seed(seed)
        w = Parameter(np.array([2.0, 3.0]), name="w")

        @deco
        def step(x):
            w.cleargrad()
            F.sum(F.dropout(x * w, 0.5) * x).backward(create_graph=True)
            return w.grad

        return [_bits(step(np.array([1.0 + i, 2.0]))) for i in range(6)], step

    for seed in range(40):
        eager, _ = run(lambda f: f, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            static, step = run(static_graph, seed)
        said = [str(w.message) for w in caught if issubclass(w.category, StaticGraphWarning)]
        assert static == eager, seed
        assert step.counts["replayed"] == 0
        assert len(said) == 1 and "reads what _Dropout's forward saved" in said[0], said


@pytest.mark.parametrize("pool", [F.pooling, F.pooling_simple])
def test_a_gradient_penalty_through_max_pooling_follows_each_calls_winners(pool):
    """Max pooling's derivative under create_graph reads the winners its forward found:
    ``F.pooling``'s through a reference to the forward ``Pooling`` (the replay kept the
    recorded call's), ``F.pooling_simple``'s as ``GetItem``'s copy of its index (a
    constant to the recordings, which agreed: the same winners). Each replay sent the
    gradient, and the penalty's second derivative, to the recorded calls' winners."""

    def run(deco):
        w = Parameter(np.linspace(-1.0, 1.0, 16).reshape(1, 1, 4, 4), name="w")

        @deco
        def step(x):
            w.cleargrad()
            y = pool(x * w, 2, 1)
            F.sum(y * y).backward(create_graph=True)
            g = w.grad
            w.cleargrad()
            F.sum(g * g).backward()  # the penalty's gradient: d/dw of |d/dw sum(y^2)|^2
            return w.grad

        base = np.random.default_rng(0).standard_normal((1, 1, 4, 4))
        # the recorded calls: other values, the same winners; then other winners
        xs = [base * (1.0 + 0.001 * i) for i in range(3)]
        xs += [np.random.default_rng(i).standard_normal((1, 1, 4, 4)) for i in range(3)]
        return [_bits(step(x)) for x in xs], step

    eager, _ = run(lambda f: f)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaticGraphWarning)
        static, step = run(static_graph)
    assert static == eager
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 3}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize(
    "loss",
    [F.sigmoid_cross_entropy, lambda x, t: F.binary_cross_entropy(F.sigmoid(x), t)],
    ids=["sigmoid_cross_entropy", "binary_cross_entropy"],
)
def test_targets_changed_in_place_between_calls_reach_the_replayed_loss(loss, create_graph):
    """The 0/1 targets of the binary losses, converted to the scores' dtype in Python (and
    ``1 - t`` for binary_cross_entropy): constants to a recording, so after the caller
    wrote new targets into the array the step names, the replays' losses and gradients
    used the recorded ones (``x * t`` with such a ``t`` reads each call's)."""
    t = np.array([[1, 0], [0, 1], [1, 1]])

    def run(deco):
        w = Parameter(np.array([[0.5, -1.0], [2.0, 0.3]]), name="w")

        @deco
        def step(x):
            w.cleargrad()
            loss(F.matmul(x, w), t).backward(create_graph=create_graph)
            return w.grad

        out = []
        for i in range(6):
            if i == 4:
                t[...] = [[0, 1], [1, 0], [0, 0]]
            out.append(_bits(step(np.arange(6.0).reshape(3, 2) * 0.1 * (1 + i))))
        return out, step

    eager, _ = run(lambda f: f)
    t[...] = [[1, 0], [0, 1], [1, 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaticGraphWarning)
        static, step = run(static_graph)
    assert static == eager
    assert step.counts == {"eager": 1, "traced": 2, "replayed": 3}
