"""Numerical gradients and gradient checks, first and second order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import as_numpy, backend_of
from ..utils import data_of
from ..variable import Variable, as_variable


def array_equal(a: Any, b: Any) -> bool:
    """Whether two arrays, Variables, numbers or lists hold equal values and shapes.

    As DeZero's ``array_equal`` (``numpy.array_equal``: no broadcasting); the two may be of
    any backends.

    Args:
        a: An array, Variable, number or list.
        b: Another.

    Returns:
        True when shapes and values are equal.

    Examples:
        >>> import numpy as np
        >>> array_equal(np.array([1.0, 2.0]), [1, 2])
        True
    """
    import numpy as np

    return bool(np.array_equal(as_numpy(a), as_numpy(b)))


def array_allclose(a: Any, b: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Whether two arrays, Variables, numbers or lists are equal within tolerances.

    They may be of any backends, and broadcast as DeZero's ``array_allclose``
    (``numpy.allclose``) does.

    Args:
        a: An array, Variable, number or list.
        b: Another.
        rtol: The relative tolerance.
        atol: The absolute tolerance.

    Returns:
        True when ``|a - b| <= atol + rtol * |b|`` everywhere.

    Examples:
        >>> import numpy as np
        >>> array_allclose(np.ones((2, 3)), 1.0)
        True
    """
    import numpy as np

    return bool(np.allclose(as_numpy(a), as_numpy(b), rtol=rtol, atol=atol))


def numerical_grad(f: Callable[..., Any], x: Any, *args: Any, **kwargs: Any) -> Any:
    """Central-difference gradient (step 1e-4) of ``sum(f(x, *args, **kwargs))`` w.r.t. ``x``.

    Same call as DeZero's ``dezero.utils.numerical_grad``: every extra argument goes to
    ``f``.

    Args:
        f: The function; it takes a Variable and returns a Variable (or an array).
        x: The point, a Variable or an array.
        *args: More positional arguments for ``f``.
        **kwargs: Keyword arguments for ``f``.

    Returns:
        The gradient, an array of ``x``'s backend, shape and dtype.

    Examples:
        >>> import numpy as np
        >>> g = numerical_grad(lambda v: v * v, np.array([1.0, 2.0]))
        >>> bool(np.allclose(g, [2.0, 4.0]))
        True
    """
    return _numerical_grad(f, x, args, kwargs, 1e-4)


def _numerical_grad(f: Callable[..., Any], x: Any, args: tuple, kwargs: dict, eps: float) -> Any:
    import numpy as np

    data = data_of(x)
    backend = backend_of(data)
    dtype = backend.to_numpy(data).dtype
    # float64, or complex128 for complex data: a complex point steps along the real line,
    # whose quotient is f'(z) for a holomorphic f (zerograd's convention)
    wide = np.complex128 if dtype.kind == "c" else np.float64
    base = np.array(backend.to_numpy(data), dtype=wide, order="C")  # flat view below
    flat = base.reshape(-1)
    diffs = []
    for i in range(flat.size):
        old = flat[i]
        values = []
        for step in (eps, -eps):
            flat[i] = old + step
            y = f(Variable(backend.from_numpy(base.astype(dtype))), *args, **kwargs)
            out = backend.to_numpy(as_variable(y).data)
            # a complex output keeps its imaginary part, for a real point too
            values.append(out.astype(np.result_type(out.dtype, np.float64)).sum())
        flat[i] = old
        diffs.append((values[0] - values[1]) / (2 * eps))
    grad = np.array(diffs).reshape(base.shape)  # (0-d data: a 0-d array, not a scalar)
    if grad.dtype.kind != "c":
        return backend.from_numpy(grad.astype(dtype))
    return backend.from_numpy(grad.astype(np.result_type(dtype, np.complex64)))


def gradient_check(
    f: Callable[..., Any], x: Any, *args: Any, rtol: float = 1e-4, atol: float = 1e-5, **kwargs: Any
) -> bool:
    """Compare backprop's gradient of ``sum(f(x))`` with the numerical one (DeZero's API).

    As in DeZero the check runs in float64 (a copy of ``x``: the caller's data is kept);
    complex data in complex128, against the holomorphic derivative (a real step's quotient).

    Args:
        f: The function; it takes a Variable and returns a Variable.
        x: The point, a Variable or an array.
        *args: More positional arguments for ``f``.
        rtol: The relative tolerance.
        atol: The absolute tolerance.
        **kwargs: Keyword arguments for ``f``.

    Returns:
        True when they agree; otherwise False, after printing both gradients.

    Examples:
        >>> import numpy as np
        >>> gradient_check(lambda v: v ** 3, np.array([1.0, 2.0]))
        True
    """
    import numpy as np

    x = as_variable(x)
    backend = backend_of(x.data)
    wide = np.complex128 if backend.to_numpy(x.data).dtype.kind == "c" else np.float64
    x = Variable(backend.from_numpy(backend.to_numpy(x.data).astype(wide)))
    num = numerical_grad(f, x, *args, **kwargs)
    y = f(x, *args, **kwargs)
    y.backward()
    bp = x.grad.data
    ok = array_allclose(bp, num, rtol=rtol, atol=atol)
    if not ok:
        print(f"gradient_check failed:\n backprop: {bp}\n numerical: {num}")
    return ok


def check_backward(
    f: Callable[..., Any],
    *inputs: Any,
    order: int = 1,
    eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> None:
    """Assert that ``f``'s gradients match numerical ones, to first or second ``order``.

    ``f`` takes Variables (one per input array) and returns a Variable. The check contracts
    the output with a random weight so every output element counts. For ``order=2`` the
    first-order gradients (built with ``create_graph=True``) are contracted with random
    weights and differentiated again. Gradients must keep their input's dtype.

    Args:
        f: The function; it takes one Variable per input and returns a Variable.
        *inputs: The input arrays (or Variables), all of one backend.
        order: 1 or 2.
        eps: The finite-difference step; by default 1e-2 for float32 inputs, else 1e-6.
        rtol: The relative tolerance; by default 1e-2 for float32, else 1e-4.
        atol: The absolute tolerance; by default 1e-3 for float32, else 1e-6.
        seed: The seed of the random contraction weights.

    Raises:
        AssertionError: A gradient differs (the message names the input and the largest
            difference) or is missing, its dtype differs from its input's, or ``f``
            changed an input array in place.
        ValueError: ``order`` is not 1 or 2.

    Examples:
        >>> import numpy as np
        >>> check_backward(lambda v: v * v * v, np.array([0.5, 1.0]), order=2)
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    datas = [data_of(x) for x in inputs]
    backend = backend_of(datas[0])
    dtypes = [backend.to_numpy(d).dtype for d in datas]
    single = all(d == np.float32 for d in dtypes)
    eps = eps if eps is not None else (1e-2 if single else 1e-6)
    rtol = rtol if rtol is not None else (1e-2 if single else 1e-4)
    atol = atol if atol is not None else (1e-3 if single else 1e-6)

    before = [backend.to_numpy(d).copy() for d in datas]
    y0 = f(*[Variable(d) for d in datas])
    for i, (d, b) in enumerate(zip(datas, before)):
        if not np.array_equal(backend.to_numpy(d), b, equal_nan=True):
            raise AssertionError(
                f"f changed input {i} in place (it held {b}, now {backend.to_numpy(d)}): a "
                f"forward must not write into its inputs; compute a new array (y = x + 1, "
                f"not x += 1)"
            )
    weight = backend.from_numpy(
        rng.standard_normal(y0.shape).astype(backend.to_numpy(y0.data).dtype)
    )

    def scalar(*xs: Variable) -> Variable:
        return (as_variable(f(*xs)) * weight).sum()

    target = scalar
    if order == 2:
        gws = [
            backend.from_numpy(rng.standard_normal(d.shape).astype(t))
            for d, t in zip(datas, dtypes)
        ]

        def target(*xs: Variable) -> Variable:  # noqa: F811
            for x in xs:
                x.cleargrad()
            s = scalar(*xs)
            s.backward(create_graph=True)
            total = None
            for x, gw in zip(xs, gws):
                if x.grad is None:
                    continue
                term = (x.grad * gw).sum()
                total = term if total is None else total + term
            return total
    elif order != 1:
        raise ValueError(f"check_backward: order must be 1 or 2, got {order}")

    xs = [Variable(d) for d in datas]
    out = target(*xs)
    for x in xs:
        x.cleargrad()
    out.backward()
    _check_modes_agree(target, datas, [x.grad for x in xs], backend, order)
    for i, x in enumerate(xs):
        analytic = None if x.grad is None else x.grad.data
        if analytic is not None and backend.to_numpy(analytic).dtype != dtypes[i]:
            raise AssertionError(
                f"input {i}: gradient dtype {backend.to_numpy(analytic).dtype} differs from "
                f"input dtype {dtypes[i]}"
            )

        def partial(v: Variable, i: int = i) -> Variable:
            vs = [Variable(d) for d in datas]
            vs[i] = v
            return target(*vs)

        numeric = backend.to_numpy(_numerical_grad(partial, datas[i], (), {}, eps))
        numeric = numeric.astype("float64")
        got = (
            np.zeros_like(numeric)
            if analytic is None
            else backend.to_numpy(analytic).astype("float64")
        )
        if analytic is None and not np.allclose(got, numeric, rtol=rtol, atol=atol):
            raise AssertionError(
                f"order-{order} gradient of input {i} (shape {datas[i].shape}, {dtypes[i]}) "
                f"got no gradient (None) where the numerical one is\n{numeric}\n(a backward or "
                f"vjp returned None for it, or it does not reach the output)"
            )
        if not np.allclose(got, numeric, rtol=rtol, atol=atol):
            worst = float(np.max(np.abs(got - numeric)))
            raise AssertionError(
                f"order-{order} gradient of input {i} (shape {datas[i].shape}, "
                f"{dtypes[i]}) differs from the numerical one by up to {worst:.3g}:\n"
                f"analytic:\n{got}\nnumerical:\n{numeric}"
            )


def _check_modes_agree(
    target: Callable[..., Any], datas: list, grads: list, backend: Any, order: int
) -> None:
    """Assert that the array engine and the Variable engine give the same gradients.

    ``backward()`` runs each function's derivative on plain arrays; with
    ``create_graph=True`` the same derivative runs on differentiable functions. Both must
    give the same values (to rounding: the operations are the same ones).
    """
    import numpy as np

    xs = [Variable(d) for d in datas]
    out = target(*xs)
    for x in xs:
        x.cleargrad()
    out.backward(create_graph=True)
    for i, (x, g) in enumerate(zip(xs, grads)):
        if (x.grad is None) != (g is None):
            raise AssertionError(
                f"input {i}: backward() and backward(create_graph=True) disagree on whether "
                f"it has an order-{order} gradient"
            )
        if g is None:
            continue
        a = backend.to_numpy(g.data).astype("float64")
        b = backend.to_numpy(x.grad.data).astype("float64")
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True):
            raise AssertionError(
                f"input {i}: the order-{order} gradient of backward() differs from "
                f"backward(create_graph=True)'s:\narrays: {a}\nVariables: {b}"
            )
