"""Telling DeZero's argument order from PyTorch's, for the layers whose orders differ.

DeZero's layers take the output size first and read the input size from the first batch
(``Linear(out_size, nobias, dtype, in_size)``, ``Conv2d(out_channels, kernel_size, stride,
pad, nobias, dtype, in_channels)``, ``RNN(hidden_size, in_size)``); PyTorch's take the input
size first (``nn.Linear(in_features, out_features, bias)``, ``nn.Conv2d(in_channels,
out_channels, kernel_size, stride, padding)``, ``nn.RNN(input_size, hidden_size)``). Both
are ints, so a call in PyTorch's order often builds a layer with no error. What each layer
checks, so that such a call fails with the zerograd spelling in the message:

- ``nobias`` must be a bool: an int there is PyTorch's ``out_features`` (``Linear(2, 10)``)
  or ``padding`` (``Conv2d(1, 16, 3, 1, 1)``);
- at a convolution's first call (``in_channels`` read from the input), a kernel larger than
  the padded input, or an input with exactly ``out_channels`` channels together with a
  kernel over 7 or a stride over 2: PyTorch's ``nn.Conv2d(in, out, kernel)`` read in
  DeZero's order gives ``out_channels=in``, ``kernel_size=out``, ``stride=kernel``. Passing
  ``in_channels=`` says the order is DeZero's and turns the second check off;
- a recurrent cell's input whose feature size is not ``in_size`` but ``hidden_size``;
- a recurrent cell's input with more than two axes (PyTorch's cells take a sequence).

PyTorch's keywords are refused too (``zerograd_nn.layers.pytorch_names``).

The book's calls (``Linear(10)``, ``Conv2d(64, 3, 1, 1)``, ``Conv2d(64, 7, 2, 3)``,
``RNN(10)``, keywords everywhere else) pass all of these.
"""

from __future__ import annotations

from typing import Any

from zerograd.checks import int_like, pair

_TORCH = {"Linear": "nn.Linear", "Conv2d": "nn.Conv2d", "Deconv2d": "nn.ConvTranspose2d"}

KERNEL_LIMIT = 7  # a kernel above this, with in_channels == out_channels, looks like a width
STRIDE_LIMIT = 2  # a stride above this, with in_channels == out_channels, looks like a kernel


def _args(values: tuple) -> str:
    return ", ".join(str(v) for v in values)


def check_nobias_is_no_width(layer: Any, nobias: Any, sizes: tuple) -> None:
    """Refuse an int ``nobias``: in PyTorch's order that place holds a size or the padding.

    Args:
        layer: the layer being built (its class names the error).
        nobias: the value given.
        sizes: the positional values before ``nobias`` as DeZero reads them
            (``(out_size,)``; ``(out_channels, kernel_size, stride, pad)``).

    Raises:
        TypeError: ``nobias`` is an int, with the zerograd spelling of the PyTorch call.
    """
    if not int_like(nobias):
        return
    name = type(layer).__name__
    torch_call = f"{_TORCH[name]}({_args((*sizes, nobias))})"
    if name == "Linear":
        ours, order = f"Linear({nobias}, in_size={sizes[0]})", "Linear(out_size, nobias, ...)"
    else:
        rest = [sizes[1], sizes[2]] + ([sizes[3]] if sizes[3] else []) + [nobias]
        ours = f"{name}({_args(tuple(rest))}, in_channels={sizes[0]})"
        order = f"{name}(out_channels, kernel_size, stride, pad, nobias, ...)"
    raise TypeError(
        f"{name}: nobias must be True or False, got {nobias!r}. The arguments are read in "
        f"DeZero's order, {order}; PyTorch's {torch_call} is {ours} here."
    )


def check_conv_first_input(layer: Any, shape: tuple) -> None:
    """At a convolution's first call, refuse what a call in PyTorch's order leaves behind.

    Called only while ``in_channels`` is still unknown (a call in PyTorch's order never
    gives it). See the module docstring for the two checks.

    Args:
        layer: a Conv2d or Deconv2d with ``out_channels``, ``kernel_size``, ``stride``, ``pad``.
        shape: the input's shape (N, C, H, W).

    Raises:
        ValueError: naming the layer as DeZero reads it and the zerograd spelling.
    """
    name = type(layer).__name__
    oc, c = layer.out_channels, shape[1]
    (kh, kw), (sh, sw) = pair(layer.kernel_size), pair(layer.stride)
    (ph, pw) = pair(layer.pad)
    too_big = name == "Conv2d" and (kh > shape[2] + 2 * ph or kw > shape[3] + 2 * pw)
    same = c == oc and (max(kh, kw) > KERNEL_LIMIT or max(sh, sw) > STRIDE_LIMIT)
    if not (too_big or same):
        return
    dezero = (
        f"{name}(out_channels={oc}, kernel_size={layer.kernel_size}, stride={layer.stride}, "
        f"pad={layer.pad})"
    )
    pad = f", {layer.pad}" if layer.pad else ""
    torch_call = f"{_TORCH[name]}({oc}, {layer.kernel_size}, {layer.stride}{pad})"
    ours = f"{name}({layer.kernel_size}, {layer.stride}{pad}, in_channels={oc})"
    torch = (
        f"{torch_call} (in, out, kernel{', stride' if pad else ''}) is {ours} here: "
        f"{name} reads its arguments in DeZero's order (out_channels, kernel_size, stride, pad)"
    )
    if too_big and not same:
        raise ValueError(
            f"{dezero}: its {kh}x{kw} kernel does not fit the input's {shape[2]}x{shape[3]} "
            f"(padded by {ph}x{pw}); use a smaller kernel or more padding. If these are "
            f"PyTorch's arguments, {torch}."
        )
    raise ValueError(
        f"{dezero} got an input of {c} channel{'s' if c != 1 else ''}, as many as "
        f"out_channels, with a {kh}x{kw} kernel and a {sh}x{sw} stride: the mark of "
        f"arguments in PyTorch's order. PyTorch's {torch}. If DeZero's order is what you "
        f"meant, pass in_channels={c} to say so."
    )


def check_step_features(layer: Any, features: int, in_size: int | None, hidden: int) -> None:
    """Refuse a recurrent cell's input whose feature size differs from ``in_size``.

    Args:
        layer: an RNN or LSTM.
        features: the input's feature size (its last axis).
        in_size: the cell's input size, or None while it is still unknown.
        hidden: the cell's hidden size.

    Raises:
        ValueError: naming both sizes, and the zerograd spelling of PyTorch's order when
            the input has ``hidden`` features.
    """
    if in_size is None or features == in_size:
        return
    name = type(layer).__name__
    text = f"{name}(hidden_size={hidden}, in_size={in_size}) got an input of {features} features"
    if features == hidden:
        text += (
            f". {name} reads its arguments in DeZero's order (hidden_size, in_size); PyTorch's "
            f"nn.{name}({hidden}, {in_size}) (input_size, hidden_size) is "
            f"{name}({in_size}, in_size={hidden}) here"
        )
    else:
        text += f"; give x of shape (N, {in_size})"
    raise ValueError(text + ".")
