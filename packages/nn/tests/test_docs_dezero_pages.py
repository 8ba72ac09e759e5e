"""Claims of docs/from-dezero.md and packages/nn/README.md that no other test shows.

References are written out with numpy here: DeZero's draws, in DeZero's order, and its
training step by hand; numerical derivatives of the engine's own second derivatives.
"""

from pathlib import Path

import numpy as np
import pytest

import zerograd.func as zf
import zerograd_nn.functional as F
from zerograd import Variable
from zerograd.functions.ops import OPS
from zerograd.testing import check_backward
from zerograd_nn import DataLoader
from zerograd_nn.datasets import Spiral
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD

PAGE = Path(__file__).resolve().parents[3] / "docs" / "from-dezero.md"


def _dezero_step50_by_hand(x, t, epochs):
    """DeZero 0.0.13's spiral loop (DataLoader(train_set, 30), MLP((10, 3)), SGD(1.0)) with
    numpy, drawing as DeZero draws: the loader's first permutation when it is made, each
    Linear's ``randn(I, O) * sqrt(1 / I)`` at its first call, the next permutation when an
    epoch ends. Returns the mean loss of each epoch."""
    index = np.random.permutation(len(x))
    params = []
    losses = []
    for _ in range(epochs):
        total = 0.0
        for i in range(len(x) // 30):
            batch = index[i * 30 : (i + 1) * 30]
            xb, tb = x[batch].astype(np.float64), t[batch]
            if not params:
                W1 = np.random.randn(2, 10).astype(np.float32) * np.sqrt(1 / 2)
                params += [W1.astype(np.float64), np.zeros(10)]
            h = xb @ params[0] + params[1]
            a = 1 / (1 + np.exp(-h))
            if len(params) == 2:
                W2 = np.random.randn(10, 3).astype(np.float32) * np.sqrt(1 / 10)
                params += [W2.astype(np.float64), np.zeros(3)]
            s = a @ params[2] + params[3]
            logp = s - s.max(axis=1, keepdims=True)
            logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
            rows = np.arange(len(tb))
            total += -logp[rows, tb].mean() * len(tb)
            gs = np.exp(logp)
            gs[rows, tb] -= 1
            gs /= len(tb)
            ga = gs @ params[2].T
            gh = ga * a * (1 - a)
            grads = [xb.T @ gh, gh.sum(axis=0), a.T @ gs, gs.sum(axis=0)]
            params = [p - g for p, g in zip(params, grads)]  # lr 1.0
        losses.append(total / len(x))
        index = np.random.permutation(len(x))  # DeZero's loader resets at the epoch's end
    return losses


def test_seeding_after_loading_the_data_gives_dezeros_losses():
    """from-dezero.md: call ``np.random.seed(...)`` after loading the data, and "DeZero given
    the same call at the same place prints the same losses" (its step 50)."""
    train_set = Spiral(train=True)
    np.random.seed(0)
    want = _dezero_step50_by_hand(train_set.data, train_set.label, epochs=3)

    np.random.seed(0)
    loader = DataLoader(train_set, 30)
    model = MLP((10, 3))
    optimizer = SGD(1.0).setup(model)
    got = []
    for _ in range(3):
        total = 0.0
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total += float(loss.data) * len(t)
        got.append(total / len(train_set))
    np.testing.assert_allclose(got, want, rtol=1e-5)  # float32 against float64 arithmetic
    assert f"{got[0]:.4f}" == f"{want[0]:.4f}" == "1.0628"  # as the tutorial prints it


_RNG = np.random.default_rng(0)
_W = _RNG.standard_normal((3, 2, 3, 3)) * 0.5
_GAMMA, _BETA = _RNG.standard_normal(2), _RNG.standard_normal(2)

THIRD_ORDER = {
    "conv2d": lambda v: F.tanh(F.conv2d(v, _W, None, 1, 1)),
    "deconv2d": lambda v: F.tanh(F.deconv2d(v, _W.transpose(1, 0, 2, 3), None, 1, 1)),
    "im2col": lambda v: F.tanh(F.im2col(v, 3, 1, 1)),
    "col2im": lambda v: F.tanh(F.col2im(F.tanh(F.im2col(v, 3, 1, 1)), v.shape, 3, 1, 1)),
    "pooling": lambda v: F.tanh(F.pooling(v, 2, 2)),
    "average_pooling": lambda v: F.tanh(F.average_pooling(v, 2, 2)),
    "batch_norm": lambda v: F.tanh(F.batch_norm(v, _GAMMA, _BETA, np.zeros(2), np.ones(2))),
}


@pytest.mark.parametrize("name", THIRD_ORDER)
def test_the_readmes_conv_pooling_and_batch_norm_differentiate_three_times(name):
    """nn's README: conv2d, deconv2d, im2col, col2im, pooling and batch_norm (train mode
    here) "can be differentiated twice and more": the second derivatives of each one's
    gradient (its third derivatives) against central differences."""
    f = THIRD_ORDER[name]
    x = np.random.default_rng(1).standard_normal((2, 2, 4, 4))
    weight = np.random.default_rng(2).standard_normal(f(Variable(x)).shape)
    gradient = zf.grad(lambda v: F.sum(f(v) * weight))
    check_backward(gradient, x, order=2)


def _op_class(name):
    """The op's own class (pow: x ** c, then x ** y; the others' second are gradients')."""
    name, _, which = name.partition(":")
    return OPS[name].classes[int(which or 0)]


# from-dezero.md, "What the graph keeps", in the page's words: the op behind each
READS_NO_INPUT = {
    **{n: n for n in "add sub neg reshape sum transpose broadcast_to sum_to".split()},
    **{n: n for n in "exp tanh sqrt sigmoid softmax pooling im2col col2im".split()},
    "ReLU": "relu",
    "log-softmax": "log_softmax",
}
READS_ITS_OUTPUT = {
    **{n: n for n in "exp tanh sqrt sigmoid softmax".split()},
    "ReLU": "relu",
    "log-softmax": "log_softmax",
    "`x ** y` of two Variables": "pow:1",
}
READS_ONLY_INPUTS = {
    **{n: n for n in "sin cos log square clip concatenate stack matmul linear".split()},
    "indexing": "get_item",
    "leaky ReLU": "leaky_relu",
    "convolution": "conv2d",
    "`x ** c` of a number": "pow:0",
}


def test_what_each_function_of_the_graph_page_keeps_is_what_its_class_declares():
    """from-dezero.md lists the built-in functions whose derivative reads no input value,
    those whose derivative reads their output and those whose reads only their inputs."""
    if not PAGE.is_file():
        pytest.skip(f"{PAGE} not found (tests run outside the repository checkout)")
    page = PAGE.read_text(encoding="utf-8").split("## What the graph keeps")[1]
    for said in [*READS_NO_INPUT, *READS_ITS_OUTPUT, *READS_ONLY_INPUTS]:
        assert said in page, f"the page no longer names {said!r}: update this test"
    assert all(not _op_class(n).vjp_reads_inputs for n in READS_NO_INPUT.values())
    assert all(_op_class(n).vjp_reads_outputs for n in READS_ITS_OUTPUT.values())
    assert not any(_op_class(n).vjp_reads_outputs for n in READS_ONLY_INPUTS.values())


def test_cifar_default_transform_scales_to_minus_one_one_and_dezero_s_did_not():
    """from-dezero.md: CIFAR's default gives [-1, 1]; DeZero's Normalize(0.5, 0.5) of pixels
    0..255 (after ToFloat) gave -1 to 509."""
    import inspect

    from zerograd_nn.datasets import CIFAR10, CIFAR100
    from zerograd_nn.transforms import Compose, Normalize, ToFloat

    pixels = np.array([[[0, 127, 255]]] * 3, dtype=np.uint8)  # (3, 1, 3)
    for cls in (CIFAR10, CIFAR100):
        f = inspect.signature(cls).parameters["transform"].default
        y = f(pixels)
        assert y.dtype == np.float32
        np.testing.assert_allclose(y[0, 0], [-1.0, -0.5 / 127.5, 1.0], rtol=1e-6)
    dezero = Compose([ToFloat(), Normalize(0.5, 0.5)])(pixels)
    np.testing.assert_allclose(dezero[0, 0], [-1.0, 253.0, 509.0])
    assert "gives -1 to 509" in " ".join(PAGE.read_text().split())
