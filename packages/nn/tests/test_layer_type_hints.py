"""What py.typed promises for zerograd-nn: annotations a user's type checker reads."""

import inspect
import typing
from typing import Any

import numpy as np

from zerograd_nn import Layer
from zerograd_nn.models import MLP


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
