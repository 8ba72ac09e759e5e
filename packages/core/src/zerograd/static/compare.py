"""Whether two traces of one function did the same work: the check before trusting one.

Two calls with the same argument kinds must record the same instructions: the same
Function classes with the same settings (their attributes as each forward found them, or
as it left them where the function gave a kernel) and the same kernels, wired to the same
slots, with arrays of the same shapes and dtypes, the same captured Variables, constants
of the same values, the same gradients stored and the same updates.
When Python control flow made the calls differ (a branch on data, a changing number),
:func:`difference` says where; a replay is built only from two traces that agree.
"""

from __future__ import annotations

from typing import Any

from ..backends.registry import registry
from ..function import Function, settings_of
from ..utils import is_named_tuple
from ..variable import Parameter, Variable
from .trace import ARG, GRAD, STATE, VAR, Clear, Effect, Forward, Op, Read, Ref, Store, Trace, Vjp
from .values import bits, same

_by_type = registry.by_type


def difference(a: Trace, b: Trace) -> str | None:
    """Where the traces ``a`` (earlier) and ``b`` (later) differ, or None when they agree.

    Args:
        a: the earlier trace.
        b: the later trace.

    Returns:
        A description of the first difference, or None.
    """
    if len(a.code) != len(b.code):
        return f"the first did {len(a.code)} steps, the second {len(b.code)}"
    for i, (x, y) in enumerate(zip(a.code, b.code)):
        why = _step_difference(a, b, x, y)
        if why is not None:
            return f"step {i + 1} ({_name(y)}): {why}"
    for n, m in b.meta.items():
        if a.meta.get(n) != m:
            return f"an array of shape {_shape(a.meta.get(n))} became {_shape(m)}"
    if _states(a) != _states(b):
        return "they wrote different layer states"
    if [leaf for leaf, _ in a.aliases] != [leaf for leaf, _ in b.aliases]:
        return "Variables held the arguments' arrays in one call and not in the other"
    if not _same_returns(a.result, a, b.result, b):
        return "they returned different things"
    return None


def undecided(a: Trace, b: Trace) -> str | None:
    """Why the agreeing traces ``a`` and ``b`` cannot vouch for their constants, or None.

    Arrays made in Python inside a call (``np.eye(3)[t]``, a maximum taken with numpy)
    are constants to a trace; two traces that agree show they did not change between the
    calls, which says nothing when an argument had equal values in both: an array made
    from it would be equal too, and frozen in the replay. Single numbers (``x * 2.0``) are
    not counted: they come from the code.

    Args:
        a: the earlier trace.
        b: the later trace, which agrees with ``a``.

    Returns:
        A description of the doubt, or None when the traces can be trusted.
    """
    same_args = [i for i, (x, y) in enumerate(zip(a.arg_bits, b.arg_bits)) if x == y and x]
    if not same_args:
        return None
    for x, y in zip(a.code, b.code):
        made = None
        if type(y) is Read and y.how == VAR and x.where is not y.where:
            if x.where.data is not y.where.data:  # a new array in each call
                made = b.meta[y.slot][1]
        elif type(y) is Forward:
            made = _made_array(_state(x.fn), _state(y.fn), b)
        elif type(y) is Op:
            made = _made_array(x.args, y.args, b)
        if made:  # a shape of at least one dimension
            return (
                f"argument {same_args[0]} had the same values in both recorded calls, and the "
                f"call makes an array of shape {tuple(made)} in Python (from the arguments?)"
            )
    return None


def _state(fn: Any) -> tuple:
    """What a recorded Function holds: its settings and the context its forward saved."""
    return (settings_of(fn), getattr(fn, "ctx", None))


def _made_array(u: Any, v: Any, t: Trace) -> Any:
    """The shape of an array of ``v`` (a setting) made anew since ``u``, or None.

    Arrays in slots are the call's own; an array that is the same object in both traces
    was made before the calls (a captured constant).
    """
    tv = type(v)
    if tv in (tuple, list) and type(u) is tv and len(u) == len(v):
        for e, f in zip(u, v):
            got = _made_array(e, f, t)
            if got:
                return got
        return None
    if tv is dict and type(u) is dict:
        return _made_array([u.get(k) for k in v], list(v.values()), t)
    if tv in _by_type and u is not v and t.slot_of(v) is None and len(v.shape):
        return v.shape
    return None


def _step_difference(a: Trace, b: Trace, x: Any, y: Any) -> str | None:
    if type(x) is not type(y):
        return f"{_name(x)} in the first"
    if type(y) is Read:
        if x.how != y.how or x.slot != y.slot:
            return "reads a different array"
        if y.how == ARG and x.where != y.where:
            return "reads a different argument"
        if y.how == VAR and x.where is not y.where and not same(x.where.data, y.where.data):
            return "a constant made inside the call changed (random, or from the data?)"
        if y.how == GRAD and _who(a, x.where) != _who(b, y.where):
            return "adds onto the gradient of a different variable"
        if y.how == STATE and (x.where[0] is not y.where[0] or x.where[1] != y.where[1]):
            return "reads another layer's state"
        return None
    if type(y) is Forward:
        if type(x.fn) is not type(y.fn) or x.ins != y.ins or x.outs != y.outs:
            return "another function or other inputs"
        if x.kernel != y.kernel:
            return "the function's kernel changed"
        if _canonical(_state(x.fn), a) != _canonical(_state(y.fn), b):
            return "the function's settings changed"
        return None
    if type(y) is Vjp:
        same_call = x.ops is y.ops and x.call is y.call and x.one == y.one
        if not same_call or (x.xs, x.ys, x.gys, x.gxs) != (y.xs, y.ys, y.gys, y.gxs):
            return "a different gradient step"
        return None
    if type(y) is Op:
        if x.fn != y.fn or _canonical(x.args, a) != _canonical(y.args, b) or x.out != y.out:
            return "a different array step"
        return None
    if type(y) is Store:
        if x.slot != y.slot or not _same_target(a, b, x.target, y.target):
            return "stores a gradient elsewhere"
        return None
    if type(y) is Clear:
        if not _same_target(a, b, x.target, y.target):
            return "clears another variable's gradient"
        return None
    if type(y) is Effect:
        if x.fn != y.fn or [id(p) for p in x.params] != [id(p) for p in y.params]:
            return "another update"
    return None


def _same_target(a: Trace, b: Trace, x: Any, y: Any) -> bool:
    """Whether two stores' variables are the same one, or both made inside their calls.

    A variable made inside a call (a Constant wrapping a raw operand) is new every call
    and nobody outside can reach it; a Parameter or an argument must be the same one.
    """
    if _who(a, x) == _who(b, y):
        return True
    inside = (a.arg_variable(x) is None and b.arg_variable(y) is None) and type(x) is type(y)
    return inside and not isinstance(y, Parameter)


def _who(t: Trace, v: Any) -> Any:
    """A Variable as a trace names it: an argument by number, anything else by identity."""
    leaf = t.arg_variable(v)
    return ("argument", leaf) if leaf is not None else v


def _states(t: Trace) -> list:
    out = []
    for owner, name, start, end in t.states.values():
        data = None if end is None else t.slot_of(end.data)
        out.append((id(owner), name, _signature(start), end is None, data))
    return out


def _signature(v: Any) -> Any:
    if v is None:
        return None
    d = v.data
    return (type(v), type(d), getattr(d, "shape", None), getattr(d, "dtype", None))


def _same_returns(u: Any, a: Trace, v: Any, b: Trace) -> bool:
    """Whether ``u`` (what the call of ``a`` returned) and ``v`` (of ``b``) mean the same.

    A Variable that both calls returned is one the step holds (a Parameter, a Variable
    kept across calls, whatever its data and gradient now): a replay returns it too, as it
    is then. Two Parameters that are not the same one differ (a Parameter made inside a
    call is never compared: see :attr:`.trace.Trace.fresh`). Other Variables are made by
    the calls and compare by the slots of their data and gradient: a replay makes a new
    one around its own arrays (one holding a Parameter's array, ``W.detach()``, included).
    Tuples, lists and dicts compare item by item; anything else by :func:`_canonical`.
    """
    if isinstance(u, Variable) and isinstance(v, Variable):
        leaf = b.arg_variable(v)
        if a.arg_variable(u) != leaf:
            return False
        if leaf is not None or u is v:
            return True
        if isinstance(u, Parameter) or isinstance(v, Parameter):
            return False
        x, y = _made_variable(u, a), _made_variable(v, b)
        return x is not None and x == y
    if type(u) is not type(v):
        return False
    if type(v) in (tuple, list) or is_named_tuple(v):
        return len(u) == len(v) and all(_same_returns(e, a, f, b) for e, f in zip(u, v))
    if type(v) is dict:
        if list(u) != list(v):
            return False
        return all(_same_returns(u[k], a, v[k], b) for k in v)
    return _canonical(u, a) == _canonical(v, b)


def _made_variable(v: Variable, t: Trace) -> tuple | None:
    """The slots of the data and gradient of ``v``, a Variable the call of ``t`` made.

    None when the call never saw its array (made in Python, which a replay cannot redo).
    """
    n = t.slot_of(v.data)
    if n is None:
        return None
    return (n, None if v.grad is None else ("grad", t.slot_of(v.grad.data)))


def _canonical(v: Any, t: Trace) -> Any:
    """``v`` in a form that compares equal across traces when it means the same."""
    tv = type(v)
    if tv is float or tv is complex:
        return (tv, repr(v))  # nan equals nan, -0.0 differs from 0.0
    if v is None or tv in (bool, int, str, bytes, type):
        return (tv, v)
    if tv in (tuple, list) or isinstance(v, tuple):  # torch.Size, named tuples: by value
        return (tv, tuple([_canonical(e, t) for e in v]))
    if tv is dict:
        return (tv, tuple([(k, _canonical(e, t)) for k, e in v.items()]))
    if tv is slice:
        return (tv, _canonical((v.start, v.stop, v.step), t))
    if tv is Ref:
        return v
    if tv in _by_type:
        n = t.slot_of(v)
        if n is not None:
            return ("slot", n)
        return ("array", v.shape, str(v.dtype), bits(v))
    if isinstance(v, Variable):
        return ("variable", id(v))
    if isinstance(v, Function):
        return ("function", tv)
    if hasattr(v, "dtype") and getattr(v, "shape", None) == ():  # a library scalar
        return (tv, repr(v))
    if _equal_by_value(v):  # a dtype: array-api-strict makes a new object for each array
        return (tv, "value", v)
    return (tv, id(v))  # any other object: the same one


def _equal_by_value(v: Any) -> bool:
    """Whether ``v`` is hashable and its type defines an ``==`` that gives True on itself."""
    t = type(v)
    if t.__eq__ is object.__eq__ or t.__hash__ is None:
        return False
    try:
        return (v == v) is True
    except Exception:  # an == that refuses: compared as the same object only
        return False


def _name(ins: Any) -> str:
    if type(ins) in (Forward, Vjp):
        return f"{type(ins).__name__.lower()} of {type(ins.fn).__name__}"
    return type(ins).__name__.lower()


def _shape(meta: Any) -> Any:
    return None if meta is None else meta[1]
