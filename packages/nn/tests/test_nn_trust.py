"""Bad inputs and silent wrong results found by an adversarial pass over layers, functions,
weight files and data loaders: each test pins one of them (values, messages, state after)."""

import re
import warnings

import numpy as np
import pytest

import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Variable, test_mode


# -- deconv2d: an output size below 1 ---------------------------------------------------------
@pytest.mark.parametrize(
    ("h", "w", "pad", "out"),
    [(2, 2, 3, (-2, -2)), (2, 2, 2, (0, 0)), (3, 1, (0, 2), (5, -1)), (2, 2, 1, (2, 2))],
    ids=["negative", "zero", "width-only", "fits"],
)
def test_deconv2d_refuses_a_default_output_of_no_pixels(h, w, pad, out):
    x, W = np.ones((1, 1, h, w)), np.ones((1, 2, 3, 3))  # out = (in - 1) + 3 - 2 * pad
    if min(out) >= 1:
        assert F.deconv2d(x, W, pad=pad).shape == (1, 2, *out)
        return
    want = f"deconv2d: an input of height/width {(h, w)} with kernel (3, 3), stride (1, 1) and "
    with pytest.raises(
        ValueError, match=re.escape(want) + r".*gives an output of " + re.escape(str(out))
    ):
        F.deconv2d(x, W, pad=pad)


def test_deconv2d_layer_refuses_an_output_of_no_pixels_and_stays_unsized():
    layer = L.Deconv2d(4, 3, pad=3)
    with pytest.raises(ValueError, match=r"deconv2d: .*less padding"):
        layer(np.ones((1, 1, 2, 2), np.float32))
    assert layer.W.data is None and layer.in_channels is None


# -- batch_norm: the running statistics keep their dtype ------------------------------------
def test_batch_norm_layer_keeps_its_statistics_dtype_after_a_float64_batch():
    bn = L.BatchNorm()
    x32 = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    x64 = np.random.default_rng(1).standard_normal((4, 3)) * 2 + 1
    bn(x32)
    mean, var = bn.avg_mean.data.copy(), bn.avg_var.data.copy()
    y = bn(x64)
    assert y.dtype == np.float64  # the output follows numpy's promotion, as for arrays
    assert bn.avg_mean.dtype == bn.avg_var.dtype == np.float32  # the statistics do not
    np.testing.assert_allclose(bn.avg_mean.data, 0.9 * mean + 0.1 * x64.mean(0), rtol=1e-6)
    unbiased = x64.var(0) * 4 / 3
    np.testing.assert_allclose(bn.avg_var.data, 0.9 * var + 0.1 * unbiased, rtol=1e-6)
    with test_mode():
        assert bn(x32).dtype == np.float32  # the statistics did not widen later outputs


def test_batch_norm_statistics_in_variables_keep_their_dtype_as_arrays_do():
    x = np.random.default_rng(2).standard_normal((5, 2))
    as_arrays = np.zeros(2, np.float32), np.ones(2, np.float32)
    as_variables = Variable(np.zeros(2, np.float32)), Variable(np.ones(2, np.float32))
    g, b = np.ones(2), np.zeros(2)
    F.batch_norm(x, g, b, *as_arrays)  # numpy arrays are updated in place: cast on store
    F.batch_norm(x, g, b, *as_variables)
    for a, v in zip(as_arrays, as_variables):
        assert v.dtype == a.dtype == np.float32
        np.testing.assert_array_equal(v.data, a)


# -- batch_norm: (N, C, L) and (N, C, D, H, W), as the layer's docstring says ------------------
@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 3, 2, 2, 3)], ids=["NCL", "NCDHW"])
def test_batch_norm_takes_any_layout_with_channels_on_axis_1(shape):
    from zerograd.testing import check_backward

    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 2 + 1
    g, b = rng.standard_normal(3), rng.standard_normal(3)
    axes = (0, *range(2, len(shape)))
    s = (1, 3) + (1,) * (len(shape) - 2)
    bn = L.BatchNorm(initial_gamma=g, initial_beta=b)
    y = bn(x)
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 2e-5)
    np.testing.assert_allclose(y.data, ref * g.reshape(s) + b.reshape(s), rtol=1e-10)
    m = x.size // 3
    np.testing.assert_allclose(bn.avg_mean.data, 0.1 * x.mean(axes), rtol=1e-10)
    np.testing.assert_allclose(bn.avg_var.data, 0.9 + 0.1 * x.var(axes) * m / (m - 1), rtol=1e-10)
    with test_mode():
        y = bn(x)
    want = (x - bn.avg_mean.data.reshape(s)) / np.sqrt(bn.avg_var.data.reshape(s) + 2e-5)
    np.testing.assert_allclose(y.data, want * g.reshape(s) + b.reshape(s), rtol=1e-10)

    def f(x, gamma, beta):
        return F.batch_norm(x, gamma, beta, np.zeros(3), np.ones(3))

    check_backward(f, x, g, b, order=2)


# -- DataLoader: batch_size and drop_last set after construction ------------------------------
def _ten():
    from zerograd_nn.datasets import TensorDataset

    return TensorDataset(np.arange(20.0).reshape(10, 2), np.arange(10))


def test_loader_batch_size_set_between_epochs_is_followed():
    from zerograd_nn import DataLoader

    loader = DataLoader(_ten(), 3, shuffle=False)
    loader.batch_size = 4  # DeZero's loader and ours kept the old batch count: empty batches
    assert len(loader) == 3
    assert [t.tolist() for _, t in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    loader.drop_last = True
    assert len(loader) == 2
    assert [t.tolist() for _, t in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_loader_refuses_a_batch_size_change_mid_epoch_and_a_bad_one_and_keeps_its_own():
    from zerograd_nn import DataLoader, SeqDataLoader

    loader = DataLoader(_ten(), 3, shuffle=False)
    with pytest.raises(ValueError, match=r"DataLoader: batch_size must be a positive int"):
        loader.batch_size = 0
    with pytest.raises(TypeError, match=r"DataLoader: drop_last must be True or False"):
        loader.drop_last = 1
    next(loader)
    with pytest.raises(ValueError, match=r"in the middle of an epoch \(batch 1 of 4\).*reset\(\)"):
        loader.batch_size = 5
    drop = DataLoader(_ten(), 3, shuffle=False)
    with pytest.raises(ValueError, match=r"drop_last=True with batch_size 11 .* leaves no batch"):
        drop.drop_last, drop.batch_size = True, 11
    assert (drop.batch_size, drop.drop_last, len(drop)) == (3, True, 3)
    assert (loader.batch_size, loader.drop_last, len(loader)) == (3, False, 4)
    assert [t.tolist() for _, t in loader] == [[3, 4, 5], [6, 7, 8], [9]]  # went on unchanged
    loader.reset()
    loader.batch_size = 5
    assert [t.tolist() for _, t in loader] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    seq = SeqDataLoader(_ten(), 2)
    with pytest.raises(ValueError, match=r"SeqDataLoader: batch_size 11 is larger"):
        seq.batch_size = 11
    assert seq.batch_size == 2 and len(seq) == 5


# -- RNN: every weight made at construction once in_size is given -----------------------------
def test_rnn_with_in_size_has_every_weight_before_its_second_step(tmp_path):
    rnn = L.RNN(4, in_size=3)
    assert rnn.h2h.W.shape == (4, 4) and rnn.count_params() == 3 * 4 + 4 + 4 * 4
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    h = rnn(x)
    rnn.save_weights(tmp_path / "rnn.npz")  # after one step: "run one forward pass" before
    twin = L.RNN(4, in_size=3)
    twin.load_weights(tmp_path / "rnn.npz")
    np.testing.assert_array_equal(twin(x).data, h.data)
    h2 = rnn(x)
    want = np.tanh(x @ rnn.x2h.W.data + rnn.x2h.b.data + h.data @ rnn.h2h.W.data)
    np.testing.assert_allclose(h2.data, want, rtol=1e-6)


# -- linear: one example without a batch axis -------------------------------------------------
def test_linear_names_a_missing_batch_axis_and_the_layer_stays_unsized():
    want = r"linear: x of shape \(4,\) has no batch axis.*x\.reshape\(1, -1\)"
    with pytest.raises(ValueError, match=want):
        F.linear(np.ones(4), np.ones((4, 3)))
    layer = L.Linear(3)
    with pytest.raises(ValueError, match=want):
        layer(np.ones(4, np.float32))
    assert layer.W.data is None and layer.in_size is None
    with pytest.raises(ValueError, match=r"W of shape \(4, 3\) do not fit"):  # a real misfit
        F.linear(np.ones((2, 5)), np.ones((4, 3)))


@pytest.mark.parametrize("x", [np.ones(4), [1.0, 2.0, 3.0, 4.0]], ids=["array", "list"])
def test_linear_simple_refuses_one_example_without_a_batch_axis_as_linear_does(x):
    W, b = Variable(np.ones((4, 3))), Variable(np.zeros(3))
    want = r"^linear_simple: x of shape \(4,\) has no batch axis.*x\.reshape\(1, -1\)"
    with pytest.raises(ValueError, match=want):  # it gave a (3,) result where linear refuses
        F.linear_simple(x, W, b)
    with pytest.raises(ValueError, match=want.replace("linear_simple", "linear")):
        F.linear(x, W, b)
    assert W.grad is None and b.grad is None
    x3 = np.arange(24.0).reshape(2, 3, 4)  # (N, ..., I) is taken by both, the book's (N, I) too
    for batch in (x3, x3[0]):
        np.testing.assert_allclose(F.linear_simple(batch, W, b).data, batch @ W.data + b.data)
        np.testing.assert_array_equal(F.linear_simple(batch, W, b).data, F.linear(batch, W, b).data)


# -- DataLoader: a batch where some items have labels and some None ---------------------------
def test_loader_refuses_a_batch_mixing_labelled_and_unlabelled_items():
    from zerograd_nn import DataLoader

    data = [(np.ones(2), 1), (np.zeros(2), None), (np.ones(2), 0)]
    loader = DataLoader(data, 3, shuffle=False)
    want = r"dataset\[1\] has no label \(t is None\) but dataset\[0\]"
    with pytest.raises(ValueError, match=want):
        next(loader)  # it stacked them into an object array, array([1, None, 0])
    assert loader.iteration == 0
    x, t = next(DataLoader(data[:1], 1))
    assert t.tolist() == [1]
    x, t = next(DataLoader([(np.ones(2), None)], 1))
    assert t is None


# -- lazily sized layers given their weights by a file or a state dict ------------------------
def test_layers_sized_by_loaded_weights_report_their_input_size(tmp_path):
    from zerograd_nn.models import Sequential

    def model():
        return Sequential(L.Conv2d(4, 3), L.Deconv2d(2, 3), L.RNN(3), L.Linear(2))

    trained = model()
    y = trained.l1(trained.l0(np.ones((1, 2, 5, 5), np.float32)))
    trained.l2(np.ones((2, 5), np.float32))
    trained.l2(np.ones((2, 5), np.float32))  # sizes h2h
    trained.l3(np.ones((2, 6), np.float32))
    trained.save_weights(tmp_path / "m.npz")
    for load in (
        lambda m: m.load_weights(tmp_path / "m.npz"),
        lambda m: m.load_state_dict(trained.state_dict()),
    ):
        m = model()
        load(m)
        assert (m.l0.in_channels, m.l1.in_channels) == (2, 4)
        assert (m.l2.x2h.in_size, m.l2.h2h.in_size, m.l3.in_size) == (5, 3, 6)
        assert "Conv2d(in=2, out=4" in repr(m) and "Linear(in=5, out=3)" in repr(m)
        np.testing.assert_array_equal(m.l1(m.l0(np.ones((1, 2, 5, 5), np.float32))).data, y.data)
        with pytest.raises(ValueError, match=r"RNN\(hidden_size=3, in_size=5\) got an input of 7"):
            m.l2(np.ones((2, 7), np.float32))  # the cell's own check, not linear's shape error
    layer = L.Linear(3, in_size=4)
    layer.W.data = np.zeros((6, 3), np.float32)  # a user's own weights of another width
    assert layer.in_size == 6 and layer(np.ones((1, 6), np.float32)).shape == (1, 3)


# -- Layer: layers held in a dict are not members: said, not silently skipped ----------------
def test_layers_in_a_dict_attribute_are_named_in_a_warning():
    from zerograd_nn import Layer

    class Heads(Layer):
        def __init__(self):
            super().__init__()
            self.body = L.Linear(3, in_size=2)
            self.heads = {"a": L.Linear(1, in_size=3)}  # PyTorch's ModuleDict habit
            self.heads["b"] = L.Linear(1, in_size=3)
            self.config = {"lr": 0.1}  # a dict of settings: no warning

    model = Heads()
    want = r"Heads\.heads is a dict holding layers or Parameters \(at \('a', 'b'\)\).*list"
    with pytest.warns(UserWarning, match=want):
        names = list(model.named_params())
    assert names == ["body.W", "body.b"]  # still what it was: the warning says so

    class Nested(Layer):
        def __init__(self):
            super().__init__()
            self.blocks = [[L.Linear(2, in_size=2)], L.Linear(2, in_size=2)]

    want = r"Nested\.blocks is a list whose items hold layers .* \(at \(0,\)\)"
    with pytest.warns(UserWarning, match=want):
        assert list(Nested().named_params()) == ["blocks.1.W", "blocks.1.b"]

    class Plain(Layer):
        def __init__(self):
            super().__init__()
            self.body = L.Linear(3, in_size=2)
            self.config = {"lr": 0.1, "sizes": [1, 2]}
            self.blocks = [L.Linear(2, in_size=2), (1, 2)]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(Plain().params())) == 4


# -- batch_norm: one value per channel in train mode ------------------------------------------
def test_batch_norm_warns_of_one_value_per_channel_in_train_mode_and_computes_dezeros_result():
    bn = L.BatchNorm()
    bn(np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32))
    mean, var = bn.avg_mean.data.copy(), bn.avg_var.data.copy()
    want = r"batch_norm: x of shape \(1, 3\) holds one value per channel.*drop_last=True"
    with pytest.warns(UserWarning, match=want):
        y = bn(np.ones((1, 3), np.float32))  # DeZero's result (the book's GAN relies on it)
    np.testing.assert_array_equal(y.data, bn.beta.data[None])
    np.testing.assert_allclose(bn.avg_mean.data, 0.9 * mean + 0.1, rtol=1e-6)
    np.testing.assert_allclose(bn.avg_var.data, 0.9 * var, rtol=1e-6)  # no 1 / (m - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bn(np.ones((1, 3, 2, 1), np.float32)).shape == (1, 3, 2, 1)  # two values: fine
        with test_mode():
            assert bn(np.ones((1, 3), np.float32)).shape == (1, 3)


# -- Sequential / MLP: a layer replaced by its attribute -------------------------------------
def test_replacing_a_layer_of_sequential_or_mlp_replaces_it_in_the_forward_pass(tmp_path):
    from zerograd_nn.models import MLP, Sequential
    from zerograd_nn.optimizers import SGD

    x = np.ones((2, 4), np.float32)
    for model in (MLP((3, 1)), Sequential(L.Linear(3), F.sigmoid, L.Linear(1))):
        model(x)
        last = "l1" if isinstance(model, MLP) else "l2"
        head = L.Linear(5, in_size=3)
        setattr(model, last, head)  # fine-tuning: a new head (it kept using the old one)
        assert model(x).shape == (2, 5)
        assert list(model.named_params()) == ["l0.W", "l0.b", f"{last}.W", f"{last}.b"]
        opt = SGD(0.1).setup(model)
        w = head.W.data.copy()
        model.cleargrads()
        (model(x) ** 2).sum().backward()
        opt.update()
        assert not np.array_equal(w, head.W.data)
        model.save_weights(tmp_path / "m.npz")
    seq = Sequential(L.Linear(3, in_size=4), F.relu)
    seq.l1 = F.tanh  # a function in place of a function
    np.testing.assert_allclose(seq(x).data, np.tanh(seq.l0(x).data))


# -- Sequential / MLP: deleting a layer, adding one, and what cannot be kept in step ---------
def _chain_state(model):
    return (
        list(model.layers),
        {k: v for k, v in vars(model).items() if re.fullmatch(r"l\d+", k)},
        list(model.named_params()),
    )


def test_deleting_a_layer_of_sequential_removes_it_and_renumbers_the_rest(tmp_path):
    from zerograd_nn.models import Sequential

    x = np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32)
    a, c, d = L.Linear(3), L.Linear(5), L.Linear(2)
    seq = Sequential(a, F.relu, c, d)
    seq(x)
    del seq.l1  # forward kept running F.relu from seq.layers
    assert seq.layers == [a, c, d] and (seq.l0, seq.l1, seq.l2) == (a, c, d)
    assert not hasattr(seq, "l3")  # as PyTorch's del seq[1]: the names stay 0..n-1
    np.testing.assert_allclose(seq(x).data, d(c(a(x))).data, rtol=1e-6)
    names = ["l0.W", "l0.b", "l1.W", "l1.b", "l2.W", "l2.b"]
    assert list(seq.named_params()) == names and list(seq.state_dict()) == names
    assert "layers" not in repr(seq) and repr(seq).count("Linear") == 3
    seq.save_weights(tmp_path / "m.npz")
    twin = Sequential(L.Linear(3), L.Linear(5), L.Linear(2))
    twin.load_weights(tmp_path / "m.npz")
    np.testing.assert_array_equal(twin(x).data, seq(x).data)
    del seq.l0  # a layer with parameters: they were left in params() as "layers.0"
    assert seq.layers == [c, d] and (seq.l0, seq.l1) == (c, d) and not hasattr(seq, "l2")
    assert list(seq.named_params()) == names[:4]
    assert [p for p in seq.params()] == [c.W, c.b, d.W, d.b]


def test_deleting_a_layer_of_an_mlp_and_its_last_one():
    from zerograd_nn.models import MLP

    x = np.ones((2, 4), np.float32)
    mlp = MLP((3, 4, 2))
    a, b, _ = mlp.layers
    del mlp.l2  # the head: b is the last layer now, with no activation after it
    assert mlp.layers == [a, b] and not hasattr(mlp, "l2")
    np.testing.assert_allclose(mlp(x).data, b(F.sigmoid(a(x))).data, rtol=1e-6)
    one = MLP((3,))
    before = _chain_state(one)
    with pytest.raises(ValueError, match=r"^MLP: l0 is its only layer"):
        del one.l0  # forward failed later with an IndexError
    assert _chain_state(one) == before and one(x).shape == (2, 3)


def test_assigning_the_next_layer_of_sequential_or_mlp_appends_it():
    from zerograd_nn.models import MLP, Sequential

    x = np.ones((2, 4), np.float32)
    seq = Sequential(L.Linear(3), F.relu)
    head = L.Linear(2)
    seq.l2 = head  # it was a member (in params()) that forward never ran
    assert seq.layers[2] is head and seq(x).shape == (2, 2)
    np.testing.assert_allclose(seq(x).data, head(F.relu(seq.l0(x))).data, rtol=1e-6)
    assert list(seq.named_params()) == ["l0.W", "l0.b", "l2.W", "l2.b"]
    mlp = MLP((3, 4))
    mlp.l2 = L.Linear(2)  # one more layer: the activation now comes after l1 too
    want = mlp.l2(F.sigmoid(mlp.l1(F.sigmoid(mlp.l0(x)))))
    np.testing.assert_allclose(mlp(x).data, want.data, rtol=1e-6)


def test_sequential_refuses_a_gap_or_a_non_callable_layer_changing_nothing():
    from zerograd_nn.models import Sequential

    seq = Sequential(L.Linear(3), F.relu)
    seq(np.ones((2, 4), np.float32))
    before = _chain_state(seq)
    want = r"^Sequential: l3 would leave a gap: it has 2 layers, l0 to l1 \(model\.layers\);"
    with pytest.raises(ValueError, match=want + r".*l2 to add one at the end"):
        seq.l3 = L.Linear(2)  # a member in params() that forward never ran
    with pytest.raises(TypeError, match=r"^Sequential: l1 must be a Layer or a callable"):
        seq.l1 = None  # forward failed later, calling None
    with pytest.raises(TypeError, match=r"^Sequential: l2 must be a Layer or a callable"):
        seq.l2 = "relu"
    with pytest.raises(AttributeError):
        del seq.l5
    assert _chain_state(seq) == before
    seq.l01 = seq.extra = L.Linear(1)  # other names are plain attributes, as before
    assert len(seq.layers) == 2


def test_a_static_graph_step_follows_layers_of_sequential_replaced_added_or_removed():
    import zerograd
    from zerograd_nn.models import Sequential

    seq = Sequential(L.Linear(3, in_size=4), F.relu, L.Linear(2, in_size=3))
    x = np.random.default_rng(7).standard_normal((5, 4)).astype(np.float32)

    @zerograd.static_graph
    def step(x):
        loss = F.sum(seq(x) ** 2)
        seq.cleargrads()
        loss.backward()
        return loss

    for _ in range(3):
        step(x)
    changes = {
        "replace a function": lambda: setattr(seq, "l1", F.tanh),  # replayed F.relu before
        "add a function": lambda: setattr(seq, "l3", F.sigmoid),
        "remove a function": lambda: delattr(seq, "l1"),
        "add a layer": lambda: setattr(seq, "l3", L.Linear(1, in_size=2)),
    }
    for what, change in changes.items():
        change()
        want = F.sum(seq(x) ** 2).data  # eager
        replayed = step.counts["replayed"]
        for _ in range(5):  # recorded again, then replayed
            np.testing.assert_array_equal(step(x).data, want, err_msg=what)
        assert step.counts["replayed"] > replayed, what


# -- Layer: a sub-layer holding a reference to a layer above it -------------------------------
def test_a_layer_tree_with_a_reference_back_up_is_walked_once(tmp_path):
    from zerograd_nn.models import MLP

    model, plain = MLP((3, 2)), MLP((3, 2))
    for m in (model, plain):
        m(np.ones((1, 4), np.float32))
    model.me = model  # a parent reference: RecursionError in named_params, repr, weights
    model.l1.owner = model
    names = list(plain.named_params())
    assert list(model.named_params()) == names and len(list(model.params())) == 4
    assert repr(model) == repr(plain) and model.count_params() == plain.count_params()
    assert list(model.state_dict()) == names
    model.save_weights(tmp_path / "m.npz")
    plain.load_weights(tmp_path / "m.npz")
    model.eval()
    assert not model.training and not model.l1.training
    assert model.summary(np.ones((1, 4), np.float32), verbose=False).total_params == 23


# -- BatchNorm: PyTorch's constructor habits ---------------------------------------------------
@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        ((3,), {}, r"^BatchNorm: takes no size, got \(3,\).*nn\.BatchNorm2d\(3\) is BatchNorm\(\)"),
        ((), {"num_features": 3}, r"^BatchNorm: num_features= is PyTorch's .*BatchNorm\(\)"),
        ((), {"momentum": 0.1}, r"^BatchNorm: momentum= .*decay=0\.9"),
        ((), {"eps": 1e-5}, r"^BatchNorm: eps= .*F\.batch_norm"),
        ((), {"affine": False}, r"^BatchNorm: affine= .*FreezeParam"),
    ],
)
def test_batch_norm_names_zerograds_spelling_of_pytorchs_arguments(args, kwargs, text):
    with pytest.raises(TypeError, match=text):  # it was Python's "takes 1 positional argument"
        L.BatchNorm(*args, **kwargs)


# -- accuracy: scores of one column (a binary classifier's single output) --------------------
@pytest.mark.parametrize(
    ("y", "t"),
    [
        (np.array([[0.3], [-1.0], [2.0]]), np.array([0, 0, 0])),  # it said 1.0, every time
        (np.array([[0.3], [-1.0], [2.0]]), np.array([1, 0, 1])),  # it said "number of classes"
        (np.array([[0.9], [0.2]], np.float32), np.array([[1], [0]])),  # a sigmoid's, (N, 1)
        (np.ones((2, 1, 3, 3)), np.zeros((2, 3, 3), np.int64)),  # one channel of an image
    ],
    ids=["labels-all-0", "labels-0-and-1", "column-labels", "image"],
)
def test_accuracy_refuses_scores_of_one_column_saying_what_to_compare(y, t):
    want = (
        rf"^accuracy: scores y of shape {re.escape(str(y.shape))} have one column \(one class\):"
        r" the arg-max over axis 1 is always class 0\..*threshold.*\(\(y\.data > 0\)\.reshape\(t\."
        r"shape\) == t\)\.mean\(\).*two columns"
    )
    with pytest.raises(ValueError, match=want):
        F.accuracy(y, t)
    two = np.concatenate([-y, y], axis=1)  # the same classifier as two scores: fine
    hits = (y > 0).reshape(t.shape) == t
    assert float(F.accuracy(two, t).data) == pytest.approx(hits.mean())


# -- a float32 layer fed float64 data: gradients promoted, parameters kept --------------------
def test_a_float32_layer_fed_float64_gets_float64_gradients_and_keeps_float32_weights():
    from zerograd_nn.optimizers import SGD, Adam

    x = np.random.default_rng(11).standard_normal((5, 3))  # float64, numpy's default
    for opt in (SGD(0.1), Adam(0.01)):
        layer = L.Linear(2, in_size=3)
        opt.setup(layer)
        w = layer.W.data.copy()
        y = layer(x)
        assert layer.W.dtype == np.float32 and y.dtype == np.float64  # numpy's promotion
        F.sum(y * y).backward()
        gy = 2 * (x @ w.astype(np.float64) + layer.b.data)
        assert layer.W.grad.dtype == layer.b.grad.dtype == np.float64
        np.testing.assert_allclose(layer.W.grad.data, x.T @ gy, rtol=1e-12)
        g = layer.W.grad.data
        opt.update()
        assert layer.W.dtype == layer.b.dtype == np.float32  # the update is cast to it
        if isinstance(opt, SGD):
            want = (w - 0.1 * g).astype(np.float32)  # to float32's precision
            np.testing.assert_allclose(layer.W.data, want, rtol=1e-6, atol=1e-7)
