"""Layers: ``Layer`` (a container of parameters and sub-layers) and DeZero's standard layers.

A Layer records every :class:`~zerograd.Parameter` and sub-Layer assigned to it as an
attribute, in definition order; :meth:`Layer.params` walks them, and the hierarchical
names (``'l1/W'``) are what weight files store.

>>> import numpy as np
>>> layer = Linear(3)
>>> layer(np.ones((2, 4), dtype=np.float32)).shape
(2, 3)
>>> [p.name for p in layer.params()]
['W', 'b']
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

from zerograd import Config, Parameter, Variable, using_config
from zerograd.backends import (
    Backend,
    as_array_of,
    backend_of,
    device_of,
    get_array_module,
    get_backend,
    gpu_backend,
)
from zerograd.utils import data_of

from . import functional as F
from . import initializers as _init
from . import inspection as _inspection
from . import state_dict as _state
from . import weights as _weights
from .functional.utils import array_arg, conv_args, pair, positive_int


def _ref(x: Any) -> Any:
    try:
        return weakref.ref(x)
    except TypeError:  # Python scalars cannot be weakly referenced
        return None


class Layer:
    """Base class of every layer: holds Parameters and sub-Layers, in definition order.

    Layers (and Parameters) kept in a list or tuple attribute count too, named by index
    (``self.blocks = [Linear(3), Linear(3)]`` gives ``blocks.0.W``). Layers pickle and
    ``copy.deepcopy`` (the references to the last call's inputs and outputs are dropped,
    and a state Variable such as an RNN's ``h`` is copied without its graph).
    """

    _eval_mode = False  # set by eval() on the instance; see train()

    def __init__(self) -> None:
        object.__setattr__(self, "_params", [])

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        names = d.get("_params")
        if names is None:  # a subclass forgot super().__init__(): set things up now
            names = []
            object.__setattr__(self, "_params", names)
        if isinstance(value, (Parameter, Layer)):
            if name not in names:
                names.append(name)
        elif name in names:
            names.remove(name)
        if isinstance(value, (list, tuple)):
            lists = d.get("_lists")
            if lists is None:
                lists = []
                object.__setattr__(self, "_lists", lists)
            if name not in lists:
                lists.append(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for key in ("_params", "_lists"):
            names = self.__dict__.get(key, [])
            if name in names:
                names.remove(name)
        object.__delattr__(self, name)

    def __call__(self, *inputs: Any) -> Any:
        """Run :meth:`forward` on ``inputs`` and keep weak references to inputs and outputs.

        Args:
            *inputs: the inputs of :meth:`forward` (Variables or arrays).

        Returns:
            The single output, or a tuple when :meth:`forward` returns several.
        """
        if self._eval_mode:
            with using_config("train", False):  # this context only: Config is per thread/task
                outputs = self.forward(*inputs)
        else:
            outputs = self.forward(*inputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        object.__setattr__(self, "inputs", [_ref(x) for x in inputs])
        object.__setattr__(self, "outputs", [_ref(y) for y in outputs])
        return outputs if len(outputs) > 1 else outputs[0]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("inputs", None)  # weak references to the last call: not part of the model
        state.pop("outputs", None)
        for k, v in state.items():
            if type(v) is Variable and v.creator is not None:
                state[k] = Variable(v.data, name=v.name)  # a graph is not copied
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def forward(self, *inputs: Any) -> Any:
        """Compute the outputs; subclasses implement this.

        Args:
            *inputs: the arguments the layer was called with.

        Returns:
            A Variable or a tuple of Variables.

        Raises:
            NotImplementedError: on a subclass that does not override it.
        """
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    # -- looking at a model (zerograd_nn.inspection) -------------------------------------
    def extra_repr(self) -> str:
        """The settings shown inside this layer's ``repr`` (``'in=3, out=4'``); override it."""
        return ""

    def __repr__(self) -> str:
        """A tree like PyTorch's: ``Type(settings)``, then ``(name): child`` per sub-layer."""
        return _inspection.layer_repr(self)

    def count_params(self) -> int:
        """The number of scalars in this layer's parameters, sub-layers included.

        Shared parameters count once; a lazily sized layer counts 0 until its first call
        (:meth:`summary` makes that call). BatchNorm's running statistics are Parameters
        here, so they count too.

        Returns:
            The total element count.

        Examples:
            >>> Linear(3, in_size=4).count_params()
            15
        """
        return _inspection.count_params(self)

    def summary(self, *inputs: Any, verbose: bool = True, file: TextIO | None = None) -> Any:
        """Run ``self(*inputs)`` and print a table of every layer's output shape and parameters.

        The forward pass runs under ``no_grad()`` and ``test_mode()``, so it records no
        graph and leaves batch-norm statistics alone; it does size lazily sized layers.

        Args:
            *inputs: inputs for one forward pass (a small batch is enough).
            verbose: print the table.
            file: where to print it (default: the current ``sys.stdout``).

        Returns:
            A :class:`~zerograd_nn.inspection.ModelSummary` (``rows``, ``total_params``).
        """
        return _inspection.summarize(self, inputs, file, verbose)

    @property
    def training(self) -> bool:
        """Whether this layer's forward runs in train mode here: ``Config.train`` and not eval.

        Returns:
            True in train mode.
        """
        return bool(Config.train) and not self._eval_mode

    def train(self, mode: bool = True) -> Layer:
        """Put this layer and its sub-layers in train mode (``mode=True``) or eval mode.

        Eval mode makes every call of the layer run as inside ``test_mode()`` (dropout off,
        batch norm on its running statistics). Train mode only lifts that: the layer then
        follows ``Config.train``, so ``with test_mode():`` still switches it to test mode.
        A layer trains only where both agree. The switch is set inside each call and undone
        after it, in the calling thread or task only: other threads' ``Config`` never changes.

        Args:
            mode: True for train mode, False for eval mode.

        Returns:
            This layer.
        """
        value = not mode
        for *_, member in self.walk():
            if isinstance(member, Layer):
                object.__setattr__(member, "_eval_mode", value)
        return self

    def eval(self) -> Layer:
        """Put this layer and its sub-layers in eval mode (``train(False)``).

        Returns:
            This layer.
        """
        return self.train(False)

    # -- what a layer holds: the protocol every walk over a model uses ------------------
    def named_members(self) -> Iterator[tuple[str, Parameter | Layer]]:
        """This layer's own Parameters and sub-layers with their names, in definition order.

        Attributes come first, in the order they were set; then the Parameters and layers
        held in list or tuple attributes, named by index (``'blocks.0'``). A member held
        under two names comes under each.

        Yields:
            ``(name, Parameter or Layer)`` pairs.
        """
        d = self.__dict__
        for name in d.get("_params", ()):
            yield name, d[name]
        for name in d.get("_lists", ()):
            for i, item in enumerate(d.get(name, ())):
                if isinstance(item, (Parameter, Layer)):
                    yield f"{name}.{i}", item

    def named_children(self) -> Iterator[tuple[str, Layer]]:
        """This layer's direct sub-layers with their names, in definition order, once each.

        Yields:
            ``(name, sub-layer)`` pairs; a layer held under two names comes under the first.
        """
        seen: set[int] = set()
        for name, member in self.named_members():
            if isinstance(member, Layer) and id(member) not in seen:
                seen.add(id(member))
                yield name, member

    def walk(self) -> Iterator[tuple[str, str, int, Parameter | Layer]]:
        """Walk this layer's tree depth first, in definition order: the one walk of a model.

        Parameters, :meth:`named_params`, state dicts, weight files, ``repr``,
        :meth:`summary` and :meth:`train` all read the model through it.

        Yields:
            ``(dotted name, local name, depth, member)``: first ``('', '', 0, self)``, then
            each member of :meth:`named_members` (a sub-layer followed by its own tree, each
            sub-layer once per holder as :meth:`named_children` lists them).
        """
        return _walk(self, "", "", 0)

    def params(self) -> Iterator[Parameter]:
        """Every Parameter of this layer and its sub-layers, in definition order, once each."""
        return iter(self.named_params().values())

    def named_params(self) -> dict[str, Parameter]:
        """``{dotted name: Parameter}`` in definition order: ``'l1.W'``, ``'blocks.0.b'``.

        Returns:
            The same Parameters as :meth:`params`, each under its attribute path.

        Examples:
            >>> import numpy as np
            >>> from zerograd_nn.models import MLP
            >>> list(MLP((3, 2)).named_params())
            ['l0.W', 'l0.b', 'l1.W', 'l1.b']
        """
        params: dict[str, Parameter] = {}
        seen: set[int] = set()
        for name, _, _, member in self.walk():
            if isinstance(member, Parameter) and id(member) not in seen:
                seen.add(id(member))
                params[name] = member
        return params

    def state_dict(self) -> dict[str, Any]:
        """``{dotted name: copy of the parameter's array}`` (see :mod:`zerograd_nn.state_dict`).

        Returns:
            Copies on the parameters' backends; parameters with no data yet are left out.
        """
        return _state.state_dict(self)

    def load_state_dict(self, d: Mapping[str, Any], strict: bool = True) -> _state.LoadResult:
        """Set the parameters from ``d`` (as :meth:`state_dict` returns), all or nothing.

        Arrays of any backend are converted to each parameter's backend and dtype.

        Args:
            d: ``{dotted name: array}``.
            strict: refuse names missing from ``d`` or unknown to the model; with False
                they are skipped and returned.

        Returns:
            ``LoadResult(missing, unexpected)``: the names that were skipped.

        Raises:
            ValueError: a name (``strict``), shape or dtype does not fit; nothing changed.
            TypeError: ``d`` is not a mapping.
        """
        return _state.load_state_dict(self, d, strict, owner=type(self).__name__)

    def cleargrads(self) -> None:
        """Forget every parameter's gradient."""
        for param in self.params():
            param.cleargrad()

    def to(self, backend: Any) -> Layer:
        """Move every parameter (and gradient) to ``backend``.

        All arrays are converted before any is assigned, so a failed conversion leaves every
        parameter where it was.

        Args:
            backend: a backend name (``"numpy"``, ``"cupy"``, ...) or a Backend.

        Returns:
            This layer.
        """
        moves = []
        for param in self.params():
            if param.data is None:
                continue
            data = as_array_of(param.data, backend)
            grad = None if param.grad is None else as_array_of(param.grad.data, backend)
            moves.append((param, data, grad))
        for param, data, grad in moves:  # nothing below can fail: all move at once
            param.data = data
            if grad is not None:
                param.grad.data = grad
        return self

    def to_cpu(self) -> Layer:
        """Move every parameter to the CPU (the default backend).

        Returns:
            This layer.
        """
        return self.to(get_backend())

    def to_gpu(self) -> Layer:
        """Move every parameter to the GPU backend; a clear error when none can be used.

        Returns:
            This layer.
        """
        return self.to(gpu_backend())

    def _flatten_params(self, params_dict: dict, parent_key: str = "") -> None:
        """Fill ``params_dict`` with ``{'sub/name': Parameter}`` (weight-file names; DeZero's)."""
        prefix = parent_key + "/" if parent_key else ""
        params_dict.update({prefix + k: p for k, p in _weights.named_params(self).items()})

    def save_weights(self, path: str | os.PathLike) -> None:
        """Write the parameters to an ``.npz`` file, atomically (see :mod:`zerograd_nn.weights`).

        Args:
            path: the file to write (``.npz`` is added if missing).
        """
        _weights.save_weights(self, path)

    def load_weights(self, path: str | os.PathLike) -> None:
        """Read weights written by :meth:`save_weights` (checked; all or nothing).

        Args:
            path: the file to read.
        """
        _weights.load_weights(self, path)


def _walk(layer: Layer, prefix: str, label: str, depth: int) -> Iterator[tuple]:
    """:meth:`Layer.walk` from ``layer``, named ``prefix`` (``label`` locally) at ``depth``."""
    yield prefix, label, depth, layer
    seen: set[int] = set()
    for name, member in layer.named_members():
        full = f"{prefix}.{name}" if prefix else name
        if not isinstance(member, Layer):
            yield full, name, depth + 1, member
        elif id(member) not in seen:
            seen.add(id(member))
            yield from _walk(member, full, name, depth + 1)


def _backend_of(like: Any) -> Backend:
    """The backend of ``like`` (a Variable or an array), the default one for ``None``."""
    if like is None:
        return get_backend()
    return backend_of(data_of(like))


def _randn(backend: Backend, shape: tuple, dtype: Any, scale: float) -> Any:
    """Standard-normal weights of ``dtype`` scaled by ``scale`` (kept in ``dtype``)."""
    w = backend.randn(*shape)
    return backend.astype(w, dtype) * scale


def _bias(layer: Layer, value: Any, size: int, dtype: Any) -> Parameter:
    """The bias Parameter: zeros (DeZero's) or from ``initial_bias``."""
    if value is None:
        return Parameter(get_backend().xp.zeros(size, dtype=dtype), "b")
    name = type(layer).__name__
    return Parameter(_init.generate(value, (size,), dtype, None, name, "initial_bias"), "b")


@contextmanager
def _undo_on_error(layer: Layer, names: tuple[str, ...], params: tuple[Any, ...]) -> Iterator[None]:
    """Restore ``layer``'s attributes ``names`` and the data of ``params`` if the block raises.

    Wraps a lazy first call (sizing, then the forward pass): a call that fails leaves the
    layer unsized, so a later call with a correct input sizes it afresh.
    """
    attrs = {n: getattr(layer, n) for n in names}
    saved = [(p, p.data) for p in params if p is not None]
    try:
        yield
    except BaseException:
        for n, v in attrs.items():
            setattr(layer, n, v)
        for p, data in saved:
            p.data = data
        raise


def _size(layer: Layer, name: str, v: Any, optional: bool = False) -> int | None:
    """Constructor argument ``name`` checked as a positive int (None allowed if ``optional``)."""
    if v is None and optional:
        return None
    return positive_int(type(layer).__name__, name, v)


def _settings(layer: Layer, nobias: Any, dtype: Any) -> None:
    """Check a layer's ``nobias`` (a bool) and ``dtype`` (a floating-point dtype)."""
    name = type(layer).__name__
    if type(nobias).__name__ not in ("bool", "bool_"):
        raise TypeError(f"{name}: nobias must be True or False, got {nobias!r}")
    backend = get_backend()
    try:
        kind = backend.dtype_kind(backend.xp.zeros(0, dtype=dtype).dtype)
    except (TypeError, ValueError):
        kind = None
    if kind != "f":
        raise TypeError(
            f"{name}: dtype must be a floating-point dtype such as 'float32' (weights are "
            f"drawn from a normal distribution), got {dtype!r}"
        )


def _input(layer: Layer, x: Any, ndim: int, layout: str) -> Any:
    """The layer's input ``x`` (lists converted to arrays), checked for ``ndim`` dimensions.

    ``ndim`` is the fewest its forward can read sizes from; a clear error naming the layer
    otherwise (the functions it calls check the exact layout).
    """
    if not isinstance(x, Variable):
        x = array_arg(type(layer).__name__, "x", x)
    elif x.data is None:
        raise TypeError(f"{type(layer).__name__}: x is a Variable whose data is None")
    if x.ndim < ndim:
        raise ValueError(f"{type(layer).__name__}: x must be {layout}, got shape {tuple(x.shape)}.")
    return x


def _follow(param: Any, like: Any) -> None:
    """Move ``param`` to the backend of array ``like`` (lazy init on a GPU input)."""
    if param is not None and param.data is not None:
        target = backend_of(like)
        if backend_of(param.data) is not target:
            param.to(target)


class Linear(Layer):
    """Fully connected layer ``y = x @ W + b``; ``in_size`` is found at the first call if None.

    ``W`` (in_size, out_size) starts as ``randn * sqrt(1 / in_size)``, ``b`` as zeros, unless
    Chainer's ``initialW`` / ``initial_bias`` say otherwise: an initializer from
    :mod:`zerograd_nn.initializers`, a number (every element) or an array of the
    parameter's shape (copied). A first call that fails leaves the layer unsized, so the
    next call sizes it from its own input.

    Args:
        out_size: the number of output features.
        nobias: no bias ``b`` when True.
        dtype: the floating-point dtype of the parameters.
        in_size: the number of input features; None to take it from the first input.
        initialW: how to fill ``W`` (initializer, number or array).
        initial_bias: how to fill ``b`` (initializer, number or array).

    Raises:
        ValueError: a size that is not a positive int.
        TypeError: a non-bool ``nobias`` or a non-floating ``dtype``.

    Examples:
        >>> from zerograd_nn import initializers as I
        >>> Linear(3, in_size=4, initialW=I.HeNormal(), initial_bias=0.1).b.data
        array([0.1, 0.1, 0.1], dtype=float32)
    """

    def __init__(
        self,
        out_size: int,
        nobias: bool = False,
        dtype: Any = "float32",
        in_size: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        _size(self, "out_size", out_size)
        _size(self, "in_size", in_size, optional=True)
        _settings(self, nobias, dtype)
        self._initialW = _init.check(initialW, "Linear", "initialW")
        initial_bias = _init.check(initial_bias, "Linear", "initial_bias")
        self.in_size, self.out_size, self.dtype = in_size, out_size, dtype
        self.W = Parameter(None, name="W")
        if in_size is not None:
            self._init_W()
        self.b = None if nobias else _bias(self, initial_bias, out_size, dtype)

    def _init_W(self, like: Any = None) -> None:
        i, o = self.in_size, self.out_size
        if self._initialW is None:
            self.W.data = _randn(_backend_of(like), (i, o), self.dtype, (1 / i) ** 0.5)
        else:
            init, name = self._initialW, "Linear"
            self.W.data = _init.generate(init, (i, o), self.dtype, like, name, "initialW")

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        return f"in={self.in_size}, out={self.out_size}" + (
            ", nobias=True" if self.b is None else ""
        )

    def forward(self, x: Any) -> Variable:
        """Apply the layer, sizing ``W`` from ``x``'s last axis on the first call.

        Args:
            x: input of shape (N, in_size) or (N, ..., in_size).

        Returns:
            The output, of shape (N, ..., out_size).
        """
        x = _input(self, x, 1, "(N, in_size) or (N, ..., in_size)")
        if self.W.data is not None:
            return F.linear(x, self.W, self.b)
        with _undo_on_error(self, ("in_size",), (self.W, self.b)):
            self.in_size = _size(self, "in_size (the last axis of x)", x.shape[-1])
            self._init_W(x)
            _follow(self.b, self.W.data)
            return F.linear(x, self.W, self.b)


class _ConvBase(Layer):
    """Shared set-up of Conv2d and Deconv2d (lazy ``in_channels``, undone if the call fails).

    ``initialW`` / ``initial_bias`` work as in :class:`Linear`; initializers that scale by
    fans see ``fan_in = in_channels * KH * KW`` and ``fan_out = out_channels * KH * KW``.

    Args:
        out_channels: the number of output channels.
        kernel_size: the kernel size, an int or a pair (KH, KW).
        stride: the stride, an int or a pair.
        pad: the zero padding, an int or a pair.
        nobias: no bias ``b`` when True.
        dtype: the floating-point dtype of the parameters.
        in_channels: the number of input channels; None to take it from the first input.
        initialW: how to fill ``W`` (initializer, number or array).
        initial_bias: how to fill ``b`` (initializer, number or array).

    Raises:
        ValueError: a size, kernel, stride or pad that is not a positive (or, for pad,
            non-negative) int or pair.
        TypeError: a non-bool ``nobias`` or a non-floating ``dtype``.
    """

    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad: Any = 0,
        nobias: bool = False,
        dtype: Any = "float32",
        in_channels: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        _size(self, "out_channels", out_channels)
        _size(self, "in_channels", in_channels, optional=True)
        _settings(self, nobias, dtype)
        conv_args(name, kernel_size, stride, pad)
        self._initialW = _init.check(initialW, name, "initialW")
        initial_bias = _init.check(initial_bias, name, "initial_bias")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.pad, self.dtype = kernel_size, stride, pad, dtype
        self.W = Parameter(None, name="W")
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else _bias(self, initial_bias, out_channels, dtype)

    def _w_shape(self, c: int, oc: int, kh: int, kw: int) -> tuple[int, ...]:
        raise NotImplementedError

    def _init_W(self, like: Any = None) -> None:
        c, oc = self.in_channels, self.out_channels
        kh, kw = pair(self.kernel_size)
        shape = self._w_shape(c, oc, kh, kw)
        if self._initialW is None:
            scale = (1 / (c * kh * kw)) ** 0.5
            self.W.data = _randn(_backend_of(like), shape, self.dtype, scale)
        else:  # fans as for a convolution, whatever the kernel's layout
            fans = (c * kh * kw, oc * kh * kw)
            init, name = self._initialW, type(self).__name__
            self.W.data = _init.generate(init, shape, self.dtype, like, name, "initialW", fans)

    def _conv(self, x: Any) -> Variable:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        text = (
            f"in={self.in_channels}, out={self.out_channels}, kernel={self.kernel_size}, "
            f"stride={self.stride}, pad={self.pad}"
        )
        return text + (", nobias=True" if self.b is None else "")

    def forward(self, x: Any) -> Variable:
        """Apply the convolution, sizing ``W`` from ``x``'s channel axis on the first call.

        Args:
            x: input of shape (N, C, H, W).

        Returns:
            The output, of shape (N, out_channels, OH, OW).
        """
        x = _input(self, x, 2, "4-D (N, C, H, W)")
        if self.W.data is not None:
            return self._conv(x)
        with _undo_on_error(self, ("in_channels",), (self.W, self.b)):
            self.in_channels = _size(self, "in_channels (axis 1 of x)", x.shape[1])
            self._init_W(x)
            _follow(self.b, self.W.data)
            return self._conv(x)


class Conv2d(_ConvBase):
    """2-D convolution layer; ``W`` is (out_channels, in_channels, KH, KW).

    Takes the arguments of its base class (``out_channels``, ``kernel_size``, ``stride``,
    ``pad``, ``nobias``, ``dtype``, ``in_channels``, ``initialW``, ``initial_bias``).

    Examples:
        >>> import numpy as np
        >>> Conv2d(8, 3, pad=1)(np.ones((1, 3, 5, 5), dtype=np.float32)).shape
        (1, 8, 5, 5)
    """

    def _w_shape(self, c: int, oc: int, kh: int, kw: int) -> tuple[int, ...]:
        return (oc, c, kh, kw)

    def _conv(self, x: Any) -> Variable:
        return F.conv2d(x, self.W, self.b, self.stride, self.pad)


class Deconv2d(_ConvBase):
    """2-D transposed convolution layer; ``W`` is (in_channels, out_channels, KH, KW).

    Takes the same arguments as :class:`Conv2d`.

    Examples:
        >>> import numpy as np
        >>> Deconv2d(2, 2, stride=2)(np.ones((1, 3, 4, 4), dtype=np.float32)).shape
        (1, 2, 8, 8)
    """

    def _w_shape(self, c: int, oc: int, kh: int, kw: int) -> tuple[int, ...]:
        return (c, oc, kh, kw)

    def _conv(self, x: Any) -> Variable:
        return F.deconv2d(x, self.W, self.b, self.stride, self.pad)


def _check_state_batch(layer: Layer, x: Any, h: Variable | None) -> None:
    """Refuse a batch whose size differs from the one the kept state was computed for."""
    if h is None:
        return
    shape = getattr(x, "shape", None)
    if shape and h.ndim and shape[0] != h.shape[0]:
        name = type(layer).__name__
        raise ValueError(
            f"{name}: got a batch of {shape[0]} (x of shape {tuple(shape)}) but the hidden state "
            f"holds a batch of {h.shape[0]} from the previous call; call reset_state() before "
            f"feeding a sequence with another batch size."
        )


class RNN(Layer):
    """Elman RNN cell ``h = tanh(x2h(x) + h2h(h))``; the state persists until ``reset_state``.

    ``initialW`` (an initializer or a number) fills both ``x2h.W`` and ``h2h.W``;
    ``initial_bias`` fills ``x2h.b``.

    Args:
        hidden_size: the size of the hidden state.
        in_size: the input size; None to take it from the first input.
        initialW: how to fill the weights (initializer or number).
        initial_bias: how to fill the bias (initializer or number).

    Examples:
        >>> import numpy as np
        >>> rnn = RNN(4)
        >>> rnn(np.ones((2, 3), dtype=np.float32)).shape
        (2, 4)
    """

    def __init__(
        self,
        hidden_size: int,
        in_size: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        _size(self, "hidden_size", hidden_size)
        _size(self, "in_size", in_size, optional=True)
        w = _init.check(initialW, "RNN", "initialW", arrays=False)
        b = _init.check(initial_bias, "RNN", "initial_bias", arrays=False)
        self.x2h = Linear(hidden_size, in_size=in_size, initialW=w, initial_bias=b)
        # Sized like DeZero's (in_size passed through) so weights are drawn in the book's
        # order; a different in_size, which crashes DeZero, sizes it lazily instead.
        h2h_in = in_size if in_size == hidden_size else None
        self.h2h = Linear(hidden_size, in_size=h2h_in, nobias=True, initialW=w)
        self.h: Variable | None = None

    def reset_state(self) -> None:
        """Forget the hidden state (start a new sequence)."""
        self.h = None

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        return f"hidden={self.x2h.out_size}"

    def forward(self, x: Any) -> Variable:
        """Advance one time step and keep the new hidden state.

        Args:
            x: the input of this step, of shape (N, in_size).

        Returns:
            The new hidden state, of shape (N, hidden_size).

        Raises:
            ValueError: a batch size other than the kept state's (call ``reset_state``).
        """
        x = _input(self, x, 1, "(N, in_size)")
        _check_state_batch(self, x, self.h)
        if self.h is None:
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new


class LSTM(Layer):
    """LSTM cell with forget, input and output gates; state kept until ``reset_state``.

    ``initialW`` (an initializer or a number) fills the eight weight matrices;
    ``initial_bias`` fills the four biases of the ``x2*`` layers.

    Args:
        hidden_size: the size of the hidden and cell states.
        in_size: the input size; None to take it from the first input.
        initialW: how to fill the weights (initializer or number).
        initial_bias: how to fill the biases (initializer or number).
    """

    def __init__(
        self,
        hidden_size: int,
        in_size: int | None = None,
        *,
        initialW: Any = None,
        initial_bias: Any = None,
    ) -> None:
        super().__init__()
        h, i = _size(self, "hidden_size", hidden_size), _size(self, "in_size", in_size, True)
        w = _init.check(initialW, "LSTM", "initialW", arrays=False)
        b = _init.check(initial_bias, "LSTM", "initial_bias", arrays=False)
        self.x2f = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2i = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2o = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.x2u = Linear(h, in_size=i, initialW=w, initial_bias=b)
        self.h2f = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2i = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2o = Linear(h, in_size=h, nobias=True, initialW=w)
        self.h2u = Linear(h, in_size=h, nobias=True, initialW=w)
        self.reset_state()

    def reset_state(self) -> None:
        """Forget the hidden and cell states (start a new sequence)."""
        self.h: Variable | None = None
        self.c: Variable | None = None

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        return f"hidden={self.x2f.out_size}"

    def forward(self, x: Any) -> Variable:
        """Advance one time step and keep the new hidden and cell states.

        Args:
            x: the input of this step, of shape (N, in_size).

        Returns:
            The new hidden state, of shape (N, hidden_size).

        Raises:
            ValueError: a batch size other than the kept state's (call ``reset_state``).
        """
        x = _input(self, x, 1, "(N, in_size)")
        _check_state_batch(self, x, self.h)
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new


class EmbedID(Layer):
    """Lookup table: row ``W[i]`` for each integer id ``i``; ``W`` is (in_size, out_size).

    ``W`` starts as standard-normal draws, or from ``initialW`` as in :class:`Linear`.

    Args:
        in_size: the number of ids (rows of ``W``).
        out_size: the size of each embedding vector.
        initialW: how to fill ``W`` (initializer, number or array).

    Examples:
        >>> import numpy as np
        >>> EmbedID(10, 3)(np.array([1, 4])).shape
        (2, 3)
    """

    def __init__(self, in_size: int, out_size: int, *, initialW: Any = None) -> None:
        super().__init__()
        initialW = _init.check(initialW, "EmbedID", "initialW")
        shape = (_size(self, "in_size", in_size), _size(self, "out_size", out_size))
        if initialW is None:
            self.W = Parameter(_randn(get_backend(), shape, "float32", 1.0), "W")
        else:
            w = _init.generate(initialW, shape, "float32", None, "EmbedID", "initialW")
            self.W = Parameter(w, "W")

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        return f"in={self.W.shape[0]}, out={self.W.shape[1]}"

    def forward(self, x: Any) -> Variable:
        """Look up the rows of ``W``.

        Args:
            x: integer ids, of any shape.

        Returns:
            The embeddings, of shape ``x.shape + (out_size,)``.
        """
        return F.embed_id(x, self.W)


class BatchNorm(Layer):
    """Batch normalization over channels; sized at the first call that succeeds.

    ``avg_mean`` and ``avg_var`` are Parameters too, so weight files keep them, but they
    never get gradients (optimizers skip them). Chainer's ``initial_gamma`` (default 1) and
    ``initial_beta`` (default 0) take an initializer, a number or an array of the channel count.

    Args:
        initial_gamma: how to fill the scale ``gamma``.
        initial_beta: how to fill the shift ``beta``.
    """

    def __init__(self, *, initial_gamma: Any = None, initial_beta: Any = None) -> None:
        super().__init__()
        self._initializers = {
            "gamma": _init.check(initial_gamma, "BatchNorm", "initial_gamma"),
            "beta": _init.check(initial_beta, "BatchNorm", "initial_beta"),
        }
        self.avg_mean = Parameter(None, name="avg_mean")
        self.avg_var = Parameter(None, name="avg_var")
        self.gamma = Parameter(None, name="gamma")
        self.beta = Parameter(None, name="beta")

    def _init_params(self, x: Any) -> None:
        data = data_of(x)
        xp, device, d, dtype = get_array_module(data), device_of(data), x.shape[1], x.dtype
        for p, fill in ((self.avg_mean, 0), (self.avg_var, 1), (self.gamma, 1), (self.beta, 0)):
            if p.data is not None:
                continue
            value = self.__dict__.get("_initializers", {}).get(p.name)
            if value is None:
                p.data = (xp.ones if fill else xp.zeros)(d, dtype=dtype, device=device)
            else:
                key = f"initial_{p.name}"
                p.data = _init.generate(value, (d,), dtype, x, "BatchNorm", key)

    def extra_repr(self) -> str:
        """This layer's sizes and settings, shown inside its ``repr``."""
        return f"size={None if self.gamma.data is None else self.gamma.shape[0]}"

    def forward(self, x: Any) -> Variable:
        """Normalize ``x`` (batch statistics in train mode, running averages in eval mode).

        Args:
            x: input of shape (N, C) or (N, C, ...).

        Returns:
            The normalized, scaled and shifted output, of ``x``'s shape.
        """
        x = _input(self, x, 2, "(N, C) or (N, C, ...)")
        params = (self.avg_mean, self.avg_var, self.gamma, self.beta)
        if all(p.data is not None for p in params):
            return F.batch_norm(x, self.gamma, self.beta, self.avg_mean, self.avg_var)
        with _undo_on_error(self, (), params):
            self._init_params(x)
            return F.batch_norm(x, self.gamma, self.beta, self.avg_mean, self.avg_var)


__all__ = ["BatchNorm", "Conv2d", "Deconv2d", "EmbedID", "LSTM", "Layer", "Linear", "RNN"]
