"""PyTorch's names that ``zerograd_nn.functional`` spells otherwise: functions and keywords.

A PyTorch habit meets one error that names zerograd's spelling, never a bare
``AttributeError`` or "unexpected keyword argument": :data:`MISSING_FUNCTIONS` answers
``F.max_pool2d`` and the like (read by ``zerograd_nn.functional.__getattr__``), and
:func:`refuses_pytorch_keywords` wraps the functions whose keywords differ. The layers'
counterpart is ``zerograd_nn.layers.pytorch_names``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from zerograd.checks import pytorch_keyword_error

_F = TypeVar("_F", bound=Callable[..., Any])

MISSING_FUNCTIONS = {
    "max_pool2d": "max pooling is F.pooling(x, kernel_size, stride, pad), whose stride "
    "defaults to 1, not to the kernel size: F.pooling(x, 2, stride=2)",
    "avg_pool2d": "average pooling is F.average_pooling(x, kernel_size, stride, pad), whose "
    "stride defaults to 1, not to the kernel size: F.average_pooling(x, 2, stride=2)",
    "adaptive_avg_pool2d": "for an output of 1 x 1 (global average pooling) write "
    "F.mean(x, axis=(2, 3), keepdims=True)",
    "conv_transpose2d": "the transposed convolution is F.deconv2d(x, W, b, stride, pad, "
    "outsize), W of shape (C, OC, KH, KW) as PyTorch's weight",
    "embedding": "the lookup is F.embed_id(ids, W)",
    "binary_cross_entropy_with_logits": "the loss of logits is F.sigmoid_cross_entropy(x, t)",
    "nll_loss": "F.softmax_cross_entropy(x, t) (F.cross_entropy) takes the scores x and does "
    "log_softmax and the negative log-likelihood in one",
}
"""PyTorch's ``torch.nn.functional.<name>`` that zerograd lacks -> what to write instead."""


def missing_attribute(
    module: str, name: str, missing: Mapping[str, str], torch: str
) -> AttributeError:
    """The error for ``module.name``: Python's, with the spelling when PyTorch has ``name``.

    Args:
        module: the module asked (``"zerograd_nn.functional"``).
        name: the attribute asked for.
        missing: ``{PyTorch's name: what to write instead}``.
        torch: how PyTorch's users write the module (``"F"``, ``"nn"``).

    Returns:
        The AttributeError for the module's ``__getattr__`` to raise.
    """
    text = f"module {module!r} has no attribute {name!r}"
    if name in missing:
        text += f" (PyTorch's {torch}.{name}): {missing[name]}."
    return AttributeError(text)


def refuses_pytorch_keywords(hints: Mapping[str, str]) -> Callable[[_F], _F]:
    """Decorate a function: a keyword in ``hints`` raises one TypeError naming the spelling.

    The wrapper is written (as Python source, as :func:`zerograd.functions.ops.op` writes
    the ops' functions) with the function's own parameters and defaults plus a catch-all
    for other keywords, which it reads only when one was given: a call that binds goes
    straight through, by position, with no check. A keyword that ``hints`` does not name
    gets Python's own error, as a missing or doubled argument does. ``inspect.signature``
    and ``help()`` show the function's signature.

    Args:
        hints: ``{PyTorch's keyword: what to write instead}``; none may be a parameter of
            the function (a hint would shadow an argument it takes).

    Returns:
        The decorator.

    Raises:
        ValueError: a hint names one of the function's parameters.
        TypeError: the function takes ``*args``, ``**kwargs`` or positional-only
            parameters (the wrapper passes on plain and keyword-only ones).
    """

    def decorate(function: _F) -> _F:
        name = function.__name__
        params = list(inspect.signature(function).parameters.values())
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        for p in params:
            if p.kind not in kinds or p.name.startswith("__"):
                raise TypeError(f"refuses_pytorch_keywords: {name} takes {p}, which it cannot pass")
            if p.name in hints:
                raise ValueError(f"refuses_pytorch_keywords: {name} takes {p.name}= itself")
        plain = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        named = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        signature = ", ".join([*plain, *(["*", *named] if named else []), "**__given"])
        call = ", ".join([*plain, *(f"{k}={k}" for k in named)])
        source = (
            f"def {name}({signature}):\n"
            f"    if __given:  # a keyword it does not take\n"
            f"        __refuse__(__given)\n"
            f"        return __function__({call}{', ' if call else ''}**__given)\n"
            f"    return __function__({call})\n"
        )

        def refuse(given: dict) -> None:
            for key in given:
                if key in hints:
                    raise pytorch_keyword_error(name, key, hints[key])

        namespace: dict[str, Any] = {}
        where = f"<zerograd_nn {function.__module__}.{name}: PyTorch's keywords>"
        scope = {"__function__": function, "__refuse__": refuse, "__name__": function.__module__}
        exec(compile(source, where, "exec", dont_inherit=True), scope, namespace)  # noqa: S102
        wrapper = namespace[name]
        wrapper.__defaults__ = function.__defaults__
        wrapper.__kwdefaults__ = function.__kwdefaults__
        return cast(_F, functools.wraps(function)(wrapper))

    return decorate


_NOT_IN_PLACE = "there are no in-place operations: write y = F.{}(x)"
_NO_DILATION = "there is no dilation: the kernel is dense"

DROPOUT_KEYWORDS = {
    "p": "the ratio is dropout_ratio= (or the second argument): F.dropout(x, dropout_ratio=0.5)",
    "training": "dropout follows the mode: it passes x through inside zerograd.test_mode() "
    "(or in a layer set to eval()), and drops elements elsewhere",
    "inplace": _NOT_IN_PLACE.format("dropout"),
}
LEAKY_RELU_KEYWORDS = {
    "negative_slope": "the factor for negative inputs is slope= (DeZero's default is 0.2, "
    "PyTorch's 0.01): F.leaky_relu(x, slope=0.01)",
    "inplace": _NOT_IN_PLACE.format("leaky_relu"),
}
_CONV = {
    "padding": "the padding is pad=",
    "bias": "the bias is b= (or the third argument)",
    "dilation": _NO_DILATION,
    "groups": "there are no groups: every output channel reads every input channel",
}
CONV2D_KEYWORDS = {
    **_CONV,
    "padding": "the padding is pad=: F.conv2d(x, W, pad=1)",
}
DECONV2D_KEYWORDS = {
    **_CONV,
    "padding": "the padding is pad=: F.deconv2d(x, W, pad=1)",
    "output_padding": "give the output's (H, W) itself: outsize=",
}
POOLING_KEYWORDS = {
    "padding": "the padding is pad= (and the stride defaults to 1, not to the kernel size): "
    "F.pooling(x, 2, stride=2, pad=0)",
    "dilation": "there is no dilation: the window is dense",
    "ceil_mode": "the output size rounds down; pad the input (pad=) to cover the rest",
    "return_indices": "no indices are returned; the gradient goes to each window's maximum",
}
AVERAGE_POOLING_KEYWORDS = {
    "padding": "the padding is pad= (and the stride defaults to 1, not to the kernel size): "
    "F.average_pooling(x, 2, stride=2, pad=0)",
    "ceil_mode": POOLING_KEYWORDS["ceil_mode"],
    "count_include_pad": "padded zeros always count in the average (PyTorch's default, "
    "count_include_pad=True)",
}
LINEAR_KEYWORDS = {
    "bias": "the bias is b= (or the third argument); note that W has shape (in, out), "
    "PyTorch's weight.T",
}
CROSS_ENTROPY_KEYWORDS = {
    "reduction": "the loss is the batch's mean (PyTorch's reduction='mean'); for 'sum' write "
    "F.cross_entropy(x, t) * len(t), for one loss per row ('none') "
    "-F.log_softmax(x)[np.arange(len(t)), t]",
    "weight": "there are no class weights: weight the rows of "
    "-F.log_softmax(x)[np.arange(len(t)), t] yourself",
    "ignore_index": "every label counts: leave those rows out of x and t first",
    "label_smoothing": "there is no label smoothing",
}
MSE_KEYWORDS = {
    "reduction": "the loss is the sum of squared differences divided by len(x0) (DeZero's); "
    "PyTorch's 'sum' is F.mse_loss(x0, x1) * len(x0), its 'mean' "
    "F.mse_loss(x0, x1) * len(x0) / x0.size, its 'none' (x0 - x1) ** 2",
    "weight": "there are no weights: weight the elementwise terms (x0 - x1) ** 2 yourself, "
    "then F.sum(...) / len(x0) for DeZero's loss",
}
_BINARY_REDUCTION = (
    "the loss is the sum over every element divided by len(t) (DeZero's); PyTorch's 'sum' is "
    "the loss * len(t), its 'mean' the loss * len(t) / t.size"
)
BINARY_CROSS_ENTROPY_KEYWORDS = {
    "reduction": _BINARY_REDUCTION,
    "weight": "there are no weights: compute the elementwise terms and weight them yourself",
}
SIGMOID_CROSS_ENTROPY_KEYWORDS = {
    **BINARY_CROSS_ENTROPY_KEYWORDS,
    "pos_weight": "there is no pos_weight: compute the elementwise terms and weight them yourself",
}
BATCH_NORM_KEYWORDS = {  # its arguments come in another order: F.batch_norm(x, gamma, beta,
    # mean, var); PyTorch's (x, running_mean, running_var, weight=...) misses two of them
    "training": "train or test statistics follow the mode: use zerograd.test_mode() for "
    "training=False",
    "momentum": "the running statistics keep decay=0.9 of themselves per batch (PyTorch's "
    "momentum=0.1): write decay=1 - momentum",
}
