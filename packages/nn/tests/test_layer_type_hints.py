"""What py.typed promises for zerograd-nn: annotations a user's type checker reads."""

import inspect
import typing
from typing import Any

from zerograd_nn import Layer


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
