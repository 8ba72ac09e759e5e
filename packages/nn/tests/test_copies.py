"""Copies of models and optimizers the PyTorch way: ``copy.copy``, ``copy.deepcopy``, ``pickle``.

A deep copy or a pickle never shares memory with its original (updating one leaves the
other as it was), a copy of a model and its optimizer made together trains on bit for bit
as the original does, and a copy that cannot be right is refused with one error that says
what to do.
"""

import copy
import pickle

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
from zerograd import Parameter, Variable
from zerograd_nn import layers as L
from zerograd_nn import optimizers as O
from zerograd_nn.models import MLP, Model

COPIES = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda obj: pickle.loads(pickle.dumps(obj)),
}
each_copy = pytest.mark.parametrize("copier", list(COPIES.values()), ids=list(COPIES))
OPTIMIZERS = {
    "SGD": lambda: O.SGD(0.1),
    "SGD-momentum": lambda: O.SGD(0.1, momentum=0.9),
    "MomentumSGD": lambda: O.MomentumSGD(0.1),
    "AdaGrad": lambda: O.AdaGrad(0.1),
    "AdaDelta": lambda: O.AdaDelta(),
    "Adam": lambda: O.Adam(0.01),
    "AdamW": lambda: O.AdamW(0.01),
}
each_optimizer = pytest.mark.parametrize("make", list(OPTIMIZERS.values()), ids=list(OPTIMIZERS))


def batch(step):
    rng = np.random.default_rng(step)
    return rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)


def train(model, opt, steps):
    for s in steps:
        x, t = batch(s)
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()


def bits(model):
    return {k: p.data.tobytes() for k, p in model.named_params().items()}


def mlp():
    zerograd.seed(0)
    model = MLP((5, 3))
    model(np.zeros((1, 4), np.float32))
    return model


# -- copy.copy of a layer ---------------------------------------------------------------


class Two(Model):
    def __init__(self):
        super().__init__()
        self.a = L.Linear(3, in_size=4)
        self.b = L.Linear(2, in_size=3)

    def forward(self, x):
        return self.b(self.a(x))


def test_a_layer_added_to_a_shallow_copy_is_the_copys_only():
    # copy.copy(model) shared the list naming the members with the original: a layer
    # added to the copy was named by the original too, which then failed to walk
    # (KeyError: 'extra'); a layer deleted from the copy vanished from the original
    model = Two()
    twin = copy.copy(model)
    twin.extra = L.Linear(2, in_size=2)
    assert list(model.named_params()) == ["a.W", "a.b", "b.W", "b.b"]
    assert list(twin.named_params()) == ["a.W", "a.b", "b.W", "b.b", "extra.W", "extra.b"]
    del twin.a
    assert list(model.named_params()) == ["a.W", "a.b", "b.W", "b.b"]
    assert list(twin.named_params()) == ["b.W", "b.b", "extra.W", "extra.b"]
    assert model(np.ones((1, 4), np.float32)).shape == (1, 2)


def test_a_shallow_copy_of_a_layer_shares_its_members_as_python_copies_do():
    model = mlp()
    twin = copy.copy(model)
    assert twin.l0 is model.l0 and twin.l0.W is model.l0.W
    assert list(twin.params()) == list(model.params())


# -- copy.copy of an optimizer ----------------------------------------------------------


@each_optimizer
def test_a_shallow_copy_of_an_optimizer_is_refused_with_what_to_do(make):
    # copy.copy(opt) updated the same parameters with state that was the original's for
    # parameters over the packing limit (one momentum stepped by both) and its own for
    # the others, and shared the hyperparameters (twin.lr = ... changed opt.lr)
    model = mlp()
    opt = make().setup(model)
    train(model, opt, range(2))
    before = opt.state_dict()
    name = type(opt).__name__
    with pytest.raises(TypeError, match=r"copy\.copy\(" + name + r"\) is refused") as err:
        copy.copy(opt)
    for hint in ("copy.deepcopy((model, optimizer))", "load_state_dict(optimizer.state_dict())"):
        assert hint in str(err.value)
    after = opt.state_dict()
    assert after["counters"] == before["counters"] and after["groups"] == before["groups"]


# -- deep copies and pickles of a model with its optimizer ------------------------------


@each_copy
@each_optimizer
def test_a_copy_of_model_and_optimizer_trains_on_as_the_original(make, copier):
    model = mlp()
    opt = make().setup(model)
    train(model, opt, range(3))
    twin, twin_opt = copier((model, opt))
    for p, q in zip(model.params(), twin.params()):
        assert not np.shares_memory(p.data, q.data)
        assert not np.shares_memory(p.grad.data, q.grad.data)
    before = bits(model)
    train(twin, twin_opt, range(3, 8))
    assert bits(model) == before  # the copy's training leaves the original as it was
    train(model, opt, range(3, 8))
    assert bits(model) == bits(twin)


@each_copy
def test_a_copy_of_the_optimizer_alone_updates_copies_of_its_parameters(copier):
    # as PyTorch's deepcopy(optimizer): the copy holds copies of the parameters (of the
    # whole model when it was set up on one) and never changes the original's
    model = mlp()
    opt = O.Adam(0.01).setup(model)
    train(model, opt, range(2))
    twin_opt = copier(opt)
    twin = twin_opt.target
    assert twin is not model and type(twin) is type(model)
    before = bits(model)
    train(twin, twin_opt, range(2, 5))
    assert bits(model) == before
    train(model, opt, range(2, 5))
    assert bits(model) == bits(twin)
    x, t = batch(9)  # the model's gradients are not the copy's: its update leaves both
    model.cleargrads()
    twin.cleargrads()
    F.softmax_cross_entropy(model(x), t).backward()
    trained, copied = bits(model), bits(twin)
    twin_opt.update()
    assert bits(model) == trained and bits(twin) == copied


class TiedAutoencoder(Model):
    """The decoder's weight is the encoder's, transposed: two Parameters, one array."""

    def __init__(self):
        super().__init__()
        self.enc = L.Linear(3, in_size=4, nobias=True)
        self.dec = L.Linear(4, in_size=3)
        self.dec.W.data = self.enc.W.data.T  # a view: the optimizer keeps the two tied

    def forward(self, x):
        return self.dec(F.tanh(self.enc(x)))


def train_autoencoder(model, opt, steps):
    for s in steps:
        x, _ = batch(s)
        loss = F.mean_squared_error(model(x), x)
        model.cleargrads()
        loss.backward()
        opt.update()


@each_copy
def test_parameters_tied_through_a_view_stay_tied_in_a_copy(copier):
    # the copy held two separate arrays where the original holds one: its decoder and
    # encoder then trained apart, and the copy's training differed from the original's
    zerograd.seed(0)
    model = TiedAutoencoder()
    opt = O.Adam(0.01).setup(model)
    train_autoencoder(model, opt, range(2))
    twin, twin_opt = copier((model, opt))
    assert np.shares_memory(twin.enc.W.data, twin.dec.W.data)
    assert not np.shares_memory(twin.enc.W.data, model.enc.W.data)
    np.testing.assert_array_equal(twin.dec.W.data, model.dec.W.data)
    before = bits(model)
    train_autoencoder(twin, twin_opt, range(2, 7))
    assert bits(model) == before
    train_autoencoder(model, opt, range(2, 7))
    assert bits(model) == bits(twin)
    np.testing.assert_array_equal(twin.dec.W.data, twin.enc.W.data.T)


def test_a_shallow_copy_leaves_tied_parameters_their_arrays():
    zerograd.seed(0)
    model = TiedAutoencoder()
    enc, dec = model.enc.W.data, model.dec.W.data
    twin = copy.copy(model)
    assert twin.enc.W is model.enc.W
    assert model.enc.W.data is enc and model.dec.W.data is dec


@each_copy
def test_a_copy_of_tied_parameters_set_up_as_a_list_keeps_them_tied(copier):
    # no layer holds them: the optimizer's copy ties them again
    base = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    a, b = Parameter(base), Parameter(base[::-1].T)  # reversed rows, transposed
    opt = O.MomentumSGD(0.1).setup([a, b])
    a.grad, b.grad = Variable(np.ones((3, 4), np.float32)), Variable(np.ones((4, 3), np.float32))
    opt.update()
    (a2, b2), opt2 = copier(((a, b), opt))
    assert np.shares_memory(a2.data, b2.data) and not np.shares_memory(a2.data, a.data)
    np.testing.assert_array_equal(b2.data, a2.data[::-1].T)
    for p, q in ((a, a2), (b, b2)):
        p.grad = q.grad = Variable(np.full(p.data.shape, 0.5, np.float32))
    opt.update()
    opt2.update()
    assert a.data.tobytes() == a2.data.tobytes() and b.data.tobytes() == b2.data.tobytes()


class Pair(Model):
    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b


@each_copy
def test_a_read_only_view_stays_read_only_in_the_copy(copier):
    a = Parameter(np.arange(6.0).reshape(2, 3))
    b = Parameter(a.data[1])
    b.data.flags.writeable = False
    twin = copier(Pair(a, b))
    assert np.shares_memory(twin.a.data, twin.b.data)
    assert twin.a.data.flags.writeable and not twin.b.data.flags.writeable
    np.testing.assert_array_equal(twin.b.data, [3.0, 4.0, 5.0])
    twin.a.data[1, 0] = 7.0
    assert twin.b.data[0] == 7.0 and b.data[0] == 3.0


@each_copy
def test_parameters_packed_into_one_buffer_are_copied_apart(copier):
    # an optimizer's views of its flat buffer share an array, not memory: each copy has
    # an array of its own, as a parameter that was never packed has
    model = mlp()
    opt = O.Adam(0.01).setup(model)
    train(model, opt, range(2))
    assert len({id(p.data.base) for p in model.params()}) == 1  # packed
    twin = copier(model)
    for p in twin.params():
        assert p.data.base is None
