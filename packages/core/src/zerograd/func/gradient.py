"""``grad``, ``value_and_grad``, ``grad_and_value``: a scalar function's gradient as a function."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import Any

from ..checks import flag
from ..variable import Variable
from . import arguments
from .linearize import Linearization


def _split_aux(out: Any, op: str) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = (
            f"a {type(out).__name__} of {len(out)}"
            if isinstance(out, (tuple, list))
            else (type(out).__name__)
        )
        raise TypeError(
            f"{op}(has_aux=True): the function must return a pair (output, aux), got {got}; "
            f"return (output, aux), or leave has_aux False."
        )
    return out[0], out[1]


def check_scalar(out: Any, op: str) -> None:
    """Refuse an output of ``op`` that is not one number (a Variable, array or number, shape ())."""
    if not isinstance(out, (Variable, numbers.Number)) and not hasattr(out, "shape"):
        hint = {
            type(None): " (a missing return?)",
            tuple: "; return the output alone, or (output, aux) with has_aux=True",
            list: "; return the output alone, or (output, aux) with has_aux=True",
        }.get(type(out), "")
        raise TypeError(
            f"{op}: the function must return a scalar (a Variable, an array or a number), "
            f"got {type(out).__name__}{hint}."
        )
    shape = tuple(getattr(out, "shape", ()))
    if shape:
        raise ValueError(
            f"{op}: the function must return a scalar (shape ()), got shape {shape}; for the "
            f"derivatives of a non-scalar output use vjp (one cotangent) or jacrev (all of "
            f"them), or reduce it first (.sum())."
        )


def value_and_grad_call(
    f: Callable[..., Any],
    nums: tuple[int, ...],
    single: bool,
    has_aux: bool,
    op: str,
    args: tuple,
    kwargs: dict,
) -> tuple[Any, Any, Any]:
    """``(value, gradients, aux)`` of ``f`` at ``args``: what grad and value_and_grad return."""
    nums = arguments.resolve(nums, len(args), op)
    leaves, paths, trees = arguments.differentiated(args, nums)
    lin = Linearization(op, leaves, paths)
    call_args = arguments.replaced(args, nums, trees, lin.standins)
    out = lin.call(f, *call_args, **kwargs)
    lin.release()
    aux = None
    if has_aux:
        out, aux = _split_aux(out, op)
    check_scalar(out, op)
    caught = lin.walk([out], [None])
    grads = [lin.result(i, g) for i, g in enumerate(caught)]
    value = lin.give(out)
    return value, arguments.regroup(trees, grads, single), lin.finish(aux) if has_aux else None


def grad(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The gradient of the scalar function ``f``, as a function of ``f``'s arguments.

    ``grad(f)(x)`` is d f(x) / dx. Arguments may be arrays, numbers or Variables, or tuples,
    lists and dicts of them (a model's parameters); the gradient has the argument's
    structure, arrays for arrays and Variables for Variables. A Variable argument stays
    connected: the gradient can be differentiated again, by ``backward()`` or by another
    transform (``grad(grad(f))``). Inside another transform's function the results are
    Variables, which that transform differentiates (``f`` may read its argument). No
    Variable's ``grad`` changes, and Variables ``f`` reads from outside its arguments count
    as constants.

    An output that does not depend on an argument (or an output that is not a Variable)
    gives zeros, as JAX and ``torch.func`` do. A complex output gives the holomorphic
    derivative ``f'(z)``, as ``backward()`` does (JAX's ``grad`` asks for
    ``holomorphic=True`` there; see "Complex numbers" in From PyTorch).

    Args:
        f: a function returning a scalar (shape ()), or ``(scalar, aux)`` with ``has_aux``.
        argnums: the position of the argument to differentiate, or a tuple of positions
            (the gradient is then a tuple).
        has_aux: ``f`` returns a pair ``(output, aux)``. The aux is data, not
            differentiated, returned in its structure (tuples, lists, dicts): each Variable
            in it comes as its array where the arguments are arrays (inside ``vmap`` too),
            as a Variable connected to them where they are Variables (as ``torch.func``
            does); other leaves (numbers, strings) unchanged.

    Returns:
        A function with ``f``'s arguments returning the gradient (``(gradient, aux)`` with
        ``has_aux``).

    Raises:
        TypeError: ``f`` is not callable; ``argnums`` is not an int or a tuple of ints; (when
            called) an argument to differentiate is not floating point; ``has_aux`` and
            ``f`` returned no pair.
        ValueError: (when called) ``argnums`` is out of range; the output is not a scalar.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import grad
        >>> grad(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
        array([ 3., 12.])
        >>> grad(grad(lambda x: x ** 3))(2.0)
        array(12.)
    """
    return _transform(f, argnums, has_aux, "grad", _grad_only)


def value_and_grad(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``f``'s value and gradient from one evaluation (JAX's ``value_and_grad``).

    Args:
        f: as for :func:`grad`.
        argnums: as for :func:`grad`.
        has_aux: as for :func:`grad`.

    Returns:
        A function returning ``(value, gradient)``, or ``((value, aux), gradient)`` with
        ``has_aux``; the value is an array when every argument differentiated is one.

    Raises:
        TypeError: as for :func:`grad`.
        ValueError: as for :func:`grad`.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import value_and_grad
        >>> value_and_grad(lambda x: (x * x).sum())(np.array([1.0, 2.0]))
        (array(5.), array([2., 4.]))
    """
    return _transform(f, argnums, has_aux, "value_and_grad", _value_first)


def grad_and_value(
    f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``f``'s gradient and value from one evaluation, in torch.func's order.

    :func:`value_and_grad`'s results the other way round, as ``torch.func.grad_and_value``
    gives them: ``(gradient, value)``, and with ``has_aux`` ``(gradient, (value, aux))``
    (``value_and_grad`` gives ``((value, aux), gradient)``).

    Args:
        f: as for :func:`grad`.
        argnums: as for :func:`grad` (a tuple gives a tuple of gradients).
        has_aux: as for :func:`grad`.

    Returns:
        A function returning ``(gradient, value)``, or ``(gradient, (value, aux))`` with
        ``has_aux``; the value is an array when every argument differentiated is one.

    Raises:
        TypeError: as for :func:`grad`.
        ValueError: as for :func:`grad`.

    Examples:
        >>> import numpy as np
        >>> from zerograd.func import grad_and_value
        >>> grad_and_value(lambda x: (x * x).sum())(np.array([1.0, 2.0]))
        (array([2., 4.]), array(5.))
        >>> grad_and_value(lambda x: ((x * x).sum(), "aux"), has_aux=True)(np.array([3.0]))
        (array([6.]), (array(9.), 'aux'))
    """
    return _transform(f, argnums, has_aux, "grad_and_value", _grad_first)


def _transform(
    f: Callable[..., Any],
    argnums: int | tuple[int, ...],
    has_aux: Any,
    op: str,
    pack: Callable[[Any, Any, Any, bool], Any],
) -> Callable[..., Any]:
    """What :func:`grad`, :func:`value_and_grad` and :func:`grad_and_value` return.

    One evaluation of ``f`` (:func:`value_and_grad_call`), its results arranged by
    ``pack(value, gradient, aux, has_aux)``; the arguments are checked here, naming ``op``.
    """
    has_aux = flag(op, "has_aux", has_aux)
    nums, single = arguments.transform(f, argnums, op)

    @functools.wraps(f)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        value, g, aux = value_and_grad_call(f, nums, single, has_aux, op, args, kwargs)
        return pack(value, g, aux, has_aux)

    return transformed


def _grad_only(value: Any, g: Any, aux: Any, has_aux: bool) -> Any:
    return (g, aux) if has_aux else g


def _value_first(value: Any, g: Any, aux: Any, has_aux: bool) -> Any:
    return ((value, aux), g) if has_aux else (value, g)


def _grad_first(value: Any, g: Any, aux: Any, has_aux: bool) -> Any:
    return (g, (value, aux)) if has_aux else (g, value)
