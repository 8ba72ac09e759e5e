"""Models: ``Model``, ``Sequential``, ``MLP``, VGG16, ResNet and SqueezeNet.

``Model`` is a Layer that can draw its graph.

Pretrained weights are never downloaded on their own: pass the path of a weight file
(``VGG16(pretrained='vgg16.npz')``, or ``VGG16(pretrained=get_file(VGG16.WEIGHTS_PATH))``
with :func:`zerograd_nn.datasets.get_file`, which downloads it once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from zerograd import Variable
from zerograd.backends import get_backend
from zerograd.checks import positive_int
from zerograd.recording import replaced
from zerograd.typing import ArrayLike

from . import functional as F
from . import layers as L
from .layers import Layer

_WEIGHT_URLS = {
    "VGG16": "https://github.com/koki0702/dezero-models/releases/download/v0.1/vgg16.npz",
    "ResNet": "https://github.com/koki0702/dezero-models/releases/download/v0.1/resnet{}.npz",
}


class Model(Layer):
    """A Layer meant to be trained as a whole; ``plot`` draws its graph."""

    def plot(self, *inputs: Any, to_file: str = "model.png") -> Any:
        """Run ``forward(*inputs)`` and draw the graph to ``to_file`` with zerograd-viz.

        Args:
            *inputs: the inputs of ``forward``.
            to_file: the image file (``.png``, ``.svg`` or ``.pdf``).

        Returns:
            What ``zerograd_viz.plot_dot_graph`` returns: an image Jupyter shows, or the
                path.

        Raises:
            ImportError: zerograd-viz is not installed.
        """
        try:
            from zerograd_viz import plot_dot_graph
        except ImportError as exc:
            raise ImportError(
                "Model.plot needs the zerograd-viz package: pip install zerograd-viz"
            ) from exc
        y = self.forward(*inputs)
        return plot_dot_graph(y, verbose=True, to_file=to_file)


def _load_pretrained(model: Layer, pretrained: Any, name: str, url: str) -> None:
    if pretrained is None or pretrained is False:
        return
    if pretrained is True:
        raise ValueError(
            f"{name}(pretrained=True): zerograd never downloads weights on its own. Ask for "
            f"DeZero's file and pass its path: {name}(pretrained=get_file('{url}')), with "
            f"get_file from zerograd_nn.datasets; or, for a file you have, "
            f"{name}(pretrained='/path/to/file.npz')."
        )
    if not isinstance(pretrained, (str, os.PathLike)):
        raise TypeError(
            f"{name}: pretrained must be False or a weight-file path, got {pretrained!r}"
        )
    model.load_weights(pretrained)


class _Chain(Model):
    """A Model applying ``self.layers`` in order, each also its attribute ``l0``, ``l1``, ...

    The attributes and the list are kept in step, so that the forward pass, the parameters
    and the weight files see one set of layers: assigning ``l<i>`` replaces the i-th entry
    of ``layers`` (PyTorch's habit of replacing a layer, such as a new classifier head),
    assigning ``l<len(layers)>`` appends one, and ``del model.l<i>`` removes the i-th and
    renumbers those after it (PyTorch's ``del seq[i]``), so that ``l<i>`` is always
    ``layers[i]``.
    """

    _fewest_layers = 0  # what the forward pass needs

    if TYPE_CHECKING:
        # the layers' attributes l0, l1, ... are set by name at run time, unseen by type
        # checkers, which refused model.l0 (declared for them only: no runtime lookup)
        def __getattr__(self, name: str) -> Any: ...

    def _position(self, name: str) -> int | None:
        """The index ``l<i>`` names in ``layers`` (None for other names)."""
        if name[:1] != "l" or not name[1:].isdigit() or name != f"l{int(name[1:])}":
            return None
        return int(name[1:]) if type(self.__dict__.get("layers")) is list else None

    def __setattr__(self, name: str, value: Any) -> None:
        i = self._position(name)
        if i is None:
            return super().__setattr__(name, value)
        layers = self.layers
        who = type(self).__name__
        if i > len(layers):
            raise ValueError(
                f"{who}: {name} would leave a gap: it has {len(layers)} layers, l0 to "
                f"l{len(layers) - 1} (model.layers); assign one of them to replace it, or "
                f"l{len(layers)} to add one at the end."
            )
        if not callable(value):
            raise TypeError(
                f"{who}: {name} must be a Layer or a callable (a function such as F.relu), "
                f"got {value!r}"
            )
        super().__setattr__(name, value)
        if i == len(layers):
            layers.append(value)
        elif layers[i] is not value:
            layers[i] = value
        else:
            return
        replaced()  # a static-graph replay ran the old list (a function is no member)

    def __delattr__(self, name: str) -> None:
        i = self._position(name)
        layers = self.__dict__.get("layers")
        if i is None or i >= len(layers):
            return super().__delattr__(name)
        if len(layers) <= self._fewest_layers:
            raise ValueError(
                f"{type(self).__name__}: {name} is its only layer, and its forward pass needs "
                f"one; replace it (model.{name} = ...) instead."
            )
        later = layers[i + 1 :]
        for j in range(i, len(layers)):  # all of them, so that members keep the layers' order
            if f"l{j}" in self.__dict__:
                super().__delattr__(f"l{j}")
        del layers[i]
        for j, layer in enumerate(later, i):
            super().__setattr__(f"l{j}", layer)
        replaced()


class Sequential(_Chain):
    """Layers (or callables) applied one after another; layers are named ``l0``, ``l1``, ...

    ``model.l1 = other`` replaces the second one, in the forward pass too;
    ``model.l<len(model.layers)> = other`` adds one at the end; ``del model.l1`` removes
    the second one and renumbers the layers after it (PyTorch's ``del seq[1]``).

    Args:
        *layers: Layers or callables such as ``F.relu``, in the order they are applied.

    Raises:
        TypeError: one of ``layers`` is not callable (also when assigned as ``l<i>``).
        ValueError: ``l<i>`` assigned past ``l<len(layers)>`` (a gap).
    """

    def __init__(self, *layers: Any) -> None:
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(
                    f"Sequential: layer {i} is {layer!r}, not a Layer or a callable (a function "
                    f"such as F.relu)"
                )
        super().__init__()
        self.layers = []
        for i, layer in enumerate(layers):
            setattr(self, f"l{i}", layer)  # appended to self.layers too

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the layers in order.

        Args:
            x: the input of the first layer.

        Returns:
            The output of the last layer.
        """
        for layer in self.layers:
            x = layer(x)
        return x


class MLP(_Chain):
    """Fully connected network: Linear layers with ``activation`` between them.

    The layers are named ``l0``, ``l1``, ...; their input sizes are found on the first call.
    Assigning one (``model.l1 = Linear(5)``, a new head) replaces it in the forward pass;
    assigning the next one adds a layer, and ``del model.l<i>`` removes one (those after
    it are renumbered), as for :class:`Sequential`.

    Args:
        fc_output_sizes: the output width of each Linear layer, e.g. ``(100, 10)``.
        activation: applied after every layer but the last (``None``: none, a linear
            model).

    Raises:
        TypeError: ``fc_output_sizes`` is not a non-empty list or tuple, or ``activation``
            is not callable.
        ValueError: a width is not a positive int; ``del`` of the only layer.
    """

    _fewest_layers = 1

    def __init__(
        self,
        fc_output_sizes: Sequence[int],
        activation: Callable[[Any], Variable] | None = F.sigmoid,
    ) -> None:
        if not isinstance(fc_output_sizes, (list, tuple, range)) or not fc_output_sizes:
            raise TypeError(
                f"MLP: fc_output_sizes must be a non-empty list or tuple of layer widths, e.g. "
                f"(100, 10), got {fc_output_sizes!r}"
            )
        for size in fc_output_sizes:
            positive_int("MLP", f"every layer width (fc_output_sizes={fc_output_sizes!r})", size)
        if activation is not None and not callable(activation):
            raise TypeError(
                f"MLP: activation must be a function such as F.relu (or None), got {activation!r}"
            )
        fc_output_sizes = [int(size) for size in fc_output_sizes]
        super().__init__()
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            setattr(self, f"l{i}", L.Linear(out_size))  # appended to self.layers too

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the layers, with the activation between them.

        Args:
            x: the input batch, shape ``(N, in_size)``.

        Returns:
            The last layer's output, shape ``(N, fc_output_sizes[-1])``.
        """
        act = self.activation
        for layer in self.layers[:-1]:
            x = layer(x) if act is None else act(layer(x))
        return self.layers[-1](x)


class VGG16(Model):
    """VGG-16 (13 convolutions, 3 fully connected layers).

    Args:
        pretrained: False, or the path of a weight file (nothing is downloaded on its own:
            ``get_file(VGG16.WEIGHTS_PATH)`` fetches DeZero's file once and gives its path).

    Raises:
        ValueError: ``pretrained=True`` (the message says where to get the file).
        TypeError: ``pretrained`` is neither False nor a path.
    """

    WEIGHTS_PATH = _WEIGHT_URLS["VGG16"]
    """Where DeZero's VGG16 weights can be downloaded (by you; zerograd never does)."""

    def __init__(self, pretrained: bool | str | os.PathLike = False) -> None:
        super().__init__()
        widths = [(1, 64, 2), (2, 128, 2), (3, 256, 3), (4, 512, 3), (5, 512, 3)]
        self._convs = []
        for block, width, n in widths:
            names = []
            for j in range(1, n + 1):
                name = f"conv{block}_{j}"
                setattr(self, name, L.Conv2d(width, kernel_size=3, stride=1, pad=1))
                names.append(name)
            self._convs.append(names)
        self.fc6 = L.Linear(4096)
        self.fc7 = L.Linear(4096)
        self.fc8 = L.Linear(1000)
        _load_pretrained(self, pretrained, "VGG16", self.WEIGHTS_PATH)

    def forward(self, x: ArrayLike) -> Variable:
        """Classify a batch of images.

        Args:
            x: images of shape ``(N, 3, 224, 224)`` (see ``preprocess``).

        Returns:
            Scores of shape ``(N, 1000)``.
        """
        for names in self._convs:
            for name in names:
                x = F.relu(getattr(self, name)(x))
            x = F.pooling(x, 2, 2)
        x = F.reshape(x, (x.shape[0], -1))
        x = F.dropout(F.relu(self.fc6(x)))
        x = F.dropout(F.relu(self.fc7(x)))
        return self.fc8(x)

    @staticmethod
    def preprocess(
        image: Any, size: tuple[int, int] | None = (224, 224), dtype: Any = "float32"
    ) -> Any:
        """Turn a PIL image into the array VGG16 expects.

        Args:
            image: a PIL image (converted to RGB).
            size: ``(width, height)`` to resize to; None keeps the size.
            dtype: the array's dtype.

        Returns:
            A ``(3, H, W)`` BGR array of the default backend, ImageNet mean removed.

        Raises:
            TypeError: ``image`` is not a PIL image.
        """
        if not (hasattr(image, "convert") and hasattr(image, "resize")):
            raise TypeError(
                f"VGG16.preprocess: expected a PIL image, got {type(image).__name__} (open one "
                f"with PIL.Image.open(path))"
            )
        import numpy as np  # PIL hands its pixels to numpy, on the host

        image = image.convert("RGB")
        if size:
            image = image.resize(size)
        a = np.asarray(image, dtype=dtype)[:, :, ::-1]
        a = a - np.asarray([103.939, 116.779, 123.68], dtype=dtype)
        return get_backend().from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


class BottleneckA(Layer):
    """ResNet bottleneck that changes width/stride; a 1x1 projection on the shortcut.

    Args:
        in_channels: input channels (kept for DeZero's signature; sizes are found lazily).
        mid_channels: channels of the inner 1x1 and 3x3 convolutions.
        out_channels: output channels.
        stride: the block's stride.
        downsample_fb: stride in the 3x3 convolution (Facebook's variant) instead of the
            first 1x1 one.
    """

    def __init__(
        self,
        in_channels: int,
        mid_channels: int,
        out_channels: int,
        stride: int = 2,
        downsample_fb: bool = False,
    ) -> None:
        super().__init__()
        # Original ResNet strides in the first 1x1 convolution; Facebook's in the 3x3 one.
        stride_1x1, stride_3x3 = (1, stride) if downsample_fb else (stride, 1)
        self.conv1 = L.Conv2d(mid_channels, 1, stride_1x1, 0, nobias=True)
        self.bn1 = L.BatchNorm()
        self.conv2 = L.Conv2d(mid_channels, 3, stride_3x3, 1, nobias=True)
        self.bn2 = L.BatchNorm()
        self.conv3 = L.Conv2d(out_channels, 1, 1, 0, nobias=True)
        self.bn3 = L.BatchNorm()
        self.conv4 = L.Conv2d(out_channels, 1, stride, 0, nobias=True)
        self.bn4 = L.BatchNorm()

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the block.

        Args:
            x: a batch of shape ``(N, C, H, W)``.

        Returns:
            ``relu(main path + projected shortcut)``.
        """
        h1 = F.relu(self.bn1(self.conv1(x)))
        h1 = F.relu(self.bn2(self.conv2(h1)))
        h1 = self.bn3(self.conv3(h1))
        h2 = self.bn4(self.conv4(x))
        return F.relu(h1 + h2)


class BottleneckB(Layer):
    """ResNet bottleneck keeping the width; identity shortcut.

    Args:
        in_channels: input (and output) channels.
        mid_channels: channels of the inner convolutions.
    """

    def __init__(self, in_channels: int, mid_channels: int) -> None:
        super().__init__()
        self.conv1 = L.Conv2d(mid_channels, 1, 1, 0, nobias=True)
        self.bn1 = L.BatchNorm()
        self.conv2 = L.Conv2d(mid_channels, 3, 1, 1, nobias=True)
        self.bn2 = L.BatchNorm()
        self.conv3 = L.Conv2d(in_channels, 1, 1, 0, nobias=True)
        self.bn3 = L.BatchNorm()

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the block.

        Args:
            x: a batch of shape ``(N, in_channels, H, W)``.

        Returns:
            ``relu(main path + x)``, the same shape as ``x``.
        """
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + x)


class BuildingBlock(Layer):
    """One ResNet stage: a BottleneckA (``a``) then ``n_layers - 1`` BottleneckB (``b1``...).

    Args:
        n_layers: the number of bottlenecks (a positive int).
        in_channels: input channels of the stage.
        mid_channels: inner channels of every bottleneck.
        out_channels: output channels of the stage.
        stride: the first bottleneck's stride.
        downsample_fb: see ``BottleneckA``.

    Raises:
        ValueError: ``n_layers`` is not a positive int.
    """

    def __init__(
        self,
        n_layers: int | None = None,
        in_channels: int | None = None,
        mid_channels: int | None = None,
        out_channels: int | None = None,
        stride: int | None = None,
        downsample_fb: bool | None = None,
    ) -> None:
        n_layers = positive_int("BuildingBlock", "n_layers", n_layers)
        super().__init__()
        self.a = BottleneckA(in_channels, mid_channels, out_channels, stride, downsample_fb)
        self._forward = ["a"]
        for i in range(n_layers - 1):
            name = f"b{i + 1}"
            setattr(self, name, BottleneckB(out_channels, mid_channels))
            self._forward.append(name)

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the bottlenecks in order.

        Args:
            x: a batch of shape ``(N, C, H, W)``.

        Returns:
            The last bottleneck's output.
        """
        for name in self._forward:
            x = getattr(self, name)(x)
        return x


_RESNET_BLOCKS = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class ResNet(Model):
    """ResNet-50/101/152 (bottleneck blocks, batch norm).

    Args:
        n_layers: 50, 101 or 152.
        pretrained: False, or the path of a weight file (nothing is downloaded on its own:
            ``get_file(ResNet.WEIGHTS_PATH.format(n_layers))`` fetches DeZero's file once).

    Raises:
        ValueError: another ``n_layers``, or ``pretrained=True``.
        TypeError: ``pretrained`` is neither False nor a path.
    """

    WEIGHTS_PATH = _WEIGHT_URLS["ResNet"]
    """Where DeZero's ResNet weights can be downloaded; ``{}`` is 50, 101 or 152."""

    def __init__(self, n_layers: int = 152, pretrained: bool | str | os.PathLike = False) -> None:
        super().__init__()
        if n_layers not in _RESNET_BLOCKS:
            raise ValueError(
                f"ResNet: n_layers must be 50, 101 or 152, but {n_layers!r} was given."
            )
        block = _RESNET_BLOCKS[n_layers]
        self.conv1 = L.Conv2d(64, 7, 2, 3)
        self.bn1 = L.BatchNorm()
        self.res2 = BuildingBlock(block[0], 64, 64, 256, 1)
        self.res3 = BuildingBlock(block[1], 256, 128, 512, 2)
        self.res4 = BuildingBlock(block[2], 512, 256, 1024, 2)
        self.res5 = BuildingBlock(block[3], 1024, 512, 2048, 2)
        self.fc6 = L.Linear(1000)
        name = f"ResNet{n_layers}"
        _load_pretrained(self, pretrained, name, self.WEIGHTS_PATH.format(n_layers))

    def forward(self, x: ArrayLike) -> Variable:
        """Classify a batch of images.

        Args:
            x: images of shape ``(N, 3, H, W)``, e.g. 224 x 224.

        Returns:
            Scores of shape ``(N, 1000)``.
        """
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.pooling(x, kernel_size=3, stride=2)
        x = self.res5(self.res4(self.res3(self.res2(x))))
        x = _global_average_pooling_2d(x)
        return self.fc6(x)


class ResNet152(ResNet):
    """ResNet with 152 layers.

    Args:
        pretrained: False, or the path of a weight file.
    """

    def __init__(self, pretrained: bool | str | os.PathLike = False) -> None:
        super().__init__(152, pretrained)


class ResNet101(ResNet):
    """ResNet with 101 layers.

    Args:
        pretrained: False, or the path of a weight file.
    """

    def __init__(self, pretrained: bool | str | os.PathLike = False) -> None:
        super().__init__(101, pretrained)


class ResNet50(ResNet):
    """ResNet with 50 layers.

    Args:
        pretrained: False, or the path of a weight file.
    """

    def __init__(self, pretrained: bool | str | os.PathLike = False) -> None:
        super().__init__(50, pretrained)


class Fire(Layer):
    """SqueezeNet's fire module: a 1x1 squeeze, then 1x1 and 3x3 expands joined on channels.

    Args:
        squeeze: channels of the squeeze convolution.
        expand1x1: channels of the 1x1 expand.
        expand3x3: channels of the 3x3 expand.

    Raises:
        ValueError: a width is not a positive int.
    """

    def __init__(self, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        for name, v in (("squeeze", squeeze), ("expand1x1", expand1x1), ("expand3x3", expand3x3)):
            positive_int("Fire", name, v)
        super().__init__()
        self.squeeze = L.Conv2d(squeeze, 1)
        self.expand1x1 = L.Conv2d(expand1x1, 1)
        self.expand3x3 = L.Conv2d(expand3x3, 3, pad=1)

    def forward(self, x: ArrayLike) -> Variable:
        """Apply the module.

        Args:
            x: a batch of shape ``(N, C, H, W)``.

        Returns:
            Shape ``(N, expand1x1 + expand3x3, H, W)``.
        """
        s = F.relu(self.squeeze(x))
        return F.concatenate([F.relu(self.expand1x1(s)), F.relu(self.expand3x3(s))], axis=1)


class SqueezeNet(Model):
    """SqueezeNet 1.1 (AlexNet accuracy with about 1.2 M parameters); ``pretrained``: a path.

    DeZero lists this name but left it unfinished; this is the published v1.1 layout.

    Args:
        pretrained: False, or the path of a weight file you have (there is no official
            DeZero file).
        n_classes: the number of classes scored.

    Raises:
        ValueError: ``n_classes`` is not a positive int, or ``pretrained=True``.
        TypeError: ``pretrained`` is neither False nor a path.
    """

    def __init__(self, pretrained: bool | str | os.PathLike = False, n_classes: int = 1000) -> None:
        n_classes = positive_int("SqueezeNet", "n_classes", n_classes)
        super().__init__()
        self.conv1 = L.Conv2d(64, 3, stride=2)
        # fire2..fire9: (squeeze, expand) widths; both expands have the same width
        widths = [16, 16, 32, 32, 48, 48, 64, 64]
        for i, sq in enumerate(widths, start=2):
            ex = 4 * sq
            setattr(self, f"fire{i}", Fire(sq, ex, ex))
        self.conv10 = L.Conv2d(n_classes, 1)
        _load_pretrained(self, pretrained, "SqueezeNet", "(no official DeZero file)")

    def forward(self, x: ArrayLike) -> Variable:
        """Classify a batch of images.

        Args:
            x: images of shape ``(N, 3, H, W)``, e.g. 224 x 224.

        Returns:
            Scores of shape ``(N, n_classes)``.
        """
        x = F.pooling(F.relu(self.conv1(x)), 3, 2)
        x = F.pooling(self.fire3(self.fire2(x)), 3, 2)
        x = F.pooling(self.fire5(self.fire4(x)), 3, 2)
        x = self.fire9(self.fire8(self.fire7(self.fire6(x))))
        x = F.relu(self.conv10(F.dropout(x, 0.5)))
        return _global_average_pooling_2d(x)


def _global_average_pooling_2d(x: Variable) -> Variable:
    n, c, h, w = x.shape
    return F.reshape(F.average_pooling(x, (h, w), stride=1), (n, c))


__all__ = [
    "MLP",
    "BottleneckA",
    "BottleneckB",
    "BuildingBlock",
    "Model",
    "ResNet",
    "ResNet50",
    "ResNet101",
    "ResNet152",
    "Fire",
    "Sequential",
    "SqueezeNet",
    "VGG16",
]
