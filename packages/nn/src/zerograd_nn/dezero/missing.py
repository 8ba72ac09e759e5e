"""What :mod:`zerograd_nn.dezero` lacks of DeZero 0.0.13, and what to write instead.

Every module of the namespace ends in a ``__getattr__`` that raises the error made here:
for a DeZero name zerograd has no counterpart of, the error says what to use instead; for
any other name, it says where zerograd's own names are.
"""

from __future__ import annotations

__all__ = ["INSTEAD", "NATIVE", "missing_attribute"]

_IMAGENET_LABELS = (
    "https://gist.githubusercontent.com/yrevar/942d3a0ac09ec9e5eb3a/raw/"
    "238f720ff059c1f82f368259d1ca4ffa5dd8f9f5/imagenet1000_clsidx_to_labels.txt"
)

NATIVE = {
    "dezero": "zerograd and zerograd_nn",
    "core": "zerograd",
    "core_simple": "zerograd",
    "functions": "zerograd_nn.functional",
    "functions_conv": "zerograd_nn.functional",
    "layers": "zerograd_nn.layers",
    "models": "zerograd_nn.models",
    "optimizers": "zerograd_nn.optimizers",
    "datasets": "zerograd_nn.datasets",
    "dataloaders": "zerograd_nn.dataloaders",
    "transforms": "zerograd_nn.transforms",
    "utils": "zerograd.testing, zerograd_viz and zerograd_nn.datasets",
    "cuda": "zerograd.backends",
}
"""DeZero's module -> where zerograd's own names of that kind are."""

INSTEAD = {
    "core": {
        "array_types": "the array types a Variable takes come from zerograd's backend "
        "plugins: zerograd.backends.backend_of(x) names the backend of an array (a TypeError "
        "for anything else) and zerograd.backends.list_backends() lists the backends",
    },
    "functions": {
        "BatchNorm": "zerograd's batch normalization is made of smaller functions, with no "
        "Function class of its own: call F.batch_norm(x, gamma, beta, mean, var, decay, eps), "
        "or use the layer zerograd_nn.dezero.layers.BatchNorm",
    },
    "datasets": {
        "ImageNet": "only its labels() exists there, which eval()s a file from the web; read "
        "that file yourself: ast.literal_eval(open(zerograd_nn.dezero.utils.get_file("
        f"'{_IMAGENET_LABELS}')).read())",
        "load_cache_npz": "zerograd's CIFAR10 and CIFAR100 read their files directly, with no "
        "cache of arrays; keep arrays of your own with numpy.savez_compressed and numpy.load",
        "save_cache_npz": "zerograd's CIFAR10 and CIFAR100 read their files directly, with no "
        "cache of arrays; keep arrays of your own with numpy.savez_compressed and numpy.load",
    },
    "dataloaders": {
        "pil_available": "zerograd_nn imports Pillow only where an image transform needs it "
        "(pip install pillow); to test for it: importlib.util.find_spec('PIL') is not None",
    },
    "utils": {
        "sum_to": "a helper on arrays; on an array x: "
        "zerograd.backends.get_backend(x).sum_to(x, shape) (an array), on Variables: "
        "zerograd_nn.dezero.functions.sum_to(x, shape) (differentiable)",
        "reshape_sum_backward": "a helper of Sum.backward there; zerograd's sum has its own "
        "derivative (F.sum(x, axis, keepdims), then backward()); to put back the axes a sum "
        "took away, reshape gy to x.sum(axis=axis, keepdims=True).shape",
        "max_backward_shape": "a helper of Max.backward there; zerograd's max and min have "
        "their own derivatives; the shape is x.max(axis=axis, keepdims=True).shape",
        "show_progress": "a progress bar for urlretrieve; zerograd_nn.dezero.utils.get_file "
        "downloads without one",
    },
}
"""DeZero's module -> {name zerograd has no counterpart of: what to write instead}."""


def missing_attribute(module: str, name: str) -> AttributeError:
    """Return the error for ``module.name``, a name a module of the namespace lacks.

    Args:
        module: the module asked, ``"zerograd_nn.dezero"`` or ``"zerograd_nn.dezero.<m>"``.
        name: the attribute asked for.

    Returns:
        The AttributeError for the module's ``__getattr__`` to raise: Python's message,
        then what to use instead (a DeZero name in :data:`INSTEAD`), or where zerograd's
        own names are (:data:`NATIVE`).
    """
    short = module.rpartition(".")[2]
    text = f"module {module!r} has no attribute {name!r}"
    dezero = "dezero" if short == "dezero" else f"dezero.{short}"
    instead = INSTEAD.get(short, {}).get(name)
    if instead is not None:
        text += f" (DeZero's {dezero}.{name}): {instead}."
    elif short in NATIVE and not name.startswith("__"):
        text += (
            f": it holds the names of DeZero 0.0.13's {dezero}; zerograd's own are in "
            f"{NATIVE[short]}."
        )
    return AttributeError(text)
