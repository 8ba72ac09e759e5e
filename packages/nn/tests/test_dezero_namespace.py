"""zerograd_nn.dezero: DeZero 0.0.13's modules, holding zerograd's own objects.

Every public name of every module of DeZero 0.0.13 (the book's ``dezero/`` folder, which
the pip package equals) resolves in the module of the same name here, as the very object
of zerograd's own module, or is one of the few documented exceptions, whose error says
what to write instead.
"""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import zerograd
import zerograd.backends
import zerograd.checks
import zerograd.functions
import zerograd.testing
import zerograd_nn
import zerograd_nn.dataloaders
import zerograd_nn.datasets
import zerograd_nn.dezero as dezero
import zerograd_nn.functional
import zerograd_nn.layers
import zerograd_nn.models
import zerograd_nn.optimizers
import zerograd_nn.transforms
from zerograd_nn.dezero import missing

# Each module's public names in DeZero 0.0.13: every name of its namespace not starting
# with "_" (``vars(module)`` after ``import dezero``), less the modules it imports from
# the standard library and numpy (np, os, math, weakref, gzip, ...) and its aliases of its
# own modules (F, L, cuda, utils inside the submodules). In the package itself the
# submodules are DeZero's names.
DEZERO_NAMES = {
    "dezero": """Config DataLoader Dataset Function Layer Model Parameter SeqDataLoader Variable
        as_array as_variable core cuda dataloaders datasets functions functions_conv
        is_simple_core layers models no_grad optimizers setup_variable test_mode transforms
        using_config utils""",
    "core": """Add Config Div Function Mul Neg Parameter Pow Sub Variable add array_types
        as_array as_variable div mul neg no_grad pow rdiv rsub setup_variable sub test_mode
        using_config""",
    "core_simple": """Add Config Div Function Mul Neg Pow Sub Variable add as_array as_variable
        div mul neg no_grad pow rdiv rsub setup_variable sub using_config""",
    "functions": """BatchNorm BroadcastTo Clip Cos Exp Function GetItem GetItemGrad LeakyReLU
        Linear Log LogSoftmax MatMul Max MeanSquaredError Min ReLU Reshape Sigmoid Sin Softmax
        SoftmaxCrossEntropy Sum SumTo Tanh Transpose Variable accuracy add as_array
        as_variable average average_pooling batch_nrom binary_cross_entropy broadcast_to clip
        col2im conv2d conv2d_simple cos deconv2d div dropout embed_id exp expand_dims flatten
        get_item im2col leaky_relu linear linear_simple log log_softmax matmul max mean
        mean_squared_error mean_squared_error_simple min mul neg pooling pooling_simple pow
        relu reshape rsub sigmoid sigmoid_cross_entropy sigmoid_simple sin softmax
        softmax_cross_entropy softmax_cross_entropy_simple softmax_simple sub sum sum_to tanh
        transpose""",
    "functions_conv": """AveragePooling Col2im Conv2DGradW Conv2d Deconv2d Function Im2col
        Pooling Pooling2DGrad Pooling2DWithIndexes as_variable average_pooling broadcast_to
        col2im col2im_array conv2d conv2d_simple deconv2d get_conv_outsize get_deconv_outsize
        im2col im2col_array linear pair pooling pooling_simple""",
    "layers": "BatchNorm Conv2d Deconv2d EmbedID LSTM Layer Linear Parameter RNN pair",
    "models": """BottleneckA BottleneckB BuildingBlock Layer MLP Model ResNet ResNet101
        ResNet152 ResNet50 Sequential SqueezeNet VGG16""",
    "optimizers": """AdaDelta AdaGrad Adam ClipGrad FreezeParam MomentumSGD Optimizer
        Parameter SGD WeightDecay""",
    "datasets": """CIFAR10 CIFAR100 Compose Dataset Flatten ImageNet MNIST Normalize Shakespear
        SinCurve Spiral ToFloat cache_dir get_file get_spiral load_cache_npz save_cache_npz""",
    "dataloaders": "DataLoader SeqDataLoader pil_available",
    "transforms": """AsType CenterCrop Compose Convert Flatten Normalize RandomHorizontalFlip
        Resize ToArray ToFloat ToInt ToPIL pair""",
    "utils": """Variable array_allclose array_equal as_variable cache_dir get_conv_outsize
        get_deconv_outsize get_dot_graph get_file gradient_check logsumexp max_backward_shape
        numerical_grad pair plot_dot_graph reshape_sum_backward show_progress sum_to""",
    "cuda": "Variable as_cupy as_numpy get_array_module gpu_enable",
}
CASES = [(m, n) for m, names in DEZERO_NAMES.items() for n in names.split()]

# where zerograd's own object of each module's names is
NATIVE = {
    "dezero": [zerograd, zerograd_nn, zerograd_nn.datasets],
    "core": [zerograd, zerograd.functions],
    "core_simple": [zerograd, zerograd.functions],
    "functions": [zerograd_nn.functional, zerograd],
    "functions_conv": [zerograd_nn.functional, zerograd],
    "layers": [zerograd_nn.layers, zerograd, zerograd.checks],
    "models": [zerograd_nn.models],
    "optimizers": [zerograd_nn.optimizers, zerograd],
    "datasets": [zerograd_nn.datasets, zerograd_nn.transforms],
    "dataloaders": [zerograd_nn.dataloaders],
    "transforms": [zerograd_nn.transforms],
    "utils": [zerograd.testing, zerograd, zerograd_nn.datasets, zerograd_nn.functional],
    "cuda": [zerograd.backends, zerograd],
}

# DeZero's names with no counterpart: what the error must say to write instead
LEFT_OUT = {
    ("core", "array_types"): "zerograd.backends.backend_of(x) names the backend of an array",
    ("functions", "BatchNorm"): "call F.batch_norm(x, gamma, beta, mean, var, decay, eps)",
    ("datasets", "ImageNet"): "ast.literal_eval(open(zerograd_nn.dezero.utils.get_file('https:",
    ("datasets", "load_cache_npz"): "numpy.savez_compressed and numpy.load",
    ("datasets", "save_cache_npz"): "numpy.savez_compressed and numpy.load",
    ("dataloaders", "pil_available"): "importlib.util.find_spec('PIL') is not None",
    ("utils", "sum_to"): "zerograd.backends.get_backend(x).sum_to(x, shape) (an array)",
    ("utils", "reshape_sum_backward"): "reshape gy to x.sum(axis=axis, keepdims=True).shape",
    ("utils", "max_backward_shape"): "the shape is x.max(axis=axis, keepdims=True).shape",
    ("utils", "show_progress"): "zerograd_nn.dezero.utils.get_file downloads without one",
}


def _module(name):
    return dezero if name == "dezero" else importlib.import_module(f"zerograd_nn.dezero.{name}")


def _dotted(module, name):
    return f"dezero.{name}" if module == "dezero" else f"dezero.{module}.{name}"


@pytest.mark.parametrize(("module", "name"), CASES, ids=[_dotted(*c) for c in CASES])
def test_every_dezero_name_is_zerograds_own_object_or_says_what_to_use(module, name):
    shim = _module(module)
    if (module, name) in LEFT_OUT:
        with pytest.raises(AttributeError) as info:
            getattr(shim, name)
        text = str(info.value)
        path = "zerograd_nn.dezero" if module == "dezero" else f"zerograd_nn.dezero.{module}"
        assert text.startswith(
            f"module {path!r} has no attribute {name!r} (DeZero's {_dotted(module, name)}): "
        )
        assert LEFT_OUT[module, name] in text
        assert not hasattr(shim, name)
        return
    obj = getattr(shim, name)
    if module == "dezero" and name in DEZERO_NAMES:  # a submodule: this namespace's own
        assert obj is _module(name)
    elif name == "cache_dir":
        assert obj == str(zerograd_nn.datasets.data_home("downloads"))
    elif name == "gpu_enable":
        assert obj is zerograd.backends.gpu_enable
    elif name in ("get_dot_graph", "plot_dot_graph"):
        viz = pytest.importorskip("zerograd_viz")
        assert obj is getattr(viz, name)
    else:
        sentinel = object()
        owners = [m.__name__ for m in NATIVE[module] if getattr(m, name, sentinel) is obj]
        assert owners, f"{_dotted(module, name)} is no object of {NATIVE[module]}"


def test_the_left_out_names_are_the_ones_the_namespace_documents():
    documented = {(m, n) for m, names in missing.INSTEAD.items() for n in names}
    assert documented == set(LEFT_OUT)
    assert set(missing.NATIVE) == set(DEZERO_NAMES)


def test_the_namespace_mirrors_dezeros_modules():
    for module in DEZERO_NAMES:
        if module != "dezero":
            assert importlib.import_module(f"zerograd_nn.dezero.{module}") is getattr(
                dezero, module
            )
    # a star import gives each module's names bound at import (not those read on access)
    for module in ("functions", "layers", "utils"):
        names = {}
        exec(f"from zerograd_nn.dezero.{module} import *", names)
        assert set(names) - {"__builtins__"} == set(_module(module).__all__)
    assert {"relu", "batch_nrom", "batch_norm", "Linear"} <= set(dezero.functions.__all__)


@pytest.mark.parametrize(
    ("module", "name", "native"),
    [
        ("functions", "foo", "zerograd_nn.functional"),
        ("layers", "Dropout2d", "zerograd_nn.layers"),
        ("cuda", "device", "zerograd.backends"),
        ("dezero", "seed", "zerograd and zerograd_nn"),
        ("utils", "show", "zerograd.testing, zerograd_viz and zerograd_nn.datasets"),
    ],
)
def test_another_name_says_where_zerograds_own_are(module, name, native):
    path = "zerograd_nn.dezero" if module == "dezero" else f"zerograd_nn.dezero.{module}"
    with pytest.raises(AttributeError) as info:
        getattr(_module(module), name)
    assert str(info.value) == (
        f"module {path!r} has no attribute {name!r}: it holds the names of DeZero 0.0.13's "
        f"{_dotted(module, '')[:-1]}; zerograd's own are in {native}."
    )
    with pytest.raises(AttributeError) as info:
        _ = dezero.__wrapped__  # a dunder (tools probe them): Python's message alone
    assert str(info.value) == "module 'zerograd_nn.dezero' has no attribute '__wrapped__'"


def test_the_recipes_of_the_left_out_helpers_give_dezeros_results():
    """What the errors for utils.sum_to, reshape_sum_backward and max_backward_shape say to
    write gives what DeZero's helpers gave (written out here with numpy)."""
    x = np.arange(24.0).reshape(2, 3, 4)
    # DeZero's sum_to(x, (3, 1)): sum the leading axis, then axis 2 with keepdims
    want = x.sum(axis=0).sum(axis=1, keepdims=True)
    got = zerograd.backends.get_backend(x).sum_to(x, (3, 1))
    np.testing.assert_array_equal(got, want)
    # DeZero's reshape_sum_backward(gy, (2, 3, 4), axis=1, keepdims=False) -> (2, 1, 4)
    assert x.sum(axis=1, keepdims=True).shape == (2, 1, 4)
    # DeZero's max_backward_shape(x, axis=(0, 2)) -> [1, 3, 1]
    assert x.max(axis=(0, 2), keepdims=True).shape == (1, 3, 1)


def test_cache_dir_is_get_files_folder_as_it_is_when_read(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "one"))
    assert dezero.utils.cache_dir == str(tmp_path / "one" / "downloads")
    monkeypatch.setenv("ZEROGRAD_DATA", str(tmp_path / "two"))
    assert dezero.utils.cache_dir == dezero.datasets.cache_dir == str(tmp_path / "two/downloads")
    src = tmp_path / "w.txt"
    src.write_text("w")
    path = dezero.utils.get_file(src.as_uri())
    assert os.path.dirname(path) == dezero.utils.cache_dir


def test_cuda_gpu_enable_and_cupy_follow_zerograds_backends():
    cuda = dezero.cuda
    assert cuda.gpu_enable is zerograd.backends.gpu_enable
    assert cuda.get_array_module(np.ones(2)) is zerograd.backends.get_array_module(np.ones(2))
    if cuda.gpu_enable:
        assert cuda.cupy is cuda.cp is zerograd.backends.gpu_backend().xp
        return
    for name in ("cupy", "cp"):
        with pytest.raises(AttributeError) as info:
            getattr(cuda, name)
        text = str(info.value)
        assert text.startswith(
            f"module 'zerograd_nn.dezero.cuda' has no attribute {name!r}: DeZero's "
            f"dezero.cuda.{name} is CuPy, there only where it can be used, and here zerograd: "
        )
        assert text.endswith("Test zerograd_nn.dezero.cuda.gpu_enable first, as the book does.")
        assert not hasattr(cuda, name)


def _run(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_importing_zerograd_nn_leaves_the_namespace_and_zerograd_viz_alone():
    pytest.importorskip("zerograd_viz")
    out = _run(
        "import sys, zerograd_nn\n"
        "print('zerograd_nn.dezero' in sys.modules)\n"
        "import zerograd_nn.dezero as dezero\n"
        "print('zerograd_viz' in sys.modules)\n"
        "dezero.utils.get_dot_graph\n"
        "print('zerograd_viz' in sys.modules)\n"
    )
    assert out == ["False", "False", "True"]


def test_graph_drawing_without_zerograd_viz_names_the_package_to_install():
    out = _run(
        "import sys\n"
        "sys.modules['zerograd_viz'] = None  # not installed: importing it fails\n"
        "import zerograd_nn.dezero as dezero\n"
        "from zerograd_nn.dezero.utils import gradient_check\n"
        "for get in (lambda: dezero.utils.plot_dot_graph,\n"
        "            lambda: exec('from zerograd_nn.dezero.utils import get_dot_graph')):\n"
        "    try:\n"
        "        get()\n"
        "    except ModuleNotFoundError as exc:\n"
        "        print(exc.name)\n"
        "        print(exc)\n"
    )
    assert out == [
        "zerograd_viz",
        "zerograd_nn.dezero.utils.plot_dot_graph draws the graph with the zerograd-viz "
        "package, which is not installed: pip install zerograd-viz (plot_dot_graph also "
        "needs Graphviz's dot program).",
        "zerograd_viz",
        "zerograd_nn.dezero.utils.get_dot_graph draws the graph with the zerograd-viz "
        "package, which is not installed: pip install zerograd-viz (plot_dot_graph also "
        "needs Graphviz's dot program).",
    ]
