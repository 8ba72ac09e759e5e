"""Neural-network functions: DeZero's ``dezero.functions`` (and ``functions_conv``).

``import zerograd_nn.functional as F`` gives every tensor function of
:mod:`zerograd.functions` plus activations, losses, convolutions, pooling,
normalization and dropout. Every op runs on the input's backend and keeps its dtype.

>>> import numpy as np
>>> import zerograd_nn.functional as F
>>> F.softmax(np.array([[0.0, 0.0]])).data
array([[0.5, 0.5]])
"""

from typing import Any

from zerograd.checks import pair
from zerograd.functions import *  # noqa: F403
from zerograd.functions import __all__ as _core_all

# the modules first, by names of their own: two of them are shadowed below by the functions
# they are named for (F.linear, F.pooling)
from . import activation as _activation
from . import conv as _conv
from . import linear as _linear
from . import loss as _loss
from . import normalization as _normalization
from . import pooling as _pooling
from .activation import *  # noqa: F403
from .arrays import logsumexp
from .conv import *  # noqa: F403
from .geometry import col2im_array, get_conv_outsize, get_deconv_outsize, im2col_array
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .pytorch_names import MISSING_FUNCTIONS, missing_attribute

_OPS = (_activation, _conv, _linear, _loss, _normalization, _pooling)
# every op module's names (each is its ops' functions and classes: see zerograd.functions.ops)
# and the array helpers of DeZero's functions_conv
__all__ = sorted(
    {*_core_all, *(n for m in _OPS for n in m.__all__)}
    | {
        "pair",
        "logsumexp",
        "col2im_array",
        "get_conv_outsize",
        "get_deconv_outsize",
        "im2col_array",
    }  # fmt: skip
)


def __getattr__(name: str) -> Any:
    """PyTorch's function names that zerograd spells otherwise: one error naming the spelling."""
    raise missing_attribute(__name__, name, MISSING_FUNCTIONS, "F")
