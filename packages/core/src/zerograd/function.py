"""``Function``: the base class of every differentiable operation."""

from __future__ import annotations

import weakref
from typing import Any

from . import backends as _backends
from .backends.errors import BackendMismatchError
from .backends.registry import registry as _registry
from .config import _enable_backprop
from .variable import Constant, Variable, as_array

_by_type = _registry.by_type
_new = object.__new__


class Function:
    """A differentiable operation: ``forward`` on arrays, ``backward`` on Variables.

    Calling a Function runs ``forward`` on the inputs' data and, when backprop is
    enabled, records itself as the creator of its outputs. Outputs are held weakly, so
    dropping the last output frees the graph behind it. ``backward`` receives output
    gradients as Variables and returns input gradients as Variables, which is what makes
    every gradient differentiable again.

    Examples:
        >>> import numpy as np
        >>> class Square(Function):
        ...     def forward(self, x):
        ...         return x ** 2
        ...     def backward(self, gy):
        ...         x, = self.inputs
        ...         return 2 * x * gy
        >>> Square()(Variable(np.array(3.0)))
        variable(9.0)
    """

    # Slots keep the per-op object small and fast; __dict__ stays for subclasses' own state.
    __slots__ = ("inputs", "outputs", "generation", "__dict__", "__weakref__")

    def __call__(self, *inputs: Any) -> Any:
        """Apply the function to ``inputs`` and record it as the outputs' creator.

        Args:
            *inputs: Variables, or raw arrays, scalars and lists (wrapped as Constants).

        Returns:
            One output Variable, or a list of them when ``forward`` returns a tuple.

        Raises:
            TypeError: An input holds no data or non-numeric data.
            BackendMismatchError: The inputs' arrays belong to different backends.
        """
        # This is the hot path of every operation: keep it free of avoidable calls.
        try:
            n = len(inputs)
            if n == 1:
                x = inputs[0]
                if not isinstance(x, Variable):
                    inputs = _wrap(self, inputs)
                    x = inputs[0]
                ys = self.forward(x.data)
            elif n == 2:
                a, b = inputs
                if not isinstance(b, Variable):  # x * 2.0, x + array: the common raw operand
                    if isinstance(a, Variable):
                        try:
                            b = Constant(as_array(b, like=a.data))
                        except TypeError as exc:
                            raise _operand_error(self, 1, exc) from None
                        inputs = (a, b)
                    else:
                        inputs = _wrap(self, inputs)
                        a, b = inputs
                elif not isinstance(a, Variable):
                    try:
                        a = Constant(as_array(a, like=b.data))
                    except TypeError as exc:
                        raise _operand_error(self, 0, exc) from None
                    inputs = (a, b)
                xa, xb = a.data, b.data
                if type(xa) is not type(xb):
                    _check_one_backend(self, (xa, xb))
                ys = self.forward(xa, xb)
            else:
                for x in inputs:
                    if not isinstance(x, Variable):
                        inputs = _wrap(self, inputs)
                        break
                xs = tuple([x.data for x in inputs])
                t = type(xs[0])
                for x in xs:
                    if type(x) is not t:
                        _check_one_backend(self, xs)
                        break
                ys = self.forward(*xs)
        except Exception as exc:
            _diagnose(self, inputs, exc)
            raise
        if type(ys) is tuple:
            return self._finish_many(inputs, ys)
        # built without Variable.__init__: forward results need no dtype check
        output = _new(Variable)
        output.data = ys if type(ys) in _by_type else _fix_output(ys, [x.data for x in inputs])
        output.name = output.grad = None
        if _enable_backprop.get():
            if n == 1:
                gen = inputs[0].generation
            elif n == 2:
                gen = inputs[0].generation
                if inputs[1].generation > gen:
                    gen = inputs[1].generation
            else:
                gen = max([x.generation for x in inputs])
            self.generation = gen
            output.creator = self
            output.generation = gen + 1
            self.inputs = inputs
            self.outputs = (weakref.ref(output),)
        else:
            output.creator = None
            output.generation = -1  # made with no graph: Variable.backward refuses it
        return output

    def _finish_many(self, inputs: tuple, ys: tuple) -> list[Variable]:
        xs = [x.data for x in inputs]
        outputs = [Variable(y if type(y) in _by_type else _fix_output(y, xs)) for y in ys]
        if _enable_backprop.get():
            gen = max([x.generation for x in inputs])
            self.generation = gen
            for output in outputs:
                output.creator = self
                output.generation = gen + 1
            self.inputs = inputs
            self.outputs = tuple([weakref.ref(output) for output in outputs])
        else:
            for output in outputs:
                output.generation = -1  # made with no graph: Variable.backward refuses it
        return outputs

    def forward(self, *xs: Any) -> Any:
        """Compute the outputs from the inputs' arrays; subclasses override it.

        Args:
            *xs: The inputs' data, one backend array per input.

        Returns:
            One array, or a tuple of arrays for several outputs.

        Raises:
            NotImplementedError: The subclass does not define it.
        """
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, *gys: Any) -> Any:
        """Compute the inputs' gradients from the outputs' gradients; subclasses override it.

        Args:
            *gys: One gradient Variable per output.

        Returns:
            One gradient Variable, or a tuple with one per input (None for an input that
            needs none).

        Raises:
            NotImplementedError: The subclass does not define it.
        """
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} generation={getattr(self, 'generation', 0)}>"


def _wrap(func: Function, inputs: tuple) -> tuple[Variable, ...]:
    """Wrap raw arrays, scalars and lists as Constants.

    They follow the first Variable's backend and (for Python scalars) dtype: ``x * 2.0``
    stays float32 when ``x`` is.
    """
    like = None
    for v in inputs:
        if isinstance(v, Variable) and v.data is not None:
            like = v.data
            break
    out = []
    for i, x in enumerate(inputs):
        if not isinstance(x, Variable):
            try:
                x = Constant(as_array(x, like=like))
            except TypeError as exc:
                raise _operand_error(func, i, exc) from None
        out.append(x)
    return tuple(out)


def _diagnose(func: Function, inputs: tuple, exc: Exception) -> None:
    """Raise a clearer error than ``exc`` for the input mistakes it can name.

    Those are: an input Variable that holds no data, data that is not an array (assigned by
    hand: ``x.data = "abc"``) or of a non-numeric dtype (an object array given as an
    operand), and integers raised to a negative integer power.
    """
    name = type(func).__name__
    if isinstance(exc, ValueError) and "negative integer powers" in str(exc):
        raise ValueError(
            f"{name}: integer data to a negative integer power has no integer result; use a "
            f"float exponent (x ** -1.0) or float data (x.astype(float))."
        ) from exc
    for i, x in enumerate(inputs):
        if isinstance(x, Variable) and x.data is None:
            raise TypeError(
                f"{name}: input {i} is a Variable whose data is None; give it "
                f"an array first (x.data = ...)."
            ) from exc
        if isinstance(x, Variable) and type(x.data) not in _by_type:
            try:
                _backends.backend_of(x.data)
            except TypeError:
                d = x.data
                raise TypeError(
                    f"{name}: input {i} is a Variable whose data is "
                    f"{type(d).__module__}.{type(d).__qualname__} ({d!r:.40}), not an array of "
                    f"an installed backend; assign arrays to x.data (e.g. numpy.asarray(...))."
                ) from exc
        dtype = getattr(getattr(x, "data", None), "dtype", None)
        if dtype is not None and type(x.data) in _by_type:
            if _by_type[type(x.data)].dtype_kind(dtype) not in "biufc":
                raise TypeError(
                    f"{name}: input {i} has dtype {dtype}, which zerograd cannot compute with; "
                    f"give bool, integer, float or complex data."
                ) from exc


def _operand_error(func: Function, i: int, exc: Exception) -> TypeError:
    return TypeError(f"{type(func).__name__}: input {i}: {exc}")


def _fix_output(y: Any, xs: list) -> Any:
    """Turn a forward result that is not a backend array (a numpy scalar) into one.

    The array is made on the backend of the first input that is an array. Inputs may be
    numpy scalars themselves: the book's Newton loop assigns
    ``x.data = x.data - gx.data / gx2.data`` (step 33).
    """
    for x in xs:
        backend = _by_type.get(type(x))
        if backend is not None:
            return backend.asarray(y)
    return as_array(y)


def _check_one_backend(func: Function, xs: list) -> None:
    names = []
    for x in xs:
        backend = _backends.backend_of(x)
        if backend.name not in names:
            names.append(backend.name)
    if len(names) > 1:
        types = ", ".join(f"{type(x).__module__}.{type(x).__qualname__}" for x in xs)
        raise BackendMismatchError(
            f"{type(func).__name__}: inputs live on different backends ({', '.join(names)}; "
            f"types {types}). Move them to one first, e.g. x.to_cpu() or x.to_gpu()."
        )
