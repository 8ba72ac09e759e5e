"""``functional_call``: run a model with given parameters in place of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def functional_call(model: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``model(*args, **kwargs)`` computing with ``params`` instead of its parameters.

    The model itself is left as it was: its parameters, their gradients and any state a
    call writes (an RNN's hidden state, batch norm's running statistics) belong to a copy
    made for this call (the way ``torch.func.functional_call`` leaves a module alone), so
    the call is safe from several threads at once. This is how the transforms apply to
    models: ``grad(lambda p: loss(functional_call(model, p, x)))(params)``.

    The model provides ``with_params(params)``, a copy of itself computing with
    ``params`` (:meth:`zerograd_nn.Layer.with_params`); any object with that method works.

    Args:
        model: a model (a :class:`zerograd_nn.Layer`).
        params: ``{dotted name: array or Variable}`` as ``model.named_params()`` names them
            (``'l0.W'``); parameters left out keep the model's values. A tuple or list of
            such dicts (parameters and buffers, as ``torch.func`` takes them) is merged.
        *args: the model's inputs. One tuple alone is ``torch.func``'s form of them and is
            unpacked: ``functional_call(model, p, (x,))`` calls ``model(x)`` (a model whose
            one input is a tuple takes ``((a, b),)``).
        **kwargs: the model's keyword arguments.

    Returns:
        What the model returns.

    Raises:
        TypeError: ``model`` has no ``with_params`` method; ``params`` is not a mapping (or
            a tuple of them).
        ValueError: a name is given twice, or is not one of the model's parameters (the
            message lists them), or a value's shape differs from the parameter's.

    Examples:
        >>> import numpy as np
        >>> from zerograd_nn.layers import Linear
        >>> from zerograd.func import functional_call
        >>> layer = Linear(1, in_size=2)
        >>> params = {"W": np.ones((2, 1)), "b": np.zeros(1)}
        >>> functional_call(layer, params, np.array([[1.0, 2.0]]))
        variable([[3.]])
    """
    bind = getattr(model, "with_params", None)
    if not callable(bind):
        raise TypeError(
            f"functional_call: {type(model).__qualname__} has no with_params(params) method; "
            f"pass a zerograd_nn Layer or Model (or an object that makes a copy of itself "
            f"computing with the given parameters)."
        )
    if isinstance(params, Mapping):
        merged = dict(params)
    elif isinstance(params, (tuple, list)) and all(isinstance(p, Mapping) for p in params):
        merged = {}
        for p in params:
            twice = sorted(set(merged) & set(p))
            if twice:
                raise ValueError(f"functional_call: {twice} given in more than one dict")
            merged.update(p)
    else:
        raise TypeError(
            f"functional_call: params must be a dict {{name: array}} (or a tuple of dicts), "
            f"got {type(params).__name__}"
        )
    if len(args) == 1 and type(args[0]) is tuple:  # torch.func's functional_call(m, p, (x,))
        args = args[0]
    return bind(merged)(*args, **kwargs)
