"""Parameter-group recipes."""

from __future__ import annotations

from typing import Any

_NO_DECAY_NAMES = ("b", "beta", "gamma", "bias")


def weight_decay_groups(
    model: Any, weight_decay: float, no_decay: tuple[str, ...] = _NO_DECAY_NAMES
) -> list[dict[str, Any]]:
    """Two parameter groups: weights with ``weight_decay``, the rest with none.

    Biases and normalization scales and shifts are not decayed: parameters whose last name
    is in ``no_decay`` (``b``, ``gamma``, ``beta``), and every parameter of at most one
    dimension (BatchNorm's running statistics have no gradient and are never changed).

    Args:
        model: a Layer/Model.
        weight_decay: the decay of the weights' group.
        no_decay: last name components that are never decayed.

    Returns:
        ``[{"params": {name: p}, "weight_decay": weight_decay}, {"params": {...},
        "weight_decay": 0.0}]`` for ``optimizer.setup``.

    Examples:
        >>> from zerograd_nn.models import MLP
        >>> from zerograd_nn.optimizers import AdamW
        >>> opt = AdamW().setup(weight_decay_groups(MLP((4, 2)), 0.01))
        >>> [sorted(g["param_names"]) for g in opt.param_groups]
        [['l0.W', 'l1.W'], ['l0.b', 'l1.b']]
    """
    if not hasattr(model, "named_params"):
        raise TypeError(
            f"weight_decay_groups(model, weight_decay): model must be a Layer/Model, got "
            f"{type(model).__name__}."
        )
    decay, rest = {}, {}
    for name, p in model.named_params().items():
        leaf = name.rsplit(".", 1)[-1]
        small = p.data is not None and p.data.ndim <= 1
        (rest if leaf in no_decay or small else decay)[name] = p
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
