"""``Variable``, ``Parameter`` and the conversions ``as_variable`` / ``as_array``."""

from __future__ import annotations

import copy
import math
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import backends as _backends
from .arrays import _KINDS, as_array
from .backends.registry import registry as _registry
from .checks import flag
from .modes import check_backward as _check_backward
from .modes import switch as _modes
from .recording import READ as _READ
from .recording import current as _recorder
from .recording import switch as _recording
from .recording import while_recording as _while_recording

_by_type = _registry.by_type


def _checked(data: Any, what: str = "Variable(data)") -> Any:
    """Return ``data`` as a Variable may hold it, or raise a TypeError naming ``what``.

    A Variable holds an array of an installed backend with a numeric dtype; a library's
    scalar (``numpy.float64``) becomes a 0-d array.
    """
    if type(data) not in _by_type:
        if isinstance(data, Variable):
            if what != "Variable(data)":
                raise TypeError(
                    f"{what}: got a Variable ({data!r}); assign its array instead (x.data)."
                )
            raise TypeError(
                f"Variable(data): data is already a Variable (shape {tuple(data.shape)}, dtype "
                f"{data.dtype}). Use it as is, "
                f"data.detach() for a new Variable with no history, or data.data for its array."
            )
        try:
            backend = _backends.backend_of(data)
        except TypeError:
            backend = _scalar_backend(data)
            if backend is None:
                _explain_refusal(data, what)
                raise TypeError(
                    f"{what}: data must be an array of an installed backend, got "
                    f"{type(data).__module__}.{type(data).__qualname__}. Wrap Python scalars "
                    f"and lists first: Variable(np.array(1.0)) or Variable(zerograd.as_array(1.0))."
                ) from None
            data = backend.asarray(data)
    else:
        backend = _by_type[type(data)]
    dtype = getattr(data, "dtype", None)  # a minimal backend's arrays may have none
    if dtype is not None and backend.dtype_kind(dtype) not in _KINDS:
        raise TypeError(
            f"{what}: data has dtype {dtype}, which zerograd cannot compute with; "
            f"give bool, integer, float or complex data (e.g. convert strings with "
            f"data.astype(float))."
        )
    return data


def _explain_bad_grad(y: Variable, exc: Exception) -> None:
    """Explain a failed backward (error path only).

    Raises a clear TypeError when a variable of ``y``'s graph holds a ``grad`` that is not
    a Variable (assigned by hand). ``y``'s own may be an array: the book's step 9 seeds
    backward with ``y.grad = np.array(1.0)``.
    """
    stack, seen = [y], set()
    while stack:
        v = stack.pop()
        g = v.grad
        if g is not None and not isinstance(g, Variable) and v is not y:
            name = f"'{v.name}'" if v.name else f"of shape {getattr(v.data, 'shape', None)}"
            raise TypeError(
                f"backward: the variable {name} holds a grad of type "
                f"{type(g).__module__}.{type(g).__qualname__}, not a Variable; a gradient must "
                f"be a Variable or None (assign Variable(array), or call cleargrad())."
            ) from exc
        f = v.creator
        if f is not None and f not in seen:
            seen.add(f)
            stack.extend(f.inputs)


def _no_data(x: Variable, prop: str) -> AttributeError:
    """The error for ``x.<prop>`` when reading it from ``x.data`` failed.

    An AttributeError still, so ``getattr(x, prop, default)`` and ``hasattr`` keep working.
    """
    if x.data is None:
        return AttributeError(
            f"x.{prop} of a Variable whose data is None; give it an array first (x.data = ...)."
        )
    return AttributeError(
        f"x.{prop}: the Variable's data ({type(x.data).__qualname__}) has no {prop!r}."
    )


def _no_data_to_compare(x: Variable, other: Any, op: str) -> None:
    """Raise the error for ``x op other`` when either is a Variable whose data is None.

    Python's own ("'<' not supported between instances of 'NoneType' and 'int'") names
    None, not the Variable; any other failure is left to the caller to re-raise.
    """
    if x.data is None or (isinstance(other, Variable) and other.data is None):
        raise TypeError(
            f"x {op} ... of a Variable whose data is None; give it an array first (x.data = ...)."
        ) from None


def _beyond_the_dtype(x: Variable, other: Any, true_above: bool, exc: OverflowError) -> Any:
    """``x op other`` for integer data and a Python int beyond its dtype: all one answer.

    numpy 2 compares such an int exactly (``int8_array < 300`` is all True): every element
    lies below it (above it for a negative one). ``true_above`` is the answer where
    ``other`` is above the dtype's range (True for ``<`` and ``<=``). Other overflows (a
    float dtype's ``x < 10 ** 400``) raise ``exc`` again, as numpy does.
    """
    a = x.data
    if type(other) is not int or _backends.backend_of(a).dtype_kind(a.dtype) not in "iu":
        raise exc
    return (a == a) if (other > 0) == true_above else (a != a)  # integers have no nan


def _explain_refusal(data: Any, what: str) -> None:
    """Raise the default backend's own TypeError when it refuses to convert ``data``.

    An array-like that no backend owns may be one that a backend refuses on purpose
    (zerograd-numpy: ``numpy.matrix``, masked arrays); its reason says more than "not an
    array of an installed backend". Error path only.
    """
    if not (hasattr(data, "shape") and hasattr(data, "dtype")):
        return
    try:
        _registry.default().asarray(data)
    except TypeError as exc:
        raise TypeError(f"{what}: {exc}") from None
    except Exception:  # noqa: BLE001 - any other failure: the caller's message stands
        return


def _scalar_backend(x: Any) -> Any:
    """Return the default backend when it can turn the library scalar ``x`` into an array.

    A library scalar has a dtype and the 0-d shape, as ``numpy.float64`` does; anything
    else gives None.
    """
    if getattr(x, "shape", None) != () or not hasattr(x, "dtype"):
        return None
    backend = _registry.default()
    return backend if _registry.resolve_type(type(backend.asarray(x))) is backend else None


class _Unchained(weakref.ref):
    """The weak reference :func:`unchained_ref` makes: it also names ``v``'s old creator."""

    __slots__ = ("owner",)


def _cut(ref: _Unchained) -> None:
    """An :class:`_Unchained` reference's callback: the creator now leads nowhere."""
    f = ref.owner()
    if f is not None:
        f.outputs = ()


def unchained_ref(c: Any, v: Any) -> weakref.ref:
    """A weak reference to ``v``, the output of ``c`` that was unchained, for ``c.outputs``.

    An unchained output stays ``c``'s output while it lives, so the functions that reach it
    through ``c`` (lean edges, see ``Function.inputs``) reach ``v``, a leaf now, and give it
    its gradient; once it is gone the reference empties ``c.outputs``: ``()`` says the edge
    leads nowhere (not past the cut into ``c``).

    Args:
        c: the function that made ``v``.
        v: its output, no longer linked to it (``v.creator`` is None).

    Returns:
        The reference to put in ``c.outputs``.
    """
    ref = _Unchained(v, _cut)
    ref.owner = weakref.ref(c)  # (weakly: the cut must not keep the graph above it alive)
    return ref


def _unchain(v: Any) -> None:
    """Cut ``v`` from its creator (see :meth:`Variable.unchain`).

    Functions that still reach ``v`` through its creator (lean edges) reach ``v`` while it
    lives (:func:`unchained_ref`), ``unchain_backward``'s too: a function it did not walk
    (another branch from ``v``) must find ``v`` as the leaf it now is, as in DeZero.
    """
    c = v.creator
    v.creator = None
    if c is not None:
        outs = c.outputs
        if len(outs) == 1 and outs[0]() is v:
            # the creator's one output is cut off: it leads to this leaf, then to nothing
            c.outputs = (unchained_ref(c, v),)


class Variable:
    """An array that remembers the function that made it, so gradients can flow back.

    Args:
        data: An array of an installed backend with a numeric dtype (a library scalar such
            as ``numpy.float64`` becomes a 0-d array), or None.
        name: An optional label, shown by graph plots.

    Raises:
        TypeError: ``data`` is not a numeric backend array (a list, a Python scalar, a
            string, an object array, ...).

    Copies (``pickle``, ``copy.deepcopy``, ``copy.copy``) keep ``data``, ``name`` and
    ``grad`` and never the graph: a copy of a variable with a creator is a leaf (no
    creator, generation 0), as PyTorch's pickled and copied tensors are, and a gradient
    recorded with ``create_graph=True`` is copied without its graph too. ``copy.copy``
    shares the arrays (the data's and the gradient's) with the original, holding the
    gradient's array in a gradient Variable of its own; ``deepcopy`` and ``pickle`` share
    nothing. The original keeps its graph.

    Examples:
        >>> import numpy as np
    >>> x = Variable(np.array(3.0))
    >>> y = x * x
    >>> y.backward()
    >>> x.grad
    variable(6.0)
    """

    __slots__ = ("data", "name", "grad", "creator", "generation", "__weakref__")
    __array_priority__ = 200  # cupy and other array types defer to our reflected operators
    # The backward walk (zerograd.backprop.backward) and the operators and tensor methods
    # (x + y, x.sum(): ops of zerograd.functions) sit above this module: zerograd.wiring
    # installs them here (importing zerograd, or any of its modules, imports it).
    _engine: Callable[[Variable, bool, bool], None]
    # Any, not "Any | None" as __init__ alone would tell a type checker: a Variable made
    # without data is rare, and an Optional would refuse every expression of x.data
    data: Any

    def __init__(self, data: Any, name: str | None = None) -> None:
        self.data = None if data is None else _checked(data)
        self.name = name
        self.grad: Variable | None = None
        self.creator: Any = None
        self.generation = 0

    if TYPE_CHECKING:
        # The operators and tensor methods that zerograd.wiring installs from the ops naming
        # them (zerograd.functions.ops.OP_METHODS), declared for type checkers, which do not
        # see setattr; at run time this block does not exist. tests/test_type_hints.py keeps
        # it equal to OP_METHODS, name for name and parameter for parameter.
        def __add__(self, other: Any) -> Variable: ...
        def __radd__(self, other: Any) -> Variable: ...
        def __sub__(self, other: Any) -> Variable: ...
        def __rsub__(self, other: Any) -> Variable: ...
        def __mul__(self, other: Any) -> Variable: ...
        def __rmul__(self, other: Any) -> Variable: ...
        def __truediv__(self, other: Any) -> Variable: ...
        def __rtruediv__(self, other: Any) -> Variable: ...
        def __neg__(self) -> Variable: ...
        def __pow__(self, c: Any) -> Variable: ...
        def __rpow__(self, c: Any) -> Variable: ...
        def __matmul__(self, W: Any) -> Variable: ...
        def __rmatmul__(self, other: Any) -> Variable: ...
        def __getitem__(self, slices: Any) -> Variable: ...
        def matmul(self, W: Any) -> Variable: ...
        def dot(self, W: Any) -> Variable: ...
        def sum(
            self,
            axis: int | tuple[int, ...] | None = None,
            keepdims: bool = False,
            dim: int | tuple[int, ...] | None = None,
            keepdim: bool | None = None,
        ) -> Variable: ...
        def mean(
            self,
            axis: int | tuple[int, ...] | None = None,
            keepdims: bool = False,
            dim: int | tuple[int, ...] | None = None,
            keepdim: bool | None = None,
        ) -> Variable: ...
        def max(
            self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, **pytorch: Any
        ) -> Variable: ...
        def min(
            self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, **pytorch: Any
        ) -> Variable: ...
        def argmax(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None) -> Any: ...
        def reshape(self, *shape: Any, **keywords: Any) -> Variable: ...
        def transpose(self, *axes: Any, **pytorch: Any) -> Variable: ...
        @property
        def T(self) -> Variable: ...

    def __getstate__(self) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The state pickle and copy use: the slots, less the graph (see the class doc).

        A creator holds weak references (it cannot be pickled), and a copied creator would
        lead to the original's outputs, not to the copy.
        """
        slots = {}
        for cls in type(self).__mro__:
            for name in cls.__dict__.get("__slots__", ()):
                if name not in ("__weakref__", "__dict__") and hasattr(self, name):
                    slots[name] = getattr(self, name)
        if slots.get("creator") is not None:
            slots["creator"] = None
            slots["generation"] = 0
        return getattr(self, "__dict__", None) or None, slots

    def __copy__(self) -> Variable:
        """``copy.copy(x)``: the same arrays, in a gradient Variable of the copy's own.

        A gradient Variable belongs to one variable: stored in two, rebinding one's array
        (``x.to()`` does) would rebind the other's, and the copy would keep a gradient's
        graph, which no copy does (see the class doc).
        """
        cls = type(self)
        twin = cls.__new__(cls)
        state, slots = self.__getstate__()
        grad = slots.get("grad")
        if isinstance(grad, Variable):
            slots["grad"] = copy.copy(grad)
        if state:
            twin.__dict__.update(state)
        for name, value in slots.items():
            setattr(twin, name, value)
        return twin

    # -- array-like properties ------------------------------------------------------------
    # (a try costs nothing until it fails: the error names the cause, not NoneType's)
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the data."""
        try:
            return self.data.shape
        except AttributeError:
            raise _no_data(self, "shape") from None

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        try:
            return self.data.ndim
        except AttributeError:
            raise _no_data(self, "ndim") from None

    @property
    def size(self) -> int:
        """Number of elements."""
        try:
            shape = self.data.shape
        except AttributeError:
            raise _no_data(self, "size") from None
        return math.prod(shape)  # torch.Tensor.size is a method: see utils.size_of

    @property
    def dtype(self) -> Any:
        """Data type of the elements."""
        try:
            return self.data.dtype
        except AttributeError:
            raise _no_data(self, "dtype") from None

    def __len__(self) -> int:
        if self.data is None:
            raise TypeError("len() of a Variable whose data is None; give it an array first.")
        shape = self.data.shape
        if not shape:
            raise TypeError("len() of a 0-d variable")
        return shape[0]

    def __repr__(self) -> str:
        if self.data is None:
            return "variable(None)"
        body = str(self.data).replace("\n", "\n" + " " * 9)
        return f"variable({body})"

    def item(self) -> Any:
        """The single element as a Python scalar (a TypeError for any other size)."""
        return self._one("item")

    def numpy(self) -> Any:
        """The data as a numpy array on the host (PyTorch's ``tensor.numpy()``); no graph.

        On the numpy backend this is ``x.data`` itself (shared, as PyTorch shares a CPU
        tensor's memory); other backends copy through their ``to_numpy``. 0-d data gives a
        0-d array: ``x.item()`` gives the Python number.

        Raises:
            TypeError: The data is None.
        """
        if self.data is None:
            raise TypeError(
                "numpy() of a Variable whose data is None; give it an array first (x.data = ...)."
            )
        return _backends.as_numpy(self.data)

    def _one(self, to: str) -> Any:
        data = self.data
        if data is None or math.prod(data.shape) != 1:
            shape = None if data is None else tuple(data.shape)
            raise TypeError(
                f"{to}() of a Variable needs exactly one element, got shape {shape}; reduce "
                f"it first (x.sum(), x[0]) or use x.data for the array."
            )
        return _backends.as_numpy(data).item()

    def __float__(self) -> float:
        """``float(x)`` of a one-element Variable (``float(loss)``)."""
        return float(self._one("float"))

    def __int__(self) -> int:
        """``int(x)`` of a one-element Variable."""
        return int(self._one("int"))

    def __bool__(self) -> bool:
        """``bool(x)`` of a one-element Variable; ambiguous (an error) for any other size."""
        return bool(self._one("bool"))

    # -- numpy interop: values out, never a silent loss of the graph ----------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """``numpy.asarray(x)``: the data as a numpy array (no graph; like ``x.data``).

        Without this, numpy would build an object array of 0-d Variables.
        """
        if self.data is None:
            raise TypeError("numpy.asarray() of a Variable whose data is None")
        a = _backends.as_numpy(self.data)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """Refuse numpy functions (``np.sum(x)``) on Variables: they would drop the graph."""
        raise _numpy_refusal(getattr(func, "__name__", "function"))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Operators of numpy arrays meeting a Variable: new results record a graph.

        ``ndarray + x`` (and ``-``, ``*``, ``/``, ``**``, ``@``) gives ``x.__radd__(ndarray)``:
        a Variable with a creator. An in-place update of an array (``a -= lr * x.grad``, any
        ufunc given ``out=``, ``ufunc.at``) uses the Variable's data, as DeZero's book code
        does. Any other numpy ufunc on a Variable is refused: it would drop the graph.
        """
        name = ufunc.__name__
        if method == "__call__" and not kwargs and len(inputs) == 2:  # an operator's call
            a, b = inputs
            if name in _FLIPPED:  # the operator Python would have tried on the Variable
                op, flipped = _FLIPPED[name]
                return getattr(self, op)(b) if a is self else getattr(self, flipped)(a)
            if name in ("equal", "not_equal"):  # == and != compare identity (see below)
                return (a is b) == (name == "equal")
        if "out" in kwargs or method == "at":
            targets = kwargs.get("out", ()) if method != "at" else inputs[:1]
            if any(isinstance(t, Variable) for t in targets):
                raise TypeError(
                    f"numpy.{name}(): a Variable cannot be written into in place; write into "
                    f"its array (x.data) or compute a new Variable (x = x - y)."
                )
            return getattr(ufunc, method)(*map(_array_of, inputs), **kwargs)
        raise _numpy_refusal(name if method == "__call__" else f"{name}.{method}")

    # -- comparisons: backend boolean arrays, no graph -------------------------------------
    # == and != keep object identity: Variables stay hashable, and the engine, optimizers
    # and user code keep them in sets and dicts. Compare values with x.data == y.
    def __lt__(self, other: Any) -> Any:
        try:
            return self.data < _operand(other, self.data)
        except TypeError:
            _no_data_to_compare(self, other, "<")
            raise
        except OverflowError as exc:
            return _beyond_the_dtype(self, other, True, exc)

    def __le__(self, other: Any) -> Any:
        try:
            return self.data <= _operand(other, self.data)
        except TypeError:
            _no_data_to_compare(self, other, "<=")
            raise
        except OverflowError as exc:
            return _beyond_the_dtype(self, other, True, exc)

    def __gt__(self, other: Any) -> Any:
        try:
            return self.data > _operand(other, self.data)
        except TypeError:
            _no_data_to_compare(self, other, ">")
            raise
        except OverflowError as exc:
            return _beyond_the_dtype(self, other, False, exc)

    def __ge__(self, other: Any) -> Any:
        try:
            return self.data >= _operand(other, self.data)
        except TypeError:
            _no_data_to_compare(self, other, ">=")
            raise
        except OverflowError as exc:
            return _beyond_the_dtype(self, other, False, exc)

    # -- graph --------------------------------------------------------------------------
    def set_creator(self, func: Any) -> None:
        """Record ``func`` as the function that produced this variable.

        Args:
            func: The Function; this variable's generation becomes one more than its.
        """
        self.creator = func
        self.generation = func.generation + 1

    def cleargrad(self) -> None:
        """Forget the gradient (call before a second ``backward``)."""
        self.grad = None

    def detach(self) -> Variable:
        """A new Variable sharing this one's data, with no creator and no gradient.

        Examples:
            >>> import numpy as np
            >>> x = Variable(np.array(2.0))
            >>> (x * x).detach().creator is None
            True
        """
        return Variable(self.data, self.name)

    def unchain(self) -> None:
        """Cut the link to the creator (the graph upstream is no longer reachable from here).

        Functions that reach this variable through its creator (those that keep no input
        values, see ``Function.inputs``) no longer reach the creator either: while this
        variable lives they reach it, a leaf now (its ``grad`` gets their gradients, as in
        DeZero); once it is gone they lead nowhere.
        """
        _unchain(self)

    def unchain_backward(self) -> None:
        """Cut every link in the graph upstream of this variable (truncated BPTT)."""
        stack = [self.creator] if self.creator is not None else []
        seen = set()
        while stack:
            f = stack.pop()
            if f in seen:
                continue
            seen.add(f)
            xs = f.inputs
            for x in xs:
                if x.creator is not None:
                    stack.append(x.creator)
                    _unchain(x)
            f.inputs = xs  # f holds the unchained Variables, not the creators it reached

    def backward(
        self,
        retain_grad: bool = False,
        create_graph: bool = False,
        *,
        retain_graph: bool | None = None,
    ) -> None:
        """Compute gradients of this variable with respect to every variable upstream.

        Gradients are accumulated into each input's ``grad`` (call ``cleargrad`` first to
        start over). The graph stays as it is, so ``backward()`` may run through it again.

        Args:
            retain_grad: Keep the gradients of intermediate variables too.
            create_graph: Record the backward computation, so the gradients can be
                differentiated again.
            retain_graph: Accepted for PyTorch's habit and changes nothing: the graph is
                always kept (it is freed when nothing references its outputs).

        Raises:
            RuntimeError: This variable was computed with backprop disabled, or the call
                is inside a function given to a :mod:`zerograd.func` transform (which
                differentiates that function itself).
            TypeError: A variable of the graph holds a ``grad`` that is not a Variable,
                ``retain_graph`` is not a bool, or this variable's data is None.
            ValueError: A gradient preset on this variable (``y.grad``) has another shape.

        Examples:
            >>> import numpy as np
            >>> x = Variable(np.array(2.0))
            >>> y = x * x
            >>> y.backward()
            >>> x.grad
            variable(4.0)
        """
        if retain_graph is not None:
            flag("backward", "retain_graph", retain_graph)
        if retain_grad is not False and retain_grad is not True:  # (no call when a bool)
            retain_grad = flag("backward", "retain_grad", retain_grad)
        if create_graph is not False and create_graph is not True:
            create_graph = flag("backward", "create_graph", create_graph)
        if _modes.on:  # a transform's function: see zerograd.modes.check_backward
            _check_backward()
        if self.generation < 0 and self.creator is None:
            raise RuntimeError(
                "backward: this Variable was computed with backprop disabled (inside no_grad(), "
                "a gradient from a backward without create_graph=True, or a static_graph "
                "replay), so no graph was recorded and no gradient can flow from it; compute "
                "it with backprop enabled (for a static_graph function: call backward inside it)."
            )
        try:
            rec = _recording.on and _recorder()
            if rec:  # a static-graph trace runs the walk and plans its replay from the graph
                rec.backward(self, retain_grad, create_graph, self._engine)
            else:
                self._engine(retain_grad, create_graph)
        except Exception as exc:
            if self.data is None:  # ones_like(None) fails far from the cause
                raise TypeError(
                    "backward() of a Variable whose data is None; give it an array first "
                    "(x.data = ...)."
                ) from exc
            _explain_bad_grad(self, exc)
            raise

    # -- devices --------------------------------------------------------------------------
    def to(self, backend: Any) -> Variable:
        """Move the data (and gradient) to ``backend``, in place.

        Args:
            backend: A backend name such as ``'numpy'``, or a ``Backend``.

        Returns:
            This Variable, as ``Layer.to`` returns the layer.

        Raises:
            NoBackendError: The backend is not installed or cannot be used here.
        """
        if self.data is not None:
            data = _backends.as_array_of(self.data, backend)
            grad = None if self.grad is None else _backends.as_array_of(self.grad.data, backend)
            self.data = data  # assigned only once both conversions succeeded
            if grad is not None:
                self.grad.data = grad
        return self

    def to_cpu(self) -> Variable:
        """Move the data to the CPU (the numpy backend), in place.

        Returns:
            This Variable.
        """
        return self.to(_registry.default())

    def to_gpu(self) -> Variable:
        """Move the data to the GPU backend (zerograd-cupy), in place.

        Returns:
            This Variable.

        Raises:
            NoBackendError: No GPU backend is installed and usable.
            BackendPluginError: A GPU plugin failed to say whether it is usable.
        """
        return self.to(_backends.gpu_backend())


class Parameter(Variable):
    """A Variable that a layer owns and an optimizer updates.

    Args:
        data: The parameter's array (as for ``Variable``).
        name: An optional label.

    Assignments to ``data`` and ``grad`` are checked (parameters are assigned by users and
    optimizers, not in every operation): ``data`` must be an array of an installed backend
    (a numpy scalar becomes a 0-d array), ``grad`` a Variable or None (optimizers check
    its shape at ``update()``).
    """

    __slots__ = ()


_get_data, _set_data_slot = Variable.data.__get__, Variable.data.__set__
_get_grad, _set_grad_slot = Variable.grad.__get__, Variable.grad.__set__


def _set_param_data(self: Parameter, value: Any) -> None:
    if value is not None:  # dtype too: parameters are assigned per step, not per operation
        value = _checked(value, f"{type(self).__name__}.data = ...")
    _set_data_slot(self, value)


def _set_param_grad(self: Parameter, value: Any) -> None:
    if value is not None:
        owner = type(self).__name__
        if not isinstance(value, Variable):
            raise TypeError(
                f"{owner}.grad = ...: a gradient must be a Variable or None, got "
                f"{type(value).__module__}.{type(value).__qualname__}; wrap an array as "
                f"Variable(array)."
            )
    _set_grad_slot(self, value)


Parameter.data = property(_get_data, _set_param_data, doc="The parameter's array (checked).")
Parameter.grad = property(_get_grad, _set_param_grad, doc="The gradient Variable, or None.")

# While a static-graph trace records (and only then), ``data`` is a property that tells the
# recording thread's trace who reads or assigns it: Python that reads a value, or assigns
# one, is work a replay would not do (a NaN guard on ``loss.data``, ``W.data -= ...``). The
# trace tells zerograd's own reads from the step's by the calling frame.
_plain_data = Variable.__dict__["data"]
_plain_param_data = Parameter.__dict__["data"]


_VALUE_READS = {  # the code of each Variable method that hands values to Python
    f.__code__: what
    for f, what in (
        (Variable.__repr__, "repr(x), print(x)"),
        (Variable.numpy, "x.numpy()"),
        (Variable._one, "{to}()"),
        (Variable.__array__, "numpy.asarray(x)"),
        (Variable.__lt__, "x < ..."),
        (Variable.__le__, "x <= ..."),
        (Variable.__gt__, "x > ..."),
        (Variable.__ge__, "x >= ..."),
    )
}


def value_read(frame: Any) -> str | None:
    """How Python takes a Variable's values when ``frame`` reads its ``data``, or None.

    The Variable methods that hand values to Python (``float(x)``, ``x < y``, ``print(x)``,
    ``numpy.asarray(x)``, ...) read ``self.data`` first: a static-graph trace, told of
    every read while it records, asks this to tell those reads (work a replay would not do
    again) from zerograd's own.

    Args:
        frame: the frame reading ``x.data``.

    Returns:
        The read as the user wrote it (``"float()"``, ``"x < ..."``), or None for any
        other frame.
    """
    what = _VALUE_READS.get(frame.f_code)
    if what is not None and "{to}" in what:
        what = what.format(to=frame.f_locals.get("to", "item"))
    return what


def _tell(v: Variable, value: Any) -> None:
    """Tell the recording thread's trace (if any) that ``v.data`` is read or assigned.

    ``value`` is the array assigned, or ``READ``; the frame named is the watcher's caller.
    """
    rec = _recorder()
    if rec is not None:
        rec.data(v, sys._getframe(2), value)


def _watched_get(self: Variable) -> Any:
    _tell(self, _READ)
    return _get_data(self)


def _watched_set(self: Variable, value: Any) -> None:
    _tell(self, value)
    _set_data_slot(self, value)


def _watched_param_set(self: Parameter, value: Any) -> None:
    _tell(self, value)
    _set_param_data(self, value)


_watched_data = property(_watched_get, _watched_set, doc=_plain_data.__doc__)
_watched_param_data = property(_watched_get, _watched_param_set, doc=_plain_param_data.__doc__)


def _watch_data(on: bool) -> None:
    Variable.data = _watched_data if on else _plain_data
    Parameter.data = _watched_param_data if on else _plain_param_data


_while_recording(_watch_data)


class Constant(Variable):
    """An operand given as a raw array or scalar: nothing upstream needs its gradient.

    Args:
        data: The operand's array (a library scalar becomes a 0-d array).
        name: An optional label.

    Functions may skip computing gradients for Constant inputs (their gradient is
    unreachable by the user).
    """

    __slots__ = ()

    def __init__(self, data: Any, name: str | None = None) -> None:
        # operands reach here through as_array (hot path): only scalars need converting
        self.data = data if type(data) in _by_type else _checked(data)
        self.name = name
        self.grad = None
        self.creator = None
        self.generation = 0


_FLIPPED = {
    "add": ("__add__", "__radd__"),
    "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"),
    "divide": ("__truediv__", "__rtruediv__"),
    "true_divide": ("__truediv__", "__rtruediv__"),  # numpy 1.x's name
    "power": ("__pow__", "__rpow__"),
    "matmul": ("__matmul__", "__rmatmul__"),
    "less": ("__lt__", "__gt__"),
    "less_equal": ("__le__", "__ge__"),
    "greater": ("__gt__", "__lt__"),
    "greater_equal": ("__ge__", "__le__"),
}
"""numpy ufunc name -> the Variable's operator for ``x op a`` and for ``a op x``."""


def _numpy_refusal(name: str) -> TypeError:
    return TypeError(
        f"numpy.{name}() got a zerograd Variable, and numpy functions do not record "
        f"gradients: use zerograd's own function where there is one (zerograd.functions, "
        f"zerograd_nn.functional, or a method such as x.sum()), or numpy.{name}(x.data) "
        f"for a plain array."
    )


def _array_of(x: Any) -> Any:
    """An in-place ufunc's operand: a Variable's array, anything else as it is."""
    if not isinstance(x, Variable):
        return x
    if x.data is None:
        raise TypeError(
            "a numpy in-place operation got a Variable whose data is None; give it an array "
            "first (x.data = ...)."
        )
    return x.data


def _operand(x: Any, like: Any) -> Any:
    """The array behind a comparison's other operand."""
    return x.data if isinstance(x, Variable) else as_array(x, like=like)


def as_variable(obj: Any) -> Variable:
    """Return ``obj`` as a Variable; arrays, scalars and lists are wrapped.

    Args:
        obj: A Variable (returned as it is), an array, a scalar or a nested list.

    Returns:
        A Variable holding ``obj``'s data.

    Raises:
        TypeError: ``obj`` is not numeric data (None, a string, an object array, ...).
    """
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj))


_backends.register_array_wrapper(Variable)
