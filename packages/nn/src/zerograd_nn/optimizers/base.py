"""The Optimizer base class: parameter groups, hooks, all-or-nothing updates, state dicts."""

from __future__ import annotations

import inspect
import numbers
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from zerograd import Parameter, Variable
from zerograd.backends import (
    HOLOMORPHIC_RULE,
    BackendMismatchError,
    as_array_of,
    backend_of,
    get_array_module,
    sum_dtype_of,
)
from zerograd.checks import callable_arg, flag, is_real
from zerograd.recording import current as _recorder
from zerograd.recording import replaced as _replaced

from ..ties import find_ties, restore_ties
from . import state as _st
from .flat import Packer, tied_ids
from .groups import GroupsTarget, LiveParams, ParamList, check_params, make_group
from .hyper import check_group, hyperparameter
from .inplace import NEW_ARRAYS, IntoArrays, Scratch, fits
from .watch import ParamGroup, report_assignments, snapshot

if TYPE_CHECKING:  # (typing.Self is Python 3.11+; checkers know typing_extensions)
    from typing_extensions import Self

_FLOATS: dict[type, set] = {}  # array type -> its dtypes found to be floating point
_TIES = "_zerograd_ties"  # the key of a copied optimizer's state holding find_ties' groups


def _no_settings() -> None:
    """What zeroing gradients reads from Python (nothing), as a recording compares it."""


def _is_target(x: Any) -> bool:
    """Whether ``x``, given first to an optimizer, is what it trains (PyTorch's ``params``)."""
    if x is None or isinstance(x, (numbers.Number, str, bytes, Parameter)):
        return False
    return hasattr(x, "params") or isinstance(x, (list, tuple, Iterator))


class _SetUpOnCreation(type):
    """``SGD(model.params(), lr=0.1)``: PyTorch's form creates and sets up at once.

    A first positional argument that is a Layer/Model, a list/tuple/iterator of Parameters
    or a list of parameter groups is taken off the arguments and given to ``setup``; a
    number there stays DeZero's first hyperparameter (``SGD(0.1)``, ``Adam(0.001)``).
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            kwargs = _torch_keywords(cls, kwargs)
        if args and isinstance(args[0], Parameter):
            raise TypeError(
                f"{cls.__name__}(...): the first argument is one Parameter; give a list of "
                f"Parameters ({cls.__name__}([p], ...)), a model or model.params()."
            )
        if args and _is_target(args[0]):
            if len(args) > 1:
                _check_torch_positions(cls, args[1:])
            opt = super().__call__(*args[1:], **kwargs)
            opt.setup(args[0])
            return opt
        return super().__call__(*args, **kwargs)

    @property
    def __signature__(cls) -> inspect.Signature:
        # what inspect.signature(SGD) shows: __init__'s (DeZero's), not (*args, **kwargs)
        sig = inspect.signature(cls.__init__)
        return sig.replace(parameters=list(sig.parameters.values())[1:])


#: PyTorch's optimizer keywords that zerograd's optimizers do not take, and what to do
_TORCH_ONLY = {
    "nesterov": "zerograd has no Nesterov momentum",
    "dampening": "zerograd's momentum has no dampening",
    "amsgrad": "zerograd's Adam has no AMSGrad variant",
    "maximize": "minimize the negated loss instead",
    "lr_decay": "decay the learning rate with a scheduler of zerograd_nn.schedulers",
    "initial_accumulator_value": "AdaGrad's accumulator starts at zero",
    "foreach": "zerograd updates flat buffers already: leave it out",
    "fused": "zerograd updates flat buffers already: leave it out",
    "capturable": "leave it out",
    "differentiable": "leave it out",
}


def _check_torch_positions(cls: type, values: tuple) -> None:
    """Refuse numbers after the parameters that PyTorch's optimizer would read otherwise.

    In PyTorch's form (parameters first) the numbers after them go by DeZero's order
    (``AdaDelta(rho, eps)``); where PyTorch's order names another hyperparameter there
    (``torch.optim.Adadelta(params, lr, rho)``), one TypeError names both readings.
    ``_pytorch_positional``, set on a class itself, is PyTorch's order for it.
    """
    theirs = cls.__dict__.get("_pytorch_positional")
    if theirs is None:  # no PyTorch counterpart (MomentumSGD), or a user's subclass
        return
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    ours = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    for j, v in enumerate(values):
        mine = ours[j] if j < len(ours) else None
        torch_name = theirs[j] if j < len(theirs) else None
        if (mine == "alpha" and torch_name == "lr") or mine == torch_name:
            continue
        name = cls.__name__
        torch_cls = cls.__dict__.get("_pytorch_name", name)
        shown = ", ".join(repr(x) for x in values[: j + 1])
        mine_says = f"{name}'s {mine}" if mine else f"{name} takes no more positional numbers"
        ways = []
        accepted = {p.name for p in params} | ({"betas"} if "beta1" in ours else set())
        if torch_name in accepted or torch_name == "lr":
            ways.append(f"{torch_name}={v!r} (PyTorch's reading)")
        elif torch_name in _TORCH_ONLY:
            mine_says += f"; PyTorch's {torch_name} has no counterpart here"
        if mine and is_real(v):
            ways.append(f"{mine}={v!r} (DeZero's)")
        raise TypeError(
            f"{name}(params, {shown}): PyTorch's {torch_cls} reads {torch_name} there, "
            f"{mine_says} (DeZero's order: {', '.join(ours)}); nothing was made."
            + (f" Name it: {' or '.join(ways)}." if ways else "")
        )


def _torch_keywords(cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with PyTorch's ``betas=(b1, b2)`` as ``beta1`` and ``beta2``.

    A PyTorch keyword that ``cls`` has no counterpart for is one TypeError saying what to
    write instead (an unknown keyword of any other name is Python's own error).
    """
    accepted = inspect.signature(cls.__init__).parameters
    if "betas" in kwargs and "beta1" in accepted and "beta2" in accepted:
        betas = kwargs["betas"]
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            raise TypeError(
                f"{cls.__name__}(betas=...): give two numbers (beta1, beta2), got {betas!r}"
            )
        if "beta1" in kwargs or "beta2" in kwargs:
            raise TypeError(f"{cls.__name__}: give betas=(beta1, beta2) or beta1=/beta2=, not both")
        kwargs = {k: v for k, v in kwargs.items() if k != "betas"}
        kwargs["beta1"], kwargs["beta2"] = betas
    if any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        return kwargs  # a subclass taking **kwargs decides itself
    for k in kwargs:
        if k in _TORCH_ONLY and k not in accepted:
            keywords = ", ".join(n for n in accepted if n != "self")
            raise TypeError(
                f"{cls.__name__}({k}=...): PyTorch's option has no counterpart here "
                f"({_TORCH_ONLY[k]}). {cls.__name__} takes: {keywords}."
            )
    return kwargs


@report_assignments
class Optimizer(metaclass=_SetUpOnCreation):
    """Base class: ``setup(target)``, ``update()``, ``update_one(param)``, ``add_hook(f)``.

    PyTorch's spellings work too: ``SGD(model.params(), lr=0.1)`` sets the optimizer up on
    what its first argument holds (a number there is still DeZero's ``lr``/``alpha``),
    ``step()`` is ``update()`` and ``zero_grad()`` clears the gradients it would use.

    ``target`` is a Layer/Model (anything with ``params()``), an iterable of Parameters, or
    a list of parameter groups ``[{"params": ..., "lr": 0.1}, ...]`` whose keys override
    the optimizer's hyperparameters for that group (``params`` may be a Layer, a list of
    Parameters or a ``{name: Parameter}`` dict such as ``named_params()``). Hooks are
    called as ``f(params)`` with the parameters that have a gradient.

    :meth:`update` is all or nothing: it checks every gradient, parameter, state array and
    hyperparameter, runs the hooks on private copies of the gradients (undone if one
    raises), and only then writes. Each optimizer writes its update once (``_rule``)
    against a namespace of array operations (:mod:`.inplace`): arrays their backend can
    write in place (numpy, cupy) are updated with in-place arithmetic that cannot fail once
    checked; others (JAX) get new arrays. Subclasses written DeZero's way (overriding
    ``update_one``) keep working.
    """

    #: each group's lr before any scheduler changed it, set by the first scheduler made on
    #: this optimizer: the base lrs of every later one
    initial_lrs: list[float] | None = None
    _state_names: tuple[str, ...] = ()  # per-parameter state arrays, zeros at first
    _counters: tuple[str, ...] = ()  # step counters saved in the state dict (Adam's t)
    _entry_counters: tuple[str, ...] = ()  # counts saved in each parameter's entry (Adam's t)
    _nonnegative_state: tuple[str, ...] = ()  # state arrays never below 0 (Adam's v)
    #: ``cohort(param)``: what besides its group a parameter's step depends on (Adam's step
    #: count), an int; parameters of one cohort are packed together, and
    #: :meth:`_coefficients` receives it. None: every parameter is in cohort 0
    _cohort: Callable[[Parameter], int] | None = None

    def __init__(self, **hyperparameters: float) -> None:
        """Set up the empty optimizer, then set each hyperparameter given, in order.

        Args:
            **hyperparameters: a subclass's hyperparameter attributes by name, each checked
                as it is set (``super().__init__(lr=lr, momentum=momentum)``).
        """
        self.target: Any = None
        self.hooks: list[Callable[[list[Parameter]], None]] = []
        self.defaults: dict[str, float] = {}
        self.param_groups: list[dict[str, Any]] = []
        self._state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._scratch = Scratch()
        self._packer = Packer()
        for name, value in hyperparameters.items():
            setattr(self, name, value)

    # -- set-up ---------------------------------------------------------------------------
    @classmethod
    def hyperparameter_specs(cls) -> dict[str, hyperparameter]:
        """Every hyperparameter attribute by name, aliases included (Adam's ``alpha``).

        Each descriptor's ``key`` is the group key it stands for (``alpha``'s is ``"lr"``);
        its bounds are what ``setup``, ``load_state_dict`` and ``update`` accept.

        Returns:
            ``{attribute name: descriptor}``, a subclass's over its bases'.
        """
        out = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, hyperparameter):
                    out[name] = value
        return out

    def _checked(self, hp: dict) -> dict:
        """A group's hyperparameters as checked floats (an update refuses bad ones first)."""
        return check_group(type(self), hp)

    def setup(self, target: Any) -> Self:
        """Remember what :meth:`update` changes (a model, Parameters or groups).

        Args:
            target: a Layer/Model, an iterable of Parameters, or a list of group dicts.

        Returns:
            This optimizer.

        Raises:
            TypeError: ``target`` is none of those, or a group holds a non-Parameter.
            ValueError: a group has no ``"params"``, an unknown key, two values under two
                names of one hyperparameter (Adam's ``lr`` and ``alpha``), or repeats a
                Parameter.
        """
        name = type(self).__name__
        if self.target is not None:  # set up again: a replay recorded before must not run on
            _replaced()
        self._packer.clear()
        if isinstance(target, (list, tuple)) and target and isinstance(target[0], dict):
            groups = [make_group(self, g, i) for i, g in enumerate(target)]
            seen: set[int] = set()
            for i, g in enumerate(groups):
                for p in g["params"]:  # a model's group too: its parameters as of now
                    if id(p) in seen:
                        raise ValueError(
                            f"{name}.setup: a Parameter of group {i} is also in an earlier "
                            f"group; each Parameter may be in one group only."
                        )
                    seen.add(id(p))
            self.param_groups = groups
            self.target = GroupsTarget(groups)
            return self
        if hasattr(target, "params"):
            group = ParamGroup(params=LiveParams(target))
        else:
            group = ParamGroup(params=check_params(name, target, "target"))
            target = ParamList(group["params"])
        group.update(self.defaults)
        self.param_groups = [group]
        self.target = target
        return self

    # -- update ---------------------------------------------------------------------------
    def _require_target(self, call: str) -> None:
        """Refuse ``call`` (e.g. ``".update()"``) of an optimizer that was never set up."""
        if self.target is None:
            name = type(self).__name__
            raise RuntimeError(
                f"{name}{call}: the optimizer has not been set up (no target); call "
                f"optimizer.setup(model) first (or give it the parameters: "
                f"{name}(model.params(), ...))."
            )

    def _all_params(self) -> list[Parameter]:
        self._require_target(".update()")
        return list(self.target.params())

    def grouped_params(self) -> list[tuple[dict, list[Parameter]]]:
        """Each parameter group with its Parameters as of now (a Parameter once only).

        Returns:
            ``[(group dict, [Parameter, ...]), ...]``; one ``({}, params)`` pair for a
            subclass that assigned ``target`` itself.

        Raises:
            RuntimeError: the optimizer has not been set up.
        """
        if self.target is None:
            self._all_params()  # raises the no-target error
        if not self.param_groups:  # a subclass that assigned target itself
            return [({}, self._all_params())]
        groups = self.param_groups
        if len(groups) == 1 and type(groups[0]["params"]) is LiveParams:
            # asked at every update: a model's params() gives each Parameter once already
            return [(groups[0], list(groups[0]["params"]))]
        out, seen = [], set()
        for g in groups:
            ps = []
            for p in g["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    ps.append(p)
            out.append((g, ps))
        return out

    def update(self) -> None:
        """Check everything, run the hooks, compute every new value, then write them all.

        Raises:
            ValueError: a gradient of the wrong shape, a read-only parameter array, or
                optimizer state made for another shape; nothing changed.
            TypeError: a non-floating gradient or parameter; nothing changed.
            BackendMismatchError: a gradient on another backend than its parameter (a
                TypeError); nothing changed.
        """
        rec = _recorder()
        if rec is not None:  # a static-graph trace: the update is one step a replay reruns
            return rec.effect(self.update, self._all_params(), self._read_by_update)
        grouped = self.grouped_params()
        # a step like the last one (the same packed parameters, gradients that fit their
        # views) skips the per-parameter checks: the segments' own check covers them
        try:
            steady = None if self.hooks else self._packer.steady(grouped, self._state)
        except AttributeError:  # something else than a Parameter put into a group by hand
            self._check_members(grouped)
            raise
        if steady is not None:
            return self._apply(grouped, steady)
        self._check_members(grouped)
        all_params = [p for _, ps in grouped for p in ps]
        self._validate(all_params)
        if self.hooks:
            # hooks work on private copies of the gradients: whatever they do (in place
            # included) reaches no other parameter, and a hook that raises is undone by
            # giving each parameter its untouched gradient back
            active = [p for p in all_params if p.grad is not None]
            saved = [(p, p.grad, p.grad.data) for p in active]
            try:
                for p in active:
                    g = p.grad.data
                    p.grad = Variable(backend_of(g).astype(g, g.dtype))
                for f in self.hooks:
                    f(active)
                self._validate(all_params)  # a hook may have replaced gradients
            except BaseException:
                for p, g, data in saved:
                    g.data = data
                    p.grad = g
                raise
        self._apply(grouped)

    def _check_members(self, grouped: list[tuple[dict, list[Parameter]]]) -> None:
        """Refuse a group holding something else than a Parameter (put there by hand)."""
        for i, (_, ps) in enumerate(grouped):
            bad = [type(p).__name__ for p in ps if not isinstance(p, Parameter)]
            if bad:
                raise TypeError(
                    f"{type(self).__name__}.update(): param_groups[{i}]['params'] holds "
                    f"{', '.join(sorted(set(bad)))}, not only Parameters; a group's params "
                    f"must be Parameters (model.params() gives them). Nothing was updated."
                )

    def settings(self) -> tuple:
        """What :meth:`update` reads besides the arrays: every group's hyperparameters.

        A static-graph replay calls :meth:`update` again with the values of its time; this
        snapshot (comparable with ``==``) shows whether a traced step changed them inside.

        Returns:
            The defaults and each group's hyperparameters, as sorted tuples.
        """
        groups = [
            tuple(sorted((k, v) for k, v in g.items() if isinstance(v, (int, float))))
            for g in self.param_groups
        ]
        return (tuple(sorted(self.defaults.items())), tuple(groups))

    def _read_by_update(self) -> tuple:
        """What :meth:`update` reads from Python, as a recording compares it (see ``watch``).

        The hyperparameters, this optimizer's attributes and its hooks'.
        """
        return (self.settings(), snapshot(self), tuple([snapshot(h) for h in self.hooks]))

    def _apply(self, grouped: list[tuple[dict, list[Parameter]]], steady: Any = None) -> None:
        """Plan and write the update of ``grouped``; ``steady``: :meth:`.flat.Packer.steady`'s."""
        if type(self).update_one is not Optimizer.update_one:  # a DeZero-style subclass
            for group, ps in grouped:
                self._hp = group
                for p in ps:
                    if p.grad is not None:
                        self.update_one(p)
            return
        plan, used = [], []
        cohort = self._cohort
        for hp, names, n, segments, rest in self._planned_groups(grouped, steady=steady):
            for key, seg, new, members, arrays in segments:
                coefficients = self._coefficients(hp, key[3])
                plan.append((None, seg, (key, new, coefficients, members, arrays)))
                used.append(key)
            for p in rest:
                c = 0 if cohort is None else cohort(p)
                plan.append(self._planned(p, self._coefficients(hp, c), names, n))
        self._commit(plan)
        self._packer.retain(used)

    def _planned_groups(
        self, grouped: list[tuple[dict, list[Parameter]]], steady: list | None = None
    ) -> list[tuple]:
        """Each group's step: its parameters with a gradient, packed where they can be.

        May fail (a bad hyperparameter, no memory for new buffers); changes nothing.
        ``steady``: each group's segments, when :meth:`.flat.Packer.steady` found that the
        update may reuse them as they are. A segment's key is ``(group index, array type,
        dtype, cohort)`` (see :attr:`_cohort`).

        Returns:
            ``[(hp, state names, scratch count, [(key, segment, new, params, arrays)],
            others)]``; ``arrays``: the params' gradient arrays as the steady check read
            them, or None.
        """
        packer = self._packer
        tied: set[int] | None = None  # among every parameter: ties across groups count too
        out = []
        for i, (group, ps) in enumerate(grouped):
            hp = self._checked(group or self.defaults)
            names, n = self._state_for(hp), self._scratch_count(hp)
            if steady is not None:
                parts = steady[i]
                for _, seg, _, _ in parts:
                    if seg.names != names or len(seg.scratch) != n:
                        break
                else:
                    kept = [(key, seg, False, *rest) for key, seg, *rest in parts]
                    out.append((hp, names, n, kept, []))
                    continue
            with_grad = [p for p in ps if p.grad is not None]
            packed, rest = packer.split(with_grad, self._state, self._cohort)
            segments = []
            unordered = False
            for sub, members in packed.items():
                key = (i, *sub)
                if tied is None:
                    tied = tied_ids(p for _, qs in grouped for p in qs)
                seg, new, left = packer.plan(key, members, names, self._state, n, tied)
                if new:  # the commit writes through it: checked once per backend, here
                    IntoArrays.of(backend_of(seg.data), seg.data)
                if seg is not None:
                    if left:
                        gone = {id(p) for p in left}
                        members = [p for p in members if id(p) not in gone]
                    segments.append((key, seg, new, members, None))
                if left:
                    rest.extend(left)
                    unordered = True
            if unordered and len(rest) > 1:
                # left out segment by segment, after those never packed: back to the group's
                # order, in which parameters sharing memory (tied weights) take their steps
                # as they do unpacked
                at = {id(p): j for j, p in enumerate(with_grad)}
                rest.sort(key=lambda p: at[id(p)])
            out.append((hp, names, n, segments, rest))
        return out

    def lend_gradients(self, scale: float | None = None) -> tuple[list[Any], list[Parameter]]:
        """The flat buffers the next :meth:`update` reads the gradients from, filled now.

        For data-parallel training: the gradients of the packed parameters are gathered
        into their flat buffers, and each of those parameters' gradient becomes its view of
        them. Whatever changes the buffers in place before the next :meth:`update`
        (averaging over ranks) changes the gradients that update reads, with no copy.
        Parameters that are not packed (see :mod:`.flat`) are not in the answer. From the
        first call on, the optimizer packs parameters of every size (no
        ``flat.PACK_LIMITS``): the gathering pass is the averaging's own.

        Args:
            scale: a factor each gradient is multiplied by as it is gathered (``1 / ranks``
                for a mean), in the same pass; None gathers them as they are.

        Returns:
            ``(flat gradient buffers, the parameters whose gradients they hold)``; both
            empty for an optimizer written DeZero's way (``update_one``), or when planning
            the update fails (the update itself then says why).
        """
        if type(self).update_one is not Optimizer.update_one or self.target is None:
            return [], []
        self._packer.every_size = True  # the averaging's pass is the gather: pack them all
        try:
            planned = self._planned_groups(self.grouped_params())
        except Exception:  # the update raises it, with nothing changed
            return [], []
        bufs, covered = [], []
        for _, _, _, segments, _ in planned:
            for key, seg, new, members, _ in segments:
                if new:
                    seg.fill(members, self._state)
                    self._packer.keep(key, seg)
                bufs.append(seg.lend_grads(members, scale))
                covered.extend(members)
        return bufs, covered

    def _coefficients(self, hp: dict, cohort: int) -> dict:
        """The scalars of one group's step (hyperparameters, Adam's bias correction).

        Computed while planning, so that nothing left to do in the commit can fail.
        ``cohort``: the :attr:`_cohort` of the parameters the step is for.
        """
        return hp

    def _scratch_count(self, hp: dict) -> int:
        """How many scratch arrays like the parameter :meth:`_rule` uses."""
        return 0

    def _state_for(self, hp: dict) -> tuple[str, ...]:
        """The state arrays a step with the hyperparameters ``hp`` uses."""
        return self._state_names

    def _rule(
        self, u: Any, data: Any, grad: Any, state: dict, scratch: list, hp: dict
    ) -> tuple[Any, dict]:
        """The update, written once against the namespace ``u`` (see :mod:`.inplace`).

        Computes with ``u.add``/``subtract``/``multiply``/``divide``/``sqrt`` and their
        ``out=`` targets (the ``state`` arrays and the :meth:`_scratch_count` arrays of
        ``scratch``; never ``data`` or ``grad``), using what each call returns: with
        :class:`.IntoArrays` the results are written into those targets, with
        :data:`.NEW_ARRAYS` they are new arrays (``scratch`` then holds None).

        Args:
            u: the namespace.
            data: the parameter's array.
            grad: its gradient's array.
            state: its state arrays by name (zeros at first).
            scratch: the scratch arrays (or Nones).
            hp: the group's hyperparameters and :meth:`_coefficients`.

        Returns:
            ``(step, new_state)``: :meth:`update` adds ``step`` to the parameter once every
            parameter's is known.
        """
        raise NotImplementedError(f"{type(self).__name__}._rule is not implemented")

    def _planned(self, p: Parameter, hp: dict, names: tuple[str, ...], n: int) -> tuple:
        """One parameter's part of the commit (``names``: its state, ``n``: scratch arrays).

        May fail; changes nothing.
        """
        data, grad = p.data, p.grad.data
        stored = self._state.get(p)
        state = _st.arrays_for(stored, data, names)
        backend = backend_of(data)
        wide = sum_dtype_of(data)
        if wide is None and fits(data, grad, state, backend):
            scratch = self._scratch.get(data, n)
            into = IntoArrays.of(backend, data)  # checked once per backend: may raise
            return p, into, (grad, state, scratch, hp, state is not stored)
        dtype = data.dtype
        if wide is not None:
            # float16: computed in float32, as PyTorch's kernels do (Adam's grad * grad of
            # a gradient of 300 is inf in float16); the commit rounds the parameter once
            data, grad = backend.astype(data, wide), backend.astype(grad, wide)
            state = {k: backend.astype(a, wide) for k, a in state.items()}
        delta, new_state = self._rule(NEW_ARRAYS, data, grad, state, [None] * n, hp)
        if wide is None and delta.dtype != dtype:
            delta = backend.astype(delta, dtype)
        kind = type(p.data)
        for k, a in new_state.items():
            if a.dtype != dtype or type(a) is not kind:  # numpy's 0-d arithmetic: scalars
                new_state[k] = backend.asarray(a, dtype)
        return p, None, (delta, new_state)

    def _commit(self, plan: list) -> None:
        """Write the planned changes (nothing here can fail after the checks)."""
        for p, u, args in plan:
            if p is None:  # a segment of flat parameters: the rule once over its buffers
                key, new, hp, members, arrays = args
                if new:
                    u.fill(members, self._state)
                    self._packer.keep(key, u)
                u.gather_grads(members, arrays)
                into = IntoArrays.of(backend_of(u.data))
                step, _ = self._rule(into, u.data, u.grad, u.state, u.scratch, hp)
                into.add(u.data, step, out=u.data)
                continue
            if u is not None:  # the in-place path: the rule writes into state and scratch
                grad, state, scratch, hp, new = args
                data = p.data
                step, _ = self._rule(u, data, grad, state, scratch, hp)
                u.add(data, step, out=data)
                if new and state:
                    self._state[p] = state
                continue
            delta, new_state = args
            data = new = p.data
            # in place where the array type allows it (numpy, cupy); a float32 delta of a
            # float16 parameter is added in float32 and rounded once
            new += delta
            if new is not data:  # ... a new array for immutable ones (JAX)
                p.data = new if new.dtype == data.dtype else backend_of(new).astype(new, data.dtype)
            if new_state:
                self._state[p] = new_state

    def update_one(self, param: Parameter) -> None:
        """Change one parameter from its gradient, with its group's hyperparameters.

        Checked as :meth:`update` checks its parameters first: a bad gradient, parameter or
        state raises with nothing changed.

        Args:
            param: a parameter with a gradient.

        Raises:
            ValueError, TypeError: as :meth:`update`; or ``param`` has no gradient.
        """
        every = [(g, q) for g, ps in self.grouped_params() for q in ps]
        at = next((i for i, (_, q) in enumerate(every) if q is param), None)
        group = {} if at is None else every[at][0]
        if param.grad is None:
            raise ValueError(
                f"{type(self).__name__}.update_one(param): {self._label(at or 0, param)} has "
                f"no gradient; nothing was updated."
            )
        self._validate([param], first=at or 0, call=".update_one(param)")
        cohort = 0 if self._cohort is None else self._cohort(param)
        hp = self._coefficients(self._checked({**self.defaults, **group}), cohort)
        self._commit([self._planned(param, hp, self._state_for(hp), self._scratch_count(hp))])

    def step(self) -> None:
        """PyTorch's name of :meth:`update` (the same call)."""
        self.update()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradient of every parameter this optimizer updates (``p.cleargrad()``).

        PyTorch's habit; DeZero's is ``model.cleargrads()``. Gradients become None, as
        PyTorch's default ``set_to_none=True`` does; with ``set_to_none=False`` each held
        gradient array is set to zeros in place, as PyTorch's is.

        Raises:
            RuntimeError: the optimizer has not been set up.
            TypeError: ``set_to_none`` is not a bool.
        """
        set_to_none = flag(f"{type(self).__name__}.zero_grad", "set_to_none", set_to_none)
        self._require_target(".zero_grad()")
        if set_to_none:
            for p in self._all_params():
                p.cleargrad()
            return
        rec = _recorder()
        if rec is not None:  # a static-graph trace: writes in place, which a replay redoes
            rec.effect(self._zero_grads, self._all_params(), _no_settings)
            return
        self._zero_grads()

    def _zero_grads(self) -> None:
        """Set every held gradient of the parameters to zeros, in place where it can be."""
        for p in self._all_params():
            if p.grad is None:
                continue
            g = p.grad.data
            try:
                g[...] = 0
            except (TypeError, ValueError):  # an immutable or read-only array
                p.grad = Variable(get_array_module(g).zeros_like(g))

    def add_hook(self, f: Callable[[list[Parameter]], None]) -> None:
        """Call ``f(params)`` at the start of every :meth:`update` (WeightDecay, ClipGrad...).

        Args:
            f: a callable taking the list of parameters that have a gradient.

        Raises:
            TypeError: ``f`` is not callable, or is a class (``ClipGrad`` for
                ``ClipGrad(1.0)``): calling it would make an instance and change nothing.
        """
        callable_arg(f"{type(self).__name__}.add_hook", "f", f)
        if isinstance(f, type):
            raise TypeError(
                f"{type(self).__name__}.add_hook(f): f is the class {f.__name__}, not a hook; "
                f"give an instance: add_hook({f.__name__}(...))."
            )
        self.hooks.append(f)

    # -- checks ---------------------------------------------------------------------------
    def param_names(self, positional: bool = True) -> dict[int, str]:
        """``{id(param): name}``: dotted model names or the ``param_names`` given.

        Parameters with neither are named by position (``"3"``, or ``"1.3"`` for group 1)
        unless ``positional`` is False.

        Args:
            positional: name unnamed parameters by position (else leave them out).

        Returns:
            The names, keyed by ``id`` of each parameter.
        """
        names: dict[int, str] = {}
        for i, (g, ps) in enumerate(self.grouped_params()):
            given = g.get("param_names")
            src = g.get("params")
            model = src.model if isinstance(src, LiveParams) else None
            if given is not None:
                pairs: Iterable = zip(given, ps)
            elif model is not None and hasattr(model, "named_params"):
                pairs = model.named_params().items()
            elif positional:
                prefix = f"{i}." if len(self.param_groups) > 1 else ""
                pairs = ((f"{prefix}{j}", p) for j, p in enumerate(ps))
            else:
                pairs = ()
            for k, p in pairs:
                names.setdefault(id(p), k)
        return names

    def params_outside(self, model: Any) -> list[str]:
        """The parameters this optimizer updates that are not ``model``'s, by name.

        Empty when it was set up on ``model`` or on some of its parameters (a frozen
        backbone). Not empty when it was set up on another instance of the same
        architecture: a Trainer and a checkpoint of ``model`` then refuse it (the first
        would train nothing, the second would save another model's optimizer state).

        Args:
            model: a Layer/Model (anything with ``params()``).

        Returns:
            The names (:meth:`param_names`) of the parameters that are not ``model``'s.

        Raises:
            RuntimeError: the optimizer has not been set up.
        """
        self._require_target("")  # named by its callers (a Trainer, a checkpoint)
        mine = {id(p) for p in model.params()}
        names = self.param_names()
        return [names[id(p)] for _, ps in self.grouped_params() for p in ps if id(p) not in mine]

    def _label(self, index: int, param: Parameter) -> str:
        """``parameter 2 ('l1.b')``: the position in the update and the best name."""
        name = self.param_names(positional=False).get(id(param)) or param.name
        return f"parameter {index} ({name!r})" if name else f"parameter {index} (unnamed)"

    def _validate(
        self, all_params: list[Parameter], first: int = 0, call: str = ".update()"
    ) -> None:
        """Refuse anything that could make the update fail half-way, before anything changes.

        ``first``: the position of ``all_params[0]`` in the update; ``call``: the method
        named in the messages.
        """
        op = f"{type(self).__name__}{call}"
        for i, p in enumerate(all_params, first):
            if p.grad is None or p.data is None:
                continue
            g, data = p.grad.data, p.data
            shape = data.shape
            if type(g) is not type(data) and backend_of(g) is not backend_of(data):
                on, off = backend_of(data).name, backend_of(g).name
                raise BackendMismatchError(
                    f"{op}: {self._label(i, p)} of shape {tuple(shape)} lives on backend {on!r} "
                    f"but its gradient on {off!r}; nothing was updated. Compute the loss on the "
                    f"parameters' backend (move the inputs: x.to({on!r})), or move the gradient "
                    f"(param.grad.to({on!r}))."
                )
            if g.shape != shape and tuple(g.shape) != tuple(shape):
                raise ValueError(
                    f"{op}: {self._label(i, p)} of shape {tuple(shape)} has a gradient of shape "
                    f"{tuple(g.shape)}; nothing was updated. Gradients must have their "
                    f"parameter's shape."
                )
            if not (_is_float(g) and _is_float(data)):
                what, a = ("data", data) if _is_float(g) else ("a gradient", g)
                raise TypeError(
                    f"{op}: {self._label(i, p)} of shape {tuple(shape)} and dtype {data.dtype} "
                    f"has {what} of dtype {a.dtype}; nothing was updated. Parameters and their "
                    f"gradients must be floating point (e.g. float32).{_complex_advice(a)}"
                )
            flags = getattr(data, "flags", None)
            if flags is not None and getattr(flags, "writeable", True) is False:
                raise ValueError(
                    f"{op}: {self._label(i, p)} of shape {tuple(shape)} holds a read-only array; "
                    f"nothing was updated. Give it a writable copy first "
                    f"(param.data = param.data.copy())."
                )
            st = self._state.get(p)
            if not st:
                continue
            for bad, a in st.items():
                if a.shape != shape and tuple(a.shape) != tuple(shape):
                    raise ValueError(
                        f"{op}: {self._label(i, p)} now has shape {tuple(shape)} but its "
                        f"optimizer state {bad!r} was made for shape {tuple(a.shape)}; nothing "
                        f"was updated. Call optimizer.clear_state() (or make a new optimizer) "
                        f"after reshaping parameters."
                    )

    # -- state ----------------------------------------------------------------------------
    def state(self, param: Parameter, *names: str) -> list[Any]:
        """The state arrays ``names`` of ``param`` (zeros at first), on the param's backend.

        State made on another backend (the param moved since) is converted first.

        Args:
            param: a parameter of this optimizer.
            *names: state names such as ``"m"``, ``"v"``.

        Returns:
            One array per name.
        """
        data = param.data
        st = self._state.get(param)
        if st is None:
            self._packer.forget()  # a segment trusts the state dicts it left (flat.Segment)
            xp = get_array_module(data)
            st = self._state[param] = {n: xp.zeros_like(data) for n in names}
        else:
            for n in names:
                if n not in st:
                    self._packer.forget()
                    st[n] = get_array_module(data).zeros_like(data)
            for n, a in st.items():
                if type(a) is not type(data):
                    self._packer.forget()
                    st[n] = as_array_of(a, backend_of(data))
        return [st[n] for n in names]

    def _store(self, param: Parameter, **arrays: Any) -> None:
        # needed for immutable array types, where ``a += b`` rebinds instead of writing
        self._packer.forget()
        self._state[param].update(arrays)

    def clear_state(self) -> None:
        """Forget every parameter's state (momenta, moments) and the step counters."""
        self._state = weakref.WeakKeyDictionary()
        for c in self._counters:
            setattr(self, c, 0)

    def state_dict(self) -> dict[str, Any]:
        """Hyperparameters, step counters and per-parameter state keyed by parameter name.

        Returns:
            ``{"type", "defaults", "groups": [{hyperparameters, "params": [names]}],
            "counters", "state": {name: {state name: array copy}}}``.

        Raises:
            ValueError: two parameters share a name.
        """
        return _st.state_dict_of(
            type(self).__name__,
            self.grouped_params(),
            self.param_names(),
            self._state.get,
            self.defaults,
            {c: int(getattr(self, c)) for c in self._counters},
            self._entry_counts if self._entry_counters else None,
        )

    def _entry_counts(self, param: Parameter) -> dict[str, int]:
        """The :attr:`_entry_counters` of ``param``, saved next to its state arrays."""
        return {}

    def _restore_entry_counts(self, counts: dict) -> None:
        """Take the counts of a state dict just loaded (the counters are loaded already).

        Args:
            counts: ``{param: {counter name: int}}`` for each parameter with an entry;
                ``{}`` for an entry saved without them.
        """

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned, all or nothing (call after ``setup``).

        The state replaces the optimizer's: a parameter with no entry in ``d`` (one that
        had no gradient yet when it was saved) starts afresh, as in PyTorch (Adam's next
        step of it is its first). An entry must hold every array of the optimizer's state
        (``m`` and ``v`` for Adam), and may hold the parameter's own step count (Adam's
        ``"t"``, saved where it is not the optimizer's ``t``; without it, ``t``).
        Arrays convert to their parameter's backend and dtype; a finite value that would
        become inf there is refused.

        Args:
            d: a dict from :meth:`state_dict`.

        Raises:
            TypeError: ``d`` is not an optimizer state dict.
            ValueError: another optimizer type, other groups or names, state arrays of
                other shapes, an entry missing one of its arrays, values beyond the
                parameter's dtype, a step count that is not an int >= 0, or negative (or
                nan) values in a state that is a mean of squares (Adam's ``v``); nothing
                changed.
            RuntimeError: the optimizer has not been set up.
        """
        self.prepare_load_state_dict(d)()

    def prepare_load_state_dict(
        self, d: dict[str, Any], incoming: Mapping[int, Any] | None = None
    ) -> Callable[[], None]:
        """Check ``d`` as :meth:`load_state_dict` does, changing nothing.

        For loads of several parts at once (``load_checkpoint``): everything is checked
        first, then each part's ``commit()`` is called.

        Args:
            d: a dict from :meth:`state_dict`.
            incoming: ``{id(param): array}`` for parameters about to receive data (a model
                loaded in the same step) that have none yet.

        Returns:
            ``commit()``, which loads ``d`` and cannot fail.

        Raises:
            TypeError: ``d`` is not an optimizer state dict.
            ValueError: ``d`` does not fit this optimizer.
            RuntimeError: the optimizer has not been set up.
        """
        name = type(self).__name__
        _st.check_kind(name, d)
        self._require_target(".load_state_dict()")
        grouped = self.grouped_params()
        loaded = _st.check_state(
            name,
            d,
            grouped,
            self.param_names(),
            self.hyperparameter_specs(),
            self._state_names,
            self._counters,
            incoming,
            self._nonnegative_state,
            self._entry_counters,
        )

        def commit() -> None:  # nothing here can fail: the optimizer changes all at once
            self.defaults.update(loaded.defaults)
            for (g, _), hyper in zip(grouped, loaded.groups):
                g.update(hyper)
            self._state = loaded.state
            for c, v in loaded.counters.items():
                setattr(self, c, v)
            self._restore_entry_counts(loaded.entry_counts)

        return commit

    def __copy__(self) -> Optimizer:
        """Refuse ``copy.copy(optimizer)``: a shallow copy cannot be a right optimizer.

        It would update the original's parameters with hyperparameters shared with the
        original and state (momenta, moments) that is partly the original's (the arrays a
        step writes in place) and partly its own (the packed ones): neither a second view
        of this optimizer nor an independent one.

        Raises:
            TypeError: always, naming the copies that work.
        """
        name = type(self).__name__
        raise TypeError(
            f"copy.copy({name}) is refused: a shallow copy would update the same parameters "
            f"with state half shared with the original. For an independent copy, copy the "
            f"model and the optimizer together: copy.deepcopy((model, optimizer)); for a "
            f"second optimizer over the same parameters, make one and give it this one's "
            f"state: {name}(...).setup(model), then load_state_dict(optimizer.state_dict())."
        )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_state"] = list(self._state.items())  # a WeakKeyDictionary cannot be pickled
        state.pop("_scratch", None)  # buffers only, made again on the next update
        state.pop("_packer", None)  # the parameters' views pickle as arrays; packed again
        if self.target is not None:  # parameters sharing memory (views): tied in the copy
            ties = find_ties([p for _, ps in self.grouped_params() for p in ps])
            if ties is not None:
                state[_TIES] = ties
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        ties = state.pop(_TIES, None)
        if ties is not None:
            restore_ties(ties)
        pairs = state.pop("_state", [])
        if "_initial_lrs" in state:  # pickled before it had its public name
            state["initial_lrs"] = state.pop("_initial_lrs")
        groups = state.get("param_groups")
        if isinstance(groups, list):  # pickled when groups were plain dicts
            state["param_groups"] = [ParamGroup(g) if type(g) is dict else g for g in groups]
        self.__dict__.update(state)
        self._state = weakref.WeakKeyDictionary(pairs)
        self._scratch = Scratch()
        self._packer = Packer()


def _complex_advice(a: Any) -> str:
    """Why complex parameters are refused, for the message about ``a``'s dtype ('' if real)."""
    if backend_of(a).dtype_kind(a.dtype) != "c":
        return ""
    return (
        f" Complex parameters are refused: {HOLOMORPHIC_RULE}, so a complex gradient is no "
        f"direction of descent (that is its conjugate, which PyTorch's optimizers step "
        f"along), and Adam's and AdaGrad's g * g would be no squared magnitude. Keep the "
        f"real and imaginary parts as two real parameters."
    )


def _is_float(a: Any) -> bool:
    # dtypes are compared only with dtypes of the same array type: a strict backend's dtype
    # compared with numpy's warns (and means nothing)
    known = _FLOATS.get(type(a))
    dtype = a.dtype
    try:
        if known is not None and dtype in known:
            return True
    except TypeError:  # an unhashable dtype object: ask its backend every time
        return backend_of(a).dtype_kind(dtype) == "f"
    if backend_of(a).dtype_kind(dtype) != "f":
        return False
    _FLOATS.setdefault(type(a), set()).add(dtype)
    return True
