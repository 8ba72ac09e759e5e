"""``get_dot_graph``: the computational graph behind a Variable as Graphviz DOT text."""

from __future__ import annotations

import re
from typing import Any

from zerograd import Variable
from zerograd.checks import flag

# Control characters (a NUL ends dot's input: "syntax error"; others make an SVG that is not
# XML) and lone surrogates (which no encoder writes): shown as Python writes them, \x00.
# Tabs stay; line breaks are DOT's \n.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_VAR = "{} [label={}, color=orange, style=filled]"
_FUNC = "{} [label={}, color=lightblue, style=filled, shape=box]"


def quote(text: str) -> str:
    r"""Return ``text`` as a DOT double-quoted string.

    Quotes and backslashes are escaped; line breaks become DOT's ``\n``; other control
    characters (a NUL byte included) and lone surrogates are shown as Python writes them
    (``\x00``, ``\ud800``), which Graphviz draws as that text.

    Args:
        text: any text, e.g. a variable's name.

    Returns:
        The quoted string, ready for a DOT ``label=``.

    Examples:
        >>> print(quote('say "hi" \\ bye'))
        "say \"hi\" \\ bye"
    """
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    text = _INVISIBLE.sub(_shown, text)
    return f'"{text}"'


def _shown(match: re.Match) -> str:
    """A control character or lone surrogate as DOT text that draws its Python escape."""
    code = ord(match.group())
    return f"\\\\x{code:02x}" if code < 0x100 else f"\\\\u{code:04x}"


def check_verbose(op: str, verbose: Any) -> None:
    """Refuse a ``verbose`` that is not a bool (``"no"`` would otherwise mean True).

    Args:
        op: the calling function's name, used in the error message.
        verbose: the value to check; a Python or numpy bool passes.

    Raises:
        TypeError: ``verbose`` is not a bool.
    """
    flag(op, "verbose", verbose)


def _var_label(v: Variable, verbose: bool, like: Any = None) -> str:
    """``v``'s label; ``like``: the (shape, dtype) the function ``v`` feeds noted, if any."""
    name = "" if v.name is None else str(v.name)
    if v.data is not None:
        like = v.shape, v.dtype
    elif v.creator is not None:  # the graph let its array go: the creator noted what it was
        like = v.creator.output_like()
    if verbose and like is not None:
        if name:
            name += ": "
        name += f"{tuple(like[0])} {like[1]}"
    return name


def functions_in_order(output: Variable) -> list[Any]:
    """List the functions that produced ``output``, each after the creators of its inputs.

    A depth-first walk from ``output`` that visits inputs left to right and lists a function
    once all of its inputs' creators are listed: the order in which a program evaluating
    left to right computed them. Iterative, so graphs of any depth work.

    Args:
        output: the Variable whose graph is walked.

    Returns:
        The functions in computation order; empty when ``output`` has no creator.
    """
    root = output.creator
    if root is None:
        return []
    order: list[Any] = []
    entered = {id(root)}  # ids are stable: every function here is alive (held by the graph)
    stack: list[list[Any]] = [[root, 0]]  # (function, index of the next input to look at)
    while stack:
        top = stack[-1]
        f, i = top
        inputs = f.inputs
        nxt = None
        while i < len(inputs):
            c = inputs[i].creator
            i += 1
            if c is not None and id(c) not in entered:
                nxt = c
                break
        top[1] = i
        if nxt is None:
            stack.pop()
            order.append(f)
        else:
            entered.add(id(nxt))
            stack.append([nxt, 0])
    return order


def get_dot_graph(output: Variable, verbose: bool = True) -> str:
    """Return the DOT text of the graph that produced ``output``.

    Render the text with Graphviz's ``dot`` (or use ``plot_dot_graph``). Variables are
    orange ellipses labelled with their name and, with ``verbose``, their shape and dtype;
    functions are blue boxes labelled with their class name. Nodes and edges come in the
    order of the computation and node ids count up from 0 in that order, so the same graph
    always gives the same text. Works on gradients' own graphs
    (``backward(create_graph=True)``) and on graphs of any size (no recursion).

    Args:
        output: the Variable whose graph is drawn.
        verbose: label variables with their shape and dtype too.

    Returns:
        The DOT text, one statement per line.

    Raises:
        TypeError: ``output`` is not a Variable, or ``verbose`` is not a bool.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> x = Variable(np.array(1.0), name="x")
        >>> y = x + x
        >>> print(get_dot_graph(y, verbose=False))
        digraph g {
        0 [label="x", color=orange, style=filled]
        1 [label="Add", color=lightblue, style=filled, shape=box]
        0 -> 1
        0 -> 1
        2 [label="", color=orange, style=filled]
        1 -> 2
        }
    """
    if not isinstance(output, Variable):
        raise TypeError(
            f"get_dot_graph(output): output must be a zerograd Variable, got "
            f"{type(output).__module__}.{type(output).__qualname__}; wrap arrays with "
            f"zerograd.Variable(...) and draw the result of a computation on it."
        )
    check_verbose("get_dot_graph", verbose)
    lines = ["digraph g {"]
    ids: dict[int, int] = {}
    keep: list[Any] = []  # holds every drawn object so that no id() is reused meanwhile

    def var_id(v: Variable, like: Any = None) -> int:
        n = ids.get(id(v))
        if n is None:
            n = ids[id(v)] = len(ids)
            keep.append(v)
            lines.append(_VAR.format(n, quote(_var_label(v, verbose, like))))
        return n

    for f in functions_in_order(output):
        # an input unchained, then dropped, has neither data nor creator: f noted its kind
        xs = [var_id(x, f.input_like(i)) for i, x in enumerate(f.inputs)]
        fn = ids[id(f)] = len(ids)
        keep.append(f)
        lines.append(_FUNC.format(fn, quote(type(f).__name__)))
        lines.extend(f"{x} -> {fn}" for x in xs)
        for y in f.output_variables():
            if y is not None:  # an output nobody holds any more has been freed: not drawn
                lines.append(f"{fn} -> {var_id(y)}")
    if output.creator is None:
        var_id(output)
    lines.append("}")
    return "\n".join(lines)


__all__ = ["get_dot_graph"]
