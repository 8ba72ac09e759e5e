"""``Function``: the base class of every differentiable operation.

A built-in Function's attributes (its ``__dict__``) are its settings: ``__init__`` writes
them and its forward never changes them. What a forward computes for its derivative (an
input's shape, normalized axes, a dropout mask) it writes, last, into the one slot
``ctx``, the context of its latest call, which its vjp reads. Why a slot the forward
writes, and not a context object the forward returns for the engine to keep: returning one
(a ``Saved(y, ctx)`` pair, tried) cost about 2,000 CPU instructions per broadcasting add
on Python 3.11, a slot store about thirty, and the 1,000-op chain must not get dearer;
the forward's and vjp's signatures stay DeZero's, so a user Function (which may still
write anything on ``self``) and every caller of ``vjp`` are unchanged. A static-graph
replay can run such a forward again on the same object: what it writes is only ``ctx``,
which the next vjp reads, never a setting a later call depends on.
"""

from __future__ import annotations

import inspect
import operator
import weakref
from collections.abc import Callable, MutableMapping
from types import MappingProxyType
from typing import Any

from . import backends as _backends
from .arrays import shared_scalar, wide_int
from .backends.chains import ARITY
from .backends.errors import BackendMismatchError
from .backends.registry import registry as _registry
from .config import _enable_backprop
from .modes import current as _mode
from .modes import switch as _modes
from .recording import current as _recorder
from .recording import switch as _recording
from .variable import Constant, Variable, as_array, unchained_ref

_by_type = _registry.by_type
OWN_PACKAGES = frozenset({"zerograd", "zerograd_nn"})
"""The packages whose Function classes are zerograd's own (see :attr:`Function.own`)."""
_data = operator.attrgetter("data")
_generation = operator.attrgetter("generation")
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

    # Slots keep the per-op object small and fast. A subclass that declares no __slots__ (a
    # user's Function, a built-in with settings) gets a __dict__ for its own state; one
    # declaring `__slots__ = ()` (add, mul, tanh: nothing but what is here) gets none, which
    # spares each call a dict's allocation and each attribute read a look into it.
    # `_in` holds one edge per input: the input Variable, or (for a lean function, see
    # `_lean`) the input's creator when that input's array need not outlive the user's hold
    # on it. `_ys` holds the output arrays a vjp reads (their Variables may be gone);
    # `_like` the output's (shape, dtype), noted when a lean function keeps only the edge.
    # A backward walk keeps its own counts (nothing of a walk is written on the graph).
    # `ctx`: what a built-in forward computed for its vjp, written by that forward (last).
    __slots__ = ("_in", "outputs", "generation", "_ys", "_like", "ctx", "__weakref__")
    _vjp = False  # set per subclass: whether its derivative is a vjp
    _lean = False  # set per subclass: a vjp that reads no input values (graph holds no inputs)
    _keeps_y = False  # set per subclass: a vjp that reads its outputs' values
    own = False
    """True for the Functions of zerograd's own packages (:data:`OWN_PACKAGES`), set per
    class: their vjps read ``self.inputs`` for shapes and dtypes only (a test reads their
    sources), their kernels are checked by their suites, and zerograd's functions make a
    new object for every call. The engine and static-graph replays check a user's
    Functions for what zerograd's never do (one object called twice, a kernel that is not
    forward)."""
    vjp_reads_inputs: bool = True
    """Whether :meth:`vjp` reads the inputs' values (``xs``, or ``self.inputs``' data).

    A function whose derivative needs only its output and the output's gradient (exp,
    tanh, sigmoid, ReLU) sets it False: the engine then passes None in ``xs``, the graph
    keeps only the creators of its intermediate inputs (see :attr:`inputs`), so an input
    array is freed as soon as nothing else reads it, and a static-graph replay frees it the
    same way. Such a vjp may read ``self.inputs`` for nothing but shapes it saved itself.
    """
    vjp_reads_outputs: bool = True
    """Whether :meth:`vjp` reads the output's value ``y``; True makes the graph keep the
    output's array (its Variable may go); False (matmul, linear, convolution, add) lets a
    replay pass None for it and free it the same way.

    Both are inherited: a subclass whose derivative reads more sets them back to True.
    """
    # The namespace that runs a vjp on Variables (zerograd.namespaces.VariableOps) is made
    # of zerograd.functions, above this module: zerograd.wiring installs it here (importing
    # zerograd, or any of its modules, imports it).
    _graph_ops: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The engine calls vjp when the class's derivative is a vjp: defined below (or in
        # the same class as) the backward it would otherwise inherit.
        vjp_owner = _owner(cls, "vjp")
        cls._vjp = vjp_owner is not Function and issubclass(vjp_owner, _owner(cls, "backward"))
        cls._lean = cls._vjp and not cls.vjp_reads_inputs
        cls._keeps_y = cls._vjp and cls.vjp_reads_outputs
        cls.own = cls.__module__.partition(".")[0] in OWN_PACKAGES
        if "fuses_as" in cls.__dict__:
            _check_fuses_as(cls, cls.__dict__["fuses_as"])

    @property
    def inputs(self) -> tuple:
        """The input Variables of the last call, as the book's ``backward`` reads them.

        A function whose derivative reads its inputs' values (and every function written
        the book's way, with ``backward``) holds its input Variables. A built-in one whose
        vjp reads none of them (add, ReLU, tanh, sum, ...) holds only the way back to the
        inputs' creators, so an intermediate input's array is freed once the user drops its
        Variable: such an input then reads back as a Variable with ``data`` None and the
        same ``creator`` (what graph drawing shows).
        """
        ins = self._in
        if not self._lean:
            return ins
        for x in ins:
            if not isinstance(x, Variable):
                return tuple([x if isinstance(x, Variable) else output_of(x) for x in ins])
        return ins

    @inputs.setter
    def inputs(self, value: Any) -> None:
        self._in = tuple(value)

    def output_variables(self) -> list[Variable | None]:
        """The outputs of the last call as Variables, for reading the graph (drawing it).

        ``outputs`` holds weak references: an output the user dropped reads as None
        there. Here the one output of a built-in function comes back as
        :attr:`inputs` shows it to the functions after it (a stand-in without data when
        the user dropped it); an output of a function with several is None when dropped.
        """
        refs = self.outputs
        if len(refs) == 1 and self._vjp:
            return [output_of(self)]
        return [ref() for ref in refs]

    def output_like(self) -> tuple[tuple[int, ...], Any] | None:
        """The (shape, dtype) of the one output whose array the graph let go, else None.

        A stand-in from :attr:`inputs` or :meth:`output_variables` has no data: this is
        what graph drawing labels it with.
        """
        return getattr(self, "_like", None)

    def input_like(self, i: int) -> tuple[tuple[int, ...], Any] | None:
        """The (shape, dtype) input ``i`` had, where the graph let its array go, else None.

        A built-in function whose vjp reads no input value keeps only the way back to an
        intermediate input's creator; the input :attr:`inputs` reads back once the user
        dropped it has no data, and no creator either when it was unchained first. Graph
        drawing labels it with this. None where the function holds the input Variable
        itself (its ``data`` tells).

        Args:
            i: the input's position.
        """
        edge = self._in[i]
        return None if isinstance(edge, Variable) else edge.output_like()

    @property
    def uses_vjp(self) -> bool:
        """Whether a backward calls :meth:`vjp` rather than a book-style ``backward``.

        True where the class defines ``vjp`` below the ``backward`` it would inherit.
        """
        return self._vjp

    def output_arrays(self, outputs: list) -> list:
        """The outputs' arrays as :meth:`vjp` gets them (``y``), given the output Variables.

        Args:
            outputs: one Variable per output, None where the user dropped it (as
                ``[ref() for ref in fn.outputs]`` reads them).

        Returns:
            Each output's data; for a dropped one (or one without data) the array the
            function saved for its vjp, or None where the vjp reads no output.
        """
        ys = [None if o is None else o.data for o in outputs]
        if not self._keeps_y:
            return ys
        saved = (self._ys,) if len(outputs) == 1 else self._ys
        return [a if a is not None else b for a, b in zip(ys, saved)]

    def __call__(self, *inputs: Any) -> Any:
        """Apply the function to ``inputs`` and record it as the outputs' creator.

        Args:
            *inputs: Variables, or raw arrays, scalars and lists (wrapped as Constants).

        Returns:
            One output Variable, or a list of them when ``forward`` returns a tuple of
            two or more (a tuple of one gives its Variable, as in DeZero).

        Raises:
            TypeError: An input holds no data or non-numeric data.
            BackendMismatchError: The inputs' arrays belong to different backends.
        """
        if _modes.on:  # a transform (zerograd.func) may take this call over (zerograd.modes)
            mode = _mode()
            if mode is not None:
                return mode.apply(self, inputs)
        try:
            rec = _recording.on and _recorder()  # a static-graph trace records this call
            if rec:
                before = rec.before_call(self)
            if len(inputs) <= 2:
                # Fast path (unary and binary ops: nearly every call): no loops and no
                # tuples. a is b when there is one input.
                a, b = inputs[0], inputs[-1]
                if not isinstance(b, Variable):  # x * 2.0, x + array: a raw operand
                    if isinstance(a, Variable):
                        inputs = (a, _constant(self, 1, b, a.data))
                    else:
                        inputs = _wrap(self, inputs)
                    a, b = inputs[0], inputs[-1]
                elif not isinstance(a, Variable):
                    inputs = (_constant(self, 0, a, b.data), b)
                    a = inputs[0]
                xa, xb = a.data, b.data
                if type(xa) is not type(xb):
                    _check_one_backend(self, (xa, xb))
                ys = self.forward(xa) if len(inputs) == 1 else self.forward(xa, xb)
                gen = a.generation if a.generation >= b.generation else b.generation
            else:
                for x in inputs:
                    if not isinstance(x, Variable):
                        inputs = _wrap(self, inputs)
                        break
                xs = tuple(map(_data, inputs))
                t = type(xs[0])
                for x in xs:
                    if type(x) is not t:
                        _check_one_backend(self, xs)
                        break
                ys = self.forward(*xs)
                gen = max(map(_generation, inputs))
        except Exception as exc:
            _diagnose(self, inputs, exc)
            raise
        if type(ys) is not tuple:  # one output: the common tail, inline
            output = _new(Variable)  # no Variable.__init__: forward results need no check
            output.data = ys if type(ys) in _by_type else _fix_output(ys, inputs, self)
            output.name = output.grad = None
            if _enable_backprop.get():
                self.generation = gen
                self._in = _lean_edges(inputs) if self._lean else inputs
                if self._keeps_y:
                    self._ys = output.data
                self.outputs = (weakref.ref(output),)
                output.creator = self
                output.generation = gen + 1
            else:
                output.creator = None
                output.generation = -1  # no graph: Variable.backward refuses it
        else:
            many = self._finish_many(inputs, ys, gen)  # a list of them
            # DeZero's rule: a forward returning a 1-tuple still gives one Variable
            output = many if len(many) > 1 else many[0]
        if rec:  # the list for a tuple: a replay unpacks the forward's tuple, even of one
            rec.called(self, before, inputs, many if type(ys) is tuple else output)
        return output

    def _finish_many(self, inputs: tuple, ys: tuple, gen: int) -> list[Variable]:
        """The tail of ``__call__`` for a forward that returned several arrays."""
        outputs = [Variable(y if type(y) in _by_type else _fix_output(y, inputs, self)) for y in ys]
        if _enable_backprop.get():
            self.generation = gen
            self._in = _lean_edges(inputs) if self._lean else inputs
            if self._keeps_y:
                self._ys = tuple([output.data for output in outputs])
            self.outputs = tuple([weakref.ref(output) for output in outputs])
            for output in outputs:
                output.creator = self
                output.generation = gen + 1
        else:
            for output in outputs:
                output.generation = -1  # no graph: Variable.backward refuses it
        return outputs

    def forward(self, *xs: Any, **kwargs: Any) -> Any:
        """Compute the output from the inputs' arrays; every subclass defines it.

        Args:
            *xs: The inputs' data: backend arrays (raw operands already converted).
            **kwargs: Never passed: with it, a type checker takes any subclass's forward
                (``forward(self, x)``) as a valid override.

        Returns:
            The output array, or a tuple of arrays for several outputs.

        Raises:
            NotImplementedError: The subclass does not define it.
        """
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    def kernel(self, *xs: Any, **kwargs: Any) -> Callable[..., Any] | None:
        """The plain array function that this call's forward comes down to, or None.

        A static-graph recording (:func:`zerograd.static_graph`) asks right after
        ``forward(*xs)`` ran; its replays then call the kernel on their own arrays in place
        of ``forward``, which saves a method call and forward's checks on every replayed
        operation. Return one only when, for any arrays of the same backends, shapes and
        dtypes as ``xs``, it returns exactly what ``forward`` would, and ``forward`` would
        save the same context (``ctx``) as it saved now (the replay keeps it for the
        vjp). Return the same object each time for such arrays (a function
        defined once, not a new lambda): a replay is built only from two recordings that
        agree, kernels included. A kernel may leave out what :meth:`check` checks. The
        default, None, replays ``forward`` itself.

        A subclass whose kernel computes one elementwise op of
        :data:`zerograd.backends.chains.ARITY` may name it in a class attribute,
        ``fuses_as = "mul"``: a replay then may run a chain of such functions whose
        intermediates nothing else reads as one backend call
        (:meth:`zerograd.backends.Backend.fuse`). Only the class that sets it is fused: a
        subclass inherits none (its kernel may compute something else) and declares its own.
        A first-order replay runs the :meth:`vjp` of such a class as the Functions it
        applies to Variables (as with ``create_graph``), where a trial run at trace time
        gives what the vjp gives on arrays, bit for bit, so that its operations may join
        chains too.

        Args:
            *xs: The arrays ``forward`` was just given.
            **kwargs: Never passed: with it, a type checker takes any subclass's kernel
                (``kernel(self, x)``) as a valid override.

        Returns:
            A callable taking the arrays as ``forward`` does, or None.
        """
        return None

    check_values_of: tuple[int, ...] = ()
    """Positions of the inputs whose values :meth:`check` reads (none: no check)."""

    def check(self, *xs: Any) -> None:
        """Refuse inputs by value (labels out of range), changing nothing.

        A function with such a check calls it first thing in ``forward`` and names in
        :attr:`check_values_of` the inputs whose values it reads. Its :meth:`kernel` may
        leave the check out: a static-graph replay runs ``check`` itself, and where the
        inputs it reads are the call's own arrays, before any of the replay's work, so a
        refused replay does nothing (and on a GPU the check's read waits for no queued
        work). The other inputs it may use only for their ``shape``, ``dtype`` and
        ``ndim``.

        Args:
            *xs: The arrays ``forward`` is given (or, in a replay, descriptions of those
                not made yet: ``shape``, ``dtype`` and ``ndim`` only).

        Raises:
            Exception: What the inputs deserve; the default accepts everything.
        """

    def vjp(self, xp: Any, xs: tuple, y: Any, gy: Any) -> Any:
        """Return the inputs' gradients: the derivative, written once for both engines.

        Built-in functions define this instead of ``backward``. The engine calls it with
        backend arrays and :class:`~zerograd.namespaces.ArrayOps` for first-order
        gradients, and with Variables and :class:`~zerograd.namespaces.VariableOps` when
        the gradient must be differentiable again; the body uses only ``xp``'s names and
        operators, so one body serves both. ``self.inputs`` is available in both modes
        for shapes and dtypes when :attr:`vjp_reads_inputs` is True (otherwise an input
        the user dropped has no data: ``forward`` writes what the vjp needs in
        ``self.ctx``, after its last check).

        Args:
            xp: The namespace (see :mod:`zerograd.namespaces`).
            xs: The inputs' values, one per input.
            y: The output's value (a tuple of them for several outputs; None for an
                output that no longer exists).
            gy: The output's gradient (a tuple for several outputs; None where none).

        Returns:
            One gradient, or a tuple with one per input (None where there is none).

        Raises:
            NotImplementedError: The subclass defines neither ``vjp`` nor ``backward``.
        """
        raise NotImplementedError(f"{type(self).__name__} defines no backward or vjp")

    def backward(self, *gys: Any, **kwargs: Any) -> Any:
        """Compute the inputs' gradients from the outputs' gradients, as Variables.

        This is DeZero's protocol: subclasses may override it and receive output gradients
        as Variables (the engine then calls it in both modes). The default runs ``vjp``
        on Variables, so a built-in function's gradient is differentiable.

        Args:
            *gys: One gradient Variable per output.
            **kwargs: Never passed: with it, a type checker takes any subclass's backward
                (``backward(self, gy)``) as a valid override.

        Returns:
            One gradient Variable, or a tuple with one per input (None for an input that
            needs none).

        Raises:
            NotImplementedError: The subclass defines neither.
        """
        if not self._vjp:
            raise NotImplementedError(
                f"{type(self).__name__} has no derivative: define vjp(self, xp, xs, y, gy) "
                f"(one body for first and higher order) or backward(self, gy) on Variables."
            )
        ys = tuple([revived(self, i) for i in range(len(self.outputs))])
        if len(ys) == 1:
            return self.vjp(self._graph_ops, self.inputs, ys[0], gys[0])
        return self.vjp(self._graph_ops, self.inputs, ys, gys)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} generation={getattr(self, 'generation', 0)}>"


def settings_of(fn: Function) -> MutableMapping[str, Any]:
    """The attributes ``fn`` keeps of its own (its ``__dict__``): a built-in's settings.

    Empty for a class whose instances keep nothing beyond :class:`Function`'s slots (it
    declares ``__slots__ = ()``). The dict returned is the instance's own where it has one:
    a static-graph trace writes a replay's settings into it; the empty mapping of one
    without a ``__dict__`` takes no writes.
    """
    return getattr(fn, "__dict__", _NO_SETTINGS)


_NO_SETTINGS: Any = MappingProxyType({})


def _lean_edges(inputs: tuple) -> tuple:
    """The edges a lean function keeps: each intermediate input's creator, in its place.

    An input made by a built-in function of one output is reached through that creator
    (its output is the input), so the graph holds no reference to the input's Variable
    and its array goes when the user's last reference does. Leaves (the user's own
    Variables and Constants) and outputs of book-style or many-output functions are kept
    as they are: a book-style ``backward`` reads its ``outputs``.
    """
    if len(inputs) > 2:
        return tuple([_edge(x) for x in inputs])
    a = _edge(inputs[0])
    if len(inputs) == 1:
        return inputs if a is inputs[0] else (a,)
    return (a, _edge(inputs[1]))


def _edge(x: Variable) -> Variable | Function:
    """The edge :func:`_lean_edges` keeps for one input ``x``."""
    c = x.creator
    if c is not None and c._vjp and len(c.outputs) == 1:
        if c.outputs[0] is not x.__weakref__:
            # c was called again after making x (one object reused): through c the walk
            # would reach the latest call's output; x itself leads the walk to the error
            # that names the reuse (backprop's check for a gradient nothing took). (The
            # weakref c keeps is x's first, which x.__weakref__ reads without a call.)
            return x
        a = x.data
        shape, dtype = a.shape, a.dtype
        like = _last[0]  # (most often the kind of the array before: no call)
        c._like = like if like[1] is dtype and like[0] == shape else _like_of(shape, dtype)
        return c
    return x


_likes: dict = {}
_last = [((), None)]  # the tuple _like_of returned last


def _like_of(shape: tuple, dtype: Any) -> tuple:
    """``(shape, dtype)``, one tuple shared by all arrays of that shape and dtype.

    Every object the graph keeps that the cyclic collector tracks (a tuple is one) makes
    each later collection of a growing graph dearer: sharing them took 58% off the cost
    of noting them in a 1,000-op chain (instructions counted). The dtype is found by
    identity (hashing a numpy dtype is slow); the shared tuple holds it, so its id is
    never another's.
    """
    key = (shape, id(dtype))
    like = _likes.get(key)
    if like is None:
        if len(_likes) >= 4096:  # (a program of ever-new shapes keeps no more than this)
            _likes.clear()
        _likes[key] = like = (shape, dtype)
    _last[0] = like
    return like


def output_of(c: Function) -> Variable:
    """The Variable that ``c`` (a function of one output) made, or a stand-in for it.

    The stand-in, made when the user has dropped the output, has no data, ``c`` as its
    creator and the output's generation; ``c`` then points to it, so every function that
    reads it back sees one object while it is alive. An output that was unchained, then
    dropped, comes back as a leaf (no creator), one object too while it is alive, as the
    unchained output was.
    """
    outs = c.outputs
    v = outs[0]() if outs else None
    if v is None:
        v = _new(Variable)
        v.data = v.name = v.grad = None
        if outs:
            v.creator = c
            v.generation = c.generation + 1
            c.outputs = (weakref.ref(v),)
        else:  # no outputs: the output was unchained
            v.creator = None
            v.generation = 0
            c.outputs = (unchained_ref(c, v),)
    return v


def revived(f: Function, i: int) -> Variable | None:
    """Output ``i`` of ``f`` as a Variable carrying its array, for a vjp on Variables.

    The user may have dropped it: a function whose vjp reads its outputs saved their
    arrays (``_ys``), and a Variable made anew around one takes the output's place, so a
    gradient of the gradient reaches ``f`` through it. None where the output is gone and
    its array was not saved (the vjp does not read it).
    """
    refs = f.outputs
    v = refs[i]() if i < len(refs) else None
    if not f._keeps_y or (v is not None and v.data is not None):
        return v
    saved = f._ys if len(refs) == 1 else f._ys[i]
    if v is None:
        v = _new(Variable)
        v.name = v.grad = None
        v.creator = f
        v.generation = f.generation + 1
        f.outputs = (*refs[:i], weakref.ref(v), *refs[i + 1 :])
    v.data = saved
    return v


def _check_fuses_as(cls: type, op: Any) -> None:
    """Refuse a ``fuses_as`` that names no chain op, or one of another operand count."""
    if op is None:
        return
    if op not in ARITY:
        raise ValueError(
            f"{cls.__name__}.fuses_as = {op!r} is no elementwise op of "
            f"zerograd.backends.chains.ARITY ({', '.join(sorted(ARITY))}); name the one op "
            f"its kernel computes, or leave fuses_as out."
        )
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    if all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        if len(params) != ARITY[op]:
            raise ValueError(
                f"{cls.__name__}.fuses_as = {op!r} takes {ARITY[op]} operands, but forward "
                f"takes {len(params)}; name the op its kernel computes, or leave fuses_as out."
            )


def _owner(cls: type, name: str) -> type:
    """The class in ``cls``'s MRO whose own namespace defines ``name``."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return object


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
        out.append(x if isinstance(x, Variable) else _constant(func, i, x, like))
    return tuple(out)


def _constant(func: Function, i: int, x: Any, like: Any) -> Constant:
    """Input ``i``, a raw operand, as a Constant on ``like``'s backend (and float dtype).

    An array operand is used as it is, so the Constant made for it last serves again while
    it lives (a graph holds it) and holds nothing else: ``y = y * c`` in a loop wraps ``c``
    once, as a PyTorch user wraps it in a tensor once. A Constant that a backward gave a
    gradient (a book-style derivative computes one for every input) or that was named is
    not shared. The cache holds it weakly and keeps nothing alive.
    """
    last = _last_constant[0]()
    if last is not None and last.data is x and last.grad is None and last.name is None:
        return last
    given = x
    try:  # a scalar or a list is converted; an array is used as it is once its dtype passes
        x = as_array(x, like=like)
    except TypeError as exc:
        raise _operand_error(func, i, x, exc) from None
    except OverflowError:  # an int beyond integer data's dtype: numpy 2 divides by it
        wide = wide_int(x, like) if type(x) is int and getattr(func, "true_division", 0) else None
        if wide is None:
            raise
        x = wide
    c = _new(Constant)  # Constant.__init__ checks what as_array has already made sure of
    c.data = x
    c.name = c.grad = c.creator = None
    c.generation = 0
    if x is given:  # an array operand, used as it is
        _last_constant[0] = weakref.ref(c)
    return c


_last_constant: list = [lambda: None]  # a weak reference to the Constant of an array operand


def _diagnose(func: Function, inputs: tuple, exc: Exception) -> None:
    """Raise a clearer error than ``exc`` for the input mistakes it can name.

    Those are: an input Variable that holds no data, data that is not an array (assigned by
    hand: ``x.data = "abc"``) or of a non-numeric dtype (an object array given as an
    operand), integers raised to a negative integer power, and a forward that wrote into a
    shared Python-number operand.
    """
    name = type(func).__name__
    if isinstance(exc, ValueError) and "read-only" in str(exc):  # numpy's words for the write
        for i, x in enumerate(inputs):
            shared = isinstance(x, Constant) and shared_scalar(x.data)
            if shared:
                raise ValueError(
                    f"{name}.forward wrote into input {i}, the read-only array that zerograd "
                    f"makes once from the Python number {shared[0]!r} and shares with every "
                    f"later use of that number; a forward must not change its inputs: compute "
                    f"a new array instead (c = c + 1.0, not c += 1.0)."
                ) from exc
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
        if not isinstance(x, Variable):  # a raw operand: _constant has named it already
            continue  # (and a datetime64 array's own .data, a buffer, raises ValueError)
        dtype = getattr(x.data, "dtype", None)
        if dtype is not None and type(x.data) in _by_type:
            if _by_type[type(x.data)].dtype_kind(dtype) not in "biufc":
                raise TypeError(_dtype_message(func, i, dtype)) from exc


def _operand_error(func: Function, i: int, x: Any, exc: Exception) -> TypeError:
    """The error for input ``i``, a raw operand ``x`` that ``as_array`` refused with ``exc``."""
    dtype = getattr(x, "dtype", None)
    # an array (or a library scalar) of a non-numeric dtype; a numeric one was refused for
    # its type (zerograd-numpy refuses numpy.matrix), which exc says
    if dtype is not None and getattr(dtype, "kind", "O") not in "biufc":
        return TypeError(_dtype_message(func, i, dtype))
    return TypeError(f"{type(func).__name__}: input {i}: {exc}")


def _dtype_message(func: Function, i: int, dtype: Any) -> str:
    return (
        f"{type(func).__name__}: input {i} has dtype {dtype}, which zerograd cannot compute "
        f"with; give bool, integer, float or complex data."
    )


def _fix_output(y: Any, inputs: tuple, func: Function) -> Any:
    """Turn a forward result that is not a backend array (a numpy scalar) into one.

    The array is made on the backend of the first input that is an array. Inputs may be
    numpy scalars themselves: the book's Newton loop assigns
    ``x.data = x.data - gx.data / gx2.data`` (step 33). A forward that returned None
    (a missing ``return``), a list (several outputs are a tuple) or no numbers (a string,
    an object) is an error naming ``func``.
    """
    name = type(func).__name__
    if y is None:
        raise TypeError(
            f"{name}.forward returned None; it must return the output array "
            f"(or a tuple of arrays): check for a missing `return`."
        )
    if isinstance(y, list):  # (DeZero refuses it too; numpy would stack it into one array)
        raise TypeError(
            f"{name}.forward returned a list: return a tuple of arrays for several outputs, "
            f"or one array (xp.stack(...) for a stacked one)."
        )
    for x in inputs:
        backend = _by_type.get(type(x.data))
        if backend is not None:
            a = backend.asarray(y)
            break
    else:
        backend, a = None, as_array(y)
        backend = _by_type.get(type(a))
    if backend is not None and backend.dtype_kind(a.dtype) not in "biufc":
        kind = type(y).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise TypeError(
            f"{name}.forward returned {article} {kind} ({y!r:.40}), not an array of numbers; "
            f"return the output array (or a tuple of arrays), computed from its inputs."
        )
    return a


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
            f"types {types}). Move them to one first: a Variable with x.to({names[0]!r}) (or "
            f"x.to_cpu(), x.to_gpu()), a raw array with "
            f"zerograd.backends.as_array_of(a, {names[0]!r})."
        )
