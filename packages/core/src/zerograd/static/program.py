"""``Program``: a trace turned into one Python function that creates no graph objects.

The function is generated as source code, one line per instruction: each slot is a local
variable, each Function (a copy of the one the trace called), its bound ``forward`` and
``vjp``, the namespace and every constant is a closure cell. A replay is then a straight
run of array calls: no Function, Variable, weak reference or tuple per operation. Where
the backend fuses a chain of elementwise forwards (:mod:`.fusion`), the chain is one call.
The source is kept (:attr:`Program.source`) to be read.

The memory plan is the simplest one that holds: each slot is deleted right after its last
use, so an activation lives from its forward to the last vjp that reads it (the eager
engine keeps the whole graph until the step's loss is dropped); an accumulation whose
running sum nothing else holds adds into that sum in place (``Backend.compute_into``)
where the backend's arrays are writable, and makes a new array where they are not (JAX).
"""

from __future__ import annotations

import operator
import weakref
from collections import defaultdict
from typing import Any

from ..backends.registry import registry
from ..namespaces import ArrayOps
from ..recording import structure
from ..utils import is_named_tuple
from ..variable import Constant, Variable
from . import fusion
from .fusion import Fused
from .names import contents_of, value_of
from .trace import ARG, CONST, STATE, VAR, Clear, Effect, Forward, Op, Read, Ref, Store, Trace, Vjp

_by_type = registry.by_type

_graphless = ArrayOps.wrap  # a Variable around an array, with no graph (backward refuses it)

MISS = object()
"""What a Program returns when a guard fails: nothing was done, trace the call instead."""


class Stale:
    """What a Program returns when an object it names was replaced: nothing was done.

    A global name, closure cell or instance attribute the step reads refers to another
    object now (``model = MLP(...)`` for the next fold), or a Layer's Parameter or
    sub-layer was replaced: every recording of the step may name the old objects.

    Args:
        what: what changed, for messages.
    """

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


class Unreplayable(Exception):
    """A trace that no Program can reproduce (the message says why)."""


class Program:
    """The replay of ``later``, a trace that agrees with ``earlier`` (see :mod:`.compare`).

    Args:
        earlier: the earlier of the two agreeing traces (what persists across calls is
            what both saw as the same object).
        later: the trace replayed.
        name: the function's name, for the generated source's file name.

    Raises:
        Unreplayable: what the call returned cannot be rebuilt by a replay.

    Attributes:
        source: the generated Python source.
    """

    def __init__(self, earlier: Trace, later: Trace, name: str) -> None:
        self._t, self._a = later, earlier
        self._consts: list = [MISS]
        self._ids: dict[int, int] = {id(MISS): 0}
        self._lines: list[str] = []
        self._stand_ins: dict[int, list] = {}  # id(clone) -> [(stand-in, slot), ...]
        self._made: dict[int, str] = {}  # id(a traced Variable) -> the local rebuilding it
        self._asarray: dict[type, str] = {}  # array type -> its backend's asarray's cell
        self._producers = {ins.out: ins for ins in later.code if type(ins) is Op}
        self._checked: set[int] = set()  # id(Forward) whose check runs at the start
        self._kinds = self._reads()
        self._persistent = self._targets()
        self._readers = self._readers_of_slots()
        self._fused, self._joined = fusion.plan(later.code, later.meta, self._readers)
        self._last = self._last_uses()
        self._emit()
        params = ", ".join(f"k{j}" for j in range(len(self._consts)))
        body = "\n".join("        " + line for line in self._lines)
        self.source = f"def _program({params}):\n    def replay(a):\n{body}\n    return replay\n"
        scope: dict[str, Any] = {}
        exec(compile(self.source, f"<static_graph {name}>", "exec"), scope)  # noqa: S102
        self._run = scope.pop("_program")(*self._consts)  # (kept in scope: a cycle)
        self._t = self._a = None  # the traces' arrays are not kept

    def __call__(self, leaves: list) -> Any:
        """Replay on the call's argument leaves; :data:`MISS` when a guard fails.

        Args:
            leaves: the call's argument leaves (see :func:`.calls.arguments`).

        Returns:
            What the traced call returned, rebuilt from this replay's arrays.
        """
        return self._run(leaves)

    # -- analysis ---------------------------------------------------------------------------
    def _reads(self) -> dict[int, tuple[str, Any]]:
        """Each read's (how, where); a Variable the earlier trace did not see is a constant."""
        kinds = {}
        for i, ins in enumerate(self._t.code):
            if type(ins) is Read:
                how, where = ins.how, ins.where
                if how == VAR and self._a.code[i].where is not where:
                    how, where = CONST, where.data  # made inside the call, equal both times
                kinds[ins.slot] = (how, where)
        return kinds

    def _targets(self) -> set[int]:
        """Indices of the stores whose variable a replay can reach (kept, or an argument)."""
        out = set()
        for i, ins in enumerate(self._t.code):
            if type(ins) in (Store, Clear):
                v = ins.target
                if self._t.arg_variable(v) is not None or self._a.code[i].target is v:
                    out.add(i)
        return out

    def _readers_of_slots(self) -> dict[int, list[int]]:
        """Slot -> the instructions reading it; ``len(code)`` for a read after the replay."""
        uses: dict[int, list[int]] = defaultdict(list)
        for i, ins in enumerate(self._t.code):
            for n in _uses(ins):
                uses[n].append(i)
        end = len(self._t.code)
        for n in self._end_uses():
            uses[n].append(end)
        return uses

    def _last_uses(self) -> dict[int, int]:
        """Slot -> where it is read last (a fused chain reads its inputs where its root ran)."""
        joined = self._joined
        last: dict[int, int] = {}
        for n, readers in self._readers.items():
            last[n] = max(joined.get(i, i) for i in readers)
        return last

    def _end_uses(self) -> list[int]:
        out = [s for s in map(self._state_slot, self._t.states.values()) if s is not None]
        _result_slots(self._t.result, self._t, out)
        return out

    def _state_slot(self, state: list) -> int | None:
        end = state[3]
        return None if end is None else self._t.slot_of(end.data)

    # -- emission -----------------------------------------------------------------------------
    def k(self, obj: Any) -> str:
        """The name of the closure cell holding ``obj``."""
        j = self._ids.get(id(obj))
        if j is None:
            j = self._ids[id(obj)] = len(self._consts)
            self._consts.append(obj)
        return f"k{j}"

    def _emit(self) -> None:
        t = self._t
        code = t.code
        first_effect = next((i for i, c in enumerate(code) if type(c) is Effect), len(code))
        self._guards()
        for i in range(first_effect):
            if type(code[i]) is Read:
                self._read(code[i], miss=True)
        self._held_gradient_checks(first_effect)
        # the old gradients go where the backward (or anything with effects) begins: after
        # the forward, whose checks may still refuse the call with nothing changed
        first_after_forward = next(
            (i for i, c in enumerate(code) if type(c) in (Vjp, Op, Store, Effect)), len(code)
        )
        known = {c.slot for c in code[:first_effect] if type(c) is Read}
        early = first_after_forward if t.first_write is None else t.first_write
        self._early_checks(code[: min(first_after_forward, early)], known)
        dies: dict[int, list[int]] = defaultdict(list)  # instruction -> slots dead after it
        defined: set[int] = set()
        for i, ins in enumerate(code):
            if i == first_after_forward:
                self._clear()
            kind = type(ins)
            if kind is Read:
                if i >= first_effect:
                    self._read(ins, miss=False)
                outs = [ins.slot]
            elif kind is Forward:
                if i in self._joined:  # computed inside its chain's fused call
                    self._bind(ins)
                    outs = []
                elif i in self._fused:
                    self._bind(ins)
                    outs = [self._fused_call(self._fused[i])]
                else:
                    outs = self._forward(ins)
            elif kind is Vjp:
                outs = self._vjp(ins)
            elif kind is Op:
                outs = [self._op(ins)]
            elif kind is Store:
                outs = []
                if i in self._persistent:
                    self._store(ins)
            elif kind is Clear:
                outs = []
                if i in self._persistent:
                    leaf = t.arg_variable(ins.target)
                    owner = f"a[{leaf}]" if leaf is not None else self.k(ins.target)
                    self._lines.append(f"{owner}.grad = None")
            else:
                outs = []
                self._lines.append(f"{self.k(ins.fn)}()")
            for n in outs:
                if n is not None and n not in defined:
                    defined.add(n)
                    dies[max(self._last.get(n, i), i)].append(n)
            if dies.get(i):
                self._lines.append("del " + ", ".join(f"s{n}" for n in sorted(dies.pop(i))))
        if first_after_forward == len(code):
            self._clear()
        self._states()
        self._lines.append(f"return {self._result(t.result, self._a.result)}")

    def _guards(self) -> None:
        t = self._t
        stale = self.k(Stale("a layer's Parameter or sub-layer was replaced"))
        self._lines.append(f"if {self.k(structure)}.n != {t.version}:")
        self._lines.append(f"    return {stale}")
        for n in t.names():
            gone = self.k(Stale(f"{n.describe()!r} refers to another object"))
            holder, name, value = self.k(n.place), repr(n.name), self.k(n.value)
            if type(n.place) is dict:
                now = f"{holder}.get({name}, k0)"
            else:
                now = f"{self.k(value_of)}({holder}, {name})"
            self._lines.append(f"if {now} is not {value}:")
            self._lines.append(f"    return {gone}")
            held = n.contents()
            if held is not None:  # a list, dict or set the step reads: what it holds
                changed = self.k(Stale(f"{n.describe()!r} holds other objects"))
                self._lines.append(f"if {self.k(contents_of)}({value}) != {self.k(held)}:")
                self._lines.append(f"    return {changed}")
        for owner, read, value in t.dependencies.values():
            self._lines.append(f"if {self.k(read)}({self.k(owner)}) != {self.k(value)}:")
            self._lines.append("    return k0")
        for i, (leaf, v) in enumerate(t.aliases):
            if i < len(self._a.aliases) and self._a.aliases[i][1] is v:  # kept across calls
                data = ".data" if isinstance(t.leaves[leaf], Variable) else ""
                self._lines.append(f"if {self.k(v)}.data is not a[{leaf}]{data}:")
                self._lines.append("    return k0")
        for owner, name, start, _ in t.states.values():
            if start is None:
                self._lines.append(f"if getattr({self.k(owner)}, {name!r}, None) is not None:")
                self._lines.append("    return k0")
        for v, _, none_at_start in self._given():
            if none_at_start:
                self._lines.append(f"if {self.k(v)}.grad is not None:")
                self._lines.append("    return k0")

    def _held_gradient_checks(self, first_effect: int) -> None:
        """Check, before any effect runs, the held gradients the replay reads after one.

        A gradient held when the call starts and read after an effect (a backward adding
        onto what ``zero_grad(set_to_none=False)`` zeroed in place) may be gone in a later
        call (a step of another kind cleared it): found missing after the effect, the
        replay could only raise with the effect done; found here, the call is recorded anew.
        """
        t, code, written = self._t, self._t.code, set()
        for i in range(first_effect, len(code)):
            ins = code[i]
            if type(ins) in (Store, Clear):
                written.add(id(ins.target))
            if type(ins) is not Read:
                continue
            how, v = self._kinds[ins.slot]
            if how in (ARG, CONST, VAR, STATE) or id(v) in written:
                continue
            leaf = t.arg_variable(v)
            g = f"{f'a[{leaf}]' if leaf is not None else self.k(v)}.grad"
            typ, shape, dtype = t.meta[ins.slot]
            self._lines.append(
                f"if {g} is None or type({g}.data) is not {self.k(typ)} "
                f"or {g}.data.shape != {self.k(shape)} or {g}.data.dtype != {self.k(dtype)}:"
            )
            self._lines.append("    return k0")

    def _given(self) -> list[tuple[Variable, bool, bool]]:
        """The kept variables given gradients: ``(variable, added onto, None at start)``.

        ``added onto``: a backward of the call added onto the gradient it held (a held
        one, or one an earlier backward of the call gave); ``None at start``: its grad was
        None when the traced call started. A replay of such a call stores, where the
        eager call would add onto a gradient held at the start: the guard checks it is
        None (two backward calls accumulating, after a call that failed in its update).
        """
        t, out, seen = self._t, [], set()
        for i, ins in enumerate(t.code):
            if type(ins) is not Store or i not in self._persistent:
                continue
            v = ins.target
            if id(v) not in seen and t.arg_variable(v) is None:
                seen.add(id(v))
                out.append((v, id(v) in t.adds_onto, bool(t.entry_grads.get(id(v)))))
        return out

    def _clear(self) -> None:
        """Drop the gradients the call cleared before computing new ones (cleargrads()).

        The call did it somewhere before its backward; the replay does it as its backward
        begins, so the old gradients are not kept alive beside the backward's arrays, and a
        forward that refuses its inputs (labels out of range) leaves them as they were.
        """
        for v, added, none_at_start in self._given():
            if not added and not none_at_start:
                self._lines.append(f"{self.k(v)}.grad = None")

    def _read(self, ins: Read, miss: bool) -> None:
        n = ins.slot
        how, where = self._kinds[n]
        s = f"s{n}"
        if how == ARG:
            data = ".data" if isinstance(self._t.leaves[where], Variable) else ""
            self._lines.append(f"{s} = a[{where}]{data}")
            return
        if how == CONST:
            self._lines.append(f"{s} = {self.k(where)}")
            return
        fail = "return k0" if miss else f"raise RuntimeError({_CHANGED!r})"
        if how == VAR:
            self._lines.append(f"{s} = {self.k(where)}.data")
        elif how == STATE:
            owner, name = where
            self._lines.append(f"{s} = getattr({self.k(owner)}, {name!r}, None)")
            self._lines.append(f"if type({s}) is not {self.k(Variable)}:")
            self._lines.append(f"    {fail}")
            self._lines.append(f"{s} = {s}.data")
        else:  # GRAD
            leaf = self._t.arg_variable(where)
            owner = f"a[{leaf}]" if leaf is not None else self.k(where)
            self._lines.append(f"{s} = {owner}.grad")
            self._lines.append(f"if {s} is None:")
            self._lines.append(f"    {fail}")
            self._lines.append(f"{s} = {s}.data")
        typ, shape, dtype = self._t.meta[n]
        self._lines.append(
            f"if type({s}) is not {self.k(typ)} or {s}.shape != {self.k(shape)} "
            f"or {s}.dtype != {self.k(dtype)}:"
        )
        self._lines.append(f"    {fail}")

    def _early_checks(self, code: list, known: set[int]) -> None:
        """Run, before any work, the value checks of forwards whose kernels leave them out.

        A check may read the values of the inputs its function names in
        ``check_values_of`` and the shapes and dtypes of all: where those values are the
        call's own arrays (known at the start), it runs here, so a refused replay has done
        nothing, and on a GPU its read waits for no queued work. ``code`` is the forward
        only, up to the first forward that writes state (batch norm's running statistics)
        or draws random numbers (dropout's mask): a forward after that, or after the
        backward began, refuses a call that the eager one had already changed (statistics
        or the random state moved, gradients given, an update made), so
        its check runs where it ran, as do the others: right before their kernel
        (:meth:`_forward`).
        """
        for ins in code:
            if type(ins) is not Forward or not _kernel_skips_check(ins):
                continue
            if all(ins.ins[j] in known for j in ins.fn.check_values_of):
                args = [
                    f"s{n}" if n in known else self.k(_Described(self._t.meta[n])) for n in ins.ins
                ]
                self._lines.append(f"{self.k(ins.fn.check)}({', '.join(args)})")
                self._checked.add(id(ins))

    def _bind(self, ins: Forward) -> Any:
        """The replay's Function for ``ins``, its inputs as its vjp will see them."""
        fn = ins.fn
        stand_ins, inputs = [], []
        for v, n in zip(ins.inputs, ins.ins):
            if self._kinds.get(n, (None,))[0] in (VAR, CONST):
                inputs.append(v)  # a kept Variable (its data is current) or the constant
            else:
                s = _stand_in(v)
                stand_ins.append((s, n))
                inputs.append(s)
        fn.inputs, fn.outputs = tuple(inputs), ()
        self._stand_ins[id(fn)] = stand_ins
        return fn

    def _fused_call(self, fused: Fused) -> int:
        args = ", ".join(f"s{n}" for n in fused.ins)
        self._lines.append(f"s{fused.out} = {self.k(fused.call)}({args})")
        return fused.out

    def _forward(self, ins: Forward) -> list[int]:
        fn = self._bind(ins)
        for name, setting in ins.attrs.items():
            self._lines.append(f"{self.k(fn)}.__dict__[{name!r}] = {self._setting(setting)}")
        args = ", ".join(f"s{n}" for n in ins.ins)
        outs = ", ".join(f"s{n}" for n in ins.outs)
        if ins.many and len(ins.outs) == 1:
            outs += ","
        call = fn.forward if ins.kernel is None else ins.kernel
        if _kernel_skips_check(ins) and id(ins) not in self._checked:
            self._lines.append(f"{self.k(fn.check)}({args})")  # the kernel leaves it out
        self._lines.append(f"{outs} = {self.k(call)}({args})")
        for n in ins.outs:
            typ, shape, _ = self._t.meta[n]
            if shape == ():  # numpy answers 0-d work with scalars: make them 0-d arrays
                asarray = self._asarray.get(typ)
                if asarray is None:
                    backend = _by_type.get(typ) or registry.default()
                    asarray = self._asarray[typ] = self.k(backend.asarray)
                self._lines.append(f"if type(s{n}) is not {self.k(typ)}:")
                self._lines.append(f"    s{n} = {asarray}(s{n})")
        return ins.outs

    def _setting(self, v: Any) -> str:
        """Python source rebuilding a Function's setting from this replay's slots."""
        if type(v) is Ref:
            return f"s{v.slot}"
        if type(v) in (tuple, list):
            inner = ", ".join(self._setting(e) for e in v)
            if type(v) is list:
                return f"[{inner}]"
            return f"({inner}{',' if len(v) == 1 else ''})"
        return self.k(v)

    def _vjp(self, ins: Vjp) -> list:
        fn = ins.fn
        sets = self._stand_ins.get(id(fn), [])
        if ins.call is None and fn.own:  # its vjp reads no input value (a test reads it)
            for s, n in sets:  # described once: the vjp reads no values through them
                s.data = _Described(self._t.meta[n])
            sets = []
        elif ins.call is None and not fn.vjp_reads_inputs:
            sets = []
        else:  # a user's vjp, or a DeZero backward, may read their values
            sets = list(sets)
        if ins.call is not None:  # a DeZero-style backward reads self.outputs too
            outs = [None if o is None else _stand_in(o) for o in ins.outputs]
            fn.outputs = tuple([_dead if o is None else weakref.ref(o) for o in outs])
            self.k(outs)  # kept alive by the program
            ys = ins.ys if type(ins.ys) is tuple else (ins.ys,)
            sets += [(o, n) for o, n in zip(outs, ys) if o is not None and n is not None]
        for s, n in sets:
            self._lines.append(f"{self.k(s)}.data = s{n}")
        if ins.call is not None:
            call = f"{self.k(ins.call)}({self.k(fn)}, {self.k(ins.ops)}, {_tuple(ins.gys)})"
        else:
            xs, ys, gys = _tuple(ins.xs), _value(ins.ys), _value(ins.gys)
            call = f"{self.k(fn.vjp)}({self.k(ins.ops)}, {xs}, {ys}, {gys})"
        names = ["_" if n is None else f"s{n}" for n in ins.gxs]
        target = names[0] if ins.one else ", ".join(names) + ("," if len(names) == 1 else "")
        self._lines.append(f"{target} = {call}")
        for s, _ in sets:
            self._lines.append(f"{self.k(s)}.data = None")
        return ins.gxs

    def _op(self, ins: Op) -> int:
        out = ins.out
        args = ", ".join(f"s{a.slot}" if type(a) is Ref else self.k(a) for a in ins.args)
        into = self._into(ins)
        if into is None:
            self._lines.append(f"s{out} = {self.k(ins.fn)}({args})")
        else:
            x1, x2 = (f"s{a.slot}" for a in ins.args[:2])
            self._lines.append(f"{self.k(into)}('add', {x1}, {x2}, out={x1})")
            self._lines.append(f"s{out} = {x1}")
        return out

    def _into(self, ins: Op) -> Any:
        """The backend's ``compute_into`` when the sum ``ins`` may go into its first operand.

        That operand must be a sum this program made itself (nobody else holds it), used
        only here.
        """
        if ins.fn is not operator.add or type(ins.args[0]) is not Ref:
            return None
        g = ins.args[0].slot
        producer = self._producers.get(g)
        meta = self._t.meta
        if producer is None or producer.fn is not operator.add:
            return None
        if len(self._readers[g]) != 1 or meta[g] != meta[ins.out] or meta[g][1] == ():
            return None
        backend = _by_type.get(meta[g][0])
        array = self._t.array(g)
        if backend is None or not backend.writable(array):
            return None
        return backend.compute_into

    def _store(self, ins: Store) -> None:
        target = ins.target
        leaf = self._t.arg_variable(target)
        owner = f"a[{leaf}]" if leaf is not None else self.k(target)
        name = f"g{len(self._lines)}"  # unique: the line it is made on
        self._lines.append(f"{name} = {self.k(_graphless)}(s{ins.slot})")
        self._lines.append(f"{owner}.grad = {name}")
        g = target.grad
        if g is not None and g.data is self._t.array(ins.slot):  # the call's last gradient
            self._made[id(g)] = name  # returned, it is the same object, as it was eagerly

    def _states(self) -> None:
        for owner, name, _, end in self._t.states.values():
            value = "None"
            if end is not None:
                value = f"h{len(self._lines)}"  # unique: the line it is made on
                self._lines.append(f"{value} = {self.k(_graphless)}(s{self._t.slot_of(end.data)})")
                self._made[id(end)] = value  # returned, it is the state itself, as eagerly
            self._lines.append(f"setattr({self.k(owner)}, {name!r}, {value})")

    def _result(self, v: Any, u: Any) -> str:
        """Python source rebuilding ``v``, what the call returned (``u`` in the earlier call).

        The traces agree on what they returned (:mod:`.compare`): ``u`` has ``v``'s shape.
        """
        t = self._t
        if isinstance(v, Variable):
            if id(v) in self._made:
                return self._made[id(v)]
            leaf = t.arg_variable(v)
            if leaf is not None:
                return f"a[{leaf}]"
            if v is u:  # a Variable both calls returned, not made by them: the same one
                return self.k(v)
            n = t.slot_of(v.data)
            if n is None:
                raise Unreplayable("it returns a Variable around an array it did not compute")
            grad = "None"
            if v.grad is not None:
                m = t.slot_of(v.grad.data)
                if m is None:
                    raise Unreplayable(
                        "it returns a Variable whose gradient was set by hand inside it"
                    )
                grad = f"s{m}"
            name = f"r{len(self._lines)}"  # unique: the line it is made on
            self._lines.append(f"{name} = {self.k(_returned)}(s{n}, {grad})")
            self._made[id(v)] = name  # returned twice, it is one Variable, as it was eagerly
            return name
        if type(v) in _by_type and t.slot_of(v) is not None:
            return f"s{t.slot_of(v)}"
        if type(v) is tuple:
            inner = ", ".join(self._result(e, f) for e, f in zip(v, u))
            return f"({inner}{',' if len(v) == 1 else ''})"
        if type(v) is list:
            return "[" + ", ".join(self._result(e, f) for e, f in zip(v, u)) + "]"
        if is_named_tuple(v):
            return f"{self.k(type(v))}(" + ", ".join(self._result(e, f) for e, f in zip(v, u)) + ")"
        if type(v) is dict:
            items = [f"{self.k(key)}: {self._result(e, u[key])}" for key, e in v.items()]
            return "{" + ", ".join(items) + "}"
        return self.k(v)


_CHANGED = (
    "static_graph: a Variable the replay reads after an update no longer has the shape, "
    "dtype or type it had when traced"
)


def _uses(ins: Any) -> list[int]:
    kind = type(ins)
    if kind is Forward:
        out = list(ins.ins)
        for setting in ins.attrs.values():
            _refs(setting, out)
        return out
    if kind is Vjp:
        out = [n for n in ins.xs if n is not None]
        for v in (ins.ys, ins.gys):
            out += [n for n in (v if type(v) is tuple else (v,)) if n is not None]
        return out
    if kind is Op:
        return [a.slot for a in ins.args if type(a) is Ref]
    if kind is Store:
        return [ins.slot]
    return []


def _refs(v: Any, out: list) -> None:
    if type(v) is Ref:
        out.append(v.slot)
    elif type(v) in (tuple, list):
        for e in v:
            _refs(e, out)


def _result_slots(v: Any, t: Trace, out: list) -> None:
    if isinstance(v, Variable):
        for a in (v.data, None if v.grad is None else v.grad.data):
            n = t.slot_of(a)
            if n is not None:
                out.append(n)
    elif type(v) in _by_type:
        n = t.slot_of(v)
        if n is not None:
            out.append(n)
    elif isinstance(v, (tuple, list)):  # named tuples too
        for e in v:
            _result_slots(e, t, out)
    elif type(v) is dict:
        for e in v.values():
            _result_slots(e, t, out)


def _tuple(slots: Any) -> str:
    names = ["None" if n is None else f"s{n}" for n in slots]
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _value(v: Any) -> str:
    if type(v) is tuple:
        return _tuple(v)
    return "None" if v is None else f"s{v}"


def _kernel_skips_check(ins: Forward) -> bool:
    """Whether the replay calls a kernel for a function with value checks (run apart)."""
    return ins.kernel is not None and bool(ins.fn.check_values_of)


class _Described:
    """An array not made yet (or not held), as a check or a vjp sees it: shape and dtype."""

    __slots__ = ("shape", "dtype", "ndim")

    def __init__(self, meta: tuple) -> None:
        _, self.shape, self.dtype = meta
        self.ndim = len(self.shape)


def _stand_in(v: Variable) -> Variable:
    """A Variable of ``v``'s kind with no data: a replay puts its arrays in it for a vjp."""
    s = object.__new__(Constant if type(v) is Constant else Variable)
    s.data = s.name = s.grad = s.creator = None
    s.generation = v.generation
    return s


def _dead() -> None:
    """An output that was gone when the trace's walk ran (a dead weak reference)."""
    return None


def _returned(data: Any, grad: Any) -> Variable:
    """A returned Variable: the replay's array, and its gradient when the call gave one."""
    v = _graphless(data)
    if grad is not None:
        v.grad = _graphless(grad)
    return v
