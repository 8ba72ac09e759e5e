"""``Layer``: a container of Parameters and sub-layers, in definition order.

A Layer records every :class:`~zerograd.Parameter` and sub-Layer assigned to it as an
attribute; :meth:`Layer.named_members`, :meth:`Layer.named_children` and
:meth:`Layer.walk` are what everything that reads a model (parameters, state dicts,
weight files, ``repr``, ``summary``) goes through.
"""

from __future__ import annotations

import inspect
import operator
import os
import warnings
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from zerograd import Config, Parameter, Variable, using_config
from zerograd.backends import Backend, as_array_of, get_backend, gpu_backend
from zerograd.checks import flag
from zerograd.recording import current as _recorder
from zerograd.recording import replaced as _replaced
from zerograd.recording import switch as _recording

from .. import inspection as _inspection
from .. import state_dict as _state
from .. import weights as _weights
from ..listing import listed
from ..ties import find_ties, restore_ties

if TYPE_CHECKING:  # (typing.Self is Python 3.11+; checkers know typing_extensions)
    from typing_extensions import Self

_eval_mode_of = operator.attrgetter("_eval_mode")  # what a replay checks of each layer it ran
_TIES = "_zerograd_ties"  # the key of a copied layer's state holding find_ties' groups


def _holds_members(items: Any) -> bool:
    return isinstance(items, (list, tuple)) and any(
        isinstance(x, (Parameter, Layer)) for x in items
    )


def _holds_hidden(value: Any, depth: int = 0) -> bool:
    """Whether a container ``value`` holds a layer or Parameter at any depth (up to 3)."""
    if isinstance(value, (Parameter, Layer)):
        return True
    if depth > 2:
        return False
    if type(value) is dict:
        return any(_holds_hidden(v, depth + 1) for v in value.values())
    if type(value) in (list, tuple):
        return any(_holds_hidden(v, depth + 1) for v in value)
    return False


def _warn_of_hidden_members(layer: Layer) -> None:
    """Warn of layers or Parameters held where they are not members.

    That is, in a dict attribute, or in a container nested in a list or tuple attribute
    (only its direct items count).
    """
    for name, value in layer.__dict__.items():
        if type(value) is dict:
            where = [k for k, v in value.items() if _holds_hidden(v)]
            what = "a dict holding layers or Parameters"
        elif type(value) in (list, tuple):
            where = [i for i, v in enumerate(value) if type(v) in (list, tuple, dict)]
            where = [i for i in where if _holds_hidden(value[i])]
            what = f"a {type(value).__name__} whose items hold layers or Parameters in containers"
        else:
            continue
        if where:
            warnings.warn(
                f"{type(layer).__name__}.{name} is {what} (at {tuple(where)}); they are not "
                f"part of the model (params(), optimizers, state dicts and weight files leave "
                f"them out). Hold them directly in a list or tuple attribute, or as "
                f"attributes of their own.",
                UserWarning,
                stacklevel=3,
            )


def _ref(x: Any) -> Any:
    try:
        return weakref.ref(x)
    except TypeError:  # Python scalars cannot be weakly referenced
        return None


class Layer:
    """Base class of every layer: holds Parameters and sub-Layers, in definition order.

    Layers (and Parameters) kept in a list or tuple attribute count too, named by index
    (``self.blocks = [Linear(3), Linear(3)]`` gives ``blocks.0.W``); those kept in a dict,
    or in a list inside such a list, do not, and walking the layer warns of them. Layers
    pickle and ``copy.deepcopy`` (the references to the last call's inputs and outputs are
    dropped, and a state Variable such as an RNN's ``h`` is copied without its graph, as
    every Variable is: see ``Variable``); Parameters whose numpy arrays share memory (one
    a view of another's, as tied weights) share it in the copy too (``zerograd_nn.ties``).
    ``copy.copy`` gives a layer holding the same Parameters and sub-layers; members
    assigned to it or deleted from it afterwards are its own, as its other attributes are.
    """

    _eval_mode = False  # set by eval() on the instance; see train()
    _backend_name: str | None = None  # set by to() on the instance; see target_backend

    def __init__(self) -> None:
        # the names of the members held as attributes, in the order they were set: a dict
        # (keys only) so that an assignment finds a name in one step, whatever the count
        object.__setattr__(self, "_params", {})

    def __setattr__(self, name: str, value: Any) -> None:
        if _recording.on:  # a static-graph trace records the states a call leaves behind
            rec = _recorder()
            if rec is not None:
                rec.attribute(self, name, value)
        d = self.__dict__
        names = d.get("_params")
        if names is None:  # a subclass forgot super().__init__(): set things up now
            names = {}
            object.__setattr__(self, "_params", names)
        if isinstance(value, (Parameter, Layer)):
            if name not in names:
                names[name] = None
                _layout.n += 1
            elif d.get(name) is not value:
                _replaced()  # a replay recorded with the old one must not run on
                _layout.n += 1
        elif name in names:
            del names[name]
            _replaced()
            _layout.n += 1
        if isinstance(value, (list, tuple)):
            lists = d.get("_lists")
            if lists is None:
                lists = {}
                object.__setattr__(self, "_lists", lists)
            if name not in lists:
                lists[name] = None
                _layout.n += 1
            elif d.get(name) is not value:
                _layout.n += 1
                if _holds_members(d.get(name)):
                    _replaced()
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for key in ("_params", "_lists"):
            names = self.__dict__.get(key, {})
            if name in names:
                del names[name]
                _replaced()
                _layout.n += 1
        object.__delattr__(self, name)

    def __call__(self, *inputs: Any) -> Any:
        """Run :meth:`forward` on ``inputs`` and keep weak references to inputs and outputs.

        Args:
            *inputs: the inputs of :meth:`forward` (Variables or arrays).

        Returns:
            The single output, or a tuple when :meth:`forward` returns several.
        """
        if _recording.on:  # a static-graph replay checks the mode it was recorded in
            rec = _recorder()
            if rec is not None:
                rec.depends(self, _eval_mode_of, self._eval_mode)
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
        for key in ("_params", "_lists"):  # the names of the members of this __dict__: a
            if key in state:  # copy.copy has a __dict__ of its own, so its own lists too
                state[key] = dict.fromkeys(state[key])
        ties = find_ties(self.params())
        if ties is not None:  # parameters sharing memory (views): tied again in the copy
            state[_TIES] = ties
        return state  # a state Variable (an RNN's h) copies itself without its graph

    def __setstate__(self, state: dict[str, Any]) -> None:
        ties = state.pop(_TIES, None)
        for key in ("_params", "_lists"):  # (a layer pickled before these were dicts: lists)
            if type(state.get(key)) is list:
                state[key] = dict.fromkeys(state[key])
        self.__dict__.update(state)
        if ties is not None:
            restore_ties(ties)

    def __copy__(self) -> Layer:
        # a shallow copy holds the original's Parameters: they stay as they are, tied or not
        twin = type(self).__new__(type(self))
        state = self.__getstate__()
        state.pop(_TIES, None)
        twin.__setstate__(state)
        return twin

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Compute the outputs; subclasses implement this.

        Args:
            *inputs: the arguments the layer was called with.
            **kwargs: never passed: with it, a type checker takes any subclass's forward
                (``forward(self, x)``) as a valid override.

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
            >>> from zerograd_nn.layers import Linear
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
        name = type(self).__name__
        verbose = flag(f"{name}.summary", "verbose", verbose)
        if not inputs and _needs_inputs(self):
            raise TypeError(
                f"{name}.summary() runs one forward pass to find each layer's output shape: "
                f"give it inputs for that pass, {name.lower()}.summary(x) (a small batch is "
                f"enough)."
            )
        return _inspection.summarize(self, inputs, file, verbose)

    @property
    def training(self) -> bool:
        """Whether this layer's forward runs in train mode here: ``Config.train`` and not eval.

        Returns:
            True in train mode.
        """
        if _recording.on:
            rec = _recorder()
            if rec is not None:
                rec.depends(self, _eval_mode_of, self._eval_mode)
        return bool(Config.train) and not self._eval_mode

    def train(self, mode: bool = True) -> Self:
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

        Raises:
            TypeError: ``mode`` is not True or False (``train("no")`` would mean True).
        """
        value = not flag(f"{type(self).__name__}.train", "mode", mode)
        rec = _recorder() if _recording.on else None
        for *_, member in self.walk():
            if isinstance(member, Layer):
                if rec is not None:  # switched inside a recorded call: from what it was
                    rec.depends(member, _eval_mode_of, member._eval_mode)
                object.__setattr__(member, "_eval_mode", value)
        return self

    def eval(self) -> Self:
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
        if type(self).named_members is Layer.named_members:  # (an override may list them)
            _warn_of_hidden_members(self)

    def named_children(self) -> Iterator[tuple[str, Layer]]:
        """This layer's direct sub-layers with their names, in definition order, once each.

        Yields:
            ``(name, sub-layer)`` pairs; a layer held under two names comes under the first.
            The layer itself, if it holds itself, does not come.
        """
        seen: set[int] = {id(self)}
        for name, member in self.named_members():
            if isinstance(member, Layer) and id(member) not in seen:
                seen.add(id(member))
                yield name, member

    def walk(self) -> Iterator[tuple[str, str, int, Parameter | Layer]]:
        """Walk this layer's tree depth first, in definition order: the one walk of a model.

        :meth:`named_params`, state dicts, weight files, ``repr``, :meth:`summary` and
        :meth:`train` all read the model through it (:meth:`params` visits the same
        members in the same order, without names).

        Yields:
            ``(dotted name, local name, depth, member)``: first ``('', '', 0, self)``, then
            each member of :meth:`named_members` (a sub-layer followed by its own tree, each
            sub-layer once per holder as :meth:`named_children` lists them).
        """
        return _walk(self, "", "", 0)

    def params(self) -> Iterator[Parameter]:
        """Every Parameter of this layer and its sub-layers, in definition order, once each.

        The Parameters of :meth:`named_params`, in its order, found without making their
        names: an optimizer asks for them at every update.
        """
        return iter(_params(self))

    def parameters(self) -> Iterator[Parameter]:
        """PyTorch's name for :meth:`params`: the same Parameters, in the same order.

        Returns:
            An iterator over the Parameters.
        """
        return self.params()

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """PyTorch's ``named_parameters()``: the pairs of :meth:`named_params`, in order.

        Returns:
            An iterator of ``(dotted name, Parameter)`` pairs (``'l0.W'``).
        """
        return iter(self.named_params().items())

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

    def with_params(self, params: Mapping[str, Any]) -> Layer:
        """A copy of this layer that computes with ``params`` instead of its parameters.

        What :func:`zerograd.func.functional_call` calls. The copy has its own sub-layers
        (copies too) and its own parameter objects: the Variables given in ``params``
        (arrays are wrapped) and, for the names left out, new Parameters holding this
        layer's arrays. So nothing a call of the copy does reaches this layer: gradients
        land on the copy's parameters, a lazily sized layer sizes the copy, batch norm
        updates the copy's running statistics, an RNN keeps its hidden state on the copy.
        Other attributes are shared as they are.

        Args:
            params: ``{dotted name: array or Variable}``, names as :meth:`named_params`
                gives them.

        Returns:
            The copy.

        Raises:
            TypeError: ``params`` is not a mapping, or a value is not an array or Variable.
            ValueError: a name is not one of this layer's parameters, or a value's shape
                differs from the parameter's.

        Examples:
            >>> import numpy as np
            >>> from zerograd_nn.layers import Linear
            >>> layer = Linear(1, in_size=2)
            >>> twin = layer.with_params({"W": np.ones((2, 1))})
            >>> twin(np.array([[1.0, 2.0]])).data - layer.b.data
            array([[3.]])
        """
        if not isinstance(params, Mapping):
            raise TypeError(
                f"with_params: params must be a dict {{name: array}}, got {type(params).__name__}"
            )
        named = self.named_params()
        unknown = sorted(set(params) - set(named))
        if unknown:
            raise ValueError(
                f"with_params: {listed(unknown)} are not parameters of {type(self).__name__}; "
                f"its parameters are {listed(list(named))}."
            )
        swap: dict[int, Variable] = {}
        for name, param in named.items():
            if name not in params:
                swap[id(param)] = Parameter(param.data, name=param.name)
                continue
            value = params[name]
            empty = value is None or (isinstance(value, Variable) and value.data is None)
            if empty and param.data is not None:  # (an unsized parameter's None stays None)
                raise TypeError(
                    f"with_params: params[{name!r}] holds no array (None) for a parameter of "
                    f"shape {tuple(param.shape)}; give an array, or leave {name!r} out to keep "
                    f"the model's value."
                )
            if not isinstance(value, Variable):
                try:
                    value = Variable(value)
                except TypeError as exc:
                    raise TypeError(f"with_params: params[{name!r}]: {exc}") from None
            if param.data is not None and tuple(value.shape) != tuple(param.shape):
                raise ValueError(
                    f"with_params: params[{name!r}] has shape {tuple(value.shape)}, the "
                    f"parameter {tuple(param.shape)}"
                )
            swap[id(param)] = value
        return _rebound(self, swap)

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

    def sizing_dtype(self) -> Any:
        """The dtype this layer sizes its own parameters in, or None where its input decides.

        ``Linear``, ``Conv2d`` and ``Deconv2d`` return their ``dtype``; ``BatchNorm`` (which
        takes its first batch's) and the base class None. A weight file or a state dict
        loaded while a parameter of this layer has no data yet gives it this dtype, as the
        first call would.
        """
        return None

    def sizing_shapes(self) -> dict[str, tuple[int | None, ...]]:
        """``{attribute: shape}`` for the parameters this layer sizes at its first call.

        The shape each one will take, with None in the axes the first input decides:
        ``Linear`` gives ``{"W": (None, out_size)}``, ``Conv2d`` ``{"W": (out_channels,
        None, KH, KW)}``; the base class ``{}`` (any shape). A weight file or a state dict
        loaded while such a parameter has no data yet must fit it, so that a loaded layer
        computes what its arguments say (a 5x5 kernel is refused by ``Conv2d(8, 3)``).
        """
        return {}

    def cleargrads(self) -> None:
        """Forget every parameter's gradient."""
        for param in self.params():
            param.cleargrad()

    def zero_grad(self) -> None:
        """PyTorch's name for :meth:`cleargrads`: forget every parameter's gradient."""
        self.cleargrads()

    @property
    def target_backend(self) -> str | None:
        """The name of the backend that the last :meth:`to` named (None: never moved).

        A lazily sized layer makes its parameters at its first call; they are moved there,
        so that ``model.to(...)`` before that call holds for them too.
        """
        return self._backend_name

    def to(self, backend: Any) -> Self:
        """Move every parameter (and gradient) to ``backend``.

        All arrays are converted before any is assigned, so a failed conversion leaves every
        parameter where it was. Parameters not made yet (a layer sized at its first call)
        are made on ``backend`` when they are: this layer and its sub-layers remember it
        (:attr:`target_backend`). PyTorch's device names work too: ``"cpu"`` is
        :meth:`to_cpu`, ``"cuda"`` is :meth:`to_gpu`.

        Args:
            backend: a backend name (``"numpy"``, ``"cupy"``, ...), ``"cpu"``, ``"cuda"``
                or a Backend.

        Returns:
            This layer.

        Raises:
            TypeError: ``backend`` is neither a name nor a Backend.
            NoBackendError: no backend of that name is installed, or it cannot be used here
                (for ``"cuda"``: no GPU backend).
        """
        if isinstance(backend, str) and backend in _DEVICES:
            backend = _DEVICES[backend]()
        if isinstance(backend, str):
            name = get_backend(backend).name
        elif isinstance(backend, Backend):
            name = backend.name
        else:
            raise TypeError(
                f"{type(self).__name__}.to(backend): backend must be a backend name (str, e.g. "
                f"'numpy') or a zerograd.backends.Backend, got {type(backend).__qualname__}"
            )
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
        for *_, member in self.walk():
            if isinstance(member, Layer):
                object.__setattr__(member, "_backend_name", name)
        return self

    def to_cpu(self) -> Self:
        """Move every parameter to the CPU (the default backend).

        Returns:
            This layer.
        """
        return self.to(get_backend())

    def to_gpu(self) -> Self:
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


_DEVICES = {"cpu": get_backend, "cuda": gpu_backend}  # PyTorch's device names


def _needs_inputs(layer: Layer) -> bool:
    """Whether ``layer``'s forward cannot be called without arguments."""
    try:
        inspect.signature(layer.forward).bind()
    except TypeError:
        return True
    except ValueError:  # (no signature to read: let the call tell)
        return False
    return False


def _rebound(layer: Layer, swap: dict[int, Variable]) -> Layer:
    """A copy of ``layer``'s tree whose parameters are ``swap[id(parameter)]``.

    Sub-layers held twice are copied once; lists and tuples of members are copied with
    their members replaced; the last call's references are left out. Without recursion
    (a tree of any depth): every layer's twin is made first, then filled in.
    """
    done: dict[int, Layer] = {}  # id(layer) -> its twin
    order: list[Layer] = []
    todo = [layer]
    while todo:
        node = todo.pop()
        if id(node) in done:
            continue
        done[id(node)] = object.__new__(type(node))
        order.append(node)
        for k, v in node.__dict__.items():
            if k in ("inputs", "outputs", "_params", "_lists"):
                continue
            if type(v) in (list, tuple):
                todo.extend(x for x in v if isinstance(x, Layer))
            elif isinstance(v, Layer):
                todo.append(v)

    def member(v: Any) -> Any:
        if isinstance(v, Layer):
            return done[id(v)]
        if isinstance(v, Parameter) and id(v) in swap:
            return swap[id(v)]
        return v

    for node in order:
        state = {}
        for k, v in node.__dict__.items():
            if k in ("inputs", "outputs"):
                continue
            if k in ("_params", "_lists"):
                state[k] = dict.fromkeys(v)
            elif isinstance(v, (list, tuple)):
                state[k] = type(v)(member(x) for x in v) if type(v) in (list, tuple) else v
            else:
                state[k] = member(v)
        done[id(node)].__dict__.update(state)
    return done[id(layer)]


class _Layout:
    """``n``: moved whenever a layer gains, loses or replaces a member (or a list of them)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


_layout = _Layout()
# id(root layer) -> (a weak reference to it, the layout it was walked at, its list
# attributes as walked, its Parameters, watches on the layers in those lists); by id: a
# layer may define __eq__ or no __hash__
_walked: dict[int, tuple] = {}


def _moved(_ref: weakref.ref, layout: _Layout = _layout) -> None:
    """A layer held in a remembered list died: no remembered walk may be given again.

    A list is compared by its items' ids, and a layer made after one was removed (by
    ``copy.copy``, ``copy.deepcopy`` or unpickling, which set no attribute) can take the
    dead one's id in the same place; the walk would then give the removed layer's
    Parameters (the walk holds those, so a Parameter's id is never reused).
    """
    layout.n += 1


def _params(layer: Layer) -> list[Parameter]:
    """:meth:`Layer.params` as a list: :func:`_walk`'s order, a member visited once.

    An optimizer asks at every update, so the last walk is kept per root layer and given
    again while no layer's members changed: no attribute assignment moved :data:`_layout`
    and every list attribute the walk read is the same list, holding the same items (a
    list changes in place without an assignment).
    """
    memo = _walked.get(id(layer))
    if (
        memo is not None
        and memo[0]() is layer
        and memo[1] == _layout.n
        and all(map(_unchanged, memo[2]))
    ):
        return list(memo[3])
    out: list[Parameter] = []
    seen = {id(layer)}
    lists: list[tuple] = []
    watches: list[weakref.ref] = []
    keep = True  # a layer type with its own named_members may yield anything, any time
    at = _layout.n
    # Depth first, a member layer walked where it stands among its holder's members. A
    # loop, not a recursive closure: that closure would hold itself (a reference cycle),
    # and with it `out`, so a model's Parameters dropped by the user would wait for the
    # cyclic collector.
    stack: list[Iterator[tuple]] = []
    holder: Layer | None = layer
    while True:
        if holder is not None:
            d = holder.__dict__
            if type(holder).named_members is not Layer.named_members:
                keep = False
            for name in d.get("_lists", ()):  # weakly and by id: the memo keeps no layer alive
                items = d.get(name, ())
                lists.append((weakref.ref(holder), name, id(items), tuple(map(id, items))))
                watches.extend([weakref.ref(x, _moved) for x in items if isinstance(x, Layer)])
            stack.append(iter(holder.named_members()))
            holder = None
        if not stack:
            break
        for _, member in stack[-1]:
            if id(member) not in seen:
                seen.add(id(member))
                if isinstance(member, Layer):
                    holder = member
                    break
                out.append(member)
        else:
            stack.pop()
    if keep:
        key = id(layer)
        _walked[key] = (weakref.ref(layer, lambda ref: _forget(key, ref)), at, lists, out, watches)
        return list(out)
    return out


def _forget(key: int, ref: weakref.ref) -> None:
    """Drop the walk of a layer that died (unless the id already names a newer layer's)."""
    memo = _walked.get(key)
    if memo is not None and memo[0] is ref:
        del _walked[key]


def _unchanged(entry: tuple) -> bool:
    """Whether a list attribute read by a walk is still the same list with the same items."""
    ref, name, list_id, ids = entry
    holder = ref()
    if holder is None:
        return False
    items = holder.__dict__.get(name, ())
    return id(items) == list_id and tuple(map(id, items)) == ids


def _walk(layer: Layer, prefix: str, label: str, depth: int) -> Iterator[tuple]:
    """:meth:`Layer.walk` from ``layer``, named ``prefix`` (``label`` locally) at ``depth``.

    Depth first without recursion, so trees of any depth work (and each item is yielded
    once, not through a generator per level above it). ``above`` holds the ids of the
    layers on the path down: a member that is one of them (a reference back up, such as
    ``self.parent = model``) is not walked again; ``seen``, per layer, the sub-layers it
    walked already (one held under two names is walked once).
    """
    yield prefix, label, depth, layer
    above = {id(layer)}
    # per layer on the path down, the deepest last: (layer, its name, its depth, its
    # members still to look at, the ids of its sub-layers walked)
    stack = [(layer, prefix, depth, layer.named_members(), set())]
    while stack:
        holder, pre, level, members, seen = stack[-1]
        for name, member in members:
            full = f"{pre}.{name}" if pre else name
            if not isinstance(member, Layer):
                yield full, name, level + 1, member
            elif id(member) not in seen and id(member) not in above:
                seen.add(id(member))
                yield full, name, level + 1, member
                above.add(id(member))
                stack.append((member, full, level + 1, member.named_members(), set()))
                break  # its members first, then the rest of this layer's
        else:
            stack.pop()
            above.discard(id(holder))


__all__ = ["Layer"]
