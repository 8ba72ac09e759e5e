"""Arrays of two backends meeting in a model: refused before anything changes, or placed
where the user asked.

A pretend backend ("elsewhere", numpy arrays in a wrapper) stands for a second library in
every session; the cases that must compute on the second backend use a real one (the strict
array API backend, or numpy when that is the backend under test) where it is installed.
"""

import numpy as np
import pytest

import zerograd_nn.functional as F
from zerograd import Variable, backends
from zerograd.backends import Backend, BackendMismatchError, as_array_of, backend_of
from zerograd_nn import Model
from zerograd_nn import optimizers as O
from zerograd_nn.layers import BatchNorm, Linear
from zerograd_nn.models import MLP


class Elsewhere:
    """An array of the pretend backend: a numpy array in a wrapper."""

    def __init__(self, a):
        self.a = np.asarray(a)
        self.shape, self.dtype, self.ndim = self.a.shape, self.a.dtype, self.a.ndim


class ElsewhereBackend(Backend):
    name = "elsewhere"

    def owns(self, array_type):
        return issubclass(array_type, Elsewhere)

    def load_module(self):
        return np

    def to_numpy(self, x):
        return x.a

    def from_numpy(self, a):
        return Elsewhere(a)


@pytest.fixture
def elsewhere():
    """The pretend backend, registered for one test."""
    backends.register(ElsewhereBackend())
    try:
        yield
    finally:
        backends.refresh()


@pytest.fixture
def other(backend):
    """The name of a second installed, usable backend; skipped, reason printed, if none."""
    names = [b.name for b in backends.list_backends() if b.available and b.name != backend.name]
    names = [n for n in names if n in ("numpy", "arrayapi")] or names
    if not names:
        pytest.skip(
            f"only {backend.name!r} is installed: a second real backend is needed (the "
            f"strict_backend sessions install one: pip install -e examples/backend-arrayapi)"
        )
    return names[0]


def _snapshot(model, opt):
    params = [(p, p.data, np.array(as_array_of(p.data, "numpy"))) for p in model.params()]
    saved = opt.state_dict()
    state = {
        name: {k: np.array(as_array_of(v, "numpy")) for k, v in arrays.items()}
        for name, arrays in saved["state"].items()
    }
    return params, (state, saved["counters"])


@pytest.mark.parametrize("make", [O.SGD, O.MomentumSGD, O.Adam, O.AdaGrad])
@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "weight-decay-hook"])
def test_update_refuses_a_gradient_of_another_backend(make, hooked, elsewhere, arr):
    model = MLP((3, 2))
    x = arr(np.ones((4, 5)), "float32")
    opt = make().setup(model)
    if hooked:
        opt.add_hook(O.WeightDecay(1e-3))
    F.sum(model(x)).backward()
    opt.update()  # one good step: the optimizer has state
    model.cleargrads()
    F.sum(model(x)).backward()
    grads = [p.grad for p in model.params()]
    model.l0.b.grad = Variable(Elsewhere(np.ones(3, np.float32)))  # from another library
    params, state = _snapshot(model, opt)
    with pytest.raises(
        BackendMismatchError,
        match=rf"^{make.__name__}\.update\(\): parameter 1 \('l0\.b'\) of shape \(3,\) lives on "
        rf"backend '{backend_of(x).name}' but its gradient on 'elsewhere'; nothing was "
        rf"updated\. Compute the loss on the parameters' backend \(move the inputs: "
        rf"x\.to\('{backend_of(x).name}'\)\), or move the gradient \(param\.grad\.to\(",
    ):
        opt.update()
    after, after_state = _snapshot(model, opt)
    for (p, data, values), (q, data2, values2) in zip(params, after):
        assert q is p and data is data2 and type(p.data) is type(data)
        np.testing.assert_array_equal(values, values2)
    assert after_state[1] == state[1]  # step counters (Adam's t)
    assert after_state[0].keys() == state[0].keys()
    for k in state[0]:
        assert after_state[0][k].keys() == state[0][k].keys()
        for name in state[0][k]:
            np.testing.assert_array_equal(state[0][k][name], after_state[0][k][name])
    assert [p.grad for p in model.params()][0] is grads[0]
    assert type(model.l0.b.grad.data) is Elsewhere


class Net(Model):
    def __init__(self):
        super().__init__()
        self.l1 = Linear(4)
        self.bn = BatchNorm()
        self.l2 = Linear(2)

    def forward(self, x):
        return self.l2(F.relu(self.bn(self.l1(x))))


def test_to_before_sizing_is_remembered_and_refuses_an_input_elsewhere(elsewhere, arr):
    model = Net()
    assert model.target_backend is None and model.l1.b.data is not None
    assert model.to("elsewhere") is model
    assert [m.target_backend for m in (model, model.l1, model.bn, model.l2)] == ["elsewhere"] * 4
    assert type(model.l1.b.data) is Elsewhere  # made eagerly: moved now
    b = model.l1.b.data
    x = arr(np.ones((3, 5)), "float32")
    with pytest.raises(BackendMismatchError, match=r"^Linear: inputs live on different backends"):
        model(x)  # the weights are made on 'elsewhere', as asked: x is not there
    assert model.l1.W.data is None and model.l1.in_size is None  # the sizing was undone
    assert model.l1.b.data is b
    assert all(p.data is None for p in model.bn.params()) and model.l2.W.data is None


def test_to_before_sizing_makes_the_lazy_parameters_on_that_backend(backend, other, arr, to_np):
    here = backend.name
    x = arr(np.random.default_rng(0).normal(size=(3, 5)), "float32")
    model = Net().to(other)
    y = model(as_array_of(x, other))
    assert {backend_of(p.data).name for p in model.params()} == {other}
    assert backend_of(y).name == other and y.shape == (3, 2)
    back = Net().to(other).to(here)  # the last to() counts
    back(x)
    assert {backend_of(p.data).name for p in back.params()} == {here}
    with pytest.raises(BackendMismatchError):
        Net().to(other)(x)
    plain = Net()
    plain(x)  # no to(): the input's backend, as before
    assert {backend_of(p.data).name for p in plain.params()} == {here}
    assert plain.target_backend is None


def test_to_checks_the_backend_even_before_sizing():
    model = Net()
    with pytest.raises(backends.NoBackendError, match="no backend named 'nonesuch' is installed"):
        model.to("nonesuch")
    with pytest.raises(
        TypeError,
        match=r"^Net\.to\(backend\): backend must be a backend name \(str, e\.g\. 'numpy'\) or a "
        r"zerograd\.backends\.Backend, got int$",
    ):
        model.to(3)
    assert model.target_backend is None and model.l1.target_backend is None
    assert model.l1.W.data is None
