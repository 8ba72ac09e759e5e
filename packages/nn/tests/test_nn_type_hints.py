"""What py.typed promises for zerograd-nn: annotations a user's type checker reads.

Where mypy is importable, documented code is also type-checked for real (skipped, saying
so, where it is not).
"""

import ast
import importlib
import importlib.util
import inspect
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zerograd_nn.models
from zerograd.functions.ops import exported
from zerograd.testing.typecheck import run_mypy
from zerograd_nn import Layer
from zerograd_nn.models import MLP, Sequential
from zerograd_nn.optimizers import Optimizer


def test_layer_forward_takes_anything_so_that_every_override_type_checks():
    # (self, *inputs: Any) alone made pyright refuse every model written as documented,
    # `def forward(self, x)`: "Method forward overrides class Layer in an incompatible manner"
    params = list(inspect.signature(Layer.forward).parameters.values())[1:]
    assert [p.kind for p in params] == [
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]
    hints = typing.get_type_hints(Layer.forward)
    assert [hints[p.name] for p in params] == [Any, Any]


def test_mlp_activation_admits_none_as_documented():
    # annotated Callable alone, MLP((10, 1), activation=None) (a linear model, as the
    # docstring says) was refused by mypy and pyright
    hint = typing.get_type_hints(MLP.__init__)["activation"]
    assert type(None) in typing.get_args(hint)
    model = MLP((2,), activation=None)
    x = np.array([[1.0, -2.0]])
    y = model(x)
    W, b = model.l0.W.data, model.l0.b.data
    np.testing.assert_allclose(y.data, x @ W + b)  # no activation anywhere


# by import_module: zerograd_nn.functional.linear and .pooling are the functions of those names
OP_MODULES = [
    importlib.import_module(f"zerograd_nn.functional.{name}")
    for name in ("activation", "conv", "linear", "loss", "normalization", "pooling")
]


@pytest.mark.parametrize("module", OP_MODULES, ids=lambda m: m.__name__)
def test_an_op_modules_all_is_a_literal_list_naming_each_of_its_ops(module):
    # computed, __all__ read as empty to mypy, so `from .linear import *` bound nothing and
    # F.linear, F.pooling were the submodules of those names: "Module not callable"
    tree = ast.parse(Path(module.__file__).read_text())
    (value,) = [
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == ["__all__"]
    ]
    assert isinstance(value, ast.List), f"{module.__name__}.__all__ = {ast.unparse(value)}"
    assert [ast.literal_eval(e) for e in value.elts] == module.__all__
    missing = sorted(set(exported(module.__name__)) - set(module.__all__))
    assert not missing, f"{module.__name__}: list {missing} in its __all__"


BOOK_CODE = """
import numpy as np
import zerograd_nn.dezero.functions as DF
import zerograd_nn.dezero.functions_conv as DFC
import zerograd_nn.functional as F

x, W, b = np.ones((2, 3)), np.ones((3, 4)), np.zeros(4)
img = np.ones((1, 1, 4, 4))
y = F.linear(x, W, b) + DF.linear(x, W, b) + F.relu(x @ W) + F.softmax_cross_entropy(x, [0, 1])
z = F.pooling(img, 2, 2) + DFC.pooling(img, 2, 2) + F.conv2d(img, np.ones((1, 1, 2, 2)))
"""

CHAIN_CODE = """
import zerograd_nn.functional as F
import zerograd_nn.layers as L
from zerograd_nn.models import MLP, Sequential

model = MLP((10, 3))
groups = [{"params": list(model.l0.params()), "lr": 0.01}, {"params": list(model.l1.params())}]
seq = Sequential(L.Linear(5), F.relu, L.Linear(2))
seq.l2 = L.Linear(4)
print(seq.l0.W, groups)
"""


@pytest.mark.parametrize("model", [MLP, Sequential])
def test_the_numbered_layers_are_declared_for_type_checkers(model):
    # l0, l1, ... are set with setattr: mypy and pyright refused model.l0 in documented
    # code (per-layer parameter groups) until the class declared attribute lookup for them
    tree = ast.parse(Path(zerograd_nn.models.__file__).read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    declared = {
        f.name
        for klass in model.__mro__
        if klass.__name__ in classes
        for block in classes[klass.__name__].body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for f in block.body
        if isinstance(f, ast.FunctionDef)
    }
    assert "__getattr__" in declared
    assert "__getattr__" not in {n for k in model.__mro__ for n in vars(k)}  # no runtime cost


@pytest.mark.parametrize(
    "method",
    [Optimizer.setup, Layer.train, Layer.eval, Layer.to, Layer.to_cpu, Layer.to_gpu],
    ids=lambda m: m.__qualname__,
)
def test_a_method_returning_self_is_annotated_so(method):
    # annotated as the base class, `opt = SGD(lr=0.1).setup(model)` (DeZero's idiom) was an
    # Optimizer to mypy, whose opt.lr was "Optimizer has no attribute lr"; and
    # `model = MyModel().eval()` lost the model's own attributes
    assert inspect.signature(method).return_annotation == "Self"


SELF_CODE = """
import numpy as np
from zerograd_nn.models import MLP
from zerograd_nn.optimizers import SGD, Adam

model = MLP((4, 2)).eval().train().to_cpu()
optimizer = SGD(lr=0.1).setup(model)
optimizer.lr = optimizer.lr * 0.5
adam = Adam(alpha=1e-3).setup(model)
adam.alpha = 1e-4
print(model.l0, model.l1)
"""


def test_mypy_accepts_linear_and_pooling_called_as_the_book_does(tmp_path):
    result = run_mypy(BOOK_CODE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_accepts_the_numbered_layers_of_mlp_and_sequential(tmp_path):
    result = run_mypy(CHAIN_CODE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_keeps_the_class_through_setup_and_train(tmp_path):
    result = run_mypy(SELF_CODE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
