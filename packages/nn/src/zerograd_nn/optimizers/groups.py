"""Parameter groups: how ``setup`` keeps them, and the no-decay recipe."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from zerograd import Parameter

from .hyper import check_hyper, spec_of
from .watch import ParamGroup

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


class LiveParams:
    """A group's parameters read from a model at every update (as DeZero's ``target``)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.model.params())

    def __repr__(self) -> str:
        return f"<params of {type(self.model).__name__}>"


class GroupsTarget:
    """The ``target`` of an optimizer set up with parameter groups."""

    def __init__(self, groups: list[dict]) -> None:
        self._groups = groups

    def params(self) -> Iterator[Parameter]:
        """Every group's parameters, in order."""
        for g in self._groups:
            yield from g["params"]


class ParamList:
    """A plain list of Parameters given to ``setup`` instead of a model."""

    def __init__(self, params: list[Parameter]) -> None:
        self._params = params

    def params(self) -> Iterable[Parameter]:
        """The Parameters given."""
        return iter(self._params)


_Live, _Groups, _ParamList = LiveParams, GroupsTarget, ParamList  # their names in old pickles


def check_params(owner: str, params: Any, what: str) -> list[Parameter]:
    """``params`` as a list of Parameters, checked.

    Args:
        owner: the optimizer's name, for error messages.
        params: an iterable of Parameters.
        what: how to name ``params`` in error messages.

    Returns:
        A new list of the Parameters.

    Raises:
        TypeError: ``params`` is not iterable or holds something other than a Parameter.
    """
    try:
        params = list(params)
    except TypeError:
        raise TypeError(
            f"{owner}.setup(target): {what} must be a Layer/Model (with params()), an iterable "
            f"of Parameters or a list of parameter groups, got {type(params).__name__}."
        ) from None
    bad = [type(p).__name__ for p in params if not isinstance(p, Parameter)]
    if bad:
        raise TypeError(
            f"{owner}.setup(target): every item of {what} must be a Parameter, got "
            f"{', '.join(sorted(set(bad)))}."
        )
    return params


def _split_betas(name: str, g: dict, i: int) -> dict:
    """Group ``i`` with PyTorch's ``betas=(b1, b2)`` as ``beta1`` and ``beta2``."""
    betas = g["betas"]
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise TypeError(
            f"{name}.setup: group {i}: betas={betas!r}: give two numbers (beta1, beta2)."
        )
    if "beta1" in g or "beta2" in g:
        raise TypeError(
            f"{name}.setup: group {i}: give betas=(beta1, beta2) or beta1=/beta2=, not both."
        )
    out = {k: v for k, v in g.items() if k != "betas"}
    out["beta1"], out["beta2"] = betas
    return out


def make_group(opt: Any, g: Any, i: int) -> ParamGroup:
    """Group ``i`` of ``setup``'s list as the optimizer keeps it (checked, defaults filled).

    Args:
        opt: the optimizer being set up.
        g: the group dict given to ``setup``.
        i: the group's index, for error messages.

    Returns:
        The group dict the optimizer keeps.

    Raises:
        ValueError: ``g`` is not a dict with ``"params"``, has unknown keys, or gives two
            values under two names of one hyperparameter (Adam's ``lr`` and ``alpha``).
        TypeError: its params are not Parameters, a hyperparameter is not a number, or
            PyTorch's ``betas`` (taken as ``beta1`` and ``beta2`` where the optimizer has
            them) is not two numbers or comes with ``beta1``/``beta2``.
    """
    name = type(opt).__name__
    if not isinstance(g, dict) or "params" not in g:
        raise ValueError(
            f'{name}.setup: group {i} must be a dict with a "params" entry, got {g!r:.80}.'
        )
    specs = type(opt).hyperparameter_specs()
    known = {n: spec.key for n, spec in specs.items()}
    if "betas" in g and "beta1" in known and "beta2" in known:
        g = _split_betas(name, g, i)
    unknown = [k for k in g if k not in known and k not in ("params", "param_names")]
    if unknown:
        raise ValueError(
            f"{name}.setup: group {i} has unknown keys {unknown}; {name} takes {sorted(known)}."
        )
    group = ParamGroup(opt.defaults)
    params = g["params"]
    if isinstance(params, dict):
        group["param_names"] = list(params)
        params = list(params.values())
    if hasattr(params, "params"):
        group["params"] = LiveParams(params)
    else:
        group["params"] = check_params(name, params, f"group {i}'s params")
    given: dict[str, tuple[str, float]] = {}  # group key -> (the name it came as, value)
    for k, v in g.items():
        if k in known:
            key, value = known[k], check_hyper(name, k, v, spec_of(specs, k))
            if key in given and given[key][1] != value:  # Adam's lr and alpha
                first, was = given[key]
                raise ValueError(
                    f"{name}.setup: group {i} gives {first}={was!r} and {k}={value!r}, two "
                    f"names of the same hyperparameter; give only one."
                )
            given[key] = (k, value)
            group[key] = value
        elif k == "param_names":
            group[k] = list(v)
    return group
