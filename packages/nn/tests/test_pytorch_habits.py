"""PyTorch habits (issue 42): each one works, or raises one error naming zerograd's spelling.

Supported where no DeZero name conflicts: ``F.softmax(x, dim=1)``, ``named_parameters()``,
``parameters()``, ``model.to("cpu")`` / ``to("cuda")``, ``L.Dropout`` in a Sequential,
``TensorDataset``. Refused with the spelling: ``L.ReLU`` and the other activation layers
(activations are functions, which Sequential takes). ``argmax`` and ``retain_graph`` are
core's (packages/core/tests/test_habits.py).
"""

import functools
import re

import numpy as np
import pytest

import zerograd
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd import Variable, test_mode
from zerograd.backends import NoBackendError, backend_of, get_backend, gpu_backend
from zerograd_nn import DataLoader, optimizers
from zerograd_nn.datasets import TensorDataset
from zerograd_nn.layers.pytorch_names import MISSING_LAYERS
from zerograd_nn.models import MLP, Sequential


# -- F.softmax(x, dim=1) ------------------------------------------------------------------
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_dim_is_axis(rand, to_np, fn, axis):
    x = rand(3, 4)
    np.testing.assert_array_equal(to_np(fn(x, dim=axis).data), to_np(fn(x, axis=axis).data))


def test_softmax_dim_against_a_hand_computed_softmax(rand, to_np):
    x = rand(2, 3)
    e = np.exp(to_np(x))
    np.testing.assert_allclose(to_np(F.softmax(x, dim=0).data), e / e.sum(0), rtol=1e-12)


def test_softmax_refuses_axis_and_dim_that_disagree(rand):
    with pytest.raises(ValueError, match=r"^softmax: axis=0 and dim=1 name the same argument"):
        F.softmax(rand(2, 3), axis=0, dim=1)


# -- parameters(), named_parameters() -----------------------------------------------------
def _model():
    zerograd.seed(0)
    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))
    return model


def test_parameters_and_named_parameters_are_params_and_named_params():
    model = _model()
    assert list(model.parameters()) == list(model.params())
    pairs = list(model.named_parameters())
    assert [n for n, _ in pairs] == ["l0.W", "l0.b", "l1.W", "l1.b"]
    assert all(p is model.named_params()[n] for n, p in pairs)


def test_model_zero_grad_is_cleargrads():
    model = _model()
    F.sum(model(np.ones((2, 4), np.float32))).backward()
    assert all(p.grad is not None for p in model.params())
    model.zero_grad()
    assert all(p.grad is None for p in model.params())


def test_an_optimizer_over_model_parameters_updates_them():
    model = _model()
    opt = optimizers.SGD(model.parameters(), lr=0.5)
    before = {n: p.data.copy() for n, p in model.named_parameters()}
    F.sum(model(np.ones((2, 4), np.float32))).backward()
    opt.step()
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.data, before[name] - 0.5 * p.grad.data, rtol=1e-6)


# -- model.to("cpu") / model.to("cuda") ---------------------------------------------------
def _gpu():
    try:
        return gpu_backend()
    except NoBackendError as exc:
        return exc


def test_to_cuda_moves_to_the_gpu_backend_or_says_why_not_changing_nothing():
    model = _model()
    before = [p.data for p in model.params()]
    gpu = _gpu()
    if isinstance(gpu, NoBackendError):  # this machine: one error, the model untouched
        with pytest.raises(NoBackendError, match=str(gpu).split(";")[0][:40]):
            model.to("cuda")
        assert all(p.data is d for p, d in zip(model.params(), before))
        return
    assert model.to("cuda") is model
    assert all(backend_of(p.data) is gpu for p in model.params())
    model.to("cpu")
    for p, d in zip(model.params(), before):
        assert backend_of(p.data) is get_backend()
        np.testing.assert_array_equal(p.data, d)


def test_to_cpu_is_to_cpu(rand):
    layer = L.Linear(2, in_size=3)
    layer.W.data = rand(3, 2, dtype="float32")  # on the backend under test
    assert layer.to("cpu") is layer
    assert backend_of(layer.W.data) is get_backend() and backend_of(layer.b.data) is get_backend()


# -- L.Dropout in a Sequential; L.ReLU refused with the spelling ----------------------------
def test_dropout_layer_is_f_dropout_with_its_ratio():
    x = np.ones((50, 40), np.float32)
    zerograd.seed(3)
    expected = F.dropout(x, 0.3).data
    zerograd.seed(3)
    got = L.Dropout(0.3)(x).data
    np.testing.assert_array_equal(got, expected)
    assert set(np.unique(got)) == {0.0, np.float32(1 / 0.7)}
    with test_mode():
        np.testing.assert_array_equal(L.Dropout(0.3)(x).data, x)


def test_a_sequential_with_dropout_trains_and_eval_turns_dropout_off():
    zerograd.seed(0)
    model = Sequential(L.Linear(8), F.relu, L.Dropout(0.5), L.Linear(2))
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    a, b = model(x).data, model(x).data
    assert not np.array_equal(a, b)  # two masks
    model.eval()
    c, d = model(x).data, model(x).data
    np.testing.assert_array_equal(c, d)
    model.train()
    assert repr(model.l2) == "Dropout(dropout_ratio=0.5)"
    assert [n for n, _ in model.named_parameters()] == ["l0.W", "l0.b", "l3.W", "l3.b"]


@pytest.mark.parametrize(
    "make, error, text",
    [
        (lambda: L.Dropout(1.0), ValueError, r"^Dropout: dropout_ratio must be in \[0, 1\), got 1"),
        (lambda: L.Dropout("half"), TypeError, r"^Dropout: dropout_ratio must be a"),
        (lambda: L.Dropout(p=0.2), TypeError, r"^Dropout: p= is PyTorch's keyword.*dropout_ratio"),
    ],
)
def test_dropout_checks_its_ratio(make, error, text):
    with pytest.raises(error, match=text):
        make()


def test_relu_layer_names_the_function_to_pass():
    assert not hasattr(L, "ReLU")
    with pytest.raises(AttributeError) as info:
        L.ReLU  # noqa: B018
    assert str(info.value) == (
        "module 'zerograd_nn.layers' has no attribute 'ReLU' (PyTorch's nn.ReLU): activations "
        "are functions, and Sequential takes functions as well as layers: "
        "Sequential(L.Linear(10), F.relu, L.Linear(3))."
    )
    with pytest.raises(AttributeError, match=r"^module 'zerograd_nn.layers' has no attribute 'X'$"):
        L.X  # noqa: B018


@pytest.mark.parametrize("name", sorted(MISSING_LAYERS))
def test_every_spelling_a_missing_layer_names_runs(name):
    """Each hint's code (after "pass " or "Sequential(", or a layer it names) is real."""
    hint = MISSING_LAYERS[name]
    x = np.ones((2, 3, 4, 4), np.float32)
    names = {"F": F, "L": L, "functools": functools, "Sequential": Sequential}
    for code in re.findall(r"pass (\S.*?)(?: \(|$)", hint):
        assert eval(code, names)(x).shape[0] == 2, code  # noqa: S307 - our own strings
    for code in re.findall(r"(Sequential\(.*\)|EmbedID\(|Deconv2d\(|BatchNorm\()", hint):
        if code.startswith("Sequential("):
            assert eval(code, names)(x.reshape(2, -1)).shape == (2, 3)  # noqa: S307
        else:
            assert hasattr(L, code[:-1])
    for fname in re.findall(r"F\.(\w+)", hint):
        assert callable(getattr(F, fname))


# -- TensorDataset -------------------------------------------------------------------------
def test_tensor_dataset_feeds_a_loader_like_the_arrays_it_holds(to_np):
    x, t = np.arange(20.0).reshape(10, 2), np.arange(10) % 3  # host data, as a loader reads
    ds = TensorDataset(x, t)
    assert ds.data is x and ds.label is t
    assert len(ds) == 10
    xi, ti = ds[4]
    np.testing.assert_array_equal(to_np(xi), [8.0, 9.0])
    assert int(to_np(ti)) == 1
    batches = list(DataLoader(ds, batch_size=4, shuffle=False))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([to_np(b[0]) for b in batches]), to_np(x))
    np.testing.assert_array_equal(np.concatenate([to_np(b[1]) for b in batches]), to_np(t))


def test_tensor_dataset_takes_variables_lists_and_no_labels():
    ds = TensorDataset(Variable(np.ones((3, 2))), [0, 1, 2])
    assert ds[2][1] == 2 and not isinstance(ds.data, Variable)
    unlabelled = TensorDataset(np.ones((3, 2)))
    assert unlabelled[0][1] is None and unlabelled.label is None


@pytest.mark.parametrize(
    "args, error, text",
    [
        ((np.ones(3), np.ones(2)), ValueError, r"^TensorDataset: data holds 3 examples but "),
        ((3.0,), TypeError, r"^TensorDataset: data must be an array whose first axis"),
        ((np.ones(3), np.array(1)), TypeError, r"^TensorDataset: label must be an array"),
    ],
)
def test_tensor_dataset_refuses_what_cannot_pair(args, error, text):
    with pytest.raises(error, match=text):
        TensorDataset(*args)
