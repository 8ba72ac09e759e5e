"""The op registry: an op of ``zerograd.functions`` is defined once, as its Function class.

An op is its :class:`~zerograd.Function` subclass (forward, vjp, what the vjp reads, the
docstring) and one line naming it::

    class Exp(_Namesake):
        # its docstring: "Compute e raised to the power of ``x``, elementwise."
        vjp_reads_inputs = False

        def forward(self, x):
            return get_array_module(x).exp(_float(x))

        def vjp(self, xp, xs, y, gy):
            return gy * y


    exp = op(Exp, example=("exp(np.array(0.0))", "variable(1.0)"), in_vjp=True)

:func:`op` writes the public function from the class: its parameters are ``forward``'s
inputs followed by ``__init__``'s parameters (with their defaults and annotations), its
docstring is the class's (with the Args and Returns its family shares, and the example), and
its body is ``Exp()(x)``. Everything else follows from the registry :data:`OPS` (the
module's literal ``__all__``, which type checkers read, is checked against
:func:`exported`): the Variable methods and operators the op names
(put on :class:`~zerograd.Variable` by :mod:`zerograd.wiring`, the one module that installs
anything on Variable or Function), and the names a vjp may call on its namespace
(:data:`zerograd.namespaces.NAMES`). A function with logic of its own (``pow`` picks its
Function by the exponent's type) is written by hand and registered with :func:`defines`.

Why the class plus one generated function, not a table or a decorator that hides the
class: the class exists anyway (graph drawing names it, the replay reads its kernel and its
``vjp_reads_*`` flags, DeZero's users call ``F.Exp()`` and subclass it), and the function is
generated as Python source so it is an ordinary function (a real signature for ``help()``,
``inspect`` and IDEs, one frame per call as a hand-written one).
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..checks import pytorch_alias, pytorch_keyword_error
from ..function import Function
from ..variable import Variable

__all__ = [
    "OP_METHODS",
    "OPS",
    "OpSpec",
    "defines",
    "exported",
    "op",
    "subscribe",
    "variable_method",
]


@dataclass(frozen=True)
class OpSpec:
    """One registered op: its public function and what else follows from its definition.

    Attributes:
        name: The public function's name (``"exp"``).
        function: The public function.
        classes: The Function classes it applies (none for a composite such as ``mean``).
        methods: The Variable methods and operators it is installed as (``"__add__"``).
        in_vjp: Whether a vjp may call it on its namespace as ``xp.<name>``.
        module: The module that defines it (its ``__all__`` lists it).
    """

    name: str
    function: Callable[..., Any]
    classes: tuple[type, ...]
    methods: tuple[str, ...]
    in_vjp: bool
    module: str

    @property
    def summary(self) -> str:
        """The first line of the function's docstring."""
        return (self.function.__doc__ or "").strip().splitlines()[0]


OPS: dict[str, OpSpec] = {}
"""Every registered op by its public name, in the order they were defined."""

OP_METHODS: dict[str, Any] = {}
"""Variable attribute name -> the registered function (or property) installed under it."""

_subscribers: list[Callable[[str, Any], None]] = []


def subscribe(callback: Callable[[str, Any], None]) -> None:
    """Call ``callback(name, attribute)`` for each Variable method, now and when registered.

    :mod:`zerograd.wiring` subscribes the installer of Variable methods, so an op defined
    after ``import zerograd`` (your own, see the "Add an op" page) gets its methods too.
    """
    _subscribers.append(callback)
    for name, attribute in list(OP_METHODS.items()):
        callback(name, attribute)


def _identifier(what: str, name: Any) -> str:
    """``name`` checked as a Python identifier (what it names: ``"name"``, ``"a method"``)."""
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        raise ValueError(f"op: {what} must be a Python identifier, got {name!r}")
    return name


def _method_names(methods: Any) -> tuple[str, ...]:
    if isinstance(methods, str) or not isinstance(methods, (tuple, list)):
        raise TypeError(
            f"op: methods must be a tuple of method names, e.g. methods=('__add__',), "
            f"got {methods!r}"
        )
    return tuple(_identifier("a method name", m) for m in methods)


# the walk keys gradients by Variable: an op cannot redefine its equality or hash; nor may
# it take a name Python itself looks up on every object (object's own, but for the
# comparisons an op may define, and the other hooks of attribute access, creation and
# copying): Variable.__setattr__ = an op would break Variable(...) itself
_NOT_OPS = (
    frozenset({"__eq__", "__ne__", "__hash__"})
    | (frozenset(vars(object)) - {"__lt__", "__le__", "__gt__", "__ge__"})
    | frozenset(
        {
            "__getattr__",
            "__del__",
            "__dict__",
            "__slots__",
            "__weakref__",
            "__get__",
            "__set__",
            "__delete__",
            "__set_name__",
            "__class_getitem__",
            "__copy__",
            "__deepcopy__",
            "__setstate__",
            "__module__",
            "__qualname__",
            "__annotations__",
        }
    )
)


def _add_methods(names: tuple[str, ...], attribute: Any, module: str, what: str) -> None:
    for name in names:
        own = Variable.__dict__.get(name)
        if name in _NOT_OPS or (own is not None and own is not OP_METHODS.get(name)):
            raise ValueError(
                f"op: Variable.{name} is Variable's own; give {what} another method name"
            )
    for name in names:
        owner = OP_METHODS.get(name)
        owner_module = getattr(getattr(owner, "fget", owner), "__module__", None)
        if owner is not None and owner_module != module:
            raise ValueError(
                f"op: Variable.{name} is already defined by {owner_module}; "
                f"give {what} another method name"
            )
    for name in names:
        OP_METHODS[name] = attribute
        for callback in _subscribers:
            callback(name, attribute)


def _register(spec: OpSpec) -> None:
    if spec.name in OPS and OPS[spec.name].module != spec.module:
        raise ValueError(
            f"op: {spec.name!r} is already defined by {OPS[spec.name].module}; "
            f"give yours another name"
        )
    _add_methods(spec.methods, spec.function, spec.module, spec.name)
    OPS[spec.name] = spec


def variable_method(
    name: str, *, as_property: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a Variable method written on top of an op (``x.reshape(2, 3)``).

    For a method whose signature differs from the op's function (``reshape(x, shape)``
    is ``x.reshape(*shape)``); an op whose function is the method names it in its
    ``methods`` instead.

    Args:
        name: The Variable attribute's name.
        as_property: Install it as a property (``x.T``).

    Returns:
        A decorator that registers the function and returns it unchanged.
    """
    _identifier("a method name", name)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        attribute = property(function) if as_property else function
        _add_methods((name,), attribute, function.__module__, function.__name__)
        return function

    return register


# defaults the generated source can write as they are
_LITERALS = (type(None), bool, int, float, str)


def _snake(name: str) -> str:
    """``GetItem`` -> ``get_item``, ``LeakyReLU`` -> ``leaky_relu`` (an acronym is one word)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", name).lower()


def _signature_parts(cls: type, swapped: bool) -> tuple[str, str, str, list[str], dict[str, Any]]:
    """(parameter list, Function call arguments, input arguments, input names, annotations)."""
    forward = list(inspect.signature(cls.forward).parameters.values())[1:]
    init = cls.__init__
    inits = [] if init is object.__init__ else list(inspect.signature(init).parameters.values())
    inits = inits[1:]
    params, ins, annotations = [], [], {}
    for p in forward:
        if p.default is not p.empty or p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
            raise TypeError(
                f"op: {cls.__name__}.forward's parameter {p.name!r} is optional or keyword-only; "
                f"forward takes the inputs alone (settings go to __init__), or write the "
                f"function by hand and register it with @defines"
            )
        if p.kind is p.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            ins.append(f"*{p.name}")
        else:
            params.append(p.name)
            ins.append(p.name)
        annotations[p.name] = "ArrayLike"
    names = [p.name for p in forward]
    if swapped:
        ins.reverse()
    keyword_only = False
    call = []
    for p in inits:
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            if not any(x.startswith("*") for x in params):
                params.append("*")
            keyword_only = True
        if p.default is not p.empty and not isinstance(p.default, _LITERALS):
            raise TypeError(f"op: {cls.__name__}.__init__'s default for {p.name} is no literal")
        text = p.name if p.default is p.empty else f"{p.name}={p.default!r}"
        params.append(text)
        call.append(f"{p.name}={p.name}" if keyword_only else p.name)
        annotations[p.name] = p.annotation if p.annotation is not p.empty else "Any"
    return ", ".join(params), ", ".join(call), ", ".join(ins), names, annotations


def _init_defaults(cls: type) -> dict[str, Any]:
    """``cls.__init__``'s parameters (``self`` left out) and their defaults."""
    init = cls.__init__
    if init is object.__init__:
        return {}
    params = list(inspect.signature(init).parameters.values())[1:]
    return {p.name: p.default for p in params}


def _with_aliases(
    cls: type, name: str, params: str, body: str, aliases: Mapping[str, str], annotations: dict
) -> tuple[str, str]:
    """``params`` and ``body`` taking PyTorch's ``aliases`` too: ``F.sum(x, dim=1)``.

    The aliases come last, default None (keyword-only where the function's last parameters
    already are); a call that gives none of them takes the first branch.
    """
    defaults = _init_defaults(cls)
    for alias, target in aliases.items():
        _identifier("an alias", alias)
        if target not in defaults or alias in defaults:
            raise ValueError(
                f"op: the alias {alias!r} must name a parameter of {cls.__name__}.__init__ "
                f"and be none itself; got {alias!r} -> {target!r}"
            )
        kind = annotations[target]
        kind = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        annotations[alias] = kind if "None" in kind or kind == "Axis" else f"{kind} | None"
    names = list(aliases)
    test = " and ".join(f"{a} is None" for a in names)
    resolve = "".join(
        f"    {t} = __alias__({name!r}, {t!r}, {t}, {a!r}, {a}, {defaults[t]!r})\n"
        for a, t in aliases.items()
    )
    params += "".join(f", {a}=None" for a in names)
    return params, f"    if {test}:\n    {body}{resolve}{body}"


def _with_refusals(
    cls: type, name: str, params: str, body: str, refuses: Mapping[str, str], inputs: list[str]
) -> tuple[str, str]:
    """``params`` and ``body`` refusing PyTorch's keywords ``refuses`` with their hints."""
    for key in refuses:
        if key in inputs or key in _init_defaults(cls):
            raise ValueError(f"op: {name} takes {key}= itself; it cannot refuse it")
    return (
        f"{params}, **pytorch",
        f"    if pytorch:  # a keyword it does not take\n"
        f"        __refuse__({name!r}, pytorch, __hints__)\n{body}",
    )


def _refuse(name: str, given: dict[str, Any], hints: dict[str, str]) -> None:
    """Raise the error for keywords ``given`` that the function ``name`` does not take."""
    for key in given:
        if key in hints:
            raise pytorch_keyword_error(name, key, hints[key])
    raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(given))!r}")


def _section(text: str, title: str) -> str | None:
    """The indented lines under ``title`` in a Google-style docstring, or None."""
    lines = text.splitlines()
    if title not in lines:
        return None
    body = []
    for line in lines[lines.index(title) + 1 :]:
        if line and not line.startswith(" "):
            break
        body.append(line)
    return "\n".join(body).rstrip()


def _insert(text: str, title: str, body: str) -> str:
    """``text`` with the section ``title`` (or ``body`` at its top, when it has one)."""
    if title in text.splitlines():
        return text.replace(f"{title}\n", f"{title}\n{body}\n", 1)
    for later in ("Returns:", "Raises:", "Examples:"):
        if later != title and later in text.splitlines():
            return text.replace(f"{later}\n", f"{title}\n{body}\n\n{later}\n", 1)
    return f"{text}\n\n{title}\n{body}"


def _docstring(
    cls: type, inputs: list[str], doc: str | None, example: tuple[str, str] | None
) -> str:
    """The public function's docstring: the class's, with its inputs and result described.

    The inputs' lines and the Returns come from the class's ``_doc_sections`` (what its
    family shares) or, without one, say that each input is a Variable, array, scalar or
    list; the class's own Args (its ``__init__``'s parameters) follow the inputs'.
    """
    text = inspect.cleandoc(doc or cls.__doc__ or "")
    family = inspect.cleandoc(getattr(cls, "_doc_sections", "") or "")
    args = _section(family, "Args:") or "\n".join(
        f"    {n}: A Variable, array, scalar or list." for n in inputs
    )
    text = _insert(text, "Args:", args)
    if "Returns:" not in text.splitlines():
        text = _insert(text, "Returns:", _section(family, "Returns:") or "    A Variable.")
    if example is not None:
        call, result = example
        text += f"\n\nExamples:\n    >>> import numpy as np\n    >>> {call}\n    {result}"
    return text


def op(
    cls: type[Function],
    name: str | None = None,
    *,
    doc: str | None = None,
    methods: tuple[str, ...] = (),
    swapped: bool = False,
    example: tuple[str, str] | None = None,
    in_vjp: bool = False,
    aliases: Mapping[str, str] | None = None,
    refuses: Mapping[str, str] | None = None,
) -> Callable[..., Any]:
    """Write and register the public function of the op ``cls``.

    Args:
        cls: The Function class (its docstring, ``forward`` and ``__init__`` say the rest).
        name: The function's name; by default the class's in snake case (``GetItem`` ->
            ``get_item``, ``LeakyReLU`` -> ``leaky_relu``).
        doc: The function's docstring when it is not the class's (a swapped form).
        methods: The Variable methods and operators that call it (``("__add__",
            "__radd__")``): ``x.__add__(y)`` is ``add(x, y)``.
        swapped: Apply the class to the inputs in reverse order (``rsub(x0, x1)`` is
            ``Sub()(x1, x0)``, the reflected operator behind ``2.0 - x``).
        example: ``(expression, result)``: a call and its repr, shown under Examples
            (with numpy imported as ``np``); a test runs each.
        in_vjp: A vjp may call the function as ``xp.<name>`` (it computes the backend
            function of that name; see :mod:`zerograd.namespaces`).
        aliases: ``{PyTorch's name: the parameter it names}`` (``{"dim": "axis"}``): the
            function also takes each alias, default None, after its own parameters; one
            given is the parameter's value (:func:`zerograd.checks.pytorch_alias`). A call
            without them pays one ``is None`` test per alias.
        refuses: ``{PyTorch's keyword: what to write instead}``: the function takes any
            keyword (``**pytorch``), read only when one was given: one of these raises
            :func:`zerograd.checks.pytorch_keyword_error`, another Python's own message.

    Returns:
        The function ``name(inputs..., parameters..., aliases...)``, which returns
        ``cls(parameters...)(inputs...)``.

    Raises:
        TypeError: ``cls`` is no Function subclass or defines no forward; ``methods``,
            ``doc`` or ``example`` of another type.
        ValueError: The name or a method is not an identifier, is already another
            module's op, or is one of Variable's own attributes (``backward``, ``data``);
            an alias names no parameter of ``cls.__init__`` or is one, or a refused
            keyword is a parameter.
    """
    if not (isinstance(cls, type) and issubclass(cls, Function)):
        raise TypeError(f"op: give a Function subclass, got {cls!r}")
    if cls.forward is Function.forward:
        raise TypeError(
            f"op: {cls.__name__} defines no forward; an op's class computes its output in "
            f"forward(self, *inputs), on arrays"
        )
    name = _identifier("its name", name or _snake(cls.__name__))
    methods = _method_names(methods)
    if doc is not None and not isinstance(doc, str):
        raise TypeError(f"op: doc must be a string or None, got {type(doc).__name__}")
    if example is not None and not (
        isinstance(example, tuple) and len(example) == 2 and all(type(e) is str for e in example)
    ):
        raise TypeError(f"op: example must be (expression, result), two strings; got {example!r}")
    params, call, ins, inputs, annotations = _signature_parts(cls, swapped)
    body = f"    return __cls__({call})({ins})\n"
    if aliases:
        params, body = _with_aliases(cls, name, params, body, aliases, annotations)
    if refuses:
        params, body = _with_refusals(cls, name, params, body, refuses, inputs)
    source = f"def {name}({params}):\n{body}"
    code = compile(source, f"<zerograd op {cls.__module__}.{name}>", "exec", dont_inherit=True)
    namespace: dict[str, Any] = {}
    # the source names the class and, with aliases or refusals, the helpers below
    scope = {"__cls__": cls, "__name__": cls.__module__, "__alias__": pytorch_alias}
    scope.update(__refuse__=_refuse, __hints__=dict(refuses or {}))
    exec(code, scope, namespace)  # noqa: S102
    function = namespace[name]
    function.__doc__ = _docstring(cls, inputs, doc, example)
    function.__annotations__ = {**annotations, "return": "Variable"}
    function.__wrapped_op__ = cls
    _register(OpSpec(name, function, (cls,), tuple(methods), in_vjp, cls.__module__))
    return function


def defines(
    *classes: type[Function], methods: tuple[str, ...] = (), in_vjp: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a hand-written public function (one with logic of its own) as an op.

    Args:
        *classes: The Function classes it applies (none for a composite).
        methods: The Variable methods and operators that call it.
        in_vjp: A vjp may call it as ``xp.<name>``.

    Returns:
        A decorator that registers the function and returns it unchanged.
    """
    methods = _method_names(methods)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        _register(
            OpSpec(function.__name__, function, classes, methods, in_vjp, function.__module__)
        )
        return function

    return register


def exported(module: str) -> list[str]:
    """The public names of ``module``'s ops: their functions, then their Function classes."""
    specs = [s for s in OPS.values() if s.module == module]
    classes = {c.__name__ for s in specs for c in s.classes if c.__module__ == module}
    return [s.name for s in specs] + sorted(classes)
