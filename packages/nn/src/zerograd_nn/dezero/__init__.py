"""DeZero 0.0.13's modules over zerograd: the book's code runs with its import lines changed.

The one edit is the package name in the imports, and nothing else::

    import dezero                      ->  import zerograd_nn.dezero as dezero
    import dezero.functions as F       ->  import zerograd_nn.dezero.functions as F
    from dezero.models import MLP      ->  from zerograd_nn.dezero.models import MLP
    from dezero import Variable        ->  from zerograd_nn.dezero import Variable

so that ``dezero.datasets.Spiral()``, ``dezero.optimizers.Adam()``,
``dezero.cuda.gpu_enable`` and ``dezero.utils.plot_dot_graph`` keep working. Each module
(``core``, ``core_simple``, ``functions``, ``functions_conv``, ``layers``, ``models``,
``optimizers``, ``datasets``, ``dataloaders``, ``transforms``, ``utils``, ``cuda``) holds
DeZero's public names as zerograd's own objects, the very ones of :mod:`zerograd`,
:mod:`zerograd_nn`, :mod:`zerograd.testing` and :mod:`zerograd.backends`; the few DeZero
names zerograd has no counterpart of raise an ``AttributeError`` saying what to write
instead (:mod:`zerograd_nn.dezero.missing`). New code is better written against zerograd's
own modules (From DeZero in the docs maps them). ``import zerograd_nn`` does not import
this package.

>>> import numpy as np
>>> import zerograd_nn.dezero as dezero
>>> import zerograd_nn.functional
>>> dezero.functions.relu is zerograd_nn.functional.relu
True
>>> model = dezero.models.MLP((10, 3))
>>> optimizer = dezero.optimizers.SGD().setup(model)
>>> with dezero.no_grad():
...     model(np.ones((2, 4), np.float32)).shape
(2, 3)
"""

from typing import Any

from zerograd import is_simple_core

from . import (
    core,
    core_simple,
    cuda,
    dataloaders,
    datasets,
    functions,
    functions_conv,
    layers,
    models,
    optimizers,
    transforms,
    utils,
)
from .core import (  # as DeZero's __init__ takes them from its core
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    no_grad,
    setup_variable,
    test_mode,
    using_config,
)
from .dataloaders import DataLoader, SeqDataLoader
from .datasets import Dataset
from .layers import Layer
from .missing import missing_attribute
from .models import Model

__all__ = [
    "Config",
    "DataLoader",
    "Dataset",
    "Function",
    "Layer",
    "Model",
    "Parameter",
    "SeqDataLoader",
    "Variable",
    "as_array",
    "as_variable",
    "core",
    "core_simple",
    "cuda",
    "dataloaders",
    "datasets",
    "functions",
    "functions_conv",
    "is_simple_core",
    "layers",
    "models",
    "no_grad",
    "optimizers",
    "setup_variable",
    "test_mode",
    "transforms",
    "using_config",
    "utils",
]


def __getattr__(name: str) -> Any:
    raise missing_attribute(__name__, name)
