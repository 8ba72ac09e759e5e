"""``Trace``: what one eager call of a static-graph function did, at the array level.

A Trace is the :class:`~zerograd.recording.Recorder` of one call. Every array the call
touches gets a *slot* (its number in the order of first sight); every piece of array work
becomes an instruction naming its slots: a Function's forward, a vjp, an accumulation of
the backward walk, a gradient given to a variable, an optimizer update, a layer's state
written. Arrays the call did not make are *reads*: an argument's, a captured Variable's
(a Parameter), a held gradient, a layer's state, or a constant.

Anything a replay could not reproduce ends the trace's usefulness: :attr:`Trace.refused`
then says why, and the call stays eager.
"""

from __future__ import annotations

import copy
import dis
import weakref
from collections.abc import Callable
from typing import Any

from ..backends import get_array_module
from ..backends.chains import FUNCTIONS, op_of
from ..backends.registry import registry
from ..backprop import check_seed
from ..config import Config, using_config
from ..function import Function, settings_of
from ..recording import READ, paused, recording, replaced_here, structure
from ..variable import Parameter, Variable, value_read
from .names import Name
from .schedule import upstream
from .schedule import walk as planned_walk
from .values import bits, copy_of, same

_by_type = registry.by_type

# how a read finds its array at replay time
ARG = "arg"  # the call's argument leaf number `where` (a Variable's data, or the array)
VAR = "var"  # the Variable `where`'s data (a Parameter, a Variable kept across calls)
GRAD = "grad"  # the data of the gradient the Variable `where` holds when the call starts
STATE = "state"  # the data of the Variable held by the attribute `where` = (owner, name)
CONST = "const"  # the array `where` itself, frozen (a constant made inside the call)


class Read:
    """Slot ``slot`` is an array the call did not make: ``how`` and ``where`` say whose."""

    __slots__ = ("slot", "how", "where")

    def __init__(self, slot: int, how: str, where: Any) -> None:
        self.slot, self.how, self.where = slot, how, where


class Forward:
    """``outs = fn.forward(*ins)``; ``inputs`` are the Variables the call gave it.

    ``attrs`` maps the names of ``fn``'s settings that hold this call's arrays (an index
    array given to GetItem: an argument, or an array a Function made) to the setting with
    those arrays as :class:`Ref` slots: a replay sets them from its own arrays first.
    ``kernel`` is what the function's :meth:`~zerograd.Function.kernel` gave, or None: a
    replay calls it instead of ``fn.forward``, and ``fn`` then holds the attributes that
    forward left.
    """

    __slots__ = ("fn", "inputs", "ins", "outs", "many", "attrs", "kernel")

    def __init__(
        self, fn: Any, inputs: tuple, ins: list, outs: list, many: bool, attrs: dict
    ) -> None:
        self.fn, self.inputs, self.ins, self.outs, self.many = fn, inputs, ins, outs, many
        self.attrs = attrs
        self.kernel: Any = None


class Vjp:
    """``gxs = fn.vjp(ops, xs, ys, gys)``, or a DeZero-style ``gxs = call(fn, ops, gys)``.

    With ``call``, ``ops`` is the walk's carrier.

    ``ys``/``gys`` are one slot, or a tuple of slots (None where there is none), as the
    walk passed them; ``gxs`` has a slot (or None) per value returned, and ``one`` says
    whether one value was returned rather than a tuple or list.
    """

    __slots__ = ("fn", "ops", "call", "inputs", "outputs", "xs", "ys", "gys", "gxs", "one")

    def __init__(self, fn: Any, ops: Any, call: Any, inputs: tuple, outputs: tuple) -> None:
        self.fn, self.ops, self.call, self.inputs, self.outputs = fn, ops, call, inputs, outputs
        self.xs: list = []
        self.ys: Any = None
        self.gys: Any = None
        self.gxs: list = []
        self.one = False


class Op:
    """``out = fn(*args)``: array work of the walk (``args``: :class:`Ref` slots, constants)."""

    __slots__ = ("fn", "args", "out")

    def __init__(self, fn: Callable, args: tuple, out: int) -> None:
        self.fn, self.args, self.out = fn, args, out


class Ref:
    """An argument of an :class:`Op` that is a slot."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def __eq__(self, other: object) -> bool:
        return type(other) is Ref and other.slot == self.slot

    def __hash__(self) -> int:
        return hash(("Ref", self.slot))


class Store:
    """The walk gave ``target`` (a Variable) the gradient in ``slot``."""

    __slots__ = ("target", "slot")

    def __init__(self, target: Any, slot: int) -> None:
        self.target, self.slot = target, slot


class Clear:
    """The call cleared ``target``'s gradient here (``cleargrad()``, ``zero_grad()``)."""

    __slots__ = ("target",)

    def __init__(self, target: Any) -> None:
        self.target = target


class Effect:
    """``fn()`` ran as one step (an optimizer's update), reading ``params``' gradients."""

    __slots__ = ("fn", "params", "settings")

    def __init__(self, fn: Callable, params: list, settings: Callable[[], Any]) -> None:
        self.fn, self.params, self.settings = fn, params, settings


class Start:
    """What a trace looks at as its call starts, learnt from the previous trace.

    Attributes:
        targets: the Variables given gradients and those the updates read (is each one's
            grad None at the start?).
        settings: the updates' ``settings`` callables (do they change inside the call?).
        captured: the Variables read (is their data changed inside the call?).
    """

    __slots__ = ("targets", "settings", "captured")

    def __init__(self, targets: list, settings: list, captured: list) -> None:
        self.targets, self.settings, self.captured = targets, settings, captured


_LEFT = object()  # in place of a gradient's copy: the gradient an update left, not copied
_FUNCTION_METHODS = frozenset(["forward", "vjp", "backward", "check", "kernel"])
# code object -> whether it is zerograd's own code; weakly, as the caches below: a step
# redefined (a notebook cell run again) leaves its old code to be freed
_inside: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def outside(frame: Any) -> bool:
    """Whether ``frame`` runs the step's own Python, not zerograd's or a Function's work.

    zerograd's packages (``zerograd``, ``zerograd_nn``, ...) and the methods of a Function
    (its forward, vjp, backward, check and kernel, which a replay runs again) are inside.

    Args:
        frame: a Python frame.

    Returns:
        True for the step's own code.
    """
    code = frame.f_code
    inside = _inside.get(code)
    if inside is None:
        module = frame.f_globals.get("__name__") or ""
        inside = module == "zerograd" or module.startswith(("zerograd.", "zerograd_"))
        _inside[code] = inside
    if inside:
        return False
    if code.co_name in _FUNCTION_METHODS and isinstance(frame.f_locals.get("self"), Function):
        return False
    return True


# what may come between reading x.data and returning it, Python looking at no value
_ON_THE_WAY_OUT = frozenset(
    [
        "LOAD_CONST",
        "LOAD_FAST",
        "LOAD_DEREF",
        "BUILD_LIST",
        "BUILD_TUPLE",
        "BUILD_MAP",
        "BUILD_CONST_KEY_MAP",
        "LIST_EXTEND",
        "NOP",
        "CACHE",
        "EXTENDED_ARG",
    ]
)
_METADATA = frozenset(["shape", "dtype", "ndim", "size"])  # x.data.shape reads no value
# code -> {offset: whether the value read there is never looked at}
_harmless: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def harmless_read(frame: Any) -> bool:
    """Whether Python looks at no value of the array that ``frame``'s instruction reads.

    ``return loss.data`` or ``return {"loss": y.data}`` (the replay returns its own
    array), ``x.data.shape`` and ``.dtype``, ``.ndim``, ``.size`` (metadata, which the
    replay checks), and ``x.data is None`` (a lazily sized layer written as the book's).

    Args:
        frame: the frame reading the value.

    Returns:
        True when the read is one of those.
    """
    code, offset = frame.f_code, frame.f_lasti
    known = _harmless.get(code)
    if known is None:
        known = _harmless[code] = {}
    out = known.get(offset)
    if out is None:
        after = [i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti]
        out = False
        if after:
            first = after[0]
            if first.opname in ("LOAD_ATTR", "LOAD_METHOD") and first.argval in _METADATA:
                out = first.opname == "LOAD_ATTR"
            elif "IF_NONE" in first.opname or "IF_NOT_NONE" in first.opname:
                out = True
            elif (
                len(after) > 1
                and first.opname == "LOAD_CONST"
                and first.argval is None
                and after[1].opname == "IS_OP"
            ):
                out = True
            else:
                for ins in after:
                    if ins.opname == "RETURN_VALUE":
                        out = True
                    if ins.opname not in _ON_THE_WAY_OUT:
                        break
        known[offset] = out
    return out


def _where(frame: Any) -> str:
    return f"{frame.f_code.co_filename}, line {frame.f_lineno}"


def _about(x: Any) -> str:
    """``'a Parameter 'W' of shape (3, 4)'``: a Variable, for messages."""
    name = f" {x.name!r}" if getattr(x, "name", None) else ""
    shape = getattr(getattr(x, "data", None), "shape", None)
    return f"a {type(x).__name__}{name}" + ("" if shape is None else f" of shape {tuple(shape)}")


def _memory_of(a: Any) -> Any:
    """The array whose memory ``a`` views (``a`` itself when it owns its memory)."""
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _overlap(a: Any, b: Any) -> bool:
    """Whether the arrays ``a`` and ``b`` share memory.

    Parameters packed into one buffer (an optimizer's flat parameters) all view that
    buffer, so a common base alone does not say which one ``a`` views; the backend's
    ``shares_memory`` does, where it has one.
    """
    if _memory_of(a) is not _memory_of(b):
        return False
    backend = _by_type.get(type(a))
    shares = getattr(getattr(backend, "xp", None), "shares_memory", None)
    return True if shares is None else bool(shares(a, b))


def _argument_changed(i: int, leaf: Any, code: list, captured: list) -> str:
    """Why a call whose argument ``i`` (the array ``leaf``) changed in place is refused.

    An argument that views a Parameter's memory (``step(w.data[:1])``) changes when the
    update writes the Parameter: the call did not write it by hand.
    """
    shape = tuple(leaf.shape)
    updated = [p for ins in code if type(ins) is Effect for p in ins.params]
    for v in (*updated, *[c[0] for c in captured]):
        if v.data is not None and _overlap(leaf, v.data):
            return (
                f"its argument {i} (an array of shape {shape}) is a view of the data of "
                f"{_about(v)}, which changes in place inside the call (an optimizer's update "
                f"writes it), so the argument changes with it; a replay would read the "
                f"argument as the call began. Pass a copy (w.data[:1].copy())"
            )
    return (
        f"it changes its argument {i} (an array of shape {shape}) in place (x *= 2, "
        f"x[...] = ...), which a replay would not do; compute a new array (x = x * 2)"
    )


def _had_data(x: Variable) -> bool:
    """Whether ``x`` holds an array (read unrecorded; a Variable being made has none yet)."""
    with paused():
        return getattr(x, "data", None) is not None


class Trace:
    """The recorder of one call (see the module docstring).

    Args:
        leaves: the call's argument leaves (Variables, arrays and other values, flattened).
        start: what the previous trace of the same kind of call learnt (its
            :meth:`start`), or None: looked at as this call starts (held gradients, the data
            of captured Variables, the updates' settings), so that this trace can tell what
            the call changes.
        watched: the names the step reads (:func:`.names.watched`), as the call starts.

    Attributes:
        code: the instructions, in the order the call did them.
        reads: slot -> its :class:`Read`, for the slots the call did not make.
        meta: slot -> ``(type, shape, dtype)`` of its array as first seen.
        refused: why a replay could not reproduce this call, or None.
        states: ``(id(owner), name) -> [owner, name, value at the start, value at the
            end]`` of the Variable attributes (an RNN's ``h``) the call wrote.
        entry_grads: ``id(variable) -> whether its grad was None`` when the call started,
            for the variables the previous trace (``start``) stored gradients into.
        adds_onto: ``id(variable)`` of the variables whose held gradient a walk added onto.
        result: the call's return value, as :meth:`finish` was given it.
        watched: the names the step reads, with what they referred to at the start.
        version: :data:`zerograd.recording.structure`'s count at the start.
        replaced: :func:`zerograd.recording.replaced_here` at the start.
        dependencies: ``(id(owner), read) -> [owner, read, value at the start]``: Python state
            the work depends on (a layer's eval mode); a replay checks it first.
        aliases: ``[(leaf, variable)]``: Variables the call did not get as arguments whose
            data is an argument's array (``step(w.data)``).
        fresh: why this call cannot be compared with others (a Parameter got its first
            value inside it: a layer sized itself), or None.
        first_write: the length of :attr:`code` when zerograd's own work first gave a
            Variable that had an array a new one (batch norm's running statistics) or drew
            random numbers (dropout's mask), or None: no forward's check may run before
            that work (:mod:`.program`).
    """

    def __init__(self, leaves: list, start: Start | None = None, watched: Any = ()) -> None:
        self.code: list = []
        self.reads: dict[int, Read] = {}
        self.meta: dict[int, tuple] = {}
        self.refused: str | None = None
        self.states: dict[tuple[int, str], list] = {}
        self.entry_grads: dict[int, bool] = {}
        self.adds_onto: set[int] = set()
        self.result: Any = None
        self.leaves = leaves
        self.watched: list[Name] = list(watched)
        self.version = structure.n
        self.replaced = replaced_here()
        self.dependencies: dict[tuple, list] = {}
        self.aliases: list[tuple[int, Variable]] = []
        self.fresh: str | None = None
        self.first_write: int | None = None
        self._aliased: set[int] = set()
        self._cleared: set[int] = set()  # id(variable) whose clearing is recorded already
        self.start_targets: list = []
        # the arguments' values as the call starts: two recordings of calls given equal
        # values cannot tell arrays made from them in Python from constants
        self.arg_bits = [
            None if a is None else bits(a)
            for a in (x.data if isinstance(x, Variable) else x for x in leaves)
        ]
        self._slots: dict[int, int] = {}  # id(object) -> slot
        self._kept: list = []  # every slotted object: alive, so that ids stay unique
        self._clones: dict[int, tuple] = {}  # id(function) -> (function, its clone)
        self._arg_arrays: dict[int, int] = {}  # id(array) -> leaf number
        self._arg_vars: dict[int, int] = {}  # id(Variable) -> leaf number
        self._stored: dict[int, tuple] = {}  # id(variable) -> (variable, array, a copy)
        self._settings: list[tuple[Callable, Any]] = []  # (settings(), value at the effect)
        self._captured: list[tuple[Variable, Any, Any]] = []  # (var, data, a copy) at start
        self._walked = False
        self._walking = False  # inside a backward: the Functions a walk applies
        self._contexts: dict[int, str] = {}  # id(array a forward saved as ctx) -> its class
        # id(array in a forward's ctx, in tuples too) -> (the replay's copy of it, the path)
        self._saved: dict[int, tuple] = {}
        self._held_at_walk: dict[int, Variable] = {}  # id(held gradient's array) -> its owner
        self._knows_start = start is not None
        self._entry_arrays: dict[int, Any] = {}  # id(variable) -> its grad's array at the start
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Variable):
                self._arg_vars[id(leaf)] = i
                g = leaf.grad  # what a walk may add onto: the call's own, as the call starts
                self._entry_arrays[id(leaf)] = None if g is None else g.data
                if leaf.data is not None:
                    self._arg_arrays[id(leaf.data)] = i
            elif type(leaf) in _by_type:
                self._arg_arrays[id(leaf)] = i
        if start is not None:
            self._look_at_start(start)

    # -- what is known before the call runs -----------------------------------------------
    def _look_at_start(self, start: Start) -> None:
        self.start_targets = list(start.targets)
        for v in start.targets:
            if id(v) not in self._arg_vars:
                g = v.grad
                self.entry_grads[id(v)] = g is None
                self._entry_arrays[id(v)] = None if g is None else g.data
        for f in start.settings:
            self._settings.append((f, f()))
        for v in start.captured:
            if v.data is not None:
                self._captured.append((v, v.data, copy_of(v.data)))

    # -- slots ------------------------------------------------------------------------------
    def _slot(self, obj: Any) -> int:
        """The slot of ``obj``, a new one when it is new."""
        n = self._slots.get(id(obj))
        if n is None:
            n = self._slots[id(obj)] = len(self._kept)
            self._kept.append(obj)
            self.meta[n] = (type(obj), getattr(obj, "shape", None), getattr(obj, "dtype", None))
        return n

    def _read(self, a: Any, how: str, where: Any) -> int:
        n = self._slot(a)
        self.reads[n] = read = Read(n, how, where)
        self.code.append(read)
        return n

    def _input(self, v: Any) -> int:
        """The slot of a Function's input Variable ``v`` (a read when the call did not make it)."""
        a = v.data
        leaf = self._arg_arrays.get(id(a))
        if leaf is not None and id(v) not in self._arg_vars and id(v) not in self._aliased:
            # a Variable holding an argument's array (step(w.data)): the replay reads the
            # argument, so it checks that the Variable still holds it, if it is kept
            self._aliased.add(id(v))
            self.aliases.append((leaf, v))
        n = self._slots.get(id(a))
        if n is not None:
            return n
        if leaf is not None:
            return self._read(a, ARG, leaf)
        owner = self._held_at_walk.get(id(a))
        if owner is not None:  # a walk recording Functions adds onto a held gradient
            n = self.held(owner, a)
            if n is not None:
                return n
        if id(v) in self._arg_vars:
            self.refuse(
                "it replaces the data of an argument Variable (x.data = ...) before using it; "
                "pass the new array as the argument instead"
            )
        elif self._walking and id(a) in self._contexts:
            # a vjp on Variables (create_graph) applied a Function to its forward's saved
            # array: a constant to the recording, which two calls may draw alike
            self.refuse(
                f"its backward(create_graph=True) reads what {self._contexts[id(a)]}'s "
                f"forward saved (dropout's mask, batch norm's scale) as a constant, which a "
                f"replay would keep from the recording; keep this step eager, or take the "
                f"second derivative outside static_graph"
            )
        return self._read(a, VAR, v)

    def _known(self, a: Any) -> int | None:
        n = self._slots.get(id(a))
        if n is None and a is not None:
            if type(a) not in _by_type:  # no backend's array: zerograd.func's batched values
                self.refuse(
                    f"the backward pass met a {type(a).__name__}, no backend array: a "
                    f"zerograd.func transform that differentiates inside the call (hessian, "
                    f"jacrev of jacrev) leaves such values on the graph, which a replay "
                    f"cannot reproduce"
                )
            else:
                self.refuse(
                    "the backward pass met an array made outside zerograd's functions (an "
                    "input's .data replaced between forward and backward? a forward run in "
                    "another thread, such as a pool's, whose work the recording does not see?)"
                )
        return n

    def refuse(self, why: str) -> None:
        """Note that a replay could not reproduce this call (the first reason is kept).

        Args:
            why: what the call did, and what to do instead.
        """
        if self.refused is None:
            self.refused = why

    # -- the Recorder protocol ---------------------------------------------------------------
    def before_call(self, fn: Any) -> Any:
        """A copy of ``fn`` as its forward finds it: the Function a replay calls."""
        return copy.copy(fn)

    def called(self, fn: Any, before: Any, inputs: tuple, outputs: Any) -> None:
        """Record the forward; arrays the call did not make become reads."""
        if self._walked and not self._walking:
            # gradients cleared after a backward go before this forward, where the call
            # cleared them: a forward refusing its inputs on a replay (a metric's labels)
            # then finds them cleared, as eagerly
            self._note_clears([st[0] for st in self._stored.values()])
            self._note_clears([v for v in self.start_targets if id(v) not in self._cleared])
        ins = [self._input(v) for v in inputs]
        attrs = {}
        for name, value in settings_of(before).items():
            template = self._setting(value)
            if template is not value:
                attrs[name] = template
        many = type(outputs) is list
        outs = [self._slot(o.data) for o in (outputs if many else (outputs,))]
        self._clones[id(fn)] = (fn, before)
        ctx = getattr(fn, "ctx", None)
        if type(ctx) in _by_type:  # kept alive by fn, in _clones
            self._contexts[id(ctx)] = type(fn).__name__
        if ctx is not None:
            self._note_saved(ctx, before, ())
        step = Forward(before, inputs, ins, outs, many, attrs)
        if not attrs:  # a forward that reads this call's arrays from its settings has none
            # asked of the class: an instance attribute of that name is the user's own
            arrays = [v.data for v in inputs]
            step.kernel = type(fn).kernel(fn, *arrays)
            if step.kernel is not None and _wrote_on_self(before, fn):
                step.kernel = None  # its replays would keep this call's values: forward runs
            if step.kernel is not None and not fn.own:  # zerograd's: checked by its suites
                why = _kernel_fault(fn, step.kernel, arrays, outputs)
                if why is not None:
                    self.refuse(why)
                    step.kernel = None
            if step.kernel is not None:
                if settings_of(fn):  # what forward left, for the vjp
                    settings_of(before).update(settings_of(fn))
                before.ctx = getattr(fn, "ctx", None)  # its context: a kernel's replays keep it
        settings = settings_of(before)
        for name, value in settings.items():
            if isinstance(value, Function):
                pair = self._clones.get(id(value))
                if pair is not None and pair[0] is value:
                    # a setting naming a Function of this call (max pooling's derivatives
                    # read the winners its forward saved): the replay's copy, whose
                    # forward saves each replay's own
                    settings[name] = pair[1]
        self.code.append(step)

    def _setting(self, v: Any) -> Any:
        """``v`` with the call's arrays in it (arguments, arrays made) as :class:`Ref` slots.

        Returns ``v`` itself when it holds none of them.
        """
        t = type(v)
        if t in (tuple, list):
            items = [self._setting(e) for e in v]
            return v if all(a is b for a, b in zip(items, v)) else t(items)
        if t not in _by_type:
            return v
        n = self._slots.get(id(v))
        if n is None:
            leaf = self._arg_arrays.get(id(v))
            saved = self._saved.get(id(v)) if leaf is None and self._walking else None
            if saved is not None:
                # an array a forward of this call saved (GetItem's copy of its index), set
                # on a Function of a create_graph backward: each replay reads its own from
                # the replay's copy of that forward, which saved it anew
                self.op(_context_part, saved, v)
                return Ref(self._slots[id(v)])
            if leaf is None:
                return v  # made by hand inside the call: a constant, compared by value
            n = self._read(v, ARG, leaf)
        return Ref(n)

    def _note_saved(self, ctx: Any, clone: Any, path: tuple) -> None:
        """Note where the arrays in ``ctx`` (a forward's context) sit, for :meth:`_setting`."""
        t = type(ctx)
        if t in _by_type:
            self._saved[id(ctx)] = (clone, path)
        elif t in (tuple, list):
            for i, part in enumerate(ctx):
                self._note_saved(part, clone, (*path, i))

    def backward(self, y: Any, retain_grad: bool, create_graph: bool, run: Callable) -> None:
        """Do ``y``'s backward, recorded; ``run(retain_grad, create_graph)`` is the eager walk.

        The ones seed is the trace's own step (it gives ``y`` the gradient a walk starts
        from). First order, :func:`.schedule.walk` does the walk's work in the walk's order
        and records it; with ``create_graph`` the eager walk runs, its work Functions applied
        and recorded as they run, and what it stored is what changed. A call the trace
        refuses anyway runs the eager walk. ``y.grad`` is as it was when the walk fails.
        """
        if self.refused is not None:  # nothing more to learn
            run(retain_grad, create_graph)
            return
        seed = y.grad
        if seed is not None:
            check_seed(y, seed)
        else:
            ones = get_array_module(y.data).ones_like
            y.grad = Variable(ones(y.data))
            self.op(ones, (y.data,), y.grad.data)
        self._walking = True
        try:
            if y.creator is None:  # a leaf: the walk only seeds it
                run(retain_grad, create_graph)
                return
            self._walked = True
            if retain_grad:
                self.refuse(
                    "it calls backward(retain_grad=True): a replay keeps no intermediate "
                    "Variables to give gradients to"
                )
                run(retain_grad, create_graph)
            elif create_graph:
                self._recorded_walk(y, run)
            else:
                self._planned_walk(y, run, seed is not None)
        except BaseException:
            y.grad = seed
            raise
        finally:
            self._walking = False

    def _planned_walk(self, y: Variable, run: Callable, preset: bool) -> None:
        """The first-order walk, done and recorded by :func:`.schedule.walk`.

        ``preset``: the user set ``y.grad`` before ``backward()``.

        Where it fails (having changed no gradient) the eager walk runs in its place and
        says why; should that one succeed, the call stays eager.
        """
        try:
            # as in the eager walk, no graph is built (a DeZero-style backward applies
            # Functions; a forward a vjp runs may ask); nor is that work recorded (see legacy)
            with paused(), using_config("enable_backprop", False):
                planned_walk(self, y, preset)
        except Exception as exc:
            self.refuse(
                f"its backward could not be planned from the graph the call built "
                f"({type(exc).__name__}: {exc})"
            )
            run(False, False)

    def _recorded_walk(self, y: Variable, run: Callable) -> None:
        """The walk with ``create_graph``: its Functions recorded, its stores learnt after."""
        before = [(v, v.grad) for v in upstream(y)]
        self._held_at_walk = {id(g.data): v for v, g in before if isinstance(g, Variable)}
        try:
            run(False, True)
        finally:
            self._held_at_walk = {}
        for v, g in before:
            now = v.grad
            if now is g:
                continue
            if g is not None:  # added onto: a leaf's total, or an intermediate's flowing on
                self.held(v, g)
            if now is not None:
                self.stored(v, now)

    def _clone(self, fn: Any) -> Any:
        """The replay's copy of ``fn``; None (the trace refused) for a function called before."""
        pair = self._clones.get(id(fn))
        if pair is None or pair[0] is not fn:
            self.refuse(
                f"its backward reaches {type(fn).__name__}, a function called before this "
                f"call (a state carried with its graph: call unchain_backward() on it, or "
                f"detach it)"
            )
            return None
        return pair[1]

    def _step(self, fn: Any, ops: Any, call: Any) -> Vjp | None:
        clone = self._clone(fn)
        if clone is None:
            return None
        outputs = tuple([ref() for ref in fn.outputs])
        return Vjp(clone, ops, call, fn.inputs, outputs)

    def _returned(self, step: Vjp, gxs: Any) -> None:
        step.one = type(gxs) not in (tuple, list)
        step.gxs = [None if g is None else self._slot(g) for g in ((gxs,) if step.one else gxs)]
        self.code.append(step)

    def vjp(self, fn: Any, ops: Any, xs: tuple, y: Any, gy: Any, gxs: Any) -> None:
        """Record the vjp; a function called before this call refuses the trace."""
        step = self._step(fn, ops, None)
        if step is None:
            return
        # what the vjp does not read, the replay passes as None and frees earlier
        known = self._known
        step.xs = [known(x) if fn.vjp_reads_inputs else None for x in xs]
        reads_y = fn.vjp_reads_outputs
        if type(y) is tuple:
            step.ys = tuple([None if a is None or not reads_y else known(a) for a in y])
            step.gys = tuple([None if g is None else known(g) for g in gy])
        else:
            step.ys, step.gys = known(y) if reads_y else None, known(gy)
        self._returned(step, gxs)

    def expanded(self, fn: Any, run: Callable[[], tuple], gxs: tuple, reads: tuple) -> tuple | None:
        """Record ``fn``'s vjp as the Functions it applies, when that changes no bit.

        ``run()`` applies the vjp to Variables, as a backward with ``create_graph`` does,
        and returns its gradients' arrays; ``gxs`` is what the vjp gave on arrays, reading
        ``reads`` (None for what it does not read). Recorded as forwards, the vjp's
        operations are ones a fused chain may join (see :mod:`.fusion`). A trial run first,
        unrecorded, must give ``gxs``' types, shapes, dtypes and bits.

        Returns:
            The recorded run's gradients (the walk goes on with them), or None: nothing is
            recorded, because the runs disagree, the vjp reads an array this call did not
            make or read, or ``fn`` was called before this call (:meth:`vjp` then says so).
        """
        if self._clone(fn) is None:
            return None
        if any(a is not None and id(a) not in self._slots for a in reads):
            return None
        try:
            trial = run()
        except Exception:  # the vjp on arrays ran: it stays one step
            return None
        if len(trial) != len(gxs):
            return None
        for a, b in zip(trial, gxs):
            if (a is None) != (b is None) or (a is not None and not same(a, b)):
                return None
        with recording(self):
            return run()

    def legacy(self, fn: Any, carrier: Any, gys: tuple, call: Callable) -> Any:
        """Run ``call(fn, carrier, gys)``, a DeZero-style backward, and record it as one step.

        Its own work is unrecorded (a replay runs the backward again).
        """
        step = self._step(fn, carrier, call)
        with paused():  # its Variables' work is the function's own, done again on a replay
            gxs = call(fn, carrier, gys)
        if step is not None:
            step.xs = [None if x.data is None else self._known(x.data) for x in fn.inputs]
            step.ys = tuple([None if o is None else self._known(o.data) for o in step.outputs])
            step.gys = tuple([None if g is None else self._known(g) for g in gys])
            self._returned(step, gxs)
        return gxs

    def op(self, fn: Callable, args: tuple, out: Any) -> None:
        """Record ``out = fn(*args)``, array work of a backward; non-arrays are constants."""
        refs = []
        for a in args:
            n = self._slots.get(id(a))
            if n is None and type(a) in _by_type:
                n = self._known(a)
            refs.append(a if n is None else Ref(n))
        self.code.append(Op(fn, tuple(refs), self._slot(out)))

    def held(self, x: Any, g: Any) -> int | None:
        """Record that a backward adds onto ``g``, the gradient ``x`` holds; return its slot.

        It comes from this call's work, or from the start (a read); None: refused.
        """
        a = g.data if isinstance(g, Variable) else g
        self.adds_onto.add(id(x))
        n = self._slots.get(id(a))
        if n is not None:
            return n
        known = id(x) in self._entry_arrays
        if known and self._entry_arrays[id(x)] is not a:
            self.refuse(
                f"its backward adds onto a gradient given to {_about(x)} by hand inside the "
                f"call, which a replay would not give; clear gradients with cleargrad() and "
                f"let backward compute them"
            )
        elif not known and self._knows_start:
            self.refuse(
                f"its backward adds onto a gradient that {_about(x)} held before the walk "
                f"and that the previous recording never gave it (given by hand inside the "
                f"call, or left by a backward outside the step); clear it with cleargrad() "
                f"first, or let the step's own backward compute it"
            )
        else:
            return self._read(a, GRAD, x)
        return None

    def stored(self, x: Any, g: Any) -> None:
        """Record that a backward gave ``x`` the gradient ``g`` (a Variable, or its array).

        A copy is kept, to see it changed later.
        """
        a = g.data if isinstance(g, Variable) else g
        n = self._known(a)
        if n is None:
            return
        self.code.append(Store(x, n))
        self._stored[id(x)] = (x, a, copy_of(a))
        self._cleared.discard(id(x))

    def _note_clears(self, variables: Any) -> None:
        """Record as :class:`Clear` the gradients among ``variables`` the call cleared so far.

        A gradient is cleared when it is None now although the call stored one, or although
        the variable held one as the call started (what the previous trace tells).
        """
        for v in variables:
            i = id(v)
            if i in self._cleared or v.grad is not None:
                continue
            if i in self._stored or self.entry_grads.get(i) is False:
                self._stored.pop(i, None)
                self._cleared.add(i)
                self.code.append(Clear(v))

    def data(self, x: Any, frame: Any, value: Any) -> None:
        """Refuse the trace when the step's own code reads or assigns ``x.data``.

        A Parameter given its first array (a lazily sized layer's first call) makes the
        trace :attr:`fresh` instead: not comparable, and not a reason to stay eager.
        """
        if value is not READ and value is not None and isinstance(x, Parameter):
            if getattr(x, "data", None) is None:  # (no data at all inside Parameter())
                if self.fresh is None:
                    shape = tuple(getattr(value, "shape", ()))
                    self.fresh = f"a {type(x).__name__} of shape {shape} got its first value"
                return
        if not outside(frame):
            if value is READ:
                what = value_read(frame)  # float(x), x < y, print(x): values into Python
                if what is not None:
                    self.refuse(
                        f"it reads a value into Python ({what}), which a replay would not do "
                        f"again; return the Variable and read it after the call"
                    )
            elif self.first_write is None and _had_data(x):
                self.first_write = len(self.code)
            return
        if value is READ and harmless_read(frame):
            return
        if value is READ:
            self.refuse(
                f"it reads {_about(x)}'s values into Python (x.data at {_where(frame)}), "
                f"which a replay would not do again (a NaN check, numpy work on the array); "
                f"compute with zerograd's functions and read values after the call (x.shape "
                f"and x.dtype need no .data)"
            )
        else:
            self.refuse(
                f"it assigns {_about(x)}'s data by hand (x.data = ... at {_where(frame)}), "
                f"which a replay would not do again; update Parameters with an optimizer, "
                f"or pass the new array as an argument"
            )

    def drew(self, frame: Any, what: str, seeds: bool) -> None:
        """Refuse the trace when the step draws random numbers in Python, or seeds them."""
        if seeds:
            while frame is not None and not outside(frame):  # the step's line that led here
                frame = frame.f_back
            where = "" if frame is None else f" at {_where(frame)}"
            self.refuse(
                f"it seeds random numbers inside the call ({what}{where}), which a replay "
                f"would not do again; seed once, before the calls"
            )
        elif outside(frame):
            self.refuse(
                f"it draws random numbers in Python ({what} at {_where(frame)}): a replay "
                f"would not draw them, and repeats what the recorded calls drew (a coin "
                f"flip's branch, a noise array); draw inside a Function (F.dropout), or draw "
                f"outside the step and pass the result in as an argument"
            )
        elif self.first_write is None:
            # zerograd's own draw (dropout's mask) moves the random state: a forward's
            # check after it runs where it ran, so a refused replay has drawn as eagerly
            self.first_write = len(self.code)

    def depends(self, owner: Any, read: Callable[[Any], Any], value: Any) -> None:
        """Note Python state the work depends on; the first value is the call's start."""
        key = (id(owner), read)
        if key not in self.dependencies:
            self.dependencies[key] = [owner, read, value]

    def setting(self, owner: Any, name: str, what: str | None = None) -> None:
        """Refuse the trace: Python state that replayed work reads is assigned inside."""
        what = what or f"{type(owner).__name__}.{name}"
        self.refuse(
            f"it assigns {what} inside the call, which a replay would "
            f"not do, while the update it runs reads it; assign it between calls (as a "
            f"scheduler does: the replayed update reads the value of its time)"
        )

    def effect(self, fn: Callable[[], Any], params: list, settings: Callable[[], Any]) -> Any:
        """Run ``fn`` unrecorded and record it as one step, after checking its inputs.

        The gradients it reads must be those the walk stored, unchanged, and ``settings()``
        what it was when the call started.
        """
        owner = getattr(fn, "__self__", fn)
        self._note_clears(params)
        for p in params:
            g = p.grad
            got = self._stored.get(id(p))
            if g is None or got is None:
                continue
            if got[2] is _LEFT:
                bad = g.data is not got[1]
            else:
                bad = g.data is not got[1] or got[2] is None or not same(g.data, got[2])
            if bad:
                self.refuse(
                    f"the gradients {type(owner).__name__} reads were changed between "
                    f"backward and the update outside zerograd's functions (by hand, or "
                    f"averaged by another library)"
                )
        for f, value in self._settings:
            if f == settings and f() != value:
                self.refuse(
                    f"it changes {type(owner).__name__}'s hyperparameters before the update "
                    f"(a scheduler's step inside it?); change them between calls"
                )
        with paused():
            out = fn()
        self.code.append(Effect(fn, params, settings))
        for p in params:  # what the update left (its hooks' copies): a replay leaves the same
            g = p.grad
            if g is not None:
                self._stored[id(p)] = (p, g.data, _LEFT)
                self._cleared.discard(id(p))
        # from here on the update's own changes (a step counter) are what the call ends with
        self._settings = [(f, v) for f, v in self._settings if f != settings]
        self._settings.append((settings, settings()))
        return out

    def attribute(self, owner: Any, name: str, value: Any) -> None:
        """Record a Variable attribute written (a state); refuse any other value."""
        if value is not None and (type(value) is not Variable):
            self.refuse(
                f"it assigns {type(owner).__name__}.{name} = <{type(value).__name__}>; a "
                f"replay restores only Variable attributes (a layer's state such as h)"
            )
            return
        key = (id(owner), name)
        if key not in self.states:
            self.states[key] = [owner, name, owner.__dict__.get(name), value]
        self.states[key][3] = value

    # -- the end of the call ----------------------------------------------------------------
    def finish(self, result: Any) -> None:
        """Record what the call returned and check what it changed; called once, at its end.

        Args:
            result: the call's return value.
        """
        self.result = result
        starts = {id(st[2]): (st[0], st[1]) for st in self.states.values() if st[2] is not None}
        for read in self.reads.values():
            if read.how == VAR and id(read.where) in starts:
                read.how, read.where = STATE, starts[id(read.where)]
        for owner, name, _, end in self.states.values():
            if end is not None and id(end.data) not in self._slots:
                self.refuse(f"it gives {type(owner).__name__}.{name} a Variable it did not compute")
        for f, value in self._settings:
            if f() != value:
                self.refuse(
                    "it changes an optimizer's hyperparameters after the update (a "
                    "scheduler's step inside it?); change them between calls"
                )
        updated = {id(p) for ins in self.code if type(ins) is Effect for p in ins.params}
        states = {id(s[2]) for s in self.states.values()}
        for v, data, saved in self._captured:
            if id(v) in updated or id(v) in states or saved is None:
                continue
            if v.data is not data or not same(data, saved):
                self.refuse(
                    f"it changes the data of a Variable it does not make (shape "
                    f"{tuple(data.shape)}) outside zerograd's functions (x.data -= ... by "
                    f"hand?); update Parameters with an optimizer, or pass the array in"
                )
        self._note_clears([st[0] for st in self._stored.values()])
        self._note_clears([v for v in self.start_targets if id(v) not in self._cleared])
        for x, a, saved in self._stored.values():
            g = x.grad
            if g is None:
                continue
            if g.data is not a or (saved is not _LEFT and saved is not None and not same(a, saved)):
                self.refuse(
                    f"it changes the gradient of {_about(x)} after backward gave it, outside "
                    f"zerograd's functions (by hand), which a replay would not do"
                )
        held = {leaf for leaf, v in self.aliases if isinstance(v, Parameter)}  # step(w.data)
        for i, leaf in enumerate(self.leaves):
            if type(leaf) in _by_type and i not in held and self.arg_bits[i] != bits(leaf):
                self.refuse(_argument_changed(i, leaf, self.code, self._captured))
        for n in self.names():
            how = n.changed()
            if how is not None:
                self.refuse(_changed_inside(n, how))
        for owner, read, value in self.dependencies.values():
            if read(owner) != value:
                self.refuse(
                    f"it leaves {type(owner).__name__} in another mode than it found it "
                    f"(eval() or train() inside the call), which a replay would not do; "
                    f"switch modes between calls"
                )
        if replaced_here() != self.replaced:  # (another thread's are not the call's)
            self.refuse(
                "it replaces a layer's Parameter or sub-layer, or sets an optimizer up "
                "again, inside the call, which a replay would not do"
            )
        if not self._walked and _has_graph(result):
            if not Config.enable_backprop:  # a graph made where this no_grad() is not
                self.refuse(
                    "it returns Variables with a graph although it runs under no_grad(): "
                    "the graph was made in another thread (a pool), whose Config is its "
                    "own and whose work the recording does not see; compute in the calling "
                    "thread, or run the other thread's work in the caller's context "
                    "(contextvars.copy_context().run)"
                )
            self.refuse(
                "it returns Variables with a graph but runs no backward: a replay gives "
                "Variables without a graph; call it under no_grad() (inference), or put "
                "backward() and the update inside it"
            )

    def start(self) -> Start:
        """What the next trace of this kind of call should look at as its call starts.

        Returns:
            The targets, settings and captured Variables of this trace.
        """
        targets, seen = [], set()
        for ins in self.code:
            for v in [ins.target] if type(ins) is Store else getattr(ins, "params", ()):
                if id(v) not in seen:
                    seen.add(id(v))
                    targets.append(v)
        settings = [ins.settings for ins in self.code if type(ins) is Effect]
        captured = [r.where for r in self.reads.values() if r.how == VAR]
        return Start(targets, settings, captured)

    def names(self) -> list[Name]:
        """The names the step read whose objects a replay relies on.

        The watched names, less the layer states the call writes itself (an RNN's ``h``:
        a replay writes them too).

        Returns:
            The :class:`~.names.Name` objects.
        """
        written = {(id(st[0]), st[1]) for st in self.states.values()}
        return [n for n in self.watched if (id(n.holder), n.name) not in written]

    def variant(self) -> tuple:
        """What this call started from: traces agree only within a variant.

        The layer states (present or None), the modes the work depended on (a layer in
        eval mode) and, for each variable given a gradient, whether the walk added onto
        one it held (gradient accumulation) or gave a new one.

        Returns:
            A hashable description.
        """
        out: list = []
        for owner, name, start, _ in self.states.values():
            d = None if start is None else start.data
            sig = None if d is None else (type(d), d.shape, d.dtype)
            out.append((id(owner), name, sig))
        for owner, read, value in self.dependencies.values():
            out.append(("depends", id(owner), read, value))
        adds = self.adds_onto
        out.append(("adds", tuple([id(c.target) in adds for c in self.code if type(c) is Store])))
        return tuple(out)

    def array(self, n: int) -> Any:
        """The object in slot ``n`` as this call had it.

        Args:
            n: a slot number.

        Returns:
            The array (or library scalar).
        """
        return self._kept[n]

    def slot_of(self, obj: Any) -> int | None:
        """The slot of the object ``obj`` (an array), or None when the call never saw it.

        Args:
            obj: an array (or a Variable's data).

        Returns:
            Its slot number, or None.
        """
        return self._slots.get(id(obj))

    def arg_variable(self, v: Any) -> int | None:
        """The leaf number of ``v`` among the call's arguments, or None.

        Args:
            v: a Variable.

        Returns:
            Its leaf number, or None when it is not an argument.
        """
        return self._arg_vars.get(id(v))


def _changed_inside(n: Name, how: str) -> str:
    what = n.describe()
    if how == "rebound":
        return (
            f"it rebinds {what!r} inside the call (global, nonlocal, or an attribute of the "
            f"instance), which a replay would not do; change it between calls, or return "
            f"the new value"
        )
    if how == "drew":
        return (
            f"it draws random numbers from {what!r} in Python, which a replay would not "
            f"draw again; draw inside a Function (F.dropout), or outside the step and pass "
            f"the result in"
        )
    return (
        f"it changes {what!r} (a {type(n.value).__name__}) in place inside the call "
        f"(history.append(loss)?), which a replay would not do; return what it should "
        f"keep and add it after the call"
    )


def _has_graph(value: Any) -> bool:
    """Whether ``value`` (or something inside a tuple, list or dict of it) has a creator."""
    if isinstance(value, Variable):
        return value.creator is not None
    if isinstance(value, (tuple, list)):
        return any(_has_graph(v) for v in value)
    if isinstance(value, dict):
        return any(_has_graph(v) for v in value.values())
    return False


def _context_part(fn: Any, path: tuple) -> Any:
    """The array at ``path`` (indices into tuples) in ``fn.ctx``, as ``fn``'s forward saved it."""
    part = fn.ctx
    for i in path:
        part = part[i]
    return part


def _wrote_on_self(before: Any, fn: Any) -> bool:
    """Whether ``fn``'s forward set or replaced an attribute (``before``: its prior copy).

    A kernel's replays would keep what it wrote for this call.
    """
    was, now = settings_of(before), settings_of(fn)
    return was.keys() != now.keys() or any(now[k] is not v for k, v in was.items())


def _kernel_fault(fn: Any, kernel: Callable, arrays: list, outputs: Any) -> str | None:
    """What is wrong with a user Function's kernel on this call's arrays, or None.

    Run once per recording: the kernel must give the bits ``forward`` gave, and a class
    declaring ``fuses_as`` must compute that chain op (a fused chain computes the op, not
    the kernel).
    """
    name = type(fn).__name__
    ys = [o.data for o in outputs] if type(outputs) is list else [outputs.data]
    got = kernel(*arrays)
    got = list(got) if type(got) is tuple else [got]
    if len(got) != len(ys) or not all(type(a) is type(b) and same(a, b) for a, b in zip(got, ys)):
        return (
            f"{name}.kernel gave a function whose result differs from what {name}.forward "
            f"returned on the same arrays; a kernel must compute exactly what forward does "
            f"(or kernel() returns None, and replays call forward)"
        )
    op = op_of(fn)
    if op is not None and len(ys) == 1:
        try:
            ref = FUNCTIONS[op](get_array_module(arrays[0]), *arrays)
        except Exception:  # noqa: BLE001 (operands the op cannot take: not that op)
            ref = None
        if ref is None or type(ref) is not type(ys[0]) or not same(ref, ys[0]):
            return (
                f"{name}.fuses_as = {op!r}, but its forward does not compute {op} on these "
                f"arrays; a fused chain would compute {op}: name the op forward computes, "
                f"or leave fuses_as out"
            )
    return None
