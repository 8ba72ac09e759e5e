"""static_graph on training steps: the examples' models, every optimizer, bit for bit.

Each test trains twice from the same seed, once eagerly and once with the step under
static_graph, and compares the loss, every parameter, every gradient and the optimizer
state after every step. The models are the examples' (an MLP, a CNN, an LSTM on a sine
wave, a character LSTM); the optimizers come with weight decay, hooks, parameter groups
and schedulers changing the lr between steps.
"""

import copy

import numpy as np
import pytest
from example_scripts import load

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import StaticGraphWarning, Variable, static_graph, test_mode
from zerograd.backends import as_array_of, backend_of
from zerograd.testing.chains import fuse_step_by_step
from zerograd_nn import Model, models
from zerograd_nn import optimizers as O
from zerograd_nn.schedulers import CosineAnnealingLR, StepLR


def _bits(to_np, a):
    a = to_np(a.data if isinstance(a, Variable) else a)
    return (a.shape, str(a.dtype), a.tobytes())


def _snapshot(to_np, loss, model, opt):
    params = sorted(model.named_params().items())
    out = [_bits(to_np, loss)]
    out += [(k, _bits(to_np, p)) for k, p in params]
    out += [(k, None if p.grad is None else _bits(to_np, p.grad)) for k, p in params]
    out.append(opt.settings())
    return out


class CNN(Model):
    """The bench's CNN: conv 3x3, relu, max-pool 2, linear."""

    def __init__(self):
        super().__init__()
        self.conv = L.Conv2d(4, kernel_size=3, stride=1, pad=1)
        self.fc = L.Linear(10)

    def forward(self, x):
        h = F.pooling(F.relu(self.conv(x)), 2, 2)
        return self.fc(F.reshape(h, (x.shape[0], -1)))


class DropMLP(Model):
    """An MLP with dropout and batch normalization (random masks, running statistics)."""

    def __init__(self):
        super().__init__()
        self.l1, self.bn, self.l2 = L.Linear(16), L.BatchNorm(), L.Linear(3)

    def forward(self, x):
        return self.l2(F.dropout(F.relu(self.bn(self.l1(x))), 0.3))


def _optimizer(name, model):
    if name == "sgd":
        return O.SGD(lr=0.1, weight_decay=1e-3).setup(model)
    if name == "sgd-momentum":
        return O.SGD(lr=0.05, momentum=0.9).setup(model)
    if name == "momentum-sgd-clip":
        opt = O.MomentumSGD(lr=0.05).setup(model)
        opt.add_hook(O.ClipGrad(0.5))  # reads the global norm in Python on every update
        return opt
    if name == "adagrad-weight-decay-hook":
        opt = O.AdaGrad(lr=0.05).setup(model)
        opt.add_hook(O.WeightDecay(1e-3))
        return opt
    if name == "adadelta":
        return O.AdaDelta(weight_decay=1e-4).setup(model)
    if name == "adam-groups":
        named = model.named_params()
        decay = [p for k, p in named.items() if k.endswith("W")]
        rest = [p for k, p in named.items() if not k.endswith("W")]
        groups = [{"params": decay, "weight_decay": 1e-2}, {"params": rest, "lr": 0.003}]
        return O.Adam(alpha=0.01).setup(groups)
    return O.AdamW(lr=0.01).setup(model)  # "adamw"


OPTIMIZERS = [
    "sgd",
    "sgd-momentum",
    "momentum-sgd-clip",
    "adagrad-weight-decay-hook",
    "adadelta",
    "adam-groups",
    "adamw",
]


def _train(to_np, make, batches, static, schedule=None):
    """Train from seed 0; the snapshot after every step and the step's counts."""
    zerograd.seed(0)
    model, opt, step = make()
    if static:
        step = static_graph(step)
    sched = schedule(opt) if schedule else None
    out = []
    for args in batches:
        loss = step(*args)
        out.append(_snapshot(to_np, loss, model, opt))
        if sched is not None:
            sched.step()  # between steps: the replayed update reads the new lr
    return out, getattr(step, "counts", None)


def _classifier_step(model, opt):
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss

    return step


def _labels(arr, n, seed):
    return arr(np.random.default_rng(seed).integers(0, 3, n), "int64")


@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_with_every_optimizer_replays_the_eager_bits(rand, arr, to_np, opt_name, dtype):
    def make():
        model = models.MLP((12, 12, 3))
        opt = _optimizer(opt_name, model)
        return model, opt, _classifier_step(model, opt)

    batches = [(rand(10, 5, dtype=dtype, seed=i), _labels(arr, 10, i)) for i in range(6)]
    schedule = (lambda o: StepLR(o, step_size=2, gamma=0.5)) if "sgd" in opt_name else None
    eager, _ = _train(to_np, make, batches, False, schedule)
    static, counts = _train(to_np, make, batches, True, schedule)
    assert static == eager
    assert counts == {"eager": 1, "traced": 2, "replayed": 3}


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_either_way_replays_the_eager_bits(rand, arr, to_np, set_to_none):
    """``zero_grad(set_to_none=False)`` zeros the held gradients in place, where no trace
    sees a write: a replay must zero them again, or its backward adds onto the last
    step's gradients (it did: the replayed losses left the eager ones at the 5th step)."""

    def make():
        model = models.MLP((8, 3))
        opt = O.SGD(lr=0.1).setup(model)

        def step(x, t):
            opt.zero_grad(set_to_none=set_to_none)
            loss = F.softmax_cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            return loss

        return model, opt, step

    batches = [(rand(6, 4, seed=i), _labels(arr, 6, i)) for i in range(6)]
    eager, _ = _train(to_np, make, batches, False)
    static, counts = _train(to_np, make, batches, True)
    assert static == eager
    assert counts == {"eager": 1, "traced": 2, "replayed": 3}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cnn_replays_the_eager_bits(rand, arr, to_np, dtype):
    def make():
        model = CNN()
        opt = O.SGD(lr=0.1).setup(model)
        return model, opt, _classifier_step(model, opt)

    batches = [(rand(4, 1, 8, 8, dtype=dtype, seed=i), _labels(arr, 4, i)) for i in range(5)]
    eager, _ = _train(to_np, make, batches, False, lambda o: CosineAnnealingLR(o, T_max=4))
    static, counts = _train(to_np, make, batches, True, lambda o: CosineAnnealingLR(o, T_max=4))
    assert static == eager
    assert counts["replayed"] == 2


def test_dropout_draws_a_fresh_mask_per_replay_and_batch_norm_statistics_move(rand, arr, to_np):
    def make():
        model = DropMLP()
        opt = O.Adam().setup(model)
        return model, opt, _classifier_step(model, opt)

    batches = [(rand(8, 5, seed=i % 2), _labels(arr, 8, i % 2)) for i in range(7)]
    eager, _ = _train(to_np, make, batches, False)
    static, counts = _train(to_np, make, batches, True)
    assert static == eager
    assert counts["replayed"] == 4
    # the same batch twice gives different losses: a replay draws a new mask each time
    assert eager[3][0] != eager[5][0]
    # the running statistics are part of each snapshot, and they moved at every step
    means = [dict(snap[1:9])["bn.avg_mean"] for snap in static]
    assert len(set(means)) == len(means)


def test_a_forward_in_test_mode_reads_the_running_statistics_of_its_time(rand, to_np):
    zerograd.seed(0)
    model = DropMLP()
    opt = O.SGD(lr=0.1).setup(model)
    train = static_graph(_classifier_step(model, opt))

    @static_graph
    def predict(x):
        return model(x)

    x = rand(8, 5, seed=1)
    t = as_array_of(np.arange(8) % 3, zerograd.backends.backend_of(x))
    with test_mode(), zerograd.no_grad():
        for _ in range(4):
            predict(x)
    for _ in range(5):
        train(x, t)  # the running statistics move
    with test_mode(), zerograd.no_grad():
        replayed = predict(x)
        model.l1.W.data = model.l1.W.data  # nothing changed: still a replay
        eager = model(x)
    assert predict.counts["replayed"] == 2
    assert _bits(to_np, replayed) == _bits(to_np, eager)


class SineLSTM(Model):
    """lstm_sine's BetterRNN."""

    def __init__(self):
        super().__init__()
        self.rnn, self.fc = L.LSTM(8), L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


class CharLSTM(Model):
    """char_rnn's model: EmbedID, LSTM, Linear."""

    def __init__(self, vocab):
        super().__init__()
        self.embed, self.rnn, self.fc = L.EmbedID(vocab, 6), L.LSTM(8), L.Linear(vocab)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, ids):
        return self.fc(self.rnn(self.embed(ids)))


def _train_windows(to_np, make, epochs, static):
    """Train over windows of 4 steps and a last one of 2; reset_state each epoch."""
    zerograd.seed(0)
    model, opt, step, data = make()
    if static:
        step = static_graph(step)
    out = []
    for _ in range(epochs):
        model.reset_state()
        for xs, ts in data:
            loss = step(xs, ts)
            snap = _snapshot(to_np, loss, model, opt)
            snap.append(_bits(to_np, model.rnn.h))  # the state the next window starts from
            out.append(snap)
    return out, getattr(step, "counts", None)


def test_a_returned_state_is_the_variable_the_layer_holds(rand, to_np):
    zerograd.seed(0)
    eager = L.RNN(3)
    eager(rand(2, 4, seed=0))
    eager(rand(2, 4, seed=0))  # h2h's weights exist too: the twin copies them
    eager.reset_state()
    twin = copy.deepcopy(eager)
    static = static_graph(lambda x: twin(x))
    with zerograd.no_grad():
        for i in range(5):
            x = rand(2, 4, seed=i)
            he, hs = eager(x), static(x)
            assert he is eager.h and hs is twin.h  # the state itself, not a copy
            assert _bits(to_np, he) == _bits(to_np, hs)
    assert static.counts["replayed"] == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_windows_carry_their_state_across_replays(backend, rand, to_np, dtype):
    def make():
        model = SineLSTM().to(backend)
        opt = O.Adam().setup(model)
        xs = [rand(3, 1, dtype=dtype, seed=i) for i in range(10)]
        data = [(xs[0:4], xs[1:5]), (xs[4:8], xs[5:9]), (xs[8:9], xs[9:10])]
        return model, opt, load("_bptt").window_step(model, opt, F.mean_squared_error), data

    eager, _ = _train_windows(to_np, make, 5, False)
    static, counts = _train_windows(to_np, make, 5, True)
    assert static == eager
    assert counts["replayed"] > 0
    assert counts["replayed"] + counts["traced"] + counts["eager"] == 15


def test_char_lstm_windows_replay_the_eager_bits(backend, arr, to_np):
    vocab = 7

    def make():
        model = CharLSTM(vocab).to(backend)
        opt = O.Adam(alpha=0.005).setup(model)
        ids = np.random.default_rng(3).integers(0, vocab, (12, 2))
        xs = [arr(i, "int64") for i in ids]
        data = [(xs[0:5], xs[1:6]), (xs[5:10], xs[6:11])]
        return model, opt, load("_bptt").window_step(model, opt, F.softmax_cross_entropy), data

    eager, _ = _train_windows(to_np, make, 4, False)
    static, counts = _train_windows(to_np, make, 4, True)
    assert static == eager
    assert counts["replayed"] >= 3


@pytest.mark.parametrize(
    "x_shape, b_shape", [((4, 3), (5,)), ((4, 3), None), ((2, 4, 3), (1, 5))], ids=str
)
def test_linears_kernel_is_its_forward_and_replays_call_no_linear_forward(
    backend, rand, to_np, monkeypatch, x_shape, b_shape
):
    x, W = rand(*x_shape, seed=1), rand(3, 5, seed=2)
    args = (x, W) if b_shape is None else (x, W, rand(*b_shape, seed=3))
    fn = F.Linear()
    y = fn(*args)
    assert _bits(to_np, fn.kernel(*args)(*args)) == _bits(to_np, y)

    forward, calls = F.Linear.forward, []

    def counting(self, *xs):
        calls.append(len(xs))
        return forward(self, *xs)

    monkeypatch.setattr(F.Linear, "forward", counting)
    model = models.MLP((5, 2)).to(backend)

    @static_graph
    def step(x):
        model.cleargrads()
        loss = F.sum(model(x))
        loss.backward()
        return loss

    for k in range(5):
        step(rand(4, 3, seed=k))
        if k == 2:  # the eager call and two recordings ran both layers' forwards
            assert len(calls) == 6
    assert len(calls) == 6 and step.counts["replayed"] == 2


def _scheduler_inside(model, opt):
    sched, inner = StepLR(opt, step_size=1, gamma=0.5), _classifier_step(model, opt)

    def step(x, t):
        loss = inner(x, t)
        sched.step()  # Python state a replay would not change
        return loss

    return step


def _gradients_by_hand(model, opt):
    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        for p in model.params():
            p.grad.data *= 0.5  # by hand, in place: a replay would not do it
        opt.update()
        return loss

    return step


def _attribute_inside(model, opt):
    inner = _classifier_step(model, opt)

    def step(x, t):
        model.calls = getattr(model, "calls", 0) + 1  # Python state: not replayed
        return inner(x, t)

    return step


@pytest.mark.parametrize(
    "make_step, why",
    [
        (_scheduler_inside, r"assigns a parameter group's 'lr' \(.*or a scheduler's step\)"),
        (_gradients_by_hand, r"reads a Variable of shape \(5, 6\)'s values into Python"),
        (_attribute_inside, r"assigns MLP\.calls = <int>"),
    ],
    ids=["scheduler-inside", "gradients-by-hand", "attribute-inside"],
)
def test_python_work_a_replay_would_skip_keeps_the_step_eager(rand, arr, to_np, make_step, why):
    def make():
        model = models.MLP((6, 3))
        opt = O.SGD(lr=0.1).setup(model)
        return model, opt, make_step(model, opt)

    batches = [(rand(4, 5, seed=i), _labels(arr, 4, i)) for i in range(6)]
    eager, _ = _train(to_np, make, batches, False)
    with pytest.warns(StaticGraphWarning, match=why):
        static, counts = _train(to_np, make, batches, True)
    assert static == eager
    assert counts["replayed"] == 0


def test_a_replayed_step_peaks_no_higher_than_the_eager_step(backend, rand, arr):
    """tracemalloc sees numpy's allocations: the peak of one step over what was held before it.

    (What a replay holds between steps, its program and guards, is not the step's: now
    that the eager graph keeps no dropped activation either, the two steps' peaks differ
    by less than that.)
    """
    if backend.name != "numpy":
        pytest.skip(f"tracemalloc measures numpy's allocations, not {backend.name!r}'s")
    import tracemalloc

    x, t = rand(64, 100, dtype="float32", seed=1), _labels(arr, 64, 1)

    def peak(static):
        zerograd.seed(0)
        model = models.MLP((300, 300, 3))
        opt = O.SGD(lr=0.1).setup(model)
        step = _classifier_step(model, opt)
        step = static_graph(step) if static else step
        tracemalloc.start()
        try:
            for _ in range(5):
                step(x, t)  # nothing kept between steps: the eager graph goes with its loss
            tracemalloc.reset_peak()
            held = tracemalloc.get_traced_memory()[0]  # the replay's own program and guards
            loss = float(step(x, t).data)
            return tracemalloc.get_traced_memory()[1] - held, loss
        finally:
            tracemalloc.stop()

    eager, loss_e = peak(False)
    replay, loss_s = peak(True)
    assert loss_s == loss_e
    assert replay <= eager


class _ReLUReadingInputs(F.activation.ReLU):
    """ReLU as if its vjp read its input: a replay keeps the input for it."""

    vjp_reads_inputs = True


def _replayed_peak(relu_class):
    """tracemalloc's peak over one replayed step of a two-layer relu net (numpy)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 32))
    W1 = zerograd.Parameter(rng.standard_normal((32, 256)))
    W2 = zerograd.Parameter(rng.standard_normal((256, 256)))

    @static_graph
    def step(x):
        W1.cleargrad()
        W2.cleargrad()
        h = relu_class()(F.matmul(relu_class()(F.matmul(x, W1)), W2))
        loss = F.sum(h)
        loss.backward()
        return loss

    losses = [float(step(x).data) for _ in range(4)]  # eager, two recorded, one replay
    tracemalloc.start()
    try:
        losses.append(float(step(x).data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(set(losses)) == 1
    return peak, W1.grad.data.copy()


def test_a_replay_frees_what_only_a_forward_read():
    """ReLU's vjp reads its output, so a replay drops each pre-activation (1 MiB here) once
    its ReLU has run; the eager engine keeps it (the graph holds its Variables)."""
    frees, g_free = _replayed_peak(F.activation.ReLU)
    keeps, g_keep = _replayed_peak(_ReLUReadingInputs)
    activation = 512 * 256 * 8
    assert keeps - frees >= 0.9 * activation, (frees, keeps)
    np.testing.assert_array_equal(g_free, g_keep)


def test_a_replay_refuses_labels_out_of_range_with_nothing_changed(rand, arr, to_np):
    """The label check runs in the loss's forward, so a replay checks each batch (CuPy would
    wrap such labels silently); the refused replay leaves parameters and gradients as they
    were, though the step clears the gradients before its forward."""
    model = models.MLP((8, 4))
    opt = O.SGD(lr=0.1).setup(model)

    @static_graph
    def step(x, t):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        return loss

    x, t = rand(5, 3, seed=1), arr(np.array([0, 3, 1, 2, 0]), "int64")
    for _ in range(4):  # eager, two recordings, a replay
        step(x, t)
    assert len(step.sources()) == 1
    before = [(_bits(to_np, p), _bits(to_np, p.grad)) for p in model.params()]
    with pytest.raises(ValueError, match=r"class ids in 0\.\.3 .*got labels from 0 to 4"):
        step(x, arr(np.array([0, 4, 1, 2, 0]), "int64"))
    assert [(_bits(to_np, p), _bits(to_np, p.grad)) for p in model.params()] == before


def test_a_value_made_before_the_update_is_fused_with_no_forward_after_it(monkeypatch):
    """The update writes the parameters in place: a chain moved past it would read new
    values. Fusion is on (a step-by-step ``fuse`` for numpy), so a wrong join shows in bits."""
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((8, 4)), rng.standard_normal((8, 3))

    def train(static):
        zerograd.seed(0)
        model = models.MLP((6, 3), activation=F.tanh)
        opt = O.SGD(lr=0.5).setup(model)

        def step(x, t):
            model.cleargrads()
            loss = F.mean_squared_error(model(x), t)
            loss.backward()
            scaled = model.l0.W * 2.0  # read below by tanh only, after the update moved W
            opt.update()
            return loss, F.tanh(scaled)

        step = static_graph(step) if static else step
        out = [[a.data.tobytes() for a in step(x, t)] for _ in range(5)]
        return out, getattr(step, "counts", None)

    (eager, _), (static, counts) = train(False), train(True)
    assert static == eager
    assert counts["replayed"] == 2
    assert ["mul", "tanh"] not in [r.ops for r in fused]
    assert ["tanh"] not in [r.ops for r in fused]  # a lone op is no chain


@pytest.mark.parametrize(
    "activation, chains",
    [("relu", []), ("sigmoid", []), ("tanh", [["mul", "sub", "mul"]] * 2)],
)
def test_an_mlp_training_step_fuses_only_tanhs_vjp(monkeypatch, activation, chains):
    """Every activation is read by a vjp (the next layer's, or its own), so no forward
    joins another. relu's and sigmoid's vjps are one kernel each already; tanh's is
    elementwise core work (``gy * (1 - y * y)``), a chain of its own in each layer."""
    fused = fuse_step_by_step(monkeypatch, backend_of(np.zeros(1)))
    zerograd.seed(0)
    model = models.MLP((16, 16, 3), activation=getattr(F, activation))
    step = static_graph(_classifier_step(model, O.SGD(lr=0.1).setup(model)))
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((8, 5)), rng.integers(0, 3, 8)
    for _ in range(4):
        step(x, t)
    assert step.counts["replayed"] == 1
    assert [r.ops for r in fused] == chains


def test_weights_loaded_between_forward_and_backward_keep_the_step_eager(tmp_path):
    """load_weights gives W new arrays after the forward; the vjps then read arrays the
    call did not make or read. The vjp of tanh(W * x) runs as its operations in a replay,
    and those too must refuse the step, with the reason, rather than record a read."""
    path = str(tmp_path / "w.npz")

    def make():
        zerograd.seed(0)
        layer = L.Linear(3, in_size=3)
        layer.save_weights(path)

        def step(x):
            layer.cleargrads()
            y = F.sum(F.tanh(layer.W * x[0]))
            layer.load_weights(path)  # W's array replaced between forward and backward
            y.backward()
            return layer.W.grad

        return step

    eager, static = make(), static_graph(make())
    why = "the backward pass met an array made outside zerograd's functions"
    with pytest.warns(StaticGraphWarning, match=why):
        for i in range(4):
            x = np.random.default_rng(i).standard_normal((2, 3))
            assert static(x).data.tobytes() == eager(x).data.tobytes()
    assert static.counts["replayed"] == 0


def test_zero_grad_in_place_after_a_step_that_froze_a_parameter_replays_the_eager_bits(
    rand, arr, to_np
):
    """A step of another kind can leave a gradient None that ``zero_grad(set_to_none=False)``
    then keeps None; the replay of a step recorded with that gradient held must find it
    missing before the zeroing runs and record the call again (it raised a RuntimeError
    after the zeroing, mid-training)."""

    def make():
        model = models.MLP((8, 3))
        opt = O.Adam(lr=0.01).setup(model)

        def step(x, t, freeze):
            opt.zero_grad(set_to_none=False)
            loss = F.softmax_cross_entropy(model(x), t)
            loss.backward()
            if freeze:
                model.l1.b.cleargrad()  # frozen on this step: Adam skips it
            opt.step()
            return loss

        return model, opt, step

    batches = [(rand(6, 4, seed=i), _labels(arr, 6, i), i % 3 == 2) for i in range(12)]
    eager, _ = _train(to_np, make, batches, False)
    static, counts = _train(to_np, make, batches, True)
    assert static == eager
    assert counts["replayed"] >= 4
