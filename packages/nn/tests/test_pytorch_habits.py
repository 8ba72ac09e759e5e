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


# -- PyTorch's keywords and names on zerograd_nn.functional --------------------------------
_IMAGES = np.random.default_rng(8).standard_normal((2, 3, 4, 4))
_KERNELS = np.random.default_rng(9).standard_normal((5, 3, 3, 3))
_SCORES = np.random.default_rng(10).standard_normal((4, 3))
_LABELS = np.array([0, 2, 1, 2])
_BN = (np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: F.dropout(_SCORES, p=0.2), r"^dropout: p= .*dropout_ratio=0\.5\)"),
        (lambda: F.dropout(_SCORES, training=False), r"^dropout: training= .*test_mode\(\)"),
        (lambda: F.dropout(_SCORES, inplace=True), r"^dropout: inplace= .*y = F\.dropout\(x\)"),
        (lambda: F.leaky_relu(_SCORES, negative_slope=0.1), r"^leaky_relu: negative_slope="),
        (lambda: F.leaky_relu(_SCORES, inplace=True), r"^leaky_relu: inplace= .*no in-place"),
        (lambda: F.conv2d(_IMAGES, _KERNELS, padding=1), r"^conv2d: padding= .*pad=1\)"),
        (lambda: F.conv2d(_IMAGES, _KERNELS, bias=np.ones(5)), r"^conv2d: bias= .*b="),
        (lambda: F.conv2d(_IMAGES, _KERNELS, dilation=2), r"^conv2d: dilation= .*no dilation"),
        (lambda: F.conv2d(_IMAGES, _KERNELS, groups=3), r"^conv2d: groups= .*no groups"),
        (lambda: F.deconv2d(_IMAGES, _KERNELS, padding=1), r"^deconv2d: padding= .*pad=1\)"),
        (lambda: F.deconv2d(_IMAGES, _KERNELS, output_padding=1), r"^deconv2d: .*outsize="),
        (lambda: F.pooling(_IMAGES, 2, padding=1), r"^pooling: padding= .*pad=.*stride=2"),
        (lambda: F.pooling(_IMAGES, 2, ceil_mode=True), r"^pooling: ceil_mode= .*rounds down"),
        (lambda: F.pooling(_IMAGES, 2, return_indices=True), r"^pooling: return_indices="),
        (lambda: F.pooling(_IMAGES, 2, dilation=2), r"^pooling: dilation= .*no dilation"),
        (lambda: F.average_pooling(_IMAGES, 2, padding=1), r"^average_pooling: padding= .*pad="),
        (lambda: F.average_pooling(_IMAGES, 2, count_include_pad=False), r"always count"),
        (lambda: F.linear(_SCORES, np.ones((3, 2)), bias=np.ones(2)), r"^linear: bias= .*b="),
        (lambda: F.cross_entropy(_SCORES, _LABELS, reduction="sum"), r"^softmax_cross_entropy: "),
        (lambda: F.softmax_cross_entropy(_SCORES, _LABELS, weight=np.ones(3)), r"class weights"),
        (lambda: F.cross_entropy(_SCORES, _LABELS, ignore_index=0), r"ignore_index= .*leave"),
        (lambda: F.cross_entropy(_SCORES, _LABELS, label_smoothing=0.1), r"no label smoothing"),
        (lambda: F.mse_loss(_SCORES, _SCORES, reduction="sum"), r"^mean_squared_error: reduct"),
        (lambda: F.mse_loss(_SCORES, _SCORES, weight=np.ones(3)), r"^mean_squared_error: weigh"),
        (lambda: F.binary_cross_entropy(_SCORES**2 / 9, _SCORES > 0, reduction="sum"), r"len\(t"),
        (lambda: F.sigmoid_cross_entropy(_SCORES, _SCORES > 0, pos_weight=2), r"no pos_weight"),
        (lambda: F.batch_norm(_IMAGES, *_BN, momentum=0.1), r"^batch_norm: momentum= .*decay="),
        (lambda: F.batch_norm(_IMAGES, *_BN, training=True), r"^batch_norm: training= .*mode"),
    ],
)
def test_functions_name_zerograds_spelling_of_pytorchs_keywords(call, text):
    with pytest.raises(TypeError, match=text) as info:  # Python's "unexpected keyword" before
        call()
    assert "is PyTorch's keyword, not zerograd's (DeZero's): " in str(info.value)


def test_the_spellings_the_keyword_hints_give_compute_pytorchs_results():
    x, t = _SCORES, _LABELS
    rows = -(x - np.log(np.exp(x).sum(1, keepdims=True)))[np.arange(4), t]  # by hand
    np.testing.assert_allclose(F.cross_entropy(x, t).data * len(t), rows.sum(), rtol=1e-12)
    np.testing.assert_allclose((-F.log_softmax(x)[np.arange(len(t)), t]).data, rows, rtol=1e-12)
    x0, x1 = _SCORES, _SCORES[::-1] * 2
    sq = (x0 - x1) ** 2
    np.testing.assert_allclose(F.mse_loss(x0, x1).data * len(x0), sq.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.mse_loss(x0, x1).data * len(x0) / x0.size, sq.mean(), rtol=1e-12)
    p, y = 1 / (1 + np.exp(-x)), (x0 > 0.3).astype(np.float64)
    terms = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    bce = F.binary_cross_entropy(p, y).data
    np.testing.assert_allclose(bce * len(y) / y.size, terms.mean(), rtol=1e-9)
    np.testing.assert_allclose(F.sigmoid_cross_entropy(x, y).data * len(y), terms.sum(), rtol=1e-9)
    np.testing.assert_allclose(F.leaky_relu(x, slope=0.01).data, np.where(x > 0, x, 0.01 * x))
    mean, var, momentum = np.zeros(3), np.ones(3), 0.1
    F.batch_norm(_IMAGES, np.ones(3), np.zeros(3), mean, var, decay=1 - momentum)
    batch = _IMAGES.transpose(1, 0, 2, 3).reshape(3, -1)
    np.testing.assert_allclose(mean, momentum * batch.mean(1), rtol=1e-12)  # PyTorch's update
    np.testing.assert_allclose(var, 0.9 + momentum * batch.var(1, ddof=1), rtol=1e-12)
    windows = _IMAGES.reshape(2, 3, 2, 2, 2, 2)  # (N, C, OH, KH, OW, KW)
    np.testing.assert_array_equal(F.pooling(_IMAGES, 2, stride=2).data, windows.max((3, 5)))
    mean2 = F.average_pooling(_IMAGES, 2, stride=2).data
    np.testing.assert_allclose(mean2, windows.mean((3, 5)), rtol=1e-12)
    pooled = F.mean(_IMAGES, axis=(2, 3), keepdims=True).data
    np.testing.assert_allclose(pooled, _IMAGES.mean((2, 3), keepdims=True), rtol=1e-12)


def test_other_keywords_get_pythons_own_error_and_own_arguments_go_through():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"^dropout\(\) got an unexpected keyword argument 'q'$"):
        F.dropout(x, q=0.5)
    with pytest.raises(TypeError, match=r"^conv2d\(\) got an unexpected keyword argument 'k'$"):
        F.conv2d(_IMAGES, _KERNELS, k=1)
    g, b, m, v = _BN  # PyTorch's order (x, running_mean, running_var, weight=, bias=)
    with pytest.raises(TypeError, match=r"^batch_norm\(\) missing 2 required positional .*'var'"):
        F.batch_norm(_IMAGES, m, v, weight=g, bias=b)
    with pytest.raises(TypeError, match=r"^dropout\(\) got multiple values for argument 'drop"):
        F.dropout(x, 0.5, dropout_ratio=0.5)
    with test_mode():
        assert F.dropout(x).data is x or np.array_equal(F.dropout(x).data, x)
    zerograd.seed(4)
    a = F.dropout(x, 0.25).data
    zerograd.seed(4)
    np.testing.assert_array_equal(F.dropout(x, dropout_ratio=0.25).data, a)
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    y = F.conv2d(_IMAGES, _KERNELS, None, 1, 1)
    np.testing.assert_array_equal(F.conv2d(_IMAGES, _KERNELS, stride=1, pad=1).data, y.data)
    np.testing.assert_array_equal(F.leaky_relu(np.array([-1.0]), slope=0.5).data, [-0.5])
    assert F.cross_entropy is F.softmax_cross_entropy and F.mse_loss is F.mean_squared_error


def test_the_wrapped_functions_keep_their_signatures_and_docstrings():
    import inspect

    assert str(inspect.signature(F.dropout)) == (
        "(x: 'ArrayLike', dropout_ratio: 'float' = 0.5) -> 'Variable'"
    )
    assert list(inspect.signature(F.conv2d).parameters) == ["x", "W", "b", "stride", "pad"]
    assert list(inspect.signature(F.leaky_relu).parameters) == ["x", "slope"]
    assert F.dropout.__name__ == "dropout" and "inverted dropout" in F.dropout.__doc__
    defaults = {k: p.default for k, p in inspect.signature(F.batch_norm).parameters.items()}
    assert (defaults["decay"], defaults["eps"]) == (0.9, 2e-5)


def test_the_keyword_check_runs_only_when_a_keyword_it_does_not_take_is_given():
    from zerograd_nn.functional.pytorch_names import refuses_pytorch_keywords

    class Counted(dict):
        reads = 0

        def __contains__(self, key):
            Counted.reads += 1
            return super().__contains__(key)

    @refuses_pytorch_keywords(Counted(p="write ratio="))
    def scale(x, ratio=2.0, *, shift=0.0):
        return x * ratio + shift

    Counted.reads = 0  # the decorator checked the parameters against the hints
    assert (scale(1.0), scale(1.0, 3.0), scale(1.0, ratio=3.0, shift=1.0)) == (2.0, 3.0, 4.0)
    assert Counted.reads == 0  # nothing looked at on a call with its own arguments
    with pytest.raises(TypeError, match=r"^scale: p= is PyTorch's keyword.*: write ratio=\.$"):
        scale(1.0, p=3.0)
    with pytest.raises(TypeError, match=r"scale\(\) got an unexpected keyword argument 'q'$"):
        scale(1.0, q=3.0)
    with pytest.raises(ValueError, match=r"^refuses_pytorch_keywords: scale takes ratio= itself"):
        refuses_pytorch_keywords({"ratio": "..."})(scale.__wrapped__)  # a hint never hides one


def test_pytorch_function_names_say_what_to_write_and_what_they_name_runs():
    from zerograd_nn.functional.pytorch_names import MISSING_FUNCTIONS

    with pytest.raises(AttributeError) as info:
        F.max_pool2d  # noqa: B018
    assert str(info.value) == (
        "module 'zerograd_nn.functional' has no attribute 'max_pool2d' (PyTorch's "
        "F.max_pool2d): max pooling is F.pooling(x, kernel_size, stride, pad), whose stride "
        "defaults to 1, not to the kernel size: F.pooling(x, 2, stride=2)."
    )
    with pytest.raises(
        AttributeError, match=r"^module 'zerograd_nn.functional' has no attribute 'nope'$"
    ):
        F.nope  # noqa: B018
    assert not hasattr(F, "embedding")
    for name, hint in MISSING_FUNCTIONS.items():
        for fname in re.findall(r"F\.(\w+)", hint):
            assert callable(getattr(F, fname)), (name, fname)
        with pytest.raises(AttributeError, match=re.escape(hint)):
            getattr(F, name)
