"""Capture a forward pass: every Function applied, with its input and output Variables.

The capture is a :class:`zerograd.recording.Recorder`, the protocol zerograd's engine
already reports to when a static-graph trace records: ``Function.__call__`` tells it
``called(fn, before, inputs, outputs)`` at the moment each function is applied, so the
capture never reads a finished graph (``f.inputs``) nor what a forward wrote on its
function object. The eager engine pays nothing for it (one attribute read per call while
no recorder is active anywhere).

The layer that applied a function is the innermost frame of the Python stack whose
``self`` is one of the model's layers (named by :meth:`zerograd_nn.Layer.walk`): reading
the stack changes nothing in the model. A forward that changes a layer's state (an RNN's
``h``) has that state put back once the capture ends, so exporting leaves the model as it
was.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zerograd import Function, Parameter, Variable, no_grad, test_mode
from zerograd.recording import READ, Recorder, recording
from zerograd.static.trace import harmless_read, outside
from zerograd.variable import value_read
from zerograd_nn import Layer

_MISSING = object()


@dataclass(frozen=True)
class Site:
    """Where a function was applied: the dotted path of the layer and its class name.

    ``path`` is ``""`` for the model itself and None outside any of its layers.
    """

    path: str | None
    type_name: str = ""

    def __str__(self) -> str:
        if self.path is None:
            return "outside any layer of the model"
        if self.path == "":
            return f"in the model's own forward ({self.type_name})"
        return f"in layer '{self.path}' ({self.type_name})"


@dataclass(frozen=True)
class Call:
    """One Function applied during the capture."""

    fn: Function
    inputs: tuple[Variable, ...]
    outputs: tuple[Variable, ...]
    site: Site


@dataclass
class Capture(Recorder):
    """What one forward pass did; implements :class:`zerograd.recording.Recorder`.

    Args:
        layers: ``{id(layer): Site}`` for every layer of the model.
    """

    layers: dict[int, Site]
    traced: set[int] = field(default_factory=set)  # ids of the inputs and the calls' outputs
    calls: list[Call] = field(default_factory=list)
    reads: list[tuple[str, Site]] = field(default_factory=list)
    others: list[tuple[str, Site]] = field(default_factory=list)
    held: list[tuple[str, Site, tuple[int, ...]]] = field(default_factory=list)
    """Layer states an earlier call left that a call read: (attribute, layer, shape)."""
    _saved: dict[tuple[int, str], tuple[Any, str, Any]] = field(default_factory=dict)

    def site(self) -> Site:
        """The innermost of the model's layers whose method is running now."""
        # from the caller's frame: reading this frame's own f_locals would store them in
        # it, with `frame` among them, a cycle that kept every frame above (the model, the
        # arrays) until the cyclic collector ran
        frame = inspect.currentframe()
        frame = None if frame is None else frame.f_back
        try:
            while frame is not None:
                code = frame.f_code
                if code.co_argcount and code.co_varnames[0] == "self":
                    found = self.layers.get(id(frame.f_locals.get("self")))
                    if found is not None:
                        return found
                frame = frame.f_back
            return Site(None)
        finally:
            del frame

    # -- the Recorder protocol ----------------------------------------------------------
    def before_call(self, fn: Any) -> Any:
        return None

    def called(self, fn: Any, before: Any, inputs: tuple, outputs: Any) -> None:
        outs = tuple(outputs) if isinstance(outputs, list) else (outputs,)
        self.calls.append(Call(fn, tuple(inputs), outs, self.site()))
        self.traced.update(id(y) for y in outs)

    def data(self, x: Any, frame: Any, value: Any) -> None:
        if value is READ:
            what = value_read(frame)  # float(x), x < y, print(x): values into Python
            if what is not None:
                self.reads.append((what, self.site()))
            elif id(x) in self.traced and outside(frame) and not harmless_read(frame):
                # the model's own code took a traced value's array (a branch on it, numpy
                # work): what it does with the values is invisible to the graph
                where = f"{frame.f_code.co_filename}, line {frame.f_lineno}"
                self.reads.append((f"x.data at {where}", self.site()))

    def attribute(self, owner: Any, name: str, value: Any) -> None:
        key = (id(owner), name)
        if key not in self._saved:
            self._saved[key] = (owner, name, owner.__dict__.get(name, _MISSING))

    def backward(self, y: Any, retain_grad: bool, create_graph: bool, run: Callable) -> None:
        self.others.append(("a backward pass", self.site()))
        run(retain_grad, create_graph)

    def effect(self, fn: Callable[[], Any], params: list, settings: Callable[[], Any]) -> Any:
        self.others.append(("an optimizer update", self.site()))
        return fn()

    # -- putting the model back ---------------------------------------------------------
    def restore(self) -> None:
        """Put back every layer state (a non-Parameter Variable) the forward replaced.

        A state the forward replaced after a call read it (an RNN's ``h`` from the call
        before) goes into :attr:`held` first.
        """
        read = {id(x) for call in self.calls for x in call.inputs}
        for owner, name, old in self._saved.values():
            replaced = owner.__dict__.get(name, _MISSING) is not old
            if _is_state(old) and replaced and id(old) in read:
                site = self.layers.get(id(owner), Site(None))
                self.held.append((name, site, tuple(old.shape)))
        for owner, name, old in reversed(list(self._saved.values())):
            new = owner.__dict__.get(name, _MISSING)
            if not (_is_state(old) or _is_state(new)):
                continue  # settings a lazily sized layer fixes on its first call stay
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()


def _is_state(value: Any) -> bool:
    return isinstance(value, Variable) and not isinstance(value, Parameter)


def layer_sites(model: Any) -> dict[int, Site]:
    """``{id(layer): Site}`` for ``model`` and each of its sub-layers (none for a function)."""
    if not isinstance(model, Layer):
        return {}
    sites: dict[int, Site] = {}
    for path, _, _, member in model.walk():
        if isinstance(member, Layer) and id(member) not in sites:
            sites[id(member)] = Site(path, type(member).__name__)
    return sites


def capture(
    model: Callable[..., Any], inputs: tuple[Variable, ...], sites: dict[int, Site]
) -> tuple[Capture, Any]:
    """Run ``model(*inputs)`` in test mode without gradients, capturing every call.

    Layer states the forward replaces are put back afterwards, also when it raises.

    Args:
        model: the model (a Layer or any callable of Variables).
        inputs: its input Variables.
        sites: the model's layers (:func:`layer_sites`).

    Returns:
        The capture and what the model returned.
    """
    cap = Capture(sites, {id(x) for x in inputs})
    try:
        with no_grad(), test_mode(), recording(cap):
            out = model(*inputs)
    finally:
        cap.restore()  # outside the recording: putting the state back is not recorded
    return cap, out
