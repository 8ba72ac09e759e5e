"""PyTorch's names that zerograd spells otherwise: layer classes and constructor keywords.

A PyTorch habit meets one error that names zerograd's spelling, never a bare
``AttributeError`` or "unexpected keyword argument": :data:`MISSING_LAYERS` answers
``L.ReLU`` and the like (read by ``zerograd_nn.layers.__getattr__``), and
:func:`refuses_pytorch_keywords` wraps the constructors of the layers whose keywords differ.
The functions' counterpart is ``zerograd_nn.functional.pytorch_names``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from zerograd.checks import pytorch_keyword_error

_FUNCTION = "activations are functions, and Sequential takes functions as well as layers"
_STEP = "Sequential takes functions as well as layers"

MISSING_LAYERS = {
    "ReLU": f"{_FUNCTION}: Sequential(L.Linear(10), F.relu, L.Linear(3))",
    "Sigmoid": f"{_FUNCTION}: pass F.sigmoid",
    "Tanh": f"{_FUNCTION}: pass F.tanh",
    "Softmax": f"{_FUNCTION}: pass F.softmax (over axis 1)",
    "LogSoftmax": f"{_FUNCTION}: pass F.log_softmax (over axis 1)",
    "LeakyReLU": f"{_FUNCTION}: pass functools.partial(F.leaky_relu, slope=0.2)",
    "Flatten": f"{_STEP}: pass F.flatten (it keeps the first axis)",
    "Identity": f"{_STEP}: leave the step out",
    "MaxPool2d": f"{_STEP}: pass functools.partial(F.pooling, kernel_size=2, stride=2)",
    "AvgPool2d": f"{_STEP}: pass functools.partial(F.average_pooling, kernel_size=2, stride=2)",
    "Embedding": "write EmbedID(in_size, out_size), in the same order",
    "ConvTranspose2d": "write Deconv2d(out_channels, kernel_size, stride, pad, in_channels=...)",
    "BatchNorm1d": "write BatchNorm() (the size is read from the first batch)",
    "BatchNorm2d": "write BatchNorm() (the size is read from the first batch)",
    "GRU": "there is no GRU cell; there are LSTM and RNN",
    "Module": "a layer subclasses zerograd_nn.Layer (a model: zerograd_nn.Model)",
    "ModuleList": "a list attribute holds layers: self.blocks = [L.Linear(3), L.Linear(3)]",
    "MSELoss": "losses are functions: F.mse_loss(y, t)",
    "CrossEntropyLoss": "losses are functions: F.cross_entropy(y, t)",
}
"""PyTorch's ``nn.<name>`` that ``zerograd_nn.layers`` lacks -> what to write instead."""


def refuses_pytorch_keywords(hints: Mapping[str, str]) -> Callable[[Callable], Callable]:
    """Decorate a layer's ``__init__``: a keyword in ``hints`` raises one TypeError.

    Other keywords pass through unchanged, so Python's own error names an unknown one.

    Args:
        hints: ``{PyTorch's keyword: what to write instead}``.

    Returns:
        The decorator.
    """

    def decorate(init: Callable) -> Callable:
        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for key in kwargs:
                if key in hints:
                    raise pytorch_keyword_error(type(self).__name__, key, hints[key])
            init(self, *args, **kwargs)

        return __init__

    return decorate


LINEAR_KEYWORDS = {
    "in_features": "the input size is in_size= (or read from the first batch)",
    "out_features": "the output size is the first argument, out_size",
    "bias": "write nobias=True for bias=False",
    "device": "move a layer with layer.to('cuda') or layer.to_gpu()",
}
CONV_KEYWORDS = {
    "padding": "the padding is pad=",
    "bias": "write nobias=True for bias=False",
    "dilation": "there is no dilation: the kernel is dense",
    "groups": "there are no groups: every output channel reads every input channel",
    "padding_mode": "the padding is zeros",
    "output_padding": "a Deconv2d's output is stride * (H - 1) + KH - 2 * pad; for one up to "
    "stride - 1 larger, call F.deconv2d(x, layer.W, layer.b, stride, pad, outsize=(OH, OW))",
    "device": "move a layer with layer.to('cuda') or layer.to_gpu()",
}
RECURRENT_KEYWORDS = {
    "input_size": "the input size is in_size= (or read from the first batch)",
    "num_layers": "a cell is one layer: stack cells for more",
    "batch_first": "a cell takes one time step, x of shape (N, in_size): loop over the steps",
    "bias": "the x2h layers have a bias and the h2h layers none, as in DeZero",
    "dropout": "apply F.dropout to a cell's output",
    "bidirectional": "run a second cell over the reversed sequence",
    "nonlinearity": "RNN's is tanh, as in DeZero; for another, write the step with two Linear "
    "layers",
    "proj_size": "there is no projection: apply a Linear layer to the hidden state",
    "device": "move a layer with layer.to('cuda') or layer.to_gpu()",
    "dtype": "the weights are float32, as DeZero's; a float64 input computes in float64",
}
EMBED_KEYWORDS = {
    "num_embeddings": "the number of ids is in_size, the first argument (the same order)",
    "embedding_dim": "the vector size is out_size, the second argument (the same order)",
    "padding_idx": "there is no padding id: every row of W learns",
    "max_norm": "rows are never renormalized: W is looked up as it is",
    "norm_type": "rows are never renormalized: W is looked up as it is",
    "scale_grad_by_freq": "the gradient is never scaled by the ids' frequency",
    "sparse": "the gradient of W is a dense array",
    "device": "move a layer with layer.to('cuda') or layer.to_gpu()",
    "dtype": "W is float32, as every layer's; for another, assign "
    "layer.W.data = layer.W.data.astype(dtype)",
}
BATCHNORM_KEYWORDS = {
    "num_features": "the channel count is read from the first batch: write BatchNorm()",
    "momentum": "the running statistics keep decay=0.9 of themselves per batch (PyTorch's "
    "momentum=0.1); for another, call F.batch_norm(x, ..., decay=1 - momentum)",
    "eps": "the layer adds eps=2e-5 to the variance; for another, call F.batch_norm(x, gamma, "
    "beta, mean, var, eps=...)",
    "affine": "gamma and beta are always there; keep them fixed with the optimizer hook "
    "FreezeParam",
    "track_running_stats": "the running statistics (avg_mean, avg_var) are always kept",
    "device": "move a layer with layer.to('cuda') or layer.to_gpu()",
    "dtype": "the statistics take the first batch's dtype",
}
